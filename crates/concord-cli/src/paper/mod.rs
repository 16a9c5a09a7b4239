//! `concord paper`: the catalogue of every figure and table of the five papers this project
//! follows, each with the `concord` command that reproduces it here and an honest status.
//! `concord paper` lists them, `--json` prints them for tools, `--markdown` prints the guide's
//! tables, and `concord paper ID` runs one entry's command (or with `--quick` its small
//! version) by re-invoking this binary, passing `--repeat` and `--out` through and naming the
//! entry in [`ENTRY_ENV`], so that the results directory records which figure it reproduces.

mod catalogue;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use crate::console::{errln, outln};
use crate::experiment::results::PaperRecord;
use crate::experiment::simulated::SimArmFlags;
use crate::flags::{count_in, MAX_REPEAT};
pub use catalogue::CATALOGUE;

#[derive(Args, Debug)]
pub struct PaperArgs {
    /// An entry's id, e.g. 000-fig10 or 004-table4: run its command (without an id, list the
    /// catalogue)
    pub id: Option<String>,
    /// Print the catalogue as a JSON array (id, paper, number, title, shows, status, command,
    /// quick_command, reason)
    #[arg(long, conflicts_with_all = ["id", "markdown"])]
    pub json: bool,
    /// Print a Markdown table: `counts` (entries per status, per paper and in total: the
    /// README's) or `entries` (every entry with its command and reason: docs/papers.md's)
    #[arg(long, value_name = "TABLE", conflicts_with = "id")]
    pub markdown: Option<MarkdownTable>,
    /// Run the entry's small version instead: the same experiment with one round (unless
    /// --repeat is given), smaller workload sizes, shorter runs, fewer sweep points and only
    /// the arms the figure compares; it checks that the entry runs and what its report shows,
    /// in seconds, not the figure's numbers
    #[arg(long, requires = "id")]
    pub quick: bool,
    /// Runs of each configuration, passed to the entry's command as --repeat (1..=1000)
    #[arg(
        long,
        value_name = "N",
        requires = "id",
        value_parser = count_in(1, MAX_REPEAT),
        allow_negative_numbers = true
    )]
    pub repeat: Option<u32>,
    /// Results directory, passed to the entry's command as --out
    #[arg(long, value_name = "DIR", requires = "id")]
    pub out: Option<PathBuf>,
    /// Run the entry simulated (entries of compare, sweep, ablation and os-bench): the
    /// simulated machine and model, passed to the entry's command
    #[command(flatten)]
    pub sim: SimArmFlags,
}

/// The commands whose arms can be simulated (`--sim-cpus`).
const SIMULATED_COMMANDS: [&str; 4] = ["compare", "sweep", "ablation", "os-bench"];

/// The environment variable through which `concord paper ID` tells the experiment it runs
/// which entry it reproduces; the experiment records the entry in `experiment.json`.
pub const ENTRY_ENV: &str = "CONCORD_PAPER_ENTRY";

/// The tables `--markdown` prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MarkdownTable {
    /// Entries per status, per paper and in total.
    Counts,
    /// Every entry: id, number, title, status, command and reason.
    Entries,
}

/// How far Concord gets with one figure or table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Concord measures the same quantity the same way (shapes, not the paper's numbers).
    Reproduced,
    /// A related measurement, with the difference in the reason.
    Partial,
    /// The command runs, but the effect needs more CPUs than this machine has.
    NeedsCpus,
    /// Nothing here can reproduce it (a diagram, or hardware or software we do not have).
    Cannot,
}

impl Status {
    fn label(self) -> &'static str {
        match self {
            Status::Reproduced => "reproduced",
            Status::Partial => "partial",
            Status::NeedsCpus => "needs-cpus",
            Status::Cannot => "cannot",
        }
    }
}

/// One figure or table of a paper.
#[derive(Debug, Serialize)]
pub struct Entry {
    /// `NNN-figK` or `NNN-tableK` (`NNN` the paper's file number).
    pub id: &'static str,
    /// The paper's own number for it, e.g. `Figure 10` or `Table 4`.
    pub number: &'static str,
    /// The caption, in our words.
    pub title: &'static str,
    /// What it shows.
    pub shows: &'static str,
    pub status: Status,
    /// The arguments after `concord`, separated by spaces (empty for `cannot`).
    pub command: &'static str,
    /// Why the status is not `reproduced` (empty when it is).
    pub reason: &'static str,
    /// The anchor of the `concord report` section that draws it (`stealing`, `each-fix`, …);
    /// empty when its command writes no results directory.
    pub section: &'static str,
    /// The small version of `command` that `--quick` runs (empty for `cannot`).
    pub quick: &'static str,
}

impl Entry {
    /// The paper's file number, e.g. `000`.
    pub fn paper(&self) -> &'static str {
        self.id.split_once('-').map_or(self.id, |(paper, _)| paper)
    }

    /// The words of the command, or with `quick` of its small version.
    fn argv(&self, quick: bool) -> Vec<&'static str> {
        let command = if quick { self.quick } else { self.command };
        command.split_whitespace().collect()
    }

    /// Whether the entry's command takes `--repeat` and `--out` (the experiment commands do,
    /// `run` does not).
    fn takes_repeat_and_out(&self) -> bool {
        self.argv(false).first().is_some_and(|cmd| *cmd != "run")
    }

    /// What `experiment.json` records of the entry.
    pub fn record(&self) -> PaperRecord {
        PaperRecord {
            id: self.id.to_string(),
            number: self.number.to_string(),
            title: self.title.to_string(),
            status: self.status.label().to_string(),
            reason: self.reason.to_string(),
            section: self.section.to_string(),
        }
    }
}

/// The entry named by [`ENTRY_ENV`], if it is set: what an experiment records in its
/// `experiment.json`. An id that is not in the catalogue is an error naming the variable.
pub fn entry_from_env() -> Result<Option<PaperRecord>> {
    match std::env::var(ENTRY_ENV) {
        Ok(id) => find(&id)
            .map(|e| Some(e.record()))
            .with_context(|| ENTRY_ENV),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => bail!("{ENTRY_ENV} is not UTF-8"),
    }
}

/// What `--json` prints for each entry.
#[derive(Serialize)]
struct JsonEntry<'a> {
    id: &'a str,
    paper: &'a str,
    number: &'a str,
    title: &'a str,
    shows: &'a str,
    status: Status,
    command: Option<String>,
    quick_command: Option<String>,
    reason: &'a str,
}

pub fn run(args: PaperArgs) -> Result<ExitCode> {
    let Some(id) = args.id else {
        if let Some(flag) = args.sim.to_args().first() {
            bail!("{flag} needs an entry id: it runs that entry's experiment simulated");
        }
        crate::stop_if_checking_args("parsed");
        if args.json {
            print_json()?;
        } else if let Some(table) = args.markdown {
            outln!("{}", markdown(table).trim_end())?;
        } else {
            print_table()?;
        }
        return Ok(ExitCode::SUCCESS);
    };
    let entry = find(&id)?;
    if entry.status == Status::Cannot {
        bail!(
            "{} ({}) cannot be reproduced here: {}",
            entry.id,
            entry.number,
            entry.reason
        );
    }
    let mut argv: Vec<OsString> = entry
        .argv(args.quick)
        .into_iter()
        .map(OsString::from)
        .collect();
    if !entry.takes_repeat_and_out() && (args.repeat.is_some() || args.out.is_some()) {
        bail!(
            "{}'s command (concord {}) takes neither --repeat nor --out",
            entry.id,
            entry.command
        );
    }
    if args.sim.any() {
        let command = entry.argv(false).first().copied().unwrap_or_default();
        if !SIMULATED_COMMANDS.contains(&command) {
            bail!(
                "{}'s command (concord {}) cannot run simulated (allowed: entries of {})",
                entry.id,
                entry.command,
                SIMULATED_COMMANDS.join(", ")
            );
        }
        // Checked here, before the entry starts: the machine, the model, the costs file.
        args.sim.check()?;
        argv.extend(args.sim.to_args().into_iter().map(OsString::from));
    }
    // The small version runs one round unless told otherwise.
    let repeat = args
        .repeat
        .or((args.quick && entry.takes_repeat_and_out()).then_some(1));
    if let Some(repeat) = repeat {
        argv.extend(["--repeat".into(), repeat.to_string().into()]);
    }
    if let Some(out) = args.out {
        argv.push("--out".into());
        argv.push(out.into_os_string());
    }
    errln!(
        "concord paper: {} {}: {} [{}]",
        paper_name(entry.paper()),
        entry.number,
        entry.title,
        entry.status.label()
    );
    if !entry.reason.is_empty() {
        errln!("concord paper: note: {}", entry.reason);
    }
    errln!("concord paper: running: concord {}", shown(&argv));
    let exe = std::env::current_exe().context("finding the concord binary to run the entry")?;
    let mut command = std::process::Command::new(exe);
    command.args(&argv).env(ENTRY_ENV, entry.id);
    // In a process group of its own, so that a terminal's Ctrl-C reaches it once, forwarded
    // by this process (a second signal would make it quit at once, without its summary); it
    // gets SIGTERM if this process is killed.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let (status, _) = crate::jvm::launch::run_command_forwarding_signals(command).map_err(|e| {
        crate::RunFailed::wrap(anyhow::anyhow!("running concord {}: {e:#}", shown(&argv)))
    })?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Ended by a signal: the shell's 128 + signal convention.
        None => {
            use std::os::unix::process::ExitStatusExt;
            let signal = status.signal().unwrap_or(0);
            ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))
        }
    })
}

fn shown(argv: &[OsString]) -> String {
    argv.iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The entry with `id`, or an error listing the known ids.
fn find(id: &str) -> Result<&'static Entry> {
    CATALOGUE.iter().find(|e| e.id == id).ok_or_else(|| {
        let known: Vec<&str> = CATALOGUE.iter().map(|e| e.id).collect();
        anyhow::anyhow!("unknown paper entry '{id}'; known: {}", known.join(", "))
    })
}

fn paper_name(paper: &str) -> &'static str {
    match paper {
        "000" => "Suo et al., EuroSys 2018",
        "001" => "Qian et al., VEE 2016",
        "002" => "Zhuang et al., LinkedIn",
        "003" => "slides of Suo et al.'s talk",
        "004" => "Gidra et al., ASPLOS 2013",
        _ => "unknown paper",
    }
}

fn print_table() -> Result<()> {
    outln!("{:<12} {:<11} {:<10} title", "id", "status", "number")?;
    for e in CATALOGUE {
        outln!(
            "{:<12} {:<11} {:<10} {}",
            e.id,
            e.status.label(),
            e.number,
            e.title
        )?;
    }
    outln!(
        "\n`concord paper ID` runs an entry (`--quick`: its small version); `concord paper --json` \
         adds commands and reasons; `--markdown counts|entries` prints the guide's tables."
    )?;
    Ok(())
}

fn print_json() -> Result<()> {
    let entries: Vec<JsonEntry> = CATALOGUE
        .iter()
        .map(|e| JsonEntry {
            id: e.id,
            paper: e.paper(),
            number: e.number,
            title: e.title,
            shows: e.shows,
            status: e.status,
            command: (!e.command.is_empty()).then(|| format!("concord {}", e.command)),
            quick_command: (!e.quick.is_empty()).then(|| format!("concord {}", e.quick)),
            reason: e.reason,
        })
        .collect();
    outln!("{}", serde_json::to_string_pretty(&entries)?)?;
    Ok(())
}

/// The Markdown table `table`, as the README (`counts`) and docs/papers.md (`entries`) carry
/// it between their `<!-- catalogue: … -->` markers.
fn markdown(table: MarkdownTable) -> String {
    const STATUSES: [Status; 4] = [
        Status::Reproduced,
        Status::Partial,
        Status::NeedsCpus,
        Status::Cannot,
    ];
    let mut md = String::new();
    match table {
        MarkdownTable::Counts => {
            md.push_str("| paper | reproduced | partial | needs-cpus | cannot | entries |\n");
            md.push_str("| --- | ---: | ---: | ---: | ---: | ---: |\n");
            let mut papers: Vec<&str> = CATALOGUE.iter().map(Entry::paper).collect();
            papers.sort_unstable();
            papers.dedup();
            let row = |md: &mut String, name: &str, of: &dyn Fn(&Entry) -> bool| {
                let count = |s: Status| CATALOGUE.iter().filter(|e| of(e) && e.status == s).count();
                let counts: Vec<String> = STATUSES.iter().map(|s| count(*s).to_string()).collect();
                let total = CATALOGUE.iter().filter(|e| of(e)).count();
                md.push_str(&format!("| {name} | {} | {total} |\n", counts.join(" | ")));
            };
            for paper in papers {
                let name = format!("{paper} ({})", paper_name(paper));
                row(&mut md, &name, &|e: &Entry| e.paper() == paper);
            }
            row(&mut md, "**total**", &|_: &Entry| true);
        }
        MarkdownTable::Entries => {
            md.push_str("| id | number | title | status | command | reason |\n");
            md.push_str("| --- | --- | --- | --- | --- | --- |\n");
            for e in CATALOGUE {
                let command = if e.command.is_empty() {
                    String::new()
                } else {
                    format!("`concord {}`", e.command)
                };
                let cells = [
                    e.id.to_string(),
                    e.number.to_string(),
                    e.title.to_string(),
                    e.status.label().to_string(),
                    command,
                    e.reason.to_string(),
                ];
                let cells: Vec<String> = cells.iter().map(|c| c.replace('|', "\\|")).collect();
                md.push_str(&format!("| {} |\n", cells.join(" | ")));
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn well_formed(id: &str) -> bool {
        let Some((paper, item)) = id.split_once('-') else {
            return false;
        };
        let numbered = |prefix: &str| {
            item.strip_prefix(prefix)
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        };
        paper.len() == 3
            && paper.bytes().all(|b| b.is_ascii_digit())
            && (numbered("fig") || numbered("table") || paper == "003")
    }

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for e in CATALOGUE {
            assert!(well_formed(e.id), "{} is not NNN-figK / NNN-tableK", e.id);
            assert!(seen.insert(e.id), "{} appears twice", e.id);
        }
        assert!(!well_formed("000-fig") && !well_formed("00-fig1") && !well_formed("000-graph1"));
    }

    #[test]
    fn every_status_is_explained_and_every_runnable_entry_has_a_command() {
        for e in CATALOGUE {
            assert_eq!(e.command.is_empty(), e.status == Status::Cannot, "{}", e.id);
            assert_eq!(
                e.reason.is_empty(),
                e.status == Status::Reproduced,
                "{}",
                e.id
            );
            assert!(
                !e.title.is_empty() && !e.shows.is_empty() && !e.number.is_empty(),
                "{}",
                e.id
            );
        }
    }

    #[test]
    fn repeat_and_out_are_passed_only_to_experiment_commands() {
        let run = CATALOGUE
            .iter()
            .find(|e| e.command.starts_with("run "))
            .unwrap();
        assert!(!run.takes_repeat_and_out());
        let sweep = CATALOGUE
            .iter()
            .find(|e| e.command.starts_with("sweep "))
            .unwrap();
        assert!(sweep.takes_repeat_and_out());
    }

    /// The report sections an entry may name (`page.rs` and `kinds.rs` draw them).
    const SECTIONS: [&str; 16] = [
        "summary",
        "task-distribution",
        "cpu-heatmap",
        "gc-time-breakdown",
        "stealing",
        "scalability",
        "each-fix",
        "pause-series",
        "pauses-over",
        "interference",
        "numa",
        "lifespans",
        "policy-times",
        "placement-speedup",
        "placement-imbalance",
        "monitor",
    ];

    #[test]
    fn every_quick_version_is_the_same_command_and_names_a_section_of_its_report() {
        for e in CATALOGUE {
            assert_eq!(e.quick.is_empty(), e.command.is_empty(), "{}", e.id);
            if e.command.is_empty() {
                continue;
            }
            // Same subcommand and, where it names one, the same workload.
            let (quick, full) = (e.argv(true), e.argv(false));
            let workload = |argv: &[&'static str]| -> Option<&'static str> {
                argv.get(1).filter(|w| !w.starts_with("--")).copied()
            };
            assert_eq!(quick[0], full[0], "{}", e.id);
            assert_eq!(workload(&quick), workload(&full), "{}", e.id);
            assert!(!e.quick.contains("--repeat") && !e.quick.contains("--out"));
            if e.takes_repeat_and_out() {
                assert!(SECTIONS.contains(&e.section), "{}: {}", e.id, e.section);
            } else {
                assert!(e.section.is_empty(), "{}", e.id);
            }
        }
    }

    #[test]
    fn the_entry_variable_is_not_taken_for_configuration() {
        assert!(concord::config::NON_CONFIG_ENV_VARS.contains(&ENTRY_ENV));
    }

    #[test]
    fn the_counts_table_adds_up() {
        let counts = markdown(MarkdownTable::Counts);
        let total = counts.lines().last().unwrap();
        let cells: Vec<usize> = total
            .split('|')
            .filter_map(|c| c.trim().parse().ok())
            .collect();
        assert_eq!(cells.len(), 5, "{total}");
        assert_eq!(cells[..4].iter().sum::<usize>(), cells[4]);
        assert_eq!(cells[4], CATALOGUE.len());
        let reproduced = CATALOGUE
            .iter()
            .filter(|e| e.status == Status::Reproduced)
            .count();
        assert_eq!(cells[0], reproduced);
        let entries = markdown(MarkdownTable::Entries);
        assert_eq!(entries.lines().count(), CATALOGUE.len() + 2);
        assert!(entries.contains("| 000-fig10 | Figure 10 | Overall and GC time gains"));
    }

    #[test]
    fn an_unknown_id_lists_the_known_ones() {
        let message = find("000-fig99").unwrap_err().to_string();
        assert!(
            message.contains("000-fig99") && message.contains("004-table4"),
            "{message}"
        );
    }
}
