//! `concord compare <workload> [size] --preset a,b[,c]`: one workload under a few presets,
//! alternating A B A B … `--repeat` times in one invocation (so machine noise hits all of them
//! alike), then a table of medians with spreads and ratios to the first configuration; every
//! run's summary and per-collection records go to a results directory ([`crate::results`]).
//!
//! This module also holds what `concord sweep` shares: the common run flags
//! ([`CommonArgs`]), the plan of configurations ([`Plan`]), the loop that runs them, writes the
//! results directory and honours Ctrl-C ([`execute`]), and the JSON of the outcome.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::format_size;
use concord::{GcConfig, Preset};
use concord_workloads::{Workload, WorkloadParams};
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{json, Map, Value};

use crate::experiment::{
    find_workload, heap_setting, ratio, wrong_result, Arm, Column, Experiment, Figures, Outcome,
};
use crate::interference::Interference;
use crate::results::{
    command_line, sanitize_label, ConfigurationEntry, ExperimentFile, ResultsDir, RunEntry,
    Timestamp, VaryEntry, FORMAT, RUNS_DIR, VERSION,
};
use crate::run::SwitchArgs;

/// The flags `compare` and `sweep` share: the workload, the rounds, where the results go, and
/// the run flags applied to every configuration.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Workload to run (default gcbench; also binary-trees, search, transform, render,
    /// database, kmeans, kv-service, queue-churn).
    #[arg(default_value = "gcbench")]
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth).
    pub size: Option<u32>,
    /// Rounds: each runs every configuration once, in order.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Write every run's summary and per-collection records here, with experiment.json (a new
    /// or empty directory; default results/<UTC timestamp>/ in the current directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print every configuration, its runs, medians and ratios as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Do not write DIR/report.html at the end (`concord report DIR` writes it later).
    #[arg(long = "no-report")]
    pub no_report: bool,
    /// Maximum heap size for every configuration, e.g. 64m (default: the workload's own).
    #[arg(long)]
    pub heap: Option<String>,
    /// Young generation size for every configuration (default: heap / 3).
    #[arg(long)]
    pub young: Option<String>,
    /// GC worker threads for every configuration, N or dynamic (default: each preset's).
    #[arg(long = "gc-threads", value_name = "N|dynamic")]
    pub gc_threads: Option<String>,
    // The switch overrides, applied to every configuration on top of its preset.
    #[command(flatten)]
    pub switches: Box<SwitchArgs>,
    /// Mutator threads (default 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: Option<u32>,
    /// Repeat the workload this many times in one heap, in every run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rounds: u32,
    /// Verify the whole heap after every collection in every run.
    #[arg(long)]
    pub verify: bool,
    /// Profile object lifespans in every run.
    #[arg(long)]
    pub lifespans: bool,
    /// Load during every run: busy:K starts K busy-loop threads in this process.
    #[arg(long, value_name = "busy:K")]
    pub interfere: Option<Interference>,
}

impl CommonArgs {
    /// The configuration keys the flags set, in a fixed order, heap excluded (it may depend on
    /// the configuration's workload parameters).
    fn settings(&self) -> Vec<(&'static str, String)> {
        let s = &self.switches;
        let flags: [(&'static str, &Option<String>); 11] = [
            ("young", &self.young),
            ("gc-threads", &self.gc_threads),
            ("task-queue", &s.task_queue),
            ("task-affinity", &s.task_affinity),
            ("steal", &s.steal),
            ("termination", &s.termination),
            ("parking", &s.parking),
            ("pin-start", &s.pin_start),
            ("gc-affinity", &s.gc_affinity),
            ("mutator-sched", &s.mutator_sched),
            ("fifo-cpu-threshold", &s.fifo_cpu_threshold),
        ];
        let mut settings: Vec<(&'static str, String)> = flags
            .into_iter()
            .filter_map(|(k, v)| v.clone().map(|v| (k, v)))
            .collect();
        if self.verify {
            settings.push(("verify", "true".to_string()));
        }
        if self.lifespans {
            settings.push(("lifespans", "true".to_string()));
        }
        settings
    }
}

/// Flags of `concord compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// Presets to compare, comma-separated (vanilla, modern, optimized); the first is the
    /// baseline of the ratios. A preset may appear twice (an A/A check of the noise).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "vanilla,optimized",
        value_name = "a,b[,c]"
    )]
    pub preset: Vec<String>,
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The preset names of `--preset`, checked; an error names the allowed ones.
pub fn parse_presets(names: &[String]) -> Result<Vec<String>> {
    let allowed = || {
        Preset::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if names.is_empty() {
        bail!("--preset: no preset given (allowed: {})", allowed());
    }
    names
        .iter()
        .map(|name| {
            let name = name.trim();
            match Preset::ALL.iter().find(|p| p.name() == name) {
                Some(p) => Ok(p.name().to_string()),
                None => bail!("--preset: unknown preset '{name}' (allowed: {})", allowed()),
            }
        })
        .collect()
}

/// The labels of `presets` in order, unique: a preset that appears again gets `#2`, `#3`, …
pub fn unique_labels(presets: &[String]) -> Vec<String> {
    let mut labels = Vec::with_capacity(presets.len());
    for (i, p) in presets.iter().enumerate() {
        let before = presets[..i].iter().filter(|q| *q == p).count();
        labels.push(if before == 0 {
            p.clone()
        } else {
            format!("{p}#{}", before + 1)
        });
    }
    labels
}

/// One configuration of a plan, next to its arm: what `experiment.json` says about it.
#[derive(Clone, Debug)]
pub struct Configuration {
    /// Its preset.
    pub preset: String,
    /// Its value of the swept key (sweeps only).
    pub value: Option<String>,
    /// Its label as a file-name part.
    pub file_label: String,
}

/// What a `compare` or `sweep` runs: the arms, alternating, and what to write about them.
pub struct Plan {
    /// `compare` or `sweep`.
    pub kind: &'static str,
    /// The workload.
    pub workload: Arc<dyn Workload>,
    /// The workload size, if given.
    pub size: Option<u32>,
    /// What a sweep varies.
    pub vary: Option<VaryEntry>,
    /// The arms, their groups and the rounds.
    pub experiment: Experiment,
    /// `configurations[i]` describes `experiment.arms[i]`.
    pub configurations: Vec<Configuration>,
}

/// What varies in one configuration of a sweep: a configuration key or the mutator count.
#[derive(Clone, Debug)]
pub enum Override {
    /// A configuration key and its value (`gc-threads=2`, `heap=32m`).
    Setting(&'static str, String),
    /// The number of mutator threads.
    Mutators(u32),
}

/// The arm of `preset` with the common flags and `over` on top, validated (configuration and
/// workload parameters), in `group`.
pub fn build_arm(
    common: &CommonArgs,
    workload: &Arc<dyn Workload>,
    preset: &str,
    label: String,
    group: usize,
    over: Option<&Override>,
) -> Result<Arm> {
    let mutators = match over {
        Some(Override::Mutators(m)) => *m,
        _ => common.mutators.unwrap_or(1),
    };
    let params = WorkloadParams {
        mutators: mutators as usize,
        rounds: common.rounds as usize,
        size: common.size,
    };
    workload
        .validate(&params)
        .map_err(|e| anyhow::anyhow!("workload {}: {e}", workload.name()))?;
    let heap = match over {
        Some(Override::Setting("heap", h)) => h.clone(),
        _ => heap_setting(common.heap.as_deref(), workload.as_ref(), &params),
    };
    let mut settings: Vec<(&str, String)> = vec![("preset", preset.to_string()), ("heap", heap)];
    settings.extend(common.settings());
    if let Some(Override::Setting(key, value)) = over {
        if *key != "heap" {
            settings.push((key, value.clone()));
        }
    }
    let mut arm = Arm::with_settings(
        label,
        String::new(),
        &settings,
        group,
        workload.clone(),
        params,
        common.interfere,
    )?;
    arm.what = describe(&arm.config);
    Ok(arm)
}

/// A configuration in words: preset, heap, GC threads and every switch.
fn describe(config: &GcConfig) -> String {
    let switches: Vec<String> = crate::summary::switches(config)
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    format!(
        "preset {}, heap {}, {}{} GC thread{}, {}",
        config.preset,
        format_size(config.heap_size),
        if config.dynamic_gc_threads {
            "up to "
        } else {
            ""
        },
        config.gc_threads,
        if config.gc_threads == 1 { "" } else { "s" },
        switches.join(", ")
    )
}

impl Plan {
    /// The configurations as `experiment.json` lists them.
    fn configuration_entries(&self) -> Vec<ConfigurationEntry> {
        self.experiment
            .arms
            .iter()
            .zip(&self.configurations)
            .map(|(arm, c)| {
                let mut settings = arm.settings.clone();
                settings.push(format!("mutators={}", arm.params.mutators));
                settings.push(format!("rounds={}", arm.params.rounds));
                ConfigurationEntry {
                    label: arm.label.clone(),
                    preset: c.preset.clone(),
                    value: c.value.clone(),
                    settings,
                    interference: arm.interference.map(|l| l.to_string()),
                }
            })
            .collect()
    }

    /// A fresh `experiment.json`: no runs yet.
    pub fn experiment_file(&self, started: &Timestamp, command: String) -> ExperimentFile {
        ExperimentFile {
            format: FORMAT,
            version: VERSION,
            kind: self.kind,
            workload: self.workload.name().to_string(),
            size: self.size,
            started: started.rfc3339.clone(),
            command,
            vary: self.vary.clone(),
            repeat: self.experiment.repeat,
            configurations: self.configuration_entries(),
            runs: Vec::new(),
            interrupted: false,
            complete: false,
        }
    }
}

/// What happened to one run, for progress reports.
pub struct RunEvent<'a> {
    /// The run's number, from 1.
    pub n: usize,
    /// How many runs the experiment plans.
    pub total: usize,
    /// The arm's name.
    pub name: String,
    /// The round, from 0.
    pub round: u32,
    /// `None` when the run is about to start; then its summary line, or why it failed.
    pub result: Option<std::result::Result<String, &'a str>>,
}

/// The runs of an executed plan.
pub struct Executed {
    /// Figures and medians per arm (runs without a summary are left out).
    pub outcome: Outcome,
    /// `experiment.json` as last written.
    pub file: ExperimentFile,
    /// Per arm, per run with a summary: the workload's own result details.
    pub details: Vec<Vec<Vec<(String, String)>>>,
}

impl Executed {
    /// The runs that failed.
    pub fn failed(&self) -> Vec<(usize, &RunEntry)> {
        self.file
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| r.status != "ok")
            .collect()
    }

    /// The exit status: 130 if interrupted, else 1 if a run failed, else success.
    pub fn exit_code(&self) -> ExitCode {
        if self.file.interrupted {
            ExitCode::from(130)
        } else if self.failed().is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// Runs `plan` (every arm once per round, `repeat` rounds), writing each run's summary and
/// records into `dir` and `file` (as `experiment.json`) after every run. Before each run it
/// looks at `stop`: once set, no further run starts, and the file says `interrupted`. A run
/// that fails (an error, a wrong checksum, a failed verification) is recorded as `failed`, and
/// the experiment goes on. `report` hears about every finished run.
pub fn execute(
    plan: &Plan,
    dir: &ResultsDir,
    mut file: ExperimentFile,
    stop: &AtomicBool,
    report: &mut dyn FnMut(&RunEvent),
) -> Result<Executed> {
    let arms = &plan.experiment.arms;
    let schedule = plan.experiment.schedule();
    let total = schedule.len();
    let digits = total.to_string().len().max(3);
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); arms.len()];
    let mut details: Vec<Vec<Vec<(String, String)>>> = vec![Vec::new(); arms.len()];
    let mut all_ok = true;
    dir.write_experiment(&file)?;
    for (i, &(round, a)) in schedule.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            file.interrupted = true;
            break;
        }
        let arm = &arms[a];
        let n = i + 1;
        report(&RunEvent {
            n,
            total,
            name: arm.name(),
            round,
            result: None,
        });
        let stem = format!("{n:0digits$}-{}", plan.configurations[a].file_label);
        let summary_rel = format!("{RUNS_DIR}/{stem}.summary.json");
        let records_rel = format!("{RUNS_DIR}/{stem}.records.jsonl");
        let records_tmp = dir.path(&format!("{RUNS_DIR}/.{stem}.records.jsonl.tmp"));
        let result = arm.run_once(Some(&records_tmp));
        let records = if records_tmp.exists() {
            std::fs::rename(&records_tmp, dir.path(&records_rel))
                .with_context(|| format!("cannot rename '{}'", records_tmp.display()))?;
            Some(records_rel)
        } else {
            None
        };
        let mut entry = RunEntry {
            configuration: arm.label.clone(),
            value: plan.configurations[a].value.clone(),
            round,
            summary: None,
            records,
            status: "ok",
            error: None,
        };
        let line = match result {
            Ok(summary) => {
                let mut text = serde_json::to_string_pretty(&summary.json())?;
                text.push('\n');
                let path = dir.path(&summary_rel);
                crate::results::write_atomic(&path, text.as_bytes())
                    .with_context(|| format!("cannot write '{}'", path.display()))?;
                entry.summary = Some(summary_rel);
                if let Some(problem) = wrong_result(&summary) {
                    entry.status = "failed";
                    entry.error = Some(problem);
                    all_ok = false;
                }
                runs[a].push(Figures::of(&summary));
                details[a].push(summary.details.clone());
                summary.line()
            }
            Err(e) => {
                entry.status = "failed";
                entry.error = Some(format!("{e:#}"));
                all_ok = false;
                String::new()
            }
        };
        file.runs.push(entry);
        let entry = file.runs.last().expect("just pushed");
        dir.write_experiment(&file)?;
        report(&RunEvent {
            n,
            total,
            name: arm.name(),
            round,
            result: Some(match &entry.error {
                Some(e) => Err(e.as_str()),
                None => Ok(line),
            }),
        });
    }
    file.complete = file.runs.len() == total;
    dir.write_experiment(&file)?;
    Ok(Executed {
        outcome: Outcome::of(runs, all_ok),
        file,
        details,
    })
}

/// Set by the first Ctrl-C: no further run starts.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The progress bar on screen, if any, so that the Ctrl-C handler can print above it.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Installs the Ctrl-C handler: the first Ctrl-C sets [`INTERRUPTED`] (the current run
/// finishes, then the experiment stops and reports what it has); a second one exits at once
/// with status 130 (the results directory is consistent: every file is written atomically).
fn install_interrupt_handler() {
    let installed = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            eprintln!("\nconcord: interrupted again: quitting now");
            std::process::exit(130);
        }
        let msg = "concord: interrupted: the current run finishes, then the experiment stops \
                   (press Ctrl-C again to quit at once)";
        let bar = BAR.lock().ok().and_then(|b| b.clone());
        match bar {
            Some(bar) => bar.println(msg),
            None => eprintln!("\n{msg}"),
        }
    });
    if let Err(e) = installed {
        eprintln!("concord: cannot catch Ctrl-C ({e}); Ctrl-C will stop at once");
    }
}

/// Progress on stderr: a bar with runs done / total and an ETA when stderr is a terminal,
/// else one plain line per run.
struct Progress {
    bar: Option<ProgressBar>,
    repeat: u32,
}

impl Progress {
    fn new(total: usize, repeat: u32) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(
                "[{elapsed_precise}] [{bar:30}] {pos}/{len} runs, ETA {eta} {wide_msg}",
            )
            .expect("a valid template")
            .progress_chars("=> ");
            let bar = ProgressBar::new(total as u64).with_style(style);
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        if let Ok(mut slot) = BAR.lock() {
            slot.clone_from(&bar);
        }
        Progress { bar, repeat }
    }

    fn report(&self, event: &RunEvent) {
        let what = format!("{} (round {}/{})", event.name, event.round + 1, self.repeat);
        match (&self.bar, &event.result) {
            (Some(bar), None) => bar.set_message(format!("running {what}")),
            (Some(bar), Some(Ok(_))) => bar.inc(1),
            (Some(bar), Some(Err(e))) => {
                bar.inc(1);
                bar.println(format!("concord: run {} {what} FAILED: {e}", event.n));
            }
            (None, None) => {}
            (None, Some(Ok(line))) => {
                eprintln!("[{}/{}] {what}: {line}", event.n, event.total)
            }
            (None, Some(Err(e))) => {
                eprintln!("[{}/{}] {what}: FAILED: {e}", event.n, event.total)
            }
        }
    }

    fn finish(self) {
        if let Ok(mut slot) = BAR.lock() {
            *slot = None;
        }
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Creates the results directory, runs `plan` with progress on stderr and Ctrl-C handling,
/// and returns the runs with the directory.
pub fn run_plan(plan: &Plan, out: Option<&std::path::Path>) -> Result<(Executed, ResultsDir)> {
    let started = Timestamp::now();
    let dir = ResultsDir::create(out, &started)?;
    let file = plan.experiment_file(&started, command_line());
    install_interrupt_handler();
    let progress = Progress::new(plan.experiment.schedule().len(), plan.experiment.repeat);
    let executed = execute(plan, &dir, file, &INTERRUPTED, &mut |e| progress.report(e));
    progress.finish();
    Ok((executed?, dir))
}

/// The ratio of every figure of `m` to the same figure of `base` (0 where `base` is 0).
fn ratios(m: &Figures, base: &Figures) -> Value {
    let (Ok(Value::Object(m)), Ok(Value::Object(base))) =
        (serde_json::to_value(m), serde_json::to_value(base))
    else {
        return Value::Null;
    };
    let ratios: Map<String, Value> = m
        .iter()
        .filter_map(|(k, v)| {
            let (a, b) = (v.as_f64()?, base.get(k)?.as_f64()?);
            Some((k.clone(), json!(ratio(a, b))))
        })
        .collect();
    Value::Object(ratios)
}

/// The medians of the details whose values are numbers in every run that has them.
fn numeric_detail_medians(runs: &[Vec<(String, String)>]) -> BTreeMap<String, f64> {
    let mut values: BTreeMap<String, Option<Vec<f64>>> = BTreeMap::new();
    for (k, v) in runs.iter().flatten() {
        let slot = values.entry(k.clone()).or_insert_with(|| Some(Vec::new()));
        match (slot.as_mut(), v.trim().parse::<f64>()) {
            (Some(list), Ok(x)) if x.is_finite() => list.push(x),
            _ => *slot = None,
        }
    }
    values
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, crate::experiment::median(v))))
        .collect()
}

/// The JSON of an executed plan: what ran, every configuration with its runs, medians, ratios
/// (of every figure) to the first configuration of its group and the workload's own result
/// details, every run as in `experiment.json`, and whether it is complete.
pub fn outcome_json(plan: &Plan, executed: &Executed, dir: &ResultsDir) -> Value {
    let experiment = &plan.experiment;
    let mut configurations = experiment.configurations_json(&executed.outcome);
    let medians = &executed.outcome.medians;
    for (i, c) in configurations
        .as_array_mut()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let arm = &experiment.arms[i];
        let base = experiment
            .arms
            .iter()
            .position(|a| a.group == arm.group)
            .unwrap_or(0);
        c["preset"] = json!(plan.configurations[i].preset);
        c["value"] = json!(plan.configurations[i].value);
        c["what"] = json!(arm.what);
        c["ratios"] = ratios(&medians[i], &medians[base]);
        c["details"] = executed.details[i]
            .iter()
            .map(|run| {
                run.iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<Map<String, Value>>()
                    .into()
            })
            .collect::<Vec<Value>>()
            .into();
        c["details_median"] = json!(numeric_detail_medians(&executed.details[i]));
    }
    let file = &executed.file;
    json!({
        "kind": plan.kind,
        "workload": plan.workload.name(),
        "size": plan.size,
        "repeat": experiment.repeat,
        "vary": plan.vary,
        "out": dir.root.display().to_string(),
        "configurations": configurations,
        "runs": file.runs,
        "failed_runs": executed.failed().len(),
        "interrupted": file.interrupted,
        "complete": file.complete,
    })
}

/// The lines after a table: numeric workload details, failures, an interruption, and where
/// the results are.
pub fn epilogue(plan: &Plan, executed: &Executed, dir: &ResultsDir) -> String {
    let mut s = String::new();
    let width = plan
        .experiment
        .arms
        .iter()
        .map(|a| a.label.chars().count())
        .max()
        .unwrap_or(0);
    let mut details_header = false;
    for (i, arm) in plan.experiment.arms.iter().enumerate() {
        let medians = numeric_detail_medians(&executed.details[i]);
        if medians.is_empty() {
            continue;
        }
        if !details_header {
            let _ = writeln!(s, "workload results (medians):");
            details_header = true;
        }
        let list: Vec<String> = medians.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "  {:<width$}  {}", arm.label, list.join(", "));
    }
    let failed = executed.failed();
    if !failed.is_empty() {
        let _ = writeln!(
            s,
            "{} of {} runs FAILED:",
            failed.len(),
            executed.file.runs.len()
        );
        for (i, run) in failed {
            let _ = writeln!(
                s,
                "  run {} ({}, round {}): {}",
                i + 1,
                run.configuration,
                run.round + 1,
                run.error.as_deref().unwrap_or("failed")
            );
        }
    }
    if executed.file.interrupted {
        let _ = writeln!(
            s,
            "interrupted after {} of {} runs: the table shows the runs finished so far",
            executed.file.runs.len(),
            plan.experiment.schedule().len()
        );
    }
    let root = dir.root.display();
    let _ = writeln!(s, "results written to {root}; see: concord report {root}");
    s
}

/// The columns of the `compare` table (and of each value's table of `sweep`).
pub const COLUMNS: &[Column] = &[
    Column::Runs,
    Column::Wall,
    Column::WallRange,
    Column::WallRatio,
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::P50,
    Column::P99,
    Column::Max,
    Column::FailRate,
    Column::Imbalance,
];

/// What the columns mean.
pub const COLUMNS_NOTE: &str = "wall x, ratio: median wall and GC time relative to the first \
                                row (of its group, where there are groups); fail%: failed steal \
                                attempts; imbal.: most root tasks one worker ran over the mean \
                                per worker.";

/// Run `concord compare`.
pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let common = &args.common;
    let workload = find_workload(&common.workload)?;
    let presets = parse_presets(&args.preset)?;
    let labels = unique_labels(&presets);
    let mut arms = Vec::new();
    let mut configurations = Vec::new();
    for (preset, label) in presets.iter().zip(labels) {
        configurations.push(Configuration {
            preset: preset.clone(),
            value: None,
            file_label: sanitize_label(&label),
        });
        arms.push(build_arm(common, &workload, preset, label, 0, None)?);
    }
    let plan = Plan {
        kind: "compare",
        workload: workload.clone(),
        size: common.size,
        vary: None,
        experiment: Experiment {
            groups: vec![String::new()],
            arms,
            repeat: common.repeat,
        },
        configurations,
    };
    let (executed, dir) = run_plan(&plan, common.out.as_deref())?;
    if common.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&outcome_json(&plan, &executed, &dir))?
        );
        eprint!("{}", epilogue(&plan, &executed, &dir));
        if !common.no_report {
            eprint!("{}", crate::report::after_experiment(&dir.root));
        }
        return Ok(executed.exit_code());
    }
    let experiment = &plan.experiment;
    println!(
        "concord compare {}{}: {}, {}; medians of {} alternating runs each",
        workload.name(),
        common.size.map(|s| format!(" {s}")).unwrap_or_default(),
        experiment
            .arms
            .iter()
            .map(|a| a.label.as_str())
            .collect::<Vec<_>>()
            .join(" vs "),
        params_text(&experiment.arms[0]),
        common.repeat,
    );
    print!("{}", experiment.table(&executed.outcome, COLUMNS));
    print!("{}", ratio_lines(experiment, &executed.outcome));
    println!("{COLUMNS_NOTE}");
    print!("{}", legend(&experiment.arms));
    print!("{}", epilogue(&plan, &executed, &dir));
    if !common.no_report {
        print!("{}", crate::report::after_experiment(&dir.root));
    }
    Ok(executed.exit_code())
}

/// The workload parameters and load of an arm, in words: `1 mutator, 1 round, busy:1`.
pub fn params_text(arm: &Arm) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let mut s = format!(
        "{}, {}",
        plural(arm.params.mutators, "mutator"),
        plural(arm.params.rounds, "round")
    );
    if let Some(load) = arm.interference {
        let _ = write!(s, ", {load} ({} during every run)", load.describe());
    }
    s
}

/// One line per arm: its label and what it is.
pub fn legend<'a>(arms: impl IntoIterator<Item = &'a Arm> + Clone) -> String {
    let width = arms
        .clone()
        .into_iter()
        .map(|a| a.label.chars().count())
        .max()
        .unwrap_or(0);
    let mut s = String::new();
    for arm in arms {
        let _ = writeln!(s, "  {:<width$}  {}", arm.label, arm.what);
    }
    s
}

/// One line per arm after the first of its group: the ratio of each median figure to the
/// group's first arm.
pub fn ratio_lines(experiment: &Experiment, outcome: &Outcome) -> String {
    let mut s = String::new();
    for (i, arm) in experiment.arms.iter().enumerate() {
        let base = experiment
            .arms
            .iter()
            .position(|a| a.group == arm.group)
            .unwrap_or(0);
        if base == i || outcome.runs[i].is_empty() || outcome.runs[base].is_empty() {
            continue;
        }
        let (m, b) = (&outcome.medians[i], &outcome.medians[base]);
        let _ = writeln!(
            s,
            "  {} / {}: wall {:.2}x, GC {:.2}x, p50 {:.2}x, p99 {:.2}x, max {:.2}x, fail% {:.2}x, \
             imbal. {:.2}x",
            arm.label,
            experiment.arms[base].label,
            ratio(m.wall_ms, b.wall_ms),
            ratio(m.gc_ms, b.gc_ms),
            ratio(m.pause_p50_ms, b.pause_p50_ms),
            ratio(m.pause_p99_ms, b.pause_p99_ms),
            ratio(m.pause_max_ms, b.pause_max_ms),
            ratio(m.failure_rate, b.failure_rate),
            ratio(m.imbalance, b.imbalance),
        );
    }
    s
}

/// Helpers for the tests of `compare` and `sweep`.
#[cfg(test)]
pub mod tests_support {
    use clap::Parser;

    use super::{CommonArgs, CompareArgs};

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        compare: CompareArgs,
    }

    /// `concord compare ARGV` parsed.
    pub fn compare_args(argv: &[&str]) -> CompareArgs {
        let argv = ["compare"].iter().chain(argv);
        TestCli::try_parse_from(argv).unwrap().compare
    }

    /// The common flags of `concord compare ARGV --preset vanilla`.
    pub fn common_args(argv: &[&str]) -> CommonArgs {
        let argv: Vec<&str> = argv
            .iter()
            .copied()
            .chain(["--preset", "vanilla"])
            .collect();
        compare_args(&argv).common
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::compare_args as args;
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("concord-compare-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    /// A plan of `presets` on binary-trees 4 with an 8m heap.
    fn plan(presets: &[&str], repeat: u32) -> Plan {
        let a = args(&["binary-trees", "4", "--heap", "8m", "--preset", "vanilla"]);
        let workload = find_workload("binary-trees").unwrap();
        let presets: Vec<String> = presets.iter().map(|p| p.to_string()).collect();
        let labels = unique_labels(&presets);
        let arms = presets
            .iter()
            .zip(&labels)
            .map(|(p, l)| build_arm(&a.common, &workload, p, l.clone(), 0, None).unwrap())
            .collect();
        Plan {
            kind: "compare",
            workload,
            size: Some(4),
            vary: None,
            experiment: Experiment {
                groups: vec![String::new()],
                arms,
                repeat,
            },
            configurations: labels
                .iter()
                .zip(&presets)
                .map(|(l, p)| Configuration {
                    preset: p.clone(),
                    value: None,
                    file_label: sanitize_label(l),
                })
                .collect(),
        }
    }

    fn read_json(path: &std::path::Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn presets_are_checked_and_labels_unique() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_presets(&names(&["vanilla", " optimized"])).unwrap(),
            ["vanilla", "optimized"]
        );
        let err = parse_presets(&names(&["vanilla", "fast"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--preset: unknown preset 'fast' (allowed: vanilla, modern, optimized)"
        );
        assert!(parse_presets(&[]).is_err());
        assert_eq!(
            unique_labels(&names(&["vanilla", "optimized", "vanilla", "vanilla"])),
            ["vanilla", "optimized", "vanilla#2", "vanilla#3"]
        );
    }

    #[test]
    fn common_flags_reach_every_configuration() {
        let a = args(&[
            "gcbench",
            "--preset",
            "vanilla,optimized",
            "--gc-threads",
            "3",
            "--steal",
            "adaptive",
            "--pin-start=false",
            "--verify",
            "--mutators",
            "2",
        ]);
        assert_eq!(a.preset, ["vanilla", "optimized"]);
        let workload = find_workload("gcbench").unwrap();
        for p in ["vanilla", "optimized"] {
            let arm = build_arm(&a.common, &workload, p, p.to_string(), 0, None).unwrap();
            assert_eq!(arm.config.gc_threads, 3);
            assert_eq!(
                arm.config.phase.steal,
                concord::parallel::StealPolicy::Adaptive
            );
            assert!(!arm.config.pin_start && arm.config.verify);
            assert_eq!(arm.params.mutators, 2);
            // gcbench's default heap is per copy.
            assert_eq!(arm.config.heap_size, 128 << 20, "{p}");
            assert!(arm.what.contains("steal adaptive"), "{}", arm.what);
        }
        let over = Override::Setting("gc-threads", "5".into());
        let arm = build_arm(&a.common, &workload, "modern", "m".into(), 0, Some(&over)).unwrap();
        assert_eq!(arm.config.gc_threads, 5);
        let bad = args(&["gcbench", "--preset", "vanilla", "--steal", "random"]);
        let err = build_arm(&bad.common, &workload, "vanilla", "v".into(), 0, None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("configuration 'v'"), "{err}");
        let err = format!(
            "{:#}",
            build_arm(&bad.common, &workload, "vanilla", "v".into(), 0, None)
                .err()
                .unwrap()
        );
        assert!(
            err.contains("allowed: best-of-2, last-victim, adaptive"),
            "{err}"
        );
    }

    #[test]
    fn every_run_is_written_and_a_failed_run_does_not_stop_the_rest() {
        let mut plan = plan(&["vanilla", "optimized"], 2);
        // mutators 0 makes the workload fail at run time (validation would catch it before).
        plan.experiment.arms[0].params.mutators = 0;
        let out = scratch("failed");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord compare".into());
        let stop = AtomicBool::new(false);
        let mut events = Vec::new();
        let executed = execute(&plan, &dir, file, &stop, &mut |e| {
            if let Some(result) = &e.result {
                events.push((e.n, e.total, result.is_ok()));
            }
        })
        .unwrap();
        assert_eq!(
            events,
            [(1, 4, false), (2, 4, true), (3, 4, false), (4, 4, true)]
        );
        assert_eq!(executed.outcome.runs[0].len(), 0);
        assert_eq!(executed.outcome.runs[1].len(), 2);
        assert_eq!(executed.failed().len(), 2);
        assert_eq!(executed.exit_code(), ExitCode::FAILURE);
        let json = read_json(&out.join("experiment.json"));
        assert_eq!(json["format"], "concord-results");
        assert_eq!(json["complete"], true);
        assert_eq!(json["interrupted"], false);
        let runs = json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[0]["status"], "failed");
        assert_eq!(runs[0]["summary"], Value::Null);
        assert!(
            runs[0]["error"].as_str().unwrap().contains("mutators is 0"),
            "{}",
            runs[0]
        );
        assert_eq!(runs[1]["status"], "ok");
        assert_eq!(runs[1]["summary"], "runs/002-optimized.summary.json");
        assert_eq!(runs[3]["round"], 1);
        for r in runs {
            for key in ["summary", "records"] {
                if let Some(rel) = r[key].as_str() {
                    assert!(out.join(rel).is_file(), "{rel}");
                }
            }
        }
        let summary = read_json(&out.join("runs/002-optimized.summary.json"));
        assert_eq!(summary["preset"], "optimized");
        // The table shows the configuration without runs as dashes.
        let table = plan.experiment.table(&executed.outcome, COLUMNS);
        assert!(table.lines().nth(1).unwrap().contains(" - "), "{table}");
        // No temporary files are left.
        for e in std::fs::read_dir(out.join("runs")).unwrap() {
            let name = e.unwrap().file_name();
            assert!(!name.to_string_lossy().starts_with('.'), "{name:?}");
        }
        let text = epilogue(&plan, &executed, &dir);
        assert!(text.contains("2 of 4 runs FAILED"), "{text}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_interruption_stops_after_the_current_run_and_leaves_a_consistent_directory() {
        let plan = plan(&["vanilla", "optimized"], 3);
        let out = scratch("interrupted");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::now(), "concord compare".into());
        let stop = AtomicBool::new(false);
        // The "Ctrl-C" comes during the third run.
        let executed = execute(&plan, &dir, file, &stop, &mut |e| {
            if e.n == 2 && e.result.is_some() {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        assert_eq!(executed.file.runs.len(), 2);
        assert_eq!(executed.exit_code(), ExitCode::from(130));
        let json = read_json(&out.join("experiment.json"));
        assert_eq!(json["interrupted"], true);
        assert_eq!(json["complete"], false);
        assert_eq!(json["runs"].as_array().unwrap().len(), 2);
        assert_eq!(executed.outcome.runs[0].len(), 1);
        let text = epilogue(&plan, &executed, &dir);
        assert!(text.contains("interrupted after 2 of 6 runs"), "{text}");
        assert!(text.contains("see: concord report"), "{text}");
        let out_json = outcome_json(&plan, &executed, &dir);
        assert_eq!(out_json["interrupted"], true);
        assert_eq!(
            out_json["configurations"][1]["ratios"]["wall_ms"]
                .as_f64()
                .map(|r| r > 0.0),
            Some(true)
        );

        // Stopped before the first run: nothing ran, still a valid file.
        let out2 = scratch("interrupted-at-once");
        let dir2 = ResultsDir::create(Some(&out2), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::now(), String::new());
        let executed = execute(&plan, &dir2, file, &stop, &mut |_| {}).unwrap();
        assert!(executed.file.runs.is_empty() && executed.file.interrupted);
        let table = plan.experiment.table(&executed.outcome, COLUMNS);
        assert_eq!(table.lines().count(), 3, "{table}");
        std::fs::remove_dir_all(&out).unwrap();
        std::fs::remove_dir_all(&out2).unwrap();
    }

    #[test]
    fn numeric_details_get_medians() {
        let run = |v: &str, w: &str| {
            vec![
                ("latency_p99_ms".to_string(), v.to_string()),
                ("note".to_string(), w.to_string()),
            ]
        };
        let m = numeric_detail_medians(&[run("3", "x"), run("1", "2"), run("2", "y")]);
        assert_eq!(m.len(), 1);
        assert_eq!(m["latency_p99_ms"], 2.0);
    }
}
