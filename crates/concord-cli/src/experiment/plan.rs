//! The plan of an experiment: its kind (the command), the arms in their groups, the rounds,
//! and what the command chose for all of them; the order of the runs (every arm once per
//! round, A B C … A B C …, so machine noise hits all of them alike, DESIGN.md "Measuring"); and
//! what `experiment.json` and the JSON output say about the arms.

use serde_json::{json, Map, Value};

use super::arm::Arm;
use super::figures::{ratio, Outcome};
use super::results::{sanitize_label, ConfigurationEntry, ExperimentFile, Timestamp, VaryEntry};
use super::results::{FORMAT, VERSION};
use super::simulated::{entry, simulated_words};

/// What an experiment runs.
#[derive(Clone)]
pub struct Plan {
    /// The command: `compare`, `sweep`, `ablation`, `os-bench`, `sched-bench`.
    pub kind: &'static str,
    /// The workload's name (or names, for a plan of several).
    pub workload: String,
    /// The workload size, if given.
    pub size: Option<u32>,
    /// What a sweep varies.
    pub vary: Option<VaryEntry>,
    /// Group titles, indexed by [`Arm::group`]; with a single group no titles are shown.
    pub groups: Vec<String>,
    /// The arms, in the order they run in each round and appear in the table.
    pub arms: Vec<Arm>,
    /// Rounds; each runs every arm once.
    pub repeat: u32,
    /// What the command chose for every arm (`gc_threads`, `busy`, …): in `experiment.json`
    /// and at the top of the JSON output.
    pub parameters: Map<String, Value>,
}

impl Plan {
    /// A plan of `arms` in one group.
    pub fn new(kind: &'static str, workload: String, arms: Vec<Arm>, repeat: u32) -> Plan {
        Plan {
            kind,
            workload,
            size: None,
            vary: None,
            groups: vec![String::new()],
            arms,
            repeat,
            parameters: Map::new(),
        }
    }

    /// Index of the first arm of `group`: the baseline of its ratios.
    pub fn baseline(&self, group: usize) -> usize {
        self.arms.iter().position(|a| a.group == group).unwrap_or(0)
    }

    /// The order of the runs: every arm once per round, in order, `repeat` rounds, as
    /// `(round, arm)` pairs.
    pub fn schedule(&self) -> Vec<(u32, usize)> {
        (0..self.repeat)
            .flat_map(|round| (0..self.arms.len()).map(move |arm| (round, arm)))
            .collect()
    }

    /// What the plan's arms are simulated on, in words, when they are simulated (see
    /// [`simulated_words`]); `None` when they are measured.
    pub fn simulated(&self) -> Option<String> {
        let sim = self.arms.iter().find_map(|a| a.sim.as_deref())?;
        Some(simulated_words(sim))
    }

    /// The arm's label as a file-name part.
    pub fn file_label(&self, arm: usize) -> String {
        sanitize_label(&self.arms[arm].id)
    }

    /// The group title of `arm` where there are several groups.
    fn group_title(&self, arm: &Arm) -> Option<String> {
        (self.groups.len() > 1).then(|| self.groups[arm.group].clone())
    }

    /// The configurations as `experiment.json` lists them.
    fn configuration_entries(&self) -> Vec<ConfigurationEntry> {
        self.arms
            .iter()
            .map(|arm| {
                let mut settings = arm.settings.clone();
                settings.push(format!("mutators={}", arm.params.mutators));
                settings.push(format!("rounds={}", arm.params.rounds));
                ConfigurationEntry {
                    label: arm.id.clone(),
                    name: Some(arm.label.clone()),
                    group: self.group_title(arm),
                    workload: Some(arm.workload.clone()),
                    preset: Some(arm.preset.clone()),
                    value: arm.value.clone(),
                    settings,
                    interference: arm.interference.map(|l| l.to_string()),
                    sim: arm.sim.as_deref().map(entry),
                }
            })
            .collect()
    }

    /// A fresh `experiment.json`: no runs yet.
    pub fn experiment_file(&self, started: &Timestamp, command: String) -> ExperimentFile {
        ExperimentFile {
            format: FORMAT.to_string(),
            version: VERSION,
            kind: self.kind.to_string(),
            workload: self.workload.clone(),
            size: self.size,
            started: started.rfc3339.clone(),
            command,
            vary: self.vary.clone(),
            repeat: self.repeat,
            parameters: self.parameters.clone(),
            configurations: self.configuration_entries(),
            runs: Vec::new(),
            interrupted: false,
            complete: false,
            paper: None,
        }
    }

    /// Every arm as JSON: label, group, workload, settings, interference, median, GC time and
    /// wall time ratios to the group's first arm, and every run.
    pub fn configurations_json(&self, outcome: &Outcome) -> Vec<Value> {
        self.arms
            .iter()
            .enumerate()
            .map(|(i, arm)| {
                let m = &outcome.medians[i];
                let base = &outcome.medians[self.baseline(arm.group)];
                json!({
                    "label": arm.label,
                    "id": arm.id,
                    "group": self.groups.get(arm.group),
                    "workload": arm.workload,
                    "size": arm.params.size,
                    "mutators": arm.params.mutators,
                    "settings": arm.settings,
                    "interference": arm.interference.map(|l| l.to_string()),
                    "sim": arm.sim.as_deref().map(entry),
                    "median": m,
                    "gc_ratio": ratio(m.gc_ms, base.gc_ms),
                    "wall_ratio": ratio(m.wall_ms, base.wall_ms),
                    "runs": outcome.runs[i],
                })
            })
            .collect()
    }
}

/// Plans for tests.
#[cfg(test)]
pub mod tests_support {
    use concord_workloads::WorkloadParams;

    use super::*;
    use crate::experiment::arm::{find_workload, heap_arm};

    /// A plan of binary-trees 4 arms (label, group) on an 8m heap, vanilla, one round, with
    /// groups titled `groups`.
    pub fn plan_of(arms: &[(&str, usize)], groups: &[&str]) -> Plan {
        let workload = find_workload("binary-trees").unwrap();
        let params = WorkloadParams {
            size: Some(4),
            ..WorkloadParams::default()
        };
        let settings = [("preset", "vanilla".to_string()), ("heap", "8m".into())];
        let arms = arms
            .iter()
            .map(|(label, group)| {
                let mut arm = heap_arm(
                    label.to_string(),
                    Some("test"),
                    &settings,
                    *group,
                    &workload,
                    params.clone(),
                    None,
                )
                .unwrap();
                arm.id = format!("{label}-{group}");
                arm
            })
            .collect();
        let mut plan = Plan::new("compare", "binary-trees".into(), arms, 1);
        plan.groups = groups.iter().map(|g| g.to_string()).collect();
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::super::figures::tests_support::figures;
    use super::tests_support::plan_of;
    use super::*;

    #[test]
    fn schedule_alternates_and_the_files_name_every_arm() {
        let mut plan = plan_of(&[("a", 0), ("b", 0), ("a", 1)], &["idle", "busy:1"]);
        plan.repeat = 2;
        assert_eq!(
            plan.schedule(),
            [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
        );
        assert_eq!(plan.baseline(1), 2);
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord x".into());
        assert_eq!(file.configurations[2].label, "a-1");
        assert_eq!(file.configurations[2].name.as_deref(), Some("a"));
        assert_eq!(file.configurations[2].group.as_deref(), Some("busy:1"));
        assert_eq!(file.configurations[0].settings[1], "heap=8m");
        assert!(file.configurations[0]
            .settings
            .contains(&"mutators=1".to_string()));
        let outcome = Outcome::of(vec![
            vec![figures(10.0, 100.0)],
            vec![figures(5.0, 100.0)],
            vec![figures(30.0, 50.0)],
        ]);
        let json = plan.configurations_json(&outcome);
        assert_eq!(json[1]["gc_ratio"], 0.5);
        assert_eq!(json[2]["gc_ratio"], 1.0);
        assert_eq!(json[2]["group"], "busy:1");
    }
}
