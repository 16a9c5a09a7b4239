//! The operating-system room: virtual memory, futexes, thread affinity and scheduling, the CPUs
//! the process may use and how busy they are, and the two OS-side policies (where GC threads
//! run, how mutator threads are scheduled).
//!
//! Nothing here knows about the heap; `memory`, `parallel` and `runtime` call these thin, safe
//! wrappers instead of `libc` directly, so every system call the collector makes is in one place:
//!
//! * [`sched::current_tid`] is the one `gettid`;
//! * [`affinity`] is the one affinity API (by thread id, with conveniences for the caller);
//! * [`procfs`] holds the one reader of each kernel file (`/proc/stat`, a thread's `stat`, CPU
//!   lists);
//! * [`cpu::usable_cpu_count`] is the one count of usable CPUs (the affinity mask capped by the
//!   cgroup CPU quota).

pub mod affinity;
pub mod cpu;
pub mod futex;
pub mod gc_affinity;
pub mod periodic;
pub mod policy;
pub mod procfs;
pub mod sched;
pub mod vm;

/// CPU ids must be below this (64 Ki CPUs; far above any machine Linux runs on today).
pub const CPU_ID_LIMIT: u32 = 1 << 16;
