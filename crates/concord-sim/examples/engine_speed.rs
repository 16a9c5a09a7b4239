//! How fast the simulator runs the collector's own parallel engine: a VM thread creates a
//! `WorkerPool` of one worker per CPU and runs consecutive phases with `run_phase` (roots that
//! seed trees of items, each item charged as copying one 48-byte object), under the Linux 4.9
//! model on `xeon-2x10` (20 CPUs) and `magny-cours-48` (48 CPUs), for three presets' phase
//! policies with their parkings, at the executor's default lookahead and at 2 µs (fewer OS
//! thread switches, coarser ordering). Prints items per wall-clock second, simulated phases per
//! wall-clock second and wall time per simulated second (the simulated time includes starting
//! the pool).
//!
//! The wall time goes mostly to handing the baton from one OS thread to another, about once
//! per lookahead of every busy CPU's virtual time: phases whose workers spin long in the
//! termination protocol or the monitor (`vanilla` at 48 CPUs) cost the most.
//!
//! `cargo run --release -p concord-sim --example engine_speed`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use concord_sim::exec::{self, Costs, Sim};
use concord_sim::machine::Machine;
use concord_sim::parallel::engine::{run_phase, ParallelTask, WorkQueue};
use concord_sim::parallel::policy::{ParkingKind, PhasePolicy};
use concord_sim::parallel::pool::WorkerPool;
use concord_sim::parallel::task_queue::RootTask;

/// Phases per simulation.
const PHASES: usize = 3;
/// Root tasks per phase, each a tree of `2^(DEPTH+1) - 1` items.
const ROOTS: usize = 24;
const DEPTH: u32 = 11;

/// Each item n > 0 splits into two items n-1; every item costs one object copy.
struct Split {
    items: AtomicU64,
}

impl ParallelTask for Split {
    type Item = u32;
    type Root = u32;
    type Local = ();
    fn root_name(&self, _: &u32) -> &'static str {
        "seed"
    }
    fn run_root(&self, root: &u32, _: &mut (), q: &mut WorkQueue<u32>) {
        q.push(*root);
    }
    fn process(&self, item: u32, _: &mut (), q: &mut WorkQueue<u32>) {
        exec::charge_copy(1, 48);
        self.items.fetch_add(1, Ordering::Relaxed);
        if item > 0 {
            q.push(item - 1);
            q.push(item - 1);
        }
    }
}

fn main() {
    println!("machine          cpus  preset     parking  lookahead_ns  phases  items/phase  sim_ms/phase  ops       handoffs  wall_s  items_per_wall_s  phases_per_wall_s  wall_s_per_sim_s");
    for name in ["xeon-2x10", "magny-cours-48"] {
        for (preset, policy, parking) in [
            ("vanilla", PhasePolicy::VANILLA, ParkingKind::Monitor),
            ("modern", PhasePolicy::MODERN, ParkingKind::Futex),
            ("optimized", PhasePolicy::OPTIMIZED, ParkingKind::Futex),
        ] {
            for lookahead in [Sim::DEFAULT_LOOKAHEAD, 2_000] {
                let machine = Machine::named(name, None).expect("a named machine");
                let cpus = machine.cpus();
                let items = Arc::new(AtomicU64::new(0));
                let counted = items.clone();
                let mut sim = Sim::linux49(machine, Costs::DEFAULT, 1).lookahead(lookahead);
                sim.spawn("vm", move || {
                    let pool = WorkerPool::new(cpus, "gc", parking, |_| {}).expect("a pool");
                    for _ in 0..PHASES {
                        let task = Split {
                            items: AtomicU64::new(0),
                        };
                        let roots = (0..ROOTS).map(|_| RootTask::any(DEPTH)).collect();
                        run_phase(&pool, &policy, &task, roots, vec![(); cpus]);
                        counted.fetch_add(task.items.into_inner(), Ordering::Relaxed);
                    }
                });
                let start = Instant::now();
                let report = sim.run();
                let wall = start.elapsed().as_secs_f64();
                let items = items.load(Ordering::Relaxed);
                let sim_s = report.end_ns as f64 / 1e9;
                println!(
                "{name:<15}  {cpus:>4}  {preset:<9}  {:<7}  {lookahead:>12}  {PHASES:>6}  {:>11}  {:>12.3}  {:>8}  {:>8}  {wall:>6.2}  {:>16.0}  {:>17.2}  {:>16.1}",
                parking.to_string(),
                items / PHASES as u64,
                sim_s * 1e3 / PHASES as f64,
                report.ops,
                report.handoffs,
                items as f64 / wall,
                PHASES as f64 / wall,
                wall / sim_s,
            );
            }
        }
    }
}
