//! Loom models of lazy GC parking (`concord::parallel::parking::futex`, 004 §3.1.2), used the
//! way `concord::parallel::pool` uses it: workers sleep with their own futex bit and an advance
//! wakes only the participants' bits. The futex model does not wake a waiter whose bit was not
//! named, so a wrong mask deadlocks here as it would on Linux (see `a_wrong_wake_mask_deadlocks`).
//!
//! The dispatcher (the model's main thread, standing for the VM thread) publishes a job, arms
//! the countdown, advances the epoch with the participant count as payload and sleeps until
//! the countdown reaches zero; then it does it again, and finally shuts the workers down with
//! one more epoch. Each worker loops `seen = wait_past(seen)`, serves the job if its id is
//! below the payload and counts down. Loom explores the interleavings and reports a deadlock
//! if every thread is asleep, and a data race if the job or the workers' results are accessed
//! without a happens-before edge from the epoch or the countdown.
//!
//! The race 004 describes is the worker that finishes job 1, is preempted before going back
//! to sleep, and only tries to sleep after the dispatcher has already advanced the epoch for
//! job 2. With the epoch it must still serve job 2 (and `wait_past` or the futex's
//! compare-and-sleep makes it return at once). The models count the executions in which that
//! happened, to show loom does reach it.

use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::atomic::Ordering::Relaxed as StdRelaxed;
use std::sync::Arc as StdArc;

use concord_loom::parking::{participant_bits, worker_bit, Countdown, EpochParker};
use concord_loom::sync::futex;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::sync::Arc;
use loom::thread;

/// What the pool shares between the dispatcher and its workers.
struct Pool {
    parker: EpochParker,
    done: Countdown,
    shutdown: AtomicBool,
    /// The current job (its number), written by the dispatcher only while no worker reads it.
    job: UnsafeCell<u32>,
    /// Per worker, the jobs it served, in order; written only by that worker, read by the
    /// dispatcher after the countdown.
    served: Vec<UnsafeCell<Vec<u32>>>,
}

// SAFETY: the cells are accessed under the protocol being checked; loom's `UnsafeCell` reports
// any access pair that is not ordered by happens-before.
unsafe impl Sync for Pool {}
// SAFETY: as above.
unsafe impl Send for Pool {}

impl Pool {
    fn new(workers: usize) -> Self {
        Self {
            parker: EpochParker::default(),
            done: Countdown::default(),
            shutdown: AtomicBool::new(false),
            job: UnsafeCell::new(u32::MAX),
            served: (0..workers).map(|_| UnsafeCell::new(Vec::new())).collect(),
        }
    }

    /// `WorkerPool::run`: run job `job` on workers `0..n` and wait for them.
    fn run(&self, job: u32, n: u32) {
        self.run_waking(job, n, participant_bits(n as usize));
    }

    /// `run`, waking the futex bits `wake_bits`.
    fn run_waking(&self, job: u32, n: u32, wake_bits: u32) {
        // SAFETY: (checked by loom) every worker that read the previous job counted down
        // before the dispatcher got here.
        self.job.with_mut(|p| unsafe { *p = job });
        self.done.arm(n);
        self.parker.advance(n, wake_bits);
        self.done.wait_zero();
        for id in 0..n as usize {
            // SAFETY: (checked by loom) worker `id` counted down after writing.
            let last = self.served[id].with(|p| unsafe { (*p).last().copied() });
            assert_eq!(last, Some(job), "worker {id} did not serve job {job}");
        }
    }

    /// `WorkerPool`'s drop: publish the shutdown with an epoch of its own.
    fn shutdown(&self) {
        self.shutdown.store(true, Ordering::Release);
        self.parker.advance(0, u32::MAX);
    }

    /// `worker_loop`. `late` counts the times this worker came back from a job to find the
    /// next epoch already published (the preempted-before-sleeping race).
    fn worker(&self, id: usize, initial: u32, late: &StdAtomicUsize) {
        let mut seen = initial;
        loop {
            if seen != initial && self.parker.current() != seen {
                // Observation only: the dispatcher advanced while we were still on our way
                // to sleep. Only the protocol below decides what happens next.
                late.fetch_add(1, StdRelaxed);
            }
            seen = self.parker.wait_past(seen, worker_bit(id));
            if self.shutdown.load(Ordering::Acquire) {
                return;
            }
            if id >= EpochParker::payload(seen) as usize {
                continue;
            }
            // SAFETY: (checked by loom) published by the epoch advance we just observed.
            let job = self.job.with(|p| unsafe { *p });
            // SAFETY: only this worker writes its log; the dispatcher reads it after the
            // countdown.
            self.served[id].with_mut(|p| unsafe { (*p).push(job) });
            self.done.count_down();
        }
    }
}

/// Run `jobs` (participant counts) on a pool of `workers`, then shut it down, and check that
/// worker `i` served exactly the jobs it took part in, once each, in order.
fn pool_model(workers: usize, jobs: &[u32], late: &StdArc<StdAtomicUsize>) {
    let pool = Arc::new(Pool::new(workers));
    // As in `WorkerPool::new`: workers start from the epoch before any job.
    let initial = pool.parker.current();
    let handles: Vec<_> = (0..workers)
        .map(|id| {
            let (pool, late) = (pool.clone(), late.clone());
            thread::spawn(move || pool.worker(id, initial, &late))
        })
        .collect();
    for (j, &n) in jobs.iter().enumerate() {
        pool.run(j as u32, n);
    }
    pool.shutdown();
    for h in handles {
        h.join().unwrap();
    }
    for id in 0..workers {
        let expected: Vec<u32> = (0..jobs.len() as u32)
            .filter(|&j| (id as u32) < jobs[j as usize])
            .collect();
        // SAFETY: every worker has been joined.
        let got = pool.served[id].with(|p| unsafe { (*p).clone() });
        assert_eq!(got, expected, "worker {id}");
    }
}

/// Check `pool_model` with the given preemption bound; returns in how many executions a
/// worker was late.
fn check_pool(workers: usize, jobs: &'static [u32], preemptions: usize) -> usize {
    // Outside loom: a plain counter shared by every execution of the model.
    let late = StdArc::new(StdAtomicUsize::new(0));
    let counter = late.clone();
    check(preemptions, move || pool_model(workers, jobs, &counter));
    late.load(StdRelaxed)
}

/// Explore `model` with loom, at most `preemptions` preemptions per execution.
fn check(preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(model);
}

#[test]
fn one_worker_two_jobs() {
    let late = check_pool(1, &[1, 1], 4);
    assert!(late > 0, "loom never produced the late worker");
}

#[test]
fn two_workers_two_jobs() {
    let late = check_pool(2, &[2, 2], 2);
    assert!(late > 0, "loom never produced the late worker");
}

#[test]
fn participant_count_changes_between_jobs() {
    // Worker 1 sits out job 1 (payload 1): it must not touch the job or count down, and must
    // still serve job 2 once it comes back from skipping.
    let late = check_pool(2, &[1, 2], 2);
    assert!(late > 0, "loom never produced the late worker");
}

/// The bitset is what wakes a participant: waking every participant's bit but worker 1's
/// leaves worker 1 asleep with the dispatcher waiting for it, and loom reports the deadlock
/// (this is what shows that the models above check the masks `WorkerPool` uses).
#[test]
#[should_panic(expected = "deadlock")]
fn a_wrong_wake_mask_deadlocks() {
    check(1, || {
        // Leaked, as in `naive_reset_flag_deadlocks`.
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(2)));
        let initial = pool.parker.current();
        let workers: Vec<_> = (0..2)
            .map(|id| {
                let late = StdArc::new(StdAtomicUsize::new(0));
                thread::spawn(move || pool.worker(id, initial, &late))
            })
            .collect();
        // Worker 1 is asleep before the job in some interleavings; then only its bit wakes it.
        pool.run_waking(0, 2, worker_bit(0));
        pool.shutdown();
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// The naive protocol 004 warns about: a worker sleeps until a "go" flag is set and clears it
/// once it has finished the job, with no epoch. A worker preempted between finishing job 1
/// and clearing the flag erases the dispatcher's "go" for job 2 and sleeps forever, while the
/// dispatcher sleeps waiting for it: loom reports the deadlock.
#[test]
#[should_panic(expected = "deadlock")]
fn naive_reset_flag_deadlocks() {
    check(2, || {
        struct Naive {
            go: AtomicU32,
            done: Countdown,
        }
        // Leaked rather than in a loom `Arc`: dropping a loom `Arc` while unwinding from the
        // deadlock report would panic again and abort the test process.
        let shared: &'static Naive = Box::leak(Box::new(Naive {
            go: AtomicU32::new(0),
            done: Countdown::default(),
        }));
        let worker = {
            let s = shared;
            thread::spawn(move || {
                for _ in 0..2 {
                    while s.go.load(Ordering::Acquire) == 0 {
                        futex::wait(&s.go, 0, None);
                    }
                    // (serve the job)
                    s.done.count_down();
                    // "Suspend": reset the flag, then sleep until it is set again.
                    s.go.store(0, Ordering::Release);
                }
            })
        };
        for _ in 0..2 {
            shared.done.arm(1);
            shared.go.store(1, Ordering::Release);
            futex::wake(&shared.go, u32::MAX);
            shared.done.wait_zero();
        }
        worker.join().unwrap();
    });
}
