//! Concord's many-core simulator: the collector's own parallel-phase code on N simulated CPUs,
//! in virtual time, deterministically.
//!
//! # One source, two platforms
//!
//! The policies are not re-implemented here. Like `concord-loom`, this crate compiles the
//! collector's own source files with `#[path]` (the whole `parallel` room: the engine, the worker
//! pool, the task queues, lazy parking on a futex epoch, the termination protocols with their
//! spin/yield/sleep loops, the HotSpot-style monitor) against a `crate::sync` module of its own
//! ([`sync`]). Those files take every atomic, lock, futex, spin hint, yield, sleep,
//! thread-local, clock read, work-stealing deque, thread creation and CPU id from `crate::sync`;
//! in `concord` that is `std`, `crossbeam_deque` and the Linux system calls, here every such call
//! charges a virtual cost and is a scheduling point of the [`exec`] executor. Change a policy file and both the runtime and the
//! simulator change. The alternative the issue names (policies rewritten as state machines that
//! a driver interprets) would have meant rewriting every protocol and keeping two versions in
//! step; the platform layer already existed for loom, so the simulator only adds a backend.
//!
//! Because only one simulated thread runs at a time, the simulation is sequentially consistent:
//! it measures *time* (who waits for whom, how long spinning and sleeping cost, what sharing
//! CPUs does), while memory-model races stay `concord-loom`'s job.
//!
//! # Pieces
//!
//! * [`exec`]: the virtual-time executor ([`exec::Sim`]), its cost table ([`exec::Costs`]) and
//!   the seam for a scheduler model ([`exec::Placement`], built-in [`exec::RoundRobin`]).
//! * [`machine`]: the simulated machine (CPUs, SMT siblings, NUMA nodes, LLC domains) and the
//!   scheduling domains Linux builds over it.
//! * [`sched`]: the scheduler models an executor drives (CFS and SCHED_FIFO as in Linux 4.9;
//!   EEVDF as in Linux 6.6, [`exec::Sim::eevdf`]), plugged into the executor by
//!   [`exec::ModelPlacement`]: [`exec::Sim::linux49`] runs the
//!   simulated threads on a [`machine::Machine`] under it, with each thread's policy, affinity
//!   and start CPU given at spawn ([`exec::ThreadSpec`]) and [`exec::set_affinity`] for a thread
//!   moving itself.
//! * [`sync`]: the simulated `crate::sync`.
//! * [`interference`]: busy loops, mutators stopped at a safepoint, co-running instances
//!   (background threads, [`exec::Sim::spawn_background`]).
//! * [`affinity`]: GC-thread affinity (static binding, 000 Algorithm 1) for simulated workers,
//!   deciding with `concord`'s own `os::gc_affinity::plan`; the per-CPU load it reads is
//!   [`exec::runnable_per_cpu`].
//! * [`numa`]: the NUMA cost model (remote latency, per-node and interconnect bandwidth) of
//!   [`exec::charge_copy_on`], with 004's figures.
//! * [`parallel`]: `concord::parallel`, the collector's parallel room, file for file: the
//!   engine that runs a phase (`parallel::engine::run_phase`), the persistent worker pool with
//!   its futex-epoch and monitor parking (`parallel::pool::WorkerPool`), the task queues, steal
//!   policies, termination protocols, the HotSpot-style monitor and the switches. A driver
//!   creates a `WorkerPool` on a simulated thread; its workers are simulated threads
//!   ([`exec::spawn`]) that park between phases exactly as the runtime's do.
//! * [`telemetry`]: `concord`'s statistics types, which the engine fills in.
//! * [`runtime`]: the runtime's switches and phase policy converted to the simulator's copies.
//!
//! The included files' own `#[cfg(test)]` unit tests use real threads and other parts of
//! `concord`, so the includes are left out of this crate's test build (as in `concord-loom`);
//! the simulations of them are the integration tests in `tests/`.

pub mod affinity;
pub mod calibrate;
pub mod exec;
pub mod interference;
pub mod machine;
pub mod numa;
pub mod replay;
pub mod sched;
pub mod sync;

// `concord`'s `switch!` macro, for the policy enums of `parallel::policy`.
#[cfg(not(test))]
#[macro_use]
#[path = "../../concord/src/switch.rs"]
mod switch;

// `concord::parallel`, the whole parallel room, compiled against the simulated sync layer: the
// engine (`run_phase`, `run_phase_segregated`), the worker pool with both parkings, the task
// queues, the steal policies, the termination protocols, the monitor and the switches.
#[cfg(not(test))]
#[path = "../../concord/src/parallel/mod.rs"]
pub mod parallel;

#[cfg(not(test))]
pub mod runtime;

/// The collector's telemetry types the parallel room fills in: `concord`'s own, so a
/// simulation's per-worker statistics are the very records `concord run` writes.
pub mod telemetry {
    pub use concord::telemetry::{MonitorRecord, WorkerPhaseStats};
}
