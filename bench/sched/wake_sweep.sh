#!/usr/bin/env bash
# Records the evidence behind the simulator's `--wake-placement pack` model: wake_placement.sh
# in its three modes, then light mode with more and more work per wake-up (the waker's spin
# SPIN_US, then the wakee's WAKEE_US) and with 2 and 4 sleepers woken together, each setting in a directory of its own under OUT_DIR,
# and wake_util.py's reading of them all (OUT_DIR/utilization.txt). Before each setting it waits
# until the machine is quiet (both CPUs at least 95 % idle over two seconds), since another
# process's run on the idle CPU hides what the kernel does when a CPU is idle (and the
# ping-pong would disturb another's measurement).
#
# Usage: bench/sched/wake_sweep.sh OUT_DIR [ROUNDS=300]   (root, as wake_placement.sh)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=${1:?usage: wake_sweep.sh OUT_DIR [ROUNDS]}
rounds=${2:-300}
mkdir -p "$out"

# Percent idle over two seconds, from /proc/stat.
idle_pct() {
    local a b
    read -r -a a < /proc/stat
    sleep 2
    read -r -a b < /proc/stat
    local total=0 i
    for i in 1 2 3 4 5 6 7 8; do total=$((total + b[i] - a[i])); done
    echo $((100 * (b[4] - a[4]) / (total > 0 ? total : 1)))
}

quiet() {
    local tries=0
    while [ "$(idle_pct)" -lt 95 ]; do
        tries=$((tries + 1))
        if [ "$tries" -ge 300 ]; then
            echo "wake_sweep.sh: the machine was not quiet for 10 minutes; stopping" >&2
            exit 1
        fi
    done
}

run() {
    local name=$1
    shift
    quiet
    "$here/wake_placement.sh" "$out/$name" "$rounds" "$@" > /dev/null
    rm -f "$out/$name/pingpong"
    echo "$name: $(head -1 "$out/$name/summary.txt")"
}

run busy 2000 busy
run handoff 2000 handoff
run light 2000 light
for spin in 50 100 200 400 700 1000 1500 2000 3000 5000 8000; do
    run "light-spin$spin" 2000 light "$spin"
done
for wakee in 100 300 600 1000 1500; do
    run "light-wakee$wakee" 2000 light 20 "$wakee"
done
for sleepers in 2 4; do
    run "light-sleepers$sleepers" 2000 light 20 0 "$sleepers"
done
dirs=()
for d in "$out"/*/; do dirs+=("${d%/}"); done
python3 "$here/wake_util.py" "${dirs[@]}" | tee "$out/utilization.txt"
