//! Where GC worker threads run (`gc-affinity`), one file per variant:
//!
//! * `none`: nothing is touched; threads are left to the OS scheduler.
//! * `static` ([`static_binding`]): worker `i` is pinned to the `i`-th allowed CPU when it
//!   starts ([`GcAffinityController::bind_at_start`]).
//! * `dynamic` ([`dynamic`], planning in [`plan`]): 000 Algorithm 1 at the start of every
//!   parallel collection ([`GcAffinityController::before_collection_from`]).
//!
//! The variant is chosen once, when the controller is built for a heap; with fewer than two
//! allowed CPUs every variant does nothing. A placement the OS refuses is said once (as a
//! warning through the `log` facade), counted, and recorded in the [`AffinityReport`] of its
//! collection; the collector carries on.

pub mod dynamic;
pub mod plan;
pub mod static_binding;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use self::dynamic::{worker_cpu, DynamicBalancer};
pub use self::plan::Thresholds;
pub use self::static_binding::static_cpu;
use super::cpu::{LoadSampler, LoadSnapshot};
use super::policy::GcAffinity;

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

/// SplitMix64's increment.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// A SplitMix64 random source several threads may draw from through `&self`.
pub(crate) struct SplitMix(AtomicU64);

impl SplitMix {
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
        AffinityFailure {
            worker,
            tid,
            cpu,
            errno: e.raw_os_error(),
            error: e.to_string(),
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
    Dynamic(DynamicBalancer),
}

/// Applies a [`GcAffinity`] policy to the GC workers of one heap. `Send + Sync`; all methods
/// take `&self`.
pub struct GcAffinityController {
    kind: GcAffinity,
    allowed: Vec<u32>,
    placement: Placement,
    failures: FailureLog,
}

impl GcAffinityController {
    /// A controller for `kind` over the CPUs in `allowed_cpus` (normally
    /// [`crate::os::cpu::CpuView::allowed`]). `sampler` supplies busy fractions for `Dynamic`
    /// (other policies drop it); without it only our own GC threads count as load. Default
    /// thresholds (2, ½) and a time-based random seed.
    pub fn new(kind: GcAffinity, allowed_cpus: Vec<u32>, sampler: Option<LoadSampler>) -> Self {
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
            GcAffinity::Dynamic => Placement::Dynamic(DynamicBalancer::new(sampler, seed)),
        };
        Self {
            kind,
            allowed,
            placement,
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
    /// (`Ok(None)`). A refusal is said once per controller and returned.
    pub fn bind_at_start(&self, worker_id: usize) -> Result<Option<u32>, AffinityFailure> {
        match self.placement {
            Placement::Static => {
                static_binding::bind_calling_worker(&self.allowed, worker_id, &self.failures)
            }
            _ => Ok(None),
        }
    }

    /// Call at the start of each parallel collection on the VM thread, after the world is
    /// stopped and before the workers are woken. `tids` are the kernel thread ids of the pool's
    /// workers by worker id (`parallel::WorkerPool::worker_tids`), `last_cpus` the CPU each
    /// last ran on (`WorkerPool::worker_last_cpus`, sampled by the workers themselves, so no
    /// `/proc` file is read); the first `active` take part. Under `Dynamic` plans with the
    /// sampler's latest busy fractions and applies the moves; otherwise returns an empty
    /// report. The `tids` must be threads of this process that the caller started: the moves
    /// skip the `/proc/self/task` check that [`crate::os::affinity::set_thread_affinity`]
    /// makes, so that nothing is read from a file inside the pause.
    pub fn before_collection_from(
        &self,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
    ) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => d.rebalance(
                &self.allowed,
                &self.failures,
                tids,
                last_cpus,
                active,
                d.latest_busy().as_deref(),
            ),
            _ => AffinityReport::default(),
        }
    }

    /// [`GcAffinityController::before_collection_from`] for workers this process did not
    /// start and whose masks others may change (the HotSpot agent's `GC Thread#N`):
    /// `wake_cpus[w]` is where worker `w` will run when it wakes, as the caller found it with
    /// [`dynamic::wake_cpu`], and is used as it is, without the controller's memory of its own
    /// pins.
    pub fn before_collection_at(
        &self,
        tids: &[i32],
        wake_cpus: &[Option<u32>],
        active: usize,
    ) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => d.rebalance_from(
                &self.allowed,
                &self.failures,
                tids,
                wake_cpus,
                active,
                d.latest_busy().as_deref(),
                false,
            ),
            _ => AffinityReport::default(),
        }
    }

    /// [`GcAffinityController::before_collection_from`] with each worker's CPU read from
    /// `/proc` ([`dynamic::worker_cpu`]); for callers that have only thread ids.
    pub fn before_collection(&self, tids: &[i32], active: usize) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => self.rebalance_with(tids, active, d.latest_busy().as_deref()),
            _ => AffinityReport::default(),
        }
    }

    /// [`GcAffinityController::before_collection`] with the busy fractions given instead of
    /// taken from the sampler (`None`: only the workers count). For tests and experiments that
    /// need to force a decision.
    pub fn rebalance_with(
        &self,
        tids: &[i32],
        active: usize,
        busy: Option<&LoadSnapshot>,
    ) -> AffinityReport {
        match &self.placement {
            Placement::Dynamic(d) => {
                let cpus: Vec<Option<u32>> = tids.iter().map(|&tid| worker_cpu(tid)).collect();
                d.rebalance(&self.allowed, &self.failures, tids, &cpus, active, busy)
            }
            _ => AffinityReport::default(),
        }
    }
}

impl std::fmt::Debug for GcAffinityController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let sampler = match &self.placement {
            Placement::Dynamic(d) => d.sampler.as_ref(),
            _ => None,
        };
        f.debug_struct("GcAffinityController")
            .field("kind", &self.kind)
            .field("allowed", &self.allowed)
            .field("active", &self.is_active())
            .field("sampler", &sampler)
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
        assert_eq!(
            stat.before_collection_from(&[me], &[Some(0)], 1),
            AffinityReport::default()
        );
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
        let r = ctrl.before_collection_from(&[0, current_tid()], &[Some(0), None], 2);
        assert_eq!(r.unknown_cpu_workers, vec![0, 1]);
    }

    #[test]
    fn given_wake_cpus_override_remembered_pins() {
        let (a, b) = (WaitingThread::start("pin-a"), WaitingThread::start("pin-b"));
        let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![0, 1], None).with_seed(3);
        let tids = [a.tid, b.tid];
        // Both on CPU 0: one moves to CPU 1 and is remembered there.
        let r = ctrl.before_collection_at(&tids, &[Some(0), Some(0)], 2);
        assert_eq!(r.moves.len(), 1);
        // Someone moved it back to CPU 0: with the CPUs taken as given it moves again; with the
        // remembered pins it would count on CPU 1 and stay.
        let remembered = ctrl.before_collection_from(&tids, &[Some(0), Some(0)], 2);
        assert!(remembered.moves.is_empty(), "{remembered:?}");
        let r = ctrl.before_collection_at(&tids, &[Some(0), Some(0)], 2);
        assert_eq!(r.moves.len(), 1, "{r:?}");
        a.finish();
        b.finish();
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
