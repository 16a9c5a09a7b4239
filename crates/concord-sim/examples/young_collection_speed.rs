//! How long one simulated young collection of about 10 MB of live data takes on 48 simulated
//! CPUs (`magny-cours-48` under the Linux 4.9 model), in wall time: a VM thread creates a
//! `WorkerPool` of one worker per CPU and runs one phase with `run_phase` of a synthetic
//! evacuation, 200 000 objects of 50 bytes, each copied once (charged as one object copy of its
//! bytes) and each referring to two objects of a tree plus one drawn at random (so that workers
//! also find objects already copied by others), from 64 root tasks of 32 root objects each,
//! under the `vanilla` and the `optimized` presets' phase policies with their parkings.
//!
//! Prints per preset the live data copied, the simulated time (starting the pool included), the operations
//! and baton hand-offs the executor did, and the wall time; the wall time goes mostly to the
//! hand-offs (one OS thread switch each), which `vanilla`'s long termination spinning
//! multiplies.
//!
//! `cargo run --release -p concord-sim --example young_collection_speed`

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use concord_sim::exec::{self, Costs, Sim};
use concord_sim::machine::Machine;
use concord_sim::parallel::engine::{run_phase, ParallelTask, WorkQueue};
use concord_sim::parallel::policy::{ParkingKind, PhasePolicy};
use concord_sim::parallel::pool::WorkerPool;
use concord_sim::parallel::task_queue::RootTask;

/// Live objects and their size: 10 MB in all.
const OBJECTS: usize = 200_000;
const OBJECT_BYTES: u64 = 50;
/// Root tasks, each a range of root objects (the first `ROOT_TASKS * ROOTS_PER_TASK` objects).
const ROOT_TASKS: usize = 64;
const ROOTS_PER_TASK: usize = 32;

/// The object graph: object `i` refers to `2i + 1` and `2i + 2` (while they exist), so every
/// object is reachable from the roots, and to one object drawn at random.
struct Graph {
    random_ref: Vec<u32>,
}

impl Graph {
    fn new(seed: u64) -> Graph {
        let mut state = seed;
        let random_ref = (0..OBJECTS)
            .map(|_| {
                // SplitMix64.
                state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = state;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                ((z ^ (z >> 31)) % OBJECTS as u64) as u32
            })
            .collect();
        Graph { random_ref }
    }

    fn refs(&self, object: u32) -> impl Iterator<Item = u32> + '_ {
        let i = object as usize;
        [2 * i + 1, 2 * i + 2]
            .into_iter()
            .filter(|&child| child < OBJECTS)
            .map(|child| child as u32)
            .chain([self.random_ref[i]])
    }
}

/// Evacuation: claim an object (its forwarding pointer) once, copy it, scan its references.
struct Evacuate {
    graph: Arc<Graph>,
    copied: Vec<AtomicBool>,
    objects: AtomicU64,
}

impl Evacuate {
    fn claim(&self, object: u32, q: &mut WorkQueue<u32>) {
        if !self.copied[object as usize].swap(true, Ordering::Relaxed) {
            q.push(object);
        }
    }
}

impl ParallelTask for Evacuate {
    type Item = u32;
    type Root = usize;
    type Local = ();
    fn root_name(&self, _: &usize) -> &'static str {
        "roots"
    }
    fn run_root(&self, task: &usize, _: &mut (), q: &mut WorkQueue<u32>) {
        for object in task * ROOTS_PER_TASK..(task + 1) * ROOTS_PER_TASK {
            self.claim(object as u32, q);
        }
    }
    fn process(&self, object: u32, _: &mut (), q: &mut WorkQueue<u32>) {
        exec::charge_copy(1, OBJECT_BYTES);
        self.objects.fetch_add(1, Ordering::Relaxed);
        for target in self.graph.refs(object) {
            self.claim(target, q);
        }
    }
}

fn main() {
    let graph = Arc::new(Graph::new(1));
    println!("machine          cpus  preset     parking  objects  live_mb  sim_ms   ops       handoffs  wall_s");
    for (preset, policy, parking) in [
        ("vanilla", PhasePolicy::VANILLA, ParkingKind::Monitor),
        ("optimized", PhasePolicy::OPTIMIZED, ParkingKind::Futex),
    ] {
        let machine = Machine::named("magny-cours-48", None).expect("a named machine");
        let cpus = machine.cpus();
        let copied = Arc::new(AtomicU64::new(0));
        let counted = copied.clone();
        let graph = graph.clone();
        let mut sim = Sim::linux49(machine, Costs::DEFAULT, 1);
        sim.spawn("vm", move || {
            let pool = WorkerPool::new(cpus, "gc", parking, |_| {}).expect("a pool");
            let task = Evacuate {
                graph,
                copied: (0..OBJECTS).map(|_| AtomicBool::new(false)).collect(),
                objects: AtomicU64::new(0),
            };
            let roots = (0..ROOT_TASKS).map(RootTask::any).collect();
            run_phase(&pool, &policy, &task, roots, vec![(); cpus]);
            counted.store(task.objects.into_inner(), Ordering::Relaxed);
        });
        let start = Instant::now();
        let report = sim.run();
        let wall = start.elapsed().as_secs_f64();
        let objects = copied.load(Ordering::Relaxed);
        assert_eq!(objects, OBJECTS as u64, "every object copied once");
        println!(
            "magny-cours-48   {cpus:>4}  {preset:<9}  {:<7}  {objects:>7}  {:>7.1}  {:>6.3}  {:>8}  {:>8}  {wall:>6.2}",
            parking.to_string(),
            (objects * OBJECT_BYTES) as f64 / 1e6,
            report.end_ns as f64 / 1e6,
            report.ops,
            report.handoffs,
        );
    }
}
