//! `concord sched-bench`: mutator scheduling policies (001). CFS, FIFO and the adaptive policy
//! (001 Algorithm 2) on a scalable workload (binary-trees, 4 mutators sharing the work) and a
//! non-scalable one (GCBench, 1 mutator), all six alternating in every round, then a table of
//! medians: GC time, pauses and wall time, with ratios to CFS on the same workload, the context
//! switches of the mutators and of the GC threads during the pauses (001 §4.1), and the
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

use super::{conclude, Text};
use crate::experiment::{default_heap, find_workload, heap_arm, Column, Plan};
use crate::flags::{count_in, BenchFlags, RunFlags};

/// Flags of `concord sched-bench`. `--mutators` is the scalable workload's (default 4); the
/// non-scalable one runs one mutator.
#[derive(Args, Debug, Clone)]
pub struct SchedBenchArgs {
    /// Tree depth of the scalable workload, binary-trees (default 18; 10 with --small).
    #[arg(long, value_name = "N", value_parser = count_in(4, 30), allow_negative_numbers = true)]
    pub depth: Option<u32>,
    /// Small sizes for a quick check: binary-trees 10 and the reduced GCBench (stretch tree 12,
    /// long-lived tree 10, trees 4..10).
    #[arg(long)]
    pub small: bool,
    /// Sampling period of the adaptive policy, seconds (0.01..=3600). The policy's own default,
    /// 2 s, is longer than most runs here.
    #[arg(
        long = "adaptive-period",
        value_name = "SECONDS",
        default_value = "0.25",
        allow_negative_numbers = true
    )]
    pub adaptive_period: String,
    /// Do not profile object lifespans (they cost a little allocation time in every
    /// configuration alike).
    #[arg(long = "no-lifespans")]
    pub no_lifespans: bool,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub bench: BenchFlags,
}

/// The policies compared; the first is the baseline of the ratios. The adaptive one gets its
/// period from `--adaptive-period`.
const POLICIES: [(&str, &str); 3] = [
    ("cfs", "every mutator under CFS (SCHED_OTHER)"),
    ("fifo", "every mutator under SCHED_FIFO"),
    (
        "adaptive",
        "001 Algorithm 2 as listed: FIFO from the start, CFS for good once a mutator thread is \
         seen at two samples",
    ),
];

/// A workload of the benchmark with its parameters and its group title.
type BenchWorkload = (Arc<dyn Workload>, WorkloadParams, String);

/// The two workloads: the scalable one, then the non-scalable one.
fn workloads(args: &SchedBenchArgs) -> Result<[BenchWorkload; 2]> {
    let depth = args.depth.or(args.small.then_some(10));
    let gcbench: Arc<dyn Workload> = Arc::new(GcBench::with_params(if args.small {
        GcBenchParams::small()
    } else {
        GcBenchParams::standard()
    }));
    let scalable = args.run.params(depth, 4);
    let mutators = scalable.mutators;
    Ok([
        (
            find_workload(binary_trees::NAME)?,
            scalable,
            format!(
                "binary-trees {}, {mutators} mutators (scalable)",
                depth.map_or("18".to_string(), |d| d.to_string()),
            ),
        ),
        (
            gcbench,
            WorkloadParams {
                mutators: 1,
                ..args.run.params(None, 1)
            },
            format!(
                "gcbench{}, 1 mutator (non-scalable)",
                if args.small { " (small)" } else { "" }
            ),
        ),
    ])
}

/// Run `concord sched-bench`.
pub fn run(args: SchedBenchArgs) -> Result<ExitCode> {
    args.run.refuse(
        "sched-bench",
        &["mutator-sched"],
        "the configurations set it (cfs, fifo, adaptive)",
    )?;
    args.run.refuse(
        "sched-bench",
        &["fifo-cpu-threshold"],
        "every configuration sets it to 0 (see the note it prints)",
    )?;
    let adaptive = format!("adaptive:{}", args.adaptive_period.trim());
    let lifespans = !args.no_lifespans;
    let mut arms = Vec::new();
    let mut groups = Vec::new();
    for (group, (workload, params, title)) in workloads(&args)?.iter().enumerate() {
        groups.push(title.clone());
        let defaults = [
            ("heap", default_heap(workload.as_ref(), params)),
            ("fifo-cpu-threshold", "0".to_string()),
            ("lifespans", lifespans.to_string()),
        ];
        for (label, what) in POLICIES {
            let policy = if label == "adaptive" {
                adaptive.clone()
            } else {
                label.to_string()
            };
            let mut settings = vec![("mutator-sched", policy)];
            settings.extend(args.run.settings_over(&defaults));
            let mut arm = heap_arm(
                label.to_string(),
                Some(what),
                &settings,
                group,
                workload,
                params.clone(),
                args.run.interfere,
            )?;
            arm.id = format!("{label} ({})", workload.name());
            arms.push(arm);
        }
    }
    let mut plan = Plan::new(
        "sched-bench",
        "binary-trees, gcbench".into(),
        arms,
        args.bench.repeat,
    );
    plan.groups = groups;
    let cpus = concord::os::cpu::usable_cpu_count();
    let note = format!(
        "fifo-cpu-threshold is 0 in every configuration, so that the adaptive policy may choose \
         FIFO on this machine's {cpus} usable CPUs (with the default, 8, it would stay on CFS \
         here, as 001 §4.4 advises); adaptive samples every {}s",
        args.adaptive_period.trim()
    );
    for (k, v) in [
        ("usable_cpus", json!(cpus)),
        ("fifo_cpu_threshold", json!(0)),
        ("note", json!(note)),
        ("lifespans", json!(lifespans)),
    ] {
        plan.parameters.insert(k.to_string(), v);
    }
    conclude(
        &plan,
        &args.bench,
        |_, _| {},
        |executed| {
            let has_lifespans = executed
                .outcome
                .medians
                .iter()
                .any(|m| m.lifespan_p50_bytes.is_some());
            let mut columns = [
                Column::GC_AND_PAUSES,
                &[
                    Column::Wall,
                    Column::WallRatio,
                    Column::MutatorVoluntary,
                    Column::MutatorInvoluntary,
                    Column::GcInvoluntary,
                ],
            ]
            .concat();
            let mut lifespan_legend = "";
            if has_lifespans {
                columns.extend([Column::LifeP50, Column::LifeP90]);
                lifespan_legend =
                    "; life p50/p90: median and 90th percentile object lifespan (bytes \
                               allocated heap-wide from an object's birth to its death)";
            }
            let header = format!(
                "concord sched-bench: mutator scheduling on {cpus} usable CPUs, medians of {} \
                 alternating runs each\nnote: {note}.",
                plan.repeat
            );
            let note = format!(
                "ratio, wall x: GC time and wall time relative to cfs on the same workload; \
                 mut vcsw/icsw: voluntary/involuntary context switches of the mutator threads \
                 over the run; gc icsw: involuntary context switches of the GC threads during \
                 the pauses (001 §4.1: FIFO has fewer during the GC period){lifespan_legend}."
            );
            Text::new(header, columns, note).legend_of(0)
        },
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use concord::os::policy::MutatorSched;

    use super::*;
    use crate::experiment::arm::build_config;

    #[test]
    fn policies_build_with_a_zero_threshold() {
        let args: SchedBenchArgs = crate::flags::tests_support::parse(&[]);
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
        let [(_, scalable, title), (_, gcbench, _)] = workloads(&args).unwrap();
        assert_eq!((scalable.mutators, gcbench.mutators), (4, 1));
        assert!(title.starts_with("binary-trees 18, 4 mutators"), "{title}");
    }
}
