//! The replay against the runtime: a trace recorded by a real heap (one GC worker; a reference
//! array long enough to be scanned in chunks, trees, garbage; young collections, a full one,
//! and a young one whose work comes through the cards of the old array) is replayed on one
//! worker, and every collection processes exactly the items the runtime's worker did; its
//! PLAB sizes travel with the trace. On the simulated engine a replay is deterministic, and
//! each PLAB refill costs the CAS on the shared space top.

use std::sync::{Arc, Mutex};

use concord::parallel::ParkingKind;
use concord::telemetry::gc_trace::{PlabSizes, TraceKind};
use concord::{CollectionKind, CollectionRecord, GcConfig, Heap, ObjectType, Preset};
use concord_sim::exec::{self, Costs, Sim};
use concord_sim::replay::{load_trace, threads, ReplayCollection, Trace};

/// Two reference slots (a tree node's children), 8 bytes of payload.
const NODE: ObjectType = ObjectType::fixed(2, 8);
/// Slots of the big array: six chunks of `ARRAY_CHUNK` (256) and a bit.
const ARRAY_LEN: usize = 1600;

/// A tree of `depth` levels of `NODE`s, among as much garbage; returns its root.
fn tree(m: &mut concord::Mutator<'_>, depth: u32) -> concord::Handle {
    let node = m.alloc(NODE).unwrap();
    m.alloc(NODE).unwrap();
    if depth > 1 {
        for slot in 0..2 {
            m.scope(|m| {
                let child = tree(m, depth - 1);
                m.set_ref(node, slot, Some(child));
            });
        }
    }
    node
}

/// Records a run with one GC worker and the PLAB sizes `plabs` into `path`: young collections
/// of an array whose every other slot holds a small tree (the others stay null) and of a
/// deeper tree, a full collection, then fresh trees stored into the (old) array and one more
/// young collection. Returns the collections' records.
fn record(path: &std::path::Path, plabs: PlabSizes) -> Vec<CollectionRecord> {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 32 << 20;
    c.gc_threads = 1;
    c.gc_trace = Some(path.to_path_buf());
    c.young_plab_size = plabs.young as usize;
    c.old_plab_size = plabs.old as usize;
    let heap = Heap::new(c).unwrap();
    {
        let mut m = heap.attach();
        let array = m.alloc_ref_array(ARRAY_LEN).unwrap();
        let _deep = tree(&mut m, 10);
        for i in (0..ARRAY_LEN).step_by(2) {
            m.scope(|m| {
                let t = tree(m, 3);
                m.set_ref(array, i, Some(t));
            });
        }
        for _ in 0..3 {
            m.collect(CollectionKind::Young);
        }
        m.collect(CollectionKind::Full);
        for i in (0..ARRAY_LEN).step_by(3) {
            m.scope(|m| {
                let t = tree(m, 2);
                m.set_ref(array, i, Some(t));
            });
        }
        m.collect(CollectionKind::Young);
    }
    heap.finish().unwrap().records
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("concord-sim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `c` replayed on one real worker: its statistics.
fn replay_on_one_worker(c: &ReplayCollection) -> concord::telemetry::WorkerPhaseStats {
    let pool = concord::parallel::WorkerPool::new(1, "replay", ParkingKind::Futex, |_| {}).unwrap();
    let task = threads::ReplayTask::new(c);
    let (_, mut stats) = task.run(&pool, &concord::parallel::PhasePolicy::OPTIMIZED, 1);
    stats.remove(0)
}

#[test]
fn a_recorded_collection_replays_the_runtimes_items_one_for_one() {
    let dir = scratch("replay-items");
    let path = dir.join("run.trace");
    let plabs = PlabSizes {
        young: 8 << 10,
        old: 4 << 10,
    };
    let records = record(&path, plabs);
    let Trace { run, collections } = load_trace(&path).unwrap();
    assert_eq!(run.plab_sizes, Some(plabs));
    assert_eq!(collections.len(), records.len(), "one frame per collection");
    assert!(collections.iter().any(|c| c.kind == TraceKind::Full));
    let mut chunked = 0;
    for (c, r) in collections.iter().zip(&records) {
        assert_eq!(c.id, r.id);
        assert_eq!(c.plab_sizes, plabs);
        assert_eq!(r.workers.len(), 1, "GC({}): one worker", r.id);
        let recorded = &r.workers[0];
        let replayed = replay_on_one_worker(c);
        assert_eq!(
            replayed.items, recorded.items,
            "GC({}) ({:?}): items replayed and recorded",
            c.id, c.kind
        );
        assert_eq!(replayed.bytes_copied, c.bytes_copied(), "GC({})", c.id);
        // The array was copied (or marked) in chunks.
        if (0..c.objects() as u32).any(|id| c.is_ref_array(id) && c.slots(id) == ARRAY_LEN) {
            chunked += 1;
        }
    }
    // The first young collections copy the array, the full one marks it; the last one
    // reaches the fresh trees through its cards only.
    assert!(chunked >= 2, "{chunked} collections scanned the array");
    let last = collections.last().unwrap();
    assert_eq!(last.kind, TraceKind::Young);
    assert!((0..last.objects() as u32).all(|id| !last.is_ref_array(id)));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `c` replayed on the simulated engine, `workers` workers on as many CPUs, seed `seed`: the
/// workers' counters and statistics, and the phase's virtual duration.
fn simulate(
    c: ReplayCollection,
    workers: usize,
    seed: u64,
) -> (
    Vec<concord_sim::replay::simulated::ReplayLocal>,
    Vec<concord::telemetry::WorkerPhaseStats>,
    u64,
) {
    let out = Arc::new(Mutex::new(None));
    let result = out.clone();
    let mut sim = Sim::new(workers, Costs::DEFAULT, seed);
    sim.spawn("vm", move || {
        use concord_sim::parallel::policy::{ParkingKind, PhasePolicy};
        let pool =
            concord_sim::parallel::pool::WorkerPool::new(workers, "gc", ParkingKind::Futex, |_| {})
                .unwrap();
        let task = concord_sim::replay::simulated::ReplayTask::new(&c);
        let start = exec::now().unwrap();
        let (locals, stats) = task.run(&pool, &PhasePolicy::OPTIMIZED, workers);
        let ns = exec::now().unwrap() - start;
        *result.lock().unwrap() = Some((locals, stats, ns));
    });
    sim.run();
    let out = out.lock().unwrap().take().unwrap();
    out
}

#[test]
fn a_simulated_replay_is_deterministic_and_charges_each_plab_refill() {
    let dir = scratch("replay-sim");
    let path = dir.join("run.trace");
    let small = PlabSizes {
        young: 1 << 10,
        old: 1 << 10,
    };
    record(&path, small);
    let trace = load_trace(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let first = trace.collections[0].clone();
    assert_eq!(first.kind, TraceKind::Young);
    // Same seed, same replay, bit for bit, on four workers.
    let a = simulate(first.clone(), 4, 7);
    let b = simulate(first.clone(), 4, 7);
    // (The statistics have no `PartialEq`: compared as printed, timings included.)
    assert_eq!(a.0, b.0);
    assert_eq!(format!("{:?}", a.1), format!("{:?}", b.1));
    assert_eq!(a.2, b.2);
    assert_eq!(
        a.0.iter().map(|l| l.objects).sum::<u64>(),
        first.objects() as u64
    );
    // On one worker the only difference PLAB sizes make is the refills: each is a load and
    // a CAS of the shared space top more.
    let (small_locals, _, small_ns) = simulate(first.clone(), 1, 7);
    let mut large = first;
    large.plab_sizes = PlabSizes {
        young: 1 << 20,
        old: 1 << 20,
    };
    let (large_locals, _, large_ns) = simulate(large, 1, 7);
    let refills = |l: &concord_sim::replay::simulated::ReplayLocal| {
        l.young_refills + l.old_refills + l.direct_allocations
    };
    let extra = refills(&small_locals[0]) - refills(&large_locals[0]);
    assert!(extra > 10, "{extra} more refills with 1 KiB PLABs");
    let per_refill = Costs::DEFAULT.atomic_load + Costs::DEFAULT.cas;
    assert!(
        small_ns >= large_ns + extra * per_refill,
        "{small_ns} ns with 1 KiB PLABs, {large_ns} ns with 1 MiB, {extra} more refills"
    );
}
