//! The termination protocol: deciding, without a lock, that every worker's deque is empty.
//!
//! This is the `live` variant of 000 §4.2: the terminator counts the workers that have offered
//! termination, so the number still working (`N_live`) is known; workers only try to steal
//! from live workers and enter termination after `2·N_live` consecutive failed steals.
//!
//! Why it is correct: a worker offers only when its own deque is empty, and only the owner
//! pushes to a deque, so once all `n` workers have offered no item exists anywhere. A worker
//! that sees work while waiting withdraws its offer with a CAS that fails if the count already
//! reached `n`; hence once `n` is reached it stays reached and every worker returns `true`.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use super::stats::WorkerPhaseStats;

/// Spin rounds (each doubling) before a waiting worker starts yielding its CPU.
const SPIN_ROUNDS: u32 = 6;
/// Yields before a waiting worker starts sleeping between peeks.
const YIELDS_BEFORE_SLEEP: u32 = 500;
/// Sleep between peeks once spinning and yielding found nothing.
const SLEEP: Duration = Duration::from_micros(50);

/// Shared state of one phase's termination protocol.
pub struct Terminator {
    n: usize,
    offered: CachePadded<AtomicUsize>,
    in_termination: Box<[CachePadded<AtomicBool>]>,
}

impl Terminator {
    /// A protocol for `n` workers, none of them offering yet.
    pub fn new(n: usize) -> Self {
        Self {
            n,
            offered: CachePadded::new(AtomicUsize::new(0)),
            in_termination: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
        }
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.n
    }

    /// Workers not currently inside the protocol (`N_live`, at least 1).
    pub fn live_workers(&self) -> usize {
        self.n
            .saturating_sub(self.offered.load(Ordering::Relaxed))
            .max(1)
    }

    /// Whether worker `w` is outside the protocol (a useful steal victim).
    pub fn is_live(&self, w: usize) -> bool {
        !self.in_termination[w].load(Ordering::Relaxed)
    }

    /// Consecutive failed steals after which a worker offers termination (`2·N_live`).
    pub fn failure_threshold(&self) -> usize {
        2 * self.live_workers()
    }

    /// Offer termination for worker `me`. Returns `true` when all workers are done, `false`
    /// when `work_visible()` saw work and the offer was withdrawn (go back to stealing).
    pub fn offer_termination(
        &self,
        me: usize,
        work_visible: impl Fn() -> bool,
        stats: &mut WorkerPhaseStats,
    ) -> bool {
        let start = Instant::now();
        stats.termination_entries += 1;
        self.in_termination[me].store(true, Ordering::Relaxed);
        // SeqCst: the offer must be ordered before our peeks at other deques, and other
        // workers' pushes are ordered before their own offers (Dekker-style handshake).
        self.offered.fetch_add(1, Ordering::SeqCst);
        let mut round = 0u32;
        let result = loop {
            if self.offered.load(Ordering::SeqCst) == self.n {
                break true;
            }
            if work_visible() {
                if self.withdraw() {
                    stats.termination_exits += 1;
                    break false;
                }
                break true;
            }
            if round < SPIN_ROUNDS {
                for _ in 0..(1u32 << round) {
                    std::hint::spin_loop();
                }
            } else if round < SPIN_ROUNDS + YIELDS_BEFORE_SLEEP {
                std::thread::yield_now();
            } else {
                std::thread::sleep(SLEEP);
            }
            round = round.saturating_add(1);
        };
        if !result {
            self.in_termination[me].store(false, Ordering::Relaxed);
        }
        stats.termination_ns += start.elapsed().as_nanos() as u64;
        result
    }

    /// Take back an offer unless termination was already reached. Returns whether it was taken
    /// back.
    fn withdraw(&self) -> bool {
        let mut current = self.offered.load(Ordering::SeqCst);
        loop {
            if current == self.n {
                return false;
            }
            // SeqCst: as in `offer_termination`, the count is the single point of agreement.
            match self.offered.compare_exchange(
                current,
                current - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_idle_workers_terminate_together() {
        let t = Terminator::new(4);
        std::thread::scope(|s| {
            for me in 0..4 {
                let t = &t;
                s.spawn(move || {
                    let mut st = WorkerPhaseStats::default();
                    assert!(t.offer_termination(me, || false, &mut st));
                    assert_eq!(st.termination_entries, 1);
                });
            }
        });
    }

    #[test]
    fn visible_work_withdraws_an_offer() {
        let t = Terminator::new(2);
        let mut st = WorkerPhaseStats::default();
        assert!(!t.offer_termination(0, || true, &mut st));
        assert_eq!(st.termination_exits, 1);
        assert_eq!(t.live_workers(), 2);
        assert!(t.is_live(0));
    }

    #[test]
    fn single_worker_terminates_at_once() {
        let t = Terminator::new(1);
        let mut st = WorkerPhaseStats::default();
        assert!(t.offer_termination(0, || true, &mut st));
    }
}
