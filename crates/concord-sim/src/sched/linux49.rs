//! The Linux 4.9 scheduler model: CFS and SCHED_FIFO (see the module documentation of
//! [`crate::sched`] for what is modelled from which kernel function, and what is not). Its
//! queues, placement, balancing and RT class also carry the EEVDF model ([`super::Eevdf`]),
//! which swaps in 6.6's fair-class rules where [`FairClass`] says so.

use super::pack::{PackTunables, WakePlacement};
use super::{
    Nanos, Placement, Policy, SchedError, SchedulerModel, TaskId, TaskSpec, TaskState, TaskStats,
    MS,
};
use crate::machine::{CpuId, CpuSet, Machine};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// `sched_prio_to_weight`: the CFS weight of nice −20..=19.
const NICE_TO_WEIGHT: [u64; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// Weight of a nice-0 task (`NICE_0_LOAD`).
const NICE_0_WEIGHT: u64 = 1024;

/// `sysctl_sched_nr_migrate`: tasks one balance pass looks at.
const NR_MIGRATE: usize = 32;

/// PELT's half-life: 32 periods of 1024 µs (`LOAD_AVG_PERIOD`).
pub const UTIL_HALF_LIFE: Nanos = 32 * 1_024_000;

/// `SCHED_CAPACITY_SCALE`: a CPU's capacity, and the utilization of a CPU that is always busy.
const CAPACITY: f64 = 1024.0;

/// The CFS weight of a nice value (clamped to −20..=19 by the caller's validation).
pub fn nice_to_weight(nice: i8) -> u64 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// The scheduler's tunables, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tunables {
    /// `sysctl_sched_latency`, scaled.
    pub latency: Nanos,
    /// `sysctl_sched_min_granularity`, scaled.
    pub min_granularity: Nanos,
    /// `sysctl_sched_wakeup_granularity`, scaled.
    pub wakeup_granularity: Nanos,
    /// `sched_nr_latency`: tasks that fit in one latency period.
    pub nr_latency: u64,
    /// `sysctl_sched_migration_cost`: a task that ran this recently is cache hot.
    pub migration_cost: Nanos,
    /// Tick period (HZ = 250).
    pub tick: Nanos,
    /// `sched_rt_runtime_us`.
    pub rt_runtime: Nanos,
    /// `sched_rt_period_us`.
    pub rt_period: Nanos,
    /// What `select_idle_cpu` spends per CPU it examines (reading that CPU's run queue: a
    /// cache line of another core in the LLC), the sample its `avg_scan_cost` averages.
    pub scan_cost_per_cpu: Nanos,
}

impl Tunables {
    /// Linux 4.9's defaults on a machine of `cpus` CPUs: the base values times
    /// `1 + log2(min(cpus, 8))` (`SCHED_TUNABLESCALING_LOG`).
    pub fn linux49(cpus: usize) -> Tunables {
        let factor = 1 + (cpus.clamp(1, 8) as u64).ilog2() as u64;
        Tunables {
            latency: 6 * MS * factor,
            min_granularity: 750_000 * factor,
            wakeup_granularity: MS * factor,
            nr_latency: 8,
            migration_cost: 500_000,
            tick: 4 * MS,
            rt_runtime: 950 * MS,
            rt_period: 1000 * MS,
            // About one last-level-cache hit (40 cycles at 2–2.5 GHz).
            scan_cost_per_cpu: 20,
        }
    }
}

/// The fair class's pick and preemption rules: 4.9's CFS, or 6.6's EEVDF (`super::eevdf`).
/// Everything else (queues, placement, balancing, SCHED_FIFO) is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FairClass {
    Cfs,
    Eevdf,
}

#[derive(Clone, Debug)]
pub(super) struct Task {
    policy: Policy,
    pub(super) weight: u64,
    pub(super) vruntime: i64,
    /// EEVDF: the virtual deadline (`se->deadline`).
    pub(super) deadline: i64,
    /// EEVDF: the lag saved at dequeue (`se->vlag`), used to place the task at its next enqueue.
    pub(super) vlag: i64,
    /// EEVDF: the deadline when the task was last picked (6.6 stashes it in `vlag`): while it is
    /// unchanged the task keeps its CPU (`RUN_TO_PARITY`).
    pub(super) deadline_at_pick: i64,
    sum_exec: Nanos,
    /// `sum_exec` when the task was last picked (`prev_sum_exec_runtime`).
    prev_sum_exec: Nanos,
    /// Start of the runtime not yet accounted (while running).
    exec_start: Nanos,
    /// When the task last stopped running (cache hotness).
    last_ran: Option<Nanos>,
    state: TaskState,
    pub(super) cpu: CpuId,
    affinity: CpuSet,
    stats: TaskStats,
    queued_since: Nanos,
    /// Position in the CPU's `cfs_tasks` list: balancing takes the smallest (least recently
    /// enqueued or picked) first.
    lru: u64,
    /// Tie-break among equal vruntimes: later insertions go after (the rb-tree's order).
    tree_seq: u64,
    last_wakee: Option<TaskId>,
    wakee_flips: u64,
    wakee_flip_decay_ts: Nanos,
    /// The task's utilization, 0..=1024, as PELT's per-task `util_avg` tracks it: the share of
    /// recent time it ran, decayed with a 32 ms half-life ([`UTIL_HALF_LIFE`]), from half its
    /// first CPU's spare capacity (`post_init_entity_util_avg`); it follows the task from CPU
    /// to CPU. Only the pack wake placement reads it.
    util: f64,
    /// When `util` was last brought up to date.
    util_at: Nanos,
}

impl Task {
    pub(super) fn is_rt(&self) -> bool {
        matches!(self.policy, Policy::Fifo { .. })
    }

    fn rt_priority(&self) -> u8 {
        match self.policy {
            Policy::Fifo { priority } => priority,
            Policy::Normal { .. } => 0,
        }
    }
}

/// Why a CPU balances (`enum cpu_idle_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BalanceKind {
    NotIdle,
    Idle,
    NewlyIdle,
}

#[derive(Clone, Debug, Default)]
pub(super) struct Runqueue {
    pub(super) curr: Option<TaskId>,
    /// Queued CFS tasks (not the current one), by (vruntime, insertion order).
    pub(super) cfs_tree: BTreeSet<(i64, u64, TaskId)>,
    /// Summed weight of runnable CFS tasks, current included.
    cfs_load: u64,
    /// Runnable CFS tasks, current included.
    pub(super) cfs_nr: usize,
    pub(super) min_vruntime: i64,
    skip: Option<TaskId>,
    /// Runnable FIFO tasks by priority (highest last), the running one included at its head.
    rt: BTreeMap<u8, VecDeque<TaskId>>,
    rt_time: Nanos,
    rt_throttled: bool,
    pub(super) need_resched: bool,
    /// Per domain level: next periodic balance, interval multiplier (1 or 2), failed balances.
    next_balance: Vec<Nanos>,
    interval_mult: Vec<u64>,
    nr_balance_failed: Vec<u32>,
    /// The CPU's utilization, 0..=1024, as PELT's `util_avg` tracks it: the share of recent
    /// time the CPU ran a task, decayed with a 32 ms half-life ([`UTIL_HALF_LIFE`]).
    util: f64,
    /// When `util` was last brought up to date.
    util_at: Nanos,
    /// What the tasks created on this CPU brought to its utilization (their starting
    /// utilization, as PELT attaches a new task's to its CPU), decayed with the half-life
    /// since `brought_at`; only the pack wake placement reads it ([`Linux49::pack_util`]).
    brought: f64,
    /// When `brought` was last brought up to date.
    brought_at: Nanos,
    /// `rq->avg_idle`: the average length of this CPU's idle periods, as wake-ups onto it end
    /// them (`ttwu_do_wakeup`), capped at twice the migration cost.
    avg_idle: Nanos,
    /// `rq->idle_stamp`: when new-idle balancing last found nothing and the CPU went idle.
    idle_stamp: Option<Nanos>,
    /// This CPU's copy of its LLC domain's `avg_scan_cost` (4.9): the average time its
    /// wake-ups spent scanning for an idle CPU, an eighth of each new sample.
    avg_scan_cost: Nanos,
}

impl Runqueue {
    fn rt_nr(&self) -> usize {
        self.rt.values().map(VecDeque::len).sum()
    }

    fn highest_rt(&self) -> Option<(u8, TaskId)> {
        self.rt
            .iter()
            .next_back()
            .and_then(|(&prio, list)| list.front().map(|&t| (prio, t)))
    }

    pub(super) fn nr_running(&self) -> usize {
        self.cfs_nr + self.rt_nr()
    }
}

/// CFS and SCHED_FIFO as in Linux 4.9, on a simulated [`Machine`].
#[derive(Clone, Debug)]
pub struct Linux49 {
    machine: Machine,
    pub(super) tunables: Tunables,
    pub(super) fair: FairClass,
    pub(super) tasks: Vec<Task>,
    pub(super) rqs: Vec<Runqueue>,
    now: Nanos,
    next_tick: Nanos,
    next_rt_period: Nanos,
    seq: u64,
    /// Per CPU, its LLC's `sd_llc_shared->nr_idle_scan` (EEVDF model only): how many CPUs a
    /// wake-up may scan for an idle one, set by periodic balancing from the LLC's utilization.
    nr_idle_scan: Vec<usize>,
    /// Where a woken fair task goes: the model's own placement, or this machine's packing
    /// ([`super::pack`]).
    wake_placement: WakePlacement,
    /// The pack placement's parameters.
    pack: PackTunables,
    /// Per CPU, the wake-ups from it that could have pulled their wakee over since the last
    /// pull (the pack placement's count to [`PackTunables::pull_every`]).
    pack_pulls: Vec<u32>,
}

impl Linux49 {
    /// A model of `machine` with 4.9's default tunables for its CPU count.
    pub fn new(machine: Machine) -> Linux49 {
        let tunables = Tunables::linux49(machine.cpus());
        Linux49::with_tunables(machine, tunables)
    }

    /// A model with explicit tunables (`tick` and `rt_period` must be positive: they drive the
    /// timers).
    pub fn with_tunables(machine: Machine, tunables: Tunables) -> Linux49 {
        Linux49::with_fair_class(machine, tunables, FairClass::Cfs)
    }

    /// A model whose fair class follows `fair`.
    pub(super) fn with_fair_class(
        machine: Machine,
        tunables: Tunables,
        fair: FairClass,
    ) -> Linux49 {
        assert!(
            tunables.tick > 0 && tunables.rt_period > 0,
            "tick and rt_period must be positive"
        );
        let rqs = (0..machine.cpus())
            .map(|cpu| {
                let levels = machine.domains(cpu).len();
                Runqueue {
                    next_balance: vec![0; levels],
                    interval_mult: vec![1; levels],
                    nr_balance_failed: vec![0; levels],
                    avg_idle: 2 * tunables.migration_cost,
                    ..Runqueue::default()
                }
            })
            .collect();
        let nr_idle_scan = (0..machine.cpus())
            .map(|cpu| machine.llc_cpus(cpu).len())
            .collect();
        let cpus = machine.cpus();
        Linux49 {
            machine,
            tunables,
            fair,
            tasks: Vec::new(),
            rqs,
            now: 0,
            next_tick: tunables.tick,
            next_rt_period: tunables.rt_period,
            seq: 0,
            nr_idle_scan,
            wake_placement: WakePlacement::Default,
            pack: PackTunables::THIS_MACHINE,
            pack_pulls: vec![0; cpus],
        }
    }

    /// The same model with wake-up placement `placement` (the pack placement with
    /// [`PackTunables::THIS_MACHINE`]).
    pub fn with_wake_placement(self, placement: WakePlacement) -> Linux49 {
        Linux49 {
            wake_placement: placement,
            ..self
        }
    }

    /// The same model with the pack placement, under `tunables`.
    pub fn with_pack(self, tunables: PackTunables) -> Linux49 {
        Linux49 {
            wake_placement: WakePlacement::Pack,
            pack: tunables,
            ..self
        }
    }

    /// The wake-up placement in use.
    pub fn wake_placement(&self) -> WakePlacement {
        self.wake_placement
    }

    /// The pack placement's parameters (used only under [`WakePlacement::Pack`]).
    pub fn pack_tunables(&self) -> &PackTunables {
        &self.pack
    }

    /// The tunables in use.
    pub fn tunables(&self) -> &Tunables {
        &self.tunables
    }

    /// A CPU's CFS load (summed weight of its runnable CFS tasks).
    pub fn cpu_load(&self, cpu: CpuId) -> u64 {
        self.rqs[cpu].cfs_load
    }

    /// A CPU's `min_vruntime`.
    pub fn min_vruntime(&self, cpu: CpuId) -> i64 {
        self.rqs[cpu].min_vruntime
    }

    /// A task's vruntime (absolute, on its CPU's queue).
    pub fn vruntime(&self, task: TaskId) -> i64 {
        self.tasks[task.0].vruntime
    }

    /// Whether a CPU's RT class is throttled.
    pub fn rt_throttled(&self, cpu: CpuId) -> bool {
        self.rqs[cpu].rt_throttled
    }

    /// The busy-CPU balance interval currently used for `cpu`'s domain `level`, ms (the domain's
    /// interval times the kernel's doubling on a balanced domain).
    pub fn balance_interval_ms(&self, cpu: CpuId, level: usize, cpu_idle: bool) -> u64 {
        self.machine.domains(cpu)[level].interval_ms(cpu_idle) * self.rqs[cpu].interval_mult[level]
    }

    /// A CPU's utilization now, 0..=1024 (PELT's `util_avg`, approximated per CPU).
    pub fn cpu_util(&self, cpu: CpuId) -> f64 {
        let rq = &self.rqs[cpu];
        Self::decayed_util(rq.util, self.now - rq.util_at, rq.curr.is_some())
    }

    /// A CPU's utilization as the pack placement reads it: [`Linux49::cpu_util`] plus what
    /// the tasks created on it brought (each its starting utilization, decayed with PELT's
    /// half-life), as PELT counts a new task on its CPU from the moment it is attached.
    pub fn pack_util(&self, cpu: CpuId) -> f64 {
        let rq = &self.rqs[cpu];
        self.cpu_util(cpu) + Self::decayed_util(rq.brought, self.now - rq.brought_at, false)
    }

    /// A task's utilization now, 0..=1024 (PELT's per-task `util_avg`, approximated: the
    /// share of recent time it ran, with PELT's half-life).
    pub fn task_util(&self, task: TaskId) -> f64 {
        let t = &self.tasks[task.0];
        Self::decayed_util(t.util, self.now - t.util_at, t.state == TaskState::Running)
    }

    /// `cpu`'s average idle period (`rq->avg_idle`), ns.
    pub fn avg_idle(&self, cpu: CpuId) -> Nanos {
        self.rqs[cpu].avg_idle
    }

    /// How many CPUs a wake-up on `cpu`'s LLC may scan for an idle one (EEVDF model).
    pub fn nr_idle_scan(&self, cpu: CpuId) -> usize {
        self.nr_idle_scan[cpu]
    }

    /// `util` after `elapsed` ns of running (`busy`) or idling, with PELT's half-life.
    fn decayed_util(util: f64, elapsed: Nanos, busy: bool) -> f64 {
        let keep = (-(elapsed as f64) / UTIL_HALF_LIFE as f64).exp2();
        util * keep + if busy { CAPACITY * (1.0 - keep) } else { 0.0 }
    }

    /// Brings `cpu`'s utilization up to now (before its current task changes).
    fn sync_util(&mut self, cpu: CpuId) {
        let util = self.cpu_util(cpu);
        let rq = &mut self.rqs[cpu];
        rq.util = util;
        rq.util_at = self.now;
    }

    /// Brings a task's utilization up to now (before it starts or stops running).
    fn sync_task_util(&mut self, task: TaskId) {
        let util = self.task_util(task);
        let now = self.now;
        let t = &mut self.tasks[task.0];
        t.util = util;
        t.util_at = now;
    }

    /// `update_idle_cpu_scan` (SIS_UTIL, Linux 5.20+): at a periodic balance of an LLC domain,
    /// the CPUs a wake-up may scan drop with the LLC's utilization as
    /// `llc × (1 − (x × pct / 100)² / 1024²)` with x the mean utilization per CPU, reaching
    /// none at `100 / imbalance_pct` (85 % for an LLC): a busy LLC is not scanned at all.
    fn update_idle_cpu_scan(&mut self, this: CpuId, level: usize) {
        let domain = &self.machine.domains(this)[level];
        let llc = self.machine.llc_cpus(this);
        if domain.span != llc {
            return;
        }
        let weight = llc.len() as u64;
        let sum: u64 = llc
            .iter()
            .map(|c| self.cpu_util(c).min(CAPACITY) as u64)
            .sum();
        let x = sum / weight;
        let pct = domain.imbalance_pct;
        let tmp = (x * x * pct * pct / (10_000 * CAPACITY as u64)).min(CAPACITY as u64);
        let nr = ((CAPACITY as u64 - tmp) * weight / CAPACITY as u64) as usize;
        for cpu in llc.iter() {
            self.nr_idle_scan[cpu] = nr;
        }
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn advance(&mut self, now: Nanos) {
        assert!(
            now >= self.now,
            "scheduler model called with time {now} after {}",
            self.now
        );
        while let Some(t) = self.next_timer() {
            if t > now {
                break;
            }
            self.now = t;
            self.tick(t);
            self.next_tick = t + self.tunables.tick;
        }
        self.now = now;
        if self.next_tick <= now {
            // Every CPU was idle (tickless): the next tick is the next boundary after now.
            self.next_tick = (now / self.tunables.tick + 1) * self.tunables.tick;
        }
    }

    fn busy(&self) -> bool {
        self.rqs
            .iter()
            .any(|rq| rq.curr.is_some() || rq.nr_running() > 0 || rq.rt_time > 0)
    }

    fn is_idle(&self, cpu: CpuId) -> bool {
        let rq = &self.rqs[cpu];
        rq.curr.is_none() && rq.nr_running() == 0
    }

    // ----- accounting -----

    pub(super) fn calc_delta_fair(delta: Nanos, weight: u64) -> i64 {
        if weight == NICE_0_WEIGHT {
            delta as i64
        } else {
            (delta as u128 * NICE_0_WEIGHT as u128 / weight as u128) as i64
        }
    }

    /// `update_curr` / `update_curr_rt`: charges the running task up to `self.now`.
    pub(super) fn update_curr(&mut self, cpu: CpuId) {
        let Some(t) = self.rqs[cpu].curr else { return };
        let now = self.now;
        let task = &mut self.tasks[t.0];
        let delta = now.saturating_sub(task.exec_start);
        task.exec_start = now;
        if delta == 0 {
            return;
        }
        task.sum_exec += delta;
        task.stats.runtime += delta;
        if task.is_rt() {
            let rq = &mut self.rqs[cpu];
            rq.rt_time += delta;
            if !rq.rt_throttled && rq.rt_time > self.tunables.rt_runtime {
                rq.rt_throttled = true;
                rq.need_resched = true;
            }
        } else {
            task.vruntime += Self::calc_delta_fair(delta, task.weight);
            if self.fair == FairClass::Eevdf {
                self.update_deadline(cpu, t);
            }
            self.update_min_vruntime(cpu);
        }
    }

    fn update_min_vruntime(&mut self, cpu: CpuId) {
        let rq = &self.rqs[cpu];
        let curr_v = rq
            .curr
            .filter(|t| !self.tasks[t.0].is_rt())
            .map(|t| self.tasks[t.0].vruntime);
        let left_v = rq.cfs_tree.first().map(|&(v, _, _)| v);
        let candidate = match (curr_v, left_v) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, l) => c.or(l),
        };
        if let Some(v) = candidate {
            let rq = &mut self.rqs[cpu];
            rq.min_vruntime = rq.min_vruntime.max(v);
        }
    }

    /// `__sched_period` and `sched_slice`: the real-time slice of a task of `weight` on `cpu`,
    /// `counted` saying whether it is already part of the queue's load.
    fn sched_slice(&self, cpu: CpuId, weight: u64, counted: bool) -> Nanos {
        let rq = &self.rqs[cpu];
        let nr = rq.cfs_nr as u64 + u64::from(!counted);
        let load = rq.cfs_load + if counted { 0 } else { weight };
        let period = if nr > self.tunables.nr_latency {
            nr * self.tunables.min_granularity
        } else {
            self.tunables.latency
        };
        (period as u128 * weight as u128 / load.max(1) as u128) as Nanos
    }

    /// `wakeup_preempt_entity(curr, se)`: 1 if `se` should preempt `curr`, 0 if within the
    /// granularity, −1 if `se` is not behind.
    fn wakeup_preempt_entity(&self, curr: TaskId, se: TaskId) -> i32 {
        let vdiff = self.tasks[curr.0].vruntime - self.tasks[se.0].vruntime;
        if vdiff <= 0 {
            return -1;
        }
        let gran = Self::calc_delta_fair(self.tunables.wakeup_granularity, self.tasks[se.0].weight);
        i32::from(vdiff > gran)
    }

    // ----- queue operations -----

    /// Makes a CFS task runnable on its CPU (`enqueue_entity`), in the tree unless it is current.
    fn cfs_enqueue(&mut self, t: TaskId, in_tree: bool) {
        if self.fair == FairClass::Eevdf {
            self.place_entity(t);
        }
        let cpu = self.tasks[t.0].cpu;
        let seq = self.next_seq();
        let task = &mut self.tasks[t.0];
        let rq = &mut self.rqs[cpu];
        rq.cfs_load += task.weight;
        rq.cfs_nr += 1;
        if in_tree {
            task.tree_seq = seq;
            rq.cfs_tree.insert((task.vruntime, seq, t));
        }
    }

    fn cfs_dequeue(&mut self, t: TaskId, in_tree: bool) {
        if self.fair == FairClass::Eevdf {
            self.update_entity_lag(t);
        }
        let cpu = self.tasks[t.0].cpu;
        let task = &self.tasks[t.0];
        let rq = &mut self.rqs[cpu];
        if in_tree {
            rq.cfs_tree.remove(&(task.vruntime, task.tree_seq, t));
        }
        rq.cfs_load -= task.weight;
        rq.cfs_nr -= 1;
        if rq.skip == Some(t) {
            rq.skip = None;
        }
        self.update_min_vruntime(cpu);
    }

    fn rt_enqueue(&mut self, t: TaskId, at_head: bool) {
        let cpu = self.tasks[t.0].cpu;
        let prio = self.tasks[t.0].rt_priority();
        let list = self.rqs[cpu].rt.entry(prio).or_default();
        if at_head {
            list.push_front(t);
        } else {
            list.push_back(t);
        }
    }

    fn rt_dequeue(&mut self, t: TaskId) {
        let cpu = self.tasks[t.0].cpu;
        let prio = self.tasks[t.0].rt_priority();
        if let Some(list) = self.rqs[cpu].rt.get_mut(&prio) {
            list.retain(|&x| x != t);
            if list.is_empty() {
                self.rqs[cpu].rt.remove(&prio);
            }
        }
    }

    /// Enqueues a runnable, not running task on its CPU and marks it queued.
    fn enqueue_queued(&mut self, t: TaskId) {
        if self.tasks[t.0].is_rt() {
            self.rt_enqueue(t, false);
        } else {
            self.cfs_enqueue(t, true);
        }
        let lru = self.next_seq();
        let now = self.now;
        let task = &mut self.tasks[t.0];
        task.state = TaskState::Queued;
        task.queued_since = now;
        task.lru = lru;
    }

    fn dequeue_queued(&mut self, t: TaskId) {
        if self.tasks[t.0].is_rt() {
            self.rt_dequeue(t);
        } else {
            self.cfs_dequeue(t, true);
        }
    }

    /// `set_task_cpu` for a task that is not on any queue.
    fn set_task_cpu(&mut self, t: TaskId, to: CpuId) {
        let from = self.tasks[t.0].cpu;
        if from == to {
            return;
        }
        if !self.tasks[t.0].is_rt() && self.fair == FairClass::Cfs {
            // Keep the vruntime relative to the queue's min_vruntime (EEVDF places by lag instead).
            let delta = self.rqs[to].min_vruntime - self.rqs[from].min_vruntime;
            self.tasks[t.0].vruntime += delta;
        }
        self.tasks[t.0].cpu = to;
        self.tasks[t.0].stats.migrations += 1;
    }

    /// Moves a queued task to another CPU (`move_queued_task`, `detach_task`/`attach_task`).
    fn move_queued(&mut self, t: TaskId, to: CpuId) {
        let queued_since = self.tasks[t.0].queued_since;
        self.dequeue_queued(t);
        self.set_task_cpu(t, to);
        self.update_curr(to);
        self.enqueue_queued(t);
        self.tasks[t.0].queued_since = queued_since;
        self.check_preempt(to, t);
    }

    /// `check_preempt_curr`: whether the newly runnable `t` preempts `cpu`'s current task.
    fn check_preempt(&mut self, cpu: CpuId, t: TaskId) {
        let Some(curr) = self.rqs[cpu].curr else {
            self.rqs[cpu].need_resched = true;
            return;
        };
        if self.rqs[cpu].need_resched || curr == t {
            return;
        }
        let (woken, running) = (&self.tasks[t.0], &self.tasks[curr.0]);
        let (woken_prio, running_prio) = (woken.rt_priority(), running.rt_priority());
        let preempt = match (woken.is_rt(), running.is_rt()) {
            (true, false) => !self.rqs[cpu].rt_throttled,
            (true, true) => woken_prio > running_prio,
            (false, true) => false,
            (false, false) => {
                self.update_curr(cpu);
                match self.fair {
                    FairClass::Cfs => self.wakeup_preempt_entity(curr, t) == 1,
                    FairClass::Eevdf => self.pick_eevdf(cpu) == Some(t),
                }
            }
        };
        if preempt {
            self.rqs[cpu].need_resched = true;
        }
    }

    // ----- placement -----

    fn fallback_cpu(&self, t: TaskId, prev: CpuId) -> CpuId {
        let allowed = self.tasks[t.0].affinity;
        allowed
            .and(&self.machine.llc_cpus(prev))
            .lowest()
            .or_else(|| allowed.lowest())
            .unwrap_or(prev)
    }

    /// Domain distance from `a` to `b`: 0 for the same CPU, else one more than the index of
    /// `a`'s lowest domain spanning `b`.
    fn distance(&self, a: CpuId, b: CpuId) -> usize {
        if a == b {
            return 0;
        }
        let domains = self.machine.domains(a);
        domains
            .iter()
            .position(|d| d.span.contains(b))
            .map_or(domains.len() + 1, |i| i + 1)
    }

    /// Fork placement: the idlest allowed CPU (no RT task, least CFS load), nearest the parent.
    fn fork_cpu(&self, affinity: CpuSet, parent: CpuId) -> CpuId {
        affinity
            .iter()
            .filter(|&c| c < self.machine.cpus())
            .min_by_key(|&c| {
                let rq = &self.rqs[c];
                (
                    rq.rt_nr(),
                    rq.cfs_load,
                    rq.nr_running(),
                    self.distance(parent, c),
                    c,
                )
            })
            .unwrap_or(parent)
    }

    /// `record_wakee`: the waker's wakee-switch count, halved every second.
    fn record_wakee(&mut self, waker: TaskId, wakee: TaskId) {
        let now = self.now;
        let w = &mut self.tasks[waker.0];
        if now > w.wakee_flip_decay_ts + 1000 * MS {
            w.wakee_flips >>= 1;
            w.wakee_flip_decay_ts = now;
        }
        if w.last_wakee != Some(wakee) {
            w.last_wakee = Some(wakee);
            w.wakee_flips += 1;
        }
    }

    /// `wake_wide`: a waker switching among many wakees spreads them instead of pulling them.
    fn wake_wide(&self, waker: TaskId, wakee: TaskId, llc_size: u64) -> bool {
        let master = self.tasks[waker.0].wakee_flips;
        let slave = self.tasks[wakee.0].wakee_flips;
        !(slave < llc_size || master < slave * llc_size)
    }

    /// `wake_affine` (4.9, not sync): wake on the waker's CPU when its load plus the wakee's is
    /// not above the previous CPU's load scaled by half the domain's imbalance margin.
    fn wake_affine(&self, imbalance_pct: u64, t: TaskId, prev: CpuId, this: CpuId) -> bool {
        let load = self.rqs[prev].cfs_load;
        let this_load = self.rqs[this].cfs_load;
        if this_load == 0 {
            return true;
        }
        let this_eff = 100 * (this_load + self.tasks[t.0].weight);
        let prev_eff = (100 + (imbalance_pct - 100) / 2) * load;
        this_eff <= prev_eff
    }

    /// `select_idle_sibling` as rewritten in 4.9.
    fn select_idle_sibling(&mut self, t: TaskId, prev: CpuId, target: CpuId, this: CpuId) -> CpuId {
        if self.is_idle(target) {
            return target;
        }
        if prev != target && self.machine.share_cache(prev, target) && self.is_idle(prev) {
            return prev;
        }
        let llc = self.machine.llc_cpus(target).and(&self.tasks[t.0].affinity);
        if self.machine.smt() {
            // select_idle_core: the first core (scanning from the target) whose threads are all
            // idle.
            let mut seen = CpuSet::empty();
            for cpu in llc.iter_wrap(target) {
                if seen.contains(cpu) {
                    continue;
                }
                let siblings = self.machine.core_siblings(cpu);
                siblings.iter().for_each(|s| seen.insert(s));
                if siblings.iter().all(|s| self.is_idle(s)) {
                    return cpu;
                }
            }
        }
        // select_idle_cpu. 6.x scans at most `nr_idle_scan` CPUs after the target (none when
        // the LLC is busy). 4.9 scans the whole LLC, but not at all when the waking CPU's
        // average idle period, over 512, is below its average scan time: a CPU that idles only
        // briefly is not worth a long search.
        let limit = match self.fair {
            FairClass::Cfs => {
                let rq = &self.rqs[this];
                if rq.avg_idle / 512 < rq.avg_scan_cost {
                    // select_idle_smt still looks at the target's idle siblings.
                    return self
                        .machine
                        .core_siblings(target)
                        .iter()
                        .find(|&c| c != target && llc.contains(c) && self.is_idle(c))
                        .unwrap_or(target);
                }
                usize::MAX
            }
            FairClass::Eevdf => self.nr_idle_scan[target],
        };
        let mut examined = 0;
        let idle_cpu = llc
            .iter_wrap(target)
            .filter(|&c| c != target)
            .take(limit)
            .find(|&c| {
                examined += 1;
                self.is_idle(c)
            });
        if self.fair == FairClass::Cfs {
            let sample = (examined * self.tunables.scan_cost_per_cpu) as i64;
            let rq = &mut self.rqs[this];
            let avg = rq.avg_scan_cost as i64;
            rq.avg_scan_cost = (avg + (sample - avg) / 8).max(0) as Nanos;
        }
        idle_cpu.unwrap_or(target)
    }

    /// `select_task_rq_fair` for a wake-up.
    fn select_cpu_fair(&mut self, t: TaskId, prev: CpuId, waker_cpu: Option<CpuId>) -> CpuId {
        let Some(this) = waker_cpu else {
            return self.select_idle_sibling(t, prev, prev, prev);
        };
        let want_affine = match self.rqs[this].curr {
            Some(waker) if waker != t => {
                self.record_wakee(waker, t);
                let llc_size = self.machine.llc_cpus(this).len() as u64;
                !self.wake_wide(waker, t, llc_size) && self.tasks[t.0].affinity.contains(this)
            }
            _ => self.tasks[t.0].affinity.contains(this),
        };
        if self.wake_placement == WakePlacement::Pack {
            if let Some(cpu) = self.pack_cpu(t, prev, this) {
                return cpu;
            }
        }
        let mut target = prev;
        if want_affine && this != prev {
            let affine_sd = self
                .machine
                .domains(this)
                .iter()
                .find(|d| d.span.contains(prev))
                .map(|d| d.imbalance_pct);
            if let Some(imbalance_pct) = affine_sd {
                if self.wake_affine(imbalance_pct, t, prev, this) {
                    target = this;
                }
            }
        }
        self.select_idle_sibling(t, prev, target, this)
    }

    /// The pack placement ([`super::pack`]) for waking `t`, last on `prev`, from `this`, the
    /// waker's CPU: `this` when `this` has room for the task and either was its previous CPU
    /// or is due a pull (one in [`PackTunables::pull_every`] of the wake-ups from `this` that
    /// could pull); `None`, the default placement, otherwise. Never outside the task's
    /// affinity.
    fn pack_cpu(&mut self, t: TaskId, prev: CpuId, this: CpuId) -> Option<CpuId> {
        if !self.tasks[t.0].affinity.contains(this) {
            return None;
        }
        // The task's share is already in `this`'s utilization when it last ran there.
        let wakee = if prev == this { 0.0 } else { self.task_util(t) };
        let with_wakee = self.pack_util(this) + wakee;
        if !self.pack.has_room(with_wakee, self.rqs[this].nr_running()) {
            return None;
        }
        if prev == this {
            return Some(this);
        }
        let due = &mut self.pack_pulls[this];
        *due += 1;
        if *due >= self.pack.pull_every.max(1) {
            *due = 0;
            return Some(this);
        }
        None
    }

    /// The RT priority level of a CPU for `cpupri` (0 idle, 1 CFS, 1 + RT priority).
    fn cpupri(&self, cpu: CpuId) -> u16 {
        match self.rqs[cpu].highest_rt() {
            Some((prio, _)) => 1 + u16::from(prio),
            None if self.is_idle(cpu) => 0,
            None => 1,
        }
    }

    /// `select_task_rq_rt` / `find_lowest_rq`.
    fn select_cpu_rt(&self, t: TaskId, prev: CpuId) -> CpuId {
        let task = &self.tasks[t.0];
        let prio = task.rt_priority();
        let prev_busy_with_rt = self.rqs[prev]
            .curr
            .is_some_and(|c| self.tasks[c.0].is_rt() && self.tasks[c.0].rt_priority() >= prio);
        if !prev_busy_with_rt || task.affinity.len() < 2 {
            return prev;
        }
        let own = 1 + u16::from(prio);
        let allowed: Vec<CpuId> = task
            .affinity
            .iter()
            .filter(|&c| c < self.machine.cpus() && self.cpupri(c) < own)
            .collect();
        let Some(lowest) = allowed.iter().map(|&c| self.cpupri(c)).min() else {
            return prev;
        };
        let mut mask = CpuSet::empty();
        allowed
            .iter()
            .filter(|&&c| self.cpupri(c) == lowest)
            .for_each(|&c| mask.insert(c));
        if mask.contains(prev) {
            return prev;
        }
        self.machine
            .domains(prev)
            .iter()
            .find_map(|d| mask.and(&d.span).lowest())
            .or_else(|| mask.lowest())
            .unwrap_or(prev)
    }

    // ----- picking -----

    /// `pick_next_entity` with the skip buddy (EEVDF: `pick_eevdf`).
    fn pick_cfs(&self, cpu: CpuId) -> Option<TaskId> {
        if self.fair == FairClass::Eevdf {
            return self.pick_eevdf(cpu);
        }
        let rq = &self.rqs[cpu];
        let mut iter = rq.cfs_tree.iter();
        let &(_, _, left) = iter.next()?;
        if rq.skip == Some(left) {
            if let Some(&(_, _, second)) = iter.next() {
                if self.wakeup_preempt_entity(second, left) < 1 {
                    return Some(second);
                }
            }
        }
        Some(left)
    }

    /// `pull_rt_task`: a queued FIFO task another CPU is not about to run, highest priority first.
    fn pull_rt(&mut self, cpu: CpuId) -> bool {
        let mut best: Option<(u8, TaskId)> = None;
        for src in 0..self.machine.cpus() {
            if src == cpu {
                continue;
            }
            let rq = &self.rqs[src];
            let curr_prio = rq
                .curr
                .filter(|c| self.tasks[c.0].is_rt())
                .map(|c| self.tasks[c.0].rt_priority());
            for (&prio, list) in rq.rt.iter().rev() {
                // A task above the source's current one is about to run there.
                if curr_prio.is_some_and(|p| prio > p) || curr_prio.is_none() {
                    continue;
                }
                let found = list
                    .iter()
                    .find(|&&t| Some(t) != rq.curr && self.tasks[t.0].affinity.contains(cpu));
                if let Some(&t) = found {
                    if best.is_none_or(|(p, _)| prio > p) {
                        best = Some((prio, t));
                    }
                    break;
                }
            }
        }
        match best {
            Some((_, t)) => {
                self.move_queued(t, cpu);
                true
            }
            None => false,
        }
    }

    fn pick_task(&mut self, cpu: CpuId) -> Option<TaskId> {
        if !self.rqs[cpu].rt_throttled {
            if self.rqs[cpu].rt.is_empty() {
                self.pull_rt(cpu);
            }
            if let Some((_, t)) = self.rqs[cpu].highest_rt() {
                return Some(t);
            }
        }
        if let Some(t) = self.pick_cfs(cpu) {
            return Some(t);
        }
        // idle_balance: walk the domains bottom up until something was pulled. 4.9 skips it
        // on a CPU whose idle periods average less than the migration cost: balancing would
        // cost more than the idle time it fills. (6.x's threshold is the balancing's own
        // measured cost, microseconds, so the EEVDF model does not skip it.)
        self.rqs[cpu].idle_stamp = Some(self.now);
        let skip =
            self.fair == FairClass::Cfs && self.rqs[cpu].avg_idle < self.tunables.migration_cost;
        if !skip {
            for level in 0..self.machine.domains(cpu).len() {
                if self.load_balance(cpu, level, BalanceKind::NewlyIdle) > 0 {
                    self.rqs[cpu].idle_stamp = None;
                    break;
                }
            }
        }
        self.pick_cfs(cpu)
    }

    // ----- balancing -----

    fn is_hot(&self, t: TaskId) -> bool {
        self.tasks[t.0]
            .last_ran
            .is_some_and(|r| self.now.saturating_sub(r) < self.tunables.migration_cost)
    }

    /// `should_we_balance`: the first idle CPU of the local group, else its first CPU.
    fn should_we_balance(&self, cpu: CpuId, level: usize) -> bool {
        let domain = &self.machine.domains(cpu)[level];
        let Some(local) = domain.groups.iter().find(|g| g.contains(cpu)) else {
            return false;
        };
        let chosen = local
            .iter()
            .find(|&c| self.is_idle(c))
            .or_else(|| local.lowest());
        chosen == Some(cpu)
    }

    /// `load_balance` of `this`'s domain `level`; returns the number of tasks pulled.
    fn load_balance(&mut self, this: CpuId, level: usize, kind: BalanceKind) -> usize {
        const SCALE: u64 = 1024;
        struct GroupStats {
            load: u64,
            nr: usize,
            cpus: usize,
            idle_cpus: usize,
            avg: u64,
        }
        if self.fair == FairClass::Eevdf && kind != BalanceKind::NewlyIdle {
            self.update_idle_cpu_scan(this, level);
        }
        let domain = self.machine.domains(this)[level].clone();
        let stats: Vec<GroupStats> = domain
            .groups
            .iter()
            .map(|g| {
                let load: u64 = g.iter().map(|c| self.rqs[c].cfs_load).sum();
                let nr = g.iter().map(|c| self.rqs[c].nr_running()).sum();
                let cpus = g.len();
                GroupStats {
                    load,
                    nr,
                    cpus,
                    idle_cpus: g.iter().filter(|&c| self.is_idle(c)).count(),
                    avg: load * SCALE / cpus as u64,
                }
            })
            .collect();
        let Some(local) = domain.groups.iter().position(|g| g.contains(this)) else {
            return 0;
        };
        let overloaded = |s: &GroupStats| s.nr > s.cpus;
        let busiest = (0..stats.len())
            .filter(|&i| i != local && stats[i].nr > 0)
            .max_by(|&a, &b| {
                (overloaded(&stats[a]), stats[a].avg)
                    .cmp(&(overloaded(&stats[b]), stats[b].avg))
                    .then(b.cmp(&a))
            });
        let total_load: u64 = stats.iter().map(|s| s.load).sum();
        let total_cpus: u64 = stats.iter().map(|s| s.cpus as u64).sum();
        let sd_avg = total_load * SCALE / total_cpus.max(1);
        let balanced = match busiest {
            None => true,
            Some(b) => {
                let (l, b) = (&stats[local], &stats[b]);
                let force = kind != BalanceKind::NotIdle && l.nr < l.cpus && overloaded(b);
                !force
                    && (l.avg >= b.avg
                        || l.avg >= sd_avg
                        || if kind == BalanceKind::Idle {
                            !overloaded(b) && l.idle_cpus <= b.idle_cpus + 1
                        } else {
                            100 * b.avg <= domain.imbalance_pct * l.avg
                        })
            }
        };
        if balanced {
            let rq = &mut self.rqs[this];
            rq.nr_balance_failed[level] = 0;
            rq.interval_mult[level] = 2;
            return 0;
        }
        let b = busiest.expect("an unbalanced domain has a busiest group");
        let (ls, bs) = (&stats[local], &stats[b]);
        let mut imbalance = ((bs.avg.saturating_sub(sd_avg)) * bs.cpus as u64)
            .min(sd_avg.saturating_sub(ls.avg) * ls.cpus as u64)
            / SCALE;
        // find_busiest_queue: the most loaded CPU of the group with a queued CFS task.
        let src = domain.groups[b]
            .iter()
            .filter(|&c| !self.rqs[c].cfs_tree.is_empty())
            .max_by(|&x, &y| {
                self.rqs[x]
                    .cfs_load
                    .cmp(&self.rqs[y].cfs_load)
                    .then(y.cmp(&x))
            });
        let mut moved = 0;
        if let Some(src) = src {
            // fix_small_imbalance: allow moving at least one average task.
            let per_task = self.rqs[src].cfs_load / self.rqs[src].cfs_nr.max(1) as u64;
            imbalance = imbalance.max(per_task);
            let mut candidates: Vec<TaskId> =
                self.rqs[src].cfs_tree.iter().map(|&(_, _, t)| t).collect();
            candidates.sort_by_key(|t| self.tasks[t.0].lru);
            let failed = self.rqs[this].nr_balance_failed[level];
            let mut left = imbalance as i64;
            for t in candidates.into_iter().take(NR_MIGRATE) {
                let task = &self.tasks[t.0];
                if !task.affinity.contains(this)
                    || (self.is_hot(t) && failed <= domain.cache_nice_tries)
                    || (task.weight / 2) as i64 > left
                {
                    continue;
                }
                left -= task.weight as i64;
                self.move_queued(t, this);
                moved += 1;
                if kind == BalanceKind::NewlyIdle || left <= 0 {
                    break;
                }
            }
        }
        let rq = &mut self.rqs[this];
        if moved > 0 {
            rq.nr_balance_failed[level] = 0;
        } else if kind != BalanceKind::NewlyIdle {
            rq.nr_balance_failed[level] += 1;
        }
        rq.interval_mult[level] = 1;
        moved
    }

    fn rebalance_domains(&mut self, now: Nanos) {
        for cpu in 0..self.machine.cpus() {
            for level in 0..self.machine.domains(cpu).len() {
                if now < self.rqs[cpu].next_balance[level] {
                    continue;
                }
                let idle = self.is_idle(cpu);
                if self.should_we_balance(cpu, level) {
                    let kind = if idle {
                        BalanceKind::Idle
                    } else {
                        BalanceKind::NotIdle
                    };
                    self.load_balance(cpu, level, kind);
                }
                self.rqs[cpu].next_balance[level] =
                    now + self.balance_interval_ms(cpu, level, idle) * MS;
            }
        }
    }

    // ----- timers -----

    fn tick(&mut self, now: Nanos) {
        for cpu in 0..self.machine.cpus() {
            self.update_curr(cpu);
            let Some(curr) = self.rqs[cpu].curr else {
                continue;
            };
            // EEVDF's slice end is checked by update_curr (`update_deadline`).
            let cfs = self.fair == FairClass::Cfs;
            if cfs && !self.tasks[curr.0].is_rt() && self.rqs[cpu].cfs_nr > 1 {
                self.check_preempt_tick(cpu, curr);
            }
        }
        // sched_rt_period_timer: each elapsed period pays back one runtime (`overrun`).
        let mut overrun = 0;
        while self.next_rt_period <= now {
            overrun += 1;
            self.next_rt_period += self.tunables.rt_period;
        }
        if overrun > 0 {
            for cpu in 0..self.machine.cpus() {
                let runtime = self.tunables.rt_runtime;
                let rq = &mut self.rqs[cpu];
                rq.rt_time = rq.rt_time.saturating_sub(overrun * runtime);
                if rq.rt_throttled && rq.rt_time < runtime {
                    rq.rt_throttled = false;
                    if !rq.rt.is_empty() {
                        rq.need_resched = true;
                    }
                }
            }
        }
        self.rebalance_domains(now);
    }

    /// `check_preempt_tick`.
    fn check_preempt_tick(&mut self, cpu: CpuId, curr: TaskId) {
        let task = &self.tasks[curr.0];
        let ideal = self.sched_slice(cpu, task.weight, true);
        let ran = task.sum_exec - task.prev_sum_exec;
        if ran > ideal {
            self.rqs[cpu].need_resched = true;
            return;
        }
        if ran < self.tunables.min_granularity {
            return;
        }
        if let Some(&(left_v, _, _)) = self.rqs[cpu].cfs_tree.first() {
            let delta = task.vruntime - left_v;
            if delta > ideal as i64 {
                self.rqs[cpu].need_resched = true;
            }
        }
    }

    // ----- validation -----

    fn check_task(&self, task: TaskId) -> Result<(), SchedError> {
        match self.tasks.get(task.0) {
            Some(t) if t.state != TaskState::Exited => Ok(()),
            Some(_) => Err(SchedError(format!("task {} has exited", task.0))),
            None => Err(SchedError(format!(
                "no task {}; tasks are 0..{}",
                task.0,
                self.tasks.len()
            ))),
        }
    }

    fn check_affinity(&self, mask: &CpuSet) -> Result<(), SchedError> {
        if mask.is_empty() || !mask.is_subset(&self.machine.all_cpus()) {
            return Err(SchedError(format!(
                "affinity {mask:?} is not allowed; allowed: a non-empty set of CPUs 0..{}",
                self.machine.cpus()
            )));
        }
        Ok(())
    }

    fn weight_of(policy: Policy) -> Result<u64, SchedError> {
        match policy {
            Policy::Normal { nice } if (-20..=19).contains(&nice) => Ok(nice_to_weight(nice)),
            Policy::Normal { nice } => Err(SchedError(format!(
                "nice {nice} is not allowed; allowed: -20 to 19"
            ))),
            Policy::Fifo { priority } if (1..=99).contains(&priority) => Ok(NICE_0_WEIGHT),
            Policy::Fifo { priority } => Err(SchedError(format!(
                "SCHED_FIFO priority {priority} is not allowed; allowed: 1 to 99"
            ))),
        }
    }

    /// Takes the task running on `cpu` off it (`deactivate_task` of a blocking task).
    fn deschedule_curr(&mut self, cpu: CpuId, state: TaskState) {
        self.update_curr(cpu);
        self.sync_util(cpu);
        let Some(t) = self.rqs[cpu].curr else {
            return;
        };
        self.sync_task_util(t);
        self.rqs[cpu].curr = None;
        if self.tasks[t.0].is_rt() {
            self.rt_dequeue(t);
        } else {
            self.cfs_dequeue(t, false);
        }
        let now = self.now;
        let task = &mut self.tasks[t.0];
        task.state = state;
        task.last_ran = Some(now);
        self.rqs[cpu].need_resched = true;
    }
}

impl SchedulerModel for Linux49 {
    fn machine(&self) -> &Machine {
        &self.machine
    }

    fn create(&mut self, spec: TaskSpec, now: Nanos) -> Result<TaskId, SchedError> {
        self.advance(now);
        let weight = Self::weight_of(spec.policy)?;
        self.check_affinity(&spec.affinity)?;
        let cpu = match spec.placement {
            Placement::On(cpu) if spec.affinity.contains(cpu) => cpu,
            Placement::On(cpu) => {
                return Err(SchedError(format!(
                    "start CPU {cpu} is not in the task's affinity {:?}",
                    spec.affinity
                )))
            }
            Placement::Fork { parent_cpu } if parent_cpu < self.machine.cpus() => {
                self.fork_cpu(spec.affinity, parent_cpu)
            }
            Placement::Fork { parent_cpu } => {
                return Err(SchedError(format!(
                    "parent CPU {parent_cpu} is not allowed; allowed: 0..{}",
                    self.machine.cpus()
                )))
            }
        };
        let id = TaskId(self.tasks.len());
        self.update_curr(cpu);
        // post_init_entity_util_avg: a new task starts at half its CPU's spare capacity, and
        // that is added to its CPU's (attach_entity_load_avg).
        let util = (CAPACITY - self.pack_util(cpu)).max(0.0) / 2.0;
        let rq = &mut self.rqs[cpu];
        rq.brought = Self::decayed_util(rq.brought, now - rq.brought_at, false) + util;
        rq.brought_at = now;
        self.tasks.push(Task {
            policy: spec.policy,
            weight,
            vruntime: self.rqs[cpu].min_vruntime,
            deadline: 0,
            vlag: 0,
            deadline_at_pick: 0,
            sum_exec: 0,
            prev_sum_exec: 0,
            exec_start: now,
            last_ran: None,
            state: TaskState::Sleeping,
            cpu,
            affinity: spec.affinity,
            stats: TaskStats::default(),
            queued_since: now,
            lru: 0,
            tree_seq: 0,
            last_wakee: None,
            wakee_flips: 0,
            wakee_flip_decay_ts: now,
            util,
            util_at: now,
        });
        if !spec.sleeping {
            let is_fair = !self.tasks[id.0].is_rt();
            if is_fair && self.fair == FairClass::Cfs {
                // place_entity(initial): START_DEBIT, one vslice after min_vruntime.
                let slice = self.sched_slice(cpu, weight, false);
                self.tasks[id.0].vruntime += Self::calc_delta_fair(slice, weight);
            }
            self.enqueue_queued(id);
            if is_fair && self.fair == FairClass::Eevdf {
                self.halve_initial_deadline(id);
            }
            self.check_preempt(cpu, id);
        }
        Ok(id)
    }

    fn wake(&mut self, task: TaskId, waker_cpu: Option<CpuId>, now: Nanos) -> CpuId {
        self.advance(now);
        let prev = self.tasks[task.0].cpu;
        if self.tasks[task.0].state != TaskState::Sleeping {
            return prev;
        }
        let waker_cpu = waker_cpu.filter(|&c| c < self.machine.cpus());
        let mut cpu = if self.tasks[task.0].is_rt() {
            self.select_cpu_rt(task, prev)
        } else {
            self.select_cpu_fair(task, prev, waker_cpu)
        };
        if !self.tasks[task.0].affinity.contains(cpu) {
            cpu = self.fallback_cpu(task, prev);
        }
        self.update_curr(cpu);
        if let Some(since) = self.rqs[cpu].idle_stamp.take() {
            // ttwu_do_wakeup: the idle period just ended joins the average (update_avg: an
            // eighth of the difference).
            let rq = &mut self.rqs[cpu];
            let delta = now.saturating_sub(since) as i64;
            let avg = rq.avg_idle as i64;
            rq.avg_idle =
                ((avg + (delta - avg) / 8).max(0) as Nanos).min(2 * self.tunables.migration_cost);
        }
        self.set_task_cpu(task, cpu);
        if !self.tasks[task.0].is_rt() && self.fair == FairClass::Cfs {
            // place_entity(wakeup) with GENTLE_FAIR_SLEEPERS.
            let floor = self.rqs[cpu].min_vruntime - (self.tunables.latency / 2) as i64;
            let v = &mut self.tasks[task.0].vruntime;
            *v = (*v).max(floor);
        }
        self.enqueue_queued(task);
        self.check_preempt(cpu, task);
        cpu
    }

    fn block(&mut self, cpu: CpuId, now: Nanos) {
        self.advance(now);
        self.deschedule_curr(cpu, TaskState::Sleeping);
    }

    fn yield_now(&mut self, cpu: CpuId, now: Nanos) {
        self.advance(now);
        self.update_curr(cpu);
        let Some(t) = self.rqs[cpu].curr else { return };
        if self.tasks[t.0].is_rt() {
            self.rt_dequeue(t);
            self.rt_enqueue(t, false);
        } else if self.fair == FairClass::Eevdf {
            self.yield_eevdf(cpu, t);
        } else if self.rqs[cpu].cfs_nr > 1 {
            self.rqs[cpu].skip = Some(t);
        }
        self.rqs[cpu].need_resched = true;
    }

    fn exit(&mut self, cpu: CpuId, now: Nanos) {
        self.advance(now);
        self.deschedule_curr(cpu, TaskState::Exited);
    }

    fn set_affinity(&mut self, task: TaskId, mask: CpuSet, now: Nanos) -> Result<(), SchedError> {
        self.advance(now);
        self.check_task(task)?;
        self.check_affinity(&mask)?;
        self.tasks[task.0].affinity = mask;
        let (state, cpu) = (self.tasks[task.0].state, self.tasks[task.0].cpu);
        if !mask.contains(cpu) {
            match state {
                TaskState::Queued => {
                    let to = self.fallback_cpu(task, cpu);
                    self.move_queued(task, to);
                }
                // Moves when it leaves the CPU (pick_next).
                TaskState::Running => self.rqs[cpu].need_resched = true,
                TaskState::Sleeping | TaskState::Exited => {}
            }
        }
        Ok(())
    }

    fn set_policy(&mut self, task: TaskId, policy: Policy, now: Nanos) -> Result<(), SchedError> {
        self.advance(now);
        self.check_task(task)?;
        let weight = Self::weight_of(policy)?;
        let (state, cpu) = (self.tasks[task.0].state, self.tasks[task.0].cpu);
        let was_rt = self.tasks[task.0].is_rt();
        match state {
            TaskState::Running => {
                self.update_curr(cpu);
                if was_rt {
                    self.rt_dequeue(task);
                } else {
                    self.cfs_dequeue(task, false);
                }
            }
            TaskState::Queued => self.dequeue_queued(task),
            TaskState::Sleeping | TaskState::Exited => {}
        }
        let t = &mut self.tasks[task.0];
        t.policy = policy;
        t.weight = weight;
        if was_rt && !t.is_rt() {
            t.vruntime = self.rqs[cpu].min_vruntime;
        }
        match state {
            TaskState::Running => {
                if self.tasks[task.0].is_rt() {
                    self.rt_enqueue(task, true);
                } else {
                    self.cfs_enqueue(task, false);
                }
                self.rqs[cpu].need_resched = true;
            }
            TaskState::Queued => {
                let since = self.tasks[task.0].queued_since;
                self.enqueue_queued(task);
                self.tasks[task.0].queued_since = since;
                self.check_preempt(cpu, task);
            }
            TaskState::Sleeping | TaskState::Exited => {}
        }
        Ok(())
    }

    fn pick_next(&mut self, cpu: CpuId, now: Nanos) -> Option<TaskId> {
        self.advance(now);
        self.update_curr(cpu);
        self.sync_util(cpu);
        if let Some(p) = self.rqs[cpu].curr {
            self.sync_task_util(p);
        }
        let prev = self.rqs[cpu].curr.take();
        if let Some(p) = prev {
            // put_prev_task: the running task goes back to its queue.
            if !self.tasks[p.0].is_rt() {
                let seq = self.next_seq();
                let task = &mut self.tasks[p.0];
                task.tree_seq = seq;
                self.rqs[cpu].cfs_tree.insert((task.vruntime, seq, p));
            }
            let task = &mut self.tasks[p.0];
            task.state = TaskState::Queued;
            task.queued_since = now;
            task.last_ran = Some(now);
            if !task.affinity.contains(cpu) {
                let to = self.fallback_cpu(p, cpu);
                self.move_queued(p, to);
            }
        }
        let next = self.pick_task(cpu);
        self.rqs[cpu].need_resched = false;
        if let Some(t) = next {
            if !self.tasks[t.0].is_rt() {
                let task = &self.tasks[t.0];
                let key = (task.vruntime, task.tree_seq, t);
                self.rqs[cpu].cfs_tree.remove(&key);
                if self.rqs[cpu].skip == Some(t) {
                    self.rqs[cpu].skip = None;
                }
            }
            self.sync_task_util(t);
            let lru = self.next_seq();
            let task = &mut self.tasks[t.0];
            task.state = TaskState::Running;
            task.stats.wait += now - task.queued_since;
            if prev != Some(t) {
                task.stats.switches += 1;
            }
            task.exec_start = now;
            task.prev_sum_exec = task.sum_exec;
            task.deadline_at_pick = task.deadline;
            task.lru = lru;
            self.rqs[cpu].curr = Some(t);
        }
        next
    }

    fn needs_resched(&mut self, cpu: CpuId, now: Nanos) -> bool {
        self.advance(now);
        self.rqs[cpu].need_resched
    }

    fn cpus_needing_resched(&self) -> Vec<CpuId> {
        (0..self.machine.cpus())
            .filter(|&c| self.rqs[c].need_resched)
            .collect()
    }

    fn current(&self, cpu: CpuId) -> Option<TaskId> {
        self.rqs[cpu].curr
    }

    fn task_state(&self, task: TaskId) -> (TaskState, CpuId) {
        let t = &self.tasks[task.0];
        (t.state, t.cpu)
    }

    fn task_stats(&self, task: TaskId) -> TaskStats {
        self.tasks[task.0].stats
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.busy().then_some(self.next_tick)
    }

    fn run_timers(&mut self, now: Nanos) {
        self.advance(now);
    }
}

#[cfg(test)]
impl Linux49 {
    /// Sets a task's wakee-switch count (`wakee_flips`), as if it had woken that many others.
    pub(super) fn set_wakee_flips(&mut self, task: TaskId, flips: u64) {
        self.tasks[task.0].wakee_flips = flips;
    }

    /// Sets a CPU's `avg_idle` and its `avg_scan_cost`, as if its history had been so.
    pub(super) fn set_idle_averages(&mut self, cpu: CpuId, avg_idle: Nanos, avg_scan_cost: Nanos) {
        self.rqs[cpu].avg_idle = avg_idle;
        self.rqs[cpu].avg_scan_cost = avg_scan_cost;
    }

    /// A CPU's `avg_scan_cost`.
    pub(super) fn avg_scan_cost(&self, cpu: CpuId) -> Nanos {
        self.rqs[cpu].avg_scan_cost
    }

    /// Consistency of queues, loads and states (used by the randomised tests).
    pub(super) fn check_invariants(&self) {
        for (cpu, rq) in self.rqs.iter().enumerate() {
            let mut load = 0;
            let mut nr = 0;
            for (i, task) in self.tasks.iter().enumerate() {
                let t = TaskId(i);
                let runnable = matches!(task.state, TaskState::Running | TaskState::Queued);
                if task.cpu != cpu || !runnable {
                    continue;
                }
                assert!(
                    task.affinity.contains(cpu) || task.state == TaskState::Running,
                    "{t:?} queued on {cpu} outside its affinity"
                );
                assert_eq!(task.state == TaskState::Running, rq.curr == Some(t));
                if task.is_rt() {
                    assert!(
                        rq.rt.values().any(|l| l.contains(&t)),
                        "{t:?} not in rt list"
                    );
                } else {
                    load += task.weight;
                    nr += 1;
                    let in_tree = rq.cfs_tree.contains(&(task.vruntime, task.tree_seq, t));
                    assert_eq!(in_tree, task.state == TaskState::Queued, "{t:?} tree");
                }
            }
            assert_eq!((rq.cfs_load, rq.cfs_nr), (load, nr), "cpu {cpu} load");
            assert_eq!(
                rq.cfs_tree.len() + usize::from(rq.curr.is_some_and(|c| !self.tasks[c.0].is_rt())),
                nr
            );
        }
    }
}
