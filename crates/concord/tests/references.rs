//! Long-lived roots, weak references and native resources (`concord::runtime::refs`,
//! `concord::typed::{Global, Weak}`) against the collector: globals keep graphs whole across
//! many young and full collections (checksums, the verifier, objects moving); weak references
//! are cleared exactly when their referents die (young ones in a young collection, old ones
//! only in a full one) and follow them when they move; resources attached with `on_collect`
//! are dropped exactly once, on the mutator's thread, never while their object is reachable;
//! misuse with another mutator panics; and many threads churn all three with verification on.
//! Each runs under several GC thread counts and both the `vanilla` and `optimized` presets.

use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::rc::Rc;

use concord::typed::{Global, Root, TypedView, Weak};
use concord::{CollectionKind, GcConfig, GcError, Heap, Mutator, ObjectType, Preset};

#[derive(concord::Trace)]
struct Node {
    left: Option<Root<Node>>,
    right: Option<Root<Node>>,
    value: u64,
}

/// The configurations every test runs under.
fn configs() -> Vec<GcConfig> {
    let mut out = Vec::new();
    for preset in [Preset::Vanilla, Preset::Optimized] {
        for threads in [1, 2, 4] {
            let mut c = GcConfig::for_preset(preset);
            c.heap_size = 32 << 20;
            c.gc_threads = threads;
            c.verify = true;
            out.push(c);
        }
    }
    out
}

fn heap(config: GcConfig) -> Heap {
    Heap::new(config).expect("heap")
}

/// Every collection verified, none failed.
/// A node without children.
fn leaf(value: u64) -> Node {
    Node {
        left: None,
        right: None,
        value,
    }
}

fn assert_verified(heap: &Heap) {
    let stats = heap.stats();
    assert!(
        stats.verify_failures.is_empty(),
        "{:?}",
        stats.verify_failures
    );
    assert!(stats.records.iter().all(|r| r.verified != Some(false)));
}

/// A complete tree of `depth` levels whose values are `seed`, `seed + 1`, ... in pre-order.
fn tree(m: &mut Mutator<'_>, depth: u32, seed: &mut u64) -> Result<Root<Node>, GcError> {
    let value = *seed;
    *seed += 1;
    let (l, r) = if depth > 1 {
        (
            Some(tree(m, depth - 1, seed)?),
            Some(tree(m, depth - 1, seed)?),
        )
    } else {
        (None, None)
    };
    m.alloc_typed(Node {
        left: l,
        right: r,
        value,
    })
}

/// (nodes, sum of values, sum of value × pre-order position).
type Sum = (u64, u64, u64);

/// A checksum of the tree under `v`.
fn checksum(v: NodeView<'_>) -> Sum {
    fn walk(v: NodeView<'_>, pos: &mut u64, acc: &mut (u64, u64, u64)) {
        *pos += 1;
        acc.0 += 1;
        acc.1 += v.value();
        acc.2 += v.value().wrapping_mul(*pos);
        if let Some(l) = v.left() {
            walk(l, pos, acc);
        }
        if let Some(r) = v.right() {
            walk(r, pos, acc);
        }
    }
    let mut acc = (0, 0, 0);
    walk(v, &mut 0, &mut acc);
    acc
}

/// The address of a view's object (to see objects move).
fn addr_of(v: NodeView<'_>) -> String {
    // SAFETY: only read, to format its address.
    format!("{:?}", unsafe { v.as_gc() })
}

/// Garbage: `n` small trees nobody keeps.
fn churn(m: &mut Mutator<'_>, n: usize) {
    for i in 0..n {
        m.scope(|m| {
            let mut seed = i as u64;
            tree(m, 4, &mut seed).unwrap();
        });
    }
}

#[test]
fn globals_keep_graphs_whole_across_many_collections() {
    for config in configs() {
        let name = format!("{:?}/{}", config.preset, config.gc_threads);
        let heap = heap(config);
        let mut m = heap.attach();
        let mut seed = 0;
        let globals: Vec<Global<Node>> = (0..8)
            .map(|_| {
                m.scope(|m| {
                    let t = tree(m, 6, &mut seed).unwrap();
                    m.global(t)
                })
            })
            .collect();
        assert_eq!(m.handle_count(), 0, "{name}: only globals hold the trees");
        let sums: Vec<_> = globals.iter().map(|g| checksum(m.get_global(g))).collect();
        let first_addr = addr_of(m.get_global(&globals[0]));
        let mut moved = false;
        for round in 0..24 {
            churn(&mut m, 50);
            let kind = if round % 4 == 3 {
                CollectionKind::Full
            } else {
                CollectionKind::Young
            };
            m.collect(kind);
            let report = m.verify_heap().expect("verifies");
            assert_eq!(
                report.reachable_objects,
                8 * 63,
                "{name}: the globals are the only roots"
            );
            for (g, sum) in globals.iter().zip(&sums) {
                assert_eq!(checksum(m.get_global(g)), *sum, "{name}: round {round}");
            }
            moved |= addr_of(m.get_global(&globals[0])) != first_addr;
        }
        assert!(moved, "{name}: the objects moved");
        // Setting a global, and reading it into the current scope.
        let r = m.local(&globals[1]);
        m.set_global(&globals[0], m.get(r).left().unwrap());
        m.collect(CollectionKind::Full);
        assert_eq!(
            checksum(m.get_global(&globals[0])),
            checksum(m.get(r).left().unwrap())
        );
        assert_eq!(m.reference_counts(), (8, 0, 0));
        drop(globals);
        assert_eq!(m.reference_counts(), (0, 0, 0));
        drop(m);
        assert_verified(&heap);
    }
}

#[test]
fn dropping_a_global_lets_its_object_die() {
    for config in configs() {
        let heap = heap(config);
        let mut m = heap.attach();
        // A young object.
        let (g, w) = m.scope(|m| {
            let n = m.alloc_typed(leaf(5)).unwrap();
            (m.global(n), m.weak(n))
        });
        m.collect(CollectionKind::Young);
        assert_eq!(m.upgrade_view(&w).map(|v| v.value()), Some(5));
        drop(g);
        m.collect(CollectionKind::Young);
        assert!(m.upgrade(&w).is_none());
        // An old object: only a full collection judges it.
        let (g, w) = m.scope(|m| {
            let n = m.alloc_typed(leaf(6)).unwrap();
            (m.global(n), m.weak(n))
        });
        m.collect(CollectionKind::Full);
        drop(g);
        m.collect(CollectionKind::Young);
        assert_eq!(m.upgrade_view(&w).map(|v| v.value()), Some(6));
        m.collect(CollectionKind::Full);
        assert!(m.upgrade(&w).is_none());
        drop(m);
        assert_verified(&heap);
    }
}

#[test]
fn weak_references_are_cleared_exactly_when_their_referents_die() {
    for config in configs() {
        let heap = heap(config);
        let mut m = heap.attach();
        let held = m.alloc_typed(leaf(1)).unwrap();
        let global_held = m.scope(|m| {
            let n = m.alloc_typed(leaf(2)).unwrap();
            m.global(n)
        });
        let (w_held, w_global, w_young, w_young2, w_child, w_old, w_moved) = m.scope(|m| {
            let young = m.alloc_typed(leaf(3)).unwrap();
            // Reachable only through an object nothing strong reaches.
            let child = m.alloc_typed(leaf(4)).unwrap();
            let parent = m
                .alloc_typed(Node {
                    left: Some(child),
                    right: None,
                    value: 0,
                })
                .unwrap();
            let _ = parent;
            (
                m.weak(held),
                m.weak_view(m.get_global(&global_held)),
                m.weak(young),
                m.weak(young),
                m.weak(child),
                m.weak(held), // becomes old below
                m.weak(held),
            )
        });
        let before = addr_of(m.get(held));
        m.collect(CollectionKind::Young);
        assert!(m.upgrade(&w_young).is_none(), "young referent died");
        assert!(
            m.upgrade(&w_young2).is_none(),
            "every weak ref to it is cleared"
        );
        assert!(m.upgrade(&w_child).is_none(), "reachable only from garbage");
        assert_eq!(m.upgrade_view(&w_held).map(|v| v.value()), Some(1));
        assert_eq!(m.upgrade_view(&w_global).map(|v| v.value()), Some(2));
        // Moved: the weak reference gives the moved object, intact.
        let moved = m.upgrade_view(&w_moved).unwrap();
        assert_ne!(addr_of(moved), before, "the referent moved");
        assert!(moved == m.get(held), "the same object as the root's");
        // Promote, then let go of the old objects: only a full collection clears them.
        let w_tree = m.scope(|m| {
            let mut seed = 100;
            let t = tree(m, 5, &mut seed).unwrap();
            m.collect(CollectionKind::Full); // promoted while held
            m.weak(t)
        });
        let sum = checksum(m.upgrade_view(&w_tree).unwrap());
        m.collect(CollectionKind::Young);
        // Upgrading pins it: its root lives in this scope only.
        m.scope(|m| {
            let t = m.upgrade(&w_tree).unwrap();
            m.collect(CollectionKind::Full);
            assert_eq!(checksum(m.get(t)), sum, "moved with its contents");
        });
        m.collect(CollectionKind::Full);
        assert!(m.upgrade(&w_tree).is_none());
        let old = m.scope(|m| {
            let n = m.alloc_typed(leaf(9)).unwrap();
            let w = m.weak(n);
            m.collect(CollectionKind::Full); // promoted while held
            w
        });
        for _ in 0..3 {
            churn(&mut m, 20);
            m.collect(CollectionKind::Young);
            assert_eq!(
                m.upgrade_view(&old).map(|v| v.value()),
                Some(9),
                "old: kept"
            );
        }
        m.collect(CollectionKind::Full);
        assert!(
            m.upgrade(&old).is_none(),
            "old referent died at the full collection"
        );
        // Still held by the handle and the global after all of it.
        assert_eq!(m.upgrade_view(&w_held).map(|v| v.value()), Some(1));
        assert_eq!(m.upgrade_view(&w_old).map(|v| v.value()), Some(1));
        assert_eq!(m.upgrade_view(&w_global).map(|v| v.value()), Some(2));
        drop(m);
        assert_verified(&heap);
    }
}

/// Counts its drops, and checks each runs on the thread that made it, at most once.
struct Resource {
    id: u64,
    thread: std::thread::ThreadId,
    dropped: Rc<RefCell<Vec<u64>>>,
    /// Ids whose objects are known reachable: dropping one of them is a failure.
    pinned: Rc<RefCell<HashSet<u64>>>,
}

impl Drop for Resource {
    fn drop(&mut self) {
        assert_eq!(
            std::thread::current().id(),
            self.thread,
            "dropped on its thread"
        );
        assert!(
            !self.pinned.borrow().contains(&self.id),
            "resource {} dropped while its object is reachable",
            self.id
        );
        self.dropped.borrow_mut().push(self.id);
    }
}

struct Resources {
    dropped: Rc<RefCell<Vec<u64>>>,
    pinned: Rc<RefCell<HashSet<u64>>>,
}

impl Resources {
    fn new() -> Self {
        Resources {
            dropped: Rc::default(),
            pinned: Rc::default(),
        }
    }

    fn make(&self, id: u64) -> Resource {
        Resource {
            id,
            thread: std::thread::current().id(),
            dropped: self.dropped.clone(),
            pinned: self.pinned.clone(),
        }
    }

    fn dropped(&self) -> Vec<u64> {
        let mut d = self.dropped.borrow().clone();
        d.sort_unstable();
        d
    }
}

#[test]
fn resources_are_dropped_once_after_their_objects_die() {
    for config in configs() {
        let heap = heap(config);
        let mut m = heap.attach();
        let res = Resources::new();
        // Young, held by a handle: kept across young and full collections.
        let held = m.alloc_typed(leaf(1)).unwrap();
        m.on_collect(held, res.make(1));
        res.pinned.borrow_mut().insert(1);
        // Young, dies young.
        m.scope(|m| {
            let n = m.alloc_typed(leaf(2)).unwrap();
            m.on_collect(n, res.make(2));
            m.on_collect(n, res.make(3)); // two resources on one object
        });
        m.collect(CollectionKind::Young);
        assert_eq!(res.dropped(), [2, 3]);
        // Old: promoted while held, then let go: a young collection leaves it alone.
        let g = m.scope(|m| {
            let n = m.alloc_typed(leaf(4)).unwrap();
            m.on_collect(n, res.make(4));
            m.global(n)
        });
        res.pinned.borrow_mut().insert(4);
        m.collect(CollectionKind::Full);
        m.collect(CollectionKind::Young);
        assert_eq!(res.dropped(), [2, 3]);
        res.pinned.borrow_mut().remove(&4);
        drop(g);
        m.collect(CollectionKind::Young);
        m.collect(CollectionKind::Young);
        assert_eq!(
            res.dropped(),
            [2, 3],
            "old objects wait for a full collection"
        );
        m.collect(CollectionKind::Full);
        assert_eq!(res.dropped(), [2, 3, 4]);
        // Exactly once, whatever follows.
        for kind in [CollectionKind::Full, CollectionKind::Young] {
            m.collect(kind);
        }
        assert_eq!(res.dropped(), [2, 3, 4]);
        // A resource that holds references to the heap (their drops take the table's lock).
        m.scope(|m| {
            let n = m.alloc_typed(leaf(5)).unwrap();
            let keep = m.global(held);
            let peek = m.weak(n);
            m.on_collect(n, (keep, peek, res.make(5)));
        });
        assert_eq!(m.reference_counts(), (1, 1, 2));
        m.collect(CollectionKind::Young);
        assert_eq!(res.dropped(), [2, 3, 4, 5]);
        assert_eq!(m.reference_counts(), (0, 0, 1));
        assert_eq!(m.run_cleaners(), 0);
        // Dropped by the allocation that waited for a collection, not only by `collect`.
        m.scope(|m| {
            let n = m.alloc_typed(leaf(6)).unwrap();
            m.on_collect(n, res.make(6));
        });
        let collections = heap.stats().records.len();
        while heap.stats().records.len() == collections {
            churn(&mut m, 10);
        }
        assert_eq!(res.dropped(), [2, 3, 4, 5, 6]);
        // Still reachable at the mutator's end: dropped with it, on this thread.
        res.pinned.borrow_mut().remove(&1);
        drop(m);
        assert_eq!(res.dropped(), [1, 2, 3, 4, 5, 6]);
        assert_verified(&heap);
    }
}

/// Resources whose drops panic: the first panic of a batch reaches the caller and the others
/// stay due for the next run, one panic at a time; at the mutator's end every one is dropped
/// and the first panic propagates. (Dropping a batch used to drop the rest while the first
/// panic unwound, and a second panic then aborted the process.)
#[test]
fn panicking_resources_found_dead_together_do_not_abort() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    struct Fails(u64, Rc<RefCell<Vec<u64>>>);
    impl Drop for Fails {
        fn drop(&mut self) {
            self.1.borrow_mut().push(self.0);
            panic!("resource {} failed to close", self.0);
        }
    }
    let heap = heap(configs().remove(0));
    let mut m = heap.attach();
    let dropped = Rc::new(RefCell::new(Vec::new()));
    m.scope(|m| {
        for i in 1..=3 {
            let n = m.alloc_typed(leaf(i)).unwrap();
            m.on_collect(n, Fails(i, dropped.clone()));
        }
    });
    // The collection finds all three dead; the mutator drops them after its stop.
    let r = catch_unwind(AssertUnwindSafe(|| m.collect(CollectionKind::Young)));
    assert!(r.is_err(), "the first resource's panic propagates");
    assert_eq!(dropped.borrow().len(), 1);
    for n in 2..=3 {
        let r = catch_unwind(AssertUnwindSafe(|| m.run_cleaners()));
        assert!(r.is_err(), "resource {n}'s panic propagates on its own run");
        assert_eq!(dropped.borrow().len(), n);
    }
    assert_eq!(m.run_cleaners(), 0);
    assert_eq!(m.reference_counts(), (0, 0, 0));
    // Reachable at the mutator's end: all dropped, the first panic propagates.
    for i in 4..=5 {
        let n = m.alloc_typed(leaf(i)).unwrap();
        m.on_collect(n, Fails(i, dropped.clone()));
    }
    let r = catch_unwind(AssertUnwindSafe(move || drop(m)));
    let message = r.expect_err("a resource's panic at the mutator's end propagates");
    let message = message.downcast_ref::<String>().map(String::as_str);
    assert!(
        matches!(
            message,
            Some("resource 4 failed to close" | "resource 5 failed to close")
        ),
        "{message:?}"
    );
    let mut all = dropped.borrow().clone();
    all.sort_unstable();
    assert_eq!(all, [1, 2, 3, 4, 5]);
    assert_verified(&heap);
}

#[test]
fn resources_of_a_mutator_in_a_blocking_region_are_dropped_when_it_returns() {
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.heap_size = 16 << 20;
    config.gc_threads = 2;
    let heap = heap(config);
    let mut m = heap.attach();
    let dropped = Rc::new(Cell::new(0));
    struct Count(Rc<Cell<u32>>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }
    m.scope(|m| {
        let n = m.alloc_typed(leaf(1)).unwrap();
        m.on_collect(n, Count(dropped.clone()));
    });
    let d = dropped.clone();
    m.blocking(|| {
        // Another thread collects meanwhile; this one is stopped, and drops nothing yet.
        std::thread::scope(|s| {
            s.spawn(|| heap.collect(CollectionKind::Young));
        });
        assert_eq!(d.get(), 0);
    });
    assert_eq!(dropped.get(), 1);
}

#[test]
fn untyped_globals_and_weak_references() {
    const CELL: ObjectType = ObjectType::fixed(1, 8);
    for config in configs() {
        let heap = heap(config);
        let mut m = heap.attach();
        let (g, empty, w, w_dead) = m.scope(|m| {
            let a = m.alloc(CELL).unwrap();
            let b = m.alloc(CELL).unwrap();
            m.write_u64(a, 0, 10);
            m.write_u64(b, 0, 20);
            m.set_ref(a, 0, Some(b));
            let dead = m.alloc(CELL).unwrap();
            let null = m.null_handle();
            (
                m.global_handle(a),
                m.global_handle(null),
                m.weak_handle(b),
                m.weak_handle(dead),
            )
        });
        assert!(m.view_global(&empty).is_none());
        assert!(m.load_global(&empty).is_none());
        for kind in [
            CollectionKind::Young,
            CollectionKind::Full,
            CollectionKind::Young,
        ] {
            m.collect(kind);
            let a = m.view_global(&g).unwrap();
            assert_eq!(a.read_u64(0), 10);
            assert_eq!(a.get(0).unwrap().read_u64(0), 20);
            m.scope(|m| {
                let b = m.upgrade_handle(&w).unwrap();
                assert_eq!(m.read_u64(b, 0), 20);
                assert!(m.upgrade_handle(&w_dead).is_none());
            });
        }
        // Move the global to `b`: `a` dies, `b` lives.
        let w_a = m.scope(|m| {
            let a = m.load_global(&g).unwrap();
            let b = m.upgrade_handle(&w).unwrap();
            m.set_global_handle(&g, Some(b));
            m.set_global_handle(&empty, None);
            m.weak_handle(a)
        });
        m.collect(CollectionKind::Full);
        assert!(m.upgrade_handle(&w_a).is_none());
        assert_eq!(m.view_global(&g).unwrap().read_u64(0), 20);
        assert_eq!(m.handle_count(), 0);
        drop(g);
        m.collect(CollectionKind::Full);
        assert!(m.upgrade_handle(&w).is_none());
        drop(m);
        assert_verified(&heap);
    }
}

/// More weak references than one chunk: the collectors process them on the GC workers.
#[test]
fn large_weak_tables_are_processed_in_parallel_correctly() {
    for config in configs() {
        let name = format!("{:?}/{}", config.preset, config.gc_threads);
        let heap = heap(config);
        let mut m = heap.attach();
        const N: u64 = 20_000;
        let mut globals = Vec::new();
        let weaks: Vec<Weak<Node>> = (0..N)
            .map(|i| {
                m.scope(|m| {
                    let n = m.alloc_typed(leaf(i)).unwrap();
                    if i.is_multiple_of(3) {
                        globals.push(m.global(n));
                    }
                    m.weak(n)
                })
            })
            .collect();
        let check = |m: &Mutator<'_>, alive: &dyn Fn(u64) -> bool| {
            for (i, w) in weaks.iter().enumerate() {
                let i = i as u64;
                let got = m.upgrade_view(w).map(|v| v.value());
                assert_eq!(got, alive(i).then_some(i), "{name}: weak {i}");
            }
        };
        m.collect(CollectionKind::Young);
        check(&m, &|i| i.is_multiple_of(3));
        m.collect(CollectionKind::Full);
        check(&m, &|i| i.is_multiple_of(3));
        // Let every other global go: now old, so only the full collection clears them.
        let mut k = 0u64;
        globals.retain(|_| {
            k += 1;
            k.is_multiple_of(2)
        });
        m.collect(CollectionKind::Young);
        check(&m, &|i| i.is_multiple_of(3));
        m.collect(CollectionKind::Full);
        check(&m, &|i| i % 6 == 3);
        drop(m);
        assert_verified(&heap);
    }
}

/// A young collection whose promotion fails (old is full of live large objects, and nothing
/// may stay young) is followed by a full one; weak references and resources come out right.
#[test]
fn weak_references_survive_a_promotion_failure() {
    for preset in [Preset::Vanilla, Preset::Optimized] {
        let mut config = GcConfig::for_preset(preset);
        config.heap_size = 4 << 20;
        config.gc_threads = 2;
        config.verify = true;
        config.max_tenuring_threshold = 0;
        config.initial_tenuring_threshold = 0;
        let old = config.generation_sizes().old;
        let heap = heap(config);
        let mut m = heap.attach();
        for _ in 0..old / 65536 {
            m.alloc_byte_array(65536 - 8).unwrap();
        }
        let res = Resources::new();
        let mut kept = Vec::new();
        let mut weaks = Vec::new();
        for i in 0..2_000u64 {
            m.scope(|m| {
                let n = m.alloc_typed(leaf(i)).unwrap();
                if i.is_multiple_of(2) {
                    kept.push(m.global(n));
                }
                if i % 4 < 2 {
                    m.on_collect(n, res.make(i));
                    if i.is_multiple_of(2) {
                        res.pinned.borrow_mut().insert(i);
                    }
                }
                weaks.push((i, m.weak(n)));
            });
        }
        m.collect(CollectionKind::Young);
        assert!(
            heap.stats().records.iter().any(|r| r.promotion_failed),
            "{preset:?}: the scavenge was meant to fail promotion"
        );
        for (i, w) in &weaks {
            let got = m.upgrade_view(w).map(|v| v.value());
            assert_eq!(
                got,
                i.is_multiple_of(2).then_some(*i),
                "{preset:?}: weak {i}"
            );
        }
        let dead: Vec<u64> = (0..2_000).filter(|i| i % 4 == 1).collect();
        assert_eq!(res.dropped(), dead);
        m.collect(CollectionKind::Full);
        assert_eq!(res.dropped(), dead);
        res.pinned.borrow_mut().clear();
        drop(kept);
        drop(m);
        assert_verified(&heap);
    }
}

#[test]
#[should_panic(expected = "global reference used with a mutator that did not create it")]
fn a_global_of_another_mutator_panics() {
    let h1 = Heap::builder().heap_size(8 << 20).build().unwrap();
    let h2 = Heap::builder().heap_size(8 << 20).build().unwrap();
    let mut m1 = h1.attach();
    let m2 = h2.attach();
    let n = m1.alloc_typed(leaf(1)).unwrap();
    let g = m1.global(n);
    m2.get_global(&g);
}

#[test]
#[should_panic(expected = "weak reference used with a mutator that did not create it")]
fn a_weak_reference_of_another_mutator_panics() {
    let h1 = Heap::builder().heap_size(8 << 20).build().unwrap();
    let h2 = Heap::builder().heap_size(8 << 20).build().unwrap();
    let mut m1 = h1.attach();
    let m2 = h2.attach();
    let n = m1.alloc_typed(leaf(1)).unwrap();
    let w = m1.weak(n);
    m2.upgrade(&w);
}

#[test]
#[should_panic(expected = "which has been dropped")]
fn a_global_that_outlived_its_mutator_panics_when_used() {
    let heap = Heap::builder().heap_size(8 << 20).build().unwrap();
    let mut m = heap.attach();
    let n = m.alloc_typed(leaf(1)).unwrap();
    let g = m.global(n);
    drop(m);
    let m = heap.attach(); // the same thread and heap, a new mutator
    m.get_global(&g);
}

#[test]
fn references_that_outlive_their_mutator_and_heap_are_inert() {
    let heap = Heap::builder().heap_size(8 << 20).build().unwrap();
    let mut m = heap.attach();
    let n = m.alloc_typed(leaf(1)).unwrap();
    let g = m.global(n);
    let w = m.weak(n);
    drop(m);
    // No longer roots: a new mutator's collections do not see them.
    let mut m2 = heap.attach();
    m2.collect(CollectionKind::Full);
    assert_eq!(m2.verify_heap().unwrap().reachable_objects, 0);
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| m2.upgrade(&w).is_some()));
    assert!(result.is_err(), "using it panics");
    drop(m2);
    drop(heap);
    drop(g); // after the heap: only frees its slot
    drop(w);
}

/// Many threads, each churning globals, weak references and resources, with two GC threads
/// and verification on; every thread checks its own invariants as it goes.
#[test]
fn stress_many_threads_churn_globals_weaks_and_resources() {
    for preset in [Preset::Vanilla, Preset::Optimized] {
        let mut config = GcConfig::for_preset(preset);
        config.heap_size = 48 << 20;
        config.gc_threads = 2;
        config.verify = true;
        let heap = heap(config);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let heap = &heap;
                s.spawn(move || stress_thread(heap, t));
            }
        });
        assert_verified(&heap);
        assert!(
            heap.stats().records.len() > 10,
            "{preset:?}: collections ran"
        );
    }
}

fn stress_thread(heap: &Heap, t: u64) {
    let mut m = heap.attach();
    let res = Resources::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64 ^ (t + 1).wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    // (id, checksum, global) of the trees held; (id, weak) of trees maybe dead.
    let mut globals: Vec<(u64, Sum, Global<Node>)> = Vec::new();
    let mut weaks: Vec<(u64, Weak<Node>)> = Vec::new();
    let mut attached = 0usize;
    for step in 0..8_000u64 {
        let id = t * 1_000_000 + step;
        match next() % 8 {
            0..=2 => {
                let (g, w, sum) = m.scope(|m| {
                    let mut seed = id;
                    let tr = tree(m, 1 + (id % 4) as u32, &mut seed).unwrap();
                    if id.is_multiple_of(3) {
                        m.on_collect(tr, res.make(id));
                        attached += 1;
                        res.pinned.borrow_mut().insert(id);
                    }
                    (m.global(tr), m.weak(tr), checksum(m.get(tr)))
                });
                globals.push((id, sum, g));
                weaks.push((id, w));
            }
            3 | 4 if !globals.is_empty() => {
                let k = (next() as usize) % globals.len();
                let (id, _, g) = globals.swap_remove(k);
                res.pinned.borrow_mut().remove(&id);
                drop(g);
            }
            5 => churn(&mut m, 5),
            6 => {
                let held: HashSet<u64> = globals.iter().map(|(id, _, _)| *id).collect();
                weaks.retain(|(id, w)| match m.upgrade_view(w) {
                    Some(v) => {
                        assert_eq!(v.value(), *id, "thread {t}: the weak ref's own object");
                        true
                    }
                    None => {
                        assert!(
                            !held.contains(id),
                            "thread {t}: weak {id} cleared while held"
                        );
                        false
                    }
                });
            }
            _ => {
                if next() % 16 == 0 {
                    m.collect(if next() % 4 == 0 {
                        CollectionKind::Full
                    } else {
                        CollectionKind::Young
                    });
                }
                for (id, sum, g) in &globals {
                    assert_eq!(checksum(m.get_global(g)), *sum, "thread {t}: tree {id}");
                }
            }
        }
    }
    let dropped = res.dropped.borrow().len();
    assert!(dropped <= attached);
    res.pinned.borrow_mut().clear();
    drop(globals);
    drop(weaks);
    drop(m);
    let dropped: Vec<u64> = res.dropped();
    assert_eq!(
        dropped.len(),
        attached,
        "thread {t}: every resource dropped once"
    );
    let unique: HashSet<_> = dropped.iter().collect();
    assert_eq!(unique.len(), attached, "thread {t}: none twice");
}

// `NodeView` is the derive's view of `Node`; the tests name it for the helpers' signatures.
#[allow(dead_code)]
fn _view_is_typed(v: NodeView<'_>) -> impl TypedView<'_, Target = Node> {
    v
}
