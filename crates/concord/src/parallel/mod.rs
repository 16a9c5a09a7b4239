//! The parallel room: GC worker threads and the engine that shares a phase's work among them.
//!
//! A collection phase is a [`ParallelTask`]: a list of root tasks plus a per-item `process`
//! function. [`run_phase`] hands root tasks out through a [`task_queue`], lets each worker drain
//! its own deque, then steal from others ([`steal`]) until the [`termination`] protocol agrees
//! that every deque is empty. Worker threads live in a [`pool::WorkerPool`] and sleep between
//! collections ([`parking`]). A phase with far more workers than CPUs lets only a few of them
//! wait actively for its end ([`oversubscription`]). Nothing here knows about objects: the
//! `collection` room supplies the items and what to do with them.

pub mod engine;
pub mod monitor;
pub mod oversubscription;
pub mod parking;
pub mod policy;
pub mod pool;
pub mod rng;
pub mod steal;
pub mod task_queue;
pub mod termination;

pub use engine::{run_phase, run_phase_segregated, ParallelTask, Segregation, WorkQueue};
pub use policy::{
    ParkingKind, PhasePolicy, StealPolicy, TaskQueueKind, TerminationBackoff, TerminationKind,
};
pub use pool::WorkerPool;
