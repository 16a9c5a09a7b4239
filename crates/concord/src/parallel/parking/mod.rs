//! How idle GC workers sleep between jobs and how the dispatcher (the VM thread) learns that a
//! job is done: the [`ParkingKind`] switch, one file per kind.
//!
//! * [`futex`] (004 §3.1.2, lazy parking): workers sleep on an epoch futex; the dispatcher bumps
//!   the epoch, wakes only the participants, and waits on a countdown. No lock anywhere, no
//!   final barrier.
//! * [`monitor`] (OpenJDK 8, 004 §2.3.3): workers wait in the WaitSet of the GC task manager's
//!   monitor; the dispatcher publishes the job (and the phase's root tasks) under the lock and
//!   `notify_all`s, which moves them to the monitor's contention queue so they wake one heir at
//!   a time, each taking its first task before it lets the lock go. At the end each worker
//!   checks in under the same lock (the final barrier); the last one wakes the VM thread.
//!
//! [`ParkingKind`]: super::policy::ParkingKind

pub mod futex;
pub mod monitor;
