//! Files written whole: the one atomic write the collector and its tools use for outputs a
//! reader must never see half written (profiles, results directories).

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Writes `bytes` to `path` atomically: into a temporary file next to it (same directory, so
/// the same file system), flushed to disk, then renamed over `path`. Readers see the old
/// content or the new one, never a part; on failure the temporary file is removed and `path`
/// is left as it was.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the path names no file"))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_whole_file_and_leaves_no_temporary_file() {
        let dir = std::env::temp_dir().join(format!("concord-fs-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out.json");
        fs::write(&path, "old").unwrap();
        write_atomic(&path, b"new content").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), "new content");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "no temporary file left"
        );
        // A directory that does not exist: an error, and nothing written.
        let missing = dir.join("no-such-dir").join("x");
        assert!(write_atomic(&missing, b"x").is_err());
        assert!(write_atomic(Path::new("/"), b"x").is_err(), "no file name");
        fs::remove_dir_all(&dir).unwrap();
    }
}
