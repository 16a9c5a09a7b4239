//! The GC trace end to end: a heap with `gc_trace` writes one frame per collection; a young
//! collection's objects and bytes are exactly what it copied (against its record and against
//! the graph the test built), a full collection's exactly what the verifier finds reachable;
//! every reference names a traced object, for one GC worker and for several, and a cut file
//! reads as truncated.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use concord::os::numa::NumaLayout;
use concord::telemetry::gc_trace::{
    Fate, GcTraceError, GcTraceReader, TraceCollection, TraceKind, TraceRootKind,
};
use concord::{CollectionKind, CollectionRecord, GcConfig, Heap, ObjectType, Preset, VerifyReport};

/// Two reference slots (slot 0: the previous node of a chain), 8 bytes of payload.
const NODE: ObjectType = ObjectType::fixed(2, 8);
/// Longer than two array chunks, so its scanning is split among workers.
const ARRAY_LEN: usize = 600;

fn read_all(path: &Path) -> Vec<Result<TraceCollection, GcTraceError>> {
    GcTraceReader::new(BufReader::new(File::open(path).unwrap()))
        .unwrap()
        .collect()
}

/// Every reference and root reach names an object of the collection; a young collection's
/// survivors and promoted objects add up to its record's bytes.
fn check_against_record(t: &TraceCollection, r: &CollectionRecord, what: &str) {
    assert_eq!(t.id, r.id, "{what}");
    assert_eq!(t.workers as usize, r.gc_threads, "{what}");
    assert!(
        t.objects.iter().all(|o| (o.worker as usize) < r.gc_threads),
        "{what}"
    );
    let n = t.objects.len() as u32;
    assert!(t.refs.iter().all(|&id| id < n), "{what}");
    assert!(
        t.roots.iter().flat_map(|r| &r.reaches).all(|&id| id < n),
        "{what}"
    );
    if r.kind == CollectionKind::Full {
        assert_eq!(t.kind, TraceKind::Full, "{what}");
        assert!(t.objects.iter().all(|o| o.fate == Fate::Marked), "{what}");
        return;
    }
    assert_eq!(t.kind, TraceKind::Young, "{what}");
    let (_, survivor_bytes) = t.count(Fate::Survivor);
    let (_, promoted_bytes) = t.count(Fate::Promoted);
    assert_eq!(
        survivor_bytes + promoted_bytes,
        r.bytes_copied as u64,
        "{what}"
    );
    assert_eq!(promoted_bytes, r.bytes_promoted as u64, "{what}");
    assert_eq!(
        t.count(Fate::Stayed).0,
        0,
        "{what}: no promotion failure here"
    );
}

/// Reached by the card stripes of `t`: (objects reached, old objects scanned).
fn stripe_work(t: &TraceCollection) -> (usize, u64) {
    t.roots
        .iter()
        .filter_map(|r| match r.kind {
            TraceRootKind::CardStripe {
                scanned_objects, ..
            } => Some((r.reaches.len(), scanned_objects)),
            TraceRootKind::HandleStack { .. } => None,
        })
        .fold((0, 0), |(a, b), (c, d)| (a + c, b + d))
}

/// Builds a graph of known shape and collects it: (1) a rooted array of `ARRAY_LEN` chained
/// nodes among garbage, collected young until the nodes are promoted; (2) after a full
/// collection, `ARRAY_LEN / 2` fresh nodes stored into the (old) array, reached only through
/// its dirty cards.
fn run(preset: Preset, gc_threads: usize, path: &Path) -> Vec<CollectionRecord> {
    run_with(GcConfig::for_preset(preset), gc_threads, path).0
}

/// [`run`] for `c`; also returns what the verifier found after the full collection.
fn run_with(
    mut c: GcConfig,
    gc_threads: usize,
    path: &Path,
) -> (Vec<CollectionRecord>, VerifyReport) {
    c.heap_size = 32 << 20;
    c.gc_threads = gc_threads;
    c.gc_trace = Some(path.to_path_buf());
    c.verify = true;
    let heap = Heap::new(c).unwrap();
    let after_full = {
        let mut m = heap.attach();
        let array = m.alloc_ref_array(ARRAY_LEN).unwrap();
        m.scope(|m| {
            let mut previous = None;
            for i in 0..ARRAY_LEN {
                m.scope(|m| {
                    let node = m.alloc(NODE).unwrap();
                    m.set_ref(node, 0, previous);
                    m.set_ref(array, i, Some(node));
                    for _ in 0..20 {
                        m.alloc(NODE).unwrap();
                    }
                });
                previous = m.get_ref(array, i);
            }
        });
        for _ in 0..20 {
            m.collect(CollectionKind::Young);
        }
        m.collect(CollectionKind::Full);
        let after_full = m.verify_heap().unwrap();
        for i in 0..ARRAY_LEN / 2 {
            m.scope(|m| {
                let node = m.alloc(NODE).unwrap();
                m.set_ref(array, i, Some(node));
            });
        }
        m.collect(CollectionKind::Young);
        after_full
    };
    let stats = heap.finish().unwrap();
    assert!(
        stats.verify_failures.is_empty(),
        "{:?}",
        stats.verify_failures
    );
    (stats.records, after_full)
}

#[test]
fn the_trace_holds_exactly_what_each_collection_traversed() {
    let dir = std::env::temp_dir().join(format!("concord-gc-trace-it-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Segregated work (004 §3.2.3) sends slots, copies and card-stripe slots to the other
    // node's worker: two synthetic nodes on CPU 0 and CPU 1.
    let mut segregated = GcConfig::for_preset(Preset::Optimized);
    segregated.numa = NumaLayout::Segregated;
    segregated.numa_topology = "0/1".parse().unwrap();
    let two_cpus = concord::os::affinity::current_thread_affinity().is_ok_and(|s| s.len() >= 2);
    let configs = [
        ("vanilla", GcConfig::for_preset(Preset::Vanilla), 1),
        ("vanilla", GcConfig::for_preset(Preset::Vanilla), 3),
        ("optimized", GcConfig::for_preset(Preset::Optimized), 1),
        ("optimized", GcConfig::for_preset(Preset::Optimized), 3),
    ]
    .into_iter()
    .chain(two_cpus.then_some(("segregated", segregated, 2)));
    for (name, config, gc_threads) in configs {
        let what = format!("{name} with {gc_threads} GC threads");
        let path = dir.join(format!("{name}-{gc_threads}.trace"));
        let (records, after_full) = run_with(config, gc_threads, &path);
        let traces: Vec<TraceCollection> =
            read_all(&path).into_iter().map(Result::unwrap).collect();
        assert_eq!(
            traces.len(),
            records.len(),
            "{what}: one frame per collection"
        );
        for (t, r) in traces.iter().zip(&records) {
            check_against_record(t, r, &what);
        }
        // The full collection marked exactly what the verifier then found reachable.
        let full = &traces[records.len() - 2];
        assert_eq!(full.kind, TraceKind::Full, "{what}");
        assert_eq!(full.objects.len(), after_full.reachable_objects, "{what}");
        assert_eq!(
            full.count(Fate::Marked).1,
            after_full.reachable_bytes as u64,
            "{what}"
        );
        // The first collection copies the array and its nodes, nothing else: the array's
        // slots name every node, each node (but the first) names the one before.
        let first = &traces[0];
        assert_eq!(first.objects.len(), ARRAY_LEN + 1, "{what}");
        let array = first
            .objects
            .iter()
            .position(|o| first.refs[o.refs.clone()].len() == ARRAY_LEN)
            .expect("the array");
        let handle_reaches: Vec<u32> = first
            .roots
            .iter()
            .filter(|r| matches!(r.kind, TraceRootKind::HandleStack { .. }))
            .flat_map(|r| r.reaches.iter().copied())
            .collect();
        assert_eq!(handle_reaches, [array as u32], "{what}");
        let chained = (0..first.objects.len())
            .filter(|&id| id != array && first.refs_of(id).len() == 1)
            .count();
        assert_eq!(chained, ARRAY_LEN - 1, "{what}");
        // Ages grow until the tenuring threshold: some collection promotes the graph.
        assert!(
            traces.iter().any(|t| t.count(Fate::Promoted).0 > 0),
            "{what}: nothing promoted"
        );
        // The last collection: only the fresh nodes, reached through the cards of the array.
        let last = traces.last().unwrap();
        assert_eq!(last.objects.len(), ARRAY_LEN / 2, "{what}");
        let (reached, scanned) = stripe_work(last);
        assert_eq!(reached, ARRAY_LEN / 2, "{what}");
        assert!(scanned >= 1, "{what}");
        // Root tasks name workers that took part.
        assert!(
            last.roots.iter().all(|r| (r.ran_on as usize) < gc_threads),
            "{what}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_cut_trace_reads_as_truncated_after_its_last_whole_collection() {
    let dir = std::env::temp_dir().join(format!("concord-gc-trace-cut-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("whole.trace");
    run(Preset::Optimized, 2, &path);
    let bytes = std::fs::read(&path).unwrap();
    let whole: Vec<TraceCollection> = read_all(&path).into_iter().map(Result::unwrap).collect();
    let cut = dir.join("cut.trace");
    // One byte short (no end marker), and in the middle of the file.
    for len in [bytes.len() - 1, bytes.len() / 2] {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        let got = read_all(&cut);
        let (err, read) = got.split_last().unwrap();
        let read: Vec<&TraceCollection> = read.iter().map(|r| r.as_ref().unwrap()).collect();
        assert!(read.len() < whole.len() || len == bytes.len() - 1);
        assert!(read.iter().zip(&whole).all(|(a, b)| *a == b));
        match err {
            Err(GcTraceError::Truncated { after }) => {
                assert_eq!(*after, read.last().map(|t| t.id), "cut at {len}")
            }
            other => panic!("cut at {len}: {other:?}"),
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
