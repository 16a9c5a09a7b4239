//! The one experiment engine behind every bench command (`compare`, `sweep`, `ablation`,
//! `os-bench`, `sched-bench`): a [`Plan`] of arms (configurations) in groups, run alternately
//! A B C … A B C … `repeat` rounds in one invocation so that machine noise hits all of them
//! alike (DESIGN.md, "Measuring"); each run through its arm's [`Runner`] into a results
//! directory (`experiment.json`, a summary and a records file per run, written atomically);
//! then medians per arm, ratios to the first arm of each group, a table and JSON, and
//! `concord report` draws the directory.
//!
//! - [`arm`]: the configurations and how a Concord-heap arm is built from settings;
//! - [`runner`]: how one run is executed ([`Runner`]; [`HeapRunner`] for a Concord heap);
//! - [`simulated`]: arms run on the many-core simulator instead (`--sim-cpus`);
//! - [`plan`]: the plan, its run order and what `experiment.json` says about it;
//! - [`engine`]: the loop over the runs, failed runs and stop requests;
//! - [`session`]: the same with the results directory, progress and Ctrl-C;
//! - [`figures`], [`table`], [`output`]: medians, the text table, the JSON and the epilogue;
//! - [`results`]: the results directory and atomic writes.

pub mod arm;
pub mod engine;
pub mod figures;
pub mod output;
pub mod plan;
pub mod results;
pub mod runner;
pub mod session;
pub mod simulated;
pub mod table;

pub use arm::{default_heap, find_workload, heap_arm, Arm, Variant};
pub use engine::Executed;
pub use figures::{median, ratio, Outcome};
pub use plan::Plan;
pub use runner::{run_on_heap, run_on_heap_with};
pub use session::run_plan;
pub use table::Column;
