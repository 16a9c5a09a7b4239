//! `concord`: run Concord's workloads, compare configurations side by side, report the results
//! and put Concord next to HotSpot.
//!
//! Subcommands: `run` (one workload, readable summary or `--json`, `--co-run M` separate
//! processes), the bench commands on the one experiment engine (`compare`, `sweep`,
//! `ablation`, `os-bench`, `sched-bench`; [`bench`], [`experiment`]), `report` (an HTML page of
//! a results directory) and `vs-hotspot` (the same GCBench on HotSpot Parallel GC and on
//! Concord, alternating, with ratios).

mod bench;
mod co_run;
mod experiment;
mod flags;
mod hotspot;
mod interference;
mod interrupt;
mod logger;
mod report;
mod run;
mod summary;
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
    /// alternating, and compare GC time, pauses, imbalance and stealing (000 Fig. 10); every
    /// run goes to a results directory.
    Ablation(bench::ablation::AblationArgs),
    /// Compare vanilla and optimized with GC thread affinity none, static and dynamic, with and
    /// without busy-loop interference, oversubscribed GC threads, alternating; every run goes
    /// to a results directory.
    OsBench(bench::os_bench::OsBenchArgs),
    /// Compare mutator scheduling CFS, FIFO and adaptive on a scalable and a non-scalable
    /// workload, alternating; every run goes to a results directory.
    SchedBench(bench::sched_bench::SchedBenchArgs),
    /// Run GCBench on HotSpot (-XX:+UseParallelGC) and on Concord, alternating, and compare.
    VsHotspot(vs_hotspot::VsHotspotArgs),
    /// Run a workload under a few presets, alternating A B A B …, and compare medians; every
    /// run's summary and records go to a results directory.
    Compare(bench::compare::CompareArgs),
    /// Run a workload for each value of gc-threads, mutators or heap (× each preset),
    /// alternating, and tabulate the scaling; every run goes to a results directory.
    Sweep(bench::sweep::SweepArgs),
    /// Write a self-contained HTML report (tables and plots) of a results directory written by
    /// compare, sweep, ablation, os-bench or sched-bench.
    Report(report::ReportArgs),
}

fn main() -> ExitCode {
    logger::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match flags::value_error(&e) {
            Some(message) => {
                eprintln!("concord: {message}");
                return ExitCode::from(2);
            }
            None => e.exit(),
        },
    };
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Ablation(args) => bench::ablation::run(args),
        Command::OsBench(args) => bench::os_bench::run(args),
        Command::SchedBench(args) => bench::sched_bench::run(args),
        Command::VsHotspot(args) => vs_hotspot::run(args),
        Command::Compare(args) => bench::compare::run(args),
        Command::Sweep(args) => bench::sweep::run(args),
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
