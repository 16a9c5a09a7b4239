//! A named background thread that runs a task once every period until it is stopped: the shape
//! of both samplers of the OS room (the `/proc/stat` load sampler and the adaptive mutator
//! scheduler's thread-id sampler).
//!
//! The sleep between ticks waits on a condition variable, so stopping is prompt whatever the
//! period; ticks keep a fixed rate, and after a stall the next one comes a period later instead
//! of catching up.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The stop request and the condition variable the thread sleeps on.
#[derive(Debug, Default)]
struct StopFlag {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl StopFlag {
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sleep until `deadline`; `false` if a stop was requested before or meanwhile.
    fn sleep_until(&self, deadline: Instant) -> bool {
        let mut stopped = self.lock();
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        false
    }
}

/// A background thread running a task every period; stopped and joined by [`Periodic::stop`]
/// or on drop.
#[derive(Debug)]
pub struct Periodic {
    flag: Arc<StopFlag>,
    thread: Option<JoinHandle<()>>,
}

impl Periodic {
    /// Start thread `name`: it runs `on_start` once, then `tick` one `period` later and every
    /// `period` after that (at least 1 ms), until stopped.
    pub fn spawn(
        name: &str,
        period: Duration,
        on_start: impl FnOnce() + Send + 'static,
        mut tick: impl FnMut() + Send + 'static,
    ) -> io::Result<Self> {
        let period = period.max(Duration::from_millis(1));
        let flag = Arc::new(StopFlag::default());
        let sleeper = flag.clone();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                on_start();
                let mut deadline = Instant::now() + period;
                while sleeper.sleep_until(deadline) {
                    tick();
                    deadline += period;
                    let now = Instant::now();
                    if deadline < now {
                        deadline = now + period;
                    }
                }
            })?;
        Ok(Self {
            flag,
            thread: Some(thread),
        })
    }

    /// Stop the thread and wait for it (a tick under way is finished first). Later calls do
    /// nothing.
    pub fn stop(&mut self) {
        *self.flag.lock() = true;
        self.flag.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Periodic {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn ticks_until_stopped_and_stops_promptly() {
        let ticks = Arc::new(AtomicU32::new(0));
        let started = Arc::new(AtomicU32::new(0));
        let (t, s) = (ticks.clone(), started.clone());
        let mut p = Periodic::spawn(
            "concord-test",
            Duration::from_millis(1),
            move || {
                s.fetch_add(1, Ordering::Relaxed);
            },
            move || {
                t.fetch_add(1, Ordering::Relaxed);
            },
        )
        .unwrap();
        while ticks.load(Ordering::Relaxed) < 3 {
            std::thread::yield_now();
        }
        p.stop();
        let after = ticks.load(Ordering::Relaxed);
        p.stop();
        // Joined: no tick after the stop returned.
        assert_eq!(ticks.load(Ordering::Relaxed), after);
        assert_eq!(started.load(Ordering::Relaxed), 1);

        // A long period does not delay the stop.
        let slow =
            Periodic::spawn("concord-test", Duration::from_secs(3600), || {}, || {}).unwrap();
        let t = Instant::now();
        drop(slow);
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
