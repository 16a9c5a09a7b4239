//! 000 Algorithm 1 as pure functions: the load of each CPU ([`combined_loads`]), its degree
//! against the average ([`mark_load_degrees`]) and the moves ([`plan_rebalance`]). No system
//! call, no clock: [`super::dynamic`] gathers the inputs and applies the moves.
//!
//! # The load of a CPU
//!
//! The kernel's own per-CPU load ignores sleeping threads, and parked GC workers sleep, so a
//! CPU on which several workers are about to wake up looks idle to it (000 §2.5, §4.1). The
//! load used here therefore adds our own workers back in:
//!
//! ```text
//! load_i = busy_i + GC_THREAD_LOAD × |{ t ∈ workers : cpu(t) = i }|
//! ```
//!
//! where `busy_i ∈ [0, 1]` is the fraction of the last sampling window CPU `i` spent busy
//! ([`crate::os::cpu::sampler`]) and `workers` are the GC threads that take part in the coming
//! collection, whatever their state (at the start of a collection they are all parked, so
//! their own work is not in `busy_i`). Each worker counts [`GC_THREAD_LOAD`] = 1, one runnable
//! task's worth, on the CPU it will wake on.
//!
//! # The decision (000 Algorithm 1, with one refinement)
//!
//! With `L_i` the load of allowed CPU `i` and `avg` their mean, CPU `i` is *high* when
//! `L_i ≥ 2·avg`, *low* when `L_i ≤ ½·avg`, *normal* otherwise (the factors are
//! [`Thresholds`]). The marks are taken once, before any move. Workers are then visited in id
//! order; a worker whose current CPU is marked high moves to a CPU drawn uniformly from the
//! **still-low** CPUs. The refinement: a moved worker is counted on its target (its
//! [`GC_THREAD_LOAD`] moves from source to target), and a CPU marked low stays a candidate only
//! while its updated load is still `≤ ½·avg`. So several workers leaving one crowded CPU spread
//! over several low CPUs instead of all landing on the same one; when no candidate is left the
//! remaining workers stay where they are. Since moves keep the total load, `avg` does not
//! change. CPUs outside the allowed set are never targets, and workers on CPUs outside it (or
//! whose CPU is unknown) are neither counted nor moved. With fewer than two allowed CPUs, or
//! no load at all, nothing moves.

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

/// One decided move of worker `worker` (an index into the worker list given).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PlannedMove {
    /// Worker id (index into the worker list given).
    pub worker: usize,
    /// The CPU it is on.
    pub from: u32,
    /// The CPU it should go to.
    pub to: u32,
}

/// The outcome of [`plan_rebalance`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct RebalancePlan {
    /// Average load over the allowed CPUs.
    pub average: f64,
    /// Degree of each allowed CPU, in the order given, before any move.
    pub degrees: Vec<LoadDegree>,
    /// Loads after the planned moves, in the order given.
    pub loads_after: Vec<f64>,
    /// The moves, in worker order.
    pub moves: Vec<PlannedMove>,
}

impl RebalancePlan {
    /// CPUs (of `cpus`, the list the plan was made for) with the given degree.
    pub fn cpus_with(&self, cpus: &[u32], degree: LoadDegree) -> Vec<u32> {
        cpus.iter()
            .zip(&self.degrees)
            .filter(|(_, &d)| d == degree)
            .map(|(&c, _)| c)
            .collect()
    }
}

/// 000 Algorithm 1 as described in the module documentation.
///
/// * `cpus`: the allowed CPUs (distinct); `loads[k]` is the load of `cpus[k]` and **must
///   already include** [`GC_THREAD_LOAD`] for each worker on it (as [`combined_loads`]
///   computes), because a moved worker's share is taken off its source and put on its target.
/// * `worker_cpus[w]`: the CPU worker `w` is on (`None` if unknown).
/// * `below(n)`: a uniform random number in `0..n` (out-of-range answers are wrapped).
pub fn plan_rebalance(
    cpus: &[u32],
    loads: &[f64],
    worker_cpus: &[Option<u32>],
    thresholds: Thresholds,
    below: &mut dyn FnMut(usize) -> usize,
) -> RebalancePlan {
    debug_assert_eq!(cpus.len(), loads.len(), "one load per allowed CPU");
    let n = cpus.len().min(loads.len());
    let cpus = &cpus[..n];
    let mut loads: Vec<f64> = loads[..n].iter().map(|&l| sane(l)).collect();
    let (average, degrees) = mark_load_degrees(&loads, thresholds);
    let mut plan = RebalancePlan {
        average,
        degrees,
        loads_after: Vec::new(),
        moves: Vec::new(),
    };
    if n < 2 || average <= 0.0 {
        plan.loads_after = loads;
        return plan;
    }
    let low_limit = thresholds.low * average;
    let mut candidates: Vec<usize> = Vec::with_capacity(n);
    for (worker, cpu) in worker_cpus.iter().enumerate() {
        let Some(from) = cpu.and_then(|c| cpus.iter().position(|&x| x == c)) else {
            continue;
        };
        if plan.degrees[from] != LoadDegree::High {
            continue;
        }
        candidates.clear();
        candidates.extend(
            (0..n).filter(|&k| plan.degrees[k] == LoadDegree::Low && loads[k] <= low_limit),
        );
        if candidates.is_empty() {
            continue;
        }
        let to = candidates[below(candidates.len()) % candidates.len()];
        loads[from] = (loads[from] - GC_THREAD_LOAD).max(0.0);
        loads[to] += GC_THREAD_LOAD;
        plan.moves.push(PlannedMove {
            worker,
            from: cpus[from],
            to: cpus[to],
        });
    }
    plan.loads_after = loads;
    plan
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::time::Duration;

    /// A tiny deterministic generator for the tests.
    pub(crate) fn rng(seed: u64) -> impl FnMut(usize) -> usize {
        let s = crate::os::gc_affinity::SplitMix::new(seed);
        move |n| s.below(n)
    }

    fn plan(cpus: &[u32], busy: &[f64], workers: &[Option<u32>], seed: u64) -> RebalancePlan {
        let mut by_cpu = vec![0.0; cpus.iter().max().map_or(0, |&m| m as usize + 1)];
        for (&c, &b) in cpus.iter().zip(busy) {
            by_cpu[c as usize] = b;
        }
        let snap = LoadSnapshot::new(by_cpu, Duration::from_millis(100));
        let loads = combined_loads(cpus, Some(&snap), workers);
        plan_rebalance(cpus, &loads, workers, Thresholds::default(), &mut rng(seed))
    }

    #[test]
    fn combined_loads_add_our_threads() {
        let snap = LoadSnapshot::new(vec![0.5, 0.25, f64::NAN, 7.0], Duration::from_millis(100));
        let loads = combined_loads(
            &[0, 1, 5],
            Some(&snap),
            &[Some(0), Some(0), Some(1), None, Some(9)],
        );
        assert_eq!(loads, vec![2.5, 1.25, 0.0]);
        assert_eq!(combined_loads(&[0, 1], None, &[Some(1)]), vec![0.0, 1.0]);
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

    #[test]
    fn only_workers_on_high_cpus_move() {
        // cpu0: busy 1 + three workers; cpus 1 and 2: idle + one worker each; cpu3 idle.
        let p = plan(
            &[0, 1, 2, 3],
            &[1.0, 0.0, 0.0, 0.0],
            &[Some(0), Some(0), Some(0), Some(1), Some(2)],
            1,
        );
        // loads [4, 1, 1, 0], avg 1.5: cpu0 high, cpu3 low (≤ 0.75), cpus 1 and 2 normal.
        assert_eq!(
            p.degrees,
            vec![
                LoadDegree::High,
                LoadDegree::Normal,
                LoadDegree::Normal,
                LoadDegree::Low
            ]
        );
        // Only one worker fits on cpu3 before it stops being low (0 + 1 > 0.75).
        assert_eq!(
            p.moves,
            vec![PlannedMove {
                worker: 0,
                from: 0,
                to: 3
            }]
        );
        assert_eq!(p.loads_after, vec![3.0, 1.0, 1.0, 1.0]);
        assert_eq!(p.cpus_with(&[0, 1, 2, 3], LoadDegree::Low), vec![3]);
    }

    #[test]
    fn targets_are_drawn_from_every_low_cpu_and_nothing_else() {
        // cpu0: busy 1 + one worker = 2 (high); cpus 1-3 idle (low); cpus 4-7 busy 0.45
        // (normal). avg = 3.8 / 8 = 0.475; high ≥ 0.95, low ≤ 0.2375.
        let cpus: Vec<u32> = (0..8).collect();
        let busy = [1.0, 0.0, 0.0, 0.0, 0.45, 0.45, 0.45, 0.45];
        let mut seen = BTreeSet::new();
        for seed in 0..500 {
            let p = plan(&cpus, &busy, &[Some(0)], seed);
            assert_eq!(p.moves.len(), 1, "seed {seed}");
            let m = p.moves[0];
            assert_eq!((m.worker, m.from), (0, 0));
            assert!((1..=3).contains(&m.to), "seed {seed}: moved to {}", m.to);
            seen.insert(m.to);
        }
        assert_eq!(seen, BTreeSet::from([1, 2, 3]));
    }

    #[test]
    fn workers_leaving_one_cpu_spread_over_the_low_ones() {
        // Three stacked workers, four idle CPUs: loads [3, 0, 0, 0], avg 0.75, low ≤ 0.375.
        for seed in 0..200 {
            let p = plan(&[0, 1, 2, 3], &[0.0; 4], &[Some(0); 3], seed);
            let targets: BTreeSet<u32> = p.moves.iter().map(|m| m.to).collect();
            assert_eq!(p.moves.len(), 3, "seed {seed}");
            assert_eq!(targets, BTreeSet::from([1, 2, 3]), "seed {seed}");
        }
        // Two stacked workers on two CPUs: one moves, the other stays (no pile-up).
        let p = plan(&[0, 1], &[0.0, 0.0], &[Some(0), Some(0)], 3);
        assert_eq!(
            p.moves,
            vec![PlannedMove {
                worker: 0,
                from: 0,
                to: 1
            }]
        );
    }

    #[test]
    fn the_allowed_set_is_respected() {
        // Worker 1 sits on CPU 9, outside the allowed set: neither counted nor moved, and no
        // target is ever outside the set.
        for seed in 0..200 {
            let p = plan(
                &[2, 4, 6],
                &[1.0, 0.0, 0.0],
                &[Some(2), Some(9), Some(2), None],
                seed,
            );
            assert!(p.moves.iter().all(|m| m.worker != 1 && m.worker != 3));
            assert!(p.moves.iter().all(|m| [4, 6].contains(&m.to)));
            assert_eq!(p.moves.len(), 2, "seed {seed}");
        }
    }

    #[test]
    fn no_low_cpu_means_no_move() {
        // loads [4, 1.2, 1.2, 1.6], avg 2: cpu0 high, nothing ≤ 1.
        let cpus = [0, 1, 2, 3];
        let loads = [4.0, 1.2, 1.2, 1.6];
        let workers = [Some(0), Some(0)];
        let p = plan_rebalance(&cpus, &loads, &workers, Thresholds::default(), &mut rng(1));
        assert_eq!(p.degrees[0], LoadDegree::High);
        assert!(p.moves.is_empty());
        // Evenly loaded: nothing is high.
        let p = plan(&cpus, &[0.0; 4], &[Some(0), Some(1), Some(2), Some(3)], 1);
        assert!(p.moves.is_empty());
    }

    #[test]
    fn one_cpu_or_no_load_means_no_move() {
        let p = plan(&[0], &[1.0], &[Some(0), Some(0), Some(0)], 1);
        assert!(p.moves.is_empty());
        let p = plan_rebalance(
            &[0, 1],
            &[0.0, 0.0],
            &[None],
            Thresholds::default(),
            &mut rng(1),
        );
        assert!(p.moves.is_empty());
        let p = plan_rebalance(&[], &[], &[Some(0)], Thresholds::default(), &mut rng(1));
        assert!(p.moves.is_empty());
    }

    #[test]
    fn a_wild_random_source_cannot_pick_outside_the_candidates() {
        let loads = combined_loads(&[0, 1, 2], None, &[Some(0), Some(0)]);
        let p = plan_rebalance(
            &[0, 1, 2],
            &loads,
            &[Some(0), Some(0)],
            Thresholds::default(),
            &mut |_| usize::MAX,
        );
        assert!(p.moves.iter().all(|m| m.to == 1 || m.to == 2));
        assert_eq!(p.moves.len(), 2);
    }
}
