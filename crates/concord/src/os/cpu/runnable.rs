//! How many threads want each CPU: a background [`RunnableSampler`] counts, every period, the
//! runnable threads (state `R` in `/proc/<pid>/task/<tid>/stat`) of every process by the CPU
//! they last ran on, leaving out the threads of this process that a collection accounts for
//! itself (its GC workers, and its mutators, which are stopped while it runs). This is the
//! per-CPU run-queue length that the kernel's `load_avg` follows (000 §4.1), read off the
//! pause path: a decision only clones the latest snapshot.
//!
//! The counts are smoothed (each published value is the mean of the new count and the
//! previous value), as the kernel's load average is, so one scan that catches a short-lived
//! thread does not decide a move by itself.

use std::collections::HashSet;
use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::LoadSnapshot;
use crate::os::periodic::Periodic;
use crate::os::procfs::parse_task_stat;

/// Threads of this process that the sampler leaves out (by kernel thread id).
#[derive(Debug, Default)]
pub struct ExcludedThreads(Mutex<HashSet<i32>>);

impl ExcludedThreads {
    fn lock(&self) -> MutexGuard<'_, HashSet<i32>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Leave thread `tid` out (`true`) or count it again (`false`).
    pub fn set(&self, tid: i32, excluded: bool) {
        if excluded {
            self.lock().insert(tid);
        } else {
            self.lock().remove(&tid);
        }
    }

    /// Whether `tid` is left out.
    pub fn contains(&self, tid: i32) -> bool {
        self.lock().contains(&tid)
    }
}

/// Runnable threads per CPU id among `threads` (`(tid, state, last CPU)`), leaving out the
/// tids in `excluded`; the vector is as long as the largest CPU seen + 1.
pub fn count_runnable(
    threads: impl IntoIterator<Item = (i32, char, u32)>,
    excluded: &HashSet<i32>,
) -> Vec<f64> {
    let mut counts: Vec<f64> = Vec::new();
    for (tid, state, cpu) in threads {
        if state != 'R' || excluded.contains(&tid) {
            continue;
        }
        let cpu = cpu as usize;
        if counts.len() <= cpu {
            counts.resize(cpu + 1, 0.0);
        }
        counts[cpu] += 1.0;
    }
    counts
}

/// `(tid, state, last CPU)` of every thread of every process under `proc_root` (normally
/// `/proc`). Processes and threads that end during the scan are skipped.
pub fn scan_threads(proc_root: &Path) -> io::Result<Vec<(i32, char, u32)>> {
    let mut out = Vec::with_capacity(256);
    for process in std::fs::read_dir(proc_root)? {
        let Ok(process) = process else { continue };
        let name = process.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(process.path().join("task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("stat")) else {
                continue;
            };
            if let Ok(stat) = parse_task_stat(&text) {
                out.push((stat.tid, stat.state, stat.processor));
            }
        }
    }
    Ok(out)
}

/// Mean of the previous smoothed counts and the new ones, CPU by CPU.
fn smooth(prev: Option<&LoadSnapshot>, counts: &[f64]) -> Vec<f64> {
    let len = counts.len().max(prev.map_or(0, |p| p.busy_by_cpu().len()));
    (0..len)
        .map(|cpu| {
            let now = counts.get(cpu).copied().unwrap_or(0.0);
            match prev {
                Some(p) => (p.busy(cpu as u32) + now) / 2.0,
                None => now,
            }
        })
        .collect()
}

/// The most of one CPU the sampler may take: a scan costs about 14 µs per thread on the
/// machine this was measured on (1.1 ms for 80 threads), so on a host with thousands of
/// threads a scan every period would take a large share of a CPU away from the program.
const MAX_CPU_SHARE: f64 = 0.01;

/// The time from one scan to the next: `period`, or longer when the last scan took more than
/// [`MAX_CPU_SHARE`] of it, so the sampler never takes more than that share of one CPU (the
/// load it reports is then older, as the kernel's own load average is a decayed mean anyway).
fn stretched_period(period: Duration, scan: Duration) -> Duration {
    period.max(scan.div_f64(MAX_CPU_SHARE))
}

/// Counts the runnable threads per CPU every period (stretched by [`stretched_period`] where
/// scans are slow) on a background thread (`concord-runq`) and keeps the latest smoothed
/// counts as a [`LoadSnapshot`] of loads (values are thread counts, not fractions). Dropping
/// it stops and joins the thread.
pub struct RunnableSampler {
    latest: Arc<Mutex<Option<Arc<LoadSnapshot>>>>,
    excluded: Arc<ExcludedThreads>,
    /// Time the last scan took, in microseconds (what the sampler costs per period).
    scan_us: Arc<Mutex<f64>>,
    _thread: Periodic,
}

impl RunnableSampler {
    /// Scan `/proc` now (so the first snapshot exists at once) and then every `period`.
    /// Fails when `/proc` cannot be listed or the thread cannot be started.
    pub fn start(period: Duration, excluded: Arc<ExcludedThreads>) -> io::Result<Self> {
        let root = Path::new("/proc");
        // The scanning thread is runnable while it scans: never count it.
        let scan = |skip: &ExcludedThreads| -> io::Result<Vec<f64>> {
            let me = crate::os::sched::current_tid();
            let threads = scan_threads(root)?
                .into_iter()
                .filter(|&(tid, _, _)| tid != me);
            Ok(count_runnable(threads, &skip.lock()))
        };
        let first = scan(&excluded)?;
        let latest = Arc::new(Mutex::new(Some(Arc::new(LoadSnapshot::from_loads(
            first, period,
        )))));
        let scan_us = Arc::new(Mutex::new(0.0));
        let (out, cost, skip) = (latest.clone(), scan_us.clone(), excluded.clone());
        let mut next_scan = Instant::now();
        let tick = move || {
            let start = Instant::now();
            if start < next_scan {
                return;
            }
            let Ok(counts) = scan(&skip) else {
                return;
            };
            next_scan = start + stretched_period(period, start.elapsed());
            let mut slot = out.lock().unwrap_or_else(|p| p.into_inner());
            let loads = smooth(slot.as_deref(), &counts);
            *slot = Some(Arc::new(LoadSnapshot::from_loads(loads, period)));
            *cost.lock().unwrap_or_else(|p| p.into_inner()) = start.elapsed().as_secs_f64() * 1e6;
        };
        Ok(Self {
            latest,
            excluded,
            scan_us,
            _thread: Periodic::spawn("concord-runq", period, || {}, tick)?,
        })
    }

    /// The latest smoothed counts. Cheap: one uncontended lock and an `Arc` clone.
    pub fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        self.latest
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The threads left out.
    pub fn excluded(&self) -> &Arc<ExcludedThreads> {
        &self.excluded
    }

    /// What the last scan took, in microseconds (0 before the first periodic scan).
    pub fn last_scan_us(&self) -> f64 {
        *self.scan_us.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl std::fmt::Debug for RunnableSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunnableSampler")
            .field("last_scan_us", &self.last_scan_us())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_only_runnable_threads_not_left_out() {
        let excluded: HashSet<i32> = [7].into();
        let threads = [
            (5, 'R', 1),
            (6, 'S', 1),
            (7, 'R', 0),
            (8, 'R', 1),
            (9, 'D', 3),
        ];
        assert_eq!(count_runnable(threads, &excluded), vec![0.0, 2.0]);
        assert!(count_runnable([], &excluded).is_empty());
    }

    #[test]
    fn a_slow_scan_stretches_the_period_to_one_percent_of_a_cpu() {
        let period = Duration::from_millis(100);
        assert_eq!(stretched_period(period, Duration::from_micros(500)), period);
        assert_eq!(stretched_period(period, Duration::from_millis(1)), period);
        assert_eq!(
            stretched_period(period, Duration::from_micros(1100)),
            Duration::from_millis(110)
        );
        assert_eq!(
            stretched_period(period, Duration::from_millis(28)),
            Duration::from_millis(2800)
        );
    }

    #[test]
    fn smoothing_halves_the_step() {
        let prev = LoadSnapshot::from_loads(vec![2.0, 0.0], Duration::from_millis(1));
        assert_eq!(smooth(Some(&prev), &[0.0, 1.0, 4.0]), vec![1.0, 0.5, 2.0]);
        assert_eq!(smooth(None, &[3.0]), vec![3.0]);
    }

    #[test]
    fn a_spinning_thread_of_ours_is_seen_runnable_unless_left_out() {
        use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let tid = Arc::new(AtomicI32::new(0));
        let (s, t) = (stop.clone(), tid.clone());
        let spinner = std::thread::spawn(move || {
            t.store(crate::os::sched::current_tid(), Ordering::Release);
            while !s.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        while tid.load(Ordering::Acquire) == 0 {
            std::thread::yield_now();
        }
        let me = tid.load(Ordering::Acquire);
        // A spinning thread is `R` in every scan; wait for it rather than time it.
        let seen = |excluded: &HashSet<i32>| {
            scan_threads(Path::new("/proc"))
                .unwrap()
                .into_iter()
                .any(|(t, s, _)| t == me && s == 'R' && !excluded.contains(&t))
        };
        while !seen(&HashSet::new()) {
            std::thread::yield_now();
        }
        assert!(!seen(&[me].into()));
        stop.store(true, Ordering::Relaxed);
        spinner.join().unwrap();
    }
}
