//! Plain-Rust baselines of Concord's workloads: the same programs written the way a Rust
//! programmer would write them without a garbage collector, with `Box` nodes that the global
//! allocator (glibc `malloc`/`free`) hands out and that `drop` gives back. They compute the same
//! checksums as the Concord workloads of the same name and run every check those do, so
//! `concord vs-native` can put Concord's wall time next to them in one process (issue 13:
//! "as fast as plain Rust with malloc").
//!
//! | name | module | the Concord workload |
//! | --- | --- | --- |
//! | `binary-trees` | [`binary_trees`] | [`crate::binary_trees`] |
//! | `gcbench` | [`gcbench`] | [`crate::gcbench`] |
//!
//! The baselines run on the calling thread only (one "mutator"), and nothing in them is
//! deliberately slowed: no handles, no scopes, no checked slots, only what the program needs.

use crate::{WorkloadError, WorkloadParams, WorkloadResult};

pub mod binary_trees;
pub mod gcbench;

/// A plain-Rust program with the checksum of the Concord workload of the same name.
pub trait NativeWorkload: Send + Sync {
    /// The name of the Concord workload it mirrors (`binary-trees`, `gcbench`).
    fn name(&self) -> &'static str;

    /// Checks `params` as the Concord workload does (the same messages for a bad size), and
    /// that they ask for one thread, the only one a baseline runs on.
    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError>;

    /// Runs `params.rounds` rounds on the calling thread; the result carries the checksum, the
    /// checksum a correct run produces and the program's output lines.
    fn run(&self, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError>;
}

/// The names [`lookup`] knows.
pub fn names() -> &'static [&'static str] {
    &[crate::gcbench::NAME, crate::binary_trees::NAME]
}

/// The plain-Rust version of the workload called `name`, if there is one.
pub fn lookup(name: &str) -> Option<Box<dyn NativeWorkload>> {
    match name {
        crate::gcbench::NAME => Some(Box::new(gcbench::NativeGcBench::standard())),
        crate::binary_trees::NAME => Some(Box::new(binary_trees::NativeBinaryTrees)),
        _ => None,
    }
}

/// `params` checked for what every baseline needs: valid common fields and one mutator.
fn one_thread(params: &WorkloadParams) -> Result<(), WorkloadError> {
    params.validate()?;
    if params.mutators != 1 {
        return Err(WorkloadError::BadParameter(format!(
            "the plain-Rust versions run on one thread; mutators is {} (allowed: 1)",
            params.mutators
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_found_and_is_a_concord_workload() {
        for name in names() {
            let native = lookup(name).expect("listed baseline is found");
            assert_eq!(native.name(), *name);
            assert!(
                crate::lookup(name).is_some(),
                "{name} has a Concord workload"
            );
        }
        assert!(lookup("search").is_none());
    }

    #[test]
    fn more_than_one_mutator_is_rejected() {
        let params = WorkloadParams {
            mutators: 2,
            ..Default::default()
        };
        for name in names() {
            let e = lookup(name).unwrap().validate(&params).unwrap_err();
            assert!(e.to_string().contains("mutators is 2 (allowed: 1)"), "{e}");
        }
    }
}
