//! `concord vs-hotspot`: GCBench and binary-trees on HotSpot Parallel GC and on Concord, same
//! heap size and GC thread count, alternating A B / B A in one invocation, with medians and
//! ratios.
//!
//! Both sides run in a fresh process per run: HotSpot as `java ... GCBench` or `java ...
//! BinaryTrees` (`bench/hotspot/*.java`, compiled here with the JDK's `javac`), Concord as this
//! binary again with the hidden `--concord-child`. Each program times its own work (HotSpot:
//! `System.nanoTime()` around it, after JVM start-up; Concord: around the workload, after the
//! heap is built) and prints it; this process also times each child from start to exit, so
//! every run has a wall time inside the program and one with start-up (and exit).
//!
//! GC pauses: HotSpot's are the `Pause Young` / `Pause Full` lines of its own `-Xlog:gc` log
//! ([`hotspot::parse_gc_log`]), summed; Concord's are its heap's pause records.
//!
//! SIGINT, SIGTERM and SIGHUP ([`crate::interrupt`]): the first lets the current run finish,
//! then the command stops with 128 + the signal and removes its scratch directory (the JVM's
//! classes and GC log); a second quits at once, removing it too.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, ValueEnum};
use concord::config::{format_size, ConfigBuilder};
use concord::{CollectionKind, GcConfig, Heap};
use concord_workloads::{binary_trees, lookup, WorkloadParams};
use serde_json::json;

use crate::console::{errln, outln};
use crate::experiment::median;
use crate::flags::{count_in, Size};
use crate::hotspot::{self, JavaTools, PauseKind};
use crate::interrupt::{self, TempDir};
use crate::side_by_side::{pair_order, Run};
use crate::RunFailed;

/// `bench/hotspot/BinaryTrees.java`, embedded at build time.
pub const BINARY_TREES_SOURCE: &str = include_str!("../../../bench/hotspot/BinaryTrees.java");

/// The scratch directory of the JVM's classes and GC logs, removed however the command ends:
/// when it returns (after a first signal too) or at a second signal ([`TempDir`]).
fn work_dir() -> Result<TempDir> {
    let dir = std::env::temp_dir().join(format!("concord-vs-hotspot-{}", std::process::id()));
    TempDir::create(dir.clone()).with_context(|| format!("cannot create {}", dir.display()))
}

/// Which workloads `--workload` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkloadChoice {
    /// Boehm's GCBench.
    Gcbench,
    /// The Benchmarks Game binary-trees.
    BinaryTrees,
    /// GCBench, then binary-trees.
    Both,
}

/// `--workload`'s value.
fn workload_choice(text: &str) -> Result<WorkloadChoice, String> {
    match text.trim() {
        "gcbench" => Ok(WorkloadChoice::Gcbench),
        "binary-trees" => Ok(WorkloadChoice::BinaryTrees),
        "both" => Ok(WorkloadChoice::Both),
        _ => Err("is not a vs-hotspot workload (allowed: gcbench, binary-trees, both)".into()),
    }
}

/// One workload both sides run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Bench {
    /// Boehm's GCBench (`GCBench.java`, Concord's `gcbench`).
    Gcbench,
    /// binary-trees (`BinaryTrees.java`, Concord's `binary-trees`).
    BinaryTrees,
}

impl Bench {
    /// Concord's name for it, also its name in the output.
    fn name(self) -> &'static str {
        match self {
            Bench::Gcbench => "gcbench",
            Bench::BinaryTrees => binary_trees::NAME,
        }
    }

    /// The Java main class.
    fn main_class(self) -> &'static str {
        match self {
            Bench::Gcbench => hotspot::GCBENCH_MAIN_CLASS,
            Bench::BinaryTrees => "BinaryTrees",
        }
    }

    /// The Java program's arguments.
    fn program_args(self, spec: &Spec) -> Vec<String> {
        match self {
            Bench::Gcbench => vec![
                "--copies".into(),
                "1".into(),
                "--rounds".into(),
                spec.rounds.to_string(),
            ],
            Bench::BinaryTrees => vec![spec.depth.to_string(), spec.rounds.to_string()],
        }
    }

    /// Concord's size parameter.
    fn size(self, spec: &Spec) -> Option<u32> {
        match self {
            Bench::Gcbench => None,
            Bench::BinaryTrees => Some(spec.depth),
        }
    }

    /// The checksum a correct run of `spec` prints.
    fn expected_checksum(self, spec: &Spec) -> u64 {
        match self {
            Bench::Gcbench => hotspot::expected_checksum(1, spec.rounds as usize),
            Bench::BinaryTrees => binary_trees::expected_checksum(spec.depth) * spec.rounds as u64,
        }
    }

    /// The heap without `--heap`: 64 MiB for GCBench (HotSpot's GCBench setting), Concord's
    /// default heap for binary-trees at the depth (96 MiB at 18).
    fn default_heap(self, depth: u32) -> Result<usize> {
        match self {
            Bench::Gcbench => Ok(64 << 20),
            Bench::BinaryTrees => {
                let workload = lookup(binary_trees::NAME).context("binary-trees missing")?;
                let params = WorkloadParams {
                    mutators: 1,
                    rounds: 1,
                    size: Some(depth),
                };
                Ok(workload.default_heap(&params))
            }
        }
    }
}

/// What one workload's runs share.
#[derive(Clone, Copy, Debug)]
struct Spec {
    bench: Bench,
    heap_bytes: usize,
    gc_threads: u32,
    depth: u32,
    rounds: u32,
}

/// Flags of `concord vs-hotspot`.
#[derive(Args, Debug, Clone)]
pub struct VsHotspotArgs {
    /// Which workloads: gcbench, binary-trees or both.
    #[arg(long, value_parser = workload_choice, default_value = "both")]
    pub workload: WorkloadChoice,
    /// binary-trees: the tree depth, 4..=30.
    #[arg(
        long,
        default_value_t = 18,
        value_parser = count_in(binary_trees::MIN_DEPTH, 30),
        allow_negative_numbers = true
    )]
    pub depth: u32,
    /// Times each program repeats its work inside one process (GCBench --rounds, binary-trees'
    /// second argument, Concord's rounds), 1..=1000.
    #[arg(
        long,
        default_value_t = 1,
        value_parser = count_in(1, 1000),
        allow_negative_numbers = true
    )]
    pub rounds: u32,
    /// Heap size for both collectors (-Xms = -Xmx on HotSpot); default 64m for gcbench,
    /// Concord's default heap for binary-trees (96m at depth 18).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub heap: Option<Size>,
    /// GC worker threads for both collectors.
    #[arg(
        long = "gc-threads",
        default_value_t = 2,
        value_parser = count_in(1, 256),
        allow_negative_numbers = true
    )]
    pub gc_threads: u32,
    /// How many A B pairs to run per workload.
    #[arg(
        long,
        default_value_t = 5,
        value_parser = count_in(1, 1000),
        allow_negative_numbers = true
    )]
    pub repeat: u32,
    /// The `java` executable itself (run as given; javac comes from the home it reports), a JDK
    /// bin directory or a JDK home (default: JAVA_HOME, PATH, then JDK 17).
    #[arg(long)]
    pub java: Option<PathBuf>,
    /// Extra JVM option (repeatable), e.g. --jvm-arg=-XX:-UseAdaptiveSizePolicy.
    #[arg(long = "jvm-arg", allow_hyphen_values = true)]
    pub jvm_args: Vec<String>,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run this workload once on Concord in this process and print its figures as JSON (what
    /// the parent starts for each Concord turn).
    #[arg(long = "concord-child", hide = true, value_enum)]
    pub concord_child: Option<Bench>,
}

/// One run of either side: the program's own figures and the child's wall time from start to
/// exit.
#[derive(Clone, Debug, serde::Serialize)]
struct SideRun {
    #[serde(flatten)]
    run: Run,
    /// The child process's wall time, start-up and exit included.
    wall_with_startup_ms: f64,
}

/// A named figure of a run and its key in the JSON medians.
type Metric = (&'static str, &'static str, fn(&SideRun) -> f64);

/// The medians, in the order printed (the first four JSON keys are those of before
/// binary-trees was added).
const METRICS: [Metric; 7] = [
    ("GC pause total ms", "GC pause total ms", |r| {
        r.run.pause_total_ms
    }),
    ("max pause ms", "max pause ms", |r| r.run.pause_max_ms),
    ("pause count", "pause count", |r| {
        (r.run.young + r.run.full) as f64
    }),
    ("wall ms, inside the program", "wall ms", |r| r.run.wall_ms),
    ("wall ms, with start-up", "wall ms with start-up", |r| {
        r.wall_with_startup_ms
    }),
    ("start-up and exit ms", "start-up and exit ms", |r| {
        r.wall_with_startup_ms - r.run.wall_ms
    }),
    (
        "wall ms outside GC pauses",
        "wall ms outside GC pauses",
        |r| r.run.mutator_ms(),
    ),
];

/// The Concord side's configuration, checked before anything runs.
fn concord_config(heap_bytes: usize, gc_threads: u32) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    b.set_cli("heap", &format!("{}k", heap_bytes.div_ceil(1024)))?;
    b.set_cli("gc-threads", &gc_threads.to_string())?;
    // HotSpot Parallel GC starts with survivors of young/8 (InitialSurvivorRatio=8), i.e. an
    // eden:survivor ratio of 6: use the same geometry so both collect at the same points.
    b.set_cli("survivor-ratio", "6")?;
    Ok(b.build()?)
}

/// `--concord-child`: the workload once on a Concord heap of `config`, its figures on stdout;
/// every error is a failed run.
fn concord_child(spec: &Spec, config: &GcConfig) -> Result<ExitCode> {
    let workload = lookup(spec.bench.name()).context("workload missing")?;
    let heap = Heap::new(config.clone()).map_err(RunFailed::wrap)?;
    let params = WorkloadParams {
        mutators: 1,
        rounds: spec.rounds as usize,
        size: spec.bench.size(spec),
    };
    let start = Instant::now();
    let result = workload.run(&heap, &params).map_err(RunFailed::wrap)?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    if result.checksum_ok() != Some(true) {
        return Err(RunFailed::wrap(anyhow!(
            "Concord's {} checksum {} differs from the expected {:?}",
            spec.bench.name(),
            result.checksum,
            result.expected_checksum
        )));
    }
    let run = Run {
        wall_ms,
        pause_total_ms: stats.pause_total_ms(),
        pause_max_ms: stats.pause_max_ms(),
        young: stats.count(CollectionKind::Young),
        full: stats.count(CollectionKind::Full),
        checksum: result.checksum,
    };
    outln!("{}", serde_json::to_string(&run)?)?;
    Ok(ExitCode::SUCCESS)
}

/// What a `--concord-child` process prints.
#[derive(serde::Deserialize)]
struct ChildRun {
    wall_ms: f64,
    pause_total_ms: f64,
    pause_max_ms: f64,
    young: usize,
    full: usize,
    checksum: u64,
}

/// The Concord side once, in a fresh child process; a failed child or a wrong checksum is a
/// failed run.
fn run_concord(spec: &Spec) -> Result<SideRun> {
    let exe = std::env::current_exe()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot find this program to start it: {e}")))?;
    let mut command = Command::new(&exe);
    command.args([
        "vs-hotspot",
        "--concord-child",
        spec.bench.name(),
        "--heap",
        &format!("{}k", spec.heap_bytes.div_ceil(1024)),
        "--gc-threads",
        &spec.gc_threads.to_string(),
        "--depth",
        &spec.depth.to_string(),
        "--rounds",
        &spec.rounds.to_string(),
    ]);
    let start = Instant::now();
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| RunFailed::wrap(anyhow!("cannot start {}: {e}", exe.display())))?;
    let wall_with_startup_ms = start.elapsed().as_secs_f64() * 1e3;
    if !output.status.success() {
        return Err(RunFailed::wrap(anyhow!(
            "Concord's {} child process failed ({}): {}",
            spec.bench.name(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let c: ChildRun = serde_json::from_slice(&output.stdout).map_err(|e| {
        RunFailed::wrap(anyhow!(
            "Concord's {} child process printed no report ({e}): {}",
            spec.bench.name(),
            String::from_utf8_lossy(&output.stdout).trim()
        ))
    })?;
    checksum_checked("Concord", spec, c.checksum)?;
    Ok(SideRun {
        run: Run {
            wall_ms: c.wall_ms,
            pause_total_ms: c.pause_total_ms,
            pause_max_ms: c.pause_max_ms,
            young: c.young,
            full: c.full,
            checksum: c.checksum,
        },
        wall_with_startup_ms,
    })
}

/// An error unless `checksum` is the one `spec` gives.
fn checksum_checked(who: &str, spec: &Spec, checksum: u64) -> Result<()> {
    let expected = spec.bench.expected_checksum(spec);
    if checksum != expected {
        return Err(RunFailed::wrap(anyhow!(
            "{who}'s {} checksum {checksum} differs from the expected {expected}",
            spec.bench.name()
        )));
    }
    Ok(())
}

/// Writes both Java programs into `workdir` and compiles them; the class directory.
fn compile_java(tools: &JavaTools, workdir: &Path) -> Result<PathBuf> {
    let sources = [
        ("GCBench.java", hotspot::GCBENCH_SOURCE),
        ("BinaryTrees.java", BINARY_TREES_SOURCE),
    ];
    let classes = hotspot::compile_java(&tools.javac, workdir, &sources)?;
    for main in [Bench::Gcbench, Bench::BinaryTrees].map(Bench::main_class) {
        let class = classes.join(format!("{main}.class"));
        if !class.is_file() {
            bail!("javac succeeded but left no {}", class.display());
        }
    }
    Ok(classes)
}

/// HotSpot's options for `spec`, the GC log going to `log`.
fn jvm_args(spec: &Spec, log: &Path, extra: &[String]) -> Result<Vec<String>> {
    let log = log
        .to_str()
        .ok_or_else(|| anyhow!("GC log path {} is not UTF-8", log.display()))?;
    if log.contains('"') {
        bail!("GC log path {log} contains a double quote");
    }
    let heap_kb = spec.heap_bytes.div_ceil(1024);
    let mut args = vec![
        format!("-Xms{heap_kb}k"),
        format!("-Xmx{heap_kb}k"),
        "-XX:+UseParallelGC".to_string(),
        format!("-XX:ParallelGCThreads={}", spec.gc_threads),
        // Quoted so that ':' or ',' in the path do not end the option.
        format!("-Xlog:gc:file=\"{log}\":uptime,level,tags"),
    ];
    args.extend(extra.iter().cloned());
    Ok(args)
}

/// The HotSpot side once: `java` on the compiled program, timed from start to exit, its own
/// wall time and checksum from its output, its pauses from its GC log.
fn run_hotspot(
    tools: &JavaTools,
    classes: &Path,
    spec: &Spec,
    jvm_args: &[String],
    log: &Path,
) -> Result<SideRun> {
    let _ = std::fs::remove_file(log);
    let start = Instant::now();
    let output = Command::new(&tools.java)
        .args(jvm_args)
        .arg("-cp")
        .arg(classes)
        .arg(spec.bench.main_class())
        .args(spec.bench.program_args(spec))
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot start {}", tools.java.display()))?;
    let wall_with_startup_ms = start.elapsed().as_secs_f64() * 1e3;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "{} failed on HotSpot ({}): {} {}\nstdout:\n{stdout}stderr:\n{}",
            spec.bench.main_class(),
            output.status,
            tools.java.display(),
            jvm_args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let (checksum, wall_ms) = hotspot::parse_gcbench_output(&stdout).with_context(|| {
        format!(
            "unexpected {} output:\n{stdout}{}",
            spec.bench.main_class(),
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    checksum_checked("HotSpot", spec, checksum)?;
    let text = std::fs::read_to_string(log)
        .with_context(|| format!("cannot read the GC log {}", log.display()))?;
    let pauses = hotspot::parse_gc_log(&text);
    Ok(SideRun {
        run: Run {
            wall_ms,
            pause_total_ms: hotspot::total_pause_ms(&pauses),
            pause_max_ms: hotspot::max_pause_ms(&pauses),
            young: hotspot::pause_count(&pauses, PauseKind::Young),
            full: hotspot::pause_count(&pauses, PauseKind::Full),
            checksum,
        },
        wall_with_startup_ms,
    })
}

/// The per-run table's header line.
fn print_header() -> Result<()> {
    outln!(
        "{:>4} {:>8} {:>10} {:>14} {:>10} {:>10} {:>7}",
        "run",
        "who",
        "inside ms",
        "with start ms",
        "GC ms",
        "max ms",
        "pauses"
    )?;
    Ok(())
}

/// One run's line of the per-run table.
fn print_row(pair: u32, who: &str, r: &SideRun) -> Result<()> {
    outln!(
        "{:>4} {:>8} {:>10.1} {:>14.1} {:>10.1} {:>10.2} {:>4}+{:<2}",
        pair,
        who,
        r.run.wall_ms,
        r.wall_with_startup_ms,
        r.run.pause_total_ms,
        r.run.pause_max_ms,
        r.run.young,
        r.run.full
    )?;
    Ok(())
}

/// One workload's measurements.
struct Outcome {
    spec: Spec,
    jvm_args: Vec<String>,
    hotspot: Vec<SideRun>,
    concord: Vec<SideRun>,
}

impl Outcome {
    /// `{hotspot, concord, ratio}` per metric.
    fn medians(&self) -> serde_json::Map<String, serde_json::Value> {
        METRICS
            .iter()
            .map(|(_, key, f)| {
                let (h, c) = (
                    self.median(&self.hotspot, *f),
                    self.median(&self.concord, *f),
                );
                (
                    key.to_string(),
                    json!({"hotspot": h, "concord": c, "ratio": ratio_or_null(c, h)}),
                )
            })
            .collect()
    }

    fn median(&self, runs: &[SideRun], f: fn(&SideRun) -> f64) -> f64 {
        median(runs.iter().map(f).collect())
    }

    /// The workload's JSON object.
    fn to_json(&self) -> serde_json::Value {
        json!({
            "workload": self.spec.bench.name(),
            "size": self.spec.bench.size(&self.spec),
            "rounds": self.spec.rounds,
            "heap_size": self.spec.heap_bytes,
            "gc_threads": self.spec.gc_threads,
            "checksum": self.spec.bench.expected_checksum(&self.spec),
            "jvm_args": self.jvm_args,
            "hotspot": self.hotspot,
            "concord": self.concord,
            "medians": self.medians(),
        })
    }
}

/// `c / h`, or null when `h` is 0 (no pauses).
fn ratio_or_null(c: f64, h: f64) -> serde_json::Value {
    if h > 0.0 {
        json!(c / h)
    } else {
        serde_json::Value::Null
    }
}

/// The pauses' source, as printed and in the JSON.
const PAUSES_FROM: &str =
    "HotSpot: its -Xlog:gc log's Pause Young/Full lines; Concord: its heap's pause records";

/// Run `concord vs-hotspot`.
pub fn run(args: VsHotspotArgs) -> Result<ExitCode> {
    let benches: &[Bench] = match args.workload {
        WorkloadChoice::Gcbench => &[Bench::Gcbench],
        WorkloadChoice::BinaryTrees => &[Bench::BinaryTrees],
        WorkloadChoice::Both => &[Bench::Gcbench, Bench::BinaryTrees],
    };
    let mut specs = Vec::new();
    for &bench in benches {
        let heap_bytes = match &args.heap {
            Some(h) => h.bytes(),
            None => bench.default_heap(args.depth)?,
        };
        // Checked before anything runs: a heap Concord refuses is bad input.
        concord_config(heap_bytes, args.gc_threads)?;
        specs.push(Spec {
            bench,
            heap_bytes,
            gc_threads: args.gc_threads,
            depth: args.depth,
            rounds: args.rounds,
        });
    }
    if let Some(bench) = args.concord_child {
        let spec = Spec { bench, ..specs[0] };
        let config = concord_config(spec.heap_bytes, spec.gc_threads)?;
        return concord_child(&spec, &config);
    }
    let tools = hotspot::find_java(args.java.as_deref())?;
    // Before the directory is made, so that no signal leaves it behind.
    interrupt::install("the current run finishes, then the comparison stops");
    let workdir = work_dir()?;
    // A signal's stop: the directory goes with `workdir`, the status is the signal's.
    let stopped = |workdir: TempDir| {
        errln!("concord vs-hotspot: stopped before every run was made; nothing is reported");
        drop(workdir);
        Ok(interrupt::exit_code())
    };
    let classes = match compile_java(&tools, workdir.path()) {
        _ if interrupt::interrupted() => return stopped(workdir),
        result => result.map_err(RunFailed::wrap)?,
    };
    let log = workdir.path().join("gc.log");
    let mut outcomes = Vec::new();
    for spec in specs {
        let jvm_args = jvm_args(&spec, &log, &args.jvm_args)?;
        if !args.json {
            let what = match spec.bench {
                Bench::Gcbench => "GCBench".to_string(),
                Bench::BinaryTrees => format!("binary-trees {}", spec.depth),
            };
            outln!(
                "{what}, {} round{}, heap {}, {} GC threads: HotSpot {} (java {} {} {}) vs Concord (optimized, survivor ratio 6), each in a fresh process per run, {} pairs alternating",
                spec.rounds,
                if spec.rounds == 1 { "" } else { "s" },
                format_size(spec.heap_bytes),
                spec.gc_threads,
                tools.version,
                jvm_args.join(" "),
                spec.bench.main_class(),
                spec.bench.program_args(&spec).join(" "),
                args.repeat
            )?;
            print_header()?;
        }
        let (mut hs, mut cc) = (Vec::new(), Vec::new());
        for i in 0..args.repeat {
            for hotspot_turn in pair_order(i) {
                if interrupt::interrupted() {
                    return stopped(workdir);
                }
                let run = if hotspot_turn {
                    run_hotspot(&tools, &classes, &spec, &jvm_args, &log).map_err(RunFailed::wrap)
                } else {
                    run_concord(&spec)
                };
                // A child the signal reached fails: the stop, not its failure, is reported.
                if interrupt::interrupted() {
                    return stopped(workdir);
                }
                let r = run?;
                let who = if hotspot_turn {
                    hs.push(r.clone());
                    "HotSpot"
                } else {
                    cc.push(r.clone());
                    "Concord"
                };
                if !args.json {
                    print_row(i + 1, who, &r)?;
                }
            }
        }
        let outcome = Outcome {
            spec,
            jvm_args,
            hotspot: hs,
            concord: cc,
        };
        if !args.json {
            print_medians(&outcome)?;
        }
        outcomes.push(outcome);
    }
    drop(workdir);
    if args.json {
        let mut out = serde_json::Map::new();
        out.insert("gc_threads".into(), json!(args.gc_threads));
        out.insert("java_version".into(), json!(tools.version));
        out.insert("repeat".into(), json!(args.repeat));
        out.insert("pauses_from".into(), json!(PAUSES_FROM));
        // The fields of before binary-trees was added: GCBench's, when it ran.
        if let Some(g) = outcomes.iter().find(|o| o.spec.bench == Bench::Gcbench) {
            out.insert("heap_size".into(), json!(g.spec.heap_bytes));
            out.insert("hotspot".into(), json!(g.hotspot));
            out.insert("concord".into(), json!(g.concord));
            out.insert("medians".into(), json!(g.medians()));
        }
        out.insert(
            "workloads".into(),
            json!(outcomes.iter().map(Outcome::to_json).collect::<Vec<_>>()),
        );
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A workload's medians table.
fn print_medians(o: &Outcome) -> Result<()> {
    outln!()?;
    outln!(
        "{:<28} {:>12} {:>12} {:>16}",
        "median",
        "HotSpot",
        "Concord",
        "Concord/HotSpot"
    )?;
    for (name, _, f) in METRICS {
        let (h, c) = (o.median(&o.hotspot, f), o.median(&o.concord, f));
        let ratio = if h > 0.0 {
            format!("{:.2}x", c / h)
        } else {
            "-".into()
        };
        outln!("{name:<28} {h:>12.2} {c:>12.2} {ratio:>16}")?;
    }
    outln!("GC pauses from {PAUSES_FROM}")?;
    outln!(
        "checksums equal the expected {} in every run on both sides",
        o.spec.bench.expected_checksum(&o.spec)
    )?;
    outln!()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(bench: Bench, depth: u32, rounds: u32) -> Spec {
        Spec {
            bench,
            heap_bytes: 64 << 20,
            gc_threads: 2,
            depth,
            rounds,
        }
    }

    #[test]
    fn each_program_gets_its_arguments_and_checksum() {
        let g = spec(Bench::Gcbench, 18, 3);
        assert_eq!(g.bench.program_args(&g), ["--copies", "1", "--rounds", "3"]);
        assert_eq!(
            g.bench.expected_checksum(&g),
            3 * hotspot::GCBENCH_CHECKSUM_PER_COPY
        );
        assert_eq!(g.bench.size(&g), None);
        let b = spec(Bench::BinaryTrees, 10, 2);
        assert_eq!(b.bench.program_args(&b), ["10", "2"]);
        assert_eq!(b.bench.expected_checksum(&b), 2 * 135_854);
        assert_eq!(b.bench.size(&b), Some(10));
        assert_eq!(Bench::BinaryTrees.default_heap(18).unwrap(), 96 << 20);
        assert_eq!(Bench::Gcbench.default_heap(18).unwrap(), 64 << 20);
    }

    #[test]
    fn the_jvm_gets_the_same_heap_and_gc_threads() {
        let s = spec(Bench::BinaryTrees, 18, 1);
        let args = jvm_args(&s, Path::new("/tmp/x/gc.log"), &["-Xint".to_string()]).unwrap();
        assert_eq!(
            args,
            [
                "-Xms65536k",
                "-Xmx65536k",
                "-XX:+UseParallelGC",
                "-XX:ParallelGCThreads=2",
                "-Xlog:gc:file=\"/tmp/x/gc.log\":uptime,level,tags",
                "-Xint"
            ]
        );
        assert!(jvm_args(&s, Path::new("/tmp/a\"b"), &[]).is_err());
    }

    #[test]
    fn the_java_binary_trees_prints_what_is_parsed() {
        // The source's output lines and its argument order, as run_hotspot reads them.
        assert!(BINARY_TREES_SOURCE.contains("System.out.println(\"checksum=\" + checksum);"));
        assert!(BINARY_TREES_SOURCE.contains("\"wall_ms=\" + String.format(java.util.Locale.ROOT"));
        assert!(BINARY_TREES_SOURCE.contains("public class BinaryTrees"));
    }

    #[test]
    fn the_startup_share_is_the_difference() {
        let r = SideRun {
            run: Run {
                wall_ms: 100.0,
                pause_total_ms: 10.0,
                pause_max_ms: 5.0,
                young: 3,
                full: 1,
                checksum: 1,
            },
            wall_with_startup_ms: 160.0,
        };
        let value = |key: &str| METRICS.iter().find(|m| m.1 == key).unwrap().2(&r);
        assert_eq!(value("wall ms"), 100.0);
        assert_eq!(value("wall ms with start-up"), 160.0);
        assert_eq!(value("start-up and exit ms"), 60.0);
        assert_eq!(value("wall ms outside GC pauses"), 90.0);
        assert_eq!(value("pause count"), 4.0);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["wall_ms"], 100.0);
        assert_eq!(json["wall_with_startup_ms"], 160.0);
        assert_eq!(ratio_or_null(1.0, 0.0), serde_json::Value::Null);
    }
}
