//! `binary-trees` in plain Rust: the Benchmarks Game program of [`crate::binary_trees`] (the
//! same depths, the same trees built bottom-up in the same order, the same checks and
//! checksum) with `Box` nodes from the global allocator, freed by `drop` when a tree goes out
//! of scope.
//!
//! A node is two `Option<Box<Node>>` (16 bytes; `malloc` gives each a 32-byte chunk). Dropping
//! a tree recurses as deep as the tree, at most 31 levels ([`crate::binary_trees::SIZE`]'s
//! largest depth plus one for the stretch tree).

use crate::binary_trees::{count_nodes, expected_checksum, TreeNode, MIN_DEPTH, NAME, SIZE};
use crate::scaffold::in_tree;
use crate::{WorkloadError, WorkloadParams, WorkloadResult};

use super::NativeWorkload;

/// A tree node: both children or none.
#[derive(Debug)]
pub struct Node {
    /// The left subtree.
    pub left: Option<Box<Node>>,
    /// The right subtree.
    pub right: Option<Box<Node>>,
}

/// binary-trees on `Box` nodes. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeBinaryTrees;

impl NativeWorkload for NativeBinaryTrees {
    fn name(&self) -> &'static str {
        NAME
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        super::one_thread(params)?;
        SIZE.of(params).map(drop)
    }

    fn run(&self, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        self.validate(params)?;
        let n = SIZE.of(params)?;
        let mut checksum = 0u64;
        let mut details = Vec::new();
        for _ in 0..params.rounds {
            let (sum, lines) = run_round(n)?;
            checksum += sum;
            details = lines;
        }
        Ok(WorkloadResult {
            checksum,
            expected_checksum: Some(expected_checksum(n) * params.rounds as u64),
            details,
        })
    }
}

/// One round at depth `n`: its checksum (the stretch check, every depth's total and the
/// long-lived check) and the program's output lines.
pub fn run_round(n: u32) -> Result<(u64, Vec<(String, String)>), WorkloadError> {
    let max_depth = n.max(MIN_DEPTH + 2);
    let stretch_depth = max_depth + 1;
    let mut lines = Vec::new();

    let stretch = check(&bottom_up_tree(stretch_depth), stretch_depth).map_err(in_tree(
        NAME,
        "stretch tree",
        stretch_depth,
    ))?;
    lines.push((
        format!("stretch tree of depth {stretch_depth}"),
        format!("check: {stretch}"),
    ));
    let mut checksum = stretch;

    let long_lived = bottom_up_tree(max_depth);
    for depth in (MIN_DEPTH..=max_depth).step_by(2) {
        let iterations = 1u64 << (max_depth - depth + MIN_DEPTH);
        let mut sum = 0;
        for _ in 0..iterations {
            sum += check(&bottom_up_tree(depth), depth).map_err(in_tree(
                NAME,
                "short-lived tree",
                depth,
            ))?;
        }
        lines.push((
            format!("{iterations} trees of depth {depth}"),
            format!("check: {sum}"),
        ));
        checksum += sum;
    }

    let long =
        check(&long_lived, max_depth).map_err(in_tree(NAME, "long-lived tree", max_depth))?;
    lines.push((
        format!("long lived tree of depth {max_depth}"),
        format!("check: {long}"),
    ));
    Ok((checksum + long, lines))
}

/// A complete tree of depth `depth`, built bottom-up: the left subtree, the right subtree,
/// then their parent.
pub fn bottom_up_tree(depth: u32) -> Box<Node> {
    if depth == 0 {
        return Box::new(Node {
            left: None,
            right: None,
        });
    }
    let left = bottom_up_tree(depth - 1);
    let right = bottom_up_tree(depth - 1);
    Box::new(Node {
        left: Some(left),
        right: Some(right),
    })
}

/// Counts the nodes of the tree at `node` (`1 + check(left) + check(right)`). A node must have
/// both children or none, and the tree may be at most `depth` deep: the Concord workload's
/// check ([`count_nodes`]) on plain-Rust nodes.
pub fn check(node: &Node, depth: u32) -> Result<u64, WorkloadError> {
    count_nodes(node, depth)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scaffold::test_heap;
    use crate::{Workload, MIB};

    fn params(size: Option<u32>, rounds: usize) -> WorkloadParams {
        WorkloadParams {
            size,
            rounds,
            ..Default::default()
        }
    }

    #[test]
    fn checksum_and_lines_equal_the_concord_workload() {
        for n in [4, 6, 9, 10] {
            let native = NativeBinaryTrees.run(&params(Some(n), 1)).unwrap();
            assert_eq!(native.checksum, expected_checksum(n), "depth {n}");
            assert_eq!(native.checksum_ok(), Some(true));
            let heap = test_heap(64 * MIB, false);
            let concord = crate::BinaryTrees.run(&heap, &params(Some(n), 1)).unwrap();
            assert_eq!(native.checksum, concord.checksum, "depth {n}");
            assert_eq!(native.details, concord.details, "depth {n}");
        }
    }

    #[test]
    fn rounds_add_up() {
        let r = NativeBinaryTrees.run(&params(Some(6), 3)).unwrap();
        assert_eq!(r.checksum, 3 * expected_checksum(6));
        assert_eq!(r.checksum_ok(), Some(true));
    }

    #[test]
    fn bad_sizes_have_the_concord_workloads_message() {
        for bad in [3, 31] {
            let p = params(Some(bad), 1);
            let native = NativeBinaryTrees.validate(&p).unwrap_err().to_string();
            let concord = crate::BinaryTrees.validate(&p).unwrap_err().to_string();
            assert_eq!(native, concord);
            assert!(native.contains("(allowed: 4..=30)"), "{native}");
            assert!(NativeBinaryTrees.run(&p).is_err());
        }
    }

    #[test]
    fn check_detects_structural_damage() {
        let mut t = bottom_up_tree(6);
        assert_eq!(check(&t, 6).unwrap(), 127);
        let e = check(&t, 5).unwrap_err().to_string();
        assert!(e.contains("bottom level has children"), "{e}");
        let l = t.left.as_mut().unwrap();
        let ll = l.left.as_mut().unwrap();
        ll.left = None;
        let e = check(&t, 6).unwrap_err().to_string();
        assert!(e.contains("right child but no left child"), "{e}");
        let ll = t.left.as_mut().unwrap().left.as_mut().unwrap();
        ll.left = Some(bottom_up_tree(3));
        ll.right = None;
        let e = check(&t, 6).unwrap_err().to_string();
        assert!(e.contains("left child but no right child"), "{e}");
    }
}
