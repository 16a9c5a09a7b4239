//! The operating-system room: virtual memory, futexes, CPU queries and thread affinity.
//!
//! Nothing here knows about the heap; `memory`, `parallel` and `runtime` call these thin, safe
//! wrappers instead of `libc` directly, so every system call the collector makes is in one place.

pub mod affinity;
pub mod cpu;
pub mod futex;
pub mod policy;
pub mod vm;
