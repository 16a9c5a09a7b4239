//! SIGTERM, SIGINT and a second signal, end to end: `concord run` stops, puts a complete GC
//! log and records in place, prints the summary of the run so far marked as interrupted and
//! exits with 128 + the signal; `compare` finishes its current run, keeps its results
//! directory consistent and exits the same way; a second signal quits at once; and no
//! temporary file is ever left behind. Each test waits for an event (a collection's record
//! read from a FIFO, a progress line on stderr) before it signals, never for a time.

mod common;

use std::ffi::CString;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use common::{command, entries, read_json, scratch};
use serde_json::Value;

/// How long a test waits for an event that comes in well under a second on a sound build: a
/// guard against hangs, not a timing.
const HANG_GUARD: Duration = Duration::from_secs(120);

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
}

fn send(child: &Child, signal: i32) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill");
}

/// Sends the lines of `source` on `tx` until its end.
fn forward_lines(source: impl Read, tx: Sender<String>) {
    for line in BufReader::new(source).lines() {
        let Ok(line) = line else { break };
        if tx.send(line).is_err() {
            break;
        }
    }
}

/// The lines of `source`, one by one, on a channel (until its end).
fn lines_of(source: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || forward_lines(source, tx));
    rx
}

/// The lines written to the FIFO `path`, on a channel; opening it waits for the writer.
fn fifo_lines(path: &Path) -> Receiver<String> {
    let (tx, rx) = channel();
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        if let Ok(fifo) = File::open(&path) {
            forward_lines(fifo, tx);
        }
    });
    rx
}

/// All of `source`, read on a thread (so the child never blocks on a full pipe).
fn read_all(mut source: impl Read + Send + 'static) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = source.read_to_string(&mut s);
        s
    })
}

/// Waits for the first line of `lines` that `wanted` accepts and returns it; fails (killing
/// `child`) if none comes.
fn wait_for(lines: &Receiver<String>, child: &mut Child, wanted: impl Fn(&str) -> bool) -> String {
    loop {
        match lines.recv_timeout(HANG_GUARD) {
            Ok(line) if wanted(&line) => return line,
            Ok(_) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the awaited line never came ({e})");
            }
        }
    }
}

/// The names in `dir` that start with a dot (temporary files).
fn hidden(dir: &Path) -> Vec<String> {
    entries(dir)
        .into_iter()
        .filter(|n| n.starts_with('.'))
        .collect()
}

/// The `GC(n)` ids of a GC log's `[gc]` lines after its header, every line checked to be whole.
fn log_ids(log: &str) -> Vec<u64> {
    let mut lines = log.lines();
    assert!(
        lines.next().unwrap().contains("[info][gc] Using Concord"),
        "{log}"
    );
    let workers = lines.next().unwrap();
    assert!(workers.contains("[gc,init] Parallel Workers: "), "{log}");
    lines
        .inspect(|l| {
            let whole = l.ends_with('s') || l.ends_with('K') || l.ends_with(')');
            assert!(l.starts_with('[') && whole, "a whole line: {l:?}");
        })
        .filter(|l| l.contains("[info][gc          ] GC("))
        .map(|l| {
            let id = l
                .split_once("[info][gc          ] GC(")
                .and_then(|(_, rest)| rest.split_once(')'))
                .and_then(|(id, _)| id.parse().ok());
            assert!(l.ends_with("ms") && id.is_some(), "a whole line: {l:?}");
            id.unwrap()
        })
        .collect()
}

#[test]
fn a_signal_stops_run_with_a_partial_summary_and_complete_outputs() {
    for (signal, status, says, never) in [
        (
            libc::SIGTERM,
            143,
            "interrupted by SIGTERM: the run stops; the summary of the run so far follows (a \
             second signal quits at once)",
            "Ctrl-C",
        ),
        (
            libc::SIGINT,
            130,
            "interrupted by SIGINT: the run stops; the summary of the run so far follows (press \
             Ctrl-C again to quit at once)",
            "second signal",
        ),
    ] {
        let dir = scratch(&format!("signals-run-{signal}"));
        let (log, records) = (dir.join("gc.log"), dir.join("records.fifo"));
        std::fs::write(&log, "old log\n").unwrap();
        mkfifo(&records);
        // Many rounds: the run goes on until the signal.
        let mut child = command(&[
            "run",
            "binary-trees",
            "18",
            "--heap",
            "32m",
            "--rounds",
            "1000",
            "--gc-log",
            log.to_str().unwrap(),
            "--gc-records",
            records.to_str().unwrap(),
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let stdout = read_all(child.stdout.take().unwrap());
        let stderr = read_all(child.stderr.take().unwrap());
        // The FIFO opens once the heap is built; its first line is the first collection.
        let record_lines = fifo_lines(&records);
        let mut written = vec![wait_for(&record_lines, &mut child, |_| true)];
        send(&child, signal);
        let exit = child.wait().unwrap();
        let (stdout, stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
        written.extend(record_lines.iter());
        assert_eq!(exit.code(), Some(status), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains(never), "{stderr}");
        let summary: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        let interrupted = summary["interrupted"].as_str().unwrap();
        let name = if signal == libc::SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        };
        assert!(
            interrupted.starts_with(&format!("by {name} after ")),
            "{interrupted}"
        );
        assert_eq!(summary["checksum_ok"], Value::Null);
        let n = summary["gc_count"].as_u64().unwrap();
        assert!(n >= 1);
        // The log and the records hold exactly the collections of the summary, whole.
        let ids = log_ids(&std::fs::read_to_string(&log).unwrap());
        assert_eq!(ids, (0..n).collect::<Vec<_>>());
        let record_ids: Vec<u64> = written
            .iter()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(record_ids, ids);
        assert!(
            hidden(&dir).is_empty(),
            "temporary files: {:?}",
            hidden(&dir)
        );
    }
}

/// `concord compare …` with many runs, its stderr lines on a channel and its stdout read.
fn start_compare(out: &Path, size: &str) -> (Child, Receiver<String>, JoinHandle<String>) {
    let mut child = command(&[
        "compare",
        "binary-trees",
        size,
        "--preset",
        "vanilla,optimized",
        "--repeat",
        "50",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let stdout = read_all(child.stdout.take().unwrap());
    let stderr = lines_of(child.stderr.take().unwrap());
    (child, stderr, stdout)
}

#[test]
fn sigterm_stops_compare_after_the_current_run() {
    let out = scratch("signals-compare").join("out");
    let (mut child, stderr, stdout) = start_compare(&out, "14");
    wait_for(&stderr, &mut child, |l| l.starts_with("[1/100]"));
    send(&child, libc::SIGTERM);
    let exit = child.wait().unwrap();
    let messages: Vec<String> = stderr.iter().collect();
    let messages = messages.join("\n");
    assert_eq!(exit.code(), Some(143), "{messages}");
    assert!(
        messages.contains(
            "interrupted by SIGTERM: the current run finishes, then the experiment stops (a \
             second signal quits at once)"
        ),
        "{messages}"
    );
    assert!(!messages.contains("Ctrl-C"), "{messages}");
    let json: Value = serde_json::from_str(&stdout.join().unwrap()).unwrap();
    assert_eq!(json["interrupted"], true);
    let e = read_json(&out.join("experiment.json"));
    assert_eq!(e["interrupted"], true);
    let runs = e["runs"].as_array().unwrap();
    assert!(!runs.is_empty() && runs.len() < 100);
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        for key in ["summary", "records"] {
            assert!(out.join(run[key].as_str().unwrap()).is_file(), "{run}");
        }
    }
    assert!(hidden(&out.join("runs")).is_empty());
    assert!(hidden(&out).is_empty());
}

#[test]
fn a_second_signal_quits_at_once_and_leaves_no_temporary_file() {
    let out = scratch("signals-twice").join("out");
    let (mut child, stderr, stdout) = start_compare(&out, "17");
    wait_for(&stderr, &mut child, |l| l.starts_with("[1/100]"));
    send(&child, libc::SIGTERM);
    // The second signal only once the first was seen (signals of one kind do not queue).
    wait_for(&stderr, &mut child, |l| {
        l.contains("interrupted by SIGTERM")
    });
    send(&child, libc::SIGTERM);
    let exit = child.wait().unwrap();
    let messages: Vec<String> = stderr.iter().collect();
    assert_eq!(exit.code(), Some(143), "{}", messages.join("\n"));
    // Whether the second signal came during the next run (quitting at once) or after the
    // first had already ended the experiment, nothing temporary stays and the directory is
    // consistent.
    let quit_at_once = messages
        .iter()
        .any(|l| l.contains("SIGTERM again: quitting now"));
    let printed = stdout.join().unwrap();
    assert_eq!(printed.is_empty(), quit_at_once, "{printed}");
    assert!(
        hidden(&out.join("runs")).is_empty(),
        "{:?}",
        hidden(&out.join("runs"))
    );
    assert!(hidden(&out).is_empty(), "{:?}", hidden(&out));
    let e = read_json(&out.join("experiment.json"));
    for run in e["runs"].as_array().unwrap() {
        assert!(
            out.join(run["summary"].as_str().unwrap()).is_file(),
            "{run}"
        );
    }
}

/// Waits for `child` to exit, at most [`HANG_GUARD`] (then kills it and fails): its status,
/// stdout and stderr.
fn exit_within_guard(
    mut child: Child,
    out: JoinHandle<String>,
    err: JoinHandle<String>,
) -> (i32, String, String) {
    let status = wait_within_guard(&mut child);
    (
        status.code().unwrap_or(-1),
        out.join().unwrap(),
        err.join().unwrap(),
    )
}

/// `concord run gcbench --heap 24m` with `flags` (see [`start`]).
fn start_run(flags: &[&str]) -> (Child, Receiver<String>, JoinHandle<String>) {
    let mut args = vec!["run", "gcbench", "--heap", "24m"];
    args.extend(flags);
    start(&args)
}

/// `concord ARGS`, its stderr at `info` (so it says when it waits for a FIFO's reader or
/// starts its loads): the child, its stderr lines and its stdout.
fn start(args: &[&str]) -> (Child, Receiver<String>, JoinHandle<String>) {
    let mut child = command(args)
        .env("CONCORD_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    let out = read_all(child.stdout.take().unwrap());
    (child, err, out)
}

/// The rest of `lines` (until the child closes stderr), joined.
fn rest_of(lines: Receiver<String>) -> JoinHandle<String> {
    std::thread::spawn(move || lines.iter().collect::<Vec<_>>().join("\n"))
}

#[test]
fn the_first_signal_ends_a_run_whose_output_fifo_nobody_opens() {
    // A sync log and the records are opened before the run, which ends before it starts; an
    // async log's writer opens it, and finishing the log waits for it at most its flush
    // timeout.
    let waited_to_open = "the program stopped while waiting for a reader";
    let async_writer_blocked = "its writer was still blocked after";
    for (name, flags, expected) in [
        (
            "sync-log",
            &["--gc-log-mode", "sync", "--gc-log"][..],
            waited_to_open,
        ),
        (
            "async-log",
            &["--gc-log-mode", "async", "--gc-log"],
            async_writer_blocked,
        ),
        ("records", &["--gc-records"], waited_to_open),
    ] {
        let dir = scratch(&format!("signal-no-reader-{name}"));
        let fifo = dir.join("out.fifo");
        mkfifo(&fifo);
        let mut flags = flags.to_vec();
        let path = fifo.display().to_string();
        flags.push(&path);
        let (mut child, err, out) = start_run(&flags);
        wait_for(&err, &mut child, |l| {
            l.contains("waiting for a reader to open the FIFO")
        });
        send(&child, libc::SIGTERM);
        let (status, out, err) = exit_within_guard(child, out, rest_of(err));
        assert_eq!(status, 128 + libc::SIGTERM, "{name}: {err}");
        assert!(out.contains("interrupted: by SIGTERM"), "{name}: {out}");
        assert!(
            err.contains(&format!("{path}: {expected}")),
            "{name}: {err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Bytes waiting in the pipe behind `reader`.
fn queued(reader: &File) -> i32 {
    use std::os::fd::AsRawFd;
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int to `n`, on a descriptor `reader` keeps open.
    assert_eq!(
        unsafe { libc::ioctl(reader.as_raw_fd(), libc::FIONREAD, &mut n) },
        0
    );
    n
}

#[test]
fn the_first_signal_ends_a_run_whose_output_fifo_is_never_read() {
    for (name, mode) in [("sync", "sync"), ("async", "async")] {
        let dir = scratch(&format!("signal-never-read-{name}"));
        let fifo = dir.join("gc.fifo");
        mkfifo(&fifo);
        let path = fifo.display().to_string();
        // A reader that opens the FIFO, shrinks it to one page and never reads.
        let opener = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let reader = File::open(&fifo).unwrap();
                use std::os::fd::AsRawFd;
                // SAFETY: F_SETPIPE_SZ on a descriptor `reader` keeps open.
                unsafe { libc::fcntl(reader.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
                reader
            })
        };
        let (mut child, err, out) = start_run(&[
            "--gc-log-mode",
            mode,
            "--gc-log",
            &path,
            "--gc-log-buffer",
            "1k",
        ]);
        let reader = opener.join().unwrap();
        // The event: the page is (nearly) full, so the log's writes wait for the reader.
        let begin = std::time::Instant::now();
        while queued(&reader) < 3000 {
            if begin.elapsed() > HANG_GUARD {
                let _ = child.kill();
                panic!("{name}: the log never filled the pipe");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        send(&child, libc::SIGTERM);
        let (status, out, err) = exit_within_guard(child, out, rest_of(err));
        assert_eq!(status, 128 + libc::SIGTERM, "{name}: {err}");
        assert!(out.contains("interrupted: by SIGTERM"), "{name}: {out}");
        // What the pipe held is the reader's; the log lines it could not take, if any, are
        // reported as lost.
        assert!(
            !err.contains("GC log") || err.contains(&format!("GC log {path}:")),
            "{name}: {err}"
        );
        drop(reader);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A signal while the memory pressure child is still taking its memory stops it there: the
/// run does not wait for it to take (or give back) gigabytes first.
#[test]
fn a_signal_stops_memory_pressure_while_it_is_still_taking_memory() {
    let asked: u64 = 4 << 30;
    let (mut child, err, out) = start(&[
        "run",
        "binary-trees",
        "10",
        "--memory-pressure",
        "4g",
        "--json",
    ]);
    // Logged right before the child starts; taking 4 GiB a page at a time takes seconds.
    wait_for(&err, &mut child, |l| l.contains("loads during the run"));
    send(&child, libc::SIGINT);
    let (status, out, err) = exit_within_guard(child, out, rest_of(err));
    assert_eq!(status, 128 + libc::SIGINT, "{err}");
    let summary: Value = serde_json::from_str(&out).unwrap();
    let pressure = &summary["loads"]["memory_pressure"];
    assert_eq!(pressure["asked_bytes"], asked, "{summary}");
    assert!(
        pressure["held_at_start_bytes"].as_u64().unwrap() < asked,
        "the run waited for the child to take everything: {pressure}"
    );
}

/// `concord ARGS` with its temporary directory `tmp` (`TMPDIR`): the child, its stderr lines
/// and its stdout lines.
fn start_in_tmp(args: &[&str], tmp: &Path) -> (Child, Receiver<String>, Receiver<String>) {
    let mut child = command(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let err = lines_of(child.stderr.take().unwrap());
    let out = lines_of(child.stdout.take().unwrap());
    (child, err, out)
}

/// Waits for `child` to exit, at most [`HANG_GUARD`]: its status (-1 if a signal killed it)
/// and the rest of `err`.
fn status_and_rest(mut child: Child, err: Receiver<String>) -> (i32, String) {
    let rest = rest_of(err);
    let status = wait_within_guard(&mut child);
    (status.code().unwrap_or(-1), rest.join().unwrap())
}

/// Waits for `child` to exit, at most [`HANG_GUARD`] (then kills it and fails).
fn wait_within_guard(child: &mut Child) -> std::process::ExitStatus {
    let begin = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if begin.elapsed() > HANG_GUARD {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the command did not stop within {HANG_GUARD:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The entries of `tmp` a command `prefix` left there.
fn left_in(tmp: &Path, prefix: &str) -> Vec<String> {
    entries(tmp)
        .into_iter()
        .filter(|n| n.starts_with(prefix))
        .collect()
}

#[test]
fn a_signal_stops_sim_validate_and_removes_its_temporary_directory() {
    for (signal, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let tmp = scratch(&format!("signals-sim-validate-{signal}"));
        let (mut child, err, _out) = start_in_tmp(&["sim", "validate", "--quick"], &tmp);
        // After the first trace is recorded the directory holds it.
        wait_for(&err, &mut child, |l| {
            l.starts_with("concord sim validate: [2/")
        });
        assert_eq!(left_in(&tmp, "concord-sim-validate-").len(), 1);
        send(&child, signal);
        let (status, rest) = status_and_rest(child, err);
        assert_eq!(status, 128 + signal, "{name}: {rest}");
        assert!(
            rest.contains(&format!(
                "interrupted by {name}: the current run finishes, then the validation stops"
            )) && rest
                .contains("stopped before the grid was complete; its temporary files are removed"),
            "{name}: {rest}"
        );
        assert_eq!(
            left_in(&tmp, "concord-sim-validate-"),
            Vec::<String>::new(),
            "{name}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}

#[test]
fn a_second_signal_quits_sim_validate_at_once_and_removes_its_temporary_directory() {
    let tmp = scratch("signals-sim-validate-twice");
    let (mut child, err, _out) = start_in_tmp(&["sim", "validate", "--quick"], &tmp);
    wait_for(&err, &mut child, |l| {
        l.starts_with("concord sim validate: [2/")
    });
    send(&child, libc::SIGTERM);
    wait_for(&err, &mut child, |l| l.contains("interrupted by SIGTERM"));
    send(&child, libc::SIGTERM);
    let (status, rest) = status_and_rest(child, err);
    // Quit at once, or stopped by the first signal already: either way nothing stays.
    assert_eq!(status, 143, "{rest}");
    assert_eq!(left_in(&tmp, "concord-sim-validate-"), Vec::<String>::new());
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
#[cfg_attr(
    no_java,
    ignore = "needs a JDK (java with javac on PATH) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_signal_stops_vs_hotspot_and_removes_its_scratch_directory() {
    for (signals, name) in [
        (&[libc::SIGINT][..], "SIGINT"),
        (&[libc::SIGTERM], "SIGTERM"),
        (&[libc::SIGTERM, libc::SIGTERM], "SIGTERM twice"),
    ] {
        let tmp = scratch(&format!(
            "signals-vs-hotspot-{}",
            signals.len() * 100 + signals[0] as usize
        ));
        let (mut child, err, out) = start_in_tmp(
            &[
                "vs-hotspot",
                "--workload",
                "gcbench",
                "--depth",
                "10",
                "--repeat",
                "50",
            ],
            &tmp,
        );
        // The first run's row: the classes are compiled, a GC log written.
        wait_for(&out, &mut child, |l| {
            let l = l.trim_start();
            l.starts_with("1 ") && (l.contains("HotSpot") || l.contains("Concord"))
        });
        assert_eq!(left_in(&tmp, "concord-vs-hotspot-").len(), 1, "{name}");
        send(&child, signals[0]);
        if signals.len() > 1 {
            wait_for(&err, &mut child, |l| l.contains("interrupted by SIGTERM"));
            send(&child, signals[1]);
        }
        let (status, rest) = status_and_rest(child, err);
        assert_eq!(status, 128 + signals[0], "{name}: {rest}");
        assert_eq!(
            left_in(&tmp, "concord-vs-hotspot-"),
            Vec::<String>::new(),
            "{name}"
        );
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
