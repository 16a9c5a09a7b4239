//! The background-writeback load (`--io-load CAP`), like 002's `background.load.sh`, which
//! copies big files over and over: a thread writes files of up to 64 MiB in 1 MiB blocks into
//! a directory (`--io-load-dir`, default: beside the GC log, so on the same file system) and
//! `fsync`s each when it is complete, keeping at most CAP bytes on disk at once (the oldest
//! file goes before a block would pass the cap). The files have no name (`O_TMPFILE`), so
//! their space returns to the file system when the load stops or the process ends in any way,
//! even by SIGKILL: nothing is left behind. The thread stops when the run ends.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use concord::config::format_size;
use concord::os::pipe::unnamed_file;
use serde_json::{json, Value};

/// Bytes of one write.
const BLOCK: usize = 1 << 20;
/// The largest file the load writes before it syncs it and starts the next.
const MAX_FILE: u64 = 64 << 20;
/// The smallest cap: one block.
pub const MIN_CAP: u64 = BLOCK as u64;

/// What the load did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoLoadReport {
    /// The directory it wrote in.
    pub dir: PathBuf,
    /// Its cap, bytes.
    pub cap: u64,
    /// Bytes written.
    pub written: u64,
    /// The most bytes its files held at once.
    pub peak_held: u64,
    /// `fsync` calls (one per complete file).
    pub fsyncs: u64,
    /// The longest `fsync`, ms.
    pub fsync_max_ms: f64,
    /// Why it stopped early (a full disk), if it did.
    pub error: Option<String>,
}

impl IoLoadReport {
    /// The report as JSON for the summary.
    pub fn json(&self) -> Value {
        json!({
            "dir": self.dir.display().to_string(),
            "cap_bytes": self.cap,
            "written_bytes": self.written,
            "peak_held_bytes": self.peak_held,
            "fsyncs": self.fsyncs,
            "fsync_max_ms": self.fsync_max_ms,
            "error": self.error,
        })
    }
}

/// A running load.
#[derive(Debug)]
pub struct IoLoad {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<IoLoadReport>>,
}

impl IoLoad {
    /// Checks `dir` (it must be a directory that takes files) and starts the load there.
    pub fn start(dir: &Path, cap: u64) -> Result<IoLoad> {
        if cap < MIN_CAP {
            bail!(
                "--io-load: '{}' is too small (allowed: at least {})",
                format_size(cap as usize),
                format_size(MIN_CAP as usize)
            );
        }
        check_dir(dir)?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (stop, dir) = (stop.clone(), dir.to_path_buf());
            std::thread::Builder::new()
                .name("concord-io-load".into())
                .spawn(move || write_until_stopped(dir, cap, &stop))?
        };
        Ok(IoLoad {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the load (its files are closed, so their space is freed) and says what it did.
    pub fn stop(mut self) -> IoLoadReport {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> IoLoadReport {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for IoLoad {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// `dir` must exist, be a directory and take a new file (bad input otherwise).
pub fn check_dir(dir: &Path) -> Result<()> {
    let meta = std::fs::metadata(dir)
        .with_context(|| format!("--io-load-dir: cannot use {}", dir.display()))?;
    if !meta.is_dir() {
        bail!(
            "--io-load-dir: {} is not a directory (allowed: an existing directory that takes new files)",
            dir.display()
        );
    }
    unnamed_file(dir)
        .map(drop)
        .with_context(|| format!("--io-load-dir: cannot write files in {}", dir.display()))
}

/// The load's thread: writes and syncs files until `stop`, keeping at most `cap` bytes.
fn write_until_stopped(dir: PathBuf, cap: u64, stop: &AtomicBool) -> IoLoadReport {
    let mut report = IoLoadReport {
        dir: dir.clone(),
        cap,
        ..IoLoadReport::default()
    };
    let file_size = (cap / 4).clamp(BLOCK as u64, MAX_FILE) / BLOCK as u64 * BLOCK as u64;
    // Not all zeros, so that no file system can store it as a hole or compress it away.
    let block: Vec<u8> = (0..BLOCK).map(|i| (i * 31 % 251) as u8).collect();
    let mut done: VecDeque<File> = VecDeque::new();
    let mut current: Option<(File, u64)> = None;
    let mut total: u64 = 0;
    let result = (|| -> std::io::Result<()> {
        while !stop.load(Ordering::SeqCst) {
            while total + BLOCK as u64 > cap {
                let Some(oldest) = done.pop_front() else {
                    break;
                };
                total -= oldest.metadata()?.len();
                drop(oldest);
            }
            if total + BLOCK as u64 > cap {
                // Only the file being written is left and it fills the cap: start over.
                current = None;
                total = 0;
            }
            let (file, len) = match current.as_mut() {
                Some(c) => c,
                None => current.insert((unnamed_file(&dir)?, 0)),
            };
            file.write_all(&block)?;
            *len += BLOCK as u64;
            total += BLOCK as u64;
            report.written += BLOCK as u64;
            report.peak_held = report.peak_held.max(total);
            if *len >= file_size {
                let begin = Instant::now();
                file.sync_all()?;
                report.fsyncs += 1;
                report.fsync_max_ms = report.fsync_max_ms.max(begin.elapsed().as_secs_f64() * 1e3);
                let (file, _) = current.take().expect("just written");
                done.push_back(file);
            }
        }
        Ok(())
    })();
    if let Err(e) = result {
        log::warn!("the I/O load in {} stopped: {e}", dir.display());
        report.error = Some(e.to_string());
    }
    drop(current);
    drop(done);
    report
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Bytes of the files in `dir` this process has open, from `/proc/self/fd`.
    fn held_in(dir: &Path) -> u64 {
        let Ok(fds) = std::fs::read_dir("/proc/self/fd") else {
            return 0;
        };
        fds.filter_map(Result::ok)
            .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|to| to.starts_with(dir)))
            .filter_map(|fd| std::fs::metadata(fd.path()).ok())
            .map(|m| m.len())
            .sum()
    }

    #[test]
    fn the_load_keeps_to_its_cap_syncs_and_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("concord-io-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cap = 8 << 20;
        let load = IoLoad::start(&dir, cap).unwrap();
        let begin = Instant::now();
        let mut seen = 0;
        while begin.elapsed() < Duration::from_secs(3) {
            // What the kernel says the load's open (unnamed) files in `dir` hold.
            let held = held_in(&dir);
            assert!(held <= cap, "{held} > {cap}");
            seen = seen.max(held);
            std::thread::sleep(Duration::from_millis(5));
        }
        let report = load.stop();
        assert!(report.error.is_none(), "{report:?}");
        assert!(report.peak_held <= cap && seen > 0, "{report:?}");
        assert!(
            report.written > cap,
            "it cycles through its files: {report:?}"
        );
        assert!(report.fsyncs >= 4, "{report:?}");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "no file is left"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_directories_and_caps_are_refused() {
        let err = IoLoad::start(Path::new("/nonexistent/concord"), 1 << 30).unwrap_err();
        assert!(
            format!("{err:#}").contains("--io-load-dir: cannot use"),
            "{err:#}"
        );
        let file =
            std::env::temp_dir().join(format!("concord-io-load-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let err = IoLoad::start(&file, 1 << 30).unwrap_err();
        assert!(format!("{err:#}").contains("is not a directory"), "{err:#}");
        std::fs::remove_file(&file).unwrap();
        let err = IoLoad::start(&std::env::temp_dir(), 4096).unwrap_err();
        assert!(
            format!("{err:#}").contains("too small (allowed: at least 1M)"),
            "{err:#}"
        );
    }
}
