//! `concord sim`: Concord's many-core simulator (crate `concord-sim`).
//!
//! * `concord sim [WORKLOAD [SIZE]] (--cpus N | --machine NAME) …` replays the workload's
//!   collections on a simulated machine ([`workload`]).
//! * `concord sim calibrate [--out FILE] [--json] [--quick]` measures the costs the simulator
//!   charges on this machine ([`concord_sim::calibrate`]) and saves them as JSON, atomically
//!   (staged beside the file and renamed), by default to `concord-costs.json` in the current
//!   directory.
//! * `concord sim validate [--json] [--quick] [--repeat R] [--costs FILE] [--keep DIR]` runs a
//!   grid of cells for real here and simulated at this machine's 2 CPUs, side by side
//!   ([`validate`]).

mod papers;
pub mod simulation;
mod stats;
mod tiers;
mod validate;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{anyhow, bail, Result};
use clap::{Args, Subcommand};
use concord::os::fs::{check_creatable, write_atomic};
use concord_sim::calibrate::{self, CalibratedCosts, Effort, DEFAULT_FILE};

use crate::console::{errln, out, outln};
use crate::RunFailed;

/// Flags of `concord sim`: a subcommand, or a workload to simulate and its flags.
#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct SimArgs {
    #[command(subcommand)]
    pub command: Option<SimCommand>,
    #[command(flatten)]
    pub workload: workload::SimWorkloadArgs,
}

/// The `concord sim` subcommands.
#[derive(Subcommand, Debug)]
pub enum SimCommand {
    /// Measure this machine's costs of atomics, locks, futexes, yield, sleep, spinning, context
    /// switches, wake-ups and the collector's copying, and save them as JSON for the simulator.
    Calibrate(CalibrateArgs),
    /// Run a grid of workloads, presets, loads and GC thread counts for real on this machine
    /// and simulated at 2 CPUs, and print the median GC pauses side by side with how often
    /// they agree.
    Validate(validate::ValidateArgs),
}

/// Flags of `concord sim calibrate`.
#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// The file the calibration is written to (replaced atomically).
    #[arg(long, value_name = "FILE", default_value = DEFAULT_FILE)]
    pub out: PathBuf,
    /// Also print the calibration's JSON to standard output (instead of the table).
    #[arg(long)]
    pub json: bool,
    /// Far fewer iterations (seconds instead of about a minute): for tests, not for use.
    #[arg(long)]
    pub quick: bool,
}

/// Runs `concord sim …`.
pub fn run(args: SimArgs) -> Result<ExitCode> {
    match args.command {
        Some(SimCommand::Calibrate(a)) => run_calibrate(a),
        Some(SimCommand::Validate(a)) => validate::run(a),
        None => {
            // Checked before anything is opened, with the configuration's files when it is
            // built: no output may replace an input.
            let w = &args.workload;
            crate::run::declare_files(
                &[
                    ("--costs", w.costs.as_deref()),
                    ("--trace", w.trace.as_deref()),
                ],
                &[("--gc-records", w.gc_records.as_deref())],
            )?;
            workload::run(args.workload)
        }
    }
}

fn run_calibrate(args: CalibrateArgs) -> Result<ExitCode> {
    let out = &args.out;
    if out.is_dir() {
        bail!(
            "--out {} is a directory; give the file to write the calibration to (such as {})",
            out.display(),
            out.join(DEFAULT_FILE).display()
        );
    }
    let cannot_write = |e: std::io::Error| {
        RunFailed::wrap(
            anyhow!(e).context(format!("cannot write the calibration to {}", out.display())),
        )
    };
    // (An empty --out is refused by clap.) Checked before a minute of measuring: a directory
    // that does not exist or takes no new file.
    check_creatable(out).map_err(cannot_write)?;
    let effort = if args.quick {
        Effort::QUICK
    } else {
        Effort::FULL
    };
    let costs = calibrate::calibrate(effort, |what| {
        errln!("concord sim calibrate: measuring {what}");
    })
    .map_err(RunFailed::wrap)?;
    let json = costs.to_json();
    write_atomic(out, json.as_bytes()).map_err(cannot_write)?;
    if args.json {
        out!("{json}")?;
    } else {
        print_table(&costs)?;
    }
    errln!("concord sim calibrate: wrote {}", out.display());
    Ok(ExitCode::SUCCESS)
}

/// The calibration as a readable table: each cost with its spread, then the copy-cost fit.
fn print_table(c: &CalibratedCosts) -> Result<()> {
    let m = &c.machine;
    outln!(
        "{} ({} CPUs), Linux {}, {}{}",
        m.cpu_model,
        m.cpus,
        m.kernel,
        c.measured_at,
        if c.quick { ", quick" } else { "" }
    )?;
    outln!("{:<18} {:>12} {:>12}", "cost", "ns", "spread ns")?;
    for ((name, ns), (_, spread)) in c.costs.fields().into_iter().zip(c.spread.fields()) {
        outln!("{name:<18} {ns:>12.3} {spread:>12.3}")?;
    }
    let f = &c.copy_fit;
    let objects: f64 = f.points.iter().map(|p| p.objects).sum();
    let charged: f64 = f.points.iter().map(|p| p.sync_ns).sum();
    let real: f64 = f.points.iter().map(|p| p.ns).sum();
    outln!(
        "young collections at 1 GC thread: {:.2} ns/object in all, of which the simulator \
         charges {:.2} ns/object itself (deque operations, forwarding CAS, claim loads)",
        real / objects,
        charged / objects
    )?;
    outln!("reach costs (trees of 32-byte nodes in order, top-down and shuffled), ns:")?;
    outln!(
        "{:>12} {:>10} {:>10} {:>10} {:>10}   {}",
        "footprint",
        "line miss",
        "spread",
        "far",
        "spread",
        "misses per object (in order / top-down / shuffled: line, far)"
    )?;
    for r in &f.reach {
        let per_object = |pick: fn(&concord_sim::calibrate::CopyPoint) -> bool| {
            f.points
                .iter()
                .find(|p| {
                    !p.fitted
                        && !p.first_touch
                        && pick(p)
                        && (p.footprint - r.footprint).abs() <= r.footprint * 0.01
                })
                .map_or("-".to_string(), |p| {
                    format!(
                        "{:.2}, {:.2}",
                        p.line_misses / p.objects,
                        p.far_accesses / p.objects
                    )
                })
        };
        outln!(
            "{:>12} {:>10.2} {:>10.2} {:>10.2} {:>10.2}   {} / {} / {}",
            concord::config::format_size_rounded(r.footprint as usize),
            r.line_miss_ns,
            r.line_miss_spread_ns,
            r.far_access_ns,
            r.far_access_spread_ns,
            per_object(|p| !p.shuffled && !p.preorder),
            per_object(|p| p.preorder),
            per_object(|p| p.shuffled),
        )?;
    }
    for (promoted, into) in [(false, "a to-space"), (true, "an old generation")] {
        if let Some(fault) = concord_sim::calibrate::fault_cost(&f.points, promoted) {
            outln!(
                "first-touch page fault inside a collection: {:.0} ns (spread {:.0} ns), from a \
                 tree {} into {into} not pretouched",
                fault.median,
                fault.spread,
                if promoted { "promoted" } else { "copied" }
            )?;
        }
    }
    if !c.wake.is_empty() {
        let table: Vec<String> = c
            .wake
            .iter()
            .map(|w| {
                format!(
                    "{} idle: {:.1} µs (spread {:.1}; waker {:.1})",
                    concord_sim::calibrate::readable_ns(w.idle_ns),
                    w.latency_ns / 1e3,
                    w.spread_ns / 1e3,
                    w.waker_ns / 1e3
                )
            })
            .collect();
        let polled = match &c.halt_poll {
            Some(_) => " (not polled: each right after a long halt)",
            None => "",
        };
        outln!(
            "wake-up latency by the sleeper's idle time{polled} (and the waker's time in the \
             call): {}",
            table.join(", ")
        )?;
    }
    match &c.halt_poll {
        Some(h) => outln!(
            "the host polls halted CPUs: halts up to {} wake in {:.1} µs (waker {:.1}) when \
             polled; a {} halt right after a long one wakes in {:.1} µs",
            concord_sim::calibrate::readable_ns(h.max_ns),
            h.latency_ns / 1e3,
            h.waker_ns / 1e3,
            concord_sim::calibrate::readable_ns(
                concord_sim::calibrate::HALT_POLL_SHORT.as_nanos() as f64
            ),
            h.unpolled_ns / 1e3
        )?,
        None if !c.wake.is_empty() => {
            outln!("the host does not poll halted CPUs (no faster wake-up after short halts)")?
        }
        None => {}
    }
    if let Some(p) = f.points.iter().find(|p| p.cold && p.start_ns > 0.0) {
        outln!(
            "wake-ups around the worker-start shape's parallel phase (worker and VM thread on \
             two CPUs): the worker started {:.1} µs after the phase began, the VM thread resumed \
             {:.1} µs after the worker ended (besides the latency, the simulator charges {:.1} \
             and {:.1} µs there)",
            p.start_ns / 1e3,
            p.tail_ns / 1e3,
            p.sim_start_ns / 1e3,
            p.sim_tail_ns / 1e3,
        )?;
    }
    outln!(
        "copy fit of the rest over the {} trees laid out in order: {:.2} ns/object + {:.4} ns/byte, residual \
         rms {:.0} ns ({:.1}% of the mean), r² {:.4}",
        f.points.iter().filter(|p| p.fitted).count(),
        f.per_object_ns,
        f.per_byte_ns,
        f.residual_rms_ns,
        f.residual_relative * 100.0,
        f.r_squared
    )?;
    Ok(())
}
