//! The replayed collections' records and the simulation's own summary figures, in the schema
//! `concord run` writes: each collection becomes a [`CollectionRecord`] (the type the heap
//! records real collections in, written to `--gc-records` and summed by `concord run`'s summary
//! as they are), and the simulation adds one `sim` object ([`SimFigures`]).
//!
//! A GC trace holds a collection's parallel work, not the heap around it, so a replayed record
//! fills what the replay measures (start and duration in virtual time, per-worker counters,
//! CPUs, bytes copied and promoted, the monitor's counters) and leaves the heap occupancy
//! figures, the safepoint, the GC log and the threads' resource usage at 0. The trace does not
//! record why a collection ran: young collections are recorded as `Allocation Failure`, full
//! ones as `Ergonomics`, and a full collection right after a failed promotion as `Promotion
//! Failed` (the collector's own rule for starting it).

use concord::os::gc_affinity::AffinityReport;
use concord::telemetry::gc_trace::TraceKind;
use concord::telemetry::{
    nearest_rank, MonitorRecord, NumaCollectionRecord, PhaseTimes, WorkerNumaStats,
    WorkerPhaseStats,
};
use concord::{CollectionKind, CollectionRecord, GcCause, GcStats};

use super::ReplayCollection;
use crate::exec::{Ns, ThreadReport};

/// What the driver measured of one replayed collection.
#[derive(Clone, Debug, Default)]
pub struct SimulatedCollection {
    /// Each worker's counters from the engine (`bytes_copied` filled by the replay task).
    pub workers: Vec<WorkerPhaseStats>,
    /// Virtual time the collection started (the VM thread asked the mutators to stop), ns
    /// since the simulation began.
    pub start_ns: Ns,
    /// Virtual time its parallel phase started (every mutator stopped); `start_ns` where no
    /// mutator is simulated.
    pub phase_start_ns: Ns,
    /// Virtual time the phase ended (its last worker done).
    pub end_ns: Ns,
    /// The GC task manager's monitor counters during this collection, when the task queue or
    /// the parking used it.
    pub monitor: Option<MonitorRecord>,
    /// What dynamic GC affinity decided before this collection (`dynamic` only).
    pub affinity: Option<AffinityReport>,
}

fn ms(ns: Ns) -> f64 {
    ns as f64 / 1e6
}

/// The record of replayed collection `c` (see the module docs for what it leaves at 0);
/// `previous` is the collection replayed before it, if any.
pub fn collection_record(
    c: &ReplayCollection,
    previous: Option<&ReplayCollection>,
    run: SimulatedCollection,
) -> CollectionRecord {
    let (kind, cause) = match c.kind {
        TraceKind::Young => (CollectionKind::Young, GcCause::AllocationFailure),
        TraceKind::Full if previous.is_some_and(|p| p.promotion_failed) => {
            (CollectionKind::Full, GcCause::PromotionFailed)
        }
        TraceKind::Full => (CollectionKind::Full, GcCause::Ergonomics),
    };
    let pause_ns = run.end_ns.saturating_sub(run.start_ns);
    // The phase as the runtime measures it: from the world stopped to its last worker done.
    let phase_start = run.phase_start_ns.clamp(run.start_ns, run.end_ns);
    let parallel_ns = run.end_ns - phase_start;
    let bytes_copied: u64 = run.workers.iter().map(|w| w.bytes_copied).sum();
    let mut record = CollectionRecord {
        start_ms: ms(run.start_ns),
        pause_ms: ms(pause_ns),
        bytes_copied: bytes_copied as usize,
        bytes_promoted: match c.kind {
            TraceKind::Young => c.bytes_promoted() as usize,
            TraceKind::Full => 0,
        },
        promotion_failed: c.promotion_failed,
        gc_threads: run.workers.len(),
        time_to_safepoint_ms: ms(phase_start - run.start_ns),
        phases: PhaseTimes {
            parallel_ms: ms(parallel_ns),
            ..PhaseTimes::default()
        },
        numa: run
            .workers
            .iter()
            .any(|w| w.numa != WorkerNumaStats::default())
            .then(|| NumaCollectionRecord::from_workers(&run.workers)),
        workers: run.workers,
        monitor: run.monitor,
        affinity: run.affinity,
        ..CollectionRecord::zeroed(c.id, kind, cause)
    };
    record.derive();
    record
}

/// The records of a whole replay: `collections[i]` as `runs[i]` measured it.
pub fn gc_stats(collections: &[ReplayCollection], runs: Vec<SimulatedCollection>) -> GcStats {
    assert_eq!(collections.len(), runs.len(), "one run per collection");
    let records = runs
        .into_iter()
        .enumerate()
        .map(|(i, run)| {
            let previous = i.checked_sub(1).map(|p| &collections[p]);
            collection_record(&collections[i], previous, run)
        })
        .collect();
    GcStats {
        records,
        ..GcStats::default()
    }
}

/// The summary's `sim` object: the simulated machine and what the simulation measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SimFigures {
    /// Logical CPUs of the simulated machine.
    pub cpus: usize,
    /// The scheduler model: `cfs` (Linux 4.9) or `eevdf` (Linux 6.6).
    pub sched: String,
    /// Where the model puts a woken thread: `default` (its own placement) or `pack` (this
    /// machine's packing onto the waker's CPU, `--wake-placement pack`).
    pub wake_placement: String,
    /// The seed of the simulation.
    pub seed: u64,
    /// The machine's shape (`xeon-2x10`, `20cpu-2node-smt-off`).
    pub machine: String,
    /// Median over collections of the distinct CPUs the GC workers ran on (000 Fig. 4b).
    pub distinct_cpus_p50: f64,
    /// Time the GC workers were runnable but waited for a CPU, ms, over the whole simulation.
    pub runqueue_wait_ms: f64,
    /// Real time the simulation took, seconds.
    pub wall_s: f64,
}

/// Median over `records` of the distinct CPUs their workers were seen on (nearest rank, as
/// the summary's pause percentiles); 0 without records.
pub fn distinct_cpus_p50(records: &[CollectionRecord]) -> f64 {
    let cpus: Vec<f64> = records.iter().map(|r| r.cpus_used() as f64).collect();
    nearest_rank(&cpus, 50.0)
}

/// Run-queue wait of the simulated threads `is_gc_worker` picks out by name, ms.
pub fn runqueue_wait_ms(threads: &[ThreadReport], is_gc_worker: impl Fn(&str) -> bool) -> f64 {
    ms(threads
        .iter()
        .filter(|t| is_gc_worker(&t.name))
        .map(|t| t.wait_ns)
        .sum())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tests::tree;

    fn worker(id: usize, bytes: u64, cpus: &[u32]) -> WorkerPhaseStats {
        let mut w = WorkerPhaseStats {
            worker: id,
            bytes_copied: bytes,
            steal_tasks: 1,
            steal_attempts: 10,
            steal_failures: 4,
            ..Default::default()
        };
        w.root_tasks.insert("ThreadRoots", 1);
        for &c in cpus {
            *w.cpus.entry(c).or_default() += 1;
        }
        w
    }

    fn replay(id: u64) -> ReplayCollection {
        ReplayCollection::try_from(tree(id, 20)).unwrap()
    }

    #[test]
    fn a_record_carries_the_virtual_times_and_the_workers_counters() {
        let c = replay(4);
        let run = SimulatedCollection {
            workers: vec![worker(0, 300, &[0, 2]), worker(1, 200, &[2])],
            start_ns: 2_500_000,
            // The mutators took 0.5 ms to stop.
            phase_start_ns: 3_000_000,
            end_ns: 4_000_000,
            monitor: Some(MonitorRecord {
                acquisitions: 9,
                ..Default::default()
            }),
            affinity: None,
        };
        let r = collection_record(&c, None, run);
        assert_eq!(
            (r.id, r.kind, r.cause),
            (4, CollectionKind::Young, GcCause::AllocationFailure)
        );
        assert_eq!(
            (
                r.start_ms,
                r.pause_ms,
                r.time_to_safepoint_ms,
                r.phases.parallel_ms
            ),
            (2.5, 1.5, 0.5, 1.0)
        );
        assert_eq!(r.bytes_copied, 500);
        assert_eq!(r.bytes_promoted as u64, c.bytes_promoted());
        assert_eq!(r.gc_threads, 2);
        assert_eq!(r.cpus_used(), 2);
        assert_eq!(r.cpu_occupancy.samples, vec![vec![1, 1], vec![0, 1]]);
        assert_eq!(r.task_distribution["ThreadRoots"], vec![1, 1]);
        assert_eq!(r.monitor.unwrap().acquisitions, 9);
    }

    #[test]
    fn causes_follow_the_collectors_rule() {
        let young = replay(1);
        let mut failed = replay(2);
        failed.promotion_failed = true;
        let mut full = replay(3);
        full.kind = TraceKind::Full;
        let runs = || vec![SimulatedCollection::default(); 3];
        let stats = gc_stats(&[young.clone(), failed, full.clone()], runs());
        let causes: Vec<GcCause> = stats.records.iter().map(|r| r.cause).collect();
        assert_eq!(
            causes,
            vec![
                GcCause::AllocationFailure,
                GcCause::AllocationFailure,
                GcCause::PromotionFailed
            ]
        );
        let stats = gc_stats(&[young.clone(), young, full], runs());
        assert_eq!(stats.records[2].cause, GcCause::Ergonomics);
        assert_eq!(stats.records[2].bytes_promoted, 0);
    }

    #[test]
    fn sim_figures_are_medians_and_sums_of_what_was_measured() {
        let c = replay(1);
        let cpus_of = [vec![0u32], vec![0, 1, 2], vec![3, 4]];
        let stats = gc_stats(
            &[c.clone(), c.clone(), c],
            cpus_of
                .iter()
                .map(|cpus| SimulatedCollection {
                    workers: vec![worker(0, 1, cpus)],
                    ..Default::default()
                })
                .collect(),
        );
        assert_eq!(distinct_cpus_p50(&stats.records), 2.0);
        assert_eq!(distinct_cpus_p50(&[]), 0.0);
        let thread = |name: &str, wait_ns| ThreadReport {
            name: name.to_string(),
            run_ns: 0,
            wait_ns,
            blocked_ns: 0,
            finished_ns: 0,
            ops: 0,
            preemptions: 0,
            yields: 0,
            blocks: 0,
            migrations: 0,
            last_cpu: 0,
            background: false,
        };
        let threads = [
            thread("gc-0", 1_000_000),
            thread("busy-0", 7_000_000),
            thread("gc-1", 500_000),
        ];
        assert_eq!(runqueue_wait_ms(&threads, |n| n.starts_with("gc-")), 1.5);
    }
}
