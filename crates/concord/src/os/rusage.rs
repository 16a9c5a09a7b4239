//! What the calling thread has cost so far, from `getrusage(RUSAGE_THREAD)`: CPU time in user
//! mode and in the kernel, page faults and context switches. Paper 002 reads a pause's stall
//! from exactly these figures: a pause whose wall time is far above its threads' CPU time was
//! spent blocked or off the CPU, one with a large system time in page faults or compaction.
//!
//! One system call, no file to open or parse: cheap enough (well under a microsecond) for a
//! GC worker to take at the start and at the end of its part of every collection.

use std::io;
use std::time::Duration;

/// The calling thread's CPU time so far (`CLOCK_THREAD_CPUTIME_ID`, nanosecond resolution):
/// compared with the wall time of a stretch of code, it tells time on the CPU from time spent
/// waiting for one (preempted) or blocked. `None` if the clock cannot be read.
pub fn thread_cpu_now() -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// A thread's resource usage counters (cumulative since the thread started), or the
/// difference of two readings of the same thread ([`ThreadUsage::since`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ThreadUsage {
    /// CPU time in user mode, nanoseconds (the kernel's resolution is microseconds, but
    /// without `VIRT_CPU_ACCOUNTING` it splits user from system time by sampling at the tick,
    /// so a stretch shorter than a tick may show no change here).
    pub user_ns: u64,
    /// CPU time in the kernel on the thread's behalf (system calls, page faults), ns.
    pub sys_ns: u64,
    /// Page faults served without I/O (first touch of anonymous memory, a page in the
    /// page cache).
    pub minor_faults: u64,
    /// Page faults that waited for I/O (swap-in, a file page read from disk).
    pub major_faults: u64,
    /// Times the thread gave up the CPU of its own accord (it blocked: a futex wait, I/O).
    pub voluntary_switches: u64,
    /// Times the scheduler took the CPU away from the thread while it could still run
    /// (preempted by another thread: the stacking of threads that 000 and 002 describe).
    pub involuntary_switches: u64,
    /// Total CPU time (user plus system) from `CLOCK_THREAD_CPUTIME_ID`, nanoseconds: exact
    /// even for a stretch far shorter than a scheduler tick, where `user_ns` and `sys_ns`
    /// may not move at all.
    #[serde(default)]
    pub cpu_ns: u64,
}

impl ThreadUsage {
    /// The calling thread's counters now.
    pub fn current_thread() -> io::Result<ThreadUsage> {
        // SAFETY: `rusage` is plain old data; all-zero bytes are a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `usage` is a valid, writable `rusage` for the duration of the call.
        if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let ns = |t: libc::timeval| {
            (t.tv_sec.max(0) as u64) * 1_000_000_000 + (t.tv_usec.max(0) as u64) * 1_000
        };
        let count = |n: libc::c_long| n.max(0) as u64;
        Ok(ThreadUsage {
            user_ns: ns(usage.ru_utime),
            sys_ns: ns(usage.ru_stime),
            minor_faults: count(usage.ru_minflt),
            major_faults: count(usage.ru_majflt),
            voluntary_switches: count(usage.ru_nvcsw),
            involuntary_switches: count(usage.ru_nivcsw),
            cpu_ns: thread_cpu_now().map_or(0, |d| d.as_nanos() as u64),
        })
    }

    /// The calling thread's counters now, or all zero if the kernel refused (it does not for
    /// the calling thread; a zero reading only loses attribution, never correctness).
    pub fn current_thread_or_zero() -> ThreadUsage {
        Self::current_thread().unwrap_or_default()
    }

    /// What the thread used between `earlier` and this reading (counters never go back;
    /// a pair of readings from different threads saturates at zero).
    pub fn since(&self, earlier: &ThreadUsage) -> ThreadUsage {
        ThreadUsage {
            user_ns: self.user_ns.saturating_sub(earlier.user_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            cpu_ns: self.cpu_ns.saturating_sub(earlier.cpu_ns),
        }
    }

    /// Add `other` (e.g. another thread's share of the same pause).
    pub fn add(&mut self, other: &ThreadUsage) {
        self.user_ns += other.user_ns;
        self.sys_ns += other.sys_ns;
        self.minor_faults += other.minor_faults;
        self.major_faults += other.major_faults;
        self.voluntary_switches += other.voluntary_switches;
        self.involuntary_switches += other.involuntary_switches;
        self.cpu_ns += other.cpu_ns;
    }

    /// User CPU time, milliseconds.
    pub fn user_ms(&self) -> f64 {
        self.user_ns as f64 / 1e6
    }

    /// System CPU time, milliseconds.
    pub fn sys_ms(&self) -> f64 {
        self.sys_ns as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Spin until the calling thread's exact CPU clock has advanced by `cpu` (however long
    /// that takes on a loaded machine; at most a minute of wall time, which fails the test).
    fn burn(cpu: Duration) {
        let start = thread_cpu_now().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut x = 1u64;
        while thread_cpu_now().unwrap() - start < cpu {
            assert!(Instant::now() < deadline, "no {cpu:?} of CPU in a minute");
            for _ in 0..1000 {
                x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
            }
        }
    }

    #[test]
    fn a_thread_that_burns_cpu_shows_user_time() {
        let usage = std::thread::spawn(|| {
            let before = ThreadUsage::current_thread().unwrap();
            burn(Duration::from_millis(40));
            ThreadUsage::current_thread().unwrap().since(&before)
        })
        .join()
        .unwrap();
        // 40 ms on the CPU, however long the wall time (a loaded machine gives a spinning
        // thread less of each second): the kernel splits exactly that into user and sys by
        // tick sampling, and a user-mode spin is mostly user.
        assert!(usage.cpu_ns >= 40_000_000, "{usage:?}");
        assert!(usage.user_ns + usage.sys_ns >= 1_000_000, "{usage:?}");
        assert!(usage.user_ns > 0, "{usage:?}");
    }

    #[test]
    fn a_thread_that_touches_fresh_pages_shows_minor_faults() {
        const PAGES: usize = 256;
        let usage = std::thread::spawn(|| {
            let page = crate::os::vm::page_size();
            let map = crate::os::vm::ZeroedMapping::new(PAGES * page).unwrap();
            let before = ThreadUsage::current_thread().unwrap();
            for i in 0..PAGES {
                // SAFETY: inside the fresh read-write mapping of PAGES pages owned here.
                unsafe { std::ptr::write_volatile((map.base() + i * page) as *mut u8, 1) };
            }
            ThreadUsage::current_thread().unwrap().since(&before)
        })
        .join()
        .unwrap();
        // Every first touch of an untouched anonymous page faults (huge pages would make it
        // fewer, never none).
        assert!(usage.minor_faults >= 1, "{usage:?}");
        assert_eq!(usage.major_faults, 0, "{usage:?}");
    }

    #[test]
    fn differences_and_sums_are_per_field() {
        let a = ThreadUsage {
            user_ns: 10,
            sys_ns: 20,
            minor_faults: 3,
            major_faults: 1,
            voluntary_switches: 5,
            involuntary_switches: 2,
            cpu_ns: 30,
        };
        let mut b = a;
        b.add(&a);
        assert_eq!(b.since(&a), a);
        assert_eq!(a.since(&b), ThreadUsage::default());
        assert_eq!(b.user_ms(), 20e-6);
    }

    #[test]
    fn the_thread_cpu_clock_counts_work_not_sleep() {
        let start = thread_cpu_now().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        let slept = thread_cpu_now().unwrap() - start;
        assert!(
            slept < Duration::from_millis(10),
            "{slept:?} of CPU while asleep"
        );
        // Work moves it: `burn` spins until the clock has moved 5 ms, and fails the test if
        // a minute of spinning does not move it that far.
        burn(Duration::from_millis(5));
    }
}
