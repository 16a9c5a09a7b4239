//! The server-style workloads (`database`, `kmeans`, `kv-service`) at tiny sizes on small heaps
//! with verification after every collection: checksums must match the expected ones and agree
//! between 1 and 2 mutators (each mutator owns a shard; the checksums do not depend on the
//! split), every collection must verify, and `kv-service` must report sane latency figures.

mod common;

use concord::{CollectionKind, GcConfig, GcStats, Heap};
use concord_workloads::{
    database, kmeans, kv_service, lookup, Database, KMeans, KvService, Workload, WorkloadError,
    WorkloadParams, WorkloadResult, MIB,
};

/// A verifying heap with 2 GC threads.
fn heap(heap_size: usize, tweak: impl FnOnce(&mut GcConfig)) -> Heap {
    common::heap(heap_size, 2, tweak)
}

fn params(mutators: usize, size: u32) -> WorkloadParams {
    common::params(mutators, Some(size))
}

/// Runs `w` on a fresh verifying heap of `heap_mib` MiB (changed by `tweak`) with
/// [`common::run_checked`]'s checks.
fn run_checked(
    w: &dyn Workload,
    heap_mib: usize,
    params: &WorkloadParams,
    tweak: impl FnOnce(&mut GcConfig),
) -> (WorkloadResult, GcStats) {
    common::run_checked(w, &heap(heap_mib * MIB, tweak), params)
}

/// Runs `w` at size 4 on a fresh verifying 8 MiB heap with each number of `mutators`: the
/// checksum must be `expected` every time (it does not depend on the split), with at least
/// `min_young` young collections. Returns the results, in order.
fn run_split(
    w: &dyn Workload,
    mutators: &[usize],
    expected: u64,
    min_young: usize,
) -> Vec<WorkloadResult> {
    let run = |&n: &usize| {
        let (r, s) = run_checked(w, 8, &params(n, 4), |_| {});
        assert_eq!(r.checksum, expected, "{} with {n} mutators", w.name());
        assert!(
            s.count(CollectionKind::Young) >= min_young,
            "{} with {n} mutators",
            w.name()
        );
        r
    };
    mutators.iter().map(run).collect()
}

#[test]
fn database_small_with_1_and_2_mutators() {
    let results = run_split(&Database, &[1, 2], database::expected_checksum(4), 3);
    for (mutators, r) in [1, 2].into_iter().zip(results) {
        let shards: Vec<u64> = common::detail(&r, "transactions_per_shard")
            .split(' ')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(shards.len(), mutators);
        if mutators == 2 {
            // The hot set lies in shard 0: thread 0 is the busy one.
            assert!(shards[0] > 5 * shards[1], "{shards:?}");
        }
    }
}

#[test]
fn database_forces_full_collections_and_multiplies_by_rounds() {
    // Everything that survives a scavenge is promoted, so the old generation of a 4 MiB heap
    // (2.7 MiB) fills with replaced rows and index pages.
    let p = WorkloadParams {
        rounds: 2,
        ..params(2, 4)
    };
    let (r, s) = run_checked(&Database, 4, &p, common::tenure_after(0));
    assert_eq!(r.checksum, database::expected_checksum(4).wrapping_mul(2));
    common::assert_full_collections(&s);
}

#[test]
fn kmeans_small_with_1_2_and_3_mutators() {
    let expected = kmeans::known_checksum(4).expect("size 4 is known");
    run_split(&KMeans, &[1, 2, 3], expected, 1);
}

#[test]
fn kmeans_unknown_size_has_no_expected_checksum_but_is_deterministic() {
    let run = |mutators| {
        let h = heap(8 * MIB, |c| c.verify = false);
        KMeans.run(&h, &params(mutators, 3)).unwrap()
    };
    let (a, b) = (run(1), run(2));
    assert_eq!(a.expected_checksum, None);
    assert_eq!(a.checksum, b.checksum);
    assert_eq!(a.checksum, kmeans::reference_checksum(3));
}

/// The `f64` value of detail `key`.
fn detail(r: &WorkloadResult, key: &str) -> f64 {
    let v = common::detail(r, key);
    v.parse()
        .unwrap_or_else(|e| panic!("detail {key} = {v:?}: {e}"))
}

#[test]
fn kv_service_small_with_1_and_2_clients() {
    for r in run_split(&KvService, &[1, 2], kv_service::expected_checksum(4), 3) {
        let p50 = detail(&r, "latency_p50_us");
        let p95 = detail(&r, "latency_p95_us");
        let p99 = detail(&r, "latency_p99_us");
        let p999 = detail(&r, "latency_p999_us");
        let max = detail(&r, "latency_max_us");
        assert!(
            0.0 < p50 && p50 <= p95 && p95 <= p99 && p99 <= p999 && p999 <= max,
            "{:?}",
            r.details
        );
        assert!(detail(&r, "throughput_rps") > 0.0);
        let requests = kv_service::Shape::new(4).requests as f64;
        assert_eq!(detail(&r, "requests"), requests);
        assert_eq!(detail(&r, "gets") + detail(&r, "puts"), requests);
    }
}

#[test]
fn bad_sizes_are_rejected_before_anything_runs() {
    let h = heap(4 * MIB, |_| {});
    for name in ["database", "kmeans", "kv-service"] {
        let w = lookup(name).expect("registered");
        for size in [0, 10_001] {
            match w.run(&h, &params(1, size)) {
                Err(WorkloadError::BadParameter(msg)) => {
                    assert!(
                        msg.contains(&format!("{size} (thousands of")) && msg.contains("1..=10000"),
                        "{msg}"
                    )
                }
                other => panic!("{name} size {size}: expected BadParameter, got {other:?}"),
            }
        }
        assert!(w.default_heap(&WorkloadParams::default()) >= 64 * MIB);
    }
    assert_eq!(h.collection_count(), 0);
    assert_eq!(h.stats().bytes_allocated, 0);
}

#[test]
fn too_small_a_heap_is_a_prompt_out_of_memory_error_with_2_mutators() {
    // The threads of kmeans and kv-service wait for each other at barriers; a thread that runs
    // out of memory must release the others instead of leaving them waiting. Watchdogged so a
    // hang fails the test instead of the suite. Size 120: kmeans 60 fits in 4 MiB since large
    // objects may go to eden when old is full (issue 10).
    for name in ["kmeans", "kv-service", "database"] {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let h = heap(4 * MIB, |c| c.verify = false);
            let r = lookup(name).unwrap().run(&h, &params(2, 120));
            let _ = tx.send(r);
        });
        match rx.recv_timeout(std::time::Duration::from_secs(20)) {
            Ok(Err(e @ WorkloadError::OutOfMemory(_))) => {
                assert!(e.to_string().contains("out of memory"), "{name}: {e}")
            }
            Ok(other) => panic!("{name}: expected OutOfMemory, got {other:?}"),
            Err(_) => panic!("{name} size 120 in a 4 MiB heap did not finish within 20 s"),
        }
    }
}
