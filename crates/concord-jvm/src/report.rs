//! What the agent writes: one [`GcRecord`] per collection (JSON lines, `records=PATH`), the
//! [`Report`] at VM death (`report=PATH`) and, for `concord jvm run`, the [`Outcome`] of its
//! outputs (`outcome=PATH`).

use concord::os::gc_affinity::AffinityReport;
use concord::os::mutator_sched::MutatorSchedReport;

/// A GC worker and the CPU it last ran on when the collection started.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThreadCpu {
    /// Kernel thread id.
    pub tid: i32,
    /// Its number among its collector's workers (`N` in `GC Thread#N`, `ZWorker#N`, …; see
    /// [`crate::threads`]).
    pub index: usize,
    /// Where it will run: `stat` field 39 (the CPU it last ran on), or the one CPU its mask
    /// allows if that differs (`None`: unreadable, e.g. the thread has ended).
    pub cpu: Option<u32>,
}

/// A GC worker pinned by `gc-affinity=static`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StaticBinding {
    /// Kernel thread id.
    pub tid: i32,
    /// Its place among the GC workers (`N` in `GC Thread#N` for Parallel and G1), which
    /// picks its CPU.
    pub index: usize,
    /// The CPU it is pinned to.
    pub cpu: u32,
}

/// One GC event (one `GarbageCollectionStart`/`Finish` pair, i.e. one VM operation).
#[derive(Clone, Debug, serde::Serialize)]
pub struct GcRecord {
    /// Counted from 0.
    pub gc_id: u64,
    /// Nanoseconds since the agent was loaded, at `GarbageCollectionStart`.
    pub start_ns: u64,
    /// Nanoseconds since the agent was loaded, at `GarbageCollectionFinish`.
    pub end_ns: u64,
    /// Time the agent spent in both callbacks (it lengthens the pause), µs.
    pub callback_us: f64,
    /// The start callback alone (reading CPUs, Algorithm 1, the moves), µs.
    pub start_callback_us: f64,
    /// The finish callback alone, µs.
    pub finish_callback_us: f64,
    /// The VM thread's CPU time in both callbacks, µs: far below `callback_us`, the VM thread
    /// waited for a CPU (preempted) inside them rather than the agent working.
    pub callback_cpu_us: f64,
    /// The GC workers known at the start, with their CPUs before any move.
    pub gc_threads: Vec<ThreadCpu>,
    /// The affinity decision (`dynamic`; empty otherwise): loads, high/low CPUs, moves
    /// (worker, tid, from, to), refusals.
    pub affinity: AffinityReport,
    /// The thread count changed, so the helper rescans `/proc/self/task` after this pause.
    pub rescan_requested: bool,
}

/// The agent's report at VM death.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Report {
    /// `java.vm.version` (falls back to `java.version`).
    pub jdk: String,
    /// `java.vm.name`.
    pub vm_name: String,
    /// `java.vm.vendor`.
    pub vm_vendor: String,
    /// Whether the VM is HotSpot (otherwise the agent only counted GC events).
    pub hotspot: bool,
    /// Loaded into a running JVM (`Agent_OnAttach`).
    pub attached: bool,
    /// `none`, `static` or `dynamic`.
    pub gc_affinity: String,
    /// `cfs`, `fifo`, `profile:PATH` or `adaptive:SECONDS`.
    pub mutator_sched: String,
    /// `mutators` or `all`.
    pub fifo_scope: String,
    /// The CPUs the JVM may use.
    pub allowed_cpus: Vec<u32>,
    /// `GarbageCollectionStart`/`Finish` pairs seen.
    pub gc_events: u64,
    /// Distinct GC workers seen (`GC Thread#N`, `ZWorker#N`, … see [`crate::threads`]).
    pub gc_threads: usize,
    /// Their names, one entry per family seen (`GC Thread#N`, `ZWorkerYoung#N`, …).
    pub gc_worker_names: Vec<String>,
    /// Their thread ids.
    pub gc_thread_ids: Vec<i32>,
    /// Successful placements (static pins plus dynamic moves).
    pub affinity_moves: u64,
    /// Placements the OS refused.
    pub affinity_failures: u64,
    /// The pins of `static`.
    pub static_bindings: Vec<StaticBinding>,
    /// Median time in the GC callbacks per collection, µs.
    pub callback_us_p50: f64,
    /// 99th percentile, µs.
    pub callback_us_p99: f64,
    /// Maximum, µs.
    pub callback_us_max: f64,
    /// The VM thread's CPU time in the callbacks, per collection: median and maximum, µs.
    pub callback_cpu_us_p50: f64,
    pub callback_cpu_us_max: f64,
    /// Collections whose callbacks took over 200 µs (the budget), and of those the
    /// ones that spent less than half of it on the CPU (the VM thread was preempted).
    pub callbacks_over_200us: usize,
    pub callbacks_over_200us_off_cpu: usize,
    /// Median of the start callback alone, µs.
    pub start_callback_us_p50: f64,
    /// Maximum of the start callback alone, µs.
    pub start_callback_us_max: f64,
    /// Walks of `/proc/self/task` (outside the pauses).
    pub rescans: u64,
    /// `ThreadStart` events (enabled unless `mutator-sched=cfs`).
    pub java_threads_started: u64,
    /// `ThreadEnd` events.
    pub java_threads_ended: u64,
    /// Threads put on `SCHED_FIFO` (Java threads by the mutator policy, plus the JVM's own
    /// with `fifo-scope=all`).
    pub fifo_threads: usize,
    /// What Concord's mutator scheduler did (`None` for `cfs`): the policy applied, 001's
    /// decisions (profile, adaptive samples and switches), refusals.
    pub mutator_sched_detail: Option<MutatorSchedReport>,
    /// Things the user should know: refused calls, a non-HotSpot VM, no GC workers, …
    pub notices: Vec<String>,
}

/// What became of the agent's outputs, written at VM death to `outcome=PATH` for the
/// `concord jvm run` that started the JVM (which says it and fails the run when something is
/// lost). A file that is missing means the agent never finished (the JVM was killed).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// Why this copy of the agent stayed passive (another copy of it was loaded first), if it
    /// did: it wrote nothing else.
    pub passive: Option<String>,
    /// Every output that could not be written completely: which, what went wrong, what was
    /// lost (`cannot write records to '/x': No space left on device (os error 28); the
    /// records of GC(155)..GC(1755) (1601 collections) are lost`).
    pub failures: Vec<String>,
}
