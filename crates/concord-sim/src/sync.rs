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
//!
//! Beyond what `concord-loom` needs, the parallel room's engine and worker pool take from here
//! the clock ([`time`]: the CPU's virtual clock), the work-stealing deques ([`deque`]: charged
//! as a `crossbeam_deque` operation's atomics), thread creation ([`thread::Builder`]: a new
//! simulated thread, [`crate::exec::spawn`]), the CPU a thread runs on ([`cpu`]: the simulated
//! one) and a thread's resource usage ([`usage`]: its virtual CPU time).

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

    integer_atomic!(AtomicI32, i32);
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

    /// `pauses` spin-wait hints back to back: they touch no memory, so they are charged in
    /// stretches up to the next event that could take the CPU away ([`exec::spin`]) rather than
    /// as one scheduling point each.
    pub fn spin_loops(pauses: u32) {
        if exec::in_simulation() {
            exec::spin(u64::from(pauses));
        } else {
            for _ in 0..pauses {
                std::hint::spin_loop();
            }
        }
    }
}

/// `sched_yield` and `nanosleep` in virtual time, simulated threads with `std::thread`'s
/// `Builder` and `JoinHandle` signatures, and the thread id.
pub mod thread {
    use std::io;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use crate::exec::{self, ThreadId, ThreadSpec};

    /// Go behind the other runnable threads of this CPU.
    pub fn yield_now() {
        crate::exec::yield_now();
    }

    /// Sleep `d` of virtual time.
    pub fn sleep(d: Duration) {
        crate::exec::sleep(d);
    }

    /// The calling simulated thread's id (its [`ThreadId`]) as the kernel's `gettid` would
    /// give it; 0 outside a simulation.
    pub fn current_tid() -> i32 {
        exec::current_thread().map_or(0, |t| i32::try_from(t).unwrap_or(i32::MAX))
    }

    /// Starts a simulated thread inside the running simulation ([`exec::spawn`]).
    #[derive(Debug, Default)]
    pub struct Builder {
        name: Option<String>,
        spec: ThreadSpec,
    }

    impl Builder {
        /// A thread under the default [`ThreadSpec`] (SCHED_OTHER, any CPU).
        pub fn new() -> Builder {
            Builder::default()
        }

        /// Name it (the name of its [`crate::exec::ThreadReport`]).
        pub fn name(mut self, name: String) -> Builder {
            self.name = Some(name);
            self
        }

        /// Schedule it as `spec` says (the simulator's own addition: policy, affinity, start CPU).
        pub fn spec(mut self, spec: ThreadSpec) -> Builder {
            self.spec = spec;
            self
        }

        /// Start it running `f`. Fails outside a simulation, or when the placement refuses the
        /// spec.
        pub fn spawn<F, T>(self, f: F) -> io::Result<JoinHandle<T>>
        where
            F: FnOnce() -> T + Send + 'static,
            T: Send + 'static,
        {
            let finished = Arc::new(Finished {
                word: AtomicU32::new(0),
                value: Mutex::new(None),
            });
            let theirs = finished.clone();
            let name = self.name.unwrap_or_else(|| "unnamed".into());
            let thread = exec::spawn(name, self.spec, move || {
                let value = f();
                *theirs.value.lock().unwrap_or_else(|p| p.into_inner()) = Some(value);
                theirs.word.store(1, Ordering::SeqCst);
                exec::futex_wake(&theirs.word, u32::MAX, u32::MAX);
            })
            .map_err(io::Error::other)?;
            Ok(JoinHandle { thread, finished })
        }
    }

    /// A thread's result and whether it is there (a futex word: 1 once it is).
    struct Finished<T> {
        word: AtomicU32,
        value: Mutex<Option<T>>,
    }

    /// Waits for a simulated thread to finish.
    pub struct JoinHandle<T> {
        thread: ThreadId,
        finished: Arc<Finished<T>>,
    }

    impl<T> JoinHandle<T> {
        /// The simulated thread's id.
        pub fn thread_id(&self) -> ThreadId {
            self.thread
        }

        /// Block (in virtual time) until the thread has finished; its result. A panicking
        /// simulated thread ends the whole simulation, so this returns `Err` only when the run
        /// is over before the thread finished (a background thread's pool dropped while it
        /// unwinds at the end of the run).
        pub fn join(self) -> std::thread::Result<T> {
            while self.finished.word.load(Ordering::SeqCst) == 0 {
                if exec::run_is_over() {
                    return Err(Box::new("the simulation ended before the thread finished"));
                }
                exec::futex_wait(&self.finished.word, 0, u32::MAX, None);
            }
            let value = self
                .finished
                .value
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            Ok(value.expect("a finished thread left its result"))
        }
    }
}

/// The virtual clock, with `std::time::Instant`'s signatures: the calling thread's CPU clock
/// ([`crate::exec::now`]). Reading it charges nothing. Outside a simulation it stands at 0.
pub mod time {
    use std::ops::{Add, AddAssign, Sub};
    use std::time::Duration;

    use crate::exec::{self, Ns};

    /// A point in virtual time.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
    pub struct Instant(Ns);

    impl Instant {
        /// Now, on the calling simulated thread's CPU.
        pub fn now() -> Instant {
            Instant(exec::now().unwrap_or(0))
        }

        /// Virtual time since `self` (zero if `self` is later).
        pub fn elapsed(&self) -> Duration {
            Instant::now().duration_since(*self)
        }

        /// Virtual time from `earlier` to `self` (zero if `earlier` is later).
        pub fn duration_since(&self, earlier: Instant) -> Duration {
            Duration::from_nanos(self.0.saturating_sub(earlier.0))
        }

        /// `self + d`, or `None` past the end of virtual time.
        pub fn checked_add(&self, d: Duration) -> Option<Instant> {
            let d = Ns::try_from(d.as_nanos()).ok()?;
            self.0.checked_add(d).map(Instant)
        }

        /// The virtual time in ns since the simulation started.
        pub fn as_nanos(&self) -> Ns {
            self.0
        }
    }

    impl Add<Duration> for Instant {
        type Output = Instant;
        fn add(self, d: Duration) -> Instant {
            self.checked_add(d)
                .expect("overflow when adding a duration to an instant")
        }
    }

    impl AddAssign<Duration> for Instant {
        fn add_assign(&mut self, d: Duration) {
            *self = *self + d;
        }
    }

    impl Sub<Instant> for Instant {
        type Output = Duration;
        fn sub(self, earlier: Instant) -> Duration {
            self.duration_since(earlier)
        }
    }
}

/// Work-stealing deques with `crossbeam_deque`'s signatures, racing as `crossbeam_deque`'s do.
/// Each operation charges the atomics a `crossbeam_deque` operation performs (loads, stores,
/// the `SeqCst` fence of an owner's pop and of a thief's epoch pin as a read-modify-write, the
/// CAS of a steal or of taking the last item), in the scheduling points where another thread
/// can come in between:
///
/// * a steal that finds an item is two: (1) load front, pin, load back; (2) the CAS on front.
///   If another thread took the front item in between (another thief's steal, or the owner's
///   pop of the last item), the CAS fails and the steal returns
///   [`Steal::Retry`](self::deque::Steal::Retry), charged as that failed CAS;
/// * an owner's LIFO pop of the last item is two as well: (1) load back and front, store back
///   one lower, fence, load front; (2) the CAS on front. A thief that read the old back before
///   (1) and does its CAS before (2) takes the item, and the owner's pop returns `None`; a
///   thief starting after (1) finds the deque empty;
/// * everything else (a push, a pop of an item that is not the last, a FIFO pop, a steal or a
///   look that finds the deque empty) is one.
///
/// The indices are `crossbeam_deque`'s: `front` counts the items ever taken at the front (a
/// thief's CAS, the owner's last-item CAS), `back` the owner's end; a thief's step (1) reads
/// `front` and step (2) succeeds only if it is unchanged, so an item is taken by exactly one
/// thread. An [`Injector`](self::deque::Injector)'s steal races other steals the same way
/// (crossbeam's CAS on its head). The items live in a `std` mutex: only one simulated thread
/// runs at a time, so that lock is never contended and is not part of the model.
pub mod deque {
    use std::collections::VecDeque;
    use std::fmt;
    use std::sync::{Arc, Mutex, MutexGuard};

    use crate::exec::{self, Op};

    /// What `crossbeam_deque`'s owner push costs: load back and front, store back.
    const PUSH: &[Op] = &[Op::Load, Op::Load, Op::Store];
    /// An owner's pop or a `len` finding its answer: load back and front.
    const LOOK: &[Op] = &[Op::Load, Op::Load];
    /// An owner's pop of an item that is not the last: looks, store back, `SeqCst` fence, load
    /// front again.
    const POP: &[Op] = &[Op::Load, Op::Load, Op::Store, Op::Rmw, Op::Load];
    /// ... of the last item (LIFO), its first scheduling point: as [`POP`], before the CAS.
    const POP_LAST: &[Op] = POP;
    /// ... of the last item by a FIFO owner: also the CAS on front, in one scheduling point.
    const POP_LAST_FIFO: &[Op] = &[Op::Load, Op::Load, Op::Store, Op::Rmw, Op::Load, Op::Cas];
    /// A steal's first scheduling point, and all of a steal that finds nothing: load front,
    /// pin (a `SeqCst` fence), load back.
    const STEAL_LOOK: &[Op] = &[Op::Load, Op::Rmw, Op::Load];
    /// The CAS on front that takes the item (a steal's second scheduling point; the owner's
    /// pop of the last item's), charged whether it succeeds or fails.
    const TAKE: &[Op] = &[Op::Cas];
    /// An injector push: load tail, CAS tail, mark the slot written.
    const INJECT: &[Op] = &[Op::Load, Op::Cas, Op::Rmw];

    /// The state of a deque or injector, as `crossbeam_deque`'s indices.
    struct Slots<T> {
        /// Index of the oldest item; counts up with every item taken at the front.
        front: u64,
        /// One past the newest item, as thieves see it: one lower than `front + items.len()`
        /// while the owner is between the two steps of its pop of the last item.
        back: u64,
        /// The items at indices `front..front + items.len()`.
        items: VecDeque<T>,
    }

    impl<T> Slots<T> {
        /// Items as a thief or `len` sees them: `back - front`, 0 if negative.
        fn visible(&self) -> usize {
            self.back.saturating_sub(self.front) as usize
        }

        /// Take the front item if `front` is still `seen` (the CAS on front).
        fn take_front_if(&mut self, seen: u64) -> Option<T> {
            if self.front != seen {
                return None;
            }
            let item = self
                .items
                .pop_front()
                .expect("an item at an unchanged front");
            self.front += 1;
            Some(item)
        }
    }

    /// The items of a deque or injector, and what thieves and lookers do to them.
    struct Queue<T>(Mutex<Slots<T>>);

    impl<T> Default for Queue<T> {
        fn default() -> Self {
            Queue(Mutex::new(Slots {
                front: 0,
                back: 0,
                items: VecDeque::new(),
            }))
        }
    }

    impl<T> Queue<T> {
        fn slots(&self) -> MutexGuard<'_, Slots<T>> {
            self.0.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// A thief's steal of the oldest item, in two scheduling points when it finds one
        /// (module docs).
        fn steal(&self) -> Steal<T> {
            let seen = {
                let slots = self.slots();
                (slots.visible() > 0).then_some(slots.front)
            };
            exec::ops(STEAL_LOOK);
            let Some(seen) = seen else {
                return Steal::Empty;
            };
            let item = self.slots().take_front_if(seen);
            exec::ops(TAKE);
            item.map_or(Steal::Retry, Steal::Success)
        }

        /// Push at the back, charged as `cost`.
        fn push(&self, item: T, cost: &[Op]) {
            {
                let mut slots = self.slots();
                slots.items.push_back(item);
                slots.back += 1;
            }
            exec::ops(cost);
        }

        /// Items queued, charged as reading both ends.
        fn len(&self) -> usize {
            let len = self.slots().visible();
            exec::ops(LOOK);
            len
        }
    }

    /// The outcome of a steal.
    #[must_use]
    #[derive(PartialEq, Eq, Clone, Copy)]
    pub enum Steal<T> {
        /// The queue was empty.
        Empty,
        /// An item was stolen.
        Success(T),
        /// Lost a race to another thread taking the same item; try again.
        Retry,
    }

    impl<T> Steal<T> {
        /// Whether the queue was empty.
        pub fn is_empty(&self) -> bool {
            matches!(self, Steal::Empty)
        }

        /// Whether an item was stolen.
        pub fn is_success(&self) -> bool {
            matches!(self, Steal::Success(_))
        }

        /// Whether to retry.
        pub fn is_retry(&self) -> bool {
            matches!(self, Steal::Retry)
        }

        /// The stolen item, if any.
        pub fn success(self) -> Option<T> {
            match self {
                Steal::Success(item) => Some(item),
                _ => None,
            }
        }
    }

    impl<T> fmt::Debug for Steal<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(match self {
                Steal::Empty => "Empty",
                Steal::Success(_) => "Success(..)",
                Steal::Retry => "Retry",
            })
        }
    }

    /// The owner's end of a deque.
    pub struct Worker<T> {
        queue: Arc<Queue<T>>,
        lifo: bool,
    }

    impl<T> Worker<T> {
        /// A deque whose owner pops the item it pushed last.
        pub fn new_lifo() -> Worker<T> {
            Worker {
                queue: Arc::default(),
                lifo: true,
            }
        }

        /// A deque whose owner pops the item it pushed first.
        pub fn new_fifo() -> Worker<T> {
            Worker {
                queue: Arc::default(),
                lifo: false,
            }
        }

        /// A thieves' handle to this deque.
        pub fn stealer(&self) -> Stealer<T> {
            Stealer {
                queue: self.queue.clone(),
            }
        }

        /// Push an item.
        pub fn push(&self, item: T) {
            self.queue.push(item, PUSH);
        }

        /// Pop an item (the newest for LIFO, the oldest for FIFO). A LIFO pop of the last item
        /// races thieves in two scheduling points and returns `None` if one took it (module
        /// docs).
        pub fn pop(&self) -> Option<T> {
            let (item, cost, last) = {
                let mut slots = self.queue.slots();
                let visible = slots.visible();
                if visible == 0 {
                    (None, LOOK, None)
                } else if !self.lifo {
                    // `fetch_add` on front: a thief's pending CAS then fails.
                    let cost = if visible == 1 { POP_LAST_FIFO } else { POP };
                    let front = slots.front;
                    (slots.take_front_if(front), cost, None)
                } else if visible > 1 {
                    slots.back -= 1;
                    (slots.items.pop_back(), POP, None)
                } else {
                    // The last item: back one lower (thieves from now on find the deque empty),
                    // then the CAS on front against the thieves that read the old back.
                    slots.back -= 1;
                    (None, POP_LAST, Some(slots.front))
                }
            };
            exec::ops(cost);
            let Some(seen) = last else {
                return item;
            };
            let item = {
                let mut slots = self.queue.slots();
                let item = slots.take_front_if(seen);
                // Restore back: the deque is empty whoever took the item.
                slots.back += 1;
                item
            };
            exec::ops(TAKE);
            item
        }

        /// Items queued.
        pub fn len(&self) -> usize {
            self.queue.len()
        }

        /// Whether no item is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    /// A thief's handle to a deque: takes the oldest item.
    pub struct Stealer<T> {
        queue: Arc<Queue<T>>,
    }

    impl<T> Clone for Stealer<T> {
        fn clone(&self) -> Self {
            Stealer {
                queue: self.queue.clone(),
            }
        }
    }

    impl<T> Stealer<T> {
        /// Steal the oldest item.
        pub fn steal(&self) -> Steal<T> {
            self.queue.steal()
        }

        /// Items queued.
        pub fn len(&self) -> usize {
            self.queue.len()
        }

        /// Whether no item is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    /// A FIFO queue any thread may push to and steal from.
    pub struct Injector<T> {
        queue: Queue<T>,
    }

    impl<T> Default for Injector<T> {
        fn default() -> Self {
            Injector {
                queue: Queue::default(),
            }
        }
    }

    impl<T> Injector<T> {
        /// An empty queue.
        pub fn new() -> Injector<T> {
            Injector::default()
        }

        /// Push an item.
        pub fn push(&self, item: T) {
            self.queue.push(item, INJECT);
        }

        /// Take the oldest item.
        pub fn steal(&self) -> Steal<T> {
            self.queue.steal()
        }

        /// Items queued.
        pub fn len(&self) -> usize {
            self.queue.len()
        }

        /// Whether no item is queued.
        pub fn is_empty(&self) -> bool {
            self.len() == 0
        }
    }

    impl<T> fmt::Debug for Worker<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Worker { .. }")
        }
    }

    impl<T> fmt::Debug for Stealer<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Stealer { .. }")
        }
    }

    impl<T> fmt::Debug for Injector<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.pad("Injector { .. }")
        }
    }
}

/// The simulated CPU a thread runs on, and how many it may use.
pub mod cpu {
    use crate::exec;

    /// The simulated CPU the calling thread runs on (`None` outside a simulation).
    pub fn current_cpu() -> Option<u32> {
        exec::current_cpu().and_then(|c| u32::try_from(c).ok())
    }

    /// The simulated machine's CPU count (the calling thread's affinity mask is not consulted);
    /// 1 outside a simulation.
    pub fn usable_cpu_count() -> usize {
        exec::cpu_count().unwrap_or(1)
    }
}

/// A simulated thread's resource usage, as `concord`'s own type: its virtual CPU time (as user
/// time and as `cpu_ns`), its blocks as voluntary and its preemptions as involuntary context
/// switches; no system time and no page faults are modelled (zeros).
pub mod usage {
    pub use concord::os::rusage::ThreadUsage;

    /// The calling simulated thread's usage so far (all zero outside a simulation).
    pub fn current_thread() -> ThreadUsage {
        crate::exec::thread_usage().map_or_else(ThreadUsage::default, |u| ThreadUsage {
            user_ns: u.run_ns,
            cpu_ns: u.run_ns,
            voluntary_switches: u.blocks,
            involuntary_switches: u.preemptions,
            ..ThreadUsage::default()
        })
    }
}

pub use self::lock::{Condvar, Mutex, MutexGuard, WaitTimeoutResult};
pub use std::thread_local;

/// Park nodes (the monitor's) are never recycled across threads: each simulation starts afresh.
pub const RECYCLE_PARK_NODES: bool = false;

/// A simulated GC worker that panics ends the simulation with its message rather than the
/// process.
pub const ABORT_ON_WORKER_PANIC: bool = false;

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
