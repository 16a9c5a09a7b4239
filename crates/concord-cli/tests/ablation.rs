//! `concord ablation` end to end: every configuration runs, verifies and reports JSON; the
//! results directory holds every run and its report draws 000 Fig. 10.

mod common;

use common::{argv, assert_exit_2, check_results, json_into, run_into};

#[test]
fn ablation_runs_every_configuration_writes_its_directory_and_prints_json() {
    let (v, out) = json_into(
        "ablation-all",
        &argv("ablation binary-trees 10 --heap 8m --repeat 2 --gc-threads 3 --verify --json"),
    );
    assert_eq!(v["gc_threads"], 3);
    assert_eq!(v["kind"], "ablation");
    assert_eq!(v["complete"], true);
    let configs = v["configurations"].as_array().unwrap();
    let labels = common::labels(&v["configurations"]);
    assert_eq!(labels, argv("vanilla +affinity +steal together +task-affinity +gc-affinity +adaptive-steal +live-termination +concord-backoff +lockfree-queue +futex-parking modern naps optimized"));
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
    let e = check_results(&out, "ablation", 28);
    assert_eq!(e["parameters"]["pin_start"], true);
    assert_eq!(e["configurations"][6]["name"], "+adaptive-steal");
    check_recorded_switches(&out, &e);
    let page = std::fs::read_to_string(out.join("report.html")).expect("the report was written");
    assert!(page.contains("id=\"each-fix\"") && page.contains("id=\"steals-per-collection\""));
}

/// The switches each run recorded in its summary: every arm built on vanilla differs from the
/// vanilla runs in exactly the switches its label names, and the presets record their own.
fn check_recorded_switches(out: &std::path::Path, e: &serde_json::Value) {
    const SWITCHES: [&str; 9] = [
        "task_queue",
        "task_affinity",
        "steal",
        "termination",
        "termination_backoff",
        "parking",
        "pin_start",
        "gc_affinity",
        "mutator_sched",
    ];
    let recorded = |label: &str| -> Vec<(&'static str, String)> {
        let run = e["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["configuration"] == label)
            .unwrap_or_else(|| panic!("no run of {label}"));
        let s = common::read_json(&out.join(run["summary"].as_str().unwrap()));
        assert_eq!(s["verified"], true, "{label}");
        SWITCHES
            .iter()
            .map(|&k| {
                (
                    k,
                    s[k].as_str()
                        .unwrap_or_else(|| panic!("{label}: {k}"))
                        .into(),
                )
            })
            .collect()
    };
    let vanilla = recorded("vanilla");
    let differing = |label: &str| -> Vec<String> {
        recorded(label)
            .iter()
            .zip(&vanilla)
            .filter(|(a, b)| a != b)
            .map(|(a, _)| format!("{}={}", a.0, a.1))
            .collect()
    };
    let expected: &[(&str, &[&str])] = &[
        ("+affinity", &["task_affinity=on", "gc_affinity=dynamic"]),
        ("+steal", &["steal=adaptive", "termination=live"]),
        (
            "together",
            &[
                "task_affinity=on",
                "steal=adaptive",
                "termination=live",
                "gc_affinity=dynamic",
            ],
        ),
        ("+task-affinity", &["task_affinity=on"]),
        ("+gc-affinity", &["gc_affinity=dynamic"]),
        ("+adaptive-steal", &["steal=adaptive"]),
        ("+live-termination", &["termination=live"]),
        ("+concord-backoff", &["termination_backoff=concord"]),
        ("+lockfree-queue", &["task_queue=lockfree"]),
        ("+futex-parking", &["parking=futex"]),
    ];
    for (label, keys) in expected {
        assert_eq!(differing(label), *keys, "{label}");
    }
    assert_eq!(
        vanilla.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(),
        argv("task_queue=monitor task_affinity=off steal=best-of-2 termination=fixed termination_backoff=hotspot8 parking=monitor pin_start=on gc_affinity=none mutator_sched=cfs")
    );
    // 000 Fig. 10's 'together' is the suo18 preset's system; naps keeps the 2·N threshold and
    // HotSpot 8's loop.
    let naps: Vec<String> = recorded("naps")
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    assert_eq!(naps, argv("task_queue=lockfree task_affinity=off steal=best-of-2 termination=fixed termination_backoff=hotspot8 parking=futex pin_start=on gc_affinity=none mutator_sched=cfs"));
}

#[test]
fn ablation_with_busy_loop_interference_prints_its_table() {
    let (o, out) = run_into(
        "ablation-busy",
        &argv("ablation binary-trees 10 --heap 8m --repeat 1 --only vanilla,+gc-affinity --interfere busy:1 --no-report"),
    );
    let stdout = common::text(&o.stdout);
    assert!(o.status.success(), "{stdout}{}", common::text(&o.stderr));
    // The README's columns, then the legend and where the results are.
    assert!(
        stdout.contains(
            "configuration          GC ms       (min-max)   ratio  p50 ms  p99 ms  max ms    \
         steals  fail%   imbal.  CPUs  wall ms"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("busy:1 (1 busy-loop thread during every run)"),
        "{stdout}"
    );
    assert!(stdout.contains("results written to"), "{stdout}");
    assert!(!out.join("report.html").exists(), "--no-report");
    let e = check_results(&out, "ablation", 2);
    for c in e["configurations"].as_array().unwrap() {
        assert_eq!(c["interference"], "busy:1", "{c}");
    }
    assert!(e["configurations"][1]["settings"]
        .as_array()
        .unwrap()
        .contains(&serde_json::json!("gc-affinity=dynamic")));
    let summary = common::read_json(&out.join(e["runs"][0]["summary"].as_str().unwrap()));
    assert_eq!(
        summary["interference"],
        "busy:1 (1 busy-loop thread in this process)"
    );
    assert_exit_2(
        &["ablation", "--interfere", "busy:x"],
        "busy:K or busy:K@CPU with K in 1..=1024",
    );
}

#[test]
fn bad_input_names_the_allowed_values() {
    assert_exit_2(
        &["ablation", "--only", "vanilla,fast"],
        "unknown configuration 'fast'",
    );
    assert_exit_2(&["ablation", "--only", "fast"], "+adaptive-steal");
    assert_exit_2(&["ablation", "nosuch"], "unknown workload 'nosuch'");
    assert_exit_2(
        &["ablation", "--parking", "futex"],
        "--parking cannot be used with ablation",
    );
    assert_exit_2(
        &["ablation", "--heap", "12q"],
        "--heap: '12q' is not a size",
    );
}
