//! The statistics of `concord sim validate --tier`: quantiles, a percentile bootstrap of the
//! median, and the machine's load around a run (`/proc/loadavg`, `/proc/stat`).

use concord::parallel::rng::XorShift;

/// The `q`-quantile of `values` (0 ≤ q ≤ 1), linear between the closest ranks (NaN for none).
pub fn quantile(values: &[f64], q: f64) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let rank = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (rank - lo as f64)
}

/// The median of `values` (NaN for none).
pub fn median(values: &[f64]) -> f64 {
    quantile(values, 0.5)
}

/// Resamples of [`bootstrap_median`].
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The 95 % percentile-bootstrap interval of the median of `values`: the 2.5 % and 97.5 %
/// quantiles of the medians of [`BOOTSTRAP_RESAMPLES`] resamples with replacement, drawn from
/// `seed` (so the same values give the same interval, in one run or merged from shards).
/// `[NaN, NaN]` for no value; one value is its own interval.
pub fn bootstrap_median(values: &[f64], seed: u64) -> [f64; 2] {
    if values.is_empty() {
        return [f64::NAN, f64::NAN];
    }
    let mut rng = XorShift::new(seed | 1);
    let mut sample = vec![0.0; values.len()];
    let medians: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            for s in &mut sample {
                *s = values[rng.below(values.len())];
            }
            median(&sample)
        })
        .collect();
    [quantile(&medians, 0.025), quantile(&medians, 0.975)]
}

/// A seed from a text (FNV-1a), for the bootstrap of one cell.
pub fn seed_of(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The machine's CPU time counters (`/proc/stat`'s first line), in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Every field added up.
    pub total: u64,
    /// Idle and I/O wait.
    pub idle: u64,
    /// Time the hypervisor ran something else while a virtual CPU wanted to run.
    pub steal: u64,
}

impl CpuTicks {
    /// Parses `/proc/stat`'s `cpu` line (`cpu user nice system idle iowait irq softirq steal …`).
    pub fn parse(stat: &str) -> Option<CpuTicks> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let fields: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|f| f.parse().ok())
            .collect::<Option<_>>()?;
        if fields.len() < 4 {
            return None;
        }
        let at = |i: usize| fields.get(i).copied().unwrap_or(0);
        // guest and guest_nice (fields 8 and 9) are already counted in user and nice.
        Some(CpuTicks {
            total: fields.iter().take(8).sum(),
            idle: at(3) + at(4),
            steal: at(7),
        })
    }

    /// This machine's counters now (`None` where `/proc/stat` cannot be read).
    pub fn now() -> Option<CpuTicks> {
        CpuTicks::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// The share of the time from `earlier` to `self` that the CPUs were busy, and that was
    /// stolen; `None` when no tick passed.
    pub fn since(&self, earlier: &CpuTicks) -> Option<(f64, f64)> {
        let total = self.total.checked_sub(earlier.total).filter(|&t| t > 0)? as f64;
        let idle = self.idle.saturating_sub(earlier.idle) as f64;
        let steal = self.steal.saturating_sub(earlier.steal) as f64;
        Some(((1.0 - idle / total).max(0.0), steal / total))
    }
}

/// The 1-minute load average (`None` where `/proc/loadavg` cannot be read).
pub fn loadavg1() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(median(&v), 2.5);
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        // p90 of 1..=4: rank 2.7, between 3 and 4.
        assert!((quantile(&v, 0.9) - 3.7).abs() < 1e-12);
        assert!(median(&[]).is_nan());
        assert_eq!(median(&[f64::NAN, 5.0]), 5.0);
    }

    #[test]
    fn the_bootstrap_interval_holds_the_median_and_repeats_under_its_seed() {
        let values: Vec<f64> = (1..=9).map(f64::from).collect();
        let [lo, hi] = bootstrap_median(&values, 7);
        assert!(lo <= 5.0 && 5.0 <= hi, "{lo} {hi}");
        assert!(lo >= 1.0 && hi <= 9.0);
        assert!(hi - lo < 8.0, "the interval is narrower than the range");
        assert_eq!(bootstrap_median(&values, 7), [lo, hi]);
        assert_eq!(bootstrap_median(&[3.0], 1), [3.0, 3.0]);
        assert!(bootstrap_median(&[], 1)[0].is_nan());
        assert_eq!(seed_of("a"), seed_of("a"));
        assert_ne!(seed_of("a"), seed_of("b"));
    }

    #[test]
    fn cpu_ticks_give_the_busy_and_stolen_shares() {
        let before = CpuTicks::parse("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 2 3 4\n").unwrap();
        let after = CpuTicks::parse("cpu  200 0 150 750 100 0 0 50 10 0\n").unwrap();
        assert_eq!(
            before,
            CpuTicks {
                total: 1000,
                idle: 800,
                steal: 0
            }
        );
        // 250 ticks passed: 50 idle, 50 stolen.
        let (busy, steal) = after.since(&before).unwrap();
        assert!((busy - 0.8).abs() < 1e-12 && (steal - 0.2).abs() < 1e-12);
        assert_eq!(before.since(&before), None);
        assert_eq!(CpuTicks::parse("intr 1 2"), None);
    }
}
