//! `concord run … --co-run M`: M instances of a workload as M separate `concord` processes, as
//! 000 §5.7 and 001 co-run separate JVMs (each with its own allocator, heap and scheduler
//! entities, not threads of one process).
//!
//! The parent starts M children: this executable with the parent's own arguments and the
//! hidden `--co-run-instance N`. Each child builds its heap, says `ready` on stdout and waits
//! for `go` on stdin, so that all workloads start together; then it runs and prints its summary
//! JSON (with its pid and every pause) on stdout. Its GC log and records go to `PATH.N`. The
//! parent runs the `--interfere` load meanwhile, waits for every child, and reports each
//! instance and the aggregate; a child that fails or is killed is reported with its exit
//! status and the tail of its stderr (one whose outputs could not be written completely fails
//! so). A signal to the parent (Ctrl-C, SIGTERM) stops the children by closing their stdin:
//! each stops as on its own first Ctrl-C, puts its outputs in place and exits, and is reaped.
//! Since the parent holds each child's stdin open until it has reaped it, a child whose stdin
//! closes early also knows when the parent died some other way (SIGKILL, a second signal's
//! immediate exit) and stops the same way, so none is left behind.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitCode, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use concord::GcConfig;
use concord_workloads::{Workload, WorkloadParams};
use serde_json::{json, Value};
use signal_hook::consts::SIGHUP;

use crate::console::{errln, outln};
use crate::experiment::run_on_heap;
use crate::interference::Interference;
use crate::interrupt;
use crate::summary::Summary;

/// The most instances `--co-run` may run at once.
pub const MAX_CO_RUN: u32 = 64;
/// The hidden flag that makes `concord run` a co-running instance.
pub const INSTANCE_FLAG: &str = "--co-run-instance";
/// What a child says once its heap is built, and what the parent answers to start it.
const READY: &str = "ready";
const GO: &str = "go";
/// Lines of a failed child's stderr that its report shows.
const STDERR_TAIL_LINES: usize = 6;

/// `config` for co-running instance `n` (from 1): its own GC log, records and trace files
/// (`gc.log` → `gc.log.2`).
pub fn instance_config(config: &GcConfig, n: usize) -> GcConfig {
    let mut c = config.clone();
    let per_instance = |p: &Path| PathBuf::from(format!("{}.{n}", p.display()));
    c.gc_log = c.gc_log.as_deref().map(per_instance);
    c.gc_records = c.gc_records.as_deref().map(per_instance);
    c.gc_trace = c.gc_trace.as_deref().map(per_instance);
    c
}

/// The child's side: runs instance `n` once its parent says go, and prints its summary JSON
/// (with `pid`, `instance`, every pause, `pauses_ms`, and every allocation stall,
/// `alloc_stalls_ms`) as one line on stdout; outputs it could not write completely are
/// reported on stderr and make the exit status 1. A signal, or the parent closing the pipe (it
/// stops the instances, or it died), stops the run as the first Ctrl-C does: outputs put in
/// place, exit status 128 + the signal.
pub fn run_instance(
    workload: &Arc<dyn Workload>,
    params: &WorkloadParams,
    config: &GcConfig,
    n: usize,
) -> Result<ExitCode> {
    let config = instance_config(config, n);
    let ready = || {
        outln!("{READY}")?;
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
        if line.trim() != GO {
            bail!("instance {n}: the parent process is gone (no start signal)");
        }
        // The parent keeps the pipe open until it has reaped this process or wants it to stop;
        // end of input means stop (the parent may be dead: an instance must not outlive it).
        std::thread::spawn(move || {
            let mut rest = Vec::new();
            let _ = std::io::stdin().lock().read_to_end(&mut rest);
            if !interrupt::interrupted() {
                log::error!("instance {n}: the parent process stops the run");
            }
            interrupt::raise(SIGHUP);
        });
        Ok(())
    };
    let run = run_on_heap(workload, params, &config, ready, true)?;
    let mut v = run.summary.json();
    v["pid"] = json!(std::process::id());
    v["instance"] = json!(n);
    v["pauses_ms"] = json!(run.summary.pauses_ms);
    v["alloc_stalls_ms"] = json!(run.summary.alloc_stalls_ms);
    // The parent may be gone: a closed pipe is no reason to fail here.
    let _ = writeln!(std::io::stdout(), "{v}");
    for failure in &run.output_failures {
        errln!("concord: {failure}");
    }
    Ok(if run.interrupted.is_some() {
        interrupt::exit_code()
    } else if run.output_failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// One instance that ran to the end.
pub struct Instance {
    /// Its number, from 1.
    pub number: usize,
    /// Its process id.
    pub pid: u32,
    /// Its summary, read back from its JSON.
    pub summary: Summary,
    /// Its summary JSON, with `pid` and `instance`.
    pub json: Value,
}

/// One instance that did not.
pub struct Failure {
    /// Its number, from 1.
    pub number: usize,
    /// Its process id.
    pub pid: u32,
    /// How it ended: `exit status 2`, `killed by signal 9`, or what was wrong with its output.
    pub status: String,
    /// The last lines of its stderr.
    pub stderr_tail: String,
}

/// What came of co-running.
pub struct CoRun {
    /// The instances that finished, in order.
    pub instances: Vec<Instance>,
    /// The instances that failed.
    pub failures: Vec<Failure>,
    /// Whether a signal stopped the parent (the children were killed).
    pub interrupted: bool,
}

/// A started child and the threads that read its output.
struct Running {
    number: usize,
    child: Child,
    stdin: Option<ChildStdin>,
    /// The child's stdout after the `ready` line.
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
    status: Option<ExitStatus>,
}

impl Running {
    /// Whether the child has exited (and its status, once known).
    fn poll(&mut self) -> bool {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status.is_some()
    }

    /// Kills the child if it still runs, and reaps it.
    fn kill(&mut self) {
        if !self.poll() {
            let _ = self.child.kill();
            self.status = self.child.wait().ok();
        }
    }
}

/// How long stopped instances get to put their outputs in place before they are killed.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// Stops every child and reaps it: closing its stdin tells it to stop as the first Ctrl-C does
/// (its outputs are put in place, no temporary file stays); one still running after
/// [`STOP_GRACE`] is killed.
fn stop_all(children: &mut [Running]) {
    children.iter_mut().for_each(|c| drop(c.stdin.take()));
    let start = std::time::Instant::now();
    while !children.iter_mut().all(Running::poll) && start.elapsed() < STOP_GRACE {
        std::thread::sleep(Duration::from_millis(20));
    }
    children.iter_mut().for_each(Running::kill);
}

/// Starts child `number`: this executable with `args` and the instance flag; a thread per
/// output stream; `ready` hears when its heap is built.
fn start_child(
    exe: &Path,
    args: &[OsString],
    number: usize,
    ready: mpsc::Sender<usize>,
) -> Result<Running> {
    let mut child = Command::new(exe)
        .args(args)
        .arg(INSTANCE_FLAG)
        .arg(number.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start co-running instance {number}"))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut stderr = child.stderr.take().expect("stderr is piped");
    let stdout = std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        if reader.read_line(&mut line).is_ok() && line.trim() == READY {
            let _ = ready.send(number);
        }
        let mut rest = String::new();
        let _ = reader.read_to_string(&mut rest);
        rest
    });
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    Ok(Running {
        number,
        stdin: child.stdin.take(),
        child,
        stdout,
        stderr,
        status: None,
    })
}

/// Runs `count` instances as child processes of this one (see the module documentation),
/// with `interfere` running in this process meanwhile.
pub fn co_run(count: usize, interfere: Option<Interference>) -> Result<CoRun> {
    let exe = std::env::current_exe().context("cannot find the concord executable")?;
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    interrupt::install("the co-running instances are stopped");
    let (ready_tx, ready_rx) = mpsc::channel();
    let mut children: Vec<Running> = Vec::with_capacity(count);
    for number in 1..=count {
        match start_child(&exe, &args, number, ready_tx.clone()) {
            Ok(child) => children.push(child),
            Err(e) => {
                stop_all(&mut children);
                return Err(e);
            }
        }
    }
    drop(ready_tx);
    // Wait until every child is ready or gone, then start them together.
    let mut ready = vec![false; count];
    loop {
        let settled = children
            .iter_mut()
            .map(|c| ready[c.number - 1] || c.poll())
            .filter(|&settled| settled)
            .count();
        if settled == count || interrupt::interrupted() {
            break;
        }
        match ready_rx.recv_timeout(Duration::from_millis(20)) {
            Ok(number) => ready[number - 1] = true,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let load = if interrupt::interrupted() {
        // Stopped before the start: no workload runs at all.
        stop_all(&mut children);
        None
    } else {
        match interfere.map(Interference::start).transpose() {
            Ok(load) => load,
            Err(e) => {
                stop_all(&mut children);
                return Err(e);
            }
        }
    };
    for child in &mut children {
        if let Some(stdin) = child.stdin.as_mut() {
            // A child that is gone cannot hear it; its exit status tells why. The pipe stays
            // open until the child is reaped: a child that sees it close knows this process
            // died (even by SIGKILL, or by a second signal's immediate exit) and stops too.
            let _ = writeln!(stdin, "{GO}").and_then(|()| stdin.flush());
        }
    }
    while !children.iter_mut().all(Running::poll) {
        if interrupt::interrupted() {
            stop_all(&mut children);
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(load) = load {
        load.stop();
    }
    let interrupted = interrupt::interrupted();
    let mut outcome = CoRun {
        instances: Vec::new(),
        failures: Vec::new(),
        interrupted,
    };
    for child in children {
        collect(child, &mut outcome);
    }
    Ok(outcome)
}

/// Reads what an exited child left: its summary, or why it failed. Its stderr (the logger's
/// notices) is passed on, marked with its number.
fn collect(child: Running, outcome: &mut CoRun) {
    let pid = child.child.id();
    let stdout = child.stdout.join().unwrap_or_default();
    let stderr = child.stderr.join().unwrap_or_default();
    let number = child.number;
    let fail = |status: String| Failure {
        number,
        pid,
        status,
        stderr_tail: tail(&stderr, STDERR_TAIL_LINES),
    };
    let status = child.status.expect("every child was reaped");
    if !status.success() {
        outcome.failures.push(fail(describe_status(status)));
        return;
    }
    for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
        let line = line.strip_prefix("concord: ").unwrap_or(line);
        errln!("concord: instance {number}: {line}");
    }
    let parsed = serde_json::from_str::<Value>(stdout.trim())
        .map_err(|e| format!("its summary is not JSON ({e})"))
        .and_then(|mut json| {
            let summary = Summary::from_json(&json)?;
            if let Some(map) = json.as_object_mut() {
                map.remove("pauses_ms");
                map.remove("alloc_stalls_ms");
            }
            Ok((summary, json))
        });
    match parsed {
        Ok((summary, json)) => outcome.instances.push(Instance {
            number,
            pid,
            summary,
            json,
        }),
        Err(e) => outcome
            .failures
            .push(fail(format!("exit status 0, but {e}"))),
    }
}

/// `exit status 2` or `killed by signal 9`.
fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended abnormally".to_string(),
    }
}

/// The last `n` non-empty lines of `text`.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl CoRun {
    /// The summaries of the instances that finished.
    fn summaries(&self) -> Vec<Summary> {
        self.instances.iter().map(|i| i.summary.clone()).collect()
    }

    /// The JSON: the aggregate's summary fields at the top level (so the DESIGN.md fields mean
    /// the same), `co_run` (the number of instances), `instances` (each one's summary JSON with
    /// its number and pid) and `failed_instances`.
    pub fn json(&self, count: usize) -> Value {
        let summaries = self.summaries();
        let mut v = if summaries.is_empty() {
            json!({})
        } else {
            Summary::aggregate(&summaries).json()
        };
        v["co_run"] = json!(count);
        v["instances"] = self.instances.iter().map(|i| i.json.clone()).collect();
        v["failed_instances"] = self
            .failures
            .iter()
            .map(|f| {
                json!({
                    "instance": f.number,
                    "pid": f.pid,
                    "status": f.status,
                    "stderr_tail": f.stderr_tail,
                })
            })
            .collect();
        v
    }

    /// The readable report: the configuration, one line per instance (with its pid), the
    /// failed ones, and the aggregate (GC time summed, wall time the longest).
    pub fn readable(&self, count: usize) -> String {
        let mut s = String::new();
        let summaries = self.summaries();
        if !summaries.is_empty() {
            let all = Summary::aggregate(&summaries);
            let _ = writeln!(
                s,
                "concord run {} ×{count} co-running processes, each: {}",
                all.workload,
                all.setup()
            );
            let _ = writeln!(s, "  switches   {}", all.switches_text());
            if let Some(load) = &all.interference {
                let _ = writeln!(s, "  load       {load}");
            }
            for i in &self.instances {
                let _ = writeln!(
                    s,
                    "  instance {:<2} pid {}: {}",
                    i.number,
                    i.pid,
                    i.summary.line()
                );
            }
            let _ = writeln!(
                s,
                "  aggregate   wall {:.1} ms (longest), {} collections, GC {:.1} ms (sum), pauses \
                 p50 {:.2} / p99 {:.2} / max {:.2} ms",
                all.wall_ms,
                all.gc_count,
                all.pause_total_ms,
                all.pause_p50_ms,
                all.pause_p99_ms,
                all.pause_max_ms
            );
            let _ = writeln!(
                s,
                "              stealing {} attempts, {:.1}% failed; {:.1} CPUs used per collection",
                all.steal_attempts,
                100.0 * all.steal_failure_rate(),
                all.mean_cpus_used
            );
        }
        for f in &self.failures {
            let _ = writeln!(
                s,
                "  instance {:<2} pid {}: FAILED ({})",
                f.number, f.pid, f.status
            );
        }
        s
    }

    /// One message per failed instance: number, pid, exit status and the tail of its stderr.
    pub fn failure_report(&self) -> String {
        let mut s = String::new();
        for f in &self.failures {
            let _ = writeln!(
                s,
                "concord: instance {} (pid {}) failed: {}",
                f.number, f.pid, f.status
            );
            for line in f.stderr_tail.lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        s
    }

    /// Whether every instance finished with the right result.
    pub fn all_ok(&self) -> bool {
        !self.interrupted
            && self.failures.is_empty()
            && self
                .instances
                .iter()
                .all(|i| i.summary.checksum_ok != Some(false) && i.summary.verified != Some(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::find_workload;

    #[test]
    fn instances_get_their_own_files() {
        let mut config = GcConfig::for_preset(concord::Preset::Optimized);
        config.gc_log = Some("gc.log".into());
        config.gc_trace = Some("gc.trace".into());
        let c = instance_config(&config, 2);
        assert_eq!(c.gc_log, Some(PathBuf::from("gc.log.2")));
        assert_eq!(c.gc_trace, Some(PathBuf::from("gc.trace.2")));
        assert_eq!(c.gc_records, None);
    }

    #[test]
    fn a_summary_survives_its_json() {
        let workload = find_workload("binary-trees").unwrap();
        let params = WorkloadParams {
            size: Some(8),
            ..WorkloadParams::default()
        };
        let mut config = crate::experiment::arm::build_config(&[
            ("heap", "8m".to_string()),
            ("young", "1m".to_string()),
        ])
        .unwrap();
        config.verify = true;
        let summary = run_on_heap(&workload, &params, &config, || Ok(()), false)
            .unwrap()
            .summary;
        let mut json = summary.json();
        json["pauses_ms"] = json!(summary.pauses_ms);
        json["alloc_stalls_ms"] = json!(summary.alloc_stalls_ms);
        let back = Summary::from_json(&json).unwrap();
        let (original, round_trip) = (summary.json(), back.json());
        let mut dropped: Vec<&String> = original
            .as_object()
            .unwrap()
            .keys()
            .filter(|k| round_trip.get(k.as_str()).is_none())
            .collect();
        dropped.sort();
        // Only the workload's details and the scheduling report are left behind (they stay in
        // the instance's own JSON); every other field survives unchanged.
        let mut expected: Vec<&String> = summary.details.iter().map(|(k, _)| k).collect();
        let report = "mutator_sched_report".to_string();
        expected.push(&report);
        expected.sort();
        assert_eq!(dropped, expected);
        for (k, v) in round_trip.as_object().unwrap() {
            assert_eq!(Some(v), original.get(k), "{k}");
        }
        assert_eq!(back.pauses_ms, summary.pauses_ms);
        assert_eq!(back.alloc_stalls_ms, summary.alloc_stalls_ms);
        assert_eq!(back.attribution, summary.attribution);
        assert_eq!(back.line(), summary.line());
        json.as_object_mut().unwrap().remove("gc_count");
        let err = Summary::from_json(&json).err().unwrap();
        assert_eq!(err, "the summary has no valid \"gc_count\"");
    }

    #[test]
    fn failures_say_how_the_child_ended() {
        assert_eq!(
            describe_status(ExitStatus::from_raw(2 << 8)),
            "exit status 2"
        );
        assert_eq!(
            describe_status(ExitStatus::from_raw(9)),
            "killed by signal 9"
        );
        assert_eq!(tail("a\n\nb\nc\n", 2), "b\nc");
        let run = CoRun {
            instances: Vec::new(),
            failures: vec![Failure {
                number: 2,
                pid: 42,
                status: "exit status 2".into(),
                stderr_tail: "concord: out of memory".into(),
            }],
            interrupted: false,
        };
        assert!(!run.all_ok());
        assert_eq!(
            run.failure_report(),
            "concord: instance 2 (pid 42) failed: exit status 2\n  concord: out of memory\n"
        );
        assert_eq!(run.json(2)["failed_instances"][0]["pid"], 42);
        assert!(run
            .readable(2)
            .contains("instance 2  pid 42: FAILED (exit status 2)"));
    }
}
