//! 000 Algorithm 1 as pure functions: the load of each CPU ([`combined_loads`]), its degree
//! against the average ([`mark_load_degrees`], lines 3–14), one GC thread's own decision
//! ([`rebalance_thread`], lines 17–22), and one collection's table of worker CPUs against which
//! each worker decides in turn ([`Round`], [`Round::decide`]). No system call, no clock: the
//! bind and the random source are the caller's. [`super::dynamic`] gathers the inputs, runs
//! each worker's decision on that worker and binds it with `sched_setaffinity`; the simulator
//! (`concord-sim`'s `SimGcAffinity`) runs the same [`Round`] with its simulated threads' CPUs
//! and bind.
//!
//! # The load of a CPU
//!
//! The kernel's `load_avg` counts the runnable threads of a CPU but not the sleeping ones, and
//! parked GC workers sleep, so a CPU on which several workers are about to wake looks idle to
//! it (000 §2.5); the paper changed the kernel to add sleeping threads (§4.1). Here the same
//! sum is made in user space:
//!
//! ```text
//! load_i = runnable_i + GC_THREAD_LOAD × |{ t ∈ workers : cpu(t) = i }|
//! ```
//!
//! where `runnable_i` is the number of runnable threads whose last CPU is `i`, of every
//! process, leaving out this process's GC workers and mutators ([`crate::os::cpu::runnable`]),
//! and `workers` are the GC threads taking part in the coming collection, asleep or awake,
//! each counted on the CPU it is on (or last ran on, if asleep).
//!
//! # The decision
//!
//! With `avg` the mean load over the allowed CPUs, CPU `i` is *high* when `L_i ≥ 2·avg`,
//! *low* when `L_i ≤ ½·avg`, *normal* otherwise (the factors are [`Thresholds`]). A GC thread
//! whose current CPU is high binds itself to the `k`-th low CPU, `k` uniform in `0..N_low`;
//! otherwise it stays. Each thread decides for itself from the loads as they are when it
//! decides, so a thread that moved counts on its new CPU for the threads deciding after it
//! (as a rebound thread does in the kernel's per-CPU load). CPUs outside the allowed set are
//! never targets, and a thread on a CPU outside it (or on an unknown CPU) stays. With fewer
//! than two allowed CPUs, or no load at all, nothing moves.

use std::io;
use std::sync::Arc;

use super::{AffinityFailure, AffinityReport, WorkerMove};
use crate::os::cpu::LoadSnapshot;

/// Load one of our GC threads adds to the CPU it will wake on (one runnable task).
pub const GC_THREAD_LOAD: f64 = 1.0;

/// `load_i` of the module documentation for each CPU of `cpus`: its busy fraction in `busy`
/// (0 without a snapshot) plus [`GC_THREAD_LOAD`] for each entry of `thread_cpus` equal to it.
/// Threads on CPUs outside `cpus` (or of unknown CPU) add nothing.
pub fn combined_loads(
    cpus: &[u32],
    busy: Option<&LoadSnapshot>,
    thread_cpus: &[Option<u32>],
) -> Vec<f64> {
    cpus.iter()
        .map(|&cpu| {
            let threads = thread_cpus.iter().filter(|&&c| c == Some(cpu)).count();
            busy.map_or(0.0, |s| s.busy(cpu)) + GC_THREAD_LOAD * threads as f64
        })
        .collect()
}

/// The factors of 000 Algorithm 1: high when `load ≥ high·avg`, low when `load ≤ low·avg`.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Thresholds {
    /// Multiple of the average at or above which a CPU is high (2 in the paper).
    pub high: f64,
    /// Multiple of the average at or below which a CPU is low (½ in the paper).
    pub low: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Self {
            high: 2.0,
            low: 0.5,
        }
    }
}

/// How loaded a CPU is relative to the average.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadDegree {
    /// At most `low·avg`: a target for workers.
    Low,
    /// In between.
    Normal,
    /// At least `high·avg`: its workers move away.
    High,
}

fn sane(load: f64) -> f64 {
    if load.is_finite() && load > 0.0 {
        load
    } else {
        0.0
    }
}

/// The average of `loads` (non-numbers and negatives count as 0) and the degree of each.
/// With no load at all (average 0) every CPU is normal.
pub fn mark_load_degrees(loads: &[f64], thresholds: Thresholds) -> (f64, Vec<LoadDegree>) {
    if loads.is_empty() {
        return (0.0, Vec::new());
    }
    let avg = loads.iter().map(|&l| sane(l)).sum::<f64>() / loads.len() as f64;
    let degrees = loads
        .iter()
        .map(|&l| {
            let l = sane(l);
            if avg <= 0.0 {
                LoadDegree::Normal
            } else if l >= thresholds.high * avg {
                LoadDegree::High
            } else if l <= thresholds.low * avg {
                LoadDegree::Low
            } else {
                LoadDegree::Normal
            }
        })
        .collect();
    (avg, degrees)
}

/// The marks as a collection's record shows them: the average of `loads` (the loads of
/// `cpus`, as for [`mark_load_degrees`]) and the CPUs of `cpus` marked high and low, in the
/// order of `cpus`.
pub fn marked_cpus(
    cpus: &[u32],
    loads: &[f64],
    thresholds: Thresholds,
) -> (f64, Vec<u32>, Vec<u32>) {
    let (average, degrees) = mark_load_degrees(loads, thresholds);
    let with = |d: LoadDegree| -> Vec<u32> {
        cpus.iter()
            .zip(&degrees)
            .filter(|(_, &x)| x == d)
            .map(|(&c, _)| c)
            .collect()
    };
    (average, with(LoadDegree::High), with(LoadDegree::Low))
}

/// Algorithm 1 lines 17–22 for one GC thread on CPU `current`: `Some(target)` if it should
/// bind itself to `target`, `None` if it stays.
///
/// * `cpus`: the allowed CPUs (distinct); `loads[k]` is the load of `cpus[k]`, including this
///   thread and the other GC threads ([`combined_loads`]).
/// * `below(n)`: a uniform random number in `0..n` (out-of-range answers are wrapped).
pub fn rebalance_thread(
    cpus: &[u32],
    loads: &[f64],
    current: u32,
    thresholds: Thresholds,
    below: &mut dyn FnMut(usize) -> usize,
) -> Option<u32> {
    debug_assert_eq!(cpus.len(), loads.len(), "one load per allowed CPU");
    let n = cpus.len().min(loads.len());
    if n < 2 {
        return None;
    }
    let (_, degrees) = mark_load_degrees(&loads[..n], thresholds);
    let from = cpus[..n].iter().position(|&c| c == current)?;
    if degrees[from] != LoadDegree::High {
        return None;
    }
    let low: Vec<u32> = (0..n)
        .filter(|&k| degrees[k] == LoadDegree::Low)
        .map(|k| cpus[k])
        .collect();
    if low.is_empty() {
        return None;
    }
    Some(low[below(low.len()) % low.len()])
}

/// Who decides in one turn of a [`Round`]: worker `worker`, kernel thread `tid` (what the
/// records name), on CPU `cpu` (`None`: unknown, it stays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// Worker id (its row in the round's table).
    pub worker: usize,
    /// Its kernel thread id, for the records.
    pub tid: i32,
    /// The CPU it is on as it decides.
    pub cpu: Option<u32>,
}

/// One collection's table for Algorithm 1: where each worker taking part is (by worker id,
/// asleep on the CPU it last ran on or awake on the one it runs on), which workers have
/// decided, the other threads' load, and the record of what the decisions did. Opened before
/// the workers wake ([`Round::open`]), decided against by each worker in turn
/// ([`Round::decide`]: a worker that moved counts on its new CPU for those deciding after it),
/// closed for the record ([`Round::close`]). Not synchronised: the caller holds it under its
/// lock.
#[derive(Debug, Default)]
pub struct Round {
    /// Counts up with every collection; `decided[w] == epoch` once worker `w` has decided.
    epoch: u64,
    cpus: Vec<Option<u32>>,
    decided: Vec<u64>,
    other: Option<Arc<LoadSnapshot>>,
    report: AffinityReport,
}

impl Round {
    /// Open a collection's round: worker `w` takes part on `cpus[w]` (`None`: not started or
    /// unknown), `other` is the other threads' load (`None`: only the workers count), of age
    /// `load_age_ms` for the record. What an earlier round recorded is dropped.
    pub fn open(
        &mut self,
        cpus: Vec<Option<u32>>,
        other: Option<Arc<LoadSnapshot>>,
        load_age_ms: Option<f64>,
    ) {
        self.epoch += 1;
        self.decided.resize(cpus.len(), 0);
        self.cpus = cpus;
        self.report = AffinityReport {
            load_age_ms,
            ..AffinityReport::default()
        };
        self.other = other;
    }

    /// Workers taking part in the open round (0 once closed).
    pub fn workers(&self) -> usize {
        self.cpus.len()
    }

    /// The CPU worker `worker` counts on now (`None` if unknown or not taking part).
    pub fn cpu(&self, worker: usize) -> Option<u32> {
        self.cpus.get(worker).copied().flatten()
    }

    /// Whether this is worker `worker`'s first turn of the round (it takes part and has not
    /// decided yet); the turn is then taken: a second call says `false`.
    pub fn first_turn(&mut self, worker: usize) -> bool {
        if worker >= self.cpus.len() || self.decided[worker] == self.epoch {
            return false;
        }
        self.decided[worker] = self.epoch;
        true
    }

    /// Add `us` microseconds to the time the round's decisions took.
    pub fn add_decide_us(&mut self, us: f64) {
        self.report.decide_us += us;
    }

    /// One worker's decision (lines 17–22) against the table: count it on `turn.cpu`, mark
    /// the CPUs (the first decision's marks go in the record), and, if its CPU is high and a
    /// low one exists, bind it with `bind` to the `k`-th low CPU, `k = below(N_low)`. A bind
    /// that succeeds moves the worker in the table and is recorded (and returned); a refusal
    /// is recorded as [`AffinityFailure::new`] describes it, after `refused` has seen it (to
    /// count or say it). A worker of unknown CPU is recorded as such and stays.
    ///
    /// `allowed` are the allowed CPUs (ascending, distinct), `thresholds` the factors.
    pub fn decide(
        &mut self,
        allowed: &[u32],
        thresholds: Thresholds,
        turn: Turn,
        below: &mut dyn FnMut(usize) -> usize,
        bind: impl FnOnce(u32) -> io::Result<()>,
        refused: impl FnOnce(&AffinityFailure),
    ) -> Option<WorkerMove> {
        let Turn { worker, tid, cpu } = turn;
        self.cpus[worker] = cpu;
        let Some(from) = cpu else {
            self.report.unknown_cpu_workers.push(worker);
            return None;
        };
        let loads = combined_loads(allowed, self.other.as_deref(), &self.cpus);
        // The average is positive once a worker is counted, so 0 means "first decision": the
        // marks as the first worker to decide saw them go in the record.
        if self.report.average_load == 0.0 {
            let (average, high, low) = marked_cpus(allowed, &loads, thresholds);
            self.report.average_load = average;
            self.report.high_cpus = high;
            self.report.low_cpus = low;
        }
        let to = rebalance_thread(allowed, &loads, from, thresholds, below)?;
        match bind(to) {
            Ok(()) => {
                self.cpus[worker] = Some(to);
                let moved = WorkerMove {
                    worker,
                    tid,
                    from,
                    to,
                };
                self.report.moves.push(moved);
                Some(moved)
            }
            Err(e) => {
                let failure = AffinityFailure::new(worker, tid, to, &e);
                refused(&failure);
                self.report.failures.push(failure);
                None
            }
        }
    }

    /// Close the round: what the decisions did (an empty record if no round was open).
    pub fn close(&mut self) -> AffinityReport {
        self.cpus.clear();
        self.other = None;
        std::mem::take(&mut self.report)
    }
}

#[cfg(test)]
pub(super) mod tests {
    use std::time::Duration;

    use super::*;

    /// A deterministic stand-in for the random source.
    pub(crate) fn rng(seed: u64) -> impl FnMut(usize) -> usize {
        let r = super::super::SplitMix::new(seed);
        move |n| r.below(n)
    }

    #[test]
    fn combined_loads_add_our_threads_asleep_or_not() {
        // Runnable counts (not fractions): nothing is capped.
        let snap = LoadSnapshot::from_loads(vec![3.0, 0.5, f64::NAN, 7.0], Duration::ZERO);
        let loads = combined_loads(
            &[0, 1, 5],
            Some(&snap),
            &[Some(0), Some(0), Some(1), None, Some(9)],
        );
        assert_eq!(loads, vec![5.0, 1.5, 0.0]);
        assert_eq!(combined_loads(&[0, 1], None, &[Some(1)]), vec![0.0, 1.0]);
    }

    #[test]
    fn marked_cpus_name_the_high_and_low_cpus_in_order() {
        // avg = 1.55: high ≥ 3.1 (CPU 10), low ≤ 0.775 (CPUs 12 and 14).
        let (avg, high, low) = marked_cpus(
            &[14, 10, 12, 13],
            &[0.0, 4.0, 0.2, 2.0],
            Thresholds::default(),
        );
        assert!((avg - 1.55).abs() < 1e-12);
        assert_eq!((high, low), (vec![10], vec![14, 12]));
        assert_eq!(
            marked_cpus(&[], &[], Thresholds::default()),
            (0.0, vec![], vec![])
        );
    }

    #[test]
    fn marks_high_normal_low_against_the_average() {
        use LoadDegree::*;
        // avg = 1.55: high ≥ 3.1, low ≤ 0.775.
        let (avg, d) = mark_load_degrees(&[4.0, 1.0, 0.2, 1.0], Thresholds::default());
        assert!((avg - 1.55).abs() < 1e-12);
        assert_eq!(d, vec![High, Normal, Low, Normal]);
        // Boundaries are inclusive: 2·avg is high, ½·avg is low.
        let (_, d) = mark_load_degrees(&[2.0, 0.0], Thresholds::default());
        assert_eq!(d, vec![High, Low]);
        let (_, d) = mark_load_degrees(&[5.0, 1.0, 1.0, 1.0], Thresholds::default());
        assert_eq!(d, vec![High, Low, Low, Low]);
        // No load, or junk: all normal, no panic.
        let (avg, d) = mark_load_degrees(&[0.0, 0.0, f64::NAN], Thresholds::default());
        assert_eq!(avg, 0.0);
        assert_eq!(d, vec![Normal; 3]);
        assert_eq!(mark_load_degrees(&[], Thresholds::default()).1, vec![]);
    }

    /// Run the decisions of `workers` (their CPUs) in turn, as the workers do, each moved
    /// worker counted on its target for the ones after it; returns the CPUs after.
    fn in_turn(
        cpus: &[u32],
        runnable: &[f64],
        workers: &[Option<u32>],
        seed: u64,
    ) -> Vec<Option<u32>> {
        let snap = LoadSnapshot::from_loads(runnable.to_vec(), Duration::ZERO);
        let mut at = workers.to_vec();
        let mut below = rng(seed);
        for w in 0..at.len() {
            let Some(cur) = at[w] else { continue };
            let loads = combined_loads(cpus, Some(&snap), &at);
            if let Some(to) = rebalance_thread(cpus, &loads, cur, Thresholds::default(), &mut below)
            {
                at[w] = Some(to);
            }
        }
        at
    }

    #[test]
    fn two_sleeping_workers_stacked_on_one_of_two_cpus_spread() {
        // Loads 2, 0: avg 1, CPU 0 high (2 ≥ 2), CPU 1 low. The first worker moves; then 1, 1:
        // both normal, the second stays.
        let loads = combined_loads(&[0, 1], None, &[Some(0), Some(0)]);
        assert_eq!(loads, vec![2.0, 0.0]);
        let mut below = rng(1);
        assert_eq!(
            rebalance_thread(&[0, 1], &loads, 0, Thresholds::default(), &mut below),
            Some(1)
        );
        assert_eq!(
            in_turn(&[0, 1], &[], &[Some(0), Some(0)], 1),
            vec![Some(1), Some(0)]
        );
    }

    #[test]
    fn a_busy_loop_on_the_workers_cpu_moves_one_of_four() {
        // Busy loop + 4 workers on CPU 0: 5, 0; avg 2.5, high ≥ 5, low ≤ 1.25. One moves:
        // 4, 1 — CPU 0 is normal now (4 < 5), so the other three stay: the paper's rule.
        let workers = [Some(0); 4];
        assert_eq!(
            in_turn(&[0, 1], &[1.0], &workers, 7),
            vec![Some(1), Some(0), Some(0), Some(0)]
        );
        // The busy loop on the other CPU: 4, 1 from the start, nobody moves.
        assert_eq!(in_turn(&[0, 1], &[0.0, 1.0], &workers, 7), workers.to_vec());
    }

    #[test]
    fn only_a_thread_on_a_high_cpu_moves_and_only_to_a_low_one() {
        // Runnable 0, 3, 0, 1 and one worker on CPU 1: 0, 4, 0, 1; avg 1.25, high ≥ 2.5,
        // low ≤ 0.625: CPU 1 high, CPUs 0 and 2 low, CPU 3 normal.
        let cpus = [0, 1, 2, 3];
        let loads = combined_loads(
            &cpus,
            Some(&LoadSnapshot::from_loads(
                vec![0.0, 3.0, 0.0, 1.0],
                Duration::ZERO,
            )),
            &[Some(1)],
        );
        assert_eq!(loads, vec![0.0, 4.0, 0.0, 1.0]);
        let mut seen = std::collections::BTreeSet::new();
        let mut below = rng(3);
        for _ in 0..200 {
            seen.insert(rebalance_thread(
                &cpus,
                &loads,
                1,
                Thresholds::default(),
                &mut below,
            ));
        }
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), vec![Some(0), Some(2)]);
        for stay in [0, 2, 3] {
            assert_eq!(
                rebalance_thread(&cpus, &loads, stay, Thresholds::default(), &mut below),
                None
            );
        }
        // A CPU outside the allowed set: the thread stays.
        assert_eq!(
            rebalance_thread(&cpus, &loads, 9, Thresholds::default(), &mut below),
            None
        );
    }

    #[test]
    fn the_kth_low_cpu_is_picked() {
        // loads 6, 0, 1, 0: avg 1.75, high ≥ 3.5 (CPU 10), low ≤ 0.875 (CPUs 11 and 13).
        let cpus = [10, 11, 12, 13];
        let loads = [6.0, 0.0, 1.0, 0.0];
        let t = Thresholds::default();
        assert_eq!(
            rebalance_thread(&cpus, &loads, 10, t, &mut |n| {
                assert_eq!(n, 2);
                0
            }),
            Some(11)
        );
        assert_eq!(rebalance_thread(&cpus, &loads, 10, t, &mut |_| 1), Some(13));
        // A wild random source is wrapped, never out of the low set.
        assert_eq!(rebalance_thread(&cpus, &loads, 10, t, &mut |_| 5), Some(13));
    }

    #[test]
    fn a_round_moves_records_refusals_and_unknown_cpus_and_takes_each_turn_once() {
        let mut round = Round::default();
        round.open(vec![Some(0), Some(0), None], None, None);
        assert_eq!(round.workers(), 3);
        assert!(round.first_turn(1));
        assert!(!round.first_turn(1));
        assert!(!round.first_turn(3), "not taking part");
        let t = Thresholds::default();
        let turn = |worker, cpu| Turn {
            worker,
            tid: 10 + worker as i32,
            cpu,
        };
        // Loads 2, 0: worker 0's bind is refused; it stays counted on CPU 0.
        let mut refused = Vec::new();
        let moved = round.decide(
            &[0, 1],
            t,
            turn(0, Some(0)),
            &mut |_| 0,
            |_| Err(io::Error::from_raw_os_error(22)),
            |f| refused.push(f.clone()),
        );
        assert_eq!(moved, None);
        assert_eq!(refused.len(), 1);
        assert_eq!((refused[0].worker, refused[0].cpu), (0, 1));
        assert_eq!(refused[0].errno, Some(22));
        // Worker 1 moves, and counts on CPU 1 from then on.
        let moved = round.decide(&[0, 1], t, turn(1, Some(0)), &mut |_| 0, |_| Ok(()), |_| {});
        let expected = WorkerMove {
            worker: 1,
            tid: 11,
            from: 0,
            to: 1,
        };
        assert_eq!(moved, Some(expected));
        assert_eq!(round.cpu(1), Some(1));
        round.decide(&[0, 1], t, turn(2, None), &mut |_| 0, |_| Ok(()), |_| {});
        round.add_decide_us(3.0);
        let r = round.close();
        assert_eq!(r.average_load, 1.0);
        assert_eq!((r.high_cpus, r.low_cpus), (vec![0], vec![1]));
        assert_eq!(r.moves, vec![expected]);
        assert_eq!(r.failures, refused);
        assert_eq!(r.unknown_cpu_workers, vec![2]);
        assert_eq!(r.decide_us, 3.0);
        assert_eq!(round.workers(), 0);
        assert_eq!(round.close(), AffinityReport::default());
    }

    #[test]
    fn no_low_cpu_one_cpu_or_no_load_means_no_move() {
        let t = Thresholds::default();
        // 4, 2, 2, 2: avg 2.5, nothing ≥ 5: no high CPU.
        assert_eq!(
            rebalance_thread(&[0, 1, 2, 3], &[4.0, 2.0, 2.0, 2.0], 0, t, &mut |_| 0),
            None
        );
        // 9, 2, 2, 2: avg 3.75, CPU 0 high (≥ 7.5) but no CPU ≤ 1.875: no low CPU.
        assert_eq!(
            rebalance_thread(&[0, 1, 2, 3], &[9.0, 2.0, 2.0, 2.0], 0, t, &mut |_| 0),
            None
        );
        assert_eq!(rebalance_thread(&[0], &[5.0], 0, t, &mut |_| 0), None);
        assert_eq!(
            rebalance_thread(&[0, 1], &[0.0, 0.0], 0, t, &mut |_| 0),
            None
        );
    }
}
