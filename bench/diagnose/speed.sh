#!/usr/bin/env bash
# How fast `concord diagnose` reads large logs, and how much memory it holds: prints one line
# per input with its size, the wall time, the peak resident memory and the rate.
#
# Inputs, made in a scratch directory (removed at the end):
#   - a real HotSpot unified log (Parallel GC, gc*,gc+cpu,safepoint) written by the installed
#     JDK, repeated to SIZE_MB megabytes (default 200), plain and gzipped;
#   - 100 MB of blank lines;
#   - 2 GB of newlines gzipped (about 9 MB on disk).
#
# Usage: bench/diagnose/speed.sh [SIZE_MB]   (builds concord in release mode first)
# Needs: java (11+) on PATH or in /usr/lib/jvm, GNU time at /usr/bin/time, gzip, python3.
set -euo pipefail

size_mb=${1:-200}
case "$size_mb" in
    '' | *[!0-9]*) echo "speed.sh: SIZE_MB must be a whole number of megabytes, not '$size_mb'" >&2; exit 2 ;;
esac
for tool in /usr/bin/time gzip python3; do
    command -v "$tool" >/dev/null || { echo "speed.sh: $tool is missing (apt-get install time gzip python3)" >&2; exit 2; }
done
java=$(command -v java || ls /usr/lib/jvm/*/bin/java 2>/dev/null | head -1 || true)
[ -x "$java" ] || { echo "speed.sh: no java found on PATH or in /usr/lib/jvm" >&2; exit 2; }

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
        for (int i = 0; i < 400_000; i++) {
            queue.add(new byte[1024]);
            if (queue.size() > 4_000) { for (int k = 0; k < 2_000; k++) kept += queue.poll().length; }
        }
        System.out.println(kept);
    }
}
JAVA
"$java" -Xmx32m -XX:+UseParallelGC -XX:ParallelGCThreads=2 \
    "-Xlog:gc*,gc+cpu,safepoint:file=$work/one.log" "$work/Churn.java" >/dev/null
python3 - "$work/one.log" "$work/big.log" "$size_mb" <<'PY'
import sys
one = open(sys.argv[1]).read()
with open(sys.argv[2], "w") as out:
    while out.tell() < int(sys.argv[3]) << 20:
        out.write(one)
PY
gzip -1 -c "$work/big.log" > "$work/big.log.gz"
head -c $((100 << 20)) /dev/zero | tr '\0' '\n' > "$work/blank.log"
head -c $((2 << 30)) /dev/zero | tr '\0' '\n' | gzip -1 > "$work/newlines.gz"

printf '%-34s %10s %9s %12s %9s %s\n' input size_MB wall_s peak_RSS_MB MB_per_s exit
run() {
    local name=$1 file=$2 text_mb=$3; shift 3
    local status=0
    /usr/bin/time -f '%e %M' -o "$work/time" "$concord" diagnose "$file" "$@" >/dev/null 2>"$work/err" || status=$?
    read -r wall rss < <(tail -1 "$work/time")
    python3 -c "import sys; n,t,w,r,s=sys.argv[1:]; print(f'{n:<34} {float(t):>10.0f} {float(w):>9.2f} {int(r)/1024:>12.1f} {float(t)/max(float(w),1e-3):>9.0f} {s}')" \
        "$name" "$text_mb" "$wall" "$rss" "$status"
}
big_mb=$(( $(stat -c %s "$work/big.log") >> 20 ))
run "unified log, text output" "$work/big.log" "$big_mb"
run "unified log, --json" "$work/big.log" "$big_mb" --json
run "unified log, --html page" "$work/big.log" "$big_mb" --html "$work/page.html"
run "unified log, gzipped" "$work/big.log.gz" "$big_mb"
run "blank lines" "$work/blank.log" 100
run "2 GB of newlines, gzipped (exit 2)" "$work/newlines.gz" 2048
