//! Named pipes (FIFOs) and the few process-level calls the stall harnesses of paper 002 need:
//! a FIFO whose kernel buffer is shrunk to one page, so that a writer blocks in `write()` as
//! soon as the reader falls behind (a log device that stalls in the kernel, not a sleep in the
//! collector); non-blocking ends for a reader that drains at a set rate; files without a name
//! for a background-writeback load that leaves nothing behind; and a child process that dies
//! with its parent.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "the path holds a NUL byte"))
}

/// Creates the FIFO `path`, readable and writable by the owner only (`mkfifo(3)`).
pub fn make_fifo(path: &Path) -> io::Result<()> {
    let c = c_path(path)?;
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens the read end of the FIFO `path` without waiting for a writer; reads never block
/// (an empty pipe reads as [`io::ErrorKind::WouldBlock`], a pipe without writers as 0 bytes).
pub fn open_fifo_reader(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Opens the write end of the FIFO `path` for non-blocking writes (a full pipe refuses with
/// [`io::ErrorKind::WouldBlock`]); the FIFO must have a reader already.
pub fn open_fifo_writer(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Asks the kernel to make the buffer of the pipe behind `file` `bytes` large
/// (`F_SETPIPE_SZ`, rounded up by the kernel to whole pages) and returns the size it has then.
pub fn set_pipe_size(file: &File, bytes: usize) -> io::Result<usize> {
    let bytes = libc::c_int::try_from(bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "pipe size too large"))?;
    // SAFETY: `file` is an open descriptor for the duration of the call; F_SETPIPE_SZ takes
    // an int and touches no memory of ours.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, bytes) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(rc as usize)
}

/// A new file in `dir` that has no name (`O_TMPFILE`; where the file system does not support
/// it, a file created and unlinked at once): its blocks go back to the file system when the
/// last descriptor closes, also when the process is killed, so nothing is left behind.
pub fn unnamed_file(dir: &Path) -> io::Result<File> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o600)
        .open(dir)
    {
        Ok(file) => Ok(file),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EISDIR)) => {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = dir.join(format!(".concord-unnamed.{}.{n}", std::process::id()));
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            Ok(file)
        }
        Err(e) => Err(e),
    }
}

/// Asks the kernel to send SIGKILL to this process when the thread that created it ends
/// (`PR_SET_PDEATHSIG`), and says whether the parent `parent` is still there (it may have
/// ended before the call, when no signal would come any more).
pub fn die_with_parent(parent: u32) -> io::Result<bool> {
    // SAFETY: PR_SET_PDEATHSIG takes a signal number and touches no memory of ours.
    let rc = unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: getppid has no arguments and cannot fail.
    let now = unsafe { libc::getppid() };
    Ok(now as u32 == parent)
}

/// The id of this process's parent.
pub fn parent_id() -> u32 {
    // SAFETY: getppid has no arguments and cannot fail.
    unsafe { libc::getppid() as u32 }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("concord-pipe-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_one_page_fifo_refuses_writes_once_full_and_reads_without_blocking() {
        let dir = scratch("fifo");
        let path = dir.join("log");
        make_fifo(&path).unwrap();
        assert!(make_fifo(&path).is_err(), "it exists already");
        let mut reader = open_fifo_reader(&path).unwrap();
        let mut buf = [0u8; 64];
        // No writer yet: end of file, not an error and not a wait.
        assert_eq!(reader.read(&mut buf).unwrap(), 0);
        let mut writer = open_fifo_writer(&path).unwrap();
        let size = set_pipe_size(&writer, 1).unwrap();
        assert_eq!(size, 4096, "one page");
        let mut written = 0;
        loop {
            match writer.write(&[b'x'; 512]) {
                Ok(n) => written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(written, size);
        assert_eq!(reader.read(&mut buf).unwrap(), 64);
        drop(writer);
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert_eq!(rest.len(), size - 64);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_unnamed_file_takes_data_and_leaves_no_entry() {
        let dir = scratch("unnamed");
        let mut f = unnamed_file(&dir).unwrap();
        f.write_all(&[7u8; 8192]).unwrap();
        f.sync_all().unwrap();
        assert_eq!(f.metadata().unwrap().len(), 8192);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        assert!(unnamed_file(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
