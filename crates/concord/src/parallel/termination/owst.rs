//! `owst` termination (HotSpot's `OWSTTaskTerminator`, JDK 9–17): a worker offers after `2·N`
//! failed steals. One waiter at a time, the spin master, spins, yields and peeks; the others
//! block on a condition variable with a short timeout. A spin master that sees `k` items wakes
//! `min(k, other waiters)` sleepers and withdraws; the next waiter to wake with no master takes
//! the role over. A master that has yielded long enough gives the role up and naps.
//!
//! Every change of the `offered` count happens under the mutex here, which is what lets a
//! withdrawal check "below `n`" and decrement as one step (the module docs of
//! [`super`] explain why that makes termination final).

use std::time::Duration;

use super::{Backoff, Pause, Terminator};
use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::{Condvar, Mutex, MutexGuard};

/// How the spin master waits between peeks before it naps, and how long naps and sleeps last
/// (HotSpot's `WorkStealingSleepMillis`, 1 ms).
pub const MASTER_BACKOFF: Backoff = Backoff::SHORT.with_sleep(Duration::from_millis(1));

/// Failed steals before an offer: `2·N`.
pub fn failure_threshold(workers: usize) -> usize {
    2 * workers
}

/// The OWST part of a [`Terminator`]: who is spin master, and where the others sleep.
pub(super) struct OwstState {
    /// The spin master's worker id, if any. Guards the `offered` count for this kind.
    master: Mutex<Option<usize>>,
    /// Sleepers wait here; the final arrival and work-seeing masters notify.
    wake: Condvar,
    /// Sleepers woken by spin masters that saw work.
    wakeups: AtomicU64,
    /// A sleeper's timeout, and a master's nap.
    nap: Duration,
    /// Sleepers sleep until woken, without a timeout (only the master naps): set when workers
    /// far outnumber CPUs ([`Terminator::with_watchers`]).
    sleep_untimed: bool,
}

/// How a spin master's turn ended.
enum Mastery<'a> {
    /// The count reached `n`.
    Terminated,
    /// It saw work, woke sleepers and withdrew its offer.
    Withdrew,
    /// It napped and another waiter took the role; it continues as an ordinary waiter.
    Demoted(MutexGuard<'a, Option<usize>>),
}

impl OwstState {
    pub(super) fn new(nap: Duration) -> Self {
        Self {
            master: Mutex::new(None),
            wake: Condvar::new(),
            wakeups: AtomicU64::new(0),
            nap,
            sleep_untimed: false,
        }
    }

    pub(super) fn set_sleep_untimed(&mut self, untimed: bool) {
        self.sleep_untimed = untimed;
    }

    pub(super) fn wakeups(&self) -> u64 {
        // Relaxed: a statistic.
        self.wakeups.load(Ordering::Relaxed)
    }

    fn lock(&self) -> MutexGuard<'_, Option<usize>> {
        // The guarded state is a plain id; a panic elsewhere cannot leave it inconsistent.
        self.master.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleep on the condition for at most a nap, giving up `guard` meanwhile.
    fn nap<'a>(&self, guard: MutexGuard<'a, Option<usize>>) -> MutexGuard<'a, Option<usize>> {
        self.wake
            .wait_timeout(guard, self.nap)
            .unwrap_or_else(|e| e.into_inner())
            .0
    }

    /// A sleeper's wait: a nap, or until woken when sleepers sleep untimed. Never strands
    /// anyone: the last arrival wakes all, and a master that sees work wakes as many sleepers
    /// as it sees items; between those, while nobody is master, withdrawn workers come back
    /// and take the role.
    fn sleep<'a>(&self, guard: MutexGuard<'a, Option<usize>>) -> MutexGuard<'a, Option<usize>> {
        if self.sleep_untimed {
            self.wake.wait(guard).unwrap_or_else(|e| e.into_inner())
        } else {
            self.nap(guard)
        }
    }

    /// Whether sleepers sleep without a timeout (tests).
    #[cfg(test)]
    pub(super) fn sleep_untimed(&self) -> bool {
        self.sleep_untimed
    }

    /// The current spin master (tests).
    #[cfg(test)]
    pub(super) fn master(&self) -> Option<usize> {
        *self.lock()
    }
}

impl Terminator {
    pub(super) fn offer_owst(&self, me: usize, visible_work: &impl Fn() -> usize) -> bool {
        let owst = &self.owst;
        let mut master = owst.lock();
        // The count changes only under the mutex.
        if self.enter() {
            owst.wake.notify_all();
            return true;
        }
        loop {
            // Invariant here: we hold the mutex and the count is below `n`. Every wait below
            // starts under the same hold of the mutex as the check, so the final arrival's
            // `notify_all` (sent under the mutex) cannot be missed.
            if master.is_none() {
                *master = Some(me);
                drop(master);
                match self.spin_master(me, visible_work) {
                    Mastery::Terminated => return true,
                    Mastery::Withdrew => return false,
                    Mastery::Demoted(guard) => master = guard,
                }
            } else {
                master = owst.sleep(master);
                if self.terminated() {
                    return true;
                }
            }
            // Woken, timed out or demoted: peek without holding the mutex.
            drop(master);
            let k = visible_work();
            master = owst.lock();
            if self.terminated() {
                return true;
            }
            if k > 0 {
                // SeqCst: as in `enter`; under the mutex, after checking the count is below `n`.
                self.offered.fetch_sub(1, Ordering::SeqCst);
                return false;
            }
        }
    }

    /// The spin master's loop: spin/yield and peek until the count reaches `n`, work shows up,
    /// or it has yielded long enough to nap (giving the role up while it sleeps).
    fn spin_master(&self, me: usize, visible_work: &impl Fn() -> usize) -> Mastery<'_> {
        let owst = &self.owst;
        let mut waiting = self.backoff.start();
        loop {
            if self.terminated() {
                return Mastery::Terminated;
            }
            let k = visible_work();
            if k > 0 {
                let mut master = owst.lock();
                if self.terminated() {
                    return Mastery::Terminated;
                }
                *master = None;
                // SeqCst: as in `enter`; under the mutex, after checking the count is below `n`.
                let others = self.offered.fetch_sub(1, Ordering::SeqCst) - 1;
                let wake = k.min(others);
                if wake > 0 && wake == others {
                    owst.wake.notify_all();
                } else {
                    for _ in 0..wake {
                        owst.wake.notify_one();
                    }
                }
                owst.wakeups.fetch_add(wake as u64, Ordering::Relaxed);
                return Mastery::Withdrew;
            }
            if let Pause::Sleep = waiting.step() {
                let mut master = owst.lock();
                if self.terminated() {
                    return Mastery::Terminated;
                }
                *master = None;
                master = owst.nap(master);
                if self.terminated() {
                    return Mastery::Terminated;
                }
                if master.is_some() {
                    return Mastery::Demoted(master);
                }
                *master = Some(me);
                waiting = self.backoff.start();
            }
        }
    }
}
