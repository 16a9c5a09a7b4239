//! The GC log's modes through the public API (paper 002): `vanilla` writes its log inside
//! the pause and counts the writes in it, `modern` and `optimized` hand it to a writer thread;
//! either way the log holds every collection and the statistics say how it was written.

mod common;

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

/// A compressed log whose file stops growing mid-run (here a file-size limit; a full disk
/// alike): the run goes on, the failure is reported with the collections it cost, and what is
/// on disk decodes with a gzip reader to whole lines, every collection up to the failure.
#[test]
fn a_compressed_log_cut_by_a_full_file_keeps_whole_lines_up_to_the_failure() {
    common::in_child_process(
        "a_compressed_log_cut_by_a_full_file_keeps_whole_lines_up_to_the_failure",
        || {
            // SAFETY: ignoring SIGXFSZ makes a write past the limit fail with EFBIG instead of
            // killing this (child) process; no handler runs.
            unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
            let limit = libc::rlimit {
                rlim_cur: 4096,
                rlim_max: libc::RLIM_INFINITY,
            };
            // SAFETY: `limit` is a valid rlimit for the duration of the call.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &limit) }, 0);
            let path = scratch("gzip-full").join("gc.log.gz");
            let mut config = GcConfig::for_preset(Preset::Vanilla);
            config.heap_size = 8 << 20;
            config.gc_threads = 2;
            config.gc_log = Some(path.clone());
            config.gc_log_compress = true;
            let heap = Heap::new(config).unwrap();
            {
                let mut m = heap.attach();
                for _ in 0..200 {
                    m.scope(|m| {
                        m.alloc(NODE).unwrap();
                    });
                    m.collect(CollectionKind::Young);
                }
            }
            let e = heap.finish().unwrap_err();
            assert_eq!(e.stats.records.len(), 200);
            let f = &e.failures[0];
            assert!(f.error.contains("File too large"), "{f}");
            let first_lost: u64 = f
                .lost
                .strip_prefix("the log lines of GC(")
                .and_then(|rest| rest.split(')').next())
                .and_then(|id| id.parse().ok())
                .unwrap_or_else(|| panic!("{f}"));
            assert!(
                f.lost.ends_with(&format!(
                    "..GC(199) ({} collections) are lost",
                    200 - first_lost
                )),
                "{f}"
            );
            assert!(first_lost > 0, "4 KiB holds some collections: {f}");
            // The file on disk: a gzip stream cut after a flush, so it decodes to whole lines,
            // the header and every collection before the first lost one, and then ends early.
            let bytes = std::fs::read(&path).unwrap();
            assert!(bytes.len() <= 4096);
            let mut decoder = flate2::write::GzDecoder::new(Vec::new());
            use std::io::Write;
            decoder.write_all(&bytes).unwrap();
            decoder.flush().unwrap();
            let text = String::from_utf8(decoder.get_ref().clone()).unwrap();
            assert!(text.ends_with('\n'), "{text}");
            let ids: Vec<u64> = text
                .lines()
                .filter_map(|l| l.split_once("[gc,cpu      ] GC("))
                .map(|(_, rest)| rest.split(')').next().unwrap().parse().unwrap())
                .collect();
            assert_eq!(ids, (0..first_lost).collect::<Vec<u64>>(), "{text}");
        },
    );
}
