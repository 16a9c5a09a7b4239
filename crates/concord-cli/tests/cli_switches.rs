//! `concord run` with the parallel-phase switch flags: every preset runs, and a bad switch value
//! is bad input (exit status 2) with a message naming the flag, the value and the allowed names.

mod common;

use common::{argv, concord};

#[test]
fn bad_steal_policy_exits_with_status_2_naming_the_allowed_values() {
    let out = concord(&argv("run gcbench --steal random"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "--steal: 'random' is not a steal policy (allowed: best-of-2, last-victim, adaptive)"
        ),
        "{stderr}"
    );
}

#[test]
fn bad_switch_values_are_bad_input() {
    for (flag, value, allowed) in [
        ("--task-queue", "fifo", "monitor, claim, lockfree"),
        ("--termination", "never", "fixed, owst, live"),
        ("--parking", "spin", "monitor, futex"),
        (
            "--task-affinity",
            "sometimes",
            "true, false, yes, no, on, off",
        ),
        ("--gc-threads", "auto", "1..=256, dynamic"),
    ] {
        let out = concord(&["run", "gcbench", flag, value]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(&format!("{flag}: '{value}'")), "{stderr}");
        assert!(stderr.contains(allowed), "{stderr}");
    }
    let out = concord(&["run", "gcbench", "--pin-start=perhaps"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--pin-start: 'perhaps'"));
}

#[test]
fn every_preset_runs() {
    for preset in ["vanilla", "modern", "optimized"] {
        let out = concord(&[
            "run",
            "binary-trees",
            "4",
            "--heap",
            "8m",
            "--preset",
            preset,
            "--json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{preset}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains(&format!("\"preset\": \"{preset}\"")),
            "{stdout}"
        );
    }
}
