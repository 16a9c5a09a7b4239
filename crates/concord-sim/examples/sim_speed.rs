//! How fast the simulator runs: one parallel phase of the collector's own termination protocol
//! (`fixed`, HotSpot 8's spin/yield/sleep loop) with as many workers as CPUs, at 20 and 48
//! simulated CPUs, printing simulated operations per wall-clock second and wall time per
//! simulated second.
//!
//! `cargo run --release -p concord-sim --example sim_speed`

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::Instant;

use common::{run_phase, PhaseShape};
use concord_sim::policy::TerminationKind;

fn main() {
    println!("cpus  workers  kind   items  sim_ms    ops        wall_s  ops_per_wall_s  wall_s_per_sim_s");
    for cpus in [20, 48] {
        for kind in [TerminationKind::Fixed, TerminationKind::Owst] {
            let shape = PhaseShape {
                kind,
                workers: cpus,
                cpus,
                seeds: 20_000,
                children: 20_000,
                work_ns: 1_000,
                seed: 1,
            };
            let start = Instant::now();
            let run = run_phase(shape);
            let wall = start.elapsed().as_secs_f64();
            let sim_s = run.report.end_ns as f64 / 1e9;
            println!(
                "{cpus:>4}  {:>7}  {:<5}  {:>5}  {:>6.3}  {:>9}  {wall:>6.2}  {:>14.0}  {:>16.1}",
                shape.workers,
                kind.to_string(),
                run.processed.iter().sum::<usize>(),
                sim_s * 1e3,
                run.report.ops,
                run.report.ops as f64 / wall,
                wall / sim_s,
            );
        }
    }
}
