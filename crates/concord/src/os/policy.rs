//! The OS-side switches of DESIGN.md: where GC threads run and how mutator threads are
//! scheduled. Each parses from the name users write and displays as that name.

use std::fmt;
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

/// The default sampling period of the adaptive mutator scheduling policy (001 §5.2).
pub const DEFAULT_ADAPTIVE_PERIOD: Duration = Duration::from_secs(2);

/// How mutator threads are scheduled (001).
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
    /// 001 Algorithm 2: sample the set of live thread ids every period and switch between FIFO
    /// (the set changes) and CFS (it stays the same).
    Adaptive(Duration),
}

impl MutatorSched {
    /// The allowed forms, for error messages.
    pub const ALLOWED: &'static str = "cfs, fifo, profile:PATH, adaptive or adaptive:SECONDS";

    /// The name of the policy without its argument.
    pub fn kind(&self) -> &'static str {
        match self {
            MutatorSched::Cfs => "cfs",
            MutatorSched::Fifo => "fifo",
            MutatorSched::Profile(_) => "profile",
            MutatorSched::Adaptive(_) => "adaptive",
        }
    }
}

impl fmt::Display for MutatorSched {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MutatorSched::Cfs | MutatorSched::Fifo => f.write_str(self.kind()),
            MutatorSched::Profile(p) => write!(f, "profile:{}", p.display()),
            MutatorSched::Adaptive(d) => write!(f, "adaptive:{}", d.as_secs_f64()),
        }
    }
}

impl FromStr for MutatorSched {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (kind, arg) = match text.split_once(':') {
            Some((k, a)) => (k.to_ascii_lowercase(), Some(a)),
            None => (text.to_ascii_lowercase(), None),
        };
        let bad = || {
            format!(
                "is not a mutator scheduling policy (allowed: {})",
                Self::ALLOWED
            )
        };
        match (kind.as_str(), arg) {
            ("cfs", None) => Ok(MutatorSched::Cfs),
            ("fifo", None) => Ok(MutatorSched::Fifo),
            ("profile", Some(path)) if !path.trim().is_empty() => {
                Ok(MutatorSched::Profile(PathBuf::from(path.trim())))
            }
            ("profile", _) => Err("needs a file: profile:PATH (e.g. profile:gcbench.profile)".into()),
            ("adaptive", None) => Ok(MutatorSched::Adaptive(DEFAULT_ADAPTIVE_PERIOD)),
            ("adaptive", Some(secs)) => match secs.trim().parse::<f64>() {
                Ok(s) if s.is_finite() && (0.01..=3600.0).contains(&s) => {
                    Ok(MutatorSched::Adaptive(Duration::from_secs_f64(s)))
                }
                _ => Err(format!(
                    "has a bad sampling period '{secs}' (allowed: seconds from 0.01 to 3600, e.g. adaptive:2)"
                )),
            },
            _ => Err(bad()),
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
        assert_eq!("fifo".parse::<MutatorSched>().unwrap(), MutatorSched::Fifo);
        assert_eq!(
            "adaptive".parse::<MutatorSched>().unwrap(),
            MutatorSched::Adaptive(DEFAULT_ADAPTIVE_PERIOD)
        );
        assert_eq!(
            "adaptive:0.5".parse::<MutatorSched>().unwrap().to_string(),
            "adaptive:0.5"
        );
        assert_eq!(
            "profile:/tmp/p".parse::<MutatorSched>().unwrap(),
            MutatorSched::Profile("/tmp/p".into())
        );
        assert!("profile:"
            .parse::<MutatorSched>()
            .unwrap_err()
            .contains("profile:PATH"));
        assert!("adaptive:0"
            .parse::<MutatorSched>()
            .unwrap_err()
            .contains("0.01 to 3600"));
        assert!("rr"
            .parse::<MutatorSched>()
            .unwrap_err()
            .contains("cfs, fifo"));
    }
}
