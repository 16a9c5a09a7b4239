//! `mutator-sched profile:PATH` (001 Algorithm 1): if PATH holds a profile from an earlier run,
//! decide from how evenly the mutators' CPU time was spread ([`decide_from_profile`]): FIFO
//! when the work is spread evenly over many threads, CFS when a few threads do most of it.
//! Otherwise run under CFS, measure every mutator's CPU time while it is attached, and write
//! the profile when the scheduler finishes.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Member, SchedChoice, Shared, State};
use crate::os::{procfs, sched};

/// The `format` field of a profile file.
pub const PROFILE_FORMAT: &str = "concord-mutator-profile";

/// The profile file version this code reads and writes.
pub const PROFILE_VERSION: u32 = 1;

/// One mutator thread of a profiling run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadProfile {
    /// Kernel thread id during the profiling run (informational).
    pub tid: i32,
    /// Thread name (`comm`).
    pub name: String,
    /// CPU time (user + kernel) the thread used while attached as a mutator, in nanoseconds.
    pub cpu_ns: u64,
}

/// The file `profile:PATH` reads and writes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileFile {
    /// Always [`PROFILE_FORMAT`].
    pub format: String,
    /// Always [`PROFILE_VERSION`].
    pub version: u32,
    /// Usable CPUs of the profiling run.
    pub usable_cpus: usize,
    /// Wall time from the scheduler's creation to `finish`, in milliseconds.
    pub wall_ms: u64,
    /// One entry per mutator thread.
    pub threads: Vec<ThreadProfile>,
}

/// How the CPU time of a profile is spread over its threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkSpread {
    /// Fewer threads than [`ProfileRule::min_threads`]: not a many-threaded program.
    TooFewThreads,
    /// The threads used no measurable CPU time.
    NoWork,
    /// A few threads did most of the work (001 Fig. 10, first bar) → CFS.
    Concentrated,
    /// In between (001 Fig. 10, middle bar: both policies perform alike) → CFS, the default.
    Mixed,
    /// Work spread evenly over most threads (001 Fig. 10, last bar) → FIFO.
    Even,
}

/// The thresholds of [`decide_from_profile`].
///
/// The measure is the *evenness* of the CPU-time shares `p_i` of the `n` threads:
/// `evenness = (1 / Σ p_i²) / n`. `1 / Σ p_i²` (the inverse Simpson index) is the number of
/// equally busy threads that would give the same concentration, so evenness is the fraction of
/// the threads that effectively do the work: 1 when all do the same, `1/n` when one does all.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct ProfileRule {
    /// FIFO needs at least this many threads.
    pub min_threads: usize,
    /// Evenness at or above this is [`WorkSpread::Even`] → FIFO.
    pub even_at_least: f64,
    /// Evenness below this is [`WorkSpread::Concentrated`] → CFS; between the two is
    /// [`WorkSpread::Mixed`] → CFS.
    pub concentrated_below: f64,
}

impl Default for ProfileRule {
    fn default() -> Self {
        ProfileRule {
            min_threads: 4,
            even_at_least: 0.75,
            concentrated_below: 0.4,
        }
    }
}

/// What a profile says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProfileDecision {
    /// The policy the profile asks for.
    pub choice: SchedChoice,
    /// The class of the profile.
    pub spread: WorkSpread,
    /// Number of threads in the profile.
    pub threads: usize,
    /// Their total CPU time, in nanoseconds.
    pub total_cpu_ns: u64,
    /// `1 / Σ p_i²`: how many equally busy threads the profile amounts to.
    pub effective_threads: f64,
    /// `effective_threads / threads`, in `[1/threads, 1]` (0 when there is no work).
    pub evenness: f64,
}

impl ProfileDecision {
    /// A one-line explanation.
    pub fn describe(&self) -> String {
        let why = match self.spread {
            WorkSpread::TooFewThreads => "too few threads for FIFO to help".to_string(),
            WorkSpread::NoWork => "no measurable CPU time".to_string(),
            WorkSpread::Concentrated => "a few threads do most of the work".to_string(),
            WorkSpread::Mixed => "work is partly spread; both policies perform alike".to_string(),
            WorkSpread::Even => "work is spread evenly over the threads".to_string(),
        };
        format!(
            "{} threads, {:.1} effectively busy (evenness {:.2}): {why} → {}",
            self.threads, self.effective_threads, self.evenness, self.choice
        )
    }
}

/// 001 Algorithm 1's selection: FIFO when the profiled CPU time is spread evenly over many
/// threads, CFS when a few threads do most of it or when the profile is in between (CFS is the
/// default). Precisely, with `n` threads and evenness `e` (see [`ProfileRule`]):
///
/// * `n < rule.min_threads` → CFS ([`WorkSpread::TooFewThreads`]);
/// * total CPU time 0 → CFS ([`WorkSpread::NoWork`]);
/// * `e ≥ rule.even_at_least` → FIFO ([`WorkSpread::Even`]);
/// * `e < rule.concentrated_below` → CFS ([`WorkSpread::Concentrated`]);
/// * otherwise → CFS ([`WorkSpread::Mixed`]).
///
/// This does not look at the CPU count; the caller applies the §4.4 limit.
pub fn decide_from_profile(threads: &[ThreadProfile], rule: &ProfileRule) -> ProfileDecision {
    let n = threads.len();
    let total: u128 = threads.iter().map(|t| u128::from(t.cpu_ns)).sum();
    let (effective_threads, evenness) = if total == 0 || n == 0 {
        (0.0, 0.0)
    } else {
        let total = total as f64;
        let sum_sq: f64 = threads
            .iter()
            .map(|t| {
                let p = t.cpu_ns as f64 / total;
                p * p
            })
            .sum();
        let effective = 1.0 / sum_sq;
        // Rounding can push a perfectly even profile a hair above 1.
        (effective, (effective / n as f64).min(1.0))
    };
    let spread = if n < rule.min_threads.max(1) {
        WorkSpread::TooFewThreads
    } else if total == 0 {
        WorkSpread::NoWork
    } else if evenness >= rule.even_at_least {
        WorkSpread::Even
    } else if evenness < rule.concentrated_below {
        WorkSpread::Concentrated
    } else {
        WorkSpread::Mixed
    };
    ProfileDecision {
        choice: if spread == WorkSpread::Even {
            SchedChoice::Fifo
        } else {
            SchedChoice::Cfs
        },
        spread,
        threads: n,
        total_cpu_ns: u64::try_from(total).unwrap_or(u64::MAX),
        effective_threads,
        evenness,
    }
}

/// Read a profile file. `Ok(None)` when it does not exist; `Err` with a message naming the
/// file when it cannot be read or is not a profile.
pub fn load_profile(path: &Path) -> Result<Option<ProfileFile>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read profile {}: {e}", path.display())),
    };
    parse_profile(&text)
        .map(Some)
        .map_err(|e| format!("malformed profile {}: {e}", path.display()))
}

/// Parse the text of a profile file.
pub fn parse_profile(text: &str) -> Result<ProfileFile, String> {
    let file: ProfileFile = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if file.format != PROFILE_FORMAT {
        return Err(format!(
            "format is '{}', expected '{PROFILE_FORMAT}'",
            file.format
        ));
    }
    if file.version != PROFILE_VERSION {
        return Err(format!(
            "version {} is not supported (this build reads version {PROFILE_VERSION})",
            file.version
        ));
    }
    Ok(file)
}

/// Write a profile atomically: to a temporary file beside `path`, synced, then renamed over it.
pub fn write_profile(path: &Path, profile: &ProfileFile) -> io::Result<()> {
    let mut json = serde_json::to_vec_pretty(profile).map_err(io::Error::other)?;
    json.push(b'\n');
    crate::os::fs::write_atomic(path, &json)
}

/// What happened with `profile:PATH`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileAction {
    /// The profile existed and decided the policy.
    Used,
    /// There was no profile: this run records one (until `finish`).
    Recording,
    /// The profile was written at `finish`.
    Recorded,
    /// The profile could not be written (see `failures`).
    WriteFailed,
    /// No mutator attached, so nothing was written.
    NothingToRecord,
    /// The file exists but could not be read or parsed; CFS was used and the file left alone.
    Invalid,
}

/// The `profile:PATH` part of a report.
#[derive(Clone, Debug, Serialize)]
pub struct ProfileOutcome {
    /// The file.
    pub path: PathBuf,
    /// What was done with it.
    pub action: ProfileAction,
    /// The decision read from it ([`ProfileAction::Used`]).
    pub decision: Option<ProfileDecision>,
    /// Threads written to it ([`ProfileAction::Recorded`]).
    pub threads_recorded: usize,
    /// Why it could not be written ([`ProfileAction::WriteFailed`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl ProfileOutcome {
    fn new(path: PathBuf, action: ProfileAction, decision: Option<ProfileDecision>) -> Self {
        Self {
            path,
            action,
            decision,
            threads_recorded: 0,
            error: None,
        }
    }
}

/// When recording a profile, note thread `tid` (its name) and return the CPU time it has used
/// so far; `None` when not recording.
pub(super) fn note_attach(st: &mut State, tid: i32) -> Option<std::time::Duration> {
    let recording = st.recording.as_mut()?;
    recording.entry(tid).or_insert_with(|| ThreadProfile {
        tid,
        name: procfs::thread_name(tid).unwrap_or_default(),
        cpu_ns: 0,
    });
    sched::thread_cpu_time(tid).ok()
}

/// Add the CPU time `tid` used since it registered to the profile being recorded.
pub(super) fn account_cpu(st: &mut State, tid: i32, member: &Member) {
    let Some(recording) = st.recording.as_mut() else {
        return;
    };
    let (Some(before), Ok(now)) = (member.cpu_at_attach, sched::thread_cpu_time(tid)) else {
        return;
    };
    if let Some(entry) = recording.get_mut(&tid) {
        let ns = u64::try_from(now.saturating_sub(before).as_nanos()).unwrap_or(u64::MAX);
        entry.cpu_ns = entry.cpu_ns.saturating_add(ns);
    }
}

impl Shared {
    /// Use the profile at `path` if there is one, or start recording one there.
    pub(super) fn start_profile(&self, st: &mut State, path: PathBuf) {
        match load_profile(&path) {
            Ok(Some(file)) => {
                let decision = decide_from_profile(&file.threads, &self.config.profile_rule);
                let mut text = format!(
                    "mutator scheduling from profile {}: {}",
                    path.display(),
                    decision.describe()
                );
                st.target = decision.choice;
                if decision.choice == SchedChoice::Fifo && !self.auto_fifo_allowed {
                    st.target = SchedChoice::Cfs;
                    st.suppression_noted = true;
                    text.push_str(&format!(
                        "; staying with CFS: only {} usable CPUs, FIFO is chosen automatically \
                         only on more than {} (001 §4.4)",
                        self.config.usable_cpus, self.config.fifo_cpu_threshold
                    ));
                }
                let level = if st.suppression_noted {
                    log::Level::Warn
                } else {
                    log::Level::Info
                };
                self.notice(st, level, text);
                st.profile = Some(ProfileOutcome::new(
                    path,
                    ProfileAction::Used,
                    Some(decision),
                ));
            }
            Ok(None) => {
                self.notice(
                    st,
                    log::Level::Info,
                    format!(
                        "mutator scheduling: no profile at {} yet; running under CFS and \
                         recording one there",
                        path.display()
                    ),
                );
                st.recording = Some(HashMap::new());
                st.profile = Some(ProfileOutcome::new(path, ProfileAction::Recording, None));
            }
            Err(message) => {
                self.fail(st, message.clone());
                self.notice(
                    st,
                    log::Level::Warn,
                    format!(
                        "{message}; running under CFS (fix or delete the file to record a new \
                         profile)"
                    ),
                );
                st.profile = Some(ProfileOutcome::new(path, ProfileAction::Invalid, None));
            }
        }
    }

    /// Write the profile recorded in this run (at `finish`).
    pub(super) fn write_recorded_profile(
        &self,
        st: &mut State,
        recorded: HashMap<i32, ThreadProfile>,
    ) {
        let Some(outcome) = st.profile.as_mut() else {
            return;
        };
        let path = outcome.path.clone();
        if recorded.is_empty() {
            outcome.action = ProfileAction::NothingToRecord;
            self.notice(
                st,
                log::Level::Warn,
                format!(
                    "mutator scheduling: no mutator thread attached; no profile written to {}",
                    path.display()
                ),
            );
            return;
        }
        let mut threads: Vec<ThreadProfile> = recorded.into_values().collect();
        threads.sort_by_key(|t| t.tid);
        let count = threads.len();
        let file = ProfileFile {
            format: PROFILE_FORMAT.to_string(),
            version: PROFILE_VERSION,
            usable_cpus: self.config.usable_cpus,
            wall_ms: u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX),
            threads,
        };
        match write_profile(&path, &file) {
            Ok(()) => {
                outcome.action = ProfileAction::Recorded;
                outcome.threads_recorded = count;
            }
            Err(e) => {
                outcome.action = ProfileAction::WriteFailed;
                outcome.error = Some(e.to_string());
                let message = format!("cannot write profile {}: {e}", path.display());
                self.fail(st, message.clone());
                self.notice(st, log::Level::Warn, message);
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(crate) fn profile(cpu_ms: &[u64]) -> Vec<ThreadProfile> {
        cpu_ms
            .iter()
            .enumerate()
            .map(|(i, &ms)| ThreadProfile {
                tid: 100 + i as i32,
                name: format!("t{i}"),
                cpu_ns: ms * 1_000_000,
            })
            .collect()
    }

    #[test]
    fn even_work_over_many_threads_is_fifo() {
        let d = decide_from_profile(&profile(&[100; 8]), &ProfileRule::default());
        assert_eq!(d.choice, SchedChoice::Fifo);
        assert_eq!(d.spread, WorkSpread::Even);
        assert!((d.effective_threads - 8.0).abs() < 1e-9);
        assert!((d.evenness - 1.0).abs() < 1e-9);
        assert_eq!(d.total_cpu_ns, 800_000_000);
        // Roughly even with noise, plus an idle main thread, is still even.
        let d = decide_from_profile(
            &profile(&[90, 110, 95, 105, 100, 98, 102, 100, 0]),
            &ProfileRule::default(),
        );
        assert_eq!(d.choice, SchedChoice::Fifo, "{}", d.describe());
    }

    #[test]
    fn one_dominant_thread_is_cfs() {
        // One thread does 90% of the work, seven share the rest.
        let mut ms = vec![900 * 7];
        ms.extend([100; 7]);
        let d = decide_from_profile(&profile(&ms), &ProfileRule::default());
        assert_eq!(d.choice, SchedChoice::Cfs);
        assert_eq!(d.spread, WorkSpread::Concentrated);
        assert!(d.evenness < 0.2, "{}", d.describe());
        assert!(d.describe().contains("→ cfs"));
    }

    #[test]
    fn half_the_threads_working_is_mixed_and_cfs() {
        let d = decide_from_profile(
            &profile(&[100, 100, 100, 100, 0, 0, 0, 0]),
            &ProfileRule::default(),
        );
        assert_eq!(d.spread, WorkSpread::Mixed);
        assert_eq!(d.choice, SchedChoice::Cfs);
        assert!((d.evenness - 0.5).abs() < 1e-9);
    }

    #[test]
    fn tiny_or_idle_profiles_are_cfs() {
        let rule = ProfileRule::default();
        let d = decide_from_profile(&[], &rule);
        assert_eq!(
            (d.choice, d.spread),
            (SchedChoice::Cfs, WorkSpread::TooFewThreads)
        );
        let d = decide_from_profile(&profile(&[500]), &rule);
        assert_eq!(
            (d.choice, d.spread),
            (SchedChoice::Cfs, WorkSpread::TooFewThreads)
        );
        // Three perfectly even threads are still too few.
        let d = decide_from_profile(&profile(&[5, 5, 5]), &rule);
        assert_eq!(
            (d.choice, d.spread),
            (SchedChoice::Cfs, WorkSpread::TooFewThreads)
        );
        let d = decide_from_profile(&profile(&[0; 8]), &rule);
        assert_eq!((d.choice, d.spread), (SchedChoice::Cfs, WorkSpread::NoWork));
        assert_eq!(d.evenness, 0.0);
    }

    #[test]
    fn profile_thresholds_are_inclusive_at_even_and_exclusive_at_concentrated() {
        // Two busy threads of four: evenness exactly 0.5.
        let threads = profile(&[10, 10, 0, 0]);
        let at = |even, conc| {
            decide_from_profile(
                &threads,
                &ProfileRule {
                    min_threads: 4,
                    even_at_least: even,
                    concentrated_below: conc,
                },
            )
            .spread
        };
        assert_eq!(at(0.5, 0.4), WorkSpread::Even);
        assert_eq!(at(0.51, 0.4), WorkSpread::Mixed);
        assert_eq!(at(0.9, 0.5), WorkSpread::Mixed);
        assert_eq!(at(0.9, 0.51), WorkSpread::Concentrated);
    }

    #[test]
    fn profile_round_trip_and_rejections() {
        let dir = std::env::temp_dir().join(format!(
            "concord-msched-unit-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p.json");
        assert_eq!(load_profile(&path), Ok(None));
        let file = ProfileFile {
            format: PROFILE_FORMAT.into(),
            version: PROFILE_VERSION,
            usable_cpus: 2,
            wall_ms: 12,
            threads: profile(&[1, 2]),
        };
        write_profile(&path, &file).unwrap();
        assert_eq!(load_profile(&path), Ok(Some(file.clone())));
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);

        std::fs::write(&path, "{ not json").unwrap();
        let err = load_profile(&path).unwrap_err();
        assert!(
            err.contains("malformed profile") && err.contains("p.json"),
            "{err}"
        );
        let wrong = serde_json::to_string(&ProfileFile {
            format: "other".into(),
            ..file.clone()
        })
        .unwrap();
        assert!(parse_profile(&wrong).unwrap_err().contains("format"));
        let wrong = serde_json::to_string(&ProfileFile {
            version: 99,
            ..file
        })
        .unwrap();
        assert!(parse_profile(&wrong).unwrap_err().contains("version 99"));
        assert!(parse_profile(r#"{"format":"concord-mutator-profile","version":1}"#).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
