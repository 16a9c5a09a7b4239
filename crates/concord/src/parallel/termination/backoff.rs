//! How a worker waits inside the termination protocol between two looks at the other deques.
//!
//! Two shapes, with their constants as data:
//!
//! * [`Backoff::HotSpot`] is HotSpot 8's `ParallelTaskTerminator::offer_termination` loop. Each
//!   step either hard-spins (a number of `PAUSE` instructions that doubles from
//!   `hard_spins >> spin_to_yield_ratio` up to `hard_spins`), or, after `spin_to_yield_ratio`
//!   such spins, yields the CPU and starts spinning afresh. After `yields_before_sleep` steps the
//!   next step tells the caller to sleep instead (for `sleep`), and counting starts again.
//! * [`Backoff::Staged`] spins first (doubling from 1 `PAUSE`, `spin_rounds` times), then yields
//!   `yields` times, then tells the caller to sleep before every further look: it gives the CPU
//!   back soon, which matters when GC threads outnumber CPUs.

use std::time::Duration;

use crate::sync::{hint, thread};

/// The shape and constants of the waiting loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backoff {
    /// HotSpot 8's loop (its `WorkStealing*` flags).
    HotSpot {
        /// Longest hard spin, in `PAUSE`s (`WorkStealingHardSpins`).
        hard_spins: u32,
        /// Hard spins between two yields; also sets the first spin to
        /// `hard_spins >> spin_to_yield_ratio` (`WorkStealingSpinToYieldRatio`).
        spin_to_yield_ratio: u32,
        /// Steps (spins and yields) before a sleep (`WorkStealingYieldsBeforeSleep`).
        yields_before_sleep: u32,
        /// How long a sleep lasts (`WorkStealingSleepMillis`).
        sleep: Duration,
    },
    /// Spin, then yield, then sleep before every look.
    Staged {
        /// Spin rounds, each twice as long as the last, starting at one `PAUSE`.
        spin_rounds: u32,
        /// Yields after the spins.
        yields: u32,
        /// How long each sleep lasts once spinning and yielding are used up.
        sleep: Duration,
    },
}

impl Backoff {
    /// OpenJDK 8's defaults: `WorkStealingHardSpins` 4096, `WorkStealingSpinToYieldRatio` 10,
    /// `WorkStealingYieldsBeforeSleep` 5000, `WorkStealingSleepMillis` 1 (the experimental
    /// flags of HotSpot's `runtime/globals.hpp` in JDK 8, `gc/shared/gc_globals.hpp` later, read
    /// by `ParallelTaskTerminator::offer_termination` in `utilities/taskqueue.cpp`).
    pub const HOTSPOT8: Backoff = Backoff::HotSpot {
        hard_spins: 4096,
        spin_to_yield_ratio: 10,
        yields_before_sleep: 5000,
        sleep: Duration::from_millis(1),
    };

    /// Concord's short loop: 6 spin rounds (1 to 32 `PAUSE`s), 500 yields, then 50 µs sleeps.
    pub const SHORT: Backoff = Backoff::Staged {
        spin_rounds: 6,
        yields: 500,
        sleep: Duration::from_micros(50),
    };

    /// This backoff with sleeps of `sleep`.
    pub const fn with_sleep(self, sleep: Duration) -> Backoff {
        match self {
            Backoff::HotSpot {
                hard_spins,
                spin_to_yield_ratio,
                yields_before_sleep,
                ..
            } => Backoff::HotSpot {
                hard_spins,
                spin_to_yield_ratio,
                yields_before_sleep,
                sleep,
            },
            Backoff::Staged {
                spin_rounds,
                yields,
                ..
            } => Backoff::Staged {
                spin_rounds,
                yields,
                sleep,
            },
        }
    }

    /// How long a sleep lasts.
    pub fn sleep(self) -> Duration {
        match self {
            Backoff::HotSpot { sleep, .. } | Backoff::Staged { sleep, .. } => sleep,
        }
    }

    /// A fresh waiting state for one offer.
    pub fn start(self) -> Waiting {
        let first_spin = match self {
            Backoff::HotSpot {
                hard_spins,
                spin_to_yield_ratio,
                ..
            } => (hard_spins >> spin_to_yield_ratio.min(31)).max(1),
            Backoff::Staged { .. } => 1,
        };
        Waiting {
            backoff: self,
            steps: 0,
            spins_since_yield: 0,
            spin_limit: first_spin,
            first_spin,
        }
    }
}

/// What one step of [`Waiting::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pause {
    /// It spun or yielded; look again.
    Waited,
    /// Spinning and yielding are used up: the caller sleeps (or naps) now, then looks again.
    Sleep,
}

/// The state of the waiting loop during one offer.
#[derive(Clone, Debug)]
pub struct Waiting {
    backoff: Backoff,
    steps: u32,
    spins_since_yield: u32,
    spin_limit: u32,
    first_spin: u32,
}

impl Waiting {
    /// Wait one step: hard-spin or yield, or say that it is time to sleep.
    pub fn step(&mut self) -> Pause {
        match self.backoff {
            Backoff::HotSpot {
                hard_spins,
                spin_to_yield_ratio,
                yields_before_sleep,
                ..
            } => {
                if self.steps > yields_before_sleep {
                    self.steps = 0;
                    return Pause::Sleep;
                }
                self.steps += 1;
                if self.spins_since_yield > spin_to_yield_ratio {
                    thread::yield_now();
                    self.spins_since_yield = 0;
                    self.spin_limit = self.first_spin;
                } else {
                    self.spin_limit = self.spin_limit.saturating_mul(2).min(hard_spins.max(1));
                    spin(self.spin_limit);
                    self.spins_since_yield += 1;
                }
                Pause::Waited
            }
            Backoff::Staged {
                spin_rounds,
                yields,
                ..
            } => {
                if self.steps < spin_rounds {
                    spin(1 << self.steps.min(31));
                } else if self.steps - spin_rounds < yields {
                    thread::yield_now();
                } else {
                    return Pause::Sleep;
                }
                self.steps += 1;
                Pause::Waited
            }
        }
    }

    /// How long a sleep lasts.
    pub fn sleep_time(&self) -> Duration {
        self.backoff.sleep()
    }
}

/// Spin for `pauses` `PAUSE` instructions.
fn spin(pauses: u32) {
    hint::spin_loops(pauses);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The number of steps between sleeps and the spin lengths follow HotSpot 8's loop.
    #[test]
    fn hotspot8_schedule() {
        let mut w = Backoff::HOTSPOT8.start();
        assert_eq!(w.first_spin, 4);
        let mut spins = Vec::new();
        let mut yields = 0;
        let mut steps = 0;
        loop {
            let before = w.spins_since_yield;
            match w.step() {
                Pause::Sleep => break,
                Pause::Waited => {
                    steps += 1;
                    if w.spins_since_yield == 0 && before > 0 {
                        yields += 1;
                    } else if spins.len() < 12 {
                        spins.push(w.spin_limit);
                    }
                }
            }
        }
        // 5000 yields before sleep, counted HotSpot's way (`yield_count <= limit`).
        assert_eq!(steps, 5001);
        // Spins double from 8 up to 4096, eleven of them, then a yield.
        assert_eq!(
            spins,
            [8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 4096, 8]
        );
        assert_eq!(yields, 5001 / 12);
        // After the sleep the count starts again.
        assert_eq!(w.step(), Pause::Waited);
        assert_eq!(w.sleep_time(), Duration::from_millis(1));
    }

    #[test]
    fn staged_schedule_spins_yields_then_sleeps_every_time() {
        let mut w = Backoff::SHORT.start();
        let mut steps = 0;
        while w.step() == Pause::Waited {
            steps += 1;
        }
        assert_eq!(steps, 6 + 500);
        // Once used up, every further step says sleep.
        assert_eq!(w.step(), Pause::Sleep);
        assert_eq!(w.step(), Pause::Sleep);
        assert_eq!(w.sleep_time(), Duration::from_micros(50));
        let napping = Backoff::SHORT.with_sleep(Duration::from_millis(1));
        assert_eq!(napping.sleep(), Duration::from_millis(1));
        assert_eq!(napping.start().step(), Pause::Waited);
    }
}
