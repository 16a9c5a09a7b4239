//! `concord vs-native` end to end: Concord and the plain-Rust version alternate, every run's
//! checksum is the expected one, the readable and JSON outputs have their shape, a failed run
//! exits 1 and bad input exits 2 with a message naming what is allowed. No timing assertions.

mod common;

use common::{concord, json_of, text};
use concord_workloads::binary_trees::expected_checksum;
use concord_workloads::gcbench::STANDARD_CHECKSUM_PER_COPY;
use serde_json::Value;

/// The checksums of every run on `side` ("concord" or "native").
fn checksums(json: &Value, side: &str) -> Vec<u64> {
    json[side]
        .as_array()
        .unwrap_or_else(|| panic!("no {side} runs: {json}"))
        .iter()
        .map(|r| r["checksum"].as_u64().expect("a checksum"))
        .collect()
}

#[test]
fn binary_trees_json_has_every_run_and_the_medians() {
    let json = json_of(&[
        "vs-native",
        "binary-trees",
        "10",
        "--repeat",
        "2",
        "--heap",
        "8m",
        "--json",
    ]);
    assert_eq!(json["workload"], "binary-trees");
    assert_eq!(json["size"], 10);
    assert_eq!(json["heap_size"], 8 << 20);
    assert_eq!(json["gc_threads"], 2);
    assert_eq!(json["preset"], "optimized");
    assert_eq!(json["native_process"], "child");
    let want = expected_checksum(10);
    assert_eq!(checksums(&json, "concord"), [want, want]);
    assert_eq!(checksums(&json, "native"), [want, want]);
    for run in json["native"].as_array().unwrap() {
        assert_eq!(run["pause_total_ms"], 0.0);
        assert_eq!(run["young"], 0);
        assert!(run["wall_ms"].as_f64().unwrap() > 0.0, "{run}");
    }
    let wall = &json["medians"]["wall_ms"];
    let (c, n) = (
        wall["concord"].as_f64().unwrap(),
        wall["native"].as_f64().unwrap(),
    );
    assert!(c > 0.0 && n > 0.0, "{wall}");
    assert!(
        (wall["ratio"].as_f64().unwrap() - c / n).abs() < 1e-9,
        "{wall}"
    );
    let outside = &json["medians"]["wall_outside_pauses_ms"];
    assert!(outside["concord"].as_f64().unwrap() <= c, "{outside}");
    for key in ["pause_total_ms", "pause_max_ms", "collections"] {
        assert!(json["medians"][key].as_f64().is_some(), "{key}: {json}");
    }
}

#[test]
fn binary_trees_readable_output_and_the_in_process_variant() {
    let out = concord(&[
        "vs-native",
        "binary-trees",
        "8",
        "--repeat",
        "2",
        "--native-in-process",
        "--preset",
        "vanilla",
        "--gc-threads",
        "1",
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout
            .starts_with("binary-trees 8, one mutator: Concord (heap 64M, 1 GC threads, vanilla)"),
        "{stdout}"
    );
    assert!(stdout.contains("in this process"), "{stdout}");
    // Two pairs: two lines per side, then the medians.
    let runs = |who: &str| {
        stdout
            .lines()
            .filter(|l| {
                let mut words = l.split_whitespace();
                let run = words.next().and_then(|w| w.parse::<u32>().ok());
                run.is_some() && words.next() == Some(who)
            })
            .count()
    };
    assert_eq!((runs("Concord"), runs("native")), (2, 2), "{stdout}");
    for row in [
        "wall ms ",
        "wall ms outside GC pauses",
        "GC pause total ms",
        "collections",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    assert!(stdout.contains("Concord/native"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "checksums equal the expected {} in every run",
            expected_checksum(8)
        )),
        "{stdout}"
    );
}

#[test]
fn gcbench_once_on_each_side() {
    let json = json_of(&["vs-native", "gcbench", "--repeat", "1", "--json"]);
    assert_eq!(json["workload"], "gcbench");
    assert_eq!(json["size"], Value::Null);
    assert_eq!(json["heap_size"], 64 << 20);
    assert_eq!(checksums(&json, "concord"), [STANDARD_CHECKSUM_PER_COPY]);
    assert_eq!(checksums(&json, "native"), [STANDARD_CHECKSUM_PER_COPY]);
}

#[test]
fn the_child_reports_one_run_as_json() {
    let json = json_of(&["vs-native", "binary-trees", "6", "--native-child"]);
    assert_eq!(json["checksum"], expected_checksum(6));
    assert_eq!(json["expected_checksum"], expected_checksum(6));
    assert!(json["wall_ms"].as_f64().unwrap() >= 0.0, "{json}");
}

#[test]
fn a_concord_run_out_of_memory_is_a_failed_run() {
    let out = concord(&[
        "vs-native",
        "binary-trees",
        "16",
        "--heap",
        "4m",
        "--repeat",
        "1",
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("binary-trees"), "{stderr}");
}

#[test]
fn bad_input_is_named_and_exits_2() {
    let cases: [(&[&str], &str); 10] = [
        (
            &["vs-native", "search"],
            "unknown workload 'search' for vs-native (allowed: gcbench, binary-trees)",
        ),
        (
            &["vs-native", "binary-trees", "3"],
            "binary-trees depth (size) 3 is out of range (allowed: 4..=30)",
        ),
        (&["vs-native", "binary-trees", "31"], "(allowed: 4..=30)"),
        (
            &["vs-native", "gcbench", "5"],
            "gcbench has no size parameter",
        ),
        (
            &["vs-native", "--repeat", "0"],
            "--repeat: '0' is out of range (allowed: 1..=1000)",
        ),
        (
            &["vs-native", "--gc-threads", "0"],
            "--gc-threads: '0' is out of range (allowed: 1..=256)",
        ),
        (
            &["vs-native", "--preset", "fast"],
            "--preset: 'fast' is not a preset (allowed: vanilla, modern, suo18, naps, optimized)",
        ),
        (
            &["vs-native", "--heap", "lots"],
            "--heap: 'lots' is not a size",
        ),
        (
            &["vs-native", "--heap", "-1"],
            "--heap: '-1' is not a size (sizes cannot be negative)",
        ),
        (
            &["vs-native", "--heap", "1k"],
            "--heap: '1k' is out of range (allowed: 4M..=1024G)",
        ),
    ];
    for (args, message) in cases {
        let out = concord(args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} ran: {}", text(&out.stdout));
    }
}
