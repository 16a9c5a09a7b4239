//! `gcbench` in plain Rust: Boehm's GCBench as [`crate::gcbench`] and
//! `bench/hotspot/GCBench.java` run it (the stretch tree built bottom-up, the long-lived tree
//! built top-down, the long-lived array of doubles half filled with `1.0 / i`, then for each
//! depth `NumIters(d)` trees top-down and as many bottom-up), with `Box` nodes from the global
//! allocator, freed by `drop` as each tree goes out of scope. Every tree is checked as the
//! Concord workload checks it (the heights `i`, `j == 0`, both children or none) and the
//! checksum is the same ([`GcBenchParams::expected_checksum`]); at the end the long-lived
//! tree and every element of the array are checked.
//!
//! A node is two `Option<Box<Node>>`, `i: u32` and `j: u32` (24 bytes, as Concord's node;
//! `malloc` gives each a 32-byte chunk).

use crate::binary_trees::TreeNode;
use crate::gcbench::{check_from, GcBenchNode, GcBenchParams, NAME};
use crate::scaffold::{detail, in_tree};
use crate::{WorkloadError, WorkloadParams, WorkloadResult};

use super::NativeWorkload;

/// A tree node: `left`, `right`, its height `i` (leaves 0) and `j` (never written).
#[derive(Debug, Default)]
pub struct Node {
    /// The left subtree.
    pub left: Option<Box<Node>>,
    /// The right subtree.
    pub right: Option<Box<Node>>,
    /// The node's height.
    pub i: u32,
    /// Never written: always 0.
    pub j: u32,
}

impl Node {
    /// A node of height `i` without children.
    fn with_height(i: u32) -> Node {
        Node {
            i,
            ..Node::default()
        }
    }
}

/// GCBench on `Box` nodes with a given set of [`GcBenchParams`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativeGcBench {
    params: GcBenchParams,
}

impl NativeGcBench {
    /// GCBench with Boehm's parameters ([`GcBenchParams::standard`]).
    pub const fn standard() -> Self {
        NativeGcBench {
            params: GcBenchParams::standard(),
        }
    }

    /// GCBench with other parameters (checked when it runs).
    pub const fn with_params(params: GcBenchParams) -> Self {
        NativeGcBench { params }
    }
}

impl NativeWorkload for NativeGcBench {
    fn name(&self) -> &'static str {
        NAME
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        super::one_thread(params)?;
        // The Concord workload's own checks, so that the messages are the same.
        crate::Workload::validate(&crate::GcBench::with_params(self.params), params)
    }

    fn run(&self, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        self.validate(params)?;
        let p = self.params;
        let mut checksum = 0u64;
        for _ in 0..params.rounds {
            checksum = checksum.wrapping_add(run_one_copy(&p)?);
        }
        let per_copy = p.expected_checksum();
        let depths: Vec<String> = p.depths().map(|d| d.to_string()).collect();
        Ok(WorkloadResult {
            checksum,
            expected_checksum: Some(per_copy.wrapping_mul(params.rounds as u64)),
            details: vec![
                detail("rounds", params.rounds),
                detail("stretch tree depth", p.stretch_depth),
                detail("long-lived tree depth", p.long_lived_depth),
                detail("array size", p.array_size),
                detail("short-lived tree depths", depths.join(" ")),
                detail("checksum per copy and round", per_copy),
            ],
        })
    }
}

/// One copy of the benchmark; returns its checksum.
pub fn run_one_copy(p: &GcBenchParams) -> Result<u64, WorkloadError> {
    p.validate()?;
    let mut checksum = 0u64;

    // Stretch the memory space quickly.
    checksum += check(&make_tree(p.stretch_depth), p.stretch_depth).map_err(in_tree(
        NAME,
        "stretch tree",
        p.stretch_depth,
    ))?;

    // A long-lived tree, built top-down.
    let mut long_lived = Node::with_height(p.long_lived_depth);
    populate(p.long_lived_depth, &mut long_lived);

    // A long-lived array, half filled.
    let mut array = vec![0.0f64; p.array_size];
    for (i, x) in array[..p.array_size / 2].iter_mut().enumerate() {
        *x = 1.0 / i as f64;
    }

    for d in p.depths() {
        checksum += time_construction(p, d)?;
    }

    checksum += check(&long_lived, p.long_lived_depth).map_err(in_tree(
        NAME,
        "long-lived tree",
        p.long_lived_depth,
    ))?;
    check_array(&array, p.array_size)?;
    Ok(checksum)
}

/// `NumIters(depth)` trees built top-down, then as many bottom-up, each checked; returns the
/// sum of their checks.
fn time_construction(p: &GcBenchParams, depth: u32) -> Result<u64, WorkloadError> {
    let iters = p.num_iters(depth);
    let mut checksum = 0;
    for _ in 0..iters {
        let mut t = Box::new(Node::with_height(depth));
        populate(depth, &mut t);
        checksum += check(&t, depth).map_err(in_tree(NAME, "top-down tree", depth))?;
    }
    for _ in 0..iters {
        let t = make_tree(depth);
        checksum += check(&t, depth).map_err(in_tree(NAME, "bottom-up tree", depth))?;
    }
    Ok(checksum)
}

/// Builds the tree below `node` top-down (`Populate`): `depth` more levels; both children are
/// allocated before either subtree, as in `GCBench.java`.
pub fn populate(depth: u32, node: &mut Node) {
    if depth == 0 {
        return;
    }
    let d = depth - 1;
    let mut left = Box::new(Node::with_height(d));
    let mut right = Box::new(Node::with_height(d));
    populate(d, &mut left);
    populate(d, &mut right);
    node.left = Some(left);
    node.right = Some(right);
}

/// A tree of depth `depth` built bottom-up (`MakeTree`): the left subtree, the right subtree,
/// then their parent.
pub fn make_tree(depth: u32) -> Box<Node> {
    if depth == 0 {
        return Box::new(Node::default());
    }
    let left = make_tree(depth - 1);
    let right = make_tree(depth - 1);
    Box::new(Node {
        left: Some(left),
        right: Some(right),
        i: depth,
        j: 0,
    })
}

/// Structural check plus checksum of the tree at `node`, which must have height `height`:
/// every node of height `k > 0` has two children of height `k - 1`, every node of height 0 has
/// none, `j` is 0 everywhere. Returns the sum of `i + 1` over the nodes. The Concord
/// workload's check ([`check_from`]) on plain-Rust nodes.
pub fn check(node: &Node, height: u32) -> Result<u64, WorkloadError> {
    check_from(node, height)
}

impl TreeNode for &Node {
    #[inline]
    fn left(self) -> Option<Self> {
        self.left.as_deref()
    }

    #[inline]
    fn right(self) -> Option<Self> {
        self.right.as_deref()
    }
}

impl GcBenchNode for &Node {
    #[inline]
    fn i(self) -> u32 {
        self.i
    }

    #[inline]
    fn j(self) -> u32 {
        self.j
    }
}

/// Checks the long-lived array: `1.0 / i` in the first half (element 1000 as `GCBench.java`
/// checks it, and every other one), 0 in the second.
pub fn check_array(array: &[f64], size: usize) -> Result<(), WorkloadError> {
    if array.len() != size {
        return Err(WorkloadError::Corrupt(format!(
            "long-lived array: {} elements, expected {size}",
            array.len()
        )));
    }
    if array[1000] != 1.0 / 1000.0 {
        return Err(WorkloadError::Corrupt(format!(
            "long-lived array: element 1000 is {}, expected {}",
            array[1000],
            1.0 / 1000.0
        )));
    }
    for (i, &got) in array.iter().enumerate() {
        let expected = if i < size / 2 { 1.0 / i as f64 } else { 0.0 };
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
    use crate::gcbench::STANDARD_CHECKSUM_PER_COPY;
    use crate::scaffold::test_heap;
    use crate::{GcBench, Workload, MIB};

    #[test]
    fn small_checksum_equals_the_concord_workload() {
        let p = GcBenchParams::small();
        let native = NativeGcBench::with_params(p)
            .run(&WorkloadParams::default())
            .unwrap();
        assert_eq!(native.checksum, p.expected_checksum());
        assert_eq!(native.checksum_ok(), Some(true));
        let heap = test_heap(8 * MIB, false);
        let concord = GcBench::with_params(p)
            .run(&heap, &WorkloadParams::default())
            .unwrap();
        assert_eq!(native.checksum, concord.checksum);
    }

    #[test]
    fn standard_copy_gives_the_gcbench_java_checksum() {
        assert_eq!(
            run_one_copy(&GcBenchParams::standard()).unwrap(),
            STANDARD_CHECKSUM_PER_COPY
        );
    }

    #[test]
    fn rounds_add_up_and_a_size_is_refused() {
        let native = NativeGcBench::with_params(GcBenchParams::small());
        let r = native
            .run(&WorkloadParams {
                rounds: 2,
                ..Default::default()
            })
            .unwrap();
        assert_eq!(r.checksum, 2 * GcBenchParams::small().expected_checksum());
        let e = native
            .validate(&WorkloadParams {
                size: Some(3),
                ..Default::default()
            })
            .unwrap_err()
            .to_string();
        assert!(e.contains("gcbench has no size parameter (got 3)"), "{e}");
        let mut bad = GcBenchParams::small();
        bad.array_size = 100;
        let e = NativeGcBench::with_params(bad)
            .run(&WorkloadParams::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("array size 100"), "{e}");
    }

    #[test]
    fn populate_and_make_tree_build_the_same_tree() {
        let mut top_down = Node::with_height(5);
        populate(5, &mut top_down);
        let bottom_up = make_tree(5);
        assert_eq!(check(&top_down, 5).unwrap(), check(&bottom_up, 5).unwrap());
    }

    #[test]
    fn check_detects_structural_damage() {
        let damaged = |damage: fn(&mut Node), height| {
            let mut t = make_tree(5);
            damage(&mut t);
            check(&t, height).unwrap_err().to_string()
        };
        let e = damaged(|t| t.left.as_mut().unwrap().right = None, 5);
        assert!(e.contains("height 4 lacks its right child"), "{e}");
        let e = damaged(
            |t| t.right.as_mut().unwrap().left.as_mut().unwrap().i = 9,
            5,
        );
        assert!(e.contains("height 3 holds i = 9"), "{e}");
        let e = damaged(|t| t.j = 1, 5);
        assert!(e.contains("j = 1"), "{e}");
        let leaf = Node {
            left: Some(make_tree(1)),
            ..Node::default()
        };
        let e = check(&leaf, 0).unwrap_err().to_string();
        assert!(e.contains("leaf (height 0) has a child"), "{e}");
    }

    #[test]
    fn check_array_detects_damage() {
        let mut a = vec![0.0f64; 4000];
        for (i, x) in a[..2000].iter_mut().enumerate() {
            *x = 1.0 / i as f64;
        }
        check_array(&a, 4000).unwrap();
        a[1500] = 2.0;
        let e = check_array(&a, 4000).unwrap_err().to_string();
        assert!(e.contains("element 1500 is 2"), "{e}");
        a[1000] = 0.0;
        let e = check_array(&a, 4000).unwrap_err().to_string();
        assert!(e.contains("element 1000 is 0, expected 0.001"), "{e}");
        let e = check_array(&a[..10], 4000).unwrap_err().to_string();
        assert!(e.contains("10 elements, expected 4000"), "{e}");
    }
}
