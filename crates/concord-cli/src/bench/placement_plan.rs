//! The plan of `concord placement-bench` (004 §3.2.1, Fig. 3), without any system call: which
//! node and CPU each thread is pinned to (round-robin over the nodes), which threads work,
//! how many operations each does, on which node each page of each thread's buffer is meant to
//! be, and from that the reads per node, their imbalance (004 Table 4's standard deviation)
//! and the remote share. An operation reads one page of the thread's own buffer, sequentially,
//! wrapping around at its end.

use std::path::Path;

use concord::config::parse_size;
use concord::os::numa::NumaTopology;
use concord::telemetry::gc_metrics::access_imbalance;

/// The four memory placements of 004 Fig. 3, in the paper's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Every buffer on node 0: remote for threads off node 0, and unbalanced.
    UnbalancedRemote,
    /// Each buffer's pages round-robin over the nodes: mostly remote, balanced.
    BalancedRemote,
    /// Each buffer on its thread's node: local, balanced.
    BalancedLocal,
    /// Only the threads on node 0 work, each on a buffer on node 0; the others are idle.
    UnbalancedLocal,
}

impl Placement {
    /// Every placement, in the paper's order.
    pub const ALL: [Placement; 4] = [
        Placement::UnbalancedRemote,
        Placement::BalancedRemote,
        Placement::BalancedLocal,
        Placement::UnbalancedLocal,
    ];

    /// The name `--placements` takes.
    pub fn name(self) -> &'static str {
        match self {
            Placement::UnbalancedRemote => "unbalanced-remote",
            Placement::BalancedRemote => "balanced-remote",
            Placement::BalancedLocal => "balanced-local",
            Placement::UnbalancedLocal => "unbalanced-local",
        }
    }

    /// Every name, in order.
    pub fn names() -> [&'static str; 4] {
        Placement::ALL.map(Placement::name)
    }

    /// The placement called `name`.
    pub fn of_name(name: &str) -> Option<Placement> {
        Placement::ALL.into_iter().find(|p| p.name() == name)
    }

    /// What it does, in words.
    pub fn what(self) -> &'static str {
        match self {
            Placement::UnbalancedRemote => {
                "every buffer on node 0 (remote but for node 0's threads; unbalanced)"
            }
            Placement::BalancedRemote => {
                "each buffer's pages round-robin over the nodes (mostly remote; balanced)"
            }
            Placement::BalancedLocal => {
                "each buffer on its thread's node (local; balanced when the threads divide evenly)"
            }
            Placement::UnbalancedLocal => {
                "only node 0's threads work, on buffers on node 0; the others idle (local; \
                 unbalanced)"
            }
        }
    }

    /// Whether the thread on `node` works under this placement.
    fn works(self, node: usize) -> bool {
        self != Placement::UnbalancedLocal || node == 0
    }

    /// The node of page `page` of the buffer of a thread on `thread_node`, with `nodes` nodes.
    pub fn page_node(self, thread_node: usize, page: usize, nodes: usize) -> usize {
        match self {
            Placement::UnbalancedRemote | Placement::UnbalancedLocal => 0,
            Placement::BalancedRemote => page % nodes,
            Placement::BalancedLocal => thread_node,
        }
    }

    /// The rule of [`page_node`](Self::page_node) in words, for the run's summary.
    pub fn page_rule(self, thread_node: usize, nodes: usize) -> String {
        match self {
            Placement::BalancedRemote => format!("page j on node j % {nodes}"),
            _ => format!(
                "every page on node {}",
                self.page_node(thread_node, 0, nodes)
            ),
        }
    }
}

/// One thread of a plan.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ThreadPlan {
    /// The node index it is pinned to: thread `i` on node `i % nodes`.
    pub node: usize,
    /// The CPU it is pinned to: the k-th thread of a node on that node's `k % cpus` CPU.
    pub cpu: u32,
    /// Operations (page reads) it does; 0 for an idle thread, which has no buffer.
    pub operations: u64,
}

impl ThreadPlan {
    /// Whether it works (and has a buffer).
    pub fn works(&self) -> bool {
        self.operations > 0
    }
}

/// Who reads what, where, for one placement and thread count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlacementPlan {
    pub placement: Placement,
    /// Number of nodes.
    pub nodes: usize,
    /// Pages of every working thread's buffer.
    pub pages: usize,
    /// Every thread, working or idle, in creation order.
    pub threads: Vec<ThreadPlan>,
}

impl PlacementPlan {
    /// The plan of `threads` threads on `topology` sharing `operations` page reads, over
    /// buffers of `pages` pages each. The working threads share the operations as evenly as
    /// possible (the first ones one more).
    pub fn new(
        placement: Placement,
        topology: &NumaTopology,
        threads: usize,
        pages: usize,
        operations: u64,
    ) -> PlacementPlan {
        let nodes = topology.node_count();
        let mut on_node = vec![0usize; nodes];
        let mut plans: Vec<ThreadPlan> = (0..threads)
            .map(|i| {
                let node = i % nodes;
                let cpus = &topology.nodes[node].cpus;
                let cpu = cpus[on_node[node] % cpus.len()];
                on_node[node] += 1;
                ThreadPlan {
                    node,
                    cpu,
                    operations: 0,
                }
            })
            .collect();
        let working: Vec<usize> = (0..threads)
            .filter(|&i| placement.works(plans[i].node))
            .collect();
        let count = working.len() as u64;
        for (k, &i) in working.iter().enumerate() {
            plans[i].operations = operations / count + u64::from((k as u64) < operations % count);
        }
        PlacementPlan {
            placement,
            nodes,
            pages,
            threads: plans,
        }
    }

    /// The planned node of every page of thread `thread`'s buffer.
    pub fn page_nodes(&self, thread: usize) -> Vec<usize> {
        let node = self.threads[thread].node;
        (0..self.pages)
            .map(|p| self.placement.page_node(node, p, self.nodes))
            .collect()
    }

    /// The accesses (page reads) of the whole plan, per node and local/remote.
    pub fn accesses(&self) -> Accesses {
        let mut acc = Accesses {
            per_node: vec![0; self.nodes],
            remote: 0,
        };
        for (i, t) in self.threads.iter().enumerate().filter(|(_, t)| t.works()) {
            let reads = reads_per_node(&self.page_nodes(i), t.operations, self.nodes);
            for (node, n) in reads.into_iter().enumerate() {
                acc.per_node[node] += n;
                if node != t.node {
                    acc.remote += n;
                }
            }
        }
        acc
    }
}

/// The reads per node of `operations` sequential page reads over a buffer whose page `j` is on
/// `page_nodes[j]`, starting at page 0 and wrapping around.
pub fn reads_per_node(page_nodes: &[usize], operations: u64, nodes: usize) -> Vec<u64> {
    let mut per_node = vec![0u64; nodes];
    if page_nodes.is_empty() {
        return per_node;
    }
    let pages = page_nodes.len() as u64;
    let (passes, rest) = (operations / pages, (operations % pages) as usize);
    for (j, &node) in page_nodes.iter().enumerate() {
        per_node[node] += passes + u64::from(j < rest);
    }
    per_node
}

/// The accesses of a plan.
#[derive(Clone, Debug, PartialEq)]
pub struct Accesses {
    /// Page reads per node.
    pub per_node: Vec<u64>,
    /// Page reads of a page on another node than the reading thread's.
    pub remote: u64,
}

impl Accesses {
    /// 004 Table 4's imbalance: the standard deviation of the nodes' shares relative to the
    /// mean share (0 balanced, √(N−1) all on one node); 0 without accesses.
    pub fn imbalance(&self) -> f64 {
        access_imbalance(&self.per_node).unwrap_or(0.0)
    }

    /// Remote reads over all reads (0 without reads).
    pub fn remote_share(&self) -> f64 {
        let total: u64 = self.per_node.iter().sum();
        if total == 0 {
            0.0
        } else {
            self.remote as f64 / total as f64
        }
    }
}

/// The size of the last-level cache of CPU 0 from `cpu0_cache` (sysfs's
/// `/sys/devices/system/cpu/cpu0/cache`): the largest of the data or unified caches of the
/// highest level; `None` when the files say nothing readable.
pub fn last_level_cache(cpu0_cache: &Path) -> Option<usize> {
    let read = |dir: &Path, file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let mut best: Option<(u32, usize)> = None;
    for entry in std::fs::read_dir(cpu0_cache).ok()?.flatten() {
        let dir = entry.path();
        if !entry.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let kind = read(&dir, "type").unwrap_or_default();
        if kind.trim() == "Instruction" {
            continue;
        }
        let (Some(level), Some(size)) = (read(&dir, "level"), read(&dir, "size")) else {
            continue;
        };
        let (Ok(level), Ok(size)) = (level.trim().parse::<u32>(), parse_size(size.trim())) else {
            continue;
        };
        if best.is_none_or(|b| (level, size) > b) {
            best = Some((level, size));
        }
    }
    best.map(|(_, size)| size)
}

#[cfg(test)]
mod tests {
    use concord::os::numa::{NumaTopologySpec, TopologyKind};

    use super::*;

    /// The synthetic topology `0/1`: two nodes of one CPU each.
    fn two_nodes() -> NumaTopology {
        let NumaTopologySpec::Synthetic(nodes) = "0/1".parse().unwrap() else {
            unreachable!()
        };
        NumaTopology::synthetic(nodes, &[0, 1]).unwrap()
    }

    /// (node, cpu, operations) of every thread.
    fn threads(plan: &PlacementPlan) -> Vec<(usize, u32, u64)> {
        plan.threads
            .iter()
            .map(|t| (t.node, t.cpu, t.operations))
            .collect()
    }

    // Every case: 8 page reads over buffers of 4 pages on the topology 0/1.

    #[test]
    fn threads_go_round_robin_over_the_nodes_and_share_the_operations() {
        let t = two_nodes();
        let plan = |p, n| threads(&PlacementPlan::new(p, &t, n, 4, 8));
        for p in [
            Placement::UnbalancedRemote,
            Placement::BalancedRemote,
            Placement::BalancedLocal,
        ] {
            assert_eq!(plan(p, 1), [(0, 0, 8)], "{p:?}");
            assert_eq!(plan(p, 2), [(0, 0, 4), (1, 1, 4)], "{p:?}");
            assert_eq!(plan(p, 3), [(0, 0, 3), (1, 1, 3), (0, 0, 2)], "{p:?}");
            assert_eq!(
                plan(p, 4),
                [(0, 0, 2), (1, 1, 2), (0, 0, 2), (1, 1, 2)],
                "{p:?}"
            );
        }
        // Only node 0's threads work; the others are idle (no operations, no buffer).
        let u = Placement::UnbalancedLocal;
        assert_eq!(plan(u, 1), [(0, 0, 8)]);
        assert_eq!(plan(u, 2), [(0, 0, 8), (1, 1, 0)]);
        assert_eq!(plan(u, 3), [(0, 0, 4), (1, 1, 0), (0, 0, 4)]);
        assert_eq!(plan(u, 4), [(0, 0, 4), (1, 1, 0), (0, 0, 4), (1, 1, 0)]);
        // A node of two CPUs: its threads take them in turn.
        let NumaTopologySpec::Synthetic(nodes) = "0,1/2".parse().unwrap() else {
            unreachable!()
        };
        let wide = NumaTopology::synthetic(nodes, &[0, 1, 2]).unwrap();
        let cpus: Vec<u32> = PlacementPlan::new(u, &wide, 5, 4, 8)
            .threads
            .iter()
            .map(|t| t.cpu)
            .collect();
        assert_eq!(cpus, [0, 2, 1, 2, 0]);
    }

    #[test]
    fn every_page_is_on_its_planned_node() {
        let t = two_nodes();
        let nodes = |p, n, thread| PlacementPlan::new(p, &t, n, 4, 8).page_nodes(thread);
        for n in 1..=4 {
            for thread in 0..n {
                assert_eq!(nodes(Placement::UnbalancedRemote, n, thread), [0, 0, 0, 0]);
                assert_eq!(nodes(Placement::BalancedRemote, n, thread), [0, 1, 0, 1]);
                let own = thread % 2;
                assert_eq!(
                    nodes(Placement::BalancedLocal, n, thread),
                    [own, own, own, own]
                );
            }
        }
        assert_eq!(nodes(Placement::UnbalancedLocal, 3, 2), [0, 0, 0, 0]);
        assert_eq!(
            Placement::BalancedRemote.page_rule(1, 2),
            "page j on node j % 2"
        );
        assert_eq!(
            Placement::BalancedLocal.page_rule(1, 2),
            "every page on node 1"
        );
        assert_eq!(t.kind, TopologyKind::Synthetic);
    }

    #[test]
    fn reads_wrap_around_the_buffer() {
        // 6 reads of [0, 1, 0, 1]: pages 0 1 2 3 0 1.
        assert_eq!(reads_per_node(&[0, 1, 0, 1], 6, 2), [3, 3]);
        // 3 reads of [0, 1, 1]: each page once.
        assert_eq!(reads_per_node(&[0, 1, 1], 3, 2), [1, 2]);
        // 5 reads of [1, 0]: 1 0 1 0 1.
        assert_eq!(reads_per_node(&[1, 0], 5, 2), [2, 3]);
        assert_eq!(reads_per_node(&[], 5, 2), [0, 0]);
    }

    /// Reads per node, imbalance and remote share of the plan.
    fn figures(p: Placement, threads: usize) -> (Vec<u64>, f64, f64) {
        let a = PlacementPlan::new(p, &two_nodes(), threads, 4, 8).accesses();
        (a.per_node.clone(), a.imbalance(), a.remote_share())
    }

    #[test]
    fn accesses_imbalance_and_remote_share_of_each_placement() {
        use Placement::*;
        // Unbalanced-Remote: all 8 reads on node 0 (imbalance 1 on two nodes); node 1's
        // threads read remotely: 4 of 8 with 2 threads, 3 with 3 (3 + 3 + 2), 4 with 4.
        assert_eq!(figures(UnbalancedRemote, 1), (vec![8, 0], 1.0, 0.0));
        assert_eq!(figures(UnbalancedRemote, 2), (vec![8, 0], 1.0, 0.5));
        assert_eq!(figures(UnbalancedRemote, 3), (vec![8, 0], 1.0, 0.375));
        assert_eq!(figures(UnbalancedRemote, 4), (vec![8, 0], 1.0, 0.5));
        // Balanced-Remote: pages alternate. 1 thread: 8 reads, 4 on node 1, remote.
        assert_eq!(figures(BalancedRemote, 1), (vec![4, 4], 0.0, 0.5));
        assert_eq!(figures(BalancedRemote, 2), (vec![4, 4], 0.0, 0.5));
        // 3 threads: 3 reads (pages 0 1 2: nodes 0 1 0) on node 0, the same on node 1, 2 reads
        // (nodes 0 1) on node 0: [2+2+1, 1+1+1] = [5, 3]; remote 1 + 2 + 1 = 4. Shares
        // 1.25 and 0.75 of the mean: deviation 0.25.
        assert_eq!(figures(BalancedRemote, 3), (vec![5, 3], 0.25, 0.5));
        assert_eq!(figures(BalancedRemote, 4), (vec![4, 4], 0.0, 0.5));
        // Balanced-Local: every read local; 3 threads give node 0 3 + 2 and node 1 3.
        assert_eq!(figures(BalancedLocal, 1), (vec![8, 0], 1.0, 0.0));
        assert_eq!(figures(BalancedLocal, 2), (vec![4, 4], 0.0, 0.0));
        assert_eq!(figures(BalancedLocal, 3), (vec![5, 3], 0.25, 0.0));
        assert_eq!(figures(BalancedLocal, 4), (vec![4, 4], 0.0, 0.0));
        // Unbalanced-Local: only node 0 works, locally.
        for n in 1..=4 {
            assert_eq!(figures(UnbalancedLocal, n), (vec![8, 0], 1.0, 0.0), "{n}");
        }
    }

    #[test]
    fn names_round_trip() {
        for p in Placement::ALL {
            assert_eq!(Placement::of_name(p.name()), Some(p));
        }
        assert_eq!(Placement::of_name("local"), None);
        assert_eq!(Placement::names()[3], "unbalanced-local");
    }

    #[test]
    fn the_last_level_cache_is_the_largest_data_cache_of_the_highest_level() {
        let dir = std::env::temp_dir().join(format!("concord-llc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let index = |i: u32, level: &str, kind: &str, size: &str| {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            for (f, v) in [("level", level), ("type", kind), ("size", size)] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        };
        assert_eq!(last_level_cache(&dir), None);
        index(0, "1", "Data", "32K");
        index(1, "1", "Instruction", "64K");
        assert_eq!(last_level_cache(&dir), Some(32 << 10));
        index(2, "2", "Unified", "1024K");
        index(3, "3", "Unified", "32768K");
        index(4, "3", "Instruction", "65536K");
        assert_eq!(last_level_cache(&dir), Some(32 << 20));
        // An unreadable size is skipped.
        index(5, "4", "Unified", "lots");
        assert_eq!(last_level_cache(&dir), Some(32 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
