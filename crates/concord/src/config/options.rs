//! The option table and the [`ConfigBuilder`] that applies it.
//!
//! One row per option: its key (kebab-case, the CLI flag without `--`), its environment variable
//! (`CONCORD_` + upper snake case), the kind of value, a doc line, and a setter that parses and
//! range-checks the text into a [`GcConfig`] field or returns the reason it cannot.
//!
//! The builder records what each source says — TOML files, `CONCORD_*` variables, CLI flags —
//! and resolves them in [`ConfigBuilder::build`], weakest to strongest (TOML < environment < CLI),
//! whatever order they were applied in. The preset is resolved first, from the strongest source
//! that names one, and the other keys are applied on top of that preset's defaults. Every value
//! given is parsed, even one a stronger source overrides: a bad value is always an error.

use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use super::validate::{
    out_of_range, size_out_of_range, size_too_small, FIFO_CPU_THRESHOLD_RANGE, GC_THREADS_RANGE,
    HEAP_RANGE, MIN_LARGE_OBJECT_THRESHOLD, MIN_TLAB_SIZE, NEW_RATIO_RANGE, PLAB_RANGE,
    SURVIVOR_RATIO_RANGE, TARGET_SURVIVOR_RANGE, TENURING_RANGE,
};
use super::{
    parse_size, ConfigError, ConfigKey, GcConfig, GcLogMode, NamedFile, Origin, Preset, SizeError,
};
use crate::os::numa::NumaLayout;
use crate::os::policy::{FifoScope, GcAffinity, MutatorSched};
use crate::os::thp::ThpMode;
use crate::parallel::{
    ParkingKind, StealPolicy, TaskQueueKind, TerminationBackoff, TerminationKind,
};

/// `CONCORD_*` environment variables that are not configuration keys and that
/// [`ConfigBuilder::apply_env`] therefore skips instead of rejecting: `CONCORD_LOG` (log filter),
/// `CONCORD_CONFIG` (where a front end may look for the TOML file), `CONCORD_CHECK_ARGS`
/// (the `concord` command only checks its arguments), `CONCORD_REQUIRE_TEST_TOOLS` (read
/// by the build scripts: CI sets it for the whole test run, so every test sees it) and
/// `CONCORD_PAPER_ENTRY` (`concord paper ID` names the entry its experiment reproduces).
pub const NON_CONFIG_ENV_VARS: &[&str] = &[
    "CONCORD_LOG",
    "CONCORD_CONFIG",
    "CONCORD_CHECK_ARGS",
    "CONCORD_REQUIRE_TEST_TOOLS",
    "CONCORD_PAPER_ENTRY",
];

/// The prefix of every Concord environment variable.
const ENV_PREFIX: &str = "CONCORD_";

/// The preset of a [`ConfigBuilder`] that no source names.
const DEFAULT_PRESET: Preset = Preset::Optimized;

/// What kind of value an option takes; used in messages about TOML values of the wrong type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueKind {
    /// A preset name.
    Preset,
    /// A byte size.
    Size,
    /// A byte size, or `auto` for the computed default.
    OptionalSize,
    /// A whole number.
    Integer,
    /// A GC thread count, or `dynamic`.
    ThreadCount,
    /// The name of one of a switch's values.
    Switch(Switch),
    /// A boolean.
    Bool,
    /// A file path.
    Path,
    /// A NUMA topology: `auto` or nodes of CPU lists.
    NumaTopology,
    /// A CPU number, or `none`.
    OptionalCpu,
}

impl ValueKind {
    /// What a value of this kind looks like, for messages.
    fn expected(self) -> String {
        match self {
            ValueKind::Preset => "one of vanilla, modern, suo18, naps, optimized".to_string(),
            ValueKind::Size => "a size such as \"64m\" or a whole number of bytes".to_string(),
            ValueKind::OptionalSize => {
                "a size such as \"64m\", a whole number of bytes, or \"auto\"".to_string()
            }
            ValueKind::Integer => "a whole number".to_string(),
            ValueKind::ThreadCount => "a whole number or \"dynamic\"".to_string(),
            ValueKind::Switch(switch) => format!("one of {}", switch.allowed()),
            ValueKind::Bool => "true or false".to_string(),
            ValueKind::Path => "a file path string".to_string(),
            ValueKind::NumaTopology => {
                "\"auto\" or nodes separated by '/', each a CPU list (\"0/1\")".to_string()
            }
            ValueKind::OptionalCpu => "a CPU number or \"none\"".to_string(),
        }
    }
}

/// The switches that take one of a few names (the policy mutator-sched may carry an argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Switch {
    /// [`TaskQueueKind`].
    TaskQueue,
    /// [`StealPolicy`].
    Steal,
    /// [`TerminationKind`].
    Termination,
    /// [`TerminationBackoff`].
    TerminationBackoff,
    /// [`ParkingKind`].
    Parking,
    /// [`GcAffinity`].
    GcAffinity,
    /// [`MutatorSched`].
    MutatorSched,
    /// [`FifoScope`].
    FifoScope,
    /// [`GcLogMode`].
    GcLogMode,
    /// [`ThpMode`].
    Thp,
    /// [`NumaLayout`].
    Numa,
}

impl Switch {
    /// The allowed names, comma-separated.
    fn allowed(self) -> String {
        match self {
            Switch::TaskQueue => TaskQueueKind::allowed(),
            Switch::Steal => StealPolicy::allowed(),
            Switch::Termination => TerminationKind::allowed(),
            Switch::TerminationBackoff => TerminationBackoff::allowed(),
            Switch::Parking => ParkingKind::allowed(),
            Switch::GcAffinity => GcAffinity::allowed(),
            Switch::MutatorSched => MutatorSched::ALLOWED.to_string(),
            Switch::FifoScope => FifoScope::allowed(),
            Switch::GcLogMode => GcLogMode::ALLOWED.to_string(),
            Switch::Thp => ThpMode::allowed(),
            Switch::Numa => NumaLayout::allowed(),
        }
    }
}

/// Parses a text and stores it in one field of a config, or says why it cannot.
type Setter = fn(&mut GcConfig, &str) -> Result<(), String>;

/// One row of the option table.
#[derive(Debug)]
struct OptionSpec {
    /// Kebab-case key: the CLI flag without `--`, and the TOML key (snake case also accepted).
    key: &'static str,
    /// The environment variable: `CONCORD_` + the key in upper snake case.
    env: &'static str,
    /// The kind of value.
    kind: ValueKind,
    /// One line for `--help` and the README.
    doc: &'static str,
    /// Parses, range-checks and stores the value.
    set: Setter,
}

/// Every option, in the order `--help` shows them.
static OPTIONS: [OptionSpec; 42] = [
    OptionSpec {
        key: "preset",
        env: "CONCORD_PRESET",
        kind: ValueKind::Preset,
        doc: "Policy preset whose defaults the other options override: vanilla, modern or \
              optimized (default optimized).",
        set: |c, v| {
            c.preset = parse_preset(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "heap",
        env: "CONCORD_HEAP",
        kind: ValueKind::Size,
        doc: "Maximum heap size, young plus old, e.g. 512m or 2g (4m..=1024g, default 256m).",
        set: |c, v| {
            c.heap_size = size_in(v, &HEAP_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "allow-heap-beyond-memory",
        env: "CONCORD_ALLOW_HEAP_BEYOND_MEMORY",
        kind: ValueKind::Bool,
        doc: "Build a heap larger than the memory the process can have (physical memory, or \
              the cgroup memory limit if smaller), which is otherwise refused: true/false \
              (default false).",
        set: |c, v| {
            c.allow_heap_beyond_memory = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "young",
        env: "CONCORD_YOUNG",
        kind: ValueKind::OptionalSize,
        doc: "Young generation size, eden plus two survivors; must leave at least 1m of old \
              generation (default auto: heap / (new-ratio + 1)).",
        set: |c, v| {
            c.young_size = optional_size(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "new-ratio",
        env: "CONCORD_NEW_RATIO",
        kind: ValueKind::Integer,
        doc: "Old:young size ratio when young is auto, like HotSpot NewRatio (1..=100, \
              default 2).",
        set: |c, v| {
            c.new_ratio = int_in(v, &NEW_RATIO_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "survivor-ratio",
        env: "CONCORD_SURVIVOR_RATIO",
        kind: ValueKind::Integer,
        doc: "Eden:survivor size ratio; each survivor is young / (ratio + 2), like HotSpot \
              SurvivorRatio (1..=1000, default 8).",
        set: |c, v| {
            c.survivor_ratio = int_in(v, &SURVIVOR_RATIO_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-threads",
        env: "CONCORD_GC_THREADS",
        kind: ValueKind::ThreadCount,
        doc: "Number of GC worker threads, 1..=256, or dynamic: a pool of the default size from \
              which each collection picks its own number of active workers (default from usable \
              CPUs n: n if n <= 8, else 3 + 5n/8; dynamic for preset modern).",
        set: |c, v| {
            c.set_gc_threads(v.parse()?);
            Ok(())
        },
    },
    OptionSpec {
        key: "pin-start",
        env: "CONCORD_PIN_START",
        kind: ValueKind::Bool,
        doc: "Create every GC thread on one CPU (the first the heap may use) and leave them to \
              the OS from there, as HotSpot's are born together where the VM creates them \
              (default true for preset vanilla, else false).",
        set: |c, v| {
            c.pin_start = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "vm-thread-cpu",
        env: "CONCORD_VM_THREAD_CPU",
        kind: ValueKind::OptionalCpu,
        doc: "Pin the VM thread (which stops the world and runs each collection's serial \
              parts) to this CPU, or none to leave it to the OS; the heap refuses a CPU it may \
              not use (default none). For measurements that fix where every thread runs, with \
              gc-affinity static.",
        set: |c, v| {
            c.vm_thread_cpu = match v.trim() {
                "none" => None,
                cpu => Some(int_in(cpu, &(0..=4095)).map_err(|_| {
                    "is not a CPU (allowed: a CPU number 0..=4095, or none)".to_string()
                })?),
            };
            Ok(())
        },
    },
    OptionSpec {
        key: "task-queue",
        env: "CONCORD_TASK_QUEUE",
        kind: ValueKind::Switch(Switch::TaskQueue),
        doc: "Where GC workers get root tasks: monitor (one FIFO behind an unfair monitor), \
              claim (atomic claiming) or lockfree (lock-free queue) (default per preset: \
              monitor, claim, lockfree).",
        set: |c, v| {
            c.phase.task_queue = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "task-affinity",
        env: "CONCORD_TASK_AFFINITY",
        kind: ValueKind::Bool,
        doc: "Root tasks prefer the worker they are tagged with: on/off (default on for preset \
              optimized, else off).",
        set: |c, v| {
            c.phase.task_affinity = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "steal",
        env: "CONCORD_STEAL",
        kind: ValueKind::Switch(Switch::Steal),
        doc: "How a thief picks its victim: best-of-2, last-victim or adaptive (default per \
              preset: best-of-2, last-victim, adaptive).",
        set: |c, v| {
            c.phase.steal = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "termination",
        env: "CONCORD_TERMINATION",
        kind: ValueKind::Switch(Switch::Termination),
        doc: "Termination protocol: fixed (after 2N failed steals), owst (one spinning master) \
              or live (after 2N_live failed steals) (default per preset: fixed, owst, live, \
              live for suo18, fixed for naps).",
        set: |c, v| {
            c.phase.termination = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "termination-backoff",
        env: "CONCORD_TERMINATION_BACKOFF",
        kind: ValueKind::Switch(Switch::TerminationBackoff),
        doc: "How a worker waits inside the termination protocol: auto (the protocol's own: \
              hotspot8 for fixed, concord for live and owst), hotspot8 (HotSpot 8's spin/yield/\
              sleep loop) or concord (a few spins, 500 yields, then 50 us sleeps) (default per \
              preset: hotspot8 for vanilla, suo18 and naps, auto for modern and optimized).",
        set: |c, v| {
            c.phase.termination_backoff = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "parking",
        env: "CONCORD_PARKING",
        kind: ValueKind::Switch(Switch::Parking),
        doc: "How idle GC workers sleep: monitor (wait/notify_all) or futex (lazy parking on a \
              collection epoch) (default per preset: monitor, futex, futex).",
        set: |c, v| {
            c.parking = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-affinity",
        env: "CONCORD_GC_AFFINITY",
        kind: ValueKind::Switch(Switch::GcAffinity),
        doc: "Where GC worker threads run: none (left to the OS), static (worker i pinned to the \
              i-th usable CPU) or dynamic (at the start of each collection a worker on an \
              overloaded CPU moves to an underloaded one, 000 Algorithm 1) (default per preset: \
              none, none, dynamic).",
        set: |c, v| {
            c.gc_affinity = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "mutator-sched",
        env: "CONCORD_MUTATOR_SCHED",
        kind: ValueKind::Switch(Switch::MutatorSched),
        doc: "How mutator threads are scheduled: cfs, fifo (SCHED_FIFO), profile:PATH (choose \
              from a per-thread CPU-time profile, recorded there if missing, 001 Algorithm 1), \
              adaptive[:SECONDS] (001 Algorithm 2 as listed: start under FIFO, sample the live \
              mutator thread ids every 2 s or SECONDS, switch to CFS for good once a thread is \
              seen at two samples) or adaptive-majority[:SECONDS] (start under CFS, re-decide at \
              every sample: FIFO when most ids are new, CFS when mostly the same) (default cfs \
              in every preset: FIFO can starve an embedding program's other threads, so it is \
              opt-in).",
        set: |c, v| {
            c.mutator_sched = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "fifo-scope",
        env: "CONCORD_FIFO_SCOPE",
        kind: ValueKind::Switch(Switch::FifoScope),
        doc: "The threads a mutator-sched policy puts under SCHED_FIFO when it chooses FIFO: \
              mutators, or all (also the VM thread and the GC workers, as 001 ran the whole JVM \
              under FIFO). All at one priority; waiting GC workers yield to each other. The \
              kernel's real-time throttle (/proc/sys/kernel/sched_rt_runtime_us, 950000 of \
              every 1000000 us by default) keeps 5 % of each CPU for other threads; with it off \
              (-1), concord run refuses all when the GC threads, the VM thread and the mutators \
              outnumber the usable CPUs (default mutators).",
        set: |c, v| {
            c.fifo_scope = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "fifo-cpu-threshold",
        env: "CONCORD_FIFO_CPU_THRESHOLD",
        kind: ValueKind::Integer,
        doc: "The profile and adaptive mutator-sched policies may choose FIFO only with more \
              usable CPUs than this, as in 001 §4.4 (0..=4096, default 8).",
        set: |c, v| {
            c.fifo_cpu_threshold = int_in(v, &FIFO_CPU_THRESHOLD_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "thp",
        env: "CONCORD_THP",
        kind: ValueKind::Switch(Switch::Thp),
        doc: "Transparent huge pages for the heap: system (no madvise call, the system setting \
              decides), never (MADV_NOHUGEPAGE), madvise or always (MADV_HUGEPAGE on a 2 MiB \
              aligned heap), or dynamic (huge pages only while MemAvailable is at least the \
              heap's remaining footprint plus thp-margin, checked at launch and every 2 s, 002 \
              §3) (default per preset: system, system, dynamic).",
        set: |c, v| {
            c.thp = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "thp-margin",
        env: "CONCORD_THP_MARGIN",
        kind: ValueKind::Size,
        doc: "Available memory dynamic THP wants beyond the heap's footprint before it asks \
              for huge pages (default 1g).",
        set: |c, v| {
            c.thp_margin = size(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "pretouch",
        env: "CONCORD_PRETOUCH",
        kind: ValueKind::Bool,
        doc: "Commit the whole heap at start and fault in every page of it and of its side \
              tables on the GC workers (HotSpot's AlwaysPreTouch), so first-touch page faults \
              leave the pauses: true/false, yes/no, on/off, 1/0 (default false in every preset).",
        set: |c, v| {
            c.pretouch = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "numa",
        env: "CONCORD_NUMA",
        kind: ValueKind::Switch(Switch::Numa),
        doc: "NUMA layout of the heap (004 §3.2): off (first touch, workers not placed by node), \
              interleaved (eden, survivors and old with pages round-robin over the nodes; GC \
              worker i pinned to the CPUs of node i % nodes), fragmented (eden and survivors one \
              fragment per node, each of the whole space's virtual size; TLABs and PLABs from \
              the allocating thread's node; old interleaved) or segregated (fragmented, plus \
              node-local stealing and scan messages between nodes in young collections; at \
              least one GC thread per node) (default off in every preset).",
        set: |c, v| {
            c.numa = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "numa-topology",
        env: "CONCORD_NUMA_TOPOLOGY",
        kind: ValueKind::NumaTopology,
        doc: "The NUMA nodes the layout uses: auto (the machine's, from sysfs) or a synthetic \
              spec, nodes separated by '/', each a CPU list of usable CPUs, e.g. 0/1 or \
              0-7/8-15; a synthetic node's memory is an address range of the heap, all \
              physically on the real node (default auto).",
        set: |c, v| {
            c.numa_topology = v
                .parse()
                .map_err(|e: crate::os::numa::TopologyError| e.to_string())?;
            Ok(())
        },
    },
    OptionSpec {
        key: "max-tenuring-threshold",
        env: "CONCORD_MAX_TENURING_THRESHOLD",
        kind: ValueKind::Integer,
        doc: "Most scavenges an object survives before promotion, like HotSpot \
              MaxTenuringThreshold (0..=15, default 15).",
        set: |c, v| {
            c.max_tenuring_threshold = int_in(v, &TENURING_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "initial-tenuring-threshold",
        env: "CONCORD_INITIAL_TENURING_THRESHOLD",
        kind: ValueKind::Integer,
        doc: "Tenuring threshold until survivor occupancy has been measured (0..=15, at most \
              max-tenuring-threshold, default 7).",
        set: |c, v| {
            c.initial_tenuring_threshold = int_in(v, &TENURING_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "target-survivor-ratio",
        env: "CONCORD_TARGET_SURVIVOR_RATIO",
        kind: ValueKind::Integer,
        doc: "Percentage of a survivor space the tenuring threshold aims to fill (1..=100, \
              default 50).",
        set: |c, v| {
            c.target_survivor_ratio = int_in(v, &TARGET_SURVIVOR_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "tlab-size",
        env: "CONCORD_TLAB_SIZE",
        kind: ValueKind::OptionalSize,
        doc: "Fixed TLAB size (1k..=half of eden, rounded down to whole 8-byte words; default \
              auto: sized from eden and the number of mutators).",
        set: |c, v| {
            c.tlab_size = optional_size(v)?;
            if c.tlab_size.is_some_and(|size| size < MIN_TLAB_SIZE) {
                return Err(size_too_small(MIN_TLAB_SIZE));
            }
            Ok(())
        },
    },
    OptionSpec {
        key: "young-plab-size",
        env: "CONCORD_YOUNG_PLAB_SIZE",
        kind: ValueKind::Size,
        doc: "Promotion-local buffer size for survivor space (1k..=1m, rounded down to whole \
              8-byte words as TLAB sizes are; default 32k).",
        set: |c, v| {
            c.young_plab_size = size_in(v, &PLAB_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "old-plab-size",
        env: "CONCORD_OLD_PLAB_SIZE",
        kind: ValueKind::Size,
        doc: "Promotion-local buffer size for the old generation (1k..=1m, rounded down to \
              whole 8-byte words as TLAB sizes are; default 8k).",
        set: |c, v| {
            c.old_plab_size = size_in(v, &PLAB_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "large-object-threshold",
        env: "CONCORD_LARGE_OBJECT_THRESHOLD",
        kind: ValueKind::Size,
        doc: "Objects at least this large are allocated directly in the old generation \
              (at least 1k, default 64k).",
        set: |c, v| {
            let size = size(v)?;
            if size < MIN_LARGE_OBJECT_THRESHOLD {
                return Err(size_too_small(MIN_LARGE_OBJECT_THRESHOLD));
            }
            c.large_object_threshold = size;
            Ok(())
        },
    },
    OptionSpec {
        key: "safepoint-timeout",
        env: "CONCORD_SAFEPOINT_TIMEOUT",
        kind: ValueKind::Integer,
        doc: "Milliseconds a collection waits for every attached thread to reach its \
              safepoint before it names the threads still running on stderr, once per \
              safepoint (a thread blocked outside Mutator::blocking holds every thread up); 0 \
              never reports (0..=3600000, default 5000).",
        set: |c, v| {
            let ms = int_in(v, &(0..=3_600_000u64))?;
            c.safepoint_timeout = (ms > 0).then(|| std::time::Duration::from_millis(ms));
            Ok(())
        },
    },
    OptionSpec {
        key: "verify",
        env: "CONCORD_VERIFY",
        kind: ValueKind::Bool,
        doc: "Verify the whole heap after every collection: true/false, yes/no, on/off, 1/0 \
              (default false).",
        set: |c, v| {
            c.verify = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-log",
        env: "CONCORD_GC_LOG",
        kind: ValueKind::Path,
        doc: "Write a GC log in HotSpot unified-logging format to this file (default none).",
        set: |c, v| {
            c.gc_log = Some(path(v)?);
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-log-mode",
        env: "CONCORD_GC_LOG_MODE",
        kind: ValueKind::Switch(Switch::GcLogMode),
        doc: "How the GC log is written: sync (by the VM thread inside the pause, which then \
              includes the write, as HotSpot 8) or async (through a bounded buffer by a writer \
              thread; lines are dropped and counted when it is full, as HotSpot 17's \
              -Xlog:async) (default vanilla sync, modern and optimized async).",
        set: |c, v| {
            c.gc_log_mode = v.parse()?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-log-buffer",
        env: "CONCORD_GC_LOG_BUFFER",
        kind: ValueKind::Size,
        doc: "Bytes of lines an async GC log buffers before it drops them (1k..=64m, default \
              64k).",
        set: |c, v| {
            c.gc_log_buffer = size_in(v, &GC_LOG_BUFFER_RANGE)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-log-flush-timeout",
        env: "CONCORD_GC_LOG_FLUSH_TIMEOUT",
        kind: ValueKind::Integer,
        doc: "Milliseconds an async GC log's writer gets at exit to write what is buffered; \
              lines still unwritten then count as dropped (0..=60000, default 1000).",
        set: |c, v| {
            c.gc_log_flush_timeout = std::time::Duration::from_millis(int_in(v, &(0..=60_000u64))?);
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-log-compress",
        env: "CONCORD_GC_LOG_COMPRESS",
        kind: ValueKind::Bool,
        doc: "Write the GC log gzip-compressed (read it with zcat or gzip -dc; concord \
              diagnose reads it as is): each collection's lines end in a sync flush, so the \
              log is readable up to the last collection even if the process dies; the stream \
              is finished at exit: true/false (default false).",
        set: |c, v| {
            c.gc_log_compress = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-records",
        env: "CONCORD_GC_RECORDS",
        kind: ValueKind::Path,
        doc: "Write one JSON line per collection (phases, per-worker counters) to this file; \
              the concord command writes it at exit (default none).",
        set: |c, v| {
            c.gc_records = Some(path(v)?);
            Ok(())
        },
    },
    OptionSpec {
        key: "gc-trace",
        env: "CONCORD_GC_TRACE",
        kind: ValueKind::Path,
        doc: "Record the parallel work of every collection (root tasks; every object a young \
              collection copies or a full collection marks, with its size and references) in \
              this binary file, for the simulator; slows collections while on (default none).",
        set: |c, v| {
            c.gc_trace = Some(path(v)?);
            Ok(())
        },
    },
    OptionSpec {
        key: "lifespans",
        env: "CONCORD_LIFESPANS",
        kind: ValueKind::Bool,
        doc: "Profile object lifespans (bytes allocated between an object's allocation and its \
              death, 001 §2) and report their histogram: true/false (default false).",
        set: |c, v| {
            c.lifespans = parse_bool(v)?;
            Ok(())
        },
    },
    OptionSpec {
        key: "lifespan-sample-bytes",
        env: "CONCORD_LIFESPAN_SAMPLE_BYTES",
        kind: ValueKind::Size,
        doc: "With lifespans: mean bytes of a mutator's allocation between two sampled objects \
              (0..=1g; 0 samples every object, and every allocation then takes the slow path; \
              default 64k). Deaths are seen at the collection that finds the object dead, so a \
              young object's lifespan is known to within the young generation's size: a smaller \
              young generation gives a finer resolution at the price of more collections.",
        set: |c, v| {
            c.lifespan_sample_bytes = size_in(v, &LIFESPAN_SAMPLE_RANGE)?;
            Ok(())
        },
    },
];

/// Allowed `lifespan-sample-bytes` values.
const LIFESPAN_SAMPLE_RANGE: RangeInclusive<usize> = 0..=1 << 30;

/// `(key, environment variable, doc)` of every option, in `--help` order, for the README and
/// `--help`.
pub fn option_docs() -> impl Iterator<Item = (&'static str, &'static str, &'static str)> {
    OPTIONS.iter().map(|o| (o.key, o.env, o.doc))
}

/// The option with this key, written kebab-case or snake_case.
fn find_option(key: &str) -> Option<&'static OptionSpec> {
    let kebab = key.replace('_', "-");
    OPTIONS.iter().find(|o| o.key == kebab)
}

/// The environment variable of the canonical key `key`.
pub(super) fn env_name_of(key: &str) -> String {
    match OPTIONS.iter().find(|o| o.key == key) {
        Some(option) => option.env.to_string(),
        None => format!("{ENV_PREFIX}{}", key.replace('-', "_").to_ascii_uppercase()),
    }
}

/// `preset, heap, young, ...`
fn known_keys() -> String {
    OPTIONS.iter().map(|o| o.key).collect::<Vec<_>>().join(", ")
}

// ---- value parsers; each error is a reason that follows the quoted value ----

/// A preset name.
fn parse_preset(text: &str) -> Result<Preset, String> {
    text.parse().map_err(|_| {
        "is not a preset (allowed: vanilla, modern, suo18, naps, optimized)".to_string()
    })
}

/// The sizes `gc-log-buffer` allows.
const GC_LOG_BUFFER_RANGE: RangeInclusive<usize> = 1024..=64 * 1024 * 1024;

/// A size.
fn size(text: &str) -> Result<usize, String> {
    parse_size(text).map_err(|e| format!("is not a size ({e})"))
}

/// A size in `range`.
fn size_in(text: &str, range: &RangeInclusive<usize>) -> Result<usize, String> {
    // A number too long for 64 bits is out of the range like any other too large one.
    if parse_size(text) == Err(SizeError::Overflow) {
        return Err(size_out_of_range(range));
    }
    let size = size(text)?;
    if range.contains(&size) {
        Ok(size)
    } else {
        Err(size_out_of_range(range))
    }
}

/// A size, or `auto` (any case) for `None`.
fn optional_size(text: &str) -> Result<Option<usize>, String> {
    if text.trim().eq_ignore_ascii_case("auto") {
        return Ok(None);
    }
    size(text).map(Some)
}

/// A whole number in `range`.
fn int_in<T>(text: &str, range: &RangeInclusive<T>) -> Result<T, String>
where
    T: TryFrom<i128> + PartialOrd + std::fmt::Display,
{
    let Ok(number) = text.trim().parse::<i128>() else {
        return Err(format!(
            "is not a whole number (allowed: {}..={})",
            range.start(),
            range.end()
        ));
    };
    T::try_from(number)
        .ok()
        .filter(|n| range.contains(n))
        .ok_or_else(|| out_of_range(range))
}

/// A GC thread count in [`GC_THREADS_RANGE`] (`dynamic` is handled by the caller).
pub(super) fn thread_count(text: &str) -> Result<usize, String> {
    if text.trim().parse::<i128>().is_err() {
        return Err(format!(
            "is not a whole number or dynamic (allowed: {}..={}, dynamic)",
            GC_THREADS_RANGE.start(),
            GC_THREADS_RANGE.end()
        ));
    }
    int_in(text, &GC_THREADS_RANGE)
}

/// A boolean as configuration values and flags spell it: true/false, yes/no, on/off, 1/0, any
/// case.
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err("is not a boolean (allowed: true, false, yes, no, on, off, 1, 0)".to_string()),
    }
}

/// A non-empty path.
fn path(text: &str) -> Result<PathBuf, String> {
    if text.is_empty() {
        Err("is empty (expected a file path)".to_string())
    } else {
        Ok(PathBuf::from(text))
    }
}

// ---- the builder ----

/// One value given by one source.
#[derive(Clone, Debug)]
struct Setting {
    /// The option it sets.
    option: &'static OptionSpec,
    /// The key as written and where.
    key: ConfigKey,
    /// The value as written (TOML integers and booleans as their text).
    value: String,
}

impl Setting {
    /// Runs the option's setter on `config`, naming key and value on failure.
    fn apply(&self, config: &mut GcConfig) -> Result<(), ConfigError> {
        (self.option.set)(config, &self.value).map_err(|reason| self.invalid(reason))
    }

    /// The error for this setting's value, for `reason`.
    fn invalid(&self, reason: String) -> ConfigError {
        ConfigError::InvalidValue {
            key: self.key.clone(),
            value: self.value.clone(),
            reason,
        }
    }
}

/// The largest configuration file read, bytes: a file of keys is a few kilobytes, and a
/// larger one (or an endless device such as `/dev/zero`) is refused before it fills memory.
pub const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The text of the configuration file `path`, read once (it may be a pipe such as
/// `/dev/stdin`). Only a regular file or a pipe is read, and at most
/// [`MAX_CONFIG_FILE_BYTES`] of it: a device, a directory or a longer file is an error saying
/// what it is and what is allowed.
pub fn read_config_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::FileTypeExt;
    let refused = |what: &str| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{what} (allowed: a regular file or a pipe of at most {})",
                super::format_size(MAX_CONFIG_FILE_BYTES as usize)
            ),
        )
    };
    let kind = std::fs::metadata(path)?.file_type();
    if !(kind.is_file() || kind.is_fifo()) {
        let what = if kind.is_dir() {
            "a directory"
        } else if kind.is_char_device() {
            "a character device"
        } else if kind.is_block_device() {
            "a block device"
        } else {
            "a socket"
        };
        return Err(refused(&format!("it is {what}, not a regular file")));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_CONFIG_FILE_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_FILE_BYTES {
        return Err(refused("it is longer than a configuration file can be"));
    }
    String::from_utf8(bytes).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "it is not UTF-8 text (allowed: a TOML file)",
        )
    })
}

/// Collects configuration from TOML files, `CONCORD_*` environment variables and CLI flags, and
/// builds a validated [`GcConfig`] from them.
///
/// Strength is CLI > environment > TOML > preset defaults, whatever order the sources are
/// applied in; within one source, the value applied last wins. [`ConfigBuilder::build`] resolves
/// the preset first, then applies the other keys on top of its defaults, then validates.
///
/// ```ignore
/// let mut builder = ConfigBuilder::new();
/// builder.apply_toml_file("concord.toml")?;
/// builder.apply_process_env()?;
/// builder.set_cli("heap", "512m")?;
/// let config = builder.build()?;
/// ```
#[derive(Clone, Debug, Default)]
pub struct ConfigBuilder {
    /// Values from TOML files, in the order read.
    toml: Vec<Setting>,
    /// Values from `CONCORD_*` variables.
    env: Vec<Setting>,
    /// Values from CLI flags, in the order given.
    cli: Vec<Setting>,
}

impl ConfigBuilder {
    /// A builder with nothing set: building it now gives the `optimized` preset's defaults.
    pub fn new() -> ConfigBuilder {
        ConfigBuilder::default()
    }

    /// Reads a TOML configuration file; see [`ConfigBuilder::apply_toml_str`]. Messages name the
    /// file as `path` displays.
    pub fn apply_toml_file(&mut self, path: impl AsRef<Path>) -> Result<(), ConfigError> {
        let path = path.as_ref();
        let text = read_config_file(path).map_err(|source| ConfigError::ReadFile {
            path: path.to_path_buf(),
            source,
        })?;
        self.apply_toml_str(&text, &path.display().to_string())
    }

    /// Records the keys of a TOML document; `origin_name` names it in messages (usually its
    /// path). Keys are option keys in kebab-case or snake_case (`young-plab-size` or
    /// `young_plab_size`), at the top level; values are strings, integers or booleans. `preset`
    /// sets the preset whose defaults the rest override.
    ///
    /// Fails at once on invalid TOML, an unknown key, the same option twice, or a value of
    /// another TOML type; values themselves are checked by [`ConfigBuilder::build`].
    pub fn apply_toml_str(&mut self, text: &str, origin_name: &str) -> Result<(), ConfigError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            let location = match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
                    format!("{origin_name}:{line}:{column}")
                }
                None => origin_name.to_string(),
            };
            ConfigError::TomlSyntax {
                location,
                // One line: the parser's message may span several.
                message: e
                    .message()
                    .lines()
                    .map(str::trim)
                    .filter(|line| !line.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        })?;

        let mut settings = Vec::with_capacity(table.len());
        let mut seen: HashMap<&'static str, ConfigKey> = HashMap::new();
        for (spelled, value) in &table {
            let Some(option) = find_option(spelled) else {
                return Err(ConfigError::UnknownKey {
                    key: spelled.clone(),
                    place: format!("in {origin_name}"),
                    known: known_keys(),
                });
            };
            let key = ConfigKey::new(
                option.key,
                Origin::Toml {
                    file: origin_name.to_string(),
                    spelled: spelled.clone(),
                },
            );
            if let Some(first) = seen.insert(option.key, key.clone()) {
                return Err(ConfigError::DuplicateKey {
                    first: Box::new(first),
                    second: Box::new(key),
                });
            }
            let value = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                other => {
                    return Err(ConfigError::InvalidValue {
                        key,
                        value: other.to_string(),
                        reason: format!(
                            "is a TOML {} (expected {})",
                            other.type_str(),
                            option.kind.expected()
                        ),
                    })
                }
            };
            settings.push(Setting { option, key, value });
        }
        self.toml.extend(settings);
        Ok(())
    }

    /// Records the `CONCORD_*` variables among `vars` (name, value); other names are ignored, and
    /// so are the names in [`NON_CONFIG_ENV_VARS`]. An unknown `CONCORD_*` name is an error
    /// listing the known ones. Values are checked by [`ConfigBuilder::build`].
    pub fn apply_env(
        &mut self,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(), ConfigError> {
        let mut settings = Vec::new();
        for (name, value) in vars {
            if !name.starts_with(ENV_PREFIX) || NON_CONFIG_ENV_VARS.contains(&name.as_str()) {
                continue;
            }
            let Some(option) = OPTIONS.iter().find(|o| o.env == name) else {
                return Err(ConfigError::UnknownEnvVar {
                    name,
                    known: OPTIONS.iter().map(|o| o.env).collect::<Vec<_>>().join(", "),
                    allowed: NON_CONFIG_ENV_VARS.join(", "),
                });
            };
            settings.push(Setting {
                option,
                key: ConfigKey::new(option.key, Origin::Env),
                value,
            });
        }
        self.env.extend(settings);
        Ok(())
    }

    /// [`ConfigBuilder::apply_env`] on this process's environment. A name or value that is not
    /// UTF-8 is taken lossily, so it fails as an unknown name or a bad value rather than being
    /// skipped.
    pub fn apply_process_env(&mut self) -> Result<(), ConfigError> {
        let vars: Vec<(String, String)> = std::env::vars_os()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect();
        self.apply_env(vars)
    }

    /// Records a CLI flag: `key` is the option key with or without the leading `--`
    /// (`heap`, `--heap`; snake_case also accepted), `value` its text. Fails on an unknown key;
    /// the value is checked by [`ConfigBuilder::build`].
    pub fn set_cli(&mut self, key: &str, value: &str) -> Result<(), ConfigError> {
        let bare = key.strip_prefix("--").unwrap_or(key);
        let Some(option) = find_option(bare) else {
            return Err(ConfigError::UnknownKey {
                key: key.to_string(),
                place: "on the command line".to_string(),
                known: known_keys(),
            });
        };
        self.cli.push(Setting {
            option,
            key: ConfigKey::new(option.key, Origin::Cli),
            value: value.to_string(),
        });
        Ok(())
    }

    /// Whether any source (TOML, environment or CLI) gives a value for option `key`
    /// (kebab-case, without `--`). Lets a caller supply its own default only when nobody did.
    pub fn is_set(&self, key: &str) -> bool {
        let bare = key.strip_prefix("--").unwrap_or(key);
        find_option(bare).is_some_and(|option| {
            self.toml
                .iter()
                .chain(&self.env)
                .chain(&self.cli)
                .any(|s| s.option.key == option.key)
        })
    }

    /// Resolves the sources and validates the result.
    ///
    /// The preset comes from the strongest source that names one (else `optimized`); every
    /// other value is then applied on top of that preset's defaults, TOML first, then
    /// environment, then CLI, so the strongest wins. Every recorded value is parsed, including
    /// overridden ones. Errors name the key as the user wrote it.
    pub fn build(self) -> Result<GcConfig, ConfigError> {
        self.build_sourced().map(|sourced| sourced.config)
    }

    /// [`ConfigBuilder::build`], keeping where each value came from: for messages about the
    /// configuration's files and keys ([`SourcedConfig::key`], [`SourcedConfig::outputs`]) and
    /// for refusing keys that would have no effect
    /// ([`SourcedConfig::refuse_keys_without_effect`]).
    pub fn build_sourced(self) -> Result<SourcedConfig, ConfigError> {
        let settings = || self.toml.iter().chain(&self.env).chain(&self.cli);

        let mut preset = DEFAULT_PRESET;
        for setting in settings().filter(|s| s.option.kind == ValueKind::Preset) {
            preset = parse_preset(&setting.value).map_err(|reason| setting.invalid(reason))?;
        }

        let mut config = GcConfig::for_preset(preset);
        let mut origins: HashMap<&'static str, ConfigKey> = HashMap::new();
        for setting in settings() {
            setting.apply(&mut config)?;
            origins.insert(setting.option.key, setting.key.clone());
        }
        config.validate_with(&|key| {
            debug_assert!(
                find_option(key).is_some(),
                "validation names unknown key {key}"
            );
            origins
                .get(key)
                .cloned()
                .unwrap_or_else(|| ConfigKey::new(key, Origin::Default(preset)))
        })?;
        Ok(SourcedConfig {
            config,
            preset,
            origins,
        })
    }
}

/// A configuration built by [`ConfigBuilder::build_sourced`], with where each of its values
/// came from.
#[derive(Clone, Debug)]
pub struct SourcedConfig {
    /// The configuration, validated.
    pub config: GcConfig,
    /// The preset its defaults came from.
    preset: Preset,
    /// The key as written and where, for every key a source gave.
    origins: HashMap<&'static str, ConfigKey>,
}

impl SourcedConfig {
    /// Where the value of option `key` (canonical, kebab-case) came from, as the user wrote it
    /// (`--gc-log`, `CONCORD_GC_LOG`, `gc-log in c.toml`), or the preset's default.
    pub fn key(&self, key: &'static str) -> ConfigKey {
        debug_assert!(find_option(key).is_some(), "unknown key {key}");
        self.origins
            .get(key)
            .cloned()
            .unwrap_or_else(|| ConfigKey::new(key, Origin::Default(self.preset)))
    }

    /// The files a heap of `config` writes, named by where this configuration's values came
    /// from; `config` is this configuration or one derived from it (a co-running instance's),
    /// and `derived` says how, if it is (`of co-running instance 2`).
    pub fn outputs_of(&self, config: &GcConfig, derived: Option<&str>) -> Vec<NamedFile> {
        config.outputs(|key| match derived {
            Some(how) => format!("{} {how}", self.key(key)),
            None => self.key(key).to_string(),
        })
    }

    /// Refuses every key a source gave that has no effect in this configuration, because the
    /// key it works with is not set so ([`DEPENDENCIES`]): `gc-log-compress` without a GC log,
    /// `thp-margin` without `thp dynamic`, `lifespan-sample-bytes` without `lifespans`, …
    /// The error names the key where it was written (flag, variable or file), the key it
    /// needs and that key's value. The experiment commands, which set such keys in every
    /// configuration they compare, do not call this.
    pub fn refuse_keys_without_effect(&self) -> Result<(), ConfigError> {
        for rule in &DEPENDENCIES {
            let key = match self.origins.get(rule.key) {
                Some(key) if !(rule.effective)(&self.config) => key,
                _ => continue,
            };
            let needed = self.key(rule.needs);
            let current = (rule.current)(&self.config);
            let stands = match needed.origin {
                Origin::Default(_) | Origin::Config => {
                    format!("{} is {current} (the default)", rule.needs)
                }
                _ => format!("{needed} is {current}"),
            };
            return Err(ConfigError::Inconsistent {
                key: key.clone(),
                message: format!(
                    "needs {} {}, but {stands}: {} (allowed: {} as well, or no {key})",
                    rule.needs,
                    rule.value,
                    rule.why,
                    rule.given_as(&key.origin)
                ),
            });
        }
        Ok(())
    }
}

/// A key that has an effect only with a value of another: given without it, it would be
/// silently ignored, so [`SourcedConfig::refuse_keys_without_effect`] refuses it.
struct Dependency {
    /// The dependent key.
    key: &'static str,
    /// The key it needs.
    needs: &'static str,
    /// The values of `needs` it works with, in words (`dynamic`, `PATH`, `true`).
    value: &'static str,
    /// Whether `key`'s value has its effect in the configuration.
    effective: fn(&GcConfig) -> bool,
    /// The value of `needs` in the configuration, in words.
    current: fn(&GcConfig) -> String,
    /// What `key` does, in a few words that say why it needs `needs`.
    why: &'static str,
}

impl Dependency {
    /// How to give `needs` in the form the dependent key was given (`--thp dynamic`,
    /// `CONCORD_THP=dynamic`, `thp = "dynamic"`).
    fn given_as(&self, origin: &Origin) -> String {
        let env = env_name_of(self.needs);
        match (origin, self.value) {
            (Origin::Cli, "true") => format!("--{}", self.needs),
            (Origin::Cli, value) => format!("--{} {value}", self.needs),
            (Origin::Env, value) => format!("{env}={value}"),
            (Origin::Toml { .. }, "true") => format!("{} = true", self.needs),
            (Origin::Toml { .. }, value) => format!("{} = \"{value}\"", self.needs),
            (_, value) => format!("{} {value}", self.needs),
        }
    }
}

/// The GC log's path in words, for [`Dependency::current`].
fn gc_log_in_words(config: &GcConfig) -> String {
    match &config.gc_log {
        Some(path) => format!("'{}'", path.display()),
        None => "not set".to_string(),
    }
}

/// The mutator scheduling policies that may put threads under FIFO, in words.
const FIFO_POLICIES: &str = "fifo, profile:PATH, adaptive or adaptive-majority";

/// Every key that needs another's value to have an effect.
static DEPENDENCIES: [Dependency; 9] = [
    Dependency {
        key: "gc-log-compress",
        needs: "gc-log",
        value: "PATH",
        effective: |c| c.gc_log.is_some() || !c.gc_log_compress,
        current: gc_log_in_words,
        why: "it compresses the GC log",
    },
    Dependency {
        key: "gc-log-mode",
        needs: "gc-log",
        value: "PATH",
        effective: |c| c.gc_log.is_some(),
        current: gc_log_in_words,
        why: "it says how the GC log is written",
    },
    Dependency {
        key: "gc-log-buffer",
        needs: "gc-log",
        value: "PATH",
        effective: |c| c.gc_log.is_some(),
        current: gc_log_in_words,
        why: "it sizes the buffer of an async GC log",
    },
    Dependency {
        key: "gc-log-flush-timeout",
        needs: "gc-log",
        value: "PATH",
        effective: |c| c.gc_log.is_some(),
        current: gc_log_in_words,
        why: "it bounds the final flush of an async GC log",
    },
    Dependency {
        key: "thp-margin",
        needs: "thp",
        value: "dynamic",
        effective: |c| c.thp == ThpMode::Dynamic,
        current: |c| c.thp.to_string(),
        why: "it is the memory dynamic THP keeps available beyond the heap, and no other mode \
              reads it",
    },
    Dependency {
        key: "lifespan-sample-bytes",
        needs: "lifespans",
        value: "true",
        effective: |c| c.lifespans,
        current: |c| c.lifespans.to_string(),
        why: "it spaces the objects the lifespan profiler samples",
    },
    Dependency {
        key: "fifo-cpu-threshold",
        needs: "mutator-sched",
        value: FIFO_POLICIES,
        effective: |c| c.mutator_sched != MutatorSched::Cfs,
        current: |c| c.mutator_sched.to_string(),
        why: "it says on how many CPUs a policy may choose FIFO",
    },
    Dependency {
        key: "fifo-scope",
        needs: "mutator-sched",
        value: FIFO_POLICIES,
        effective: |c| c.mutator_sched != MutatorSched::Cfs,
        current: |c| c.mutator_sched.to_string(),
        why: "it says which threads go under FIFO when the policy chooses it",
    },
    Dependency {
        key: "new-ratio",
        needs: "young",
        value: "auto",
        effective: |c| c.young_size.is_none(),
        current: |c| c.young_size.map_or("auto".to_string(), super::format_size),
        why: "it sizes the young generation only when no young size is given",
    },
];

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::{default_gc_threads, format_size, GIB, KIB, MIB};
    use super::*;
    use crate::os::cpu::usable_cpu_count;
    use crate::os::numa::NumaTopologySpec;
    use crate::os::policy::DEFAULT_ADAPTIVE_PERIOD;
    use crate::parallel::PhasePolicy;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn build_err(builder: ConfigBuilder) -> String {
        builder.build().unwrap_err().to_string()
    }

    /// A builder with `pairs` set on the command line.
    fn cli(pairs: &[(&str, &str)]) -> ConfigBuilder {
        let mut builder = ConfigBuilder::new();
        for (key, value) in pairs {
            builder.set_cli(key, value).unwrap();
        }
        builder
    }

    /// A builder with `pairs` from the environment.
    fn from_env(pairs: &[(&str, &str)]) -> ConfigBuilder {
        let mut builder = ConfigBuilder::new();
        builder.apply_env(env(pairs)).unwrap();
        builder
    }

    /// A builder with `text` from the TOML file `c.toml`.
    fn toml(text: &str) -> ConfigBuilder {
        let mut builder = ConfigBuilder::new();
        builder.apply_toml_str(text, "c.toml").unwrap();
        builder
    }

    #[test]
    fn table_is_consistent() {
        assert_eq!(option_docs().count(), OPTIONS.len());
        for (i, option) in OPTIONS.iter().enumerate() {
            let expected_env = format!(
                "{ENV_PREFIX}{}",
                option.key.replace('-', "_").to_ascii_uppercase()
            );
            assert_eq!(option.env, expected_env);
            assert_eq!(env_name_of(option.key), expected_env);
            assert!(
                option
                    .key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-'),
                "{}",
                option.key
            );
            assert!(option.doc.ends_with('.'), "{}", option.key);
            assert!(
                OPTIONS[..i].iter().all(|o| o.key != option.key),
                "duplicate {}",
                option.key
            );
            assert!(!NON_CONFIG_ENV_VARS.contains(&option.env));
        }
    }

    #[test]
    fn every_config_field_has_an_option() {
        // Serialize a config with every Option set and compare its field names with the keys.
        let mut config = GcConfig::for_preset(Preset::Optimized);
        config.young_size = Some(MIB);
        config.tlab_size = Some(KIB);
        config.gc_log = Some("gc.log".into());
        config.gc_records = Some("records.jsonl".into());
        config.gc_trace = Some("gc.trace".into());
        config.vm_thread_cpu = Some(1);
        let fields = toml::Value::try_from(&config).unwrap();
        // Nested policies (`phase`) contribute their own fields.
        let mut fields: Vec<String> = fields
            .as_table()
            .unwrap()
            .iter()
            .flat_map(|(name, value)| match value.as_table() {
                // A duration serializes as `{ secs, nanos }`: one field all the same.
                Some(_) if name == "gc_log_flush_timeout" || name == "safepoint_timeout" => {
                    vec![name.clone()]
                }
                Some(nested) => nested.keys().cloned().collect(),
                None => vec![name.clone()],
            })
            .map(|f| match f.as_str() {
                "heap_size" => "heap".to_string(),
                "young_size" => "young".to_string(),
                // `gc-threads` takes a count or `dynamic`.
                "dynamic_gc_threads" => "gc-threads".to_string(),
                other => other.replace('_', "-"),
            })
            .collect();
        fields.sort();
        fields.dedup();
        let mut keys: Vec<String> = OPTIONS.iter().map(|o| o.key.to_string()).collect();
        keys.sort();
        assert_eq!(fields, keys);
    }

    #[test]
    fn empty_builder_gives_optimized_defaults() {
        let config = ConfigBuilder::new().build().unwrap();
        assert_eq!(config, GcConfig::for_preset(Preset::Optimized));
    }

    #[test]
    fn every_option_can_be_set_from_every_source() {
        // Preset vanilla, every switch set to something else.
        let values = [
            ("preset", "vanilla"),
            ("heap", "64m"),
            ("allow-heap-beyond-memory", "yes"),
            ("young", "16m"),
            ("new-ratio", "3"),
            ("survivor-ratio", "6"),
            ("gc-threads", "3"),
            ("pin-start", "false"),
            ("vm-thread-cpu", "1"),
            ("task-queue", "lockfree"),
            ("task-affinity", "on"),
            ("steal", "last-victim"),
            ("termination", "owst"),
            ("termination-backoff", "concord"),
            ("parking", "futex"),
            ("gc-affinity", "static"),
            ("mutator-sched", "adaptive:0.5"),
            ("fifo-cpu-threshold", "0"),
            ("fifo-scope", "all"),
            ("thp", "never"),
            ("thp-margin", "2g"),
            ("pretouch", "on"),
            ("numa", "interleaved"),
            ("numa-topology", "0/1"),
            ("max-tenuring-threshold", "10"),
            ("initial-tenuring-threshold", "4"),
            ("target-survivor-ratio", "80"),
            ("tlab-size", "16k"),
            ("young-plab-size", "64k"),
            ("old-plab-size", "16k"),
            ("large-object-threshold", "1m"),
            ("safepoint-timeout", "250"),
            ("verify", "yes"),
            ("gc-log", "/tmp/gc.log"),
            ("gc-log-mode", "async"),
            ("gc-log-buffer", "8k"),
            ("gc-log-flush-timeout", "250"),
            ("gc-log-compress", "yes"),
            ("gc-records", "/tmp/records.jsonl"),
            ("gc-trace", "/tmp/gc.trace"),
            ("lifespans", "on"),
            ("lifespan-sample-bytes", "0"),
        ];
        assert_eq!(values.len(), OPTIONS.len());
        let check = |config: GcConfig| {
            assert_eq!(config.preset, Preset::Vanilla);
            assert_eq!(config.heap_size, 64 * MIB);
            assert!(config.allow_heap_beyond_memory);
            assert_eq!(config.young_size, Some(16 * MIB));
            assert_eq!(config.new_ratio, 3);
            assert_eq!(config.survivor_ratio, 6);
            assert_eq!(config.gc_threads, 3);
            assert!(!config.dynamic_gc_threads);
            assert!(!config.pin_start);
            assert_eq!(config.vm_thread_cpu, Some(1));
            assert_eq!(config.phase.task_queue, TaskQueueKind::LockFree);
            assert!(config.phase.task_affinity);
            assert_eq!(config.phase.steal, StealPolicy::LastVictim);
            assert_eq!(config.phase.termination, TerminationKind::Owst);
            assert_eq!(
                config.phase.termination_backoff,
                TerminationBackoff::Concord
            );
            assert_eq!(config.parking, ParkingKind::Futex);
            assert_eq!(config.gc_affinity, GcAffinity::Static);
            assert_eq!(
                config.mutator_sched,
                MutatorSched::Adaptive(Duration::from_millis(500))
            );
            assert_eq!(config.fifo_cpu_threshold, 0);
            assert_eq!(config.fifo_scope, crate::os::policy::FifoScope::All);
            assert_eq!(config.thp, ThpMode::Never);
            assert_eq!(config.thp_margin, 2 * GIB);
            assert!(config.pretouch);
            assert_eq!(config.numa, NumaLayout::Interleaved);
            assert_eq!(
                config.numa_topology,
                NumaTopologySpec::Synthetic(vec![vec![0], vec![1]])
            );
            assert_eq!(config.max_tenuring_threshold, 10);
            assert_eq!(config.initial_tenuring_threshold, 4);
            assert_eq!(config.target_survivor_ratio, 80);
            assert_eq!(config.tlab_size, Some(16 * KIB));
            assert_eq!(config.young_plab_size, 64 * KIB);
            assert_eq!(config.old_plab_size, 16 * KIB);
            assert_eq!(config.large_object_threshold, MIB);
            assert_eq!(
                config.safepoint_timeout,
                Some(std::time::Duration::from_millis(250))
            );
            assert!(config.verify);
            assert_eq!(config.gc_log, Some(PathBuf::from("/tmp/gc.log")));
            assert_eq!(config.gc_log_mode, GcLogMode::Async);
            assert_eq!(config.gc_log_buffer, 8 * KIB);
            assert_eq!(
                config.gc_log_flush_timeout,
                std::time::Duration::from_millis(250)
            );
            assert!(config.gc_log_compress);
            assert_eq!(config.gc_records, Some(PathBuf::from("/tmp/records.jsonl")));
            assert_eq!(config.gc_trace, Some(PathBuf::from("/tmp/gc.trace")));
            assert!(config.lifespans);
            assert_eq!(config.lifespan_sample_bytes, 0);
        };

        let mut cli = ConfigBuilder::new();
        for (key, value) in values {
            cli.set_cli(key, value).unwrap();
        }
        check(cli.build().unwrap());

        let mut from_env = ConfigBuilder::new();
        from_env
            .apply_env(values.iter().map(|(k, v)| (env_name_of(k), v.to_string())))
            .unwrap();
        check(from_env.build().unwrap());

        let toml: String = values
            .iter()
            .map(|(k, v)| format!("{k} = \"{v}\"\n"))
            .collect();
        let mut from_toml = ConfigBuilder::new();
        from_toml.apply_toml_str(&toml, "all.toml").unwrap();
        check(from_toml.build().unwrap());
    }

    #[test]
    fn cli_beats_env_beats_toml_in_any_order() {
        let toml = "heap = \"128m\"\ngc-threads = 2\nverify = true\n";
        let vars = env(&[("CONCORD_HEAP", "96m"), ("CONCORD_GC_THREADS", "3")]);

        let mut forward = ConfigBuilder::new();
        forward.apply_toml_str(toml, "concord.toml").unwrap();
        forward.apply_env(vars.clone()).unwrap();
        forward.set_cli("--heap", "64m").unwrap();

        let mut backward = cli(&[("heap", "64m")]);
        backward.apply_env(vars.clone()).unwrap();
        backward.apply_toml_str(toml, "concord.toml").unwrap();

        for builder in [forward, backward] {
            let config = builder.build().unwrap();
            assert_eq!(config.heap_size, 64 * MIB, "CLI wins");
            assert_eq!(config.gc_threads, 3, "env beats TOML");
            assert!(config.verify, "TOML beats the default");
            assert_eq!(config.young_plab_size, 32 * KIB, "default");
        }

        let mut env_over_toml = ConfigBuilder::new();
        env_over_toml.apply_env(vars).unwrap();
        env_over_toml.apply_toml_str(toml, "concord.toml").unwrap();
        assert_eq!(env_over_toml.build().unwrap().heap_size, 96 * MIB);
    }

    #[test]
    fn later_values_of_one_source_win() {
        let mut builder = cli(&[("heap", "64m"), ("heap", "32m")]);
        builder.apply_toml_str("heap = \"8m\"", "a.toml").unwrap();
        builder.apply_toml_str("heap = \"16m\"", "b.toml").unwrap();
        assert_eq!(builder.clone().build().unwrap().heap_size, 32 * MIB);
        builder.cli.clear();
        assert_eq!(builder.build().unwrap().heap_size, 16 * MIB);
    }

    #[test]
    fn preset_is_resolved_first_from_the_strongest_source() {
        // The TOML file names one preset, the CLI another: the file's other keys still apply on
        // top of the CLI's preset, and the switches are the CLI preset's.
        let mut builder = ConfigBuilder::new();
        builder
            .apply_toml_str("preset = \"vanilla\"\nheap = \"128m\"", "concord.toml")
            .unwrap();
        builder.set_cli("preset", "Optimized").unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.preset, Preset::Optimized);
        assert_eq!(config.heap_size, 128 * MIB);
        assert_eq!(config.phase, PhasePolicy::OPTIMIZED);

        // A weaker source's switch applies on top of a stronger source's preset.
        let mut builder = ConfigBuilder::new();
        builder
            .apply_toml_str("steal = \"adaptive\"", "concord.toml")
            .unwrap();
        builder
            .apply_env(env(&[("CONCORD_PRESET", "modern")]))
            .unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.preset, Preset::Modern);
        assert_eq!(config.phase.steal, StealPolicy::Adaptive);
        assert_eq!(config.phase.task_queue, TaskQueueKind::Claim);
        assert_eq!(config.phase.termination, TerminationKind::Owst);
        assert!(config.dynamic_gc_threads);
    }

    #[test]
    fn every_preset_builds_with_its_switches() {
        for preset in Preset::ALL {
            let config = cli(&[("preset", preset.name())]).build().unwrap();
            assert_eq!(config, GcConfig::for_preset(preset));
        }
        let config = cli(&[("preset", "vanilla")]).build().unwrap();
        assert_eq!(config.phase, PhasePolicy::VANILLA);
        assert_eq!(config.parking, ParkingKind::Monitor);
        assert!(config.pin_start);
        assert!(!config.dynamic_gc_threads);
    }

    #[test]
    fn one_switch_overrides_only_itself() {
        let config = cli(&[
            ("--preset", "vanilla"),
            ("--steal", "Adaptive"),
            ("--task-affinity", "yes"),
            ("--pin-start", "off"),
        ])
        .build()
        .unwrap();
        let mut expected = GcConfig::for_preset(Preset::Vanilla);
        expected.phase.steal = StealPolicy::Adaptive;
        expected.phase.task_affinity = true;
        expected.pin_start = false;
        assert_eq!(config, expected);

        for (text, expected) in [
            ("lockfree", TaskQueueKind::LockFree),
            ("CLAIM", TaskQueueKind::Claim),
            ("monitor", TaskQueueKind::Monitor),
        ] {
            assert_eq!(
                cli(&[("task-queue", text)])
                    .build()
                    .unwrap()
                    .phase
                    .task_queue,
                expected,
                "{text}"
            );
        }
        for (text, expected) in [
            ("fixed", TerminationKind::Fixed),
            ("Live", TerminationKind::Live),
        ] {
            assert_eq!(
                from_env(&[("CONCORD_TERMINATION", text)])
                    .build()
                    .unwrap()
                    .phase
                    .termination,
                expected,
                "{text}"
            );
        }
        let mut builder = ConfigBuilder::new();
        builder
            .apply_toml_str(
                "parking = \"monitor\"\ntask_affinity = false\npin_start = true",
                "c.toml",
            )
            .unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.parking, ParkingKind::Monitor);
        assert!(!config.phase.task_affinity);
        assert!(config.pin_start);
    }

    #[test]
    fn gc_threads_take_a_count_or_dynamic() {
        let default = default_gc_threads(usable_cpu_count());

        let config = cli(&[("gc-threads", "dynamic")]).build().unwrap();
        assert!(config.dynamic_gc_threads);
        assert_eq!(config.gc_threads, default);

        // Modern is dynamic by default; a count makes it fixed.
        let config = cli(&[("preset", "modern"), ("gc-threads", "4")])
            .build()
            .unwrap();
        assert!(!config.dynamic_gc_threads);
        assert_eq!(config.gc_threads, 4);

        // From every source, any case; the strongest source's value decides both fields.
        let mut builder = toml("gc_threads = \"Dynamic\"");
        assert!(builder.clone().build().unwrap().dynamic_gc_threads);
        builder
            .apply_env(env(&[("CONCORD_GC_THREADS", "3")]))
            .unwrap();
        let config = builder.clone().build().unwrap();
        assert!(!config.dynamic_gc_threads);
        assert_eq!(config.gc_threads, 3);
        builder.set_cli("gc-threads", "DYNAMIC").unwrap();
        let config = builder.build().unwrap();
        assert!(config.dynamic_gc_threads);
        assert_eq!(config.gc_threads, default);

        let config = toml("gc-threads = 2").build().unwrap();
        assert!(!config.dynamic_gc_threads);
        assert_eq!(config.gc_threads, 2);
    }

    #[test]
    fn bad_switch_values_name_key_value_and_allowed_names() {
        let cases = [
            (
                "task-queue",
                "fifo",
                "--task-queue: 'fifo' is not a task queue (allowed: monitor, claim, lockfree)",
            ),
            (
                "steal",
                "random",
                "--steal: 'random' is not a steal policy (allowed: best-of-2, last-victim, \
                 adaptive)",
            ),
            (
                "termination",
                "never",
                "--termination: 'never' is not a termination protocol (allowed: fixed, owst, \
                 live)",
            ),
            (
                "parking",
                "spin",
                "--parking: 'spin' is not a parking mode (allowed: monitor, futex)",
            ),
            (
                "task-affinity",
                "sometimes",
                "--task-affinity: 'sometimes' is not a boolean (allowed: true, false, yes, no, \
                 on, off, 1, 0)",
            ),
            (
                "pin-start",
                "maybe",
                "--pin-start: 'maybe' is not a boolean (allowed: true, false, yes, no, on, off, \
                 1, 0)",
            ),
            (
                "gc-threads",
                "auto",
                "--gc-threads: 'auto' is not a whole number or dynamic (allowed: 1..=256, \
                 dynamic)",
            ),
            (
                "gc-records",
                "",
                "--gc-records: '' is empty (expected a file path)",
            ),
        ];
        for (key, value, expected) in cases {
            assert_eq!(build_err(cli(&[(key, value)])), expected);
        }

        // The same words from the environment and TOML, and for TOML values of another type.
        assert_eq!(
            build_err(from_env(&[("CONCORD_STEAL", "random")])),
            "CONCORD_STEAL: 'random' is not a steal policy (allowed: best-of-2, last-victim, \
             adaptive)"
        );
        assert_eq!(
            build_err(toml("task_queue = 3")),
            "task_queue in c.toml: '3' is not a task queue (allowed: monitor, claim, lockfree)"
        );
        let err = ConfigBuilder::new()
            .apply_toml_str("steal = [\"adaptive\"]", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("steal in c.toml: ")
                && err
                    .contains("is a TOML array (expected one of best-of-2, last-victim, adaptive)"),
            "{err}"
        );
    }

    #[test]
    fn gc_affinity_from_every_source_overrides_the_preset() {
        let mut builder = cli(&[("preset", "vanilla")]);
        assert_eq!(
            builder.clone().build().unwrap().gc_affinity,
            GcAffinity::None
        );
        builder
            .apply_toml_str("gc_affinity = \"static\"", "c.toml")
            .unwrap();
        assert_eq!(
            builder.clone().build().unwrap().gc_affinity,
            GcAffinity::Static
        );
        builder
            .apply_env(env(&[("CONCORD_GC_AFFINITY", "Dynamic")]))
            .unwrap();
        assert_eq!(
            builder.clone().build().unwrap().gc_affinity,
            GcAffinity::Dynamic
        );
        builder.set_cli("--gc-affinity", "none").unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.gc_affinity, GcAffinity::None);
        // Only the affinity changed.
        let mut expected = GcConfig::for_preset(Preset::Vanilla);
        expected.gc_affinity = GcAffinity::None;
        assert_eq!(config, expected);

        let config = ConfigBuilder::new().build().unwrap();
        assert_eq!(config.gc_affinity, GcAffinity::Dynamic, "optimized default");
    }

    #[test]
    fn mutator_sched_takes_a_policy_and_its_argument() {
        for (text, expected) in [
            ("cfs", MutatorSched::Cfs),
            ("FIFO", MutatorSched::Fifo),
            ("adaptive", MutatorSched::Adaptive(DEFAULT_ADAPTIVE_PERIOD)),
            (
                "adaptive:0.25",
                MutatorSched::Adaptive(Duration::from_millis(250)),
            ),
            (
                "adaptive:0.01",
                MutatorSched::Adaptive(Duration::from_millis(10)),
            ),
            (
                "adaptive:3600",
                MutatorSched::Adaptive(Duration::from_secs(3600)),
            ),
            (
                "profile:/tmp/gcbench.profile",
                MutatorSched::Profile("/tmp/gcbench.profile".into()),
            ),
        ] {
            assert_eq!(
                cli(&[("mutator-sched", text)])
                    .build()
                    .unwrap()
                    .mutator_sched,
                expected,
                "{text}"
            );
        }
        assert_eq!(
            toml("mutator-sched = \"fifo\"")
                .build()
                .unwrap()
                .mutator_sched,
            MutatorSched::Fifo
        );
        assert_eq!(
            from_env(&[("CONCORD_MUTATOR_SCHED", "adaptive:3")])
                .build()
                .unwrap()
                .mutator_sched,
            MutatorSched::Adaptive(Duration::from_secs(3))
        );
    }

    #[test]
    fn fifo_cpu_threshold_and_lifespans_from_every_source() {
        let mut builder = toml("fifo_cpu_threshold = 16\nlifespans = true");
        let config = builder.clone().build().unwrap();
        assert_eq!(config.fifo_cpu_threshold, 16);
        assert!(config.lifespans);
        builder
            .apply_env(env(&[
                ("CONCORD_FIFO_CPU_THRESHOLD", "4096"),
                ("CONCORD_LIFESPANS", "off"),
            ]))
            .unwrap();
        let config = builder.clone().build().unwrap();
        assert_eq!(config.fifo_cpu_threshold, 4096);
        assert!(!config.lifespans);
        builder.set_cli("fifo-cpu-threshold", "0").unwrap();
        builder.set_cli("lifespans", "yes").unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.fifo_cpu_threshold, 0);
        assert!(config.lifespans);
    }

    #[test]
    fn vm_thread_cpu_from_every_source_and_a_bad_one_named() {
        let mut builder = toml("vm_thread_cpu = \"1\"");
        assert_eq!(builder.clone().build().unwrap().vm_thread_cpu, Some(1));
        builder
            .apply_env(env(&[("CONCORD_VM_THREAD_CPU", "none")]))
            .unwrap();
        assert_eq!(builder.clone().build().unwrap().vm_thread_cpu, None);
        builder.set_cli("vm-thread-cpu", "3").unwrap();
        assert_eq!(builder.clone().build().unwrap().vm_thread_cpu, Some(3));
        builder.set_cli("vm-thread-cpu", "first").unwrap();
        let e = builder.build().unwrap_err().to_string();
        assert!(
            e.contains("'first' is not a CPU (allowed: a CPU number 0..=4095, or none)"),
            "{e}"
        );
        assert_eq!(GcConfig::default().vm_thread_cpu, None);
    }

    #[test]
    fn bad_os_switch_values_name_key_value_and_allowed_values() {
        let cases = [
            (
                "gc-affinity",
                "pinned",
                "--gc-affinity: 'pinned' is not a GC affinity (allowed: none, static, dynamic)",
            ),
            (
                "mutator-sched",
                "rr",
                "--mutator-sched: 'rr' is not a mutator scheduling policy (allowed: cfs, fifo, \
                 profile:PATH, adaptive[:SECONDS] or adaptive-majority[:SECONDS])",
            ),
            (
                "mutator-sched",
                "fifo:2",
                "--mutator-sched: 'fifo:2' is not a mutator scheduling policy (allowed: cfs, \
                 fifo, profile:PATH, adaptive[:SECONDS] or adaptive-majority[:SECONDS])",
            ),
            (
                "mutator-sched",
                "adaptive:0",
                "--mutator-sched: 'adaptive:0' has a bad sampling period '0' (allowed: seconds \
                 from 0.01 to 3600, e.g. adaptive:2)",
            ),
            (
                "mutator-sched",
                "adaptive:soon",
                "--mutator-sched: 'adaptive:soon' has a bad sampling period 'soon' (allowed: \
                 seconds from 0.01 to 3600, e.g. adaptive:2)",
            ),
            (
                "mutator-sched",
                "profile:",
                "--mutator-sched: 'profile:' needs a file: profile:PATH (e.g. \
                 profile:gcbench.profile)",
            ),
            (
                "fifo-cpu-threshold",
                "4097",
                "--fifo-cpu-threshold: '4097' is out of range (allowed: 0..=4096)",
            ),
            (
                "fifo-cpu-threshold",
                "-1",
                "--fifo-cpu-threshold: '-1' is out of range (allowed: 0..=4096)",
            ),
            (
                "fifo-cpu-threshold",
                "eight",
                "--fifo-cpu-threshold: 'eight' is not a whole number (allowed: 0..=4096)",
            ),
            (
                "lifespans",
                "maybe",
                "--lifespans: 'maybe' is not a boolean (allowed: true, false, yes, no, on, off, \
                 1, 0)",
            ),
        ];
        for (key, value, expected) in cases {
            assert_eq!(build_err(cli(&[(key, value)])), expected);
        }

        // The same words from the environment and TOML, and for TOML values of another type.
        assert_eq!(
            build_err(from_env(&[("CONCORD_GC_AFFINITY", "pinned")])),
            "CONCORD_GC_AFFINITY: 'pinned' is not a GC affinity (allowed: none, static, dynamic)"
        );
        assert!(build_err(toml("mutator_sched = \"rr\"")).starts_with(
            "mutator_sched in c.toml: 'rr' is not a mutator scheduling policy (allowed: cfs,"
        ));
        // A TOML boolean is taken as its text and then rejected like any other name.
        assert_eq!(
            build_err(toml("gc-affinity = true")),
            "gc-affinity in c.toml: 'true' is not a GC affinity (allowed: none, static, dynamic)"
        );
        let err = ConfigBuilder::new()
            .apply_toml_str("mutator-sched = [\"fifo\"]", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(
                "is a TOML array (expected one of cfs, fifo, profile:PATH, adaptive[:SECONDS] \
                 or adaptive-majority[:SECONDS])"
            ),
            "{err}"
        );
    }

    #[test]
    fn overridden_bad_values_are_still_errors() {
        let mut builder = from_env(&[("CONCORD_GC_THREADS", "lots")]);
        builder.set_cli("gc-threads", "4").unwrap();
        let err = build_err(builder);
        assert!(err.starts_with("CONCORD_GC_THREADS: 'lots'"), "{err}");

        let mut builder = ConfigBuilder::new();
        builder
            .apply_toml_str("preset = \"fast\"", "concord.toml")
            .unwrap();
        builder.set_cli("preset", "optimized").unwrap();
        let err = build_err(builder);
        assert_eq!(
            err,
            "preset in concord.toml: 'fast' is not a preset (allowed: vanilla, modern, suo18, naps, optimized)"
        );
    }

    #[test]
    fn documented_messages() {
        assert_eq!(
            build_err(cli(&[("heap", "64q")])),
            "--heap: '64q' is not a size (expected a number with an optional k, m or g suffix, \
             e.g. 64m)"
        );

        assert_eq!(
            build_err(cli(&[("heap", "64m"), ("young", "200M")])),
            "--young: 200M must be smaller than the heap (64M) and leave at least 1M for the old \
             generation"
        );

        assert_eq!(
            build_err(from_env(&[("CONCORD_GC_THREADS", "0")])),
            "CONCORD_GC_THREADS: '0' is out of range (allowed: 1..=256)"
        );

        let err = ConfigBuilder::new()
            .apply_toml_str("heapsize = \"64m\"", "concord.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "unknown configuration key 'heapsize' in concord.toml (known keys: preset, heap, \
                 allow-heap-beyond-memory, young, new-ratio,"
            ),
            "{err}"
        );
        assert!(
            err.ends_with(
                "verify, gc-log, gc-log-mode, gc-log-buffer, gc-log-flush-timeout, \
                 gc-log-compress, gc-records, gc-trace, lifespans, lifespan-sample-bytes)"
            ),
            "{err}"
        );
    }

    /// A value each option rejects on its own.
    fn bad_value(option: &OptionSpec) -> &'static str {
        match option.kind {
            ValueKind::Preset => "fastest",
            ValueKind::Size | ValueKind::OptionalSize => "12q",
            ValueKind::Integer | ValueKind::ThreadCount => "many",
            ValueKind::Switch(_) => "fastest",
            ValueKind::Bool => "maybe",
            ValueKind::Path => "",
            ValueKind::NumaTopology => "0/zero",
            ValueKind::OptionalCpu => "first",
        }
    }

    #[test]
    fn bad_values_name_key_and_value_for_every_option_and_source() {
        for option in &OPTIONS {
            let value = bad_value(option);
            let quoted = format!("'{value}'");

            let cli = cli(&[(option.key, value)]);
            let err = build_err(cli);
            assert!(
                err.starts_with(&format!("--{}: {quoted} ", option.key)),
                "{err}"
            );

            let mut from_env = ConfigBuilder::new();
            from_env
                .apply_env([(option.env.to_string(), value.to_string())])
                .unwrap();
            let err = build_err(from_env);
            assert!(
                err.starts_with(&format!("{}: {quoted} ", option.env)),
                "{err}"
            );

            let snake = option.key.replace('-', "_");
            let mut from_toml = ConfigBuilder::new();
            from_toml
                .apply_toml_str(&format!("{snake} = \"{value}\""), "my.toml")
                .unwrap();
            let err = build_err(from_toml);
            assert!(
                err.starts_with(&format!("{snake} in my.toml: {quoted} ")),
                "{err}"
            );
            assert!(err.contains("allowed") || err.contains("expected"), "{err}");
        }
    }

    #[test]
    fn out_of_range_values_name_the_range() {
        let cases = [
            ("heap", "2m", "is out of range (allowed: 4M..=1024G)"),
            ("heap", "2048g", "is out of range (allowed: 4M..=1024G)"),
            // Too long for 64 bits: the same range, not the largest `usize`.
            (
                "heap",
                "99999999999999999999",
                "is out of range (allowed: 4M..=1024G)",
            ),
            (
                "young",
                "99999999999999999999",
                "is not a size (too large: no size setting allows more than 1024G)",
            ),
            ("heap", "-5m", "is not a size (sizes cannot be negative)"),
            (
                "heap",
                "1.5g",
                "is not a size (fractions are not allowed; write 1536m instead)",
            ),
            ("young", "", "is not a size (it is empty;"),
            ("new-ratio", "0", "is out of range (allowed: 1..=100)"),
            ("new-ratio", "-1", "is out of range (allowed: 1..=100)"),
            (
                "survivor-ratio",
                "1001",
                "is out of range (allowed: 1..=1000)",
            ),
            ("gc-threads", "257", "is out of range (allowed: 1..=256)"),
            (
                "gc-threads",
                "99999999999999999999",
                "is out of range (allowed: 1..=256)",
            ),
            (
                "gc-threads",
                "99999999999999999999999999999999999999999",
                "is not a whole number",
            ),
            (
                "gc-threads",
                "2.5",
                "is not a whole number or dynamic (allowed: 1..=256, dynamic)",
            ),
            (
                "max-tenuring-threshold",
                "16",
                "is out of range (allowed: 0..=15)",
            ),
            (
                "initial-tenuring-threshold",
                "16",
                "is out of range (allowed: 0..=15)",
            ),
            (
                "target-survivor-ratio",
                "0",
                "is out of range (allowed: 1..=100)",
            ),
            ("tlab-size", "512", "is too small (allowed: at least 1K)"),
            (
                "young-plab-size",
                "2m",
                "is out of range (allowed: 1K..=1M)",
            ),
            ("old-plab-size", "0", "is out of range (allowed: 1K..=1M)"),
            (
                "large-object-threshold",
                "1000",
                "is too small (allowed: at least 1K)",
            ),
        ];
        for (key, value, reason) in cases {
            let err = build_err(cli(&[(key, value)]));
            let start = format!("--{key}: '{value}' {reason}");
            assert!(err.starts_with(&start), "{err}\n  expected: {start}");
        }
    }

    #[test]
    fn cross_field_errors_name_the_source_that_set_the_value() {
        let err = build_err(toml("max_tenuring_threshold = 3"));
        assert!(
            err.starts_with("max_tenuring_threshold in c.toml: 3 is below initial-tenuring"),
            "{err}"
        );

        let err = build_err(cli(&[("heap", "4m"), ("new-ratio", "100")]));
        assert!(
            err.starts_with("--new-ratio: 100 makes the young generation 0B"),
            "{err}"
        );

        let err = build_err(cli(&[("heap", "64m"), ("tlab-size", "60m")]));
        assert!(
            err.starts_with("--tlab-size: '60M' is out of range (allowed: 1K.."),
            "{err}"
        );

        let err = build_err(cli(&[("heap", "64m"), ("survivor-ratio", "1000")]));
        assert!(
            err.starts_with("--survivor-ratio: 1000 makes each survivor space"),
            "{err}"
        );
    }

    #[test]
    fn optional_sizes_accept_auto() {
        let mut builder = toml("young = \"16m\"\ntlab-size = \"8k\"");
        builder.set_cli("young", "auto").unwrap();
        builder.set_cli("tlab-size", "AUTO").unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.young_size, None);
        assert_eq!(config.tlab_size, None);
    }

    #[test]
    fn booleans() {
        for (text, expected) in [
            ("true", true),
            ("YES", true),
            ("on", true),
            ("1", true),
            ("false", false),
            ("No", false),
            ("off", false),
            ("0", false),
        ] {
            assert_eq!(
                cli(&[("verify", text)]).build().unwrap().verify,
                expected,
                "{text}"
            );
        }
    }

    /// `pretouch`: off in every preset; on from the command line, the environment or TOML,
    /// the stronger source winning; a bad value names the key and what is allowed.
    #[test]
    fn pretouch_is_off_by_default_and_set_from_every_source() {
        for preset in [Preset::Vanilla, Preset::Modern, Preset::Optimized] {
            assert!(!GcConfig::for_preset(preset).pretouch, "{preset}");
        }
        assert!(cli(&[("pretouch", "true")]).build().unwrap().pretouch);
        assert!(
            from_env(&[("CONCORD_PRETOUCH", "yes")])
                .build()
                .unwrap()
                .pretouch
        );
        assert!(toml("pretouch = true\n").build().unwrap().pretouch);
        let mut builder = toml("pretouch = true\n");
        builder
            .apply_env(env(&[("CONCORD_PRETOUCH", "off")]))
            .unwrap();
        assert!(
            !builder.build().unwrap().pretouch,
            "the environment beats TOML"
        );
        let err = cli(&[("pretouch", "sometimes")])
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("pretouch"), "{err}");
        assert!(err.contains("sometimes"), "{err}");
        assert!(err.contains("true"), "{err}");
    }

    #[test]
    fn toml_values_may_be_strings_integers_or_booleans() {
        let mut builder = ConfigBuilder::new();
        builder
            .apply_toml_str(
                "heap = 67108864\ngc_threads = 2\nverify = true\nyoung-plab-size = \"16k\"\n\
                 gc-log = \"gc.log\"\n",
                "c.toml",
            )
            .unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.heap_size, 64 * MIB);
        assert_eq!(config.gc_threads, 2);
        assert!(config.verify);
        assert_eq!(config.young_plab_size, 16 * KIB);
        assert_eq!(config.gc_log, Some(PathBuf::from("gc.log")));

        let err = ConfigBuilder::new()
            .apply_toml_str("heap = 1.5", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("heap in c.toml: '1.5' is a TOML float (expected a size"),
            "{err}"
        );
        let err = ConfigBuilder::new()
            .apply_toml_str("[heap]\nsize = 1", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("heap in c.toml: "), "{err}");
        assert!(err.contains("is a TOML table"), "{err}");

        assert!(build_err(toml("heap = -5")).starts_with("heap in c.toml: '-5' is not a size"));

        let builder = toml("verify = 1");
        assert!(builder.build().unwrap().verify);
    }

    #[test]
    fn the_same_option_twice_in_one_file_is_an_error() {
        let err = ConfigBuilder::new()
            .apply_toml_str("gc-threads = 2\ngc_threads = 3", "c.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("gc-threads in c.toml"), "{err}");
        assert!(err.contains("gc_threads in c.toml"), "{err}");
        assert!(err.contains("already set"), "{err}");
    }

    #[test]
    fn toml_syntax_errors_name_file_and_line() {
        let err = ConfigBuilder::new()
            .apply_toml_str("heap = \"64m\"\ngc-threads = = 2\n", "bad.toml")
            .unwrap_err();
        assert!(matches!(err, ConfigError::TomlSyntax { .. }));
        let err = err.to_string();
        assert!(err.starts_with("bad.toml:2:"), "{err}");
        assert!(err.contains("invalid TOML"), "{err}");
        let err = ConfigBuilder::new()
            .apply_toml_str("verify = tru\n", "bad.toml")
            .unwrap_err()
            .to_string();
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn toml_files() {
        let dir = std::env::temp_dir().join(format!("concord-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("concord.toml");
        std::fs::write(&file, "heap = \"32m\"\nverify = \"on\"\n").unwrap();
        let mut builder = ConfigBuilder::new();
        builder.apply_toml_file(&file).unwrap();
        let config = builder.build().unwrap();
        assert_eq!(config.heap_size, 32 * MIB);
        assert!(config.verify);

        std::fs::write(&file, "heap = \"32x\"\n").unwrap();
        let mut builder = ConfigBuilder::new();
        builder.apply_toml_file(&file).unwrap();
        let err = build_err(builder);
        assert!(
            err.starts_with(&format!("heap in {}: '32x' is not a size", file.display())),
            "{err}"
        );

        std::fs::write(&file, "heap = [").unwrap();
        let err = ConfigBuilder::new()
            .apply_toml_file(&file)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with(&file.display().to_string()), "{err}");

        let missing = dir.join("missing.toml");
        let err = ConfigBuilder::new()
            .apply_toml_file(&missing)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&missing.display().to_string()), "{err}");
        assert!(err.starts_with("cannot read configuration file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn environment_filtering() {
        assert_eq!(
            from_env(&[
                ("PATH", "/bin"),
                ("HEAP", "1m"),
                ("concord_heap", "1m"),
                ("CONCORD_LOG", "debug"),
                ("CONCORD_CONFIG", "x.toml"),
                ("CONCORD_HEAP", "32m"),
            ])
            .build()
            .unwrap()
            .heap_size,
            32 * MIB
        );

        let err = ConfigBuilder::new()
            .apply_env(env(&[("CONCORD_HEAPSIZE", "1g")]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("unknown environment variable 'CONCORD_HEAPSIZE'"),
            "{err}"
        );
        assert!(
            err.contains("CONCORD_HEAP, CONCORD_ALLOW_HEAP_BEYOND_MEMORY, CONCORD_YOUNG"),
            "{err}"
        );
        assert!(err.contains("CONCORD_LOG"), "{err}");
    }

    #[test]
    fn unknown_cli_keys() {
        let err = ConfigBuilder::new()
            .set_cli("--heapsize", "1g")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "unknown configuration key '--heapsize' on the command line (known keys: preset,"
            ),
            "{err}"
        );
        assert_eq!(
            cli(&[("--young_plab_size", "8k")])
                .build()
                .unwrap()
                .young_plab_size,
            8 * KIB
        );
    }

    #[test]
    fn errors_expose_their_key() {
        let builder = from_env(&[("CONCORD_HEAP", "1k")]);
        let err = builder.build().unwrap_err();
        assert_eq!(err.key(), Some(&ConfigKey::new("heap", Origin::Env)));
    }

    #[test]
    fn defaults_are_named_as_defaults() {
        let err = build_err(cli(&[("young", "512k")]));
        assert!(
            err.starts_with("--young: 512K makes each survivor space"),
            "{err}"
        );
        let key = ConfigKey::new("survivor-ratio", Origin::Default(Preset::Optimized));
        assert_eq!(
            key.to_string(),
            "survivor-ratio (default of preset optimized)"
        );
        assert_eq!(format_size(MIB), "1M");
    }

    /// The refusal of `builder`'s keys that have no effect, if any.
    fn without_effect(builder: ConfigBuilder) -> Option<String> {
        let sourced = builder.build_sourced().unwrap();
        sourced
            .refuse_keys_without_effect()
            .err()
            .map(|e| e.to_string())
    }

    #[test]
    fn dependencies_name_existing_keys() {
        for rule in &DEPENDENCIES {
            assert!(find_option(rule.key).is_some(), "{}", rule.key);
            assert!(find_option(rule.needs).is_some(), "{}", rule.needs);
        }
        // A dependent key is refused only when a source gives it, never for its default.
        assert_eq!(without_effect(ConfigBuilder::new()), None);
    }

    #[test]
    fn keys_without_effect_are_refused_naming_where_they_came_from() {
        assert_eq!(
            without_effect(cli(&[("thp-margin", "1g")])).unwrap(),
            "--thp-margin: needs thp dynamic, but thp is system (the default): it is the memory dynamic THP keeps available beyond the heap, and no other mode \
             reads it (allowed: --thp dynamic as well, or no --thp-margin)"
        );
        let mut b = cli(&[("thp", "never")]);
        b.apply_env(env(&[("CONCORD_THP_MARGIN", "1g")])).unwrap();
        assert_eq!(
            without_effect(b).unwrap(),
            "CONCORD_THP_MARGIN: needs thp dynamic, but --thp is never: it is \
             the memory dynamic THP keeps available beyond the heap, and no other mode reads it \
             (allowed: CONCORD_THP=dynamic as well, or no CONCORD_THP_MARGIN)"
        );
        let err = without_effect(toml("lifespan_sample_bytes = \"8k\"\n")).unwrap();
        assert!(
            err.starts_with(
                "lifespan_sample_bytes in c.toml: needs lifespans true, but lifespans is \
                 false (the default)"
            ) && err.ends_with(
                "(allowed: lifespans = true as well, or no lifespan_sample_bytes in c.toml)"
            ),
            "{err}"
        );
        for (pairs, start) in [
            (
                &[("gc-log-compress", "true")][..],
                "--gc-log-compress: needs gc-log PATH, but gc-log is not set",
            ),
            (
                &[("gc-log-mode", "sync")],
                "--gc-log-mode: needs gc-log PATH",
            ),
            (
                &[("gc-log-buffer", "8k")],
                "--gc-log-buffer: needs gc-log PATH",
            ),
            (
                &[("gc-log-flush-timeout", "10")],
                "--gc-log-flush-timeout: needs gc-log PATH",
            ),
            (
                &[("fifo-scope", "all")],
                "--fifo-scope: needs mutator-sched fifo, profile:PATH, adaptive \
                 or adaptive-majority, but mutator-sched is cfs (the default)",
            ),
            (
                &[("mutator-sched", "cfs"), ("fifo-cpu-threshold", "0")],
                "--fifo-cpu-threshold: needs mutator-sched fifo",
            ),
            (
                &[("young", "16m"), ("new-ratio", "3")],
                "--new-ratio: needs young auto, but --young is 16M",
            ),
        ] {
            let err = without_effect(cli(pairs)).unwrap();
            assert!(err.starts_with(start), "{pairs:?}: {err}");
        }
        // With what they need, or turned off, they are fine; so is the preset's own value.
        for pairs in [
            &[("thp", "dynamic"), ("thp-margin", "1g")][..],
            &[("lifespans", "on"), ("lifespan-sample-bytes", "0")],
            &[
                ("gc-log", "/tmp/gc.log"),
                ("gc-log-compress", "true"),
                ("gc-log-mode", "async"),
                ("gc-log-buffer", "8k"),
                ("gc-log-flush-timeout", "10"),
            ],
            &[("gc-log-compress", "false")],
            &[("mutator-sched", "fifo"), ("fifo-scope", "all")],
            &[("mutator-sched", "adaptive"), ("fifo-cpu-threshold", "0")],
            &[("young", "auto"), ("new-ratio", "3")],
            &[("preset", "vanilla")],
        ] {
            assert_eq!(without_effect(cli(pairs)), None, "{pairs:?}");
        }
        // A plain build leaves them to the caller (the experiment commands set them in every
        // configuration they compare).
        cli(&[("thp-margin", "1g")]).build().unwrap();
    }

    #[test]
    fn outputs_are_named_where_they_were_given() {
        let mut b = toml("gc-log = \"gc.log\"\n");
        b.apply_env(env(&[("CONCORD_GC_TRACE", "gc.trace")]))
            .unwrap();
        b.set_cli("gc-records", "r.jsonl").unwrap();
        b.set_cli("mutator-sched", "profile:p.profile").unwrap();
        let sourced = b.build_sourced().unwrap();
        let names = |files: Vec<NamedFile>| -> Vec<(String, String)> {
            files.into_iter().map(|f| (f.name, f.shown)).collect()
        };
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            names(sourced.outputs_of(&sourced.config, None)),
            [
                pair("gc-log in c.toml", "gc.log"),
                pair("--gc-records", "r.jsonl"),
                pair("CONCORD_GC_TRACE", "gc.trace"),
                pair("--mutator-sched", "profile:p.profile"),
            ]
        );
        let mut derived = sourced.config.clone();
        derived.gc_log = Some("gc.log.2".into());
        derived.gc_records = None;
        derived.gc_trace = None;
        derived.mutator_sched = MutatorSched::Cfs;
        assert_eq!(
            names(sourced.outputs_of(&derived, Some("of instance 2"))),
            [pair("gc-log in c.toml of instance 2", "gc.log.2")]
        );
        assert_eq!(
            sourced.key("heap").to_string(),
            "heap (default of preset optimized)"
        );
    }
}
