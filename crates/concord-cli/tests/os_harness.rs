//! The OS switches, the interference harness and the OS benchmarks, end to end: bad values are
//! bad input (exit status 2) naming what is allowed; runs with busy loops and co-running
//! instances keep their checksums; `os-bench` and `sched-bench` print well-formed JSON.

use std::process::{Command, Output};

use serde_json::Value;

fn concord(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_concord"))
        .args(args)
        // Keep the caller's CONCORD_* configuration out of the test.
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("run concord")
}

/// Runs `args`, expects success, and parses stdout as JSON.
fn json_of(args: &[&str]) -> Value {
    let out = concord(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{args:?}: status {:?}: {stderr}",
        out.status
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn bad_values_of_the_new_flags_are_bad_input_naming_the_allowed_values() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &["run", "gcbench", "--gc-affinity", "pinned"],
            &["--gc-affinity: 'pinned'", "allowed: none, static, dynamic"],
        ),
        (
            &["run", "gcbench", "--mutator-sched", "rr"],
            &[
                "--mutator-sched: 'rr'",
                "allowed: cfs, fifo, profile:PATH, adaptive or adaptive:SECONDS",
            ],
        ),
        (
            &["run", "gcbench", "--mutator-sched", "adaptive:0"],
            &[
                "--mutator-sched: 'adaptive:0'",
                "allowed: seconds from 0.01 to 3600",
            ],
        ),
        (
            &["run", "gcbench", "--mutator-sched", "profile:"],
            &["--mutator-sched: 'profile:'", "profile:PATH"],
        ),
        (
            &["run", "gcbench", "--fifo-cpu-threshold", "4097"],
            &["--fifo-cpu-threshold: '4097'", "allowed: 0..=4096"],
        ),
        (
            &["run", "gcbench", "--interfere", "spin:2"],
            &["'spin:2'", "allowed: busy:K with K in 1..=1024"],
        ),
        (
            &["run", "gcbench", "--interfere", "busy:0"],
            &["'busy:0'", "allowed: busy:K with K in 1..=1024"],
        ),
        (
            &["run", "gcbench", "--co-run", "65"],
            &["--co-run", "1..=64"],
        ),
        (
            &["run", "gcbench", "--co-run", "0"],
            &["--co-run", "1..=64"],
        ),
        (&["os-bench", "--busy", "0"], &["--busy", "1..=1024"]),
        (
            &["sched-bench", "--adaptive-period", "0"],
            &["'adaptive:0'", "allowed: seconds from 0.01 to 3600"],
        ),
    ];
    for (args, expected) in cases {
        let out = concord(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for text in *expected {
            assert!(stderr.contains(text), "{args:?}: {stderr}");
        }
    }
}

#[test]
fn run_with_busy_loops_keeps_the_checksum_and_shows_the_switches() {
    let v = json_of(&[
        "run",
        "binary-trees",
        "10",
        "--heap",
        "8m",
        "--interfere",
        "busy:2",
        "--gc-affinity",
        "static",
        "--mutator-sched",
        "cfs",
        "--json",
    ]);
    assert_eq!(v["checksum_ok"], true, "{v}");
    assert!(v["interference"].as_str().unwrap().starts_with("busy:2"));
    assert_eq!(v["gc_affinity"], "static");
    assert_eq!(v["mutator_sched"], "cfs");

    let out = concord(&[
        "run",
        "binary-trees",
        "10",
        "--heap",
        "8m",
        "--preset",
        "vanilla",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gc-affinity none, mutator-sched cfs"),
        "{text}"
    );
}

#[test]
fn co_run_reports_every_instance_and_the_aggregate() {
    let v = json_of(&[
        "run",
        "binary-trees",
        "10",
        "--heap",
        "8m",
        "--co-run",
        "2",
        "--interfere",
        "busy:1",
        "--json",
    ]);
    assert_eq!(v["co_run"], 2);
    let instances = v["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 2);
    let mut gc_sum = 0.0;
    let mut wall_max: f64 = 0.0;
    for (i, instance) in instances.iter().enumerate() {
        assert_eq!(instance["instance"], i + 1);
        assert_eq!(instance["checksum_ok"], true, "{instance}");
        gc_sum += instance["gc_pause_total_ms"].as_f64().unwrap();
        wall_max = wall_max.max(instance["wall_ms"].as_f64().unwrap());
    }
    assert_eq!(v["checksum_ok"], true);
    assert!((v["gc_pause_total_ms"].as_f64().unwrap() - gc_sum).abs() < 1e-9);
    assert_eq!(v["wall_ms"].as_f64().unwrap(), wall_max);

    let out = concord(&["run", "binary-trees", "10", "--heap", "8m", "--co-run", "2"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("instance 1 ") && text.contains("instance 2 "),
        "{text}"
    );
    assert!(text.contains("aggregate"), "{text}");
}

#[test]
fn os_bench_prints_json() {
    let v = json_of(&[
        "os-bench",
        "binary-trees",
        "10",
        "--heap",
        "8m",
        "--repeat",
        "1",
        "--busy",
        "1",
        "--json",
    ]);
    assert_eq!(v["busy"], 1);
    let configs = v["configurations"].as_array().unwrap();
    let labels: Vec<(&str, Option<&str>)> = configs
        .iter()
        .map(|c| (c["label"].as_str().unwrap(), c["interference"].as_str()))
        .collect();
    let variants = [
        "vanilla",
        "optimized/none",
        "optimized/static",
        "optimized/dynamic",
    ];
    let expected: Vec<(&str, Option<&str>)> = [None, Some("busy:1")]
        .into_iter()
        .flat_map(|load| variants.iter().map(move |l| (*l, load)))
        .collect();
    assert_eq!(labels, expected);
    for c in configs {
        assert_eq!(c["runs"].as_array().unwrap().len(), 1, "{c}");
        assert!(c["median"]["gc_ms"].as_f64().unwrap() > 0.0, "{c}");
    }
    // Ratios are relative to vanilla under the same interference.
    assert_eq!(configs[0]["gc_ratio"], 1.0);
    assert_eq!(configs[4]["gc_ratio"], 1.0);
}

#[test]
fn sched_bench_prints_json() {
    let v = json_of(&[
        "sched-bench",
        "--small",
        "--heap",
        "8m",
        "--repeat",
        "1",
        "--json",
    ]);
    assert_eq!(v["fifo_cpu_threshold"], 0);
    assert!(v["note"].as_str().unwrap().contains("fifo-cpu-threshold"));
    let configs = v["configurations"].as_array().unwrap();
    let got: Vec<(&str, &str)> = configs
        .iter()
        .map(|c| {
            (
                c["workload"].as_str().unwrap(),
                c["label"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("binary-trees", "cfs"),
            ("binary-trees", "fifo"),
            ("binary-trees", "adaptive"),
            ("gcbench", "cfs"),
            ("gcbench", "fifo"),
            ("gcbench", "adaptive"),
        ]
    );
    assert_eq!(configs[0]["mutators"], 4);
    assert_eq!(configs[3]["mutators"], 1);
    for c in configs {
        let settings = c["settings"].as_array().unwrap();
        assert!(
            settings.contains(&serde_json::json!("fifo-cpu-threshold=0")),
            "{c}"
        );
        assert!(c["median"]["wall_ms"].as_f64().unwrap() > 0.0, "{c}");
    }
}
