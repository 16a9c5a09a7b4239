//! What the `concord` binary does when its output cannot be written and which exit status it
//! gives: a closed stdout pipe ends quietly with 141 (as `cat` killed by SIGPIPE shows in a
//! shell), a full stdout is an error with status 1, a full stderr never panics; 2 is bad input
//! (rejected before anything ran), 1 a run that failed, whichever command ran it. And the
//! messages of a few bad inputs that used to be wrong.

mod common;

use std::fs::OpenOptions;
use std::process::{Output, Stdio};

use common::{argv, assert_exit_2, command, read_json, scratch, small, text};

/// `concord ARGS` with its stdout and stderr where given.
fn run_with(args: &[&str], stdout: impl Into<Stdio>, stderr: impl Into<Stdio>) -> Output {
    command(args)
        .stdout(stdout)
        .stderr(stderr)
        .output()
        .expect("the concord binary runs")
}

/// `/dev/full`, where every write fails with ENOSPC.
fn dev_full() -> std::fs::File {
    OpenOptions::new().write(true).open("/dev/full").unwrap()
}

/// `concord ARGS` with its stdout the write end of a pipe whose read end is already closed,
/// so its first write to stdout fails with EPIPE whenever it comes.
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    run_with(args, writer, Stdio::piped())
}

/// `concord ARGS` with stdout on `/dev/full`.
fn with_full_stdout(args: &[&str]) -> Output {
    run_with(args, dev_full(), Stdio::piped())
}

/// `concord ARGS` with stderr on `/dev/full`.
fn with_full_stderr(args: &[&str]) -> Output {
    run_with(args, Stdio::piped(), dev_full())
}

const NO_SPACE: &str = "concord: cannot write to standard output: No space left on device";

#[test]
fn a_closed_stdout_pipe_ends_quietly_with_status_141() {
    for args in [
        small("run", "4", &[]),
        small("run", "4", &["--json"]),
        small("run", "4", &["--co-run", "2"]),
        argv("--help"),
        argv("run --help"),
        argv("--version"),
    ] {
        let o = with_closed_stdout(&args);
        assert_eq!(o.status.code(), Some(141), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "{args:?}: nothing said");
    }
}

#[test]
fn a_closed_stdout_pipe_leaves_the_results_directory_complete() {
    let out = scratch("closed-pipe-compare").join("out");
    let mut args = small("compare", "4", &["--repeat", "1", "--out"]);
    args.push(out.to_str().unwrap());
    let o = with_closed_stdout(&args);
    assert_eq!(o.status.code(), Some(141), "{}", text(&o.stderr));
    // The runs, experiment.json and the report were written before the table was printed.
    let e = read_json(&out.join("experiment.json"));
    assert_eq!(e["complete"], true);
    assert_eq!(e["runs"].as_array().unwrap().len(), 2);
    assert!(out.join("report.html").is_file());
}

#[test]
fn a_full_stdout_is_an_error_with_status_1() {
    for args in [
        small("run", "4", &[]),
        small("run", "4", &["--json"]),
        argv("--help"),
    ] {
        let o = with_full_stdout(&args);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.starts_with(NO_SPACE), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    let out = scratch("full-stdout-compare").join("out");
    let mut args = small("compare", "4", &["--repeat", "1", "--no-report", "--out"]);
    args.push(out.to_str().unwrap());
    let o = with_full_stdout(&args);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(NO_SPACE), "{stderr}");
    assert_eq!(read_json(&out.join("experiment.json"))["complete"], true);
}

#[test]
fn a_full_stderr_never_panics() {
    // Bad input, a failed run and a successful one keep their statuses.
    let o = with_full_stderr(&argv("run gcbench --steal random"));
    assert_eq!(o.status.code(), Some(2));
    let o = with_full_stderr(&argv("run queue-churn --heap 4m"));
    assert_eq!(o.status.code(), Some(1));
    let o = with_full_stderr(&argv("run nonesuch"));
    assert_eq!(o.status.code(), Some(2));
    let o = with_full_stderr(&small("run", "4", &[]));
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).contains("checksum"));
}

/// Runs out of memory at run time: `queue-churn` keeps far more than 4 MiB alive, and a 4 MiB
/// heap passes validation.
#[test]
fn out_of_memory_is_a_failed_run_from_run_and_from_compare() {
    let o = common::concord(&argv("run queue-churn --heap 4m"));
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    // (Out of memory, or the GC overhead limit: either way the run failed.)
    assert!(stderr.contains("workload queue-churn failed: "), "{stderr}");

    let out = scratch("oom-compare").join("out");
    let mut args = argv("compare queue-churn --heap 4m --repeat 1 --no-report --out");
    args.push(out.to_str().unwrap());
    let o = common::concord(&args);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("workload queue-churn failed: "), "{stderr}");
    let runs = read_json(&out.join("experiment.json"))["runs"].clone();
    assert!(runs
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["status"] == "failed"));

    // A parameter the workload refuses is bad input, for both.
    assert_exit_2(&argv("run gcbench 1"), "gcbench has no size parameter");
}

#[test]
fn negative_numbers_are_bad_values_not_unknown_flags() {
    for (args, expected) in [
        (
            "run gcbench --heap -1",
            "concord: --heap: '-1' is not a size (sizes cannot be negative)",
        ),
        (
            "run gcbench --young -64m",
            "concord: --young: '-64m' is not a size (sizes cannot be negative)",
        ),
        (
            "run gcbench --gc-threads -1",
            "concord: --gc-threads: '-1' is out of range (allowed: 1..=256",
        ),
        (
            "run gcbench --mutators -2",
            "concord: --mutators: '-2' is out of range (allowed: 1..=256)",
        ),
        (
            "compare gcbench --repeat -1",
            "concord: --repeat: '-1' is out of range (allowed: 1..=1000)",
        ),
        (
            "run binary-trees -1",
            "concord: SIZE: '-1' is not a workload size (allowed: a whole number",
        ),
        (
            "vs-hotspot --heap -1",
            "concord: --heap: '-1' is not a size (sizes cannot be negative)",
        ),
    ] {
        let o = common::concord(&argv(args));
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args}: {stderr}");
        assert!(stderr.starts_with(expected), "{args}: {stderr}");
        assert!(!stderr.contains("tip:"), "{args}: {stderr}");
    }
}

#[test]
fn a_size_too_long_for_64_bits_names_the_real_limit() {
    let too_long = "99999999999999999999";
    for args in [
        vec!["run", "gcbench", "--heap", too_long],
        vec!["run", "gcbench", "--young", too_long],
    ] {
        let o = common::concord(&args);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "'{too_long}' is too large (allowed: at most 1024G)"
            )),
            "{stderr}"
        );
    }
    let o = command(&argv("run gcbench"))
        .env("CONCORD_HEAP", too_long)
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "CONCORD_HEAP: '{too_long}' is out of range (allowed: 4M..=1024G)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(&usize::MAX.to_string()), "{stderr}");
}

#[test]
fn a_run_without_collections_prints_no_negative_zero() {
    // A 1 GiB heap for a depth-4 tree: nothing to collect.
    let o = common::concord(&argv("run binary-trees 4 --heap 1g --json"));
    assert!(o.status.success(), "{}", text(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["gc_count"], 0, "the premise: no collection");
    let json_text = text(&o.stdout);
    assert!(!json_text.contains("-0"), "{json_text}");
    let o = common::concord(&argv("run binary-trees 4 --heap 1g"));
    let readable = text(&o.stdout);
    assert!(readable.contains("0 collections"), "{readable}");
    assert!(!readable.contains("-0"), "{readable}");
}

/// A heap the OS will not give (address space limited by `ulimit -v`) is a failed run: the
/// input was valid.
#[test]
fn a_heap_the_os_refuses_is_a_failed_run() {
    let o = std::process::Command::new("sh")
        .args([
            "-c",
            "ulimit -v 400000 && exec \"$0\" run binary-trees 4 --heap 1g",
            env!("CARGO_BIN_EXE_concord"),
        ])
        .env_clear()
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("could not reserve"), "{stderr}");
}

/// `concord diagnose … | head` ends quietly with 141, in text and JSON; with `--html` the page
/// is still written whole (the log is read to its end for it) before the status says stdout
/// was lost.
#[test]
fn diagnose_with_a_closed_stdout_pipe_still_writes_its_page() {
    let log = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/diagnose/os-stalls/blocked-write.log.gz"
    );
    for extra in [&[][..], &["--json"][..]] {
        let mut args = vec!["diagnose", log];
        args.extend(extra);
        let o = with_closed_stdout(&args);
        assert_eq!(o.status.code(), Some(141), "{args:?}: {}", text(&o.stderr));
        assert_eq!(text(&o.stderr), "", "{args:?}: nothing said");
    }
    let page = scratch("closed-pipe-diagnose").join("page.html");
    let o = with_closed_stdout(&["diagnose", log, "--html", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(141), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).expect("the page was written");
    // Every stall of the log is on it: the log was read to its end.
    assert!(
        html.contains("blocked-write.log.gz:1997"),
        "the last outside-collection stall"
    );
}
