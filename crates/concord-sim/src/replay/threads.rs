//! The replay task ([`task`](self)) compiled against `concord`'s own engine and task queues:
//! real threads on a real `concord::parallel::WorkerPool`.

use concord::parallel;

#[path = "task.rs"]
mod task;
pub use task::*;
