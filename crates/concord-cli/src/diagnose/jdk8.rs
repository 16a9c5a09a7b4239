//! Reads the GC logs of HotSpot before unified logging (JDK 6, 7 and 8): `-verbose:gc` or
//! `-XX:+PrintGCDetails`, with or without `-XX:+PrintGCTimeStamps` / `-XX:+PrintGCDateStamps`,
//! `-XX:+PrintGCApplicationStoppedTime`, `-XX:+PrintTenuringDistribution`,
//! `-XX:+PrintHeapAtGC` and the like, for every collector (Serial, ParNew, CMS, Parallel
//! Scavenge / Parallel Old, G1).
//!
//! A collection is a bracket: `[GC …, 0.0142796 secs]` or `[Full GC …, 2.31 secs]` (G1:
//! `[GC pause (G1 Evacuation Pause) (young), … secs]`, `[GC remark …]`, `[GC cleanup …]`).
//! It may span lines (a tenuring distribution inside ParNew, G1's ergonomics) and hold other
//! brackets: its generations (`[ParNew: …]`, `[PSYoungGen: …]`), the phases of a CMS remark, a
//! scavenge before the remark, and concurrent phases that another thread printed into the
//! middle of it (`[CMS-concurrent-mark: …]`). The parser follows the bracket depth across
//! lines: the pause's wall time is the last `N secs` written directly inside the outermost
//! bracket, and a `[Times: user=… sys=…, real=… secs]` that follows the closed bracket (before
//! the next collection) gives its CPU times, or its wall time when the bracket has none.
//! Brackets outside a collection (`[CMS-concurrent-…]`, `[GC concurrent-…]`, G1's detail
//! lines, heap address ranges such as `[0x…, 0x…)`) are not pauses and are skipped. JDK 8
//! numbers no collections, so a pause's id is its position in the log.

use super::{
    attach_stop, gc_threads_in, holds, number_after, seconds_ms, stop_of, LineRef, Parsed, Pause,
    Phase,
};

/// The pauses and GC thread count of a pre-unified HotSpot log (no pauses: not such a log).
#[cfg(test)]
pub fn parse(text: &str) -> Parsed {
    let mut parser = Parser::default();
    for (line, at) in super::numbered_lines(text) {
        parser.feed(line, at);
    }
    parser.finish();
    parser.log
}

/// A collection whose bracket is still open.
#[derive(Debug, Default)]
struct Open {
    /// Uptime written before the bracket, if any.
    time_s: Option<f64>,
    /// Bracket depth inside the collection (1: directly inside its outermost bracket).
    depth: usize,
    /// The first characters written directly inside the outermost bracket (its name).
    head: String,
    /// The last characters written directly inside the outermost bracket (its `N secs`).
    tail: String,
    /// Lines the bracket has spanned so far.
    lines: usize,
    /// Where it began.
    at: LineRef,
    /// What the collection's text says happened inside it.
    concurrent_mode_failure: bool,
    promotion_failed: bool,
    to_space_exhausted: bool,
    cms_initial_mark: bool,
    cms_remark: bool,
    /// A generation collected on one thread: `DefNew`, `Tenured`, `PSOldGen`, `CMS:` (the
    /// foreground collection).
    serial_generation: bool,
}

/// Characters of a collection's name kept, and of its end kept for the wall time.
const HEAD_CHARS: usize = 160;
const TAIL_CHARS: usize = 160;

/// Lines a collection's bracket may span before it is taken for garbage (a cut or
/// interleaved log) and dropped: the longest real records (ParNew with a tenuring
/// distribution of 15 ages, G1's ergonomics) take a few dozen.
const MAX_RECORD_LINES: usize = 1_000;

/// The state of a pre-unified log read line by line.
#[derive(Debug, Default)]
pub struct Parser {
    log: Parsed,
    open: Option<Open>,
    /// The last pause pushed still waits for its `[Times: …]`.
    awaiting_times: bool,
    /// A closed collection with no `N secs` of its own, waiting for `[Times: …]`'s `real=`.
    pending: Option<Pause>,
    /// The log is G1's (JDK 7/8): its full collections run on one thread.
    g1: bool,
    /// A bracket outside any collection is still open (G1's per-worker details span lines:
    /// `[GC Worker Start (ms):` … `Avg: …, Max: …]`).
    detail_open: bool,
}

impl Parser {
    /// What the lines held so far.
    pub fn log(&self) -> &Parsed {
        &self.log
    }

    /// The same, to take settled pauses and phases from.
    pub fn log_mut(&mut self) -> &mut Parsed {
        &mut self.log
    }

    /// Reads one line, found at `at`.
    pub fn feed(&mut self, line: &str, at: LineRef) {
        let known = if self.open.is_none() {
            let known = self.detail_open || known_outside_collection(line);
            self.detail_open = false;
            known
        } else {
            continues_record(line)
        };
        if !known {
            // Another program's output (`-verbose:gc` on a shared stdout), or garbage: skipped
            // without touching an open collection.
            self.log.unrecognized_line(at, line);
            return;
        }
        self.log.note_gc_threads(gc_threads_in(line));
        if !self.g1 && (holds!(line, "G1") || holds!(line, "garbage-first")) {
            self.g1 = true;
        }
        if self.open.is_none() {
            if let Some(stop) = stop_of(line) {
                self.flush_pending();
                self.awaiting_times = false;
                attach_stop(&mut self.log.pauses, stop);
                return;
            }
        }
        if let Some(open) = &mut self.open {
            open.lines += 1;
            if open.lines > MAX_RECORD_LINES {
                self.open = None;
            }
        }
        // The start of the text written at depth 0 since the last bracket closed (the time
        // stamps of the next collection).
        let mut segment = 0;
        let mut i = 0;
        let bytes = line.as_bytes();
        while i < bytes.len() {
            if let Some(open) = &mut self.open {
                // Inside a collection: follow the depth, keep what is written at depth 1.
                let rest = &line[i..];
                open.note(rest);
                let next = rest.find(['[', ']']).map_or(line.len(), |k| i + k);
                if open.depth == 1 {
                    open.keep(&line[i..next]);
                }
                if next == line.len() {
                    if open.depth == 1 {
                        open.keep("\n");
                    }
                    return;
                }
                if bytes[next] == b'[' {
                    open.depth += 1;
                } else {
                    open.depth -= 1;
                    if open.depth == 0 {
                        let open = self.open.take().expect("a collection is open");
                        self.close(open);
                        segment = next + 1;
                    }
                }
                i = next + 1;
                continue;
            }
            // Outside a collection: the next bracket opens one, gives `[Times: …]`, or is
            // skipped (to its `]` on this line, if any).
            let Some(k) = line[i..].find('[') else {
                return;
            };
            let at_bracket = i + k;
            let inner = &line[at_bracket + 1..];
            if inner.starts_with("Times:") {
                let end = inner.find(']').map_or(line.len(), |e| at_bracket + 1 + e);
                self.times(&line[at_bracket..end]);
                i = end + 1;
                segment = i;
                continue;
            }
            if opens_collection(inner) {
                self.flush_pending();
                self.awaiting_times = false;
                self.open = Some(Open {
                    time_s: uptime_of(&line[segment..at_bracket]),
                    depth: 1,
                    at,
                    ..Open::default()
                });
                i = at_bracket + 1;
                continue;
            }
            // Another bracket: a concurrent phase, a G1 detail line, an address range. After a
            // concurrent phase, a `[Times: …]` is the phase's, not the last pause's.
            let close = inner.find(']');
            if inner.starts_with("CMS-concurrent") || inner.starts_with("GC concurrent") {
                self.flush_pending();
                self.awaiting_times = false;
                if let Some(phase) = phase_of(&inner[..close.unwrap_or(inner.len())]) {
                    self.log.add_phase(phase);
                }
            }
            i = match close {
                Some(e) => at_bracket + 1 + e + 1,
                None => {
                    self.detail_open = true;
                    line.len()
                }
            };
            segment = i;
        }
    }

    /// A collection's outermost bracket closed.
    fn close(&mut self, open: Open) {
        let what = open.name();
        let mut pause = Pause::new(what, last_secs(&open.tail).unwrap_or(f64::NAN), open.at);
        pause.time_s = open.time_s;
        pause.heap = super::heap_change(&open.tail);
        // A concurrent mode failure is finished by CMS's foreground collection, on one thread.
        pause.serial = open.serial_generation
            || open.concurrent_mode_failure
            || (self.g1 && pause.what.starts_with("Full GC"));
        pause.failure = if open.concurrent_mode_failure {
            Some("concurrent mode failure")
        } else if open.promotion_failed {
            Some("promotion failed")
        } else if open.to_space_exhausted {
            Some("to-space exhausted")
        } else {
            None
        };
        if pause.real_ms.is_nan() {
            self.pending = Some(pause);
        } else {
            self.push(pause);
        }
    }

    fn push(&mut self, mut pause: Pause) {
        pause.id = self.log.found;
        self.log.push(pause);
        self.awaiting_times = true;
    }

    /// A collection closed without `N secs` is dropped if no `[Times: …]` gave its wall time.
    fn flush_pending(&mut self) {
        self.pending = None;
    }

    /// `[Times: user=0.18 sys=0.01, real=11.45 secs`: the CPU times of the collection just
    /// closed (or the wall time of one that wrote none).
    fn times(&mut self, times: &str) {
        let user_ms = number_after(times, "user=").and_then(seconds_ms);
        let sys_ms = number_after(times, "sys=").and_then(seconds_ms);
        if let Some(mut pause) = self.pending.take() {
            let Some(real_ms) = number_after(times, "real=").and_then(seconds_ms) else {
                return;
            };
            pause.real_ms = real_ms;
            self.push(pause);
        }
        if std::mem::take(&mut self.awaiting_times) {
            if let Some(pause) = self.log.pauses.last_mut() {
                pause.user_ms = user_ms;
                pause.sys_ms = sys_ms;
            }
        }
    }

    /// Ends the log (a collection still open was cut off and is not a pause).
    pub fn finish(&mut self) {
        self.open = None;
        self.pending = None;
    }
}

impl Open {
    /// Keeps `text` written directly inside the outermost bracket: its start as the name,
    /// its end for the wall time.
    fn keep(&mut self, text: &str) {
        if self.head.len() < HEAD_CHARS {
            let room = HEAD_CHARS - self.head.len();
            self.head.push_str(prefix(text, room));
        }
        self.tail.push_str(text);
        if self.tail.len() > 2 * TAIL_CHARS {
            let cut = self.tail.len() - TAIL_CHARS;
            let cut = (cut..self.tail.len())
                .find(|&c| self.tail.is_char_boundary(c))
                .unwrap_or(self.tail.len());
            self.tail.drain(..cut);
        }
    }

    /// Notes what the rest of a line says about the collection.
    fn note(&mut self, text: &str) {
        // Each phrase below holds one of these (most of a record holds neither).
        self.serial_generation |= holds!(text, "[DefNew")
            || holds!(text, "[Tenured")
            || holds!(text, "[PSOldGen")
            || holds!(text, "[CMS:");
        if !holds!(text, "fail") && !holds!(text, "CMS-") && !holds!(text, "to-space") {
            return;
        }
        self.concurrent_mode_failure |= text.contains("concurrent mode failure");
        self.promotion_failed |= text.contains("promotion failed");
        self.to_space_exhausted |=
            text.contains("to-space exhausted") || text.contains("to-space overflow");
        self.cms_initial_mark |= text.contains("CMS-initial-mark");
        self.cms_remark |= text.contains("CMS-remark");
    }

    /// The collection's name: `GC (Allocation Failure)`, `GC pause (G1 Evacuation Pause)
    /// (young)`, `Full GC (Ergonomics)`, with what its text says happened where the name does
    /// not (`GC (CMS Final Remark)` for a JDK 7 remark, `(concurrent mode failure)`).
    fn name(&self) -> String {
        // `-XX:+PrintAdaptiveSizePolicy` writes into the name (`[GCAdaptiveSizePolicy::…`,
        // `[Full GCAdaptiveSizeStart: …`, `[GC (Allocation Failure)AdaptiveSizePolicy::…`).
        let head = ["PSAdaptiveSize", "AdaptiveSize"]
            .iter()
            .find_map(|w| self.head.find(w))
            .map_or(self.head.as_str(), |cut| &self.head[..cut]);
        let mut name = description(head);
        if name == "GC" && self.cms_initial_mark {
            name = "GC (CMS Initial Mark)".to_string();
        } else if name == "GC" && self.cms_remark {
            name = "GC (CMS Final Remark)".to_string();
        }
        for (happened, what) in [
            (self.promotion_failed, "(promotion failed)"),
            (self.concurrent_mode_failure, "(concurrent mode failure)"),
        ] {
            if happened && !name.contains(what) {
                name.push(' ');
                name.push_str(what);
            }
        }
        name
    }
}

/// Whether the text after a `[` opens a collection (a pause): `Full GC…`, or `GC` followed by
/// its cause, sizes, generations or a time stamp (`GC (Allocation Failure)`, `GC 1234K->…`,
/// `GC [PSYoungGen: …`, `GC--`, `GC2014-…`), or by G1's `pause`, `remark` or `cleanup`; not
/// G1's concurrent phases (`GC concurrent-mark-start`) nor its detail lines (`GC Worker
/// Start (ms): …`).
fn opens_collection(inner: &str) -> bool {
    if inner.starts_with("Full GC") {
        return true;
    }
    let Some(after) = inner.strip_prefix("GC") else {
        return false;
    };
    let sizes_or_cause = |c: char| c.is_ascii_digit() || matches!(c, '(' | '[' | '-');
    if after.starts_with("AdaptiveSize") || after.starts_with("PSAdaptiveSize") {
        return true;
    }
    match after.chars().next() {
        None => true,
        Some(c) if sizes_or_cause(c) => true,
        Some(' ') => {
            let word = after.trim_start();
            word.chars().next().is_none_or(sizes_or_cause)
                || ["pause", "remark", "cleanup"]
                    .iter()
                    .any(|w| word.starts_with(w))
        }
        Some(_) => false,
    }
}

/// `CMS-concurrent-mark: 0.521/0.549 secs` (CPU / wall) or `GC concurrent-mark-end, 0.0123
/// secs` (G1) as a phase with its wall time; the `-start` lines have none and are no phase.
fn phase_of(inner: &str) -> Option<Phase> {
    let ms = last_secs(inner)?;
    let what = inner
        .split([':', ','])
        .next()
        .unwrap_or(inner)
        .trim()
        .trim_end_matches("-end");
    Some(Phase {
        what: what.to_string(),
        ms,
    })
}

/// Whether a line outside any collection is one a JDK 6-8 JVM writes into its GC log: a
/// bracket (a collection, `[Times: …]`, a concurrent phase, G1's details and ergonomics, CMS's
/// abortable preclean), after the time stamps if any; `-XX:+PrintHeapAtGC`'s blocks;
/// `-XX:+PrintTenuringDistribution`; `-XX:+PrintGCApplicationStoppedTime` and
/// `…ConcurrentTime`; `-XX:+PrintSafepointStatistics`; `-XX:+PrintAdaptiveSizePolicy`;
/// `-XX:+PrintFLSStatistics`; the header of a log file (JVM version, memory, command line,
/// rotation notes).
fn known_outside_collection(line: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "Heap",
        "}",
        "{",
        "Total time for which",
        "Application time:",
        "Desired survivor size",
        "- age",
        "CommandLine flags:",
        "OpenJDK",
        "Java HotSpot",
        "Memory:",
        "par new generation",
        "def new generation",
        "eden space",
        "from space",
        "to space",
        "concurrent mark-sweep generation",
        "concurrent-mark-sweep perm gen",
        "tenured generation",
        "the space",
        "compacting perm gen",
        "Metaspace",
        "class space",
        "PSYoungGen",
        "ParOldGen",
        "PSOldGen",
        "PSPermGen",
        "object space",
        "garbage-first heap",
        "region size",
        "No shared spaces configured",
        "ro space",
        "rw space",
        "md space",
        "mc space",
        "vmop",
        "Polling page",
        "AdaptiveSize",
        "PSAdaptiveSize",
        "PSYoungGen::",
        "avg_",
        "Before GC:",
        "After GC:",
        "Statistics for",
        "Total Free Space:",
        "Max   Chunk Size:",
        "Number of Blocks:",
        "Av.  Block  Size:",
        "Tree      Height:",
        "---",
        "ParNew",
        "DefNew",
        "CMS",
        "G1",
        "Concurrent",
        "Finished",
        "GC locker",
        "Cancelling concurrent GC",
        "Clearing",
        "Setting",
    ];
    let trimmed = line.trim();
    let rest = after_stamps(trimmed);
    if rest.starts_with('[') || PREFIXES.iter().any(|p| rest.starts_with(p)) {
        return true;
    }
    // `to   space 2112K, …` (the heap printout aligns its words).
    let mut words = rest.split_whitespace();
    if matches!(
        (words.next(), words.next()),
        (Some("to" | "from" | "eden"), Some("space"))
    ) {
        return true;
    }
    // `-XX:+PrintSafepointStatistics` rows (`12.345: ParallelGCFailedAllocation [ 10 0 0 ]
    // …`), a log file's rotation notes (`2016-01-14 22:08:28 GC log file created …`), a
    // stamped line with a bracket in it.
    holds!(trimmed, "GC log file") || (rest.len() < trimmed.len() && holds!(rest, "["))
}

/// Whether a line inside an open collection is part of its record: indented or continuing it
/// (`, 0.0013065 secs]`, `: 6906246K->…`, `}`), stamped, a bracket, or a line the JVM writes
/// into records (a tenuring distribution, the adaptive size policy, heap printouts); not one
/// with bytes that are no text, nor another program's words.
fn continues_record(line: &str) -> bool {
    if line
        .chars()
        .any(|c| c == '\u{fffd}' || (c.is_control() && c != '\t'))
    {
        return false;
    }
    let first = line.chars().next();
    first.is_none_or(|c| c.is_whitespace() || c.is_ascii_digit() || "[](),:;{}-".contains(c))
        || known_outside_collection(line)
}

/// `text` without the stamps before it (`2016-01-14T22:08:28.028+0000: 312052.604: `).
fn after_stamps(mut text: &str) -> &str {
    while let Some((stamp, rest)) = text.split_once(": ") {
        let is_stamp = !stamp.is_empty()
            && stamp
                .bytes()
                .all(|b| b.is_ascii_digit() || b".,-+:T".contains(&b));
        if !is_stamp {
            break;
        }
        text = rest.trim_start();
    }
    text
}

/// At most `bytes` bytes of `text`, cut on a character boundary.
pub(super) fn prefix(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// A collection's name from the start of what its outermost bracket holds: the words and
/// parenthesised causes before the first number (a size, a time stamp) or comma (`GC (Allocation Failure)
/// 312064.042: ` is `GC (Allocation Failure)`; `GC pause (G1 Evacuation Pause) (young), 0.12
/// secs` keeps both parentheses).
fn description(text: &str) -> String {
    let mut parens = 0usize;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        match c {
            '(' => parens += 1,
            ')' => parens = parens.saturating_sub(1),
            ',' | '\n' | '[' | ']' if parens == 0 => {
                end = at;
                break;
            }
            c if parens == 0 && c.is_ascii_digit() => {
                end = at;
                break;
            }
            _ => {}
        }
    }
    text[..end].split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The uptime in `2016-01-14T22:08:28.028+0000: 312052.604: ` (the date stamp is skipped).
fn uptime_of(stamps: &str) -> Option<f64> {
    stamps
        .split(": ")
        .map(|s| s.trim().trim_end_matches(':'))
        .find_map(|s| super::decimal(s).filter(|v| *v >= 0.0))
}

/// The duration of the last `0.0142796 secs` in `text`, in milliseconds.
fn last_secs(text: &str) -> Option<f64> {
    let before = &text[..text.rfind(" secs")?];
    let bytes = before.as_bytes();
    let mut start = bytes.len();
    while start > 0 {
        let b = bytes[start - 1];
        // A decimal comma has digits on both sides (`0,0142796`; not `…K), 0.014`).
        let comma = b == b',' && start >= 2 && bytes[start - 2].is_ascii_digit();
        if !(b.is_ascii_digit() || b == b'.' || comma) {
            break;
        }
        start -= 1;
    }
    seconds_ms(&before[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record of 002's Fig. 4 (ParNew over several lines), the time the threads were
    /// stopped, and a CMS concurrent phase that is no pause.
    #[test]
    fn a_multi_line_record_is_one_pause_with_its_stop() {
        let log = parse(
            "2016-01-14T22:08:28.028+0000: 312052.604: [GC (Allocation Failure) 312064.042: [ParNew\n\
             Desired survivor size 1998848 bytes, new threshold 15 (max 15)\n\
             - age   1:    1678056 bytes,    1678056 total\n\
             : 508096K->3782K(508096K), 0.0142796 secs] 1336653K->835675K(4190400K), 11.4521443 secs] [Times: user=0.18 sys=0.01, real=11.45 secs]\n\
             2016-01-14T22:08:39.481+0000: 312064.058: Total time for which application threads were stopped: 11.4566012 seconds, Stopping threads took: 0.0000310 seconds\n\
             312070.100: [CMS-concurrent-mark: 0.123/0.456 secs] [Times: user=0.30 sys=0.00, real=0.46 secs]\n",
        );
        assert_eq!(log.pauses.len(), 1);
        let p = &log.pauses[0];
        assert_eq!(p.what, "GC (Allocation Failure)");
        assert_eq!(p.time_s, Some(312052.604));
        assert!((p.real_ms - 11452.1443).abs() < 1e-6);
        assert_eq!((p.user_ms, p.sys_ms), (Some(180.0), Some(10.0)));
        assert!((p.stopped_ms.unwrap() - 11456.6012).abs() < 1e-6);
        assert!((p.time_to_safepoint_ms.unwrap() - 0.031).abs() < 1e-9);
    }

    /// JDK 7 Parallel Scavenge without `-XX:+PrintGCDetails`' times: no `[Times: …]`.
    #[test]
    fn plain_parallel_scavenge_records_of_jdk_7_are_pauses() {
        let log = parse(
            "41.409: [GC [PSYoungGen: 229368K->32766K(170240K)] 245617K->63556K(956672K), 0.0984634 secs]\n\
             42.100: [Full GC [PSYoungGen: 32766K->0K(170240K)] [PSOldGen: 30790K->60000K(786432K)] 63556K->60000K(956672K) [PSPermGen: 20000K->20000K(40000K)], 0.5000000 secs]\n",
        );
        assert_eq!(log.pauses.len(), 2);
        let (young, full) = (&log.pauses[0], &log.pauses[1]);
        assert_eq!((young.what.as_str(), young.time_s), ("GC", Some(41.409)));
        assert!((young.real_ms - 98.4634).abs() < 1e-9);
        assert_eq!(young.user_ms, None);
        let heap = young.heap.unwrap();
        assert_eq!(
            (heap.before_kb, heap.after_kb, heap.capacity_kb),
            (245_617, 63_556, 956_672)
        );
        assert_eq!((full.what.as_str(), full.id), ("Full GC", 1));
        assert!((full.real_ms - 500.0).abs() < 1e-9);
    }

    /// CMS of JDK 7 with date stamps and stopped time (GCViewer's sample
    /// `SampleSun1_7_0_51_CMS_PrintApplStoppedTime.txt`, a real log): the initial mark and the
    /// remark are pauses, the remark's scavenge and phases are inside it, and the concurrent
    /// phases are not pauses.
    #[test]
    fn cms_initial_mark_and_remark_are_pauses_and_concurrent_phases_are_not() {
        let log = parse(
            "2014-04-09T15:26:52.201+0200: 0.384: [GC [1 CMS-initial-mark: 73765K(95616K)] 85022K(138624K), 0.0002081 secs] [Times: user=0.00 sys=0.00, real=0.00 secs] \n\
             2014-04-09T15:26:52.201+0200: 0.385: Total time for which application threads were stopped: 0.0003502 seconds\n\
             2014-04-09T15:26:52.201+0200: 0.385: [CMS-concurrent-mark-start]\n\
             2014-04-09T15:26:52.211+0200: 0.395: [CMS-concurrent-mark: 0.010/0.010 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n\
             2014-04-09T15:26:52.211+0200: 0.395: [GC[YG occupancy: 41306 K (43008 K)]2014-04-09T15:26:52.211+0200: 0.395: [GC2014-04-09T15:26:52.211+0200: 0.395: [ParNew: 41306K->41306K(43008K), 0.0000221 secs] 115072K->115072K(138624K), 0.0000537 secs] [Times: user=0.00 sys=0.00, real=0.00 secs] \n\
             2014-04-09T15:26:52.211+0200: 0.396: [Rescan (parallel) , 0.0003130 secs]2014-04-09T15:26:52.211+0200: 0.396: [weak refs processing, 0.0000172 secs]2014-04-09T15:26:52.211+0200: 0.396: [class unloading, 0.0000991 secs]2014-04-09T15:26:52.211+0200: 0.396: [scrub symbol table, 0.0004031 secs]2014-04-09T15:26:52.211+0200: 0.396: [scrub string table, 0.0000254 secs] [1 CMS-remark: 73765K(95616K)] 115072K(138624K), 0.0010507 secs] [Times: user=0.00 sys=0.00, real=0.00 secs] \n\
             2014-04-09T15:26:52.211+0200: 0.396: Total time for which application threads were stopped: 0.0011523 seconds\n\
             2014-04-09T15:26:52.211+0200: 0.397: [CMS-concurrent-sweep-start]\n",
        );
        let got: Vec<(&str, Option<f64>)> = log
            .pauses
            .iter()
            .map(|p| (p.what.as_str(), p.time_s))
            .collect();
        assert_eq!(
            got,
            [
                ("GC (CMS Initial Mark)", Some(0.384)),
                ("GC (CMS Final Remark)", Some(0.395))
            ]
        );
        assert!((log.pauses[0].real_ms - 0.2081).abs() < 1e-9);
        assert!((log.pauses[0].stopped_ms.unwrap() - 0.3502).abs() < 1e-9);
        assert!((log.pauses[1].real_ms - 1.0507).abs() < 1e-9);
        assert!((log.pauses[1].stopped_ms.unwrap() - 1.1523).abs() < 1e-9);
    }

    /// G1 of JDK 8 with a tenuring distribution inside the pause's bracket and the phase
    /// details after it (GCViewer's `SampleSun1_8_0G1SystemGcYoung.txt`, shortened).
    #[test]
    fn a_g1_pause_spans_its_tenuring_distribution_and_takes_the_times_after_its_details() {
        let log = parse(
            "2661.447: [GC pause (System.gc()) (young) (initial-mark)\n\
             Desired survivor size 826277888 bytes, new threshold 15 (max 15)\n\
             - age   1:    3836312 bytes,    3836312 total\n\
             , 0.2124664 secs]\n\
             \x20  [Parallel Time: 150.8 ms, GC Workers: 8]\n\
             \x20     [GC Worker Start (ms): Min: 2661451.7, Avg: 2661451.9, Max: 2661452.2, Diff: 0.5]\n\
             \x20  [Eden: 8944.0M(12.1G)->0.0B(12.1G) Survivors: 144.0M->376.0M Heap: 22.7G(30.0G)->14.2G(30.0G)]\n\
             \x20[Times: user=1.13 sys=0.10, real=0.21 secs]\n",
        );
        assert_eq!(log.pauses.len(), 1);
        let p = &log.pauses[0];
        assert_eq!(p.what, "GC pause (System.gc()) (young) (initial-mark)");
        assert!((p.real_ms - 212.4664).abs() < 1e-9);
        assert_eq!((p.user_ms, p.sys_ms), (Some(1130.0), Some(100.0)));
        assert_eq!(log.gc_threads, Some(8));
    }

    /// A concurrent phase printed into the middle of a collection, and a concurrent mode
    /// failure: one pause, named with the failure, whose wall time is the outermost bracket's.
    #[test]
    fn a_concurrent_mode_failure_is_one_pause_despite_the_phase_printed_inside_it() {
        let log = parse(
            "1.500: [GC (Allocation Failure) 1.500: [ParNew: 100K->100K(200K), 0.0000200 secs]1.500: [CMS1.600: [CMS-concurrent-mark: 0.100/0.120 secs] [Times: user=0.20 sys=0.00, real=0.12 secs] \n\
             \x20(concurrent mode failure): 900K->800K(1000K), 2.3000000 secs] 1000K->800K(1200K), [Metaspace: 3000K->3000K(1056768K)], 2.3100000 secs] [Times: user=2.30 sys=0.01, real=2.31 secs] \n",
        );
        assert_eq!(log.pauses.len(), 1);
        let p = &log.pauses[0];
        assert_eq!(p.what, "GC (Allocation Failure) (concurrent mode failure)");
        assert!((p.real_ms - 2310.0).abs() < 1e-9);
        assert_eq!(p.user_ms, Some(2300.0));
    }

    /// A pause logged without `[Times: …]` does not take the times of the concurrent phase
    /// after it.
    #[test]
    fn a_concurrent_phase_keeps_its_times() {
        let log = parse(
            "1.0: [GC 1.0: [ParNew: 100K->10K(200K), 0.0100000 secs] 300K->210K(1000K), 0.0110000 secs]\n\
             1.1: [CMS-concurrent-mark: 0.500/0.600 secs] [Times: user=1.00 sys=0.50, real=0.60 secs]\n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert_eq!((log.pauses[0].user_ms, log.pauses[0].sys_ms), (None, None));
    }

    /// G1 with `-verbose:gc` only: pauses without `[Times: …]`, concurrent phases skipped,
    /// remark and cleanup counted.
    #[test]
    fn g1_without_details_gives_its_pauses_and_skips_its_concurrent_phases() {
        let log = parse(
            "2.345: [GC pause (G1 Evacuation Pause) (young) 24M->4M(256M), 0.0123000 secs]\n\
             2.400: [GC concurrent-root-region-scan-start]\n\
             2.401: [GC concurrent-root-region-scan-end, 0.0010000 secs]\n\
             2.500: [GC remark, 0.0050000 secs]\n\
             2.510: [GC cleanup 10M->9M(256M), 0.0010000 secs]\n",
        );
        let got: Vec<&str> = log.pauses.iter().map(|p| p.what.as_str()).collect();
        assert_eq!(
            got,
            [
                "GC pause (G1 Evacuation Pause) (young)",
                "GC remark",
                "GC cleanup"
            ]
        );
        assert!((log.pauses[1].real_ms - 5.0).abs() < 1e-9);
    }

    /// `-XX:+PrintHeapAtGC` writes address ranges `[0x…, 0x…)` that a bracket count must not
    /// follow.
    #[test]
    fn heap_printouts_with_address_ranges_do_not_upset_the_brackets() {
        let log = parse(
            "{Heap before GC invocations=1 (full 0):\n\
             \x20PSYoungGen      total 9216K, used 8192K [0x00000000ff600000, 0x0000000100000000, 0x0000000100000000)\n\
             \x20 eden space 8192K, 100% used [0x00000000ff600000,0x00000000ffe00000,0x00000000ffe00000)\n\
             1.234: [GC (Allocation Failure) [PSYoungGen: 8192K->1000K(9216K)] 8192K->1500K(29696K), 0.0045000 secs] [Times: user=0.01 sys=0.00, real=0.00 secs] \n\
             Heap after GC invocations=1 (full 0):\n\
             \x20PSYoungGen      total 9216K, used 1000K [0x00000000ff600000, 0x0000000100000000, 0x0000000100000000)\n\
             }\n\
             2.000: [GC (Allocation Failure) [PSYoungGen: 8192K->900K(9216K)] 8692K->1400K(29696K), 0.0040000 secs] [Times: user=0.01 sys=0.00, real=0.00 secs] \n",
        );
        assert_eq!(log.pauses.len(), 2);
        assert!((log.pauses[1].real_ms - 4.0).abs() < 1e-9);
        assert_eq!(log.pauses[1].time_s, Some(2.0));
    }

    /// A collection whose only duration is `[Times: …]`'s `real=` takes it.
    #[test]
    fn a_collection_without_its_own_duration_takes_the_real_time() {
        let log = parse("5.000: [GC (Allocation Failure) [PSYoungGen: 8192K->1000K(9216K)]] [Times: user=0.02 sys=0.00, real=0.03 secs]\n");
        assert_eq!(log.pauses.len(), 1);
        assert!((log.pauses[0].real_ms - 30.0).abs() < 1e-9);
        assert_eq!(log.pauses[0].user_ms, Some(20.0));
    }

    /// Records of real JDK 6 and 7 logs (GCViewer's samples `SampleSun1_6_0CMS.txt`,
    /// `SampleSun1_7_0CMS_PrintTenuringDistributionPromotionFailure.txt` and
    /// `SampleSun1_7_0_40PrintGCCause.txt`, shortened): a ParNew with a concurrent phase
    /// printed inside it, a promotion failure ending in a concurrent mode failure that lasted
    /// 130 s, and a G1 pause holding its ergonomics lines.
    #[test]
    fn real_jdk_6_and_7_records_with_everything_inside_them() {
        let log = parse(
            "1.565: [GC 1.565: [ParNew1.578: [CMS-concurrent-abortable-preclean: 0.002/0.190 secs] [Times: user=0.09 sys=0.00, real=0.19 secs] \n\
             : 118008K->13040K(118016K), 0.0281748 secs] 194351K->128075K(249088K), 0.0282363 secs] [Times: user=0.03 sys=0.02, real=0.03 secs] \n\
             {Heap before GC invocations=1470 (full 99):\n\
             \x20par new generation   total 6932288K, used 6906246K [0x00007fc05c000000, 0x00007fc21c000000, 0x00007fc21c000000)\n\
             2014-03-12T21:18:26.029-0500: 13295.637: [GC2014-03-12T21:18:26.029-0500: 13295.637: [ParNew (0: promotion failure size = 11863)  (1: promotion failure size = 11883)  (promotion failed)\n\
             Desired survivor size 208764928 bytes, new threshold 15 (max 15)\n\
             - age   1:  187860912 bytes,  187860912 total\n\
             : 6906246K->6819243K(6932288K), 2.7300470 secs]2014-03-12T21:18:28.759-0500: 13298.367: [CMS2014-03-12T21:18:31.372-0500: 13300.980: [CMS-concurrent-sweep: 16.244/20.725 secs] [Times: user=100.59 sys=4.74, real=20.72 secs]\n\
             \x20(concurrent mode failure): 23591969K->23342845K(25165824K), 127.2159440 secs] 30431568K->23342845K(32098112K), [CMS Perm : 137329K->97298K(262912K)], 129.9468220 secs] [Times: user=131.28 sys=0.07, real=129.93 secs]\n\
             Heap after GC invocations=1471 (full 100):\n\
             }\n\
             2014-03-12T21:20:35.976-0500: 13425.584: Total time for which application threads were stopped: 129.9531350 seconds\n\
             \x200.199: [G1Ergonomics (Heap Sizing) expand the heap, requested expansion amount: 94489280512 bytes, attempted expansion amount: 94489280512 bytes]\n\
             2013-05-22T20:43:54.027+0000: 4.438: [GC pause (G1 Evacuation Pause) (young) 4.438: [G1Ergonomics (CSet Construction) start choosing CSet, _pending_cards: 5397, predicted base time: 26.19 ms, remaining time: 123.81 ms, target pause time: 150.00 ms]\n\
             \x204.438: [G1Ergonomics (CSet Construction) finish choosing CSet, eden: 1 regions, survivors: 0 regions, old: 0 regions, predicted pause time: 509.57 ms, target pause time: 150.00 ms]\n\
             , 0.0208940 secs]\n\
             \x20  [Parallel Time: 9.2 ms, GC Workers: 8]\n\
             \x20     [GC Worker Start (ms): Min: 4438.4, Avg: 4441.5, Max: 4446.6, Diff: 8.3]\n\
             \x20[Times: user=0.07 sys=0.02, real=0.02 secs] \n",
        );
        // Milliseconds to the microsecond, as the log writes them to 0.1 µs.
        let us = |ms: f64| (ms * 1000.0).round() as i64;
        let got: Vec<(&str, i64, Option<i64>)> = log
            .pauses
            .iter()
            .map(|p| (p.what.as_str(), us(p.real_ms), p.user_ms.map(us)))
            .collect();
        assert_eq!(
            got,
            [
                ("GC", 28236, Some(30_000)),
                (
                    "GC (promotion failed) (concurrent mode failure)",
                    129_946_822,
                    Some(131_280_000)
                ),
                (
                    "GC pause (G1 Evacuation Pause) (young)",
                    20894,
                    Some(70_000)
                ),
            ]
        );
        assert_eq!(log.pauses[1].stopped_ms.map(us), Some(129_953_135));
        assert_eq!(log.pauses[1].time_s, Some(13295.637));
    }

    #[test]
    fn collections_are_told_from_detail_lines_and_concurrent_phases() {
        for opens in [
            "GC (Allocation Failure) [PSYoungGen",
            "GC [PSYoungGen: 1K",
            "GC 1234K->567K(8192K), 0.0012 secs]",
            "GC-- [PSYoungGen",
            "GC2014-04-09T15:26:52.211+0200: 0.395: [ParNew",
            "GC[YG occupancy: 41306 K (43008 K)]",
            "GC pause (young), 0.01 secs]",
            "GC remark, 0.005 secs]",
            "GC cleanup 10M->9M(256M), 0.001 secs]",
            "Full GC (Ergonomics) [PSYoungGen",
            "GC",
        ] {
            assert!(opens_collection(opens), "{opens}");
        }
        for not in [
            "GC concurrent-mark-start]",
            "GC Worker Start (ms): Min: 1.0]",
            "GC Worker Other (ms): Min: 0.1]",
            "CMS-concurrent-mark: 0.1/0.2 secs]",
            "Times: user=0.00 sys=0.00, real=0.00 secs]",
            "0x00000000ff600000, 0x0000000100000000)",
        ] {
            assert!(!opens_collection(not), "{not}");
        }
    }

    #[test]
    fn descriptions_lose_sizes_and_durations() {
        assert_eq!(
            description("GC pause (G1 Evacuation Pause) (young), 0.1227713 secs]"),
            "GC pause (G1 Evacuation Pause) (young)"
        );
        assert_eq!(
            description("Full GC (Ergonomics) [PSYoungGen: 1K"),
            "Full GC (Ergonomics)"
        );
    }

    /// Lines of a JDK 7 G1 log written in a locale whose decimal separator is a comma
    /// (GCViewer's `SampleSun1_7_0G1-ApplicationStopped.txt`-style sample, kept in
    /// tests/fixtures/diagnose/real/public/gcviewer_jdk7_g1_appstopped_tenuring_comma.log).
    #[test]
    fn times_written_with_a_decimal_comma_are_read() {
        let log = parse(
            "2015-02-16T18:07:07.298+0100: 376,187: Total time for which application threads were stopped: 0,0002050 seconds\n\
             2015-02-16T18:07:07.778+0100: 376,667: [GC pause (G1 Evacuation Pause) (young)\n\
             Desired survivor size 9437184 bytes, new threshold 15 (max 15)\n\
             - age   1:    3960584 bytes,    3960584 total\n\
             , 0,0387400 secs]\n\
             \x20[Times: user=0,12 sys=0,00, real=0,04 secs]\n\
             2015-02-16T18:07:07.818+0100: 376,707: Total time for which application threads were stopped: 0,0391530 seconds\n",
        );
        assert_eq!(log.pauses.len(), 1);
        let p = &log.pauses[0];
        assert_eq!(p.time_s, Some(376.667));
        assert!((p.real_ms - 38.74).abs() < 1e-9, "{}", p.real_ms);
        assert_eq!((p.user_ms, p.sys_ms), (Some(120.0), Some(0.0)));
        assert!((p.stopped_ms.unwrap() - 39.153).abs() < 1e-9);
        assert_eq!(log.unrecognized, 0);
    }

    /// A JDK 6 G1 pause with per-worker details whose brackets span two lines, from GCViewer's
    /// samples (fixture gcviewer_jdk6_g1_to_space_overflow_details.log): every line is
    /// recognized, and the overflow is the pause's failure.
    #[test]
    fn g1_details_spanning_lines_are_recognized_and_to_space_overflow_is_a_failure() {
        let log = parse(
            "0.838: [GC pause (young) (to-space overflow), 0.04674512 secs]\n\
             \x20  [Parallel Time:  44.1 ms]\n\
             \x20     [Update RS (ms):  0.0  0.0\n\
             \x20      Avg:   0.0, Min:   0.0, Max:   0.0]\n\
             \x20        [Processed Buffers : 0 2\n\
             \x20         Sum: 2, Avg: 1, Min: 0, Max: 2]\n\
             \x20  [ 228M->102M(256M)]\n\
             \x20[Times: user=0.01 sys=0.05, real=0.05 secs]\n\
             this line is no part of a GC log\n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert_eq!(log.pauses[0].failure, Some("to-space exhausted"));
        assert_eq!(log.unrecognized, 1);
        assert_eq!(log.unrecognized_examples[0].0.line, 9);
        assert_eq!(
            log.unrecognized_examples[0].1,
            "this line is no part of a GC log"
        );
    }

    /// A ParNew promotion failure finished by CMS's foreground collection after a
    /// concurrent mode failure (GCViewer's sample, fixture
    /// gcviewer_jdk7_parnew_cms_promotion_failed_heapatgc.log): one serial pause of 130 s,
    /// named for the failure; the PrintHeapAtGC lines around it are recognized.
    #[test]
    fn a_concurrent_mode_failure_is_serial_and_named() {
        let log = parse(
            " concurrent-mark-sweep perm gen total 262912K, used 137329K [0x00007fc81c000000, 0x00007fc82c0c0000, 0x00007fc84c000000)\n\
             2014-03-12T21:18:26.029-0500: 13295.637: [GC2014-03-12T21:18:26.029-0500: 13295.637: [ParNew (0: promotion failure size = 11863)  (promotion failed)\n\
             Desired survivor size 208764928 bytes, new threshold 15 (max 15)\n\
             - age   1:  187860912 bytes,  187860912 total\n\
             : 6906246K->6819243K(6932288K), 2.7300470 secs]2014-03-12T21:18:28.759-0500: 13298.367: [CMS2014-03-12T21:18:31.372-0500: 13300.980: [CMS-concurrent-sweep: 16.244/20.725 secs] [Times: user=100.59 sys=4.74, real=20.72 secs]\n\
             \x20(concurrent mode failure): 23591969K->23342845K(25165824K), 127.2159440 secs] 30431568K->23342845K(32098112K), [CMS Perm : 137329K->97298K(262912K)], 129.9468220 secs] [Times: user=131.28 sys=0.07, real=129.93 secs]\n\
             Heap after GC invocations=1471 (full 100):\n",
        );
        assert_eq!(log.pauses.len(), 1);
        let p = &log.pauses[0];
        assert!(p.serial);
        assert_eq!(p.failure, Some("concurrent mode failure"));
        assert!((p.real_ms - 129_946.822).abs() < 1e-6);
        assert_eq!(p.at.line, 2);
        assert_eq!(log.unrecognized, 0);
    }

    /// CMS and G1 concurrent phases outside any pause are phases with their wall time.
    #[test]
    fn concurrent_phases_outside_pauses_keep_their_wall_time() {
        assert_eq!(
            phase_of("CMS-concurrent-mark: 0.521/0.549 secs"),
            Some(Phase {
                what: "CMS-concurrent-mark".into(),
                ms: 549.0
            })
        );
        assert_eq!(
            phase_of("GC concurrent-mark-end, 0.0123 secs"),
            Some(Phase {
                what: "GC concurrent-mark".into(),
                ms: 12.3
            })
        );
        assert_eq!(phase_of("CMS-concurrent-mark-start"), None);
    }

    /// `-XX:+PrintAdaptiveSizePolicy` writes into the collection's bracket, right after `GC`
    /// (GCViewer's JDK 6 sample, fixture gcviewer_jdk6_parallel_adaptivesizepolicy.log); the
    /// collection is read, named without the policy's text.
    #[test]
    fn adaptive_size_policy_output_inside_the_bracket_is_no_part_of_the_name() {
        let log = parse(
            "0.175: [GCAdaptiveSizePolicy::compute_survivor_space_size_and_thresh:  survived: 2721008  promoted: 13580768  overflow: trueAdaptiveSizeStart: 0.186 collection: 1 \n\
             PSAdaptiveSizePolicy::compute_generation_free_space: costs minor_time: 0.059538 major_cost: 0.000000\n\
             AdaptiveSizePolicy::survivor space sizes: collection: 1 (2752512, 2752512) -> (2752512, 2752512) \n\
             AdaptiveSizeStop: collection: 1 \n\
             \x20[PSYoungGen: 16420K->2657K(19136K)] 16420K->15919K(62848K), 0.0109211 secs] [Times: user=0.00 sys=0.00, real=0.01 secs] \n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert_eq!(log.pauses[0].what, "GC");
        assert!((log.pauses[0].real_ms - 10.9211).abs() < 1e-9);
        assert_eq!(log.unrecognized, 0);
    }

    /// Another program's words or garbage between the lines of a record are skipped; the
    /// collection is read whole (GCViewer's JDK 6 G1 sample, fixture
    /// gcviewer_jdk6_g1_verbose_nodetails_first60lines.log, with a line inserted).
    #[test]
    fn a_foreign_line_inside_a_record_leaves_it_whole() {
        let log = parse(
            "0.388: [GC pause (young) (initial-mark) 10080K->10080K(16M)0.390: [GC concurrent-mark-start]\n\
             B\u{12}q8 i[ v|G\n\
             [main] INFO starting the next batch\n\
             , 0.0013065 secs]\n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert!((log.pauses[0].real_ms - 1.3065).abs() < 1e-9);
        assert_eq!(log.unrecognized, 1, "{:?}", log.unrecognized_examples);
    }

    /// `-XX:+PrintSafepointStatistics` output of a JDK 8 JVM (as printed by Corretto 8 in the
    /// Java book samples found with the search tool) is recognized, not counted as unknown.
    #[test]
    fn safepoint_statistics_are_recognized() {
        let log = parse(
            "         vmop                    [threads: total initially_running wait_to_block]    [time: spin block sync cleanup vmop] page_trap_count\n\
             0.088: ForceSafepoint                   [       7          0              1    ]      [     0     0     0     0     0    ]  0\n\
             Total time for which application threads were stopped: 0.0022515 seconds\n",
        );
        assert_eq!(log.unrecognized, 0, "{:?}", log.unrecognized_examples);
    }
}
