//! The interference harness: load that runs next to a workload in the `concord` process, so
//! that GC threads compete for CPUs as in the papers' stacking experiments (000 §3, DESIGN.md
//! "our machines have 2 cores; thread stacking is reproduced by oversubscription and
//! interference").
//!
//! [`Interference::Busy`] (`--interfere busy:K`): K threads that spin on arithmetic and stay
//! runnable for as long as the [`ActiveLoad`] lives. The experiment engine starts the load
//! around each run of an arm that has one; `run` around its run (and around co-running
//! instances, [`crate::co_run`]). This module knows nothing of workloads or heaps.

use std::fmt;
use std::hint::black_box;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use anyhow::{Context, Result};

/// The most busy-loop threads `busy:K` may ask for.
pub const MAX_BUSY_THREADS: usize = 1024;

/// Load started next to a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interference {
    /// `busy:K`: K threads in a busy loop.
    Busy(usize),
}

impl Interference {
    /// The allowed forms, for messages.
    pub const ALLOWED: &'static str = "busy:K with K in 1..=1024, e.g. busy:2";

    /// Starts the load; it runs until the returned value is stopped or dropped.
    pub fn start(self) -> Result<ActiveLoad> {
        match self {
            Interference::Busy(threads) => ActiveLoad::busy(threads),
        }
    }

    /// What the load is, in words: `2 busy-loop threads`.
    pub fn describe(self) -> String {
        match self {
            Interference::Busy(1) => "1 busy-loop thread".to_string(),
            Interference::Busy(k) => format!("{k} busy-loop threads"),
        }
    }
}

impl fmt::Display for Interference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interference::Busy(k) => write!(f, "busy:{k}"),
        }
    }
}

impl FromStr for Interference {
    type Err = String;

    /// `busy:K`, K in 1..=[`MAX_BUSY_THREADS`]; the error (to follow the quoted text) names
    /// the allowed form.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("is not an interference load (allowed: {})", Self::ALLOWED);
        let (kind, count) = text.trim().split_once(':').ok_or_else(bad)?;
        if !kind.trim().eq_ignore_ascii_case("busy") {
            return Err(bad());
        }
        match count.trim().parse::<usize>() {
            Ok(k) if (1..=MAX_BUSY_THREADS).contains(&k) => Ok(Interference::Busy(k)),
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
    /// Starts `threads` busy-loop threads named `concord-busy-{i}` and returns once every one
    /// of them runs, so that what follows starts under the full load. If one cannot be
    /// started, the ones already running are stopped and the error is returned.
    fn busy(threads: usize) -> Result<ActiveLoad> {
        let mut load = ActiveLoad {
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::with_capacity(threads),
        };
        let (running, started) = mpsc::channel::<()>();
        for i in 0..threads {
            let stop = load.stop.clone();
            let running = running.clone();
            let handle = std::thread::Builder::new()
                .name(format!("concord-busy-{i}"))
                .spawn(move || {
                    let _ = running.send(());
                    spin(&stop, i as u64)
                })
                .with_context(|| format!("cannot start busy-loop thread {i} of {threads}"))?;
            load.threads.push(handle);
        }
        drop(running);
        // Every thread says so once it runs (a thread that died first closes the channel).
        for _ in 0..threads {
            if started.recv().is_err() {
                break;
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
        assert_eq!("busy:2".parse(), Ok(Interference::Busy(2)));
        assert_eq!(" BUSY:1024 ".parse(), Ok(Interference::Busy(1024)));
        assert_eq!(Interference::Busy(3).to_string(), "busy:3");
        for bad in [
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
            assert!(err.contains("allowed: busy:K with K in 1..=1024"), "{err}");
        }
    }

    #[test]
    fn busy_threads_spin_until_stopped() {
        let load = Interference::Busy(2).start().unwrap();
        assert_eq!(load.threads.len(), 2);
        // Started means running, and running until stopped.
        assert!(load.threads.iter().all(|t| !t.is_finished()));
        assert!(load.stop() >= 2, "every thread ran a batch at least");
        // Dropping stops them too.
        drop(Interference::Busy(1).start().unwrap());
    }
}
