//! Mutator scheduling (001): which Linux policy, CFS or FIFO, the threads attached to a heap as
//! mutators run under, and the two ways of choosing it automatically.
//!
//! * `cfs` / `fifo` — fixed. Explicit `fifo` is applied whatever the CPU count ("told
//!   otherwise"), with a notice when the machine has no more than the threshold's CPUs.
//! * `profile:PATH` (001 Algorithm 1) — if PATH holds a profile from an earlier run, decide from
//!   how evenly the mutators' CPU time was spread ([`decide_from_profile`]); otherwise run under
//!   CFS, measure every mutator's CPU time while attached, and write the profile at
//!   [`MutatorScheduler::finish`].
//! * `adaptive:SECONDS` (001 Algorithm 2) — a sampler thread compares the set of live mutator
//!   thread ids every period with the previous one ([`decide_from_samples`]): the same threads
//!   → CFS, changed threads → FIFO. It starts under CFS.
//!
//! The automatic choices pick FIFO only when the process may use more than
//! `fifo_cpu_threshold` CPUs (8 by default, 001 §4.4: FIFO pays off only on more than 8 cores);
//! on smaller machines the decisions are still made and reported, but CFS stays applied.
//!
//! Nothing here fails the program: a refused `SCHED_FIFO` (no CAP_SYS_NICE / RLIMIT_RTPRIO)
//! prints one warning and every mutator continues under CFS; a malformed profile is reported
//! by name and ignored.

use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::lock;
use crate::os::policy::MutatorSched;
use crate::os::procfs;
use crate::os::sched::{self, SchedError};

/// FIFO is chosen automatically only on more usable CPUs than this (001 §4.4).
pub const DEFAULT_FIFO_CPU_THRESHOLD: usize = 8;

/// Two successive samples of mutator thread ids whose similarity ([`SampleMeasure`]) is at
/// least this are "mostly the same" (→ CFS); below it they are "different" (→ FIFO).
pub const DEFAULT_SIMILARITY_THRESHOLD: f64 = 0.5;

/// The `format` field of a profile file.
pub const PROFILE_FORMAT: &str = "concord-mutator-profile";

/// The profile file version this code reads and writes.
pub const PROFILE_VERSION: u32 = 1;

/// At most this many adaptive samples are kept in the report (later ones are only counted).
const MAX_RECORDED_SAMPLES: usize = 4096;

/// At most this many failures are kept in the report (later ones are only counted).
const MAX_RECORDED_FAILURES: usize = 64;

/// The policy mutator threads run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedChoice {
    /// `SCHED_OTHER`.
    Cfs,
    /// `SCHED_FIFO`.
    Fifo,
}

impl SchedChoice {
    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            SchedChoice::Cfs => "cfs",
            SchedChoice::Fifo => "fifo",
        }
    }
}

impl std::fmt::Display for SchedChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------------
// Profile-based selection (001 Algorithm 1)
// ---------------------------------------------------------------------------------------------

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
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let tmp = path.with_file_name(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let json = serde_json::to_vec_pretty(profile).map_err(io::Error::other)?;
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&json)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

// ---------------------------------------------------------------------------------------------
// Adaptive selection (001 Algorithm 2)
// ---------------------------------------------------------------------------------------------

/// How two successive samples of mutator thread ids are compared.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleMeasure {
    /// `|prev ∩ cur| / |cur|`: the share of the mutators alive now that were alive at the
    /// previous sample too. Threads dying off does not lower it, so a program winding down to
    /// a few survivors goes back to CFS, as 001 §5.2 describes; new threads lower it.
    #[default]
    Persisting,
    /// `|prev ∩ cur| / |prev ∪ cur|`: symmetric; threads dying off lower it as much as new
    /// ones.
    Jaccard,
}

/// The comparison of two successive samples of mutator thread ids.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SampleDecision {
    /// Threads in the previous sample.
    pub previous: usize,
    /// Threads in this sample.
    pub current: usize,
    /// Threads in both.
    pub common: usize,
    /// `common / current` (1 when this sample is empty).
    pub persisting: f64,
    /// `common / |previous ∪ current|` (1 when both are empty).
    pub jaccard: f64,
    /// The measure the decision used.
    pub measure: SampleMeasure,
    /// The value of that measure.
    pub similarity: f64,
    /// The policy the comparison asks for.
    pub choice: SchedChoice,
}

/// 001 Algorithm 2's selection with the default measure ([`SampleMeasure::Persisting`]) and
/// threshold ([`DEFAULT_SIMILARITY_THRESHOLD`]); see [`decide_from_samples_with`].
pub fn decide_from_samples(prev: &HashSet<i32>, cur: &HashSet<i32>) -> SampleDecision {
    decide_from_samples_with(
        prev,
        cur,
        SampleMeasure::default(),
        DEFAULT_SIMILARITY_THRESHOLD,
    )
}

/// Samples that are mostly the same (`measure` at least `same_at_least`: long-running
/// threads) → CFS; different samples (below it: threads come and go) → FIFO.
pub fn decide_from_samples_with(
    prev: &HashSet<i32>,
    cur: &HashSet<i32>,
    measure: SampleMeasure,
    same_at_least: f64,
) -> SampleDecision {
    let common = prev.intersection(cur).count();
    let union = prev.len() + cur.len() - common;
    let ratio = |part: usize, whole: usize| {
        if whole == 0 {
            1.0
        } else {
            part as f64 / whole as f64
        }
    };
    let persisting = ratio(common, cur.len());
    let jaccard = ratio(common, union);
    let similarity = match measure {
        SampleMeasure::Persisting => persisting,
        SampleMeasure::Jaccard => jaccard,
    };
    SampleDecision {
        previous: prev.len(),
        current: cur.len(),
        common,
        persisting,
        jaccard,
        measure,
        similarity,
        choice: if similarity >= same_at_least {
            SchedChoice::Cfs
        } else {
            SchedChoice::Fifo
        },
    }
}

// ---------------------------------------------------------------------------------------------
// The controller
// ---------------------------------------------------------------------------------------------

/// Everything [`MutatorScheduler`] can be told.
#[derive(Clone, Debug)]
pub struct MutatorSchedConfig {
    /// The policy asked for.
    pub policy: MutatorSched,
    /// CPUs the process may use.
    pub usable_cpus: usize,
    /// Automatic selection picks FIFO only when `usable_cpus > fifo_cpu_threshold`.
    pub fifo_cpu_threshold: usize,
    /// The real-time priority of FIFO mutators (1–99).
    pub fifo_priority: i32,
    /// Also print each notice to stderr once, as it arises (prefixed `concord: `).
    pub print_notices: bool,
    /// Thresholds of the profile-based selection.
    pub profile_rule: ProfileRule,
    /// How the adaptive selection compares samples.
    pub sample_measure: SampleMeasure,
    /// The similarity at or above which the adaptive selection picks CFS.
    pub similarity_threshold: f64,
}

impl MutatorSchedConfig {
    /// Defaults for everything but the policy and the CPU count.
    pub fn new(policy: MutatorSched, usable_cpus: usize) -> Self {
        MutatorSchedConfig {
            policy,
            usable_cpus,
            fifo_cpu_threshold: DEFAULT_FIFO_CPU_THRESHOLD,
            fifo_priority: sched::DEFAULT_FIFO_PRIORITY,
            print_notices: true,
            profile_rule: ProfileRule::default(),
            sample_measure: SampleMeasure::default(),
            similarity_threshold: DEFAULT_SIMILARITY_THRESHOLD,
        }
    }
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
}

/// One sample of the adaptive sampler.
#[derive(Clone, Debug, Serialize)]
pub struct AdaptiveSample {
    /// Milliseconds since the scheduler was created.
    pub at_ms: u64,
    /// The comparison with the previous sample.
    #[serde(flatten)]
    pub decision: SampleDecision,
    /// The policy in force after this sample (CFS when FIFO was chosen but not allowed).
    pub applied: SchedChoice,
    /// Whether this sample changed the policy in force.
    pub switched: bool,
}

/// What the mutator scheduler did, for the run summary.
#[derive(Clone, Debug, Serialize)]
pub struct MutatorSchedReport {
    /// The policy asked for (`cfs`, `fifo`, `profile:PATH`, `adaptive:SECONDS`).
    pub requested: MutatorSched,
    /// CPUs the process may use.
    pub usable_cpus: usize,
    /// FIFO is chosen automatically only above this many CPUs.
    pub fifo_cpu_threshold: usize,
    /// Whether `usable_cpus > fifo_cpu_threshold`.
    pub automatic_fifo_allowed: bool,
    /// The policy mutators run under now (before `finish`) or ran under last (after it).
    pub applied: SchedChoice,
    /// Whether SCHED_FIFO was refused for lack of privilege (everything fell back to CFS).
    pub fifo_denied: bool,
    /// Mutator registrations (`on_attach` calls).
    pub attaches: u64,
    /// Successful switches of a thread to SCHED_FIFO.
    pub fifo_sets: u64,
    /// Profile-based selection, when asked for.
    pub profile: Option<ProfileOutcome>,
    /// Adaptive samples taken.
    pub samples: u64,
    /// Changes of the policy in force made by the adaptive sampler.
    pub switches: u64,
    /// The adaptive samples that compared two non-empty sets (at most 4096).
    pub decisions: Vec<AdaptiveSample>,
    /// Messages for the user (each also printed once if `print_notices`).
    pub notices: Vec<String>,
    /// System calls or file operations that failed (at most 64).
    pub failures: Vec<String>,
    /// Failures not kept in `failures`.
    pub failures_dropped: u64,
}

/// One registered mutator thread.
struct Member {
    /// Nested registrations of the same thread.
    count: u32,
    /// Whether this controller set it to SCHED_FIFO (and must set it back).
    on_fifo: bool,
    /// Its CPU time at registration (profile recording only).
    cpu_at_attach: Option<Duration>,
}

struct State {
    /// What the policy wants mutators to run under, after the CPU-count limit.
    target: SchedChoice,
    fifo_denied: bool,
    suppression_noted: bool,
    members: HashMap<i32, Member>,
    /// Profile recording: per thread id, name and CPU time so far.
    recording: Option<HashMap<i32, ThreadProfile>>,
    profile: Option<ProfileOutcome>,
    attaches: u64,
    fifo_sets: u64,
    samples: u64,
    switches: u64,
    decisions: Vec<AdaptiveSample>,
    notices: Vec<String>,
    failures: Vec<String>,
    failures_dropped: u64,
    stop: bool,
    finished: bool,
}

struct Shared {
    config: MutatorSchedConfig,
    auto_fifo_allowed: bool,
    start: Instant,
    state: Mutex<State>,
    wake: Condvar,
}

/// Applies the mutator scheduling policy to the threads attached to one heap.
///
/// Create one per heap; call [`on_attach`](Self::on_attach) with the kernel thread id of every
/// thread that attaches as a mutator and [`on_detach`](Self::on_detach) when it detaches (from
/// that thread, while it is still alive), and [`finish`](Self::finish) when the heap goes away
/// (dropping the scheduler does the same). All methods take `&self` and are thread-safe.
pub struct MutatorScheduler {
    shared: Arc<Shared>,
    sampler: Mutex<Option<JoinHandle<()>>>,
}

impl MutatorScheduler {
    /// A scheduler for `policy` on a process with `usable_cpus` CPUs, choosing FIFO
    /// automatically only when `usable_cpus > fifo_cpu_threshold`; other settings default.
    pub fn new(policy: MutatorSched, usable_cpus: usize, fifo_cpu_threshold: usize) -> Self {
        let mut config = MutatorSchedConfig::new(policy, usable_cpus);
        config.fifo_cpu_threshold = fifo_cpu_threshold;
        Self::with_config(config)
    }

    /// A scheduler with every setting given.
    pub fn with_config(config: MutatorSchedConfig) -> Self {
        let auto_fifo_allowed = config.usable_cpus > config.fifo_cpu_threshold;
        let shared = Arc::new(Shared {
            auto_fifo_allowed,
            start: Instant::now(),
            state: Mutex::new(State {
                target: SchedChoice::Cfs,
                fifo_denied: false,
                suppression_noted: false,
                members: HashMap::new(),
                recording: None,
                profile: None,
                attaches: 0,
                fifo_sets: 0,
                samples: 0,
                switches: 0,
                decisions: Vec::new(),
                notices: Vec::new(),
                failures: Vec::new(),
                failures_dropped: 0,
                stop: false,
                finished: false,
            }),
            wake: Condvar::new(),
            config,
        });
        let this = MutatorScheduler {
            shared: shared.clone(),
            sampler: Mutex::new(None),
        };
        let mut st = lock(&shared.state);
        match shared.config.policy.clone() {
            MutatorSched::Cfs => {}
            MutatorSched::Fifo => {
                st.target = SchedChoice::Fifo;
                if !auto_fifo_allowed {
                    shared.notice(
                        &mut st,
                        format!(
                            "mutator scheduling fifo on {} usable CPUs: applied as asked, although \
                             FIFO is expected to help only on more than {} (001 §4.4)",
                            shared.config.usable_cpus, shared.config.fifo_cpu_threshold
                        ),
                    );
                }
            }
            MutatorSched::Profile(path) => shared.start_profile(&mut st, path),
            MutatorSched::Adaptive(period) => {
                let sampler_shared = shared.clone();
                match std::thread::Builder::new()
                    .name("concord-msched".into())
                    .spawn(move || sampler_loop(&sampler_shared, period))
                {
                    Ok(handle) => *lock(&this.sampler) = Some(handle),
                    Err(e) => {
                        shared.fail(&mut st, format!("cannot start the sampler thread: {e}"));
                        shared.notice(
                            &mut st,
                            format!(
                                "mutator scheduling adaptive: cannot start the sampler thread \
                                 ({e}); running under CFS"
                            ),
                        );
                    }
                }
            }
        }
        drop(st);
        this
    }

    /// The policy asked for.
    pub fn requested(&self) -> &MutatorSched {
        &self.shared.config.policy
    }

    /// The policy mutator threads are put under now.
    pub fn current(&self) -> SchedChoice {
        effective(&lock(&self.shared.state))
    }

    /// Register thread `tid` as a mutator and put it under the current policy. Never fails:
    /// problems become notices or failures in the report.
    pub fn on_attach(&self, tid: i32) {
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        if st.finished {
            return;
        }
        st.attaches += 1;
        if let Some(member) = st.members.get_mut(&tid) {
            member.count += 1;
            return;
        }
        let cpu_at_attach = if st.recording.is_some() {
            let name = procfs::thread_name(tid).unwrap_or_default();
            let recording = st.recording.as_mut().expect("checked above");
            recording.entry(tid).or_insert(ThreadProfile {
                tid,
                name,
                cpu_ns: 0,
            });
            sched::thread_cpu_time(tid).ok()
        } else {
            None
        };
        st.members.insert(
            tid,
            Member {
                count: 1,
                on_fifo: false,
                cpu_at_attach,
            },
        );
        if effective(&st) == SchedChoice::Fifo {
            shared.apply(&mut st, tid, SchedChoice::Fifo);
        }
    }

    /// Unregister thread `tid` (after as many calls as `on_attach`): set it back to CFS if it
    /// was put under FIFO, and account its CPU time when recording a profile. Call it from the
    /// thread itself, or at least while it is alive, or its CPU time is lost.
    pub fn on_detach(&self, tid: i32) {
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        let Some(member) = st.members.get_mut(&tid) else {
            return;
        };
        member.count -= 1;
        if member.count > 0 {
            return;
        }
        let member = st.members.remove(&tid).expect("present above");
        if member.on_fifo {
            shared.restore(&mut st, tid);
        }
        account_cpu(&mut st, tid, &member);
    }

    /// Stop the sampler, put every still-registered thread back under CFS, write the profile
    /// when recording one, and return the report. Later calls only return the report again.
    pub fn finish(&self) -> MutatorSchedReport {
        {
            let mut st = lock(&self.shared.state);
            if st.finished {
                drop(st);
                return self.report();
            }
            st.stop = true;
        }
        self.shared.wake.notify_all();
        if let Some(handle) = lock(&self.sampler).take() {
            let _ = handle.join();
        }
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        let members: Vec<(i32, Member)> = st.members.drain().collect();
        for (tid, member) in &members {
            if member.on_fifo {
                shared.restore(&mut st, *tid);
            }
            account_cpu(&mut st, *tid, member);
        }
        if let Some(recorded) = st.recording.take() {
            shared.write_recorded_profile(&mut st, recorded);
        }
        st.finished = true;
        drop(st);
        self.report()
    }

    /// A snapshot of what the scheduler did so far.
    pub fn report(&self) -> MutatorSchedReport {
        let shared = &*self.shared;
        let st = lock(&shared.state);
        MutatorSchedReport {
            requested: shared.config.policy.clone(),
            usable_cpus: shared.config.usable_cpus,
            fifo_cpu_threshold: shared.config.fifo_cpu_threshold,
            automatic_fifo_allowed: shared.auto_fifo_allowed,
            applied: effective(&st),
            fifo_denied: st.fifo_denied,
            attaches: st.attaches,
            fifo_sets: st.fifo_sets,
            profile: st.profile.clone(),
            samples: st.samples,
            switches: st.switches,
            decisions: st.decisions.clone(),
            notices: st.notices.clone(),
            failures: st.failures.clone(),
            failures_dropped: st.failures_dropped,
        }
    }

    /// The messages for the user so far (each was printed once already if `print_notices`).
    pub fn notices(&self) -> Vec<String> {
        lock(&self.shared.state).notices.clone()
    }
}

impl Drop for MutatorScheduler {
    fn drop(&mut self) {
        self.finish();
    }
}

impl std::fmt::Debug for MutatorScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MutatorScheduler")
            .field("requested", &self.shared.config.policy)
            .field("current", &self.current())
            .finish_non_exhaustive()
    }
}

/// The policy in force: the target, unless FIFO was refused.
fn effective(st: &State) -> SchedChoice {
    if st.fifo_denied {
        SchedChoice::Cfs
    } else {
        st.target
    }
}

/// Add the CPU time `tid` used since it registered to the profile being recorded.
fn account_cpu(st: &mut State, tid: i32, member: &Member) {
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
    /// Record a message for the user and print it once.
    fn notice(&self, st: &mut State, message: String) {
        if self.config.print_notices {
            eprintln!("concord: {message}");
        }
        st.notices.push(message);
    }

    /// Record a failed operation.
    fn fail(&self, st: &mut State, message: String) {
        if st.failures.len() < MAX_RECORDED_FAILURES {
            st.failures.push(message);
        } else {
            st.failures_dropped += 1;
        }
    }

    fn start_profile(&self, st: &mut State, path: PathBuf) {
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
                self.notice(st, text);
                st.profile = Some(ProfileOutcome {
                    path,
                    action: ProfileAction::Used,
                    decision: Some(decision),
                    threads_recorded: 0,
                });
            }
            Ok(None) => {
                self.notice(
                    st,
                    format!(
                        "mutator scheduling: no profile at {} yet; running under CFS and \
                         recording one there",
                        path.display()
                    ),
                );
                st.recording = Some(HashMap::new());
                st.profile = Some(ProfileOutcome {
                    path,
                    action: ProfileAction::Recording,
                    decision: None,
                    threads_recorded: 0,
                });
            }
            Err(message) => {
                self.fail(st, message.clone());
                self.notice(
                    st,
                    format!(
                        "{message}; running under CFS (fix or delete the file to record a new \
                         profile)"
                    ),
                );
                st.profile = Some(ProfileOutcome {
                    path,
                    action: ProfileAction::Invalid,
                    decision: None,
                    threads_recorded: 0,
                });
            }
        }
    }

    fn write_recorded_profile(&self, st: &mut State, recorded: HashMap<i32, ThreadProfile>) {
        let Some(outcome) = st.profile.as_mut() else {
            return;
        };
        let path = outcome.path.clone();
        if recorded.is_empty() {
            outcome.action = ProfileAction::NothingToRecord;
            self.notice(
                st,
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
                let message = format!("cannot write profile {}: {e}", path.display());
                self.fail(st, message.clone());
                self.notice(st, message);
            }
        }
    }

    /// Put registered thread `tid` under `choice`. A refused FIFO turns FIFO off for good.
    fn apply(&self, st: &mut State, tid: i32, choice: SchedChoice) {
        match choice {
            SchedChoice::Fifo => match sched::set_fifo(tid, self.config.fifo_priority) {
                Ok(()) => {
                    st.fifo_sets += 1;
                    if let Some(m) = st.members.get_mut(&tid) {
                        m.on_fifo = true;
                    }
                }
                Err(e) if e.is_permission_denied() => self.deny_fifo(st, e),
                Err(e) => self.fail(st, e.to_string()),
            },
            SchedChoice::Cfs => {
                let on_fifo = st.members.get(&tid).is_some_and(|m| m.on_fifo);
                if on_fifo {
                    self.restore(st, tid);
                }
            }
        }
    }

    /// Put `tid` back under SCHED_OTHER and forget that it was on FIFO.
    fn restore(&self, st: &mut State, tid: i32) {
        if let Some(m) = st.members.get_mut(&tid) {
            m.on_fifo = false;
        }
        match sched::set_other(tid) {
            Ok(()) => {}
            // A thread that has exited no longer needs restoring.
            Err(e) if e.is_no_such_thread() => {}
            Err(e) => self.fail(st, e.to_string()),
        }
    }

    /// SCHED_FIFO was refused: warn once, and put every mutator back under CFS.
    fn deny_fifo(&self, st: &mut State, e: SchedError) {
        if st.fifo_denied {
            return;
        }
        st.fifo_denied = true;
        self.fail(st, e.to_string());
        self.notice(
            st,
            format!(
                "mutator scheduling {}: {e}; falling back to CFS",
                self.config.policy
            ),
        );
        let on_fifo: Vec<i32> = st
            .members
            .iter()
            .filter(|(_, m)| m.on_fifo)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in on_fifo {
            self.restore(st, tid);
        }
    }

    /// One adaptive sample: compare the live mutators with the previous sample and switch.
    fn sample(&self, previous: &mut Option<HashSet<i32>>) {
        let registered: Vec<i32> = lock(&self.state).members.keys().copied().collect();
        // /proc is read without the lock; a thread registered meanwhile is seen next time.
        let (live, dead): (Vec<i32>, Vec<i32>) = registered
            .into_iter()
            .partition(|&tid| procfs::thread_exists(tid));
        let current: HashSet<i32> = live.into_iter().collect();
        let mut st = lock(&self.state);
        if st.stop {
            return;
        }
        // A thread that exited without detaching must not be touched again (its id may be
        // reused).
        for tid in dead {
            st.members.remove(&tid);
        }
        st.samples += 1;
        let prev = previous.replace(current.clone());
        let Some(prev) = prev else { return };
        // An empty side (no mutators yet, or none left) says nothing about thread lifetimes.
        if prev.is_empty() || current.is_empty() {
            return;
        }
        let decision = decide_from_samples_with(
            &prev,
            &current,
            self.config.sample_measure,
            self.config.similarity_threshold,
        );
        let mut chosen = decision.choice;
        if chosen == SchedChoice::Fifo && !self.auto_fifo_allowed {
            chosen = SchedChoice::Cfs;
            if !st.suppression_noted {
                st.suppression_noted = true;
                let text = format!(
                    "mutator scheduling {}: thread ids changed between samples (FIFO \
                     indicated), but staying with CFS: only {} usable CPUs, FIFO is chosen \
                     automatically only on more than {} (001 §4.4)",
                    self.config.policy, self.config.usable_cpus, self.config.fifo_cpu_threshold
                );
                self.notice(&mut st, text);
            }
        }
        let before = effective(&st);
        st.target = chosen;
        let after = effective(&st);
        let switched = before != after;
        if switched {
            st.switches += 1;
            let tids: Vec<i32> = st.members.keys().copied().collect();
            for tid in tids {
                // A refused FIFO (first thread) puts everyone back; stop trying.
                if effective(&st) != after {
                    break;
                }
                self.apply(&mut st, tid, after);
            }
        }
        let record = AdaptiveSample {
            at_ms: u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX),
            decision,
            applied: effective(&st),
            switched,
        };
        if st.decisions.len() < MAX_RECORDED_SAMPLES {
            st.decisions.push(record);
        }
    }
}

/// The adaptive sampler: one sample every `period` until told to stop.
fn sampler_loop(shared: &Shared, period: Duration) {
    // When FIFO may be chosen, the sampler itself runs real-time one step above the mutators,
    // so FIFO mutators busy on every CPU cannot keep it from switching them back.
    if shared.auto_fifo_allowed {
        let priority = (shared.config.fifo_priority + 1).min(99);
        let _ = sched::set_fifo(sched::current_tid(), priority);
    }
    let mut previous = None;
    let mut deadline = Instant::now() + period;
    loop {
        {
            let mut st = lock(&shared.state);
            loop {
                if st.stop {
                    return;
                }
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                st = shared
                    .wake
                    .wait_timeout(st, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
        }
        shared.sample(&mut previous);
        deadline += period;
        // After a long stall, sample one period from now instead of catching up.
        let now = Instant::now();
        if deadline < now {
            deadline = now + period;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(cpu_ms: &[u64]) -> Vec<ThreadProfile> {
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

    fn set(ids: &[i32]) -> HashSet<i32> {
        ids.iter().copied().collect()
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
    fn identical_samples_are_cfs_and_disjoint_ones_fifo() {
        let a = set(&[1, 2, 3, 4]);
        let d = decide_from_samples(&a, &a);
        assert_eq!(d.choice, SchedChoice::Cfs);
        assert_eq!((d.previous, d.current, d.common), (4, 4, 4));
        assert_eq!((d.persisting, d.jaccard, d.similarity), (1.0, 1.0, 1.0));
        let d = decide_from_samples(&a, &set(&[5, 6, 7, 8]));
        assert_eq!(d.choice, SchedChoice::Fifo);
        assert_eq!((d.persisting, d.jaccard), (0.0, 0.0));
        // Empty samples are the same.
        let d = decide_from_samples(&HashSet::new(), &HashSet::new());
        assert_eq!((d.choice, d.similarity), (SchedChoice::Cfs, 1.0));
        // A new thread set after an empty one differs.
        assert_eq!(
            decide_from_samples(&HashSet::new(), &a).choice,
            SchedChoice::Fifo
        );
        for measure in [SampleMeasure::Persisting, SampleMeasure::Jaccard] {
            assert_eq!(
                decide_from_samples_with(&a, &a, measure, 0.5).choice,
                SchedChoice::Cfs
            );
            let d = decide_from_samples_with(&a, &set(&[9]), measure, 0.5);
            assert_eq!(d.choice, SchedChoice::Fifo);
            assert_eq!(d.measure, measure);
        }
    }

    #[test]
    fn threads_dying_off_is_cfs_and_new_threads_fifo() {
        let all = set(&[1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let survivor = set(&[1]);
        // Winding down to one survivor: all current threads persisted.
        let d = decide_from_samples(&all, &survivor);
        assert_eq!((d.persisting, d.choice), (1.0, SchedChoice::Cfs));
        // Jaccard sees the same change as a big difference.
        let d = decide_from_samples_with(&all, &survivor, SampleMeasure::Jaccard, 0.5);
        assert!((d.jaccard - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(d.choice, SchedChoice::Fifo);
        // Starting up: eight new workers beside the main thread.
        let d = decide_from_samples(&survivor, &all);
        assert!((d.persisting - 1.0 / 9.0).abs() < 1e-12);
        assert_eq!(d.choice, SchedChoice::Fifo);
    }

    #[test]
    fn sample_threshold_boundaries() {
        // Half of the current threads persisted: exactly the threshold → still the same.
        let d = decide_from_samples(&set(&[1, 2, 3, 4]), &set(&[3, 4, 5, 6]));
        assert_eq!(d.persisting, 0.5);
        assert_eq!(d.choice, SchedChoice::Cfs);
        // Just below: 4 of 9.
        let d = decide_from_samples(&set(&[1, 2, 3, 4]), &set(&[1, 2, 3, 4, 5, 6, 7, 8, 9]));
        assert!(d.persisting < 0.5);
        assert_eq!(d.choice, SchedChoice::Fifo);
        // Jaccard at the boundary: {1,2,3} vs {2,3,4} is 2 of 4.
        let (p, c) = (set(&[1, 2, 3]), set(&[2, 3, 4]));
        let d = decide_from_samples_with(&p, &c, SampleMeasure::Jaccard, 0.5);
        assert_eq!((d.jaccard, d.choice), (0.5, SchedChoice::Cfs));
        let d = decide_from_samples_with(&p, &c, SampleMeasure::Jaccard, 0.51);
        assert_eq!(d.choice, SchedChoice::Fifo);
        // {1,2,3} vs {3,4,5}: 1 of 5 (Jaccard), 1 of 3 (persisting).
        let d = decide_from_samples(&p, &set(&[3, 4, 5]));
        assert!((d.jaccard - 0.2).abs() < 1e-12);
        assert!((d.persisting - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(d.choice, SchedChoice::Fifo);
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

    #[test]
    fn cfs_scheduler_touches_nothing() {
        let s = MutatorScheduler::new(MutatorSched::Cfs, 64, DEFAULT_FIFO_CPU_THRESHOLD);
        let tid = sched::current_tid();
        s.on_attach(tid);
        assert_eq!(s.current(), SchedChoice::Cfs);
        assert_eq!(
            sched::thread_policy(tid).unwrap(),
            sched::SchedPolicy::Other
        );
        s.on_detach(tid);
        let report = s.finish();
        assert_eq!(report.attaches, 1);
        assert_eq!(report.fifo_sets, 0);
        assert!(report.notices.is_empty() && report.failures.is_empty());
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(json["requested"], "cfs");
        assert_eq!(json["applied"], "cfs");
    }

    #[test]
    fn automatic_fifo_is_suppressed_on_few_cpus() {
        let dir = std::env::temp_dir().join(format!("concord-msched-few-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("even.json");
        let file = ProfileFile {
            format: PROFILE_FORMAT.into(),
            version: PROFILE_VERSION,
            usable_cpus: 48,
            wall_ms: 1000,
            threads: profile(&[100; 16]),
        };
        write_profile(&path, &file).unwrap();
        let mut config = MutatorSchedConfig::new(MutatorSched::Profile(path.clone()), 2);
        config.print_notices = false;
        let s = MutatorScheduler::with_config(config);
        assert_eq!(s.current(), SchedChoice::Cfs);
        let report = s.finish();
        let outcome = report.profile.unwrap();
        assert_eq!(outcome.action, ProfileAction::Used);
        assert_eq!(outcome.decision.unwrap().choice, SchedChoice::Fifo);
        assert_eq!(report.notices.len(), 1);
        assert!(
            report.notices[0].contains("staying with CFS"),
            "{:?}",
            report.notices
        );
        assert!(!report.automatic_fifo_allowed);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
