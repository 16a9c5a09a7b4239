//! The adaptive mutator scheduling policies (001 §5.2): a sampler thread collects the ids of the
//! live mutator threads every period.
//!
//! * `adaptive[:SECONDS]` follows Algorithm 2's listing ([`listing_step`]): the program starts
//!   under FIFO; each sample goes into a table of the ids seen so far; while every id is new
//!   the policy stays FIFO; at the first sample with an id already in the table it switches to
//!   CFS and decides no more. Ids are only seen again when a thread lives across a sample, so
//!   "already in the table" is "alive at the previous sample too" (ids are not reused while the
//!   table could hold them: 001 notes 2^22 threads would have to be created first).
//! * `adaptive-majority[:SECONDS]` follows §5.2's prose ([`decide_from_samples`]): it starts
//!   under CFS and re-decides at every sample, CFS when the ids are mostly the same as at the
//!   previous sample, FIFO when they changed, so it can switch back and forth with phases.

use std::collections::HashSet;
use std::sync::{Arc, MutexGuard};
use std::time::Duration;

use serde::Serialize;

use super::{effective, lock, SchedChoice, Shared, State};
use crate::os::periodic::Periodic;
use crate::os::policy::MutatorSched;
use crate::os::{procfs, sched};

/// Two successive samples of mutator thread ids whose similarity ([`SampleMeasure`]) is at
/// least this are "mostly the same" (→ CFS); below it they are "different" (→ FIFO).
pub const DEFAULT_SIMILARITY_THRESHOLD: f64 = 0.5;

/// At most this many adaptive samples are kept in the report (later ones are only counted).
const MAX_RECORDED_SAMPLES: usize = 4096;

/// Start the sampler thread (`concord-msched`): one sample every `period` until the scheduler
/// finishes (the listing's sampler stops deciding after its switch to CFS).
pub(super) fn start_sampler(shared: &Arc<Shared>, period: Duration) -> std::io::Result<Periodic> {
    let own = shared.clone();
    let on_start = move || {
        // When FIFO may be chosen, the sampler itself runs real-time one step above the
        // mutators, so FIFO mutators busy on every CPU cannot keep it from switching them back.
        if own.auto_fifo_allowed {
            let priority = (own.config.fifo_priority + 1).min(99);
            let _ = sched::set_fifo(sched::current_tid(), priority);
        }
    };
    let shared = shared.clone();
    Periodic::spawn("concord-msched", period, on_start, move || shared.sample())
}

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

/// One step of 001 Algorithm 2's listing: the ids of the active threads go into `table` (the ids
/// seen at earlier samples); CFS (and stop) when one of them was already there, else FIFO.
pub fn listing_step(table: &mut HashSet<i32>, active: &[i32]) -> ListingStep {
    let mut already_seen = 0;
    for &tid in active {
        if !table.insert(tid) {
            already_seen += 1;
        }
    }
    ListingStep {
        active: active.len(),
        already_seen,
        choice: if already_seen > 0 {
            SchedChoice::Cfs
        } else {
            SchedChoice::Fifo
        },
    }
}

/// What one step of the listing saw and chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ListingStep {
    /// Live mutator threads at this sample.
    pub active: usize,
    /// Of those, the ones already in the table (seen at an earlier sample).
    pub already_seen: usize,
    /// FIFO while every thread is new; CFS, for good, once one is seen again.
    pub choice: SchedChoice,
}

/// One sample of the listing's sampler (`adaptive`).
#[derive(Clone, Debug, Serialize)]
pub struct ListingSample {
    /// Milliseconds since the scheduler was created.
    pub at_ms: u64,
    /// What the step saw and chose.
    #[serde(flatten)]
    pub step: ListingStep,
    /// The policy in force after this sample (CFS when FIFO was chosen but not allowed).
    pub applied: SchedChoice,
    /// Whether this sample changed the policy in force.
    pub switched: bool,
}

/// One sample of the majority sampler (`adaptive-majority`).
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

impl Shared {
    /// `adaptive`: the program starts under FIFO (where FIFO may be chosen automatically).
    pub(super) fn start_listing(&self, st: &mut State) {
        st.target = self.allowed(st, SchedChoice::Fifo, "Algorithm 2 starts under FIFO");
    }

    /// One sample of the adaptive policy asked for.
    pub(super) fn sample(&self) {
        let listing = matches!(self.config.policy, MutatorSched::Adaptive(_));
        // The listing decides no more after its switch to CFS: nothing to read.
        if listing && lock(&self.state).listing_done {
            return;
        }
        let Some((mut st, live)) = self.live_mutators() else {
            return;
        };
        if listing {
            self.sample_listing(&mut st, live);
        } else {
            self.sample_majority(&mut st, live);
        }
    }

    /// The live registered mutators, with the state locked; `None` once the scheduler stops.
    /// Threads that exited without detaching are forgotten (their ids may be reused).
    fn live_mutators(&self) -> Option<(MutexGuard<'_, State>, Vec<i32>)> {
        let registered: Vec<i32> = lock(&self.state).members.keys().copied().collect();
        // /proc is read without the lock; a thread registered meanwhile is seen next time.
        let (mut live, dead): (Vec<i32>, Vec<i32>) = registered
            .into_iter()
            .partition(|&tid| procfs::thread_exists(tid));
        live.sort_unstable();
        let mut st = lock(&self.state);
        if st.stop {
            return None;
        }
        for tid in dead {
            st.members.remove(&tid);
        }
        Some((st, live))
    }

    /// One step of Algorithm 2's listing, until it has switched to CFS.
    fn sample_listing(&self, st: &mut State, live: Vec<i32>) {
        if st.listing_done {
            return;
        }
        st.samples += 1;
        let step = listing_step(&mut st.listing_table, &live);
        let chosen = self.allowed(st, step.choice, "all thread ids new at a sample");
        let switched = self.switch_to(st, chosen);
        // "break": the listing decides no more after its switch to CFS.
        st.listing_done = step.choice == SchedChoice::Cfs;
        let record = ListingSample {
            at_ms: self.elapsed_ms(),
            step,
            applied: effective(st),
            switched,
        };
        if st.listing_decisions.len() < MAX_RECORDED_SAMPLES {
            st.listing_decisions.push(record);
        }
    }

    /// One sample of the majority variant: compare with the previous sample and switch.
    fn sample_majority(&self, st: &mut State, live: Vec<i32>) {
        let current: HashSet<i32> = live.into_iter().collect();
        st.samples += 1;
        let prev = st.previous_sample.replace(current.clone());
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
        let chosen = self.allowed(st, decision.choice, "thread ids changed between samples");
        let switched = self.switch_to(st, chosen);
        let record = AdaptiveSample {
            at_ms: self.elapsed_ms(),
            decision,
            applied: effective(st),
            switched,
        };
        if st.decisions.len() < MAX_RECORDED_SAMPLES {
            st.decisions.push(record);
        }
    }

    /// `choice`, or CFS when it is FIFO and FIFO may not be chosen automatically on this
    /// machine (said once, with `why` FIFO was indicated).
    fn allowed(&self, st: &mut State, choice: SchedChoice, why: &str) -> SchedChoice {
        if choice == SchedChoice::Cfs || self.auto_fifo_allowed {
            return choice;
        }
        if !st.suppression_noted {
            st.suppression_noted = true;
            let text = format!(
                "mutator scheduling {}: {why} (FIFO indicated), but staying with CFS: only {} \
                 usable CPUs, FIFO is chosen automatically only on more than {} (001 §4.4)",
                self.config.policy, self.config.usable_cpus, self.config.fifo_cpu_threshold
            );
            self.notice(st, log::Level::Warn, text);
        }
        SchedChoice::Cfs
    }

    /// Make `chosen` the policy in force and put every registered mutator under it; whether
    /// the policy in force changed.
    fn switch_to(&self, st: &mut State, chosen: SchedChoice) -> bool {
        let before = effective(st);
        st.target = chosen;
        let after = effective(st);
        if before == after {
            return false;
        }
        st.switches += 1;
        let tids: Vec<i32> = st.members.keys().copied().collect();
        for tid in tids {
            // A refused FIFO (first thread) puts everyone back; stop trying.
            if effective(st) != after {
                break;
            }
            self.apply(st, tid, after);
        }
        self.apply_runtime(st, effective(st));
        true
    }

    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[i32]) -> HashSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn the_listing_stays_fifo_while_all_ids_are_new_and_stops_at_a_repeat() {
        let mut table = HashSet::new();
        // Nothing yet: no thread was seen before, so FIFO.
        let step = listing_step(&mut table, &[]);
        assert_eq!((step.active, step.already_seen), (0, 0));
        assert_eq!(step.choice, SchedChoice::Fifo);
        // Short-lived workers: each sample sees new ids only.
        for ids in [[1, 2, 3], [4, 5, 6], [7, 8, 9]] {
            let step = listing_step(&mut table, &ids);
            assert_eq!(
                step,
                ListingStep {
                    active: 3,
                    already_seen: 0,
                    choice: SchedChoice::Fifo
                }
            );
        }
        assert_eq!(table, set(&[1, 2, 3, 4, 5, 6, 7, 8, 9]));
        // One thread (8) lived across a sample: CFS, even with many new ones beside it.
        let step = listing_step(&mut table, &[8, 10, 11, 12, 13]);
        assert_eq!((step.active, step.already_seen), (5, 1));
        assert_eq!(step.choice, SchedChoice::Cfs);
        // A long-running main thread is seen again at the second sample.
        let mut table = HashSet::new();
        assert_eq!(listing_step(&mut table, &[1]).choice, SchedChoice::Fifo);
        let step = listing_step(&mut table, &[1, 2]);
        assert_eq!((step.already_seen, step.choice), (1, SchedChoice::Cfs));
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
}
