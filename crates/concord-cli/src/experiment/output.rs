//! What an executed plan prints besides its table: the JSON of the outcome (every
//! configuration with its runs, medians, ratios and the workload's details) and the lines after
//! the table (workload results, failed runs, an interruption, where the results are).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::engine::Executed;
use super::figures::{median, ratio, Figures};
use super::plan::Plan;
use super::results::ResultsDir;

/// The ratio of every figure of `m` to the same figure of `base` (0 where `base` is 0).
fn ratios(m: &Figures, base: &Figures) -> Value {
    let (Ok(Value::Object(m)), Ok(Value::Object(base))) =
        (serde_json::to_value(m), serde_json::to_value(base))
    else {
        return Value::Null;
    };
    let ratios: Map<String, Value> = m
        .iter()
        .filter_map(|(k, v)| {
            let (a, b) = (v.as_f64()?, base.get(k)?.as_f64()?);
            Some((k.clone(), json!(ratio(a, b))))
        })
        .collect();
    Value::Object(ratios)
}

/// The medians of the details whose values are numbers in every run that has them.
pub fn numeric_detail_medians(runs: &[Vec<(String, String)>]) -> BTreeMap<String, f64> {
    let mut values: BTreeMap<String, Option<Vec<f64>>> = BTreeMap::new();
    for (k, v) in runs.iter().flatten() {
        let slot = values.entry(k.clone()).or_insert_with(|| Some(Vec::new()));
        match (slot.as_mut(), v.trim().parse::<f64>()) {
            (Some(list), Ok(x)) if x.is_finite() => list.push(x),
            _ => *slot = None,
        }
    }
    values
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, median(v))))
        .collect()
}

/// The JSON of an executed plan: the command's parameters, what ran, every configuration with
/// its runs, medians, ratios (of every figure) to the first configuration of its group and the
/// workload's own result details, every run as in `experiment.json`, and whether it is
/// complete.
pub fn outcome_json(plan: &Plan, executed: &Executed, dir: &ResultsDir) -> Value {
    let mut configurations = plan.configurations_json(&executed.outcome);
    let medians = &executed.outcome.medians;
    for (i, c) in configurations.iter_mut().enumerate() {
        let arm = &plan.arms[i];
        let base = plan.baseline(arm.group);
        c["preset"] = json!(arm.preset);
        c["value"] = json!(arm.value);
        c["what"] = json!(arm.what);
        c["ratios"] = ratios(&medians[i], &medians[base]);
        c["details"] = executed.details[i]
            .iter()
            .map(|run| {
                run.iter()
                    .map(|(k, v)| (k.clone(), json!(v)))
                    .collect::<Map<String, Value>>()
                    .into()
            })
            .collect::<Vec<Value>>()
            .into();
        c["details_median"] = json!(numeric_detail_medians(&executed.details[i]));
    }
    let file = &executed.file;
    let mut out = plan.parameters.clone();
    for (k, v) in [
        ("kind", json!(plan.kind)),
        ("workload", json!(plan.workload)),
        ("size", json!(plan.size)),
        ("repeat", json!(plan.repeat)),
        ("vary", json!(plan.vary)),
        ("out", json!(dir.root.display().to_string())),
        ("configurations", json!(configurations)),
        ("runs", json!(file.runs)),
        ("failed_runs", json!(executed.failed().len())),
        ("interrupted", json!(file.interrupted)),
        ("complete", json!(file.complete)),
        ("write_failure", json!(executed.write_failure)),
    ] {
        out.insert(k.to_string(), v);
    }
    Value::Object(out)
}

/// The lines after a table: numeric workload details, failures, an interruption, and where
/// the results are (and that they are incomplete when the directory could not be written).
pub fn epilogue(plan: &Plan, executed: &Executed, dir: &ResultsDir) -> String {
    let mut s = String::new();
    let width = plan
        .arms
        .iter()
        .map(|a| a.name().chars().count())
        .max()
        .unwrap_or(0);
    let mut details_header = false;
    for (i, arm) in plan.arms.iter().enumerate() {
        let medians = numeric_detail_medians(&executed.details[i]);
        if medians.is_empty() {
            continue;
        }
        if !details_header {
            let _ = writeln!(s, "workload results (medians):");
            details_header = true;
        }
        let list: Vec<String> = medians.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(s, "  {:<width$}  {}", arm.name(), list.join(", "));
    }
    let failed = executed.failed();
    if !failed.is_empty() {
        let _ = writeln!(
            s,
            "{} of {} runs FAILED:",
            failed.len(),
            executed.file.runs.len()
        );
        for (i, run) in failed {
            let _ = writeln!(
                s,
                "  run {} ({}, round {}): {}",
                i + 1,
                run.configuration,
                run.round + 1,
                run.error.as_deref().unwrap_or("failed")
            );
        }
    }
    if executed.file.interrupted {
        let _ = writeln!(
            s,
            "interrupted after {} of {} runs: the table shows the runs finished so far",
            executed.file.runs.len(),
            plan.schedule().len()
        );
    }
    let root = dir.root.display();
    if executed.write_failure.is_some() {
        let _ = writeln!(
            s,
            "stopped after {} of {} runs: the results directory could not be written (see the \
             error); what it holds is in {root}; see: concord report {root}",
            executed.file.runs.len(),
            plan.schedule().len()
        );
    } else {
        let _ = writeln!(s, "results written to {root}; see: concord report {root}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_details_get_medians() {
        let run = |v: &str, w: &str| {
            vec![
                ("latency_p99_ms".to_string(), v.to_string()),
                ("note".to_string(), w.to_string()),
            ]
        };
        let m = numeric_detail_medians(&[run("3", "x"), run("1", "2"), run("2", "y")]);
        assert_eq!(m.len(), 1);
        assert_eq!(m["latency_p99_ms"], 2.0);
    }
}
