//! `concord run` with the parallel-phase switch flags: every preset runs, and a bad switch value
//! is bad input (exit status 2) with a message naming the flag, the value and the allowed names;
//! so is a flag, key or variable that only works with another one given without it, and a
//! `CONCORD_LOG` filter that names no level or module of concord.

mod common;

use common::{argv, assert_exit_2, command, concord, scratch, small, text};

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

/// A flag that only works with another is refused without it (it used to be ignored),
/// naming the flag it needs; from the configuration file or the environment the same, named
/// where it was given. With what it needs, it runs.
#[test]
fn flags_that_need_another_are_refused_without_it() {
    for (more, expected) in [
        (
            &["--pressure-floor", "1g"][..],
            "--pressure-floor needs memory pressure (--memory-pressure SIZE)",
        ),
        (
            &["--io-load-dir", "/tmp"],
            "--io-load-dir needs the I/O load (--io-load CAP)",
        ),
        (
            &["--slow-log", "16k"],
            "--slow-log needs a GC log (--gc-log PATH, key gc-log or CONCORD_GC_LOG)",
        ),
        (
            &["--gc-log-compress"],
            "--gc-log-compress: needs gc-log PATH, but gc-log is not set (the default)",
        ),
        (
            &["--gc-log-mode", "sync"],
            "--gc-log-mode: needs gc-log PATH",
        ),
        (
            &["--gc-log-buffer", "8k"],
            "--gc-log-buffer: needs gc-log PATH",
        ),
        (
            &["--gc-log-flush-timeout", "10"],
            "--gc-log-flush-timeout: needs gc-log PATH",
        ),
        (
            &["--thp-margin", "1g"],
            "--thp-margin: needs thp dynamic, but thp is system (the default)",
        ),
        (
            &["--thp", "never", "--thp-margin", "1g"],
            "--thp-margin: needs thp dynamic, but --thp is never",
        ),
        (
            &["--lifespan-sample-bytes", "8k"],
            "--lifespan-sample-bytes: needs lifespans true, but lifespans is false (the \
             default): it spaces the objects the lifespan profiler samples (allowed: \
             --lifespans as well, or no --lifespan-sample-bytes)",
        ),
        (
            &["--fifo-scope", "all"],
            "--fifo-scope: needs mutator-sched fifo, profile:PATH, adaptive or \
             adaptive-majority, but mutator-sched is cfs (the default)",
        ),
        (
            &["--mutator-sched", "cfs", "--fifo-cpu-threshold", "0"],
            "--fifo-cpu-threshold: needs mutator-sched fifo, profile:PATH, adaptive or \
             adaptive-majority, but --mutator-sched is cfs",
        ),
    ] {
        assert_exit_2(&small("run", "8", more), expected);
    }
    // The same keys from the configuration file and the environment, named there.
    let dir = scratch("cli-needs-another");
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        "lifespan_sample_bytes = \"8k\"\nnew-ratio = 3\nyoung = \"2m\"\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    for (more, vars, expected) in [
        (
            vec!["--config", path],
            vec![],
            format!(
                "lifespan_sample_bytes in {path}: needs lifespans true, but lifespans is false \
                 (the default): it spaces the objects the lifespan profiler samples (allowed: \
                 lifespans = true as well, or no lifespan_sample_bytes in {path})"
            ),
        ),
        (
            vec!["--config", path, "--lifespans"],
            vec![],
            format!("new-ratio in {path}: needs young auto, but young in {path} is 2M"),
        ),
        (
            vec!["--thp", "never"],
            vec![("CONCORD_THP_MARGIN", "1g")],
            "CONCORD_THP_MARGIN: needs thp dynamic, but --thp is never: it is the memory \
             dynamic THP keeps available beyond the heap, and no other mode reads it (allowed: \
             CONCORD_THP=dynamic as well, or no CONCORD_THP_MARGIN)"
                .to_string(),
        ),
        (
            vec![],
            vec![("CONCORD_GC_LOG_COMPRESS", "true")],
            "CONCORD_GC_LOG_COMPRESS: needs gc-log PATH".to_string(),
        ),
    ] {
        let o = command(&small("run", "8", &more))
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{more:?} {vars:?}: {stderr}");
        assert!(stderr.contains(&expected), "{more:?} {vars:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{more:?} ran");
    }
    // `sim` builds its configuration as `run` does: the same refusal.
    assert_exit_2(
        &small(
            "sim",
            "8",
            &["--cpus", "2", "--lifespan-sample-bytes", "8k"],
        ),
        "--lifespan-sample-bytes: needs lifespans true",
    );
    // With what they need they run, the GC log also from the environment (the slow log's
    // copy goes there).
    let log = dir.join("gc.log");
    let o = command(&small(
        "run",
        "8",
        &[
            "--lifespans",
            "--lifespan-sample-bytes",
            "8k",
            "--thp",
            "dynamic",
            "--thp-margin",
            "1m",
            "--slow-log",
            "1m",
            "--gc-log-compress",
        ],
    ))
    .env("CONCORD_GC_LOG", &log)
    .output()
    .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        std::fs::metadata(&log).unwrap().len() > 0,
        "the log reached CONCORD_GC_LOG"
    );
}

/// `CONCORD_LOG` must name levels and modules of concord: `bogus` (a module that logs
/// nothing, which the logger took silently) is bad input, for every command.
#[test]
fn a_log_filter_naming_nothing_of_concord_is_refused() {
    for (filter, expected) in [
        (
            "bogus",
            "CONCORD_LOG: 'bogus' is neither a log level nor a module of concord (allowed: \
             comma-separated levels off, error, warn, info, debug, trace and MODULE=LEVEL with \
             MODULE concord or a module of it, e.g. concord=info,warn)",
        ),
        ("concord=loud", "CONCORD_LOG: 'loud' is not a log level"),
    ] {
        for args in [&small("run", "4", &[])[..], &["paper"]] {
            let o = command(args).env("CONCORD_LOG", filter).output().unwrap();
            let stderr = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{filter} {args:?}: {stderr}");
            assert!(stderr.contains(expected), "{filter}: {stderr}");
            assert!(o.stdout.is_empty());
        }
    }
    let o = command(&small("run", "4", &[]))
        .env("CONCORD_LOG", "concord=info,warn")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
}
