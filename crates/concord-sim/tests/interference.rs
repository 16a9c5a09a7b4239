//! Interference under the Linux 4.9 model: busy loops take their CPU's share from a worker and
//! end with the run, mutators stop at a safepoint a driver thread requests and leave the load
//! count while stopped, two groups stop independently, and all of it is deterministic.

use std::sync::{Arc, Mutex};

use concord_sim::exec::{self, Costs, Report, Sim, ThreadSpec};
use concord_sim::interference::{DutyCycle, Mutators, BUSY_STEP_NS};
use concord_sim::machine::{CpuSet, Machine};

const MS: u64 = 1_000_000;
const US: u64 = 1_000;

fn flat(cpus: usize) -> Machine {
    Machine::new(&format!("{cpus}cpu"), 1, 1, cpus, false).expect("a valid machine")
}

fn linux(cpus: usize, seed: u64) -> Sim {
    Sim::linux49(flat(cpus), Costs::DEFAULT, seed).time_limit(10_000 * MS)
}

fn pinned(cpu: usize) -> ThreadSpec {
    ThreadSpec {
        affinity: Some(CpuSet::single(cpu)),
        start_cpu: Some(cpu),
        ..ThreadSpec::default()
    }
}

#[test]
fn a_busy_loop_takes_half_of_its_cpu_from_a_worker_and_ends_with_the_run() {
    let mut sim = linux(2, 1);
    sim.spawn_with("worker", pinned(0), || {
        for _ in 0..1_000 {
            exec::charge(100 * US);
        }
    })
    .unwrap();
    let busy = sim.busy_loops(&[0]).unwrap();
    let report = sim.run();
    let (worker, busy) = (&report.threads[0], &report.threads[busy[0]]);
    assert!(busy.background && busy.name == "busy-0");
    assert_eq!(worker.run_ns, 100 * MS);
    // CFS at nice 0 shares CPU 0 half and half: the worker's 100 ms take about 200 ms. On
    // 2 CPUs a slice is 6 ms, seen at 4 ms ticks, so the two alternate in runs of 8 ms and the
    // worker ends up to one run early or late.
    assert!(
        (190 * MS..=210 * MS).contains(&report.end_ns),
        "worker done at {} ns",
        report.end_ns
    );
    // The loop ran the rest of CPU 0's time, up to a step beyond the end.
    let rest = report.end_ns - worker.run_ns;
    assert!(busy.run_ns <= rest + BUSY_STEP_NS, "{busy:?}");
    assert!(busy.run_ns + 100 * US >= rest, "{busy:?}");
    assert_eq!(report.background_run_ns(), busy.run_ns);
    assert_eq!(report.foreground_run_ns(), worker.run_ns);
}

#[test]
fn busy_loops_refuse_a_cpu_the_machine_lacks() {
    let mut sim = linux(2, 1);
    let err = sim.busy_loops(&[0, 2]).unwrap_err();
    assert!(err.contains("busy-2"), "{err}");
}

/// What the driver saw: runnable counts before the stop, after it, and after the resume, the
/// running mutators after the stop, and how long the stop took.
#[derive(Debug, PartialEq)]
struct Seen {
    before: usize,
    stopped: usize,
    resumed: usize,
    running_when_stopped: usize,
    stop_ns: u64,
}

/// Three always-busy mutators on 4 CPUs and a driver on CPU 3 that stops them for 5 ms.
fn stop_the_world(seed: u64) -> (Report, Seen, Vec<usize>) {
    let mut sim = linux(4, seed);
    let mutators = Mutators::spawn(&mut sim, 3, DutyCycle::BUSY, ThreadSpec::default()).unwrap();
    let seen = Arc::new(Mutex::new(None));
    let (out, group) = (seen.clone(), mutators.clone());
    sim.spawn_with("driver", pinned(3), move || {
        let total = || exec::runnable_per_cpu(&[]).unwrap().iter().sum::<usize>();
        exec::charge(MS);
        let before = total();
        let t0 = exec::now().unwrap();
        group.stop();
        let stop_ns = exec::now().unwrap() - t0;
        let (stopped, running_when_stopped) = (total(), group.running());
        exec::charge(5 * MS);
        group.resume();
        exec::charge(MS);
        *out.lock().unwrap() = Some(Seen {
            before,
            stopped,
            resumed: total(),
            running_when_stopped,
            stop_ns,
        });
    })
    .unwrap();
    let report = sim.run();
    let seen = seen.lock().unwrap().take().unwrap();
    (report, seen, mutators.threads().to_vec())
}

#[test]
fn mutators_stop_at_the_safepoint_and_leave_the_load_while_stopped() {
    let (report, seen, threads) = stop_the_world(5);
    assert_eq!(threads, vec![0, 1, 2]);
    // Three mutators and the driver are runnable; stopped, only the driver is.
    assert_eq!(seen.before, 4);
    assert_eq!((seen.stopped, seen.running_when_stopped), (1, 0));
    assert_eq!(seen.resumed, 4);
    // Each mutator has a CPU of its own, so the stop takes at most a poll interval plus the
    // lock, futex and wake-up costs.
    assert!(
        seen.stop_ns <= DutyCycle::BUSY.poll_ns + 50 * US,
        "{seen:?}"
    );
    for &t in &threads {
        let m = &report.threads[t];
        assert!(m.background);
        // Ran about 1 ms before the stop and 1 ms after it, blocked for the 5 ms between.
        assert!((MS..=2 * MS + 200 * US).contains(&m.run_ns), "{m:?}");
        assert!(m.blocked_ns >= 5 * MS - 100 * US, "{m:?}");
    }
}

#[test]
fn interference_is_deterministic() {
    let (a, seen_a, _) = stop_the_world(9);
    let (b, seen_b, _) = stop_the_world(9);
    assert_eq!(a, b);
    assert_eq!(seen_a, seen_b);
}

#[test]
fn sleeping_mutators_compute_their_duty_cycle_and_count_as_stopped() {
    let cycle = DutyCycle {
        run_ns: 100 * US,
        sleep_ns: 100 * US,
        poll_ns: 10 * US,
    };
    let mut sim = linux(4, 2);
    let mutators = Mutators::spawn(&mut sim, 2, cycle, ThreadSpec::default()).unwrap();
    let group = mutators.clone();
    sim.spawn_with("driver", pinned(3), move || {
        exec::charge(10 * MS);
        group.stop();
        exec::charge(MS);
    })
    .unwrap();
    let report = sim.run();
    for &t in mutators.threads() {
        // 10 ms of 200 µs cycles (plus the sleep and lock costs): about 50 × 100 µs.
        let m = &report.threads[t];
        assert!((4 * MS..=5 * MS + 200 * US).contains(&m.run_ns), "{m:?}");
    }
    assert!(Mutators::spawn(
        &mut linux(1, 0),
        1,
        DutyCycle { run_ns: 0, ..cycle },
        ThreadSpec::default()
    )
    .err()
    .unwrap()
    .contains("at least 1 ns"));
}

#[test]
fn two_groups_of_mutators_stop_independently() {
    let mut sim = linux(4, 3);
    let a = Mutators::spawn(&mut sim, 2, DutyCycle::BUSY, ThreadSpec::default()).unwrap();
    let b = Mutators::spawn(&mut sim, 1, DutyCycle::BUSY, ThreadSpec::default()).unwrap();
    let seen = Arc::new(Mutex::new(None));
    let (out, ga, gb) = (seen.clone(), a.clone(), b.clone());
    sim.spawn_with("driver-a", pinned(3), move || {
        exec::charge(MS);
        ga.stop();
        *out.lock().unwrap() = Some((ga.running(), gb.running()));
        exec::charge(MS);
    })
    .unwrap();
    let report = sim.run();
    assert_eq!(seen.lock().unwrap().take(), Some((0, 1)));
    let b_run = report.threads[b.threads()[0]].run_ns;
    let a_run = report.threads[a.threads()[0]].run_ns;
    // Group b never stopped: it ran the whole 2 ms; group a about half of it.
    assert!(b_run >= 2 * MS - 50 * US, "b ran {b_run}");
    assert!(a_run <= MS + 50 * US, "a ran {a_run}");
}
