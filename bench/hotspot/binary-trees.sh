#!/usr/bin/env bash
# Runs bench/hotspot/BinaryTrees.java on HotSpot Parallel GC several times and prints each
# run's wall time (measured inside the program, JVM startup excluded), the median, and the
# checksum, which must equal concord_workloads::binary_trees::expected_checksum(depth).
#
# Usage: bench/hotspot/binary-trees.sh [RUNS] [DEPTH]      (defaults: 5 runs, depth 18)
# Environment: JAVA (default: java on PATH), HEAP (default 96m, as -Xms and -Xmx),
#              GC_THREADS (default 2).
# Exit status: 0 if every run printed the expected checksum, 1 otherwise, 2 on bad arguments.
set -euo pipefail

runs=${1:-5}
depth=${2:-18}
java=${JAVA:-java}
heap=${HEAP:-96m}
gc_threads=${GC_THREADS:-2}

if ! [[ $runs =~ ^[0-9]+$ ]] || ((runs < 1 || runs > 1000)); then
    echo "binary-trees.sh: RUNS '$runs' is not allowed: give a whole number from 1 to 1000" >&2
    exit 2
fi
if ! [[ $depth =~ ^[0-9]+$ ]] || ((depth < 4 || depth > 30)); then
    echo "binary-trees.sh: DEPTH '$depth' is not allowed: give a whole number from 4 to 30" >&2
    exit 2
fi
if ! command -v "$java" >/dev/null; then
    echo "binary-trees.sh: no Java launcher '$java' (set JAVA to a JDK 17 java)" >&2
    exit 2
fi

# The checksum the program must print: every check it prints added up; a tree of depth d
# has 2^(d+1) - 1 nodes (see crates/concord-workloads/src/binary_trees.rs).
nodes() { echo $(((1 << ($1 + 1)) - 1)); }
max=$((depth > 6 ? depth : 6))
expected=$(($(nodes $((max + 1))) + $(nodes "$max")))
for ((d = 4; d <= max; d += 2)); do
    expected=$((expected + (1 << (max - d + 4)) * $(nodes "$d")))
done

src="$(cd "$(dirname "$0")" && pwd)/BinaryTrees.java"
walls=()
status=0
for ((i = 1; i <= runs; i++)); do
    out=$("$java" -XX:+UseParallelGC "-Xmx$heap" "-Xms$heap" "-XX:ParallelGCThreads=$gc_threads" \
        "$src" "$depth")
    checksum=$(sed -n 's/^checksum=//p' <<<"$out")
    wall=$(sed -n 's/^wall_ms=//p' <<<"$out")
    if [[ $checksum != "$expected" ]]; then
        echo "run $i: checksum '$checksum', expected $expected" >&2
        status=1
    fi
    echo "run $i: wall_ms=$wall checksum=$checksum"
    walls+=("$wall")
done
median=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
echo "binary-trees $depth on $("$java" -version 2>&1 | head -1), -Xmx$heap, $gc_threads GC threads: median wall_ms=$median over $runs runs (expected checksum $expected)"
exit $status
