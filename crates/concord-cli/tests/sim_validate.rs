//! `concord sim validate` end to end: the quick grid prints every cell with a real and a
//! simulated median pause, a ratio consistent with them, the groups' orders and the headline
//! shares; bad flags exit 2 before anything runs.

mod common;

use std::os::unix::process::CommandExt as _;

use common::{assert_exit_2, command, concord, scratch, stdout_json, text};

#[test]
fn the_quick_grid_prints_every_cell_real_and_simulated() {
    let dir = scratch("sim-validate-quick");
    let keep = dir.join("kept");
    let o = concord(&[
        "sim",
        "validate",
        "--quick",
        "--json",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json = stdout_json(&o);
    let cells = json["cells"].as_array().unwrap();
    // binary-trees 14 × {vanilla, optimized} × {none, busy:1@0} × {2}.
    assert_eq!(cells.len(), 4, "{json:#}");
    let mut loads = Vec::new();
    for c in cells {
        assert_eq!(c["workload"], "binary-trees 14");
        assert_eq!(c["gc_threads"], 2);
        let (real, sim) = (
            c["real_gc_ms"].as_f64().unwrap(),
            c["sim_gc_ms"].as_f64().unwrap(),
        );
        assert!(real > 0.0 && sim > 0.0, "{c}");
        let ratio = c["ratio"].as_f64().unwrap();
        assert!((ratio - sim / real).abs() < 1e-9, "{c}");
        assert_eq!(c["within"], (ratio - 1.0).abs() <= 0.25, "{c}");
        assert_eq!(c["real_runs_ms"].as_array().unwrap().len(), 1);
        // One run is its own median.
        assert_eq!(c["real_stable"], true);
        assert!(c["real_collections"].as_u64().unwrap() > 0);
        assert_eq!(c["real_collections"], c["sim_collections"], "{c}");
        loads.push(c["load"].as_str().unwrap().to_string());
    }
    loads.dedup();
    assert_eq!(loads, ["none", "busy:1@0"]);
    let presets: Vec<&str> = cells
        .iter()
        .map(|c| c["preset"].as_str().unwrap())
        .collect();
    assert_eq!(presets, ["vanilla", "optimized", "vanilla", "optimized"]);
    let groups = json["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 2);
    let within = cells.iter().filter(|c| c["within"] == true).count() as f64 / 4.0;
    assert_eq!(json["within_25pct"].as_f64().unwrap(), within);
    let same = groups.iter().filter(|g| g["same_order"] == true).count() as f64 / 2.0;
    assert_eq!(json["same_order"].as_f64().unwrap(), same);
    assert_eq!(json["within_25pct_pass"], within >= 0.8);
    assert_eq!(json["real_stable_share"], 1.0);
    // --keep keeps the traces and every run's records.
    let kept = common::entries(&keep);
    assert_eq!(kept.iter().filter(|f| f.ends_with(".trace")).count(), 2);
    assert_eq!(kept.iter().filter(|f| f.ends_with(".jsonl")).count(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn without_keep_the_temporary_files_are_removed() {
    let tmp = scratch("sim-validate-tmp");
    let o = command(&["sim", "validate", "--quick", "--repeat", "2"])
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let table = text(&o.stdout);
    assert!(
        table.contains("binary-trees 14  optimized  busy:1@0"),
        "{table}"
    );
    assert!(table.contains("cells within ±25%: "), "{table}");
    assert!(table.contains("2 real run(s) per cell"), "{table}");
    assert!(
        table.contains("cells whose real runs all lie within ±25%"),
        "{table}"
    );
    // Progress went to stderr: 2 traces, 4 cells × 2 runs, 4 simulations.
    assert!(
        text(&o.stderr).contains("[14/14] simulating"),
        "{}",
        text(&o.stderr)
    );
    assert_eq!(common::entries(&tmp), Vec::<String>::new());
    std::fs::remove_dir_all(&tmp).unwrap();
}

#[test]
fn a_run_that_fails_is_exit_1_and_named() {
    let keep = scratch("sim-validate-fails");
    // A directory where the first real run's records go: that run is refused.
    std::fs::create_dir(keep.join("binary-trees-14-vanilla-2t-none-run1.jsonl")).unwrap();
    let o = concord(&[
        "sim",
        "validate",
        "--quick",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`concord run binary-trees 14 --preset vanilla --gc-threads 2 --json")
            && stderr.contains("failed (exit status: 2)"),
        "{stderr}"
    );
    assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    std::fs::remove_dir_all(&keep).unwrap();
}

#[test]
fn bad_flags_exit_2() {
    let dir = scratch("sim-validate-bad");
    let file = dir.join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let costs = dir.join("costs.json");
    std::fs::write(&costs, "{\"version\": 999}").unwrap();
    for (args, expected) in [
        (&["sim", "validate", "--repeat", "0"][..], "--repeat"),
        (&["sim", "validate", "--repeat", "many"], "--repeat"),
        (&["sim", "validate", "--cpus", "4"], "--cpus"),
        (
            &["sim", "validate", "--keep", file.to_str().unwrap()],
            "is not a directory (allowed: a directory",
        ),
        (
            &["sim", "validate", "--costs", costs.to_str().unwrap()],
            "--costs: ",
        ),
    ] {
        assert_exit_2(args, expected);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--costs /dev/zero` is refused at once as a character device, as `--config /dev/zero` is
/// (it used to be read until memory ran out: 24 GB, then the OOM killer), here under a 2 GiB
/// address-space limit; and the hint names a regular file to write, not the device.
#[test]
fn a_costs_file_that_is_a_device_is_refused_within_a_memory_bound() {
    for args in [
        &["sim", "validate", "--quick", "--costs", "/dev/zero"][..],
        &["sim", "gcbench", "--cpus", "4", "--costs", "/dev/zero"],
    ] {
        let mut c = command(args);
        // SAFETY: between fork and exec only setrlimit, async-signal-safe, is called, on a
        // value owned by the closure.
        unsafe {
            c.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let o = c.output().unwrap();
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(
                "--costs: cannot read the calibration /dev/zero: it is a character device, not a \
                 regular file (allowed: a regular file or a pipe of at most 1M)"
            ),
            "{args:?}: {stderr}"
        );
        assert!(
            stderr.contains("--out concord-costs.json` and give that file")
                && !stderr.contains("--out /dev/zero"),
            "{args:?}: {stderr}"
        );
        assert!(o.stdout.is_empty(), "{args:?}: {}", text(&o.stdout));
    }
}

/// A costs file in the `--keep` directory under a name the validation writes there would be
/// replaced by a run's trace or records: refused before anything runs, the file untouched.
#[test]
fn a_costs_file_the_validation_would_overwrite_is_refused() {
    let keep = scratch("sim-validate-costs-in-keep");
    let costs = keep.join("binary-trees-14-vanilla-2t.trace");
    let o = concord(&[
        "sim",
        "calibrate",
        "--quick",
        "--out",
        costs.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let before = std::fs::read(&costs).unwrap();
    assert_exit_2(
        &[
            "sim",
            "validate",
            "--quick",
            "--keep",
            keep.to_str().unwrap(),
            "--costs",
            costs.to_str().unwrap(),
        ],
        "names the same file as --costs",
    );
    assert_eq!(std::fs::read(&costs).unwrap(), before);
    assert_eq!(
        std::fs::read_dir(&keep).unwrap().count(),
        1,
        "nothing else written"
    );
    std::fs::remove_dir_all(&keep).unwrap();
}
