//! `gcbench`: Boehm's GCBench (the Ellis/Kovac benchmark as adapted by Boehm), the same
//! algorithm as `bench/hotspot/GCBench.java`, so that Concord and HotSpot can be compared run
//! for run.
//!
//! One copy builds, in this order: a stretch tree of depth 18 bottom-up (then drops it); a
//! long-lived tree of depth 16 top-down; a long-lived array of 500 000 doubles, filling the first
//! half with `1.0 / i`; then for each depth `d = 4, 6, ..., 16`, `NumIters(d)` short-lived trees
//! top-down and as many bottom-up, where `NumIters(d) = 2 * TreeSize(18) / TreeSize(d)`. Every
//! tree is checked as it is finished ([`GcBenchParams`] documents the check and the checksum);
//! at the end the long-lived tree and the array are checked.
//!
//! A node is a typed object ([`Node`], `#[derive(concord::Trace)]`): `left` and `right`
//! reference slots, then `i: u32` at payload offset 0 (the node's height) and `j: u32` at
//! offset 4 (never written, so always 0), i.e. [`ObjectType::fixed(2, 8)`](ObjectType::fixed).
//! The double array is an (untyped) byte array of `8 * array_size` bytes.
//!
//! Trees under construction are only reachable through roots, so they survive the
//! collections that happen while they are built; every recursion level opens its own scope.

use std::num::NonZeroU64;

use concord::typed::{Root, Trace};
use concord::{GcError, Handle, Heap, Mutator, ObjectType};

use crate::binary_trees::TreeNode;
use crate::data::tree_nodes;
use crate::scaffold::{detail, in_tree, result, round_up_mib};
use crate::{run_copies, Workload, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "gcbench";

/// A tree node: `left`, `right`, then payload `i` (offset 0) and `j` (offset 4).
#[derive(concord::Trace)]
pub struct Node {
    left: Option<Root<Node>>,
    right: Option<Root<Node>>,
    /// The node's height (leaves 0).
    i: u32,
    /// Never written.
    j: u32,
}

/// A tree node's object type: two reference slots, 8 payload bytes.
pub const NODE: ObjectType = <Node as Trace>::TYPE;

/// A node with no children and height `i`.
fn leaf(i: u32) -> Node {
    Node {
        left: None,
        right: None,
        i,
        j: 0,
    }
}

/// Expected checksum of one copy, one round, with [`GcBenchParams::standard`] (the value
/// `GCBench.java` derives and prints).
pub const STANDARD_CHECKSUM_PER_COPY: u64 = 30_161_104;

/// Deepest tree [`GcBenchParams::validate`] accepts.
pub const MAX_TREE_DEPTH: u32 = 30;

/// The parameters of GCBench. [`GcBenchParams::standard`] are Boehm's (and `GCBench.java`'s).
///
/// Checksum: `check(n)` is the sum over the nodes of a tree of `n.i + 1`; a node at height `k`
/// stores `i = k`, so a complete tree of depth `d` sums to `S(d) = 2^(d+2) - d - 3`. One copy
/// adds `S(stretch) + S(long_lived) + Σ 2 · NumIters(d) · S(d)` over
/// `d = min_depth, min_depth + 2, ..., max_depth` ([`GcBenchParams::expected_checksum`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcBenchParams {
    /// Depth of the stretch tree (`kStretchTreeDepth`); also sets `NumIters`.
    pub stretch_depth: u32,
    /// Depth of the long-lived tree (`kLongLivedTreeDepth`).
    pub long_lived_depth: u32,
    /// Elements (doubles) of the long-lived array (`kArraySize`); the first half is filled.
    pub array_size: usize,
    /// Depth of the smallest short-lived trees (`kMinTreeDepth`).
    pub min_depth: u32,
    /// Depth of the largest short-lived trees (`kMaxTreeDepth`); depths go up in steps of 2.
    pub max_depth: u32,
}

impl GcBenchParams {
    /// Boehm's parameters: stretch 18, long-lived 16, array 500 000, short-lived 4..=16.
    pub const fn standard() -> Self {
        GcBenchParams {
            stretch_depth: 18,
            long_lived_depth: 16,
            array_size: 500_000,
            min_depth: 4,
            max_depth: 16,
        }
    }

    /// A reduced variant for tests: stretch 12, long-lived 10, array 10 000, short-lived 4..=10.
    pub const fn small() -> Self {
        GcBenchParams {
            stretch_depth: 12,
            long_lived_depth: 10,
            array_size: 10_000,
            min_depth: 4,
            max_depth: 10,
        }
    }

    /// Checks the parameters: depths at most [`MAX_TREE_DEPTH`], `min_depth <= max_depth <=
    /// stretch_depth` (so every depth is built at least once), and an array long enough that
    /// element 1000, which the end check reads, lies in the filled half (`array_size >= 2002`).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |msg: String| Err(WorkloadError::BadParameter(format!("gcbench: {msg}")));
        for (what, d) in [
            ("stretch depth", self.stretch_depth),
            ("long-lived depth", self.long_lived_depth),
            ("max depth", self.max_depth),
        ] {
            if d > MAX_TREE_DEPTH {
                return bad(format!(
                    "{what} {d} is out of range (allowed: 0..={MAX_TREE_DEPTH})"
                ));
            }
        }
        if self.min_depth > self.max_depth {
            return bad(format!(
                "min depth {} exceeds max depth {}",
                self.min_depth, self.max_depth
            ));
        }
        if self.max_depth > self.stretch_depth {
            return bad(format!(
                "max depth {} exceeds stretch depth {}",
                self.max_depth, self.stretch_depth
            ));
        }
        if self.array_size < 2002 {
            return bad(format!(
                "array size {} is too small (allowed: at least 2002)",
                self.array_size
            ));
        }
        if self.array_size.checked_mul(8).is_none() {
            return bad(format!("array size {} is too large", self.array_size));
        }
        Ok(())
    }

    /// `NumIters(d) = 2 * TreeSize(stretch_depth) / TreeSize(d)`: trees built per direction at
    /// depth `d`.
    pub fn num_iters(&self, d: u32) -> u64 {
        2 * tree_nodes(self.stretch_depth) / tree_nodes(d)
    }

    /// The short-lived tree depths: `min_depth, min_depth + 2, ..., <= max_depth`.
    pub fn depths(&self) -> impl Iterator<Item = u32> {
        (self.min_depth..=self.max_depth).step_by(2)
    }

    /// Checksum of one copy, one round (30 161 104 for [`GcBenchParams::standard`]).
    pub fn expected_checksum(&self) -> u64 {
        let short: u64 = self
            .depths()
            .map(|d| 2 * self.num_iters(d) * tree_sum(d))
            .sum();
        tree_sum(self.stretch_depth) + tree_sum(self.long_lived_depth) + short
    }

    /// A heap (bytes) that runs one copy comfortably: four times the largest live set (the
    /// stretch tree, or the long-lived tree and array plus the largest short-lived tree),
    /// rounded up to MiB, at least 4 MiB. 64 MiB for the standard parameters.
    pub fn default_heap_per_copy(&self) -> usize {
        let node = NODE.size_bytes() as u64;
        let stretch = tree_nodes(self.stretch_depth) * node;
        let steady = (tree_nodes(self.long_lived_depth) + tree_nodes(self.max_depth)) * node
            + 8 * self.array_size as u64;
        let live = stretch.max(steady);
        round_up_mib(usize::try_from(live.saturating_mul(4)).unwrap_or(usize::MAX)).max(4 * MIB)
    }
}

/// `S(d) = 2^(d+2) - d - 3`: the checksum of a complete tree of depth `d`.
fn tree_sum(d: u32) -> u64 {
    (1u64 << (d + 2)) - u64::from(d) - 3
}

/// The `gcbench` workload with a given set of [`GcBenchParams`].
///
/// `--mutators N` runs N independent copies, one per thread, each with its own mutator (as
/// `GCBench.java --copies N`); the checksum is the sum over copies and rounds. The workload has
/// no size parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcBench {
    params: GcBenchParams,
}

impl GcBench {
    /// GCBench with Boehm's parameters ([`GcBenchParams::standard`]).
    pub const fn standard() -> Self {
        GcBench {
            params: GcBenchParams::standard(),
        }
    }

    /// GCBench with other parameters (checked when it runs).
    pub const fn with_params(params: GcBenchParams) -> Self {
        GcBench { params }
    }

    /// The parameters it runs with.
    pub fn params(&self) -> &GcBenchParams {
        &self.params
    }
}

impl Default for GcBench {
    /// [`GcBench::standard`].
    fn default() -> Self {
        GcBench::standard()
    }
}

impl Workload for GcBench {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Boehm's GCBench: stretch tree, long-lived tree and array, short-lived trees built \
         top-down and bottom-up (one independent copy per mutator)"
    }

    fn default_heap(&self, params: &WorkloadParams) -> usize {
        self.params
            .default_heap_per_copy()
            .saturating_mul(params.mutators.max(1))
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        params.validate()?;
        if let Some(size) = params.size {
            return Err(WorkloadError::BadParameter(format!(
                "gcbench has no size parameter (got {size}); its parameters are fixed"
            )));
        }
        self.params.validate()
    }

    fn run(&self, heap: &Heap, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        self.validate(params)?;
        let p = self.params;
        let checksum = run_copies(heap, params, NAME, |m, _copy, _round| run_one_copy(m, &p))?;
        let per_copy = p.expected_checksum();
        let depths: Vec<String> = p.depths().map(|d| d.to_string()).collect();
        let details = vec![
            detail("copies", params.mutators),
            detail("rounds", params.rounds),
            detail("stretch tree depth", p.stretch_depth),
            detail("long-lived tree depth", p.long_lived_depth),
            detail("array size", p.array_size),
            detail("short-lived tree depths", depths.join(" ")),
            detail("checksum per copy and round", per_copy),
        ];
        // The copies' checksums are added with wrapping, so the expected sum wraps too.
        let expected = per_copy.wrapping_mul(params.mutators as u64);
        Ok(result(checksum, Some(expected), params, details))
    }
}

/// One copy of the benchmark on mutator `m`; returns its checksum.
pub fn run_one_copy(m: &mut Mutator<'_>, p: &GcBenchParams) -> Result<u64, WorkloadError> {
    p.validate()?;
    m.scope(|m| {
        let mut checksum = 0u64;

        // Stretch the memory space quickly.
        checksum += m.scope(|m| {
            let t = make_tree(m, p.stretch_depth)?;
            check(m, t, p.stretch_depth).map_err(in_tree(NAME, "stretch tree", p.stretch_depth))
        })?;

        // A long-lived tree, built top-down.
        let long_lived = m.alloc_typed(leaf(p.long_lived_depth))?;
        populate(m, p.long_lived_depth, long_lived)?;

        // A long-lived array, half filled.
        let array = m.alloc_byte_array(p.array_size * 8)?;
        for i in 0..p.array_size / 2 {
            m.write_f64(array, i * 8, 1.0 / i as f64);
        }

        for d in p.depths() {
            checksum += time_construction(m, p, d)?;
        }

        checksum += check(m, long_lived, p.long_lived_depth).map_err(in_tree(
            NAME,
            "long-lived tree",
            p.long_lived_depth,
        ))?;
        check_array(m, array, p.array_size)?;
        Ok(checksum)
    })
}

/// `NumIters(depth)` trees built top-down, then as many bottom-up, each checked; returns the
/// sum of their checks.
fn time_construction(
    m: &mut Mutator<'_>,
    p: &GcBenchParams,
    depth: u32,
) -> Result<u64, WorkloadError> {
    let iters = p.num_iters(depth);
    let mut checksum = 0;
    for _ in 0..iters {
        checksum += m.scope(|m| {
            let t = m.alloc_typed(leaf(depth))?;
            populate(m, depth, t)?;
            check(m, t, depth).map_err(in_tree(NAME, "top-down tree", depth))
        })?;
    }
    for _ in 0..iters {
        checksum += m.scope(|m| {
            let t = make_tree(m, depth)?;
            check(m, t, depth).map_err(in_tree(NAME, "bottom-up tree", depth))
        })?;
    }
    Ok(checksum)
}

/// Build the tree below `node` top-down (`Populate`): `depth` more levels.
fn populate(m: &mut Mutator<'_>, depth: u32, node: Root<Node>) -> Result<(), GcError> {
    if depth == 0 {
        return Ok(());
    }
    let d = depth - 1;
    m.scope(|m| {
        let l = m.alloc_typed(leaf(d))?;
        m.get(node).set_left(m, Some(m.get(l)));
        let r = m.alloc_typed(leaf(d))?;
        m.get(node).set_right(m, Some(m.get(r)));
        populate(m, d, l)?;
        populate(m, d, r)
    })
}

/// Build a tree of depth `depth` bottom-up (`MakeTree`); the root belongs to the caller's
/// scope.
fn make_tree(m: &mut Mutator<'_>, depth: u32) -> Result<Root<Node>, GcError> {
    if depth == 0 {
        return m.alloc_typed(leaf(0));
    }
    m.scope_escape_typed(|m| {
        let left = make_tree(m, depth - 1)?;
        let right = make_tree(m, depth - 1)?;
        m.alloc_typed(Node {
            left: Some(left),
            right: Some(right),
            i: depth,
            j: 0,
        })
    })
}

/// Structural check plus checksum of the tree at `node`, which must have height `height`:
/// every node of height `k > 0` has two children of height `k - 1`, every node of height 0 has
/// none, `j` is 0 everywhere. Returns the sum of `i + 1` over the nodes.
fn check(m: &Mutator<'_>, node: Root<Node>, height: u32) -> Result<u64, WorkloadError> {
    check_from(m.get(node), height)
}

/// A GCBench node as [`check_from`] sees it: a typed view of a heap node, or a plain-Rust
/// node of [`crate::native`], so that both versions run the very same check.
pub(crate) trait GcBenchNode: TreeNode {
    /// The `i` field (the node's height, as this version writes it).
    fn i(self) -> u32;
    /// The `j` field (never written).
    fn j(self) -> u32;
}

crate::binary_trees::tree_node_view!(NodeView);

impl GcBenchNode for NodeView<'_> {
    #[inline]
    fn i(self) -> u32 {
        NodeView::i(self)
    }

    #[inline]
    fn j(self) -> u32 {
        NodeView::j(self)
    }
}

/// [`check`] below a node: nothing allocates while checking, so no handles are needed.
pub(crate) fn check_from<N: GcBenchNode>(node: N, height: u32) -> Result<u64, WorkloadError> {
    match sum_below(node, height) {
        Some(sum) => Ok(sum.get()),
        None => Err(WorkloadError::Corrupt(
            first_fault(node, height).unwrap_or_else(|| "the checksum overflowed".to_string()),
        )),
    }
}

/// [`check_from`]'s recursion: the sum (never 0), or `None` if the tree is damaged. One word,
/// so that it comes back in a register; [`first_fault`] says what the damage is.
fn sum_below<N: GcBenchNode>(node: N, height: u32) -> Option<NonZeroU64> {
    if node.i() != height || node.j() != 0 {
        return None;
    }
    match (height, node.left(), node.right()) {
        (0, None, None) => NonZeroU64::new(1),
        (h, Some(l), Some(r)) if h > 0 => {
            let (l, r) = (sum_below(l, h - 1)?, sum_below(r, h - 1)?);
            l.checked_add(r.get())?.checked_add(u64::from(h) + 1)
        }
        _ => None,
    }
}

/// What is wrong with the first damaged node, in [`sum_below`]'s order (`None` if nothing).
fn first_fault<N: GcBenchNode>(node: N, height: u32) -> Option<String> {
    let i = node.i();
    if i != height {
        return Some(format!("a node of height {height} holds i = {i}"));
    }
    let j = node.j();
    if j != 0 {
        return Some(format!(
            "a node of height {height} holds j = {j} (never written)"
        ));
    }
    match (height, node.left(), node.right()) {
        (0, None, None) => None,
        (0, _, _) => Some("a leaf (height 0) has a child".to_string()),
        (_, Some(l), Some(r)) => first_fault(l, height - 1).or_else(|| first_fault(r, height - 1)),
        (_, l, r) => Some(format!(
            "a node of height {height} lacks its {} child",
            match (l, r) {
                (None, None) => "left and right",
                (None, _) => "left",
                _ => "right",
            }
        )),
    }
}

/// Checks the long-lived array: `1.0 / i` in the first half (element 1000 as `GCBench.java`
/// checks it, and every other one), 0 in the second.
fn check_array(m: &mut Mutator<'_>, array: Handle, size: usize) -> Result<(), WorkloadError> {
    let len = m.array_len(array);
    if len != size * 8 {
        return Err(WorkloadError::Corrupt(format!(
            "long-lived array: {len} bytes, expected {}",
            size * 8
        )));
    }
    if m.read_f64(array, 1000 * 8) != 1.0 / 1000.0 {
        return Err(WorkloadError::Corrupt(format!(
            "long-lived array: element 1000 is {}, expected {}",
            m.read_f64(array, 1000 * 8),
            1.0 / 1000.0
        )));
    }
    for i in 0..size {
        let expected = if i < size / 2 { 1.0 / i as f64 } else { 0.0 };
        let got = m.read_f64(array, i * 8);
        if got.to_bits() != expected.to_bits() {
            return Err(WorkloadError::Corrupt(format!(
                "long-lived array: element {i} is {got}, expected {expected}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_checksum_matches_gcbench_java() {
        let p = GcBenchParams::standard();
        assert_eq!(p.expected_checksum(), STANDARD_CHECKSUM_PER_COPY);
        // The table in GCBench.java.
        assert_eq!(tree_sum(18), 1_048_555);
        assert_eq!(tree_sum(16), 262_125);
        let iters: Vec<u64> = p.depths().map(|d| p.num_iters(d)).collect();
        assert_eq!(iters, [33824, 8256, 2052, 512, 128, 32, 8]);
        assert_eq!(p.default_heap_per_copy(), 64 * MIB);
    }

    #[test]
    fn tree_sum_matches_direct_count() {
        for d in 0..12u32 {
            let direct: u64 = (0..=d)
                .map(|k| (1u64 << (d - k)) * (u64::from(k) + 1))
                .sum();
            assert_eq!(tree_sum(d), direct, "depth {d}");
        }
    }

    #[test]
    fn bad_parameters_are_named() {
        let mut p = GcBenchParams::small();
        p.min_depth = 12;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("min depth 12 exceeds max depth 10"), "{e}");
        let mut p = GcBenchParams::small();
        p.array_size = 100;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("array size 100"), "{e}");
        let mut p = GcBenchParams::standard();
        p.stretch_depth = 31;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("stretch depth 31"), "{e}");
        let e = GcBench::standard()
            .validate(&WorkloadParams {
                size: Some(3),
                ..Default::default()
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("no size parameter"), "{e}");
    }

    fn heap() -> Heap {
        crate::scaffold::test_heap(8 * MIB, true)
    }

    fn corrupt_message(
        m: &mut Mutator<'_>,
        damage: impl FnOnce(&mut Mutator<'_>, Root<Node>) -> Root<Node>,
        height: u32,
    ) -> String {
        m.scope(|m| {
            let t = make_tree(m, 5).unwrap();
            assert_eq!(check(m, t, 5).unwrap(), tree_sum(5));
            let bad = damage(m, t);
            match check(m, bad, height) {
                Err(WorkloadError::Corrupt(msg)) => msg,
                other => panic!("damage not detected: {other:?}"),
            }
        })
    }

    #[test]
    fn check_detects_structural_damage() {
        let heap = heap();
        let mut m = heap.attach();
        // A missing child.
        let msg = corrupt_message(
            &mut m,
            |m, t| {
                m.get(t).left().unwrap().set_right(m, None);
                t
            },
            5,
        );
        assert!(msg.contains("height 4 lacks its right child"), "{msg}");
        // A wrong height.
        let msg = corrupt_message(
            &mut m,
            |m, t| {
                m.get(t).right().unwrap().left().unwrap().set_i(9);
                t
            },
            5,
        );
        assert!(msg.contains("height 3 holds i = 9"), "{msg}");
        // A leaf with a child.
        let msg = corrupt_message(
            &mut m,
            |m, t| {
                let leaf = m.alloc_typed(leaf(0)).unwrap();
                m.get(leaf).set_left(m, Some(m.get(t)));
                leaf
            },
            0,
        );
        assert!(msg.contains("leaf (height 0) has a child"), "{msg}");
        // A written j.
        let msg = corrupt_message(
            &mut m,
            |m, t| {
                m.get(t).set_j(1);
                t
            },
            5,
        );
        assert!(msg.contains("j = 1"), "{msg}");
        // The context names the tree.
        let e = in_tree(NAME, "stretch tree", 18)(WorkloadError::Corrupt("x".into())).to_string();
        assert!(e.contains("gcbench stretch tree of depth 18: x"), "{e}");
    }

    #[test]
    fn check_array_detects_damage() {
        let heap = heap();
        let mut m = heap.attach();
        let a = m.alloc_byte_array(4000 * 8).unwrap();
        for i in 0..2000 {
            m.write_f64(a, i * 8, 1.0 / i as f64);
        }
        check_array(&mut m, a, 4000).unwrap();
        m.write_f64(a, 1500 * 8, 2.0);
        let e = check_array(&mut m, a, 4000).unwrap_err().to_string();
        assert!(e.contains("element 1500 is 2"), "{e}");
        m.write_f64(a, 1000 * 8, 0.0);
        let e = check_array(&mut m, a, 4000).unwrap_err().to_string();
        assert!(e.contains("element 1000 is 0, expected 0.001"), "{e}");
    }

    #[test]
    fn one_small_copy_on_a_given_mutator() {
        let heap = heap();
        let mut m = heap.attach();
        let p = GcBenchParams::small();
        assert_eq!(run_one_copy(&mut m, &p).unwrap(), p.expected_checksum());
        assert_eq!(m.handle_count(), 0, "run_one_copy releases its handles");
        drop(m);
        assert_eq!(heap.stats().verified(), Some(true));
    }
}
