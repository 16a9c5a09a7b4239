//! A heap's outputs (GC log, records, mutator profile) through the public API: an existing
//! file stays as it was until the heap finishes, a heap that could not be created touches
//! nothing, every output that could not be written completely is reported with what it
//! lacks, and outputs can be closed while mutators still run (as a program that must exit on
//! a signal does). No temporary file is ever left behind.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use concord::os::policy::MutatorSched;
use concord::telemetry::OutputKind;
use concord::{CollectionKind, GcConfig, Heap, HeapError, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("concord-outputs-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn config() -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 8 << 20;
    c.gc_threads = 2;
    c
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Allocate garbage and collect `collections` times explicitly.
fn collect_times(heap: &Heap, collections: usize) {
    let mut m = heap.attach();
    for _ in 0..collections {
        for _ in 0..2000 {
            m.scope(|m| {
                m.alloc(NODE).unwrap();
            });
        }
        m.collect(CollectionKind::Young);
    }
}

/// Whether `line` is a whole GC log line: `[gc,heap]` lines end in a size, `[gc,cpu]` lines
/// in seconds, the others in a time or a cause.
fn whole_line(line: &str) -> bool {
    line.starts_with('[') && (line.ends_with('s') || line.ends_with('K') || line.ends_with(')'))
}

/// The `GC(n)` ids of a GC log's `[gc]` lines after the header, each line checked for its form.
fn log_ids(text: &str) -> Vec<u64> {
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with("[info][gc] Using Concord (optimized)"),
        "{text}"
    );
    let workers = lines.next().unwrap();
    assert!(workers.contains("[gc,init] Parallel Workers: "), "{text}");
    lines
        .inspect(|l| assert!(whole_line(l), "a whole line: {l}"))
        .filter(|l| l.contains("][gc          ] GC("))
        .map(|l| {
            assert!(l.ends_with("ms"), "a whole line: {l}");
            let id = l.split("GC(").nth(1).and_then(|r| r.split(')').next());
            id.and_then(|id| id.parse().ok())
                .unwrap_or_else(|| panic!("{l}"))
        })
        .collect()
}

#[test]
fn an_existing_log_is_kept_until_the_heap_finishes() {
    let dir = scratch("kept");
    let (log, records) = (dir.join("gc.log"), dir.join("records.jsonl"));
    std::fs::write(&log, "old log\n").unwrap();
    std::fs::write(&records, "old records\n").unwrap();
    let mut c = config();
    c.gc_log = Some(log.clone());
    c.gc_records = Some(records.clone());
    let heap = Heap::new(c).unwrap();
    collect_times(&heap, 3);
    // While the heap runs, the files hold what they held.
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "old log\n");
    assert_eq!(std::fs::read_to_string(&records).unwrap(), "old records\n");
    let stats = heap.finish().unwrap();
    assert!(stats.records.len() >= 3);
    let ids: Vec<u64> = stats.records.iter().map(|r| r.id).collect();
    assert_eq!(log_ids(&std::fs::read_to_string(&log).unwrap()), ids);
    let lines = std::fs::read_to_string(&records).unwrap();
    assert_eq!(lines.lines().count(), ids.len());
    assert_eq!(
        entries(&dir),
        ["gc.log", "records.jsonl"],
        "no temporary file"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_heap_that_cannot_be_created_touches_nothing() {
    let dir = scratch("untouched");
    let log = dir.join("gc.log");
    std::fs::write(&log, "old log\n").unwrap();
    // The log could be started; the records file cannot: the log stays as it was.
    let mut c = config();
    c.gc_log = Some(log.clone());
    c.gc_records = Some(dir.join("missing-dir/records.jsonl"));
    match Heap::new(c) {
        Err(HeapError::GcRecords { path, .. }) => assert!(path.ends_with("records.jsonl")),
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a heap with an unwritable records path"),
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "old log\n");
    // A profile to be recorded where no file can be made: refused before anything starts.
    let mut c = config();
    c.gc_log = Some(log.clone());
    c.mutator_sched = MutatorSched::Profile(dir.join("missing-dir/p.profile"));
    match Heap::new(c) {
        Err(e @ HeapError::Profile { .. }) => {
            assert!(e.to_string().contains("missing-dir/p.profile"), "{e}")
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a heap with an unwritable profile path"),
    }
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "old log\n");
    assert_eq!(entries(&dir), ["gc.log"], "no temporary file");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_failed_write_is_reported_with_what_was_lost() {
    let mut c = config();
    c.gc_records = Some("/dev/full".into());
    let heap = Heap::new(c).unwrap();
    collect_times(&heap, 3);
    let e = heap.finish().unwrap_err();
    let n = e.stats.records.len();
    assert!(n >= 3);
    assert_eq!(e.failures.len(), 1, "{e}");
    let f = &e.failures[0];
    assert_eq!(f.output, OutputKind::GcRecords);
    assert_eq!(f.path, Path::new("/dev/full"));
    assert!(f.error.contains("No space left on device"), "{f}");
    assert_eq!(
        f.lost,
        format!(
            "the records of GC(0)..GC({}) ({n} collections) are lost",
            n - 1
        )
    );
    assert!(
        e.to_string()
            .starts_with("GC records /dev/full: No space left"),
        "{e}"
    );
    assert!(
        Path::new("/dev/full").exists(),
        "a device is written, never replaced"
    );
}

#[test]
fn a_profile_that_cannot_be_written_at_the_end_is_reported() {
    let dir = scratch("profile");
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    let mut c = config();
    c.mutator_sched = MutatorSched::Profile(sub.join("p.profile"));
    let heap = Heap::new(c).unwrap();
    collect_times(&heap, 1);
    // The directory goes away during the run.
    std::fs::remove_dir(&sub).unwrap();
    let e = heap.finish().unwrap_err();
    assert_eq!(e.failures.len(), 1, "{e}");
    let f = &e.failures[0];
    assert_eq!(f.output, OutputKind::MutatorProfile);
    assert_eq!(f.lost, "the profile of this run was not written");
    assert!(f.error.contains("No such file"), "{f}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn outputs_closed_while_mutators_run_hold_the_collections_of_the_stats() {
    let dir = scratch("closed");
    let (log, records) = (dir.join("gc.log"), dir.join("records.jsonl"));
    let mut c = config();
    c.gc_log = Some(log.clone());
    c.gc_records = Some(records.clone());
    let heap = Heap::new(c).unwrap();
    let stop = AtomicBool::new(false);
    let (started, collected) = mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut m = heap.attach();
            let mut sent = false;
            while !stop.load(Ordering::Relaxed) {
                for _ in 0..2000 {
                    m.scope(|m| {
                        m.alloc(NODE).unwrap();
                    });
                }
                m.collect(CollectionKind::Young);
                if !sent {
                    started.send(()).unwrap();
                    sent = true;
                }
            }
        });
        collected.recv().unwrap();
        // Collections go on meanwhile.
        let stats = heap.close_outputs().unwrap();
        let ids: Vec<u64> = stats.records.iter().map(|r| r.id).collect();
        assert!(!ids.is_empty());
        let text = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            log_ids(&text),
            ids,
            "the log holds exactly the stats' collections"
        );
        let lines = std::fs::read_to_string(&records).unwrap();
        let record_ids: Vec<u64> = lines
            .lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(record_ids, ids);
        stop.store(true, Ordering::Relaxed);
        assert_eq!(entries(&dir), ["gc.log", "records.jsonl"]);
    });
    let closed_log = std::fs::read_to_string(&log).unwrap();
    let stats = heap.finish().unwrap();
    assert!(stats.records.len() >= log_ids(&closed_log).len());
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        closed_log,
        "nothing is written after the outputs were closed"
    );
    assert_eq!(entries(&dir), ["gc.log", "records.jsonl"]);
    std::fs::remove_dir_all(&dir).unwrap();
}
