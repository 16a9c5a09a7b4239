//! Simulated threads scheduled by the Linux 4.9 model ([`Sim::linux49`]) on simulated machines:
//! the same seed gives the same schedule, wake-up placement spreads threads woken together,
//! `sched_yield` hands the CPU over, SCHED_FIFO preempts CFS, CFS shares a CPU by weight, and
//! the collector's termination protocols still finish all their work.

// The built-in placement's `run_phase` and the steal counters are for tests/phase.rs.
mod checks;
#[allow(dead_code)]
mod common;

use std::sync::Arc;

use checks::{assert_finished_all_work, model_phase, KINDS};
use common::{run_phase_on, PhaseShape};
use concord_sim::exec::{self, Costs, Report, Sim, ThreadSpec};
use concord_sim::machine::{CpuSet, Machine};
use concord_sim::parallel::policy::TerminationKind;
use concord_sim::sched::Policy;
use concord_sim::sync::atomic::{AtomicBool, AtomicU32, Ordering::SeqCst};
use concord_sim::sync::{futex, hint, thread};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

/// One LLC of `cpus` cores, no SMT.
fn flat(cpus: usize) -> Machine {
    Machine::new(&format!("{cpus}cpu"), 1, 1, cpus, false).expect("a valid machine")
}

fn linux(cpus: usize) -> Sim {
    Sim::linux49(flat(cpus), Costs::DEFAULT, 1).time_limit(10_000 * MS)
}

fn on(cpu: usize) -> ThreadSpec {
    ThreadSpec {
        start_cpu: Some(cpu),
        ..ThreadSpec::default()
    }
}

fn pinned(cpu: usize, policy: Policy) -> ThreadSpec {
    ThreadSpec {
        policy,
        affinity: Some(CpuSet::single(cpu)),
        start_cpu: Some(cpu),
    }
}

const NICE0: Policy = Policy::Normal { nice: 0 };

fn phase(kind: TerminationKind, workers: usize) -> PhaseShape {
    model_phase(kind, workers, 2_000)
}

#[test]
fn same_seed_same_schedule_under_the_linux_model() {
    for kind in KINDS {
        let run = || {
            let sim = Sim::linux49(
                Machine::named("xeon-2x10", None).unwrap(),
                Costs::DEFAULT,
                3,
            );
            run_phase_on(phase(kind, 15), sim)
        };
        let (a, b) = (run(), run());
        assert_eq!(a.report, b.report, "{kind}: reports differ");
        assert_eq!(a.processed, b.processed, "{kind}: work split differs");
    }
}

#[test]
fn termination_protocols_finish_all_work_under_the_linux_model() {
    let xeon = || Machine::named("xeon-2x10", None).unwrap();
    for kind in KINDS {
        for (workers, machine) in [(15, xeon()), (20, xeon()), (8, flat(2)), (3, flat(1))] {
            let cpus = machine.cpus();
            let sim = Sim::linux49(machine, Costs::DEFAULT, 7).time_limit(10_000 * MS);
            let run = run_phase_on(phase(kind, workers), sim);
            assert_finished_all_work(&phase(kind, workers), cpus, &run);
        }
    }
}

/// `sleepers` threads start on CPU 0, block on one futex, and are woken together by a thread
/// on CPU 1 after `delay`; each then works 1 ms. Returns the report and, per sleeper, the CPU it
/// blocked on and the CPU it ran on after the wake.
fn woken_together(sleepers: usize) -> (Report, Vec<(usize, usize)>) {
    let word = Arc::new(AtomicU32::new(0));
    let cpus = Arc::new(std::sync::Mutex::new(vec![
        (usize::MAX, usize::MAX);
        sleepers
    ]));
    let mut sim = linux(8);
    for i in 0..sleepers {
        let (word, cpus) = (word.clone(), cpus.clone());
        sim.spawn_with(format!("sleeper-{i}"), on(0), move || {
            let before = exec::current_cpu().unwrap();
            while word.load(SeqCst) == 0 {
                futex::wait(&word, 0, None);
            }
            let after = exec::current_cpu().unwrap();
            cpus.lock().unwrap()[i] = (before, after);
            exec::charge(MS);
        })
        .unwrap();
    }
    let w = word.clone();
    sim.spawn_with("waker", on(1), move || {
        exec::charge(200 * US); // until every sleeper has blocked
        w.store(1, SeqCst);
        futex::wake(&w, u32::MAX);
    })
    .unwrap();
    let report = sim.run();
    let cpus = cpus.lock().unwrap().clone();
    (report, cpus)
}

#[test]
fn threads_woken_together_from_one_cpu_are_spread_to_idle_cpus() {
    let (report, cpus) = woken_together(6);
    assert!(
        cpus.iter().all(|&(before, _)| before == 0),
        "every sleeper blocked on CPU 0: {cpus:?}"
    );
    let mut after: Vec<usize> = cpus.iter().map(|&(_, a)| a).collect();
    after.sort_unstable();
    after.dedup();
    // Wake-up placement (select_idle_sibling) gives each an idle CPU of the LLC.
    assert_eq!(after.len(), 6, "woken sleepers ran on {cpus:?}");
    // So the 6 ms of work took about 1 ms, not 6.
    assert!(report.end_ns < 2 * MS, "{report:?}");
}

#[test]
fn runnable_threads_started_on_one_cpu_are_spread_by_load_balancing() {
    let mut sim = linux(8);
    for i in 0..6 {
        sim.spawn_with(format!("stacked-{i}"), on(0), || {
            (0..500).for_each(|_| exec::charge(10 * US))
        })
        .unwrap();
    }
    let report = sim.run();
    // The idle CPUs' periodic balancing (in the executor's virtual time, while CPU 0 is busy)
    // pulls the queued threads at their first balance, 4 ms in (the MC interval, 128 ms, over
    // the busy factor 32); each then runs its 5 ms: done by about 9 ms. Stacked: 30 ms.
    let mut cpus: Vec<usize> = report.threads.iter().map(|t| t.last_cpu).collect();
    cpus.sort_unstable();
    cpus.dedup();
    assert_eq!(cpus.len(), 6, "{report:?}");
    assert!((9 * MS..10 * MS).contains(&report.end_ns), "{report:?}");
}

#[test]
fn runnable_threads_pinned_to_one_cpu_stay_stacked_there() {
    let mut sim = linux(8);
    for i in 0..6 {
        sim.spawn_with(format!("pinned-{i}"), pinned(0, NICE0), || {
            (0..100).for_each(|_| exec::charge(10 * US))
        })
        .unwrap();
    }
    let report = sim.run();
    assert!(report
        .threads
        .iter()
        .all(|t| t.last_cpu == 0 && t.migrations == 0));
    assert!(report.cpus[1..].iter().all(|c| c.busy_ns == 0));
    // 6 ms of work on one CPU: about 6 ms, and they waited for each other.
    assert!(report.end_ns >= 6 * MS, "{report:?}");
    assert!(report.threads.iter().filter(|t| t.wait_ns > 0).count() >= 5);
}

/// On one CPU, `spinner` runs until `worker` (10 µs of work) sets a flag, waiting with
/// `sched_yield` or with spin hints.
fn spinner_and_worker(yielding: bool) -> Report {
    let done = Arc::new(AtomicBool::new(false));
    let mut sim = linux(1);
    // Created second, the spinner starts with the smaller vruntime (START_DEBIT is a slice of a
    // queue that has grown) and runs first.
    let d = done.clone();
    sim.spawn_with("worker", on(0), move || {
        exec::charge(10 * US);
        d.store(true, SeqCst);
    })
    .unwrap();
    sim.spawn_with("spinner", on(0), move || {
        while !done.load(SeqCst) {
            if yielding {
                thread::yield_now();
            } else {
                hint::spin_loop();
            }
        }
    })
    .unwrap();
    sim.run()
}

#[test]
fn sched_yield_lets_the_other_runnable_thread_run() {
    let yielding = spinner_and_worker(true);
    let spinning = spinner_and_worker(false);

    // One CPU: latency 6 ms, wake-up granularity 1 ms. START_DEBIT put the worker at vruntime
    // 6 ms (a slice of the queue alone) and the spinner at 3 ms (half the period).
    // Spinning, the spinner keeps the CPU until the first tick after its 3 ms slice: 4 ms.
    let (spinner, worker) = (&spinning.threads[1], &spinning.threads[0]);
    assert_eq!(spinner.yields, 0);
    assert!(worker.finished_ns >= 4 * MS, "{spinning:?}");
    assert!(worker.finished_ns < 4 * MS + 100 * US, "{spinning:?}");
    // Yielding, the worker is picked over the skipped yielder as soon as it is within the
    // wake-up granularity of it: after 6 − 3 − 1 = 2 ms of the spinner's time, not at a tick.
    let (spinner, worker) = (&yielding.threads[1], &yielding.threads[0]);
    assert!(spinner.yields > 1_000, "{yielding:?}");
    assert!(worker.finished_ns >= 2 * MS, "{yielding:?}");
    assert!(worker.finished_ns < 2 * MS + 100 * US, "{yielding:?}");
}

/// A CFS thread works 10 ms in 10 µs steps on one CPU while `sleeper` sleeps 1 ms, then works
/// 10 µs.
fn busy_and_sleeper(sleeper: Policy) -> Report {
    let mut sim = linux(1);
    sim.spawn_with("cfs", on(0), || {
        (0..1_000).for_each(|_| exec::charge(10 * US))
    })
    .unwrap();
    let spec = ThreadSpec {
        policy: sleeper,
        ..on(0)
    };
    sim.spawn_with("sleeper", spec, || {
        thread::sleep(std::time::Duration::from_millis(1));
        exec::charge(10 * US);
    })
    .unwrap();
    sim.run()
}

#[test]
fn a_woken_fifo_thread_preempts_a_cfs_thread() {
    let fifo = busy_and_sleeper(Policy::Fifo { priority: 10 });
    // Runs first (above CFS), sleeps, and on waking takes the CPU at the CFS thread's next
    // scheduling point: wake latency + switch + 10 µs after 1 ms.
    let (cfs, sleeper) = (&fifo.threads[0], &fifo.threads[1]);
    assert!(sleeper.finished_ns < MS + 100 * US, "{fifo:?}");
    assert!(sleeper.wait_ns < 30 * US, "{fifo:?}");
    assert!(cfs.preemptions >= 1);
    // A nice-19 CFS sleeper does not preempt: it waits for the tick.
    let nice = busy_and_sleeper(Policy::Normal { nice: 19 });
    assert!(nice.threads[1].finished_ns > 2 * MS, "{nice:?}");
}

/// A busy loop at `busy_nice` and a worker with `work_ms` of work share CPU 0 of a 2-CPU
/// machine.
fn shared_cpu(busy_nice: i8, work_ms: u64) -> Report {
    let done = Arc::new(AtomicBool::new(false));
    let mut sim = linux(2);
    let d = done.clone();
    sim.spawn_with(
        "busy",
        pinned(0, Policy::Normal { nice: busy_nice }),
        move || {
            while !d.load(SeqCst) {
                exec::charge(10 * US);
            }
        },
    )
    .unwrap();
    sim.spawn_with("worker", pinned(0, NICE0), move || {
        (0..work_ms * 100).for_each(|_| exec::charge(10 * US));
        done.store(true, SeqCst);
    })
    .unwrap();
    sim.run()
}

#[test]
fn cfs_shares_a_cpu_by_weight() {
    let even = shared_cpu(0, 50);
    let (busy, worker) = (&even.threads[0], &even.threads[1]);
    // Equal weights: the worker's 50 ms take about 100 ms and the loop gets as much.
    let finished = worker.finished_ns as f64 / MS as f64;
    assert!(
        (90.0..=110.0).contains(&finished),
        "worker done at {finished} ms"
    );
    let share = busy.run_ns as f64 / worker.run_ns as f64;
    assert!((0.9..=1.1).contains(&share), "busy/worker CPU time {share}");
    assert_eq!(even.cpus[1].busy_ns, 0);
    // Nice 5 (weight 335 against 1024): the loop gets 335/1024 = 0.33 of the worker's time,
    // less its START_DEBIT (a whole period's vslice at its weight, ~27 ms of the worker's time),
    // so the worker's 600 ms take about 600 + (600 − 27) × 0.33 = 787 ms.
    let niced = shared_cpu(5, 600);
    let (busy, worker) = (&niced.threads[0], &niced.threads[1]);
    let share = busy.run_ns as f64 / worker.run_ns as f64;
    assert!(
        (0.29..=0.35).contains(&share),
        "busy/worker CPU time {share}"
    );
    let finished = worker.finished_ns as f64 / MS as f64;
    assert!(
        (760.0..=820.0).contains(&finished),
        "worker done at {finished} ms"
    );
}

#[test]
fn a_thread_moves_itself_with_set_affinity() {
    let mut sim = linux(4);
    sim.spawn_with("mover", on(0), || {
        exec::charge(10 * US);
        assert_eq!(exec::current_cpu(), Some(0));
        exec::set_affinity(CpuSet::single(3)).unwrap();
        assert_eq!(exec::current_cpu(), Some(3));
        let err = exec::set_affinity(CpuSet::single(4)).unwrap_err();
        assert!(err.contains("0..4"), "{err}");
        exec::charge(10 * US);
    })
    .unwrap();
    let report = sim.run();
    assert_eq!(report.threads[0].last_cpu, 3);
    assert_eq!(report.threads[0].migrations, 1);
    assert!(
        exec::set_affinity(CpuSet::single(0)).is_err(),
        "outside a simulation"
    );
}

#[test]
fn bad_thread_specs_are_refused_naming_what_is_allowed() {
    let mut sim = linux(2);
    let spec = ThreadSpec {
        policy: Policy::Fifo { priority: 0 },
        ..ThreadSpec::default()
    };
    let err = sim.spawn_with("rt", spec, || {}).unwrap_err();
    assert!(err.contains("`rt`") && err.contains("1 to 99"), "{err}");
    let err = sim.spawn_with("far", on(2), || {}).unwrap_err();
    assert!(err.contains("0..2"), "{err}");
    // The refused threads were not added.
    assert_eq!(sim.spawn("ok", || {}), 0);
    assert_eq!(sim.run().threads.len(), 1);
}
