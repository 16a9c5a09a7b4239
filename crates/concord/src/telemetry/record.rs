//! Per-collection records (DESIGN.md "Per-collection records") and their summaries.

use std::collections::{BTreeMap, BTreeSet};

use super::phase::{PhaseTimes, WorkerPhaseStats};

/// Which collection ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CollectionKind {
    /// Copy live young objects to a survivor space or the old generation.
    Young,
    /// Mark the whole heap and compact it into the old generation.
    Full,
}

/// Why a collection ran (spelled as HotSpot's GC log spells its causes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum GcCause {
    /// A mutator could not allocate.
    #[serde(rename = "Allocation Failure")]
    AllocationFailure,
    /// The old generation is too full for the next scavenge's expected promotion.
    Ergonomics,
    /// The preceding scavenge could not copy every live object.
    #[serde(rename = "Promotion Failed")]
    PromotionFailed,
    /// An explicit request (`Mutator::collect`).
    #[serde(rename = "System.gc()")]
    Explicit,
}

impl GcCause {
    /// The log spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GcCause::AllocationFailure => "Allocation Failure",
            GcCause::Ergonomics => "Ergonomics",
            GcCause::PromotionFailed => "Promotion Failed",
            GcCause::Explicit => "System.gc()",
        }
    }
}

/// Everything recorded about one collection.
#[derive(Clone, Debug, serde::Serialize)]
pub struct CollectionRecord {
    /// Sequence number, from 0.
    pub id: u64,
    /// Young or full.
    pub kind: CollectionKind,
    /// Why it ran.
    pub cause: GcCause,
    /// Start, milliseconds since the heap was created.
    pub start_ms: f64,
    /// Duration of the collection itself (the pause HotSpot logs), milliseconds.
    pub pause_ms: f64,
    /// Time the VM thread waited for mutators to reach the safepoint, milliseconds.
    pub time_to_safepoint_ms: f64,
    /// Time spent writing this collection's GC log lines inside the pause (`gc-log-mode =
    /// sync`; included in `pause_ms`), milliseconds; 0 otherwise.
    pub log_write_ms: f64,
    /// CPU time in user mode of all GC threads (the workers and the VM thread) during the
    /// pause, ms (HotSpot's `[gc,cpu]` `User=`).
    pub gc_user_ms: f64,
    /// CPU time in the kernel of all GC threads during the pause, ms (`Sys=`): system calls,
    /// page faults, THP compaction, direct reclaim.
    pub gc_sys_ms: f64,
    /// Page faults without I/O the GC threads took during the pause (first touch of memory the
    /// collection copies into).
    pub pause_minor_faults: u64,
    /// Page faults with I/O (swap-in) the GC threads took during the pause.
    pub pause_major_faults: u64,
    /// Times the scheduler preempted a GC thread during the pause while it could still run.
    pub gc_involuntary_switches: u64,
    /// The VM thread's own share of the figures above (its setup and finishing phases; it
    /// sleeps while the workers run). The workers' shares are in `workers[i].usage`.
    pub vm_thread_usage: crate::os::rusage::ThreadUsage,
    /// Heap bytes in use before.
    pub heap_before: usize,
    /// Heap bytes in use after.
    pub heap_after: usize,
    /// Heap capacity (old + eden + one survivor, as HotSpot reports it).
    pub heap_capacity: usize,
    /// Young bytes in use before / after.
    pub young_before: usize,
    /// Young bytes in use after.
    pub young_after: usize,
    /// Old bytes in use before.
    pub old_before: usize,
    /// Old bytes in use after.
    pub old_after: usize,
    /// Bytes copied (scavenge: to survivor or old; full: moved by compaction).
    pub bytes_copied: usize,
    /// Bytes promoted to old (scavenge only).
    pub bytes_promoted: usize,
    /// The scavenge could not copy everything.
    pub promotion_failed: bool,
    /// Tenuring threshold in force during this scavenge.
    pub tenuring_threshold: u32,
    /// Workers that took part.
    pub gc_threads: usize,
    /// Phase breakdown.
    pub phases: PhaseTimes,
    /// What each worker did in the parallel (copying or marking) phase.
    pub workers: Vec<WorkerPhaseStats>,
    /// What dynamic GC affinity (000 Algorithm 1) decided and did before this collection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<crate::os::gc_affinity::AffinityReport>,
    /// Task type × worker: how many tasks of each type each worker ran (000 Fig. 4a / 8b);
    /// `Steal` counts steal tasks. Derived from `workers` by [`CollectionRecord::derive`].
    pub task_distribution: BTreeMap<String, Vec<u64>>,
    /// Worker × CPU: how often each worker was seen on each CPU (000 Fig. 4b / 8a).
    pub cpu_occupancy: CpuOccupancy,
    /// Verification result when `verify` is on.
    pub verified: Option<bool>,
    /// How the GC task manager's monitor changed hands during this collection (000 Fig. 5);
    /// `None` when neither the task queue nor the parking used it.
    pub monitor: Option<MonitorRecord>,
    /// Local and remote copies and scans of this collection, summed over its workers; `None`
    /// when the heap counts no NUMA figures (one node and no layout).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa: Option<NumaCollectionRecord>,
    /// Bytes handed to mutators (TLAB refills and direct allocations) since the previous
    /// collection, by node index under the layout's node map; empty when the heap counts no
    /// NUMA figures.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bytes_allocated_per_node: Vec<u64>,
    /// Bytes handed to mutators (TLAB refills and direct allocations) since the previous
    /// collection.
    pub bytes_allocated: u64,
    /// 004's GC throughput of this collection (Fig. 4/7): `bytes_allocated` in MiB per second
    /// of its pause; `None` for a pause too short to time. Derived by
    /// [`CollectionRecord::derive`].
    pub gc_throughput_mb_s: Option<f64>,
    /// The objects GC workers scanned, by node of the scanned memory (004 Table 4's accesses,
    /// [`super::gc_metrics::scans_per_node`]); `None` when the heap counts no NUMA figures or
    /// the split is unknown (remote scans on more than two nodes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scans_per_node: Option<Vec<u64>>,
}

/// The NUMA figures of one collection: its workers' [`WorkerNumaStats`] summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NumaCollectionRecord {
    /// Bytes copied (or moved) to the copying worker's node.
    pub bytes_copied_local: u64,
    /// Bytes copied (or moved) to another node.
    pub bytes_copied_remote: u64,
    /// Objects scanned on the scanning worker's node.
    pub objects_scanned_local: u64,
    /// Objects scanned on another node.
    pub objects_scanned_remote: u64,
    /// Scan messages sent between nodes (segregated young collections, 004 §3.2.3; 0 under
    /// every other layout and in full collections).
    pub messages: u64,
}

impl NumaCollectionRecord {
    /// The sums over `workers`.
    pub fn from_workers(workers: &[WorkerPhaseStats]) -> NumaCollectionRecord {
        let mut total = super::WorkerNumaStats::default();
        for w in workers {
            total.add(&w.numa);
        }
        NumaCollectionRecord {
            bytes_copied_local: total.bytes_copied_local,
            bytes_copied_remote: total.bytes_copied_remote,
            objects_scanned_local: total.objects_scanned_local,
            objects_scanned_remote: total.objects_scanned_remote,
            messages: workers.iter().map(|w| w.messages_sent).sum(),
        }
    }
}

/// The heap's NUMA layout, topology and per-node allocation (filled by `Heap::stats`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NumaReport {
    /// `off`, `interleaved` or `fragmented`.
    pub layout: crate::os::numa::NumaLayout,
    /// The topology spec as configured (`auto` or the synthetic spec).
    pub topology: crate::os::numa::NumaTopologySpec,
    /// Real (`auto`) or synthetic nodes.
    pub kind: crate::os::numa::TopologyKind,
    /// The nodes and their CPUs, in node-index order.
    pub nodes: Vec<crate::os::numa::NumaNode>,
    /// Whether the heap counts local and remote figures (more than one node, or a layout).
    pub accounting: bool,
    /// Whether `mbind` placed the heap's memory (interleaved on real nodes).
    pub memory_bound: bool,
    /// Bytes handed to mutators (TLABs and direct allocations) by the node of the memory.
    pub bytes_allocated_per_node: Vec<u64>,
    /// Where each GC worker was placed: its node and the CPUs the kernel lets it run on now.
    pub workers: Vec<NumaWorkerPlacement>,
    /// Placements the OS refused (each also logged as a warning).
    pub placement_failures: Vec<String>,
}

/// One GC worker's NUMA placement.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NumaWorkerPlacement {
    /// Worker id.
    pub worker: usize,
    /// The node index it was placed on (`None` with layout `off`: not placed).
    pub node: Option<usize>,
    /// Its affinity mask as the kernel reports it (empty if it could not be read).
    pub cpus: Vec<u32>,
}

/// What the GC task manager's monitor did during one collection: the dynamics of 000 Fig. 5.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MonitorRecord {
    /// Times the lock was acquired.
    pub acquisitions: u64,
    /// Acquisitions that found the lock taken and had to queue.
    pub contended: u64,
    /// Fast-path acquisitions past queued threads (the old owner barging back, 000 §2.4).
    pub barges: u64,
    /// Wake-ups of the `OnDeck` heir by a releasing owner.
    pub heir_wakeups: u64,
    /// Wake-ups that found the lock taken again or nothing to do.
    pub futile_wakeups: u64,
}

/// The worker × CPU occupancy matrix of one collection.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CpuOccupancy {
    /// The CPUs any worker was seen on, ascending (the columns).
    pub cpus: Vec<u32>,
    /// `samples[worker][column]`: `sched_getcpu` samples of that worker on that CPU.
    pub samples: Vec<Vec<u64>>,
}

impl CollectionRecord {
    /// Attribute the pause's resource usage: the VM thread's share `vm` plus every worker's
    /// (`workers[i].usage`, filled before) make the record's totals.
    pub fn attribute_usage(&mut self, vm: crate::os::rusage::ThreadUsage) {
        let mut total = vm;
        for w in &self.workers {
            total.add(&w.usage);
        }
        self.vm_thread_usage = vm;
        self.gc_user_ms = total.user_ms();
        self.gc_sys_ms = total.sys_ms();
        self.pause_minor_faults = total.minor_faults;
        self.pause_major_faults = total.major_faults;
        self.gc_involuntary_switches = total.involuntary_switches;
    }

    /// Fill the matrices derived from the per-worker counters.
    pub fn derive(&mut self) {
        self.gc_throughput_mb_s =
            super::gc_metrics::gc_throughput_mb_s(self.bytes_allocated, self.pause_ms);
        let n = self.workers.len();
        let mut tasks: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (w, stats) in self.workers.iter().enumerate() {
            for (name, &count) in &stats.root_tasks {
                tasks.entry(name.to_string()).or_insert_with(|| vec![0; n])[w] += count;
            }
            tasks
                .entry("Steal".to_string())
                .or_insert_with(|| vec![0; n])[w] += stats.steal_tasks;
        }
        self.task_distribution = tasks;
        let cpus: Vec<u32> = self
            .workers
            .iter()
            .flat_map(|w| w.cpus.keys().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let samples = self
            .workers
            .iter()
            .map(|w| {
                cpus.iter()
                    .map(|c| w.cpus.get(c).copied().unwrap_or(0))
                    .collect()
            })
            .collect();
        self.cpu_occupancy = CpuOccupancy { cpus, samples };
    }

    /// Root-task imbalance of this collection: the most root tasks one worker ran over the mean
    /// per worker (1.0 = perfectly even; `N` = one of N workers ran them all). `None` without
    /// root tasks.
    pub fn root_task_imbalance(&self) -> Option<f64> {
        let counts: Vec<u64> = self.workers.iter().map(|w| w.root_task_count()).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let max = *counts.iter().max().unwrap_or(&0) as f64;
        Some(max / (total as f64 / counts.len() as f64))
    }

    /// Distinct CPUs the workers were seen on during this collection.
    pub fn cpus_used(&self) -> usize {
        self.workers
            .iter()
            .flat_map(|w| w.cpus.keys())
            .collect::<BTreeSet<_>>()
            .len()
    }
}

/// Time all workers spent in each part of the parallel phases, summed (000 Fig. 6), ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct WorkerTimeBreakdown {
    /// Root tasks, including draining the work they produced.
    pub root_ms: f64,
    /// Stealing and processing stolen work.
    pub steal_ms: f64,
    /// Inside the termination protocol.
    pub termination_ms: f64,
}

/// All records of a heap so far, with derived summaries.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct GcStats {
    /// One record per collection, in order.
    pub records: Vec<CollectionRecord>,
    /// Bytes handed out to mutators (TLABs and direct allocations).
    pub bytes_allocated: u64,
    /// Verification failures, with the verifier's message.
    pub verify_failures: Vec<String>,
    /// Object lifespans, when the heap profiles them (`GcConfig::lifespans`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lifespans: Option<super::LifespanReport>,
    /// What the mutator scheduling policy did (`GcConfig::mutator_sched`), filled by
    /// `Heap::stats`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutator_sched: Option<crate::os::mutator_sched::MutatorSchedReport>,
    /// The heap's THP mode and how much of it huge pages backed, filled when the heap's
    /// outputs are closed (`Heap::finish`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thp: Option<crate::os::thp::ThpReport>,
    /// What pretouching the heap did, when it was asked for (`GcConfig::pretouch`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pretouch: Option<crate::memory::pretouch::PretouchReport>,
    /// What became of the GC log, when there is one (filled when the heap's outputs close).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gc_log: Option<GcLogStats>,
    /// How long mutators waited for memory after a failed allocation.
    pub alloc_stalls: AllocStalls,
    /// The NUMA layout and per-node allocation, filled by `Heap::stats`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numa: Option<NumaReport>,
}

/// Allocation stalls: each time a mutator's allocation failed (a TLAB refill or a large
/// object that needed a collection), how long it waited from the failure until it had its
/// memory back. That is what a request running on the mutator sees of a pause: the time to
/// safepoint, the collection, a GC log written inside the pause (sync mode) and the wake-up.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct AllocStalls {
    /// Every stall, ms, in the order they ended (exact figures: a stall costs 8 bytes, and
    /// there are at most as many per collection as there are mutators).
    pub stalls_ms: Vec<f64>,
}

impl AllocStalls {
    /// Note one stall of `ms` milliseconds.
    pub fn record(&mut self, ms: f64) {
        self.stalls_ms.push(ms);
    }

    /// Number of stalls.
    pub fn count(&self) -> usize {
        self.stalls_ms.len()
    }

    /// The longest stall, ms (0 without stalls).
    pub fn max_ms(&self) -> f64 {
        self.stalls_ms.iter().copied().fold(0.0, f64::max)
    }

    /// Stall percentile `p` in 0..=100 (nearest rank), ms; 0 without stalls.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        nearest_rank(&self.stalls_ms, p)
    }
}

/// Percentile `p` in 0..=100 of `values` by nearest rank; 0 for no values.
pub fn nearest_rank(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// What became of a GC log's lines.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GcLogStats {
    /// How it was written.
    pub mode: crate::config::GcLogMode,
    /// Lines dropped (async buffer full, or still unwritten when the final flush ran out).
    pub dropped: u64,
    /// The longest single write of its lines, ms.
    pub write_max_ms: f64,
}

impl GcStats {
    /// Number of collections of `kind`.
    pub fn count(&self, kind: CollectionKind) -> usize {
        self.records.iter().filter(|r| r.kind == kind).count()
    }

    /// Sum of pause times, ms.
    pub fn pause_total_ms(&self) -> f64 {
        // Folded from +0.0: an empty float `sum` is -0.0, which would print as "-0.0 ms".
        self.records.iter().fold(0.0, |total, r| total + r.pause_ms)
    }

    /// Longest pause, ms (0 without collections).
    pub fn pause_max_ms(&self) -> f64 {
        self.records.iter().map(|r| r.pause_ms).fold(0.0, f64::max)
    }

    /// Pause-time percentile `p` in 0..=100 (nearest rank), ms; 0 without collections.
    pub fn pause_percentile_ms(&self, p: f64) -> f64 {
        let pauses: Vec<f64> = self.records.iter().map(|r| r.pause_ms).collect();
        nearest_rank(&pauses, p)
    }

    /// User CPU time of the GC threads over all pauses, ms.
    pub fn gc_user_ms(&self) -> f64 {
        self.records
            .iter()
            .fold(0.0, |total, r| total + r.gc_user_ms)
    }

    /// System CPU time of the GC threads over all pauses, ms.
    pub fn gc_sys_ms(&self) -> f64 {
        self.records
            .iter()
            .fold(0.0, |total, r| total + r.gc_sys_ms)
    }

    /// Minor page faults the GC threads took in all pauses.
    pub fn pause_minor_faults(&self) -> u64 {
        self.records.iter().map(|r| r.pause_minor_faults).sum()
    }

    /// Major page faults the GC threads took in all pauses.
    pub fn pause_major_faults(&self) -> u64 {
        self.records.iter().map(|r| r.pause_major_faults).sum()
    }

    /// Involuntary context switches of the GC threads in all pauses.
    pub fn gc_involuntary_switches(&self) -> u64 {
        self.records.iter().map(|r| r.gc_involuntary_switches).sum()
    }

    /// Bytes copied by all collections.
    pub fn bytes_copied(&self) -> u64 {
        self.records.iter().map(|r| r.bytes_copied as u64).sum()
    }

    /// Bytes promoted by all scavenges.
    pub fn bytes_promoted(&self) -> u64 {
        self.records.iter().map(|r| r.bytes_promoted as u64).sum()
    }

    /// Steal attempts over all collections and workers.
    pub fn steal_attempts(&self) -> u64 {
        self.sum_over_workers(|w| w.steal_attempts)
    }

    /// Failed steal attempts over all collections and workers.
    pub fn steal_failures(&self) -> u64 {
        self.sum_over_workers(|w| w.steal_failures)
    }

    /// A per-worker counter summed over all collections and workers.
    fn sum_over_workers(&self, counter: impl Fn(&WorkerPhaseStats) -> u64) -> u64 {
        self.records
            .iter()
            .flat_map(|r| &r.workers)
            .map(counter)
            .sum()
    }

    /// Mean over collections with root tasks of [`CollectionRecord::root_task_imbalance`]
    /// (0 when no collection had root tasks).
    pub fn root_task_imbalance(&self) -> f64 {
        let v: Vec<f64> = self
            .records
            .iter()
            .filter_map(CollectionRecord::root_task_imbalance)
            .collect();
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    }

    /// GC workers moved by dynamic GC affinity, over all collections.
    pub fn affinity_moves(&self) -> usize {
        self.records
            .iter()
            .filter_map(|r| r.affinity.as_ref())
            .map(|a| a.moves.len())
            .sum()
    }

    /// Mean number of distinct CPUs the GC workers ran on per collection (0 without any).
    pub fn mean_cpus_used(&self) -> f64 {
        if self.records.is_empty() {
            return 0.0;
        }
        let total: usize = self.records.iter().map(CollectionRecord::cpus_used).sum();
        total as f64 / self.records.len() as f64
    }

    /// Worker time in root tasks, stealing and termination over all collections.
    pub fn worker_time(&self) -> WorkerTimeBreakdown {
        let ns = |f: fn(&WorkerPhaseStats) -> u64| {
            self.records
                .iter()
                .flat_map(|r| &r.workers)
                .map(f)
                .sum::<u64>() as f64
                / 1e6
        };
        WorkerTimeBreakdown {
            root_ms: ns(|w| w.root_ns),
            steal_ms: ns(|w| w.steal_ns),
            termination_ms: ns(|w| w.termination_ns),
        }
    }

    /// The objects GC workers scanned by node of the scanned memory, over all collections
    /// that counted NUMA figures (004 Table 4's accesses); `None` when none did or one's split
    /// is unknown.
    pub fn scans_per_node(&self) -> Option<Vec<u64>> {
        let mut total: Option<Vec<u64>> = None;
        for r in self.records.iter().filter(|r| r.numa.is_some()) {
            let per_node = r.scans_per_node.as_ref()?;
            let sum = total.get_or_insert_with(|| vec![0; per_node.len()]);
            sum.iter_mut().zip(per_node).for_each(|(t, n)| *t += n);
        }
        total
    }

    /// Local and remote copies and scans summed over all collections (zero without NUMA
    /// figures).
    pub fn numa_totals(&self) -> NumaCollectionRecord {
        let mut t = NumaCollectionRecord::default();
        for n in self.records.iter().filter_map(|r| r.numa.as_ref()) {
            t.bytes_copied_local += n.bytes_copied_local;
            t.bytes_copied_remote += n.bytes_copied_remote;
            t.objects_scanned_local += n.objects_scanned_local;
            t.objects_scanned_remote += n.objects_scanned_remote;
            t.messages += n.messages;
        }
        t
    }

    /// Remote copied bytes over all copied bytes (0 when nothing was copied or no NUMA figures
    /// were counted).
    pub fn remote_copy_fraction(&self) -> f64 {
        let t = self.numa_totals();
        let all = t.bytes_copied_local + t.bytes_copied_remote;
        if all == 0 {
            0.0
        } else {
            t.bytes_copied_remote as f64 / all as f64
        }
    }

    /// `true` if every collection verified, `false` if any failed, `None` if none was verified.
    pub fn verified(&self) -> Option<bool> {
        let mut any = false;
        for r in &self.records {
            match r.verified {
                Some(false) => return Some(false),
                Some(true) => any = true,
                None => {}
            }
        }
        (any || !self.verify_failures.is_empty()).then_some(self.verify_failures.is_empty())
    }
}

impl CollectionRecord {
    /// Collection `id` of `kind`, run for `cause`, with every figure zero and no workers: the
    /// start of a record whose figures are measured elsewhere (the simulator's replayed
    /// collections, tests).
    pub fn zeroed(id: u64, kind: CollectionKind, cause: GcCause) -> CollectionRecord {
        CollectionRecord {
            id,
            kind,
            cause,
            start_ms: 0.0,
            pause_ms: 0.0,
            time_to_safepoint_ms: 0.0,
            log_write_ms: 0.0,
            gc_user_ms: 0.0,
            gc_sys_ms: 0.0,
            pause_minor_faults: 0,
            pause_major_faults: 0,
            gc_involuntary_switches: 0,
            vm_thread_usage: Default::default(),
            heap_before: 0,
            heap_after: 0,
            heap_capacity: 0,
            young_before: 0,
            young_after: 0,
            old_before: 0,
            old_after: 0,
            bytes_copied: 0,
            bytes_promoted: 0,
            promotion_failed: false,
            tenuring_threshold: 0,
            gc_threads: 0,
            phases: PhaseTimes::default(),
            workers: vec![],
            affinity: None,
            monitor: None,
            task_distribution: BTreeMap::new(),
            cpu_occupancy: CpuOccupancy::default(),
            verified: None,
            numa: None,
            bytes_allocated_per_node: Vec::new(),
            bytes_allocated: 0,
            gc_throughput_mb_s: None,
            scans_per_node: None,
        }
    }

    /// A young collection `id` with every figure zero, for tests.
    #[cfg(test)]
    pub(crate) fn test_young(id: u64) -> CollectionRecord {
        CollectionRecord {
            tenuring_threshold: 7,
            gc_threads: 1,
            ..CollectionRecord::zeroed(id, CollectionKind::Young, GcCause::AllocationFailure)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(ms: f64) -> CollectionRecord {
        let mut r = CollectionRecord::test_young(0);
        r.pause_ms = ms;
        r
    }

    #[test]
    fn matrices_and_imbalance_follow_the_worker_counters() {
        let mut r = rec(1.0);
        let mut a = WorkerPhaseStats::default();
        a.root_tasks.insert("ThreadRoots", 3);
        a.steal_tasks = 1;
        a.cpus.insert(1, 4);
        let mut b = WorkerPhaseStats {
            worker: 1,
            steal_tasks: 1,
            ..Default::default()
        };
        b.root_tasks.insert("OldToYoungRoots", 1);
        b.cpus.insert(1, 1);
        b.cpus.insert(0, 2);
        r.workers = vec![a, b];
        r.derive();
        assert_eq!(r.task_distribution["ThreadRoots"], vec![3, 0]);
        assert_eq!(r.task_distribution["OldToYoungRoots"], vec![0, 1]);
        assert_eq!(r.task_distribution["Steal"], vec![1, 1]);
        assert_eq!(r.cpu_occupancy.cpus, vec![0, 1]);
        assert_eq!(r.cpu_occupancy.samples, vec![vec![0, 4], vec![2, 1]]);
        assert_eq!(r.root_task_imbalance(), Some(1.5));
        assert_eq!(r.cpus_used(), 2);
        assert_eq!(rec(1.0).root_task_imbalance(), None);
    }

    #[test]
    fn a_records_usage_is_the_vm_threads_share_plus_every_workers() {
        use crate::os::rusage::ThreadUsage;
        let usage = |ms: u64, minor: u64, switches: u64| ThreadUsage {
            user_ns: ms * 1_000_000,
            sys_ns: ms * 500_000,
            minor_faults: minor,
            major_faults: minor / 10,
            voluntary_switches: 1,
            involuntary_switches: switches,
            cpu_ns: ms * 1_500_000,
        };
        let mut r = rec(5.0);
        r.workers = (0..3)
            .map(|w| WorkerPhaseStats {
                worker: w,
                usage: usage(w as u64 + 1, 10 * (w as u64 + 1), w as u64),
                ..Default::default()
            })
            .collect();
        r.attribute_usage(usage(4, 100, 7));
        assert_eq!(r.gc_user_ms, 10.0);
        assert_eq!(r.gc_sys_ms, 5.0);
        assert_eq!(r.pause_minor_faults, 160);
        assert_eq!(r.pause_major_faults, 16);
        assert_eq!(r.gc_involuntary_switches, 10);
        assert_eq!(r.vm_thread_usage, usage(4, 100, 7));
        let stats = GcStats {
            records: vec![r.clone(), r],
            ..Default::default()
        };
        assert_eq!(stats.gc_user_ms(), 20.0);
        assert_eq!(stats.pause_minor_faults(), 320);
        assert_eq!(stats.gc_involuntary_switches(), 20);
    }

    #[test]
    fn scans_per_node_sum_over_the_collections_that_counted_them() {
        let mut stats = GcStats::default();
        assert_eq!(stats.scans_per_node(), None);
        let counted = |per_node: Option<Vec<u64>>| {
            let mut r = rec(1.0);
            r.numa = Some(NumaCollectionRecord::default());
            r.scans_per_node = per_node;
            r
        };
        stats.records.push(counted(Some(vec![3, 4])));
        stats.records.push(rec(1.0)); // counted nothing: skipped
        stats.records.push(counted(Some(vec![10, 0])));
        assert_eq!(stats.scans_per_node(), Some(vec![13, 4]));
        // One collection whose split is unknown makes the sum unknown.
        stats.records.push(counted(None));
        assert_eq!(stats.scans_per_node(), None);
    }

    #[test]
    fn numa_totals_and_the_remote_copy_fraction() {
        let mut stats = GcStats::default();
        assert_eq!(stats.remote_copy_fraction(), 0.0);
        let worker = |local, remote| WorkerPhaseStats {
            numa: super::super::WorkerNumaStats {
                node: 0,
                bytes_copied_local: local,
                bytes_copied_remote: remote,
                objects_scanned_local: 1,
                objects_scanned_remote: 2,
            },
            ..Default::default()
        };
        let mut r = rec(1.0);
        r.numa = Some(NumaCollectionRecord::from_workers(&[
            worker(10, 30),
            worker(20, 40),
        ]));
        stats.records = vec![r.clone(), r, rec(1.0)];
        let t = stats.numa_totals();
        assert_eq!((t.bytes_copied_local, t.bytes_copied_remote), (60, 140));
        assert_eq!((t.objects_scanned_local, t.objects_scanned_remote), (4, 8));
        assert_eq!(stats.remote_copy_fraction(), 0.7);
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let s = GcStats {
            records: (1..=100).map(|i| rec(i as f64)).collect(),
            ..Default::default()
        };
        assert_eq!(s.pause_percentile_ms(50.0), 50.0);
        assert_eq!(s.pause_percentile_ms(99.0), 99.0);
        assert_eq!(s.pause_percentile_ms(100.0), 100.0);
        assert_eq!(s.pause_max_ms(), 100.0);
        assert_eq!(s.pause_total_ms(), 5050.0);
        assert_eq!(GcStats::default().pause_percentile_ms(99.0), 0.0);
        assert_eq!(s.verified(), None);
    }

    #[test]
    fn alloc_stall_figures_use_nearest_rank_too() {
        let mut stalls = AllocStalls::default();
        assert_eq!((stalls.count(), stalls.max_ms()), (0, 0.0));
        assert_eq!(stalls.percentile_ms(99.0), 0.0);
        for ms in (1..=200).rev() {
            stalls.record(ms as f64 / 2.0);
        }
        assert_eq!(stalls.count(), 200);
        assert_eq!(stalls.max_ms(), 100.0);
        assert_eq!(stalls.percentile_ms(99.0), 99.0);
        assert_eq!(stalls.percentile_ms(50.0), 50.0);
    }
}
