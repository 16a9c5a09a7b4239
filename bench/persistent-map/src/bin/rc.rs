//! Concord's `examples/persistent_map.rs` on `std::rc::Rc`: a persistent (path-copying) AVL map
//! of `Rc<Node>`s. Two threads, each with a map of its own (`Rc` is not `Send`), insert N keys
//! with overwrites, keep every 10th version alive for a while, and check the result (and one old
//! version) against `std::collections::BTreeMap`.
//!
//! `cargo run --release --bin rc [N]` (N inserts per thread, default 200000). Prints the wall
//! time.

use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Instant;

/// A map node: two children, then key, value and height.
struct Node {
    left: Tree,
    right: Tree,
    key: u64,
    value: u64,
    height: u8,
}

type Tree = Option<Rc<Node>>;

fn height(t: &Tree) -> u8 {
    t.as_ref().map_or(0, |t| t.height)
}

/// A node over `left` and `right`, with its height.
fn node(key: u64, value: u64, left: Tree, right: Tree) -> Rc<Node> {
    let height = 1 + height(&left).max(height(&right));
    Rc::new(Node {
        left,
        right,
        key,
        value,
        height,
    })
}

/// A node over `l` and `r`, with a single or double rotation if one side is two levels taller.
fn balance(k: u64, v: u64, l: Tree, r: Tree) -> Rc<Node> {
    let (hl, hr) = (height(&l), height(&r));
    if hl > hr + 1 {
        let l = l.unwrap();
        if height(&l.left) >= height(&l.right) {
            let r = node(k, v, l.right.clone(), r);
            return node(l.key, l.value, l.left.clone(), Some(r));
        }
        let m = l.right.as_ref().unwrap();
        let a = node(l.key, l.value, l.left.clone(), m.left.clone());
        let b = node(k, v, m.right.clone(), r);
        return node(m.key, m.value, Some(a), Some(b));
    }
    if hr > hl + 1 {
        let r = r.unwrap();
        if height(&r.right) >= height(&r.left) {
            let l = node(k, v, l, r.left.clone());
            return node(r.key, r.value, Some(l), r.right.clone());
        }
        let m = r.left.as_ref().unwrap();
        let a = node(k, v, l, m.left.clone());
        let b = node(r.key, r.value, m.right.clone(), r.right.clone());
        return node(m.key, m.value, Some(a), Some(b));
    }
    node(k, v, l, r)
}

/// A new version of `t` with `key` bound to `value`; `t` is unchanged.
fn insert(t: Option<&Node>, key: u64, value: u64) -> Rc<Node> {
    let Some(t) = t else {
        return node(key, value, None, None);
    };
    match key.cmp(&t.key) {
        std::cmp::Ordering::Less => {
            let l = insert(t.left.as_deref(), key, value);
            balance(t.key, t.value, Some(l), t.right.clone())
        }
        std::cmp::Ordering::Greater => {
            let r = insert(t.right.as_deref(), key, value);
            balance(t.key, t.value, t.left.clone(), Some(r))
        }
        std::cmp::Ordering::Equal => node(key, value, t.left.clone(), t.right.clone()),
    }
}

/// In-order contents.
fn contents(t: &Node) -> Vec<(u64, u64)> {
    fn walk(n: Option<&Node>, out: &mut Vec<(u64, u64)>) {
        if let Some(n) = n {
            walk(n.left.as_deref(), out);
            out.push((n.key, n.value));
            walk(n.right.as_deref(), out);
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
    let mut current = insert(None, k0, v0); // the current version
    let mut kept: Vec<(Rc<Node>, u64)> = Vec::new(); // a ring of old versions
    for (key, i) in stream {
        current = insert(Some(&current), key, i);
        if i % 10 == 0 {
            // Keep every 10th version for a while: old paths stay shared with newer versions.
            let slot = (i / 10) as usize % 100;
            if let Some(k) = kept.get_mut(slot) {
                *k = (current.clone(), i);
            } else {
                kept.push((current.clone(), i));
            }
        }
    }
    let model: BTreeMap<u64, u64> = keys(seed, n).collect();
    assert_eq!(
        contents(&current),
        Vec::from_iter(model),
        "thread {seed}: map differs"
    );
    let (oldest, at) = kept.iter().min_by_key(|k| k.1).expect("versions kept");
    let then: BTreeMap<u64, u64> = keys(seed, n).take(*at as usize + 1).collect();
    assert_eq!(
        contents(oldest),
        Vec::from_iter(then),
        "an old version changed"
    );
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
        "persistent_map (Rc): 2 threads x {n} inserts, checked against BTreeMap: {:.3} s wall",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
