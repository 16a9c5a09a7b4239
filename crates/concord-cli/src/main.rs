//! `concord`: run Concord's workloads and put Concord side by side with HotSpot.
//!
//! Subcommands: `run` (one workload, readable summary or `--json`), `ablation` (the presets and
//! each single fix, alternating, 000 Fig. 10), `os-bench` (GC thread affinity with and without
//! interference), `sched-bench` (mutator scheduling policies) and `vs-hotspot` (the same GCBench
//! on HotSpot Parallel GC and on Concord, alternating, with ratios).

mod ablation;
mod compare;
mod experiment;
mod hotspot;
mod interference;
mod os_bench;
mod report;
mod results;
mod run;
mod sched_bench;
mod summary;
mod sweep;
mod vs_hotspot;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Concord: a parallel, generational garbage collector that cooperates with the OS.
#[derive(Parser, Debug)]
#[command(name = "concord", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one workload on a Concord heap and print a summary.
    Run(run::RunArgs),
    /// Run a workload under vanilla, vanilla + each single fix, modern and optimized,
    /// alternating, and compare GC time, pauses, imbalance and stealing (000 Fig. 10).
    Ablation(ablation::AblationArgs),
    /// Compare vanilla and optimized with GC thread affinity none, static and dynamic, with and
    /// without busy-loop interference, oversubscribed GC threads, alternating.
    OsBench(os_bench::OsBenchArgs),
    /// Compare mutator scheduling CFS, FIFO and adaptive on a scalable and a non-scalable
    /// workload, alternating.
    SchedBench(sched_bench::SchedBenchArgs),
    /// Run GCBench on HotSpot (-XX:+UseParallelGC) and on Concord, alternating, and compare.
    VsHotspot(vs_hotspot::VsHotspotArgs),
    /// Run a workload under a few presets, alternating A B A B …, and compare medians; every
    /// run's summary and records go to a results directory.
    Compare(compare::CompareArgs),
    /// Run a workload for each value of gc-threads, mutators or heap (× each preset),
    /// alternating, and tabulate the scaling; every run goes to a results directory.
    Sweep(sweep::SweepArgs),
    /// Write a self-contained HTML report (tables and plots) of a compare or sweep results
    /// directory.
    Report(report::ReportArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Ablation(args) => ablation::run(args),
        Command::OsBench(args) => os_bench::run(args),
        Command::SchedBench(args) => sched_bench::run(args),
        Command::VsHotspot(args) => vs_hotspot::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Sweep(args) => sweep::run(args),
        Command::Report(args) => report::run(args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("concord: {e:#}");
            ExitCode::from(2)
        }
    }
}
