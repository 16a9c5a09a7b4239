//! The VM thread: waits for requests, stops the world, decides which collections to run, runs
//! them, records them, resumes the world, and only then writes the GC log (000 §2.1) — except
//! a sync GC log (`gc-log-mode = sync`, paper 002's baseline), written before the world resumes.

use std::time::{Duration, Instant};

use super::heap::{
    GcError, GcErrorKind, HeapInner, GC_HEAP_FREE_LIMIT_PERCENT, GC_OVERHEAD_LIMIT_COLLECTIONS,
};
use super::lock;
use super::safepoint::{AllocationResult, Request};
use crate::collection::full::full_collect;
use crate::collection::scavenge::{scavenge, ScavengeParams};
use crate::collection::verify::verify_heap;
use crate::collection::weak::WeakRange;
use crate::collection::{GcContext, NumaContext, RootSlots, Tracked};
use crate::os::gc_affinity::AffinityReport;
use crate::os::rusage::ThreadUsage;
use crate::parallel::monitor::MonitorStats;
use crate::parallel::{ParkingKind, TaskQueueKind};
use crate::telemetry::gc_log::{GcLogMode, SafepointTimes};
use crate::telemetry::gc_trace::RawTrace;
use crate::telemetry::records_file::RecordsFile;
use crate::telemetry::{
    gc_metrics, CollectionKind, CollectionRecord, GcCause, NumaCollectionRecord, PhaseTimes,
    WorkerPhaseStats,
};

/// The VM thread's main loop; returns when the heap shuts down.
pub(crate) fn run(heap: &HeapInner) {
    // `fifo-scope all`: the VM thread follows the mutators' policy.
    heap.mutator_sched
        .add_runtime_threads(&[crate::os::sched::current_tid()]);
    // When the previous safepoint ended (the heap's creation before the first).
    let mut last_resumed = heap.start;
    while let Some((requests, op, mutators, ttsp)) = heap.safepoint.begin_operation() {
        let stopped = Instant::now();
        // SAFETY: `begin_operation` returned with every mutator stopped; the slots stay valid
        // until `end_operation` resumes them.
        let mut roots: Vec<RootSlots> =
            mutators.iter().map(|m| unsafe { m.root_slots() }).collect();
        // Each mutator's reference tables, locked for the operation: its globals are roots
        // (after all the handle stacks), its weak and cleaner slots are processed once tracing
        // is complete. The ranges point into the tables, so the locks are held until the
        // collections are over.
        let mut tables: Vec<_> = mutators
            .iter()
            .map(|m| m.refs.lock_for_collection())
            .collect();
        roots.extend(tables.iter_mut().filter_map(|t| t.strong_roots()));
        let weak: Vec<WeakRange<'_>> = tables.iter_mut().flat_map(|t| t.weak_ranges()).collect();
        let mut op_state = Operation {
            heap,
            roots: &roots,
            weak: &weak,
            ttsp,
            records: Vec::new(),
            traces: Vec::new(),
            full_ran: false,
            active_workers: 1,
        };
        op_state.active_workers = op_state.choose_active_workers();
        let (verify, allocations) = op_state.execute(&requests);
        drop(tables);
        let Operation {
            mut records,
            traces,
            ..
        } = op_state;
        write_sync_log(heap, &mut records);
        {
            let mut stats = lock(&heap.stats);
            stats.records.extend(records.iter().cloned());
            if let Some(Some(msg)) = &verify {
                stats.verify_failures.push(msg.clone());
            }
        }
        heap.collections
            .fetch_add(records.len(), std::sync::atomic::Ordering::Relaxed);
        heap.safepoint.end_operation(op, verify, allocations);
        let resumed = Instant::now();
        // The world runs again; logging is off the pause path.
        write_telemetry(heap, &records);
        write_traces(heap, traces);
        if let Some(first) = records.first() {
            let requested = stopped.checked_sub(ttsp).unwrap_or(stopped);
            let times = SafepointTimes {
                name: safepoint_name(first.cause),
                end_s: resumed.duration_since(heap.start).as_secs_f64(),
                since_last: requested.saturating_duration_since(last_resumed),
                reaching: ttsp,
                at_safepoint: resumed - stopped,
            };
            if let Some(log) = lock(&heap.gc_log).as_mut() {
                log.write_safepoint(&times);
            }
        }
        last_resumed = resumed;
    }
}

/// HotSpot's name of the VM operation that ran a collection for `cause` (the operation's
/// first collection's).
fn safepoint_name(cause: GcCause) -> &'static str {
    match cause {
        GcCause::Explicit => "ParallelGCSystemGC",
        _ => "ParallelGCFailedAllocation",
    }
}

/// With a sync GC log, writes the operation's lines while the world is still stopped (002's
/// baseline, HotSpot 8's): each record's `log_write_ms` is its write, included in its pause.
fn write_sync_log(heap: &HeapInner, records: &mut [CollectionRecord]) {
    let mut log = lock(&heap.gc_log);
    let Some(log) = log.as_mut().filter(|log| log.mode() == GcLogMode::Sync) else {
        return;
    };
    for r in records {
        let ms = log.write_record(r);
        r.log_write_ms = ms;
        r.pause_ms += ms;
    }
}

/// Append the operation's records to the GC log (an async one: a sync one has them already)
/// and the records file, if configured.
fn write_telemetry(heap: &HeapInner, records: &[CollectionRecord]) {
    append(&heap.gc_log, records, |log, r| {
        log.write_record(r);
    });
    append(&heap.gc_records, records, RecordsFile::write_record);
}

/// Number the collections' recorded work and append it to the GC trace: off the pause,
/// as the records are (the collections only gathered their workers' buffers).
fn write_traces(heap: &HeapInner, traces: Vec<(u64, RawTrace)>) {
    if traces.is_empty() {
        return;
    }
    if let Some(out) = lock(&heap.gc_trace).as_mut() {
        for (id, trace) in traces {
            out.write(&trace.merge(id));
        }
    }
}

/// Write `records` to the output in `slot`, if it is still open. A write failure stops that
/// output (it reports itself when the heap finishes); the collector carries on.
fn append<W>(
    slot: &std::sync::Mutex<Option<W>>,
    records: &[CollectionRecord],
    write: impl Fn(&mut W, &CollectionRecord),
) {
    if let Some(out) = lock(slot).as_mut() {
        records.iter().for_each(|r| write(out, r));
    }
}

struct Operation<'a> {
    heap: &'a HeapInner,
    roots: &'a [RootSlots],
    /// The mutators' weak and cleaner slots.
    weak: &'a [WeakRange<'a>],
    ttsp: Duration,
    records: Vec<CollectionRecord>,
    /// The GC trace's raw work of this operation's collections, by record id.
    traces: Vec<(u64, RawTrace)>,
    full_ran: bool,
    /// GC workers taking part in this operation's collections (decided once per operation).
    active_workers: usize,
}

/// Heap bytes per active GC worker under dynamic GC threads (HotSpot `HeapSizePerGCThread`).
const HEAP_PER_GC_THREAD: usize = 64 << 20;

/// Workers for a collection under dynamic GC threads, HotSpot's `calc_active_workers`: 2 per
/// attached mutator, or 1 per 64 MiB of heap, at least 2, never more than the pool
/// (`gc_threads`) nor the CPUs usable now. (The simulator chooses with this too.)
pub fn dynamic_active_workers(
    mutators: usize,
    heap_bytes: usize,
    gc_threads: usize,
    usable_cpus: usize,
) -> usize {
    (2 * mutators)
        .max(heap_bytes / HEAP_PER_GC_THREAD)
        .max(2)
        .min(gc_threads)
        .min(usable_cpus)
}

struct Snapshot {
    used: usize,
    young: usize,
    old: usize,
    /// The GC task manager's monitor counters.
    monitor: MonitorStats,
}

/// When a collection's pause started, how long it took, where its workers were placed and
/// what the GC threads used during it.
struct Pause {
    start: Instant,
    pause_ms: f64,
    affinity: Option<AffinityReport>,
    /// The VM thread's own usage during the collection.
    vm_usage: ThreadUsage,
    /// Each pool worker's usage during the collection, by worker id (what it read itself at
    /// the start and end of each of its jobs).
    worker_usage: Vec<ThreadUsage>,
}

/// What the record of every collection, young or full, carries.
struct Common {
    pause: Pause,
    before: Snapshot,
    verified: Option<bool>,
    tenuring_threshold: u32,
    phases: PhaseTimes,
    workers: Vec<WorkerPhaseStats>,
}

impl Operation<'_> {
    /// Run what the requests ask for. Returns the verification outcome when verification ran
    /// (`Some(None)`: passed, `Some(Some(msg))`: failed).
    /// Also returns the allocations made for `Allocation` requests (ticket, address).
    #[allow(clippy::type_complexity)]
    fn execute(
        &mut self,
        requests: &[Request],
    ) -> (Option<Option<String>>, Vec<(u64, AllocationResult)>) {
        let mem = &self.heap.mem;
        let mut verify_failure: Option<Option<String>> = None;
        let wants_full = requests.contains(&Request::Collect(CollectionKind::Full));
        let wants_young = requests.contains(&Request::Collect(CollectionKind::Young));
        let allocations: Vec<(usize, bool, u64, usize)> = requests
            .iter()
            .filter_map(|r| match *r {
                Request::Allocation {
                    bytes,
                    old,
                    ticket,
                    node,
                } => Some((bytes, old, ticket, node)),
                _ => None,
            })
            .collect();
        if wants_full {
            self.full(GcCause::Explicit, &mut verify_failure);
        } else if wants_young || !allocations.is_empty() {
            let cause = if allocations.is_empty() {
                GcCause::Explicit
            } else {
                GcCause::AllocationFailure
            };
            if !self.scavenge_can_succeed() {
                self.full(
                    if allocations.is_empty() {
                        cause
                    } else {
                        GcCause::Ergonomics
                    },
                    &mut verify_failure,
                );
            } else {
                let failed = self.young(cause, &mut verify_failure);
                let padded = self.padded_promotion();
                let large_needs = allocations
                    .iter()
                    .filter(|a| a.1)
                    .map(|a| a.0)
                    .max()
                    .unwrap_or(0);
                if failed {
                    self.full(GcCause::PromotionFailed, &mut verify_failure);
                } else if mem.old.free() < padded {
                    self.full(GcCause::Ergonomics, &mut verify_failure);
                } else if mem.old.free() < large_needs {
                    self.full(GcCause::AllocationFailure, &mut verify_failure);
                }
            }
        }
        // Serve the failed allocations inside the safepoint; a full collection is the last
        // resort before reporting that one cannot be satisfied.
        let mut results = self.serve(&allocations);
        if results.iter().any(Option::is_none) && !self.full_ran {
            // The compaction reclaims the unreferenced memory just handed out as well, so
            // every request of this operation is allocated again afterwards.
            self.full(GcCause::AllocationFailure, &mut verify_failure);
            results = self.serve(&allocations);
        }
        if requests.contains(&Request::Verify) {
            self.verify(&mut verify_failure);
        }
        let results = results
            .into_iter()
            .zip(&allocations)
            .map(|(a, &(bytes, _, ticket, _))| (ticket, a.ok_or_else(|| self.no_room(bytes))))
            .collect();
        (verify_failure, results)
    }

    /// Allocate what `allocations` (bytes, old, ticket, node) ask for, after this operation's
    /// collections. Under the GC overhead limit nothing is handed out: the collection just run
    /// left less than `GC_HEAP_FREE_LIMIT_PERCENT` of the heap free, as did the full
    /// collections before it, so what is left would buy a few more allocations at the price of
    /// a full collection each (HotSpot refuses there too). Once a collection leaves more free,
    /// the count is reset and allocations are served again.
    ///
    /// A large object that the old generation cannot hold after collecting goes to eden if it
    /// fits there (a full collection may have filled old with young data it could not all
    /// take; HotSpot also allocates large objects in eden): out of memory only when neither has
    /// room.
    fn serve(&self, allocations: &[(usize, bool, u64, usize)]) -> Vec<Option<usize>> {
        let refuse = self.gc_overhead_limit_exceeded();
        allocations
            .iter()
            .map(|&(bytes, old, _, node)| {
                if refuse {
                    return None;
                }
                self.heap
                    .allocate_shared(bytes, old, true, node)
                    .or_else(|| {
                        old.then(|| self.heap.allocate_shared(bytes, false, false, node))?
                    })
            })
            .collect()
    }

    /// Whether the last `GC_OVERHEAD_LIMIT_COLLECTIONS` full collections, and every collection
    /// since, left less than `GC_HEAP_FREE_LIMIT_PERCENT` of the heap free.
    fn gc_overhead_limit_exceeded(&self) -> bool {
        self.heap.policy().futile_full_collections >= GC_OVERHEAD_LIMIT_COLLECTIONS
    }

    /// The error for an allocation of `bytes` that was not served even after a full
    /// collection: the GC overhead limit when the last full collections all left next to
    /// nothing free, else plain out of memory.
    fn no_room(&self, bytes: usize) -> GcError {
        let heap_size = self.heap.mem.capacity();
        if self.gc_overhead_limit_exceeded() {
            GcErrorKind::GcOverheadLimit {
                requested: bytes,
                heap_size,
                full_collections: self.heap.policy().futile_full_collections,
                // Filled in by the mutator that asked.
                live_handles: 0,
            }
            .into()
        } else {
            GcErrorKind::OutOfMemory {
                requested: bytes,
                heap_size,
                live_handles: 0,
            }
            .into()
        }
    }

    /// The GC overhead limit's count after a collection of `kind` (HotSpot's
    /// `check_gc_overhead_limit`): a collection of any kind and cause that leaves at least
    /// `GC_HEAP_FREE_LIMIT_PERCENT` of eden and old free resets it; a full collection that
    /// leaves less counts. (A young collection that leaves less, after a promotion failure, is
    /// followed by a full one, which decides.)
    fn count_futile_collections(&self, kind: CollectionKind) {
        let mem = &self.heap.mem;
        let free = mem.eden.free() + mem.old.free();
        let allocatable = mem.eden.capacity() + mem.old.capacity();
        let mut policy = self.heap.policy();
        if free * 100 >= allocatable * GC_HEAP_FREE_LIMIT_PERCENT {
            policy.futile_full_collections = 0;
        } else if kind == CollectionKind::Full {
            policy.futile_full_collections += 1;
        }
    }

    /// Expected promotion of the next scavenge, bounded by what young holds.
    fn padded_promotion(&self) -> usize {
        let p = self.heap.policy().padded_promotion();
        p.min(self.heap.mem.eden.capacity() + self.heap.mem.from_space().capacity())
    }

    /// HotSpot's `should_attempt_scavenge`: to-space empty and old has room for the expected
    /// promotion.
    fn scavenge_can_succeed(&self) -> bool {
        let mem = &self.heap.mem;
        let p = self.heap.policy().padded_promotion();
        mem.to_space().used() == 0 && p.min(mem.young_used()) <= mem.old.free()
    }

    fn snapshot(&self) -> Snapshot {
        let mem = &self.heap.mem;
        Snapshot {
            used: mem.used(),
            young: mem.young_used(),
            old: mem.old.used(),
            monitor: self.heap.pool.task_manager_stats(),
        }
    }

    fn ctx<'a>(&'a self, numa: Option<&'a NumaContext>) -> GcContext<'a> {
        GcContext {
            mem: &self.heap.mem,
            pool: &self.heap.pool,
            workers: self.active_workers,
            policy: self.heap.config.phase,
            numa,
        }
    }

    /// Dynamic GC affinity (000 Algorithm 1): at the start of each parallel collection (each
    /// young and each full one) open the round in which each taking-part worker decides for
    /// itself when it starts its first job. The workers' last CPUs come from the pool, so
    /// sleeping workers count and no `/proc` file is read on the pause path.
    fn open_placement_round(&self) {
        let pool = &self.heap.pool;
        self.heap.gc_affinity.begin_collection(
            &pool.worker_tids(),
            &pool.worker_last_cpus(),
            self.active_workers,
        );
    }

    /// Workers for the collection about to run: the configured count, or with dynamic GC
    /// threads HotSpot's `calc_active_workers` (2 per mutator, or 1 per 64 MiB of heap, at
    /// least 2), never more than the pool nor than the CPUs this process may use now (the VM
    /// thread's affinity mask capped by the cgroup CPU limit) — except that under `segregated`
    /// every NUMA node keeps a worker (the pool has one per node: the heap refuses fewer GC
    /// threads than nodes), even when fewer CPUs are usable now.
    fn choose_active_workers(&self) -> usize {
        let config = &self.heap.config;
        if !config.dynamic_gc_threads {
            return config.gc_threads;
        }
        dynamic_active_workers(
            self.heap.safepoint.attached(),
            self.heap.mem.capacity(),
            config.gc_threads,
            self.heap.cpus.usable_cpus_now(),
        )
        .max(self.heap.numa.min_active_workers())
    }

    fn young(&mut self, cause: GcCause, verify_failure: &mut Option<Option<String>>) -> bool {
        let heap = self.heap;
        let before = self.snapshot();
        let threshold = heap.policy().tenuring_threshold;
        let params = ScavengeParams {
            tenuring_threshold: threshold,
            max_tenuring_threshold: heap.config.max_tenuring_threshold,
            target_survivor_ratio: heap.config.target_survivor_ratio,
            young_plab_size: heap.config.young_plab_size,
            old_plab_size: heap.config.old_plab_size,
            trace: lock(&heap.gc_trace).is_some(),
        };
        let (mut out, pause) =
            self.pause(|ctx, roots, weak, tracked| scavenge(ctx, roots, weak, params, tracked));
        {
            let mut policy = heap.policy();
            policy.tenuring_threshold = out.next_tenuring_threshold;
            if !out.promotion_failed {
                policy.sample_promotion(out.bytes_promoted);
            }
        }
        self.count_futile_collections(CollectionKind::Young);
        // After a promotion failure the heap is only made whole by the full collection that
        // follows, which verifies it then.
        let verified = if out.promotion_failed {
            None
        } else {
            self.verify_if_asked(verify_failure)
        };
        let common = Common {
            pause,
            before,
            verified,
            tenuring_threshold: threshold,
            phases: out.phases,
            workers: out.workers,
        };
        self.record(CollectionKind::Young, cause, common, |r| {
            r.bytes_copied = out.bytes_copied;
            r.bytes_promoted = out.bytes_promoted;
            r.promotion_failed = out.promotion_failed;
        });
        self.keep_trace(out.trace.take());
        out.promotion_failed
    }

    fn full(&mut self, cause: GcCause, verify_failure: &mut Option<Option<String>>) {
        let before = self.snapshot();
        let trace = lock(&self.heap.gc_trace).is_some();
        let (mut out, pause) =
            self.pause(|ctx, roots, weak, tracked| full_collect(ctx, roots, weak, tracked, trace));
        self.full_ran = true;
        self.count_futile_collections(CollectionKind::Full);
        let common = Common {
            pause,
            before,
            verified: self.verify_if_asked(verify_failure),
            tenuring_threshold: self.heap.policy().tenuring_threshold,
            phases: out.phases,
            workers: out.workers,
        };
        self.record(CollectionKind::Full, cause, common, |r| {
            r.bytes_copied = out.moved_bytes;
        });
        self.keep_trace(out.trace.take());
    }

    /// Keep the collection just recorded's trace, if it was traced, to be written after the
    /// world has been resumed.
    fn keep_trace(&mut self, trace: Option<RawTrace>) {
        if let (Some(trace), Some(r)) = (trace, self.records.last()) {
            self.traces.push((r.id, trace));
        }
    }

    /// One parallel collection's pause: open the workers' placement round (000 Algorithm 1),
    /// then run `collect` with the objects the lifespan profiler follows; timed from before the placement. The GC
    /// threads' resource usage is taken around it: the VM thread reads its own (one
    /// `getrusage` at each end), and the workers' sums, which they keep themselves, are read
    /// without a system call.
    fn pause<R>(
        &self,
        collect: impl FnOnce(&GcContext<'_>, &[RootSlots], &[WeakRange<'_>], Tracked<'_>) -> R,
    ) -> (R, Pause) {
        let pool = &self.heap.pool;
        let workers_before = pool.worker_usage();
        let vm_before = ThreadUsage::current_thread_or_zero();
        let start = Instant::now();
        self.open_placement_round();
        let numa = self.heap.numa.context(pool, self.active_workers);
        let out = self.follow_lifespans(|tracked| {
            collect(&self.ctx(numa.as_ref()), self.roots, self.weak, tracked)
        });
        let affinity = self.heap.gc_affinity.end_collection();
        let pause_ms = start.elapsed().as_secs_f64() * 1e3;
        let vm_usage = ThreadUsage::current_thread_or_zero().since(&vm_before);
        let worker_usage = pool
            .worker_usage()
            .iter()
            .zip(&workers_before)
            .map(|(after, before)| after.since(before))
            .collect();
        let pause = Pause {
            start,
            pause_ms,
            affinity,
            vm_usage,
            worker_usage,
        };
        (out, pause)
    }

    // ---- lifespan profiler ----
    /// Run `collect` with the objects the lifespan profiler follows (none without it). Mutators
    /// retire their TLABs before they stop, so the allocation clock is exact now.
    fn follow_lifespans<R>(&self, collect: impl FnOnce(Tracked<'_>) -> R) -> R {
        match &self.heap.lifespans {
            Some(profiler) => {
                let now = self
                    .heap
                    .allocated
                    .load(std::sync::atomic::Ordering::Relaxed);
                profiler.follow_collection(now, collect)
            }
            None => collect(&mut []),
        }
    }
    // ---- end lifespan profiler ----

    fn verify_if_asked(&self, verify_failure: &mut Option<Option<String>>) -> Option<bool> {
        self.heap.config.verify.then(|| self.verify(verify_failure))
    }

    /// Run the verifier; record its report, or its failure (an earlier failure of this
    /// operation is kept). Returns whether the heap verified.
    fn verify(&self, verify_failure: &mut Option<Option<String>>) -> bool {
        let weak: Vec<RootSlots> = self.weak.iter().map(|w| w.slots).collect();
        match verify_heap(&self.heap.mem, self.roots, &weak) {
            Ok(report) => {
                *lock(&self.heap.last_verify) = report;
                verify_failure.get_or_insert(None);
                true
            }
            Err(e) => {
                log::error!("{e}");
                *verify_failure = Some(Some(e.0));
                false
            }
        }
    }

    /// Whether the GC task manager's monitor is in play: as the task queue's lock or as the
    /// place idle workers park.
    fn uses_task_manager_monitor(&self) -> bool {
        let config = &self.heap.config;
        config.phase.task_queue == TaskQueueKind::Monitor || config.parking == ParkingKind::Monitor
    }

    fn record(
        &mut self,
        kind: CollectionKind,
        cause: GcCause,
        common: Common,
        fill: impl FnOnce(&mut CollectionRecord),
    ) {
        let heap = self.heap;
        let Common {
            pause,
            before,
            verified,
            tenuring_threshold,
            phases,
            mut workers,
        } = common;
        // Each worker's share of the whole collection (a full collection runs several jobs
        // after the marking phase whose counters `workers` holds).
        for w in workers.iter_mut() {
            if let Some(used) = pause.worker_usage.get(w.worker) {
                w.usage = *used;
            }
        }
        debug_assert!(
            pause.worker_usage[workers.len().min(pause.worker_usage.len())..]
                .iter()
                .all(|u| *u == ThreadUsage::default()),
            "only the collection's active workers ran jobs during its pause"
        );
        let after = self.snapshot();
        let id = (heap.collections.load(std::sync::atomic::Ordering::Relaxed) + self.records.len())
            as u64;
        let mut r = CollectionRecord {
            id,
            kind,
            cause,
            start_ms: pause.start.duration_since(heap.start).as_secs_f64() * 1e3,
            pause_ms: pause.pause_ms,
            time_to_safepoint_ms: self.ttsp.as_secs_f64() * 1e3,
            log_write_ms: 0.0,
            gc_user_ms: 0.0,
            gc_sys_ms: 0.0,
            pause_minor_faults: 0,
            pause_major_faults: 0,
            gc_involuntary_switches: 0,
            vm_thread_usage: ThreadUsage::default(),
            heap_before: before.used,
            heap_after: after.used,
            heap_capacity: heap.mem.old.capacity() + heap.mem.young_capacity(),
            young_before: before.young,
            young_after: after.young,
            old_before: before.old,
            old_after: after.old,
            bytes_copied: 0,
            bytes_promoted: 0,
            promotion_failed: false,
            tenuring_threshold,
            gc_threads: self.active_workers,
            phases,
            workers,
            affinity: pause.affinity,
            task_distribution: Default::default(),
            cpu_occupancy: Default::default(),
            verified,
            monitor: self
                .uses_task_manager_monitor()
                .then(|| after.monitor.since(&before.monitor).into()),
            numa: None,
            bytes_allocated_per_node: Vec::new(),
            bytes_allocated: 0,
            gc_throughput_mb_s: None,
            scans_per_node: None,
        };
        // Relaxed: mutators are stopped, and only the VM thread moves the mark.
        let allocated = heap.allocated.load(std::sync::atomic::Ordering::Relaxed);
        let previous = heap
            .allocated_at_last_record
            .swap(allocated, std::sync::atomic::Ordering::Relaxed);
        r.bytes_allocated = allocated - previous;
        if heap.numa.accounting() {
            r.numa = Some(NumaCollectionRecord::from_workers(&r.workers));
            r.bytes_allocated_per_node = heap.numa.allocated_since_last_record();
            let per_worker: Vec<_> = r.workers.iter().map(|w| w.numa).collect();
            r.scans_per_node =
                gc_metrics::scans_per_node(&per_worker, r.bytes_allocated_per_node.len());
        }
        fill(&mut r);
        r.attribute_usage(pause.vm_usage);
        r.derive();
        self.records.push(r);
    }
}

#[cfg(test)]
mod tests {
    use super::dynamic_active_workers;

    #[test]
    fn dynamic_workers_follow_hotspots_calc_active_workers() {
        const MIB: usize = 1 << 20;
        // 2 per mutator, at least 2.
        assert_eq!(dynamic_active_workers(0, 8 * MIB, 8, 8), 2);
        assert_eq!(dynamic_active_workers(3, 8 * MIB, 8, 8), 6);
        // Or 1 per 64 MiB of heap, whichever is more.
        assert_eq!(dynamic_active_workers(1, 320 * MIB, 8, 8), 5);
        // Never more than the pool nor the usable CPUs.
        assert_eq!(dynamic_active_workers(16, 8 * MIB, 15, 20), 15);
        assert_eq!(dynamic_active_workers(16, 8 * MIB, 15, 4), 4);
    }
}
