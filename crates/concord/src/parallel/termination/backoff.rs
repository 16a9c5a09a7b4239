//! How a worker waits inside the termination protocol between two looks at the other deques:
//! HotSpot 8's `ParallelTaskTerminator::offer_termination` loop, with its constants as data.
//!
//! Each step either hard-spins (a number of `PAUSE` instructions that doubles from
//! `hard_spins >> spin_to_yield_ratio` up to `hard_spins`), or, after `spin_to_yield_ratio`
//! such spins, yields the CPU and starts spinning afresh. After `yields_before_sleep` steps the
//! next step tells the caller to sleep instead (for `sleep`), and counting starts again.

use std::time::Duration;

use crate::sync::{hint, thread};

/// The constants of the waiting loop (HotSpot's `WorkStealing*` flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// Longest hard spin, in `PAUSE`s (`WorkStealingHardSpins`).
    pub hard_spins: u32,
    /// Hard spins between two yields; also sets the first spin to
    /// `hard_spins >> spin_to_yield_ratio` (`WorkStealingSpinToYieldRatio`).
    pub spin_to_yield_ratio: u32,
    /// Steps (spins and yields) before a sleep (`WorkStealingYieldsBeforeSleep`).
    pub yields_before_sleep: u32,
    /// How long a sleep lasts (`WorkStealingSleepMillis`).
    pub sleep: Duration,
}

impl Backoff {
    /// OpenJDK 8's defaults: `WorkStealingHardSpins` 4096, `WorkStealingSpinToYieldRatio` 10,
    /// `WorkStealingYieldsBeforeSleep` 5000, `WorkStealingSleepMillis` 1.
    pub const HOTSPOT8: Backoff = Backoff {
        hard_spins: 4096,
        spin_to_yield_ratio: 10,
        yields_before_sleep: 5000,
        sleep: Duration::from_millis(1),
    };

    /// Concord's short loop: spins of 2 to 32 `PAUSE`s, a yield after every 5 spins, a 50 µs
    /// sleep after 500 steps. It gives the CPU back sooner than HotSpot 8's, which matters when
    /// GC threads outnumber CPUs.
    pub const SHORT: Backoff = Backoff {
        hard_spins: 32,
        spin_to_yield_ratio: 5,
        yields_before_sleep: 500,
        sleep: Duration::from_micros(50),
    };

    /// A fresh waiting state for one offer.
    pub fn start(self) -> Waiting {
        let first = (self.hard_spins >> self.spin_to_yield_ratio.min(31)).max(1);
        Waiting {
            backoff: self,
            steps: 0,
            spins_since_yield: 0,
            spin_limit: first,
            first_spin: first,
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

/// The state of HotSpot 8's waiting loop during one offer.
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
        let b = self.backoff;
        if self.steps > b.yields_before_sleep {
            self.steps = 0;
            return Pause::Sleep;
        }
        self.steps += 1;
        if self.spins_since_yield > b.spin_to_yield_ratio {
            thread::yield_now();
            self.spins_since_yield = 0;
            self.spin_limit = self.first_spin;
        } else {
            self.spin_limit = self.spin_limit.saturating_mul(2).min(b.hard_spins.max(1));
            for _ in 0..self.spin_limit {
                hint::spin_loop();
            }
            self.spins_since_yield += 1;
        }
        Pause::Waited
    }

    /// How long a sleep lasts.
    pub fn sleep_time(&self) -> Duration {
        self.backoff.sleep
    }
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
    fn short_schedule_yields_early() {
        let mut w = Backoff::SHORT.start();
        let mut steps = 0;
        while w.step() == Pause::Waited {
            steps += 1;
        }
        assert_eq!(steps, 501);
        assert_eq!(w.sleep_time(), Duration::from_micros(50));
    }
}
