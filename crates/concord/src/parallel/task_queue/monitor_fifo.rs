//! `monitor` (OpenJDK 8 `GCTaskQueue` behind `GCTaskManager`'s monitor, 000 §2.4, §3.2): one
//! FIFO of tasks; every `get_task` takes the monitor's lock, so a worker that keeps barging back
//! can drain the queue alone. With task affinity a worker takes the first task tagged with it,
//! else the head (`UseGCTaskAffinity`'s `dequeue(which)`).
//!
//! The FIFO itself is plain data ([`TaskFifo`]); which monitor guards it is the pool's: the same
//! task-manager monitor that idle workers wait on (see `parallel::parking`), so that a worker
//! woken for a collection takes its first task in the same critical section, as in HotSpot.

use std::collections::VecDeque;

use super::RootTask;

/// The task queue of one phase: task indices in FIFO order and each task's preferred worker.
#[derive(Debug, Default)]
pub struct TaskFifo {
    queue: VecDeque<usize>,
    /// Preferred worker of each task (folded into the active workers), if any.
    owners: Vec<Option<usize>>,
    affinity: bool,
}

impl TaskFifo {
    /// The queue of `tasks` for `workers` workers; `affinity` honours the tasks' tags.
    pub fn new<R>(tasks: &[RootTask<R>], workers: usize, affinity: bool) -> Self {
        Self {
            queue: (0..tasks.len()).collect(),
            owners: tasks
                .iter()
                .map(|t| t.affinity.worker_among(workers))
                .collect(),
            affinity,
        }
    }

    /// Take the next task for `worker`: its own first with affinity, else the head.
    pub fn dequeue(&mut self, worker: usize) -> Option<usize> {
        let pick = if self.affinity {
            self.queue
                .iter()
                .position(|&i| self.owners[i] == Some(worker))
                .unwrap_or(0)
        } else {
            0
        };
        self.queue.remove(pick)
    }

    /// Tasks left.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no task is left.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}
