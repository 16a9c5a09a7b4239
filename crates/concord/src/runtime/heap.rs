//! The heap: memory, GC workers, the VM thread, and what a program builds first.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use super::lock;
use super::mutator::Mutator;
use super::numa::HeapNuma;
use super::safepoint::{Request, Safepoint};
use super::vm_thread;
use crate::collection::verify::VerifyReport;
use crate::config::{format_size, format_size_rounded, GcConfig, MIB};
use crate::memory::heap_memory::SpaceSizes;
use crate::memory::pretouch::{PretouchPlan, PretouchReport};
use crate::memory::{HeapMemory, HeapMemoryError};
use crate::os::affinity::set_current_thread_affinity;
use crate::os::cpu::{CpuView, SystemPaths, DEFAULT_SAMPLE_PERIOD};
use crate::os::fs::check_creatable;
use crate::os::gc_affinity::{applied_gc_affinity, GcAffinityController};
use crate::os::memory::{memory_limit, thread_start_room, MemoryLimit};
use crate::os::mutator_sched::{
    MutatorSchedConfig, MutatorSchedReport, MutatorScheduler, ProfileAction,
};
use crate::os::periodic::Periodic;
use crate::os::policy::MutatorSched;
use crate::os::procfs::KernelFileError;
use crate::os::thp::{
    huge_pages_expected, mem_available, resident_bytes_in, SystemThp, ThpMode, ThpReport, ThpState,
    DYNAMIC_PERIOD, HUGE_PAGE_SIZE,
};
use crate::os::vm::{page_size, HugePageAdvice, Reservation};
use crate::parallel::WorkerPool;
use crate::telemetry::gc_log::{GcLog, GcLogOptions};
use crate::telemetry::gc_trace::{GcTraceFile, PlabSizes};
use crate::telemetry::lifespan::{LifespanProfiler, LifespanReport};
use crate::telemetry::records_file::RecordsFile;
use crate::telemetry::{
    CollectionKind, GcLogStats, GcStats, OutputError, OutputFailure, OutputKind,
};

/// An error the runtime reports to a mutator: what went wrong is its [`GcError::kind`].
///
/// One word (the details are boxed, as `std::io::Error` does), so that `Result<Handle,
/// GcError>` and `Result<Root<T>, GcError>`, which every allocation returns, come back in two
/// registers instead of through memory: on binary-trees' build that is about 15 % of the
/// mutator's time. Errors are rare; the box is made only when one happens.
///
/// ```
/// use concord::{GcErrorKind, Heap, ObjectType};
///
/// let heap = Heap::builder().heap_size(4 << 20).build().unwrap();
/// let mut m = heap.attach();
/// let e = m.alloc_byte_array(64 << 20).unwrap_err();
/// assert!(matches!(e.kind(), GcErrorKind::LargerThanHeap { .. }));
/// assert!(e.to_string().contains("larger than this heap can ever hold"));
/// ```
pub struct GcError(Box<GcErrorKind>);

impl GcError {
    /// What went wrong.
    pub fn kind(&self) -> &GcErrorKind {
        &self.0
    }

    /// What went wrong, by value.
    pub fn into_kind(self) -> GcErrorKind {
        *self.0
    }
}

impl From<GcErrorKind> for GcError {
    #[cold]
    fn from(kind: GcErrorKind) -> Self {
        GcError(Box::new(kind))
    }
}

impl From<crate::object::LayoutError> for GcError {
    #[cold]
    fn from(e: crate::object::LayoutError) -> Self {
        GcErrorKind::Layout(e).into()
    }
}

impl std::fmt::Display for GcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

impl std::error::Error for GcError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// The kinds of [`GcError`], with their details.
#[derive(thiserror::Error)]
pub enum GcErrorKind {
    /// The heap cannot hold the request even after a full collection.
    #[error(
        "out of memory: {requested} bytes could not be allocated after a full collection \
         (heap {heap_size} bytes){}",
        live_handles_note(*.live_handles)
    )]
    OutOfMemory {
        /// Bytes asked for.
        requested: usize,
        /// Heap capacity.
        heap_size: usize,
        /// Handles live on the mutator that asked (each keeps its object alive).
        live_handles: u32,
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
         {requested} bytes could not be allocated (heap {heap_size} bytes){}",
        GC_HEAP_FREE_LIMIT_PERCENT,
        live_handles_note(*.live_handles)
    )]
    GcOverheadLimit {
        /// Bytes asked for.
        requested: usize,
        /// Heap capacity.
        heap_size: usize,
        /// Consecutive full collections that each left less than the limit free.
        full_collections: u32,
        /// Handles live on the mutator that asked (each keeps its object alive).
        live_handles: u32,
    },
    /// The request is larger than any object the heap can ever hold: larger than both the old
    /// generation and eden (an object lives in one of them). Refused at once, without a
    /// collection, since no collection could make room.
    #[error(
        "out of memory: the request of {} ({requested} bytes) is larger than this heap can ever \
         hold: an object must fit in the old generation ({}) or in eden ({}); use a larger \
         heap",
        format_size(*.requested),
        format_size(*.old_capacity),
        format_size(*.eden_capacity)
    )]
    LargerThanHeap {
        /// Bytes asked for.
        requested: usize,
        /// The old generation's capacity.
        old_capacity: usize,
        /// Eden's capacity (one node's fragment under a fragmented NUMA layout).
        eden_capacity: usize,
    },
    /// The requested object shape cannot be represented.
    #[error(transparent)]
    Layout(#[from] crate::object::LayoutError),
}

/// Live handles at least this many are named as the likely cause of an out-of-memory error.
const MANY_LIVE_HANDLES: u32 = 10_000;

/// What an out-of-memory message says about the handles of the mutator that asked: their
/// number, and when they are many, the usual cause (objects made in a loop are kept alive by
/// their handles until the `scope` around the loop's body ends, and there was none).
fn live_handles_note(live_handles: u32) -> String {
    if live_handles >= MANY_LIVE_HANDLES {
        format!("; {live_handles} handles live on this mutator: a loop without `scope`?")
    } else {
        format!("; {live_handles} handles live on this mutator")
    }
}

impl GcError {
    /// The same error, naming the live handles of the mutator that asked (the VM thread, which
    /// makes the error, does not know them).
    pub(crate) fn with_live_handles(mut self, handles: usize) -> Self {
        // Handle indices are `u32`: there are never more.
        let handles = u32::try_from(handles).unwrap_or(u32::MAX);
        if let GcErrorKind::OutOfMemory { live_handles, .. }
        | GcErrorKind::GcOverheadLimit { live_handles, .. } = &mut *self.0
        {
            *live_handles = handles;
        }
        self
    }
}

/// The kind and the message: `unwrap()` shows this, and the message carries the advice.
impl std::fmt::Debug for GcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.0, f)
    }
}

/// The variant and the message.
impl std::fmt::Debug for GcErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let variant = match self {
            GcErrorKind::OutOfMemory { .. } => "OutOfMemory",
            GcErrorKind::GcOverheadLimit { .. } => "GcOverheadLimit",
            GcErrorKind::LargerThanHeap { .. } => "LargerThanHeap",
            GcErrorKind::Layout(_) => "Layout",
        };
        write!(f, "{variant}(\"{self}\")")
    }
}

/// Building a heap failed.
#[derive(Debug, thiserror::Error)]
pub enum HeapError {
    /// The configuration was rejected.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// `pretouch`: the OS refused to commit the heap or to fault its pages in.
    #[error(
        "could not pretouch the heap ({}): set pretouch = false (the default) or use a smaller \
         heap",
        format_size(*.heap)
    )]
    Pretouch {
        /// The heap size.
        heap: usize,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The OS refused the address space.
    #[error("could not reserve {size} bytes of address space")]
    Reserve {
        /// Bytes asked for.
        size: usize,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The OS refused memory the heap needs besides its address range: a side table sized from
    /// the heap (the card table, a bitmap, a compaction table) or the stacks of its threads.
    #[error(
        "could not allocate {what} ({}) for a heap of {}",
        format_size_rounded(*.size),
        format_size(*.heap)
    )]
    Allocate {
        /// What could not be allocated ("the mark bitmap", "room for 5 threads' stacks and
        /// malloc arenas").
        what: String,
        /// Bytes asked for.
        size: usize,
        /// The heap they are for.
        heap: usize,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The heap is larger than the memory the process can have, and that was not allowed.
    #[error(
        "the heap ({}) is larger than {} ({}, {}): use a smaller heap, or set \
         allow-heap-beyond-memory = true (--allow-heap-beyond-memory, \
         CONCORD_ALLOW_HEAP_BEYOND_MEMORY=true) to build it anyway",
        format_size(*.heap),
        .limit.what(),
        format_size_rounded(usize::try_from(.limit.bytes).unwrap_or(usize::MAX)),
        .limit.source()
    )]
    BeyondMemory {
        /// The heap size asked for.
        heap: usize,
        /// The memory the process can have, and where that figure came from.
        limit: MemoryLimit,
    },
    /// A GC or VM thread could not be started.
    #[error("could not start a GC thread: {0}")]
    Thread(std::io::Error),
    /// `vm-thread-cpu` names a CPU this process may not run on.
    #[error(
        "vm-thread-cpu {cpu}: this process may not run on CPU {cpu} (allowed: {allowed}, or none)"
    )]
    VmThreadCpu {
        /// The CPU asked for.
        cpu: u32,
        /// The CPUs the process may use, as a list (`0-3,8`).
        allowed: String,
    },
    /// The NUMA topology does not fit this process (a synthetic node lists a CPU it may not
    /// use).
    #[error("numa-topology: {0}")]
    NumaTopology(#[from] crate::os::numa::TopologyError),
    /// The kernel refused to interleave the heap's memory over the nodes (`mbind`).
    #[error("numa interleaved: could not interleave the heap over the nodes {nodes:?}")]
    NumaPlacement {
        /// The kernel node ids asked for.
        nodes: Vec<u32>,
        /// What the OS said.
        source: std::io::Error,
    },
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
    /// The GC trace could not be created.
    #[error("could not create the GC trace {path}")]
    GcTrace {
        /// The path asked for.
        path: String,
        /// What the OS said.
        source: std::io::Error,
    },
    /// `mutator-sched profile:PATH` would record a profile where no file can be created.
    #[error(
        "cannot record the mutator scheduling profile {path}: its directory takes no new file"
    )]
    Profile {
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
/// are refused with [`GcErrorKind::GcOverheadLimit`] until a collection leaves more free (HotSpot's
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
    /// The collections' parallel work (`gc-trace`), when configured; written like the records.
    pub gc_trace: Mutex<Option<GcTraceFile>>,
    /// Bytes allocated so far, heap-wide (the lifespan profiler's clock).
    pub allocated: AtomicU64,
    /// `allocated` when the previous collection record was made (for its `bytes_allocated`).
    pub allocated_at_last_record: AtomicU64,
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
    /// The heap's THP mode and the huge-page advice in force.
    pub thp: ThpState,
    /// What pretouching did, when `config.pretouch`.
    pub pretouch: Option<PretouchReport>,
    /// The NUMA topology, layout, node map and per-node allocation (004 §3.2).
    pub numa: Arc<HeapNuma>,
}

impl HeapInner {
    pub fn count_allocation(&self, bytes: usize) {
        self.allocated.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// A mutator waited `waited` for memory after a failed allocation (see
    /// [`crate::telemetry::AllocStalls`]). Taken after the world runs again, so the lock is
    /// only shared with mutators that stalled in the same pause.
    pub fn note_alloc_stall(&self, waited: std::time::Duration) {
        lock(&self.stats)
            .alloc_stalls
            .record(waited.as_secs_f64() * 1e3);
    }

    /// Allocate one zeroed object's memory outside any TLAB: in eden unless `old` (or unless
    /// `old_fallback` and eden is full), else in the old generation, where its start is
    /// recorded for card scanning. The caller writes the header.
    ///
    /// A young allocation comes from the eden fragment of node `node` (see
    /// [`HeapNuma::allocation_node`]; the requesting mutator's, also when the VM thread serves it).
    pub fn allocate_shared(
        &self,
        bytes: usize,
        old: bool,
        old_fallback: bool,
        node: usize,
    ) -> Option<usize> {
        let rsv = self.mem.reservation();
        let young = if old {
            None
        } else {
            let fragment = self.mem.eden.fragment_for_node(node);
            self.mem.eden.par_allocate_on(fragment, bytes, rsv)
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
        self.numa.count_allocation(a, bytes);
        Some(a)
    }

    /// Refuse at once an allocation of `bytes` that no collection could ever make room for:
    /// an object lives in the old generation or in (one node's fragment of) eden, so it must
    /// fit in one of them.
    pub fn refuse_larger_than_heap(&self, bytes: usize) -> Result<(), GcError> {
        let old_capacity = self.mem.old.capacity();
        let eden_capacity = self.mem.eden.capacity();
        if bytes <= old_capacity.max(eden_capacity) {
            return Ok(());
        }
        Err(GcErrorKind::LargerThanHeap {
            requested: bytes,
            old_capacity,
            eden_capacity,
        }
        .into())
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
/// borrow it). [`Heap::finish`] stops its threads, puts its outputs in place and reports any
/// it could not write; dropping the heap does the same, logging such failures.
pub struct Heap {
    inner: Arc<HeapInner>,
    vm_thread: Option<JoinHandle<()>>,
    /// `dynamic` THP's sampler, re-checking 002's rule every [`DYNAMIC_PERIOD`].
    thp_sampler: Option<Periodic>,
    /// Whether the outputs were put in place (by `finish`, `close_outputs` or `drop`).
    outputs_closed: AtomicBool,
}

/// Builds a [`Heap`] from [`GcConfig::default`] (no research threads), with the few settings an
/// embedder usually changes:
///
/// ```
/// let heap = concord::Heap::builder()
///     .heap_size(64 << 20)
///     .gc_threads(2)
///     .build()?;
/// let mut m = heap.attach();
/// # let _ = &mut m;
/// # Ok::<(), concord::HeapError>(())
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build`"]
pub struct HeapBuilder {
    config: GcConfig,
}

impl HeapBuilder {
    /// The heap's size in bytes (young and old; reserved up front).
    pub fn heap_size(mut self, bytes: usize) -> Self {
        self.config.heap_size = bytes;
        self
    }

    /// The young generation's size in bytes (default: a third of the heap).
    pub fn young_size(mut self, bytes: usize) -> Self {
        self.config.young_size = Some(bytes);
        self
    }

    /// GC worker threads.
    pub fn gc_threads(mut self, n: usize) -> Self {
        self.config.gc_threads = n;
        self
    }

    /// Any other setting of the configuration (the workbench's switches included).
    pub fn configure(mut self, f: impl FnOnce(&mut GcConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The configuration the heap will be built from.
    pub fn config(&self) -> &GcConfig {
        &self.config
    }

    /// Validates the configuration and starts the heap ([`Heap::new`]).
    pub fn build(self) -> Result<Heap, HeapError> {
        Heap::new(self.config)
    }
}

impl Heap {
    /// A [`HeapBuilder`] starting from [`GcConfig::default`].
    pub fn builder() -> HeapBuilder {
        HeapBuilder {
            config: GcConfig::default(),
        }
    }

    /// Validate `config`, start its outputs (beside their paths: see [`Heap::finish`]),
    /// reserve the heap and start the VM thread and the GC workers.
    pub fn new(config: GcConfig) -> Result<Heap, HeapError> {
        config.validate()?;
        Heap::check_memory(&config)?;
        // Before anything else that touches files, so a bad path is refused at once; nothing
        // is replaced until the heap finishes.
        // Time 0 of the records and of the GC log's timestamps.
        let start = Instant::now();
        let (gc_log, gc_records, gc_trace) = open_outputs(&config, start)?;
        let g = config.generation_sizes();
        let sizes = SpaceSizes {
            old: g.old,
            eden: g.eden,
            survivor: g.survivor,
        };
        let footprint = g.total() as u64;
        let margin = config.thp_margin as u64;
        let advice = config
            .thp
            .launch_advice(mem_available().ok(), footprint, margin);
        let align = if config.thp.wants_huge_alignment() {
            HUGE_PAGE_SIZE
        } else {
            page_size()
        };
        let thp = ThpState::new(config.thp, margin, advice);
        // What this process may use, read once on the thread creating the heap.
        let cpus = CpuView::detect().unwrap_or_else(|e| {
            log::warn!("could not read the affinity mask ({e})");
            CpuView::from_allowed(Vec::new(), &SystemPaths::default())
        });
        for warning in &cpus.warnings {
            log::warn!("{warning}");
        }
        let vm_cpu = config.vm_thread_cpu;
        if let Some(cpu) = vm_cpu {
            if !cpus.allowed.is_empty() && !cpus.allowed.contains(&cpu) {
                return Err(HeapError::VmThreadCpu {
                    cpu,
                    allowed: crate::os::procfs::format_cpu_list(&cpus.allowed),
                });
            }
        }
        // `fragmented` lays out one young fragment per node: the topology comes first.
        let young_fragments = HeapNuma::young_fragments(&config, &cpus)?;
        let mem =
            HeapMemory::with_layout(sizes, young_fragments, align, advice).map_err(
                |e| match e {
                    HeapMemoryError::Reserve { size, source } => {
                        HeapError::Reserve { size, source }
                    }
                    HeapMemoryError::SideTable(t) => HeapError::Allocate {
                        what: format!("the {}", t.what),
                        size: t.size,
                        heap: g.total(),
                        source: t.source,
                    },
                },
            )?;
        ensure_room_for_threads(&config, g.total())?;
        // Before anything touches the heap: interleaving governs pages faulted in later.
        let numa = Arc::new(HeapNuma::new(&config, &cpus, &mem)?);
        // A NUMA layout places the GC workers by node; a GC affinity policy would move them off
        // their node, so it steps aside (README "NUMA layouts").
        let gc_affinity_kind = applied_gc_affinity(config.gc_affinity, config.numa);
        if gc_affinity_kind != config.gc_affinity {
            log::info!(
                "numa {}: GC workers are pinned to their node's CPUs; gc-affinity {} is not applied",
                config.numa,
                config.gc_affinity
            );
        }
        let (controller, sampler_error) = GcAffinityController::counting_runnable(
            gc_affinity_kind,
            cpus.allowed.clone(),
            DEFAULT_SAMPLE_PERIOD,
        );
        if let Some(e) = sampler_error {
            log::warn!(
                "cannot count runnable threads per CPU ({e}); dynamic GC affinity counts only \
                 the GC workers"
            );
        }
        let gc_affinity = Arc::new(controller);
        let mutator_sched = MutatorScheduler::with_config(MutatorSchedConfig {
            fifo_cpu_threshold: config.fifo_cpu_threshold,
            fifo_scope: config.fifo_scope,
            ..MutatorSchedConfig::new(config.mutator_sched.clone(), cpus.usable_cpus())
        });
        let pool = start_gc_workers(&config, &cpus.allowed, gc_affinity.clone(), numa.clone())?;
        // `fifo-scope all`: the GC workers follow the mutators' policy.
        mutator_sched.add_runtime_threads(&pool.worker_tids());
        let affinity = gc_affinity.clone();
        pool.set_job_start(move |worker| affinity.worker_phase_start(worker));
        let pretouch = if config.pretouch {
            Some(pretouch_heap(&mem, &pool, config.gc_threads, advice)?)
        } else {
            None
        };
        // Lifespan profiler: enabled by configuration.
        let lifespans = config
            .lifespans
            .then(|| LifespanProfiler::new(config.lifespan_sample_bytes as u64));
        let safepoint_timeout = config.safepoint_timeout;
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
            safepoint: Safepoint::new(safepoint_timeout),
            start,
            stats: Mutex::new(GcStats::default()),
            gc_log: Mutex::new(gc_log),
            gc_records: Mutex::new(gc_records),
            gc_trace: Mutex::new(gc_trace),
            allocated: AtomicU64::new(0),
            allocated_at_last_record: AtomicU64::new(0),
            last_verify: Mutex::new(VerifyReport::default()),
            collections: AtomicUsize::new(0),
            lifespans,
            cpus,
            gc_affinity,
            mutator_sched,
            thp,
            pretouch,
            numa,
        });
        let thp_sampler = start_thp_sampler(&inner)?;
        let vm_inner = inner.clone();
        let vm_thread = std::thread::Builder::new()
            .name("concord-vm".into())
            .spawn(move || {
                if let Some(cpu) = vm_cpu {
                    // The CPU was checked against the mask above; a refusal now (the mask
                    // changed meanwhile) leaves the thread unpinned, which the warning says.
                    if let Err(e) = set_current_thread_affinity(&[cpu]) {
                        log::warn!("vm-thread-cpu {cpu}: the VM thread stays unpinned ({e})");
                    }
                }
                vm_thread::run(&vm_inner)
            })
            .map_err(HeapError::Thread)?;
        Ok(Heap {
            inner,
            vm_thread: Some(vm_thread),
            thp_sampler,
            outputs_closed: AtomicBool::new(false),
        })
    }

    /// The heap's THP mode, the advice in force, the system's THP settings and the bytes of
    /// the heap huge pages back now (read from `/proc/self/smaps`).
    pub fn thp(&self) -> ThpReport {
        let mem = &self.inner.mem;
        self.inner.thp.report(mem.base(), mem.end())
    }

    /// Whether the machine can hold a heap built from `config`: an error
    /// ([`HeapError::BeyondMemory`]) when its heap is larger than the memory the process can
    /// have (physical memory, or the cgroup memory limit if smaller) and `config` does not
    /// allow that. [`Heap::new`] checks this first; a front end may check it before it starts
    /// anything else.
    pub fn check_memory(config: &GcConfig) -> Result<(), HeapError> {
        if config.allow_heap_beyond_memory {
            return Ok(());
        }
        refuse_heap_beyond(config.heap_size, memory_limit())
    }

    pub(crate) fn inner(&self) -> &HeapInner {
        &self.inner
    }

    /// The shared state, for what must find the heap without borrowing it (a thread-exit hook).
    pub(crate) fn inner_weak(&self) -> std::sync::Weak<HeapInner> {
        Arc::downgrade(&self.inner)
    }

    /// Attach the calling thread as a mutator; detached when the returned value drops.
    /// Panics if the thread has a mutator of this heap already (it would wait for itself at
    /// the next collection).
    #[track_caller]
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
        s.pretouch = self.inner.pretouch;
        s.numa = Some(self.numa());
        s
    }

    /// The heap's NUMA layout and topology, the bytes allocated per node so far, and where
    /// each GC worker is placed (its affinity mask as the kernel reports it now).
    pub fn numa(&self) -> crate::telemetry::NumaReport {
        self.inner.numa.report(&self.inner.pool)
    }

    /// Bytes of the heap committed now (the young generation, and the old generation as far
    /// as it was needed so far, or all of it after a pretouch).
    pub fn committed_bytes(&self) -> usize {
        let mem = &self.inner.mem;
        mem.old.committed_bytes() + (mem.end() - mem.young_start())
    }

    /// Bytes of the heap resident in memory now (`mincore`): what has been faulted in.
    pub fn resident_bytes(&self) -> std::io::Result<usize> {
        let mem = &self.inner.mem;
        crate::os::vm::resident_bytes(mem.base(), mem.capacity())
    }

    /// What pretouching did at creation (`None` without `pretouch`).
    pub fn pretouch(&self) -> Option<PretouchReport> {
        self.inner.pretouch
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
    /// [`Mutator::collect`]). Panics on a thread whose mutator of this heap is running (outside
    /// [`Mutator::blocking`]): the collection would wait for that mutator forever.
    #[track_caller]
    pub fn collect(&self, kind: CollectionKind) {
        self.inner.safepoint.request(Request::Collect(kind), None);
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

// ---- outputs (GC log, records, mutator profile) ----
impl Heap {
    /// Stops the heap's threads, puts its outputs in place (the GC log, the records file, a
    /// recorded mutator profile) and returns the statistics of the run. An error lists every
    /// output that could not be written completely — which, why, and what it lacks — and
    /// still holds the statistics. Dropping a heap does the same and logs the failures as
    /// warnings.
    ///
    /// Outputs are written beside their paths and replace them only here: a heap that could
    /// not be created leaves existing files as they were, while the outputs of a heap that ran
    /// are put in place whatever became of the program (an out-of-memory error included),
    /// with the lines written before a failed write.
    pub fn finish(mut self) -> Result<GcStats, OutputError> {
        self.stop_threads();
        self.close_outputs()
    }

    /// Puts the outputs in place now, while mutators may still run: for a program that must
    /// exit before its work is done (a signal). The statistics returned are the collections
    /// the outputs hold; later collections are neither written nor in them, and a collection
    /// in progress is not waited for. Also finishes the mutator scheduler (a recorded profile
    /// is written). Later calls (and `finish`) find nothing more to write.
    pub fn close_outputs(&self) -> Result<GcStats, OutputError> {
        if self.outputs_closed.swap(true, Ordering::SeqCst) {
            return Ok(self.stats());
        }
        let sched = self.inner.mutator_sched.finish();
        // Taken out first: the VM thread writes nothing more, so the records of the snapshot
        // that it has not written yet are written here, and outputs and statistics agree.
        let gc_log = lock(&self.inner.gc_log).take();
        let gc_records = lock(&self.inner.gc_records).take();
        // Traces not written by now (a collection in progress) are not in the file; it still
        // ends in its end marker, after the last collection it holds.
        let gc_trace = lock(&self.inner.gc_trace).take();
        let mut stats = self.stats();
        stats.thp = Some(self.thp());
        let mut failures = Vec::new();
        if let Some(mut log) = gc_log {
            stats.records.iter().for_each(|r| {
                log.write_record(r);
            });
            let mode = log.mode();
            let (report, result) = log.finish();
            stats.gc_log = Some(GcLogStats {
                mode,
                dropped: report.dropped,
                write_max_ms: report.write_max_ms,
            });
            failures.extend(result.err());
        }
        if let Some(mut records) = gc_records {
            stats.records.iter().for_each(|r| records.write_record(r));
            failures.extend(records.finish().err());
        }
        if let Some(trace) = gc_trace {
            failures.extend(trace.finish().err());
        }
        failures.extend(profile_failure(&sched));
        if failures.is_empty() {
            Ok(stats)
        } else {
            Err(OutputError {
                failures,
                stats: Box::new(stats),
            })
        }
    }

    /// Stops the mutator scheduler (a recorded profile is written), then the VM thread.
    fn stop_threads(&mut self) {
        if let Some(mut sampler) = self.thp_sampler.take() {
            sampler.stop();
        }
        self.inner.mutator_sched.finish();
        self.inner.safepoint.shutdown();
        if let Some(t) = self.vm_thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Heap {
    fn drop(&mut self) {
        self.stop_threads();
        if let Err(e) = self.close_outputs() {
            for failure in &e.failures {
                log::warn!("{failure}");
            }
        }
    }
}

/// Refuse a heap of `heap` bytes when it is larger than the memory the process can have
/// (`limit`, as [`memory_limit`] read it). A limit that cannot be read refuses nothing.
fn refuse_heap_beyond(
    heap: usize,
    limit: Result<Option<MemoryLimit>, KernelFileError>,
) -> Result<(), HeapError> {
    match limit {
        Ok(Some(limit)) if heap as u64 > limit.bytes => {
            Err(HeapError::BeyondMemory { heap, limit })
        }
        Ok(_) => Ok(()),
        Err(e) => {
            log::warn!(
                "cannot tell how much memory this process can have ({e}); the heap size is not \
                 checked against it"
            );
            Ok(())
        }
    }
}

/// The GC log, records file and GC trace a heap writes, each if configured.
type OpenedOutputs = (Option<GcLog>, Option<RecordsFile>, Option<GcTraceFile>);

/// Starts the outputs `config` asks for (beside their paths; nothing is replaced yet), and
/// checks that a mutator profile to be recorded can be written.
fn open_outputs(config: &GcConfig, start: Instant) -> Result<OpenedOutputs, HeapError> {
    let log_options = GcLogOptions {
        mode: config.gc_log_mode,
        buffer: config.gc_log_buffer,
        flush_timeout: config.gc_log_flush_timeout,
        start,
        compress: config.gc_log_compress,
        gc_threads: config.gc_threads,
    };
    if let MutatorSched::Profile(path) = &config.mutator_sched {
        // An existing profile is read, not written.
        if !path.exists() {
            check_creatable(path).map_err(|source| HeapError::Profile {
                path: path.display().to_string(),
                source,
            })?;
        }
    }
    let gc_log = match &config.gc_log {
        Some(path) => Some(
            GcLog::create(path, &format!("Concord ({})", config.preset), log_options).map_err(
                |source| HeapError::GcLog {
                    path: path.display().to_string(),
                    source,
                },
            )?,
        ),
        None => None,
    };
    let gc_records = match &config.gc_records {
        Some(path) => Some(
            RecordsFile::create(path).map_err(|source| HeapError::GcRecords {
                path: path.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };
    let gc_trace = match &config.gc_trace {
        Some(path) => Some(
            GcTraceFile::create(
                path,
                config.heap_size as u64,
                PlabSizes {
                    young: config.young_plab_size as u64,
                    old: config.old_plab_size as u64,
                },
            )
            .map_err(|source| HeapError::GcTrace {
                path: path.display().to_string(),
                source,
            })?,
        ),
        None => None,
    };
    Ok((gc_log, gc_records, gc_trace))
}

/// The profile `mutator-sched profile:PATH` should have written and could not.
fn profile_failure(report: &MutatorSchedReport) -> Option<OutputFailure> {
    let profile = report.profile.as_ref()?;
    (profile.action == ProfileAction::WriteFailed).then(|| OutputFailure {
        output: OutputKind::MutatorProfile,
        path: profile.path.clone(),
        error: profile.error.clone().unwrap_or_default(),
        lost: "the profile of this run was not written".to_string(),
    })
}
// ---- end outputs ----

/// Threads a heap may start besides its GC workers: the VM thread and the three samplers (CPU
/// load for dynamic GC affinity, threads for adaptive mutator scheduling, memory for dynamic
/// THP).
const HELPER_THREADS: usize = 4;

/// For `dynamic` THP without `pretouch`, start the thread that re-checks 002's rule every
/// [`DYNAMIC_PERIOD`]:
/// the heap's remaining footprint is its size less what is resident, and a change of advice
/// goes on the old generation's part not yet committed. It holds the heap weakly and stops
/// with the heap's threads.
fn start_thp_sampler(inner: &Arc<HeapInner>) -> Result<Option<Periodic>, HeapError> {
    if inner.thp.mode() != ThpMode::Dynamic {
        return Ok(None);
    }
    if inner.pretouch.is_some() {
        // Nothing is left uncommitted for a later decision to govern.
        log::info!(
            "dynamic THP with pretouch: the whole heap was faulted in at start under the \
             launch-time decision ({:?}); it is not re-checked",
            inner.thp.advice()
        );
        return Ok(None);
    }
    let heap = Arc::downgrade(inner);
    let tick = move || {
        let Some(inner) = heap.upgrade() else { return };
        let mem = &inner.mem;
        let resident = resident_bytes_in(mem.base(), mem.end()).unwrap_or(0);
        let footprint = (mem.capacity() as u64).saturating_sub(resident);
        match inner.thp.recheck(
            mem.reservation(),
            mem.uncommitted_old(),
            footprint,
            mem_available().ok(),
        ) {
            Ok(Some(advice)) => log::info!(
                "dynamic THP: {advice:?} on the old generation not yet committed \
                 ({footprint} bytes of heap still to fault in)"
            ),
            Ok(None) => {}
            Err(e) => log::warn!("dynamic THP: cannot change the heap's huge-page advice: {e}"),
        }
    };
    Periodic::spawn("concord-thp", DYNAMIC_PERIOD, || {}, tick)
        .map(Some)
        .map_err(HeapError::Thread)
}

/// `pretouch`: commit the whole heap and fault in every page of it and of its side tables on
/// the first `workers` GC workers, which claim 4 MiB chunks until none is left (HotSpot's
/// `PretouchTask` on its GC workers: they exist already, sit idle until the first collection,
/// and are as many as the machine should spend on the heap's memory).
fn pretouch_heap(
    mem: &HeapMemory,
    pool: &WorkerPool,
    workers: usize,
    advice: Option<HugePageAdvice>,
) -> Result<PretouchReport, HeapError> {
    let started = Instant::now();
    let refused = |source| HeapError::Pretouch {
        heap: mem.capacity(),
        source,
    };
    let enabled = SystemThp::read().enabled;
    let heap_stride = if huge_pages_expected(advice, enabled.as_deref()) {
        HUGE_PAGE_SIZE
    } else {
        page_size()
    };
    let plan = PretouchPlan::new(mem, heap_stride).map_err(refused)?;
    let bytes = plan.bytes() as u64;
    let workers = workers.clamp(1, pool.size());
    pool.run(workers, |_| plan.work());
    let method = plan.finish().map_err(refused)?;
    let report = PretouchReport {
        ms: started.elapsed().as_secs_f64() * 1e3,
        bytes,
        heap_stride,
        method,
        workers,
    };
    log::info!(
        "pretouch: {} (heap and side tables) faulted in by {workers} GC workers in {:.1} ms \
         ({method:?}, heap stride {})",
        format_size(bytes as usize),
        report.ms,
        format_size(heap_stride)
    );
    Ok(report)
}

/// Address space left for the first collections' small allocations.
const ROOM_FOR_COLLECTIONS: usize = 4 * MIB;

/// Make sure the threads the heap is about to start will have their memory: a thread that
/// starts without it aborts the process ([`thread_start_room`]), so that much address space is
/// reserved once, and given back, before any is started. Under `ulimit -v` this turns what
/// would be an abort into an error. (Without such a limit the reservation costs nothing: it is
/// never backed.)
fn ensure_room_for_threads(config: &GcConfig, heap: usize) -> Result<(), HeapError> {
    let threads = config.gc_threads + HELPER_THREADS;
    let size = thread_start_room(threads) + ROOM_FOR_COLLECTIONS;
    Reservation::new(size, page_size())
        .map(drop)
        .map_err(|source| HeapError::Allocate {
            what: format!("room for {threads} threads' stacks and malloc arenas"),
            size,
            heap,
            source,
        })
}

/// Start the GC worker pool. With `pin_start`, every worker is born on one CPU, the first of
/// `allowed` (as HotSpot's GC threads are born together where the VM creates them; the first
/// CPU rather than the creator's current one, so that an experiment knows where they start and
/// can put interference there), and then given back the `allowed` CPUs, leaving placement to
/// the OS scheduler.
/// With static GC affinity, each worker then binds itself to its CPU; with a NUMA layout,
/// worker `i` pins itself to all CPUs of node `i % nodes` instead.
fn start_gc_workers(
    config: &GcConfig,
    allowed: &[u32],
    affinity: Arc<GcAffinityController>,
    numa: Arc<HeapNuma>,
) -> Result<WorkerPool, HeapError> {
    let birth_cpu = if config.pin_start {
        allowed.first().copied()
    } else {
        None
    };
    let allowed = allowed.to_vec();
    let pool = WorkerPool::new(config.gc_threads, "concord-gc", config.parking, move |id| {
        if let Some(cpu) = birth_cpu {
            // Failure only loses the experiment's starting condition, not correctness.
            if set_current_thread_affinity(&[cpu]).is_ok() {
                // Run briefly on the birth CPU so it is the thread's last CPU when it parks.
                std::thread::yield_now();
                let _ = set_current_thread_affinity(&allowed);
            }
        }
        if let Some(cpus) = numa.worker_cpus(id) {
            if let Err(e) = set_current_thread_affinity(cpus) {
                numa.placement_failed(id, &e);
            }
            return;
        }
        // A failure is reported once by the controller; the worker runs unbound.
        let _ = affinity.bind_at_start(id);
    })
    .map_err(HeapError::Thread)?;
    // Once per heap: its pool is started once.
    use crate::parallel::oversubscription::warning;
    if let Some(text) = warning(
        config.gc_threads,
        pool.usable_cpus(),
        config.dynamic_gc_threads,
    ) {
        log::warn!("{text}");
    }
    Ok(pool)
}
