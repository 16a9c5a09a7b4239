//! The work-finding loop every GC worker runs during a parallel phase, written once:
//! root tasks (draining after each), then stealing, then termination. Which task queue, steal
//! policy and termination protocol it uses is the phase's [`PhasePolicy`]. The deques, clock,
//! atomics and CPU id come from `crate::sync`, so `concord-sim` runs this very loop on simulated
//! CPUs.
//!
//! # Segregated phases (004 §3.2.3)
//!
//! [`run_phase_segregated`] runs a phase whose workers each belong to a node. The task decides
//! which items belong to another node ([`WorkQueue::home_node`], [`WorkQueue::send`]): such an
//! item is a *message*, pushed onto that node's inbox (a lock-free FIFO, one per node) instead
//! of being processed. The engine then
//!
//! * restricts stealing to workers of the thief's node (the steal policy sees only them);
//! * has each worker take messages from its node's inbox before it tries to steal;
//! * never lets termination end the phase while a message is queued or being processed: a
//!   global in-flight count is raised before a message is queued and lowered only after the
//!   receiver has processed it (so the items it produced are already in the receiver's deque),
//!   and a worker offers termination only after reading the count as 0. Since only a worker
//!   outside the protocol can send, every message sent before the last offer was read as
//!   finished by its sender's last check, which is what the protocols' argument ("offered = n
//!   implies no item exists", [`super::termination`]) needs. Waiters peek at their node's inbox
//!   as well as their node's deques, so a message always brings a waiter of its node back;
//!   the watch gate for oversubscribed phases is left open (every waiter keeps peeking, and
//!   `owst` sleepers wake on their timeout), because a waiter blocked on the gate could be the
//!   only one of its node.
//!
//! Every node must have at least one worker (004 §4.2.2: "segregated spaces require at least
//! one thread per node"), or its messages would never be processed.

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use super::oversubscription::termination_watchers;
use super::policy::PhasePolicy;
use super::pool::WorkerPool;
use super::steal::{VictimQueues, VictimSelector};
use super::task_queue::{RootTask, RootTaskSource, TaskSource};
use super::termination::{self, Terminator};
use crate::sync::atomic::{AtomicUsize, Ordering};
use crate::sync::deque::{Injector, Steal, Stealer, Worker};
use crate::sync::time::Instant;
use crate::sync::{cpu, hint, thread, Mutex};
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

/// A worker's own deque: LIFO for its owner, stealable FIFO-end by others; in a segregated
/// phase also the way to send an item to another node's inbox.
pub struct WorkQueue<T> {
    deque: Worker<T>,
    /// The phase's inboxes and this worker's node, in a segregated phase.
    mail: Option<(Arc<Mailboxes<T>>, usize)>,
    /// Messages sent by this worker.
    sent: u64,
}

impl<T> WorkQueue<T> {
    /// The node this worker works for in a segregated phase ([`run_phase_segregated`]); `None`
    /// otherwise. Items that belong to another node must then be [`send`](Self::send)-ed there.
    #[inline(always)]
    pub fn home_node(&self) -> Option<usize> {
        self.mail.as_ref().map(|(_, node)| *node)
    }

    /// Send `item` to the inbox of node `node` (a segregated phase only): one of that node's
    /// workers will process it. Panics outside a segregated phase or for a node the phase does
    /// not have (both are bugs of the task).
    pub fn send(&mut self, node: usize, item: T) {
        let (mail, _) = self
            .mail
            .as_ref()
            .expect("send is only allowed in a segregated phase");
        mail.send(node, item);
        self.sent += 1;
    }

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

/// The inboxes of a segregated phase, one per node, and the count of messages in flight.
struct Mailboxes<T> {
    inboxes: Box<[Injector<T>]>,
    /// Messages queued or being processed (raised before queueing, lowered after processing).
    in_flight: CachePadded<AtomicUsize>,
}

impl<T> Mailboxes<T> {
    fn new(nodes: usize) -> Self {
        Self {
            inboxes: (0..nodes).map(|_| Injector::new()).collect(),
            in_flight: CachePadded::new(AtomicUsize::new(0)),
        }
    }

    fn send(&self, node: usize, item: T) {
        // SeqCst: the count must be raised before the message can be seen (and finished and
        // the count lowered) by a receiver, and must be ordered with the workers' checks
        // before they offer termination (module docs).
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.inboxes[node].push(item);
    }

    /// Take one message from `node`'s inbox.
    fn receive(&self, node: usize) -> Option<T> {
        loop {
            match self.inboxes[node].steal() {
                Steal::Success(item) => return Some(item),
                Steal::Empty => return None,
                Steal::Retry => hint::spin_loop(),
            }
        }
    }

    /// A received message has been processed.
    fn finished(&self) {
        // SeqCst: after the items it produced are in the receiver's deque (module docs).
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }
}

/// Which node each worker of a segregated phase works for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segregation {
    /// Number of nodes; every node in `0..nodes` must have a worker.
    pub nodes: usize,
    /// The node of each worker, by worker id (one entry per worker of the phase).
    pub worker_nodes: Vec<usize>,
}

impl Segregation {
    /// Whether every node has at least one worker and every worker a valid node.
    pub fn every_node_has_a_worker(&self) -> bool {
        self.worker_nodes.iter().all(|&n| n < self.nodes)
            && (0..self.nodes).all(|n| self.worker_nodes.contains(&n))
    }
}

struct Stealers<T>(Vec<Stealer<T>>);

/// The deques a worker may steal from, as its steal policy sees them: all workers, or in a
/// segregated phase only those of its node (candidate `i` is worker `members[i]`).
struct Victims<'a, T> {
    stealers: &'a Stealers<T>,
    members: Option<Vec<usize>>,
}

impl<T> Victims<'_, T> {
    /// The worker behind candidate `i`.
    fn stealer(&self, i: usize) -> &Stealer<T> {
        &self.stealers.0[self.worker(i)]
    }

    /// Items visible in these deques.
    fn visible(&self) -> usize {
        (0..self.count()).map(|i| self.stealer(i).len()).sum()
    }
}

impl<T> VictimQueues for Victims<'_, T> {
    fn count(&self) -> usize {
        self.members
            .as_ref()
            .map_or(self.stealers.0.len(), Vec::len)
    }
    fn len(&self, w: usize) -> usize {
        self.stealer(w).len()
    }
    fn worker(&self, w: usize) -> usize {
        self.members.as_ref().map_or(w, |m| m[w])
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
    run_phase_inner(pool, policy, task, roots, locals, None)
}

/// [`run_phase`] for a segregated phase (module docs): worker `w` works for node
/// `segregation.worker_nodes[w]`, steals only from workers of that node and processes the
/// messages sent to it. Panics if a node has no worker (the configuration refuses that).
pub fn run_phase_segregated<T: ParallelTask>(
    pool: &WorkerPool,
    policy: &PhasePolicy,
    task: &T,
    roots: Vec<RootTask<T::Root>>,
    locals: Vec<T::Local>,
    segregation: &Segregation,
) -> (Vec<T::Local>, Vec<WorkerPhaseStats>) {
    assert_eq!(
        segregation.worker_nodes.len(),
        locals.len(),
        "one node per worker"
    );
    assert!(
        segregation.every_node_has_a_worker(),
        "a segregated phase needs a worker on every node: {segregation:?}"
    );
    run_phase_inner(pool, policy, task, roots, locals, Some(segregation))
}

fn run_phase_inner<T: ParallelTask>(
    pool: &WorkerPool,
    policy: &PhasePolicy,
    task: &T,
    roots: Vec<RootTask<T::Root>>,
    locals: Vec<T::Local>,
    segregation: Option<&Segregation>,
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
    let mut terminator = Terminator::with_backoff(
        policy.termination,
        n,
        termination::waiting_loop(policy.termination, policy.termination_backoff),
    );
    if segregation.is_none() {
        // Segregated phases keep the gate open (module docs).
        terminator = terminator.with_watchers(termination_watchers(n, pool.usable_cpus()));
    }
    let mailboxes = segregation.map(|s| Arc::new(Mailboxes::new(s.nodes)));

    // Where each worker's wake-up and end are measured from (virtual time in a simulation).
    let phase_start = Instant::now();
    let job = |id: usize| {
        let begun = phase_start.elapsed().as_nanos() as u64;
        let (deque, mut local) = slots[id]
            .lock()
            .unwrap()
            .take()
            .expect("each worker runs once per phase");
        let node = segregation.map(|s| s.worker_nodes[id]);
        let mut wq = WorkQueue {
            deque,
            mail: mailboxes.as_ref().zip(node).map(|(m, n)| (m.clone(), n)),
            sent: 0,
        };
        let victims = Victims {
            stealers: &stealers,
            members: segregation.map(|s| {
                (0..n)
                    .filter(|&w| s.worker_nodes[w] == s.worker_nodes[id])
                    .collect()
            }),
        };
        let mut stats = WorkerPhaseStats {
            worker: id,
            ..Default::default()
        };
        worker_phase(
            id,
            policy,
            task,
            &queue,
            &victims,
            &terminator,
            &mut wq,
            &mut local,
            &mut stats,
        );
        stats.messages_sent = wq.sent;
        stats.phase_start_ns = Some(begun);
        stats.phase_end_ns = Some(phase_start.elapsed().as_nanos() as u64);
        *results[id].lock().unwrap() = Some((local, stats));
    };
    match tasks {
        Some(tasks) => pool.run_with_tasks(n, tasks, job),
        None => pool.run(n, job),
    }
    if let Some(m) = &mailboxes {
        debug_assert_eq!(m.in_flight(), 0, "a segregated phase ended with a message");
        debug_assert!(m.inboxes.iter().all(Injector::is_empty));
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
    victims: &Victims<'_, T::Item>,
    terminator: &Terminator,
    wq: &mut WorkQueue<T::Item>,
    local: &mut T::Local,
    stats: &mut WorkerPhaseStats,
) {
    stats.note_cpu(cpu::current_cpu());
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
        stats.note_cpu(cpu::current_cpu());
    }
    // 2. Stealing until the termination protocol says everyone is done. In a segregated phase
    //    the node's inbox comes first, and the victims are the node's workers.
    stats.steal_tasks += 1;
    let steal_start = Instant::now();
    let mail = wq.mail.clone();
    // My index among the victims (my id unless they are my node's workers only).
    let me = victims.members.as_ref().map_or(id, |m| {
        m.iter().position(|&w| w == id).expect("I am on my node")
    });
    let mut selector = VictimSelector::new(policy.steal, 0x5EED ^ ((id as u64 + 1) << 17));
    let mut failures = 0usize;
    loop {
        drain(task, local, wq, stats);
        if let Some((mail, node)) = &mail {
            if let Some(item) = mail.receive(*node) {
                stats.messages_received += 1;
                stats.items += 1;
                task.process(item, local, wq);
                mail.finished();
                failures = 0;
                continue;
            }
        }
        if victims.count() > 1 {
            stats.steal_attempts += 1;
            if let Some(item) = steal_from(me, victims, terminator, &mut selector) {
                stats.stolen += 1;
                failures = 0;
                stats.items += 1;
                task.process(item, local, wq);
                continue;
            }
            stats.steal_failures += 1;
            failures += 1;
            if failures < steal_failure_threshold(terminator, victims) {
                continue;
            }
        }
        if let Some((mail, _)) = &mail {
            if mail.in_flight() > 0 {
                // A message is queued for another node or being processed there: this worker
                // may not offer termination until it is finished (module docs).
                thread::yield_now();
                continue;
            }
        }
        selector.forget();
        let visible_work = || {
            victims.visible()
                + mail
                    .as_ref()
                    .map_or(0, |(mail, node)| mail.inboxes[*node].len())
        };
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
    stats.note_cpu(cpu::current_cpu());
}

/// Consecutive failed steals after which a worker offers termination. In a segregated phase
/// a worker steals only from its node's workers, so it gives up after 2·N_local failures
/// (N_local = that node's workers; 000 §6 on 004's NUMA-aware stealing), or the protocol's
/// own threshold when that is smaller (2·N_live late in a `live` phase).
fn steal_failure_threshold<I>(terminator: &Terminator, victims: &Victims<'_, I>) -> usize {
    let protocol = terminator.failure_threshold();
    match &victims.members {
        Some(node_workers) => protocol.min(2 * node_workers.len()),
        None => protocol,
    }
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
    victims: &Victims<'_, I>,
    terminator: &Terminator,
    selector: &mut VictimSelector,
) -> Option<I> {
    let victim = selector.select(me, victims, terminator)?;
    loop {
        match victims.stealer(victim).steal() {
            Steal::Success(item) => {
                selector.record_success(victim);
                return Some(item);
            }
            Steal::Empty => return None,
            Steal::Retry => hint::spin_loop(),
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
                // Every worker says when it started and ended, from the phase's start, and
                // its work fits between the two.
                for s in &stats {
                    let (Some(start), Some(end)) = (s.phase_start_ns, s.phase_end_ns) else {
                        panic!("{policy:?} n={n}: worker {} has no start or end", s.worker);
                    };
                    assert!(start <= end, "{policy:?} n={n}: {s:?}");
                    assert!(
                        s.root_ns + s.steal_ns <= end - start,
                        "{policy:?} n={n}: {s:?}"
                    );
                }
            }
        }
    }

    /// Items are (depth, node, pusher): a node's workers split an item into two children, one
    /// for each node in turn, and send the children of other nodes to them as messages. The
    /// pusher is the worker whose deque the item was pushed on (`None` for a message), so a
    /// steal across nodes shows as an item whose pusher is on another node.
    struct NodeSplit {
        leaves: AtomicU64,
        /// Items taken from the deque of a worker of another node (must stay 0).
        stolen_across: AtomicU64,
        worker_nodes: Vec<usize>,
        nodes: usize,
    }

    type NodeItem = (u32, usize, Option<usize>);

    impl ParallelTask for NodeSplit {
        type Item = NodeItem;
        type Root = u32;
        /// (worker id, leaves)
        type Local = (usize, u64);
        fn root_name(&self, _: &u32) -> &'static str {
            "seed"
        }
        fn run_root(&self, root: &u32, local: &mut (usize, u64), q: &mut WorkQueue<NodeItem>) {
            // Roots run anywhere; their items belong to node 0.
            q.push((*root, 0, Some(local.0)));
        }
        fn process(&self, item: NodeItem, local: &mut (usize, u64), q: &mut WorkQueue<NodeItem>) {
            let (depth, node, pusher) = item;
            let me = local.0;
            let home = q.home_node().expect("a segregated phase");
            assert_eq!(home, self.worker_nodes[me]);
            if home != node {
                q.send(node, (depth, node, None));
                return;
            }
            if pusher.is_some_and(|p| self.worker_nodes[p] != home) {
                self.stolen_across.fetch_add(1, Ordering::Relaxed);
            }
            if depth == 0 {
                local.1 += 1;
                self.leaves.fetch_add(1, Ordering::Relaxed);
            } else {
                q.push((depth - 1, node, Some(me)));
                q.push((depth - 1, (node + 1) % self.nodes, Some(me)));
            }
        }
    }

    fn segregation(workers: usize, nodes: usize) -> Segregation {
        Segregation {
            nodes,
            worker_nodes: (0..workers).map(|w| w % nodes).collect(),
        }
    }

    /// Every item is processed exactly once, by a worker of its node, nothing is stolen across
    /// nodes, every message is received, and no phase ends with one in flight (the engine's
    /// debug assertion), under every policy, both parkings and several node counts, with far
    /// more workers than CPUs too.
    #[test]
    fn segregated_phases_deliver_every_message_before_terminating() {
        let futex = WorkerPool::new(6, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let monitor = WorkerPool::new(6, "engine-test", ParkingKind::Monitor, |_| {}).unwrap();
        for round in 0..4u32 {
            for (i, policy) in PhasePolicy::all().enumerate() {
                let pool = if (i + round as usize).is_multiple_of(2) {
                    &futex
                } else {
                    &monitor
                };
                for (workers, nodes) in [(2, 2), (3, 2), (4, 2), (3, 3), (6, 3), (6, 2), (1, 1)] {
                    let seg = segregation(workers, nodes);
                    let task = NodeSplit {
                        leaves: AtomicU64::new(0),
                        stolen_across: AtomicU64::new(0),
                        worker_nodes: seg.worker_nodes.clone(),
                        nodes,
                    };
                    let depth = 8 + round;
                    let (locals, stats) = run_phase_segregated(
                        pool,
                        &policy,
                        &task,
                        seeds(&[depth, 0, 3]),
                        (0..workers).map(|w| (w, 0)).collect(),
                        &seg,
                    );
                    let ctx = format!("{policy:?} workers={workers} nodes={nodes}");
                    let expect = (1u64 << depth) + 1 + 8;
                    assert_eq!(task.leaves.load(Ordering::Relaxed), expect, "{ctx}");
                    assert_eq!(locals.iter().map(|l| l.1).sum::<u64>(), expect, "{ctx}");
                    assert_eq!(task.stolen_across.load(Ordering::Relaxed), 0, "{ctx}");
                    let sent: u64 = stats.iter().map(|s| s.messages_sent).sum();
                    let received: u64 = stats.iter().map(|s| s.messages_received).sum();
                    assert_eq!(sent, received, "{ctx}: every message processed once");
                    if nodes > 1 {
                        assert!(sent > 0, "{ctx}: half the children go to another node");
                    } else {
                        assert_eq!(sent, 0, "{ctx}");
                    }
                }
            }
        }
    }

    /// With no work at all, every worker fails exactly its threshold of steals once, then
    /// terminates: 2·N_local in a segregated phase (4 workers on 2 nodes: 2·2 = 4), 2·N = 8
    /// in an ordinary phase of the same workers, under the `fixed` protocol.
    #[test]
    fn segregated_phases_stop_stealing_after_twice_the_node_workers() {
        let pool = WorkerPool::new(4, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let policy = PhasePolicy::VANILLA;
        assert_eq!(policy.termination, crate::parallel::TerminationKind::Fixed);
        let task = Split {
            leaves: AtomicU64::new(0),
        };
        let (_, segregated) = run_phase_segregated(
            &pool,
            &policy,
            &task,
            vec![],
            vec![0u64; 4],
            &segregation(4, 2),
        );
        let (_, ordinary) = run_phase(&pool, &policy, &task, vec![], vec![0u64; 4]);
        for (stats, threshold) in [(&segregated, 4), (&ordinary, 8)] {
            for s in stats {
                assert_eq!(s.termination_exits, 0, "no work, so no offer is withdrawn");
                assert_eq!(s.steal_failures, threshold, "worker {}", s.worker);
            }
        }
    }

    #[test]
    #[should_panic(expected = "a worker on every node")]
    fn segregated_phases_refuse_a_node_without_workers() {
        let pool = WorkerPool::new(2, "engine-test", ParkingKind::Futex, |_| {}).unwrap();
        let task = Split {
            leaves: AtomicU64::new(0),
        };
        let seg = Segregation {
            nodes: 3,
            worker_nodes: vec![0, 1],
        };
        run_phase_segregated(
            &pool,
            &PhasePolicy::VANILLA,
            &task,
            vec![],
            vec![0u64; 2],
            &seg,
        );
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
