//! Validation of a whole [`GcConfig`]: the allowed range of every field and the rules between
//! fields (the young generation must leave an old one, eden and
//! survivors must not round down to nothing, TLABs must fit in eden).
//!
//! The ranges live here once; the option setters in `options.rs` use the same ones, so a bad
//! value is rejected with the same words whether it came from a flag or from code.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::files::first_shared;
use super::{
    format_size, ConfigError, ConfigKey, GcConfig, Origin, KIB, MAX_GC_THREADS, MAX_HEAP, MIB,
    MIN_EDEN_SIZE, MIN_HEAP, MIN_OLD_SIZE, MIN_SURVIVOR_SIZE, SPACE_ALIGNMENT,
};
use crate::os::numa::{NumaLayout, NumaTopology, NumaTopologySpec};

/// Allowed heap sizes.
pub(super) const HEAP_RANGE: RangeInclusive<usize> = MIN_HEAP..=MAX_HEAP;
/// Allowed `new_ratio` values.
pub(super) const NEW_RATIO_RANGE: RangeInclusive<u32> = 1..=100;
/// Allowed `survivor_ratio` values.
pub(super) const SURVIVOR_RATIO_RANGE: RangeInclusive<u32> = 1..=1000;
/// Allowed GC thread counts.
pub(super) const GC_THREADS_RANGE: RangeInclusive<usize> = 1..=MAX_GC_THREADS;
/// Allowed tenuring thresholds (both the initial and the maximum).
pub(super) const TENURING_RANGE: RangeInclusive<u32> = 0..=15;
/// Allowed `target_survivor_ratio` percentages.
pub(super) const TARGET_SURVIVOR_RANGE: RangeInclusive<u32> = 1..=100;
/// Allowed PLAB sizes (young and old); buffers are cut rounded down to whole words.
pub(crate) const PLAB_RANGE: RangeInclusive<usize> = KIB..=MIB;
/// The smallest fixed TLAB size; the largest is half of eden.
pub(super) const MIN_TLAB_SIZE: usize = KIB;
/// The smallest large-object threshold.
pub(super) const MIN_LARGE_OBJECT_THRESHOLD: usize = KIB;
/// Allowed `fifo_cpu_threshold` values (CPUs).
pub(super) const FIFO_CPU_THRESHOLD_RANGE: RangeInclusive<usize> = 0..=4096;

/// The reason for an integer outside `range`: `is out of range (allowed: 1..=256)`.
pub(super) fn out_of_range<T: Display>(range: &RangeInclusive<T>) -> String {
    format!(
        "is out of range (allowed: {}..={})",
        range.start(),
        range.end()
    )
}

/// The reason for a size outside `range`: `is out of range (allowed: 4M..=1024G)`.
pub(super) fn size_out_of_range(range: &RangeInclusive<usize>) -> String {
    format!(
        "is out of range (allowed: {}..={})",
        format_size(*range.start()),
        format_size(*range.end())
    )
}

/// The reason for a size below `min`: `is too small (allowed: at least 1K)`.
pub(super) fn size_too_small(min: usize) -> String {
    format!("is too small (allowed: at least {})", format_size(min))
}

/// Checks a field against its range; out of it, the error shows the value with `shown` and
/// gives `reason` for the range.
fn check_range<T: PartialOrd>(
    key: ConfigKey,
    value: T,
    range: &RangeInclusive<T>,
    shown: impl FnOnce(T) -> String,
    reason: impl FnOnce(&RangeInclusive<T>) -> String,
) -> Result<(), ConfigError> {
    if range.contains(&value) {
        return Ok(());
    }
    Err(ConfigError::InvalidValue {
        key,
        value: shown(value),
        reason: reason(range),
    })
}

/// Checks an integer field against its range.
fn check_int<T: PartialOrd + Display>(
    key: ConfigKey,
    value: T,
    range: &RangeInclusive<T>,
) -> Result<(), ConfigError> {
    check_range(key, value, range, |v| v.to_string(), out_of_range)
}

/// Checks a size field against its range.
fn check_size(
    key: ConfigKey,
    value: usize,
    range: &RangeInclusive<usize>,
) -> Result<(), ConfigError> {
    check_range(key, value, range, format_size, size_out_of_range)
}

/// An [`ConfigError::Inconsistent`] about `key`.
fn inconsistent(key: ConfigKey, message: String) -> ConfigError {
    ConfigError::Inconsistent { key, message }
}

/// Whether `a` and `b` name one file: the same file where both exist (links and hard links
/// too), else the same name in the same directory (`./x` and `x`, through linked
/// directories).
pub fn same_file(a: &Path, b: &Path) -> bool {
    if let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) {
        return (ma.dev(), ma.ino()) == (mb.dev(), mb.ino());
    }
    file_identity(a) == file_identity(b)
}

/// `path` as an absolute name: its directory resolved where it exists (and a dangling link
/// followed to the file it would create), else the path with `.` left out.
fn file_identity(path: &Path) -> PathBuf {
    /// Links followed at most, as the kernel's `ELOOP` limit.
    const MAX_LINKS: usize = 40;
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        if let Ok(real) = std::fs::canonicalize(&path) {
            return real;
        }
        match std::fs::read_link(&path) {
            Ok(to) => path = path.parent().map_or(to.clone(), |dir| dir.join(&to)),
            Err(_) => break,
        }
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(dir), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path
            .components()
            .filter(|c| *c != Component::CurDir)
            .collect(),
    }
}

impl GcConfig {
    /// Checks every field's range and the rules between fields;
    /// the error names the field by its option key (`heap`, `young`, ...).
    ///
    /// [`super::ConfigBuilder::build`] runs the same checks and names the keys as the user
    /// wrote them (`--heap`, `CONCORD_HEAP`, `heap in concord.toml`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.validate_with(&|key| ConfigKey::new(key, Origin::Config))
    }

    /// [`GcConfig::validate`], with `key_of` telling where each key's value came from.
    pub(super) fn validate_with(
        &self,
        key_of: &dyn Fn(&'static str) -> ConfigKey,
    ) -> Result<(), ConfigError> {
        let is_default = |key: &'static str| matches!(key_of(key).origin, Origin::Default(_));

        check_size(key_of("heap"), self.heap_size, &HEAP_RANGE)?;
        check_int(key_of("new-ratio"), self.new_ratio, &NEW_RATIO_RANGE)?;
        check_int(
            key_of("survivor-ratio"),
            self.survivor_ratio,
            &SURVIVOR_RATIO_RANGE,
        )?;
        check_int(key_of("gc-threads"), self.gc_threads, &GC_THREADS_RANGE)?;
        check_int(
            key_of("max-tenuring-threshold"),
            self.max_tenuring_threshold,
            &TENURING_RANGE,
        )?;
        check_int(
            key_of("initial-tenuring-threshold"),
            self.initial_tenuring_threshold,
            &TENURING_RANGE,
        )?;
        if self.initial_tenuring_threshold > self.max_tenuring_threshold {
            let (initial, max) = (self.initial_tenuring_threshold, self.max_tenuring_threshold);
            return Err(
                if is_default("initial-tenuring-threshold") && !is_default("max-tenuring-threshold")
                {
                    inconsistent(
                        key_of("max-tenuring-threshold"),
                        format!(
                            "{max} is below initial-tenuring-threshold ({initial}, the default); \
                             set initial-tenuring-threshold to at most {max} as well"
                        ),
                    )
                } else {
                    inconsistent(
                        key_of("initial-tenuring-threshold"),
                        format!("{initial} must not exceed max-tenuring-threshold ({max})"),
                    )
                },
            );
        }
        check_int(
            key_of("target-survivor-ratio"),
            self.target_survivor_ratio,
            &TARGET_SURVIVOR_RANGE,
        )?;
        check_size(key_of("young-plab-size"), self.young_plab_size, &PLAB_RANGE)?;
        check_size(key_of("old-plab-size"), self.old_plab_size, &PLAB_RANGE)?;
        if self.large_object_threshold < MIN_LARGE_OBJECT_THRESHOLD {
            return Err(ConfigError::InvalidValue {
                key: key_of("large-object-threshold"),
                value: format_size(self.large_object_threshold),
                reason: size_too_small(MIN_LARGE_OBJECT_THRESHOLD),
            });
        }
        check_int(
            key_of("fifo-cpu-threshold"),
            self.fifo_cpu_threshold,
            &FIFO_CPU_THRESHOLD_RANGE,
        )?;
        self.validate_mutator_sched(key_of("mutator-sched"))?;
        self.validate_numa_topology(key_of("numa-topology"))?;
        self.validate_segregated(key_of("numa"))?;
        for (key, path) in [
            ("gc-log", &self.gc_log),
            ("gc-records", &self.gc_records),
            ("gc-trace", &self.gc_trace),
        ] {
            if path.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
                return Err(ConfigError::InvalidValue {
                    key: key_of(key),
                    value: String::new(),
                    reason: "is empty (expected a file path)".to_string(),
                });
            }
        }

        self.validate_distinct_outputs(key_of)?;

        self.validate_generations(key_of, &is_default)
    }

    /// A synthetic NUMA topology may only name CPUs the process may use (the calling thread's
    /// affinity mask, which the heap's threads inherit). A mask that cannot be read checks
    /// nothing here; the heap checks again when it is built.
    fn validate_numa_topology(&self, key: ConfigKey) -> Result<(), ConfigError> {
        let NumaTopologySpec::Synthetic(nodes) = &self.numa_topology else {
            return Ok(());
        };
        let Ok(usable) = crate::os::affinity::current_thread_affinity() else {
            return Ok(());
        };
        NumaTopology::synthetic(nodes.clone(), &usable)
            .map(drop)
            .map_err(|e| ConfigError::InvalidValue {
                key,
                value: self.numa_topology.to_string(),
                reason: format!("does not fit this process: {e}"),
            })
    }

    /// `segregated` needs a GC worker on every node (004 §4.2.2): refused when `gc-threads` is
    /// below the number of nodes of a synthetic topology (for `auto` the heap checks the same
    /// when it has read the machine's nodes, [`GcConfig::check_segregated_workers`]).
    fn validate_segregated(&self, key: ConfigKey) -> Result<(), ConfigError> {
        match &self.numa_topology {
            NumaTopologySpec::Synthetic(nodes) => self.check_segregated_workers(key, nodes.len()),
            NumaTopologySpec::Auto => Ok(()),
        }
    }

    /// The check of [`validate_segregated`](Self::validate_segregated) for a topology of
    /// `nodes` nodes.
    pub(crate) fn check_segregated_workers(
        &self,
        key: ConfigKey,
        nodes: usize,
    ) -> Result<(), ConfigError> {
        if self.numa != NumaLayout::Segregated || self.gc_threads >= nodes {
            return Ok(());
        }
        Err(inconsistent(
            key,
            format!(
                "segregated needs at least one GC thread per NUMA node, but gc-threads is {} \
                 and numa-topology {} has {nodes} nodes (allowed: gc-threads of at least \
                 {nodes}, or numa off or interleaved)",
                self.gc_threads, self.numa_topology,
            ),
        ))
    }

    /// No two outputs (GC log, records, GC trace, mutator profile) may be one file: they would be
    /// written over each other. Paths are compared as files: `./x` and `x`, a link and its
    /// target, two hard links ([`super::check_files`]'s rule, with the keys' own errors).
    fn validate_distinct_outputs(
        &self,
        key_of: &dyn Fn(&'static str) -> ConfigKey,
    ) -> Result<(), ConfigError> {
        let outputs = self.output_files();
        let Some((earlier, later)) = first_shared(outputs.iter().map(|o| o.1)) else {
            return Ok(());
        };
        let ((key, _, shown), (earlier_key, _, earlier_shown)) =
            (&outputs[later], &outputs[earlier]);
        Err(ConfigError::InvalidValue {
            key: key_of(key),
            value: shown.clone(),
            reason: format!(
                "names the same file as {} ('{earlier_shown}'); give each output a file of its \
                 own",
                key_of(earlier_key),
            ),
        })
    }

    /// The argument of a `profile` or `adaptive` mutator scheduling policy built in code, in the
    /// words the parser uses for the same mistakes.
    fn validate_mutator_sched(&self, key: ConfigKey) -> Result<(), ConfigError> {
        self.mutator_sched
            .check_argument()
            .map_err(|reason| ConfigError::InvalidValue {
                key,
                value: self.mutator_sched.to_string(),
                reason,
            })
    }

    /// The rules between heap, young size and ratios, and the TLAB size that depends on eden.
    fn validate_generations(
        &self,
        key_of: &dyn Fn(&'static str) -> ConfigKey,
        is_default: &dyn Fn(&'static str) -> bool,
    ) -> Result<(), ConfigError> {
        let sizes = self.generation_sizes();
        let heap = format_size(self.heap_size);
        let young = sizes.young();
        let alignment = format_size(SPACE_ALIGNMENT);

        if sizes.old < MIN_OLD_SIZE {
            return Err(match self.young_size {
                Some(young_size) => inconsistent(
                    key_of("young"),
                    format!(
                        "{} must be smaller than the heap ({heap}) and leave at least {} for \
                         the old generation",
                        format_size(young_size),
                        format_size(MIN_OLD_SIZE)
                    ),
                ),
                None => inconsistent(
                    key_of("new-ratio"),
                    format!(
                        "{} leaves an old generation of {} in the heap of {heap}; at least {} \
                         is needed",
                        self.new_ratio,
                        format_size(sizes.old),
                        format_size(MIN_OLD_SIZE)
                    ),
                ),
            });
        }

        if sizes.eden < MIN_EDEN_SIZE {
            return Err(match self.young_size {
                Some(young_size) => inconsistent(
                    key_of("young"),
                    format!(
                        "{} leaves an eden of {} next to two survivor spaces of {} \
                         (survivor-ratio {}); eden must be at least {}",
                        format_size(young_size),
                        format_size(sizes.eden),
                        format_size(sizes.survivor),
                        self.survivor_ratio,
                        format_size(MIN_EDEN_SIZE)
                    ),
                ),
                None => inconsistent(
                    key_of("new-ratio"),
                    format!(
                        "{} makes the young generation {} (heap {heap} / {}, rounded down to \
                         {alignment}), leaving an eden of {}; eden must be at least {}",
                        self.new_ratio,
                        format_size(young),
                        u64::from(self.new_ratio) + 1,
                        format_size(sizes.eden),
                        format_size(MIN_EDEN_SIZE)
                    ),
                ),
            });
        }

        if sizes.survivor < MIN_SURVIVOR_SIZE {
            let divisor = u64::from(self.survivor_ratio) + 2;
            return Err(
                if self.young_size.is_some() && is_default("survivor-ratio") && !is_default("young")
                {
                    let needed = (MIN_SURVIVOR_SIZE as u64).saturating_mul(divisor);
                    inconsistent(
                        key_of("young"),
                        format!(
                            "{} makes each survivor space {} (young / {divisor} at \
                             survivor-ratio {}, rounded down to {alignment}); the young \
                             generation must be at least {} for survivors of {}",
                            format_size(young),
                            format_size(sizes.survivor),
                            self.survivor_ratio,
                            format_size(usize::try_from(needed).unwrap_or(usize::MAX)),
                            format_size(MIN_SURVIVOR_SIZE)
                        ),
                    )
                } else {
                    inconsistent(
                        key_of("survivor-ratio"),
                        format!(
                            "{} makes each survivor space {} (young generation {} / {divisor}, \
                             rounded down to {alignment}); a survivor space must be at least {}",
                            self.survivor_ratio,
                            format_size(sizes.survivor),
                            format_size(young),
                            format_size(MIN_SURVIVOR_SIZE)
                        ),
                    )
                },
            );
        }

        if let Some(tlab) = self.tlab_size {
            let max = sizes.eden / 2;
            if !(MIN_TLAB_SIZE..=max).contains(&tlab) {
                return Err(ConfigError::InvalidValue {
                    key: key_of("tlab-size"),
                    value: format_size(tlab),
                    reason: format!(
                        "is out of range (allowed: {}..={}, half of the eden of {})",
                        format_size(MIN_TLAB_SIZE),
                        format_size(max),
                        format_size(sizes.eden)
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Preset, GIB};
    use super::*;
    use crate::os::policy::MutatorSched;
    use std::time::Duration;

    fn base() -> GcConfig {
        GcConfig::for_preset(Preset::Optimized)
    }

    fn error_of(config: &GcConfig) -> String {
        config.validate().unwrap_err().to_string()
    }

    /// The error when `key` was set from `origin` and every other key is a preset default.
    fn error_blaming(config: &GcConfig, key: &str, origin: Origin) -> String {
        config
            .validate_with(&|k| {
                let from = if k == key {
                    origin.clone()
                } else {
                    Origin::Default(Preset::Optimized)
                };
                ConfigKey::new(k, from)
            })
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_are_valid() {
        base().validate().unwrap();
    }

    #[test]
    fn every_preset_validates_and_switches_need_no_checks() {
        use crate::parallel::{StealPolicy, TaskQueueKind};
        for preset in Preset::ALL {
            let mut config = GcConfig::for_preset(preset);
            config.validate().unwrap();
            // Any combination of switches is allowed: ablations override one at a time.
            config.phase.task_queue = TaskQueueKind::Monitor;
            config.phase.task_affinity = true;
            config.phase.steal = StealPolicy::Adaptive;
            config.dynamic_gc_threads = !config.dynamic_gc_threads;
            config.pin_start = !config.pin_start;
            config.gc_affinity = crate::os::policy::GcAffinity::Static;
            config.mutator_sched = MutatorSched::Fifo;
            config.lifespans = true;
            config.validate().unwrap();
        }
    }

    #[test]
    fn empty_paths_are_rejected() {
        let mut config = base();
        config.gc_log = Some(std::path::PathBuf::new());
        assert_eq!(
            error_of(&config),
            "gc-log: '' is empty (expected a file path)"
        );
        let mut config = base();
        config.gc_records = Some(std::path::PathBuf::new());
        assert_eq!(
            error_of(&config),
            "gc-records: '' is empty (expected a file path)"
        );
    }

    #[test]
    fn two_outputs_may_not_be_one_file() {
        let dir = std::env::temp_dir().join(format!("concord-same-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let x = dir.join("x");
        let mut config = base();
        config.gc_log = Some(x.clone());
        config.gc_records = Some(x.clone());
        let err = error_of(&config);
        assert_eq!(
            err,
            format!(
                "gc-records: '{0}' names the same file as gc-log ('{0}'); give each output a \
                 file of its own",
                x.display()
            )
        );
        // `./x` and `x`, or through `sub/..`: the same file, existing or not.
        config.gc_records = Some(dir.join(".").join("sub").join("..").join("x"));
        assert!(error_of(&config).contains("names the same file as gc-log"));
        // A link to it, dangling while it does not exist, and a hard link once it does.
        std::os::unix::fs::symlink(&x, dir.join("link")).unwrap();
        config.gc_records = Some(dir.join("link"));
        assert!(error_of(&config).contains("same file"), "dangling link");
        std::fs::write(&x, "").unwrap();
        std::fs::hard_link(&x, dir.join("hard")).unwrap();
        for other in ["link", "hard"] {
            config.gc_records = Some(dir.join(other));
            assert!(error_of(&config).contains("same file"), "{other}");
        }
        // The mutator profile counts too.
        config.gc_records = Some(dir.join("records"));
        config.mutator_sched = MutatorSched::Profile(dir.join("sub/../records"));
        let err = error_of(&config);
        assert!(
            err.starts_with("mutator-sched: 'profile:") && err.contains("same file as gc-records"),
            "{err}"
        );
        // Different files are fine.
        config.mutator_sched = MutatorSched::Profile(dir.join("profile"));
        config.validate().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn fifo_cpu_threshold_range() {
        let mut config = base();
        for ok in [0, 8, 4096] {
            config.fifo_cpu_threshold = ok;
            config.validate().unwrap();
        }
        config.fifo_cpu_threshold = 4097;
        assert_eq!(
            error_of(&config),
            "fifo-cpu-threshold: '4097' is out of range (allowed: 0..=4096)"
        );
    }

    #[test]
    fn mutator_sched_arguments_built_in_code_are_checked() {
        let mut config = base();
        for ok in [
            MutatorSched::Cfs,
            MutatorSched::Fifo,
            MutatorSched::Profile("p.profile".into()),
            MutatorSched::Adaptive(Duration::from_millis(10)),
            MutatorSched::Adaptive(Duration::from_secs(3600)),
        ] {
            config.mutator_sched = ok;
            config.validate().unwrap();
        }
        config.mutator_sched = MutatorSched::Profile(std::path::PathBuf::new());
        assert_eq!(
            error_of(&config),
            "mutator-sched: 'profile:' needs a file: profile:PATH (e.g. profile:gcbench.profile)"
        );
        config.mutator_sched = MutatorSched::Adaptive(Duration::ZERO);
        assert_eq!(
            error_of(&config),
            "mutator-sched: 'adaptive:0' has a bad sampling period '0' (allowed: seconds from \
             0.01 to 3600, e.g. adaptive:2)"
        );
        config.mutator_sched = MutatorSched::Adaptive(Duration::from_secs(3601));
        assert!(error_of(&config).contains("bad sampling period '3601'"));
    }

    #[test]
    fn heap_bounds() {
        let mut config = base();
        config.heap_size = MIN_HEAP;
        config.validate().unwrap();
        config.heap_size = MIN_HEAP - 1;
        let err = error_of(&config);
        assert!(err.starts_with("heap: '"), "{err}");
        assert!(err.contains("allowed: 4M..=1024G"), "{err}");
        config.heap_size = MAX_HEAP;
        config.validate().unwrap();
        config.heap_size = MAX_HEAP + 1;
        assert!(error_of(&config).contains("out of range"));
    }

    #[test]
    fn integer_ranges() {
        type Change = fn(&mut GcConfig);
        let cases: [(Change, &str, &str); 8] = [
            (|c| c.new_ratio = 0, "new-ratio: '0'", "1..=100"),
            (|c| c.new_ratio = 101, "new-ratio: '101'", "1..=100"),
            (|c| c.survivor_ratio = 0, "survivor-ratio: '0'", "1..=1000"),
            (|c| c.gc_threads = 0, "gc-threads: '0'", "1..=256"),
            (|c| c.gc_threads = 257, "gc-threads: '257'", "1..=256"),
            (
                |c| c.max_tenuring_threshold = 16,
                "max-tenuring-threshold: '16'",
                "0..=15",
            ),
            (
                |c| c.target_survivor_ratio = 0,
                "target-survivor-ratio: '0'",
                "1..=100",
            ),
            (
                |c| c.target_survivor_ratio = 101,
                "target-survivor-ratio: '101'",
                "1..=100",
            ),
        ];
        for (change, start, allowed) in cases {
            let mut config = base();
            change(&mut config);
            let err = error_of(&config);
            assert!(err.starts_with(start), "{err}");
            assert!(err.contains(allowed), "{err}");
        }
    }

    #[test]
    fn initial_tenuring_threshold_must_not_exceed_max() {
        let mut config = base();
        config.max_tenuring_threshold = 5;
        config.initial_tenuring_threshold = 5;
        config.validate().unwrap();
        config.initial_tenuring_threshold = 6;
        assert_eq!(
            error_of(&config),
            "initial-tenuring-threshold: 6 must not exceed max-tenuring-threshold (5)"
        );
        // Only max was set by the user: blame max.
        let err = error_blaming(&config, "max-tenuring-threshold", Origin::Cli);
        assert!(
            err.starts_with("--max-tenuring-threshold: 5 is below initial-tenuring-threshold (6"),
            "{err}"
        );
    }

    #[test]
    fn plab_and_large_object_sizes() {
        let mut config = base();
        config.young_plab_size = 512;
        let err = error_of(&config);
        assert_eq!(
            err,
            "young-plab-size: '512B' is out of range (allowed: 1K..=1M)"
        );
        let mut config = base();
        config.old_plab_size = 2 * MIB;
        assert!(error_of(&config).starts_with("old-plab-size: '2M' is out of range"));
        let mut config = base();
        config.large_object_threshold = 100;
        assert_eq!(
            error_of(&config),
            "large-object-threshold: '100B' is too small (allowed: at least 1K)"
        );
    }

    #[test]
    fn young_must_leave_an_old_generation() {
        let mut config = base();
        config.heap_size = 64 * MIB;
        config.young_size = Some(200 * MIB);
        let err = config
            .validate_with(&|key| ConfigKey::new(key, Origin::Cli))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "--young: 200M must be smaller than the heap (64M) and leave at least 1M for the old \
             generation"
        );
        config.young_size = Some(64 * MIB - 512 * KIB);
        assert!(error_of(&config).contains("must be smaller than the heap"));
        config.young_size = Some(63 * MIB);
        config.validate().unwrap();
    }

    #[test]
    fn eden_and_survivors_must_not_round_to_nothing() {
        let mut config = base();
        config.heap_size = 64 * MIB;
        config.young_size = Some(0);
        let err = error_of(&config);
        assert!(err.starts_with("young: 0B leaves an eden of 0B"), "{err}");

        config.young_size = None;
        config.heap_size = MIN_HEAP;
        config.new_ratio = 100;
        let err = error_of(&config);
        assert!(
            err.starts_with("new-ratio: 100 makes the young generation 0B"),
            "{err}"
        );

        let mut config = base();
        config.survivor_ratio = 1000;
        config.validate().unwrap(); // 87360K / 1002 still rounds to 64K
        config.heap_size = 64 * MIB;
        let err = error_of(&config);
        assert!(
            err.starts_with(
                "survivor-ratio: 1000 makes each survivor space 0B (young generation 21824K / \
                 1002, rounded down to 64K)"
            ),
            "{err}"
        );
        assert!(err.contains("at least 64K"), "{err}");

        // A small young size with the default survivor ratio: blame the young size.
        let mut config = base();
        config.young_size = Some(512 * KIB);
        let err = error_blaming(&config, "young", Origin::Env);
        assert!(
            err.starts_with("CONCORD_YOUNG: 512K makes each survivor space 0B"),
            "{err}"
        );
        assert!(err.contains("must be at least 640K"), "{err}");
    }

    #[test]
    fn tlab_must_fit_in_half_of_eden() {
        let mut config = base();
        config.heap_size = 64 * MIB;
        let eden = config.generation_sizes().eden;
        config.tlab_size = Some(eden / 2);
        config.validate().unwrap();
        config.tlab_size = Some(eden / 2 + 1);
        let err = error_of(&config);
        assert!(err.starts_with("tlab-size: '"), "{err}");
        assert!(err.contains("half of the eden"), "{err}");
        config.tlab_size = Some(KIB - 1);
        assert!(error_of(&config).contains("allowed: 1K.."));
        config.tlab_size = Some(KIB);
        config.validate().unwrap();
    }

    #[test]
    fn large_heaps_are_fine() {
        let mut config = base();
        config.heap_size = 16 * GIB;
        config.young_size = Some(4 * GIB);
        config.validate().unwrap();
    }
}
