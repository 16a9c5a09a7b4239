//! Context switches of mutator threads (001 §4.1: FIFO has fewer of them): each mutator's
//! voluntary and involuntary switch counters from `/proc/self/task/<tid>/status`, read when it
//! attaches and again when it detaches (from the thread itself, so threads that end are
//! counted), the difference summed over the run's mutators.

use std::io;
use std::ops::{Add, AddAssign};

use serde::{Deserialize, Serialize};

use crate::os::procfs;

/// Voluntary and involuntary context switches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextSwitches {
    /// The thread gave up its CPU (it blocked or slept): `voluntary_ctxt_switches`.
    pub voluntary: u64,
    /// The scheduler took the CPU from it (preemption): `nonvoluntary_ctxt_switches`.
    pub involuntary: u64,
}

impl ContextSwitches {
    /// The counters of a `/proc/.../status` text; `None` when either line is missing.
    pub fn parse(status: &str) -> Option<ContextSwitches> {
        Some(ContextSwitches {
            voluntary: procfs::field_value(status, "voluntary_ctxt_switches")?,
            involuntary: procfs::field_value(status, "nonvoluntary_ctxt_switches")?,
        })
    }

    /// The counters of thread `tid` of this process so far.
    pub fn of_thread(tid: i32) -> io::Result<ContextSwitches> {
        let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/status"))?;
        Self::parse(&text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("/proc/self/task/{tid}/status has no context switch counters"),
            )
        })
    }

    /// The switches since `earlier` (counters only grow; a smaller one counts as none).
    pub fn since(self, earlier: ContextSwitches) -> ContextSwitches {
        ContextSwitches {
            voluntary: self.voluntary.saturating_sub(earlier.voluntary),
            involuntary: self.involuntary.saturating_sub(earlier.involuntary),
        }
    }
}

impl Add for ContextSwitches {
    type Output = ContextSwitches;
    fn add(self, other: ContextSwitches) -> ContextSwitches {
        ContextSwitches {
            voluntary: self.voluntary + other.voluntary,
            involuntary: self.involuntary + other.involuntary,
        }
    }
}

impl AddAssign for ContextSwitches {
    fn add_assign(&mut self, other: ContextSwitches) {
        *self = *self + other;
    }
}

impl std::iter::Sum for ContextSwitches {
    fn sum<I: Iterator<Item = ContextSwitches>>(iter: I) -> ContextSwitches {
        iter.fold(ContextSwitches::default(), Add::add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::sched;

    #[test]
    fn parses_the_status_counters() {
        let text = "Name:\tworker\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t17\n\
                    nonvoluntary_ctxt_switches:\t3\n";
        assert_eq!(
            ContextSwitches::parse(text),
            Some(ContextSwitches {
                voluntary: 17,
                involuntary: 3
            })
        );
        assert_eq!(
            ContextSwitches::parse("voluntary_ctxt_switches:\t1\n"),
            None
        );
        let a = ContextSwitches {
            voluntary: 5,
            involuntary: 9,
        };
        let b = ContextSwitches {
            voluntary: 2,
            involuntary: 10,
        };
        assert_eq!(
            a.since(b),
            ContextSwitches {
                voluntary: 3,
                involuntary: 0
            }
        );
        assert_eq!([a, b].into_iter().sum::<ContextSwitches>(), a + b);
        assert_eq!((a + b).involuntary, 19);
    }

    #[test]
    fn sleeping_k_times_is_at_least_k_voluntary_switches() {
        let before = ContextSwitches::of_thread(sched::current_tid()).unwrap();
        for _ in 0..5 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let after = ContextSwitches::of_thread(sched::current_tid()).unwrap();
        assert!(after.since(before).voluntary >= 5, "{before:?} → {after:?}");
        assert!(ContextSwitches::of_thread(-1).is_err());
    }
}
