//! `fifo-scope all`: when the policy chooses FIFO, the VM thread and the GC workers go under
//! SCHED_FIFO with the mutators (001 ran the whole JVM under FIFO), and the check that refuses
//! it where it could starve the machine.
//!
//! **Why it is safe when allowed.** All these threads run at the same real-time priority. A GC
//! worker that waits for another (termination, a region being moved, a message in flight)
//! spins a bounded number of times and then calls `sched_yield`, which under SCHED_FIFO puts it
//! behind every runnable thread of its priority on its CPU: the worker it waits for, being at
//! that priority too, runs. No FIFO thread waits busily for a CFS thread: the VM thread and the
//! workers block (futex, condition variable) when they wait for anything else. What FIFO
//! threads busy on every CPU can do is starve the CFS threads of the machine (other programs,
//! the shell); the kernel's real-time throttle (`/proc/sys/kernel/sched_rt_runtime_us` out of
//! `sched_rt_period_us`, 950 000 of 1 000 000 µs by default) bounds real-time threads to 95 %
//! of each CPU, so CFS threads keep 5 %. With the throttle off (-1) nothing does, so `all` is
//! refused when more FIFO threads than CPUs could be busy at once.

use std::path::Path;

use crate::os::policy::{FifoScope, MutatorSched};

/// The kernel's real-time throttle: µs of every period real-time threads may use, -1 for off.
pub const RT_RUNTIME_PATH: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// The real-time throttle read from `path` (`RT_RUNTIME_PATH`); `None` when it cannot be read.
pub fn read_rt_runtime_us(path: &Path) -> Option<i64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// The threads of a run: `instances` heaps (co-running processes) with `gc_threads` workers,
/// a VM thread and `mutators` each.
#[derive(Clone, Copy, Debug)]
pub struct RunThreads {
    pub instances: usize,
    pub gc_threads: usize,
    pub mutators: usize,
}

/// Why `fifo-scope all` is refused for this run, or `Ok`: refused when the policy may choose
/// FIFO, more threads would run under it (every instance's GC workers, VM thread and mutators)
/// than there are `usable_cpus`, and the real-time throttle is off (`rt_runtime_us` -1).
pub fn check_fifo_scope(
    policy: &MutatorSched,
    scope: FifoScope,
    threads: RunThreads,
    usable_cpus: usize,
    rt_runtime_us: Option<i64>,
) -> Result<(), String> {
    let RunThreads {
        instances,
        gc_threads,
        mutators,
    } = threads;
    let fifo_threads = instances * (gc_threads + 1 + mutators);
    if scope == FifoScope::Mutators
        || *policy == MutatorSched::Cfs
        || fifo_threads <= usable_cpus
        || rt_runtime_us != Some(-1)
    {
        return Ok(());
    }
    Err(format!(
        "fifo-scope 'all' with mutator-sched '{policy}' would put {fifo_threads} threads under \
         SCHED_FIFO ({instances} x ({gc_threads} GC workers, the VM thread, {mutators} \
         mutators)) on \
         {usable_cpus} usable CPUs while the kernel's real-time throttle is off \
         ({RT_RUNTIME_PATH} is -1): busy FIFO threads could starve every other thread of the \
         machine (allowed: fifo-scope mutators; at most {usable_cpus} threads in all, with \
         fewer GC threads or mutators; or the throttle on, e.g. \
         sysctl kernel.sched_rt_runtime_us=950000)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(gc_threads: usize, mutators: usize) -> RunThreads {
        RunThreads {
            instances: 1,
            gc_threads,
            mutators,
        }
    }

    #[test]
    fn all_is_refused_only_with_more_fifo_threads_than_cpus_and_no_throttle() {
        let fifo = MutatorSched::Fifo;
        // 2 GC workers + VM thread + 2 mutators = 5 threads on 4 CPUs, throttle off.
        let err = check_fifo_scope(&fifo, FifoScope::All, one(2, 2), 4, Some(-1)).unwrap_err();
        assert!(err.contains("5 threads"), "{err}");
        assert!(err.contains("on 4 usable CPUs"), "{err}");
        assert!(err.contains("fifo-scope mutators"), "{err}");
        // Exactly as many threads as CPUs.
        assert_eq!(
            check_fifo_scope(&fifo, FifoScope::All, one(1, 2), 4, Some(-1)),
            Ok(())
        );
        // The throttle on (the default), or unknown.
        for throttle in [Some(950_000), Some(0), None] {
            assert_eq!(
                check_fifo_scope(&fifo, FifoScope::All, one(2, 2), 4, throttle),
                Ok(())
            );
        }
        // Mutators only, or a policy that never chooses FIFO.
        assert_eq!(
            check_fifo_scope(&fifo, FifoScope::Mutators, one(8, 8), 1, Some(-1)),
            Ok(())
        );
        assert_eq!(
            check_fifo_scope(&MutatorSched::Cfs, FifoScope::All, one(8, 8), 1, Some(-1)),
            Ok(())
        );
        // Two co-running instances of 1 + 1 + 1 threads on 4 CPUs.
        let two = RunThreads {
            instances: 2,
            ..one(1, 1)
        };
        let err = check_fifo_scope(&fifo, FifoScope::All, two, 4, Some(-1)).unwrap_err();
        assert!(err.contains("6 threads"), "{err}");
        let adaptive = "adaptive:0.5".parse::<MutatorSched>().unwrap();
        assert!(check_fifo_scope(&adaptive, FifoScope::All, one(2, 2), 4, Some(-1)).is_err());
    }

    #[test]
    fn reads_the_throttle() {
        let dir = std::env::temp_dir().join(format!("concord-rt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("rt");
        std::fs::write(&file, "-1\n").unwrap();
        assert_eq!(read_rt_runtime_us(&file), Some(-1));
        std::fs::write(&file, "950000\n").unwrap();
        assert_eq!(read_rt_runtime_us(&file), Some(950_000));
        std::fs::write(&file, "x").unwrap();
        assert_eq!(read_rt_runtime_us(&file), None);
        assert_eq!(read_rt_runtime_us(&dir.join("missing")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
