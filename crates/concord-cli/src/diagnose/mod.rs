//! `concord diagnose <gc-log> [--json]`: reads a GC log and says which pauses the OS caused
//! (paper 002), with advice that fits what it saw.
//!
//! Formats, detected from the text: unified logging (HotSpot 9+ `-Xlog:gc*`, also
//! `gc+cpu` and `safepoint`; Concord's own `--gc-log` is one instance, [`unified`]) and the
//! logs of JDK 6–8 (`-verbose:gc` or `-XX:+PrintGCDetails`, every collector, [`jdk8`]).
//!
//! The verdict. A pause is an OS stall when it is at least [`STALL_FLOOR_MS`] long and one of:
//! - *off-CPU*: its wall time `real` exceeds [`OFF_CPU_FACTOR`] × (user + sys) / GC threads
//!   plus [`CPU_RESOLUTION_MS`] (the logs round CPU times to 10 ms): the GC threads did not
//!   run for most of the pause, blocked in the kernel (a log `write()` behind writeback,
//!   swap-in) or off the CPU (002 Fig. 4: real 11.45 s for user 0.18 s + sys 0.01 s). The
//!   thread count comes from `--gc-threads`, else from the log (`Parallel Workers: N`,
//!   `Using N workers`, `GC Workers: N`, `ParallelGCThreads=N`), else it is taken as 1, which
//!   flags only pauses whose real exceeds twice the whole CPU time, never a busy parallel one;
//! - *outside the collection*: the threads were stopped (the `safepoint` line, JDK 8's
//!   `Total time for which application threads were stopped`) for more than twice the
//!   collection and [`STALL_FLOOR_MS`] beyond it: the pause went on after the collection,
//!   typically writing the GC log (002 Fig. 8), or before it, reaching the safepoint;
//! - *kernel*: sys is at least [`STALL_FLOOR_MS`] and above user: the GC threads spent the
//!   pause in the kernel (page faults, THP compaction, direct reclaim, swapping; 002 §3).
//!
//! A collector that works on one thread (Serial, CMS's foreground full collection) needs
//! `--gc-threads 1`, or its long pauses look off-CPU. Pause lengths in the summary (total,
//! longest, the counts over 250/500/1000/2000 ms) are the time the threads were stopped where
//! the log has it, which is what a request waits, else the collection's real time.

mod jdk8;
mod unified;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use serde_json::{json, Value};

use crate::console::{errln, outln};
use crate::flags::count_in;
use crate::hotspot::parse_size_kb;

/// Pauses shorter than this are never called a stall: a few milliseconds of scheduling noise
/// are not what 002 is about.
pub const STALL_FLOOR_MS: f64 = 50.0;
/// How far real must exceed (user + sys) / threads to count as off-CPU.
pub const OFF_CPU_FACTOR: f64 = 2.0;
/// The resolution of logged CPU times (`User=0.01s`, `user=0.18`).
pub const CPU_RESOLUTION_MS: f64 = 10.0;
/// The pause lengths counted in the summary, as 002's tables do.
pub const OVER_MS: [u32; 4] = [250, 500, 1000, 2000];
/// The most GC threads `--gc-threads` accepts.
const MAX_GC_THREADS: u32 = 4096;

/// Flags of `concord diagnose`.
#[derive(Args, Debug, Clone)]
pub struct DiagnoseArgs {
    /// The GC log: HotSpot unified logging (-Xlog:gc*,gc+cpu,safepoint), JDK 6-8
    /// (-verbose:gc or -XX:+PrintGCDetails, any collector) or Concord's --gc-log. Rotated files
    /// beside it (LOG.0 … LOG.N, LOG.N.current, optionally .gz) are read with it as one log,
    /// oldest first.
    pub log: PathBuf,
    /// Read only the file given, not the rotated files beside it.
    #[arg(long)]
    pub single: bool,
    /// Print the diagnosis as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// GC threads of the logged JVM, used when judging real against user+sys (default: what
    /// the log says, else 1).
    #[arg(long = "gc-threads", value_name = "N", value_parser = count_in(1, MAX_GC_THREADS))]
    pub gc_threads: Option<u32>,
}

/// One pause read from a log.
#[derive(Debug, Clone, PartialEq)]
pub struct Pause {
    /// The collection's number (`GC(7)`); in a JDK 8 log, its position.
    pub id: u64,
    /// Uptime in seconds as logged: at the pause's end in unified logs, at its start in JDK 8
    /// logs; `None` when the log has no uptime.
    pub time_s: Option<f64>,
    /// What the log calls it, e.g. `Pause Young (Allocation Failure)`.
    pub what: String,
    /// The pause's wall time.
    pub real_ms: f64,
    /// CPU time of the GC threads in user mode, when logged.
    pub user_ms: Option<f64>,
    /// CPU time of the GC threads in the kernel, when logged.
    pub sys_ms: Option<f64>,
    /// Time from the safepoint request until every thread stopped, when logged.
    pub time_to_safepoint_ms: Option<f64>,
    /// The whole time the threads were stopped for this pause, when logged.
    pub stopped_ms: Option<f64>,
    /// The heap's occupancy before and after, and its capacity, when the pause's own line
    /// says (`77M->8M(248M)`).
    pub heap: Option<HeapChange>,
}

/// A collection's heap figures, in KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapChange {
    /// Occupied before the collection.
    pub before_kb: u64,
    /// Occupied after it.
    pub after_kb: u64,
    /// The heap's capacity after it.
    pub capacity_kb: u64,
}

/// The last `<before>-><after>(<capacity>)` in `text` (`77M->8M(248M)`, `245617K->63556K
/// (956672K)`, `8944.0M->0.0B(12.1G)`), in KiB.
fn heap_change(text: &str) -> Option<HeapChange> {
    let mut found = None;
    let mut from = 0;
    while let Some(at) = text[from..].find("->").map(|k| from + k) {
        from = at + 2;
        let before_start = text[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
            .map_or(0, |i| i + 1);
        let size_kb = |t: &str| parse_size_kb(t.trim());
        let before = size_kb(&text[before_start..at]);
        let rest = &text[at + 2..];
        let (after, cap) = rest.split_once('(').unwrap_or((rest, ""));
        let capacity = cap.split_once(')').and_then(|(c, _)| size_kb(c));
        if let (Some(before_kb), Some(after_kb), Some(capacity_kb)) =
            (before, size_kb(after), capacity)
        {
            found = Some(HeapChange {
                before_kb,
                after_kb,
                capacity_kb,
            });
        }
    }
    found
}

/// What a parser found in a log.
#[derive(Debug, Default)]
pub struct Parsed {
    /// Every pause, in log order.
    pub pauses: Vec<Pause>,
    /// GC threads named in the log (the largest number seen).
    pub gc_threads: Option<u32>,
    /// Whether the log says it was written by Concord.
    pub concord: bool,
}

impl Parsed {
    fn note_gc_threads(&mut self, threads: Option<u32>) {
        if let Some(n) = threads.filter(|n| *n > 0) {
            self.gc_threads = Some(self.gc_threads.map_or(n, |m| m.max(n)));
        }
    }
}

/// The time a safepoint stopped the threads, and how much of it went to reaching the
/// safepoint.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stop {
    stopped_ms: f64,
    time_to_safepoint_ms: Option<f64>,
}

/// A safepoint line: JDK 17's `Safepoint "…", …, Reaching safepoint: N ns, …, Total: N ns`
/// or JDK 8–16's `Total time for which application threads were stopped: X seconds, Stopping
/// threads took: Y seconds`.
fn stop_of(text: &str) -> Option<Stop> {
    if !text.starts_with("Safepoint \"") && !holds!(text, "threads were stopped: ") {
        return None;
    }
    if let Some(at) = text.find("Total time for which application threads were stopped: ") {
        let rest = &text[at..];
        return Some(Stop {
            stopped_ms: field(rest, "stopped: ", " seconds").and_then(seconds_ms)?,
            time_to_safepoint_ms: field(rest, "Stopping threads took: ", " seconds")
                .and_then(seconds_ms),
        });
    }
    if !text.starts_with("Safepoint \"") {
        return None;
    }
    let ns_ms = |key| {
        field(text, key, " ns")?
            .parse::<f64>()
            .ok()
            .map(|ns| ns / 1e6)
    };
    Some(Stop {
        stopped_ms: ns_ms("Total: ")?,
        time_to_safepoint_ms: ns_ms("Reaching safepoint: "),
    })
}

/// Gives the last pause its stop, the first safepoint logged after it that lasted at least
/// as long as the collection (a shorter one cannot hold it); later safepoints (not
/// collections) and safepoints before any pause belong to no pause.
fn attach_stop(pauses: &mut [Pause], stop: Stop) {
    // The collection is logged to the microsecond, the stop to the nanosecond.
    const ROUNDING_MS: f64 = 0.001;
    let holds =
        |p: &&mut Pause| p.stopped_ms.is_none() && stop.stopped_ms + ROUNDING_MS >= p.real_ms;
    if let Some(last) = pauses.last_mut().filter(holds) {
        last.stopped_ms = Some(stop.stopped_ms);
        last.time_to_safepoint_ms = stop.time_to_safepoint_ms;
    }
}

/// The text between `key` and the next `end` in `text`.
fn field<'a>(text: &'a str, key: &str, end: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    Some(rest[..rest.find(end)?].trim())
}

/// `0.18` (seconds, as written in a log) in milliseconds.
fn seconds_ms(text: &str) -> Option<f64> {
    let v: f64 = text.trim().parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * 1e3)
}

/// The number right after `key` in `text`, as written.
fn number_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// Whether `hay` holds `needle`, searched with a searcher built once per call site: `str`'s
/// `find` builds one per call, which took most of the time reading a large log (a few needles
/// per line).
macro_rules! holds {
    ($hay:expr, $needle:literal) => {{
        static FINDER: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new($needle));
        FINDER.find($hay.as_bytes()).is_some()
    }};
}
pub(crate) use holds;

/// The GC thread count a log line states, if it states one.
fn gc_threads_in(line: &str) -> Option<u32> {
    // Every form below holds one of these (checked first: most lines hold neither).
    if !holds!(line, "orkers") && !holds!(line, "GCThreads=") {
        return None;
    }
    let after = |key: &str| number_after(line, key)?.parse().ok();
    after("Parallel Workers: ")
        .or_else(|| after("ParallelGCThreads="))
        .or_else(|| after("GC Workers: "))
        .or_else(|| {
            after("Using ").filter(|_| line.contains(" workers") || line.contains(" Workers"))
        })
}

/// The format a log was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Concord's `--gc-log` (unified logging).
    Concord,
    /// HotSpot 9+ unified logging.
    Unified,
    /// HotSpot before unified logging (JDK 6–8): `-verbose:gc` or `-XX:+PrintGCDetails`.
    Jdk8,
}

impl Format {
    /// The name in the JSON `format` field.
    pub fn name(self) -> &'static str {
        match self {
            Format::Concord => "concord",
            Format::Unified => "hotspot-unified",
            Format::Jdk8 => "jdk8",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Format::Concord => "Concord GC log",
            Format::Unified => "HotSpot unified logging (-Xlog:gc*)",
            Format::Jdk8 => "HotSpot JDK 6-8 (-verbose:gc / -XX:+PrintGCDetails)",
        }
    }
}

/// Both formats' parsers fed the same lines, one at a time: a log is read once, streaming,
/// in whichever format finds more pauses in it.
#[derive(Debug, Default)]
pub struct Detector {
    unified: unified::Parser,
    jdk8: jdk8::Parser,
    /// Lines that look like unified logging of the `gc` tags (`[gc`, `GC(n)`).
    unified_like: u64,
    /// Lines that look like a JDK 6-8 log (`[GC`, `[Full GC`, `[Times:`).
    jdk8_like: u64,
}

impl Detector {
    /// Reads one line (a blank one says nothing to either format).
    pub fn feed(&mut self, line: &str) {
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        if holds!(line, "[gc") || holds!(line, "GC(") {
            self.unified_like += 1;
        } else if holds!(line, "[GC") || holds!(line, "[Full GC") || holds!(line, "[Times:") {
            self.jdk8_like += 1;
        }
        self.unified.feed(line);
        self.jdk8.feed(line);
    }

    /// Why a log in which no pause was found is not read, and what would make it readable.
    fn why_no_pauses(&self) -> String {
        const FORMATS: &str = "allowed: HotSpot unified logging -Xlog:gc*, JDK 6-8 -verbose:gc \
                               or -XX:+PrintGCDetails, concord run --gc-log";
        if self.unified_like > 0 && self.unified_like >= self.jdk8_like {
            format!(
                "it looks like HotSpot unified logging ({} lines of the gc tags) but has no \
                 pause line (`GC(n) Pause … <duration>`, tag `gc` at level info): log with \
                 -Xlog:gc*,gc+cpu,safepoint (a selection such as gc+heap or gc=warning \
                 alone writes none)",
                self.unified_like
            )
        } else if self.jdk8_like > 0 {
            format!(
                "it looks like a JDK 6-8 GC log ({} collection lines) but no `[GC …, N secs]` \
                 or `[Full GC …]` collection could be read to its end (a log cut in the \
                 middle of each one?)",
                self.jdk8_like
            )
        } else {
            format!("not a GC log this command reads ({FORMATS})")
        }
    }

    /// The format that found more pauses and what it found; `None` when neither found any.
    pub fn finish(self) -> Option<(Format, Parsed)> {
        let unified = self.unified.finish();
        let jdk8 = self.jdk8.finish();
        let (format, parsed) = if unified.pauses.len() >= jdk8.pauses.len() {
            let format = if unified.concord {
                Format::Concord
            } else {
                Format::Unified
            };
            (format, unified)
        } else {
            (Format::Jdk8, jdk8)
        };
        (!parsed.pauses.is_empty()).then_some((format, parsed))
    }
}

/// Why a pause counts as an OS stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Real far above (user + sys) / threads.
    OffCpu,
    /// Stopped far longer than the collection.
    OutsideCollection,
    /// Most CPU time in the kernel.
    Kernel,
}

impl Cause {
    fn name(self) -> &'static str {
        match self {
            Cause::OffCpu => "off-cpu",
            Cause::OutsideCollection => "outside-collection",
            Cause::Kernel => "kernel",
        }
    }
}

/// The stall verdict on one pause: its causes and a sentence on each.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    /// Every cause that applies, in the order of [`Cause`].
    pub causes: Vec<Cause>,
    /// Why, with the figures.
    pub reason: String,
}

/// The verdict on `pause` for a JVM with `threads` GC threads; `None` if it is no OS stall.
pub fn verdict(pause: &Pause, threads: u32) -> Option<Stall> {
    let mut causes = Vec::new();
    let mut reasons = Vec::new();
    let longest = pause.real_ms.max(pause.stopped_ms.unwrap_or(0.0));
    if longest < STALL_FLOOR_MS {
        return None;
    }
    if let (Some(user), Some(sys)) = (pause.user_ms, pause.sys_ms) {
        let busy_ms = (user + sys) / f64::from(threads);
        if pause.real_ms >= STALL_FLOOR_MS
            && pause.real_ms > OFF_CPU_FACTOR * busy_ms + CPU_RESOLUTION_MS
        {
            causes.push(Cause::OffCpu);
            reasons.push(format!(
                "real {:.0} ms but user+sys {:.0} ms over {threads} GC thread(s) keeps them \
                 busy {busy_ms:.0} ms: the GC threads waited off the CPU",
                pause.real_ms,
                user + sys
            ));
        }
    }
    if let Some(stopped) = pause.stopped_ms {
        if stopped >= pause.real_ms + STALL_FLOOR_MS && stopped > OFF_CPU_FACTOR * pause.real_ms {
            causes.push(Cause::OutsideCollection);
            let safepoint = pause
                .time_to_safepoint_ms
                .map(|t| format!(" ({t:.3} ms of it reaching the safepoint)"))
                .unwrap_or_default();
            reasons.push(format!(
                "threads stopped {stopped:.0} ms for a {:.0} ms collection{safepoint}: the \
                 pause went on outside the collection",
                pause.real_ms
            ));
        }
    }
    if let (Some(user), Some(sys)) = (pause.user_ms, pause.sys_ms) {
        if sys >= STALL_FLOOR_MS && sys > user {
            causes.push(Cause::Kernel);
            reasons.push(format!(
                "sys {sys:.0} ms above user {user:.0} ms: the GC threads worked in the kernel"
            ));
        }
    }
    (!causes.is_empty()).then(|| Stall {
        causes,
        reason: reasons.join("; "),
    })
}

/// The whole diagnosis of a log.
#[derive(Debug)]
pub struct Diagnosis {
    /// The format the log was read as.
    pub format: Format,
    /// GC threads used for the verdicts.
    pub threads: u32,
    /// Where `threads` came from: `flag`, `log` or `assumed`.
    pub threads_from: &'static str,
    /// Every pause with its verdict.
    pub pauses: Vec<(Pause, Option<Stall>)>,
}

impl Diagnosis {
    /// Diagnoses what a [`Detector`] found.
    pub fn from_detected((format, parsed): (Format, Parsed), gc_threads: Option<u32>) -> Diagnosis {
        let (threads, threads_from) = match (gc_threads, parsed.gc_threads) {
            (Some(n), _) => (n, "flag"),
            (None, Some(n)) => (n, "log"),
            (None, None) => (1, "assumed"),
        };
        let pauses = parsed
            .pauses
            .into_iter()
            .map(|p| {
                let stall = verdict(&p, threads);
                (p, stall)
            })
            .collect();
        Diagnosis {
            format,
            threads,
            threads_from,
            pauses,
        }
    }

    /// A pause's length as a request sees it: the stop when logged, else real.
    fn length(pause: &Pause) -> f64 {
        pause.real_ms.max(pause.stopped_ms.unwrap_or(0.0))
    }

    /// Sum of the pauses, ms.
    pub fn total_ms(&self) -> f64 {
        self.pauses
            .iter()
            .fold(0.0, |sum, (p, _)| sum + Self::length(p))
    }

    /// Longest pause, ms.
    pub fn max_ms(&self) -> f64 {
        self.pauses
            .iter()
            .map(|(p, _)| Self::length(p))
            .fold(0.0, f64::max)
    }

    /// Pauses longer than `ms`.
    pub fn over(&self, ms: u32) -> usize {
        let limit = f64::from(ms);
        self.pauses
            .iter()
            .filter(|(p, _)| Self::length(p) > limit)
            .count()
    }

    fn stalls(&self) -> impl Iterator<Item = (&Pause, &Stall)> {
        self.pauses
            .iter()
            .filter_map(|(p, s)| s.as_ref().map(|s| (p, s)))
    }

    fn any(&self, cause: Cause) -> bool {
        self.stalls().any(|(_, s)| s.causes.contains(&cause))
    }

    /// Advice for what was seen, one item per finding.
    pub fn advice(&self) -> Vec<String> {
        let mut advice = Vec::new();
        let cpu_logged = self.pauses.iter().any(|(p, _)| p.user_ms.is_some());
        if !cpu_logged {
            advice.push(format!(
                "the log has no user/sys times, so off-CPU waits cannot be told apart: {}",
                match self.format {
                    Format::Concord => "this Concord log has no [gc,cpu] lines",
                    Format::Unified => "log them with -Xlog:gc*,gc+cpu,safepoint",
                    Format::Jdk8 => "log them with -XX:+PrintGCDetails",
                }
            ));
        }
        if self.any(Cause::OffCpu) || self.any(Cause::OutsideCollection) {
            let how = match self.format {
                Format::Jdk8 => {
                    "put the log on tmpfs (-Xloggc:/dev/shm/gc.log), or on JDK 17+ log \
                     asynchronously (-Xlog:async)"
                }
                Format::Unified => {
                    "log asynchronously (-Xlog:async, JDK 17+) or put the log on tmpfs \
                     (-Xlog:gc*:file=/dev/shm/gc.log)"
                }
                Format::Concord => "log asynchronously or put the log on tmpfs (/dev/shm)",
            };
            advice.push(format!(
                "take the GC log's write() off the pause: {how}; and look for background I/O \
                 (writeback, log rotation) and swapping at those times (sar -d, vmstat si/so)"
            ));
        }
        if self.any(Cause::Kernel) {
            advice.push(
                "the kernel worked inside the pause (page faults, THP compaction, reclaim, \
                 swapping): set transparent huge pages to madvise or never (or defrag to \
                 never) under memory pressure, pre-touch the heap (-XX:+AlwaysPreTouch), and \
                 leave memory headroom"
                    .to_string(),
            );
        }
        let long_own = self
            .pauses
            .iter()
            .any(|(p, s)| s.is_none() && Self::length(p) > f64::from(OVER_MS[0]));
        if long_own && cpu_logged {
            advice.push(format!(
                "pauses over {} ms with CPU time to match are the collector's own work: a \
                 smaller young generation or more GC threads shortens them",
                OVER_MS[0]
            ));
        }
        if advice.is_empty() {
            advice.push("no pause shows an OS stall".to_string());
        }
        advice
    }

    /// The diagnosis as the JSON object `--json` prints.
    pub fn to_json(&self) -> JsonDocument<'_> {
        let opt = |v: Option<f64>| v.map_or(Value::Null, |v| json!(v));
        let stalled: Vec<Value> = self
            .stalls()
            .map(|(p, s)| {
                json!({
                    "id": p.id,
                    "time_s": opt(p.time_s),
                    "real_ms": p.real_ms,
                    "user_ms": opt(p.user_ms),
                    "sys_ms": opt(p.sys_ms),
                    "causes": s.causes.iter().map(|c| c.name()).collect::<Vec<_>>(),
                    "reason": s.reason,
                })
            })
            .collect();
        let over: serde_json::Map<String, Value> = OVER_MS
            .iter()
            .map(|ms| (ms.to_string(), json!(self.over(*ms))))
            .collect();
        JsonDocument {
            advice: self.advice(),
            format: self.format.name(),
            gc_threads: self.threads,
            gc_threads_from: self.threads_from,
            over_ms: over,
            pause_max_ms: self.max_ms(),
            pause_total_ms: self.total_ms(),
            pauses: self.pauses.len(),
            records: Records(&self.pauses),
            stalled,
        }
    }
}

/// The `--json` document. Its keys are in alphabetical order, as a `serde_json::Value` prints
/// them; its records are serialized one by one as the document is written, not built first (a
/// log of many pauses would otherwise be held twice, the second time as a tree of values).
#[derive(serde::Serialize)]
pub struct JsonDocument<'a> {
    advice: Vec<String>,
    format: &'static str,
    gc_threads: u32,
    gc_threads_from: &'static str,
    over_ms: serde_json::Map<String, Value>,
    pause_max_ms: f64,
    pause_total_ms: f64,
    pauses: usize,
    records: Records<'a>,
    stalled: Vec<Value>,
}

/// Every pause with its verdict, serialized as the JSON array `records`.
pub struct Records<'a>(&'a [(Pause, Option<Stall>)]);

impl serde::Serialize for Records<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let opt = |v: Option<f64>| v.map_or(Value::Null, |v| json!(v));
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (p, s) in self.0 {
            seq.serialize_element(&json!({
                "id": p.id,
                "time_s": opt(p.time_s),
                "what": p.what,
                "real_ms": p.real_ms,
                "user_ms": opt(p.user_ms),
                "sys_ms": opt(p.sys_ms),
                "time_to_safepoint_ms": opt(p.time_to_safepoint_ms),
                "stopped_ms": opt(p.stopped_ms),
                "heap_before_kb": p.heap.map(|h| h.before_kb),
                "heap_after_kb": p.heap.map(|h| h.after_kb),
                "heap_capacity_kb": p.heap.map(|h| h.capacity_kb),
                "stalled": s.is_some(),
            }))?;
        }
        seq.end()
    }
}

/// Reads the log at `path` line by line, gunzipping a gzip-compressed one (`concord run
/// --gc-log-compress`, a rotated `gc.log.gz`), and feeds each line to `line`: memory stays
/// bounded whatever the log's size (a line longer than [`MAX_LINE_BYTES`] is cut there). An
/// error names what is wrong with the file. A gzip stream cut short (a log whose writer died
/// before finishing it: each collection's lines end in a flush) gives what it holds up to the
/// cut, with a warning; one corrupt before anything could be read is an error.
fn read_log_lines(path: &Path, mut line: impl FnMut(&str)) -> Result<()> {
    let meta =
        fs::metadata(path).with_context(|| format!("cannot open the GC log {}", path.display()))?;
    if meta.is_dir() {
        bail!(
            "{} is a directory; give a GC log file (HotSpot -Xlog:gc*, JDK 6-8 \
             -verbose:gc or -XX:+PrintGCDetails, or concord run --gc-log)",
            path.display()
        );
    }
    let file = fs::File::open(path)
        .with_context(|| format!("cannot read the GC log {}", path.display()))?;
    let mut file = BufReader::with_capacity(1 << 16, file);
    let head = file
        .fill_buf()
        .with_context(|| format!("cannot read the GC log {}", path.display()))?;
    for (magic, format, tool) in OTHER_COMPRESSIONS {
        if head.starts_with(magic) {
            bail!(
                "{} is {format}-compressed, which diagnose does not read (it reads plain text \
                 and gzip); decompress it first ({tool}) and diagnose the text",
                path.display()
            );
        }
    }
    if !head.starts_with(GZIP_MAGIC) {
        return for_each_line(&mut file, &mut line)
            .map(|_| ())
            .with_context(|| format!("cannot read the GC log {}", path.display()));
    }
    let mut gz = BufReader::with_capacity(1 << 16, flate2::bufread::MultiGzDecoder::new(file));
    let mut lines = 0u64;
    match for_each_line(&mut gz, &mut |l| {
        lines += 1;
        line(l)
    }) {
        Ok(_) => Ok(()),
        Err(e) if lines > 0 => {
            log::warn!(
                "{}: the gzip stream ends early ({e}); diagnosing the {lines} lines before the cut",
                path.display()
            );
            Ok(())
        }
        Err(e) => bail!(
            "{} looks gzip-compressed but does not decompress ({e}); give a GC log, plain or \
             gzip-compressed",
            path.display()
        ),
    }
}

/// The files of the rotated set `log` belongs to, oldest first: `log` itself and the files
/// beside it named `<name>.<N>`, `<name>.<N>.current` (JDK 8's `-XX:+UseGCLogFileRotation`)
/// or either with `.gz`, where `<name>` is `log`'s name (JDK 9+ `filecount=`: `gc.log` is
/// the current file, `gc.log.0` … the older ones) or `log`'s name without its own `.<N>` /
/// `.<N>.current` (JDK 8: any member names the set). Rotation wraps, so the numbers do not
/// give the order: the modification times do (ties by name). Just `log` when it is not a
/// regular file or has no such siblings.
fn rotated_set(log: &Path) -> Vec<PathBuf> {
    let alone = vec![log.to_path_buf()];
    let (Some(dir), Some(name)) = (log.parent(), log.file_name().and_then(|n| n.to_str())) else {
        return alone;
    };
    if !log.is_file() {
        return alone;
    }
    let base = rotation_base(name).unwrap_or(name);
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return alone;
    };
    let mut members: Vec<(std::time::SystemTime, String, PathBuf)> = entries
        .flatten()
        .filter_map(|entry| {
            let file_name = entry.file_name().into_string().ok()?;
            if file_name != base && rotation_base(&file_name) != Some(base) {
                return None;
            }
            let meta = entry.metadata().ok().filter(|m| m.is_file())?;
            let path = log.with_file_name(entry.file_name());
            Some((meta.modified().ok()?, file_name, path))
        })
        .collect();
    if members.len() <= 1 {
        return alone;
    }
    members.sort();
    members.into_iter().map(|(_, _, path)| path).collect()
}

/// `gc.log` for `gc.log.3`, `gc.log.3.current`, `gc.log.3.gz` or `gc.log.3.current.gz`;
/// `None` for a name with no rotation number.
fn rotation_base(name: &str) -> Option<&str> {
    let name = name.strip_suffix(".gz").unwrap_or(name);
    let name = name.strip_suffix(".current").unwrap_or(name);
    let (base, number) = name.rsplit_once('.')?;
    (!base.is_empty() && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
        .then_some(base)
}

/// The longest line [`for_each_line`] keeps whole: no GC log line comes near it; the rest of
/// a longer one is skipped rather than held.
const MAX_LINE_BYTES: usize = 64 * 1024;

/// Calls `f` with each line of `reader` (without its `\n` or `\r\n`; invalid UTF-8 replaced),
/// holding at most [`MAX_LINE_BYTES`] of one line at a time; returns the number of lines. A
/// read error ends it (the lines before it were given).
fn for_each_line(reader: &mut dyn BufRead, f: &mut dyn FnMut(&str)) -> std::io::Result<u64> {
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut lines = 0;
    loop {
        buf.clear();
        let mut seen_any = false;
        loop {
            let available = match reader.fill_buf() {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if seen_any {
                        give_line(&buf, f);
                    }
                    return Err(e);
                }
            };
            if available.is_empty() {
                if seen_any {
                    give_line(&buf, f);
                    lines += 1;
                }
                return Ok(lines);
            }
            seen_any = true;
            let newline = available.iter().position(|&b| b == b'\n');
            let chunk = &available[..newline.unwrap_or(available.len())];
            let room = MAX_LINE_BYTES.saturating_sub(buf.len());
            buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = newline.map_or(available.len(), |n| n + 1);
            reader.consume(used);
            if newline.is_some() {
                break;
            }
        }
        give_line(&buf, f);
        lines += 1;
    }
}

fn give_line(bytes: &[u8], f: &mut dyn FnMut(&str)) {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    f(&String::from_utf8_lossy(bytes));
}

/// The first bytes of a gzip stream.
const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];

/// Compressed formats recognised by their magic bytes and refused with a clear message:
/// (magic, name, the command that decompresses it).
const OTHER_COMPRESSIONS: [(&[u8], &str, &str); 3] = [
    (&[0x28, 0xb5, 0x2f, 0xfd], "zstd", "zstdcat"),
    (&[0xfd, b'7', b'z', b'X', b'Z', 0x00], "xz", "xzcat"),
    (b"BZh", "bzip2", "bzcat"),
];

/// `concord diagnose`.
pub fn run(args: DiagnoseArgs) -> Result<std::process::ExitCode> {
    let files = if args.single {
        vec![args.log.clone()]
    } else {
        rotated_set(&args.log)
    };
    if files.len() > 1 {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        errln!(
            "concord diagnose: reading the rotated set as one log, oldest first: {} (--single \
             reads only {})",
            names.join(", "),
            args.log.display()
        );
    }
    let mut detector = Detector::default();
    for file in &files {
        read_log_lines(file, |line| detector.feed(line))?;
    }
    let why = detector.why_no_pauses();
    let Some(diagnosis) = detector
        .finish()
        .map(|detected| Diagnosis::from_detected(detected, args.gc_threads))
    else {
        bail!("{}: no GC pauses found; {why}", args.log.display());
    };
    if args.json {
        crate::console::write_out_json(&diagnosis.to_json())?;
    } else {
        print_text(&args.log, &diagnosis)?;
    }
    Ok(std::process::ExitCode::SUCCESS)
}

/// `Some(12.3)` as `12.3` with `decimals`, `None` as `-`.
fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

fn print_text(path: &Path, d: &Diagnosis) -> Result<()> {
    let threads_from = match d.threads_from {
        "flag" => "from --gc-threads",
        "log" => "from the log",
        _ => "not in the log, assumed; --gc-threads N to set",
    };
    outln!("{}: {}", path.display(), d.format.describe())?;
    outln!("GC threads: {} ({threads_from})", d.threads)?;
    outln!(
        "{:>6} {:>10} {:>10} {:>8} {:>8} {:>9} {:>10}  verdict",
        "id",
        "time_s",
        "real_ms",
        "user_ms",
        "sys_ms",
        "ttsp_ms",
        "stopped_ms"
    )?;
    for (p, stall) in &d.pauses {
        let verdict = match stall {
            Some(s) => format!(
                "STALL ({}): {}",
                s.causes
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", "),
                s.reason
            ),
            None if p.user_ms.is_none() && p.stopped_ms.is_none() => "no CPU times".to_string(),
            None => "ok".to_string(),
        };
        outln!(
            "{:>6} {:>10} {:>10.3} {:>8} {:>8} {:>9} {:>10}  {verdict}",
            p.id,
            cell(p.time_s, 3),
            p.real_ms,
            cell(p.user_ms, 0),
            cell(p.sys_ms, 0),
            cell(p.time_to_safepoint_ms, 3),
            cell(p.stopped_ms, 3),
        )?;
    }
    let stalls = d.stalls().count();
    outln!()?;
    outln!(
        "{} pauses, total {:.1} ms, max {:.1} ms; {stalls} OS stall(s)",
        d.pauses.len(),
        d.total_ms(),
        d.max_ms()
    )?;
    let over: Vec<String> = OVER_MS
        .iter()
        .map(|ms| format!(">{ms} ms: {}", d.over(*ms)))
        .collect();
    outln!("{}", over.join("  "))?;
    outln!("advice:")?;
    for a in d.advice() {
        outln!("- {a}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gzip_chunks(chunks: &[&str]) -> (Vec<u8>, Vec<usize>) {
        use std::io::Write as _;
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let mut cuts = Vec::new();
        for chunk in chunks {
            gz.write_all(chunk.as_bytes()).unwrap();
            gz.flush().unwrap();
            cuts.push(gz.get_ref().len());
        }
        (gz.finish().unwrap(), cuts)
    }

    /// The lines `read_log_lines` gives for a file holding `bytes`.
    fn lines_of(name: &str, bytes: &[u8]) -> Result<String> {
        let dir = std::env::temp_dir().join(format!("concord-diagnose-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        fs::write(&path, bytes).unwrap();
        let mut text = String::new();
        let read = read_log_lines(&path, |line| {
            text.push_str(line);
            text.push('\n');
        });
        fs::remove_file(&path).unwrap();
        read.map(|()| text)
    }

    #[test]
    fn gzip_logs_are_read_whole_or_up_to_where_they_were_cut() {
        let lines = ["[0.1s][info][gc] GC(0) Pause Young (x) 1M->0M(8M) 1.0ms\n"; 3];
        let (whole, cuts) = gzip_chunks(&lines);
        assert_eq!(lines_of("whole.gz", &whole).unwrap(), lines.concat());
        // Two members, as a log appended to after a restart: both are read.
        let twice = [whole.clone(), whole.clone()].concat();
        assert_eq!(
            lines_of("twice.gz", &twice).unwrap(),
            lines.concat().repeat(2)
        );
        // A writer that died after its second flush left the first two collections.
        let cut = &whole[..cuts[1]];
        assert_eq!(lines_of("cut.gz", cut).unwrap(), lines[..2].concat());
        // The gzip magic and nothing that decodes: an error that says so.
        let err = lines_of("bad.gz", &[0x1f, 0x8b, 8, 0, 0, 0]).unwrap_err();
        assert!(err.to_string().contains("does not decompress"), "{err}");
    }

    /// A rotated set read oldest first by modification time, whichever member names it
    /// (JDK 9+ `gc.log` current with `gc.log.0`…; JDK 8 `gc.log.N` with `.current`); files of
    /// other names are left out; `--single` is `run`'s business.
    #[test]
    fn rotated_sets_are_found_beside_the_log_and_ordered_by_age() {
        let dir = std::env::temp_dir().join(format!("concord-rotated-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let at = |s| std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s);
        // Rotation wrapped: .1 is the oldest, then .2, .0, and gc.log is current.
        for (name, age) in [
            ("gc.log.1", 100),
            ("gc.log.2", 200),
            ("gc.log.0", 300),
            ("gc.log", 400),
            ("gc.log.bak", 50),
            ("other.log.0", 60),
        ] {
            let file = fs::File::create(dir.join(name)).unwrap();
            file.set_modified(at(age)).unwrap();
        }
        let names = |log: &str| -> Vec<String> {
            rotated_set(&dir.join(log))
                .iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        let set = ["gc.log.1", "gc.log.2", "gc.log.0", "gc.log"];
        assert_eq!(names("gc.log"), set);
        assert_eq!(names("gc.log.2"), set);
        assert_eq!(names("gc.log.bak"), ["gc.log.bak"]);
        assert_eq!(names("missing.log"), ["missing.log"]);
        assert_eq!(rotation_base("gc.log.3.current.gz"), Some("gc.log"));
        assert_eq!(rotation_base("gc.log"), None);
        assert_eq!(rotation_base(".7"), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_log_without_pauses_is_told_what_it_looks_like_and_lacks() {
        let why = |text: &str| {
            let mut d = Detector::default();
            text.lines().for_each(|l| d.feed(l));
            d.why_no_pauses()
        };
        assert!(why(
            "[0.1s][info][gc,heap] Heap region size: 1M\n[0.2s][info][gc,init] Version: 17\n"
        )
        .contains(
            "looks like HotSpot unified logging (2 lines of the gc tags) but has no pause line"
        ));
        assert!(
            why("1.0: [GC (Allocation Failure) [PSYoungGen: 1K->0K(2K)]\n")
                .contains("looks like a JDK 6-8 GC log (1 collection lines)")
        );
        assert!(why("hello\n").contains("not a GC log this command reads (allowed:"));
    }

    #[test]
    fn heap_figures_are_read_in_every_unit() {
        let heap = |b, a, c| {
            Some(HeapChange {
                before_kb: b,
                after_kb: a,
                capacity_kb: c,
            })
        };
        assert_eq!(
            heap_change("Pause Young (Normal) 77M->8M(248M)"),
            heap(78_848, 8_192, 253_952)
        );
        assert_eq!(
            heap_change(
                "[PSYoungGen: 229368K->32766K(170240K)] 245617K->63556K(956672K), 0.09 secs"
            ),
            heap(245_617, 63_556, 956_672)
        );
        assert_eq!(
            heap_change("8944.0M->0.0B(12.1G)"),
            heap(9_158_656, 0, 12_687_770)
        );
        assert_eq!(heap_change("GC(3) Pause Remark 1.500ms"), None);
        assert_eq!(heap_change("a->b(c)"), None);
    }

    /// Lines end at `\n` or `\r\n`, the last may lack its newline, invalid UTF-8 is replaced,
    /// and a line far longer than any GC log's is cut at `MAX_LINE_BYTES` without being held.
    #[test]
    fn lines_are_split_streaming_with_their_length_bounded() {
        let mut long = vec![b'x'; 3 * MAX_LINE_BYTES];
        long.extend_from_slice(b"\nlast");
        let mut text = b"one\r\ntwo \xff\n\n".to_vec();
        text.extend_from_slice(&long);
        let mut got = Vec::new();
        let lines = for_each_line(&mut &text[..], &mut |l| got.push(l.to_string())).unwrap();
        assert_eq!(lines, 5);
        assert_eq!(got[..3], ["one", "two \u{fffd}", ""]);
        assert_eq!(got[3].len(), MAX_LINE_BYTES);
        assert_eq!(got[4], "last");
    }

    fn pause(real: f64, user: f64, sys: f64, stopped: Option<f64>) -> Pause {
        Pause {
            id: 0,
            time_s: Some(1.0),
            what: "Pause Young".into(),
            real_ms: real,
            user_ms: Some(user),
            sys_ms: Some(sys),
            time_to_safepoint_ms: None,
            stopped_ms: stopped,
            heap: None,
        }
    }

    #[test]
    fn fig4_is_off_cpu_and_busy_parallel_pauses_are_not() {
        let fig4 = verdict(&pause(11_450.0, 180.0, 10.0, None), 1).unwrap();
        assert_eq!(fig4.causes, [Cause::OffCpu]);
        // 4 threads busy the whole pause: user+sys = 4 × real.
        assert_eq!(verdict(&pause(300.0, 1_150.0, 50.0, None), 4), None);
        // The same CPU time over 4 threads explains 300 ms; over 16 it does not.
        assert!(verdict(&pause(300.0, 1_150.0, 50.0, None), 16).is_some());
        // Short pauses are never stalls.
        assert_eq!(verdict(&pause(40.0, 0.0, 0.0, None), 8), None);
    }

    #[test]
    fn a_stop_far_beyond_the_collection_and_sys_heavy_pauses_are_stalls() {
        // 002 Fig. 8: a 123 ms collection, 1595 ms stopped.
        let fig8 = verdict(&pause(123.0, 400.0, 0.0, Some(1_595.0)), 4).unwrap();
        assert_eq!(fig8.causes, [Cause::OutsideCollection]);
        let kernel = verdict(&pause(400.0, 100.0, 700.0, None), 2).unwrap();
        assert_eq!(kernel.causes, [Cause::Kernel]);
    }

    #[test]
    fn thread_counts_are_read_from_each_jvm_s_words() {
        assert_eq!(
            gc_threads_in("[0.008s][info][gc,init] Parallel Workers: 2"),
            Some(2)
        );
        assert_eq!(
            gc_threads_in("GC(0) Using 3 workers of 8 for evacuation"),
            Some(3)
        );
        assert_eq!(
            gc_threads_in("CommandLine flags: -XX:ParallelGCThreads=8 -Xmx1g"),
            Some(8)
        );
        assert_eq!(
            gc_threads_in("      [Parallel Time: 118.3 ms, GC Workers: 8]"),
            Some(8)
        );
        assert_eq!(gc_threads_in("[0.007s][info][gc] Using Parallel"), None);
    }
}
