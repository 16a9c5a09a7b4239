//! The summary of one run: the readable text and the summary JSON of DESIGN.md.

use std::fmt::Write as _;

use concord::config::format_size;
use concord::telemetry::WorkerTimeBreakdown;
use concord::{CollectionKind, GcConfig, GcStats};
use concord_workloads::{WorkloadParams, WorkloadResult};
use serde_json::{json, Value};

/// Figures of one run.
pub struct Summary {
    pub workload: String,
    pub preset: String,
    pub heap_size: usize,
    pub gc_threads: usize,
    pub dynamic_gc_threads: bool,
    /// The parallel-phase switches, as `key=value` pairs in a fixed order.
    pub switches: Vec<(&'static str, String)>,
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
        }
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
        });
        for (k, val) in &self.switches {
            v[k.replace('-', "_")] = json!(val);
        }
        if !self.verify_failures.is_empty() {
            v["verify_failures"] = json!(self.verify_failures);
        }
        for (k, val) in &self.details {
            v[k.as_str()] = json!(val);
        }
        v
    }

    /// The readable summary.
    pub fn readable(&self) -> String {
        let mut s = String::new();
        let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
        let _ = writeln!(
            s,
            "concord run {} (preset {}, heap {}, {}{}, {}, {})",
            self.workload,
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
        );
        let switches: Vec<String> = self
            .switches
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let _ = writeln!(s, "  switches  {}", switches.join(", "));
        let check = match (self.expected_checksum, self.checksum_ok) {
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
            "  pauses    p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.pause_p50_ms, self.pause_p99_ms, self.pause_max_ms
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
        s
    }
}

/// The parallel-phase switches of `config`, in the order of DESIGN.md's table.
fn switches(config: &GcConfig) -> Vec<(&'static str, String)> {
    let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
    vec![
        ("task-queue", config.task_queue.to_string()),
        ("task-affinity", on_off(config.task_affinity)),
        ("steal", config.steal.to_string()),
        ("termination", config.termination.to_string()),
        ("parking", config.parking.to_string()),
        ("pin-start", on_off(config.pin_start)),
    ]
}
