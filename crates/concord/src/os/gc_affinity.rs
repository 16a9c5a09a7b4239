//! Where GC worker threads run: static binding and dynamic rebalancing (000 Algorithm 1).
//!
//! * [`GcAffinity::Static`]: worker `i` is pinned to the `i`-th allowed CPU (wrapping), once,
//!   on its own thread when the pool starts ([`GcAffinityController::bind_at_start`]).
//! * [`GcAffinity::Dynamic`]: at the start of every collection the controller computes the load
//!   of each allowed CPU (busy fraction from the [`LoadSampler`] plus one per GC worker on it,
//!   see [`crate::os::cpu_view`] and [`worker_cpu`]), marks CPUs high / normal / low against the
//!   average, and moves every worker sitting on a high CPU to a randomly chosen low one
//!   ([`plan_rebalance`], [`GcAffinityController::before_collection`]).
//! * [`GcAffinity::None`]: nothing is touched.
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
//!
//! A move pins the worker to its single target CPU (`sched_setaffinity`); it stays pinned until
//! a later collection finds that CPU high and moves it again. A failing call (`EINVAL` for a
//! CPU outside the cgroup's cpuset or offline, `EPERM`) is printed once per controller and
//! otherwise only recorded in the [`AffinityReport`]; the collection goes on.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::cpu_view::{
    combined_loads, current_tid, set_thread_affinity, task_stat, thread_affinity, LoadSampler,
    LoadSnapshot, GC_THREAD_LOAD,
};
use super::policy::GcAffinity;

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

/// One decided move.
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

/// 000 Algorithm 1 as described in the module documentation, as a pure function.
///
/// * `cpus`: the allowed CPUs (distinct); `loads[k]` is the load of `cpus[k]` and **must
///   already include** [`GC_THREAD_LOAD`] for each worker on it (as
///   [`combined_loads`] computes), because a moved worker's share is taken off its source and
///   put on its target.
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

/// The CPU static binding gives worker `worker`: the `worker`-th allowed CPU, wrapping when
/// there are more workers than CPUs. `None` when `allowed` is empty.
pub fn static_cpu(allowed: &[u32], worker: usize) -> Option<u32> {
    (!allowed.is_empty()).then(|| allowed[worker % allowed.len()])
}

/// The CPU worker thread `tid` of this process is on, for placement: the CPU it last ran on
/// (`/proc/self/task/<tid>/stat` field 39), except when its affinity mask is a single other
/// CPU. A sleeping thread whose mask was changed is only migrated when it wakes, so until then
/// field 39 still names the old CPU; the mask tells where it will run. `None` for `tid ≤ 0`
/// (a worker not started yet) or an unreadable thread.
pub fn worker_cpu(tid: i32) -> Option<u32> {
    if tid <= 0 {
        return None;
    }
    let last = task_stat(tid).ok()?.processor;
    match thread_affinity(tid).ok().as_deref() {
        Some(&[only]) if only != last => Some(only),
        _ => Some(last),
    }
}

/// A worker that was moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct WorkerMove {
    /// Worker id.
    pub worker: usize,
    /// Its kernel thread id.
    pub tid: i32,
    /// The CPU it was on.
    pub from: u32,
    /// The CPU it is now pinned to.
    pub to: u32,
}

/// A placement the OS refused.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AffinityFailure {
    /// Worker id.
    pub worker: usize,
    /// Its kernel thread id.
    pub tid: i32,
    /// The CPU it was to be pinned to.
    pub cpu: u32,
    /// The OS error number, if the kernel refused (`EINVAL`, `EPERM`, …).
    pub errno: Option<i32>,
    /// The error as text.
    pub error: String,
}

/// What the controller did at the start of one collection (for the per-collection record).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct AffinityReport {
    /// Average load over the allowed CPUs (0 when nothing was decided).
    pub average_load: f64,
    /// CPUs marked high.
    pub high_cpus: Vec<u32>,
    /// CPUs marked low.
    pub low_cpus: Vec<u32>,
    /// Moves carried out.
    pub moves: Vec<WorkerMove>,
    /// Moves the OS refused.
    pub failures: Vec<AffinityFailure>,
    /// Active workers whose CPU could not be found out (not started, or their stat unreadable).
    pub unknown_cpu_workers: Vec<usize>,
    /// Age of the busy fractions used, in milliseconds (`None`: no sample, busy counted as 0).
    pub load_age_ms: Option<f64>,
    /// Time spent deciding and applying, in microseconds.
    pub decide_us: f64,
}

impl AffinityReport {
    /// Nothing was moved and nothing failed.
    pub fn is_quiet(&self) -> bool {
        self.moves.is_empty() && self.failures.is_empty()
    }
}

/// Applies a [`GcAffinity`] policy to the GC workers of one heap. `Send + Sync`; all methods
/// take `&self`.
pub struct GcAffinityController {
    kind: GcAffinity,
    allowed: Vec<u32>,
    sampler: Option<LoadSampler>,
    thresholds: Thresholds,
    rng: AtomicU64,
    warned: AtomicBool,
    failures_total: AtomicU64,
    /// Workers this controller pinned to one CPU (tid → CPU): a sleeping worker only migrates
    /// when it wakes, so its last CPU is stale until then, but its pin says where it will run.
    pinned: std::sync::Mutex<std::collections::HashMap<i32, u32>>,
}

const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

fn splitmix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl GcAffinityController {
    /// A controller for `kind` over the CPUs in `allowed_cpus` (normally
    /// [`crate::os::cpu_view::CpuView::allowed`]). `sampler` supplies busy fractions for
    /// `Dynamic`; without it only our own GC threads count as load. Default thresholds (2, ½)
    /// and a time-based random seed.
    pub fn new(kind: GcAffinity, allowed_cpus: Vec<u32>, sampler: Option<LoadSampler>) -> Self {
        let mut allowed = allowed_cpus;
        allowed.sort_unstable();
        allowed.dedup();
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (u64::from(std::process::id()) << 32);
        Self {
            kind,
            allowed,
            sampler,
            thresholds: Thresholds::default(),
            rng: AtomicU64::new(seed),
            warned: AtomicBool::new(false),
            failures_total: AtomicU64::new(0),
            pinned: Default::default(),
        }
    }

    /// Use other high/low factors.
    pub fn with_thresholds(mut self, thresholds: Thresholds) -> Self {
        self.thresholds = thresholds;
        self
    }

    /// Seed the random choice of target CPUs (for reproducible runs).
    pub fn with_seed(self, seed: u64) -> Self {
        self.rng.store(seed, Ordering::Relaxed);
        self
    }

    /// The policy.
    pub fn kind(&self) -> GcAffinity {
        self.kind
    }

    /// The CPUs placements may use, ascending.
    pub fn allowed_cpus(&self) -> &[u32] {
        &self.allowed
    }

    /// The thresholds in use.
    pub fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    /// The load sampler, if any.
    pub fn sampler(&self) -> Option<&LoadSampler> {
        self.sampler.as_ref()
    }

    /// Whether the policy does anything: not `None`, and at least two allowed CPUs.
    pub fn is_active(&self) -> bool {
        self.kind != GcAffinity::None && self.allowed.len() >= 2
    }

    /// Failed placements so far (printed or not).
    pub fn failures_total(&self) -> u64 {
        self.failures_total.load(Ordering::Relaxed)
    }

    /// Whether a failure has been printed already.
    pub fn has_warned(&self) -> bool {
        self.warned.load(Ordering::Relaxed)
    }

    /// The CPU `Static` binding gives worker `worker_id` (`None` if the policy is not an
    /// active `Static`).
    pub fn static_cpu(&self, worker_id: usize) -> Option<u32> {
        if self.kind == GcAffinity::Static && self.is_active() {
            static_cpu(&self.allowed, worker_id)
        } else {
            None
        }
    }

    /// Call on worker `worker_id`'s own thread when it starts (the pool's `on_start`). Under
    /// `Static` pins the calling thread to its CPU and returns it; otherwise does nothing
    /// (`Ok(None)`). A refusal is printed once per controller and returned.
    pub fn bind_at_start(&self, worker_id: usize) -> Result<Option<u32>, AffinityFailure> {
        let Some(cpu) = self.static_cpu(worker_id) else {
            return Ok(None);
        };
        let tid = current_tid();
        match set_thread_affinity(tid, &[cpu]) {
            Ok(()) => Ok(Some(cpu)),
            Err(e) => Err(self.failed(worker_id, tid, cpu, &e)),
        }
    }

    /// Call once per collection on the VM thread, after the world is stopped and before the
    /// workers are dispatched. `tids` are the kernel thread ids of the pool's workers by
    /// worker id (`parallel::WorkerPool::worker_tids`); the first `active` take part.
    /// Under `Dynamic` reads each active worker's CPU ([`worker_cpu`]) and the sampler's latest busy
    /// fractions (never waits for a window), plans with [`plan_rebalance`] and applies the
    /// moves. Under other policies, or with one allowed CPU, returns an empty report.
    pub fn before_collection(&self, tids: &[i32], active: usize) -> AffinityReport {
        let snapshot = match (&self.sampler, self.kind) {
            (Some(s), GcAffinity::Dynamic) => s.latest(),
            _ => None,
        };
        self.rebalance_with(tids, active, snapshot.as_deref())
    }

    /// [`GcAffinityController::before_collection`] with the busy fractions given instead of
    /// taken from the sampler (`None`: only the workers count). For tests and experiments
    /// that need to force a decision.
    pub fn rebalance_with(
        &self,
        tids: &[i32],
        active: usize,
        busy: Option<&LoadSnapshot>,
    ) -> AffinityReport {
        let cpus: Vec<Option<u32>> = tids.iter().map(|&tid| worker_cpu(tid)).collect();
        self.rebalance_from(tids, &cpus, active, busy)
    }

    /// [`GcAffinityController::before_collection`] with each worker's last CPU supplied by the
    /// caller (e.g. [`crate::parallel::WorkerPool::worker_last_cpus`], sampled by the workers
    /// themselves), so the pause path reads no `/proc` file. Workers this controller pinned
    /// count on their pinned CPU whatever `last_cpus` says.
    pub fn before_collection_from(
        &self,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
    ) -> AffinityReport {
        let snapshot = match (&self.sampler, self.kind) {
            (Some(s), GcAffinity::Dynamic) => s.latest(),
            _ => None,
        };
        self.rebalance_from(tids, last_cpus, active, snapshot.as_deref())
    }

    fn rebalance_from(
        &self,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
        busy: Option<&LoadSnapshot>,
    ) -> AffinityReport {
        let mut report = AffinityReport::default();
        if self.kind != GcAffinity::Dynamic || !self.is_active() {
            return report;
        }
        let start = Instant::now();
        let active = active.min(tids.len()).min(last_cpus.len());
        let tids = &tids[..active];
        let worker_cpus: Vec<Option<u32>> = {
            let pinned = self.pinned.lock().unwrap_or_else(|p| p.into_inner());
            tids.iter()
                .zip(last_cpus)
                .map(|(&tid, &last)| {
                    if tid <= 0 {
                        None
                    } else {
                        pinned.get(&tid).copied().or(last)
                    }
                })
                .collect()
        };
        report.unknown_cpu_workers = worker_cpus
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_none())
            .map(|(w, _)| w)
            .collect();
        let loads = combined_loads(&self.allowed, busy, &worker_cpus);
        let plan = plan_rebalance(
            &self.allowed,
            &loads,
            &worker_cpus,
            self.thresholds,
            &mut |n| self.below(n),
        );
        report.average_load = plan.average;
        report.high_cpus = plan.cpus_with(&self.allowed, LoadDegree::High);
        report.low_cpus = plan.cpus_with(&self.allowed, LoadDegree::Low);
        report.load_age_ms = busy.map(|s| s.age().as_secs_f64() * 1e3);
        for m in &plan.moves {
            let tid = tids[m.worker];
            match set_thread_affinity(tid, &[m.to]) {
                Ok(()) => {
                    self.pinned
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(tid, m.to);
                    report.moves.push(WorkerMove {
                        worker: m.worker,
                        tid,
                        from: m.from,
                        to: m.to,
                    })
                }
                Err(e) => report.failures.push(self.failed(m.worker, tid, m.to, &e)),
            }
        }
        report.decide_us = start.elapsed().as_secs_f64() * 1e6;
        report
    }

    fn below(&self, n: usize) -> usize {
        let state = self
            .rng
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
            .wrapping_add(GOLDEN_GAMMA);
        (((splitmix(state) >> 32) * n as u64) >> 32) as usize
    }

    fn failed(&self, worker: usize, tid: i32, cpu: u32, e: &std::io::Error) -> AffinityFailure {
        self.failures_total.fetch_add(1, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            eprintln!(
                "concord: cannot pin GC worker {worker} (thread {tid}) to CPU {cpu}: {e}; \
                 the collector carries on without this placement (gc-affinity {}; later \
                 failures are only counted in the collection records)",
                self.kind
            );
        }
        AffinityFailure {
            worker,
            tid,
            cpu,
            errno: e.raw_os_error(),
            error: e.to_string(),
        }
    }
}

impl std::fmt::Debug for GcAffinityController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GcAffinityController")
            .field("kind", &self.kind)
            .field("allowed", &self.allowed)
            .field("thresholds", &self.thresholds)
            .field("sampler", &self.sampler)
            .field("failures_total", &self.failures_total())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A tiny deterministic generator for the tests.
    fn rng(seed: u64) -> impl FnMut(usize) -> usize {
        let mut s = seed;
        move |n| {
            s = s.wrapping_add(GOLDEN_GAMMA);
            (((splitmix(s) >> 32) * n as u64) >> 32) as usize
        }
    }

    fn plan(cpus: &[u32], busy: &[f64], workers: &[Option<u32>], seed: u64) -> RebalancePlan {
        let snap = LoadSnapshot::new(
            {
                let mut v = vec![0.0; cpus.iter().max().map_or(0, |&m| m as usize + 1)];
                for (&c, &b) in cpus.iter().zip(busy) {
                    v[c as usize] = b;
                }
                v
            },
            std::time::Duration::from_millis(100),
        );
        let loads = combined_loads(cpus, Some(&snap), workers);
        plan_rebalance(cpus, &loads, workers, Thresholds::default(), &mut rng(seed))
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

    #[test]
    fn static_binding_wraps() {
        let allowed = [3, 5, 7];
        let got: Vec<u32> = (0..7).filter_map(|w| static_cpu(&allowed, w)).collect();
        assert_eq!(got, vec![3, 5, 7, 3, 5, 7, 3]);
        assert_eq!(static_cpu(&[], 0), None);
    }

    #[test]
    fn inactive_controllers_do_nothing() {
        let me = current_tid();
        for kind in GcAffinity::ALL {
            let one = GcAffinityController::new(*kind, vec![0], None);
            assert!(!one.is_active());
            assert_eq!(one.bind_at_start(0), Ok(None));
            assert_eq!(one.before_collection(&[me], 1), AffinityReport::default());
        }
        let none = GcAffinityController::new(GcAffinity::None, vec![0, 1, 2], None);
        assert!(!none.is_active());
        assert_eq!(none.bind_at_start(1), Ok(None));
        assert!(none.rebalance_with(&[me], 1, None).is_quiet());
        let stat = GcAffinityController::new(GcAffinity::Static, vec![2, 0, 1, 1], None);
        assert_eq!(stat.allowed_cpus(), &[0, 1, 2]);
        assert_eq!(stat.static_cpu(4), Some(1));
        assert_eq!(stat.before_collection(&[me], 1), AffinityReport::default());
        let dynamic = GcAffinityController::new(GcAffinity::Dynamic, vec![0, 1], None);
        assert_eq!(dynamic.static_cpu(0), None);
        assert_eq!(dynamic.bind_at_start(0), Ok(None));
    }

    #[test]
    fn worker_cpu_of_a_live_and_a_missing_thread() {
        let me = current_tid();
        let mask = thread_affinity(0).unwrap();
        assert!(mask.contains(&worker_cpu(me).unwrap()));
        assert_eq!(worker_cpu(0), None);
        assert_eq!(worker_cpu(-1), None);
    }

    #[test]
    fn unknown_workers_are_reported_not_moved() {
        let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![0, 1], None).with_seed(9);
        // tid 0 (not started) and a tid that is not ours.
        let r = ctrl.rebalance_with(&[0, -3, 1], 3, None);
        assert_eq!(r.unknown_cpu_workers, vec![0, 1, 2]);
        assert!(r.is_quiet());
        assert_eq!(ctrl.failures_total(), 0);
        // `active` limits the workers looked at.
        let r = ctrl.rebalance_with(&[0, -3, 1], 1, None);
        assert_eq!(r.unknown_cpu_workers, vec![0]);
    }

    #[test]
    fn report_serializes() {
        let r = AffinityReport {
            average_load: 1.5,
            high_cpus: vec![0],
            low_cpus: vec![3],
            moves: vec![WorkerMove {
                worker: 0,
                tid: 7,
                from: 0,
                to: 3,
            }],
            failures: vec![AffinityFailure {
                worker: 1,
                tid: 8,
                cpu: 9,
                errno: Some(22),
                error: "Invalid argument".into(),
            }],
            unknown_cpu_workers: vec![],
            load_age_ms: Some(12.0),
            decide_us: 30.0,
        };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["moves"][0]["to"], 3);
        assert_eq!(v["failures"][0]["errno"], 22);
        assert_eq!(v["high_cpus"][0], 0);
    }
}
