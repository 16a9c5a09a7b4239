//! `concord run <workload>`: build a heap from presets, a TOML file, `CONCORD_*` variables and
//! flags, run the workload, and print a summary (readable, or the summary JSON of DESIGN.md).
//! With `--interfere busy:K` busy-loop threads run alongside; with `--co-run M`, M instances
//! run at once as separate processes ([`crate::co_run`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;

use anyhow::{bail, Result};
use clap::Args;
use concord::config::{check_files, ConfigBuilder, NamedFile, SourcedConfig};
use concord::os::mutator_sched::{
    check_fifo_scope, read_rt_runtime_us, RunThreads, RT_RUNTIME_PATH,
};
use concord::os::policy::MutatorSched;
use concord::GcConfig;

use crate::co_run::{co_run, instance_config, run_instance, MAX_CO_RUN};
use crate::console::{err, errln, out, outln};
use crate::experiment::{find_workload, run_on_heap_with};
use crate::flags::{count_in, RunFlags, WorkloadArgs};
use crate::interference::Interference;
use crate::interrupt;
use crate::stall::{self, StallFlags};

/// Flags of `concord run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Policy preset: vanilla, modern, suo18, naps or optimized (default optimized).
    #[arg(long)]
    pub preset: Option<String>,
    #[command(flatten)]
    pub run: RunFlags,
    /// Run M instances of the workload at once, each a separate concord process with its own
    /// heap and the full configuration, and report each and their aggregate (M in 1..=64).
    #[arg(
        long = "co-run",
        value_name = "M",
        env = "CONCORD_CO_RUN",
        value_parser = count_in(1, MAX_CO_RUN),
        allow_negative_numbers = true
    )]
    pub co_run: Option<u32>,
    /// Internal: run as co-running instance N of a parent `concord run --co-run M`.
    #[arg(
        long = "co-run-instance",
        value_name = "N",
        hide = true,
        value_parser = count_in(1, MAX_CO_RUN)
    )]
    pub co_run_instance: Option<u32>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write a HotSpot unified-logging style GC log here (with --co-run: PATH.1, PATH.2, …).
    #[arg(long = "gc-log")]
    pub gc_log: Option<PathBuf>,
    /// Write one JSON line per collection (per-worker counters, phases) here (with --co-run:
    /// PATH.1, PATH.2, …).
    #[arg(long = "gc-records")]
    pub gc_records: Option<PathBuf>,
    /// Record the parallel work of every collection (root tasks; the objects copied or marked,
    /// their sizes and references) in this binary file, for the simulator (with --co-run:
    /// PATH.1, …).
    #[arg(long = "gc-trace")]
    pub gc_trace: Option<PathBuf>,
    /// Read configuration from this TOML file (keys as the flags, e.g. heap = "64m").
    #[arg(long, env = "CONCORD_CONFIG")]
    pub config: Option<PathBuf>,
    // The stall harnesses of paper 002: slow log device, I/O load, memory pressure.
    #[command(flatten)]
    pub stall: StallFlags,
}

/// The run-harness settings (`interfere`, `co-run`): they describe the experiment, not the
/// heap, so they are not configuration keys of the library, but a TOML file may hold them next
/// to those keys. Flags and `CONCORD_INTERFERE` / `CONCORD_CO_RUN` beat the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Harness {
    /// Busy-loop threads for the run.
    pub interfere: Option<Interference>,
    /// Instances run at once.
    pub co_run: usize,
}

/// The harness keys a configuration file may hold, kebab-case (snake_case is the same key).
const HARNESS_KEYS: [&str; 2] = ["interfere", "co-run"];

/// A `--config` file, read once: the harness keys, and the rest as TOML text for the
/// configuration builder.
pub struct ConfigFile {
    /// The file's name as given.
    name: String,
    /// Everything but the harness keys.
    rest: String,
    /// The harness keys.
    harness: Harness,
}

/// Reads `--config`, if given (once: it may be a pipe such as `/dev/stdin`).
pub fn read_config(args: &RunArgs) -> Result<Option<ConfigFile>> {
    args.config.as_deref().map(read_config_file).transpose()
}

/// Read the configuration file: the harness keys, and the rest as TOML text for the
/// configuration builder.
fn read_config_file(path: &std::path::Path) -> Result<ConfigFile> {
    let name = path.display().to_string();
    let text = concord::config::read_config_file(path)
        .map_err(|e| anyhow::anyhow!("--config: cannot read {name}: {e}"))?;
    // A file that does not parse is left to the builder, whose message names the problem.
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return Ok(ConfigFile {
            name,
            rest: text,
            harness: Harness::default(),
        });
    };
    let mut harness = Harness::default();
    for key in HARNESS_KEYS {
        let snake = key.replace('-', "_");
        let (spelled, value) = match (table.remove(key), table.remove(&snake)) {
            (Some(_), Some(_)) => anyhow::bail!(
                "{snake} in {name}: the same option is already set as {key} in {name} \
                 (allowed: one of the two spellings)"
            ),
            (Some(value), _) => (key, value),
            (None, Some(value)) => (snake.as_str(), value),
            (None, None) => continue,
        };
        let shown = value.to_string();
        match key {
            "interfere" => {
                let text = value.as_str().map(str::to_string).unwrap_or(shown.clone());
                harness.interfere = Some(text.parse::<Interference>().map_err(|e| {
                    anyhow::anyhow!("interfere in {name}: '{}' {e}", text.trim_matches('"'))
                })?);
            }
            _ => {
                let m = value
                    .as_integer()
                    .filter(|m| (1..=i64::from(MAX_CO_RUN)).contains(m))
                    .ok_or_else(|| {
                        anyhow::anyhow!("{spelled} in {name}: '{shown}' is not an instance count (allowed: 1..={MAX_CO_RUN})")
                    })?;
                harness.co_run = m as usize;
            }
        }
    }
    Ok(ConfigFile {
        name,
        rest: table.to_string(),
        harness,
    })
}

/// `CONCORD_INTERFERE`, read by `run` only (the bench commands take `--interfere` alone).
const INTERFERE_VAR: &str = "CONCORD_INTERFERE";
/// The harness variables: not configuration keys of the library, so its builder never sees them.
const HARNESS_VARS: [&str; 2] = [INTERFERE_VAR, "CONCORD_CO_RUN"];

/// The harness of `args`: flags and environment, then the file, then defaults.
pub fn harness(args: &RunArgs, file: Option<&ConfigFile>) -> Result<Harness> {
    let file = file.map(|f| f.harness).unwrap_or_default();
    let env = match std::env::var(INTERFERE_VAR) {
        Ok(text) if !text.trim().is_empty() => Some(
            text.parse::<Interference>()
                .map_err(|e| anyhow::anyhow!("{INTERFERE_VAR}: '{text}' {e}"))?,
        ),
        _ => None,
    };
    Ok(Harness {
        interfere: args.run.interfere.or(env).or(file.interfere),
        co_run: args
            .co_run
            .map(|m| m as usize)
            .unwrap_or(if file.co_run > 0 { file.co_run } else { 1 }),
    })
}

/// Resolve the configuration for `args` and its `--config` file (TOML < env < flags; workload
/// default heap last), refusing keys that would have no effect
/// ([`SourcedConfig::refuse_keys_without_effect`]). For a command that declared its other
/// files ([`declare_files`]), the configuration's outputs are checked against them and the
/// configuration file ([`check_files`]); `concord run` checks its files itself, once the
/// co-running instances' names are known.
pub fn build_config(
    args: &RunArgs,
    file: Option<&ConfigFile>,
    default_heap: usize,
) -> Result<GcConfig> {
    let sourced = build_sourced_config(args, file, default_heap)?;
    if let Some(declared) = DECLARED.get() {
        let mut inputs = config_input(args);
        inputs.extend(declared.inputs.iter().cloned());
        let mut outputs = sourced.outputs_of(&sourced.config, None);
        outputs.extend(declared.outputs.iter().cloned());
        check_files(&inputs, &outputs)?;
    }
    Ok(sourced.config)
}

/// [`build_config`] without the declared files, keeping where each value came from.
fn build_sourced_config(
    args: &RunArgs,
    file: Option<&ConfigFile>,
    default_heap: usize,
) -> Result<SourcedConfig> {
    let mut b = ConfigBuilder::new();
    if let Some(file) = file {
        b.apply_toml_str(&file.rest, &file.name)?;
    }
    b.apply_env(
        std::env::vars_os()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .filter(|(k, _)| !HARNESS_VARS.contains(&k.as_str())),
    )?;
    if let Some(preset) = &args.preset {
        b.set_cli("preset", preset)?;
    }
    for (key, value) in args.run.settings() {
        b.set_cli(key, &value)?;
    }
    if let Some(p) = &args.gc_log {
        b.set_cli("gc-log", &p.display().to_string())?;
    }
    if let Some(p) = &args.gc_records {
        b.set_cli("gc-records", &p.display().to_string())?;
    }
    if let Some(p) = &args.gc_trace {
        b.set_cli("gc-trace", &p.display().to_string())?;
    }
    if !b.is_set("heap") {
        b.set_cli("heap", &format!("{}k", default_heap.div_ceil(1024)))?;
    }
    let sourced = b.build_sourced()?;
    sourced.refuse_keys_without_effect()?;
    Ok(sourced)
}

/// The files a command reads and writes beside its configuration's, for [`build_config`].
struct DeclaredFiles {
    inputs: Vec<NamedFile>,
    outputs: Vec<NamedFile>,
}

/// What [`declare_files`] declared: set once per process, before the configuration is built.
static DECLARED: OnceLock<DeclaredFiles> = OnceLock::new();

/// Declares the files a command that builds its configuration with [`build_config`] reads
/// (`inputs`) and writes (`outputs`) beside the configuration's own, each with the flag that
/// gave it (`concord sim`: `--costs`, `--trace`; `--gc-records`); unset ones are `None`.
/// They are checked against each other now, and [`build_config`] checks them with the
/// configuration file and the configuration's outputs ([`check_files`]), before anything is
/// opened.
pub fn declare_files(
    inputs: &[(&str, Option<&Path>)],
    outputs: &[(&str, Option<&Path>)],
) -> Result<()> {
    let named = |files: &[(&str, Option<&Path>)]| -> Vec<NamedFile> {
        files
            .iter()
            .filter_map(|&(flag, path)| Some(NamedFile::new(flag, path?)))
            .collect()
    };
    let declared = DeclaredFiles {
        inputs: named(inputs),
        outputs: named(outputs),
    };
    check_files(&declared.inputs, &declared.outputs)?;
    // Declared once per process; a second declaration (none is made) would change nothing.
    let _ = DECLARED.set(declared);
    Ok(())
}

/// The configuration file of `args`, as an input named by the flag or variable that gave it.
fn config_input(args: &RunArgs) -> Vec<NamedFile> {
    let Some(path) = &args.config else {
        return Vec::new();
    };
    // clap takes `--config` over the variable, so the variable gave it only without the flag.
    let flag_given = std::env::args_os()
        .skip(1)
        .any(|a| a == "--config" || a.to_string_lossy().starts_with("--config="));
    let from_env = !flag_given && std::env::var_os(CONFIG_VAR).is_some_and(|v| v == *path);
    let name = if from_env { CONFIG_VAR } else { "--config" };
    vec![NamedFile::new(name, path)]
}

/// The variable that names the configuration file when `--config` does not.
const CONFIG_VAR: &str = "CONCORD_CONFIG";

/// The files `concord run` writes: the configuration's outputs, or for co-running instances
/// `instances` each one's own GC log, records and trace (`PATH.N`, [`instance_config`]) and
/// the mutator profile they share, once.
fn run_outputs(sourced: &SourcedConfig, instances: &[usize]) -> Vec<NamedFile> {
    let config = &sourced.config;
    if instances.is_empty() {
        return sourced.outputs_of(config, None);
    }
    let mut outputs: Vec<NamedFile> = instances
        .iter()
        .flat_map(|&n| {
            let mut own = instance_config(config, n);
            // The profile is not the instance's own: listed once, below.
            own.mutator_sched = MutatorSched::Cfs;
            sourced.outputs_of(&own, Some(&format!("of co-running instance {n}")))
        })
        .collect();
    let shared = GcConfig {
        gc_log: None,
        gc_records: None,
        gc_trace: None,
        ..config.clone()
    };
    outputs.extend(sourced.outputs_of(&shared, None));
    outputs
}

/// `--slow-log` only works with a GC log, which may come from the configuration file or the
/// environment as well: refused without one, as the configuration's keys without effect are
/// ([`SourcedConfig::refuse_keys_without_effect`]). The loads' own flags are checked by
/// [`StallFlags::loads`].
fn refuse_slow_log_without_gc_log(stall: &StallFlags, config: &GcConfig) -> Result<()> {
    if stall.slow_log.is_some() && config.gc_log.is_none() {
        bail!(
            "--slow-log needs a GC log (--gc-log PATH, key gc-log or CONCORD_GC_LOG): the \
             stalled device is what the GC log is written through (allowed: a GC log as well, \
             or no --slow-log)"
        );
    }
    Ok(())
}

/// Refuse `fifo-scope all` where busy FIFO threads could starve the machine
/// ([`check_fifo_scope`]), given the kernel's real-time throttle `rt_runtime_us`.
fn refuse_unsafe_fifo_scope(
    config: &concord::GcConfig,
    threads: RunThreads,
    rt_runtime_us: Option<i64>,
) -> Result<()> {
    check_fifo_scope(
        &config.mutator_sched,
        config.fifo_scope,
        threads,
        concord::os::cpu::usable_cpu_count(),
        rt_runtime_us,
    )
    .map_err(|e| anyhow::anyhow!("--fifo-scope: {e}"))
}

/// Run `concord run`. Everything is checked before the heap is built (workload parameters,
/// configuration, harness), so bad input touches no file.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.workload.workload)?;
    let params = args.run.params(args.workload.size, 1);
    workload
        .validate(&params)
        .map_err(|e| anyhow::anyhow!("workload {}: {e}", workload.name()))?;
    let file = read_config(&args)?;
    let sourced = build_sourced_config(&args, file.as_ref(), workload.default_heap(&params))?;
    let mut config = sourced.config.clone();
    let harness = harness(&args, file.as_ref())?;
    let stall = &args.stall;
    let any_load =
        stall.slow_log.is_some() || stall.io_load.is_some() || stall.memory_pressure.is_some();
    if harness.co_run > 1 && any_load {
        bail!(
            "--slow-log, --io-load and --memory-pressure cannot be used with --co-run (allowed: \
             one instance, or --co-run without them)"
        );
    }
    refuse_slow_log_without_gc_log(stall, &config)?;
    let loads = stall.loads(config.gc_log.as_deref())?;
    // Every file this run writes (each instance's, with --co-run) against the one it reads.
    let instances: Vec<usize> = match args.co_run_instance {
        Some(n) => vec![n as usize],
        None if harness.co_run > 1 => (1..=harness.co_run).collect(),
        None => Vec::new(),
    };
    check_files(&config_input(&args), &run_outputs(&sourced, &instances))?;
    if let Some(n) = args.co_run_instance {
        interrupt::install("the instance stops");
        return run_instance(&workload, &params, &config, n as usize);
    }
    refuse_unsafe_fifo_scope(
        &config,
        RunThreads {
            instances: harness.co_run,
            gc_threads: config.gc_threads,
            mutators: params.mutators,
        },
        read_rt_runtime_us(Path::new(RT_RUNTIME_PATH)),
    )?;
    let interference = harness.interfere.map(|l| {
        let place = if harness.co_run > 1 {
            "in the parent process"
        } else {
            "in this process"
        };
        format!("{l} ({} {place})", l.describe())
    });
    crate::stop_if_checking_args("configuration built and validated");
    if harness.co_run > 1 {
        log::info!(
            "starting {} instances of {} as separate processes",
            harness.co_run,
            workload.name()
        );
        let mut outcome = co_run(harness.co_run, harness.interfere)?;
        for i in &mut outcome.instances {
            i.summary.interference.clone_from(&interference);
            i.json["interference"] = serde_json::json!(interference);
        }
        if outcome.interrupted {
            errln!("concord: interrupted: the co-running instances were stopped");
            return Ok(interrupt::exit_code());
        }
        err!("{}", outcome.failure_report());
        if !outcome.instances.is_empty() || args.json {
            if args.json {
                let json = outcome.json(harness.co_run);
                outln!("{}", serde_json::to_string_pretty(&json)?)?;
            } else {
                out!("{}", outcome.readable(harness.co_run))?;
            }
        }
        return Ok(exit_code(outcome.all_ok()));
    }
    interrupt::install("the run stops; the summary of the run so far follows");
    if !loads.is_empty() {
        log::info!("loads during the run: {}", loads.describe());
    }
    // The slow log device copies the log to the configured file (flag, file or variable).
    let gc_log = config.gc_log.clone();
    let active = loads.start(gc_log.as_deref())?;
    if let Some(fifo) = active.gc_log() {
        config.gc_log = Some(fifo);
    }
    let load = harness.interfere.map(Interference::start).transpose()?;
    let result = run_on_heap_with(
        &workload,
        &params,
        &config,
        || Ok(()),
        || active.release(),
        true,
    );
    if let Some(load) = load {
        load.stop();
    }
    let (loads_report, load_problems) = active.finish();
    let run = result?;
    let mut summary = run.summary;
    summary.interference = interference;
    if args.json {
        let mut json = summary.json();
        json["outputs_finish_ms"] = serde_json::json!(run.outputs_finish_ms);
        if !loads.is_empty() {
            json["loads"] = loads_report;
        }
        outln!("{}", serde_json::to_string_pretty(&json)?)?;
    } else {
        out!(
            "{}  outputs   put in place in {:.1} ms after the workload\n{}",
            summary.readable(),
            run.outputs_finish_ms,
            stall::readable(&loads_report)
        )?;
    }
    for failure in &run.output_failures {
        errln!("concord: {failure}");
    }
    for problem in &load_problems {
        errln!("concord: {problem}");
    }
    if run.interrupted.is_some() {
        return Ok(interrupt::exit_code());
    }
    Ok(exit_code(
        run.output_failures.is_empty()
            && load_problems.is_empty()
            && summary.checksum_ok != Some(false)
            && summary.verified != Some(false),
    ))
}

/// Success when `ok`, else failure (status 1).
fn exit_code(ok: bool) -> ExitCode {
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use concord::parallel::{ParkingKind, StealPolicy, TaskQueueKind, TerminationKind};
    use concord::Preset;

    use super::*;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn args(flags: &[&str]) -> RunArgs {
        let argv = ["concord-run", "gcbench"].iter().chain(flags);
        TestCli::try_parse_from(argv).unwrap().run
    }

    fn config(flags: &[&str]) -> Result<concord::GcConfig> {
        build_config(&args(flags), None, 64 << 20)
    }

    /// The harness of `a`, its `--config` file read as `run` reads it.
    fn harness_of(a: &RunArgs) -> Result<Harness> {
        harness(a, read_config(a)?.as_ref())
    }

    #[test]
    fn switch_flags_override_the_preset() {
        let c = config(&[
            "--preset",
            "vanilla",
            "--task-queue",
            "lockfree",
            "--task-affinity",
            "on",
            "--steal",
            "adaptive",
            "--termination",
            "live",
            "--parking",
            "futex",
            "--gc-threads",
            "dynamic",
            "--pin-start=false",
        ])
        .unwrap();
        assert_eq!(c.preset, Preset::Vanilla);
        assert_eq!(c.phase.task_queue, TaskQueueKind::LockFree);
        assert!(c.phase.task_affinity);
        assert_eq!(c.phase.steal, StealPolicy::Adaptive);
        assert_eq!(c.phase.termination, TerminationKind::Live);
        assert_eq!(c.parking, ParkingKind::Futex);
        assert!(c.dynamic_gc_threads);
        assert!(!c.pin_start);

        let c = config(&["--preset", "modern", "--gc-threads", "2", "--pin-start"]).unwrap();
        assert_eq!(c.phase.task_queue, TaskQueueKind::Claim);
        assert!(!c.dynamic_gc_threads);
        assert_eq!(c.gc_threads, 2);
        assert!(c.pin_start);
    }

    #[test]
    fn bare_pin_start_does_not_swallow_the_workload() {
        let parsed = TestCli::try_parse_from(["concord-run", "--pin-start", "gcbench"])
            .unwrap()
            .run;
        assert_eq!(parsed.workload.workload, "gcbench");
        assert_eq!(parsed.run.switches.pin_start, Some(true));
    }

    #[test]
    fn bad_switch_values_name_flag_value_and_allowed_names() {
        let err = config(&["--steal", "random"]).unwrap_err().to_string();
        assert_eq!(
            err,
            "--steal: 'random' is not a steal policy (allowed: best-of-2, last-victim, adaptive)"
        );
        // Typed flags are checked while parsing, with messages of the same form.
        for (argv, expected) in [
            (
                &["--task-affinity", "sometimes"][..],
                "--task-affinity: 'sometimes' is not a boolean (allowed: true, false",
            ),
            (
                &["--pin-start=perhaps"],
                "--pin-start: 'perhaps' is not a boolean",
            ),
            (
                &["--gc-threads", "0"],
                "--gc-threads: '0' is out of range (allowed: 1..=256)",
            ),
            (
                &["--heap", "12q"],
                "--heap: '12q' is not a size (expected a number",
            ),
        ] {
            let argv = ["concord-run", "gcbench"].iter().chain(argv);
            let err = TestCli::try_parse_from(argv).unwrap_err();
            let message = crate::flags::value_error(&err).unwrap();
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn os_switch_flags_reach_the_configuration() {
        use concord::os::policy::{GcAffinity, MutatorSched};
        let c = config(&[]).unwrap();
        assert_eq!(c.gc_affinity, GcAffinity::Dynamic);
        assert_eq!(c.mutator_sched, MutatorSched::Cfs);
        assert!(!c.lifespans);
        let c = config(&[
            "--gc-affinity",
            "static",
            "--mutator-sched",
            "fifo",
            "--fifo-cpu-threshold",
            "0",
            "--lifespans",
        ])
        .unwrap();
        assert_eq!(c.gc_affinity, GcAffinity::Static);
        assert_eq!(c.mutator_sched, MutatorSched::Fifo);
        assert_eq!(c.fifo_cpu_threshold, 0);
        assert!(c.lifespans);
        let err = config(&["--gc-affinity", "pinned"])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--gc-affinity: 'pinned' is not a GC affinity (allowed: none, static, dynamic)"
        );
    }

    #[test]
    fn fifo_scope_all_is_refused_with_more_threads_than_cpus_and_no_rt_throttle() {
        use concord::os::policy::FifoScope;
        let cpus = concord::os::cpu::usable_cpu_count();
        let threads = RunThreads {
            instances: 1,
            gc_threads: cpus,
            mutators: 1,
        };
        let c = config(&["--mutator-sched", "fifo", "--fifo-scope", "all"]).unwrap();
        assert_eq!(c.fifo_scope, FifoScope::All);
        let err = refuse_unsafe_fifo_scope(&c, threads, Some(-1))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("--fifo-scope: fifo-scope 'all'"), "{err}");
        assert!(err.contains("real-time throttle is off"), "{err}");
        // The throttle on (the kernel's default): allowed.
        assert!(refuse_unsafe_fifo_scope(&c, threads, Some(950_000)).is_ok());
        // Mutators only: allowed.
        let c = config(&["--mutator-sched", "fifo"]).unwrap();
        assert_eq!(c.fifo_scope, FifoScope::Mutators);
        assert!(refuse_unsafe_fifo_scope(&c, threads, Some(-1)).is_ok());
        let err = config(&["--fifo-scope", "everything"])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--fifo-scope: 'everything' is not a FIFO scope (allowed: mutators, all)"
        );
    }

    #[test]
    fn harness_keys_come_from_the_config_file_and_flags_beat_them() {
        let dir = std::env::temp_dir().join(format!("concord-harness-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("run.toml");
        std::fs::write(
            &file,
            "heap = \"32m\"\ninterfere = \"busy:2\"\nco_run = 3\n",
        )
        .unwrap();
        let path = file.display().to_string();
        let a = args(&["--config", &path]);
        assert_eq!(
            harness_of(&a).unwrap(),
            Harness {
                interfere: Some(Interference::busy(2)),
                co_run: 3
            }
        );
        // The heap keys of the same file still apply.
        let file_read = read_config(&a).unwrap();
        assert_eq!(
            build_config(&a, file_read.as_ref(), 64 << 20)
                .unwrap()
                .heap_size,
            32 << 20
        );
        let a = args(&["--config", &path, "--co-run", "1"]);
        assert_eq!(harness_of(&a).unwrap().co_run, 1);
        std::fs::write(&file, "co-run = 0\n").unwrap();
        let err = harness_of(&args(&["--config", &path]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("co-run in") && err.contains("1..=64"), "{err}");
        std::fs::write(&file, "interfere = \"spin:1\"\n").unwrap();
        let err = harness_of(&args(&["--config", &path]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("interfere in") && err.contains("busy:K"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Every key, the library's and the harness's, is one key in both spellings: a file with
    /// both is refused, naming both, whichever the harness or the builder reads.
    #[test]
    fn both_spellings_of_every_key_in_one_file_are_refused() {
        let dir = std::env::temp_dir().join(format!("concord-spellings-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("run.toml");
        let path = file.display().to_string();
        let keys: Vec<&str> = concord::config::option_docs()
            .map(|(key, _, _)| key)
            .chain(HARNESS_KEYS)
            .filter(|key| key.contains('-'))
            .collect();
        assert!(keys.contains(&"co-run") && keys.contains(&"gc-threads"));
        for key in keys {
            let snake = key.replace('-', "_");
            // A string is a value of every key's TOML type; both spellings get the same one,
            // as a file that says the same thing twice would.
            std::fs::write(&file, format!("{key} = \"2\"\n{snake} = \"2\"\n")).unwrap();
            let a = args(&["--config", &path]);
            let err = read_config(&a)
                .and_then(|f| build_config(&a, f.as_ref(), 64 << 20).map(drop))
                .expect_err(key)
                .to_string();
            assert!(
                err.contains(&format!("{snake} in {path}"))
                    && err.contains(&format!("already set as {key} in {path}")),
                "{key}: {err}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_config_file_that_is_a_device_or_too_long_is_refused() {
        let a = args(&["--config", "/dev/zero"]);
        let err = read_config(&a).err().unwrap().to_string();
        assert!(
            err.contains(
                "/dev/zero: it is a character device, not a regular file (allowed: a \
                 regular file or a pipe of at most 1M)"
            ),
            "{err}"
        );
        let dir = std::env::temp_dir().join(format!("concord-long-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("long.toml");
        let comment = "# a comment line of a long configuration file\n";
        let long =
            comment.repeat(concord::config::MAX_CONFIG_FILE_BYTES as usize / comment.len() + 1);
        std::fs::write(&file, format!("heap = \"16m\"\n{long}")).unwrap();
        let a = args(&["--config", &file.display().to_string()]);
        let err = read_config(&a).err().unwrap().to_string();
        assert!(
            err.contains("longer than a configuration file can be"),
            "{err}"
        );
        // Within the bound it is read as usual.
        std::fs::write(&file, format!("heap = \"16m\"\n{comment}")).unwrap();
        let file_read = read_config(&a).unwrap();
        let c = build_config(&a, file_read.as_ref(), 64 << 20).unwrap();
        assert_eq!(c.heap_size, 16 << 20);
        let a = args(&["--config", &dir.display().to_string()]);
        let err = read_config(&a).err().unwrap().to_string();
        assert!(
            err.contains("it is a directory, not a regular file"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn harness_flags() {
        let a = args(&["--interfere", "busy:3", "--co-run", "2"]);
        assert_eq!(a.run.interfere, Some(Interference::busy(3)));
        assert_eq!(a.co_run, Some(2));
        assert_eq!(
            harness(&a, None).unwrap(),
            Harness {
                interfere: Some(Interference::busy(3)),
                co_run: 2
            }
        );
        let a = args(&[]);
        assert_eq!((a.run.interfere, a.co_run), (None, None));
        assert_eq!(harness(&a, None).unwrap().co_run, 1);
        for bad in [
            &["--interfere", "busy:0"][..],
            &["--interfere", "spin:2"],
            &["--co-run", "0"],
            &["--co-run", "65"],
        ] {
            let argv = ["concord-run", "gcbench"].iter().chain(bad);
            assert!(TestCli::try_parse_from(argv).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn gc_records_is_configuration() {
        let c = config(&["--gc-records", "/tmp/records.jsonl"]).unwrap();
        assert_eq!(c.gc_records, Some(PathBuf::from("/tmp/records.jsonl")));
        let c = config(&["--gc-trace", "/tmp/gc.trace"]).unwrap();
        assert_eq!(c.gc_trace, Some(PathBuf::from("/tmp/gc.trace")));
    }
}
