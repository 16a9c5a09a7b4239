//! How one run of an arm is executed. The engine knows runs only through [`Runner`]: given
//! where per-collection records go, a runner runs its configuration once and returns a
//! [`RunResult`] (the summary JSON, the figures the tables report, the workload's details and
//! a verdict). [`HeapRunner`] runs a workload on a Concord heap in this process; other
//! commands plug in their own (a real JVM, a pause benchmark).

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use concord::telemetry::gc_trace;
use concord::telemetry::{OutputError, OutputFailure, OutputKind};
use concord::{GcConfig, GcStats, Heap, HeapError};
use concord_workloads::{Workload, WorkloadError, WorkloadParams, WorkloadResult};
use serde_json::Value;

use super::figures::Figures;
use crate::interrupt;
use crate::summary::Summary;
use crate::RunFailed;

/// Where a run may write its files.
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// Per-collection records (JSON lines). The heap writes them beside this path and puts
    /// them in place when it finishes, so the file exists only once complete.
    pub records: PathBuf,
    /// The round the run belongs to, from 0 (a simulated run's seed depends on it).
    pub round: u32,
}

/// What one run produced.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The run's summary JSON (DESIGN.md's fields), written to the results directory.
    pub summary: Value,
    /// The figures the tables report.
    pub figures: Figures,
    /// The workload's own result lines (name, value).
    pub details: Vec<(String, String)>,
    /// One line for the progress report: wall, collections, GC time, verdict.
    pub line: String,
    /// What is wrong with the result (a wrong checksum, a failed verification); a run with a
    /// problem counts as failed.
    pub problem: Option<String>,
}

impl RunResult {
    /// The result of a run summarized as `summary`.
    pub fn of(summary: &Summary) -> RunResult {
        RunResult {
            summary: summary.json(),
            figures: Figures::of(summary),
            details: summary.details.clone(),
            line: summary.line(),
            problem: wrong_result(summary),
        }
    }
}

/// Runs one configuration once.
pub trait Runner: Send + Sync {
    /// Runs once; an error means the run produced no result (the experiment goes on).
    fn run(&self, files: &RunFiles) -> Result<RunResult>;

    /// The workload, parameters and configuration of a Concord heap, if this runner runs one
    /// (what a simulated arm records and simulates instead).
    fn heap(&self) -> Option<&HeapRunner> {
        None
    }
}

/// A workload on a fresh Concord heap in this process.
pub struct HeapRunner {
    /// The workload.
    pub workload: Arc<dyn Workload>,
    /// Its parameters.
    pub params: WorkloadParams,
    /// The validated configuration (its own records path, if any, is replaced per run).
    pub config: GcConfig,
}

impl Runner for HeapRunner {
    fn run(&self, files: &RunFiles) -> Result<RunResult> {
        let mut config = self.config.clone();
        config.gc_records = Some(files.records.clone());
        let run = run_on_heap(&self.workload, &self.params, &config, || Ok(()), false)?;
        let mut result = RunResult::of(&run.summary);
        // A run whose records could not be written completely is a failed run.
        let problems: Vec<String> = result
            .problem
            .take()
            .into_iter()
            .chain(run.output_failures.iter().map(ToString::to_string))
            .collect();
        result.problem = (!problems.is_empty()).then(|| problems.join("; "));
        Ok(result)
    }

    fn heap(&self) -> Option<&HeapRunner> {
        Some(self)
    }
}

/// What a run on a heap came to.
pub struct HeapRun {
    /// Its summary (of the run so far when a signal stopped it).
    pub summary: Summary,
    /// The outputs the heap could not write completely (see [`concord::Heap::finish`]).
    pub output_failures: Vec<OutputFailure>,
    /// How long putting the outputs in place took after the workload (`wall_ms` does not
    /// count it), ms: an async GC log's final flush waits here, at most its flush timeout.
    pub outputs_finish_ms: f64,
    /// The signal that stopped the run before the workload finished.
    pub interrupted: Option<i32>,
}

/// Runs `workload` once on a fresh heap built from `config` and summarizes the run. `ready`
/// is called once the heap is built, right before the workload starts (a co-running instance
/// waits there for the others). The wall time covers the workload only, not building or
/// finishing the heap. The heap's outputs are put in place at the end, also when the workload
/// failed (its error is returned then, and output failures are logged).
///
/// With `interruptible`, the workload runs on its own thread and the first signal
/// ([`crate::interrupt`]) ends the wait for it: the outputs are put in place with the
/// collections so far and the summary covers the run so far (no result: the workload did not
/// finish, and it is left running for the process to end).
///
/// A heap the OS cannot provide and a workload that fails (out of memory, corrupt data) are
/// [`RunFailed`]; a configuration, an output file, a heap beyond the machine's memory or a
/// workload parameter that is refused is bad input.
pub fn run_on_heap(
    workload: &Arc<dyn Workload>,
    params: &WorkloadParams,
    config: &GcConfig,
    ready: impl FnOnce() -> Result<()>,
    interruptible: bool,
) -> Result<HeapRun> {
    run_on_heap_with(workload, params, config, ready, || {}, interruptible)
}

/// [`run_on_heap`], with `finished` called once the workload has finished (or a signal ended
/// the wait for it), before the heap's outputs are put in place: a stalled log device drains
/// at full speed from then on, so the final flush is not stalled.
pub fn run_on_heap_with(
    workload: &Arc<dyn Workload>,
    params: &WorkloadParams,
    config: &GcConfig,
    ready: impl FnOnce() -> Result<()>,
    finished: impl FnOnce(),
    interruptible: bool,
) -> Result<HeapRun> {
    // A GC trace the heap opens records the workload it was recorded with (and its heap).
    let heap = match gc_trace::recording(workload.name(), || Heap::new(config.clone())) {
        Ok(heap) => heap,
        // A signal gave up opening an output (a FIFO nobody opened): the run ends before it
        // started, reported as interrupted like any other.
        Err(HeapError::GcLog { path, source }) if interruptible && interrupt::interrupted() => {
            let failure = unopened(OutputKind::GcLog, path, source);
            return Ok(interrupted_before_start(workload, config, params, failure));
        }
        Err(HeapError::GcRecords { path, source }) if interruptible && interrupt::interrupted() => {
            let failure = unopened(OutputKind::GcRecords, path, source);
            return Ok(interrupted_before_start(workload, config, params, failure));
        }
        Err(HeapError::GcTrace { path, source }) if interruptible && interrupt::interrupted() => {
            let failure = unopened(OutputKind::GcTrace, path, source);
            return Ok(interrupted_before_start(workload, config, params, failure));
        }
        Err(e) => return Err(heap_error(e)),
    };
    let heap = Arc::new(heap);
    ready().map_err(RunFailed::wrap)?;
    let start = Instant::now();
    let result = if interruptible {
        let done = Arc::new(AtomicBool::new(false));
        let worker = {
            let (heap, workload, params, done) =
                (heap.clone(), workload.clone(), params.clone(), done.clone());
            std::thread::Builder::new()
                .name("concord-workload".into())
                .spawn(move || {
                    let result = workload.run(&heap, &params);
                    done.store(true, Ordering::SeqCst);
                    interrupt::wake();
                    result
                })?
        };
        interrupt::wait_until(|| done.load(Ordering::SeqCst));
        finished();
        if let (false, Some(signal)) = (done.load(Ordering::SeqCst), interrupt::signal()) {
            let wall_ms = start.elapsed().as_secs_f64() * 1e3;
            let closing = Instant::now();
            let (stats, output_failures) = split(heap.close_outputs());
            let outputs_finish_ms = closing.elapsed().as_secs_f64() * 1e3;
            let partial = interrupted_result(format!(
                "by {} after {wall_ms:.1} ms: the workload did not finish, the figures cover \
                 the run so far",
                interrupt::name(signal)
            ));
            let summary = Summary::new(workload.name(), config, params, wall_ms, &stats, &partial);
            return Ok(HeapRun {
                summary,
                output_failures,
                outputs_finish_ms,
                interrupted: Some(signal),
            });
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    } else {
        let result = workload.run(&heap, params);
        finished();
        result
    };
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let heap = Arc::into_inner(heap).expect("the workload's thread has ended");
    let finishing = Instant::now();
    let (stats, output_failures) = split(heap.finish());
    let outputs_finish_ms = finishing.elapsed().as_secs_f64() * 1e3;
    let result = result.map_err(|e| {
        for failure in &output_failures {
            log::error!("{failure}");
        }
        let failed = anyhow::anyhow!("workload {} failed: {e}", workload.name());
        match e {
            WorkloadError::BadParameter(_) => failed,
            _ => RunFailed::wrap(failed),
        }
    })?;
    Ok(HeapRun {
        summary: Summary::new(workload.name(), config, params, wall_ms, &stats, &result),
        output_failures,
        outputs_finish_ms,
        interrupted: None,
    })
}

/// The result of a workload a signal stopped: no checksum, and `interrupted` saying when.
fn interrupted_result(when: String) -> WorkloadResult {
    WorkloadResult {
        checksum: 0,
        expected_checksum: None,
        details: vec![("interrupted".to_string(), when)],
    }
}

/// The error of a heap that could not be built: bad input, or what the OS would not give.
fn heap_error(e: HeapError) -> anyhow::Error {
    match e {
        HeapError::Config(_)
        | HeapError::GcLog { .. }
        | HeapError::GcRecords { .. }
        | HeapError::GcTrace { .. }
        | HeapError::Profile { .. }
        | HeapError::NumaTopology(_)
        | HeapError::BeyondMemory { .. } => e.into(),
        // What the OS would not give: address space, memory, threads.
        _ => RunFailed::wrap(e),
    }
}

/// An output that was still waiting to open when a signal came.
fn unopened(output: OutputKind, path: String, source: std::io::Error) -> OutputFailure {
    OutputFailure {
        output,
        path: path.into(),
        error: source.to_string(),
        lost: "nothing of this run was written there".to_string(),
    }
}

/// The run of a heap whose output `failure` was still waiting to open when a signal came: no
/// collection, the output reported as not written.
fn interrupted_before_start(
    workload: &Arc<dyn Workload>,
    config: &GcConfig,
    params: &WorkloadParams,
    failure: OutputFailure,
) -> HeapRun {
    let signal = interrupt::signal().unwrap_or(signal_hook::consts::SIGINT);
    let partial = interrupted_result(format!(
        "by {} before the workload started: an output was still waiting to open",
        interrupt::name(signal)
    ));
    HeapRun {
        summary: Summary::new(
            workload.name(),
            config,
            params,
            0.0,
            &GcStats::default(),
            &partial,
        ),
        output_failures: vec![failure],
        outputs_finish_ms: 0.0,
        interrupted: Some(signal),
    }
}

/// The statistics of a finished heap and the outputs it could not write.
fn split(finished: Result<GcStats, OutputError>) -> (GcStats, Vec<OutputFailure>) {
    match finished {
        Ok(stats) => (stats, Vec::new()),
        Err(e) => (*e.stats, e.failures),
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
