//! Configuration: presets plus overrides, validated before a heap is built.
//!
//! A [`GcConfig`] is the single, validated description of a heap: sizes, thread counts and the
//! policy switches of DESIGN.md. It is built from a [`Preset`] and then overridden by a TOML file,
//! `CONCORD_*` environment variables and CLI flags (weakest to strongest). Every bad value is an
//! error naming the key, the value and what is allowed — never a silent fallback to a default.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::os::cpu::usable_cpu_count;
use crate::os::numa::{NumaLayout, NumaTopologySpec};
use crate::os::policy::{FifoScope, GcAffinity, MutatorSched};
use crate::os::thp::ThpMode;
use crate::parallel::{ParkingKind, PhasePolicy};

mod error;
mod files;
mod options;
mod size;
mod validate;

pub use error::{ConfigError, ConfigKey, Origin};
pub use files::{check_files, FileClash, NamedFile};
pub use options::{
    option_docs, parse_bool, read_config_file, ConfigBuilder, SourcedConfig, MAX_CONFIG_FILE_BYTES,
    NON_CONFIG_ENV_VARS,
};
pub use size::{format_size, format_size_rounded, parse_size, SizeError, GIB, KIB, MIB};
pub use validate::same_file;
/// For the PLAB tests, which cut a buffer of every accepted size, and the GC trace's reader,
/// which accepts a recorded PLAB size in it.
pub(crate) use validate::PLAB_RANGE;

/// Spaces (eden, each survivor, old) are sized in multiples of this many bytes.
/// `safepoint-timeout`'s default: long enough that no healthy safepoint comes near it (they
/// take microseconds to milliseconds), short enough to name a stuck thread while someone is
/// still watching.
pub const DEFAULT_SAFEPOINT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

pub const SPACE_ALIGNMENT: usize = 64 * KIB;
/// The smallest heap a configuration may ask for.
pub const MIN_HEAP: usize = 4 * MIB;
/// The largest heap a configuration may ask for: 1 TiB (or the address space, if smaller).
pub const MAX_HEAP: usize = if (usize::MAX as u64) < (1u64 << 40) {
    usize::MAX
} else {
    (1u64 << 40) as usize
};
/// The heap size when none is given.
pub const DEFAULT_HEAP_SIZE: usize = 256 * MIB;
/// The smallest old generation a valid configuration leaves.
pub const MIN_OLD_SIZE: usize = MIB;
/// The smallest eden a valid configuration leaves.
pub const MIN_EDEN_SIZE: usize = 256 * KIB;
/// The smallest survivor space a valid configuration leaves.
pub const MIN_SURVIVOR_SIZE: usize = 64 * KIB;
/// The most GC worker threads a configuration may ask for.
pub const MAX_GC_THREADS: usize = 256;
/// The default of [`GcConfig::thp_margin`]: `dynamic` THP wants this much available memory
/// beyond the heap's footprint before it asks for huge pages.
pub const DEFAULT_THP_MARGIN: usize = GIB;
/// The default of [`GcConfig::fifo_cpu_threshold`]: 001 §4.4 enables its FIFO policies only
/// with more than 8 cores, because with fewer, threads scheduled first keep the others from
/// running.
pub const DEFAULT_FIFO_CPU_THRESHOLD: usize = 8;
/// Default to-space PLAB size (`young-plab-size`), every preset's.
pub const DEFAULT_YOUNG_PLAB_SIZE: usize = 32 * KIB;
/// Default old-generation PLAB size (`old-plab-size`), every preset's.
pub const DEFAULT_OLD_PLAB_SIZE: usize = 8 * KIB;

/// A named set of policy switches (DESIGN.md, "Mechanisms and presets").
///
/// Parses case-insensitively from `vanilla`, `modern`, `suo18`, `naps` or `optimized` and
/// displays in lowercase. Each paper's system is a preset of its own (DESIGN.md, "Presets per
/// paper"), so that its experiments run with exactly its switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// OpenJDK 8 Parallel Scavenge as the papers describe it.
    Vanilla,
    /// HotSpot 17+ Parallel GC.
    Modern,
    /// 000's optimized JVM: OpenJDK 8 with task affinity, dynamic GC thread affinity and
    /// adaptive stealing with `2·N_live` termination; the monitor queue and HotSpot 8's
    /// termination loop kept.
    Suo18,
    /// 004's NAPS: OpenJDK 8 with the lock-free task queue, lazy futex parking and NUMA
    /// layouts (fragmented young, interleaved old).
    Naps,
    /// Concord's best: the papers' fixes with Concord's own termination loop, chosen from
    /// measurements.
    Optimized,
}

/// Everything a [`crate::Heap`] needs to know, already validated.
///
/// Build one with [`ConfigBuilder`] (preset, TOML file, environment, CLI) or start from
/// [`GcConfig::for_preset`] and check it with [`GcConfig::validate`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GcConfig {
    /// The preset the switches came from.
    pub preset: Preset,
    /// Maximum heap size in bytes (reserved up front; young + old).
    pub heap_size: usize,
    /// Build a heap larger than the memory the process can have (physical memory, or the
    /// cgroup memory limit if smaller); otherwise [`crate::Heap::new`] refuses it.
    pub allow_heap_beyond_memory: bool,
    /// Young generation size in bytes (eden + two survivors). `None`: `heap_size / (new_ratio + 1)`.
    pub young_size: Option<usize>,
    /// Old:young size ratio used when `young_size` is not given (HotSpot `NewRatio`, default 2).
    pub new_ratio: u32,
    /// Eden:survivor size ratio (HotSpot `SurvivorRatio`, default 8: each survivor is young/10).
    pub survivor_ratio: u32,
    /// Number of GC worker threads: the size of the pool. With `dynamic_gc_threads`, the most
    /// workers a collection may use.
    pub gc_threads: usize,
    /// Whether each collection picks its own number of active workers, at most `gc_threads`
    /// (HotSpot 17+ `UseDynamicNumberOfGCThreads`); otherwise every collection uses all of them.
    pub dynamic_gc_threads: bool,
    /// Create every GC thread on the CPU of the thread that creates the pool (the VM thread), as
    /// HotSpot does, and leave them to the OS scheduler from there; otherwise threads start
    /// wherever the OS puts them.
    pub pin_start: bool,
    /// The CPU the VM thread is pinned to, if any (`vm-thread-cpu`); `None`: left to the OS.
    pub vm_thread_cpu: Option<u32>,
    /// The parallel phase's switches: where workers get root tasks from (monitor-protected
    /// FIFO, atomic claiming, lock-free queue), whether root tasks prefer a worker (000 §4.1),
    /// how a thief picks its victim, and how workers agree that the phase is over.
    pub phase: PhasePolicy,
    /// How idle GC workers sleep between collections and how the end of a phase is detected.
    pub parking: ParkingKind,
    /// Where GC worker threads may run: left to the OS, pinned one per CPU, or moved off
    /// overloaded CPUs at the start of each collection (000 Algorithm 1).
    pub gc_affinity: GcAffinity,
    /// How mutator threads are scheduled: CFS, SCHED_FIFO, or chosen from a profile or
    /// adaptively (001 Algorithms 1 and 2). CFS in every preset: SCHED_FIFO by default would let
    /// an embedding program's mutators starve its other threads (and other processes) on the
    /// same CPUs, so the papers' policies are opt-in.
    pub mutator_sched: MutatorSched,
    /// The `profile` and `adaptive` mutator scheduling policies may choose FIFO only when the
    /// process may use more CPUs than this (001 §4.4: FIFO pays off with more than 8 cores);
    /// with fewer they keep CFS. `fifo` itself is not affected.
    pub fifo_cpu_threshold: usize,
    /// The threads FIFO applies to when the mutator scheduling policy chooses it: the mutators,
    /// or also the VM thread and the GC workers (`all`, as 001 ran the whole JVM under FIFO).
    pub fifo_scope: FifoScope,
    /// Transparent huge pages for the heap (002 §3): no call (`system`), `MADV_NOHUGEPAGE`
    /// (`never`), `MADV_HUGEPAGE` on a 2 MiB-aligned heap (`madvise`, `always`), or 002's rule
    /// re-checked every few seconds (`dynamic`).
    pub thp: ThpMode,
    /// `dynamic` THP asks for huge pages only while `MemAvailable` is at least the heap's
    /// remaining footprint plus this many bytes.
    pub thp_margin: usize,
    /// Commit the whole heap when it is created and fault in every page of it and of its side
    /// tables, in parallel on the GC workers (HotSpot's `AlwaysPreTouch`), so that first-touch
    /// page faults happen before the program runs instead of inside pauses and allocations.
    /// Off in every preset, as in HotSpot: it costs start-up time and the whole heap's memory
    /// at once.
    pub pretouch: bool,
    /// How the heap is laid out over NUMA nodes (004 §3.2): `off` (first touch) or
    /// `interleaved` (pages round-robin over the nodes, GC workers pinned one node each, round
    /// robin). `off` in every preset for now.
    pub numa: NumaLayout,
    /// The nodes the layout uses: the machine's (`auto`) or synthetic ones given as CPU lists
    /// (`0/1`), whose memory is an address range of the heap (all physically on the real
    /// node).
    pub numa_topology: NumaTopologySpec,
    /// Profile object lifespans (bytes allocated between an object's allocation and its death,
    /// 001 §2) and report their histogram.
    pub lifespans: bool,
    /// Mean bytes of a mutator's allocation between two lifespan samples; 0 samples every
    /// object (every allocation then takes the slow path).
    pub lifespan_sample_bytes: usize,
    /// Upper bound of the adaptive tenuring threshold, 0..=15 (HotSpot `MaxTenuringThreshold`).
    pub max_tenuring_threshold: u32,
    /// Tenuring threshold used until the first scavenge has measured survivor occupancy.
    pub initial_tenuring_threshold: u32,
    /// Percentage of a survivor space the tenuring threshold aims to fill (HotSpot `TargetSurvivorRatio`).
    pub target_survivor_ratio: u32,
    /// Fixed TLAB size in bytes, rounded down to whole words when TLABs are cut; `None` sizes
    /// TLABs from eden and the number of attached mutators.
    pub tlab_size: Option<usize>,
    /// Promotion-local buffer size for survivor space, bytes (1 KiB..=1 MiB); buffers are cut
    /// rounded down to whole 8-byte words, as TLABs are.
    pub young_plab_size: usize,
    /// Promotion-local buffer size for the old generation, bytes (1 KiB..=1 MiB); rounded down
    /// to whole words like `young_plab_size`.
    pub old_plab_size: usize,
    /// Objects at least this large (bytes) are allocated directly in the old generation.
    pub large_object_threshold: usize,
    /// How long a collection waits for the mutators to reach its safepoint before the ones
    /// still running are named on stderr, once per safepoint (`None`: never; HotSpot's
    /// `-XX:+SafepointTimeout -XX:SafepointTimeoutDelay`).
    pub safepoint_timeout: Option<std::time::Duration>,
    /// Verify the whole heap after every collection.
    pub verify: bool,
    /// Write a HotSpot unified-logging style GC log here.
    pub gc_log: Option<PathBuf>,
    /// How the GC log is written: inside the pause (sync) or by a writer thread (async).
    pub gc_log_mode: GcLogMode,
    /// Bytes of lines an async GC log buffers before it drops them.
    pub gc_log_buffer: usize,
    /// How long finishing an async GC log waits for its writer.
    pub gc_log_flush_timeout: std::time::Duration,
    /// Write the GC log through a streaming gzip compressor (`gc-log-compress`).
    pub gc_log_compress: bool,
    /// Write one JSON line per collection (phases, per-worker counters) here. The heap keeps the
    /// records in [`crate::Heap::stats`]; the `concord` front end writes them to this file.
    pub gc_records: Option<PathBuf>,
    /// Record the parallel work of every collection (root tasks, the object graph copied or
    /// marked) in this binary file, for the many-core simulator
    /// ([`crate::telemetry::gc_trace`]).
    pub gc_trace: Option<PathBuf>,
}

/// How the GC log is written (paper 002): `sync` writes each collection's lines inside its
/// pause (HotSpot 8), `async` hands them to a writer thread through a bounded buffer (HotSpot
/// 17's `-Xlog:async`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GcLogMode {
    /// Written and flushed by the VM thread before the world resumes.
    Sync,
    /// Buffered; written by the log's own thread; dropped and counted when the buffer is full.
    Async,
}

impl GcLogMode {
    /// The allowed names.
    pub const ALLOWED: &'static str = "sync, async";

    /// The mode's name as users write it.
    pub fn as_str(self) -> &'static str {
        match self {
            GcLogMode::Sync => "sync",
            GcLogMode::Async => "async",
        }
    }
}

impl std::str::FromStr for GcLogMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "sync" => Ok(GcLogMode::Sync),
            "async" => Ok(GcLogMode::Async),
            _ => Err(format!(
                "is not a GC log mode (allowed: {})",
                GcLogMode::ALLOWED
            )),
        }
    }
}

impl fmt::Display for GcLogMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Preset {
    /// Every preset, in the order of DESIGN.md.
    pub const ALL: [Preset; 5] = [
        Preset::Vanilla,
        Preset::Modern,
        Preset::Suo18,
        Preset::Naps,
        Preset::Optimized,
    ];

    /// The presets that can be used: all of them.
    pub const AVAILABLE: &'static [Preset] = &Preset::ALL;

    /// The preset's name as users write it: `vanilla`, `modern`, `suo18`, `naps`, `optimized`.
    pub fn name(self) -> &'static str {
        match self {
            Preset::Vanilla => "vanilla",
            Preset::Modern => "modern",
            Preset::Suo18 => "suo18",
            Preset::Naps => "naps",
            Preset::Optimized => "optimized",
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A text that names no preset; displays the text and the allowed names.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown preset '{0}' (allowed: vanilla, modern, suo18, naps, optimized)")]
pub struct UnknownPreset(pub String);

impl FromStr for Preset {
    type Err = UnknownPreset;

    fn from_str(text: &str) -> Result<Preset, UnknownPreset> {
        let trimmed = text.trim();
        Preset::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(trimmed))
            .ok_or_else(|| UnknownPreset(text.to_string()))
    }
}

/// The default number of GC worker threads for `ncpus` usable CPUs, HotSpot's rule
/// (`ParallelGCThreads`): all of them up to 8, then 5/8 of the rest, `3 + 5·n/8`.
///
/// Clamped to `1..=`[`MAX_GC_THREADS`] so that the default always validates.
pub fn default_gc_threads(ncpus: usize) -> usize {
    let threads = if ncpus <= 8 { ncpus } else { 3 + 5 * ncpus / 8 };
    threads.clamp(1, MAX_GC_THREADS)
}

/// How many GC worker threads, as users write it: a number (`4`) or `dynamic`.
///
/// `dynamic` is a pool of the default size ([`default_gc_threads`] of the usable CPUs) from
/// which each collection picks its own number of active workers (HotSpot 17+
/// `UseDynamicNumberOfGCThreads`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GcThreads {
    /// Exactly this many workers in every collection (1..=[`MAX_GC_THREADS`]).
    Fixed(usize),
    /// A pool of the default size; each collection chooses how many take part.
    Dynamic,
}

impl fmt::Display for GcThreads {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GcThreads::Fixed(n) => write!(f, "{n}"),
            GcThreads::Dynamic => f.write_str("dynamic"),
        }
    }
}

impl FromStr for GcThreads {
    type Err = String;

    fn from_str(text: &str) -> Result<GcThreads, String> {
        if text.trim().eq_ignore_ascii_case("dynamic") {
            Ok(GcThreads::Dynamic)
        } else {
            options::thread_count(text).map(GcThreads::Fixed)
        }
    }
}

/// How a heap is split into spaces, in bytes, each a multiple of [`SPACE_ALIGNMENT`]:
/// `old + eden + 2 * survivor` is the heap size rounded down to the alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GenerationSizes {
    /// The old generation.
    pub old: usize,
    /// Eden, where mutators allocate.
    pub eden: usize,
    /// Each of the two survivor spaces.
    pub survivor: usize,
}

impl GenerationSizes {
    /// The young generation: eden plus both survivor spaces.
    pub fn young(&self) -> usize {
        self.eden + 2 * self.survivor
    }

    /// The whole heap: old plus young.
    pub fn total(&self) -> usize {
        self.old + self.young()
    }
}

/// `bytes` rounded down to a multiple of [`SPACE_ALIGNMENT`].
const fn align_down(bytes: usize) -> usize {
    bytes - bytes % SPACE_ALIGNMENT
}

/// The configuration an embedder starts from: [`Preset::Optimized`]'s parallel phases
/// (lock-free task queue, adaptive stealing, live termination, futex parking), a heap of
/// [`DEFAULT_HEAP_SIZE`], as many GC threads as [`default_gc_threads`] gives for the usable
/// CPUs, and no research threads: GC threads left to the OS scheduler (`gc_affinity = none`,
/// so no run-queue sampler runs), mutators under CFS, THP as the system has it, no GC log, no
/// records. The heap then runs the VM thread and its GC workers only.
impl Default for GcConfig {
    fn default() -> Self {
        GcConfig {
            gc_affinity: GcAffinity::None,
            ..GcConfig::for_preset(Preset::Optimized)
        }
    }
}

impl GcConfig {
    /// The defaults of `preset`: a 256 MiB heap split 1:2 young:old, survivors young/10, HotSpot's
    /// GC thread count for the usable CPUs ([`default_gc_threads`]), tenuring threshold 7 rising
    /// to at most 15, 32 KiB / 8 KiB young/old PLABs, 64 KiB large-object threshold, adaptive
    /// TLABs, no verification, no GC log and no records file, mutators under CFS (FIFO policies
    /// allowed above 8 usable CPUs when chosen) and no lifespan profiling. The presets share
    /// these values and differ in the parallel-phase switches and the GC thread affinity
    /// (DESIGN.md, "Mechanisms and presets"):
    ///
    /// | switch | vanilla | modern | suo18 | naps | optimized |
    /// | --- | --- | --- | --- | --- | --- |
    /// | `task_queue` | monitor | claim | monitor | lockfree | lockfree |
    /// | `task_affinity` | off | off | on | off | on |
    /// | `steal` | best-of-2 | last-victim | adaptive | best-of-2 | adaptive |
    /// | `termination` | fixed | owst | live | fixed | live |
    /// | `termination_backoff` | hotspot8 | auto | hotspot8 | hotspot8 | auto |
    /// | `parking` | monitor | futex | monitor | futex | futex |
    /// | `dynamic_gc_threads` | no | yes | no | no | no |
    /// | `pin_start` | yes | no | yes | no | no |
    /// | `gc_affinity` | none | none | dynamic | none | dynamic |
    /// | `thp` | system | system | system | system | system |
    /// | `numa` | off | off | off | fragmented | off |
    /// | `gc_log_mode` | sync | async | sync | sync | async |
    pub fn for_preset(preset: Preset) -> GcConfig {
        let phase = match preset {
            Preset::Vanilla => PhasePolicy::VANILLA,
            Preset::Modern => PhasePolicy::MODERN,
            Preset::Suo18 => PhasePolicy::SUO18,
            Preset::Naps => PhasePolicy::NAPS,
            Preset::Optimized => PhasePolicy::OPTIMIZED,
        };
        let (parking, dynamic_gc_threads, pin_start) = match preset {
            // OpenJDK 8: monitor wait/notify_all, a fixed thread count, and every GC thread
            // created on the VM thread's CPU and left to the OS scheduler.
            Preset::Vanilla => (ParkingKind::Monitor, false, true),
            // 000 changed neither parking nor how OpenJDK 8 creates its GC threads.
            Preset::Suo18 => (ParkingKind::Monitor, false, true),
            // 004 §3.1.2: lazy parking on an epoch; NAPS pins its GC threads by node instead
            // (the NUMA layout does that), so they are not created on one CPU.
            Preset::Naps => (ParkingKind::Futex, false, false),
            // HotSpot 17+: semaphore-like parking, a thread count chosen per collection.
            Preset::Modern => (ParkingKind::Futex, true, false),
            // The papers' fixes: lazy futex parking on the collection epoch.
            Preset::Optimized => (ParkingKind::Futex, false, false),
        };
        // Only the papers' fixes move GC threads off overloaded CPUs (000 Algorithm 1); OpenJDK
        // 8 and HotSpot 17+ leave them to the scheduler.
        let gc_affinity = match preset {
            Preset::Vanilla | Preset::Modern | Preset::Naps => GcAffinity::None,
            Preset::Suo18 | Preset::Optimized => GcAffinity::Dynamic,
        };
        // HotSpot 8 and 17 make no madvise call unless -XX:+UseTransparentHugePages is given.
        // `optimized` does not ask for huge pages either, though 002's `dynamic` policy is
        // there to choose: measured side by side (docs/results.md, "Choosing `optimized`"),
        // huge-page advice made the kernel zero (and compact for) 2 MiB pages the first time a
        // collection copied into them, inside the pause, and `optimized`'s GC time on
        // binary-trees 18 went from 0.62x vanilla's to 1.55x.
        let thp = ThpMode::System;
        // 004's NAPS places the young generation one fragment per node and interleaves old
        // (004 §3.2). On a one-node machine that is one fragment per space on the only node,
        // old on that node, and GC workers allowed on all of its CPUs: the ordinary layout, so
        // the preset runs anywhere. The other presets leave pages to first touch.
        let numa = match preset {
            Preset::Naps => NumaLayout::Fragmented,
            _ => NumaLayout::Off,
        };
        GcConfig {
            preset,
            heap_size: DEFAULT_HEAP_SIZE,
            allow_heap_beyond_memory: false,
            young_size: None,
            new_ratio: 2,
            survivor_ratio: 8,
            gc_threads: default_gc_threads(usable_cpu_count()),
            dynamic_gc_threads,
            pin_start,
            vm_thread_cpu: None,
            phase,
            parking,
            gc_affinity,
            // Not FIFO, not adaptive, in any preset: see the field's documentation.
            mutator_sched: MutatorSched::Cfs,
            fifo_cpu_threshold: DEFAULT_FIFO_CPU_THRESHOLD,
            fifo_scope: FifoScope::Mutators,
            thp,
            thp_margin: DEFAULT_THP_MARGIN,
            // Off everywhere, as HotSpot's AlwaysPreTouch is by default.
            pretouch: false,
            numa,
            numa_topology: NumaTopologySpec::Auto,
            lifespans: false,
            lifespan_sample_bytes: crate::telemetry::lifespan::DEFAULT_SAMPLE_INTERVAL as usize,
            max_tenuring_threshold: 15,
            initial_tenuring_threshold: 7,
            target_survivor_ratio: 50,
            tlab_size: None,
            young_plab_size: DEFAULT_YOUNG_PLAB_SIZE,
            old_plab_size: DEFAULT_OLD_PLAB_SIZE,
            large_object_threshold: 64 * KIB,
            safepoint_timeout: Some(DEFAULT_SAFEPOINT_TIMEOUT),
            verify: false,
            gc_log: None,
            // HotSpot 8 writes its log inside the pause; HotSpot 17 has `-Xlog:async`.
            gc_log_mode: match preset {
                Preset::Vanilla | Preset::Suo18 | Preset::Naps => GcLogMode::Sync,
                Preset::Modern | Preset::Optimized => GcLogMode::Async,
            },
            gc_log_buffer: 64 * KIB,
            gc_log_flush_timeout: std::time::Duration::from_secs(1),
            gc_log_compress: false,
            gc_records: None,
            gc_trace: None,
        }
    }

    /// Apply a GC thread setting: a fixed count, or a dynamic pool of the default size.
    pub fn set_gc_threads(&mut self, threads: GcThreads) {
        match threads {
            GcThreads::Fixed(n) => {
                self.gc_threads = n;
                self.dynamic_gc_threads = false;
            }
            GcThreads::Dynamic => {
                self.gc_threads = default_gc_threads(usable_cpu_count());
                self.dynamic_gc_threads = true;
            }
        }
    }

    /// Splits the heap into spaces: young is `young_size`, or `heap_size / (new_ratio + 1)`;
    /// each survivor is `young / (survivor_ratio + 2)`; eden is the rest of young; old is the
    /// rest of the heap. Every size is rounded down to [`SPACE_ALIGNMENT`], and the sizes add up
    /// to the heap size rounded down to it.
    ///
    /// Meaningful for a validated config; for others it does not panic, but the spaces may be
    /// empty or not add up (a young size larger than the heap).
    pub fn generation_sizes(&self) -> GenerationSizes {
        let heap = align_down(self.heap_size);
        let young = match self.young_size {
            Some(young) => young,
            None => heap / (self.new_ratio as usize).saturating_add(1),
        };
        let young = align_down(young.min(heap));
        let survivor = align_down(young / (self.survivor_ratio as usize).saturating_add(2));
        let eden = young - 2 * survivor;
        GenerationSizes {
            old: heap - young,
            eden,
            survivor,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::{StealPolicy, TaskQueueKind, TerminationBackoff, TerminationKind};

    #[test]
    fn presets_parse_case_insensitively_and_display_lowercase() {
        for preset in Preset::ALL {
            assert_eq!(preset.name().parse::<Preset>(), Ok(preset));
            assert_eq!(preset.name().to_uppercase().parse::<Preset>(), Ok(preset));
            assert_eq!(preset.to_string(), preset.name());
        }
        assert_eq!("Optimized".parse::<Preset>(), Ok(Preset::Optimized));
        let err = "fast".parse::<Preset>().unwrap_err().to_string();
        assert!(err.contains("'fast'"), "{err}");
        assert!(
            err.contains("vanilla, modern, suo18, naps, optimized"),
            "{err}"
        );
    }

    #[test]
    fn hotspot_gc_thread_rule() {
        let cpus = [1, 2, 8, 9, 16, 20, 48, 0];
        let expected = [1, 2, 8, 8, 13, 15, 33, 1];
        for (cpus, threads) in cpus.into_iter().zip(expected) {
            assert_eq!(default_gc_threads(cpus), threads, "{cpus} CPUs");
        }
        assert_eq!(default_gc_threads(10_000), MAX_GC_THREADS);
    }

    #[test]
    fn defaults_validate_for_every_preset() {
        assert!(usable_cpu_count() >= 1);
        assert_eq!(Preset::AVAILABLE, &Preset::ALL[..]);
        for preset in Preset::AVAILABLE.iter().copied() {
            let config = GcConfig::for_preset(preset);
            assert_eq!(config.preset, preset);
            assert_eq!(config.heap_size, 256 * MIB);
            assert_eq!(config.gc_threads, default_gc_threads(usable_cpu_count()));
            config.validate().unwrap();
        }
    }

    #[test]
    fn presets_set_the_switches_of_design_md() {
        use {ParkingKind as P, StealPolicy as S, TaskQueueKind as Q, TerminationKind as T};
        // (task queue, task affinity, steal, termination, parking, dynamic GC threads,
        // pin start, GC affinity, phase policy), as in the table of `for_preset`.
        #[rustfmt::skip]
        let expected = [
            (Preset::Vanilla, (Q::Monitor, false, S::BestOf2, T::Fixed, P::Monitor, false, true, GcAffinity::None, PhasePolicy::VANILLA)),
            (Preset::Modern, (Q::Claim, false, S::LastVictim, T::Owst, P::Futex, true, false, GcAffinity::None, PhasePolicy::MODERN)),
            (Preset::Suo18, (Q::Monitor, true, S::Adaptive, T::Live, P::Monitor, false, true, GcAffinity::Dynamic, PhasePolicy::SUO18)),
            (Preset::Naps, (Q::LockFree, false, S::BestOf2, T::Fixed, P::Futex, false, false, GcAffinity::None, PhasePolicy::NAPS)),
            (Preset::Optimized, (Q::LockFree, true, S::Adaptive, T::Live, P::Futex, false, false, GcAffinity::Dynamic, PhasePolicy::OPTIMIZED)),
        ];
        for (preset, switches) in expected {
            let c = GcConfig::for_preset(preset);
            let p = c.phase;
            let got = (
                p.task_queue,
                p.task_affinity,
                p.steal,
                p.termination,
                c.parking,
                c.dynamic_gc_threads,
                c.pin_start,
                c.gc_affinity,
                p,
            );
            assert_eq!(got, switches, "{preset}");
        }
        assert_eq!(PhasePolicy::OPTIMIZED, PhasePolicy::default());
        // OpenJDK 8, 000 and 004 wait in HotSpot 8's termination loop; modern and optimized in
        // their protocol's own.
        for preset in Preset::ALL {
            let expected = match preset {
                Preset::Vanilla | Preset::Suo18 | Preset::Naps => TerminationBackoff::HotSpot8,
                _ => TerminationBackoff::Auto,
            };
            let c = GcConfig::for_preset(preset);
            assert_eq!(c.phase.termination_backoff, expected, "{preset}");
            let numa = if preset == Preset::Naps {
                NumaLayout::Fragmented
            } else {
                NumaLayout::Off
            };
            assert_eq!(c.numa, numa, "{preset}");
        }

        // The phase policy follows overrides.
        let mut config = GcConfig::for_preset(Preset::Vanilla);
        config.phase.steal = StealPolicy::Adaptive;
        config.phase.task_affinity = true;
        let policy = config.phase;
        assert_eq!(policy.steal, StealPolicy::Adaptive);
        assert!(policy.task_affinity);
        assert_eq!(policy.task_queue, TaskQueueKind::Monitor);
    }

    #[test]
    fn os_switches_have_the_same_safe_defaults_in_every_preset() {
        for preset in Preset::ALL {
            let config = GcConfig::for_preset(preset);
            assert_eq!(config.mutator_sched, MutatorSched::Cfs, "{preset}");
            assert_eq!(config.fifo_cpu_threshold, 8, "{preset}");
            assert!(!config.lifespans, "{preset}");
        }
    }

    #[test]
    fn default_generation_sizes() {
        let sizes = GcConfig::for_preset(Preset::Optimized).generation_sizes();
        // young = 256M / 3 = 87381.33K -> 87360K; survivor = 87360K / 10 -> 8704K.
        assert_eq!(sizes.survivor, 8704 * KIB);
        assert_eq!(sizes.eden, (87360 - 2 * 8704) * KIB);
        assert_eq!(sizes.young(), 87360 * KIB);
        assert_eq!(sizes.old, 256 * MIB - 87360 * KIB);
        assert_eq!(sizes.total(), 256 * MIB);
    }

    #[test]
    fn generation_sizes_add_up_and_are_aligned() {
        let mut config = GcConfig::for_preset(Preset::Optimized);
        let heaps = [
            MIN_HEAP,
            5 * MIB + 12345,
            100 * MIB + 1,
            256 * MIB,
            3 * GIB + 7,
        ];
        for heap in heaps {
            for new_ratio in [1, 2, 3, 7, 100] {
                for survivor_ratio in [1, 2, 8, 31, 1000] {
                    for young in [None, Some(MIB + 3), Some(heap / 2)] {
                        config.heap_size = heap;
                        config.new_ratio = new_ratio;
                        config.survivor_ratio = survivor_ratio;
                        config.young_size = young;
                        let s = config.generation_sizes();
                        assert_eq!(s.total(), align_down(heap), "{config:?} -> {s:?}");
                        for space in [s.old, s.eden, s.survivor] {
                            assert_eq!(space % SPACE_ALIGNMENT, 0, "{config:?} -> {s:?}");
                        }
                        assert!(s.eden >= s.survivor, "{config:?} -> {s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn explicit_young_size_is_used() {
        let mut config = GcConfig::for_preset(Preset::Optimized);
        config.heap_size = 64 * MIB;
        config.young_size = Some(20 * MIB);
        let s = config.generation_sizes();
        assert_eq!(s.young(), 20 * MIB);
        assert_eq!(s.survivor, align_down(20 * MIB / 10));
        assert_eq!(s.old, 44 * MIB);
    }

    #[test]
    fn generation_sizes_do_not_panic_on_invalid_configs() {
        let mut config = GcConfig::for_preset(Preset::Optimized);
        config.heap_size = 0;
        config.young_size = Some(usize::MAX);
        config.new_ratio = u32::MAX;
        config.survivor_ratio = u32::MAX;
        let s = config.generation_sizes();
        assert_eq!(s.total(), 0);
        config.heap_size = usize::MAX;
        let s = config.generation_sizes();
        assert_eq!(s.total(), align_down(usize::MAX));
    }
}
