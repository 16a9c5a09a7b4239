//! The workloads at small sizes on small heaps with verification after every collection:
//! checksums must match the analytic ones, on 1 and 3 GC threads and with 1 and 2 mutators.

mod common;

use common::{assert_full_collections, heap, params, tenure_after};
use concord::{CollectionKind, GcStats};
use concord_workloads::binary_trees::{self, BinaryTrees};
use concord_workloads::{
    lookup, GcBench, GcBenchParams, Workload, WorkloadError, WorkloadParams, WorkloadResult, MIB,
};

/// [`common::run_checked`], and at least `min_young` young collections.
fn run_checked(
    w: &dyn Workload,
    heap: &concord::Heap,
    params: &WorkloadParams,
    min_young: usize,
) -> (WorkloadResult, GcStats) {
    let (r, s) = common::run_checked(w, heap, params);
    assert!(
        s.count(CollectionKind::Young) >= min_young,
        "{} {params:?}: only {} young collections",
        w.name(),
        s.count(CollectionKind::Young)
    );
    (r, s)
}

#[test]
fn gcbench_small_on_1_and_3_gc_threads_with_1_and_2_mutators() {
    let w = GcBench::with_params(GcBenchParams::small());
    for gc_threads in [1, 3] {
        for mutators in [1, 2] {
            let h = heap(4 * MIB * mutators, gc_threads, |_| {});
            let (r, _) = run_checked(&w, &h, &params(mutators, None), 3);
            assert_eq!(
                r.expected_checksum,
                Some(GcBenchParams::small().expected_checksum() * mutators as u64)
            );
        }
    }
}

#[test]
fn gcbench_small_forces_full_collections() {
    // Everything that survives a scavenge is promoted, so old (5.3 MiB) fills with dead trees;
    // the two copies' stretch trees (2 MiB each) alone nearly fill it.
    let p = GcBenchParams {
        stretch_depth: 15,
        long_lived_depth: 13,
        array_size: 50_000,
        min_depth: 4,
        max_depth: 13,
    };
    let w = GcBench::with_params(p);
    for gc_threads in [1, 3] {
        let h = heap(8 * MIB, gc_threads, tenure_after(0));
        let params = WorkloadParams {
            rounds: 2,
            ..params(2, None)
        };
        let (_, s) = run_checked(&w, &h, &params, 5);
        assert_full_collections(&s);
    }
}

#[test]
fn gcbench_rounds_multiply_the_checksum() {
    let w = GcBench::with_params(GcBenchParams::small());
    let h = heap(4 * MIB, 2, |_| {});
    let r = w
        .run(
            &h,
            &WorkloadParams {
                rounds: 3,
                ..Default::default()
            },
        )
        .unwrap();
    assert_eq!(r.checksum, 3 * GcBenchParams::small().expected_checksum());
    assert_eq!(r.checksum_ok(), Some(true));
}

#[test]
fn binary_trees_small_on_1_and_3_gc_threads_with_1_and_2_mutators() {
    for gc_threads in [1, 3] {
        for mutators in [1, 2] {
            let h = heap(4 * MIB, gc_threads, |_| {});
            let (r, _) = run_checked(&BinaryTrees, &h, &params(mutators, Some(12)), 5);
            assert_eq!(r.checksum, binary_trees::expected_checksum(12));
        }
    }
}

#[test]
fn binary_trees_forces_full_collections() {
    // Depth 14: the stretch tree (depth 15, 1.5 MiB), and the long-lived tree plus one
    // short-lived tree of depth 14 per mutator (0.75 MiB each), fill much of the old generation
    // (2.7 MiB of a 4 MiB heap, 4 MiB of a 6 MiB one); tenuring after one scavenge promotes
    // short-lived trees too. (With 2 mutators a 4 MiB heap sometimes runs out of memory: the
    // live set is 2.25 MiB, and a full collection moves eden into old only if all of it fits.)
    for (mutators, heap_mib) in [(1, 4), (2, 6)] {
        let h = heap(heap_mib * MIB, 3, tenure_after(1));
        let params = WorkloadParams {
            rounds: 2,
            ..params(mutators, Some(14))
        };
        let (_, s) = run_checked(&BinaryTrees, &h, &params, 10);
        assert_full_collections(&s);
    }
}

#[test]
fn binary_trees_output_lines() {
    let h = heap(4 * MIB, 1, |c| c.verify = false);
    let r = BinaryTrees.run(&h, &params(1, Some(6))).unwrap();
    let lines: Vec<String> = r
        .details
        .iter()
        .map(|(k, v)| format!("{k}\t {v}"))
        .collect();
    assert_eq!(
        lines,
        [
            "stretch tree of depth 7\t check: 255",
            "64 trees of depth 4\t check: 1984",
            "16 trees of depth 6\t check: 2032",
            "long lived tree of depth 6\t check: 127",
        ]
    );
    assert_eq!(r.checksum, 255 + 1984 + 2032 + 127);
    assert_eq!(
        r.expected_checksum,
        Some(binary_trees::expected_checksum(6))
    );
}

#[test]
fn binary_trees_depth_out_of_range_is_rejected_cleanly() {
    let h = heap(4 * MIB, 1, |_| {});
    for size in [0, 3, 31] {
        match BinaryTrees.run(&h, &params(1, Some(size))) {
            Err(WorkloadError::BadParameter(msg)) => {
                assert!(
                    msg.contains(&format!("{size} is out of range (allowed: 4..=30)")),
                    "{msg}"
                )
            }
            other => panic!("size {size}: expected BadParameter, got {other:?}"),
        }
    }
    assert_eq!(h.collection_count(), 0);
    assert_eq!(h.stats().bytes_allocated, 0);
}

#[test]
fn bad_common_parameters_are_rejected_by_every_workload() {
    let h = heap(4 * MIB, 1, |_| {});
    for name in concord_workloads::workload_names() {
        let w = lookup(name).unwrap();
        for params in [
            WorkloadParams {
                mutators: 0,
                ..Default::default()
            },
            WorkloadParams {
                rounds: 0,
                ..Default::default()
            },
        ] {
            assert!(
                matches!(w.run(&h, &params), Err(WorkloadError::BadParameter(_))),
                "{name} {params:?}"
            );
        }
    }
}

#[test]
fn too_small_a_heap_is_a_prompt_out_of_memory_error() {
    // Depth 16: the stretch tree (depth 17) alone is 6 MiB, more than a 4 MiB heap holds. The
    // run happens on a watchdogged thread so that a collector that keeps collecting instead of
    // giving up fails this test instead of hanging the suite.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let h = heap(4 * MIB, 2, |c| c.verify = false);
        let r = BinaryTrees.run(&h, &params(1, Some(16)));
        let _ = tx.send(r);
    });
    match rx.recv_timeout(std::time::Duration::from_secs(20)) {
        Ok(Err(e @ WorkloadError::OutOfMemory(_))) => {
            assert!(e.to_string().contains("out of memory"), "{e}")
        }
        Ok(other) => panic!("expected OutOfMemory, got {other:?}"),
        Err(_) => panic!(
            "binary-trees 16 in a 4 MiB heap neither finished nor ran out of memory within 20 s \
             (the collector keeps running full collections instead of reporting OutOfMemory)"
        ),
    }
}
