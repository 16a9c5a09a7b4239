//! NUMA for the heap (paper 004 §3.2): which nodes the machine has and which CPUs belong to each
//! ([`NumaTopology`]), read from sysfs (`auto`) or given as a synthetic spec such as `0/1`, and
//! the system calls that place memory on nodes ([`policy`]: `mbind`, `get_mempolicy`,
//! `move_pages`).
//!
//! Nothing here knows about the heap: the memory room maps heap addresses to nodes, the runtime
//! asks for the placement and pins GC workers through [`crate::os::affinity`].

pub mod policy;

use std::fmt;
use std::str::FromStr;

use crate::os::cpu::CpuView;
use crate::os::procfs::{format_cpu_list, parse_cpu_list};

switch! {
    /// How the heap's memory is laid out over NUMA nodes (004 §3.2). Only the layouts that are
    /// implemented are listed.
    NumaLayout, "NUMA layout" {
        /// No placement: pages land where the thread that first touches them runs (Parallel
        /// Scavenge's first-touch problem, 004 §3.2.2); GC workers are not placed by node.
        Off => "off",
        /// Eden, both survivors and old with pages round-robin over the nodes (MPOL_INTERLEAVE
        /// on real nodes; the same rule as an address map on a synthetic topology), and GC
        /// worker `i` pinned to the CPUs of node `i % nodes`.
        Interleaved => "interleaved",
        /// Eden and each survivor space split into one fragment per node (each of the space's
        /// whole virtual size, one counter capping the space's bytes: 004 §3.2.3 and §3.3),
        /// bound to its node (MPOL_BIND on real nodes; an address range on a synthetic
        /// topology); a mutator's TLAB comes from the eden fragment of the node of the CPU it
        /// runs on, a GC worker's survivor PLAB from its node's to-space fragment; old is
        /// interleaved; GC workers pinned as with `interleaved`.
        Fragmented => "fragmented",
        /// 004 §3.2.3's segregated GC work: young collections steal only from workers of the
        /// same node and send work on objects of another node to that node's workers ("scan"
        /// messages) instead of doing it. Memory is laid out as `fragmented` (004: a segregated
        /// space is a fragmented space); needs a GC worker per node.
        Segregated => "segregated",
    }
}

impl NumaLayout {
    /// Whether the young spaces are split into one fragment per node: `fragmented`, and
    /// `segregated`, which 004 defines as a fragmented space whose GC work stays on its node.
    pub fn fragments_young(self) -> bool {
        matches!(self, NumaLayout::Fragmented | NumaLayout::Segregated)
    }

    /// Whether GC workers are placed by node (every layout but `off`): worker `i` pinned to the
    /// CPUs of node [`worker_node`]`(i, nodes)`. A GC affinity policy then steps aside
    /// ([`crate::os::gc_affinity::applied_gc_affinity`]).
    pub fn places_workers(self) -> bool {
        self != NumaLayout::Off
    }

    /// The fewest active GC workers a collection may have on `nodes` nodes: one per node under
    /// `segregated` (whose messages to a node without a worker would never be processed), else
    /// 1.
    pub fn min_active_workers(self, nodes: usize) -> usize {
        if self == NumaLayout::Segregated {
            nodes
        } else {
            1
        }
    }
}

/// The node index GC worker `worker` is placed on among `nodes` nodes (at least 1):
/// `worker % nodes`.
pub fn worker_node(worker: usize, nodes: usize) -> usize {
    worker % nodes
}

/// Where the topology comes from, as users write it: `auto` or a synthetic spec.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum NumaTopologySpec {
    /// The machine's real nodes (`/sys/devices/system/node`), restricted to the usable CPUs.
    #[default]
    Auto,
    /// Synthetic nodes, in order, each with its CPUs (ascending): `0-7/8-15` is two nodes.
    Synthetic(Vec<Vec<u32>>),
}

/// A topology spec that could not be parsed or does not fit the usable CPUs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A node's CPU list is not in the kernel's cpulist syntax.
    #[error(
        "node {node} ('{text}') is not a CPU list: {reason} (allowed: 'auto', or nodes \
         separated by '/', each a CPU list such as 0-3,8 — e.g. 0/1 or 0-7/8-15)"
    )]
    Malformed {
        /// The node's position in the spec, from 0.
        node: usize,
        /// The node's text.
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A node has no CPU.
    #[error(
        "node {node} is empty (allowed: every node lists at least one CPU, e.g. 0/1 or \
         0-7/8-15)"
    )]
    EmptyNode {
        /// The node's position in the spec, from 0.
        node: usize,
    },
    /// A CPU is listed on two nodes.
    #[error("CPU {cpu} is on node {first} and on node {second} (allowed: each CPU on one node)")]
    CpuOnTwoNodes {
        /// The CPU.
        cpu: u32,
        /// The first node that lists it.
        first: usize,
        /// The second.
        second: usize,
    },
    /// A CPU listed twice in one node's list (`0,0`, `0-3,2`).
    #[error("CPU {cpu} is listed twice on node {node} (allowed: each CPU once, e.g. 0,1 or 0-3)")]
    CpuListedTwice {
        /// The CPU.
        cpu: u32,
        /// The node whose list names it twice.
        node: usize,
    },
    /// A CPU the process may not use.
    #[error(
        "CPU {cpu} of node {node} is not usable by this process (allowed: the usable CPUs {usable})"
    )]
    CpuNotUsable {
        /// The CPU.
        cpu: u32,
        /// The node that lists it.
        node: usize,
        /// The usable CPUs, in cpulist syntax.
        usable: String,
    },
}

impl NumaTopologySpec {
    /// Whether the spec is synthetic.
    pub fn is_synthetic(&self) -> bool {
        matches!(self, NumaTopologySpec::Synthetic(_))
    }

    /// The topology this spec gives over the `usable` CPUs (ascending, the affinity mask):
    /// `auto` groups them by the node sysfs gives each in `cpus`; a synthetic spec is checked
    /// against them ([`TopologyError::CpuNotUsable`]).
    pub fn resolve(&self, cpus: &CpuView) -> Result<NumaTopology, TopologyError> {
        match self {
            NumaTopologySpec::Auto => Ok(NumaTopology::from_cpu_view(cpus)),
            NumaTopologySpec::Synthetic(nodes) => {
                NumaTopology::synthetic(nodes.clone(), &cpus.allowed)
            }
        }
    }
}

impl FromStr for NumaTopologySpec {
    type Err = TopologyError;

    fn from_str(text: &str) -> Result<Self, TopologyError> {
        let trimmed = text.trim();
        if trimmed.eq_ignore_ascii_case("auto") {
            return Ok(NumaTopologySpec::Auto);
        }
        let mut nodes: Vec<Vec<u32>> = Vec::new();
        for (node, part) in trimmed.split('/').enumerate() {
            let malformed = |e| TopologyError::Malformed {
                node,
                text: part.to_string(),
                reason: match e {
                    crate::os::procfs::KernelFileError::Parse { reason, .. } => reason,
                    other => other.to_string(),
                },
            };
            let cpus = parse_cpu_list(part).map_err(malformed)?;
            if cpus.is_empty() {
                return Err(TopologyError::EmptyNode { node });
            }
            // The list is read as a set: a CPU its ranges name twice is a mistake to report,
            // not to merge.
            let mut listed = Vec::with_capacity(cpus.len());
            for range in part.split(',') {
                for cpu in parse_cpu_list(range).map_err(malformed)? {
                    if listed.contains(&cpu) {
                        return Err(TopologyError::CpuListedTwice { cpu, node });
                    }
                    listed.push(cpu);
                }
            }
            for &cpu in &cpus {
                if let Some(first) = nodes.iter().position(|n| n.contains(&cpu)) {
                    return Err(TopologyError::CpuOnTwoNodes {
                        cpu,
                        first,
                        second: node,
                    });
                }
            }
            nodes.push(cpus);
        }
        Ok(NumaTopologySpec::Synthetic(nodes))
    }
}

impl fmt::Display for NumaTopologySpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NumaTopologySpec::Auto => f.write_str("auto"),
            NumaTopologySpec::Synthetic(nodes) => {
                let parts: Vec<String> = nodes.iter().map(|n| format_cpu_list(n)).collect();
                f.write_str(&parts.join("/"))
            }
        }
    }
}

impl serde::Serialize for NumaTopologySpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Where a topology came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TopologyKind {
    /// The machine's nodes: memory placement is real (`mbind`).
    Auto,
    /// Nodes given by a spec: a node's memory is an address range of the heap, all physically
    /// on the real node(s).
    Synthetic,
}

/// One node: its id (the kernel's node number for `auto`, the position for a synthetic
/// topology) and its usable CPUs, ascending.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NumaNode {
    /// Kernel node number (`auto`) or position in the spec (synthetic).
    pub id: u32,
    /// Its usable CPUs, ascending, never empty.
    pub cpus: Vec<u32>,
}

/// The NUMA nodes the heap spreads over, in order (index 0, 1, …), each with its CPUs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NumaTopology {
    /// Real or synthetic.
    pub kind: TopologyKind,
    /// The nodes, never empty; real nodes by ascending kernel id.
    pub nodes: Vec<NumaNode>,
}

impl NumaTopology {
    /// The real nodes of the usable CPUs of `cpus` (one node 0 when sysfs says nothing).
    pub fn from_cpu_view(cpus: &CpuView) -> NumaTopology {
        let mut nodes: Vec<NumaNode> = Vec::new();
        for id in cpus.nodes() {
            let node_cpus: Vec<u32> = cpus
                .topology
                .iter()
                .filter(|t| t.node == id)
                .map(|t| t.cpu)
                .collect();
            nodes.push(NumaNode {
                id,
                cpus: node_cpus,
            });
        }
        if nodes.is_empty() {
            nodes.push(NumaNode {
                id: 0,
                cpus: cpus.allowed.clone(),
            });
        }
        NumaTopology {
            kind: TopologyKind::Auto,
            nodes,
        }
    }

    /// A synthetic topology of `nodes` (each a non-empty CPU list, no CPU twice, as
    /// [`NumaTopologySpec::from_str`] checks), every CPU in `usable`.
    pub fn synthetic(nodes: Vec<Vec<u32>>, usable: &[u32]) -> Result<NumaTopology, TopologyError> {
        for (node, cpus) in nodes.iter().enumerate() {
            if let Some(&cpu) = cpus.iter().find(|c| !usable.contains(c)) {
                return Err(TopologyError::CpuNotUsable {
                    cpu,
                    node,
                    usable: format_cpu_list(usable),
                });
            }
        }
        Ok(NumaTopology {
            kind: TopologyKind::Synthetic,
            nodes: nodes
                .into_iter()
                .enumerate()
                .map(|(i, cpus)| NumaNode { id: i as u32, cpus })
                .collect(),
        })
    }

    /// Number of nodes (at least 1).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// The node index (position in `nodes`) GC worker `worker` is placed on: `worker % nodes`.
    pub fn worker_node(&self, worker: usize) -> usize {
        worker_node(worker, self.nodes.len())
    }

    /// The node index of `cpu`, if a node lists it.
    pub fn node_of_cpu(&self, cpu: u32) -> Option<usize> {
        self.nodes.iter().position(|n| n.cpus.contains(&cpu))
    }

    /// The kernel node ids of a real topology, for `mbind`'s node mask.
    pub fn kernel_node_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::cpu::tests::Scratch;

    fn spec(text: &str) -> Result<NumaTopologySpec, TopologyError> {
        text.parse()
    }

    #[test]
    fn specs_parse_and_display() {
        assert_eq!(spec("auto"), Ok(NumaTopologySpec::Auto));
        assert_eq!(spec(" AUTO "), Ok(NumaTopologySpec::Auto));
        assert_eq!(
            spec("0/1"),
            Ok(NumaTopologySpec::Synthetic(vec![vec![0], vec![1]]))
        );
        let big = spec("0-7/8-15").unwrap();
        assert_eq!(
            big,
            NumaTopologySpec::Synthetic(vec![(0..8).collect(), (8..16).collect()])
        );
        assert_eq!(big.to_string(), "0-7/8-15");
        assert_eq!(spec("0,2/1,3").unwrap().to_string(), "0,2/1,3");
        assert_eq!(spec("3").unwrap().to_string(), "3");
        assert!(big.is_synthetic());
        assert_eq!(NumaTopologySpec::default().to_string(), "auto");
        assert_eq!(serde_json::to_value(&big).unwrap(), "0-7/8-15");
    }

    #[test]
    fn every_spec_error_names_what_is_wrong_and_what_is_allowed() {
        let err = |text: &str| spec(text).unwrap_err();
        assert_eq!(
            err("0/0"),
            TopologyError::CpuOnTwoNodes {
                cpu: 0,
                first: 0,
                second: 1
            }
        );
        assert_eq!(
            err("0-3/2-5").to_string(),
            "CPU 2 is on node 0 and on node 1 (allowed: each CPU on one node)"
        );
        assert_eq!(
            err("0,0"),
            TopologyError::CpuListedTwice { cpu: 0, node: 0 }
        );
        assert_eq!(
            err("0/1-3,2").to_string(),
            "CPU 2 is listed twice on node 1 (allowed: each CPU once, e.g. 0,1 or 0-3)"
        );
        assert_eq!(err("0//1"), TopologyError::EmptyNode { node: 1 });
        assert_eq!(err("0/"), TopologyError::EmptyNode { node: 1 });
        assert_eq!(err(""), TopologyError::EmptyNode { node: 0 });
        assert!(err("0/").to_string().contains("allowed"));
        for bad in ["x", "0/a-b", "3-1", "0/1,", "0;1", "99999"] {
            let e = err(bad);
            assert!(matches!(e, TopologyError::Malformed { .. }), "{bad}: {e:?}");
            let text = e.to_string();
            assert!(text.contains("allowed: 'auto'"), "{text}");
        }
        assert!(err("3-1").to_string().contains("runs backwards"));
        assert!(err("0/a").to_string().starts_with("node 1 ('a')"));
    }

    #[test]
    fn synthetic_specs_must_use_usable_cpus() {
        let two = NumaTopologySpec::from_str("0/1").unwrap();
        let NumaTopologySpec::Synthetic(nodes) = two else {
            unreachable!()
        };
        let t = NumaTopology::synthetic(nodes.clone(), &[0, 1]).unwrap();
        assert_eq!(t.kind, TopologyKind::Synthetic);
        assert_eq!(t.node_count(), 2);
        assert_eq!(
            t.nodes[1],
            NumaNode {
                id: 1,
                cpus: vec![1]
            }
        );
        assert_eq!(t.node_of_cpu(1), Some(1));
        assert_eq!(t.node_of_cpu(5), None);
        assert_eq!(
            (0..5).map(|w| t.worker_node(w)).collect::<Vec<_>>(),
            vec![0, 1, 0, 1, 0]
        );
        let e = NumaTopology::synthetic(nodes, &[0, 2]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 1 of node 1 is not usable by this process (allowed: the usable CPUs 0,2)"
        );
    }

    #[test]
    fn auto_groups_the_usable_cpus_by_their_sysfs_node() {
        let s = Scratch::with(
            "numa",
            &[
                ("sys/node/node0/cpulist", "0-1\n"),
                ("sys/node/node1/cpulist", "2-3\n"),
            ],
        );
        let view = CpuView::from_allowed(vec![0, 2, 3], &s.paths());
        let t = NumaTopologySpec::Auto.resolve(&view).unwrap();
        assert_eq!(t.kind, TopologyKind::Auto);
        assert_eq!(
            t.nodes,
            vec![
                NumaNode {
                    id: 0,
                    cpus: vec![0]
                },
                NumaNode {
                    id: 1,
                    cpus: vec![2, 3]
                }
            ]
        );
        assert_eq!(t.kernel_node_ids(), vec![0, 1]);
        // No node files: everything on node 0.
        let bare = Scratch::new("numa-bare");
        let view = CpuView::from_allowed(vec![0, 1], &bare.paths());
        let t = NumaTopologySpec::Auto.resolve(&view).unwrap();
        assert_eq!(
            t.nodes,
            vec![NumaNode {
                id: 0,
                cpus: vec![0, 1]
            }]
        );
        // A synthetic spec is checked against the view's CPUs.
        let e = NumaTopologySpec::from_str("0/7")
            .unwrap()
            .resolve(&view)
            .unwrap_err();
        assert!(
            matches!(e, TopologyError::CpuNotUsable { cpu: 7, .. }),
            "{e}"
        );
    }

    #[test]
    fn layouts_parse_and_name_the_allowed_values() {
        assert_eq!("interleaved".parse(), Ok(NumaLayout::Interleaved));
        assert_eq!("OFF".parse(), Ok(NumaLayout::Off));
        assert_eq!("fragmented".parse(), Ok(NumaLayout::Fragmented));
        assert_eq!("segregated".parse(), Ok(NumaLayout::Segregated));
        assert_eq!(
            "striped".parse::<NumaLayout>().unwrap_err(),
            "is not a NUMA layout (allowed: off, interleaved, fragmented, segregated)"
        );
    }
}
