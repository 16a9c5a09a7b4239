//! `concord sim WORKLOAD [SIZE]`: a workload's collections replayed on a simulated machine.
//!
//! The collections come from a GC trace: `--trace FILE` (written by `concord run … --gc-trace
//! FILE`), or, without it, one recorded on the fly by running the workload here first, on a
//! heap configured exactly as `concord run` with the same flags would configure it (the trace
//! goes to a temporary file, removed once read). The flags are `run`'s where they mean the
//! same (the workload, `--preset`, `--gc-threads`, `--mutators`, the switch flags, `--config`,
//! `--gc-records`, `--json`: parsed and resolved by the same code), plus the machine
//! (`--cpus`/`--smt`/`--nodes` or `--machine`), `--sched`, `--load`, `--seed` and `--costs`.
//! Without `--gc-threads` (or `--config`), the GC threads follow the simulated machine:
//! HotSpot's rule for its CPU count (15 on `xeon-2x10`). A trace that records its run (the
//! workload and heap size, [`TraceRun`]) supplies both: the workload argument may be left out,
//! and one naming another workload, or a heap setting other than the trace's, is refused.
//! Everything is checked before anything runs (exit 2, naming what is allowed); an output that
//! cannot be written at the end is exit 1. The simulation itself is
//! [`concord_sim::replay::driver::simulate`]; the records and summary are `run`'s types
//! ([`Summary`], `CollectionRecord`), the summary JSON with one more object, `sim`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use concord::config::{format_size, same_file};
use concord::os::fs::check_creatable;
use concord::telemetry::gc_trace::TraceRun;
use concord::GcConfig;
use concord_sim::machine::Machine;
use concord_sim::replay::driver::{SchedModel, WakePlacement};
use concord_sim::replay::{check_plausible, load_trace, ReplayCollection};
use concord_workloads::Workload;

use super::simulation::{placement_words, record, simulate, write_records, Simulator, Subject};
use crate::console::{errln, out, outln};
use crate::experiment::find_workload;
use crate::flags::{workload_size, RunFlags, WorkloadArgs};
use crate::interference::Interference;
use crate::run::{build_config, read_config, RunArgs};

/// The workload of `concord sim [WORKLOAD] [SIZE]`: unlike `run`'s, it may be left out with
/// `--trace` (the trace's own workload is taken).
#[derive(Args, Debug, Clone)]
pub struct SimWorkload {
    /// Workload to simulate: gcbench, binary-trees, search, transform, render, database,
    /// kmeans, kv-service, queue-churn (default: with --trace the one it was recorded from,
    /// otherwise gcbench).
    pub workload: Option<String>,
    /// Workload size where it has one (binary-trees: tree depth, default 18).
    #[arg(value_parser = workload_size, allow_negative_numbers = true)]
    pub size: Option<u32>,
}

/// The workload recorded without a workload argument.
const DEFAULT_WORKLOAD: &str = "gcbench";

/// The label of a trace's run that names no workload, given none.
const UNKNOWN_WORKLOAD: &str = "unknown workload";

/// Flags of `concord sim WORKLOAD [SIZE]`.
#[derive(Args, Debug, Clone)]
pub struct SimWorkloadArgs {
    #[command(flatten)]
    pub workload: SimWorkload,
    /// Policy preset: vanilla, modern, suo18, naps or optimized (default optimized).
    #[arg(long)]
    pub preset: Option<String>,
    #[command(flatten)]
    pub run: RunFlags,
    /// Logical CPUs of the simulated machine (with --smt and --nodes; or give --machine).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Two hardware threads per core: on or off (default off; with --machine, the shape's).
    #[arg(long, value_name = "on|off")]
    pub smt: Option<String>,
    /// NUMA nodes of the simulated machine, one socket each (default 1).
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub nodes: Option<String>,
    /// A named machine instead of --cpus/--nodes: xeon-2x10 (20 CPUs, 2 sockets) or
    /// magny-cours-48 (48 CPUs, 8 nodes).
    #[arg(long, value_name = "NAME")]
    pub machine: Option<String>,
    /// Scheduler model: cfs (CFS as in Linux 4.9) or eevdf (Linux 6.6).
    #[arg(long, value_name = "cfs|eevdf", default_value = "cfs")]
    pub sched: SchedModel,
    /// Where the scheduler model puts a woken thread: default (the model's own wake-affine
    /// and idle-CPU search) or pack (this machine's kernel, booted with sched_vcpu_pack: a
    /// woken thread stays on its waker's CPU, or now and then is pulled onto it, while that
    /// CPU's recent utilization with the thread is below a room, even if another CPU is idle;
    /// see docs/simulator.md).
    #[arg(
        long = "wake-placement",
        value_name = "default|pack",
        default_value = "default"
    )]
    pub wake_placement: WakePlacement,
    /// Busy loops on the simulated machine beside the collector: busy:K (K in 1..=1024), or
    /// busy:K@CPU pinned to that CPU.
    #[arg(long, value_name = "busy:K[@CPU]")]
    pub load: Option<Interference>,
    /// The simulation's seed: the same seed gives the same result, bit for bit.
    #[arg(
        long,
        value_name = "S",
        default_value_t = 0,
        allow_hyphen_values = true
    )]
    pub seed: u64,
    /// Replay this GC trace (written by concord run --gc-trace) instead of recording one by
    /// running the workload here first.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// The simulator's costs from this file, written by concord sim calibrate (default: the
    /// built-in costs, measured once on an AMD EPYC VM).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
    /// Print the summary as one JSON object (concord run's, with a sim object).
    #[arg(long)]
    pub json: bool,
    /// Write one JSON line per simulated collection here (the records concord run writes).
    #[arg(long = "gc-records", value_name = "FILE")]
    pub gc_records: Option<PathBuf>,
    /// Read configuration from this TOML file (keys as the flags, e.g. heap = "64m").
    #[arg(long, env = "CONCORD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
}

/// Where the collections to replay come from.
enum Source {
    /// A trace file given with `--trace`, loaded.
    File(PathBuf, Vec<ReplayCollection>),
    /// Recorded by running the workload with the configuration.
    Record,
}

/// Everything `concord sim WORKLOAD` needs, checked.
struct Checked {
    /// The workload, its configuration and the setup.
    subject: Subject,
    /// Where the costs came from, in words.
    costs_from: String,
    /// The warning about GC threads that far outnumber the simulated CPUs, if they do.
    oversubscribed: Option<String>,
}

/// The `run` flags of `args` for workload `workload`, as `concord run` would be given them
/// (for the configuration).
fn run_args(args: &SimWorkloadArgs, workload: &str) -> RunArgs {
    RunArgs {
        workload: WorkloadArgs {
            workload: workload.to_string(),
            size: args.workload.size,
        },
        preset: args.preset.clone(),
        run: args.run.clone(),
        co_run: None,
        co_run_instance: None,
        json: args.json,
        gc_log: None,
        gc_records: None,
        gc_trace: None,
        config: args.config.clone(),
        stall: Default::default(),
    }
}

/// The workload to simulate and its label, from the workload argument `named` and the run
/// `trace` (its path and what it recorded), if one is replayed: the argument must name the
/// trace's workload where the trace records one (then it may be left out); a trace that
/// records none is labelled by the argument, or [`UNKNOWN_WORKLOAD`] without one. `None`:
/// no workload of this build (a trace's workload unknown here, replayed as recorded).
fn resolve_workload(
    named: Option<&str>,
    trace: Option<(&Path, &TraceRun)>,
) -> Result<(Option<Arc<dyn Workload>>, String)> {
    // `concord sim NAME`: a workload, or a subcommand misspelt.
    let find = |name: &str| {
        find_workload(name).map_err(|e| {
            anyhow!("{e}; or a subcommand of concord sim (allowed: calibrate, validate)")
        })
    };
    let recorded = trace.and_then(|(path, run)| run.workload.as_deref().map(|w| (path, w)));
    match (named, recorded) {
        (Some(name), Some((path, recorded))) => {
            let workload = find(name)?;
            if workload.name() != recorded {
                bail!(
                    "workload {name}: the trace {} was recorded from {recorded}, not {} \
                     (allowed: {recorded}, or no workload argument to take the trace's)",
                    path.display(),
                    workload.name()
                );
            }
            Ok((Some(workload), recorded.to_string()))
        }
        (None, Some((_, recorded))) => Ok((find_workload(recorded).ok(), recorded.to_string())),
        (Some(name), None) => {
            let workload = find(name)?;
            let label = workload.name().to_string();
            Ok((Some(workload), label))
        }
        (None, None) if trace.is_some() => Ok((None, UNKNOWN_WORKLOAD.to_string())),
        (None, None) => {
            let workload = find(DEFAULT_WORKLOAD)?;
            Ok((Some(workload), DEFAULT_WORKLOAD.to_string()))
        }
    }
}

/// Checks every flag of `args` (bad input is an error naming the flag and what is allowed);
/// loads `--trace` and `--costs`.
fn check(args: &SimWorkloadArgs) -> Result<(Checked, Source)> {
    let trace = match &args.trace {
        Some(path) => {
            Some(load_trace(path).map_err(|e| anyhow!("--trace {}: {e}", path.display()))?)
        }
        None => None,
    };
    let traced = args.trace.as_deref().zip(trace.as_ref().map(|t| &t.run));
    let (workload, workload_name) = resolve_workload(args.workload.workload.as_deref(), traced)?;
    let params = args.run.params(args.workload.size, 1);
    if let Some(workload) = &workload {
        workload
            .validate(&params)
            .map_err(|e| anyhow!("workload {}: {e}", workload.name()))?;
    }
    args.run.refuse(
        "concord sim",
        &["interfere"],
        "it would load this machine while the workload is recorded; busy loops on the \
         simulated machine are --load busy:K",
    )?;
    let machine = Machine::from_flags(
        args.machine.as_deref(),
        args.cpus.as_deref(),
        args.smt.as_deref(),
        args.nodes.as_deref(),
    )?;
    let simulator = Simulator::new(machine, args.sched, args.seed, args.costs.as_deref())?
        .with_wake_placement(args.wake_placement);
    let run = run_args(
        args,
        workload.as_ref().map_or(DEFAULT_WORKLOAD, |w| w.name()),
    );
    let file = read_config(&run)?;
    // The heap is the trace's where it records one; a heap set otherwise must be the same.
    let recorded_heap = trace.as_ref().and_then(|t| t.run.heap_bytes);
    let default_heap = match (recorded_heap, &workload) {
        (Some(bytes), _) => usize::try_from(bytes).unwrap_or(usize::MAX),
        (None, Some(workload)) => workload.default_heap(&params),
        (None, None) => GcConfig::default().heap_size,
    };
    let mut config = build_config(&run, file.as_ref(), default_heap)?;
    if let Some(bytes) = recorded_heap {
        if config.heap_size.div_ceil(1024) as u64 != bytes.div_ceil(1024) {
            bail!(
                "heap {}: the trace {} was recorded with a heap of {} (allowed: {}, or no heap \
                 setting to take the trace's)",
                format_size(config.heap_size),
                args.trace
                    .as_deref()
                    .map_or_else(String::new, |p| p.display().to_string()),
                format_size(bytes as usize),
                format_size(bytes as usize)
            );
        }
    }
    // GC threads left to the preset follow the simulated machine (HotSpot's rule for its CPU
    // count, as the simulated arms of the experiment commands), not this one.
    if args.run.gc_threads.is_none() && args.config.is_none() {
        config.gc_threads = simulator.default_gc_threads();
    }
    if let Some(records) = &args.gc_records {
        if let Some(trace) = args.trace.as_deref().filter(|t| same_file(t, records)) {
            bail!(
                "--gc-records: '{}' names the same file as --trace ('{}'); the records would \
                 replace the trace (allowed: another file)",
                records.display(),
                trace.display()
            );
        }
        check_creatable(records)
            .map_err(|e| anyhow!("--gc-records: cannot write {}: {e}", records.display()))?;
    }
    let setup = simulator
        .setup(&config, params.mutators, args.load, args.seed)
        .map_err(|e| anyhow!(e))?;
    if let (Some(path), Some(trace)) = (&args.trace, &trace) {
        let heap_is = if recorded_heap.is_some() {
            "the one it was recorded with"
        } else {
            "the one simulated: the trace does not record its own, give it with --heap"
        };
        check_plausible(&trace.collections, config.heap_size as u64, heap_is)
            .map_err(|e| anyhow!("--trace {}: {e}", path.display()))?;
    }
    let source = match (&args.trace, trace) {
        (Some(path), Some(trace)) => Source::File(path.clone(), trace.collections),
        _ => Source::Record,
    };
    let oversubscribed =
        simulator.oversubscription_warning(config.gc_threads, config.dynamic_gc_threads);
    let checked = Checked {
        subject: Subject {
            workload_name,
            params,
            config,
            setup,
            wake_placement: simulator.wake_placement,
        },
        costs_from: simulator.costs_from,
        oversubscribed,
    };
    Ok((checked, source))
}

/// Runs `concord sim WORKLOAD [SIZE]`.
pub fn run(args: SimWorkloadArgs) -> Result<ExitCode> {
    let (checked, source) = check(&args)?;
    crate::stop_if_checking_args("configuration, machine, costs and trace checked");
    let Checked {
        subject,
        costs_from,
        oversubscribed,
    } = &checked;
    if let Some(warning) = oversubscribed {
        errln!("concord sim: {warning}");
    }
    let Subject {
        workload_name,
        params,
        config,
        setup,
        wake_placement,
    } = subject;
    let (trace, recorded) = match source {
        Source::File(path, trace) => {
            errln!(
                "concord sim: replaying {} collections of {}",
                trace.len(),
                path.display()
            );
            (trace, None)
        }
        Source::Record => {
            errln!("concord sim: recording the collections of {workload_name} on this machine");
            let (trace, summary) = record(&find_workload(workload_name)?, params, config)?;
            (trace, Some(summary))
        }
    };
    errln!(
        "concord sim: {} on {} ({} CPUs), {} scheduler{}, seed {}, {} costs",
        workload_name,
        setup.machine.name(),
        setup.machine.cpus(),
        setup.sched,
        placement_words(*wake_placement),
        setup.seed,
        costs_from
    );
    let mut simulated = simulate(subject, trace, recorded.as_ref())?;
    let finishing = std::time::Instant::now();
    let records_failure = match &args.gc_records {
        Some(path) => write_records(path, &simulated.stats).err(),
        None => None,
    };
    simulated.outputs_finish_ms = finishing.elapsed().as_secs_f64() * 1e3;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&simulated.json())?)?;
    } else {
        let f = &simulated.figures;
        out!(
            "{}",
            simulated
                .summary
                .readable()
                .replacen("concord run", "concord sim", 1)
        )?;
        outln!(
            "  sim       {} ({} CPUs), {} scheduler{}, seed {}: GC workers on {} distinct CPUs \
             (median), {:.3} ms run-queue wait, simulated in {:.2} s",
            f.machine,
            f.cpus,
            f.sched,
            placement_words(*wake_placement),
            f.seed,
            f.distinct_cpus_p50,
            f.runqueue_wait_ms,
            f.wall_s
        )?;
    }
    if let Some(failure) = &records_failure {
        errln!("concord: {failure}");
    }
    // As `run`: a wrong checksum of the recorded workload fails the command too.
    if records_failure.is_some() || simulated.summary.checksum_ok == Some(false) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Instant;

    use clap::Parser;
    use concord::parallel::WorkerPool;
    use concord_sim::exec::Costs;
    use concord_sim::replay::driver::SimRun;
    use concord_sim::replay::output::gc_stats;
    use concord_sim::replay::output::SimulatedCollection;
    use concord_sim::replay::threads::ReplayTask;
    use serde_json::Value;

    use super::super::simulation::assemble;
    use super::*;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        sim: SimWorkloadArgs,
    }

    fn args(argv: &[&str]) -> SimWorkloadArgs {
        let argv = ["concord-sim"].iter().chain(argv);
        TestCli::try_parse_from(argv).unwrap().sim
    }

    fn error(argv: &[&str]) -> String {
        match check(&args(argv)) {
            Ok(_) => panic!("{argv:?} was accepted"),
            Err(e) => format!("{e:#}"),
        }
    }

    #[test]
    fn the_run_flags_resolve_as_runs_and_the_machine_flags_build_the_machine() {
        let (c, source) = check(&args(&[
            "binary-trees",
            "10",
            "--preset",
            "vanilla",
            "--gc-threads",
            "15",
            "--mutators",
            "3",
            "--steal",
            "adaptive",
            "--machine",
            "xeon-2x10",
            "--smt",
            "on",
            "--sched",
            "eevdf",
            "--seed",
            "7",
        ]))
        .unwrap();
        let costs_from = c.costs_from;
        let c = c.subject;
        assert_eq!(c.workload_name, "binary-trees");
        assert_eq!(c.setup.machine.cpus(), 40);
        assert_eq!(c.setup.sched, SchedModel::Eevdf);
        assert_eq!(
            (c.setup.seed, c.setup.gc_threads, c.setup.mutators),
            (7, 15, 3)
        );
        assert_eq!(
            c.setup.policy.steal,
            concord::parallel::StealPolicy::Adaptive
        );
        assert_eq!(
            c.setup.policy.task_queue,
            concord::parallel::TaskQueueKind::Monitor
        );
        assert_eq!(c.setup.costs, Costs::DEFAULT);
        assert_eq!(costs_from, "built-in");
        // Without --trace the workload is recorded.
        assert!(matches!(source, Source::Record), "no --trace was given");
        let c = check(&args(&["--cpus", "8", "--nodes", "2"]))
            .unwrap()
            .0
            .subject;
        assert_eq!((c.setup.machine.cpus(), c.setup.machine.nodes()), (8, 2));
        assert_eq!(c.setup.sched, SchedModel::Cfs);
        assert_eq!(c.wake_placement, WakePlacement::Default);
    }

    #[test]
    fn the_wake_placement_flag_reaches_the_setup() {
        for (flag, expected) in [
            (None, WakePlacement::Default),
            (Some("default"), WakePlacement::Default),
            (Some("pack"), WakePlacement::Pack),
        ] {
            let mut argv = vec!["--cpus", "2", "--sched", "eevdf"];
            argv.extend(flag.iter().flat_map(|f| ["--wake-placement", f]));
            let c = check(&args(&argv)).unwrap().0.subject;
            assert_eq!(c.wake_placement, expected, "{flag:?}");
            assert_eq!(c.setup.sched, SchedModel::Eevdf);
        }
        let argv = ["concord-sim", "--cpus", "2", "--wake-placement", "spread"];
        let err = TestCli::try_parse_from(argv).unwrap_err().to_string();
        assert!(
            err.contains("is not a wake-up placement (allowed: default, pack)"),
            "{err}"
        );
    }

    #[test]
    fn bad_flags_are_refused_naming_what_is_allowed() {
        for (argv, expected) in [
            (&["--cpus", "0"][..], "--cpus"),
            (&["--cpus", "6", "--nodes", "4"], "multiple of 4"),
            (
                &["--machine", "cray-1"],
                "allowed: xeon-2x10, magny-cours-48",
            ),
            (&["--machine", "xeon-2x10", "--cpus", "4"], "not both"),
            (&["--cpus", "4", "--smt", "maybe"], "allowed: on, off"),
            (&["--cpus", "4", "--steal", "random"], "allowed: best-of-2"),
            (&["--cpus", "4", "--load", "busy:1@9"], "allowed: 0..=3"),
            (&["--cpus", "4", "--interfere", "busy:1"], "--load busy:K"),
            (&["nosuchload", "--cpus", "4"], "nosuchload"),
        ] {
            let err = error(argv);
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
    }

    #[test]
    fn a_trace_given_is_loaded_and_a_costs_file_read() {
        let dir = std::env::temp_dir().join(format!("concord-sim-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let costs = dir.join("costs.json");
        std::fs::write(&costs, "{\"version\": 999}").unwrap();
        let err = error(&["--cpus", "4", "--costs", costs.to_str().unwrap()]);
        assert!(
            err.starts_with("--costs: ") && err.contains("version 999"),
            "{err}"
        );
        let trace = dir.join("empty.trace");
        std::fs::write(&trace, b"CGCTRACE\x01\x00").unwrap();
        let err = error(&["--cpus", "4", "--trace", trace.to_str().unwrap()]);
        assert!(err.contains("holds no collection"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_are_written_as_runs_and_a_failed_write_says_what_is_lost() {
        let collection = |id| {
            ReplayCollection::try_from(concord::telemetry::gc_trace::TraceCollection {
                id,
                ..Default::default()
            })
            .unwrap()
        };
        let trace = vec![collection(3), collection(4)];
        let stats = gc_stats(&trace, vec![Default::default(); 2]);
        let dir = std::env::temp_dir().join(format!("concord-sim-records-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("records.jsonl");
        write_records(&path, &stats).unwrap();
        let ids: Vec<u64> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["id"]
                    .as_u64()
                    .unwrap()
            })
            .collect();
        assert_eq!(ids, vec![3, 4]);
        std::fs::remove_dir_all(&dir).unwrap();
        let failure = write_records(Path::new("/dev/full"), &stats).unwrap_err();
        assert!(failure.to_string().contains("GC(3)..GC(4)"), "{failure}");
    }

    /// The summary of a simulation has exactly the top-level keys of `concord run --json`'s
    /// plus `sim`. The workload is recorded as `concord sim` records it; the collections are
    /// replayed on real threads (the replay task on `concord`'s engine), standing in for the
    /// simulated engine.
    #[test]
    fn the_summary_has_runs_keys_plus_sim() {
        let (c, source) = check(&args(&[
            "binary-trees",
            "12",
            "--heap",
            "4m",
            "--cpus",
            "4",
            "--gc-threads",
            "2",
        ]))
        .unwrap();
        assert!(matches!(source, Source::Record), "no --trace was given");
        let c = c.subject;
        let workload = find_workload(&c.workload_name).unwrap();
        let (trace, recorded) = record(&workload, &c.params, &c.config).unwrap();
        assert!(trace.len() > 1);
        let pool = WorkerPool::new(2, "sim-test", c.config.parking, |_| {}).unwrap();
        let started = Instant::now();
        let collections: Vec<SimulatedCollection> = trace
            .iter()
            .map(|collection| {
                let start_ns = started.elapsed().as_nanos() as u64;
                let (_, workers) = ReplayTask::new(collection).run(&pool, &c.setup.policy, 2);
                SimulatedCollection {
                    workers,
                    start_ns,
                    phase_start_ns: start_ns,
                    end_ns: started.elapsed().as_nanos() as u64,
                    monitor: None,
                    affinity: None,
                }
            })
            .collect();
        let end_ns = started.elapsed().as_nanos() as u64;
        let run = SimRun {
            collections,
            threads: Vec::new(),
            end_ns,
        };
        let simulated = assemble(&c, &trace, run, Some(&recorded), 0.5);
        let sim_json = simulated.json();
        let mut run_json = recorded.json();
        run_json["outputs_finish_ms"] = serde_json::json!(0.0);
        let keys = |v: &Value| -> Vec<String> {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k
        };
        let mut expected = keys(&run_json);
        expected.push("sim".to_string());
        expected.sort();
        assert_eq!(keys(&sim_json), expected);
        // The figures are the replayed collections', the workload's result the recording's.
        assert_eq!(sim_json["gc_count"], trace.len());
        let copied: u64 = trace.iter().map(ReplayCollection::bytes_copied).sum();
        assert_eq!(sim_json["bytes_copied"], copied);
        assert_eq!(sim_json["checksum"], run_json["checksum"]);
        assert_eq!(sim_json["checksum_ok"], true);
        let sim = &sim_json["sim"];
        assert_eq!(
            (sim["cpus"].as_u64(), sim["sched"].as_str()),
            (Some(4), Some("cfs"))
        );
        assert_eq!(sim["machine"], "4cpu-1node-smt-off");
        assert!(sim["distinct_cpus_p50"].as_f64().unwrap() >= 1.0);
        assert_eq!(sim["wall_s"], 0.5);
    }
}
