//! `concord os-bench`: GC thread affinity under oversubscription and interference (000 §3–4,
//! Algorithm 1). Four configurations — `vanilla`, and `optimized` with GC thread affinity
//! `none`, `static` and `dynamic` — each without interference and with K busy-loop threads,
//! alternating all eight A B C … in every round, then a table of medians: GC time with its
//! spread, the ratio to vanilla under the same interference, pause percentiles, the CPUs the GC
//! workers used, the steal failure rate and the wall time.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use concord_workloads::WorkloadParams;
use serde_json::json;

use crate::experiment::{find_workload, heap_setting, Arm, Column, Experiment, Variant};
use crate::interference::{Interference, MAX_BUSY_THREADS};

/// Flags of `concord os-bench`.
#[derive(Args, Debug, Clone)]
pub struct OsBenchArgs {
    /// Workload to run (default gcbench).
    #[arg(default_value = "gcbench")]
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth).
    pub size: Option<u32>,
    /// How many rounds of all configurations to run (each round runs every configuration once).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// GC worker threads for every configuration (default: twice the usable CPUs, so the GC
    /// threads oversubscribe the cores).
    #[arg(long = "gc-threads", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub gc_threads: Option<u32>,
    /// Mutator threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Busy-loop threads in the configurations with interference.
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u32).range(1..=MAX_BUSY_THREADS as i64)
    )]
    pub busy: u32,
    /// Heap size (default: the workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Create the GC threads on one CPU, as HotSpot does, in every configuration (default true:
    /// the threads start stacked, and the affinity policy decides whether they spread).
    #[arg(
        long = "pin-start",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "true",
        default_missing_value = "true"
    )]
    pub pin_start: String,
    /// Verify the heap after every collection in every run.
    #[arg(long)]
    pub verify: bool,
    /// Print every run and the medians as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
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

/// The columns of the table.
const COLUMNS: &[Column] = &[
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::P50,
    Column::P99,
    Column::Max,
    Column::Cpus,
    Column::FailRate,
    Column::Wall,
];

/// Run `concord os-bench`.
pub fn run(args: OsBenchArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.workload)?;
    let params = WorkloadParams {
        mutators: args.mutators as usize,
        rounds: 1,
        size: args.size,
    };
    let cpus = concord::os::cpu::usable_cpu_count();
    let gc_threads = args.gc_threads.map_or(2 * cpus, |n| n as usize);
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
    let busy = Interference::Busy(args.busy as usize);
    let loads = [None, Some(busy)];
    let mut arms = Vec::new();
    for (group, load) in loads.iter().enumerate() {
        for v in VARIANTS {
            arms.push(Arm::new(
                v,
                &common,
                group,
                workload.clone(),
                params.clone(),
                *load,
            )?);
        }
    }
    let experiment = Experiment {
        groups: vec![
            "no interference".to_string(),
            format!("{busy}: {} during every run", busy.describe()),
        ],
        arms,
        repeat: args.repeat,
    };
    let outcome = experiment.run(!args.json)?;
    if args.json {
        let out = json!({
            "workload": workload.name(),
            "size": args.size,
            "usable_cpus": cpus,
            "gc_threads": gc_threads,
            "mutators": args.mutators,
            "pin_start": args.pin_start,
            "busy": args.busy,
            "repeat": args.repeat,
            "configurations": experiment.configurations_json(&outcome),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "concord os-bench {}: {gc_threads} GC threads on {cpus} usable CPUs, {} mutators, \
             pin-start {}, medians of {} alternating runs each",
            workload.name(),
            args.mutators,
            args.pin_start,
            args.repeat
        );
        print!("{}", experiment.table(&outcome, COLUMNS));
        println!(
            "ratio: GC time relative to vanilla under the same interference; CPUs: distinct \
             CPUs the GC workers were seen on per collection; fail%: failed steal attempts."
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
    use concord::os::policy::GcAffinity;
    use concord::Preset;

    use super::*;
    use crate::experiment::build_config;

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
            let settings: Vec<(&str, String)> = v
                .settings
                .iter()
                .map(|(k, x)| (*k, x.to_string()))
                .collect();
            let c = build_config(&settings).unwrap();
            assert_eq!((c.preset, c.gc_affinity), (preset, affinity), "{}", v.label);
            if preset == Preset::Optimized {
                let mut same = c.clone();
                same.gc_affinity = optimized.gc_affinity;
                assert_eq!(same, optimized, "{}", v.label);
            }
        }
    }
}
