//! `concord run --gc-log-mode`: the mode each preset writes its GC log in, the flag that
//! overrides it, the summary fields that say what became of the log, and bad values refused.

mod common;

use common::{assert_exit_2, json_of, scratch, small};

#[test]
fn the_summary_says_how_the_log_was_written() {
    let dir = scratch("gc-log-modes");
    let log = dir.join("gc.log");
    let log = log.to_str().unwrap();
    for (preset, flag, mode) in [
        ("vanilla", None, "sync"),
        ("optimized", None, "async"),
        ("modern", None, "async"),
        ("vanilla", Some("async"), "async"),
        ("optimized", Some("sync"), "sync"),
    ] {
        let mut more = vec!["--preset", preset, "--gc-log", log, "--json"];
        if let Some(flag) = flag {
            more.extend(["--gc-log-mode", flag]);
        }
        let v = json_of(&small("run", "8", &more));
        assert_eq!(v["gc_log_mode"], mode, "{preset} {flag:?}: {v}");
        assert_eq!(v["gc_log_dropped"], 0, "{v}");
        assert!(v["gc_log_write_max_ms"].as_f64().unwrap() >= 0.0, "{v}");
        let text = std::fs::read_to_string(log).unwrap();
        let pauses = text.matches("][gc          ] GC(").count() as u64;
        assert_eq!(Some(pauses), v["gc_count"].as_u64(), "{text}");
    }
    // Without a log: no mode, nothing dropped.
    let v = json_of(&small("run", "8", &["--json"]));
    assert!(v["gc_log_mode"].is_null(), "{v}");
    assert_eq!(v["gc_log_dropped"], 0);
}

#[test]
fn bad_log_modes_and_sizes_are_refused() {
    assert_exit_2(
        &small("run", "8", &["--gc-log-mode", "later"]),
        "'later' is not a GC log mode (allowed: sync, async)",
    );
    assert_exit_2(
        &small("run", "8", &["--gc-log-buffer", "10"]),
        "--gc-log-buffer",
    );
    assert_exit_2(
        &small("run", "8", &["--gc-log-flush-timeout", "-1"]),
        "--gc-log-flush-timeout",
    );
}

/// An async log never holds the program: not at start (the header is buffered, and a FIFO
/// nobody opens is opened by the log's writer), not at exit (the final flush waits at most
/// its timeout, and the summary shows that wait and the lines dropped).
#[test]
fn an_async_log_on_a_fifo_nobody_reads_holds_the_run_at_most_its_flush_timeout() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let dir = scratch("async-fifo-no-reader");
    let fifo = dir.join("gc.fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
    let mut child = common::command(&[
        "run",
        "binary-trees",
        "8",
        "--gc-log-mode",
        "async",
        "--gc-log-flush-timeout",
        "300",
        "--gc-log",
        fifo.to_str().unwrap(),
        "--json",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    // A guard against a hang (the old behaviour), not a timing.
    let begin = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if begin.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run waited for the FIFO's reader");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    let err = common::text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("its writer was still blocked after 300ms")
            && err.contains("the path, written in place, keeps the lines written before"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["outputs_finish_ms"].as_f64().unwrap() >= 300.0, "{v}");
    assert!(
        v["gc_log_dropped"].as_u64().unwrap() >= 2,
        "the header at least: {v}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
