//! `concord thp-tuner` (002 Fig. 3) on a copy of the THP directory and of the proc files it
//! reads: it writes its decision, puts back what it found when it stops (`--once`, SIGTERM),
//! writes nothing in a dry run, and on the real `/sys` runs as a dry run without changing it.

mod common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::{command, concord, scratch, text};

const ENABLED: &str = "always [madvise] never\n";
const DEFRAG: &str = "always defer defer+madvise [madvise] never\n";

/// A THP directory and a proc directory with `MemAvailable` of `available_kib`.
fn fixture(name: &str, available_kib: u64) -> (PathBuf, PathBuf) {
    let root = scratch(name);
    let thp = root.join("thp");
    let proc = root.join("proc");
    fs::create_dir_all(thp.join("khugepaged")).unwrap();
    fs::create_dir_all(&proc).unwrap();
    fs::write(thp.join("enabled"), ENABLED).unwrap();
    fs::write(thp.join("defrag"), DEFRAG).unwrap();
    fs::write(thp.join("khugepaged/defrag"), "1\n").unwrap();
    let meminfo = format!("MemTotal: 8000000 kB\nMemAvailable: {available_kib} kB\n");
    fs::write(proc.join("meminfo"), meminfo).unwrap();
    fs::write(proc.join("vmstat"), "pgscan_direct 0\n").unwrap();
    (thp, proc)
}

/// The chosen value of a THP file (bracketed, or the plain value the tuner writes).
fn chosen(dir: &Path, name: &str) -> String {
    let t = fs::read_to_string(dir.join(name)).unwrap();
    match t.split_once('[') {
        Some((_, rest)) => rest.split_once(']').unwrap().0.to_string(),
        None => t.trim().to_string(),
    }
}

fn tuner_args<'a>(thp: &'a Path, proc: &'a Path, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "thp-tuner",
        "--sysfs-dir",
        thp.to_str().unwrap(),
        "--proc-dir",
        proc.to_str().unwrap(),
        "--period",
        "10ms",
        "--min-available",
        "1g",
    ];
    args.extend_from_slice(more);
    args
}

#[test]
fn low_memory_turns_thp_off_and_once_restores_what_it_found() {
    let (thp, proc) = fixture("thp-tuner-once", 1000);
    let out = concord(&tuner_args(&thp, &proc, &["--once"]));
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("MemAvailable 1000K (min 1G)")
            && stdout.contains("-> enabled=never (written)"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("restored enabled=madvise defrag=madvise khugepaged/defrag=1")
    );
    for (name, value) in [
        ("enabled", "madvise"),
        ("defrag", "madvise"),
        ("khugepaged/defrag", "1"),
    ] {
        assert_eq!(chosen(&thp, name), value, "{name}");
    }
}

#[test]
fn sigterm_restores_the_settings_it_changed() {
    let (thp, proc) = fixture("thp-tuner-sigterm", 1000);
    let mut child = command(&tuner_args(&thp, &proc, &[]))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Wait for the first written decision, then look at the file while it runs.
    let written = lines
        .by_ref()
        .map(Result::unwrap)
        .find(|l| l.ends_with("(written)"))
        .expect("a written decision");
    assert!(written.contains("enabled=never"), "{written}");
    assert_eq!(chosen(&thp, "enabled"), "never");
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(143), "{}", text(&out.stderr));
    assert_eq!(chosen(&thp, "enabled"), "madvise");
}

#[test]
fn a_dry_run_writes_nothing_and_so_does_a_tuner_that_cannot_write() {
    let (thp, proc) = fixture("thp-tuner-dry", 1000);
    let out = concord(&tuner_args(&thp, &proc, &["--once", "--dry-run"]));
    assert!(out.status.success());
    assert!(text(&out.stdout).contains("-> enabled=never (dry run: not written)"));
    assert_eq!(fs::read_to_string(thp.join("enabled")).unwrap(), ENABLED);
    // A file it cannot write (missing here; as root, permissions do not stop it).
    fs::remove_file(thp.join("khugepaged/defrag")).unwrap();
    let out = concord(&tuner_args(&thp, &proc, &["--once"]));
    assert!(out.status.success());
    assert!(
        text(&out.stderr).contains("cannot write the THP files"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(fs::read_to_string(thp.join("enabled")).unwrap(), ENABLED);
}

#[test]
fn on_the_real_sys_a_dry_run_prints_one_decision_and_changes_nothing() {
    let dir = Path::new("/sys/kernel/mm/transparent_hugepage");
    let before = fs::read_to_string(dir.join("enabled")).expect("THP in this kernel");
    let out = concord(&["thp-tuner", "--dry-run", "--once", "--period", "100ms"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.contains("MemAvailable ") && stdout.contains("-> enabled="),
        "{stdout}"
    );
    assert_eq!(fs::read_to_string(dir.join("enabled")).unwrap(), before);
}

#[test]
fn bad_periods_and_limits_are_bad_input() {
    for (args, expected) in [
        (
            vec!["thp-tuner", "--period", "2h"],
            "--period: '2h' is not a period",
        ),
        (
            vec!["thp-tuner", "--max-khugepaged-cpu", "150"],
            "--max-khugepaged-cpu: '150' is out of range",
        ),
        (
            vec!["thp-tuner", "--sysfs-dir", "/nonexistent", "--once"],
            "no THP settings in /nonexistent",
        ),
    ] {
        let out = concord(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            text(&out.stderr).contains(expected),
            "{}",
            text(&out.stderr)
        );
    }
}
