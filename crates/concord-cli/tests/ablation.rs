//! `concord ablation` end to end: every configuration runs, verifies and reports JSON.

use std::process::Command;

fn concord(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_concord"))
        .args(args)
        .output()
        .expect("the concord binary runs")
}

#[test]
fn ablation_runs_every_configuration_and_prints_json() {
    let out = concord(&[
        "ablation",
        "binary-trees",
        "10",
        "--repeat",
        "2",
        "--gc-threads",
        "3",
        "--heap",
        "8m",
        "--verify",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}: {stderr}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["gc_threads"], 3);
    let configs = v["configurations"].as_array().unwrap();
    let labels: Vec<&str> = configs
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "vanilla",
            "+lockfree-queue",
            "+task-affinity",
            "+adaptive-steal",
            "+live-termination",
            "+futex-parking",
            "+gc-affinity",
            "modern",
            "optimized"
        ]
    );
    for c in configs {
        let runs = c["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2, "{}", c["label"]);
        for r in runs {
            assert!(
                r["gc_ms"].as_f64().unwrap() > 0.0,
                "{}: no GC ran",
                c["label"]
            );
        }
        let m = &c["median"];
        assert!(m["failure_rate"].as_f64().unwrap() <= 1.0);
    }
}

#[test]
fn ablation_with_busy_loop_interference() {
    let out = concord(&[
        "ablation",
        "binary-trees",
        "10",
        "--repeat",
        "1",
        "--heap",
        "8m",
        "--only",
        "vanilla,+gc-affinity",
        "--interfere",
        "busy:1",
        "--json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "status {:?}: {stderr}", out.status);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["interference"], "busy:1");
    let configs = v["configurations"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert_eq!(c["interference"], "busy:1", "{c}");
    }
    assert!(configs[1]["settings"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("gc-affinity=dynamic")));

    let out = concord(&["ablation", "--interfere", "busy:x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("busy:K with K in 1..=1024"));
}

#[test]
fn unknown_configuration_names_the_allowed_ones() {
    let out = concord(&["ablation", "--only", "vanilla,fast"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("unknown configuration 'fast'") && stderr.contains("+adaptive-steal"),
        "{stderr}"
    );
    let out = concord(&["ablation", "nosuch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown workload 'nosuch'"));
}
