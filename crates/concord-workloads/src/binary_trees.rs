//! `binary-trees`: the Computer Language Benchmarks Game program, depth `N` (`--size`,
//! [`SIZE`]: default 18, allowed 4..=30).
//!
//! With `min_depth = 4`, `max_depth = max(min_depth + 2, N)` and `stretch = max_depth + 1`, one
//! round: builds a stretch tree of depth `stretch` bottom-up and checks it; builds a long-lived
//! tree of depth `max_depth`; for `d = min_depth, min_depth + 2, ..., max_depth` builds and
//! checks `2^(max_depth - d + min_depth)` trees of depth `d`; and finally checks the long-lived
//! tree. `check(node) = 1 + check(left) + check(right)` counts the nodes; a node has both
//! children or none.
//!
//! The checksum of a round is the sum of every check the original program prints (the stretch
//! check, each depth's total, the long-lived check); a tree of depth `d` has `2^(d+1) - 1`
//! nodes, so it is known in advance ([`expected_checksum`]). [`crate::WorkloadResult::details`]
//! holds the program's output lines (of the last round).
//!
//! With `--mutators N > 1` the trees of each depth are split across N worker threads, each with
//! its own mutator, while the calling thread's mutator (which owns the long-lived tree) waits
//! in a [`concord::Mutator::blocking`] region so it does not hold up collections. With one
//! mutator everything runs on the calling thread.
//!
//! A node is a typed object ([`Node`], `#[derive(concord::Trace)]`): two reference slots, no
//! payload, i.e. [`ObjectType::fixed(2, 0)`](ObjectType::fixed) (24 bytes). The program is
//! written as a Rust user of the library would write it: typed constructors, one
//! [`Mutator::scope_escape_typed`] per level of the bottom-up build, and a check that follows
//! typed views (plain loads, no handles).
//!
//! # Heap size
//!
//! The largest live set is the stretch tree (`2^(N+2) - 1` nodes, 24 bytes each), or during the
//! depth loop the long-lived tree plus one tree of depth `N` per mutator (`(1 + mutators) ·
//! (2^(N+1) - 1)` nodes). Measured smallest heaps that complete (optimized preset, 2 GC threads,
//! release build, collector at commit 7e77528; commit c6b82a4 gives the same thresholds):
//!
//! | N | mutators | largest live set | smallest heap that completes |
//! | --- | --- | --- | --- |
//! | 14 | 1 | 1.5 MiB | 4 MiB (the smallest heap a configuration allows) |
//! | 16 | 1 | 6 MiB | 8 MiB (searched in 1 MiB steps) |
//! | 18 | 1 | 24 MiB | 35 MiB (1 MiB steps; 31 and 33 also complete, 32 and 34 run out of memory) |
//! | 20 | 1 | 96 MiB | 130 MiB (5 MiB steps; 125 runs out of memory late) |
//! | 18 | 2 | 36 MiB | 56 MiB (8 MiB steps) |
//!
//! i.e. about 1.4 to 1.6 times the live set. Just above the smallest heap, success is not
//! monotonic in the heap size: a full collection moves a space's live data into the old
//! generation only if all of it fits, so when eden is full of a tree under construction and old
//! cannot take all of it, eden stays full and allocation fails with room left in old.
//! [`BinaryTrees`]'s default heap is four times the largest live set, rounded up to MiB, at
//! least 64 MiB (96 MiB for N = 18 and one mutator).

use std::num::NonZeroU64;

use concord::typed::{Root, Trace};
use concord::{GcError, Heap, Mutator, ObjectType};

use crate::data::tree_nodes;
use crate::scaffold::{self, in_tree, round_up_mib, Size, SizedWorkload};
use crate::{WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "binary-trees";

/// A tree node: `left` and `right` (both or neither), no payload.
#[derive(concord::Trace)]
pub struct Node {
    left: Option<Root<Node>>,
    right: Option<Root<Node>>,
}

/// A tree node's object type: two reference slots, no payload.
pub const NODE: ObjectType = <Node as Trace>::TYPE;

/// The program's `min_depth`, the depth of the smallest short-lived trees; also the smallest
/// depth (`--size`) accepted.
pub const MIN_DEPTH: u32 = 4;

/// `--size`: the tree depth, 18 by default, [`MIN_DEPTH`] to 30. The default heap is four
/// times the largest live set (see the module documentation).
pub const SIZE: Size =
    Size::named("binary-trees depth (size)", 18, MIN_DEPTH..=30, "").computed_heap(default_heap);

/// The Benchmarks Game binary-trees program. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BinaryTrees;

/// The depths one round uses for `--size n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Depths {
    max: u32,
    stretch: u32,
}

impl Depths {
    fn new(n: u32) -> Self {
        let max = n.max(MIN_DEPTH + 2);
        Depths {
            max,
            stretch: max + 1,
        }
    }

    /// The depths of the short-lived trees.
    fn short_lived(&self) -> impl Iterator<Item = u32> {
        (MIN_DEPTH..=self.max).step_by(2)
    }

    /// Trees built at depth `d`.
    fn iterations(&self, d: u32) -> u64 {
        1u64 << (self.max - d + MIN_DEPTH)
    }
}

/// The checksum of one round at depth `n`: the stretch check, plus every depth's total check,
/// plus the long-lived check.
pub fn expected_checksum(n: u32) -> u64 {
    let d = Depths::new(n);
    let short: u64 = d
        .short_lived()
        .map(|k| d.iterations(k) * tree_nodes(k))
        .sum();
    tree_nodes(d.stretch) + short + tree_nodes(d.max)
}

/// Four times the largest live set at depth `n` (capped at the largest depth) with `mutators`
/// mutators (see the module documentation), rounded up to MiB, at least 64 MiB.
fn default_heap(n: u32, mutators: usize) -> usize {
    let d = Depths::new(n.min(*SIZE.range().end()));
    let node = NODE.size_bytes() as u64;
    let stretch = tree_nodes(d.stretch);
    let steady = tree_nodes(d.max).saturating_mul(1 + mutators.max(1) as u64);
    let live = stretch.max(steady).saturating_mul(node);
    round_up_mib(usize::try_from(live.saturating_mul(4)).unwrap_or(usize::MAX)).max(64 * MIB)
}

impl SizedWorkload for BinaryTrees {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "the Benchmarks Game binary-trees: a stretch tree, a long-lived tree, and many short-lived \
         trees of depth 4..=N built bottom-up and checked (size N, default 18)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let d = Depths::new(n);
        let mut m = heap.attach();
        let mut checksum = 0u64;
        let mut details = Vec::new();
        for _ in 0..params.rounds {
            let round = run_round(heap, &mut m, d, params.mutators)?;
            checksum += round.stretch
                + round.per_depth.iter().map(|&(_, c)| c).sum::<u64>()
                + round.long_lived;
            details = round.lines(d);
        }
        Ok(WorkloadResult {
            checksum,
            expected_checksum: Some(expected_checksum(n) * params.rounds as u64),
            details,
        })
    }
}

/// The checks one round printed.
struct Round {
    stretch: u64,
    /// (depth, total check) for every short-lived depth.
    per_depth: Vec<(u32, u64)>,
    long_lived: u64,
}

impl Round {
    /// The original program's output lines as (text, check) pairs.
    fn lines(&self, d: Depths) -> Vec<(String, String)> {
        let mut lines = vec![(
            format!("stretch tree of depth {}", d.stretch),
            format!("check: {}", self.stretch),
        )];
        for &(depth, check) in &self.per_depth {
            lines.push((
                format!("{} trees of depth {depth}", d.iterations(depth)),
                format!("check: {check}"),
            ));
        }
        lines.push((
            format!("long lived tree of depth {}", d.max),
            format!("check: {}", self.long_lived),
        ));
        lines
    }
}

/// One round of the program; `m` is the calling thread's mutator.
fn run_round(
    heap: &Heap,
    m: &mut Mutator<'_>,
    d: Depths,
    mutators: usize,
) -> Result<Round, WorkloadError> {
    let stretch = m.scope(|m| {
        let t = bottom_up_tree(m, d.stretch)?;
        check(m, t, d.stretch).map_err(in_tree(NAME, "stretch tree", d.stretch))
    })?;
    m.scope(|m| {
        let long_lived = bottom_up_tree(m, d.max)?;
        let per_depth = if mutators == 1 {
            short_lived_share(m, d, 0, 1)?
        } else {
            m.blocking(|| run_workers(heap, d, mutators))?
        };
        let long_lived =
            check(m, long_lived, d.max).map_err(in_tree(NAME, "long-lived tree", d.max))?;
        Ok(Round {
            stretch,
            per_depth,
            long_lived,
        })
    })
}

/// Runs the short-lived trees on `mutators` worker threads, each with its own mutator, and
/// adds up their per-depth totals.
fn run_workers(heap: &Heap, d: Depths, mutators: usize) -> Result<Vec<(u32, u64)>, WorkloadError> {
    let results = scaffold::on_threads(heap, NAME, mutators, |m, w| {
        short_lived_share(m, d, w, mutators)
    });
    let mut total: Vec<(u32, u64)> = d.short_lived().map(|k| (k, 0)).collect();
    for r in results {
        for (t, (k, c)) in total.iter_mut().zip(r?) {
            debug_assert_eq!(t.0, k);
            t.1 += c;
        }
    }
    Ok(total)
}

/// Worker `w` of `workers`: builds and checks its share of each depth's trees (iterations
/// `w, w + workers, ...`); returns (depth, total check) per depth.
fn short_lived_share(
    m: &mut Mutator<'_>,
    d: Depths,
    w: usize,
    workers: usize,
) -> Result<Vec<(u32, u64)>, WorkloadError> {
    let mut out = Vec::new();
    for k in d.short_lived() {
        let iterations = d.iterations(k);
        let (w, workers) = (w as u64, workers as u64);
        let mine = iterations / workers + u64::from(w < iterations % workers);
        let mut sum = 0;
        for _ in 0..mine {
            sum += m.scope(|m| {
                let t = bottom_up_tree(m, k)?;
                check(m, t, k).map_err(in_tree(NAME, "short-lived tree", k))
            })?;
        }
        out.push((k, sum));
    }
    Ok(out)
}

/// Build a complete tree of depth `depth` bottom-up: the left subtree, the right subtree, then
/// their parent, each level in a scope of its own; the root belongs to the caller's scope.
fn bottom_up_tree(m: &mut Mutator<'_>, depth: u32) -> Result<Root<Node>, GcError> {
    if depth == 0 {
        return m.alloc_typed(Node {
            left: None,
            right: None,
        });
    }
    m.scope_escape_typed(|m| {
        let left = bottom_up_tree(m, depth - 1)?;
        let right = bottom_up_tree(m, depth - 1)?;
        m.alloc_typed(Node {
            left: Some(left),
            right: Some(right),
        })
    })
}

/// Counts the nodes of the tree at `node` (`1 + check(left) + check(right)`). A node must have
/// both children or none, and the tree may be at most `depth` deep.
fn check(m: &Mutator<'_>, node: Root<Node>, depth: u32) -> Result<u64, WorkloadError> {
    count_nodes(m.get(node), depth)
}

/// A node of a binary tree as the checks see it: a typed view of a heap node, or a plain-Rust
/// node of [`crate::native`], so that both versions run the very same checks.
pub(crate) trait TreeNode: Copy {
    /// The left child.
    fn left(self) -> Option<Self>;
    /// The right child.
    fn right(self) -> Option<Self>;
}

/// `impl TreeNode` for the typed view `$view` of a struct with `left` and `right` fields.
macro_rules! tree_node_view {
    ($view:ident) => {
        impl $crate::binary_trees::TreeNode for $view<'_> {
            #[inline]
            fn left(self) -> Option<Self> {
                $view::left(self)
            }

            #[inline]
            fn right(self) -> Option<Self> {
                $view::right(self)
            }
        }
    };
}
pub(crate) use tree_node_view;

tree_node_view!(NodeView);

/// [`check`] below a node: no safepoint can come while counting, so no handles are needed.
pub(crate) fn count_nodes<N: TreeNode>(node: N, depth: u32) -> Result<u64, WorkloadError> {
    match count_below(node, depth) {
        Some(n) => Ok(n.get()),
        None => Err(WorkloadError::Corrupt(
            first_damage(node, depth)
                .unwrap_or("the node count overflowed")
                .to_string(),
        )),
    }
}

/// [`count_nodes`]' recursion: the count (never 0), or `None` if the tree is damaged. One word,
/// so that it comes back in a register; [`first_damage`] says what the damage is.
fn count_below<N: TreeNode>(node: N, depth: u32) -> Option<NonZeroU64> {
    match (node.left(), node.right()) {
        (None, None) => NonZeroU64::new(1),
        (Some(l), Some(r)) if depth > 0 => {
            let (l, r) = (count_below(l, depth - 1)?, count_below(r, depth - 1)?);
            l.checked_add(r.get())?.checked_add(1)
        }
        _ => None,
    }
}

/// What is wrong with the first damaged node, in [`count_below`]'s order (`None` if nothing).
fn first_damage<N: TreeNode>(node: N, depth: u32) -> Option<&'static str> {
    match (node.left(), node.right()) {
        (None, None) => None,
        (Some(_), Some(_)) if depth == 0 => Some("a node at the bottom level has children"),
        (Some(l), Some(r)) => first_damage(l, depth - 1).or_else(|| first_damage(r, depth - 1)),
        (None, Some(_)) => Some("a node has a right child but no left child"),
        (Some(_), None) => Some("a node has a left child but no right child"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_checksum_matches_the_program_output() {
        // Output of the original program for N = 10:
        //   stretch tree of depth 11  check: 4095
        //   1024 trees of depth 4     check: 31744
        //   256 trees of depth 6      check: 32512
        //   64 trees of depth 8       check: 32704
        //   16 trees of depth 10      check: 32752
        //   long lived tree of depth 10  check: 2047
        assert_eq!(
            expected_checksum(10),
            4095 + 31744 + 32512 + 32704 + 32752 + 2047
        );
        // N = 4 is raised to max_depth 6.
        assert_eq!(expected_checksum(4), 255 + 64 * 31 + 16 * 127 + 127);
    }

    #[test]
    fn default_heap_grows_with_depth_and_mutators() {
        assert_eq!(SIZE.heap(10, 1), 64 * MIB);
        assert_eq!(SIZE.heap(18, 1), 96 * MIB);
        assert!(SIZE.heap(18, 4) > SIZE.heap(18, 1));
        assert!(SIZE.heap(30, 1) > SIZE.heap(20, 1));
        assert_eq!(SIZE.heap(31, 1), SIZE.heap(30, 1));
    }

    #[test]
    fn check_detects_structural_damage() {
        let heap = scaffold::test_heap(8 * MIB, false);
        let mut m = heap.attach();
        let t = bottom_up_tree(&mut m, 6).unwrap();
        assert_eq!(check(&m, t, 6).unwrap(), tree_nodes(6));
        // Deeper than allowed.
        let e = check(&m, t, 5).unwrap_err().to_string();
        assert!(e.contains("bottom level has children"), "{e}");
        // One child only.
        let v = m.get(t);
        v.left().unwrap().left().unwrap().set_left(&m, None);
        let e = check(&m, t, 6).unwrap_err().to_string();
        assert!(e.contains("right child but no left child"), "{e}");
        let e = in_tree(NAME, "long-lived tree", 6)(WorkloadError::Corrupt("x".into())).to_string();
        assert!(
            e.contains("binary-trees long-lived tree of depth 6: x"),
            "{e}"
        );
    }
}
