//! The operating-system room: virtual memory, futexes, CPU queries and thread affinity.
//!
//! Nothing here knows about the heap; `memory`, `parallel` and `runtime` call these thin, safe
//! wrappers instead of `libc` directly, so every system call the collector makes is in one place.

pub mod affinity;
pub mod cpu;
pub mod cpu_view;
pub mod futex;
pub mod gc_affinity;
pub mod policy;
pub mod sched;
pub mod vm;
