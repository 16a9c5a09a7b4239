//! `concord sweep <workload> [size] --vary KEY=V1,V2,… [--preset p[,q]]`: the papers'
//! scalability figures (000 Fig. 3c/12: GC threads; 001 Fig. 2: mutators; 000 Fig. 14: heap
//! size). Every value × every preset is one configuration; all of them alternate in every
//! round, `--repeat` rounds, so that machine noise hits every value alike. Then a table per
//! value (ratios to the first preset at that value) and a scaling table per preset (ratios to
//! the first value); every run goes to a results directory.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use concord::config::{format_size, parse_size, MAX_HEAP, MIN_HEAP};
use serde_json::json;

use super::compare::{columns, preset_arm, unique_labels, Override, Presets, COLUMNS_NOTE};
use super::{conclude, params_text, workload_plan, Text};
use crate::experiment::results::VaryEntry;
use crate::experiment::simulated::simulate_arms;
use crate::experiment::{find_workload, ratio, Column, Outcome, Plan};
use crate::flags::{RunFlags, WorkloadBench};

/// Flags of `concord sweep`.
#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// What to vary and its values: gc-threads=1,2,4,8 | mutators=1,2,4 | heap=32m,64m,128m.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: String,
    #[command(flatten)]
    pub presets: Presets,
    #[command(flatten)]
    pub common: WorkloadBench,
}

/// What a sweep may vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VaryKey {
    /// GC worker threads (000 Fig. 3c, 12).
    GcThreads,
    /// Mutator threads (001 Fig. 2).
    Mutators,
    /// Heap size (000 Fig. 14).
    Heap,
}

impl VaryKey {
    /// Every key, in the order messages list them.
    pub const ALL: [VaryKey; 3] = [VaryKey::GcThreads, VaryKey::Mutators, VaryKey::Heap];

    /// The key as on the command line.
    pub fn name(self) -> &'static str {
        match self {
            VaryKey::GcThreads => "gc-threads",
            VaryKey::Mutators => "mutators",
            VaryKey::Heap => "heap",
        }
    }

    /// The allowed keys, comma-separated.
    fn allowed() -> String {
        VaryKey::ALL.map(VaryKey::name).join(", ")
    }

    /// `text` as a value of this key, normalized, or why it is not one.
    fn parse_value(self, text: &str) -> Result<String, String> {
        let count = |max: u32| match text.parse::<u32>() {
            Ok(n) if (1..=max).contains(&n) => Ok(n.to_string()),
            _ => Err(()),
        };
        match self {
            VaryKey::GcThreads if text.eq_ignore_ascii_case("dynamic") => Ok("dynamic".to_string()),
            VaryKey::GcThreads => count(concord::config::MAX_GC_THREADS as u32).map_err(|()| {
                format!(
                    "'{text}' is not a GC thread count (allowed: 1..={} or dynamic)",
                    concord::config::MAX_GC_THREADS
                )
            }),
            VaryKey::Mutators => count(256)
                .map_err(|()| format!("'{text}' is not a mutator count (allowed: 1..=256)")),
            VaryKey::Heap => match parse_size(text) {
                Ok(size) if (MIN_HEAP..=MAX_HEAP).contains(&size) => Ok(text.to_ascii_lowercase()),
                Ok(_) => Err(format!(
                    "'{text}' is out of range (allowed: {}..={})",
                    format_size(MIN_HEAP),
                    format_size(MAX_HEAP)
                )),
                Err(e) => Err(format!("'{text}' is not a size ({e})")),
            },
        }
    }

    /// The configuration change of `value`.
    fn override_of(self, value: &str) -> Override {
        match self {
            VaryKey::GcThreads => Override::Setting("gc-threads", value.to_string()),
            VaryKey::Heap => Override::Setting("heap", value.to_string()),
            VaryKey::Mutators => Override::Mutators(value.parse().expect("checked by parse")),
        }
    }

    /// Whether the run flags set this key already.
    fn set_by(self, run: &RunFlags) -> bool {
        match self {
            VaryKey::GcThreads => run.gc_threads.is_some(),
            VaryKey::Mutators => run.mutators.is_some(),
            VaryKey::Heap => run.heap.is_some(),
        }
    }
}

/// A parsed `--vary`: the key and its values, in order, each once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vary {
    pub key: VaryKey,
    pub values: Vec<String>,
}

/// Parses `KEY=V1,V2,…`; the error names the problem and what is allowed.
pub fn parse_vary(spec: &str) -> Result<Vary> {
    let example = "e.g. gc-threads=1,2,4,8, mutators=1,2,4 or heap=32m,64m,128m";
    let Some((key, list)) = spec.split_once('=') else {
        bail!(
            "--vary: '{spec}' is not KEY=V1,V2,... (allowed keys: {}; {example})",
            VaryKey::allowed()
        );
    };
    let key_text = key.trim();
    let Some(key) = VaryKey::ALL.into_iter().find(|k| k.name() == key_text) else {
        bail!(
            "--vary: unknown key '{key_text}' (allowed: {}; {example})",
            VaryKey::allowed()
        );
    };
    let name = key.name();
    if list.trim().is_empty() {
        bail!("--vary {name}: no values (expected a comma-separated list, {example})");
    }
    let mut values: Vec<String> = Vec::new();
    for item in list.split(',') {
        let item = item.trim();
        if item.is_empty() {
            bail!("--vary {name}: an empty value in '{list}' (expected a comma-separated list, {example})");
        }
        let value = key
            .parse_value(item)
            .map_err(|e| anyhow::anyhow!("--vary {name}: {e}"))?;
        if values.contains(&value) {
            bail!("--vary {name}: '{item}' is given twice");
        }
        values.push(value);
    }
    Ok(Vary { key, values })
}

/// The arms of `plan` regrouped by preset, each labelled by its value: the scaling view, whose
/// ratios are to the first value.
fn by_preset(plan: &Plan, outcome: &Outcome, vary: &Vary, labels: &[String]) -> (Plan, Outcome) {
    let presets = labels.len();
    let mut view = plan.clone();
    view.groups = labels.to_vec();
    view.arms.clear();
    let mut runs = Vec::new();
    for p in 0..presets {
        for (v, value) in vary.values.iter().enumerate() {
            let i = v * presets + p;
            let mut arm = plan.arms[i].clone();
            arm.label = format!("{}={value}", vary.key.name());
            arm.group = p;
            view.arms.push(arm);
            runs.push(outcome.runs[i].clone());
        }
    }
    (view, Outcome::of(runs))
}

/// The columns of the scaling table.
const SCALING_COLUMNS: &[Column] = &[
    Column::Runs,
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::Wall,
    Column::WallRange,
    Column::WallRatio,
    Column::P99,
    Column::FailRate,
    Column::Imbalance,
    Column::Cpus,
];

/// Run `concord sweep`.
pub fn run(args: SweepArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.common.workload.workload)?;
    let presets = args.presets.or(&["optimized"])?;
    let labels = unique_labels(&presets);
    let vary = parse_vary(&args.vary)?;
    let key = vary.key.name();
    if vary.key.set_by(&args.common.run) {
        bail!("--{key} cannot be combined with --vary {key} (the sweep sets it)");
    }
    let sim = args.common.sim.check()?;
    let mut arms = Vec::new();
    for (group, value) in vary.values.iter().enumerate() {
        let over = vary.key.override_of(value);
        for (preset, label) in presets.iter().zip(&labels) {
            let label = format!("{label}@{key}={value}");
            let mut arm = preset_arm(
                &args.common.workload,
                &args.common.run,
                &workload,
                preset,
                label,
                group,
                Some(&over),
            )?;
            arm.value = Some(value.clone());
            arms.push(arm);
        }
    }
    let arms = simulate_arms(arms, sim.as_ref())?;
    let mut plan = workload_plan("sweep", &args.common, &workload, arms);
    plan.vary = Some(VaryEntry {
        key: key.to_string(),
        values: vary.values.clone(),
    });
    plan.groups = vary.values.iter().map(|v| format!("{key}={v}")).collect();
    let presets_n = labels.len();
    conclude(
        &plan,
        &args.common.bench,
        |executed, out| {
            let medians = &executed.outcome.medians;
            if let Some(configs) = out["configurations"].as_array_mut() {
                for (i, c) in configs.iter_mut().enumerate() {
                    let (m, first) = (&medians[i], &medians[i % presets_n]);
                    c["scaling"] = json!({
                        "relative_to": format!("{key}={}", vary.values[0]),
                        "gc_ratio": ratio(m.gc_ms, first.gc_ms),
                        "wall_ratio": ratio(m.wall_ms, first.wall_ms),
                    });
                }
            }
        },
        |executed| text(&plan, &executed.outcome, &vary, &labels),
    )
}

/// The tables of a sweep: per value, then (in `more`) per preset across the values.
fn text(plan: &Plan, outcome: &Outcome, vary: &Vary, labels: &[String]) -> Text {
    let key = vary.key.name();
    let varied = match vary.key {
        VaryKey::Mutators => {
            // The mutator count is the varied key: show the rounds and load only.
            let text = params_text(&plan.arms[0]);
            text.split_once(", ")
                .map_or(text.clone(), |(_, rest)| rest.to_string())
        }
        _ => params_text(&plan.arms[0]),
    };
    let (view, view_outcome) = by_preset(plan, outcome, vary, labels);
    let more = format!(
        "scaling: each preset relative to {key}={} (ratio: GC time, wall x: wall time)\n{}",
        vary.values[0],
        view.table(&view_outcome, SCALING_COLUMNS)
    );
    let mut note =
        format!("{COLUMNS_NOTE} CPUs: distinct CPUs the GC workers were seen on per collection.");
    if vary.values.len() > 1 {
        let _ = write!(
            note,
            " Configurations at {key}={} (the others differ in {key} only):",
            vary.values[0]
        );
    }
    let header = format!(
        "concord sweep {}{}: {key} = {} × {}; {varied}; medians of {} alternating runs each",
        plan.workload,
        plan.size.map(|s| format!(" {s}")).unwrap_or_default(),
        vary.values.join(", "),
        labels.join(", "),
        plan.repeat,
    );
    Text::new(header, columns(), note)
        .with_ratio_lines()
        .with_more(more)
        .legend_of(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(spec: &str) -> String {
        parse_vary(spec).unwrap_err().to_string()
    }

    #[test]
    fn vary_specs() {
        assert_eq!(
            parse_vary("gc-threads=1,2, 4,DYNAMIC").unwrap(),
            Vary {
                key: VaryKey::GcThreads,
                values: vec!["1".into(), "2".into(), "4".into(), "dynamic".into()]
            }
        );
        assert_eq!(
            parse_vary("heap=32m,64M,1g").unwrap().values,
            ["32m", "64m", "1g"]
        );
        assert_eq!(parse_vary("mutators=3").unwrap().values, ["3"]);

        let e = err("threads=1,2");
        assert!(
            e.contains("unknown key 'threads' (allowed: gc-threads, mutators, heap"),
            "{e}"
        );
        let e = err("gc-threads");
        assert!(e.contains("is not KEY=V1,V2,..."), "{e}");
        assert!(e.contains("gc-threads, mutators, heap"), "{e}");
        let e = err("gc-threads=");
        assert!(e.starts_with("--vary gc-threads: no values"), "{e}");
        let e = err("gc-threads=1,,2");
        assert!(e.contains("an empty value"), "{e}");
        let e = err("gc-threads=0");
        assert_eq!(
            e,
            "--vary gc-threads: '0' is not a GC thread count (allowed: 1..=256 or dynamic)"
        );
        assert!(err("gc-threads=257").contains("allowed: 1..=256"));
        let e = err("mutators=two");
        assert_eq!(
            e,
            "--vary mutators: 'two' is not a mutator count (allowed: 1..=256)"
        );
        let e = err("heap=12q");
        assert!(e.starts_with("--vary heap: '12q' is not a size"), "{e}");
        assert!(e.contains("e.g. 64m"), "{e}");
        assert_eq!(
            err("heap=1m"),
            "--vary heap: '1m' is out of range (allowed: 4M..=1024G)"
        );
        assert_eq!(
            err("gc-threads=2,4,2"),
            "--vary gc-threads: '2' is given twice"
        );
    }

    #[test]
    fn the_scaling_view_groups_by_preset() {
        use crate::experiment::figures::tests_support::figures;
        use crate::flags::tests_support::parse;
        let args: SweepArgs = parse(&[
            "binary-trees",
            "4",
            "--heap",
            "8m",
            "--vary",
            "gc-threads=1,2",
        ]);
        let workload = find_workload("binary-trees").unwrap();
        let vary = parse_vary(&args.vary).unwrap();
        let labels = vec!["vanilla".to_string(), "optimized".to_string()];
        let mut arms = Vec::new();
        for (g, value) in vary.values.iter().enumerate() {
            for l in &labels {
                let over = vary.key.override_of(value);
                let label = format!("{l}@gc-threads={value}");
                arms.push(
                    preset_arm(
                        &args.common.workload,
                        &args.common.run,
                        &workload,
                        l,
                        label,
                        g,
                        Some(&over),
                    )
                    .unwrap(),
                );
            }
        }
        assert!(arms[2].settings.contains(&"gc-threads=2".to_string()));
        assert_eq!(arms[2].label, "vanilla@gc-threads=2");
        let mut plan = Plan::new("sweep", "binary-trees".into(), arms, 1);
        plan.groups = vec!["gc-threads=1".into(), "gc-threads=2".into()];
        let outcome = Outcome::of(vec![
            vec![figures(10.0, 10.0)],
            vec![figures(8.0, 10.0)],
            vec![figures(5.0, 10.0)],
            vec![figures(2.0, 10.0)],
        ]);
        let (view, view_outcome) = by_preset(&plan, &outcome, &vary, &labels);
        let names: Vec<&str> = view.arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(
            names,
            [
                "gc-threads=1",
                "gc-threads=2",
                "gc-threads=1",
                "gc-threads=2"
            ]
        );
        assert_eq!(view.arms[3].preset, "optimized");
        let table = view.table(&view_outcome, &[Column::GcMs, Column::Ratio]);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("-- vanilla"), "{table}");
        assert!(lines[3].ends_with("0.50x"), "{table}");
        assert!(lines[4].starts_with("-- optimized"), "{table}");
        assert!(lines[6].ends_with("0.25x"), "{table}");
        let text = text(&plan, &outcome, &vary, &labels);
        assert!(
            text.more
                .starts_with("scaling: each preset relative to gc-threads=1"),
            "{}",
            text.more
        );
    }
}
