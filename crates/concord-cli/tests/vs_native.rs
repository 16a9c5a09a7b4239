//! `concord vs-native` end to end: Concord and the plain-Rust versions (rust-box-per-node and,
//! for binary-trees, rust-leaves-inline) alternate, every run's checksum is the expected one,
//! the readable and JSON outputs have their shape, a failed run exits 1 and bad input exits 2
//! with a message naming what is allowed. No timing assertions: the ratios are measured, not
//! checked.

mod common;

use common::{assert_exit_2, concord, json_of, text};
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
    // Both plain-Rust versions ran, each twice, with the same checksum; "native" is the first.
    assert_eq!(json["native_baseline"], "rust-box-per-node");
    assert!(
        json["allocator"].as_str().unwrap().contains("glibc malloc"),
        "{json}"
    );
    let baselines = json["baselines"].as_array().expect("baselines");
    let names: Vec<&str> = baselines
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rust-box-per-node", "rust-leaves-inline"]);
    assert_eq!(baselines[0]["runs"], json["native"]);
    for b in baselines {
        let runs = b["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{b}");
        assert!(runs.iter().all(|r| r["checksum"] == want), "{b}");
        let w = b["wall_ms"].as_f64().unwrap();
        assert!(w > 0.0, "{b}");
        assert!((b["ratio"].as_f64().unwrap() - c / w).abs() < 1e-9, "{b}");
        assert!(b["ratio_outside_pauses"].as_f64().is_some(), "{b}");
        assert!(b["description"].as_str().is_some(), "{b}");
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
    assert_eq!(
        (
            runs("Concord"),
            runs("rust-box-per-node"),
            runs("rust-leaves-inline")
        ),
        (2, 2, 2),
        "{stdout}"
    );
    // The second repeat runs the sides in the reverse order.
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
        [
            "Concord",
            "rust-box-per-node",
            "rust-leaves-inline",
            "rust-leaves-inline",
            "rust-box-per-node",
            "Concord"
        ],
        "{stdout}"
    );
    for row in [
        "median wall ms: Concord ",
        "outside GC pauses",
        "Concord/baseline",
        "glibc malloc",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    // Each baseline's medians line names its allocations: every node, or only the inner ones.
    let line = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(name) && l.ends_with(|c: char| c.is_ascii_digit()))
            .unwrap_or_else(|| panic!("no {name} medians line: {stdout}"))
            .to_string()
    };
    assert!(
        line("rust-box-per-node").ends_with(&format!(" {}", expected_checksum(8))),
        "{stdout}"
    );
    assert!(line("rust-leaves-inline").contains('x'), "{stdout}");
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
    // GCBench has only the box-per-node version.
    let baselines = json["baselines"].as_array().unwrap();
    assert_eq!(baselines.len(), 1, "{json}");
    assert_eq!(baselines[0]["name"], "rust-box-per-node");
}

#[test]
fn the_child_reports_one_run_as_json() {
    let json = json_of(&["vs-native", "binary-trees", "6", "--native-child"]);
    assert_eq!(json["checksum"], expected_checksum(6));
    assert_eq!(json["expected_checksum"], expected_checksum(6));
    assert!(json["wall_ms"].as_f64().unwrap() >= 0.0, "{json}");
    let inline = json_of(&[
        "vs-native",
        "binary-trees",
        "6",
        "--native-child",
        "--native-baseline",
        "rust-leaves-inline",
    ]);
    assert_eq!(inline["checksum"], expected_checksum(6));
    assert_eq!(inline["expected_checksum"], expected_checksum(6));
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
    let cases: [(&[&str], &str); 12] = [
        (
            &[
                "vs-native",
                "gcbench",
                "--native-child",
                "--native-baseline",
                "rust-leaves-inline",
            ],
            "--native-baseline: gcbench has no rust-leaves-inline version",
        ),
        (
            &["vs-native", "--native-baseline", "rust-arena"],
            "invalid value 'rust-arena' for '--native-baseline",
        ),
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
        assert_exit_2(args, message);
    }
}

/// A heap this machine cannot hold is refused before anything is printed (the table's header
/// came first): binary-trees 28's default heap is 96 GiB.
#[test]
fn a_heap_beyond_memory_is_refused_before_the_table() {
    let mem_total_kib: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("MemTotal:")?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse()
                .ok()
        })
        .unwrap();
    // (A machine with more memory would run it, for a long time.)
    if mem_total_kib < 96 << 20 {
        assert_exit_2(
            &["vs-native", "binary-trees", "28"],
            "the heap (96G) is larger than",
        );
    }
    assert_exit_2(
        &["vs-native", "gcbench", "--heap", "1024g", "--json"],
        "the heap (1024G) is larger than",
    );
}
