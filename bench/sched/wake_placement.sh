#!/usr/bin/env bash
# Records where this machine's kernel places a woken thread: a futex ping-pong (pingpong.c)
# whose waker is busy on its CPU at every wake-up and whose sleeper's previous CPU is idle,
# traced with tracefs (sched_waking, sched_wakeup, sched_switch) in a tracing instance of its
# own. Prints the summary of wake_placement.py and keeps the raw trace as evidence.
#
# Usage: bench/sched/wake_placement.sh OUT_DIR [ROUNDS=200] [BUSY_US=2000] [MODE] [SPIN_US=20] [WAKEE_US=0] [SLEEPERS=1]
# MODE: busy (the waker keeps spinning after each wake-up), handoff (it waits to be woken
# back, as a VM thread waits for the GC workers it woke) or light (its CPU mostly idle: it
# sleeps BUSY_US and spins SPIN_US before each wake-up, and the woken thread spins WAKEE_US;
# SLEEPERS threads are woken by one futex wake);
# see pingpong.c. The CPUs rest 0.5 s after the compile before the ping-pong starts, so that
# the compile's utilization has decayed (PELT halves it every 32 ms).
# bench/sched/wake_util.py reads the kept traces for the utilizations at each wake-up.
# Needs root (or tracefs permissions) and a C compiler; where tracing is not permitted it says
# so and exits 1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out=${1:?usage: wake_placement.sh OUT_DIR [ROUNDS] [BUSY_US] [busy|handoff|light] [SPIN_US] [WAKEE_US] [SLEEPERS]}
rounds=${2:-200}
busy=${3:-2000}
mode=${4:-busy}
spin=${5:-20}
wakee=${6:-0}
sleepers=${7:-1}
case "$mode" in busy | handoff | light) ;; *)
    echo "wake_placement.sh: MODE must be busy, handoff or light, not '$mode'" >&2
    exit 2
    ;;
esac
mkdir -p "$out"

tracefs=""
for dir in /sys/kernel/tracing /sys/kernel/debug/tracing; do
    if [ -r "$dir/available_events" ]; then
        tracefs=$dir
        break
    fi
done
if [ -z "$tracefs" ] && [ -d /sys/kernel/tracing ]; then
    mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
    [ -r /sys/kernel/tracing/available_events ] && tracefs=/sys/kernel/tracing
fi
if [ -z "$tracefs" ]; then
    echo "wake_placement.sh: tracing is not permitted here: no readable tracefs (mount -t tracefs nodev /sys/kernel/tracing needs root)" >&2
    exit 1
fi
for event in sched_waking sched_wakeup sched_switch; do
    if ! grep -qx "sched:$event" "$tracefs/available_events"; then
        echo "wake_placement.sh: tracing is not permitted here: the kernel has no sched:$event tracepoint" >&2
        exit 1
    fi
done
instance="$tracefs/instances/concord-wake-$$"
if ! mkdir "$instance" 2>/dev/null; then
    echo "wake_placement.sh: tracing is not permitted here: cannot create the tracing instance $instance" >&2
    exit 1
fi
trap 'echo 0 > "$instance/tracing_on" 2>/dev/null || true; rmdir "$instance" 2>/dev/null || true' EXIT

cc -O2 -pthread -o "$out/pingpong" "$here/pingpong.c"
sleep 0.5
echo 4096 > "$instance/buffer_size_kb"
for event in sched_waking sched_wakeup sched_switch; do
    echo 1 > "$instance/events/sched/$event/enable"
done
echo 1 > "$instance/tracing_on"
"$out/pingpong" "$rounds" "$busy" "$mode" "$spin" "$wakee" "$sleepers" &
pid=$!
wait "$pid"
echo 0 > "$instance/tracing_on"
cp "$instance/trace" "$out/trace.txt"
{
    echo "kernel $(uname -r); cmdline: $(cat /proc/cmdline)"
    echo "cpus $(nproc); load $(cut -d' ' -f1-3 /proc/loadavg); pingpong $rounds rounds, $mode, waker busy $busy us before each wake-up"
    if [ "$mode" = light ]; then
        echo "light: the waker sleeps $busy us and spins $spin us before each wake-up; $sleepers wakee(s) woken together spin $wakee us after it"
    fi
} > "$out/machine.txt"
python3 "$here/wake_placement.py" "$out/trace.txt" "$pid" | tee "$out/summary.txt"
