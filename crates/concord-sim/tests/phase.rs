//! The collector's termination protocols (`fixed`, `live`, `owst`), compiled from
//! `concord`'s own source, run on simulated CPUs: they terminate with every item processed for
//! several worker and CPU counts (oversubscribed too), the same seed gives the same schedule bit
//! for bit, and sharing CPUs costs virtual time.

mod common;
// `assert_finished_all_work` is for the scheduler-model tests.
#[allow(dead_code)]
mod checks;

use checks::KINDS;
use common::{run_phase, PhaseShape};
use concord_sim::exec::Sim;
use concord_sim::parallel::policy::{StealPolicy, TerminationKind};

fn shape(kind: TerminationKind, workers: usize, cpus: usize) -> PhaseShape {
    PhaseShape {
        kind,
        steal: StealPolicy::BestOf2,
        workers,
        cpus,
        seeds: 200,
        children: 400,
        work_ns: 2_000,
        seed: 7,
        lookahead: Sim::DEFAULT_LOOKAHEAD,
    }
}

#[test]
fn same_seed_same_schedule_bit_for_bit() {
    for kind in KINDS {
        for (workers, cpus) in [(4, 4), (6, 2)] {
            let a = run_phase(shape(kind, workers, cpus));
            let b = run_phase(shape(kind, workers, cpus));
            assert_eq!(
                a.report, b.report,
                "{kind} {workers}/{cpus}: reports differ"
            );
            assert_eq!(
                a.processed, b.processed,
                "{kind} {workers}/{cpus}: work split differs"
            );
            assert!(a.report.ops > 0 && a.report.end_ns > 0);
        }
    }
}

#[test]
fn every_protocol_terminates_with_all_work_done_even_oversubscribed() {
    for kind in KINDS {
        for (workers, cpus) in [(1, 1), (2, 2), (4, 4), (4, 2), (8, 3), (12, 4)] {
            let run = run_phase(shape(kind, workers, cpus));
            let total: usize = run.processed.iter().sum();
            assert_eq!(
                total, 600,
                "{kind} {workers}/{cpus}: items lost or duplicated"
            );
            assert_eq!(run.report.threads.len(), workers);
            if workers > 1 {
                let helpers = run.processed[1..].iter().filter(|&&n| n > 0).count();
                assert!(
                    helpers > 0,
                    "{kind} {workers}/{cpus}: nobody stole from worker 0"
                );
            }
            if workers > cpus {
                let waited: u64 = run.report.threads.iter().map(|t| t.wait_ns).sum();
                assert!(
                    waited > 0,
                    "{kind} {workers}/{cpus}: shared CPUs but no run-queue wait"
                );
            }
            for cpu in &run.report.cpus {
                assert!(
                    cpu.busy_ns <= run.report.end_ns,
                    "{kind}: a CPU was busier than the run lasted"
                );
            }
        }
    }
}

#[test]
fn virtual_time_grows_when_workers_share_cpus() {
    for kind in KINDS {
        let ends: Vec<u64> = [8, 4, 2]
            .iter()
            .map(|&cpus| run_phase(shape(kind, 8, cpus)).report.end_ns)
            .collect();
        assert!(
            ends[0] < ends[1] && ends[1] < ends[2],
            "{kind}: 8 workers on 8, 4, 2 CPUs ended at {ends:?} ns"
        );
        // 600 items of 2 µs on 2 CPUs cannot take less than 600 µs.
        assert!(
            ends[2] >= 600 * 2_000 / 2,
            "{kind}: {} ns on 2 CPUs",
            ends[2]
        );
    }
}

#[test]
fn the_steal_policy_is_the_collectors_own_and_swapping_it_shows() {
    let runs: Vec<_> = [
        StealPolicy::BestOf2,
        StealPolicy::LastVictim,
        StealPolicy::Adaptive,
    ]
    .into_iter()
    .map(|steal| {
        let run = run_phase(PhaseShape {
            steal,
            ..shape(TerminationKind::Live, 8, 4)
        });
        assert_eq!(
            run.processed.iter().sum::<usize>(),
            600,
            "{steal}: items lost"
        );
        let attempts: usize = run.steal_attempts.iter().sum();
        let failures: usize = run.steal_failures.iter().sum();
        assert!(
            attempts > failures && failures > 0,
            "{steal}: {attempts} attempts, {failures} failures"
        );
        (attempts, failures, run.report.end_ns)
    })
    .collect();
    assert!(
        runs[0] != runs[1] && runs[0] != runs[2] && runs[1] != runs[2],
        "three steal policies, indistinguishable runs: {runs:?}"
    );
}

#[test]
fn a_larger_lookahead_keeps_the_result_and_saves_handoffs() {
    let exact = run_phase(PhaseShape {
        lookahead: 0,
        ..shape(TerminationKind::Fixed, 6, 3)
    });
    let loose = run_phase(PhaseShape {
        lookahead: 5_000,
        ..shape(TerminationKind::Fixed, 6, 3)
    });
    assert_eq!(exact.processed.iter().sum::<usize>(), 600);
    assert_eq!(loose.processed.iter().sum::<usize>(), 600);
    assert!(
        loose.report.handoffs < exact.report.handoffs,
        "handoffs: lookahead 0 {}, 5 µs {}",
        exact.report.handoffs,
        loose.report.handoffs
    );
}
