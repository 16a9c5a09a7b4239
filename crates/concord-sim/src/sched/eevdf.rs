//! The Linux 6.6 scheduler model: EEVDF as the fair class, with everything else (queues, wake-up
//! placement, load balancing, SCHED_FIFO and the RT throttle) shared with [`Linux49`], which
//! 6.6 did not change at the level the models work (see the module documentation of
//! [`crate::sched`] for what is modelled and what is not).

use super::linux49::{FairClass, Linux49, Tunables};
use super::pack::{PackTunables, WakePlacement};
use super::{Nanos, Policy, SchedError, SchedulerModel, TaskId, TaskSpec, TaskState, TaskStats};
use crate::machine::{CpuId, CpuSet, Machine};

/// EEVDF and SCHED_FIFO as in Linux 6.6, on a simulated [`Machine`].
#[derive(Clone, Debug)]
pub struct Eevdf {
    inner: Linux49,
}

impl Eevdf {
    /// A model of `machine` with 6.6's defaults: `sysctl_sched_base_slice` is 0.75 ms times
    /// `1 + log2(min(cpus, 8))`, the scaling 4.9 applied to `min_granularity` (3 ms from 8 CPUs);
    /// the tick, migration cost and RT throttle are 4.9's.
    pub fn new(machine: Machine) -> Eevdf {
        let tunables = Tunables::linux49(machine.cpus());
        Eevdf {
            inner: Linux49::with_fair_class(machine, tunables, FairClass::Eevdf),
        }
    }

    /// The same model with wake-up placement `placement` ([`Linux49::with_wake_placement`]).
    pub fn with_wake_placement(self, placement: WakePlacement) -> Eevdf {
        Eevdf {
            inner: self.inner.with_wake_placement(placement),
        }
    }

    /// The same model with the pack placement, under `tunables`.
    pub fn with_pack(self, tunables: PackTunables) -> Eevdf {
        Eevdf {
            inner: self.inner.with_pack(tunables),
        }
    }

    /// The wake-up placement in use.
    pub fn wake_placement(&self) -> WakePlacement {
        self.inner.wake_placement()
    }

    /// A task's utilization now, 0..=1024 ([`Linux49::task_util`]).
    pub fn task_util(&self, task: TaskId) -> f64 {
        self.inner.task_util(task)
    }

    /// The base slice (`sysctl_sched_base_slice`), ns.
    pub fn base_slice(&self) -> Nanos {
        self.inner.tunables.min_granularity
    }

    /// A CPU's `avg_vruntime`: the load-weighted mean vruntime of its runnable fair tasks.
    pub fn avg_vruntime(&self, cpu: CpuId) -> i64 {
        self.inner.avg_vruntime(cpu, None)
    }

    /// A task's vruntime (absolute, on its CPU's queue).
    pub fn vruntime(&self, task: TaskId) -> i64 {
        self.inner.tasks[task.0].vruntime
    }

    /// A task's virtual deadline.
    pub fn deadline(&self, task: TaskId) -> i64 {
        self.inner.tasks[task.0].deadline
    }

    /// A task's lag as saved when it last left its queue.
    pub fn vlag(&self, task: TaskId) -> i64 {
        self.inner.tasks[task.0].vlag
    }

    /// A CPU's utilization now, 0..=1024 ([`Linux49::cpu_util`]).
    pub fn cpu_util(&self, cpu: CpuId) -> f64 {
        self.inner.cpu_util(cpu)
    }

    /// How many CPUs a wake-up on `cpu`'s LLC may scan for an idle one (`nr_idle_scan`).
    pub fn nr_idle_scan(&self, cpu: CpuId) -> usize {
        self.inner.nr_idle_scan(cpu)
    }

    /// Whether a runnable task is eligible (`entity_eligible`: vruntime ≤ `avg_vruntime`).
    pub fn eligible(&self, task: TaskId) -> bool {
        let cpu = self.inner.tasks[task.0].cpu;
        self.inner.entity_eligible(cpu, task)
    }
}

/// The weighted mean of `entities` (vruntime, weight) relative to `base`, as 6.6's
/// `avg_vruntime` keeps it: (Σ w·(v − base), Σ w).
fn weighted_keys(base: i64, entities: impl Iterator<Item = (i64, u64)>) -> (i128, i128) {
    entities.fold((0, 0), |(sum, load), (v, w)| {
        (
            sum + i128::from(v - base) * i128::from(w),
            load + i128::from(w),
        )
    })
}

impl Linux49 {
    /// The runnable fair tasks of `cpu` (queued and current), plus `extra` if it is not among
    /// them (a task being dequeued after it left the CPU).
    fn fair_entities(&self, cpu: CpuId, extra: Option<TaskId>) -> Vec<TaskId> {
        let rq = &self.rqs[cpu];
        let mut ids: Vec<TaskId> = rq.cfs_tree.iter().map(|&(_, _, t)| t).collect();
        ids.extend(rq.curr.filter(|c| !self.tasks[c.0].is_rt()));
        if let Some(e) = extra.filter(|e| !ids.contains(e)) {
            ids.push(e);
        }
        ids
    }

    /// Σ w·(v − min_vruntime) and Σ w over `ids`.
    fn keys(&self, cpu: CpuId, ids: &[TaskId]) -> (i128, i128) {
        let base = self.rqs[cpu].min_vruntime;
        weighted_keys(
            base,
            ids.iter()
                .map(|t| (self.tasks[t.0].vruntime, self.tasks[t.0].weight)),
        )
    }

    /// `avg_vruntime`, the floor of the weighted mean (`min_vruntime` on an empty queue).
    pub(super) fn avg_vruntime(&self, cpu: CpuId, extra: Option<TaskId>) -> i64 {
        let (sum, load) = self.keys(cpu, &self.fair_entities(cpu, extra));
        let avg = if load == 0 { 0 } else { sum.div_euclid(load) };
        self.rqs[cpu].min_vruntime + avg as i64
    }

    /// `entity_eligible`: `t`'s vruntime is at most the weighted mean, compared without dividing.
    pub(super) fn entity_eligible(&self, cpu: CpuId, t: TaskId) -> bool {
        let keys = self.keys(cpu, &self.fair_entities(cpu, None));
        self.eligible_against(cpu, keys, t)
    }

    /// `entity_eligible` against the queue's precomputed (Σ w·key, Σ w).
    fn eligible_against(&self, cpu: CpuId, (sum, load): (i128, i128), t: TaskId) -> bool {
        let key = i128::from(self.tasks[t.0].vruntime - self.rqs[cpu].min_vruntime);
        sum >= key * load
    }

    /// The virtual length of one base slice for `t`.
    fn vslice(&self, t: TaskId) -> i64 {
        Self::calc_delta_fair(self.tunables.min_granularity, self.tasks[t.0].weight)
    }

    /// `update_entity_lag` at dequeue (`t` still counted): lag = avg − vruntime, clamped to
    /// ± the virtual time of max(2 slices, one tick).
    pub(super) fn update_entity_lag(&mut self, t: TaskId) {
        let cpu = self.tasks[t.0].cpu;
        let lag = self.avg_vruntime(cpu, Some(t)) - self.tasks[t.0].vruntime;
        let limit_ns = (2 * self.tunables.min_granularity).max(self.tunables.tick);
        let limit = Self::calc_delta_fair(limit_ns, self.tasks[t.0].weight);
        self.tasks[t.0].vlag = lag.clamp(-limit, limit);
    }

    /// `place_entity` (`PLACE_LAG`) at enqueue, `t` not yet counted: vruntime = avg − lag, the
    /// saved lag scaled by (W + w)/W so that adding `t` leaves it that lag behind the new mean;
    /// deadline one vslice later. On an empty queue the lag is dropped.
    pub(super) fn place_entity(&mut self, t: TaskId) {
        let cpu = self.tasks[t.0].cpu;
        let others: Vec<TaskId> = self
            .fair_entities(cpu, None)
            .into_iter()
            .filter(|&x| x != t)
            .collect();
        let (sum, load) = self.keys(cpu, &others);
        let avg = if load == 0 { 0 } else { sum.div_euclid(load) };
        let avg = self.rqs[cpu].min_vruntime + avg as i64;
        let lag = if load == 0 {
            0
        } else {
            let w = i128::from(self.tasks[t.0].weight);
            (i128::from(self.tasks[t.0].vlag) * (load + w) / load) as i64
        };
        let vslice = self.vslice(t);
        let task = &mut self.tasks[t.0];
        task.vruntime = avg - lag;
        task.deadline = task.vruntime + vslice;
    }

    /// `PLACE_DEADLINE_INITIAL`: a new task gets half a vslice to its first deadline.
    pub(super) fn halve_initial_deadline(&mut self, t: TaskId) {
        let half = self.vslice(t) / 2;
        let task = &mut self.tasks[t.0];
        task.deadline = task.vruntime + half;
    }

    /// `update_deadline` (from `update_curr`): a running task past its deadline gets a new slice,
    /// and is preempted if another fair task is runnable.
    pub(super) fn update_deadline(&mut self, cpu: CpuId, t: TaskId) {
        if self.tasks[t.0].vruntime < self.tasks[t.0].deadline {
            return;
        }
        let vslice = self.vslice(t);
        let task = &mut self.tasks[t.0];
        task.deadline = task.vruntime + vslice;
        if self.rqs[cpu].cfs_nr > 1 {
            self.rqs[cpu].need_resched = true;
        }
    }

    /// `pick_eevdf`: the eligible fair task with the earliest deadline (ties to the one queued
    /// first), the current task included; with `RUN_TO_PARITY` an eligible current task that has
    /// not got a new deadline since it was picked keeps running.
    pub(super) fn pick_eevdf(&self, cpu: CpuId) -> Option<TaskId> {
        let rq = &self.rqs[cpu];
        let keys = self.keys(cpu, &self.fair_entities(cpu, None));
        let eligible = |t: TaskId| self.eligible_against(cpu, keys, t);
        let curr = rq.curr.filter(|&c| !self.tasks[c.0].is_rt() && eligible(c));
        if let Some(c) = curr {
            if self.tasks[c.0].deadline == self.tasks[c.0].deadline_at_pick {
                return Some(c);
            }
        }
        let best = rq
            .cfs_tree
            .iter()
            .filter(|&&(_, _, t)| eligible(t))
            .min_by_key(|&&(_, seq, t)| (self.tasks[t.0].deadline, seq))
            .map(|&(_, _, t)| t);
        match (best, curr) {
            (Some(b), Some(c)) if self.tasks[c.0].deadline < self.tasks[b.0].deadline => Some(c),
            (Some(b), _) => Some(b),
            // Some queued task is always eligible; the leftmost guards against rounding.
            (None, c) => c.or_else(|| rq.cfs_tree.first().map(|&(_, _, t)| t)),
        }
    }

    /// `yield_task_fair` of 6.6: unless the task is alone on its CPU, its deadline moves one
    /// vslice later (its vruntime is unchanged, so it stays eligible if it was).
    pub(super) fn yield_eevdf(&mut self, cpu: CpuId, t: TaskId) {
        if self.rqs[cpu].nr_running() <= 1 {
            return;
        }
        let vslice = self.vslice(t);
        self.tasks[t.0].deadline += vslice;
    }
}

impl SchedulerModel for Eevdf {
    fn machine(&self) -> &Machine {
        self.inner.machine()
    }

    fn create(&mut self, spec: TaskSpec, now: Nanos) -> Result<TaskId, SchedError> {
        self.inner.create(spec, now)
    }

    fn wake(&mut self, task: TaskId, waker_cpu: Option<CpuId>, now: Nanos) -> CpuId {
        self.inner.wake(task, waker_cpu, now)
    }

    fn block(&mut self, cpu: CpuId, now: Nanos) {
        self.inner.block(cpu, now)
    }

    fn yield_now(&mut self, cpu: CpuId, now: Nanos) {
        self.inner.yield_now(cpu, now)
    }

    fn exit(&mut self, cpu: CpuId, now: Nanos) {
        self.inner.exit(cpu, now)
    }

    fn set_affinity(&mut self, task: TaskId, mask: CpuSet, now: Nanos) -> Result<(), SchedError> {
        self.inner.set_affinity(task, mask, now)
    }

    fn set_policy(&mut self, task: TaskId, policy: Policy, now: Nanos) -> Result<(), SchedError> {
        self.inner.set_policy(task, policy, now)
    }

    fn pick_next(&mut self, cpu: CpuId, now: Nanos) -> Option<TaskId> {
        self.inner.pick_next(cpu, now)
    }

    fn needs_resched(&mut self, cpu: CpuId, now: Nanos) -> bool {
        self.inner.needs_resched(cpu, now)
    }

    fn cpus_needing_resched(&self) -> Vec<CpuId> {
        self.inner.cpus_needing_resched()
    }

    fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.inner.current(cpu)
    }

    fn task_state(&self, task: TaskId) -> (TaskState, CpuId) {
        self.inner.task_state(task)
    }

    fn task_stats(&self, task: TaskId) -> TaskStats {
        self.inner.task_stats(task)
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.inner.next_timer()
    }

    fn run_timers(&mut self, now: Nanos) {
        self.inner.run_timers(now)
    }
}

#[cfg(test)]
impl Eevdf {
    /// Consistency of queues, loads and states (the shared checks).
    pub(super) fn check_invariants(&self) {
        self.inner.check_invariants()
    }
}
