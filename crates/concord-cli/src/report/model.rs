//! Reading a results directory (`experiment.json`, `runs/*.summary.json`,
//! `runs/*.records.jsonl`) into what the page shows: configurations, their runs, medians and
//! the representative run of each configuration, plus notes about anything missing or odd.
//!
//! Only a missing or unreadable `experiment.json`, or one of another format or version, is an
//! error; everything below it (a failed run, a missing file, a bad line) becomes a note.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde::Deserialize;
use serde_json::Value;

pub use crate::experiment::results::{ConfigurationEntry, ExperimentFile, RunEntry};
use crate::experiment::results::{EXPERIMENT_FILE, FORMAT, RUNS_DIR, VERSION};

/// One collection record (the fields the page uses; everything else is ignored).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Record {
    pub kind: String,
    pub start_ms: f64,
    pub pause_ms: f64,
    pub workers: Vec<WorkerRecord>,
    pub task_distribution: BTreeMap<String, Vec<u64>>,
    pub cpu_occupancy: CpuOccupancy,
    /// The task-manager monitor's counters (000 Fig. 5); `None` when the monitor was not used
    /// or the records predate the counters.
    pub monitor: Option<MonitorCounters>,
}

/// What the task-manager monitor did in one collection (000 §2.2, Fig. 5).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq)]
#[serde(default)]
pub struct MonitorCounters {
    pub acquisitions: u64,
    pub contended: u64,
    pub barges: u64,
    pub heir_wakeups: u64,
    pub futile_wakeups: u64,
}

/// What one worker did in one collection.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct WorkerRecord {
    pub root_tasks: BTreeMap<String, u64>,
    pub steal_tasks: u64,
    pub steal_attempts: u64,
    pub steal_failures: u64,
    pub root_ns: u64,
    pub steal_ns: u64,
    pub termination_ns: u64,
    pub cpus: BTreeMap<String, u64>,
}

/// Worker × CPU samples of one collection.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct CpuOccupancy {
    pub cpus: Vec<u32>,
    pub samples: Vec<Vec<u64>>,
}

impl Record {
    pub fn is_full(&self) -> bool {
        self.kind == "full"
    }

    /// Task type → per-worker counts, from `task_distribution` or, when that is missing, from
    /// the workers' own counters.
    fn task_counts(&self) -> BTreeMap<String, Vec<u64>> {
        if !self.task_distribution.is_empty() {
            return self.task_distribution.clone();
        }
        let n = self.workers.len();
        let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (w, stats) in self.workers.iter().enumerate() {
            for (name, &count) in &stats.root_tasks {
                out.entry(name.clone()).or_insert_with(|| vec![0; n])[w] += count;
            }
            out.entry("Steal".into()).or_insert_with(|| vec![0; n])[w] += stats.steal_tasks;
        }
        out
    }

    /// (worker, cpu, samples) triples, from `cpu_occupancy` or the workers' `cpus`.
    fn occupancy(&self) -> Vec<(usize, u32, u64)> {
        let mut out = Vec::new();
        if !self.cpu_occupancy.cpus.is_empty() {
            for (w, row) in self.cpu_occupancy.samples.iter().enumerate() {
                for (&cpu, &n) in self.cpu_occupancy.cpus.iter().zip(row) {
                    out.push((w, cpu, n));
                }
            }
        } else {
            for (w, stats) in self.workers.iter().enumerate() {
                for (cpu, &n) in &stats.cpus {
                    if let Ok(cpu) = cpu.parse() {
                        out.push((w, cpu, n));
                    }
                }
            }
        }
        out
    }
}

/// Summed worker time of a run, ms (000 Fig. 6).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Breakdown {
    pub root_ms: f64,
    pub steal_ms: f64,
    pub termination_ms: f64,
}

/// One run, with what could be read of it.
#[derive(Debug)]
pub struct Run {
    pub entry: RunEntry,
    /// The x value of a sweep (the run's `value`, else its configuration's).
    pub value: Option<String>,
    pub summary: Option<Value>,
    /// `None` when the records file is missing or unreadable.
    pub records: Option<Vec<Record>>,
}

impl Run {
    pub fn ok(&self) -> bool {
        self.entry.status == "ok" && self.summary.is_some()
    }

    /// A number from the summary (numbers, or strings that hold one).
    pub fn num(&self, key: &str) -> Option<f64> {
        self.summary.as_ref().and_then(|s| as_f64(s.get(key)?))
    }

    pub fn gc_ms(&self) -> Option<f64> {
        self.num("gc_pause_total_ms")
    }

    pub fn failure_rate(&self) -> Option<f64> {
        self.num("steal_failure_rate").or_else(|| {
            let attempts = self.num("steal_attempts")?;
            let failures = self.num("steal_failures")?;
            Some(if attempts > 0.0 {
                failures / attempts
            } else {
                0.0
            })
        })
    }

    /// Worker time from the summary's `worker_time_ms`, else summed from the records.
    pub fn breakdown(&self) -> Option<Breakdown> {
        if let Some(w) = self.summary.as_ref().and_then(|s| s.get("worker_time_ms")) {
            let get = |k: &str| w.get(k).and_then(as_f64);
            if let (Some(root_ms), Some(steal_ms), Some(termination_ms)) =
                (get("root_ms"), get("steal_ms"), get("termination_ms"))
            {
                return Some(Breakdown {
                    root_ms,
                    steal_ms,
                    termination_ms,
                });
            }
        }
        let records = self.records.as_ref()?;
        let mut b = Breakdown::default();
        for w in records.iter().flat_map(|r| &r.workers) {
            b.root_ms += w.root_ns as f64 / 1e6;
            b.steal_ms += w.steal_ns as f64 / 1e6;
            b.termination_ms += w.termination_ns as f64 / 1e6;
        }
        Some(b)
    }

    /// The monitor's counters per collection, averaged over the collections that used the
    /// monitor: contended acquisitions, barges, heir wake-ups and futile wake-ups. `None`
    /// when no record of the run has them.
    pub fn monitor_per_collection(&self) -> Option<[f64; 4]> {
        let counters: Vec<MonitorCounters> = self
            .records
            .as_ref()?
            .iter()
            .filter_map(|r| r.monitor)
            .collect();
        if counters.is_empty() {
            return None;
        }
        let n = counters.len() as f64;
        let mean = |f: fn(&MonitorCounters) -> u64| counters.iter().map(f).sum::<u64>() as f64 / n;
        Some([
            mean(|m| m.contended),
            mean(|m| m.barges),
            mean(|m| m.heir_wakeups),
            mean(|m| m.futile_wakeups),
        ])
    }

    /// The lifespan histogram of the summary (`lifespans.buckets`, when the run profiled
    /// lifespans): `(lower bound in bytes, dead objects)` per log2 bucket. The objects are the
    /// profiler's estimate (`dead_objects_estimate`, exact when every object was sampled);
    /// summaries without it give dead samples instead.
    pub fn lifespan_buckets(&self) -> Option<Vec<(u64, f64)>> {
        let buckets = self
            .summary
            .as_ref()?
            .get("lifespans")?
            .get("buckets")?
            .as_array()?;
        buckets
            .iter()
            .map(|b| {
                let objects = b.get("dead_objects_estimate").and_then(Value::as_f64);
                let dead = objects.or_else(|| b.get("dead")?.as_f64())?;
                Some((b.get("lo_bytes")?.as_u64()?, dead))
            })
            .collect()
    }

    /// Usable CPUs as the summary reports them: the simulated machine's for a simulated run,
    /// else what the mutator scheduling report knows.
    pub fn usable_cpus(&self) -> Option<u32> {
        let s = self.summary.as_ref()?;
        if let Some(cpus) = s.get("sim").and_then(|sim| sim.get("cpus")?.as_u64()) {
            return Some(cpus as u32);
        }
        s.get("mutator_sched_report")
            .and_then(|r| r.get("usable_cpus"))
            .and_then(Value::as_u64)
            .map(|n| n as u32)
    }
}

/// Keys of the summary JSON that are Concord's own, not the workload's: numbers (or null where
/// a run has none), never anything else.
pub const STANDARD_KEYS: &[&str] = &[
    "wall_ms",
    "gc_pause_total_ms",
    "pause_p50_ms",
    "pause_p99_ms",
    "pause_max_ms",
    "gc_count",
    "young_count",
    "full_count",
    "bytes_allocated",
    "bytes_copied",
    "bytes_promoted",
    "steal_attempts",
    "steal_failures",
    "steal_failure_rate",
    "root_task_imbalance",
    "mean_cpus_used",
    "gc_threads",
    "mutators",
    "rounds",
    "heap_size",
    "checksum",
    "expected_checksum",
    "affinity_moves",
];

/// A JSON number, or a string holding one.
pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

/// One configuration with its runs.
#[derive(Debug)]
pub struct Configuration {
    pub label: String,
    /// The row label of the command's table (the label where the file has none).
    pub name: String,
    /// The title of its group, where the experiment has several.
    pub group: Option<String>,
    /// The workload it runs.
    pub workload: String,
    pub preset: Option<String>,
    pub value: Option<String>,
    pub settings: Vec<String>,
    /// Indices into [`Experiment::runs`].
    pub runs: Vec<usize>,
    /// The series of a sweep this configuration belongs to (one line per series).
    pub series: String,
    /// The load that ran next to each run (`busy:2`), if any.
    pub interference: Option<String>,
}

/// Task counts of one run, summed over its collections (000 Fig. 4a / 8b).
#[derive(Debug, Default)]
pub struct TaskTotals {
    /// Task type → per-worker count.
    pub by_type: BTreeMap<String, Vec<u64>>,
    pub workers: usize,
}

/// Worker × CPU samples of one run, summed over its collections (000 Fig. 4b / 8a).
#[derive(Debug, Default)]
pub struct Occupancy {
    pub cpus: Vec<u32>,
    /// `samples[worker][column]`.
    pub samples: Vec<Vec<u64>>,
}

/// Everything read from a results directory.
#[derive(Debug)]
pub struct Experiment {
    pub dir: PathBuf,
    pub file: ExperimentFile,
    pub configurations: Vec<Configuration>,
    pub runs: Vec<Run>,
    /// Things the reader should know: missing files, bad lines, runs without collections.
    pub notes: Vec<String>,
}

impl Experiment {
    /// Read `dir`. Errors only for a missing or invalid `experiment.json`.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        const WANTED: &str =
            "expected a results directory written by compare, sweep, ablation, os-bench, sched-bench or pause-bench";
        match std::fs::metadata(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                bail!("{}: no such file or directory ({WANTED})", dir.display())
            }
            Err(e) => bail!("cannot read {}: {e}", dir.display()),
            Ok(meta) if !meta.is_dir() => {
                bail!("{} is a file, not a directory ({WANTED})", dir.display())
            }
            Ok(_) => {}
        }
        let path = dir.join(EXPERIMENT_FILE);
        if !path.is_file() {
            bail!(
                "{} has no experiment.json: not a results directory written by a bench command (compare, sweep, ablation, os-bench, sched-bench, pause-bench)",
                dir.display()
            );
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not valid JSON", path.display()))?;
        check_format(&path, &value)?;
        let file: ExperimentFile = serde_json::from_value(value).with_context(|| {
            format!(
                "{} does not have the concord-results layout",
                path.display()
            )
        })?;
        let mut exp = Experiment {
            dir: dir.to_path_buf(),
            file,
            configurations: Vec::new(),
            runs: Vec::new(),
            notes: Vec::new(),
        };
        exp.read_runs();
        exp.check_numbers();
        exp.group();
        Ok(exp)
    }

    /// The results the page must never replace: `experiment.json`, every file a run names
    /// (the page is made from them, present or not) and every file in `runs/` (a HotSpot run
    /// keeps its GC log and the agent's records there).
    pub fn results_files(&self) -> Vec<PathBuf> {
        let named = self.file.runs.iter().flat_map(|r| [&r.summary, &r.records]);
        let in_runs = std::fs::read_dir(self.dir.join(RUNS_DIR))
            .into_iter()
            .flatten()
            .filter_map(|e| Some(e.ok()?.path()));
        std::iter::once(self.dir.join(EXPERIMENT_FILE))
            .chain(named.flatten().map(|rel| self.dir.join(rel)))
            .chain(in_runs)
            .collect()
    }

    pub fn is_sweep(&self) -> bool {
        self.file.kind == "sweep" || self.file.vary.is_some()
    }

    fn read_runs(&mut self) {
        let entries = self.file.runs.clone();
        if self.file.kind == "jvm-bench" {
            self.notes.push(
                "HotSpot runs (concord jvm bench) have no Concord per-collection records, so the \
                 per-collection sections stay empty; each run's GC log (.gc.log) and the agent's \
                 per-GC records (.agent.jsonl) are beside its summary."
                    .into(),
            );
        }
        if self.file.kind == "placement-bench" {
            self.notes.push(
                "The memory-placement benchmark (concord placement-bench) runs no collector, so \
                 this page has no section about collections; the GC columns of the summary are \
                 empty."
                    .into(),
            );
        }
        let has_records = !matches!(self.file.kind.as_str(), "jvm-bench" | "placement-bench");
        for entry in entries {
            let who = run_name(&entry);
            let (mut summary, mut records) = (None, None);
            if entry.status == "ok" {
                summary = self.read_summary(&who, entry.summary.as_deref());
                // A HotSpot run has no Concord per-collection records (its GC log and the
                // agent's records are beside its summary); a placement run has no collections.
                if has_records {
                    records = self.read_records(&who, entry.records.as_deref());
                }
                if let Some(r) = &records {
                    if r.is_empty() {
                        self.notes.push(format!(
                            "Run {who} ran no collection (its records are empty)."
                        ));
                    }
                }
            } else if entry.status != "failed" {
                self.notes.push(format!(
                    "Run {who} has status {:?} (expected \"ok\" or \"failed\"); it is left out.",
                    entry.status
                ));
            }
            self.runs.push(Run {
                value: entry.value.clone(),
                entry,
                summary,
                records,
            });
        }
    }

    /// A note for every summary field the page reads as a number that holds something else
    /// (`"gc_pause_total_ms": "abc"`): Concord's own fields, and any field that is a number in
    /// another run. Such a value counts as missing.
    fn check_numbers(&mut self) {
        let numeric_somewhere = |key: &str| {
            self.runs.iter().any(|r| {
                r.summary
                    .as_ref()
                    .and_then(|s| s.get(key))
                    .and_then(as_f64)
                    .is_some()
            })
        };
        let mut notes = Vec::new();
        for run in &self.runs {
            let Some(Value::Object(summary)) = &run.summary else {
                continue;
            };
            for (key, value) in summary {
                let expected = STANDARD_KEYS.contains(&key.as_str()) || numeric_somewhere(key);
                if !expected || value.is_null() || as_f64(value).is_some() {
                    continue;
                }
                let mut found = value.to_string();
                if found.chars().count() > 60 {
                    found = found.chars().take(57).collect::<String>() + "…";
                }
                notes.push(format!(
                    "Run {}: summary {}: field \"{key}\" is {found}, expected a number; it \
                     counts as missing (— on the page, left out of the medians).",
                    run_name(&run.entry),
                    run.entry.summary.as_deref().unwrap_or_default()
                ));
            }
        }
        self.notes.extend(notes);
    }

    /// The text of the run's `what` file `rel` (`summary`, `records`), or a note saying it is
    /// missing or unreadable and what follows (`lost`).
    fn read_file(
        &mut self,
        who: &str,
        what: &str,
        rel: Option<&str>,
        lost: &str,
    ) -> Option<String> {
        let Some(rel) = rel else {
            self.notes
                .push(format!("Run {who} names no {what} file; {lost}."));
            return None;
        };
        match std::fs::read_to_string(self.dir.join(rel)) {
            Ok(text) => Some(text),
            Err(e) => {
                self.notes.push(format!(
                    "Run {who}: {what} {rel} cannot be read ({e}); {lost}."
                ));
                None
            }
        }
    }

    fn read_summary(&mut self, who: &str, rel: Option<&str>) -> Option<Value> {
        let text = self.read_file(who, "summary", rel, "the run is left out")?;
        let rel = rel.unwrap_or_default();
        match serde_json::from_str::<Value>(&text) {
            Ok(v) if v.is_object() => Some(v),
            Ok(_) => {
                self.notes.push(format!(
                    "Run {who}: summary {rel} is not a JSON object; the run is left out."
                ));
                None
            }
            Err(e) => {
                self.notes.push(format!(
                    "Run {who}: summary {rel} is not valid JSON ({e}); the run is left out."
                ));
                None
            }
        }
    }

    fn read_records(&mut self, who: &str, rel: Option<&str>) -> Option<Vec<Record>> {
        let lost = "its per-collection plots are missing";
        let text = self.read_file(who, "records", rel, lost)?;
        let rel = rel.unwrap_or_default();
        let mut records = Vec::new();
        let mut bad = 0usize;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            match serde_json::from_str::<Record>(line) {
                Ok(r) => records.push(r),
                Err(_) => bad += 1,
            }
        }
        if bad > 0 {
            self.notes.push(format!(
                "Run {who}: {bad} line(s) of {rel} are not collection records and were skipped."
            ));
        }
        Some(records)
    }

    /// Put runs under their configurations and name the series of a sweep.
    fn group(&mut self) {
        let vary_key = self.file.vary.as_ref().map(|v| v.key.clone());
        for c in &self.file.configurations {
            if self.configurations.iter().any(|x| x.label == c.label) {
                self.notes.push(format!(
                    "Configuration {:?} is listed twice; the second is ignored.",
                    c.label
                ));
                continue;
            }
            self.configurations.push(Configuration {
                label: c.label.clone(),
                name: c.name.clone().unwrap_or_else(|| c.label.clone()),
                group: c.group.clone(),
                workload: c
                    .workload
                    .clone()
                    .unwrap_or_else(|| self.file.workload.clone()),
                preset: c.preset.clone(),
                value: c.value.clone(),
                settings: c.settings.clone(),
                runs: Vec::new(),
                series: series_name(c, vary_key.as_deref()),
                interference: c.interference.clone(),
            });
        }
        for (i, run) in self.runs.iter_mut().enumerate() {
            let label = &run.entry.configuration;
            let idx = match self.configurations.iter().position(|c| &c.label == label) {
                Some(idx) => idx,
                None => {
                    self.notes.push(format!(
                        "Run of configuration {label:?} names a configuration experiment.json does not list."
                    ));
                    let preset = run
                        .summary
                        .as_ref()
                        .and_then(|s| s.get("preset"))
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    self.configurations.push(Configuration {
                        label: label.clone(),
                        name: label.clone(),
                        group: None,
                        workload: self.file.workload.clone(),
                        preset,
                        value: None,
                        settings: Vec::new(),
                        runs: Vec::new(),
                        series: label.clone(),
                        interference: None,
                    });
                    self.configurations.len() - 1
                }
            };
            let config = &mut self.configurations[idx];
            if run.value.is_none() {
                run.value = config.value.clone();
            }
            config.runs.push(i);
        }
    }

    /// The runs of `config` that finished and whose summary could be read.
    pub fn ok_runs<'a>(&'a self, config: &'a Configuration) -> impl Iterator<Item = &'a Run> {
        config
            .runs
            .iter()
            .map(|&i| &self.runs[i])
            .filter(|r| r.ok())
    }

    /// Median over the configuration's good runs of `f`.
    pub fn median_of(
        &self,
        config: &Configuration,
        f: impl Fn(&Run) -> Option<f64>,
    ) -> Option<f64> {
        median(self.ok_runs(config).filter_map(f).collect())
    }

    /// Smallest and largest of `f` over the configuration's good runs.
    pub fn range_of(
        &self,
        config: &Configuration,
        f: impl Fn(&Run) -> Option<f64>,
    ) -> Option<(f64, f64)> {
        let v: Vec<f64> = self
            .ok_runs(config)
            .filter_map(f)
            .filter(|x| x.is_finite())
            .collect();
        let lo = v.iter().copied().reduce(f64::min)?;
        let hi = v.iter().copied().reduce(f64::max)?;
        Some((lo, hi))
    }

    /// The run that stands for the configuration in per-run plots: among the good runs with
    /// records, the one with the median GC time (the lower of the two middle ones).
    pub fn representative<'a>(&'a self, config: &'a Configuration) -> Option<&'a Run> {
        let mut runs: Vec<&Run> = self
            .ok_runs(config)
            .filter(|r| r.records.is_some())
            .collect();
        if runs.is_empty() {
            return None;
        }
        runs.sort_by(|a, b| {
            a.gc_ms()
                .unwrap_or(f64::INFINITY)
                .total_cmp(&b.gc_ms().unwrap_or(f64::INFINITY))
        });
        Some(runs[(runs.len() - 1) / 2])
    }

    /// Runs that did not finish.
    pub fn failed_runs(&self) -> impl Iterator<Item = &Run> {
        self.runs.iter().filter(|r| r.entry.status == "failed")
    }

    /// The varied values in order: `vary.values`, then any other value a run has.
    pub fn sweep_values(&self) -> Vec<String> {
        let mut values: Vec<String> = self
            .file
            .vary
            .as_ref()
            .map(|v| v.values.clone())
            .unwrap_or_default();
        for r in &self.runs {
            if let Some(v) = &r.value {
                if !values.contains(v) {
                    values.push(v.clone());
                }
            }
        }
        values
    }

    /// Sweep series in order of first appearance.
    pub fn series(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for c in &self.configurations {
            if !out.contains(&c.series) {
                out.push(c.series.clone());
            }
        }
        out
    }

    /// Median of `f` over the good runs of `series` at `value`.
    pub fn series_median(
        &self,
        series: &str,
        value: &str,
        f: impl Fn(&Run) -> Option<f64>,
    ) -> Option<f64> {
        let v = self
            .configurations
            .iter()
            .filter(|c| c.series == series)
            .flat_map(|c| self.ok_runs(c))
            .filter(|r| r.value.as_deref() == Some(value))
            .filter_map(f)
            .collect();
        median(v)
    }
}

/// How notes name a run: `vanilla round 1`, `vanilla (4) round 2` for a sweep.
fn run_name(entry: &RunEntry) -> String {
    format!(
        "{}{} round {}",
        entry.configuration,
        entry
            .value
            .as_ref()
            .map(|v| format!(" ({v})"))
            .unwrap_or_default(),
        entry.round + 1
    )
}

/// Reject anything but a concord-results file of our version, naming what is wrong.
fn check_format(path: &Path, v: &Value) -> anyhow::Result<()> {
    let Some(obj) = v.as_object() else {
        bail!("{} is not a JSON object", path.display());
    };
    match obj.get("format").and_then(Value::as_str) {
        Some(FORMAT) => {}
        Some(other) => bail!(
            "{} has format {other:?}; expected {FORMAT:?} (written by a bench command)",
            path.display()
        ),
        None => bail!(
            "{} has no \"format\" field; expected \"format\": {FORMAT:?}",
            path.display()
        ),
    }
    match obj.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(other) => bail!(
            "{} is version {other} of the results format; this concord reads version {VERSION}",
            path.display()
        ),
        None => bail!(
            "{} has no numeric \"version\" field; expected \"version\": {VERSION}",
            path.display()
        ),
    }
    if !obj.get("runs").is_some_and(Value::is_array) {
        bail!("{} has no \"runs\" list", path.display());
    }
    Ok(())
}

/// The line a configuration belongs to in sweep plots: its label without the varied value
/// (`vanilla-gc-threads-2` → `vanilla`), else its preset, else its label.
fn series_name(c: &ConfigurationEntry, vary_key: Option<&str>) -> String {
    let Some(value) = c.value.as_deref() else {
        return c.label.clone();
    };
    let seps: &[char] = &[' ', '=', ':', '@', '/', '-', '_', ',', '(', ')'];
    let mut s = c.label.trim_end_matches(')').trim_end();
    if let Some(rest) = s.strip_suffix(value) {
        s = rest.trim_end_matches(seps);
        if let Some(key) = vary_key {
            if let Some(rest) = s.strip_suffix(key) {
                s = rest.trim_end_matches(seps);
            }
        }
        if !s.is_empty() {
            return s.to_string();
        }
    }
    c.preset.clone().unwrap_or_else(|| c.label.clone())
}

/// Median (mean of the middle two for an even count); `None` for no values.
pub fn median(mut v: Vec<f64>) -> Option<f64> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// Task counts of a run, summed over its collections.
pub fn task_totals(records: &[Record]) -> TaskTotals {
    let mut t = TaskTotals::default();
    for r in records {
        for (name, counts) in r.task_counts() {
            let row = t.by_type.entry(name).or_default();
            if row.len() < counts.len() {
                row.resize(counts.len(), 0);
            }
            for (acc, c) in row.iter_mut().zip(&counts) {
                *acc += c;
            }
            t.workers = t.workers.max(counts.len());
        }
        t.workers = t.workers.max(r.workers.len());
    }
    for row in t.by_type.values_mut() {
        row.resize(t.workers, 0);
    }
    t
}

/// Worker × CPU samples of a run, summed over its collections. Columns are the CPUs seen, or
/// `0..usable` when every CPU seen is below `usable` (so idle CPUs show as empty columns).
pub fn occupancy(records: &[Record], usable: Option<u32>) -> Occupancy {
    let mut cells: BTreeMap<(usize, u32), u64> = BTreeMap::new();
    let mut workers = 0;
    for r in records {
        workers = workers
            .max(r.workers.len())
            .max(r.cpu_occupancy.samples.len());
        for (w, cpu, n) in r.occupancy() {
            *cells.entry((w, cpu)).or_default() += n;
        }
    }
    let mut cpus: Vec<u32> = cells.keys().map(|&(_, c)| c).collect();
    cpus.sort_unstable();
    cpus.dedup();
    if let Some(usable) = usable.filter(|&u| u > 0 && u <= 256) {
        if cpus.iter().all(|&c| c < usable) {
            cpus = (0..usable).collect();
        }
    }
    let samples = (0..workers)
        .map(|w| {
            cpus.iter()
                .map(|&c| cells.get(&(w, c)).copied().unwrap_or(0))
                .collect()
        })
        .collect();
    Occupancy { cpus, samples }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![f64::NAN]), None);
    }

    #[test]
    fn series_names_drop_the_varied_value() {
        let c = |label: &str, value: Option<&str>| ConfigurationEntry {
            label: label.into(),
            name: None,
            group: None,
            workload: None,
            preset: Some("vanilla".into()),
            value: value.map(str::to_string),
            settings: vec![],
            interference: None,
            sim: None,
        };
        let key = Some("gc-threads");
        assert_eq!(
            series_name(&c("vanilla-gc-threads-2", Some("2")), key),
            "vanilla"
        );
        assert_eq!(
            series_name(&c("optimized gc-threads=4", Some("4")), key),
            "optimized"
        );
        assert_eq!(series_name(&c("vanilla@16", Some("16")), key), "vanilla");
        assert_eq!(series_name(&c("+steal (8)", Some("8")), key), "+steal");
        assert_eq!(series_name(&c("odd", Some("8")), key), "vanilla");
        assert_eq!(series_name(&c("vanilla", None), key), "vanilla");
    }

    #[test]
    fn records_without_derived_matrices_fall_back_to_workers() {
        let line = r#"{"kind":"young","start_ms":1,"pause_ms":0.5,
            "workers":[{"root_tasks":{"ThreadRoots":2},"steal_tasks":1,"cpus":{"1":3}},
                       {"root_tasks":{},"steal_tasks":1,"cpus":{"0":1,"1":1}}]}"#;
        let r: Record = serde_json::from_str(line).unwrap();
        let t = task_totals(std::slice::from_ref(&r));
        assert_eq!(t.workers, 2);
        assert_eq!(t.by_type["ThreadRoots"], vec![2, 0]);
        assert_eq!(t.by_type["Steal"], vec![1, 1]);
        let o = occupancy(&[r], Some(4));
        assert_eq!(o.cpus, vec![0, 1, 2, 3]);
        assert_eq!(o.samples, vec![vec![0, 3, 0, 0], vec![1, 1, 0, 0]]);
    }
}
