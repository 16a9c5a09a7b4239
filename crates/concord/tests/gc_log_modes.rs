//! The GC log's modes through the public API (paper 002): `vanilla` writes its log inside
//! the pause and counts the writes in it, `modern` and `optimized` hand it to a writer thread;
//! either way the log holds every collection and the statistics say how it was written.

use std::path::PathBuf;

use concord::config::GcLogMode;
use concord::{CollectionKind, GcConfig, Heap, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);
const COLLECTIONS: usize = 5;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("concord-gclog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `COLLECTIONS` young collections on a heap of `preset` with a GC log; returns the
/// statistics and the log's text.
fn run(preset: Preset, name: &str) -> (concord::GcStats, String) {
    let path = scratch(name).join("gc.log");
    let mut config = GcConfig::for_preset(preset);
    config.heap_size = 8 << 20;
    config.gc_threads = 2;
    config.gc_log = Some(path.clone());
    let heap = Heap::new(config).unwrap();
    {
        let mut m = heap.attach();
        for _ in 0..COLLECTIONS {
            m.scope(|m| {
                m.alloc(NODE).unwrap();
            });
            m.collect(CollectionKind::Young);
        }
    }
    let stats = heap.finish().unwrap();
    (stats, std::fs::read_to_string(&path).unwrap())
}

#[test]
fn vanilla_writes_its_log_inside_the_pause_and_counts_it() {
    let (stats, text) = run(Preset::Vanilla, "sync");
    let log = stats.gc_log.expect("a log was configured");
    assert_eq!(log.mode, GcLogMode::Sync);
    assert_eq!(log.dropped, 0);
    assert_eq!(stats.records.len(), COLLECTIONS);
    for r in &stats.records {
        // A write() takes time: a record of a log written inside the pause shows it.
        assert!(r.log_write_ms > 0.0, "{r:?}");
        assert!(r.pause_ms >= r.log_write_ms, "{r:?}");
        assert!(log.write_max_ms >= r.log_write_ms);
    }
    assert_eq!(
        text.matches("][gc          ] GC(").count(),
        COLLECTIONS,
        "{text}"
    );
}

#[test]
fn optimized_and_modern_write_their_log_from_a_writer_thread() {
    for (preset, name) in [(Preset::Optimized, "async-o"), (Preset::Modern, "async-m")] {
        let (stats, text) = run(preset, name);
        let log = stats.gc_log.expect("a log was configured");
        assert_eq!(log.mode, GcLogMode::Async);
        // 5 lines fit in the 64 KiB buffer whatever the writer's speed.
        assert_eq!(log.dropped, 0);
        assert!(stats.records.iter().all(|r| r.log_write_ms == 0.0));
        assert_eq!(
            text.matches("][gc          ] GC(").count(),
            COLLECTIONS,
            "{text}"
        );
        assert!(text.lines().all(|l| l.starts_with('[')), "{text}");
    }
}
