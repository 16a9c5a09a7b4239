//! What a collection's parallel phases did: each worker's counters and the wall-clock phase
//! breakdown. Plain data, filled by the `parallel` and `collection` rooms and read by records,
//! logs and summaries.

use std::collections::BTreeMap;

/// Per-worker counters of one parallel phase.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct WorkerPhaseStats {
    /// Worker id.
    pub worker: usize,
    /// Root tasks executed, by task type name.
    pub root_tasks: BTreeMap<&'static str, u64>,
    /// Steal tasks entered (one per worker that reached the stealing stage).
    pub steal_tasks: u64,
    /// Items obtained by stealing.
    pub stolen: u64,
    /// Steal attempts (victim selections).
    pub steal_attempts: u64,
    /// Attempts that found nothing.
    pub steal_failures: u64,
    /// Times this worker entered the termination protocol.
    pub termination_entries: u64,
    /// Times it left the protocol again because work appeared.
    pub termination_exits: u64,
    /// Items processed (from any source).
    pub items: u64,
    /// Nanoseconds in root tasks (including draining the work they produced).
    pub root_ns: u64,
    /// Nanoseconds stealing and processing stolen work.
    pub steal_ns: u64,
    /// Nanoseconds inside the termination protocol.
    pub termination_ns: u64,
    /// Bytes this worker copied (scavenge) or marked live (full collection marking).
    pub bytes_copied: u64,
    /// CPUs this worker was seen on, sampled with `sched_getcpu` at task boundaries: CPU id →
    /// number of samples (a row of the worker × CPU occupancy matrix).
    pub cpus: BTreeMap<u32, u64>,
    /// What this worker used during the collection's pause (all its parallel phases): CPU
    /// time, page faults and context switches, read by the worker itself with
    /// `getrusage(RUSAGE_THREAD)` when it starts and ends each part of the collection.
    pub usage: crate::os::rusage::ThreadUsage,
    /// Where this worker's copies and scans fell relative to its node (all zero when the heap
    /// counts no NUMA figures: one node and no layout).
    pub numa: WorkerNumaStats,
    /// Segregated young collections only (004 §3.2.3): work items this worker sent to another
    /// node's inbox instead of processing them ("scan" messages).
    pub messages_sent: u64,
    /// Messages this worker took from its own node's inbox and processed.
    pub messages_received: u64,
    /// From the start of the collection's first parallel phase to this worker's start in it
    /// (how long waking it took), and to its end there, ns (`None` for a worker that took no
    /// part); later phases leave them as they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_start_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase_end_ns: Option<u64>,
}

/// One worker's NUMA figures in one collection (004 §3.2): a copy is remote when its
/// destination lies on another node than the worker's, a scan when the object whose slots the
/// worker reads does. Nodes are those of the heap's node map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkerNumaStats {
    /// The node index the worker counted as its own.
    pub node: usize,
    /// Bytes copied (scavenge) or moved (full compaction) to its own node.
    pub bytes_copied_local: u64,
    /// Bytes copied or moved to another node.
    pub bytes_copied_remote: u64,
    /// Objects (or reference-array chunks) whose slots it scanned on its own node.
    pub objects_scanned_local: u64,
    /// Objects whose slots it scanned on another node.
    pub objects_scanned_remote: u64,
}

impl WorkerNumaStats {
    /// Add `other`'s counters (the node stays).
    pub fn add(&mut self, other: &WorkerNumaStats) {
        self.bytes_copied_local += other.bytes_copied_local;
        self.bytes_copied_remote += other.bytes_copied_remote;
        self.objects_scanned_local += other.objects_scanned_local;
        self.objects_scanned_remote += other.objects_scanned_remote;
    }
}

impl WorkerPhaseStats {
    /// Count one sample of the CPU the worker runs on (`None`: not known, nothing counted).
    /// The engine takes `cpu` from its platform layer, so a simulation records simulated CPUs.
    pub fn note_cpu(&mut self, cpu: Option<u32>) {
        if let Some(cpu) = cpu {
            *self.cpus.entry(cpu).or_default() += 1;
        }
    }

    /// Root tasks executed, all types.
    pub fn root_task_count(&self) -> u64 {
        self.root_tasks.values().sum()
    }

    /// Add another phase's counters of the same worker.
    pub fn merge(&mut self, other: &WorkerPhaseStats) {
        for (k, v) in &other.root_tasks {
            *self.root_tasks.entry(k).or_default() += v;
        }
        self.steal_tasks += other.steal_tasks;
        self.stolen += other.stolen;
        self.steal_attempts += other.steal_attempts;
        self.steal_failures += other.steal_failures;
        self.termination_entries += other.termination_entries;
        self.termination_exits += other.termination_exits;
        self.items += other.items;
        self.root_ns += other.root_ns;
        self.steal_ns += other.steal_ns;
        self.termination_ns += other.termination_ns;
        self.bytes_copied += other.bytes_copied;
        for (&cpu, &n) in &other.cpus {
            *self.cpus.entry(cpu).or_default() += n;
        }
        self.usage.add(&other.usage);
        self.numa.add(&other.numa);
        self.messages_sent += other.messages_sent;
        self.messages_received += other.messages_received;
        self.phase_start_ns = self.phase_start_ns.or(other.phase_start_ns);
        self.phase_end_ns = self.phase_end_ns.or(other.phase_end_ns);
    }
}

/// Wall-clock breakdown of one collection, milliseconds (DESIGN.md "phase breakdown").
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct PhaseTimes {
    /// Setting up: root tasks, tops, bitmaps.
    pub init_ms: f64,
    /// Parallel phases (scavenge: copying; full: mark, adjust, compact).
    pub parallel_ms: f64,
    /// Finishing: space resets, promotion-failure repair, bitmap clearing.
    pub final_ms: f64,
    /// Full collection only: named sub-phases in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<(&'static str, f64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_phases_adds_counters_and_keeps_the_first_phases_start_and_end() {
        let first = WorkerPhaseStats {
            items: 3,
            root_ns: 10,
            phase_start_ns: Some(40),
            phase_end_ns: Some(90),
            ..Default::default()
        };
        let later = WorkerPhaseStats {
            items: 4,
            root_ns: 5,
            phase_start_ns: Some(7),
            phase_end_ns: Some(30),
            ..Default::default()
        };
        let mut merged = WorkerPhaseStats::default();
        merged.merge(&first);
        merged.merge(&later);
        assert_eq!((merged.items, merged.root_ns), (7, 15));
        assert_eq!(
            (merged.phase_start_ns, merged.phase_end_ns),
            (Some(40), Some(90))
        );
    }
}
