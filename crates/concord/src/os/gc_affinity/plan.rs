//! 000 Algorithm 1 as pure functions: the load of each CPU ([`combined_loads`]), its degree
//! against the average ([`mark_load_degrees`], lines 3–14) and one GC thread's own decision
//! ([`rebalance_thread`], lines 17–22). No system call, no clock: [`super::dynamic`] gathers
//! the inputs, runs each worker's decision on that worker and applies the move.
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
