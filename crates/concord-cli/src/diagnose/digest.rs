//! The diagnosis of a log, built as its pauses are read: each pause is judged and written out
//! (a text row, a JSON record) the moment no later line can change it, and only bounded
//! summaries are kept (counts and sums, the findings with their first pieces of evidence, the
//! concurrent phases by name, a thinned timeline for the page). Memory does not grow with the
//! number of pauses.

use std::collections::BTreeMap;
use std::io::{self, BufWriter, Stdout, Write};

use serde_json::{json, Value};

use super::html::{self, FindingRow, HeapPoint, HistogramBin, Mark, TimelinePoint};
use super::judge::{self, Context, Kind, Previous, Verdict};
use super::{Format, LineRef, Parsed, Pause};

/// The pause lengths counted in the summary, as 002's tables do.
pub const OVER_MS: [u32; 4] = [250, 500, 1000, 2000];
/// Places of evidence kept per finding.
const EVIDENCE_KEPT: usize = 20;
/// Stalled pauses listed in full (`--json`'s `stalled`); the rest are counted.
const STALLED_KEPT: usize = 1_000;
/// Points of the page's timeline and heap series at most.
const POINTS_KEPT: usize = 4_096;
/// Upper edges of the histogram's bins, ms (1-2-5 steps; the last bin is open).
const BIN_EDGES_MS: [f64; 19] = [
    0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4,
    5e4, 1e5,
];

/// Where the diagnosis is written as it is built.
pub enum Sink {
    /// The text table on standard output.
    Text(BufWriter<Stdout>),
    /// The JSON document on standard output.
    Json(BufWriter<Stdout>),
    /// Standard output failed: nothing more is written to it (the page still is).
    Closed,
}

/// Where the GC thread count used for the verdicts came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadsFrom {
    /// `--gc-threads`.
    Flag,
    /// The log.
    Log,
    /// Neither: 1 is assumed.
    Assumed,
}

impl ThreadsFrom {
    fn name(self) -> &'static str {
        match self {
            ThreadsFrom::Flag => "flag",
            ThreadsFrom::Log => "log",
            ThreadsFrom::Assumed => "assumed",
        }
    }
}

#[derive(Debug, Default)]
struct FindingTally {
    count: u64,
    evidence: Vec<LineRef>,
}

/// A series thinned to at most [`POINTS_KEPT`] points: each point stands for `stride`
/// consecutive items, merged by `merge`.
#[derive(Debug)]
struct Thinned<T> {
    points: Vec<T>,
    stride: u64,
    /// Items in the last point so far.
    filled: u64,
}

impl<T: Copy> Thinned<T> {
    fn new() -> Self {
        Thinned {
            points: Vec::new(),
            stride: 1,
            filled: 0,
        }
    }

    fn push(&mut self, item: T, merge: fn(T, T) -> T) {
        if self.filled > 0 && self.filled < self.stride {
            let last = self.points.last_mut().expect("a point is being filled");
            *last = merge(*last, item);
            self.filled += 1;
            return;
        }
        if self.points.len() == POINTS_KEPT {
            let halved = self
                .points
                .chunks(2)
                .map(|c| c[1..].iter().fold(c[0], |a, b| merge(a, *b)));
            self.points = halved.collect();
            self.stride *= 2;
            // The last point now holds whole strides: start a new one.
        }
        self.points.push(item);
        self.filled = 1;
    }
}

/// The diagnosis being built.
pub struct Digest {
    format: Format,
    files: Vec<String>,
    flag_threads: Option<u32>,
    sink: Sink,
    /// Whether anything was written to the sink yet.
    started: bool,
    pauses: u64,
    total_ms: f64,
    max_ms: f64,
    over: [u64; OVER_MS.len()],
    cpu_logged: bool,
    /// Long pauses with no finding, whose CPU times were logged: the collector's own work.
    long_own: u64,
    findings: BTreeMap<Kind, FindingTally>,
    stalled: Vec<Value>,
    stalled_count: u64,
    previous: Previous,
    timeline: Thinned<TimelinePoint>,
    heap: Thinned<HeapPoint>,
    histogram: [u64; BIN_EDGES_MS.len() + 1],
    /// Whether every pause so far had an uptime (the timeline's x is uptime).
    all_timed: bool,
    threads_used: (u32, ThreadsFrom),
}

impl Digest {
    /// A diagnosis of a log in `format` read from `files` (their names, oldest first), written
    /// to `sink`.
    pub fn new(format: Format, files: Vec<String>, flag_threads: Option<u32>, sink: Sink) -> Self {
        Digest {
            format,
            files,
            flag_threads,
            sink,
            started: false,
            pauses: 0,
            total_ms: 0.0,
            max_ms: 0.0,
            over: [0; OVER_MS.len()],
            cpu_logged: false,
            long_own: 0,
            findings: BTreeMap::new(),
            stalled: Vec::new(),
            stalled_count: 0,
            previous: Previous::default(),
            timeline: Thinned::new(),
            heap: Thinned::new(),
            histogram: [0; BIN_EDGES_MS.len() + 1],
            all_timed: true,
            threads_used: (1, ThreadsFrom::Assumed),
        }
    }

    /// `file:line` of a place in the log.
    fn place(&self, at: LineRef) -> String {
        let file = self.files.get(at.file as usize).map_or("?", String::as_str);
        format!("{file}:{}", at.line)
    }

    fn start(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.started, true) {
            return Ok(());
        }
        let describe = self.format.describe();
        let files = self.files.join(", ");
        match &mut self.sink {
            Sink::Text(out) => {
                writeln!(out, "{files}: {describe}")?;
                writeln!(
                    out,
                    "{:>6} {:>10} {:>10} {:>8} {:>8} {:>9} {:>10} {:>7}  verdict",
                    "id", "time_s", "real_ms", "user_ms", "sys_ms", "ttsp_ms", "stopped_ms", "line"
                )
            }
            Sink::Json(out) => write!(
                out,
                "{{\n  \"format\": {},\n  \"records\": [",
                json!(self.format.name())
            ),
            Sink::Closed => Ok(()),
        }
    }

    /// Standard output failed: write nothing more to it.
    pub fn close_output(&mut self) {
        self.sink = Sink::Closed;
    }

    /// Judges a settled pause, writes it out and adds it to the summaries; `log_threads` is
    /// the GC thread count the log has stated so far.
    pub fn pause(&mut self, pause: Pause, log_threads: Option<u32>) -> io::Result<()> {
        self.start()?;
        self.threads_used = match (self.flag_threads, log_threads) {
            (Some(n), _) => (n, ThreadsFrom::Flag),
            (None, Some(n)) => (n, ThreadsFrom::Log),
            (None, None) => (1, ThreadsFrom::Assumed),
        };
        let verdict = judge::judge(&pause, self.threads_used.0, self.previous);
        self.previous = Previous {
            full_at: judge::is_full(&pause).then_some(pause.time_s),
        };
        let length = judge::length_ms(&pause);
        self.pauses += 1;
        self.total_ms += length;
        self.max_ms = self.max_ms.max(length);
        for (count, ms) in self.over.iter_mut().zip(OVER_MS) {
            *count += u64::from(length > f64::from(ms));
        }
        self.cpu_logged |= pause.user_ms.is_some();
        if verdict.kinds.is_empty() && pause.user_ms.is_some() && length > f64::from(OVER_MS[0]) {
            self.long_own += 1;
        }
        for kind in &verdict.kinds {
            let tally = self.findings.entry(*kind).or_default();
            tally.count += 1;
            if tally.evidence.len() < EVIDENCE_KEPT {
                tally.evidence.push(pause.at);
            }
        }
        self.record_stall(&pause, &verdict);
        self.add_to_page(&pause, &verdict, length);
        self.write_pause(&pause, &verdict)
    }

    fn record_stall(&mut self, p: &Pause, verdict: &Verdict) {
        let Some(s) = &verdict.stall else { return };
        self.stalled_count += 1;
        if self.stalled.len() < STALLED_KEPT {
            let place = self.place(p.at);
            self.stalled.push(json!({
                "id": p.id,
                "time_s": p.time_s,
                "line": place,
                "real_ms": p.real_ms,
                "user_ms": p.user_ms,
                "sys_ms": p.sys_ms,
                "causes": s.causes.iter().map(|c| c.name()).collect::<Vec<_>>(),
                "reason": s.reason,
            }));
        }
    }

    fn add_to_page(&mut self, p: &Pause, verdict: &Verdict, length: f64) {
        self.all_timed &= p.time_s.is_some();
        let x = p.time_s.unwrap_or(self.pauses as f64 - 1.0);
        let mark = if verdict.stall.is_some() {
            Mark::Stall
        } else if !verdict.kinds.is_empty() {
            Mark::Finding
        } else {
            Mark::Ok
        };
        if length.is_finite() {
            self.timeline.push(
                TimelinePoint {
                    x,
                    ms: length,
                    mark,
                },
                // A thinned point is its stretch's longest pause, in its most severe colour.
                |a, b| TimelinePoint {
                    mark: a.mark.max(b.mark),
                    ..if b.ms > a.ms { b } else { a }
                },
            );
            let bin = BIN_EDGES_MS
                .iter()
                .position(|edge| length < *edge)
                .unwrap_or(BIN_EDGES_MS.len());
            self.histogram[bin] += 1;
        }
        if let Some(h) = p.heap {
            let point = HeapPoint {
                x,
                before_kb: h.before_kb,
                after_kb: h.after_kb,
                capacity_kb: h.capacity_kb,
            };
            // A thinned point shows the fullest heap before and after of its stretch.
            self.heap.push(point, |a, b| HeapPoint {
                x: b.x,
                before_kb: a.before_kb.max(b.before_kb),
                after_kb: a.after_kb.max(b.after_kb),
                capacity_kb: b.capacity_kb,
            });
        }
    }

    fn write_pause(&mut self, p: &Pause, verdict: &Verdict) -> io::Result<()> {
        let place = self.place(p.at);
        match &mut self.sink {
            Sink::Text(out) => {
                let said = match &verdict.stall {
                    Some(s) => format!(
                        "STALL ({}): {}",
                        s.causes
                            .iter()
                            .map(|c| c.name())
                            .collect::<Vec<_>>()
                            .join(", "),
                        s.reason
                    ),
                    None if p.user_ms.is_none() && p.stopped_ms.is_none() => {
                        "no CPU times".to_string()
                    }
                    None => "ok".to_string(),
                };
                let others: Vec<&str> = verdict
                    .kinds
                    .iter()
                    .filter(|k| !k.os_stall())
                    .map(|k| k.name())
                    .collect();
                let others = if others.is_empty() {
                    String::new()
                } else {
                    format!(" [{}]", others.join(", "))
                };
                writeln!(
                    out,
                    "{:>6} {:>10} {:>10.3} {:>8} {:>8} {:>9} {:>10} {:>7}  {said}{others}",
                    p.id,
                    cell(p.time_s, 3),
                    p.real_ms,
                    cell(p.user_ms, 0),
                    cell(p.sys_ms, 0),
                    cell(p.time_to_safepoint_ms, 3),
                    cell(p.stopped_ms, 3),
                    p.at.line,
                )
            }
            Sink::Json(out) => {
                let record = json!({
                    "id": p.id,
                    "time_s": p.time_s,
                    "line": place,
                    "what": p.what,
                    "real_ms": p.real_ms,
                    "user_ms": p.user_ms,
                    "sys_ms": p.sys_ms,
                    "time_to_safepoint_ms": p.time_to_safepoint_ms,
                    "stopped_ms": p.stopped_ms,
                    "heap_before_kb": p.heap.map(|h| h.before_kb),
                    "heap_after_kb": p.heap.map(|h| h.after_kb),
                    "heap_capacity_kb": p.heap.map(|h| h.capacity_kb),
                    "stalled": verdict.stall.is_some(),
                    "findings": verdict.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
                });
                let comma = if self.pauses > 1 { "," } else { "" };
                write!(out, "{comma}\n    ")?;
                serde_json::to_writer(&mut *out, &record).map_err(io::Error::from)
            }
            Sink::Closed => Ok(()),
        }
    }

    fn context(&self, parsed: &Parsed) -> Context {
        Context {
            jdk8: self.format == Format::Jdk8,
            concord: parsed.concord,
        }
    }

    /// Advice for what was seen, one item per finding.
    fn advice(&self, context: Context, parsed: &Parsed) -> Vec<String> {
        let mut advice = Vec::new();
        if !self.cpu_logged {
            advice.push(format!(
                "the log has no user/sys times, so off-CPU waits cannot be told apart: {}",
                match self.format {
                    Format::Concord => "this Concord log has no [gc,cpu] lines",
                    Format::Unified => "log them with -Xlog:gc*,gc+cpu,safepoint",
                    Format::Jdk8 =>
                        "log them with -XX:+PrintGCDetails (JDK 6 and later print [Times: ...])",
                }
            ));
        }
        let mut said_log_write = false;
        for kind in self.findings.keys() {
            // Off-CPU and outside-collection share their advice.
            if matches!(kind, Kind::OffCpu | Kind::OutsideCollection) {
                if said_log_write {
                    continue;
                }
                said_log_write = true;
            }
            advice.push(format!(
                "{}: {}",
                kind.name(),
                judge::advice(*kind, context)
            ));
        }
        if parsed.allocation_stalls.count > 0 {
            advice.push(
                "allocation stalls: the collector did not free memory as fast as the \
                 application allocated; raise -Xmx (or lower -XX:SoftMaxHeapSize less), or give \
                 ZGC more concurrent threads (-XX:ConcGCThreads)"
                    .to_string(),
            );
        }
        if self.long_own > 0 && self.cpu_logged {
            advice.push(format!(
                "{} pause(s) over {} ms with CPU time to match are the collector's own work: a \
                 smaller young generation or more GC threads shortens them",
                self.long_own, OVER_MS[0]
            ));
        }
        if advice.is_empty() {
            advice.push("no pause shows an OS stall or any other finding".to_string());
        }
        advice
    }

    fn finding_rows(&self, context: Context) -> Vec<FindingRow> {
        self.findings
            .iter()
            .map(|(kind, tally)| FindingRow {
                kind: kind.name().to_string(),
                os_stall: kind.os_stall(),
                count: tally.count,
                summary: kind.summary(),
                evidence: tally.evidence.iter().map(|at| self.place(*at)).collect(),
                advice: judge::advice(*kind, context),
            })
            .collect()
    }

    /// Ends the diagnosis: writes the summary (and the page to `html`, if asked). `parsed` is
    /// what the parser holds at the end (thread count, unrecognized lines).
    pub fn finish(
        mut self,
        parsed: &Parsed,
        html_path: Option<&std::path::Path>,
    ) -> anyhow::Result<()> {
        let context = self.context(parsed);
        let advice = self.advice(context, parsed);
        let rows = self.finding_rows(context);
        let unrecognized: Vec<(String, String)> = parsed
            .unrecognized_examples
            .iter()
            .map(|(at, text)| (self.place(*at), text.clone()))
            .collect();
        let page = html_path.map(|_| self.page(&rows, &advice, parsed));
        let first_stall = parsed.allocation_stalls.first.map(|at| self.place(at));
        // Standard output may be gone (`| head`): the page is written all the same, and the
        // failed write is reported after it.
        let mut written = self.start();
        if written.is_ok() {
            written = self.write_summary(parsed, &rows, &advice, &unrecognized, first_stall);
        }
        if let (Some(path), Some(page)) = (html_path, page) {
            let text = html::render(&page)?;
            crate::experiment::results::write_atomic(path, text.as_bytes())
                .map_err(|e| anyhow::anyhow!("--html: cannot write {}: {e}", path.display()))?;
        }
        written.map_err(|e| crate::console::StdoutError::from(e).into())
    }

    /// The summary after the pauses: totals, phases, unrecognized lines, findings, advice.
    fn write_summary(
        &mut self,
        parsed: &Parsed,
        rows: &[FindingRow],
        advice: &[String],
        unrecognized: &[(String, String)],
        first_stall: Option<String>,
    ) -> io::Result<()> {
        let (threads, from) = self.threads_used;
        match &mut self.sink {
            Sink::Text(out) => {
                let from = match from {
                    ThreadsFrom::Flag => "from --gc-threads",
                    ThreadsFrom::Log => "from the log",
                    ThreadsFrom::Assumed => "not in the log, assumed; --gc-threads N to set",
                };
                writeln!(out)?;
                writeln!(
                    out,
                    "{} pauses, total {:.1} ms, max {:.1} ms; {} OS stall(s); GC threads {threads} ({from})",
                    self.pauses, self.total_ms, self.max_ms, self.stalled_count
                )?;
                let over: Vec<String> = OVER_MS
                    .iter()
                    .zip(self.over)
                    .map(|(ms, n)| format!(">{ms} ms: {n}"))
                    .collect();
                writeln!(out, "{}", over.join("  "))?;
                if !parsed.phases.is_empty() {
                    let phases: Vec<String> = parsed
                        .phases
                        .iter()
                        .map(|(what, t)| format!("{what} ×{} {:.1} ms", t.count, t.total_ms))
                        .collect();
                    writeln!(out, "concurrent phases (not pauses): {}", phases.join("; "))?;
                }
                let stalls = parsed.allocation_stalls;
                if let Some(first) = &first_stall {
                    writeln!(
                        out,
                        "allocation stalls (threads waited for memory, not pauses): {} \
                         ×, {:.1} ms in all, longest {:.1} ms, the first at {}",
                        stalls.count, stalls.total_ms, stalls.max_ms, first
                    )?;
                }
                if parsed.unrecognized > 0 {
                    writeln!(
                        out,
                        "{} line(s) not recognized, not read; the first: {}",
                        parsed.unrecognized,
                        unrecognized
                            .iter()
                            .map(|(at, text)| format!("{at} `{text}`"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )?;
                }
                if !rows.is_empty() {
                    writeln!(out, "findings:")?;
                    for row in rows {
                        let more = if row.count as usize > row.evidence.len() {
                            ", …"
                        } else {
                            ""
                        };
                        writeln!(
                            out,
                            "- {} ×{}: {} (at {}{more})",
                            row.kind,
                            row.count,
                            row.summary,
                            row.evidence.join(", ")
                        )?;
                    }
                }
                writeln!(out, "advice:")?;
                for a in advice {
                    writeln!(out, "- {a}")?;
                }
                out.flush()?;
            }
            Sink::Json(out) => {
                let over: serde_json::Map<String, Value> = OVER_MS
                    .iter()
                    .zip(self.over)
                    .map(|(ms, n)| (ms.to_string(), json!(n)))
                    .collect();
                let findings: Vec<Value> = rows
                    .iter()
                    .map(|r| {
                        json!({
                            "kind": r.kind,
                            "os_stall": r.os_stall,
                            "count": r.count,
                            "summary": r.summary,
                            "lines": r.evidence,
                            "advice": r.advice,
                        })
                    })
                    .collect();
                let phases: Vec<Value> = parsed
                    .phases
                    .iter()
                    .map(|(what, t)| {
                        json!({"what": what, "count": t.count, "total_ms": t.total_ms, "max_ms": t.max_ms})
                    })
                    .collect();
                let stalls = parsed.allocation_stalls;
                let tail = json!({
                    "advice": advice,
                    "allocation_stalls": {
                        "count": stalls.count,
                        "total_ms": stalls.total_ms,
                        "max_ms": stalls.max_ms,
                        "first_line": first_stall,
                    },
                    "concurrent_phases": phases,
                    "files": self.files,
                    "findings": findings,
                    "gc_threads": threads,
                    "gc_threads_from": from.name(),
                    "over_ms": over,
                    "pause_max_ms": self.max_ms,
                    "pause_total_ms": self.total_ms,
                    "pauses": self.pauses,
                    "stalled": self.stalled,
                    "stalled_count": self.stalled_count,
                    "unrecognized_lines": parsed.unrecognized,
                    "unrecognized_examples": unrecognized
                        .iter()
                        .map(|(at, text)| json!({"line": at, "text": text}))
                        .collect::<Vec<_>>(),
                });
                let tail = serde_json::to_string_pretty(&tail).map_err(io::Error::from)?;
                let close = if self.pauses > 0 { "\n  " } else { "" };
                write!(
                    out,
                    "{close}],\n{}\n",
                    tail.strip_prefix("{\n").unwrap_or(&tail)
                )?;
                out.flush()?;
            }
            Sink::Closed => {}
        }
        Ok(())
    }

    fn page(&self, rows: &[FindingRow], advice: &[String], parsed: &Parsed) -> html::Page {
        let mut summary = vec![
            ("pauses".to_string(), self.pauses.to_string()),
            (
                "total pause".to_string(),
                format!("{:.1} ms", self.total_ms),
            ),
            (
                "longest pause".to_string(),
                format!("{:.1} ms", self.max_ms),
            ),
        ];
        for (ms, n) in OVER_MS.iter().zip(self.over) {
            summary.push((format!("pauses over {ms} ms"), n.to_string()));
        }
        let (threads, from) = self.threads_used;
        summary.push((
            "GC threads".to_string(),
            format!("{threads} ({})", from.name()),
        ));
        summary.push(("OS stalls".to_string(), self.stalled_count.to_string()));
        for (what, t) in &parsed.phases {
            summary.push((
                format!("concurrent: {what}"),
                format!("{} phases, {:.1} ms in all", t.count, t.total_ms),
            ));
        }
        summary.push((
            "lines not recognized".to_string(),
            parsed.unrecognized.to_string(),
        ));
        let first_bin = self.histogram.iter().position(|n| *n > 0).unwrap_or(0);
        let last_bin = self.histogram.iter().rposition(|n| *n > 0).unwrap_or(0);
        let histogram = (first_bin..=last_bin)
            .map(|i| HistogramBin {
                lo_ms: if i == 0 { 0.0 } else { BIN_EDGES_MS[i - 1] },
                hi_ms: BIN_EDGES_MS.get(i).copied().unwrap_or(f64::INFINITY),
                count: self.histogram[i],
            })
            .collect();
        html::Page {
            log: self.files.join(", "),
            format: self.format.describe().to_string(),
            summary,
            x_label: if self.all_timed {
                "uptime (s)"
            } else {
                "pause number"
            }
            .to_string(),
            timeline: self.timeline.points.clone(),
            heap: self.heap.points.clone(),
            histogram,
            findings: rows.to_vec(),
            advice: advice.to_vec(),
        }
    }
}

/// `Some(12.3)` as `12.3` with `decimals`, `None` as `-`.
fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".to_string(), |v| format!("{v:.decimals$}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thinned_series_stays_bounded_and_keeps_the_worst_of_each_stretch() {
        let mut series = Thinned::new();
        let max = |a: f64, b: f64| a.max(b);
        let n = 10 * POINTS_KEPT + 3;
        for i in 0..n {
            let v = if i == 12_345 { 1e9 } else { i as f64 };
            series.push(v, max);
        }
        assert!(
            series.points.len() <= POINTS_KEPT,
            "{}",
            series.points.len()
        );
        assert!(series.points.len() > POINTS_KEPT / 4);
        assert!(series.points.contains(&1e9), "the spike survives thinning");
        assert_eq!(*series.points.last().unwrap(), (n - 1) as f64);
        // Every item is in exactly one point: the strides add up.
        let full = (series.points.len() as u64 - 1) * series.stride + series.filled;
        assert_eq!(full, n as u64);
    }
}
