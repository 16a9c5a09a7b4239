//! `adaptive` (000 Algorithm 2, adaptive and semi-random stealing): the first candidate is a
//! random live worker (one not inside the termination protocol); the second is the remembered
//! queue `q_s` while it is non-empty (lines 19–20), otherwise another random live worker. The
//! longer deque is the pick, and a non-empty pick is remembered as `q_s` whether or not the
//! steal from it then succeeds (line 7); when both candidates are empty `q_s` is forgotten
//! (line 25). The engine also forgets it on entering termination (line 11), and the `live`
//! termination protocol supplies the `2·N_live` attempt budget (line 4).

use super::{longer, Terminator, VictimQueues, VictimSelector};

/// Random draws among all workers before falling back to an exact scan of the live ones.
const LIVE_DRAWS: usize = 2;

pub(super) fn select(
    v: &mut VictimSelector,
    me: usize,
    queues: &impl VictimQueues,
    term: &Terminator,
) -> Option<usize> {
    let n = queues.count();
    let first = random_live(v, n, me, None, term);
    let remembered = v
        .last_victim
        .filter(|&w| w != me && w < n && queues.len(w) > 0);
    let second = remembered.or_else(|| random_live(v, n, me, first, term));
    let pick = match (first, second) {
        (Some(a), Some(b)) => longer(queues, a, b),
        (Some(a), None) | (None, Some(a)) => longer(queues, a, a),
        (None, None) => None,
    };
    v.last_victim = pick;
    pick
}

/// Uniform among live workers other than `me` and `avoid`; `None` if there are none. A couple
/// of plain random draws first (cheap while most workers are live), then an exact scan, so a
/// live worker is found whenever one exists.
fn random_live(
    v: &mut VictimSelector,
    n: usize,
    me: usize,
    avoid: Option<usize>,
    term: &Terminator,
) -> Option<usize> {
    let eligible = |w: usize| w != me && Some(w) != avoid && term.is_live(w);
    for _ in 0..LIVE_DRAWS {
        let w = v.rng.below(n);
        if eligible(w) {
            return Some(w);
        }
    }
    let count = (0..n).filter(|&w| eligible(w)).count();
    if count == 0 {
        return None;
    }
    // The live set may change under us; take the k-th still eligible, else the last seen.
    let k = v.rng.below(count);
    let mut last = None;
    for (i, w) in (0..n).filter(|&w| eligible(w)).enumerate() {
        if i == k {
            return Some(w);
        }
        last = Some(w);
    }
    last
}
