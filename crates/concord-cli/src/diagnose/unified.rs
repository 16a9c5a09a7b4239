//! Reads unified-logging GC logs: HotSpot 9+ `-Xlog:gc*` (with the `gc+cpu` and `safepoint`
//! tags when they were logged) and Concord's own `--gc-log`, which is one instance of the
//! format.
//!
//! A pause is a message `GC(<id>) Pause <what> … <duration>` whose last word is a duration
//! (`9.696ms`); `gc,start` lines end with the cause instead and are not counted twice. JDK 25's
//! generational ZGC writes the generation before it (`GC(3) Y: Pause Mark Start (Major)
//! 0.012ms`, `O:` for the old one; `y:` and `o:` in a minor collection). Lines may carry any decorations, or none
//! (`-Xlog:gc*:file=gc.log:none`): the message is then the whole line, with no uptime. The
//! `gc,cpu` line `GC(<id>) User=0.01s Sys=0.00s Real=0.01s` gives the pause's CPU times, and
//! the `safepoint` line logged after a pause gives its time to safepoint and the whole time
//! the threads were stopped.

use super::{attach_stop, gc_threads_in, seconds_ms, stop_of, LineRef, Parsed, Pause, Phase};
use crate::hotspot::{parse_duration_ms, split_decorations, uptime_from_decorations};

/// The pauses and GC thread count of a unified log (no pauses: not such a log).
#[cfg(test)]
pub fn parse(text: &str) -> Parsed {
    let mut parser = Parser::default();
    for (line, at) in super::numbered_lines(text) {
        parser.feed(line, at);
    }
    parser.log
}

/// A unified log read line by line.
#[derive(Debug, Default)]
pub struct Parser {
    log: Parsed,
    /// The log says the Serial collector wrote it (`Using Serial`).
    serial_collector: bool,
    /// A failure logged inside a collection before its pause line (`GC(5) To-space
    /// exhausted`), by collection id.
    failure: Option<(u64, &'static str)>,
    /// A line of the `gc` tags (`GC(n) …`) was seen.
    gc_lines: bool,
    /// The log has safepoints but no `gc` tags (`-Xlog:safepoint`): its collections are read
    /// from the safepoints of collecting VM operations.
    safepoints_only: bool,
    /// JDK 9-16's `Entering safepoint region: <operation>`, until its stop is logged.
    entering: Option<String>,
    /// The collection whose `gc,start` line was logged last and whose pause line was not yet.
    started: Option<u64>,
    /// A collection started inside another (JDK 9-11 Serial: the full collection GC(n+1) run
    /// inside the failed young one GC(n)): (outer, inner), then what the inner one was.
    nested: Option<(u64, u64)>,
    inner: Option<String>,
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
        let (decorations, message) = split_decorations(line.trim());
        if !recognized(&decorations, line, message) {
            self.log.unrecognized_line(at, line);
            return;
        }
        let log = &mut self.log;
        log.note_gc_threads(gc_threads_in(message));
        if !self.gc_lines && message.starts_with("GC(") {
            self.gc_lines = true;
            self.safepoints_only = false;
        }
        if let Some(collector) = message.strip_prefix("Using ") {
            log.concord |= collector.starts_with("Concord");
            self.serial_collector |= collector.trim() == "Serial";
        }
        if let Some(id) = start_line(message) {
            if self.started == Some(id.wrapping_sub(1)) {
                self.nested = Some((id - 1, id));
            }
            self.started = Some(id);
        }
        if let Some(mut pause) = pause_line(&decorations, message, at) {
            // The world stopped once for a nested collection: its time is inside the outer
            // one's, which names it.
            match self.nested {
                Some((outer, inner)) if inner == pause.id => {
                    self.inner = Some(format!("{} {:.3}ms", pause.what, pause.real_ms));
                    self.started = Some(outer);
                    return;
                }
                Some((outer, _)) if outer == pause.id => {
                    if let Some(inner) = self.inner.take() {
                        pause.what = format!("{} (with {inner} inside)", pause.what);
                    }
                    self.nested = None;
                }
                _ => {}
            }
            self.started = None;
            pause.serial = self.serial_collector;
            if let Some((_, failure)) = self.failure.take().filter(|(id, _)| *id == pause.id) {
                pause.failure.get_or_insert(failure);
            }
            log.push(pause);
        } else if let Some((id, user_ms, sys_ms)) = cpu_line(message) {
            if let Some(pause) = log.pauses.iter_mut().rev().find(|p| p.id == id) {
                pause.user_ms = Some(user_ms);
                pause.sys_ms = Some(sys_ms);
            }
        } else if let Some(mut stop) = stop_of(message) {
            if stop.operation.is_none() {
                stop.operation = self.entering.take();
            }
            if !self.gc_lines && stop.operation.as_deref().is_some_and(super::collects) {
                self.safepoints_only = true;
            }
            if self.safepoints_only {
                if let Some(mut pause) = safepoint_pause(&decorations, stop, at) {
                    pause.id = log.found;
                    log.push(pause);
                }
            } else {
                attach_stop(&mut log.pauses, stop);
            }
        } else if let Some(operation) = message.strip_prefix("Entering safepoint region: ") {
            self.entering = Some(operation.trim().to_string());
        } else if let Some(phase) = phase_line(message) {
            log.add_phase(phase);
        } else if let Some(ms) = allocation_stall(message) {
            let stalls = &mut log.allocation_stalls;
            stalls.count += 1;
            stalls.total_ms += ms;
            stalls.max_ms = stalls.max_ms.max(ms);
            stalls.first.get_or_insert(at);
        } else if let Some((id, rest)) = gc_id(message) {
            let rest = rest.trim();
            if rest.starts_with("To-space exhausted") || rest.starts_with("Evacuation Failure") {
                self.failure = Some((id, "to-space exhausted"));
            }
        }
    }
}

/// Whether a line is unified logging: decorations that are single words (`[0.123s]`,
/// `[info]`, `[gc,heap     ]`, `[2024-01-01T10:00:00.000+0000]`), or, in a log written without
/// decorations, a message of the `gc` tags (`GC(3) …`) or of the JVM's start (`Using G1`,
/// `Heap Region Size: 1M`).
fn recognized(decorations: &[&str], line: &str, message: &str) -> bool {
    if !decorations.is_empty() {
        return decorations
            .iter()
            .all(|d| !d.is_empty() && !d.contains(char::is_whitespace));
    }
    const MESSAGES: [&str; 6] = [
        "GC(",
        "Using ",
        "Safepoint ",
        "Initializing ",
        "Allocation Stall ",
        "Heap",
    ];
    if MESSAGES.iter().any(|m| message.starts_with(m)) {
        return true;
    }
    // The heap printed at exit (`gc+heap+exit`), indented.
    if line.starts_with(' ') {
        return true;
    }
    // `Key: value`, the key words of letters, digits and a few signs.
    message.split_once(": ").is_some_and(|(key, _)| {
        !key.is_empty()
            && key.len() <= 48
            && key.starts_with(|c: char| c.is_ascii_uppercase())
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " ()+-/_.".contains(c))
    })
}

/// A generational ZGC message without its generation (`Y: `, `O: `, `y: `, `o: `).
fn without_generation(rest: &str) -> &str {
    match rest.split_once(": ") {
        Some(("Y" | "O" | "y" | "o", message)) => message,
        _ => rest,
    }
}

/// `GC(7) Pause Young (Allocation Failure) 77M->8M(248M) 9.696ms` as a pause.
fn pause_line(decorations: &[&str], message: &str, at: LineRef) -> Option<Pause> {
    let (id, rest) = gc_id(message)?;
    let rest = without_generation(rest.trim());
    if !rest.starts_with("Pause ") {
        return None;
    }
    let (head, duration) = rest.rsplit_once(' ')?;
    let real_ms = parse_duration_ms(duration)?;
    // The description without the heap sizes (`77M->8M(248M)`).
    let (what, heap) = match head.rsplit_once(' ') {
        Some((what, sizes)) if sizes.contains("->") => (what, super::heap_change(sizes)),
        _ => (head, None),
    };
    let what = what.trim();
    let failure = if what.contains("(Evacuation Failure)") {
        Some("evacuation failure")
    } else if what.starts_with("Pause Degenerated") {
        Some("degenerated")
    } else {
        None
    };
    let mut pause = Pause::new(what.to_string(), real_ms, at);
    pause.id = id;
    pause.time_s = uptime_from_decorations(decorations);
    pause.heap = heap;
    pause.failure = failure;
    Some(pause)
}

/// `Allocation Stall (main) 3.899ms` (ZGC; JDK 21+ writes the collection's id before it) as
/// the stall's length.
fn allocation_stall(message: &str) -> Option<f64> {
    let rest = gc_id(message).map_or(message, |(_, rest)| rest.trim());
    let rest = without_generation(rest);
    if !rest.starts_with("Allocation Stall") {
        return None;
    }
    parse_duration_ms(rest.rsplit_once(' ')?.1)
}

/// The id of a `gc,start` line (`GC(3) Pause Full (Allocation Failure)`, no duration).
fn start_line(message: &str) -> Option<u64> {
    let (id, rest) = gc_id(message)?;
    let rest = without_generation(rest.trim());
    let last = rest.rsplit(' ').next()?;
    (rest.starts_with("Pause ") && parse_duration_ms(last).is_none()).then_some(id)
}

/// `GC(3) Concurrent Mark 12.345ms` (G1, ZGC; `Concurrent marking` of Shenandoah) as a phase.
fn phase_line(message: &str) -> Option<Phase> {
    let (_, rest) = gc_id(message)?;
    let rest = without_generation(rest.trim());
    if !rest.starts_with("Concurrent ") {
        return None;
    }
    let (head, duration) = rest.rsplit_once(' ')?;
    let ms = parse_duration_ms(duration)?;
    let what = match head.rsplit_once(' ') {
        Some((what, sizes)) if sizes.contains("->") => what,
        _ => head,
    };
    Some(Phase {
        what: what.trim().to_string(),
        ms,
    })
}

/// A collecting VM operation's safepoint as a pause (a log of the `safepoint` tag alone): the
/// operation's time at the safepoint as its real time (the stop less the time to reach it in
/// JDK 9-16's words), with the stop and time to safepoint; ids count these pauses.
fn safepoint_pause(decorations: &[&str], stop: super::Stop, at: LineRef) -> Option<Pause> {
    let operation = stop.operation.filter(|op| super::collects(op))?;
    let real_ms = stop
        .at_safepoint_ms
        .unwrap_or(stop.stopped_ms - stop.time_to_safepoint_ms.unwrap_or(0.0))
        .max(0.0);
    let mut pause = Pause::new(format!("Safepoint \"{operation}\""), real_ms, at);
    pause.time_s = uptime_from_decorations(decorations);
    pause.stopped_ms = Some(stop.stopped_ms);
    pause.time_to_safepoint_ms = stop.time_to_safepoint_ms;
    Some(pause)
}

/// `GC(3) User=0.01s Sys=0.00s Real=0.01s` as (id, user ms, sys ms).
fn cpu_line(message: &str) -> Option<(u64, f64, f64)> {
    let (id, rest) = gc_id(message)?;
    let mut user = None;
    let mut sys = None;
    for word in rest.split_whitespace() {
        if let Some(v) = word.strip_prefix("User=") {
            user = seconds_ms(v.strip_suffix('s')?);
        } else if let Some(v) = word.strip_prefix("Sys=") {
            sys = seconds_ms(v.strip_suffix('s')?);
        }
    }
    Some((id, user?, sys?))
}

/// `GC(<id>) rest` as (id, rest).
fn gc_id(message: &str) -> Option<(u64, &str)> {
    let (id, rest) = message.strip_prefix("GC(")?.split_once(')')?;
    Some((id.parse().ok()?, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pause_cpu_and_safepoint_lines_make_one_pause_each() {
        let log = parse(
            "[0.008s][info][gc,init] Parallel Workers: 2\n\
             [0.969s][info][gc,start    ] GC(0) Pause Young (Allocation Failure)\n\
             [0.983s][info][gc          ] GC(0) Pause Young (Allocation Failure) 16M->3M(61M) 13.953ms\n\
             [0.983s][info][gc,cpu      ] GC(0) User=0.02s Sys=0.01s Real=0.01s\n\
             [0.983s][info][safepoint   ] Safepoint \"ParallelGCFailedAllocation\", Time since last: 941269790 ns, Reaching safepoint: 5298 ns, Cleanup: 150324 ns, At safepoint: 14091502 ns, Total: 14247124 ns\n\
             [1.000s][info][safepoint   ] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 7000 ns, Cleanup: 1 ns, At safepoint: 1 ns, Total: 9000000 ns\n\
             [1.100s][info][gc          ] GC(1) Pause Young (Allocation Failure) 16M->3M(61M) 12.000ms\n\
             [1.100s][info][safepoint   ] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 7000 ns, Cleanup: 1 ns, At safepoint: 1 ns, Total: 9000000 ns\n",
        );
        assert_eq!(log.gc_threads, Some(2));
        assert_eq!(log.pauses.len(), 2);
        // A 9 ms safepoint cannot have held GC(1)'s 12 ms collection.
        assert_eq!(log.pauses[1].stopped_ms, None);
        let p = &log.pauses[0];
        assert_eq!(
            (p.id, p.what.as_str()),
            (0, "Pause Young (Allocation Failure)")
        );
        assert_eq!(p.time_s, Some(0.983));
        let heap = p.heap.unwrap();
        assert_eq!(
            (heap.before_kb, heap.after_kb, heap.capacity_kb),
            (16 << 10, 3 << 10, 61 << 10)
        );
        assert_eq!(
            (p.real_ms, p.user_ms, p.sys_ms),
            (13.953, Some(20.0), Some(10.0))
        );
        assert_eq!(p.time_to_safepoint_ms, Some(0.005298));
        assert_eq!(p.stopped_ms, Some(14.247124));
    }

    #[test]
    fn pauses_without_sizes_count_and_other_lines_do_not() {
        let log = parse(
            "[1.0s][info][gc] GC(4) Pause Remark 1.500ms\n\
             [1.1s][info][gc] GC(4) Concurrent Mark Cycle 12.345ms\n\
             [1.2s][info][gc,phases] GC(5) Marking Phase 6.360ms\n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert_eq!(log.pauses[0].what, "Pause Remark");
    }

    /// Real lines of JDK 25's generational ZGC (`-XX:+UseZGC -Xlog:gc*`): the generation before
    /// each pause; its concurrent phases are no pauses.
    #[test]
    fn generational_zgc_pauses_carry_their_generation() {
        let log = parse(
            "[0.152s][info][gc,phases   ] GC(0) Y: Pause Mark Start (Major) 0.012ms\n\
             [0.160s][info][gc,phases   ] GC(0) Y: Pause Mark End 0.007ms\n\
             [0.162s][info][gc,phases   ] GC(0) Y: Pause Relocate Start 0.004ms\n\
             [0.164s][info][gc,phases   ] GC(0) O: Concurrent Mark 0.166ms\n\
             [0.164s][info][gc,phases   ] GC(0) O: Pause Mark End 0.004ms\n\
             [0.300s][info][gc,phases   ] GC(1) y: Pause Mark Start 0.017ms\n",
        );
        let got: Vec<(&str, f64)> = log
            .pauses
            .iter()
            .map(|p| (p.what.as_str(), p.real_ms))
            .collect();
        assert_eq!(
            got,
            [
                ("Pause Mark Start (Major)", 0.012),
                ("Pause Mark End", 0.007),
                ("Pause Relocate Start", 0.004),
                ("Pause Mark End", 0.004),
                ("Pause Mark Start", 0.017)
            ]
        );
        assert_eq!(log.pauses[0].time_s, Some(0.152));
    }

    /// Real lines of a log written with decorations `none` (`-Xlog:gc*:file=gc.log:none`, JDK
    /// 17 G1 and JDK 25 ZGC): the whole line is the message, and there is no uptime.
    #[test]
    fn a_log_without_decorations_is_read_without_times() {
        let log = parse(
            "GC(0) Pause Young (Normal) (G1 Evacuation Pause)\n\
             GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->3M(64M) 5.140ms\n\
             GC(0) User=0.00s Sys=0.00s Real=0.01s\n\
             GC(1) Major Collection (Warmup)\n\
             GC(1) Using 1 Workers for Young Generation\n\
             GC(1) Y: Pause Mark Start (Major) 0.016ms\n\
             GC(1) Y: Concurrent Mark 14.544ms\n",
        );
        let got: Vec<(u64, &str, Option<f64>)> = log
            .pauses
            .iter()
            .map(|p| (p.id, p.what.as_str(), p.time_s))
            .collect();
        assert_eq!(
            got,
            [
                (0, "Pause Young (Normal) (G1 Evacuation Pause)", None),
                (1, "Pause Mark Start (Major)", None)
            ]
        );
        assert_eq!(log.pauses[0].user_ms, Some(0.0));
        assert_eq!(log.gc_threads, Some(1));
    }

    /// Real lines of JDK 17 logs (fixtures in tests/fixtures/diagnose/real/jdk17): the Serial
    /// collector's pauses are serial; phases, ZGC's allocation stalls and the lines of a log
    /// without decorations are read; a line of no log is counted with where it is.
    #[test]
    fn collector_phases_stalls_and_unrecognized_lines() {
        let log = parse(
            "[0.003s][info][gc] Using Serial\n\
             [0.003s][info][gc,init] CPUs: 2 total, 2 available\n\
             [0.078s][info][gc          ] GC(0) Pause Young (Allocation Failure) 17M->3M(61M) 2.752ms\n\
             [gc,phases   ] GC(1) Concurrent Mark 2.527ms\n\
             Initializing The Z Garbage Collector\n\
             GC(4) Garbage Collection (Allocation Stall)\n\
             Allocation Stall (main) 3.899ms\n\
             Allocation Stall (main) 3.414ms\n\
             \x20ZHeap           used 48M, capacity 64M, max capacity 64M\n\
             Exception in thread \"main\" java.lang.OutOfMemoryError: Java heap space\n",
        );
        assert_eq!(log.pauses.len(), 1);
        assert!(log.pauses[0].serial);
        assert_eq!(log.pauses[0].at.line, 3);
        let phases: Vec<(&str, u64, f64)> = log
            .phases
            .iter()
            .map(|(what, t)| (what.as_str(), t.count, t.total_ms))
            .collect();
        assert_eq!(phases, [("Concurrent Mark", 1, 2.527)]);
        let stalls = log.allocation_stalls;
        assert_eq!((stalls.count, stalls.max_ms), (2, 3.899));
        assert_eq!(stalls.first.map(|at| at.line), Some(7));
        assert_eq!(log.unrecognized, 1);
        assert_eq!(log.unrecognized_examples[0].0.line, 10);
    }

    /// JDK 11-17 G1 logs the evacuation failure on a line of its own before the pause; JDK 11
    /// Shenandoah's degenerated collection (GCViewer's sample, fixture
    /// gcviewer_jdk11_shenandoah_degenerated_safepoint_utc.log) is one by its name.
    #[test]
    fn evacuation_failures_are_found_on_their_own_line_or_in_the_name() {
        let log = parse(
            "[5.1s][info][gc] GC(12) To-space exhausted\n\
             [5.2s][info][gc] GC(12) Pause Young (Normal) (G1 Evacuation Pause) 60M->58M(64M) 25.002ms\n\
             [5.3s][info][gc] GC(13) Pause Young (Normal) (G1 Evacuation Pause) 30M->8M(64M) 2.002ms\n\
             [2019-09-28T14:33:00.085+0000][8.804s][info][gc            ] GC(165) Pause Degenerated GC (Outside of Cycle) 119M->56M(124M) 11.373ms\n",
        );
        let failures: Vec<_> = log.pauses.iter().map(|p| p.failure).collect();
        assert_eq!(
            failures,
            [Some("to-space exhausted"), None, Some("degenerated")]
        );
    }

    /// A log of the `safepoint` tag alone: collecting VM operations are the pauses, in JDK
    /// 17's words (fixture jdk17/serial_safepoint_uptime.log) and JDK 9-16's (the
    /// `Entering safepoint region` of GCViewer's JDK 11 sample); other safepoints are not.
    #[test]
    fn a_safepoint_log_alone_gives_the_collections_safepoints() {
        let log = parse(
            "[0.081s] Safepoint \"GenCollectForAllocation\", Time since last: 64713940 ns, Reaching safepoint: 3886 ns, Cleanup: 36685 ns, At safepoint: 2881888 ns, Total: 2922459 ns\n\
             [0.090s] Safepoint \"Cleanup\", Time since last: 1 ns, Reaching safepoint: 7000 ns, Cleanup: 1 ns, At safepoint: 1 ns, Total: 9000 ns\n\
             [8.793s][info][safepoint     ] Entering safepoint region: ShenandoahDegeneratedGC\n\
             [8.805s][info][safepoint     ] Leaving safepoint region\n\
             [8.805s][info][safepoint     ] Total time for which application threads were stopped: 0.0128948 seconds, Stopping threads took: 0.0002622 seconds\n",
        );
        let got: Vec<(u64, &str, f64, Option<f64>)> = log
            .pauses
            .iter()
            .map(|p| (p.id, p.what.as_str(), p.real_ms, p.stopped_ms))
            .collect();
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(
            got[0],
            (
                0,
                "Safepoint \"GenCollectForAllocation\"",
                2.881888,
                Some(2.922459)
            )
        );
        assert_eq!(got[1].1, "Safepoint \"ShenandoahDegeneratedGC\"");
        assert!((got[1].2 - (12.8948 - 0.2622)).abs() < 1e-9);
        assert_eq!(log.pauses[1].time_s, Some(8.805));
        // With the gc tags, safepoints only give pauses their stops.
        let with_gc = parse(
            "[0.080s][info][gc] GC(0) Pause Young (Allocation Failure) 17M->3M(61M) 2.752ms\n\
             [0.081s][info][safepoint] Safepoint \"GenCollectForAllocation\", Time since last: 64713940 ns, Reaching safepoint: 3886 ns, Cleanup: 36685 ns, At safepoint: 2881888 ns, Total: 2922459 ns\n",
        );
        assert_eq!(with_gc.pauses.len(), 1);
        assert_eq!(with_gc.pauses[0].stopped_ms, Some(2.922459));
    }

    /// JDK 9-11 Serial runs the full collection GC(3) inside the failed young one GC(2)
    /// (GCViewer's sample, fixture gcviewer_jdk9-11_serial_unified_gc-all_safepoint_oscpu.log):
    /// the world stopped once, so it is one pause, which names the full collection.
    #[test]
    fn a_collection_nested_in_another_is_one_pause() {
        let log = parse(
            "[0.283s][info][gc,start     ] GC(2) Pause Young (Allocation Failure)\n\
             [0.283s][info][gc,start     ] GC(3) Pause Full (Allocation Failure)\n\
             [0.290s][info][gc,phases      ] GC(3) Phase 4: Move objects 2.391ms\n\
             [0.290s][info][gc             ] GC(3) Pause Full (Allocation Failure) 74M->10M(92M) 6.987ms\n\
             [0.290s][info][gc,heap        ] GC(2) DefNew: 29459K->0K(29504K)\n\
             [0.290s][info][gc             ] GC(2) Pause Young (Allocation Failure) 74M->10M(92M) 7.118ms\n\
             [0.290s][info][gc,cpu         ] GC(2) User=0.00s Sys=0.00s Real=0.01s\n\
             [0.290s][info][safepoint      ] Total time for which application threads were stopped: 0.0073074 seconds, Stopping threads took: 0.0000186 seconds\n\
             [0.300s][info][gc,start     ] GC(4) Pause Young (Allocation Failure)\n\
             [0.301s][info][gc             ] GC(4) Pause Young (Allocation Failure) 30M->10M(92M) 1.000ms\n",
        );
        let got: Vec<(u64, &str, f64)> = log
            .pauses
            .iter()
            .map(|p| (p.id, p.what.as_str(), p.real_ms))
            .collect();
        assert_eq!(
            got,
            [
                (
                    2,
                    "Pause Young (Allocation Failure) (with Pause Full (Allocation Failure) \
                     6.987ms inside)",
                    7.118
                ),
                (4, "Pause Young (Allocation Failure)", 1.0)
            ]
        );
        assert_eq!(log.pauses[0].stopped_ms, Some(7.3074));
        assert!(crate::diagnose::judge::is_full(&log.pauses[0]));
    }
}
