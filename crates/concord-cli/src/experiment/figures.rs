//! The figures of a run that the tables report ([`Figures`]), their medians over the runs of
//! each arm ([`Outcome`]) and ratios.

use crate::summary::Summary;

/// The figures of one run that the tables report.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Figures {
    pub wall_ms: f64,
    pub gc_ms: f64,
    pub gc_count: f64,
    pub pause_p50_ms: f64,
    pub pause_p99_ms: f64,
    pub pause_max_ms: f64,
    pub imbalance: f64,
    pub steal_attempts: f64,
    pub failure_rate: f64,
    pub termination_ms: f64,
    pub cpus_used: f64,
    /// Median and 90th percentile object lifespan, bytes, when the heap profiled them.
    pub lifespan_p50_bytes: Option<f64>,
    pub lifespan_p90_bytes: Option<f64>,
    /// Pauses longer than each of [`PAUSE_THRESHOLDS_MS`] (002 Tables 2–3).
    pub pauses_over: [f64; 4],
    /// The longest single write of GC log lines, ms.
    pub log_write_max_ms: f64,
    /// GC log lines dropped.
    pub log_dropped: f64,
    /// The HotSpot companion agent's callback time inside the pause, median and longest, µs
    /// (`concord jvm bench` runs with the agent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback_us_p50: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub callback_us_max: Option<f64>,
    /// GC threads the agent moved to another CPU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity_moves: Option<f64>,
    /// Remote copied bytes over all copied bytes, when the heap counted NUMA figures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_copy_fraction: Option<f64>,
    /// Voluntary and involuntary context switches of the mutator threads while attached
    /// (001 §4.1), when the heap reported its mutator scheduling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutator_voluntary_switches: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mutator_involuntary_switches: Option<f64>,
    /// Involuntary context switches of the GC threads during the pauses (the GC period).
    pub gc_involuntary_switches: f64,
}

/// The pause lengths 002 counts pauses over, ms (its SLA is 250 ms).
pub const PAUSE_THRESHOLDS_MS: [f64; 4] = [250.0, 500.0, 1000.0, 2000.0];

/// How many of `pauses` (ms) are longer than each of [`PAUSE_THRESHOLDS_MS`].
pub fn pauses_over(pauses: &[f64]) -> [f64; 4] {
    PAUSE_THRESHOLDS_MS.map(|t| pauses.iter().filter(|p| **p > t).count() as f64)
}

impl Figures {
    /// The figures of one run.
    pub fn of(s: &Summary) -> Self {
        Self {
            wall_ms: s.wall_ms,
            gc_ms: s.pause_total_ms,
            gc_count: s.gc_count as f64,
            pause_p50_ms: s.pause_p50_ms,
            pause_p99_ms: s.pause_p99_ms,
            pause_max_ms: s.pause_max_ms,
            imbalance: s.root_task_imbalance,
            steal_attempts: s.steal_attempts as f64,
            failure_rate: s.steal_failure_rate(),
            termination_ms: s.worker_time.termination_ms,
            cpus_used: s.mean_cpus_used,
            lifespan_p50_bytes: s
                .lifespans
                .as_ref()
                .and_then(|l| l.median_bytes)
                .map(|b| b as f64),
            lifespan_p90_bytes: s
                .lifespans
                .as_ref()
                .and_then(|l| l.p90_bytes)
                .map(|b| b as f64),
            pauses_over: pauses_over(&s.pauses_ms),
            log_write_max_ms: s.gc_log_write_max_ms,
            log_dropped: s.gc_log_dropped as f64,
            callback_us_p50: None,
            callback_us_max: None,
            affinity_moves: None,
            remote_copy_fraction: s
                .numa
                .as_ref()
                .filter(|n| n["accounting"] == true)
                .map(|_| s.remote_copy_fraction()),
            mutator_voluntary_switches: s.mutator_context_switches.map(|c| c.voluntary as f64),
            mutator_involuntary_switches: s.mutator_context_switches.map(|c| c.involuntary as f64),
            gc_involuntary_switches: s.attribution.gc_involuntary_switches as f64,
        }
    }

    /// Component-wise median of several runs.
    pub fn median(runs: &[Figures]) -> Figures {
        let m = |f: fn(&Figures) -> f64| median(runs.iter().map(f).collect());
        Figures {
            wall_ms: m(|r| r.wall_ms),
            gc_ms: m(|r| r.gc_ms),
            gc_count: m(|r| r.gc_count),
            pause_p50_ms: m(|r| r.pause_p50_ms),
            pause_p99_ms: m(|r| r.pause_p99_ms),
            pause_max_ms: m(|r| r.pause_max_ms),
            imbalance: m(|r| r.imbalance),
            steal_attempts: m(|r| r.steal_attempts),
            failure_rate: m(|r| r.failure_rate),
            termination_ms: m(|r| r.termination_ms),
            cpus_used: m(|r| r.cpus_used),
            lifespan_p50_bytes: optional_median(runs.iter().map(|r| r.lifespan_p50_bytes)),
            lifespan_p90_bytes: optional_median(runs.iter().map(|r| r.lifespan_p90_bytes)),
            pauses_over: [0, 1, 2, 3]
                .map(|i| median(runs.iter().map(|r| r.pauses_over[i]).collect())),
            log_write_max_ms: m(|r| r.log_write_max_ms),
            log_dropped: m(|r| r.log_dropped),
            callback_us_p50: optional_median(runs.iter().map(|r| r.callback_us_p50)),
            callback_us_max: optional_median(runs.iter().map(|r| r.callback_us_max)),
            affinity_moves: optional_median(runs.iter().map(|r| r.affinity_moves)),
            remote_copy_fraction: optional_median(runs.iter().map(|r| r.remote_copy_fraction)),
            mutator_voluntary_switches: optional_median(
                runs.iter().map(|r| r.mutator_voluntary_switches),
            ),
            mutator_involuntary_switches: optional_median(
                runs.iter().map(|r| r.mutator_involuntary_switches),
            ),
            gc_involuntary_switches: m(|r| r.gc_involuntary_switches),
        }
    }
}

/// Median of a list (mean of the middle two for even lengths; 0 for an empty list).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => 0.0,
        _ if n % 2 == 1 => v[n / 2],
        _ => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Median of the values that are there; `None` if none is.
fn optional_median(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let v: Vec<f64> = values.flatten().collect();
    (!v.is_empty()).then(|| median(v))
}

/// `a / b`, or 0 when `b` is 0.
pub fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The runs of an experiment: per arm, every run's figures and their medians.
pub struct Outcome {
    /// `runs[arm][round]`.
    pub runs: Vec<Vec<Figures>>,
    /// `medians[arm]`.
    pub medians: Vec<Figures>,
}

impl Outcome {
    /// The outcome of `runs[arm]` (an arm may have no runs, e.g. after an interruption).
    pub fn of(runs: Vec<Vec<Figures>>) -> Outcome {
        Outcome {
            medians: runs.iter().map(|r| Figures::median(r)).collect(),
            runs,
        }
    }
}

#[cfg(test)]
pub mod tests_support {
    use super::Figures;

    /// Figures with GC time `gc_ms` and wall time `wall_ms`, the rest fixed.
    pub fn figures(gc_ms: f64, wall_ms: f64) -> Figures {
        let mut f = Figures::median(&[]);
        f.gc_ms = gc_ms;
        f.wall_ms = wall_ms;
        f.gc_count = 1.0;
        f
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::figures;
    use super::*;

    #[test]
    fn medians() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(median(vec![]), 0.0);
        let mut with_lifespans = figures(2.0, 5.0);
        with_lifespans.lifespan_p50_bytes = Some(2048.0);
        let m = Figures::median(&[figures(1.0, 10.0), figures(3.0, 30.0), with_lifespans]);
        assert_eq!((m.gc_ms, m.wall_ms), (2.0, 10.0));
        assert_eq!(m.lifespan_p50_bytes, Some(2048.0));
        assert_eq!(m.lifespan_p90_bytes, None);
        assert_eq!(ratio(1.0, 0.0), 0.0);
        assert_eq!(
            pauses_over(&[100.0, 250.0, 251.0, 900.0, 2500.0]),
            [3.0, 2.0, 1.0, 1.0]
        );
        assert_eq!(
            Outcome::of(vec![vec![], vec![figures(1.0, 2.0)]]).medians[1].wall_ms,
            2.0
        );
    }
}
