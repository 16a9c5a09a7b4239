//! `concord sim WORKLOAD` end to end, as far as the command line goes: every bad flag, an
//! unreadable, cut, damaged or empty trace, a bad costs file and an output that would replace
//! the trace exit 2 before anything runs, naming what was wrong and what is allowed; a good
//! command line passes the check; `concord sim calibrate` keeps its own flags.

mod common;

use common::{assert_exit_2, command, concord, scratch, text};

/// A real trace of a small run (young and full collections), written by `concord run`.
fn recorded_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let trace = dir.join("run.trace");
    let o = concord(&[
        "run",
        "binary-trees",
        "12",
        "--heap",
        "4m",
        "--gc-trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    trace
}

#[test]
fn bad_machine_scheduler_load_and_seed_flags_exit_2_naming_what_is_allowed() {
    for (args, expected) in [
        (
            &["sim", "gcbench"][..],
            "no machine given; use --cpus N (with --smt on|off, --nodes K) or --machine NAME \
             (allowed: xeon-2x10, magny-cours-48)",
        ),
        (&["sim", "--cpus", "0"], "--cpus"),
        (&["sim", "--cpus", "many"], "--cpus `many`"),
        (&["sim", "--cpus", "300"], "allowed: 1 to 256"),
        (&["sim", "--cpus", "10", "--nodes", "4"], "multiple of 4"),
        (
            &["sim", "--machine", "cray-1"],
            "unknown machine `cray-1`; allowed: xeon-2x10, magny-cours-48",
        ),
        (
            &["sim", "--machine", "magny-cours-48", "--smt", "on"],
            "has no SMT",
        ),
        (&["sim", "--cpus", "4", "--smt", "yes"], "allowed: on, off"),
        (
            &["sim", "--cpus", "4", "--sched", "bfs"],
            "--sched: 'bfs' is not a scheduler model (allowed: cfs, eevdf)",
        ),
        (
            &["sim", "--cpus", "4", "--load", "spin:2"],
            "--load: 'spin:2' is not an interference load (allowed: busy:K",
        ),
        (&["sim", "--cpus", "4", "--load", "busy:0"], "K in 1..=1024"),
        (
            &["sim", "--cpus", "4", "--load", "busy:1@4"],
            "--load: CPU 4 is not a CPU of the simulated machine (allowed: 0..=3)",
        ),
        // Busy loops are parsed and checked, and refused while the simulator lacks them.
        (
            &["sim", "--cpus", "4", "--load", "busy:2"],
            "--load: busy loops are not simulated by this build yet",
        ),
        (
            &["sim", "--cpus", "4", "--seed", "-1"],
            "--seed: '-1': invalid digit",
        ),
        (
            &["sim", "--cpus", "4", "--interfere", "busy:1"],
            "--interfere cannot be used with concord sim",
        ),
        (
            &["sim", "--cpus", "4", "--preset", "fastest"],
            "--preset: 'fastest'",
        ),
        (
            &["sim", "nosuchload", "--cpus", "4"],
            "unknown workload 'nosuchload' (allowed: gcbench, binary-trees, search, transform, \
             render, database, kmeans, kv-service, queue-churn); or a subcommand of concord sim \
             (allowed: calibrate)",
        ),
    ] {
        assert_exit_2(args, expected);
    }
}

#[test]
fn an_unreadable_cut_damaged_or_empty_trace_exits_2() {
    let dir = scratch("sim-workload-traces");
    let trace = recorded_trace(&dir);
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let damaged = dir.join("damaged.trace");
    let mut d = bytes.clone();
    d[0] = b'X';
    std::fs::write(&damaged, &d).unwrap();
    let empty = dir.join("empty.trace");
    std::fs::write(&empty, b"CGCTRACE\x01\x00").unwrap();
    let missing = dir.join("missing.trace");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    for (file, expected) in [
        (
            path(&missing),
            "cannot open it: No such file or directory".to_string(),
        ),
        (
            path(&cut),
            "the GC trace is truncated after GC(".to_string(),
        ),
        (
            path(&damaged),
            "not a GC trace (no CGCTRACE header)".to_string(),
        ),
        (path(&empty), "it holds no collection".to_string()),
        (
            path(&dir),
            "reading the GC trace failed: Is a directory".to_string(),
        ),
    ] {
        assert_exit_2(
            &["sim", "binary-trees", "12", "--cpus", "4", "--trace", &file],
            &format!("--trace {file}: {expected}"),
        );
    }
    // The records may not replace the trace they come from.
    assert_exit_2(
        &[
            "sim",
            "--cpus",
            "4",
            "--trace",
            &path(&trace),
            "--gc-records",
            &path(&trace),
        ],
        "names the same file as --trace",
    );
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        bytes,
        "the trace is untouched"
    );
    let costs = dir.join("costs.json");
    std::fs::write(&costs, "not json").unwrap();
    assert_exit_2(
        &[
            "sim",
            "--cpus",
            "4",
            "--trace",
            &path(&trace),
            "--costs",
            &path(&costs),
        ],
        "--costs: ",
    );
}

#[test]
fn a_good_command_line_passes_the_check_and_calibrate_keeps_its_flags() {
    let dir = scratch("sim-workload-check");
    let trace = recorded_trace(&dir);
    let records = dir.join("records.jsonl");
    let o = command(&[
        "sim",
        "binary-trees",
        "12",
        "--machine",
        "xeon-2x10",
        "--preset",
        "vanilla",
        "--gc-threads",
        "15",
        "--mutators",
        "16",
        "--sched",
        "eevdf",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
        "--gc-records",
        records.to_str().unwrap(),
        "--json",
    ])
    .env("CONCORD_CHECK_ARGS", "1")
    .output()
    .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("arguments checked (configuration, machine, costs and trace checked)"),
        "{stderr}"
    );
    assert!(!records.exists(), "nothing is written by a check");
    // The workload's flags are not calibrate's.
    let o = concord(&["sim", "calibrate", "--cpus", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unexpected argument '--cpus'"));
}
