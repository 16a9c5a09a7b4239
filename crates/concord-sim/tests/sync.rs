//! The simulated kernel and locks: futex wait/wake loses no wake-up whatever the interleaving,
//! bitset wakes reach only the named waiters, and the collector's own futex parking and monitor,
//! plus the simulated `Mutex`/`Condvar`, keep their guarantees on simulated CPUs.

use std::collections::VecDeque;
use std::sync::Arc;

use concord_sim::exec::{self, Costs, Sim};
use concord_sim::parallel::monitor::Monitor;
use concord_sim::parallel::parking::futex::{worker_bit, EpochParker};
use concord_sim::parallel::task_queue::ms_queue::MsQueue;
use concord_sim::sync::atomic::{AtomicU32, Ordering::SeqCst};
use concord_sim::sync::{futex, Condvar, Mutex};

/// Waiters each wait for a flag of their own; the waker sets and wakes them one by one, with
/// work in between that varies by seed, so the store and wake land before, during and after the
/// waiters' check-then-sleep. A lost wake-up would leave a waiter blocked: a deadlock panic.
#[test]
fn no_wake_up_is_lost_whatever_the_interleaving() {
    for seed in 0..12u64 {
        for cpus in [1, 2, 4] {
            for lookahead in [0, 500] {
                let flags: Arc<Vec<AtomicU32>> =
                    Arc::new((0..3).map(|_| AtomicU32::new(0)).collect());
                let mut sim = Sim::new(cpus, Costs::DEFAULT, seed).lookahead(lookahead);
                for i in 0..3 {
                    let flags = flags.clone();
                    sim.spawn(format!("waiter-{i}"), move || {
                        exec::charge(seed * 97 % 1_500);
                        while flags[i].load(SeqCst) == 0 {
                            futex::wait(&flags[i], 0, None);
                        }
                    });
                }
                let f = flags.clone();
                sim.spawn("waker", move || {
                    for (i, flag) in f.iter().enumerate() {
                        exec::charge((seed * 31 + i as u64 * 700) % 2_500);
                        flag.store(1, SeqCst);
                        futex::wake(flag, 1);
                    }
                });
                let report = sim.run();
                assert_eq!(report.threads.len(), 4, "seed {seed} cpus {cpus}");
            }
        }
    }
}

#[test]
fn bitset_wakes_reach_only_the_named_waiters() {
    let word = Arc::new(AtomicU32::new(0));
    let woken_by_other_bit = Arc::new(std::sync::atomic::AtomicUsize::new(usize::MAX));
    let mut sim = Sim::new(2, Costs::DEFAULT, 1);
    let w = word.clone();
    sim.spawn("waiter", move || futex::wait_bitset(&w, 0, 0b01));
    let (w, other) = (word.clone(), woken_by_other_bit.clone());
    sim.spawn("waker", move || {
        exec::charge(50_000); // the waiter is asleep by now
        other.store(
            futex::wake_bitset(&w, u32::MAX, 0b10),
            std::sync::atomic::Ordering::Relaxed,
        );
        assert_eq!(futex::wake_bitset(&w, u32::MAX, 0b11), 1);
    });
    let report = sim.run();
    assert_eq!(
        woken_by_other_bit.load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert!(report.threads[0].blocked_ns > 0);
}

/// `concord`'s own epoch parker: workers sleep on their bit until the master advances the
/// epoch. A worker sharing a CPU with the master may only run after several advances (the
/// built-in placement does not preempt on wake-up), so it may skip epochs, but it never sees
/// one go backwards and always reaches the last: no wake-up is lost.
#[test]
fn the_collectors_epoch_parking_wakes_every_participant() {
    for seed in 0..6 {
        let parker = Arc::new(EpochParker::default());
        let mut sim = Sim::new(3, Costs::DEFAULT, seed);
        for id in 0..4 {
            let parker = parker.clone();
            sim.spawn(format!("worker-{id}"), move || {
                let (mut seen, mut last) = (0, 0);
                while last < 5 {
                    seen = parker.wait_past(seen, worker_bit(id));
                    let payload = EpochParker::payload(seen);
                    assert!(payload > last, "worker {id}: epoch {payload} after {last}");
                    last = payload;
                    exec::charge(1_000 * (id as u64 + 1));
                }
            });
        }
        let p = parker.clone();
        sim.spawn("master", move || {
            for epoch in 1..=5 {
                // Give every worker time to see the last epoch before the next.
                exec::charge(100_000);
                p.advance(epoch, u32::MAX);
            }
        });
        sim.run();
    }
}

/// `concord`'s HotSpot-style monitor (cxq, EntryList, OnDeck) as a lock under contention on
/// shared CPUs: no increment is lost and the waiters really parked.
#[test]
fn the_collectors_monitor_excludes_under_contention() {
    let monitor = Arc::new(Monitor::new(0u64));
    let mut sim = Sim::new(2, Costs::DEFAULT, 9);
    for id in 0..5 {
        let monitor = monitor.clone();
        sim.spawn(format!("locker-{id}"), move || {
            for _ in 0..40 {
                let mut guard = monitor.lock();
                *guard += 1;
                exec::charge(3_000); // a long critical section, so others queue
                drop(guard);
                exec::charge(500);
            }
        });
    }
    let report = sim.run();
    assert_eq!(*monitor.lock(), 200);
    let blocks: u64 = report.threads.iter().map(|t| t.blocks).sum();
    assert!(blocks > 0, "nobody ever parked on the monitor");
}

#[test]
fn mutex_and_condvar_hand_items_from_producer_to_consumers() {
    let queue = Arc::new((Mutex::new(VecDeque::<u32>::new()), Condvar::new()));
    let taken = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut sim = Sim::new(2, Costs::DEFAULT, 4);
    for id in 0..3 {
        let (queue, taken) = (queue.clone(), taken.clone());
        sim.spawn(format!("consumer-{id}"), move || loop {
            let (lock, ready) = &*queue;
            let mut items = lock.lock().unwrap();
            while items.is_empty() {
                items = ready.wait(items).unwrap();
            }
            let item = items.pop_front().expect("not empty");
            drop(items);
            if item == u32::MAX {
                return;
            }
            taken.fetch_add(item, std::sync::atomic::Ordering::Relaxed);
            exec::charge(2_000);
        });
    }
    let q = queue.clone();
    sim.spawn("producer", move || {
        let (lock, ready) = &*q;
        for item in 1..=30 {
            exec::charge(700);
            lock.lock().unwrap().push_back(item);
            ready.notify_one();
        }
        lock.lock().unwrap().extend([u32::MAX; 3]);
        ready.notify_all();
    });
    sim.run();
    assert_eq!(
        taken.load(std::sync::atomic::Ordering::Relaxed),
        (1..=30).sum::<u32>()
    );
}

#[test]
fn condvar_wait_timeout_reports_the_timeout_in_virtual_time() {
    let mut sim = Sim::new(1, Costs::DEFAULT, 0);
    sim.spawn("sleeper", || {
        let pair = (Mutex::new(()), Condvar::new());
        let guard = pair.0.lock().unwrap();
        let before = exec::now().expect("inside the simulation");
        let (_guard, result) = pair
            .1
            .wait_timeout(guard, std::time::Duration::from_millis(3))
            .unwrap();
        assert!(result.timed_out());
        assert!(exec::now().unwrap() >= before + 3_000_000);
    });
    let report = sim.run();
    assert!(
        report.end_ns >= 3_000_000 && report.end_ns < 4_000_000,
        "{}",
        report.end_ns
    );
}

/// `concord`'s Michael–Scott task queue drained by consumers on shared simulated CPUs: every
/// item comes out exactly once.
#[test]
fn the_collectors_ms_queue_hands_out_each_item_once() {
    for (consumers, cpus) in [(2, 2), (6, 3), (8, 8)] {
        let mut queue = MsQueue::new();
        for item in 0..500u32 {
            queue.enqueue(item);
        }
        let queue = Arc::new(queue);
        let seen: Arc<Vec<std::sync::atomic::AtomicU32>> = Arc::new(
            (0..500)
                .map(|_| std::sync::atomic::AtomicU32::new(0))
                .collect(),
        );
        let mut sim = Sim::new(cpus, Costs::DEFAULT, consumers as u64);
        for id in 0..consumers {
            let (queue, seen) = (queue.clone(), seen.clone());
            sim.spawn(format!("consumer-{id}"), move || {
                while let Some(&item) = queue.dequeue() {
                    seen[item as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    exec::charge(200);
                }
            });
        }
        let report = sim.run();
        for (item, count) in seen.iter().enumerate() {
            let count = count.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(
                count, 1,
                "{consumers}/{cpus}: item {item} came out {count} times"
            );
        }
        let busy = report
            .threads
            .iter()
            .filter(|t| t.run_ns > 200 * 50)
            .count();
        assert!(
            busy > 1,
            "{consumers}/{cpus}: one consumer did nearly everything"
        );
    }
}

/// What one contender of [`race_for_one_item`] ended with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Got {
    /// The item.
    Item,
    /// Nothing (an owner's `None`, a thief's final `Empty`).
    Nothing,
}

/// One item in an owner's LIFO deque; the owner pops after `owner_ns` of virtual time, each
/// thief steals after its delay, retrying on `Retry` as the engine does. Each thread on a CPU
/// of its own, strictly earliest first (no lookahead). What each got (owner first) and the
/// retries each thief saw.
fn race_for_one_item(owner_ns: u64, thief_ns: [u64; 2]) -> (Vec<Got>, [u32; 2]) {
    use concord_sim::sync::deque::{Steal, Worker};
    let deque = Worker::new_lifo();
    deque.push(7u32); // outside the simulation: at once
    let got = Arc::new(std::sync::Mutex::new(vec![Got::Nothing; 3]));
    let retries = Arc::new(std::sync::Mutex::new([0u32; 2]));
    let mut sim = Sim::new(3, Costs::DEFAULT, 1).lookahead(0);
    for (t, delay) in thief_ns.into_iter().enumerate() {
        let (stealer, got, retries) = (deque.stealer(), got.clone(), retries.clone());
        sim.spawn(format!("thief-{t}"), move || {
            exec::charge(delay);
            loop {
                match stealer.steal() {
                    Steal::Success(item) => {
                        assert_eq!(item, 7);
                        got.lock().unwrap()[t + 1] = Got::Item;
                        return;
                    }
                    Steal::Empty => return,
                    Steal::Retry => retries.lock().unwrap()[t] += 1,
                }
            }
        });
    }
    let owner_got = got.clone();
    sim.spawn("owner", move || {
        exec::charge(owner_ns);
        if let Some(item) = deque.pop() {
            assert_eq!(item, 7);
            owner_got.lock().unwrap()[0] = Got::Item;
        }
        assert_eq!(deque.pop(), None);
        assert!(deque.is_empty());
    });
    sim.run();
    let got = got.lock().unwrap().clone();
    let retries = *retries.lock().unwrap();
    (got, retries)
}

/// The simulated deque races as `crossbeam_deque` does: a steal that finds an item is two
/// scheduling points (the look, then the CAS on front), so two thieves starting together both
/// see the item, one CAS wins and the other's fails (`Retry`, then `Empty`); a thief that has
/// looked before the owner's pop of the last item and does its CAS before the owner's takes the
/// item and the owner's pop returns `None`; an owner that pops first keeps it. Over every
/// timing, exactly one of the three gets the item.
#[test]
fn two_thieves_and_the_owner_race_for_one_item_and_exactly_one_gets_it() {
    use Got::*;
    // Thieves together, the owner late: one thief wins, the other retries once, then finds
    // nothing.
    let (got, retries) = race_for_one_item(1_000, [0, 0]);
    assert_eq!(got[0], Nothing);
    assert_eq!(
        got[1..].iter().filter(|&&g| g == Item).count(),
        1,
        "{got:?}"
    );
    let loser = if got[1] == Item { 1 } else { 0 };
    assert_eq!(retries[loser], 1, "{retries:?}");
    assert_eq!(retries[1 - loser], 0, "{retries:?}");
    // A thief looks at 0 and CASes at 22 ns; the owner's pop of the last item starts at 10 ns
    // (back lowered, front read) and its CAS comes at 34 ns: the thief's pending steal wins.
    let (got, _) = race_for_one_item(10, [0, 1_000]);
    assert_eq!(got, vec![Nothing, Item, Nothing]);
    // The owner first: thieves that look after its back went down find nothing.
    let (got, retries) = race_for_one_item(0, [5, 5]);
    assert_eq!(got, vec![Item, Nothing, Nothing]);
    assert_eq!(retries, [0, 0]);
    // Every timing on a grid: exactly one gets it, never two, never none.
    let mut retried = 0;
    let mut winners = [0usize; 3];
    for owner in (0..60).step_by(6) {
        for a in (0..60).step_by(7) {
            for b in (0..60).step_by(9) {
                let (got, retries) = race_for_one_item(owner, [a, b]);
                let items: Vec<usize> = (0..3).filter(|&i| got[i] == Item).collect();
                assert_eq!(items.len(), 1, "owner {owner}, thieves {a} {b}: {got:?}");
                winners[items[0]] += 1;
                retried += retries.iter().sum::<u32>();
            }
        }
    }
    assert!(retried > 0);
    assert!(winners.iter().all(|&w| w > 0), "{winners:?}");
}
