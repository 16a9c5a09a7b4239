//! `fixed` termination (OpenJDK 8 `ParallelTaskTerminator`, 004 §2.3.3): a worker offers after
//! `2·N` consecutive failed steals, `N` being every worker of the phase, and waits in HotSpot 8's
//! spin/yield/sleep loop with its default constants.

use super::Backoff;

/// OpenJDK 8's waiting constants (`WorkStealingHardSpins` 4096, `SpinToYieldRatio` 10,
/// `YieldsBeforeSleep` 5000, `SleepMillis` 1).
pub const BACKOFF: Backoff = Backoff::HOTSPOT8;

/// Failed steals before an offer: `2·N` (`GenericTaskQueueSet::steal` tries `2 * _n` times).
pub fn failure_threshold(workers: usize) -> usize {
    2 * workers
}
