//! The telemetry room: per-collection records (in memory and as JSON lines), the HotSpot-style
//! GC log and summaries.

pub mod gc_log;
pub mod lifespan;
pub mod phase;
pub mod record;
pub mod records_file;

pub use lifespan::{LifespanBucket, LifespanProfiler, LifespanReport};
pub use phase::{PhaseTimes, WorkerPhaseStats};
pub use record::{
    CollectionKind, CollectionRecord, CpuOccupancy, GcCause, GcStats, MonitorRecord,
    WorkerTimeBreakdown,
};
