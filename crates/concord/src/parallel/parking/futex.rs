//! Parking GC workers between jobs: futex wait on a job epoch (lazy parking, 004 §3.1.2).
//!
//! Protocol, and why no wake-up is lost:
//! * The dispatcher publishes the job, then increments `epoch` (Release) and wakes the waiters
//!   that take part in it. Each worker sleeps with its own futex bit ([`worker_bit`]), and the
//!   wake names the participants' bits ([`participant_bits`]), so workers that sit a job out
//!   sleep through it (`FUTEX_WAKE_BITSET`). Workers 31 and up share the last bit, so with more
//!   than 31 workers some non-participants may wake, see they are not needed and sleep again.
//! * A worker remembers the last epoch it served. It loads `epoch` (Acquire); if unchanged it
//!   calls `futex_wait(epoch, seen)`, which the kernel refuses to block on if `epoch` no longer
//!   equals `seen`. So a job published between the load and the wait makes the wait return at
//!   once: the check and the sleep are atomic with respect to the increment.
//! * Completion uses the same idea on a countdown: the last worker to finish decrements it to
//!   zero and wakes the dispatcher, which only sleeps while the count it read is still current.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::futex;

/// Bits of the epoch word that carry a payload published with the epoch.
pub const PAYLOAD_BITS: u32 = 10;
/// Largest payload [`EpochParker::advance`] accepts.
pub const MAX_PAYLOAD: u32 = (1 << PAYLOAD_BITS) - 1;

/// A counter workers sleep on until it moves past the value they last saw.
///
/// The word is `epoch << PAYLOAD_BITS | payload`: publishing a small payload (the pool uses the
/// number of workers that take part) in the same atomic store as the epoch means a worker that
/// wakes late can never pair one epoch with another epoch's payload.
#[derive(Debug, Default)]
pub struct EpochParker {
    word: AtomicU32,
}

impl EpochParker {
    /// Current epoch word.
    pub fn current(&self) -> u32 {
        // Acquire pairs with the Release store in `advance`: the job is visible.
        self.word.load(Ordering::Acquire)
    }

    /// Block until the epoch word differs from `seen`; returns the new word. `bit` is the
    /// caller's futex bit ([`worker_bit`]): only an advance that names it wakes the caller,
    /// though any advance that happened before the caller sleeps is seen at once.
    pub fn wait_past(&self, seen: u32, bit: u32) -> u32 {
        loop {
            let now = self.current();
            if now != seen {
                return now;
            }
            futex::wait_bitset(&self.word, seen, bit);
        }
    }

    /// Payload carried by an epoch word.
    pub fn payload(word: u32) -> u32 {
        word & MAX_PAYLOAD
    }

    /// Publish a new epoch carrying `payload` (at most [`MAX_PAYLOAD`]) and wake the waiters
    /// whose bits are in `wake_bits`. Only one thread may advance at a time.
    pub fn advance(&self, payload: u32, wake_bits: u32) {
        assert!(payload <= MAX_PAYLOAD, "epoch payload too large");
        let old = self.word.load(Ordering::Relaxed);
        let next = ((old >> PAYLOAD_BITS).wrapping_add(1) << PAYLOAD_BITS) | payload;
        // Release pairs with the Acquire in `current`, publishing everything written before.
        self.word.store(next, Ordering::Release);
        futex::wake_bitset(&self.word, u32::MAX, wake_bits);
    }
}

/// The futex bit worker `id` sleeps with: its own for ids below 31, a shared one above.
pub fn worker_bit(id: usize) -> u32 {
    1 << id.min(31)
}

/// The futex bits of workers `0..n`: what an advance for `n` participants wakes.
pub fn participant_bits(n: usize) -> u32 {
    if n >= 32 {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// A countdown the dispatcher sleeps on until every participant has checked in.
#[derive(Debug, Default)]
pub struct Countdown {
    remaining: AtomicU32,
}

impl Countdown {
    /// Arm the countdown for `n` participants (nobody may be counting down yet).
    pub fn arm(&self, n: u32) {
        self.remaining.store(n, Ordering::Relaxed);
    }

    /// One participant is done; the last one wakes the waiter.
    pub fn count_down(&self) {
        // AcqRel: Release publishes this participant's work; Acquire chains the others'.
        if self.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            futex::wake(&self.remaining, 1);
        }
    }

    /// Block until the count reaches zero.
    pub fn wait_zero(&self) {
        loop {
            // Acquire pairs with the AcqRel decrements: all participants' writes are visible.
            let r = self.remaining.load(Ordering::Acquire);
            if r == 0 {
                return;
            }
            futex::wait(&self.remaining, r, None);
        }
    }
}
