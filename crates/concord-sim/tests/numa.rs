//! The NUMA cost model through the executor on `magny-cours-48`: a remote copy costs 004's
//! remote factor, and CPUs copying from one node take longer than CPUs copying from their own
//! once the node's bandwidth is shared.

use concord_sim::exec::{self, Costs, Report, Sim, ThreadSpec};
use concord_sim::machine::{CpuSet, Machine};
use concord_sim::numa::{Numa, NumaCosts};

/// 1 ns per byte, nothing per object: a chunk of 10 000 bytes is 10 µs locally.
const COSTS: Costs = Costs {
    copy_per_object_ps: 0,
    copy_per_byte_ps: 1_000,
    ..Costs::DEFAULT
};
const CHUNK: u64 = 10_000;
const CHUNKS: u64 = 100;

fn magny_sim() -> Sim {
    let machine = Machine::named("magny-cours-48", None).unwrap();
    let numa = Numa::new(&machine, NumaCosts::MAGNY_COURS);
    Sim::linux49(machine, COSTS, 1)
        .with_numa(numa)
        .time_limit(1_000_000_000)
}

fn pinned(cpu: usize) -> ThreadSpec {
    ThreadSpec {
        affinity: Some(CpuSet::single(cpu)),
        start_cpu: Some(cpu),
        ..ThreadSpec::default()
    }
}

/// One copier pinned to each CPU of `cpus`, copying `CHUNKS` chunks from the node `node(cpu)`.
fn copiers(cpus: &[usize], node: impl Fn(usize) -> usize) -> Report {
    let mut sim = magny_sim();
    for &cpu in cpus {
        let memory = node(cpu);
        sim.spawn_with(format!("copier-{cpu}"), pinned(cpu), move || {
            for _ in 0..CHUNKS {
                exec::charge_copy_on(0, CHUNK, memory);
            }
        })
        .unwrap();
    }
    sim.run()
}

#[test]
fn a_remote_copy_costs_the_remote_factor() {
    let local = copiers(&[0], |_| 0);
    let remote = copiers(&[0], |_| 5);
    // 100 chunks of 10 µs, after a 2 µs context switch; remote: 12 µs each.
    assert_eq!(local.threads[0].run_ns, 1_000_000);
    assert_eq!(remote.threads[0].run_ns, 1_200_000);
    assert_eq!(remote.end_ns - local.end_ns, 200_000);
    // Without a model, charge_copy_on is charge_copy.
    let mut sim = Sim::linux49(Machine::named("magny-cours-48", None).unwrap(), COSTS, 1);
    sim.spawn_with("plain", pinned(0), || exec::charge_copy_on(0, CHUNK, 5))
        .unwrap();
    assert_eq!(sim.run().threads[0].run_ns, 10_000);
}

#[test]
fn copying_from_one_node_is_slower_than_from_each_cpus_own() {
    // One CPU per node (CPUs 0, 6, …, 42), then two per node.
    let one_per_node: Vec<usize> = (0..8).map(|n| n * 6).collect();
    let two_per_node: Vec<usize> = (0..8).flat_map(|n| [n * 6, n * 6 + 1]).collect();
    let own = |cpu: usize| cpu / 6;
    let makespan = |r: &Report| r.end_ns as f64;

    let own8 = copiers(&one_per_node, own);
    let one8 = copiers(&one_per_node, |_| 0);
    // Each from its own node: 1 ms each. All from node 0: 8 copiers fit node 0's 8 streams,
    // but 7 of them are remote: 1.2 ms.
    assert!(own8.threads.iter().all(|t| t.run_ns == 1_000_000));
    assert_eq!(one8.threads[0].run_ns, 1_000_000);
    assert!(one8.threads[1..].iter().all(|t| t.run_ns == 1_200_000));
    assert!(makespan(&one8) > makespan(&own8));

    // 16 copiers from node 0 share its 8 streams: the bytes take about twice as long, on top
    // of the remote factor for the 14 remote ones (about 2.4 ms instead of 1 ms).
    let own16 = copiers(&two_per_node, own);
    let one16 = copiers(&two_per_node, |_| 0);
    assert!(own16.threads.iter().all(|t| t.run_ns == 1_000_000));
    let slowdown16 = makespan(&one16) / makespan(&own16);
    assert!(
        (2.0..=2.5).contains(&slowdown16),
        "16 copiers: {slowdown16}"
    );
    assert!(slowdown16 > makespan(&one8) / makespan(&own8));
}

#[test]
fn numa_charges_are_deterministic() {
    let cpus: Vec<usize> = (0..16).collect();
    let a = copiers(&cpus, |cpu| cpu % 3);
    let b = copiers(&cpus, |cpu| cpu % 3);
    assert_eq!(a, b);
}
