//! Concord's `examples/persistent_map.rs` on `gc-arena` 0.7: a persistent (path-copying) AVL map
//! of `Gc<'gc, Node>`s. Two threads, each with an `Arena` of its own (an arena is single-threaded),
//! insert N keys with overwrites, keep every 10th version alive for a while, and check the result
//! (and one old version) against `std::collections::BTreeMap`. Each insert is one `mutate_root`
//! call; between them the collector is paid its debt (`Arena::collect_debt`) when it exceeds 1024.
//!
//! `cargo run --release --bin gc_arena [N]` (N inserts per thread, default 200000). Prints the
//! wall time.

use std::collections::BTreeMap;
use std::time::Instant;

use gc_arena::{Arena, Collect, Gc, Mutation, Rootable};

/// A map node: two children, then key, value and height.
#[derive(Collect)]
#[collect(no_drop)]
struct Node<'gc> {
    left: Tree<'gc>,
    right: Tree<'gc>,
    key: u64,
    value: u64,
    height: u8,
}

type Tree<'gc> = Option<Gc<'gc, Node<'gc>>>;

/// The arena's root: the current version and a ring of old versions.
#[derive(Collect)]
#[collect(no_drop)]
struct Versions<'gc> {
    current: Gc<'gc, Node<'gc>>,
    kept: Vec<(Gc<'gc, Node<'gc>>, u64)>,
}

fn height(t: Tree<'_>) -> u8 {
    t.map_or(0, |t| t.height)
}

/// A node over `left` and `right`, with its height.
fn node<'gc>(
    mc: &Mutation<'gc>,
    key: u64,
    value: u64,
    left: Tree<'gc>,
    right: Tree<'gc>,
) -> Gc<'gc, Node<'gc>> {
    let height = 1 + height(left).max(height(right));
    Gc::new(
        mc,
        Node {
            left,
            right,
            key,
            value,
            height,
        },
    )
}

/// A node over `l` and `r`, with a single or double rotation if one side is two levels taller.
fn balance<'gc>(
    mc: &Mutation<'gc>,
    k: u64,
    v: u64,
    l: Tree<'gc>,
    r: Tree<'gc>,
) -> Gc<'gc, Node<'gc>> {
    let (hl, hr) = (height(l), height(r));
    if hl > hr + 1 {
        let l = l.unwrap();
        if height(l.left) >= height(l.right) {
            let r = node(mc, k, v, l.right, r);
            return node(mc, l.key, l.value, l.left, Some(r));
        }
        let m = l.right.unwrap();
        let a = node(mc, l.key, l.value, l.left, m.left);
        let b = node(mc, k, v, m.right, r);
        return node(mc, m.key, m.value, Some(a), Some(b));
    }
    if hr > hl + 1 {
        let r = r.unwrap();
        if height(r.right) >= height(r.left) {
            let l = node(mc, k, v, l, r.left);
            return node(mc, r.key, r.value, Some(l), r.right);
        }
        let m = r.left.unwrap();
        let a = node(mc, k, v, l, m.left);
        let b = node(mc, r.key, r.value, m.right, r.right);
        return node(mc, m.key, m.value, Some(a), Some(b));
    }
    node(mc, k, v, l, r)
}

/// A new version of `t` with `key` bound to `value`; `t` is unchanged.
fn insert<'gc>(mc: &Mutation<'gc>, t: Tree<'gc>, key: u64, value: u64) -> Gc<'gc, Node<'gc>> {
    let Some(t) = t else {
        return node(mc, key, value, None, None);
    };
    match key.cmp(&t.key) {
        std::cmp::Ordering::Less => {
            let l = insert(mc, t.left, key, value);
            balance(mc, t.key, t.value, Some(l), t.right)
        }
        std::cmp::Ordering::Greater => {
            let r = insert(mc, t.right, key, value);
            balance(mc, t.key, t.value, t.left, Some(r))
        }
        std::cmp::Ordering::Equal => node(mc, key, value, t.left, t.right),
    }
}

/// In-order contents.
fn contents<'gc>(t: Gc<'gc, Node<'gc>>) -> Vec<(u64, u64)> {
    fn walk<'gc>(n: Tree<'gc>, out: &mut Vec<(u64, u64)>) {
        if let Some(n) = n {
            walk(n.left, out);
            out.push((n.key, n.value));
            walk(n.right, out);
        }
    }
    let mut out = Vec::new();
    walk(Some(t), &mut out);
    out
}

/// The key stream of one thread: xorshift keys below `2n/3`, so about a third overwrite.
fn keys(seed: u64, n: usize) -> impl Iterator<Item = (u64, u64)> {
    let mut x = seed;
    (0..n as u64).map(move |i| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % (n as u64 * 2 / 3), i)
    })
}

/// One thread's run: `n` inserts into a map of its own, checked against `BTreeMap`.
fn run(seed: u64, n: usize) {
    let mut stream = keys(seed, n);
    let (k0, v0) = stream.next().expect("n > 0");
    let mut arena = Arena::<Rootable![Versions<'_>]>::new(|mc| Versions {
        current: insert(mc, None, k0, v0),
        kept: Vec::new(), // a ring of old versions
    });
    for (key, i) in stream {
        arena.mutate_root(|mc, v| {
            v.current = insert(mc, Some(v.current), key, i);
            if i % 10 == 0 {
                // Keep every 10th version for a while: old paths stay reachable.
                let slot = (i / 10) as usize % 100;
                if let Some(k) = v.kept.get_mut(slot) {
                    *k = (v.current, i);
                } else {
                    v.kept.push((v.current, i));
                }
            }
        });
        // Pay the collector's debt once it is worth the call, as gc-arena's docs suggest and
        // its author's piccolo does (`COLLECTOR_GRANULARITY` 1024).
        if arena.metrics().allocation_debt() > 1024.0 {
            arena.collect_debt();
        }
    }
    let model: BTreeMap<u64, u64> = keys(seed, n).collect();
    arena.mutate(|_, v| {
        assert_eq!(
            contents(v.current),
            Vec::from_iter(model),
            "thread {seed}: map differs"
        );
        let &(oldest, at) = v.kept.iter().min_by_key(|k| k.1).expect("versions kept");
        let then: BTreeMap<u64, u64> = keys(seed, n).take(at as usize + 1).collect();
        assert_eq!(
            contents(oldest),
            Vec::from_iter(then),
            "an old version changed"
        );
    });
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(200_000), |a| a.parse())?;
    if n < 11 {
        return Err(
            "N must be at least 11 (every 10th version is kept, and the oldest is checked)".into(),
        );
    }
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in [1u64, 2] {
            s.spawn(move || run(t.wrapping_mul(0x9e37_79b9_7f4a_7c15), n));
        }
    }); // joins both threads; panics if either did
    println!(
        "persistent_map (gc-arena): 2 threads x {n} inserts, checked against BTreeMap: {:.3} s wall",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
