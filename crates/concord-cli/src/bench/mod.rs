//! The bench commands, each a thin plan on the experiment engine ([`crate::experiment`]):
//! `compare` (presets side by side), `sweep` (a parameter's values × presets), `ablation` (000
//! Fig. 10: vanilla, each single fix, modern, optimized), `os-bench` (GC thread affinity with and
//! without interference) and `sched-bench` (mutator scheduling policies, 001). Each builds its
//! arms, runs them through [`conclude`], and prints its own table.

pub mod ablation;
pub mod compare;
pub mod os_bench;
pub mod sched_bench;
pub mod sweep;

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use concord::config::GcThreads;
use serde_json::Value;

use crate::experiment::output::{epilogue, outcome_json};
use crate::experiment::{run_plan, Arm, Executed, Plan};
use crate::flags::BenchFlags;

/// Runs `plan` into its results directory (with progress and Ctrl-C handling), then prints
/// the JSON of the outcome (with `json_more`'s additions) or `text` (the command's table),
/// the epilogue, and writes the report unless `--no-report`. Returns the exit status: 130 if
/// interrupted, 1 if a run failed.
pub fn conclude(
    plan: &Plan,
    bench: &BenchFlags,
    json_more: impl FnOnce(&Executed, &mut Value),
    text: impl FnOnce(&Executed) -> String,
) -> Result<ExitCode> {
    let (executed, dir) = run_plan(plan, bench.out.as_deref())?;
    let report = (!bench.no_report).then(|| crate::report::after_experiment(&dir.root));
    let after = format!(
        "{}{}",
        epilogue(plan, &executed, &dir),
        report.unwrap_or_default()
    );
    if bench.json {
        let mut v = outcome_json(plan, &executed, &dir);
        json_more(&executed, &mut v);
        println!("{}", serde_json::to_string_pretty(&v)?);
        eprint!("{after}");
    } else {
        print!("{}{after}", text(&executed));
    }
    Ok(executed.exit_code())
}

/// The workload parameters and load of an arm, in words: `1 mutator, 1 round, busy:1 (…)`.
pub fn params_text(arm: &Arm) -> String {
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let mut s = format!(
        "{}, {}",
        plural(arm.params.mutators, "mutator"),
        plural(arm.params.rounds, "round")
    );
    if let Some(load) = arm.interference {
        let _ = write!(s, ", {load} ({} during every run)", load.describe());
    }
    s
}

/// A GC thread setting as JSON: the number, or `"dynamic"`.
pub fn gc_threads_json(threads: GcThreads) -> Value {
    match threads {
        GcThreads::Fixed(n) => Value::from(n),
        GcThreads::Dynamic => Value::from("dynamic"),
    }
}

/// The usable CPUs, twice: the default GC thread count of `ablation` and `os-bench`, so that
/// the GC threads oversubscribe the cores as in the papers' stacking experiments.
pub fn oversubscribed_gc_threads() -> usize {
    2 * concord::os::cpu::usable_cpu_count()
}
