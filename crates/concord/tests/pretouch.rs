//! `pretouch` (HotSpot's `AlwaysPreTouch`): a heap built with it is committed and resident
//! in full before `Heap::new` returns, its contents are what a fresh heap's are, and
//! collections and the data in it are unaffected; without it, the old generation is committed
//! only as it fills.

mod common;

use concord::config::ConfigBuilder;
use concord::{CollectionKind, GcConfig, Heap, ObjectType};

const NODE: ObjectType = ObjectType::fixed(1, 16);

fn config(pretouch: &str, thp: &str) -> GcConfig {
    let mut builder = ConfigBuilder::new();
    for (key, value) in [
        ("heap", "64m"),
        ("gc-threads", "2"),
        ("verify", "true"),
        ("pretouch", pretouch),
        ("thp", thp),
    ] {
        builder.set_cli(key, value).unwrap();
    }
    builder.build().unwrap()
}

#[test]
fn a_pretouched_heap_is_committed_and_resident_at_creation() {
    for thp in ["never", "madvise", "system"] {
        let config = config("true", thp);
        let size = config.heap_size;
        let heap = Heap::new(config).unwrap();
        let report = heap.pretouch().expect("pretouch ran");
        assert_eq!(heap.committed_bytes(), heap.capacity(), "thp {thp}");
        assert_eq!(heap.resident_bytes().unwrap(), heap.capacity(), "thp {thp}");
        assert!(
            report.bytes as usize > size,
            "heap and side tables: {report:?}"
        );
        assert!(report.ms > 0.0);
        assert_eq!(report.workers, 2);
        assert_eq!(heap.stats().pretouch, Some(report));

        // The heap works as any other: a list survives collections, verified after each.
        let mut m = heap.attach();
        let head = m.alloc(NODE).unwrap();
        m.write_u64(head, 0, 0);
        let tail = m.dup(head);
        for i in 1..20_000u64 {
            m.scope(|m| {
                let n = m.alloc(NODE).unwrap();
                m.write_u64(n, 0, i);
                m.set_ref(tail, 0, Some(n));
                m.set_handle(tail, Some(n));
            });
        }
        m.collect(CollectionKind::Young);
        m.collect(CollectionKind::Full);
        let (at, mut count) = (m.dup(head), 0u64);
        loop {
            assert_eq!(m.read_u64(at, 0), count);
            count += 1;
            match m.get_ref(at, 0) {
                Some(next) => m.set_handle(at, Some(next)),
                None => break,
            }
        }
        assert_eq!(count, 20_000);
        drop(m);
        common::assert_verified(&heap.stats());
    }
}

#[test]
fn without_pretouch_the_old_generation_is_committed_on_demand() {
    let config = config("false", "never");
    let old = config.generation_sizes().old;
    let heap = Heap::new(config).unwrap();
    assert_eq!(heap.pretouch(), None);
    assert_eq!(heap.stats().pretouch, None);
    assert_eq!(heap.committed_bytes(), heap.capacity() - old);
    assert!(heap.resident_bytes().unwrap() < heap.capacity() - old);
}
