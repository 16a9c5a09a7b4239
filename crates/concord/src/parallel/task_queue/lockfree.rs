//! `lockfree` (004 §3.1.1): Michael–Scott queues ([`MsQueue`]) filled by the dispatcher before
//! the phase and dequeued with CAS. Without task affinity there is one queue; with it, one per
//! worker for the tasks tagged with it plus one for the rest, and a worker looks at its own,
//! then the shared one, then the others'.

use super::ms_queue::MsQueue;
use super::RootTask;

/// The queues of one phase: `queues[w]` holds tasks preferring worker `w`, the last the rest.
pub(super) struct LockFreeQueues {
    queues: Vec<MsQueue<usize>>,
}

impl LockFreeQueues {
    pub(super) fn new<R>(tasks: &[RootTask<R>], workers: usize, affinity: bool) -> Self {
        let mut queues: Vec<MsQueue<usize>> = (0..=workers).map(|_| MsQueue::new()).collect();
        for (i, t) in tasks.iter().enumerate() {
            let owner = t.affinity.worker_among(workers).filter(|_| affinity);
            queues[owner.unwrap_or(workers)].enqueue(i);
        }
        Self { queues }
    }

    pub(super) fn dequeue(&self, worker: usize) -> Option<usize> {
        let workers = self.queues.len() - 1;
        let own = worker.min(workers);
        // Own tagged tasks, then untagged ones, then other workers' tagged tasks.
        std::iter::once(own)
            .chain(std::iter::once(workers))
            .chain((1..workers).map(|k| (own + k) % workers))
            .find_map(|q| self.queues[q].dequeue().copied())
    }
}
