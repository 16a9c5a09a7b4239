//! `concord pause-bench`: paper 002's experiments (Fig. 4/6, Tables 2–3) as one command on the
//! experiment engine. `queue-churn` (002's Test.java: 10 KiB objects, 100 000 / 50 000) under
//! each load (`none`, `io`: background writeback next to the GC log, `pressure`: a co-running
//! process holding memory, `slow-log`: the GC log on a stalled device) × GC log mode (`sync`,
//! `async`) × THP mode (`never`, `always`, `dynamic`), alternating every arm once per round;
//! (`--thp` takes a comma-separated list here); then per arm the max pause, p99, the pauses over 250 / 500 / 1000 / 2000 ms and the longest
//! log write, and in `concord report` a pause time series per load.
//!
//! `--workload` runs another workload instead (binary-trees' short pauses show a log stall
//! plainly, where queue-churn's first-touch pauses of seconds hide it).
//!
//! Each run's GC log goes to the results directory beside its records (`runs/NNN-….gc.log`,
//! a regular file; under `slow-log` through the stalled device, copied there), so `concord
//! diagnose` can read it; the loads' own figures are in the run's summary under `loads`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use concord::GcConfig;
use concord_workloads::{Workload, WorkloadParams};
use serde_json::json;

use super::{conclude, Text};
use crate::experiment::arm::build_config;
use crate::experiment::figures::{pauses_over, PAUSE_THRESHOLDS_MS};
use crate::experiment::runner::{RunFiles, RunResult, Runner};
use crate::experiment::{default_heap, find_workload, heap_arm, run_on_heap_with, Column, Plan};
use crate::flags::{count_in, BenchFlags, RunFlags};
use crate::stall::{self, human, Loads, StallFlags};

/// The loads pause-bench knows, in their order.
pub const LOADS: [&str; 4] = ["none", "io", "pressure", "slow-log"];
/// The GC log modes.
pub const LOG_MODES: [&str; 2] = ["sync", "async"];
/// The THP modes.
pub const THP_MODES: [&str; 5] = ["never", "always", "dynamic", "madvise", "system"];
/// How long a queue-churn run lasts when `--seconds` is not given.
const DEFAULT_SECONDS: u32 = 3;
/// queue-churn's heap when `--heap` is not given: a little above its smallest (1408 MiB), so
/// that eden (a third) fills every second or so and a short run has pauses to count. Its
/// own default (three times the smallest) would often see none in a few seconds.
const CHURN_HEAP: &str = "1536m";
/// The THP modes of the arms when `--thp` is not given.
const DEFAULT_THP: &str = "never,always,dynamic";
/// The slow log device's rate when `--slow-log` is not given: a page (4 KiB) every quarter
/// second, 002's SLA.
const DEFAULT_SLOW_LOG_RATE: u64 = 16 << 10;
/// The I/O load's cap when `--io-load` is not given.
const DEFAULT_IO_CAP: u64 = 1 << 30;

/// Flags of `concord pause-bench`.
#[derive(Args, Debug, Clone)]
pub struct PauseBenchArgs {
    /// How long each queue-churn run lasts, seconds (default 3).
    #[arg(long, value_name = "N", value_parser = count_in(1, 3600), allow_negative_numbers = true)]
    pub seconds: Option<u32>,
    /// Another workload instead of queue-churn (e.g. binary-trees, whose short pauses show a
    /// log stall plainly), with its size as --size.
    #[arg(long, value_name = "NAME", default_value = "queue-churn")]
    pub workload: String,
    /// The size of a workload other than queue-churn (default: the workload's own).
    #[arg(long, value_name = "N", value_parser = crate::flags::workload_size)]
    pub size: Option<u32>,
    /// Loads, comma-separated: none, io (background writeback next to the GC log), pressure
    /// (a process holding memory), slow-log (the GC log on a stalled device).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,io,pressure",
        value_name = "L,…"
    )]
    pub loads: Vec<String>,
    /// GC log modes, comma-separated: sync, async.
    #[arg(
        long = "log-modes",
        value_delimiter = ',',
        default_value = "sync,async",
        value_name = "M,…"
    )]
    pub log_modes: Vec<String>,
    /// Policy preset: vanilla, modern, suo18, naps or optimized.
    #[arg(long, default_value = "optimized")]
    pub preset: String,
    #[command(flatten)]
    pub stall: StallFlags,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub bench: BenchFlags,
}

/// `list` checked against `allowed` (each once, in the order given).
pub(crate) fn choose(
    flag: &str,
    list: &[String],
    allowed: &[&'static str],
) -> Result<Vec<&'static str>> {
    let mut out: Vec<&'static str> = Vec::new();
    for item in list {
        let item = item.trim();
        match allowed.iter().find(|a| **a == item) {
            Some(a) if !out.contains(a) => out.push(a),
            Some(_) => bail!(
                "--{flag}: '{item}' is given twice (allowed: {})",
                allowed.join(", ")
            ),
            None => bail!(
                "--{flag}: '{item}' is unknown (allowed: {})",
                allowed.join(", ")
            ),
        }
    }
    if out.is_empty() {
        bail!("--{flag}: nothing given (allowed: {})", allowed.join(", "));
    }
    Ok(out)
}

/// A load of one group of arms.
#[derive(Clone, Debug)]
enum Load {
    None,
    /// The I/O load's cap and directory (`None`: the run's directory in the results).
    Io(u64, Option<PathBuf>),
    /// Memory pressure of this many bytes, with the floor if given.
    Pressure(u64, Option<u64>),
    /// The slow log device's rate.
    SlowLog(u64),
}

impl Load {
    /// The group's title.
    fn title(&self) -> String {
        match self {
            Load::None => "no load".into(),
            Load::Io(cap, dir) => format!(
                "io: background writeback, files written and fsynced in {} (at most {} at once)",
                dir.as_ref()
                    .map_or("the results directory, beside the GC log".into(), |d| d
                        .display()
                        .to_string()),
                human(*cap)
            ),
            Load::Pressure(bytes, _) => format!(
                "pressure: a process holding {} (capped at 80% of MemAvailable, above the floor)",
                human(*bytes)
            ),
            Load::SlowLog(rate) => format!(
                "slow-log: the GC log on a one-page device drained at {}/s",
                human(*rate)
            ),
        }
    }

    /// The short name, as in `--loads`.
    fn name(&self) -> &'static str {
        match self {
            Load::None => "none",
            Load::Io(..) => "io",
            Load::Pressure(..) => "pressure",
            Load::SlowLog(_) => "slow-log",
        }
    }

    /// The loads of one run whose records go to `records`.
    fn loads(&self, records: &Path) -> Loads {
        let mut loads = Loads::default();
        match self {
            Load::None => {}
            Load::Io(cap, dir) => {
                let dir = dir
                    .clone()
                    .unwrap_or_else(|| stall::default_io_dir(Some(records)));
                loads.io = Some((dir, *cap));
            }
            Load::Pressure(bytes, floor) => {
                loads.pressure = Some(*bytes);
                loads.pressure_floor = *floor;
            }
            Load::SlowLog(rate) => loads.slow_log = Some(*rate),
        }
        loads
    }
}

/// One run of a pause-bench arm: the loads started, queue-churn on a fresh heap with its GC
/// log beside the records, the loads stopped.
struct PauseRunner {
    workload: Arc<dyn Workload>,
    params: WorkloadParams,
    config: GcConfig,
    load: Load,
}

/// The GC log of the run whose records are `records`: `NNN-label.gc.log` beside them.
fn gc_log_beside(records: &Path) -> PathBuf {
    let name = records
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".records.jsonl").unwrap_or(&name);
    records.with_file_name(format!("{stem}.gc.log"))
}

impl Runner for PauseRunner {
    fn run(&self, files: &RunFiles) -> Result<RunResult> {
        let gc_log = gc_log_beside(&files.records);
        let active = self.load.loads(&files.records).start(Some(&gc_log))?;
        let mut config = self.config.clone();
        config.gc_records = Some(files.records.clone());
        config.gc_log = Some(active.gc_log().unwrap_or(gc_log));
        let run = run_on_heap_with(
            &self.workload,
            &self.params,
            &config,
            || Ok(()),
            || active.release(),
            false,
        );
        let (report, load_problems) = active.finish();
        let run = run?;
        let mut result = RunResult::of(&run.summary);
        result.summary["load"] = json!(self.load.name());
        result.summary["loads"] = report;
        let over = pauses_over(&run.summary.pauses_ms);
        result.summary["pauses_over_ms"] = json!({
            "250": over[0], "500": over[1], "1000": over[2], "2000": over[3],
        });
        let problems: Vec<String> = result
            .problem
            .take()
            .into_iter()
            .chain(run.output_failures.iter().map(ToString::to_string))
            .chain(load_problems)
            .collect();
        result.problem = (!problems.is_empty()).then(|| problems.join("; "));
        Ok(result)
    }
}

/// The columns of the table.
const COLUMNS: &[Column] = &[
    Column::Max,
    Column::P99,
    Column::Over250,
    Column::Over500,
    Column::Over1000,
    Column::Over2000,
    Column::LogWrite,
    Column::Dropped,
    Column::GcMs,
    Column::Wall,
];

/// Half of `MemAvailable` now: the pressure load's default.
fn default_pressure() -> Result<u64> {
    let available = concord::os::procfs::read_mem_available(Path::new("/proc/meminfo"))?;
    Ok((available / 2).max(stall::pressure::CHUNK))
}

/// Run `concord pause-bench`.
pub fn run(args: PauseBenchArgs) -> Result<ExitCode> {
    let why = "pause-bench's arms set it (see --log-modes and --loads)";
    args.run
        .refuse("pause-bench", &["gc-log-mode", "interfere"], why)?;
    let load_names = choose("loads", &args.loads, &LOADS)?;
    let log_modes = choose("log-modes", &args.log_modes, &LOG_MODES)?;
    // `--thp` (a run flag) is a list here: the THP modes of the arms.
    let thp_list: Vec<String> = args
        .run
        .thp
        .as_deref()
        .unwrap_or(DEFAULT_THP)
        .split(',')
        .map(str::to_string)
        .collect();
    let thp_modes = choose("thp", &thp_list, &THP_MODES)?;
    let has = |l: &str| load_names.contains(&l);
    args.stall.check(
        has("io"),
        has("pressure"),
        "add io to --loads",
        "add pressure to --loads",
    )?;
    for (flag, on, load) in [
        ("slow-log", args.stall.slow_log.is_some(), "slow-log"),
        ("io-load", args.stall.io_load.is_some(), "io"),
        (
            "memory-pressure",
            args.stall.memory_pressure.is_some(),
            "pressure",
        ),
    ] {
        if on && !has(load) {
            bail!("--{flag} sizes the {load} load, which --loads does not include (add {load} to --loads)");
        }
    }
    let workload = find_workload(&args.workload)?;
    let churn = workload.name() == concord_workloads::queue_churn::NAME;
    let size = if churn {
        if args.size.is_some() {
            bail!("--size is for other workloads; queue-churn's is --seconds");
        }
        Some(args.seconds.unwrap_or(DEFAULT_SECONDS))
    } else {
        if args.seconds.is_some() {
            bail!(
                "--seconds is queue-churn's duration; {} takes --size",
                workload.name()
            );
        }
        args.size
    };
    let params = args.run.params(size, 1);
    let mut loads = Vec::new();
    for name in &load_names {
        loads.push(match *name {
            "none" => Load::None,
            "io" => {
                let cap = args
                    .stall
                    .io_load
                    .as_ref()
                    .map_or(DEFAULT_IO_CAP, |c| c.bytes() as u64);
                let dir = match &args.stall.io_load_dir {
                    Some(d) => Some(stall::checked_io(d.clone(), cap)?.0),
                    None => {
                        stall::checked_io(std::env::temp_dir(), cap)?;
                        None
                    }
                };
                Load::Io(cap, dir)
            }
            "pressure" => {
                let bytes = match &args.stall.memory_pressure {
                    Some(s) => stall::checked_pressure(s.bytes() as u64)?,
                    None => default_pressure()?,
                };
                Load::Pressure(
                    bytes,
                    args.stall.pressure_floor.as_ref().map(|f| f.bytes() as u64),
                )
            }
            _ => Load::SlowLog(args.stall.slow_log.unwrap_or(DEFAULT_SLOW_LOG_RATE)),
        });
    }
    let defaults = [
        ("preset", args.preset.clone()),
        (
            "heap",
            if churn {
                CHURN_HEAP.to_string()
            } else {
                default_heap(workload.as_ref(), &params)
            },
        ),
    ];
    let mut common = args.run.settings_over(&defaults);
    common.retain(|(k, _)| *k != "thp");
    let mut arms = Vec::new();
    for (group, load) in loads.iter().enumerate() {
        for mode in &log_modes {
            for thp in &thp_modes {
                let mut settings = common.clone();
                settings.push(("gc-log-mode", mode.to_string()));
                settings.push(("thp", thp.to_string()));
                let label = format!("{mode}/{thp}");
                let what = format!("GC log written {mode}, THP {thp}");
                let mut arm = heap_arm(
                    label.clone(),
                    Some(&what),
                    &settings,
                    group,
                    &workload,
                    params.clone(),
                    None,
                )?;
                arm.id = format!("{}:{label}", load.name());
                arm.runner = Arc::new(PauseRunner {
                    workload: workload.clone(),
                    params: params.clone(),
                    config: build_config(&settings)?,
                    load: load.clone(),
                });
                arms.push(arm);
            }
        }
    }
    let mut plan = Plan::new(
        "pause-bench",
        workload.name().to_string(),
        arms,
        args.bench.repeat,
    );
    plan.size = size;
    plan.groups = loads.iter().map(Load::title).collect();
    for (k, v) in [
        ("seconds", json!(churn.then_some(size))),
        ("preset", json!(args.preset)),
        ("loads", json!(load_names)),
        ("log_modes", json!(log_modes)),
        ("thp", json!(thp_modes)),
        ("thresholds_ms", json!(PAUSE_THRESHOLDS_MS)),
    ] {
        plan.parameters.insert(k.to_string(), v);
    }
    for load in &loads {
        let (key, value) = match load {
            Load::None => continue,
            Load::Io(cap, dir) => (
                "io_load",
                json!({"cap_bytes": cap, "dir": dir.as_ref().map(|d| d.display().to_string())}),
            ),
            Load::Pressure(bytes, floor) => (
                "memory_pressure",
                json!({"bytes": bytes, "floor_bytes": floor}),
            ),
            Load::SlowLog(rate) => ("slow_log", json!({"rate_bytes_per_s": rate})),
        };
        plan.parameters.insert(key.to_string(), value);
    }
    let what = if churn {
        format!(
            "queue-churn {} s (10 KiB objects, 100 000 / 50 000)",
            size.unwrap_or(DEFAULT_SECONDS)
        )
    } else {
        match size {
            Some(n) => format!("{} {n}", workload.name()),
            None => workload.name().to_string(),
        }
    };
    let header = format!(
        "concord pause-bench: {what}, preset {}, medians of {} alternating runs each",
        args.preset, plan.repeat
    );
    let note =
        "max / p99: pause ms; >250ms … >2s: pauses longer than that (002 Tables 2-3); log write: \
                the longest single write() of GC log lines, ms (inside the pause when sync); \
                dropped: GC log lines an async log dropped.";
    let text = Text::new(header, COLUMNS.to_vec(), note).legend_of(0);
    conclude(&plan, &args.bench, |_, _| {}, |_| text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_checked_against_what_is_allowed() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            choose("loads", &v(&["io", " none"]), &LOADS).unwrap(),
            ["io", "none"]
        );
        let err = choose("loads", &v(&["disk"]), &LOADS)
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--loads: 'disk' is unknown (allowed: none, io, pressure, slow-log)"
        );
        let err = choose("thp", &v(&["never", "never"]), &THP_MODES)
            .unwrap_err()
            .to_string();
        assert!(err.contains("given twice"), "{err}");
        assert!(choose("log-modes", &[], &LOG_MODES).is_err());
    }

    #[test]
    fn the_gc_log_goes_beside_the_records() {
        assert_eq!(
            gc_log_beside(Path::new("/r/runs/003-io-sync-never.records.jsonl")),
            Path::new("/r/runs/003-io-sync-never.gc.log")
        );
    }
}
