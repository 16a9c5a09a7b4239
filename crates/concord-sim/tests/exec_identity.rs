//! The executor's schedule pinned bit for bit: a set of scenarios (the small parallel phase of
//! `common` under every termination protocol, at 4, 20 and 48 CPUs, under the round-robin,
//! Linux 4.9 and EEVDF placements, oversubscribed and with busy loops beside; the collector's
//! own engine with a `WorkerPool` under three presets and both parkings) whose reports and
//! statistics are hashed and compared with digests recorded by an earlier executor in
//! `exec_identity.digests`. A change to how the executor runs (how the baton passes, how the
//! next CPU is found) must leave every digest as it is; a change to what it simulates must
//! record them again, on purpose: `CONCORD_SIM_RECORD_DIGESTS=1 cargo test -p concord-sim
//! --test exec_identity` rewrites the file.

#[path = "common/mod.rs"]
mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{run_phase as run_common_phase, run_phase_on, PhaseShape};
use concord_sim::exec::{self, Costs, Sim};
use concord_sim::machine::Machine;
use concord_sim::parallel::engine::{run_phase, ParallelTask, WorkQueue};
use concord_sim::parallel::policy::{ParkingKind, PhasePolicy, StealPolicy, TerminationKind};
use concord_sim::parallel::pool::WorkerPool;
use concord_sim::parallel::task_queue::{Affinity, RootTask};

const DIGESTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/exec_identity.digests");

/// FNV-1a, 64 bits: a hash fixed by its definition (std's hashers may change between releases).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A flat machine of `cpus` CPUs (one node, no SMT), or a named one where there is one.
fn machine(cpus: usize) -> Machine {
    match cpus {
        20 => Machine::named("xeon-2x10", None),
        48 => Machine::named("magny-cours-48", None),
        _ => Machine::new(&format!("{cpus}cpu"), 1, 1, cpus, false),
    }
    .expect("a valid machine")
}

fn sim(sched: &str, cpus: usize, seed: u64) -> Sim {
    match sched {
        "rr" => Sim::new(cpus, Costs::DEFAULT, seed),
        "linux49" => Sim::linux49(machine(cpus), Costs::DEFAULT, seed),
        "eevdf" => Sim::eevdf(machine(cpus), Costs::DEFAULT, seed),
        _ => unreachable!("a known placement"),
    }
}

/// Phases of `common` (seeded on worker 0, so every worker steals and terminates).
fn phase_scenarios(out: &mut Vec<(String, String)>) {
    for sched in ["rr", "linux49", "eevdf"] {
        for cpus in [4, 20, 48] {
            for &kind in TerminationKind::ALL {
                // As many workers as CPUs, and (at 4 CPUs) twice as many: slices, preemption.
                let oversubscribed = if cpus == 4 { vec![4, 8] } else { vec![cpus] };
                for workers in oversubscribed {
                    let shape = PhaseShape {
                        kind,
                        steal: StealPolicy::BestOf2,
                        workers,
                        cpus,
                        seeds: 4 * workers,
                        children: 4 * workers,
                        work_ns: 2_000,
                        seed: 3,
                        lookahead: Sim::DEFAULT_LOOKAHEAD,
                    };
                    let run = match sched {
                        "rr" => run_common_phase(shape),
                        _ => run_phase_on(shape, sim(sched, cpus, shape.seed)),
                    };
                    let name = format!("phase {sched} cpus={cpus} workers={workers} {kind}");
                    let text = format!(
                        "{:?} {:?} {:?} {:?}",
                        run.report, run.processed, run.steal_attempts, run.steal_failures
                    );
                    out.push((name, text));
                }
            }
        }
    }
    // Busy loops beside the workers (background threads, stopped at the end), and lookahead 0.
    for (sched, lookahead) in [("linux49", 0), ("linux49", 2_000), ("eevdf", 200)] {
        let shape = PhaseShape {
            kind: TerminationKind::Fixed,
            steal: StealPolicy::BestOf2,
            workers: 4,
            cpus: 4,
            seeds: 40,
            children: 40,
            work_ns: 20_000,
            seed: 5,
            lookahead,
        };
        let mut sim = sim(sched, 4, shape.seed).time_limit(10_000_000_000);
        sim.busy_loops(&[1, 2]).expect("busy loops on CPUs 1 and 2");
        let run = run_phase_on(shape, sim);
        let name = format!("busy {sched} lookahead={lookahead}");
        let text = format!(
            "{:?} {:?} {:?} {:?}",
            run.report, run.processed, run.steal_attempts, run.steal_failures
        );
        out.push((name, text));
    }
}

/// Roots seed trees; each item n > 0 splits into two items n-1, each charged as one copy.
struct Split {
    items: AtomicU64,
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
        exec::charge_copy(1, 48);
        self.items.fetch_add(1, Ordering::Relaxed);
        *local += 1;
        if item > 0 {
            q.push(item - 1);
            q.push(item - 1);
        }
    }
}

/// The collector's engine: a VM thread runs two phases on a `WorkerPool` of one worker per CPU.
fn engine_scenarios(out: &mut Vec<(String, String)>) {
    let presets = [
        ("vanilla", PhasePolicy::VANILLA),
        ("modern", PhasePolicy::MODERN),
        ("optimized", PhasePolicy::OPTIMIZED),
    ];
    // `vanilla` spins long in its termination loop: millions of hand-offs at 20 CPUs and more
    // under Linux 4.9 (tens of seconds), so it runs there only on fewer CPUs or under EEVDF.
    let machines = [
        ("rr", 4),
        ("linux49", 8),
        ("eevdf", 20),
        ("linux49", 20),
        ("linux49", 48),
    ];
    for (sched, cpus) in machines {
        for (preset, policy) in presets {
            if preset == "vanilla" && sched == "linux49" && cpus > 8 {
                continue;
            }
            for parking in [ParkingKind::Monitor, ParkingKind::Futex] {
                let seen = Arc::new(Mutex::new(String::new()));
                let record = seen.clone();
                let mut sim = sim(sched, cpus, 11).time_limit(60_000_000_000);
                sim.spawn("vm", move || {
                    let pool = WorkerPool::new(cpus, "gc", parking, |_| {}).expect("a pool");
                    let mut text = String::new();
                    for _ in 0..2 {
                        let task = Split {
                            items: AtomicU64::new(0),
                        };
                        let roots = [6, 0, 3, 5]
                            .iter()
                            .enumerate()
                            .map(|(i, &root)| RootTask {
                                root,
                                affinity: match i % 3 {
                                    0 => Affinity::Any,
                                    1 => Affinity::Prefers(i),
                                    _ => Affinity::Stripe(i),
                                },
                            })
                            .collect();
                        let result = run_phase(&pool, &policy, &task, roots, vec![0; cpus]);
                        text.push_str(&format!("{result:?} {:?}\n", task.items));
                    }
                    text.push_str(&format!(
                        "{:?} {:?} {:?}",
                        pool.worker_wakeups(),
                        pool.worker_usage(),
                        pool.task_manager_stats()
                    ));
                    *record.lock().unwrap() = text;
                });
                let report = sim.run();
                let name = format!("engine {sched} cpus={cpus} {preset} {parking}");
                let text = format!("{report:?}\n{}", seen.lock().unwrap());
                out.push((name, text));
            }
        }
    }
}

#[test]
fn the_executor_reproduces_the_recorded_schedules_bit_for_bit() {
    let mut scenarios = Vec::new();
    phase_scenarios(&mut scenarios);
    engine_scenarios(&mut scenarios);
    let computed: String = scenarios
        .iter()
        .map(|(name, text)| format!("{:016x} {name}\n", fnv1a(text)))
        .collect();
    if std::env::var_os("CONCORD_SIM_RECORD_DIGESTS").is_some() {
        std::fs::write(DIGESTS, &computed).expect("writing the digests");
        return;
    }
    let recorded = std::fs::read_to_string(DIGESTS).expect("the recorded digests");
    let differing: Vec<String> = computed
        .lines()
        .zip(recorded.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("now {a}, recorded {b}"))
        .collect();
    assert!(
        differing.is_empty() && computed.lines().count() == recorded.lines().count(),
        "{} of {} scenarios changed (of {} recorded):\n{}",
        differing.len(),
        computed.lines().count(),
        recorded.lines().count(),
        differing.join("\n")
    );
}
