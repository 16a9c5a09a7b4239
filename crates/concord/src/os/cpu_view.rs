//! What the collector may use of the machine, and how busy each part of it is.
//!
//! * **Usable CPUs**: the affinity mask ([`thread_affinity`]) and the cgroup CPU bandwidth limit
//!   ([`read_cpu_quota`]), gathered with the topology in a [`CpuView`].
//! * **Topology**: per CPU its SMT siblings (its core) and its NUMA node, from sysfs
//!   ([`CpuTopology`]); missing files fall back to "every CPU its own core, node 0".
//! * **Load**: per-CPU busy fractions from two `/proc/stat` samples ([`busy_between`]), kept
//!   fresh off the pause path by a background [`LoadSampler`], plus the CPU each of a given set
//!   of threads last ran on ([`task_stat`], field 39 of `/proc/self/task/<tid>/stat`).
//!
//! # The load of a CPU
//!
//! The kernel's own per-CPU load ignores sleeping threads, and parked GC workers sleep, so a
//! CPU on which several workers are about to wake up looks idle to it (000 §2.5, §4.1). The
//! load used for GC thread placement therefore adds our own workers back in:
//!
//! ```text
//! load_i = busy_i + GC_THREAD_LOAD × |{ t ∈ workers : last_cpu(t) = i }|
//! ```
//!
//! where `busy_i ∈ [0, 1]` is the fraction of the last sampling window CPU `i` spent outside
//! idle/iowait (user, nice, system, irq, softirq, steal), and `workers` are the GC threads
//! that take part in the coming collection, whatever their state (at the start of a collection
//! they are all parked, so their own work is not in `busy_i`). Each worker counts
//! [`GC_THREAD_LOAD`] = 1, one runnable task's worth, on the CPU it last ran on; the worker
//! being placed is counted too (it is there now). See [`combined_loads`].
//!
//! Every file is parsed defensively: odd content gives an error value, never a panic.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// CPU ids must be below this (64 Ki CPUs; far above any machine Linux runs on today).
pub const CPU_ID_LIMIT: u32 = 1 << 16;

/// Load one of our GC threads adds to the CPU it last ran on (one runnable task).
pub const GC_THREAD_LOAD: f64 = 1.0;

/// Default sampling period of [`LoadSampler`].
pub const DEFAULT_SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// Why something about the CPUs could not be found out.
#[derive(Debug, thiserror::Error)]
pub enum CpuViewError {
    /// A file exists (or should) but could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A file or string did not have the expected shape.
    #[error("cannot parse {what} {text:?}: {reason}")]
    Parse {
        /// What was being parsed (e.g. "CPU list").
        what: &'static str,
        /// The offending text (shortened).
        text: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A system call failed.
    #[error("{call} failed: {source}")]
    Syscall {
        /// The call, e.g. "sched_getaffinity".
        call: &'static str,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
}

fn parse_error(what: &'static str, text: &str, reason: impl Into<String>) -> CpuViewError {
    let mut text = text.trim_end().to_string();
    if text.len() > 120 {
        let mut cut = 120;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    CpuViewError::Parse {
        what,
        text,
        reason: reason.into(),
    }
}

/// Read a small text file; `Ok(None)` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, CpuViewError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(CpuViewError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

// ------------------------------------------------------------------------------------------
// CPU lists
// ------------------------------------------------------------------------------------------

fn parse_cpu_id(text: &str, whole: &str) -> Result<u32, CpuViewError> {
    let t = text.trim();
    let id: u32 = t
        .parse()
        .map_err(|_| parse_error("CPU list", whole, format!("'{t}' is not a CPU number")))?;
    if id >= CPU_ID_LIMIT {
        return Err(parse_error(
            "CPU list",
            whole,
            format!(
                "CPU {id} is beyond the largest supported id ({})",
                CPU_ID_LIMIT - 1
            ),
        ));
    }
    Ok(id)
}

/// Parse the kernel's CPU list syntax (`"0-3,8,10-11"`, as in `cpulist` files and
/// `Cpus_allowed_list`) into ascending, distinct CPU ids. Blank text is the empty list.
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, CpuViewError> {
    let trimmed = text.trim();
    let mut cpus = Vec::new();
    if trimmed.is_empty() {
        return Ok(cpus);
    }
    for part in trimmed.split(',') {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (parse_cpu_id(a, text)?, parse_cpu_id(b, text)?),
            None => {
                let c = parse_cpu_id(part, text)?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(parse_error(
                "CPU list",
                text,
                format!("range {lo}-{hi} runs backwards"),
            ));
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Write CPU ids in the kernel's CPU list syntax (`[0, 1, 2, 5]` → `"0-2,5"`).
pub fn format_cpu_list(cpus: &[u32]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}-{end}"));
        }
        i += 1;
    }
    out
}

// ------------------------------------------------------------------------------------------
// Affinity masks of any thread of this process
// ------------------------------------------------------------------------------------------

const BITS_PER_WORD: usize = 64;
/// glibc's `cpu_set_t` holds 1024 CPUs; start there and grow when the kernel wants more.
const INITIAL_MASK_WORDS: usize = 1024 / BITS_PER_WORD;
const MAX_MASK_WORDS: usize = CPU_ID_LIMIT as usize / BITS_PER_WORD;

fn mask_to_cpus(words: &[u64]) -> Vec<u32> {
    let mut cpus = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            cpus.push((w * BITS_PER_WORD + b) as u32);
            bits &= bits - 1;
        }
    }
    cpus
}

/// The CPUs thread `tid` (a kernel thread id; 0 = the calling thread) may run on, ascending.
///
/// Works for machines with more CPUs than glibc's fixed `cpu_set_t` holds.
pub fn thread_affinity(tid: i32) -> io::Result<Vec<u32>> {
    let mut words = INITIAL_MASK_WORDS;
    loop {
        let mut mask = vec![0u64; words];
        // SAFETY: `mask` is a writable, 8-byte aligned buffer of exactly the byte size passed;
        // the kernel writes at most that many bytes of unsigned longs, which is the layout of
        // a (dynamically sized) cpu_set_t on 64-bit Linux.
        let rc = unsafe {
            libc::sched_getaffinity(
                tid,
                words * std::mem::size_of::<u64>(),
                mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc == 0 {
            return Ok(mask_to_cpus(&mask));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the buffer is smaller than the kernel's CPU mask; retry with a larger one.
        if err.raw_os_error() == Some(libc::EINVAL) && words < MAX_MASK_WORDS {
            words *= 2;
            continue;
        }
        return Err(err);
    }
}

/// Restrict thread `tid` of **this process** to `cpus`.
///
/// Linux lets a thread change the affinity of any thread of its own process. `tid` must be a
/// positive kernel thread id listed in `/proc/self/task` (so a stale or foreign id never moves
/// another process's thread); `cpus` must be non-empty and below [`CPU_ID_LIMIT`]. The kernel
/// answers `EINVAL` when none of `cpus` is usable (offline, nonexistent, or outside the
/// cgroup's cpuset) and `EPERM` when we lack the right.
pub fn set_thread_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    if tid <= 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("thread id {tid} is not a kernel thread id"),
        ));
    }
    if cpus.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "an empty CPU set would leave the thread nowhere to run",
        ));
    }
    let max = *cpus.iter().max().expect("non-empty");
    if max >= CPU_ID_LIMIT {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "CPU {max} is beyond the largest supported CPU id ({})",
                CPU_ID_LIMIT - 1
            ),
        ));
    }
    if !Path::new(&format!("/proc/self/task/{tid}")).exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("thread {tid} is not a thread of this process"),
        ));
    }
    let words = (max as usize / BITS_PER_WORD + 1).max(INITIAL_MASK_WORDS);
    let mut mask = vec![0u64; words];
    for &cpu in cpus {
        mask[cpu as usize / BITS_PER_WORD] |= 1u64 << (cpu as usize % BITS_PER_WORD);
    }
    // SAFETY: `mask` is a readable, 8-byte aligned buffer of exactly the byte size passed, laid
    // out as a cpu_set_t of that size; `tid` was checked to be a thread of this process.
    let rc = unsafe {
        libc::sched_setaffinity(
            tid,
            words * std::mem::size_of::<u64>(),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Kernel thread id of the calling thread.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() }
}

// ------------------------------------------------------------------------------------------
// cgroup CPU bandwidth limit
// ------------------------------------------------------------------------------------------

/// A cgroup CPU bandwidth limit: `quota_us` of CPU time per `period_us` of wall time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuQuota {
    /// CPU time allowed per period, in microseconds.
    pub quota_us: u64,
    /// Length of a period, in microseconds.
    pub period_us: u64,
    /// The file the limit came from.
    pub file: PathBuf,
}

impl CpuQuota {
    /// The limit as a (fractional) number of CPUs.
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// The limit as a whole number of CPUs: `quota / period` rounded up, at least 1.
    pub fn effective_cpus(&self) -> usize {
        (self.quota_us.div_ceil(self.period_us) as usize).max(1)
    }
}

fn parse_u64(what: &'static str, text: &str, whole: &str) -> Result<u64, CpuViewError> {
    text.trim()
        .parse()
        .map_err(|_| parse_error(what, whole, format!("'{}' is not a number", text.trim())))
}

/// Parse a cgroup v2 `cpu.max` (`"max 100000"` → no limit, `"200000 100000"` → 2 CPUs).
/// Returns `(quota_us, period_us)`.
pub fn parse_cpu_max(text: &str) -> Result<Option<(u64, u64)>, CpuViewError> {
    let mut fields = text.split_whitespace();
    let quota = fields
        .next()
        .ok_or_else(|| parse_error("cpu.max", text, "empty"))?;
    let period = match fields.next() {
        Some(p) => parse_u64("cpu.max", p, text)?,
        None => 100_000, // the kernel's default period; some writers omit it
    };
    if fields.next().is_some() {
        return Err(parse_error("cpu.max", text, "expected 'QUOTA PERIOD'"));
    }
    if quota == "max" {
        return Ok(None);
    }
    let quota = parse_u64("cpu.max", quota, text)?;
    if quota == 0 || period == 0 {
        return Err(parse_error(
            "cpu.max",
            text,
            "quota and period must be positive",
        ));
    }
    Ok(Some((quota, period)))
}

/// Parse cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` (a quota of -1 is no limit).
pub fn parse_cfs_quota(quota: &str, period: &str) -> Result<Option<(u64, u64)>, CpuViewError> {
    let q: i64 = quota
        .trim()
        .parse()
        .map_err(|_| parse_error("cpu.cfs_quota_us", quota, "not a number"))?;
    if q < 0 {
        return Ok(None);
    }
    let p = parse_u64("cpu.cfs_period_us", period, period)?;
    if q == 0 || p == 0 {
        return Err(parse_error(
            "cpu.cfs_quota_us",
            quota,
            "quota and period must be positive",
        ));
    }
    Ok(Some((q as u64, p)))
}

/// One line of `/proc/self/cgroup`: `hierarchy-id:controllers:path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLine {
    /// Hierarchy id (0 for the cgroup v2 unified hierarchy).
    pub hierarchy: u32,
    /// Controllers bound to the hierarchy (empty for v2).
    pub controllers: Vec<String>,
    /// Path of our cgroup inside the hierarchy, e.g. `/user.slice/x.scope`.
    pub path: String,
}

/// Parse `/proc/self/cgroup`; malformed lines are skipped.
pub fn parse_proc_cgroup(text: &str) -> Vec<CgroupLine> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy = parts.next()?.trim().parse().ok()?;
            let controllers = parts
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            let path = parts.next()?.to_string();
            Some(CgroupLine {
                hierarchy,
                controllers,
                path,
            })
        })
        .collect()
}

/// Directories from the cgroup `path` up to the mount root (deepest first) under `mount`;
/// empty when the path tries to leave the mount.
fn cgroup_dirs(mount: &Path, path: &str) -> Vec<PathBuf> {
    let rel = Path::new(path.trim().trim_start_matches('/'));
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Vec::new();
    }
    rel.ancestors().map(|a| mount.join(a)).collect()
}

/// The tightest CPU bandwidth limit on our cgroup and its ancestors, from `proc_cgroup` (the
/// text of `/proc/self/cgroup`) and the cgroup file systems under `cgroup_root` (normally
/// `/sys/fs/cgroup`). Looks at v2 (`cpu.max`, also under `unified/` on hybrid systems) and v1
/// (`cpu.cfs_quota_us` / `cpu.cfs_period_us` under `cpu/`, `cpu,cpuacct/` or `cpuacct,cpu/`).
/// Missing files mean no limit. Ancestors are read because a parent's limit binds too, and
/// because inside a container without a cgroup namespace our full path may not exist under
/// the container's mount, whose root is then our cgroup.
pub fn cpu_quota_from(
    proc_cgroup: &str,
    cgroup_root: &Path,
) -> Result<Option<CpuQuota>, CpuViewError> {
    let mut best: Option<CpuQuota> = None;
    let mut consider = |q: CpuQuota| {
        let tighter = match &best {
            Some(b) => q.cpus() < b.cpus(),
            None => true,
        };
        if tighter {
            best = Some(q);
        }
    };
    for line in parse_proc_cgroup(proc_cgroup) {
        if line.hierarchy == 0 && line.controllers.is_empty() {
            for mount in [cgroup_root.to_path_buf(), cgroup_root.join("unified")] {
                for dir in cgroup_dirs(&mount, &line.path) {
                    let file = dir.join("cpu.max");
                    if let Some(text) = read_optional(&file)? {
                        if let Some((quota_us, period_us)) = parse_cpu_max(&text)? {
                            consider(CpuQuota {
                                quota_us,
                                period_us,
                                file,
                            });
                        }
                    }
                }
            }
        } else if line.controllers.iter().any(|c| c == "cpu") {
            for name in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
                for dir in cgroup_dirs(&cgroup_root.join(name), &line.path) {
                    let qfile = dir.join("cpu.cfs_quota_us");
                    let (Some(q), Some(p)) = (
                        read_optional(&qfile)?,
                        read_optional(&dir.join("cpu.cfs_period_us"))?,
                    ) else {
                        continue;
                    };
                    if let Some((quota_us, period_us)) = parse_cfs_quota(&q, &p)? {
                        consider(CpuQuota {
                            quota_us,
                            period_us,
                            file: qfile,
                        });
                    }
                }
            }
        }
    }
    Ok(best)
}

/// The cgroup CPU bandwidth limit of this process, if any (see [`cpu_quota_from`]).
pub fn read_cpu_quota() -> Result<Option<CpuQuota>, CpuViewError> {
    let paths = SystemPaths::default();
    match read_optional(&paths.proc_self_cgroup)? {
        Some(text) => cpu_quota_from(&text, &paths.cgroup_root),
        None => Ok(None),
    }
}

// ------------------------------------------------------------------------------------------
// Topology
// ------------------------------------------------------------------------------------------

/// Where a CPU sits in the machine.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuTopology {
    /// The CPU id.
    pub cpu: u32,
    /// Its physical core, named by the lowest CPU id among its SMT siblings (unlike sysfs
    /// `core_id`, unique across packages).
    pub core: u32,
    /// Every CPU of that core, itself included, ascending.
    pub siblings: Vec<u32>,
    /// Its NUMA node (0 when the machine has no NUMA information).
    pub node: u32,
}

/// Where the files describing the machine live (real paths by default; tests point elsewhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPaths {
    /// `/proc/self/cgroup`.
    pub proc_self_cgroup: PathBuf,
    /// `/sys/fs/cgroup`.
    pub cgroup_root: PathBuf,
    /// `/sys/devices/system` (holds `cpu/` and `node/`).
    pub system_root: PathBuf,
}

impl Default for SystemPaths {
    fn default() -> Self {
        Self {
            proc_self_cgroup: PathBuf::from("/proc/self/cgroup"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            system_root: PathBuf::from("/sys/devices/system"),
        }
    }
}

/// Topology of `cpus` from `system_root` (normally `/sys/devices/system`). Missing or odd
/// files give defaults (the CPU its own core, node 0) and a line in `warnings` for odd ones.
fn read_topology(system_root: &Path, cpus: &[u32], warnings: &mut Vec<String>) -> Vec<CpuTopology> {
    // NUMA nodes: node/nodeN/cpulist.
    let mut node_of: BTreeMap<u32, u32> = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(system_root.join("node")) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(node) = name
                .to_str()
                .and_then(|n| n.strip_prefix("node"))
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            match read_optional(&entry.path().join("cpulist")) {
                Ok(Some(text)) => match parse_cpu_list(&text) {
                    Ok(list) => {
                        for cpu in list {
                            node_of.entry(cpu).or_insert(node);
                        }
                    }
                    Err(e) => warnings.push(e.to_string()),
                },
                Ok(None) => {}
                Err(e) => warnings.push(e.to_string()),
            }
        }
    }
    cpus.iter()
        .map(|&cpu| {
            let file = system_root
                .join("cpu")
                .join(format!("cpu{cpu}"))
                .join("topology/thread_siblings_list");
            let mut siblings = match read_optional(&file) {
                Ok(Some(text)) => parse_cpu_list(&text).unwrap_or_else(|e| {
                    warnings.push(e.to_string());
                    Vec::new()
                }),
                Ok(None) => Vec::new(),
                Err(e) => {
                    warnings.push(e.to_string());
                    Vec::new()
                }
            };
            if !siblings.contains(&cpu) {
                siblings.push(cpu);
                siblings.sort_unstable();
            }
            CpuTopology {
                cpu,
                core: siblings[0],
                siblings,
                node: node_of.get(&cpu).copied().unwrap_or(0),
            }
        })
        .collect()
}

/// The CPUs the collector may use, and where they sit.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CpuView {
    /// CPUs in the affinity mask, ascending (never empty).
    pub allowed: Vec<u32>,
    /// Topology of each allowed CPU, in the order of `allowed`.
    pub topology: Vec<CpuTopology>,
    /// The cgroup CPU bandwidth limit, if any.
    pub quota: Option<CpuQuota>,
    /// Things that could not be read or parsed (defaults were used instead).
    pub warnings: Vec<String>,
}

impl CpuView {
    /// Look at the machine from the calling thread: its affinity mask (at heap start-up this
    /// is the process's mask, which threads inherit), the cgroup limit and the topology.
    /// Fails only if the affinity mask cannot be read.
    pub fn detect() -> Result<Self, CpuViewError> {
        let allowed = thread_affinity(0).map_err(|source| CpuViewError::Syscall {
            call: "sched_getaffinity",
            source,
        })?;
        Ok(Self::from_allowed(allowed, &SystemPaths::default()))
    }

    /// A view of the `allowed` CPUs, reading cgroup and topology files under `paths`.
    /// An empty `allowed` is replaced by `[0]`.
    pub fn from_allowed(mut allowed: Vec<u32>, paths: &SystemPaths) -> Self {
        allowed.sort_unstable();
        allowed.dedup();
        let mut warnings = Vec::new();
        if allowed.is_empty() {
            warnings.push("empty affinity mask; assuming CPU 0".to_string());
            allowed.push(0);
        }
        let quota = match read_optional(&paths.proc_self_cgroup) {
            Ok(Some(text)) => cpu_quota_from(&text, &paths.cgroup_root).unwrap_or_else(|e| {
                warnings.push(e.to_string());
                None
            }),
            Ok(None) => None,
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        };
        let topology = read_topology(&paths.system_root, &allowed, &mut warnings);
        Self {
            allowed,
            topology,
            quota,
            warnings,
        }
    }

    /// How many CPUs' worth of work the process can get: the number of allowed CPUs, capped
    /// by the cgroup limit (rounded up). At least 1.
    pub fn effective_cpus(&self) -> usize {
        let n = self.allowed.len();
        self.quota
            .as_ref()
            .map_or(n, |q| n.min(q.effective_cpus()))
            .max(1)
    }

    /// Topology of `cpu`, if it is allowed.
    pub fn topology_of(&self, cpu: u32) -> Option<&CpuTopology> {
        self.topology.iter().find(|t| t.cpu == cpu)
    }

    /// Number of distinct physical cores among the allowed CPUs.
    pub fn core_count(&self) -> usize {
        let mut cores: Vec<u32> = self.topology.iter().map(|t| t.core).collect();
        cores.sort_unstable();
        cores.dedup();
        cores.len()
    }

    /// NUMA nodes of the allowed CPUs, ascending.
    pub fn nodes(&self) -> Vec<u32> {
        let mut nodes: Vec<u32> = self.topology.iter().map(|t| t.node).collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }
}

// ------------------------------------------------------------------------------------------
// /proc/stat: per-CPU busy time
// ------------------------------------------------------------------------------------------

/// Cumulative time of one CPU from `/proc/stat`, in clock ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice + system + irq + softirq + steal (guest time is inside user/nice).
    pub busy: u64,
    /// idle + iowait.
    pub idle: u64,
}

/// Per-CPU times from the text of `/proc/stat` (the aggregate `cpu` line and malformed lines
/// are skipped; fields missing on old kernels count as 0).
pub fn parse_proc_stat(text: &str) -> BTreeMap<u32, CpuTimes> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(cpu) = fields
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .and_then(|id| id.parse::<u32>().ok())
        else {
            continue;
        };
        let values: Option<Vec<u64>> = fields.take(8).map(|f| f.parse().ok()).collect();
        let Some(v) = values else { continue };
        if v.len() < 4 {
            continue;
        }
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let busy = get(0)
            .saturating_add(get(1))
            .saturating_add(get(2))
            .saturating_add(get(5))
            .saturating_add(get(6))
            .saturating_add(get(7));
        let idle = get(3).saturating_add(get(4));
        out.insert(cpu, CpuTimes { busy, idle });
    }
    out
}

/// Per-CPU busy fraction (0..=1) between two `/proc/stat` samples, indexed by CPU id (the
/// vector is as long as the largest id in `cur` + 1). A CPU missing from either sample, or
/// without ticks in between, gets 0. Counters that went backwards (iowait may, and hotplug
/// resets them) count as no time.
pub fn busy_between(prev: &BTreeMap<u32, CpuTimes>, cur: &BTreeMap<u32, CpuTimes>) -> Vec<f64> {
    let len = cur.keys().next_back().map_or(0, |&m| m as usize + 1);
    let mut busy = vec![0.0; len];
    for (&cpu, c) in cur {
        let Some(p) = prev.get(&cpu) else { continue };
        let b = c.busy.saturating_sub(p.busy);
        let i = c.idle.saturating_sub(p.idle);
        if b + i > 0 {
            busy[cpu as usize] = (b as f64 / (b + i) as f64).clamp(0.0, 1.0);
        }
    }
    busy
}

/// Read and parse a `/proc/stat`-format file.
pub fn read_proc_stat(path: &Path) -> Result<BTreeMap<u32, CpuTimes>, CpuViewError> {
    let text = fs::read_to_string(path).map_err(|source| CpuViewError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let times = parse_proc_stat(&text);
    if times.is_empty() {
        return Err(parse_error("/proc/stat", &text, "no per-CPU lines"));
    }
    Ok(times)
}

/// Per-CPU busy fractions over one sampling window.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSnapshot {
    busy: Vec<f64>,
    /// Length of the window the fractions cover.
    pub window: Duration,
    /// When the window ended.
    pub taken: Instant,
}

impl LoadSnapshot {
    /// A snapshot from busy fractions indexed by CPU id (values are clamped to 0..=1,
    /// non-numbers become 0). Useful to force a placement decision.
    pub fn new(busy_by_cpu: Vec<f64>, window: Duration) -> Self {
        let busy = busy_by_cpu
            .into_iter()
            .map(|b| {
                if b.is_finite() {
                    b.clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect();
        Self {
            busy,
            window,
            taken: Instant::now(),
        }
    }

    /// Busy fraction of `cpu` in the window (0 for a CPU the sample did not cover).
    pub fn busy(&self, cpu: u32) -> f64 {
        self.busy.get(cpu as usize).copied().unwrap_or(0.0)
    }

    /// All fractions, indexed by CPU id.
    pub fn busy_by_cpu(&self) -> &[f64] {
        &self.busy
    }

    /// Time since the window ended.
    pub fn age(&self) -> Duration {
        self.taken.elapsed()
    }
}

/// Sample `/proc/stat` twice, `window` apart (blocks for `window`; not for the pause path).
pub fn sample_load(window: Duration) -> Result<LoadSnapshot, CpuViewError> {
    let path = Path::new("/proc/stat");
    let start = Instant::now();
    let a = read_proc_stat(path)?;
    std::thread::sleep(window);
    let b = read_proc_stat(path)?;
    let mut snap = LoadSnapshot::new(busy_between(&a, &b), start.elapsed());
    snap.taken = Instant::now();
    Ok(snap)
}

// ------------------------------------------------------------------------------------------
// /proc/self/task/<tid>/stat: where a thread last ran
// ------------------------------------------------------------------------------------------

/// The parts of a thread's `stat` line the placement needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskStat {
    /// Field 3: `R` running, `S` sleeping, `D` disk sleep, …
    pub state: char,
    /// Field 39: the CPU the thread last ran on.
    pub processor: u32,
}

/// Parse a `/proc/<pid>/task/<tid>/stat` line. The command name (field 2) may contain spaces
/// and parentheses, so fields are counted from the **last** `)`.
pub fn parse_task_stat(text: &str) -> Result<TaskStat, CpuViewError> {
    let close = text
        .rfind(')')
        .ok_or_else(|| parse_error("task stat", text, "no ')' after the command name"))?;
    let mut rest = text[close + 1..].split_whitespace();
    let state = rest
        .next()
        .and_then(|s| s.chars().next())
        .ok_or_else(|| parse_error("task stat", text, "no state field"))?;
    // Field 3 was the state; field 39 is 36 further on.
    let processor = rest
        .nth(35)
        .ok_or_else(|| parse_error("task stat", text, "fewer than 39 fields"))?;
    let processor = processor.parse().map_err(|_| {
        parse_error(
            "task stat",
            text,
            format!("processor field '{processor}' is not a CPU number"),
        )
    })?;
    Ok(TaskStat { state, processor })
}

/// State and last CPU of thread `tid` of this process.
pub fn task_stat(tid: i32) -> Result<TaskStat, CpuViewError> {
    let path = PathBuf::from(format!("/proc/self/task/{tid}/stat"));
    let text = fs::read_to_string(&path).map_err(|source| CpuViewError::Io { path, source })?;
    parse_task_stat(&text)
}

/// The CPU thread `tid` of this process last ran on.
pub fn thread_last_cpu(tid: i32) -> Result<u32, CpuViewError> {
    task_stat(tid).map(|s| s.processor)
}

/// `load_i` of the module documentation for each CPU of `cpus`: its busy fraction in `busy`
/// (0 without a snapshot) plus [`GC_THREAD_LOAD`] for each entry of `thread_cpus` equal to it.
/// Threads on CPUs outside `cpus` (or of unknown CPU) add nothing.
pub fn combined_loads(
    cpus: &[u32],
    busy: Option<&LoadSnapshot>,
    thread_cpus: &[Option<u32>],
) -> Vec<f64> {
    cpus.iter()
        .map(|&cpu| {
            let threads = thread_cpus.iter().filter(|&&c| c == Some(cpu)).count();
            busy.map_or(0.0, |s| s.busy(cpu)) + GC_THREAD_LOAD * threads as f64
        })
        .collect()
}

// ------------------------------------------------------------------------------------------
// Background sampler
// ------------------------------------------------------------------------------------------

struct SamplerShared {
    latest: Mutex<Option<Arc<LoadSnapshot>>>,
    stop: Mutex<bool>,
    wake: Condvar,
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// Samples `/proc/stat` every period on a background thread (`concord-load`) and keeps the
/// latest per-CPU busy fractions, so a collection reads them without waiting for a window.
/// Dropping it stops and joins the thread (promptly: the wait is interruptible).
pub struct LoadSampler {
    shared: Arc<SamplerShared>,
    period: Duration,
    thread: Option<JoinHandle<()>>,
}

impl LoadSampler {
    /// Sample `/proc/stat` every `period` (at least 1 ms). The first snapshot is available
    /// one period after the start.
    pub fn start(period: Duration) -> Result<Self, CpuViewError> {
        Self::start_from(PathBuf::from("/proc/stat"), period)
    }

    /// Like [`LoadSampler::start`], reading a `/proc/stat`-format file at `path`.
    pub fn start_from(path: PathBuf, period: Duration) -> Result<Self, CpuViewError> {
        let period = period.max(Duration::from_millis(1));
        let first = read_proc_stat(&path)?;
        let shared = Arc::new(SamplerShared {
            latest: Mutex::new(None),
            stop: Mutex::new(false),
            wake: Condvar::new(),
            errors: AtomicU64::new(0),
            last_error: Mutex::new(None),
        });
        let worker = shared.clone();
        let thread = std::thread::Builder::new()
            .name("concord-load".into())
            .spawn(move || sampler_loop(&worker, &path, period, first))
            .map_err(|source| CpuViewError::Syscall {
                call: "spawning the load sampler thread",
                source,
            })?;
        Ok(Self {
            shared,
            period,
            thread: Some(thread),
        })
    }

    /// The sampling period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The most recent snapshot (`None` before the first window has passed). Cheap: one
    /// uncontended lock and an `Arc` clone.
    pub fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        lock(&self.shared.latest).clone()
    }

    /// Number of samples that failed so far, and the last failure.
    pub fn errors(&self) -> (u64, Option<String>) {
        (
            self.shared.errors.load(Ordering::Relaxed),
            lock(&self.shared.last_error).clone(),
        )
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn sampler_loop(
    shared: &SamplerShared,
    path: &Path,
    period: Duration,
    mut prev: BTreeMap<u32, CpuTimes>,
) {
    let mut prev_at = Instant::now();
    loop {
        {
            let deadline = Instant::now() + period;
            let mut stop = lock(&shared.stop);
            while !*stop {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                stop = shared
                    .wake
                    .wait_timeout(stop, deadline - now)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
            }
            if *stop {
                return;
            }
        }
        match read_proc_stat(path) {
            Ok(cur) => {
                let now = Instant::now();
                let mut snap = LoadSnapshot::new(busy_between(&prev, &cur), now - prev_at);
                snap.taken = now;
                *lock(&shared.latest) = Some(Arc::new(snap));
                prev = cur;
                prev_at = now;
            }
            Err(e) => {
                shared.errors.fetch_add(1, Ordering::Relaxed);
                *lock(&shared.last_error) = Some(e.to_string());
            }
        }
    }
}

impl Drop for LoadSampler {
    fn drop(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for LoadSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadSampler")
            .field("period", &self.period)
            .field("latest", &self.latest())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch directory removed on drop.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "concord-cpu-view-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        fn write(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn cpu_list_parses_ranges_singles_and_blanks() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11\n").unwrap(),
            vec![0, 1, 2, 3, 8, 10, 11]
        );
        assert_eq!(parse_cpu_list("5").unwrap(), vec![5]);
        assert_eq!(parse_cpu_list(" 3,1,1-2 ").unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_cpu_list("\n").unwrap(), Vec::<u32>::new());
        assert_eq!(parse_cpu_list("").unwrap(), Vec::<u32>::new());
        for bad in ["3-1", "a", "0,,1", "1-", "-1", "0-3,", "99999999", "70000"] {
            let err = parse_cpu_list(bad).unwrap_err();
            assert!(matches!(err, CpuViewError::Parse { .. }), "{bad}: {err}");
        }
    }

    #[test]
    fn cpu_list_round_trips_through_format() {
        for text in ["0-3,8,10-11", "0", "1,3,5", "0-63"] {
            assert_eq!(format_cpu_list(&parse_cpu_list(text).unwrap()), text);
        }
        assert_eq!(format_cpu_list(&[5, 0, 1, 2, 2]), "0-2,5");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn mask_bits_become_cpu_ids() {
        assert_eq!(mask_to_cpus(&[0b1011, 1 << 63, 1]), vec![0, 1, 3, 127, 128]);
        assert!(mask_to_cpus(&[0, 0]).is_empty());
    }

    #[test]
    fn own_affinity_is_readable_and_matches_status() {
        let mine = thread_affinity(0).unwrap();
        assert!(!mine.is_empty());
        assert_eq!(
            mine,
            crate::os::affinity::current_thread_affinity().unwrap()
        );
        assert_eq!(thread_affinity(current_tid()).unwrap(), mine);
    }

    #[test]
    fn set_thread_affinity_rejects_bad_input_without_a_syscall() {
        assert_eq!(
            set_thread_affinity(0, &[0]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_thread_affinity(current_tid(), &[]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_thread_affinity(current_tid(), &[CPU_ID_LIMIT])
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidInput
        );
        // pid 1 is never a thread of a test process.
        assert_eq!(
            set_thread_affinity(1, &[0]).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn cpu_max_forms() {
        assert_eq!(parse_cpu_max("max 100000\n").unwrap(), None);
        assert_eq!(
            parse_cpu_max("200000 100000\n").unwrap(),
            Some((200_000, 100_000))
        );
        assert_eq!(parse_cpu_max("max").unwrap(), None);
        assert_eq!(parse_cpu_max("50000").unwrap(), Some((50_000, 100_000)));
        for bad in ["", "x 100000", "100 y", "0 100000", "100 0", "1 2 3"] {
            assert!(parse_cpu_max(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_cfs_quota("-1\n", "100000\n").unwrap(), None);
        assert_eq!(
            parse_cfs_quota("150000\n", "100000\n").unwrap(),
            Some((150_000, 100_000))
        );
        assert!(parse_cfs_quota("lots", "100000").is_err());
        assert!(parse_cfs_quota("100", "0").is_err());
    }

    #[test]
    fn quota_rounds_up_to_whole_cpus() {
        let q = |quota_us, period_us| CpuQuota {
            quota_us,
            period_us,
            file: PathBuf::new(),
        };
        assert_eq!(q(200_000, 100_000).effective_cpus(), 2);
        assert_eq!(q(150_000, 100_000).effective_cpus(), 2);
        assert_eq!(q(10_000, 100_000).effective_cpus(), 1);
        assert!((q(150_000, 100_000).cpus() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn proc_cgroup_lines() {
        let lines = parse_proc_cgroup("12:cpu,cpuacct:/docker/abc\n0::/user.slice\ngarbage\n");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].hierarchy, 12);
        assert_eq!(lines[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(lines[0].path, "/docker/abc");
        assert_eq!(lines[1].hierarchy, 0);
        assert!(lines[1].controllers.is_empty());
        assert_eq!(lines[1].path, "/user.slice");
    }

    #[test]
    fn cgroup_v2_quota_takes_the_tightest_ancestor() {
        let s = Scratch::new("v2");
        s.write("a/cpu.max", "300000 100000\n");
        s.write("a/b/cpu.max", "max 100000\n");
        s.write("cpu.max", "max 100000\n");
        let q = cpu_quota_from("0::/a/b\n", &s.0).unwrap().unwrap();
        assert_eq!((q.quota_us, q.period_us), (300_000, 100_000));
        assert_eq!(q.effective_cpus(), 3);
        assert_eq!(q.file, s.0.join("a/cpu.max"));
        // No files at all: no limit, no error.
        assert_eq!(
            cpu_quota_from("0::/x/y\n", &s.0.join("none")).unwrap(),
            None
        );
        // Paths that try to leave the mount are ignored.
        assert_eq!(
            cpu_quota_from("0::/../../etc\n", &s.0.join("a")).unwrap(),
            None
        );
        // Garbage in a file is an error, not a panic.
        s.write("bad/cpu.max", "lots of cpu\n");
        assert!(cpu_quota_from("0::/bad\n", &s.0).is_err());
    }

    #[test]
    fn cgroup_v1_quota_and_unlimited() {
        let s = Scratch::new("v1");
        s.write("cpu,cpuacct/job/cpu.cfs_quota_us", "250000\n");
        s.write("cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
        s.write("cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        s.write("cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        let text = "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n";
        let q = cpu_quota_from(text, &s.0).unwrap().unwrap();
        assert_eq!(q.effective_cpus(), 3);
        assert!((q.cpus() - 2.5).abs() < 1e-12);
        assert_eq!(cpu_quota_from("3:cpu,cpuacct:/\n", &s.0).unwrap(), None);
    }

    #[test]
    fn topology_from_fixture_files_and_defaults() {
        let s = Scratch::new("topo");
        s.write("cpu/cpu0/topology/thread_siblings_list", "0,2\n");
        s.write("cpu/cpu2/topology/thread_siblings_list", "0,2\n");
        s.write("cpu/cpu1/topology/thread_siblings_list", "1,3\n");
        s.write("cpu/cpu3/topology/thread_siblings_list", "garbage\n");
        s.write("node/node0/cpulist", "0-1\n");
        s.write("node/node1/cpulist", "2-3\n");
        s.write("node/possible", "0-1\n");
        let mut warnings = Vec::new();
        let topo = read_topology(&s.0, &[0, 1, 2, 3, 4], &mut warnings);
        assert_eq!(topo[0].core, 0);
        assert_eq!(topo[0].siblings, vec![0, 2]);
        assert_eq!(topo[2].core, 0);
        assert_eq!(topo[2].node, 1);
        assert_eq!(topo[1].core, 1);
        assert_eq!(topo[1].node, 0);
        // Unparsable siblings: its own core, with a warning.
        assert_eq!(topo[3].siblings, vec![3]);
        assert_eq!(topo[3].node, 1);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        // No files: own core, node 0.
        assert_eq!(
            topo[4],
            CpuTopology {
                cpu: 4,
                core: 4,
                siblings: vec![4],
                node: 0
            }
        );

        let view = CpuView::from_allowed(
            vec![3, 0, 1, 2],
            &SystemPaths {
                proc_self_cgroup: s.0.join("missing"),
                cgroup_root: s.0.join("missing"),
                system_root: s.0.clone(),
            },
        );
        assert_eq!(view.allowed, vec![0, 1, 2, 3]);
        assert_eq!(view.core_count(), 3);
        assert_eq!(view.nodes(), vec![0, 1]);
        assert_eq!(view.effective_cpus(), 4);
        assert_eq!(view.topology_of(2).unwrap().core, 0);
    }

    #[test]
    fn view_applies_the_cgroup_cap() {
        let s = Scratch::new("cap");
        s.write("proc_cgroup", "0::/box\n");
        s.write("cg/box/cpu.max", "100000 100000\n");
        let view = CpuView::from_allowed(
            vec![0, 1, 2, 3],
            &SystemPaths {
                proc_self_cgroup: s.0.join("proc_cgroup"),
                cgroup_root: s.0.join("cg"),
                system_root: s.0.join("nosys"),
            },
        );
        assert_eq!(view.effective_cpus(), 1);
        assert!(view.warnings.is_empty(), "{:?}", view.warnings);
    }

    #[test]
    fn real_machine_view() {
        let view = CpuView::detect().unwrap();
        assert!(!view.allowed.is_empty());
        assert_eq!(view.topology.len(), view.allowed.len());
        assert!(view.effective_cpus() >= 1);
        assert!(view.effective_cpus() <= view.allowed.len());
        let _ = read_cpu_quota().unwrap();
    }

    const STAT_A: &str = "cpu  300 0 100 600 0 0 0 0 0 0\n\
        cpu0 100 0 50 350 0 0 0 0 0 0\n\
        cpu1 200 0 50 250 0 0 0 0 0 0\n\
        intr 12345 1 2\nctxt 999\nbtime 1700000000\n";
    const STAT_B: &str = "cpu  500 0 100 800 0 0 0 0 0 0\n\
        cpu0 100 0 50 550 0 0 0 0 0 0\n\
        cpu1 350 0 50 300 0 0 0 0 0 0\n";

    #[test]
    fn proc_stat_lines() {
        let t = parse_proc_stat(
            "cpu  1 2 3 4 5 6 7 8 9 10\n\
             cpu0 10 1 5 100 7 2 3 4 50 0\n\
             cpu3 1 2 3 4\n\
             cpu4 1 2\n\
             cpuX 1 2 3 4\n\
             cpu5 1 two 3 4\n\
             intr 1 2 3\n",
        );
        assert_eq!(t.len(), 2, "{t:?}");
        // guest (50) is already inside user and is not added again.
        assert_eq!(
            t[&0],
            CpuTimes {
                busy: 25,
                idle: 107
            }
        );
        assert_eq!(t[&3], CpuTimes { busy: 6, idle: 4 });
    }

    #[test]
    fn busy_fractions_between_samples() {
        let a = parse_proc_stat(STAT_A);
        let b = parse_proc_stat(STAT_B);
        let busy = busy_between(&a, &b);
        assert_eq!(busy.len(), 2);
        assert!((busy[0] - 0.0).abs() < 1e-12);
        assert!((busy[1] - 0.75).abs() < 1e-12);
        // Same sample twice: no ticks, 0. Backwards counters: no panic, 0..=1.
        assert_eq!(busy_between(&a, &a), vec![0.0, 0.0]);
        let back = busy_between(&b, &a);
        assert!(back.iter().all(|f| (0.0..=1.0).contains(f)));
        // A CPU that appears only in the new sample gets 0.
        let mut c = b.clone();
        c.insert(5, CpuTimes { busy: 9, idle: 1 });
        let busy = busy_between(&a, &c);
        assert_eq!(busy.len(), 6);
        assert_eq!(busy[5], 0.0);
    }

    #[test]
    fn task_stat_field_39_with_a_hostile_command_name() {
        let tail = "S 1 2 3 0 -1 4194560 10 0 0 0 5 6 0 0 20 0 7 0 100 1000 50 \
                    18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        let line = format!("4242 (gc (worker) 1) ) {tail}\n");
        assert_eq!(
            parse_task_stat(&line).unwrap(),
            TaskStat {
                state: 'S',
                processor: 3
            }
        );
        let plain = format!("7 (java) {tail}");
        assert_eq!(parse_task_stat(&plain).unwrap().processor, 3);
        assert!(parse_task_stat("4242 (short) S 1 2 3").is_err());
        assert!(parse_task_stat("no parenthesis at all").is_err());
        assert!(parse_task_stat("1 (x)").is_err());
        let bad_cpu = plain.replace(" 17 3 ", " 17 x ");
        assert!(parse_task_stat(&bad_cpu).is_err());
    }

    #[test]
    fn own_task_stat_is_readable() {
        let s = task_stat(current_tid()).unwrap();
        assert!(thread_affinity(0).unwrap().contains(&s.processor));
        assert!(task_stat(-5).is_err());
    }

    #[test]
    fn combined_loads_add_our_threads() {
        let snap = LoadSnapshot::new(vec![0.5, 0.25, f64::NAN, 7.0], Duration::from_millis(100));
        assert_eq!(snap.busy(2), 0.0);
        assert_eq!(snap.busy(3), 1.0);
        assert_eq!(snap.busy(99), 0.0);
        let loads = combined_loads(
            &[0, 1, 5],
            Some(&snap),
            &[Some(0), Some(0), Some(1), None, Some(9)],
        );
        assert_eq!(loads, vec![2.5, 1.25, 0.0]);
        assert_eq!(combined_loads(&[0, 1], None, &[Some(1)]), vec![0.0, 1.0]);
    }

    #[test]
    fn sampler_publishes_fractions_and_stops_promptly() {
        let s = Scratch::new("sampler");
        let stat = s.0.join("stat");
        fs::write(&stat, STAT_A).unwrap();
        let sampler = LoadSampler::start_from(stat.clone(), Duration::from_millis(5)).unwrap();
        let tmp = s.0.join("stat.tmp");
        fs::write(&tmp, STAT_B).unwrap();
        fs::rename(&tmp, &stat).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(snap) = sampler.latest() {
                if (snap.busy(1) - 0.75).abs() < 1e-12 {
                    assert_eq!(snap.busy(0), 0.0);
                    break;
                }
            }
            assert!(Instant::now() < deadline, "no snapshot with the new sample");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Garbage is counted as an error; the last good snapshot stays.
        fs::write(&tmp, "nonsense\n").unwrap();
        fs::rename(&tmp, &stat).unwrap();
        while sampler.errors().0 == 0 {
            assert!(Instant::now() < deadline, "the bad sample was not noticed");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(sampler.latest().is_some());
        assert!(sampler.errors().1.unwrap().contains("no per-CPU lines"));
        drop(sampler);

        // A long period does not delay the drop.
        let slow = LoadSampler::start_from(stat_path_ok(&s), Duration::from_secs(3600)).unwrap();
        let t = Instant::now();
        drop(slow);
        assert!(t.elapsed() < Duration::from_secs(5));

        assert!(LoadSampler::start_from(s.0.join("absent"), Duration::from_millis(5)).is_err());
    }

    fn stat_path_ok(s: &Scratch) -> PathBuf {
        let p = s.0.join("ok-stat");
        fs::write(&p, STAT_A).unwrap();
        p
    }

    #[test]
    fn real_proc_stat_sampler() {
        let sampler = LoadSampler::start(Duration::from_millis(10)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let snap = loop {
            if let Some(s) = sampler.latest() {
                break s;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        };
        for &cpu in &thread_affinity(0).unwrap() {
            assert!((0.0..=1.0).contains(&snap.busy(cpu)));
        }
        let once = sample_load(Duration::from_millis(20)).unwrap();
        assert!(once.window >= Duration::from_millis(20));
    }
}
