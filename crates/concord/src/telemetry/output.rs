//! The files a heap writes while it runs — the GC log, the records file — and how it reports
//! the ones it could not write completely.
//!
//! Each output is a [`StagedFile`]: written beside its path and put in place when the heap
//! finishes ([`crate::Heap::finish`]), so a heap that could not be created leaves an existing
//! file as it was. The first write that fails stops that output (the file keeps its whole
//! lines, never a fragment) and the collector carries on; when the heap finishes, every such
//! output is reported as an [`OutputFailure`] saying which output, what went wrong and what
//! was lost.
//!
//! An output may be written gzip-compressed ([`Encoding::Gzip`], 002 §4.4's compressed
//! logging): one streaming compressor for the whole file, flushed (a deflate sync flush) after
//! every append, so the bytes on disk always decode, with `zcat`, to the whole lines written so
//! far, even if the process dies; the stream's end (its checksum) is written when the output
//! finishes.

use std::fmt;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;

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
    /// The collections' parallel work (`gc-trace`).
    GcTrace,
}

impl fmt::Display for OutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputKind::GcLog => "GC log",
            OutputKind::GcRecords => "GC records",
            OutputKind::MutatorProfile => "mutator scheduling profile",
            OutputKind::GcTrace => "GC trace",
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

/// How an output's text is encoded on its way to the file.
#[derive(Debug)]
pub(crate) enum Encoding {
    /// As it is.
    Plain,
    /// One gzip stream, sync-flushed after every append (see the module documentation); the
    /// compressor writes into a buffer that each append hands to the file whole.
    Gzip(GzEncoder<Vec<u8>>),
}

impl Encoding {
    /// Plain text, or a fresh gzip stream when `compress`.
    pub fn new(compress: bool) -> Self {
        if compress {
            Encoding::Gzip(GzEncoder::new(Vec::new(), flate2::Compression::default()))
        } else {
            Encoding::Plain
        }
    }

    /// Append `text` to `file`, encoded, whole or not at all (a gzip append is one sync-flushed
    /// chunk; when the file refuses it, the file is cut back to the chunks before, which still
    /// decode).
    fn append(&mut self, file: &mut StagedFile, text: &[u8]) -> io::Result<()> {
        match self {
            Encoding::Plain => file.append(text),
            Encoding::Gzip(gzip) => {
                // Writing into a `Vec` cannot fail; the flush makes every byte so far decodable.
                gzip.write_all(text)?;
                gzip.flush()?;
                let chunk = std::mem::take(gzip.get_mut());
                file.append(&chunk)
            }
        }
    }

    /// Write the end of the stream (gzip's last block and checksum), if it has one.
    fn finish(self, file: &mut StagedFile) -> io::Result<()> {
        match self {
            Encoding::Plain => Ok(()),
            Encoding::Gzip(gzip) => {
                let tail = gzip.finish()?;
                file.append(&tail)
            }
        }
    }
}

/// A file of one line per collection (plus an optional header): staged, stopped at the first
/// failed write, and finished into an [`OutputFailure`] when it is incomplete. Public for the
/// JVMTI agent's per-GC records, which follow the same rules. The GC trace uses it for binary
/// frames in place of lines ([`RecordLines::create_binary`], [`RecordLines::write_chunk`]).
#[derive(Debug)]
pub struct RecordLines {
    kind: OutputKind,
    path: PathBuf,
    file: StagedFile,
    encoding: Encoding,
    /// The id of the last collection written.
    written_through: Option<u64>,
    failed: Option<Failed>,
}

impl RecordLines {
    /// Starts the output at `path` and writes `header` (a whole line) if given.
    pub fn create(kind: OutputKind, path: &Path, header: Option<&str>) -> io::Result<Self> {
        Self::create_encoded(kind, path, header, Encoding::Plain)
    }

    /// [`RecordLines::create`] with the text encoded as `encoding` says.
    pub(crate) fn create_encoded(
        kind: OutputKind,
        path: &Path,
        header: Option<&str>,
        mut encoding: Encoding,
    ) -> io::Result<Self> {
        let mut file = StagedFile::create(path)?;
        if let Some(header) = header {
            encoding.append(&mut file, format!("{header}\n").as_bytes())?;
        }
        Ok(RecordLines {
            kind,
            path: path.to_path_buf(),
            file,
            encoding,
            written_through: None,
            failed: None,
        })
    }

    /// Starts a binary output at `path` (written as it is, never compressed) with `header`.
    pub(crate) fn create_binary(kind: OutputKind, path: &Path, header: &[u8]) -> io::Result<Self> {
        let mut file = StagedFile::create(path)?;
        file.append(header)?;
        Ok(RecordLines {
            kind,
            path: path.to_path_buf(),
            file,
            encoding: Encoding::Plain,
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
        self.write_chunk(id, || {
            format().map(|mut line| {
                line.push('\n');
                line.into_bytes()
            })
        });
    }

    /// Appends the bytes `format()` for collection `id`, whole or not at all (see
    /// [`RecordLines::write`]).
    pub(crate) fn write_chunk(&mut self, id: u64, format: impl FnOnce() -> io::Result<Vec<u8>>) {
        if self.written_through.is_some_and(|written| id <= written) {
            return;
        }
        if let Some(failed) = &mut self.failed {
            failed.last_lost = failed.last_lost.max(id);
            return;
        }
        let written = format().and_then(|bytes| self.encoding.append(&mut self.file, &bytes));
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
        self.write_notice_bytes(format!("{line}\n").as_bytes());
    }

    /// [`RecordLines::write_notice`] for bytes (the GC trace's end marker).
    pub(crate) fn write_notice_bytes(&mut self, bytes: &[u8]) {
        if self.failed.is_some() {
            return;
        }
        if let Err(error) = self.encoding.append(&mut self.file, bytes) {
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
            mut file,
            encoding,
            failed,
            ..
        } = self;
        // After a failed write the compressor holds text the file does not: no end is written
        // then (the stream would not check), and the file decodes up to its last whole chunk.
        let ended = match failed {
            None => encoding.finish(&mut file),
            Some(_) => Ok(()),
        };
        let committed = file.commit();
        let failure = |error: String, lost: String| OutputFailure {
            output: kind,
            path: path.clone(),
            error,
            lost,
        };
        match (failed, committed) {
            (None, Ok(())) => ended.map_err(|e| {
                failure(
                    e.to_string(),
                    "the end of its gzip stream is missing: every line is there, but zcat \
                     reports an unexpected end of file"
                        .to_string(),
                )
            }),
            (Some(f), Ok(())) => {
                let what = match kind {
                    OutputKind::GcLog => "the log lines",
                    OutputKind::GcTrace => "the traces",
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
