//! `last-victim` (HotSpot 17+): best-of-2 whose first candidate is the last worker a steal
//! succeeded from — even if its deque now looks empty — and whose second is random. As in
//! HotSpot, the remembered victim only survives a successful steal: selecting consumes it and
//! [`VictimSelector::record_success`] puts it back, so an attempt that finds both candidates
//! empty, or whose steal then fails, forgets it.

use super::{VictimQueues, VictimSelector};

pub(super) fn select(
    v: &mut VictimSelector,
    me: usize,
    queues: &impl VictimQueues,
) -> Option<usize> {
    let n = queues.count();
    let first = match v.last_victim.take() {
        Some(w) if w != me && w < n => w,
        _ => v.random_other(n, me, None),
    };
    v.best_of_two(me, queues, first)
}
