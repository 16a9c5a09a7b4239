//! `concord diagnose <gc-log> [--json] [--html FILE]`: reads a GC log and says which pauses
//! the OS caused (paper 002), what else went wrong (long time to safepoint, serial
//! collections, promotion and evacuation failures, explicit collections, a heap too small),
//! with the lines that show it and advice that fits.
//!
//! Formats, detected from the text: unified logging (HotSpot 9+ `-Xlog:gc*`, also
//! `gc+cpu` and `safepoint`; Concord's own `--gc-log` is one instance, [`unified`]) and the
//! logs of JDK 6–8 (`-verbose:gc` or `-XX:+PrintGCDetails`, every collector, [`jdk8`]).
//! The log is read once, line by line ([`read_log_lines`]); both parsers read it until one
//! finds a pause, then that one alone. Each pause is handed on once no later line can change
//! it and is judged ([`judge`]) and written out at once ([`digest`]): memory stays bounded
//! whatever the log's length. Lines neither parser recognizes are counted and quoted.

mod digest;
mod html;
mod jdk8;
mod judge;
mod unified;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::console::errln;
use crate::flags::count_in;
use crate::hotspot::parse_size_kb;

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
    /// Also write the diagnosis as one offline HTML page to FILE: the pause timeline
    /// coloured by verdict, heap occupancy, the pause histogram and the findings.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
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
    /// Where its record begins in the log.
    pub at: LineRef,
    /// Whether the collection ran on one thread: the Serial collector, Parallel Scavenge's
    /// serial old generation (`PSOldGen`), CMS's foreground collection, G1's full collection
    /// before JDK 10.
    pub serial: bool,
    /// The failure the record names: `promotion failed`, `concurrent mode failure`,
    /// `to-space exhausted`, `evacuation failure`, `degenerated`.
    pub failure: Option<&'static str>,
}

impl Pause {
    /// A pause named `what` lasting `real_ms`, beginning at `at`, with nothing else known yet.
    pub fn new(what: String, real_ms: f64, at: LineRef) -> Pause {
        Pause {
            id: 0,
            time_s: None,
            what,
            real_ms,
            user_ms: None,
            sys_ms: None,
            time_to_safepoint_ms: None,
            stopped_ms: None,
            heap: None,
            at,
            serial: false,
            failure: None,
        }
    }
}

/// A place in the log: the file of a rotated set (its index, oldest first) and the line in it
/// (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LineRef {
    /// Index of the file in the set read.
    pub file: u32,
    /// Line number in that file, from 1.
    pub line: u64,
}

/// A concurrent phase (not a pause): the mutators ran meanwhile.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// What the log calls it, e.g. `Concurrent Mark`, `CMS-concurrent-sweep`.
    pub what: String,
    /// Its wall time.
    pub ms: f64,
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

/// What a parser found in a log so far. The driver takes the pauses that can no longer change
/// ([`Parsed::settled`]); the rest is summed: memory does not grow with the log.
#[derive(Debug, Default)]
pub struct Parsed {
    /// The pauses not yet taken, in log order.
    pub pauses: Vec<Pause>,
    /// Concurrent phases by name (at most [`PHASE_NAMES_KEPT`]; more are summed under
    /// `other`).
    pub phases: std::collections::BTreeMap<String, PhaseTally>,
    /// GC threads named in the log (the largest number seen).
    pub gc_threads: Option<u32>,
    /// Whether the log says it was written by Concord.
    pub concord: bool,
    /// Pauses found so far, taken or not.
    pub found: u64,
    /// Lines the parser did not recognize.
    pub unrecognized: u64,
    /// The first few of them, with where they are (cut to [`EXAMPLE_CHARS`]).
    pub unrecognized_examples: Vec<(LineRef, String)>,
    /// ZGC's `Allocation Stall (thread) 3.9ms`: a mutator waited for memory (not a pause).
    pub allocation_stalls: AllocationStalls,
}

/// The allocation stalls of a log.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllocationStalls {
    /// How many.
    pub count: u64,
    /// Their sum, ms.
    pub total_ms: f64,
    /// The longest, ms.
    pub max_ms: f64,
    /// Where the first is.
    pub first: Option<LineRef>,
}

/// The lines of `text` with their places in a log of one file (tests feed parsers so).
#[cfg(test)]
fn numbered_lines(text: &str) -> impl Iterator<Item = (&str, LineRef)> {
    text.lines().enumerate().map(|(n, line)| {
        let at = LineRef {
            file: 0,
            line: n as u64 + 1,
        };
        (line, at)
    })
}

/// Concurrent phase names kept apart; more are summed under `other`.
const PHASE_NAMES_KEPT: usize = 64;

/// The concurrent phases of one name.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct PhaseTally {
    /// How many.
    pub count: u64,
    /// Their sum, ms.
    pub total_ms: f64,
    /// The longest, ms.
    pub max_ms: f64,
}

/// Pauses a parser keeps after they are logged, while a later line may still add to them
/// (`gc+cpu`, a safepoint, `[Times: …]`; a ZGC cycle's CPU line comes after its three pauses).
const UNSETTLED_PAUSES: usize = 16;
/// Unrecognized lines quoted in the output.
const EXAMPLES_KEPT: usize = 5;
/// Characters of an unrecognized line quoted.
const EXAMPLE_CHARS: usize = 160;

impl Parsed {
    /// Adds a pause.
    fn push(&mut self, pause: Pause) {
        self.found += 1;
        self.pauses.push(pause);
    }

    /// The pauses no later line can change (all of them at the end of the log, `all`).
    pub fn settled(&mut self, all: bool) -> std::vec::Drain<'_, Pause> {
        let keep = if all { 0 } else { UNSETTLED_PAUSES };
        let n = self.pauses.len().saturating_sub(keep);
        // Drained in batches, so that a log of many pauses does not shift the window each line.
        let n = if all || n >= UNSETTLED_PAUSES { n } else { 0 };
        self.pauses.drain(..n)
    }

    /// Adds a concurrent phase to its name's tally.
    fn add_phase(&mut self, phase: Phase) {
        if !phase.ms.is_finite() {
            return;
        }
        let kept = self.phases.len() < PHASE_NAMES_KEPT || self.phases.contains_key(&phase.what);
        let name = if kept {
            phase.what
        } else {
            "other".to_string()
        };
        let tally = self.phases.entry(name).or_default();
        tally.count += 1;
        tally.total_ms += phase.ms;
        tally.max_ms = tally.max_ms.max(phase.ms);
    }

    /// Counts a line not recognized at `at`.
    fn unrecognized_line(&mut self, at: LineRef, line: &str) {
        self.unrecognized += 1;
        if self.unrecognized_examples.len() < EXAMPLES_KEPT {
            let cut = jdk8::prefix(line.trim_end(), EXAMPLE_CHARS).to_string();
            self.unrecognized_examples.push((at, cut));
        }
    }

    fn note_gc_threads(&mut self, threads: Option<u32>) {
        if let Some(n) = threads.filter(|n| *n > 0) {
            self.gc_threads = Some(self.gc_threads.map_or(n, |m| m.max(n)));
        }
    }
}

/// The time a safepoint stopped the threads, and how much of it went to reaching the
/// safepoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Stop {
    stopped_ms: f64,
    time_to_safepoint_ms: Option<f64>,
    /// The VM operation (JDK 17+: `Safepoint "G1CollectForAllocation", …`).
    operation: Option<String>,
    /// Time at the safepoint, in the operation (JDK 17+: `At safepoint: N ns`).
    at_safepoint_ms: Option<f64>,
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
            operation: None,
            at_safepoint_ms: None,
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
        operation: field(text, "Safepoint \"", "\"").map(str::to_string),
        at_safepoint_ms: ns_ms("At safepoint: "),
    })
}

/// Whether a VM operation is a collection (`GenCollectForAllocation`,
/// `ParallelGCFailedAllocation`, `G1CollectFull`, `G1PauseRemark`, `CMS_Final_Remark`,
/// `ZMarkStart`, `ShenandoahInitMark`, `GC_HeapInspection`, …), not another safepoint
/// (`Cleanup`, `ICBufferFull`, `RevokeBias`, `HandshakeAllThreads`).
fn collects(operation: &str) -> bool {
    ["GC", "Collect", "G1", "CMS", "Shenandoah"]
        .iter()
        .any(|w| operation.contains(w))
        || (operation.starts_with('Z')
            && operation[1..].starts_with(|c: char| c.is_ascii_uppercase()))
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
    let v = decimal(text)?;
    (v >= 0.0).then_some(v * 1e3)
}

/// A number as a JVM writes it: `0.0142796`, or `0,0142796` where the locale's decimal
/// separator is a comma (JDK 6-8 print their times in the JVM's locale).
fn decimal(text: &str) -> Option<f64> {
    let text = text.trim();
    let v: f64 = if text.contains(',') && !text.contains('.') {
        text.replacen(',', ".", 1).parse().ok()?
    } else {
        text.parse().ok()?
    };
    v.is_finite().then_some(v)
}

/// The length of the number `text` starts with: digits with one `.`, or a `,` between digits
/// (a decimal comma; `0,00, real` stops before the second comma).
fn number_len(text: &str) -> usize {
    let bytes = text.as_bytes();
    let mut end = 0;
    while end < bytes.len() {
        let b = bytes[end];
        let comma = b == b',' && end > 0 && bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
        if !(b.is_ascii_digit() || b == b'.' || comma) {
            break;
        }
        end += 1;
    }
    end
}

/// The number right after `key` in `text`, as written.
fn number_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = &text[text.find(key)? + key.len()..];
    Some(&rest[..number_len(rest)])
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

/// Both formats' parsers fed the same lines, one at a time, until one of them finds a pause:
/// from then on the log is read in that format only (a log is read once, streaming).
#[derive(Debug, Default)]
pub struct Detector {
    unified: unified::Parser,
    jdk8: jdk8::Parser,
    /// The format chosen at the first pause.
    chosen: Option<Format>,
    /// Lines that look like unified logging of the `gc` tags (`[gc`, `GC(n)`).
    unified_like: u64,
    /// Lines that look like a JDK 6-8 log (`[GC`, `[Full GC`, `[Times:`).
    jdk8_like: u64,
    /// Lines read that are not blank, before a format was chosen.
    lines: u64,
    /// Of those, lines that are not text (a NUL, bytes that are not UTF-8).
    binary_lines: u64,
}

impl Detector {
    /// Reads one line, found at `at` (a blank one says nothing to either format).
    pub fn feed(&mut self, line: &str, at: LineRef) {
        if line.bytes().all(|b| b.is_ascii_whitespace()) {
            return;
        }
        match self.chosen {
            Some(Format::Jdk8) => return self.jdk8.feed(line, at),
            Some(_) => return self.unified.feed(line, at),
            None => {}
        }
        self.lines += 1;
        if line.contains(['\0', '\u{fffd}']) {
            self.binary_lines += 1;
        }
        if holds!(line, "[gc") || holds!(line, "GC(") || holds!(line, "[safepoint") {
            self.unified_like += 1;
        } else if holds!(line, "[GC") || holds!(line, "[Full GC") || holds!(line, "[Times:") {
            self.jdk8_like += 1;
        }
        self.unified.feed(line, at);
        self.jdk8.feed(line, at);
        if self.unified.log().found > 0 {
            self.chosen = Some(if self.unified.log().concord {
                Format::Concord
            } else {
                Format::Unified
            });
        } else if self.jdk8.log().found > 0 {
            self.chosen = Some(Format::Jdk8);
        }
    }

    /// The format chosen and what its parser holds, once a pause was found.
    pub fn chosen(&mut self) -> Option<(Format, &mut Parsed)> {
        let format = self.chosen?;
        Some(match format {
            Format::Jdk8 => (format, self.jdk8.log_mut()),
            _ => (format, self.unified.log_mut()),
        })
    }

    /// Ends the log: a JDK 6-8 collection still open was cut off (a unified log holds nothing
    /// back; its pauses are settled by [`Parsed::settled`]).
    pub fn finish(&mut self) {
        if self.chosen == Some(Format::Jdk8) {
            self.jdk8.finish();
        }
    }

    /// Why a log in which no pause was found is not read, and what would make it readable.
    fn why_no_pauses(&self) -> String {
        const FORMATS: &str = "allowed: HotSpot unified logging -Xlog:gc*, JDK 6-8 -verbose:gc \
                               or -XX:+PrintGCDetails, concord run --gc-log";
        if self.lines == 0 {
            return "the file is empty (or holds only blank lines)".to_string();
        }
        if self.binary_lines * 2 > self.lines {
            return format!(
                "it holds binary data, not text ({} of its {} lines are not text); {FORMATS}",
                self.binary_lines, self.lines
            );
        }
        if self.unified_like > 0 && self.unified_like >= self.jdk8_like {
            format!(
                "it looks like HotSpot unified logging ({} lines of the gc tags) but has no \
                 pause line (`GC(n) Pause … <duration>`, tag `gc` at level info): log with \
                 -Xlog:gc*,gc+cpu,safepoint (a selection such as gc+heap, safepoint or \
                 gc=warning alone writes none, nor does ZGC's -Xlog:gc)",
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
            let newline = memchr::memchr(b'\n', available);
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
    if let Some(page) = &args.html {
        crate::report::check_output_file("--html", page)?;
    }
    let files = if args.single {
        vec![args.log.clone()]
    } else {
        rotated_set(&args.log)
    };
    if let Some(page) = &args.html {
        if let Some(log) = files.iter().find(|f| concord::config::same_file(page, f)) {
            bail!(
                "--html {} names the GC log {} itself; give the page another name",
                page.display(),
                log.display()
            );
        }
    }
    if files.len() > 1 {
        let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
        errln!(
            "concord diagnose: reading the rotated set as one log, oldest first: {} (--single \
             reads only {})",
            names.join(", "),
            args.log.display()
        );
    }
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            f.file_name().map_or_else(
                || f.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    let mut reading = Reading {
        detector: Detector::default(),
        digest: None,
        names,
        gc_threads: args.gc_threads,
        json: args.json,
        failed: None,
        keep_reading: args.html.is_some(),
    };
    for (index, file) in files.iter().enumerate() {
        let mut number = 0u64;
        read_log_lines(file, |line| {
            number += 1;
            let at = LineRef {
                file: index as u32,
                line: number,
            };
            reading.line(line, at);
        })?;
    }
    reading.detector.finish();
    reading.hand_on(true);
    let why = reading.detector.why_no_pauses();
    let (Some(digest), Some((_, parsed))) = (reading.digest, reading.detector.chosen()) else {
        bail!("{}: no GC pauses found; {why}", args.log.display());
    };
    match reading.failed {
        // Standard output failed (`| head`): the page, if asked for, is still written, of the
        // whole log; then the failure is reported.
        Some(e) => {
            if args.html.is_some() {
                digest.finish(parsed, args.html.as_deref())?;
            }
            Err(crate::console::StdoutError::from(e).into())
        }
        None => {
            digest.finish(parsed, args.html.as_deref())?;
            Ok(std::process::ExitCode::SUCCESS)
        }
    }
}

/// A log being read: the lines go to the detector, the settled pauses and phases on to the
/// digest, which is started at the first pause.
struct Reading {
    detector: Detector,
    digest: Option<digest::Digest>,
    names: Vec<String>,
    gc_threads: Option<u32>,
    json: bool,
    /// Standard output failed: the rest of the log is read only for the page.
    failed: Option<std::io::Error>,
    /// Whether to read on after standard output failed (a page was asked for).
    keep_reading: bool,
}

impl Reading {
    fn line(&mut self, line: &str, at: LineRef) {
        if self.failed.is_none() || self.keep_reading {
            self.detector.feed(line, at);
            self.hand_on(false);
        }
    }

    /// Hands what the parser has settled on to the digest (everything: `all`).
    fn hand_on(&mut self, all: bool) {
        let Some((format, parsed)) = self.detector.chosen() else {
            return;
        };
        let digest = self.digest.get_or_insert_with(|| {
            let out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout());
            let sink = if self.json {
                digest::Sink::Json(out)
            } else {
                digest::Sink::Text(out)
            };
            digest::Digest::new(format, self.names.clone(), self.gc_threads, sink)
        });
        let threads = parsed.gc_threads;
        for pause in parsed.settled(all) {
            if let Err(e) = digest.pause(pause, threads) {
                digest.close_output();
                self.failed.get_or_insert(e);
                if !self.keep_reading {
                    return;
                }
            }
        }
    }
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
            text.lines().for_each(|l| d.feed(l, LineRef::default()));
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
