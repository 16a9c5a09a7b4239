//! GC-thread affinity (`gc-affinity static|dynamic`) for simulated GC workers, deciding with
//! `concord`'s own code: static binding's CPU is [`static_cpu`], and 000 Algorithm 1's round
//! (the table of worker CPUs, each worker's decision against it: its loads, the marks that go
//! in the record, the choice of a low CPU, the move or refusal recorded) is
//! `concord::os::gc_affinity::plan`'s [`Round`], the very type the runtime's `DynamicBalancer`
//! decides with, drawing its targets from the runtime's [`SplitMix`]. Those are pure (no system
//! call, no clock, no `crate::sync`; the bind and the random source are the caller's), so they
//! need no simulated recompilation. What this module adds is what
//! `concord::os::gc_affinity::{mod, dynamic, static_binding}` do around them with the OS, done
//! with the simulator's:
//!
//! | runtime | simulator |
//! | --- | --- |
//! | `sched_setaffinity` on the calling worker | [`exec::set_affinity`] |
//! | the worker's CPU (`sched_getcpu`, last CPUs sampled by the pool) | [`exec::current_cpu`], [`exec::thread_cpu`] |
//! | the runnable-thread sampler (`/proc/*/task/*/stat` state `R`, by last CPU, leaving out this process's GC workers and mutators) | [`exec::runnable_per_cpu`] leaving out the threads noted by [`SimGcAffinity::bind_at_start`] and [`SimGcAffinity::note_mutator`] |
//! | the round's `std` mutex | a simulated [`Mutex`] (its cost and contention are charged) |
//! | [`SplitMix`] seeded from the clock | [`SplitMix`] seeded from the run's seed (as `GcAffinityController::with_seed`) |
//! | a refusal counted and said once (`FailureLog`) | recorded only |
//!
//! The flow is the runtime's: the driver (the VM thread) opens a collection's round after the
//! world is stopped ([`SimGcAffinity::begin_collection`]), each worker decides on its own
//! thread at the start of its first job ([`SimGcAffinity::worker_phase_start`]) against the
//! round's table of worker CPUs (a mover counts on its target for those deciding after it),
//! and the driver closes the round ([`SimGcAffinity::end_collection`]) for the record. Same
//! table, same loads, same seed: the same moves as the runtime's.
//!
//! One difference: the runtime's sampler publishes a smoothed count every period, so a
//! decision sees a count up to a period old; here the count is taken at `begin_collection`, at
//! that virtual instant, without smoothing.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use concord::os::cpu::LoadSnapshot;
use concord::os::gc_affinity::plan::{Round, Turn};
use concord::os::gc_affinity::{
    static_cpu, AffinityFailure, AffinityReport, SplitMix, Thresholds, WorkerMove,
};
use concord::os::policy::GcAffinity;

use crate::exec::{self, ThreadId};
use crate::machine::CpuSet;
use crate::sync::{Mutex, MutexGuard};

struct Shared {
    /// One collection's table: the runtime's.
    round: Round,
    rng: SplitMix,
    /// Threads the runnable count leaves out: GC workers and attached mutators.
    excluded: Vec<ThreadId>,
}

/// [`GcAffinity`] applied to the simulated GC workers of one instance (one heap): the
/// simulator's `GcAffinityController`. Shared by the driver and the workers (`Sync`; all
/// methods take `&self` and are called from simulated threads).
pub struct SimGcAffinity {
    kind: GcAffinity,
    allowed: Vec<u32>,
    /// `none`, or fewer than two allowed CPUs: nothing happens.
    active: bool,
    thresholds: Thresholds,
    shared: Mutex<Shared>,
}

impl SimGcAffinity {
    /// `kind` over the CPUs `allowed` (sorted and deduplicated; normally every CPU of the
    /// machine), with 000's thresholds (2, ½) and targets drawn from `seed`.
    pub fn new(kind: GcAffinity, allowed: Vec<u32>, seed: u64) -> SimGcAffinity {
        let mut allowed = allowed;
        allowed.sort_unstable();
        allowed.dedup();
        SimGcAffinity {
            kind,
            active: kind != GcAffinity::None && allowed.len() >= 2,
            allowed,
            thresholds: Thresholds::default(),
            shared: Mutex::new(Shared {
                round: Round::default(),
                rng: SplitMix::new(seed),
                excluded: Vec::new(),
            }),
        }
    }

    /// The policy.
    pub fn kind(&self) -> GcAffinity {
        self.kind
    }

    /// The CPUs placements may use, ascending.
    pub fn allowed_cpus(&self) -> &[u32] {
        &self.allowed
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The CPU static binding gives worker `worker` (`None` unless an active `static`).
    pub fn static_cpu(&self, worker: usize) -> Option<u32> {
        (self.active && self.kind == GcAffinity::Static)
            .then(|| static_cpu(&self.allowed, worker))
            .flatten()
    }

    /// Call on worker `worker`'s own simulated thread when it starts: leaves the thread out of
    /// the runnable count, and under `static` pins it to its CPU and returns that CPU.
    /// Otherwise `Ok(None)`. The executor's refusal (a CPU the machine lacks) is returned.
    pub fn bind_at_start(&self, worker: usize) -> Result<Option<u32>, AffinityFailure> {
        let me = exec::current_thread();
        if let Some(me) = me {
            self.lock().excluded.push(me);
        }
        let Some(cpu) = self.static_cpu(worker) else {
            return Ok(None);
        };
        exec::set_affinity(CpuSet::single(cpu as usize))
            .map(|()| Some(cpu))
            .map_err(|error| AffinityFailure {
                worker,
                tid: me.map_or(0, thread_tid),
                cpu,
                errno: None,
                error,
            })
    }

    /// Mutator thread `thread` attached (`true`: left out of the runnable count, as mutators
    /// are stopped while a collection runs) or detached (`false`).
    pub fn note_mutator(&self, thread: ThreadId, attached: bool) {
        let mut shared = self.lock();
        shared.excluded.retain(|&t| t != thread);
        if attached {
            shared.excluded.push(thread);
        }
    }

    /// Call on the driver at the start of each parallel collection, after the world is stopped
    /// and before the workers are woken: under `dynamic`, opens the round for the first
    /// `active` of `workers` (thread ids by worker id), each counted on the CPU it is on or
    /// last ran on, and takes the other threads' runnable count. Otherwise nothing.
    pub fn begin_collection(&self, workers: &[ThreadId], active: usize) {
        if !self.is_dynamic() {
            return;
        }
        let active = active.min(workers.len());
        let cpus: Vec<Option<u32>> = workers[..active]
            .iter()
            .map(|&t| exec::thread_cpu(t).and_then(|c| u32::try_from(c).ok()))
            .collect();
        let mut shared = self.lock();
        let other = exec::runnable_per_cpu(&shared.excluded).map(|counts| {
            LoadSnapshot::from_loads(counts.iter().map(|&n| n as f64).collect(), Duration::ZERO)
        });
        // Taken at this virtual instant: age 0.
        let age = other.as_ref().map(|_| 0.0);
        shared.round.open(cpus, other.map(Arc::new), age);
    }

    /// Call on worker `worker`'s own simulated thread at the start of each of its jobs: under
    /// `dynamic`, its first job of the collection makes its Algorithm 1 decision and, if its
    /// CPU is high and a low one exists, binds it to a random low CPU. Returns the move made,
    /// if any. The virtual time the decision took is added to the round's `decide_us`.
    pub fn worker_phase_start(&self, worker: usize) -> Option<WorkerMove> {
        if !self.is_dynamic() {
            return None;
        }
        let mut guard = self.lock();
        let Shared { round, rng, .. } = &mut *guard;
        if !round.first_turn(worker) {
            return None;
        }
        let start = exec::now().unwrap_or(0);
        let turn = Turn {
            worker,
            tid: exec::current_thread().map_or(0, thread_tid),
            cpu: exec::current_cpu().and_then(|c| u32::try_from(c).ok()),
        };
        // Bound under the round's lock, as the runtime binds.
        let moved = round.decide(
            &self.allowed,
            self.thresholds,
            turn,
            &mut |n| rng.below(n),
            |to| exec::set_affinity(CpuSet::single(to as usize)).map_err(io::Error::other),
            |_| {},
        );
        let took = exec::now().unwrap_or(0).saturating_sub(start);
        round.add_decide_us(took as f64 / 1e3);
        moved
    }

    /// Call on the driver when the collection's parallel work is over: what the workers'
    /// decisions did (`None` unless `dynamic`; an empty report for `dynamic` with fewer than
    /// two allowed CPUs, as the runtime's).
    pub fn end_collection(&self) -> Option<AffinityReport> {
        if self.kind != GcAffinity::Dynamic {
            return None;
        }
        Some(self.lock().round.close())
    }

    fn is_dynamic(&self) -> bool {
        self.active && self.kind == GcAffinity::Dynamic
    }
}

/// A simulated thread's id where the runtime's records hold a kernel thread id.
fn thread_tid(thread: ThreadId) -> i32 {
    i32::try_from(thread).unwrap_or(i32::MAX)
}
