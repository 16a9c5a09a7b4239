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
