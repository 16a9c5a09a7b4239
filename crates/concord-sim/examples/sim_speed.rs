//! How fast the simulator runs: one parallel phase of the collector's own termination protocol
//! (`fixed`, HotSpot 8's spin/yield/sleep loop) with as many workers as CPUs, at 20 and 48
//! simulated CPUs, printing simulated operations per wall-clock second and wall time per
//! simulated second, at the default lookahead and at 2 µs (fewer OS thread switches, coarser
//! ordering).
//!
//! `cargo run --release -p concord-sim --example sim_speed`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{run_phase, PhaseShape};
use concord_sim::exec::Sim;
use concord_sim::policy::{StealPolicy, TerminationKind};

fn main() {
    println!("cpus  workers  kind   lookahead_ns   items  sim_ms    ops        handoffs  steals  failed  wall_s  ops_per_wall_s  wall_s_per_sim_s");
    for cpus in [20, 48] {
        for (kind, lookahead) in [
            (TerminationKind::Fixed, Sim::DEFAULT_LOOKAHEAD),
            (TerminationKind::Owst, Sim::DEFAULT_LOOKAHEAD),
            (TerminationKind::Fixed, 2_000),
        ] {
            let shape = PhaseShape {
                kind,
                steal: StealPolicy::BestOf2,
                workers: cpus,
                cpus,
                seeds: 20_000,
                children: 20_000,
                work_ns: 1_000,
                seed: 1,
                lookahead,
            };
            let start = Instant::now();
            let run = run_phase(shape);
            let wall = start.elapsed().as_secs_f64();
            let sim_s = run.report.end_ns as f64 / 1e9;
            println!(
                "{cpus:>4}  {:>7}  {:<5}  {lookahead:>12}  {:>5}  {:>6.3}  {:>9}  {:>8}  {:>6}  {:>6}  {wall:>6.2}  {:>14.0}  {:>16.1}",
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
