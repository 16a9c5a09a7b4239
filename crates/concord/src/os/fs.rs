//! Files that readers must never see half written: the collector's outputs (GC log, records,
//! mutator profile) and its tools' results directories.
//!
//! A [`StagedFile`] is written under a hidden temporary name next to its path (same directory,
//! so the same file system) and renamed over the path only when it is committed, so an
//! existing file stays as it was until the new one is complete, and a writer that gives up
//! (or is dropped) leaves nothing behind. Paths that are not regular files — a device such as
//! `/dev/null` or `/dev/full`, a FIFO, anything under `/dev` or `/proc` such as
//! `/dev/stdout` — cannot be replaced by a rename and are written in place.
//!
//! Every temporary file of the process is known here, so a program that must exit at once
//! (a second Ctrl-C) removes them all with [`remove_temporary_files`] first.
//!
//! A path written in place that is not a regular file may block for ever: a FIFO nobody opens
//! for reading blocks `open()`, one nobody reads blocks `write()`. Those are opened without
//! blocking, and a write that would block first waits in short polls, so a program that must
//! stop (a first Ctrl-C) calls [`abandon_blocked_writes`]: from its deadline on, an open or a
//! write still waiting fails instead, and the output is reported as incomplete.

use std::ffi::CString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The temporary files of this process that exist now, and whether new ones are refused.
struct Temporaries {
    paths: Vec<PathBuf>,
    /// Set by [`remove_temporary_files`]: the process is about to exit.
    closed: bool,
}

static TEMPORARIES: Mutex<Temporaries> = Mutex::new(Temporaries {
    paths: Vec::new(),
    closed: false,
});

/// Distinguishes the temporary files of one process.
static NEXT_TEMPORARY: AtomicU64 = AtomicU64::new(0);

/// From when on a blocked open or write of an in-place output gives up (see the module
/// documentation); `None` until [`abandon_blocked_writes`].
static ABANDON_AT: Mutex<Option<Instant>> = Mutex::new(None);

/// How long a blocked open or write sleeps before it looks at [`ABANDON_AT`] again.
const BLOCKED_POLL: Duration = Duration::from_millis(20);

/// From `grace` on, every open or write of an in-place output that is still waiting (a FIFO
/// with no reader, or one nobody reads) fails instead of waiting longer, and so does every
/// later one that would wait: for a program that must stop. Writes that make progress are not
/// cut short before the deadline. An earlier deadline is kept.
pub fn abandon_blocked_writes(grace: Duration) {
    let mut at = ABANDON_AT.lock().unwrap_or_else(|p| p.into_inner());
    let deadline = Instant::now() + grace;
    *at = Some(at.map_or(deadline, |earlier| earlier.min(deadline)));
}

/// The error of an open or write given up by [`abandon_blocked_writes`], if its deadline has
/// passed.
fn abandoned(what: &str) -> Option<io::Error> {
    let at = *ABANDON_AT.lock().unwrap_or_else(|p| p.into_inner());
    at.is_some_and(|at| Instant::now() >= at).then(|| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the program stopped while {what}"),
        )
    })
}

/// Every change of the set is a push or a removal that a panic cannot leave half done.
fn temporaries() -> MutexGuard<'static, Temporaries> {
    TEMPORARIES.lock().unwrap_or_else(|p| p.into_inner())
}

fn exiting() -> io::Error {
    io::Error::new(
        io::ErrorKind::Interrupted,
        "the process is exiting; no file is written any more",
    )
}

/// Removes every temporary file this process has open for a [`StagedFile`] or
/// [`write_atomic`], and refuses new ones (and commits) from now on: for a program about to
/// exit without finishing its outputs. Returns how many files were removed.
pub fn remove_temporary_files() -> usize {
    let mut t = temporaries();
    t.closed = true;
    let paths = std::mem::take(&mut t.paths);
    paths.iter().filter(|p| fs::remove_file(p).is_ok()).count()
}

/// A file written under a temporary name and put in place by [`commit`](Self::commit), or
/// written in place where a rename cannot replace the path (see the module documentation).
#[derive(Debug)]
pub struct StagedFile {
    /// The file the content is for, symbolic links resolved.
    target: PathBuf,
    /// The hidden file being written; `None` when writing in place.
    temporary: Option<PathBuf>,
    file: File,
    /// Whether `file` is a regular file (it can be cut back after a failed append).
    regular: bool,
    /// Bytes written by whole appends.
    complete: u64,
}

impl StagedFile {
    /// Starts the file for `path`: creates a hidden temporary file next to it (or opens it in
    /// place, see the module documentation). `path` itself is not touched. Fails when its
    /// directory does not exist or takes no new file, or when an existing `path` may not be
    /// written.
    pub fn create(path: &Path) -> io::Result<StagedFile> {
        if path.file_name().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the path names no file",
            ));
        }
        let existing = fs::metadata(path).ok();
        if let Some(meta) = &existing {
            if meta.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "it is a directory",
                ));
            }
            // A rename would replace a file the user may not write; refuse as opening would.
            check_writable(path)?;
            if is_written_in_place(path, meta) {
                let file = if meta.is_file() {
                    OpenOptions::new().write(true).truncate(true).open(path)?
                } else {
                    open_in_place(path, meta.file_type().is_fifo())?
                };
                return Ok(StagedFile {
                    target: path.to_path_buf(),
                    temporary: None,
                    file,
                    regular: meta.is_file(),
                    complete: 0,
                });
            }
        }
        let target = resolve_links(path);
        let temporary = temporary_name(&target)?;
        let file = create_temporary(&temporary)?;
        if let Some(meta) = existing {
            // The replacement keeps the mode of the file it replaces.
            let _ = file.set_permissions(meta.permissions());
        }
        Ok(StagedFile {
            target,
            temporary: Some(temporary),
            file,
            regular: true,
            complete: 0,
        })
    }

    /// The file the content is for (symbolic links resolved).
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Appends `bytes` whole or not at all: when the write fails part way (a full disk), the
    /// file is cut back to what earlier appends wrote, so it never ends in a fragment (a
    /// device or FIFO written in place cannot be cut back).
    pub fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        let written = if self.regular {
            self.file.write_all(bytes)
        } else {
            write_in_place(&mut self.file, bytes)
        };
        match written {
            Ok(()) => {
                self.complete += bytes.len() as u64;
                Ok(())
            }
            Err(e) => {
                if self.regular {
                    // Best effort: the write error is what the caller must hear about.
                    let _ = self.file.set_len(self.complete);
                    let _ = self.file.seek(SeekFrom::Start(self.complete));
                }
                Err(e)
            }
        }
    }

    /// Puts the file in place: syncs it and renames it over the path. On failure the
    /// temporary file is removed and the path left as it was.
    pub fn commit(mut self) -> io::Result<()> {
        let Some(temporary) = self.temporary.take() else {
            return Ok(());
        };
        let committed = self
            .file
            .sync_all()
            .and_then(|()| rename_temporary(&temporary, &self.target));
        if committed.is_err() {
            discard_temporary(&temporary);
        }
        committed
    }
}

impl Drop for StagedFile {
    /// An uncommitted file is discarded: the path stays as it was.
    fn drop(&mut self) {
        if let Some(temporary) = self.temporary.take() {
            discard_temporary(&temporary);
        }
    }
}

/// Whether an output at `path` is written in place rather than staged beside it: a device, a
/// FIFO, anything under `/dev` or `/proc` (see the module documentation).
pub fn written_in_place(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| is_written_in_place(path, &meta))
}

/// [`written_in_place`] for the existing `path` of `meta`.
fn is_written_in_place(path: &Path, meta: &fs::Metadata) -> bool {
    path.starts_with("/dev") || path.starts_with("/proc") || !meta.is_file()
}

/// Whether `path` is a FIFO: opening it for writing waits for a reader.
pub fn is_fifo(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| meta.file_type().is_fifo())
}

/// Opens the non-regular file `path` for appending, non-blocking (see the module
/// documentation). A FIFO with no reader yet (`ENXIO`) is waited for, until a reader comes or
/// [`abandon_blocked_writes`] gives up.
fn open_in_place(path: &Path, fifo: bool) -> io::Result<File> {
    let mut told = false;
    loop {
        match OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Err(e) if fifo && e.raw_os_error() == Some(libc::ENXIO) => {
                if let Some(gave_up) = abandoned("waiting for a reader to open the FIFO") {
                    return Err(gave_up);
                }
                if !told {
                    log::info!("{}: waiting for a reader to open the FIFO", path.display());
                    told = true;
                }
                std::thread::sleep(BLOCKED_POLL);
            }
            opened => return opened,
        }
    }
}

/// Sets or clears `O_NONBLOCK` on `file`.
fn set_nonblocking(file: &File, nonblocking: bool) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on a descriptor `file` owns and keeps open.
    let set = unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        let flags = if nonblocking {
            flags | libc::O_NONBLOCK
        } else {
            flags & !libc::O_NONBLOCK
        };
        flags != -1 && libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags) != -1
    };
    if set {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes all of `bytes` to the non-blocking in-place `file`, a page at a time. A page the
/// file takes now is written at once (a FIFO's page still being read is joined, as a blocking
/// write joins it); otherwise `poll` waits for room in short slices, so that a reader that
/// never reads holds the writer only until [`abandon_blocked_writes`] gives up, and then the
/// page is written blocking, in turn with the pipe's other writers. A write of a page at most
/// is whole or not at all on a FIFO, so a line is never cut by giving up.
fn write_in_place(file: &mut File, bytes: &[u8]) -> io::Result<()> {
    for page in bytes.chunks(libc::PIPE_BUF) {
        let mut rest = page;
        while !rest.is_empty() {
            match file.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait_for_room(file)?;
                    set_nonblocking(file, false)?;
                    let written = file.write_all(rest);
                    set_nonblocking(file, true)?;
                    written?;
                    rest = &[];
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// Waits until `poll` says `file` takes a write (or has an error to report), or
/// [`abandon_blocked_writes`] gives up.
fn wait_for_room(file: &File) -> io::Result<()> {
    loop {
        let mut ready = libc::pollfd {
            fd: file.as_raw_fd(),
            events: libc::POLLOUT,
            revents: 0,
        };
        // SAFETY: `ready` is one valid pollfd for the duration of the call, and the
        // descriptor stays open (borrowed from `file`).
        let n = unsafe { libc::poll(&mut ready, 1, BLOCKED_POLL.as_millis() as libc::c_int) };
        if n > 0 {
            return Ok(());
        }
        if let Some(gave_up) = abandoned("a write waited for the reader to read") {
            return Err(gave_up);
        }
    }
}

/// Checks that a new file for `path` can be made: its directory exists and takes a new file
/// (a temporary one is created and removed again). `path` itself is not touched.
pub fn check_creatable(path: &Path) -> io::Result<()> {
    StagedFile::create(path).map(drop)
}

/// Writes `bytes` to `path` atomically through a [`StagedFile`]: readers see the old content
/// or the new one, never a part; on failure `path` is left as it was and no temporary file
/// remains.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = StagedFile::create(path)?;
    file.append(bytes)?;
    file.commit()
}

/// `path` with a symbolic link at its end resolved, so a commit replaces the file the link
/// points to, not the link.
fn resolve_links(path: &Path) -> PathBuf {
    let is_link = fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if !is_link {
        return path.to_path_buf();
    }
    if let Ok(real) = fs::canonicalize(path) {
        return real;
    }
    // A dangling link: the file it names, relative to the link's directory.
    match fs::read_link(path) {
        Ok(to) => path.parent().map_or(to.clone(), |dir| dir.join(&to)),
        Err(_) => path.to_path_buf(),
    }
}

/// `.NAME.PID.N.tmp` in the directory of `target`.
fn temporary_name(target: &Path) -> io::Result<PathBuf> {
    let name = target
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let n = NEXT_TEMPORARY.fetch_add(1, Ordering::Relaxed);
    Ok(dir.join(format!(
        ".{}.{}.{n}.tmp",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// The temporary files that process `pid` left for `path` (named as [`StagedFile`] names
/// them): what a process that was killed before it committed its outputs leaves behind, for
/// its parent to remove (`concord jvm run` after its JVM was killed).
pub fn temporaries_left_by(path: &Path, pid: u32) -> Vec<PathBuf> {
    let target = resolve_links(path);
    let (Some(name), Some(dir)) = (target.file_name(), target.parent()) else {
        return Vec::new();
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let prefix = format!(".{}.{pid}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_prefix(&prefix)
                .and_then(|rest| rest.strip_suffix(".tmp"))
                .is_some_and(|counter| counter.parse::<u64>().is_ok())
        })
        .map(|e| e.path())
        .collect()
}

/// Creates the temporary file `path` and registers it (refused once the process is exiting).
fn create_temporary(path: &Path) -> io::Result<File> {
    let mut t = temporaries();
    if t.closed {
        return Err(exiting());
    }
    let file = OpenOptions::new().write(true).create_new(true).open(path)?;
    t.paths.push(path.to_path_buf());
    Ok(file)
}

/// Renames the temporary file `from` to `to`; it is no longer temporary then.
fn rename_temporary(from: &Path, to: &Path) -> io::Result<()> {
    let mut t = temporaries();
    if t.closed {
        return Err(exiting());
    }
    fs::rename(from, to)?;
    t.paths.retain(|p| p != from);
    Ok(())
}

/// Removes the temporary file `path`.
fn discard_temporary(path: &Path) {
    let mut t = temporaries();
    let _ = fs::remove_file(path);
    t.paths.retain(|p| p != path);
}

/// Whether this process may write the existing file `path` (`access(2)` with `W_OK`).
fn check_writable(path: &Path) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))?;
    // SAFETY: `c_path` is a valid NUL-terminated string that outlives the call.
    if unsafe { libc::access(c_path.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("concord-fs-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temporary_file() {
        let dir = scratch("atomic");
        let path = dir.join("out.json");
        fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new content").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new content");
        assert_eq!(entries(&dir), ["out.json"], "no temporary file left");
        // A directory that does not exist: an error, and nothing written.
        let missing = dir.join("no-such-dir").join("x");
        assert!(write_atomic(&missing, b"x").is_err());
        assert!(write_atomic(Path::new("/"), b"x").is_err(), "no file name");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_staged_file_leaves_the_old_file_until_it_is_committed() {
        let dir = scratch("staged");
        let path = dir.join("gc.log");
        fs::write(&path, "old\n").unwrap();
        let mut staged = StagedFile::create(&path).unwrap();
        staged.append(b"new line\n").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "old\n");
        assert_eq!(entries(&dir).len(), 2, "the temporary file sits beside it");
        staged.commit().unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new line\n");
        assert_eq!(entries(&dir), ["gc.log"]);
        // Dropped without a commit: the file stays, the temporary file goes.
        let mut staged = StagedFile::create(&path).unwrap();
        staged.append(b"lost\n").unwrap();
        drop(staged);
        assert_eq!(fs::read_to_string(&path).unwrap(), "new line\n");
        assert_eq!(entries(&dir), ["gc.log"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_temporary_files_a_process_left_are_found() {
        let dir = scratch("left");
        let path = dir.join("out.json");
        let staged = StagedFile::create(&path).unwrap();
        let me = std::process::id();
        let left = temporaries_left_by(&path, me);
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(temporaries_left_by(&path, me + 1).is_empty());
        assert!(temporaries_left_by(&dir.join("other"), me).is_empty());
        drop(staged);
        assert!(temporaries_left_by(&path, me).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_link_is_followed_and_its_target_replaced() {
        let dir = scratch("link");
        let real = dir.join("real.log");
        fs::write(&real, "old").unwrap();
        let link = dir.join("link.log");
        std::os::unix::fs::symlink("real.log", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn devices_are_written_in_place_and_their_errors_reported() {
        let mut null = StagedFile::create(Path::new("/dev/null")).unwrap();
        null.append(b"anything\n").unwrap();
        null.commit().unwrap();
        assert!(
            Path::new("/dev/null").exists(),
            "a device is never replaced"
        );
        let mut full = StagedFile::create(Path::new("/dev/full")).unwrap();
        let err = full.append(b"x\n").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOSPC), "{err}");
    }

    #[test]
    fn unwritable_targets_and_directories_are_refused() {
        let dir = scratch("refused");
        assert!(StagedFile::create(&dir).is_err(), "a directory");
        assert!(check_creatable(&dir.join("missing/x")).is_err());
        check_creatable(&dir.join("new")).unwrap();
        assert!(entries(&dir).is_empty(), "the probe leaves nothing");
        fs::remove_dir_all(&dir).unwrap();
    }
}
