//! The synchronisation primitives the included parallel-phase files are written against,
//! simulator edition: the same names and signatures as `concord`'s `crate::sync`, where every
//! atomic operation, lock, futex call, spin hint, yield and sleep charges its virtual cost
//! ([`crate::exec::Costs`]) and is a scheduling point of the executor ([`crate::exec`]).
//!
//! The values live in real `std` atomics: only one simulated thread runs at a time and the baton
//! passes through a mutex, so every operation sees every earlier one (sequential consistency;
//! weaker orderings are not explored here, that is `concord-loom`'s job). Outside a simulation
//! (e.g. building a structure before [`crate::exec::Sim::run`]) the operations act at once and
//! charge nothing.

/// Atomics whose every operation is a scheduling point.
pub mod atomic {
    use std::fmt;

    pub use std::sync::atomic::Ordering;

    use crate::exec::{self, Op};

    /// Read-modify-write methods `(&self, v, order) -> old` that forward to `std` and charge
    /// [`Op::Rmw`].
    macro_rules! rmw_methods {
        ($value:ty; $($(#[$doc:meta])* $method:ident),*) => {
            $(
                $(#[$doc])*
                pub fn $method(&self, v: $value, order: Ordering) -> $value {
                    let old = self.0.$method(v, order);
                    exec::op(Op::Rmw);
                    old
                }
            )*
        };
    }

    /// The methods every simulated atomic has: load, store, compare-and-swap (charged as such)
    /// and the free accessors of exclusive access.
    macro_rules! basic_methods {
        ($value:ty) => {
            /// Atomic load.
            pub fn load(&self, order: Ordering) -> $value {
                let v = self.0.load(order);
                exec::op(Op::Load);
                v
            }

            /// Atomic store.
            pub fn store(&self, v: $value, order: Ordering) {
                self.0.store(v, order);
                exec::op(Op::Store);
            }

            /// Compare-and-swap.
            pub fn compare_exchange(
                &self,
                current: $value,
                new: $value,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$value, $value> {
                let r = self.0.compare_exchange(current, new, success, failure);
                exec::op(Op::Cas);
                r
            }

            /// Compare-and-swap that never fails spuriously here.
            pub fn compare_exchange_weak(
                &self,
                current: $value,
                new: $value,
                success: Ordering,
                failure: Ordering,
            ) -> Result<$value, $value> {
                self.compare_exchange(current, new, success, failure)
            }

            /// Apply `f` with a CAS loop; charged as one CAS (no other thread runs in between
            /// here).
            pub fn fetch_update(
                &self,
                set_order: Ordering,
                fetch_order: Ordering,
                f: impl FnMut($value) -> Option<$value>,
            ) -> Result<$value, $value> {
                let r = self.0.fetch_update(set_order, fetch_order, f);
                exec::op(Op::Cas);
                r
            }

            /// The value, through exclusive access (no cost).
            pub fn get_mut(&mut self) -> &mut $value {
                self.0.get_mut()
            }

            /// The value, consuming the atomic (no cost).
            pub fn into_inner(self) -> $value {
                self.0.into_inner()
            }
        };
    }

    macro_rules! integer_atomic {
        ($name:ident, $int:ty) => {
            /// A simulated atomic integer (see the module docs).
            #[derive(Default)]
            pub struct $name(std::sync::atomic::$name);

            impl $name {
                /// A new atomic holding `v`.
                pub const fn new(v: $int) -> Self {
                    Self(std::sync::atomic::$name::new(v))
                }

                basic_methods!($int);

                rmw_methods!($int;
                    /// Atomic swap.
                    swap,
                    /// Atomic add (wrapping).
                    fetch_add,
                    /// Atomic subtract (wrapping).
                    fetch_sub,
                    /// Atomic bitwise and.
                    fetch_and,
                    /// Atomic bitwise or.
                    fetch_or,
                    /// Atomic maximum.
                    fetch_max,
                    /// Atomic minimum.
                    fetch_min
                );
            }

            impl fmt::Debug for $name {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    fmt::Debug::fmt(&self.0, f)
                }
            }
        };
    }

    integer_atomic!(AtomicU32, u32);
    integer_atomic!(AtomicU64, u64);
    integer_atomic!(AtomicUsize, usize);
    integer_atomic!(AtomicIsize, isize);

    impl AtomicU32 {
        /// The word itself, for the simulated futex.
        pub(crate) fn word(&self) -> &std::sync::atomic::AtomicU32 {
            &self.0
        }
    }

    /// A simulated atomic flag (see the module docs).
    #[derive(Default)]
    pub struct AtomicBool(std::sync::atomic::AtomicBool);

    impl AtomicBool {
        /// A new flag holding `v`.
        pub const fn new(v: bool) -> Self {
            Self(std::sync::atomic::AtomicBool::new(v))
        }

        basic_methods!(bool);

        rmw_methods!(bool;
            /// Atomic swap.
            swap,
            /// Atomic and.
            fetch_and,
            /// Atomic or.
            fetch_or
        );
    }

    impl fmt::Debug for AtomicBool {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.0, f)
        }
    }

    /// A simulated atomic pointer (see the module docs).
    pub struct AtomicPtr<T>(std::sync::atomic::AtomicPtr<T>);

    impl<T> AtomicPtr<T> {
        /// A new atomic holding `p`.
        pub const fn new(p: *mut T) -> Self {
            Self(std::sync::atomic::AtomicPtr::new(p))
        }

        basic_methods!(*mut T);

        rmw_methods!(*mut T;
            /// Atomic swap.
            swap
        );
    }

    impl<T> Default for AtomicPtr<T> {
        fn default() -> Self {
            Self::new(std::ptr::null_mut())
        }
    }

    impl<T> fmt::Debug for AtomicPtr<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            fmt::Debug::fmt(&self.0, f)
        }
    }
}

/// Futex compare-and-sleep on a simulated 32-bit atomic: kernel wait queues of the executor, in
/// virtual time (see [`crate::exec`] for why no wake-up is lost).
pub mod futex {
    use std::time::Duration;

    use super::atomic::AtomicU32;
    use crate::exec;

    /// Block while `*word == expected`, until a `wake`, or `timeout` of virtual time.
    pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
        exec::futex_wait(word.word(), expected, u32::MAX, timeout);
    }

    /// Block while `*word == expected` until a wake that names one of `bits`.
    pub fn wait_bitset(word: &AtomicU32, expected: u32, bits: u32) {
        debug_assert!(bits != 0, "a futex bitset must not be empty");
        exec::futex_wait(word.word(), expected, bits, None);
    }

    /// Wake up to `count` threads blocked on `word`.
    pub fn wake(word: &AtomicU32, count: u32) {
        exec::futex_wake(word.word(), count, u32::MAX);
    }

    /// Wake up to `count` threads blocked on `word` whose bits meet `bits`; returns how many.
    pub fn wake_bitset(word: &AtomicU32, count: u32, bits: u32) -> usize {
        exec::futex_wake(word.word(), count, bits)
    }
}

/// The spin-wait hint: one `PAUSE` of virtual time.
pub mod hint {
    use crate::exec::{self, Op};

    /// One spin-wait hint.
    pub fn spin_loop() {
        if exec::in_simulation() {
            exec::op(Op::SpinLoop);
        } else {
            std::hint::spin_loop();
        }
    }
}

/// `sched_yield` and `nanosleep` in virtual time.
pub mod thread {
    use std::time::Duration;

    /// Go behind the other runnable threads of this CPU.
    pub fn yield_now() {
        crate::exec::yield_now();
    }

    /// Sleep `d` of virtual time.
    pub fn sleep(d: Duration) {
        crate::exec::sleep(d);
    }
}

pub use self::lock::{Condvar, Mutex, MutexGuard, WaitTimeoutResult};
pub use std::thread_local;

/// Park nodes (the monitor's) are never recycled across threads: each simulation starts afresh.
pub const RECYCLE_PARK_NODES: bool = false;

/// A mutex and a condition variable built on the simulated futex, with `std`'s signatures.
mod lock {
    use std::cell::UnsafeCell;
    use std::fmt;
    use std::ops::{Deref, DerefMut};
    use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
    use std::sync::LockResult;
    use std::time::Duration;

    use super::atomic::AtomicU32;
    use super::futex;
    use crate::exec::{self, Op};

    const UNLOCKED: u32 = 0;
    const LOCKED: u32 = 1;
    /// Locked, and someone may sleep on the word.
    const CONTENDED: u32 = 2;

    /// A futex mutex (Drepper's "Futexes are tricky", mutex 2): uncontended, a lock costs
    /// [`lock_uncontended`](crate::exec::Costs::lock_uncontended) and an unlock one
    /// read-modify-write; contended, waiters sleep on the simulated futex.
    #[derive(Default)]
    pub struct Mutex<T: ?Sized> {
        state: AtomicU32,
        data: UnsafeCell<T>,
    }

    // SAFETY: the data is only reached through a guard, and guards exclude each other through
    // `state` exactly as `std::sync::Mutex` does.
    unsafe impl<T: ?Sized + Send> Send for Mutex<T> {}
    // SAFETY: as above.
    unsafe impl<T: ?Sized + Send> Sync for Mutex<T> {}

    impl<T> Mutex<T> {
        /// A new unlocked mutex.
        pub const fn new(data: T) -> Self {
            Self {
                state: AtomicU32::new(UNLOCKED),
                data: UnsafeCell::new(data),
            }
        }

        /// The data, consuming the mutex (never poisoned).
        pub fn into_inner(self) -> LockResult<T> {
            Ok(self.data.into_inner())
        }
    }

    impl<T: ?Sized> Mutex<T> {
        /// Take the lock, sleeping while another thread holds it. Never poisoned.
        pub fn lock(&self) -> LockResult<MutexGuard<'_, T>> {
            let fast = self
                .state
                .word()
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed);
            exec::op(Op::Lock);
            if fast.is_err() {
                while self.state.swap(CONTENDED, Acquire) != UNLOCKED {
                    futex::wait(&self.state, CONTENDED, None);
                }
            }
            Ok(MutexGuard { mutex: self })
        }

        /// Take the lock if it is free.
        pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
            self.state
                .compare_exchange(UNLOCKED, LOCKED, Acquire, Relaxed)
                .ok()
                .map(|_| MutexGuard { mutex: self })
        }

        /// The data, through exclusive access (never poisoned).
        pub fn get_mut(&mut self) -> LockResult<&mut T> {
            Ok(self.data.get_mut())
        }
    }

    impl<T: ?Sized + fmt::Debug> fmt::Debug for Mutex<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("Mutex").finish_non_exhaustive()
        }
    }

    /// Holds a [`Mutex`] until dropped.
    pub struct MutexGuard<'a, T: ?Sized> {
        mutex: &'a Mutex<T>,
    }

    impl<T: ?Sized> Deref for MutexGuard<'_, T> {
        type Target = T;
        fn deref(&self) -> &T {
            // SAFETY: the guard holds the lock, so no other reference to the data exists.
            unsafe { &*self.mutex.data.get() }
        }
    }

    impl<T: ?Sized> DerefMut for MutexGuard<'_, T> {
        fn deref_mut(&mut self) -> &mut T {
            // SAFETY: the guard holds the lock exclusively.
            unsafe { &mut *self.mutex.data.get() }
        }
    }

    impl<T: ?Sized> Drop for MutexGuard<'_, T> {
        fn drop(&mut self) {
            if self.mutex.state.swap(UNLOCKED, Release) == CONTENDED {
                futex::wake(&self.mutex.state, 1);
            }
        }
    }

    /// Whether a [`Condvar::wait_timeout`] ended by its timeout.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct WaitTimeoutResult(bool);

    impl WaitTimeoutResult {
        /// Whether the wait timed out.
        pub fn timed_out(&self) -> bool {
            self.0
        }
    }

    /// A condition variable on a futex sequence word: a waiter reads the word while holding
    /// the mutex and sleeps only if no notify changed it since, so none is lost.
    #[derive(Debug, Default)]
    pub struct Condvar {
        seq: AtomicU32,
    }

    impl Condvar {
        /// A new condition variable.
        pub const fn new() -> Self {
            Self {
                seq: AtomicU32::new(0),
            }
        }

        /// Release the lock, sleep until notified (or spuriously), take the lock again.
        pub fn wait<'a, T: ?Sized>(
            &self,
            guard: MutexGuard<'a, T>,
        ) -> LockResult<MutexGuard<'a, T>> {
            Ok(self.wait_inner(guard, None).0)
        }

        /// [`wait`](Self::wait) for at most `timeout` of virtual time.
        pub fn wait_timeout<'a, T: ?Sized>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Duration,
        ) -> LockResult<(MutexGuard<'a, T>, WaitTimeoutResult)> {
            let (guard, woken) = self.wait_inner(guard, Some(timeout));
            Ok((guard, WaitTimeoutResult(!woken)))
        }

        fn wait_inner<'a, T: ?Sized>(
            &self,
            guard: MutexGuard<'a, T>,
            timeout: Option<Duration>,
        ) -> (MutexGuard<'a, T>, bool) {
            let seen = self.seq.load(Relaxed);
            let mutex = guard.mutex;
            drop(guard);
            let woken = exec::futex_wait(self.seq.word(), seen, u32::MAX, timeout);
            let guard = match mutex.lock() {
                Ok(guard) => guard,
                Err(poisoned) => poisoned.into_inner(),
            };
            (guard, woken || self.seq.load(Relaxed) != seen)
        }

        /// Wake one waiter.
        pub fn notify_one(&self) {
            self.seq.fetch_add(1, Relaxed);
            futex::wake(&self.seq, 1);
        }

        /// Wake every waiter.
        pub fn notify_all(&self) {
            self.seq.fetch_add(1, Relaxed);
            futex::wake(&self.seq, u32::MAX);
        }
    }
}
