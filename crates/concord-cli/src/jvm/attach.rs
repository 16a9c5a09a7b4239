//! `concord jvm attach PID [OPTIONS]`: loads the companion agent into a running JVM with
//! `jcmd PID JVMTI.agent_load LIB OPTIONS`, using the `jcmd` of that JVM's own JDK (beside
//! `/proc/PID/exe`) when there is one, else the one on `PATH`.
//!
//! What the attach needs is checked first, in `/proc`, and each lack refused with its reason
//! (exit 2), before `jcmd` sends the process anything (a SIGQUIT would kill a process that is
//! not a JVM): a process PID; `concord` running as its user or as root (HotSpot's attach
//! listener accepts no one else); a readable `/proc/PID/maps` showing `libjvm.so`; and a JVM
//! that can answer an attach (not started with `-XX:+DisableAttachMechanism`; with `-Xrs`
//! HotSpot starts its attach listener at start-up instead of on SIGQUIT, so that works). `jcmd`'s output is passed through when the load
//! succeeds (JDK 21+ print a warning about dynamically loaded agents on the JVM's stderr); its
//! failure, or the agent's, is a failed run (exit 1), said in one line, with `jcmd`'s own
//! output after it, Java stack frames left out.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::Args;

use super::launch::{visible_jvm_options, FoundOption};
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

/// The effective user id in a `/proc/PID/status` text (the second number of `Uid:`).
fn effective_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1)?.parse().ok())
}

/// Checks that a process running as effective user `target` accepts an attach from this
/// process (effective user `own`): the same user, or root.
fn check_user(pid: u32, target: u32, own: u32) -> Result<()> {
    if own != 0 && own != target {
        bail!(
            "process {pid} runs as uid {target} and concord as uid {own}: a JVM accepts an \
             attach only from its own user or root (allowed: run concord jvm attach as uid \
             {target}, e.g. with sudo -u '#{target}', or as root)"
        );
    }
    Ok(())
}

/// The last `-XX:+NAME`/`-XX:-NAME` among `options`: whether the flag is on, and where it was
/// given.
fn last_flag<'a>(options: &'a [FoundOption], name: &str) -> Option<(bool, &'a FoundOption)> {
    options.iter().rev().find_map(|f| {
        let flag = f.option.strip_prefix("-XX:")?;
        match flag.strip_suffix(name)? {
            "+" => Some((true, f)),
            "-" => Some((false, f)),
            _ => None,
        }
    })
}

/// Checks, from the JVM's `options` (as [`visible_jvm_options`] found them in its command line
/// and environment), that it can answer an attach.
fn check_attachable(pid: u32, options: &[FoundOption]) -> Result<()> {
    if let Some((true, f)) = last_flag(options, "DisableAttachMechanism") {
        bail!(
            "JVM {pid} was started with {} ({}): it accepts no attach (allowed: a JVM started \
             without it; or start the JVM with the agent: concord jvm run)",
            f.option,
            f.source
        );
    }
    Ok(())
}

/// The JVM options of process `dir` (`/proc/PID`): its command line's and those of the
/// variables in its environment (argument files read from its working directory); empty when
/// they cannot be read.
fn options_of(dir: &Path) -> Vec<FoundOption> {
    let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .skip(1)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
    let variables: Vec<(String, String)> = environ
        .split(|b| *b == 0)
        .filter_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (name, value) = text.split_once('=')?;
            Some((name.to_string(), value.to_string()))
        })
        .collect();
    let env = |name: &str| {
        variables
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    // Relative argument files are the JVM's, in its working directory.
    let args: Vec<String> = args
        .into_iter()
        .map(|a| match a.strip_prefix('@') {
            Some(file) if !file.starts_with('@') && !file.starts_with('/') => {
                format!("@{}", dir.join("cwd").join(file).display())
            }
            _ => a,
        })
        .collect();
    visible_jvm_options(&args, &env).unwrap_or_default()
}

/// Lines of Java stack frames in a tool's output (`\tat …`, `\t... 3 more`).
fn is_stack_frame(line: &str) -> bool {
    let t = line.trim_start();
    line.starts_with(char::is_whitespace)
        && (t.starts_with("at ") || (t.starts_with("... ") && t.ends_with(" more")))
}

/// jcmd's `output` without Java stack frames, and its first exception line (the reason), if
/// any.
fn without_stack_frames(output: &str) -> (Vec<&str>, Option<&str>) {
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| !l.trim().is_empty() && !is_stack_frame(l))
        .collect();
    let reason = lines.iter().copied().find(|l| {
        let first = l.split(':').next().unwrap_or("");
        first.ends_with("Exception") || first.ends_with("Error")
    });
    (lines, reason)
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
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = args.agent.encode(&cwd)?;
    let dir = proc_dir(args.pid)?;
    let status = std::fs::read_to_string(dir.join("status"))
        .with_context(|| format!("cannot read {}", dir.join("status").display()))?;
    let own = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| effective_uid(&s));
    if let (Some(target), Some(own)) = (effective_uid(&status), own) {
        check_user(args.pid, target, own)?;
    }
    let exe = std::fs::read_link(dir.join("exe")).ok();
    let maps_path = dir.join("maps");
    let maps = std::fs::read_to_string(&maps_path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read {} ({e}): concord cannot tell whether process {} is a JVM, and jcmd \
             would send a process that is not one a SIGQUIT, which ends it (allowed: a process \
             whose /proc entry concord may read: its own user's or, as root, any not hidden by \
             the kernel's ptrace or hidepid rules)",
            maps_path.display(),
            args.pid
        )
    })?;
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
    check_attachable(args.pid, &options_of(&dir))?;
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
    let both = format!("{stdout}{stderr}");
    let failure = if !output.status.success() {
        Some(format!("jcmd failed ({})", output.status))
    } else {
        load_failure(&both)
    };
    let Some(why) = failure else {
        out!("{stdout}")?;
        err!("{stderr}");
        return Ok(ExitCode::SUCCESS);
    };
    let (lines, reason) = without_stack_frames(&both);
    let reason = reason.map_or(String::new(), |r| format!(": {}", r.trim()));
    let said: String = lines.iter().map(|l| format!("\n  {l}")).collect();
    Err(RunFailed::wrap(anyhow::anyhow!(
        "loading {} into JVM {} failed: {why}{reason} (the JVM's stderr may say more); {} \
         said:{said}",
        lib.display(),
        args.pid,
        jcmd.display()
    )))
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
    fn what_the_attach_needs_is_checked() {
        let status = "Name:\tjava\nUid:\t1000\t1001\t1001\t1001\n";
        assert_eq!(effective_uid(status), Some(1001));
        check_user(7, 1001, 1001).unwrap();
        check_user(7, 1001, 0).unwrap();
        let err = check_user(7, 0, 1001).unwrap_err().to_string();
        assert!(
            err.starts_with("process 7 runs as uid 0 and concord as uid 1001"),
            "{err}"
        );
        let found = |options: &[&str]| -> Vec<FoundOption> {
            options
                .iter()
                .map(|o| FoundOption {
                    option: o.to_string(),
                    source: "the command line".into(),
                })
                .collect()
        };
        check_attachable(7, &found(&["-Xmx1g", "-Xrs"])).unwrap();
        let err = check_attachable(7, &found(&["-XX:+DisableAttachMechanism"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "JVM 7 was started with -XX:+DisableAttachMechanism (the command line)"
            ),
            "{err}"
        );
        check_attachable(
            7,
            &found(&["-XX:+DisableAttachMechanism", "-XX:-DisableAttachMechanism"]),
        )
        .unwrap();
    }

    #[test]
    fn stack_frames_are_left_out_of_jcmds_output() {
        let output = "27041:\njava.io.IOException: Operation not permitted\n\tat \
                      jdk.attach/sun.tools.attach.VirtualMachineImpl.sendQuitTo(Native Method)\n\
                      \tat jdk.jcmd/sun.tools.jcmd.JCmd.main(JCmd.java:97)\n\t... 3 more\n";
        let (lines, reason) = without_stack_frames(output);
        assert_eq!(
            lines,
            vec!["27041:", "java.io.IOException: Operation not permitted"]
        );
        assert_eq!(reason, Some("java.io.IOException: Operation not permitted"));
        assert_eq!(without_stack_frames("1:\nreturn code: -1\n").1, None);
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
