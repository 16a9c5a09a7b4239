//! Persistent GC worker threads. [`WorkerPool::run`] runs one job on the first `n` workers and
//! returns when all of them are done; between jobs workers sleep as the [`ParkingKind`] says
//! (see [`super::parking`]).
//!
//! The pool also owns the GC task manager's [`Monitor`]: the lock of the `monitor` task queue
//! and, under `monitor` parking, the monitor idle workers wait on, one and the same as in
//! OpenJDK 8 ([`WorkerPool::run_with_tasks`], [`WorkerPool::get_task`]).
//!
//! Threads, atomics, locks, the CPU id and the per-thread usage come from `crate::sync`, so
//! `concord-sim` runs this very pool with simulated threads parked in virtual time.

use std::cell::UnsafeCell;
use std::io;
use std::sync::Arc;

use super::monitor::{Monitor, MonitorStats};
use super::parking::futex::{participant_bits, worker_bit, Countdown, EpochParker, MAX_PAYLOAD};
use super::parking::monitor::{self as monitor_parking, TaskManagerState};
use super::policy::ParkingKind;
use super::task_queue::monitor_fifo::TaskFifo;
use crate::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use crate::sync::thread::{self, JoinHandle};
use crate::sync::usage::{self, ThreadUsage};
use crate::sync::{cpu, Condvar, Mutex, ABORT_ON_WORKER_PANIC};
use crate::telemetry::MonitorRecord;

type Job = dyn Fn(usize) + Sync;

/// A collection record's view of the task manager's monitor counters (here rather than in
/// `monitor.rs`, which `concord-loom` compiles without the telemetry room).
impl From<MonitorStats> for MonitorRecord {
    fn from(s: MonitorStats) -> Self {
        MonitorRecord {
            acquisitions: s.acquisitions,
            contended: s.contended,
            barges: s.barges,
            heir_wakeups: s.heir_wakeups,
            futile_wakeups: s.futile_wakeups,
        }
    }
}

/// How the workers park: the per-kind state (the task manager's monitor is always there).
enum Parking {
    Futex {
        parker: EpochParker,
        done: Countdown,
    },
    Monitor {
        /// The dispatcher (VM thread) waits here for the last worker; `true` when done.
        vm: Box<Monitor<bool>>,
    },
}

struct Shared {
    parking: Parking,
    /// The GC task manager's monitor: the `monitor` task queue's lock, and under `monitor`
    /// parking also where idle workers wait.
    task_manager: Box<Monitor<TaskManagerState>>,
    /// The current job; written only by `run` while no worker reads it (between jobs).
    job: UnsafeCell<Option<*const Job>>,
    shutdown: AtomicBool,
    /// Kernel thread id of each worker (0 until it has started), for affinity changes.
    tids: Box<[AtomicI32]>,
    /// The CPU each worker was on when it last went idle, or when it started ([`NO_CPU`]
    /// before that): where it will most likely wake, known without reading `/proc`.
    last_cpus: Box<[AtomicU32]>,
    /// Per worker, the first root task it dequeued while waking under the task manager's lock
    /// ([`NO_TASK`] if none); only that worker writes and reads its slot.
    first_tasks: Box<[AtomicUsize]>,
    /// Per worker, the times it came back from parking to a new job.
    wakeups: Box<[AtomicU64]>,
    /// Per worker, the times it came back from parking to a job it takes no part in.
    futile_wakeups: Box<[AtomicU64]>,
    /// Per worker, what it used while running jobs (CPU time, page faults, context switches),
    /// summed over all its jobs: each job's share is read by the worker itself with two
    /// `getrusage` calls, at the start and at the end of its part. Written only by that worker
    /// before it checks in, read by the dispatcher between jobs.
    job_usage: Box<[Mutex<ThreadUsage>]>,
    /// Workers that have started (their tid and first CPU are known); `new` waits for all.
    started: (Mutex<usize>, Condvar),
    /// Run by each participant on its own thread before its part of every job
    /// ([`WorkerPool::set_job_start`]).
    job_start: std::sync::OnceLock<Box<dyn Fn(usize) + Send + Sync>>,
}

/// Most workers a pool can have: a job's participant count travels in the futex epoch word.
pub const MAX_WORKERS: usize = MAX_PAYLOAD as usize;

/// [`WorkerPool::worker_last_cpus`]' marker for "not known yet".
const NO_CPU: u32 = u32::MAX;
/// An empty first-task slot.
const NO_TASK: usize = usize::MAX;

// SAFETY: `job` is written by the dispatcher only while every worker is parked (before the
// epoch advance that publishes it, and after the countdown that ends it), and read by workers
// only in between; the epoch's Release/Acquire (or the monitor's lock) orders the accesses.
unsafe impl Sync for Shared {}
// SAFETY: see above; the raw job pointer is only dereferenced while `run` keeps it alive.
unsafe impl Send for Shared {}

impl Shared {
    /// Record the CPU worker `id` is on now: where it will most likely wake next.
    fn note_cpu(&self, id: usize) {
        if let Some(cpu) = cpu::current_cpu() {
            // Relaxed: a placement hint, read by the VM thread between jobs.
            self.last_cpus[id].store(cpu, Ordering::Relaxed);
        }
    }

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

    /// Sleep until a job newer than `seen` is published; returns its epoch and participant
    /// count. Under `monitor` parking a participant also dequeues its first root task.
    fn wait_for_job(&self, id: usize, seen: u64) -> (u64, usize) {
        match &self.parking {
            Parking::Futex { parker, .. } => {
                let word = parker.wait_past(seen as u32, worker_bit(id));
                // The participant count travels in the same word as the epoch, so a worker
                // that wakes late never pairs one job's epoch with another's count.
                (u64::from(word), EpochParker::payload(word) as usize)
            }
            Parking::Monitor { .. } => {
                let woken = monitor_parking::wait_for_job(&self.task_manager, id, seen);
                if let Some(task) = woken.first_task {
                    // Relaxed: only this worker reads its slot, later in the job.
                    self.first_tasks[id].store(task, Ordering::Relaxed);
                }
                (woken.epoch, woken.participants)
            }
        }
    }

    /// A participant is done with the current job.
    fn check_in(&self) {
        match &self.parking {
            Parking::Futex { done, .. } => done.count_down(),
            Parking::Monitor { vm } => monitor_parking::check_in(&self.task_manager, vm),
        }
    }
}

/// A fixed set of GC worker threads.
pub struct WorkerPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Serialises `run` calls (one collection at a time).
    dispatch: Mutex<()>,
    /// The usable CPUs of the thread that created the pool, when it did.
    usable_cpus: usize,
}

impl WorkerPool {
    /// Start `n` workers (1..=[`MAX_WORKERS`]) named `{name}-{i}` that park as `parking` says.
    /// `on_start(i)` runs first on worker `i`'s thread. Returns once every worker has started,
    /// so their thread ids and CPUs are known before the first job.
    pub fn new(
        n: usize,
        name: &str,
        parking: ParkingKind,
        on_start: impl Fn(usize) + Send + Sync + Clone + 'static,
    ) -> io::Result<Self> {
        assert!(
            (1..=MAX_WORKERS).contains(&n),
            "a worker pool has 1..={MAX_WORKERS} workers, not {n}"
        );
        let parking = match parking {
            ParkingKind::Futex => Parking::Futex {
                parker: EpochParker::default(),
                done: Countdown::default(),
            },
            ParkingKind::Monitor => Parking::Monitor {
                vm: Box::new(Monitor::new(false)),
            },
        };
        let per_worker = |init: u64| (0..n).map(|_| AtomicU64::new(init)).collect();
        let shared = Arc::new(Shared {
            parking,
            task_manager: Box::new(Monitor::new(TaskManagerState::default())),
            job: UnsafeCell::new(None),
            shutdown: AtomicBool::new(false),
            tids: (0..n).map(|_| AtomicI32::new(0)).collect(),
            last_cpus: (0..n).map(|_| AtomicU32::new(NO_CPU)).collect(),
            first_tasks: (0..n).map(|_| AtomicUsize::new(NO_TASK)).collect(),
            wakeups: per_worker(0),
            futile_wakeups: per_worker(0),
            job_usage: (0..n).map(|_| Mutex::new(ThreadUsage::default())).collect(),
            started: (Mutex::new(0), Condvar::new()),
            job_start: std::sync::OnceLock::new(),
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
            usable_cpus: cpu::usable_cpu_count(),
        };
        for id in 0..n {
            let shared = pool.shared.clone();
            let on_start = on_start.clone();
            let t = thread::Builder::new()
                .name(format!("{name}-{id}"))
                .spawn(move || {
                    let tid = thread::current_tid();
                    // Release pairs with the Acquire in `worker_tids` (the start-up wait also
                    // orders it).
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

    /// How many CPUs the workers may use: the affinity mask of the thread that created the
    /// pool, capped by the cgroup CPU limit (`os::cpu::usable_cpu_count`), at least 1.
    pub fn usable_cpus(&self) -> usize {
        self.usable_cpus
    }

    /// Kernel thread ids of the workers, by worker id.
    pub fn worker_tids(&self) -> Vec<i32> {
        self.shared
            .tids
            .iter()
            // Acquire pairs with the worker's Release store at start.
            .map(|t| t.load(Ordering::Acquire))
            .collect()
    }

    /// The CPU each worker was on when it finished its last job, or when it started if it has
    /// run none yet, by worker id. Cheap: no system call.
    pub fn worker_last_cpus(&self) -> Vec<Option<u32>> {
        self.shared
            .last_cpus
            .iter()
            .map(|c| Some(c.load(Ordering::Relaxed)).filter(|&c| c != NO_CPU))
            .collect()
    }

    /// Per worker: how often it came back from parking to a new job, and how often that job
    /// was one it takes no part in (a futile wake-up).
    pub fn worker_wakeups(&self) -> Vec<(u64, u64)> {
        self.shared
            .wakeups
            .iter()
            .zip(self.shared.futile_wakeups.iter())
            .map(|(w, f)| (w.load(Ordering::Relaxed), f.load(Ordering::Relaxed)))
            .collect()
    }

    /// Per worker, what it used while running jobs so far (cumulative): the difference of two
    /// readings taken around a collection is each worker's share of that collection's pause.
    /// Cheap: no system call (the workers read their own usage when they run a job).
    pub fn worker_usage(&self) -> Vec<ThreadUsage> {
        self.shared
            .job_usage
            .iter()
            .map(|u| *u.lock().unwrap_or_else(|p| p.into_inner()))
            .collect()
    }

    /// How the workers park between jobs.
    pub fn parking(&self) -> ParkingKind {
        match self.shared.parking {
            Parking::Futex { .. } => ParkingKind::Futex,
            Parking::Monitor { .. } => ParkingKind::Monitor,
        }
    }

    /// The GC task manager's monitor counters so far (all uses: parking and task queue).
    pub fn task_manager_stats(&self) -> MonitorStats {
        self.shared.task_manager.stats()
    }

    /// Have every participant run `hook(id)` on its own thread before its part of each job
    /// (GC-thread affinity decides there, 000 §4.1). Set once; a second call is refused
    /// (`false`).
    pub fn set_job_start(&self, hook: impl Fn(usize) + Send + Sync + 'static) -> bool {
        self.shared.job_start.set(Box::new(hook)).is_ok()
    }

    /// Run `job(worker_id)` on workers `0..n` (clamped to the pool size) and wait for all.
    /// A panic inside a job aborts the process: a half-done collection cannot be unwound.
    pub fn run<F: Fn(usize) + Sync>(&self, n: usize, job: F) {
        self.dispatch(n, None, &job);
    }

    /// Like [`run`](Self::run), with `tasks` as the phase's root-task queue behind the task
    /// manager's monitor: workers take them with [`get_task`](Self::get_task). Under `monitor`
    /// parking the tasks are published with the job, and each woken worker dequeues its first
    /// task in the critical section in which it sees the job (OpenJDK 8's `get_task`).
    pub fn run_with_tasks<F: Fn(usize) + Sync>(&self, n: usize, tasks: TaskFifo, job: F) {
        self.dispatch(n, Some(tasks), &job);
    }

    /// The next root task for `worker` from the task manager's queue: the one it took while
    /// waking, if any, else one dequeued under the monitor's lock.
    pub fn get_task(&self, worker: usize) -> Option<usize> {
        if let Some(slot) = self.shared.first_tasks.get(worker) {
            // Relaxed: the slot is only ever touched by this worker's thread.
            let first = slot.swap(NO_TASK, Ordering::Relaxed);
            if first != NO_TASK {
                return Some(first);
            }
        }
        self.shared.task_manager.lock().tasks.dequeue(worker)
    }

    /// A root task from the task manager's queue is done: take the monitor once more and
    /// notify, as OpenJDK 8's `GCTaskManager::note_completion` does after every task.
    pub fn task_completed(&self) {
        let mut tm = self.shared.task_manager.lock();
        tm.completed += 1;
        tm.notify_all();
    }

    /// Install `tasks` as the task manager's queue without running a job (tests of the
    /// `monitor` task queue with threads of their own).
    #[cfg(test)]
    pub(crate) fn install_tasks(&self, tasks: TaskFifo) {
        self.shared.task_manager.lock().tasks = tasks;
    }

    fn dispatch(&self, n: usize, tasks: Option<TaskFifo>, job: &(dyn Fn(usize) + Sync + '_)) {
        let n = n.clamp(1, self.size());
        let _one_at_a_time = self.dispatch.lock().unwrap_or_else(|p| p.into_inner());
        // SAFETY: erasing the lifetime is sound because this function does not return before
        // every worker has finished with the job (countdown below), and the pointer is cleared
        // before `job` goes out of scope.
        let job_ptr: *const Job =
            unsafe { std::mem::transmute::<&(dyn Fn(usize) + Sync + '_), &'static Job>(job) };
        // SAFETY: all workers are parked (the previous run waited for them), so nobody reads
        // `job` concurrently; the epoch advance (or monitor release) below publishes the write.
        unsafe { *self.shared.job.get() = Some(job_ptr) };
        let tm = &self.shared.task_manager;
        match &self.shared.parking {
            Parking::Futex { parker, done } => {
                if let Some(tasks) = tasks {
                    tm.lock().tasks = tasks;
                }
                done.arm(n as u32);
                parker.advance(n as u32, participant_bits(n));
                done.wait_zero();
            }
            Parking::Monitor { vm } => {
                monitor_parking::publish(tm, n, tasks.unwrap_or_default());
                monitor_parking::wait_done(vm);
            }
        }
        // SAFETY: every participant checked in, so no worker touches `job` any more.
        unsafe { *self.shared.job.get() = None };
    }
}

fn worker_loop(id: usize, initial_epoch: u64, shared: &Shared) {
    let mut seen = initial_epoch;
    loop {
        let (epoch, participants) = shared.wait_for_job(id, seen);
        seen = epoch;
        // Acquire pairs with the Release in `drop` (the epoch or the monitor also orders it).
        if shared.shutdown.load(Ordering::Acquire) {
            return;
        }
        // Relaxed: statistics, read between jobs.
        shared.wakeups[id].fetch_add(1, Ordering::Relaxed);
        // Only participants of the epoch observed touch the job, and the dispatcher waits for
        // exactly those.
        if id >= participants {
            shared.futile_wakeups[id].fetch_add(1, Ordering::Relaxed);
            continue;
        }
        // SAFETY: the dispatcher wrote the job before publishing the epoch we just observed
        // (Acquire on the epoch word, or the monitor's lock), and keeps it alive until every
        // participant has checked in.
        let job = unsafe { (*shared.job.get()).expect("job published with the epoch") };
        let guard = AbortOnPanic;
        // Read by the worker itself, on its own thread, so the dispatcher never reads another
        // thread's usage on the pause path; both readings cost one system call each.
        let before = usage::current_thread();
        if let Some(hook) = shared.job_start.get() {
            hook(id);
        }
        // SAFETY: `run` keeps the closure alive until all participants have checked in.
        unsafe { (*job)(id) };
        std::mem::forget(guard);
        let used = usage::current_thread().since(&before);
        // Before checking in: the dispatcher reads the sums once every participant has.
        shared.job_usage[id]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .add(&used);
        shared.note_cpu(id);
        shared.check_in();
    }
}

/// Aborts the process if dropped during a panic (rayon's `AbortIfPanic`).
struct AbortOnPanic;

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if ABORT_ON_WORKER_PANIC {
            log::error!("a GC worker panicked; the heap may be half-collected, aborting");
            std::process::abort();
        }
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        // Release pairs with the workers' Acquire load after they wake for the last epoch.
        self.shared.shutdown.store(true, Ordering::Release);
        match &self.shared.parking {
            Parking::Futex { parker, .. } => parker.advance(0, u32::MAX),
            Parking::Monitor { .. } => {
                monitor_parking::publish(&self.shared.task_manager, 0, TaskFifo::default())
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
    fn a_job_that_touches_fresh_memory_is_charged_to_the_worker_that_ran_it() {
        const PAGES: usize = 128;
        let pool = WorkerPool::new(2, "test-gc", ParkingKind::Futex, |_| {}).unwrap();
        let page = crate::os::vm::page_size();
        let map = crate::os::vm::ZeroedMapping::new(PAGES * page).unwrap();
        let before = pool.worker_usage();
        pool.run(1, |_| {
            for i in 0..PAGES {
                // SAFETY: inside the fresh read-write mapping, untouched before this job.
                unsafe { std::ptr::write_volatile((map.base() + i * page) as *mut u8, 1) };
            }
        });
        let after = pool.worker_usage();
        let ran = after[0].since(&before[0]);
        assert!(ran.minor_faults >= 1, "{ran:?}");
        // Worker 1 took no part: it is charged nothing.
        assert_eq!(after[1].since(&before[1]), ThreadUsage::default());
    }

    #[test]
    #[should_panic(expected = "a worker pool has 1..=1023 workers, not 1024")]
    fn a_pool_refuses_more_workers_than_a_job_can_name() {
        // Before, a pool of 1024 ran jobs on 1023 of them, and a phase waiting for 1024 hung.
        let _ = WorkerPool::new(MAX_WORKERS + 1, "test-gc", ParkingKind::Futex, |_| {});
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

    #[test]
    fn futex_parking_wakes_only_the_participants() {
        let pool = WorkerPool::new(4, "test-gc", ParkingKind::Futex, |_| {}).unwrap();
        // Let every worker go to sleep on the futex first (a worker still on its way to sleep
        // sees the new epoch without being woken, and counts it like a wake-up): wait until
        // each is blocked in the futex system call.
        pool.run(4, |_| {});
        for tid in pool.worker_tids() {
            crate::os::futex::wait_until_blocked_in_futex(tid);
        }
        let before = pool.worker_wakeups();
        for _ in 0..200 {
            pool.run(2, |_| {});
        }
        let after = pool.worker_wakeups();
        for id in 0..2 {
            assert_eq!(after[id].0 - before[id].0, 200, "participant {id}");
        }
        for id in 2..4 {
            // Only a worker that had not fallen asleep yet may see a job it is not part of.
            let seen = after[id].0 - before[id].0;
            assert!(
                seen <= 1,
                "worker {id} woke {seen} times for jobs it sat out"
            );
            assert_eq!(after[id].0 - before[id].0, after[id].1 - before[id].1);
        }
        assert_eq!(participant_bits(2), 0b11);
        assert_eq!(participant_bits(31), u32::MAX >> 1);
        assert_eq!(participant_bits(32), u32::MAX);
        assert_eq!(worker_bit(40), 1 << 31);
    }

    /// `n` root tasks, task `i` tagged `tag(i)`.
    fn tasks(
        n: usize,
        tag: impl Fn(usize) -> crate::parallel::task_queue::Affinity,
    ) -> Vec<crate::parallel::task_queue::RootTask<usize>> {
        (0..n)
            .map(|i| crate::parallel::task_queue::RootTask {
                root: i,
                affinity: tag(i),
            })
            .collect()
    }

    #[test]
    fn monitor_parking_hands_out_the_first_task_at_wake_up() {
        use crate::parallel::task_queue::Affinity;
        let pool = WorkerPool::new(3, "test-gc", ParkingKind::Monitor, |_| {}).unwrap();
        let tasks = tasks(7, |_| Affinity::Any);
        for _ in 0..50 {
            let got: Vec<Mutex<Vec<usize>>> = (0..3).map(|_| Mutex::new(Vec::new())).collect();
            let woke_with_a_task = AtomicUsize::new(0);
            let before = pool.task_manager_stats();
            pool.run_with_tasks(3, TaskFifo::new(&tasks, 3, false), |id| {
                // A worker dequeues its first task in the critical section it woke in, unless
                // the workers that woke before it (or barged back) took them all: its slot is
                // full before it asks for a task.
                let first = pool.shared.first_tasks[id].load(Ordering::Relaxed);
                let mut mine = got[id].lock().unwrap();
                while let Some(t) = pool.get_task(id) {
                    mine.push(t);
                    pool.task_completed();
                }
                if first != NO_TASK {
                    woke_with_a_task.fetch_add(1, Ordering::Relaxed);
                    assert_eq!(mine.first(), Some(&first));
                }
            });
            // The first worker to wake always finds the tasks published with the job.
            assert!(woke_with_a_task.into_inner() >= 1);
            let mut all: Vec<usize> = got.iter().flat_map(|g| g.lock().unwrap().clone()).collect();
            all.sort_unstable();
            assert_eq!(all, (0..7).collect::<Vec<_>>());
            let used = pool.task_manager_stats().since(&before);
            // Publish, 3 wake-ups, 4 more dequeues at least, 7 completions, 3 check-ins.
            assert!(used.acquisitions >= 1 + 3 + 7 + 3, "{used:?}");
        }
        assert_eq!(pool.shared.task_manager.lock().completed, 50 * 7);
    }

    #[test]
    fn the_monitor_task_queue_works_under_futex_parking_too() {
        use crate::parallel::task_queue::Affinity;
        let pool = WorkerPool::new(2, "test-gc", ParkingKind::Futex, |_| {}).unwrap();
        let tasks = tasks(5, |i| Affinity::Prefers(i % 2));
        let taken = AtomicUsize::new(0);
        pool.run_with_tasks(2, TaskFifo::new(&tasks, 2, true), |id| {
            while pool.get_task(id).is_some() {
                taken.fetch_add(1, Ordering::Relaxed);
            }
        });
        assert_eq!(taken.into_inner(), 5);
    }
}
