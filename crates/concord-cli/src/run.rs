//! `concord run <workload>`: build a heap from presets, a TOML file, `CONCORD_*` variables and
//! flags, run the workload, and print a summary (readable, or the summary JSON of DESIGN.md).
//! With `--interfere busy:K` busy-loop threads run alongside; with `--co-run M`, M instances
//! run at once, each on its own heap.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use concord::config::ConfigBuilder;
use concord_workloads::WorkloadParams;

use crate::experiment::find_workload;
use crate::interference::{co_run, Interference, MAX_CO_RUN};
use crate::summary::Summary;

/// Flags of `concord run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Workload to run: gcbench, binary-trees, search, transform, render, database, kmeans,
    /// kv-service, queue-churn.
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth, default 18).
    pub size: Option<u32>,
    /// Policy preset: vanilla, modern or optimized (default optimized).
    #[arg(long)]
    pub preset: Option<String>,
    /// Maximum heap size, e.g. 64m, 1g (default: the workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Young generation size (default: heap / 3).
    #[arg(long)]
    pub young: Option<String>,
    /// GC worker threads, N or dynamic (default: HotSpot's rule, ncpus <= 8 ? ncpus :
    /// 3 + 5*ncpus/8; dynamic per collection for preset modern).
    #[arg(long = "gc-threads", value_name = "N|dynamic")]
    pub gc_threads: Option<String>,
    // The parallel-phase switches, boxed so that `RunArgs` stays small.
    #[command(flatten)]
    pub switches: Box<SwitchArgs>,
    /// Mutator threads (gcbench: independent copies; binary-trees: threads sharing the depths).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Repeat the workload this many times in one heap.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rounds: u32,
    /// Verify the whole heap after every collection.
    #[arg(long)]
    pub verify: bool,
    /// Profile object lifespans and report their histogram.
    #[arg(long)]
    pub lifespans: bool,
    /// Load in this process for the duration of the run: busy:K starts K busy-loop threads
    /// (K in 1..=1024).
    #[arg(long, value_name = "busy:K", env = "CONCORD_INTERFERE")]
    pub interfere: Option<Interference>,
    /// Run M instances of the workload at once, each on its own heap with the full
    /// configuration, and report each and their aggregate (M in 1..=64).
    #[arg(
        long = "co-run",
        value_name = "M",
        env = "CONCORD_CO_RUN",
        value_parser = clap::value_parser!(u32).range(1..=MAX_CO_RUN as i64)
    )]
    pub co_run: Option<u32>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Write a HotSpot unified-logging style GC log here.
    #[arg(long = "gc-log")]
    pub gc_log: Option<PathBuf>,
    /// Write one JSON line per collection (per-worker counters, phases) here.
    #[arg(long = "gc-records")]
    pub gc_records: Option<PathBuf>,
    /// Read configuration from this TOML file (keys as the flags, e.g. heap = "64m").
    #[arg(long, env = "CONCORD_CONFIG")]
    pub config: Option<PathBuf>,
}

/// The parallel-phase switch flags of `concord run`; each overrides the preset's value.
#[derive(Args, Debug, Clone)]
pub struct SwitchArgs {
    /// Root-task queue: monitor, claim or lockfree (default: the preset's).
    #[arg(long = "task-queue", value_name = "KIND")]
    pub task_queue: Option<String>,
    /// Root tasks prefer the worker they are tagged with: on or off (default: the preset's).
    #[arg(long = "task-affinity", value_name = "on|off")]
    pub task_affinity: Option<String>,
    /// Steal victim selection: best-of-2, last-victim or adaptive (default: the preset's).
    #[arg(long, value_name = "POLICY")]
    pub steal: Option<String>,
    /// Termination protocol: fixed, owst or live (default: the preset's).
    #[arg(long, value_name = "KIND")]
    pub termination: Option<String>,
    /// Idle GC worker parking: monitor or futex (default: the preset's).
    #[arg(long, value_name = "KIND")]
    pub parking: Option<String>,
    /// Create all GC threads on the creating thread's CPU and leave them to the OS (bare flag:
    /// true; --pin-start=false to turn off; default: true for vanilla, else false).
    #[arg(
        long = "pin-start",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true"
    )]
    pub pin_start: Option<String>,
    /// GC thread affinity: none, static or dynamic (default: the preset's; dynamic for
    /// optimized).
    #[arg(long = "gc-affinity", value_name = "none|static|dynamic")]
    pub gc_affinity: Option<String>,
    /// Mutator scheduling: cfs, fifo, profile:PATH or adaptive[:SECONDS] (default cfs).
    #[arg(long = "mutator-sched", value_name = "POLICY")]
    pub mutator_sched: Option<String>,
    /// profile and adaptive may choose FIFO only with more usable CPUs than this (default 8).
    #[arg(long = "fifo-cpu-threshold", value_name = "N")]
    pub fifo_cpu_threshold: Option<String>,
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

/// The harness keys a configuration file may hold (kebab-case and snake_case).
const HARNESS_KEYS: [&str; 3] = ["interfere", "co-run", "co_run"];

/// Read the configuration file: the harness keys, and the rest as TOML text for the
/// configuration builder.
fn read_config_file(path: &std::path::Path) -> Result<(String, Harness)> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("--config: cannot read {name}: {e}"))?;
    // A file that does not parse is left to the builder, whose message names the problem.
    let Ok(mut table) = text.parse::<toml::Table>() else {
        return Ok((text, Harness::default()));
    };
    let mut harness = Harness::default();
    for key in HARNESS_KEYS {
        let Some(value) = table.remove(key) else {
            continue;
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
                    .filter(|m| (1..=MAX_CO_RUN as i64).contains(m))
                    .ok_or_else(|| {
                        anyhow::anyhow!("{key} in {name}: '{shown}' is not an instance count (allowed: 1..={MAX_CO_RUN})")
                    })?;
                harness.co_run = m as usize;
            }
        }
    }
    Ok((table.to_string(), harness))
}

/// The harness of `args`: flags and environment (through clap), then the file, then defaults.
pub fn harness(args: &RunArgs) -> Result<Harness> {
    let file = match &args.config {
        Some(path) => read_config_file(path)?.1,
        None => Harness::default(),
    };
    Ok(Harness {
        interfere: args.interfere.or(file.interfere),
        co_run: args
            .co_run
            .map(|m| m as usize)
            .unwrap_or(if file.co_run > 0 { file.co_run } else { 1 }),
    })
}

/// Resolve the configuration for `args` (TOML < env < flags; workload default heap last).
pub fn build_config(args: &RunArgs, default_heap: usize) -> Result<concord::GcConfig> {
    let mut b = ConfigBuilder::new();
    if let Some(path) = &args.config {
        let (rest, _) = read_config_file(path)?;
        b.apply_toml_str(&rest, &path.display().to_string())?;
    }
    b.apply_process_env()?;
    let flags: [(&str, &Option<String>); 13] = [
        ("preset", &args.preset),
        ("heap", &args.heap),
        ("young", &args.young),
        ("gc-threads", &args.gc_threads),
        ("task-queue", &args.switches.task_queue),
        ("task-affinity", &args.switches.task_affinity),
        ("steal", &args.switches.steal),
        ("termination", &args.switches.termination),
        ("parking", &args.switches.parking),
        ("pin-start", &args.switches.pin_start),
        ("gc-affinity", &args.switches.gc_affinity),
        ("mutator-sched", &args.switches.mutator_sched),
        ("fifo-cpu-threshold", &args.switches.fifo_cpu_threshold),
    ];
    for (key, value) in flags {
        if let Some(v) = value {
            b.set_cli(key, v)?;
        }
    }
    if args.verify {
        b.set_cli("verify", "true")?;
    }
    if args.lifespans {
        b.set_cli("lifespans", "true")?;
    }
    if let Some(p) = &args.gc_log {
        b.set_cli("gc-log", &p.display().to_string())?;
    }
    if let Some(p) = &args.gc_records {
        b.set_cli("gc-records", &p.display().to_string())?;
    }
    if !b.is_set("heap") {
        b.set_cli("heap", &format!("{}k", default_heap.div_ceil(1024)))?;
    }
    Ok(b.build()?)
}

/// Run `concord run`.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let workload = find_workload(&args.workload)?;
    let params = WorkloadParams {
        mutators: args.mutators as usize,
        rounds: args.rounds as usize,
        size: args.size,
    };
    let config = build_config(&args, workload.default_heap(&params))?;
    let harness = harness(&args)?;
    let load = harness.interfere.map(Interference::start).transpose()?;
    let result = co_run(workload.as_ref(), &params, &config, harness.co_run);
    if let Some(load) = load {
        load.stop();
    }
    let mut instances = result?;
    let interference = harness
        .interfere
        .map(|l| format!("{l} ({} in this process)", l.describe()));
    for s in &mut instances {
        s.interference = interference.clone();
    }
    match (instances.as_slice(), args.json) {
        ([one], true) => println!("{}", serde_json::to_string_pretty(&one.json())?),
        ([one], false) => print!("{}", one.readable()),
        (all, true) => println!(
            "{}",
            serde_json::to_string_pretty(&Summary::co_run_json(all))?
        ),
        (all, false) => print!("{}", Summary::co_run_readable(all)),
    }
    let ok = instances
        .iter()
        .all(|s| s.checksum_ok != Some(false) && s.verified != Some(false));
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
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
        build_config(&args(flags), 64 << 20)
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
        assert_eq!(parsed.workload, "gcbench");
        assert_eq!(parsed.switches.pin_start.as_deref(), Some("true"));
    }

    #[test]
    fn bad_switch_values_name_flag_value_and_allowed_names() {
        let err = config(&["--steal", "random"]).unwrap_err().to_string();
        assert_eq!(
            err,
            "--steal: 'random' is not a steal policy (allowed: best-of-2, last-victim, adaptive)"
        );
        let err = config(&["--task-affinity", "sometimes"])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--task-affinity: 'sometimes' is not a boolean"),
            "{err}"
        );
        let err = config(&["--pin-start=perhaps"]).unwrap_err().to_string();
        assert!(
            err.starts_with("--pin-start: 'perhaps' is not a boolean"),
            "{err}"
        );
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
            harness(&a).unwrap(),
            Harness {
                interfere: Some(Interference::Busy(2)),
                co_run: 3
            }
        );
        // The heap keys of the same file still apply.
        assert_eq!(build_config(&a, 64 << 20).unwrap().heap_size, 32 << 20);
        let a = args(&["--config", &path, "--co-run", "1"]);
        assert_eq!(harness(&a).unwrap().co_run, 1);
        std::fs::write(&file, "co-run = 0\n").unwrap();
        let err = harness(&args(&["--config", &path]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("co-run in") && err.contains("1..=64"), "{err}");
        std::fs::write(&file, "interfere = \"spin:1\"\n").unwrap();
        let err = harness(&args(&["--config", &path]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("interfere in") && err.contains("busy:K"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn harness_flags() {
        let a = args(&["--interfere", "busy:3", "--co-run", "2"]);
        assert_eq!(a.interfere, Some(Interference::Busy(3)));
        assert_eq!(a.co_run, Some(2));
        assert_eq!(
            harness(&a).unwrap(),
            Harness {
                interfere: Some(Interference::Busy(3)),
                co_run: 2
            }
        );
        let a = args(&[]);
        assert_eq!((a.interfere, a.co_run), (None, None));
        assert_eq!(harness(&a).unwrap().co_run, 1);
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
    }
}
