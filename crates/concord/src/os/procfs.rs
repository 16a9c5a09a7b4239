//! Readers of the kernel's text files: the CPU-list syntax (sysfs, cgroup and `/proc` share it),
//! `/proc/stat` (per-CPU times), `/proc/self/task` (this process's threads: their ids, names
//! and `stat` lines), `key: value` files (`/proc/meminfo`, `/proc/vmstat`), `/proc/self/smaps`
//! (how a range of this process's memory is backed) and sysfs choice files
//! (`always [madvise] never`).
//!
//! Each file has one parser here, and every parser is defensive: odd content gives an error
//! value, never a panic.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::CPU_ID_LIMIT;

/// A kernel file could not be read, or did not have the expected shape.
#[derive(Debug, thiserror::Error)]
pub enum KernelFileError {
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
}

impl From<KernelFileError> for io::Error {
    fn from(e: KernelFileError) -> io::Error {
        let kind = match &e {
            KernelFileError::Io { source, .. } => source.kind(),
            KernelFileError::Parse { .. } => io::ErrorKind::InvalidData,
        };
        io::Error::new(kind, e)
    }
}

/// A [`KernelFileError::Parse`] quoting at most 120 bytes of `text`.
pub(crate) fn parse_error(
    what: &'static str,
    text: &str,
    reason: impl Into<String>,
) -> KernelFileError {
    let mut text = text.trim_end().to_string();
    if text.len() > 120 {
        let mut cut = 120;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push('…');
    }
    KernelFileError::Parse {
        what,
        text,
        reason: reason.into(),
    }
}

/// Read a small text file; `Ok(None)` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, KernelFileError> {
    match fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(KernelFileError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// The number in a kernel name made of `prefix` and a number (`numbered("cpu3", "cpu")` is
/// 3); `None` for any other name (`"cpu"`, `"cpufreq"`).
pub(crate) fn numbered(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?.parse().ok()
}

// ------------------------------------------------------------------------------------------
// CPU lists
// ------------------------------------------------------------------------------------------

fn parse_cpu_id(text: &str, whole: &str) -> Result<u32, KernelFileError> {
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
pub fn parse_cpu_list(text: &str) -> Result<Vec<u32>, KernelFileError> {
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
// /proc/stat: per-CPU times
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
        let Some(cpu) = fields.next().and_then(|name| numbered(name, "cpu")) else {
            continue;
        };
        let values: Option<Vec<u64>> = fields.take(8).map(|f| f.parse().ok()).collect();
        let Some(v) = values else { continue };
        if v.len() < 4 {
            continue;
        }
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let busy = [0, 1, 2, 5, 6, 7]
            .into_iter()
            .fold(0u64, |sum, i| sum.saturating_add(get(i)));
        let idle = get(3).saturating_add(get(4));
        out.insert(cpu, CpuTimes { busy, idle });
    }
    out
}

/// Read and parse a `/proc/stat`-format file; a file without per-CPU lines is an error.
pub fn read_proc_stat(path: &Path) -> Result<BTreeMap<u32, CpuTimes>, KernelFileError> {
    let text = fs::read_to_string(path).map_err(|source| KernelFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let times = parse_proc_stat(&text);
    if times.is_empty() {
        return Err(parse_error("/proc/stat", &text, "no per-CPU lines"));
    }
    Ok(times)
}

// ------------------------------------------------------------------------------------------
// /proc/self/task: the threads of this process
// ------------------------------------------------------------------------------------------

/// `/proc/self/task/<tid>`, the directory of thread `tid` of this process.
fn task_dir(tid: i32) -> PathBuf {
    PathBuf::from(format!("/proc/self/task/{tid}"))
}

/// The thread ids of this process, ascending.
///
/// One walk of `/proc/self/task` can miss live threads: when the thread the kernel is listing
/// exits meanwhile, the listing stops early or resumes by position and skips entries. So the
/// directory is walked again until a walk finds no thread the earlier ones missed (at most
/// [`THREAD_LIST_WALKS`] walks); the answer is their union, sorted, and may name a thread that
/// has just ended (callers reading its files get `NotFound`).
pub fn process_thread_ids() -> io::Result<Vec<i32>> {
    thread_ids_in(Path::new("/proc/self/task"))
}

/// The thread ids of process `pid`, ascending, walked as [`process_thread_ids`] walks its own.
pub fn thread_ids_of(pid: i32) -> io::Result<Vec<i32>> {
    thread_ids_in(&PathBuf::from(format!("/proc/{pid}/task")))
}

fn thread_ids_in(task_dir: &Path) -> io::Result<Vec<i32>> {
    let mut tids = std::collections::BTreeSet::new();
    for _ in 0..THREAD_LIST_WALKS {
        let before = tids.len();
        for entry in fs::read_dir(task_dir)? {
            if let Some(tid) = entry
                .ok()
                .and_then(|e| e.file_name().to_str()?.parse::<i32>().ok())
            {
                tids.insert(tid);
            }
        }
        if before > 0 && tids.len() == before {
            break;
        }
    }
    Ok(tids.into_iter().collect())
}

/// The most walks [`process_thread_ids`] makes of `/proc/self/task`.
pub const THREAD_LIST_WALKS: usize = 4;

/// Whether thread `tid` of this process still exists (a stale or foreign id does not).
pub fn thread_exists(tid: i32) -> bool {
    tid > 0 && task_dir(tid).exists()
}

/// The name (`comm`) of thread `tid`, at most 15 bytes, as the kernel keeps it.
pub fn thread_name(tid: i32) -> io::Result<String> {
    let bytes = fs::read(task_dir(tid).join("comm"))?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(text.strip_suffix('\n').unwrap_or(&text).to_string())
}

/// The fields of `/proc/<pid>/task/<tid>/stat` this crate uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskStat {
    /// Field 1: the thread id.
    pub tid: i32,
    /// Field 2: the thread name, without the parentheses.
    pub comm: String,
    /// Field 3: the state letter (`R`, `S`, `D`, …).
    pub state: char,
    /// Field 14: user-mode CPU time, in clock ticks.
    pub utime_ticks: u64,
    /// Field 15: kernel-mode CPU time, in clock ticks.
    pub stime_ticks: u64,
    /// Field 39: the CPU the thread last ran on.
    pub processor: u32,
}

impl TaskStat {
    /// User plus kernel CPU time in clock ticks.
    pub fn cpu_ticks(&self) -> u64 {
        self.utime_ticks.saturating_add(self.stime_ticks)
    }
}

/// A `stat` line that does not have the expected shape.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatParseError {
    /// No `(comm)` part.
    #[error("no '(name)' field")]
    NoComm,
    /// The line ends before this field.
    #[error("field {field} ({name}) is missing")]
    Missing {
        /// 1-based field number, as in proc(5).
        field: usize,
        /// The field's name in proc(5).
        name: &'static str,
    },
    /// A field is not a number.
    #[error("field {field} ({name}) is not a number: '{text}'")]
    NotANumber {
        /// 1-based field number, as in proc(5).
        field: usize,
        /// The field's name in proc(5).
        name: &'static str,
        /// What was there.
        text: String,
    },
}

/// Parse a `/proc/.../stat` line. The name (field 2) may hold spaces and `)`: it runs from the
/// first `(` to the *last* `)`, and the numbered fields are counted from there.
pub fn parse_task_stat(text: &str) -> Result<TaskStat, StatParseError> {
    let open = text.find('(').ok_or(StatParseError::NoComm)?;
    let close = text
        .rfind(')')
        .filter(|&c| c > open)
        .ok_or(StatParseError::NoComm)?;
    fn number<T: std::str::FromStr>(
        field: usize,
        name: &'static str,
        s: &str,
    ) -> Result<T, StatParseError> {
        s.parse().map_err(|_| StatParseError::NotANumber {
            field,
            name,
            text: s.to_string(),
        })
    }
    let tid = number(1, "pid", text[..open].trim())?;
    let comm = text[open + 1..close].to_string();
    // Fields 3, 4, … follow the name.
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    let field = |n: usize, name: &'static str| -> Result<&str, StatParseError> {
        rest.get(n - 3)
            .copied()
            .ok_or(StatParseError::Missing { field: n, name })
    };
    Ok(TaskStat {
        tid,
        comm,
        state: field(3, "state")?.chars().next().unwrap_or('?'),
        utime_ticks: number(14, "utime", field(14, "utime")?)?,
        stime_ticks: number(15, "stime", field(15, "stime")?)?,
        processor: number(39, "processor", field(39, "processor")?)?,
    })
}

/// Read and parse `/proc/self/task/<tid>/stat`. A malformed line is an `InvalidData` error
/// naming the file.
pub fn read_task_stat(tid: i32) -> io::Result<TaskStat> {
    let path = task_dir(tid).join("stat");
    let bytes = fs::read(&path)?;
    parse_task_stat(&String::from_utf8_lossy(&bytes)).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

// ------------------------------------------------------------------------------------------
// key/value files: /proc/meminfo, /proc/vmstat
// ------------------------------------------------------------------------------------------

/// The number after `key` in a file of `key value` lines (`/proc/vmstat`) or `key: value kB`
/// lines (`/proc/meminfo`; the value is returned as written, in kB). `None` when there is no
/// such line or its value is not a number.
pub fn field_value(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let mut words = line.split_whitespace();
        let name = words.next()?;
        (name.strip_suffix(':').unwrap_or(name) == key)
            .then(|| words.next()?.parse().ok())
            .flatten()
    })
}

/// `MemAvailable` of a `/proc/meminfo` text, bytes.
pub fn parse_mem_available(text: &str) -> Result<u64, KernelFileError> {
    field_value(text, "MemAvailable")
        .map(|kib| kib.saturating_mul(1024))
        .ok_or_else(|| parse_error("/proc/meminfo", text, "no 'MemAvailable: N kB' line"))
}

/// Read `path` whole, naming it in the error.
pub(crate) fn read_text(path: &Path) -> Result<String, KernelFileError> {
    fs::read_to_string(path).map_err(|source| KernelFileError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// `MemAvailable` from the `/proc/meminfo`-format file at `path`, bytes.
pub fn read_mem_available(path: &Path) -> Result<u64, KernelFileError> {
    parse_mem_available(&read_text(path)?)
}

// ------------------------------------------------------------------------------------------
// sysfs choice files
// ------------------------------------------------------------------------------------------

/// The chosen value of a sysfs choice file (`always [madvise] never` → `madvise`); a file
/// holding one plain value (`1`) is that value.
pub fn parse_sysfs_choice(text: &str) -> Result<String, KernelFileError> {
    let trimmed = text.trim();
    let chosen = match trimmed.find('[') {
        Some(open) => trimmed[open + 1..]
            .split_once(']')
            .map(|(inside, _)| inside.trim()),
        None if !trimmed.is_empty() && !trimmed.contains(char::is_whitespace) => Some(trimmed),
        None => None,
    };
    chosen
        .filter(|c| !c.is_empty())
        .map(str::to_string)
        .ok_or_else(|| {
            parse_error(
                "sysfs setting",
                text,
                "expected 'a [chosen] b' or one value",
            )
        })
}

// ------------------------------------------------------------------------------------------
// /proc/self/smaps
// ------------------------------------------------------------------------------------------

/// One mapping of `/proc/<pid>/smaps`, with the fields this crate uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SmapsVma {
    /// First address.
    pub start: usize,
    /// One past the last address.
    pub end: usize,
    /// `Rss`, bytes.
    pub rss_bytes: u64,
    /// `AnonHugePages`: anonymous memory backed by transparent huge pages, bytes.
    pub anon_huge_bytes: u64,
    /// `THPeligible` (kernels since 5.0): whether huge pages may back the mapping.
    pub thp_eligible: Option<bool>,
    /// `VmFlags`, e.g. `hg` (`MADV_HUGEPAGE`) or `nh` (`MADV_NOHUGEPAGE`).
    pub vm_flags: Vec<String>,
}

impl SmapsVma {
    /// Whether `flag` (`hg`, `nh`) is among the mapping's `VmFlags`.
    pub fn has_flag(&self, flag: &str) -> bool {
        self.vm_flags.iter().any(|f| f == flag)
    }
}

/// The `start-end` range of an smaps header line (`7f00-7f80 rw-p 0 00:00 0 [heap]`).
fn smaps_header(line: &str) -> Option<(usize, usize)> {
    let range = line.split_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    (start < end).then_some((start, end))
}

/// The mappings of an smaps text that overlap `[start, end)`, in order. Lines that are not
/// understood are skipped.
pub fn parse_smaps(text: &str, start: usize, end: usize) -> Vec<SmapsVma> {
    let mut out = Vec::new();
    let mut current: Option<SmapsVma> = None;
    for line in text.lines() {
        if let Some((s, e)) = smaps_header(line) {
            out.extend(current.take());
            current = (s < end && e > start).then(|| SmapsVma {
                start: s,
                end: e,
                ..SmapsVma::default()
            });
            continue;
        }
        let Some(vma) = current.as_mut() else {
            continue;
        };
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let kib = || field_value(line, key).unwrap_or(0).saturating_mul(1024);
        match key {
            "Rss" => vma.rss_bytes = kib(),
            "AnonHugePages" => vma.anon_huge_bytes = kib(),
            "THPeligible" => vma.thp_eligible = Some(value.trim() == "1"),
            "VmFlags" => vma.vm_flags = value.split_whitespace().map(str::to_string).collect(),
            _ => {}
        }
    }
    out.extend(current);
    out
}

/// The mappings of this process that overlap `[start, end)` (`/proc/self/smaps`).
pub fn read_self_smaps(start: usize, end: usize) -> Result<Vec<SmapsVma>, KernelFileError> {
    Ok(parse_smaps(
        &read_text(Path::new("/proc/self/smaps"))?,
        start,
        end,
    ))
}

// ------------------------------------------------------------------------------------------
// stat files kept open: a thread's last CPU and the process's thread count, inside a pause
// ------------------------------------------------------------------------------------------

/// A `stat` file (`/proc/self/stat` or `/proc/self/task/<tid>/stat`) kept open, so that a
/// field can be read again with one `pread` and no path lookup or allocation: about 2 µs
/// instead of the 130–300 µs of walking `/proc/self/task` again. For callers that must read
/// inside a stop-the-world pause (the HotSpot agent's GC callbacks).
#[derive(Debug)]
pub struct OpenStatFile {
    file: fs::File,
}

/// Large enough for any `stat` line (about 300 bytes; the name is at most 64).
const STAT_LINE_MAX: usize = 1024;

impl OpenStatFile {
    /// `/proc/self/task/<tid>/stat` of thread `tid` of this process.
    pub fn thread(tid: i32) -> io::Result<Self> {
        Ok(Self {
            file: fs::File::open(task_dir(tid).join("stat"))?,
        })
    }

    /// `/proc/self/stat`, the process as a whole.
    pub fn process() -> io::Result<Self> {
        Ok(Self {
            file: fs::File::open("/proc/self/stat")?,
        })
    }

    /// Another handle on the same file (a duplicated descriptor).
    pub fn try_clone(&self) -> io::Result<Self> {
        Ok(Self {
            file: self.file.try_clone()?,
        })
    }

    /// Numbered field `field` (1-based, as in proc(5); at least 3) read afresh. A thread that
    /// has exited reads as an error (`ESRCH`) or an empty file, both reported as errors.
    pub fn field(&self, field: usize) -> io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; STAT_LINE_MAX];
        let len = self.file.read_at(&mut buf, 0)?;
        stat_field(&buf[..len], field).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("stat line has no numeric field {field}"),
            )
        })
    }

    /// Field 39: the CPU the thread last ran on.
    pub fn processor(&self) -> io::Result<u32> {
        self.field(39).map(|cpu| cpu as u32)
    }

    /// Field 20: the number of threads of the process (on the file of [`OpenStatFile::process`]).
    pub fn num_threads(&self) -> io::Result<u64> {
        self.field(20)
    }
}

/// `/proc/self/task` kept open to count the process's threads with one `fstat`: the kernel
/// reports the directory's link count as the thread count plus 2 (about 0.4 µs, against
/// about 4 µs for reading field 20 of `/proc/self/stat`, which sums over all threads).
#[derive(Debug)]
pub struct ThreadCounter {
    dir: fs::File,
}

impl ThreadCounter {
    /// Open `/proc/self/task`.
    pub fn open() -> io::Result<Self> {
        Ok(Self {
            dir: fs::File::open("/proc/self/task")?,
        })
    }

    /// The number of threads of the process now.
    pub fn count(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(self.dir.metadata()?.nlink().saturating_sub(2))
    }
}

/// Numbered field `field` (≥ 3) of a `stat` line, counted after the name's last `)`, without
/// allocating.
pub fn stat_field(line: &[u8], field: usize) -> Option<u64> {
    let close = line.iter().rposition(|&b| b == b')')?;
    let text = std::str::from_utf8(&line[close + 1..]).ok()?;
    text.split_ascii_whitespace()
        .nth(field.checked_sub(3)?)?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_names() {
        assert_eq!(numbered("cpu3", "cpu"), Some(3));
        assert_eq!(numbered("node12", "node"), Some(12));
        for other in ["cpu", "cpufreq", "node-1", "cpu3x", "xcpu3"] {
            assert_eq!(numbered(other, "cpu"), None, "{other}");
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
            assert!(matches!(err, KernelFileError::Parse { .. }), "{bad}: {err}");
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
    fn long_offending_text_is_shortened_on_a_char_boundary() {
        let text = "é".repeat(100);
        let KernelFileError::Parse { text: quoted, .. } = parse_error("x", &text, "bad") else {
            unreachable!("parse_error builds a Parse error");
        };
        assert!(quoted.ends_with('…') && quoted.len() <= 120 + '…'.len_utf8());
    }

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

    /// A `stat` line whose fields after the name are `tail`, padded to 44 fields with zeros,
    /// with `processor` (field 39) set to 3 when the tail is shorter.
    fn stat_line(head: &str, tail: &str) -> String {
        let mut fields: Vec<String> = tail.split_whitespace().map(str::to_string).collect();
        while fields.len() < 42 {
            fields.push("0".into());
        }
        fields[36] = "3".into();
        format!("{head} {}\n", fields.join(" "))
    }

    #[test]
    fn parses_plain_stat_line() {
        let line = "6880 (cat) R 6868 6868 5247 0 -1 4194304 101 0 0 0 7 3 0 0 20 0 1 0 1220535 \
                    3133440 363 18446744073709551615 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n";
        let s = parse_task_stat(line).unwrap();
        assert_eq!(s.tid, 6880);
        assert_eq!(s.comm, "cat");
        assert_eq!(s.state, 'R');
        assert_eq!((s.utime_ticks, s.stime_ticks), (7, 3));
        assert_eq!(s.cpu_ticks(), 10);
        assert_eq!(s.processor, 0);
    }

    #[test]
    fn parses_names_with_spaces_and_parentheses() {
        let s = parse_task_stat(&stat_line(
            "42 (a) b (c d))",
            "S 1 1 1 0 -1 0 0 0 0 0 123 45 0 0 20 0 1 0 5",
        ))
        .unwrap();
        assert_eq!(s.comm, "a) b (c d)");
        assert_eq!(s.state, 'S');
        assert_eq!((s.utime_ticks, s.stime_ticks), (123, 45));
        assert_eq!(s.processor, 3);
        // An empty name and a name that looks like numbers.
        let s = parse_task_stat(&stat_line("7 ()", "S 1 1 1 0 -1 0 0 0 0 0 1 2 0")).unwrap();
        assert_eq!(s.comm, "");
        let s = parse_task_stat(&stat_line(
            "7 (1 2 3 4 5 6 7 8 9 10 11 12 13)",
            "S 1 1 1 0 -1 0 0 0 0 0 8 9",
        ))
        .unwrap();
        assert_eq!((s.utime_ticks, s.stime_ticks), (8, 9));
        // A hostile name with a space and a lone ')'.
        let tail = "S 1 2 3 0 -1 4194560 10 0 0 0 5 6 0 0 20 0 7 0 100 1000 50 \
                    18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0";
        let s = parse_task_stat(&format!("4242 (gc (worker) 1) ) {tail}\n")).unwrap();
        assert_eq!(
            (s.comm.as_str(), s.state, s.processor),
            ("gc (worker) 1) ", 'S', 3)
        );
    }

    #[test]
    fn rejects_malformed_stat_lines() {
        assert_eq!(parse_task_stat("garbage"), Err(StatParseError::NoComm));
        assert_eq!(parse_task_stat("1 )x( S"), Err(StatParseError::NoComm));
        assert!(matches!(
            parse_task_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 5"),
            Err(StatParseError::Missing { field: 15, .. })
        ));
        assert!(matches!(
            parse_task_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 five 6"),
            Err(StatParseError::NotANumber { field: 14, .. })
        ));
        assert!(matches!(
            parse_task_stat(&stat_line("x (x)", "S 1 1 1 0 -1 0 0 0 0 0 5 6")),
            Err(StatParseError::NotANumber { field: 1, .. })
        ));
        // Fewer than 39 fields: no processor.
        assert!(matches!(
            parse_task_stat("4242 (short) S 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20"),
            Err(StatParseError::Missing { field: 39, .. })
        ));
        let bad_cpu = stat_line("7 (java)", "S 1 1 1 0 -1 0 0 0 0 0 5 6").replace(" 3 ", " x ");
        assert!(matches!(
            parse_task_stat(&bad_cpu),
            Err(StatParseError::NotANumber { field: 39, .. })
        ));
    }

    #[test]
    fn thread_list_keeps_live_threads_while_others_exit() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let stayers: Vec<_> = (0..8)
            .map(|_| {
                let (stop, tid_tx) = (stop.clone(), tid_tx.clone());
                std::thread::spawn(move || {
                    tid_tx.send(crate::os::sched::current_tid()).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                })
            })
            .collect();
        let live: Vec<i32> = (0..8).map(|_| tid_rx.recv().unwrap()).collect();
        // Short-lived threads start and end all the time, interleaved with the stayers.
        let churners: Vec<_> = (0..2)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let batch: Vec<_> = (0..8).map(|_| std::thread::spawn(|| {})).collect();
                        batch.into_iter().for_each(|t| t.join().unwrap());
                    }
                })
            })
            .collect();
        let me = crate::os::sched::current_tid();
        for _ in 0..2000 {
            let tids = process_thread_ids().unwrap();
            assert!(tids.contains(&me));
            for tid in &live {
                assert!(
                    tids.contains(tid),
                    "live thread {tid} missing from {tids:?}"
                );
            }
        }
        stop.store(true, Ordering::Relaxed);
        stayers
            .into_iter()
            .chain(churners)
            .for_each(|t| t.join().unwrap());
    }

    #[test]
    fn reads_own_thread() {
        let tid = crate::os::sched::current_tid();
        assert!(process_thread_ids().unwrap().contains(&tid));
        assert!(thread_exists(tid));
        assert!(!thread_exists(-1));
        assert!(!thread_exists(0));
        let stat = read_task_stat(tid).unwrap();
        assert_eq!(stat.tid, tid);
        assert_eq!(thread_name(tid).unwrap(), stat.comm);
        assert!(crate::os::affinity::current_thread_affinity()
            .unwrap()
            .contains(&stat.processor));
        assert!(read_task_stat(-5).is_err());
    }

    #[test]
    fn names_another_thread() {
        let other = crate::os::WaitingThread::start("sched (test) x");
        let tid = other.tid;
        assert_eq!(thread_name(tid).unwrap(), "sched (test) x");
        assert_eq!(read_task_stat(tid).unwrap().comm, "sched (test) x");
        other.finish();
        assert!(thread_name(tid).is_err());
    }

    #[test]
    fn key_value_files() {
        let meminfo = "MemTotal:       24684084 kB\nMemAvailable:   1000 kB\nX: y kB\n";
        assert_eq!(field_value(meminfo, "MemTotal"), Some(24_684_084));
        assert_eq!(parse_mem_available(meminfo).unwrap(), 1000 * 1024);
        assert_eq!(field_value(meminfo, "X"), None);
        assert_eq!(field_value(meminfo, "Mem"), None);
        assert!(parse_mem_available("MemTotal: 1 kB\n").is_err());
        let vmstat = "pgscan_kswapd 5\npgscan_direct 1234\npgscan_direct_throttle 0\n";
        assert_eq!(field_value(vmstat, "pgscan_direct"), Some(1234));
        assert!(read_mem_available(Path::new("/proc/meminfo")).unwrap() > 0);
    }

    #[test]
    fn sysfs_choices() {
        assert_eq!(
            parse_sysfs_choice("always [madvise] never\n").unwrap(),
            "madvise"
        );
        assert_eq!(
            parse_sysfs_choice("always defer defer+madvise madvise [never]").unwrap(),
            "never"
        );
        assert_eq!(parse_sysfs_choice("1\n").unwrap(), "1");
        for bad in ["", "always madvise", "[] never", "[always"] {
            assert!(parse_sysfs_choice(bad).is_err(), "{bad:?}");
        }
    }

    const SMAPS: &str = "\
1000-3000 rw-p 00000000 00:00 0
Rss:                   8 kB
AnonHugePages:         0 kB
THPeligible:    0
VmFlags: rd wr mr mw me ac nh
200000-600000 rw-p 00000000 00:00 0 
Size:               4096 kB
Rss:                4096 kB
AnonHugePages:      2048 kB
THPeligible:    1
VmFlags: rd wr mr mw me ac hg
600000-800000 ---p 00000000 00:00 0
Rss:                   0 kB
AnonHugePages:         0 kB
VmFlags: mr mw me nr
7fff0000-7fff1000 r-xp 00000000 08:01 42    /usr/lib/x (deleted)
Rss:                   4 kB
AnonHugePages:      9999 kB
";

    #[test]
    fn smaps_mappings_in_a_range() {
        let all = parse_smaps(SMAPS, 0, usize::MAX);
        assert_eq!(all.len(), 4);
        assert_eq!(all[0].thp_eligible, Some(false));
        assert!(all[0].has_flag("nh") && !all[0].has_flag("hg"));
        assert_eq!(all[1].anon_huge_bytes, 2048 * 1024);
        assert_eq!(all[1].rss_bytes, 4096 * 1024);
        assert!(all[1].has_flag("hg"));
        assert_eq!(all[2].thp_eligible, None);
        let heap = parse_smaps(SMAPS, 0x20_0000, 0x80_0000);
        assert_eq!(
            heap.iter().map(|v| (v.start, v.end)).collect::<Vec<_>>(),
            [(0x20_0000, 0x60_0000), (0x60_0000, 0x80_0000)]
        );
        // Touching the end of a range is not overlapping it.
        assert!(parse_smaps(SMAPS, 0x3000, 0x20_0000).is_empty());
        assert!(parse_smaps("garbage\nRss: 4 kB\n", 0, usize::MAX).is_empty());
    }

    #[test]
    fn open_stat_files_read_fields_again() {
        let me = crate::os::sched::current_tid();
        let stat = OpenStatFile::thread(me).unwrap();
        let allowed = crate::os::affinity::current_thread_affinity().unwrap();
        assert!(allowed.contains(&stat.processor().unwrap()));
        assert_eq!(
            stat.field(1).ok(),
            None,
            "fields before the name are not numbered here"
        );
        // Other tests start and end threads meanwhile, so only a lower bound is certain.
        let process = OpenStatFile::process().unwrap();
        let waiting = crate::os::WaitingThread::start("stat-counted");
        assert!(process.num_threads().unwrap() >= 2);
        let other = OpenStatFile::thread(waiting.tid).unwrap();
        assert!(allowed.contains(&other.processor().unwrap()));
        waiting.finish();
        assert!(
            other.processor().is_err(),
            "an ended thread's stat reads as an error"
        );
    }

    #[test]
    fn the_task_directory_counts_threads() {
        let counter = ThreadCounter::open().unwrap();
        let process = OpenStatFile::process().unwrap();
        let waiting = crate::os::WaitingThread::start("counted");
        // Other tests start and end threads meanwhile: retry until two reads agree.
        let agree = (0..1000).any(|_| {
            let a = counter.count().unwrap();
            let b = process.num_threads().unwrap();
            a == b && a == counter.count().unwrap()
        });
        assert!(agree, "the link count never matched field 20");
        assert!(counter.count().unwrap() >= 2);
        waiting.finish();
    }

    #[test]
    fn stat_fields_count_after_the_last_parenthesis() {
        let line = b"42 (a) b) c) R 1 2 3";
        assert_eq!(stat_field(line, 4), Some(1));
        assert_eq!(stat_field(line, 6), Some(3));
        assert_eq!(stat_field(line, 7), None);
        assert_eq!(stat_field(b"no name", 4), None);
    }
}
