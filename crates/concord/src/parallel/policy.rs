//! The run-time switches of the parallel phase (DESIGN.md, "Mechanisms and presets"): how root
//! tasks are handed out, how thieves choose victims, how workers agree the phase is over, and
//! how idle workers sleep between collections.
//!
//! Every switch parses from the name users write (`monitor`, `best-of-2`, ...) and displays as
//! that name; a bad name is an error listing the allowed ones.

switch! {
    /// Where workers get root tasks from.
    TaskQueueKind, "task queue" {
        /// One global FIFO behind the unfair HotSpot-style monitor (000 §2.4).
        Monitor => "monitor",
        /// No shared queue: atomic claiming; card stripes statically by worker id (HotSpot 17+).
        Claim => "claim",
        /// Michael–Scott lock-free queue, single enqueuer, CAS dequeues (004 §3.1.1).
        LockFree => "lockfree",
    }
}

switch! {
    /// How a thief picks the deque to steal from.
    StealPolicy, "steal policy" {
        /// Two random deques, steal from the longer (000 §2.3).
        BestOf2 => "best-of-2",
        /// Best-of-2 whose first candidate is the last successful victim (HotSpot 17+).
        LastVictim => "last-victim",
        /// 000 Algorithm 2: remembered victim while non-empty, only live workers as victims.
        Adaptive => "adaptive",
    }
}

switch! {
    /// How workers agree that every deque is empty.
    TerminationKind, "termination protocol" {
        /// Enter after 2·N failed steals; spin, yield, sleep and peek (004 §2.3.3).
        Fixed => "fixed",
        /// One spinning master, the others sleep with a timeout and are woken for work (OWST).
        Owst => "owst",
        /// Enter after 2·N_live failed steals, N_live = workers not terminating (000 §4.2).
        Live => "live",
    }
}

switch! {
    /// How a worker inside the termination protocol waits between two looks at the other
    /// deques, apart from when it enters (which [`TerminationKind`] decides), so that 000's
    /// `2·N_live` threshold can be measured with and without Concord's shorter loop.
    TerminationBackoff, "termination backoff" {
        /// The protocol's own loop: HotSpot 8's for `fixed`, Concord's for `live`, Concord's
        /// with 1 ms naps for the `owst` spin master.
        Auto => "auto",
        /// HotSpot 8's spin/yield/sleep loop with its default constants (for `owst`: for the
        /// spin master).
        HotSpot8 => "hotspot8",
        /// Concord's short loop: a few spins, 500 yields, then 50 µs sleeps (in no paper).
        Concord => "concord",
    }
}

switch! {
    /// How idle GC workers sleep between collections and how the end of a phase is detected.
    ParkingKind, "parking mode" {
        /// Wait/notify_all on the task-manager monitor, final-task leader barrier (004 §2.3.3).
        Monitor => "monitor",
        /// Lazy parking: futex wait on a collection epoch, no lock, no final barrier (004 §3.1.2).
        Futex => "futex",
    }
}

/// The switches a parallel phase runs under (the per-phase part of a preset).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PhasePolicy {
    /// Root task hand-out.
    pub task_queue: TaskQueueKind,
    /// Whether root tasks carry a preferred worker that `get_task` honours first.
    pub task_affinity: bool,
    /// Victim selection.
    pub steal: StealPolicy,
    /// Termination protocol (when a worker enters it).
    pub termination: TerminationKind,
    /// How a worker waits inside the termination protocol.
    pub termination_backoff: TerminationBackoff,
}

impl PhasePolicy {
    /// The papers' fixes: lock-free queue with task affinity, adaptive stealing, live termination.
    pub const OPTIMIZED: PhasePolicy = PhasePolicy {
        task_queue: TaskQueueKind::LockFree,
        task_affinity: true,
        steal: StealPolicy::Adaptive,
        termination: TerminationKind::Live,
        termination_backoff: TerminationBackoff::Auto,
    };
    /// HotSpot 17+: claiming, last-victim best-of-2, OWST termination.
    pub const MODERN: PhasePolicy = PhasePolicy {
        task_queue: TaskQueueKind::Claim,
        task_affinity: false,
        steal: StealPolicy::LastVictim,
        termination: TerminationKind::Owst,
        termination_backoff: TerminationBackoff::Auto,
    };
    /// OpenJDK 8 Parallel Scavenge: monitor queue, best-of-2, fixed 2·N termination.
    pub const VANILLA: PhasePolicy = PhasePolicy {
        task_queue: TaskQueueKind::Monitor,
        task_affinity: false,
        steal: StealPolicy::BestOf2,
        termination: TerminationKind::Fixed,
        // Named rather than `auto`, so that `--termination live` on vanilla changes the
        // threshold alone (000 §4.2 on OpenJDK 8).
        termination_backoff: TerminationBackoff::HotSpot8,
    };
    /// 000's optimized JVM (OpenJDK 8 with its fixes): the monitor queue kept, task affinity,
    /// adaptive stealing with `2·N_live` termination, and HotSpot 8's waiting loop.
    pub const SUO18: PhasePolicy = PhasePolicy {
        task_queue: TaskQueueKind::Monitor,
        task_affinity: true,
        steal: StealPolicy::Adaptive,
        termination: TerminationKind::Live,
        termination_backoff: TerminationBackoff::HotSpot8,
    };
    /// 004's NAPS: the lock-free queue on an otherwise unchanged Parallel Scavenge (best-of-2,
    /// `2·N` termination with HotSpot's waiting loop).
    pub const NAPS: PhasePolicy = PhasePolicy {
        task_queue: TaskQueueKind::LockFree,
        task_affinity: false,
        steal: StealPolicy::BestOf2,
        termination: TerminationKind::Fixed,
        termination_backoff: TerminationBackoff::HotSpot8,
    };
}

impl PhasePolicy {
    /// Every combination of the first four switches (3 × 2 × 3 × 3 = 54), task queue
    /// outermost, each with the protocol's own backoff (`auto`); the backoff is crossed with
    /// the termination protocols separately, where it matters.
    pub fn all() -> impl Iterator<Item = PhasePolicy> {
        TaskQueueKind::ALL.iter().flat_map(|&task_queue| {
            [false, true].into_iter().flat_map(move |task_affinity| {
                StealPolicy::ALL.iter().flat_map(move |&steal| {
                    TerminationKind::ALL
                        .iter()
                        .map(move |&termination| PhasePolicy {
                            task_queue,
                            task_affinity,
                            steal,
                            termination,
                            termination_backoff: TerminationBackoff::Auto,
                        })
                })
            })
        })
    }
}

impl Default for PhasePolicy {
    fn default() -> Self {
        PhasePolicy::OPTIMIZED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_bad_names_list_the_allowed_ones() {
        for v in TaskQueueKind::ALL {
            assert_eq!(v.name().parse::<TaskQueueKind>().unwrap(), *v);
        }
        for v in StealPolicy::ALL {
            assert_eq!(v.to_string().parse::<StealPolicy>().unwrap(), *v);
        }
        assert_eq!(
            "OWST".parse::<TerminationKind>().unwrap(),
            TerminationKind::Owst
        );
        let err = "fair".parse::<ParkingKind>().unwrap_err();
        assert_eq!(err, "is not a parking mode (allowed: monitor, futex)");
        let err = "random".parse::<StealPolicy>().unwrap_err();
        assert!(err.contains("best-of-2, last-victim, adaptive"), "{err}");
    }

    #[test]
    fn all_lists_every_combination_once() {
        let all: Vec<PhasePolicy> = PhasePolicy::all().collect();
        assert_eq!(all.len(), 54);
        let distinct: std::collections::HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), 54);
        for preset in [
            PhasePolicy {
                termination_backoff: TerminationBackoff::Auto,
                ..PhasePolicy::VANILLA
            },
            PhasePolicy::MODERN,
            PhasePolicy::OPTIMIZED,
            PhasePolicy {
                termination_backoff: TerminationBackoff::Auto,
                ..PhasePolicy::SUO18
            },
            PhasePolicy {
                termination_backoff: TerminationBackoff::Auto,
                ..PhasePolicy::NAPS
            },
        ] {
            assert!(all.contains(&preset));
        }
    }
}
