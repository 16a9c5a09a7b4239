//! A HotSpot-style native monitor: the unfair lock and condition queue behind the `vanilla`
//! preset's GC task manager (000 §2.2, §2.4, Fig. 2 and Fig. 5), following OpenJDK 8's
//! `Monitor` (`mutex.cpp`: `ILock`, `IUnlock`, `IWait`, `notify`).
//!
//! This is the mechanism the vanilla preset studies, so it is built here from atomics and futexes
//! rather than borrowed from `std` or `parking_lot`:
//!
//! * **Lock word.** One word holds the lock bit and the head of `cxq`, the LIFO stack of recently
//!   arrived contenders. [`Monitor::lock`] first tries to CAS the lock bit on, probing up to
//!   `NativeMonitorSpinLimit` (20) times with a growing delay (`TrySpin`); a thread that still
//!   fails pushes its park node onto `cxq` and sleeps.
//! * **Succession.** The releasing owner clears the lock bit first. If an heir (`OnDeck`) exists
//!   it is woken again; otherwise, if threads are queued, the releaser takes the inner lock
//!   (`OnDeck` = busy), makes the head of `EntryList` the single `OnDeck` heir — refilling
//!   `EntryList` from `cxq` when it is empty, *without reordering*, so the most recent arrival
//!   comes first — and wakes it, unless the lock has been taken again meanwhile: then the new
//!   owner's release wakes the heir (HotSpot 8's deferred unpark).
//! * **Competitive hand-off.** The heir is not given the lock: it must win the CAS like anyone
//!   else. If the old owner barges back through the fast path, or a newcomer wins, the heir stays
//!   `OnDeck` and sleeps until the next release wakes it again (a futile wake-up). Only `OnDeck`
//!   ever competes from the queues; `cxq` and `EntryList` threads are asleep. [`MonitorStats`]
//!   counts acquisitions, contended acquisitions, barges, heir wake-ups and futile wake-ups.
//! * **WaitSet.** [`MonitorGuard::wait`] pushes the caller onto the WaitSet (LIFO) and releases
//!   the lock; [`MonitorGuard::notify_one`] moves the head of the WaitSet onto `cxq` *without*
//!   waking it, and [`MonitorGuard::notify_all`] does that until the WaitSet is empty, so the
//!   waiters come back one at a time as heirs, the earliest waiter first; at the start of a GC
//!   this leaves only owner and heir competing for the lock (000 §3.2).
//!
//! Why no wake-up is lost:
//! * A contender can only push itself onto `cxq` with a CAS that expects the lock bit set in the
//!   same word. Either the push lands before the owner's release (an atomic read-modify-write of
//!   that word, which therefore sees the push) or the CAS fails and the contender retries, now
//!   finding the lock free.
//! * After its release an owner either re-wakes the existing heir, or takes the inner lock and
//!   wakes a new heir, or leaves progress to someone who must provide it: a thread that owns the
//!   lock again (it runs this same release later, and finds the heir then) or the thread holding
//!   the inner lock, which re-reads `cxq` after dropping that lock and retries.
//! * A releaser that makes a thread heir and then sees the lock taken does not wake it: the
//!   heir was published before that look (sequentially consistent), so the owner it saw releases
//!   later and its release finds the heir and wakes it.
//! * The heir retries the CAS after every wake-up and every release wakes the current heir, so an
//!   heir that loses a race is woken by the next release. All these steps use sequentially
//!   consistent atomics, so "release, then look for an heir" cannot pass "become heir, then
//!   find the lock taken".
//! * Park events keep a permit: an unpark that arrives before the park is remembered. Notify
//!   and the removal of a timed-out waiter are serialised by a tiny spin lock around the WaitSet,
//!   so a waiter is always in exactly one place (WaitSet, or `cxq`/`EntryList`/`OnDeck`).
//!
//! Every atomic, futex, yield and thread-local comes from `crate::sync`, so `concord-loom`
//! model-checks this very file (mutual exclusion, no lost wake-up, the succession re-check).
//!
//! The monitor is not reentrant, has no poisoning, and a guard must be dropped by the thread that
//! took it (guards are `!Send`).

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

use crate::sync::atomic::Ordering::{self, Relaxed, SeqCst};
use crate::sync::atomic::{AtomicBool, AtomicIsize, AtomicU32, AtomicU64, AtomicUsize};
use crate::sync::time::Instant;
use crate::sync::{futex, hint, thread, RECYCLE_PARK_NODES};

/// Lock bit of the lock word; the remaining bits are the address of the `cxq` head node.
const LOCKED: usize = 1;
/// Value of the `OnDeck` word while a releasing thread is choosing the heir (inner lock held).
const INNER: usize = 1;
/// Lock probes before a contender queues itself (HotSpot's `NativeMonitorSpinLimit`).
pub const SPIN_LIMIT: u32 = 20;

// ------------------------------------------------------------------------------------------------
// Park nodes
// ------------------------------------------------------------------------------------------------

/// A thread's park event and list link. One per thread, immortal, recycled through a pool when
/// the thread exits: a releasing thread may still hold a stale address of a node whose thread
/// has moved on, and waking such a node must stay harmless (HotSpot's `ParkEvent` does the same).
#[repr(align(64))]
struct ParkNode {
    /// Park permit: `EMPTY`, `NOTIFIED` or `PARKED` (the owner sleeps on the futex).
    state: AtomicU32,
    /// Next node in whichever of `cxq`, `EntryList` or the WaitSet holds this node.
    next: AtomicUsize,
    /// Set (under the WaitSet lock) once `notify` has moved this node from the WaitSet to `cxq`.
    notified: AtomicBool,
}

const EMPTY: u32 = 0;
const NOTIFIED: u32 = 1;
const PARKED: u32 = u32::MAX;

impl ParkNode {
    fn new() -> Self {
        Self {
            state: AtomicU32::new(EMPTY),
            next: AtomicUsize::new(0),
            notified: AtomicBool::new(false),
        }
    }

    fn addr(&'static self) -> usize {
        self as *const ParkNode as usize
    }

    /// Drop a stale permit. Only the owning thread calls this, before publishing the node where
    /// anyone could unpark it, so no meaningful permit can be erased.
    fn reset(&self) {
        // SeqCst: ordered before the SeqCst CAS that publishes the node on `cxq`/the WaitSet
        // (HotSpot's `reset(); fence()`).
        self.state.store(EMPTY, SeqCst);
    }

    /// Sleep until unparked or `timeout` passes; may also return spuriously. Returns true if an
    /// unpark's permit was consumed (a real wake-up, as opposed to a timeout or spurious return).
    fn park(&self, timeout: Option<Duration>) -> bool {
        // NOTIFIED -> EMPTY consumes the permit; EMPTY -> PARKED announces the sleep.
        // SeqCst (here and below): pairs with the swap in `unpark`; the permit protocol is a
        // Dekker handshake on one word with the list operations around it.
        if self.state.fetch_sub(1, SeqCst) == NOTIFIED {
            return true;
        }
        futex::wait(&self.state, PARKED, timeout);
        // Consume a permit if one arrived, otherwise (timeout, spurious) go back to EMPTY.
        self.state.swap(EMPTY, SeqCst) == NOTIFIED
    }

    /// Give the node a permit and wake its thread if it sleeps.
    fn unpark(&self) {
        // SeqCst: pairs with `park`'s fetch_sub and swap.
        if self.state.swap(NOTIFIED, SeqCst) == PARKED {
            futex::wake(&self.state, 1);
        }
    }
}

/// The node at `addr`.
///
/// # Safety
///
/// `addr` must be the address of a [`ParkNode`] obtained from [`ParkNode::addr`]. Every node is
/// created by `Box::leak` in [`NodeLease::take`] and never freed, so it stays valid forever.
unsafe fn node_at(addr: usize) -> &'static ParkNode {
    debug_assert!(addr != 0 && addr & (std::mem::align_of::<ParkNode>() - 1) == 0);
    // SAFETY: the caller passes the address of a leaked, never-freed `ParkNode`; nodes are only
    // accessed through shared references and atomics.
    unsafe { &*(addr as *const ParkNode) }
}

/// A tiny test-and-test-and-set lock for the WaitSet: held for a few list operations, never
/// while blocking (HotSpot's `_WaitLock`).
struct SpinLock {
    held: AtomicBool,
}

struct SpinGuard<'a>(&'a SpinLock);

impl SpinLock {
    fn new() -> Self {
        Self {
            held: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> SpinGuard<'_> {
        let mut spins = 0u32;
        loop {
            // Acquire pairs with the Release in `SpinGuard::drop`: the list is as the last
            // holder left it.
            if !self.held.load(Relaxed)
                && self
                    .held
                    .compare_exchange_weak(false, true, Ordering::Acquire, Relaxed)
                    .is_ok()
            {
                return SpinGuard(self);
            }
            if spins < 64 {
                spins += 1;
                hint::spin_loop();
            } else {
                // The holder may have been preempted: let it run.
                thread::yield_now();
            }
        }
    }
}

impl Drop for SpinGuard<'_> {
    fn drop(&mut self) {
        // Release pairs with the Acquire in `SpinLock::lock`.
        self.0.held.store(false, Ordering::Release);
    }
}

/// Park nodes of exited threads, by address, for reuse. A plain `std` mutex: the pool is not part
/// of the protocol, and under loom nothing is recycled (nothing may outlive a model execution).
static NODE_POOL: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// Exclusive use of one park node; returns it to the pool on drop.
struct NodeLease(&'static ParkNode);

impl NodeLease {
    fn take() -> Self {
        if RECYCLE_PARK_NODES {
            let recycled = NODE_POOL.lock().unwrap_or_else(|p| p.into_inner()).pop();
            if let Some(addr) = recycled {
                // SAFETY: only addresses of leaked nodes are ever stored in the pool.
                return NodeLease(unsafe { node_at(addr) });
            }
        }
        NodeLease(Box::leak(Box::new(ParkNode::new())))
    }
}

impl Drop for NodeLease {
    fn drop(&mut self) {
        if RECYCLE_PARK_NODES {
            let mut pool = NODE_POOL.lock().unwrap_or_else(|p| p.into_inner());
            pool.push(self.0.addr());
        }
    }
}

crate::sync::thread_local! {
    static NODE: NodeLease = NodeLease::take();
}

/// Run `f` with the calling thread's park node (a pooled one if thread-local storage is already
/// torn down, e.g. when a monitor is used from another thread-local destructor).
fn with_node<R>(f: impl FnOnce(&'static ParkNode) -> R) -> R {
    match NODE.try_with(|lease| lease.0) {
        Ok(node) => f(node),
        Err(_) => {
            let lease = NodeLease::take();
            f(lease.0)
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Statistics and inspection
// ------------------------------------------------------------------------------------------------

/// Counters of how a monitor's lock changed hands (relaxed, so approximate under contention).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MonitorStats {
    /// Times the lock was acquired, by any path.
    pub acquisitions: u64,
    /// Acquisitions that found the lock taken and went through the slow path: queued on `cxq`
    /// (or came back from the WaitSet) and won as the `OnDeck` heir, or won while queuing.
    pub contended: u64,
    /// Fast-path acquisitions made while an `OnDeck` heir or queued (`cxq`/`EntryList`) waiters
    /// existed: the unfairness of 000 §2.4.
    pub barges: u64,
    /// Wake-ups of an `OnDeck` heir by a releasing thread (first hand-off and every re-wake).
    pub heir_wakeups: u64,
    /// Times a woken thread found nothing to gain: an `OnDeck` heir that lost the lock to the
    /// old owner or a newcomer, or (counted by the monitor's user) a waiter woken with nothing
    /// to do.
    pub futile_wakeups: u64,
    /// Threads moved from the WaitSet to `cxq` by `notify_one`/`notify_all`.
    pub notified: u64,
    /// `wait_timeout` calls that timed out.
    pub timeouts: u64,
    /// Unparks that reached a thread sleeping in this monitor (spurious returns not counted).
    pub wakeups: u64,
}

impl MonitorStats {
    /// The counters gathered since `earlier` was taken.
    pub fn since(&self, earlier: &MonitorStats) -> MonitorStats {
        MonitorStats {
            acquisitions: self.acquisitions - earlier.acquisitions,
            contended: self.contended - earlier.contended,
            barges: self.barges - earlier.barges,
            heir_wakeups: self.heir_wakeups - earlier.heir_wakeups,
            futile_wakeups: self.futile_wakeups - earlier.futile_wakeups,
            notified: self.notified - earlier.notified,
            timeouts: self.timeouts - earlier.timeouts,
            wakeups: self.wakeups - earlier.wakeups,
        }
    }
}

/// A racy picture of a monitor's queues, for tests and diagnostics. Exact only when the
/// monitor is quiescent or the caller holds the lock and nobody is mid-release.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MonitorSnapshot {
    /// The lock bit is set.
    pub locked: bool,
    /// Threads on `cxq`.
    pub cxq: usize,
    /// Threads on `EntryList`.
    pub entry_list: usize,
    /// A thread is the `OnDeck` heir.
    pub on_deck: bool,
    /// Threads on the WaitSet.
    pub wait_set: usize,
}

impl MonitorSnapshot {
    /// Threads blocked acquiring the lock: `cxq` + `EntryList` + `OnDeck`.
    pub fn queued(&self) -> usize {
        self.cxq + self.entry_list + usize::from(self.on_deck)
    }
}

#[repr(align(64))]
struct Counters {
    fast: AtomicU64,
    contended: AtomicU64,
    barges: AtomicU64,
    heir_wakeups: AtomicU64,
    futile_wakeups: AtomicU64,
    notified: AtomicU64,
    timeouts: AtomicU64,
    wakeups: AtomicU64,
    // Queue lengths for inspection; signed because an update may trail the list change it
    // describes (a snapshot clamps at zero).
    cxq_len: AtomicIsize,
    entry_len: AtomicIsize,
    wait_len: AtomicIsize,
}

impl Counters {
    fn new() -> Self {
        Self {
            fast: AtomicU64::new(0),
            contended: AtomicU64::new(0),
            barges: AtomicU64::new(0),
            heir_wakeups: AtomicU64::new(0),
            futile_wakeups: AtomicU64::new(0),
            notified: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            cxq_len: AtomicIsize::new(0),
            entry_len: AtomicIsize::new(0),
            wait_len: AtomicIsize::new(0),
        }
    }
}

// Relaxed for every counter: statistics and inspection only; no decision reads them.
fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Relaxed);
}

fn len(counter: &AtomicIsize) -> usize {
    usize::try_from(counter.load(Relaxed)).unwrap_or(0)
}

// ------------------------------------------------------------------------------------------------
// The monitor
// ------------------------------------------------------------------------------------------------

/// A mutex plus condition queue in the style of HotSpot's native `Monitor`, protecting a `T`.
///
/// ```
/// use concord::parallel::monitor::Monitor;
/// let m = Monitor::new(Vec::new());
/// m.lock().push(1);
/// assert_eq!(m.lock().len(), 1);
/// ```
pub struct Monitor<T> {
    /// `LOCKED` bit | address of the `cxq` head (0 = empty).
    word: AtomicUsize,
    /// 0 = no heir, `INNER` = a releasing thread is choosing one, else the heir's node address.
    on_deck: AtomicUsize,
    /// Head of `EntryList`; only the holder of the inner lock (`on_deck == INNER`) changes it.
    entry_list: AtomicUsize,
    /// Protects the WaitSet and every node's `notified` flag.
    wait_lock: SpinLock,
    /// WaitSet, LIFO: the most recent waiter first (HotSpot pushes at the head).
    wait_head: AtomicUsize,
    /// Lock probes before queuing.
    spin_limit: u32,
    stats: Counters,
    data: UnsafeCell<T>,
}

// SAFETY: the monitor hands out access to `T` only to the thread holding the lock, like a mutex,
// so it can be shared and sent between threads whenever `T` can be sent.
unsafe impl<T: Send> Send for Monitor<T> {}
// SAFETY: as above: all other state is atomics, and `T` is reached only under the lock.
unsafe impl<T: Send> Sync for Monitor<T> {}

impl<T: Default> Default for Monitor<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for Monitor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Monitor")
            .field("state", &self.snapshot())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<T> Monitor<T> {
    /// An unlocked monitor protecting `data`.
    pub fn new(data: T) -> Self {
        Self::with_spin_limit(data, SPIN_LIMIT)
    }

    /// Like [`new`](Self::new), probing the lock at most `spin_limit` times before queuing
    /// (models and tests use small limits).
    pub fn with_spin_limit(data: T, spin_limit: u32) -> Self {
        Self {
            word: AtomicUsize::new(0),
            on_deck: AtomicUsize::new(0),
            entry_list: AtomicUsize::new(0),
            wait_lock: SpinLock::new(),
            wait_head: AtomicUsize::new(0),
            spin_limit,
            stats: Counters::new(),
            data: UnsafeCell::new(data),
        }
    }

    /// The protected value (no locking needed: `&mut self` proves nobody else uses it).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// Consume the monitor, returning the protected value.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }

    /// Acquire the lock: probe it a few times (`TrySpin`), otherwise queue on `cxq`, sleep
    /// until chosen as `OnDeck` heir and win the CAS. Not reentrant.
    pub fn lock(&self) -> MonitorGuard<'_, T> {
        if !self.try_spin(true) {
            with_node(|node| self.lock_contended(node));
        }
        self.guard()
    }

    /// Acquire the lock only if one CAS attempt succeeds right now.
    pub fn try_lock(&self) -> Option<MonitorGuard<'_, T>> {
        let old = self.try_acquire_word()?;
        self.note_fast(old);
        Some(self.guard())
    }

    /// Count a wake-up that found nothing to do, as seen by the monitor's user (a waiter that
    /// came back from the WaitSet to a condition that still does not hold).
    pub fn note_futile_wakeup(&self) {
        bump(&self.stats.futile_wakeups);
    }

    /// Counters so far.
    pub fn stats(&self) -> MonitorStats {
        let s = &self.stats;
        let fast = s.fast.load(Relaxed);
        let contended = s.contended.load(Relaxed);
        MonitorStats {
            acquisitions: fast + contended,
            contended,
            barges: s.barges.load(Relaxed),
            heir_wakeups: s.heir_wakeups.load(Relaxed),
            futile_wakeups: s.futile_wakeups.load(Relaxed),
            notified: s.notified.load(Relaxed),
            timeouts: s.timeouts.load(Relaxed),
            wakeups: s.wakeups.load(Relaxed),
        }
    }

    /// The current state of the queues (see [`MonitorSnapshot`] for how exact it is).
    pub fn snapshot(&self) -> MonitorSnapshot {
        MonitorSnapshot {
            locked: self.is_locked(),
            cxq: len(&self.stats.cxq_len),
            entry_list: len(&self.stats.entry_len),
            // Relaxed: inspection only.
            on_deck: self.on_deck.load(Relaxed) > INNER,
            wait_set: len(&self.stats.wait_len),
        }
    }

    /// Threads blocked acquiring the lock (`cxq` + `EntryList` + `OnDeck`).
    pub fn queued(&self) -> usize {
        self.snapshot().queued()
    }

    /// Threads on the WaitSet.
    pub fn waiting(&self) -> usize {
        len(&self.stats.wait_len)
    }

    /// Whether the lock is held right now.
    pub fn is_locked(&self) -> bool {
        // Relaxed: inspection only; a stale answer is as good as a racy one.
        self.word.load(Relaxed) & LOCKED != 0
    }

    fn guard(&self) -> MonitorGuard<'_, T> {
        MonitorGuard {
            monitor: self,
            _not_send: PhantomData,
        }
    }

    // --------------------------------------------------------------------------------------------
    // Acquisition
    // --------------------------------------------------------------------------------------------

    /// CAS the lock bit on if it is clear (retrying only while the lock stays free and the word
    /// changes under us, e.g. through `cxq` pushes). Returns the word seen before acquiring.
    ///
    /// SeqCst, the loads included: an heir whose attempt fails must be ordered before the
    /// owner's release, so that the release's look at `OnDeck` finds the heir; and the acquiring
    /// CAS is the lock's acquire edge (the release's `fetch_and` is its release edge).
    fn try_acquire_word(&self) -> Option<usize> {
        let mut v = self.word.load(SeqCst);
        while v & LOCKED == 0 {
            match self
                .word
                .compare_exchange_weak(v, v | LOCKED, SeqCst, SeqCst)
            {
                Ok(_) => return Some(v),
                Err(now) => v = now,
            }
        }
        None
    }

    /// HotSpot's `TrySpin`: probe the lock up to `spin_limit` times, pausing between probes for
    /// a delay that grows every eight probes. `fast` says whether this is an arrival (which
    /// counts barges) or an `OnDeck` heir's attempt.
    fn try_spin(&self, fast: bool) -> bool {
        let mut delay = 0u32;
        for probe in 0..=self.spin_limit {
            if let Some(old) = self.try_acquire_word() {
                if fast {
                    self.note_fast(old);
                }
                return true;
            }
            if probe == self.spin_limit {
                break;
            }
            hint::spin_loop();
            if (probe + 1) % 8 == 0 {
                delay = ((delay << 1) | 1) & 0x7FF;
            }
            for _ in 0..delay {
                hint::spin_loop();
            }
        }
        false
    }

    /// Count a fast-path acquisition; `old` is the lock word it replaced.
    fn note_fast(&self, old: usize) {
        bump(&self.stats.fast);
        // Relaxed: only to classify the acquisition for the statistics.
        let queued = old & !LOCKED != 0
            || self.on_deck.load(Relaxed) > INNER
            || self.entry_list.load(Relaxed) != 0;
        if queued {
            bump(&self.stats.barges);
        }
    }

    /// Slow path: acquire or push onto `cxq` atomically, then sleep until `OnDeck` and win.
    fn lock_contended(&self, node: &'static ParkNode) {
        // Before the node becomes visible to anyone who might unpark it.
        node.reset();
        if self.acquire_or_push(node) {
            bump(&self.stats.contended);
            return;
        }
        self.acquire_as_heir(node);
    }

    /// One CAS loop on the lock word: take the lock if it is free, otherwise push `node` onto
    /// `cxq` (which only succeeds while the lock bit is set). Returns true if the lock was taken.
    fn acquire_or_push(&self, node: &'static ParkNode) -> bool {
        // SeqCst throughout: the push must be ordered with the owner's release (a
        // read-modify-write of the same word) and with its later look at `cxq`.
        let mut v = self.word.load(SeqCst);
        loop {
            if v & LOCKED == 0 {
                match self.word.compare_exchange(v, v | LOCKED, SeqCst, SeqCst) {
                    Ok(_) => return true,
                    Err(now) => {
                        v = now;
                        continue;
                    }
                }
            }
            // Relaxed: published by the CAS below.
            node.next.store(v & !LOCKED, Relaxed);
            match self
                .word
                .compare_exchange(v, node.addr() | LOCKED, SeqCst, SeqCst)
            {
                Ok(_) => {
                    self.stats.cxq_len.fetch_add(1, Relaxed);
                    return false;
                }
                Err(now) => v = now,
            }
        }
    }

    /// Park `node`'s thread, counting delivered wake-ups.
    fn park(&self, node: &ParkNode, timeout: Option<Duration>) {
        if node.park(timeout) {
            bump(&self.stats.wakeups);
        }
    }

    /// `node` is on `cxq`, `EntryList` or `OnDeck`: sleep until it is the heir, then compete for
    /// the lock; after a lost race (a futile wake-up) stay heir and sleep until the next release
    /// wakes us.
    fn acquire_as_heir(&self, node: &'static ParkNode) {
        let me = node.addr();
        loop {
            // SeqCst: pairs with the releaser's store of `on_deck`.
            if self.on_deck.load(SeqCst) == me {
                if self.try_spin(false) {
                    break;
                }
                bump(&self.stats.futile_wakeups);
            }
            self.park(node, None);
        }
        // We own the lock: give up the heir position so the next release can pick another.
        // SeqCst: a later release's look at `on_deck` must not see us as heir any more.
        self.on_deck.store(0, SeqCst);
        bump(&self.stats.contended);
    }

    // --------------------------------------------------------------------------------------------
    // Release and succession
    // --------------------------------------------------------------------------------------------

    /// Release the lock (`IUnlock`), then make sure someone is responsible for waking a queued
    /// thread.
    fn unlock(&self) {
        // SeqCst (here and in every look below): "release, then look for an heir" must not pass
        // "become heir, then find the lock taken" (HotSpot's `storeload` after the release).
        let prev = self.word.fetch_and(!LOCKED, SeqCst);
        debug_assert!(prev & LOCKED != 0, "monitor unlocked while not locked");

        // An heir exists: wake it (again) so it retries; it may have lost a race and slept.
        // A stale address is harmless: its thread has already taken the lock (and moved on).
        let heir = self.on_deck.load(SeqCst);
        if heir != 0 {
            if heir != INNER {
                bump(&self.stats.heir_wakeups);
                // SAFETY: `on_deck` holds 0, INNER or the address of a leaked park node.
                unsafe { node_at(heir) }.unpark();
            }
            // INNER: another releasing thread is choosing an heir and owns progress.
            return;
        }

        let v = self.word.load(SeqCst);
        if v & !LOCKED == 0 && self.entry_list.load(SeqCst) == 0 {
            return; // nobody queued
        }
        if v & LOCKED != 0 {
            return; // someone took the lock meanwhile; its release will pick the heir
        }
        self.succession();
    }

    /// Succession: under the inner lock (`on_deck` = INNER), promote the head of `EntryList`
    /// (refilled from `cxq` when empty) to `OnDeck` and wake it, unless the lock has been taken
    /// again meanwhile (then its owner's release wakes the heir).
    fn succession(&self) {
        // SeqCst throughout: the inner lock, the heir and the looks at the lock word are the
        // pivots of HotSpot's `storeload`s; each must be ordered with the other releasers' and
        // the contenders' operations on the same words (module docs, "Why no wake-up is lost").
        loop {
            if self
                .on_deck
                .compare_exchange(0, INNER, SeqCst, SeqCst)
                .is_err()
            {
                return; // an heir exists or another thread is choosing one
            }

            let mut head = self.entry_list.load(SeqCst);
            if head == 0 {
                head = self.drain_cxq();
            }
            if head != 0 {
                // SAFETY: EntryList links are addresses of leaked park nodes.
                let heir = unsafe { node_at(head) };
                self.entry_list.store(heir.next.load(Relaxed), SeqCst);
                self.stats.entry_len.fetch_sub(1, Relaxed);
                // Publishing the heir also drops the inner lock.
                self.on_deck.store(head, SeqCst);
                // HotSpot 8 defers the unpark to the owner if the lock was taken meanwhile:
                // that owner's release finds the heir published above and wakes it.
                if self.word.load(SeqCst) & LOCKED != 0 {
                    return;
                }
                bump(&self.stats.heir_wakeups);
                heir.unpark();
                return;
            }

            // Nothing to promote (queues empty, or the lock was re-taken so its new owner will
            // do this). Drop the inner lock, then re-check: a thread may have pushed itself onto
            // `cxq` and its releaser skipped succession because we held the inner lock.
            self.on_deck.store(0, SeqCst);
            let v = self.word.load(SeqCst);
            if v & !LOCKED == 0 || v & LOCKED != 0 {
                return;
            }
        }
    }

    /// Detach all of `cxq` (only while the lock is free) and install it as `EntryList` in the
    /// order it had on `cxq`, most recent arrival first (HotSpot 8 does not reorder it).
    /// Returns the new `EntryList` head, or 0. Inner lock held.
    fn drain_cxq(&self) -> usize {
        // SeqCst: as in `succession`; the detaching CAS races with pushes and acquisitions.
        let mut v = self.word.load(SeqCst);
        loop {
            if v & !LOCKED == 0 || v & LOCKED != 0 {
                // Empty, or the lock was re-taken: the new owner's release handles `cxq`.
                return 0;
            }
            match self.word.compare_exchange(v, 0, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(now) => v = now, // a push or an acquisition raced us
            }
        }
        // The detached chain is ours alone; pushers wrote `next` before their publishing CAS.
        let (mut p, mut count) = (v, 0isize);
        while p != 0 {
            // SAFETY: `cxq` links are addresses of leaked park nodes.
            p = unsafe { node_at(p) }.next.load(Relaxed);
            count += 1;
        }
        self.stats.entry_len.fetch_add(count, Relaxed);
        self.stats.cxq_len.fetch_sub(count, Relaxed);
        self.entry_list.store(v, SeqCst);
        v
    }

    // --------------------------------------------------------------------------------------------
    // WaitSet
    // --------------------------------------------------------------------------------------------

    /// Move the head of the WaitSet (the most recent waiter) to `cxq` without waking it. Caller
    /// holds the lock and the WaitSet lock. Returns false if the WaitSet was empty.
    fn transfer_one(&self) -> bool {
        // Relaxed list accesses: the WaitSet lock orders them.
        let head = self.wait_head.load(Relaxed);
        if head == 0 {
            return false;
        }
        // SAFETY: WaitSet links are addresses of leaked park nodes.
        let node = unsafe { node_at(head) };
        self.wait_head.store(node.next.load(Relaxed), Relaxed);
        self.stats.wait_len.fetch_sub(1, Relaxed);
        // Push onto `cxq`; the lock bit stays set because we own the lock.
        self.stats.cxq_len.fetch_add(1, Relaxed);
        // SeqCst: a push onto `cxq` like a contender's in `acquire_or_push`.
        let mut v = self.word.load(SeqCst);
        loop {
            debug_assert!(v & LOCKED != 0, "notify without holding the monitor");
            node.next.store(v & !LOCKED, Relaxed);
            match self.word.compare_exchange(v, head | LOCKED, SeqCst, SeqCst) {
                Ok(_) => break,
                Err(now) => v = now,
            }
        }
        // SeqCst: pairs with the waiter's loads of `notified` (it must not leave for the WaitSet
        // path once it is on `cxq`); HotSpot fences before setting `Notified`.
        node.notified.store(true, SeqCst);
        bump(&self.stats.notified);
        true
    }

    /// Push `node` onto the WaitSet (caller holds the lock).
    fn enqueue_waiter(&self, node: &'static ParkNode) {
        let _ws = self.wait_lock.lock();
        node.next.store(self.wait_head.load(Relaxed), Relaxed);
        self.wait_head.store(node.addr(), Relaxed);
        self.stats.wait_len.fetch_add(1, Relaxed);
    }

    /// After a timeout: unlink `node` from the WaitSet unless a notify already moved it to
    /// `cxq`. Returns true if it was unlinked (the wait timed out).
    fn dequeue_timed_out(&self, node: &'static ParkNode) -> bool {
        let _ws = self.wait_lock.lock();
        // SeqCst: pairs with `transfer_one`'s store (double-checked under the WaitSet lock).
        if node.notified.load(SeqCst) {
            return false;
        }
        let me = node.addr();
        let (mut prev, mut p) = (0usize, self.wait_head.load(Relaxed));
        while p != 0 && p != me {
            prev = p;
            // SAFETY: WaitSet links are addresses of leaked park nodes.
            p = unsafe { node_at(p) }.next.load(Relaxed);
        }
        assert_eq!(
            p, me,
            "a waiter that was not notified must be on the WaitSet"
        );
        let next = node.next.load(Relaxed);
        if prev == 0 {
            self.wait_head.store(next, Relaxed);
        } else {
            // SAFETY: as above.
            unsafe { node_at(prev) }.next.store(next, Relaxed);
        }
        self.stats.wait_len.fetch_sub(1, Relaxed);
        true
    }

    /// `wait` / `wait_timeout` body (`IWait`); the caller holds the lock and holds it again on
    /// return.
    fn wait_inner(&self, timeout: Option<Duration>) -> bool {
        // A deadline too far away to represent is no deadline.
        let deadline = timeout.and_then(|d| Instant::now().checked_add(d));
        with_node(|node| {
            // SeqCst for `notified` throughout: pairs with `transfer_one`'s store.
            node.notified.store(false, SeqCst);
            node.reset();
            self.enqueue_waiter(node);
            // Normal release and succession. We may even be chosen as heir ourselves if
            // another thread notifies us before this returns; that only leaves us a permit.
            self.unlock();

            // Sleep until notified (moved to `cxq`) or timed out. Notify does not wake us: the
            // next wake-up comes when a release makes us `OnDeck`.
            while !node.notified.load(SeqCst) {
                match deadline {
                    None => self.park(node, None),
                    Some(deadline) => {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        self.park(node, Some(deadline - now));
                    }
                }
            }

            if !node.notified.load(SeqCst) && self.dequeue_timed_out(node) {
                // Off every list: compete for the lock like a new arrival.
                bump(&self.stats.timeouts);
                if !self.try_spin(true) {
                    self.lock_contended(node);
                }
                true
            } else {
                // On `cxq`/`EntryList`/`OnDeck`: we come back only as the heir.
                self.acquire_as_heir(node);
                false
            }
        })
    }
}

// ------------------------------------------------------------------------------------------------
// Guard
// ------------------------------------------------------------------------------------------------

/// Proof that the current thread holds a [`Monitor`]'s lock; releases it on drop.
pub struct MonitorGuard<'a, T> {
    monitor: &'a Monitor<T>,
    /// The guard must be released on the thread that acquired it.
    _not_send: PhantomData<*const ()>,
}

impl<T> MonitorGuard<'_, T> {
    /// Join the WaitSet, release the lock and sleep until a notify moves us back and the lock is
    /// ours again. Returns holding the lock. Only notifies end a wait, but as with any condition
    /// variable callers should re-check their condition in a loop.
    pub fn wait(&mut self) {
        self.monitor.wait_inner(None);
    }

    /// Like [`wait`](Self::wait), but give up after `timeout`. Returns `true` if it timed out
    /// (was still on the WaitSet at the deadline). Either way it returns holding the lock; after
    /// a timeout reacquiring may take longer than `timeout`.
    pub fn wait_timeout(&mut self, timeout: Duration) -> bool {
        self.monitor.wait_inner(Some(timeout))
    }

    /// Move the most recent waiter from the WaitSet to `cxq` without waking it; it competes for
    /// the lock once a release makes it the heir. Returns whether a waiter was moved.
    pub fn notify_one(&self) -> bool {
        let _ws = self.monitor.wait_lock.lock();
        self.monitor.transfer_one()
    }

    /// Move every waiter from the WaitSet to `cxq` without waking any, one at a time as
    /// `notify_one` does, which leaves the earliest waiter at the head of `cxq`, to become heir
    /// first. Returns how many were moved.
    pub fn notify_all(&self) -> usize {
        let _ws = self.monitor.wait_lock.lock();
        let mut moved = 0;
        while self.monitor.transfer_one() {
            moved += 1;
        }
        moved
    }

    /// The monitor this guard locks.
    pub fn monitor(&self) -> &Monitor<T> {
        self.monitor
    }
}

impl<T> Deref for MonitorGuard<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while this thread holds the lock, which gives exclusive
        // access to the data.
        unsafe { &*self.monitor.data.get() }
    }
}

impl<T> DerefMut for MonitorGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` rules out other borrows through this guard.
        unsafe { &mut *self.monitor.data.get() }
    }
}

impl<T> Drop for MonitorGuard<'_, T> {
    fn drop(&mut self) {
        self.monitor.unlock();
    }
}

impl<T: fmt::Debug> fmt::Debug for MonitorGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

// ------------------------------------------------------------------------------------------------
// Tests
// ------------------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;

    /// Aborts the test process if not dropped within `secs`: a lost wake-up fails instead of
    /// hanging forever.
    struct Watchdog(Option<mpsc::Sender<()>>);

    impl Watchdog {
        fn new(name: &'static str, secs: u64) -> Self {
            let (tx, rx) = mpsc::channel::<()>();
            std::thread::spawn(move || {
                if let Err(mpsc::RecvTimeoutError::Timeout) =
                    rx.recv_timeout(Duration::from_secs(secs))
                {
                    eprintln!("monitor test `{name}` hung for {secs} s: lost wake-up?");
                    std::process::abort();
                }
            });
            Watchdog(Some(tx))
        }
    }

    impl Drop for Watchdog {
        fn drop(&mut self) {
            // Dropping the sender disconnects the channel and ends the watchdog thread.
            self.0.take();
        }
    }

    /// Spin (yielding) until `cond` holds; the watchdog bounds the wait.
    fn until(mut cond: impl FnMut() -> bool) {
        while !cond() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn lock_try_lock_and_data_access() {
        let m = Monitor::new(5u32);
        {
            let mut g = m.lock();
            *g += 1;
            assert!(m.is_locked());
            assert!(m.try_lock().is_none());
        }
        assert!(!m.is_locked());
        assert_eq!(*m.try_lock().expect("free lock"), 6);
        let s = m.stats();
        assert_eq!(s.acquisitions, 2);
        assert_eq!((s.contended, s.barges, s.heir_wakeups), (0, 0, 0));
        assert_eq!(m.into_inner(), 6);
    }

    /// 1. Mutual exclusion: a plain (non-atomic) read-modify-write under the lock never loses an
    ///    update and no two threads are ever inside at once.
    #[test]
    fn mutual_exclusion_stress() {
        const THREADS: u64 = 8;
        const ITERS: u64 = 20_000;
        let _dog = Watchdog::new("mutual_exclusion_stress", 60);
        let m = Monitor::new(0u64);
        let inside = AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (m, inside) = (&m, &inside);
                s.spawn(move || {
                    for i in 0..ITERS {
                        let mut g = if (i + t).is_multiple_of(7) {
                            match m.try_lock() {
                                Some(g) => g,
                                None => m.lock(),
                            }
                        } else {
                            m.lock()
                        };
                        assert!(!inside.swap(true, Relaxed), "two owners at once");
                        let v = *g;
                        std::hint::black_box(&v);
                        if i.is_multiple_of(64) {
                            std::thread::yield_now(); // invite preemption inside
                        }
                        *g = v + 1;
                        inside.store(false, Relaxed);
                    }
                });
            }
        });
        assert_eq!(*m.lock(), THREADS * ITERS);
        let s = m.stats();
        assert_eq!(s.acquisitions, THREADS * ITERS + 1);
        assert_eq!(m.snapshot(), MonitorSnapshot::default());
        eprintln!("mutual_exclusion_stress: {s:?}");
    }

    /// Succession churn: more threads than CPUs, short critical sections, random think time,
    /// so queues empty and refill constantly and releases race with heir selection. A lost
    /// wake-up strands a thread on `cxq` and the watchdog fires.
    #[test]
    fn succession_churn_stress() {
        const THREADS: u64 = 12;
        const ITERS: u64 = 6_000;
        let _dog = Watchdog::new("succession_churn_stress", 60);
        let m = Monitor::new(0u64);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let m = &m;
                s.spawn(move || {
                    let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (t + 1);
                    for _ in 0..ITERS {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        {
                            let mut g = m.lock();
                            *g += 1;
                            if x.is_multiple_of(97) {
                                std::thread::yield_now();
                            }
                        }
                        for _ in 0..(x % 256) {
                            std::hint::spin_loop();
                        }
                        if x.is_multiple_of(13) {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(*m.lock(), THREADS * ITERS);
        assert_eq!(m.snapshot(), MonitorSnapshot::default());
    }

    /// 2a. Bounded buffer with several producers and consumers, `wait` + `notify_all`.
    #[test]
    fn no_lost_wakeups_bounded_buffer_notify_all() {
        const PRODUCERS: u64 = 3;
        const CONSUMERS: u64 = 3;
        const ITEMS: u64 = 4_000; // per producer
        const CAP: usize = 4;
        let _dog = Watchdog::new("no_lost_wakeups_bounded_buffer_notify_all", 60);
        struct State {
            buf: VecDeque<u64>,
            consumed: u64,
            sum: u64,
        }
        let m = Monitor::new(State {
            buf: VecDeque::new(),
            consumed: 0,
            sum: 0,
        });
        let total = PRODUCERS * ITEMS;
        std::thread::scope(|s| {
            for p in 0..PRODUCERS {
                let m = &m;
                s.spawn(move || {
                    for i in 0..ITEMS {
                        let mut g = m.lock();
                        while g.buf.len() == CAP {
                            g.wait();
                        }
                        g.buf.push_back(p * ITEMS + i);
                        g.notify_all();
                    }
                });
            }
            for _ in 0..CONSUMERS {
                let m = &m;
                s.spawn(move || loop {
                    let mut g = m.lock();
                    while g.buf.is_empty() && g.consumed < total {
                        g.wait();
                    }
                    if g.consumed == total {
                        g.notify_all(); // let the other consumers see the end
                        return;
                    }
                    let v = g.buf.pop_front().unwrap();
                    g.consumed += 1;
                    g.sum += v;
                    g.notify_all();
                });
            }
        });
        let g = m.lock();
        assert_eq!(g.consumed, total);
        assert_eq!(g.sum, total * (total - 1) / 2);
        assert!(g.buf.is_empty());
        assert_eq!(m.waiting(), 0);
    }

    /// 2b. Unbounded queue, several consumers, one `notify_one` per item, poison pills at the
    ///     end: every item and every pill is taken.
    #[test]
    fn no_lost_wakeups_notify_one_consumers() {
        const PRODUCERS: u64 = 2;
        const CONSUMERS: usize = 4;
        const ITEMS: u64 = 5_000; // per producer
        let _dog = Watchdog::new("no_lost_wakeups_notify_one_consumers", 60);
        let m = Monitor::new(VecDeque::<Option<u64>>::new());
        let (sum, count) = (AtomicU64::new(0), AtomicU64::new(0));
        std::thread::scope(|s| {
            for _ in 0..CONSUMERS {
                let (m, sum, count) = (&m, &sum, &count);
                s.spawn(move || loop {
                    let mut g = m.lock();
                    while g.is_empty() {
                        g.wait();
                    }
                    match g.pop_front().unwrap() {
                        None => return,
                        Some(v) => {
                            drop(g);
                            sum.fetch_add(v, Relaxed);
                            count.fetch_add(1, Relaxed);
                        }
                    }
                });
            }
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|p| {
                    let m = &m;
                    s.spawn(move || {
                        for i in 0..ITEMS {
                            let mut g = m.lock();
                            g.push_back(Some(p * ITEMS + i));
                            g.notify_one();
                        }
                    })
                })
                .collect();
            for h in producers {
                h.join().unwrap();
            }
            for _ in 0..CONSUMERS {
                let mut g = m.lock();
                g.push_back(None);
                g.notify_one();
            }
        });
        let total = PRODUCERS * ITEMS;
        assert_eq!(count.load(Relaxed), total);
        assert_eq!(sum.load(Relaxed), total * (total - 1) / 2);
        assert!(m.lock().is_empty());
    }

    /// 2c. Strict ping-pong: every round needs a wait and a `notify_one` to get through.
    #[test]
    fn no_lost_wakeups_ping_pong() {
        const ROUNDS: u64 = 20_000;
        let _dog = Watchdog::new("no_lost_wakeups_ping_pong", 60);
        let m = Monitor::new(0u64);
        std::thread::scope(|s| {
            for me in 0..2u64 {
                let m = &m;
                s.spawn(move || {
                    let mut g = m.lock();
                    loop {
                        while *g < ROUNDS && *g % 2 != me {
                            g.wait();
                        }
                        if *g >= ROUNDS {
                            g.notify_one();
                            return;
                        }
                        *g += 1;
                        g.notify_one();
                    }
                });
            }
        });
        assert_eq!(*m.lock(), ROUNDS);
        assert!(m.stats().notified >= ROUNDS - 2);
    }

    /// 3. `notify_all` moves the WaitSet to `cxq` without waking anyone; after the release the
    ///    waiters get the lock one at a time, each exactly once, in the order they waited.
    #[test]
    fn notify_all_transfers_waitset_to_cxq_without_waking() {
        const N: usize = 6;
        let _dog = Watchdog::new("notify_all_transfers_waitset_to_cxq_without_waking", 60);
        struct State {
            go: bool,
            order: Vec<usize>,
        }
        let m = Monitor::new(State {
            go: false,
            order: Vec::new(),
        });
        let returned = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for i in 0..N {
                let (m, returned) = (&m, &returned);
                s.spawn(move || {
                    let mut g = m.lock();
                    while !g.go {
                        g.wait();
                    }
                    returned.fetch_add(1, SeqCst);
                    g.order.push(i);
                });
                // One waiter at a time, and only once its release is complete: the set-up is
                // uncontended, so no heir ever exists before the notify.
                until(|| {
                    let snap = m.snapshot();
                    snap.wait_set == i + 1 && !snap.locked
                });
            }
            assert_eq!(m.stats().heir_wakeups, 0);
            assert_eq!(m.queued(), 0);

            let mut g = m.lock();
            g.go = true;
            assert_eq!(g.notify_all(), N);
            let snap = m.snapshot();
            assert_eq!(
                snap,
                MonitorSnapshot {
                    locked: true,
                    cxq: N,
                    entry_list: 0,
                    on_deck: false,
                    wait_set: 0,
                },
                "all waiters are on cxq, none is heir"
            );
            // Nobody was unparked, nobody is running: give a wrongly woken thread time to show
            // up in the wake-up count (a correct monitor passes whatever the machine speed).
            std::thread::sleep(Duration::from_millis(20));
            let stats = m.stats();
            assert_eq!(
                (stats.heir_wakeups, stats.wakeups, stats.notified),
                (0, 0, N as u64)
            );
            assert_eq!(returned.load(SeqCst), 0);
            assert_eq!(m.snapshot().cxq, N);
            drop(g);
        });
        let g = m.lock();
        assert_eq!(
            g.order,
            (0..N).collect::<Vec<_>>(),
            "the earliest waiter first: LIFO WaitSet, notify pushes onto cxq, EntryList keeps it"
        );
        drop(g);
        let stats = m.stats();
        // Each waiter came back only as an OnDeck heir, woken once at least.
        assert!(stats.heir_wakeups >= N as u64, "{stats:?}");
        assert!(stats.contended >= N as u64, "{stats:?}");
        assert_eq!(m.snapshot(), MonitorSnapshot::default());
    }

    /// Pin the calling thread to `cpu`; false if the OS refuses (then the test runs unpinned).
    fn pin_to(cpu: usize) -> bool {
        crate::os::affinity::set_current_thread_affinity(&[cpu as u32]).is_ok()
    }

    /// 4. Barging: A releases while B sleeps queued, then re-locks at once through the fast path
    ///    while B is the `OnDeck` heir and has not got the lock. Even trials pin A and B to one
    ///    CPU, as in 000 Fig. 5 (there the kernel may let the woken B preempt A, so barging is
    ///    rarer); odd trials leave them unpinned.
    #[test]
    fn owner_barges_past_queued_heir() {
        const TRIALS: usize = 200;
        let _dog = Watchdog::new("owner_barges_past_queued_heir", 60);
        let cpu = crate::os::cpu::current_cpu().map(|c| c as usize);
        let m = Monitor::new(0u32);
        let b_got_it = AtomicBool::new(false);
        let mut witnessed = [0usize; 2]; // [pinned, unpinned]
        for trial in 0..TRIALS {
            let pin = if trial % 2 == 0 { cpu } else { None };
            b_got_it.store(false, SeqCst);
            let barged = std::thread::scope(|s| {
                let (m, b_got_it) = (&m, &b_got_it);
                let a = s.spawn(move || {
                    // If pinning fails, the trial simply runs unpinned.
                    let pinned = pin.is_some_and(pin_to);
                    let g = m.lock();
                    let b = s.spawn(move || {
                        if pinned {
                            pin_to(pin.unwrap());
                        }
                        let mut g = m.lock();
                        *g += 1;
                        b_got_it.store(true, SeqCst);
                    });
                    until(|| m.snapshot().cxq >= 1); // B is queued on cxq
                    let before = m.stats().barges;
                    drop(g); // release: B becomes OnDeck and is woken ...
                    let g = m.lock(); // ... but A may take the lock straight back
                    let snap = m.snapshot();
                    let barged = m.stats().barges > before
                        && !b_got_it.load(SeqCst)
                        && snap.on_deck
                        && snap.queued() == 1;
                    drop(g);
                    b.join().unwrap();
                    barged
                });
                a.join().unwrap()
            });
            assert!(b_got_it.load(SeqCst));
            witnessed[trial % 2] += usize::from(barged);
        }
        assert_eq!(*m.lock(), TRIALS as u32);
        let stats = m.stats();
        let total = witnessed[0] + witnessed[1];
        assert!(total >= 1, "A never barged in {TRIALS} trials: {stats:?}");
        assert!(stats.barges >= total as u64);
        eprintln!(
            "barged in {}/{} pinned and {}/{} unpinned trials; {stats:?}",
            witnessed[0],
            TRIALS / 2,
            witnessed[1],
            TRIALS / 2
        );
    }

    /// 5a. A wait with nobody to notify times out and returns holding the lock.
    #[test]
    fn wait_timeout_times_out_holding_the_lock() {
        let _dog = Watchdog::new("wait_timeout_times_out_holding_the_lock", 60);
        let m = Monitor::new(1u32);
        let mut g = m.lock();
        let start = Instant::now();
        assert!(g.wait_timeout(Duration::from_millis(20)));
        assert!(start.elapsed() >= Duration::from_millis(20));
        *g += 1;
        assert!(m.is_locked());
        assert_eq!(m.waiting(), 0);
        assert!(m.try_lock().is_none());
        drop(g);
        assert_eq!(*m.lock(), 2);
        assert_eq!(m.stats().timeouts, 1);
    }

    /// 5b. A waiter that times out in the middle of the WaitSet unlinks itself; the others are
    ///     still woken by `notify_all`, and a notified timed waiter reports no timeout.
    #[test]
    fn timed_out_waiter_does_not_break_notify_all() {
        let _dog = Watchdog::new("timed_out_waiter_does_not_break_notify_all", 60);
        let m = Monitor::new(false);
        let results = Monitor::new(Vec::<(usize, bool)>::new());
        std::thread::scope(|s| {
            // Waiters 0 and 2 wait for the flag without a deadline; 1 gives up after 20 ms;
            // 3 has a deadline it will not reach before the notify.
            let timeouts = [None, Some(20), None, Some(60_000)];
            for (i, t) in timeouts.into_iter().enumerate() {
                let (m, results) = (&m, &results);
                s.spawn(move || {
                    let mut g = m.lock();
                    let timed_out = match t {
                        None => {
                            while !*g {
                                g.wait();
                            }
                            false
                        }
                        Some(ms) => g.wait_timeout(Duration::from_millis(ms)),
                    };
                    assert!(m.is_locked());
                    drop(g);
                    results.lock().push((i, timed_out));
                });
                // Count waiter 1 even if it already timed out (it usually leaves the middle
                // of the WaitSet, but that depends on timing; the list unit test covers it).
                until(|| m.waiting() + m.stats().timeouts as usize == i + 1 && !m.is_locked());
            }
            // Waiter 1 times out and leaves the WaitSet.
            until(|| results.lock().len() == 1);
            assert_eq!(results.lock()[0], (1, true));
            assert_eq!(m.waiting(), 3);
            let mut g = m.lock();
            *g = true;
            assert_eq!(g.notify_all(), 3);
            assert_eq!(m.waiting(), 0);
        });
        let mut r = results.into_inner();
        r.sort_unstable();
        assert_eq!(r, vec![(0, false), (1, true), (2, false), (3, false)]);
        assert_eq!(m.stats().timeouts, 1);
        assert_eq!(m.snapshot(), MonitorSnapshot::default());
    }

    /// WaitSet list surgery on its own: LIFO push, unlink at head, middle and tail.
    #[test]
    fn waitset_unlink_keeps_the_list_right() {
        let m = Monitor::new(());
        let nodes: Vec<NodeLease> = (0..4).map(|_| NodeLease::take()).collect();
        let list = |m: &Monitor<()>| {
            let mut out = Vec::new();
            let mut p = m.wait_head.load(Relaxed);
            while p != 0 {
                out.push(nodes.iter().position(|n| n.0.addr() == p).unwrap());
                // SAFETY: the WaitSet holds addresses of leaked park nodes.
                p = unsafe { node_at(p) }.next.load(Relaxed);
            }
            out
        };
        for n in &nodes[..3] {
            n.0.notified.store(false, SeqCst);
            m.enqueue_waiter(n.0);
        }
        assert_eq!(list(&m), vec![2, 1, 0], "the most recent waiter first");
        assert!(m.dequeue_timed_out(nodes[1].0)); // middle
        assert_eq!(list(&m), vec![2, 0]);
        assert!(m.dequeue_timed_out(nodes[0].0)); // tail
        assert_eq!(list(&m), vec![2]);
        nodes[3].0.notified.store(false, SeqCst);
        m.enqueue_waiter(nodes[3].0);
        assert_eq!(list(&m), vec![3, 2]);
        assert!(m.dequeue_timed_out(nodes[3].0)); // head
        assert_eq!(list(&m), vec![2]);
        assert!(m.dequeue_timed_out(nodes[2].0)); // last one
        assert_eq!(list(&m), Vec::<usize>::new());
        assert_eq!(m.waiting(), 0);
        // A notified node is no longer on the WaitSet and must not be unlinked.
        nodes[0].0.notified.store(true, SeqCst);
        assert!(!m.dequeue_timed_out(nodes[0].0));
    }

    /// `notify_one` moves exactly one waiter, the most recent (HotSpot 8 takes the head of its
    /// LIFO WaitSet).
    #[test]
    fn notify_one_moves_the_most_recent_waiter() {
        let _dog = Watchdog::new("notify_one_moves_the_most_recent_waiter", 60);
        let m = Monitor::new(Vec::<usize>::new());
        std::thread::scope(|s| {
            for i in 0..3 {
                let m = &m;
                s.spawn(move || {
                    let mut g = m.lock();
                    g.wait();
                    g.push(i);
                });
                until(|| m.waiting() == i + 1 && !m.is_locked());
            }
            for round in 0..3 {
                let g = m.lock();
                assert!(g.notify_one());
                assert_eq!(m.waiting(), 2 - round);
                drop(g);
                until(|| m.lock().len() == round + 1);
            }
            assert!(!m.lock().notify_one());
        });
        assert_eq!(m.into_inner(), vec![2, 1, 0]);
    }

    /// Contenders that queue while the lock is held get it in HotSpot 8's order: `cxq` is a
    /// stack and is moved to `EntryList` unreversed, so the most recent arrival goes first.
    #[test]
    fn queued_contenders_get_the_lock_most_recent_first() {
        const N: usize = 4;
        let _dog = Watchdog::new("queued_contenders_get_the_lock_most_recent_first", 60);
        let m = Monitor::new(Vec::<usize>::new());
        std::thread::scope(|s| {
            let g = m.lock();
            for i in 0..N {
                let m = &m;
                s.spawn(move || m.lock().push(i));
                until(|| m.snapshot().cxq == i + 1);
            }
            drop(g);
        });
        assert_eq!(m.into_inner(), vec![3, 2, 1, 0]);
    }

    /// A release that chooses an heir while the lock has already been taken again does not wake
    /// it (HotSpot 8's deferred unpark): the new owner's release does.
    #[test]
    fn the_heir_is_woken_by_the_owner_that_took_the_lock_meanwhile() {
        let _dog = Watchdog::new(
            "the_heir_is_woken_by_the_owner_that_took_the_lock_meanwhile",
            60,
        );
        let m = Monitor::new(Vec::<usize>::new());
        std::thread::scope(|s| {
            let g = m.lock();
            for i in 0..2 {
                let m = &m;
                s.spawn(move || m.lock().push(i));
                until(|| m.snapshot().cxq == i + 1);
            }
            // Play "another releaser" by hand: hold the inner lock so our own release skips
            // succession, move `cxq` to `EntryList`, and let the lock be taken again before
            // the heir is chosen.
            m.on_deck.store(INNER, SeqCst);
            drop(g);
            assert_eq!(m.drain_cxq(), m.entry_list.load(SeqCst));
            let g = m.try_lock().expect("nobody else competes");
            m.on_deck.store(0, SeqCst);
            let before = m.stats().heir_wakeups;
            m.succession();
            assert!(m.snapshot().on_deck, "the most recent arrival is heir");
            assert_eq!(
                m.stats().heir_wakeups,
                before,
                "the chooser left the unpark"
            );
            drop(g);
            assert!(
                m.stats().heir_wakeups > before,
                "the owner's release woke the heir"
            );
        });
        assert_eq!(m.into_inner(), vec![1, 0]);
    }
}
