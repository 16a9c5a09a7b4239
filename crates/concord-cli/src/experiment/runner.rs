//! How one run of an arm is executed. The engine knows runs only through [`Runner`]: given
//! where per-collection records go, a runner runs its configuration once and returns a
//! [`RunResult`] (the summary JSON, the figures the tables report, the workload's details and
//! a verdict). [`HeapRunner`] runs a workload on a Concord heap in this process; other
//! commands plug in their own (a real JVM, a pause benchmark).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;
use concord::{GcConfig, Heap, HeapError};
use concord_workloads::{Workload, WorkloadError, WorkloadParams};
use serde_json::Value;

use super::figures::Figures;
use crate::summary::Summary;
use crate::RunFailed;

/// Where a run may write its files.
#[derive(Clone, Debug)]
pub struct RunFiles {
    /// Per-collection records (JSON lines), under a temporary name: the engine moves the file
    /// into place if the run wrote it.
    pub records: PathBuf,
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
        let summary = run_on_heap(self.workload.as_ref(), &self.params, &config, || Ok(()))?;
        Ok(RunResult::of(&summary))
    }
}

/// Runs `workload` once on a fresh heap built from `config` and summarizes the run. `ready`
/// is called once the heap is built, right before the workload starts (a co-running instance
/// waits there for the others). The wall time covers the workload only, not building or
/// dropping the heap.
///
/// A heap the OS cannot provide and a workload that fails (out of memory, corrupt data) are
/// [`RunFailed`]; a configuration, an output file or a workload parameter that is refused is
/// bad input.
pub fn run_on_heap(
    workload: &dyn Workload,
    params: &WorkloadParams,
    config: &GcConfig,
    ready: impl FnOnce() -> Result<()>,
) -> Result<Summary> {
    let heap = Heap::new(config.clone()).map_err(|e| match e {
        HeapError::Config(_) | HeapError::GcLog { .. } | HeapError::GcRecords { .. } => e.into(),
        // What the OS would not give: address space, memory, threads.
        _ => RunFailed::wrap(e),
    })?;
    ready().map_err(RunFailed::wrap)?;
    let start = Instant::now();
    let result = workload.run(&heap, params);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    drop(heap);
    let result = result.map_err(|e| {
        let failed = anyhow::anyhow!("workload {} failed: {e}", workload.name());
        match e {
            WorkloadError::BadParameter(_) => failed,
            _ => RunFailed::wrap(failed),
        }
    })?;
    Ok(Summary::new(
        workload.name(),
        config,
        params,
        wall_ms,
        &stats,
        &result,
    ))
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
