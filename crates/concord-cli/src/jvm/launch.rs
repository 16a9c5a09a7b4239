//! `concord jvm run [OPTIONS] -- <java> <args…>`: starts the JVM with the companion agent
//! (`-agentpath:LIB=OPTIONS`) and, when asked, 002's launch-time THP rule (`--thp`) and an
//! asynchronous GC log (`--async-log`). The flags are inserted right after the java command,
//! before the user's own; a user flag that conflicts with one of them is refused, never
//! rewritten, and every flag added is said on stderr.
//!
//! The options the JVM will also read — `JAVA_TOOL_OPTIONS`, `JDK_JAVA_OPTIONS`,
//! `_JAVA_OPTIONS` and the command line's `@argfiles` — are read too, so that a second copy of
//! the agent (under any file name) or a conflicting flag is refused wherever it is given.
//!
//! stdin, stdout and stderr are the JVM's; SIGINT, SIGTERM and SIGHUP sent to `concord` are
//! passed on to the JVM (Ctrl-C reaches it directly too; a second SIGINT during its shutdown is
//! harmless), and if `concord` itself is killed the kernel sends the JVM SIGTERM
//! (`PR_SET_PDEATHSIG`), so no JVM is left behind, and it still shuts down in order. The exit
//! status is the JVM's (128 + N when signal N ended it). The agent stages `--report` and
//! `--records` beside their paths and puts them in place at VM death, then tells `concord` in
//! an outcome file what it could not write; every output not written completely is said on
//! stderr and makes an otherwise successful run fail (exit 1). A JVM killed before its agent
//! finished leaves the earlier files as they were (its staged files are removed).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::format_size;
use concord::os::vm::HugePageAdvice;
use concord_jvm::options::AgentOptions;
use concord_jvm::report::Outcome;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

use super::{agent_library, encode_options, option_path, AgentFlags, AGENT_FILE};
use crate::console::errln;
use crate::flags::Size;

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

/// A JVM option and where the JVM gets it from, for messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundOption {
    /// The option.
    pub option: String,
    /// `the command line`, `@FILE` (an argument file) or an environment variable's name.
    pub source: String,
}

/// The environment variables the JVM reads before the command line's options: HotSpot's
/// `JAVA_TOOL_OPTIONS`, then the java launcher's `JDK_JAVA_OPTIONS` (JDK 9+).
const VARIABLES_BEFORE: [&str; 2] = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS"];

/// The environment variable HotSpot reads after the command line (it overrides it).
const VARIABLE_AFTER: &str = "_JAVA_OPTIONS";

/// Where the command line's own options come from, in messages.
const COMMAND_LINE: &str = "the command line";

/// Splits `text` as the java launcher splits an argument file or an options variable: at
/// whitespace, with '…' and "…" grouping (the quotes removed); with `comments`, a `#` at the
/// start of a word begins a comment to the end of the line (argument files).
pub fn split_options(text: &str, comments: bool) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '#' if comments && word.is_none() => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        break;
                    }
                }
            }
            '\'' | '"' => {
                let quoted = word.get_or_insert_with(String::new);
                for inner in chars.by_ref() {
                    if inner == c {
                        break;
                    }
                    quoted.push(inner);
                }
            }
            c if c.is_whitespace() => words.extend(word.take()),
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    words
}

/// Every JVM option the JVM will read that `concord` can see, in the order the JVM applies
/// them: `JAVA_TOOL_OPTIONS`, `JDK_JAVA_OPTIONS`, the command line's options `args` (up to the
/// main class) with their `@argfiles` expanded as the launcher does (not after
/// `--disable-@files`; `@@x` is the argument `@x`), then `_JAVA_OPTIONS`. `env` reads a
/// variable. An argument file that cannot be read is refused (the launcher would stop too).
pub fn visible_jvm_options(
    args: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<FoundOption>> {
    let from_variable = |name: &str| {
        env(name)
            .map(|text| split_options(&text, false))
            .unwrap_or_default()
            .into_iter()
            .map(|option| FoundOption {
                option,
                source: name.to_string(),
            })
            .collect::<Vec<_>>()
    };
    let mut found: Vec<FoundOption> = VARIABLES_BEFORE
        .iter()
        .flat_map(|name| from_variable(name))
        .collect();
    let mut line: Vec<FoundOption> = Vec::new();
    let mut expanding = true;
    let texts = |options: &[FoundOption]| -> Vec<String> {
        options.iter().map(|o| o.option.clone()).collect()
    };
    for arg in args {
        let so_far = texts(&line);
        if jvm_options(&so_far).len() < so_far.len() {
            break; // the main class is in: the rest are the program's arguments
        }
        match arg.strip_prefix('@') {
            Some(file) if expanding && !file.starts_with('@') => {
                let text = std::fs::read_to_string(file).with_context(|| {
                    format!(
                        "the argument file {arg}: cannot read {file} (allowed: a readable file \
                         of JVM options, as java reads it)"
                    )
                })?;
                for option in split_options(&text, true) {
                    expanding &= option != "--disable-@files";
                    line.push(FoundOption {
                        option,
                        source: arg.clone(),
                    });
                }
            }
            _ => {
                let option = match arg.strip_prefix("@@") {
                    Some(rest) => format!("@{rest}"),
                    None => arg.clone(),
                };
                expanding &= option != "--disable-@files";
                line.push(FoundOption {
                    option,
                    source: COMMAND_LINE.to_string(),
                });
            }
        }
    }
    let options = jvm_options(&texts(&line)).len();
    line.truncate(options);
    found.extend(line);
    found.extend(from_variable(VARIABLE_AFTER));
    Ok(found)
}

/// Whether `option` loads the companion agent: an `-agentlib:`/`-agentpath:` whose library is
/// named `concord_jvm`, is `own` (the library `concord` adds) or exports the agent's marker
/// symbol (a copy under another name).
pub fn loads_the_agent(option: &str, own: &Path) -> bool {
    let (library, is_path) = if let Some(rest) = option.strip_prefix("-agentpath:") {
        (rest, true)
    } else if let Some(rest) = option.strip_prefix("-agentlib:") {
        (rest, false)
    } else {
        return false;
    };
    let library = library.split_once('=').map_or(library, |(lib, _)| lib);
    if library.contains("concord_jvm") {
        return true;
    }
    let path = Path::new(library);
    is_path
        && (concord::config::same_file(path, own)
            || std::fs::read(path).is_ok_and(|bytes| {
                memchr::memmem::find(&bytes, concord_jvm::MARKER_SYMBOL.as_bytes()).is_some()
            }))
}

/// How `found` was given, for a message: `the command line has X`, `JAVA_TOOL_OPTIONS has X`.
fn given(found: &FoundOption) -> String {
    format!("{} has {}", found.source, found.option)
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
/// `-agentpath:` flag for library `own`, the THP flag of `thp` and `-Xlog:async` when
/// `async_log`; refuses a user flag among `found` (every option the JVM will read, see
/// [`visible_jvm_options`]) that conflicts with one of them, such as a second copy of the agent.
pub fn plan_launch(
    command: &[String],
    found: &[FoundOption],
    own: &Path,
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
    let options: Vec<String> = found.iter().map(|f| f.option.clone()).collect();
    let mut notes = Vec::new();
    if let Some(copy) = found.iter().find(|f| loads_the_agent(&f.option, own)) {
        bail!(
            "{} (the companion agent, or a copy of it): concord jvm run adds -agentpath for \
             {AGENT_FILE} itself, and two copies in one JVM would both act; drop yours, or run \
             java without concord",
            given(copy)
        );
    }
    let mut added = vec![agentpath];
    if let Some((choice, margin)) = thp {
        if let Some(own) = found
            .iter()
            .find(|f| f.option.contains("UseTransparentHugePages"))
        {
            bail!(
                "{} and --thp decides that flag too: give one of them (allowed: --thp \
                 never|always|dynamic, or your own flag without --thp)",
                given(own)
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
                let (heap, whose) = max_heap(&options, memory.physical)?;
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
        if let Some(own) = found.iter().find(|f| f.option == "-Xlog:async") {
            notes.push(format!("--async-log: {}; not adding it again", given(own)));
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
/// this process on to it, and tied to this process's life (it gets SIGTERM if this process is
/// killed). Returns its status and its process id.
pub fn run_forwarding_signals(argv: &[String]) -> Result<(ExitStatus, u32)> {
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    run_command_forwarding_signals(command)
        .with_context(|| format!("cannot start the java command {}", argv[0]))
}

/// As [`run_forwarding_signals`], for a command already built.
pub fn run_command_forwarding_signals(mut command: Command) -> Result<(ExitStatus, u32)> {
    let signals = [SIGINT, SIGTERM, SIGHUP];
    let flags: Vec<Arc<AtomicBool>> = signals
        .iter()
        .map(|_| Arc::new(AtomicBool::new(false)))
        .collect();
    let mut ids = Vec::new();
    for (signal, flag) in signals.iter().zip(&flags) {
        ids.push(signal_hook::flag::register(*signal, flag.clone())?);
    }
    // From this (the main) thread, which waits for the child: SIGTERM, not SIGKILL, so that a
    // JVM shuts down in order and its agent still puts its outputs in place.
    concord::os::process::signal_child_with_parent(&mut command, SIGTERM);
    let mut child = command.spawn()?;
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
    Ok((status, child.id()))
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
    let mut options = args.agent.options(&cwd)?;
    let outcome =
        std::env::temp_dir().join(format!("concord-jvm-outcome.{}.json", std::process::id()));
    options.outcome = Some(PathBuf::from(option_path(
        "the agent's outcome file (in TMPDIR)",
        &outcome,
        &cwd,
    )?));
    let lib = agent_library()?;
    let found = visible_jvm_options(&args.command[1..], &|name| std::env::var(name).ok())?;
    let margin = args
        .thp_margin
        .as_ref()
        .map_or(DEFAULT_THP_MARGIN, |m| m.bytes() as u64);
    let launch = plan_launch(
        &args.command,
        &found,
        &lib,
        agentpath(&lib, &encode_options(&options)?)?,
        args.thp.map(|c| (c, margin)),
        MemoryFacts::read(),
        args.async_log,
    )?;
    for note in &launch.notes {
        errln!("concord jvm: {note}");
    }
    let _ = std::fs::remove_file(&outcome);
    let (status, pid) = run_forwarding_signals(&launch.argv)?;
    let told = std::fs::read(&outcome)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Outcome>(&bytes).ok());
    let _ = std::fs::remove_file(&outcome);
    let problems = output_problems(&options, told.as_ref(), status, pid);
    for problem in &problems {
        errln!("concord: {problem}");
    }
    let code = shell_status(status);
    Ok(if code == 0 && !problems.is_empty() {
        ExitCode::FAILURE
    } else {
        ExitCode::from(code)
    })
}

/// What went wrong with the agent's outputs, one message each, from what the agent `told` in
/// its outcome file (`None`: it never finished, as when the JVM was killed; then its staged
/// files, left by process `pid`, are removed and every output is said not written).
fn output_problems(
    options: &AgentOptions,
    told: Option<&Outcome>,
    status: ExitStatus,
    pid: u32,
) -> Vec<String> {
    let outputs = [
        ("--report", &options.report),
        ("--records", &options.records),
    ];
    let requested: Vec<(&str, &PathBuf)> = outputs
        .into_iter()
        .filter_map(|(flag, path)| Some((flag, path.as_ref()?)))
        .collect();
    let not_written = |flag: &str, path: &Path| {
        for staged in concord::os::fs::temporaries_left_by(path, pid) {
            let _ = std::fs::remove_file(staged);
        }
        let kept = if path.exists() {
            "the file there keeps its earlier content"
        } else {
            "no file was made"
        };
        format!("{flag} {} was not written; {kept}", path.display())
    };
    match told {
        Some(Outcome {
            passive: Some(reason),
            ..
        }) => {
            let mut problems = vec![format!(
                "the agent concord jvm run added stayed passive: {reason} (loaded by the java \
                 command or its environment in a way concord could not see); no policy of \
                 concord jvm run applied"
            )];
            problems.extend(requested.iter().map(|(flag, path)| not_written(flag, path)));
            problems
        }
        Some(outcome) => outcome.failures.clone(),
        None if requested.is_empty() => Vec::new(),
        None => {
            use std::os::unix::process::ExitStatusExt;
            let why = match status.signal() {
                Some(signal) => format!("the JVM was killed by signal {signal}"),
                None => format!("the JVM ended ({status})"),
            };
            let mut problems = vec![format!(
                "{why} before the agent finished (see the JVM's stderr): it wrote none of its \
                 outputs"
            )];
            problems.extend(requested.iter().map(|(flag, path)| not_written(flag, path)));
            problems
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    /// [`plan_launch`] with the options of `command` alone (no variables, no argument files).
    fn plan(
        command: &[String],
        agentpath: String,
        thp: Option<(ThpChoice, u64)>,
        memory: MemoryFacts,
        async_log: bool,
    ) -> Result<Launch> {
        let args = command.get(1..).unwrap_or_default();
        let found = visible_jvm_options(args, &|_| None).unwrap();
        plan_launch(
            command,
            &found,
            Path::new("/nonexistent/libconcord_jvm.so"),
            agentpath,
            thp,
            memory,
            async_log,
        )
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
        let l = plan(
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
        let err = plan(&[], "-agentpath:/l.so".into(), None, facts(GIB), false)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("no java command after `--`"), "{err}");
    }

    #[test]
    fn thp_dynamic_follows_the_launch_rule() {
        let cmd = v(&["java", "-Xmx2g", "Main"]);
        let plenty = plan(
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
        let short = plan(
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
        let thp = plan(
            &v(&["java", "-XX:-UseTransparentHugePages", "Main"]),
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Always, GIB)),
            facts(GIB),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            thp.starts_with(
                "the command line has -XX:-UseTransparentHugePages and --thp decides that flag"
            ),
            "{thp}"
        );
        let agent = plan(
            &v(&["java", "-agentpath:/x/libconcord_jvm.so", "Main"]),
            "-agentpath:/l.so".into(),
            None,
            facts(GIB),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            agent.starts_with(
                "the command line has -agentpath:/x/libconcord_jvm.so (the companion agent, or \
                 a copy of it)"
            ),
            "{agent}"
        );
        // A program argument is not a JVM flag.
        assert!(plan(
            &v(&["java", "Main", "-XX:+UseTransparentHugePages"]),
            "-agentpath:/l.so".into(),
            Some((ThpChoice::Never, GIB)),
            facts(GIB),
            false,
        )
        .is_ok());
        let again = plan(
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

#[cfg(test)]
mod option_sources {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("concord-launch-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn options_are_split_as_the_launcher_splits_them() {
        assert_eq!(
            split_options(
                "-Xmx1g  '-Dx=a b' \"-Dy=c\"\n# a comment -Xms1g\n-cp x",
                true
            ),
            v(&["-Xmx1g", "-Dx=a b", "-Dy=c", "-cp", "x"])
        );
        assert_eq!(split_options("-Dz=#1", true), v(&["-Dz=#1"]));
        assert_eq!(split_options("#x -Xmx1g", false), v(&["#x", "-Xmx1g"]));
        assert!(split_options("  ", true).is_empty());
    }

    #[test]
    fn variables_and_argument_files_are_read_in_the_jvms_order() {
        let dir = scratch("argfile");
        let file = dir.join("opts");
        std::fs::write(&file, "# options\n-Xmx1g -agentpath:/a.so\n").unwrap();
        let at = format!("@{}", file.display());
        let env = |name: &str| match name {
            "JAVA_TOOL_OPTIONS" => Some("-Dtool=1".to_string()),
            "_JAVA_OPTIONS" => Some("-Dlast=1".to_string()),
            _ => None,
        };
        let found =
            visible_jvm_options(&v(&["-Xss1m", &at, "Main", "@not-read", "-Xmx2g"]), &env).unwrap();
        let shown: Vec<(String, String)> =
            found.into_iter().map(|f| (f.option, f.source)).collect();
        let pair = |o: &str, s: &str| (o.to_string(), s.to_string());
        assert_eq!(
            shown,
            vec![
                pair("-Dtool=1", "JAVA_TOOL_OPTIONS"),
                pair("-Xss1m", COMMAND_LINE),
                pair("-Xmx1g", &at),
                pair("-agentpath:/a.so", &at),
                pair("-Dlast=1", "_JAVA_OPTIONS"),
            ]
        );
        // Not expanded after --disable-@files; @@ is a literal @.
        let off = visible_jvm_options(&v(&["--disable-@files", "@nope", "Main"]), &|_| None);
        assert!(off.is_ok(), "{off:?}");
        let err = visible_jvm_options(&v(&["@/nonexistent/args"]), &|_| None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("the argument file @/nonexistent/args: cannot read"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_copy_of_the_agent_is_known_by_its_marker() {
        let dir = scratch("copy");
        let copy = dir.join("renamed.so");
        let mut bytes = b"\x7fELF...".to_vec();
        bytes.extend_from_slice(concord_jvm::MARKER_SYMBOL.as_bytes());
        std::fs::write(&copy, &bytes).unwrap();
        let other = dir.join("other.so");
        std::fs::write(&other, b"\x7fELF Agent_OnLoad").unwrap();
        let own = dir.join("libconcord_jvm.so");
        let with = |p: &Path| format!("-agentpath:{}=report=/r.json", p.display());
        assert!(loads_the_agent(&with(&copy), &own));
        assert!(!loads_the_agent(&with(&other), &own));
        assert!(loads_the_agent("-agentlib:concord_jvm", &own));
        assert!(loads_the_agent(&with(&own), &own), "the same file by name");
        assert!(!loads_the_agent("-agentlib:jdwp=transport=dt_socket", &own));
        assert!(!loads_the_agent("-Xmx1g", &own));
        let env = |name: &str| (name == "JDK_JAVA_OPTIONS").then(|| with(&copy));
        let found = visible_jvm_options(&v(&["Main"]), &env).unwrap();
        let err = plan_launch(
            &v(&["java", "Main"]),
            &found,
            &own,
            "-agentpath:/l.so".into(),
            None,
            MemoryFacts {
                available: None,
                physical: None,
            },
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.starts_with(&format!("JDK_JAVA_OPTIONS has {}", with(&copy))),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
