//! Stress tests: several mutator threads on one heap, and clean out-of-memory behaviour.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod common;

use common::with_watchdog;

use concord::{
    CollectionKind, GcConfig, GcError, GcErrorKind, Handle, Heap, Mutator, ObjectType, Preset,
};

const MIB: usize = 1 << 20;

/// A list or tree node: slot 0 next/left, slot 1 right; payload: value, !value (integrity check).
const NODE: ObjectType = ObjectType::fixed(2, 16).with_tag(0x5157);

fn config(heap: usize, threads: usize) -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = heap;
    c.gc_threads = threads;
    c.verify = true;
    c
}

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

fn new_node(m: &mut Mutator<'_>, value: u64) -> Handle {
    let n = m
        .alloc(NODE)
        .unwrap_or_else(|e| panic!("allocation failed: {e}"));
    m.write_u64(n, 0, value);
    m.write_u64(n, 8, !value);
    n
}

/// Checks one node's integrity and returns its value.
fn node_value(m: &Mutator<'_>, n: Handle) -> u64 {
    assert_eq!(m.tag(n), NODE.tag(), "node lost its type tag");
    let v = m.read_u64(n, 0);
    assert_eq!(m.read_u64(n, 8), !v, "node payload corrupted");
    v
}

/// A list of `len` nodes with values from `seed`; returns (head, sum of values).
fn build_list(m: &mut Mutator<'_>, len: usize, seed: u64) -> (Handle, u64) {
    let head = m.null_handle();
    let mut sum = 0u64;
    // Built back to front: each new node points at the previous head (young -> older);
    // `append` covers the other direction (old -> young).
    for i in 0..len {
        m.scope(|m| {
            let v = mix(seed ^ i as u64);
            sum = sum.wrapping_add(v);
            let n = new_node(m, v);
            m.set_ref(n, 0, Some(head));
            m.set_handle(head, Some(n));
        });
    }
    (head, sum)
}

/// Append `len` nodes at the end of the list starting at `head` (old node -> young node).
fn append(m: &mut Mutator<'_>, head: Handle, len: usize, seed: u64) -> u64 {
    m.scope(|m| {
        let last = m.dup(head);
        loop {
            let next = m.get_ref(last, 0);
            match next {
                Some(n) => m.set_handle(last, Some(n)),
                None => break,
            }
        }
        let mut sum = 0u64;
        for i in 0..len {
            m.scope(|m| {
                let v = mix(seed ^ (i as u64) << 20);
                sum = sum.wrapping_add(v);
                let n = new_node(m, v);
                m.set_ref(last, 0, Some(n));
                m.set_handle(last, Some(n));
            });
        }
        sum
    })
}

/// (length, sum of values) of a list.
fn list_sum(m: &mut Mutator<'_>, head: Handle) -> (usize, u64) {
    m.scope(|m| {
        let cur = m.dup(head);
        let (mut len, mut sum) = (0, 0u64);
        while !m.is_null(cur) {
            sum = sum.wrapping_add(node_value(m, cur));
            len += 1;
            m.load_ref_into(cur, cur, 0);
        }
        (len, sum)
    })
}

/// A complete binary tree of `depth`, parents allocated before their children (so a collection
/// in the middle leaves old parents pointing at young children). Adds its values to `sum`.
fn build_tree(m: &mut Mutator<'_>, depth: u32, seed: &mut u64, sum: &mut u64) -> Handle {
    m.scope_escape(|m| {
        *seed = mix(*seed);
        let v = *seed;
        *sum = sum.wrapping_add(v);
        let n = new_node(m, v);
        if depth > 0 {
            let l = build_tree(m, depth - 1, seed, sum);
            m.set_ref(n, 0, Some(l));
            let r = build_tree(m, depth - 1, seed, sum);
            m.set_ref(n, 1, Some(r));
        }
        Ok(Some(n))
    })
    .unwrap()
    .unwrap()
}

/// (nodes, sum of values) of a tree.
fn tree_sum(m: &mut Mutator<'_>, root: Handle) -> (usize, u64) {
    m.scope(|m| {
        let mut stack = vec![m.dup(root)];
        let (mut count, mut sum) = (0, 0u64);
        while let Some(n) = stack.pop() {
            sum = sum.wrapping_add(node_value(m, n));
            count += 1;
            for s in 0..2 {
                if let Some(c) = m.get_ref(n, s) {
                    stack.push(c);
                }
            }
        }
        (count, sum)
    })
}

/// Hang a fresh (young) subtree of 7 nodes into the null left slot of the leftmost node: an
/// old-to-young store into a long-lived tree. Returns (nodes added, sum of their values).
fn graft(m: &mut Mutator<'_>, root: Handle, seed: u64) -> (usize, u64) {
    m.scope(|m| {
        let cur = m.dup(root);
        let probe = m.null_handle();
        while m.load_ref_into(probe, cur, 0) {
            m.set_handle(cur, Some(probe));
        }
        let mut s = seed;
        let mut sum = 0;
        let sub = build_tree(m, 2, &mut s, &mut sum);
        m.set_ref(cur, 0, Some(sub));
        (7, sum)
    })
}

struct ThreadReport {
    iterations: usize,
    temp_nodes_checked: usize,
}

/// One mutator thread's workload.
fn worker(
    heap: &Heap,
    t: usize,
    iterations: usize,
    full_every: Option<usize>,
    sleeper: bool,
) -> ThreadReport {
    let mut m = heap.attach();
    let seed0 = mix(t as u64 + 1);
    // Long-lived structures, built first (they will be promoted).
    let (list, mut list_expect) = build_list(&mut m, 3000, seed0);
    let mut list_len = 3000;
    let mut tseed = seed0 ^ 0xabc;
    let mut tree_expect = 0;
    let tree = build_tree(&mut m, 10, &mut tseed, &mut tree_expect);
    let mut tree_nodes = (1 << 11) - 1;
    // Medium-lived: a ring of 8 trees, each replaced after 8 iterations (checked first).
    let ring = m.alloc_ref_array(8).unwrap();
    let mut ring_expect = [(0usize, 0u64); 8];
    let mut temp_checked = 0;

    for it in 0..iterations {
        let s = mix(seed0 ^ (it as u64) << 8);
        // Short-lived list.
        let len = 100 + (s % 1500) as usize;
        let (n, sum) = m.scope(|m| {
            let (h, sum) = build_list(m, len, s);
            let got = list_sum(m, h);
            (got, sum)
        });
        assert_eq!(n, (len, sum), "thread {t} iteration {it}: temporary list");
        temp_checked += len;
        // Short-lived tree.
        let depth = 3 + (s >> 20) as u32 % 7;
        let mut tree_seed = s ^ 0x77;
        let (got, want) = m.scope(|m| {
            let mut sum = 0;
            let h = build_tree(m, depth, &mut tree_seed, &mut sum);
            (tree_sum(m, h), sum)
        });
        assert_eq!(
            got,
            ((1 << (depth + 1)) - 1, want),
            "thread {t} iteration {it}: temporary tree"
        );
        temp_checked += got.0;
        // Medium-lived ring slot.
        let slot = it % 8;
        m.scope(|m| {
            if let Some(old) = m.get_ref(ring, slot) {
                assert_eq!(
                    tree_sum(m, old),
                    ring_expect[slot],
                    "thread {t} iteration {it}: ring tree {slot}"
                );
            }
            let mut seed = s ^ 0x5a5a;
            let mut sum = 0;
            let h = build_tree(m, 6, &mut seed, &mut sum);
            m.set_ref(ring, slot, Some(h));
            ring_expect[slot] = (127, sum);
        });
        // Mutate the long-lived structures now and then (old-to-young stores).
        if it % 10 == 5 {
            list_expect = list_expect.wrapping_add(append(&mut m, list, 20, s));
            list_len += 20;
            let (n, sum) = graft(&mut m, tree, s);
            tree_nodes += n;
            tree_expect = tree_expect.wrapping_add(sum);
        }
        if let Some(k) = full_every {
            if it % k == k - 1 {
                m.collect(CollectionKind::Full);
            }
        }
        if sleeper {
            // Part of the load, not a wait for anything: a mutator blocked in a system call
            // while the others allocate and collect.
            m.blocking(|| std::thread::sleep(Duration::from_millis(1)));
        }
    }
    assert_eq!(
        list_sum(&mut m, list),
        (list_len, list_expect),
        "thread {t}: long-lived list"
    );
    assert_eq!(
        tree_sum(&mut m, tree),
        (tree_nodes, tree_expect),
        "thread {t}: long-lived tree"
    );
    for (slot, want) in ring_expect.iter().enumerate() {
        let got = m.scope(|m| {
            let h = m.get_ref(ring, slot).unwrap();
            tree_sum(m, h)
        });
        assert_eq!(got, *want, "thread {t}: ring tree {slot} at the end");
    }
    ThreadReport {
        iterations,
        temp_nodes_checked: temp_checked,
    }
}

fn run_mutators(heap_size: usize, gc_threads: usize, iterations: usize) {
    with_watchdog(Duration::from_secs(120), move || {
        let heap = Heap::new(config(heap_size, gc_threads)).unwrap();
        let checked = AtomicU64::new(0);
        let start = Instant::now();
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    let heap = &heap;
                    let checked = &checked;
                    std::thread::Builder::new()
                        .name(format!("mutator-{t}"))
                        .spawn_scoped(s, move || {
                            let full_every = (t == 0).then_some(40);
                            let r = worker(heap, t, iterations, full_every, t == 1);
                            checked.fetch_add(r.temp_nodes_checked as u64, Ordering::Relaxed);
                            assert_eq!(r.iterations, iterations);
                        })
                        .unwrap()
                })
                .collect();
            for h in handles {
                h.join().expect("a mutator thread failed");
            }
        });
        let stats = heap.stats();
        eprintln!(
            "{} MiB, {gc_threads} GC threads: {} young, {} full collections, {} nodes checked, {:?}",
            heap_size / MIB,
            stats.count(CollectionKind::Young),
            stats.count(CollectionKind::Full),
            checked.load(Ordering::Relaxed),
            start.elapsed(),
        );
        assert!(
            stats.verify_failures.is_empty(),
            "{:?}",
            stats.verify_failures
        );
        assert!(
            stats.count(CollectionKind::Young) >= 5,
            "too few young collections: {}",
            stats.count(CollectionKind::Young)
        );
        assert!(
            stats.count(CollectionKind::Full) >= 2,
            "too few full collections: {}",
            stats.count(CollectionKind::Full)
        );
        assert!(stats
            .records
            .iter()
            .all(|r| r.verified.is_some() || r.promotion_failed));
        assert_eq!(stats.verified(), Some(true));
    });
}

#[test]
fn four_mutators_two_gc_threads() {
    run_mutators(8 * MIB, 2, 600);
}

#[test]
fn four_mutators_four_gc_threads() {
    run_mutators(16 * MIB, 4, 600);
}

/// Keeps `chunk`-byte arrays reachable through an array of arrays until allocation fails.
/// Returns (bytes kept when it failed, the error).
fn fill_until_oom(m: &mut Mutator<'_>, outer: Handle, chunk: usize) -> (usize, GcError) {
    const INNER: usize = 64;
    let mut kept = 0usize;
    for i in 0..m.array_len(outer) {
        let r = m.scope(|m| -> Result<(), GcError> {
            let inner = m.alloc_ref_array(INNER)?;
            m.set_ref(outer, i, Some(inner));
            kept += 8 + 8 * INNER;
            for j in 0..INNER {
                m.scope(|m| -> Result<(), GcError> {
                    let b = m.alloc_byte_array(chunk)?;
                    m.payload_mut(b)[0] = j as u8;
                    m.set_ref(inner, j, Some(b));
                    Ok(())
                })?;
                kept += 8 + chunk.div_ceil(8) * 8;
            }
            Ok(())
        });
        if let Err(e) = r {
            return (kept, e);
        }
    }
    panic!("the heap held {kept} bytes without running out of memory");
}

fn out_of_memory_is_clean(chunk: usize, large_object_threshold: usize) {
    with_watchdog(Duration::from_secs(120), move || {
        let mut c = config(8 * MIB, 2);
        c.large_object_threshold = large_object_threshold;
        let heap = Heap::new(c).unwrap();
        let capacity = heap.capacity();
        let mut m = heap.attach();
        let outer = m.alloc_ref_array(4096).unwrap();
        let (kept, err) = fill_until_oom(&mut m, outer, chunk);
        // Plain out of memory, or the GC overhead limit when the collections before the
        // failing one all left less than 2 % of the heap free.
        match err.kind() {
            GcErrorKind::OutOfMemory {
                requested,
                heap_size,
                ..
            }
            | GcErrorKind::GcOverheadLimit {
                requested,
                heap_size,
                ..
            } => {
                assert_eq!(*heap_size, capacity);
                assert!(
                    *requested > 0 && *requested <= 8 + 8 * 64 + chunk,
                    "requested {requested}"
                );
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert!(err.to_string().contains("out of memory"), "{err}");
        eprintln!("chunk {chunk}: OutOfMemory with {kept} of {capacity} bytes live: {err}");
        // Out of memory is not premature: most of the heap was live.
        assert!(
            kept > capacity / 2,
            "only {kept} of {capacity} bytes were live at OutOfMemory"
        );
        // Everything kept is intact and the heap is consistent.
        let report = m.verify_heap().unwrap();
        assert!(
            report.reachable_bytes >= kept - 8 * 1024,
            "{report:?} vs {kept}"
        );
        m.scope(|m| {
            for i in 0..m.array_len(outer) {
                let Some(inner) = m.get_ref(outer, i) else {
                    break;
                };
                for j in 0..64 {
                    if let Some(b) = m.get_ref(inner, j) {
                        assert_eq!(m.payload(b)[0], j as u8);
                        assert_eq!(m.array_len(b), chunk);
                    }
                }
            }
        });

        // Drop the data: allocation works again after a full collection.
        m.set_handle(outer, None);
        m.collect(CollectionKind::Full);
        assert!(
            m.heap_used() < capacity / 8,
            "{} bytes still used after dropping everything",
            m.heap_used()
        );
        let outer = m.alloc_ref_array(4096).unwrap();
        m.scope(|m| {
            for i in 0..(capacity / 4) / chunk {
                let b = m
                    .alloc_byte_array(chunk)
                    .expect("allocation after recovering from OOM");
                m.set_ref(outer, i, Some(b));
            }
        });
        m.collect(CollectionKind::Young);
        m.collect(CollectionKind::Full);
        m.verify_heap().unwrap();
        drop(m);
        let stats = heap.stats();
        common::assert_verified(&stats);
    });
}

#[test]
fn out_of_memory_with_young_objects_is_an_error_and_recoverable() {
    // 1 KiB byte arrays: allocated in eden, promoted, until old is full.
    out_of_memory_is_clean(1024, 64 * 1024);
}

#[test]
fn out_of_memory_with_large_objects_is_an_error_and_recoverable() {
    // 8 KiB byte arrays above a 4 KiB threshold: allocated directly in the old generation.
    out_of_memory_is_clean(8 * 1024, 4 * 1024);
}

#[test]
fn oversized_request_is_out_of_memory_not_a_hang() {
    with_watchdog(Duration::from_secs(60), || {
        let heap = Heap::new(config(4 * MIB, 2)).unwrap();
        let mut m = heap.attach();
        let keep = m.alloc(NODE).unwrap();
        m.write_u64(keep, 0, 7);
        match m.alloc_byte_array(64 * MIB).map_err(GcError::into_kind) {
            Err(GcErrorKind::LargerThanHeap { requested, .. }) => assert!(requested >= 64 * MIB),
            other => panic!("expected LargerThanHeap, got {other:?}"),
        }
        match m.alloc_ref_array(1 << 20).map_err(GcError::into_kind) {
            Err(GcErrorKind::LargerThanHeap { requested, .. }) => assert!(requested >= 8 << 20),
            other => panic!("expected LargerThanHeap, got {other:?}"),
        }
        // Nothing was lost on the way.
        assert_eq!(m.read_u64(keep, 0), 7);
        let small = m.alloc_byte_array(100).unwrap();
        assert_eq!(m.array_len(small), 100);
        m.verify_heap().unwrap();
    });
}

/// Regression test (found by the four-mutator workload in a 4–5 MiB heap, minimised): no
/// `OutOfMemory` with an empty heap.
///
/// Eight threads allocate nothing but garbage (40-byte objects) in a 4 MiB heap; one of them
/// also asks for a full collection every 100 allocations. A mutator whose allocation failed
/// used to request a collection, retry after the world resumed and report `OutOfMemory` once
/// two full collections had run for it; by the time it ran again the other threads had
/// refilled eden, so it failed twice and got `OutOfMemory` — often on its first allocation —
/// with 0 bytes reachable. (The allocation has to be made for the requester inside the
/// safepoint, as HotSpot's `VM_ParallelGCFailedAllocation` does.)
#[test]
fn no_spurious_out_of_memory_under_allocation_contention() {
    with_watchdog(Duration::from_secs(120), || {
        for attempt in 0..5 {
            let mut c = config(4 * MIB, 2);
            c.verify = false;
            let heap = Heap::new(c).unwrap();
            std::thread::scope(|s| {
                for t in 0..8 {
                    let heap = &heap;
                    s.spawn(move || {
                        let mut m = heap.attach();
                        for i in 0..50_000u64 {
                            let r = m.scope(|m| m.alloc(NODE).map(|_| ()));
                            if let Err(e) = r {
                                let live = m.verify_heap().unwrap().reachable_bytes;
                                panic!("attempt {attempt}, thread {t}, allocation {i}: {e} (reachable: {live} bytes)");
                            }
                            if t == 0 && i % 100 == 0 {
                                m.collect(CollectionKind::Full);
                            }
                        }
                    });
                }
            });
        }
    });
}

/// A thread parked in a blocking region keeps its roots: the objects its handles refer to are
/// moved by collections that other threads (and an unattached thread) run meanwhile, and its
/// handles follow them.
#[test]
fn handles_of_a_thread_in_a_blocking_region_follow_moved_objects() {
    with_watchdog(Duration::from_secs(60), || {
        let heap = Heap::new(config(8 * MIB, 2)).unwrap();
        let (ready_tx, ready_rx) = mpsc::channel::<()>();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            let heap = &heap;
            s.spawn(move || {
                let mut m = heap.attach();
                let (list, sum) = build_list(&mut m, 5000, 99);
                let mut tseed = 7;
                let mut tsum = 0;
                let tree = build_tree(&mut m, 8, &mut tseed, &mut tsum);
                m.blocking(|| {
                    ready_tx.send(()).unwrap();
                    done_rx.recv().unwrap();
                });
                assert_eq!(list_sum(&mut m, list), (5000, sum));
                assert_eq!(tree_sum(&mut m, tree), (511, tsum));
                m.collect(CollectionKind::Young);
                assert_eq!(list_sum(&mut m, list), (5000, sum));
            });
            ready_rx.recv().unwrap();
            // Collections from a thread that is not attached.
            heap.collect(CollectionKind::Young);
            heap.collect(CollectionKind::Young);
            s.spawn(move || {
                let mut m = heap.attach();
                for i in 0..20 {
                    m.scope(|m| {
                        build_list(m, 20_000, i);
                    });
                    if i % 5 == 4 {
                        m.collect(CollectionKind::Full);
                    }
                }
                done_tx.send(()).unwrap();
            })
            .join()
            .unwrap();
            heap.collect(CollectionKind::Full);
        });
        let stats = heap.stats();
        assert!(stats.count(CollectionKind::Young) >= 4);
        assert!(stats.count(CollectionKind::Full) >= 5);
        assert_eq!(stats.verified(), Some(true));
    });
}

/// Live data larger than the old generation: a full collection cannot move everything into
/// old and leaves some in the young generation; further collections must still keep it intact.
#[test]
fn live_data_larger_than_the_old_generation_survives() {
    with_watchdog(Duration::from_secs(60), || {
        let c = config(4 * MIB, 2);
        let old = c.generation_sizes().old;
        let heap = Heap::new(c).unwrap();
        let mut m = heap.attach();
        let nodes = (old + old / 10) / NODE.size_bytes();
        let (list, sum) = build_list(&mut m, nodes, 5);
        for (i, kind) in [
            CollectionKind::Full,
            CollectionKind::Young,
            CollectionKind::Full,
            CollectionKind::Young,
        ]
        .into_iter()
        .enumerate()
        {
            m.collect(kind);
            assert_eq!(
                list_sum(&mut m, list),
                (nodes, sum),
                "after collection {i} ({kind:?})"
            );
            // A little garbage in between.
            m.scope(|m| {
                for j in 0..500 {
                    new_node(m, j);
                }
            });
        }
        let report = m.verify_heap().unwrap();
        assert_eq!(report.reachable_objects, nodes);
        assert!(report.reachable_bytes > old, "{report:?}");
        drop(m);
        assert_eq!(heap.stats().verified(), Some(true));
    });
}

/// Segregated GC work (004 §3.2.3) over a synthetic two-node topology: many young and full
/// collections of a heap whose old list keeps gaining young nodes (card roots on both nodes)
/// and whose trees die and are rebuilt, under every termination protocol and 2 to 4 GC
/// threads (one node with two). Every collection is verified and every structure's checksum
/// checked after it; no young collection scans an object of another node, messages flow, all
/// are received, and full collections send none.
#[test]
fn segregated_two_nodes_survive_many_collections() {
    use concord::os::numa::NumaLayout;
    use concord::parallel::TerminationKind;
    with_watchdog(Duration::from_secs(300), || {
        for &termination in TerminationKind::ALL {
            for threads in 2..=4 {
                let ctx = format!("termination {termination}, {threads} GC threads");
                let mut c = config(8 * MIB, threads);
                c.numa = NumaLayout::Segregated;
                c.numa_topology = "0/1".parse().unwrap();
                c.phase.termination = termination;
                c.max_tenuring_threshold = 2;
                c.initial_tenuring_threshold = 1;
                let heap = Heap::new(c).unwrap_or_else(|e| panic!("{ctx}: {e}"));
                let mut m = heap.attach();
                let (list, mut list_total) = build_list(&mut m, 2000, 7);
                let mut list_len = 2000;
                let mut seed = 11;
                let mut tree_total = 0;
                let tree = build_tree(&mut m, 10, &mut seed, &mut tree_total);
                for round in 0..60u64 {
                    list_total = list_total.wrapping_add(append(&mut m, list, 50, round));
                    list_len += 50;
                    if round % 4 == 0 {
                        // The old tree dies; a new one is built.
                        tree_total = 0;
                        m.scope(|m| {
                            let fresh = build_tree(m, 9, &mut seed, &mut tree_total);
                            m.set_handle(tree, Some(fresh));
                        });
                    }
                    let kind = if round % 15 == 14 {
                        CollectionKind::Full
                    } else {
                        CollectionKind::Young
                    };
                    m.collect(kind);
                    assert_eq!(list_sum(&mut m, list), (list_len, list_total), "{ctx}");
                    assert_eq!(tree_sum(&mut m, tree).1, tree_total, "{ctx}");
                }
                drop(m);
                let stats = heap.stats();
                common::assert_verified(&stats);
                let mut messages = 0;
                for r in &stats.records {
                    let n = r.numa.expect("segregated counts NUMA figures");
                    let received: u64 = r.workers.iter().map(|w| w.messages_received).sum();
                    assert_eq!(n.messages, received, "{ctx}: collection {}", r.id);
                    if r.kind == CollectionKind::Young {
                        assert_eq!(n.objects_scanned_remote, 0, "{ctx}: collection {}", r.id);
                        assert!(n.objects_scanned_local > 0, "{ctx}: collection {}", r.id);
                    } else {
                        assert_eq!(n.messages, 0, "{ctx}: full collection {}", r.id);
                    }
                    messages += n.messages;
                }
                assert!(stats.count(CollectionKind::Young) >= 56, "{ctx}");
                assert!(messages > 0, "{ctx}: no message between two nodes");
            }
        }
    });
}
