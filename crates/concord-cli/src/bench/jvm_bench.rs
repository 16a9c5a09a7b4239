//! `concord jvm bench`: the HotSpot companion measured on real JVMs (issue 12). The Java
//! workloads under `bench/hotspot/` (`trees`: TreeBench, N threads building and dropping binary
//! trees; `gcbench`: GCBench) run on HotSpot Parallel GC with the companion agent's
//! `gc-affinity` none / static / dynamic (and `off`: no agent at all, to see the agent's own
//! cost) × `mutator-sched` (cfs by default) under each load (`none`; `busy:K`: K busy-loop
//! threads in this process, [`crate::interference`]; `jvms:M`: M JVMs at once, the measured one
//! and M-1 co-running ones as separate processes with the same agent options), alternating
//! every arm once per round on the experiment engine ([`crate::experiment`]).
//!
//! Each run's figures come from the JVM's own `-Xlog:gc` (pause total, longest pause,
//! [`crate::hotspot::parse_gc_log`]), its own wall time (startup excluded) and the agent's
//! report (callback µs, affinity moves); the GC log, the agent's per-GC records and its report
//! go to the results directory beside the run's summary (`runs/NNN-….gc.log`, `.agent.jsonl`,
//! `.agent.json`). The JVM writes them into a hidden folder of the run (`runs/.NNN-….partial/`)
//! and each is put in place only when complete, so a file that could not be written whole (a
//! full disk) is never left looking like a result. A wrong checksum, a JVM that failed, an
//! agent that wrote no report or a file that could not be written fails the run.
//!
//! `--java` is the java executable itself, asked what it is before anything runs
//! ([`super::jdk`]); every path the JVM's options carry is checked up front (`--out`).

use concord::os::process::kill_child_with_parent;
use concord::telemetry::nearest_rank;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord_workloads::WorkloadParams;
use serde_json::{json, Value};

use super::jdk::Jdk;
use super::{conclude, Text};
use crate::experiment::figures::{pauses_over, Figures};
use crate::experiment::results::check_out;
use crate::experiment::runner::{RunFiles, RunResult, Runner};
use crate::experiment::{Arm, Column, Plan};
use crate::flags::{count_in, BenchFlags, Size};
use crate::hotspot::{self, HotspotPause, PauseKind};
use crate::interference::Interference;
use crate::interrupt;
use crate::jvm::{agent_library, FifoScope};
use concord::os::policy::GcAffinity;
use concord_jvm::options::AgentOptions;

/// TreeBench's source, embedded at build time.
pub const TREEBENCH_SOURCE: &str = include_str!("../../../../bench/hotspot/TreeBench.java");

/// The workloads, in their order.
pub const WORKLOADS: [&str; 2] = ["trees", "gcbench"];
/// The affinity modes (`off`: no agent loaded).
pub const AFFINITIES: [&str; 4] = ["off", "none", "static", "dynamic"];
/// The mutator scheduling policies a bench arm may use.
pub const SCHEDS: [&str; 3] = ["cfs", "fifo", "adaptive"];
/// The most JVMs `jvms:M` may run at once.
const MAX_JVMS: usize = 16;
/// TreeBench's depths: the long-lived tree per thread (about 12 MiB) and the short-lived ones.
const TREE_LONG_DEPTH: u32 = 18;
const TREE_DEPTH: u32 = 14;
/// Rounds a co-running JVM is given: more than the measured run needs; it is stopped after.
const COMPANION_ROUNDS: u32 = 10_000;

/// Flags of `concord jvm bench`.
#[derive(Args, Debug, Clone)]
pub struct JvmBenchArgs {
    /// Workloads, comma-separated: trees (TreeBench, --threads threads building and dropping
    /// binary trees), gcbench (GCBench, one copy).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "trees",
        value_name = "W,…"
    )]
    pub workloads: Vec<String>,
    /// GC-thread affinity modes of the arms, comma-separated: off (no agent), none, static,
    /// dynamic.
    #[arg(
        long = "gc-affinity",
        value_delimiter = ',',
        default_value = "none,static,dynamic",
        value_name = "M,…"
    )]
    pub gc_affinity: Vec<String>,
    /// Mutator scheduling policies of the arms, comma-separated: cfs, fifo, adaptive (001
    /// Algorithm 2; FIFO needs CAP_SYS_NICE or root; the agent reports a refused call).
    #[arg(
        long = "mutator-sched",
        value_delimiter = ',',
        default_value = "cfs",
        value_name = "P,…"
    )]
    pub mutator_sched: Vec<String>,
    /// The threads FIFO applies to: mutators or all (default: the agent's).
    #[arg(long = "fifo-scope", value_name = "SCOPE", value_parser = crate::jvm::parse_fifo_scope)]
    pub fifo_scope: Option<FifoScope>,
    /// Loads, comma-separated: none, busy:K (K busy-loop threads in this process), jvms:M (M
    /// JVMs at once: the measured one and M-1 co-running ones).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "busy:1,jvms:2",
        value_name = "L,…"
    )]
    pub loads: Vec<String>,
    /// The java executable of the JDK to measure, e.g. /usr/lib/jvm/java-17-openjdk-amd64/bin/java
    /// or a wrapper script (default: $JAVA_HOME/bin/java, java on PATH, then
    /// /usr/lib/jvm/java-17-openjdk-amd64/bin/java).
    #[arg(long, value_name = "FILE")]
    pub java: Option<PathBuf>,
    /// The Java heap (-Xms and -Xmx).
    #[arg(long, default_value = "96m", value_name = "SIZE")]
    pub heap: Size,
    /// -XX:ParallelGCThreads (default: twice the usable CPUs, so that GC threads stack as in
    /// 000's experiments).
    #[arg(long = "gc-threads", value_name = "N", value_parser = count_in(1, 1024))]
    pub gc_threads: Option<u32>,
    /// TreeBench's threads (default: the usable CPUs).
    #[arg(long, value_name = "N", value_parser = count_in(1, 256))]
    pub threads: Option<u32>,
    /// TreeBench's short-lived trees per thread.
    #[arg(long, default_value_t = 1500, value_name = "N", value_parser = count_in(1, 1_000_000))]
    pub iterations: u32,
    /// Rounds of the workload inside each JVM.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = count_in(1, 1000))]
    pub rounds: u32,
    #[command(flatten)]
    pub bench: BenchFlags,
}

/// A load of one group of arms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JvmLoad {
    None,
    Busy(Interference),
    /// This many JVMs at once, the measured one included.
    Jvms(usize),
}

impl std::str::FromStr for JvmLoad {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let allowed =
            format!("allowed: none, busy:K or busy:K@CPU with K in 1..=1024, jvms:M with M in 2..={MAX_JVMS}");
        if text == "none" {
            return Ok(JvmLoad::None);
        }
        if let Some(m) = text.strip_prefix("jvms:") {
            return match m.parse::<usize>() {
                Ok(m) if (2..=MAX_JVMS).contains(&m) => Ok(JvmLoad::Jvms(m)),
                _ => Err(format!("--loads: '{text}' is not a load ({allowed})")),
            };
        }
        text.parse::<Interference>()
            .map(JvmLoad::Busy)
            .map_err(|_| format!("--loads: '{text}' is not a load ({allowed})"))
    }
}

impl std::fmt::Display for JvmLoad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JvmLoad::None => f.write_str("none"),
            JvmLoad::Busy(load) => write!(f, "{load}"),
            JvmLoad::Jvms(m) => write!(f, "jvms:{m}"),
        }
    }
}

impl JvmLoad {
    fn describe(self) -> String {
        match self {
            JvmLoad::None => "no load".into(),
            JvmLoad::Busy(load) => format!("{load}: {} in concord", load.describe()),
            JvmLoad::Jvms(m) => format!(
                "jvms:{m}: {} co-running JVM{} with the same workload and agent options",
                m - 1,
                if m == 2 { "" } else { "s" }
            ),
        }
    }
}

/// A Java workload: its main class, arguments and expected checksum.
#[derive(Clone, Debug, PartialEq)]
pub enum JavaWorkload {
    Trees { threads: u32, iterations: u32 },
    GcBench,
}

impl JavaWorkload {
    fn name(&self) -> &'static str {
        match self {
            JavaWorkload::Trees { .. } => "trees",
            JavaWorkload::GcBench => "gcbench",
        }
    }

    fn main_class(&self) -> &'static str {
        match self {
            JavaWorkload::Trees { .. } => "TreeBench",
            JavaWorkload::GcBench => hotspot::GCBENCH_MAIN_CLASS,
        }
    }

    fn args(&self, rounds: u32) -> Vec<String> {
        let mut args: Vec<String> = match self {
            JavaWorkload::Trees {
                threads,
                iterations,
            } => vec![
                "--threads".into(),
                threads.to_string(),
                "--long-depth".into(),
                TREE_LONG_DEPTH.to_string(),
                "--depth".into(),
                TREE_DEPTH.to_string(),
                "--iterations".into(),
                iterations.to_string(),
            ],
            JavaWorkload::GcBench => vec!["--copies".into(), "1".into()],
        };
        args.extend(["--rounds".into(), rounds.to_string()]);
        args
    }

    /// The checksum the workload prints for `rounds` rounds.
    pub fn expected_checksum(&self, rounds: u32) -> u64 {
        match self {
            JavaWorkload::Trees {
                threads,
                iterations,
            } => {
                let s = |d: u32| (1u64 << (d + 2)) - u64::from(d) - 3;
                u64::from(*threads)
                    * u64::from(rounds)
                    * (s(TREE_LONG_DEPTH) + u64::from(*iterations) * s(TREE_DEPTH))
            }
            JavaWorkload::GcBench => hotspot::expected_checksum(1, rounds as usize),
        }
    }

    fn describe(&self) -> String {
        match self {
            JavaWorkload::Trees {
                threads,
                iterations,
            } => format!(
                "trees: TreeBench, {threads} thread{} each keeping a depth-{TREE_LONG_DEPTH} tree \
                 and building {iterations} depth-{TREE_DEPTH} trees",
                if *threads == 1 { "" } else { "s" }
            ),
            JavaWorkload::GcBench => "gcbench: GCBench, one copy".into(),
        }
    }
}

/// Writes both workloads' sources into `workdir` and compiles them into `workdir/classes`
/// with the JDK's javac.
fn compile(jdk: &Jdk, workdir: &Path) -> Result<PathBuf> {
    let sources = [
        ("GCBench.java", hotspot::GCBENCH_SOURCE),
        ("TreeBench.java", TREEBENCH_SOURCE),
    ];
    hotspot::compile_java(&jdk.javac, workdir, &sources)
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One run of an arm: the JVM (and its co-running JVMs) with the agent's options.
struct JvmRunner {
    jdk: Jdk,
    classes: PathBuf,
    /// The agent library, `None` for `off`.
    agent: Option<PathBuf>,
    /// The agent's options (the run's records and report are added per run).
    agent_options: AgentOptions,
    heap_kb: usize,
    gc_threads: u32,
    workload: JavaWorkload,
    rounds: u32,
    /// JVMs at once, the measured one included.
    jvms: usize,
}

/// The run's files, by their suffix after `NNN-label.`.
const GC_LOG: &str = "gc.log";
const AGENT_RECORDS: &str = "agent.jsonl";
const AGENT_REPORT: &str = "agent.json";

/// A file beside the run's records: `NNN-label.<suffix>`.
fn beside(records: &Path, suffix: &str) -> PathBuf {
    let name = records
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".records.jsonl").unwrap_or(&name);
    records.with_file_name(format!("{stem}.{suffix}"))
}

/// The characters a path in the JVM's options cannot hold, and why.
const UNCARRIED: [(char, &str); 3] = [
    (
        ',',
        "the agent's options (-agentpath:LIB=records=PATH,report=PATH) are separated by ','",
    ),
    (
        '"',
        "the JVM's -Xlog:gc:file=\"PATH\" puts the path in '\"'",
    ),
    (
        '%',
        "the JVM's -Xlog replaces %p and %t in a log file's name",
    ),
];

/// A path as option text; refused if it would break the option it goes in.
fn option_text(path: &Path) -> Result<&str> {
    let Some(text) = path.to_str() else {
        bail!(
            "'{}' is not UTF-8, which the JVM's options need",
            path.display()
        );
    };
    if let Some((c, why)) = UNCARRIED.iter().find(|(c, _)| text.contains(*c)) {
        bail!(
            "'{text}' holds '{c}', which the JVM's options cannot carry: {why} (allowed: a UTF-8 \
             path without ',', '\"' or '%')"
        );
    }
    Ok(text)
}

/// The files one JVM run writes (GC log, the agent's records and report): the JVM writes them
/// into a hidden folder beside the run's records, and each is put in place as
/// `NNN-label.<suffix>` only once known complete. The folder goes with what is left in it
/// when dropped, and on a second Ctrl-C.
struct RunOutputs {
    /// `runs/.NNN-label.partial`.
    staging: PathBuf,
    /// The run's records path, which the final names follow.
    records: PathBuf,
}

impl RunOutputs {
    fn create(records: &Path) -> Result<RunOutputs> {
        let staging = beside(records, "partial");
        let name = staging.file_name().unwrap_or_default().to_string_lossy();
        let staging = staging.with_file_name(format!(".{name}"));
        std::fs::create_dir(&staging)
            .with_context(|| format!("cannot create '{}'", staging.display()))?;
        interrupt::remove_on_quit(&staging);
        Ok(RunOutputs {
            staging,
            records: records.to_path_buf(),
        })
    }

    /// Where the JVM writes the file with `suffix`.
    fn staged(&self, suffix: &str) -> PathBuf {
        self.staging.join(suffix)
    }

    /// Puts the file with `suffix` in place, unless `lost` says why it is incomplete; returns
    /// its name in the results directory's `runs/`, or adds to `problems` what was lost.
    fn keep(
        &self,
        suffix: &str,
        what: &str,
        lost: Option<String>,
        problems: &mut Vec<String>,
    ) -> Option<String> {
        let target = beside(&self.records, suffix);
        let kept = match lost {
            Some(why) => Err(why),
            None => std::fs::rename(self.staged(suffix), &target)
                .map_err(|e| format!("cannot put it in place as '{}': {e}", target.display())),
        };
        match kept {
            Ok(()) => target.file_name().map(|n| n.to_string_lossy().into_owned()),
            Err(why) => {
                problems.push(format!("lost {what} ({why}): it is not kept"));
                None
            }
        }
    }
}

impl Drop for RunOutputs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.staging);
        interrupt::forget_on_quit(&self.staging);
    }
}

/// Why a file a JVM or the agent wrote is incomplete, if it is: the writer's own complaint on
/// the JVM's stderr (`complaints`: the start of its lines), or a last line cut off.
fn incomplete(text: &str, stderr: &str, complaints: &[&str]) -> Option<String> {
    let said = stderr
        .lines()
        .map(str::trim)
        .find(|line| complaints.iter().any(|c| line.starts_with(c)));
    match said {
        Some(line) => Some(line.to_string()),
        None if !text.is_empty() && !text.ends_with('\n') => {
            Some("it ends in a cut-off line".to_string())
        }
        None => None,
    }
}

/// What HotSpot's unified logging says on stderr when it cannot write a log file.
const LOG_COMPLAINTS: [&str; 2] = ["Could not write log:", "Could not flush log:"];
/// What the agent says on stderr when it cannot write its report.
const REPORT_COMPLAINT: &str = "concord-jvm: cannot write the report";
/// The start of the agent's notice (in its report) when it cannot write its records.
const RECORDS_COMPLAINT: &str = "cannot write records";

/// Co-running JVMs, stopped when dropped.
struct Companions(Vec<Child>);

impl Companions {
    /// Stops every one still running; returns what is wrong with those that ended by
    /// themselves before (a failed start, an out-of-memory error).
    fn stop(mut self) -> Vec<String> {
        let mut problems = Vec::new();
        for (i, child) in self.0.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                if !status.success() {
                    problems.push(format!("co-running JVM {} failed ({status})", i + 1));
                }
            }
        }
        self.kill_all();
        problems
    }

    fn kill_all(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.0.clear();
    }
}

impl Drop for Companions {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl JvmRunner {
    /// The JVM flags of a run: the agent writing `records` and `report` (if given), Parallel
    /// GC, the heap and GC threads.
    fn jvm_flags(&self, records: Option<&Path>, report: Option<&Path>) -> Result<Vec<String>> {
        let mut flags = Vec::new();
        if let Some(lib) = &self.agent {
            let mut options = self.agent_options.clone();
            options.records = records.map(Path::to_path_buf);
            options.report = report.map(Path::to_path_buf);
            let text = options
                .to_option_string()
                .map_err(|e| anyhow::anyhow!("the agent's options: {e}"))?;
            flags.push(crate::jvm::launch::agentpath(lib, &text)?);
        }
        flags.extend([
            "-XX:+UseParallelGC".to_string(),
            format!("-Xms{}k", self.heap_kb),
            format!("-Xmx{}k", self.heap_kb),
            format!("-XX:ParallelGCThreads={}", self.gc_threads),
        ]);
        Ok(flags)
    }

    fn start_companions(&self) -> Result<Companions> {
        let mut companions = Companions(Vec::new());
        let flags = self.jvm_flags(None, None)?;
        for i in 1..self.jvms {
            let mut cmd = Command::new(&self.jdk.exe);
            // A JVM that hangs (FIFO on too few CPUs can) must not outlive a quit at once.
            kill_child_with_parent(&mut cmd);
            let child = cmd
                .args(&flags)
                .arg("-cp")
                .arg(&self.classes)
                .arg(self.workload.main_class())
                .args(self.workload.args(COMPANION_ROUNDS))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .with_context(|| format!("cannot start co-running JVM {i}"))?;
            companions.0.push(child);
        }
        Ok(companions)
    }
}

/// The agent's report's figures: (events, callback p50 µs, callback max µs, moves).
fn agent_figures(report: &Value) -> (Option<f64>, Option<f64>, Option<f64>, Option<f64>) {
    let num = |k: &str| report.get(k).and_then(Value::as_f64);
    (
        num("gc_events"),
        num("callback_us_p50"),
        num("callback_us_max"),
        num("affinity_moves"),
    )
}

/// A JVM run's files as they were left: the GC log's text, the agent's report, and the names
/// of those complete enough to be put in place (the others are counted as problems).
struct Settled {
    log: String,
    report: Value,
    gc_log: Option<String>,
    agent_records: Option<String>,
    agent_report: Option<String>,
}

impl JvmRunner {
    /// Checks the files the JVM and the agent wrote into `outputs` (`stderr`: what the JVM
    /// said) and puts every complete one in place; what is incomplete goes to `problems`.
    fn settle(&self, outputs: &RunOutputs, stderr: &str, problems: &mut Vec<String>) -> Settled {
        let read = |suffix: &str| std::fs::read_to_string(outputs.staged(suffix));
        let (log, log_lost) = match read(GC_LOG) {
            Ok(text) => {
                let lost = incomplete(&text, stderr, &LOG_COMPLAINTS);
                (text, lost)
            }
            Err(e) => (String::new(), Some(format!("cannot read it: {e}"))),
        };
        let gc_log = outputs.keep(GC_LOG, "the GC log", log_lost, problems);
        if self.agent.is_none() {
            return Settled {
                log,
                report: Value::Null,
                gc_log,
                agent_records: None,
                agent_report: None,
            };
        }
        let (report, report_lost) = match read(AGENT_REPORT) {
            Ok(text) => match incomplete(&text, stderr, &[REPORT_COMPLAINT]) {
                Some(why) => (Value::Null, Some(why)),
                None => match serde_json::from_str::<Value>(&text) {
                    Ok(report) => (report, None),
                    Err(e) => (Value::Null, Some(format!("it is not JSON: {e}"))),
                },
            },
            Err(e) => (
                Value::Null,
                Some(format!(
                    "the agent wrote none ({e}); the JVM said: {}",
                    stderr.trim()
                )),
            ),
        };
        // The agent notes in its report a records file it could not write: without the
        // report, the records cannot be vouched for.
        let records_lost = if report_lost.is_some() {
            Some("without the agent's report, they cannot be known complete".to_string())
        } else {
            let notices = report["notices"].as_array().into_iter().flatten();
            let notice = notices
                .filter_map(Value::as_str)
                .find(|n| n.starts_with(RECORDS_COMPLAINT));
            match (notice, read(AGENT_RECORDS)) {
                (Some(notice), _) => Some(format!("the agent said: {notice}")),
                (None, Ok(text)) => incomplete(&text, "", &[]),
                (None, Err(e)) => Some(format!("cannot read them: {e}")),
            }
        };
        Settled {
            log,
            agent_records: outputs.keep(
                AGENT_RECORDS,
                "the agent's records",
                records_lost,
                problems,
            ),
            agent_report: outputs.keep(AGENT_REPORT, "the agent's report", report_lost, problems),
            report,
            gc_log,
        }
    }
}

impl Runner for JvmRunner {
    fn run(&self, files: &RunFiles) -> Result<RunResult> {
        let outputs = RunOutputs::create(&files.records)?;
        let mut flags = self.jvm_flags(
            Some(&outputs.staged(AGENT_RECORDS)),
            Some(&outputs.staged(AGENT_REPORT)),
        )?;
        // filecount=0: one file, never rotated into others that would not be put in place.
        flags.push(format!(
            "-Xlog:gc:file=\"{}\":uptime,level,tags:filecount=0",
            option_text(&outputs.staged(GC_LOG))?
        ));
        let companions = self.start_companions()?;
        let started = Instant::now();
        let mut cmd = Command::new(&self.jdk.exe);
        kill_child_with_parent(&mut cmd);
        let output = cmd
            .args(&flags)
            .arg("-cp")
            .arg(&self.classes)
            .arg(self.workload.main_class())
            .args(self.workload.args(self.rounds))
            .stdin(Stdio::null())
            .output()
            .with_context(|| format!("cannot start {}", self.jdk.java.display()))?;
        let process_wall_ms = started.elapsed().as_secs_f64() * 1e3;
        let mut problems = companions.stop();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // Complete files are kept also when the JVM failed: its GC log tells why.
        let settled = self.settle(&outputs, &stderr, &mut problems);
        if !output.status.success() {
            bail!(
                "the JVM failed ({}): {} {}\n{stdout}{stderr}{}",
                output.status,
                self.jdk.java.display(),
                flags.join(" "),
                problems.join("\n")
            );
        }
        let (checksum, wall_ms) = hotspot::parse_gcbench_output(&stdout)
            .with_context(|| format!("unexpected output of the JVM:\n{stdout}{stderr}"))?;
        let expected = self.workload.expected_checksum(self.rounds);
        if checksum != expected {
            problems.push(format!("checksum {checksum} (expected {expected})"));
        }
        let pauses: Vec<HotspotPause> = hotspot::parse_gc_log(&settled.log);
        let mut sorted: Vec<f64> = pauses.iter().map(|p| p.ms).collect();
        sorted.sort_by(f64::total_cmp);
        let report = settled.report;
        let (events, cb_p50, cb_max, moves) = agent_figures(&report);
        let gc_ms = hotspot::total_pause_ms(&pauses);
        let figures = Figures {
            wall_ms,
            gc_ms,
            gc_count: pauses.len() as f64,
            pause_p50_ms: nearest_rank(&sorted, 50.0),
            pause_p99_ms: nearest_rank(&sorted, 99.0),
            pause_max_ms: hotspot::max_pause_ms(&pauses),
            pauses_over: pauses_over(&sorted),
            callback_us_p50: cb_p50,
            callback_us_max: cb_max,
            affinity_moves: moves,
            ..Figures::default()
        };
        let summary = json!({
            "kind": "jvm",
            "workload": self.workload.name(),
            "java": self.jdk.java.display().to_string(),
            "jvm_flags": flags,
            "main": self.workload.main_class(),
            "args": self.workload.args(self.rounds),
            "co_running_jvms": self.jvms - 1,
            "wall_ms": wall_ms,
            "process_wall_ms": process_wall_ms,
            "gc_count": pauses.len(),
            "young_count": hotspot::pause_count(&pauses, PauseKind::Young),
            "full_count": hotspot::pause_count(&pauses, PauseKind::Full),
            "gc_pause_total_ms": gc_ms,
            "pause_p50_ms": figures.pause_p50_ms,
            "pause_p99_ms": figures.pause_p99_ms,
            "pause_max_ms": figures.pause_max_ms,
            "checksum": checksum,
            "expected_checksum": expected,
            "checksum_ok": checksum == expected,
            "gc_log": settled.gc_log,
            "agent_records": settled.agent_records,
            "agent_report": settled.agent_report,
            // The agent sees one event pair per GC VM operation; -Xlog:gc one line per pause.
            "agent_events_match_log": events.map(|e| e as usize == pauses.len()),
            "callback_us_p50": cb_p50,
            "callback_us_max": cb_max,
            "affinity_moves": moves,
            "agent": report,
        });
        let cb = cb_p50.map_or(String::new(), |p| {
            format!(
                ", callback p50 {p:.1} us max {:.1} us",
                cb_max.unwrap_or(0.0)
            )
        });
        Ok(RunResult {
            summary,
            line: format!(
                "wall {wall_ms:.0} ms, {} pauses, GC {gc_ms:.1} ms, max {:.2} ms{cb}",
                pauses.len(),
                figures.pause_max_ms
            ),
            figures,
            details: vec![("checksum".into(), checksum.to_string())],
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
        })
    }
}

/// `list` checked against `allowed` (each once, in the order given).
fn choose(flag: &str, list: &[String], allowed: &[&'static str]) -> Result<Vec<&'static str>> {
    let mut out: Vec<&'static str> = Vec::new();
    for item in list {
        match allowed.iter().find(|a| **a == item.trim()) {
            Some(a) if !out.contains(a) => out.push(a),
            Some(_) => bail!(
                "--{flag}: '{item}' is given twice (allowed: {})",
                allowed.join(", ")
            ),
            None => bail!(
                "--{flag}: '{item}' is unknown (allowed: {})",
                allowed.join(", ")
            ),
        }
    }
    if out.is_empty() {
        bail!("--{flag}: nothing given (allowed: {})", allowed.join(", "));
    }
    Ok(out)
}

/// The columns of the table.
const COLUMNS: &[Column] = &[
    Column::GcMs,
    Column::GcRange,
    Column::Ratio,
    Column::Max,
    Column::Wall,
    Column::WallRatio,
    Column::CallbackP50,
    Column::CallbackMax,
    Column::Moves,
    Column::Runs,
];

/// Runs `concord jvm bench`.
pub fn run(args: JvmBenchArgs) -> Result<ExitCode> {
    let workloads = choose("workloads", &args.workloads, &WORKLOADS)?;
    let affinities = choose("gc-affinity", &args.gc_affinity, &AFFINITIES)?;
    let scheds = choose("mutator-sched", &args.mutator_sched, &SCHEDS)?;
    let mut loads: Vec<JvmLoad> = Vec::new();
    for text in &args.loads {
        let load: JvmLoad = text.parse().map_err(anyhow::Error::msg)?;
        if loads.contains(&load) {
            bail!("--loads: '{text}' is given twice");
        }
        loads.push(load);
    }
    if loads.is_empty() {
        bail!("--loads: nothing given (allowed: none, busy:K, jvms:M)");
    }
    if args.fifo_scope.is_some() && !scheds.iter().any(|s| *s != "cfs") {
        bail!("--fifo-scope applies to --mutator-sched fifo or adaptive, which no arm uses");
    }
    let heap_kb = args.heap.bytes().div_ceil(1024);
    if heap_kb < 16 << 10 {
        bail!(
            "--heap {}: too small for the workloads (allowed: at least 16m)",
            args.heap
        );
    }
    if let Some(out) = &args.bench.out {
        // The runs' files are named in the JVM's options: a directory they cannot name is
        // refused before anything is created.
        option_text(out).map_err(|e| anyhow::anyhow!("--out {e}"))?;
        check_out(out)?;
    }
    let usable = concord::os::cpu::usable_cpu_count() as u32;
    let gc_threads = args.gc_threads.unwrap_or(2 * usable);
    let threads = args.threads.unwrap_or(usable);
    let agent = if affinities.iter().any(|a| *a != "off") {
        Some(agent_library()?)
    } else {
        None
    };
    let jdk = Jdk::find(args.java.as_deref())?;
    let workdir = TempDir(std::env::temp_dir().join(format!(
        "concord-jvm-bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )));
    let classes = compile(&jdk, &workdir.0)?;
    let mut arms = Vec::new();
    let mut groups = Vec::new();
    for name in &workloads {
        let workload = match *name {
            "trees" => JavaWorkload::Trees {
                threads,
                iterations: args.iterations,
            },
            _ => JavaWorkload::GcBench,
        };
        for load in &loads {
            let group = groups.len();
            groups.push(format!("{}; {}", workload.describe(), load.describe()));
            for sched in &scheds {
                for affinity in &affinities {
                    let label = if scheds.len() > 1 {
                        format!("{sched}/{affinity}")
                    } else {
                        affinity.to_string()
                    };
                    let off = *affinity == "off";
                    let agent_options = AgentOptions {
                        gc_affinity: if off {
                            GcAffinity::None
                        } else {
                            affinity.parse().map_err(anyhow::Error::msg)?
                        },
                        mutator_sched: sched.parse().map_err(anyhow::Error::msg)?,
                        fifo_scope: args.fifo_scope.unwrap_or_default(),
                        records: None,
                        report: None,
                        ..AgentOptions::default()
                    };
                    let mut options = vec![
                        format!("gc-affinity={affinity}"),
                        format!("mutator-sched={sched}"),
                    ];
                    if let Some(scope) = args.fifo_scope {
                        options.push(format!("fifo-scope={scope}"));
                    }
                    let mut settings = if off {
                        vec!["agent=off".to_string()]
                    } else {
                        options.clone()
                    };
                    settings.extend([
                        format!("heap={}", args.heap),
                        format!("gc-threads={gc_threads}"),
                        format!("load={load}"),
                    ]);
                    arms.push(Arm {
                        label: label.clone(),
                        id: format!("{name}:{load}:{label}"),
                        what: if off {
                            "HotSpot Parallel GC without the agent".into()
                        } else {
                            format!("HotSpot Parallel GC with the agent: {}", options.join(", "))
                        },
                        group,
                        preset: "hotspot-parallel".into(),
                        value: None,
                        settings,
                        workload: name.to_string(),
                        params: WorkloadParams {
                            mutators: threads as usize,
                            rounds: args.rounds as usize,
                            size: None,
                        },
                        interference: match load {
                            JvmLoad::Busy(i) => Some(*i),
                            _ => None,
                        },
                        sim: None,
                        runner: Arc::new(JvmRunner {
                            jdk: jdk.clone(),
                            classes: classes.clone(),
                            agent: (!off).then(|| agent.clone()).flatten(),
                            agent_options,
                            heap_kb,
                            gc_threads,
                            workload: workload.clone(),
                            rounds: args.rounds,
                            jvms: match load {
                                JvmLoad::Jvms(m) => *m,
                                _ => 1,
                            },
                        }),
                    });
                }
            }
        }
    }
    let mut plan = Plan::new("jvm-bench", workloads.join(","), arms, args.bench.repeat);
    plan.groups = groups;
    for (k, v) in [
        ("jdk", json!(jdk.version)),
        ("java", json!(jdk.java.display().to_string())),
        ("java_home", json!(jdk.home.display().to_string())),
        ("javac", json!(jdk.javac.display().to_string())),
        ("heap", json!(args.heap.to_string())),
        ("gc_threads", json!(gc_threads)),
        ("tree_threads", json!(threads)),
        ("iterations", json!(args.iterations)),
        ("rounds", json!(args.rounds)),
        ("usable_cpus", json!(usable)),
        ("gc_affinity", json!(affinities)),
        ("mutator_sched", json!(scheds)),
        (
            "loads",
            json!(loads.iter().map(ToString::to_string).collect::<Vec<_>>()),
        ),
        (
            "agent",
            json!(agent.as_ref().map(|a| a.display().to_string())),
        ),
    ] {
        plan.parameters.insert(k.to_string(), v);
    }
    let header = format!(
        "concord jvm bench: HotSpot {} Parallel GC, heap {}, {gc_threads} GC threads on {usable} \
         usable CPUs, medians of {} alternating runs each",
        jdk.version, args.heap, plan.repeat
    );
    let note = "GC ms: total pause time from -Xlog:gc; ratio, wall x: to the group's first arm; \
                max: longest pause; wall: the workload's own time (JVM startup excluded); cb p50 / \
                cb max: the agent's callback time inside the pause (not in -Xlog:gc), us; moves: \
                GC threads the agent moved to another CPU.";
    let text = Text::new(header, COLUMNS.to_vec(), note).legend_of(0);
    let status = conclude(&plan, &args.bench, |_, _| {}, |_| text);
    drop(workdir);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_cut_short_or_complained_about_are_incomplete() {
        assert_eq!(incomplete("", "", &LOG_COMPLAINTS), None);
        assert_eq!(incomplete("a\nb\n", "warning: x\n", &LOG_COMPLAINTS), None);
        assert_eq!(
            incomplete("a\nb", "", &LOG_COMPLAINTS).as_deref(),
            Some("it ends in a cut-off line")
        );
        let said = "  Could not flush log: file=/r/gc.log (No space left on device (28))\n";
        assert_eq!(
            incomplete("a\n", said, &LOG_COMPLAINTS).as_deref(),
            Some(said.trim())
        );
    }

    #[test]
    fn loads_are_parsed_and_named() {
        assert_eq!("none".parse(), Ok(JvmLoad::None));
        assert_eq!("jvms:2".parse(), Ok(JvmLoad::Jvms(2)));
        assert_eq!("busy:1".parse(), Ok(JvmLoad::Busy(Interference::busy(1))));
        for bad in ["jvms:1", "jvms:17", "idle", "busy:0"] {
            let err = bad.parse::<JvmLoad>().unwrap_err();
            assert!(err.contains("allowed: none, busy:K"), "{err}");
        }
        assert_eq!(JvmLoad::Jvms(3).to_string(), "jvms:3");
        assert!(JvmLoad::Jvms(2)
            .describe()
            .contains("1 co-running JVM with"));
    }

    #[test]
    fn checksums_follow_the_java_sources() {
        // TreeBench's comment: N * R * (S(L) + I * S(D)), checked against a real JVM run
        // (2 threads, 1500 iterations: 198654110).
        let trees = JavaWorkload::Trees {
            threads: 2,
            iterations: 1500,
        };
        assert_eq!(trees.expected_checksum(1), 198_654_110);
        assert_eq!(trees.expected_checksum(3), 3 * 198_654_110);
        assert_eq!(JavaWorkload::GcBench.expected_checksum(2), 2 * 30_161_104);
        assert_eq!(
            trees.args(2),
            [
                "--threads",
                "2",
                "--long-depth",
                "18",
                "--depth",
                "14",
                "--iterations",
                "1500",
                "--rounds",
                "2"
            ]
        );
    }

    #[test]
    fn files_go_beside_the_records() {
        assert_eq!(
            beside(Path::new("/r/runs/001-trees-none.records.jsonl"), "gc.log"),
            Path::new("/r/runs/001-trees-none.gc.log")
        );
        assert_eq!(option_text(Path::new("/r/a b:c=d")).unwrap(), "/r/a b:c=d");
        for (path, c) in [("/a,b", ','), ("/a\"b", '"'), ("/a%p", '%')] {
            let err = option_text(Path::new(path)).unwrap_err().to_string();
            assert!(err.contains(&format!("holds '{c}'")), "{err}");
        }
        let err = choose("workloads", &["x".to_string()], &WORKLOADS)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "--workloads: 'x' is unknown (allowed: trees, gcbench)");
    }
}
