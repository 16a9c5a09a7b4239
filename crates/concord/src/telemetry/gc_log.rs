//! A GC log in HotSpot's unified-logging `gc` format, so GCViewer, GCToolKit or gceasy read it:
//! `[1.234s][info][gc          ] GC(7) Pause Young (Allocation Failure) 77M->8M(248M) 9.696ms`.
//!
//! Two ways of writing it (`gc-log-mode`, paper 002):
//! - [`GcLogMode::Sync`], HotSpot 8's: the VM thread writes and flushes each collection's
//!   lines inside the pause, before the world resumes; a `write()` stalled behind writeback
//!   lengthens the pause, and the pause time includes it.
//! - [`GcLogMode::Async`], HotSpot 17's `-Xlog:async`: the VM thread only appends to a bounded
//!   in-memory buffer and a writer thread of the log's own does the `write()`s. When the
//!   buffer is full, lines are dropped and counted, never waited for, and the log says how
//!   many in a line of its own as soon as it can. Creating the log does not wait either: the
//!   header is buffered like any line, and a FIFO (whose opening waits for a reader) is opened
//!   by the writer. At exit the flush is bounded; what could not be written counts as dropped.
//!
//! After each safepoint that ran collections, a `[safepoint]` line (HotSpot 17's
//! `-Xlog:safepoint`) gives the time to safepoint and the whole time the world was stopped,
//! which with a sync log includes the log's own writes (the `[gc]` line, formatted before
//! them, cannot): so a stalled log write is visible in the log itself, to `concord diagnose`.
//!
//! Each line is written whole or not at all (see [`super::output`]).

use std::collections::VecDeque;
use std::io;
use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::output::{Encoding, OutputFailure, OutputKind, RecordLines};
use super::record::{CollectionKind, CollectionRecord};
pub use crate::config::GcLogMode;

const MB: usize = 1024 * 1024;

/// How a GC log is written: its mode, the async buffer's size and the bound of the final
/// flush.
#[derive(Clone, Copy, Debug)]
pub struct GcLogOptions {
    /// Sync or async.
    pub mode: GcLogMode,
    /// Bytes of lines the async buffer holds before it drops them.
    pub buffer: usize,
    /// How long finishing an async log waits for its writer.
    pub flush_timeout: Duration,
    /// The heap's start, time 0 of the log's timestamps.
    pub start: Instant,
    /// Write the log gzip-compressed (`gc-log-compress`).
    pub compress: bool,
    /// The GC worker threads (at most this many take part in a collection), named in the
    /// log's header as HotSpot names its `Parallel Workers`, so that tools that judge a
    /// pause's wall time against its CPU time (`concord diagnose`) know how many ran.
    pub gc_threads: usize,
}

/// What became of a log's lines, for the summary.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GcLogReport {
    /// Lines dropped: the async buffer was full, or the final flush ran out of time.
    pub dropped: u64,
    /// The longest single write of the log's lines, ms.
    pub write_max_ms: f64,
}

/// An async log's output before its writer has it: opened already, or (a FIFO) to be opened
/// by the writer with this encoding.
#[derive(Debug)]
enum Unopened {
    Opened(RecordLines),
    Deferred(Encoding),
}

/// A GC log being written (see [`super::output`]: staged beside its path, put in place when
/// the heap finishes).
#[derive(Debug)]
pub struct GcLog {
    mode: Mode,
    /// The last collection handed to the log (written, buffered or dropped): closing the
    /// heap hands over every record it has, and only the newer ones are the log's business.
    last_id: Option<u64>,
}

#[derive(Debug)]
enum Mode {
    Sync { out: RecordLines, write_max_ms: f64 },
    Async(AsyncLog),
}

impl GcLog {
    /// Start the log for `path` and write the header lines, HotSpot 17's `Using …` and
    /// `[gc,init] Parallel Workers: N` (an async log starts its writer thread). `path` itself
    /// is replaced only by [`GcLog::finish`].
    pub fn create(path: &Path, collector: &str, options: GcLogOptions) -> io::Result<Self> {
        let header = format!(
            "[0.000s][info][gc] Using {collector}\n[0.000s][info][gc,init] Parallel Workers: {}",
            options.gc_threads
        );
        let encoding = Encoding::new(options.compress);
        let mode = match options.mode {
            GcLogMode::Sync => Mode::Sync {
                out: RecordLines::create_encoded(OutputKind::GcLog, path, Some(&header), encoding)?,
                write_max_ms: 0.0,
            },
            // Nothing of an async log may wait: its header is buffered like any line, and a
            // FIFO, whose opening waits for a reader, is opened by the writer. Any other path
            // is opened here, so one that cannot be written is refused before the run.
            GcLogMode::Async => {
                let out = if crate::os::fs::is_fifo(path) {
                    Unopened::Deferred(encoding)
                } else {
                    Unopened::Opened(RecordLines::create_encoded(
                        OutputKind::GcLog,
                        path,
                        None,
                        encoding,
                    )?)
                };
                Mode::Async(AsyncLog::start(path, out, header, options)?)
            }
        };
        Ok(Self {
            mode,
            last_id: None,
        })
    }

    /// The mode the log is written in.
    pub fn mode(&self) -> GcLogMode {
        match self.mode {
            Mode::Sync { .. } => GcLogMode::Sync,
            Mode::Async(_) => GcLogMode::Async,
        }
    }

    /// Log one collection (once per collection) and return the time this call spent writing,
    /// ms: the write itself in sync mode, 0 in async mode (the line only joins the buffer, or
    /// is dropped when the buffer is full). After a failed write the log stops; [`GcLog::finish`]
    /// reports it.
    pub fn write_record(&mut self, r: &CollectionRecord) -> f64 {
        if self.last_id.is_some_and(|last| r.id <= last) {
            return 0.0;
        }
        self.last_id = Some(r.id);
        match &mut self.mode {
            Mode::Sync { out, write_max_ms } => {
                let start = Instant::now();
                out.write(r, |r| Ok(format_collection(r)));
                let ms = start.elapsed().as_secs_f64() * 1e3;
                *write_max_ms = write_max_ms.max(ms);
                ms
            }
            Mode::Async(log) => {
                log.push(Some(r.id), format_collection(r));
                0.0
            }
        }
    }

    /// Log a safepoint's `[safepoint]` line, once the world runs again (as HotSpot 17 does):
    /// its time at the safepoint includes what the pause spent writing a sync log, which the
    /// `[gc]` line, formatted before the write, does not show. Written by the caller in sync
    /// mode (off the pause, but still a `write()` of the VM thread), buffered in async mode.
    pub fn write_safepoint(&mut self, s: &SafepointTimes) {
        let line = format_safepoint(s);
        match &mut self.mode {
            Mode::Sync { out, write_max_ms } => {
                let start = Instant::now();
                out.write_notice(&line);
                *write_max_ms = write_max_ms.max(start.elapsed().as_secs_f64() * 1e3);
            }
            Mode::Async(log) => log.push(None, line),
        }
    }

    /// Put the log in place (an async log's writer gets at most its flush timeout to write
    /// what is buffered) and say what became of its lines; the error says what the file is
    /// missing.
    pub fn finish(self) -> (GcLogReport, Result<(), OutputFailure>) {
        match self.mode {
            Mode::Sync { out, write_max_ms } => (
                GcLogReport {
                    dropped: 0,
                    write_max_ms,
                },
                out.finish(),
            ),
            Mode::Async(log) => log.finish(),
        }
    }
}

/// The state the VM thread and the writer share.
#[derive(Debug, Default)]
struct Buffer {
    /// Lines waiting for the writer: each collection's, with its id, and lines of no one
    /// collection (`None`: a safepoint's).
    lines: VecDeque<(Option<u64>, String)>,
    /// Bytes of `lines`.
    bytes: usize,
    /// Lines dropped since the writer last reported it.
    dropped_unreported: u64,
    /// Lines dropped in all.
    dropped: u64,
    /// The longest single write so far, ms.
    write_max_ms: f64,
    /// Log lines the writer has taken and not yet written.
    in_flight: u64,
    /// Set by `finish`: write what is left and stop.
    closing: bool,
}

#[derive(Debug)]
struct Shared {
    buffer: Mutex<Buffer>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        // The buffer is consistent after every statement: a panicking holder leaves it usable.
        self.buffer.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An async log: the bounded buffer and its writer thread.
#[derive(Debug)]
struct AsyncLog {
    shared: Arc<Shared>,
    path: std::path::PathBuf,
    /// Whether the path is written in place (a FIFO, a device), not staged beside it.
    in_place: bool,
    capacity: usize,
    flush_timeout: Duration,
    /// The writer, which hands the output back when it has written everything (or why it
    /// could not open it); taken when the log is closed.
    writer: Option<JoinHandle<()>>,
    done: mpsc::Receiver<io::Result<RecordLines>>,
}

impl AsyncLog {
    /// Starts the writer with `header` as the first buffered line.
    fn start(
        path: &Path,
        out: Unopened,
        header: String,
        options: GcLogOptions,
    ) -> io::Result<Self> {
        let buffer = Buffer {
            bytes: header.len() + 1,
            lines: VecDeque::from([(None, header)]),
            ..Buffer::default()
        };
        let shared = Arc::new(Shared {
            buffer: Mutex::new(buffer),
            wake: Condvar::new(),
        });
        let (done_tx, done) = mpsc::channel();
        let writer_shared = Arc::clone(&shared);
        let start = options.start;
        let writer_path = path.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("concord-gc-log".into())
            .spawn(move || {
                let opened = match out {
                    Unopened::Opened(out) => Ok(out),
                    Unopened::Deferred(encoding) => {
                        RecordLines::create_encoded(OutputKind::GcLog, &writer_path, None, encoding)
                    }
                };
                let out = match opened {
                    Ok(out) => Ok(write_until_closed(&writer_shared, out, start)),
                    Err(e) => {
                        drop_until_closed(&writer_shared);
                        Err(e)
                    }
                };
                // The receiver is gone only when `finish` gave up waiting: then nothing is
                // put in place, and dropping the output removes its temporary file.
                let _ = done_tx.send(out);
            })?;
        Ok(AsyncLog {
            shared,
            in_place: crate::os::fs::written_in_place(path),
            path: path.to_path_buf(),
            capacity: options.buffer,
            flush_timeout: options.flush_timeout,
            writer: Some(writer),
            done,
        })
    }

    /// Buffers `line`, or drops and counts it when the buffer has no room: never waits for
    /// the writer.
    fn push(&self, id: Option<u64>, line: String) {
        let mut b = self.shared.lock();
        if b.bytes + line.len() + 1 > self.capacity {
            let lines = line.lines().count() as u64;
            b.dropped += lines;
            b.dropped_unreported += lines;
        } else {
            b.bytes += line.len() + 1;
            b.lines.push_back((id, line));
        }
        drop(b);
        self.shared.wake.notify_one();
    }

    /// Tells the writer to write what is buffered and stop, and waits for it at most the
    /// flush timeout: the output back, or `None` when the writer is still blocked in a write.
    fn close(&mut self) -> Option<io::Result<RecordLines>> {
        let writer = self.writer.take()?;
        self.shared.lock().closing = true;
        self.shared.wake.notify_one();
        let out = self.done.recv_timeout(self.flush_timeout).ok()?;
        let _ = writer.join();
        Some(out)
    }

    fn finish(mut self) -> (GcLogReport, Result<(), OutputFailure>) {
        let written = self.close();
        let mut b = self.shared.lock();
        let failure = |error: String, lost: String| OutputFailure {
            output: OutputKind::GcLog,
            path: self.path.clone(),
            error,
            lost,
        };
        let result = match written {
            Some(Ok(out)) => out.finish(),
            Some(Err(e)) => Err(failure(
                format!("it could not be opened ({e})"),
                format!("none of its {} lines was written", b.dropped),
            )),
            None => {
                // The writer is stuck (in a write, or waiting for a FIFO's reader): what it
                // still holds is lost, and so is the file if it is a staged one.
                let lost = line_count(&b.lines) + b.in_flight;
                b.dropped += lost;
                b.lines.clear();
                let kept = if self.in_place {
                    "the path, written in place, keeps the lines written before"
                } else {
                    "a file staged beside the path is not put in place"
                };
                Err(failure(
                    format!(
                        "its writer was still blocked after {:?} (a write, or opening a FIFO \
                         nobody reads)",
                        self.flush_timeout
                    ),
                    format!("{lost} lines that were not written yet are dropped, and {kept}"),
                ))
            }
        };
        let report = GcLogReport {
            dropped: b.dropped,
            write_max_ms: b.write_max_ms,
        };
        (report, result)
    }
}

impl Drop for AsyncLog {
    /// A log dropped without `finish` (the heap could not be created) stops its writer, whose
    /// output is dropped then, and so leaves no temporary file.
    fn drop(&mut self) {
        drop(self.close());
    }
}

/// The writer thread: writes the buffered lines, and a line counting the dropped ones as soon
/// as there are some, until the log is closed and everything buffered is written.
fn write_until_closed(shared: &Shared, mut out: RecordLines, start: Instant) -> RecordLines {
    loop {
        let (lines, dropped, closing) = {
            let mut b = shared.lock();
            while b.lines.is_empty() && b.dropped_unreported == 0 && !b.closing {
                b = shared.wake.wait(b).unwrap_or_else(|p| p.into_inner());
            }
            b.bytes = 0;
            b.in_flight = line_count(&b.lines);
            let dropped = std::mem::take(&mut b.dropped_unreported);
            (std::mem::take(&mut b.lines), dropped, b.closing)
        };
        let mut write_max_ms: f64 = 0.0;
        let mut timed = |write: &mut dyn FnMut(&mut RecordLines)| {
            let begin = Instant::now();
            write(&mut out);
            write_max_ms = write_max_ms.max(begin.elapsed().as_secs_f64() * 1e3);
        };
        for (id, text) in lines {
            let count = text.lines().count() as u64;
            let mut text = Some(text);
            timed(&mut |out| match id {
                Some(id) => out.write_line(id, || Ok(text.take().unwrap_or_default())),
                None => out.write_notice(text.as_deref().unwrap_or_default()),
            });
            shared.lock().in_flight -= count;
        }
        if dropped > 0 {
            let notice = dropped_notice(start.elapsed().as_secs_f64(), dropped);
            timed(&mut |out| out.write_notice(&notice));
        }
        let mut b = shared.lock();
        b.write_max_ms = b.write_max_ms.max(write_max_ms);
        if closing && b.lines.is_empty() && b.dropped_unreported == 0 {
            return out;
        }
    }
}

/// The writer of a log that could not be opened: every line handed to it is dropped and
/// counted, until the log is closed.
fn drop_until_closed(shared: &Shared) {
    let mut b = shared.lock();
    loop {
        let lost = line_count(&b.lines);
        b.dropped += lost;
        b.lines.clear();
        b.bytes = 0;
        if b.closing {
            return;
        }
        b = shared.wake.wait(b).unwrap_or_else(|p| p.into_inner());
    }
}

/// The log lines in `entries` (each entry is one collection's lines).
fn line_count(entries: &VecDeque<(Option<u64>, String)>) -> u64 {
    entries
        .iter()
        .map(|(_, text)| text.lines().count() as u64)
        .sum()
}

/// HotSpot's line for messages its async logging dropped.
fn dropped_notice(seconds: f64, dropped: u64) -> String {
    format!("[{seconds:.3}s][warning][gc] {dropped} messages dropped due to async logging")
}

/// The width HotSpot 17 pads a line's tag set to (`[gc,start    ]`): its decorations are as
/// wide as the widest tag set the log has printed so far, which in a `-Xlog:gc*` log is
/// `gc,metaspace` (12) from the JVM's start on, before the first collection.
const TAG_WIDTH: usize = 12;

/// A line's `[uptime][info][tags]` decorations, the tags padded as HotSpot 17 pads them.
fn decorations(seconds: f64, tags: &str) -> String {
    format!("[{seconds:.3}s][info][{tags:<TAG_WIDTH$}]")
}

/// The `[gc]` line for a record. Its timestamp is the pause's end, as HotSpot's is (the line
/// is logged when the pause is over), so tools place the pause at `[t - pause, t]`.
pub fn format_record(r: &CollectionRecord) -> String {
    format!(
        "{} GC({}) {} ({}) {}M->{}M({}M) {:.3}ms",
        decorations((r.start_ms + r.pause_ms) / 1e3, "gc"),
        r.id,
        pause_name(r),
        r.cause.as_str(),
        r.heap_before / MB,
        r.heap_after / MB,
        r.heap_capacity / MB,
        r.pause_ms
    )
}

/// The `[gc,cpu]` line for a record, as HotSpot 17 logs it after the `[gc]` line:
/// `GC(3) User=0.01s Sys=0.00s Real=0.00s`: the CPU time of all GC threads during the pause
/// in user mode and in the kernel, and the pause's wall time, in seconds to two decimals.
pub fn format_cpu(r: &CollectionRecord) -> String {
    format!(
        "{} GC({}) User={:.2}s Sys={:.2}s Real={:.2}s",
        decorations((r.start_ms + r.pause_ms) / 1e3, "gc,cpu"),
        r.id,
        r.gc_user_ms / 1e3,
        r.gc_sys_ms / 1e3,
        r.pause_ms / 1e3
    )
}

/// A collection's lines in HotSpot 17's `-Xlog:gc*` form, one string without a final newline:
/// `[gc,start]` at the pause's start, then at its end `[gc,heap]` (young and old
/// generations before->after), `[gc,phases]` (the collection's phases), the `[gc]` line and
/// `[gc,cpu]` (the GC threads' CPU time).
pub fn format_collection(r: &CollectionRecord) -> String {
    let start = r.start_ms / 1e3;
    let end = (r.start_ms + r.pause_ms) / 1e3;
    let mut lines = vec![format!(
        "{} GC({}) {} ({})",
        decorations(start, "gc,start"),
        r.id,
        pause_name(r),
        r.cause.as_str()
    )];
    for (generation, before, after) in [
        ("Young", r.young_before, r.young_after),
        ("Old", r.old_before, r.old_after),
    ] {
        lines.push(format!(
            "{} GC({}) {generation}: {}K->{}K",
            decorations(end, "gc,heap"),
            r.id,
            before / 1024,
            after / 1024
        ));
    }
    let p = &r.phases;
    let phases = [("Init", p.init_ms), ("Parallel", p.parallel_ms)]
        .into_iter()
        .chain(p.steps.iter().copied())
        .chain([("Final", p.final_ms)]);
    for (phase, ms) in phases {
        lines.push(format!(
            "{} GC({}) {phase}: {ms:.3}ms",
            decorations(end, "gc,phases"),
            r.id
        ));
    }
    lines.push(format_record(r));
    lines.push(format_cpu(r));
    lines.join("\n")
}

/// One safepoint (a VM operation: the world stopped for one or more collections), as HotSpot
/// 17's `-Xlog:safepoint` reports it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SafepointTimes {
    /// The operation, in HotSpot's names (`ParallelGCFailedAllocation`, `ParallelGCSystemGC`).
    pub name: &'static str,
    /// When the world ran again, seconds since the heap was created (the line's time stamp).
    pub end_s: f64,
    /// From the end of the previous safepoint to the request that began this one.
    pub since_last: Duration,
    /// Time to safepoint: from the request until every mutator had stopped.
    pub reaching: Duration,
    /// From then until the world ran again: the collections, and a sync log's writes.
    pub at_safepoint: Duration,
}

/// The `[safepoint]` line of HotSpot 17: `Safepoint "ParallelGCFailedAllocation", Time since
/// last: N ns, Reaching safepoint: N ns, Cleanup: N ns, At safepoint: N ns, Total: N ns`
/// (Concord has no safepoint clean-up: 0 ns).
pub fn format_safepoint(s: &SafepointTimes) -> String {
    let ns = |d: Duration| d.as_nanos();
    format!(
        "{} Safepoint \"{}\", Time since last: {} ns, Reaching safepoint: {} ns, Cleanup: 0 ns, \
         At safepoint: {} ns, Total: {} ns",
        decorations(s.end_s, "safepoint"),
        s.name,
        ns(s.since_last),
        ns(s.reaching),
        ns(s.at_safepoint),
        ns(s.reaching + s.at_safepoint)
    )
}

fn pause_name(r: &CollectionRecord) -> &'static str {
    match r.kind {
        CollectionKind::Young => "Pause Young",
        CollectionKind::Full => "Pause Full",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::fs::{File, OpenOptions};
    use std::io::{Read, Write};
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::OpenOptionsExt;
    use std::path::PathBuf;

    #[test]
    fn gc_line_is_stamped_with_the_pause_end() {
        let mut r = CollectionRecord::test_young(3);
        r.start_ms = 1_000.0;
        r.pause_ms = 250.0;
        let line = format_record(&r);
        assert!(
            line.starts_with("[1.250s][info][gc          ] GC(3) Pause Young"),
            "{line}"
        );
        assert!(line.ends_with(" 250.000ms"), "{line}");
    }

    /// A FIFO in a fresh directory, with its read end open (non-blocking) so that the log can
    /// open it for writing.
    fn fifo(name: &str) -> (PathBuf, File) {
        let dir = std::env::temp_dir().join(format!("concord-gclog-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.log");
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let reader = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&path)
            .unwrap();
        (path, reader)
    }

    /// Fills the pipe behind `path` until a write would block: the log's next write blocks
    /// until someone reads.
    fn fill_pipe(path: &Path) {
        let mut filler = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .unwrap();
        let chunk = [b'x'; 4096];
        while filler.write(&chunk).is_ok() {}
    }

    fn options(mode: GcLogMode, buffer: usize, flush_timeout: Duration) -> GcLogOptions {
        GcLogOptions {
            mode,
            buffer,
            flush_timeout,
            start: Instant::now(),
            compress: false,
            gc_threads: 2,
        }
    }

    /// Everything readable from `reader` now.
    fn available(reader: &mut File) -> String {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 65536];
        while let Ok(n @ 1..) = reader.read(&mut chunk) {
            bytes.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8(bytes).unwrap()
    }

    /// Reads until an async log's writer has written the header (a watchdog bounds the wait:
    /// the writer is not blocked here, so it writes at once).
    fn read_header(reader: &mut File) {
        let begin = Instant::now();
        let mut text = String::new();
        while !text.contains("Parallel Workers: 2\n") {
            assert!(
                begin.elapsed() < Duration::from_secs(600),
                "no header: {text:?}"
            );
            text.push_str(&available(reader));
            std::thread::yield_now();
        }
    }

    /// Runs `f` on a thread and waits for it at most 600 s: a watchdog, not a timing
    /// assertion (what it guards would otherwise block for ever).
    fn within_bound<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(600))
            .unwrap_or_else(|_| panic!("{what} blocked"))
    }

    #[test]
    fn creating_an_async_log_on_a_stalled_fifo_does_not_wait_for_the_header() {
        let (path, reader) = fifo("stalled-header");
        // Nobody reads: the header's write would block.
        fill_pipe(&path);
        let opts = options(GcLogMode::Async, 64 * 1024, Duration::ZERO);
        let create_path = path.clone();
        let mut log = within_bound("creating the log", move || {
            GcLog::create(&create_path, "test", opts).unwrap()
        });
        log.write_record(&CollectionRecord::test_young(0));
        let (report, result) = log.finish();
        // The header's 2 lines and the collection's 8, none written.
        assert_eq!(report.dropped, 2 + 8);
        let failure = result.unwrap_err();
        assert!(failure.error.contains("still blocked after"), "{failure}");
        // A FIFO is written in place: no file is staged beside it.
        assert!(
            failure
                .lost
                .ends_with("the path, written in place, keeps the lines written before"),
            "{failure}"
        );
        drop(reader);
    }

    #[test]
    fn an_async_log_on_a_fifo_nobody_opens_does_not_wait_for_a_reader() {
        let dir =
            std::env::temp_dir().join(format!("concord-gclog-{}-noreader", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.log");
        let c = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: `c` is a valid NUL-terminated path for the duration of the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo");
        let opts = options(GcLogMode::Async, 64 * 1024, Duration::from_millis(100));
        let create_path = path.clone();
        let mut log = within_bound("creating the log", move || {
            GcLog::create(&create_path, "test", opts).unwrap()
        });
        log.write_record(&CollectionRecord::test_young(0));
        let (report, result) = within_bound("finishing the log", move || log.finish());
        assert_eq!(report.dropped, 2 + 8);
        let failure = result.unwrap_err();
        assert!(
            failure.error.contains("opening a FIFO nobody reads"),
            "{failure}"
        );
        // Let the writer, still waiting for a reader, open the FIFO and end.
        let mut reader = File::open(&path).unwrap();
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_collection_is_logged_with_hotspot_17_tags() {
        let mut r = CollectionRecord::test_young(4);
        r.start_ms = 2_000.0;
        r.pause_ms = 5.0;
        r.young_before = 4096 * 1024;
        r.young_after = 512 * 1024;
        r.old_before = 1024 * 1024;
        r.old_after = 1536 * 1024;
        r.phases.init_ms = 1.0;
        r.phases.parallel_ms = 3.5;
        r.phases.final_ms = 0.5;
        r.gc_user_ms = 7.0;
        r.gc_sys_ms = 12.0;
        let text = format_collection(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "[2.000s][info][gc,start    ] GC(4) Pause Young (Allocation Failure)",
                "[2.005s][info][gc,heap     ] GC(4) Young: 4096K->512K",
                "[2.005s][info][gc,heap     ] GC(4) Old: 1024K->1536K",
                "[2.005s][info][gc,phases   ] GC(4) Init: 1.000ms",
                "[2.005s][info][gc,phases   ] GC(4) Parallel: 3.500ms",
                "[2.005s][info][gc,phases   ] GC(4) Final: 0.500ms",
                "[2.005s][info][gc          ] GC(4) Pause Young (Allocation Failure) 0M->0M(0M) \
                 5.000ms",
                "[2.005s][info][gc,cpu      ] GC(4) User=0.01s Sys=0.01s Real=0.01s",
            ]
        );
    }

    #[test]
    fn a_sync_log_has_written_each_line_when_the_call_returns() {
        let (path, mut reader) = fifo("sync");
        let long = Duration::from_secs(3600);
        let mut log = GcLog::create(&path, "test", options(GcLogMode::Sync, 1024, long)).unwrap();
        assert!(available(&mut reader)
            .ends_with("Using test\n[0.000s][info][gc,init] Parallel Workers: 2\n"));
        for id in 0..3 {
            log.write_record(&CollectionRecord::test_young(id));
            let text = available(&mut reader);
            assert!(
                text.contains(&format!("[gc          ] GC({id}) Pause Young")),
                "{text:?}"
            );
            // The collection's last line, whole.
            assert!(text.ends_with("Real=0.00s\n"), "{text:?}");
        }
        let (report, result) = log.finish();
        assert!(result.is_ok());
        assert_eq!(report.dropped, 0);
    }

    #[test]
    fn an_async_log_drops_and_counts_instead_of_waiting_for_a_blocked_writer() {
        let (path, mut reader) = fifo("async");
        let long = Duration::from_secs(3600);
        let mut log = GcLog::create(&path, "test", options(GcLogMode::Async, 1024, long)).unwrap();
        read_header(&mut reader);
        // Nobody reads: the writer blocks on its first write, so the 1 KiB buffer fills up.
        fill_pipe(&path);
        let records = 2_000;
        // A watchdog, not a timing assertion: a log that waited for its writer would block
        // here for ever.
        let (done_tx, done) = mpsc::channel();
        let pusher = std::thread::spawn(move || {
            for id in 0..records {
                assert_eq!(log.write_record(&CollectionRecord::test_young(id)), 0.0);
            }
            done_tx.send(()).unwrap();
            log
        });
        done.recv_timeout(Duration::from_secs(600))
            .expect("the async log waited for its blocked writer");
        let log = pusher.join().unwrap();
        // Now drain the pipe until the log is finished.
        let drain = std::thread::spawn(move || {
            let mut text = String::new();
            loop {
                let chunk = available(&mut reader);
                text.push_str(&chunk);
                if text.contains("messages dropped due to async logging\n")
                    && text.ends_with('\n')
                    && chunk.is_empty()
                {
                    // Read until the writer closes its end (end of file reads 0 bytes).
                    let mut rest = Vec::new();
                    let mut blocking = reader;
                    // SAFETY: clearing O_NONBLOCK on a descriptor this test owns.
                    unsafe {
                        use std::os::fd::AsRawFd;
                        libc::fcntl(blocking.as_raw_fd(), libc::F_SETFL, 0);
                    }
                    blocking.read_to_end(&mut rest).unwrap();
                    text.push_str(&String::from_utf8(rest).unwrap());
                    return text;
                }
                std::thread::yield_now();
            }
        });
        let (report, result) = log.finish();
        assert!(result.is_ok(), "{result:?}");
        let text = drain.join().unwrap();
        let logged = text.matches("GC(").count() as u64;
        assert!(report.dropped > 0);
        let lines_per_collection = 8;
        assert_eq!(logged + report.dropped, records * lines_per_collection);
        let notices: u64 = text
            .lines()
            .filter_map(|l| l.strip_suffix(" messages dropped due to async logging"))
            .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
            .sum();
        assert_eq!(notices, report.dropped, "{text}");
        // Whole lines only: the filler's bytes, then the log's lines, each complete.
        let log_text = text.trim_start_matches('x');
        assert!(log_text.lines().all(|l| l.starts_with('[')), "{log_text}");
    }

    /// What a gzip stream's first `bytes` decode to (a cut stream decodes up to its last
    /// flush).
    fn gunzip_prefix(bytes: &[u8]) -> String {
        let mut decoder = flate2::write::GzDecoder::new(Vec::new());
        decoder.write_all(bytes).unwrap();
        decoder.flush().unwrap();
        String::from_utf8(decoder.get_ref().clone()).unwrap()
    }

    /// A whole gzip stream, decoded; panics if it does not end with a valid checksum.
    fn gunzip(bytes: &[u8]) -> String {
        let mut text = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut text)
            .unwrap();
        text
    }

    /// The header and every record's lines, as an uncompressed log holds them.
    fn plain_log(records: &[CollectionRecord]) -> String {
        let mut text = "[0.000s][info][gc] Using test\n\
                        [0.000s][info][gc,init] Parallel Workers: 2\n"
            .to_string();
        for r in records {
            text.push_str(&format_collection(r));
            text.push('\n');
        }
        text
    }

    fn test_records(n: u64) -> Vec<CollectionRecord> {
        (0..n)
            .map(|id| {
                let mut r = CollectionRecord::test_young(id);
                r.start_ms = 10.0 * id as f64;
                r.pause_ms = 1.5;
                r.gc_user_ms = 2.0;
                r.gc_sys_ms = 30.0;
                r
            })
            .collect()
    }

    #[test]
    fn a_compressed_sync_log_decodes_to_every_collection_so_far_after_each_write() {
        let (path, mut reader) = fifo("gzip-sync");
        let long = Duration::from_secs(3600);
        let opts = GcLogOptions {
            compress: true,
            ..options(GcLogMode::Sync, 1024, long)
        };
        let mut log = GcLog::create(&path, "test", opts).unwrap();
        let mut bytes = Vec::new();
        let records = test_records(4);
        for (i, r) in records.iter().enumerate() {
            log.write_record(r);
            let mut chunk = Vec::new();
            let _ = reader.read_to_end(&mut chunk);
            bytes.extend_from_slice(&chunk);
            // Were the process to die now, the file would hold every collection so far.
            assert_eq!(gunzip_prefix(&bytes), plain_log(&records[..=i]));
        }
        let (report, result) = log.finish();
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(report.dropped, 0);
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        bytes.extend_from_slice(&rest);
        // Finished: a whole gzip stream, its checksum included.
        assert_eq!(gunzip(&bytes), plain_log(&records));
    }

    #[test]
    fn a_compressed_async_log_is_one_gzip_stream_of_the_same_lines() {
        let dir = std::env::temp_dir().join(format!("concord-gzlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.log.gz");
        let opts = GcLogOptions {
            compress: true,
            ..options(GcLogMode::Async, 1 << 20, Duration::from_secs(600))
        };
        let mut log = GcLog::create(&path, "test", opts).unwrap();
        let records = test_records(50);
        records.iter().for_each(|r| {
            log.write_record(r);
        });
        let (report, result) = log.finish();
        assert!(result.is_ok(), "{result:?}");
        assert_eq!(report.dropped, 0);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");
        let text = gunzip(&bytes);
        assert_eq!(text, plain_log(&records));
        // Compressed: far smaller than the text.
        assert!(
            bytes.len() * 3 < text.len(),
            "{} vs {}",
            bytes.len(),
            text.len()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_safepoint_line_is_hotspot_17s() {
        let s = SafepointTimes {
            name: "ParallelGCFailedAllocation",
            end_s: 2.75,
            since_last: Duration::from_nanos(2_647_627),
            reaching: Duration::from_nanos(3175),
            at_safepoint: Duration::from_nanos(1_590_509_320),
        };
        assert_eq!(
            format_safepoint(&s),
            "[2.750s][info][safepoint   ] Safepoint \"ParallelGCFailedAllocation\", Time since \
             last: 2647627 ns, Reaching safepoint: 3175 ns, Cleanup: 0 ns, At safepoint: \
             1590509320 ns, Total: 1590512495 ns"
        );
    }

    /// Closing a heap hands the log every record it has; the ones already handed over must not
    /// be buffered again (they filled the buffer and were counted as dropped).
    #[test]
    fn records_handed_over_again_are_neither_buffered_nor_counted_twice() {
        let (path, mut reader) = fifo("again");
        let opts = options(GcLogMode::Async, 64 * 1024, Duration::ZERO);
        let mut log = GcLog::create(&path, "test", opts).unwrap();
        read_header(&mut reader);
        // The writer stays blocked, so everything buffered is still there when `finish` gives
        // up, and is counted: exactly what was handed over once.
        fill_pipe(&path);
        for _ in 0..2 {
            for id in 0..5 {
                log.write_record(&CollectionRecord::test_young(id));
            }
        }
        let (report, _) = log.finish();
        assert_eq!(report.dropped, 5 * 8);
        drop(reader);
    }

    #[test]
    fn an_async_flush_that_runs_out_of_time_counts_the_unwritten_lines_as_dropped() {
        let (path, mut reader) = fifo("timeout");
        let opts = options(GcLogMode::Async, 64 * 1024, Duration::ZERO);
        let mut log = GcLog::create(&path, "test", opts).unwrap();
        read_header(&mut reader);
        fill_pipe(&path);
        for id in 0..5 {
            log.write_record(&CollectionRecord::test_young(id));
        }
        let (report, result) = log.finish();
        // Nothing could be written: the pipe stayed full (8 lines per collection).
        assert_eq!(report.dropped, 5 * 8);
        let failure = result.unwrap_err();
        assert!(failure.error.contains("still blocked after"), "{failure}");
        assert!(failure.lost.starts_with("40 lines"), "{failure}");
        // Closing the read end fails the writer's write, and its thread ends.
        drop(reader);
    }
}
