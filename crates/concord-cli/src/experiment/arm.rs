//! Arms: the configurations an experiment compares. An [`Arm`] is what the tables, the JSON and
//! `experiment.json` say about a configuration, plus the [`Runner`] that runs it; the runner of
//! a Concord heap is built here from configuration keys ([`heap_arm`]).

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use concord::config::{format_size, ConfigBuilder};
use concord::GcConfig;
use concord_workloads::{lookup, workload_names, Workload, WorkloadParams};

use super::runner::{HeapRunner, Runner};
use crate::interference::Interference;
use crate::sim::simulation::Simulator;

/// A named set of configuration keys (a preset and switches) that a command compares.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Short label for tables.
    pub label: &'static str,
    /// What it changes, in words.
    pub what: &'static str,
    /// Configuration keys and values, as on the command line without `--`.
    pub settings: &'static [(&'static str, &'static str)],
}

impl Variant {
    /// The variant's settings as owned values.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        self.settings
            .iter()
            .map(|(k, v)| (*k, v.to_string()))
            .collect()
    }
}

/// One configuration of an experiment, ready to run.
#[derive(Clone)]
pub struct Arm {
    /// Short label for tables (unique within its group).
    pub label: String,
    /// Unique within the experiment: names its runs in `experiment.json` and its files.
    pub id: String,
    /// What it is, in words.
    pub what: String,
    /// Index into the plan's groups; ratios are relative to the group's first arm.
    pub group: usize,
    /// Its preset, if it has one.
    pub preset: String,
    /// Its value of the swept key (sweeps only).
    pub value: Option<String>,
    /// Every setting it applies, `key=value`, in order (later ones win).
    pub settings: Vec<String>,
    /// The workload's name.
    pub workload: String,
    /// The workload's parameters.
    pub params: WorkloadParams,
    /// Load started for each of its runs and stopped after it (busy loops on the simulated
    /// machine when the arm is simulated).
    pub interference: Option<Interference>,
    /// The simulator that runs it, when it is simulated rather than measured
    /// ([`super::simulated`]).
    pub sim: Option<Arc<Simulator>>,
    /// What runs it.
    pub runner: Arc<dyn Runner>,
}

impl Arm {
    /// The arm's label with its interference, if any: `vanilla (busy:1)`.
    pub fn name(&self) -> String {
        match self.interference {
            Some(load) => format!("{} ({load})", self.label),
            None => self.label.clone(),
        }
    }
}

/// The arm called `label` that runs `workload` with `params` on a Concord heap configured by
/// `settings` (applied in order, later ones win), validated (configuration and workload
/// parameters). Its `what` is the configuration in words unless `what` is given.
pub fn heap_arm(
    label: String,
    what: Option<&str>,
    settings: &[(&str, String)],
    group: usize,
    workload: &Arc<dyn Workload>,
    params: WorkloadParams,
    interference: Option<Interference>,
) -> Result<Arm> {
    workload
        .validate(&params)
        .map_err(|e| anyhow::anyhow!("workload {}: {e}", workload.name()))?;
    let config = build_config(settings).with_context(|| format!("configuration '{label}'"))?;
    // Refused here, before the results directory exists, rather than once per run.
    concord::Heap::check_memory(&config).with_context(|| format!("configuration '{label}'"))?;
    Ok(Arm {
        id: label.clone(),
        what: what.map_or_else(|| describe(&config), str::to_string),
        label,
        group,
        preset: config.preset.to_string(),
        value: None,
        settings: settings.iter().map(|(k, v)| format!("{k}={v}")).collect(),
        workload: workload.name().to_string(),
        params: params.clone(),
        interference,
        sim: None,
        runner: Arc::new(HeapRunner {
            workload: workload.clone(),
            params,
            config,
        }),
    })
}

/// A configuration from keys and values applied as CLI flags, in order (later ones win).
/// `CONCORD_*` variables and configuration files do not apply: experiments are reproducible
/// from their command line.
pub fn build_config(settings: &[(&str, String)]) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    for (key, value) in settings {
        b.set_cli(key, value)?;
    }
    Ok(b.build()?)
}

/// The workload called `name`, or an error listing the known ones.
pub fn find_workload(name: &str) -> Result<Arc<dyn Workload>> {
    match lookup(name) {
        Some(w) => Ok(Arc::from(w)),
        None => bail!(
            "unknown workload '{name}' (allowed: {})",
            workload_names().join(", ")
        ),
    }
}

/// The workload's default heap for `params`, as a configuration value.
pub fn default_heap(workload: &dyn Workload, params: &WorkloadParams) -> String {
    format!("{}k", workload.default_heap(params).div_ceil(1024))
}

/// A configuration in words: preset, heap, GC threads and every switch.
pub fn describe(config: &GcConfig) -> String {
    let switches: Vec<String> = crate::summary::switches(config)
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    format!(
        "preset {}, heap {}, {}{} GC thread{}, {}",
        config.preset,
        format_size(config.heap_size),
        if config.dynamic_gc_threads {
            "up to "
        } else {
            ""
        },
        config.gc_threads,
        if config.gc_threads == 1 { "" } else { "s" },
        switches.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_settings_win_and_unknown_workloads_are_named() {
        let c = build_config(&[
            ("preset", "vanilla".to_string()),
            ("gc-threads", "3".to_string()),
            ("gc-threads", "5".to_string()),
        ])
        .unwrap();
        assert_eq!(c.gc_threads, 5);
        let err = find_workload("nosuch").err().unwrap().to_string();
        assert!(
            err.contains("unknown workload 'nosuch' (allowed: gcbench"),
            "{err}"
        );
    }

    #[test]
    fn heap_arms_are_validated_and_described() {
        let workload = find_workload("binary-trees").unwrap();
        let params = WorkloadParams::default();
        let settings = [("preset", "vanilla".to_string()), ("heap", "32m".into())];
        let arm = heap_arm(
            "v".into(),
            None,
            &settings,
            0,
            &workload,
            params.clone(),
            None,
        )
        .unwrap();
        assert_eq!(arm.settings, ["preset=vanilla", "heap=32m"]);
        assert_eq!(arm.preset, "vanilla");
        assert!(
            arm.what.starts_with("preset vanilla, heap 32M"),
            "{}",
            arm.what
        );
        let bad = [("steal", "random".to_string())];
        let err = heap_arm("b".into(), None, &bad, 0, &workload, params.clone(), None)
            .err()
            .unwrap();
        assert!(format!("{err:#}").contains("configuration 'b'"), "{err:#}");
        let none = WorkloadParams {
            mutators: 0,
            ..params
        };
        assert!(heap_arm("z".into(), None, &settings, 0, &workload, none, None).is_err());
    }
}
