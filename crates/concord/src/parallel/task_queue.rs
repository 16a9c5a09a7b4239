//! Handing root tasks to workers: the three task-queue disciplines of DESIGN.md and task
//! affinity.
//!
//! * `monitor` (OpenJDK 8): one FIFO of tasks behind the unfair [`Monitor`]; every `get_task`
//!   takes the lock, so a worker that keeps barging back can drain the queue alone (000 §3.2).
//! * `claim` (HotSpot 17+): no shared queue and no lock; a worker takes the next unclaimed task
//!   with one atomic increment. Old-to-young card stripes are assigned statically: stripe `j`
//!   belongs to worker `j mod N` and no other worker runs it.
//! * `lockfree` (004 §3.1.1): a Michael–Scott queue filled by the dispatcher before the phase
//!   and dequeued with CAS.
//!
//! With task affinity on (000 §4.1), a task tagged with a worker is handed to that worker first;
//! a worker with no tagged task left falls back to any task, so no task waits for its worker.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::monitor::Monitor;
use super::ms_queue::MsQueue;
use super::policy::TaskQueueKind;

/// Which worker a root task is meant for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affinity {
    /// Anyone.
    Any,
    /// Preferably this worker (honoured only with task affinity on).
    Prefers(usize),
    /// A card stripe of this worker: `claim` assigns it statically (only this worker runs it);
    /// the other disciplines treat it as a preference.
    Stripe(usize),
}

impl Affinity {
    fn worker(self) -> Option<usize> {
        match self {
            Affinity::Any => None,
            Affinity::Prefers(w) | Affinity::Stripe(w) => Some(w),
        }
    }
}

/// A root task and the worker it is meant for.
#[derive(Clone, Debug)]
pub struct RootTask<R> {
    /// What to do.
    pub root: R,
    /// For whom.
    pub affinity: Affinity,
}

impl<R> RootTask<R> {
    /// A task for anyone.
    pub fn any(root: R) -> Self {
        Self {
            root,
            affinity: Affinity::Any,
        }
    }
}

/// Where workers get root tasks from during a phase.
pub trait RootTaskSource<T>: Sync {
    /// The next task for `worker`, or `None` when there is none left for it.
    fn get_task(&self, worker: usize) -> Option<&T>;
}

/// One phase's root tasks under the configured discipline.
pub struct TaskSource<R> {
    tasks: Vec<RootTask<R>>,
    kind: SourceKind,
}

enum SourceKind {
    Claim(ClaimLists),
    Monitor {
        queue: Monitor<VecDeque<usize>>,
        affinity: bool,
    },
    LockFree {
        /// `queues[w]` holds tasks preferring worker `w`; the last queue holds the rest.
        queues: Vec<MsQueue<usize>>,
    },
}

impl<R: Sync> TaskSource<R> {
    /// Hand `tasks` to `workers` workers under `kind`, honouring affinity if `affinity`.
    pub fn new(
        kind: TaskQueueKind,
        affinity: bool,
        tasks: Vec<RootTask<R>>,
        workers: usize,
    ) -> Self {
        let workers = workers.max(1);
        // A tag beyond the active workers (fewer workers this collection) is folded in range.
        let owner = |t: &RootTask<R>| t.affinity.worker().map(|w| w % workers);
        let kind = match kind {
            TaskQueueKind::Claim => {
                let mut lists = ClaimLists::new(tasks.len(), workers);
                for (i, t) in tasks.iter().enumerate() {
                    match (t.affinity, owner(t)) {
                        (Affinity::Stripe(_), Some(w)) => lists.statics[w].push(i),
                        (Affinity::Prefers(_), Some(w)) if affinity => lists.preferred[w].push(i),
                        _ => lists.shared.push(i),
                    }
                }
                SourceKind::Claim(lists)
            }
            TaskQueueKind::Monitor => SourceKind::Monitor {
                queue: Monitor::new((0..tasks.len()).collect()),
                affinity,
            },
            TaskQueueKind::LockFree => {
                let mut queues: Vec<MsQueue<usize>> =
                    (0..=workers).map(|_| MsQueue::new()).collect();
                for (i, t) in tasks.iter().enumerate() {
                    let q = if affinity {
                        owner(t).unwrap_or(workers)
                    } else {
                        workers
                    };
                    queues[q].enqueue(i);
                }
                SourceKind::LockFree { queues }
            }
        };
        Self { tasks, kind }
    }

    /// Number of root tasks in the phase.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the phase has no root tasks.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    fn index_for(&self, worker: usize) -> Option<usize> {
        match &self.kind {
            SourceKind::Claim(lists) => lists.claim(worker),
            SourceKind::Monitor { queue, affinity } => {
                let mut q = queue.lock();
                let pick = if *affinity {
                    q.iter()
                        .position(|&i| self.tasks[i].affinity.worker() == Some(worker))
                        .unwrap_or(0)
                } else {
                    0
                };
                q.remove(pick)
            }
            SourceKind::LockFree { queues } => {
                let workers = queues.len() - 1;
                let own = worker.min(workers);
                // Own tagged tasks, then untagged ones, then other workers' tagged tasks.
                std::iter::once(own)
                    .chain(std::iter::once(workers))
                    .chain((1..workers).map(|k| (own + k) % workers))
                    .find_map(|q| queues[q].dequeue().copied())
            }
        }
    }
}

impl<R: Sync> RootTaskSource<R> for TaskSource<R> {
    fn get_task(&self, worker: usize) -> Option<&R> {
        self.index_for(worker).map(|i| &self.tasks[i].root)
    }
}

/// The `claim` discipline's lists: static stripes and preferred tasks per worker (each with a
/// cursor only its worker advances), and one shared list claimed by atomic increment.
struct ClaimLists {
    statics: Vec<Vec<usize>>,
    static_next: Vec<AtomicUsize>,
    preferred: Vec<Vec<usize>>,
    shared: Vec<usize>,
    shared_next: AtomicUsize,
    /// Preferred tasks can be taken by other workers once theirs run out: claimed by swap.
    taken: Vec<AtomicBool>,
}

impl ClaimLists {
    fn new(tasks: usize, workers: usize) -> Self {
        Self {
            statics: vec![Vec::new(); workers],
            static_next: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            preferred: vec![Vec::new(); workers],
            shared: Vec::new(),
            shared_next: AtomicUsize::new(0),
            taken: (0..tasks).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    fn claim(&self, worker: usize) -> Option<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(n: usize, workers: usize) -> Vec<RootTask<usize>> {
        (0..n)
            .map(|i| RootTask {
                root: i,
                affinity: match i % 3 {
                    0 => Affinity::Any,
                    1 => Affinity::Prefers(i % workers),
                    _ => Affinity::Stripe(i % (workers + 1)),
                },
            })
            .collect()
    }

    fn drain_concurrently(source: &TaskSource<usize>, workers: usize) -> Vec<Vec<usize>> {
        std::thread::scope(|s| {
            let hs: Vec<_> = (0..workers)
                .map(|w| {
                    s.spawn(move || std::iter::from_fn(|| source.get_task(w).copied()).collect())
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn every_task_is_handed_out_exactly_once_under_every_discipline() {
        for kind in TaskQueueKind::ALL {
            for affinity in [false, true] {
                for workers in [1, 2, 3, 5] {
                    let source = TaskSource::new(*kind, affinity, tasks(500, workers), workers);
                    let per_worker = drain_concurrently(&source, workers);
                    let mut got: Vec<usize> = per_worker.concat();
                    got.sort_unstable();
                    assert_eq!(
                        got,
                        (0..500).collect::<Vec<_>>(),
                        "{kind} affinity={affinity} n={workers}"
                    );
                }
            }
        }
    }

    #[test]
    fn claim_runs_stripes_only_on_their_worker() {
        let workers = 3;
        let source = TaskSource::new(TaskQueueKind::Claim, false, tasks(300, workers), workers);
        let per_worker = drain_concurrently(&source, workers);
        for (w, got) in per_worker.iter().enumerate() {
            for &t in got {
                if let Affinity::Stripe(s) = tasks(300, workers)[t].affinity {
                    assert_eq!(s % workers, w, "stripe task {t} ran on worker {w}");
                }
            }
        }
    }

    #[test]
    fn affinity_hands_a_worker_its_own_tasks_first() {
        for kind in TaskQueueKind::ALL {
            let workers = 4;
            let ts: Vec<RootTask<usize>> = (0..8)
                .map(|i| RootTask {
                    root: i,
                    affinity: Affinity::Prefers(i % workers),
                })
                .collect();
            let source = TaskSource::new(*kind, true, ts, workers);
            // A single worker asking first gets its two tagged tasks before anything else.
            assert_eq!(source.get_task(2), Some(&2), "{kind}");
            assert_eq!(source.get_task(2), Some(&6), "{kind}");
            // Then it falls back to others' tasks rather than leaving them waiting.
            assert!(source.get_task(2).is_some(), "{kind}");
        }
    }

    #[test]
    fn without_affinity_the_queues_are_fifo() {
        for kind in [TaskQueueKind::Monitor, TaskQueueKind::LockFree] {
            let ts: Vec<_> = (0..10)
                .map(|i| RootTask {
                    root: i,
                    affinity: Affinity::Prefers(3),
                })
                .collect();
            let source = TaskSource::new(kind, false, ts, 4);
            let got: Vec<usize> = std::iter::from_fn(|| source.get_task(0).copied()).collect();
            assert_eq!(got, (0..10).collect::<Vec<_>>(), "{kind}");
        }
    }
}
