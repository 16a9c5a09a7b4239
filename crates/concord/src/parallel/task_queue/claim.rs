//! `claim` (HotSpot 17+): no shared queue and no lock. A worker takes the next unclaimed task
//! with one atomic increment. Old-to-young card stripes are assigned statically: stripe `j`
//! belongs to worker `j mod N` and no other worker runs it. With task affinity, a worker first
//! takes the tasks tagged with it, then shared ones, then other workers' tagged ones.

use super::{Affinity, RootTask};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The `claim` discipline's lists: static stripes and preferred tasks per worker (each with a
/// cursor only its worker advances), and one shared list claimed by atomic increment.
pub(super) struct ClaimLists {
    statics: Vec<Vec<usize>>,
    static_next: Vec<AtomicUsize>,
    preferred: Vec<Vec<usize>>,
    shared: Vec<usize>,
    shared_next: AtomicUsize,
    /// Preferred tasks can be taken by other workers once theirs run out: claimed by swap.
    taken: Vec<AtomicBool>,
}

impl ClaimLists {
    /// Lists for `tasks` among `workers` workers; `affinity` says whether tasks tagged with a
    /// preferred worker go to that worker's list first (stripes always go to theirs).
    pub(super) fn new<R>(tasks: &[RootTask<R>], workers: usize, affinity: bool) -> Self {
        let mut lists = Self::empty(tasks.len(), workers);
        for (i, t) in tasks.iter().enumerate() {
            match (t.affinity, t.affinity.worker_among(workers)) {
                (Affinity::Stripe(_), Some(w)) => lists.statics[w].push(i),
                (Affinity::Prefers(_), Some(w)) if affinity => lists.preferred[w].push(i),
                _ => lists.shared.push(i),
            }
        }
        lists
    }

    fn empty(tasks: usize, workers: usize) -> Self {
        Self {
            statics: vec![Vec::new(); workers],
            static_next: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            preferred: vec![Vec::new(); workers],
            shared: Vec::new(),
            shared_next: AtomicUsize::new(0),
            taken: (0..tasks).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    pub(super) fn claim(&self, worker: usize) -> Option<usize> {
        let workers = self.statics.len();
        let me = worker.min(workers - 1);
        // Relaxed everywhere: an index is only a claim; task contents were published before the
        // phase began (the pool's start is the synchronisation point).
        let i = self.static_next[me].fetch_add(1, Ordering::Relaxed);
        if let Some(&t) = self.statics[me].get(i) {
            return Some(t);
        }
        let take = |t: usize| !self.taken[t].swap(true, Ordering::Relaxed);
        if let Some(&t) = self.preferred[me].iter().find(|&&t| take(t)) {
            return Some(t);
        }
        let i = self.shared_next.fetch_add(1, Ordering::Relaxed);
        if let Some(&t) = self.shared.get(i) {
            return Some(t);
        }
        (1..workers)
            .flat_map(|k| self.preferred[(me + k) % workers].iter())
            .copied()
            .find(|&t| take(t))
    }
}
