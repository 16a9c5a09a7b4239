//! What the workloads' drivers have in common, written once: the `--size` parameter
//! ([`Size`]: default, range, error message, default heap), the [`Workload`] methods of a
//! workload whose only own parameter is its size ([`SizedWorkload`]), running work on mutator
//! threads, building the [`WorkloadResult`] and its details, scopes that return a handle,
//! [`Gc`] views of handles that hold an object by construction,
//! corruption messages that name the tree, and for unit tests small heaps and checks that
//! generators are deterministic.
//!
//! None of it allocates on the workloads' behalf: what a workload allocates, in which order and
//! for how long stays in its own module.

use std::ops::RangeInclusive;

use concord::{Gc, Handle, Heap, Mutator};

use crate::{Workload, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// A workload's `--size` parameter, all of its size convention in one value: how an error
/// names it, its default, the values it accepts and the default heap that goes with a size.
///
/// Each workload with a size has one, as its module's `SIZE`, written
/// `Size::named(what, default, range, unit)` and then the default heap rule: one of
/// `.measured_heap(min, per_extra)`, `.scaled_heap(min, per_extra)` or `.computed_heap(f)`
/// (see [`Size::heap`]). An out-of-range size is reported as
/// `"{what} {value}{unit} is out of range (allowed: {min}..={max})"`.
#[derive(Clone, Debug)]
pub struct Size {
    /// Names the size before its value: "database size", "render image side (size)".
    what: &'static str,
    /// The size when `--size` is not given.
    default: u32,
    /// The sizes accepted.
    range: RangeInclusive<u32>,
    /// Follows the value: empty or starting with a space (" (thousands of rows)", " seconds").
    unit: &'static str,
    /// The default heap for a size and a number of mutators.
    heap: DefaultHeap,
}

/// A [`Size`] whose default heap is still to be given: what [`Size::named`] returns.
pub(crate) struct SizeWithoutHeap(&'static str, u32, RangeInclusive<u32>, &'static str);

impl SizeWithoutHeap {
    /// With [`DefaultHeap::Measured`].
    pub(crate) const fn measured_heap(self, min: usize, per_extra: usize) -> Size {
        self.heap(DefaultHeap::Measured { min, per_extra })
    }

    /// With [`DefaultHeap::Scaled`].
    pub(crate) const fn scaled_heap(self, min: usize, per_extra: usize) -> Size {
        self.heap(DefaultHeap::Scaled { min, per_extra })
    }

    /// With [`DefaultHeap::Computed`].
    pub(crate) const fn computed_heap(self, heap: fn(u32, usize) -> usize) -> Size {
        self.heap(DefaultHeap::Computed(heap))
    }

    const fn heap(self, heap: DefaultHeap) -> Size {
        let SizeWithoutHeap(what, default, range, unit) = self;
        Size {
            what,
            default,
            range,
            unit,
            heap,
        }
    }
}

/// How a workload's default heap follows from its size and its number of mutators. The
/// measured figures are smallest heaps that complete (optimized preset, 2 GC threads, release
/// build), as each workload's module documentation reports them. Both measured rules give
/// `3 · (smallest heap + per_extra · (mutators - 1))`, the smallest heap taken as at least
/// 4 MiB, rounded up to MiB.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DefaultHeap {
    /// The smallest heap is `min` whatever the size (the live set does not grow with it).
    Measured {
        /// The smallest heap with one mutator.
        min: usize,
        /// What each further mutator adds to it.
        per_extra: usize,
    },
    /// The smallest heap is estimated as `min` scaled linearly with the size (capped at the
    /// largest size).
    Scaled {
        /// The smallest heap at the default size with one mutator.
        min: usize,
        /// What each further mutator adds to it.
        per_extra: usize,
    },
    /// The workload's own function of the size and the number of mutators.
    Computed(fn(u32, usize) -> usize),
}

impl Size {
    /// A size named `what` before its value, `default` when not given, accepting `range`, with
    /// `unit` after the value (empty or starting with a space); its default heap rule follows.
    pub(crate) const fn named(
        what: &'static str,
        default: u32,
        range: RangeInclusive<u32>,
        unit: &'static str,
    ) -> SizeWithoutHeap {
        SizeWithoutHeap(what, default, range, unit)
    }

    /// The size when `--size` is not given.
    pub const fn default(&self) -> u32 {
        self.default
    }

    /// The sizes accepted.
    pub const fn range(&self) -> &RangeInclusive<u32> {
        &self.range
    }

    /// `params.size`, or the default, checked against the range.
    pub fn of(&self, params: &WorkloadParams) -> Result<u32, WorkloadError> {
        self.check(self.or_default(params))
    }

    /// The default heap in bytes for `size` (in range or not) and `mutators` mutators, by the
    /// workload's rule:
    ///
    /// - measured: three times the smallest heap measured with one mutator plus the measured
    ///   increment per further mutator, whatever the size;
    /// - scaled: the same, the smallest heap measured at the default size scaled linearly with
    ///   the size (capped at the largest size);
    /// - computed: the workload's own function of the size and the number of mutators.
    ///
    /// The measured rules take the smallest heap as at least 4 MiB and round up to MiB.
    pub fn heap(&self, size: u32, mutators: usize) -> usize {
        let (min, per_extra) = match self.heap {
            DefaultHeap::Measured { min, per_extra } => (min, per_extra),
            DefaultHeap::Scaled { min, per_extra } => {
                let per_size = min as f64 / f64::from(self.default);
                let scaled = per_size * f64::from(size.min(*self.range.end()));
                (scaled as usize, per_extra)
            }
            DefaultHeap::Computed(heap) => return heap(size, mutators),
        };
        let extra = per_extra.saturating_mul(mutators.saturating_sub(1));
        round_up_mib(min.max(4 * MIB).saturating_add(extra).saturating_mul(3))
    }

    /// The default heap for `params`: [`Size::heap`] of `params.size` (unchecked; the default
    /// if not given) and `params.mutators`.
    pub fn default_heap(&self, params: &WorkloadParams) -> usize {
        self.heap(self.or_default(params), params.mutators)
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
    fn or_default(&self, params: &WorkloadParams) -> u32 {
        params.size.unwrap_or(self.default)
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
}

/// A workload whose only own parameter is its `--size` (a unit struct): its name, description
/// and [`Size`] are all that [`Workload`]'s methods other than `run` need (the size gives the
/// default heap and the checks), and it runs with the size already checked. Implementing this
/// implements [`Workload`].
pub(crate) trait SizedWorkload: Send + Sync {
    /// [`Workload::name`].
    const NAME: &'static str;
    /// [`Workload::description`].
    const DESCRIPTION: &'static str;
    /// The `--size` parameter, which [`Workload::validate`] checks and which gives
    /// [`Workload::default_heap`].
    const SIZE: Size;

    /// Runs the workload as [`Workload::run`] does, once `params` are checked, `n` being the
    /// size they ask for.
    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError>;
}

impl<W: SizedWorkload> Workload for W {
    fn name(&self) -> &'static str {
        W::NAME
    }

    fn description(&self) -> &'static str {
        W::DESCRIPTION
    }

    fn default_heap(&self, params: &WorkloadParams) -> usize {
        W::SIZE.default_heap(params)
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        W::SIZE.checked(params).map(drop)
    }

    fn run(&self, heap: &Heap, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        let n = W::SIZE.checked(params)?;
        <W as SizedWorkload>::run(heap, params, n)
    }
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

/// [`Mutator::scope_escape`] for a closure that always returns a handle and may fail with any
/// [`WorkloadError`], not only run out of memory.
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

/// The object `h` holds, as a [`Gc`] for reads and stores until the mutator is next borrowed
/// `&mut`. For handles that hold an object by construction (a new allocation, a root the
/// workload keeps), so a null there is a bug in the workload, not heap corruption: that panics.
#[inline]
#[track_caller]
pub(crate) fn view<'m>(m: &'m Mutator<'_>, h: Handle) -> Gc<'m> {
    m.view(h)
        .expect("the handle holds an object by construction")
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

/// Asserts that the generator `generate` is deterministic and depends on its seed: the same
/// output twice for one seed, another for the next seed.
#[cfg(test)]
pub(crate) fn assert_deterministic<T: std::fmt::Debug + PartialEq>(generate: impl Fn(u64) -> T) {
    assert_eq!(generate(7), generate(7));
    assert_ne!(generate(7), generate(8));
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

    /// A size with the scaled heap rule.
    const SIZE: Size = thing().scaled_heap(20 * MIB, MIB);

    const fn thing() -> SizeWithoutHeap {
        Size::named("thing size", 10, 2..=40, " (widgets)")
    }

    #[test]
    fn size_defaults_checks_and_names_itself() {
        assert_eq!(SIZE.of(&WorkloadParams::default()).unwrap(), 10);
        assert_eq!((SIZE.default(), SIZE.range()), (10, &(2..=40)));
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
        // Scaled: capped at the largest size, at least 4 MiB before tripling.
        assert_eq!(SIZE.heap(10, 1), 60 * MIB);
        assert_eq!(SIZE.heap(80, 1), 240 * MIB);
        assert_eq!(SIZE.heap(1, 3), 18 * MIB);
        let p = WorkloadParams {
            mutators: 2,
            ..Default::default()
        };
        assert_eq!(SIZE.default_heap(&p), 63 * MIB);
        // Measured: the same at every size; no mutators count as one.
        let measured = thing().measured_heap(7 * MIB, 8 * MIB);
        assert_eq!(measured.heap(1, 1), 21 * MIB);
        assert_eq!(measured.heap(40, 0), 21 * MIB);
        assert_eq!(measured.heap(2, 4), 93 * MIB);
        // Computed.
        let computed = thing().computed_heap(|size, mutators| size as usize * mutators);
        assert_eq!(computed.heap(3, 5), 15);
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
