//! `best-of-2` (OpenJDK 8 `GenericTaskQueueSet::steal_best_of_2`, 000 §2.3): two uniformly
//! random other workers, the longer deque wins. Workers inside the termination protocol are
//! candidates like any other, and nothing is remembered between attempts.

use super::{VictimQueues, VictimSelector};

pub(super) fn select(
    v: &mut VictimSelector,
    me: usize,
    queues: &impl VictimQueues,
) -> Option<usize> {
    let first = v.random_other(queues.count(), me, None);
    v.best_of_two(me, queues, first)
}
