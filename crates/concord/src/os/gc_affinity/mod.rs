//! Where GC worker threads run (`gc-affinity`), one file per variant:
//!
//! * `none`: nothing is touched; threads are left to the OS scheduler.
//! * `static` ([`static_binding`]): worker `i` is pinned to the `i`-th allowed CPU when it
//!   starts ([`GcAffinityController::bind_at_start`]).
//! * `dynamic` ([`dynamic`], the decision in [`plan`]): 000 Algorithm 1 — at the start of
//!   every parallel collection ([`GcAffinityController::begin_collection`]) each worker
//!   decides for itself, on its own thread, when it starts its first job of the collection
//!   ([`GcAffinityController::worker_phase_start`]).
//!
//! The variant is chosen once, when the controller is built for a heap; with fewer than two
//! allowed CPUs every variant does nothing. A placement the OS refuses is said once (as a
//! warning through the `log` facade), counted, and recorded in the [`AffinityReport`] of its
//! collection; the collector carries on.

pub mod dynamic;
pub mod plan;
pub mod static_binding;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use self::dynamic::{worker_cpu, DynamicBalancer, OtherLoad};
pub use self::plan::Thresholds;
pub use self::static_binding::static_cpu;
use super::cpu::{ExcludedThreads, LoadSampler, LoadSnapshot, RunnableSampler};
use super::numa::NumaLayout;
use super::policy::GcAffinity;

/// The GC affinity policy applied to a heap configured with `kind` and NUMA layout `numa`: a
/// layout that places the GC workers by node ([`NumaLayout::places_workers`]) leaves no room
/// for one (it would move them off their node), so it steps aside (`None`); otherwise `kind`.
pub fn applied_gc_affinity(kind: GcAffinity, numa: NumaLayout) -> GcAffinity {
    if numa.places_workers() {
        GcAffinity::None
    } else {
        kind
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

impl AffinityFailure {
    /// The failure to pin worker `worker` (thread `tid`) to `cpu` with error `e`.
    pub fn new(worker: usize, tid: i32, cpu: u32, e: &std::io::Error) -> Self {
        Self {
            worker,
            tid,
            cpu,
            errno: e.raw_os_error(),
            error: e.to_string(),
        }
    }
}

/// What the controller did at the start of one collection (for the per-collection record).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct AffinityReport {
    /// Average load over the allowed CPUs as the first worker to decide saw it (0 when nothing
    /// was decided).
    pub average_load: f64,
    /// CPUs marked high (in the first decision).
    pub high_cpus: Vec<u32>,
    /// CPUs marked low (in the first decision).
    pub low_cpus: Vec<u32>,
    /// Moves carried out.
    pub moves: Vec<WorkerMove>,
    /// Moves the OS refused.
    pub failures: Vec<AffinityFailure>,
    /// Active workers whose CPU could not be found out (not started, or their stat unreadable).
    pub unknown_cpu_workers: Vec<usize>,
    /// Age of the other threads' load used, in milliseconds (`None`: no sample, counted as 0).
    pub load_age_ms: Option<f64>,
    /// Time spent deciding and applying, in microseconds, summed over the workers' decisions.
    pub decide_us: f64,
}

impl AffinityReport {
    /// Nothing was moved and nothing failed.
    pub fn is_quiet(&self) -> bool {
        self.moves.is_empty() && self.failures.is_empty()
    }
}

/// SplitMix64's increment.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 random source several threads may draw from through `&self`: where
/// `gc-affinity dynamic` draws its target CPUs from ([`GcAffinityController::with_seed`] seeds
/// it; the simulator's GC affinity seeds one from the run's seed).
pub struct SplitMix(AtomicU64);

impl SplitMix {
    /// A source seeded with `seed` (the same seed draws the same numbers).
    pub fn new(seed: u64) -> Self {
        Self(AtomicU64::new(seed))
    }

    /// A uniform number in `0..n` (0 when `n` is 0).
    pub fn below(&self, n: usize) -> usize {
        // Relaxed: each draw only needs a distinct state; nothing is published through it.
        let mut z = self
            .0
            .fetch_add(GOLDEN_GAMMA, Ordering::Relaxed)
            .wrapping_add(GOLDEN_GAMMA);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (((z >> 32) * n as u64) >> 32) as usize
    }
}

/// Refused placements of one controller: counted, and the first one said.
pub(crate) struct FailureLog {
    kind: GcAffinity,
    warned: AtomicBool,
    total: AtomicU64,
}

impl FailureLog {
    /// Count the failure to pin `worker` (thread `tid`) to `cpu`, warn if it is the first, and
    /// describe it for the report.
    pub fn record(&self, worker: usize, tid: i32, cpu: u32, e: &std::io::Error) -> AffinityFailure {
        let failure = AffinityFailure::new(worker, tid, cpu, e);
        self.note(&failure);
        failure
    }

    /// Count `failure`, and warn if it is the first.
    pub fn note(&self, failure: &AffinityFailure) {
        let AffinityFailure {
            worker,
            tid,
            cpu,
            error: e,
            ..
        } = failure;
        // Relaxed (both): statistics and a once-only flag; no data is published with them.
        self.total.fetch_add(1, Ordering::Relaxed);
        if !self.warned.swap(true, Ordering::Relaxed) {
            log::warn!(
                "cannot pin GC worker {worker} (thread {tid}) to CPU {cpu}: {e}; the collector \
                 carries on without this placement (gc-affinity {}; later failures are only \
                 counted in the collection records)",
                self.kind
            );
        } else {
            log::debug!("cannot pin GC worker {worker} (thread {tid}) to CPU {cpu}: {e}");
        }
    }
}

/// The variant in force, with its state; chosen once by [`GcAffinityController::new`].
enum Placement {
    /// `none`, or any policy with fewer than two allowed CPUs.
    Unbound,
    /// `static`.
    Static,
    /// `dynamic`.
    Dynamic(Box<DynamicBalancer>),
}

/// Applies a [`GcAffinity`] policy to the GC workers of one heap. `Send + Sync`; all methods
/// take `&self`.
pub struct GcAffinityController {
    kind: GcAffinity,
    allowed: Vec<u32>,
    placement: Placement,
    /// Threads of ours the runnable-thread count leaves out (GC workers and mutators).
    excluded: Arc<ExcludedThreads>,
    failures: FailureLog,
}

impl GcAffinityController {
    /// A controller for `kind` over the CPUs in `allowed_cpus` (normally
    /// [`crate::os::cpu::CpuView::allowed`]). `sampler` supplies busy fractions as the other
    /// threads' load for `Dynamic` (other policies drop it); without it only the GC threads
    /// count. Default thresholds (2, ½) and a time-based random seed. For a heap whose
    /// workers and mutators are ours, [`GcAffinityController::counting_runnable`] counts
    /// runnable threads instead, as 000 does.
    pub fn new(kind: GcAffinity, allowed_cpus: Vec<u32>, sampler: Option<LoadSampler>) -> Self {
        let other = sampler.map_or(OtherLoad::Nothing, OtherLoad::Busy);
        Self::with_other_load(kind, allowed_cpus, other, Arc::default())
    }

    /// A controller whose `Dynamic` counts, as the other threads' load, the runnable threads
    /// per CPU of every process ([`RunnableSampler`]), leaving out the GC workers (registered
    /// by [`GcAffinityController::bind_at_start`]) and the mutators
    /// ([`GcAffinityController::note_mutator`]). If the sampler cannot start (no `/proc`) the
    /// error is returned with a controller counting only the GC threads.
    pub fn counting_runnable(
        kind: GcAffinity,
        allowed_cpus: Vec<u32>,
        period: std::time::Duration,
    ) -> (Self, Option<std::io::Error>) {
        let excluded = Arc::<ExcludedThreads>::default();
        let (other, error) = if kind == GcAffinity::Dynamic && allowed_cpus.len() >= 2 {
            match RunnableSampler::start(period, excluded.clone()) {
                Ok(s) => (OtherLoad::Runnable(s), None),
                Err(e) => (OtherLoad::Nothing, Some(e)),
            }
        } else {
            (OtherLoad::Nothing, None)
        };
        (
            Self::with_other_load(kind, allowed_cpus, other, excluded),
            error,
        )
    }

    fn with_other_load(
        kind: GcAffinity,
        allowed_cpus: Vec<u32>,
        other: OtherLoad,
        excluded: Arc<ExcludedThreads>,
    ) -> Self {
        let mut allowed = allowed_cpus;
        allowed.sort_unstable();
        allowed.dedup();
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ (u64::from(std::process::id()) << 32);
        let placement = match kind {
            _ if allowed.len() < 2 => Placement::Unbound,
            GcAffinity::None => Placement::Unbound,
            GcAffinity::Static => Placement::Static,
            GcAffinity::Dynamic => Placement::Dynamic(Box::new(DynamicBalancer::new(other, seed))),
        };
        Self {
            kind,
            allowed,
            placement,
            excluded,
            failures: FailureLog {
                kind,
                warned: AtomicBool::new(false),
                total: AtomicU64::new(0),
            },
        }
    }

    /// Seed the random choice of target CPUs, for reproducible runs (dynamic only).
    pub fn with_seed(mut self, seed: u64) -> Self {
        if let Placement::Dynamic(d) = &mut self.placement {
            d.rng = SplitMix::new(seed);
        }
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

    /// Whether the policy does anything: not `None`, and at least two allowed CPUs.
    pub fn is_active(&self) -> bool {
        !matches!(self.placement, Placement::Unbound)
    }

    /// Failed placements so far (said or not).
    pub fn failures_total(&self) -> u64 {
        // Relaxed: a statistic.
        self.failures.total.load(Ordering::Relaxed)
    }

    /// Whether a failure has been said already.
    pub fn has_warned(&self) -> bool {
        // Relaxed: a once-only flag, nothing is published with it.
        self.failures.warned.load(Ordering::Relaxed)
    }

    /// The CPU `Static` binding gives worker `worker_id` (`None` if the policy is not an
    /// active `Static`).
    pub fn static_cpu(&self, worker_id: usize) -> Option<u32> {
        match self.placement {
            Placement::Static => static_cpu(&self.allowed, worker_id),
            _ => None,
        }
    }

    /// Call on worker `worker_id`'s own thread when it starts (the pool's `on_start`). Under
    /// `Static` pins the calling thread to its CPU and returns it; otherwise does nothing
    /// (`Ok(None)`). A refusal is said once per controller and returned. The thread is left
    /// out of the runnable-thread count (the decisions count GC workers themselves).
    pub fn bind_at_start(&self, worker_id: usize) -> Result<Option<u32>, AffinityFailure> {
        self.excluded.set(crate::os::sched::current_tid(), true);
        match self.placement {
            Placement::Static => {
                static_binding::bind_calling_worker(&self.allowed, worker_id, &self.failures)
            }
            _ => Ok(None),
        }
    }

    /// Mutator thread `tid` attached (`true`) or detached (`false`). Mutators are stopped
    /// while a collection runs, so the runnable-thread count leaves them out while attached.
    pub fn note_mutator(&self, tid: i32, attached: bool) {
        self.excluded.set(tid, attached);
    }

    /// Call at the start of each parallel collection on the VM thread, after the world is
    /// stopped and before the workers are woken: opens the collection's round. `tids` are the
    /// kernel thread ids of the pool's workers by worker id (`parallel::WorkerPool::worker_tids`),
    /// `last_cpus` the CPU each last ran on (`WorkerPool::worker_last_cpus`, sampled by the
    /// workers themselves, so no `/proc` file is read); the first `active` take part. Under
    /// `Dynamic` each of them then decides in [`GcAffinityController::worker_phase_start`];
    /// otherwise nothing happens.
    pub fn begin_collection(&self, tids: &[i32], last_cpus: &[Option<u32>], active: usize) {
        if let Placement::Dynamic(d) = &self.placement {
            d.begin(tids, last_cpus, active, d.other.latest());
        }
    }

    /// Call on worker `worker`'s own thread at the start of each of its jobs: under `Dynamic`,
    /// its first job of the collection runs its Algorithm 1 decision (and moves it if its CPU
    /// is high); later jobs, and workers not taking part, return at once.
    pub fn worker_phase_start(&self, worker: usize) {
        if let Placement::Dynamic(d) = &self.placement {
            d.decide_on_worker(&self.allowed, &self.failures, worker);
        }
    }

    /// Call on the VM thread when the collection's parallel work is over: what the workers'
    /// decisions did (`None` unless `Dynamic`).
    pub fn end_collection(&self) -> Option<AffinityReport> {
        match &self.placement {
            Placement::Dynamic(d) => Some(d.finish()),
            _ if self.kind == GcAffinity::Dynamic => Some(AffinityReport::default()),
            _ => None,
        }
    }

    /// For workers this process did not start and that cannot run code of ours at a
    /// collection's start (the HotSpot agent's `GC Thread#N`): the calling thread makes each
    /// of the first `active` workers' decisions in turn, worker `w` counted from
    /// `wake_cpus[w]` (where it will run when it wakes, as the caller found it with
    /// [`dynamic::wake_cpu`]), and binds the movers by thread id. `tids` must be threads of
    /// this process.
    pub fn before_collection_at(
        &self,
        tids: &[i32],
        wake_cpus: &[Option<u32>],
        active: usize,
    ) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => d.decide_in_turn(
                &self.allowed,
                &self.failures,
                tids,
                wake_cpus,
                active,
                d.other.latest(),
            ),
            _ => AffinityReport::default(),
        }
    }

    /// [`GcAffinityController::before_collection_at`] with each worker's CPU read from `/proc`
    /// ([`dynamic::worker_cpu`]); for callers that have only thread ids.
    pub fn before_collection(&self, tids: &[i32], active: usize) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => self.rebalance_with(tids, active, d.other.latest().as_deref()),
            _ => AffinityReport::default(),
        }
    }

    /// [`GcAffinityController::before_collection`] with the other threads' load given instead
    /// of sampled (`None`: only the workers count). For tests and experiments that need to
    /// force a decision.
    pub fn rebalance_with(
        &self,
        tids: &[i32],
        active: usize,
        other: Option<&LoadSnapshot>,
    ) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => {
                let cpus: Vec<Option<u32>> = tids.iter().map(|&tid| worker_cpu(tid)).collect();
                let other = other.map(|s| Arc::new(s.clone()));
                d.decide_in_turn(&self.allowed, &self.failures, tids, &cpus, active, other)
            }
            _ => AffinityReport::default(),
        }
    }
}

impl std::fmt::Debug for GcAffinityController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let other = match &self.placement {
            Placement::Dynamic(d) => d.other.describe(),
            _ => "",
        };
        f.debug_struct("GcAffinityController")
            .field("kind", &self.kind)
            .field("allowed", &self.allowed)
            .field("active", &self.is_active())
            .field("other_load", &other)
            .field("failures_total", &self.failures_total())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::sched::current_tid;
    use crate::os::WaitingThread;

    #[test]
    fn inactive_controllers_do_nothing() {
        let me = current_tid();
        for kind in GcAffinity::ALL {
            let one = GcAffinityController::new(*kind, vec![0], None);
            assert!(!one.is_active());
            assert_eq!(one.kind(), *kind);
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
        stat.begin_collection(&[me], &[Some(0)], 1);
        stat.worker_phase_start(0);
        assert_eq!(stat.end_collection(), None);
        let dynamic = GcAffinityController::new(GcAffinity::Dynamic, vec![0, 1], None);
        assert_eq!(dynamic.static_cpu(0), None);
        assert_eq!(dynamic.bind_at_start(0), Ok(None));
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
        // Last CPUs supplied by the caller: a worker not started yet is unknown whatever its
        // entry says.
        let r = ctrl.before_collection_at(&[0, current_tid()], &[Some(0), None], 2);
        assert_eq!(r.unknown_cpu_workers, vec![0, 1]);
    }

    #[test]
    fn given_wake_cpus_are_taken_as_they_are() {
        let (a, b) = (WaitingThread::start("pin-a"), WaitingThread::start("pin-b"));
        let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![0, 1], None).with_seed(3);
        let tids = [a.tid, b.tid];
        // Both on CPU 0 (2, 0): the first moves to CPU 1; then 1, 1 and the second stays.
        let r = ctrl.before_collection_at(&tids, &[Some(0), Some(0)], 2);
        assert_eq!(
            r.moves,
            vec![WorkerMove {
                worker: 0,
                tid: a.tid,
                from: 0,
                to: 1
            }]
        );
        assert_eq!((r.high_cpus, r.low_cpus), (vec![0], vec![1]));
        // Someone moved it back: taken as given, it moves again.
        let r = ctrl.before_collection_at(&tids, &[Some(0), Some(0)], 2);
        assert_eq!(r.moves.len(), 1, "{r:?}");
        // Spread: nothing moves.
        assert!(ctrl
            .before_collection_at(&tids, &[Some(1), Some(0)], 2)
            .is_quiet());
        a.finish();
        b.finish();
    }

    #[test]
    fn each_worker_decides_once_per_collection_on_its_own_thread() {
        use std::sync::Barrier;
        let allowed = crate::os::affinity::thread_affinity(0).unwrap();
        if allowed.len() < 2 {
            return; // covered by `inactive_controllers_do_nothing`
        }
        let (c0, c1) = (allowed[0], allowed[1]);
        let ctrl = Arc::new(
            GcAffinityController::new(GcAffinity::Dynamic, vec![c0, c1], None).with_seed(11),
        );
        // Two "workers", both bound to c0 so that that is where they are when they decide.
        let ready = Arc::new(Barrier::new(3));
        let go = Arc::new(Barrier::new(3));
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let (ctrl, ready, go) = (ctrl.clone(), ready.clone(), go.clone());
                std::thread::spawn(move || {
                    crate::os::affinity::set_current_thread_affinity(&[c0]).unwrap();
                    ctrl.bind_at_start(w).unwrap();
                    ready.wait();
                    go.wait();
                    ctrl.worker_phase_start(w);
                    // A second job of the same collection decides nothing.
                    ctrl.worker_phase_start(w);
                    crate::os::cpu::current_cpu()
                })
            })
            .collect();
        ready.wait();
        ctrl.begin_collection(&[1, 2], &[Some(c0), Some(c0)], 2);
        go.wait();
        let cpus: Vec<_> = workers.into_iter().map(|t| t.join().unwrap()).collect();
        let r = ctrl.end_collection().unwrap();
        // Loads 2, 0: whichever decides first moves to c1, the other then sees 1, 1 and stays.
        assert_eq!(r.moves.len(), 1, "{r:?}");
        let moved = r.moves[0].worker;
        assert_eq!((r.moves[0].from, r.moves[0].to), (c0, c1));
        assert_eq!(cpus[moved], Some(c1));
        assert_eq!(cpus[1 - moved], Some(c0));
        assert!(r.decide_us > 0.0);
        assert_eq!(r.high_cpus, vec![c0]);
        // A worker outside the round does nothing.
        ctrl.worker_phase_start(5);
        assert_eq!(ctrl.end_collection(), Some(AffinityReport::default()));
    }

    #[test]
    fn a_numa_layout_that_places_workers_leaves_no_room_for_gc_affinity() {
        for &kind in GcAffinity::ALL {
            assert_eq!(applied_gc_affinity(kind, NumaLayout::Off), kind);
            for layout in [
                NumaLayout::Interleaved,
                NumaLayout::Fragmented,
                NumaLayout::Segregated,
            ] {
                assert_eq!(applied_gc_affinity(kind, layout), GcAffinity::None);
            }
        }
        assert_eq!(NumaLayout::Segregated.min_active_workers(4), 4);
        assert_eq!(NumaLayout::Fragmented.min_active_workers(4), 1);
    }

    #[test]
    fn the_random_source_stays_below_its_bound() {
        let rng = SplitMix::new(5);
        assert!((0..1000).all(|_| rng.below(3) < 3));
        assert_eq!(rng.below(0), 0);
        let (a, b) = (SplitMix::new(7), SplitMix::new(7));
        assert!((0..10).all(|_| a.below(100) == b.below(100)));
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
