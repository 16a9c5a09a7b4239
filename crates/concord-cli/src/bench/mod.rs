//! The bench commands, each a thin plan on the experiment engine ([`crate::experiment`]):
//! `compare` (presets side by side), `sweep` (a parameter's values × presets), `ablation` (000
//! Fig. 10: vanilla, each single fix, modern, optimized), `os-bench` (GC thread affinity with and
//! without interference), `sched-bench` (mutator scheduling policies, 001), `pause-bench`
//! (002: queue-churn under loads × GC log modes × THP modes) and `placement-bench` (004 Fig. 3:
//! memory placement and scalability, on its own runner instead of a Concord heap). Each builds
//! its arms, runs them through [`conclude`], and prints its own table.

pub mod ablation;
pub mod compare;
pub mod jdk;
pub mod jvm_bench;
pub mod os_bench;
pub mod pause_bench;
pub mod placement_bench;
pub mod placement_plan;
pub mod sched_bench;
pub mod sweep;

use std::fmt::Write as _;
use std::process::ExitCode;

use std::sync::Arc;

use anyhow::Result;
use concord::config::GcThreads;
use concord_workloads::{Workload, WorkloadParams};
use serde_json::Value;

use crate::console::{err, errln, out, outln};
use crate::experiment::output::{epilogue, outcome_json};
use crate::experiment::{default_heap, heap_arm, run_plan, Arm, Column, Executed, Plan, Variant};
use crate::flags::{BenchFlags, WorkloadBench};
use crate::interference::Interference;
use crate::sim::simulation::Simulator;

/// What a command prints of its outcome: a header, the table of `columns` (with the ratio
/// lines of every figure when `ratio_lines`), `more` (e.g. a second table), a note on the
/// columns and the legend of the arms of `legend_group` (all arms when `None`).
pub struct Text {
    header: String,
    columns: Vec<Column>,
    ratio_lines: bool,
    more: String,
    note: String,
    legend_group: Option<usize>,
}

impl Text {
    /// The table of `columns` under `header`, then `note`, then the legend of every arm.
    pub fn new(header: String, columns: Vec<Column>, note: impl Into<String>) -> Text {
        Text {
            header,
            columns,
            ratio_lines: false,
            more: String::new(),
            note: note.into(),
            legend_group: None,
        }
    }

    /// With the ratio lines of every figure after the table.
    pub fn with_ratio_lines(mut self) -> Text {
        self.ratio_lines = true;
        self
    }

    /// With `more` after the table (and its ratio lines).
    pub fn with_more(mut self, more: String) -> Text {
        self.more = more;
        self
    }

    /// With the legend of the arms of `group` only.
    pub fn legend_of(mut self, group: usize) -> Text {
        self.legend_group = Some(group);
        self
    }

    /// The text of `plan`'s outcome.
    fn render(&self, plan: &Plan, executed: &Executed) -> String {
        let outcome = &executed.outcome;
        let ratios = if self.ratio_lines {
            plan.ratio_lines(outcome)
        } else {
            String::new()
        };
        // A simulated experiment says so under its header, before any figure.
        let simulated = plan
            .simulated()
            .map_or(String::new(), |words| format!("{words}\n"));
        format!(
            "{}\n{simulated}{}{ratios}{}{}\n{}",
            self.header,
            plan.table(outcome, &self.columns),
            self.more,
            self.note,
            plan.legend(self.legend_group)
        )
    }
}

/// Runs `plan` into its results directory (with progress and Ctrl-C handling), then prints
/// the JSON of the outcome (with `json_more`'s additions) or `text` (the command's table),
/// the epilogue, and writes the report unless `--no-report` (or the results directory could
/// not be written: then that error, saying what was lost, ends the output on stderr). Returns
/// the exit status: 130 if interrupted, 1 if a run failed or the results could not be written.
pub fn conclude(
    plan: &Plan,
    bench: &BenchFlags,
    json_more: impl FnOnce(&Executed, &mut Value),
    text: impl FnOnce(&Executed) -> Text,
) -> Result<ExitCode> {
    let (executed, dir) = run_plan(plan, bench.out.as_deref())?;
    let write_failure = executed.write_failure.as_ref();
    let report = (!bench.no_report && write_failure.is_none())
        .then(|| crate::report::after_experiment(&dir.root));
    let after = format!(
        "{}{}",
        epilogue(plan, &executed, &dir),
        report.unwrap_or_default()
    );
    if bench.json {
        let mut v = outcome_json(plan, &executed, &dir);
        json_more(&executed, &mut v);
        // The epilogue goes to stderr whether or not stdout took the JSON.
        let printed = outln!("{}", serde_json::to_string_pretty(&v)?);
        err!("{after}");
        printed?;
    } else {
        out!("{}{after}", text(&executed).render(plan, &executed))?;
    }
    if let Some(failure) = write_failure {
        errln!("concord: {failure}");
    }
    Ok(executed.exit_code())
}

/// The plan of a bench command over one workload: `arms`, the workload's name and size, the
/// command's rounds; its parameters say what the arms are simulated on when they are.
pub fn workload_plan(
    kind: &'static str,
    flags: &WorkloadBench,
    workload: &Arc<dyn Workload>,
    arms: Vec<Arm>,
) -> Plan {
    let mut plan = Plan::new(kind, workload.name().to_string(), arms, flags.bench.repeat);
    plan.size = flags.workload.size;
    if let Some(words) = plan.simulated() {
        plan.parameters
            .insert("simulated".to_string(), words.into());
    }
    plan
}

/// The CPUs the arms run on: the simulated machine's, else this machine's usable CPUs.
pub fn cpus_of(sim: Option<&Simulator>) -> usize {
    sim.map_or_else(concord::os::cpu::usable_cpu_count, |s| s.machine.cpus())
}

/// A load in words, `busy:1 (1 busy-loop thread during every run)`, saying where it runs when
/// the arms are `simulated`.
pub fn load_words(load: Interference, simulated: bool) -> String {
    format!(
        "{load} ({}{} during every run)",
        load.describe(),
        load_place(simulated)
    )
}

/// Where the load of `simulated` arms runs, in words to follow its description.
pub fn load_place(simulated: bool) -> &'static str {
    if simulated {
        " on the simulated machine"
    } else {
        ""
    }
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
        let _ = write!(s, ", {}", load_words(load, arm.sim.is_some()));
    }
    s
}

/// The setup `ablation` and `os-bench` share: GC threads stacked as in the papers' experiments
/// (by default twice as many as usable CPUs, all born on one CPU), two mutators, and every
/// variant's settings with these and the run flags on top.
pub struct Stacked {
    pub params: WorkloadParams,
    pub gc_threads: GcThreads,
    pub pin_start: bool,
    /// The settings applied on top of each variant's.
    common: Vec<(&'static str, String)>,
}

impl Stacked {
    /// The setup for `workload` and the command's flags, on this machine's usable CPUs or the
    /// simulated machine's CPUs (`cpus`).
    pub fn new(flags: &WorkloadBench, workload: &Arc<dyn Workload>, cpus: usize) -> Stacked {
        let run = &flags.run;
        let params = run.params(flags.workload.size, 2);
        let gc_threads = run.gc_threads.unwrap_or(GcThreads::Fixed(2 * cpus));
        let pin_start = run.switches.pin_start.unwrap_or(true);
        let defaults = [
            ("heap", default_heap(workload.as_ref(), &params)),
            ("gc-threads", gc_threads.to_string()),
            ("pin-start", pin_start.to_string()),
        ];
        Stacked {
            common: run.settings_over(&defaults),
            params,
            gc_threads,
            pin_start,
        }
    }

    /// The arm of `variant` in `group` with `load` during its runs.
    pub fn arm(
        &self,
        variant: &Variant,
        group: usize,
        workload: &Arc<dyn Workload>,
        load: Option<Interference>,
    ) -> Result<Arm> {
        let mut settings = variant.settings();
        settings.extend(self.common.iter().cloned());
        heap_arm(
            variant.label.to_string(),
            Some(variant.what),
            &settings,
            group,
            workload,
            self.params.clone(),
            load,
        )
    }

    /// Puts the setup into the plan's parameters.
    pub fn describe_in(&self, plan: &mut Plan) {
        let gc_threads = match self.gc_threads {
            GcThreads::Fixed(n) => Value::from(n),
            GcThreads::Dynamic => Value::from("dynamic"),
        };
        for (k, v) in [
            ("gc_threads", gc_threads),
            ("mutators", Value::from(self.params.mutators)),
            ("pin_start", Value::from(self.pin_start)),
        ] {
            plan.parameters.insert(k.to_string(), v);
        }
    }

    /// The header's words about the setup: `4 GC threads, 2 mutators, pin-start true`.
    pub fn words(&self) -> String {
        format!(
            "{} GC threads, {} mutators, pin-start {}",
            self.gc_threads, self.params.mutators, self.pin_start
        )
    }
}
