//! The work-finding loop every GC worker runs during a parallel phase, written once:
//! root tasks (draining after each), then stealing, then termination. Which task queue, steal
//! policy and termination protocol it uses is the phase's [`PhasePolicy`].

use std::sync::Mutex;
use std::time::Instant;

use crossbeam_deque::{Steal, Stealer, Worker};

use super::oversubscription::termination_watchers;
use super::policy::PhasePolicy;
use super::pool::WorkerPool;
use super::steal::{VictimQueues, VictimSelector};
use super::task_queue::{RootTask, RootTaskSource, TaskSource};
use super::termination::Terminator;
use crate::telemetry::WorkerPhaseStats;

/// One parallel phase's work, supplied by the collector.
pub trait ParallelTask: Sync {
    /// A unit of work in a worker's deque (e.g. a reference slot to scan).
    type Item: Send;
    /// A root task (e.g. "scan mutator 3's handles", "scan card stripe 7").
    type Root: Sync;
    /// Per-worker state kept across the phase (allocation buffers, counters).
    type Local: Send;

    /// Task type name for telemetry.
    fn root_name(&self, root: &Self::Root) -> &'static str;
    /// Execute a root task, pushing the items it discovers.
    fn run_root(
        &self,
        root: &Self::Root,
        local: &mut Self::Local,
        queue: &mut WorkQueue<Self::Item>,
    );
    /// Process one item, pushing the items it discovers.
    fn process(&self, item: Self::Item, local: &mut Self::Local, queue: &mut WorkQueue<Self::Item>);
}

/// A worker's own deque: LIFO for its owner, stealable FIFO-end by others.
pub struct WorkQueue<T> {
    deque: Worker<T>,
}

impl<T> WorkQueue<T> {
    /// Push an item for later processing (by this worker or a thief).
    #[inline(always)]
    pub fn push(&mut self, item: T) {
        self.deque.push(item);
    }

    /// Pop the most recently pushed item.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<T> {
        self.deque.pop()
    }

    /// Items currently queued.
    pub fn len(&self) -> usize {
        self.deque.len()
    }

    /// Whether the deque is empty.
    pub fn is_empty(&self) -> bool {
        self.deque.is_empty()
    }
}

struct Stealers<T>(Vec<Stealer<T>>);

impl<T> VictimQueues for Stealers<T> {
    fn count(&self) -> usize {
        self.0.len()
    }
    fn len(&self, w: usize) -> usize {
        self.0[w].len()
    }
}

type WorkerSlot<T> = Mutex<
    Option<(
        Worker<<T as ParallelTask>::Item>,
        <T as ParallelTask>::Local,
    )>,
>;
type ResultSlot<T> = Mutex<Option<(<T as ParallelTask>::Local, WorkerPhaseStats)>>;

/// Run one phase on `locals.len()` workers of `pool` under `policy` and return each worker's
/// local state and counters (indexed by worker id).
pub fn run_phase<T: ParallelTask>(
    pool: &WorkerPool,
    policy: &PhasePolicy,
    task: &T,
    roots: Vec<RootTask<T::Root>>,
    locals: Vec<T::Local>,
) -> (Vec<T::Local>, Vec<WorkerPhaseStats>) {
    let n = locals.len();
    assert!(
        n >= 1 && n <= pool.size(),
        "phase needs 1..=pool size workers"
    );
    let deques: Vec<Worker<T::Item>> = (0..n).map(|_| Worker::new_lifo()).collect();
    let stealers = Stealers(deques.iter().map(|d| d.stealer()).collect());
    let slots: Vec<WorkerSlot<T>> = deques
        .into_iter()
        .zip(locals)
        .map(|p| Mutex::new(Some(p)))
        .collect();
    let results: Vec<ResultSlot<T>> = (0..n).map(|_| Mutex::new(None)).collect();
    let mut queue = TaskSource::new(policy.task_queue, policy.task_affinity, roots, n, pool);
    // The `monitor` queue's tasks go to the pool's task manager, published with the job.
    let tasks = queue.take_task_fifo();
    let terminator = Terminator::new(policy.termination, n)
        .with_watchers(termination_watchers(n, pool.usable_cpus()));

    let job = |id: usize| {
        let (deque, mut local) = slots[id]
            .lock()
            .unwrap()
            .take()
            .expect("each worker runs once per phase");
        let mut wq = WorkQueue { deque };
        let mut stats = WorkerPhaseStats {
            worker: id,
            ..Default::default()
        };
        worker_phase(
            id,
            policy,
            task,
            &queue,
            &stealers,
            &terminator,
            &mut wq,
            &mut local,
            &mut stats,
        );
        *results[id].lock().unwrap() = Some((local, stats));
    };
    match tasks {
        Some(tasks) => pool.run_with_tasks(n, tasks, job),
        None => pool.run(n, job),
    }

    results
        .into_iter()
        .map(|m| m.into_inner().unwrap().expect("every worker reported"))
        .unzip()
}

#[allow(clippy::too_many_arguments)]
fn worker_phase<T: ParallelTask>(
    id: usize,
    policy: &PhasePolicy,
    task: &T,
    queue: &impl RootTaskSource<T::Root>,
    stealers: &Stealers<T::Item>,
    terminator: &Terminator,
    wq: &mut WorkQueue<T::Item>,
    local: &mut T::Local,
    stats: &mut WorkerPhaseStats,
) {
    stats.sample_cpu();
    // 1. Root tasks, draining the local deque after each (so it stays short).
    while let Some(root) = queue.get_task(id) {
        let start = Instant::now();
        task.run_root(root, local, wq);
        drain(task, local, wq, stats);
        // A root task includes draining what it found, as HotSpot's tasks do before the
        // task manager hears of their completion.
        queue.task_done(id);
        *stats.root_tasks.entry(task.root_name(root)).or_default() += 1;
        stats.root_ns += start.elapsed().as_nanos() as u64;
        stats.sample_cpu();
    }
    // 2. Stealing until the termination protocol says everyone is done.
    stats.steal_tasks += 1;
    let steal_start = Instant::now();
    let mut victims = VictimSelector::new(policy.steal, 0x5EED ^ ((id as u64 + 1) << 17));
    let mut failures = 0usize;
    loop {
        drain(task, local, wq, stats);
        if stealers.count() > 1 {
            stats.steal_attempts += 1;
            if let Some(item) = steal_from(id, stealers, terminator, &mut victims) {
                stats.stolen += 1;
                failures = 0;
                stats.items += 1;
                task.process(item, local, wq);
                continue;
            }
            stats.steal_failures += 1;
            failures += 1;
            if failures < terminator.failure_threshold() {
                continue;
            }
        }
        victims.forget();
        let visible_work = || stealers.0.iter().map(|s| s.len()).sum::<usize>();
        let offered = Instant::now();
        stats.termination_entries += 1;
        let done = terminator.offer_termination(id, visible_work);
        stats.termination_ns += offered.elapsed().as_nanos() as u64;
        if done {
            break;
        }
        stats.termination_exits += 1;
        failures = 0;
    }
    let total = steal_start.elapsed().as_nanos() as u64;
    stats.steal_ns += total.saturating_sub(stats.termination_ns);
    stats.sample_cpu();
}

#[inline]
fn drain<T: ParallelTask>(
    task: &T,
    local: &mut T::Local,
    wq: &mut WorkQueue<T::Item>,
    stats: &mut WorkerPhaseStats,
) {
    while let Some(item) = wq.pop() {
        stats.items += 1;
        task.process(item, local, wq);
    }
}

fn steal_from<I>(
    me: usize,
    stealers: &Stealers<I>,
    terminator: &Terminator,
    victims: &mut VictimSelector,
) -> Option<I> {
    let victim = victims.select(me, stealers, terminator)?;
    loop {
        match stealers.0[victim].steal() {
            Steal::Success(item) => {
                victims.record_success(victim);
                return Some(item);
            }
            Steal::Empty => return None,
            Steal::Retry => std::hint::spin_loop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::policy::ParkingKind;
    use crate::parallel::task_queue::Affinity;
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

    fn seeds(roots: &[u32]) -> Vec<RootTask<u32>> {
        roots
            .iter()
            .enumerate()
            .map(|(i, &r)| RootTask {
                root: r,
                affinity: match i % 3 {
                    0 => Affinity::Any,
                    1 => Affinity::Prefers(i),
                    _ => Affinity::Stripe(i),
                },
            })
            .collect()
    }

    /// Roots seed trees of items; each item n > 0 splits into two items n-1.
    struct Split {
        leaves: AtomicU64,
    }

    impl ParallelTask for Split {
        type Item = u32;
        type Root = u32;
        type Local = u64;
        fn root_name(&self, _: &u32) -> &'static str {
            "seed"
        }
        fn run_root(&self, root: &u32, _: &mut u64, q: &mut WorkQueue<u32>) {
            q.push(*root);
        }
        fn process(&self, item: u32, local: &mut u64, q: &mut WorkQueue<u32>) {
            if item == 0 {
                *local += 1;
                self.leaves.fetch_add(1, Ordering::Relaxed);
            } else {
                q.push(item - 1);
                q.push(item - 1);
            }
        }
    }

    #[test]
    fn all_work_is_done_exactly_once_with_uneven_roots() {
        let futex = WorkerPool::new(4, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let monitor = WorkerPool::new(4, "engine-test", ParkingKind::Monitor, |_| {}).unwrap();
        for (i, policy) in PhasePolicy::all().enumerate() {
            let pool = if i % 2 == 0 { &futex } else { &monitor };
            for n in 1..=4 {
                let task = Split {
                    leaves: AtomicU64::new(0),
                };
                // One huge root and several empty-ish ones: uneven queues force stealing.
                let roots = seeds(&[14, 0, 0, 1]);
                let (locals, stats) = run_phase(pool, &policy, &task, roots, vec![0u64; n]);
                let expect = (1u64 << 14) + 1 + 1 + 2;
                assert_eq!(
                    task.leaves.load(Ordering::Relaxed),
                    expect,
                    "{policy:?} n={n}"
                );
                assert_eq!(locals.iter().sum::<u64>(), expect);
                let root_count: u64 = stats.iter().map(|s| s.root_task_count()).sum();
                assert_eq!(root_count, 4);
                assert!(stats.iter().all(|s| s.termination_entries >= 1));
            }
        }
    }

    #[test]
    fn no_roots_terminates() {
        let pool = WorkerPool::new(3, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let task = Split {
            leaves: AtomicU64::new(0),
        };
        let (_, stats) = run_phase(&pool, &PhasePolicy::VANILLA, &task, vec![], vec![0u64; 3]);
        assert_eq!(task.leaves.load(Ordering::Relaxed), 0);
        assert_eq!(stats.len(), 3);
    }

    #[test]
    fn oversubscribed_phases_repeat_without_hanging() {
        let pool = WorkerPool::new(8, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let runs = AtomicUsize::new(0);
        let policies: Vec<PhasePolicy> = PhasePolicy::all().collect();
        for i in 0..200 {
            let task = Split {
                leaves: AtomicU64::new(0),
            };
            let policy = &policies[i % policies.len()];
            run_phase(
                &pool,
                policy,
                &task,
                seeds(&[(i % 9) as u32; 3]),
                vec![0u64; 8],
            );
            assert_eq!(task.leaves.load(Ordering::Relaxed), 3 << (i % 9));
            runs.fetch_add(1, Ordering::Relaxed);
        }
        assert_eq!(runs.load(Ordering::Relaxed), 200);
    }
}
