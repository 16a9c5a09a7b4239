//! The files a heap writes while it runs — the GC log, the records file — and how it reports
//! the ones it could not write completely.
//!
//! Each output is a [`StagedFile`]: written beside its path and put in place when the heap
//! finishes ([`crate::Heap::finish`]), so a heap that could not be created leaves an existing
//! file as it was. The first write that fails stops that output (the file keeps its whole
//! lines, never a fragment) and the collector carries on; when the heap finishes, every such
//! output is reported as an [`OutputFailure`] saying which output, what went wrong and what
//! was lost.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::record::{CollectionRecord, GcStats};
use crate::os::fs::StagedFile;

/// The outputs a heap writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// The GC log (`gc-log`).
    GcLog,
    /// The per-collection records (`gc-records`).
    GcRecords,
    /// The mutator scheduling profile (`mutator-sched profile:PATH`).
    MutatorProfile,
}

impl fmt::Display for OutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputKind::GcLog => "GC log",
            OutputKind::GcRecords => "GC records",
            OutputKind::MutatorProfile => "mutator scheduling profile",
        })
    }
}

/// An output that could not be written completely.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputFailure {
    /// Which output.
    pub output: OutputKind,
    /// Its path, as configured.
    pub path: PathBuf,
    /// What went wrong.
    pub error: String,
    /// What is missing from it: `the records of GC(12)..GC(40) (29 collections) are lost`.
    pub lost: String,
}

impl fmt::Display for OutputFailure {
    /// `GC records /dev/full: No space left on device (os error 28); the records of GC(0)..GC(7)
    /// (8 collections) are lost`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {}; {}",
            self.output,
            self.path.display(),
            self.error,
            self.lost
        )
    }
}

/// Finishing a heap found outputs that could not be written completely. The statistics of
/// the run are kept: the run itself went through.
#[derive(Debug)]
pub struct OutputError {
    /// Every output that failed, in the order GC log, records, profile.
    pub failures: Vec<OutputFailure>,
    /// The statistics of the run.
    pub stats: Box<GcStats>,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, failure) in self.failures.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{failure}")?;
        }
        Ok(())
    }
}

impl std::error::Error for OutputError {}

/// The first write that failed, and the collections whose lines it cost.
#[derive(Debug)]
struct Failed {
    error: io::Error,
    first_lost: u64,
    last_lost: u64,
}

/// A file of one line per collection (plus an optional header): staged, stopped at the first
/// failed write, and finished into an [`OutputFailure`] when it is incomplete.
#[derive(Debug)]
pub(crate) struct RecordLines {
    kind: OutputKind,
    path: PathBuf,
    file: StagedFile,
    /// The id of the last collection written.
    written_through: Option<u64>,
    failed: Option<Failed>,
}

impl RecordLines {
    /// Starts the output at `path` and writes `header` (a whole line) if given.
    pub fn create(kind: OutputKind, path: &Path, header: Option<&str>) -> io::Result<Self> {
        let mut file = StagedFile::create(path)?;
        if let Some(header) = header {
            file.append(format!("{header}\n").as_bytes())?;
        }
        Ok(RecordLines {
            kind,
            path: path.to_path_buf(),
            file,
            written_through: None,
            failed: None,
        })
    }

    /// Appends the line `format(r)` for collection `r`, unless it is written already or an
    /// earlier write failed (then `r` is counted as lost).
    pub fn write(
        &mut self,
        r: &CollectionRecord,
        format: impl FnOnce(&CollectionRecord) -> io::Result<String>,
    ) {
        self.write_line(r.id, || format(r));
    }

    /// Appends the line `format()` for collection `id` (see [`RecordLines::write`]); for a
    /// writer that holds formatted lines rather than records.
    pub fn write_line(&mut self, id: u64, format: impl FnOnce() -> io::Result<String>) {
        if self.written_through.is_some_and(|written| id <= written) {
            return;
        }
        if let Some(failed) = &mut self.failed {
            failed.last_lost = failed.last_lost.max(id);
            return;
        }
        let written = format().and_then(|mut line| {
            line.push('\n');
            self.file.append(line.as_bytes())
        });
        match written {
            Ok(()) => self.written_through = Some(id),
            Err(error) => {
                // Reported in full when the heap finishes; noted here for those watching.
                log::info!(
                    "writing the {} {} failed at GC({}) ({error}); it stops there",
                    self.kind,
                    self.path.display(),
                    id
                );
                self.failed = Some(Failed {
                    error,
                    first_lost: id,
                    last_lost: id,
                });
            }
        }
    }

    /// Appends a line that belongs to no collection (a notice such as the count of dropped
    /// log messages), unless an earlier write failed. A failure stops the output; the next
    /// collection's lines are the first counted as lost.
    pub fn write_notice(&mut self, line: &str) {
        if self.failed.is_some() {
            return;
        }
        if let Err(error) = self.file.append(format!("{line}\n").as_bytes()) {
            let next = self.written_through.map_or(0, |id| id + 1);
            log::info!(
                "writing the {} {} failed ({error}); it stops there",
                self.kind,
                self.path.display()
            );
            self.failed = Some(Failed {
                error,
                first_lost: next,
                last_lost: next,
            });
        }
    }

    /// Puts the file in place (with the lines written before a failure) and reports what is
    /// missing from it, if anything.
    pub fn finish(self) -> Result<(), OutputFailure> {
        let RecordLines {
            kind,
            path,
            file,
            failed,
            ..
        } = self;
        let committed = file.commit();
        let failure = |error: String, lost: String| OutputFailure {
            output: kind,
            path: path.clone(),
            error,
            lost,
        };
        match (failed, committed) {
            (None, Ok(())) => Ok(()),
            (Some(f), Ok(())) => {
                let what = match kind {
                    OutputKind::GcLog => "the log lines",
                    _ => "the records",
                };
                let count = f.last_lost - f.first_lost + 1;
                let lost = if count == 1 {
                    format!("{what} of GC({}) are lost", f.first_lost)
                } else {
                    format!(
                        "{what} of GC({})..GC({}) ({count} collections) are lost",
                        f.first_lost, f.last_lost
                    )
                };
                Err(failure(f.error.to_string(), lost))
            }
            (_, Err(e)) => Err(failure(
                format!("it could not be put in place ({e})"),
                "nothing of this run was written there".to_string(),
            )),
        }
    }
}
