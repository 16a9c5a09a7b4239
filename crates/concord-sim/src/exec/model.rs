//! The adapter that lets a scheduler model ([`SchedulerModel`], e.g. [`crate::sched::Linux49`])
//! own the executor's run queues: the executor's [`Placement`] calls become the model's
//! create/wake/yield/block/exit/pick calls, and the model's timers (ticks, the RT period,
//! periodic balancing) run in the executor's virtual time.
//!
//! The executor keeps one clock per CPU and lets them drift apart by its lookahead, and it
//! reports a wake-up at the time the woken thread becomes runnable (after the wake-up latency);
//! a model wants one time that never goes backwards. The adapter therefore hands the model the
//! latest time it has seen, so a decision may be dated up to the lookahead or a wake-up latency
//! (microseconds) late, far below the model's granularities (milliseconds).
//! The model accounts runtime from these times itself (`update_curr`), so the executor's
//! per-charge [`Placement::ran`] is not needed.

use super::placement::{CpuId, Ns, Placement, Requeue, ThreadId, ThreadSpec};
use crate::machine::CpuSet;
use crate::sched::{self, SchedulerModel, TaskId, TaskSpec};

/// A [`Placement`] backed by a [`SchedulerModel`]: simulated threads are the model's tasks.
pub struct ModelPlacement<M> {
    model: M,
    /// The model's task of each thread.
    tasks: Vec<TaskId>,
    /// The latest time passed to the model.
    now: Ns,
}

impl<M: SchedulerModel> ModelPlacement<M> {
    /// Threads scheduled by `model` (which should have no tasks yet).
    pub fn new(model: M) -> Self {
        ModelPlacement {
            model,
            tasks: Vec::new(),
            now: 0,
        }
    }

    /// The model, for its counters ([`SchedulerModel::task_stats`]) and state.
    pub fn model(&self) -> &M {
        &self.model
    }

    fn at(&mut self, now: Ns) -> Ns {
        self.now = self.now.max(now);
        self.now
    }
}

impl<M: SchedulerModel + Send> Placement for ModelPlacement<M> {
    fn cpus(&self) -> usize {
        self.model.machine().cpus()
    }

    /// `create` (`wake_up_new_task`): on the start CPU if given, else fork balancing from CPU 0
    /// (where the process that spawns the threads runs).
    fn spawn(&mut self, thread: ThreadId, spec: &ThreadSpec, now: Ns) -> Result<CpuId, String> {
        debug_assert_eq!(thread, self.tasks.len(), "threads are spawned in order");
        if let Some(cpu) = spec.start_cpu.filter(|&c| c >= self.cpus()) {
            return Err(format!(
                "start CPU {cpu} is not allowed; allowed: 0..{}",
                self.cpus()
            ));
        }
        let now = self.at(now);
        let placement = match spec.start_cpu {
            Some(cpu) => sched::Placement::On(cpu),
            None => sched::Placement::Fork { parent_cpu: 0 },
        };
        let task_spec = TaskSpec {
            policy: spec.policy,
            affinity: spec
                .affinity
                .unwrap_or_else(|| self.model.machine().all_cpus()),
            placement,
            sleeping: false,
        };
        let task = self
            .model
            .create(task_spec, now)
            .map_err(|e| e.to_string())?;
        self.tasks.push(task);
        Ok(self.model.task_state(task).1)
    }

    /// `wake` (`try_to_wake_up`): the model chooses the CPU (wake-affine, idle sibling, RT
    /// lowest priority); `last_cpu` is the model's own record.
    fn wake(&mut self, thread: ThreadId, _last: CpuId, waker: Option<CpuId>, now: Ns) -> CpuId {
        let now = self.at(now);
        self.model.wake(self.tasks[thread], waker, now)
    }

    /// A yield is `yield_now`; after a preemption or an affinity change nothing is needed here:
    /// the model's `pick_next` puts its current task back (moving it if its mask excludes the
    /// CPU).
    fn requeue(&mut self, cpu: CpuId, _thread: ThreadId, now: Ns, why: Requeue) {
        let now = self.at(now);
        match why {
            Requeue::Yield => self.model.yield_now(cpu, now),
            Requeue::SliceExpired | Requeue::WakePreempted | Requeue::AffinityChanged => {}
        }
    }

    /// `pick_next` when the CPU gives up a thread or the model asked it to reschedule; an idle
    /// CPU the model did not flag stays idle (the kernel runs new-idle balancing when a CPU goes
    /// idle, not whenever a thread is enqueued elsewhere).
    fn pick(&mut self, cpu: CpuId, now: Ns) -> Option<ThreadId> {
        let now = self.at(now);
        if self.model.current(cpu).is_none() && !self.model.needs_resched(cpu, now) {
            return None;
        }
        let task = self.model.pick_next(cpu, now)?;
        // Tasks are created in thread order, so a task's number is its thread's.
        debug_assert_eq!(self.tasks[task.0], task);
        Some(task.0)
    }

    /// Unbounded: the model preempts through its ticks ([`resched`](Placement::resched)).
    fn time_slice(&mut self, _cpu: CpuId, _thread: ThreadId, _now: Ns) -> Ns {
        Ns::MAX
    }

    /// Whether the wake (`check_preempt_curr`) set the CPU's need-resched flag.
    fn preempt_on_wake(
        &mut self,
        cpu: CpuId,
        _current: ThreadId,
        _woken: ThreadId,
        now: Ns,
    ) -> bool {
        let now = self.at(now);
        self.model.needs_resched(cpu, now)
    }

    /// `block` (futex wait, sleep) or `exit`.
    fn left(&mut self, cpu: CpuId, _thread: ThreadId, now: Ns, exited: bool) {
        let now = self.at(now);
        if exited {
            self.model.exit(cpu, now);
        } else {
            self.model.block(cpu, now);
        }
    }

    /// The model's record: the CPU whose queue holds the task (field 39 of its `stat`).
    fn queued_cpu(&self, thread: ThreadId) -> Option<CpuId> {
        Some(self.model.task_state(*self.tasks.get(thread)?).1)
    }

    fn set_affinity(&mut self, thread: ThreadId, mask: CpuSet, now: Ns) -> Result<(), String> {
        let now = self.at(now);
        self.model
            .set_affinity(self.tasks[thread], mask, now)
            .map_err(|e| e.to_string())
    }

    fn next_timer(&self) -> Option<Ns> {
        self.model.next_timer()
    }

    fn run_timers(&mut self, now: Ns) {
        let now = self.at(now);
        self.model.run_timers(now);
    }

    fn resched(&mut self) -> Vec<CpuId> {
        self.model.cpus_needing_resched()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::Machine;
    use crate::sched::{Linux49, MS};

    #[test]
    fn a_queued_thread_is_where_the_model_queued_it() {
        let machine = Machine::new("2cpu", 1, 1, 2, false).unwrap();
        let mut placement = ModelPlacement::new(Linux49::new(machine));
        let on0 = ThreadSpec {
            start_cpu: Some(0),
            ..ThreadSpec::default()
        };
        for t in 0..3 {
            assert_eq!(placement.spawn(t, &on0, 0), Ok(0));
            assert_eq!(placement.queued_cpu(t), Some(0));
        }
        let running = placement.pick(0, 0).unwrap();
        // CPU 1 stays idle (nobody picks for it here); its periodic balancing pulls queued
        // (never the running) threads over, and until CPU 1 picks one it is queued there, not
        // on the CPU it was spawned on.
        placement.run_timers(100 * MS);
        let moved: Vec<ThreadId> = (0..3)
            .filter(|&t| placement.queued_cpu(t) == Some(1))
            .collect();
        assert!(!moved.is_empty() && !moved.contains(&running), "{moved:?}");
        assert_eq!(placement.queued_cpu(running), Some(0));
        assert_eq!(placement.queued_cpu(9), None);
    }
}
