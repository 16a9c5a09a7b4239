//! Simulated threads scheduled by the Linux 6.6 EEVDF model ([`Sim::eevdf`]): the collector's
//! termination protocols finish all their work on a 20-CPU machine and oversubscribed, the same
//! seed gives the same schedule, and an oversubscribed phase is scheduled differently from the
//! Linux 4.9 model.

// The built-in placement's `run_phase` and the steal counters are for tests/phase.rs.
mod checks;
#[allow(dead_code)]
mod common;

use checks::{assert_finished_all_work, model_phase, KINDS};
use common::{run_phase_on, PhaseRun, PhaseShape};
use concord_sim::exec::{Costs, Sim};
use concord_sim::machine::Machine;

const MS: u64 = 1_000_000;

fn xeon() -> Machine {
    Machine::named("xeon-2x10", None).unwrap()
}

fn flat(cpus: usize) -> Machine {
    Machine::new(&format!("{cpus}cpu"), 1, 1, cpus, false).expect("a valid machine")
}

fn eevdf(machine: Machine, shape: PhaseShape) -> PhaseRun {
    run_phase_on(
        shape,
        Sim::eevdf(machine, Costs::DEFAULT, 7).time_limit(10_000 * MS),
    )
}

#[test]
fn termination_protocols_finish_all_work_under_eevdf() {
    for kind in KINDS {
        for (workers, machine) in [(15, xeon()), (30, xeon()), (8, flat(2))] {
            let cpus = machine.cpus();
            let shape = model_phase(kind, workers, 2_000);
            let run = eevdf(machine, shape);
            assert_finished_all_work(&shape, cpus, &run);
        }
    }
}

#[test]
fn same_seed_same_schedule_under_eevdf() {
    for kind in KINDS {
        let (a, b) = (
            eevdf(xeon(), model_phase(kind, 15, 2_000)),
            eevdf(xeon(), model_phase(kind, 15, 2_000)),
        );
        assert_eq!(a.report, b.report, "{kind}: reports differ");
        assert_eq!(a.processed, b.processed, "{kind}: work split differs");
    }
}

/// 8 workers on 2 CPUs with 50 µs items (about 15 ms of work per CPU, several 4 ms ticks): the
/// same work is done, but the schedules differ. Under 4.9 (measured) the first two workers
/// wait almost the whole phase; under EEVDF (no `START_DEBIT`, half a slice to a new task's
/// first deadline, slices ended at the tick) every worker runs about one tick, so the longest
/// run-queue wait is shorter.
#[test]
fn eevdf_and_linux49_schedule_an_oversubscribed_phase_differently() {
    for kind in KINDS {
        let shape = model_phase(kind, 8, 50_000);
        let new = eevdf(flat(2), shape);
        let old = run_phase_on(
            shape,
            Sim::linux49(flat(2), Costs::DEFAULT, 7).time_limit(10_000 * MS),
        );
        assert_eq!(new.processed.iter().sum::<usize>(), 600);
        assert_eq!(old.processed.iter().sum::<usize>(), 600);
        let schedule = |run: &PhaseRun| {
            run.report
                .threads
                .iter()
                .map(|t| (t.run_ns, t.wait_ns, t.preemptions, t.migrations))
                .collect::<Vec<_>>()
        };
        let longest_wait = |run: &PhaseRun| run.report.threads.iter().map(|t| t.wait_ns).max();
        let (new_s, old_s) = (schedule(&new), schedule(&old));
        assert_ne!(new_s, old_s, "{kind}: same schedule");
        assert!(
            longest_wait(&new) < longest_wait(&old),
            "{kind}: eevdf {new_s:?}\nlinux49 {old_s:?}"
        );
    }
}
