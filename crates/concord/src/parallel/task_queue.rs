//! Handing root tasks to workers.
//!
//! This is the `claim` discipline of HotSpot 17+: no shared queue and no lock, a worker takes
//! the next unclaimed root task with one atomic increment. The other disciplines of DESIGN.md
//! (the unfair monitor queue, the lock-free Michael–Scott queue, task affinity) implement the
//! same [`RootTaskSource`] trait.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Where workers get root tasks from during a phase.
pub trait RootTaskSource<T>: Sync {
    /// The next task for `worker`, or `None` when all root tasks are taken.
    fn get_task(&self, worker: usize) -> Option<&T>;
}

/// Atomic claiming over a fixed list of root tasks.
pub struct ClaimQueue<T> {
    tasks: Vec<T>,
    next: AtomicUsize,
}

impl<T> ClaimQueue<T> {
    /// A queue over `tasks`, none claimed yet.
    pub fn new(tasks: Vec<T>) -> Self {
        Self {
            tasks,
            next: AtomicUsize::new(0),
        }
    }
}

impl<T: Sync> RootTaskSource<T> for ClaimQueue<T> {
    fn get_task(&self, _worker: usize) -> Option<&T> {
        // Relaxed: the index is the claim; task contents were published before the phase began.
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        self.tasks.get(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_is_claimed_exactly_once() {
        let q = ClaimQueue::new((0..1000).collect::<Vec<u32>>());
        let mut got: Vec<u32> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|w| {
                    let q = &q;
                    s.spawn(move || {
                        std::iter::from_fn(|| q.get_task(w).copied()).collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        got.sort_unstable();
        assert_eq!(got, (0..1000).collect::<Vec<u32>>());
    }
}
