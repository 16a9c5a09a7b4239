//! `concord ablation`: the 000 Fig. 10 experiment. One workload under `vanilla`, vanilla plus
//! each single fix, `modern` and `optimized`, alternating the configurations A B C … A B C …
//! in one invocation (so machine noise hits all of them alike), then a table of medians:
//! GC time, pause percentiles, root-task imbalance, steal attempts and failure rate.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;

use super::{conclude, workload_plan, Stacked, Text};
use crate::experiment::{find_workload, Column, Variant};
use crate::flags::WorkloadBench;

/// Flags of `concord ablation`. Its own defaults: `--gc-threads` twice the usable CPUs (the GC
/// threads oversubscribe the cores as in the papers' stacking experiments), `--mutators 2`,
/// `--pin-start` true (so the configurations differ only in the parallel-phase switches).
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// Only these configurations (comma-separated labels, e.g. vanilla,+adaptive-steal).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    #[command(flatten)]
    pub common: WorkloadBench,
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

/// The columns of the ablation table after the GC time and pauses (000 Fig. 10; also the
/// README's).
const COLUMNS: &[Column] = &[
    Column::Steals,
    Column::FailRate,
    Column::Imbalance,
    Column::Cpus,
    Column::Wall,
];

/// The switch flags the configurations set themselves.
const SET_BY_THE_CONFIGURATIONS: &[&str] = &[
    "task-queue",
    "task-affinity",
    "steal",
    "termination",
    "parking",
    "gc-affinity",
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
    let flags = &args.common;
    let workload = find_workload(&flags.workload.workload)?;
    let variants = chosen_variants(&args.only)?;
    flags.run.refuse(
        "ablation",
        SET_BY_THE_CONFIGURATIONS,
        "each configuration sets it (vanilla plus one fix)",
    )?;
    let stacked = Stacked::new(flags, &workload);
    let load = flags.run.interfere;
    let arms = variants
        .iter()
        .map(|v| stacked.arm(v, 0, &workload, load))
        .collect::<Result<_>>()?;
    let mut plan = workload_plan("ablation", flags, &workload, arms);
    stacked.describe_in(&mut plan);
    plan.parameters
        .insert("interference".into(), json!(load.map(|l| l.to_string())));
    let load_words = match load {
        Some(load) => format!(", {load} ({} during every run)", load.describe()),
        None => String::new(),
    };
    let header = format!(
        "concord ablation {}: {}{load_words}, medians of {} alternating runs each",
        plan.workload,
        stacked.words(),
        plan.repeat
    );
    let note = "ratio: GC time relative to the first row; imbal.: most root tasks one worker ran \
                over the mean per worker; CPUs: distinct CPUs the GC workers were seen on per \
                collection.";
    let text = Text::new(header, [Column::GC_AND_PAUSES, COLUMNS].concat(), note);
    conclude(&plan, &flags.bench, |_, _| {}, |_| text)
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
            .common
            .run
            .refuse("ablation", SET_BY_THE_CONFIGURATIONS, "it is set")
            .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("--steal cannot be used with ablation"));
    }
}
