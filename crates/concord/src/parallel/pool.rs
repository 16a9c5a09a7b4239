//! Persistent GC worker threads. [`WorkerPool::run`] runs one job on the first `n` workers and
//! returns when all of them are done; between jobs workers sleep on an epoch futex.

use std::cell::UnsafeCell;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use super::parking::{Countdown, EpochParker, MAX_PAYLOAD};

type Job = dyn Fn(usize) + Sync;

struct Shared {
    parker: EpochParker,
    done: Countdown,
    /// The current job; written only by `run` while no worker reads it (between jobs).
    job: UnsafeCell<Option<*const Job>>,
    shutdown: AtomicBool,
}

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
    /// Start `n` workers named `{name}-{i}`. `on_start(i)` runs first on worker `i`'s thread.
    pub fn new(
        n: usize,
        name: &str,
        on_start: impl Fn(usize) + Send + Sync + Clone + 'static,
    ) -> io::Result<Self> {
        assert!(n >= 1, "a worker pool needs at least one worker");
        let shared = Arc::new(Shared {
            parker: EpochParker::default(),
            done: Countdown::default(),
            job: UnsafeCell::new(None),
            shutdown: AtomicBool::new(false),
        });
        let mut threads = Vec::with_capacity(n);
        // Workers start from the epoch before any job: one that starts late must still see
        // the first job as new.
        let initial = shared.parker.current();
        for id in 0..n {
            let shared = shared.clone();
            let on_start = on_start.clone();
            let t = std::thread::Builder::new()
                .name(format!("{name}-{id}"))
                .spawn(move || {
                    on_start(id);
                    worker_loop(id, initial, &shared)
                })?;
            threads.push(t);
        }
        Ok(Self {
            shared,
            threads,
            dispatch: Mutex::new(()),
        })
    }

    /// Number of worker threads.
    pub fn size(&self) -> usize {
        self.threads.len()
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
        // `job` concurrently; the epoch advance below publishes the write.
        unsafe { *self.shared.job.get() = Some(job_ptr) };
        self.shared.done.arm(n as u32);
        self.shared.parker.advance(n as u32);
        self.shared.done.wait_zero();
        // SAFETY: every participant counted down, so no worker touches `job` any more.
        unsafe { *self.shared.job.get() = None };
    }
}

fn worker_loop(id: usize, initial_epoch: u32, shared: &Shared) {
    let mut seen = initial_epoch;
    loop {
        seen = shared.parker.wait_past(seen);
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        // The participant count travels in the same word as the epoch, so a worker that wakes
        // late never mistakes a newer job for one it must serve: only participants of the
        // epoch it observed touch the job, and the dispatcher waits for exactly those.
        if id >= EpochParker::payload(seen) as usize {
            continue;
        }
        // SAFETY: the dispatcher wrote the job before advancing the epoch we just observed
        // with Acquire, and keeps it alive until we count down.
        let job = unsafe { (*shared.job.get()).expect("job published with the epoch") };
        let guard = AbortOnPanic;
        // SAFETY: `run` keeps the closure alive until all participants have counted down.
        unsafe { (*job)(id) };
        std::mem::forget(guard);
        shared.done.count_down();
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
        self.shared.parker.advance(0);
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
        let pool = WorkerPool::new(4, "test-gc", |_| {}).unwrap();
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
                    "n={n} worker {i}"
                );
            }
        }
    }

    #[test]
    fn many_back_to_back_jobs_complete() {
        let pool = WorkerPool::new(3, "test-gc", |_| {}).unwrap();
        let total = AtomicUsize::new(0);
        for _ in 0..2000 {
            pool.run(3, |_| {
                total.fetch_add(1, Ordering::Relaxed);
            });
        }
        assert_eq!(total.load(Ordering::Relaxed), 6000);
    }
}
