//! The watch gate: how many waiters of the termination protocol may wait actively at once.
//!
//! Waiting actively — spinning, yielding, napping and peeking at the other deques — only pays
//! while each waiter has a CPU of its own. When a phase has far more workers than usable CPUs
//! (see [`crate::parallel::oversubscription`]), every active waiter takes CPU time from the
//! workers that still have work or have yet to start (under `monitor` parking they start one at
//! a time, each needing a CPU in turn), and a phase that should take microseconds takes seconds.
//!
//! So a waiter first takes one of `places` watch places. A waiter that finds them all taken
//! blocks on a futex instead, using no CPU, until a watcher withdraws (to steal work it saw; it
//! wakes one blocked waiter to take its place) or the phase ends (the last arrival wakes them
//! all). Which waiters watch changes nothing about when termination is declared (the module
//! docs of [`super`]): only watchers peek, and peeking is for speed only. A gate with at least
//! as many places as workers is open: nobody ever blocks and the protocol is exactly as without
//! it.
//!
//! Why no blocked waiter sleeps through the end: a waiter reads the futex word, then
//! (sequentially consistent) looks for the end of the phase and for a free place, and sleeps
//! only while the word still holds what it read. The last arrival completes the count, and a
//! withdrawing watcher frees its place, *before* bumping the word and waking; so either the
//! waiter's look sees the end or the place, or its read of the word came before the bump and the
//! futex does not let it sleep through the wake. Only the end's wake is needed for that (a
//! withdrawn watcher comes back and watches itself); the hand-over only keeps the places
//! filled. `concord-loom` checks this with the futex model.

use crossbeam_utils::CachePadded;

use crate::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::sync::futex;

/// The watch places of one phase's termination protocol.
pub(super) struct Gate {
    /// How many waiters may watch at once.
    places: usize,
    /// Whether the gate can ever close (`places` below the number of workers).
    closes: bool,
    /// Waiters holding a place now.
    watching: CachePadded<AtomicUsize>,
    /// Blocked waiters sleep on this word; bumped when a place frees up and when the phase ends.
    word: CachePadded<AtomicU32>,
    /// Times a waiter went to sleep on the gate (statistics).
    blocks: AtomicU64,
    /// Most waiters that held a place at the same time (statistics; 0 for an open gate, which
    /// counts nothing).
    peak: AtomicUsize,
}

impl Gate {
    /// A gate with `places` watch places for a phase of `workers` workers.
    pub(super) fn new(places: usize, workers: usize) -> Self {
        let places = places.max(1);
        Self {
            places,
            closes: places < workers,
            watching: CachePadded::new(AtomicUsize::new(0)),
            word: CachePadded::new(AtomicU32::new(0)),
            blocks: AtomicU64::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// How many waiters may watch at once.
    pub(super) fn places(&self) -> usize {
        self.places
    }

    /// Take a watch place, sleeping while all are taken. Returns `false` holding a place, or
    /// `true` (holding none) as soon as `ended()` holds. An open gate returns `false` at once.
    pub(super) fn watch_or_block(&self, ended: impl Fn() -> bool) -> bool {
        if !self.closes {
            // Nothing to count or wait for: the protocol runs as without a gate.
            return false;
        }
        loop {
            // SeqCst (with the SeqCst look below and the bumps in `leave`/`open`): the read of
            // the word comes before the look for a place and for the end (module docs).
            let seen = self.word.load(Ordering::SeqCst);
            if ended() {
                return true;
            }
            if self.try_take_place() {
                return false;
            }
            // Relaxed: a statistic.
            self.blocks.fetch_add(1, Ordering::Relaxed);
            futex::wait(&self.word, seen, None);
        }
    }

    /// A watcher that withdrew gives its place back: wake one blocked waiter to take it.
    pub(super) fn leave(&self) {
        if self.closes {
            // SeqCst: the place is free before the bump (module docs).
            self.watching.fetch_sub(1, Ordering::SeqCst);
            self.word.fetch_add(1, Ordering::SeqCst);
            futex::wake(&self.word, 1);
        }
    }

    /// The phase has ended (the count reached `n`): wake every blocked waiter.
    pub(super) fn open(&self) {
        if self.closes {
            // SeqCst: after the count reached `n` (module docs).
            self.word.fetch_add(1, Ordering::SeqCst);
            futex::wake(&self.word, u32::MAX);
        }
    }

    /// Times a waiter went to sleep on the gate.
    pub(super) fn blocks(&self) -> u64 {
        // Relaxed: a statistic.
        self.blocks.load(Ordering::Relaxed)
    }

    /// Most waiters that watched at the same time.
    pub(super) fn peak(&self) -> usize {
        // Relaxed: a statistic.
        self.peak.load(Ordering::Relaxed)
    }

    /// Waiters holding a place now (tests).
    #[cfg(test)]
    pub(super) fn watching(&self) -> usize {
        self.watching.load(Ordering::SeqCst)
    }

    fn try_take_place(&self) -> bool {
        // SeqCst: the look for a free place pairs with the SeqCst release in `leave`.
        let taken = self
            .watching
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |w| {
                (w < self.places).then_some(w + 1)
            });
        match taken {
            Ok(before) => {
                self.note_peak(before + 1);
                true
            }
            Err(_) => false,
        }
    }

    fn note_peak(&self, now: usize) {
        // Relaxed: a statistic.
        self.peak.fetch_max(now, Ordering::Relaxed);
    }
}
