//! `concord vs-native`: a workload on Concord (one mutator) and its plain-Rust versions
//! alternating in one invocation, every checksum checked, with medians and the ratio of
//! Concord's wall time to each plain-Rust version (issue 13: the mutator's speed against plain
//! Rust).
//!
//! The plain-Rust versions ("baselines"), both on the system allocator (Rust's default global
//! allocator, `System`: glibc `malloc`/`free`; this binary sets no `#[global_allocator]`):
//!
//! - `rust-box-per-node` ([`concord_workloads::native`]): one `Box` per node, leaves included
//!   (binary-trees and gcbench);
//! - `rust-leaves-inline` ([`leaves_inline`], binary-trees only): `enum Node { Leaf,
//!   Inner(Box<(Node, Node)>) }`, the form a Rust programmer writes: a leaf is a value inside
//!   its parent's allocation, so a tree of depth d costs 2^d - 1 allocations instead of
//!   2^(d+1) - 1.
//!
//! The plain-Rust side runs by default in a fresh child process (this binary again, with the
//! hidden `--native-child` and `--native-baseline`), started before each of its turns: once a
//! process has started a second thread, as Concord's GC threads are, glibc's `malloc` and
//! `free` take their locked, multi-threaded path for good, which made binary-trees 18 about 1.8
//! times slower than in a program that never started a thread. `--native-in-process` runs it in
//! this process instead, to measure exactly that. The child measures its own wall time (the
//! program only, not its start).
//!
//! Each repeat runs every side once, in the order Concord, then the baselines, on even repeats
//! and the reverse on odd ones, so that no side always runs first or last.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Result};
use clap::{Args, ValueEnum};
use concord::config::{format_size, ConfigBuilder};
use concord::GcConfig;
use concord_workloads::native::{self, NativeWorkload};
use concord_workloads::{binary_trees, WorkloadParams, WorkloadResult};
use serde_json::json;

use crate::console::outln;
use crate::experiment::runner::wrong_result;
use crate::experiment::{default_heap, find_workload, median, ratio, run_on_heap};
use crate::flags::{count_in, workload_size, Size};
use crate::side_by_side::Run;
use crate::RunFailed;

/// The allocator both plain-Rust versions use, as printed and reported.
pub const ALLOCATOR: &str = "system allocator (Rust's default System: glibc malloc/free)";

/// A plain-Rust version of a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Baseline {
    /// One `Box` per node, leaves included ([`concord_workloads::native`]).
    RustBoxPerNode,
    /// binary-trees only: one `Box<(Node, Node)>` per inner node, leaves stored inline
    /// ([`leaves_inline`]).
    RustLeavesInline,
}

impl Baseline {
    /// The name in the output, the JSON and `--native-baseline`.
    pub fn name(self) -> &'static str {
        match self {
            Baseline::RustBoxPerNode => "rust-box-per-node",
            Baseline::RustLeavesInline => "rust-leaves-inline",
        }
    }

    /// What the version allocates, in a few words.
    fn description(self) -> &'static str {
        match self {
            Baseline::RustBoxPerNode => "one Box per node, leaves included",
            Baseline::RustLeavesInline => {
                "enum Node { Leaf, Inner(Box<(Node, Node)>) }: one allocation per inner node, leaves inline"
            }
        }
    }

    /// The baselines `workload` has, in the order they run.
    fn for_workload(workload: &str) -> &'static [Baseline] {
        match workload {
            binary_trees::NAME => &[Baseline::RustBoxPerNode, Baseline::RustLeavesInline],
            _ => &[Baseline::RustBoxPerNode],
        }
    }
}

/// Flags of `concord vs-native`.
#[derive(Args, Debug, Clone)]
pub struct VsNativeArgs {
    /// Workload with a plain-Rust version: binary-trees or gcbench.
    #[arg(default_value = binary_trees::NAME)]
    pub workload: String,
    /// binary-trees: tree depth, 4..=30 (default 18); gcbench has no size.
    #[arg(value_parser = workload_size, allow_negative_numbers = true)]
    pub size: Option<u32>,
    /// Concord's heap size (default: the workload's default heap, 96m for binary-trees 18,
    /// 64m for gcbench).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub heap: Option<Size>,
    /// Concord's GC worker threads.
    #[arg(
        long = "gc-threads",
        default_value_t = 2,
        value_parser = count_in(1, 256),
        allow_negative_numbers = true
    )]
    pub gc_threads: u32,
    /// Concord's policy preset: vanilla, modern, suo18, naps or optimized.
    #[arg(long, default_value = "optimized")]
    pub preset: String,
    /// How many rounds of every side (Concord and each plain-Rust version) to run.
    #[arg(
        long,
        default_value_t = 5,
        value_parser = count_in(1, 1000),
        allow_negative_numbers = true
    )]
    pub repeat: u32,
    /// Run the plain-Rust side in this process, where Concord's GC threads have put glibc
    /// malloc on its multi-threaded path, rather than in a fresh single-threaded child.
    #[arg(long = "native-in-process")]
    pub native_in_process: bool,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run a plain-Rust version once in this process and print its wall time and checksum
    /// as JSON (what the parent starts for each plain-Rust turn).
    #[arg(long = "native-child", hide = true)]
    pub native_child: bool,
    /// With --native-child: which plain-Rust version.
    #[arg(
        long = "native-baseline",
        hide = true,
        value_enum,
        default_value = "rust-box-per-node"
    )]
    pub native_baseline: Baseline,
}

/// What a `--native-child` process prints: one line of JSON.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct ChildReport {
    wall_ms: f64,
    checksum: u64,
    expected_checksum: Option<u64>,
}

/// The Concord side's configuration, checked before anything runs or is printed: its keys,
/// and that this machine can hold its heap (a heap beyond memory is refused here, not after
/// the table's header).
fn concord_config(args: &VsNativeArgs, default_heap: String) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    b.set_cli("preset", &args.preset)?;
    match &args.heap {
        Some(heap) => b.set_cli("heap", &heap.to_string())?,
        None => b.set_cli("heap", &default_heap)?,
    }
    b.set_cli("gc-threads", &args.gc_threads.to_string())?;
    let config = b.build()?;
    concord::Heap::check_memory(&config)?;
    Ok(config)
}

/// The plain-Rust version of `name`, or an error naming the workloads that have one.
fn find_native(name: &str) -> Result<Box<dyn NativeWorkload>> {
    native::lookup(name).ok_or_else(|| {
        anyhow!(
            "unknown workload '{name}' for vs-native (allowed: {})",
            native::names().join(", ")
        )
    })
}

/// A plain-Rust version once on this thread; a failure or a wrong checksum is a failed run.
fn run_native(
    workload: &dyn NativeWorkload,
    baseline: Baseline,
    params: &WorkloadParams,
) -> Result<Run> {
    let start = Instant::now();
    let result = run_baseline(workload, baseline, params)?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    checksum_checked(baseline.name(), workload.name(), &result)?;
    Ok(native_run(wall_ms, result.checksum))
}

/// `baseline` of `workload` once, untimed.
fn run_baseline(
    workload: &dyn NativeWorkload,
    baseline: Baseline,
    params: &WorkloadParams,
) -> Result<WorkloadResult> {
    let result = match baseline {
        Baseline::RustBoxPerNode => workload.run(params),
        Baseline::RustLeavesInline if workload.name() == binary_trees::NAME => {
            leaves_inline::run(params)
        }
        Baseline::RustLeavesInline => {
            return Err(anyhow!(
                "{} has no {} version (only binary-trees has)",
                workload.name(),
                baseline.name()
            ))
        }
    };
    result.map_err(|e| {
        RunFailed::wrap(anyhow!(
            "{} {} failed: {e}",
            baseline.name(),
            workload.name()
        ))
    })
}

/// A plain-Rust run's figures: no pauses, no collections.
fn native_run(wall_ms: f64, checksum: u64) -> Run {
    Run {
        wall_ms,
        pause_total_ms: 0.0,
        pause_max_ms: 0.0,
        young: 0,
        full: 0,
        checksum,
    }
}

/// A plain-Rust version once in a fresh child process (this binary with `--native-child`);
/// a child that fails, prints no report or reports a wrong checksum is a failed run.
fn run_native_child(args: &VsNativeArgs, baseline: Baseline) -> Result<Run> {
    let exe = std::env::current_exe()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot find this program to start it: {e}")))?;
    let mut command = std::process::Command::new(&exe);
    command.args(["vs-native", &args.workload]);
    if let Some(n) = args.size {
        command.arg(n.to_string());
    }
    let output = command
        .args(["--native-child", "--native-baseline", baseline.name()])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot start {}: {e}", exe.display())))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        return Err(RunFailed::wrap(anyhow!(
            "the {} child process failed ({}): {}",
            baseline.name(),
            output.status,
            stderr.trim()
        )));
    }
    let report: ChildReport = serde_json::from_slice(&output.stdout).map_err(|e| {
        RunFailed::wrap(anyhow!(
            "the {} child process printed no report ({e}): {}",
            baseline.name(),
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    })?;
    let result = WorkloadResult {
        checksum: report.checksum,
        expected_checksum: report.expected_checksum,
        details: Vec::new(),
    };
    checksum_checked(baseline.name(), &args.workload, &result)?;
    Ok(native_run(report.wall_ms, report.checksum))
}

/// `--native-child`: a plain-Rust version once, its report on stdout.
fn native_child(
    native: &dyn NativeWorkload,
    baseline: Baseline,
    params: &WorkloadParams,
) -> Result<ExitCode> {
    let start = Instant::now();
    let result = run_baseline(native, baseline, params)?;
    let report = ChildReport {
        wall_ms: start.elapsed().as_secs_f64() * 1e3,
        checksum: result.checksum,
        expected_checksum: result.expected_checksum,
    };
    outln!("{}", serde_json::to_string(&report)?)?;
    Ok(ExitCode::SUCCESS)
}

/// An error unless `result` carries its expected checksum and matches it.
fn checksum_checked(who: &str, name: &str, result: &WorkloadResult) -> Result<()> {
    match result.checksum_ok() {
        Some(true) => Ok(()),
        _ => Err(RunFailed::wrap(anyhow!(
            "{who} {name}: checksum {} (expected {:?})",
            result.checksum,
            result.expected_checksum
        ))),
    }
}

/// Which side runs when in repeat `i`: Concord (`None`) then the baselines on even repeats,
/// the reverse on odd ones.
fn turn_order(i: u32, baselines: &[Baseline]) -> Vec<Option<Baseline>> {
    let mut order: Vec<Option<Baseline>> = std::iter::once(None)
        .chain(baselines.iter().copied().map(Some))
        .collect();
    if i % 2 == 1 {
        order.reverse();
    }
    order
}

/// The per-run table's header line (the side's name is wider than vs-hotspot's).
fn print_header() -> Result<()> {
    outln!(
        "{:>4} {:<18} {:>10} {:>10} {:>10} {:>7}",
        "run",
        "who",
        "wall ms",
        "GC ms",
        "max ms",
        "pauses"
    )?;
    Ok(())
}

/// One run's line of the per-run table.
fn print_row(repeat: u32, who: &str, r: &Run, pauses: bool) -> Result<()> {
    if pauses {
        outln!(
            "{:>4} {:<18} {:>10.1} {:>10.1} {:>10.2} {:>4}+{:<2}",
            repeat,
            who,
            r.wall_ms,
            r.pause_total_ms,
            r.pause_max_ms,
            r.young,
            r.full
        )?;
    } else {
        outln!(
            "{:>4} {:<18} {:>10.1} {:>10} {:>10} {:>7}",
            repeat,
            who,
            r.wall_ms,
            "-",
            "-",
            "-"
        )?;
    }
    Ok(())
}

/// Run `concord vs-native`.
pub fn run(args: VsNativeArgs) -> Result<ExitCode> {
    let native = find_native(&args.workload)?;
    let workload = find_workload(&args.workload)?;
    let params = WorkloadParams {
        mutators: 1,
        rounds: 1,
        size: args.size,
    };
    for check in [workload.validate(&params), native.validate(&params)] {
        check.map_err(|e| anyhow!("workload {}: {e}", workload.name()))?;
    }
    let baselines = Baseline::for_workload(workload.name());
    if !baselines.contains(&args.native_baseline) {
        return Err(anyhow!(
            "--native-baseline: {} has no {} version",
            workload.name(),
            args.native_baseline.name()
        ));
    }
    if args.native_child {
        return native_child(native.as_ref(), args.native_baseline, &params);
    }
    let config = concord_config(&args, default_heap(workload.as_ref(), &params))?;
    let native_process = if args.native_in_process {
        "this process"
    } else {
        "a fresh child process per run"
    };
    let size = match workload.name() {
        binary_trees::NAME => Some(args.size.unwrap_or(binary_trees::SIZE.default())),
        _ => None,
    };
    let title = match size {
        Some(n) => format!("{} {n}", workload.name()),
        None => workload.name().to_string(),
    };
    if !args.json {
        outln!(
            "{title}, one mutator: Concord (heap {}, {} GC threads, {}) vs plain Rust on the {ALLOCATOR}, in {native_process}; {} repeats, the sides alternating",
            format_size(config.heap_size),
            config.gc_threads,
            config.preset,
            args.repeat
        )?;
        for b in baselines {
            outln!("  {:<18}  {}", b.name(), b.description())?;
        }
        print_header()?;
    }
    let mut concord_runs = Vec::new();
    let mut native_runs: Vec<Vec<Run>> = vec![Vec::new(); baselines.len()];
    for i in 0..args.repeat {
        for side in turn_order(i, baselines) {
            let Some(baseline) = side else {
                let run = run_on_heap(&workload, &params, &config, || Ok(()), false)?;
                let s = &run.summary;
                if let Some(problem) = wrong_result(s) {
                    return Err(RunFailed::wrap(anyhow!(
                        "Concord {}: {problem}",
                        workload.name()
                    )));
                }
                let r = Run {
                    wall_ms: s.wall_ms,
                    pause_total_ms: s.pause_total_ms,
                    pause_max_ms: s.pause_max_ms,
                    young: s.young_count,
                    full: s.full_count,
                    checksum: s.checksum,
                };
                if !args.json {
                    print_row(i + 1, "Concord", &r, true)?;
                }
                concord_runs.push(r);
                continue;
            };
            let r = if args.native_in_process {
                run_native(native.as_ref(), baseline, &params)?
            } else {
                run_native_child(&args, baseline)?
            };
            if !args.json {
                print_row(i + 1, baseline.name(), &r, false)?;
            }
            let k = baselines.iter().position(|b| *b == baseline).unwrap_or(0);
            native_runs[k].push(r);
        }
    }
    let med = |v: &[Run], f: fn(&Run) -> f64| median(v.iter().map(f).collect());
    let wall_c = med(&concord_runs, |r| r.wall_ms);
    let mutator_c = med(&concord_runs, Run::mutator_ms);
    let walls: Vec<f64> = native_runs.iter().map(|v| med(v, |r| r.wall_ms)).collect();
    let wall_n = walls[0];
    let pause_total = med(&concord_runs, |r| r.pause_total_ms);
    let pause_max = med(&concord_runs, |r| r.pause_max_ms);
    let collections = med(&concord_runs, |r| (r.young + r.full) as f64);
    if args.json {
        let per_baseline: Vec<serde_json::Value> = baselines
            .iter()
            .zip(&native_runs)
            .zip(&walls)
            .map(|((b, runs), &w)| {
                json!({
                    "name": b.name(),
                    "description": b.description(),
                    "runs": runs,
                    "wall_ms": w,
                    "ratio": ratio(wall_c, w),
                    "ratio_outside_pauses": ratio(mutator_c, w),
                })
            })
            .collect();
        let out = json!({
            "workload": workload.name(),
            "size": size,
            "heap_size": config.heap_size,
            "gc_threads": config.gc_threads,
            "preset": config.preset.to_string(),
            "repeat": args.repeat,
            "native_process": if args.native_in_process { "this" } else { "child" },
            "allocator": ALLOCATOR,
            "checksum": concord_runs.first().map(|r| r.checksum),
            "concord": concord_runs,
            "native_baseline": Baseline::RustBoxPerNode.name(),
            "native": native_runs[0],
            "baselines": per_baseline,
            "medians": {
                "wall_ms": {"concord": wall_c, "native": wall_n, "ratio": ratio(wall_c, wall_n)},
                "wall_outside_pauses_ms": {
                    "concord": mutator_c,
                    "native": wall_n,
                    "ratio": ratio(mutator_c, wall_n)
                },
                "pause_total_ms": pause_total,
                "pause_max_ms": pause_max,
                "collections": collections,
            },
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        outln!()?;
        outln!(
            "median wall ms: Concord {wall_c:.1} ({mutator_c:.1} outside GC pauses; pause total {pause_total:.1}, max {pause_max:.2}, {collections:.0} collections)"
        )?;
        outln!(
            "{:<20} {:>10} {:>18} {:>24} {:>12}",
            "baseline",
            "wall ms",
            "Concord/baseline",
            "outside pauses/baseline",
            "allocations"
        )?;
        for (b, &w) in baselines.iter().zip(&walls) {
            outln!(
                "{:<20} {:>10.1} {:>17.2}x {:>23.2}x {:>12}",
                b.name(),
                w,
                ratio(wall_c, w),
                ratio(mutator_c, w),
                allocations(*b, workload.name(), size)
            )?;
        }
        outln!(
            "checksums equal the expected {} in every run",
            concord_runs.first().map_or(0, |r| r.checksum)
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// How many allocations one round of `baseline` makes, for binary-trees (`-` otherwise):
/// every node, or only the inner ones.
fn allocations(baseline: Baseline, workload: &str, size: Option<u32>) -> String {
    let (Some(n), binary_trees::NAME) = (size, workload) else {
        return "-".into();
    };
    let nodes = binary_trees::expected_checksum(n);
    match baseline {
        Baseline::RustBoxPerNode => nodes.to_string(),
        // A tree of d levels below its root has 2^(d+1) - 1 nodes, 2^d of them leaves: its
        // inner nodes are (nodes - 1) / 2, and every tree the round builds is a whole tree.
        Baseline::RustLeavesInline => leaves_inline::allocations(n).to_string(),
    }
}

/// binary-trees in plain Rust as a Rust programmer writes it: `enum Node { Leaf, Inner(Box<(Node,
/// Node)>) }`. A leaf is a value stored in its parent's allocation, so only inner nodes allocate
/// (one 16-byte `(Node, Node)` each; `Node` is 8 bytes, the `Box` pointer with `Leaf` in its
/// null niche). The same depths, the same trees built bottom-up in the same order, the same
/// checks (a node's count is `1 + left + right`, a tree no deeper than it should be) and the
/// same checksum as [`concord_workloads::binary_trees`].
pub mod leaves_inline {
    use concord_workloads::binary_trees::{expected_checksum, MIN_DEPTH, SIZE};
    use concord_workloads::{WorkloadError, WorkloadParams, WorkloadResult};

    /// A tree node: a leaf (no allocation) or an inner node owning both children.
    #[derive(Debug)]
    pub enum Node {
        /// A node without children.
        Leaf,
        /// A node with both children, in one allocation.
        Inner(Box<(Node, Node)>),
    }

    /// A complete tree of depth `depth`, built bottom-up: the left subtree, the right subtree,
    /// then their parent.
    pub fn bottom_up_tree(depth: u32) -> Node {
        if depth == 0 {
            return Node::Leaf;
        }
        let left = bottom_up_tree(depth - 1);
        let right = bottom_up_tree(depth - 1);
        Node::Inner(Box::new((left, right)))
    }

    /// Counts the nodes of the tree at `node`; an inner node below `depth` levels is an error
    /// (the Concord workload's depth check; both-or-neither children holds by construction).
    pub fn check(node: &Node, depth: u32) -> Result<u64, WorkloadError> {
        match node {
            Node::Leaf => Ok(1),
            Node::Inner(children) => {
                if depth == 0 {
                    return Err(WorkloadError::Corrupt(
                        "a node at the bottom level has children".to_string(),
                    ));
                }
                Ok(1 + check(&children.0, depth - 1)? + check(&children.1, depth - 1)?)
            }
        }
    }

    /// The checksum of one round at depth `n` (the stretch check, every depth's total, the
    /// long-lived check).
    pub fn run_round(n: u32) -> Result<u64, WorkloadError> {
        let max_depth = n.max(MIN_DEPTH + 2);
        let stretch_depth = max_depth + 1;
        let mut checksum = check(&bottom_up_tree(stretch_depth), stretch_depth)?;
        let long_lived = bottom_up_tree(max_depth);
        for depth in (MIN_DEPTH..=max_depth).step_by(2) {
            let iterations = 1u64 << (max_depth - depth + MIN_DEPTH);
            for _ in 0..iterations {
                checksum += check(&bottom_up_tree(depth), depth)?;
            }
        }
        Ok(checksum + check(&long_lived, max_depth)?)
    }

    /// `params.rounds` rounds at the depth `params` asks for.
    pub fn run(params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        let n = SIZE.of(params)?;
        let mut checksum = 0;
        for _ in 0..params.rounds {
            checksum += run_round(n)?;
        }
        Ok(WorkloadResult {
            checksum,
            expected_checksum: Some(expected_checksum(n) * params.rounds as u64),
            details: Vec::new(),
        })
    }

    /// Allocations of one round at depth `n`: the inner nodes of every tree it builds. A
    /// complete tree's inner nodes are (nodes - 1) / 2, and the checksum is the sum of the
    /// trees' node counts, over `trees` trees.
    pub fn allocations(n: u32) -> u64 {
        let max_depth = n.max(MIN_DEPTH + 2);
        let trees: u64 = 2
            + (MIN_DEPTH..=max_depth)
                .step_by(2)
                .map(|d| 1u64 << (max_depth - d + MIN_DEPTH))
                .sum::<u64>();
        (expected_checksum(n) - trees) / 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(size: Option<u32>, rounds: usize) -> WorkloadParams {
        WorkloadParams {
            mutators: 1,
            rounds,
            size,
        }
    }

    #[test]
    fn leaves_inline_computes_the_box_per_node_checksum() {
        for n in [4, 6, 9, 12] {
            let inline = leaves_inline::run(&params(Some(n), 1)).unwrap();
            let boxed = native::lookup(binary_trees::NAME)
                .unwrap()
                .run(&params(Some(n), 1))
                .unwrap();
            assert_eq!(inline.checksum, boxed.checksum, "depth {n}");
            assert_eq!(inline.checksum_ok(), Some(true), "depth {n}");
        }
        let two = leaves_inline::run(&params(Some(6), 2)).unwrap();
        assert_eq!(two.checksum, 2 * binary_trees::expected_checksum(6));
        assert_eq!(two.checksum_ok(), Some(true));
    }

    #[test]
    fn a_leaf_costs_no_allocation() {
        use leaves_inline::Node;
        assert_eq!(std::mem::size_of::<Node>(), 8);
        assert_eq!(std::mem::size_of::<(Node, Node)>(), 16);
        // Depth 6: stretch 7, long-lived 6, 64 trees of depth 4 and 16 of depth 6.
        let inner = |d: u32| (1u64 << d) - 1;
        assert_eq!(
            leaves_inline::allocations(6),
            inner(7) + inner(6) + 64 * inner(4) + 16 * inner(6)
        );
        assert_eq!(
            allocations(Baseline::RustBoxPerNode, binary_trees::NAME, Some(6)),
            binary_trees::expected_checksum(6).to_string()
        );
        assert_eq!(allocations(Baseline::RustBoxPerNode, "gcbench", None), "-");
    }

    #[test]
    fn a_corrupt_tree_is_caught() {
        let tree = leaves_inline::bottom_up_tree(3);
        assert_eq!(leaves_inline::check(&tree, 3).unwrap(), 15);
        assert!(leaves_inline::check(&tree, 2).is_err());
    }

    #[test]
    fn every_side_runs_once_per_repeat_and_the_order_alternates() {
        let both = Baseline::for_workload(binary_trees::NAME);
        assert_eq!(
            turn_order(0, both),
            [
                None,
                Some(Baseline::RustBoxPerNode),
                Some(Baseline::RustLeavesInline)
            ]
        );
        assert_eq!(
            turn_order(1, both),
            [
                Some(Baseline::RustLeavesInline),
                Some(Baseline::RustBoxPerNode),
                None
            ]
        );
        assert_eq!(
            Baseline::for_workload("gcbench"),
            [Baseline::RustBoxPerNode]
        );
    }
}
