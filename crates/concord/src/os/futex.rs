//! Linux futex wait/wake on a 32-bit atomic: the primitive behind lazy GC-thread parking.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Block while `*word == expected`, at most `timeout` if given. Spurious returns are possible;
/// callers re-check their condition in a loop.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a valid, aligned 32-bit location for the duration of the call; the
    // kernel only reads it and the optional timespec.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            ts_ptr,
        );
    }
}

/// Wake up to `count` threads blocked in [`wait`] on `word`.
pub fn wake(word: &AtomicU32, count: u32) {
    // SAFETY: FUTEX_WAKE only uses the address as a key; it does not access memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            count.min(i32::MAX as u32) as i32,
        );
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
        let t = std::thread::spawn(move || {
            // Acquire: pairs with the Release store below.
            while w.load(Ordering::Acquire) == 0 {
                wait(&w, 0, Some(Duration::from_millis(100)));
            }
        });
        std::thread::sleep(Duration::from_millis(10));
        // Release: pairs with the waiter's Acquire load.
        word.store(1, Ordering::Release);
        wake(&word, u32::MAX);
        t.join().unwrap();
    }
}
