//! Choosing a steal victim: the adaptive semi-random policy of 000 Algorithm 2.
//!
//! One candidate is random among live workers (those not in the termination protocol); the
//! other is the last victim a steal succeeded from, while its deque is non-empty, else another
//! random live worker. The longer of the two deques is the victim; if both are empty the
//! remembered victim is forgotten and the attempt fails.

use super::rng::XorShift;
use super::termination::Terminator;

/// Queue lengths as seen by a thief.
pub trait VictimQueues {
    /// Number of deques (one per worker).
    fn count(&self) -> usize;
    /// Approximate length of worker `w`'s deque.
    fn len(&self, w: usize) -> usize;
}

/// Per-worker state of the adaptive semi-random victim selection.
#[derive(Clone, Debug)]
pub struct AdaptiveVictim {
    last_victim: Option<usize>,
    rng: XorShift,
}

impl AdaptiveVictim {
    /// Fresh state for one worker.
    pub fn new(seed: u64) -> Self {
        Self {
            last_victim: None,
            rng: XorShift::new(seed),
        }
    }

    /// Pick a victim for worker `me`, or `None` if both candidates are empty.
    pub fn select(
        &mut self,
        me: usize,
        queues: &impl VictimQueues,
        term: &Terminator,
    ) -> Option<usize> {
        let n = queues.count();
        if n < 2 {
            return None;
        }
        let q1 = self.random_live(me, n, term, None);
        let q2 = match self.last_victim {
            Some(v) if v != me && queues.len(v) > 0 => v,
            _ => self.random_live(me, n, term, Some(q1)),
        };
        let (l1, l2) = (queues.len(q1), queues.len(q2));
        if l1 == 0 && l2 == 0 {
            self.last_victim = None;
            return None;
        }
        Some(if l1 >= l2 { q1 } else { q2 })
    }

    /// Remember a victim a steal succeeded from.
    pub fn record_success(&mut self, victim: usize) {
        self.last_victim = Some(victim);
    }

    /// Forget the remembered victim (on entering termination).
    pub fn forget(&mut self) {
        self.last_victim = None;
    }

    fn random_live(
        &mut self,
        me: usize,
        n: usize,
        term: &Terminator,
        avoid: Option<usize>,
    ) -> usize {
        let mut pick = me;
        for _ in 0..n {
            // Uniform over the other n-1 workers.
            let r = self.rng.below(n - 1);
            pick = if r >= me { r + 1 } else { r };
            if term.is_live(pick) && Some(pick) != avoid {
                return pick;
            }
        }
        pick
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Lens(Vec<usize>);
    impl VictimQueues for Lens {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn len(&self, w: usize) -> usize {
            self.0[w]
        }
    }

    #[test]
    fn never_selects_self_and_prefers_longer_queue() {
        let term = Terminator::new(4);
        let mut v = AdaptiveVictim::new(1);
        let q = Lens(vec![100, 0, 0, 5]);
        for _ in 0..200 {
            if let Some(w) = v.select(0, &q, &term) {
                assert_ne!(w, 0);
                assert_eq!(w, 3, "only worker 3 has work besides me");
            }
        }
    }

    #[test]
    fn remembered_victim_is_reused_while_non_empty() {
        let term = Terminator::new(8);
        let mut v = AdaptiveVictim::new(3);
        let mut q = Lens(vec![0, 0, 0, 0, 0, 9, 0, 0]);
        v.record_success(5);
        for _ in 0..50 {
            assert_eq!(v.select(0, &q, &term), Some(5));
        }
        q.0[5] = 0;
        assert_eq!(v.select(0, &q, &term), None);
    }

    #[test]
    fn empty_everywhere_fails() {
        let term = Terminator::new(3);
        let mut v = AdaptiveVictim::new(9);
        assert_eq!(v.select(1, &Lens(vec![0, 0, 0]), &term), None);
        assert_eq!(v.select(0, &Lens(vec![0]), &term), None);
    }
}
