//! Other processes: sending a signal to a child the CLI started (`concord jvm run` passes a
//! SIGTERM or SIGHUP it receives on to the JVM it runs, so that the JVM shuts down as it would
//! have without the wrapper).

use std::io;

/// Sends `signal` to process `pid`. `pid` must be positive: 0 and negative ids mean process
/// groups to `kill(2)`, which this function never targets.
pub fn send_signal(pid: u32, signal: i32) -> io::Result<()> {
    let pid = libc::pid_t::try_from(pid)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a process id"))?;
    // SAFETY: kill(2) takes two integers and touches no memory of this process; `pid` is a
    // single positive process id, never a group.
    let rc = unsafe { libc::kill(pid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_reaches_a_child_and_group_ids_are_refused() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        send_signal(child.id(), libc::SIGTERM).unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGTERM));
        assert!(send_signal(0, libc::SIGTERM).is_err());
        assert!(send_signal(u32::MAX, libc::SIGTERM).is_err());
    }
}
