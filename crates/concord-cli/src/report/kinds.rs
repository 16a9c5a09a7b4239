//! The figures of each kind of experiment, besides those every report has: `ablation` (000
//! Fig. 10: each fix's GC time relative to vanilla; stealing per collection), `os-bench` (GC
//! time and CPUs used per affinity mode, without and with interference), `sched-bench` (001:
//! object lifespan histograms per policy; GC and wall time relative to CFS), `pause-bench`
//! (002 Fig. 4/6: a pause time series per load, one series per GC log mode × THP mode; 002
//! Tables 2–3: pauses over 250/500/1000/2000 ms per arm), `jvm-bench` (HotSpot's GC
//! pause totals and the companion agent's callback time per affinity mode and load),
//! `placement-bench` (004 Fig. 3: speedup over one thread per memory placement, and the
//! placement's access imbalance and remote share); and, for every kind, the task-manager
//! monitor's counters (000 Fig. 5) where the records have them.

use std::fmt::Write as _;

use concord::config::format_size;

use super::model::{Configuration, Experiment, Run};
use super::page::{empty, esc, figure};
use super::plots::{self, BarSeries, Bars};

/// A section's anchor and its title in the page's navigation.
pub type NavEntry = (&'static str, &'static str);

/// Appends the sections of the experiment's kind and, where runs collect garbage, the NUMA and
/// monitor sections to `h`; returns their navigation entries.
pub fn sections(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let mut nav = match exp.file.kind.as_str() {
        "ablation" => ablation(h, exp)?,
        "os-bench" => os_bench(h, exp)?,
        "sched-bench" => sched_bench(h, exp)?,
        "pause-bench" => pause_bench(h, exp)?,
        "jvm-bench" => jvm_bench(h, exp)?,
        "placement-bench" => placement_bench(h, exp)?,
        _ => Vec::new(),
    };
    if has_collections(exp) {
        if let Some(entry) = numa(h, exp)? {
            nav.push(entry);
        }
        nav.push(monitor(h, exp)?);
    }
    Ok(nav)
}

/// Whether the experiment's runs collect garbage (the memory-placement benchmark does not, so
/// its page has no section about collections).
pub fn has_collections(exp: &Experiment) -> bool {
    exp.file.kind != "placement-bench"
}

/// Median over the configuration's runs of `f`, with the smallest and largest value.
type Stat = (Option<f64>, Option<(f64, f64)>);

fn stat(exp: &Experiment, c: &Configuration, f: impl Fn(&Run) -> Option<f64>) -> Stat {
    (exp.median_of(c, &f), exp.range_of(c, &f))
}

/// `stat` divided by `by` (a baseline's median); nothing when `by` is not positive.
fn relative(s: Stat, by: Option<f64>) -> Stat {
    match by.filter(|b| *b > 0.0) {
        Some(b) => (s.0.map(|v| v / b), s.1.map(|(lo, hi)| (lo / b, hi / b))),
        None => (None, None),
    }
}

/// A series of bars from one statistic per category.
fn series(label: &str, index: usize, stats: Vec<Stat>) -> BarSeries {
    let (values, ranges) = stats.into_iter().unzip();
    BarSeries {
        label: label.to_string(),
        color: plots::color(index),
        values,
        ranges,
    }
}

/// One series per label, colored in order, with the statistics `stats(i, label)` per category.
fn series_of<T: AsRef<str>>(
    labels: &[T],
    stats: impl Fn(usize, &T) -> Vec<Stat>,
) -> Vec<BarSeries> {
    labels
        .iter()
        .enumerate()
        .map(|(i, label)| series(label.as_ref(), i, stats(i, label)))
        .collect()
}

/// A figure, or the note `none` when no bar has a value.
fn bars_or_note(h: &mut String, bars: &Bars, caption: &str, none: &str) -> anyhow::Result<()> {
    if bars
        .series
        .iter()
        .all(|s| s.values.iter().all(Option::is_none))
    {
        empty(h, none);
    } else {
        figure(h, &plots::bars(bars)?, caption);
    }
    Ok(())
}

/// Steal attempts per collection of a run.
fn per_collection(run: &Run, key: &str) -> Option<f64> {
    let collections = run.num("gc_count").filter(|n| *n > 0.0)?;
    Some(run.num(key)? / collections)
}

fn names(configs: &[&Configuration]) -> Vec<String> {
    configs.iter().map(|c| c.name.clone()).collect()
}

fn ablation(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let configs: Vec<&Configuration> = exp.configurations.iter().collect();
    let Some(base) = configs.first() else {
        return Ok(Vec::new());
    };
    let categories = names(&configs);
    let base_gc = exp.median_of(base, Run::gc_ms);
    let _ = writeln!(h, "<h2 id=\"each-fix\">Each fix alone (000 Fig. 10)</h2>");
    let ratios = configs
        .iter()
        .map(|c| relative(stat(exp, c, Run::gc_ms), base_gc))
        .collect();
    let title = format!("GC time relative to {}", base.name);
    bars_or_note(
        h,
        &Bars::new(
            &title,
            "configuration",
            "GC time / baseline's median GC time",
            &categories,
            &[series("median over runs", 0, ratios)],
        )
        .reference(1.0, "baseline")
        .decimals(2),
        &format!(
            "Total GC time of each configuration over the median GC time of <b>{}</b>, median over runs with the fastest and slowest run as whiskers (000 Fig. 10): \
             a bar below the line is a fix that shortens the pauses on its own; whiskers that straddle the line mean the difference is within this machine's noise.",
            esc(&base.name)
        ),
        "No configuration has a finished run with GC time.",
    )?;
    let _ = writeln!(
        h,
        "<h2 id=\"steals-per-collection\">Stealing per collection</h2>"
    );
    let attempts = configs
        .iter()
        .map(|c| stat(exp, c, |r| per_collection(r, "steal_attempts")))
        .collect();
    let failures = configs
        .iter()
        .map(|c| stat(exp, c, |r| per_collection(r, "steal_failures")))
        .collect();
    bars_or_note(
        h,
        &Bars::new(
            "Steal attempts and failures per collection",
            "configuration",
            "steal attempts per collection",
            &categories,
            &[
                series("attempts", 0, attempts),
                series("failed attempts", 2, failures),
            ],
        )
        .legend("per collection")
        .decimals(0),
        "Steal attempts and failed attempts per collection, median over runs with min–max whiskers (000 Table 1, Fig. 9): \
         adaptive stealing and 2·N_live termination should cut the failed attempts that vanilla's best-of-2 and fixed 2·N termination burn while workers look for work.",
        "No run reported steal counts.",
    )?;
    Ok(vec![
        ("each-fix", "Each fix alone"),
        ("steals-per-collection", "Steals per collection"),
    ])
}

/// 002's pictures: for each load, the pauses of every configuration's median run against
/// time (Fig. 4/6), and the pauses over 250/500/1000/2000 ms per configuration (Tables 2–3).
fn pause_bench(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let _ = writeln!(
        h,
        "<h2 id=\"pause-series\">Pauses over time, per load (002 Fig. 4/6)</h2>"
    );
    for group in groups(exp) {
        let configs = in_group(exp, &group);
        let title = group.clone().unwrap_or_default();
        let series: Vec<plots::PauseSeries> = configs
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let run = exp.representative(c)?;
                let points = run
                    .records
                    .as_deref()?
                    .iter()
                    .map(|r| (r.start_ms, r.pause_ms, r.is_full()))
                    .collect();
                Some(plots::PauseSeries {
                    label: c.name.clone(),
                    color: plots::color(i),
                    points,
                })
            })
            .collect();
        let _ = writeln!(h, "<h3>{}</h3>", esc(&title));
        if series.iter().all(|s| s.points.is_empty()) {
            empty(h, "No run of this load recorded a collection.");
            continue;
        }
        figure(
            h,
            &plots::pause_timeline(&series)?,
            &format!(
                "Under <b>{}</b>: every stop-the-world pause of each configuration's median run (by GC time), at the time it started. \
                 A sync log whose write() stalls puts the stall into the pause, so its series has spikes the async series lacks; \
                 first-touch faults and THP compaction lift every mode alike.",
                esc(&title)
            ),
        );
    }
    let _ = writeln!(
        h,
        "<h2 id=\"pauses-over\">Pauses over 250 / 500 / 1000 / 2000 ms (002 Tables 2–3)</h2>"
    );
    let configs: Vec<&Configuration> = exp.configurations.iter().collect();
    let categories: Vec<String> = configs.iter().map(|c| c.label.clone()).collect();
    let thresholds = ["250", "500", "1000", "2000"];
    let bars: Vec<BarSeries> = thresholds
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let stats = configs
                .iter()
                .map(|c| {
                    stat(exp, c, |r| {
                        r.summary.as_ref()?["pauses_over_ms"][*t].as_f64()
                    })
                })
                .collect();
            series(&format!("> {t} ms"), i, stats)
        })
        .collect();
    bars_or_note(
        h,
        &Bars::new(
            "Pauses longer than each threshold",
            "load:log mode/THP",
            "pauses per run",
            &categories,
            &bars,
        )
        .legend("pauses")
        .decimals(0),
        "Pauses per run longer than 250, 500, 1000 and 2000 ms, median over runs with min–max whiskers (002 Tables 2–3; 250 ms is its SLA). \
         Compare the sync and async bars of a load: what the async ones lack is the log writes that stalled inside the pause.",
        "No run has pause counts.",
    )?;
    Ok(vec![
        ("pause-series", "Pauses over time"),
        ("pauses-over", "Pauses over thresholds"),
    ])
}

/// The configurations of `group`, in order.
fn in_group<'a>(exp: &'a Experiment, group: &Option<String>) -> Vec<&'a Configuration> {
    exp.configurations
        .iter()
        .filter(|c| &c.group == group)
        .collect()
}

/// The groups in order of first appearance.
fn groups(exp: &Experiment) -> Vec<Option<String>> {
    let mut out: Vec<Option<String>> = Vec::new();
    for c in &exp.configurations {
        if !out.contains(&c.group) {
            out.push(c.group.clone());
        }
    }
    out
}

/// For each group, one series over the configuration names of the first group: the
/// statistic `f` of the configuration with that name in the group.
fn series_by_group(
    exp: &Experiment,
    categories: &[String],
    label: impl Fn(&Configuration) -> String,
    f: impl Fn(&Configuration) -> Stat,
) -> Vec<BarSeries> {
    groups(exp)
        .iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let configs = in_group(exp, g);
            let first = configs.first()?;
            let stats = categories
                .iter()
                .map(|name| {
                    configs
                        .iter()
                        .find(|c| &c.name == name)
                        .map_or((None, None), |c| f(c))
                })
                .collect();
            Some(series(&label(first), i, stats))
        })
        .collect()
}

fn os_bench(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let Some(first_group) = groups(exp).into_iter().next() else {
        return Ok(Vec::new());
    };
    let modes = names(&in_group(exp, &first_group));
    let load = |c: &Configuration| {
        c.interference
            .as_ref()
            .map_or("no interference".to_string(), |l| format!("with {l}"))
    };
    let _ = writeln!(
        h,
        "<h2 id=\"interference\">GC time with and without interference</h2>"
    );
    let gc = series_by_group(exp, &modes, load, |c| stat(exp, c, Run::gc_ms));
    bars_or_note(
        h,
        &Bars::new(
            "GC time per GC thread affinity, without and with interference",
            "configuration (preset/affinity)",
            "GC time per run (ms)",
            &modes,
            &gc,
        )
        .legend("load"),
        "Total GC time of each affinity mode without load and with busy-loop threads competing for the CPUs, median over runs with min–max whiskers (000 §3–4): \
         the gap between a mode's two bars is what interference costs it; dynamic affinity (000 Algorithm 1) should keep that gap smallest by moving GC threads off the loaded CPUs.",
        "No configuration has a finished run with GC time.",
    )?;
    let _ = writeln!(h, "<h2 id=\"cpus-used\">CPUs used per collection</h2>");
    let cpus = series_by_group(exp, &modes, load, |c| {
        stat(exp, c, |r| r.num("mean_cpus_used"))
    });
    bars_or_note(
        h,
        &Bars::new(
            "Distinct CPUs the GC workers ran on per collection",
            "configuration (preset/affinity)",
            "CPUs per collection",
            &modes,
            &cpus,
        )
        .legend("load")
        .decimals(2),
        "How many distinct CPUs the GC workers were seen on per collection, median over runs with min–max whiskers: \
         one CPU means the GC threads stayed stacked where they were born (000 Fig. 4b); all usable CPUs means the parallel phase really ran in parallel.",
        "No run reported the CPUs its GC workers used.",
    )?;
    Ok(vec![
        ("interference", "With/without interference"),
        ("cpus-used", "CPUs used"),
    ])
}

/// NUMA accesses per configuration (004 Table 4's non-locality and imbalance per layout), for
/// any experiment whose runs counted them (a NUMA layout, or more than one node): bytes copied
/// and objects scanned locally and remotely, messages between nodes, the imbalance of the
/// scans across nodes, bytes allocated per node, and 004's GC throughput (Fig. 4/7). Nothing
/// when no run counted NUMA figures.
fn numa(h: &mut String, exp: &Experiment) -> anyhow::Result<Option<NavEntry>> {
    let counted = |r: &Run| {
        r.summary
            .as_ref()
            .is_some_and(|s| s["numa"]["accounting"] == true)
    };
    if !exp.runs.iter().any(counted) {
        return Ok(None);
    }
    let configs: Vec<&Configuration> = exp.configurations.iter().collect();
    let labels = names(&configs);
    let per_config = |key: &'static str, scale: f64| {
        configs
            .iter()
            .map(|c| stat(exp, c, |r| Some(r.num(key)? / scale)))
            .collect::<Vec<Stat>>()
    };
    let _ = writeln!(
        h,
        "<h2 id=\"numa\">NUMA: local and remote accesses per layout</h2>"
    );
    let copies = vec![
        series("local", 0, per_config("bytes_copied_local", 1e6)),
        series("remote", 1, per_config("bytes_copied_remote", 1e6)),
    ];
    bars_or_note(
        h,
        &Bars::new(
            "Bytes copied by the collections, to the copying worker's node or another",
            "configuration",
            "MB copied per run",
            &labels,
            &copies,
        )
        .legend("destination"),
        "Bytes the GC workers copied (scavenges) or moved (full collections) per run, split by whether the destination lies on the copying worker's node          (by the layout's node map), median over runs with min–max whiskers (004 Table 4, local against remote accesses):          interleaved spaces send about half of the copies to the other node, fragmented spaces keep survivor copies local.",
        "No run reported NUMA copy figures.",
    )?;
    let scans = vec![
        series("local", 0, per_config("objects_scanned_local", 1e3)),
        series("remote", 1, per_config("objects_scanned_remote", 1e3)),
        series("messages", 2, per_config("numa_messages", 1e3)),
    ];
    bars_or_note(
        h,
        &Bars::new(
            "Objects scanned on the worker's node or another, and scan messages between nodes",
            "configuration",
            "thousands per run",
            &labels,
            &scans,
        )
        .legend("access"),
        "Objects whose slots a GC worker scanned, split by whether they lie on its node, and the scan messages sent between nodes, median over runs with min–max whiskers:          segregated GC work scans nothing remote in young collections and pays in messages instead (004 §3.2.3).",
        "No run reported NUMA scan figures.",
    )?;
    let nodes = exp
        .runs
        .iter()
        .filter_map(|r| {
            r.summary.as_ref()?["numa"]["bytes_allocated_per_node"]
                .as_array()
                .map(Vec::len)
        })
        .max()
        .unwrap_or(0);
    let node_labels: Vec<String> = (0..nodes).map(|n| format!("node {n}")).collect();
    let allocated = series_of(&node_labels, |n, _| {
        configs
            .iter()
            .map(|c| {
                stat(exp, c, |r| {
                    let v = &r.summary.as_ref()?["numa"]["bytes_allocated_per_node"][n];
                    Some(v.as_f64()? / 1e6)
                })
            })
            .collect()
    });
    bars_or_note(
        h,
        &Bars::new(
            "Bytes allocated per node",
            "configuration",
            "MB allocated per run",
            &labels,
            &allocated,
        )
        .legend("node"),
        "Where the memory that mutators' TLABs and direct allocations took lies, per node (by the layout's node map), median over runs with min–max whiskers:          under first touch (off) one node holds everything; interleaved and fragmented spaces spread it (004 §3.2.2).",
        "No run reported bytes allocated per node.",
    )?;
    let imbalance = vec![series(
        "imbalance",
        0,
        per_config("node_access_stddev", 1.0),
    )];
    bars_or_note(
        h,
        &Bars::new(
            "Imbalance of the GC scans across nodes (004 Table 4)",
            "configuration",
            "standard deviation of the nodes' shares",
            &labels,
            &imbalance,
        )
        .decimals(2),
        "The standard deviation over nodes of each node's share of the objects GC workers scanned (by the node of the scanned memory), relative to the mean share, median over runs with min–max whiskers (004 Table 4's imbalance): 0 is perfectly balanced, 1.0 is everything on one of two nodes.",
        "No run reported scans per node (they are known on two nodes, or when every scan is local).",
    )?;
    let throughput = vec![series(
        "GC throughput",
        0,
        per_config("gc_throughput_mb_s", 1.0),
    )];
    bars_or_note(
        h,
        &Bars::new(
            "GC throughput (004 Fig. 4/7)",
            "configuration",
            "MiB allocated per second of GC",
            &labels,
            &throughput,
        ),
        "Bytes the application allocated divided by the time spent in GC pauses, MiB/s, median over runs with min–max whiskers (004 Fig. 4/7; higher is better).",
        "No run reported GC time.",
    )?;
    Ok(Some(("numa", "NUMA accesses")))
}

/// `concord jvm bench`: HotSpot's GC pause totals per GC-thread affinity mode, one series per
/// group (workload and load), and the agent's callback time inside the pause.
fn jvm_bench(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let Some(first_group) = groups(exp).into_iter().next() else {
        return Ok(Vec::new());
    };
    let modes = names(&in_group(exp, &first_group));
    let group = |c: &Configuration| c.group.clone().unwrap_or_else(|| "all runs".into());
    let _ = writeln!(h, "<h2 id=\"jvm-pauses\">HotSpot GC pause totals</h2>");
    let gc = series_by_group(exp, &modes, group, |c| stat(exp, c, Run::gc_ms));
    bars_or_note(
        h,
        &Bars::new(
            "GC pause total per GC-thread affinity mode (HotSpot Parallel GC, -Xlog:gc)",
            "configuration (agent's gc-affinity)",
            "GC pause total per run (ms)",
            &modes,
            &gc,
        )
        .legend("workload; load"),
        "Total of the JVM's own pause times (-Xlog:gc) per affinity mode of the companion agent, median over runs with min–max whiskers, one series per workload and load \
         (off: no agent). The agent's callback runs inside the pause but is not in -Xlog:gc; it is the next figure.",
        "No configuration has a finished run with pauses.",
    )?;
    let _ = writeln!(h, "<h2 id=\"jvm-callback\">The agent's callback time</h2>");
    let cb = series_by_group(exp, &modes, group, |c| {
        stat(exp, c, |r| r.num("callback_us_p50"))
    });
    bars_or_note(
        h,
        &Bars::new(
            "The agent's median callback time per GC (start + finish), µs",
            "configuration (agent's gc-affinity)",
            "callback µs (median per run)",
            &modes,
            &cb,
        )
        .legend("workload; load")
        .decimals(1),
        "The companion agent's GarbageCollectionStart + GarbageCollectionFinish time inside each pause, median per run, median over runs with min–max whiskers \
         (the companion's budget: median at most 20 µs, longest at most 200 µs).",
        "No run has the agent's report (all arms ran without the agent).",
    )?;
    Ok(vec![
        ("jvm-pauses", "HotSpot pause totals"),
        ("jvm-callback", "Agent callback time"),
    ])
}

/// 004 Fig. 3: for each placement (a group, one configuration per thread count), the speedup
/// of each thread count over the group's one thread, per run against the one-thread median;
/// then the plan's access imbalance and remote share per thread count.
fn placement_bench(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let _ = writeln!(
        h,
        "<h2 id=\"placement-speedup\">Speedup per memory placement</h2>"
    );
    let groups = groups(exp);
    let threads_of = |c: &Configuration| c.value.clone().unwrap_or_else(|| c.name.clone());
    let counts: Vec<String> = groups
        .first()
        .map(|g| in_group(exp, g).into_iter().map(threads_of).collect())
        .unwrap_or_default();
    let placement_of = |g: &Option<String>| {
        let g = g.clone().unwrap_or_default();
        g.split(':').next().unwrap_or_default().to_string()
    };
    let per_group = |f: &dyn Fn(&[&Configuration], &Configuration) -> Stat| -> Vec<BarSeries> {
        groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let configs = in_group(exp, g);
                let stats = counts
                    .iter()
                    .map(|n| {
                        configs
                            .iter()
                            .find(|c| &threads_of(c) == n)
                            .map_or((None, None), |c| f(&configs, c))
                    })
                    .collect();
                series(&placement_of(g), i, stats)
            })
            .collect()
    };
    let speedup = per_group(&|configs, c| {
        let one = configs.iter().find(|c| threads_of(c) == "1");
        let base = one.and_then(|one| exp.median_of(one, |r: &Run| r.num("wall_ms")));
        match base {
            Some(base) => stat(exp, c, |r| {
                r.num("wall_ms").filter(|w| *w > 0.0).map(|w| base / w)
            }),
            None => (None, None),
        }
    });
    let memory = exp
        .file
        .parameters
        .get("memory")
        .and_then(|v| v.as_str())
        .unwrap_or_default();
    bars_or_note(
        h,
        &Bars::new(
            "Speedup over one thread, per placement",
            "threads",
            "speedup (one thread's median time / this run's time)",
            &counts,
            &speedup,
        )
        .legend("placement")
        .reference(1.0, "one thread")
        .decimals(2),
        &format!(
            "A fixed number of page reads from thread-local buffers shared by more threads, under each placement (004 Fig. 3), median over runs with min–max whiskers. \
             In the paper, on 48 cores and 8 nodes, balancing the load matters more than locality: unbalanced-remote stops scaling at 8 threads, balanced-remote at 32, balanced-local goes on to 40. {}",
            esc(memory)
        ),
        "No placement has a finished run with one thread and another count.",
    )?;
    let _ = writeln!(
        h,
        "<h2 id=\"placement-imbalance\">Access imbalance and remote share</h2>"
    );
    let imbalance = per_group(&|_, c| stat(exp, c, |r| r.num("node_access_stddev")));
    let remote = per_group(&|_, c| stat(exp, c, |r| r.num("remote_share").map(|v| 100.0 * v)));
    bars_or_note(
        h,
        &Bars::new(
            "Standard deviation of reads across nodes (004 Table 4's measure)",
            "threads",
            "stddev of each node's share / mean share",
            &counts,
            &imbalance,
        )
        .legend("placement")
        .decimals(2),
        "0 when every node serves the same share of the reads; √(N−1) when one node serves them all.",
        "No run recorded its reads per node.",
    )?;
    bars_or_note(
        h,
        &Bars::new(
            "Reads of a page on another node than the reader's",
            "threads",
            "remote reads (%)",
            &counts,
            &remote,
        )
        .legend("placement")
        .decimals(0),
        "The share of the page reads that cross nodes under each placement.",
        "No run recorded its remote share.",
    )?;
    Ok(vec![
        ("placement-speedup", "Speedup per placement"),
        ("placement-imbalance", "Imbalance and remote share"),
    ])
}

/// The label of a lifespan bucket that starts at `lo` bytes.
fn bucket_label(lo: u64) -> String {
    if lo == 0 {
        "<1K".to_string()
    } else {
        format_size(lo as usize)
    }
}

/// Dead objects per lifespan bucket, summed over the configuration's runs.
fn lifespan_histogram(exp: &Experiment, c: &Configuration) -> Option<Vec<(u64, f64)>> {
    let mut total: Vec<(u64, f64)> = Vec::new();
    for buckets in exp.ok_runs(c).filter_map(Run::lifespan_buckets) {
        if total.is_empty() {
            total = buckets;
        } else {
            for ((_, acc), (_, dead)) in total.iter_mut().zip(buckets) {
                *acc += dead;
            }
        }
    }
    (!total.is_empty()).then_some(total)
}

fn sched_bench(h: &mut String, exp: &Experiment) -> anyhow::Result<Vec<NavEntry>> {
    let _ = writeln!(
        h,
        "<h2 id=\"lifespans\">Object lifespans per scheduling policy (001)</h2>"
    );
    let groups = groups(exp);
    for group in &groups {
        let configs = in_group(exp, group);
        let title = group.clone().unwrap_or_else(|| exp.file.workload.clone());
        let histograms: Vec<Option<Vec<(u64, f64)>>> =
            configs.iter().map(|c| lifespan_histogram(exp, c)).collect();
        let Some(bounds) = histograms.iter().flatten().next() else {
            empty(
                h,
                &format!(
                    "{}: no run profiled object lifespans (sched-bench --no-lifespans).",
                    esc(&title)
                ),
            );
            continue;
        };
        // Only the buckets from the first to the last that holds a sample.
        // A run from another version may have other buckets: a missing bucket counts as empty.
        let used = |i: usize| {
            histograms
                .iter()
                .flatten()
                .any(|b| b.get(i).is_some_and(|x| x.1 > 0.0))
        };
        let first = (0..bounds.len()).find(|&i| used(i)).unwrap_or(0);
        let last = (0..bounds.len()).rfind(|&i| used(i)).unwrap_or(0);
        let categories: Vec<String> = bounds[first..=last]
            .iter()
            .map(|(lo, _)| bucket_label(*lo))
            .collect();
        let shares: Vec<BarSeries> = configs
            .iter()
            .zip(&histograms)
            .enumerate()
            .map(|(i, (c, hist))| {
                let stats = (first..=last)
                    .map(|b| {
                        let hist = hist.as_ref()?;
                        let dead: f64 = hist.iter().map(|x| x.1).sum();
                        let here = hist.get(b).map_or(0.0, |x| x.1);
                        (dead > 0.0).then(|| 100.0 * here / dead)
                    })
                    .map(|v| (v, None))
                    .collect();
                series(&c.name, i, stats)
            })
            .collect();
        bars_or_note(
            h,
            &Bars::new(
                &format!("Lifespans: {title}"),
                "lifespan: bytes allocated heap-wide from birth to death (bucket from)",
                "share of dead objects (%)",
                &categories,
                &shares,
            )
            .legend("mutator scheduling")
            .decimals(0),
            &format!(
                "{}: how long objects lived, as the share of dead objects in each log2 bucket (estimated from the samples; exact with --lifespan-sample-bytes 0), all runs of a policy together (001 Fig. 3): \
                 under CFS a preempted mutator leaves its young objects alive while others allocate, so mass moves to the right (longer lifespans, more copying); FIFO should keep it on the left.",
                esc(&title)
            ),
            "No lifespan samples died.",
        )?;
    }
    let _ = writeln!(
        h,
        "<h2 id=\"policy-times\">GC time and wall time per policy</h2>"
    );
    let workloads: Vec<String> = groups
        .iter()
        .map(|g| {
            let configs = in_group(exp, g);
            configs
                .first()
                .map_or(String::new(), |c| c.workload.clone())
        })
        .collect();
    let policies = groups
        .first()
        .map(|g| names(&in_group(exp, g)))
        .unwrap_or_default();
    for (what, key) in [("GC time", "gc_pause_total_ms"), ("wall time", "wall_ms")] {
        let series = series_of(&policies, |_, policy| {
            groups
                .iter()
                .map(|g| {
                    let configs = in_group(exp, g);
                    let (Some(base), Some(c)) =
                        (configs.first(), configs.iter().find(|c| &c.name == policy))
                    else {
                        return (None, None);
                    };
                    relative(
                        stat(exp, c, |r| r.num(key)),
                        exp.median_of(base, |r| r.num(key)),
                    )
                })
                .collect()
        });
        let base = policies.first().cloned().unwrap_or_default();
        bars_or_note(
            h,
            &Bars::new(
                &format!("{what} relative to {base}, per workload"),
                "workload",
                &format!("{what} / {base}'s median"),
                &workloads,
                &series,
            )
            .legend("mutator scheduling")
            .reference(1.0, "baseline")
            .decimals(2),
            &format!(
                "Median {what} of each policy over that of <b>{}</b> on the same workload, with the fastest and slowest run as whiskers: \
                 001 finds FIFO shortens GC time most on scalable workloads, whose many mutators CFS interleaves, and matters little where one mutator runs.",
                esc(&base)
            ),
            "No configuration has a finished run.",
        )?;
    }
    Ok(vec![
        ("lifespans", "Lifespans"),
        ("policy-times", "Times per policy"),
    ])
}

fn monitor(h: &mut String, exp: &Experiment) -> anyhow::Result<NavEntry> {
    let _ = writeln!(
        h,
        "<h2 id=\"monitor\">Task-manager monitor (000 Fig. 5)</h2>"
    );
    let configs: Vec<&Configuration> = exp
        .configurations
        .iter()
        .filter(|c| exp.ok_runs(c).any(|r| r.monitor_per_collection().is_some()))
        .collect();
    if configs.is_empty() {
        empty(
            h,
            "Skipped: no collection record has monitor counters (configurations whose task queue and parking are not the vanilla monitor have none, and results written before the counters existed lack them).",
        );
        return Ok(("monitor", "Monitor"));
    }
    let categories = names(&configs);
    let counters = ["contended", "barges", "heir wake-ups", "futile wake-ups"];
    let series = series_of(&counters, |k, _| {
        configs
            .iter()
            .map(|c| stat(exp, c, |r| Some(r.monitor_per_collection()?[k])))
            .collect()
    });
    let bars = Bars::new(
        "Monitor events per collection",
        "configuration",
        "events per collection",
        &categories,
        &series,
    )
    .legend("event");
    figure(
        h,
        &plots::bars(&bars)?,
        "What HotSpot's unfair task-queue monitor did per collection, median over runs with min–max whiskers, for the configurations that used it (000 §2.2, Fig. 5): \
         contended counts acquisitions that found the lock taken, barges those that overtook the woken heir, heir wake-ups hand the lock to the OnDeck thread, and futile wake-ups wake a worker that then finds the lock taken or the queue empty; \
         many barges and futile wake-ups mean GC threads spent the pause contending for the lock instead of working.",
    );
    Ok(("monitor", "Monitor"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_and_ratios() {
        assert_eq!(bucket_label(0), "<1K");
        assert_eq!(bucket_label(2048), "2K");
        let s = relative((Some(4.0), Some((2.0, 6.0))), Some(2.0));
        assert_eq!(s, (Some(2.0), Some((1.0, 3.0))));
        assert_eq!(relative((Some(4.0), None), Some(0.0)), (None, None));
    }
}
