//! Concord's many-core simulator: runs the parallel phases of collections on N simulated CPUs in
//! virtual time, deterministically.
//!
//! - [`machine`]: the simulated machine (CPUs, SMT siblings, NUMA nodes, LLC domains) and the
//!   scheduling domains Linux builds over it.
//! - [`sched`]: the scheduler model an executor drives (CFS and SCHED_FIFO as in Linux 4.9).

pub mod machine;
pub mod sched;
