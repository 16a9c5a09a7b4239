//! Simulated arms end to end: `compare`, `sweep`, `ablation` and `os-bench` with
//! `--sim-cpus N` (or `--sim-machine NAME`) record each configuration's collections here and
//! simulate them, into the same results directory, tables and JSON as measured runs, saying
//! everywhere that the figures are simulated; every round its own seed; interference as busy
//! loops on the simulated machine; bad machine flags exit 2 before anything runs; `concord
//! report` draws the directory; `concord paper ID` passes the flags to its entry's command;
//! `--numa-arms` simulates each layout.

mod common;

use common::{assert_exit_2, check_results, command, concord, read_json, run_into, text};
use serde_json::Value;

/// `concord CMD binary-trees 12 --heap 4m MORE…`: small runs of a few young and full
/// collections.
fn small<'a>(cmd: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [cmd, "binary-trees", "12", "--heap", "4m"]
        .into_iter()
        .chain(more.iter().copied())
        .collect()
}

/// The summaries of every run of the results directory `dir`, in run order.
fn summaries(dir: &std::path::Path) -> Vec<Value> {
    let e = read_json(&dir.join("experiment.json"));
    e["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| read_json(&dir.join(r["summary"].as_str().unwrap())))
        .collect()
}

#[test]
fn compare_simulated_writes_runs_with_sim_and_says_so_in_the_table_the_json_and_the_report() {
    let (o, dir) = run_into(
        "sim-compare",
        &small(
            "compare",
            &[
                "--preset",
                "vanilla,optimized",
                "--sim-cpus",
                "4",
                "--repeat",
                "2",
                "--seed",
                "5",
                "--no-report",
            ],
        ),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        stdout.contains(
            "simulated on 4cpu-1node-smt-off (4 CPUs, SMT off, 1 node), cfs scheduler, \
             built-in costs, seed 5 + round: the figures are the simulator's, not measurements"
        ),
        "{stdout}"
    );
    let e = check_results(&dir, "compare", 4);
    assert!(
        e["parameters"]["simulated"]
            .as_str()
            .unwrap()
            .starts_with("simulated on 4cpu-1node-smt-off"),
        "{}",
        e["parameters"]
    );
    for c in e["configurations"].as_array().unwrap() {
        let sim = &c["sim"];
        assert_eq!(
            (
                sim["machine"].as_str(),
                sim["cpus"].as_u64(),
                sim["sched"].as_str()
            ),
            (Some("4cpu-1node-smt-off"), Some(4), Some("cfs")),
            "{c}"
        );
        assert_eq!(
            (sim["seed"].as_u64(), sim["smt"].as_bool()),
            (Some(5), Some(false))
        );
        // GC threads left to the preset: HotSpot's default for 4 CPUs, recorded.
        assert!(
            c["settings"]
                .as_array()
                .unwrap()
                .contains(&Value::from("gc-threads=4")),
            "{c}"
        );
    }
    let seeds: Vec<u64> = summaries(&dir)
        .iter()
        .map(|s| {
            assert_eq!(s["sim"]["cpus"], 4, "{s}");
            assert_eq!(s["gc_threads"], 4);
            assert!(s["gc_count"].as_u64().unwrap() > 1);
            assert!(s["sim"]["distinct_cpus_p50"].as_f64().unwrap() >= 1.0);
            s["sim"]["seed"].as_u64().unwrap()
        })
        .collect();
    // Round r simulates with seed S + r.
    assert_eq!(seeds, [5, 5, 6, 6]);

    let report = concord(&["report", dir.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        page.contains("simulated on 4cpu-1node-smt-off"),
        "the page says so"
    );
}

#[test]
fn simulated_interference_runs_on_the_simulated_machine_and_json_lists_the_machine() {
    let (o, dir) = run_into(
        "sim-interfere",
        &small(
            "compare",
            &[
                "--preset",
                "optimized",
                "--sim-machine",
                "xeon-2x10",
                "--sched",
                "eevdf",
                "--interfere",
                "busy:2@19",
                "--repeat",
                "1",
                "--json",
                "--no-report",
            ],
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let c = &json["configurations"][0];
    assert_eq!(c["sim"]["machine"], "xeon-2x10");
    assert_eq!(c["sim"]["sched"], "eevdf");
    assert_eq!(c["interference"], "busy:2@19");
    assert!(json["simulated"].as_str().unwrap().contains("eevdf"));
    let s = &summaries(&dir)[0];
    // CPU 19 exists only on the simulated machine: the loops ran there, not here.
    assert_eq!(
        s["interference"],
        "busy:2@19 (2 busy-loop threads on CPU 19 on the simulated machine)"
    );
    assert_eq!(
        (s["sim"]["cpus"].as_u64(), s["gc_threads"].as_u64()),
        (Some(20), Some(15))
    );
}

#[test]
fn numa_arms_are_simulated_with_their_layout() {
    let (o, _) = run_into(
        "sim-numa",
        &small(
            "compare",
            &[
                "--preset",
                "optimized",
                "--numa-arms",
                "off,interleaved",
                "--sim-machine",
                "magny-cours-48",
                "--repeat",
                "1",
                "--json",
                "--no-report",
            ],
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json: Value = serde_json::from_slice(&o.stdout).unwrap();
    let configurations = json["configurations"].as_array().unwrap();
    assert_eq!(configurations.len(), 2);
    for c in configurations {
        assert_eq!(c["sim"]["machine"], "magny-cours-48", "{c}");
        assert_eq!(c["sim"]["nodes"], 8);
    }
    // Interleaved pages over 8 simulated nodes: most copies go to another node.
    let remote = configurations[1]["median"]["remote_copy_fraction"]
        .as_f64()
        .unwrap();
    assert!(remote > 0.5, "{remote}");
}

#[test]
fn sweep_ablation_and_os_bench_run_simulated_and_say_so() {
    let (o, dir) = run_into(
        "sim-sweep",
        &small(
            "sweep",
            &[
                "--vary",
                "gc-threads=2,6",
                "--preset",
                "optimized",
                "--sim-cpus",
                "8",
                "--nodes",
                "2",
                "--repeat",
                "1",
                "--no-report",
            ],
        ),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("simulated on 8cpu-2node-smt-off (8 CPUs, SMT off, 2 nodes)"));
    let threads: Vec<u64> = summaries(&dir)
        .iter()
        .map(|s| s["gc_threads"].as_u64().unwrap())
        .collect();
    assert_eq!(threads, [2, 6]);
    check_results(&dir, "sweep", 2);

    let (o, dir) = run_into(
        "sim-ablation",
        &small(
            "ablation",
            &[
                "--only",
                "+adaptive-steal,optimized",
                "--sim-cpus",
                "4",
                "--repeat",
                "1",
                "--no-report",
            ],
        ),
    );
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // Twice the simulated CPUs, not this machine's.
    assert!(
        stdout.contains("concord ablation binary-trees: 8 GC threads"),
        "{stdout}"
    );
    assert!(
        stdout.contains("simulated on 4cpu-1node-smt-off"),
        "{stdout}"
    );
    check_results(&dir, "ablation", 2);

    // os-bench: its busy loops on the simulated machine's CPU 5, which this one lacks.
    let o = command(&small(
        "os-bench",
        &["--sim-cpus", "8", "--busy", "2", "--busy-cpu", "5"],
    ))
    .env("CONCORD_CHECK_ARGS", "1")
    .output()
    .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn bad_simulated_machines_and_flags_without_one_exit_2_before_anything_runs() {
    for (more, expected) in [
        (
            &["--sim-cpus", "0"][..],
            "--sim-cpus `0` is not allowed; allowed: a whole number from 1 to 256",
        ),
        (
            &["--sim-machine", "cray-1"],
            "unknown machine `cray-1`; allowed: xeon-2x10, magny-cours-48",
        ),
        (
            &["--sim-cpus", "6", "--nodes", "4"],
            "--sim-cpus must be a multiple of 4",
        ),
        (
            &["--sim-machine", "xeon-2x10", "--sim-cpus", "4"],
            "give either --sim-machine (with --smt) or --sim-cpus/--nodes, not both",
        ),
        (
            &["--smt", "on"],
            "--smt describes simulated runs: give --sim-cpus N or --sim-machine NAME too",
        ),
        (
            &["--sim-cpus", "4", "--sched", "bfs"],
            "--sched: 'bfs' is not a scheduler model (allowed: cfs, eevdf)",
        ),
        (
            &["--sim-cpus", "4", "--interfere", "busy:1@4"],
            "busy-loop CPU 4 is not a CPU of the simulated machine (allowed: 0..=3)",
        ),
        (
            &["--sim-cpus", "4", "--costs", "/nonexistent/costs.json"],
            "--costs",
        ),
    ] {
        let out = common::scratch("sim-bad").join("out");
        let mut argv = small("compare", more);
        argv.extend(["--out", out.to_str().unwrap()]);
        assert_exit_2(&argv, expected);
        assert!(!out.exists(), "{more:?}: nothing is written");
    }
    assert_exit_2(
        &small("os-bench", &["--sim-cpus", "4", "--busy-cpu", "4"]),
        "busy-loop CPU 4 is not a CPU of the simulated machine (allowed: 0..=3)",
    );
    assert_exit_2(
        &small("ablation", &["--sim-cpus", "3", "--smt", "on"]),
        "--sim-cpus 3 cannot be split into 1 node(s) of 2-thread cores",
    );
}

#[test]
fn paper_passes_the_simulated_machine_to_experiment_entries_and_refuses_the_others() {
    assert_exit_2(
        &["paper", "--sim-cpus", "4"],
        "--sim-cpus needs an entry id",
    );
    assert_exit_2(
        &["paper", "002-table2", "--sim-cpus", "4"],
        "cannot run simulated (allowed: entries of compare, sweep, ablation, os-bench)",
    );
    assert_exit_2(
        &["paper", "000-fig6", "--sim-machine", "vax"],
        "unknown machine `vax`",
    );
    let (o, dir) = run_into(
        "sim-paper",
        &[
            "paper",
            "000-table1",
            "--quick",
            "--sim-cpus",
            "4",
            "--seed",
            "2",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("--sim-cpus 4 --seed 2"), "{stderr}");
    let e = read_json(&dir.join("experiment.json"));
    assert_eq!(e["paper"]["id"], "000-table1");
    assert_eq!(e["configurations"][0]["sim"]["cpus"], 4);
    assert_eq!(summaries(&dir)[0]["sim"]["seed"], 2);
}
