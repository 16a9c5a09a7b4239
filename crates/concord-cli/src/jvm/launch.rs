//! `concord jvm run [OPTIONS] -- <java> <args…>`: starts the JVM with the companion agent
//! (`-agentpath:LIB=OPTIONS`) and, when asked, 002's launch-time THP rule (`--thp`) and an
//! asynchronous GC log (`--async-log`). The flags are inserted right after the java command,
//! before the user's own; a user flag that conflicts with one of them is refused, never
//! rewritten, and every flag added is said on stderr.
//!
//! stdin, stdout and stderr are the JVM's; SIGINT, SIGTERM and SIGHUP sent to `concord` are
//! passed on to the JVM (Ctrl-C reaches it directly too; a second SIGINT during its shutdown is
//! harmless). The exit status is the JVM's (128 + N when signal N ended it); a `--report`
//! the agent did not write makes an otherwise successful run fail (exit 1).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::format_size;
use concord::os::vm::HugePageAdvice;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use super::{agent_library, AgentFlags, AGENT_FILE};
use crate::console::errln;
use crate::flags::Size;
use crate::RunFailed;

/// The margin `--thp dynamic` asks above the heap when `--thp-margin` is not given (as
/// `concord run`'s).
const DEFAULT_THP_MARGIN: u64 = 1 << 30;

/// Flags of `concord jvm run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentFlags,
    /// Transparent huge pages for the Java heap: never (-XX:-UseTransparentHugePages), always
    /// (-XX:+UseTransparentHugePages) or dynamic (002's launch-time rule: + only when
    /// MemAvailable is at least -Xmx plus --thp-margin).
    #[arg(long, value_name = "MODE")]
    pub thp: Option<ThpChoice>,
    /// The margin --thp dynamic asks above the maximum heap (default 1g).
    #[arg(long = "thp-margin", value_name = "SIZE")]
    pub thp_margin: Option<Size>,
    /// Write the GC log asynchronously (adds -Xlog:async, JDK 17+), so a stalled log device
    /// does not lengthen the pauses (002).
    #[arg(long = "async-log")]
    pub async_log: bool,
    /// The java command and its arguments, after `--`.
    #[arg(last = true, value_name = "JAVA ARGS")]
    pub command: Vec<String>,
}

/// The `--thp` modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpChoice {
    Never,
    Always,
    Dynamic,
}

impl std::str::FromStr for ThpChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "never" => Ok(ThpChoice::Never),
            "always" => Ok(ThpChoice::Always),
            "dynamic" => Ok(ThpChoice::Dynamic),
            _ => Err("is not a THP mode for a JVM (allowed: never, always, dynamic)".into()),
        }
    }
}

/// What the machine says, for `--thp dynamic`.
#[derive(Clone, Copy, Debug)]
pub struct MemoryFacts {
    /// `MemAvailable`, if it could be read.
    pub available: Option<u64>,
    /// The memory HotSpot sizes its default heap from (physical memory capped by the cgroup
    /// limit), if it could be read.
    pub physical: Option<u64>,
}

impl MemoryFacts {
    /// The facts of this machine now.
    pub fn read() -> MemoryFacts {
        MemoryFacts {
            available: concord::os::thp::mem_available().ok(),
            physical: concord::os::memory::memory_limit()
                .ok()
                .flatten()
                .map(|l| l.bytes),
        }
    }
}

/// A JVM command line with the companion's flags, and what was decided, in words.
#[derive(Debug, PartialEq)]
pub struct Launch {
    /// The java command, the flags added, then the user's arguments.
    pub argv: Vec<String>,
    /// One line per decision, for stderr.
    pub notes: Vec<String>,
}

/// The JVM options at the start of `args` (the java command's arguments): up to the main
/// class, `-jar FILE` or `-m MODULE`, with the values of the options that take one.
pub fn jvm_options(args: &[String]) -> &[String] {
    const WITH_VALUE: [&str; 12] = [
        "-cp",
        "-classpath",
        "--class-path",
        "-p",
        "--module-path",
        "--upgrade-module-path",
        "--add-modules",
        "--add-reads",
        "--add-exports",
        "--add-opens",
        "--limit-modules",
        "--patch-module",
    ];
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if !a.starts_with('-') || a == "-jar" || a == "-m" || a == "--module" {
            break;
        }
        if a.starts_with("--module=") || a == "--source" {
            break;
        }
        i += if WITH_VALUE.contains(&a) { 2 } else { 1 };
    }
    &args[..i.min(args.len())]
}

/// A HotSpot size (`512m`, `2G`, `1048576`, `4t`) in bytes.
pub fn parse_java_size(text: &str) -> Option<u64> {
    let digits_end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(digits_end);
    let n: u64 = digits.parse().ok()?;
    let shift = match unit {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        _ => return None,
    };
    n.checked_mul(1u64 << shift)
}

/// The maximum heap the options set, and where it comes from: the last `-Xmx` or
/// `-XX:MaxHeapSize=`, else HotSpot's default (`MaxRAMPercentage`, 25 %, of `MaxRAM` or the
/// machine's memory).
pub fn max_heap(options: &[String], physical: Option<u64>) -> Result<(u64, String)> {
    let mut explicit = None;
    let mut percent = 25.0f64;
    let mut max_ram = None;
    for option in options {
        if let Some(v) = option
            .strip_prefix("-Xmx")
            .or_else(|| option.strip_prefix("-XX:MaxHeapSize="))
        {
            let bytes = parse_java_size(v).with_context(|| {
                format!("{option}: not a HotSpot size (allowed: digits with k, m, g or t)")
            })?;
            explicit = Some((bytes, option.clone()));
        } else if let Some(v) = option.strip_prefix("-XX:MaxRAMPercentage=") {
            percent = v
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .with_context(|| format!("{option}: not a percentage (allowed: 0 to 100)"))?;
        } else if let Some(v) = option.strip_prefix("-XX:MaxRAM=") {
            max_ram = Some(parse_java_size(v).with_context(|| {
                format!("{option}: not a HotSpot size (allowed: digits with k, m, g or t)")
            })?);
        }
    }
    if let Some(found) = explicit {
        return Ok(found);
    }
    let (ram, whose) = match (max_ram, physical) {
        (Some(r), _) => (r, "-XX:MaxRAM"),
        (None, Some(p)) => (p, "the machine's memory"),
        (None, None) => bail!(
            "--thp dynamic: the command sets no -Xmx and the machine's memory could not be read \
             (allowed: give -Xmx)"
        ),
    };
    let bytes = (ram as f64 * percent / 100.0) as u64;
    Ok((
        bytes,
        format!(
            "HotSpot's default, {percent}% of {whose} ({})",
            format_size(ram as usize)
        ),
    ))
}

/// The command line for `command` (the java command and its arguments) with the agent's
/// `-agentpath:` flag, the THP flag of `thp` and `-Xlog:async` when `async_log`; refuses a user
/// flag that conflicts with one of them.
pub fn plan_launch(
    command: &[String],
    agentpath: String,
    thp: Option<(ThpChoice, u64)>,
    memory: MemoryFacts,
    async_log: bool,
) -> Result<Launch> {
    let Some((java, args)) = command.split_first() else {
        bail!(
            "no java command after `--` (usage: concord jvm run [OPTIONS] -- java [JVM options] \
             MainClass [args])"
        );
    };
    let options = jvm_options(args);
    let mut notes = Vec::new();
    if let Some(own) = options.iter().find(|o| {
        (o.starts_with("-agentpath:") || o.starts_with("-agentlib:")) && o.contains("concord_jvm")
    }) {
        bail!(
            "the command already loads the companion agent ({own}); concord jvm run adds \
             -agentpath for {AGENT_FILE} itself: drop yours, or run java without concord"
        );
    }
    let mut added = vec![agentpath];
    if let Some((choice, margin)) = thp {
        if let Some(own) = options
            .iter()
            .find(|o| o.contains("UseTransparentHugePages"))
        {
            bail!(
                "the command sets {own} and --thp decides that flag too: give one of them \
                 (allowed: --thp never|always|dynamic, or your own flag without --thp)"
            );
        }
        let system = concord::os::thp::SystemThp::read().enabled;
        let kernel = match system.as_deref() {
            Some("never") => " (the system's THP setting 'enabled' is never: the kernel will \
                              give no huge pages all the same)"
                .to_string(),
            Some(s) => format!(" (the system's THP setting 'enabled' is {s})"),
            None => String::new(),
        };
        match choice {
            ThpChoice::Never => {
                added.push("-XX:-UseTransparentHugePages".into());
                notes.push(
                    "--thp never: adding -XX:-UseTransparentHugePages (HotSpot's default, made \
                     explicit)"
                        .into(),
                );
            }
            ThpChoice::Always => {
                added.push("-XX:+UseTransparentHugePages".into());
                notes.push(format!(
                    "--thp always: adding -XX:+UseTransparentHugePages{kernel}"
                ));
            }
            ThpChoice::Dynamic => {
                let (heap, whose) = max_heap(options, memory.physical)?;
                let need = heap.saturating_add(margin);
                let sizes = format!(
                    "max heap {} ({whose}) + margin {} = {}",
                    format_size(heap as usize),
                    format_size(margin as usize),
                    format_size(need as usize)
                );
                // 002's rule as Concord's own heaps apply it at launch.
                let advice = concord::os::thp::dynamic_advice(memory.available, heap, margin);
                match memory.available {
                    Some(a) if advice == HugePageAdvice::Huge => {
                        added.push("-XX:+UseTransparentHugePages".into());
                        notes.push(format!(
                            "--thp dynamic: MemAvailable {} >= {sizes}: adding \
                             -XX:+UseTransparentHugePages{kernel}",
                            format_size(a as usize)
                        ));
                    }
                    Some(a) => notes.push(format!(
                        "--thp dynamic: MemAvailable {} < {sizes}: not adding \
                         -XX:+UseTransparentHugePages (the heap stays on small pages, so memory \
                         pressure cannot make the kernel split huge pages in a pause)",
                        format_size(a as usize)
                    )),
                    None => notes.push(format!(
                        "--thp dynamic: MemAvailable could not be read: not adding \
                         -XX:+UseTransparentHugePages ({sizes})"
                    )),
                }
            }
        }
    }
    if async_log {
        if let Some(own) = options.iter().find(|o| *o == "-Xlog:async") {
            notes.push(format!(
                "--async-log: the command already has {own}; not adding it again"
            ));
        } else {
            added.push("-Xlog:async".into());
            notes.push(
                "--async-log: adding -Xlog:async (log lines are written by a separate thread, \
                 not in the pause)"
                    .into(),
            );
        }
    }
    let mut argv = vec![java.clone()];
    argv.extend(added);
    argv.extend(args.iter().cloned());
    Ok(Launch { argv, notes })
}

/// The `-agentpath:` flag for `lib` with the encoded `options`.
pub fn agentpath(lib: &Path, options: &str) -> Result<String> {
    let Some(lib) = lib.to_str() else {
        bail!("the agent library's path {} is not UTF-8", lib.display());
    };
    if lib.contains('=') {
        bail!("the agent library's path {lib} contains '=', which -agentpath cannot take");
    }
    Ok(if options.is_empty() {
        format!("-agentpath:{lib}")
    } else {
        format!("-agentpath:{lib}={options}")
    })
}

/// The exit status a shell would report for `status`: the code, or 128 + the signal.
pub fn shell_status(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => (code & 0xff) as u8,
        (None, Some(signal)) => (128 + signal).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}

/// Runs `argv` with inherited stdio until it ends, passing SIGINT, SIGTERM and SIGHUP sent to
/// this process on to it.
pub fn run_forwarding_signals(argv: &[String]) -> Result<ExitStatus> {
    let signals = [SIGINT, SIGTERM, SIGHUP];
    let flags: Vec<Arc<AtomicBool>> = signals
        .iter()
        .map(|_| Arc::new(AtomicBool::new(false)))
        .collect();
    let mut ids = Vec::new();
    for (signal, flag) in signals.iter().zip(&flags) {
        ids.push(signal_hook::flag::register(*signal, flag.clone())?);
    }
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .spawn()
        .with_context(|| format!("cannot start the java command {}", argv[0]))?;
    let status = loop {
        // Forwarded only while the child is not yet reaped: its id cannot be reused before.
        for (signal, flag) in signals.iter().zip(&flags) {
            if flag.swap(false, Ordering::SeqCst) {
                let _ = concord::os::process::send_signal(child.id(), *signal);
            }
        }
        match child.try_wait()? {
            Some(status) => break status,
            None => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    for id in ids {
        signal_hook::low_level::unregister(id);
    }
    Ok(status)
}

/// Runs `concord jvm run`.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    if args.thp_margin.is_some() && args.thp != Some(ThpChoice::Dynamic) {
        bail!("--thp-margin is the margin of --thp dynamic; give --thp dynamic with it");
    }
    if args.command.is_empty() {
        bail!(
            "no java command after `--` (usage: concord jvm run [OPTIONS] -- java [JVM options] \
             MainClass [args])"
        );
    }
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let options = args.agent.encode(&cwd)?;
    let lib = agent_library()?;
    let margin = args
        .thp_margin
        .as_ref()
        .map_or(DEFAULT_THP_MARGIN, |m| m.bytes() as u64);
    let launch = plan_launch(
        &args.command,
        agentpath(&lib, &options)?,
        args.thp.map(|c| (c, margin)),
        MemoryFacts::read(),
        args.async_log,
    )?;
    for note in &launch.notes {
        errln!("concord jvm: {note}");
    }
    let started = SystemTime::now();
    let status = run_forwarding_signals(&launch.argv)?;
    let code = shell_status(status);
    if code == 0 {
        if let Some(report) = &args.agent.report {
            check_written(report, started)?;
        }
    }
    Ok(ExitCode::from(code))
}

/// Fails the run when `path` was not written since `since`.
fn check_written(path: &PathBuf, since: SystemTime) -> Result<()> {
    let fresh = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t >= since);
    if !fresh {
        return Err(RunFailed::wrap(anyhow::anyhow!(
            "the JVM ended but the agent did not write its report {} (see the JVM's stderr)",
            path.display()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    const GIB: u64 = 1 << 30;

    fn facts(available: u64) -> MemoryFacts {
        MemoryFacts {
            available: Some(available),
            physical: Some(16 * GIB),
        }
    }

    #[test]
    fn options_end_at_the_main_class() {
        let args = v(&["-Xmx1g", "-cp", "x", "Main", "-Xmx2g"]);
        assert_eq!(jvm_options(&args), v(&["-Xmx1g", "-cp", "x"]));
        assert_eq!(jvm_options(&v(&["-jar", "a.jar", "-Xmx9g"])), v(&[]));
        assert_eq!(jvm_options(&v(&["-version"])), v(&["-version"]));
    }

    #[test]
    fn the_max_heap_is_the_last_given_or_hotspots_default() {
        let (b, w) = max_heap(&v(&["-Xmx1g", "-XX:MaxHeapSize=512m"]), None).unwrap();
        assert_eq!((b, w.as_str()), (512 << 20, "-XX:MaxHeapSize=512m"));
        let (b, w) = max_heap(&[], Some(16 * GIB)).unwrap();
        assert_eq!(b, 4 * GIB);
        assert!(
            w.starts_with("HotSpot's default, 25% of the machine's memory"),
            "{w}"
        );
        let (b, _) = max_heap(&v(&["-XX:MaxRAMPercentage=50"]), Some(16 * GIB)).unwrap();
        assert_eq!(b, 8 * GIB);
        let err = max_heap(&v(&["-Xmx1q"]), None).unwrap_err().to_string();
        assert!(err.contains("-Xmx1q: not a HotSpot size"), "{err}");
        assert_eq!(parse_java_size("2T"), Some(2 << 40));
        assert_eq!(parse_java_size("m"), None);
    }

    #[test]
    fn flags_go_right_after_the_java_command() {
        let l = plan_launch(
            &v(&["java", "-Xmx64m", "Main", "a"]),
            "-agentpath:/l.so=gc-affinity=static".into(),
            None,
            facts(GIB),
            true,
        )
        .unwrap();
        assert_eq!(
            l.argv,
            v(&[
                "java",
                "-agentpath:/l.so=gc-affinity=static",
                "-Xlog:async",
                "-Xmx64m",
                "Main",
                "a"
            ])
        );
        assert!(l.notes[0].contains("adding -Xlog:async"), "{:?}", l.notes);
        let err = plan_launch(&[], "-agentpath:/l.so".into(), None, facts(GIB), false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("no java command after `--`"), "{err}");
    }

    #[test]
    fn thp_dynamic_follows_the_launch_rule() {
        let cmd = v(&["java", "-Xmx2g", "Main"]);
        let plenty = plan_launch(
            &cmd,
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Dynamic, GIB)),
            facts(4 * GIB),
            false,
        )
        .unwrap();
        assert_eq!(plenty.argv[2], "-XX:+UseTransparentHugePages");
        assert!(
            plenty.notes[0].starts_with("--thp dynamic: MemAvailable 4G >= max heap 2G (-Xmx2g)"),
            "{:?}",
            plenty.notes
        );
        let short = plan_launch(
            &cmd,
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Dynamic, GIB)),
            facts(3 * GIB - 1),
            false,
        )
        .unwrap();
        assert_eq!(
            short.argv,
            v(&["java", "-agentpath:/l.so", "-Xmx2g", "Main"])
        );
        assert!(
            short.notes[0].contains("< max heap 2G"),
            "{:?}",
            short.notes
        );
    }

    #[test]
    fn conflicting_user_flags_are_refused() {
        let thp = plan_launch(
            &v(&["java", "-XX:-UseTransparentHugePages", "Main"]),
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Always, GIB)),
            facts(GIB),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            thp.contains("sets -XX:-UseTransparentHugePages and --thp"),
            "{thp}"
        );
        let agent = plan_launch(
            &v(&["java", "-agentpath:/x/libconcord_jvm.so", "Main"]),
            "-agentpath:/l.so".into(),
            None,
            facts(GIB),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            agent.contains("already loads the companion agent"),
            "{agent}"
        );
        // A program argument is not a JVM flag.
        assert!(plan_launch(
            &v(&["java", "Main", "-XX:+UseTransparentHugePages"]),
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Never, GIB)),
            facts(GIB),
            false,
        )
        .is_ok());
        let again = plan_launch(
            &v(&["java", "-Xlog:async", "Main"]),
            "-agentpath:/l.so".into(),
            None,
            facts(GIB),
            true,
        )
        .unwrap();
        assert_eq!(
            again.argv,
            v(&["java", "-agentpath:/l.so", "-Xlog:async", "Main"])
        );
        assert!(again.notes[0].contains("not adding it again"));
    }
}
