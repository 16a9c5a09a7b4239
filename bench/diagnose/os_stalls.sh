#!/usr/bin/env bash
# Two OS stalls of paper 002 made in a real HotSpot GC log, then named by `concord diagnose`:
#
#   1. no CPU: real-time busy loops (SCHED_FIFO) take every CPU for 200 ms each second, so
#      the GC threads of a collection caught by one cannot run (needs root or CAP_SYS_NICE);
#   2. a blocked log write: the JVM logs into a pipe whose reader drains 20 KB/s, so the VM
#      thread's write() inside the pause waits (002 Fig. 4's pattern: real far above user+sys).
#
# The JVM is the installed JDK 17+ with Parallel GC, 2 GC threads, logging
# -Xlog:gc*,gc+cpu,safepoint synchronously (HotSpot's default). Logs and diagnoses go to OUT_DIR.
#
# Usage: bench/diagnose/os_stalls.sh [OUT_DIR]   (builds concord in release mode first)
set -euo pipefail

out=${1:-os-stalls}
mkdir -p "$out"
out=$(cd "$out" && pwd)
java=$(command -v java || ls /usr/lib/jvm/*/bin/java 2>/dev/null | head -1 || true)
[ -x "$java" ] || { echo "os_stalls.sh: no java found on PATH or in /usr/lib/jvm" >&2; exit 2; }
for tool in chrt taskset python3 mkfifo nproc; do
    command -v "$tool" >/dev/null || { echo "os_stalls.sh: $tool is missing" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release -q -p concord-cli --manifest-path "$root/Cargo.toml"
concord="$root/target/release/concord"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat > "$work/Churn.java" <<'JAVA'
public class Churn {
    public static void main(String[] args) {
        java.util.ArrayDeque<byte[]> queue = new java.util.ArrayDeque<>();
        long kept = 0;
        long end = System.nanoTime() + 6_000_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 10_000; i++) {
                queue.add(new byte[1024]);
                if (queue.size() > 40_000) { for (int k = 0; k < 20_000; k++) kept += queue.poll().length; }
            }
        }
        System.out.println(kept);
    }
}
JAVA
jvm=("$java" -Xmx64m -XX:+UseParallelGC -XX:ParallelGCThreads=2)
xlog='-Xlog:gc*,gc+cpu,safepoint:file=%s:uptime,level,tags'

# 1. Every CPU taken by a real-time busy loop, 200 ms in each second, five times. Each loop
# ends itself: a SCHED_FIFO loop leaves no CPU to a timer that would stop it.
burst() {
    for _ in 1 2 3 4 5; do
        sleep 0.8
        for cpu in $(seq 0 $(( $(nproc) - 1 ))); do
            taskset -c "$cpu" chrt -f 10 python3 -c 'import time
t = time.monotonic() + 0.2
while time.monotonic() < t: pass' &
            loops+=($!)
        done
        wait "${loops[@]}"
        loops=()
    done
}
loops=()
"${jvm[@]}" "$(printf -- "$xlog" "$out/no-cpu.log")" "$work/Churn.java" >/dev/null &
jvm_pid=$!
sleep 1
burst
wait "$jvm_pid"

# 2. The log written into a pipe drained at 20 KB/s.
mkfifo "$work/pipe"
python3 - "$work/pipe" "$out/blocked-write.log" <<'PY' &
import sys, time
src, dst = open(sys.argv[1], "rb"), open(sys.argv[2], "wb")
while chunk := src.read(2048):
    dst.write(chunk)
    dst.flush()
    time.sleep(0.1)
PY
reader=$!
"${jvm[@]}" "$(printf -- "$xlog" "$work/pipe")" "$work/Churn.java" >/dev/null
wait "$reader"

for name in no-cpu blocked-write; do
    "$concord" diagnose "$out/$name.log" > "$out/$name.txt"
    echo "== $name: $out/$name.log"
    grep -E "STALL|pauses, total" "$out/$name.txt" | head -8
done
