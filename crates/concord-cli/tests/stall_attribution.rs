//! Stall attribution from the command line (paper 002): the summary's CPU time, page faults,
//! involuntary switches and allocation stalls; the `[gc,cpu]` line of every collection, which
//! `concord diagnose` reads back as each pause's user and sys time; and `--gc-log-compress`,
//! a gzip log that the standard `gzip -dc` and `concord diagnose` both read.

mod common;

use std::process::Command;

use common::{concord, json_of, scratch, small, stdout_json, text};
use serde_json::Value;

/// The shape of a log line: its tag set and message with every number replaced by `#`
/// (`[gc,cpu      ] GC(#) User=#.#s Sys=#.#s Real=#.#s`), so two runs' logs compare.
fn shape(line: &str) -> String {
    let after_time = line.split_once("][").map_or(line, |(_, rest)| rest);
    let mut out = String::new();
    let mut in_number = false;
    for c in after_time.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

fn shapes(text: &str) -> Vec<String> {
    let mut s: Vec<String> = text.lines().map(shape).collect();
    s.sort();
    s.dedup();
    s
}

#[test]
fn the_summary_attributes_pause_time_and_counts_allocation_stalls() {
    let v = json_of(&small("run", "12", &["--json", "--verify"]));
    assert_eq!(v["verified"], true, "{v}");
    assert_eq!(v["checksum_ok"], true, "{v}");
    let gc_count = v["gc_count"].as_u64().unwrap();
    assert!(gc_count > 0, "{v}");
    for key in [
        "gc_user_ms",
        "gc_sys_ms",
        "alloc_stall_max_ms",
        "alloc_stall_p99_ms",
    ] {
        assert!(v[key].as_f64().unwrap() >= 0.0, "{key}: {v}");
    }
    for key in [
        "pause_minor_faults",
        "pause_major_faults",
        "gc_involuntary_switches",
    ] {
        assert!(v[key].as_u64().is_some(), "{key}: {v}");
    }
    // The GC threads ran during the pauses: the kernel charged them some CPU time.
    let cpu = v["gc_user_ms"].as_f64().unwrap() + v["gc_sys_ms"].as_f64().unwrap();
    assert!(cpu > 0.0, "{v}");
    // binary-trees runs on one mutator that allocates until eden is full: every collection
    // is one its failed allocation asked for, so it stalled, for at least the longest pause.
    let stalls = v["alloc_stalls"].as_u64().unwrap();
    assert!(stalls >= 1 && stalls <= gc_count, "{v}");
    let max = v["alloc_stall_max_ms"].as_f64().unwrap();
    assert!(max >= v["pause_max_ms"].as_f64().unwrap(), "{v}");
    assert!(v["alloc_stall_p99_ms"].as_f64().unwrap() <= max, "{v}");
}

/// Runs binary-trees 12 with a GC log at `log` (and `more` flags); returns the summary.
fn run_with_log(log: &std::path::Path, more: &[&str]) -> Value {
    let mut args = vec![
        "--preset",
        "vanilla",
        "--gc-threads",
        "2",
        "--json",
        "--gc-log",
        log.to_str().unwrap(),
    ];
    args.extend(more);
    json_of(&small("run", "12", &args))
}

#[test]
fn a_compressed_log_has_the_lines_of_a_plain_one_and_diagnose_reads_both() {
    let dir = scratch("gc-log-compress");
    let plain = dir.join("gc.log");
    let packed = dir.join("gc.log.gz");
    let plain_summary = run_with_log(&plain, &[]);
    for mode in ["sync", "async"] {
        let summary = run_with_log(&packed, &["--gc-log-compress", "--gc-log-mode", mode]);
        assert_eq!(summary["gc_log_dropped"], 0, "{summary}");
        let bytes = std::fs::read(&packed).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "{mode}: gzip magic");
        // The standard tool reads it, to the end of a finished stream (gzip checks the CRC).
        let out = Command::new("gzip")
            .args(["-dc", packed.to_str().unwrap()])
            .output()
            .expect("gzip is installed");
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        let unpacked = text(&out.stdout);
        let plain_text = std::fs::read_to_string(&plain).unwrap();
        assert_eq!(shapes(&unpacked), shapes(&plain_text), "{mode}");
        let collections = summary["gc_count"].as_u64().unwrap() as usize;
        assert_eq!(
            unpacked.matches("[gc,cpu      ] GC(").count(),
            collections,
            "{unpacked}"
        );
        // diagnose reads the compressed log as it reads the text: every pause with its CPU
        // times.
        let out = concord(&["diagnose", packed.to_str().unwrap(), "--json"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let diagnosis = stdout_json(&out);
        assert_eq!(diagnosis["format"], "concord", "{diagnosis}");
        assert_eq!(diagnosis["pauses"].as_u64(), Some(collections as u64));
        assert_eq!(diagnosis["gc_threads"], 2, "{diagnosis}");
        assert_eq!(diagnosis["gc_threads_from"], "log", "{diagnosis}");
    }
    // The plain log: diagnose shows user and sys for every pause, from the [gc,cpu] lines, as
    // the run's records had them (rounded to HotSpot's 10 ms).
    let out = concord(&["diagnose", plain.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let diagnosis = stdout_json(&out);
    let records = diagnosis["records"].as_array().unwrap();
    assert_eq!(
        records.len() as u64,
        plain_summary["gc_count"].as_u64().unwrap()
    );
    let mut user_total = 0.0;
    for r in records {
        let user = r["user_ms"].as_f64().expect("user time from [gc,cpu]");
        let sys = r["sys_ms"].as_f64().expect("sys time from [gc,cpu]");
        assert!(user >= 0.0 && sys >= 0.0, "{r}");
        user_total += user + sys;
    }
    let summary_cpu = plain_summary["gc_user_ms"].as_f64().unwrap()
        + plain_summary["gc_sys_ms"].as_f64().unwrap();
    // Each pause's two figures are rounded to 10 ms, so the sums differ by at most 10 ms per
    // pause.
    assert!(
        (user_total - summary_cpu).abs() <= 10.0 * records.len() as f64 + 1e-9,
        "diagnose {user_total} ms vs summary {summary_cpu} ms"
    );
    let out = concord(&["diagnose", plain.to_str().unwrap()]);
    let shown = text(&out.stdout);
    assert!(shown.contains("user_ms   sys_ms"), "{shown}");
}

#[test]
fn a_compressed_log_to_a_full_device_is_reported_and_fails_the_run() {
    let out = concord(&small(
        "run",
        "8",
        &["--gc-log", "/dev/full", "--gc-log-compress", "--json"],
    ));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("/dev/full"), "{stderr}");
}
