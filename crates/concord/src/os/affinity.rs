//! Thread CPU affinity: read and set the set of CPUs the calling thread may run on.

use std::io;

/// Upper bound on CPU ids handled here (the size of glibc's `cpu_set_t`).
const MAX_CPUS: usize = libc::CPU_SETSIZE as usize;

/// The CPUs the calling thread may run on, ascending.
pub fn current_thread_affinity() -> io::Result<Vec<u32>> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed; pid 0 = this thread.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..MAX_CPUS)
        // SAFETY: `cpu < CPU_SETSIZE`, inside the set.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .map(|cpu| cpu as u32)
        .collect())
}

/// Restrict the calling thread to `cpus` (ids at or above `CPU_SETSIZE` are an error).
pub fn set_current_thread_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: an all-zero cpu_set_t is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu as usize >= MAX_CPUS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {cpu} is beyond the largest CPU id supported ({MAX_CPUS})"),
            ));
        }
        // SAFETY: `cpu < CPU_SETSIZE` was checked above.
        unsafe { libc::CPU_SET(cpu as usize, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 = this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_and_restore_on_a_scratch_thread() {
        std::thread::spawn(|| {
            let all = current_thread_affinity().unwrap();
            assert!(!all.is_empty());
            set_current_thread_affinity(&all[..1]).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), all[..1].to_vec());
            assert_eq!(crate::os::cpu::current_cpu(), Some(all[0]));
            set_current_thread_affinity(&all).unwrap();
            assert_eq!(current_thread_affinity().unwrap(), all);
            assert!(set_current_thread_affinity(&[MAX_CPUS as u32]).is_err());
        })
        .join()
        .unwrap();
    }
}
