//! `concord jvm attach PID [OPTIONS]`: loads the companion agent into a running JVM with
//! `jcmd PID JVMTI.agent_load LIB OPTIONS`, using the `jcmd` of that JVM's own JDK (beside
//! `/proc/PID/exe`) when there is one, else the one on `PATH`. A PID with no process is bad
//! input (exit 2), checked in `/proc` first; a process that is not a JVM (no `libjvm.so`
//! mapped) is refused; `jcmd`'s output is passed through (JDK 21+ print a warning about
//! dynamically loaded agents on the JVM's stderr), and its failure, or the agent's, is a failed
//! run (exit 1).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::{agent_library, AgentFlags};
use crate::console::{err, out};
use crate::RunFailed;

/// Flags of `concord jvm attach`.
#[derive(Args, Debug)]
pub struct AttachArgs {
    /// The process id of the running JVM.
    #[arg(value_name = "PID")]
    pub pid: u32,
    #[command(flatten)]
    pub agent: AgentFlags,
}

/// The directory of process `pid` in `/proc`, if the process exists.
fn proc_dir(pid: u32) -> Result<PathBuf> {
    let dir = PathBuf::from(format!("/proc/{pid}"));
    if pid == 0 || !dir.is_dir() {
        bail!(
            "no process {pid} (nothing at {}): it has ended or never existed (allowed: the PID of \
             a running JVM, e.g. from `jcmd -l`)",
            dir.display()
        );
    }
    Ok(dir)
}

/// Whether the memory map text `maps` shows HotSpot's `libjvm.so`.
fn maps_show_a_jvm(maps: &str) -> bool {
    maps.lines().any(|l| l.ends_with("/libjvm.so"))
}

/// The `jcmd` for the JVM whose executable is `exe`: beside it if there, else on `PATH`.
fn find_jcmd(exe: Option<&Path>) -> Result<PathBuf> {
    if let Some(jcmd) = exe.and_then(Path::parent).map(|d| d.join("jcmd")) {
        if jcmd.is_file() {
            return Ok(jcmd);
        }
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("jcmd"))
        .find(|j| j.is_file())
        .with_context(|| {
            format!(
                "no jcmd found (looked beside {} and on PATH): install the JDK's tools (e.g. \
                 openjdk-17-jdk-headless)",
                exe.map_or("the JVM's executable (unreadable)".into(), |e| e
                    .display()
                    .to_string())
            )
        })
}

/// What jcmd's output says about the agent load: `None` when it loaded, else why not.
pub fn load_failure(output: &str) -> Option<String> {
    let lower = output.to_ascii_lowercase();
    if let Some(code) = lower
        .lines()
        .find_map(|l| l.trim().strip_prefix("return code:"))
        .map(str::trim)
    {
        return (code != "0").then(|| format!("the agent's Agent_OnAttach returned {code}"));
    }
    if lower.contains("was not loaded") || lower.contains("exception") {
        return Some("jcmd says the agent was not loaded".into());
    }
    None
}

/// Runs `concord jvm attach`.
pub fn run(args: AttachArgs) -> Result<ExitCode> {
    let dir = proc_dir(args.pid)?;
    let exe = std::fs::read_link(dir.join("exe")).ok();
    if let Ok(maps) = std::fs::read_to_string(dir.join("maps")) {
        if !maps_show_a_jvm(&maps) {
            bail!(
                "process {} ({}) is not a HotSpot JVM: it has no libjvm.so mapped (allowed: the \
                 PID of a running JVM, e.g. from `jcmd -l`)",
                args.pid,
                exe.as_ref()
                    .map_or("its executable is unreadable".into(), |e| e
                        .display()
                        .to_string())
            );
        }
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = args.agent.encode(&cwd)?;
    let lib = agent_library()?;
    let jcmd = find_jcmd(exe.as_deref())?;
    let mut command = Command::new(&jcmd);
    command
        .arg(args.pid.to_string())
        .arg("JVMTI.agent_load")
        .arg(&lib);
    if !options.is_empty() {
        // Quoted: jcmd's argument parser would take `key=value` for an option of the command
        // itself (and keep only `key`); a quoted argument reaches the agent whole.
        if options.contains(['"', '\'']) {
            bail!("the agent's options {options} contain a quote, which jcmd cannot pass");
        }
        command.arg(format!("\"{options}\""));
    }
    let output = command
        .output()
        .with_context(|| format!("cannot start {}", jcmd.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    out!("{stdout}")?;
    err!("{stderr}");
    if !output.status.success() {
        return Err(RunFailed::wrap(anyhow::anyhow!(
            "{} {} JVMTI.agent_load failed ({})",
            jcmd.display(),
            args.pid,
            output.status
        )));
    }
    if let Some(why) = load_failure(&format!("{stdout}{stderr}")) {
        return Err(RunFailed::wrap(anyhow::anyhow!(
            "loading {} into JVM {} failed: {why} (the JVM's stderr says more)",
            lib.display(),
            args.pid
        )));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dead_pid_and_a_non_jvm_are_named() {
        let err = proc_dir(u32::MAX - 1).unwrap_err().to_string();
        assert!(
            err.starts_with("no process 4294967294 (nothing at /proc/4294967294)"),
            "{err}"
        );
        assert!(proc_dir(0).is_err());
        assert!(proc_dir(std::process::id()).is_ok());
        assert!(maps_show_a_jvm(
            "7f00-7f01 r-xp 0 08:01 12 /usr/lib/jvm/java-17/lib/server/libjvm.so"
        ));
        assert!(!maps_show_a_jvm(
            "7f00-7f01 r-xp 0 08:01 12 /usr/lib/libc.so.6"
        ));
    }

    #[test]
    fn jcmd_output_is_read() {
        assert_eq!(load_failure("123:\nreturn code: 0\n"), None);
        assert!(load_failure("123:\nreturn code: -1\n")
            .unwrap()
            .contains("returned -1"));
        assert!(load_failure("123:\n/x.so was not loaded.\n").is_some());
        assert_eq!(load_failure("123:\n"), None);
    }
}
