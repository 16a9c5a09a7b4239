//! The VM thread: waits for requests, stops the world, decides which collections to run, runs
//! them, records them, resumes the world, and only then writes the GC log (000 §2.1).

use std::time::{Duration, Instant};

use super::heap::{HeapInner, FUTILE_FULL_COLLECTION_LIMIT, GC_HEAP_FREE_LIMIT};
use super::lock;
use super::safepoint::Request;
use crate::collection::full::full_collect;
use crate::collection::scavenge::{scavenge, ScavengeParams};
use crate::collection::verify::verify_heap;
use crate::collection::{GcContext, RootSlots, Tracked};
use crate::os::gc_affinity::AffinityReport;
use crate::os::policy::GcAffinity;
use crate::parallel::monitor::MonitorStats;
use crate::parallel::{ParkingKind, TaskQueueKind};
use crate::telemetry::gc_log::GcLog;
use crate::telemetry::records_file::RecordsFile;
use crate::telemetry::{CollectionKind, CollectionRecord, GcCause, PhaseTimes, WorkerPhaseStats};

/// The VM thread's main loop; returns when the heap shuts down.
pub(crate) fn run(heap: &HeapInner) {
    while let Some((requests, op, mutators, ttsp)) = heap.safepoint.begin_operation() {
        // SAFETY: `begin_operation` returned with every mutator stopped; the slots stay valid
        // until `end_operation` resumes them.
        let roots: Vec<RootSlots> = mutators.iter().map(|m| unsafe { m.root_slots() }).collect();
        let mut op_state = Operation {
            heap,
            roots: &roots,
            ttsp,
            records: Vec::new(),
            full_ran: false,
            active_workers: 1,
        };
        op_state.active_workers = op_state.choose_active_workers();
        let (verify, allocations) = op_state.execute(&requests);
        let Operation { records, .. } = op_state;
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
        // The world runs again; logging is off the pause path.
        write_telemetry(heap, &records);
    }
}

/// Append the operation's records to the GC log and the records file, if configured.
fn write_telemetry(heap: &HeapInner, records: &[CollectionRecord]) {
    append(&heap.gc_log, records, GcLog::write_record);
    append(&heap.gc_records, records, RecordsFile::write_record);
}

/// Write `records` to the output in `slot`, if it is still open. A write failure stops that
/// output (it reports itself when the heap finishes); the collector carries on.
fn append<W>(
    slot: &std::sync::Mutex<Option<W>>,
    records: &[CollectionRecord],
    write: fn(&mut W, &CollectionRecord),
) {
    if let Some(out) = lock(slot).as_mut() {
        records.iter().for_each(|r| write(out, r));
    }
}

struct Operation<'a> {
    heap: &'a HeapInner,
    roots: &'a [RootSlots],
    ttsp: Duration,
    records: Vec<CollectionRecord>,
    full_ran: bool,
    /// GC workers taking part in this operation's collections (decided once per operation).
    active_workers: usize,
}

/// Heap bytes per active GC worker under dynamic GC threads (HotSpot `HeapSizePerGCThread`).
const HEAP_PER_GC_THREAD: usize = 64 << 20;

struct Snapshot {
    used: usize,
    young: usize,
    old: usize,
    /// The GC task manager's monitor counters.
    monitor: MonitorStats,
}

/// When a collection's pause started, how long it took and where its workers were placed.
struct Pause {
    start: Instant,
    pause_ms: f64,
    affinity: Option<AffinityReport>,
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
    ) -> (Option<Option<String>>, Vec<(u64, Option<usize>)>) {
        let mem = &self.heap.mem;
        let mut verify_failure: Option<Option<String>> = None;
        let wants_full = requests.contains(&Request::Collect(CollectionKind::Full));
        let wants_young = requests.contains(&Request::Collect(CollectionKind::Young));
        let allocations: Vec<(usize, bool, u64)> = requests
            .iter()
            .filter_map(|r| match *r {
                Request::Allocation { bytes, old, ticket } => Some((bytes, old, ticket)),
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
        // resort before reporting that one cannot be satisfied. When full collections keep
        // freeing next to nothing, stop thrashing and report out of memory (GC overhead limit).
        if !allocations.is_empty() && self.gc_overhead_limit_exceeded() {
            let results = allocations
                .iter()
                .map(|&(_, _, ticket)| (ticket, None))
                .collect();
            return (verify_failure, results);
        }
        let mut results: Vec<(u64, Option<usize>)> = allocations
            .iter()
            .map(|&(bytes, old, ticket)| (ticket, self.heap.allocate_shared(bytes, old, true)))
            .collect();
        if results.iter().any(|r| r.1.is_none()) && !self.full_ran {
            // The compaction reclaims the unreferenced memory just handed out as well, so
            // every request of this operation is allocated again afterwards.
            self.full(GcCause::AllocationFailure, &mut verify_failure);
            results = allocations
                .iter()
                .map(|&(bytes, old, ticket)| (ticket, self.heap.allocate_shared(bytes, old, true)))
                .collect();
        }
        if requests.contains(&Request::Verify) {
            self.verify(&mut verify_failure);
        }
        (verify_failure, results)
    }

    /// Whether the last full collections were futile (see `FUTILE_FULL_COLLECTION_LIMIT`).
    fn gc_overhead_limit_exceeded(&self) -> bool {
        let policy = self.heap.policy();
        policy.futile_full_collections >= FUTILE_FULL_COLLECTION_LIMIT
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

    fn ctx(&self) -> GcContext<'_> {
        GcContext {
            mem: &self.heap.mem,
            pool: &self.heap.pool,
            workers: self.active_workers,
            policy: self.heap.config.phase,
        }
    }

    /// Dynamic GC affinity (000 Algorithm 1): at the start of each parallel collection (each
    /// young and each full one, so twice in an operation whose scavenge is followed by a full
    /// collection), decide which workers move off overloaded CPUs, and move them. The workers'
    /// CPUs come from the pool (sampled by each worker when it started and when it last went
    /// idle), so sleeping workers count and no `/proc` file is read on the pause path. Returns
    /// the report for the record of the collection about to run.
    fn place_workers(&self) -> Option<AffinityReport> {
        let controller = &self.heap.gc_affinity;
        if controller.kind() != GcAffinity::Dynamic {
            return None;
        }
        let pool = &self.heap.pool;
        Some(controller.before_collection_from(
            &pool.worker_tids(),
            &pool.worker_last_cpus(),
            self.active_workers,
        ))
    }

    /// Workers for the collection about to run: the configured count, or with dynamic GC
    /// threads HotSpot's `calc_active_workers` (2 per mutator, or 1 per 64 MiB of heap, at
    /// least 2), never more than the pool nor than the CPUs this process may use now (the VM
    /// thread's affinity mask capped by the cgroup CPU limit).
    fn choose_active_workers(&self) -> usize {
        let config = &self.heap.config;
        if !config.dynamic_gc_threads {
            return config.gc_threads;
        }
        let by_mutators = 2 * self.heap.safepoint.attached();
        let by_heap = self.heap.mem.capacity() / HEAP_PER_GC_THREAD;
        by_mutators
            .max(by_heap)
            .max(2)
            .min(config.gc_threads)
            .min(self.heap.cpus.usable_cpus_now())
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
        };
        let (out, pause) = self.pause(|ctx, roots, tracked| scavenge(ctx, roots, params, tracked));
        {
            let mut policy = heap.policy();
            policy.tenuring_threshold = out.next_tenuring_threshold;
            if !out.promotion_failed {
                policy.sample_promotion(out.bytes_promoted);
            }
        }
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
        out.promotion_failed
    }

    fn full(&mut self, cause: GcCause, verify_failure: &mut Option<Option<String>>) {
        let before = self.snapshot();
        let (out, pause) = self.pause(full_collect);
        self.full_ran = true;
        {
            let mem = &self.heap.mem;
            let freed = before.used.saturating_sub(mem.used()) as f64 / mem.capacity() as f64;
            let mut policy = self.heap.policy();
            // Explicit collections say nothing about whether the program still fits.
            if cause == GcCause::Explicit {
            } else if freed < GC_HEAP_FREE_LIMIT {
                policy.futile_full_collections += 1;
            } else {
                policy.futile_full_collections = 0;
            }
        }
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
    }

    /// One parallel collection's pause: place the workers (000 Algorithm 1), then run `collect`
    /// with the objects the lifespan profiler follows; timed from before the placement.
    fn pause<R>(
        &self,
        collect: impl FnOnce(&GcContext<'_>, &[RootSlots], Tracked<'_>) -> R,
    ) -> (R, Pause) {
        let start = Instant::now();
        let affinity = self.place_workers();
        let out = self.follow_lifespans(|tracked| collect(&self.ctx(), self.roots, tracked));
        let pause = Pause {
            start,
            pause_ms: start.elapsed().as_secs_f64() * 1e3,
            affinity,
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
        match verify_heap(&self.heap.mem, self.roots) {
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
            workers,
        } = common;
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
        };
        fill(&mut r);
        r.derive();
        self.records.push(r);
    }
}
