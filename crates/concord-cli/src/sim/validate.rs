//! `concord sim validate`: the simulator against reality on this machine.
//!
//! Every cell of a grid (workload × preset × load × GC threads) is run for real here and
//! simulated on a machine of this one's shape (2 CPUs), and the two median GC pauses per
//! collection are printed side by side. Both sides are this executable in child processes, so
//! each run has a fresh heap and process: the real runs are `concord run … --json --gc-records
//! FILE`, `--repeat` times, the presets alternating so a slow spell of the machine falls on all
//! of them; the simulated runs are `concord sim … --trace FILE --cpus 2`, replaying a trace
//! recorded by a separate `concord run … --gc-trace` per (workload, preset, GC threads)
//! (tracing slows the pauses, so traced runs are not timed). The load is the same on both
//! sides: one busy loop pinned to CPU 0 (`--interfere busy:1@0` for real, `--load busy:1@0`
//! simulated).
//!
//! The figures: a cell is within when the simulated median is within ±25 % of the real one; a
//! group (workload, load, GC threads) has the same order when the simulator ranks the presets
//! as reality does. The headline is the share of each, against a target of 80 %. Missing the
//! targets is the output, not a failure (exit 0); a child that fails is (exit 1, naming it).
//! The temporary files are in a directory removed at the end, unless `--keep DIR` names one.
//!
//! SIGINT, SIGTERM and SIGHUP ([`crate::interrupt`]): the first lets the current child finish,
//! then the command stops with 128 + the signal (nothing is reported) and removes its
//! temporary directory; a second quits at once, removing it too.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use concord::config::{check_files, NamedFile};
use concord_sim::replay::driver::SchedModel;
use concord_sim::sched::WakePlacement;
use serde::Serialize;
use serde_json::Value;

use crate::console::{errln, outln};
use crate::experiment::figures::median;
use crate::interference::Interference;
use crate::interrupt::{self, TempDir};
use crate::RunFailed;

/// Flags of `concord sim validate`.
#[derive(Args, Debug)]
pub struct ValidateArgs {
    /// Print the cells, groups and headline figures as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// A tiny grid (binary-trees 14; vanilla and optimized; no load and busy:1@0; 2 GC
    /// threads; one run each): for tests, not for conclusions.
    #[arg(long)]
    pub quick: bool,
    /// Real runs per cell, the median taken (default 3; 1 with --quick).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub repeat: Option<u32>,
    /// The simulator's costs from this file, written by concord sim calibrate (default: the
    /// built-in costs).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Keep the traces and records in this directory (created if missing) instead of a
    /// temporary one removed at the end.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// The scheduler model of the simulations: cfs (Linux 4.9) or eevdf (Linux 6.6+)
    /// (default: the one of this machine's kernel, from its release).
    #[arg(long, value_name = "cfs|eevdf", value_parser = parse_sched)]
    pub sched: Option<SchedModel>,
    /// With --tier 2: the wake-up placement model it is simulated under, default or pack
    /// (default: this machine's kernel's, pack when it was booted with a non-zero
    /// sched_vcpu_pack=, default otherwise).
    #[arg(long, value_name = "default|pack", value_parser = parse_wake_placement, requires = "tier")]
    pub wake_placement: Option<WakePlacement>,
    /// Validate in tiers instead of the loaded grid: 0 (the cost model: 1 GC thread, pinned,
    /// collections matched one to one), 1 (the protocols: static GC affinity, 2 and 4 GC
    /// threads, four presets), 2 (placement: unpinned, under this machine's wake-up placement
    /// model) or all. At least 7 real runs per cell (--repeat).
    #[arg(long, value_name = "0|1|2|3|all", value_parser = super::tiers::parse_tiers)]
    pub tier: Option<super::tiers::Tiers>,
    /// With --tier 3 (or all): trace recordings of each workload and preset (default 5; 1
    /// with --quick), each simulated under 3 seeds.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000), requires = "tier")]
    pub recordings: Option<u32>,
    /// With --tier: measure only every N-th cell of the grid from the K-th (1 <= K <= N) and
    /// write its result to --out DIR, for --merge to join (a batch scheduler's job array).
    #[arg(long, value_name = "K/N", value_parser = super::tiers::parse_shard, requires = "tier")]
    pub shard: Option<super::tiers::Shard>,
    /// With --tier: also write each tier's result as JSON in this directory (created if
    /// missing): tierT.json, or tierT-shardKofN.json with --shard.
    #[arg(long, value_name = "DIR", requires = "tier")]
    pub out: Option<PathBuf>,
    /// With --tier: simulations run at once (default: this machine's CPUs; the real runs are
    /// always one at a time).
    #[arg(long, value_name = "J", value_parser = clap::value_parser!(u32).range(1..=1024), requires = "tier")]
    pub jobs: Option<u32>,
    /// Join the shard results (tierT-shardKofN.json) in these directories and report them as
    /// one run of the whole grid would; runs nothing.
    #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["tier", "quick", "repeat", "costs", "keep", "sched"])]
    pub merge: Vec<PathBuf>,
}

fn parse_sched(text: &str) -> std::result::Result<SchedModel, String> {
    text.parse().map_err(|e| format!("'{text}' {e}"))
}

fn parse_wake_placement(text: &str) -> std::result::Result<WakePlacement, String> {
    text.parse()
}

/// The wake-up placement of a kernel booted with `cmdline` (`/proc/cmdline`): `pack` when it
/// holds `sched_vcpu_pack=N` with N > 0, the option under which the traced kernel kept woken
/// threads on their waker's CPU (docs/simulator.md); `default` otherwise, where the same
/// kernel booted without it packed none of 300 wake-ups.
pub fn wake_placement_of_cmdline(cmdline: &str) -> WakePlacement {
    let packs = cmdline.split_whitespace().any(|word| {
        word.strip_prefix("sched_vcpu_pack=")
            .and_then(|n| n.parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    });
    if packs {
        WakePlacement::Pack
    } else {
        WakePlacement::Default
    }
}

/// This machine's kernel's wake-up placement (`default` if `/proc/cmdline` cannot be read).
fn this_kernels_wake_placement() -> WakePlacement {
    std::fs::read_to_string("/proc/cmdline")
        .map(|c| wake_placement_of_cmdline(&c))
        .unwrap_or_default()
}

/// The scheduler model of a kernel of release `release` (`6.18.1-foo`): EEVDF from 6.6 on,
/// CFS before; `None` for a release that does not start with a version.
pub fn sched_of_kernel(release: &str) -> Option<SchedModel> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    Some(if (major, minor) >= (6, 6) {
        SchedModel::Eevdf
    } else {
        SchedModel::Cfs
    })
}

/// This machine's kernel's scheduler model (CFS if the release cannot be read).
fn this_kernels_sched() -> SchedModel {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .and_then(|r| sched_of_kernel(r.trim()))
        .unwrap_or(SchedModel::Cfs)
}

/// The CPUs of the simulated machine: this machine's shape.
const SIM_CPUS: usize = 2;

/// The load of a loaded cell, on both sides: one busy loop pinned to CPU 0.
const BUSY_LOAD: &str = "busy:1@0";

/// A cell is within when |simulated / real − 1| ≤ this.
pub const WITHIN: f64 = 0.25;

/// The share of cells within, and of groups in the same order, the simulator should reach.
pub const TARGET: f64 = 0.8;

/// A workload of the grid (and of the tiers' grids) and its size argument.
#[derive(Clone, Copy, Debug)]
pub(super) struct Workload {
    pub(super) name: &'static str,
    pub(super) size: Option<&'static str>,
}

impl Workload {
    /// `name` or `name size`, as the table shows it.
    pub(super) fn label(self) -> String {
        match self.size {
            Some(size) => format!("{} {size}", self.name),
            None => self.name.to_string(),
        }
    }

    /// The workload's arguments to `concord run`/`concord sim`.
    pub(super) fn args(self) -> Vec<String> {
        std::iter::once(self.name)
            .chain(self.size)
            .map(String::from)
            .collect()
    }
}

/// The cells to run.
struct Grid {
    workloads: Vec<Workload>,
    presets: Vec<&'static str>,
    /// `None` for no load, else the busy load.
    loads: Vec<Option<&'static str>>,
    gc_threads: Vec<usize>,
}

impl Grid {
    fn full() -> Grid {
        Grid {
            workloads: vec![
                Workload {
                    name: "gcbench",
                    size: None,
                },
                Workload {
                    name: "binary-trees",
                    size: Some("18"),
                },
                Workload {
                    name: "kmeans",
                    size: None,
                },
            ],
            presets: vec!["vanilla", "modern", "optimized"],
            loads: vec![None, Some(BUSY_LOAD)],
            gc_threads: vec![2, 4],
        }
    }

    fn quick() -> Grid {
        Grid {
            workloads: vec![Workload {
                name: "binary-trees",
                size: Some("14"),
            }],
            presets: vec!["vanilla", "optimized"],
            loads: vec![None, Some(BUSY_LOAD)],
            gc_threads: vec![2],
        }
    }
}

/// One cell's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Cell {
    pub workload: String,
    pub preset: String,
    /// `none` or the busy load (`busy:1@0`).
    pub load: String,
    pub gc_threads: usize,
    /// Median over the real runs of each run's median pause per collection, ms.
    pub real_gc_ms: f64,
    /// The simulated median pause per collection, ms.
    pub sim_gc_ms: f64,
    /// `sim_gc_ms / real_gc_ms`.
    pub ratio: f64,
    /// Whether the ratio is within 1 ± [`WITHIN`].
    pub within: bool,
    /// Each real run's median pause per collection, ms.
    pub real_runs_ms: Vec<f64>,
    /// Whether every real run is within ±[`WITHIN`] of the real median: where it is not, the
    /// machine's own noise is as large as the error being measured.
    pub real_stable: bool,
    /// Median over the real runs of the median time a collection spent in its parallel phase.
    pub real_parallel_ms: f64,
    /// Median over the real runs of the median pause time outside the parallel phase (the
    /// serial work before and after it, and reaching the safepoint).
    pub real_outside_parallel_ms: f64,
    /// Collections per real run (median) and simulated.
    pub real_collections: usize,
    pub sim_collections: usize,
}

impl Cell {
    fn new(key: &CellKey, real: &[RunFigures], sim: &RunFigures) -> Cell {
        let real_gc_ms = median(real.iter().map(|r| r.pause_ms).collect());
        let sim_gc_ms = sim.pause_ms;
        let ratio = sim_gc_ms / real_gc_ms;
        Cell {
            workload: key.workload.label(),
            preset: key.preset.to_string(),
            load: load_label(key.load),
            gc_threads: key.gc_threads,
            real_gc_ms,
            sim_gc_ms,
            ratio,
            within: within(ratio),
            real_runs_ms: real.iter().map(|r| r.pause_ms).collect(),
            real_stable: real.iter().all(|r| within(r.pause_ms / real_gc_ms)),
            real_parallel_ms: median(real.iter().map(|r| r.parallel_ms).collect()),
            real_outside_parallel_ms: median(real.iter().map(|r| r.outside_parallel_ms).collect()),
            real_collections: median(real.iter().map(|r| r.collections as f64).collect()) as usize,
            sim_collections: sim.collections,
        }
    }
}

/// Whether a simulated/real ratio is within ±[`WITHIN`].
pub fn within(ratio: f64) -> bool {
    ratio.is_finite() && (ratio - 1.0).abs() <= WITHIN + 1e-12
}

fn load_label(load: Option<&str>) -> String {
    load.unwrap_or("none").to_string()
}

/// One (workload, load, GC threads) group: the presets ranked by each side.
#[derive(Clone, Debug, Serialize)]
pub struct Group {
    pub workload: String,
    pub load: String,
    pub gc_threads: usize,
    /// The presets from the shortest real median to the longest.
    pub real_order: Vec<String>,
    /// The presets from the shortest simulated median to the longest.
    pub sim_order: Vec<String>,
    pub same_order: bool,
}

/// The presets of `cells` ordered by `value`, shortest first (ties keep the grid's order).
pub fn order(cells: &[&Cell], value: impl Fn(&Cell) -> f64) -> Vec<String> {
    let mut sorted: Vec<&Cell> = cells.to_vec();
    sorted.sort_by(|a, b| value(a).total_cmp(&value(b)));
    sorted.into_iter().map(|c| c.preset.clone()).collect()
}

/// The groups of `cells`: those with the same workload, load and GC threads, in grid order.
pub fn groups(cells: &[Cell]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut seen: Vec<(&str, &str, usize)> = Vec::new();
    for c in cells {
        let key = (c.workload.as_str(), c.load.as_str(), c.gc_threads);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let members: Vec<&Cell> = cells
            .iter()
            .filter(|m| (m.workload.as_str(), m.load.as_str(), m.gc_threads) == key)
            .collect();
        let real_order = order(&members, |m| m.real_gc_ms);
        let sim_order = order(&members, |m| m.sim_gc_ms);
        groups.push(Group {
            workload: c.workload.clone(),
            load: c.load.clone(),
            gc_threads: c.gc_threads,
            same_order: real_order == sim_order,
            real_order,
            sim_order,
        });
    }
    groups
}

/// The share of `items` for which `yes` holds (0 for none).
pub fn share<T>(items: &[T], yes: impl Fn(&T) -> bool) -> f64 {
    if items.is_empty() {
        return 0.0;
    }
    items.iter().filter(|i| yes(i)).count() as f64 / items.len() as f64
}

/// What one run (real or simulated) comes to, from its records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunFigures {
    /// Median pause per collection, ms.
    pub pause_ms: f64,
    /// Median time per collection in the parallel phase, ms.
    pub parallel_ms: f64,
    /// Median pause time per collection outside the parallel phase, ms.
    pub outside_parallel_ms: f64,
    pub collections: usize,
}

/// Reads the figures from `--gc-records` JSON lines; none, or a line without `pause_ms`, is an
/// error.
pub fn run_figures(records: &str) -> Result<RunFigures> {
    let mut pauses = Vec::new();
    let mut parallel = Vec::new();
    let mut outside = Vec::new();
    for (n, line) in records.lines().enumerate() {
        let record: Value =
            serde_json::from_str(line).with_context(|| format!("record {} is not JSON", n + 1))?;
        let pause = record["pause_ms"]
            .as_f64()
            .ok_or_else(|| anyhow!("record {} has no pause_ms", n + 1))?;
        let in_parallel = record["phases"]["parallel_ms"].as_f64().unwrap_or(pause);
        pauses.push(pause);
        parallel.push(in_parallel);
        outside.push(pause - in_parallel);
    }
    if pauses.is_empty() {
        bail!("the run made no collection");
    }
    Ok(RunFigures {
        collections: pauses.len(),
        pause_ms: median(pauses),
        parallel_ms: median(parallel),
        outside_parallel_ms: median(outside),
    })
}

/// A cell of the grid.
#[derive(Clone, Copy, Debug)]
struct CellKey {
    workload: Workload,
    preset: &'static str,
    load: Option<&'static str>,
    gc_threads: usize,
}

impl CellKey {
    /// A file name stem naming the cell (and `load` only where it matters).
    fn stem(&self, with_load: bool) -> String {
        let mut stem = format!(
            "{}-{}-{}t",
            self.workload.args().join("-"),
            self.preset,
            self.gc_threads
        );
        if with_load {
            stem.push('-');
            stem.push_str(&self.load.unwrap_or("none").replace([':', '@'], "-"));
        }
        stem
    }

    /// The flags both sides share: workload, preset and GC threads.
    fn common_args(&self) -> Vec<String> {
        let mut args = self.workload.args();
        args.extend([
            "--preset".to_string(),
            self.preset.to_string(),
            "--gc-threads".to_string(),
            self.gc_threads.to_string(),
        ]);
        args
    }
}

/// The working directory: kept (`--keep`), or a temporary one removed when dropped or by a
/// second signal.
enum WorkDir {
    Kept(PathBuf),
    Temporary(TempDir),
}

impl WorkDir {
    fn path(&self) -> &Path {
        match self {
            WorkDir::Kept(path) => path,
            WorkDir::Temporary(dir) => dir.path(),
        }
    }
}

/// A signal stopped the grid (the error [`concord`] returns once the child it waited for is
/// done).
#[derive(Debug)]
pub(super) struct Stopped;

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped by a signal")
    }
}

impl std::error::Error for Stopped {}

/// Runs this executable with `args`; a failure (not started, nonzero status) is a
/// [`RunFailed`] naming the command and quoting its error output, and a signal that came
/// meanwhile is [`Stopped`] (whatever the child did with it).
pub(super) fn concord(exe: &Path, args: &[String]) -> Result<()> {
    if interrupt::interrupted() {
        return Err(Stopped.into());
    }
    let shown = format!("concord {}", args.join(" "));
    let output = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot start `{shown}`: {e}")))?;
    if interrupt::interrupted() {
        return Err(Stopped.into());
    }
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(RunFailed::wrap(anyhow!(
            "`{shown}` failed ({}): {}",
            output.status,
            stderr.trim()
        )));
    }
    Ok(())
}

/// Reads a run's records; a failure is a [`RunFailed`] naming the command.
fn figures_of(records: &Path, what: &str) -> Result<RunFigures> {
    let text = std::fs::read_to_string(records)
        .map_err(|e| RunFailed::wrap(anyhow!("{what}: cannot read {}: {e}", records.display())))?;
    run_figures(&text).map_err(|e| RunFailed::wrap(anyhow!("{what}: {}: {e}", records.display())))
}

/// Runs `concord sim validate`.
pub fn run(args: ValidateArgs) -> Result<ExitCode> {
    if !args.merge.is_empty() {
        crate::stop_if_checking_args("nothing to check before merging");
        // Missing, doubled or mismatched shards are bad input (exit 2).
        let merged = super::tiers::merge(&args.merge)?;
        return super::tiers::report(&merged, args.json);
    }
    if let Some(tiers) = args.tier.clone() {
        return run_tiers(&args, &tiers);
    }
    // Checked before anything runs: the costs file, CPU 0 for the busy loop, the directory.
    if let Some(costs) = &args.costs {
        concord_sim::calibrate::load(costs).context("--costs")?;
    }
    Interference::Busy {
        threads: 1,
        cpu: Some(0),
    }
    .check()
    .context("the loaded cells need a busy loop on CPU 0")?;
    if let Some(keep) = &args.keep {
        if keep.exists() && !keep.is_dir() {
            bail!(
                "--keep {} is not a directory (allowed: a directory, created if missing)",
                keep.display()
            );
        }
    }
    let grid = if args.quick {
        Grid::quick()
    } else {
        Grid::full()
    };
    let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 }) as usize;
    if let (Some(keep), Some(costs)) = (&args.keep, &args.costs) {
        check_files(
            &[NamedFile::new("--costs", costs)],
            &files_written(&grid, repeat, keep),
        )?;
    }
    crate::stop_if_checking_args("costs, load and directory checked");
    let exe = std::env::current_exe()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot find this program to start it: {e}")))?;
    // Before the directory is made, so that no signal leaves it behind.
    interrupt::install("the current run finishes, then the validation stops");
    let work = work_dir(args.keep.as_ref(), "concord-sim-validate")?;
    let loadavg_start = loadavg();
    let sched = args.sched.unwrap_or_else(this_kernels_sched);
    let cells = match measure(
        &exe,
        &grid,
        repeat,
        args.costs.as_deref(),
        sched,
        work.path(),
    ) {
        Err(e) if e.is::<Stopped>() => {
            let kept = match &work {
                WorkDir::Kept(dir) => format!("the files so far are kept in {}", dir.display()),
                WorkDir::Temporary(_) => "its temporary files are removed".to_string(),
            };
            errln!("concord sim validate: stopped before the grid was complete; {kept}");
            drop(work);
            return Ok(interrupt::exit_code());
        }
        other => other?,
    };
    let groups = groups(&cells);
    let within_25pct = share(&cells, |c| c.within);
    let same_order = share(&groups, |g| g.same_order);
    let real_stable = share(&cells, |c| c.real_stable);
    let loadavg_end = loadavg();
    if args.json {
        let json = serde_json::json!({
            "cells": cells,
            "groups": groups,
            "within_25pct": within_25pct,
            "same_order": same_order,
            "target": TARGET,
            "within_25pct_pass": within_25pct >= TARGET,
            "same_order_pass": same_order >= TARGET,
            "real_stable_share": real_stable,
            "repeat": repeat,
            "sim_cpus": SIM_CPUS,
            "sched": sched.to_string(),
            "costs": args.costs.as_ref().map(|c| c.display().to_string()),
            "loadavg_start": loadavg_start,
            "loadavg_end": loadavg_end,
        });
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        print_table(&cells, &groups, within_25pct, same_order)?;
        outln!(
            "cells whose real runs all lie within ±25% of their median: {:.0}% (the machine's \
             own noise; where it is low, the real side is not a fixed target)",
            real_stable * 100.0
        )?;
        outln!(
            "{repeat} real run(s) per cell, simulated under the {sched} model; load average {} \
             at the start, {} at the end",
            loadavg_start.as_deref().unwrap_or("unknown"),
            loadavg_end.as_deref().unwrap_or("unknown")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A failure to create `path`, as a [`RunFailed`].
fn cannot_create(path: &Path, e: std::io::Error) -> anyhow::Error {
    RunFailed::wrap(anyhow!("cannot create {}: {e}", path.display()))
}

/// The working directory: `keep` (created if missing), or a temporary `PREFIX-PID` one.
fn work_dir(keep: Option<&PathBuf>, prefix: &str) -> Result<WorkDir> {
    Ok(match keep {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| cannot_create(dir, e))?;
            WorkDir::Kept(dir.clone())
        }
        None => {
            let path = std::env::temp_dir().join(format!("{prefix}-{}", std::process::id()));
            WorkDir::Temporary(TempDir::create(path.clone()).map_err(|e| cannot_create(&path, e))?)
        }
    })
}

/// `concord sim validate --tier …`: the tiers measured (this run's shard of them), written to
/// `--out` and reported.
fn run_tiers(args: &ValidateArgs, tiers: &super::tiers::Tiers) -> Result<ExitCode> {
    use super::papers::PapersRun;
    use super::tiers::{result_file, Outcome, TierRun};
    if let Some(costs) = &args.costs {
        concord_sim::calibrate::load(costs).context("--costs")?;
    }
    if args.shard.is_some() && args.out.is_none() {
        bail!("--shard needs --out DIR: the directory where --merge finds the shard's result");
    }
    for (flag, dir) in [("--keep", &args.keep), ("--out", &args.out)] {
        if let Some(dir) = dir {
            if dir.exists() && !dir.is_dir() {
                bail!(
                    "{flag} {} is not a directory (allowed: a directory, created if missing)",
                    dir.display()
                );
            }
        }
    }
    crate::stop_if_checking_args("costs and directories checked");
    let exe = std::env::current_exe()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot find this program to start it: {e}")))?;
    interrupt::install("the current run finishes, then the validation stops");
    let work = work_dir(args.keep.as_ref(), "concord-sim-tiers")?;
    if let Some(out) = &args.out {
        std::fs::create_dir_all(out).map_err(|e| cannot_create(out, e))?;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let run = TierRun {
        exe: &exe,
        quick: args.quick,
        repeat: args.repeat.map(|r| r as usize),
        costs: args.costs.as_deref(),
        sched: args.sched.unwrap_or_else(this_kernels_sched),
        wake_placement: args
            .wake_placement
            .unwrap_or_else(this_kernels_wake_placement),
        dir: work.path(),
        jobs: args.jobs.map_or(cpus, |j| j as usize),
        shard: args.shard,
    };
    let papers = PapersRun {
        exe: &exe,
        quick: args.quick,
        recordings: args.recordings.map_or(
            if args.quick {
                1
            } else {
                super::papers::RECORDINGS
            },
            |r| r as usize,
        ),
        costs: args.costs.as_deref(),
        // The papers' machines ran CFS (000: Linux 4.9).
        sched: args.sched.unwrap_or(SchedModel::Cfs),
        dir: work.path(),
        jobs: run.jobs,
        shard: args.shard,
    };
    let mut results = Vec::new();
    let measured = tiers
        .grids
        .iter()
        .map(|&tier| run.measure(tier).map(Outcome::Grid))
        .chain(tiers.papers.then(|| papers.measure().map(Outcome::Papers)));
    for outcome in measured {
        match outcome {
            Err(e) if e.is::<Stopped>() => {
                errln!("concord sim validate: stopped before the tier was complete");
                drop(work);
                return Ok(interrupt::exit_code());
            }
            other => results.push(other?),
        }
    }
    if let Some(out) = &args.out {
        for r in &results {
            let (tier, shard) = match r {
                Outcome::Grid(g) => (g.tier, g.shard),
                Outcome::Papers(p) => (p.tier, p.shard),
            };
            let path = result_file(out, tier, shard);
            let mut text = serde_json::to_string_pretty(r)?;
            text.push('\n');
            concord::os::fs::write_atomic(&path, text.as_bytes())
                .map_err(|e| RunFailed::wrap(anyhow!("cannot write {}: {e}", path.display())))?;
        }
    }
    super::tiers::report(&results, args.json)
}

/// The machine's 1/5/15-minute load averages, for the report.
fn loadavg() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

/// The cells of `grid`, in grid order.
fn cell_keys(grid: &Grid) -> Vec<CellKey> {
    let mut keys = Vec::new();
    for &workload in &grid.workloads {
        for &load in &grid.loads {
            for &gc_threads in &grid.gc_threads {
                for &preset in &grid.presets {
                    keys.push(CellKey {
                        workload,
                        preset,
                        load,
                        gc_threads,
                    });
                }
            }
        }
    }
    keys
}

/// The trace a cell's simulation replays, recorded once without load.
fn trace_file(dir: &Path, key: &CellKey) -> PathBuf {
    dir.join(format!("{}.trace", key.stem(false)))
}

/// The records of a cell's real run `round` (from 0).
fn run_records_file(dir: &Path, key: &CellKey, round: usize) -> PathBuf {
    dir.join(format!("{}-run{}.jsonl", key.stem(true), round + 1))
}

/// The records of a cell's simulation.
fn sim_records_file(dir: &Path, key: &CellKey) -> PathBuf {
    dir.join(format!("{}-sim.jsonl", key.stem(true)))
}

/// Every file the validation writes in `dir`, to check against the files it reads.
fn files_written(grid: &Grid, repeat: usize, dir: &Path) -> Vec<NamedFile> {
    let keys = cell_keys(grid);
    let mut files = Vec::new();
    for key in &keys {
        files.push(trace_file(dir, key));
        files.extend((0..repeat).map(|round| run_records_file(dir, key, round)));
        files.push(sim_records_file(dir, key));
    }
    files
        .into_iter()
        .map(|path| NamedFile::new("a file the validation writes in --keep", path))
        .collect()
}

/// Records the traces, times the real runs and runs the simulations; the cells in grid order.
fn measure(
    exe: &Path,
    grid: &Grid,
    repeat: usize,
    costs: Option<&Path>,
    sched: SchedModel,
    dir: &Path,
) -> Result<Vec<Cell>> {
    let keys = cell_keys(grid);
    let traced: Vec<&CellKey> = keys.iter().filter(|k| k.load == grid.loads[0]).collect();
    let steps = traced.len() + keys.len() * (repeat + 1);
    let mut step = 0;
    let mut progress = |what: &str| {
        step += 1;
        errln!("concord sim validate: [{step}/{steps}] {what}");
    };
    // One trace per (workload, preset, GC threads), in an untimed run without load.
    for key in &traced {
        progress(&format!(
            "recording {} {} {} GC threads",
            key.workload.label(),
            key.preset,
            key.gc_threads
        ));
        let trace = trace_file(dir, key);
        let mut args = vec!["run".to_string()];
        args.extend(key.common_args());
        args.extend(["--gc-trace".to_string(), path_arg(&trace)]);
        concord(exe, &args)?;
    }
    // The real runs: the presets alternate innermost, the repetitions outermost.
    let mut real: Vec<Vec<RunFigures>> = vec![Vec::new(); keys.len()];
    for round in 0..repeat {
        for (key, runs) in keys.iter().zip(&mut real) {
            progress(&format!(
                "run {}/{repeat}: {} {} {} GC threads, load {}",
                round + 1,
                key.workload.label(),
                key.preset,
                key.gc_threads,
                load_label(key.load)
            ));
            let records = run_records_file(dir, key, round);
            let mut args = vec!["run".to_string()];
            args.extend(key.common_args());
            if let Some(load) = key.load {
                args.extend(["--interfere".to_string(), load.to_string()]);
            }
            args.extend([
                "--json".to_string(),
                "--gc-records".to_string(),
                path_arg(&records),
            ]);
            concord(exe, &args)?;
            runs.push(figures_of(
                &records,
                &format!("concord {}", args.join(" ")),
            )?);
        }
    }
    // The simulations, one per cell (the simulator is deterministic).
    let mut cells = Vec::with_capacity(keys.len());
    for (key, runs) in keys.iter().zip(&real) {
        progress(&format!(
            "simulating {} {} {} GC threads, load {}",
            key.workload.label(),
            key.preset,
            key.gc_threads,
            load_label(key.load)
        ));
        let trace = trace_file(dir, key);
        let records = sim_records_file(dir, key);
        let mut args = vec!["sim".to_string()];
        args.extend(key.common_args());
        args.extend(["--cpus".to_string(), SIM_CPUS.to_string()]);
        args.extend(["--sched".to_string(), sched.to_string()]);
        if let Some(load) = key.load {
            args.extend(["--load".to_string(), load.to_string()]);
        }
        args.extend([
            "--trace".to_string(),
            path_arg(&trace),
            "--json".to_string(),
            "--gc-records".to_string(),
            path_arg(&records),
        ]);
        if let Some(costs) = costs {
            args.extend(["--costs".to_string(), path_arg(costs)]);
        }
        concord(exe, &args)?;
        let sim = figures_of(&records, &format!("concord {}", args.join(" ")))?;
        cells.push(Cell::new(key, runs, &sim));
    }
    Ok(cells)
}

pub(super) fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

/// The cells, the groups' orders and the headline figures as text.
fn print_table(cells: &[Cell], groups: &[Group], within_25pct: f64, same_order: f64) -> Result<()> {
    outln!(
        "{:<16} {:<10} {:<9} {:>10} {:>11} {:>10} {:>7} {:>6} {:>12}",
        "workload",
        "preset",
        "load",
        "gc_threads",
        "real_gc_ms",
        "sim_gc_ms",
        "ratio",
        "±25%",
        "real_stable"
    )?;
    for c in cells {
        outln!(
            "{:<16} {:<10} {:<9} {:>10} {:>11.3} {:>10.3} {:>7.2} {:>6} {:>12}",
            c.workload,
            c.preset,
            c.load,
            c.gc_threads,
            c.real_gc_ms,
            c.sim_gc_ms,
            c.ratio,
            yes_no(c.within),
            yes_no(c.real_stable)
        )?;
    }
    outln!()?;
    outln!("preset order (shortest median pause first):")?;
    for g in groups {
        outln!(
            "{:<16} {:<9} {} GC threads: real {}, sim {}: {}",
            g.workload,
            g.load,
            g.gc_threads,
            g.real_order.join(" < "),
            g.sim_order.join(" < "),
            if g.same_order { "same" } else { "different" }
        )?;
    }
    outln!()?;
    let pass = |share: f64| if share >= TARGET { "PASS" } else { "MISS" };
    outln!(
        "cells within ±25%: {:.0}% (target ≥ {:.0}%): {}",
        within_25pct * 100.0,
        TARGET * 100.0,
        pass(within_25pct)
    )?;
    outln!(
        "groups with the same preset order: {:.0}% (target ≥ {:.0}%): {}",
        same_order * 100.0,
        TARGET * 100.0,
        pass(same_order)
    )?;
    Ok(())
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_from_6_6_on_is_eevdf_before_it_cfs() {
        assert_eq!(sched_of_kernel("6.18.0-1-amd64"), Some(SchedModel::Eevdf));
        assert_eq!(sched_of_kernel("6.6.0"), Some(SchedModel::Eevdf));
        assert_eq!(sched_of_kernel("6.5.13"), Some(SchedModel::Cfs));
        assert_eq!(sched_of_kernel("4.9.0-8-amd64"), Some(SchedModel::Cfs));
        assert_eq!(sched_of_kernel("10.1"), Some(SchedModel::Eevdf));
    }

    #[test]
    fn the_wake_placement_follows_the_kernels_boot_option() {
        let pack = "mitigations=auto sched_vcpu_pack=15 quiet";
        assert_eq!(wake_placement_of_cmdline(pack), WakePlacement::Pack);
        for other in [
            "mitigations=auto quiet",
            "sched_vcpu_pack=0",
            "sched_vcpu_pack=",
            "xsched_vcpu_pack=15",
            "",
        ] {
            assert_eq!(
                wake_placement_of_cmdline(other),
                WakePlacement::Default,
                "{other}"
            );
        }
        assert_eq!(sched_of_kernel("linux"), None);
    }

    fn cell(preset: &str, load: &str, real: f64, sim: f64) -> Cell {
        let key_real = [RunFigures {
            pause_ms: real,
            parallel_ms: real,
            outside_parallel_ms: 0.0,
            collections: 1,
        }];
        let sim = RunFigures {
            pause_ms: sim,
            ..key_real[0]
        };
        let mut c = Cell::new(
            &CellKey {
                workload: Workload {
                    name: "w",
                    size: None,
                },
                preset: "vanilla",
                load: None,
                gc_threads: 2,
            },
            &key_real,
            &sim,
        );
        c.preset = preset.to_string();
        c.load = load.to_string();
        c
    }

    #[test]
    fn a_runs_figures_are_the_medians_of_its_records() {
        let records = "{\"pause_ms\": 3.0, \"phases\": {\"parallel_ms\": 2.0}}\n\
                       {\"pause_ms\": 1.0, \"phases\": {\"parallel_ms\": 0.5}}\n\
                       {\"pause_ms\": 10.0, \"phases\": {\"parallel_ms\": 9.0}}\n\
                       {\"pause_ms\": 2.0, \"phases\": {\"parallel_ms\": 1.0}}\n";
        let f = run_figures(records).unwrap();
        // Pauses 1, 2, 3, 10: median (2 + 3) / 2; parallel 0.5, 1, 2, 9: 1.5; outside 0.5, 1,
        // 1, 1: 1.
        assert_eq!(
            f,
            RunFigures {
                pause_ms: 2.5,
                parallel_ms: 1.5,
                outside_parallel_ms: 1.0,
                collections: 4,
            }
        );
        assert!(run_figures("")
            .unwrap_err()
            .to_string()
            .contains("no collection"));
        let err = run_figures("{\"pause_ms\": 1.0}\n{\"id\": 2}\n").unwrap_err();
        assert!(
            err.to_string().contains("record 2 has no pause_ms"),
            "{err}"
        );
    }

    #[test]
    fn a_cell_takes_the_median_of_the_real_runs_and_its_ratio() {
        let run = |pause_ms| RunFigures {
            pause_ms,
            parallel_ms: pause_ms - 0.5,
            outside_parallel_ms: 0.5,
            collections: 10,
        };
        let key = CellKey {
            workload: Workload {
                name: "binary-trees",
                size: Some("18"),
            },
            preset: "modern",
            load: Some(BUSY_LOAD),
            gc_threads: 4,
        };
        let c = Cell::new(&key, &[run(4.0), run(1.0), run(2.0)], &run(2.4));
        assert_eq!(
            (c.workload.as_str(), c.load.as_str()),
            ("binary-trees 18", "busy:1@0")
        );
        assert_eq!((c.real_gc_ms, c.sim_gc_ms), (2.0, 2.4));
        assert!((c.ratio - 1.2).abs() < 1e-12);
        assert!(c.within);
        assert_eq!(c.real_runs_ms, vec![4.0, 1.0, 2.0]);
        // 4 and 1 are 2× and ½× the median 2.
        assert!(!c.real_stable);
        let steady = Cell::new(&key, &[run(2.0), run(2.5), run(1.5)], &run(2.4));
        assert!(steady.real_stable);
        let shaky = Cell::new(&key, &[run(2.0), run(2.6), run(1.5)], &run(2.4));
        assert!(!shaky.real_stable);
        assert_eq!(key.stem(true), "binary-trees-18-modern-4t-busy-1-0");
    }

    #[test]
    fn within_is_a_ratio_inside_three_quarters_to_five_quarters() {
        for (ratio, expected) in [
            (1.0, true),
            (1.25, true),
            (0.75, true),
            (1.26, false),
            (0.74, false),
            (f64::INFINITY, false),
            (f64::NAN, false),
        ] {
            assert_eq!(within(ratio), expected, "{ratio}");
        }
    }

    #[test]
    fn groups_compare_the_preset_orders_and_shares_count_them() {
        let cells = vec![
            // Same order: real v < m < o, sim v < m < o.
            cell("vanilla", "none", 1.0, 1.1),
            cell("modern", "none", 2.0, 1.5),
            cell("optimized", "none", 3.0, 4.0),
            // Different: real o < v < m, sim v < o < m.
            cell("vanilla", "busy:1@0", 2.0, 1.0),
            cell("modern", "busy:1@0", 3.0, 3.0),
            cell("optimized", "busy:1@0", 1.0, 2.0),
        ];
        let groups = groups(&cells);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].real_order, ["vanilla", "modern", "optimized"]);
        assert!(groups[0].same_order);
        assert_eq!(groups[1].real_order, ["optimized", "vanilla", "modern"]);
        assert_eq!(groups[1].sim_order, ["vanilla", "optimized", "modern"]);
        assert!(!groups[1].same_order);
        assert_eq!(share(&groups, |g| g.same_order), 0.5);
        // Within: 1.1, 0.75, 1.33, 0.5, 1.0, 2.0: three of six.
        assert_eq!(share(&cells, |c| c.within), 0.5);
        assert_eq!(share(&[] as &[Cell], |c| c.within), 0.0);
    }
}
