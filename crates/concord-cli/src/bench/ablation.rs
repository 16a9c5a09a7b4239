//! `concord ablation`: the 000 Fig. 10 experiment. One workload under `vanilla`, vanilla plus
//! each single fix, `modern` and `optimized`, alternating the configurations A B C … A B C …
//! in one invocation (so machine noise hits all of them alike), then a table of medians:
//! GC time, pause percentiles, root-task imbalance, steal attempts and failure rate.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use concord::config::GcThreads;
use serde_json::json;

use super::{conclude, gc_threads_json, oversubscribed_gc_threads};
use crate::experiment::{default_heap, find_workload, heap_arm, Column, Plan, Variant};
use crate::flags::{BenchFlags, RunFlags, WorkloadArgs};

/// Flags of `concord ablation`. Its own defaults: `--gc-threads` twice the usable CPUs (the GC
/// threads oversubscribe the cores as in the papers' stacking experiments), `--mutators 2`,
/// `--pin-start` true (so the configurations differ only in the parallel-phase switches).
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// Only these configurations (comma-separated labels, e.g. vanilla,+adaptive-steal).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub bench: BenchFlags,
}

/// The ablation set: the three presets and vanilla with each single fix of the papers.
pub const VARIANTS: &[Variant] = &[
    Variant {
        label: "vanilla",
        what: "OpenJDK 8: monitor queue, best-of-2, fixed termination, monitor parking",
        settings: &[("preset", "vanilla")],
    },
    Variant {
        label: "+lockfree-queue",
        what: "vanilla with the lock-free task queue (004 §3.1.1)",
        settings: &[("preset", "vanilla"), ("task-queue", "lockfree")],
    },
    Variant {
        label: "+task-affinity",
        what: "vanilla with task affinity (000 §4.1)",
        settings: &[("preset", "vanilla"), ("task-affinity", "on")],
    },
    Variant {
        label: "+adaptive-steal",
        what: "vanilla with adaptive semi-random stealing (000 Algorithm 2)",
        settings: &[("preset", "vanilla"), ("steal", "adaptive")],
    },
    Variant {
        label: "+live-termination",
        what: "vanilla with 2·N_live termination (000 §4.2)",
        settings: &[("preset", "vanilla"), ("termination", "live")],
    },
    Variant {
        label: "+futex-parking",
        what: "vanilla with lazy futex parking (004 §3.1.2)",
        settings: &[("preset", "vanilla"), ("parking", "futex")],
    },
    Variant {
        label: "+gc-affinity",
        what: "vanilla with dynamic GC thread affinity (000 Algorithm 1)",
        settings: &[("preset", "vanilla"), ("gc-affinity", "dynamic")],
    },
    Variant {
        label: "modern",
        what: "HotSpot 17+: claiming, last-victim, OWST",
        settings: &[("preset", "modern")],
    },
    Variant {
        label: "optimized",
        what: "all of the papers' parallel-phase fixes",
        settings: &[("preset", "optimized")],
    },
];

/// The columns of the ablation table (000 Fig. 10; also the README's).
const COLUMNS: &[Column] = &[
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::P50,
    Column::P99,
    Column::Max,
    Column::Steals,
    Column::FailRate,
    Column::Imbalance,
    Column::Cpus,
    Column::Wall,
];

/// The switch flags the configurations set themselves.
const SET_BY_THE_CONFIGURATIONS: &[(&str, &str)] = &[
    (
        "task-queue",
        "each configuration sets it (vanilla plus one fix)",
    ),
    (
        "task-affinity",
        "each configuration sets it (vanilla plus one fix)",
    ),
    ("steal", "each configuration sets it (vanilla plus one fix)"),
    (
        "termination",
        "each configuration sets it (vanilla plus one fix)",
    ),
    (
        "parking",
        "each configuration sets it (vanilla plus one fix)",
    ),
    (
        "gc-affinity",
        "each configuration sets it (vanilla plus one fix)",
    ),
];

/// The variants `--only` names (all without it), or an error naming the allowed ones.
fn chosen_variants(only: &[String]) -> Result<Vec<&'static Variant>> {
    if only.is_empty() {
        return Ok(VARIANTS.iter().collect());
    }
    only.iter()
        .map(|label| {
            VARIANTS
                .iter()
                .find(|v| v.label == label.trim())
                .with_context(|| {
                    let labels: Vec<&str> = VARIANTS.iter().map(|v| v.label).collect();
                    format!(
                        "--only: unknown configuration '{label}' (allowed: {})",
                        labels.join(", ")
                    )
                })
        })
        .collect()
}

/// Run `concord ablation`.
pub fn run(args: AblationArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.workload.workload)?;
    let variants = chosen_variants(&args.only)?;
    args.run.refuse("ablation", SET_BY_THE_CONFIGURATIONS)?;
    let params = args.run.params(args.workload.size, 2);
    let gc_threads = args
        .run
        .gc_threads
        .unwrap_or(GcThreads::Fixed(oversubscribed_gc_threads()));
    let pin_start = args.run.switches.pin_start.unwrap_or(true);
    let defaults = [
        ("heap", default_heap(workload.as_ref(), &params)),
        ("gc-threads", gc_threads.to_string()),
        ("pin-start", pin_start.to_string()),
    ];
    let common = args.run.settings_over(&defaults);
    let arms = variants
        .iter()
        .map(|v| {
            let mut settings = v.settings();
            settings.extend(common.iter().cloned());
            heap_arm(
                v.label.to_string(),
                Some(v.what),
                &settings,
                0,
                &workload,
                params.clone(),
                args.run.interfere,
            )
        })
        .collect::<Result<_>>()?;
    let mut plan = Plan::new(
        "ablation",
        workload.name().to_string(),
        arms,
        args.bench.repeat,
    );
    plan.size = args.workload.size;
    for (k, v) in [
        ("gc_threads", gc_threads_json(gc_threads)),
        ("mutators", json!(params.mutators)),
        ("pin_start", json!(pin_start)),
        (
            "interference",
            json!(args.run.interfere.map(|l| l.to_string())),
        ),
    ] {
        plan.parameters.insert(k.to_string(), v);
    }
    conclude(
        &plan,
        &args.bench,
        |_, _| {},
        |executed| {
            let load = match args.run.interfere {
                Some(load) => format!(", {load} ({} during every run)", load.describe()),
                None => String::new(),
            };
            format!(
            "concord ablation {}: {gc_threads} GC threads, {} mutators, pin-start {pin_start}{load}, \
             medians of {} alternating runs each\n{}\
             ratio: GC time relative to the first row; imbal.: most root tasks one worker ran over \
             the mean per worker; CPUs: distinct CPUs the GC workers were seen on per collection.\n{}",
            plan.workload,
            params.mutators,
            plan.repeat,
            plan.table(&executed.outcome, COLUMNS),
            plan.legend(None),
        )
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::arm::build_config;

    #[test]
    fn every_variant_builds_a_valid_configuration_differing_from_vanilla_in_one_switch() {
        let common = [("heap", "32m".to_string()), ("gc-threads", "4".to_string())];
        let config = |v: &Variant| {
            let mut settings = v.settings();
            settings.extend(common.iter().cloned());
            build_config(&settings).unwrap()
        };
        let vanilla = config(&VARIANTS[0]);
        for v in VARIANTS {
            let c = config(v);
            assert_eq!(c.gc_threads, 4, "{}", v.label);
            if v.label.starts_with('+') {
                let differing = [
                    c.phase.task_queue != vanilla.phase.task_queue,
                    c.phase.task_affinity != vanilla.phase.task_affinity,
                    c.phase.steal != vanilla.phase.steal,
                    c.phase.termination != vanilla.phase.termination,
                    c.parking != vanilla.parking,
                    c.gc_affinity != vanilla.gc_affinity,
                ];
                assert_eq!(differing.iter().filter(|&&d| d).count(), 1, "{}", v.label);
                let mut same = c.clone();
                same.phase.task_queue = vanilla.phase.task_queue;
                same.phase.task_affinity = vanilla.phase.task_affinity;
                same.phase.steal = vanilla.phase.steal;
                same.phase.termination = vanilla.phase.termination;
                same.parking = vanilla.parking;
                same.gc_affinity = vanilla.gc_affinity;
                assert_eq!(same, vanilla, "{}: nothing else differs", v.label);
            }
        }
    }

    #[test]
    fn only_and_refused_flags_name_what_is_allowed() {
        assert_eq!(chosen_variants(&[]).unwrap().len(), VARIANTS.len());
        let two = chosen_variants(&["vanilla".into(), " +gc-affinity".into()]).unwrap();
        assert_eq!(two[1].label, "+gc-affinity");
        let err = chosen_variants(&["fast".into()]).unwrap_err().to_string();
        assert!(err.contains("unknown configuration 'fast' (allowed: vanilla, +lockfree-queue"));
        let args: AblationArgs = crate::flags::tests_support::parse(&["--steal", "adaptive"]);
        let err = args
            .run
            .refuse("ablation", SET_BY_THE_CONFIGURATIONS)
            .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--steal cannot be used with ablation"));
    }
}
