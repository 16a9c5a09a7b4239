//! The text table of an experiment: one row per arm with the medians of the chosen
//! [`Column`]s, ratios to the first arm of the arm's group, a title line before each group when
//! there are several; and the legend that says what each arm is.

use std::fmt::Write as _;

use concord::config::format_size;

use super::figures::{ratio, Figures, Outcome};
use super::plan::Plan;

/// A column of an experiment table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Median total GC pause time.
    GcMs,
    /// Smallest and largest total GC pause time over the runs.
    GcRange,
    /// Median GC time over the median of the group's first arm.
    Ratio,
    /// Median 50th percentile pause.
    P50,
    /// Median 99th percentile pause.
    P99,
    /// Median longest pause.
    Max,
    /// Median steal attempts.
    Steals,
    /// Median steal failure rate.
    FailRate,
    /// Median root-task imbalance.
    Imbalance,
    /// Median distinct CPUs the GC workers were seen on per collection.
    Cpus,
    /// Median wall time.
    Wall,
    /// Median wall time over the median of the group's first arm.
    WallRatio,
    /// Smallest and largest wall time over the runs.
    WallRange,
    /// Number of runs with figures.
    Runs,
    /// Median of the runs' median object lifespans (`-` without lifespan profiling).
    LifeP50,
    /// Median of the runs' 90th percentile object lifespans.
    LifeP90,
    /// Median count of pauses over 250 ms, 500 ms, 1 s and 2 s (002 Tables 2–3).
    Over250,
    Over500,
    Over1000,
    Over2000,
    /// Median longest single GC log write.
    LogWrite,
    /// Median GC log lines dropped.
    Dropped,
    /// Median of the HotSpot companion agent's median callback time, µs.
    CallbackP50,
    /// Median of its longest callback time, µs.
    CallbackMax,
    /// Median GC-thread moves the agent made.
    Moves,
    /// Median remote copy fraction (NUMA layouts; `-` without NUMA figures).
    RemoteCopy,
    /// Median voluntary / involuntary context switches of the mutator threads (001 §4.1).
    MutatorVoluntary,
    MutatorInvoluntary,
    /// Median involuntary context switches of the GC threads during the pauses.
    GcInvoluntary,
}

impl Column {
    /// The median GC time, its spread and its ratio, then the pause percentiles: the columns
    /// every bench table starts its GC part with.
    pub const GC_AND_PAUSES: &'static [Column] = &[
        Column::GcMs,
        Column::GcRange,
        Column::Ratio,
        Column::P50,
        Column::P99,
        Column::Max,
    ];

    fn header(self) -> &'static str {
        match self {
            Column::GcMs => "GC ms",
            Column::GcRange => "(min-max)",
            Column::Ratio => "ratio",
            Column::P50 => "p50 ms",
            Column::P99 => "p99 ms",
            Column::Max => "max ms",
            Column::Steals => "steals",
            Column::FailRate => "fail%",
            Column::Imbalance => "imbal.",
            Column::Cpus => "CPUs",
            Column::Wall => "wall ms",
            Column::WallRatio => "wall x",
            Column::WallRange => "(min-max)",
            Column::Runs => "runs",
            Column::LifeP50 => "life p50",
            Column::LifeP90 => "life p90",
            Column::Over250 => ">250ms",
            Column::Over500 => ">500ms",
            Column::Over1000 => ">1s",
            Column::Over2000 => ">2s",
            Column::LogWrite => "log write",
            Column::Dropped => "dropped",
            Column::CallbackP50 => "cb p50 us",
            Column::CallbackMax => "cb max us",
            Column::Moves => "moves",
            Column::RemoteCopy => "remote%",
            Column::MutatorVoluntary => "mut vcsw",
            Column::MutatorInvoluntary => "mut icsw",
            Column::GcInvoluntary => "gc icsw",
        }
    }

    fn width(self) -> usize {
        match self {
            Column::GcMs | Column::Steals => 9,
            Column::GcRange | Column::WallRange => 15,
            Column::Runs => 4,
            Column::Ratio | Column::P50 | Column::P99 | Column::Max | Column::WallRatio => 7,
            Column::FailRate => 6,
            Column::Imbalance | Column::Wall => 8,
            Column::LifeP50 | Column::LifeP90 => 9,
            Column::Cpus | Column::Over1000 | Column::Over2000 => 5,
            Column::Over250 | Column::Over500 | Column::Dropped => 7,
            Column::LogWrite | Column::CallbackP50 | Column::CallbackMax => 9,
            Column::Moves => 6,
            Column::RemoteCopy => 8,
            Column::MutatorVoluntary | Column::MutatorInvoluntary | Column::GcInvoluntary => 9,
        }
    }

    /// The cell of this column for an arm with `runs`, median `m` and group baseline `base`.
    /// An arm without runs gets `-` everywhere (but in [`Column::Runs`]).
    fn cell(self, runs: &[Figures], m: &Figures, base: &Figures) -> String {
        let range = |f: fn(&Figures) -> f64, digits: usize| {
            let lo = runs.iter().map(f).fold(f64::INFINITY, f64::min);
            let hi = runs.iter().map(f).fold(0.0, f64::max);
            format!("({lo:.digits$}-{hi:.digits$})")
        };
        if runs.is_empty() && self != Column::Runs {
            return "-".to_string();
        }
        match self {
            Column::GcMs => format!("{:.1}", m.gc_ms),
            Column::GcRange => range(|f| f.gc_ms, 1),
            Column::WallRange => range(|f| f.wall_ms, 0),
            Column::Runs => runs.len().to_string(),
            Column::Ratio => format!("{:.2}x", ratio(m.gc_ms, base.gc_ms)),
            Column::P50 => format!("{:.2}", m.pause_p50_ms),
            Column::P99 => format!("{:.2}", m.pause_p99_ms),
            Column::Max => format!("{:.2}", m.pause_max_ms),
            Column::Steals => format!("{:.0}", m.steal_attempts),
            Column::FailRate => format!("{:.1}%", 100.0 * m.failure_rate),
            Column::Imbalance => format!("{:.2}", m.imbalance),
            Column::Cpus => format!("{:.2}", m.cpus_used),
            Column::Wall => format!("{:.0}", m.wall_ms),
            Column::WallRatio => format!("{:.2}x", ratio(m.wall_ms, base.wall_ms)),
            Column::LifeP50 => bytes(m.lifespan_p50_bytes),
            Column::LifeP90 => bytes(m.lifespan_p90_bytes),
            Column::Over250 => format!("{}", m.pauses_over[0]),
            Column::Over500 => format!("{}", m.pauses_over[1]),
            Column::Over1000 => format!("{}", m.pauses_over[2]),
            Column::Over2000 => format!("{}", m.pauses_over[3]),
            Column::LogWrite => format!("{:.2}", m.log_write_max_ms),
            Column::Dropped => format!("{:.0}", m.log_dropped),
            Column::CallbackP50 => optional(m.callback_us_p50, 1),
            Column::CallbackMax => optional(m.callback_us_max, 1),
            Column::Moves => optional(m.affinity_moves, 0),
            Column::RemoteCopy => optional(m.remote_copy_fraction.map(|f| 100.0 * f), 1),
            Column::MutatorVoluntary => optional(m.mutator_voluntary_switches, 0),
            Column::MutatorInvoluntary => optional(m.mutator_involuntary_switches, 0),
            Column::GcInvoluntary => format!("{:.0}", m.gc_involuntary_switches),
        }
    }
}

/// A number with `digits` decimals, or `-` without one.
fn optional(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".to_string(), |v| format!("{v:.digits$}"))
}

/// A byte count as a size (`1536K`), or `-` without one.
fn bytes(value: Option<f64>) -> String {
    value.map_or("-".to_string(), |b| format_size(b.round() as usize))
}

impl Plan {
    /// The table of medians: a header, then one row per arm (with a title line before each
    /// group when there are several).
    pub fn table(&self, outcome: &Outcome, columns: &[Column]) -> String {
        let mut s = String::new();
        let label_width = self
            .arms
            .iter()
            .map(|a| a.label.chars().count() + 1)
            .max()
            .unwrap_or(0)
            .max(18);
        let _ = write!(s, "{:<label_width$}", "configuration");
        for c in columns {
            let _ = write!(s, " {:>w$}", c.header(), w = c.width());
        }
        s.push('\n');
        let mut last_group = None;
        for (i, arm) in self.arms.iter().enumerate() {
            if self.groups.len() > 1 && last_group != Some(arm.group) {
                let _ = writeln!(s, "-- {}", self.groups[arm.group]);
                last_group = Some(arm.group);
            }
            let base = &outcome.medians[self.baseline(arm.group)];
            let _ = write!(s, "{:<label_width$}", arm.label);
            for c in columns {
                let cell = c.cell(&outcome.runs[i], &outcome.medians[i], base);
                let _ = write!(s, " {cell:>w$}", w = c.width());
            }
            s.push('\n');
        }
        s
    }

    /// One line per distinct arm label among `arms` (all arms when `None`): what it is.
    pub fn legend(&self, group: Option<usize>) -> String {
        let arms: Vec<_> = self
            .arms
            .iter()
            .filter(|a| group.is_none_or(|g| a.group == g))
            .collect();
        let width = arms
            .iter()
            .map(|a| a.label.chars().count())
            .max()
            .unwrap_or(0);
        let mut s = String::new();
        let mut seen: Vec<&str> = Vec::new();
        for arm in arms {
            if !seen.contains(&arm.label.as_str()) {
                seen.push(&arm.label);
                let _ = writeln!(s, "  {:<width$}  {}", arm.label, arm.what);
            }
        }
        s
    }

    /// One line per arm after the first of its group: the ratio of each median figure to the
    /// group's first arm.
    pub fn ratio_lines(&self, outcome: &Outcome) -> String {
        let mut s = String::new();
        for (i, arm) in self.arms.iter().enumerate() {
            let base = self.baseline(arm.group);
            if base == i || outcome.runs[i].is_empty() || outcome.runs[base].is_empty() {
                continue;
            }
            let (m, b) = (&outcome.medians[i], &outcome.medians[base]);
            let _ = writeln!(
                s,
                "  {} / {}: wall {:.2}x, GC {:.2}x, p50 {:.2}x, p99 {:.2}x, max {:.2}x, fail% {:.2}x, \
                 imbal. {:.2}x",
                arm.label,
                self.arms[base].label,
                ratio(m.wall_ms, b.wall_ms),
                ratio(m.gc_ms, b.gc_ms),
                ratio(m.pause_p50_ms, b.pause_p50_ms),
                ratio(m.pause_p99_ms, b.pause_p99_ms),
                ratio(m.pause_max_ms, b.pause_max_ms),
                ratio(m.failure_rate, b.failure_rate),
                ratio(m.imbalance, b.imbalance),
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::super::figures::tests_support::figures;
    use super::super::plan::tests_support::plan_of;
    use super::*;

    #[test]
    fn ratios_are_relative_to_the_first_arm_of_each_group() {
        let plan = plan_of(
            &[("a", 0), ("b", 0), ("a", 1), ("b", 1)],
            &["idle", "busy:1"],
        );
        let outcome = Outcome::of(vec![
            vec![figures(10.0, 100.0)],
            vec![figures(5.0, 100.0)],
            vec![figures(20.0, 100.0)],
            vec![figures(30.0, 50.0)],
        ]);
        let table = plan.table(&outcome, &[Column::GcMs, Column::Ratio, Column::WallRatio]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 7, "{table}");
        assert!(lines[1].starts_with("-- idle"), "{table}");
        assert!(lines[3].contains("0.50x"), "{table}");
        assert!(lines[4].starts_with("-- busy:1"), "{table}");
        assert!(lines[5].contains("1.00x"), "{table}");
        assert!(
            lines[6].contains("1.50x") && lines[6].ends_with("0.50x"),
            "{table}"
        );
        assert_eq!(plan.legend(None).lines().count(), 2);
        let ratios = plan.ratio_lines(&outcome);
        assert_eq!(ratios.lines().count(), 2, "{ratios}");
        assert!(ratios.contains("b / a: wall 0.50x, GC 1.50x"), "{ratios}");
    }

    #[test]
    fn arms_without_runs_are_dashes_and_lifespans_are_sizes() {
        let plan = plan_of(&[("a", 0), ("b", 0)], &[""]);
        let outcome = Outcome::of(vec![vec![figures(1.0, 2.0)], vec![]]);
        let table = plan.table(&outcome, &[Column::Runs, Column::GcMs]);
        assert!(
            table.lines().nth(2).unwrap().ends_with("0         -"),
            "{table}"
        );
        assert_eq!(bytes(Some(2048.0)), "2K");
        assert_eq!(bytes(None), "-");
    }
}
