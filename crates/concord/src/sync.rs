//! The synchronisation primitives that the lock-free parts of the parallel room are written
//! against.
//!
//! In this crate they are the real ones: `std` atomics and the Linux futex of [`crate::os`].
//! The `concord-loom` crate compiles the same source files (`parallel/ms_queue.rs`,
//! `parallel/parking.rs`) against its own `crate::sync` module, where `atomic` is loom's
//! instrumented atomics and `futex` is a loom model of compare-and-sleep, so that the model
//! checker explores the very code the collector runs. Files that should be model-checked must
//! therefore take atomics and futexes from here, never from `std` or `crate::os` directly.

/// Atomic types and orderings (`std::sync::atomic`).
pub(crate) mod atomic {
    pub(crate) use std::sync::atomic::*;
}

/// Futex compare-and-sleep on a 32-bit atomic:
/// `wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>)` and
/// `wake(word: &AtomicU32, count: u32)`.
pub(crate) mod futex {
    pub(crate) use crate::os::futex::{wait, wake};
}
