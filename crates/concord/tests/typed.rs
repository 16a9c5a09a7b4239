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

/// Fields named like the methods the generated code calls or the view's traits have
/// (`clone`, `fmt`, `eq`, `finish`, ..), like the generated code's locals (`m`, `value`, `f`,
/// `raw`), like a setter (`set_up`) and a raw identifier: the getters and setters are exactly
/// the fields', and `{:?}` shows every field. (A field `clone` once made `{:?}` recurse until
/// the stack overflowed, through `Clone::clone` on `&View`; a field `fmt` did not compile.)
#[derive(concord::Trace)]
struct Awkward {
    view: Option<Root<Awkward>>,
    root: Root<Node>,
    handle: Option<Root<Node>>,
    clone: u64,
    fmt: i32,
    get: u8,
    set: u16,
    new: i64,
    into: u32,
    from: i8,
    drop: bool,
    eq: f64,
    hash: usize,
    default: isize,
    as_ref: f32,
    r#type: i16,
    finish: u64,
    field: u8,
    m: u32,
    value: u32,
    raw: u8,
    f: u8,
    set_up: u8,
}

/// An `Awkward` whose payload fields are `base`, `base + 1`, .. in declaration order.
fn awkward(
    view: Option<Root<Awkward>>,
    root: Root<Node>,
    handle: Option<Root<Node>>,
    base: u8,
) -> Awkward {
    let n = |i: u8| base + i;
    Awkward {
        view,
        root,
        handle,
        clone: n(0).into(),
        fmt: n(1).into(),
        get: n(2),
        set: n(3).into(),
        new: n(4).into(),
        into: n(5).into(),
        from: n(6) as i8,
        drop: true,
        eq: n(7).into(),
        hash: n(8).into(),
        default: n(9).into(),
        as_ref: n(10).into(),
        r#type: n(11).into(),
        finish: n(12).into(),
        field: n(13),
        m: n(14).into(),
        value: n(15).into(),
        raw: n(16),
        f: n(17),
        set_up: n(18),
    }
}

/// Every payload field of `v`, in declaration order (as the numbers `awkward` gave them).
fn awkward_payload(v: AwkwardView<'_>) -> ([f64; 19], bool) {
    (
        [
            v.clone() as f64,
            v.fmt().into(),
            v.get().into(),
            v.set().into(),
            v.new() as f64,
            v.into().into(),
            v.from().into(),
            v.eq(),
            v.hash() as f64,
            v.default() as f64,
            v.as_ref().into(),
            v.r#type().into(),
            v.finish() as f64,
            v.field().into(),
            v.m().into(),
            v.value().into(),
            v.raw().into(),
            v.f().into(),
            v.set_up().into(),
        ],
        v.drop(),
    )
}

fn numbered(base: u8) -> [f64; 19] {
    std::array::from_fn(|i| f64::from(base) + i as f64)
}

#[test]
fn fields_named_like_trait_and_generated_methods_read_write_and_format() {
    let heap = heap(16 << 20);
    let mut m = heap.attach();
    let node = |key| Node {
        left: None,
        right: None,
        key,
        value: 0,
        height: 1,
    };
    let n1 = m.alloc_typed(node(1)).unwrap();
    let n2 = m.alloc_typed(node(2)).unwrap();
    let first = m.alloc_typed(awkward(None, n1, None, 10)).unwrap();
    let a = m
        .alloc_typed(awkward(Some(first), n2, Some(n1), 50))
        .unwrap();
    let s = format!("{:?}", m.get(first));
    let payload = "clone: 10, fmt: 11, get: 12, set: 13, new: 14, into: 15, from: 16, \
                   drop: true, eq: 17.0, hash: 18, default: 19, as_ref: 20.0, type: 21, \
                   finish: 22, field: 23, m: 24, value: 25, raw: 26, f: 27, set_up: 28 }";
    assert!(s.starts_with("Awkward { view: None, root: 0x"), "{s}");
    assert!(s.ends_with(&format!(", handle: None, {payload}")), "{s}");
    m.collect(CollectionKind::Full);
    let v = m.get(a);
    let fv = v.view().expect("`view` is set");
    assert!(fv.view().is_none() && fv.handle().is_none());
    assert_eq!((fv.root().key(), v.root().key()), (1, 2));
    assert_eq!(v.handle().map(|h| h.key()), Some(1));
    assert_eq!(awkward_payload(fv), (numbered(10), true));
    assert_eq!(awkward_payload(v), (numbered(50), true));

    // Every setter, then a young and a full collection.
    v.set_view(&m, None);
    fv.set_view(&m, Some(v));
    v.set_root(&m, fv.root());
    v.set_handle(&m, None);
    fv.set_handle(&m, Some(m.get(n2)));
    v.set_clone(100);
    v.set_fmt(101);
    v.set_get(102);
    v.set_set(103);
    v.set_new(104);
    v.set_into(105);
    v.set_from(106);
    v.set_eq(107.0);
    v.set_hash(108);
    v.set_default(109);
    v.set_as_ref(110.0);
    v.set_type(111);
    v.set_finish(112);
    v.set_field(113);
    v.set_m(114);
    v.set_value(115);
    v.set_raw(116);
    v.set_f(117);
    v.set_set_up(118);
    v.set_drop(false);
    let _ = m.alloc_typed(node(3)).unwrap();
    for kind in [CollectionKind::Young, CollectionKind::Full] {
        m.collect(kind);
        m.verify_heap().expect("heap verifies");
        let v = m.get(a);
        let fv = m.get(first);
        assert!(v.view().is_none() && v.handle().is_none());
        assert!(fv.view() == Some(v), "`first` refers to `a`");
        assert_eq!((v.root().key(), fv.handle().map(|h| h.key())), (1, Some(2)));
        assert_eq!(awkward_payload(v), (numbered(100), false));
        assert_eq!(awkward_payload(fv), (numbered(10), true));
        let s = format!("{v:?}");
        assert!(s.starts_with("Awkward { view: None, root: 0x"), "{s}");
        assert!(
            s.ends_with(
                ", handle: None, clone: 100, fmt: 101, get: 102, set: 103, new: 104, \
                 into: 105, from: 106, drop: false, eq: 107.0, hash: 108, default: 109, \
                 as_ref: 110.0, type: 111, finish: 112, field: 113, m: 114, value: 115, \
                 raw: 116, f: 117, set_up: 118 }"
            ),
            "{s}"
        );
    }
}

/// `Self` in a reference field is the struct (it once named the view in the generated code:
/// "`RingView<'m>` is not a Concord typed object").
#[derive(concord::Trace)]
struct Ring {
    next: Root<Self>,
    prev: Option<Root<Self>>,
    n: u64,
}

/// The first `Ring`, its `next` itself: made untyped, as `first_sample` is.
fn first_ring(m: &mut Mutator<'_>) -> Root<Ring> {
    let h = m.alloc(Ring::TYPE).unwrap();
    let g = m.view(h).unwrap();
    m.store(g, 0, Some(g));
    // SAFETY: `h` has Ring's layout; slot 0 holds a Ring (itself), slot 1 null (allowed:
    // `Option`), the payload is zeroed (valid); the handle is used no more.
    unsafe { Root::from_handle(h) }
}

#[test]
fn self_in_reference_fields_is_the_struct() {
    let heap = heap(16 << 20);
    let mut m = heap.attach();
    let head = first_ring(&mut m);
    // A doubly linked ring: each new element goes after `head`.
    for n in 1..=100 {
        m.scope(|m| {
            let next = m.root_typed(m.get(head).next());
            let new = m
                .alloc_typed(Ring {
                    next,
                    prev: Some(head),
                    n,
                })
                .unwrap();
            m.get(next).set_prev(m, Some(m.get(new)));
            m.get(head).set_next(m, m.get(new));
        });
    }
    let _: fn(RingView<'static>) -> RingView<'static> = RingView::next;
    for kind in [CollectionKind::Young, CollectionKind::Full] {
        m.collect(kind);
        m.verify_heap().expect("heap verifies");
        let h = m.get(head);
        let (mut fwd, mut back) = (Vec::new(), Vec::new());
        let mut v = h.next();
        while v != h {
            fwd.push(v.n());
            v = v.next();
        }
        let mut v = h.prev().expect("a ring of 101");
        while v != h {
            back.push(v.n());
            v = v.prev().expect("a ring of 101");
        }
        assert_eq!(fwd, (1..=100).rev().collect::<Vec<_>>());
        assert_eq!(back, (1..=100).collect::<Vec<_>>());
    }
}

/// The primitive types spelled as paths (as the derive's own generated code spells them).
#[derive(concord::Trace)]
struct Spelled {
    a: core::primitive::u8,
    b: ::core::primitive::u32,
    c: std::primitive::i16,
    d: ::std::primitive::bool,
    e: core::primitive::f64,
    f: ::std::primitive::usize,
    g: u64,
}

#[test]
fn primitive_type_paths_are_payload_fields() {
    let size = |name| match field_place::<Spelled>(name) {
        Some(FieldPlace::Payload { size, .. }) => size,
        p => panic!("{name}: {p:?}"),
    };
    let sizes: Vec<usize> = ["a", "b", "c", "d", "e", "f", "g"]
        .into_iter()
        .map(size)
        .collect();
    assert_eq!(sizes, [1, 4, 2, 1, 8, 8, 8]);
    assert_eq!(Spelled::TYPE.payload_bytes(), 32);
    let heap = heap(16 << 20);
    let mut m = heap.attach();
    let s = m
        .alloc_typed(Spelled {
            a: 200,
            b: u32::MAX,
            c: -300,
            d: true,
            e: 0.25,
            f: usize::MAX - 1,
            g: 7,
        })
        .unwrap();
    m.collect(CollectionKind::Full);
    let v = m.get(s);
    assert_eq!(
        (v.a(), v.b(), v.c(), v.d(), v.e(), v.f(), v.g()),
        (200, u32::MAX, -300, true, 0.25, usize::MAX - 1, 7)
    );
    v.set_a(1);
    v.set_b(2);
    v.set_c(3);
    v.set_d(false);
    v.set_e(5.0);
    v.set_f(6);
    v.set_g(8);
    m.collect(CollectionKind::Young);
    let v = m.get(s);
    assert_eq!(
        (v.a(), v.b(), v.c(), v.d(), v.e(), v.f(), v.g()),
        (1, 2, 3, false, 5.0, 6, 8)
    );
}
