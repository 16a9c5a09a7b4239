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
