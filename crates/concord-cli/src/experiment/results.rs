//! The results directory of an experiment (`compare`, `sweep`, `ablation`, `os-bench`,
//! `sched-bench`): every run's summary and per-collection records, and `experiment.json`
//! saying what ran, so that any result can be reported again later (`concord report DIR`).
//!
//! ```text
//! DIR/experiment.json                    what ran: configurations, runs, status (this module's
//!                                        ExperimentFile, rewritten after every run)
//! DIR/runs/<n>-<label>.summary.json      the run's summary JSON (Summary::json())
//! DIR/runs/<n>-<label>.records.jsonl     one CollectionRecord per line
//! ```
//!
//! Every file is written under a temporary name in its own directory and renamed into place
//! ([`write_atomic`]), so the directory is consistent whenever the process stops: a file that
//! `experiment.json` names is complete.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The `format` of `experiment.json`.
pub const FORMAT: &str = "concord-results";
/// The `version` of `experiment.json`'s layout.
pub const VERSION: u32 = 1;
/// The name of the file that describes the experiment.
pub const EXPERIMENT_FILE: &str = "experiment.json";
/// The folder of the runs' files, relative to the results directory.
pub const RUNS_DIR: &str = "runs";

pub use concord::os::fs::write_atomic;

/// A label as a file-name part: ASCII letters, digits, `.`, `_` and `-` stay, `=` becomes `-`,
/// anything else `_` (`vanilla@gc-threads=2` → `vanilla_gc-threads-2`); no leading dot (no
/// hidden files, no `..`), never empty.
pub fn sanitize_label(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '_' | '-' => c,
            '=' => '-',
            _ => '_',
        })
        .collect();
    let s = s.trim_start_matches('.');
    if s.is_empty() {
        "run".to_string()
    } else {
        s.to_string()
    }
}

/// A moment in UTC, as a directory name (`2026-11-21T22-30-05`) and as RFC 3339
/// (`2026-11-21T22:30:05Z`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timestamp {
    /// File-name safe: `2026-11-21T22-30-05`.
    pub dir: String,
    /// RFC 3339: `2026-11-21T22:30:05Z`.
    pub rfc3339: String,
}

impl Timestamp {
    /// Now.
    pub fn now() -> Timestamp {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Timestamp::of_unix(secs)
    }

    /// `secs` seconds after 1970-01-01T00:00:00Z.
    pub fn of_unix(secs: u64) -> Timestamp {
        let days = (secs / 86_400) as i64;
        let rest = secs % 86_400;
        let (h, mi, s) = (rest / 3600, rest % 3600 / 60, rest % 60);
        let (y, m, d) = civil_from_days(days);
        Timestamp {
            dir: format!("{y:04}-{m:02}-{d:02}T{h:02}-{mi:02}-{s:02}"),
            rfc3339: format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z"),
        }
    }
}

/// The proleptic Gregorian date of `days` after 1970-01-01 (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The command line of this process, arguments separated by spaces, each quoted for a POSIX
/// shell where it needs it.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `arg` as a POSIX shell word: unchanged if it needs no quoting, else in single quotes.
fn shell_quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ',' | '=' | ':' | '@' | '+')
        });
    if plain {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The results directory of one experiment, with its `runs` folder.
#[derive(Clone, Debug)]
pub struct ResultsDir {
    /// The directory (as given, or `results/<timestamp>`).
    pub root: PathBuf,
}

impl ResultsDir {
    /// Creates the results directory and its `runs` folder: `out` if given, which must not
    /// exist or be an empty directory (a directory with files in it is refused, so results of
    /// two experiments never mix); else `results/<stamp>` in the current directory, or
    /// `results/<stamp>-2`, `-3`, … if that is taken.
    pub fn create(out: Option<&Path>, stamp: &Timestamp) -> Result<ResultsDir> {
        let root = match out {
            Some(dir) => {
                check_out(dir)?;
                fs::create_dir_all(dir)
                    .with_context(|| format!("--out: cannot create '{}'", dir.display()))?;
                dir.to_path_buf()
            }
            None => fresh_dir(Path::new("results"), &stamp.dir)?,
        };
        let runs = root.join(RUNS_DIR);
        fs::create_dir_all(&runs).with_context(|| format!("cannot create '{}'", runs.display()))?;
        Ok(ResultsDir { root })
    }

    /// The path of `relative` (as in `experiment.json`) in the directory.
    pub fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Writes `experiment.json` atomically.
    pub fn write_experiment(&self, experiment: &ExperimentFile) -> Result<()> {
        let path = self.root.join(EXPERIMENT_FILE);
        let mut text = serde_json::to_string_pretty(experiment)?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())
            .with_context(|| format!("cannot write '{}'", path.display()))
    }
}

/// Checks that `--out DIR` may be used: it does not exist, or it is an empty directory.
pub fn check_out(dir: &Path) -> Result<()> {
    match fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                bail!(
                    "--out: '{}' already exists and is not empty (results of two experiments \
                     are never mixed: give a new or empty directory, or leave --out out for \
                     results/<timestamp>/)",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() => bail!("--out: '{}' is not a directory", dir.display()),
        Err(e) => bail!("--out: cannot read '{}': {e}", dir.display()),
    }
}

/// Creates `base/name`, or `base/name-2`, `base/name-3`, … whichever does not exist yet.
fn fresh_dir(base: &Path, name: &str) -> Result<PathBuf> {
    fs::create_dir_all(base).with_context(|| format!("cannot create '{}'", base.display()))?;
    for i in 1..1000 {
        let dir = if i == 1 {
            base.join(name)
        } else {
            base.join(format!("{name}-{i}"))
        };
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => bail!("cannot create '{}': {e}", dir.display()),
        }
    }
    bail!(
        "cannot find a free results directory '{}-N' in '{}'",
        name,
        base.display()
    )
}

/// `experiment.json`: what the experiment is and every run so far. `concord report` reads it
/// back with the same types; fields that older directories lack take their defaults.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct ExperimentFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Always [`VERSION`].
    pub version: u32,
    /// The command that ran it: `compare`, `sweep`, `ablation`, `os-bench`, `sched-bench`;
    /// `concord report` draws the figures of its kind.
    pub kind: String,
    /// The workload's name.
    pub workload: String,
    /// The workload size, if one was given.
    pub size: Option<u32>,
    /// When the experiment started (UTC, RFC 3339).
    pub started: String,
    /// The command line.
    pub command: String,
    /// What a sweep varies; `None` for `compare`.
    pub vary: Option<VaryEntry>,
    /// Rounds: each runs every configuration once.
    pub repeat: u32,
    /// What the command chose for every configuration (`gc_threads`, `busy`, `usable_cpus`, …).
    pub parameters: serde_json::Map<String, serde_json::Value>,
    /// The configurations, in table order.
    pub configurations: Vec<ConfigurationEntry>,
    /// The runs so far, in the order they ran.
    pub runs: Vec<RunEntry>,
    /// Whether Ctrl-C stopped the experiment before every run had run.
    pub interrupted: bool,
    /// Whether every planned run has run (failed runs included).
    pub complete: bool,
    /// The papers' figure or table the experiment reproduces, when `concord paper ID` ran it;
    /// absent otherwise (and in directories written before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<PaperRecord>,
}

/// The catalogue entry (`concord paper`) an experiment reproduces, as `experiment.json`
/// records it, so that its report shows the paper's number, caption, status and reason.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PaperRecord {
    /// The entry's id: `000-fig10`.
    pub id: String,
    /// The paper's own number: `Figure 10`.
    pub number: String,
    /// The caption, in Concord's words.
    pub title: String,
    /// `reproduced`, `partial`, `needs-cpus` or `cannot`.
    pub status: String,
    /// Why the status is not `reproduced` (empty when it is).
    #[serde(default)]
    pub reason: String,
    /// The anchor of the report section that draws it (empty: none in particular).
    #[serde(default)]
    pub section: String,
}

impl Default for ExperimentFile {
    /// What a file that says nothing means: no runs, not interrupted, complete.
    fn default() -> Self {
        ExperimentFile {
            format: FORMAT.to_string(),
            version: VERSION,
            kind: String::new(),
            workload: String::new(),
            size: None,
            started: String::new(),
            command: String::new(),
            vary: None,
            repeat: 0,
            parameters: serde_json::Map::new(),
            configurations: Vec::new(),
            runs: Vec::new(),
            interrupted: false,
            complete: true,
            paper: None,
        }
    }
}

/// The `vary` of a sweep: `{"key": "gc-threads", "values": ["1", "2"]}`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct VaryEntry {
    /// `gc-threads`, `mutators` or `heap`.
    pub key: String,
    /// The values, as given.
    #[serde(default)]
    pub values: Vec<String>,
}

/// One configuration of `experiment.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfigurationEntry {
    /// Unique label (`vanilla`, `vanilla@gc-threads=2`, `vanilla (busy:1)`); runs name it.
    pub label: String,
    /// The row label in the command's table (`vanilla`), unique within its group.
    #[serde(default)]
    pub name: Option<String>,
    /// The title of its group where the experiment has several (`busy:1: 1 busy-loop thread
    /// during every run`); ratios are to the first configuration of the same group.
    #[serde(default)]
    pub group: Option<String>,
    /// The workload it runs.
    #[serde(default)]
    pub workload: Option<String>,
    /// Its preset.
    #[serde(default)]
    pub preset: Option<String>,
    /// Its value of the swept key; `None` for `compare`.
    #[serde(default, deserialize_with = "opt_string")]
    pub value: Option<String>,
    /// Every setting, `key=value`, in the order applied (later ones win); `mutators=N` and
    /// `rounds=N` are the workload's parameters.
    #[serde(default)]
    pub settings: Vec<String>,
    /// The load that ran during each run (`busy:2`), if any.
    #[serde(default)]
    pub interference: Option<String>,
    /// The simulated machine its runs were simulated on; absent for measured runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimEntry>,
}

/// The simulated machine of a simulated configuration (`--sim-cpus`): its figures are the
/// simulator's, not measurements.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SimEntry {
    /// The machine's shape (`xeon-2x10`, `4cpu-1node-smt-off`).
    pub machine: String,
    /// Logical CPUs.
    pub cpus: usize,
    /// Two hardware threads per core.
    pub smt: bool,
    /// NUMA nodes.
    pub nodes: usize,
    /// The scheduler model: `cfs` or `eevdf`.
    pub sched: String,
    /// The seed of the first round (round r: seed + r).
    pub seed: u64,
    /// Where the simulator's costs came from (`built-in`, or the calibration file).
    pub costs: String,
}

/// One run of `experiment.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunEntry {
    /// The label of its configuration.
    pub configuration: String,
    /// Its configuration's value of the swept key; `None` for `compare`.
    #[serde(default, deserialize_with = "opt_string")]
    pub value: Option<String>,
    /// The round, from 0.
    #[serde(default)]
    pub round: u32,
    /// Its summary file, relative to the results directory; `None` when the run produced no
    /// summary (the workload or the heap failed).
    #[serde(default)]
    pub summary: Option<String>,
    /// Its records file, relative to the results directory; `None` when no heap was built.
    #[serde(default)]
    pub records: Option<String>,
    /// `ok` or `failed`.
    #[serde(default)]
    pub status: String,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

impl RunEntry {
    /// Whether the run finished with a right result.
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// A value that may be a string, a number or null (`"value": "2"` or `"value": 2`).
fn opt_string<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "concord-results-{name}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_no_temporary_files() {
        let dir = scratch("atomic");
        let file = dir.join("experiment.json");
        write_atomic(&file, b"first").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"first");
        write_atomic(&file, b"second, longer").unwrap();
        assert_eq!(fs::read(&file).unwrap(), b"second, longer");
        assert_eq!(entries(&dir), ["experiment.json"]);
        // A directory in the way: the rename fails, the old content stays, no temporary file.
        let blocked = dir.join("blocked");
        fs::create_dir(blocked.join("x").parent().unwrap()).unwrap();
        fs::write(blocked.join("x"), b"keep").unwrap();
        assert!(write_atomic(&blocked, b"new").is_err());
        assert_eq!(entries(&dir), ["blocked", "experiment.json"]);
        // A missing directory: an error, nothing created.
        assert!(write_atomic(&dir.join("missing/file"), b"x").is_err());
        assert_eq!(entries(&dir), ["blocked", "experiment.json"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn labels_become_safe_file_names() {
        assert_eq!(sanitize_label("vanilla"), "vanilla");
        assert_eq!(
            sanitize_label("vanilla@gc-threads=2"),
            "vanilla_gc-threads-2"
        );
        assert_eq!(sanitize_label("optimized@heap=32m"), "optimized_heap-32m");
        assert_eq!(sanitize_label("vanilla#2"), "vanilla_2");
        assert_eq!(sanitize_label("a/b\\c d"), "a_b_c_d");
        assert_eq!(sanitize_label("../etc"), "_etc");
        assert_eq!(sanitize_label(".."), "run");
        assert_eq!(sanitize_label(""), "run");
        assert_eq!(sanitize_label("é"), "_");
    }

    #[test]
    fn timestamps() {
        assert_eq!(
            Timestamp::of_unix(0),
            Timestamp {
                dir: "1970-01-01T00-00-00".into(),
                rfc3339: "1970-01-01T00:00:00Z".into()
            }
        );
        // 2026-11-21T22:30:05Z
        let t = Timestamp::of_unix(1_795_300_205);
        assert_eq!(t.dir, "2026-11-21T22-30-05");
        assert_eq!(t.rfc3339, "2026-11-21T22:30:05Z");
        // A leap day.
        assert_eq!(Timestamp::of_unix(951_782_400).dir, "2000-02-29T00-00-00");
    }

    #[test]
    fn quoting_of_the_command_line() {
        assert_eq!(shell_quote("--vary"), "--vary");
        assert_eq!(shell_quote("gc-threads=1,2"), "gc-threads=1,2");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn out_dirs_must_be_new_or_empty() {
        let dir = scratch("out");
        let stamp = Timestamp::of_unix(0);
        // Missing: created, with runs/.
        let fresh = dir.join("a/b");
        let r = ResultsDir::create(Some(&fresh), &stamp).unwrap();
        assert!(r.path(RUNS_DIR).is_dir());
        // Empty: used.
        let empty = dir.join("empty");
        fs::create_dir(&empty).unwrap();
        ResultsDir::create(Some(&empty), &stamp).unwrap();
        // Not empty (e.g. an earlier experiment): refused, untouched.
        let err = ResultsDir::create(Some(&fresh), &stamp)
            .unwrap_err()
            .to_string();
        assert!(err.contains("already exists and is not empty"), "{err}");
        assert_eq!(entries(&fresh), [RUNS_DIR]);
        // A file: refused.
        let file = dir.join("file");
        fs::write(&file, b"x").unwrap();
        let err = check_out(&file).unwrap_err().to_string();
        assert!(err.contains("is not a directory"), "{err}");
        // Default names never collide.
        let base = dir.join("results");
        assert_eq!(fresh_dir(&base, "t").unwrap(), base.join("t"));
        assert_eq!(fresh_dir(&base, "t").unwrap(), base.join("t-2"));
        assert_eq!(fresh_dir(&base, "t").unwrap(), base.join("t-3"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
