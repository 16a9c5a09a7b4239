//! The per-collection records as JSON lines (`gc-records`): one [`CollectionRecord`] object per
//! line, written by the VM thread after mutators have been resumed, like the GC log.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use super::record::CollectionRecord;

/// An open records file.
pub struct RecordsFile {
    out: BufWriter<File>,
}

impl RecordsFile {
    /// Create (truncate) the file at `path`.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(Self {
            out: BufWriter::new(File::create(path)?),
        })
    }

    /// Append one collection's record as a line and flush, so a crash loses at most the line
    /// being written.
    pub fn write_record(&mut self, r: &CollectionRecord) -> io::Result<()> {
        serde_json::to_writer(&mut self.out, r)?;
        writeln!(self.out)?;
        self.out.flush()
    }
}
