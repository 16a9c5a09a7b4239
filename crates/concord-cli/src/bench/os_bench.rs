//! `concord os-bench`: GC thread affinity under oversubscription and interference (000 §3–4,
//! Algorithm 1). Four configurations — `vanilla`, and `optimized` with GC thread affinity
//! `none`, `static` and `dynamic` — each without interference and with K busy-loop threads,
//! alternating all eight A B C … in every round, then a table of medians: GC time with its
//! spread, the ratio to vanilla under the same interference, pause percentiles, the CPUs the GC
//! workers used, the steal failure rate and the wall time.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::{conclude, cpus_of, load_place, workload_plan, Stacked, Text};
use crate::experiment::simulated::simulate_arms;
use crate::experiment::{find_workload, Column, Variant};
use crate::flags::{count_in, WorkloadBench};
use crate::interference::{Interference, MAX_BUSY_THREADS};

/// Flags of `concord os-bench`. Its own defaults: `--gc-threads` twice the usable CPUs (the
/// GC threads oversubscribe the cores), `--mutators 2`, `--pin-start` true (the threads start
/// stacked, and the affinity policy decides whether they spread).
#[derive(Args, Debug, Clone)]
pub struct OsBenchArgs {
    /// Busy-loop threads in the configurations with interference.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "K",
        value_parser = count_in(1, MAX_BUSY_THREADS as u32),
        allow_negative_numbers = true
    )]
    pub busy: u32,
    /// Pin the busy-loop threads to this CPU (default: the OS scheduler places them). With
    /// --pin-start the GC threads are born on the first usable CPU, so `--busy-cpu` naming it
    /// puts the load on the GC threads' CPU in every run.
    #[arg(long, value_name = "CPU")]
    pub busy_cpu: Option<u32>,
    #[command(flatten)]
    pub common: WorkloadBench,
}

/// The configurations, each run without and with interference. The first is the baseline of
/// the ratios.
pub const VARIANTS: &[Variant] = &[
    Variant {
        label: "vanilla",
        what: "OpenJDK 8 switches; GC threads left to the OS scheduler",
        settings: &[("preset", "vanilla"), ("gc-affinity", "none")],
    },
    Variant {
        label: "optimized/none",
        what: "the papers' parallel-phase fixes; GC threads left to the OS scheduler",
        settings: &[("preset", "optimized"), ("gc-affinity", "none")],
    },
    Variant {
        label: "optimized/static",
        what: "the fixes; GC worker i pinned to the i-th usable CPU (modulo their number)",
        settings: &[("preset", "optimized"), ("gc-affinity", "static")],
    },
    Variant {
        label: "optimized/dynamic",
        what: "the fixes; workers on overloaded CPUs move to underloaded ones at the start of \
               each collection (000 Algorithm 1)",
        settings: &[("preset", "optimized"), ("gc-affinity", "dynamic")],
    },
];

/// The columns of the table after the GC time and pauses.
const COLUMNS: &[Column] = &[Column::Cpus, Column::FailRate, Column::Wall];

/// Run `concord os-bench`.
pub fn run(args: OsBenchArgs) -> Result<ExitCode> {
    let flags = &args.common;
    let workload = find_workload(&flags.workload.workload)?;
    let why = "the configurations set it (none, static, dynamic)";
    flags.run.refuse("os-bench", &["gc-affinity"], why)?;
    let why = "it runs every configuration without and with --busy K busy loops";
    flags.run.refuse("os-bench", &["interfere"], why)?;
    let sim = flags.sim.check()?;
    let cpus = cpus_of(sim.as_deref());
    let stacked = Stacked::new(flags, &workload, cpus);
    let busy = Interference::Busy {
        threads: args.busy as usize,
        cpu: args.busy_cpu,
    };
    // A simulated arm checks its busy-loop CPU against the simulated machine.
    if sim.is_none() {
        busy.check().context("--busy-cpu")?;
    }
    let mut arms = Vec::new();
    for (group, load) in [None, Some(busy)].into_iter().enumerate() {
        for v in VARIANTS {
            let mut arm = stacked.arm(v, group, &workload, load)?;
            arm.id = arm.name();
            arms.push(arm);
        }
    }
    let arms = simulate_arms(arms, sim.as_ref())?;
    let mut plan = workload_plan("os-bench", flags, &workload, arms);
    plan.groups = vec![
        "no interference".to_string(),
        format!(
            "{busy}: {}{} during every run",
            busy.describe(),
            load_place(sim.is_some())
        ),
    ];
    stacked.describe_in(&mut plan);
    let (cpus_key, cpus_words) = match sim {
        Some(_) => ("simulated_cpus", "simulated"),
        None => ("usable_cpus", "usable"),
    };
    plan.parameters.insert(cpus_key.into(), json!(cpus));
    plan.parameters.insert("busy".into(), json!(args.busy));
    plan.parameters
        .insert("busy_cpu".into(), json!(args.busy_cpu));
    let header = format!(
        "concord os-bench {}: {} on {cpus} {cpus_words} CPUs, medians of {} alternating runs \
         each",
        plan.workload,
        stacked.words(),
        plan.repeat
    );
    let note = "ratio: GC time relative to vanilla under the same interference; CPUs: distinct \
                CPUs the GC workers were seen on per collection; fail%: failed steal attempts.";
    let text = Text::new(header, [Column::GC_AND_PAUSES, COLUMNS].concat(), note).legend_of(0);
    conclude(&plan, &flags.bench, |_, _| {}, |_| text)
}

#[cfg(test)]
mod tests {
    use concord::os::policy::GcAffinity;
    use concord::Preset;

    use super::*;
    use crate::experiment::arm::build_config;

    #[test]
    fn variants_differ_in_preset_and_affinity_only() {
        let expected = [
            (Preset::Vanilla, GcAffinity::None),
            (Preset::Optimized, GcAffinity::None),
            (Preset::Optimized, GcAffinity::Static),
            (Preset::Optimized, GcAffinity::Dynamic),
        ];
        let optimized = build_config(&[("preset", "optimized".into())]).unwrap();
        for (v, (preset, affinity)) in VARIANTS.iter().zip(expected) {
            let c = build_config(&v.settings()).unwrap();
            assert_eq!((c.preset, c.gc_affinity), (preset, affinity), "{}", v.label);
            if preset == Preset::Optimized {
                let mut same = c.clone();
                same.gc_affinity = optimized.gc_affinity;
                assert_eq!(same, optimized, "{}", v.label);
            }
        }
    }
}
