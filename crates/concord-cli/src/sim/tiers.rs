//! `concord sim validate --tier 0|1|2|all`: the simulator validated in tiers that separate its
//! cost model, its protocols and its placement, each against real runs on this machine.
//!
//! * **Tier 0, the cost model.** One GC thread; the worker pinned by static GC affinity (to
//!   CPU 0) and the VM thread to CPU 1 (`--vm-thread-cpu 1`), on both sides. The workloads
//!   make the same collections on every run (one GC thread, a seeded workload), so each
//!   simulated collection is matched to the same collection of every real run (same number,
//!   same bytes copied), and the ratio is taken collection by collection.
//! * **Tier 1, the protocols with placement fixed.** Static GC affinity and the VM thread
//!   pinned, 2 and 4 GC threads, the presets vanilla, suo18, modern and optimized: the parallel
//!   phase's median and p90, and the counters of the protocols (steal attempts, failed steals,
//!   items stolen, termination entries, the share of collections where one worker did ≥ 90 %
//!   of the items).
//! * **Tier 2, placement.** Each preset's own placement (nothing pinned), under the model of
//!   this machine's wake-up placement (`--wake-placement pack` on a kernel booted with
//!   `sched_vcpu_pack`, `default` otherwise; `--wake-placement` chooses), with the CFS 4.9 and EEVDF
//!   models' default placement beside it: the share of collections whose workers all ran on
//!   one CPU, and the parallel phase's median split by stacked and spread collections.
//!
//! Every cell gets at least [`MIN_RUNS`] real runs (fewer only with `--quick` or `--repeat`,
//! and then the output says so), in a random order redrawn every round, so that a slow spell
//! of the machine falls on every cell. Every run records the 1-minute load average, the share
//! of the CPUs other processes kept busy in the [`QUIET_WINDOW`] before it started, and the
//! share of CPU time stolen by the hypervisor while it ran; runs that started under load
//! (busy share above [`LOADED_BUSY`]) are reported apart, and the cell's figures are those of
//! the quiet runs when at least three are quiet. The intervals are 95 % percentile bootstraps
//! of the median over the runs. Each cell is simulated from a trace recorded by a separate,
//! untimed run of the cell (tracing slows collections) under [`SIM_SEEDS`] seeds.
//!
//! The real runs are serial (they measure this machine); the simulations, which measure
//! nothing of the host, run `--jobs` at a time. `--shard K/N` runs every N-th cell from the
//! K-th and writes its cells to `--out DIR`; `--merge DIR…` joins the shards of a grid and
//! reports as one run would.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use concord::parallel::rng::XorShift;
use concord_sim::replay::driver::SchedModel;
use concord_sim::sched::WakePlacement;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::papers::PapersResult;
use super::stats::{bootstrap_median, loadavg1, median, quantile, seed_of, CpuTicks};
use super::validate::{concord, path_arg, Stopped, Workload};
use crate::console::{errln, outln};
use crate::RunFailed;

/// Real runs per cell the tiers ask for.
pub const MIN_RUNS: usize = 7;

/// Seeds each cell is simulated under.
pub const SIM_SEEDS: [u64; 3] = [1, 2, 3];

/// How long the machine's load is sampled before each real run.
pub const QUIET_WINDOW: std::time::Duration = std::time::Duration::from_millis(300);

/// A run started under load when other processes kept more than this share of the CPUs busy
/// in the [`QUIET_WINDOW`] before it.
pub const LOADED_BUSY: f64 = 0.25;

/// The CPU the VM thread is pinned to where a tier pins it (the worker of tier 0 is on CPU 0).
const VM_CPU: &str = "1";

/// The simulated machine: this one's 2 CPUs.
const SIM_CPUS: &str = "2";

/// A tier of the validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Tier {
    Cost,
    Protocols,
    Placement,
}

impl Tier {
    /// Every tier, in order.
    pub const ALL: [Tier; 3] = [Tier::Cost, Tier::Protocols, Tier::Placement];

    /// Its number.
    pub fn number(self) -> u32 {
        match self {
            Tier::Cost => 0,
            Tier::Protocols => 1,
            Tier::Placement => 2,
        }
    }

    fn what(self) -> &'static str {
        match self {
            Tier::Cost => "the cost model (1 GC thread, pinned)",
            Tier::Protocols => "the protocols with placement fixed (static GC affinity)",
            Tier::Placement => "placement (unpinned, this machine's wake-up placement model)",
        }
    }
}

/// The tiers `--tier` asked for: the grids of tiers 0–2 and whether tier 3 (the papers'
/// figures, [`super::papers`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiers {
    pub grids: Vec<Tier>,
    pub papers: bool,
}

/// Parses `--tier`: `0`, `1`, `2`, `3` or `all`.
pub fn parse_tiers(text: &str) -> std::result::Result<Tiers, String> {
    let grids = |grids: Vec<Tier>| Tiers {
        grids,
        papers: false,
    };
    match text.trim() {
        "0" => Ok(grids(vec![Tier::Cost])),
        "1" => Ok(grids(vec![Tier::Protocols])),
        "2" => Ok(grids(vec![Tier::Placement])),
        "3" => Ok(Tiers {
            grids: Vec::new(),
            papers: true,
        }),
        "all" => Ok(Tiers {
            grids: Tier::ALL.to_vec(),
            papers: true,
        }),
        other => Err(format!(
            "'{other}' is not a tier (allowed: 0, 1, 2, 3 or all)"
        )),
    }
}

/// `--shard K/N`: this is shard `index` (from 0) of `count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// Parses `K/N` with 1 ≤ K ≤ N.
pub fn parse_shard(text: &str) -> std::result::Result<Shard, String> {
    let bad = || format!("'{text}' is not a shard (allowed: K/N with 1 <= K <= N, such as 2/8)");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let (k, n): (usize, usize) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if k == 0 || k > n {
        return Err(bad());
    }
    Ok(Shard {
        index: k - 1,
        count: n,
    })
}

/// The workloads of every tier: the five.
const WORKLOADS: [Workload; 5] = [
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
    Workload {
        name: "search",
        size: None,
    },
    Workload {
        name: "transform",
        size: None,
    },
];

/// The tiny grid of `--quick`: for tests of the plumbing, not for conclusions.
const QUICK_WORKLOADS: [Workload; 1] = [Workload {
    name: "binary-trees",
    size: Some("14"),
}];

/// One cell of a tier's grid.
#[derive(Clone, Debug)]
struct CellKey {
    tier: Tier,
    /// Its place in the grid (shards and merges keep grid order by it).
    index: usize,
    workload: Workload,
    preset: &'static str,
    gc_threads: usize,
}

impl CellKey {
    fn pinned(&self) -> bool {
        self.tier != Tier::Placement
    }

    fn stem(&self) -> String {
        format!(
            "tier{}-{}-{}-{}t",
            self.tier.number(),
            self.workload.args().join("-"),
            self.preset,
            self.gc_threads
        )
    }

    fn label(&self) -> String {
        format!(
            "{} {} {} GC thread{}",
            self.workload.label(),
            self.preset,
            self.gc_threads,
            if self.gc_threads == 1 { "" } else { "s" }
        )
    }

    /// The flags both sides share: workload, preset, GC threads and, where the tier fixes
    /// placement, static GC affinity and the VM thread's CPU.
    fn common_args(&self) -> Vec<String> {
        let mut args = self.workload.args();
        args.extend([
            "--preset".into(),
            self.preset.into(),
            "--gc-threads".into(),
            self.gc_threads.to_string(),
        ]);
        if self.pinned() {
            args.extend([
                "--gc-affinity".into(),
                "static".into(),
                "--vm-thread-cpu".into(),
                VM_CPU.into(),
            ]);
        }
        if self.tier == Tier::Cost {
            // Nothing of the preset's start-up placement: the worker goes straight to CPU 0.
            args.push("--pin-start=false".into());
        }
        args
    }
}

/// The cells of `tier`, in grid order.
fn grid(tier: Tier, quick: bool) -> Vec<CellKey> {
    let workloads: &[Workload] = if quick { &QUICK_WORKLOADS } else { &WORKLOADS };
    let (presets, threads): (&[&'static str], &[usize]) = match (tier, quick) {
        (Tier::Cost, _) => (&["optimized"], &[1]),
        (_, true) => (&["vanilla", "optimized"], &[2]),
        (_, false) => (&["vanilla", "suo18", "modern", "optimized"], &[2, 4]),
    };
    let mut cells = Vec::new();
    for &workload in workloads {
        for &gc_threads in threads {
            for &preset in presets {
                cells.push(CellKey {
                    tier,
                    index: cells.len(),
                    workload,
                    preset,
                    gc_threads,
                });
            }
        }
    }
    cells
}

/// One collection of a run, from its `--gc-records` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Collection {
    pub id: u64,
    /// A full collection (otherwise young).
    pub full: bool,
    pub pause_ms: f64,
    pub parallel_ms: f64,
    pub bytes_copied: u64,
    /// Items over all workers, and the most one worker did.
    pub items: u64,
    pub max_worker_items: u64,
    pub steal_attempts: u64,
    pub steal_failures: u64,
    pub stolen: u64,
    pub termination_entries: u64,
    /// Every CPU a worker was seen on during the collection.
    pub cpus: BTreeSet<u32>,
}

impl Collection {
    /// Whether one worker did ≥ 90 % of the items (`None` below 1000 items: too few to say).
    pub fn one_worker_did_most(&self) -> Option<bool> {
        (self.items >= 1000).then_some(self.max_worker_items as f64 >= 0.9 * self.items as f64)
    }

    /// Whether every worker ran on one CPU (`None` when no CPU was recorded).
    pub fn stacked(&self) -> Option<bool> {
        (!self.cpus.is_empty()).then_some(self.cpus.len() == 1)
    }
}

/// The collections of a `--gc-records` file; a line that is not a record is an error naming
/// it.
pub fn collections(records: &str) -> Result<Vec<Collection>> {
    let mut out = Vec::new();
    for (n, line) in records.lines().enumerate() {
        let r: Value =
            serde_json::from_str(line).with_context(|| format!("record {} is not JSON", n + 1))?;
        let pause_ms = r["pause_ms"]
            .as_f64()
            .ok_or_else(|| anyhow!("record {} has no pause_ms", n + 1))?;
        let mut c = Collection {
            id: r["id"].as_u64().unwrap_or(n as u64),
            full: r["kind"].as_str() == Some("full"),
            pause_ms,
            parallel_ms: r["phases"]["parallel_ms"].as_f64().unwrap_or(pause_ms),
            bytes_copied: r["bytes_copied"].as_u64().unwrap_or(0),
            ..Collection::default()
        };
        for w in r["workers"].as_array().into_iter().flatten() {
            let u = |key: &str| w[key].as_u64().unwrap_or(0);
            c.items += u("items");
            c.max_worker_items = c.max_worker_items.max(u("items"));
            c.steal_attempts += u("steal_attempts");
            c.steal_failures += u("steal_failures");
            c.stolen += u("stolen");
            c.termination_entries += u("termination_entries");
            if let Some(cpus) = w["cpus"].as_object() {
                c.cpus
                    .extend(cpus.keys().filter_map(|k| k.parse::<u32>().ok()));
            }
        }
        out.push(c);
    }
    if out.is_empty() {
        bail!("the run made no collection");
    }
    Ok(out)
}

/// What the machine did around one real run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunLoad {
    /// The 1-minute load average when it started.
    pub loadavg1: Option<f64>,
    /// The share of the CPUs busy in the [`QUIET_WINDOW`] before it (this program idle).
    pub busy_before: Option<f64>,
    /// The share of CPU time the hypervisor stole while it ran.
    pub steal: Option<f64>,
}

impl RunLoad {
    /// Whether it started under load ([`LOADED_BUSY`]); unknown counts as quiet.
    pub fn loaded(&self) -> bool {
        self.busy_before.is_some_and(|b| b > LOADED_BUSY)
    }
}

/// One real run's collections and load.
#[derive(Clone, Debug)]
struct RealRun {
    collections: Vec<Collection>,
    load: RunLoad,
}

/// The protocols' counters, per collection (means over a run's collections; the share over
/// collections of at least 1000 items).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub steal_attempts: f64,
    pub steal_failures: f64,
    pub stolen: f64,
    pub termination_entries: f64,
    pub one_worker_90pct_share: f64,
}

impl Counters {
    fn of(collections: &[Collection]) -> Counters {
        let n = collections.len().max(1) as f64;
        let mean = |f: fn(&Collection) -> u64| collections.iter().map(f).sum::<u64>() as f64 / n;
        let most: Vec<bool> = collections
            .iter()
            .filter_map(Collection::one_worker_did_most)
            .collect();
        Counters {
            steal_attempts: mean(|c| c.steal_attempts),
            steal_failures: mean(|c| c.steal_failures),
            stolen: mean(|c| c.stolen),
            termination_entries: mean(|c| c.termination_entries),
            one_worker_90pct_share: share(&most),
        }
    }

    fn fields(&self) -> [(&'static str, f64); 5] {
        [
            ("steal_attempts", self.steal_attempts),
            ("steal_failures", self.steal_failures),
            ("stolen", self.stolen),
            ("termination_entries", self.termination_entries),
            ("one_worker_90pct_share", self.one_worker_90pct_share),
        ]
    }

    /// The median over `runs` of each counter.
    fn median_of(runs: &[Counters]) -> Counters {
        let m = |f: fn(&Counters) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        Counters {
            steal_attempts: m(|c| c.steal_attempts),
            steal_failures: m(|c| c.steal_failures),
            stolen: m(|c| c.stolen),
            termination_entries: m(|c| c.termination_entries),
            one_worker_90pct_share: m(|c| c.one_worker_90pct_share),
        }
    }
}

/// The share of `flags` that are true (0 for none).
fn share(flags: &[bool]) -> f64 {
    if flags.is_empty() {
        return 0.0;
    }
    flags.iter().filter(|&&b| b).count() as f64 / flags.len() as f64
}

/// One counter compared: within ±20 % of the real median, or inside the real runs' range.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterCheck {
    pub name: String,
    pub real: f64,
    pub real_min: f64,
    pub real_max: f64,
    pub sim: f64,
    pub pass: bool,
}

/// The real side of a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RealFigures {
    /// Runs the figures are of (the quiet ones when at least three were quiet).
    pub runs: usize,
    /// Median over those runs of each run's median parallel phase, ms.
    pub median_ms: f64,
    /// Median over them of each run's p90 parallel phase, ms.
    pub p90_ms: f64,
    /// The 95 % bootstrap interval of `median_ms`.
    pub ci95: [f64; 2],
    /// The whole pause: median of the runs' medians, and its interval.
    pub pause_median_ms: f64,
    pub pause_ci95: [f64; 2],
    /// Runs that started quiet, and the median parallel phase of those that did not.
    pub quiet_runs: usize,
    pub loaded_median_ms: Option<f64>,
    /// Every run's load, in the order they ran.
    pub loads: Vec<RunLoad>,
}

/// The simulated side of a cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimFigures {
    /// Median over the seeds of each seed's median parallel phase, ms.
    pub median_ms: f64,
    pub p90_ms: f64,
    pub pause_median_ms: f64,
    /// Each seed's median parallel phase, ms.
    pub seeds_ms: Vec<f64>,
}

/// Tier 0: the collections matched one to one.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matched {
    /// Collections in the trace, and how many every real run made identically (same number,
    /// same bytes copied).
    pub collections: usize,
    pub matched: usize,
    /// Real runs whose collections all match the trace's.
    pub matched_runs: usize,
    /// Median over the matched collections of sim / real (parallel phase; whole pause).
    pub median_ratio: f64,
    pub pause_median_ratio: f64,
    /// The share of matched collections whose ratio is within ±25 %.
    pub within_25pct: f64,
    pub pause_within_25pct: f64,
}

/// Tier 2: where the workers ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// The share of collections whose workers all ran on one CPU: real (median over runs),
    /// and simulated under the placement model and beside it the plain CFS 4.9 and EEVDF
    /// models.
    pub real_stacked_share: f64,
    pub sim_stacked_share: f64,
    pub cfs_stacked_share: f64,
    pub eevdf_stacked_share: f64,
    /// Median parallel phase of the stacked and of the spread collections (pooled over runs),
    /// ms; `None` where a side had none.
    pub real_stacked_ms: Option<f64>,
    pub real_spread_ms: Option<f64>,
    pub sim_stacked_ms: Option<f64>,
    pub sim_spread_ms: Option<f64>,
    pub cfs_median_ms: f64,
    pub eevdf_median_ms: f64,
}

/// One cell of a tier, measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierCell {
    /// Its place in the grid.
    pub index: usize,
    pub workload: String,
    pub preset: String,
    pub gc_threads: usize,
    pub pinned: bool,
    pub real: RealFigures,
    pub sim: SimFigures,
    pub counters: CounterPair,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub matched: Option<Matched>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub placement: Option<Placement>,
    /// Each target of the tier and whether the cell meets it.
    pub checks: Vec<(String, bool)>,
    pub pass: bool,
}

/// The counters of both sides and their comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CounterPair {
    pub real: Counters,
    pub sim: Counters,
    pub compared: Vec<CounterCheck>,
}

/// A tier's result: its cells and the share that pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TierResult {
    pub tier: u32,
    pub cells: Vec<TierCell>,
    pub pass_fraction: f64,
    /// The share of cells the tier needs to pass ([`tier_target`]).
    pub target: f64,
    pub pass: bool,
    /// What was measured with: real runs per cell, seeds, the scheduler model, the costs.
    pub repeat: usize,
    pub seeds: Vec<u64>,
    pub sched: String,
    /// Tier 2's wake-up placement model (`default` or `pack`); absent in results written
    /// before it could be chosen, which used `pack`.
    #[serde(default = "pack_name")]
    pub wake_placement: String,
    pub costs: Option<String>,
    pub quick: bool,
    /// With `--shard`: which part of the grid this is.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shard: Option<Shard>,
    /// Cells in the whole grid.
    pub grid_cells: usize,
}

fn pack_name() -> String {
    WakePlacement::Pack.to_string()
}

/// The share of a tier's cells that must pass: tier 0, every workload (its targets are per
/// workload); tiers 1 and 2, 80 %.
pub fn tier_target(tier: Tier) -> f64 {
    match tier {
        Tier::Cost => 1.0,
        Tier::Protocols | Tier::Placement => 0.8,
    }
}

/// `|a / b − 1| ≤ tolerance`.
fn within(a: f64, b: f64, tolerance: f64) -> bool {
    let r = a / b;
    r.is_finite() && (r - 1.0).abs() <= tolerance + 1e-12
}

/// Per-run medians and p90s of the parallel phase, and medians of the pause.
fn run_figures(collections: &[Collection]) -> (f64, f64, f64) {
    let par: Vec<f64> = collections.iter().map(|c| c.parallel_ms).collect();
    let pause: Vec<f64> = collections.iter().map(|c| c.pause_ms).collect();
    (median(&par), quantile(&par, 0.9), median(&pause))
}

fn real_figures<'r>(key: &CellKey, runs: &'r [RealRun]) -> (RealFigures, Vec<&'r RealRun>) {
    let quiet: Vec<&RealRun> = runs.iter().filter(|r| !r.load.loaded()).collect();
    let loaded: Vec<&RealRun> = runs.iter().filter(|r| r.load.loaded()).collect();
    let used: Vec<&RealRun> = if quiet.len() >= 3 {
        quiet.clone()
    } else {
        runs.iter().collect()
    };
    let figures: Vec<(f64, f64, f64)> = used.iter().map(|r| run_figures(&r.collections)).collect();
    let medians: Vec<f64> = figures.iter().map(|f| f.0).collect();
    let pauses: Vec<f64> = figures.iter().map(|f| f.2).collect();
    let seed = seed_of(&key.stem());
    let loaded_median_ms = (!loaded.is_empty()).then(|| {
        median(
            &loaded
                .iter()
                .map(|r| run_figures(&r.collections).0)
                .collect::<Vec<_>>(),
        )
    });
    (
        RealFigures {
            runs: used.len(),
            median_ms: median(&medians),
            p90_ms: median(&figures.iter().map(|f| f.1).collect::<Vec<_>>()),
            ci95: bootstrap_median(&medians, seed),
            pause_median_ms: median(&pauses),
            pause_ci95: bootstrap_median(&pauses, seed ^ 1),
            quiet_runs: quiet.len(),
            loaded_median_ms,
            loads: runs.iter().map(|r| r.load).collect(),
        },
        used,
    )
}

fn sim_figures(seeds: &[Vec<Collection>]) -> SimFigures {
    let figures: Vec<(f64, f64, f64)> = seeds.iter().map(|s| run_figures(s)).collect();
    let m = |f: fn(&(f64, f64, f64)) -> f64| median(&figures.iter().map(f).collect::<Vec<_>>());
    SimFigures {
        median_ms: m(|f| f.0),
        p90_ms: m(|f| f.1),
        pause_median_ms: m(|f| f.2),
        seeds_ms: figures.iter().map(|f| f.0).collect(),
    }
}

fn compare_counters(real_runs: &[&RealRun], sim: &[Vec<Collection>]) -> CounterPair {
    let per_run: Vec<Counters> = real_runs
        .iter()
        .map(|r| Counters::of(&r.collections))
        .collect();
    let real = Counters::median_of(&per_run);
    let sim = Counters::median_of(&sim.iter().map(|s| Counters::of(s)).collect::<Vec<_>>());
    let compared = real
        .fields()
        .into_iter()
        .zip(sim.fields())
        .enumerate()
        .map(|(i, ((name, r), (_, s)))| {
            let values: Vec<f64> = per_run.iter().map(|c| c.fields()[i].1).collect();
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let inside = s >= lo - 1e-12 && s <= hi + 1e-12;
            let both_zero = r == 0.0 && s == 0.0;
            CounterCheck {
                name: name.to_string(),
                real: r,
                real_min: lo,
                real_max: hi,
                sim: s,
                pass: both_zero || within(s, r, 0.20) || inside,
            }
        })
        .collect();
    CounterPair {
        real,
        sim,
        compared,
    }
}

/// Tier 0's one-to-one match of the simulated collections with every real run's.
fn matched(real_runs: &[&RealRun], sim: &[Vec<Collection>]) -> Matched {
    let Some(reference) = sim.first() else {
        return Matched {
            collections: 0,
            matched: 0,
            matched_runs: 0,
            median_ratio: f64::NAN,
            pause_median_ratio: f64::NAN,
            within_25pct: 0.0,
            pause_within_25pct: 0.0,
        };
    };
    // A young collection's bytes copied are the trace's to the byte; a full collection's
    // record counts the bytes its compaction moved, which leaves out live objects already in
    // place at the bottom of the old generation, while its trace holds every marked object:
    // within 1 %.
    let same = |a: &Collection, b: &Collection| {
        let bytes = if a.full {
            a.bytes_copied.abs_diff(b.bytes_copied) as f64 <= 0.01 * b.bytes_copied as f64
        } else {
            a.bytes_copied == b.bytes_copied
        };
        a.id == b.id && a.full == b.full && bytes
    };
    let runs: Vec<&&RealRun> = real_runs
        .iter()
        .filter(|r| {
            r.collections.len() == reference.len()
                && r.collections.iter().zip(reference).all(|(a, b)| same(a, b))
        })
        .collect();
    // Collection by collection: the median over the matching runs against the median over
    // the seeds.
    let mut ratios = Vec::new();
    let mut pause_ratios = Vec::new();
    if !runs.is_empty() {
        for (i, _) in reference.iter().enumerate() {
            let real = median(
                &runs
                    .iter()
                    .map(|r| r.collections[i].parallel_ms)
                    .collect::<Vec<_>>(),
            );
            let real_pause = median(
                &runs
                    .iter()
                    .map(|r| r.collections[i].pause_ms)
                    .collect::<Vec<_>>(),
            );
            let simulated = median(&sim.iter().map(|s| s[i].parallel_ms).collect::<Vec<_>>());
            let sim_pause = median(&sim.iter().map(|s| s[i].pause_ms).collect::<Vec<_>>());
            ratios.push(simulated / real);
            pause_ratios.push(sim_pause / real_pause);
        }
    }
    let within25 = |v: &[f64]| share(&v.iter().map(|&r| within(r, 1.0, 0.25)).collect::<Vec<_>>());
    Matched {
        collections: reference.len(),
        matched: ratios.len(),
        matched_runs: runs.len(),
        median_ratio: median(&ratios),
        pause_median_ratio: median(&pause_ratios),
        within_25pct: within25(&ratios),
        pause_within_25pct: within25(&pause_ratios),
    }
}

/// The stacked share of a run's collections.
fn stacked_share(collections: &[Collection]) -> f64 {
    share(
        &collections
            .iter()
            .filter_map(Collection::stacked)
            .collect::<Vec<_>>(),
    )
}

/// The median parallel phase of the collections that are (or are not) stacked.
fn split_median<'a>(
    collections: impl Iterator<Item = &'a Collection>,
    stacked: bool,
) -> Option<f64> {
    let v: Vec<f64> = collections
        .filter(|c| c.stacked() == Some(stacked))
        .map(|c| c.parallel_ms)
        .collect();
    (!v.is_empty()).then(|| median(&v))
}

/// The simulations of a cell: under the tier's model, and for tier 2 also under the plain
/// CFS and EEVDF models.
struct Simulated {
    seeds: Vec<Vec<Collection>>,
    cfs: Vec<Vec<Collection>>,
    eevdf: Vec<Vec<Collection>>,
}

fn placement(real_runs: &[&RealRun], sim: &Simulated) -> Placement {
    let real_share = median(
        &real_runs
            .iter()
            .map(|r| stacked_share(&r.collections))
            .collect::<Vec<_>>(),
    );
    let shares = |runs: &[Vec<Collection>]| {
        median(&runs.iter().map(|s| stacked_share(s)).collect::<Vec<_>>())
    };
    let real_all = || real_runs.iter().flat_map(|r| r.collections.iter());
    let sim_all = || sim.seeds.iter().flatten();
    Placement {
        real_stacked_share: real_share,
        sim_stacked_share: shares(&sim.seeds),
        cfs_stacked_share: shares(&sim.cfs),
        eevdf_stacked_share: shares(&sim.eevdf),
        real_stacked_ms: split_median(real_all(), true),
        real_spread_ms: split_median(real_all(), false),
        sim_stacked_ms: split_median(sim_all(), true),
        sim_spread_ms: split_median(sim_all(), false),
        cfs_median_ms: sim_figures(&sim.cfs).median_ms,
        eevdf_median_ms: sim_figures(&sim.eevdf).median_ms,
    }
}

/// Whether split medians agree within ±20 %: both sides without such collections agree; one
/// side without them does not.
fn split_agrees(real: Option<f64>, sim: Option<f64>) -> bool {
    match (real, sim) {
        (None, None) => true,
        (Some(r), Some(s)) => within(s, r, 0.20),
        _ => false,
    }
}

/// A measured cell: its figures and its checks against the tier's targets.
fn cell(key: &CellKey, runs: &[RealRun], sim: &Simulated) -> TierCell {
    let (real, used) = real_figures(key, runs);
    let sim_fig = sim_figures(&sim.seeds);
    let counters = compare_counters(&used, &sim.seeds);
    let mut checks: Vec<(String, bool)> = Vec::new();
    let mut matched_figures = None;
    let mut placement_figures = None;
    match key.tier {
        Tier::Cost => {
            let m = matched(&used, &sim.seeds);
            checks.push((
                "collections matched one to one".into(),
                m.matched > 0 && m.matched_runs == used.len(),
            ));
            checks.push((
                "median sim/real within ±10 % (parallel phase)".into(),
                within(m.median_ratio, 1.0, 0.10),
            ));
            checks.push((
                "≥ 90 % of collections within ±25 % (parallel phase)".into(),
                m.within_25pct >= 0.9,
            ));
            matched_figures = Some(m);
        }
        Tier::Protocols => {
            checks.push((
                "parallel-phase median within ±15 %".into(),
                within(sim_fig.median_ms, real.median_ms, 0.15),
            ));
            checks.push((
                "parallel-phase p90 within ±25 %".into(),
                within(sim_fig.p90_ms, real.p90_ms, 0.25),
            ));
            checks.push((
                "counters within ±20 % or inside the real range".into(),
                counters.compared.iter().all(|c| c.pass),
            ));
        }
        Tier::Placement => {
            let p = placement(&used, sim);
            checks.push((
                "stacked share within ±15 points".into(),
                (p.sim_stacked_share - p.real_stacked_share).abs() <= 0.15 + 1e-12,
            ));
            checks.push((
                "stacked and spread medians within ±20 %".into(),
                split_agrees(p.real_stacked_ms, p.sim_stacked_ms)
                    && split_agrees(p.real_spread_ms, p.sim_spread_ms),
            ));
            placement_figures = Some(p);
        }
    }
    TierCell {
        index: key.index,
        workload: key.workload.label(),
        preset: key.preset.to_string(),
        gc_threads: key.gc_threads,
        pinned: key.pinned(),
        pass: checks.iter().all(|(_, ok)| *ok),
        real,
        sim: sim_fig,
        counters,
        matched: matched_figures,
        placement: placement_figures,
        checks,
    }
}

/// What `concord sim validate --tier` was asked.
pub struct TierRun<'a> {
    pub exe: &'a Path,
    pub quick: bool,
    pub repeat: Option<usize>,
    pub costs: Option<&'a Path>,
    pub sched: SchedModel,
    /// Tier 2's wake-up placement model.
    pub wake_placement: WakePlacement,
    pub dir: &'a Path,
    pub jobs: usize,
    pub shard: Option<Shard>,
}

impl TierRun<'_> {
    fn repeat(&self) -> usize {
        self.repeat.unwrap_or(if self.quick { 2 } else { MIN_RUNS })
    }

    fn seeds(&self) -> Vec<u64> {
        if self.quick {
            SIM_SEEDS[..1].to_vec()
        } else {
            SIM_SEEDS.to_vec()
        }
    }

    /// Measures `tier` (this run's shard of it).
    pub fn measure(&self, tier: Tier) -> Result<TierResult> {
        let all = grid(tier, self.quick);
        let grid_cells = all.len();
        let keys: Vec<CellKey> = match self.shard {
            Some(s) => all
                .into_iter()
                .filter(|k| k.index % s.count == s.index)
                .collect(),
            None => all,
        };
        let repeat = self.repeat();
        let seeds = self.seeds();
        let label = format!("concord sim validate: tier {}", tier.number());
        // The traces: one untimed, recorded run per cell.
        for (n, key) in keys.iter().enumerate() {
            errln!(
                "{label}: [{}/{}] recording {}",
                n + 1,
                keys.len(),
                key.label()
            );
            let mut args = vec!["run".to_string()];
            args.extend(key.common_args());
            args.extend(["--gc-trace".into(), path_arg(&self.trace(key))]);
            concord(self.exe, &args)?;
        }
        // The real runs, serial, in a new random order every round.
        let mut real: Vec<Vec<RealRun>> = vec![Vec::new(); keys.len()];
        let mut rng = XorShift::new(0x5eed ^ u64::from(tier.number()));
        let total = keys.len() * repeat;
        let mut done = 0;
        for round in 0..repeat {
            let mut order: Vec<usize> = (0..keys.len()).collect();
            for i in (1..order.len()).rev() {
                order.swap(i, rng.below(i + 1));
            }
            for i in order {
                let key = &keys[i];
                done += 1;
                errln!(
                    "{label}: [{done}/{total}] run {}/{repeat} of {}",
                    round + 1,
                    key.label()
                );
                real[i].push(self.real_run(key, round)?);
            }
        }
        // The simulations, `jobs` at a time.
        let mut jobs: Vec<(usize, Model, u64)> = Vec::new();
        for i in 0..keys.len() {
            for &seed in &seeds {
                jobs.push((i, Model::Tier, seed));
                if tier == Tier::Placement {
                    jobs.push((i, Model::Cfs, seed));
                    jobs.push((i, Model::Eevdf, seed));
                }
            }
        }
        let results = self.simulate_all(&keys, &jobs, &label)?;
        let mut cells = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let of = |model: Model| -> Vec<Vec<Collection>> {
                jobs.iter()
                    .zip(&results)
                    .filter(|((j, m, _), _)| *j == i && *m == model)
                    .map(|(_, c)| c.clone())
                    .collect()
            };
            let sim = Simulated {
                seeds: of(Model::Tier),
                cfs: of(Model::Cfs),
                eevdf: of(Model::Eevdf),
            };
            cells.push(cell(key, &real[i], &sim));
        }
        Ok(self.result(tier, cells, repeat, seeds, grid_cells))
    }

    fn result(
        &self,
        tier: Tier,
        cells: Vec<TierCell>,
        repeat: usize,
        seeds: Vec<u64>,
        grid_cells: usize,
    ) -> TierResult {
        summarize(TierResult {
            tier: tier.number(),
            cells,
            pass_fraction: 0.0,
            target: tier_target(tier),
            pass: false,
            repeat,
            seeds,
            sched: self.sched.to_string(),
            wake_placement: self.wake_placement.to_string(),
            costs: self.costs.map(|c| c.display().to_string()),
            quick: self.quick,
            shard: self.shard,
            grid_cells,
        })
    }

    fn trace(&self, key: &CellKey) -> PathBuf {
        self.dir.join(format!("{}.trace", key.stem()))
    }

    fn real_run(&self, key: &CellKey, round: usize) -> Result<RealRun> {
        let records = self
            .dir
            .join(format!("{}-run{}.jsonl", key.stem(), round + 1));
        let mut args = vec!["run".to_string()];
        args.extend(key.common_args());
        args.extend(["--json".into(), "--gc-records".into(), path_arg(&records)]);
        let loadavg = loadavg1();
        let before = CpuTicks::now();
        std::thread::sleep(QUIET_WINDOW);
        let start = CpuTicks::now();
        concord(self.exe, &args)?;
        let end = CpuTicks::now();
        let busy_before = before
            .zip(start)
            .and_then(|(b, s)| s.since(&b))
            .map(|x| x.0);
        let steal = start.zip(end).and_then(|(s, e)| e.since(&s)).map(|x| x.1);
        Ok(RealRun {
            collections: read_collections(&records, &args)?,
            load: RunLoad {
                loadavg1: loadavg,
                busy_before,
                steal,
            },
        })
    }

    fn sim_args(&self, key: &CellKey, model: Model, seed: u64, records: &Path) -> Vec<String> {
        let mut args = vec!["sim".to_string()];
        args.extend(key.common_args());
        args.extend(["--cpus".into(), SIM_CPUS.into()]);
        let sched = match model {
            Model::Tier => self.sched,
            Model::Cfs => SchedModel::Cfs,
            Model::Eevdf => SchedModel::Eevdf,
        };
        args.extend(["--sched".into(), sched.to_string()]);
        if model == Model::Tier && key.tier == Tier::Placement {
            args.extend(["--wake-placement".into(), self.wake_placement.to_string()]);
        }
        args.extend([
            "--seed".into(),
            seed.to_string(),
            "--trace".into(),
            path_arg(&self.trace(key)),
            "--json".into(),
            "--gc-records".into(),
            path_arg(records),
        ]);
        if let Some(costs) = self.costs {
            args.extend(["--costs".into(), path_arg(costs)]);
        }
        args
    }

    /// Runs the simulations of `jobs` (cell, model, seed), `self.jobs` at a time; their
    /// collections in the order of `jobs`.
    fn simulate_all(
        &self,
        keys: &[CellKey],
        jobs: &[(usize, Model, u64)],
        label: &str,
    ) -> Result<Vec<Vec<Collection>>> {
        in_parallel(self.jobs, jobs.len(), |n| {
            let (i, model, seed) = jobs[n];
            let key = &keys[i];
            errln!(
                "{label}: [{}/{}] simulating {} ({}, seed {seed})",
                n + 1,
                jobs.len(),
                key.label(),
                model.name()
            );
            let records = self.dir.join(format!(
                "{}-sim-{}-seed{seed}.jsonl",
                key.stem(),
                model.name()
            ));
            let args = self.sim_args(key, model, seed, &records);
            concord(self.exe, &args).and_then(|()| read_collections(&records, &args))
        })
    }
}

/// Runs jobs `0..count`, `jobs` at a time on threads of this process (each job is `run(n)`,
/// typically a child process), and returns their results in job order. After a failure no
/// new job starts and the first failure is returned; a stop by a signal wins over the
/// failures it caused.
pub(super) fn in_parallel<T: Send>(
    jobs: usize,
    count: usize,
    run: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<T>>>> = Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1).min(count.max(1)) {
            s.spawn(|| loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= count {
                    break;
                }
                let outcome = run(n);
                let failed = outcome.is_err();
                results.lock().unwrap_or_else(|p| p.into_inner())[n] = Some(outcome);
                if failed {
                    next.store(count, Ordering::Relaxed);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    if results
        .iter()
        .flatten()
        .any(|r| r.as_ref().is_err_and(|e| e.is::<Stopped>()))
    {
        return Err(Stopped.into());
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(anyhow!("a job was not run"))))
        .collect()
}

/// The simulator model a job runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Model {
    /// The tier's own: `--sched` (this kernel's by default), with the placement model in
    /// tier 2.
    Tier,
    /// CFS 4.9 with its own placement (tier 2, beside).
    Cfs,
    /// EEVDF with its own placement (tier 2, beside).
    Eevdf,
}

impl Model {
    fn name(self) -> &'static str {
        match self {
            Model::Tier => "model",
            Model::Cfs => "cfs",
            Model::Eevdf => "eevdf",
        }
    }
}

pub(super) fn read_collections(records: &Path, args: &[String]) -> Result<Vec<Collection>> {
    let what = format!("concord {}", args.join(" "));
    let text = std::fs::read_to_string(records)
        .map_err(|e| RunFailed::wrap(anyhow!("{what}: cannot read {}: {e}", records.display())))?;
    collections(&text).map_err(|e| RunFailed::wrap(anyhow!("{what}: {}: {e}", records.display())))
}

/// `result` with its pass fraction and verdict filled in from its cells.
pub fn summarize(mut result: TierResult) -> TierResult {
    result.cells.sort_by_key(|c| c.index);
    result.pass_fraction = share(&result.cells.iter().map(|c| c.pass).collect::<Vec<_>>());
    result.pass = !result.cells.is_empty() && result.pass_fraction >= result.target - 1e-12;
    result
}

/// The file a shard's (or a whole grid's) result is written to in `--out DIR`.
pub fn result_file(dir: &Path, tier: u32, shard: Option<Shard>) -> PathBuf {
    match shard {
        Some(s) => dir.join(format!("tier{tier}-shard{}of{}.json", s.index + 1, s.count)),
        None => dir.join(format!("tier{tier}.json")),
    }
}

/// Joins the shards found in `dirs` (files `tierT-shardKofN.json`): every tier must have each
/// of its N shards exactly once, measured alike (runs, seeds, model, costs, grid); the cells
/// in grid order, summarized as one run would be.
pub fn merge(dirs: &[PathBuf]) -> Result<Vec<Outcome>> {
    let mut parts: Vec<(PathBuf, TierResult)> = Vec::new();
    let mut papers: Vec<(PathBuf, PapersResult)> = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("--merge: cannot read the directory {}", dir.display()))?;
        for entry in entries {
            let path = entry
                .with_context(|| format!("--merge: reading {}", dir.display()))?
                .path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !(name.starts_with("tier") && name.contains("-shard") && name.ends_with(".json")) {
                continue;
            }
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("--merge: cannot read {}", path.display()))?;
            if name.starts_with("tier3-") {
                let part: PapersResult = serde_json::from_str(&text).with_context(|| {
                    format!("--merge: {} is not a tier-3 shard's result", path.display())
                })?;
                if part.shard.is_none() {
                    bail!("--merge: {} holds no shard number", path.display());
                }
                papers.push((path, part));
                continue;
            }
            let part: TierResult = serde_json::from_str(&text)
                .with_context(|| format!("--merge: {} is not a shard's result", path.display()))?;
            if part.shard.is_none() {
                bail!("--merge: {} holds no shard number", path.display());
            }
            parts.push((path, part));
        }
    }
    if parts.is_empty() && papers.is_empty() {
        bail!(
            "--merge: no shard results (tierT-shardKofN.json, written by --shard K/N --out DIR) \
             in {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let tiers: BTreeSet<u32> = parts.iter().map(|(_, p)| p.tier).collect();
    let mut merged = Vec::new();
    for tier in tiers {
        let mine: Vec<&(PathBuf, TierResult)> =
            parts.iter().filter(|(_, p)| p.tier == tier).collect();
        let (_, first) = mine[0];
        let shards: Vec<(&Path, Option<Shard>, bool)> = mine
            .iter()
            .map(|(path, p)| {
                let alike = p.repeat == first.repeat
                    && p.seeds == first.seeds
                    && p.sched == first.sched
                    && p.wake_placement == first.wake_placement
                    && p.costs == first.costs
                    && p.quick == first.quick
                    && p.grid_cells == first.grid_cells;
                (path.as_path(), p.shard, alike)
            })
            .collect();
        check_shards(
            tier,
            &shards,
            "runs, seeds, model, costs, grid or shard count differ",
        )?;
        let mut whole = first.clone();
        whole.shard = None;
        whole.cells = mine.iter().flat_map(|(_, p)| p.cells.clone()).collect();
        merged.push(Outcome::Grid(summarize(whole)));
    }
    if !papers.is_empty() {
        merged.push(Outcome::Papers(super::papers::merge(&papers)?));
    }
    Ok(merged)
}

/// Checks that `shards` (each file, the shard it holds, and whether it was measured as the
/// first was) are the N shards of one run of tier `tier`, each once: a shard measured
/// otherwise (`differ` says what may differ), or of another count, a doubled one and a
/// missing one are errors naming the files.
pub(super) fn check_shards(
    tier: u32,
    shards: &[(&Path, Option<Shard>, bool)],
    differ: &str,
) -> Result<()> {
    let Some(&(first_path, first, _)) = shards.first() else {
        return Ok(());
    };
    let count = first.map_or(1, |s| s.count);
    let mut seen = vec![None::<&Path>; count];
    for &(path, shard, alike) in shards {
        if !alike || shard.map(|s| s.count) != Some(count) {
            bail!(
                "--merge: {} and {} are shards of differently measured tier-{tier} runs \
                 ({differ})",
                first_path.display(),
                path.display()
            );
        }
        let index = shard.map_or(0, |s| s.index);
        if let Some(other) = seen[index].replace(path) {
            bail!(
                "--merge: shard {}/{count} of tier {tier} is there twice: {} and {}",
                index + 1,
                other.display(),
                path.display()
            );
        }
    }
    if let Some(missing) = seen.iter().position(Option::is_none) {
        bail!(
            "--merge: shard {}/{count} of tier {tier} is missing",
            missing + 1
        );
    }
    Ok(())
}

/// Prints a tier's result as a table.
pub fn print(result: &TierResult) -> Result<()> {
    let tier = match result.tier {
        0 => Tier::Cost,
        1 => Tier::Protocols,
        _ => Tier::Placement,
    };
    outln!("tier {}: {}", result.tier, tier.what())?;
    if tier == Tier::Placement {
        outln!(
            "simulated under {} with the {} wake-up placement",
            result.sched,
            result.wake_placement
        )?;
    }
    outln!(
        "{:<18} {:<10} {:>3} {:>6} {:>22} {:>9} {:>9} {:>9} {:>6}  result",
        "workload",
        "preset",
        "gc",
        "runs",
        "real median [95% CI]",
        "sim",
        "real p90",
        "sim p90",
        "ratio"
    )?;
    for c in &result.cells {
        let r = &c.real;
        outln!(
            "{:<18} {:<10} {:>3} {:>3}/{:<2} {:>8.3} [{:.3}, {:.3}] {:>9.3} {:>9.3} {:>9.3} {:>6.2}  {}",
            c.workload,
            c.preset,
            c.gc_threads,
            r.runs,
            r.loads.len(),
            r.median_ms,
            r.ci95[0],
            r.ci95[1],
            c.sim.median_ms,
            r.p90_ms,
            c.sim.p90_ms,
            c.sim.median_ms / r.median_ms,
            if c.pass { "pass" } else { "MISS" }
        )?;
        if let Some(m) = &c.matched {
            outln!(
                "    {}/{} collections matched in {} runs: sim/real median {:.2} (pause {:.2}), \
                 within ±25 %: {:.0} % (pause {:.0} %)",
                m.matched,
                m.collections,
                m.matched_runs,
                m.median_ratio,
                m.pause_median_ratio,
                m.within_25pct * 100.0,
                m.pause_within_25pct * 100.0
            )?;
        }
        if let Some(p) = &c.placement {
            let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
            outln!(
                "    all workers on one CPU: real {:.0} %, model {:.0} % (cfs {:.0} %, eevdf \
                 {:.0} %); stacked real {} sim {} ms, spread real {} sim {} ms",
                p.real_stacked_share * 100.0,
                p.sim_stacked_share * 100.0,
                p.cfs_stacked_share * 100.0,
                p.eevdf_stacked_share * 100.0,
                ms(p.real_stacked_ms),
                ms(p.sim_stacked_ms),
                ms(p.real_spread_ms),
                ms(p.sim_spread_ms)
            )?;
        }
        if result.tier == 1 {
            let counters: Vec<String> = c
                .counters
                .compared
                .iter()
                .map(|k| {
                    format!(
                        "{} {:.1}/{:.1}{}",
                        k.name,
                        k.real,
                        k.sim,
                        if k.pass { "" } else { "!" }
                    )
                })
                .collect();
            outln!("    counters real/sim: {}", counters.join(", "))?;
        }
        for (what, _) in c.checks.iter().filter(|(_, ok)| !ok) {
            outln!("    missed: {what}")?;
        }
        if r.quiet_runs < r.loads.len() {
            outln!(
                "    {} of {} runs started under load (median {} ms)",
                r.loads.len() - r.quiet_runs,
                r.loads.len(),
                r.loaded_median_ms
                    .map_or("-".to_string(), |v| format!("{v:.3}"))
            )?;
        }
    }
    outln!(
        "tier {}: {:.0} % of {} cells pass (target {:.0} %): {}{}",
        result.tier,
        result.pass_fraction * 100.0,
        result.cells.len(),
        result.target * 100.0,
        if result.pass { "PASS" } else { "MISS" },
        if result.repeat < MIN_RUNS {
            format!(
                " ({} real runs per cell, fewer than the {MIN_RUNS} the tiers ask for)",
                result.repeat
            )
        } else {
            String::new()
        }
    )?;
    Ok(())
}

/// A tier's result: a grid's cells (tiers 0–2) or the papers' figures (tier 3).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Outcome {
    Grid(TierResult),
    Papers(PapersResult),
}

impl Outcome {
    fn print(&self) -> Result<()> {
        match self {
            Outcome::Grid(r) => print(r),
            Outcome::Papers(r) => super::papers::print(r),
        }
    }
}

/// Prints the tiers' results (measured or merged), as JSON or as tables; exit 0 whether or not
/// they meet their targets (a miss is the output).
pub fn report(results: &[Outcome], json: bool) -> Result<ExitCode> {
    if json {
        let text = if results.len() == 1 {
            serde_json::to_string_pretty(&results[0])?
        } else {
            serde_json::to_string_pretty(&serde_json::json!({ "tiers": results }))?
        };
        outln!("{text}")?;
    } else {
        for (n, r) in results.iter().enumerate() {
            if n > 0 {
                outln!()?;
            }
            r.print()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: u64, parallel: f64, bytes: u64, workers: &[(u64, &[u32])]) -> String {
        let workers: Vec<Value> = workers
            .iter()
            .map(|(items, cpus)| {
                let cpus: serde_json::Map<String, Value> =
                    cpus.iter().map(|c| (c.to_string(), 1.into())).collect();
                serde_json::json!({"items": items, "steal_attempts": 2, "steal_failures": 1,
                    "stolen": 1, "termination_entries": 1, "cpus": cpus})
            })
            .collect();
        serde_json::json!({"id": id, "pause_ms": parallel + 0.1, "bytes_copied": bytes,
            "phases": {"parallel_ms": parallel}, "workers": workers})
        .to_string()
    }

    #[test]
    fn tiers_and_shards_parse_and_bad_ones_name_what_is_allowed() {
        let t = parse_tiers("0").unwrap();
        assert_eq!((t.grids, t.papers), (vec![Tier::Cost], false));
        let t = parse_tiers("3").unwrap();
        assert_eq!((t.grids, t.papers), (vec![], true));
        let t = parse_tiers("all").unwrap();
        assert_eq!((t.grids, t.papers), (Tier::ALL.to_vec(), true));
        assert!(parse_tiers("x")
            .unwrap_err()
            .contains("allowed: 0, 1, 2, 3 or all"));
        assert_eq!(parse_shard("2/8"), Ok(Shard { index: 1, count: 8 }));
        for bad in ["0/3", "4/3", "1", "a/b", "1/0"] {
            assert!(parse_shard(bad).unwrap_err().contains("K/N"), "{bad}");
        }
    }

    #[test]
    fn the_grids_are_the_tiers_and_shards_split_them_without_overlap() {
        assert_eq!(grid(Tier::Cost, false).len(), 5);
        assert!(grid(Tier::Cost, false).iter().all(|k| k.gc_threads == 1));
        assert_eq!(grid(Tier::Protocols, false).len(), 5 * 4 * 2);
        let key = &grid(Tier::Protocols, false)[0];
        assert!(key.common_args().contains(&"static".to_string()));
        let placement = &grid(Tier::Placement, false)[0];
        assert!(!placement
            .common_args()
            .contains(&"--gc-affinity".to_string()));
        let all: Vec<usize> = grid(Tier::Protocols, false)
            .iter()
            .map(|k| k.index)
            .collect();
        let mut from_shards: Vec<usize> = (0..3)
            .flat_map(|s| all.iter().copied().filter(move |i| i % 3 == s))
            .collect();
        from_shards.sort();
        assert_eq!(from_shards, all);
    }

    #[test]
    fn records_give_counters_placement_and_the_one_worker_share() {
        let text = [
            record(0, 1.0, 100, &[(950, &[0]), (50, &[0])]),
            record(1, 2.0, 200, &[(500, &[0]), (500, &[1])]),
            record(2, 3.0, 300, &[(10, &[1]), (0, &[1])]),
        ]
        .join("\n");
        let c = collections(&text).unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].one_worker_did_most(), Some(true));
        assert_eq!(c[1].one_worker_did_most(), Some(false));
        assert_eq!(c[2].one_worker_did_most(), None, "under 1000 items");
        assert_eq!(
            c.iter().map(Collection::stacked).collect::<Vec<_>>(),
            [Some(true), Some(false), Some(true)]
        );
        let k = Counters::of(&c);
        assert_eq!(k.steal_attempts, 4.0);
        assert_eq!(k.one_worker_90pct_share, 0.5);
        assert!((stacked_share(&c) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(split_median(c.iter(), true), Some(2.0));
        assert!(collections("")
            .unwrap_err()
            .to_string()
            .contains("no collection"));
        assert!(collections("{\"id\": 1}")
            .unwrap_err()
            .to_string()
            .contains("no pause_ms"));
    }

    fn run(parallel: &[f64], busy: f64) -> RealRun {
        RealRun {
            collections: parallel
                .iter()
                .enumerate()
                .map(|(i, &p)| Collection {
                    id: i as u64,
                    pause_ms: p + 0.1,
                    parallel_ms: p,
                    bytes_copied: 10 * i as u64,
                    ..Collection::default()
                })
                .collect(),
            load: RunLoad {
                loadavg1: Some(0.5),
                busy_before: Some(busy),
                steal: Some(0.0),
            },
        }
    }

    #[test]
    fn tier_0_matches_collections_one_to_one_and_leaves_out_runs_that_differ() {
        let key = grid(Tier::Cost, false)[0].clone();
        let runs = vec![
            run(&[1.0, 2.0, 4.0], 0.0),
            run(&[1.2, 2.2, 4.4], 0.0),
            run(&[1.0, 2.0, 4.0, 8.0], 0.0),
        ];
        let sim_run = run(&[1.1, 2.1, 4.2], 0.0).collections;
        let sim = Simulated {
            seeds: vec![sim_run],
            cfs: vec![],
            eevdf: vec![],
        };
        let c = cell(&key, &runs, &sim);
        let m = c.matched.as_ref().unwrap();
        assert_eq!((m.collections, m.matched, m.matched_runs), (3, 3, 2));
        // Per collection: real medians 1.1, 2.1, 4.2 against sim 1.1, 2.1, 4.2.
        assert!((m.median_ratio - 1.0).abs() < 1e-9, "{m:?}");
        assert_eq!(m.within_25pct, 1.0);
        // One of the three runs does not match: the check says so.
        assert!(!c.checks[0].1 && !c.pass, "{:?}", c.checks);
    }

    #[test]
    fn loaded_runs_are_reported_apart_and_quiet_ones_give_the_figures() {
        let key = grid(Tier::Protocols, false)[0].clone();
        let runs = vec![
            run(&[1.0], 0.0),
            run(&[1.0], 0.1),
            run(&[1.0], 0.0),
            run(&[9.0], 0.9),
        ];
        let (real, used) = real_figures(&key, &runs);
        assert_eq!((real.runs, real.quiet_runs, used.len()), (3, 3, 3));
        assert_eq!(real.median_ms, 1.0);
        assert_eq!(real.loaded_median_ms, Some(9.0));
        assert_eq!(real.loads.len(), 4);
        // With fewer than three quiet runs, all count.
        let (real, _) = real_figures(&key, &runs[1..]);
        assert_eq!(real.runs, 3);
    }

    #[test]
    fn counters_pass_within_20pct_or_inside_the_real_range() {
        let real: Vec<RealRun> = [1.0, 3.0].iter().map(|&p| run(&[p], 0.0)).collect();
        let refs: Vec<&RealRun> = real.iter().collect();
        let sim = vec![run(&[2.0], 0.0).collections];
        let pair = compare_counters(&refs, &sim);
        // Same counters on both sides (the fixture's): all pass.
        assert!(pair.compared.iter().all(|c| c.pass), "{pair:?}");
    }

    #[test]
    fn shards_merge_into_the_whole_and_a_missing_or_doubled_one_is_an_error() {
        let key = grid(Tier::Protocols, true);
        let sim = Simulated {
            seeds: vec![run(&[1.0], 0.0).collections],
            cfs: vec![],
            eevdf: vec![],
        };
        let cells: Vec<TierCell> = key
            .iter()
            .map(|k| cell(k, &[run(&[1.0], 0.0), run(&[1.0], 0.0)], &sim))
            .collect();
        let base = TierResult {
            tier: 1,
            cells: vec![],
            pass_fraction: 0.0,
            target: 0.8,
            pass: false,
            repeat: 2,
            seeds: vec![1],
            sched: "eevdf".into(),
            wake_placement: "default".into(),
            costs: None,
            quick: true,
            shard: None,
            grid_cells: cells.len(),
        };
        let whole = summarize(TierResult {
            cells: cells.clone(),
            ..base.clone()
        });
        let dir = std::env::temp_dir().join(format!("concord-tiers-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for s in 0..2 {
            let shard = Shard { index: s, count: 2 };
            let part = summarize(TierResult {
                cells: cells.iter().filter(|c| c.index % 2 == s).cloned().collect(),
                shard: Some(shard),
                ..base.clone()
            });
            std::fs::write(
                result_file(&dir, 1, Some(shard)),
                serde_json::to_string(&part).unwrap(),
            )
            .unwrap();
        }
        let merged = merge(std::slice::from_ref(&dir)).unwrap();
        assert_eq!(merged, vec![Outcome::Grid(whole)]);
        // A shard simulated under another wake-up placement is not the same grid.
        let other = Shard { index: 1, count: 2 };
        let packed = summarize(TierResult {
            cells: cells.iter().filter(|c| c.index % 2 == 1).cloned().collect(),
            shard: Some(other),
            wake_placement: "pack".into(),
            ..base.clone()
        });
        std::fs::write(
            result_file(&dir, 1, Some(other)),
            serde_json::to_string(&packed).unwrap(),
        )
        .unwrap();
        let e = merge(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(e.contains("differ"), "{e}");
        std::fs::remove_file(result_file(&dir, 1, Some(Shard { index: 1, count: 2 }))).unwrap();
        let e = merge(std::slice::from_ref(&dir)).unwrap_err().to_string();
        assert!(e.contains("shard 2/2 of tier 1 is missing"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let e = merge(&[dir]).unwrap_err().to_string();
        assert!(e.contains("cannot read the directory"), "{e}");
    }
}
