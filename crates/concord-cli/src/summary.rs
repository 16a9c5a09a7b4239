//! The summary of one run: the readable text, the one-line form and the summary JSON of
//! DESIGN.md (and that JSON read back, as co-running instances hand it to their parent); and
//! the aggregate of several instances co-running (`concord run --co-run M`).

use std::fmt::Write as _;

use concord::config::format_size;
use concord::os::mutator_sched::{ContextSwitches, MutatorSchedReport, SchedChoice};
use concord::os::thp::{SystemThp, ThpReport};
use concord::os::vm::HugePageAdvice;
use concord::telemetry::{gc_metrics, nearest_rank};
use concord::telemetry::{LifespanReport, NumaCollectionRecord, NumaReport, WorkerTimeBreakdown};
use concord::{CollectionKind, GcConfig, GcStats};
use concord_workloads::{WorkloadParams, WorkloadResult};
use serde_json::{json, Value};

/// Figures of one run.
#[derive(Clone)]
pub struct Summary {
    pub workload: String,
    pub preset: String,
    pub heap_size: usize,
    pub gc_threads: usize,
    pub dynamic_gc_threads: bool,
    /// The parallel-phase and OS switches, as `key=value` pairs in a fixed order.
    pub switches: Vec<(&'static str, String)>,
    /// The load that ran next to the workload (`busy:2`), if any.
    pub interference: Option<String>,
    pub mutators: usize,
    pub rounds: usize,
    pub wall_ms: f64,
    pub gc_count: usize,
    pub young_count: usize,
    pub full_count: usize,
    pub pause_total_ms: f64,
    pub pause_p50_ms: f64,
    pub pause_p99_ms: f64,
    pub pause_max_ms: f64,
    /// Every pause, ms, in order (for percentiles over several runs).
    pub pauses_ms: Vec<f64>,
    pub bytes_allocated: u64,
    pub bytes_copied: u64,
    pub bytes_promoted: u64,
    pub steal_attempts: u64,
    pub steal_failures: u64,
    pub root_task_imbalance: f64,
    pub mean_cpus_used: f64,
    pub worker_time: WorkerTimeBreakdown,
    pub verified: Option<bool>,
    pub verify_failures: Vec<String>,
    pub checksum: u64,
    pub expected_checksum: Option<u64>,
    pub checksum_ok: Option<bool>,
    pub details: Vec<(String, String)>,
    /// Object lifespans, when the heap profiled them (`--lifespans`).
    pub lifespans: Option<LifespanReport>,
    /// GC workers moved by dynamic GC affinity.
    pub affinity_moves: usize,
    /// What the mutator scheduling policy did.
    pub mutator_sched: Option<MutatorSchedReport>,
    /// Context switches of the mutator threads while attached, summed over them (001 §4.1);
    /// `None` when the heap reported no scheduling.
    pub mutator_context_switches: Option<ContextSwitches>,
    /// How the GC log was written (`sync`/`async`), when there was one.
    pub gc_log_mode: Option<String>,
    /// GC log lines dropped (0 without a log).
    pub gc_log_dropped: u64,
    /// The longest single write of GC log lines, ms (0 without a log).
    pub gc_log_write_max_ms: f64,
    /// The heap's THP mode and the huge pages it got.
    pub thp: Option<ThpReport>,
    /// Time pretouching the heap took at start, ms (`--pretouch`; `None` without it).
    pub pretouch_ms: Option<f64>,
    /// The heap's NUMA layout, topology and per-node allocation (the summary's `numa`
    /// object as [`Summary::json`] prints it); `None` for an aggregate of several instances.
    pub numa: Option<Value>,
    /// Local and remote copies and scans over all collections.
    pub numa_totals: NumaCollectionRecord,
    /// The objects GC workers scanned by node of the scanned memory, over all collections
    /// (004 Table 4's accesses); `None` without NUMA figures, when the split is unknown, and
    /// for an aggregate of several instances (their nodes are not the same nodes).
    pub scans_per_node: Option<Vec<u64>>,
    /// Stall attribution over all pauses: what the GC threads used (their CPU time in user
    /// mode and in the kernel, page faults, involuntary context switches).
    pub attribution: PauseAttribution,
    /// Allocation stalls: how many, the longest and the 99th percentile, ms.
    pub alloc_stalls: usize,
    pub alloc_stall_max_ms: f64,
    pub alloc_stall_p99_ms: f64,
    /// Every allocation stall, ms (for percentiles over several runs, like `pauses_ms`).
    pub alloc_stalls_ms: Vec<f64>,
}

/// What the GC threads used during all pauses of a run (summed from the records).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PauseAttribution {
    pub gc_user_ms: f64,
    pub gc_sys_ms: f64,
    pub pause_minor_faults: u64,
    pub pause_major_faults: u64,
    pub gc_involuntary_switches: u64,
}

impl PauseAttribution {
    fn of(stats: &GcStats) -> Self {
        PauseAttribution {
            gc_user_ms: stats.gc_user_ms(),
            gc_sys_ms: stats.gc_sys_ms(),
            pause_minor_faults: stats.pause_minor_faults(),
            pause_major_faults: stats.pause_major_faults(),
            gc_involuntary_switches: stats.gc_involuntary_switches(),
        }
    }

    /// The sum of several runs' figures.
    fn sum(all: impl Iterator<Item = PauseAttribution>) -> Self {
        all.fold(PauseAttribution::default(), |t, a| PauseAttribution {
            gc_user_ms: t.gc_user_ms + a.gc_user_ms,
            gc_sys_ms: t.gc_sys_ms + a.gc_sys_ms,
            pause_minor_faults: t.pause_minor_faults + a.pause_minor_faults,
            pause_major_faults: t.pause_major_faults + a.pause_major_faults,
            gc_involuntary_switches: t.gc_involuntary_switches + a.gc_involuntary_switches,
        })
    }

    /// The figures as read back from a summary JSON (0 where a field is missing, as in a
    /// summary written before they existed).
    fn from_json(v: &Value) -> Self {
        let u = |key: &str| v[key].as_u64().unwrap_or(0);
        PauseAttribution {
            gc_user_ms: v["gc_user_ms"].as_f64().unwrap_or(0.0),
            gc_sys_ms: v["gc_sys_ms"].as_f64().unwrap_or(0.0),
            pause_minor_faults: u("pause_minor_faults"),
            pause_major_faults: u("pause_major_faults"),
            gc_involuntary_switches: u("gc_involuntary_switches"),
        }
    }
}

impl Summary {
    pub fn new(
        workload: &str,
        config: &GcConfig,
        params: &WorkloadParams,
        wall_ms: f64,
        stats: &GcStats,
        result: &WorkloadResult,
    ) -> Self {
        Self {
            workload: workload.to_string(),
            preset: config.preset.to_string(),
            heap_size: config.heap_size,
            gc_threads: config.gc_threads,
            dynamic_gc_threads: config.dynamic_gc_threads,
            switches: switches(config),
            interference: None,
            mutators: params.mutators,
            rounds: params.rounds,
            wall_ms,
            gc_count: stats.records.len(),
            young_count: stats.count(CollectionKind::Young),
            full_count: stats.count(CollectionKind::Full),
            pause_total_ms: stats.pause_total_ms(),
            pause_p50_ms: stats.pause_percentile_ms(50.0),
            pause_p99_ms: stats.pause_percentile_ms(99.0),
            pause_max_ms: stats.pause_max_ms(),
            pauses_ms: stats.records.iter().map(|r| r.pause_ms).collect(),
            bytes_allocated: stats.bytes_allocated,
            bytes_copied: stats.bytes_copied(),
            bytes_promoted: stats.bytes_promoted(),
            steal_attempts: stats.steal_attempts(),
            steal_failures: stats.steal_failures(),
            root_task_imbalance: stats.root_task_imbalance(),
            mean_cpus_used: stats.mean_cpus_used(),
            worker_time: stats.worker_time(),
            verified: stats.verified(),
            verify_failures: stats.verify_failures.clone(),
            checksum: result.checksum,
            expected_checksum: result.expected_checksum,
            checksum_ok: result.checksum_ok(),
            details: result.details.clone(),
            lifespans: stats.lifespans.clone(),
            affinity_moves: stats.affinity_moves(),
            mutator_sched: stats.mutator_sched.clone(),
            mutator_context_switches: stats.mutator_sched.as_ref().map(|r| r.context_switches),
            gc_log_mode: stats.gc_log.map(|l| l.mode.to_string()),
            gc_log_dropped: stats.gc_log.map_or(0, |l| l.dropped),
            gc_log_write_max_ms: stats.gc_log.map_or(0.0, |l| l.write_max_ms),
            thp: stats.thp.clone(),
            pretouch_ms: stats.pretouch.map(|p| p.ms),
            numa: stats.numa.as_ref().map(numa_json),
            numa_totals: stats.numa_totals(),
            scans_per_node: stats.scans_per_node(),
            attribution: PauseAttribution::of(stats),
            alloc_stalls: stats.alloc_stalls.count(),
            alloc_stall_max_ms: stats.alloc_stalls.max_ms(),
            alloc_stall_p99_ms: stats.alloc_stalls.percentile_ms(99.0),
            alloc_stalls_ms: stats.alloc_stalls.stalls_ms.clone(),
        }
    }

    /// Remote copied bytes over all copied bytes, from the layout's node map (0 when nothing
    /// was copied, or no NUMA figures were counted).
    pub fn remote_copy_fraction(&self) -> f64 {
        let t = &self.numa_totals;
        let all = t.bytes_copied_local + t.bytes_copied_remote;
        if all == 0 {
            0.0
        } else {
            t.bytes_copied_remote as f64 / all as f64
        }
    }

    /// 004's GC throughput (Fig. 4/7): MiB allocated per second of GC pause; `None` without
    /// GC time.
    pub fn gc_throughput_mb_s(&self) -> Option<f64> {
        gc_metrics::gc_throughput_mb_s(self.bytes_allocated, self.pause_total_ms)
    }

    /// 004 Table 4's imbalance of the collector's accesses across nodes; `None` without
    /// per-node figures.
    pub fn node_access_stddev(&self) -> Option<f64> {
        gc_metrics::access_imbalance(self.scans_per_node.as_deref()?)
    }

    pub fn steal_failure_rate(&self) -> f64 {
        if self.steal_attempts == 0 {
            0.0
        } else {
            self.steal_failures as f64 / self.steal_attempts as f64
        }
    }

    /// The summary JSON object.
    pub fn json(&self) -> Value {
        let mut v = json!({
            "workload": self.workload,
            "preset": self.preset,
            "heap_size": self.heap_size,
            "gc_threads": self.gc_threads,
            "mutators": self.mutators,
            "rounds": self.rounds,
            "wall_ms": self.wall_ms,
            "gc_count": self.gc_count,
            "young_count": self.young_count,
            "full_count": self.full_count,
            "gc_pause_total_ms": self.pause_total_ms,
            "pause_p50_ms": self.pause_p50_ms,
            "pause_p99_ms": self.pause_p99_ms,
            "pause_max_ms": self.pause_max_ms,
            "bytes_allocated": self.bytes_allocated,
            "bytes_copied": self.bytes_copied,
            "bytes_promoted": self.bytes_promoted,
            "gc_throughput_mb_s": self.gc_throughput_mb_s(),
            "steal_attempts": self.steal_attempts,
            "steal_failures": self.steal_failures,
            "steal_failure_rate": self.steal_failure_rate(),
            "root_task_imbalance": self.root_task_imbalance,
            "mean_cpus_used": self.mean_cpus_used,
            "worker_time_ms": self.worker_time,
            "dynamic_gc_threads": self.dynamic_gc_threads,
            "verified": self.verified,
            "checksum": self.checksum,
            "expected_checksum": self.expected_checksum,
            "checksum_ok": self.checksum_ok,
            "interference": self.interference,
            "gc_log_mode": self.gc_log_mode,
            "gc_log_dropped": self.gc_log_dropped,
            "gc_log_write_max_ms": self.gc_log_write_max_ms,
            "gc_user_ms": self.attribution.gc_user_ms,
            "gc_sys_ms": self.attribution.gc_sys_ms,
            "pause_minor_faults": self.attribution.pause_minor_faults,
            "pause_major_faults": self.attribution.pause_major_faults,
            "gc_involuntary_switches": self.attribution.gc_involuntary_switches,
            "alloc_stalls": self.alloc_stalls,
            "alloc_stall_max_ms": self.alloc_stall_max_ms,
            "alloc_stall_p99_ms": self.alloc_stall_p99_ms,
        });
        v["mutator_context_switches"] = json!(self.mutator_context_switches);
        for (k, val) in &self.switches {
            v[k.replace('-', "_")] = json!(val);
        }
        if !self.verify_failures.is_empty() {
            v["verify_failures"] = json!(self.verify_failures);
        }
        if let Some(report) = &self.lifespans {
            v["lifespans"] = json!(report);
        }
        v["affinity_moves"] = json!(self.affinity_moves);
        if let Some(report) = &self.mutator_sched {
            v["mutator_sched_report"] = json!(report);
        }
        if let Some(thp) = &self.thp {
            v["thp"] = json!({
                "mode": thp.mode,
                "advice": thp.advice,
                "switches": thp.switches,
                "enabled": thp.system.enabled,
                "defrag": thp.system.defrag,
            });
            v["heap_huge_bytes"] = json!(thp.heap_huge_bytes);
        }
        // null without --pretouch, so runs with and without it share the key.
        v["pretouch_ms"] = json!(self.pretouch_ms);
        if let Some(numa) = &self.numa {
            v["numa"] = numa.clone();
        }
        let t = &self.numa_totals;
        v["remote_copy_fraction"] = json!(self.remote_copy_fraction());
        v["bytes_copied_local"] = json!(t.bytes_copied_local);
        v["bytes_copied_remote"] = json!(t.bytes_copied_remote);
        v["objects_scanned_local"] = json!(t.objects_scanned_local);
        v["objects_scanned_remote"] = json!(t.objects_scanned_remote);
        v["numa_messages"] = json!(t.messages);
        v["scans_per_node"] = json!(self.scans_per_node);
        v["node_access_stddev"] = json!(self.node_access_stddev());
        for (k, val) in &self.details {
            v[k.as_str()] = json!(val);
        }
        v
    }

    /// The configuration in words: `preset optimized, heap 8M, 2 GC threads, 1 mutator, 1 round`.
    pub fn setup(&self) -> String {
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        format!(
            "preset {}, heap {}, {}{}, {}, {}",
            self.preset,
            format_size(self.heap_size),
            if self.dynamic_gc_threads {
                "up to "
            } else {
                ""
            },
            plural(self.gc_threads, "GC thread"),
            plural(self.mutators, "mutator"),
            plural(self.rounds, "round"),
        )
    }

    /// The switches in words: `task-queue lockfree, task-affinity on, …`.
    pub fn switches_text(&self) -> String {
        let switches: Vec<String> = self
            .switches
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        switches.join(", ")
    }

    /// The readable summary.
    pub fn readable(&self) -> String {
        let mut s = String::new();
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let _ = writeln!(s, "concord run {} ({})", self.workload, self.setup());
        let _ = writeln!(s, "  switches  {}", self.switches_text());
        if let Some(load) = &self.interference {
            let _ = writeln!(s, "  load      {load}");
        }
        let interrupted = self.details.iter().any(|(k, _)| k == "interrupted");
        let check = match (self.expected_checksum, self.checksum_ok) {
            // A stopped workload has no result; its checksum field is a placeholder.
            _ if interrupted => "none: the workload did not finish".to_string(),
            (Some(e), Some(true)) => format!("checksum {} (expected {e}): ok", self.checksum),
            (Some(e), _) => format!("checksum {} (expected {e}): MISMATCH", self.checksum),
            (None, _) => format!("checksum {}", self.checksum),
        };
        let _ = writeln!(s, "  result    {check}");
        for (k, v) in &self.details {
            let _ = writeln!(s, "            {k}: {v}");
        }
        let _ = writeln!(s, "  wall      {:.1} ms", self.wall_ms);
        let share = if self.wall_ms > 0.0 {
            100.0 * self.pause_total_ms / self.wall_ms
        } else {
            0.0
        };
        let _ = writeln!(
            s,
            "  GC        {} ({} young, {} full), pauses total {:.1} ms ({share:.1}% of wall)",
            plural(self.gc_count, "collection"),
            self.young_count,
            self.full_count,
            self.pause_total_ms
        );
        let _ = writeln!(
            s,
            "  pauses    p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; GC throughput {}",
            self.pause_p50_ms,
            self.pause_p99_ms,
            self.pause_max_ms,
            self.gc_throughput_mb_s()
                .map_or("n/a (no GC time)".to_string(), |t| format!("{t:.1} MiB/s"))
        );
        let a = &self.attribution;
        let _ = writeln!(
            s,
            "  stalls    GC threads in pauses: user {:.1} ms, sys {:.1} ms, {} minor / {} major \
             faults, {} involuntary switches",
            a.gc_user_ms,
            a.gc_sys_ms,
            a.pause_minor_faults,
            a.pause_major_faults,
            a.gc_involuntary_switches
        );
        let _ = writeln!(
            s,
            "            {}, p99 {:.2} ms, max {:.2} ms",
            plural(self.alloc_stalls, "allocation stall"),
            self.alloc_stall_p99_ms,
            self.alloc_stall_max_ms
        );
        let _ = writeln!(
            s,
            "  memory    allocated {}, copied {}, promoted {}",
            format_size(self.bytes_allocated as usize),
            format_size(self.bytes_copied as usize),
            format_size(self.bytes_promoted as usize)
        );
        let _ = writeln!(
            s,
            "  stealing  {} attempts, {} failed ({:.1}%)",
            self.steal_attempts,
            self.steal_failures,
            100.0 * self.steal_failure_rate()
        );
        let _ = writeln!(
            s,
            "  workers   root-task imbalance {:.2} (max/mean), {:.1} CPUs used per collection",
            self.root_task_imbalance, self.mean_cpus_used
        );
        let t = &self.worker_time;
        let _ = writeln!(
            s,
            "            time in root tasks {:.1} ms, stealing {:.1} ms, termination {:.1} ms",
            t.root_ms, t.steal_ms, t.termination_ms
        );
        let verified = match self.verified {
            Some(true) => format!("yes, after each of {}", plural(self.gc_count, "collection")),
            Some(false) => format!(
                "FAILED: {}",
                self.verify_failures.first().map_or("", |s| s.as_str())
            ),
            None => "not requested (--verify)".to_string(),
        };
        let _ = writeln!(s, "  verified  {verified}");
        if self.affinity_moves > 0 {
            let _ = writeln!(
                s,
                "  affinity  {} GC worker moves by dynamic affinity",
                self.affinity_moves
            );
        }
        if let Some(r) = &self.mutator_sched {
            let _ = writeln!(
                s,
                "  mutators  scheduled {} (asked: {}), {} policy switches",
                r.applied, r.requested, r.switches
            );
            let _ = writeln!(
                s,
                "            context switches: {} voluntary, {} involuntary",
                r.context_switches.voluntary, r.context_switches.involuntary
            );
            if let Some(last) = r.listing_decisions.last() {
                let _ = writeln!(
                    s,
                    "            Algorithm 2: {} samples, {}",
                    r.listing_decisions.len(),
                    if last.step.choice == SchedChoice::Cfs {
                        format!("a thread seen again at {} ms: CFS from then on", last.at_ms)
                    } else {
                        "every thread new at every sample: FIFO throughout".to_string()
                    }
                );
            }
            for notice in &r.notices {
                let _ = writeln!(s, "            {notice}");
            }
        }
        // Only when figures were counted: one node and no layout has nothing to say.
        if let Some(numa) = self.numa.as_ref().filter(|n| n["accounting"] == true) {
            let t = &self.numa_totals;
            let scans = t.objects_scanned_local + t.objects_scanned_remote;
            let remote_scans = if scans == 0 {
                0.0
            } else {
                100.0 * t.objects_scanned_remote as f64 / scans as f64
            };
            let _ = writeln!(
                s,
                "  NUMA      layout {}, {} topology {} ({} node(s)): remote copies {:.1}% of {}, \
                 remote scans {remote_scans:.1}% of {scans}, {} messages between nodes, \
                 access imbalance {}",
                numa["layout"].as_str().unwrap_or("?"),
                numa["kind"].as_str().unwrap_or("?"),
                numa["topology"].as_str().unwrap_or("?"),
                numa["nodes"].as_array().map_or(0, Vec::len),
                100.0 * self.remote_copy_fraction(),
                format_size((t.bytes_copied_local + t.bytes_copied_remote) as usize),
                t.messages,
                self.node_access_stddev()
                    .map_or("unknown".to_string(), |d| format!("{d:.2}")),
            );
        }
        if let Some(thp) = &self.thp {
            let or_unknown = |v: &Option<String>| v.clone().unwrap_or_else(|| "?".into());
            let advice = json!(thp.advice).as_str().unwrap_or("none").to_string();
            let huge = thp
                .heap_huge_bytes
                .map_or("unknown".to_string(), |b| format_size(b as usize));
            let _ = writeln!(
                s,
                "  THP       {} (advice {advice}, {} switches; system enabled {}, defrag {}), \
                 heap in huge pages {huge}",
                thp.mode,
                thp.switches,
                or_unknown(&thp.system.enabled),
                or_unknown(&thp.system.defrag),
            );
        }
        if let Some(ms) = self.pretouch_ms {
            let _ = writeln!(
                s,
                "  pretouch  whole heap faulted in at start in {ms:.1} ms"
            );
        }
        if let Some(report) = &self.lifespans {
            for line in report.to_string().lines() {
                let _ = writeln!(s, "  {line}");
            }
        }
        s
    }
}

impl Summary {
    /// One line: wall, collections, GC time, pauses and the checksum's verdict.
    pub fn line(&self) -> String {
        let check = match self.checksum_ok {
            Some(true) => "checksum ok",
            Some(false) => "checksum MISMATCH",
            None => "no expected checksum",
        };
        let verified = match self.verified {
            Some(true) => ", verified",
            Some(false) => ", verification FAILED",
            None => "",
        };
        format!(
            "wall {:.1} ms, {} collections, GC {:.1} ms, pauses p50 {:.2} / p99 {:.2} / max \
             {:.2} ms, {check}{verified}",
            self.wall_ms,
            self.gc_count,
            self.pause_total_ms,
            self.pause_p50_ms,
            self.pause_p99_ms,
            self.pause_max_ms
        )
    }

    /// The figures of co-running instances taken together: counts, bytes, GC time and
    /// checksums summed; wall time and the longest pause the maximum; percentiles over all
    /// pauses; imbalance and CPUs used averaged over all collections. The configuration fields
    /// are the first instance's (all run the same configuration).
    pub fn aggregate(instances: &[Summary]) -> Summary {
        let first = &instances[0];
        let sum = |f: fn(&Summary) -> u64| instances.iter().map(f).sum::<u64>();
        let pauses: Vec<f64> = instances.iter().flat_map(|s| s.pauses_ms.clone()).collect();
        let stalls: Vec<f64> = instances
            .iter()
            .flat_map(|s| s.alloc_stalls_ms.clone())
            .collect();
        let gc_count: usize = instances.iter().map(|s| s.gc_count).sum();
        let per_collection = |f: fn(&Summary) -> f64| {
            let weighted: f64 = instances.iter().map(|s| f(s) * s.gc_count as f64).sum();
            if gc_count == 0 {
                0.0
            } else {
                weighted / gc_count as f64
            }
        };
        let expected_checksum = instances
            .iter()
            .map(|s| s.expected_checksum)
            .sum::<Option<u64>>();
        let checksum_ok = instances
            .iter()
            .map(|s| s.checksum_ok)
            .try_fold(true, |all, ok| ok.map(|ok| all && ok));
        let verified = if instances.iter().any(|s| s.verified == Some(false)) {
            Some(false)
        } else if instances.iter().all(|s| s.verified == Some(true)) {
            Some(true)
        } else {
            None
        };
        let worker_time = WorkerTimeBreakdown {
            root_ms: instances.iter().map(|s| s.worker_time.root_ms).sum(),
            steal_ms: instances.iter().map(|s| s.worker_time.steal_ms).sum(),
            termination_ms: instances.iter().map(|s| s.worker_time.termination_ms).sum(),
        };
        Summary {
            workload: first.workload.clone(),
            preset: first.preset.clone(),
            heap_size: first.heap_size,
            gc_threads: first.gc_threads,
            dynamic_gc_threads: first.dynamic_gc_threads,
            switches: first.switches.clone(),
            interference: first.interference.clone(),
            mutators: first.mutators,
            rounds: first.rounds,
            wall_ms: instances.iter().map(|s| s.wall_ms).fold(0.0, f64::max),
            gc_count,
            young_count: instances.iter().map(|s| s.young_count).sum(),
            full_count: instances.iter().map(|s| s.full_count).sum(),
            pause_total_ms: instances.iter().map(|s| s.pause_total_ms).sum(),
            pause_p50_ms: nearest_rank(&pauses, 50.0),
            pause_p99_ms: nearest_rank(&pauses, 99.0),
            pause_max_ms: pauses.iter().copied().fold(0.0, f64::max),
            pauses_ms: pauses,
            bytes_allocated: sum(|s| s.bytes_allocated),
            bytes_copied: sum(|s| s.bytes_copied),
            bytes_promoted: sum(|s| s.bytes_promoted),
            steal_attempts: sum(|s| s.steal_attempts),
            steal_failures: sum(|s| s.steal_failures),
            root_task_imbalance: per_collection(|s| s.root_task_imbalance),
            mean_cpus_used: per_collection(|s| s.mean_cpus_used),
            worker_time,
            verified,
            verify_failures: instances
                .iter()
                .flat_map(|s| s.verify_failures.clone())
                .collect(),
            checksum: instances
                .iter()
                .fold(0u64, |acc, s| acc.wrapping_add(s.checksum)),
            expected_checksum,
            checksum_ok,
            details: Vec::new(),
            // Each instance's reports stay with the instance.
            lifespans: None,
            affinity_moves: instances.iter().map(|s| s.affinity_moves).sum(),
            mutator_sched: None,
            mutator_context_switches: instances.iter().map(|s| s.mutator_context_switches).sum(),
            gc_log_mode: instances.iter().find_map(|s| s.gc_log_mode.clone()),
            gc_log_dropped: instances.iter().map(|s| s.gc_log_dropped).sum(),
            gc_log_write_max_ms: instances
                .iter()
                .map(|s| s.gc_log_write_max_ms)
                .fold(0.0, f64::max),
            thp: None,
            numa: None,
            numa_totals: instances
                .iter()
                .fold(NumaCollectionRecord::default(), |mut t, s| {
                    let n = &s.numa_totals;
                    t.bytes_copied_local += n.bytes_copied_local;
                    t.bytes_copied_remote += n.bytes_copied_remote;
                    t.objects_scanned_local += n.objects_scanned_local;
                    t.objects_scanned_remote += n.objects_scanned_remote;
                    t.messages += n.messages;
                    t
                }),
            scans_per_node: None,
            // Each instance pretouched its own heap; the longest is what start-up waited for.
            pretouch_ms: instances
                .iter()
                .filter_map(|s| s.pretouch_ms)
                .reduce(f64::max),
            attribution: PauseAttribution::sum(instances.iter().map(|s| s.attribution)),
            alloc_stalls: instances.iter().map(|s| s.alloc_stalls).sum(),
            alloc_stall_max_ms: instances
                .iter()
                .map(|s| s.alloc_stall_max_ms)
                .fold(0.0, f64::max),
            alloc_stall_p99_ms: if stalls.len()
                == instances.iter().map(|s| s.alloc_stalls).sum::<usize>()
            {
                nearest_rank(&stalls, 99.0)
            } else {
                // An instance's list is missing (an older summary): its p99 bounds the rest.
                instances
                    .iter()
                    .map(|s| s.alloc_stall_p99_ms)
                    .fold(0.0, f64::max)
            },
            alloc_stalls_ms: stalls,
        }
    }
}

/// The switch keys, in the order of DESIGN.md's table.
pub const SWITCH_KEYS: [&str; 9] = [
    "task-queue",
    "task-affinity",
    "steal",
    "termination",
    "termination-backoff",
    "parking",
    "pin-start",
    "gc-affinity",
    "mutator-sched",
];

impl Summary {
    /// A summary read back from its JSON ([`Summary::json`] with `pauses_ms` and
    /// `alloc_stalls_ms` added, as a
    /// co-running instance prints it): what the aggregate and the one-line report need. The
    /// workload's details and the reports (lifespans, scheduling) stay in the JSON.
    pub fn from_json(v: &Value) -> Result<Summary, String> {
        let missing = |key: &str| format!("the summary has no valid \"{key}\"");
        let f = |key: &str| v[key].as_f64().ok_or_else(|| missing(key));
        let u = |key: &str| v[key].as_u64().ok_or_else(|| missing(key));
        let text = |key: &str| {
            v[key]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| missing(key))
        };
        let time = |key: &str| {
            v["worker_time_ms"][key]
                .as_f64()
                .ok_or_else(|| missing(key))
        };
        let mut switches = Vec::new();
        for key in SWITCH_KEYS {
            let value = match text(&key.replace('-', "_")) {
                // Summaries written before the switch existed ran each protocol's own loop.
                Err(_) if key == "termination-backoff" => "auto".to_string(),
                value => value?,
            };
            switches.push((key, value));
        }
        let pauses_ms = v["pauses_ms"]
            .as_array()
            .ok_or_else(|| missing("pauses_ms"))?
            .iter()
            .map(|p| p.as_f64().ok_or_else(|| missing("pauses_ms")))
            .collect::<Result<Vec<f64>, String>>()?;
        Ok(Summary {
            workload: text("workload")?,
            preset: text("preset")?,
            heap_size: u("heap_size")? as usize,
            gc_threads: u("gc_threads")? as usize,
            dynamic_gc_threads: v["dynamic_gc_threads"].as_bool().unwrap_or(false),
            switches,
            interference: v["interference"].as_str().map(str::to_string),
            mutators: u("mutators")? as usize,
            rounds: u("rounds")? as usize,
            wall_ms: f("wall_ms")?,
            gc_count: u("gc_count")? as usize,
            young_count: u("young_count")? as usize,
            full_count: u("full_count")? as usize,
            pause_total_ms: f("gc_pause_total_ms")?,
            pause_p50_ms: f("pause_p50_ms")?,
            pause_p99_ms: f("pause_p99_ms")?,
            pause_max_ms: f("pause_max_ms")?,
            pauses_ms,
            bytes_allocated: u("bytes_allocated")?,
            bytes_copied: u("bytes_copied")?,
            bytes_promoted: u("bytes_promoted")?,
            steal_attempts: u("steal_attempts")?,
            steal_failures: u("steal_failures")?,
            root_task_imbalance: f("root_task_imbalance")?,
            mean_cpus_used: f("mean_cpus_used")?,
            worker_time: WorkerTimeBreakdown {
                root_ms: time("root_ms")?,
                steal_ms: time("steal_ms")?,
                termination_ms: time("termination_ms")?,
            },
            verified: v["verified"].as_bool(),
            verify_failures: v["verify_failures"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            checksum: u("checksum")?,
            expected_checksum: v["expected_checksum"].as_u64(),
            checksum_ok: v["checksum_ok"].as_bool(),
            details: Vec::new(),
            lifespans: None,
            affinity_moves: v["affinity_moves"].as_u64().unwrap_or(0) as usize,
            mutator_sched: None,
            mutator_context_switches: serde_json::from_value(v["mutator_context_switches"].clone())
                .ok(),
            gc_log_mode: v["gc_log_mode"].as_str().map(str::to_string),
            gc_log_dropped: v["gc_log_dropped"].as_u64().unwrap_or(0),
            gc_log_write_max_ms: v["gc_log_write_max_ms"].as_f64().unwrap_or(0.0),
            thp: thp_from_json(v),
            pretouch_ms: v["pretouch_ms"].as_f64(),
            numa: v.get("numa").cloned(),
            numa_totals: NumaCollectionRecord {
                bytes_copied_local: v["bytes_copied_local"].as_u64().unwrap_or(0),
                bytes_copied_remote: v["bytes_copied_remote"].as_u64().unwrap_or(0),
                objects_scanned_local: v["objects_scanned_local"].as_u64().unwrap_or(0),
                objects_scanned_remote: v["objects_scanned_remote"].as_u64().unwrap_or(0),
                messages: v["numa_messages"].as_u64().unwrap_or(0),
            },
            scans_per_node: v["scans_per_node"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect()),
            attribution: PauseAttribution::from_json(v),
            alloc_stalls: v["alloc_stalls"].as_u64().unwrap_or(0) as usize,
            alloc_stall_max_ms: v["alloc_stall_max_ms"].as_f64().unwrap_or(0.0),
            alloc_stall_p99_ms: v["alloc_stall_p99_ms"].as_f64().unwrap_or(0.0),
            alloc_stalls_ms: v["alloc_stalls_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
        })
    }
}

/// The summary's `numa` object: the layout, the topology as configured and its kind, each
/// node's CPUs, whether mbind placed the memory, bytes allocated per node, and where each GC
/// worker was placed.
fn numa_json(report: &NumaReport) -> Value {
    json!({
        "layout": report.layout,
        "topology": report.topology,
        "kind": report.kind,
        "nodes": report.nodes.iter().map(|n| json!(n.cpus)).collect::<Vec<_>>(),
        "memory_bound": report.memory_bound,
        "accounting": report.accounting,
        "bytes_allocated_per_node": report.bytes_allocated_per_node,
        "workers": report.workers,
        "placement_failures": report.placement_failures,
    })
}

/// The `thp` and `heap_huge_bytes` of a summary JSON, as [`Summary::json`] writes them.
fn thp_from_json(v: &Value) -> Option<ThpReport> {
    let thp = &v["thp"];
    let text = |key: &str| thp[key].as_str().map(str::to_string);
    let advice = match thp["advice"].as_str() {
        Some("huge") => Some(HugePageAdvice::Huge),
        Some("no-huge") => Some(HugePageAdvice::NoHuge),
        _ => None,
    };
    Some(ThpReport {
        mode: thp["mode"].as_str()?.parse().ok()?,
        advice,
        switches: thp["switches"].as_u64()?,
        system: SystemThp {
            enabled: text("enabled"),
            defrag: text("defrag"),
            khugepaged_defrag: None,
        },
        heap_huge_bytes: v["heap_huge_bytes"].as_u64(),
    })
}

/// The switches of `config`, in the order of DESIGN.md's table.
pub fn switches(config: &GcConfig) -> Vec<(&'static str, String)> {
    let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
    let values = [
        config.phase.task_queue.to_string(),
        on_off(config.phase.task_affinity),
        config.phase.steal.to_string(),
        config.phase.termination.to_string(),
        config.phase.termination_backoff.to_string(),
        config.parking.to_string(),
        on_off(config.pin_start),
        config.gc_affinity.to_string(),
        config.mutator_sched.to_string(),
    ];
    SWITCH_KEYS.into_iter().zip(values).collect()
}

#[cfg(test)]
mod tests {
    use concord::{GcConfig, GcStats, Preset};
    use concord_workloads::{WorkloadParams, WorkloadResult};

    use super::Summary;

    fn summary(details: Vec<(String, String)>) -> Summary {
        let result = WorkloadResult {
            checksum: 0,
            expected_checksum: Some(42),
            details,
        };
        Summary::new(
            "gcbench",
            &GcConfig::for_preset(Preset::Optimized),
            &WorkloadParams::default(),
            1.0,
            &GcStats::default(),
            &result,
        )
    }

    #[test]
    fn an_interrupted_run_shows_no_result_and_a_finished_one_its_checksum() {
        let stopped = summary(vec![("interrupted".into(), "by SIGTERM".into())]).readable();
        assert!(
            stopped.contains("result    none: the workload did not finish"),
            "{stopped}"
        );
        assert!(!stopped.contains("checksum 0"), "{stopped}");
        let finished = summary(Vec::new()).readable();
        assert!(finished.contains("result    checksum 0 (expected 42): MISMATCH"));
    }
}
