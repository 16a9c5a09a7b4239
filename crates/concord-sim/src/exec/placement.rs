//! The seam between the executor and a scheduler model: which run queue a thread joins, which
//! runnable thread a free CPU runs next, how long it may run before the executor asks again.
//!
//! The executor owns the CPUs (their clocks and which thread each one runs); a [`Placement`]
//! owns the run queues. A scheduler model ([`crate::sched::SchedulerModel`], e.g. Linux 4.9 CFS)
//! plugs in through [`super::ModelPlacement`]; [`RoundRobin`] is the simple built-in one (fixed
//! home CPUs, FIFO run queues, fixed time slices).

use crate::machine::CpuSet;
use crate::sched::Policy;
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
    /// Its time slice ran out, or the placement wants its CPU back ([`Placement::resched`]).
    SliceExpired,
    /// It called `sched_yield`.
    Yield,
    /// A woken thread preempts it ([`Placement::preempt_on_wake`] said so).
    WakePreempted,
    /// It narrowed its own affinity to exclude the CPU it runs on (`sched_setaffinity`).
    AffinityChanged,
}

/// How a simulated thread is scheduled: its policy, the CPUs it may run on and where it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThreadSpec {
    /// SCHED_OTHER with a nice value, or SCHED_FIFO with a priority.
    pub policy: Policy,
    /// The CPUs it may run on (`None`: all of them).
    pub affinity: Option<CpuSet>,
    /// The CPU it starts on (`None`: the placement chooses, as fork balancing does).
    pub start_cpu: Option<CpuId>,
}

impl Default for ThreadSpec {
    /// SCHED_OTHER at nice 0, any CPU, placed by the placement.
    fn default() -> Self {
        ThreadSpec {
            policy: Policy::Normal { nice: 0 },
            affinity: None,
            start_cpu: None,
        }
    }
}

/// A scheduler model as the executor sees it. Every method is called with the executor's
/// state locked, in virtual-time order, so an implementation needs no synchronisation of its own
/// and stays deterministic as long as it uses no wall clock and no hash-order iteration.
pub trait Placement: Send {
    /// How many CPUs the machine has.
    fn cpus(&self) -> usize;

    /// A new thread, scheduled as `spec` says, becomes runnable at `now`: enqueue it and return
    /// the CPU whose queue it joined, or an error naming what in `spec` is not allowed.
    fn spawn(&mut self, thread: ThreadId, spec: &ThreadSpec, now: Ns) -> Result<CpuId, String>;

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

    /// The CPU whose run queue holds the runnable (not running) `thread`, if the placement
    /// knows it (a balancer may have moved it since it last ran); `None`: the executor takes
    /// the CPU it last ran on.
    fn queued_cpu(&self, _thread: ThreadId) -> Option<CpuId> {
        None
    }

    /// `thread`, running on `cpu`, blocked (`exited` false) or finished at `now`.
    fn left(&mut self, _cpu: CpuId, _thread: ThreadId, _now: Ns, _exited: bool) {}

    /// `sched_setaffinity(thread, mask)` at `now`, or an error naming what is allowed. If the
    /// thread runs on a CPU outside `mask`, the executor then requeues it
    /// ([`Requeue::AffinityChanged`]) and the placement must pick it on an allowed CPU.
    fn set_affinity(&mut self, thread: ThreadId, mask: CpuSet, now: Ns) -> Result<(), String>;

    /// When the placement next has something to do on its own (a scheduler tick, periodic load
    /// balancing), or `None`. The executor calls [`run_timers`](Self::run_timers) at that virtual
    /// time even while every CPU is busy.
    fn next_timer(&self) -> Option<Ns> {
        None
    }

    /// Run the placement's own timers due at or before `now`; afterwards the executor asks
    /// [`resched`](Self::resched) which CPUs to reschedule.
    fn run_timers(&mut self, _now: Ns) {}

    /// The CPUs whose running thread the placement wants off its CPU now (a tick found its slice
    /// used up, a balancer or a wake-up moved a more urgent thread there). The executor requeues
    /// each one's thread ([`Requeue::SliceExpired`]) and picks again; idle CPUs in the list are
    /// offered a pick as every idle CPU is.
    fn resched(&mut self) -> Vec<CpuId> {
        Vec::new()
    }
}

/// The built-in placement: thread `i` lives on CPU `i mod cpus` for good (so with at most as
/// many threads as CPUs each thread has a CPU of its own), each CPU runs its queue first come
/// first served, and a running thread is requeued behind the others after `slice` of CPU time
/// or when it yields. A [`ThreadSpec`]'s start CPU or affinity chooses the home instead (the
/// `i mod k`-th CPU of a mask of `k`); its policy is ignored (every thread is equal here).
#[derive(Clone, Debug)]
pub struct RoundRobin {
    slice: Ns,
    queues: Vec<VecDeque<ThreadId>>,
    /// Home CPU per thread.
    homes: Vec<CpuId>,
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
            homes: Vec::new(),
        }
    }

    fn home(&self, thread: ThreadId) -> CpuId {
        self.homes
            .get(thread)
            .copied()
            .unwrap_or(thread % self.queues.len())
    }

    fn set_home(&mut self, thread: ThreadId, cpu: CpuId) {
        if self.homes.len() <= thread {
            let cpus = self.queues.len();
            self.homes
                .extend((self.homes.len()..=thread).map(|t| t % cpus));
        }
        self.homes[thread] = cpu;
    }

    /// The `thread mod k`-th CPU of `mask`'s `k` CPUs of this machine, or an error.
    fn home_in(&self, thread: ThreadId, mask: CpuSet) -> Result<CpuId, String> {
        let allowed: Vec<CpuId> = mask.iter().filter(|&c| c < self.queues.len()).collect();
        if allowed.is_empty() || allowed.len() != mask.len() {
            return Err(format!(
                "affinity {mask:?} is not allowed; allowed: a non-empty set of CPUs 0..{}",
                self.queues.len()
            ));
        }
        Ok(allowed[thread % allowed.len()])
    }
}

impl Placement for RoundRobin {
    fn cpus(&self) -> usize {
        self.queues.len()
    }

    fn spawn(&mut self, thread: ThreadId, spec: &ThreadSpec, _now: Ns) -> Result<CpuId, String> {
        let cpus = self.queues.len();
        let cpu = match (spec.start_cpu, spec.affinity) {
            (Some(cpu), _) if cpu >= cpus => {
                return Err(format!(
                    "start CPU {cpu} is not allowed; allowed: 0..{cpus}"
                ))
            }
            (Some(cpu), Some(mask)) if !mask.contains(cpu) => {
                return Err(format!(
                    "start CPU {cpu} is not in the thread's affinity {mask:?}"
                ))
            }
            (Some(cpu), _) => cpu,
            (None, Some(mask)) => self.home_in(thread, mask)?,
            (None, None) => thread % cpus,
        };
        self.set_home(thread, cpu);
        self.queues[cpu].push_back(thread);
        Ok(cpu)
    }

    fn wake(&mut self, thread: ThreadId, _last: CpuId, _waker: Option<CpuId>, _now: Ns) -> CpuId {
        let cpu = self.home(thread);
        self.queues[cpu].push_back(thread);
        cpu
    }

    fn requeue(&mut self, _cpu: CpuId, thread: ThreadId, _now: Ns, _why: Requeue) {
        // The home, which an affinity change may have moved off `cpu`.
        let home = self.home(thread);
        self.queues[home].push_back(thread);
    }

    fn pick(&mut self, cpu: CpuId, _now: Ns) -> Option<ThreadId> {
        self.queues[cpu].pop_front()
    }

    fn queued_cpu(&self, thread: ThreadId) -> Option<CpuId> {
        Some(self.home(thread))
    }

    fn time_slice(&mut self, _cpu: CpuId, _thread: ThreadId, _now: Ns) -> Ns {
        self.slice
    }

    fn set_affinity(&mut self, thread: ThreadId, mask: CpuSet, _now: Ns) -> Result<(), String> {
        if !mask.contains(self.home(thread)) {
            let home = self.home_in(thread, mask)?;
            self.set_home(thread, home);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_homes_threads_modulo_cpus_and_serves_queues_in_order() {
        let mut rr = RoundRobin::new(2, 10);
        let any = ThreadSpec::default();
        assert_eq!(rr.spawn(0, &any, 0), Ok(0));
        assert_eq!(rr.spawn(1, &any, 0), Ok(1));
        assert_eq!(rr.spawn(2, &any, 0), Ok(0));
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

    #[test]
    fn round_robin_homes_by_start_cpu_or_affinity_and_rehomes_on_set_affinity() {
        let mut rr = RoundRobin::new(4, 10);
        let on = |cpu| ThreadSpec {
            start_cpu: Some(cpu),
            ..ThreadSpec::default()
        };
        let mut upper = CpuSet::single(2);
        upper.insert(3);
        let within = ThreadSpec {
            affinity: Some(upper),
            ..ThreadSpec::default()
        };
        assert_eq!(rr.spawn(0, &on(3), 0), Ok(3));
        assert_eq!(rr.spawn(1, &within, 0), Ok(3)); // 1 mod 2 → the second CPU of {2, 3}
        assert!(rr.spawn(2, &on(4), 0).unwrap_err().contains("0..4"));
        assert!(rr
            .spawn(
                2,
                &ThreadSpec {
                    affinity: Some(upper),
                    ..on(0)
                },
                0
            )
            .unwrap_err()
            .contains("not in the thread's affinity"));
        assert_eq!(rr.pick(3, 0), Some(0));
        rr.set_affinity(0, CpuSet::single(1), 1).unwrap();
        rr.requeue(3, 0, 1, Requeue::AffinityChanged);
        assert_eq!(rr.pick(1, 1), Some(0));
        assert_eq!(rr.pick(3, 1), Some(1));
        assert!(rr.set_affinity(0, CpuSet::single(9), 1).is_err());
        assert!(rr.set_affinity(0, CpuSet::empty(), 1).is_err());
    }
}
