//! How fast the simulator runs: one parallel phase of the collector's own termination protocol
//! (`fixed`, HotSpot 8's spin/yield/sleep loop) with as many workers as CPUs (and with twice as
//! many), at 20 and 48
//! simulated CPUs, printing simulated operations per wall-clock second and wall time per
//! simulated second, at the default lookahead and at 2 µs (fewer OS thread switches, coarser
//! ordering), under the built-in round-robin placement (`rr`) and under the Linux 4.9 model
//! (`linux49`, on `xeon-2x10` and `magny-cours-48`).
//!
//! One worker per CPU finishes before the first scheduler tick, so there the two placements give
//! the same schedule and the rows compare only the cost of the model.
//!
//! `cargo run --release -p concord-sim --example sim_speed`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{run_phase, run_phase_on, PhaseShape};
use concord_sim::exec::{Costs, Sim};
use concord_sim::machine::Machine;
use concord_sim::parallel::policy::{StealPolicy, TerminationKind};

fn main() {
    println!("sched    cpus  workers  kind   lookahead_ns   items  sim_ms    ops        handoffs  steals  failed  wall_s  ops_per_wall_s  wall_s_per_sim_s");
    // The last two rows are oversubscribed (two workers per CPU), where the placements differ.
    for (sched, cpus, workers, machine) in [
        ("rr", 20, 20, None),
        ("rr", 48, 48, None),
        ("linux49", 20, 20, Some("xeon-2x10")),
        ("linux49", 48, 48, Some("magny-cours-48")),
        ("rr", 20, 40, None),
        ("linux49", 20, 40, Some("xeon-2x10")),
    ] {
        for (kind, lookahead) in [
            (TerminationKind::Fixed, Sim::DEFAULT_LOOKAHEAD),
            (TerminationKind::Owst, Sim::DEFAULT_LOOKAHEAD),
            (TerminationKind::Fixed, 2_000),
        ] {
            let shape = PhaseShape {
                kind,
                steal: StealPolicy::BestOf2,
                workers,
                cpus,
                seeds: 20_000,
                children: 20_000,
                work_ns: 1_000,
                seed: 1,
                lookahead,
            };
            let start = Instant::now();
            let run = match machine {
                Some(name) => {
                    let machine = Machine::named(name, None).expect("a named machine");
                    assert_eq!(machine.cpus(), cpus);
                    run_phase_on(shape, Sim::linux49(machine, Costs::DEFAULT, shape.seed))
                }
                None => run_phase(shape),
            };
            let wall = start.elapsed().as_secs_f64();
            let sim_s = run.report.end_ns as f64 / 1e9;
            println!(
                "{sched:<7}  {cpus:>4}  {:>7}  {:<5}  {lookahead:>12}  {:>5}  {:>6.3}  {:>9}  {:>8}  {:>6}  {:>6}  {wall:>6.2}  {:>14.0}  {:>16.1}",
                shape.workers,
                kind.to_string(),
                run.processed.iter().sum::<usize>(),
                sim_s * 1e3,
                run.report.ops,
                run.report.handoffs,
                run.steal_attempts.iter().sum::<usize>(),
                run.steal_failures.iter().sum::<usize>(),
                run.report.ops as f64 / wall,
                wall / sim_s,
            );
        }
    }
}
