//! Loom models of the lock-free primitives of Concord's parallel phase.
//!
//! This crate does not copy the code it checks. It compiles the collector's own source files
//! with `#[path]` — the Michael–Scott task queue (004 §3.1.1), lazy parking on a futex epoch
//! (004 §3.1.2), the termination protocols (`fixed`, `live`, `owst`) and the HotSpot-style
//! monitor — against a `crate::sync` module of its own: loom's instrumented atomics, locks,
//! yields and thread-locals, and a loom model of the futex. Those files take every such call
//! from `crate::sync` (in `concord` that is `std` and `crate::os::futex`), so what loom explores
//! is exactly what the collector runs.
//!
//! The models are integration tests in `tests/`, run by a plain `cargo test`. The library is
//! never compiled in test mode (`[lib] test = false`, and the included files are left out of a
//! `cfg(test)` build, which `cargo clippy --all-targets` makes): the included files' own unit
//! tests use real threads and other parts of `concord`, which do not exist here.

/// The synchronisation primitives the included files are written against, loom edition. Public
/// so that models can also build naive protocols from the same futex model.
pub mod sync {
    /// Loom's atomics: every load, store and read-modify-write is a scheduling point, and loads
    /// may return any value the C11 memory model allows.
    pub mod atomic {
        pub use loom::sync::atomic::*;
    }

    /// A model of Linux futex wait/wake with loom's mutex and condition variable.
    ///
    /// The kernel checks the futex word and enqueues the waiter atomically with respect to
    /// wake-ups on the same word (both happen under the hash-bucket lock). The model does the
    /// same under one mutex per model execution: `wait` compares the word and starts waiting
    /// on the condition variable without releasing the lock in between, and `wake` takes the
    /// lock before notifying. Since a waker changes the word before calling `wake`, a waiter
    /// either sees the new value or is already waiting when the notification comes: no lost
    /// wake-up, exactly like the real futex. One condition variable serves every word and
    /// `wake` notifies all waiters whatever `count` says; that only adds spurious wake-ups,
    /// which futex allows and every caller handles by re-checking in a loop. Timeouts are not
    /// modelled (the included code never uses one): a timed wait is an untimed wait.
    pub mod futex {
        use std::time::Duration;

        use loom::sync::atomic::{AtomicU32, Ordering};
        use loom::sync::{Condvar, Mutex};

        /// The "kernel": per futex bit, how many wakes named it so far.
        struct Kernel {
            wakes: Mutex<[u64; 32]>,
            queue: Condvar,
        }

        loom::lazy_static! {
            // Loom resets lazy statics at the start of every execution of a model.
            static ref KERNEL: Kernel = Kernel {
                wakes: Mutex::new([0; 32]),
                queue: Condvar::new(),
            };
        }

        /// Block while `*word == expected` (until a `wake`, or spuriously).
        pub fn wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
            wait_bitset(word, expected, u32::MAX);
        }

        /// Block while `*word == expected` until a wake that names one of `bits`. Unlike the
        /// plain wake-all of the rest of the model, a wake for other bits does *not* return
        /// here: a protocol that forgets to wake someone deadlocks in the model as it would on
        /// Linux.
        pub fn wait_bitset(word: &AtomicU32, expected: u32, bits: u32) {
            let mut wakes = KERNEL.wakes.lock().unwrap();
            // SeqCst: the kernel reads the word as a plain load under its lock; the mutex
            // already orders this read after any waker that took the lock earlier.
            if word.load(Ordering::SeqCst) != expected {
                return;
            }
            let mine = |w: &[u64; 32]| -> u64 {
                (0..32).filter(|b| bits & (1 << b) != 0).map(|b| w[b]).sum()
            };
            let start = mine(&wakes);
            while mine(&wakes) == start {
                wakes = KERNEL.queue.wait(wakes).unwrap();
            }
        }

        /// Wake the threads blocked in [`wait`] on `word` (all of them, see the module docs).
        pub fn wake(word: &AtomicU32, _count: u32) {
            wake_bitset(word, u32::MAX, u32::MAX);
        }

        /// Wake the threads blocked on `word` whose bits intersect `bits` (all of those, see
        /// the module docs). Returns 0: the model does not count.
        pub fn wake_bitset(_word: &AtomicU32, _count: u32, bits: u32) -> usize {
            let mut wakes = KERNEL.wakes.lock().unwrap();
            for (b, count) in wakes.iter_mut().enumerate() {
                if bits & (1 << b) != 0 {
                    *count += 1;
                }
            }
            KERNEL.queue.notify_all();
            0
        }
    }

    /// Loom's spin hint (a yield point in the model).
    pub mod hint {
        pub use loom::hint::spin_loop;

        /// `pauses` spin-wait hints back to back.
        pub fn spin_loops(pauses: u32) {
            for _ in 0..pauses {
                spin_loop();
            }
        }
    }

    /// Loom's yield; a sleep is a yield too (loom has no clock).
    pub mod thread {
        use std::time::Duration;

        pub use loom::thread::yield_now;

        /// Loom has no time: sleeping is yielding to the other threads.
        pub fn sleep(_: Duration) {
            loom::thread::yield_now();
        }
    }

    /// The clock the monitor's timed waits read: loom has none, so it is the real one.
    pub mod time {
        pub use std::time::Instant;
    }

    pub use loom::sync::{Condvar, Mutex, MutexGuard};
    pub use loom::thread_local;

    /// Nothing may outlive a model execution, so park nodes are never recycled.
    pub const RECYCLE_PARK_NODES: bool = false;
}

// `concord`'s `switch!` macro, for the policy enums below.
#[cfg(not(test))]
#[macro_use]
#[path = "../../concord/src/switch.rs"]
mod switch;

// `concord::parallel::policy`: the switches (`TerminationKind` and its siblings).
#[cfg(not(test))]
#[path = "../../concord/src/parallel/policy.rs"]
pub mod policy;

// `concord::parallel::task_queue::ms_queue`, compiled against loom (its own module docs apply).
#[cfg(not(test))]
#[path = "../../concord/src/parallel/task_queue/ms_queue.rs"]
pub mod ms_queue;

// `concord::parallel::parking::futex`, compiled against loom.
#[cfg(not(test))]
#[path = "../../concord/src/parallel/parking/futex.rs"]
pub mod parking;

// `concord::parallel::termination` and its variants, compiled against loom.
#[cfg(not(test))]
#[path = "../../concord/src/parallel/termination/mod.rs"]
pub mod termination;

// `concord::parallel::monitor`, compiled against loom.
#[cfg(not(test))]
#[path = "../../concord/src/parallel/monitor.rs"]
pub mod monitor;
