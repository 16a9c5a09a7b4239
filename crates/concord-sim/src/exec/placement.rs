//! The seam between the executor and a scheduler model: which run queue a thread joins, which
//! runnable thread a free CPU runs next, how long it may run before the executor asks again.
//!
//! The executor owns the CPUs (their clocks and which thread each one runs); a [`Placement`]
//! owns the run queues. A Linux CFS or EEVDF model implements this trait; [`RoundRobin`] is the
//! simple built-in one (fixed home CPUs, FIFO run queues, fixed time slices).

use std::collections::VecDeque;

/// Index of a simulated thread, in spawn order from 0.
pub type ThreadId = usize;
/// Index of a simulated CPU, from 0.
pub type CpuId = usize;
/// Virtual time in nanoseconds.
pub type Ns = u64;

/// Why a running thread goes back to a run queue while still runnable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requeue {
    /// Its time slice ran out.
    SliceExpired,
    /// It called `sched_yield`.
    Yield,
    /// A woken thread preempts it ([`Placement::preempt_on_wake`] said so).
    WakePreempted,
}

/// A scheduler model as the executor sees it. Every method is called with the executor's
/// state locked, in virtual-time order, so an implementation needs no synchronisation of its own
/// and stays deterministic as long as it uses no wall clock and no hash-order iteration.
pub trait Placement: Send {
    /// How many CPUs the machine has.
    fn cpus(&self) -> usize;

    /// A new thread becomes runnable at `now`: enqueue it and return the CPU whose queue it
    /// joined.
    fn spawn(&mut self, thread: ThreadId, now: Ns) -> CpuId;

    /// A blocked thread becomes runnable at `now` (woken from `last_cpu` by a thread running on
    /// `waker`, or by a timer when `waker` is `None`): enqueue it and return the CPU.
    fn wake(&mut self, thread: ThreadId, last_cpu: CpuId, waker: Option<CpuId>, now: Ns) -> CpuId;

    /// The thread running on `cpu` gives it up but stays runnable: enqueue it again.
    fn requeue(&mut self, cpu: CpuId, thread: ThreadId, now: Ns, why: Requeue);

    /// `cpu` is free at `now`: dequeue the thread it runs next (possibly from another CPU's
    /// queue, which migrates it), or `None` to stay idle. Also called for idle CPUs whenever a
    /// thread was enqueued anywhere, so a model can pull work to them; it may decline.
    fn pick(&mut self, cpu: CpuId, now: Ns) -> Option<ThreadId>;

    /// How long `thread` may run on `cpu` from now before the executor requeues it
    /// ([`Requeue::SliceExpired`]) and asks [`pick`](Self::pick) again.
    fn time_slice(&mut self, cpu: CpuId, thread: ThreadId, now: Ns) -> Ns;

    /// Whether `woken`, just enqueued on `cpu`, preempts `current` running there.
    fn preempt_on_wake(
        &mut self,
        _cpu: CpuId,
        _current: ThreadId,
        _woken: ThreadId,
        _now: Ns,
    ) -> bool {
        false
    }

    /// `thread` ran `ns` on `cpu` (a model's vruntime accounting).
    fn ran(&mut self, _cpu: CpuId, _thread: ThreadId, _ns: Ns) {}

    /// `thread`, running on `cpu`, blocked (`exited` false) or finished at `now`.
    fn left(&mut self, _cpu: CpuId, _thread: ThreadId, _now: Ns, _exited: bool) {}
}

/// The built-in placement: thread `i` lives on CPU `i mod cpus` for good (so with at most as
/// many threads as CPUs each thread has a CPU of its own), each CPU runs its queue first come
/// first served, and a running thread is requeued behind the others after `slice` of CPU time
/// or when it yields.
#[derive(Clone, Debug)]
pub struct RoundRobin {
    slice: Ns,
    queues: Vec<VecDeque<ThreadId>>,
}

impl RoundRobin {
    /// Linux's default `sched_rr_timeslice_ms` (100 ms) is far coarser than CFS's slices; the
    /// default here is CFS 4.9's 3 ms minimum-granularity scale at 8+ CPUs.
    pub const DEFAULT_SLICE: Ns = 3_000_000;

    /// `cpus` CPUs with time slices of `slice` ns (at least 1).
    pub fn new(cpus: usize, slice: Ns) -> Self {
        assert!(cpus > 0, "a machine needs at least one CPU");
        Self {
            slice: slice.max(1),
            queues: vec![VecDeque::new(); cpus],
        }
    }

    fn home(&self, thread: ThreadId) -> CpuId {
        thread % self.queues.len()
    }
}

impl Placement for RoundRobin {
    fn cpus(&self) -> usize {
        self.queues.len()
    }

    fn spawn(&mut self, thread: ThreadId, _now: Ns) -> CpuId {
        let cpu = self.home(thread);
        self.queues[cpu].push_back(thread);
        cpu
    }

    fn wake(&mut self, thread: ThreadId, _last: CpuId, _waker: Option<CpuId>, _now: Ns) -> CpuId {
        let cpu = self.home(thread);
        self.queues[cpu].push_back(thread);
        cpu
    }

    fn requeue(&mut self, cpu: CpuId, thread: ThreadId, _now: Ns, _why: Requeue) {
        self.queues[cpu].push_back(thread);
    }

    fn pick(&mut self, cpu: CpuId, _now: Ns) -> Option<ThreadId> {
        self.queues[cpu].pop_front()
    }

    fn time_slice(&mut self, _cpu: CpuId, _thread: ThreadId, _now: Ns) -> Ns {
        self.slice
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_homes_threads_modulo_cpus_and_serves_queues_in_order() {
        let mut rr = RoundRobin::new(2, 10);
        assert_eq!(rr.spawn(0, 0), 0);
        assert_eq!(rr.spawn(1, 0), 1);
        assert_eq!(rr.spawn(2, 0), 0);
        assert_eq!(rr.pick(0, 0), Some(0));
        rr.requeue(0, 0, 5, Requeue::Yield);
        assert_eq!(rr.pick(0, 5), Some(2));
        assert_eq!(rr.pick(0, 5), Some(0));
        assert_eq!(rr.pick(0, 5), None);
        assert_eq!(rr.wake(2, 0, Some(1), 7), 0);
        assert_eq!(rr.pick(1, 7), Some(1));
        assert_eq!(rr.pick(0, 7), Some(2));
        assert_eq!(rr.time_slice(0, 2, 7), 10);
    }
}
