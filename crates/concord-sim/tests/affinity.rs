//! GC-thread affinity for simulated workers under the Linux 4.9 model, deciding with
//! `concord`'s own Algorithm 1 code: workers stacked on a busy CPU spread out, spread workers
//! stay, static binding pins worker `i` to CPU `i mod N`, the same seed decides the same, and
//! the decisions are the runtime's on the same table.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use concord::os::cpu::LoadSnapshot;
use concord::os::gc_affinity::plan::{Round, Turn};
use concord::os::gc_affinity::{AffinityReport, SplitMix, Thresholds};
use concord::os::policy::GcAffinity;
use concord_sim::affinity::SimGcAffinity;
use concord_sim::exec::{self, Costs, Report, Sim, ThreadSpec};
use concord_sim::machine::{CpuSet, Machine};
use concord_sim::sync::atomic::{AtomicU32, Ordering::SeqCst};
use concord_sim::sync::futex;

const MS: u64 = 1_000_000;

fn pinned(cpu: usize) -> ThreadSpec {
    ThreadSpec {
        affinity: Some(CpuSet::single(cpu)),
        start_cpu: Some(cpu),
        ..ThreadSpec::default()
    }
}

struct Outcome {
    report: Report,
    /// The round's record.
    affinity: Option<AffinityReport>,
    /// Per worker: what `bind_at_start` returned, and the CPU it ran its job on.
    bound: Vec<Option<u32>>,
    ran_on: Vec<usize>,
}

/// One collection on a flat 4-CPU machine: workers start pinned to `worker_cpus`, bind at start,
/// and wait; a driver on CPU 1 waits until all are bound, opens the round and wakes them; each
/// decides at its first job and works 1 ms. `interference` adds threads (after the workers,
/// before the driver).
fn collection(
    kind: GcAffinity,
    worker_cpus: &[usize],
    interference: impl FnOnce(&mut Sim),
    seed: u64,
) -> Outcome {
    collection_with(kind, worker_cpus, interference, seed, false)
}

/// [`collection`], the workers deciding one after the other in worker order when `in_turn`
/// (each waits for the one before it to have decided), else as they come.
fn collection_with(
    kind: GcAffinity,
    worker_cpus: &[usize],
    interference: impl FnOnce(&mut Sim),
    seed: u64,
    in_turn: bool,
) -> Outcome {
    let machine = Machine::new("4cpu", 1, 1, 4, false).unwrap();
    let mut sim = Sim::linux49(machine, Costs::DEFAULT, seed).time_limit(10_000 * MS);
    let n = worker_cpus.len();
    let affinity = Arc::new(SimGcAffinity::new(kind, vec![0, 1, 2, 3], seed));
    let ready = Arc::new(AtomicU32::new(0));
    let go = Arc::new(AtomicU32::new(0));
    // Whose turn it is to decide (`in_turn`).
    let turn = Arc::new(AtomicU32::new(0));
    let results = Arc::new(Mutex::new(vec![(None, usize::MAX); n]));
    let workers: Vec<usize> = worker_cpus
        .iter()
        .enumerate()
        .map(|(w, &cpu)| {
            let (affinity, ready, go, turn, results) = (
                affinity.clone(),
                ready.clone(),
                go.clone(),
                turn.clone(),
                results.clone(),
            );
            sim.spawn_with(format!("gc-{w}"), pinned(cpu), move || {
                let bound = affinity.bind_at_start(w).expect("a CPU of the machine");
                ready.fetch_add(1, SeqCst);
                futex::wake(&ready, 1);
                while go.load(SeqCst) == 0 {
                    futex::wait(&go, 0, None);
                }
                if in_turn {
                    loop {
                        let now = turn.load(SeqCst);
                        if now as usize == w {
                            break;
                        }
                        futex::wait(&turn, now, None);
                    }
                }
                affinity.worker_phase_start(w);
                affinity.worker_phase_start(w); // a second job decides nothing
                if in_turn {
                    turn.store(w as u32 + 1, SeqCst);
                    futex::wake(&turn, u32::MAX);
                }
                exec::charge(MS);
                results.lock().unwrap()[w] = (bound, exec::current_cpu().unwrap());
            })
            .unwrap()
        })
        .collect();
    interference(&mut sim);
    let driver_affinity = affinity.clone();
    sim.spawn_with("driver", pinned(1), move || {
        loop {
            let bound = ready.load(SeqCst);
            if bound as usize == n {
                break;
            }
            futex::wait(&ready, bound, None);
        }
        driver_affinity.begin_collection(&workers, n);
        go.store(1, SeqCst);
        futex::wake(&go, u32::MAX);
    })
    .unwrap();
    let report = sim.run();
    let (bound, ran_on) = results.lock().unwrap().iter().cloned().unzip();
    Outcome {
        report,
        affinity: affinity.end_collection(),
        bound,
        ran_on,
    }
}

fn busy_on_0(sim: &mut Sim) {
    sim.busy_loops(&[0]).unwrap();
}

fn distinct(cpus: &[usize]) -> usize {
    let mut cpus = cpus.to_vec();
    cpus.sort_unstable();
    cpus.dedup();
    cpus.len()
}

#[test]
fn workers_stacked_on_a_busy_cpu_spread_out() {
    let out = collection(GcAffinity::Dynamic, &[0, 0, 0, 0], busy_on_0, 4);
    let r = out.affinity.unwrap();
    // Runnable at the round's opening: the busy loop on CPU 0 and the driver on CPU 1 (the
    // workers are left out and counted by the round instead): loads 5, 1, 0, 0, average 1.5,
    // high ≥ 3 (CPU 0), low ≤ 0.75 (CPUs 2 and 3). The first mover goes to CPU 2 or 3
    // (4, 1, 1, 0 or 4, 1, 0, 1), the second to the other low one (3, 1, 1, 1): CPU 0 is still
    // high but no CPU is low any more, so the last two stay.
    assert_eq!(r.average_load, 1.5);
    assert_eq!((r.high_cpus, r.low_cpus), (vec![0], vec![2, 3]));
    assert_eq!(r.moves.len(), 2, "{:?}", r.moves);
    let mut targets: Vec<u32> = r.moves.iter().map(|m| m.to).collect();
    targets.sort_unstable();
    assert_eq!(targets, vec![2, 3]);
    assert!(r.moves.iter().all(|m| m.from == 0));
    assert!(r.failures.is_empty() && r.unknown_cpu_workers.is_empty());
    assert!(r.decide_us > 0.0);
    assert_eq!(distinct(&out.ran_on), 3, "{:?}", out.ran_on);
    for m in &r.moves {
        assert_eq!(out.ran_on[m.worker], m.to as usize);
        assert_eq!(m.tid as usize, m.worker, "workers are threads 0..4");
    }
    assert_eq!(out.bound, vec![None; 4]);
}

#[test]
fn spread_workers_without_interference_stay() {
    let out = collection(GcAffinity::Dynamic, &[0, 1, 2, 3], |_| {}, 4);
    let r = out.affinity.unwrap();
    // Loads 1, 2, 1, 1 (the driver on CPU 1): average 1.25, nothing ≥ 2.5.
    assert_eq!(r.average_load, 1.25);
    assert!(r.high_cpus.is_empty());
    assert!(r.moves.is_empty(), "{:?}", r.moves);
    assert_eq!(out.ran_on, vec![0, 1, 2, 3]);
}

#[test]
fn static_binding_pins_worker_i_to_cpu_i_mod_n() {
    let out = collection(GcAffinity::Static, &[0; 6], |_| {}, 1);
    let expected = [0, 1, 2, 3, 0, 1];
    assert_eq!(
        out.bound,
        expected.iter().map(|&c| Some(c)).collect::<Vec<_>>()
    );
    assert_eq!(
        out.ran_on,
        expected.iter().map(|&c| c as usize).collect::<Vec<_>>()
    );
    assert_eq!(out.affinity, None);
}

#[test]
fn none_moves_nobody() {
    let out = collection(GcAffinity::None, &[0, 0, 0, 0], busy_on_0, 1);
    assert_eq!(out.ran_on, vec![0; 4]);
    assert_eq!(out.bound, vec![None; 4]);
    assert_eq!(out.affinity, None);
    // Dynamic with one allowed CPU is inactive: an empty record, as in the runtime.
    let one = SimGcAffinity::new(GcAffinity::Dynamic, vec![2, 2], 0);
    assert_eq!(one.allowed_cpus(), &[2]);
    assert_eq!(one.worker_phase_start(0), None);
    assert_eq!(one.end_collection(), Some(AffinityReport::default()));
}

#[test]
fn same_seed_same_decisions() {
    let a = collection(GcAffinity::Dynamic, &[0, 0, 0, 0], busy_on_0, 11);
    let b = collection(GcAffinity::Dynamic, &[0, 0, 0, 0], busy_on_0, 11);
    assert_eq!(a.report, b.report);
    assert_eq!(a.ran_on, b.ran_on);
    assert_eq!(a.affinity.map(|r| r.moves), b.affinity.map(|r| r.moves));
}

/// The simulator's decisions are the runtime's on the same table: four workers stacked on
/// CPU 0 with a busy loop there decide in worker order in the simulation, and the same table
/// (every worker on CPU 0, the other threads' runnable counts 1, 1, 0, 0: the busy loop and
/// the driver) is decided as the runtime's `DynamicBalancer::decide_in_turn` decides it
/// (`plan::Round`, the runtime's `SplitMix` of the same seed, every bind succeeding): the
/// same marks and the same moves, seed for seed. Over the seeds the first mover's target
/// differs (two low CPUs to draw from), so the seed is what both follow.
#[test]
fn the_simulators_decisions_are_the_runtimes_on_the_same_table() {
    let allowed = [0, 1, 2, 3];
    let mut first_targets = std::collections::BTreeSet::new();
    for seed in 0..12 {
        let sim = collection_with(GcAffinity::Dynamic, &[0; 4], busy_on_0, seed, true)
            .affinity
            .unwrap();
        let mut round = Round::default();
        let other = LoadSnapshot::from_loads(vec![1.0, 1.0, 0.0, 0.0], Duration::ZERO);
        round.open(vec![Some(0); 4], Some(Arc::new(other)), Some(0.0));
        let rng = SplitMix::new(seed);
        for worker in 0..4 {
            let turn = Turn {
                worker,
                tid: worker as i32, // the simulated workers are threads 0..4
                cpu: round.cpu(worker),
            };
            round.decide(
                &allowed,
                Thresholds::default(),
                turn,
                &mut |n| rng.below(n),
                |_| Ok(()),
                |_| {},
            );
        }
        let runtime = round.close();
        assert_eq!(sim.average_load, runtime.average_load, "seed {seed}");
        assert_eq!(
            (&sim.high_cpus, &sim.low_cpus),
            (&runtime.high_cpus, &runtime.low_cpus),
            "seed {seed}"
        );
        assert_eq!(sim.moves, runtime.moves, "seed {seed}");
        assert_eq!(sim.moves.len(), 2, "seed {seed}: {:?}", sim.moves);
        first_targets.insert(sim.moves[0].to);
    }
    assert_eq!(first_targets.into_iter().collect::<Vec<_>>(), vec![2, 3]);
}

#[test]
fn a_second_instances_workers_count_as_other_threads() {
    // Instance B: two GC workers computing on CPU 2, left out of B's own count only.
    let other = Arc::new(SimGcAffinity::new(GcAffinity::Dynamic, vec![0, 1, 2, 3], 2));
    let b = other.clone();
    let out = collection(
        GcAffinity::Dynamic,
        &[0, 0],
        move |sim| {
            for w in 0..2 {
                let b = b.clone();
                let body = move || {
                    b.bind_at_start(w).unwrap();
                    loop {
                        exec::charge(20_000);
                    }
                };
                sim.spawn_background(format!("b-gc-{w}"), pinned(2), body)
                    .unwrap();
            }
        },
        3,
    );
    // Instance A's count sees B's two workers on CPU 2 and its driver on CPU 1: loads 2, 1, 2,
    // 0, average 1.25, nothing ≥ 2.5: A's workers stay. (Had B's workers been left out too,
    // loads 2, 1, 0, 0 would have made CPU 0 high and moved one.)
    let r = out.affinity.unwrap();
    assert_eq!(r.average_load, 1.25);
    assert!(r.moves.is_empty(), "{:?}", r.moves);
    assert_eq!(out.ran_on, vec![0, 0]);
    // B opened no round: its record is empty.
    assert_eq!(other.end_collection(), Some(AffinityReport::default()));
}
