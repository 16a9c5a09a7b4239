//! The machinery of `concord`'s side-by-side experiments (`ablation`, `os-bench`, `sched-bench`,
//! `compare`, `sweep`):
//! named configurations ("arms"), run A B C … A B C … in one invocation so that machine noise
//! hits all of them alike (DESIGN.md, "Measuring"), then medians per arm, ratios to a baseline
//! arm, a table and JSON.
//!
//! An arm is a workload, its parameters, a validated [`GcConfig`] and optionally an
//! [`Interference`] load that runs during each of its runs. Arms belong to groups; ratios are
//! relative to the first arm of the same group (e.g. vanilla under the same interference).

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use concord::config::{format_size, ConfigBuilder};
use concord::{GcConfig, Heap};
use concord_workloads::{lookup, workload_names, Workload, WorkloadParams};
use serde_json::{json, Value};

use crate::interference::Interference;
use crate::summary::Summary;

/// A named configuration: configuration keys and values applied in order (later ones win).
#[derive(Clone, Debug)]
pub struct Variant {
    /// Short label for tables.
    pub label: &'static str,
    /// What it changes, in words.
    pub what: &'static str,
    /// Configuration keys and values, as on the command line without `--`.
    pub settings: &'static [(&'static str, &'static str)],
}

/// One configuration of an experiment, ready to run.
#[derive(Clone)]
pub struct Arm {
    /// Short label for tables (unique within its group).
    pub label: String,
    /// What it is, in words.
    pub what: String,
    /// Index into [`Experiment::groups`].
    pub group: usize,
    /// Every configuration key the arm sets, in the order applied (`key=value`).
    pub settings: Vec<String>,
    /// The workload it runs.
    pub workload: Arc<dyn Workload>,
    /// The workload's parameters.
    pub params: WorkloadParams,
    /// The validated configuration.
    pub config: GcConfig,
    /// Load started for each run of this arm and stopped after it.
    pub interference: Option<Interference>,
}

impl Arm {
    /// The arm of `variant`: its settings, then `common` on top (common settings win), built
    /// into a validated configuration.
    pub fn new(
        variant: &Variant,
        common: &[(&str, String)],
        group: usize,
        workload: Arc<dyn Workload>,
        params: WorkloadParams,
        interference: Option<Interference>,
    ) -> Result<Arm> {
        let settings: Vec<(&str, String)> = variant
            .settings
            .iter()
            .map(|(k, v)| (*k, v.to_string()))
            .chain(common.iter().cloned())
            .collect();
        Arm::with_settings(
            variant.label.to_string(),
            variant.what.to_string(),
            &settings,
            group,
            workload,
            params,
            interference,
        )
    }

    /// The arm called `label` with configuration keys and values `settings`, applied in order
    /// (later ones win), built into a validated configuration.
    pub fn with_settings(
        label: String,
        what: String,
        settings: &[(&str, String)],
        group: usize,
        workload: Arc<dyn Workload>,
        params: WorkloadParams,
        interference: Option<Interference>,
    ) -> Result<Arm> {
        let config = build_config(settings).with_context(|| format!("configuration '{label}'"))?;
        Ok(Arm {
            label,
            what,
            group,
            settings: settings.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            workload,
            params,
            config,
            interference,
        })
    }

    /// The arm's label with its interference, if any: `vanilla (busy:1)`.
    pub fn name(&self) -> String {
        match self.interference {
            Some(load) => format!("{} ({load})", self.label),
            None => self.label.clone(),
        }
    }

    /// Runs the arm once on a fresh heap, with its interference load running meanwhile; with
    /// `records`, the heap writes its per-collection records there (`gc-records`).
    pub fn run_once(&self, records: Option<&Path>) -> Result<Summary> {
        let mut config = self.config.clone();
        if let Some(path) = records {
            config.gc_records = Some(path.to_path_buf());
        }
        let load = self.interference.map(Interference::start).transpose()?;
        let result = run_once(self.workload.as_ref(), &self.params, &config);
        if let Some(load) = load {
            load.stop();
        }
        let mut summary = result?;
        summary.interference = self
            .interference
            .map(|l| format!("{l} ({} in this process)", l.describe()));
        Ok(summary)
    }
}

/// A configuration from keys and values applied as CLI flags, in order (later ones win).
/// `CONCORD_*` variables and configuration files do not apply: experiments are reproducible
/// from their command line.
pub fn build_config(settings: &[(&str, String)]) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    for (key, value) in settings {
        b.set_cli(key, value)?;
    }
    Ok(b.build()?)
}

/// The workload called `name`, or an error listing the known ones.
pub fn find_workload(name: &str) -> Result<Arc<dyn Workload>> {
    match lookup(name) {
        Some(w) => Ok(Arc::from(w)),
        None => bail!(
            "unknown workload '{name}' (allowed: {})",
            workload_names().join(", ")
        ),
    }
}

/// `heap` if given, else the workload's default heap for `params`, as a configuration value.
pub fn heap_setting(
    heap: Option<&str>,
    workload: &dyn Workload,
    params: &WorkloadParams,
) -> String {
    match heap {
        Some(h) => h.to_string(),
        None => format!("{}k", workload.default_heap(params).div_ceil(1024)),
    }
}

/// Runs `workload` once on a fresh heap built from `config` and summarizes the run. The wall
/// time covers the workload only, not building or dropping the heap.
pub fn run_once(
    workload: &dyn Workload,
    params: &WorkloadParams,
    config: &GcConfig,
) -> Result<Summary> {
    let heap = Heap::new(config.clone())?;
    let start = Instant::now();
    let result = workload.run(&heap, params);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    drop(heap);
    let result = result.map_err(|e| anyhow::anyhow!("workload {} failed: {e}", workload.name()))?;
    Ok(Summary::new(
        workload.name(),
        config,
        params,
        wall_ms,
        &stats,
        &result,
    ))
}

/// The figures of one run that the tables report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Figures {
    pub wall_ms: f64,
    pub gc_ms: f64,
    pub gc_count: f64,
    pub pause_p50_ms: f64,
    pub pause_p99_ms: f64,
    pub pause_max_ms: f64,
    pub imbalance: f64,
    pub steal_attempts: f64,
    pub failure_rate: f64,
    pub termination_ms: f64,
    pub cpus_used: f64,
    /// Median and 90th percentile object lifespan, bytes, when the heap profiled them.
    pub lifespan_p50_bytes: Option<f64>,
    pub lifespan_p90_bytes: Option<f64>,
}

impl Figures {
    /// The figures of one run.
    pub fn of(s: &Summary) -> Self {
        Self {
            wall_ms: s.wall_ms,
            gc_ms: s.pause_total_ms,
            gc_count: s.gc_count as f64,
            pause_p50_ms: s.pause_p50_ms,
            pause_p99_ms: s.pause_p99_ms,
            pause_max_ms: s.pause_max_ms,
            imbalance: s.root_task_imbalance,
            steal_attempts: s.steal_attempts as f64,
            failure_rate: s.steal_failure_rate(),
            termination_ms: s.worker_time.termination_ms,
            cpus_used: s.mean_cpus_used,
            lifespan_p50_bytes: s
                .lifespans
                .as_ref()
                .and_then(|l| l.median_bytes)
                .map(|b| b as f64),
            lifespan_p90_bytes: s
                .lifespans
                .as_ref()
                .and_then(|l| l.p90_bytes)
                .map(|b| b as f64),
        }
    }

    /// Component-wise median of several runs.
    pub fn median(runs: &[Figures]) -> Figures {
        let m = |f: fn(&Figures) -> f64| median(runs.iter().map(f).collect());
        Figures {
            wall_ms: m(|r| r.wall_ms),
            gc_ms: m(|r| r.gc_ms),
            gc_count: m(|r| r.gc_count),
            pause_p50_ms: m(|r| r.pause_p50_ms),
            pause_p99_ms: m(|r| r.pause_p99_ms),
            pause_max_ms: m(|r| r.pause_max_ms),
            imbalance: m(|r| r.imbalance),
            steal_attempts: m(|r| r.steal_attempts),
            failure_rate: m(|r| r.failure_rate),
            termination_ms: m(|r| r.termination_ms),
            cpus_used: m(|r| r.cpus_used),
            lifespan_p50_bytes: optional_median(runs.iter().map(|r| r.lifespan_p50_bytes)),
            lifespan_p90_bytes: optional_median(runs.iter().map(|r| r.lifespan_p90_bytes)),
        }
    }
}

/// Median of a list (mean of the middle two for even lengths; 0 for an empty list).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median of the values that are there; `None` if none is.
fn optional_median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| median(v))
}

/// `a / b`, or 0 when `b` is 0.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The runs of an experiment: per arm, every run's figures and their medians.
pub struct Outcome {
    /// `runs[arm][round]`.
    pub runs: Vec<Vec<Figures>>,
    /// `medians[arm]`.
    pub medians: Vec<Figures>,
    /// Whether every run's checksum and verification (where known) were right.
    pub all_ok: bool,
}

impl Outcome {
    /// The outcome of `runs[arm]` (an arm may have no runs, e.g. after an interruption).
    pub fn of(runs: Vec<Vec<Figures>>, all_ok: bool) -> Outcome {
        Outcome {
            medians: runs.iter().map(|r| Figures::median(r)).collect(),
            runs,
            all_ok,
        }
    }
}

/// A set of arms run alternately, `repeat` rounds.
pub struct Experiment {
    /// Group titles, indexed by [`Arm::group`]; with a single group no titles are shown.
    pub groups: Vec<String>,
    /// The arms, in the order they run in each round and appear in the table.
    pub arms: Vec<Arm>,
    /// Rounds; each runs every arm once.
    pub repeat: u32,
}

/// A column of an experiment table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Median total GC pause time.
    GcMs,
    /// Smallest and largest total GC pause time over the runs.
    GcRange,
    /// Median GC time over the median of the group's first arm.
    Ratio,
    /// Median 50th percentile pause.
    P50,
    /// Median 99th percentile pause.
    P99,
    /// Median longest pause.
    Max,
    /// Median steal attempts.
    Steals,
    /// Median steal failure rate.
    FailRate,
    /// Median root-task imbalance.
    Imbalance,
    /// Median distinct CPUs the GC workers were seen on per collection.
    Cpus,
    /// Median wall time.
    Wall,
    /// Median wall time over the median of the group's first arm.
    WallRatio,
    /// Smallest and largest wall time over the runs.
    WallRange,
    /// Number of runs with figures.
    Runs,
    /// Median of the runs' median object lifespans (`-` without lifespan profiling).
    LifeP50,
    /// Median of the runs' 90th percentile object lifespans.
    LifeP90,
}

impl Column {
    /// The ablation table of 000 Fig. 10 (also the README's).
    pub const ABLATION: &'static [Column] = &[
        Column::GcMs,
        Column::GcRange,
        Column::Ratio,
        Column::P50,
        Column::P99,
        Column::Max,
        Column::Steals,
        Column::FailRate,
        Column::Imbalance,
        Column::Cpus,
        Column::Wall,
    ];

    fn header(self) -> &'static str {
        match self {
            Column::GcMs => "GC ms",
            Column::GcRange => "(min-max)",
            Column::Ratio => "ratio",
            Column::P50 => "p50 ms",
            Column::P99 => "p99 ms",
            Column::Max => "max ms",
            Column::Steals => "steals",
            Column::FailRate => "fail%",
            Column::Imbalance => "imbal.",
            Column::Cpus => "CPUs",
            Column::Wall => "wall ms",
            Column::WallRatio => "wall x",
            Column::WallRange => "(min-max)",
            Column::Runs => "runs",
            Column::LifeP50 => "life p50",
            Column::LifeP90 => "life p90",
        }
    }

    fn width(self) -> usize {
        match self {
            Column::GcMs | Column::Steals => 9,
            Column::GcRange | Column::WallRange => 15,
            Column::Runs => 4,
            Column::Ratio | Column::P50 | Column::P99 | Column::Max | Column::WallRatio => 7,
            Column::FailRate => 6,
            Column::Imbalance | Column::Wall => 8,
            Column::LifeP50 | Column::LifeP90 => 9,
            Column::Cpus => 5,
        }
    }

    /// The cell of this column for an arm with `runs`, median `m` and group baseline `base`.
    /// An arm without runs gets `-` everywhere (but in [`Column::Runs`]).
    fn cell(self, runs: &[Figures], m: &Figures, base: &Figures) -> String {
        let range = |f: fn(&Figures) -> f64, digits: usize| {
            let lo = runs.iter().map(f).fold(f64::INFINITY, f64::min);
            let hi = runs.iter().map(f).fold(0.0, f64::max);
            format!("({lo:.digits$}-{hi:.digits$})")
        };
        if runs.is_empty() && self != Column::Runs {
            return "-".to_string();
        }
        match self {
            Column::GcMs => format!("{:.1}", m.gc_ms),
            Column::GcRange => range(|f| f.gc_ms, 1),
            Column::WallRange => range(|f| f.wall_ms, 0),
            Column::Runs => runs.len().to_string(),
            Column::Ratio => format!("{:.2}x", ratio(m.gc_ms, base.gc_ms)),
            Column::P50 => format!("{:.2}", m.pause_p50_ms),
            Column::P99 => format!("{:.2}", m.pause_p99_ms),
            Column::Max => format!("{:.2}", m.pause_max_ms),
            Column::Steals => format!("{:.0}", m.steal_attempts),
            Column::FailRate => format!("{:.1}%", 100.0 * m.failure_rate),
            Column::Imbalance => format!("{:.2}", m.imbalance),
            Column::Cpus => format!("{:.2}", m.cpus_used),
            Column::Wall => format!("{:.0}", m.wall_ms),
            Column::WallRatio => format!("{:.2}x", ratio(m.wall_ms, base.wall_ms)),
            Column::LifeP50 => bytes(m.lifespan_p50_bytes),
            Column::LifeP90 => bytes(m.lifespan_p90_bytes),
        }
    }
}

/// What is wrong with the result of a run, if anything: a checksum mismatch or a failed heap
/// verification.
pub fn wrong_result(summary: &Summary) -> Option<String> {
    let mut problems = Vec::new();
    if summary.checksum_ok == Some(false) {
        problems.push(match summary.expected_checksum {
            Some(e) => format!("checksum {} (expected {e})", summary.checksum),
            None => format!("checksum {} is wrong", summary.checksum),
        });
    }
    if summary.verified == Some(false) {
        problems.push(match summary.verify_failures.first() {
            Some(first) => format!("heap verification failed: {first}"),
            None => "heap verification failed".to_string(),
        });
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// A byte count as a size (`1536K`), or `-` without one.
fn bytes(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |b| format_size(b.round() as usize))
}

impl Experiment {
    /// Index of the first arm of `group`: the baseline of its ratios.
    fn baseline(&self, group: usize) -> usize {
        self.arms.iter().position(|a| a.group == group).unwrap_or(0)
    }

    /// The order of the runs: every arm once per round, in order, `repeat` rounds, as
    /// `(round, arm)` pairs.
    pub fn schedule(&self) -> Vec<(u32, usize)> {
        (0..self.repeat)
            .flat_map(|round| (0..self.arms.len()).map(move |arm| (round, arm)))
            .collect()
    }

    /// Runs every arm once per round, in order, `repeat` rounds. Progress goes to stderr, on
    /// one rewritten line, when `progress` is set and stderr is a terminal. A wrong checksum or
    /// failed verification is reported on stderr and clears [`Outcome::all_ok`]; any other
    /// failure ends the experiment.
    pub fn run(&self, progress: bool) -> Result<Outcome> {
        let progress = progress && std::io::stderr().is_terminal();
        let width = self.arms.iter().map(|a| a.label.len()).max().unwrap_or(0) + 12;
        let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); self.arms.len()];
        let mut all_ok = true;
        for (round, i) in self.schedule() {
            let arm = &self.arms[i];
            let name = arm.name();
            if progress {
                eprint!("\rround {}/{}: {name:<width$}", round + 1, self.repeat);
            }
            let summary = arm
                .run_once(None)
                .with_context(|| format!("configuration '{name}'"))?;
            if let Some(problem) = wrong_result(&summary) {
                eprintln!("\nconcord: {name} produced a wrong result: {problem}");
                all_ok = false;
            }
            runs[i].push(Figures::of(&summary));
        }
        if progress {
            eprint!("\r{:<w$}\r", "", w = width + 20);
        }
        Ok(Outcome::of(runs, all_ok))
    }

    /// The table of medians: a header, one row per arm (with a title line before each group
    /// when there are several), then one line per arm saying what it is.
    pub fn table(&self, outcome: &Outcome, columns: &[Column]) -> String {
        let mut s = String::new();
        let label_width = self
            .arms
            .iter()
            .map(|a| a.label.chars().count() + 1)
            .max()
            .unwrap_or(0)
            .max(18);
        let _ = write!(s, "{:<label_width$}", "configuration");
        for c in columns {
            let _ = write!(s, " {:>w$}", c.header(), w = c.width());
        }
        s.push('\n');
        let mut last_group = None;
        for (i, arm) in self.arms.iter().enumerate() {
            if self.groups.len() > 1 && last_group != Some(arm.group) {
                let _ = writeln!(s, "-- {}", self.groups[arm.group]);
                last_group = Some(arm.group);
            }
            let base = &outcome.medians[self.baseline(arm.group)];
            let _ = write!(s, "{:<label_width$}", arm.label);
            for c in columns {
                let cell = c.cell(&outcome.runs[i], &outcome.medians[i], base);
                let _ = write!(s, " {cell:>w$}", w = c.width());
            }
            s.push('\n');
        }
        s
    }

    /// One line per distinct arm label: what it is.
    pub fn legend(&self) -> String {
        let mut s = String::new();
        let mut seen: Vec<&str> = Vec::new();
        for arm in &self.arms {
            if !seen.contains(&arm.label.as_str()) {
                seen.push(&arm.label);
                let _ = writeln!(s, "  {:<18} {}", arm.label, arm.what);
            }
        }
        s
    }

    /// Every arm as JSON: label, group, workload, settings, interference, median, GC time and
    /// wall time ratios to the group's first arm, and every run.
    pub fn configurations_json(&self, outcome: &Outcome) -> Value {
        let configurations: Vec<Value> = self
            .arms
            .iter()
            .enumerate()
            .map(|(i, arm)| {
                let m = &outcome.medians[i];
                let base = &outcome.medians[self.baseline(arm.group)];
                json!({
                    "label": arm.label,
                    "group": self.groups.get(arm.group),
                    "workload": arm.workload.name(),
                    "size": arm.params.size,
                    "mutators": arm.params.mutators,
                    "settings": arm.settings,
                    "interference": arm.interference.map(|l| l.to_string()),
                    "median": m,
                    "gc_ratio": ratio(m.gc_ms, base.gc_ms),
                    "wall_ratio": ratio(m.wall_ms, base.wall_ms),
                    "runs": outcome.runs[i],
                })
            })
            .collect();
        Value::Array(configurations)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(gc_ms: f64, wall_ms: f64) -> Figures {
        Figures {
            wall_ms,
            gc_ms,
            gc_count: 1.0,
            pause_p50_ms: gc_ms,
            pause_p99_ms: gc_ms,
            pause_max_ms: gc_ms,
            imbalance: 1.0,
            steal_attempts: 10.0,
            failure_rate: 0.5,
            termination_ms: 0.0,
            cpus_used: 2.0,
            lifespan_p50_bytes: None,
            lifespan_p90_bytes: None,
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
        let mut with_lifespans = figures(2.0, 5.0);
        with_lifespans.lifespan_p50_bytes = Some(2048.0);
        let m = Figures::median(&[figures(1.0, 10.0), figures(3.0, 30.0), with_lifespans]);
        assert_eq!((m.gc_ms, m.wall_ms), (2.0, 10.0));
        assert_eq!(m.lifespan_p50_bytes, Some(2048.0));
        assert_eq!(m.lifespan_p90_bytes, None);
        assert_eq!(bytes(m.lifespan_p50_bytes), "2K");
        assert_eq!(bytes(None), "-");
    }

    #[test]
    fn ratios_are_relative_to_the_first_arm_of_each_group() {
        let workload = find_workload("binary-trees").unwrap();
        let params = WorkloadParams::default();
        let variant = |label| Variant {
            label,
            what: "test",
            settings: &[("preset", "vanilla")],
        };
        let common = [("heap", "32m".to_string())];
        let arm = |label, group| {
            Arm::new(
                &variant(label),
                &common,
                group,
                workload.clone(),
                params.clone(),
                None,
            )
            .unwrap()
        };
        let experiment = Experiment {
            groups: vec!["idle".into(), "busy:1".into()],
            arms: vec![arm("a", 0), arm("b", 0), arm("a", 1), arm("b", 1)],
            repeat: 1,
        };
        let runs = vec![
            vec![figures(10.0, 100.0)],
            vec![figures(5.0, 100.0)],
            vec![figures(20.0, 100.0)],
            vec![figures(30.0, 50.0)],
        ];
        let outcome = Outcome {
            medians: runs.iter().map(|r| Figures::median(r)).collect(),
            runs,
            all_ok: true,
        };
        let table = experiment.table(&outcome, &[Column::GcMs, Column::Ratio, Column::WallRatio]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 7, "{table}");
        assert!(lines[1].starts_with("-- idle"), "{table}");
        assert!(lines[3].contains("0.50x"), "{table}");
        assert!(lines[4].starts_with("-- busy:1"), "{table}");
        assert!(lines[5].contains("1.00x"), "{table}");
        assert!(
            lines[6].contains("1.50x") && lines[6].ends_with("0.50x"),
            "{table}"
        );
        let json = experiment.configurations_json(&outcome);
        assert_eq!(json[3]["gc_ratio"], 1.5);
        assert_eq!(json[3]["group"], "busy:1");
        assert_eq!(json[0]["settings"][1], "heap=32m");
        assert_eq!(experiment.legend().lines().count(), 2);
    }

    #[test]
    fn common_settings_win_over_the_variant() {
        let c = build_config(&[
            ("preset", "vanilla".to_string()),
            ("gc-threads", "3".to_string()),
            ("gc-threads", "5".to_string()),
        ])
        .unwrap();
        assert_eq!(c.gc_threads, 5);
        let err = find_workload("nosuch").err().unwrap().to_string();
        assert!(
            err.contains("unknown workload 'nosuch' (allowed: gcbench"),
            "{err}"
        );
    }
}
