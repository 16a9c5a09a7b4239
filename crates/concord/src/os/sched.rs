//! Thread scheduling policy and per-thread CPU time: switch a thread of this process between
//! `SCHED_FIFO` and `SCHED_OTHER` (CFS), ask which policy it runs under, and read how much CPU
//! time it has used.
//!
//! Threads are named by their kernel thread id ([`current_tid`], the crate's one `gettid`),
//! which is what the scheduling system calls take. All functions act on threads of the calling
//! process only.

use std::fmt;
use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use super::procfs::read_task_stat;

/// The real-time priority [`set_fifo`] callers use unless told otherwise: the lowest one, so a
/// FIFO mutator never outranks real-time threads of other programs.
pub const DEFAULT_FIFO_PRIORITY: i32 = 1;

/// A Linux scheduling policy, as `sched_getscheduler` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedPolicy {
    /// `SCHED_OTHER`: the default time-sharing policy (CFS / EEVDF).
    Other,
    /// `SCHED_FIFO`: real-time, first in first out.
    Fifo,
    /// `SCHED_RR`: real-time, round robin.
    RoundRobin,
    /// `SCHED_BATCH`.
    Batch,
    /// `SCHED_IDLE`.
    Idle,
    /// `SCHED_DEADLINE`.
    Deadline,
    /// A value this code does not know.
    Unknown(i32),
}

impl SchedPolicy {
    /// Decode a policy number (without the `SCHED_RESET_ON_FORK` flag).
    pub fn from_raw(raw: i32) -> SchedPolicy {
        match raw {
            libc::SCHED_OTHER => SchedPolicy::Other,
            libc::SCHED_FIFO => SchedPolicy::Fifo,
            libc::SCHED_RR => SchedPolicy::RoundRobin,
            libc::SCHED_BATCH => SchedPolicy::Batch,
            libc::SCHED_IDLE => SchedPolicy::Idle,
            6 => SchedPolicy::Deadline, // SCHED_DEADLINE
            other => SchedPolicy::Unknown(other),
        }
    }

    /// The kernel's name of the policy.
    pub fn name(self) -> &'static str {
        match self {
            SchedPolicy::Other => "SCHED_OTHER",
            SchedPolicy::Fifo => "SCHED_FIFO",
            SchedPolicy::RoundRobin => "SCHED_RR",
            SchedPolicy::Batch => "SCHED_BATCH",
            SchedPolicy::Idle => "SCHED_IDLE",
            SchedPolicy::Deadline => "SCHED_DEADLINE",
            SchedPolicy::Unknown(_) => "unknown policy",
        }
    }
}

impl fmt::Display for SchedPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SchedPolicy::Unknown(raw) => write!(f, "policy {raw}"),
            known => f.write_str(known.name()),
        }
    }
}

/// A scheduling system call failed.
#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    /// `EPERM`: the process may not make this change.
    #[error("cannot {action} thread {tid}: lacking the privilege (CAP_SYS_NICE / RLIMIT_RTPRIO)")]
    PermissionDenied {
        /// The thread asked about.
        tid: i32,
        /// What was attempted, e.g. "set SCHED_FIFO priority 1 on".
        action: String,
    },
    /// `ESRCH`: no such thread (it has exited).
    #[error("cannot {action} thread {tid}: no such thread (it has exited)")]
    NoSuchThread {
        /// The thread asked about.
        tid: i32,
        /// What was attempted.
        action: String,
    },
    /// `EINVAL`: a bad policy or priority.
    #[error("cannot {action} thread {tid}: invalid policy or priority")]
    Invalid {
        /// The thread asked about.
        tid: i32,
        /// What was attempted.
        action: String,
    },
    /// Any other error.
    #[error("cannot {action} thread {tid}")]
    Os {
        /// The thread asked about.
        tid: i32,
        /// What was attempted.
        action: String,
        /// What the OS said.
        source: io::Error,
    },
}

impl SchedError {
    /// Whether the process lacks the privilege (CAP_SYS_NICE, or an RLIMIT_RTPRIO high enough).
    pub fn is_permission_denied(&self) -> bool {
        matches!(self, SchedError::PermissionDenied { .. })
    }

    /// Whether the thread no longer exists.
    pub fn is_no_such_thread(&self) -> bool {
        matches!(self, SchedError::NoSuchThread { .. })
    }

    /// The thread the failed call was about.
    pub fn tid(&self) -> i32 {
        match self {
            SchedError::PermissionDenied { tid, .. }
            | SchedError::NoSuchThread { tid, .. }
            | SchedError::Invalid { tid, .. }
            | SchedError::Os { tid, .. } => *tid,
        }
    }

    fn from_errno(tid: i32, action: String, err: io::Error) -> SchedError {
        match err.raw_os_error() {
            Some(libc::EPERM) => SchedError::PermissionDenied { tid, action },
            Some(libc::ESRCH) => SchedError::NoSuchThread { tid, action },
            Some(libc::EINVAL) => SchedError::Invalid { tid, action },
            _ => SchedError::Os {
                tid,
                action,
                source: err,
            },
        }
    }
}

/// The kernel thread id of the calling thread.
pub fn current_tid() -> i32 {
    // SAFETY: gettid has no preconditions and cannot fail.
    unsafe { libc::gettid() }
}

/// The raw `sched_getscheduler` answer, flags included.
fn raw_policy(tid: i32) -> Result<i32, SchedError> {
    // SAFETY: sched_getscheduler only reads the scheduling class of the thread named by `tid`.
    let rc = unsafe { libc::sched_getscheduler(tid) };
    if rc < 0 {
        return Err(SchedError::from_errno(
            tid,
            "read the scheduling policy of".into(),
            io::Error::last_os_error(),
        ));
    }
    Ok(rc)
}

/// The scheduling policy thread `tid` runs under.
pub fn thread_policy(tid: i32) -> Result<SchedPolicy, SchedError> {
    raw_policy(tid).map(|raw| SchedPolicy::from_raw(raw & !libc::SCHED_RESET_ON_FORK))
}

/// The static (real-time) priority of thread `tid`: 1–99 under FIFO/RR, 0 otherwise.
pub fn thread_rt_priority(tid: i32) -> Result<i32, SchedError> {
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable sched_param.
    let rc = unsafe { libc::sched_getparam(tid, &mut param) };
    if rc < 0 {
        return Err(SchedError::from_errno(
            tid,
            "read the scheduling priority of".into(),
            io::Error::last_os_error(),
        ));
    }
    Ok(param.sched_priority)
}

fn set_raw(
    tid: i32,
    policy: i32,
    priority: i32,
    action: impl FnOnce() -> String,
) -> Result<(), SchedError> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param that outlives the call; the kernel validates the
    // thread id, policy and priority and reports errors through errno.
    let rc = unsafe { libc::sched_setscheduler(tid, policy, &param) };
    if rc < 0 {
        return Err(SchedError::from_errno(
            tid,
            action(),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// Run thread `tid` under `SCHED_FIFO` at real-time `priority` (1–99; see
/// [`DEFAULT_FIFO_PRIORITY`]).
///
/// `SCHED_RESET_ON_FORK` is set with it, so threads that `tid` creates afterwards start under
/// `SCHED_OTHER` instead of inheriting FIFO (a FIFO mutator must not make the GC workers or
/// helper threads it spawns real-time by accident).
///
/// Needs `CAP_SYS_NICE` or an `RLIMIT_RTPRIO` of at least `priority`; without it the error is
/// [`SchedError::PermissionDenied`].
pub fn set_fifo(tid: i32, priority: i32) -> Result<(), SchedError> {
    set_raw(
        tid,
        libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK,
        priority,
        || format!("set SCHED_FIFO priority {priority} on"),
    )
}

/// Run thread `tid` under `SCHED_OTHER` (CFS) again. Its nice value is kept (the kernel keeps
/// it while a thread is real-time), so a thread that had nice 0 before FIFO has nice 0 again.
///
/// A `SCHED_RESET_ON_FORK` flag already on the thread is kept: clearing it needs
/// `CAP_SYS_NICE`, and under `SCHED_OTHER` it only resets negative nice values in children.
/// Leaving real-time needs no privilege.
pub fn set_other(tid: i32) -> Result<(), SchedError> {
    let flag = raw_policy(tid)? & libc::SCHED_RESET_ON_FORK;
    set_raw(tid, libc::SCHED_OTHER | flag, 0, || {
        "set SCHED_OTHER on".to_string()
    })
}

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, 100 on nearly every Linux).
pub fn clock_ticks_per_second() -> u64 {
    static TCK: OnceLock<u64> = OnceLock::new();
    *TCK.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if v > 0 {
            v as u64
        } else {
            100
        }
    })
}

fn ticks_to_duration(ticks: u64) -> Duration {
    let hz = clock_ticks_per_second();
    let nanos = u128::from(ticks) * 1_000_000_000 / u128::from(hz);
    Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
}

/// The kernel's CPU-time clock of thread `tid` (nanosecond resolution; the thread must belong
/// to this process). This is `MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)` from the kernel's
/// posix-timers ABI, the clock `pthread_getcpuclockid` hands out for the caller's own threads.
fn thread_cpu_clock(tid: i32) -> io::Result<Duration> {
    const CPUCLOCK_PERTHREAD_SCHED: i32 = 4 | 2;
    let clock: libc::clockid_t = (!tid).wrapping_shl(3) | CPUCLOCK_PERTHREAD_SCHED;
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; an unknown clock id is reported via errno.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

/// CPU time thread `tid` has used so far (user + kernel). Uses the thread's CPU-time clock
/// (nanoseconds) and falls back to fields 14 and 15 of its `stat` file (clock ticks).
pub fn thread_cpu_time(tid: i32) -> io::Result<Duration> {
    if tid <= 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{tid} is not a thread id"),
        ));
    }
    thread_cpu_clock(tid).or_else(|_| read_task_stat(tid).map(|s| ticks_to_duration(s.cpu_ticks())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_and_cpu_time_of_own_thread() {
        let tid = current_tid();
        assert_eq!(thread_policy(tid).unwrap(), SchedPolicy::Other);
        let before = thread_cpu_time(tid).unwrap();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(thread_cpu_time(tid).unwrap() > before);
        assert!(thread_cpu_time(0).is_err());
    }

    #[test]
    fn cpu_time_and_policy_of_another_thread() {
        let other = crate::os::WaitingThread::start("sched test");
        let tid = other.tid;
        assert!(thread_cpu_time(tid).is_ok());
        // The nanosecond clock works for other threads of the process, not only the caller.
        assert!(thread_cpu_clock(tid).is_ok());
        // Gone threads are reported as such.
        other.finish();
        assert!(thread_policy(tid).unwrap_err().is_no_such_thread());
    }

    /// A scratch thread that only sleeps is switched to FIFO and back (or, without the
    /// privilege, the error says so).
    #[test]
    fn fifo_and_back_on_a_sleeping_thread() {
        std::thread::spawn(|| {
            let tid = current_tid();
            match set_fifo(tid, DEFAULT_FIFO_PRIORITY) {
                Ok(()) => {
                    assert_eq!(thread_policy(tid).unwrap(), SchedPolicy::Fifo);
                    assert_eq!(thread_rt_priority(tid).unwrap(), DEFAULT_FIFO_PRIORITY);
                    // Threads it creates start under SCHED_OTHER (reset on fork).
                    let child = std::thread::spawn(|| thread_policy(current_tid()).unwrap());
                    assert_eq!(child.join().unwrap(), SchedPolicy::Other);
                    set_other(tid).unwrap();
                    assert_eq!(thread_policy(tid).unwrap(), SchedPolicy::Other);
                    assert_eq!(thread_rt_priority(tid).unwrap(), 0);
                }
                Err(e) => {
                    assert!(e.is_permission_denied(), "{e}");
                    assert!(e.to_string().contains("CAP_SYS_NICE"));
                    assert_eq!(e.tid(), tid);
                }
            }
            assert!(matches!(
                set_fifo(tid, 1000),
                Err(SchedError::Invalid { .. } | SchedError::PermissionDenied { .. })
            ));
        })
        .join()
        .unwrap();
    }
}
