//! One simulation of a workload's collections, shared by `concord sim WORKLOAD`
//! ([`super::workload`]) and the experiment commands' simulated arms (`--sim-cpus`,
//! [`crate::experiment::simulated`]): the simulated machine with its scheduler model, costs and
//! seed ([`Simulator`]), the [`SimSetup`] of a configuration on it, a trace recorded on this
//! machine by running the workload with that configuration ([`record`]), and the outcome of
//! simulating a trace assembled as `run`'s summary and records plus the `sim` object
//! ([`simulate`], [`Simulated`], [`write_records`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use concord::telemetry::records_file::RecordsFile;
use concord::telemetry::{OutputFailure, OutputKind};
use concord::{GcConfig, GcStats};
use concord_sim::exec::Costs;
use concord_sim::machine::Machine;
use concord_sim::replay::driver::{
    self, BusyLoad, SchedModel, SimRun, SimSetup, WakePlacement, GC_WORKER_PREFIX,
};
use concord_sim::replay::output::{distinct_cpus_p50, gc_stats, runqueue_wait_ms, SimFigures};
use concord_sim::replay::{load_trace, ReplayCollection};
use concord_workloads::{Workload, WorkloadParams, WorkloadResult};
use serde_json::Value;

use crate::experiment::run_on_heap;
use crate::interference::Interference;
use crate::summary::Summary;
use crate::RunFailed;

/// The simulated machine and how it is simulated: what every simulation of a command shares.
#[derive(Clone, Debug)]
pub struct Simulator {
    /// The machine.
    pub machine: Machine,
    /// The scheduler model.
    pub sched: SchedModel,
    /// Where the model puts a woken thread (`--wake-placement`).
    pub wake_placement: WakePlacement,
    /// The cost table.
    pub costs: Costs,
    /// Where the costs came from, in words (`built-in`, or the file).
    pub costs_from: String,
    /// The seed.
    pub seed: u64,
}

impl Simulator {
    /// The simulator of `machine` under `sched` with `seed`, its costs read from `costs` (a
    /// `concord sim calibrate` file; the built-in costs without one), with the model's own
    /// wake-up placement ([`Simulator::with_wake_placement`] chooses another).
    pub fn new(
        machine: Machine,
        sched: SchedModel,
        seed: u64,
        costs: Option<&Path>,
    ) -> Result<Simulator> {
        let (costs, costs_from) = match costs {
            Some(path) => (
                concord_sim::calibrate::load(path)
                    .context("--costs")?
                    .exec_costs(),
                path.display().to_string(),
            ),
            None => (Costs::DEFAULT, "built-in".to_string()),
        };
        Ok(Simulator {
            machine,
            sched,
            wake_placement: WakePlacement::Default,
            costs,
            costs_from,
            seed,
        })
    }

    /// The same simulator with wake-up placement `placement` (`--wake-placement`).
    pub fn with_wake_placement(self, placement: WakePlacement) -> Simulator {
        Simulator {
            wake_placement: placement,
            ..self
        }
    }

    /// The warning for a simulation of `gc_threads` GC threads (fixed, not `dynamic`) that far
    /// outnumber the simulated machine's CPUs (by the runtime's rule,
    /// [`concord::parallel::oversubscription`]); `None` otherwise. It speaks of the simulated
    /// CPUs: this machine's are the recording's business, not the simulation's.
    pub fn oversubscription_warning(&self, gc_threads: usize, dynamic: bool) -> Option<String> {
        use concord::parallel::oversubscription::{far_oversubscribed, FAR_RATIO};
        let cpus = self.machine.cpus();
        (!dynamic && far_oversubscribed(gc_threads, cpus)).then(|| {
            format!(
                "{gc_threads} GC threads for the {cpus} CPU{s} of the simulated machine: more \
                 than {FAR_RATIO} per CPU only adds waiting, and its pauses will be longer than \
                 with fewer threads (use at most {most} GC threads, or dynamic GC threads)",
                s = if cpus == 1 { "" } else { "s" },
                most = FAR_RATIO * cpus,
            )
        })
    }

    /// GC threads for a configuration that leaves them to the preset: HotSpot's rule for the
    /// simulated machine's CPU count (15 on `xeon-2x10`), not this machine's.
    pub fn default_gc_threads(&self) -> usize {
        concord::config::default_gc_threads(self.machine.cpus())
    }

    /// The setup that simulates a run of `config` with `mutators` mutator threads and `load`
    /// (busy loops on the simulated machine) under `seed`, checked: what the simulation cannot
    /// do is an error naming what is allowed.
    pub fn setup(
        &self,
        config: &GcConfig,
        mutators: usize,
        load: Option<Interference>,
        seed: u64,
    ) -> std::result::Result<SimSetup, String> {
        let load = load.map(|Interference::Busy { threads, cpu }| BusyLoad {
            threads,
            cpu: cpu.map(|c| c as usize),
        });
        let setup = SimSetup {
            machine: self.machine.clone(),
            sched: self.sched,
            costs: self.costs,
            seed,
            policy: config.phase,
            parking: config.parking,
            gc_threads: config.gc_threads,
            mutators,
            load,
            gc_affinity: config.gc_affinity,
            numa: config.numa,
            mutator_ns: driver::DEFAULT_MUTATOR_NS,
            dynamic_gc_threads: config.dynamic_gc_threads.then_some(config.heap_size),
            pin_start: config.pin_start,
            vm_thread_cpu: config.vm_thread_cpu.map(|c| c as usize),
            first_touch: !config.pretouch,
        };
        driver::check(&setup)?;
        Ok(setup)
    }

    /// The machine and the model in words: `xeon-2x10 (20 CPUs, SMT off, 2 nodes), cfs
    /// scheduler, built-in costs` (`cfs scheduler with pack wake-up placement` under
    /// `--wake-placement pack`).
    pub fn describe(&self) -> String {
        let m = &self.machine;
        format!(
            "{} ({} CPUs, SMT {}, {} node{}), {} scheduler{}, {} costs",
            m.name(),
            m.cpus(),
            if m.smt() { "on" } else { "off" },
            m.nodes(),
            if m.nodes() == 1 { "" } else { "s" },
            self.sched,
            placement_words(self.wake_placement),
            self.costs_from
        )
    }
}

/// How a description names the wake-up placement: nothing for the model's own, ` with pack
/// wake-up placement` otherwise (so every description without the flag reads as before).
pub fn placement_words(placement: WakePlacement) -> String {
    match placement {
        WakePlacement::Default => String::new(),
        other => format!(" with {other} wake-up placement"),
    }
}

/// What is simulated: a workload with its parameters and configuration, on a setup.
pub struct Subject {
    /// The workload's name.
    pub workload_name: String,
    /// Its parameters.
    pub params: WorkloadParams,
    /// The configuration it is recorded with.
    pub config: GcConfig,
    /// The simulation's setup.
    pub setup: SimSetup,
    /// Where the scheduler model puts a woken thread (the [`Simulator`]'s).
    pub wake_placement: WakePlacement,
}

/// A temporary trace file, removed when dropped.
struct TempTrace(PathBuf);

impl TempTrace {
    /// A name of its own in the temporary directory (by process and a count: tests and
    /// experiments record one after another, tests in parallel threads).
    fn new() -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        TempTrace(
            std::env::temp_dir().join(format!("concord-sim-{}-{n}.trace", std::process::id())),
        )
    }
}

impl Drop for TempTrace {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Leaves the library's warnings out while it lives, unless `CONCORD_LOG` chose a filter of
/// its own: what the heap warns about while a trace is recorded (this machine's CPUs, its
/// affinity mask, its memory) describes the recording run, not the simulated machine.
struct QuietRecording(Option<log::LevelFilter>);

impl QuietRecording {
    fn new() -> Self {
        let chosen = std::env::var_os(crate::logger::FILTER_VAR).is_some_and(|f| !f.is_empty());
        if chosen {
            return QuietRecording(None);
        }
        let before = log::max_level();
        log::set_max_level(before.min(log::LevelFilter::Error));
        QuietRecording(Some(before))
    }
}

impl Drop for QuietRecording {
    fn drop(&mut self) {
        if let Some(before) = self.0 {
            log::set_max_level(before);
        }
    }
}

/// Runs `workload` once on this machine with `config`, recording a trace of its collections
/// (to a temporary file, removed once read): the collections and the run's summary. A trace
/// that could not be written or read back is a [`RunFailed`]. The heap's warnings about this
/// machine are left out ([`QuietRecording`]); errors are shown.
pub fn record(
    workload: &Arc<dyn Workload>,
    params: &WorkloadParams,
    config: &GcConfig,
) -> Result<(Vec<ReplayCollection>, Summary)> {
    let recording = TempTrace::new();
    let mut config = config.clone();
    config.gc_trace = Some(recording.0.clone());
    let heap_run = {
        let _quiet = QuietRecording::new();
        run_on_heap(workload, params, &config, || Ok(()), false)?
    };
    if let Some(failure) = heap_run.output_failures.first() {
        return Err(RunFailed::wrap(anyhow!("recording the trace: {failure}")));
    }
    let trace = load_trace(&recording.0)
        .map_err(|e| RunFailed::wrap(anyhow!("reading the recorded trace: {e}")))?;
    Ok((trace.collections, heap_run.summary))
}

/// A simulation's outcome in `run`'s terms.
pub struct Simulated {
    /// The summary (`run`'s), its GC figures the simulated ones.
    pub summary: Summary,
    /// The simulated collections' records.
    pub stats: GcStats,
    /// The `sim` object.
    pub figures: SimFigures,
    /// How long putting `--gc-records` in place took, ms (as `run`'s `outputs_finish_ms`).
    pub outputs_finish_ms: f64,
}

impl Simulated {
    /// The summary JSON: `concord run --json`'s object with `sim` added.
    pub fn json(&self) -> Value {
        let mut json = self.summary.json();
        json["outputs_finish_ms"] = serde_json::json!(self.outputs_finish_ms);
        json["sim"] = serde_json::json!(self.figures);
        json
    }
}

/// Simulates `trace` as `subject` says and assembles the outcome ([`assemble`]; `recorded`
/// is the summary of the run that recorded the trace, if it was recorded here). A simulation
/// that fails is a [`RunFailed`].
pub fn simulate(
    subject: &Subject,
    trace: Vec<ReplayCollection>,
    recorded: Option<&Summary>,
) -> Result<Simulated> {
    let started = Instant::now();
    let trace = Arc::new(trace);
    let run =
        driver::simulate_with_wake_placement(trace.clone(), &subject.setup, subject.wake_placement)
            .map_err(RunFailed::wrap)?;
    let wall_s = started.elapsed().as_secs_f64();
    Ok(assemble(subject, &trace, run, recorded, wall_s))
}

/// Assembles the outcome of simulating `trace` as `subject` says (`run`, as
/// [`driver::simulate`] returned it, `wall_s` of real time): the records, the summary (with
/// the recording run's `recorded` summary's workload result and heap reports where the
/// workload was recorded on the fly; `wall_ms` is the simulated time) and the `sim` figures.
pub fn assemble(
    subject: &Subject,
    trace: &[ReplayCollection],
    run: SimRun,
    recorded: Option<&Summary>,
    wall_s: f64,
) -> Simulated {
    let mut stats = gc_stats(trace, run.collections);
    stats.bytes_allocated = recorded.map_or(0, |r| r.bytes_allocated);
    let result = match recorded {
        Some(r) => WorkloadResult {
            checksum: r.checksum,
            expected_checksum: r.expected_checksum,
            details: r.details.clone(),
        },
        None => WorkloadResult {
            checksum: 0,
            expected_checksum: None,
            details: Vec::new(),
        },
    };
    let setup = &subject.setup;
    let mut summary = Summary::new(
        &subject.workload_name,
        &subject.config,
        &subject.params,
        run.end_ns as f64 / 1e6,
        &stats,
        &result,
    );
    if let Some(r) = recorded {
        // The heap's own reports describe the heap the workload ran on.
        summary.thp.clone_from(&r.thp);
        summary.numa.clone_from(&r.numa);
        summary.lifespans.clone_from(&r.lifespans);
        summary.mutator_sched.clone_from(&r.mutator_sched);
        summary.mutator_context_switches = r.mutator_context_switches;
        summary.pretouch_ms = r.pretouch_ms;
    }
    let figures = SimFigures {
        cpus: setup.machine.cpus(),
        sched: setup.sched.to_string(),
        wake_placement: subject.wake_placement.to_string(),
        seed: setup.seed,
        machine: setup.machine.name().to_string(),
        distinct_cpus_p50: distinct_cpus_p50(&stats.records),
        runqueue_wait_ms: runqueue_wait_ms(&run.threads, |n| n.starts_with(GC_WORKER_PREFIX)),
        wall_s,
    };
    Simulated {
        summary,
        stats,
        figures,
        outputs_finish_ms: 0.0,
    }
}

/// Writes the records to `path` as `concord run --gc-records` does (staged, renamed at the
/// end, whole lines only).
pub fn write_records(path: &Path, stats: &GcStats) -> std::result::Result<(), OutputFailure> {
    let mut file = match RecordsFile::create(path) {
        Ok(file) => file,
        Err(e) => {
            return Err(OutputFailure {
                output: OutputKind::GcRecords,
                path: path.to_path_buf(),
                error: e.to_string(),
                lost: "nothing of this run was written there".to_string(),
            })
        }
    };
    for r in &stats.records {
        file.write_record(r);
    }
    file.finish()
}
