//! Concord's workload suite: garbage-collection benchmarks written against the Concord mutator
//! API (DESIGN.md, "Workloads").
//!
//! Every workload implements [`Workload`]: it runs on a [`Heap`] the caller built (so the
//! caller chooses heap size, GC threads, verification, ...), and returns a [`WorkloadResult`]
//! whose checksum a broken collector would change. Where the checksum can be derived
//! analytically the result also carries the expected value ([`WorkloadResult::checksum_ok`]).
//!
//! Workloads are found by name with [`lookup`]; [`workload_names`] lists them.
//!
//! | name | module |
//! | --- | --- |
//! | `gcbench` | [`gcbench`] (Boehm's GCBench, same algorithm as `bench/hotspot/GCBench.java`) |
//! | `binary-trees` | [`binary_trees`] (the Benchmarks Game program) |
//! | `search` | [`search`] (lusearch-like: per-mutator inverted index, shared queries, short-lived hits) |
//! | `transform` | [`transform`] (xalan-like: document trees transformed into new trees, a window of outputs alive) |
//! | `render` | [`render`] (sunflow-like: a ray tracer allocating a heap object per vector operation) |
//! | `database` | [`database`] (h2-like: long-lived paged index, skewed transactions) |
//! | `kmeans` | [`kmeans`] (HiBench k-means: long-lived points, per-iteration temporaries) |
//! | `kv-service` | [`kv_service`] (Cassandra-like: sharded in-heap store, get/put latency percentiles) |
//! | `queue-churn` | [`queue_churn`] (LinkedIn `Test.java`: 10 KiB objects through a queue, the oldest half dropped at 100 000) |
//!
//! [`native`] holds plain-Rust versions of `binary-trees` and `gcbench` (`Box` nodes, freed
//! by `drop` through `malloc`/`free`) with the same checksums, the baselines of
//! `concord vs-native`.
//!
//! Rules the workloads follow (and new ones must follow): a reference that lives only
//! between two safepoints is a [`concord::Gc`] view ([`Mutator::view`]), and one that must
//! survive an allocation (or a scope, poll or `blocking`) is a [`concord::Handle`]. So
//! read-only work (traversals, lookups, checks, hashing, reading a record out of a tree)
//! goes through `Gc`s and creates no handles, and stores between objects that already exist
//! use [`Mutator::store`] on `Gc`s; a handle is made ([`Mutator::root`], or an allocation's
//! own) only for what the next allocation must not lose, and payload writes, which take the
//! mutator `&mut`, go through handles. Constructors whose references exist before the
//! object use [`Mutator::alloc_with`]. Recursive builders open a [`Mutator::scope`] (or
//! [`Mutator::scope_escape`]) per level so the handle stack stays small; loops that create
//! handles reuse them or open a scope; a loop that creates none needs no scope (though a long
//! one that allocates nothing must still poll for safepoints: [`Mutator::safepoint_poll`]). None
//! of this changes what is allocated: the objects, their order, sizes and lifetimes are the
//! benchmark's. Allocation failures are propagated as [`WorkloadError::OutOfMemory`], never
//! unwrapped; and no mutator stays attached and idle while other threads work (it would hold
//! up every collection), which is what [`run_copies`] and [`Mutator::blocking`] are for.
//!
//! What the workloads have in common is written once, in two private modules: `scaffold`
//! (the `--size` parameter, [`Size`]: its default, range, errors and default heap; the
//! [`Workload`] methods of a workload whose only own parameter is its size; threads, results,
//! scopes that return a handle) and `data` (the splitmix64 and FNV-1a hashes, patterned
//! values, byte arrays, bottom-up trees). Every workload with a size describes it in one
//! `SIZE` constant of its module (e.g. [`database::SIZE`]). The shared code never decides what a workload allocates: which
//! objects, in which order, how large and for how long is in the workload's own module (the
//! allocation pattern is part of a GC benchmark's result); a shared builder allocates exactly
//! the byte array, value or tree it is asked for.

#![warn(missing_docs)]

use std::fmt;

use concord::{GcError, Heap, Mutator};

pub mod binary_trees;
pub mod database;
pub mod gcbench;
pub mod kmeans;
pub mod kv_service;
pub mod native;
pub mod queue_churn;
pub mod render;
pub mod search;
pub mod transform;

mod data;
mod scaffold;

pub use binary_trees::BinaryTrees;
pub use database::Database;
pub use gcbench::{GcBench, GcBenchParams};
pub use kmeans::KMeans;
pub use kv_service::KvService;
pub use queue_churn::{QueueChurn, QueueChurnParams};
pub use render::Render;
pub use scaffold::Size;
pub use search::Search;
pub use transform::Transform;

/// One mebibyte, for heap sizes.
pub const MIB: usize = 1 << 20;

/// How to run a workload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadParams {
    /// Number of mutator threads (`--mutators`), at least 1. What they do is up to the
    /// workload: independent copies (`gcbench`) or a share of one computation (`binary-trees`).
    pub mutators: usize,
    /// How many times the whole workload runs, one round after the other; at least 1.
    pub rounds: usize,
    /// Workload-specific size (e.g. the `binary-trees` depth); `None` takes the workload's
    /// default. Workloads without a size reject `Some`.
    pub size: Option<u32>,
}

impl Default for WorkloadParams {
    /// One mutator, one round, the workload's default size.
    fn default() -> Self {
        WorkloadParams {
            mutators: 1,
            rounds: 1,
            size: None,
        }
    }
}

impl WorkloadParams {
    /// Checks the workload-independent fields (`mutators` and `rounds` at least 1).
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.mutators == 0 {
            return Err(WorkloadError::BadParameter(
                "mutators is 0 (allowed: at least 1)".into(),
            ));
        }
        if self.rounds == 0 {
            return Err(WorkloadError::BadParameter(
                "rounds is 0 (allowed: at least 1)".into(),
            ));
        }
        Ok(())
    }
}

/// What a workload run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadResult {
    /// The workload's checksum, summed over all mutators and rounds.
    pub checksum: u64,
    /// The checksum a correct run produces, when the workload can derive it.
    pub expected_checksum: Option<u64>,
    /// Extra output as (label, value) lines, in order (e.g. the lines the original program
    /// prints).
    pub details: Vec<(String, String)>,
}

impl WorkloadResult {
    /// `Some(true)` if the checksum equals the expected one, `Some(false)` if it does not,
    /// `None` if the workload has no expected checksum.
    pub fn checksum_ok(&self) -> Option<bool> {
        self.expected_checksum.map(|e| e == self.checksum)
    }
}

/// Why a workload run failed.
#[derive(Debug)]
pub enum WorkloadError {
    /// An allocation failed even after a full collection (or the shape was unrepresentable).
    OutOfMemory(GcError),
    /// A parameter is outside what the workload accepts; the message names value and range.
    BadParameter(String),
    /// A structural check of the workload's data failed; the message names what was wrong.
    /// With a correct collector this never happens.
    Corrupt(String),
    /// A worker thread could not be started.
    Spawn(std::io::Error),
}

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkloadError::OutOfMemory(e) => write!(f, "{e}"),
            WorkloadError::BadParameter(msg) => write!(f, "bad parameter: {msg}"),
            WorkloadError::Corrupt(msg) => write!(f, "corrupt heap data: {msg}"),
            WorkloadError::Spawn(e) => write!(f, "could not start a workload thread: {e}"),
        }
    }
}

impl std::error::Error for WorkloadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkloadError::OutOfMemory(e) => Some(e),
            WorkloadError::Spawn(e) => Some(e),
            WorkloadError::BadParameter(_) | WorkloadError::Corrupt(_) => None,
        }
    }
}

impl From<GcError> for WorkloadError {
    fn from(e: GcError) -> Self {
        WorkloadError::OutOfMemory(e)
    }
}

/// A benchmark program written against the Concord mutator API.
pub trait Workload: Send + Sync {
    /// The name users select it by (`gcbench`, `binary-trees`, ...).
    fn name(&self) -> &'static str;

    /// One line saying what it does.
    fn description(&self) -> &'static str;

    /// A heap size in bytes that runs `params` comfortably (used when the user gives none).
    fn default_heap(&self, params: &WorkloadParams) -> usize;

    /// Checks `params` without running anything; [`Workload::run`] checks them too.
    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        params.validate()
    }

    /// Runs the workload on `heap`. Attaches its own mutators; the calling thread must not be
    /// attached to `heap` (it would block collections while it waits).
    fn run(&self, heap: &Heap, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError>;
}

/// The names [`lookup`] knows, in the order of DESIGN.md.
pub fn workload_names() -> &'static [&'static str] {
    &[
        gcbench::NAME,
        binary_trees::NAME,
        search::NAME,
        transform::NAME,
        render::NAME,
        database::NAME,
        kmeans::NAME,
        kv_service::NAME,
        queue_churn::NAME,
    ]
}

/// The workload called `name` (with its standard parameters), if there is one.
pub fn lookup(name: &str) -> Option<Box<dyn Workload>> {
    match name {
        gcbench::NAME => Some(Box::new(GcBench::standard())),
        binary_trees::NAME => Some(Box::new(BinaryTrees)),
        search::NAME => Some(Box::new(Search)),
        transform::NAME => Some(Box::new(Transform::standard())),
        render::NAME => Some(Box::new(Render)),
        database::NAME => Some(Box::new(Database)),
        kmeans::NAME => Some(Box::new(KMeans)),
        kv_service::NAME => Some(Box::new(KvService)),
        queue_churn::NAME => Some(Box::new(QueueChurn::standard())),
        _ => None,
    }
}

/// Runs `params.rounds` rounds of `params.mutators` independent copies of `copy` and returns
/// the sum of their results, wrapping (checksums are sums modulo 2^64, which do not depend on
/// how the work is split across copies).
///
/// Each round starts one scoped thread per copy (named `{name}-{copy}`), which attaches its own
/// mutator and calls `copy(mutator, copy_index, round)`; with a single mutator the copy runs
/// on the calling thread instead. The calling thread is never attached while copies run. The
/// first error of a round (in copy order) is returned after all its copies have finished; a
/// panicking copy is re-raised on the calling thread.
pub fn run_copies<F>(
    heap: &Heap,
    params: &WorkloadParams,
    name: &str,
    copy: F,
) -> Result<u64, WorkloadError>
where
    F: Fn(&mut Mutator<'_>, usize, usize) -> Result<u64, WorkloadError> + Sync,
{
    params.validate()?;
    let mut total = 0u64;
    for round in 0..params.rounds {
        if params.mutators == 1 {
            let mut m = heap.attach();
            total = total.wrapping_add(copy(&mut m, 0, round)?);
            continue;
        }
        for r in scaffold::on_threads(heap, name, params.mutators, |m, c| copy(m, c, round)) {
            total = total.wrapping_add(r?);
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lookup_agree() {
        for name in workload_names() {
            let w = lookup(name).expect("listed workload is found");
            assert_eq!(w.name(), *name);
            assert!(!w.description().is_empty());
            assert!(w.default_heap(&WorkloadParams::default()) >= 4 * MIB);
        }
        assert!(lookup("no-such-workload").is_none());
    }

    /// Every size convention as users meet it: sizes at both ends of the range are accepted,
    /// one beyond either end is rejected with its exact message, and the default heaps.
    #[test]
    fn sizes_messages_and_default_heaps() {
        // (workload, range, message for the out-of-range size N, default heap in MiB at the
        // default size and at the smallest, with one mutator)
        let cases = [
            (
                "binary-trees",
                4..=30,
                "binary-trees depth (size) N is out of range (allowed: 4..=30)",
                96,
                64,
            ),
            (
                "search",
                1..=100_000,
                "search size N (thousands of queries) is out of range (allowed: 1..=100000)",
                21,
                21,
            ),
            (
                "transform",
                1..=100_000,
                "transform size N (thousands of documents) is out of range (allowed: 1..=100000)",
                42,
                42,
            ),
            (
                "render",
                4..=4096,
                "render image side (size) N is out of range (allowed: 4..=4096)",
                12,
                12,
            ),
            (
                "database",
                1..=10_000,
                "database size N (thousands of rows) is out of range (allowed: 1..=10000)",
                84,
                12,
            ),
            (
                "kmeans",
                1..=10_000,
                "kmeans size N (thousands of points) is out of range (allowed: 1..=10000)",
                84,
                12,
            ),
            (
                "kv-service",
                1..=10_000,
                "kv-service size N (thousands of keys) is out of range (allowed: 1..=10000)",
                84,
                12,
            ),
            (
                "queue-churn",
                1..=3600,
                "queue-churn duration (size) N seconds is out of range (allowed: 1..=3600)",
                4224,
                4224,
            ),
        ];
        for (name, range, message, heap_mib, smallest_heap_mib) in cases {
            let w = lookup(name).expect("listed workload is found");
            let params = |size, mutators| WorkloadParams {
                mutators,
                size,
                ..Default::default()
            };
            for ok in [*range.start(), *range.end()] {
                assert!(w.validate(&params(Some(ok), 1)).is_ok(), "{name} {ok}");
            }
            for bad in [range.start() - 1, range.end() + 1] {
                let e = w.validate(&params(Some(bad), 1)).unwrap_err().to_string();
                let want = message.replace('N', &bad.to_string());
                assert_eq!(e, format!("bad parameter: {want}"));
            }
            let heap = |size, mutators| w.default_heap(&params(size, mutators));
            assert_eq!(heap(None, 1), heap_mib * MIB, "{name}");
            assert_eq!(
                heap(Some(*range.start()), 1),
                smallest_heap_mib * MIB,
                "{name}"
            );
            assert!(heap(None, 4) >= heap(None, 1), "{name}");
        }
    }

    #[test]
    fn checksum_ok_compares_with_expected() {
        let mut r = WorkloadResult {
            checksum: 5,
            expected_checksum: None,
            details: vec![],
        };
        assert_eq!(r.checksum_ok(), None);
        r.expected_checksum = Some(5);
        assert_eq!(r.checksum_ok(), Some(true));
        r.expected_checksum = Some(6);
        assert_eq!(r.checksum_ok(), Some(false));
    }

    #[test]
    fn zero_mutators_or_rounds_are_rejected() {
        let p = WorkloadParams {
            mutators: 0,
            ..Default::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("mutators is 0"), "{e}");
        let p = WorkloadParams {
            rounds: 0,
            ..Default::default()
        };
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("rounds is 0"), "{e}");
    }
}
