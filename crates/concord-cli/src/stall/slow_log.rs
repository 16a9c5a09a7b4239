//! The stalled log device (`--slow-log RATE`): the GC log goes to a FIFO whose kernel buffer
//! is one page, drained by a thread at RATE bytes per second, while a background writer keeps
//! the device busy with pages of its own (as other files' pages fill the writeback queue of a
//! busy disk in 002 §4). A pipe hands out room a page at a time, and waiting writers get it in
//! turn, so every `write()` of the log blocks in the kernel until a page has drained: about
//! 4 KiB / RATE (at 16k, a quarter of a second), up to twice that when the background writer
//! was first in line. Nothing in Concord sleeps; the VM thread (sync log) or the log's writer
//! thread (async log) is simply stuck in `write()`, as in 002 Fig. 8 (a 1.59 s pause for
//! 0.12 s of GC).
//!
//! The background pages are NUL bytes, which a text log never holds: the drainer drops them
//! and copies the log's own bytes to the `--gc-log` path (put in place at the end, like every
//! output), so the log is still there to read. When the workload has finished,
//! [`SlowLog::release`] stops the background writer and lets the drainer read at full speed,
//! so the heap's final flush is not stalled; [`SlowLog::finish`] waits for the writer to close
//! the FIFO, puts the copy in place and removes the FIFO's directory.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use concord::config::format_size;
use concord::os::fs::StagedFile;
use concord::os::pipe;
use serde_json::{json, Value};

use crate::interrupt;

/// How often the drainer reads.
const TICK: Duration = Duration::from_millis(5);
/// Bytes the drainer may read at once after it was idle (a token bucket of this depth): a
/// device that was idle does not swallow a burst larger than what it drains in 20 ms.
const BURST: Duration = Duration::from_millis(20);
/// How long [`SlowLog::finish`] waits for the writer to close the FIFO.
const CLOSE_WAIT: Duration = Duration::from_secs(5);
/// The smallest drain rate, bytes per second.
pub const MIN_RATE: u64 = 16;

/// What the drainer saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlowLogReport {
    /// The drain rate, bytes per second.
    pub rate: u64,
    /// The FIFO's buffer, bytes (one page).
    pub pipe_bytes: usize,
    /// Bytes the background writer put through the device.
    pub background_bytes: u64,
    /// Bytes of the GC log that went through the pipe.
    pub log_bytes: u64,
    /// Seconds the drainer ran throttled.
    pub throttled_s: f64,
}

impl SlowLogReport {
    /// The report as JSON for the summary.
    pub fn json(&self) -> Value {
        json!({
            "rate_bytes_per_s": self.rate,
            "pipe_bytes": self.pipe_bytes,
            "background_bytes": self.background_bytes,
            "log_bytes": self.log_bytes,
            "throttled_s": self.throttled_s,
        })
    }
}

/// State the drainer shares with its owner.
#[derive(Debug, Default)]
struct Shared {
    /// Read as fast as possible from now on.
    full_speed: AtomicBool,
    /// The writer is closing: end at end of file (or after [`CLOSE_WAIT`] without data).
    finishing: AtomicBool,
    /// End now.
    stop: AtomicBool,
    /// Bytes of the log drained so far.
    log_bytes: AtomicU64,
    /// Background bytes drained so far.
    background_bytes: AtomicU64,
    /// The background writer stops.
    quiet: AtomicBool,
}

/// A running stalled log device.
#[derive(Debug)]
pub struct SlowLog {
    /// The directory holding the FIFO (removed at the end).
    dir: PathBuf,
    /// The FIFO: the path the heap's GC log is written to.
    fifo: PathBuf,
    shared: Arc<Shared>,
    drainer: Option<JoinHandle<io::Result<Drained>>>,
    background: Option<JoinHandle<()>>,
    report: SlowLogReport,
}

/// What the drainer hands back: the copy of the log (to put in place) and the seconds it ran
/// throttled.
type Drained = (Option<StagedFile>, f64);

/// Distinguishes the FIFO directories of one process.
static NEXT: AtomicU64 = AtomicU64::new(0);

impl SlowLog {
    /// Creates the FIFO in a new directory under the system's temporary directory, starts the
    /// background writer and the drainer (at `rate` bytes per second); the log's bytes are
    /// copied to `copy_to` (put in place by [`SlowLog::finish`]) if given.
    pub fn start(rate: u64, copy_to: Option<&Path>) -> Result<SlowLog> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("concord-slow-log.{}.{n}", std::process::id()));
        std::fs::create_dir(&dir)
            .with_context(|| format!("--slow-log: cannot create {}", dir.display()))?;
        interrupt::remove_on_quit(&dir);
        let started = Self::start_in(&dir, rate, copy_to);
        if started.is_err() {
            let _ = std::fs::remove_dir_all(&dir);
            interrupt::forget_on_quit(&dir);
        }
        started
    }

    fn start_in(dir: &Path, rate: u64, copy_to: Option<&Path>) -> Result<SlowLog> {
        let fifo = dir.join("gc.log");
        pipe::make_fifo(&fifo)
            .with_context(|| format!("cannot make the FIFO {}", fifo.display()))?;
        let copy = copy_to
            .map(|p| {
                StagedFile::create(p)
                    .with_context(|| format!("--gc-log: cannot write {}", p.display()))
            })
            .transpose()?;
        let reader = pipe::open_fifo_reader(&fifo)?;
        let mut background = std::fs::OpenOptions::new().write(true).open(&fifo)?;
        let pipe_bytes =
            pipe::set_pipe_size(&background, 1).context("cannot shrink the FIFO's buffer")?;
        // The device is busy from the start: its one page is full before anyone writes.
        std::io::Write::write_all(&mut background, &vec![0u8; pipe_bytes])?;
        let shared = Arc::new(Shared::default());
        let mut slow = SlowLog {
            dir: dir.to_path_buf(),
            fifo,
            shared: shared.clone(),
            drainer: None,
            background: None,
            report: SlowLogReport {
                rate,
                pipe_bytes,
                ..SlowLogReport::default()
            },
        };
        let drainer = shared.clone();
        slow.drainer = Some(
            std::thread::Builder::new()
                .name("concord-slow-log".into())
                .spawn(move || drain(reader, rate, copy, &drainer))?,
        );
        slow.background = Some(
            std::thread::Builder::new()
                .name("concord-slow-log-bg".into())
                .spawn(move || {
                    use std::io::Write;
                    let page = vec![0u8; pipe_bytes];
                    while !shared.quiet.load(Ordering::SeqCst) {
                        if background.write_all(&page).is_err() {
                            break;
                        }
                    }
                })?,
        );
        Ok(slow)
    }

    /// The path to write the GC log to.
    pub fn path(&self) -> &Path {
        &self.fifo
    }

    /// Drain at full speed from now on (the workload has finished; the heap's final flush
    /// must not be stalled).
    pub fn release(&self) {
        self.shared.quiet.store(true, Ordering::SeqCst);
        self.shared.full_speed.store(true, Ordering::SeqCst);
    }

    /// Drains what is left once the writer closed the FIFO (at most [`CLOSE_WAIT`] after the
    /// last byte), puts the copy in place and removes the FIFO. An error says the copy could
    /// not be written.
    pub fn finish(mut self) -> Result<SlowLogReport> {
        self.release();
        if let Some(background) = self.background.take() {
            let _ = background.join();
        }
        self.shared.finishing.store(true, Ordering::SeqCst);
        let joined = self.drainer.take().map(|d| d.join());
        let mut report = self.report.clone();
        report.log_bytes = self.shared.log_bytes.load(Ordering::SeqCst);
        report.background_bytes = self.shared.background_bytes.load(Ordering::SeqCst);
        let result = match joined {
            Some(Ok(Ok((copy, throttled)))) => {
                report.throttled_s = throttled;
                copy.map(StagedFile::commit)
                    .transpose()
                    .map(drop)
                    .map_err(anyhow::Error::from)
            }
            Some(Ok(Err(e))) => Err(e.into()),
            Some(Err(_)) => Err(anyhow::anyhow!("the drainer thread panicked")),
            None => Ok(()),
        };
        result.context("the copy of the GC log from the slow log device")?;
        Ok(report)
    }
}

impl Drop for SlowLog {
    fn drop(&mut self) {
        self.release();
        if let Some(background) = self.background.take() {
            let _ = background.join();
        }
        self.shared.finishing.store(true, Ordering::SeqCst);
        if let Some(drainer) = self.drainer.take() {
            self.shared.stop.store(true, Ordering::SeqCst);
            let _ = drainer.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        interrupt::forget_on_quit(&self.dir);
    }
}

/// The drainer: reads at `rate` bytes per second (a token bucket [`BURST`] deep), drops the
/// background writer's NUL bytes and copies the rest. Returns the copy and the seconds it ran
/// throttled.
fn drain(
    mut reader: std::fs::File,
    rate: u64,
    mut copy: Option<StagedFile>,
    shared: &Shared,
) -> io::Result<Drained> {
    let mut buf = vec![0u8; 64 * 1024];
    let depth = (rate as f64 * BURST.as_secs_f64()).max(1.0);
    let mut tokens = depth;
    let mut last = Instant::now();
    let start = last;
    let mut throttled_until = start;
    let mut quiet_since: Option<Instant> = None;
    loop {
        if shared.stop.load(Ordering::SeqCst) {
            break;
        }
        let full = shared.full_speed.load(Ordering::SeqCst);
        let now = Instant::now();
        tokens = (tokens + rate as f64 * (now - last).as_secs_f64()).min(depth);
        last = now;
        if !full {
            throttled_until = now;
        }
        let want = if full {
            buf.len()
        } else {
            (tokens as usize).min(buf.len())
        };
        if want == 0 {
            std::thread::sleep(TICK);
            continue;
        }
        match reader.read(&mut buf[..want]) {
            // End of file: no writer has the FIFO open (not yet, or no more).
            Ok(0) if shared.finishing.load(Ordering::SeqCst) => break,
            Ok(0) => std::thread::sleep(TICK),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                // A writer that is still open but writes nothing (a run abandoned by a
                // signal) is not waited for forever.
                let quiet = *quiet_since.get_or_insert(now);
                if shared.finishing.load(Ordering::SeqCst) && now - quiet > CLOSE_WAIT {
                    break;
                }
                std::thread::sleep(TICK);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
            Ok(n) => {
                quiet_since = None;
                if !full {
                    tokens -= n as f64;
                }
                let mut log_bytes = 0;
                for piece in buf[..n].split(|b| *b == 0).filter(|p| !p.is_empty()) {
                    log_bytes += piece.len();
                    if let Some(c) = copy.as_mut() {
                        c.append(piece)?;
                    }
                }
                shared
                    .log_bytes
                    .fetch_add(log_bytes as u64, Ordering::SeqCst);
                shared
                    .background_bytes
                    .fetch_add((n - log_bytes) as u64, Ordering::SeqCst);
            }
        }
    }
    Ok((copy, (throttled_until - start).as_secs_f64()))
}

/// A drain rate as given (`1k` = 1024 bytes per second), with the allowed range in the error.
pub fn parse_rate(text: &str) -> std::result::Result<u64, String> {
    let allowed = || {
        format!(
            "(allowed: bytes per second from {MIN_RATE} to {}, e.g. 1k)",
            format_size(1 << 30)
        )
    };
    match concord::config::parse_size(text) {
        Ok(b) if (MIN_RATE as usize..=1 << 30).contains(&b) => Ok(b as u64),
        Ok(_) => Err(format!("is out of range {}", allowed())),
        Err(_) => Err(format!("is not a drain rate {}", allowed())),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("1k"), Ok(1024));
        assert_eq!(parse_rate("16"), Ok(16));
        for bad in ["0", "15", "2g", "fast", "-1"] {
            let e = parse_rate(bad).unwrap_err();
            assert!(
                e.contains("allowed: bytes per second from 16"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_write_to_the_slow_log_waits_for_the_drain_rate_and_the_copy_is_exact() {
        let dir = std::env::temp_dir().join(format!("concord-slowlog-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let copy = dir.join("copy.log");
        // 16 KiB/s: a write waits for a page (4 KiB) to drain, a quarter of a second, up to
        // twice that when the background writer was first in line.
        let slow = SlowLog::start(16 << 10, Some(&copy)).unwrap();
        let fifo = slow.path().to_path_buf();
        let mut log = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        let line = [b'y'; 512];
        for _ in 0..3 {
            // The last line has drained by then (512 bytes take 31 ms), so this one cannot
            // join its page.
            std::thread::sleep(Duration::from_millis(100));
            let begin = Instant::now();
            log.write_all(&line).unwrap();
            let waited = begin.elapsed();
            assert!(waited >= Duration::from_millis(150), "{waited:?}");
        }
        slow.release();
        let begin = Instant::now();
        for _ in 0..64 {
            log.write_all(&line).unwrap();
        }
        assert!(
            begin.elapsed() < Duration::from_secs(2),
            "released: full speed"
        );
        drop(log);
        let report = slow.finish().unwrap();
        assert_eq!(report.pipe_bytes, 4096);
        assert!(report.background_bytes >= 4096, "{report:?}");
        assert_eq!(report.log_bytes, 67 * 512);
        assert_eq!(std::fs::read(&copy).unwrap(), vec![b'y'; 67 * 512]);
        assert!(
            !fifo.exists() && !fifo.parent().unwrap().exists(),
            "the FIFO is removed"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
