//! `concord compare <workload> [size] --preset a,b[,c] [--numa-arms off,interleaved]`: one
//! workload under a few presets (each under each NUMA layout given), alternating A B A B …
//! `--repeat` times in one invocation, then a table of medians with spreads and ratios to the
//! first configuration; every run goes to a results directory.
//!
//! `sweep` shares the arms of a preset ([`preset_arm`]) and the columns.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{bail, Result};
use clap::Args;
use concord::os::numa::NumaLayout;
use concord::Preset;
use concord_workloads::Workload;

use super::{conclude, params_text, workload_plan, Text};
use crate::experiment::simulated::simulate_arms;
use crate::experiment::{default_heap, find_workload, heap_arm, Arm, Column};
use crate::flags::{RunFlags, WorkloadArgs, WorkloadBench};

/// Flags of `concord compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    #[command(flatten)]
    pub presets: Presets,
    /// NUMA layouts as an arm dimension: every preset runs under each (off, interleaved,
    /// fragmented, segregated), so the layouts alternate side by side in one invocation; the
    /// table gains a remote% column (remote copy fraction). With --numa-topology for synthetic
    /// nodes.
    #[arg(
        long = "numa-arms",
        value_delimiter = ',',
        value_name = "off,interleaved,fragmented"
    )]
    pub numa_arms: Vec<String>,
    #[command(flatten)]
    pub common: WorkloadBench,
}

/// The layouts of `--numa-arms`, checked; an error names the allowed ones.
fn parse_numa_arms(names: &[String]) -> Result<Vec<NumaLayout>> {
    names
        .iter()
        .map(|n| {
            n.parse::<NumaLayout>()
                .map_err(|e| anyhow::anyhow!("--numa-arms: '{}' {e}", n.trim()))
        })
        .collect()
}

/// `--preset a,b[,c]` of `compare` and `sweep`.
#[derive(Args, Debug, Clone)]
pub struct Presets {
    /// Presets, comma-separated (vanilla, modern, suo18, naps, optimized); the first is the baseline of the
    /// ratios (sweep: at each value). A preset may appear twice (an A/A check of the noise).
    /// Default: compare vanilla,optimized; sweep optimized.
    #[arg(long = "preset", value_delimiter = ',', value_name = "a,b[,c]")]
    pub names: Vec<String>,
}

impl Presets {
    /// The presets given, else `default`, checked.
    pub fn or(&self, default: &[&str]) -> Result<Vec<String>> {
        if self.names.is_empty() {
            parse_presets(&default.iter().map(|p| p.to_string()).collect::<Vec<_>>())
        } else {
            parse_presets(&self.names)
        }
    }
}

/// The preset names of `--preset`, checked; an error names the allowed ones.
pub fn parse_presets(names: &[String]) -> Result<Vec<String>> {
    let allowed = || {
        Preset::ALL
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if names.is_empty() {
        bail!("--preset: no preset given (allowed: {})", allowed());
    }
    names
        .iter()
        .map(|name| {
            let name = name.trim();
            match Preset::ALL.iter().find(|p| p.name() == name) {
                Some(p) => Ok(p.name().to_string()),
                None => bail!("--preset: unknown preset '{name}' (allowed: {})", allowed()),
            }
        })
        .collect()
}

/// The labels of `presets` in order, unique: a preset that appears again gets `#2`, `#3`, …
pub fn unique_labels(presets: &[String]) -> Vec<String> {
    let mut labels = Vec::with_capacity(presets.len());
    for (i, p) in presets.iter().enumerate() {
        let before = presets[..i].iter().filter(|q| *q == p).count();
        labels.push(if before == 0 {
            p.clone()
        } else {
            format!("{p}#{}", before + 1)
        });
    }
    labels
}

/// What varies in one configuration of a sweep: a configuration key or the mutator count.
#[derive(Clone, Debug)]
pub enum Override {
    /// A configuration key and its value (`gc-threads=2`, `heap=32m`).
    Setting(&'static str, String),
    /// The number of mutator threads.
    Mutators(u32),
}

/// The arm of `preset` with the run flags and `over` on top, validated, in `group`.
pub fn preset_arm(
    workload_args: &WorkloadArgs,
    run: &RunFlags,
    workload: &Arc<dyn Workload>,
    preset: &str,
    label: String,
    group: usize,
    over: Option<&Override>,
) -> Result<Arm> {
    let mut params = run.params(workload_args.size, 1);
    if let Some(Override::Mutators(m)) = over {
        params.mutators = *m as usize;
    }
    let heap = match over {
        Some(Override::Setting("heap", h)) => h.clone(),
        _ => default_heap(workload.as_ref(), &params),
    };
    let mut settings = vec![("preset", preset.to_string())];
    settings.extend(run.settings_over(&[("heap", heap)]));
    if let Some(Override::Setting(key, value)) = over {
        if *key != "heap" {
            settings.push((key, value.clone()));
        }
    }
    heap_arm(
        label,
        None,
        &settings,
        group,
        workload,
        params,
        run.interfere,
    )
}

/// The columns of the `compare` table (and of each value's table of `sweep`).
pub fn columns() -> Vec<Column> {
    [
        &[
            Column::Runs,
            Column::Wall,
            Column::WallRange,
            Column::WallRatio,
        ][..],
        Column::GC_AND_PAUSES,
        &[Column::FailRate, Column::Imbalance],
    ]
    .concat()
}

/// What the columns mean.
pub const COLUMNS_NOTE: &str = "wall x, ratio: median wall and GC time relative to the first \
                                row (of its group, where there are groups); fail%: failed steal \
                                attempts; imbal.: most root tasks one worker ran over the mean \
                                per worker.";

/// Run `concord compare`.
pub fn run(args: CompareArgs) -> Result<ExitCode> {
    let flags = &args.common;
    let workload = find_workload(&flags.workload.workload)?;
    let presets = args.presets.or(&["vanilla", "optimized"])?;
    let labels = unique_labels(&presets);
    let layouts = parse_numa_arms(&args.numa_arms)?;
    let sim = flags.sim.check()?;
    let mut arms = Vec::new();
    for (preset, label) in presets.iter().zip(labels) {
        if layouts.is_empty() {
            arms.push(preset_arm(
                &flags.workload,
                &flags.run,
                &workload,
                preset,
                label,
                0,
                None,
            )?);
            continue;
        }
        for layout in &layouts {
            let over = Override::Setting("numa", layout.to_string());
            arms.push(preset_arm(
                &flags.workload,
                &flags.run,
                &workload,
                preset,
                format!("{label} numa={layout}"),
                0,
                Some(&over),
            )?);
        }
    }
    let arms = simulate_arms(arms, sim.as_ref())?;
    let plan = workload_plan("compare", flags, &workload, arms);
    let names: Vec<&str> = plan.arms.iter().map(|a| a.label.as_str()).collect();
    let header = format!(
        "concord compare {}{}: {}, {}; medians of {} alternating runs each",
        plan.workload,
        plan.size.map(|s| format!(" {s}")).unwrap_or_default(),
        names.join(" vs "),
        params_text(&plan.arms[0]),
        plan.repeat,
    );
    let mut cols = columns();
    if !layouts.is_empty() {
        cols.push(Column::RemoteCopy);
    }
    let note = if layouts.is_empty() {
        COLUMNS_NOTE.to_string()
    } else {
        format!("{COLUMNS_NOTE} remote%: copied bytes that went to another node than the copying worker's (node map of the layout).")
    };
    let text = Text::new(header, cols, note).with_ratio_lines();
    conclude(&plan, &flags.bench, |_, _| {}, |_| text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flags::tests_support::parse;

    fn args(argv: &[&str]) -> CompareArgs {
        parse(argv)
    }

    #[test]
    fn numa_arms_are_checked_and_reach_the_configuration() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_numa_arms(&names(&["off", " Interleaved"])).unwrap(),
            [NumaLayout::Off, NumaLayout::Interleaved]
        );
        assert_eq!(
            parse_numa_arms(&names(&["off", "striped"]))
                .unwrap_err()
                .to_string(),
            "--numa-arms: 'striped' is not a NUMA layout (allowed: off, interleaved, fragmented, \
             segregated)"
        );
        let a = args(&[
            "kmeans",
            "--preset",
            "optimized",
            "--numa-arms",
            "off,interleaved",
            "--numa-topology",
            "0/1",
            "--numa",
            "off",
        ]);
        assert_eq!(a.numa_arms, ["off", "interleaved"]);
        let workload = find_workload("kmeans").unwrap();
        // The arm's layout wins over a --numa given for all arms; the topology reaches both.
        let over = Override::Setting("numa", "interleaved".into());
        let arm = preset_arm(
            &a.common.workload,
            &a.common.run,
            &workload,
            "optimized",
            "optimized numa=interleaved".into(),
            0,
            Some(&over),
        )
        .unwrap();
        let config = build_config_of(&arm);
        assert_eq!(config.numa, NumaLayout::Interleaved);
        assert_eq!(config.numa_topology.to_string(), "0/1");
    }

    #[test]
    fn presets_are_checked_and_labels_unique() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            parse_presets(&names(&["vanilla", " optimized"])).unwrap(),
            ["vanilla", "optimized"]
        );
        let err = parse_presets(&names(&["vanilla", "fast"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--preset: unknown preset 'fast' (allowed: vanilla, modern, suo18, naps, optimized)"
        );
        assert!(parse_presets(&[]).is_err());
        assert_eq!(
            unique_labels(&names(&["vanilla", "optimized", "vanilla", "vanilla"])),
            ["vanilla", "optimized", "vanilla#2", "vanilla#3"]
        );
    }

    #[test]
    fn common_flags_reach_every_configuration() {
        let a = args(&[
            "gcbench",
            "--preset",
            "vanilla,optimized",
            "--gc-threads",
            "3",
            "--steal",
            "adaptive",
            "--pin-start=false",
            "--verify",
            "--mutators",
            "2",
        ]);
        assert_eq!(a.presets.names, ["vanilla", "optimized"]);
        let workload = find_workload("gcbench").unwrap();
        let arm_of = |a: &CompareArgs, p: &str, over: Option<&Override>| {
            preset_arm(
                &a.common.workload,
                &a.common.run,
                &workload,
                p,
                p.to_string(),
                0,
                over,
            )
        };
        for p in ["vanilla", "optimized"] {
            let arm = arm_of(&a, p, None).unwrap();
            let config = build_config_of(&arm);
            assert_eq!(config.gc_threads, 3);
            assert_eq!(config.phase.steal, concord::parallel::StealPolicy::Adaptive);
            assert!(!config.pin_start && config.verify);
            assert_eq!(arm.params.mutators, 2);
            // gcbench's default heap is per copy.
            assert_eq!(config.heap_size, 128 << 20, "{p}");
            assert!(arm.what.contains("steal adaptive"), "{}", arm.what);
        }
        let over = Override::Setting("gc-threads", "5".into());
        let arm = arm_of(&a, "modern", Some(&over)).unwrap();
        assert_eq!(build_config_of(&arm).gc_threads, 5);
        let bad = args(&["gcbench", "--preset", "vanilla", "--steal", "random"]);
        let err = arm_of(&bad, "vanilla", None).err().unwrap().to_string();
        assert!(err.contains("configuration 'vanilla'"), "{err}");
        let err = format!("{:#}", arm_of(&bad, "vanilla", None).err().unwrap());
        assert!(
            err.contains("allowed: best-of-2, last-victim, adaptive"),
            "{err}"
        );
    }

    /// The configuration of a heap arm, rebuilt from the settings it lists.
    fn build_config_of(arm: &Arm) -> concord::GcConfig {
        let settings: Vec<(&str, String)> = arm
            .settings
            .iter()
            .map(|s| s.split_once('=').map(|(k, v)| (k, v.to_string())).unwrap())
            .collect();
        crate::experiment::arm::build_config(&settings).unwrap()
    }
}
