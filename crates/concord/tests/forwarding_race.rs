//! Forwarding races: a few objects referenced from thousands of slots, so that several GC
//! workers reach the same object at once and race to copy it (the loser must use the winner's
//! copy). Collected with 8 GC threads many times; afterwards every path must lead to the same
//! single copy of each shared object.

use concord::{CollectionKind, GcConfig, Handle, Heap, Mutator, ObjectType, Preset};

mod common;

const MIB: usize = 1 << 20;
const SHARED: usize = 10;
/// Shared objects: slot 0 the next shared object (a cycle), slot 1 itself; payload: id, counter.
const SHARED_T: ObjectType = ObjectType::fixed(2, 16).with_tag(0x5a);
/// Small objects pointing at two shared objects; payload: own index.
const SMALL_T: ObjectType = ObjectType::fixed(2, 8).with_tag(0x5b);
const BIG_LEN: usize = 20_000;
const SMALLS: usize = 20_000;

/// Which shared object slot `i` of big array `b` refers to.
fn big_target(b: usize, i: usize) -> usize {
    (i * (b + 3) + b) % SHARED
}

/// Which shared objects small object `i` refers to.
fn small_targets(i: usize) -> [usize; 2] {
    [(i * 7) % SHARED, (i * 3 + 1) % SHARED]
}

/// Holder layout: a ref array [directory, big 0, big 1, smalls].
struct Graph {
    holder: Handle,
}

fn new_shared_set(m: &mut Mutator<'_>, holder: Handle, round: u64) {
    m.scope(|m| {
        let dir = m.alloc_ref_array(SHARED).unwrap();
        let shared: Vec<Handle> = (0..SHARED).map(|_| m.alloc(SHARED_T).unwrap()).collect();
        for (k, &h) in shared.iter().enumerate() {
            m.write_u64(h, 0, k as u64);
            m.write_u64(h, 8, round);
            m.set_ref(h, 0, Some(shared[(k + 1) % SHARED]));
            m.set_ref(h, 1, Some(h));
            m.set_ref(dir, k, Some(h));
        }
        m.set_ref(holder, 0, Some(dir));
        // Rewire every big-array slot and every small object to the new shared objects. The
        // arrays and most small objects are old by now: these are old-to-young stores.
        for b in 0..2 {
            let big = m.get_ref(holder, 1 + b).unwrap();
            for i in 0..BIG_LEN {
                m.set_ref(big, i, Some(shared[big_target(b, i)]));
            }
        }
        let smalls = m.get_ref(holder, 3).unwrap();
        let s = m.null_handle();
        for i in 0..SMALLS {
            m.load_ref_into(s, smalls, i);
            let [a, b] = small_targets(i);
            m.set_ref(s, 0, Some(shared[a]));
            m.set_ref(s, 1, Some(shared[b]));
        }
    });
}

/// Replace every `step`-th small object by a fresh (young) one.
fn refresh_smalls(m: &mut Mutator<'_>, holder: Handle, round: usize, step: usize) {
    m.scope(|m| {
        let dir = m.get_ref(holder, 0).unwrap();
        let smalls = m.get_ref(holder, 3).unwrap();
        let t = m.null_handle();
        for i in (round % step..SMALLS).step_by(step) {
            m.scope(|m| {
                let s = m.alloc(SMALL_T).unwrap();
                m.write_u64(s, 0, i as u64);
                let [a, b] = small_targets(i);
                m.load_ref_into(t, dir, a);
                m.set_ref(s, 0, Some(t));
                m.load_ref_into(t, dir, b);
                m.set_ref(s, 1, Some(t));
                m.set_ref(smalls, i, Some(s));
            });
        }
    });
}

fn build(m: &mut Mutator<'_>) -> Graph {
    let holder = m.alloc_ref_array(4).unwrap();
    m.scope(|m| {
        for b in 0..2 {
            let big = m.alloc_ref_array(BIG_LEN).unwrap();
            m.set_ref(holder, 1 + b, Some(big));
        }
        let smalls = m.alloc_ref_array(SMALLS).unwrap();
        for i in 0..SMALLS {
            m.scope(|m| {
                let s = m.alloc(SMALL_T).unwrap();
                m.write_u64(s, 0, i as u64);
                m.set_ref(smalls, i, Some(s));
            });
        }
        m.set_ref(holder, 3, Some(smalls));
    });
    new_shared_set(m, holder, 0);
    Graph { holder }
}

/// Every path to shared object `k` leads to the same object, each shared object is intact, and
/// a write through one path is seen through all others.
fn check(m: &mut Mutator<'_>, g: &Graph, round: u64, what: &str) {
    m.scope(|m| {
        let dir = m.get_ref(g.holder, 0).unwrap();
        let shared: Vec<Handle> = (0..SHARED)
            .map(|k| m.get_ref(dir, k).expect("directory slot"))
            .collect();
        for (k, &h) in shared.iter().enumerate() {
            assert_eq!(m.tag(h), SHARED_T.tag(), "{what}: shared {k} tag");
            assert_eq!(m.read_u64(h, 0), k as u64, "{what}: shared {k} id");
            assert_eq!(m.read_u64(h, 8), round, "{what}: shared {k} counter");
            let next = m.get_ref(h, 0).unwrap();
            assert!(
                m.same_object(next, shared[(k + 1) % SHARED]),
                "{what}: shared {k} cycle edge"
            );
            let me = m.get_ref(h, 1).unwrap();
            assert!(m.same_object(me, h), "{what}: shared {k} self loop");
        }
        for (k, &a) in shared.iter().enumerate() {
            for &b in &shared[k + 1..] {
                assert!(
                    !m.same_object(a, b),
                    "{what}: two directory entries are one object"
                );
            }
        }
        let t = m.null_handle();
        for b in 0..2 {
            let big = m.get_ref(g.holder, 1 + b).unwrap();
            assert_eq!(m.array_len(big), BIG_LEN);
            for i in 0..BIG_LEN {
                assert!(
                    m.load_ref_into(t, big, i),
                    "{what}: big {b} slot {i} is null"
                );
                let k = big_target(b, i);
                assert!(
                    m.same_object(t, shared[k]),
                    "{what}: big {b} slot {i} is not shared object {k}"
                );
            }
        }
        let smalls = m.get_ref(g.holder, 3).unwrap();
        let s = m.null_handle();
        for i in 0..SMALLS {
            assert!(m.load_ref_into(s, smalls, i));
            assert_eq!(m.read_u64(s, 0), i as u64, "{what}: small {i} payload");
            for (slot, k) in small_targets(i).into_iter().enumerate() {
                assert!(m.load_ref_into(t, s, slot));
                assert!(
                    m.same_object(t, shared[k]),
                    "{what}: small {i} slot {slot} is not shared object {k}"
                );
            }
        }
        // No duplicates: a write through one path is visible through every other.
        let big1 = m.get_ref(g.holder, 2).unwrap();
        for i in [0, 1, 7, BIG_LEN / 2, BIG_LEN - 1] {
            m.load_ref_into(t, big1, i);
            let k = big_target(1, i);
            let marker = 0xdead_0000 + i as u64;
            m.write_u64(t, 8, marker);
            assert_eq!(
                m.read_u64(shared[k], 8),
                marker,
                "{what}: write via big 1 slot {i} not seen via directory"
            );
            let j = (0..SMALLS).find(|&j| small_targets(j)[0] == k).unwrap();
            m.load_ref_into(s, smalls, j);
            m.load_ref_into(t, s, 0);
            assert_eq!(
                m.read_u64(t, 8),
                marker,
                "{what}: write via big 1 slot {i} not seen via small {j}"
            );
            m.write_u64(t, 8, round);
        }
    });
    // A duplicated (or lost) object would change the number of reachable objects.
    let report = m.verify_heap().unwrap_or_else(|e| panic!("{what}: {e}"));
    let expected = 1 + 1 + 2 + 1 + SMALLS + SHARED;
    assert_eq!(
        report.reachable_objects, expected,
        "{what}: reachable objects"
    );
}

fn race(max_tenuring: u32, heap_mib: usize, rounds: u64) {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = heap_mib * MIB;
    c.gc_threads = 8;
    c.max_tenuring_threshold = max_tenuring;
    c.initial_tenuring_threshold = max_tenuring;
    // Keep the 160 KiB arrays young at first so they are copied (and scanned in chunks) too.
    c.large_object_threshold = MIB;
    c.verify = true;
    let heap = Heap::new(c).unwrap();
    let mut m = heap.attach();
    let g = build(&mut m);
    check(&mut m, &g, 0, "after building");
    for round in 1..=rounds {
        new_shared_set(&mut m, g.holder, round);
        refresh_smalls(&mut m, g.holder, round as usize, 4);
        let what = format!("round {round}");
        if round % 5 == 0 {
            m.collect(CollectionKind::Full);
        } else {
            m.collect(CollectionKind::Young);
            // Survivors copied again between survivor spaces while still shared.
            if round % 2 == 0 {
                m.collect(CollectionKind::Young);
            }
        }
        check(&mut m, &g, round, &what);
    }
    drop(m);
    let stats = heap.stats();
    common::assert_verified(&stats);
    assert!(stats.count(CollectionKind::Young) as u64 >= rounds);
    assert!(stats.count(CollectionKind::Full) as u64 >= rounds / 5);
    assert!(stats.records.iter().all(|r| r.gc_threads == 8));
    // The races were possible: some scavenge had more than one worker copying. (How many is up
    // to the OS scheduler on a loaded 2-CPU machine, so only one is required.)
    let parallel = stats
        .records
        .iter()
        .filter(|r| {
            r.kind == CollectionKind::Young && r.workers.iter().filter(|w| w.items > 0).count() >= 2
        })
        .count();
    eprintln!(
        "{parallel} of {} scavenges had several workers copying",
        stats.count(CollectionKind::Young)
    );
    assert!(parallel >= 1, "no scavenge used more than one worker");
}

#[test]
fn shared_objects_stay_unique_while_aging_in_survivor_spaces() {
    race(15, 32, 40);
}

#[test]
fn shared_objects_stay_unique_when_promoted_at_once() {
    race(1, 16, 40);
}

/// Many GC workers race on objects reachable only from one huge young array whose chunks are
/// handed out to different workers.
#[test]
fn one_huge_young_array_of_shared_slots() {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 32 * MIB;
    c.gc_threads = 8;
    c.large_object_threshold = 4 * MIB;
    c.verify = true;
    let heap = Heap::new(c).unwrap();
    let mut m = heap.attach();
    let len = 200_000;
    for round in 0..20u64 {
        m.scope(|m| {
            let arr = m.alloc_ref_array(len).unwrap();
            let targets: Vec<Handle> = (0..3)
                .map(|k| {
                    let h = m.alloc(SHARED_T).unwrap();
                    m.write_u64(h, 0, k);
                    h
                })
                .collect();
            for i in 0..len {
                m.set_ref(arr, i, Some(targets[i % 3]));
            }
            // Only the array keeps the targets alive.
            let arr2 = m.dup(arr);
            m.set_handle(arr, None);
            for h in &targets {
                m.set_handle(*h, None);
            }
            m.collect(if round % 4 == 3 {
                CollectionKind::Full
            } else {
                CollectionKind::Young
            });
            let firsts: Vec<Handle> = (0..3).map(|i| m.get_ref(arr2, i).unwrap()).collect();
            let t = m.null_handle();
            for i in 0..len {
                assert!(m.load_ref_into(t, arr2, i));
                assert!(
                    m.same_object(t, firsts[i % 3]),
                    "round {round}: slot {i} points to a second copy"
                );
            }
            for (k, &f) in firsts.iter().enumerate() {
                assert_eq!(m.read_u64(f, 0), k as u64);
            }
            let report = m.verify_heap().unwrap();
            // arr2's array and its 3 targets (firsts/t only point into them).
            assert_eq!(report.reachable_objects, 4, "round {round}");
        });
    }
    drop(m);
    assert_eq!(heap.stats().verified(), Some(true));
}
