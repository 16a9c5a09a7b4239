//! Where each CPU sits in the machine: its SMT siblings (its core) and its NUMA node, from sysfs
//! (`cpu/cpuN/topology/thread_siblings_list`, `node/nodeN/cpulist`). Missing files fall back to
//! "every CPU its own core, node 0".

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::os::procfs::{numbered, parse_cpu_list, read_optional};

/// Where a CPU sits in the machine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuTopology {
    /// The CPU id.
    pub cpu: u32,
    /// Its physical core, named by the lowest CPU id among its SMT siblings (unlike sysfs
    /// `core_id`, unique across packages).
    pub core: u32,
    /// Every CPU of that core, itself included, ascending.
    pub siblings: Vec<u32>,
    /// Its NUMA node (0 when the machine has no NUMA information).
    pub node: u32,
}

/// The CPU list in file `path`: `None` when the file is missing, or odd (with a line in
/// `warnings`).
fn read_cpu_list(path: &Path, warnings: &mut Vec<String>) -> Option<Vec<u32>> {
    let parsed = read_optional(path).and_then(|text| text.map(|t| parse_cpu_list(&t)).transpose());
    parsed.unwrap_or_else(|e| {
        warnings.push(e.to_string());
        None
    })
}

/// Topology of `cpus` from `system_root` (normally `/sys/devices/system`). Missing or odd
/// files give defaults (the CPU its own core, node 0) and a line in `warnings` for odd ones.
pub(super) fn read_topology(
    system_root: &Path,
    cpus: &[u32],
    warnings: &mut Vec<String>,
) -> Vec<CpuTopology> {
    // NUMA nodes: node/nodeN/cpulist.
    let mut node_of: BTreeMap<u32, u32> = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(system_root.join("node")) {
        for entry in entries.flatten() {
            let Some(node) = entry.file_name().to_str().and_then(|n| numbered(n, "node")) else {
                continue;
            };
            for cpu in read_cpu_list(&entry.path().join("cpulist"), warnings).unwrap_or_default() {
                node_of.entry(cpu).or_insert(node);
            }
        }
    }
    cpus.iter()
        .map(|&cpu| {
            let file = system_root
                .join("cpu")
                .join(format!("cpu{cpu}"))
                .join("topology/thread_siblings_list");
            let mut siblings = read_cpu_list(&file, warnings).unwrap_or_default();
            if !siblings.contains(&cpu) {
                siblings.push(cpu);
                siblings.sort_unstable();
            }
            CpuTopology {
                cpu,
                core: siblings[0],
                siblings,
                node: node_of.get(&cpu).copied().unwrap_or(0),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::tests::Scratch;
    use super::*;

    #[test]
    fn topology_from_fixture_files_and_defaults() {
        let s = Scratch::with(
            "topo",
            &[
                ("cpu/cpu0/topology/thread_siblings_list", "0,2\n"),
                ("cpu/cpu2/topology/thread_siblings_list", "0,2\n"),
                ("cpu/cpu1/topology/thread_siblings_list", "1,3\n"),
                ("cpu/cpu3/topology/thread_siblings_list", "garbage\n"),
                ("node/node0/cpulist", "0-1\n"),
                ("node/node1/cpulist", "2-3\n"),
                ("node/possible", "0-1\n"),
            ],
        );
        let mut warnings = Vec::new();
        let topo = read_topology(&s.0, &[0, 1, 2, 3, 4], &mut warnings);
        assert_eq!(topo[0].core, 0);
        assert_eq!(topo[0].siblings, vec![0, 2]);
        assert_eq!(topo[2].core, 0);
        assert_eq!(topo[2].node, 1);
        assert_eq!(topo[1].core, 1);
        assert_eq!(topo[1].node, 0);
        // Unparsable siblings: its own core, with a warning.
        assert_eq!(topo[3].siblings, vec![3]);
        assert_eq!(topo[3].node, 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        // No files: own core, node 0.
        assert_eq!(
            topo[4],
            CpuTopology {
                cpu: 4,
                core: 4,
                siblings: vec![4],
                node: 0
            }
        );
        // An odd node list is a warning too.
        s.write("node/node2/cpulist", "x\n");
        let mut warnings = Vec::new();
        read_topology(&s.0, &[0], &mut warnings);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }
}
