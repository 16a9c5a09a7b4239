//! What the workloads' drivers have in common, written once: the `--size` parameter
//! ([`Size`]: default, range, error message), default heap rules, running work on mutator
//! threads, building the [`WorkloadResult`] and its details, scopes that return a handle,
//! corruption messages that name the tree, and for unit tests small heaps and size-range
//! checks.
//!
//! None of it allocates on the workloads' behalf: what a workload allocates, in which order and
//! for how long stays in its own module.

use std::ops::RangeInclusive;

use concord::{GcError, Handle, Heap, Mutator};

use crate::{WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// A workload's `--size` parameter: its default, the values it accepts, and how an error
/// names it: `"{what} {value}{unit} is out of range (allowed: {min}..={max})"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Size {
    what: &'static str,
    default: u32,
    range: RangeInclusive<u32>,
    unit: &'static str,
}

impl Size {
    /// `what` names the size before its value ("database size", "render image side (size)");
    /// `unit` follows the value and is empty or starts with a space (" (thousands of rows)",
    /// " seconds").
    pub(crate) const fn new(
        what: &'static str,
        default: u32,
        range: RangeInclusive<u32>,
        unit: &'static str,
    ) -> Self {
        Size {
            what,
            default,
            range,
            unit,
        }
    }

    /// `n` if the range holds it, else an error naming the size, `n` and the range.
    pub(crate) fn check(&self, n: u32) -> Result<u32, WorkloadError> {
        if !self.range.contains(&n) {
            return Err(WorkloadError::BadParameter(format!(
                "{} {n}{} is out of range (allowed: {}..={})",
                self.what,
                self.unit,
                self.range.start(),
                self.range.end()
            )));
        }
        Ok(n)
    }

    /// `params.size`, or the default, unchecked (default heaps take any size).
    pub(crate) fn or_default(&self, params: &WorkloadParams) -> u32 {
        params.size.unwrap_or(self.default)
    }

    /// `params.size`, or the default, checked against the range.
    pub(crate) fn of(&self, params: &WorkloadParams) -> Result<u32, WorkloadError> {
        self.check(self.or_default(params))
    }

    /// The common parameters checked ([`WorkloadParams::validate`]), then the size: all a
    /// workload whose only own parameter is its size has to check.
    pub(crate) fn checked(&self, params: &WorkloadParams) -> Result<u32, WorkloadError> {
        params.validate()?;
        self.of(params)
    }

    /// `stored` at the default size `n` (a value a unit test recomputes), else `compute()`, so
    /// that default runs do not spend time on the reference.
    pub(crate) fn stored_or(&self, n: u32, stored: u64, compute: impl FnOnce() -> u64) -> u64 {
        if n == self.default {
            stored
        } else {
            compute()
        }
    }

    /// Three times an estimated smallest heap: `measured_min` (at the default size) scaled
    /// linearly with `size` (capped at the largest size, at least 4 MiB), plus `per_mutator`
    /// bytes for every mutator beyond the first; rounded up to MiB.
    pub(crate) fn scaled_heap(
        &self,
        measured_min: usize,
        per_mutator: usize,
        size: u32,
        mutators: usize,
    ) -> usize {
        let per_size = measured_min as f64 / f64::from(self.default);
        let min = (per_size * f64::from(size.min(*self.range.end()))) as usize;
        let min = min.max(4 * MIB) + per_mutator * mutators.saturating_sub(1);
        round_up_mib(min.saturating_mul(3))
    }
}

/// `one` for one mutator plus `per_extra` for every further one.
pub(crate) fn linear_heap(one: usize, per_extra: usize, mutators: usize) -> usize {
    one.saturating_add(per_extra.saturating_mul(mutators.max(1) - 1))
}

/// `x` rounded up to a whole number of mebibytes.
pub(crate) fn round_up_mib(x: usize) -> usize {
    x.div_ceil(MIB).saturating_mul(MIB)
}

/// Runs `work(mutator, index)` for `index` in `0..threads`, each on its own scoped thread
/// (named `{name}-{index}`) with its own mutator, and returns the results in index order. If a
/// thread cannot be started, no further ones are, and the error follows the results of those
/// that were. A panicking thread's panic is re-raised on the calling thread once all have
/// finished.
pub(crate) fn on_threads<T, F>(
    heap: &Heap,
    name: &str,
    threads: usize,
    work: F,
) -> Vec<Result<T, WorkloadError>>
where
    T: Send,
    F: Fn(&mut Mutator<'_>, usize) -> Result<T, WorkloadError> + Sync,
{
    std::thread::scope(|s| {
        let work = &work;
        let mut handles = Vec::with_capacity(threads);
        let mut failed = None;
        for i in 0..threads {
            let spawned = std::thread::Builder::new()
                .name(format!("{name}-{i}"))
                .spawn_scoped(s, move || {
                    let mut m = heap.attach();
                    work(&mut m, i)
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    failed = Some(WorkloadError::Spawn(e));
                    break;
                }
            }
        }
        let mut results: Vec<_> = handles.into_iter().map(join_or_resume).collect();
        results.extend(failed.map(Err));
        results
    })
}

/// Joins a scoped thread, re-raising its panic on the calling thread.
fn join_or_resume<T>(h: std::thread::ScopedJoinHandle<'_, T>) -> T {
    match h.join() {
        Ok(v) => v,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// The result of `params.rounds` rounds: `checksum`, and the expected checksum of one round
/// (if known) times the rounds, wrapping.
pub(crate) fn result(
    checksum: u64,
    expected_per_round: Option<u64>,
    params: &WorkloadParams,
    details: Vec<(String, String)>,
) -> WorkloadResult {
    WorkloadResult {
        checksum,
        expected_checksum: expected_per_round.map(|e| e.wrapping_mul(params.rounds as u64)),
        details,
    }
}

/// One line of [`WorkloadResult::details`].
pub(crate) fn detail(label: &str, value: impl ToString) -> (String, String) {
    (label.to_string(), value.to_string())
}

/// Shorthand for [`Mutator::scope_escape`] when the closure always returns a handle.
pub(crate) fn escape(
    m: &mut Mutator<'_>,
    f: impl FnOnce(&mut Mutator<'_>) -> Result<Handle, GcError>,
) -> Result<Handle, GcError> {
    m.scope_escape(|m| f(m).map(Some))
        .map(|h| h.expect("scope_escape returns the handle its closure returned"))
}

/// [`escape`] for a closure that may fail with any [`WorkloadError`], not only run out of
/// memory.
pub(crate) fn try_escape<'h>(
    m: &mut Mutator<'h>,
    f: impl FnOnce(&mut Mutator<'h>) -> Result<Handle, WorkloadError>,
) -> Result<Handle, WorkloadError> {
    let mut other = None;
    let r = m.scope_escape(|m| match f(m) {
        Ok(h) => Ok(Some(h)),
        Err(WorkloadError::OutOfMemory(e)) => Err(e),
        Err(e) => {
            other = Some(e);
            Ok(None)
        }
    })?;
    match (r, other) {
        (_, Some(e)) => Err(e),
        (Some(h), None) => Ok(h),
        (None, None) => unreachable!("the closure returned a handle or an error"),
    }
}

/// Prefixes a corruption message with the workload and the tree it was found in.
pub(crate) fn in_tree(
    workload: &'static str,
    what: &'static str,
    depth: u32,
) -> impl FnOnce(WorkloadError) -> WorkloadError {
    move |e| match e {
        WorkloadError::Corrupt(msg) => {
            WorkloadError::Corrupt(format!("{workload} {what} of depth {depth}: {msg}"))
        }
        other => other,
    }
}

/// A small heap for unit tests: optimized preset, one GC thread, verification as asked.
#[cfg(test)]
pub(crate) fn test_heap(heap_size: usize, verify: bool) -> Heap {
    let mut c = concord::GcConfig::for_preset(concord::Preset::Optimized);
    c.heap_size = heap_size;
    c.gc_threads = 1;
    c.verify = verify;
    Heap::new(c).expect("test configuration is valid")
}

/// Asserts that `f` takes the default size to `default` and rejects every size in `bad` with
/// a message containing `needle(size)`.
#[cfg(test)]
pub(crate) fn assert_size_range<T: std::fmt::Debug + PartialEq>(
    f: impl Fn(&WorkloadParams) -> Result<T, WorkloadError>,
    default: T,
    bad: &[u32],
    needle: impl Fn(u32) -> String,
) {
    assert_eq!(f(&WorkloadParams::default()).unwrap(), default);
    for &size in bad {
        let e = size_error(&f, size);
        assert!(e.contains(&needle(size)), "{e}");
    }
}

/// The message of the error `f` reports for `--size size`.
#[cfg(test)]
fn size_error<T: std::fmt::Debug>(
    f: impl FnOnce(&WorkloadParams) -> Result<T, WorkloadError>,
    size: u32,
) -> String {
    f(&WorkloadParams {
        size: Some(size),
        ..Default::default()
    })
    .unwrap_err()
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: Size = Size::new("thing size", 10, 2..=40, " (widgets)");

    #[test]
    fn size_defaults_checks_and_names_itself() {
        assert_eq!(SIZE.of(&WorkloadParams::default()).unwrap(), 10);
        let e = size_error(|p| SIZE.of(p), 41);
        assert_eq!(
            e,
            "bad parameter: thing size 41 (widgets) is out of range (allowed: 2..=40)"
        );
        let e = size_error(|p| SIZE.checked(p), 1);
        assert!(e.contains("thing size 1 (widgets)"), "{e}");
        let p = WorkloadParams {
            mutators: 0,
            size: Some(1),
            ..Default::default()
        };
        let e = SIZE.checked(&p).unwrap_err().to_string();
        assert!(e.contains("mutators is 0"), "{e}");
        assert_eq!(SIZE.stored_or(10, 7, || unreachable!()), 7);
        assert_eq!(SIZE.stored_or(11, 7, || 8), 8);
    }

    #[test]
    fn default_heap_rules() {
        // Capped at the largest size, at least 4 MiB before tripling.
        assert_eq!(SIZE.scaled_heap(20 * MIB, MIB, 10, 1), 60 * MIB);
        assert_eq!(SIZE.scaled_heap(20 * MIB, MIB, 80, 1), 240 * MIB);
        assert_eq!(SIZE.scaled_heap(20 * MIB, MIB, 1, 3), 18 * MIB);
        assert_eq!(linear_heap(3, 2, 0), 3);
        assert_eq!(linear_heap(3, 2, 4), 9);
        assert_eq!(round_up_mib(MIB + 1), 2 * MIB);
    }

    #[test]
    fn threads_report_in_order() {
        let heap = test_heap(4 * MIB, false);
        let r = on_threads(&heap, "t", 3, |_, i| {
            if i == 1 {
                Err(WorkloadError::Corrupt("one".into()))
            } else {
                Ok(i * 10)
            }
        });
        let r: Vec<_> = r
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect();
        assert_eq!(r[0], Ok(0));
        assert!(r[1].as_ref().unwrap_err().contains("one"));
        assert_eq!(r[2], Ok(20));
    }
}
