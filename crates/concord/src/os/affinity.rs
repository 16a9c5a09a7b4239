//! Thread CPU affinity: read and set the set of CPUs a thread of this process may run on.
//!
//! One API, by kernel thread id ([`thread_affinity`], [`set_thread_affinity`]), with
//! conveniences for the calling thread ([`current_thread_affinity`],
//! [`set_current_thread_affinity`]). Masks are sized dynamically, so machines with more CPUs
//! than glibc's fixed `cpu_set_t` holds work too.

use std::io;

use super::procfs::thread_exists;
use super::sched::current_tid;
use super::CPU_ID_LIMIT;

const BITS_PER_WORD: usize = 64;
/// glibc's `cpu_set_t` holds 1024 CPUs; start there and grow when the kernel wants more.
const INITIAL_MASK_WORDS: usize = 1024 / BITS_PER_WORD;
const MAX_MASK_WORDS: usize = CPU_ID_LIMIT as usize / BITS_PER_WORD;

fn mask_to_cpus(words: &[u64]) -> Vec<u32> {
    let mut cpus = Vec::new();
    for (w, &word) in words.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            cpus.push((w * BITS_PER_WORD + b) as u32);
            bits &= bits - 1;
        }
    }
    cpus
}

fn invalid_input(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// The CPUs thread `tid` (a kernel thread id; 0 = the calling thread) may run on, ascending.
pub fn thread_affinity(tid: i32) -> io::Result<Vec<u32>> {
    let mut words = INITIAL_MASK_WORDS;
    loop {
        let mut mask = vec![0u64; words];
        // SAFETY: `mask` is a writable, 8-byte aligned buffer of exactly the byte size passed;
        // the kernel writes at most that many bytes of unsigned longs, which is the layout of
        // a (dynamically sized) cpu_set_t on 64-bit Linux.
        let rc = unsafe {
            libc::sched_getaffinity(
                tid,
                words * std::mem::size_of::<u64>(),
                mask.as_mut_ptr().cast::<libc::cpu_set_t>(),
            )
        };
        if rc == 0 {
            return Ok(mask_to_cpus(&mask));
        }
        let err = io::Error::last_os_error();
        // EINVAL: the buffer is smaller than the kernel's CPU mask; retry with a larger one.
        if err.raw_os_error() == Some(libc::EINVAL) && words < MAX_MASK_WORDS {
            words *= 2;
            continue;
        }
        return Err(err);
    }
}

/// The CPUs the calling thread may run on, ascending.
pub fn current_thread_affinity() -> io::Result<Vec<u32>> {
    thread_affinity(0)
}

/// Restrict thread `tid` of **this process** to `cpus`.
///
/// Linux lets a thread change the affinity of any thread of its own process. `tid` must be a
/// positive kernel thread id listed in `/proc/self/task` (so a stale or foreign id never moves
/// another process's thread); `cpus` must be non-empty and below [`CPU_ID_LIMIT`]. The kernel
/// answers `EINVAL` when none of `cpus` is usable (offline, nonexistent, or outside the
/// cgroup's cpuset) and `EPERM` when we lack the right.
pub fn set_thread_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    if tid > 0 && !thread_exists(tid) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("thread {tid} is not a thread of this process"),
        ));
    }
    set_own_thread_affinity(tid, cpus)
}

/// [`set_thread_affinity`] for a thread the caller started itself (a GC worker, whose id the
/// pool recorded), without the `/proc/self/task` check: no file is touched, so it may run
/// inside a pause.
pub(crate) fn set_own_thread_affinity(tid: i32, cpus: &[u32]) -> io::Result<()> {
    if tid <= 0 {
        return Err(invalid_input(format!(
            "thread id {tid} is not a kernel thread id"
        )));
    }
    let Some(&max) = cpus.iter().max() else {
        return Err(invalid_input(
            "an empty CPU set would leave the thread nowhere to run".into(),
        ));
    };
    if max >= CPU_ID_LIMIT {
        return Err(invalid_input(format!(
            "CPU {max} is beyond the largest supported CPU id ({})",
            CPU_ID_LIMIT - 1
        )));
    }
    let words = (max as usize / BITS_PER_WORD + 1).max(INITIAL_MASK_WORDS);
    let mut mask = vec![0u64; words];
    for &cpu in cpus {
        mask[cpu as usize / BITS_PER_WORD] |= 1u64 << (cpu as usize % BITS_PER_WORD);
    }
    // SAFETY: `mask` is a readable, 8-byte aligned buffer of exactly the byte size passed, laid
    // out as a cpu_set_t of that size; `tid` is a thread of this process (checked by
    // `set_thread_affinity`, or started by the caller).
    let rc = unsafe {
        libc::sched_setaffinity(
            tid,
            words * std::mem::size_of::<u64>(),
            mask.as_ptr().cast::<libc::cpu_set_t>(),
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Restrict the calling thread to `cpus` (see [`set_thread_affinity`]).
pub fn set_current_thread_affinity(cpus: &[u32]) -> io::Result<()> {
    set_thread_affinity(current_tid(), cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_bits_become_cpu_ids() {
        assert_eq!(mask_to_cpus(&[0b1011, 1 << 63, 1]), vec![0, 1, 3, 127, 128]);
        assert!(mask_to_cpus(&[0, 0]).is_empty());
    }

    #[test]
    fn own_affinity_by_tid_and_as_the_caller_agree() {
        let mine = current_thread_affinity().unwrap();
        assert!(!mine.is_empty());
        assert_eq!(thread_affinity(current_tid()).unwrap(), mine);
    }

    #[test]
    fn pin_and_restore_on_a_scratch_thread() {
        std::thread::spawn(|| {
            let all = current_thread_affinity().unwrap();
            set_current_thread_affinity(&all[..1]).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), all[..1].to_vec());
            assert_eq!(crate::os::cpu::current_cpu(), Some(all[0]));
            set_current_thread_affinity(&all).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), all);
            // A CPU the machine does not have: the kernel refuses, nothing changes.
            assert!(set_current_thread_affinity(&[CPU_ID_LIMIT - 1]).is_err());
            assert_eq!(current_thread_affinity().unwrap(), all);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn set_thread_affinity_rejects_bad_input_without_a_syscall() {
        assert_eq!(
            set_thread_affinity(0, &[0]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_current_thread_affinity(&[]).unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(
            set_current_thread_affinity(&[CPU_ID_LIMIT])
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidInput
        );
        // pid 1 is never a thread of a test process.
        assert_eq!(
            set_thread_affinity(1, &[0]).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
