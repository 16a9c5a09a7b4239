//! The files `concord run` and the bench commands write, end to end: rejected input touches no
//! existing file, two outputs naming one file are refused, an output that could not be written
//! completely (a device that is full, a file size limit reached mid-run, a profile directory
//! that does not exist) fails the run with a message saying what was lost — also for
//! co-running instances and for the per-run records of `compare` — and `--config` is read
//! once.

mod common;

use std::io::Write as _;
use std::process::{Output, Stdio};

use common::{command, concord, entries, read_json, scratch, small, text, with_file_size_limit};
use serde_json::Value;

/// `concord ARGS` run to the end where files may grow to 16 KiB at most (a few records).
fn concord_with_small_files(args: &[&str]) -> Output {
    with_file_size_limit(command(args), 16 << 10)
        .output()
        .unwrap()
}

/// The stderr of `o`, which must have ended with exit status `status`.
fn stderr_of(o: &Output, status: i32) -> String {
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(status), "{stderr}");
    stderr
}

/// The ids of a records file, every line checked to be a whole JSON object.
fn record_ids(text: &str) -> Vec<u64> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"));
            v["id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn rejected_input_leaves_existing_outputs_as_they_were() {
    let dir = scratch("outputs-rejected");
    let (log, records) = (dir.join("keep.log"), dir.join("keep.jsonl"));
    for (workload, size) in [("binary-trees", "99"), ("gcbench", "12"), ("search", "0")] {
        std::fs::write(&log, "keep log\n").unwrap();
        std::fs::write(&records, "keep records\n").unwrap();
        let o = concord(&[
            "run",
            workload,
            size,
            "--gc-log",
            log.to_str().unwrap(),
            "--gc-records",
            records.to_str().unwrap(),
        ]);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{workload} {size}: {stderr}");
        assert!(
            stderr.contains(&format!("workload {workload}: bad parameter")),
            "{stderr}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), "keep log\n");
        assert_eq!(std::fs::read_to_string(&records).unwrap(), "keep records\n");
        assert_eq!(
            entries(&dir),
            ["keep.jsonl", "keep.log"],
            "nothing else made"
        );
    }
}

#[test]
fn two_outputs_naming_one_file_are_refused() {
    let dir = scratch("outputs-same-file");
    let x = dir.join("x");
    std::os::unix::fs::symlink(&x, dir.join("link")).unwrap();
    let d = dir.to_str().unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![
                "--gc-log".into(),
                format!("{d}/x"),
                "--gc-records".into(),
                format!("{d}/x"),
            ],
            "--gc-records: ",
        ),
        (
            vec![
                "--gc-log".into(),
                format!("{d}/x"),
                "--gc-records".into(),
                format!("{d}/./x"),
            ],
            "--gc-records: ",
        ),
        (
            vec![
                "--gc-log".into(),
                format!("{d}/link"),
                "--gc-records".into(),
                format!("{d}/x"),
            ],
            "--gc-records: ",
        ),
        (
            vec![
                "--gc-records".into(),
                format!("{d}/x"),
                "--mutator-sched".into(),
                format!("profile:{d}/x"),
            ],
            "--mutator-sched: 'profile:",
        ),
    ];
    for (flags, blamed) in cases {
        let mut args = small("run", "8", &[]);
        args.extend(flags.iter().map(String::as_str));
        let o = concord(&args);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {stderr}");
        assert!(stderr.contains(blamed), "{stderr}");
        assert!(
            stderr.contains("names the same file as --gc-")
                && stderr.contains("give each output a file of its own"),
            "{stderr}"
        );
        assert_eq!(entries(&dir), ["link"], "nothing written");
    }
}

#[test]
fn a_device_that_is_full_fails_the_run_and_says_what_was_lost() {
    let o = concord(&small(
        "run",
        "12",
        &["--gc-records", "/dev/full", "--json"],
    ));
    let stderr = stderr_of(&o, 1);
    // The summary still comes; the message names the output, the error and the loss.
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = summary["gc_count"].as_u64().unwrap();
    assert!(n > 0);
    let lost = if n == 1 {
        "the records of GC(0) are lost".to_string()
    } else {
        format!(
            "the records of GC(0)..GC({}) ({n} collections) are lost",
            n - 1
        )
    };
    assert!(
        stderr.contains(&format!(
            "concord: GC records /dev/full: No space left on device (os error 28); {lost}"
        )),
        "{stderr}"
    );
}

#[test]
fn a_file_size_limit_reached_mid_run_keeps_whole_lines_and_fails_the_run() {
    let dir = scratch("outputs-full-disk");
    let records = dir.join("r.jsonl");
    let args = small(
        "run",
        "14",
        &["--gc-records", records.to_str().unwrap(), "--json"],
    );
    let o = concord_with_small_files(&args);
    let stderr = stderr_of(&o, 1);
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = summary["gc_count"].as_u64().unwrap();
    // Whole records up to the one that did not fit, and nothing after them.
    let ids = record_ids(&std::fs::read_to_string(&records).unwrap());
    let k = ids.len() as u64;
    assert!(k > 0 && k < n, "{k} of {n} records written");
    assert_eq!(ids, (0..k).collect::<Vec<_>>());
    assert!(
        stderr.contains("GC records ")
            && stderr.contains("File too large")
            && stderr.contains(&format!(
                "the records of GC({k})..GC({}) ({} collections) are lost",
                n - 1,
                n - k
            )),
        "{stderr}"
    );
    assert_eq!(entries(&dir), ["r.jsonl"], "no temporary file");
}

#[test]
fn a_profile_that_cannot_be_recorded_is_refused_up_front() {
    let o = concord(&small(
        "run",
        "8",
        &["--mutator-sched", "profile:/nonexistent-concord-dir/p"],
    ));
    let stderr = stderr_of(&o, 2);
    assert!(
        stderr.contains(
            "cannot record the mutator scheduling profile /nonexistent-concord-dir/p: its \
             directory takes no new file: No such file or directory"
        ),
        "{stderr}"
    );
}

#[test]
fn co_running_instances_report_failed_writes_and_the_parent_fails() {
    let dir = scratch("outputs-co-run");
    let records = dir.join("r.jsonl");
    let args = small(
        "run",
        "14",
        &["--co-run", "2", "--gc-records", records.to_str().unwrap()],
    );
    let o = concord_with_small_files(&args);
    let stderr = stderr_of(&o, 1);
    for n in 1..=2 {
        assert!(
            stderr.contains(&format!("concord: instance {n} (pid ")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!(
                "GC records {}.{n}: File too large",
                records.display()
            )),
            "{stderr}"
        );
        record_ids(&std::fs::read_to_string(dir.join(format!("r.jsonl.{n}"))).unwrap());
    }
    assert_eq!(
        entries(&dir),
        ["r.jsonl.1", "r.jsonl.2"],
        "no temporary file"
    );
}

#[test]
fn compare_fails_a_run_whose_records_could_not_be_written() {
    let dir = scratch("outputs-compare");
    let out = dir.join("out");
    let mut args = small(
        "compare",
        "14",
        &["--preset", "optimized", "--repeat", "1", "--json"],
    );
    args.extend(["--out", out.to_str().unwrap()]);
    let o = concord_with_small_files(&args);
    let stderr = stderr_of(&o, 1);
    assert!(stderr.contains("1 of 1 runs FAILED"), "{stderr}");
    let e = read_json(&out.join("experiment.json"));
    let run = &e["runs"][0];
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["error"].as_str().unwrap();
    assert!(
        error.contains("GC records ") && error.contains("File too large") && error.contains("lost"),
        "{error}"
    );
    // The records written before the limit are there, whole; no temporary file.
    record_ids(&std::fs::read_to_string(out.join(run["records"].as_str().unwrap())).unwrap());
    assert!(
        entries(&out.join("runs"))
            .iter()
            .all(|n| !n.starts_with('.')),
        "{:?}",
        entries(&out.join("runs"))
    );
}

#[test]
fn the_config_file_is_read_once() {
    // From a pipe, which can be read only once: the heap keys and the harness keys both apply.
    let args = [
        "run",
        "binary-trees",
        "8",
        "--config",
        "/dev/stdin",
        "--json",
    ];
    let mut child = command(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"heap = \"16m\"\ninterfere = \"busy:1\"\n")
        .unwrap();
    drop(stdin);
    let o: Output = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let summary: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(summary["heap_size"], 16 << 20, "{summary}");
    assert_eq!(
        summary["interference"], "busy:1 (1 busy-loop thread in this process)",
        "{summary}"
    );
}

/// No output may replace a file the command reads: the configuration file (`--config` or
/// `CONCORD_CONFIG`), the simulator's costs and trace. Outputs from flags, the configuration
/// file or the environment, the `PATH.N` of co-running instances and the mutator profile are
/// compared with them as files (links and hard links too); each clash is bad input naming
/// both, and nothing is written or created.
#[test]
fn an_output_may_not_replace_an_input() {
    let dir = scratch("outputs-replace-input");
    let config = "heap = \"8m\"\n";
    // A real calibration: `sim` reads it before it builds the configuration.
    let calibrated = dir.join("k.json");
    let o = concord(&[
        "sim",
        "calibrate",
        "--quick",
        "--out",
        calibrated.to_str().unwrap(),
    ]);
    stderr_of(&o, 0);
    let costs = std::fs::read_to_string(&calibrated).unwrap();
    let files: [(&str, String); 6] = [
        ("c.toml", format!("{config}gc-log = \"c.toml\"\n")),
        ("x.toml", config.to_string()),
        ("cr.1", config.to_string()),
        ("k.json", costs),
        ("log-k.toml", format!("{config}gc-log = \"k.json\"\n")),
        ("r.toml", format!("{config}gc-records = \"r.toml\"\n")),
    ];
    for (name, text) in &files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::os::unix::fs::symlink("x.toml", dir.join("link")).unwrap();
    std::fs::hard_link(dir.join("x.toml"), dir.join("hard")).unwrap();
    let before = entries(&dir);
    let run = |rest: &[&str]| -> Vec<String> {
        ["run", "binary-trees", "8"]
            .iter()
            .chain(rest)
            .map(|s| s.to_string())
            .collect()
    };
    let sim = |rest: &[&str]| -> Vec<String> {
        ["sim", "binary-trees", "8", "--cpus", "2"]
            .iter()
            .chain(rest)
            .map(|s| s.to_string())
            .collect()
    };
    let both = |output: &str, path: &str, input: &str, input_path: &str| {
        format!(
            "{output}: '{path}' names the same file as {input} ('{input_path}'), which this \
             command reads: writing the output would replace it (allowed: another file)"
        )
    };
    // The command line, its environment, and the refusal expected.
    type Case<'a> = (Vec<String>, Vec<(&'a str, &'a str)>, String);
    let cases: Vec<Case> = vec![
        (
            run(&["--config", "c.toml"]),
            vec![],
            both("gc-log in c.toml", "c.toml", "--config", "c.toml"),
        ),
        (
            run(&["--config", "x.toml", "--gc-records", "x.toml"]),
            vec![],
            both("--gc-records", "x.toml", "--config", "x.toml"),
        ),
        (
            run(&[]),
            vec![("CONCORD_CONFIG", "x.toml"), ("CONCORD_GC_TRACE", "x.toml")],
            both("CONCORD_GC_TRACE", "x.toml", "CONCORD_CONFIG", "x.toml"),
        ),
        (
            run(&["--config", "cr.1", "--gc-log", "cr", "--co-run", "2"]),
            vec![],
            both(
                "--gc-log of co-running instance 1",
                "cr.1",
                "--config",
                "cr.1",
            ),
        ),
        (
            run(&["--config", "cr.1", "--gc-trace", "cr"]),
            vec![("CONCORD_CO_RUN", "2")],
            both(
                "--gc-trace of co-running instance 1",
                "cr.1",
                "--config",
                "cr.1",
            ),
        ),
        (
            run(&["--config", "x.toml", "--gc-log", "link"]),
            vec![],
            both("--gc-log", "link", "--config", "x.toml"),
        ),
        (
            run(&["--config", "x.toml", "--gc-records", "./hard"]),
            vec![("CONCORD_CONFIG", "other.toml")],
            both("--gc-records", "./hard", "--config", "x.toml"),
        ),
        (
            run(&["--config", "x.toml", "--mutator-sched", "profile:x.toml"]),
            vec![],
            both("--mutator-sched", "profile:x.toml", "--config", "x.toml"),
        ),
        (
            sim(&["--costs", "k.json", "--gc-records", "k.json"]),
            vec![],
            both("--gc-records", "k.json", "--costs", "k.json"),
        ),
        (
            sim(&["--config", "x.toml", "--gc-records", "link"]),
            vec![],
            both("--gc-records", "link", "--config", "x.toml"),
        ),
        (
            sim(&["--config", "r.toml"]),
            vec![],
            both("gc-records in r.toml", "r.toml", "--config", "r.toml"),
        ),
        (
            sim(&["--config", "log-k.toml", "--costs", "k.json"]),
            vec![],
            both("gc-log in log-k.toml", "k.json", "--costs", "k.json"),
        ),
    ];
    for (args, vars, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = command(&args)
            .current_dir(&dir)
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        let stderr = stderr_of(&o, 2);
        assert!(stderr.contains(&expected), "{args:?} {vars:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o.stdout));
        for (name, text) in &files {
            let now = std::fs::read_to_string(dir.join(name)).unwrap();
            assert_eq!(&now, text, "{args:?} {vars:?} changed {name}");
        }
        assert_eq!(entries(&dir), before, "{args:?} {vars:?}: nothing made");
    }
}
