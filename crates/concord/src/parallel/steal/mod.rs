//! Choosing a steal victim, under one of the three [`StealPolicy`] switches, one file each.
//!
//! Every policy draws two candidate deques and steals from the longer one (ties go to the first
//! candidate); what differs is where the candidates come from and what is remembered between
//! attempts:
//!
//! * [`best_of_two`] (OpenJDK 8 `steal_best_of_2`, 000 §2.3): both candidates are uniformly
//!   random among all other workers, whether or not they are inside the termination protocol.
//!   Nothing is remembered.
//! * [`last_victim`] (HotSpot 17+): the first candidate is the last worker a steal succeeded
//!   from — even if its deque now looks empty — and the second is random among the others.
//! * [`adaptive`] (000 Algorithm 2): candidates are drawn only among live workers (those not
//!   inside the termination protocol, [`Terminator::is_live`]); the remembered victim replaces
//!   the second random draw for as long as its deque is non-empty.
//!
//! With two workers there is a single candidate (the other worker); with one there is none.
//!
//! Under the `segregated` NUMA layout (004 §3.2.3) the engine restricts every policy to the
//! workers of the thief's own node by handing it a [`VictimQueues`] that lists only those; the
//! policies themselves are unchanged and see `count()` candidates numbered among themselves.

pub mod adaptive;
pub mod best_of_two;
pub mod last_victim;

use super::policy::StealPolicy;
use super::rng::XorShift;
use super::termination::Terminator;

/// Queue lengths as seen by a thief.
pub trait VictimQueues {
    /// Number of deques (one per worker).
    fn count(&self) -> usize;
    /// Approximate length of worker `w`'s deque.
    fn len(&self, w: usize) -> usize;
    /// The worker id of candidate `w`, for asking the termination protocol whether it is live.
    /// The identity unless the queues are a subset of the workers (segregated stealing, where a
    /// thief sees only the workers of its node, numbered `0..count` among themselves).
    fn worker(&self, w: usize) -> usize {
        w
    }
}

/// Per-worker victim selection state for one parallel phase.
#[derive(Clone, Debug)]
pub struct VictimSelector {
    policy: StealPolicy,
    last_victim: Option<usize>,
    rng: XorShift,
    /// Workers whose liveness this selector has looked up (adaptive stealing's cost).
    live_lookups: u64,
}

impl VictimSelector {
    /// Fresh state for one worker, nothing remembered yet.
    pub fn new(policy: StealPolicy, seed: u64) -> Self {
        Self {
            policy,
            last_victim: None,
            rng: XorShift::new(seed),
            live_lookups: 0,
        }
    }

    /// How many workers' liveness ([`Terminator::is_live`]) this selector has looked up so far:
    /// what `adaptive` stealing pays for its candidates.
    pub fn live_lookups(&self) -> u64 {
        self.live_lookups
    }

    /// The policy this selector follows.
    pub fn policy(&self) -> StealPolicy {
        self.policy
    }

    /// Pick the deque worker `me` should steal from, or `None` when the candidates drawn are
    /// all empty (or there is nobody else). Never returns `me`. The caller must report a
    /// successful steal with [`record_success`](Self::record_success).
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
        match self.policy {
            StealPolicy::BestOf2 => best_of_two::select(self, me, queues),
            StealPolicy::LastVictim => last_victim::select(self, me, queues),
            StealPolicy::Adaptive => adaptive::select(self, me, queues, term),
        }
    }

    /// A steal from `victim` succeeded.
    pub fn record_success(&mut self, victim: usize) {
        self.last_victim = Some(victim);
    }

    /// Forget the remembered victim (on entering termination).
    pub fn forget(&mut self) {
        self.last_victim = None;
    }

    /// `steal_best_of_2` with `first` as the first candidate: the second is random among
    /// workers other than `me` and `first` (or `first` again with two workers), and the longer
    /// deque wins.
    fn best_of_two(
        &mut self,
        me: usize,
        queues: &impl VictimQueues,
        first: usize,
    ) -> Option<usize> {
        let n = queues.count();
        let second = if n > 2 {
            self.random_other(n, me, Some(first))
        } else {
            first
        };
        longer(queues, first, second)
    }

    /// Uniform among `0..n` minus `me` and `avoid` (which must leave at least one choice).
    fn random_other(&mut self, n: usize, me: usize, avoid: Option<usize>) -> usize {
        match avoid {
            Some(a) if a != me => {
                let (lo, hi) = if a < me { (a, me) } else { (me, a) };
                let mut r = self.rng.below(n - 2);
                if r >= lo {
                    r += 1;
                }
                if r >= hi {
                    r += 1;
                }
                r
            }
            _ => {
                let r = self.rng.below(n - 1);
                if r >= me {
                    r + 1
                } else {
                    r
                }
            }
        }
    }
}

/// The longer of the two candidates' deques (`a` on ties), or `None` if both are empty.
fn longer(queues: &impl VictimQueues, a: usize, b: usize) -> Option<usize> {
    let (la, lb) = (queues.len(a), queues.len(b));
    if lb > la {
        Some(b)
    } else if la > 0 {
        Some(a)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::adaptive::random_live as random_live_for_test;
    use super::*;
    use crate::parallel::policy::TerminationKind;

    struct Lens(Vec<usize>);
    impl VictimQueues for Lens {
        fn count(&self) -> usize {
            self.0.len()
        }
        fn len(&self, w: usize) -> usize {
            self.0[w]
        }
    }

    fn term(n: usize) -> Terminator {
        Terminator::new(TerminationKind::Live, n)
    }

    #[test]
    fn never_selects_self_and_prefers_the_longer_queue() {
        for &policy in StealPolicy::ALL {
            let t = term(4);
            let mut v = VictimSelector::new(policy, 1);
            assert_eq!(v.policy(), policy);
            // Everybody's own deque is the longest; only one other worker has work.
            for me in 0..4 {
                let mut lens = vec![0; 4];
                lens[me] = 100;
                let other = (me + 3) % 4;
                lens[other] = 5;
                let q = Lens(lens);
                let mut hits = 0;
                for _ in 0..400 {
                    if let Some(w) = v.select(me, &q, &t) {
                        assert_ne!(w, me, "{policy}");
                        assert_eq!(w, other, "{policy}: only {other} has work besides me");
                        v.record_success(w);
                        hits += 1;
                    }
                }
                assert!(hits > 0, "{policy}");
                v.forget();
            }
        }
    }

    #[test]
    fn the_longer_of_two_candidates_wins() {
        // Three workers: me = 0, candidates are always 1 and 2 (in some order).
        let q = Lens(vec![0, 3, 7]);
        let t = term(3);
        for &policy in StealPolicy::ALL {
            let mut v = VictimSelector::new(policy, 11);
            for _ in 0..200 {
                assert_eq!(v.select(0, &q, &t), Some(2), "{policy}");
                v.forget();
            }
        }
    }

    #[test]
    fn empty_everywhere_fails_and_single_worker_has_no_victim() {
        for &policy in StealPolicy::ALL {
            let mut v = VictimSelector::new(policy, 9);
            v.record_success(2);
            assert_eq!(v.select(1, &Lens(vec![0, 0, 0]), &term(3)), None);
            if policy != StealPolicy::BestOf2 {
                assert_eq!(v.last_victim, None, "{policy}: a failed attempt forgets");
            }
            assert_eq!(v.select(0, &Lens(vec![5]), &term(1)), None);
        }
    }

    #[test]
    fn two_workers_have_exactly_one_candidate() {
        for &policy in StealPolicy::ALL {
            let t = term(2);
            let mut v = VictimSelector::new(policy, 5);
            for _ in 0..50 {
                assert_eq!(v.select(0, &Lens(vec![9, 1]), &t), Some(1), "{policy}");
                assert_eq!(v.select(1, &Lens(vec![1, 9]), &t), Some(0), "{policy}");
                assert_eq!(v.select(1, &Lens(vec![0, 9]), &t), None, "{policy}");
            }
        }
    }

    #[test]
    fn best_of_2_also_picks_workers_inside_termination() {
        let t = term(4);
        for w in [1, 2, 3] {
            t.set_in_termination_for_test(w, true);
        }
        let q = Lens(vec![0, 4, 4, 4]);
        let mut v = VictimSelector::new(StealPolicy::BestOf2, 3);
        let mut seen = [0usize; 4];
        for _ in 0..600 {
            seen[v.select(0, &q, &t).expect("all others have work")] += 1;
        }
        assert_eq!(seen[0], 0);
        assert!(seen[1..].iter().all(|&c| c > 0), "{seen:?}");
        // The same situation under the adaptive policy finds no live victim at all.
        let mut a = VictimSelector::new(StealPolicy::Adaptive, 3);
        assert_eq!(a.select(0, &q, &t), None);
    }

    #[test]
    fn adaptive_never_picks_a_terminating_worker_while_a_live_one_exists() {
        let n = 8;
        let t = term(n);
        // Only worker 6 (and me, 0) are live; everyone has the same amount of work.
        for w in 1..n {
            if w != 6 {
                t.set_in_termination_for_test(w, true);
            }
        }
        let q = Lens(vec![3; n]);
        let mut v = VictimSelector::new(StealPolicy::Adaptive, 17);
        for _ in 0..500 {
            assert_eq!(v.select(0, &q, &t), Some(6));
        }
        // The remembered victim is used while non-empty, even if it is inside termination
        // (its deque is what matters), and forgotten once both candidates are empty.
        let mut q = Lens(vec![0, 0, 0, 9, 0, 0, 0, 0]);
        v.record_success(3);
        for _ in 0..50 {
            assert_eq!(v.select(0, &q, &t), Some(3));
        }
        q.0[3] = 0;
        assert_eq!(v.select(0, &q, &t), None);
        assert_eq!(v.last_victim, None);
    }

    #[test]
    fn adaptive_looks_at_few_workers_while_many_are_live() {
        // 1000 workers, one in four live (outside termination). Random draws find a live one
        // after four looks on average; the scan of all 1000 is needed about once in 10,000
        // candidates. (Before: two draws, then two scans, more than 2000 looks per pick.)
        let n = 1000;
        let t = term(n);
        for w in (1..n).filter(|w| w % 4 != 0) {
            t.set_in_termination_for_test(w, true);
        }
        let q = Lens(vec![1; n]);
        let mut v = VictimSelector::new(StealPolicy::Adaptive, 33);
        let picks = 2000;
        for _ in 0..picks {
            let w = v.select(0, &q, &t).expect("live workers have work");
            assert_eq!(w % 4, 0, "picked {w}, inside termination");
            v.forget();
        }
        let per_pick = v.live_lookups() / picks;
        assert!(per_pick < 40, "{per_pick} liveness look-ups per pick");
    }

    #[test]
    fn adaptive_with_few_workers_and_none_live_draws_no_more_than_it_scans() {
        // The usual end of a phase on a small machine: every other worker is terminating.
        // Drawing more candidates than there are workers would only delay the scan.
        let n = 4;
        let t = term(n);
        for w in 1..n {
            t.set_in_termination_for_test(w, true);
        }
        let q = Lens(vec![1; n]);
        let mut v = VictimSelector::new(StealPolicy::Adaptive, 5);
        assert_eq!(v.select(0, &q, &t), None);
        // Two candidates, each at most n draws and a scan of n (32 draws each before).
        assert!(v.live_lookups() <= 4 * n as u64, "{}", v.live_lookups());
    }

    #[test]
    fn adaptive_finds_the_few_live_workers_among_many_uniformly() {
        // 1000 workers, all but three inside termination: the random draws mostly miss and
        // the scan must still pick uniformly among the live ones (never a terminating one).
        let n = 1000;
        let t = term(n);
        let live = [3, 500, 997];
        for w in (1..n).filter(|w| !live.contains(w)) {
            t.set_in_termination_for_test(w, true);
        }
        let q = Lens(vec![1; n]);
        let mut v = VictimSelector::new(StealPolicy::Adaptive, 21);
        let mut picks = std::collections::HashMap::new();
        for _ in 0..3000 {
            let first = random_live_for_test(&mut v, n, 0, None, &t);
            *picks.entry(first.expect("three live workers")).or_insert(0) += 1;
            let w = v.select(0, &q, &t).expect("live workers have work");
            assert!(live.contains(&w), "picked {w}, inside termination");
        }
        assert_eq!(picks.len(), 3, "{picks:?}");
        assert!(picks.values().all(|&c| c > 800), "not uniform: {picks:?}");
    }

    #[test]
    fn adaptive_remembers_a_non_empty_pick_even_if_the_steal_fails() {
        // 000 Algorithm 2 line 7: q_s = q as soon as the pick is non-empty.
        let t = term(8);
        let q = Lens(vec![0, 0, 0, 0, 0, 0, 4, 0]);
        let mut v = VictimSelector::new(StealPolicy::Adaptive, 5);
        let first = loop {
            if let Some(w) = v.select(0, &q, &t) {
                break w;
            }
        };
        assert_eq!(first, 6);
        assert_eq!(v.last_victim, Some(6), "remembered without record_success");
        for _ in 0..50 {
            assert_eq!(v.select(0, &q, &t), Some(6));
        }
    }

    #[test]
    fn last_victim_is_tried_first_even_when_it_looks_empty() {
        let n = 8;
        let t = term(n);
        // Ties go to the first candidate, which is the remembered victim.
        let q = Lens(vec![2; n]);
        let mut v = VictimSelector::new(StealPolicy::LastVictim, 23);
        for _ in 0..200 {
            v.record_success(5);
            assert_eq!(v.select(0, &q, &t), Some(5));
        }
        // Random best-of-2 spreads over everybody on the same queues.
        let mut b = VictimSelector::new(StealPolicy::BestOf2, 23);
        b.record_success(5);
        let others = (0..200).filter(|_| b.select(0, &q, &t) != Some(5)).count();
        assert!(others > 0);
        // An empty remembered victim is still a candidate, but loses to a longer queue.
        let q = Lens(vec![0, 0, 0, 0, 0, 0, 0, 4]);
        let mut got = 0;
        for _ in 0..200 {
            v.record_success(5);
            match v.select(0, &q, &t) {
                Some(w) => {
                    assert_eq!(w, 7);
                    got += 1;
                }
                None => assert_eq!(v.last_victim, None, "failed attempt forgets"),
            }
        }
        assert!(got > 0);
    }

    #[test]
    fn last_victim_is_forgotten_unless_the_steal_succeeds() {
        let t = term(8);
        let q = Lens(vec![0, 0, 0, 0, 0, 6, 0, 0]);
        let mut v = VictimSelector::new(StealPolicy::LastVictim, 41);
        v.record_success(5);
        assert_eq!(v.select(0, &q, &t), Some(5));
        // The caller's steal lost the race (no record_success): the next attempt is random.
        assert_eq!(v.last_victim, None);
        let misses = (0..300).filter(|_| v.select(0, &q, &t).is_none()).count();
        assert!(
            misses > 0,
            "random candidates should miss worker 5 sometimes"
        );
    }

    #[test]
    fn best_of_2_eventually_picks_every_other_worker_uniformly() {
        let n = 6;
        let t = term(n);
        let q = Lens(vec![1; n]);
        for me in 0..n {
            let mut v = VictimSelector::new(StealPolicy::BestOf2, 1000 + me as u64);
            let mut seen = vec![0usize; n];
            let draws = 5000;
            for _ in 0..draws {
                seen[v.select(me, &q, &t).unwrap()] += 1;
            }
            assert_eq!(seen[me], 0);
            let expect = draws / (n - 1);
            for (w, &c) in seen.iter().enumerate() {
                if w != me {
                    assert!(c > expect / 2 && c < expect * 2, "me={me} {seen:?}");
                }
            }
        }
    }

    #[test]
    fn random_other_avoids_both_excluded_workers() {
        let mut v = VictimSelector::new(StealPolicy::BestOf2, 77);
        for n in 3..10 {
            for me in 0..n {
                for avoid in 0..n {
                    if avoid == me {
                        continue;
                    }
                    let mut seen = vec![false; n];
                    for _ in 0..40 * n {
                        let w = v.random_other(n, me, Some(avoid));
                        assert!(w < n && w != me && w != avoid);
                        seen[w] = true;
                    }
                    assert_eq!(seen.iter().filter(|&&s| s).count(), n - 2);
                }
            }
        }
    }
}
