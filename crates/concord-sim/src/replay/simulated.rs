//! The replay task ([`task`](self)) compiled against the simulator's copy of the collector's
//! engine and task queues (`crate::parallel`, the same source files built on the simulated
//! platform layer): simulated threads on a simulated `WorkerPool`, run by [`super::driver`].

use crate::parallel;

// The same file as in `threads`, on purpose: one source, two engines.
#[allow(clippy::duplicate_mod)]
#[path = "task.rs"]
mod task;
pub use task::*;
