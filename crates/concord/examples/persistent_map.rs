//! A persistent (path-copying) AVL map of typed Concord objects: two threads, each with its own
//! mutator, insert N keys with overwrites into their own map, keep every 10th version alive for
//! a while, and check the result (and one old version) against `std::collections::BTreeMap`.
//!
//! `cargo run --release -p concord --example persistent_map [N]` (N inserts per thread, default
//! 200000). Prints the wall time and the collector's work.

use std::collections::BTreeMap;
use std::time::Instant;

use concord::typed::Root;
use concord::{GcError, Heap, Mutator};

/// A map node: two reference slots, then 17 payload bytes (key, value, height).
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

/// A node over `l` and `r`, with its height.
fn node(
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

/// `t`'s key, value and children (as roots: they must survive the allocations to come).
fn parts(m: &Mutator<'_>, t: Root<Node>) -> (u64, u64, Tree, Tree) {
    let v = m.get(t);
    (
        v.key(),
        v.value(),
        v.left().map(|c| m.root_typed(c)),
        v.right().map(|c| m.root_typed(c)),
    )
}

/// A node over `l` and `r`, with a single or double rotation if one side is two levels taller.
fn balance(m: &mut Mutator<'_>, k: u64, v: u64, l: Tree, r: Tree) -> Result<Root<Node>, GcError> {
    let (hl, hr) = (height(m, l), height(m, r));
    if hl > hr + 1 {
        let (lk, lv, ll, lr) = parts(m, l.unwrap());
        if height(m, ll) >= height(m, lr) {
            let r = node(m, k, v, lr, r)?;
            return node(m, lk, lv, ll, Some(r));
        }
        let (mk, mv, ml, mr) = parts(m, lr.unwrap());
        let (a, b) = (node(m, lk, lv, ll, ml)?, node(m, k, v, mr, r)?);
        return node(m, mk, mv, Some(a), Some(b));
    }
    if hr > hl + 1 {
        let (rk, rv, rl, rr) = parts(m, r.unwrap());
        if height(m, rr) >= height(m, rl) {
            let l = node(m, k, v, l, rl)?;
            return node(m, rk, rv, Some(l), rr);
        }
        let (mk, mv, ml, mr) = parts(m, rl.unwrap());
        let (a, b) = (node(m, k, v, l, ml)?, node(m, rk, rv, mr, rr)?);
        return node(m, mk, mv, Some(a), Some(b));
    }
    node(m, k, v, l, r)
}

/// A new version of `t` with `key` bound to `value`; `t` is unchanged.
fn insert(m: &mut Mutator<'_>, t: Tree, key: u64, value: u64) -> Result<Root<Node>, GcError> {
    let Some(t) = t else {
        return node(m, key, value, None, None);
    };
    let (k, v, l, r) = parts(m, t);
    match key.cmp(&k) {
        std::cmp::Ordering::Less => {
            let l = insert(m, l, key, value)?;
            balance(m, k, v, Some(l), r)
        }
        std::cmp::Ordering::Greater => {
            let r = insert(m, r, key, value)?;
            balance(m, k, v, l, Some(r))
        }
        std::cmp::Ordering::Equal => node(m, key, value, l, r),
    }
}

/// In-order contents, through views only (no handles, no allocation).
fn contents(m: &Mutator<'_>, t: Tree) -> Vec<(u64, u64)> {
    fn walk(n: Option<NodeView<'_>>, out: &mut Vec<(u64, u64)>) {
        if let Some(v) = n {
            walk(v.left(), out);
            out.push((v.key(), v.value()));
            walk(v.right(), out);
        }
    }
    let mut out = Vec::new();
    walk(t.map(|t| m.get(t)), &mut out);
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
fn run(heap: &Heap, seed: u64, n: usize) -> Result<(), GcError> {
    let mut m = heap.attach();
    let mut stream = keys(seed, n);
    let (k0, v0) = stream.next().expect("n > 0");
    let current = insert(&mut m, None, k0, v0)?; // the current version, in one root
    let mut kept: Vec<(Root<Node>, u64)> = Vec::new(); // a ring of old versions
    for (key, i) in stream {
        m.scope_into(current, |m| insert(m, Some(current), key, i))?;
        if i % 10 == 0 {
            // Keep every 10th version for a while: old paths stay reachable and get promoted.
            let slot = (i / 10) as usize % 100;
            if let Some((root, at)) = kept.get_mut(slot) {
                m.set_root_typed(*root, m.get(current));
                *at = i;
            } else {
                kept.push((m.root_typed(m.get(current)), i));
            }
        }
    }
    let model: BTreeMap<u64, u64> = keys(seed, n).collect();
    assert_eq!(
        contents(&m, Some(current)),
        Vec::from_iter(model),
        "thread {seed}: map differs"
    );
    let &(oldest, at) = kept.iter().min_by_key(|k| k.1).expect("versions kept");
    let then: BTreeMap<u64, u64> = keys(seed, n).take(at as usize + 1).collect();
    assert_eq!(
        contents(&m, Some(oldest)),
        Vec::from_iter(then),
        "an old version changed"
    );
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(200_000), |a| a.parse())?;
    if n < 11 {
        return Err(
            "N must be at least 11 (every 10th version is kept, and the oldest is checked)".into(),
        );
    }
    let heap = Heap::builder().heap_size(256 << 20).build()?;
    let start = Instant::now();
    std::thread::scope(|s| {
        let runs: Vec<_> = [1u64, 2]
            .map(|t| {
                let heap = &heap;
                s.spawn(move || run(heap, t.wrapping_mul(0x9e37_79b9_7f4a_7c15), n))
            })
            .into_iter()
            .collect();
        runs.into_iter()
            .try_for_each(|r| r.join().expect("thread panicked"))
    })?;
    let wall = start.elapsed();
    let stats = heap.finish()?;
    let pauses = stats.records.iter().fold(0.0, |ms, r| ms + r.pause_ms);
    println!(
        "persistent_map: 2 threads x {n} inserts, checked against BTreeMap: {:.3} s wall, \
         {} collections ({pauses:.1} ms of pauses), {} MiB allocated",
        wall.as_secs_f64(),
        stats.records.len(),
        stats.bytes_allocated >> 20
    );
    Ok(())
}
