//! A Michael–Scott lock-free FIFO for the GC task queue (004 §3.1.1), specialised to one
//! enqueuer.
//!
//! The VM thread fills the queue while the world is stopped and before any GC worker runs, and
//! the workers then race to take tasks. Enqueues are therefore never concurrent with anything:
//! [`MsQueue::enqueue`] takes `&mut self`, so the borrow checker enforces what the collector's
//! phase structure already guarantees. Dequeues take `&self` and are the classic Michael–Scott
//! dequeue: a CAS that swings `head` from the current dummy node to its successor, which
//! becomes the new dummy and carries the dequeued value.
//!
//! # Memory reclamation
//!
//! A dequeue does not free the node it unlinks. Freeing it safely while other workers may still
//! be reading it needs hazard pointers or epochs; instead, unlinked nodes stay allocated until
//! the next `&mut self` operation ([`MsQueue::clear`], [`MsQueue::reclaim`]) or `Drop`. While the
//! queue is shared no node is ever freed or reused, so a stale `head` can never reappear at the
//! same address (no ABA), and the value of a dequeued task can be handed out by reference:
//! [`MsQueue::dequeue`] returns `Option<&T>` borrowed from the queue, which is what the engine
//! wants (tasks are descriptions it reads, not values it consumes).
//!
//! Atomics come from `crate::sync`, so that `concord-loom` can compile this very file against
//! loom's model checker.

use std::fmt;
use std::marker::PhantomData;
use std::ptr;

use crate::sync::atomic::{AtomicPtr, Ordering};

struct Node<T> {
    /// `None` only in the node the queue was created (or last cleared) with; every enqueued node
    /// holds its value until the node is freed, even after it has been dequeued.
    value: Option<T>,
    /// 1-based position of this node in enqueue order (the initial dummy continues from the
    /// previous sequence); `tail.seq - head.seq` is the number of tasks not yet dequeued.
    seq: usize,
    next: AtomicPtr<Node<T>>,
}

impl<T> Node<T> {
    fn alloc(value: Option<T>, seq: usize) -> *mut Node<T> {
        Box::into_raw(Box::new(Node {
            value,
            seq,
            next: AtomicPtr::new(ptr::null_mut()),
        }))
    }
}

/// A FIFO with one (exclusive) enqueuer and any number of concurrent, lock-free dequeuers.
pub struct MsQueue<T> {
    /// The current dummy node: the last dequeued one, or the initial node. Its successor is the
    /// next task to hand out. Moved forward by CAS in [`MsQueue::dequeue`].
    head: AtomicPtr<Node<T>>,
    /// The last node of the list. Only written under `&mut self`.
    tail: AtomicPtr<Node<T>>,
    /// The oldest node still allocated: the list from here to `head` holds dequeued nodes that
    /// wait for a `&mut self` operation to free them. Only touched under `&mut self`.
    oldest: *mut Node<T>,
    /// The queue owns `T`s (for drop check and auto traits).
    _owns: PhantomData<T>,
}

// SAFETY: the queue owns its nodes and their values exclusively, like a `Vec<T>`; sending it
// sends the `T`s.
unsafe impl<T: Send> Send for MsQueue<T> {}
// SAFETY: through `&MsQueue<T>` other threads can only obtain `&T` (from `dequeue`), never move
// or drop a `T`, so sharing the queue needs exactly what sharing `&T` needs. All shared mutable
// state is in atomics, and no node is freed while the queue is borrowed.
unsafe impl<T: Sync> Sync for MsQueue<T> {}

impl<T> MsQueue<T> {
    /// An empty queue (one dummy node).
    pub fn new() -> Self {
        let dummy = Node::alloc(None, 0);
        Self {
            head: AtomicPtr::new(dummy),
            tail: AtomicPtr::new(dummy),
            oldest: dummy,
            _owns: PhantomData,
        }
    }

    /// Append `value`. Exclusive access means no dequeue runs concurrently; the link is still
    /// published the Michael–Scott way, with Release stores of `tail.next` and then `tail`, so
    /// a worker that later observes the node (after whatever hands the queue to the workers)
    /// also observes its contents.
    pub fn enqueue(&mut self, value: T) {
        let tail = self.tail.load(Ordering::Relaxed);
        // SAFETY: `tail` is a live node (nodes from `oldest` to `tail` are only freed under
        // `&mut self`, which we hold, and `tail` never is).
        let seq = unsafe { (*tail).seq } + 1;
        let node = Node::alloc(Some(value), seq);
        // SAFETY: as above. Release publishes the node's fields to any thread that follows the
        // link with Acquire.
        unsafe { (*tail).next.store(node, Ordering::Release) };
        // Release pairs with the Acquire in `len_hint`.
        self.tail.store(node, Ordering::Release);
    }

    /// Take the oldest task not yet taken, or `None` if every enqueued task has been taken.
    ///
    /// Lock-free: a failed CAS means another dequeuer succeeded. The returned reference lives as
    /// long as the shared borrow of the queue; the value stays owned by the queue and is dropped
    /// by [`MsQueue::clear`], [`MsQueue::reclaim`] or `Drop`.
    pub fn dequeue(&self) -> Option<&T> {
        // Acquire (here and on CAS failure): the node we read `next` from was published by
        // `enqueue`'s Release stores.
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            // SAFETY: `head` was read from `self.head`, and no node is freed while `self` is
            // shared, so it is live.
            let next = unsafe { (*head).next.load(Ordering::Acquire) };
            if next.is_null() {
                // No concurrent enqueue exists, so an empty successor means the queue is
                // drained; the MS "help a lagging tail" step is never needed.
                return None;
            }
            match self
                .head
                .compare_exchange_weak(head, next, Ordering::Acquire, Ordering::Acquire)
            {
                // SAFETY: `next` is live for as long as `self` is borrowed (see above), and its
                // value is never mutated while shared. Non-initial nodes always hold a value.
                Ok(_) => return unsafe { (*next).value.as_ref() },
                Err(current) => head = current,
            }
        }
    }

    /// Number of tasks not yet dequeued. Exact when nobody dequeues concurrently; otherwise a
    /// snapshot that may already be stale (hence the name).
    pub fn len_hint(&self) -> usize {
        // Acquire pairs with the Release stores of `enqueue` and the CAS of `dequeue`.
        let head = self.head.load(Ordering::Acquire);
        let tail = self.tail.load(Ordering::Acquire);
        // SAFETY: both are live while `self` is borrowed. `head` is at or before `tail` in the
        // list (dequeue never moves past the last linked node), so `tail.seq >= head.seq`.
        unsafe { (*tail).seq - (*head).seq }
    }

    /// Whether every enqueued task has been dequeued (a snapshot, like [`MsQueue::len_hint`]).
    pub fn is_empty(&self) -> bool {
        // Acquire pairs with the Release stores of `enqueue`, as in `dequeue`.
        let head = self.head.load(Ordering::Acquire);
        // SAFETY: `head` is live while `self` is borrowed.
        unsafe { (*head).next.load(Ordering::Acquire).is_null() }
    }

    /// Free the nodes (and drop the values) of every task already dequeued, keeping the tasks
    /// not yet dequeued in order. Exclusive access: no reference from `dequeue` is alive.
    pub fn reclaim(&mut self) {
        let head = self.head.load(Ordering::Relaxed);
        // SAFETY: exclusive access; the nodes from `oldest` up to (not including) `head` are
        // unlinked from the live queue and referenced by nothing else.
        unsafe {
            self.free_from_until(head);
            // The dummy's value was dequeued already; drop it now rather than when it is freed.
            (*head).value = None;
        }
    }

    /// Drop every task, dequeued or not, leaving an empty queue ready to be refilled.
    pub fn clear(&mut self) {
        let tail = self.tail.load(Ordering::Relaxed);
        // SAFETY: exclusive access; every node before `tail` is referenced only by the list. The
        // tail node is kept as the new dummy, with its value dropped and its link cleared.
        unsafe {
            self.free_from_until(tail);
            (*tail).value = None;
            (*tail).next.store(ptr::null_mut(), Ordering::Relaxed);
        }
        self.head.store(tail, Ordering::Relaxed);
    }

    /// Free the nodes from `self.oldest` up to, not including, `stop`, which becomes `oldest`.
    ///
    /// # Safety
    /// Exclusive access, and `stop` is `self.oldest` or a node reachable from it.
    unsafe fn free_from_until(&mut self, stop: *mut Node<T>) {
        let mut cur = self.oldest;
        while cur != stop {
            // SAFETY: (caller) `cur` is an allocated node no one else references; it came from
            // `Box::into_raw` in `Node::alloc`.
            let node = unsafe { Box::from_raw(cur) };
            cur = node.next.load(Ordering::Relaxed);
            debug_assert!(!cur.is_null(), "stop node not reachable");
        }
        self.oldest = stop;
    }
}

impl<T> Default for MsQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Extend<T> for MsQueue<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for v in iter {
            self.enqueue(v);
        }
    }
}

impl<T> FromIterator<T> for MsQueue<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut q = Self::new();
        q.extend(iter);
        q
    }
}

impl<T> Drop for MsQueue<T> {
    fn drop(&mut self) {
        let mut cur = self.oldest;
        while !cur.is_null() {
            // SAFETY: exclusive access; every node from `oldest` to `tail` is owned by the queue
            // and was allocated by `Node::alloc`.
            let node = unsafe { Box::from_raw(cur) };
            cur = node.next.load(Ordering::Relaxed);
        }
    }
}

impl<T> fmt::Debug for MsQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MsQueue")
            .field("len_hint", &self.len_hint())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn fifo_for_a_single_dequeuer() {
        let q: MsQueue<u32> = (0..100).collect();
        assert_eq!(q.len_hint(), 100);
        assert!(!q.is_empty());
        let got: Vec<u32> = std::iter::from_fn(|| q.dequeue().copied()).collect();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert!(q.is_empty());
        assert_eq!(q.len_hint(), 0);
        assert_eq!(q.dequeue(), None);
    }

    #[test]
    fn empty_queue() {
        let q = MsQueue::<String>::default();
        assert!(q.is_empty());
        assert_eq!(q.len_hint(), 0);
        assert!(q.dequeue().is_none());
        assert_eq!(format!("{q:?}"), "MsQueue { len_hint: 0, .. }");
    }

    #[test]
    fn four_dequeuers_take_every_element_exactly_once() {
        let (rounds, n) = if cfg!(miri) { (2, 200) } else { (20, 5000) };
        for _ in 0..rounds {
            let q: MsQueue<u32> = (0..n).collect();
            let mut got: Vec<u32> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..4)
                    .map(|_| {
                        let q = &q;
                        s.spawn(move || {
                            let mine: Vec<u32> =
                                std::iter::from_fn(|| q.dequeue().copied()).collect();
                            // Each dequeuer sees its own share in FIFO order.
                            assert!(mine.windows(2).all(|w| w[0] < w[1]));
                            mine
                        })
                    })
                    .collect();
                hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
            });
            got.sort_unstable();
            assert_eq!(got, (0..n).collect::<Vec<u32>>());
            assert!(q.is_empty());
        }
    }

    #[test]
    fn reuse_after_clear_and_reclaim() {
        let mut q = MsQueue::new();
        q.extend(0..10u32);
        assert_eq!(q.dequeue(), Some(&0));
        assert_eq!(q.dequeue(), Some(&1));
        q.reclaim();
        assert_eq!(q.len_hint(), 8);
        q.enqueue(10);
        let got: Vec<u32> = std::iter::from_fn(|| q.dequeue().copied()).collect();
        assert_eq!(got, (2..11).collect::<Vec<_>>());
        q.reclaim();
        assert!(q.is_empty());

        q.extend(20..25u32);
        assert_eq!(q.dequeue(), Some(&20));
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.len_hint(), 0);
        assert_eq!(q.dequeue(), None);
        q.extend(30..33u32);
        assert_eq!(q.len_hint(), 3);
        let got: Vec<u32> = std::iter::from_fn(|| q.dequeue().copied()).collect();
        assert_eq!(got, vec![30, 31, 32]);
    }

    struct Counted<'a>(&'a AtomicUsize);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.fetch_add(1, Relaxed);
        }
    }

    #[test]
    fn every_value_is_dropped_exactly_once() {
        let drops = AtomicUsize::new(0);
        {
            let mut q = MsQueue::new();
            for _ in 0..10 {
                q.enqueue(Counted(&drops));
            }
            // Dequeued values stay owned by the queue.
            for _ in 0..3 {
                assert!(q.dequeue().is_some());
            }
            assert_eq!(drops.load(Relaxed), 0);
            // `reclaim` drops the three dequeued ones (including the current dummy's value).
            q.reclaim();
            assert_eq!(drops.load(Relaxed), 3);
            q.dequeue();
            // `clear` drops the remaining seven.
            q.clear();
            assert_eq!(drops.load(Relaxed), 10);
            for _ in 0..5 {
                q.enqueue(Counted(&drops));
            }
            q.dequeue();
            q.dequeue();
            // `Drop` drops the five that were enqueued after the clear.
        }
        assert_eq!(drops.load(Relaxed), 15);
    }

    #[test]
    fn is_send_and_sync_for_sync_values() {
        fn assert_send_sync<X: Send + Sync>() {}
        assert_send_sync::<MsQueue<u64>>();
    }
}
