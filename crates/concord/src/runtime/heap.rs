//! The heap: memory, GC workers, the VM thread, and what a program builds first.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use super::lock;
use super::mutator::Mutator;
use super::safepoint::{Request, Safepoint};
use super::vm_thread;
use crate::collection::verify::VerifyReport;
use crate::config::GcConfig;
use crate::memory::heap_memory::SpaceSizes;
use crate::memory::HeapMemory;
use crate::os::affinity::set_current_thread_affinity;
use crate::os::cpu::{current_cpu, CpuView, LoadSampler, SystemPaths, DEFAULT_SAMPLE_PERIOD};
use crate::os::gc_affinity::GcAffinityController;
use crate::os::mutator_sched::{MutatorSchedReport, MutatorScheduler};
use crate::os::policy::GcAffinity;
use crate::parallel::WorkerPool;
use crate::telemetry::gc_log::GcLog;
use crate::telemetry::lifespan::{LifespanProfiler, LifespanReport};
use crate::telemetry::records_file::RecordsFile;
use crate::telemetry::{CollectionKind, GcStats};

/// Errors the runtime reports to a mutator.
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// The heap cannot hold the request even after a full collection.
    #[error("out of memory: {requested} bytes could not be allocated after a full collection (heap {heap_size} bytes)")]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Heap capacity.
        heap_size: usize,
    },
    /// The GC overhead limit: the collections run for this request left less than
    /// [`GC_HEAP_FREE_LIMIT_PERCENT`] % of the heap free, and so did the last
    /// `full_collections` full collections in a row (at least
    /// [`GC_OVERHEAD_LIMIT_COLLECTIONS`]). The heap is full of live data: serving the request
    /// from the little that is left would cost a full collection every few allocations, so the
    /// collector gives up (as HotSpot's `GCOverheadLimit` does). Any collection that leaves more
    /// free lifts the limit, so dropping data makes allocation work again.
    #[error(
        "out of memory: the collector gave up because collections freed too little (the last \
         {full_collections} full collections each left less than {}% of the heap free); \
         {requested} bytes could not be allocated (heap {heap_size} bytes)",
        GC_HEAP_FREE_LIMIT_PERCENT
    )]
    GcOverheadLimit {
        /// Bytes asked for.
        requested: usize,
        /// Heap capacity.
        heap_size: usize,
        /// Consecutive full collections that each left less than the limit free.
        full_collections: u32,
    },
    /// The requested object shape cannot be represented.
    #[error(transparent)]
    Layout(#[from] crate::object::LayoutError),
}

/// Building a heap failed.
#[derive(Debug, thiserror::Error)]
pub enum HeapError {
    /// The configuration was rejected.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// The OS refused the address space.
    #[error("could not reserve {size} bytes of address space")]
    Reserve {
        /// Bytes asked for.
        size: usize,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A GC or VM thread could not be started.
    #[error("could not start a GC thread: {0}")]
    Thread(std::io::Error),
    /// The GC log could not be created.
    #[error("could not create the GC log {path}")]
    GcLog {
        /// The path asked for.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The per-collection records file could not be created.
    #[error("could not create the GC records file {path}")]
    GcRecords {
        /// The path asked for.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
}

/// Adaptive-size policy state kept across collections.
pub(crate) struct Policy {
    pub tenuring_threshold: u32,
    /// Exponentially weighted average of bytes promoted per scavenge, and its deviation.
    pub avg_promoted: f64,
    pub dev_promoted: f64,
    pub samples: u64,
    /// Consecutive full collections that left less than [`GC_HEAP_FREE_LIMIT_PERCENT`] % of the
    /// heap free (the GC overhead limit's count). Any collection that leaves more free resets it.
    pub futile_full_collections: u32,
}

/// A collection that leaves less than this percentage of the allocatable heap (eden and old)
/// free counts towards the GC overhead limit; one that leaves more resets the count, whatever
/// its kind or trigger (HotSpot's `GCHeapFreeLimit`, 2 %, which it checks after every full
/// collection against the free space of eden and old).
pub const GC_HEAP_FREE_LIMIT_PERCENT: usize = 2;
/// After this many such full collections in a row, allocation requests that need a collection
/// are refused with [`GcError::GcOverheadLimit`] until a collection leaves more free (HotSpot's
/// `AdaptiveSizePolicyGCTimeLimitThreshold`, 5).
pub const GC_OVERHEAD_LIMIT_COLLECTIONS: u32 = 5;

impl Policy {
    /// Promotion the next scavenge should be ready for (average + 3 deviations).
    pub fn padded_promotion(&self) -> usize {
        (self.avg_promoted + 3.0 * self.dev_promoted) as usize
    }

    pub fn sample_promotion(&mut self, bytes: usize) {
        let x = bytes as f64;
        // The first samples weigh more, as in HotSpot's AdaptiveWeightedAverage.
        self.samples += 1;
        let w = (1.0 / self.samples as f64).max(0.25);
        let dev = (x - self.avg_promoted).abs();
        self.avg_promoted += w * (x - self.avg_promoted);
        self.dev_promoted = if self.samples == 1 {
            0.0
        } else {
            self.dev_promoted + w * (dev - self.dev_promoted)
        };
    }
}

/// The state of one heap, shared by its mutators, its VM thread and its GC workers.
pub(crate) struct HeapInner {
    pub config: GcConfig,
    pub mem: HeapMemory,
    pub pool: WorkerPool,
    pub safepoint: Safepoint,
    /// When the heap was created (record times count from here).
    pub start: Instant,
    pub stats: Mutex<GcStats>,
    pub policy: Mutex<Policy>,
    pub gc_log: Mutex<Option<GcLog>>,
    /// Per-collection records as JSON lines, when configured; written like the GC log.
    pub gc_records: Mutex<Option<RecordsFile>>,
    /// Bytes allocated so far, heap-wide (the lifespan profiler's clock).
    pub allocated: AtomicU64,
    pub last_verify: Mutex<VerifyReport>,
    pub collections: AtomicUsize,
    // ---- lifespan profiler (telemetry/lifespan.rs) ----
    /// Samples allocations and follows them through collections, when `config.lifespans`.
    /// Its clock is `allocated`.
    pub lifespans: Option<LifespanProfiler>,
    // ---- end lifespan profiler ----
    /// The CPUs this process may use, read when the heap was created.
    pub cpus: CpuView,
    /// Where GC workers may run (`gc-affinity`): static binding or 000 Algorithm 1.
    pub gc_affinity: Arc<GcAffinityController>,
    /// How mutator threads are scheduled (`mutator-sched`, 001).
    pub mutator_sched: MutatorScheduler,
}

impl HeapInner {
    pub fn count_allocation(&self, bytes: usize) {
        self.allocated.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Allocate one zeroed object's memory outside any TLAB: in eden unless `old` (or unless
    /// `old_fallback` and eden is full), else in the old generation, where its start is
    /// recorded for card scanning. The caller writes the header.
    pub fn allocate_shared(&self, bytes: usize, old: bool, old_fallback: bool) -> Option<usize> {
        let rsv = self.mem.reservation();
        let young = if old {
            None
        } else {
            self.mem.eden.par_allocate(bytes, rsv)
        };
        let a = match young {
            Some(a) => a,
            None if old || old_fallback => {
                let a = self.mem.old.par_allocate(bytes, rsv)?;
                self.mem.old_starts.mark(a);
                a
            }
            None => return None,
        };
        // SAFETY: [a, a+bytes) was just allocated in committed memory and belongs to the caller.
        unsafe { std::ptr::write_bytes(a as *mut u8, 0, bytes) };
        self.count_allocation(bytes);
        Some(a)
    }

    /// The adaptive-size policy state.
    pub fn policy(&self) -> MutexGuard<'_, Policy> {
        lock(&self.policy)
    }

    /// TLAB size: fixed by configuration, or eden / (50 × attached mutators) (HotSpot's target
    /// of 50 refills per thread per eden), clamped to 4 KiB..=1 MiB.
    pub fn tlab_size(&self) -> usize {
        if let Some(t) = self.config.tlab_size {
            return t & !7;
        }
        let threads = self.safepoint.attached().max(1);
        (self.mem.eden.capacity() / (50 * threads)).clamp(4 << 10, 1 << 20) & !7
    }

    pub fn last_verify_report(&self) -> VerifyReport {
        lock(&self.last_verify).clone()
    }
}

/// A garbage-collected heap: reserved memory, GC worker threads and a VM thread.
///
/// Threads that use the heap attach with [`Heap::attach`]; the heap outlives them (mutators
/// borrow it). Dropping the heap stops its threads and releases its memory.
pub struct Heap {
    inner: Arc<HeapInner>,
    vm_thread: Option<JoinHandle<()>>,
}

impl Heap {
    /// Validate `config`, reserve the heap and start the VM thread and the GC workers.
    pub fn new(config: GcConfig) -> Result<Heap, HeapError> {
        config.validate()?;
        let g = config.generation_sizes();
        let sizes = SpaceSizes {
            old: g.old,
            eden: g.eden,
            survivor: g.survivor,
        };
        let mem = HeapMemory::new(sizes).map_err(|source| HeapError::Reserve {
            size: g.total(),
            source,
        })?;
        // What this process may use, read once on the thread creating the heap.
        let cpus = CpuView::detect().unwrap_or_else(|e| {
            log::warn!("could not read the affinity mask ({e})");
            CpuView::from_allowed(Vec::new(), &SystemPaths::default())
        });
        for warning in &cpus.warnings {
            log::warn!("{warning}");
        }
        let sampler = if config.gc_affinity == GcAffinity::Dynamic {
            LoadSampler::start(DEFAULT_SAMPLE_PERIOD)
                .inspect_err(|e| {
                    log::warn!(
                        "cannot sample CPU load ({e}); dynamic GC affinity counts only the GC \
                         workers"
                    )
                })
                .ok()
        } else {
            None
        };
        let gc_affinity = Arc::new(GcAffinityController::new(
            config.gc_affinity,
            cpus.allowed.clone(),
            sampler,
        ));
        let mutator_sched = MutatorScheduler::new(
            config.mutator_sched.clone(),
            cpus.usable_cpus(),
            config.fifo_cpu_threshold,
        );
        let pool = start_gc_workers(&config, &cpus.allowed, gc_affinity.clone())?;
        let gc_log = match &config.gc_log {
            Some(path) => Some(
                GcLog::create(path, &format!("Concord ({})", config.preset)).map_err(|source| {
                    HeapError::GcLog {
                        path: path.display().to_string(),
                        source,
                    }
                })?,
            ),
            None => None,
        };
        let gc_records = match &config.gc_records {
            Some(path) => {
                Some(
                    RecordsFile::create(path).map_err(|source| HeapError::GcRecords {
                        path: path.display().to_string(),
                        source,
                    })?,
                )
            }
            None => None,
        };
        // Lifespan profiler: enabled by configuration.
        let lifespans = config.lifespans.then(LifespanProfiler::default);
        let inner = Arc::new(HeapInner {
            policy: Mutex::new(Policy {
                tenuring_threshold: config.initial_tenuring_threshold,
                avg_promoted: 0.0,
                dev_promoted: 0.0,
                samples: 0,
                futile_full_collections: 0,
            }),
            config,
            mem,
            pool,
            safepoint: Safepoint::new(),
            start: Instant::now(),
            stats: Mutex::new(GcStats::default()),
            gc_log: Mutex::new(gc_log),
            gc_records: Mutex::new(gc_records),
            allocated: AtomicU64::new(0),
            last_verify: Mutex::new(VerifyReport::default()),
            collections: AtomicUsize::new(0),
            lifespans,
            cpus,
            gc_affinity,
            mutator_sched,
        });
        let vm_inner = inner.clone();
        let vm_thread = std::thread::Builder::new()
            .name("concord-vm".into())
            .spawn(move || vm_thread::run(&vm_inner))
            .map_err(HeapError::Thread)?;
        Ok(Heap {
            inner,
            vm_thread: Some(vm_thread),
        })
    }

    pub(crate) fn inner(&self) -> &HeapInner {
        &self.inner
    }

    /// Attach the calling thread as a mutator; detached when the returned value drops.
    pub fn attach(&self) -> Mutator<'_> {
        Mutator::new(self)
    }

    /// The configuration the heap was built with.
    pub fn config(&self) -> &GcConfig {
        &self.inner.config
    }

    /// Records of all collections so far.
    pub fn stats(&self) -> GcStats {
        let mut s = lock(&self.inner.stats).clone();
        s.bytes_allocated = self.inner.allocated.load(Ordering::Relaxed);
        s.lifespans = self.lifespans();
        s.mutator_sched = Some(self.inner.mutator_sched.report());
        s
    }

    /// Object lifespans so far, when the heap profiles them (`GcConfig::lifespans`). Samples
    /// not yet seen to die (alive at exit) are counted as censored.
    pub fn lifespans(&self) -> Option<LifespanReport> {
        let profiler = self.inner.lifespans.as_ref()?;
        Some(profiler.report(self.inner.allocated.load(Ordering::Relaxed)))
    }

    /// What the mutator scheduling policy did so far (requested policy, decisions, notices).
    pub fn mutator_sched(&self) -> MutatorSchedReport {
        self.inner.mutator_sched.report()
    }

    /// Number of collections so far.
    pub fn collection_count(&self) -> usize {
        self.inner.collections.load(Ordering::Relaxed)
    }

    /// Run a collection from a thread that is *not* attached (from a mutator, use
    /// [`Mutator::collect`]; calling this from an attached thread would wait for itself).
    pub fn collect(&self, kind: CollectionKind) {
        self.inner.safepoint.request(Request::Collect(kind), false);
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.inner.mem.used()
    }

    /// Heap capacity in bytes (old + eden + both survivors).
    pub fn capacity(&self) -> usize {
        self.inner.mem.capacity()
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        // Stops the adaptive sampler and writes the profile of a profiling run.
        self.inner.mutator_sched.finish();
        self.inner.safepoint.shutdown();
        if let Some(t) = self.vm_thread.take() {
            let _ = t.join();
        }
    }
}

/// Start the GC worker pool. With `pin_start`, every worker is born on the CPU the creating
/// thread runs on (as HotSpot's GC threads are born where the VM creates them) and then given
/// back the `allowed` CPUs, leaving placement to the OS scheduler.
/// With static GC affinity, each worker then binds itself to its CPU.
fn start_gc_workers(
    config: &GcConfig,
    allowed: &[u32],
    affinity: Arc<GcAffinityController>,
) -> Result<WorkerPool, HeapError> {
    let birth_cpu = if config.pin_start {
        current_cpu()
    } else {
        None
    };
    let allowed = allowed.to_vec();
    WorkerPool::new(config.gc_threads, "concord-gc", config.parking, move |id| {
        if let Some(cpu) = birth_cpu {
            // Failure only loses the experiment's starting condition, not correctness.
            if set_current_thread_affinity(&[cpu]).is_ok() {
                // Run briefly on the birth CPU so it is the thread's last CPU when it parks.
                std::thread::yield_now();
                let _ = set_current_thread_affinity(&allowed);
            }
        }
        // A failure is reported once by the controller; the worker runs unbound.
        let _ = affinity.bind_at_start(id);
    })
    .map_err(HeapError::Thread)
}
