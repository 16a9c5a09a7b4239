//! Linux futex wait/wake on a 32-bit atomic: the primitive behind lazy GC-thread parking.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// The `futex` system call on `word` with operation `op` (private to this process), value
/// `val`, an optional relative timeout and a bitset (`FUTEX_BITSET_MATCH_ANY` when the
/// operation takes none). Returns the kernel's result (woken count for wakes, 0 or -1 for
/// waits).
fn futex(word: &AtomicU32, op: i32, val: u32, timeout: Option<Duration>, bits: u32) -> i64 {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned 32-bit location for the duration of the call; the
    // kernel reads it (waits) or uses its address as a key (wakes), and reads the optional
    // timespec; `uaddr2` is unused by these operations, and the bitset travels by value.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op | libc::FUTEX_PRIVATE_FLAG,
            val,
            ts_ptr,
            std::ptr::null::<u32>(),
            bits,
        )
    }
}

/// Block while `*word == expected`, at most `timeout` if given. Spurious returns are possible;
/// callers re-check their condition in a loop.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    futex(word, libc::FUTEX_WAIT, expected, timeout, u32::MAX);
}

/// Wake up to `count` threads blocked in [`wait`] on `word`.
pub fn wake(word: &AtomicU32, count: u32) {
    futex(
        word,
        libc::FUTEX_WAKE,
        count.min(i32::MAX as u32),
        None,
        u32::MAX,
    );
}

/// Like [`wait`] without a timeout, but the waiter carries `bits` (non-zero): only a
/// [`wake_bitset`] whose bits intersect them wakes it (`FUTEX_WAIT_BITSET`).
pub fn wait_bitset(word: &AtomicU32, expected: u32, bits: u32) {
    debug_assert!(bits != 0, "a futex bitset must not be empty");
    futex(word, libc::FUTEX_WAIT_BITSET, expected, None, bits);
}

/// Wake up to `count` threads blocked in [`wait_bitset`] on `word` whose bits intersect
/// `bits` (`FUTEX_WAKE_BITSET`); threads in plain [`wait`] match every bit. Returns how many
/// were woken.
pub fn wake_bitset(word: &AtomicU32, count: u32, bits: u32) -> usize {
    let woken = futex(
        word,
        libc::FUTEX_WAKE_BITSET,
        count.min(i32::MAX as u32),
        None,
        bits,
    );
    usize::try_from(woken).unwrap_or(0)
}

/// Waits until thread `tid` of this process sleeps in the futex system call: its state is
/// `S` and its current system call `futex` (a thread woken but not yet running is `R`, still
/// in the call). For tests that must wake a thread that really sleeps. Panics after a minute,
/// a hang guard.
#[cfg(test)]
pub(crate) fn wait_until_blocked_in_futex(tid: i32) {
    let task = format!("/proc/self/task/{tid}");
    let in_futex = || {
        let sleeping = std::fs::read_to_string(format!("{task}/stat")).is_ok_and(|stat| {
            // pid (comm) state …: the name may hold spaces, so look after the last ')'.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                == Some("S")
        });
        sleeping
            && std::fs::read_to_string(format!("{task}/syscall"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<i64>().ok())
                == Some(libc::SYS_futex)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !in_futex() {
        assert!(
            std::time::Instant::now() < deadline,
            "thread {tid} never blocked in a futex"
        );
        // The interval between looks.
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn wait_returns_when_value_differs_and_wake_releases_waiter() {
        let word = Arc::new(AtomicU32::new(0));
        wait(&word, 1, None); // value differs: returns at once
        let w = word.clone();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            tid_tx.send(crate::os::sched::current_tid()).unwrap();
            // Acquire: pairs with the Release store below.
            while w.load(Ordering::Acquire) == 0 {
                wait(&w, 0, None);
            }
        });
        // The wake below must find the waiter asleep (it has no timeout to fall back on).
        wait_until_blocked_in_futex(tid_rx.recv().unwrap());
        // Release: pairs with the waiter's Acquire load.
        word.store(1, Ordering::Release);
        wake(&word, u32::MAX);
        t.join().unwrap();
    }

    #[test]
    fn bitset_wakes_only_matching_waiters() {
        let word = Arc::new(AtomicU32::new(0));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let waiters: Vec<_> = [0b01u32, 0b10]
            .into_iter()
            .map(|bits| {
                let (w, stop, tid_tx) = (word.clone(), stop.clone(), tid_tx.clone());
                std::thread::spawn(move || {
                    tid_tx.send(crate::os::sched::current_tid()).unwrap();
                    while !stop.load(Ordering::Acquire) {
                        wait_bitset(&w, 0, bits);
                    }
                })
            })
            .collect();
        let tids: Vec<i32> = (0..2).map(|_| tid_rx.recv().unwrap()).collect();
        let both_asleep = || tids.iter().for_each(|&t| wait_until_blocked_in_futex(t));
        // Each waiter can be woken by its own bit, and only by it: once both sleep, a wake for
        // a bit nobody carries wakes nobody, and one for both bits wakes both.
        for bits in [0b01, 0b10] {
            both_asleep();
            assert_eq!(wake_bitset(&word, 1, bits), 1, "bits {bits:#b}");
        }
        both_asleep();
        assert_eq!(wake_bitset(&word, u32::MAX, 0b100), 0);
        assert_eq!(wake_bitset(&word, u32::MAX, 0b11), 2);
        stop.store(true, Ordering::Release);
        while waiters.iter().any(|w| !w.is_finished()) {
            wake_bitset(&word, u32::MAX, u32::MAX);
            std::thread::yield_now();
        }
    }
}
