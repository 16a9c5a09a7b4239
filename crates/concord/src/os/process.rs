//! Other processes: sending a signal to a child the CLI started (`concord jvm run` passes a
//! SIGTERM or SIGHUP it receives on to the JVM it runs, so that the JVM shuts down as it would
//! have without the wrapper), and children that die with their parent (`concord jvm bench`'s
//! JVMs, so that quitting at once leaves none behind).

use std::io;
use std::process::Command;

/// Makes the child that `cmd` starts get SIGKILL when the thread that starts it ends, and so
/// when this process ends in any way (`PR_SET_PDEATHSIG`, set in the child between fork and
/// exec). Start it from a thread that lives as long as the child should, such as the main
/// thread. If this process is already gone when the child sets it, the child does not run.
pub fn kill_child_with_parent(cmd: &mut Command) {
    signal_child_with_parent(cmd, libc::SIGKILL);
}

/// As [`kill_child_with_parent`], with `signal` instead of SIGKILL: `concord jvm run` sends
/// its JVM SIGTERM, so that the JVM shuts down in order and its agent still writes its
/// outputs.
pub fn signal_child_with_parent(cmd: &mut Command, signal: i32) {
    use std::os::unix::process::CommandExt;
    // SAFETY: getpid has no arguments and cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the forked child before exec and only makes two system
    // calls that are async-signal-safe (prctl, getppid); it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, signal as libc::c_ulong) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                return Err(io::Error::other(
                    "the parent ended before the child started",
                ));
            }
            Ok(())
        });
    }
}

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

    #[test]
    fn a_child_started_to_die_with_its_parent_dies_when_the_starting_thread_ends() {
        // The thread that starts the child stands in for the process: when it ends, the
        // kernel sends the child SIGKILL.
        let child = std::thread::spawn(|| {
            let mut cmd = Command::new("sleep");
            cmd.arg("30");
            kill_child_with_parent(&mut cmd);
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        let mut child = child;
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
    }
}
