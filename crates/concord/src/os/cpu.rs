//! CPU queries: which CPU a thread runs on and how many the process may use.

/// The CPU the calling thread is running on right now, if the OS says.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as u32)
}

/// Number of CPUs this process may run on (affinity mask and cgroup quota respected).
pub fn usable_cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    #[test]
    fn queries_answer() {
        assert!(super::usable_cpu_count() >= 1);
        assert!(super::current_cpu().is_some());
    }
}
