//! The telemetry room: per-collection records (in memory and as JSON lines), the HotSpot-style
//! GC log, the GC trace (the collections' parallel work, for the simulator), summaries, and
//! how the files among them are written and their failures reported.

pub mod gc_log;
pub mod gc_metrics;
pub mod gc_trace;
pub mod lifespan;
pub mod output;
pub mod phase;
pub mod record;
pub mod records_file;

pub use lifespan::{LifespanBucket, LifespanProfiler, LifespanReport};
pub use output::{OutputError, OutputFailure, OutputKind};
pub use phase::{PhaseTimes, WorkerNumaStats, WorkerPhaseStats};
pub use record::{
    nearest_rank, AllocStalls, CollectionKind, CollectionRecord, CpuOccupancy, GcCause, GcLogStats,
    GcStats, MonitorRecord, NumaCollectionRecord, NumaReport, NumaWorkerPlacement,
    WorkerTimeBreakdown,
};
