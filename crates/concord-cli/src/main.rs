//! `concord`: run Concord's workloads, compare configurations side by side, report the results
//! and put Concord next to HotSpot.
//!
//! Subcommands: `run` (one workload, readable summary or `--json`, `--co-run M` separate
//! processes), the bench commands on the one experiment engine (`compare`, `sweep`,
//! `ablation`, `os-bench`, `sched-bench`; [`bench`], [`experiment`]), `report` (an HTML page of
//! a results directory) and `vs-hotspot` (the same GCBench on HotSpot Parallel GC and on
//! Concord, alternating, with ratios), `vs-native` (binary-trees or GCBench on Concord and in
//! plain Rust with `Box`, alternating); `jvm` (`run`, `attach`, `bench`: the HotSpot companion
//! agent in unmodified JVMs, [`jvm`]); `sim` (a workload's collections on a simulated
//! many-core machine; `calibrate`: the simulator's costs measured on this machine, [`sim`]).
//!
//! Exit status: 0 success; 1 the run failed (out of memory, a wrong checksum, a failed heap
//! verification, an output that could not be written: a [`RunFailed`] error, or a command's
//! own verdict); 2 bad input, rejected before anything ran (every other error); 130 / 143
//! stopped by a signal; 141 standard output was a closed pipe ([`console`]).
//!
//! With `CONCORD_CHECK_ARGS=1` in the environment, `concord` only checks its command line
//! ([`stop_if_checking_args`]): the documentation test runs the guide's long commands that way.

mod bench;
mod co_run;
mod console;
mod diagnose;
mod experiment;
mod flags;
mod hotspot;
mod interference;
mod interrupt;
mod jvm;
mod logger;
mod paper;
mod report;
mod run;
mod side_by_side;
mod sim;
mod stall;
mod summary;
mod thp_tuner;
mod vs_hotspot;
mod vs_native;

use std::fmt;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use console::{errln, StdoutError};

/// An error of a run that started from valid input and failed: out of memory, a wrong result,
/// an output that could not be written, a JVM that failed. `main` exits with status 1 for it;
/// any other error is bad input (status 2).
#[derive(Debug)]
pub struct RunFailed(anyhow::Error);

impl RunFailed {
    /// `error` as the failure of a run.
    pub fn wrap(error: impl Into<anyhow::Error>) -> anyhow::Error {
        anyhow::Error::new(RunFailed(error.into()))
    }
}

impl fmt::Display for RunFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The whole chain: `anyhow` shows the causes of this error, and it has none of its own.
        write!(f, "{:#}", self.0)
    }
}

impl std::error::Error for RunFailed {}

/// The failed write to stdout behind `error`, if that is what it is (also inside a
/// [`RunFailed`]).
fn stdout_error(error: &anyhow::Error) -> Option<&StdoutError> {
    error.chain().find_map(|e| {
        e.downcast_ref::<StdoutError>()
            .or_else(|| stdout_error(&e.downcast_ref::<RunFailed>()?.0))
    })
}

/// The exit status of a command that ended with `error`, after saying why on stderr (a closed
/// stdout pipe ends quietly, as `cat` does).
fn failure_status(error: &anyhow::Error) -> ExitCode {
    if let Some(stdout) = stdout_error(error) {
        if stdout.is_closed_pipe() {
            return ExitCode::from(console::CLOSED_PIPE_STATUS);
        }
        errln!("concord: {stdout}");
        return ExitCode::FAILURE;
    }
    errln!("concord: {error:#}");
    if error.chain().any(|e| e.is::<RunFailed>()) {
        ExitCode::FAILURE
    } else {
        ExitCode::from(2)
    }
}

/// The exit status after clap refused the command line or was asked for help or the version
/// (which go to stdout, checked like every other write there).
fn parse_failure(e: &clap::Error) -> ExitCode {
    if let Some(message) = flags::value_error(e) {
        errln!("concord: {message}");
        return ExitCode::from(2);
    }
    let status = ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    match console::print_clap(e) {
        Ok(()) => status,
        Err(stdout) => failure_status(&anyhow::Error::new(stdout)),
    }
}

/// Concord: a parallel, generational garbage collector that cooperates with the OS.
#[derive(Parser, Debug)]
#[command(name = "concord", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one workload on a Concord heap and print a summary.
    Run(run::RunArgs),
    /// Run a workload under vanilla, vanilla + each single fix, modern and optimized,
    /// alternating, and compare GC time, pauses, imbalance and stealing (000 Fig. 10); every
    /// run goes to a results directory.
    Ablation(bench::ablation::AblationArgs),
    /// Compare vanilla and optimized with GC thread affinity none, static and dynamic, with and
    /// without busy-loop interference, oversubscribed GC threads, alternating; every run goes
    /// to a results directory.
    OsBench(bench::os_bench::OsBenchArgs),
    /// Compare mutator scheduling CFS, FIFO and adaptive on a scalable and a non-scalable
    /// workload, alternating; every run goes to a results directory.
    SchedBench(bench::sched_bench::SchedBenchArgs),
    /// 002's pause experiments: queue-churn under loads (none, I/O, memory pressure, slow
    /// log) × GC log modes × THP modes, alternating; max pause, p99 and pauses over
    /// 250/500/1000/2000 ms per arm; every run goes to a results directory.
    PauseBench(bench::pause_bench::PauseBenchArgs),
    /// 004 Fig. 3's memory-placement microbenchmark: page reads of thread-local buffers by
    /// 1, 2, … threads pinned round-robin over the NUMA nodes, under four placements
    /// (unbalanced/balanced × remote/local), alternating; time, speedup, reads per node,
    /// their imbalance and the remote share; every run goes to a results directory.
    PlacementBench(bench::placement_bench::PlacementBenchArgs),
    /// Run GCBench and binary-trees on HotSpot (-XX:+UseParallelGC) and on Concord, alternating, and compare.
    VsHotspot(vs_hotspot::VsHotspotArgs),
    /// Run binary-trees or GCBench on Concord (one mutator) and in plain Rust (Box,
    /// malloc/free), alternating, checksums checked, and compare wall times.
    VsNative(vs_native::VsNativeArgs),
    /// The HotSpot companion (issue 12): run a JVM with the JVMTI agent that applies GC-thread
    /// affinity and mutator scheduling, attach it to a running JVM, or measure it (jvm bench).
    Jvm(jvm::JvmArgs),
    /// Run a workload under a few presets, alternating A B A B …, and compare medians; every
    /// run's summary and records go to a results directory.
    Compare(bench::compare::CompareArgs),
    /// Run a workload for each value of gc-threads, mutators or heap (× each preset),
    /// alternating, and tabulate the scaling; every run goes to a results directory.
    Sweep(bench::sweep::SweepArgs),
    /// Write a self-contained HTML report (tables and plots) of a results directory written by
    /// compare, sweep, ablation, os-bench or sched-bench.
    Report(report::ReportArgs),
    /// Read a GC log (Concord, HotSpot unified logging or JDK 8) and tell which pauses the OS
    /// caused: real against user+sys per GC thread, time to safepoint, counts over
    /// 250/500/1000/2000 ms and advice.
    Diagnose(diagnose::DiagnoseArgs),
    /// Take and touch SIZE of memory and hold it (002's BackgroundApp), capped to a safe
    /// share of MemAvailable and giving memory back before the machine runs short.
    Pressure(stall::pressure::PressureArgs),
    /// 002 Fig. 3's system-wide THP tuner: every period, sets the THP files from MemAvailable,
    /// the direct page-scan rate and khugepaged's CPU use; restores them when it stops.
    ThpTuner(thp_tuner::ThpTunerArgs),
    /// The papers' catalogue: every figure and table, its status here and the command that
    /// reproduces it; `concord paper ID [--repeat N] [--out DIR]` runs one.
    Paper(paper::PaperArgs),
    /// The many-core simulator: `concord sim WORKLOAD --cpus N` replays the workload's
    /// collections on N simulated CPUs under a model of the Linux scheduler; `concord sim
    /// calibrate` measures this machine's costs of atomics, futexes, context switches,
    /// wake-ups and copying and saves them as JSON.
    Sim(sim::SimArgs),
}

impl Command {
    /// Whether the command itself calls [`stop_if_checking_args`] where its work starts, after
    /// building and validating its whole configuration (`run` and the experiment commands on
    /// Concord heaps); the others are checked as far as parsing.
    fn checks_args_before_work(&self) -> bool {
        matches!(
            self,
            Command::Run(_)
                | Command::Compare(_)
                | Command::Sweep(_)
                | Command::Ablation(_)
                | Command::OsBench(_)
                | Command::SchedBench(_)
                | Command::PauseBench(_)
                | Command::PlacementBench(_)
                | Command::Paper(_)
        ) || matches!(self, Command::Sim(sim)
            if !matches!(sim.command, Some(sim::SimCommand::Calibrate(_))))
    }
}

/// The environment variable that makes `concord` stop, with status 0, once its arguments (and,
/// for `run` and the experiment commands, its whole configuration) are checked, before any
/// work: how the documentation test checks commands that take minutes or need a JVM.
const CHECK_ARGS_ENV: &str = "CONCORD_CHECK_ARGS";

/// Under [`CHECK_ARGS_ENV`] (set and neither empty nor `0`), says how far the command line was
/// checked (`how`) and ends the process with status 0; otherwise returns. Called before
/// anything is written or started.
pub fn stop_if_checking_args(how: &str) {
    let checking = std::env::var_os(CHECK_ARGS_ENV).is_some_and(|v| !v.is_empty() && v != "0");
    if checking {
        errln!("concord: arguments checked ({how}); not running, since {CHECK_ARGS_ENV} is set");
        std::process::exit(0);
    }
}

/// The levels a [`logger::FILTER_VAR`] filter may name.
const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Checks a log filter as [`logger::FILTER_VAR`] holds it (`env_logger` syntax:
/// comma-separated `LEVEL`, `MODULE` or `MODULE=LEVEL`, then optionally `/REGEX`), which the
/// logger would otherwise take whatever it says (`bogus` is a module that logs nothing): every
/// level must be one, and every module concord's (`concord`, `concord::runtime`,
/// `concord_sim`, …), the only code in this program that logs.
fn check_log_filter(filter: &str) -> Result<(), String> {
    let var = logger::FILTER_VAR;
    let allowed = "allowed: comma-separated levels off, error, warn, info, debug, trace and \
                   MODULE=LEVEL with MODULE concord or a module of it, e.g. concord=info,warn";
    let is_level = |text: &str| LOG_LEVELS.iter().any(|l| l.eq_ignore_ascii_case(text));
    let is_ours = |module: &str| {
        let krate = module.split("::").next().unwrap_or_default();
        krate == "concord" || krate.starts_with("concord_")
    };
    let directives = filter.split_once('/').map_or(filter, |(d, _)| d);
    for directive in directives
        .split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
    {
        let (module, level) = match directive.split_once('=') {
            Some((module, level)) => (Some(module.trim()), Some(level.trim())),
            None if is_level(directive) => (None, Some(directive)),
            None => (Some(directive), None),
        };
        if let Some(level) = level.filter(|l| !is_level(l)) {
            return Err(format!("{var}: '{level}' is not a log level ({allowed})"));
        }
        if let Some(module) = module.filter(|m| !is_ours(m)) {
            return Err(format!(
                "{var}: '{module}' is neither a log level nor a module of concord ({allowed})"
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    abort_on_panic();
    // A filter that would show nothing it seems to ask for is bad input, refused before
    // anything else.
    if let Some(filter) = std::env::var_os(logger::FILTER_VAR) {
        if let Err(message) = check_log_filter(&filter.to_string_lossy()) {
            errln!("concord: {message}");
            return ExitCode::from(2);
        }
    }
    logger::install();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failure(&e),
    };
    if !cli.command.checks_args_before_work() {
        stop_if_checking_args("parsed");
    }
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Ablation(args) => bench::ablation::run(args),
        Command::OsBench(args) => bench::os_bench::run(args),
        Command::SchedBench(args) => bench::sched_bench::run(args),
        Command::VsHotspot(args) => vs_hotspot::run(args),
        Command::VsNative(args) => vs_native::run(args),
        Command::Jvm(args) => jvm::run(args),
        Command::PauseBench(args) => bench::pause_bench::run(args),
        Command::PlacementBench(args) => bench::placement_bench::run(args),
        Command::Compare(args) => bench::compare::run(args),
        Command::Sweep(args) => bench::sweep::run(args),
        Command::Report(args) => report::run(args),
        Command::Diagnose(args) => diagnose::run(args),
        Command::ThpTuner(args) => thp_tuner::run(args),
        Command::Pressure(args) => stall::pressure::run(args),
        Command::Paper(args) => paper::run(args),
        Command::Sim(args) => sim::run(args),
    };
    result.unwrap_or_else(|e| failure_status(&e))
}

/// A panic anywhere in `concord` prints its message and aborts the process, as the workspace's
/// `panic = "abort"` used to do for every release build: a GC worker or the VM thread that
/// unwound alone would leave the others waiting for it. The release profile unwinds now so
/// that the JVMTI agent (`libconcord_jvm.so`, built in the same profile) can catch a panic in a
/// callback instead of taking the JVM down; this hook keeps the binary's old behaviour.
fn abort_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        std::process::abort();
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_filters_name_levels_and_modules_of_concord() {
        for ok in [
            "",
            "warn",
            "DEBUG",
            "off",
            "concord=info,warn",
            " concord::runtime = trace , error ",
            "concord_sim",
            "info/collection",
        ] {
            assert_eq!(check_log_filter(ok), Ok(()), "{ok}");
        }
        let err = check_log_filter("bogus").unwrap_err();
        assert!(
            err.starts_with(
                "CONCORD_LOG: 'bogus' is neither a log level nor a module of concord (allowed: \
                 comma-separated levels off, error"
            ),
            "{err}"
        );
        assert!(check_log_filter("concord=loud")
            .unwrap_err()
            .starts_with("CONCORD_LOG: 'loud' is not a log level"));
        assert!(check_log_filter("warn,tokio=debug")
            .unwrap_err()
            .contains("'tokio' is neither"));
    }

    #[test]
    fn a_closed_stdout_is_found_inside_a_failed_run() {
        let closed = || StdoutError::from(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        let plain = anyhow::Error::new(closed()).context("printing the summary");
        assert!(stdout_error(&plain).is_some_and(StdoutError::is_closed_pipe));
        let wrapped = RunFailed::wrap(anyhow::Error::new(closed()));
        assert!(stdout_error(&wrapped).is_some_and(StdoutError::is_closed_pipe));
        assert!(stdout_error(&RunFailed::wrap(anyhow::anyhow!("out of memory"))).is_none());
    }
}
