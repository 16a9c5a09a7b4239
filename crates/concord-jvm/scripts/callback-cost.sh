#!/usr/bin/env bash
# Measures the agent's time inside the GC pauses (callback µs, p50 and max per run) for
# gc-affinity none, static and dynamic, alternating, on a GC-heavy run of tests/java/GcChurn
# (many young collections from a small young generation, plus one System.gc() per round).
#
#   crates/concord-jvm/scripts/callback-cost.sh [ROUNDS] [REPEATS] [JAVA_HOME]
#
# Needs target/release/libconcord_jvm.so (cargo build --release -p concord-jvm) and jq.
set -euo pipefail
rounds=${1:-40}
repeats=${2:-3}
jdk=${3:-/usr/lib/jvm/java-17-openjdk-amd64}
root=$(cd "$(dirname "$0")/../../.." && pwd)
lib=$root/target/release/libconcord_jvm.so
[ -f "$lib" ] || { echo "callback-cost: $lib is missing; run cargo build --release -p concord-jvm" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$jdk/bin/javac" -d "$work" "$root/crates/concord-jvm/tests/java/GcChurn.java"
printf '%-8s %3s %8s %9s %9s %9s %9s %6s %7s %7s %6s\n' mode run events p50_us p99_us max_us cpu_max_us over_200us off_cpu moves threads
for ((r = 1; r <= repeats; r++)); do
  for mode in none static dynamic; do
    report=$work/$mode-$r.json
    "$jdk/bin/java" "-agentpath:$lib=gc-affinity=$mode,report=$report" \
      -XX:+UseParallelGC -XX:ParallelGCThreads=2 -Xmx256m -Xmn8m \
      -cp "$work" GcChurn "$rounds" > /dev/null
    jq -r --arg m "$mode" --arg r "$r" \
      '[$m, $r, .gc_events, .callback_us_p50, .callback_us_p99, .callback_us_max,
        .callback_cpu_us_max, .callbacks_over_200us, .callbacks_over_200us_off_cpu,
        .affinity_moves, .gc_threads]
       | @tsv' "$report" \
      | awk '{printf "%-8s %3s %8s %9.1f %9.1f %9.1f %9.1f %6s %7s %7s %6s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11}'
  done
done
