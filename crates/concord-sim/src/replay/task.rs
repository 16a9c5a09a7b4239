//! One recorded collection redone as a parallel phase of the collector's own engine (compiled
//! against the engine its including module names `parallel`; see [`crate::replay`]).
//!
//! The root tasks are the recorded ones, with their affinity tags; a root task pushes the
//! objects its slots reached. Processing an object claims it exactly once, as the real
//! collector's forwarding CAS does: the first worker to reach it copies it, later reaches cost
//! the load of its claim word and are dropped. What a step costs in virtual time (nothing on
//! real threads, where the charges do nothing):
//!
//! * an object copy: [`exec::charge_copy`]`(1, size)` (a promotion failure's object, left in
//!   place, and a full collection's mark: `(1, 0)`, the header and slots but no payload);
//! * a followed reference: the atomic load of its object's claim word when it is processed
//!   (plus the CAS for the reach that claims it);
//! * a handle-stack chunk: its slots read, `charge_copy(0, 8 · slots)`;
//! * a card stripe: its scanned old objects and one card-table byte per card of its extent,
//!   `charge_copy(scanned_objects, bytes / CARD_SIZE)`.

use concord::memory::card_table::CARD_SIZE;
use concord::telemetry::gc_trace::{Fate, TraceAffinity, TraceRootKind};
use concord::telemetry::WorkerPhaseStats;

use super::parallel::engine::{
    run_phase, run_phase_segregated, ParallelTask, Segregation, WorkQueue,
};
use super::parallel::task_queue::{Affinity, RootTask};
use super::parallel::{PhasePolicy, WorkerPool};
use crate::exec;
use crate::replay::memory::Memory;
use crate::replay::ReplayCollection;
use crate::sync::atomic::{AtomicU32, Ordering};

/// Bytes of a handle-stack slot.
const SLOT_BYTES: u64 = 8;

/// Claim word of an object nobody has reached yet (otherwise: the claiming worker + 1).
const UNCLAIMED: u32 = 0;

/// The replay of one recorded collection.
pub struct ReplayTask<'c> {
    collection: &'c ReplayCollection,
    /// Where the objects live on a NUMA machine ([`Memory`]); `None`: uniform memory.
    memory: Option<&'c Memory>,
    /// Per object: [`UNCLAIMED`] or its copier's id + 1 (the forwarding word).
    claims: Vec<AtomicU32>,
}

/// What one worker did in a replayed collection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayLocal {
    /// The worker's id.
    pub worker: usize,
    /// Objects it claimed (copied, left in place after a promotion failure, or marked).
    pub objects: u64,
    /// Bytes it copied (survivors and promoted) or marked live (full collections).
    pub bytes: u64,
    /// Of those, bytes read from another node's memory than its CPU's (NUMA machines only).
    pub bytes_remote: u64,
    /// Objects it claimed that lay on its CPU's node, and on another (NUMA machines only).
    pub objects_local: u64,
    /// See `objects_local`.
    pub objects_remote: u64,
    /// Of those, bytes it promoted.
    pub bytes_promoted: u64,
    /// Reaches of objects already claimed (dropped after one load).
    pub dropped_reaches: u64,
}

/// The map from a recorded tag to the engine's.
fn affinity(tag: TraceAffinity) -> Affinity {
    match tag {
        TraceAffinity::Any => Affinity::Any,
        TraceAffinity::Prefers(w) => Affinity::Prefers(w as usize),
        TraceAffinity::Stripe(w) => Affinity::Stripe(w as usize),
    }
}

impl<'c> ReplayTask<'c> {
    /// The replay of `collection`, nothing claimed yet.
    pub fn new(collection: &'c ReplayCollection) -> Self {
        Self {
            collection,
            memory: None,
            claims: (0..collection.objects())
                .map(|_| AtomicU32::new(UNCLAIMED))
                .collect(),
        }
    }

    /// The replay with its objects placed on the nodes of `memory`: each copy is charged on
    /// the node it reads ([`exec::charge_copy_on`]) and counted local or remote for the
    /// worker's CPU; under `segregated` an object of another node is sent to that node's
    /// workers ([`run_segregated`](Self::run_segregated)).
    pub fn with_memory(mut self, memory: Option<&'c Memory>) -> Self {
        self.memory = memory;
        self
    }

    /// The root tasks (indices into the collection's roots) with their affinity tags.
    pub fn roots(&self) -> Vec<RootTask<usize>> {
        self.collection
            .roots
            .iter()
            .enumerate()
            .map(|(i, r)| RootTask {
                root: i,
                affinity: affinity(r.affinity),
            })
            .collect()
    }

    /// Fresh per-worker state for `workers` workers.
    pub fn locals(workers: usize) -> Vec<ReplayLocal> {
        (0..workers)
            .map(|worker| ReplayLocal {
                worker,
                ..ReplayLocal::default()
            })
            .collect()
    }

    /// The worker that claimed object `id`, if any did.
    pub fn claimed_by(&self, id: u32) -> Option<usize> {
        match self.claims[id as usize].load(Ordering::Relaxed) {
            UNCLAIMED => None,
            w => Some(w as usize - 1),
        }
    }

    /// Run the replay as one phase on `workers` workers of `pool` under `policy`; returns each
    /// worker's state and counters, its `bytes_copied` filled in.
    pub fn run(
        &self,
        pool: &WorkerPool,
        policy: &PhasePolicy,
        workers: usize,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        let (locals, stats) = run_phase(pool, policy, self, self.roots(), Self::locals(workers));
        self.finish(locals, stats)
    }

    /// [`run`](Self::run) as the engine's segregated phase: worker `w` works for node
    /// `worker_nodes[w]` (every node must have a worker).
    pub fn run_segregated(
        &self,
        pool: &WorkerPool,
        policy: &PhasePolicy,
        worker_nodes: Vec<usize>,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        let workers = worker_nodes.len();
        let segregation = Segregation {
            nodes: worker_nodes.iter().max().map_or(1, |&n| n + 1),
            worker_nodes,
        };
        let (locals, stats) = run_phase_segregated(
            pool,
            policy,
            self,
            self.roots(),
            Self::locals(workers),
            &segregation,
        );
        self.finish(locals, stats)
    }

    /// The workers' counters with the replay's figures filled in.
    fn finish(
        &self,
        locals: Vec<ReplayLocal>,
        mut stats: Vec<WorkerPhaseStats>,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        for (s, l) in stats.iter_mut().zip(&locals) {
            s.bytes_copied = l.bytes;
            if self.memory.is_some() {
                s.numa.bytes_copied_remote = l.bytes_remote;
                s.numa.bytes_copied_local = l.bytes - l.bytes_remote;
                s.numa.objects_scanned_local = l.objects_local;
                s.numa.objects_scanned_remote = l.objects_remote;
            }
        }
        (locals, stats)
    }
}

impl ParallelTask for ReplayTask<'_> {
    type Item = u32;
    type Root = usize;
    type Local = ReplayLocal;

    fn root_name(&self, root: &usize) -> &'static str {
        // The names the scavenger gives its root tasks.
        match self.collection.roots[*root].kind {
            TraceRootKind::HandleStack { .. } => "ThreadRoots",
            TraceRootKind::CardStripe { .. } => "OldToYoungRoots",
        }
    }

    fn run_root(&self, root: &usize, _: &mut ReplayLocal, queue: &mut WorkQueue<u32>) {
        let root = &self.collection.roots[*root];
        match root.kind {
            TraceRootKind::HandleStack { slots } => {
                exec::charge_copy(0, slots.saturating_mul(SLOT_BYTES));
            }
            TraceRootKind::CardStripe {
                bytes,
                scanned_objects,
            } => exec::charge_copy(scanned_objects, bytes / CARD_SIZE as u64),
        }
        for &id in self.collection.reaches(root) {
            queue.push(id);
        }
    }

    fn process(&self, id: u32, local: &mut ReplayLocal, queue: &mut WorkQueue<u32>) {
        let node = self.memory.map(|m| m.object_node(id));
        if let (Some(home), Some(node)) = (queue.home_node(), node) {
            if node != home {
                // Segregated: an object of another node is that node's workers' to copy.
                queue.send(node, id);
                return;
            }
        }
        let claim = &self.claims[id as usize];
        let mine = local.worker as u32 + 1;
        // The forwarding check, then the forwarding CAS: one winner per object.
        if claim.load(Ordering::Acquire) != UNCLAIMED
            || claim
                .compare_exchange(UNCLAIMED, mine, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            local.dropped_reaches += 1;
            return;
        }
        let c = self.collection;
        let size = c.size(id);
        local.objects += 1;
        let copy = |objects, bytes| match node {
            Some(node) => exec::charge_copy_on(objects, bytes, node),
            None => exec::charge_copy(objects, bytes),
        };
        let remote = match (self.memory, node, exec::current_cpu()) {
            (Some(m), Some(node), Some(cpu)) => Some(m.node_of(cpu) != node),
            _ => None,
        };
        match remote {
            Some(true) => local.objects_remote += 1,
            Some(false) => local.objects_local += 1,
            None => {}
        }
        // Copied objects move their payload; a mark reads the header and slots only. Both
        // count in the worker's bytes (bytes marked live, for a full collection).
        let counted = match c.fate(id) {
            Fate::Survivor | Fate::Promoted => {
                copy(1, size);
                if c.fate(id) == Fate::Promoted {
                    local.bytes_promoted += size;
                }
                true
            }
            Fate::Marked => {
                copy(1, 0);
                true
            }
            Fate::Stayed => {
                copy(1, 0);
                false
            }
        };
        if counted {
            local.bytes += size;
            if remote == Some(true) {
                local.bytes_remote += size;
            }
        }
        for &r in c.refs_of(id) {
            queue.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tests::tree;
    use concord::parallel::ParkingKind;

    fn replay(objects: u32) -> ReplayCollection {
        ReplayCollection::try_from(tree(1, objects)).unwrap()
    }

    #[test]
    fn every_object_is_copied_exactly_once_under_every_policy_on_real_threads() {
        let c = replay(5_000);
        let (objects, bytes) = c.count(|_| true);
        for parking in [ParkingKind::Monitor, ParkingKind::Futex] {
            let pool = WorkerPool::new(4, "replay-test", parking, |_| {}).unwrap();
            for policy in [
                PhasePolicy::VANILLA,
                PhasePolicy::MODERN,
                PhasePolicy::OPTIMIZED,
                PhasePolicy::SUO18,
            ] {
                let task = ReplayTask::new(&c);
                let (locals, stats) = task.run(&pool, &policy, 4);
                assert!((0..c.objects() as u32).all(|id| task.claimed_by(id).is_some()));
                // Each object is counted by the worker its claim word names, and no other.
                let mut per_worker = vec![0u64; 4];
                for id in 0..c.objects() as u32 {
                    per_worker[task.claimed_by(id).unwrap()] += 1;
                }
                let counted: Vec<u64> = locals.iter().map(|l| l.objects).collect();
                assert_eq!(counted, per_worker, "{policy:?}");
                assert_eq!(counted.iter().sum::<u64>(), objects);
                assert_eq!(locals.iter().map(|l| l.bytes).sum::<u64>(), bytes);
                assert_eq!(
                    locals.iter().map(|l| l.bytes_promoted).sum::<u64>(),
                    c.bytes_promoted()
                );
                // Every reach is processed: the claims plus the dropped ones. Reaches: the
                // roots' plus every followed reference.
                let reaches: u64 = c
                    .roots
                    .iter()
                    .map(|r| c.reaches(r).len() as u64)
                    .sum::<u64>()
                    + (0..c.objects() as u32)
                        .map(|id| c.refs_of(id).len() as u64)
                        .sum::<u64>();
                let dropped: u64 = locals.iter().map(|l| l.dropped_reaches).sum();
                assert_eq!(objects + dropped, reaches, "{policy:?}");
                assert_eq!(stats.iter().map(|s| s.items).sum::<u64>(), reaches);
                // Per-worker stats: ids, bytes, the three root tasks, a steal task each.
                assert_eq!(
                    stats.iter().map(|s| s.worker).collect::<Vec<_>>(),
                    vec![0, 1, 2, 3]
                );
                for (s, l) in stats.iter().zip(&locals) {
                    assert_eq!(s.bytes_copied, l.bytes);
                    assert_eq!(s.steal_tasks, 1);
                }
                let roots = |name| {
                    stats
                        .iter()
                        .map(|s| s.root_tasks.get(name).copied().unwrap_or(0))
                        .sum::<u64>()
                };
                assert_eq!((roots("ThreadRoots"), roots("OldToYoungRoots")), (2, 1));
            }
        }
    }

    #[test]
    fn a_shared_object_is_claimed_once_and_its_other_reaches_dropped() {
        // Object 0 is reached twice by the first root and by every third object.
        let c = replay(9);
        let pool = WorkerPool::new(1, "replay-one", ParkingKind::Futex, |_| {}).unwrap();
        let task = ReplayTask::new(&c);
        let (locals, _) = task.run(&pool, &PhasePolicy::OPTIMIZED, 1);
        // Reaches of 0: two from the root, from objects 2, 5, 8: five, one claims.
        // Others: each of 1..9 is reached once by its parent; 1 and 2 also by roots, 8 by the
        // stripe: 3 more dropped.
        assert_eq!(locals[0].objects, 9);
        assert_eq!(locals[0].dropped_reaches, 4 + 3);
        assert_eq!(task.claimed_by(0), Some(0));
    }

    #[test]
    fn affinity_tags_map_to_the_engines() {
        assert_eq!(affinity(TraceAffinity::Any), Affinity::Any);
        assert_eq!(affinity(TraceAffinity::Prefers(3)), Affinity::Prefers(3));
        assert_eq!(affinity(TraceAffinity::Stripe(7)), Affinity::Stripe(7));
        let c = replay(4);
        let roots = ReplayTask::new(&c).roots();
        let tags: Vec<Affinity> = roots.iter().map(|r| r.affinity).collect();
        assert_eq!(
            tags,
            vec![Affinity::Prefers(0), Affinity::Any, Affinity::Stripe(1)]
        );
    }
}
