//! `concord vs-hotspot` end to end: GCBench and binary-trees on HotSpot Parallel GC and on
//! Concord, both in fresh processes, alternating; every run's checksum is the expected one on
//! both sides, both wall times (inside the program, with start-up) and both sides' pauses are
//! there, the JVM gets the same heap and GC threads, and bad input exits 2 before a JVM starts.
//! No timing assertions: the ratios are measured, not checked. The tests that run a JVM need a
//! JDK (cfg `no_java`, see build.rs).

mod common;

use common::{assert_exit_2, concord, json_of, text};
use concord_workloads::binary_trees::expected_checksum;
use concord_workloads::gcbench::STANDARD_CHECKSUM_PER_COPY;
use serde_json::Value;

/// Every run of `side` in a workload's object, as (inside ms, with start-up ms, checksum).
fn runs(workload: &Value, side: &str) -> Vec<(f64, f64, u64)> {
    workload[side]
        .as_array()
        .unwrap_or_else(|| panic!("no {side} runs: {workload}"))
        .iter()
        .map(|r| {
            for key in ["pause_total_ms", "pause_max_ms", "young", "full"] {
                assert!(r[key].is_number(), "{key}: {r}");
            }
            (
                r["wall_ms"].as_f64().unwrap(),
                r["wall_with_startup_ms"].as_f64().unwrap(),
                r["checksum"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    no_java,
    ignore = "needs a JDK (java with javac on PATH) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn both_workloads_on_both_sides_as_json() {
    let json = json_of(&["vs-hotspot", "--depth", "8", "--repeat", "1", "--json"]);
    assert_eq!(json["gc_threads"], 2);
    assert_eq!(json["repeat"], 1);
    assert!(json["java_version"].as_str().is_some(), "{json}");
    assert!(
        json["pauses_from"].as_str().unwrap().contains("-Xlog:gc"),
        "{json}"
    );
    let workloads = json["workloads"].as_array().expect("workloads");
    let names: Vec<&str> = workloads
        .iter()
        .map(|w| w["workload"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gcbench", "binary-trees"]);
    let want = [STANDARD_CHECKSUM_PER_COPY, expected_checksum(8)];
    for (w, want) in workloads.iter().zip(want) {
        assert_eq!(w["checksum"], want, "{w}");
        for side in ["hotspot", "concord"] {
            let r = runs(w, side);
            assert_eq!(r.len(), 1, "{side}: {w}");
            let (inside, with_startup, checksum) = r[0];
            assert_eq!(checksum, want, "{side}: {w}");
            assert!(
                inside > 0.0 && with_startup >= inside,
                "{side}: {inside} {with_startup}"
            );
        }
        let jvm: Vec<&str> = w["jvm_args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let heap_kb = w["heap_size"].as_u64().unwrap() / 1024;
        for arg in [
            format!("-Xms{heap_kb}k"),
            format!("-Xmx{heap_kb}k"),
            "-XX:+UseParallelGC".to_string(),
            "-XX:ParallelGCThreads=2".to_string(),
        ] {
            assert!(jvm.contains(&arg.as_str()), "{arg}: {jvm:?}");
        }
        for key in [
            "wall ms",
            "wall ms with start-up",
            "start-up and exit ms",
            "wall ms outside GC pauses",
            "GC pause total ms",
            "max pause ms",
            "pause count",
        ] {
            let m = &w["medians"][key];
            assert!(
                m["hotspot"].is_number() && m["concord"].is_number(),
                "{key}: {m}"
            );
        }
    }
    // GCBench keeps the top-level fields it had before binary-trees joined.
    assert_eq!(json["heap_size"], 64 << 20);
    assert_eq!(workloads[0]["heap_size"], 64 << 20);
    assert_eq!(json["hotspot"], workloads[0]["hotspot"]);
    assert_eq!(json["concord"], workloads[0]["concord"]);
    assert_eq!(json["medians"], workloads[0]["medians"]);
    // GCBench at 64m collects on both sides, and HotSpot's pauses come from its log.
    let gcbench_pauses = |side: &str| workloads[0][side][0]["young"].as_u64().unwrap();
    assert!(gcbench_pauses("hotspot") > 0 && gcbench_pauses("concord") > 0);
    // binary-trees' heap is Concord's default for the depth (64 MiB at 8).
    assert_eq!(workloads[1]["heap_size"], 64 << 20);
    assert_eq!(workloads[1]["size"], 8);
}

#[test]
#[cfg_attr(
    no_java,
    ignore = "needs a JDK (java with javac on PATH) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn binary_trees_alone_readable_with_rounds() {
    let out = concord(&[
        "vs-hotspot",
        "--workload",
        "binary-trees",
        "--depth",
        "6",
        "--rounds",
        "2",
        "--repeat",
        "2",
        "--gc-threads",
        "1",
        "--heap",
        "16m",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with("binary-trees 6, 2 rounds, heap 16M, 1 GC threads: HotSpot "),
        "{stdout}"
    );
    assert!(!stdout.contains("GCBench"), "{stdout}");
    for part in [
        "-Xms16384k -Xmx16384k -XX:+UseParallelGC -XX:ParallelGCThreads=1",
        "BinaryTrees 6 2)",
        "inside ms",
        "with start ms",
        "wall ms, inside the program",
        "wall ms, with start-up",
        "start-up and exit ms",
        "GC pause total ms",
        "Concord/HotSpot",
        "GC pauses from HotSpot: its -Xlog:gc log",
    ] {
        assert!(stdout.contains(part), "{part}: {stdout}");
    }
    assert!(
        stdout.contains(&format!(
            "checksums equal the expected {} in every run on both sides",
            2 * expected_checksum(6)
        )),
        "{stdout}"
    );
    // Two pairs, alternating: HotSpot first, then Concord first.
    let order: Vec<&str> = stdout
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            words.next()?.parse::<u32>().ok()?;
            words.next()
        })
        .collect();
    assert_eq!(
        order,
        ["HotSpot", "Concord", "Concord", "HotSpot"],
        "{stdout}"
    );
}

#[test]
fn the_concord_child_reports_one_run_as_json() {
    let json = json_of(&[
        "vs-hotspot",
        "--concord-child",
        "binary-trees",
        "--depth",
        "6",
        "--rounds",
        "3",
        "--heap",
        "8m",
    ]);
    assert_eq!(json["checksum"], 3 * expected_checksum(6));
    assert!(json["wall_ms"].as_f64().unwrap() > 0.0, "{json}");
    for key in ["pause_total_ms", "pause_max_ms", "young", "full"] {
        assert!(json[key].is_number(), "{key}: {json}");
    }
}

#[test]
fn a_concord_run_out_of_memory_is_a_failed_run() {
    let out = concord(&["vs-hotspot", "--concord-child", "gcbench", "--heap", "4m"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("out of memory"), "{stderr}");
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let cases: [(&[&str], &str); 8] = [
        (
            &["vs-hotspot", "--workload", "search"],
            "--workload: 'search' is not a vs-hotspot workload (allowed: gcbench, binary-trees, both)",
        ),
        (
            &["vs-hotspot", "--depth", "3"],
            "--depth: '3' is out of range (allowed: 4..=30)",
        ),
        (
            &["vs-hotspot", "--depth", "31"],
            "--depth: '31' is out of range (allowed: 4..=30)",
        ),
        (
            &["vs-hotspot", "--rounds", "0"],
            "--rounds: '0' is out of range (allowed: 1..=1000)",
        ),
        (
            &["vs-hotspot", "--repeat", "0"],
            "--repeat: '0' is out of range (allowed: 1..=1000)",
        ),
        (
            &["vs-hotspot", "--gc-threads", "0"],
            "--gc-threads: '0' is out of range (allowed: 1..=256)",
        ),
        (
            &["vs-hotspot", "--heap", "1k"],
            "--heap: '1k' is out of range (allowed: 4M..=1024G)",
        ),
        (
            &["vs-hotspot", "--java", "/nonexistent/java-home"],
            "--java /nonexistent/java-home: no such file or directory",
        ),
    ];
    for (args, message) in cases {
        assert_exit_2(args, message);
    }
}
