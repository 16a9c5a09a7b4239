//! The OS-side switches of DESIGN.md: where GC threads run and how mutator threads are
//! scheduled. Each parses from the name users write and displays as that name; both are
//! declared with `switch!`, mutator scheduling as a kind plus its argument.

use std::fmt;
use std::ops::RangeInclusive;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

switch! {
    /// Where GC worker threads may run.
    GcAffinity, "GC affinity" {
        /// Threads are left to the OS scheduler.
        None => "none",
        /// Worker `i` is pinned to the `i`-th usable CPU (what `BindGCTaskThreadsToCPUs` intended).
        Static => "static",
        /// 000 Algorithm 1: at the start of each collection a worker on a CPU with load at least
        /// twice the average moves to a random CPU with load at most half the average.
        Dynamic => "dynamic",
    }
}

switch! {
    /// The mutator scheduling policies, without their arguments.
    MutatorSchedKind, "mutator scheduling policy" {
        /// The default Linux scheduler (SCHED_OTHER).
        Cfs => "cfs",
        /// SCHED_FIFO for every mutator thread.
        Fifo => "fifo",
        /// 001 Algorithm 1, from a per-thread CPU-time profile.
        Profile => "profile",
        /// 001 Algorithm 2 as listed, from samples of the live thread ids.
        Adaptive => "adaptive",
        /// 001 §5.2's prose variant of Algorithm 2: re-decides at every sample.
        AdaptiveMajority => "adaptive-majority",
    }
}

switch! {
    /// The threads the mutator scheduling policy puts under SCHED_FIFO when it chooses FIFO.
    #[derive(Default)]
    FifoScope, "FIFO scope" {
        /// The mutator threads only.
        #[default]
        Mutators => "mutators",
        /// The mutators, the VM thread and the GC workers: the whole runtime, as 001 ran the
        /// whole JVM under FIFO.
        All => "all",
    }
}

/// The default sampling period of the adaptive mutator scheduling policies (001 §5.2).
pub const DEFAULT_ADAPTIVE_PERIOD: Duration = Duration::from_secs(2);

/// The sampling periods `adaptive:SECONDS` allows, in seconds.
pub const ADAPTIVE_PERIOD_SECONDS: RangeInclusive<f64> = 0.01..=3600.0;

/// How mutator threads are scheduled (001): a [`MutatorSchedKind`] with its argument.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum MutatorSched {
    /// The default Linux scheduler (SCHED_OTHER).
    Cfs,
    /// SCHED_FIFO for every mutator thread.
    Fifo,
    /// 001 Algorithm 1: use the per-thread CPU-time profile in this file if it exists (FIFO
    /// when work is spread evenly over many threads, CFS when a few threads do most of it);
    /// otherwise run under CFS and record the profile there.
    Profile(PathBuf),
    /// 001 Algorithm 2 as listed: start under FIFO; every period collect the live thread ids;
    /// stay under FIFO while they are all new, and switch to CFS for good at the first sample
    /// that sees a thread again.
    Adaptive(Duration),
    /// 001 §5.2's prose: start under CFS and re-decide at every sample, FIFO when most of the
    /// live thread ids are new since the previous sample, CFS when they are mostly the same.
    AdaptiveMajority(Duration),
}

impl MutatorSched {
    /// The allowed forms, for error messages.
    pub const ALLOWED: &'static str =
        "cfs, fifo, profile:PATH, adaptive[:SECONDS] or adaptive-majority[:SECONDS]";

    /// The policy without its argument.
    pub fn kind(&self) -> MutatorSchedKind {
        match self {
            MutatorSched::Cfs => MutatorSchedKind::Cfs,
            MutatorSched::Fifo => MutatorSchedKind::Fifo,
            MutatorSched::Profile(_) => MutatorSchedKind::Profile,
            MutatorSched::Adaptive(_) => MutatorSchedKind::Adaptive,
            MutatorSched::AdaptiveMajority(_) => MutatorSchedKind::AdaptiveMajority,
        }
    }

    /// The sampling period of the adaptive policies.
    pub fn sampling_period(&self) -> Option<Duration> {
        match self {
            MutatorSched::Adaptive(period) | MutatorSched::AdaptiveMajority(period) => {
                Some(*period)
            }
            _ => None,
        }
    }

    /// Why the argument is unusable (an empty profile path, a sampling period outside
    /// [`ADAPTIVE_PERIOD_SECONDS`]), in the words the parser uses; `Ok` for a usable one. For
    /// policies built in code, which did not go through the parser.
    pub fn check_argument(&self) -> Result<(), String> {
        match self {
            MutatorSched::Profile(path) if path.as_os_str().is_empty() => Err(needs_a_file()),
            MutatorSched::Adaptive(period) | MutatorSched::AdaptiveMajority(period)
                if !ADAPTIVE_PERIOD_SECONDS.contains(&period.as_secs_f64()) =>
            {
                Err(bad_period(period.as_secs_f64()))
            }
            _ => Ok(()),
        }
    }
}

fn needs_a_file() -> String {
    "needs a file: profile:PATH (e.g. profile:gcbench.profile)".into()
}

fn bad_period(seconds: impl fmt::Display) -> String {
    format!(
        "has a bad sampling period '{seconds}' (allowed: seconds from 0.01 to 3600, e.g. \
         adaptive:2)"
    )
}

impl fmt::Display for MutatorSched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutatorSched::Cfs | MutatorSched::Fifo => f.write_str(self.kind().name()),
            MutatorSched::Profile(p) => write!(f, "profile:{}", p.display()),
            MutatorSched::Adaptive(d) | MutatorSched::AdaptiveMajority(d) => {
                write!(f, "{}:{}", self.kind().name(), d.as_secs_f64())
            }
        }
    }
}

impl FromStr for MutatorSched {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k, Some(a)),
            None => (text, None),
        };
        let bad = || {
            format!(
                "is not a mutator scheduling policy (allowed: {})",
                Self::ALLOWED
            )
        };
        // Space around the kind ("adaptive :2") is not accepted.
        let kind: MutatorSchedKind = match kind.trim() == kind {
            true => kind.parse().map_err(|_| bad())?,
            false => return Err(bad()),
        };
        match (kind, arg) {
            (MutatorSchedKind::Cfs, None) => Ok(MutatorSched::Cfs),
            (MutatorSchedKind::Fifo, None) => Ok(MutatorSched::Fifo),
            (MutatorSchedKind::Cfs | MutatorSchedKind::Fifo, Some(_)) => Err(bad()),
            (MutatorSchedKind::Profile, Some(path)) if !path.trim().is_empty() => {
                Ok(MutatorSched::Profile(PathBuf::from(path.trim())))
            }
            (MutatorSchedKind::Profile, _) => Err(needs_a_file()),
            (MutatorSchedKind::Adaptive | MutatorSchedKind::AdaptiveMajority, arg) => {
                let period = match arg {
                    None => DEFAULT_ADAPTIVE_PERIOD,
                    Some(secs) => match secs.trim().parse::<f64>() {
                        Ok(s) if ADAPTIVE_PERIOD_SECONDS.contains(&s) => Duration::from_secs_f64(s),
                        _ => return Err(bad_period(secs)),
                    },
                };
                Ok(if kind == MutatorSchedKind::Adaptive {
                    MutatorSched::Adaptive(period)
                } else {
                    MutatorSched::AdaptiveMajority(period)
                })
            }
        }
    }
}

impl serde::Serialize for MutatorSched {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        assert_eq!("Static".parse::<GcAffinity>().unwrap(), GcAffinity::Static);
        assert!("pinned"
            .parse::<GcAffinity>()
            .unwrap_err()
            .contains("none, static, dynamic"));
        let parsed = |text: &str| text.parse::<MutatorSched>();
        for (text, policy) in [
            ("fifo", MutatorSched::Fifo),
            ("adaptive", MutatorSched::Adaptive(DEFAULT_ADAPTIVE_PERIOD)),
            (
                " Adaptive: 0.25 ",
                MutatorSched::Adaptive(Duration::from_millis(250)),
            ),
            ("profile:/tmp/p", MutatorSched::Profile("/tmp/p".into())),
        ] {
            assert_eq!(parsed(text), Ok(policy), "{text}");
        }
        assert_eq!(parsed("adaptive:0.5").unwrap().to_string(), "adaptive:0.5");
        assert_eq!(
            parsed("adaptive-majority"),
            Ok(MutatorSched::AdaptiveMajority(DEFAULT_ADAPTIVE_PERIOD))
        );
        let majority = parsed("adaptive-majority:0.5").unwrap();
        assert_eq!(majority.to_string(), "adaptive-majority:0.5");
        assert_eq!(majority.sampling_period(), Some(Duration::from_millis(500)));
        assert_eq!(MutatorSched::Fifo.sampling_period(), None);
        assert!(parsed("adaptive-majority:0")
            .unwrap_err()
            .contains("0.01 to 3600"));
        assert_eq!(
            parsed("PROFILE:x").unwrap().kind(),
            MutatorSchedKind::Profile
        );
        for (text, reason) in [
            ("profile:", "profile:PATH"),
            ("adaptive:0", "0.01 to 3600"),
            ("adaptive:NaN", "'NaN'"),
            ("adaptive:inf", "'inf'"),
            ("rr", "cfs, fifo"),
            ("fifo:2", "is not a mutator scheduling policy"),
            ("adaptive :2", "is not a mutator scheduling policy"),
        ] {
            let err = parsed(text).unwrap_err();
            assert!(err.contains(reason), "{text}: {err}");
        }
        // The same reasons for a policy built in code.
        let check = |policy: MutatorSched| policy.check_argument();
        assert!(check(MutatorSched::Profile(PathBuf::new()))
            .unwrap_err()
            .contains("profile:PATH"));
        assert!(check(MutatorSched::Adaptive(Duration::ZERO))
            .unwrap_err()
            .contains("'0'"));
        assert_eq!(
            check(MutatorSched::Adaptive(Duration::from_millis(10))),
            Ok(())
        );
        assert_eq!(
            check(MutatorSched::Adaptive(Duration::from_secs(3600))),
            Ok(())
        );
        assert_eq!(check(MutatorSched::Fifo), Ok(()));
    }
}
