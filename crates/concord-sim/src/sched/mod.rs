//! The scheduler model the simulator's executor drives: which simulated thread runs on which
//! simulated CPU, when it is preempted, where it wakes up and when the load balancer moves it.
//!
//! # How an executor drives a model
//!
//! Time is virtual, in nanoseconds ([`Nanos`]), and never goes backwards: every call takes the
//! current time `now`, which must be at least the `now` of the previous call (a model panics
//! otherwise: that is a bug in the executor, not bad user input; so does a [`TaskId`] not returned
//! by `create`, or a CPU number outside the machine). Each call first runs every
//! timer due at or before `now` (scheduler ticks, the RT period, periodic load balancing), so a
//! model is always up to date even if the executor skipped a [`SchedulerModel::next_timer`].
//!
//! The executor owns what threads *do*; the model owns where they *are*:
//!
//! 1. Create tasks with [`SchedulerModel::create`] (policy, nice or RT priority, affinity, and
//!    either a CPU to start on or fork placement).
//! 2. Whenever [`SchedulerModel::needs_resched`] is true for a CPU (after any call; the set of such
//!    CPUs is [`SchedulerModel::cpus_needing_resched`]), call [`SchedulerModel::pick_next`] for it:
//!    the model puts the previous task back (if still runnable), picks the next one (running
//!    new-idle balancing if the CPU would go idle) and returns it, or `None` if the CPU idles.
//!    Until then the CPU keeps running its current task ([`SchedulerModel::current`]).
//! 3. When the running task blocks (futex wait, sleep), yields or exits, call
//!    [`SchedulerModel::block`], [`SchedulerModel::yield_now`] or [`SchedulerModel::exit`] for its
//!    CPU; these always ask for a reschedule of that CPU.
//! 4. When a thread wakes another (futex wake, notify), call [`SchedulerModel::wake`] with the
//!    waker's CPU; the model chooses the wakee's CPU, enqueues it and may ask for preemption of
//!    that CPU's current task.
//! 5. Between events, advance to [`SchedulerModel::next_timer`] with
//!    [`SchedulerModel::run_timers`]; ticks may preempt a task and balancing may move queued
//!    tasks (a move to an idle CPU asks that CPU to reschedule).
//!
//! Runtime is accounted to the task running on a CPU from the moment `pick_next` returned it until
//! the CPU's next `pick_next`/`block`/`yield_now`/`exit` (or a tick), exactly as the kernel's
//! `update_curr` does. Counters per task (runtime, run-queue wait, migrations, context switches)
//! are in [`TaskStats`].
//!
//! # Determinism
//!
//! Models use no randomness, no wall clock and no hash-map iteration: every choice is a function
//! of the call sequence (ties go to the lower CPU or the earlier-enqueued task). The same calls
//! with the same times give the same decisions, bit for bit; an executor that needs randomness
//! (its own steal victims) seeds its own generator.
//!
//! # The Linux 4.9 model ([`Linux49`])
//!
//! The kernel of 000's experiments. What is modelled, from which kernel function:
//!
//! - **CFS runqueues** (`kernel/sched/fair.c`): per-CPU queues ordered by vruntime; vruntime
//!   advances by `delta × 1024 / weight` (`calc_delta_fair`) with the kernel's nice→weight table
//!   (`sched_prio_to_weight`); `min_vruntime` follows the leftmost/current task
//!   (`update_min_vruntime`). Tunables scaled by `1 + log2(min(ncpus, 8))`
//!   (`sysctl_sched_tunable_scaling = SCHED_TUNABLESCALING_LOG`, `get_update_sysctl_factor`):
//!   `sched_latency` 6 ms, `min_granularity` 0.75 ms, `wakeup_granularity` 1 ms, so 24, 3 and
//!   4 ms from 8 CPUs up. The period stretches to `nr × min_granularity` past
//!   `sched_nr_latency` = 8 tasks (`__sched_period`); a task's slice is its weight's share of it
//!   (`sched_slice`).
//! - **Ticks** at HZ = 250 (4 ms) on busy CPUs (idle CPUs are tickless): `check_preempt_tick`
//!   preempts the current task when it has run its slice, or when it has run at least
//!   `min_granularity` and is more than a slice ahead of the leftmost task.
//! - **Placement** (`place_entity`): a new task starts a vslice after `min_vruntime`
//!   (`START_DEBIT`); a woken task gets `max(its vruntime, min_vruntime − sched_latency/2)`
//!   (`GENTLE_FAIR_SLEEPERS`). A task changing CPU keeps its vruntime relative to the queue's
//!   `min_vruntime` (`migrate_task_rq_fair` / `enqueue_entity` renormalisation).
//! - **Wake-up preemption** (`check_preempt_wakeup`, `wakeup_preempt_entity`): the woken task
//!   preempts the current one iff the current task's vruntime exceeds the wakee's by more than
//!   `wakeup_granularity` converted to the wakee's virtual time.
//! - **Wake-up placement** (`select_task_rq_fair` of 4.9): `record_wakee`/`wake_wide` (the
//!   waker's wakee flips against the LLC size), `want_affine` when the waker's CPU is allowed,
//!   `wake_affine` (the pre-4.13 load comparison with `imbalance_pct`, not sync), then
//!   `select_idle_sibling` as rewritten in 4.9: the target if idle, the previous CPU if idle and
//!   cache-affine, an idle core of the target's LLC, an idle CPU of the LLC, an idle SMT sibling,
//!   else the target; the LLC is not scanned for an idle CPU when the waking CPU's `avg_idle`
//!   over 512 is below its `avg_scan_cost` (`select_idle_cpu`), the average of its scans' costs
//!   (an eighth of each new sample), a scan costing 20 ns per CPU examined
//!   ([`Tunables::scan_cost_per_cpu`], about one last-level-cache hit: the kernel measures it);
//!   a CPU outside the task's affinity falls back to `select_fallback_rq`.
//! - **`sched_yield`** (`yield_task_fair`): with another runnable task the yielder becomes the
//!   skip buddy, and `pick_next_entity` passes it over for the next task when that one is within
//!   `wakeup_granularity` of it; the skip stays until the yielder is picked or dequeued. The
//!   yielder stays runnable. Alone on its CPU, yield does nothing but reschedule.
//! - **Load**: a CPU's load is the summed weight of its runnable CFS tasks (queued or running);
//!   sleeping tasks contribute nothing, so they are invisible to balancing (000 §2.5).
//! - **New-idle balancing** (`idle_balance`, `load_balance(CPU_NEWLY_IDLE)`): a CPU about to go
//!   idle walks its domains bottom up and pulls one queued (never a running) task from the
//!   busiest CPU of the busiest group, subject to affinity and cache hotness. It is skipped when
//!   the CPU's `avg_idle` is below `sched_migration_cost` (0.5 ms): `avg_idle` starts at 1 ms,
//!   and each wake-up onto the CPU after it went idle adds an eighth of the difference between
//!   that idle period and the average (`update_avg` in `ttwu_do_wakeup`), capped at 1 ms.
//! - **Periodic balancing** (`rebalance_domains`, `load_balance`, `find_busiest_group`,
//!   `detach_tasks`, `can_migrate_task`): per CPU and domain at the domain's interval, only by the
//!   group's balancing CPU (`should_we_balance`: the first idle CPU of the group, else its first
//!   CPU); busiest group by average load per CPU, `imbalance_pct` threshold, an idle CPU forcing a
//!   move from an overloaded group; queued tasks only, oldest first, respecting affinity, skipping
//!   cache-hot tasks (ran within `sched_migration_cost` = 0.5 ms) until the domain has failed more
//!   than `cache_nice_tries` times. Intervals: see [`crate::machine::busy_balance_interval_ms`]
//!   (64 ms SMT, 128 ms MC, 256 ms per NUMA level on a busy CPU, 32× shorter on an idle CPU);
//!   as in the kernel a balanced domain doubles its interval (up to 2×) and a move resets it.
//! - **Affinity** is respected by fork and wake placement, both balancers and RT placement;
//!   narrowing a queued task's mask moves it at once, a running task moves when it next leaves
//!   the CPU.
//! - **Migrations** are counted per task whenever its CPU changes (`set_task_cpu`).
//! - **SCHED_FIFO** (`kernel/sched/rt.c`): above every CFS task; priority 1–99; FIFO within a
//!   priority (a preempted task stays at the head of its list); a woken FIFO task preempts CFS and
//!   lower priorities; `sched_yield` moves it to the tail of its list; wake placement moves it
//!   off a CPU running an equal or higher RT task to a CPU of the lowest priority level (idle
//!   first, then CFS) as `select_task_rq_rt`/`find_lowest_rq` do; a CPU dropping to CFS or idle
//!   pulls a queued RT task from another CPU (`pull_rt_task`). RT throttling per CPU: at most
//!   950 ms of RT time per 1000 ms period (`sched_rt_runtime_us`, `sched_rt_period_us`), the
//!   period timer paying back one runtime per period as `do_sched_rt_period_timer` does.
//!
//! Not modelled (each is a known difference from 4.9): PELT load averages (load is the
//! instantaneous runnable weight, so a task that just woke weighs fully at once); CPU capacity
//! and `smt_gain` (every logical CPU has capacity 1024); `rd->overload` (new-idle balancing runs whenever `avg_idle` allows); active balancing (moving a *running*
//! task through the stopper thread); NOHZ idle-balancer election (idle CPUs balance at their own
//! interval as if kicked); the next and last buddies (only the skip buddy); `sync` wake-ups;
//! SCHED_RR, SCHED_BATCH, SCHED_IDLE, deadline; RT push on overload beyond wake placement, and
//! `RT_RUNTIME_SHARE` (runtime borrowing between CPUs, on by default in 4.9, which lets one CPU
//! run RT tasks beyond 95 %); cgroups and group scheduling; automatic NUMA balancing; power
//! states. `calc_delta_fair` divides exactly instead of the kernel's 32-bit inverse-weight
//! multiply (differences of a few ns).
//!
//! # This machine's wake-up placement ([`WakePlacement::Pack`])
//!
//! Both models place a woken fair task as above by default ([`WakePlacement::Default`]).
//! `with_wake_placement(WakePlacement::Pack)` ([`Linux49::with_wake_placement`],
//! [`Eevdf::with_wake_placement`]) swaps in a model of this project's machine's kernel, which
//! keeps a woken task on its waker's CPU while that CPU has room for it, even with another
//! CPU idle: the rule, its parameters ([`PackTunables`]) and the traces they come from are in
//! [`pack`]. It needs a utilization per task, which the models keep for it alone (the share
//! of recent time the task ran, with PELT's half-life, from half its first CPU's spare
//! capacity, as `post_init_entity_util_avg` starts it).
//!
//! # The Linux 6.6 EEVDF model ([`Eevdf`])
//!
//! Linux 6.6 replaced CFS's pick and preemption with EEVDF and left the rest of the fair class
//! (per-CPU queues, weights, wake-up placement, both balancers, affinity) and the RT class as
//! they were at the level modelled here, so [`Eevdf`] is the same machinery as [`Linux49`] with
//! a different fair class; everything in the list above holds for it except the tunables,
//! placement, preemption and yield rules of CFS, which become:
//!
//! - **Base slice** (`sysctl_sched_base_slice`, which replaced `min_granularity`): 0.75 ms times
//!   the same `1 + log2(min(ncpus, 8))`, so 3 ms from 8 CPUs up; a task's virtual slice is
//!   `slice × 1024 / weight`. `sched_latency` and `wakeup_granularity` are gone.
//! - **Eligibility** (`avg_vruntime`, `entity_eligible`): a CPU's `avg_vruntime` is the
//!   load-weighted mean vruntime of its runnable fair tasks (current included), floored; a task
//!   is eligible when its vruntime is at most that mean (compared exactly, without dividing).
//! - **Pick** (`pick_eevdf`): the eligible task with the earliest virtual deadline (ties to the
//!   task queued first). `RUN_TO_PARITY` (on in 6.6): an eligible current task whose deadline has
//!   not changed since it was picked is kept.
//! - **Deadlines** (`update_deadline`, from `update_curr`): when a running task's vruntime reaches
//!   its deadline it gets a new one, vruntime + vslice, and is preempted if another fair task is
//!   runnable. As in 6.6 without `HRTICK`, this is seen at the next accounting point, at the
//!   latest the 4 ms tick; 4.9's `check_preempt_tick` is not used.
//! - **Lag and placement** (`update_entity_lag`, `place_entity` with `PLACE_LAG`): every dequeue
//!   (sleep, migration, policy change) saves the lag `avg_vruntime − vruntime`, clamped to the
//!   virtual time of max(2 slices, one tick); every enqueue places the task at `avg_vruntime −
//!   lag × (W + w) / W` (W the queue's other load, w the task's), so it is that lag from the new
//!   mean, with deadline one vslice later. An empty queue drops the lag. A new task has lag 0 and
//!   half a vslice to its first deadline (`PLACE_DEADLINE_INITIAL`). There is no sleeper credit
//!   (`GENTLE_FAIR_SLEEPERS`) and no `START_DEBIT`, and a migrating task is placed by its lag
//!   rather than renormalised against `min_vruntime`.
//! - **Wake-up preemption** (`check_preempt_wakeup`): the woken (or newly created, or moved)
//!   task preempts iff `pick_eevdf` over the queue with the current task would choose it: it is
//!   eligible with the earliest deadline, and the current task is either ineligible or has had a
//!   new deadline since it was picked (`RUN_TO_PARITY`).
//! - **`sched_yield`** (`yield_task_fair` of 6.6): unless the task is alone on its CPU, its
//!   deadline moves one vslice later; its vruntime is unchanged, so it stays eligible and runs
//!   again if its new deadline is still the earliest. (Setting vruntime to the deadline, which
//!   makes the yielder ineligible, came with Linux 6.17, not 6.6.) There is no skip buddy.
//! - **The idle-CPU scan of a wake-up** (`select_idle_cpu` with `SIS_UTIL`, from 5.20): after
//!   the target and the previous CPU, a wake-up looks at no more than `nr_idle_scan` CPUs of the
//!   LLC, from the target on. Periodic (not new-idle) balancing of the LLC domain sets it from
//!   the LLC's utilization (`update_idle_cpu_scan`): with x the mean utilization per CPU
//!   (0..=1024), `llc × (1 − x² × pct² / (10 000 × 1024²))`, rounded down, `pct` the domain's
//!   `imbalance_pct`; it reaches 0 (no scan: the wakee queues on the target) when x is
//!   100/117 = 85 % of capacity. A CPU's utilization follows PELT's `util_avg` at the CPU level:
//!   the share of recent time the CPU ran any task, decayed with PELT's 32 ms half-life,
//!   continuously rather than in 1024 µs periods, and not moved with a migrating task.
//!
//! New-idle balancing is not skipped by `avg_idle` (6.x compares it with the balancing's own
//! measured cost, microseconds). Not modelled beyond 4.9's list: 6.x's `wake_affine_idle` and `recent_used_cpu` (wake-up
//! placement is 4.9's apart from the scan limit); per-task PELT (only the CPU-level utilization
//! above, for the scan limit; balancing still uses runnable weight); `reweight_entity`'s rescaling of lag and deadline when a
//! queued task's nice changes (the task is dequeued and placed again with its lag instead);
//! per-task slices (`sched_attr.sched_runtime`, 6.12); the `NEXT_BUDDY` (off by default);
//! `DELAY_DEQUEUE` (6.12); `sched_ext`; `RUN_TO_PARITY` at a context switch caused by something
//! other than the fair class (the previous task is put back and competes like any queued one).
//! `avg_vruntime` is recomputed by scanning the queue rather than kept incrementally.

mod eevdf;
mod linux49;
pub mod pack;

#[cfg(test)]
mod tests;

#[cfg(test)]
mod eevdf_tests;

#[cfg(test)]
mod pack_tests;

pub use eevdf::Eevdf;
pub use linux49::{Linux49, Tunables, UTIL_HALF_LIFE};
pub use pack::{PackTunables, WakePlacement};

use crate::machine::{CpuId, CpuSet, Machine};
use std::fmt;

/// Virtual time in nanoseconds.
pub type Nanos = u64;

/// One millisecond in [`Nanos`].
pub const MS: Nanos = 1_000_000;

/// A task (simulated thread), numbered from 0 in creation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TaskId(pub usize);

/// A task's scheduling policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER under CFS, with a nice value −20..=19.
    Normal { nice: i8 },
    /// SCHED_FIFO with a real-time priority 1..=99 (higher runs first).
    Fifo { priority: u8 },
}

/// Where a new task starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// On this CPU (must be in the affinity mask).
    On(CpuId),
    /// Fork balancing from the parent's CPU: the idlest allowed CPU, nearest the parent on ties.
    Fork { parent_cpu: CpuId },
}

/// How a task is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub policy: Policy,
    pub affinity: CpuSet,
    pub placement: Placement,
    /// Start asleep (a thread already parked when the simulation begins) rather than runnable.
    pub sleeping: bool,
}

/// What a task is doing, as the scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    /// Running on its CPU.
    Running,
    /// Runnable, waiting in its CPU's runqueue.
    Queued,
    /// Blocked; contributes no load.
    Sleeping,
    /// Exited.
    Exited,
}

/// Per-task counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// Time spent running.
    pub runtime: Nanos,
    /// Time spent runnable but waiting in a runqueue.
    pub wait: Nanos,
    /// Times the task's CPU changed.
    pub migrations: u64,
    /// Times the task was picked to run after something else (or nothing) ran.
    pub switches: u64,
}

/// A request the model refuses (bad task id, empty or out-of-machine affinity, bad nice or
/// priority), with a message naming what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedError(pub String);

impl fmt::Display for SchedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SchedError {}

/// A scheduler model a discrete-event executor drives (see the module documentation for the
/// protocol). Calls about a CPU's running task (`block`, `yield_now`, `exit`) do nothing when
/// the CPU has no running task.
pub trait SchedulerModel {
    /// The machine being scheduled.
    fn machine(&self) -> &Machine;

    /// Creates a task (`wake_up_new_task`): placed and enqueued unless `spec.sleeping`. May ask
    /// the chosen CPU to reschedule (preemption by the new task).
    fn create(&mut self, spec: TaskSpec, now: Nanos) -> Result<TaskId, SchedError>;

    /// Wakes a sleeping task (`try_to_wake_up`); `waker_cpu` is the CPU of the thread that woke
    /// it (`None` for a timer or an interrupt). Returns the CPU it was enqueued on; waking a task
    /// that is not sleeping does nothing and returns its CPU.
    fn wake(&mut self, task: TaskId, waker_cpu: Option<CpuId>, now: Nanos) -> CpuId;

    /// The task running on `cpu` blocks (futex wait, sleep).
    fn block(&mut self, cpu: CpuId, now: Nanos);

    /// The task running on `cpu` calls `sched_yield`.
    fn yield_now(&mut self, cpu: CpuId, now: Nanos);

    /// The task running on `cpu` exits.
    fn exit(&mut self, cpu: CpuId, now: Nanos);

    /// `sched_setaffinity`: the mask must be a non-empty set of the machine's CPUs.
    fn set_affinity(&mut self, task: TaskId, mask: CpuSet, now: Nanos) -> Result<(), SchedError>;

    /// `sched_setscheduler` / `setpriority`.
    fn set_policy(&mut self, task: TaskId, policy: Policy, now: Nanos) -> Result<(), SchedError>;

    /// Context switch on `cpu` (`__schedule`): puts back the current task if still runnable and
    /// returns the task that runs now (possibly the same), or `None` if the CPU goes idle.
    /// Clears the CPU's need-resched flag.
    fn pick_next(&mut self, cpu: CpuId, now: Nanos) -> Option<TaskId>;

    /// Whether `cpu` must reschedule (after accounting its current task's runtime up to `now`).
    fn needs_resched(&mut self, cpu: CpuId, now: Nanos) -> bool;

    /// The CPUs whose need-resched flag is set, in CPU order.
    fn cpus_needing_resched(&self) -> Vec<CpuId>;

    /// The task running on `cpu`.
    fn current(&self, cpu: CpuId) -> Option<TaskId>;

    /// A task's state and CPU (its last or current CPU; the CPU it is queued on).
    fn task_state(&self, task: TaskId) -> (TaskState, CpuId);

    /// A task's counters (runtime accounted up to the last call).
    fn task_stats(&self, task: TaskId) -> TaskStats;

    /// The next time the model has something to do (tick, RT period, balance), or `None` if every
    /// CPU is idle and nothing is pending.
    fn next_timer(&self) -> Option<Nanos>;

    /// Runs every timer due at or before `now`: ticks (slice preemption, RT throttling), the RT
    /// period, periodic load balancing.
    fn run_timers(&mut self, now: Nanos);
}
