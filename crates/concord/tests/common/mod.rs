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

/// Clear CAP_SYS_NICE from the calling thread's effective capabilities (capabilities are
/// per thread in the kernel; the raw system call leaves the other threads alone). Returns
/// whether it worked.
#[allow(dead_code)]
pub fn drop_cap_sys_nice_on_this_thread() -> bool {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
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
        return false;
    }
    data[0].effective &= !(1 << CAP_SYS_NICE);
    // SAFETY: as above; pid 0 = the calling thread only.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    rc == 0
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
