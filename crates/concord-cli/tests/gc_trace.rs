//! `concord run --gc-trace FILE` end to end: the trace of a real workload (young and full
//! collections) agrees with its records file collection by collection, a cut trace reads as truncated, and the trace is an
//! output like the others (refused up front when it cannot be created or names another
//! output's file, failing the run and saying what was lost when a write fails mid-run).

mod common;

use std::path::Path;

use common::{command, concord, entries, scratch, small, text, with_file_size_limit};
use concord::telemetry::gc_trace::{Fate, GcTraceError, GcTraceReader, TraceCollection, TraceKind};
use serde_json::Value;

fn read_trace(path: &Path) -> Vec<Result<TraceCollection, GcTraceError>> {
    GcTraceReader::new(std::fs::File::open(path).unwrap())
        .unwrap()
        .collect()
}

#[test]
fn the_trace_of_a_run_agrees_with_its_records() {
    let dir = scratch("gc-trace-run");
    let (trace, records) = (dir.join("t.trace"), dir.join("r.jsonl"));
    for threads in ["1", "2"] {
        // A 4 MB heap: young and full collections.
        let o = concord(&[
            "run",
            "binary-trees",
            "14",
            "--heap",
            "4m",
            "--gc-threads",
            threads,
            "--gc-trace",
            trace.to_str().unwrap(),
            "--gc-records",
            records.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        let records: Vec<Value> = std::fs::read_to_string(&records)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .collect();
        let collections: Vec<TraceCollection> =
            read_trace(&trace).into_iter().map(Result::unwrap).collect();
        assert!(records.iter().any(|r| r["kind"] == "young"));
        assert!(records.iter().any(|r| r["kind"] == "full"));
        assert_eq!(collections.len(), records.len(), "one frame per collection");
        for (t, r) in collections.iter().zip(&records) {
            assert_eq!(t.id, r["id"].as_u64().unwrap());
            let n = t.objects.len() as u32;
            assert!(t.refs.iter().all(|&id| id < n));
            assert!(t.roots.iter().flat_map(|r| &r.reaches).all(|&id| id < n));
            assert!(!t.roots.is_empty());
            if r["kind"] == "full" {
                assert_eq!(t.kind, TraceKind::Full);
                assert_eq!(t.count(Fate::Marked).0, n as u64);
                continue;
            }
            assert_eq!(t.kind, TraceKind::Young);
            let (_, survivors) = t.count(Fate::Survivor);
            let (_, promoted) = t.count(Fate::Promoted);
            assert_eq!(survivors + promoted, r["bytes_copied"].as_u64().unwrap());
            assert_eq!(promoted, r["bytes_promoted"].as_u64().unwrap());
        }
        // A cut file: every whole collection before the cut, then "truncated".
        let bytes = std::fs::read(&trace).unwrap();
        let cut = dir.join("cut.trace");
        std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
        let got = read_trace(&cut);
        let (last, whole) = got.split_last().unwrap();
        assert!(whole.len() < collections.len());
        let after = whole.last().map(|t| t.as_ref().unwrap().id);
        match last {
            Err(e @ GcTraceError::Truncated { after: a }) if *a == after => {
                assert!(
                    e.to_string().starts_with("the GC trace is truncated "),
                    "{e}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_trace_that_cannot_be_created_or_shares_a_file_is_refused_up_front() {
    let o = concord(&small(
        "run",
        "8",
        &["--gc-trace", "/nonexistent-concord-dir/t.trace"],
    ));
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not create the GC trace /nonexistent-concord-dir/t.trace"),
        "{stderr}"
    );
    let dir = scratch("gc-trace-same-file");
    let x = dir.join("x");
    let o = concord(&small(
        "run",
        "8",
        &[
            "--gc-records",
            x.to_str().unwrap(),
            "--gc-trace",
            x.to_str().unwrap(),
        ],
    ));
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--gc-trace: ")
            && stderr.contains("names the same file as --gc-records")
            && stderr.contains("give each output a file of its own"),
        "{stderr}"
    );
    assert!(entries(&dir).is_empty(), "nothing written");
}

#[test]
fn a_trace_cut_by_a_full_disk_fails_the_run_and_says_what_was_lost() {
    let dir = scratch("gc-trace-full-disk");
    let trace = dir.join("t.trace");
    // Files of at most 200 KiB, as on a disk that fills up: binary-trees 14's first young
    // collection takes about 164 KB of trace, its second 99 KB (trace version 4).
    let o = with_file_size_limit(
        command(&small(
            "run",
            "14",
            &["--gc-trace", trace.to_str().unwrap(), "--json"],
        )),
        200 << 10,
    )
    .output()
    .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let got = read_trace(&trace);
    let (last, whole) = got.split_last().unwrap();
    let written: Vec<u64> = whole.iter().map(|t| t.as_ref().unwrap().id).collect();
    // Whole frames up to the one that did not fit, no end marker after them.
    assert!(!written.is_empty(), "the first collection's frame fits");
    assert!(
        matches!(last, Err(GcTraceError::Truncated { after }) if *after == written.last().copied()),
        "{last:?}"
    );
    let first_lost = written.last().map_or(0, |id| id + 1);
    assert!(
        stderr.contains(&format!("GC trace {}: ", trace.display()))
            && stderr.contains("File too large")
            && stderr.contains(&format!("the traces of GC({first_lost})")),
        "{stderr}"
    );
    assert_eq!(entries(&dir), ["t.trace"], "no temporary file");
}
