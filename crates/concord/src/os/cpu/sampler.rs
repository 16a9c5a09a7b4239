//! How busy each CPU is: per-CPU busy fractions between two `/proc/stat` samples
//! ([`busy_between`]), kept fresh off the pause path by a background [`LoadSampler`], or taken
//! once over a window ([`sample_load`], which blocks).
//!
//! The busy fraction of CPU `i` is the share of the window it spent outside idle/iowait (user,
//! nice, system, irq, softirq, steal), in `[0, 1]`.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::os::periodic::Periodic;
use crate::os::procfs::{read_proc_stat, CpuTimes, KernelFileError};

/// Default sampling period of [`LoadSampler`].
pub const DEFAULT_SAMPLE_PERIOD: Duration = Duration::from_millis(100);

/// The `/proc/stat` of the machine.
const PROC_STAT: &str = "/proc/stat";

/// Per-CPU busy fraction (0..=1) between two `/proc/stat` samples, indexed by CPU id (the
/// vector is as long as the largest id in `cur` + 1). A CPU missing from either sample, or
/// without ticks in between, gets 0. Counters that went backwards (iowait may, and hotplug
/// resets them) count as no time.
pub fn busy_between(prev: &BTreeMap<u32, CpuTimes>, cur: &BTreeMap<u32, CpuTimes>) -> Vec<f64> {
    let len = cur.keys().next_back().map_or(0, |&m| m as usize + 1);
    let mut busy = vec![0.0; len];
    for (&cpu, c) in cur {
        let Some(p) = prev.get(&cpu) else { continue };
        let b = c.busy.saturating_sub(p.busy);
        let i = c.idle.saturating_sub(p.idle);
        if b + i > 0 {
            busy[cpu as usize] = (b as f64 / (b + i) as f64).clamp(0.0, 1.0);
        }
    }
    busy
}

/// Per-CPU busy fractions over one sampling window.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadSnapshot {
    busy: Vec<f64>,
    /// Length of the window the fractions cover.
    pub window: Duration,
    /// When the window ended.
    pub taken: Instant,
}

impl LoadSnapshot {
    /// A snapshot from busy fractions indexed by CPU id (values are clamped to 0..=1,
    /// non-numbers become 0), taken now. Useful to force a placement decision.
    pub fn new(busy_by_cpu: Vec<f64>, window: Duration) -> Self {
        let busy = busy_by_cpu
            .into_iter()
            .map(|b| {
                if b.is_finite() {
                    b.clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect();
        Self {
            busy,
            window,
            taken: Instant::now(),
        }
    }

    /// A snapshot of loads that are not fractions (e.g. runnable-thread counts of
    /// [`super::RunnableSampler`]), taken now: non-numbers and negatives become 0, nothing is
    /// capped.
    pub fn from_loads(loads_by_cpu: Vec<f64>, window: Duration) -> Self {
        let busy = loads_by_cpu
            .into_iter()
            .map(|l| if l.is_finite() && l > 0.0 { l } else { 0.0 })
            .collect();
        Self {
            busy,
            window,
            taken: Instant::now(),
        }
    }

    /// The snapshot between two samples, the first taken at `prev_at`, the second now.
    fn between(
        prev: &BTreeMap<u32, CpuTimes>,
        prev_at: Instant,
        cur: &BTreeMap<u32, CpuTimes>,
    ) -> Self {
        Self::new(busy_between(prev, cur), prev_at.elapsed())
    }

    /// Busy fraction (or load, for [`LoadSnapshot::from_loads`]) of `cpu` in the window (0
    /// for a CPU the sample did not cover).
    pub fn busy(&self, cpu: u32) -> f64 {
        self.busy.get(cpu as usize).copied().unwrap_or(0.0)
    }

    /// All fractions, indexed by CPU id.
    pub fn busy_by_cpu(&self) -> &[f64] {
        &self.busy
    }

    /// Time since the window ended.
    pub fn age(&self) -> Duration {
        self.taken.elapsed()
    }
}

/// Sample `/proc/stat` twice, `window` apart (blocks for `window`; not for the pause path).
pub fn sample_load(window: Duration) -> Result<LoadSnapshot, KernelFileError> {
    let path = Path::new(PROC_STAT);
    let start = Instant::now();
    let a = read_proc_stat(path)?;
    std::thread::sleep(window);
    let b = read_proc_stat(path)?;
    Ok(LoadSnapshot::between(&a, start, &b))
}

/// What the sampler thread publishes.
#[derive(Default)]
struct Published {
    latest: Mutex<Option<Arc<LoadSnapshot>>>,
    errors: AtomicU64,
    last_error: Mutex<Option<String>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Samples `/proc/stat` every period on a background thread (`concord-load`) and keeps the
/// latest per-CPU busy fractions, so a collection reads them without waiting for a window.
/// Dropping it stops and joins the thread (promptly: the wait is interruptible).
pub struct LoadSampler {
    published: Arc<Published>,
    period: Duration,
    _thread: Periodic,
}

impl LoadSampler {
    /// Sample `/proc/stat` every `period` (at least 1 ms). The first snapshot is available
    /// one period after the start, or later if no CPU clock ticked in that period.
    pub fn start(period: Duration) -> io::Result<Self> {
        Self::start_from(PathBuf::from(PROC_STAT), period)
    }

    /// Like [`LoadSampler::start`], reading a `/proc/stat`-format file at `path`. Fails when
    /// the file cannot be read or the thread cannot be started.
    pub fn start_from(path: PathBuf, period: Duration) -> io::Result<Self> {
        let period = period.max(Duration::from_millis(1));
        let mut prev = read_proc_stat(&path)?;
        let mut prev_at = Instant::now();
        let published = Arc::new(Published::default());
        let out = published.clone();
        let tick = move || match read_proc_stat(&path) {
            // No clock tick on any CPU since the last sample (the counters move every 10 ms at
            // the usual 100 Hz): such a window says nothing, so the last snapshot stays and the
            // window grows until one passes.
            Ok(cur) if cur == prev => {}
            Ok(cur) => {
                let snap = LoadSnapshot::between(&prev, prev_at, &cur);
                *lock(&out.latest) = Some(Arc::new(snap));
                prev = cur;
                prev_at = Instant::now();
            }
            Err(e) => {
                out.errors.fetch_add(1, Ordering::Relaxed);
                *lock(&out.last_error) = Some(e.to_string());
            }
        };
        Ok(Self {
            published,
            period,
            _thread: Periodic::spawn("concord-load", period, || {}, tick)?,
        })
    }

    /// The sampling period.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The most recent snapshot (`None` before the first window has passed). Cheap: one
    /// uncontended lock and an `Arc` clone.
    pub fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        lock(&self.published.latest).clone()
    }

    /// Number of samples that failed so far, and the last failure.
    pub fn errors(&self) -> (u64, Option<String>) {
        (
            // Relaxed: a statistic; the message beside it is read under its own lock.
            self.published.errors.load(Ordering::Relaxed),
            lock(&self.published.last_error).clone(),
        )
    }
}

impl std::fmt::Debug for LoadSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadSampler")
            .field("period", &self.period)
            .field("latest", &self.latest())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::Scratch;
    use super::*;
    use crate::os::procfs::parse_proc_stat;
    use std::fs;

    const STAT_A: &str = "cpu  300 0 100 600 0 0 0 0 0 0\n\
        cpu0 100 0 50 350 0 0 0 0 0 0\n\
        cpu1 200 0 50 250 0 0 0 0 0 0\n\
        intr 12345 1 2\nctxt 999\nbtime 1700000000\n";
    const STAT_B: &str = "cpu  500 0 100 800 0 0 0 0 0 0\n\
        cpu0 100 0 50 550 0 0 0 0 0 0\n\
        cpu1 350 0 50 300 0 0 0 0 0 0\n";

    #[test]
    fn busy_fractions_between_samples() {
        let a = parse_proc_stat(STAT_A);
        let b = parse_proc_stat(STAT_B);
        let busy = busy_between(&a, &b);
        assert_eq!(busy.len(), 2);
        assert!((busy[0] - 0.0).abs() < 1e-12);
        assert!((busy[1] - 0.75).abs() < 1e-12);
        // Same sample twice: no ticks, 0. Backwards counters: no panic, 0..=1.
        assert_eq!(busy_between(&a, &a), vec![0.0, 0.0]);
        let back = busy_between(&b, &a);
        assert!(back.iter().all(|f| (0.0..=1.0).contains(f)));
        // A CPU that appears only in the new sample gets 0.
        let mut c = b.clone();
        c.insert(5, CpuTimes { busy: 9, idle: 1 });
        let busy = busy_between(&a, &c);
        assert_eq!(busy.len(), 6);
        assert_eq!(busy[5], 0.0);
    }

    #[test]
    fn snapshots_clamp_and_default() {
        let snap = LoadSnapshot::new(vec![0.5, 0.25, f64::NAN, 7.0], Duration::from_millis(100));
        assert_eq!(snap.busy(0), 0.5);
        assert_eq!(snap.busy(2), 0.0);
        assert_eq!(snap.busy(3), 1.0);
        assert_eq!(snap.busy(99), 0.0);
        assert_eq!(snap.busy_by_cpu().len(), 4);
    }

    #[test]
    fn sampler_publishes_fractions_and_stops_promptly() {
        let s = Scratch::new("sampler");
        let stat = s.0.join("stat");
        fs::write(&stat, STAT_A).unwrap();
        let sampler = LoadSampler::start_from(stat.clone(), Duration::from_millis(5)).unwrap();
        let tmp = s.0.join("stat.tmp");
        fs::write(&tmp, STAT_B).unwrap();
        fs::rename(&tmp, &stat).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(snap) = sampler.latest() {
                if (snap.busy(1) - 0.75).abs() < 1e-12 {
                    assert_eq!(snap.busy(0), 0.0);
                    break;
                }
            }
            assert!(Instant::now() < deadline, "no snapshot with the new sample");
            std::thread::sleep(Duration::from_millis(2));
        }
        // Garbage is counted as an error; the last good snapshot stays.
        fs::write(&tmp, "nonsense\n").unwrap();
        fs::rename(&tmp, &stat).unwrap();
        while sampler.errors().0 == 0 {
            assert!(Instant::now() < deadline, "the bad sample was not noticed");
            std::thread::sleep(Duration::from_millis(2));
        }
        assert!(sampler.latest().is_some());
        assert!(sampler.errors().1.unwrap().contains("no per-CPU lines"));
        drop(sampler);

        // A long period does not delay the drop.
        let ok = s.0.join("ok-stat");
        fs::write(&ok, STAT_A).unwrap();
        let slow = LoadSampler::start_from(ok, Duration::from_secs(3600)).unwrap();
        let t = Instant::now();
        drop(slow);
        assert!(t.elapsed() < Duration::from_secs(5));

        assert!(LoadSampler::start_from(s.0.join("absent"), Duration::from_millis(5)).is_err());
    }

    #[test]
    fn real_proc_stat_sampler() {
        let sampler = LoadSampler::start(Duration::from_millis(10)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let snap = loop {
            if let Some(s) = sampler.latest() {
                break s;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(5));
        };
        for &cpu in &crate::os::affinity::current_thread_affinity().unwrap() {
            assert!((0.0..=1.0).contains(&snap.busy(cpu)));
        }
        let once = sample_load(Duration::from_millis(20)).unwrap();
        assert!(once.window >= Duration::from_millis(20));
    }
}
