//! `concord vs-hotspot`: GCBench on HotSpot Parallel GC and on Concord, same heap size and GC
//! thread count, alternating A B A B in one invocation, with medians and ratios.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, Context, Result};
use clap::Args;
use concord::config::{format_size, ConfigBuilder};
use concord::{CollectionKind, GcConfig, Heap};
use concord_workloads::{lookup, WorkloadParams};
use serde_json::json;

use crate::console::outln;
use crate::experiment::median;
use crate::flags::{count_in, Size};
use crate::hotspot::{self, HotspotOptions, PauseKind};
use crate::side_by_side::{pair_order, print_header, Run};
use crate::RunFailed;

/// The scratch directory of the JVM's classes, removed however the command ends.
struct WorkDir(std::path::PathBuf);

impl WorkDir {
    fn create() -> Result<WorkDir> {
        let dir = std::env::temp_dir().join(format!("concord-vs-hotspot-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(WorkDir(dir))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Flags of `concord vs-hotspot`.
#[derive(Args, Debug, Clone)]
pub struct VsHotspotArgs {
    /// Heap size for both collectors (-Xms = -Xmx on HotSpot).
    #[arg(
        long,
        default_value = "64m",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub heap: Size,
    /// GC worker threads for both collectors.
    #[arg(
        long = "gc-threads",
        default_value_t = 2,
        value_parser = count_in(1, 256),
        allow_negative_numbers = true
    )]
    pub gc_threads: u32,
    /// How many A B pairs to run.
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
    pub java: Option<std::path::PathBuf>,
    /// Extra JVM option (repeatable), e.g. --jvm-arg=-XX:-UseAdaptiveSizePolicy.
    #[arg(long = "jvm-arg", allow_hyphen_values = true)]
    pub jvm_args: Vec<String>,
    /// Print the measurements as JSON.
    #[arg(long)]
    pub json: bool,
}

/// A named figure of a run.
type Metric = (&'static str, fn(&Run) -> f64);

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

/// GCBench once on a Concord heap of `config`; every error is a failed run.
fn run_concord(config: &GcConfig) -> Result<Run> {
    let workload = lookup("gcbench").context("gcbench workload missing")?;
    let heap = Heap::new(config.clone()).map_err(RunFailed::wrap)?;
    let params = WorkloadParams {
        mutators: 1,
        rounds: 1,
        size: None,
    };
    let start = Instant::now();
    let result = workload.run(&heap, &params).map_err(RunFailed::wrap)?;
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    if result.checksum_ok() == Some(false) {
        return Err(RunFailed::wrap(anyhow!(
            "Concord's GCBench checksum {} differs from the expected {:?}",
            result.checksum,
            result.expected_checksum
        )));
    }
    Ok(Run {
        wall_ms,
        pause_total_ms: stats.pause_total_ms(),
        pause_max_ms: stats.pause_max_ms(),
        young: stats.count(CollectionKind::Young),
        full: stats.count(CollectionKind::Full),
        checksum: result.checksum,
    })
}

/// Run `concord vs-hotspot`.
pub fn run(args: VsHotspotArgs) -> Result<ExitCode> {
    let heap_bytes = args.heap.bytes();
    let config = concord_config(heap_bytes, args.gc_threads)?;
    let tools = hotspot::find_java(args.java.as_deref())?;
    let workdir = WorkDir::create()?;
    let classpath = hotspot::prepare_gcbench(&tools, &workdir.0).map_err(RunFailed::wrap)?;
    let opts = HotspotOptions {
        java: args.java.clone(),
        heap_bytes,
        gc_threads: args.gc_threads as usize,
        copies: 1,
        rounds: 1,
        extra_jvm_args: args.jvm_args.clone(),
    };
    if !args.json {
        outln!(
            "GCBench, heap {}, {} GC threads: HotSpot {} (-XX:+UseParallelGC) vs Concord (optimized), {} pairs alternating",
            format_size(heap_bytes),
            args.gc_threads,
            tools.version,
            args.repeat
        )?;
        print_header()?;
    }
    let (mut hs, mut cc) = (Vec::new(), Vec::new());
    for i in 0..args.repeat {
        let order = pair_order(i);
        for hotspot_turn in order {
            let (who, r) = if hotspot_turn {
                let h = hotspot::run_gcbench(&tools, &classpath, &opts).map_err(RunFailed::wrap)?;
                let r = Run {
                    wall_ms: h.wall_ms,
                    pause_total_ms: hotspot::total_pause_ms(&h.pauses),
                    pause_max_ms: hotspot::max_pause_ms(&h.pauses),
                    young: hotspot::pause_count(&h.pauses, PauseKind::Young),
                    full: hotspot::pause_count(&h.pauses, PauseKind::Full),
                    checksum: h.checksum,
                };
                hs.push(r.clone());
                ("HotSpot", r)
            } else {
                let r = run_concord(&config)?;
                cc.push(r.clone());
                ("Concord", r)
            };
            if !args.json {
                r.print_row(i + 1, who, true)?;
            }
        }
    }
    drop(workdir);
    let med = |v: &[Run], f: fn(&Run) -> f64| median(v.iter().map(f).collect());
    let rows: [Metric; 4] = [
        ("GC pause total ms", |r| r.pause_total_ms),
        ("max pause ms", |r| r.pause_max_ms),
        ("pause count", |r| (r.young + r.full) as f64),
        ("wall ms", |r| r.wall_ms),
    ];
    if args.json {
        let medians: serde_json::Map<String, serde_json::Value> = rows
            .iter()
            .map(|(name, f)| {
                let (h, c) = (med(&hs, *f), med(&cc, *f));
                (
                    name.to_string(),
                    json!({"hotspot": h, "concord": c, "ratio": c / h}),
                )
            })
            .collect();
        let out = json!({
            "heap_size": heap_bytes,
            "gc_threads": args.gc_threads,
            "java_version": tools.version,
            "hotspot": hs,
            "concord": cc,
            "medians": medians,
        });
        outln!("{}", serde_json::to_string_pretty(&out)?)?;
    } else {
        outln!()?;
        outln!(
            "{:<20} {:>12} {:>12} {:>18}",
            "median",
            "HotSpot",
            "Concord",
            "Concord/HotSpot"
        )?;
        for (name, f) in rows {
            let (h, c) = (med(&hs, f), med(&cc, f));
            let ratio = if h > 0.0 {
                format!("{:.2}x", c / h)
            } else {
                "-".into()
            };
            outln!("{name:<20} {h:>12.2} {c:>12.2} {ratio:>18}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
