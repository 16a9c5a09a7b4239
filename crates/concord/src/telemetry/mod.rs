//! The telemetry room: per-collection records, the HotSpot-style GC log and summaries.

pub mod gc_log;
pub mod record;

pub use record::{
    CollectionKind, CollectionRecord, CpuOccupancy, GcCause, GcStats, WorkerTimeBreakdown,
};
