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

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use concord::os::policy::{GcAffinity, MutatorSched};
use concord_jvm::options::AgentOptions;
pub use concord_jvm::options::FifoScope;

/// The agent library's file name.
pub const AGENT_FILE: &str = "libconcord_jvm.so";

/// How to build the agent library, for messages.
pub const AGENT_BUILD: &str = "build it with `cargo build --release -p concord-jvm` (or `cargo \
     build --release` of the whole workspace) and run target/release/concord; installed \
     elsewhere, copy libconcord_jvm.so beside the concord binary";

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

/// The agent library in `dir` (where `cargo build --release` puts it) or in `dir/deps` (where
/// building `concord-cli`, which depends on the agent crate, puts it in a development tree),
/// the newer of the two if both are there; or an error naming where it looked and how to
/// build it.
pub fn agent_library_in(dir: &Path) -> Result<PathBuf> {
    let beside = dir.join(AGENT_FILE);
    let deps = dir.join("deps").join(AGENT_FILE);
    // Both can exist (a `cargo build -p concord-jvm` then a later build of concord-cli after
    // a change to the agent): the newer one is the agent of the current sources.
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let newest = [&beside, &deps]
        .into_iter()
        .filter(|lib| lib.is_file())
        .max_by_key(|lib| modified(lib));
    if let Some(lib) = newest {
        return Ok(lib.clone());
    }
    bail!(
        "the agent library {AGENT_FILE} is not beside the concord binary (looked for {} and {}); \
         {AGENT_BUILD}",
        beside.display(),
        deps.display()
    )
}

/// The agent's options, as flags of `jvm run` and `jvm attach`. Unset ones are left out, so
/// the agent's own defaults apply.
#[derive(Args, Debug, Clone, Default)]
pub struct AgentFlags {
    /// GC-thread affinity at each GC start (000 Algorithm 1): none, static (spread once) or
    /// dynamic.
    #[arg(long = "gc-affinity", value_name = "MODE")]
    pub gc_affinity: Option<GcAffinity>,
    /// Mutator scheduling (001): cfs, fifo, profile:PATH (001 Algorithm 1 across runs) or
    /// adaptive[:SECONDS] (Algorithm 2, sampling every SECONDS).
    #[arg(long = "mutator-sched", value_name = "POLICY")]
    pub mutator_sched: Option<MutatorSched>,
    /// The threads FIFO applies to: mutators (Java threads) or all (the whole JVM, as 001).
    #[arg(long = "fifo-scope", value_name = "SCOPE", value_parser = parse_fifo_scope)]
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
    /// The options as `-agentpath:LIB=` and `jcmd … JVMTI.agent_load LIB` take them:
    /// `key=value,…`, in the agent's own grammar ([`AgentOptions::to_option_string`]; empty
    /// when every option is the agent's default). See [`AgentFlags::options`].
    pub fn encode(&self, cwd: &Path) -> Result<String> {
        encode_options(&self.options(cwd)?)
    }

    /// The agent's options, checked as the agent would check them at load. Paths are made
    /// absolute against `cwd` (an attached JVM has its own working directory); a path with a
    /// comma, or one that is not UTF-8, is refused (the agent splits at commas), and so are two
    /// outputs in one file (`--report X --records X`, or a link to the same file).
    pub fn options(&self, cwd: &Path) -> Result<AgentOptions> {
        let absolute = |flag: &str, path: &Option<PathBuf>| -> Result<Option<PathBuf>> {
            path.as_ref()
                .map(|p| option_path(flag, p, cwd).map(PathBuf::from))
                .transpose()
        };
        let mutator_sched =
            match &self.mutator_sched {
                Some(MutatorSched::Profile(path)) => MutatorSched::Profile(PathBuf::from(
                    option_path("--mutator-sched profile:", path, cwd)?,
                )),
                Some(other) => other.clone(),
                None => MutatorSched::Cfs,
            };
        let options = AgentOptions {
            gc_affinity: self.gc_affinity.unwrap_or(GcAffinity::None),
            mutator_sched,
            fifo_scope: self.fifo_scope.unwrap_or_default(),
            records: absolute("--records", &self.records)?,
            report: absolute("--report", &self.report)?,
            ..AgentOptions::default()
        };
        // What the agent would refuse at load (fifo-scope all with profile or adaptive) is refused
        // here, before a JVM starts.
        options
            .check_supported()
            .map_err(|e| anyhow::anyhow!("--fifo-scope and --mutator-sched: {e}"))?;
        if let Some([(key, path), (earlier, earlier_path)]) = options.shared_output() {
            let flag = |key: &str, path: &Path| match key {
                "mutator-sched profile" => format!("--mutator-sched profile:{}", path.display()),
                _ => format!("--{key} {}", path.display()),
            };
            bail!(
                "{} names the same file as {}; give each output a file of its own",
                flag(key, path),
                flag(earlier, earlier_path)
            );
        }
        Ok(options)
    }
}

/// `options` in the agent's grammar (see [`AgentFlags::encode`]).
pub fn encode_options(options: &AgentOptions) -> Result<String> {
    options
        .to_option_string()
        .map_err(|e| anyhow::anyhow!("the agent's options: {e}"))
}

/// A `--fifo-scope` value; the message follows the quoted value.
pub fn parse_fifo_scope(text: &str) -> Result<FifoScope, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("is not a FIFO scope (allowed: {})", FifoScope::allowed()))
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
    fn options_are_encoded_in_the_agents_grammar_with_absolute_paths() {
        let flags = AgentFlags {
            gc_affinity: Some(GcAffinity::Dynamic),
            mutator_sched: Some(MutatorSched::Fifo),
            fifo_scope: Some(FifoScope::All),
            records: Some("r.jsonl".into()),
            report: Some("/tmp/rep.json".into()),
        };
        let text = flags.encode(Path::new("/home/u")).unwrap();
        assert_eq!(
            text,
            "gc-affinity=dynamic,mutator-sched=fifo,fifo-scope=all,\
             records=/home/u/r.jsonl,report=/tmp/rep.json"
        );
        // The agent reads back what the CLI wrote.
        let parsed = AgentOptions::parse(Some(&text)).unwrap();
        assert_eq!(parsed.report.as_deref(), Some(Path::new("/tmp/rep.json")));
        assert_eq!(AgentFlags::default().encode(Path::new("/")).unwrap(), "");
    }

    #[test]
    fn a_path_with_a_comma_and_an_unsupported_policy_are_refused() {
        let flags = AgentFlags {
            report: Some("a,b.json".into()),
            ..AgentFlags::default()
        };
        let err = flags.encode(Path::new("/w")).unwrap_err().to_string();
        assert!(
            err.starts_with("--report a,b.json: the path contains ','"),
            "{err}"
        );
        let adaptive_all = AgentFlags {
            mutator_sched: Some("adaptive".parse().unwrap()),
            fifo_scope: Some(FifoScope::All),
            ..AgentFlags::default()
        };
        let err = adaptive_all
            .encode(Path::new("/w"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not go with"), "{err}");
    }

    #[test]
    fn two_outputs_in_one_file_are_refused() {
        let flags = AgentFlags {
            records: Some("out.json".into()),
            report: Some("./out.json".into()),
            ..AgentFlags::default()
        };
        let err = flags.encode(Path::new("/w")).unwrap_err().to_string();
        assert_eq!(
            err,
            "--report /w/./out.json names the same file as --records /w/out.json; give each \
             output a file of its own"
        );
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
        assert!(err.contains(&dir.join("deps").join(AGENT_FILE).display().to_string()));
        std::fs::create_dir_all(dir.join("deps")).unwrap();
        std::fs::write(dir.join("deps").join(AGENT_FILE), b"").unwrap();
        assert_eq!(
            agent_library_in(&dir).unwrap(),
            dir.join("deps").join(AGENT_FILE)
        );
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let stale = std::fs::File::create(dir.join(AGENT_FILE)).unwrap();
        stale.set_modified(old).unwrap();
        assert_eq!(
            agent_library_in(&dir).unwrap(),
            dir.join("deps").join(AGENT_FILE)
        );
        std::fs::remove_file(dir.join("deps").join(AGENT_FILE)).unwrap();
        assert_eq!(agent_library_in(&dir).unwrap(), dir.join(AGENT_FILE));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
