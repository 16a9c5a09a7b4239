//! `concord ablation`: the 000 Fig. 10 experiment. One workload under `vanilla`, vanilla plus
//! each single fix, `modern` and `optimized`, alternating the configurations A B C … A B C …
//! in one invocation (so machine noise hits all of them alike), then a table of medians:
//! GC time, pause percentiles, root-task imbalance, steal attempts and failure rate.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::ConfigBuilder;
use concord::{GcConfig, Heap};
use concord_workloads::{lookup, workload_names, Workload, WorkloadParams};
use serde_json::json;

use crate::summary::Summary;

/// Flags of `concord ablation`.
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// Workload to run (default gcbench).
    #[arg(default_value = "gcbench")]
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth).
    pub size: Option<u32>,
    /// How many rounds of all configurations to run (each round runs every configuration once).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub repeat: u32,
    /// GC worker threads for every configuration (default: twice the usable CPUs, so the GC
    /// threads oversubscribe the cores as in the papers' stacking experiments).
    #[arg(long = "gc-threads", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub gc_threads: Option<u32>,
    /// Mutator threads.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub mutators: u32,
    /// Heap size (default: the workload's own default heap).
    #[arg(long)]
    pub heap: Option<String>,
    /// Create the GC threads on one CPU, as HotSpot does, in every configuration (default
    /// true, so the configurations differ only in the parallel-phase switches).
    #[arg(
        long = "pin-start",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_value = "true",
        default_missing_value = "true"
    )]
    pub pin_start: String,
    /// Only these configurations (comma-separated labels, e.g. vanilla,+adaptive-steal).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Verify the heap after every collection in every run.
    #[arg(long)]
    pub verify: bool,
    /// Print every run and the medians as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// A named configuration: a preset plus switch overrides.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Short label for tables.
    pub label: &'static str,
    /// What it changes, in words.
    pub what: &'static str,
    /// Configuration keys and values applied on top of the common settings.
    pub settings: &'static [(&'static str, &'static str)],
}

/// The ablation set: the three presets and vanilla with each single fix of the papers.
pub const VARIANTS: &[Variant] = &[
    Variant {
        label: "vanilla",
        what: "OpenJDK 8: monitor queue, best-of-2, fixed termination, monitor parking",
        settings: &[("preset", "vanilla")],
    },
    Variant {
        label: "+lockfree-queue",
        what: "vanilla with the lock-free task queue (004 §3.1.1)",
        settings: &[("preset", "vanilla"), ("task-queue", "lockfree")],
    },
    Variant {
        label: "+task-affinity",
        what: "vanilla with task affinity (000 §4.1)",
        settings: &[("preset", "vanilla"), ("task-affinity", "on")],
    },
    Variant {
        label: "+adaptive-steal",
        what: "vanilla with adaptive semi-random stealing (000 Algorithm 2)",
        settings: &[("preset", "vanilla"), ("steal", "adaptive")],
    },
    Variant {
        label: "+live-termination",
        what: "vanilla with 2·N_live termination (000 §4.2)",
        settings: &[("preset", "vanilla"), ("termination", "live")],
    },
    Variant {
        label: "+futex-parking",
        what: "vanilla with lazy futex parking (004 §3.1.2)",
        settings: &[("preset", "vanilla"), ("parking", "futex")],
    },
    Variant {
        label: "modern",
        what: "HotSpot 17+: claiming, last-victim, OWST",
        settings: &[("preset", "modern")],
    },
    Variant {
        label: "optimized",
        what: "all of the papers' parallel-phase fixes",
        settings: &[("preset", "optimized")],
    },
];

/// The figures of one run that the table reports.
#[derive(Clone, Debug, serde::Serialize)]
struct Figures {
    wall_ms: f64,
    gc_ms: f64,
    pause_p50_ms: f64,
    pause_p99_ms: f64,
    pause_max_ms: f64,
    imbalance: f64,
    steal_attempts: f64,
    failure_rate: f64,
    termination_ms: f64,
    cpus_used: f64,
}

impl Figures {
    fn of(s: &Summary) -> Self {
        Self {
            wall_ms: s.wall_ms,
            gc_ms: s.pause_total_ms,
            pause_p50_ms: s.pause_p50_ms,
            pause_p99_ms: s.pause_p99_ms,
            pause_max_ms: s.pause_max_ms,
            imbalance: s.root_task_imbalance,
            steal_attempts: s.steal_attempts as f64,
            failure_rate: s.steal_failure_rate(),
            termination_ms: s.worker_time.termination_ms,
            cpus_used: s.mean_cpus_used,
        }
    }

    /// Component-wise median of several runs.
    fn median(runs: &[Figures]) -> Figures {
        let m = |f: fn(&Figures) -> f64| median(runs.iter().map(f).collect());
        Figures {
            wall_ms: m(|r| r.wall_ms),
            gc_ms: m(|r| r.gc_ms),
            pause_p50_ms: m(|r| r.pause_p50_ms),
            pause_p99_ms: m(|r| r.pause_p99_ms),
            pause_max_ms: m(|r| r.pause_max_ms),
            imbalance: m(|r| r.imbalance),
            steal_attempts: m(|r| r.steal_attempts),
            failure_rate: m(|r| r.failure_rate),
            termination_ms: m(|r| r.termination_ms),
            cpus_used: m(|r| r.cpus_used),
        }
    }
}

/// Median of a non-empty list (mean of the middle two for even lengths).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Build the configuration of `variant` on top of the common settings.
fn variant_config(common: &[(&str, String)], variant: &Variant) -> Result<GcConfig> {
    let mut b = ConfigBuilder::new();
    for (key, value) in variant.settings {
        b.set_cli(key, value)?;
    }
    for (key, value) in common {
        b.set_cli(key, value)?;
    }
    b.build()
        .with_context(|| format!("configuration '{}'", variant.label))
}

/// Run `workload` once on a fresh heap built from `config`.
fn run_once(
    workload: &dyn Workload,
    params: &WorkloadParams,
    config: &GcConfig,
) -> Result<Summary> {
    let heap = Heap::new(config.clone())?;
    let start = Instant::now();
    let result = workload.run(&heap, params);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    drop(heap);
    let result = result.map_err(|e| anyhow::anyhow!("workload {} failed: {e}", workload.name()))?;
    Ok(Summary::new(
        workload.name(),
        config,
        params,
        wall_ms,
        &stats,
        &result,
    ))
}

/// Run `concord ablation`.
pub fn run(args: AblationArgs) -> Result<ExitCode> {
    let Some(workload) = lookup(&args.workload) else {
        bail!(
            "unknown workload '{}' (allowed: {})",
            args.workload,
            workload_names().join(", ")
        );
    };
    let variants: Vec<&Variant> = if args.only.is_empty() {
        VARIANTS.iter().collect()
    } else {
        args.only
            .iter()
            .map(|label| {
                VARIANTS
                    .iter()
                    .find(|v| v.label == label.trim())
                    .with_context(|| {
                        let labels: Vec<&str> = VARIANTS.iter().map(|v| v.label).collect();
                        format!(
                            "--only: unknown configuration '{label}' (allowed: {})",
                            labels.join(", ")
                        )
                    })
            })
            .collect::<Result<_>>()?
    };
    let params = WorkloadParams {
        mutators: args.mutators as usize,
        rounds: 1,
        size: args.size,
    };
    let gc_threads = args
        .gc_threads
        .map_or(2 * concord::os::cpu::usable_cpu_count(), |n| n as usize);
    let heap = match &args.heap {
        Some(h) => h.clone(),
        None => format!("{}k", workload.default_heap(&params).div_ceil(1024)),
    };
    let mut common = vec![
        ("heap", heap),
        ("gc-threads", gc_threads.to_string()),
        ("pin-start", args.pin_start.clone()),
    ];
    if args.verify {
        common.push(("verify", "true".to_string()));
    }
    let configs: Vec<GcConfig> = variants
        .iter()
        .map(|v| variant_config(&common, v))
        .collect::<Result<_>>()?;

    let mut runs: Vec<Vec<Figures>> = vec![Vec::new(); variants.len()];
    let mut all_ok = true;
    // Progress goes to stderr, on one rewritten line when it is a terminal.
    let progress = !args.json && std::io::stderr().is_terminal();
    for round in 0..args.repeat {
        for (i, (variant, config)) in variants.iter().zip(&configs).enumerate() {
            if progress {
                eprint!(
                    "\rround {}/{}: {:<18}",
                    round + 1,
                    args.repeat,
                    variant.label
                );
            }
            let summary = run_once(workload.as_ref(), &params, config)?;
            if summary.checksum_ok == Some(false) || summary.verified == Some(false) {
                eprintln!(
                    "\nconcord: {} produced a wrong result (checksum {:?}, verified {:?})",
                    variant.label, summary.checksum_ok, summary.verified
                );
                all_ok = false;
            }
            runs[i].push(Figures::of(&summary));
        }
    }
    if progress {
        eprint!("\r{:<40}\r", "");
    }
    let medians: Vec<Figures> = runs.iter().map(|r| Figures::median(r)).collect();
    if args.json {
        let out = json!({
            "workload": workload.name(),
            "gc_threads": gc_threads,
            "mutators": args.mutators,
            "pin_start": args.pin_start,
            "repeat": args.repeat,
            "configurations": variants.iter().zip(runs.iter().zip(&medians)).map(|(v, (r, m))| json!({
                "label": v.label,
                "settings": v.settings.iter().map(|(k, val)| format!("{k}={val}")).collect::<Vec<_>>(),
                "median": m,
                "runs": r,
            })).collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print!(
            "{}",
            table(
                workload.name(),
                gc_threads,
                &args,
                &variants,
                &runs,
                &medians
            )
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn table(
    workload: &str,
    gc_threads: usize,
    args: &AblationArgs,
    variants: &[&Variant],
    runs: &[Vec<Figures>],
    medians: &[Figures],
) -> String {
    use std::fmt::Write as _;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "concord ablation {workload}: {gc_threads} GC threads, {} mutators, pin-start {}, \
         medians of {} alternating runs each",
        args.mutators, args.pin_start, args.repeat
    );
    let _ = writeln!(
        s,
        "{:<18} {:>9} {:>15} {:>7} {:>7} {:>7} {:>7} {:>9} {:>6} {:>8} {:>5} {:>8}",
        "configuration",
        "GC ms",
        "(min-max)",
        "ratio",
        "p50 ms",
        "p99 ms",
        "max ms",
        "steals",
        "fail%",
        "imbal.",
        "CPUs",
        "wall ms"
    );
    let base = medians.first().map_or(0.0, |m| m.gc_ms);
    for ((v, r), m) in variants.iter().zip(runs).zip(medians) {
        let lo = r.iter().map(|f| f.gc_ms).fold(f64::INFINITY, f64::min);
        let hi = r.iter().map(|f| f.gc_ms).fold(0.0, f64::max);
        let ratio = if base > 0.0 { m.gc_ms / base } else { 0.0 };
        let _ = writeln!(
            s,
            "{:<18} {:>9.1} {:>15} {:>6.2}x {:>7.2} {:>7.2} {:>7.2} {:>9.0} {:>5.1}% {:>8.2} {:>5.2} {:>8.0}",
            v.label,
            m.gc_ms,
            format!("({lo:.1}-{hi:.1})"),
            ratio,
            m.pause_p50_ms,
            m.pause_p99_ms,
            m.pause_max_ms,
            m.steal_attempts,
            100.0 * m.failure_rate,
            m.imbalance,
            m.cpus_used,
            m.wall_ms
        );
    }
    let _ = writeln!(
        s,
        "ratio: GC time relative to the first row; imbal.: most root tasks one worker ran over the \
         mean per worker; CPUs: distinct CPUs the GC workers were seen on per collection."
    );
    for v in variants {
        let _ = writeln!(s, "  {:<18} {}", v.label, v.what);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_builds_a_valid_configuration_differing_from_vanilla_in_one_switch() {
        let common = vec![("heap", "32m".to_string()), ("gc-threads", "4".to_string())];
        let vanilla = variant_config(&common, &VARIANTS[0]).unwrap();
        for v in VARIANTS {
            let c = variant_config(&common, v).unwrap();
            assert_eq!(c.gc_threads, 4, "{}", v.label);
            if v.label.starts_with('+') {
                let differing = [
                    c.task_queue != vanilla.task_queue,
                    c.task_affinity != vanilla.task_affinity,
                    c.steal != vanilla.steal,
                    c.termination != vanilla.termination,
                    c.parking != vanilla.parking,
                ];
                assert_eq!(differing.iter().filter(|&&d| d).count(), 1, "{}", v.label);
            }
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
    }
}
