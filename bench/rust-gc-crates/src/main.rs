//! binary-trees (the program of `concord_workloads::binary_trees`, the same trees built
//! bottom-up in the same order and the same checksum) on two garbage-collected pointer crates
//! of the Rust ecosystem, `gc` 0.5 (rust-gc: thread-local, reference-counted roots, mark and
//! sweep) and `gc-arena` 0.7 (incremental mark and sweep inside `Arena::mutate`), next to the
//! plain `Box` version of `concord_workloads::native`. Not part of the workspace: it pulls in
//! crates Concord itself does not use.
//!
//! Usage: `cargo run --release -- [DEPTH] [box|gc|gc-arena|all]` (default 18 all). Prints one
//! line per implementation: its wall time and checksum; exits 1 if a checksum is wrong, 2 on
//! bad arguments.

use std::process::ExitCode;
use std::time::Instant;

use concord_workloads::binary_trees::{expected_checksum, MIN_DEPTH, SIZE};
use concord_workloads::native::binary_trees as boxed;

/// binary-trees on the `gc` crate: `Gc` pointers on the stack are roots, inside a `Gc` not.
// gc_derive 0.5 puts its impls inside a const block, which newer compilers warn about.
#[allow(non_local_definitions)]
mod rust_gc {
    use gc::{Finalize, Gc, Trace};

    #[derive(Trace, Finalize)]
    pub struct Node {
        left: Option<Gc<Node>>,
        right: Option<Gc<Node>>,
    }

    pub fn bottom_up_tree(depth: u32) -> Gc<Node> {
        if depth == 0 {
            return Gc::new(Node {
                left: None,
                right: None,
            });
        }
        let left = bottom_up_tree(depth - 1);
        let right = bottom_up_tree(depth - 1);
        Gc::new(Node {
            left: Some(left),
            right: Some(right),
        })
    }

    /// Node count; `None` if a node has one child only.
    pub fn check(node: &Node) -> Option<u64> {
        match (&node.left, &node.right) {
            (None, None) => Some(1),
            (Some(l), Some(r)) => Some(1 + check(l)? + check(r)?),
            _ => None,
        }
    }

    pub fn run(max_depth: u32) -> Option<u64> {
        super::program(
            max_depth,
            |d| check(&bottom_up_tree(d)),
            || {
                let long_lived = bottom_up_tree(max_depth);
                move || check(&long_lived)
            },
        )
    }
}

/// binary-trees on `gc-arena`: the long-lived tree is the arena's root; every other tree is
/// built and checked in one `mutate` call, and the collector is paid its debt after each.
mod arena {
    use gc_arena::{Arena, Collect, Gc, Mutation, Rootable};

    #[derive(Collect)]
    #[collect(no_drop)]
    pub struct Node<'gc> {
        left: Option<Gc<'gc, Node<'gc>>>,
        right: Option<Gc<'gc, Node<'gc>>>,
    }

    type Root = Rootable![Option<Gc<'_, Node<'_>>>];

    pub fn bottom_up_tree<'gc>(mc: &Mutation<'gc>, depth: u32) -> Gc<'gc, Node<'gc>> {
        if depth == 0 {
            return Gc::new(
                mc,
                Node {
                    left: None,
                    right: None,
                },
            );
        }
        let left = bottom_up_tree(mc, depth - 1);
        let right = bottom_up_tree(mc, depth - 1);
        Gc::new(
            mc,
            Node {
                left: Some(left),
                right: Some(right),
            },
        )
    }

    /// Node count; `None` if a node has one child only.
    pub fn check(node: &Node<'_>) -> Option<u64> {
        match (node.left, node.right) {
            (None, None) => Some(1),
            (Some(l), Some(r)) => Some(1 + check(&l)? + check(&r)?),
            _ => None,
        }
    }

    pub fn run(max_depth: u32) -> Option<u64> {
        let arena = std::cell::RefCell::new(Arena::<Root>::new(|_| None));
        let tree = |d: u32| {
            let mut a = arena.borrow_mut();
            let sum = a.mutate(|mc, _| check(&bottom_up_tree(mc, d)));
            a.collect_debt();
            sum
        };
        super::program(max_depth, tree, || {
            arena
                .borrow_mut()
                .mutate_root(|mc, root| *root = Some(bottom_up_tree(mc, max_depth)));
            || {
                let a = arena.borrow();
                a.mutate(|_, root| root.as_ref().and_then(|t| check(t)))
            }
        })
    }
}

/// The binary-trees program on any tree implementation: `tree(d)` builds and checks a tree of
/// depth `d`; `long_lived()` builds the long-lived tree and returns its later check. Returns
/// the checksum, `None` if a check failed.
fn program<L: FnOnce() -> Option<u64>>(
    n: u32,
    mut tree: impl FnMut(u32) -> Option<u64>,
    long_lived: impl FnOnce() -> L,
) -> Option<u64> {
    let max_depth = n.max(MIN_DEPTH + 2);
    let mut sum = tree(max_depth + 1)?;
    let check_long_lived = long_lived();
    for d in (MIN_DEPTH..=max_depth).step_by(2) {
        for _ in 0..1u64 << (max_depth - d + MIN_DEPTH) {
            sum += tree(d)?;
        }
    }
    Some(sum + check_long_lived()?)
}

/// One binary-trees implementation: the checksum at a depth, `None` if a check failed.
type Implementation = fn(u32) -> Option<u64>;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let depth = match args.first().map(|a| a.parse::<u32>()) {
        None => SIZE.default(),
        Some(Ok(d)) if SIZE.range().contains(&d) => d,
        Some(_) => {
            eprintln!(
                "rust-gc-crates: DEPTH '{}' is not a depth (allowed: {}..={})",
                args[0],
                SIZE.range().start(),
                SIZE.range().end()
            );
            return ExitCode::from(2);
        }
    };
    let which = args.get(1).map_or("all", String::as_str);
    let all: [(&str, Implementation); 3] = [
        ("box", |d| boxed::run_round(d).ok().map(|(sum, _)| sum)),
        ("gc", rust_gc::run),
        ("gc-arena", arena::run),
    ];
    if which != "all" && !all.iter().any(|(name, _)| *name == which) {
        eprintln!(
            "rust-gc-crates: unknown implementation '{which}' (allowed: box, gc, gc-arena, all)"
        );
        return ExitCode::from(2);
    }
    let want = expected_checksum(depth);
    let mut status = ExitCode::SUCCESS;
    for (name, run) in all {
        if which != "all" && which != name {
            continue;
        }
        let start = Instant::now();
        let sum = run(depth);
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let verdict = if sum == Some(want) {
            "ok"
        } else {
            status = ExitCode::FAILURE;
            "WRONG"
        };
        println!("binary-trees {depth} {name:<9} wall_ms={ms:.1} checksum={sum:?} expected={want} {verdict}");
    }
    status
}
