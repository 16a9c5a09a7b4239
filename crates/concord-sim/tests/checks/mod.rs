//! Checks shared by the phase tests of the built-in placement and the scheduler models (kept out
//! of `common`, which the speed benchmark also compiles).

use crate::common::{PhaseRun, PhaseShape};
use concord_sim::exec::Sim;
use concord_sim::parallel::policy::{StealPolicy, TerminationKind};

/// The collector's termination protocols.
pub const KINDS: [TerminationKind; 3] = [
    TerminationKind::Fixed,
    TerminationKind::Live,
    TerminationKind::Owst,
];

/// Asserts that a phase of `shape` on `cpus` CPUs processed every item exactly once, that every
/// worker finished, and that oversubscribed workers waited in a run queue.
pub fn assert_finished_all_work(shape: &PhaseShape, cpus: usize, run: &PhaseRun) {
    let (kind, workers) = (shape.kind, shape.workers);
    assert_eq!(
        run.processed.iter().sum::<usize>(),
        shape.seeds + shape.children,
        "{kind} {workers} workers on {cpus} CPUs: items lost or duplicated"
    );
    assert!(run.report.threads.iter().all(|t| t.finished_ns > 0));
    if workers > cpus {
        let waited: u64 = run.report.threads.iter().map(|t| t.wait_ns).sum();
        assert!(waited > 0, "{kind} {workers}/{cpus}: no run-queue wait");
    }
}

/// The phase the scheduler-model tests run: 200 seed items and 400 children of `work_ns` each,
/// best-of-2 stealing, seed 7 (`cpus` unused: the machine comes with the model).
pub fn model_phase(kind: TerminationKind, workers: usize, work_ns: u64) -> PhaseShape {
    PhaseShape {
        kind,
        steal: StealPolicy::BestOf2,
        workers,
        cpus: 0,
        seeds: 200,
        children: 400,
        work_ns,
        seed: 7,
        lookahead: Sim::DEFAULT_LOOKAHEAD,
    }
}
