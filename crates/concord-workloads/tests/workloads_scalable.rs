//! The scalable workloads (`search`, `transform`, `render`) and `queue-churn` at small sizes on
//! small heaps with verification after every collection: checksums must match the expected
//! ones (derived without the heap, so equal for every split of the work across mutators), at
//! least one collection must happen, and every collection must verify.

mod common;

use std::time::Duration;

use common::{detail, params};
use concord::{CollectionKind, GcStats, Heap};
use concord_workloads::{
    queue_churn, render, search, transform, QueueChurn, QueueChurnParams, Render, Search,
    Transform, Workload, WorkloadError, WorkloadResult, MIB,
};

fn heap(heap_size: usize, gc_threads: usize) -> Heap {
    common::heap(heap_size, gc_threads, |_| {})
}

/// Runs `w` on a fresh verifying heap of `heap_mib` MiB with [`common::run_checked`]'s checks,
/// and checks that at least one collection happened.
fn run_checked(
    w: &dyn Workload,
    heap_mib: usize,
    gc_threads: usize,
    params: &concord_workloads::WorkloadParams,
) -> (WorkloadResult, GcStats) {
    let h = heap(heap_mib * MIB, gc_threads);
    let (r, s) = common::run_checked(w, &h, params);
    assert!(
        h.collection_count() > 0,
        "{} {params:?}: no collection",
        w.name()
    );
    (r, s)
}

/// `w` with `size` must fail with a `BadParameter` naming `needle`, before allocating.
fn assert_rejected(w: &dyn Workload, size: u32, needle: &str) {
    let h = heap(4 * MIB, 1);
    match w.run(&h, &params(1, Some(size))) {
        Err(WorkloadError::BadParameter(msg)) => assert!(msg.contains(needle), "{msg}"),
        other => panic!(
            "{} size {size}: expected BadParameter, got {other:?}",
            w.name()
        ),
    }
    assert_eq!(h.stats().bytes_allocated, 0, "{}", w.name());
}

#[test]
fn search_small_with_1_and_2_mutators() {
    // 1000 queries; each mutator builds its own index (about 5 MiB).
    let expected = search::expected_checksum(1000);
    for (mutators, heap_mib, gc_threads) in [(1, 12, 2), (2, 16, 3)] {
        let (r, _) = run_checked(&Search, heap_mib, gc_threads, &params(mutators, Some(1)));
        assert_eq!(r.checksum, expected);
    }
}

#[test]
fn transform_small_with_1_and_2_mutators() {
    // 1000 documents, a window of 64 outputs per mutator: outputs leave the window during the
    // run and the rest at the end.
    let w = Transform::with_window(64);
    let expected = transform::expected_checksum(1000);
    for (mutators, gc_threads) in [(1, 2), (2, 3)] {
        let (r, s) = run_checked(&w, 8, gc_threads, &params(mutators, Some(1)));
        assert_eq!(r.checksum, expected);
        assert!(s.count(CollectionKind::Young) >= 3);
    }
}

#[test]
fn render_small_with_1_2_and_3_mutators() {
    let expected = render::expected_checksum(32);
    for (mutators, gc_threads) in [(1, 1), (2, 2), (3, 3)] {
        let (r, s) = run_checked(&Render, 8, gc_threads, &params(mutators, Some(32)));
        assert_eq!(r.checksum, expected);
        assert!(s.count(CollectionKind::Young) >= 2);
    }
}

#[test]
fn queue_churn_small_with_1_and_2_mutators() {
    // 10 KiB objects, 400 / 200: a peak live set of 4 MiB per queue.
    let w = QueueChurn::with_params(QueueChurnParams {
        object_bytes: 10 * 1024,
        high_water: 400,
        remove: 200,
        default_duration: Duration::from_millis(250),
    });
    for mutators in [1, 2] {
        let (r, s) = run_checked(&w, 16, 2, &params(mutators, None));
        let enqueued: u64 = detail(&r, "objects enqueued").parse().unwrap();
        // At least two removals per queue, and objects from survivors and old checked.
        assert!(
            enqueued >= 1000 * mutators as u64,
            "{enqueued} objects enqueued"
        );
        assert!(s.count(CollectionKind::Young) >= 2);
    }
}

#[test]
fn bad_sizes_are_rejected() {
    assert_rejected(&Search, 0, "search size 0");
    assert_rejected(&Search, search::SIZE.range().end() + 1, "out of range");
    assert_rejected(&Transform::standard(), 0, "transform size 0");
    assert_rejected(&Render, 3, "render image side (size) 3");
    assert_rejected(&Render, render::SIZE.range().end() + 1, "out of range");
    assert_rejected(&QueueChurn::standard(), 0, "queue-churn duration (size) 0");
    assert_rejected(
        &QueueChurn::standard(),
        queue_churn::SIZE.range().end() + 1,
        "out of range",
    );
    // Other parameters.
    let h = heap(4 * MIB, 1);
    let e = Transform::with_window(0)
        .run(&h, &params(1, Some(1)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("window 0 is out of range"), "{e}");
    let mut p = QueueChurnParams::standard();
    p.remove = 0;
    let e = QueueChurn::with_params(p)
        .run(&h, &params(1, Some(1)))
        .unwrap_err()
        .to_string();
    assert!(e.contains("removing 0 at a time"), "{e}");
    assert_eq!(h.stats().bytes_allocated, 0);
}

#[test]
fn default_heaps_scale_with_mutators() {
    let one = params(1, None);
    let four = params(4, None);
    assert_eq!(Search.default_heap(&one), 21 * MIB);
    assert_eq!(Transform::standard().default_heap(&one), 42 * MIB);
    assert_eq!(Render.default_heap(&one), 12 * MIB);
    assert_eq!(QueueChurn::standard().default_heap(&one), 3 * 1408 * MIB);
    assert!(Search.default_heap(&four) > Search.default_heap(&one));
    assert!(Transform::standard().default_heap(&four) > Transform::standard().default_heap(&one));
    assert_eq!(
        QueueChurn::standard().default_heap(&four),
        4 * QueueChurn::standard().default_heap(&one)
    );
}
