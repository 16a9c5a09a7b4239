//! Loom models of the HotSpot-style monitor (`concord::parallel::monitor`): mutual exclusion
//! with the succession protocol (`cxq`, `EntryList`, the `OnDeck` heir, the deferred unpark and
//! the re-check after dropping the inner lock), and no lost wake-up through wait/notify.
//!
//! The protected counter is a loom `UnsafeCell`, so loom reports a data race if two threads
//! ever hold the lock at once or if an unlock/lock pair does not order their accesses; a lost
//! wake-up shows as a deadlock (every thread asleep). The monitor probes the lock once before
//! queuing, so that the slow paths are reached in few steps.

use concord_loom::monitor::Monitor;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// A counter behind the monitor.
struct Counter(UnsafeCell<u32>);

// SAFETY: only touched under the monitor's lock, which is what the models check.
unsafe impl Send for Counter {}
// SAFETY: as above.
unsafe impl Sync for Counter {}

fn increment(m: &Monitor<Counter>) {
    let g = m.lock();
    // SAFETY: (checked by loom) the lock gives exclusive access.
    g.0.with_mut(|p| unsafe { *p += 1 });
}

fn read(m: &Monitor<Counter>) -> u32 {
    let g = m.lock();
    // SAFETY: (checked by loom) as above.
    g.0.with(|p| unsafe { *p })
}

/// Run `model` under loom with `preemptions`; returns how many executions loom explored.
fn check(preemptions: usize, model: impl Fn() + Sync + Send + 'static) -> usize {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    executions.load(std::sync::atomic::Ordering::Relaxed)
}

/// `threads` threads (the model's main thread among them) each increment the counter
/// `increments` times; the total must come out right.
fn contend(threads: usize, increments: u32) {
    let m = Arc::new(Monitor::with_spin_limit(Counter(UnsafeCell::new(0)), 1));
    let others: Vec<_> = (1..threads)
        .map(|_| {
            let m = m.clone();
            thread::spawn(move || (0..increments).for_each(|_| increment(&m)))
        })
        .collect();
    (0..increments).for_each(|_| increment(&m));
    for t in others {
        t.join().unwrap();
    }
    assert_eq!(read(&m), threads as u32 * increments);
}

#[test]
fn two_threads_exclude_each_other() {
    let n = check(5, || contend(2, 2));
    eprintln!("two_threads_exclude_each_other: {n} executions");
}

#[test]
fn three_threads_queue_and_hand_over() {
    // Three contenders reach `cxq`, the `EntryList` drain, the heir and its re-wake, and the
    // succession re-check when a release finds the inner lock taken (a model without that
    // re-check deadlocks here).
    let n = check(4, || contend(3, 1));
    eprintln!("three_threads_queue_and_hand_over: {n} executions");
}

#[test]
fn notify_all_wakes_a_waiter() {
    // A waiter waits for a flag; the notifier sets it under the lock and notifies: the waiter
    // moves to `cxq` and must come back as heir (no lost wake-up), whatever the interleaving.
    let n = check(5, || {
        let m = Arc::new(Monitor::with_spin_limit(false, 1));
        let waiter = {
            let m = m.clone();
            thread::spawn(move || {
                let mut g = m.lock();
                while !*g {
                    g.wait();
                }
            })
        };
        {
            let mut g = m.lock();
            *g = true;
            g.notify_all();
        }
        waiter.join().unwrap();
    });
    eprintln!("notify_all_wakes_a_waiter: {n} executions");
}
