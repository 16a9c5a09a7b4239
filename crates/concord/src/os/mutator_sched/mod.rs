//! Mutator scheduling (001): which Linux policy, CFS or FIFO, the threads attached to a heap as
//! mutators run under, one file per variant:
//!
//! * `cfs` — nothing is touched.
//! * `fifo` (`fifo.rs`) — every mutator under SCHED_FIFO, applied whatever the CPU count ("told
//!   otherwise"), with a notice when the machine has no more than the threshold's CPUs.
//! * `profile:PATH` (`profile.rs`, 001 Algorithm 1) — decide from the CPU-time profile of an
//!   earlier run, or record one.
//! * `adaptive[:SECONDS]` (`adaptive.rs`, 001 Algorithm 2 as listed) — start under FIFO and
//!   switch to CFS for good once a mutator thread lives across a sample;
//!   `adaptive-majority[:SECONDS]` (§5.2's prose) — switch between CFS and FIFO at every sample
//!   as the set of live mutator threads stays or changes.
//!
//! The variant is chosen once, when the scheduler is built for a heap; attaching mutators then
//! only applies the policy in force. The automatic choices pick FIFO only when the process may
//! use more than `fifo_cpu_threshold` CPUs (8 by default, 001 §4.4: FIFO pays off only on more
//! than 8 cores); on smaller machines the decisions are still made and reported, but CFS stays
//! applied.
//!
//! Nothing here fails the program: a refused `SCHED_FIFO` (no CAP_SYS_NICE / RLIMIT_RTPRIO)
//! gives one warning and every mutator continues under CFS; a malformed profile is reported by
//! name and ignored. Messages for the user are kept in the report's `notices` and also go to
//! the `log` facade (`warn` when a setting is not honoured or something failed, `info` for
//! decisions), so the program's logger decides whether and how they are shown.

mod adaptive;
mod fifo;
mod profile;
mod scope;
mod switches;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use self::adaptive::{
    decide_from_samples, decide_from_samples_with, listing_step, AdaptiveSample, ListingSample,
    ListingStep, SampleDecision, SampleMeasure, DEFAULT_SIMILARITY_THRESHOLD,
};
pub use self::profile::{
    decide_from_profile, load_profile, parse_profile, write_profile, ProfileAction,
    ProfileDecision, ProfileFile, ProfileOutcome, ProfileRule, ThreadProfile, WorkSpread,
    PROFILE_FORMAT, PROFILE_VERSION,
};
pub use self::scope::{check_fifo_scope, read_rt_runtime_us, RunThreads, RT_RUNTIME_PATH};
pub use self::switches::ContextSwitches;
use crate::os::periodic::Periodic;
use crate::os::policy::{FifoScope, MutatorSched};
use crate::os::sched::{self, SchedError};

/// Lock the scheduler's state, ignoring poisoning: every update of it is a few assignments that
/// a panic cannot leave half done.
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// FIFO is chosen automatically only on more usable CPUs than this (001 §4.4).
pub const DEFAULT_FIFO_CPU_THRESHOLD: usize = 8;

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
    /// Thresholds of the profile-based selection.
    pub profile_rule: ProfileRule,
    /// How the adaptive selection compares samples.
    pub sample_measure: SampleMeasure,
    /// The similarity at or above which the adaptive selection picks CFS.
    pub similarity_threshold: f64,
    /// Whether FIFO also applies to the runtime's own threads (`add_runtime_threads`).
    pub fifo_scope: FifoScope,
}

impl MutatorSchedConfig {
    /// Defaults for everything but the policy and the CPU count.
    pub fn new(policy: MutatorSched, usable_cpus: usize) -> Self {
        MutatorSchedConfig {
            policy,
            usable_cpus,
            fifo_cpu_threshold: DEFAULT_FIFO_CPU_THRESHOLD,
            fifo_priority: sched::DEFAULT_FIFO_PRIORITY,
            profile_rule: ProfileRule::default(),
            sample_measure: SampleMeasure::default(),
            similarity_threshold: DEFAULT_SIMILARITY_THRESHOLD,
            fifo_scope: FifoScope::Mutators,
        }
    }
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
    /// The threads FIFO applies to: the mutators, or also the VM thread and GC workers.
    pub fifo_scope: FifoScope,
    /// The runtime's own threads (VM thread, GC workers) put under the policy with the
    /// mutators (`fifo-scope all`; 0 otherwise).
    pub runtime_threads: usize,
    /// Whether `usable_cpus > fifo_cpu_threshold`.
    pub automatic_fifo_allowed: bool,
    /// The policy mutators run under now (before `finish`) or ran under last (after it).
    pub applied: SchedChoice,
    /// Whether SCHED_FIFO was refused for lack of privilege (everything fell back to CFS).
    pub fifo_denied: bool,
    /// Mutator registrations (`on_attach` calls).
    pub attaches: u64,
    /// Successful switches of a thread (mutator or runtime thread) to SCHED_FIFO.
    pub fifo_sets: u64,
    /// Profile-based selection, when asked for.
    pub profile: Option<ProfileOutcome>,
    /// Adaptive samples taken (`adaptive` counts those up to its switch to CFS).
    pub samples: u64,
    /// Changes of the policy in force made by the adaptive sampler.
    pub switches: u64,
    /// `adaptive-majority`: the samples that compared two non-empty sets (at most 4096).
    pub decisions: Vec<AdaptiveSample>,
    /// `adaptive` (001 Algorithm 2's listing): every sample up to and including the switch to
    /// CFS (at most 4096).
    pub listing_decisions: Vec<ListingSample>,
    /// Messages for the user (each also given to the `log` facade once, as it arose).
    pub notices: Vec<String>,
    /// System calls or file operations that failed (at most 64).
    pub failures: Vec<String>,
    /// Failures not kept in `failures`.
    pub failures_dropped: u64,
    /// Context switches of the mutator threads while attached, summed over those that have
    /// detached (before `finish`) or over all of them (after it).
    pub context_switches: ContextSwitches,
}

/// One registered mutator thread.
struct Member {
    /// Nested registrations of the same thread.
    count: u32,
    /// Whether this controller set it to SCHED_FIFO (and must set it back).
    on_fifo: bool,
    /// Its CPU time at registration (profile recording only).
    cpu_at_attach: Option<Duration>,
    /// Its context switch counters at registration (`None` if they could not be read).
    switches_at_attach: Option<ContextSwitches>,
}

struct State {
    /// What the policy wants mutators to run under, after the CPU-count limit.
    target: SchedChoice,
    fifo_denied: bool,
    suppression_noted: bool,
    members: HashMap<i32, Member>,
    /// `fifo-scope all`: the runtime's own threads, and whether each is under FIFO now.
    runtime: HashMap<i32, bool>,
    /// Runtime threads registered in all.
    runtime_registered: usize,
    /// Profile recording: per thread id, name and CPU time so far.
    recording: Option<HashMap<i32, ThreadProfile>>,
    profile: Option<ProfileOutcome>,
    attaches: u64,
    fifo_sets: u64,
    samples: u64,
    /// The live mutator thread ids at the last `adaptive-majority` sample.
    previous_sample: Option<HashSet<i32>>,
    /// `adaptive`: the ids of the mutator threads seen at the samples so far.
    listing_table: HashSet<i32>,
    /// `adaptive`: the listing has switched to CFS and decides no more.
    listing_done: bool,
    listing_decisions: Vec<ListingSample>,
    switches: u64,
    decisions: Vec<AdaptiveSample>,
    notices: Vec<String>,
    failures: Vec<String>,
    failures_dropped: u64,
    /// Context switches of the mutators that have detached, while they were attached.
    context_switches: ContextSwitches,
    stop: bool,
    finished: bool,
}

struct Shared {
    config: MutatorSchedConfig,
    auto_fifo_allowed: bool,
    start: Instant,
    state: Mutex<State>,
}

/// Applies the mutator scheduling policy to the threads attached to one heap.
///
/// Create one per heap; call [`on_attach`](Self::on_attach) with the kernel thread id of every
/// thread that attaches as a mutator and [`on_detach`](Self::on_detach) when it detaches (from
/// that thread, while it is still alive), and [`finish`](Self::finish) when the heap goes away
/// (dropping the scheduler does the same). All methods take `&self` and are thread-safe.
pub struct MutatorScheduler {
    shared: Arc<Shared>,
    /// The adaptive policy's sampler thread, until `finish`.
    sampler: Mutex<Option<Periodic>>,
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
                runtime: HashMap::new(),
                runtime_registered: 0,
                recording: None,
                profile: None,
                attaches: 0,
                fifo_sets: 0,
                samples: 0,
                previous_sample: None,
                listing_table: HashSet::new(),
                listing_done: false,
                listing_decisions: Vec::new(),
                switches: 0,
                decisions: Vec::new(),
                notices: Vec::new(),
                failures: Vec::new(),
                failures_dropped: 0,
                context_switches: ContextSwitches::default(),
                stop: false,
                finished: false,
            }),
            config,
        });
        // The variant is chosen here, once; attaching mutators only applies its choice.
        let sampler = {
            let mut st = lock(&shared.state);
            match shared.config.policy.clone() {
                MutatorSched::Cfs => None,
                MutatorSched::Fifo => {
                    fifo::start(&shared, &mut st);
                    None
                }
                MutatorSched::Profile(path) => {
                    shared.start_profile(&mut st, path);
                    None
                }
                MutatorSched::Adaptive(period) | MutatorSched::AdaptiveMajority(period) => {
                    if matches!(shared.config.policy, MutatorSched::Adaptive(_)) {
                        shared.start_listing(&mut st);
                    }
                    adaptive::start_sampler(&shared, period)
                        .inspect_err(|e| {
                            shared.fail(&mut st, format!("cannot start the sampler thread: {e}"));
                            shared.notice(
                                &mut st,
                                log::Level::Warn,
                                format!(
                                    "mutator scheduling {}: cannot start the sampler thread \
                                 ({e}); running under CFS",
                                    shared.config.policy
                                ),
                            );
                            st.target = SchedChoice::Cfs;
                        })
                        .ok()
                }
            }
        };
        MutatorScheduler {
            shared,
            sampler: Mutex::new(sampler),
        }
    }

    /// The policy asked for.
    pub fn requested(&self) -> &MutatorSched {
        &self.shared.config.policy
    }

    /// Takes one adaptive sample now, as the sampler thread does once every period; nothing
    /// for the other policies. For a caller that decides when samples are taken (a test that
    /// must not depend on timing chooses a period it never reaches).
    pub fn sample_now(&self) {
        if self.shared.config.policy.sampling_period().is_some() {
            self.shared.sample();
        }
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
        let cpu_at_attach = profile::note_attach(&mut st, tid);
        let switches_at_attach = shared.read_switches(&mut st, tid);
        st.members.insert(
            tid,
            Member {
                count: 1,
                on_fifo: false,
                cpu_at_attach,
                switches_at_attach,
            },
        );
        if effective(&st) == SchedChoice::Fifo {
            shared.apply(&mut st, tid, SchedChoice::Fifo);
        }
    }

    /// With `fifo-scope all`, put the runtime's own threads `tids` (the VM thread, the GC
    /// workers) under the policy in force now and whenever it changes, until `finish`; nothing
    /// with `fifo-scope mutators`.
    pub fn add_runtime_threads(&self, tids: &[i32]) {
        let shared = &*self.shared;
        if shared.config.fifo_scope != FifoScope::All {
            return;
        }
        let mut st = lock(&shared.state);
        if st.finished {
            return;
        }
        for &tid in tids {
            if let std::collections::hash_map::Entry::Vacant(entry) = st.runtime.entry(tid) {
                entry.insert(false);
                st.runtime_registered += 1;
            }
        }
        let now = effective(&st);
        shared.apply_runtime(&mut st, now);
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
        profile::account_cpu(&mut st, tid, &member);
        shared.account_switches(&mut st, tid, &member);
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
        if let Some(mut sampler) = lock(&self.sampler).take() {
            sampler.stop();
        }
        let shared = &*self.shared;
        let mut st = lock(&shared.state);
        shared.apply_runtime(&mut st, SchedChoice::Cfs);
        st.runtime.clear();
        let members: Vec<(i32, Member)> = st.members.drain().collect();
        for (tid, member) in &members {
            if member.on_fifo {
                shared.restore(&mut st, *tid);
            }
            profile::account_cpu(&mut st, *tid, member);
            shared.account_switches(&mut st, *tid, member);
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
            fifo_scope: shared.config.fifo_scope,
            runtime_threads: st.runtime_registered,
            automatic_fifo_allowed: shared.auto_fifo_allowed,
            applied: effective(&st),
            fifo_denied: st.fifo_denied,
            attaches: st.attaches,
            fifo_sets: st.fifo_sets,
            profile: st.profile.clone(),
            samples: st.samples,
            switches: st.switches,
            decisions: st.decisions.clone(),
            listing_decisions: st.listing_decisions.clone(),
            notices: st.notices.clone(),
            failures: st.failures.clone(),
            failures_dropped: st.failures_dropped,
            context_switches: st.context_switches,
        }
    }

    /// The messages for the user so far (each was given to the `log` facade as it arose).
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

impl Shared {
    /// Record a message for the user and hand it to the `log` facade at `level`.
    fn notice(&self, st: &mut State, level: log::Level, message: String) {
        log::log!(level, "{message}");
        st.notices.push(message);
    }

    /// The context switch counters of registered thread `tid` now; a failed read is recorded.
    fn read_switches(&self, st: &mut State, tid: i32) -> Option<ContextSwitches> {
        ContextSwitches::of_thread(tid)
            .inspect_err(|e| {
                self.fail(
                    st,
                    format!("cannot read the context switches of thread {tid}: {e}"),
                )
            })
            .ok()
    }

    /// Add the context switches `member` (thread `tid`) made while attached. A thread that
    /// ended without detaching cannot be read any more and is left out.
    fn account_switches(&self, st: &mut State, tid: i32, member: &Member) {
        let Some(at_attach) = member.switches_at_attach else {
            return;
        };
        match ContextSwitches::of_thread(tid) {
            Ok(now) => st.context_switches += now.since(at_attach),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.fail(
                st,
                format!("cannot read the context switches of thread {tid}: {e}"),
            ),
        }
    }

    /// Record a failed operation.
    fn fail(&self, st: &mut State, message: String) {
        if st.failures.len() < MAX_RECORDED_FAILURES {
            st.failures.push(message);
        } else {
            st.failures_dropped += 1;
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
            log::Level::Warn,
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
        self.apply_runtime(st, SchedChoice::Cfs);
    }

    /// Put the runtime's own threads (`fifo-scope all`) under `choice`. A thread that has
    /// exited is forgotten; a refused FIFO turns FIFO off for good.
    fn apply_runtime(&self, st: &mut State, choice: SchedChoice) {
        let want_fifo = choice == SchedChoice::Fifo;
        let tids: Vec<i32> = st
            .runtime
            .iter()
            .filter(|&(_, &on_fifo)| on_fifo != want_fifo)
            .map(|(&tid, _)| tid)
            .collect();
        for tid in tids {
            let result = if want_fifo {
                if st.fifo_denied {
                    return;
                }
                sched::set_fifo(tid, self.config.fifo_priority)
            } else {
                sched::set_other(tid)
            };
            match result {
                Ok(()) => {
                    st.runtime.insert(tid, want_fifo);
                    if want_fifo {
                        st.fifo_sets += 1;
                    }
                }
                Err(e) if e.is_no_such_thread() => {
                    st.runtime.remove(&tid);
                }
                Err(e) if want_fifo && e.is_permission_denied() => {
                    self.deny_fifo(st, e);
                    return;
                }
                Err(e) => self.fail(st, e.to_string()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::profile::tests::profile;
    use super::*;

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
    fn context_switches_are_summed_over_mutators_that_ended() {
        let s = Arc::new(MutatorScheduler::new(
            MutatorSched::Cfs,
            2,
            DEFAULT_FIFO_CPU_THRESHOLD,
        ));
        // Three mutators that sleep 4 times each while attached, then detach and end.
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let tid = sched::current_tid();
                    s.on_attach(tid);
                    for _ in 0..4 {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    s.on_detach(tid);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let detached = s.report().context_switches;
        assert!(detached.voluntary >= 12, "{detached:?}");
        // One still attached at the end is read by `finish`.
        let tid = sched::current_tid();
        s.on_attach(tid);
        for _ in 0..3 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let report = s.finish();
        assert!(
            report.context_switches.voluntary >= detached.voluntary + 3,
            "{:?}",
            report.context_switches
        );
        assert!(report.failures.is_empty(), "{:?}", report.failures);
        let json = serde_json::to_value(&report).unwrap();
        assert!(json["context_switches"]["involuntary"].is_u64(), "{json}");
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
        let s = MutatorScheduler::new(MutatorSched::Profile(path.clone()), 2, 8);
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
