//! Loom models of the Michael–Scott GC task queue (`concord::parallel::ms_queue`, 004 §3.1.1):
//! one exclusive enqueuer, concurrent CAS dequeuers.

use concord_loom::ms_queue::MsQueue;
use loom::sync::Arc;
use loom::thread;

/// Explore `f` with at most `preemptions` preemptions per execution, or exhaustively (`None`).
fn check(preemptions: Option<usize>, f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = preemptions;
    b.check(f);
}

/// Dequeue until empty; every dequeuer sees its own share in FIFO order.
fn drain(q: &MsQueue<u32>) -> Vec<u32> {
    let mine: Vec<u32> = std::iter::from_fn(|| q.dequeue().copied()).collect();
    assert!(
        mine.windows(2).all(|w| w[0] < w[1]),
        "out of order: {mine:?}"
    );
    mine
}

/// The model's main thread and one spawned worker race to drain `q` (loom allows at most four
/// spawned threads per execution, joined ones included); returns everything they took, sorted.
fn race_to_drain(q: MsQueue<u32>) -> (MsQueue<u32>, Vec<u32>) {
    let q = Arc::new(q);
    let worker = {
        let q = q.clone();
        thread::spawn(move || drain(&q))
    };
    let mine = drain(&q);
    let mut got: Vec<u32> = mine.into_iter().chain(worker.join().unwrap()).collect();
    got.sort_unstable();
    let q = Arc::try_unwrap(q).unwrap_or_else(|_| panic!("queue still shared"));
    (q, got)
}

#[test]
fn two_dequeuers_take_every_item_exactly_once() {
    // Small enough to explore every interleaving.
    check(None, || {
        let q: MsQueue<u32> = (0..3).collect();
        let (q, got) = race_to_drain(q);
        assert_eq!(got, vec![0, 1, 2]);
        assert!(q.is_empty());
        assert_eq!(q.len_hint(), 0);
        assert_eq!(q.dequeue(), None);
    });
}

#[test]
fn dequeuers_racing_with_a_size_observer() {
    // `len_hint` and `is_empty` may run concurrently with dequeues; they must stay in range
    // and never report "empty" while an item is certainly left. Exhaustive.
    check(None, || {
        let q: MsQueue<u32> = (0..2).collect();
        let q = Arc::new(q);
        let worker = {
            let q = q.clone();
            thread::spawn(move || q.dequeue().copied())
        };
        let n = q.len_hint();
        assert!(n <= 2, "len_hint {n}");
        // The worker takes at most one item, so one is certainly left.
        assert!(!q.is_empty());
        let mine = drain(&q);
        let theirs = worker.join().unwrap();
        let mut got: Vec<u32> = mine.into_iter().chain(theirs).collect();
        got.sort_unstable();
        assert_eq!(got, vec![0, 1]);
    });
}

#[test]
fn enqueue_after_partial_drain_then_race_again() {
    // Three rounds of races: bounded, enough for each dequeuer to be preempted between reading
    // `head` and its CAS.
    check(Some(3), || {
        let q: MsQueue<u32> = (0..3).collect();
        // Round 1: two workers take at most one item each, so at least one is left.
        let q = Arc::new(q);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || q.dequeue().copied())
            })
            .collect();
        let mut got: Vec<u32> = handles
            .into_iter()
            .filter_map(|h| h.join().unwrap())
            .collect();
        assert_eq!(got.len(), 2);
        let mut q = Arc::try_unwrap(q).unwrap_or_else(|_| panic!("queue still shared"));
        // FIFO: the two oldest items were taken.
        got.sort_unstable();
        assert_eq!(got, vec![0, 1]);
        assert_eq!(q.len_hint(), 1);

        // Exclusive again: free what was dequeued, refill, and race to drain.
        q.reclaim();
        q.enqueue(3);
        q.enqueue(4);
        assert_eq!(q.len_hint(), 3);
        let (mut q, rest) = race_to_drain(q);
        assert_eq!(rest, vec![2, 3, 4]);

        // And once more after a full clear.
        q.clear();
        q.enqueue(5);
        q.enqueue(6);
        let (_, last) = race_to_drain(q);
        assert_eq!(last, vec![5, 6]);
    });
}
