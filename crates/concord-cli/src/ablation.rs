//! `concord ablation`: the 000 Fig. 10 experiment. One workload under `vanilla`, vanilla plus
//! each single fix, `modern` and `optimized`, alternating the configurations A B C … A B C …
//! in one invocation (so machine noise hits all of them alike), then a table of medians:
//! GC time, pause percentiles, root-task imbalance, steal attempts and failure rate.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use concord_workloads::WorkloadParams;
use serde_json::json;

use crate::experiment::{find_workload, heap_setting, Arm, Column, Experiment, Variant};
use crate::interference::Interference;

/// Flags of `concord ablation`.
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// Workload to run (default gcbench).
    #[arg(default_value = "gcbench")]
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth).
    pub size: Option<u32>,
    /// How many rounds of all configurations to run (each round runs every configuration once).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// GC worker threads for every configuration (default: twice the usable CPUs, so the GC
    /// threads oversubscribe the cores as in the papers' stacking experiments).
    #[arg(long = "gc-threads", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub gc_threads: Option<u32>,
    /// Mutator threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Heap size (default: the workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Create the GC threads on one CPU, as HotSpot does, in every configuration (default
    /// true, so the configurations differ only in the parallel-phase switches).
    #[arg(
        long = "pin-start",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "true",
        default_missing_value = "true"
    )]
    pub pin_start: String,
    /// Only these configurations (comma-separated labels, e.g. vanilla,+adaptive-steal).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Load that runs during every configuration's runs: busy:K starts K busy-loop threads in
    /// this process for each run.
    #[arg(long, value_name = "busy:K")]
    pub interfere: Option<Interference>,
    /// Verify the heap after every collection in every run.
    #[arg(long)]
    pub verify: bool,
    /// Print every run and the medians as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
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

/// Run `concord ablation`.
pub fn run(args: AblationArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.workload)?;
    let variants: Vec<&Variant> = if args.only.is_empty() {
        VARIANTS.iter().collect()
    } else {
        args.only
            .iter()
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
            .collect::<Result<_>>()?
    };
    let params = WorkloadParams {
        mutators: args.mutators as usize,
        rounds: 1,
        size: args.size,
    };
    let gc_threads = args
        .gc_threads
        .map_or(2 * concord::os::cpu::usable_cpu_count(), |n| n as usize);
    let mut common = vec![
        (
            "heap",
            heap_setting(args.heap.as_deref(), workload.as_ref(), &params),
        ),
        ("gc-threads", gc_threads.to_string()),
        ("pin-start", args.pin_start.clone()),
    ];
    if args.verify {
        common.push(("verify", "true".to_string()));
    }
    let arms = variants
        .iter()
        .map(|v| {
            Arm::new(
                v,
                &common,
                0,
                workload.clone(),
                params.clone(),
                args.interfere,
            )
        })
        .collect::<Result<_>>()?;
    let experiment = Experiment {
        groups: vec![String::new()],
        arms,
        repeat: args.repeat,
    };
    let outcome = experiment.run(!args.json)?;
    if args.json {
        let out = json!({
            "workload": workload.name(),
            "gc_threads": gc_threads,
            "mutators": args.mutators,
            "pin_start": args.pin_start,
            "interference": args.interfere.map(|l| l.to_string()),
            "repeat": args.repeat,
            "configurations": experiment.configurations_json(&outcome),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let load = match args.interfere {
            Some(load) => format!(", {load} ({} during every run)", load.describe()),
            None => String::new(),
        };
        println!(
            "concord ablation {}: {gc_threads} GC threads, {} mutators, pin-start {}{load}, \
             medians of {} alternating runs each",
            workload.name(),
            args.mutators,
            args.pin_start,
            args.repeat
        );
        print!("{}", experiment.table(&outcome, Column::ABLATION));
        println!(
            "ratio: GC time relative to the first row; imbal.: most root tasks one worker ran over \
             the mean per worker; CPUs: distinct CPUs the GC workers were seen on per collection."
        );
        print!("{}", experiment.legend());
    }
    Ok(if outcome.all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::build_config;

    #[test]
    fn every_variant_builds_a_valid_configuration_differing_from_vanilla_in_one_switch() {
        let common = [("heap", "32m".to_string()), ("gc-threads", "4".to_string())];
        let config = |v: &Variant| {
            let settings: Vec<(&str, String)> = v
                .settings
                .iter()
                .map(|(k, val)| (*k, val.to_string()))
                .chain(common.iter().cloned())
                .collect();
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
}
