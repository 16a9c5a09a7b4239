//! The stall harnesses of paper 002 (issue 11 §4): a GC log on a stalled device lengthens
//! sync pauses by the stall and leaves async pauses alone; the I/O load keeps to its cap and
//! leaves nothing behind; memory pressure keeps to its cap, gives its memory back on exit and
//! dies with its parent; `pause-bench` writes its results directory and `concord report` draws
//! its figures; bad input exits 2 naming what is allowed.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{assert_exit_2, command, concord, json_of, scratch, small, text};
use serde_json::Value;

/// The per-collection records of a records file.
fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A write of the log waits for a page (4 KiB) of the device to drain: at 16 KiB/s a quarter
/// of a second. The margins are generous: a stalled write must take at least 150 ms, and an
/// async pause must stay below half the longest stall a sync pause took.
#[test]
fn a_stalled_log_lengthens_sync_pauses_by_the_stall_and_async_pauses_not() {
    let dir = scratch("stall-slow-log");
    let mut stalls = Vec::new();
    for mode in ["sync", "async"] {
        let log = dir.join(format!("{mode}.log"));
        let rec = dir.join(format!("{mode}.jsonl"));
        let v = json_of(&small(
            "run",
            "14",
            &[
                "--gc-log-mode",
                mode,
                "--slow-log",
                "16k",
                "--gc-log",
                log.to_str().unwrap(),
                "--gc-records",
                rec.to_str().unwrap(),
                "--json",
            ],
        ));
        let slow = &v["loads"]["slow_log"];
        assert_eq!(slow["rate_bytes_per_s"], 16384, "{v}");
        assert_eq!(slow["pipe_bytes"], 4096, "{v}");
        assert!(f(&slow["background_bytes"]) >= 4096.0, "{v}");
        // The log went through the device whole, and reached its path.
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(f(&slow["log_bytes"]) as usize, text.len(), "{v}");
        let logged = text.matches("][gc          ] GC(").count() as u64;
        assert_eq!(Some(logged), v["gc_count"].as_u64(), "{text}");
        assert_eq!(v["gc_log_dropped"], 0, "{v}");
        // The log tells the stall itself: the `[safepoint]` line's stopped time holds the sync
        // write that the `[gc]` line, formatted before it, does not; `diagnose` names it.
        let diagnosis = json_of(&["diagnose", log.to_str().unwrap(), "--json"]);
        let outside: Vec<&Value> = diagnosis["stalled"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["causes"].to_string().contains("outside-collection"))
            .collect();
        if mode == "sync" {
            assert!(!outside.is_empty(), "{mode}: {diagnosis}");
        } else {
            assert!(outside.is_empty(), "{mode}: {diagnosis}");
        }
        // The writing thread was stuck in write(): the VM thread (sync) for a page; the log's
        // writer thread (async) until the device drained or the run ended and released it.
        // A page drains in 250 ms at 16 KiB/s; a write that found part of it drained waits
        // less, so 100 ms is the bound (an unstalled write takes well under 1 ms).
        let least = if mode == "sync" { 100.0 } else { 1.0 };
        assert!(f(&v["gc_log_write_max_ms"]) >= least, "{mode}: {v}");
        stalls.push((v, records(&rec)));
    }
    let (sync, sync_records) = &stalls[0];
    let stalled: Vec<&Value> = sync_records
        .iter()
        .filter(|r| f(&r["log_write_ms"]) >= 100.0)
        .collect();
    assert!(stalled.len() >= 2, "{sync_records:?}");
    for r in sync_records {
        assert!(f(&r["pause_ms"]) >= f(&r["log_write_ms"]), "{r}");
    }
    assert!(f(&sync["pause_max_ms"]) >= 100.0, "{sync}");
    let (asynchronous, async_records) = &stalls[1];
    assert!(async_records.iter().all(|r| f(&r["log_write_ms"]) == 0.0));
    let sync_stall = f(&sync["gc_log_write_max_ms"]);
    assert!(
        f(&asynchronous["pause_max_ms"]) < sync_stall / 2.0,
        "async pauses stay far below the stall ({sync_stall} ms): {asynchronous}"
    );
    // Nothing of the device is left in the temporary directory.
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("concord-slow-log.")
        })
        .filter(|e| {
            let pid = e
                .file_name()
                .to_string_lossy()
                .split('.')
                .nth(1)
                .map(str::to_string);
            pid.is_some_and(|p| !Path::new("/proc").join(p).exists())
        })
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn the_io_load_keeps_to_its_cap_and_leaves_its_directory_empty() {
    let dir = scratch("stall-io-load");
    let v = json_of(&small(
        "run",
        "14",
        &[
            "--io-load",
            "4m",
            "--io-load-dir",
            dir.to_str().unwrap(),
            "--json",
        ],
    ));
    let io = &v["loads"]["io_load"];
    assert_eq!(io["cap_bytes"], 4 << 20, "{v}");
    assert!(f(&io["peak_held_bytes"]) <= f(&io["cap_bytes"]), "{v}");
    assert!(f(&io["written_bytes"]) >= f(&(1 << 20).into()), "{v}");
    assert!(io["error"].is_null(), "{v}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    // The readable summary says what the load did.
    let out = concord(&small(
        "run",
        "8",
        &["--io-load", "2m", "--io-load-dir", dir.to_str().unwrap()],
    ));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("I/O load: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn memory_pressure_holds_its_size_and_is_gone_after_the_run() {
    let v = json_of(&small(
        "run",
        "14",
        &["--memory-pressure", "256m", "--json"],
    ));
    let p = &v["loads"]["memory_pressure"];
    assert_eq!(p["asked_bytes"], 256 << 20, "{v}");
    assert_eq!(p["held_at_start_bytes"], 256 << 20, "{v}");
    assert_eq!(p["peak_bytes"], 256 << 20, "{v}");
    assert_eq!(p["held_at_end_bytes"], 256 << 20, "{v}");
    let pid = p["pid"].as_u64().unwrap();
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the pressure process is gone"
    );
}

/// `concord pressure` as a child: it never takes more than the floor leaves, reports what it
/// holds, and ends when its stdin closes.
#[test]
fn pressure_keeps_the_floor_available() {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let available: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|r| r.split_whitespace().next()?.parse().ok())
        .unwrap();
    let available = available * 1024;
    // Leave 512 MiB to take: far less than the 100G asked.
    let floor = available.saturating_sub(512 << 20).to_string();
    let mut child = command(&["pressure", "100g", "--floor", &floor, "--for-parent"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.next().unwrap().unwrap();
    let held: u64 = ready.strip_prefix("ready ").unwrap().parse().unwrap();
    // MemAvailable moves between the test's reading and the child's (other processes run and
    // the page cache is reclaimed), so allow a drift of 256 MiB: the child took about the
    // 512 MiB the floor left, nowhere near the 100G asked (a run beside a build took 576 MiB).
    assert!(held <= (512 + 256) << 20, "{ready}");
    drop(child.stdin.take());
    let done = lines.next().unwrap().unwrap();
    assert!(done.starts_with("done "), "{done}");
    let status = child.wait().unwrap();
    assert!(status.success());
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("must stay available: taking"), "{stderr}");
}

/// The kernel kills the pressure process when `concord` dies, even by SIGKILL.
#[test]
fn memory_pressure_dies_with_its_parent() {
    let mut parent = command(&[
        "run",
        "queue-churn",
        "30",
        "--heap",
        "1536m",
        "--memory-pressure",
        "128m",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::null())
    .spawn()
    .unwrap();
    let parent_pid = parent.id();
    let child_of = |pid: u32| -> Option<u32> {
        std::fs::read_dir("/proc")
            .ok()?
            .filter_map(Result::ok)
            .find_map(|e| {
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let after = stat.rsplit_once(") ")?.1;
                let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
                (ppid == pid).then(|| e.file_name().to_string_lossy().parse().ok())?
            })
    };
    let begin = Instant::now();
    let child = loop {
        if let Some(c) = child_of(parent_pid) {
            break c;
        }
        assert!(
            begin.elapsed() < Duration::from_secs(20),
            "no pressure process appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    parent.kill().unwrap();
    parent.wait().unwrap();
    let begin = Instant::now();
    while Path::new(&format!("/proc/{child}")).exists() {
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "pressure process {child} outlived its parent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pause_bench_writes_its_results_and_the_report_draws_them() {
    let out = scratch("stall-pause-bench").join("out");
    let o = out.to_str().unwrap();
    let v = json_of(&[
        "pause-bench",
        "--seconds",
        "1",
        "--heap",
        "1536m",
        "--loads",
        "none,slow-log",
        "--log-modes",
        "sync,async",
        "--thp",
        "never",
        "--repeat",
        "1",
        "--out",
        o,
        "--json",
        "--no-report",
    ]);
    assert_eq!(v["kind"], "pause-bench", "{v}");
    let configs = v["configurations"].as_array().unwrap();
    let ids: Vec<&str> = configs.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "none:sync/never",
            "none:async/never",
            "slow-log:sync/never",
            "slow-log:async/never"
        ]
    );
    let exp: Value =
        serde_json::from_slice(&std::fs::read(out.join("experiment.json")).unwrap()).unwrap();
    assert_eq!(exp["kind"], "pause-bench");
    let runs = exp["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        let summary = run["summary"].as_str().unwrap();
        let s: Value = serde_json::from_slice(&std::fs::read(out.join(summary)).unwrap()).unwrap();
        for t in ["250", "500", "1000", "2000"] {
            assert!(
                s["pauses_over_ms"][t].is_u64() || s["pauses_over_ms"][t].is_f64(),
                "{s}"
            );
        }
        let log = out.join(summary.replace(".summary.json", ".gc.log"));
        let logged = std::fs::read_to_string(&log).unwrap();
        assert!(
            logged.starts_with("[0.000s][info][gc] Using"),
            "{}",
            log.display()
        );
        // The throttled device stalls a synchronous write for tens to hundreds of ms (a
        // one-page pipe kept full, drained at 16 KiB/s); a write to a plain file takes well
        // under a millisecond. 50 ms separates the two without depending on how long one
        // particular write waited (149.6 ms was seen where 150 was once required).
        if run["configuration"] == "slow-log:sync/never" {
            assert!(f(&s["gc_log_write_max_ms"]) >= 50.0, "{s}");
        }
    }
    let m = &configs[0]["median"];
    assert!(
        m["pauses_over"].as_array().is_some_and(|a| a.len() == 4),
        "{m}"
    );
    let page = scratch("stall-pause-bench-report").join("report.html");
    let r = concord(&["report", o, "-o", page.to_str().unwrap()]);
    assert!(r.status.success(), "{}", text(&r.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for wanted in [
        "id=\"pause-series\"",
        "id=\"pauses-over\"",
        "slow-log: the GC log",
        "no load",
        "<svg",
    ] {
        assert!(html.contains(wanted), "{wanted}");
    }
}

#[test]
fn bad_stall_input_is_refused_with_what_is_allowed() {
    assert_exit_2(
        &["pause-bench", "--loads", "disk"],
        "--loads: 'disk' is unknown (allowed: none, io, pressure, slow-log)",
    );
    assert_exit_2(
        &["pause-bench", "--thp", "huge"],
        "--thp: 'huge' is unknown (allowed: never",
    );
    assert_exit_2(
        &["pause-bench", "--log-modes", "later"],
        "(allowed: sync, async)",
    );
    assert_exit_2(
        &["pause-bench", "--gc-log-mode", "sync"],
        "--gc-log-mode cannot be used with pause-bench",
    );
    assert_exit_2(
        &["pause-bench", "--loads", "none", "--io-load", "1g"],
        "add io to --loads",
    );
    assert_exit_2(
        &["pause-bench", "--seconds", "0"],
        "--seconds: '0' is out of range",
    );
    assert_exit_2(
        &small("run", "8", &["--slow-log", "0"]),
        "--slow-log: '0' is out of range (allowed: bytes per second from 16",
    );
    assert_exit_2(
        &small("run", "8", &["--slow-log", "fast"]),
        "is not a drain rate",
    );
    assert_exit_2(
        &small("run", "8", &["--io-load", "10k"]),
        "--io-load: '10K' is too small (allowed: at least 1M)",
    );
    assert_exit_2(
        &small(
            "run",
            "8",
            &["--io-load", "1m", "--io-load-dir", "/nonexistent"],
        ),
        "--io-load-dir: cannot use /nonexistent",
    );
    assert_exit_2(
        &small("run", "8", &["--io-load-dir", "/tmp"]),
        "--io-load-dir needs the I/O load",
    );
    assert_exit_2(
        &small("run", "8", &["--memory-pressure", "1m"]),
        "--memory-pressure: '1M' is too small (allowed: at least 64M)",
    );
    assert_exit_2(
        &small("run", "8", &["--pressure-floor", "1g"]),
        "--pressure-floor needs memory pressure",
    );
    assert_exit_2(
        &[
            "pause-bench",
            "--loads",
            "none,io",
            "--pressure-floor",
            "1g",
        ],
        "--pressure-floor needs memory pressure (add pressure to --loads)",
    );
    assert_exit_2(
        &small("run", "8", &["--slow-log", "1k", "--co-run", "2"]),
        "cannot be used with --co-run",
    );
    assert_exit_2(
        &["pressure", "10m"],
        "pressure: '10m' is too small (allowed: at least 64M)",
    );
    assert_exit_2(&["pressure", "lots"], "'lots' is not a size");
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let after = stat.rsplit_once(") ")?.1;
            let ppid: u32 = after.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == pid).then(|| e.file_name().to_string_lossy().parse().ok())?
        })
        .collect()
}

/// Whether process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            s.rsplit_once(") ")
                .map(|(_, after)| !after.starts_with('Z'))
        })
        .unwrap_or(false)
}

/// Ctrl-C during pause-bench lets the current run finish as in every bench; a second one
/// quits at once, and neither the slow log's FIFO directory nor the pressure process stays.
#[test]
fn an_interrupted_pause_bench_leaves_no_load_behind() {
    let out = scratch("stall-pause-bench-signals").join("out");
    let mut child = command(&[
        "pause-bench",
        "--seconds",
        "2",
        "--heap",
        "1536m",
        "--loads",
        "pressure,slow-log",
        "--memory-pressure",
        "128m",
        "--log-modes",
        "sync",
        "--thp",
        "never",
        "--repeat",
        "20",
        "--no-report",
        "--out",
        out.to_str().unwrap(),
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let wait_for = |wanted: &str| {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(wanted) => return,
                Ok(_) => {}
                Err(e) => panic!("no line with '{wanted}': {e}"),
            }
        }
    };
    // Run 3 is under pressure: its process is a child of pause-bench.
    wait_for("[2/40]");
    let begin = Instant::now();
    let pressure = loop {
        if let Some(p) = children_of(pid).first() {
            break *p;
        }
        assert!(
            begin.elapsed() < Duration::from_secs(20),
            "no pressure process"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let sigint = |p: u32| {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped yet.
        assert_eq!(unsafe { libc::kill(p as i32, libc::SIGINT) }, 0);
    };
    sigint(pid);
    wait_for("interrupted by SIGINT: the current run finishes");
    sigint(pid);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let e: Value =
        serde_json::from_slice(&std::fs::read(out.join("experiment.json")).unwrap()).unwrap();
    assert!(e["runs"].as_array().is_some_and(|r| !r.is_empty()), "{e}");
    let prefix = format!("concord-slow-log.{pid}.");
    let begin = Instant::now();
    loop {
        let fifo_dirs = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|d| d.file_name().to_string_lossy().starts_with(&prefix))
            .count();
        let pressure_alive = alive(pressure);
        if fifo_dirs == 0 && !pressure_alive {
            break;
        }
        assert!(
            begin.elapsed() < Duration::from_secs(10),
            "{fifo_dirs} FIFO directories left; pressure process alive: {pressure_alive}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `/proc/meminfo` with `available` bytes available.
fn write_meminfo(path: &Path, available: u64) {
    let text = format!(
        "MemTotal:       {} kB\nMemAvailable:   {} kB\n",
        16u64 << 20,
        available / 1024
    );
    let staged = path.with_extension("new");
    std::fs::write(&staged, text).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

/// When `MemAvailable` falls below the floor the pressure process gives memory back at once,
/// and takes it again once there is room.
#[test]
fn pressure_gives_memory_back_below_the_floor_and_takes_it_again() {
    let dir = scratch("stall-pressure-floor");
    let meminfo = dir.join("meminfo");
    write_meminfo(&meminfo, 8 << 30);
    let mut child = command(&[
        "pressure",
        "256m",
        "--floor",
        "1g",
        "--for-parent",
        "--meminfo",
        meminfo.to_str().unwrap(),
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(
        lines.next().unwrap().unwrap(),
        format!("ready {}", 256 << 20)
    );
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // 900 MiB available, 124 MiB under the 1 GiB floor: it gives back two chunks to cover that
    // and one more.
    write_meminfo(&meminfo, 900 << 20);
    let line = rx.recv_timeout(Duration::from_secs(10)).expect("a notice");
    assert!(
        line.contains("is below the floor 1.0G: gave back 192M, holding 64M"),
        "{line}"
    );
    // Room again: it takes its chunks back, up to what was asked.
    write_meminfo(&meminfo, 8 << 30);
    let line = rx.recv_timeout(Duration::from_secs(60)).expect("a notice");
    assert!(
        line.contains("has room again: holding 256M as before"),
        "{line}"
    );
    drop(child.stdin.take());
    let done = lines.next().unwrap().unwrap();
    assert_eq!(
        done,
        format!("done {} {} {}", 256 << 20, 192 << 20, 256 << 20)
    );
    assert!(child.wait().unwrap().success());
}
