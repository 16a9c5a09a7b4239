//! `concord sched-bench`: mutator scheduling policies (001). CFS, FIFO and the adaptive policy
//! (001 Algorithm 2) on a scalable workload (binary-trees, 4 mutators sharing the work) and a
//! non-scalable one (GCBench, 1 mutator), all six alternating in every round, then a table of
//! medians: GC time, pauses and wall time, with ratios to CFS on the same workload, and the
//! median / 90th percentile object lifespan (the mechanism 001 blames: CFS prolongs lifespans).
//!
//! Every configuration sets `fifo-cpu-threshold 0`: with the default (FIFO only above 8 usable
//! CPUs, 001 §4.4) the adaptive policy could never choose FIFO on a small machine.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use concord_workloads::{binary_trees, GcBench, GcBenchParams, Workload, WorkloadParams};
use serde_json::json;

use crate::experiment::{find_workload, heap_setting, Arm, Column, Experiment, Variant};

/// Flags of `concord sched-bench`.
#[derive(Args, Debug, Clone)]
pub struct SchedBenchArgs {
    /// How many rounds of all configurations to run (each round runs every configuration once).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// Tree depth of the scalable workload, binary-trees (default 18; 10 with --small).
    #[arg(long, value_parser = clap::value_parser!(u32).range(4..=30))]
    pub depth: Option<u32>,
    /// Mutator threads of the scalable workload.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Small sizes for a quick check: binary-trees 10 and the reduced GCBench (stretch tree 12,
    /// long-lived tree 10, trees 4..10).
    #[arg(long)]
    pub small: bool,
    /// Heap size for both workloads (default: each workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Sampling period of the adaptive policy, seconds (0.01..=3600). The policy's own default,
    /// 2 s, is longer than most runs here.
    #[arg(
        long = "adaptive-period",
        value_name = "SECONDS",
        default_value = "0.25"
    )]
    pub adaptive_period: String,
    /// Do not profile object lifespans (they cost a little allocation time in every
    /// configuration alike).
    #[arg(long = "no-lifespans")]
    pub no_lifespans: bool,
    /// Print every run and the medians as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The policies compared; the first is the baseline of the ratios. The adaptive one gets its
/// period from `--adaptive-period`.
const POLICIES: [(&str, &str); 3] = [
    ("cfs", "every mutator under CFS (SCHED_OTHER)"),
    ("fifo", "every mutator under SCHED_FIFO"),
    (
        "adaptive",
        "001 Algorithm 2: FIFO while the set of live mutator threads changes between samples, \
         else CFS",
    ),
];

/// The columns of the table.
const COLUMNS: &[Column] = &[
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::P50,
    Column::P99,
    Column::Max,
    Column::Wall,
    Column::WallRatio,
];

/// Run `concord sched-bench`.
pub fn run(args: SchedBenchArgs) -> Result<ExitCode> {
    let depth = args.depth.or(args.small.then_some(10));
    let gcbench: Arc<dyn Workload> = Arc::new(GcBench::with_params(if args.small {
        GcBenchParams::small()
    } else {
        GcBenchParams::standard()
    }));
    let workloads: [(Arc<dyn Workload>, WorkloadParams, String); 2] = [
        (
            find_workload(binary_trees::NAME)?,
            WorkloadParams {
                mutators: args.mutators as usize,
                rounds: 1,
                size: depth,
            },
            format!(
                "binary-trees {}, {} mutators (scalable)",
                depth.map_or("18".to_string(), |d| d.to_string()),
                args.mutators
            ),
        ),
        (
            gcbench,
            WorkloadParams::default(),
            format!(
                "gcbench{}, 1 mutator (non-scalable)",
                if args.small { " (small)" } else { "" }
            ),
        ),
    ];
    let adaptive = format!("adaptive:{}", args.adaptive_period.trim());
    let settings: Vec<(String, String)> = POLICIES
        .iter()
        .map(|(label, _)| {
            let policy = if *label == "adaptive" {
                adaptive.clone()
            } else {
                label.to_string()
            };
            (label.to_string(), policy)
        })
        .collect();
    let lifespans = if args.no_lifespans { "false" } else { "true" };
    let mut arms = Vec::new();
    let mut groups = Vec::new();
    for (group, (workload, params, title)) in workloads.iter().enumerate() {
        groups.push(title.clone());
        let common = [
            (
                "heap",
                heap_setting(args.heap.as_deref(), workload.as_ref(), params),
            ),
            ("fifo-cpu-threshold", "0".to_string()),
            ("lifespans", lifespans.to_string()),
        ];
        for ((label, what), (_, policy)) in POLICIES.iter().zip(&settings) {
            let variant = Variant {
                label,
                what,
                settings: &[],
            };
            let mut common = common.to_vec();
            common.insert(0, ("mutator-sched", policy.clone()));
            arms.push(Arm::new(
                &variant,
                &common,
                group,
                workload.clone(),
                params.clone(),
                None,
            )?);
        }
    }
    let experiment = Experiment {
        groups,
        arms,
        repeat: args.repeat,
    };
    let cpus = concord::os::cpu::usable_cpu_count();
    let note = format!(
        "fifo-cpu-threshold is 0 in every configuration, so that the adaptive policy may choose \
         FIFO on this machine's {cpus} usable CPUs (with the default, 8, it would stay on CFS \
         here, as 001 §4.4 advises); adaptive samples every {}s",
        args.adaptive_period.trim()
    );
    let outcome = experiment.run(!args.json)?;
    let has_lifespans = outcome
        .medians
        .iter()
        .any(|m| m.lifespan_p50_bytes.is_some());
    if args.json {
        let out = json!({
            "usable_cpus": cpus,
            "fifo_cpu_threshold": 0,
            "note": note,
            "repeat": args.repeat,
            "lifespans": !args.no_lifespans,
            "configurations": experiment.configurations_json(&outcome),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "concord sched-bench: mutator scheduling on {cpus} usable CPUs, medians of {} \
             alternating runs each",
            args.repeat
        );
        println!("note: {note}.");
        let mut columns = COLUMNS.to_vec();
        if has_lifespans {
            columns.extend([Column::LifeP50, Column::LifeP90]);
        }
        print!("{}", experiment.table(&outcome, &columns));
        let lifespan_legend = if has_lifespans {
            "; life p50/p90: median and 90th percentile object lifespan (bytes allocated \
             heap-wide from an object's birth to its death)"
        } else {
            ""
        };
        println!(
            "ratio, wall x: GC time and wall time relative to cfs on the same workload\
             {lifespan_legend}."
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
    use std::time::Duration;

    use clap::Parser;
    use concord::os::policy::MutatorSched;

    use super::*;
    use crate::experiment::build_config;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        args: SchedBenchArgs,
    }

    #[test]
    fn policies_build_with_a_zero_threshold() {
        let args = TestCli::try_parse_from(["x"]).unwrap().args;
        let policy = format!("adaptive:{}", args.adaptive_period);
        let c = build_config(&[
            ("mutator-sched", policy),
            ("fifo-cpu-threshold", "0".into()),
        ])
        .unwrap();
        assert_eq!(
            c.mutator_sched,
            MutatorSched::Adaptive(Duration::from_millis(250))
        );
        assert_eq!(c.fifo_cpu_threshold, 0);
        assert_eq!(POLICIES[0].0, "cfs");
    }
}
