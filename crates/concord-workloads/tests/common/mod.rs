//! What the workload test files share: verifying heaps, parameters, running a workload with
//! the checks every run must pass, and reading its details.

// Each test file uses its own subset.
#![allow(dead_code)]

use concord::{CollectionKind, GcConfig, GcStats, Heap, Preset};
use concord_workloads::{Workload, WorkloadParams, WorkloadResult, MIB};

/// A heap of `heap_size` bytes with `gc_threads` GC threads that verifies after every
/// collection (optimized preset), changed by `tweak`.
pub fn heap(heap_size: usize, gc_threads: usize, tweak: impl FnOnce(&mut GcConfig)) -> Heap {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = heap_size;
    c.gc_threads = gc_threads;
    c.verify = true;
    tweak(&mut c);
    Heap::new(c).expect("test configuration is valid")
}

/// A configuration change that tenures objects once they survived `scavenges` scavenges (0:
/// everything that survives one is promoted), so that the old generation fills and full
/// collections happen.
pub fn tenure_after(scavenges: u32) -> impl FnOnce(&mut GcConfig) {
    move |c| {
        c.max_tenuring_threshold = scavenges;
        c.initial_tenuring_threshold = scavenges;
    }
}

/// At least one full collection happened.
pub fn assert_full_collections(s: &GcStats) {
    assert!(
        s.count(CollectionKind::Full) > 0,
        "no full collection: {} records",
        s.records.len()
    );
}

/// `mutators` mutators, one round, `size`.
pub fn params(mutators: usize, size: Option<u32>) -> WorkloadParams {
    WorkloadParams {
        mutators,
        rounds: 1,
        size,
    }
}

/// Runs `w` on `heap` and checks what every run must pass: it succeeds, its checksum is the
/// expected one, and every collection verified (there was at least one). Returns the result
/// and the heap's statistics.
pub fn run_checked(
    w: &dyn Workload,
    heap: &Heap,
    params: &WorkloadParams,
) -> (WorkloadResult, GcStats) {
    let r = w
        .run(heap, params)
        .unwrap_or_else(|e| panic!("{} {params:?}: {e}", w.name()));
    assert_eq!(
        r.checksum_ok(),
        Some(true),
        "{} {params:?}: {r:?}",
        w.name()
    );
    let s = heap.stats();
    assert!(s.verify_failures.is_empty(), "{:?}", s.verify_failures);
    assert_eq!(
        s.verified(),
        Some(true),
        "{} {params:?}: no verified collection",
        w.name()
    );
    eprintln!(
        "{} {params:?} heap {} MiB, {} GC threads: {} young, {} full, checksum {}",
        w.name(),
        heap.capacity() / MIB,
        heap.config().gc_threads,
        s.count(CollectionKind::Young),
        s.count(CollectionKind::Full),
        r.checksum
    );
    (r, s)
}

/// The value of detail `key`.
pub fn detail<'r>(r: &'r WorkloadResult, key: &str) -> &'r str {
    r.details
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no detail {key}: {:?}", r.details))
}
