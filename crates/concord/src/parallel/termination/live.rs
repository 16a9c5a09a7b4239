//! `live` termination (000 §4.2, the paper's `FastParallelTaskTerminator`): a worker offers
//! after `2·N_live` consecutive failed steals, `N_live` being the workers not yet inside the
//! protocol, so that near the end of a phase, with few workers left to steal from, it stops
//! sooner. Under `termination-backoff auto` it waits in the same loop as `fixed`, with shorter
//! constants; `hotspot8` gives it `fixed`'s loop, as in 000's JVM.

use super::Backoff;

/// Concord's staged waiting loop: gives the CPU back sooner when GC threads outnumber CPUs.
pub const BACKOFF: Backoff = Backoff::SHORT;

/// Failed steals before an offer: `2·N_live`.
pub fn failure_threshold(live_workers: usize) -> usize {
    2 * live_workers
}
