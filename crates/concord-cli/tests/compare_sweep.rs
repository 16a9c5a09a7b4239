//! `concord compare` and `concord sweep` end to end: JSON on stdout, the results directory
//! (experiment.json, summaries, records), bad input refused before any run, and Ctrl-C.

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{
    argv, check_results, command, concord, json_into, read_json, run_into, scratch, small,
    stdout_json, text,
};
use serde_json::Value;

#[test]
fn compare_prints_json_and_writes_every_run() {
    let base = scratch("compare");
    // An existing empty directory is fine.
    let out = base.join("out");
    std::fs::create_dir(&out).unwrap();
    // Depth 10 with a small young generation, so that every run collects a few times.
    let result = concord(&small(
        "compare",
        "10",
        &[
            "--young",
            "1m",
            "--preset",
            "vanilla,optimized",
            "--repeat",
            "2",
            "--gc-threads",
            "2",
            "--verify",
            "--json",
            "--out",
            out.to_str().unwrap(),
        ],
    ));
    let v = stdout_json(&result);
    assert_eq!(v["kind"], "compare");
    assert_eq!(v["complete"], true);
    assert_eq!(v["failed_runs"], 0);
    let configs = v["configurations"].as_array().unwrap();
    let labels = common::labels(&v["configurations"]);
    assert_eq!(labels, argv("vanilla optimized"));
    for c in configs {
        assert_eq!(c["runs"].as_array().unwrap().len(), 2);
        assert!(c["median"]["wall_ms"].as_f64().unwrap() > 0.0);
        assert!(c["ratios"]["gc_ms"].is_number());
        assert!(c["settings"]
            .as_array()
            .unwrap()
            .contains(&"gc-threads=2".into()));
        // The workload's own result lines, per run.
        let details = c["details"].as_array().unwrap();
        assert_eq!(details.len(), 2);
        assert!(!details[0].as_object().unwrap().is_empty());
    }
    assert_eq!(configs[0]["ratios"]["wall_ms"], 1.0);
    let stderr = text(&result.stderr);
    assert!(
        stderr.contains("[1/4] vanilla (round 1/2): wall"),
        "{stderr}"
    );
    assert!(stderr.contains("see: concord report"), "{stderr}");

    let e = check_results(&out, "compare", 4);
    for run in e["runs"].as_array().unwrap() {
        assert_eq!(
            read_json(&out.join(run["summary"].as_str().unwrap()))["workload"],
            "binary-trees"
        );
    }
    assert_eq!(e["vary"], Value::Null);
    assert_eq!(e["runs"][1]["summary"], "runs/002-optimized.summary.json");
    assert_eq!(e["runs"][2]["round"], 1);
    let summary = read_json(&out.join("runs/001-vanilla.summary.json"));
    assert_eq!(summary["preset"], "vanilla");
    assert!(summary["gc_count"].as_u64().unwrap() > 0);
    assert_eq!(summary["verified"], true);
    let records = std::fs::read_to_string(out.join("runs/001-vanilla.records.jsonl")).unwrap();
    assert!(records.lines().count() > 0);

    // The same directory again: refused before anything runs, and left as it was.
    let again = concord(&[
        "compare",
        "binary-trees",
        "8",
        "--preset",
        "vanilla",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    let stderr = text(&again.stderr);
    assert!(
        stderr.contains("already exists and is not empty"),
        "{stderr}"
    );
    check_results(&out, "compare", 4);
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn sweep_prints_json_per_value_and_preset() {
    let (v, out) = json_into("sweep",
        &argv("sweep binary-trees 8 --heap 8m --vary gc-threads=1,2 --preset vanilla,optimized --repeat 1 --json"));
    assert_eq!(v["kind"], "sweep");
    assert_eq!(v["vary"]["key"], "gc-threads");
    let configs = v["configurations"].as_array().unwrap();
    let labels = common::labels(&v["configurations"]);
    assert_eq!(labels, argv("vanilla@gc-threads=1 optimized@gc-threads=1 vanilla@gc-threads=2 optimized@gc-threads=2"));
    assert_eq!(configs[2]["value"], "2");
    assert_eq!(configs[2]["preset"], "vanilla");
    assert_eq!(configs[2]["scaling"]["relative_to"], "gc-threads=1");
    assert!(configs[3]["scaling"]["gc_ratio"].is_number());

    let e = check_results(&out, "sweep", 4);
    assert_eq!(e["vary"]["values"], serde_json::json!(["1", "2"]));
    let run = &e["runs"][2];
    assert_eq!(run["configuration"], "vanilla@gc-threads=2");
    assert_eq!(run["value"], "2");
    assert_eq!(run["summary"], "runs/003-vanilla_gc-threads-2.summary.json");
    let summary = read_json(&out.join(run["summary"].as_str().unwrap()));
    assert_eq!(summary["gc_threads"], 2);
}

#[test]
fn sweep_of_mutators_prints_a_table_per_value_and_the_scaling() {
    let (result, out) = run_into(
        "sweep-table",
        &argv("sweep binary-trees 8 --heap 8m --vary mutators=1,2 --repeat 1"),
    );
    let stdout = text(&result.stdout);
    assert!(result.status.success(), "{stdout}{}", text(&result.stderr));
    for expected in [
        "-- mutators=1",
        "-- mutators=2",
        "optimized@mutators=2",
        "scaling: each preset relative to mutators=1",
        "results written to",
    ] {
        assert!(stdout.contains(expected), "{expected}: {stdout}");
    }
    // Not a terminal: one plain line per run on stderr.
    let stderr = text(&result.stderr);
    assert_eq!(stderr.lines().filter(|l| l.starts_with('[')).count(), 2);
    let e = check_results(&out, "sweep", 2);
    assert!(e["configurations"][1]["settings"]
        .as_array()
        .unwrap()
        .contains(&"mutators=2".into()));
}

#[test]
fn bad_input_exits_2_naming_the_allowed_values_before_any_run() {
    let base = scratch("bad");
    let out = base.join("out");
    let o = out.to_str().unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &argv("sweep binary-trees 8 --vary threads=1,2"),
            "unknown key 'threads' (allowed: gc-threads, mutators, heap",
        ),
        (
            &argv("sweep binary-trees 8 --vary gc-threads"),
            "allowed keys: gc-threads, mutators, heap",
        ),
        (
            &argv("sweep binary-trees 8 --vary gc-threads="),
            "--vary gc-threads: no values",
        ),
        (
            &argv("sweep binary-trees 8 --vary gc-threads=2,0"),
            "'0' is not a GC thread count (allowed: 1..=256 or dynamic)",
        ),
        (
            &argv("sweep binary-trees 8 --vary mutators=0"),
            "(allowed: 1..=256)",
        ),
        (
            &argv("sweep binary-trees 8 --vary heap=12q"),
            "'12q' is not a size",
        ),
        (
            &argv("sweep binary-trees 8 --vary heap=8m,16m --heap 8m"),
            "--heap cannot be combined with --vary heap",
        ),
        (
            &argv("sweep binary-trees 8 --vary gc-threads=1 --preset fast"),
            "unknown preset 'fast' (allowed: vanilla, modern, suo18, naps, optimized)",
        ),
        (
            &argv("compare binary-trees 8 --preset vanilla,fastest"),
            "unknown preset 'fastest' (allowed: vanilla, modern, suo18, naps, optimized)",
        ),
        (
            &argv("compare nosuch --preset vanilla"),
            "unknown workload 'nosuch' (allowed: gcbench, binary-trees",
        ),
        (
            &argv("compare binary-trees 8 --preset vanilla,optimized --steal random"),
            "'random' is not a steal policy (allowed: best-of-2, last-victim, adaptive)",
        ),
    ];
    for (args, expected) in cases {
        let mut argv = args.to_vec();
        argv.extend(["--out", o]);
        let result = concord(&argv);
        let stderr = text(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} created the results directory");
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn ctrl_c_stops_after_the_current_run_and_leaves_a_consistent_directory() {
    let base = scratch("ctrl-c");
    let out = base.join("out");
    let mut args = argv("sweep binary-trees 8 --heap 8m --vary gc-threads=1,2 --repeat 1000");
    args.extend(["--out", out.to_str().unwrap()]);
    let child = command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first run in experiment.json: the handler is installed by then.
    let start = Instant::now();
    loop {
        let runs = std::fs::read(out.join("experiment.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .map_or(0, |e| e["runs"].as_array().map_or(0, Vec::len));
        if runs > 0 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no run finished");
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let result = child.wait_with_output().unwrap();
    let stdout = text(&result.stdout);
    assert_eq!(
        result.status.code(),
        Some(130),
        "{stdout}{}",
        text(&result.stderr)
    );
    assert!(stdout.contains("interrupted after"), "{stdout}");
    assert!(stdout.contains("-- gc-threads=1"), "{stdout}");
    let e = read_json(&out.join("experiment.json"));
    assert_eq!(e["interrupted"], true);
    assert_eq!(e["complete"], false);
    let runs = e["runs"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.len() < 2000);
    for run in runs {
        assert!(out.join(run["summary"].as_str().unwrap()).is_file());
        assert!(out.join(run["records"].as_str().unwrap()).is_file());
    }
    std::fs::remove_dir_all(&base).unwrap();
}
