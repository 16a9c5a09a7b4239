//! The OS switches, the interference harness and the OS benchmarks, end to end: bad values are
//! bad input (exit status 2) naming what is allowed; runs with busy loops and co-running
//! processes keep their checksums; a failed or signalled co-run leaves no process behind;
//! `os-bench` and `sched-bench` print well-formed JSON and write their results directories;
//! the logger shows notices as `concord: …` as `CONCORD_LOG` chooses.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{argv, check_results, command, concord, json_into, json_of, scratch, small, text};
use serde_json::Value;

#[test]
fn bad_values_of_the_new_flags_are_bad_input_naming_the_allowed_values() {
    let cases: &[(&[&str], &[&str])] = &[
        (
            &argv("run gcbench --gc-affinity pinned"),
            &["--gc-affinity: 'pinned'", "allowed: none, static, dynamic"],
        ),
        (
            &argv("run gcbench --mutator-sched rr"),
            &[
                "--mutator-sched: 'rr'",
                "allowed: cfs, fifo, profile:PATH, adaptive[:SECONDS] or \
                 adaptive-majority[:SECONDS]",
            ],
        ),
        (
            &argv("run gcbench --mutator-sched adaptive:0"),
            &[
                "--mutator-sched: 'adaptive:0'",
                "allowed: seconds from 0.01 to 3600",
            ],
        ),
        (
            &argv("run gcbench --fifo-scope everything"),
            &["--fifo-scope: 'everything'", "allowed: mutators, all"],
        ),
        (
            &argv("run gcbench --mutator-sched profile:"),
            &["--mutator-sched: 'profile:'", "profile:PATH"],
        ),
        (
            &argv("run gcbench --fifo-cpu-threshold 4097"),
            &["--fifo-cpu-threshold: '4097'", "allowed: 0..=4096"],
        ),
        (
            &argv("run gcbench --interfere spin:2"),
            &[
                "'spin:2'",
                "allowed: busy:K or busy:K@CPU with K in 1..=1024",
            ],
        ),
        (
            &argv("run gcbench --interfere busy:0"),
            &[
                "'busy:0'",
                "allowed: busy:K or busy:K@CPU with K in 1..=1024",
            ],
        ),
        (
            &argv("run gcbench --interfere busy:1@one"),
            &["'busy:1@one'", "busy:K@CPU"],
        ),
        (
            &argv("run gcbench --heap 8m --interfere busy:1@4095"),
            &["busy-loop CPU 4095 is not one this process may run on (allowed: "],
        ),
        (
            &argv("os-bench gcbench --busy-cpu 4095"),
            &["--busy-cpu: busy-loop CPU 4095 is not one this process may run on"],
        ),
        (&argv("run gcbench --co-run 65"), &["--co-run", "1..=64"]),
        (&argv("run gcbench --co-run 0"), &["--co-run", "1..=64"]),
        (&["os-bench", "--busy", "0"], &["--busy", "1..=1024"]),
        (
            &["os-bench", "--gc-affinity", "static"],
            &["--gc-affinity cannot be used with os-bench"],
        ),
        (
            &["sched-bench", "--mutator-sched", "fifo"],
            &["--mutator-sched cannot be used with sched-bench"],
        ),
        (
            &argv("run gcbench --gc-threads 0"),
            &["--gc-threads: '0' is out of range (allowed: 1..=256)"],
        ),
        (
            &["sched-bench", "--adaptive-period", "0"],
            &["'adaptive:0'", "allowed: seconds from 0.01 to 3600"],
        ),
    ];
    for (args, expected) in cases {
        let out = concord(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        for text in *expected {
            assert!(stderr.contains(text), "{args:?}: {stderr}");
        }
    }
}

#[test]
fn run_with_busy_loops_keeps_the_checksum_and_shows_the_switches() {
    let v = json_of(&argv("run binary-trees 10 --heap 8m --interfere busy:2 --gc-affinity static --mutator-sched cfs --json"));
    assert_eq!(v["checksum_ok"], true, "{v}");
    assert!(v["interference"].as_str().unwrap().starts_with("busy:2"));
    assert_eq!(v["gc_affinity"], "static");
    assert_eq!(v["mutator_sched"], "cfs");
    // Summed over the mutator threads, which switch: they block at a collection's safepoint
    // (unless its wait ends while still spinning) and the two busy loops preempt them.
    let switches = &v["mutator_context_switches"];
    let count = |kind: &str| switches[kind].as_u64().unwrap_or_else(|| panic!("{v}"));
    assert!(count("voluntary") + count("involuntary") > 0, "{v}");

    let out = concord(&small("run", "10", &["--preset", "vanilla"]));
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("gc-affinity none, mutator-sched cfs"),
        "{text}"
    );
}

/// `--fifo-scope all`: the GC workers and the VM thread go under SCHED_FIFO with the mutators
/// (5 FIFO threads on this machine's CPUs, the kernel's real-time throttle on), the run ends
/// and the heap verifies after every collection.
#[test]
#[cfg_attr(
    no_sched_fifo,
    ignore = "needs the right to use SCHED_FIFO when the tests were built: root, CAP_SYS_NICE or `ulimit -r 1`"
)]
fn fifo_scope_all_puts_the_runtime_threads_under_fifo_and_the_heap_verifies() {
    let throttle = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap();
    assert_ne!(
        throttle.trim(),
        "-1",
        "the real-time throttle is off: the run would be refused (tested in run.rs)"
    );
    let v = json_of(&argv(
        "run binary-trees 12 --heap 16m --young 2m --gc-threads 2 --mutators 2 \
         --mutator-sched fifo --fifo-scope all --verify --json",
    ));
    assert_eq!(v["checksum_ok"], true, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    assert!(v["gc_count"].as_u64().unwrap() > 0, "{v}");
    let r = &v["mutator_sched_report"];
    assert_eq!(r["fifo_scope"], "all", "{r}");
    assert_eq!(r["fifo_denied"], false, "{r}");
    // Two GC workers and the VM thread, each set to FIFO once; the mutators too.
    assert_eq!(r["runtime_threads"], 3, "{r}");
    assert!(r["fifo_sets"].as_u64().unwrap() >= 5, "{r}");
    assert!(r["failures"].as_array().unwrap().is_empty(), "{r}");
    // Mutators only (the default): the runtime threads are left alone.
    let v = json_of(&argv(
        "run binary-trees 10 --heap 8m --gc-threads 2 --mutator-sched fifo --json",
    ));
    let r = &v["mutator_sched_report"];
    assert_eq!(
        (&r["fifo_scope"], &r["runtime_threads"]),
        (&"mutators".into(), &0.into())
    );
}

#[test]
fn co_run_runs_separate_processes_and_reports_every_instance_and_the_aggregate() {
    let dir = scratch("co-run");
    let records = dir.join("records.jsonl");
    let mut args =
        argv("run binary-trees 10 --heap 8m --young 1m --co-run 3 --interfere busy:1 --json");
    args.extend(["--gc-records", records.to_str().unwrap()]);
    let child = command(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let parent = child.id();
    let out = child.wait_with_output().unwrap();
    let v = common::stdout_json(&out);
    assert_eq!(v["co_run"], 3);
    assert!(v["interference"]
        .as_str()
        .unwrap()
        .contains("parent process"));
    let instances = v["instances"].as_array().unwrap();
    assert_eq!(instances.len(), 3);
    let mut pids = Vec::new();
    let mut gc_sum = 0.0;
    let mut wall_max: f64 = 0.0;
    for (i, instance) in instances.iter().enumerate() {
        assert_eq!(instance["instance"], i + 1);
        assert_eq!(instance["checksum_ok"], true, "{instance}");
        assert!(
            instance.get("pauses_ms").is_none(),
            "internal field left in"
        );
        pids.push(instance["pid"].as_u64().unwrap());
        gc_sum += instance["gc_pause_total_ms"].as_f64().unwrap();
        wall_max = wall_max.max(instance["wall_ms"].as_f64().unwrap());
        // Each instance its own records file, one record per collection.
        let file = dir.join(format!("records.jsonl.{}", i + 1));
        let lines = std::fs::read_to_string(&file).unwrap().lines().count() as u64;
        assert_eq!(
            lines,
            instance["gc_count"].as_u64().unwrap(),
            "{}",
            file.display()
        );
    }
    pids.sort_unstable();
    pids.dedup();
    assert_eq!(pids.len(), 3, "every instance is its own process");
    assert!(!pids.contains(&u64::from(parent)), "not the parent process");
    assert_eq!(v["checksum_ok"], true);
    assert!((v["gc_pause_total_ms"].as_f64().unwrap() - gc_sum).abs() < 1e-9);
    assert_eq!(v["wall_ms"].as_f64().unwrap(), wall_max);
    assert_eq!(v["failed_instances"].as_array().unwrap().len(), 0);

    let out = concord(&small("run", "10", &["--co-run", "2"]));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("co-running processes"), "{stdout}");
    assert!(
        stdout.contains("instance 1  pid ") && stdout.contains("instance 2  pid "),
        "{stdout}"
    );
    assert!(stdout.contains("aggregate"), "{stdout}");
}

#[test]
fn a_failed_instance_is_reported_with_its_status_and_stderr() {
    // Every child fails to create its GC log; the parent never builds a heap.
    let out = concord(&argv(
        "run binary-trees 10 --heap 8m --co-run 2 --gc-log /nonexistent-concord-dir/gc.log --json",
    ));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    for n in 1..=2 {
        assert!(
            stderr.contains(&format!("concord: instance {n} (pid ")),
            "{stderr}"
        );
        assert!(
            stderr.contains(&format!("/nonexistent-concord-dir/gc.log.{n}")),
            "{stderr}"
        );
    }
    assert!(stderr.contains("failed: exit status 2"), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed_instances"].as_array().unwrap().len(), 2);
    assert_eq!(v["instances"].as_array().unwrap().len(), 0);
}

/// The children of process `parent`, from /proc.
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid …: the command name may hold spaces, so split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn sigterm_to_the_parent_leaves_no_instance_behind() {
    let (mut child, instances) = co_run_with_two_instances("");
    signal(child.id(), "-TERM");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "SIGTERM: 128 + 15");
    for pid in instances {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "instance {pid} outlived its parent"
        );
    }
}

/// A parent that cannot clean up (SIGKILL) still leaves nothing behind: each instance sees
/// its stdin close and exits, also once its workload runs (1000 rounds would take many
/// minutes).
#[test]
fn sigkill_to_the_parent_leaves_no_instance_behind() {
    let logs = scratch("sigkill-co-run");
    let (mut child, instances) = co_run_with_two_instances(&format!(
        " --rounds 1000 --gc-log {}",
        logs.join("gc.log").display()
    ));
    // Wait until both instances are past the start signal, in their workload: each has logged
    // a collection (its GC log, whatever the file is called while it is written, is in `logs`).
    let collecting = |n: u32| {
        std::fs::read_dir(&logs).unwrap().flatten().any(|e| {
            e.file_name()
                .to_string_lossy()
                .contains(&format!("gc.log.{n}"))
                && std::fs::read_to_string(e.path()).is_ok_and(|t| t.contains("Pause"))
        })
    };
    let start = Instant::now();
    while !(collecting(1) && collecting(2)) {
        // A hang guard, not a timing.
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the instances {instances:?} never collected (they stop as their stdin closes)");
        }
        // The interval between looks at the files.
        std::thread::sleep(Duration::from_millis(10));
    }
    signal(child.id(), "-KILL");
    child.wait().unwrap();
    let start = Instant::now();
    // Orphans are reaped by init once they exit; wait for that (a hang guard, not a timing).
    let alive = |pid: &u32| Path::new(&format!("/proc/{pid}")).exists();
    while instances.iter().any(alive) {
        if start.elapsed() > Duration::from_secs(60) {
            instances.iter().for_each(|&pid| signal(pid, "-KILL"));
            panic!("instances {instances:?} outlived their killed parent");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `concord run binary-trees 18 --co-run 2` (plus `extra` flags) started, with both instance
/// pids.
// The child goes back to the caller, which waits on it (clippy cannot see that).
#[allow(clippy::zombie_processes)]
fn co_run_with_two_instances(extra: &str) -> (std::process::Child, Vec<u32>) {
    let mut child = command(&argv(&format!(
        "run binary-trees 18 --heap 64m --co-run 2{extra}"
    )))
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let parent = child.id();
    let start = Instant::now();
    loop {
        let c = children_of(parent);
        if c.len() == 2 {
            return (child, c);
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no instances started");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Send `signal` (`-TERM`, `-KILL`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let sent = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

#[test]
fn notices_go_to_stderr_as_the_log_filter_says() {
    let args = ["run", "binary-trees", "8", "--heap", "8m", "--co-run", "2"];
    let quiet = concord(&args);
    assert!(quiet.status.success());
    assert!(!text(&quiet.stderr).contains("starting 2 instances"));
    let out = command(&args).env("CONCORD_LOG", "info").output().unwrap();
    assert!(out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr
            .lines()
            .any(|l| l == "concord: starting 2 instances of binary-trees as separate processes"),
        "{stderr}"
    );
}

#[test]
fn os_bench_prints_json_and_writes_its_directory() {
    let (v, out) = json_into(
        "os-bench",
        &argv("os-bench binary-trees 10 --heap 8m --repeat 1 --busy 1 --busy-cpu 0 --json --no-report"),
    );
    assert_eq!(v["busy"], 1);
    assert_eq!(v["busy_cpu"], 0);
    let configs = v["configurations"].as_array().unwrap();
    let labels: Vec<(&str, Option<&str>)> = configs
        .iter()
        .map(|c| (c["label"].as_str().unwrap(), c["interference"].as_str()))
        .collect();
    let variants = [
        "vanilla",
        "optimized/none",
        "optimized/static",
        "optimized/dynamic",
    ];
    let expected: Vec<(&str, Option<&str>)> = [None, Some("busy:1@0")]
        .into_iter()
        .flat_map(|load| variants.iter().map(move |l| (*l, load)))
        .collect();
    assert_eq!(labels, expected);
    for c in configs {
        assert_eq!(c["runs"].as_array().unwrap().len(), 1, "{c}");
        assert!(c["median"]["gc_ms"].as_f64().unwrap() > 0.0, "{c}");
    }
    // Ratios are relative to vanilla under the same interference.
    assert_eq!(configs[0]["gc_ratio"], 1.0);
    assert_eq!(configs[4]["gc_ratio"], 1.0);
    let e = check_results(&out, "os-bench", 8);
    let c = &e["configurations"][5];
    assert_eq!(c["label"], "optimized/none (busy:1@0)");
    assert_eq!(c["name"], "optimized/none");
    assert_eq!(
        c["group"],
        "busy:1@0: 1 busy-loop thread on CPU 0 during every run"
    );
    assert_eq!(e["parameters"]["busy"], 1);
}

#[test]
fn sched_bench_prints_json_and_writes_its_directory() {
    let args = [
        "sched-bench",
        "--small",
        "--heap",
        "8m",
        "--repeat",
        "1",
        "--json",
    ];
    let (v, out) = json_into("sched-bench", &args);
    assert_eq!(v["fifo_cpu_threshold"], 0);
    assert!(v["note"].as_str().unwrap().contains("fifo-cpu-threshold"));
    let configs = v["configurations"].as_array().unwrap();
    let got: Vec<(&str, &str)> = configs
        .iter()
        .map(|c| {
            (
                c["workload"].as_str().unwrap(),
                c["label"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("binary-trees", "cfs"),
            ("binary-trees", "fifo"),
            ("binary-trees", "adaptive"),
            ("gcbench", "cfs"),
            ("gcbench", "fifo"),
            ("gcbench", "adaptive"),
        ]
    );
    assert_eq!(configs[0]["mutators"], 4);
    assert_eq!(configs[3]["mutators"], 1);
    for c in configs {
        let settings = c["settings"].as_array().unwrap();
        assert!(
            settings.contains(&serde_json::json!("fifo-cpu-threshold=0")),
            "{c}"
        );
        assert!(c["median"]["wall_ms"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["median"]["mutator_voluntary_switches"].is_number(), "{c}");
        assert!(c["median"]["gc_involuntary_switches"].is_number(), "{c}");
    }
    let e = check_results(&out, "sched-bench", 6);
    assert_eq!(e["configurations"][3]["label"], "cfs (gcbench)");
    assert_eq!(e["configurations"][3]["workload"], "gcbench");
    let summary = common::read_json(&out.join(e["runs"][0]["summary"].as_str().unwrap()));
    assert!(
        summary["lifespans"]["buckets"].is_array(),
        "lifespans are on"
    );
    let page = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(page.contains("id=\"lifespans\"") && page.contains("id=\"policy-times\""));
}
