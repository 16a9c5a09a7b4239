//! `concord report DIR`: turn a results directory written by a bench command (`compare`,
//! `sweep`, `ablation`, `os-bench`, `sched-bench`) into one self-contained HTML page (inline CSS
//! and SVG, nothing fetched), with a table of medians and the papers' pictures: task
//! distribution per GC thread (000 Fig. 4a / 8b), GC thread × CPU heatmap (Fig. 4b / 8a), pause
//! timeline, GC time breakdown (Fig. 6), steal attempts and failure rate (Fig. 9), the
//! task-manager monitor's events (Fig. 5); for sweeps, scalability curves (Fig. 3c / 12); and
//! the figures of the experiment's kind (`kinds`: 000 Fig. 10 for ablation, interference per
//! affinity mode for os-bench, 001's lifespan histograms for sched-bench). A directory that
//! `concord paper ID` wrote names its catalogue entry: the header says which figure it
//! reproduces, and the section that draws it is headed with the paper's number and caption,
//! the entry's status and its reason.
//!
//! `model` reads the directory, `plots` draws, `page` and `kinds` write the HTML. The page is written to a
//! temporary file next to the output and renamed into place, so a reader never sees half a page,
//! and an output that names one of the results (the files the page is made from, anything in
//! `runs/`) is refused before anything is written.

mod kinds;
mod model;
pub(crate) mod page;
pub(crate) mod plots;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;

use crate::console::{errln, outln};

/// Arguments of `concord report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Results directory written by compare, sweep, ablation, os-bench, sched-bench or pause-bench (holds
    /// experiment.json)
    pub dir: PathBuf,
    /// Where to write the HTML page [default: DIR/report.html]
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Read the results directory `dir` and write its page to `output` (default
/// `DIR/report.html`). Returns where the page is and what was read.
fn write(dir: &Path, output: Option<&Path>) -> anyhow::Result<(PathBuf, model::Experiment)> {
    if let Some(path) = output {
        check_output(path)?;
    }
    let exp = model::Experiment::load(dir)?;
    let output = output.map_or_else(|| dir.join("report.html"), Path::to_path_buf);
    check_not_a_result(&output, &exp)?;
    let html = page::render(&exp)?;
    crate::experiment::results::write_atomic(&output, html.as_bytes())
        .with_context(|| format!("cannot write {}", output.display()))
        .map_err(crate::RunFailed::wrap)?;
    Ok((output, exp))
}

/// Checks `--output` before anything is read or written (bad input): its directory must
/// exist, and the path, if it exists, must be a regular file: the page is renamed into place,
/// which would replace a device (`-o /dev/full`) or a directory entry of another kind. A write
/// that fails after that is a failed run.
pub(crate) fn check_output(path: &Path) -> anyhow::Result<()> {
    check_output_file("--output", path)
}

/// [`check_output`] for the flag `flag` of any command that writes a page.
pub(crate) fn check_output_file(flag: &str, path: &Path) -> anyhow::Result<()> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        anyhow::bail!(
            "{flag}: cannot write {}: {} is not a directory",
            path.display(),
            parent.display()
        );
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() => anyhow::bail!(
            "{flag}: {} exists and is not a regular file (the page replaces the file it is \
             written to)",
            path.display()
        ),
        _ => Ok(()),
    }
}

/// Refuses (bad input) an output that names one of the results: `experiment.json`, a run's
/// summary or records, a file in `runs/`, also through a symbolic or hard link. The page would
/// take its place, and the directory could not be read again.
fn check_not_a_result(output: &Path, exp: &model::Experiment) -> anyhow::Result<()> {
    let results = exp.results_files();
    if let Some(input) = results
        .into_iter()
        .find(|i| concord::config::same_file(output, i))
    {
        let through = if input == output {
            String::new()
        } else {
            format!(" (the same file as {})", input.display())
        };
        anyhow::bail!(
            "--output: {}{through} is one of the results in {}; the page would replace it \
             (write the page elsewhere, e.g. {})",
            output.display(),
            exp.dir.display(),
            exp.dir.join("report.html").display()
        );
    }
    Ok(())
}

/// For the bench commands: write `DIR/report.html` now and say where it is, or why not (a
/// report that cannot be written does not fail the experiment; `concord report DIR` retries).
pub fn after_experiment(dir: &Path) -> String {
    match write(dir, None) {
        Ok((page, _)) => format!("report: {} (open it in a browser)\n", page.display()),
        Err(e) => format!(
            "concord: the report could not be written ({e:#}); try: concord report {}\n",
            dir.display()
        ),
    }
}

/// Read the results directory, write the page, say where it is.
pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let (output, exp) = write(&args.dir, args.output.as_deref())?;
    // What the page's "Read with care" box says, also where a script or a person at the
    // terminal sees it without opening the page.
    for note in &exp.notes {
        errln!("concord report: warning: {note}");
    }
    let failed = exp.failed_runs().count();
    outln!(
        "concord report: wrote {} ({} configuration{}, {} run{}{}{})",
        output.display(),
        exp.configurations.len(),
        if exp.configurations.len() == 1 {
            ""
        } else {
            "s"
        },
        exp.runs.len(),
        if exp.runs.len() == 1 { "" } else { "s" },
        if failed > 0 {
            format!(", {failed} failed")
        } else {
            String::new()
        },
        if exp.notes.is_empty() {
            String::new()
        } else {
            format!(", {} note(s) on the page", exp.notes.len())
        }
    )?;
    Ok(ExitCode::SUCCESS)
}
