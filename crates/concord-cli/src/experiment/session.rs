//! An experiment as the user sees it run: the results directory created, Ctrl-C caught (the
//! current run finishes, then the experiment stops and reports what it has), progress on
//! stderr (a bar with an ETA on a terminal, else one line per run), then the plan executed.

use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};

use super::engine::{execute, Executed, RunEvent};
use super::plan::Plan;
use super::results::{command_line, ResultsDir, Timestamp};
use crate::console::errln;
use crate::interrupt;

/// Progress on stderr: a bar with runs done / total and an ETA when stderr is a terminal,
/// else one plain line per run.
struct Progress {
    bar: Option<ProgressBar>,
    repeat: u32,
}

impl Progress {
    fn new(total: usize, repeat: u32) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let style = ProgressStyle::with_template(
                "[{elapsed_precise}] [{bar:30}] {pos}/{len} runs, ETA {eta} {wide_msg}",
            )
            .expect("a valid template")
            .progress_chars("=> ");
            let bar = ProgressBar::new(total as u64).with_style(style);
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        interrupt::set_bar(bar.clone());
        Progress { bar, repeat }
    }

    fn report(&self, event: &RunEvent) {
        let what = format!("{} (round {}/{})", event.name, event.round + 1, self.repeat);
        match (&self.bar, &event.result) {
            (Some(bar), None) => bar.set_message(format!("running {what}")),
            (Some(bar), Some(Ok(_))) => bar.inc(1),
            (Some(bar), Some(Err(e))) => {
                bar.inc(1);
                bar.println(format!("concord: run {} {what} FAILED: {e}", event.n));
            }
            (None, None) => {}
            (None, Some(Ok(line))) => {
                errln!("[{}/{}] {what}: {line}", event.n, event.total)
            }
            (None, Some(Err(e))) => {
                errln!("[{}/{}] {what}: FAILED: {e}", event.n, event.total)
            }
        }
    }

    fn finish(self) {
        interrupt::set_bar(None);
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Creates the results directory (`out`, else `results/<timestamp>`), runs `plan` with
/// progress on stderr and Ctrl-C handling, and returns the runs with the directory. When
/// `concord paper ID` started the experiment, `experiment.json` records the entry.
pub fn run_plan(plan: &Plan, out: Option<&Path>) -> Result<(Executed, ResultsDir)> {
    let paper = crate::paper::entry_from_env()?;
    crate::stop_if_checking_args("experiment planned, every configuration validated");
    let started = Timestamp::now();
    let dir = ResultsDir::create(out, &started)?;
    let mut file = plan.experiment_file(&started, command_line());
    file.paper = paper;
    interrupt::install("the current run finishes, then the experiment stops");
    let progress = Progress::new(plan.schedule().len(), plan.repeat);
    let executed = execute(plan, &dir, file, interrupt::flag(), &mut |e| {
        progress.report(e)
    });
    progress.finish();
    Ok((executed?, dir))
}
