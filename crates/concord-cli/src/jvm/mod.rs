//! `concord jvm`: the HotSpot companion's command side (issue 12). The JVMTI agent
//! (`libconcord_jvm.so`, crate `concord-jvm`) applies Concord's OS-level policies inside an
//! unmodified JVM; this module loads it:
//!
//! - [`launch`]: `concord jvm run [OPTIONS] -- <java> <args…>` starts the JVM with the agent
//!   (and, when asked, 002's launch-time THP rule and an asynchronous GC log);
//! - [`attach`]: `concord jvm attach PID [OPTIONS]` loads the agent into a running JVM with
//!   `jcmd PID JVMTI.agent_load`;
//! - `concord jvm bench` is [`crate::bench::jvm_bench`].
//!
//! Here: the agent's options ([`AgentFlags`], encoded as `key=value,…` for
//! `-agentpath:LIB=OPTIONS`) and where the agent library is ([`agent_library`]).

pub mod attach;
pub mod launch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::str::FromStr;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

/// The agent library's file name.
pub const AGENT_FILE: &str = "libconcord_jvm.so";

/// How to build the agent library, for messages.
pub const AGENT_BUILD: &str = "build it with `cargo build --release -p concord-jvm` (or `cargo \
     build --release` of the whole workspace; `cargo build -p concord-cli` alone does not build \
     it), for target/debug `cargo build -p concord-jvm`";

/// Flags of `concord jvm`.
#[derive(Args, Debug)]
pub struct JvmArgs {
    #[command(subcommand)]
    pub command: JvmCommand,
}

/// The `concord jvm` subcommands.
#[derive(Subcommand, Debug)]
pub enum JvmCommand {
    /// Start a JVM with the companion agent: concord jvm run [OPTIONS] -- java ARGS…
    Run(launch::RunArgs),
    /// Load the companion agent into a running JVM (jcmd PID JVMTI.agent_load).
    Attach(attach::AttachArgs),
    /// HotSpot workloads × GC-thread affinity none/static/dynamic × interference (busy:K,
    /// co-running JVMs), alternating; every run goes to a results directory.
    Bench(crate::bench::jvm_bench::JvmBenchArgs),
}

/// Runs `concord jvm …`.
pub fn run(args: JvmArgs) -> Result<ExitCode> {
    match args.command {
        JvmCommand::Run(a) => launch::run(a),
        JvmCommand::Attach(a) => attach::run(a),
        JvmCommand::Bench(a) => crate::bench::jvm_bench::run(a),
    }
}

/// The agent library beside the running `concord` binary, or an error naming where it looked
/// and how to build it.
pub fn agent_library() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running concord binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    agent_library_in(dir)
}

/// The agent library in `dir`, or an error naming where it looked and how to build it.
pub fn agent_library_in(dir: &Path) -> Result<PathBuf> {
    let lib = dir.join(AGENT_FILE);
    if lib.is_file() {
        return Ok(lib);
    }
    bail!(
        "the agent library {} is not there (it is looked for beside the concord binary); {AGENT_BUILD}",
        lib.display()
    )
}

/// GC-thread affinity (000 Algorithm 1), as the agent's `gc-affinity` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcAffinity {
    /// The JVM's GC threads are left where the kernel puts them.
    None,
    /// Spread once over the usable CPUs.
    Static,
    /// Algorithm 1 at every GC start.
    Dynamic,
}

impl GcAffinity {
    /// Every mode, in order.
    pub const ALL: [GcAffinity; 3] = [GcAffinity::None, GcAffinity::Static, GcAffinity::Dynamic];

    /// The option's value.
    pub fn name(self) -> &'static str {
        match self {
            GcAffinity::None => "none",
            GcAffinity::Static => "static",
            GcAffinity::Dynamic => "dynamic",
        }
    }
}

impl fmt::Display for GcAffinity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for GcAffinity {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        GcAffinity::ALL
            .into_iter()
            .find(|m| m.name() == text.trim())
            .ok_or_else(|| "is not a GC affinity mode (allowed: none, static, dynamic)".into())
    }
}

/// Mutator scheduling (001), as the agent's `mutator-sched` option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MutatorSched {
    Cfs,
    Fifo,
    /// FIFO for the threads a lifespan profile selects.
    Profile(PathBuf),
    /// 001's adaptive selection, with its sampling period in seconds if given.
    Adaptive(Option<u32>),
}

impl MutatorSched {
    const ALLOWED: &'static str = "cfs, fifo, profile:PATH, adaptive or adaptive:SECONDS with \
                                   SECONDS in 1..=3600";
}

impl FromStr for MutatorSched {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "is not a mutator scheduling policy (allowed: {})",
                Self::ALLOWED
            )
        };
        let text = text.trim();
        match text {
            "cfs" => return Ok(MutatorSched::Cfs),
            "fifo" => return Ok(MutatorSched::Fifo),
            "adaptive" => return Ok(MutatorSched::Adaptive(None)),
            _ => {}
        }
        if let Some(path) = text.strip_prefix("profile:") {
            if path.is_empty() {
                return Err(bad());
            }
            return Ok(MutatorSched::Profile(PathBuf::from(path)));
        }
        if let Some(seconds) = text.strip_prefix("adaptive:") {
            return match seconds.parse::<u32>() {
                Ok(s) if (1..=3600).contains(&s) => Ok(MutatorSched::Adaptive(Some(s))),
                _ => Err(bad()),
            };
        }
        Err(bad())
    }
}

/// Which threads FIFO applies to, as the agent's `fifo-scope` option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FifoScope {
    Mutators,
    /// Every thread of the JVM, as 001 ran it.
    All,
}

impl FromStr for FifoScope {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "mutators" => Ok(FifoScope::Mutators),
            "all" => Ok(FifoScope::All),
            _ => Err("is not a FIFO scope (allowed: mutators, all)".into()),
        }
    }
}

/// The agent's options, as flags of `jvm run` and `jvm attach`. Unset ones are left out, so
/// the agent's own defaults apply.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentFlags {
    /// GC-thread affinity at each GC start (000 Algorithm 1): none, static (spread once) or
    /// dynamic.
    #[arg(long = "gc-affinity", value_name = "MODE")]
    pub gc_affinity: Option<GcAffinity>,
    /// Mutator scheduling (001): cfs, fifo, profile:PATH or adaptive[:SECONDS].
    #[arg(long = "mutator-sched", value_name = "POLICY")]
    pub mutator_sched: Option<MutatorSched>,
    /// The threads FIFO applies to: mutators (Java threads) or all (the whole JVM, as 001).
    #[arg(long = "fifo-scope", value_name = "SCOPE")]
    pub fifo_scope: Option<FifoScope>,
    /// Write one JSON line per GC here (GC id, start/end, callback µs, affinity decision, the
    /// GC threads' CPUs).
    #[arg(long, value_name = "PATH")]
    pub records: Option<PathBuf>,
    /// Write the agent's report (JSON) here when the JVM ends.
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
}

impl AgentFlags {
    /// The options as `-agentpath:LIB=` takes them: `key=value,…` (empty when none is set).
    /// Paths are made absolute against `cwd` (an attached JVM has its own working directory);
    /// a path with a comma, or one that is not UTF-8, is refused (the agent splits at commas).
    pub fn encode(&self, cwd: &Path) -> Result<String> {
        let mut options: Vec<String> = Vec::new();
        if let Some(mode) = self.gc_affinity {
            options.push(format!("gc-affinity={mode}"));
        }
        if let Some(policy) = &self.mutator_sched {
            options.push(match policy {
                MutatorSched::Cfs => "mutator-sched=cfs".into(),
                MutatorSched::Fifo => "mutator-sched=fifo".into(),
                MutatorSched::Profile(path) => format!(
                    "mutator-sched=profile:{}",
                    option_path("--mutator-sched profile:", path, cwd)?
                ),
                MutatorSched::Adaptive(None) => "mutator-sched=adaptive".into(),
                MutatorSched::Adaptive(Some(s)) => format!("mutator-sched=adaptive:{s}"),
            });
        }
        if let Some(scope) = self.fifo_scope {
            let name = match scope {
                FifoScope::Mutators => "mutators",
                FifoScope::All => "all",
            };
            options.push(format!("fifo-scope={name}"));
        }
        if let Some(path) = &self.records {
            options.push(format!("records={}", option_path("--records", path, cwd)?));
        }
        if let Some(path) = &self.report {
            options.push(format!("report={}", option_path("--report", path, cwd)?));
        }
        Ok(options.join(","))
    }
}

/// `path` made absolute against `cwd`, as text the agent's options can carry.
fn option_path(flag: &str, path: &Path, cwd: &Path) -> Result<String> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    };
    let Some(text) = absolute.to_str() else {
        bail!(
            "{flag} {}: the path is not UTF-8 (allowed: a UTF-8 path without ',')",
            path.display()
        );
    };
    if text.contains(',') {
        bail!(
            "{flag} {}: the path contains ',', which separates the agent's options (allowed: a \
             path without ',')",
            path.display()
        );
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_encoded_with_absolute_paths() {
        let flags = AgentFlags {
            gc_affinity: Some(GcAffinity::Dynamic),
            mutator_sched: Some("adaptive:5".parse().unwrap()),
            fifo_scope: Some(FifoScope::All),
            records: Some("r.jsonl".into()),
            report: Some("/tmp/rep.json".into()),
        };
        assert_eq!(
            flags.encode(Path::new("/home/u")).unwrap(),
            "gc-affinity=dynamic,mutator-sched=adaptive:5,fifo-scope=all,\
             records=/home/u/r.jsonl,report=/tmp/rep.json"
        );
        assert_eq!(AgentFlags::default().encode(Path::new("/")).unwrap(), "");
        let profile = AgentFlags {
            mutator_sched: Some("profile:p.txt".parse().unwrap()),
            ..AgentFlags::default()
        };
        assert_eq!(
            profile.encode(Path::new("/w")).unwrap(),
            "mutator-sched=profile:/w/p.txt"
        );
    }

    #[test]
    fn a_path_with_a_comma_is_refused() {
        let flags = AgentFlags {
            report: Some("a,b.json".into()),
            ..AgentFlags::default()
        };
        let err = flags.encode(Path::new("/w")).unwrap_err().to_string();
        assert!(
            err.starts_with("--report a,b.json: the path contains ','"),
            "{err}"
        );
    }

    #[test]
    fn values_are_checked_against_what_is_allowed() {
        assert_eq!("static".parse(), Ok(GcAffinity::Static));
        assert!("spread"
            .parse::<GcAffinity>()
            .unwrap_err()
            .contains("allowed: none, static, dynamic"));
        assert_eq!("fifo".parse(), Ok(MutatorSched::Fifo));
        assert_eq!("adaptive".parse(), Ok(MutatorSched::Adaptive(None)));
        for bad in ["rr", "adaptive:0", "adaptive:x", "profile:", ""] {
            let err = bad.parse::<MutatorSched>().unwrap_err();
            assert!(
                err.contains("allowed: cfs, fifo, profile:PATH"),
                "{bad}: {err}"
            );
        }
        assert!("some".parse::<FifoScope>().is_err());
    }

    #[test]
    fn a_missing_library_names_where_and_how() {
        let dir = std::env::temp_dir().join(format!("concord-no-agent-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = agent_library_in(&dir).unwrap_err().to_string();
        assert!(
            err.contains(&dir.join(AGENT_FILE).display().to_string()),
            "{err}"
        );
        assert!(
            err.contains("cargo build --release -p concord-jvm"),
            "{err}"
        );
        std::fs::write(dir.join(AGENT_FILE), b"").unwrap();
        assert_eq!(agent_library_in(&dir).unwrap(), dir.join(AGENT_FILE));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
