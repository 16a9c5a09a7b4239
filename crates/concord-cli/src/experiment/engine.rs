//! The loop that runs a plan: every arm once per round, each run through its arm's
//! [`Runner`](super::runner::Runner) with the arm's interference load around it (a simulated
//! arm's runner puts it on the simulated machine instead); after every
//! run its summary and records go into the results directory and `experiment.json` is
//! rewritten, so the directory is consistent whenever the process stops. A failed run is
//! recorded and the experiment goes on; a stop request (Ctrl-C, SIGTERM) ends it after the
//! current run; a file of the results directory that cannot be written (a full disk) ends it
//! too, saying what was lost (no further run could be kept).

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result};
use serde_json::json;

use super::figures::{Figures, Outcome};
use super::plan::Plan;
use super::results::{
    write_atomic, ExperimentFile, ResultsDir, RunEntry, EXPERIMENT_FILE, RUNS_DIR,
};
use super::runner::{RunFiles, RunResult};
use crate::interference::Interference;
use crate::RunFailed;

/// What happened to one run, for progress reports.
pub struct RunEvent<'a> {
    /// The run's number, from 1.
    pub n: usize,
    /// How many runs the experiment plans.
    pub total: usize,
    /// The arm's name.
    pub name: String,
    /// The round, from 0.
    pub round: u32,
    /// `None` when the run is about to start; then its summary line, or why it failed.
    pub result: Option<std::result::Result<String, &'a str>>,
}

/// The runs of an executed plan.
pub struct Executed {
    /// Figures and medians per arm (runs without a result are left out).
    pub outcome: Outcome,
    /// `experiment.json` as last written.
    pub file: ExperimentFile,
    /// Per arm, per run with a result: the workload's own result details.
    pub details: Vec<Vec<Vec<(String, String)>>>,
    /// What could not be written to the results directory and what that lost, when a write
    /// failed after the first run started: the experiment stopped there.
    pub write_failure: Option<String>,
}

impl Executed {
    /// The runs that failed.
    pub fn failed(&self) -> Vec<(usize, &RunEntry)> {
        self.file
            .runs
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.ok())
            .collect()
    }

    /// The exit status: 128 + the signal if interrupted (130 for Ctrl-C, 143 for SIGTERM),
    /// else 1 if a run failed or the results could not be written, else success.
    pub fn exit_code(&self) -> ExitCode {
        if self.file.interrupted {
            crate::interrupt::exit_code()
        } else if self.failed().is_empty() && self.write_failure.is_none() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    }
}

/// Runs the arm's runner once with its interference load running meanwhile.
fn run_arm(
    load: Option<Interference>,
    run: impl FnOnce() -> Result<RunResult>,
) -> Result<RunResult> {
    let active = load.map(Interference::start).transpose()?;
    let result = run();
    if let Some(active) = active {
        active.stop();
    }
    let mut result = result?;
    if let Some(load) = load {
        result.summary["interference"] =
            json!(format!("{load} ({} in this process)", load.describe()));
    }
    Ok(result)
}

/// Runs `plan` (every arm once per round, `repeat` rounds), writing each run's summary and
/// records into `dir` and `file` (as `experiment.json`) after every run. Before each run it
/// looks at `stop`: once set, no further run starts, and the file says `interrupted`. A run
/// that fails (an error, a wrong checksum, a failed verification) is recorded as `failed`, and
/// the experiment goes on. A run's summary or `experiment.json` that cannot be written stops
/// the experiment after that run ([`Executed::write_failure`] says what was lost); only the
/// first `experiment.json`, before any run, is an error (a [`RunFailed`]). `report` hears
/// about every run before and after it.
pub fn execute(
    plan: &Plan,
    dir: &ResultsDir,
    mut file: ExperimentFile,
    stop: &AtomicBool,
    report: &mut dyn FnMut(&RunEvent),
) -> Result<Executed> {
    let arms = &plan.arms;
    let schedule = plan.schedule();
    let total = schedule.len();
    let digits = total.to_string().len().max(3);
    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); arms.len()];
    let mut details: Vec<Vec<Vec<(String, String)>>> = vec![Vec::new(); arms.len()];
    let mut write_failure = None;
    // Once the results directory exists, a file of it that cannot be written is a failed run
    // (exit 1), not bad input.
    dir.write_experiment(&file).map_err(RunFailed::wrap)?;
    for (i, &(round, a)) in schedule.iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            file.interrupted = true;
            break;
        }
        let arm = &arms[a];
        let n = i + 1;
        report(&RunEvent {
            n,
            total,
            name: arm.name(),
            round,
            result: None,
        });
        let stem = format!("{n:0digits$}-{}", plan.file_label(a));
        let summary_rel = format!("{RUNS_DIR}/{stem}.summary.json");
        let records_rel = format!("{RUNS_DIR}/{stem}.records.jsonl");
        // The heap writes the records beside their path and puts them in place when it
        // finishes: the file exists only when complete (or cut short by a failed write, which
        // fails the run).
        let files = RunFiles {
            records: dir.path(&records_rel),
            round,
        };
        // A simulated arm's load is busy loops on the simulated machine, in its runner.
        let result = match arm.sim {
            Some(_) => arm.runner.run(&files),
            None => run_arm(arm.interference, || arm.runner.run(&files)),
        };
        let records = files.records.exists().then_some(records_rel);
        let mut entry = RunEntry {
            configuration: arm.id.clone(),
            value: arm.value.clone(),
            round,
            summary: None,
            records,
            status: "ok".to_string(),
            error: None,
        };
        // What could not be written of this run; any of it loses the run.
        let mut write_errors = Vec::new();
        let mut measured = None;
        let line = match result {
            Ok(result) => match write_summary(&dir.path(&summary_rel), &result.summary) {
                Ok(()) => {
                    entry.summary = Some(summary_rel);
                    if let Some(problem) = result.problem {
                        entry.status = "failed".to_string();
                        entry.error = Some(problem);
                    } else {
                        // A run with a wrong result is recorded but not counted in the
                        // medians, as the report leaves it out too.
                        measured = Some((result.figures, result.details));
                    }
                    result.line
                }
                Err(e) => {
                    write_errors.push(format!("{e:#}"));
                    String::new()
                }
            },
            Err(e) => {
                entry.status = "failed".to_string();
                entry.error = Some(format!("{e:#}"));
                String::new()
            }
        };
        let problem = entry.error.clone();
        if !write_errors.is_empty() {
            lose(&mut entry, problem.as_deref(), dir, &stem, &write_errors);
        }
        file.runs.push(entry);
        let recorded = dir.write_experiment(&file);
        let entry = file.runs.last_mut().expect("just pushed");
        if let Err(e) = &recorded {
            write_errors.push(format!("{e:#}"));
            lose(entry, problem.as_deref(), dir, &stem, &write_errors);
        }
        if write_errors.is_empty() {
            if let Some((figures, run_details)) = measured {
                runs[a].push(figures);
                details[a].push(run_details);
            }
        }
        report(&RunEvent {
            n,
            total,
            name: arm.name(),
            round,
            result: Some(match &entry.error {
                Some(e) => Err(e.as_str()),
                None => Ok(line),
            }),
        });
        if !write_errors.is_empty() {
            let listed = match (recorded, n - 1) {
                (Ok(()), _) => format!("{EXPERIMENT_FILE} records it as failed"),
                (Err(_), 0) => format!("{EXPERIMENT_FILE} lists no run"),
                (Err(_), 1) => format!("{EXPERIMENT_FILE} lists only the run before it"),
                (Err(_), k) => format!("{EXPERIMENT_FILE} lists only the {k} runs before it"),
            };
            write_failure = Some(format!(
                "{}: run {n} ({}, round {}) is lost (its files are removed; {listed}); the \
                 experiment stopped after run {n} of {total}",
                write_errors.join("; "),
                arm.id,
                round + 1
            ));
            break;
        }
    }
    file.complete = file.runs.len() == total;
    if write_failure.is_none() {
        if let Err(e) = dir.write_experiment(&file) {
            write_failure = Some(format!(
                "{e:#}: {EXPERIMENT_FILE} lists every run that ran but not how the experiment \
                 ended"
            ));
        }
    }
    Ok(Executed {
        outcome: Outcome::of(runs),
        file,
        details,
        write_failure,
    })
}

/// Marks the run of `entry` lost to the `write_errors` of the results directory: failed (saying
/// `problem` too, what failed the run before, if anything), naming no file, and its files
/// (`runs/STEM.*`) removed, so that none of them is left looking like a result of a run the
/// directory does not record.
fn lose(
    entry: &mut RunEntry,
    problem: Option<&str>,
    dir: &ResultsDir,
    stem: &str,
    write_errors: &[String],
) {
    entry.status = "failed".to_string();
    let before = problem.map_or(String::new(), |p| format!("{p}; "));
    entry.error = Some(format!(
        "{before}{}: the run's results are lost",
        write_errors.join("; ")
    ));
    entry.summary = None;
    entry.records = None;
    let prefix = format!("{stem}.");
    if let Ok(files) = std::fs::read_dir(dir.path(RUNS_DIR)) {
        for file in files.flatten() {
            if file.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(file.path());
            }
        }
    }
}

/// Writes a run's summary JSON to `path` atomically.
fn write_summary(path: &Path, summary: &serde_json::Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(summary)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
        .with_context(|| format!("cannot write '{}'", path.display()))
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;

    use serde_json::Value;

    use super::*;
    use crate::experiment::output::epilogue;
    use crate::experiment::plan::tests_support::plan_of;
    use crate::experiment::results::Timestamp;
    use crate::experiment::runner::Runner;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("concord-engine-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn read_json(path: &Path) -> Value {
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// A runner that always fails, as a runner of another kind might.
    struct Failing;

    impl Runner for Failing {
        fn run(&self, _files: &RunFiles) -> Result<RunResult> {
            anyhow::bail!("the JVM exited with status 1")
        }
    }

    #[test]
    fn an_experiment_file_that_cannot_be_written_is_a_failed_run() {
        let plan = plan_of(&[("a", 0)], &[""]);
        let out = scratch("unwritable");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord compare".into());
        // A directory where experiment.json goes: the first write fails.
        std::fs::create_dir(out.join("experiment.json")).unwrap();
        let err = execute(&plan, &dir, file, &AtomicBool::new(false), &mut |_| {})
            .err()
            .expect("the write fails");
        assert!(err.downcast_ref::<RunFailed>().is_some(), "{err:#}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    /// A runner that, while its inner runner runs, puts a directory where `experiment.json`
    /// goes (as a disk that fills up during the run would make its next write fail).
    struct BlockingTheIndex(Arc<dyn Runner>);

    impl Runner for BlockingTheIndex {
        fn run(&self, files: &RunFiles) -> Result<RunResult> {
            let root = files.records.parent().unwrap().parent().unwrap();
            std::fs::remove_file(root.join(EXPERIMENT_FILE))?;
            std::fs::create_dir(root.join(EXPERIMENT_FILE))?;
            self.0.run(files)
        }
    }

    #[test]
    fn a_summary_that_cannot_be_written_stops_the_experiment_and_says_what_was_lost() {
        let mut plan = plan_of(&[("a", 0), ("b", 0)], &[""]);
        plan.repeat = 2;
        let out = scratch("summary-lost");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord compare".into());
        // A directory where the second run's summary goes: its write fails.
        std::fs::create_dir(out.join("runs/002-b-0.summary.json")).unwrap();
        let executed = execute(&plan, &dir, file, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let failure = executed.write_failure.as_deref().expect("a write failure");
        assert!(
            failure.starts_with("cannot write '") && failure.contains("002-b-0.summary.json"),
            "{failure}"
        );
        assert!(
            failure.contains(
                "run 2 (b-0, round 1) is lost (its files are removed; experiment.json records it \
                 as failed); the experiment stopped after run 2 of 4"
            ),
            "{failure}"
        );
        // Its records went with it.
        assert!(!out.join("runs/002-b-0.records.jsonl").exists());
        assert!(out.join("runs/001-a-0.records.jsonl").is_file());
        assert_eq!(executed.exit_code(), ExitCode::FAILURE);
        // The first run counts; the second is recorded as failed, in the file too.
        assert_eq!(executed.outcome.runs[0].len(), 1);
        let json = read_json(&out.join("experiment.json"));
        assert_eq!(json["complete"], false);
        let runs = json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 2);
        assert_eq!(runs[0]["status"], "ok");
        assert_eq!(runs[1]["status"], "failed");
        assert_eq!(runs[1]["summary"], Value::Null);
        assert_eq!(runs[1]["records"], Value::Null);
        assert!(
            runs[1]["error"]
                .as_str()
                .unwrap()
                .ends_with("the run's results are lost"),
            "{}",
            runs[1]
        );
        let text = epilogue(&plan, &executed, &dir);
        assert!(text.contains("stopped after 2 of 4 runs"), "{text}");
        assert!(!text.contains("results written to"), "{text}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_experiment_file_that_cannot_be_updated_stops_the_experiment_and_says_what_was_lost() {
        let mut plan = plan_of(&[("a", 0), ("b", 0)], &[""]);
        plan.arms[1].runner = Arc::new(BlockingTheIndex(plan.arms[1].runner.clone()));
        let out = scratch("index-lost");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord compare".into());
        let executed = execute(&plan, &dir, file, &AtomicBool::new(false), &mut |_| {}).unwrap();
        let failure = executed.write_failure.as_deref().expect("a write failure");
        assert!(failure.contains("experiment.json"), "{failure}");
        assert!(
            failure.contains(
                "run 2 (b-0, round 1) is lost (its files are removed; experiment.json lists only \
                 the run before it)"
            ),
            "{failure}"
        );
        assert_eq!(executed.exit_code(), ExitCode::FAILURE);
        assert_eq!(executed.file.runs.len(), 2);
        // The run measured, but nothing of it is recorded: not counted, its files removed.
        assert_eq!(executed.file.runs[1].status, "failed");
        assert_eq!(executed.outcome.runs[0].len(), 1);
        assert_eq!(executed.outcome.runs[1].len(), 0);
        let mut names: Vec<String> = std::fs::read_dir(out.join("runs"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["001-a-0.records.jsonl", "001-a-0.summary.json"]);
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn every_run_is_written_and_a_failed_run_does_not_stop_the_rest() {
        let mut plan = plan_of(&[("a", 0), ("b", 0)], &[""]);
        plan.repeat = 2;
        plan.arms[0].runner = Arc::new(Failing);
        let out = scratch("failed");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::of_unix(0), "concord compare".into());
        let stop = AtomicBool::new(false);
        let mut events = Vec::new();
        let executed = execute(&plan, &dir, file, &stop, &mut |e| {
            if let Some(result) = &e.result {
                events.push((e.n, e.total, result.is_ok()));
            }
        })
        .unwrap();
        assert_eq!(
            events,
            [(1, 4, false), (2, 4, true), (3, 4, false), (4, 4, true)]
        );
        assert_eq!(executed.outcome.runs[0].len(), 0);
        assert_eq!(executed.outcome.runs[1].len(), 2);
        assert_eq!(executed.failed().len(), 2);
        assert_eq!(executed.exit_code(), ExitCode::FAILURE);
        let json = read_json(&out.join("experiment.json"));
        assert_eq!(json["format"], "concord-results");
        assert_eq!(json["complete"], true);
        assert_eq!(json["interrupted"], false);
        let runs = json["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(runs[0]["status"], "failed");
        assert_eq!(runs[0]["summary"], Value::Null);
        assert!(
            runs[0]["error"]
                .as_str()
                .unwrap()
                .contains("exited with status 1"),
            "{}",
            runs[0]
        );
        assert_eq!(runs[1]["status"], "ok");
        assert_eq!(runs[1]["summary"], "runs/002-b-0.summary.json");
        assert_eq!(runs[3]["round"], 1);
        for r in runs {
            for key in ["summary", "records"] {
                if let Some(rel) = r[key].as_str() {
                    assert!(out.join(rel).is_file(), "{rel}");
                }
            }
        }
        let summary = read_json(&out.join("runs/002-b-0.summary.json"));
        assert_eq!(summary["preset"], "vanilla");
        // No temporary files are left.
        for e in std::fs::read_dir(out.join("runs")).unwrap() {
            let name = e.unwrap().file_name();
            assert!(!name.to_string_lossy().starts_with('.'), "{name:?}");
        }
        let text = epilogue(&plan, &executed, &dir);
        assert!(text.contains("2 of 4 runs FAILED"), "{text}");
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_interruption_stops_after_the_current_run_and_leaves_a_consistent_directory() {
        let mut plan = plan_of(&[("a", 0), ("b", 0)], &[""]);
        plan.repeat = 3;
        plan.arms[1].interference = Some(Interference::busy(1));
        let out = scratch("interrupted");
        let dir = ResultsDir::create(Some(&out), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::now(), "concord compare".into());
        let stop = AtomicBool::new(false);
        // The "Ctrl-C" comes during the third run.
        let executed = execute(&plan, &dir, file, &stop, &mut |e| {
            if e.n == 2 && e.result.is_some() {
                stop.store(true, Ordering::SeqCst);
            }
        })
        .unwrap();
        assert_eq!(executed.file.runs.len(), 2);
        assert_eq!(executed.exit_code(), ExitCode::from(130));
        let json = read_json(&out.join("experiment.json"));
        assert_eq!(json["interrupted"], true);
        assert_eq!(json["complete"], false);
        assert_eq!(json["runs"].as_array().unwrap().len(), 2);
        assert_eq!(executed.outcome.runs[0].len(), 1);
        let summary = read_json(&out.join("runs/002-b-0.summary.json"));
        assert_eq!(
            summary["interference"],
            "busy:1 (1 busy-loop thread in this process)"
        );
        let text = epilogue(&plan, &executed, &dir);
        assert!(text.contains("interrupted after 2 of 6 runs"), "{text}");
        assert!(text.contains("see: concord report"), "{text}");

        // Stopped before the first run: nothing ran, still a valid file.
        let out2 = scratch("interrupted-at-once");
        let dir2 = ResultsDir::create(Some(&out2), &Timestamp::now()).unwrap();
        let file = plan.experiment_file(&Timestamp::now(), String::new());
        let executed = execute(&plan, &dir2, file, &stop, &mut |_| {}).unwrap();
        assert!(executed.file.runs.is_empty() && executed.file.interrupted);
        std::fs::remove_dir_all(&out).unwrap();
        std::fs::remove_dir_all(&out2).unwrap();
    }
}
