//! The collector's own parallel engine and worker pool (`concord::parallel::{engine, pool}`,
//! compiled against the simulated sync layer) running whole phases on simulated CPUs: a VM
//! thread creates a `WorkerPool` whose workers are simulated threads, and runs consecutive
//! phases with `run_phase` under every phase policy, both parkings and several worker and CPU
//! counts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use concord_sim::exec::{self, Costs, Report, Sim, ThreadSpec};
use concord_sim::machine::{CpuSet, Machine};
use concord_sim::parallel::engine::{
    run_phase, run_phase_segregated, ParallelTask, Segregation, WorkQueue,
};
use concord_sim::parallel::policy::{ParkingKind, PhasePolicy, StealPolicy};
use concord_sim::parallel::pool::WorkerPool;
use concord_sim::parallel::task_queue::{Affinity, RootTask};
use concord_sim::sync::thread::Builder;
use concord_sim::telemetry::{MonitorRecord, WorkerPhaseStats};

/// Virtual work per item, ns (so that phases last long enough for stealing to matter).
const ITEM_NS: u64 = 300;
/// A livelock guard: no phase here needs anywhere near this much virtual time.
const LIMIT_NS: u64 = 60_000_000_000;

/// Roots seed trees of items; each item n > 0 splits into two items n-1 (engine.rs's own test
/// task, with modelled work per item). Counters are plain `std`: results, not protocol.
struct Split {
    leaves: AtomicU64,
    items: AtomicU64,
}

impl Split {
    fn new() -> Self {
        Split {
            leaves: AtomicU64::new(0),
            items: AtomicU64::new(0),
        }
    }
}

impl ParallelTask for Split {
    type Item = u32;
    type Root = u32;
    type Local = u64;
    fn root_name(&self, _: &u32) -> &'static str {
        "seed"
    }
    fn run_root(&self, root: &u32, _: &mut u64, q: &mut WorkQueue<u32>) {
        q.push(*root);
    }
    fn process(&self, item: u32, local: &mut u64, q: &mut WorkQueue<u32>) {
        exec::charge(ITEM_NS);
        self.items.fetch_add(1, Ordering::Relaxed);
        if item == 0 {
            *local += 1;
            self.leaves.fetch_add(1, Ordering::Relaxed);
        } else {
            q.push(item - 1);
            q.push(item - 1);
        }
    }
}

/// Root tasks with the three kinds of affinity tag.
fn seeds(roots: &[u32]) -> Vec<RootTask<u32>> {
    roots
        .iter()
        .enumerate()
        .map(|(i, &r)| RootTask {
            root: r,
            affinity: match i % 3 {
                0 => Affinity::Any,
                1 => Affinity::Prefers(i),
                _ => Affinity::Stripe(i),
            },
        })
        .collect()
}

/// One big tree and some small ones: uneven, so workers must steal.
const ROOTS: [u32; 5] = [9, 0, 3, 1, 4];

/// Leaves and items (tree nodes) of [`ROOTS`].
fn expected() -> (u64, u64) {
    let leaves = ROOTS.iter().map(|&r| 1u64 << r).sum();
    let items = ROOTS.iter().map(|&r| (2u64 << r) - 1).sum();
    (leaves, items)
}

/// What the VM thread saw: per phase, its policy and the workers' statistics; the pool's
/// wake-up counts and thread ids at the end.
#[derive(Default)]
struct Outcome {
    phases: Vec<(PhasePolicy, Vec<WorkerPhaseStats>)>,
    wakeups: Vec<(u64, u64)>,
    tids: Vec<i32>,
    usage_ns: Vec<u64>,
    /// The task manager's monitor counters, as a collection record carries them.
    task_manager: MonitorRecord,
}

/// On `sim`, a VM thread creates a pool of `workers` parked as `parking` and runs one phase per
/// policy in `policies` on all of them, checking each phase's work.
fn run_phases(
    mut sim: Sim,
    parking: ParkingKind,
    workers: usize,
    policies: Vec<PhasePolicy>,
) -> (Report, Outcome) {
    let outcome = Arc::new(Mutex::new(Outcome::default()));
    let out = outcome.clone();
    sim.spawn("vm", move || {
        let pool = WorkerPool::new(workers, "gc", parking, |_| {}).expect("a simulated pool");
        let mut phases = Vec::new();
        for policy in policies {
            let task = Split::new();
            let (locals, stats) = run_phase(&pool, &policy, &task, seeds(&ROOTS), vec![0; workers]);
            let (leaves, items) = expected();
            let ctx = format!("{parking} {policy:?} workers={workers}");
            assert_eq!(task.leaves.load(Ordering::Relaxed), leaves, "{ctx}");
            assert_eq!(task.items.load(Ordering::Relaxed), items, "{ctx}");
            assert_eq!(locals.iter().sum::<u64>(), leaves, "{ctx}");
            assert_eq!(stats.iter().map(|s| s.items).sum::<u64>(), items, "{ctx}");
            let roots: u64 = stats.iter().map(|s| s.root_task_count()).sum();
            assert_eq!(roots, ROOTS.len() as u64, "{ctx}");
            assert!(stats.iter().all(|s| s.termination_entries >= 1), "{ctx}");
            phases.push((policy, stats));
        }
        let mut out = out.lock().unwrap();
        out.phases = phases;
        out.wakeups = pool.worker_wakeups();
        out.tids = pool.worker_tids();
        out.usage_ns = pool.worker_usage().iter().map(|u| u.cpu_ns).collect();
        out.task_manager = pool.task_manager_stats().into();
    });
    let report = sim.time_limit(LIMIT_NS).run();
    let outcome = std::mem::take(&mut *outcome.lock().unwrap());
    (report, outcome)
}

fn rr(cpus: usize, seed: u64) -> Sim {
    Sim::new(cpus, Costs::DEFAULT, seed)
}

/// Every policy, both parkings, workers on fewer, as many and more CPUs: every item processed
/// exactly once, the root tasks counted, CPU samples naming simulated CPUs, the pool's workers
/// persisting across phases (one wake-up per phase each, none futile) and charged their
/// virtual CPU time.
#[test]
fn every_policy_processes_every_item_once_on_a_persistent_simulated_pool() {
    let policies: Vec<PhasePolicy> = PhasePolicy::all().collect();
    for parking in ParkingKind::ALL {
        for (workers, cpus) in [(1, 1), (4, 4), (8, 2), (15, 20)] {
            let ctx = format!("{parking} workers={workers} cpus={cpus}");
            let (report, out) = run_phases(rr(cpus, 7), *parking, workers, policies.clone());
            assert_eq!(out.phases.len(), policies.len(), "{ctx}");
            // The VM thread and the pool's workers, all finished (the pool's drop joined them).
            assert_eq!(report.threads.len(), 1 + workers, "{ctx}");
            for (i, t) in report.threads[1..].iter().enumerate() {
                assert_eq!(t.name, format!("gc-{i}"), "{ctx}");
                assert!(t.finished_ns <= report.threads[0].finished_ns, "{ctx}");
            }
            for (policy, stats) in &out.phases {
                for s in stats {
                    assert!(!s.cpus.is_empty(), "{ctx} {policy:?}: no CPU sampled");
                    for &cpu in s.cpus.keys() {
                        assert!((cpu as usize) < cpus, "{ctx} {policy:?}: CPU {cpu}");
                    }
                }
            }
            let phases = policies.len() as u64;
            assert_eq!(out.wakeups, vec![(phases, 0); workers], "{ctx}");
            // Thread ids are the simulated threads': the workers come after the VM thread.
            assert_eq!(out.tids, (1..=workers as i32).collect::<Vec<_>>(), "{ctx}");
            // The `monitor` task queue's tasks went through the task manager's monitor (a third
            // of the policies), and under `monitor` parking every wake-up and check-in too.
            let tasks_through_monitor = (phases / 3) * ROOTS.len() as u64;
            assert!(
                out.task_manager.acquisitions >= tasks_through_monitor,
                "{ctx}"
            );
            if *parking == ParkingKind::Monitor {
                let parking_uses = phases * (1 + 2 * workers as u64);
                assert!(
                    out.task_manager.acquisitions >= tasks_through_monitor + parking_uses,
                    "{ctx}: {:?}",
                    out.task_manager
                );
            }
            // Each worker's job usage is its virtual CPU time in jobs: positive, and at most
            // all it ran.
            for (w, &ns) in out.usage_ns.iter().enumerate() {
                assert!(ns > 0, "{ctx}: worker {w} charged no CPU time");
                assert!(ns <= report.threads[1 + w].run_ns, "{ctx}: worker {w}");
            }
        }
    }
}

/// Same seed, same everything: the executor's report and every worker's statistics, bit for
/// bit; another seed breaks CPU ties differently.
#[test]
fn the_same_seed_gives_the_same_phases_bit_for_bit() {
    let policies = vec![
        PhasePolicy::VANILLA,
        PhasePolicy::SUO18,
        PhasePolicy::MODERN,
        PhasePolicy::OPTIMIZED,
        PhasePolicy::NAPS,
    ];
    for parking in ParkingKind::ALL {
        let run = |seed| {
            let machine = Machine::named("xeon-2x10", None).expect("a named machine");
            let (report, out) = run_phases(
                Sim::linux49(machine, Costs::DEFAULT, seed),
                *parking,
                15,
                policies.clone(),
            );
            (report, format!("{:?}", out.phases))
        };
        let (a, stats_a) = run(3);
        let (b, stats_b) = run(3);
        assert_eq!(a, b, "{parking}");
        assert_eq!(stats_a, stats_b, "{parking}");
    }
}

/// The steal policy is `concord`'s enum and file: switching it changes what the simulated
/// phase does (the victims chosen, hence the steals), from one source.
#[test]
fn a_steal_policy_switch_in_concord_changes_the_simulated_steals() {
    // The very enum the runtime parses its `--steal` flag into.
    let names = |all: &[StealPolicy]| all.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert_eq!(
        names(StealPolicy::ALL),
        concord::parallel::StealPolicy::ALL
            .iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
    );
    let counts = |steal| {
        let policy = PhasePolicy {
            steal,
            ..PhasePolicy::VANILLA
        };
        let (_, out) = run_phases(rr(8, 11), ParkingKind::Futex, 8, vec![policy]);
        let stats = &out.phases[0].1;
        let attempts: u64 = stats.iter().map(|s| s.steal_attempts).sum();
        let stolen: u64 = stats.iter().map(|s| s.stolen).sum();
        (attempts, stolen)
    };
    let best_of_2 = counts(StealPolicy::BestOf2);
    let last_victim = counts(StealPolicy::LastVictim);
    assert!(
        best_of_2.1 > 0 && last_victim.1 > 0,
        "{best_of_2:?} {last_victim:?}"
    );
    assert_ne!(best_of_2, last_victim);
}

/// Every runtime phase policy and parking converts to the simulator's copy with the same
/// fields, variant for variant (the presets' too).
#[test]
fn the_runtimes_policies_convert_to_the_simulators_field_for_field() {
    use concord::parallel::PhasePolicy as Runtime;
    use concord_sim::runtime;
    let presets = [
        Runtime::VANILLA,
        Runtime::MODERN,
        Runtime::OPTIMIZED,
        Runtime::SUO18,
        Runtime::NAPS,
    ];
    let all: Vec<Runtime> = Runtime::all().chain(presets).collect();
    assert_eq!(all.len(), PhasePolicy::all().count() + presets.len());
    for policy in &all {
        assert_eq!(
            format!("{:?}", runtime::phase_policy(policy)),
            format!("{policy:?}")
        );
    }
    assert_eq!(runtime::phase_policy(&Runtime::SUO18), PhasePolicy::SUO18);
    for &kind in concord::parallel::ParkingKind::ALL {
        assert_eq!(runtime::parking(kind).to_string(), kind.to_string());
    }
}

/// Items are (depth, node): a node's workers split an item into two children, one for each
/// node in turn, and send the children of other nodes to them as messages.
struct NodeSplit {
    leaves: AtomicU64,
    worker_nodes: Vec<usize>,
    nodes: usize,
}

impl ParallelTask for NodeSplit {
    type Item = (u32, usize);
    type Root = u32;
    /// (worker id, leaves)
    type Local = (usize, u64);
    fn root_name(&self, _: &u32) -> &'static str {
        "seed"
    }
    fn run_root(&self, root: &u32, _: &mut (usize, u64), q: &mut WorkQueue<(u32, usize)>) {
        q.push((*root, 0));
    }
    fn process(
        &self,
        (depth, node): (u32, usize),
        local: &mut (usize, u64),
        q: &mut WorkQueue<(u32, usize)>,
    ) {
        exec::charge(ITEM_NS);
        let home = q.home_node().expect("a segregated phase");
        assert_eq!(home, self.worker_nodes[local.0]);
        if home != node {
            q.send(node, (depth, node));
        } else if depth == 0 {
            local.1 += 1;
            self.leaves.fetch_add(1, Ordering::Relaxed);
        } else {
            q.push((depth - 1, node));
            q.push((depth - 1, (node + 1) % self.nodes));
        }
    }
}

/// A segregated phase on a two-node machine delivers every message to its node before it ends.
#[test]
fn a_simulated_segregated_phase_delivers_every_message() {
    for parking in ParkingKind::ALL {
        for policy in [PhasePolicy::VANILLA, PhasePolicy::OPTIMIZED] {
            let sent_received = Arc::new(Mutex::new((0, 0)));
            let out = sent_received.clone();
            let mut sim = rr(4, 5);
            sim.spawn("vm", move || {
                let workers = 6;
                let seg = Segregation {
                    nodes: 2,
                    worker_nodes: (0..workers).map(|w| w % 2).collect(),
                };
                let pool = WorkerPool::new(workers, "gc", *parking, |_| {}).unwrap();
                let task = NodeSplit {
                    leaves: AtomicU64::new(0),
                    worker_nodes: seg.worker_nodes.clone(),
                    nodes: 2,
                };
                let (locals, stats) = run_phase_segregated(
                    &pool,
                    &policy,
                    &task,
                    seeds(&[8, 2]),
                    (0..workers).map(|w| (w, 0)).collect(),
                    &seg,
                );
                let expect = (1 << 8) + (1 << 2);
                assert_eq!(task.leaves.load(Ordering::Relaxed), expect);
                assert_eq!(locals.iter().map(|l| l.1).sum::<u64>(), expect);
                let sent: u64 = stats.iter().map(|s| s.messages_sent).sum();
                let received: u64 = stats.iter().map(|s| s.messages_received).sum();
                *out.lock().unwrap() = (sent, received);
            });
            sim.time_limit(LIMIT_NS).run();
            let (sent, received) = *sent_received.lock().unwrap();
            assert!(
                sent > 0,
                "{parking} {policy:?}: half the children go to the other node"
            );
            assert_eq!(sent, received, "{parking} {policy:?}");
        }
    }
}

/// `exec::spawn` (through the simulated `thread::Builder`): threads started during a run run
/// in virtual time from their parent's clock, are joined in virtual time with their results,
/// and appear in the report after the threads given before the run.
#[test]
fn threads_spawned_during_a_run_take_part_and_are_joined() {
    let mut sim = rr(2, 1);
    let results = Arc::new(Mutex::new(Vec::new()));
    let out = results.clone();
    sim.spawn("parent", move || {
        exec::charge(1_000);
        let children: Vec<_> = (0..3u64)
            .map(|i| {
                Builder::new()
                    .name(format!("child-{i}"))
                    .spawn(move || {
                        exec::charge(10_000 * (i + 1));
                        i * 10
                    })
                    .expect("spawned inside the run")
            })
            .collect();
        let ids: Vec<_> = children.iter().map(|c| c.thread_id()).collect();
        assert_eq!(ids, vec![1, 2, 3]);
        for c in children {
            out.lock().unwrap().push(c.join().unwrap());
        }
    });
    let report = sim.run();
    assert_eq!(*results.lock().unwrap(), vec![0, 10, 20]);
    let names: Vec<&str> = report.threads.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["parent", "child-0", "child-1", "child-2"]);
    for (i, child) in report.threads[1..].iter().enumerate() {
        // Each ran its own work, starting after the parent's first microsecond.
        assert!(child.run_ns >= 10_000 * (i as u64 + 1), "{child:?}");
        assert!(
            child.finished_ns > 1_000 + 10_000 * (i as u64 + 1),
            "{child:?}"
        );
    }
    // The parent waited (blocked) for the last child, on 2 CPUs for 3 children.
    let last = report.threads[1..].iter().map(|t| t.finished_ns).max();
    assert!(report.threads[0].finished_ns >= last.unwrap());
    assert!(report.threads[0].blocks >= 1);
}

/// Outside a simulation there is no simulated thread to start.
#[test]
fn spawning_outside_a_simulation_is_refused() {
    let err = Builder::new()
        .name("stray".into())
        .spawn(|| ())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("simulated threads only"), "{err}");
    assert!(exec::spawn("stray", Default::default(), || ()).is_err());
}

/// The pool's start hook runs on each simulated worker, so GC-thread affinity set there
/// (`sched_setaffinity`, here [`exec::set_affinity`]) holds for every later phase: each worker's
/// CPU samples and its last CPU name only the CPU it was pinned to, under both schedulers.
#[test]
fn workers_pinned_by_the_start_hook_run_only_on_their_cpus() {
    let cpus = 4;
    for sim in [
        rr(cpus, 2),
        Sim::linux49(
            Machine::new("flat-4", 1, 1, cpus, false).expect("a 4-CPU machine"),
            Costs::DEFAULT,
            2,
        ),
    ] {
        let seen = Arc::new(Mutex::new((Vec::new(), Vec::new())));
        let out = seen.clone();
        let mut sim = sim;
        sim.spawn("vm", move || {
            let workers = 6;
            let pool = WorkerPool::new(workers, "gc", ParkingKind::Futex, move |id| {
                exec::set_affinity(CpuSet::single(id % cpus)).expect("a CPU of the machine");
            })
            .unwrap();
            let mut samples = Vec::new();
            for policy in [PhasePolicy::VANILLA, PhasePolicy::OPTIMIZED] {
                let task = Split::new();
                let (_, stats) = run_phase(&pool, &policy, &task, seeds(&ROOTS), vec![0; workers]);
                samples.extend(stats.into_iter().map(|s| (s.worker, s.cpus)));
            }
            *out.lock().unwrap() = (samples, pool.worker_last_cpus());
        });
        sim.time_limit(LIMIT_NS).run();
        let (samples, last) = std::mem::take(&mut *seen.lock().unwrap());
        assert_eq!(samples.len(), 12);
        for (worker, cpus_seen) in samples {
            let pinned = (worker % cpus) as u32;
            assert_eq!(cpus_seen.keys().copied().collect::<Vec<_>>(), [pinned]);
        }
        let expect: Vec<Option<u32>> = (0..6).map(|w| Some((w % cpus) as u32)).collect();
        assert_eq!(last, expect);
    }
}

/// Another instance's VM thread, a background thread, keeps collecting with a pool of its own;
/// its workers are background threads too, so the run ends when this instance's VM thread
/// does, and the other pool is torn down as its VM thread unwinds.
#[test]
fn a_pool_started_by_a_background_thread_does_not_keep_the_run_alive() {
    let mut sim = rr(4, 9);
    sim.spawn_background("other-vm", ThreadSpec::default(), || {
        let pool = WorkerPool::new(2, "other-gc", ParkingKind::Futex, |_| {}).unwrap();
        loop {
            run_phase(
                &pool,
                &PhasePolicy::MODERN,
                &Split::new(),
                seeds(&ROOTS),
                vec![0; 2],
            );
        }
    })
    .unwrap();
    sim.spawn("vm", || {
        let pool = WorkerPool::new(2, "gc", ParkingKind::Monitor, |_| {}).unwrap();
        for _ in 0..3 {
            let task = Split::new();
            run_phase(
                &pool,
                &PhasePolicy::VANILLA,
                &task,
                seeds(&ROOTS),
                vec![0; 2],
            );
            assert_eq!(task.leaves.load(Ordering::Relaxed), expected().0);
        }
    });
    let report = sim.time_limit(LIMIT_NS).run();
    let mut background: Vec<(&str, bool)> = report
        .threads
        .iter()
        .map(|t| (t.name.as_str(), t.background))
        .collect();
    background.sort_unstable();
    assert_eq!(
        background,
        [
            ("gc-0", false),
            ("gc-1", false),
            ("other-gc-0", true),
            ("other-gc-1", true),
            ("other-vm", true),
            ("vm", false),
        ]
    );
    // The other instance's workers did run alongside.
    assert!(report.background_run_ns() > 0);
}
