//! The interference harness: load that runs next to a workload in the `concord` process, so
//! that GC threads compete for CPUs as in the papers' stacking experiments (000 §3, DESIGN.md
//! "our machines have 2 cores; thread stacking is reproduced by oversubscription and
//! interference").
//!
//! [`Interference::Busy`] (`--interfere busy:K`): K threads that spin on arithmetic and stay
//! runnable for as long as the [`ActiveLoad`] lives; `busy:K@CPU` pins them to one CPU, so an
//! experiment can put the load where the GC threads are born (`--pin-start`) instead of
//! wherever the OS scheduler happens to place it. The experiment engine starts the load
//! around each run of an arm that has one; `run` around its run (and around co-running
//! instances, [`crate::co_run`]). This module knows nothing of workloads or heaps.

use std::fmt;
use std::hint::black_box;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use anyhow::{bail, Context, Result};

/// The most busy-loop threads `busy:K` may ask for.
pub const MAX_BUSY_THREADS: usize = 1024;

/// Load started next to a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interference {
    /// `busy:K[@CPU]`: K threads in a busy loop, pinned to `cpu` when one is given.
    Busy { threads: usize, cpu: Option<u32> },
}

impl Interference {
    /// The allowed forms, for messages.
    pub const ALLOWED: &'static str =
        "busy:K or busy:K@CPU with K in 1..=1024 and CPU a CPU number, e.g. busy:2 or busy:1@0";

    /// `busy:K`, placed by the OS scheduler.
    #[cfg(test)]
    pub const fn busy(threads: usize) -> Interference {
        Interference::Busy { threads, cpu: None }
    }

    /// Refuses a load this process cannot start: a CPU outside its affinity mask.
    pub fn check(self) -> Result<()> {
        match self {
            Interference::Busy { cpu: Some(cpu), .. } => check_cpu_allowed(cpu),
            Interference::Busy { cpu: None, .. } => Ok(()),
        }
    }

    /// Starts the load; it runs until the returned value is stopped or dropped. A CPU this
    /// process may not run on is refused before any thread starts.
    pub fn start(self) -> Result<ActiveLoad> {
        self.check()?;
        match self {
            Interference::Busy { threads, cpu } => ActiveLoad::busy(threads, cpu),
        }
    }

    /// What the load is, in words: `2 busy-loop threads` or `1 busy-loop thread on CPU 0`.
    pub fn describe(self) -> String {
        match self {
            Interference::Busy { threads, cpu } => {
                let plural = if threads == 1 { "" } else { "s" };
                let on = cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default();
                format!("{threads} busy-loop thread{plural}{on}")
            }
        }
    }
}

/// Refuses a CPU outside this process's affinity mask, naming the allowed ones.
fn check_cpu_allowed(cpu: u32) -> Result<()> {
    let allowed = concord::os::affinity::current_thread_affinity()
        .context("cannot read this process's CPU affinity to check busy:K@CPU")?;
    if !allowed.contains(&cpu) {
        bail!(
            "busy-loop CPU {cpu} is not one this process may run on (allowed: {})",
            concord::os::procfs::format_cpu_list(&allowed)
        );
    }
    Ok(())
}

impl fmt::Display for Interference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interference::Busy { threads, cpu: None } => write!(f, "busy:{threads}"),
            Interference::Busy {
                threads,
                cpu: Some(cpu),
            } => write!(f, "busy:{threads}@{cpu}"),
        }
    }
}

impl FromStr for Interference {
    type Err = String;

    /// `busy:K[@CPU]`, K in 1..=[`MAX_BUSY_THREADS`]; the error (to follow the quoted text)
    /// names the allowed form. Whether the CPU is usable is checked when the load starts.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("is not an interference load (allowed: {})", Self::ALLOWED);
        let (kind, rest) = text.trim().split_once(':').ok_or_else(bad)?;
        if !kind.trim().eq_ignore_ascii_case("busy") {
            return Err(bad());
        }
        let (count, cpu) = match rest.split_once('@') {
            Some((count, cpu)) => (count, Some(cpu.trim().parse::<u32>().map_err(|_| bad())?)),
            None => (rest, None),
        };
        match count.trim().parse::<usize>() {
            Ok(threads) if (1..=MAX_BUSY_THREADS).contains(&threads) => {
                Ok(Interference::Busy { threads, cpu })
            }
            _ => Err(bad()),
        }
    }
}

/// A running load: busy-loop threads spinning until [`ActiveLoad::stop`] (or drop) stops and
/// joins them.
#[derive(Debug)]
pub struct ActiveLoad {
    /// Set to ask every thread to finish.
    stop: Arc<AtomicBool>,
    /// The threads; each returns the number of spin batches it ran.
    threads: Vec<JoinHandle<u64>>,
}

/// Iterations of the arithmetic between two looks at the stop flag (a few microseconds).
const SPIN_BATCH: u32 = 1024;

impl ActiveLoad {
    /// Starts `threads` busy-loop threads named `concord-busy-{i}` (each pinned to `cpu` when
    /// given) and returns once every one of them runs there, so that what follows starts under
    /// the full load. If one cannot be started or pinned, the ones already running are stopped
    /// and the error is returned.
    fn busy(threads: usize, cpu: Option<u32>) -> Result<ActiveLoad> {
        let mut load = ActiveLoad {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(threads),
        };
        let (running, started) = mpsc::channel::<std::io::Result<()>>();
        for i in 0..threads {
            let stop = load.stop.clone();
            let running = running.clone();
            let handle = std::thread::Builder::new()
                .name(format!("concord-busy-{i}"))
                .spawn(move || {
                    let pinned = match cpu {
                        Some(cpu) => concord::os::affinity::set_current_thread_affinity(&[cpu]),
                        None => Ok(()),
                    };
                    let failed = pinned.is_err();
                    let _ = running.send(pinned);
                    if failed {
                        return 0;
                    }
                    spin(&stop, i as u64)
                })
                .with_context(|| format!("cannot start busy-loop thread {i} of {threads}"))?;
            load.threads.push(handle);
        }
        drop(running);
        // Every thread says so once it runs (a thread that died first closes the channel).
        for _ in 0..threads {
            match started.recv() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let cpu = cpu.map(|c| c.to_string()).unwrap_or_default();
                    return Err(e)
                        .with_context(|| format!("cannot pin a busy-loop thread to CPU {cpu}"));
                }
                Err(_) => break,
            }
        }
        Ok(load)
    }

    /// Stops and joins every thread; returns the spin batches they ran together.
    pub fn stop(mut self) -> u64 {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> u64 {
        // Relaxed is enough: the flag carries no data, and join() orders everything after.
        self.stop.store(true, Ordering::Relaxed);
        self.threads.drain(..).map(|t| t.join().unwrap_or(0)).sum()
    }
}

impl Drop for ActiveLoad {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// The body of a busy-loop thread: a linear congruential generator, so the thread computes and
/// never blocks, with a look at `stop` after every batch (the first batch always runs).
/// Returns the batches it ran.
fn spin(stop: &AtomicBool, seed: u64) -> u64 {
    let mut x = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut batches = 0u64;
    loop {
        for _ in 0..SPIN_BATCH {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
        }
        x = black_box(x);
        batches += 1;
        if stop.load(Ordering::Relaxed) {
            return batches;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_syntax() {
        assert_eq!("busy:2".parse(), Ok(Interference::busy(2)));
        assert_eq!(" BUSY:1024 ".parse(), Ok(Interference::busy(1024)));
        assert_eq!(Interference::busy(3).to_string(), "busy:3");
        let pinned = Interference::Busy {
            threads: 2,
            cpu: Some(1),
        };
        assert_eq!("busy:2@1".parse(), Ok(pinned));
        assert_eq!(pinned.to_string(), "busy:2@1");
        assert_eq!(pinned.describe(), "2 busy-loop threads on CPU 1");
        assert_eq!(Interference::busy(1).describe(), "1 busy-loop thread");
        for bad in [
            "busy:1@",
            "busy:1@x",
            "busy:1@-1",
            "busy:@0",
            "busy",
            "busy:",
            "busy:0",
            "busy:1025",
            "busy:-1",
            "spin:2",
            "2",
            "",
        ] {
            let err = bad.parse::<Interference>().unwrap_err();
            assert!(err.starts_with("is not an interference load"), "{err}");
            assert!(err.contains("allowed: busy:K or busy:K@CPU"), "{err}");
        }
    }

    #[test]
    fn busy_threads_spin_until_stopped() {
        let load = Interference::busy(2).start().unwrap();
        assert_eq!(load.threads.len(), 2);
        // Started means running, and running until stopped.
        assert!(load.threads.iter().all(|t| !t.is_finished()));
        assert!(load.stop() >= 2, "every thread ran a batch at least");
        // Dropping stops them too.
        drop(Interference::busy(1).start().unwrap());
    }

    #[test]
    fn pinned_busy_threads_run_on_their_cpu_and_an_unusable_cpu_is_refused() {
        let allowed = concord::os::affinity::current_thread_affinity().unwrap();
        let cpu = *allowed.last().unwrap();
        let load = Interference::Busy {
            threads: 1,
            cpu: Some(cpu),
        }
        .start()
        .unwrap();
        // Other tests' busy threads share the name but are not pinned.
        let pinned_busy_threads = std::fs::read_dir("/proc/thread-self/..")
            .unwrap()
            .filter_map(|task| {
                let path = task.ok()?.path();
                let name = std::fs::read_to_string(path.join("comm")).ok()?;
                let tid: i32 = path.file_name()?.to_str()?.parse().ok()?;
                (name.trim() == "concord-busy-0").then_some(tid)
            })
            .filter(|&tid| concord::os::affinity::thread_affinity(tid).ok() == Some(vec![cpu]))
            .count();
        assert!(pinned_busy_threads >= 1);
        assert!(load.stop() >= 1);
        let err = Interference::Busy {
            threads: 1,
            cpu: Some(4095),
        }
        .start()
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("CPU 4095 is not one this process may run on"),
            "{err}"
        );
        assert!(err.contains("(allowed: "), "{err}");
    }
}
