//! A GC log in HotSpot's unified-logging `gc` format, so GCViewer, GCToolKit or gceasy read it:
//! `[1.234s][info][gc] GC(7) Pause Young (Allocation Failure) 77M->8M(248M) 9.696ms`.
//!
//! Lines are formatted and written by the VM thread after mutators have been resumed, never
//! while the world is stopped.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::record::{CollectionKind, CollectionRecord};

const MB: usize = 1024 * 1024;

/// An open GC log file.
pub struct GcLog {
    out: BufWriter<File>,
}

impl GcLog {
    /// Create (truncate) the log at `path` and write the header line.
    pub fn create(path: &Path, collector: &str) -> io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "[0.000s][info][gc] Using {collector}")?;
        out.flush()?;
        Ok(Self { out })
    }

    /// Append one collection's line and flush.
    pub fn write_record(&mut self, r: &CollectionRecord) -> io::Result<()> {
        writeln!(self.out, "{}", format_record(r))?;
        self.out.flush()
    }
}

/// The log line for a record.
pub fn format_record(r: &CollectionRecord) -> String {
    let what = match r.kind {
        CollectionKind::Young => "Pause Young",
        CollectionKind::Full => "Pause Full",
    };
    format!(
        "[{:.3}s][info][gc] GC({}) {} ({}) {}M->{}M({}M) {:.3}ms",
        r.start_ms / 1e3,
        r.id,
        what,
        r.cause.as_str(),
        r.heap_before / MB,
        r.heap_after / MB,
        r.heap_capacity / MB,
        r.pause_ms
    )
}
