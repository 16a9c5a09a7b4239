//! `concord run` and the machine's limits: a heap larger than the memory the process can have
//! is bad input (status 2) with a message saying how to allow it, and under `ulimit -v` a run
//! either works or says what could not be had: never an abort.

mod common;

use std::process::Command;

use common::{command, concord, text};
use concord::config::{format_size, GIB, MAX_HEAP, MIB};
use concord::os::memory::memory_limit;
use concord_workloads::{lookup, WorkloadParams};

/// The memory this process can have, bytes (physical memory or the cgroup limit).
fn machine_limit() -> usize {
    let limit = memory_limit()
        .unwrap()
        .expect("/proc/meminfo gives physical memory");
    usize::try_from(limit.bytes).expect("a 64-bit target")
}

/// Default heaps of binary-trees grow with the depth (24G at 26 and 384G at 30): the shallowest
/// depth whose default heap is beyond this machine is refused, and so is a `--heap` beyond it;
/// the flag and the environment variable let such a heap be built.
#[test]
fn heaps_beyond_the_machine_are_refused_unless_allowed() {
    let limit = machine_limit();
    if limit >= MAX_HEAP {
        // No heap a configuration accepts is beyond this machine: the largest one runs.
        let out = concord(&["run", "binary-trees", "4", "--heap", &format_size(MAX_HEAP)]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        return;
    }
    let binary_trees = lookup("binary-trees").unwrap();
    let default_heap = |depth| {
        binary_trees.default_heap(&WorkloadParams {
            size: Some(depth),
            ..WorkloadParams::default()
        })
    };
    let mut refused = Vec::new();
    if let Some(depth) = (4..=30).find(|&d| default_heap(d) > limit) {
        refused.push((vec![depth.to_string()], default_heap(depth)));
    }
    let beyond = (limit + 1).next_multiple_of(GIB).min(MAX_HEAP);
    refused.push((
        vec!["4".into(), "--heap".into(), format_size(beyond)],
        beyond,
    ));
    for (args, heap) in &refused {
        let mut argv = vec!["run", "binary-trees"];
        argv.extend(args.iter().map(String::as_str));
        let out = concord(&argv);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{argv:?}: {stderr}");
        for part in [
            format!("concord: the heap ({}) is larger than ", format_size(*heap)),
            "/proc/meminfo".to_string(),
            "--allow-heap-beyond-memory".to_string(),
            "CONCORD_ALLOW_HEAP_BEYOND_MEMORY=true".to_string(),
        ] {
            // The limit may come from a cgroup file instead of /proc/meminfo.
            if part == "/proc/meminfo" && !stderr.contains("physical memory") {
                assert!(stderr.contains("cgroup"), "{stderr}");
                continue;
            }
            assert!(stderr.contains(&part), "{part:?} not in {stderr}");
        }
    }
    let heap = format_size(beyond);
    // The bench commands refuse it before they create their results directory.
    let out_dir = std::env::temp_dir().join(format!("concord-beyond-{}", std::process::id()));
    let out_arg = out_dir.display().to_string();
    let argv = [
        "compare",
        "binary-trees",
        "4",
        "--heap",
        &heap,
        "--repeat",
        "1",
        "--no-report",
        "--out",
        &out_arg,
    ];
    let out = concord(&argv);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{argv:?}: {stderr}");
    assert!(stderr.contains("is larger than"), "{stderr}");
    assert!(!out_dir.exists(), "{} was created", out_dir.display());
    // Allowed, the heap is only reserved address space: the run works.
    let argv = ["run", "binary-trees", "4", "--heap", &heap];
    let mut allowed_by_flag = argv.to_vec();
    allowed_by_flag.push("--allow-heap-beyond-memory");
    let out = concord(&allowed_by_flag);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = command(&argv)
        .env("CONCORD_ALLOW_HEAP_BEYOND_MEMORY", "true")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `concord run` under 32 address-space limits (`ulimit -v`), 20 MiB apart, from a 1 GiB heap
/// to well above what the heap, its side tables (about 70 MiB) and its threads take: each run
/// works (status 0) or is refused with a message saying what could not be had; none aborts.
#[test]
fn runs_under_address_space_limits_work_or_say_what_was_refused() {
    let (mut worked, mut refused, mut bad) = (0, 0, Vec::new());
    for step in 0..32 {
        let limit_kib = (GIB + step * 20 * MIB) / 1024;
        let out = Command::new("sh")
            .args(["-c", "ulimit -v \"$1\" && shift && exec \"$@\"", "sh"])
            .arg(limit_kib.to_string())
            .arg(env!("CARGO_BIN_EXE_concord"))
            .args([
                "run",
                "binary-trees",
                "4",
                "--heap",
                "1g",
                "--gc-threads",
                "2",
            ])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        match out.status.code() {
            Some(0) => worked += 1,
            // Whether a refused heap is bad input (2) or a failed run (1) is the exit-code
            // mapping's call; either way the message says what could not be had.
            Some(1 | 2) if stderr.lines().any(|l| l.starts_with("concord: could not ")) => {
                refused += 1
            }
            _ => bad.push(format!("ulimit -v {limit_kib}: {}: {stderr}", out.status)),
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The limits must reach both sides, or they tested nothing.
    assert!(
        worked > 0 && refused > 0,
        "worked {worked}, refused {refused}"
    );
}
