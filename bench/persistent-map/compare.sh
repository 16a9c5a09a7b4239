#!/usr/bin/env bash
# The persistent-map program three ways: Concord (crates/concord/examples/persistent_map.rs),
# std Rc (src/bin/rc.rs) and gc-arena 0.7 (src/bin/gc_arena.rs).
#
# Usage: bench/persistent-map/compare.sh [N] [RUNS]   (defaults 200000 and 5)
#
# Builds the three (release), prints each program file's line count, then runs RUNS rounds of
# the three, one run each per round, the order rotating from round to round, and prints each
# run's wall time (and, when /usr/bin/time is there, its CPU time, user + system, and peak RSS),
# then each program's medians.
# Exits 1 if a program exits non-zero or does not print its "checked against BTreeMap" line,
# 2 on bad arguments.
#
# Lines are counted with one rule for all three: the lines of the whole file that are not blank
# and are not comment-only lines (first non-blank characters `//`, so `///` and `//!` docs too).
set -euo pipefail

N=${1:-200000}
RUNS=${2:-5}
for v in "$N" "$RUNS"; do
    if ! [[ $v =~ ^[1-9][0-9]*$ ]]; then
        echo "compare.sh: '$v' is not a positive integer (usage: compare.sh [N] [RUNS])" >&2
        exit 2
    fi
done

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)

echo "== build"
(cd "$ROOT" && cargo build --quiet --release -p concord --example persistent_map)
(cd "$HERE" && cargo build --quiet --release)

NAMES=(concord rc gc-arena)
SOURCES=(
    "$ROOT/crates/concord/examples/persistent_map.rs"
    "$HERE/src/bin/rc.rs"
    "$HERE/src/bin/gc_arena.rs"
)
BINARIES=(
    "${CARGO_TARGET_DIR:-$ROOT/target}/release/examples/persistent_map"
    "${CARGO_TARGET_DIR:-$HERE/target}/release/rc"
    "${CARGO_TARGET_DIR:-$HERE/target}/release/gc_arena"
)

echo "== lines (non-blank, not comment-only)"
for i in 0 1 2; do
    lines=$(grep -cvE '^[[:space:]]*(//.*)?$' "${SOURCES[$i]}")
    printf '%-9s %4d  %s\n' "${NAMES[$i]}" "$lines" "${SOURCES[$i]#"$ROOT"/}"
done

TIME=/usr/bin/time
[[ -x $TIME ]] || TIME=

echo "== runs: N=$N, $RUNS rounds"
out=$(mktemp)
usage=$(mktemp)
trap 'rm -f "$out" "$usage"' EXIT
declare -A walls cpus
for ((round = 0; round < RUNS; round++)); do
    for k in 0 1 2; do
        i=$(((round + k) % 3))
        start=$(date +%s%N)
        status=0
        if [[ -n $TIME ]]; then
            "$TIME" -o "$usage" -f '%U %S %M' "${BINARIES[$i]}" "$N" >"$out" 2>&1 || status=$?
        else
            "${BINARIES[$i]}" "$N" >"$out" 2>&1 || status=$?
        fi
        end=$(date +%s%N)
        wall=$(awk -v ns=$((end - start)) 'BEGIN { printf "%.3f", ns / 1e9 }')
        if [[ $status -ne 0 ]] || ! grep -q 'checked against BTreeMap' "$out"; then
            echo "FAIL: ${NAMES[$i]} (exit $status):" >&2
            cat "$out" >&2
            exit 1
        fi
        walls[$i]+="$wall "
        extra=
        if [[ -n $TIME ]]; then
            read -r user sys kib < <(tail -n 1 "$usage")
            cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
            cpus[$i]+="$cpu "
            extra="  cpu $cpu s  max_rss $((kib / 1024)) MiB"
        fi
        printf 'round %d  %-9s %6s s wall%s  | %s\n' $((round + 1)) "${NAMES[$i]}" "$wall" \
            "$extra" "$(head -n 1 "$out")"
    done
done

# The median of a space-separated list of numbers.
median() {
    tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '
        { v[NR] = $1 }
        END { if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%.3f", m }'
}

echo "== medians of $RUNS runs (N=$N)"
for i in 0 1 2; do
    line=$(printf '%-9s wall %6s s' "${NAMES[$i]}" "$(median "${walls[$i]}")")
    [[ -n $TIME ]] && line+=$(printf '  cpu %6s s' "$(median "${cpus[$i]}")")
    echo "$line"
done
