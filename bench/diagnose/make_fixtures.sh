#!/usr/bin/env bash
# Writes the real JDK 17 and JDK 25 GC logs kept as `concord diagnose` fixtures under
# crates/concord-cli/tests/fixtures/diagnose/real/jdk17 and .../jdk25: FixtureWorkload.java
# (beside this script) run for SECONDS seconds (default 2) on a 64 MB heap under every
# collector, with a spread of -Xlog tag sets and decorations, plus one rotated set per JDK.
# Each log is kept as the JVM wrote it; a log over 100 KB is gzipped (gzip -n -9). Each
# directory gets FLAGS.tsv: file, java -version's first line, and the JVM options.
#
# The runs are not deterministic (timing, GC ergonomics), so running this again writes other
# logs: then regenerate real/expected.tsv too (see real/SOURCES.md).
#
# Usage: bench/diagnose/make_fixtures.sh [SECONDS]
# Needs: JDK 17 at /usr/lib/jvm/java-17-openjdk-amd64, Temurin 25 at
# /usr/lib/jvm/temurin-25-jdk-amd64, gzip.
set -euo pipefail

seconds=${1:-2}
root=$(cd "$(dirname "$0")/../.." && pwd)
real="$root/crates/concord-cli/tests/fixtures/diagnose/real"
declare -A home=(
    [jdk17]=/usr/lib/jvm/java-17-openjdk-amd64
    [jdk25]=/usr/lib/jvm/temurin-25-jdk-amd64
)
for jdk in jdk17 jdk25; do
    [ -x "${home[$jdk]}/bin/java" ] || { echo "make_fixtures.sh: no ${home[$jdk]}/bin/java" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Compiled for 17 so both JDKs run the same class file.
"${home[jdk17]}/bin/javac" --release 17 -d "$work/classes" "$root/bench/diagnose/FixtureWorkload.java"

# One log per line: JDK, collector options, -Xlog tag selection, decorations, file name.
# Together they cover each collector on each JDK, each decoration and each tag set at least
# once (`safepoint`, `gc+heap` and `gc+phases=debug` alone hold no `[gc]` pause line).
matrix='
jdk17 -XX:+UseSerialGC                     gc*                  uptime,level,tags  serial_gc-star_default.log
jdk17 -XX:+UseSerialGC                     gc*,safepoint        uptimemillis       serial_gc-star-safepoint_uptimemillis.log
jdk17 -XX:+UseSerialGC                     safepoint            uptime             serial_safepoint_uptime.log
jdk17 -XX:+UseSerialGC                     gc+phases=debug      tags               serial_gc-phases-debug_tags.log
jdk17 -XX:+UseParallelGC                   gc*,gc+cpu,safepoint uptimenanos,level,tags parallel_gc-star-cpu-safepoint_uptimenanos-level-tags.log
jdk17 -XX:+UseParallelGC                   gc                   time               parallel_gc_time.log
jdk17 -XX:+UseParallelGC                   gc+heap              uptime,level,tags  parallel_gc-heap_default.log
jdk17 -XX:+UseG1GC                         gc*                  utc,level,tags     g1_gc-star_utc-level-tags.log
jdk17 -XX:+UseG1GC                         gc*,gc+cpu,safepoint uptime,tid         g1_gc-star-cpu-safepoint_uptime-tid.log
jdk17 -XX:+UseG1GC                         gc+phases=debug      uptime,level,tags  g1_gc-phases-debug_default.log
jdk17 -XX:+UseG1GC                         gc                   none               g1_gc_none.log
jdk17 -XX:+UseG1GC                         gc*,safepoint        time,utc,uptime,timemillis,uptimemillis,timenanos,uptimenanos,hostname,pid,tid,level,tags g1_gc-star-safepoint_all.log
jdk17 -XX:+UseShenandoahGC                 gc*,safepoint        level              shenandoah_gc-star-safepoint_level.log
jdk17 -XX:+UseShenandoahGC                 gc                   pid                shenandoah_gc_pid.log
jdk17 -XX:+UseZGC                          gc*                  tags               z_gc-star_tags.log
jdk17 -XX:+UseZGC                          gc*,gc+cpu,safepoint none               z_gc-star-cpu-safepoint_none.log
jdk17 -XX:+UseZGC                          gc+phases=debug      uptimemillis,tags  z_gc-phases-debug_uptimemillis-tags.log
jdk17 -XX:+UseZGC                          gc                   uptime,level,tags  z_gc_default.log
jdk25 -XX:+UseSerialGC                     gc*                  utc                serial_gc-star_utc.log
jdk25 -XX:+UseSerialGC                     gc+heap              none               serial_gc-heap_none.log
jdk25 -XX:+UseParallelGC                   gc*,safepoint        uptime,level,tags  parallel_gc-star-safepoint_default.log
jdk25 -XX:+UseParallelGC                   gc*                  tid                parallel_gc-star_tid.log
jdk25 -XX:+UseParallelGC                   gc+phases=debug      none               parallel_gc-phases-debug_none.log
jdk25 -XX:+UseG1GC                         gc*,gc+cpu,safepoint time,level,tags    g1_gc-star-cpu-safepoint_time-level-tags.log
jdk25 -XX:+UseG1GC                         gc                   uptimemillis       g1_gc_uptimemillis.log
jdk25 -XX:+UseG1GC                         safepoint            time,tags          g1_safepoint_time-tags.log
jdk25 -XX:+UseG1GC                         gc*,safepoint        time,utc,uptime,timemillis,uptimemillis,timenanos,uptimenanos,hostname,pid,tid,level,tags g1_gc-star-safepoint_all.log
jdk25 -XX:+UseShenandoahGC                 gc*                  uptimenanos        shenandoah_gc-star_uptimenanos.log
jdk25 -XX:+UseShenandoahGC                 gc*,gc+cpu,safepoint uptime,level,tags,pid shenandoah_gc-star-cpu-safepoint_uptime-level-tags-pid.log
jdk25 -XX:+UseShenandoahGC,-XX:ShenandoahGCMode=generational,-Xmx128m gc*,safepoint uptime,level,tags shenandoah-generational_gc-star-safepoint_default.log
jdk25 -XX:+UseZGC                          gc*                  uptime,level,tags  z_gc-star_default.log
jdk25 -XX:+UseZGC                          gc*,safepoint        utc,tid            z_gc-star-safepoint_utc-tid.log
jdk25 -XX:+UseZGC                          gc                   level,tags         z_gc_level-tags.log
jdk25 -XX:+UseZGC                          gc+phases=debug      uptime             z_gc-phases-debug_uptime.log
'

# Runs the workload on JDK $1 with the options $2 (comma-separated) and -Xlog $3 into $4
# (a file in $work), and records the line of FLAGS.tsv for the name $5. A -Xmx among the
# options overrides the 64 MB (generational Shenandoah collects some 3000 times in 2 s on 64 MB,
# a 5 MB log).
run() {
    local jdk=$1 options=$2 xlog=$3 log=$4 name=$5
    local -a opts
    IFS=, read -r -a opts <<<"$options"
    (cd "$work" && "${home[$jdk]}/bin/java" -Xmx64m "${opts[@]}" "-Xlog:$xlog" \
        -cp "$work/classes" FixtureWorkload "$seconds" >/dev/null)
    local version
    version=$("${home[$jdk]}/bin/java" -version 2>&1 | sed -n 2p)
    printf '%s\t%s\t%s\n' "$name" "$version" "-Xmx64m ${opts[*]} -Xlog:${xlog//$work\//}" >>"$work/$jdk.tsv"
}

# Moves $work/$1 to real/$2/$1, gzipped when over 100 KB.
keep() {
    local file=$1 jdk=$2
    if [ "$(stat -c %s "$work/$file")" -gt 102400 ]; then
        gzip -n -9 "$work/$file"
        file="$file.gz"
    fi
    mv "$work/$file" "$real/$jdk/$file"
    echo "$jdk/$file"
}

for jdk in jdk17 jdk25; do
    rm -rf "${real:?}/$jdk"
    mkdir -p "$real/$jdk"
    printf 'file\tjava\toptions\n' >"$work/$jdk.tsv"
done

while read -r jdk options tags decorations name; do
    [ -n "$jdk" ] || continue
    run "$jdk" "$options" "$tags:file=$work/$name:$decorations" "$work/$name" "$name"
    keep "$name" "$jdk"
done <<<"$matrix"

# One rotated set per JDK: gc*, files of 16 KB, 3 kept besides the current one.
for jdk in jdk17 jdk25; do
    case $jdk in
        jdk17) options=-XX:+UseParallelGC prefix=parallel-rotated ;;
        jdk25) options=-XX:+UseG1GC prefix=g1-rotated ;;
    esac
    mkdir -p "$work/rot"
    run "$jdk" "$options" "gc*:file=$work/rot/$prefix.log::filecount=3,filesize=16k" \
        "$work/rot/$prefix.log" "$prefix.log (and its rotated files .0, .1)"
    for f in "$work"/rot/*; do
        mv "$f" "$work/"
        keep "$(basename "$f")" "$jdk"
    done
    rmdir "$work/rot"
done

for jdk in jdk17 jdk25; do
    mv "$work/$jdk.tsv" "$real/$jdk/FLAGS.tsv"
done
du -sh "$real/jdk17" "$real/jdk25"
