#!/usr/bin/env bash
# The wake-up chain of a collection without the collector (wake_latency.c), on this machine:
# for mutator runs of 0.2, 1, 5 and 30 ms between two "collections", with the mutator on the
# GC worker's CPU (0) and on the VM thread's (1), the median latency of the three wake-ups of
# a collection. It shows what the simulator's wake-up costs must model: on the project's
# 2-vCPU KVM guest the worker's wake-up grows with how long the worker slept even when its CPU
# was busy until just before. Waits for a quiet machine before each setting (as
# wake_sweep.sh). Needs 2 CPUs and a C compiler; no root.
#
# Usage: bench/sched/wake_latency.sh [ROUNDS=200] [WORK_US=10]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
rounds=${1:-200}
work=${2:-10}
if [ "$(nproc)" -lt 2 ]; then
    echo "wake_latency.sh: needs 2 CPUs (this machine has $(nproc))" >&2
    exit 1
fi
bin="$(mktemp -d)/wake_latency"
trap 'rm -rf "$(dirname "$bin")"' EXIT
cc -O2 -pthread -o "$bin" "$here/wake_latency.c"

# Percent idle over one second, from /proc/stat.
idle_pct() {
    local a b total=0 i
    read -r -a a < /proc/stat
    sleep 1
    read -r -a b < /proc/stat
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    echo $((100 * (b[4] - a[4]) / (total > 0 ? total : 1)))
}

echo "$(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)"
for us in 200 1000 5000 30000; do
    # About 3 s a setting, at least 20 rounds.
    n=$((3000000 / (us + 100)))
    n=$((n > rounds ? rounds : (n < 20 ? 20 : n)))
    for cpu in 0 1; do
        tries=0
        while [ "$(idle_pct)" -lt 90 ] && [ $tries -lt 30 ]; do tries=$((tries + 1)); done
        "$bin" "$n" "$us" "$cpu" "$work"
    done
done
