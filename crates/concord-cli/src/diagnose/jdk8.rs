//! Reads JDK 8 GC logs (`-XX:+PrintGCDetails`, with or without `-XX:+PrintGCTimeStamps` /
//! `-XX:+PrintGCDateStamps` and `-XX:+PrintGCApplicationStoppedTime`).
//!
//! A collection's record starts on a line that begins with a time stamp or with `[GC` /
//! `[Full GC` and may run over several lines (tenuring distribution, G1's phases); it ends with
//! `[Times: user=… sys=…, real=… secs]`. Records of CMS's and G1's concurrent phases carry
//! `[Times: …]` too but are not pauses. JDK 8 numbers no collections, so a pause's id is its
//! position in the log.

use super::{attach_stop, gc_threads_in, number_after, seconds_ms, stop_of, Parsed, Pause};

/// The pauses and GC thread count of a JDK 8 log (no pauses: not such a log).
pub fn parse(text: &str) -> Parsed {
    let mut log = Parsed::default();
    let mut record = String::new();
    for line in text.lines() {
        log.note_gc_threads(gc_threads_in(line));
        if let Some(stop) = stop_of(line) {
            attach_stop(&mut log.pauses, stop);
            record.clear();
            continue;
        }
        if starts_record(line) {
            record.clear();
        }
        match line.find("[Times:") {
            Some(at) => {
                record.push_str(&line[..at]);
                let id = log.pauses.len() as u64;
                if let Some(pause) = pause_of(&record, &line[at..], id) {
                    log.pauses.push(pause);
                }
                record.clear();
            }
            None => {
                record.push_str(line);
                record.push('\n');
            }
        }
    }
    log
}

/// Whether `line` opens a new record: a time stamp (`312052.604: `, `2016-01-14T…: `) or a
/// collection with no time stamp. Continuation lines start with spaces, `:`, `-` or a word.
fn starts_record(line: &str) -> bool {
    line.starts_with(|c: char| c.is_ascii_digit())
        || line.starts_with("[GC")
        || line.starts_with("[Full GC")
}

/// The pause of one record ending in `times` (`[Times: user=0.18 sys=0.01, real=11.45 secs]`),
/// `None` for a concurrent phase or a record that is not a collection.
fn pause_of(record: &str, times: &str, id: u64) -> Option<Pause> {
    let start = record.find("[GC").or_else(|| record.find("[Full GC"))?;
    if record.to_ascii_lowercase().contains("concurrent") {
        return None;
    }
    let user_ms = number_after(times, "user=").and_then(seconds_ms);
    let sys_ms = number_after(times, "sys=").and_then(seconds_ms);
    // The record's own last `N secs]` is the whole pause to 0.1 µs; `real=` only to 10 ms.
    let real_ms =
        last_secs(record).or_else(|| number_after(times, "real=").and_then(seconds_ms))?;
    Some(Pause {
        id,
        time_s: uptime_of(&record[..start]),
        what: description(&record[start + 1..]),
        real_ms,
        user_ms,
        sys_ms,
        time_to_safepoint_ms: None,
        stopped_ms: None,
    })
}

/// `GC (Allocation Failure) 312064.042: [ParNew …` as `GC (Allocation Failure)`.
fn description(text: &str) -> String {
    let head = text.split(['[', ']', '\n']).next().unwrap_or("");
    let head = match head.rfind(')') {
        Some(end) => &head[..=end],
        None => head.trim_end_matches([',', ' ']),
    };
    head.split(", ").next().unwrap_or(head).trim().to_string()
}

/// The uptime in `2016-01-14T22:08:28.028+0000: 312052.604: ` (the date stamp is skipped).
fn uptime_of(stamps: &str) -> Option<f64> {
    stamps
        .split(": ")
        .map(|s| s.trim().trim_end_matches(':'))
        .find_map(|s| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0))
}

/// The duration of the last `, 0.0142796 secs]` in `record`, in milliseconds.
fn last_secs(record: &str) -> Option<f64> {
    let before = &record[..record.rfind(" secs]")?];
    let start = before
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |i| i + 1);
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
}
