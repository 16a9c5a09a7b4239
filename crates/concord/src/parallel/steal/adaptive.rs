//! `adaptive` (000 Algorithm 2, adaptive and semi-random stealing): the first candidate is a
//! random live worker (one not inside the termination protocol); the second is the remembered
//! queue `q_s` while it is non-empty (lines 19–20), otherwise another random live worker. The
//! longer deque is the pick, and a non-empty pick is remembered as `q_s` whether or not the
//! steal from it then succeeds (line 7); when both candidates are empty `q_s` is forgotten
//! (line 25). The engine also forgets it on entering termination (line 11), and the `live`
//! termination protocol supplies the `2·N_live` attempt budget (line 4).

use super::{longer, Terminator, VictimQueues, VictimSelector};

/// Random draws among all workers before falling back to a scan of the live ones. A scan looks
/// at every worker, so it should be rare: 32 draws find a live worker with probability above
/// 7/8 while at least one worker in sixteen is live. (With 2 draws and a two-pass scan, a phase
/// of a thousand workers on one CPU spent seconds here, most workers being inside the
/// termination protocol: a cost that grew with the cube of the workers.) Never more draws than
/// workers: below that, the scan is the cheaper way to find out that nobody is live.
const LIVE_DRAWS: usize = 32;

pub(super) fn select(
    v: &mut VictimSelector,
    me: usize,
    queues: &impl VictimQueues,
    term: &Terminator,
) -> Option<usize> {
    let n = queues.count();
    let live = |w: usize| term.is_live(queues.worker(w));
    let first = random_live_by(v, n, me, None, &live);
    let remembered = v
        .last_victim
        .filter(|&w| w != me && w < n && queues.len(w) > 0);
    let second = remembered.or_else(|| random_live_by(v, n, me, first, &live));
    let pick = match (first, second) {
        (Some(a), Some(b)) => longer(queues, a, b),
        (Some(a), None) | (None, Some(a)) => longer(queues, a, a),
        (None, None) => None,
    };
    v.last_victim = pick;
    pick
}

/// Uniform among live workers other than `me` and `avoid`; `None` if there are none. Plain
/// random draws first (cheap while many workers are live), then one scan, so a live worker is
/// found whenever one exists.
#[cfg(test)]
pub(super) fn random_live(
    v: &mut VictimSelector,
    n: usize,
    me: usize,
    avoid: Option<usize>,
    term: &Terminator,
) -> Option<usize> {
    random_live_by(v, n, me, avoid, &|w| term.is_live(w))
}

/// [`random_live`] with liveness of candidate `w` given by `live(w)` (candidates may be a
/// subset of the workers, see [`VictimQueues::worker`]).
fn random_live_by(
    v: &mut VictimSelector,
    n: usize,
    me: usize,
    avoid: Option<usize>,
    live: &impl Fn(usize) -> bool,
) -> Option<usize> {
    let eligible = |w: usize| w != me && Some(w) != avoid && live(w);
    let draws = LIVE_DRAWS.min(n);
    for draw in 1..=draws {
        let w = v.rng.below(n);
        if eligible(w) {
            v.live_lookups += draw as u64;
            return Some(w);
        }
    }
    // Reservoir sampling in one pass: the k-th eligible worker replaces the pick with
    // probability 1/k, so the pick is uniform among those eligible when the scan saw them
    // (the live set may change under us).
    v.live_lookups += (draws + n) as u64;
    let mut pick = None;
    let mut eligible_seen = 0;
    for w in (0..n).filter(|&w| eligible(w)) {
        eligible_seen += 1;
        if v.rng.below(eligible_seen) == 0 {
            pick = Some(w);
        }
    }
    pick
}
