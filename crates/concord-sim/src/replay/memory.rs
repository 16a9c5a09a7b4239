//! Where a replayed collection's objects live on a simulated NUMA machine, under the heap's
//! NUMA layout (004 §3.2), and so which node's memory each copy reads. A GC trace holds no
//! addresses, so the placement follows each layout's rule on the object ids instead: ids are
//! given in the order the collection reached the objects, and a run of [`OBJECTS_PER_RUN`]
//! consecutive ids stands for a page.
//!
//! * `off` (first touch): every page of the young generation was first touched by the thread
//!   that built the heap, so all of it is on node 0 (004 §3.2.2's finding for Parallel
//!   Scavenge).
//! * `interleaved`: pages round-robin over the nodes.
//! * `fragmented`: each mutator allocates in the eden fragment of its node, and the mutators
//!   are spread over the nodes, so a run of objects is on one node, the runs spread evenly
//!   (the same rule as `interleaved` for the objects read).
//! * `segregated`: placed as `fragmented`; the engine sends each object to a worker of its
//!   node ([`Memory::segregated_worker_nodes`]), so reads stay local.
//!
//! A copy is charged on the node of the object it reads ([`crate::exec::charge_copy_on`]); the
//! write goes to the worker's own PLAB, which every layout but `off` places on the worker's
//! node. Under `fragmented` and `segregated` the to-space has a fragment per node
//! ([`Memory::young_fragments`]), whose PLABs the node's workers cut from its own top.

use concord::os::numa::{worker_node, NumaLayout};

use crate::machine::{CpuSet, Machine};

/// Consecutive object ids that stand for one page (4 KiB of objects of about 64 bytes).
pub const OBJECTS_PER_RUN: u32 = 64;

/// The memory of a replayed heap on a simulated machine with more than one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Memory {
    layout: NumaLayout,
    /// The node of every CPU.
    cpu_nodes: Vec<usize>,
    /// The CPUs of every node.
    node_cpus: Vec<CpuSet>,
}

impl Memory {
    /// The memory of a heap laid out as `layout` on `machine`; `None` on a one-node machine,
    /// where placement makes no difference.
    pub fn new(layout: NumaLayout, machine: &Machine) -> Option<Memory> {
        let nodes = machine.nodes();
        (nodes > 1).then(|| {
            let cpu_nodes: Vec<usize> = (0..machine.cpus()).map(|c| machine.node_of(c)).collect();
            let mut node_cpus = vec![CpuSet::empty(); nodes];
            for (cpu, &node) in cpu_nodes.iter().enumerate() {
                node_cpus[node].insert(cpu);
            }
            Memory {
                layout,
                cpu_nodes,
                node_cpus,
            }
        })
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.node_cpus.len()
    }

    /// The node holding object `id` (module docs).
    pub fn object_node(&self, id: u32) -> usize {
        match self.layout {
            NumaLayout::Off => 0,
            NumaLayout::Interleaved | NumaLayout::Fragmented | NumaLayout::Segregated => {
                (id / OBJECTS_PER_RUN) as usize % self.nodes()
            }
        }
    }

    /// The node of `cpu`.
    pub fn node_of(&self, cpu: usize) -> usize {
        self.cpu_nodes[cpu]
    }

    /// Whether the layout pins the GC workers by node (the runtime's rule,
    /// [`NumaLayout::places_workers`]: every layout but `off`).
    pub fn places_workers(&self) -> bool {
        self.layout.places_workers()
    }

    /// The CPUs GC worker `worker` is pinned to: those of its node ([`worker_node`], the
    /// runtime's `worker % nodes`) under every layout that places workers.
    pub fn worker_cpus(&self, worker: usize) -> Option<CpuSet> {
        self.places_workers()
            .then(|| self.node_cpus[worker_node(worker, self.nodes())])
    }

    /// The fragments of the young spaces: one per node under `fragmented` and `segregated`
    /// (each worker cuts its to-space PLABs from its node's, as the runtime's do), else one.
    pub fn young_fragments(&self) -> usize {
        match self.layout {
            NumaLayout::Fragmented | NumaLayout::Segregated => self.nodes(),
            NumaLayout::Off | NumaLayout::Interleaved => 1,
        }
    }

    /// The fewest workers a collection may run with: the runtime's rule
    /// ([`NumaLayout::min_active_workers`]: one per node under `segregated`, else 1).
    pub fn min_active_workers(&self) -> usize {
        self.layout.min_active_workers(self.nodes())
    }

    /// Under `segregated`, the node each of `workers` workers works for (its node as it is
    /// pinned, [`worker_node`]), for the engine's segregated phase; `None` for the other
    /// layouts, or with fewer workers than nodes (the configuration refuses that for a real
    /// heap).
    pub fn segregated_worker_nodes(&self, workers: usize) -> Option<Vec<usize>> {
        (self.layout == NumaLayout::Segregated && workers >= self.nodes())
            .then(|| (0..workers).map(|w| worker_node(w, self.nodes())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(layout: NumaLayout) -> Memory {
        Memory::new(layout, &Machine::named("magny-cours-48", None).unwrap()).unwrap()
    }

    #[test]
    fn first_touch_puts_everything_on_node_0_and_the_others_spread_runs_of_objects() {
        let off = memory(NumaLayout::Off);
        assert!((0..10_000).all(|id| off.object_node(id) == 0));
        for layout in [
            NumaLayout::Interleaved,
            NumaLayout::Fragmented,
            NumaLayout::Segregated,
        ] {
            let m = memory(layout);
            assert_eq!(m.object_node(0), 0);
            assert_eq!(m.object_node(OBJECTS_PER_RUN - 1), 0);
            assert_eq!(m.object_node(OBJECTS_PER_RUN), 1);
            assert_eq!(m.object_node(8 * OBJECTS_PER_RUN), 0);
            let mut per_node = [0usize; 8];
            for id in 0..8 * 64 * OBJECTS_PER_RUN {
                per_node[m.object_node(id)] += 1;
            }
            assert!(per_node.iter().all(|&n| n == 64 * OBJECTS_PER_RUN as usize));
        }
    }

    #[test]
    fn workers_are_pinned_by_node_except_under_first_touch_and_only_segregated_segregates() {
        let m = memory(NumaLayout::Fragmented);
        let cpus = m.worker_cpus(9).unwrap();
        assert_eq!(cpus.len(), 6);
        assert!((6..12).all(|c| cpus.contains(c)), "worker 9 on node 1");
        assert_eq!(memory(NumaLayout::Off).worker_cpus(0), None);
        assert_eq!(m.segregated_worker_nodes(16), None);
        let seg = memory(NumaLayout::Segregated);
        assert_eq!(
            seg.segregated_worker_nodes(7),
            None,
            "fewer workers than nodes"
        );
        let nodes = seg.segregated_worker_nodes(16).unwrap();
        assert!(
            (0..8).all(|n| nodes.contains(&n)),
            "every node has a worker"
        );
        assert_eq!(nodes[9], 1);
        let one_node = Machine::from_flags(None, Some("4"), None, None).unwrap();
        assert_eq!(Memory::new(NumaLayout::Interleaved, &one_node), None);
    }
}
