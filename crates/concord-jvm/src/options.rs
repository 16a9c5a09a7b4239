//! The agent's option string (`-agentpath:libconcord_jvm.so=<options>`): comma-separated
//! `key=value` pairs, all optional. The CLI (`concord jvm`) builds the same string with
//! [`AgentOptions::to_option_string`], so the two sides share one grammar.
//!
//! | key | values | default |
//! | --- | --- | --- |
//! | `gc-affinity` | `none`, `static`, `dynamic` | `none` |
//! | `mutator-sched` | `cfs`, `fifo`, `profile:PATH`, `adaptive`, `adaptive:SECONDS` | `cfs` |
//! | `fifo-scope` | `mutators`, `all` | `mutators` |
//! | `records` | a file path (JSON lines, one per GC event) | none |
//! | `report` | a file path (JSON written at VM death) | none |
//! | `proc-stat` | a `/proc/stat`-format file `dynamic` reads CPU busy times from (tests, experiments) | `/proc/stat` |
//! | `outcome` | a file path: at VM death, what became of the outputs (JSON, [`crate::report::Outcome`]); `concord jvm run` reads it | none |
//!
//! A value never contains `,`. Every problem is an [`OptionError`] whose text names what was
//! wrong and what is allowed.

use std::fmt;
use std::path::{Path, PathBuf};

pub use concord::os::policy::{FifoScope, GcAffinity, MutatorSched};

/// The keys the agent understands, for error messages.
pub const KEYS: &str =
    "gc-affinity, mutator-sched, fifo-scope, records, report, proc-stat, outcome";

/// A bad option string: what was wrong and what is allowed. Displayed as
/// `<what was wrong>; allowed: <list>` (the agent prefixes `concord-jvm: `).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// What was wrong, naming the key and the value.
    pub problem: String,
    /// What is allowed there.
    pub allowed: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}; allowed: {}", self.problem, self.allowed)
    }
}

impl std::error::Error for OptionError {}

/// The parsed options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentOptions {
    /// Where GC worker threads run.
    pub gc_affinity: GcAffinity,
    /// How Java threads are scheduled (001).
    pub mutator_sched: MutatorSched,
    /// Which threads FIFO covers.
    pub fifo_scope: FifoScope,
    /// Per-GC records (JSON lines).
    pub records: Option<PathBuf>,
    /// The report written at VM death.
    pub report: Option<PathBuf>,
    /// Where `dynamic` reads the CPUs' busy times (`None`: `/proc/stat`). Lets a test or an
    /// experiment set the load Algorithm 1 sees.
    pub proc_stat: Option<PathBuf>,
    /// Where the agent says, at VM death, which outputs it wrote and what it lost
    /// ([`crate::report::Outcome`]), for the `concord jvm run` that started the JVM.
    pub outcome: Option<PathBuf>,
}

impl Default for AgentOptions {
    fn default() -> Self {
        Self {
            gc_affinity: GcAffinity::None,
            mutator_sched: MutatorSched::Cfs,
            fifo_scope: FifoScope::Mutators,
            records: None,
            report: None,
            proc_stat: None,
            outcome: None,
        }
    }
}

impl AgentOptions {
    /// Parse an option string (`None` or empty: all defaults). A key given twice is an error,
    /// so a later duplicate never silently wins.
    pub fn parse(text: Option<&str>) -> Result<Self, OptionError> {
        let mut options = AgentOptions::default();
        let mut seen: Vec<&str> = Vec::new();
        let text = text.unwrap_or("");
        if text.trim().is_empty() {
            return Ok(options);
        }
        for item in text.split(',') {
            let Some((key, value)) = item.split_once('=') else {
                return Err(OptionError {
                    problem: format!("option '{item}' is not key=value"),
                    allowed: format!("comma-separated key=value with keys {KEYS}"),
                });
            };
            if seen.contains(&key) {
                return Err(OptionError {
                    problem: format!("option '{key}' is given twice"),
                    allowed: format!("each of {KEYS} at most once"),
                });
            }
            seen.push(key);
            let bad_value = |allowed: &str| OptionError {
                problem: format!("bad value '{value}' for option '{key}'"),
                allowed: allowed.to_string(),
            };
            match key {
                "gc-affinity" => {
                    options.gc_affinity = value.parse().map_err(|_| bad_value(&gc_allowed()))?
                }
                "mutator-sched" => {
                    options.mutator_sched = value.parse().map_err(|e: String| OptionError {
                        problem: format!("mutator-sched '{value}' {e}"),
                        allowed: MutatorSched::ALLOWED.to_string(),
                    })?
                }
                "fifo-scope" => {
                    options.fifo_scope = value
                        .parse()
                        .map_err(|_| bad_value(&FifoScope::allowed()))?
                }
                "records" | "report" | "proc-stat" | "outcome" => {
                    if value.is_empty() {
                        return Err(bad_value("a file path"));
                    }
                    let path = Some(PathBuf::from(value));
                    match key {
                        "records" => options.records = path,
                        "report" => options.report = path,
                        "outcome" => options.outcome = path,
                        _ => options.proc_stat = path,
                    }
                }
                _ => {
                    return Err(OptionError {
                        problem: format!("unknown option '{key}'"),
                        allowed: KEYS.to_string(),
                    })
                }
            }
        }
        Ok(options)
    }

    /// The option string for `-agentpath:…=<this>` or `jcmd … JVMTI.agent_load LIB <this>`:
    /// only the options that differ from the default, so an all-default set is empty. Fails
    /// when a path holds a `,` (the separator) or is not UTF-8.
    pub fn to_option_string(&self) -> Result<String, OptionError> {
        let mut parts = Vec::new();
        if self.gc_affinity != GcAffinity::None {
            parts.push(format!("gc-affinity={}", self.gc_affinity));
        }
        if self.mutator_sched != MutatorSched::Cfs {
            parts.push(format!("mutator-sched={}", self.mutator_sched));
        }
        if self.fifo_scope != FifoScope::Mutators {
            parts.push(format!("fifo-scope={}", self.fifo_scope));
        }
        let paths = [
            ("records", &self.records),
            ("report", &self.report),
            ("proc-stat", &self.proc_stat),
            ("outcome", &self.outcome),
        ];
        for (key, path) in paths {
            if let Some(path) = path {
                let text = path.to_str().filter(|t| !t.contains(',') && !t.is_empty());
                let Some(text) = text else {
                    return Err(OptionError {
                        problem: format!("the {key} path '{}' cannot be passed", path.display()),
                        allowed: "a non-empty UTF-8 path without ','".into(),
                    });
                };
                parts.push(format!("{key}={text}"));
            }
        }
        Ok(parts.join(","))
    }

    /// Combinations the agent refuses: `fifo-scope=all` goes with `mutator-sched=fifo` only
    /// (the automatic policies decide for the Java threads they see start and end).
    pub fn check_supported(&self) -> Result<(), OptionError> {
        match (&self.mutator_sched, self.fifo_scope) {
            (
                MutatorSched::Profile(_)
                | MutatorSched::Adaptive(_)
                | MutatorSched::AdaptiveMajority(_),
                FifoScope::All,
            ) => Err(OptionError {
                problem: format!(
                    "fifo-scope 'all' does not go with mutator-sched '{}' (profile and \
                         adaptive decide for the Java threads only)",
                    self.mutator_sched
                ),
                allowed: "fifo-scope=all with mutator-sched=fifo; fifo-scope=mutators with \
                              any policy"
                    .into(),
            }),
            _ => Ok(()),
        }
    }
}

impl AgentOptions {
    /// The files the agent writes, with the option that names each: records, report, the
    /// profile of `mutator-sched=profile:PATH` and the outcome file.
    pub fn outputs(&self) -> Vec<(&'static str, &Path)> {
        let profile = match &self.mutator_sched {
            MutatorSched::Profile(path) => Some(path.as_path()),
            _ => None,
        };
        [
            ("records", self.records.as_deref()),
            ("report", self.report.as_deref()),
            ("mutator-sched profile", profile),
            ("outcome", self.outcome.as_deref()),
        ]
        .into_iter()
        .filter_map(|(key, path)| Some((key, path?)))
        .collect()
    }

    /// The first two outputs that are one file (compared as files: `./x` and `x`, a link and
    /// its target, two hard links), later one first: each would be written over the other.
    pub fn shared_output(&self) -> Option<[(&'static str, &Path); 2]> {
        let outputs = self.outputs();
        outputs.iter().enumerate().find_map(|(i, &later)| {
            let earlier = outputs[..i]
                .iter()
                .find(|(_, p)| concord::config::same_file(p, later.1))?;
            Some([later, *earlier])
        })
    }

    /// No two outputs may be one file (see [`AgentOptions::shared_output`]).
    pub fn check_distinct_outputs(&self) -> Result<(), OptionError> {
        match self.shared_output() {
            Some([(key, path), (earlier, earlier_path)]) => Err(OptionError {
                problem: format!(
                    "{key} '{}' names the same file as {earlier} '{}'",
                    path.display(),
                    earlier_path.display()
                ),
                allowed: "a file of its own for each output".into(),
            }),
            None => Ok(()),
        }
    }
}

fn gc_allowed() -> String {
    GcAffinity::ALL
        .iter()
        .map(|g| g.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn empty_means_defaults() {
        assert_eq!(AgentOptions::parse(None).unwrap(), AgentOptions::default());
        assert_eq!(
            AgentOptions::parse(Some("")).unwrap(),
            AgentOptions::default()
        );
        assert_eq!(AgentOptions::default().to_option_string().unwrap(), "");
    }

    #[test]
    fn every_key_parses_and_round_trips() {
        let text = "gc-affinity=dynamic,mutator-sched=fifo,fifo-scope=all,records=/tmp/r.jsonl,\
                    report=/tmp/rep.json,proc-stat=/tmp/stat,outcome=/tmp/o.json";
        let o = AgentOptions::parse(Some(text)).unwrap();
        assert_eq!(o.gc_affinity, GcAffinity::Dynamic);
        assert_eq!(o.mutator_sched, MutatorSched::Fifo);
        assert_eq!(o.fifo_scope, FifoScope::All);
        assert_eq!(o.records, Some(PathBuf::from("/tmp/r.jsonl")));
        assert_eq!(o.report, Some(PathBuf::from("/tmp/rep.json")));
        assert_eq!(o.proc_stat, Some(PathBuf::from("/tmp/stat")));
        assert_eq!(o.outcome, Some(PathBuf::from("/tmp/o.json")));
        assert_eq!(o.to_option_string().unwrap(), text);
        let a = AgentOptions::parse(Some("mutator-sched=adaptive:0.5")).unwrap();
        assert_eq!(
            a.mutator_sched,
            MutatorSched::Adaptive(Duration::from_millis(500))
        );
        let again = AgentOptions::parse(Some(&a.to_option_string().unwrap())).unwrap();
        assert_eq!(again, a);
    }

    #[test]
    fn errors_name_the_option_and_what_is_allowed() {
        let e = AgentOptions::parse(Some("gc-affinity=sometimes")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bad value 'sometimes' for option 'gc-affinity'; allowed: none, static, dynamic"
        );
        let e = AgentOptions::parse(Some("colour=blue")).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("unknown option 'colour'; allowed: {KEYS}")
        );
        let e = AgentOptions::parse(Some("fifo-scope=some")).unwrap_err();
        assert!(e.to_string().ends_with("allowed: mutators, all"), "{e}");
        let e = AgentOptions::parse(Some("mutator-sched=rr")).unwrap_err();
        assert!(e.to_string().contains("'rr'"), "{e}");
        assert!(e.allowed.contains("adaptive[:SECONDS]"), "{e}");
        let e = AgentOptions::parse(Some("gc-affinity")).unwrap_err();
        assert!(e.problem.contains("not key=value"), "{e}");
        let e = AgentOptions::parse(Some("report=")).unwrap_err();
        assert!(e.to_string().contains("'report'"), "{e}");
        let e = AgentOptions::parse(Some("gc-affinity=static,gc-affinity=none")).unwrap_err();
        assert!(e.problem.contains("twice"), "{e}");
        let e = AgentOptions::parse(Some("GC-affinity=static")).unwrap_err();
        assert!(e.problem.contains("unknown option 'GC-affinity'"), "{e}");
    }

    #[test]
    fn scope_all_goes_with_fifo_only() {
        for text in [
            "mutator-sched=profile:/tmp/p,fifo-scope=all",
            "mutator-sched=adaptive,fifo-scope=all",
        ] {
            let o = AgentOptions::parse(Some(text)).unwrap();
            let e = o.check_supported().unwrap_err();
            assert!(e.problem.contains("does not go with"), "{e}");
        }
        for text in [
            "mutator-sched=fifo,fifo-scope=all",
            "mutator-sched=adaptive:1",
        ] {
            assert!(AgentOptions::parse(Some(text))
                .unwrap()
                .check_supported()
                .is_ok());
        }
    }

    #[test]
    fn two_outputs_in_one_file_are_refused() {
        let dir = std::env::temp_dir().join(format!("concord-jvm-outputs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let x = dir.join("x.json");
        let link = dir.join("link.json");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&x, &link).unwrap();
        let text = format!("report={},records={}", x.display(), link.display());
        let e = AgentOptions::parse(Some(&text))
            .unwrap()
            .check_distinct_outputs()
            .unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "report '{}' names the same file as records '{}'",
                x.display(),
                link.display()
            )),
            "{e}"
        );
        let profile = format!(
            "report={},mutator-sched=profile:{}/./x.json",
            x.display(),
            dir.display()
        );
        assert!(AgentOptions::parse(Some(&profile))
            .unwrap()
            .check_distinct_outputs()
            .is_err());
        let apart = format!("report={},records={}/r.jsonl", x.display(), dir.display());
        AgentOptions::parse(Some(&apart))
            .unwrap()
            .check_distinct_outputs()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn paths_with_commas_cannot_be_encoded() {
        let o = AgentOptions {
            report: Some(PathBuf::from("/tmp/a,b")),
            ..AgentOptions::default()
        };
        let e = o.to_option_string().unwrap_err();
        assert!(e.problem.contains("/tmp/a,b"), "{e}");
    }
}
