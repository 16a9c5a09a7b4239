//! `concord vs-native`: a workload on Concord (one mutator) and its plain-Rust version
//! (`Box` nodes, `malloc`/`free`; [`concord_workloads::native`]) alternating A B A B in this one
//! process, both checksums checked, with medians and the ratio Concord/native (issue 13: the
//! mutator's speed against plain Rust).
//!
//! The plain-Rust side runs by default in a fresh child process (this binary again, with the
//! hidden `--native-child`), started before each of its turns: once a process has started a
//! second thread, as Concord's GC threads are, glibc's `malloc` and `free` take their locked,
//! multi-threaded path for good, which made binary-trees 18 about 1.8 times slower than in a
//! program that never started a thread. `--native-in-process` runs it in this process instead,
//! to measure exactly that. The child measures its own wall time (the program only, not its
//! start).

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Result};
use clap::Args;
use concord::config::{format_size, ConfigBuilder};
use concord::GcConfig;
use concord_workloads::native::{self, NativeWorkload};
use concord_workloads::{binary_trees, WorkloadParams, WorkloadResult};
use serde_json::json;

use crate::console::outln;
use crate::experiment::runner::wrong_result;
use crate::experiment::{default_heap, find_workload, median, ratio, run_on_heap};
use crate::flags::{count_in, workload_size, Size};
use crate::side_by_side::{pair_order, print_header, Run};
use crate::RunFailed;

/// Flags of `concord vs-native`.
#[derive(Args, Debug, Clone)]
pub struct VsNativeArgs {
    /// Workload with a plain-Rust version: binary-trees or gcbench.
    #[arg(default_value = binary_trees::NAME)]
    pub workload: String,
    /// binary-trees: tree depth, 4..=30 (default 18); gcbench has no size.
    #[arg(value_parser = workload_size, allow_negative_numbers = true)]
    pub size: Option<u32>,
    /// Concord's heap size (default: the workload's default heap, 96m for binary-trees 18,
    /// 64m for gcbench).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub heap: Option<Size>,
    /// Concord's GC worker threads.
    #[arg(
        long = "gc-threads",
        default_value_t = 2,
        value_parser = count_in(1, 256),
        allow_negative_numbers = true
    )]
    pub gc_threads: u32,
    /// Concord's policy preset: vanilla, modern, suo18, naps or optimized.
    #[arg(long, default_value = "optimized")]
    pub preset: String,
    /// How many A B pairs to run.
    #[arg(
        long,
        default_value_t = 5,
        value_parser = count_in(1, 1000),
        allow_negative_numbers = true
    )]
    pub repeat: u32,
    /// Run the plain-Rust side in this process, where Concord's GC threads have put glibc
    /// malloc on its multi-threaded path, rather than in a fresh single-threaded child.
    #[arg(long = "native-in-process")]
    pub native_in_process: bool,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run the plain-Rust version once in this process and print its wall time and checksum
    /// as JSON (what the parent starts for each plain-Rust turn).
    #[arg(long = "native-child", hide = true)]
    pub native_child: bool,
}

/// What a `--native-child` process prints: one line of JSON.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct ChildReport {
    wall_ms: f64,
    checksum: u64,
    expected_checksum: Option<u64>,
}

/// The Concord side's configuration, checked before anything runs.
fn concord_config(args: &VsNativeArgs, default_heap: String) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    b.set_cli("preset", &args.preset)?;
    match &args.heap {
        Some(heap) => b.set_cli("heap", &heap.to_string())?,
        None => b.set_cli("heap", &default_heap)?,
    }
    b.set_cli("gc-threads", &args.gc_threads.to_string())?;
    Ok(b.build()?)
}

/// The plain-Rust version of `name`, or an error naming the workloads that have one.
fn find_native(name: &str) -> Result<Box<dyn NativeWorkload>> {
    native::lookup(name).ok_or_else(|| {
        anyhow!(
            "unknown workload '{name}' for vs-native (allowed: {})",
            native::names().join(", ")
        )
    })
}

/// The plain-Rust version once on this thread; a failure or a wrong checksum is a failed run.
fn run_native(workload: &dyn NativeWorkload, params: &WorkloadParams) -> Result<Run> {
    let start = Instant::now();
    let result = workload
        .run(params)
        .map_err(|e| RunFailed::wrap(anyhow!("plain-Rust {} failed: {e}", workload.name())))?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    checksum_checked("plain-Rust", workload.name(), &result)?;
    Ok(native_run(wall_ms, result.checksum))
}

/// A plain-Rust run's figures: no pauses, no collections.
fn native_run(wall_ms: f64, checksum: u64) -> Run {
    Run {
        wall_ms,
        pause_total_ms: 0.0,
        pause_max_ms: 0.0,
        young: 0,
        full: 0,
        checksum,
    }
}

/// The plain-Rust version once in a fresh child process (this binary with `--native-child`);
/// a child that fails, prints no report or reports a wrong checksum is a failed run.
fn run_native_child(args: &VsNativeArgs) -> Result<Run> {
    let exe = std::env::current_exe()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot find this program to start it: {e}")))?;
    let mut command = std::process::Command::new(&exe);
    command.args(["vs-native", &args.workload]);
    if let Some(n) = args.size {
        command.arg(n.to_string());
    }
    let output = command
        .arg("--native-child")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot start {}: {e}", exe.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(RunFailed::wrap(anyhow!(
            "the plain-Rust child process failed ({}): {}",
            output.status,
            stderr.trim()
        )));
    }
    let report: ChildReport = serde_json::from_slice(&output.stdout).map_err(|e| {
        RunFailed::wrap(anyhow!(
            "the plain-Rust child process printed no report ({e}): {}",
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    })?;
    let result = WorkloadResult {
        checksum: report.checksum,
        expected_checksum: report.expected_checksum,
        details: Vec::new(),
    };
    checksum_checked("plain-Rust", &args.workload, &result)?;
    Ok(native_run(report.wall_ms, report.checksum))
}

/// `--native-child`: the plain-Rust version once, its report on stdout.
fn native_child(native: &dyn NativeWorkload, params: &WorkloadParams) -> Result<ExitCode> {
    let start = Instant::now();
    let result = native
        .run(params)
        .map_err(|e| RunFailed::wrap(anyhow!("plain-Rust {} failed: {e}", native.name())))?;
    let report = ChildReport {
        wall_ms: start.elapsed().as_secs_f64() * 1e3,
        checksum: result.checksum,
        expected_checksum: result.expected_checksum,
    };
    outln!("{}", serde_json::to_string(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

/// An error unless `result` carries its expected checksum and matches it.
fn checksum_checked(who: &str, name: &str, result: &WorkloadResult) -> Result<()> {
    match result.checksum_ok() {
        Some(true) => Ok(()),
        _ => Err(RunFailed::wrap(anyhow!(
            "{who} {name}: checksum {} (expected {:?})",
            result.checksum,
            result.expected_checksum
        ))),
    }
}

/// Run `concord vs-native`.
pub fn run(args: VsNativeArgs) -> Result<ExitCode> {
    let native = find_native(&args.workload)?;
    let workload = find_workload(&args.workload)?;
    let params = WorkloadParams {
        mutators: 1,
        rounds: 1,
        size: args.size,
    };
    for check in [workload.validate(&params), native.validate(&params)] {
        check.map_err(|e| anyhow!("workload {}: {e}", workload.name()))?;
    }
    if args.native_child {
        return native_child(native.as_ref(), &params);
    }
    let config = concord_config(&args, default_heap(workload.as_ref(), &params))?;
    let native_process = if args.native_in_process {
        "this process"
    } else {
        "a fresh child process per run"
    };
    let size = match workload.name() {
        binary_trees::NAME => Some(args.size.unwrap_or(binary_trees::SIZE.default())),
        _ => None,
    };
    let title = match size {
        Some(n) => format!("{} {n}", workload.name()),
        None => workload.name().to_string(),
    };
    if !args.json {
        outln!(
            "{title}, one mutator: Concord (heap {}, {} GC threads, {}) vs plain Rust (Box, malloc/free; in {native_process}), {} pairs alternating",
            format_size(config.heap_size),
            config.gc_threads,
            config.preset,
            args.repeat
        )?;
        print_header()?;
    }
    let (mut concord_runs, mut native_runs) = (Vec::new(), Vec::new());
    for i in 0..args.repeat {
        let order = pair_order(i);
        for concord_turn in order {
            if concord_turn {
                let run = run_on_heap(&workload, &params, &config, || Ok(()), false)?;
                let s = &run.summary;
                if let Some(problem) = wrong_result(s) {
                    return Err(RunFailed::wrap(anyhow!(
                        "Concord {}: {problem}",
                        workload.name()
                    )));
                }
                let r = Run {
                    wall_ms: s.wall_ms,
                    pause_total_ms: s.pause_total_ms,
                    pause_max_ms: s.pause_max_ms,
                    young: s.young_count,
                    full: s.full_count,
                    checksum: s.checksum,
                };
                if !args.json {
                    r.print_row(i + 1, "Concord", true)?;
                }
                concord_runs.push(r);
            } else {
                let r = if args.native_in_process {
                    run_native(native.as_ref(), &params)?
                } else {
                    run_native_child(&args)?
                };
                if !args.json {
                    r.print_row(i + 1, "native", false)?;
                }
                native_runs.push(r);
            }
        }
    }
    let med = |v: &[Run], f: fn(&Run) -> f64| median(v.iter().map(f).collect());
    let (wall_c, wall_n) = (
        med(&concord_runs, |r| r.wall_ms),
        med(&native_runs, |r| r.wall_ms),
    );
    let mutator_c = med(&concord_runs, Run::mutator_ms);
    let pause_total = med(&concord_runs, |r| r.pause_total_ms);
    let pause_max = med(&concord_runs, |r| r.pause_max_ms);
    let collections = med(&concord_runs, |r| (r.young + r.full) as f64);
    if args.json {
        let out = json!({
            "workload": workload.name(),
            "size": size,
            "heap_size": config.heap_size,
            "gc_threads": config.gc_threads,
            "preset": config.preset.to_string(),
            "repeat": args.repeat,
            "native_process": if args.native_in_process { "this" } else { "child" },
            "checksum": concord_runs.first().map(|r| r.checksum),
            "concord": concord_runs,
            "native": native_runs,
            "medians": {
                "wall_ms": {"concord": wall_c, "native": wall_n, "ratio": ratio(wall_c, wall_n)},
                "wall_outside_pauses_ms": {
                    "concord": mutator_c,
                    "native": wall_n,
                    "ratio": ratio(mutator_c, wall_n)
                },
                "pause_total_ms": pause_total,
                "pause_max_ms": pause_max,
                "collections": collections,
            },
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        outln!()?;
        outln!(
            "{:<28} {:>10} {:>10} {:>15}",
            "median",
            "Concord",
            "native",
            "Concord/native"
        )?;
        outln!(
            "{:<28} {wall_c:>10.1} {wall_n:>10.1} {:>14.2}x",
            "wall ms",
            ratio(wall_c, wall_n)
        )?;
        outln!(
            "{:<28} {mutator_c:>10.1} {wall_n:>10.1} {:>14.2}x",
            "wall ms outside GC pauses",
            ratio(mutator_c, wall_n)
        )?;
        outln!(
            "{:<28} {pause_total:>10.1} {:>10}",
            "GC pause total ms",
            "-"
        )?;
        outln!("{:<28} {pause_max:>10.2} {:>10}", "max pause ms", "-")?;
        outln!("{:<28} {collections:>10.0} {:>10}", "collections", "-")?;
        outln!(
            "checksums equal the expected {} in every run",
            concord_runs.first().map_or(0, |r| r.checksum)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
