//! A GC log in HotSpot's unified-logging `gc` format, so GCViewer, GCToolKit or gceasy read it:
//! `[1.234s][info][gc] GC(7) Pause Young (Allocation Failure) 77M->8M(248M) 9.696ms`.
//!
//! Lines are formatted and written by the VM thread after mutators have been resumed, never
//! while the world is stopped; each line is written whole or not at all.

use std::io;
use std::path::Path;

use super::output::{OutputFailure, OutputKind, RecordLines};
use super::record::{CollectionKind, CollectionRecord};

const MB: usize = 1024 * 1024;

/// A GC log being written (see [`super::output`]: staged beside its path, put in place when
/// the heap finishes).
#[derive(Debug)]
pub struct GcLog {
    out: RecordLines,
}

impl GcLog {
    /// Start the log for `path` and write the header line. `path` itself is replaced only by
    /// [`GcLog::finish`].
    pub fn create(path: &Path, collector: &str) -> io::Result<Self> {
        let header = format!("[0.000s][info][gc] Using {collector}");
        Ok(Self {
            out: RecordLines::create(OutputKind::GcLog, path, Some(&header))?,
        })
    }

    /// Append one collection's line (once per collection). After a failed write the log
    /// stops; [`GcLog::finish`] reports it.
    pub fn write_record(&mut self, r: &CollectionRecord) {
        self.out.write(r, |r| Ok(format_record(r)));
    }

    /// Put the log in place; an error says what it is missing.
    pub fn finish(self) -> Result<(), OutputFailure> {
        self.out.finish()
    }
}

/// The log line for a record. Its timestamp is the pause's end, as HotSpot's is (the line is
/// logged when the pause is over), so tools place the pause at `[t - pause, t]`.
pub fn format_record(r: &CollectionRecord) -> String {
    let what = match r.kind {
        CollectionKind::Young => "Pause Young",
        CollectionKind::Full => "Pause Full",
    };
    format!(
        "[{:.3}s][info][gc] GC({}) {} ({}) {}M->{}M({}M) {:.3}ms",
        (r.start_ms + r.pause_ms) / 1e3,
        r.id,
        what,
        r.cause.as_str(),
        r.heap_before / MB,
        r.heap_after / MB,
        r.heap_capacity / MB,
        r.pause_ms
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_line_is_stamped_with_the_pause_end() {
        let mut r = CollectionRecord::test_young(3);
        r.start_ms = 1_000.0;
        r.pause_ms = 250.0;
        let line = format_record(&r);
        assert!(
            line.starts_with("[1.250s][info][gc] GC(3) Pause Young"),
            "{line}"
        );
        assert!(line.ends_with(" 250.000ms"), "{line}");
    }
}
