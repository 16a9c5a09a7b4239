//! The direct-reference API (`Gc` views, `store`, `root`, `alloc_with`) against collections:
//! every object reached or stored through a view survives young and full collections with its
//! contents, the heap verifies after each collection, and a store into an old object through a
//! view is found by the next young collection (the card mark). Misuse panics with a message
//! that says what was wrong. (That a `Gc` cannot outlive a possible safepoint is a compile
//! error: see the `compile_fail` examples in `Gc`'s documentation.)

mod common;

use concord::config::MIB;
use concord::{CollectionKind, GcConfig, Handle, Heap, Mutator, ObjectKind, ObjectType, Preset};

/// A node: `left`, `right`, and a `u64` value.
const NODE: ObjectType = ObjectType::fixed(2, 8);

fn config(preset: Preset) -> GcConfig {
    let mut c = GcConfig::for_preset(preset);
    c.heap_size = 16 * MIB;
    c.gc_threads = 2;
    c.verify = true;
    c
}

/// A complete tree of `depth` built with the `alloc_with` constructor, each node's value its
/// position in build order; returns the root (a handle of the caller's scope).
fn build(m: &mut Mutator<'_>, depth: u32, next: &mut u64) -> Handle {
    if depth == 0 {
        let n = m.alloc(NODE).unwrap();
        m.write_u64(n, 0, *next);
        *next += 1;
        return n;
    }
    m.scope_escape(|m| {
        let l = build(m, depth - 1, next);
        let r = build(m, depth - 1, next);
        let n = m.alloc_with(NODE, &[Some(l), Some(r)])?;
        m.write_u64(n, 0, *next);
        *next += 1;
        Ok(Some(n))
    })
    .unwrap()
    .unwrap()
}

/// (nodes, sum of values, sum of value × depth position) of the tree under `g`: a checksum of
/// the values and of where they sit.
fn digest(g: concord::Gc<'_>, position: u64) -> (u64, u64, u64) {
    let v = g.read_u64(0);
    let mut d = (1, v, v.wrapping_mul(position));
    for (slot, child) in [(0, 2 * position), (1, 2 * position + 1)] {
        if let Some(c) = g.get(slot) {
            let (n, s, w) = digest(c, child);
            d = (d.0 + n, d.1.wrapping_add(s), d.2.wrapping_add(w));
        }
    }
    d
}

#[test]
fn a_tree_built_with_constructors_and_read_through_views_survives_collections() {
    for preset in [Preset::Vanilla, Preset::Optimized] {
        let heap = Heap::new(config(preset)).unwrap();
        {
            let mut m = heap.attach();
            let mut next = 0;
            let root = build(&mut m, 12, &mut next);
            // Garbage between the checks so collections move the tree.
            let before = digest(m.view(root).unwrap(), 1);
            assert_eq!(before.0, (1 << 13) - 1);
            assert_eq!(before.1, (0..next).sum::<u64>());
            for kind in [
                CollectionKind::Young,
                CollectionKind::Young,
                CollectionKind::Full,
            ] {
                for _ in 0..20_000 {
                    m.scope(|m| {
                        m.alloc(NODE).unwrap();
                    });
                }
                m.collect(kind);
                assert_eq!(
                    digest(m.view(root).unwrap(), 1),
                    before,
                    "{preset:?} {kind:?}"
                );
            }
        }
        common::assert_verified(&heap.finish().unwrap());
    }
}

#[test]
fn a_store_through_a_view_into_an_old_object_keeps_its_young_target_alive() {
    let heap = Heap::new(config(Preset::Optimized)).unwrap();
    {
        let mut m = heap.attach();
        let holder = m.alloc_ref_array(64).unwrap();
        // Promote the holder: after a full collection it is old.
        m.collect(CollectionKind::Full);
        for i in 0..64u64 {
            m.scope(|m| {
                let n = m.alloc(NODE).unwrap();
                m.write_u64(n, 0, i * 7);
                // Old-to-young stores through views only: the card mark is all that keeps
                // the young node alive in the next young collection.
                let (h, v) = (m.view(holder).unwrap(), m.view(n).unwrap());
                m.store(h, i as usize, Some(v));
            });
        }
        m.collect(CollectionKind::Young);
        m.collect(CollectionKind::Young);
        let h = m.view(holder).unwrap();
        for i in 0..64 {
            let n = h.get(i).expect("the stored node survived");
            assert_eq!(n.read_u64(0), i as u64 * 7);
        }
        // Clearing through a view drops them.
        let h = m.view(holder).unwrap();
        (0..64).for_each(|i| m.store(h, i, None));
        assert!((0..64).all(|i| h.get(i).is_none()));
    }
    common::assert_verified(&heap.finish().unwrap());
}

#[test]
fn a_large_object_made_by_alloc_with_is_old_and_its_young_children_survive() {
    // A fixed object above the large-object threshold goes straight to the old generation,
    // so the constructor's slot writes must dirty its cards.
    let big = ObjectType::new(2, 128 * 1024).unwrap();
    let heap = Heap::new(config(Preset::Optimized)).unwrap();
    {
        let mut m = heap.attach();
        let parent = m.scope_escape(|m| {
            let a = m.alloc(NODE)?;
            m.write_u64(a, 0, 11);
            let b = m.alloc(NODE)?;
            m.write_u64(b, 0, 22);
            m.alloc_with(big, &[Some(a), Some(b)]).map(Some)
        });
        let parent = parent.unwrap().unwrap();
        m.collect(CollectionKind::Young);
        let p = m.view(parent).unwrap();
        assert_eq!(p.payload().len(), 128 * 1024);
        assert_eq!(p.get(0).unwrap().read_u64(0), 11);
        assert_eq!(p.get(1).unwrap().read_u64(0), 22);
    }
    common::assert_verified(&heap.finish().unwrap());
}

#[test]
fn rooting_a_view_keeps_the_object_across_a_collection() {
    let heap = Heap::new(config(Preset::Optimized)).unwrap();
    {
        let mut m = heap.attach();
        let list = m.alloc_ref_array(1).unwrap();
        let n = m.alloc(NODE).unwrap();
        m.write_u64(n, 0, 99);
        m.set_ref(list, 0, Some(n));
        // Only a view's root holds the node after the list forgets it.
        let kept = m.root(m.view(list).unwrap().get(0).unwrap());
        let other = m.null_handle();
        m.set_root(other, m.view(kept));
        m.set_ref(list, 0, None);
        m.set_handle(n, None);
        m.collect(CollectionKind::Full);
        m.collect(CollectionKind::Young);
        assert_eq!(m.view(kept).unwrap().read_u64(0), 99);
        assert!(m.view(kept).unwrap() == m.view(other).unwrap());
        assert!(m.view(n).is_none());
        m.set_root(other, None);
        assert!(m.is_null(other));
    }
    common::assert_verified(&heap.finish().unwrap());
}

#[test]
fn views_read_what_handles_wrote() {
    let heap = Heap::new(config(Preset::Optimized)).unwrap();
    let mut m = heap.attach();
    let ty = ObjectType::fixed(1, 16).with_tag(7);
    let n = m.alloc(ty).unwrap();
    m.write_u64(n, 0, u64::MAX - 1);
    m.write_u32(n, 8, 5);
    m.write_f64(n, 8, 2.5);
    let bytes = m.alloc_byte_array(3).unwrap();
    m.payload_mut(bytes).copy_from_slice(b"abc");
    let g = m.view(n).unwrap();
    assert_eq!(g.kind(), ObjectKind::Fixed);
    assert_eq!((g.ref_count(), g.tag(), g.array_len()), (1, 7, 0));
    assert_eq!(g.read_u64(0), u64::MAX - 1);
    assert_eq!(g.read_f64(8), 2.5);
    assert_eq!(g.read_u32(8), 2.5f64.to_bits() as u32);
    assert_eq!(g.get(0), None);
    let b = m.view(bytes).unwrap();
    assert_eq!(
        (b.kind(), b.array_len(), b.payload()),
        (ObjectKind::ByteArray, 3, &b"abc"[..])
    );
    assert!(!g.ptr_eq(b));
    assert!(format!("{g:?}").starts_with("Gc(0x"));
}

// ---- misuse ----

fn small_heap() -> Heap {
    let mut c = config(Preset::Optimized);
    c.heap_size = 4 * MIB;
    c.gc_threads = 1;
    Heap::new(c).unwrap()
}

#[test]
#[should_panic(expected = "reference slot 2 out of bounds (2 slots)")]
fn a_load_past_the_slots_through_a_view_panics() {
    let heap = small_heap();
    let mut m = heap.attach();
    let n = m.alloc(NODE).unwrap();
    m.view(n).unwrap().get(2);
}

#[test]
#[should_panic(expected = "reference slot 0 out of bounds (0 slots)")]
fn a_store_into_a_byte_array_through_a_view_panics() {
    let heap = small_heap();
    let mut m = heap.attach();
    let b = m.alloc_byte_array(16).unwrap();
    let g = m.view(b).unwrap();
    m.store(g, 0, None);
}

#[test]
#[should_panic(expected = "payload access 4..12 out of bounds (8 bytes)")]
fn a_payload_read_past_the_end_through_a_view_panics() {
    let heap = small_heap();
    let mut m = heap.attach();
    let n = m.alloc(NODE).unwrap();
    m.view(n).unwrap().read_u64(4);
}

#[test]
#[should_panic(expected = "reference slot 2 out of bounds (2 slots)")]
fn a_constructor_with_more_references_than_slots_panics() {
    let heap = small_heap();
    let mut m = heap.attach();
    let a = m.alloc(NODE).unwrap();
    let _ = m.alloc_with(NODE, &[Some(a), Some(a), Some(a)]);
}

#[test]
fn a_view_of_another_heap_is_refused_by_store_root_and_set_root() {
    let (heap_a, heap_b) = (small_heap(), small_heap());
    let mut a = heap_a.attach();
    let na = a.alloc(NODE).unwrap();
    // `Gc` is not `Send`, so this cannot happen by accident: the test forges heap A's view on
    // heap B's thread through its address to check that B's mutator refuses it at run time.
    // SAFETY: `Gc` is one address word (a `NonZeroUsize` and markers).
    let forged = unsafe { std::mem::transmute::<concord::Gc<'_>, usize>(a.view(na).unwrap()) };
    let messages = std::thread::scope(|s| {
        s.spawn(|| {
            let mut b = heap_b.attach();
            let nb = b.alloc(NODE).unwrap();
            // SAFETY: as above; the forged view is only handed to B, which must refuse it
            // before it touches the object.
            let ga = unsafe { std::mem::transmute::<usize, concord::Gc<'_>>(forged) };
            let gb = b.view(nb).unwrap();
            [
                catch(|| b.store(gb, 0, Some(ga))),
                catch(|| b.store(ga, 0, Some(gb))),
                catch(|| {
                    b.root(ga);
                }),
                catch(|| b.set_root(nb, Some(ga))),
            ]
            .into_iter()
            .map(|r| r.expect_err("a foreign reference must panic"))
            .collect::<Vec<String>>()
        })
        .join()
        .unwrap()
    });
    for msg in messages {
        assert!(
            msg.contains("is not an object of this mutator's heap"),
            "{msg}"
        );
    }
    drop(a);
}

fn catch(f: impl FnOnce()) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
        e.downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}
