//! Helpers shared by integration tests. Each test binary uses some of them, hence the
//! `dead_code` allowances.

use std::sync::mpsc;
use std::time::Duration;

use concord::config::GenerationSizes;
use concord::{GcStats, Handle, Mutator, ObjectType};

/// The node of [`fill_for_promotion_failure`]'s list: a next reference and a value.
pub const LIST_NODE: ObjectType = ObjectType::fixed(2, 8);

/// Fill the old generation of a heap of `sizes` with live 64 KiB byte arrays (large objects,
/// allocated there directly), then three quarters of eden with a live list of [`LIST_NODE`]s
/// holding 0, 1, 2, …; returns the list's head and length. With a tenuring threshold of 0 the
/// next scavenge must promote the whole list, fails, and a full collection follows.
#[allow(dead_code)]
pub fn fill_for_promotion_failure(m: &mut Mutator<'_>, sizes: GenerationSizes) -> (Handle, usize) {
    for _ in 0..sizes.old / (64 << 10) {
        m.alloc_byte_array((64 << 10) - 8).unwrap();
    }
    let head = m.alloc(LIST_NODE).unwrap();
    let cur = m.dup(head);
    let len = (sizes.eden * 3 / 4) / LIST_NODE.size_bytes();
    for i in 0..len {
        m.scope(|m| {
            let n = m.alloc(LIST_NODE).unwrap();
            m.write_u64(n, 0, i as u64);
            m.set_ref(cur, 0, Some(n));
            m.set_handle(cur, Some(n));
        });
    }
    (head, len)
}

/// CAP_SYS_NICE, the capability that allows SCHED_FIFO whatever RLIMIT_RTPRIO says.
const CAP_SYS_NICE: u32 = 23;

/// Takes SCHED_FIFO away from the calling thread, as on a machine without privilege: the
/// process's RLIMIT_RTPRIO becomes 0 (soft and hard), and the thread loses CAP_SYS_NICE from its
/// effective capabilities (capabilities are per thread in the kernel; the raw system call
/// leaves the other threads alone). For a test run by [`in_child_process`], since the limit
/// holds for the whole process. Panics, saying why, if either cannot be done: a test that
/// needs this must not pass without it.
#[allow(dead_code)]
pub fn forbid_fifo_on_this_thread() {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `zero` is a valid rlimit for the duration of the call.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_RTPRIO, &zero) };
    assert_eq!(
        rc,
        0,
        "cannot set RLIMIT_RTPRIO to 0: {}",
        std::io::Error::last_os_error()
    );
    drop_cap_sys_nice_on_this_thread()
        .unwrap_or_else(|e| panic!("cannot drop CAP_SYS_NICE from this thread: {e}"));
    assert!(
        !thread_has_cap_sys_nice(),
        "CAP_SYS_NICE is still in this thread's effective set"
    );
}

/// Clears CAP_SYS_NICE from the calling thread's effective capabilities.
fn drop_cap_sys_nice_on_this_thread() -> std::io::Result<()> {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are valid for the v3 ABI (a header and two data words).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    data[0].effective &= !(1 << CAP_SYS_NICE);
    // SAFETY: as above; pid 0 = the calling thread only.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether CAP_SYS_NICE is in the calling thread's effective set (`CapEff` of
/// `/proc/thread-self/status`).
fn thread_has_cap_sys_nice() -> bool {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .expect("CapEff in /proc/thread-self/status");
    let eff = u64::from_str_radix(eff.trim(), 16).unwrap();
    eff & (1 << CAP_SYS_NICE) != 0
}

/// Runs `body` as the test `test` alone in a child process (this test binary again, with
/// `test --exact`), for a test that changes what belongs to the whole process (a resource
/// limit); in the child itself, runs `body`. Fails with the child's output if the child fails.
#[allow(dead_code)]
pub fn in_child_process(test: &str, body: impl FnOnce()) {
    const VAR: &str = "CONCORD_TEST_IN_CHILD";
    if std::env::var(VAR).as_deref() == Ok(test) {
        body();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(VAR, test)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{test} failed in its child process ({}):\n{stdout}{stderr}",
        out.status
    );
    // Exactly this test ran there (a wrong name would run none and succeed).
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{test}: the child process did not run it:\n{stdout}{stderr}"
    );
}

/// Whether a line of a failed child test's output is a backtrace frame (`  12: name` or
/// `at src/file.rs:3:5`), which failure messages leave out.
#[allow(dead_code)]
pub fn is_backtrace_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("at ")
        || t.split(':')
            .next()
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The heap verified after every collection it ran (with `verify` on), without failure.
#[allow(dead_code)]
pub fn assert_verified(stats: &GcStats) {
    assert!(
        stats.verify_failures.is_empty(),
        "{:?}",
        stats.verify_failures
    );
    assert_eq!(stats.verified(), Some(true));
}

/// Run `f` on its own thread and fail (instead of hanging the test run) if it takes longer
/// than `limit`.
#[allow(dead_code)]
pub fn with_watchdog<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(v) => {
            worker.join().unwrap();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The closure panicked: re-raise its panic.
            match worker.join() {
                Err(p) => std::panic::resume_unwind(p),
                Ok(()) => unreachable!("sender dropped without a value"),
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no progress within {limit:?}: hang?"),
    }
}
