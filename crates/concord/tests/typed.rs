//! Typed objects (`#[derive(concord::Trace)]`, `concord::typed`) against the collector: a
//! persistent AVL map of typed nodes built by 10^5 inserts with overwrites, checked against
//! `BTreeMap` and by a checksum of the graph across forced young and full collections and heap
//! verifications; the same on two threads, each with its own mutator; and the typed layout
//! against the untyped view of the same object.

use std::collections::BTreeMap;

use concord::typed::{field_place, FieldPlace, Root, Trace, TypedView};
use concord::{CollectionKind, GcConfig, GcError, Heap, Mutator, Preset};

#[derive(concord::Trace)]
struct Node {
    left: Option<Root<Node>>,
    right: Option<Root<Node>>,
    key: u64,
    value: u64,
    height: u8,
}

type Tree = Option<Root<Node>>;

fn height(m: &Mutator<'_>, t: Tree) -> u8 {
    t.map_or(0, |t| m.get(t).height())
}

/// A new node over `l` and `r` (which are balanced and within one level of each other).
fn make(
    m: &mut Mutator<'_>,
    key: u64,
    value: u64,
    l: Tree,
    r: Tree,
) -> Result<Root<Node>, GcError> {
    let height = 1 + height(m, l).max(height(m, r));
    m.alloc_typed(Node {
        left: l,
        right: r,
        key,
        value,
        height,
    })
}

/// The two children of `t` as roots.
fn children(m: &Mutator<'_>, t: Root<Node>) -> (Tree, Tree) {
    let v = m.get(t);
    (
        v.left().map(|c| m.root_typed(c)),
        v.right().map(|c| m.root_typed(c)),
    )
}

/// A node over `l` and `r`, rotated if their heights differ by two (AVL).
fn balance(
    m: &mut Mutator<'_>,
    key: u64,
    value: u64,
    l: Tree,
    r: Tree,
) -> Result<Root<Node>, GcError> {
    let (hl, hr) = (height(m, l), height(m, r));
    if hl > hr + 1 {
        let l = l.expect("left-heavy");
        let (lk, lv) = (m.get(l).key(), m.get(l).value());
        let (ll, lr) = children(m, l);
        if height(m, ll) >= height(m, lr) {
            let right = make(m, key, value, lr, r)?;
            make(m, lk, lv, ll, Some(right))
        } else {
            let lr = lr.expect("inner grandchild");
            let (k2, v2) = (m.get(lr).key(), m.get(lr).value());
            let (lrl, lrr) = children(m, lr);
            let left = make(m, lk, lv, ll, lrl)?;
            let right = make(m, key, value, lrr, r)?;
            make(m, k2, v2, Some(left), Some(right))
        }
    } else if hr > hl + 1 {
        let r = r.expect("right-heavy");
        let (rk, rv) = (m.get(r).key(), m.get(r).value());
        let (rl, rr) = children(m, r);
        if height(m, rr) >= height(m, rl) {
            let left = make(m, key, value, l, rl)?;
            make(m, rk, rv, Some(left), rr)
        } else {
            let rl = rl.expect("inner grandchild");
            let (k2, v2) = (m.get(rl).key(), m.get(rl).value());
            let (rll, rlr) = children(m, rl);
            let left = make(m, key, value, l, rll)?;
            let right = make(m, rk, rv, rlr, rr)?;
            make(m, k2, v2, Some(left), Some(right))
        }
    } else {
        make(m, key, value, l, r)
    }
}

/// The map `t` with `key` bound to `value`: a new path from the root, `t` unchanged.
fn insert(m: &mut Mutator<'_>, t: Tree, key: u64, value: u64) -> Result<Root<Node>, GcError> {
    let Some(t) = t else {
        return make(m, key, value, None, None);
    };
    let (k, v) = (m.get(t).key(), m.get(t).value());
    let (l, r) = children(m, t);
    if key < k {
        let l = insert(m, l, key, value)?;
        balance(m, k, v, Some(l), r)
    } else if key > k {
        let r = insert(m, r, key, value)?;
        balance(m, k, v, l, Some(r))
    } else {
        make(m, key, value, l, r)
    }
}

/// `*t` with `key` bound to `value`: the root `t` is made to hold the new version (no handle
/// is left behind).
fn insert_into(m: &mut Mutator<'_>, t: Root<Node>, key: u64, value: u64) {
    m.scope(|m| {
        let new = insert(m, Some(t), key, value).expect("heap large enough");
        m.set_root_typed(t, m.get(new));
    });
}

/// A lookup: views only, no handles.
fn lookup(m: &Mutator<'_>, t: Tree, key: u64) -> Option<u64> {
    let mut n = t.map(|t| m.get(t));
    while let Some(v) = n {
        n = match key.cmp(&v.key()) {
            std::cmp::Ordering::Less => v.left(),
            std::cmp::Ordering::Greater => v.right(),
            std::cmp::Ordering::Equal => return Some(v.value()),
        };
    }
    None
}

/// In-order contents of the map with its AVL invariants checked, and a checksum of the graph
/// (keys, values and heights in order).
fn contents(m: &Mutator<'_>, t: Tree) -> (Vec<(u64, u64)>, u64) {
    fn walk(n: Option<NodeView<'_>>, out: &mut Vec<(u64, u64)>, sum: &mut u64) -> u8 {
        let Some(v) = n else { return 0 };
        let hl = walk(v.left(), out, sum);
        out.push((v.key(), v.value()));
        *sum = sum
            .wrapping_mul(0x100_0000_01b3)
            .wrapping_add(v.key() ^ v.value().rotate_left(17) ^ u64::from(v.height()));
        let hr = walk(v.right(), out, sum);
        assert!(hl.abs_diff(hr) <= 1, "unbalanced at {}", v.key());
        assert_eq!(v.height(), 1 + hl.max(hr), "height of {}", v.key());
        v.height()
    }
    let mut out = Vec::new();
    let mut sum = 0xcbf2_9ce4_8422_2325;
    walk(t.map(|t| m.get(t)), &mut out, &mut sum);
    assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "keys out of order");
    (out, sum)
}

fn heap(size: usize) -> Heap {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = size;
    c.gc_threads = 2;
    Heap::new(c).unwrap()
}

/// A xorshift key stream with repeats (keys below `range`, so later inserts overwrite).
fn keys(seed: u64, n: usize, range: u64) -> impl Iterator<Item = (u64, u64)> {
    let mut x = seed;
    (0..n as u64).map(move |i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % range, i)
    })
}

/// Build a map of `n` inserts (about a third overwrites), forcing collections on the way;
/// check it against a `BTreeMap`, and a snapshot taken half way (persistence) against its own.
fn build_and_check(m: &mut Mutator<'_>, seed: u64, n: usize) {
    let mut model = BTreeMap::new();
    let mut stream = keys(seed, n, (n as u64) * 2 / 3);
    let (k0, v0) = stream.next().expect("n > 0");
    let root = insert(m, None, k0, v0).expect("heap large enough");
    model.insert(k0, v0);
    let mut snapshot = None;
    for (i, (k, v)) in stream.enumerate() {
        insert_into(m, root, k, v);
        model.insert(k, v);
        if i == n / 2 {
            // Keep this version: later inserts copy paths and must leave it as it is.
            snapshot = Some((m.root_typed(m.get(root)), model.clone()));
        }
        if i % 20_011 == 20_010 {
            m.collect(CollectionKind::Young);
        }
        if i % 50_021 == 50_020 {
            m.collect(CollectionKind::Full);
        }
        if i % 997 == 0 {
            assert_eq!(lookup(m, Some(root), k), Some(v));
        }
    }
    let t = Some(root);
    let (items, sum) = contents(m, t);
    assert_eq!(
        items,
        model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
    );
    for kind in [
        CollectionKind::Young,
        CollectionKind::Full,
        CollectionKind::Young,
    ] {
        m.collect(kind);
        m.verify_heap().expect("heap verifies");
        assert_eq!(
            contents(m, t).1,
            sum,
            "checksum after a {kind:?} collection"
        );
    }
    for k in 0..(n as u64) {
        assert_eq!(lookup(m, t, k), model.get(&k).copied(), "key {k}");
    }
    let (old, old_model) = snapshot.expect("snapshot taken");
    let (old_items, _) = contents(m, Some(old));
    assert_eq!(
        old_items,
        old_model.iter().map(|(k, v)| (*k, *v)).collect::<Vec<_>>()
    );
}

#[test]
fn persistent_map_of_typed_nodes_matches_btreemap_across_collections() {
    let heap = heap(96 << 20);
    let mut m = heap.attach();
    build_and_check(&mut m, 0x9e37_79b9_7f4a_7c15, 100_000);
    assert!(heap.collection_count() >= 4);
}

#[test]
fn two_threads_each_build_a_map_on_their_own_mutator() {
    let heap = heap(96 << 20);
    std::thread::scope(|s| {
        for seed in [1u64, 2] {
            let heap = &heap;
            s.spawn(move || {
                let mut m = heap.attach();
                build_and_check(&mut m, seed.wrapping_mul(0x2545_f491_4f6c_dd1d), 40_000);
            });
        }
    });
}

#[derive(concord::Trace)]
struct Sample {
    first: Root<Sample>,
    second: Option<Root<Node>>,
    a: u8,
    b: u64,
    c: i32,
    d: f64,
    e: bool,
    f: u16,
}

#[test]
fn typed_layout_matches_the_untyped_view() {
    let heap = heap(16 << 20);
    let mut m = heap.attach();
    // A `Root<Sample>` field needs a Sample: the first one points to itself afterwards.
    let leaf = m
        .alloc_typed(Node {
            left: None,
            right: None,
            key: 5,
            value: 6,
            height: 1,
        })
        .unwrap();
    let seed = first_sample(&mut m);
    m.get(seed).set_first(&m, m.get(seed));
    let s = m
        .alloc_typed(Sample {
            first: seed,
            second: Some(leaf),
            a: 0xab,
            b: 0x0123_4567_89ab_cdef,
            c: -5,
            d: 1.5,
            e: true,
            f: 0xbeef,
        })
        .unwrap();
    m.collect(CollectionKind::Full);
    let v = m.get(s);
    // SAFETY: the Gc is only read from.
    let g = unsafe { v.as_gc() };
    assert_eq!(g.ref_count(), Sample::TYPE.refs());
    assert_eq!(g.payload().len(), Sample::TYPE.payload_bytes());
    let payload = |name| match field_place::<Sample>(name) {
        Some(FieldPlace::Payload { offset, .. }) => offset,
        p => panic!("{name}: {p:?}"),
    };
    let slot = |name| match field_place::<Sample>(name) {
        Some(FieldPlace::Slot(s)) => s,
        p => panic!("{name}: {p:?}"),
    };
    assert_eq!(g.read_u64(payload("b")), v.b());
    assert_eq!(g.read_f64(payload("d")), v.d());
    assert_eq!(g.read_u32(payload("c")) as i32, v.c());
    let bytes = g.payload();
    assert_eq!(bytes[payload("a")], v.a());
    assert_eq!(bytes[payload("e")], 1);
    assert_eq!(
        u16::from_le_bytes([bytes[payload("f")], bytes[payload("f") + 1]]),
        v.f()
    );
    // SAFETY: read only.
    let first = unsafe { v.first().as_gc() };
    assert!(g.get(slot("first")).unwrap().ptr_eq(first));
    let second = unsafe { v.second().unwrap().as_gc() };
    assert!(g.get(slot("second")).unwrap().ptr_eq(second));
    assert_eq!(second.read_u64(0), 5);
    assert!(v.first().first() == v.first(), "the seed refers to itself");
}

/// The first `Sample`: its `first` field is a never-null `Root<Sample>`, and a root of a
/// Sample can only come from a Sample, so the first one of a type with a never-null field of
/// its own type is made untyped, filled, and converted with `unsafe` (`Option<Root<T>>` has no
/// such bootstrap).
fn first_sample(m: &mut Mutator<'_>) -> Root<Sample> {
    let h = m.alloc(Sample::TYPE).unwrap();
    // The untyped object has Sample's layout, but its `first` slot is null, which a
    // `Root<Sample>` field never is: fill it with itself before it is made typed.
    let g = m.view(h).unwrap();
    m.store(g, 0, Some(g));
    // SAFETY: `h` has Sample's layout; slot 0 holds a Sample (itself), slot 1 null (allowed:
    // `Option`), the payload is zeroed (valid for every field); the handle is used no more.
    unsafe { Root::from_handle(h) }
}
