//! Stall attribution (paper 002) through the public API: every collection record carries
//! what its GC threads used during the pause (CPU time, page faults, involuntary switches),
//! summed from each worker's own reading and the VM thread's; mutators' allocation stalls are
//! counted and cover the pauses they waited for. Every heap here is verified after each
//! collection and its data checked, so the attribution never comes at the price of an object.

mod common;

use concord::{CollectionKind, GcCause, GcConfig, Heap, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);

/// Build a live list of `len` nodes holding 0..len, collect young, then check the list.
fn young_collection_of_a_live_list(config: GcConfig, len: u64) -> concord::GcStats {
    let heap = Heap::new(config).unwrap();
    {
        let mut m = heap.attach();
        let head = m.alloc(NODE).unwrap();
        let cur = m.dup(head);
        for i in 0..len {
            m.scope(|m| {
                let n = m.alloc(NODE).unwrap();
                m.write_u64(n, 0, i);
                m.set_ref(cur, 0, Some(n));
                m.set_handle(cur, Some(n));
            });
        }
        m.collect(CollectionKind::Young);
        // Every node survived the copy with its value.
        let cur = m.dup(head);
        let mut sum = 0u64;
        let mut count = 0u64;
        while let Some(next) = m.get_ref(cur, 0) {
            sum += m.read_u64(next, 0);
            count += 1;
            m.set_handle(cur, Some(next));
        }
        assert_eq!(count, len);
        assert_eq!(sum, len * (len - 1) / 2);
    }
    heap.finish().unwrap()
}

#[test]
fn a_records_usage_is_the_sum_of_its_threads_and_copying_into_fresh_memory_faults() {
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.heap_size = 64 << 20;
    config.gc_threads = 2;
    config.verify = true;
    // A young generation large enough for ~1 MiB of survivors, all into untouched pages.
    let stats = young_collection_of_a_live_list(config, 40_000);
    common::assert_verified(&stats);
    let r = stats
        .records
        .iter()
        .find(|r| r.kind == CollectionKind::Young && r.cause == GcCause::Explicit)
        .expect("the explicit young collection");
    assert!(r.bytes_copied >= 40_000 * NODE.size_bytes(), "{r:?}");
    // The record's figures are the VM thread's share plus every worker's, exactly.
    let mut total = r.vm_thread_usage;
    r.workers.iter().for_each(|w| total.add(&w.usage));
    assert_eq!(r.gc_user_ms, total.user_ms());
    assert_eq!(r.gc_sys_ms, total.sys_ms());
    assert_eq!(r.pause_minor_faults, total.minor_faults);
    assert_eq!(r.pause_major_faults, total.major_faults);
    assert_eq!(r.gc_involuntary_switches, total.involuntary_switches);
    // Copying ~1 MiB into to-space pages nobody touched before takes first-touch faults, on
    // the workers that copy (with transparent huge pages a few, never none).
    assert!(r.pause_minor_faults >= 1, "{r:?}");
    assert!(
        r.workers.iter().map(|w| w.usage.minor_faults).sum::<u64>() >= 1,
        "the workers copied, so they faulted: {:?}",
        r.workers
    );
    // The threads ran during the pause: their exact CPU clocks moved (user and sys move in
    // ticks and may not, for a pause this short).
    assert!(total.cpu_ns > 0, "{r:?}");
    // They cannot have used more CPU than the pause's wall time on each of them, plus the
    // kernel's accounting granularity (a few ms per thread at most).
    let threads = (r.workers.len() + 1) as f64;
    assert!(
        r.gc_user_ms + r.gc_sys_ms <= threads * (r.pause_ms + 10.0),
        "{r:?}"
    );
}

#[test]
fn a_full_collection_charges_its_work_to_the_workers_and_keeps_every_object() {
    let mut config = GcConfig::for_preset(Preset::Vanilla);
    config.heap_size = 16 << 20;
    config.gc_threads = 2;
    config.verify = true;
    let heap = Heap::new(config).unwrap();
    {
        let mut m = heap.attach();
        let keep = m.alloc_ref_array(2_000).unwrap();
        for i in 0..20_000usize {
            m.scope(|m| {
                let n = m.alloc(NODE).unwrap();
                m.write_u64(n, 0, i as u64);
                if i % 10 == 0 {
                    m.set_ref(keep, i / 10, Some(n));
                }
            });
        }
        m.collect(CollectionKind::Full);
        for j in 0..2_000 {
            let n = m.get_ref(keep, j).expect("kept node");
            assert_eq!(m.read_u64(n, 0), (j * 10) as u64);
        }
    }
    let stats = heap.finish().unwrap();
    common::assert_verified(&stats);
    let full = stats
        .records
        .iter()
        .find(|r| r.kind == CollectionKind::Full)
        .expect("a full collection");
    // The exact thread CPU clock, not user + sys: those move in scheduler ticks where the
    // kernel samples them, and a 0.1 ms collection can fall between two ticks.
    let worker_cpu: u64 = full.workers.iter().map(|w| w.usage.cpu_ns).sum();
    assert!(worker_cpu > 0, "{:?}", full.workers);
}

#[test]
fn allocation_stalls_are_counted_and_cover_the_pauses_they_waited_for() {
    for preset in [Preset::Vanilla, Preset::Optimized] {
        let mut config = GcConfig::for_preset(preset);
        config.heap_size = 8 << 20;
        config.gc_threads = 2;
        config.verify = true;
        let heap = Heap::new(config).unwrap();
        {
            let mut m = heap.attach();
            // A ring of 1 000 live nodes, replaced over and over: allocation fills eden and
            // every collection is one this mutator's failed allocation asked for.
            let ring = m.alloc_ref_array(1_000).unwrap();
            for i in 0..400_000usize {
                m.scope(|m| {
                    let n = m.alloc(NODE).unwrap();
                    m.write_u64(n, 0, i as u64);
                    m.set_ref(ring, i % 1_000, Some(n));
                });
            }
            for j in 0..1_000 {
                let n = m.get_ref(ring, j).expect("ring node");
                assert_eq!(m.read_u64(n, 0) as usize % 1_000, j);
            }
        }
        let stats = heap.finish().unwrap();
        common::assert_verified(&stats);
        let failures = stats
            .records
            .iter()
            .filter(|r| r.cause == GcCause::AllocationFailure)
            .count();
        assert!(failures >= 2, "{preset}: {failures} collections");
        let stalls = &stats.alloc_stalls;
        // One mutator: each operation it asked for is one stall of its own (a young collection
        // and a full one in the same operation are one stall).
        assert!(stalls.count() >= 1 && stalls.count() <= stats.records.len());
        // The mutator waited through the whole pause of every collection it asked for, so the
        // longest stall is at least the longest pause (and every stall is positive).
        let longest_pause = stats.pause_max_ms();
        assert!(
            stalls.max_ms() >= longest_pause,
            "{preset}: stall {} < pause {longest_pause}",
            stalls.max_ms()
        );
        assert!(stalls.stalls_ms.iter().all(|&ms| ms > 0.0));
        assert!(stalls.percentile_ms(99.0) <= stalls.max_ms());
    }
}
