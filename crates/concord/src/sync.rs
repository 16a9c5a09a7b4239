//! The synchronisation primitives that the parallel room's protocols are written against.
//!
//! In this crate they are the real ones: `std` atomics, locks and threads, and the Linux futex
//! of [`crate::os`]. The `concord-loom` crate compiles the same source files (the Michael–Scott
//! queue, the futex parking, the termination protocols and the monitor) against its own
//! `crate::sync` module, where every item here is loom's instrumented counterpart and `futex`
//! is a loom model of compare-and-sleep, so that the model checker explores the very code the
//! collector runs. Files that should be model-checked must therefore take atomics, locks,
//! futexes, yields and sleeps from here, never from `std` or `crate::os` directly.

/// Atomic types and orderings (`std::sync::atomic`).
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::*;
}

/// Futex compare-and-sleep on a 32-bit atomic:
/// `wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>)`,
/// `wake(word: &AtomicU32, count: u32)`, and the bitset forms that wake only waiters whose
/// bits match.
pub(crate) mod futex {
    pub(crate) use crate::os::futex::{wait, wait_bitset, wake, wake_bitset};
}

/// Spin-wait hints (`std::hint::spin_loop`).
pub(crate) mod hint {
    pub(crate) use std::hint::spin_loop;
}

/// Yielding and sleeping (`std::thread`).
pub(crate) mod thread {
    pub(crate) use std::thread::{sleep, yield_now};
}

pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Whether park nodes of exited threads may be recycled through a process-wide pool. Under
/// loom every model execution starts from scratch, so nothing may outlive one.
pub(crate) const RECYCLE_PARK_NODES: bool = true;

pub(crate) use std::thread_local;
