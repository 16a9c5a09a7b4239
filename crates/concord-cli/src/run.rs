//! `concord run <workload>`: build a heap from presets, a TOML file, `CONCORD_*` variables and
//! flags, run the workload, and print a summary (readable, or the summary JSON of DESIGN.md).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::ConfigBuilder;
use concord::Heap;
use concord_workloads::{lookup, workload_names, WorkloadParams};

use crate::summary::Summary;

/// Flags of `concord run`.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Workload to run (gcbench, binary-trees).
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth, default 18).
    pub size: Option<u32>,
    /// Policy preset (currently: optimized).
    #[arg(long)]
    pub preset: Option<String>,
    /// Maximum heap size, e.g. 64m, 1g (default: the workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Young generation size (default: heap / 3).
    #[arg(long)]
    pub young: Option<String>,
    /// GC worker threads (default: HotSpot's rule, ncpus <= 8 ? ncpus : 3 + 5*ncpus/8).
    #[arg(long = "gc-threads")]
    pub gc_threads: Option<String>,
    /// Mutator threads (gcbench: independent copies; binary-trees: threads sharing the depths).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Repeat the workload this many times in one heap.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub rounds: u32,
    /// Verify the whole heap after every collection.
    #[arg(long)]
    pub verify: bool,
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

/// Resolve the configuration for `args` (TOML < env < flags; workload default heap last).
pub fn build_config(args: &RunArgs, default_heap: usize) -> Result<concord::GcConfig> {
    let mut b = ConfigBuilder::new();
    if let Some(path) = &args.config {
        b.apply_toml_file(path)?;
    }
    b.apply_process_env()?;
    let flags: [(&str, &Option<String>); 4] = [
        ("preset", &args.preset),
        ("heap", &args.heap),
        ("young", &args.young),
        ("gc-threads", &args.gc_threads),
    ];
    for (key, value) in flags {
        if let Some(v) = value {
            b.set_cli(key, v)?;
        }
    }
    if args.verify {
        b.set_cli("verify", "true")?;
    }
    if let Some(p) = &args.gc_log {
        b.set_cli("gc-log", &p.display().to_string())?;
    }
    if !b.is_set("heap") {
        b.set_cli("heap", &format!("{}k", default_heap.div_ceil(1024)))?;
    }
    Ok(b.build()?)
}

/// Run `concord run`.
pub fn run(args: RunArgs) -> Result<ExitCode> {
    let Some(workload) = lookup(&args.workload) else {
        bail!(
            "unknown workload '{}' (allowed: {})",
            args.workload,
            workload_names().join(", ")
        );
    };
    let params = WorkloadParams {
        mutators: args.mutators as usize,
        rounds: args.rounds as usize,
        size: args.size,
    };
    let config = build_config(&args, workload.default_heap(&params))?;
    // Open the records file before running, so a bad path fails fast.
    let records_out = match &args.gc_records {
        Some(p) => Some(
            File::create(p)
                .with_context(|| format!("--gc-records: cannot create {}", p.display()))?,
        ),
        None => None,
    };
    let heap = Heap::new(config.clone())?;
    let start = Instant::now();
    let result = workload.run(&heap, &params);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    drop(heap);
    let result = result.map_err(|e| anyhow::anyhow!("workload {} failed: {e}", workload.name()))?;
    if let Some(f) = records_out {
        let mut w = BufWriter::new(f);
        for r in &stats.records {
            serde_json::to_writer(&mut w, r)?;
            writeln!(w)?;
        }
        w.flush()?;
    }
    let summary = Summary::new(workload.name(), &config, &params, wall_ms, &stats, &result);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary.json())?);
    } else {
        print!("{}", summary.readable());
    }
    let ok = summary.checksum_ok != Some(false) && summary.verified != Some(false);
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
