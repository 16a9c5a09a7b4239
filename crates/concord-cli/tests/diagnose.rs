//! `concord diagnose`: real GC logs (a HotSpot 17 unified log written by the installed JDK,
//! Concord's own log) read with the right numbers, OS stalls named in fixture logs, and bad
//! input refused with exit status 2.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_exit_2, concord, scratch, stdout_json, text};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/diagnose");

/// A real HotSpot 17 log with one pause edited three times over into each kind of stall: GC(2)
/// real 1590 ms for 50 ms of CPU (off-CPU), GC(4) a 13 ms collection inside a 1487 ms stop (the
/// log write of 002 Fig. 8), GC(5) sys 700 ms over user 100 ms (kernel); GC(6) 300 ms with
/// 600 ms of CPU on 2 threads (the collector's own work).
const UNIFIED_STALLS: &str = "unified_stalls.log";

/// A JDK 8 ParNew + CMS log (`-XX:+PrintGCDetails -XX:+PrintGCDateStamps
/// -XX:+PrintGCTimeStamps -XX:+PrintTenuringDistribution -XX:+PrintGCApplicationStoppedTime`).
/// JDK 8 is not installed here, so this is a fixture of the documented format written by
/// hand, not the output of a JVM: pause 3 is the record of 002 Fig. 4 (real 11.45 s for
/// user 0.18 s + sys 0.01 s), pause 4 a 41 ms collection inside a 1582 ms stop; the CMS
/// concurrent phases carry `[Times: …]` but are no pauses.
const JDK8_PARNEW_CMS: &str = "jdk8_parnew_cms.log";

fn fixture(name: &str) -> String {
    format!("{FIXTURES}/{name}")
}

/// `concord diagnose LOG --json MORE…`, which must succeed.
fn diagnose_json(log: &str, more: &[&str]) -> Value {
    let mut args = vec!["diagnose", log, "--json"];
    args.extend(more);
    let out = concord(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    stdout_json(&out)
}

/// The ids of the stalled pauses and their causes.
fn stalls(json: &Value) -> Vec<(u64, Vec<String>)> {
    json["stalled"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let causes = s["causes"].as_array().unwrap();
            let causes = causes.iter().map(|c| c.as_str().unwrap().to_string());
            (s["id"].as_u64().unwrap(), causes.collect())
        })
        .collect()
}

fn over(json: &Value) -> [u64; 4] {
    ["250", "500", "1000", "2000"].map(|k| json["over_ms"][k].as_u64().unwrap())
}

/// A JDK's `java` of version 11 or later (single-file source launch): `PATH`, then the JDKs
/// in /usr/lib/jvm. `.ci/run` installs JDK 17.
fn find_java() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("java"));
    let installed = fs::read_dir("/usr/lib/jvm")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin/java"));
    on_path.chain(installed).find(|java| java.is_file()).expect(
        "no JDK: this test needs `java` (11+) on PATH or in /usr/lib/jvm (.ci/run installs JDK 17)",
    )
}

/// Runs a small allocating program on HotSpot Parallel GC with 2 GC threads and the
/// `gc*`, `gc+cpu` and `safepoint` tags logged to a file; returns the log's path.
fn hotspot_log(dir: &Path) -> PathBuf {
    let source = dir.join("Churn.java");
    fs::write(
        &source,
        "public class Churn {\n\
         public static void main(String[] args) {\n\
         java.util.ArrayDeque<byte[]> queue = new java.util.ArrayDeque<>();\n\
         long kept = 0;\n\
         for (int i = 0; i < 100_000; i++) {\n\
         queue.add(new byte[10 * 1024]);\n\
         if (queue.size() > 2_000) { for (int k = 0; k < 1_000; k++) kept += queue.poll().length; }\n\
         }\n\
         System.out.println(kept);\n\
         }\n\
         }\n",
    )
    .unwrap();
    let log = dir.join("hotspot17.log");
    let out = Command::new(find_java())
        .args([
            "-Xms64m",
            "-Xmx64m",
            "-XX:+UseParallelGC",
            "-XX:ParallelGCThreads=2",
            &format!("-Xlog:gc*,gc+cpu,safepoint:file={}", log.display()),
        ])
        .arg(&source)
        .output()
        .expect("java runs");
    assert!(out.status.success(), "java failed: {}", text(&out.stderr));
    log
}

/// The lines of a unified log whose tag set is exactly `gc` and that report a pause, counted
/// without the parser under test.
fn gc_pause_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("][gc ") || l.contains("][gc]"))
        .filter(|l| l.contains(" Pause ") && l.trim_end().ends_with("ms"))
        .collect()
}

#[test]
#[cfg_attr(
    no_java,
    ignore = "needs a JDK (java with javac on PATH) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_hotspot_17_log_is_read_with_cpu_times_and_safepoints() {
    let dir = scratch("diagnose-hotspot17");
    let log = hotspot_log(&dir);
    let log_text = fs::read_to_string(&log).unwrap();
    let expected = gc_pause_lines(&log_text);
    assert!(expected.len() >= 5, "too few pauses to check:\n{log_text}");

    let json = diagnose_json(log.to_str().unwrap(), &[]);
    assert_eq!(json["format"], "hotspot-unified");
    assert_eq!(
        (
            json["gc_threads"].as_u64(),
            json["gc_threads_from"].as_str()
        ),
        (Some(2), Some("log"))
    );
    assert_eq!(json["pauses"].as_u64(), Some(expected.len() as u64));
    let records = json["records"].as_array().unwrap();
    let mut longest: f64 = 0.0;
    for (record, line) in records.iter().zip(&expected) {
        let id = record["id"].as_u64().unwrap();
        assert!(
            line.contains(&format!("GC({id}) Pause")),
            "{record} vs {line}"
        );
        let real = record["real_ms"].as_f64().unwrap();
        assert!(
            line.ends_with(&format!(" {real:.3}ms")),
            "{record} vs {line}"
        );
        for key in [
            "user_ms",
            "sys_ms",
            "time_to_safepoint_ms",
            "stopped_ms",
            "time_s",
        ] {
            assert!(record[key].is_f64(), "{key} missing in {record}");
        }
        // The safepoint holding the collection lasts at least as long as it.
        assert!(record["stopped_ms"].as_f64().unwrap() >= real, "{record}");
        longest = longest.max(record["stopped_ms"].as_f64().unwrap());
    }
    assert_eq!(json["pause_max_ms"].as_f64(), Some(longest));

    let out = concord(&["diagnose", log.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    assert!(shown.contains("HotSpot unified logging"), "{shown}");
    assert!(
        shown.contains(&format!("{} pauses, total", expected.len())),
        "{shown}"
    );
    assert!(shown.contains(">250 ms: "), "{shown}");
}

#[test]
fn concords_own_log_matches_its_summary() {
    let dir = scratch("diagnose-concord");
    let log = dir.join("gc.log");
    let out = concord(&[
        "run",
        "binary-trees",
        "14",
        "--heap",
        "16m",
        "--json",
        "--gc-log",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = stdout_json(&out);

    let json = diagnose_json(log.to_str().unwrap(), &[]);
    assert_eq!(json["format"], "concord");
    assert_eq!(json["pauses"], summary["gc_count"]);
    // The `[gc]` lines give each collection to the microsecond (`real_ms`)...
    let records = json["records"].as_array().unwrap();
    let real: Vec<f64> = records
        .iter()
        .map(|r| r["real_ms"].as_f64().unwrap())
        .collect();
    let max = real.iter().copied().fold(0.0, f64::max);
    assert!(
        (max - summary["pause_max_ms"].as_f64().unwrap()).abs() < 1e-3,
        "{json}"
    );
    let total: f64 = real.iter().sum();
    let count = summary["gc_count"].as_f64().unwrap();
    assert!((total - summary["gc_pause_total_ms"].as_f64().unwrap()).abs() <= 1e-3 * count);
    // ... and the `[safepoint]` lines the whole time the world was stopped for it, which the
    // pause figures are: never less than the collection.
    for r in records {
        let stopped = r["stopped_ms"].as_f64().unwrap();
        assert!(stopped + 1e-3 >= r["real_ms"].as_f64().unwrap(), "{r}");
        assert!(r["time_to_safepoint_ms"].as_f64().is_some(), "{r}");
    }
    assert!(
        json["pause_max_ms"].as_f64().unwrap() + 1e-3 >= max,
        "{json}"
    );
}

#[test]
fn each_kind_of_stall_in_a_unified_log_is_named_with_advice() {
    let json = diagnose_json(&fixture(UNIFIED_STALLS), &[]);
    assert_eq!(json["format"], "hotspot-unified");
    assert_eq!(json["pauses"], 7);
    assert_eq!(
        stalls(&json),
        [
            (2, vec!["off-cpu".to_string()]),
            (4, vec!["outside-collection".to_string()]),
            (5, vec!["kernel".to_string()]),
        ]
    );
    let first = &json["stalled"][0];
    assert_eq!(first["real_ms"], 1590.412);
    assert_eq!(
        (first["user_ms"].as_f64(), first["sys_ms"].as_f64()),
        (Some(40.0), Some(10.0))
    );
    assert_eq!(first["time_s"], 2.75);
    // 1590.5 (GC 2), 1486.8 (GC 4, stopped), 400.5, 300.9.
    assert_eq!(over(&json), [4, 2, 2, 0]);
    assert!((json["pause_max_ms"].as_f64().unwrap() - 1590.517903).abs() < 1e-9);
    let advice = json["advice"].to_string();
    assert!(
        advice.contains("-Xlog:async") && advice.contains("tmpfs"),
        "{advice}"
    );
    assert!(advice.contains("transparent huge pages"), "{advice}");

    // GC(6)'s 600 ms of CPU keeps 2 threads busy 300 ms, but 8 threads only 75 ms.
    let eight = diagnose_json(&fixture(UNIFIED_STALLS), &["--gc-threads", "8"]);
    assert_eq!(eight["gc_threads_from"], "flag");
    assert!(stalls(&eight)
        .iter()
        .any(|(id, c)| *id == 6 && c == &["off-cpu"]));

    let out = concord(&["diagnose", &fixture(UNIFIED_STALLS)]);
    let shown = text(&out.stdout);
    assert!(shown.contains("3 OS stall(s)"), "{shown}");
    assert!(shown.contains("STALL (off-cpu): real 1590 ms"), "{shown}");
}

#[test]
fn a_jdk8_log_shows_002s_fig4_pause_as_an_os_stall() {
    let json = diagnose_json(&fixture(JDK8_PARNEW_CMS), &[]);
    assert_eq!(json["format"], "jdk8");
    assert_eq!(
        (
            json["gc_threads"].as_u64(),
            json["gc_threads_from"].as_str()
        ),
        (Some(4), Some("log"))
    );
    // ParNew, CMS initial mark, CMS remark, Fig. 4, the slow stop; no concurrent phase.
    assert_eq!(json["pauses"], 5);
    assert_eq!(
        stalls(&json),
        [
            (3, vec!["off-cpu".to_string()]),
            (4, vec!["outside-collection".to_string()]),
        ]
    );
    let fig4 = &json["stalled"][0];
    assert_eq!(fig4["real_ms"], 11452.1443);
    assert_eq!(fig4["time_s"], 312052.604);
    assert_eq!(over(&json), [2, 2, 2, 1]);
    assert!(json["advice"]
        .to_string()
        .contains("-Xloggc:/dev/shm/gc.log"));
}

#[test]
fn what_is_not_a_gc_log_is_refused_with_status_2() {
    let dir = scratch("diagnose-bad-input");
    let notes = dir.join("notes.txt");
    fs::write(&notes, "[build] compiled 3 crates\nGC is fine\n").unwrap();
    assert_exit_2(
        &["diagnose", notes.to_str().unwrap()],
        "no GC pauses found; not a GC log this command reads (allowed: HotSpot unified logging",
    );
    let empty = dir.join("empty.log");
    fs::write(&empty, "").unwrap();
    assert_exit_2(&["diagnose", empty.to_str().unwrap()], "no GC pauses found");
    let missing = dir.join("missing.log");
    assert_exit_2(
        &["diagnose", missing.to_str().unwrap()],
        "cannot open the GC log",
    );
    assert_exit_2(&["diagnose", dir.to_str().unwrap()], "is a directory");
    let gz = dir.join("gc.log.gz");
    fs::write(&gz, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0]).unwrap();
    assert_exit_2(&["diagnose", gz.to_str().unwrap()], "does not decompress");
    // Other compressed formats are named, with the tool that reads them.
    let zst = dir.join("gc.log.zst");
    fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 0, 0]).unwrap();
    assert_exit_2(
        &["diagnose", zst.to_str().unwrap()],
        "is zstd-compressed, which diagnose does not read (it reads plain text and gzip); \
         decompress it first (zstdcat)",
    );
    let xz = dir.join("gc.log.xz");
    fs::write(&xz, [0xfd, b'7', b'z', b'X', b'Z', 0, 0]).unwrap();
    assert_exit_2(&["diagnose", xz.to_str().unwrap()], "is xz-compressed");
    assert_exit_2(
        &["diagnose", &fixture(UNIFIED_STALLS), "--gc-threads", "0"],
        "--gc-threads",
    );
}

/// Runs `Churn.java` (written by [`hotspot_log`]'s program) on `java` with `flags` and
/// returns the log written to `name`.
fn jdk_log(java: &Path, dir: &Path, name: &str, flags: &[&str], xlog: &str) -> String {
    let source = dir.join("Churn.java");
    if !source.exists() {
        hotspot_log(dir);
    }
    let log = dir.join(name);
    let out = Command::new(java)
        .args(["-Xms64m", "-Xmx64m"])
        .args(flags)
        .arg(xlog.replace("{log}", &log.display().to_string()))
        .arg(&source)
        .output()
        .expect("java runs");
    assert!(out.status.success(), "java failed: {}", text(&out.stderr));
    fs::read_to_string(log).unwrap()
}

/// Pause lines counted without the parser: a `GC(n)` message, optionally after ZGC's
/// generation (`Y: `/`O:` in a major collection, `y: `/`o: ` in a minor one), starting with
/// `Pause ` and ending in a duration in ms.
fn pause_messages(log: &str) -> usize {
    log.lines()
        .filter_map(|l| l.split_once("GC(").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once(") ").map(|(_, m)| m))
        .map(|m| {
            ["Y: ", "O: ", "y: ", "o: "]
                .iter()
                .find_map(|g| m.strip_prefix(g))
                .unwrap_or(m)
        })
        .filter(|m| m.starts_with("Pause ") && m.trim_end().ends_with("ms"))
        .count()
}

/// Real logs of JDK 17 and JDK 25 for every collector, with the decorations operators choose
/// (none at all, wall-clock only, every one): each pause the JVM wrote is read.
#[test]
#[cfg_attr(
    any(no_java, no_jdk25),
    ignore = "needs JDK 17 and Temurin 25 (.ci/run installs JDK 17; the machine image carries Temurin 25)"
)]
fn real_logs_of_every_collector_and_decoration_are_read() {
    let dir = scratch("diagnose-collectors");
    let jdk17 = find_java();
    let jdk25 = PathBuf::from("/usr/lib/jvm/temurin-25-jdk-amd64/bin/java");
    let cases: [(&Path, &str, &str, &str); 6] = [
        (
            &jdk25,
            "-XX:+UseZGC",
            "-Xlog:gc*:file={log}:none",
            "z25-none.log",
        ),
        (
            &jdk25,
            "-XX:+UseSerialGC",
            "-Xlog:gc*:file={log}:time,level,tags",
            "serial25.log",
        ),
        (
            &jdk25,
            "-XX:+UseShenandoahGC",
            "-Xlog:gc*,safepoint:file={log}:utc,uptimemillis,pid,tid,level,tags",
            "shenandoah25.log",
        ),
        (
            &jdk17,
            "-XX:+UseG1GC",
            "-Xlog:gc*:file={log}:none",
            "g1-17-none.log",
        ),
        (
            &jdk17,
            "-XX:+UseZGC",
            "-Xlog:gc*:file={log}:uptime",
            "z17.log",
        ),
        (
            &jdk25,
            "-XX:+UseParallelGC",
            "-Xlog:gc*:file={log}:uptimenanos",
            "parallel25.log",
        ),
    ];
    for (java, collector, xlog, name) in cases {
        let text = jdk_log(java, &dir, name, &[collector], xlog);
        let expected = pause_messages(&text);
        assert!(expected > 0, "{name}: no pause written:\n{text}");
        let json = diagnose_json(dir.join(name).to_str().unwrap(), &[]);
        assert_eq!(json["format"], "hotspot-unified", "{name}");
        assert_eq!(json["pauses"].as_u64(), Some(expected as u64), "{name}");
    }
}

/// A real rotated set (`-Xlog:gc*:file=gc.log::filecount=4,filesize=8k`): the pauses of every
/// file are read, oldest first, naming the files on standard error; `--single` reads only the
/// file given.
#[test]
#[cfg_attr(
    no_java,
    ignore = "needs a JDK (java with javac on PATH) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_rotated_set_is_read_as_one_log() {
    let dir = scratch("diagnose-rotated");
    let current = jdk_log(
        &find_java(),
        &dir,
        "gc.log",
        &["-XX:+UseSerialGC"],
        "-Xlog:gc*:file={log}::filecount=4,filesize=8k",
    );
    let mut expected = pause_messages(&current);
    let mut rotated = 0;
    for n in 0..4 {
        if let Ok(older) = fs::read_to_string(dir.join(format!("gc.log.{n}"))) {
            expected += pause_messages(&older);
            rotated += 1;
        }
    }
    assert!(rotated > 0, "the JVM rotated no file");
    let log = dir.join("gc.log");
    let out = concord(&["diagnose", log.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("reading the rotated set as one log"));
    assert_eq!(stdout_json(&out)["pauses"].as_u64(), Some(expected as u64));
    let single = concord(&["diagnose", log.to_str().unwrap(), "--json", "--single"]);
    let only = pause_messages(&current);
    if only == 0 {
        assert_eq!(single.status.code(), Some(2));
    } else {
        assert_eq!(stdout_json(&single)["pauses"].as_u64(), Some(only as u64));
    }
}

/// The two OS stalls made in real JDK 17 logs by `bench/diagnose/os_stalls.sh` (see the
/// fixtures' README): every CPU taken by a real-time loop for 200 ms, five times; and the log
/// written into a pipe drained at 20 KB/s. Each stall is named, with its line, and is about
/// as long as what caused it.
#[test]
fn os_stalls_made_in_real_hotspot_logs_are_named() {
    let no_cpu = diagnose_json(&fixture("os-stalls/no-cpu.log.gz"), &[]);
    assert_eq!(no_cpu["pauses"], 1212);
    assert_eq!(no_cpu["stalled_count"], 4);
    let stalled = no_cpu["stalled"].as_array().unwrap();
    let causes: Vec<&str> = stalled
        .iter()
        .map(|s| s["causes"][0].as_str().unwrap())
        .collect();
    assert_eq!(
        causes,
        ["off-cpu", "off-cpu", "outside-collection", "off-cpu"]
    );
    // At most one stall per 200 ms burst, none longer than a burst and its surroundings.
    for s in stalled {
        let real = s["real_ms"].as_f64().unwrap();
        assert!(real < 400.0, "{s}");
    }
    assert_eq!(stalled[0]["line"], "no-cpu.log.gz:3663");
    let findings: Vec<(&str, u64)> = no_cpu["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["kind"].as_str().unwrap(), f["count"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        findings,
        [
            ("off-cpu", 3),
            ("outside-collection", 1),
            ("heap-too-small", 4)
        ]
    );

    let blocked = diagnose_json(&fixture("os-stalls/blocked-write.log.gz"), &[]);
    assert_eq!(blocked["pauses"], 190);
    assert_eq!(blocked["stalled_count"], 23);
    assert_eq!(blocked["unrecognized_lines"], 0);
    let advice = blocked["advice"].to_string();
    assert!(advice.contains("-Xlog:async"), "{advice}");
}

/// A 2 GB file of zeros (sparse, so the test writes nothing to disk) is read through, in
/// bounded memory, and refused as binary with status 2.
#[test]
fn a_2_gb_binary_file_is_read_through_and_refused() {
    let dir = scratch("diagnose-2gb");
    let path = dir.join("zeros.log");
    fs::File::create(&path)
        .and_then(|f| f.set_len(2 << 30))
        .unwrap();
    let out = concord(&["diagnose", path.to_str().unwrap()]);
    let _ = fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("holds binary data, not text"),
        "{}",
        text(&out.stderr)
    );
}

/// `--html` writes the page beside the text output: self-contained, with the timeline, the
/// heap, the histogram and the findings of the log (the blocked-write stalls).
#[test]
fn html_page_is_written_with_the_findings_of_the_log() {
    let dir = scratch("diagnose-html");
    let page = dir.join("stalls.html");
    let out = concord(&[
        "diagnose",
        &fixture("os-stalls/blocked-write.log.gz"),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("23 OS stall(s)"));
    let html = fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    for part in [
        "Pause timeline",
        "Heap occupancy",
        "Pause histogram",
        "off-cpu",
        "outside-collection",
        "blocked-write.log.gz:854",
    ] {
        assert!(html.contains(part), "{part}");
    }
    // Bad --html values are refused before the log is read, and nothing is written.
    let missing_dir = dir.join("no/such/dir/page.html");
    let refused = concord(&[
        "diagnose",
        &fixture("os-stalls/blocked-write.log.gz"),
        "--html",
        missing_dir.to_str().unwrap(),
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stdout).is_empty());
}

/// The page of a real log (the blocked-write stalls: timeline, heap, histogram, findings) in
/// headless Chromium: a screenshot that is not blank. Ignored, with the reason, where the build
/// found no Chromium (cfg `no_chromium`, see build.rs); `.ci/run` installs it.
#[test]
#[cfg_attr(
    no_chromium,
    ignore = "needs headless Chromium (chromium or chromium-browser on PATH) when the tests were built: apt-get install chromium (.ci/run does)"
)]
fn html_page_renders_in_headless_chromium() {
    let dir = scratch("diagnose-html-browser");
    let page = dir.join("stalls.html");
    let out = concord(&[
        "diagnose",
        &fixture("os-stalls/blocked-write.log.gz"),
        "--html",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    common::assert_renders(&page, &dir.join("profile"), 3000);
}
