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
    assert_eq!(labels, argv("vanilla +lockfree-queue +task-affinity +adaptive-steal +live-termination +futex-parking +gc-affinity modern optimized"));
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
    let e = check_results(&out, "ablation", 18);
    assert_eq!(e["parameters"]["pin_start"], true);
    assert_eq!(e["configurations"][3]["name"], "+adaptive-steal");
    let page = std::fs::read_to_string(out.join("report.html")).expect("the report was written");
    assert!(page.contains("id=\"each-fix\"") && page.contains("id=\"steals-per-collection\""));
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
        "busy:K with K in 1..=1024",
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
