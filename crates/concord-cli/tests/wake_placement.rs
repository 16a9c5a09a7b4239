//! `bench/sched/wake_placement.sh`, the script that records where this machine's kernel puts a
//! woken thread: its parser on a hand-written trace, and the script end to end with tracefs.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::scratch;

fn script_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/sched")
}

/// The summary's JSON line (the last line of the output).
fn summary(stdout: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(stdout);
    let last = text.lines().last().expect("a summary");
    serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Hand-worked wake-ups: pid 100 (the waker, busy on CPU 0) wakes 101 three times. First 101's
/// previous CPU 1 is idle and it goes there; then CPU 1 is idle and it is put on CPU 0, the
/// waker's (packed, with an idle CPU elsewhere); last CPU 1 runs another task and 101 goes to
/// CPU 0 (no idle CPU elsewhere).
#[test]
fn the_parser_tells_each_placement() {
    let dir = scratch("wake-placement-parser");
    let trace = dir.join("trace.txt");
    std::fs::write(
        &trace,
        "\
# tracer: nop
          <idle>-0       [001] d..2.   10.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
        pingpong-100     [000] d..2.   10.000100: sched_waking: comm=pingpong pid=101 prio=120 target_cpu=001
        pingpong-100     [000] d..2.   10.000110: sched_wakeup: comm=pingpong pid=101 prio=120 target_cpu=001
          <idle>-0       [001] d..2.   10.000120: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=pingpong next_pid=101 next_prio=120
        pingpong-101     [001] d..2.   10.000200: sched_switch: prev_comm=pingpong prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
        pingpong-100     [000] d..2.   10.001000: sched_waking: comm=pingpong pid=101 prio=120 target_cpu=001
        pingpong-100     [000] d..2.   10.001010: sched_wakeup: comm=pingpong pid=101 prio=120 target_cpu=000
          <idle>-0       [001] d..2.   10.001500: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=other next_pid=555 next_prio=120
        pingpong-100     [000] d..2.   10.002000: sched_waking: comm=pingpong pid=101 prio=120 target_cpu=001
        pingpong-100     [000] d..2.   10.002010: sched_wakeup: comm=pingpong pid=101 prio=120 target_cpu=000
",
    )
    .unwrap();
    let o = Command::new("python3")
        .arg(script_dir().join("wake_placement.py"))
        .args([trace.to_str().unwrap(), "100"])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = summary(&o.stdout);
    assert_eq!(s["wakeups"], 3);
    assert_eq!(s["on_waker_cpu"], 2);
    assert_eq!(s["on_previous_cpu"], 1);
    assert_eq!(s["previous_idle_elsewhere"], 2);
    assert_eq!(s["packed_onto_busy_waker"], 1);
    assert_eq!(s["idle_cpu_elsewhere"], 2);
    assert_eq!(s["on_busy_waker_despite_idle_cpu"], 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The script records real wake-ups in both modes and keeps its evidence (no placement is
/// asserted: that is what it measures).
#[test]
#[cfg_attr(
    no_tracefs,
    ignore = "needs root with tracefs at /sys/kernel/tracing, cc and python3"
)]
fn the_script_records_wake_ups_with_tracefs() {
    for mode in ["busy", "handoff", "light"] {
        let out = scratch(&format!("wake-placement-{mode}"));
        let o = Command::new("bash")
            .arg(script_dir().join("wake_placement.sh"))
            .args([out.to_str().unwrap(), "40", "200", mode])
            .output()
            .expect("bash runs");
        assert!(
            o.status.success(),
            "{mode}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let s = summary(&o.stdout);
        let n = s["wakeups"].as_u64().unwrap();
        // A wake-up that finds the sleeper still awake wakes nobody, so there may be fewer.
        assert!((10..=90).contains(&n), "{mode}: {s}");
        for field in [
            "on_waker_cpu",
            "on_previous_cpu",
            "previous_idle_elsewhere",
            "idle_cpu_elsewhere",
        ] {
            assert!(s[field].as_u64().unwrap() <= n, "{mode}: {s}");
        }
        assert!(s["packed_onto_busy_waker"].as_u64() <= s["previous_idle_elsewhere"].as_u64());
        for file in ["trace.txt", "machine.txt", "summary.txt"] {
            assert!(out.join(file).is_file(), "{mode}: {file}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
    // A bad mode is refused before anything is traced.
    let out = scratch("wake-placement-bad");
    let o = Command::new("bash")
        .arg(script_dir().join("wake_placement.sh"))
        .args([out.to_str().unwrap(), "40", "200", "sideways"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    std::fs::remove_dir_all(&out).unwrap();
}
