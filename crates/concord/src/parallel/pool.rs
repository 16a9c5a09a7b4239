//! Persistent GC worker threads. [`WorkerPool::run`] runs one job on the first `n` workers and
//! returns when all of them are done. Between jobs workers sleep in one of two ways
//! ([`ParkingKind`]):
//!
//! * `futex` (004 §3.1.2, lazy parking): workers sleep on an epoch futex; the dispatcher bumps
//!   the epoch and waits on a countdown. No lock anywhere, no final barrier.
//! * `monitor` (OpenJDK 8, 004 §2.3.3): workers wait in the WaitSet of the GC task-manager
//!   [`Monitor`]; the dispatcher publishes the job under the lock and `notify_all`s, which moves
//!   them to the monitor's contention queue so they wake one heir at a time. At the end each
//!   worker checks in under the same lock (the final barrier); the last one wakes the VM thread
//!   waiting on a second monitor.

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::monitor::Monitor;
use super::parking::{Countdown, EpochParker, MAX_PAYLOAD};
use super::policy::ParkingKind;

type Job = dyn Fn(usize) + Sync;

/// The GC task manager's monitor state under `monitor` parking.
#[derive(Default)]
struct TaskManagerState {
    /// Jobs published so far.
    epoch: u64,
    /// Workers taking part in the current job.
    participants: usize,
    /// Participants that have checked in at the final barrier.
    finished: usize,
}

enum Parking {
    Futex {
        parker: EpochParker,
        done: Countdown,
    },
    Monitor {
        /// Workers wait here between jobs and check in here at the end of one.
        task_manager: Box<Monitor<TaskManagerState>>,
        /// The dispatcher (VM thread) waits here for the last worker; `true` when done.
        vm: Box<Monitor<bool>>,
    },
}

struct Shared {
    parking: Parking,
    /// The current job; written only by `run` while no worker reads it (between jobs).
    job: UnsafeCell<Option<*const Job>>,
    shutdown: AtomicBool,
    /// Kernel thread id of each worker (0 until it has started), for affinity changes.
    tids: Box<[AtomicI32]>,
    /// The CPU each worker was on when it last went idle ([`NO_CPU`] before its first job):
    /// where it will most likely wake, known without reading `/proc`.
    last_cpus: Box<[AtomicU32]>,
    /// Workers that have started (their tid and first CPU are known); `new` waits for all.
    started: (Mutex<usize>, Condvar),
}

impl Shared {
    /// A worker has started.
    fn note_started(&self) {
        let (count, all) = &self.started;
        *count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        all.notify_all();
    }

    /// Wait until `n` workers have started.
    fn wait_started(&self, n: usize) {
        let (count, all) = &self.started;
        let mut started = count.lock().unwrap_or_else(|p| p.into_inner());
        while *started < n {
            started = all.wait(started).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Record the CPU worker `id` is on now: where it will most likely wake next.
    fn note_cpu(&self, id: usize) {
        if let Some(cpu) = crate::os::cpu::current_cpu() {
            // Relaxed: a placement hint, read by the VM thread between jobs.
            self.last_cpus[id].store(cpu, Ordering::Relaxed);
        }
    }
}

/// [`WorkerPool::worker_last_cpus`]' marker for "not known yet".
const NO_CPU: u32 = u32::MAX;

// SAFETY: `job` is written by the dispatcher only while every worker is parked (before the
// epoch advance that publishes it, and after the countdown that ends it), and read by workers
// only in between; the epoch's Release/Acquire orders the accesses.
unsafe impl Sync for Shared {}
// SAFETY: see above; the raw job pointer is only dereferenced while `run` keeps it alive.
unsafe impl Send for Shared {}

/// A fixed set of GC worker threads.
pub struct WorkerPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Serialises `run` calls (one collection at a time).
    dispatch: Mutex<()>,
}

impl WorkerPool {
    /// Start `n` workers named `{name}-{i}` that park as `parking` says. `on_start(i)` runs
    /// first on worker `i`'s thread. Returns once every worker has started, so their thread
    /// ids and CPUs are known before the first job.
    pub fn new(
        n: usize,
        name: &str,
        parking: ParkingKind,
        on_start: impl Fn(usize) + Send + Sync + Clone + 'static,
    ) -> io::Result<Self> {
        assert!(n >= 1, "a worker pool needs at least one worker");
        let parking = match parking {
            ParkingKind::Futex => Parking::Futex {
                parker: EpochParker::default(),
                done: Countdown::default(),
            },
            ParkingKind::Monitor => Parking::Monitor {
                task_manager: Box::new(Monitor::new(TaskManagerState::default())),
                vm: Box::new(Monitor::new(false)),
            },
        };
        let shared = Arc::new(Shared {
            parking,
            job: UnsafeCell::new(None),
            shutdown: AtomicBool::new(false),
            tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
            last_cpus: (0..n).map(|_| AtomicU32::new(NO_CPU)).collect(),
            started: (Mutex::new(0), Condvar::new()),
        });
        // Workers start from the epoch before any job: one that starts late must still see
        // the first job as new.
        let initial = match &shared.parking {
            Parking::Futex { parker, .. } => u64::from(parker.current()),
            Parking::Monitor { .. } => 0,
        };
        // Built up thread by thread, so that a failed spawn drops (and shuts down) the workers
        // already started.
        let mut pool = Self {
            shared,
            threads: Vec::with_capacity(n),
            dispatch: Mutex::new(()),
        };
        for id in 0..n {
            let shared = pool.shared.clone();
            let on_start = on_start.clone();
            let t = std::thread::Builder::new()
                .name(format!("{name}-{id}"))
                .spawn(move || {
                    let tid = crate::os::sched::current_tid();
                    shared.tids[id].store(tid, Ordering::Release);
                    on_start(id);
                    // Where the worker starts (after `on_start`, which may pin it) is where it
                    // will most likely wake for its first job: known before that job, so the
                    // first collection's placement decision already sees every worker.
                    shared.note_cpu(id);
                    shared.note_started();
                    worker_loop(id, initial, &shared)
                })?;
            pool.threads.push(t);
        }
        pool.shared.wait_started(n);
        Ok(pool)
    }

    /// Number of worker threads.
    pub fn size(&self) -> usize {
        self.threads.len()
    }

    /// Kernel thread ids of the workers, by worker id (0 for a worker not started yet).
    pub fn worker_tids(&self) -> Vec<i32> {
        self.shared
            .tids
            .iter()
            .map(|t| t.load(Ordering::Acquire))
            .collect()
    }

    /// The CPU each worker was on when it finished its last job, or when it started if it has
    /// run none yet (`None` until the thread has started), by worker id. Cheap: no system call.
    pub fn worker_last_cpus(&self) -> Vec<Option<u32>> {
        self.shared
            .last_cpus
            .iter()
            .map(|c| Some(c.load(Ordering::Relaxed)).filter(|&c| c != NO_CPU))
            .collect()
    }

    /// How the workers park between jobs.
    pub fn parking(&self) -> ParkingKind {
        match self.shared.parking {
            Parking::Futex { .. } => ParkingKind::Futex,
            Parking::Monitor { .. } => ParkingKind::Monitor,
        }
    }

    /// Run `job(worker_id)` on workers `0..n` (clamped to the pool size) and wait for all.
    /// A panic inside a job aborts the process: a half-done collection cannot be unwound.
    pub fn run<F: Fn(usize) + Sync>(&self, n: usize, job: F) {
        let n = n.clamp(1, self.size().min(MAX_PAYLOAD as usize));
        let _one_at_a_time = self.dispatch.lock().unwrap_or_else(|p| p.into_inner());
        let job_ref: &(dyn Fn(usize) + Sync + '_) = &job;
        // SAFETY: erasing the lifetime is sound because this function does not return before
        // every worker has finished with the job (countdown below), and the pointer is cleared
        // before `job` goes out of scope.
        let job_ptr: *const Job =
            unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + '_), &'static Job>(job_ref) };
        // SAFETY: all workers are parked (the previous run waited for them), so nobody reads
        // `job` concurrently; the epoch advance (or monitor release) below publishes the write.
        unsafe { *self.shared.job.get() = Some(job_ptr) };
        match &self.shared.parking {
            Parking::Futex { parker, done } => {
                done.arm(n as u32);
                parker.advance(n as u32);
                done.wait_zero();
            }
            Parking::Monitor { task_manager, vm } => {
                *vm.lock() = false;
                {
                    let mut tm = task_manager.lock();
                    tm.epoch += 1;
                    tm.participants = n;
                    tm.finished = 0;
                    tm.notify_all();
                }
                let mut done = vm.lock();
                while !*done {
                    done.wait();
                }
            }
        }
        // SAFETY: every participant checked in, so no worker touches `job` any more.
        unsafe { *self.shared.job.get() = None };
    }
}

/// Sleep until a job newer than `seen` is published; returns its epoch and participant count.
fn wait_for_job(shared: &Shared, seen: u64) -> (u64, usize) {
    match &shared.parking {
        Parking::Futex { parker, .. } => {
            let word = parker.wait_past(seen as u32);
            // The participant count travels in the same word as the epoch, so a worker that
            // wakes late never pairs one job's epoch with another's count.
            (u64::from(word), EpochParker::payload(word) as usize)
        }
        Parking::Monitor { task_manager, .. } => {
            let mut tm = task_manager.lock();
            while tm.epoch == seen {
                tm.wait();
            }
            (tm.epoch, tm.participants)
        }
    }
}

/// A participant is done with the current job.
fn check_in(shared: &Shared) {
    match &shared.parking {
        Parking::Futex { done, .. } => done.count_down(),
        Parking::Monitor { task_manager, vm } => {
            let last = {
                let mut tm = task_manager.lock();
                tm.finished += 1;
                tm.finished == tm.participants
            };
            if last {
                let mut done = vm.lock();
                *done = true;
                done.notify_all();
            }
        }
    }
}

fn worker_loop(id: usize, initial_epoch: u64, shared: &Shared) {
    let mut seen = initial_epoch;
    loop {
        let (epoch, participants) = wait_for_job(shared, seen);
        seen = epoch;
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        // Only participants of the epoch observed touch the job, and the dispatcher waits for
        // exactly those.
        if id >= participants {
            continue;
        }
        // SAFETY: the dispatcher wrote the job before publishing the epoch we just observed
        // (Acquire on the epoch word, or the monitor's lock), and keeps it alive until every
        // participant has checked in.
        let job = unsafe { (*shared.job.get()).expect("job published with the epoch") };
        let guard = AbortOnPanic;
        // SAFETY: `run` keeps the closure alive until all participants have checked in.
        unsafe { (*job)(id) };
        std::mem::forget(guard);
        shared.note_cpu(id);
        check_in(shared);
    }
}

/// Aborts the process if dropped during a panic (rayon's `AbortIfPanic`).
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        eprintln!("concord: a GC worker panicked; the heap may be half-collected, aborting");
        std::process::abort();
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        match &self.shared.parking {
            Parking::Futex { parker, .. } => parker.advance(0),
            Parking::Monitor { task_manager, .. } => {
                let mut tm = task_manager.lock();
                tm.epoch += 1;
                tm.participants = 0;
                tm.notify_all();
            }
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn runs_each_active_worker_once_per_job() {
        for parking in ParkingKind::ALL {
            let pool = WorkerPool::new(4, "test-gc", *parking, |_| {}).unwrap();
            for n in [1, 2, 4, 9] {
                let hits: Vec<AtomicUsize> = (0..4).map(|_| AtomicUsize::new(0)).collect();
                pool.run(n, |id| {
                    hits[id].fetch_add(1, Ordering::Relaxed);
                });
                let expect = n.min(4);
                for (i, h) in hits.iter().enumerate() {
                    assert_eq!(
                        h.load(Ordering::Relaxed),
                        usize::from(i < expect),
                        "{parking} n={n} worker {i}"
                    );
                }
            }
        }
    }

    #[test]
    fn many_back_to_back_jobs_complete() {
        for parking in ParkingKind::ALL {
            let pool = WorkerPool::new(3, "test-gc", *parking, |_| {}).unwrap();
            let total = AtomicUsize::new(0);
            for i in 0..2000 {
                // Alternate the participant count so late wakers meet jobs they are not in.
                pool.run(1 + i % 3, |_| {
                    total.fetch_add(1, Ordering::Relaxed);
                });
            }
            assert_eq!(
                total.load(Ordering::Relaxed),
                667 + 667 * 2 + 666 * 3,
                "{parking}"
            );
        }
    }
}
