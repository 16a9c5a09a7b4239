//! The per-collection records as JSON lines (`gc-records`): one [`CollectionRecord`] object per
//! line, written by the VM thread after mutators have been resumed, like the GC log, and put
//! in place when the heap finishes (see [`super::output`]).

use std::io;
use std::path::Path;

use super::output::{OutputFailure, OutputKind, RecordLines};
use super::record::CollectionRecord;

/// A records file being written.
#[derive(Debug)]
pub struct RecordsFile {
    out: RecordLines,
}

impl RecordsFile {
    /// Start the file for `path`; `path` itself is replaced only by [`RecordsFile::finish`].
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self {
            out: RecordLines::create(OutputKind::GcRecords, path, None)?,
        })
    }

    /// Append one collection's record as a line (once per collection). After a failed write
    /// the file stops; [`RecordsFile::finish`] reports it.
    pub fn write_record(&mut self, r: &CollectionRecord) {
        self.out
            .write(r, |r| serde_json::to_string(r).map_err(io::Error::other));
    }

    /// Put the file in place; an error says what it is missing.
    pub fn finish(self) -> Result<(), OutputFailure> {
        self.out.finish()
    }
}
