//! How much memory the machine gives this process: physical memory (`MemTotal` in
//! `/proc/meminfo`) and the cgroup memory limit (v2 `memory.max`, v1
//! `memory.limit_in_bytes`) of our cgroup and its ancestors, whichever is smallest: more than
//! that cannot be backed.
//!
//! Also the address space a thread takes when it starts ([`thread_start_room`]), which must be
//! free before threads are started under an address-space limit.

use std::path::{Path, PathBuf};

use super::cpu::cgroup::limit_dirs;
use super::procfs::{parse_error, read_optional, KernelFileError};

/// cgroup v1 reports "no limit" as the largest page-aligned `i64` (`9223372036854771712` with
/// 4 KiB pages); anything from here up is no limit.
const V1_UNLIMITED: u64 = 1 << 62;

/// Where the files describing the machine's memory live (real paths by default; tests point
/// elsewhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPaths {
    /// `/proc/meminfo`.
    pub proc_meminfo: PathBuf,
    /// `/proc/self/cgroup`.
    pub proc_self_cgroup: PathBuf,
    /// `/sys/fs/cgroup`.
    pub cgroup_root: PathBuf,
}

impl Default for MemoryPaths {
    fn default() -> Self {
        Self {
            proc_meminfo: PathBuf::from("/proc/meminfo"),
            proc_self_cgroup: PathBuf::from("/proc/self/cgroup"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
        }
    }
}

/// What sets a memory limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MemoryLimitKind {
    /// The machine's physical memory (`MemTotal`).
    Physical,
    /// A cgroup v2 `memory.max`.
    CgroupV2,
    /// A cgroup v1 `memory.limit_in_bytes`.
    CgroupV1,
}

/// The most memory this process can have, and where that figure came from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MemoryLimit {
    /// Bytes.
    pub bytes: u64,
    /// What sets it.
    pub kind: MemoryLimitKind,
    /// The file it was read from.
    pub file: PathBuf,
}

impl MemoryLimit {
    /// What sets the limit, in words: `physical memory`, `the cgroup v2 memory limit`.
    pub fn what(&self) -> &'static str {
        match self.kind {
            MemoryLimitKind::Physical => "physical memory",
            MemoryLimitKind::CgroupV2 => "the cgroup v2 memory limit",
            MemoryLimitKind::CgroupV1 => "the cgroup v1 memory limit",
        }
    }

    /// Where the figure was read: `MemTotal in /proc/meminfo`, or the cgroup file.
    pub fn source(&self) -> String {
        match self.kind {
            MemoryLimitKind::Physical => format!("MemTotal in {}", self.file.display()),
            MemoryLimitKind::CgroupV1 | MemoryLimitKind::CgroupV2 => {
                self.file.display().to_string()
            }
        }
    }
}

/// Address space for a thread's stack (Rust's default, 2 MiB, and its guard page) and the
/// alternate signal stack and thread-local storage the Rust runtime sets up when it starts.
const THREAD_STACK_ROOM: usize = 3 << 20;
/// Address space of a glibc malloc arena (`HEAP_MAX_SIZE` on 64-bit targets).
const MALLOC_ARENA_ROOM: usize = 64 << 20;
/// glibc's default limit on malloc arenas per online CPU (`M_ARENA_MAX`, 64-bit targets).
const MALLOC_ARENAS_PER_CPU: usize = 8;

/// Address space `threads` new threads may take while they start: their stacks, and the malloc
/// arena glibc gives each thread that allocates while there is room for one, up to its limit
/// of 8 arenas per online CPU. A thread that cannot have this memory does not fail cleanly:
/// the Rust runtime aborts the process when its signal stack or its first allocation is
/// refused. So under an address-space limit (`ulimit -v`), this much must be free before
/// threads are started.
pub fn thread_start_room(threads: usize) -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpus = usize::try_from(online).unwrap_or(1).max(1);
    let arenas = threads.min(MALLOC_ARENAS_PER_CPU * cpus);
    threads * THREAD_STACK_ROOM + arenas * MALLOC_ARENA_ROOM
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
pub fn parse_mem_total(text: &str) -> Result<u64, KernelFileError> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .ok_or_else(|| parse_error("/proc/meminfo", text, "no MemTotal line"))?;
    let kib = line
        .trim()
        .strip_suffix("kB")
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| parse_error("/proc/meminfo", line, "expected 'MemTotal: N kB'"))?;
    if kib == 0 {
        return Err(parse_error("/proc/meminfo", line, "MemTotal is 0"));
    }
    Ok(kib.saturating_mul(1024))
}

/// A cgroup v2 `memory.max`: `max` is no limit, else bytes.
pub fn parse_memory_max(text: &str) -> Result<Option<u64>, KernelFileError> {
    let t = text.trim();
    if t == "max" {
        return Ok(None);
    }
    t.parse()
        .map(Some)
        .map_err(|_| parse_error("memory.max", text, "expected a number of bytes or 'max'"))
}

/// A cgroup v1 `memory.limit_in_bytes`: bytes, where a huge value (or -1) is no limit.
pub fn parse_limit_in_bytes(text: &str) -> Result<Option<u64>, KernelFileError> {
    let t = text.trim();
    if t == "-1" {
        return Ok(None);
    }
    let bytes: u64 = t
        .parse()
        .map_err(|_| parse_error("memory.limit_in_bytes", text, "expected a number of bytes"))?;
    Ok((bytes < V1_UNLIMITED).then_some(bytes))
}

/// The limit the cgroup directory `dir` sets, if any.
fn cgroup_limit_in(dir: &Path, v2: bool) -> Result<Option<MemoryLimit>, KernelFileError> {
    let (file, kind) = if v2 {
        (dir.join("memory.max"), MemoryLimitKind::CgroupV2)
    } else {
        (dir.join("memory.limit_in_bytes"), MemoryLimitKind::CgroupV1)
    };
    let Some(text) = read_optional(&file)? else {
        return Ok(None);
    };
    let bytes = if v2 {
        parse_memory_max(&text)?
    } else {
        parse_limit_in_bytes(&text)?
    };
    Ok(bytes.map(|bytes| MemoryLimit { bytes, kind, file }))
}

/// The smallest of physical memory and the cgroup memory limits on our cgroup and its
/// ancestors (v2 `memory.max`, also under `unified/`; v1 `memory.limit_in_bytes` under
/// `memory/`), reading the files under `paths`. Missing files set no limit; `None` when none
/// does. A file that cannot be read or parsed is an error.
pub fn memory_limit_at(paths: &MemoryPaths) -> Result<Option<MemoryLimit>, KernelFileError> {
    let mut limits = Vec::new();
    if let Some(text) = read_optional(&paths.proc_meminfo)? {
        limits.push(MemoryLimit {
            bytes: parse_mem_total(&text)?,
            kind: MemoryLimitKind::Physical,
            file: paths.proc_meminfo.clone(),
        });
    }
    if let Some(text) = read_optional(&paths.proc_self_cgroup)? {
        for (dir, v2) in limit_dirs(&text, &paths.cgroup_root, "memory", &["memory"]) {
            limits.extend(cgroup_limit_in(&dir, v2)?);
        }
    }
    // The first of equal limits wins: physical memory, then the deepest cgroup.
    Ok(limits
        .into_iter()
        .reduce(|best, l| if l.bytes < best.bytes { l } else { best }))
}

/// The most memory this process can have (see [`memory_limit_at`]).
pub fn memory_limit() -> Result<Option<MemoryLimit>, KernelFileError> {
    memory_limit_at(&MemoryPaths::default())
}

#[cfg(test)]
mod tests {
    use super::super::cpu::tests::Scratch;
    use super::*;

    const GIB: u64 = 1 << 30;
    const MEMINFO: &str = "MemTotal:       24684084 kB\nMemFree:        22439260 kB\n";

    fn paths(s: &Scratch) -> MemoryPaths {
        MemoryPaths {
            proc_meminfo: s.0.join("meminfo"),
            proc_self_cgroup: s.0.join("proc_cgroup"),
            cgroup_root: s.0.join("cg"),
        }
    }

    #[test]
    fn parsers_read_the_kernel_forms() {
        assert_eq!(parse_mem_total(MEMINFO).unwrap(), 24_684_084 * 1024);
        for bad in [
            "",
            "MemFree: 1 kB",
            "MemTotal: lots kB",
            "MemTotal: 12",
            "MemTotal: 0 kB",
        ] {
            assert!(parse_mem_total(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_memory_max("max\n").unwrap(), None);
        assert_eq!(parse_memory_max("8589934592\n").unwrap(), Some(8 * GIB));
        assert!(parse_memory_max("8g").is_err());
        assert_eq!(parse_limit_in_bytes("9223372036854771712\n").unwrap(), None);
        assert_eq!(parse_limit_in_bytes("-1").unwrap(), None);
        assert_eq!(parse_limit_in_bytes("4294967296\n").unwrap(), Some(4 * GIB));
        assert!(parse_limit_in_bytes("much").is_err());
    }

    #[test]
    fn physical_memory_alone() {
        let s = Scratch::with("mem-physical", &[("meminfo", MEMINFO)]);
        let limit = memory_limit_at(&paths(&s)).unwrap().unwrap();
        assert_eq!(limit.bytes, 24_684_084 * 1024);
        assert_eq!(limit.kind, MemoryLimitKind::Physical);
        assert_eq!(limit.what(), "physical memory");
        assert_eq!(
            limit.source(),
            format!("MemTotal in {}", s.0.join("meminfo").display())
        );
    }

    #[test]
    fn a_cgroup_v2_limit_below_physical_memory_wins() {
        let s = Scratch::with(
            "mem-v2",
            &[
                ("meminfo", MEMINFO),
                ("proc_cgroup", "0::/box/job\n"),
                ("cg/box/memory.max", "8589934592\n"),
                ("cg/box/job/memory.max", "max\n"),
            ],
        );
        let limit = memory_limit_at(&paths(&s)).unwrap().unwrap();
        assert_eq!(limit.bytes, 8 * GIB);
        assert_eq!(limit.kind, MemoryLimitKind::CgroupV2);
        assert_eq!(limit.file, s.0.join("cg/box/memory.max"));
        assert_eq!(limit.what(), "the cgroup v2 memory limit");
        assert_eq!(limit.source(), limit.file.display().to_string());
        // A limit above physical memory does not count.
        s.write("cg/box/memory.max", "68719476736\n");
        let limit = memory_limit_at(&paths(&s)).unwrap().unwrap();
        assert_eq!(limit.kind, MemoryLimitKind::Physical);
    }

    #[test]
    fn cgroup_v1_limits_and_unlimited() {
        let s = Scratch::with(
            "mem-v1",
            &[
                ("meminfo", MEMINFO),
                ("proc_cgroup", "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n"),
                ("cg/memory/memory.limit_in_bytes", "9223372036854771712\n"),
                ("cg/memory/job/memory.limit_in_bytes", "2147483648\n"),
            ],
        );
        let limit = memory_limit_at(&paths(&s)).unwrap().unwrap();
        assert_eq!(limit.bytes, 2 * GIB);
        assert_eq!(limit.kind, MemoryLimitKind::CgroupV1);
        assert_eq!(limit.file, s.0.join("cg/memory/job/memory.limit_in_bytes"));
        assert_eq!(limit.what(), "the cgroup v1 memory limit");
        // The unlimited value (this machine's, under cgroup v1) is no limit.
        s.write(
            "cg/memory/job/memory.limit_in_bytes",
            "9223372036854771712\n",
        );
        let limit = memory_limit_at(&paths(&s)).unwrap().unwrap();
        assert_eq!(limit.kind, MemoryLimitKind::Physical);
    }

    #[test]
    fn no_files_no_limit_and_garbage_is_an_error() {
        let s = Scratch::new("mem-none");
        assert_eq!(memory_limit_at(&paths(&s)).unwrap(), None);
        s.write("proc_cgroup", "0::/box\n");
        s.write("cg/box/memory.max", "max\n");
        assert_eq!(memory_limit_at(&paths(&s)).unwrap(), None);
        s.write("cg/box/memory.max", "plenty\n");
        assert!(memory_limit_at(&paths(&s)).is_err());
        s.write("cg/box/memory.max", "max\n");
        s.write("meminfo", "MemTotal: ? kB\n");
        assert!(memory_limit_at(&paths(&s)).is_err());
    }

    #[test]
    fn threads_need_stacks_and_arenas() {
        assert_eq!(thread_start_room(0), 0);
        assert_eq!(thread_start_room(1), THREAD_STACK_ROOM + MALLOC_ARENA_ROOM);
        // Arenas stop at 8 per CPU; stacks do not.
        let many = 100_000;
        let room = thread_start_room(many);
        assert!(room >= many * THREAD_STACK_ROOM + 8 * MALLOC_ARENA_ROOM);
        assert!(room < many * (THREAD_STACK_ROOM + MALLOC_ARENA_ROOM));
    }

    #[test]
    fn the_process_limit_is_readable() {
        let limit = memory_limit().unwrap().expect("/proc/meminfo exists");
        assert!(limit.bytes >= 64 << 20, "{limit:?}");
    }
}
