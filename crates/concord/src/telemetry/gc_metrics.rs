//! The two headline metrics of 004 (§4.2): GC throughput (Fig. 4/7: bytes the application
//! allocated per second of GC time) and the imbalance of the collector's memory accesses
//! across NUMA nodes (Table 4), computed from the figures the collections already count.

use super::WorkerNumaStats;

/// Bytes in the "MB" of `gc_throughput_mb_s` (MiB, as Concord prints sizes everywhere).
const MB: f64 = (1u64 << 20) as f64;

/// 004's GC throughput: `bytes_allocated` by the application divided by the time spent in GC
/// (`gc_ms`), in MB (MiB) per second; `None` when no GC time was spent (nothing to divide by).
pub fn gc_throughput_mb_s(bytes_allocated: u64, gc_ms: f64) -> Option<f64> {
    (gc_ms > 0.0).then(|| bytes_allocated as f64 / MB / (gc_ms / 1e3))
}

/// The collector's memory accesses per node in one collection, as the closest analogue of
/// 004 Table 4 that Concord counts: each object (or reference-array chunk) whose slots a GC
/// worker scanned, attributed to the node of the object's memory under the heap's node map.
/// A worker's local scans are on its own node; its remote scans are on "another node", which
/// names one node only on a two-node topology, so with more nodes and any remote scan the
/// per-node split is unknown and this is `None`.
pub fn scans_per_node(workers: &[WorkerNumaStats], nodes: usize) -> Option<Vec<u64>> {
    let mut per_node = vec![0u64; nodes];
    for w in workers {
        *per_node.get_mut(w.node)? += w.objects_scanned_local;
        if w.objects_scanned_remote > 0 {
            if nodes != 2 {
                return None;
            }
            per_node[1 - w.node] += w.objects_scanned_remote;
        }
    }
    Some(per_node)
}

/// 004 Table 4's imbalance: the standard deviation (over nodes) of each node's share of the
/// accesses, taken relative to the mean share, i.e. of `N · accesses[n] / total`. 0 means
/// perfectly balanced; all accesses on one node give √(N−1) (1.0 on two nodes, 2.65 on the
/// paper's eight, whose Parallel Scavenge row reads 2.6). `None` without accesses.
pub fn access_imbalance(accesses: &[u64]) -> Option<f64> {
    let total: u64 = accesses.iter().sum();
    if total == 0 {
        return None;
    }
    let n = accesses.len() as f64;
    let variance = accesses
        .iter()
        .map(|&a| (n * a as f64 / total as f64 - 1.0).powi(2))
        .sum::<f64>()
        / n;
    Some(variance.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(node: usize, local: u64, remote: u64) -> WorkerNumaStats {
        WorkerNumaStats {
            node,
            objects_scanned_local: local,
            objects_scanned_remote: remote,
            ..Default::default()
        }
    }

    #[test]
    fn gc_throughput_is_megabytes_allocated_per_second_of_gc() {
        // 64 MiB allocated, 500 ms in GC: 128 MiB/s.
        assert_eq!(gc_throughput_mb_s(64 << 20, 500.0), Some(128.0));
        // 3 MiB over 2 ms: 1500 MiB/s.
        assert_eq!(gc_throughput_mb_s(3 << 20, 2.0), Some(1500.0));
        assert_eq!(gc_throughput_mb_s(1 << 20, 0.0), None);
        assert_eq!(gc_throughput_mb_s(0, 10.0), Some(0.0));
    }

    #[test]
    fn scans_go_to_the_node_of_the_scanned_memory() {
        // Worker 0 on node 0: 10 local, 4 remote (on node 1); worker 1 on node 1: 6 local,
        // 2 remote (on node 0). Node 0: 10 + 2, node 1: 4 + 6.
        let two = [worker(0, 10, 4), worker(1, 6, 2)];
        assert_eq!(scans_per_node(&two, 2), Some(vec![12, 10]));
        // Three nodes: a remote scan names no node.
        assert_eq!(scans_per_node(&[worker(0, 5, 1)], 3), None);
        // ... but local-only scans are exact on any number of nodes.
        let local = [worker(0, 5, 0), worker(2, 7, 0)];
        assert_eq!(scans_per_node(&local, 3), Some(vec![5, 0, 7]));
        // One node: everything is local.
        assert_eq!(scans_per_node(&[worker(0, 9, 0)], 1), Some(vec![9]));
    }

    #[test]
    fn imbalance_is_the_deviation_of_the_nodes_shares_from_the_mean() {
        assert_eq!(access_imbalance(&[50, 50]), Some(0.0));
        // All on one of two nodes: shares 2 and 0 around a mean of 1: deviation 1.
        assert_eq!(access_imbalance(&[100, 0]), Some(1.0));
        // 75/25: relative shares 1.5 and 0.5: deviation 0.5.
        assert_eq!(access_imbalance(&[75, 25]), Some(0.5));
        // All on one of eight nodes: √7 ≈ 2.65, Table 4's worst case.
        let eight = access_imbalance(&[8, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert!((eight - 7f64.sqrt()).abs() < 1e-12, "{eight}");
        assert_eq!(access_imbalance(&[0, 0]), None);
        assert_eq!(access_imbalance(&[]), None);
    }
}
