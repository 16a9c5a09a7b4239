//! Handing root tasks to workers: the three task-queue disciplines of DESIGN.md, one file
//! each, and task affinity.
//!
//! * [`monitor_fifo`] (OpenJDK 8): one FIFO of tasks behind the GC task manager's unfair
//!   monitor, the one the pool's workers park on; every `get_task` takes the lock, so a worker
//!   that keeps barging back can drain the queue alone (000 §3.2).
//! * [`claim`] (HotSpot 17+): no shared queue and no lock; a worker takes the next unclaimed
//!   task with one atomic increment. Old-to-young card stripes are assigned statically.
//! * [`lockfree`] (004 §3.1.1): Michael–Scott queues ([`ms_queue`]) filled by the dispatcher
//!   before the phase and dequeued with CAS.
//!
//! With task affinity on (000 §4.1), a task tagged with a worker is handed to that worker first;
//! a worker with no tagged task left falls back to any task, so no task waits for its worker.

pub mod claim;
pub mod lockfree;
pub mod monitor_fifo;
pub mod ms_queue;

use super::policy::TaskQueueKind;
use super::pool::WorkerPool;

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
    /// The worker the task is tagged with, folded into `0..workers` (a tag beyond the active
    /// workers, when fewer take part in this collection, goes to worker `tag mod workers`).
    pub fn worker_among(self, workers: usize) -> Option<usize> {
        match self {
            Affinity::Any => None,
            Affinity::Prefers(w) | Affinity::Stripe(w) => Some(w % workers.max(1)),
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
    /// `worker` finished a task it got from here.
    fn task_done(&self, _worker: usize) {}
}

/// One phase's root tasks under the configured discipline.
pub struct TaskSource<'p, R> {
    tasks: Vec<RootTask<R>>,
    kind: SourceKind<'p>,
}

enum SourceKind<'p> {
    Claim(claim::ClaimLists),
    /// The task manager's queue, in the pool, and this phase's tasks until they are installed
    /// there.
    Monitor(&'p WorkerPool, Option<monitor_fifo::TaskFifo>),
    LockFree(lockfree::LockFreeQueues),
}

impl<'p, R: Sync> TaskSource<'p, R> {
    /// Hand `tasks` to `workers` workers of `pool` under `kind`, honouring affinity if
    /// `affinity`. For `monitor` the tasks live in the pool's task manager: the phase must be run
    /// with [`WorkerPool::run_with_tasks`] and [`take_task_fifo`](Self::take_task_fifo).
    pub fn new(
        kind: TaskQueueKind,
        affinity: bool,
        tasks: Vec<RootTask<R>>,
        workers: usize,
        pool: &'p WorkerPool,
    ) -> Self {
        let workers = workers.max(1);
        let kind = match kind {
            TaskQueueKind::Claim => {
                SourceKind::Claim(claim::ClaimLists::new(&tasks, workers, affinity))
            }
            TaskQueueKind::Monitor => SourceKind::Monitor(
                pool,
                Some(monitor_fifo::TaskFifo::new(&tasks, workers, affinity)),
            ),
            TaskQueueKind::LockFree => {
                SourceKind::LockFree(lockfree::LockFreeQueues::new(&tasks, workers, affinity))
            }
        };
        Self { tasks, kind }
    }

    /// For the `monitor` discipline: the queue of this phase's tasks, to be installed in the
    /// pool's task manager (once); `None` for the others.
    pub fn take_task_fifo(&mut self) -> Option<monitor_fifo::TaskFifo> {
        match &mut self.kind {
            SourceKind::Monitor(_, fifo) => fifo.take(),
            _ => None,
        }
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
            SourceKind::Monitor(pool, _) => pool.get_task(worker),
            SourceKind::LockFree(queues) => queues.dequeue(worker),
        }
    }
}

impl<R: Sync> RootTaskSource<R> for TaskSource<'_, R> {
    fn get_task(&self, worker: usize) -> Option<&R> {
        self.index_for(worker).map(|i| &self.tasks[i].root)
    }

    fn task_done(&self, _worker: usize) {
        if let SourceKind::Monitor(pool, _) = &self.kind {
            pool.task_completed();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::policy::ParkingKind;

    /// A pool whose task manager holds the `monitor` discipline's queue.
    fn pool() -> WorkerPool {
        WorkerPool::new(1, "task-queue-test", ParkingKind::Futex, |_| {}).unwrap()
    }

    /// A task source as `run_phase` makes one, with the `monitor` queue installed in `pool`.
    fn source<'p>(
        kind: TaskQueueKind,
        affinity: bool,
        tasks: Vec<RootTask<usize>>,
        workers: usize,
        pool: &'p WorkerPool,
    ) -> TaskSource<'p, usize> {
        let mut source = TaskSource::new(kind, affinity, tasks, workers, pool);
        if let Some(fifo) = source.take_task_fifo() {
            pool.install_tasks(fifo);
        }
        source
    }

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
        let pool = pool();
        for kind in TaskQueueKind::ALL {
            for affinity in [false, true] {
                for workers in [1, 2, 3, 5] {
                    let source = source(*kind, affinity, tasks(500, workers), workers, &pool);
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
        let pool = pool();
        let workers = 3;
        let source = source(
            TaskQueueKind::Claim,
            false,
            tasks(300, workers),
            workers,
            &pool,
        );
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
        let pool = pool();
        for kind in TaskQueueKind::ALL {
            let workers = 4;
            let ts: Vec<RootTask<usize>> = (0..8)
                .map(|i| RootTask {
                    root: i,
                    affinity: Affinity::Prefers(i % workers),
                })
                .collect();
            let source = source(*kind, true, ts, workers, &pool);
            // A single worker asking first gets its two tagged tasks before anything else.
            assert_eq!(source.get_task(2), Some(&2), "{kind}");
            assert_eq!(source.get_task(2), Some(&6), "{kind}");
            // Then it falls back to others' tasks rather than leaving them waiting.
            assert!(source.get_task(2).is_some(), "{kind}");
        }
    }

    #[test]
    fn without_affinity_the_queues_are_fifo() {
        let pool = pool();
        for kind in [TaskQueueKind::Monitor, TaskQueueKind::LockFree] {
            let ts: Vec<_> = (0..10)
                .map(|i| RootTask {
                    root: i,
                    affinity: Affinity::Prefers(3),
                })
                .collect();
            let source = source(kind, false, ts, 4, &pool);
            let got: Vec<usize> = std::iter::from_fn(|| source.get_task(0).copied()).collect();
            assert_eq!(got, (0..10).collect::<Vec<_>>(), "{kind}");
        }
    }
}
