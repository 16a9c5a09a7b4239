//! The synchronisation primitives that the parallel room's protocols are written against.
//!
//! In this crate they are the real ones: `std` atomics, locks and threads, and the Linux futex
//! of [`crate::os`]. The `concord-loom` crate compiles the same source files (the Michael–Scott
//! queue, the futex parking, the termination protocols and the monitor) against its own
//! `crate::sync` module, where every item here is loom's instrumented counterpart and `futex`
//! is a loom model of compare-and-sleep, so that the model checker explores the very code the
//! collector runs. Files that should be model-checked must therefore take atomics, locks,
//! futexes, yields and sleeps from here, never from `std` or `crate::os` directly.
//!
//! The `concord-sim` crate compiles the whole parallel room (engine, worker pool, task queues,
//! parking, termination, steal policies) against a simulated `crate::sync`, so those files also
//! take from here what else depends on the platform: the clock ([`time`]), the work-stealing
//! deques ([`deque`]), thread creation ([`thread`]), the CPU a thread runs on ([`cpu`]) and a
//! thread's resource usage ([`usage`]). Here every item is a plain re-export, so the runtime
//! pays nothing for the seam.

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

/// Spin-wait hints (`std::hint::spin_loop`), one or a run of them.
pub(crate) mod hint {
    pub(crate) use std::hint::spin_loop;

    /// `pauses` spin-wait hints back to back, touching no memory (the simulator charges them as
    /// one stretch of time instead of one scheduling point each).
    pub(crate) fn spin_loops(pauses: u32) {
        for _ in 0..pauses {
            spin_loop();
        }
    }
}

/// Yielding, sleeping and thread creation (`std::thread`), and the kernel thread id.
pub(crate) mod thread {
    pub(crate) use crate::os::sched::current_tid;
    pub(crate) use std::thread::{sleep, yield_now, Builder, JoinHandle};
}

/// The monotonic clock (`std::time::Instant`).
pub(crate) mod time {
    pub(crate) use std::time::Instant;
}

/// Work-stealing deques: an owner's LIFO end, thieves' FIFO end, and multi-producer injectors
/// (`crossbeam_deque`).
pub(crate) mod deque {
    pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};
}

/// Which CPU the calling thread runs on (`sched_getcpu`), and how many CPUs it may use (its
/// affinity mask capped by the cgroup CPU limit).
pub(crate) mod cpu {
    pub(crate) use crate::os::cpu::{current_cpu, usable_cpu_count};
}

/// The calling thread's resource usage (`getrusage(RUSAGE_THREAD)`, zeros if it fails).
pub(crate) mod usage {
    pub(crate) use crate::os::rusage::ThreadUsage;

    /// The calling thread's counters now (all zero if the kernel refuses).
    #[inline]
    pub(crate) fn current_thread() -> ThreadUsage {
        ThreadUsage::current_thread_or_zero()
    }
}

pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Whether park nodes of exited threads may be recycled through a process-wide pool. Under
/// loom every model execution starts from scratch, so nothing may outlive one.
pub(crate) const RECYCLE_PARK_NODES: bool = true;

/// Whether a GC worker that panics in the middle of a job aborts the process (a half-done
/// collection cannot be unwound). A simulation instead lets the panic end the simulation with
/// its message.
pub(crate) const ABORT_ON_WORKER_PANIC: bool = true;

pub(crate) use std::thread_local;
