//! Loom models of the lock-free primitives of Concord's parallel phase.
//!
//! This crate does not copy the code it checks. It compiles the collector's own source files,
//! `concord/src/parallel/ms_queue.rs` (the Michael–Scott task queue, 004 §3.1.1) and
//! `concord/src/parallel/parking.rs` (lazy parking on a futex epoch, 004 §3.1.2), with
//! `#[path]`, against a `crate::sync` module of its own: loom's instrumented atomics and a loom
//! model of the futex. Both files take every atomic and futex call from `crate::sync` (in
//! `concord` that is `std` and `crate::os::futex`), so what loom explores is exactly what the
//! collector runs.
//!
//! The models are integration tests in `tests/`, run by a plain `cargo test`. The library is
//! never compiled in test mode (`[lib] test = false`): the included files' own unit tests use
//! real threads, which cannot touch loom objects outside a model.

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

        struct Kernel {
            lock: Mutex<()>,
            queue: Condvar,
        }

        loom::lazy_static! {
            // Loom resets lazy statics at the start of every execution of a model.
            static ref KERNEL: Kernel = Kernel {
                lock: Mutex::new(()),
                queue: Condvar::new(),
            };
        }

        /// Block while `*word == expected` (until a `wake`, or spuriously).
        pub fn wait(word: &AtomicU32, expected: u32, _timeout: Option<Duration>) {
            let guard = KERNEL.lock.lock().unwrap();
            // SeqCst: the kernel reads the word as a plain load under its lock; the mutex
            // already orders this read after any waker that took the lock earlier.
            if word.load(Ordering::SeqCst) != expected {
                return;
            }
            drop(KERNEL.queue.wait(guard).unwrap());
        }

        /// Wake the threads blocked in [`wait`] on `word` (all of them, see the module docs).
        pub fn wake(_word: &AtomicU32, _count: u32) {
            let _guard = KERNEL.lock.lock().unwrap();
            KERNEL.queue.notify_all();
        }
    }
}

// `concord::parallel::ms_queue`, compiled against loom (its own module docs apply).
#[path = "../../concord/src/parallel/ms_queue.rs"]
pub mod ms_queue;

// `concord::parallel::parking`, compiled against loom.
#[path = "../../concord/src/parallel/parking.rs"]
pub mod parking;
