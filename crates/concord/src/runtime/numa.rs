//! The heap's NUMA state (004 §3.2): the topology resolved at heap build, the interleaved
//! placement of its memory on real nodes, the node map the collectors count with, where each
//! GC worker is placed, and the bytes allocated per node.
//!
//! Figures are counted ("accounting") when the topology has more than one node or a layout is
//! chosen; with one node and layout `off` (the default on a one-node machine) nothing is
//! counted and the collectors' NUMA branches are never taken.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::heap::HeapError;
use super::lock;
use crate::collection::NumaContext;
use crate::config::{ConfigKey, GcConfig, Origin};
use crate::memory::{HeapMemory, NodeMap, NodeMapRule, SpaceId};
use crate::os::affinity::thread_affinity;
use crate::os::cpu::{current_cpu, CpuView};
use crate::os::numa::policy::{bind_memory, MemoryPolicy};
use crate::os::numa::{NumaLayout, NumaTopology, NumaTopologySpec, TopologyKind};
use crate::parallel::WorkerPool;
use crate::telemetry::{NumaReport, NumaWorkerPlacement};

/// Per-node counters kept on the stack when the topology has at most this many nodes.
const STACK_NODES: usize = 64;

/// The NUMA side of one heap.
pub(crate) struct HeapNuma {
    layout: NumaLayout,
    spec: NumaTopologySpec,
    topology: NumaTopology,
    map: NodeMap,
    accounting: bool,
    memory_bound: bool,
    /// Bytes handed to mutators, by node index.
    allocated: Box<[AtomicU64]>,
    /// `allocated` as the last collection record read it.
    allocated_at_last_record: Mutex<Vec<u64>>,
    /// Placements of GC workers the OS refused.
    placement_failures: Mutex<Vec<String>>,
}

impl HeapNuma {
    /// Resolve the configured topology over the usable CPUs of `cpus`, and with layout
    /// `interleaved` on real nodes apply `MPOL_INTERLEAVE` over them to the whole heap (eden,
    /// both survivors and old) before anything touches it. A topology that does not fit or a
    /// placement the kernel refuses is a [`HeapError::NumaTopology`] or [`HeapError::NumaPlacement`].
    ///
    /// With layout `fragmented`, `mem` must have one young fragment per node
    /// ([`HeapNuma::young_fragments`]); on real nodes old is interleaved and each fragment is
    /// bound (`MPOL_BIND`) to its node, before first touch too.
    pub fn new(config: &GcConfig, cpus: &CpuView, mem: &HeapMemory) -> Result<HeapNuma, HeapError> {
        let topology = config.numa_topology.resolve(cpus)?;
        let nodes = topology.node_count();
        // Segregated GC work needs a worker per node (004 §4.2.2); with a synthetic topology
        // the configuration already checked this, with `auto` only now are the nodes known.
        config
            .check_segregated_workers(ConfigKey::new("numa", Origin::Config), nodes)
            .map_err(HeapError::Config)?;
        let map = match config.numa {
            NumaLayout::Off => NodeMap::new(NodeMapRule::AllOnNodeZero, mem.base(), nodes),
            NumaLayout::Interleaved => NodeMap::new(NodeMapRule::Interleaved, mem.base(), nodes),
            // A segregated space is a fragmented space (004 §3.2.3).
            NumaLayout::Fragmented | NumaLayout::Segregated => {
                assert_eq!(
                    mem.young_fragments(),
                    nodes,
                    "a fragmented heap has one young fragment per node"
                );
                NodeMap::fragmented(
                    mem.base(),
                    mem.young_start(),
                    mem.eden.capacity(),
                    mem.from_space().capacity(),
                    nodes,
                )
            }
        };
        let memory_bound = config.numa != NumaLayout::Off && topology.kind == TopologyKind::Auto;
        if memory_bound {
            let kernel_nodes = topology.kernel_node_ids();
            let place = |addr: usize, len: usize, policy: MemoryPolicy| {
                let nodes = match &policy {
                    MemoryPolicy::Bind(n) | MemoryPolicy::Interleave(n) => n.clone(),
                    _ => Vec::new(),
                };
                bind_memory(addr, len, &policy)
                    .map_err(|source| HeapError::NumaPlacement { nodes, source })
            };
            if config.numa.fragments_young() {
                place(
                    mem.base(),
                    mem.young_start() - mem.base(),
                    MemoryPolicy::Interleave(kernel_nodes.clone()),
                )?;
                for (id, space) in mem.spaces_in_address_order() {
                    if id == SpaceId::Old {
                        continue;
                    }
                    for (i, f) in space.fragments().iter().enumerate() {
                        place(
                            f.bottom(),
                            f.capacity(),
                            MemoryPolicy::Bind(vec![kernel_nodes[i]]),
                        )?;
                    }
                }
            } else {
                place(
                    mem.base(),
                    mem.capacity(),
                    MemoryPolicy::Interleave(kernel_nodes),
                )?;
            }
        }
        Ok(HeapNuma {
            layout: config.numa,
            spec: config.numa_topology.clone(),
            accounting: nodes > 1 || config.numa != NumaLayout::Off,
            map,
            topology,
            memory_bound,
            allocated: (0..nodes).map(|_| AtomicU64::new(0)).collect(),
            allocated_at_last_record: Mutex::new(vec![0; nodes]),
            placement_failures: Mutex::new(Vec::new()),
        })
    }

    /// The young fragments a heap built from `config` needs over the usable CPUs of `cpus`:
    /// one per node under `fragmented` and `segregated`, else 1. A topology that does not fit is an error.
    pub fn young_fragments(config: &GcConfig, cpus: &CpuView) -> Result<usize, HeapError> {
        Ok(if config.numa.fragments_young() {
            config.numa_topology.resolve(cpus)?.node_count()
        } else {
            1
        })
    }

    /// The node index whose young fragments serve allocations by the calling thread: under
    /// `fragmented`, the node of the CPU it runs on now (one `getcpu`; node 0 if the CPU is on
    /// no node or unknown); 0 otherwise, without a system call.
    #[inline]
    pub fn allocation_node(&self) -> usize {
        if !self.layout.fragments_young() {
            return 0;
        }
        current_cpu()
            .and_then(|cpu| self.topology.node_of_cpu(cpu))
            .unwrap_or(0)
    }

    /// The fewest active GC workers a collection may have: one per node under `segregated`
    /// (whose messages to a node without a worker would never be processed), else 1.
    pub fn min_active_workers(&self) -> usize {
        self.layout.min_active_workers(self.topology.node_count())
    }

    /// Bytes handed to mutators per node since the previous call (each collection's record
    /// calls it once, with the world stopped and every TLAB retired).
    pub fn allocated_since_last_record(&self) -> Vec<u64> {
        let mut last = lock(&self.allocated_at_last_record);
        self.allocated
            .iter()
            .zip(last.iter_mut())
            .map(|(counter, seen)| {
                let now = counter.load(Ordering::Relaxed);
                let since = now.saturating_sub(*seen);
                *seen = now;
                since
            })
            .collect()
    }

    /// Whether figures are counted (more than one node, or a layout).
    pub fn accounting(&self) -> bool {
        self.accounting
    }

    /// Whether GC workers are placed by node (a layout other than `off`).
    pub fn places_workers(&self) -> bool {
        self.layout.places_workers()
    }

    /// The CPUs worker `worker` is pinned to when workers are placed: all CPUs of node
    /// `worker % nodes`.
    pub fn worker_cpus(&self, worker: usize) -> Option<&[u32]> {
        self.places_workers().then(|| {
            self.topology.nodes[self.topology.worker_node(worker)]
                .cpus
                .as_slice()
        })
    }

    /// Note that pinning `worker` to its node's CPUs failed (logged as a warning too).
    pub fn placement_failed(&self, worker: usize, e: &std::io::Error) {
        let node = self.topology.worker_node(worker);
        let text =
            format!("GC worker {worker} could not be pinned to the CPUs of node {node}: {e}");
        log::warn!("{text}; it runs where the OS puts it");
        lock(&self.placement_failures).push(text);
    }

    /// Count `len` bytes handed to a mutator at `addr` (a TLAB or a direct allocation) on the
    /// nodes the memory lies on.
    #[inline]
    pub fn count_allocation(&self, addr: usize, len: usize) {
        if !self.accounting {
            return;
        }
        let nodes = self.allocated.len();
        let mut on_stack = [0u64; STACK_NODES];
        let mut on_heap = Vec::new();
        let per_node: &mut [u64] = if nodes <= STACK_NODES {
            &mut on_stack[..nodes]
        } else {
            on_heap.resize(nodes, 0);
            &mut on_heap
        };
        self.map.add_bytes_per_node(addr, len, per_node);
        for (counter, &bytes) in self.allocated.iter().zip(per_node.iter()) {
            if bytes > 0 {
                // Relaxed: a statistic, read when a report is made.
                counter.fetch_add(bytes, Ordering::Relaxed);
            }
        }
    }

    /// The accounting context for a collection with `active` workers: placed workers are on
    /// node `i % nodes`; unplaced ones (layout `off`) on the node of the CPU they last ran on
    /// (as the pool recorded it, no system call), node 0 when unknown. `None` without
    /// accounting.
    pub fn context(&self, pool: &WorkerPool, active: usize) -> Option<NumaContext> {
        if !self.accounting {
            return None;
        }
        let worker_nodes = if self.places_workers() {
            (0..active).map(|w| self.topology.worker_node(w)).collect()
        } else {
            let last = pool.worker_last_cpus();
            (0..active)
                .map(|w| {
                    last.get(w)
                        .copied()
                        .flatten()
                        .and_then(|cpu| self.topology.node_of_cpu(cpu))
                        .unwrap_or(0)
                })
                .collect()
        };
        Some(NumaContext {
            map: self.map,
            worker_nodes,
            segregated: self.layout == NumaLayout::Segregated,
        })
    }

    /// The report for [`crate::GcStats`]: layout, topology, per-node allocation and each
    /// worker's placement with its affinity mask as the kernel reports it now.
    pub fn report(&self, pool: &WorkerPool) -> NumaReport {
        let workers = pool
            .worker_tids()
            .into_iter()
            .enumerate()
            .map(|(worker, tid)| NumaWorkerPlacement {
                worker,
                node: self
                    .places_workers()
                    .then(|| self.topology.worker_node(worker)),
                cpus: thread_affinity(tid).unwrap_or_default(),
            })
            .collect();
        NumaReport {
            layout: self.layout,
            topology: self.spec.clone(),
            kind: self.topology.kind,
            nodes: self.topology.nodes.clone(),
            accounting: self.accounting,
            memory_bound: self.memory_bound,
            bytes_allocated_per_node: self
                .allocated
                .iter()
                // Relaxed: a statistic.
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
            workers,
            placement_failures: lock(&self.placement_failures).clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;
    use crate::memory::heap_memory::SpaceSizes;
    use crate::os::numa::policy::{memory_policy_of, nodes_of_pages};
    use crate::os::vm::page_size;
    use crate::parallel::ParkingKind;

    const KIB64: usize = 64 * 1024;

    fn memory() -> HeapMemory {
        HeapMemory::new(SpaceSizes {
            old: 4 * KIB64,
            eden: 4 * KIB64,
            survivor: KIB64,
        })
        .unwrap()
    }

    /// Memory with two young fragments per space (a fragmented heap on two nodes).
    fn two_fragment_memory() -> HeapMemory {
        HeapMemory::with_layout(
            SpaceSizes {
                old: 4 * KIB64,
                eden: 4 * KIB64,
                survivor: KIB64,
            },
            2,
            KIB64,
            None,
        )
        .unwrap()
    }

    fn config(layout: &str, topology: &str) -> GcConfig {
        let mut c = GcConfig::for_preset(Preset::Optimized);
        c.numa = layout.parse().unwrap();
        c.numa_topology = topology.parse().unwrap();
        c
    }

    fn cpus() -> CpuView {
        CpuView::from_allowed(vec![0, 1], &crate::os::cpu::SystemPaths::default())
    }

    #[test]
    fn interleaved_on_real_nodes_binds_the_whole_heap_before_first_touch() {
        let mem = memory();
        let numa = HeapNuma::new(&config("interleaved", "auto"), &cpus(), &mem).unwrap();
        assert!(numa.memory_bound && numa.accounting());
        let nodes = numa.topology.kernel_node_ids();
        // Old (not committed yet), eden and the last survivor page all carry the policy.
        for addr in [mem.base(), mem.young_start(), mem.end() - page_size()] {
            assert_eq!(
                memory_policy_of(addr).unwrap(),
                MemoryPolicy::Interleave(nodes.clone()),
                "{addr:#x}"
            );
        }
        // Eden is committed: touch its pages, they land on the machine's node(s).
        let pages: Vec<usize> = (0..8)
            .map(|i| mem.young_start() + i * page_size())
            .collect();
        for &p in &pages {
            // SAFETY: committed eden memory of a heap nobody else uses.
            unsafe { (p as *mut u8).write_volatile(1) };
        }
        for status in nodes_of_pages(&pages).unwrap() {
            let node = status.expect("a touched page is resident");
            assert!(nodes.contains(&node), "{node} not in {nodes:?}");
        }
        // `off` asks nothing of the kernel.
        let mem = memory();
        let off = HeapNuma::new(&config("off", "auto"), &cpus(), &mem).unwrap();
        assert!(!off.memory_bound);
        assert_eq!(memory_policy_of(mem.base()).unwrap(), MemoryPolicy::Default);
    }

    #[test]
    fn fragmented_on_real_nodes_binds_each_fragment_to_its_node_before_first_touch() {
        let config = config("fragmented", "auto");
        let fragments = HeapNuma::young_fragments(&config, &cpus()).unwrap();
        let mem = HeapMemory::with_layout(
            SpaceSizes {
                old: 4 * KIB64,
                eden: 4 * KIB64,
                survivor: KIB64,
            },
            fragments,
            KIB64,
            None,
        )
        .unwrap();
        let numa = HeapNuma::new(&config, &cpus(), &mem).unwrap();
        assert!(numa.memory_bound && numa.accounting());
        let nodes = numa.topology.kernel_node_ids();
        assert_eq!(mem.young_fragments(), nodes.len(), "one fragment per node");
        assert_eq!(
            memory_policy_of(mem.base()).unwrap(),
            MemoryPolicy::Interleave(nodes.clone()),
            "old is interleaved"
        );
        for space in [&mem.eden, mem.from_space(), mem.to_space()] {
            for (i, f) in space.fragments().iter().enumerate() {
                for addr in [f.bottom(), f.end() - page_size()] {
                    assert_eq!(
                        memory_policy_of(addr).unwrap(),
                        MemoryPolicy::Bind(vec![nodes[i]]),
                        "{} fragment {i} at {addr:#x}",
                        space.name()
                    );
                }
            }
        }
        // Touch the first pages of each eden fragment: they land on the fragment's node.
        for (i, f) in mem.eden.fragments().iter().enumerate() {
            let pages: Vec<usize> = (0..4).map(|p| f.bottom() + p * page_size()).collect();
            for &p in &pages {
                // SAFETY: committed eden memory of a heap nobody else uses.
                unsafe { (p as *mut u8).write_volatile(1) };
            }
            for status in nodes_of_pages(&pages).unwrap() {
                assert_eq!(status, Ok(nodes[i]), "eden fragment {i}");
            }
        }
        // Allocation follows the calling thread's node; the map agrees with the fragments.
        let node = numa.allocation_node();
        assert!(node < nodes.len());
        for (i, f) in mem.eden.fragments().iter().enumerate() {
            assert_eq!(numa.map.node_of(f.bottom()), i);
        }
    }

    #[test]
    fn synthetic_fragmented_maps_young_addresses_by_fragment() {
        let config = config("fragmented", "0/1");
        assert_eq!(HeapNuma::young_fragments(&config, &cpus()).unwrap(), 2);
        let mem = two_fragment_memory();
        let numa = HeapNuma::new(&config, &cpus(), &mem).unwrap();
        assert!(
            !numa.memory_bound,
            "nothing to bind on a synthetic topology"
        );
        assert_eq!(
            memory_policy_of(mem.young_start()).unwrap(),
            MemoryPolicy::Default
        );
        for space in [&mem.eden, mem.from_space(), mem.to_space()] {
            for (i, f) in space.fragments().iter().enumerate() {
                assert_eq!(numa.map.node_of(f.bottom()), i, "{}", space.name());
                assert_eq!(numa.map.node_of(f.end() - 8), i, "{}", space.name());
            }
        }
        numa.count_allocation(mem.eden.fragments()[1].bottom(), 3 * 4096);
        assert_eq!(numa.allocated[1].load(Ordering::Relaxed), 3 * 4096);
        assert_eq!(numa.allocated[0].load(Ordering::Relaxed), 0);
    }

    #[test]
    fn synthetic_topologies_map_addresses_and_refuse_unusable_cpus() {
        let mem = memory();
        let err = HeapNuma::new(&config("interleaved", "0/9"), &cpus(), &mem)
            .err()
            .expect("CPU 9 is not in the view");
        assert!(matches!(err, HeapError::NumaTopology(_)), "{err}");
        let numa = HeapNuma::new(&config("interleaved", "0/1"), &cpus(), &mem).unwrap();
        assert!(
            !numa.memory_bound,
            "nothing to bind on a synthetic topology"
        );
        assert_eq!(memory_policy_of(mem.base()).unwrap(), MemoryPolicy::Default);
        assert_eq!(numa.worker_cpus(0), Some(&[0u32][..]));
        assert_eq!(numa.worker_cpus(3), Some(&[1u32][..]));
        // Three pages from eden's start: two on the node of that page, one on the other.
        let start = mem.young_start();
        numa.count_allocation(start, 3 * 4096);
        let first = numa.map.node_of(start);
        let per: Vec<u64> = numa
            .allocated
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        assert_eq!(per[first], 2 * 4096);
        assert_eq!(per[1 - first], 4096);
        // Placed workers: node i % 2, whatever CPU they ran on.
        let pool = WorkerPool::new(3, "numa-test", ParkingKind::Futex, |_| {}).unwrap();
        let ctx = numa.context(&pool, 3).unwrap();
        assert_eq!(ctx.worker_nodes, vec![0, 1, 0]);
        // `off` on a synthetic topology: still counted, all memory on node 0, workers on the
        // node of the CPU they last ran on.
        let off = HeapNuma::new(&config("off", "0/1"), &cpus(), &mem).unwrap();
        assert!(off.accounting() && !off.places_workers());
        assert_eq!(off.worker_cpus(1), None);
        off.count_allocation(start, 3 * 4096);
        assert_eq!(off.allocated[0].load(Ordering::Relaxed), 3 * 4096);
        let ctx = off.context(&pool, 3).unwrap();
        let last = pool.worker_last_cpus();
        for (w, &node) in ctx.worker_nodes.iter().enumerate() {
            let expected = last[w]
                .and_then(|c| off.topology.node_of_cpu(c))
                .unwrap_or(0);
            assert_eq!(node, expected, "worker {w}");
        }
        // One node and no layout: nothing counted.
        let quiet = HeapNuma::new(&config("off", "auto"), &cpus(), &mem).unwrap();
        if quiet.topology.node_count() == 1 {
            assert!(!quiet.accounting());
            assert!(quiet.context(&pool, 3).is_none());
        }
    }

    #[test]
    fn segregated_needs_a_gc_thread_per_node() {
        // A segregated heap is fragmented: one young fragment per node.
        let mem = two_fragment_memory();
        let mut c = config("segregated", "0/1");
        c.gc_threads = 1;
        let err = c.validate().unwrap_err().to_string();
        assert!(
            err.contains("segregated needs at least one GC thread per NUMA node")
                && err.contains("gc-threads is 1")
                && err.contains("has 2 nodes"),
            "{err}"
        );
        // The heap checks again (for `auto`, only it knows the nodes).
        let err = HeapNuma::new(&c, &cpus(), &mem).err().expect("refused");
        assert!(matches!(err, HeapError::Config(_)), "{err}");
        c.gc_threads = 2;
        c.validate().unwrap();
        let numa = HeapNuma::new(&c, &cpus(), &mem).unwrap();
        assert_eq!(numa.min_active_workers(), 2);
        assert_eq!(numa.map.rule(), NodeMapRule::Fragmented);
        let pool = WorkerPool::new(2, "numa-test", ParkingKind::Futex, |_| {}).unwrap();
        let ctx = numa.context(&pool, 2).unwrap();
        assert!(ctx.segregated);
        assert_eq!(ctx.worker_nodes, vec![0, 1]);
        // Other layouts need no more than one worker, and are not segregated.
        let inter = HeapNuma::new(&config("interleaved", "0/1"), &cpus(), &memory()).unwrap();
        assert_eq!(inter.min_active_workers(), 1);
        assert!(!inter.context(&pool, 2).unwrap().segregated);
    }
}
