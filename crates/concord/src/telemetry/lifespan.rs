//! The object-lifespan profiler (`GcConfig::lifespans`): samples allocations, follows the sampled
//! objects through collections and reports a histogram of their lifespans.
//!
//! **Lifespan** is measured as in 001 §2 (Fig. 1 and 3): the bytes allocated heap-wide between an
//! object's allocation and its death.
//!
//! **Sampling.** Each mutator sees its own allocations as a stream of bytes and samples the
//! object that covers a point of a Poisson process on that stream (exponentially distributed
//! gaps, mean [`DEFAULT_SAMPLE_INTERVAL`] or `GcConfig::lifespan_sample_bytes`; 0 samples every
//! object, and then every allocation takes the slow path). The allocation fast path is not changed: the mutator
//! lowers the end of its TLAB to the next sample point, so the bump-pointer check fails there and
//! the slow path records the sample and allocates the object in the TLAB (HotSpot's JEP 331
//! trick). Without the profiler the TLAB end is the real end and the slow paths do one extra
//! test. The random gaps avoid aliasing with periodic allocation patterns.
//!
//! *Bias:* sampling is proportional to size. An object of `s` bytes is sampled with probability
//! `p = 1 - exp(-s / interval)`, so the histogram counts are per sampled *byte* (the lifespan
//! distribution of allocated memory). `dead_objects_estimate` re-weights each sample by `1 / p`
//! to estimate the per-*object* distribution (001 Fig. 3 counts objects).
//!
//! **Clock and precision.** The clock is the heap's allocation counter (bytes in retired TLABs
//! plus direct allocations). Mutators retire their TLAB before every stop, so at a collection the
//! clock is exact. A sample's birth is the clock plus the sampling mutator's own unretired TLAB
//! bytes below the object: exact with one mutator; with several, other mutators' unretired TLAB
//! bytes are missing, so a birth may be early (a lifespan long) by less than
//! `(mutators - 1) × TLAB size`, about eden / 50. A death is seen only at the collection that
//! finds the object unreachable: the next scavenge for young objects, the next full collection
//! for old (promoted or large) ones. Lifespans are therefore rounded *up* to collection
//! granularity — for young objects by less than one eden of allocation. A copying collector
//! learns of a death only when it collects, so that is the resolution: a smaller young
//! generation (`young`) makes it finer, at the price of more scavenges and of objects promoted
//! younger, whose deaths are then seen only at full collections.
//!
//! **001 Fig. 3.** The figure gives the share of *objects* per lifespan bucket; each report
//! bucket carries it as `object_share` (the bucket's `dead_objects_estimate` over all dead
//! objects), exact when every object is sampled.
//!
//! **Censoring.** Samples not seen to die — alive at the last collection, or allocated after
//! it — are reported apart as censored: their lifespan is at least `clock - birth` at the report.
//!
//! **Safety.** The profiler holds only addresses and clock values. The collectors update the
//! addresses it follows ([`LifespanProfiler::follow_collection`]) from forwarding headers and
//! mark bitmaps; nothing ever writes object memory on its behalf.

use std::fmt;
use std::sync::{Mutex, MutexGuard};

use crate::config::format_size;

/// Mean bytes of a mutator's allocation between two samples.
pub const DEFAULT_SAMPLE_INTERVAL: u64 = 64 * 1024;

/// Lower bound of the first closed report bucket (everything below falls in `[0, 1 KiB)`).
const FIRST_BUCKET_LOG2: u32 = 10;
/// Lower bound of the last, open report bucket (64 GiB).
const LAST_BUCKET_LOG2: u32 = 36;
/// Report buckets: `[0, 1K)`, one per power of two up to 64 GiB, then `[64G, ∞)`.
const REPORT_BUCKETS: usize = (LAST_BUCKET_LOG2 - FIRST_BUCKET_LOG2) as usize + 2;

/// Sub-buckets per power of two of the fine histogram the percentiles come from.
const SUB_BITS: u32 = 4;
const SUB: u64 = 1 << SUB_BITS;
const FINE_BUCKETS: usize = (SUB + (64 - SUB_BITS as u64) * SUB) as usize;

/// One sampled object the profiler follows.
#[derive(Clone, Copy, Debug)]
struct Sample {
    birth: u64,
    size: u64,
}

/// Lifespans of dead samples.
struct DeadHistogram {
    /// Log-linear: exact below 16, then 16 sub-buckets per power of two (< 6.25 % wide).
    fine: Box<[u64]>,
    /// Per report bucket: estimated dead objects (Σ 1/p).
    objects: [f64; REPORT_BUCKETS],
    count: u64,
    sum: u128,
}

impl DeadHistogram {
    fn new() -> Self {
        Self {
            fine: vec![0; FINE_BUCKETS].into_boxed_slice(),
            objects: [0.0; REPORT_BUCKETS],
            count: 0,
            sum: 0,
        }
    }

    fn add(&mut self, lifespan: u64, weight: f64) {
        self.fine[fine_index(lifespan)] += 1;
        self.objects[report_index(lifespan)] += weight;
        self.count += 1;
        self.sum += u128::from(lifespan);
    }

    /// Nearest-rank percentile `q` in (0, 1], as the middle of its fine bucket.
    fn percentile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.fine.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (lo, hi) = fine_bounds(i);
                return Some(lo + (hi - lo) / 2);
            }
        }
        unreachable!("rank is at most the count")
    }
}

/// Fine-histogram bucket of `v`.
fn fine_index(v: u64) -> usize {
    if v < SUB {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= SUB_BITS
    let mantissa = (v >> (e - SUB_BITS)) & (SUB - 1);
    (SUB + u64::from(e - SUB_BITS) * SUB + mantissa) as usize
}

/// `[lo, hi)` of fine bucket `i` (the last one ends at `u64::MAX`).
fn fine_bounds(i: usize) -> (u64, u64) {
    let i = i as u64;
    if i < SUB {
        return (i, i + 1);
    }
    let e = (i - SUB) / SUB + u64::from(SUB_BITS);
    let mantissa = (i - SUB) % SUB;
    let width = 1u64 << (e - u64::from(SUB_BITS));
    let lo = (1u64 << e) + mantissa * width;
    (lo, lo.saturating_add(width))
}

/// Report bucket of `v`.
fn report_index(v: u64) -> usize {
    if v < 1 << FIRST_BUCKET_LOG2 {
        return 0;
    }
    let log = 63 - v.leading_zeros();
    (log.min(LAST_BUCKET_LOG2) - FIRST_BUCKET_LOG2 + 1) as usize
}

/// `[lo, hi)` of report bucket `i`; `hi` is `None` for the last, open one.
fn report_bounds(i: usize) -> (u64, Option<u64>) {
    if i == 0 {
        return (0, Some(1 << FIRST_BUCKET_LOG2));
    }
    let log = FIRST_BUCKET_LOG2 + i as u32 - 1;
    let hi = (log < LAST_BUCKET_LOG2).then(|| 1u64 << (log + 1));
    (1u64 << log, hi)
}

struct State {
    /// Current addresses of the followed samples (parallel to `samples`); the collectors
    /// rewrite them in place.
    addrs: Vec<usize>,
    samples: Vec<Sample>,
    dead: DeadHistogram,
    taken: u64,
}

/// Samples allocations and follows them through collections (see the module documentation).
pub struct LifespanProfiler {
    interval: u64,
    state: Mutex<State>,
}

impl fmt::Debug for LifespanProfiler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LifespanProfiler")
            .field("interval", &self.interval)
            .finish_non_exhaustive()
    }
}

impl Default for LifespanProfiler {
    fn default() -> Self {
        Self::new(DEFAULT_SAMPLE_INTERVAL)
    }
}

impl LifespanProfiler {
    /// A profiler sampling once per `interval` bytes of a mutator's allocation on average;
    /// `interval` 0 samples every object.
    pub fn new(interval: u64) -> Self {
        Self {
            interval: if interval == 0 {
                0
            } else {
                interval.max(crate::object::WORD as u64)
            },
            state: Mutex::new(State {
                addrs: Vec::new(),
                samples: Vec::new(),
                dead: DeadHistogram::new(),
                taken: 0,
            }),
        }
    }

    /// Mean bytes between samples.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Bytes of allocation until the next sample point: exponentially distributed with mean
    /// `interval` (a Poisson process on the allocation stream), drawn from the caller's
    /// generator state `rng` (any value), at least one word and at most 32 × `interval`; 0
    /// with `interval` 0 (the next object is sampled).
    pub fn next_gap(&self, rng: &mut u64) -> usize {
        if self.interval == 0 {
            return 0;
        }
        // splitmix64.
        *rng = rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // Uniform in (0, 1]: never ln(0).
        let u = ((z >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let gap = -u.ln() * self.interval as f64;
        let word = crate::object::WORD as f64;
        gap.clamp(word, 32.0 * self.interval as f64) as usize
    }

    /// Follow the object of `size` bytes at `addr`, allocated when the clock read `birth`.
    /// `addr` must be an object start; the object must be fully initialised before the next
    /// collection.
    pub fn record(&self, addr: usize, size: usize, birth: u64) {
        let mut st = self.state();
        st.addrs.push(addr);
        st.samples.push(Sample {
            birth,
            size: size as u64,
        });
        st.taken += 1;
    }

    /// Run a collection that updates the followed addresses: `collect` gets them (object starts
    /// before the collection) and leaves each as the object's address afterwards, or 0 if it
    /// died. Samples set to 0 die with lifespan `now - birth`, `now` being the clock at the
    /// collection. Call with the world stopped.
    pub fn follow_collection<R>(&self, now: u64, collect: impl FnOnce(&mut [usize]) -> R) -> R {
        let mut guard = self.state();
        let st = &mut *guard;
        let r = collect(&mut st.addrs);
        let mut i = 0;
        while i < st.addrs.len() {
            if st.addrs[i] != 0 {
                i += 1;
                continue;
            }
            let s = st.samples[i];
            let weight = 1.0 / self.inclusion_probability(s.size);
            st.dead.add(now.saturating_sub(s.birth), weight);
            st.addrs.swap_remove(i);
            st.samples.swap_remove(i);
        }
        r
    }

    /// Probability that an object of `size` bytes is sampled.
    fn inclusion_probability(&self, size: u64) -> f64 {
        if self.interval == 0 {
            return 1.0;
        }
        let p = -(-(size as f64) / self.interval as f64).exp_m1();
        p.max(f64::MIN_POSITIVE)
    }

    /// Number of samples followed now (not yet seen to die).
    pub fn followed(&self) -> usize {
        self.state().addrs.len()
    }

    /// The report as of clock value `now`; followed samples are censored at `now`.
    pub fn report(&self, now: u64) -> LifespanReport {
        let st = self.state();
        let mut buckets: Vec<LifespanBucket> = (0..REPORT_BUCKETS)
            .map(|i| {
                let (lo, hi) = report_bounds(i);
                LifespanBucket {
                    lo_bytes: lo,
                    hi_bytes: hi,
                    dead: 0,
                    censored: 0,
                    dead_objects_estimate: st.dead.objects[i],
                    object_share: 0.0,
                }
            })
            .collect();
        for (i, &n) in st.dead.fine.iter().enumerate() {
            if n > 0 {
                buckets[report_index(fine_bounds(i).0)].dead += n;
            }
        }
        let mut bounds: Vec<u64> = st
            .samples
            .iter()
            .map(|s| now.saturating_sub(s.birth))
            .collect();
        for &b in &bounds {
            buckets[report_index(b)].censored += 1;
        }
        bounds.sort_unstable();
        let dead = &st.dead;
        let objects: f64 = dead.objects.iter().sum();
        if objects > 0.0 {
            for b in &mut buckets {
                b.object_share = b.dead_objects_estimate / objects;
            }
        }
        LifespanReport {
            sample_interval_bytes: self.interval,
            allocated_bytes: now,
            samples: st.taken,
            dead: dead.count,
            censored: st.samples.len() as u64,
            median_bytes: dead.percentile(0.5),
            p90_bytes: dead.percentile(0.9),
            mean_bytes: (dead.count > 0).then(|| dead.sum as f64 / dead.count as f64),
            censored_median_min_bytes: (!bounds.is_empty()).then(|| bounds[(bounds.len() - 1) / 2]),
            buckets,
        }
    }
}

/// Lifespans of sampled objects (see [`LifespanProfiler`]): all figures in bytes allocated
/// heap-wide between birth and death, sampled in proportion to object size.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LifespanReport {
    /// Mean bytes of a mutator's allocation between two samples.
    pub sample_interval_bytes: u64,
    /// The clock (bytes allocated heap-wide) when the report was taken.
    pub allocated_bytes: u64,
    /// Samples taken (`dead + censored`).
    pub samples: u64,
    /// Samples seen to die in a collection.
    pub dead: u64,
    /// Samples not seen to die: alive at the last collection (alive at exit) or allocated after
    /// it. Their lifespan is at least `allocated_bytes - birth`.
    pub censored: u64,
    /// Median lifespan of the dead samples (within 6.25 %); `None` without dead samples.
    pub median_bytes: Option<u64>,
    /// 90th percentile of the dead samples' lifespans (within 6.25 %).
    pub p90_bytes: Option<u64>,
    /// Mean lifespan of the dead samples.
    pub mean_bytes: Option<f64>,
    /// Median lower bound of the censored samples' lifespans.
    pub censored_median_min_bytes: Option<u64>,
    /// Log2 buckets: `[0, 1 KiB)`, `[1 KiB, 2 KiB)`, … `[32 GiB, 64 GiB)`, `[64 GiB, ∞)`.
    pub buckets: Vec<LifespanBucket>,
}

/// One bucket of a [`LifespanReport`].
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct LifespanBucket {
    /// Lifespans from this many bytes (inclusive)…
    pub lo_bytes: u64,
    /// …to this many (exclusive); `None` for the last, open bucket.
    pub hi_bytes: Option<u64>,
    /// Dead samples with a lifespan here.
    pub dead: u64,
    /// Censored samples whose lower bound lies here (their lifespan is here or above).
    pub censored: u64,
    /// Estimated number of dead *objects* with a lifespan here (each sample weighted by the
    /// inverse of its size-dependent sampling probability).
    pub dead_objects_estimate: f64,
    /// This bucket's share of all dead objects (`dead_objects_estimate` over their sum; 0
    /// without dead samples): 001 Fig. 3's y axis.
    pub object_share: f64,
}

impl LifespanReport {
    /// Dead samples with a lifespan in `[lo, hi)` (whole buckets only: bounds are rounded down to
    /// bucket bounds).
    pub fn dead_between(&self, lo: u64, hi: u64) -> u64 {
        self.buckets
            .iter()
            .filter(|b| b.lo_bytes >= bucket_floor(lo) && b.lo_bytes < bucket_floor(hi))
            .map(|b| b.dead)
            .sum()
    }

    /// Share of dead objects (001 Fig. 3: estimated from the samples) with a lifespan below
    /// `bytes` (rounded down to a bucket bound); 0 without dead samples.
    pub fn object_share_below(&self, bytes: u64) -> f64 {
        self.buckets
            .iter()
            .filter(|b| b.lo_bytes < bucket_floor(bytes))
            .map(|b| b.object_share)
            .sum()
    }

    /// Fraction of dead samples with a lifespan below `bytes` (rounded down to a bucket bound);
    /// 0 without dead samples.
    pub fn dead_fraction_below(&self, bytes: u64) -> f64 {
        if self.dead == 0 {
            return 0.0;
        }
        self.dead_between(0, bytes) as f64 / self.dead as f64
    }
}

/// The lower bound of the report bucket holding `v`.
fn bucket_floor(v: u64) -> u64 {
    report_bounds(report_index(v)).0
}

impl fmt::Display for LifespanReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let size = |b: u64| format_size(usize::try_from(b).unwrap_or(usize::MAX));
        let rate = if self.sample_interval_bytes == 0 {
            "every object sampled".to_string()
        } else {
            format!(
                "1 sample per {} allocated",
                size(self.sample_interval_bytes)
            )
        };
        writeln!(
            f,
            "object lifespans (bytes allocated from birth to death; {rate}):"
        )?;
        writeln!(
            f,
            "  samples {}: {} dead, {} censored (alive at exit or not yet collected)",
            self.samples, self.dead, self.censored
        )?;
        if let (Some(m), Some(p90), Some(mean)) =
            (self.median_bytes, self.p90_bytes, self.mean_bytes)
        {
            writeln!(
                f,
                "  dead: median {}, p90 {}, mean {}",
                size(m),
                size(p90),
                size(mean as u64)
            )?;
        }
        if let Some(c) = self.censored_median_min_bytes {
            writeln!(f, "  censored: median lifespan >= {}", size(c))?;
        }
        writeln!(
            f,
            "  {:>17} {:>9} {:>9} {:>14} {:>9}",
            "lifespan", "dead", "censored", "dead objects~", "objects%"
        )?;
        for b in self.buckets.iter().filter(|b| b.dead + b.censored > 0) {
            let range = match b.hi_bytes {
                Some(hi) if b.lo_bytes == 0 => format!("< {}", size(hi)),
                Some(hi) => format!("{}..{}", size(b.lo_bytes), size(hi)),
                None => format!(">= {}", size(b.lo_bytes)),
            };
            writeln!(
                f,
                "  {:>17} {:>9} {:>9} {:>14.0} {:>8.1}%",
                range,
                b.dead,
                b.censored,
                b.dead_objects_estimate,
                100.0 * b.object_share
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fine_buckets_tile_the_range() {
        let mut prev_hi = 0;
        for i in 0..FINE_BUCKETS {
            let (lo, hi) = fine_bounds(i);
            assert_eq!(lo, prev_hi, "bucket {i}");
            assert!(hi > lo);
            assert_eq!(fine_index(lo), i);
            assert_eq!(fine_index(hi - 1), i);
            prev_hi = hi;
        }
        assert_eq!(prev_hi, u64::MAX);
        assert_eq!(fine_index(u64::MAX), FINE_BUCKETS - 1);
        for v in [17u64, 1000, 1 << 20, (1 << 33) + 12345] {
            let (lo, hi) = fine_bounds(fine_index(v));
            assert!(lo <= v && v < hi);
            assert!((hi - lo) as f64 <= v as f64 / 16.0 + 1.0);
        }
    }

    #[test]
    fn report_buckets_are_log2_from_1k_to_64g() {
        assert_eq!(report_index(0), 0);
        assert_eq!(report_index(1023), 0);
        assert_eq!(report_index(1024), 1);
        assert_eq!(report_index(2047), 1);
        assert_eq!(report_index(2048), 2);
        assert_eq!(report_index((1 << 36) - 1), REPORT_BUCKETS - 2);
        assert_eq!(report_index(1 << 36), REPORT_BUCKETS - 1);
        assert_eq!(report_index(u64::MAX), REPORT_BUCKETS - 1);
        assert_eq!(report_bounds(0), (0, Some(1024)));
        assert_eq!(report_bounds(1), (1024, Some(2048)));
        assert_eq!(report_bounds(REPORT_BUCKETS - 1), (1 << 36, None));
        for i in 0..REPORT_BUCKETS {
            assert_eq!(report_index(report_bounds(i).0), i);
        }
    }

    #[test]
    fn percentiles_and_mean_of_dead_samples() {
        let mut h = DeadHistogram::new();
        assert_eq!(h.percentile(0.5), None);
        for v in 1..=100u64 {
            h.add(v * 1000, 1.0);
        }
        let med = h.percentile(0.5).unwrap() as f64;
        let p90 = h.percentile(0.9).unwrap() as f64;
        assert!((med / 50_000.0 - 1.0).abs() < 0.07, "{med}");
        assert!((p90 / 90_000.0 - 1.0).abs() < 0.07, "{p90}");
        assert_eq!(h.sum, 5050 * 1000);
    }

    #[test]
    fn gaps_average_the_interval() {
        let p = LifespanProfiler::new(64 * 1024);
        let mut rng = 42;
        let n = 20_000;
        let total: usize = (0..n).map(|_| p.next_gap(&mut rng)).sum();
        let mean = total as f64 / n as f64;
        assert!((mean / 65536.0 - 1.0).abs() < 0.05, "mean gap {mean}");
        let mut rng = 7;
        assert!((0..1000).all(|_| {
            let g = p.next_gap(&mut rng);
            (8..=32 * 65536).contains(&g)
        }));
    }

    #[test]
    fn sampling_every_object_weighs_each_sample_as_one_object() {
        let p = LifespanProfiler::new(0);
        assert_eq!(p.interval(), 0);
        let mut rng = 1;
        assert_eq!(p.next_gap(&mut rng), 0);
        // Three objects die at 500 bytes, one at 5000 (hand-computed shares: 3/4 and 1/4).
        for (i, birth) in [0u64, 100, 200, 300].into_iter().enumerate() {
            p.record(0x1000 + 64 * i, 16, birth);
        }
        p.follow_collection(600, |addrs| {
            addrs[0] = 0;
            addrs[1] = 0;
            addrs[2] = 0;
        });
        p.follow_collection(5_300, |addrs| addrs[0] = 0);
        let r = p.report(6_000);
        assert_eq!((r.samples, r.dead, r.censored), (4, 4, 0));
        assert_eq!(r.buckets[0].dead_objects_estimate, 3.0);
        assert_eq!(r.buckets[0].object_share, 0.75);
        assert_eq!(r.buckets[report_index(5_000)].object_share, 0.25);
        assert_eq!(r.object_share_below(1024), 0.75);
        assert_eq!(r.object_share_below(8192), 1.0);
        let text = r.to_string();
        assert!(text.contains("every object sampled"), "{text}");
        assert!(text.contains("75.0%"), "{text}");
        // Without dead samples every share is 0.
        let empty = LifespanProfiler::new(0).report(0);
        assert!(empty.buckets.iter().all(|b| b.object_share == 0.0));
    }

    #[test]
    fn collections_move_kill_and_censor_samples() {
        let p = LifespanProfiler::new(1024);
        p.record(0x1000, 64, 100);
        p.record(0x2000, 64, 200);
        p.record(0x3000, 1 << 20, 300);
        // A scavenge: the first dies, the second moves, the third (old) is untouched.
        p.follow_collection(5_000, |addrs| {
            assert_eq!(addrs, &[0x1000, 0x2000, 0x3000]);
            addrs[0] = 0;
            addrs[1] = 0x9000;
        });
        assert_eq!(p.followed(), 2);
        // A full collection: the large one dies.
        p.follow_collection(1 << 30, |addrs| {
            let mut sorted = addrs.to_vec();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0x3000, 0x9000]);
            for a in addrs.iter_mut() {
                if *a == 0x3000 {
                    *a = 0;
                }
            }
        });
        let r = p.report((1 << 30) + 800);
        assert_eq!((r.samples, r.dead, r.censored), (3, 2, 1));
        assert_eq!(r.buckets[report_index(4_900)].dead, 1);
        assert_eq!(r.buckets[report_index((1 << 30) - 300)].dead, 1);
        assert_eq!(r.buckets[report_index((1 << 30) + 600)].censored, 1);
        assert_eq!(r.censored_median_min_bytes, Some((1 << 30) + 600));
        assert_eq!(r.dead_between(0, 1 << 20), 1);
        assert_eq!(r.dead_fraction_below(1 << 31), 1.0);
        // A small object stands for many objects, a large one for about one.
        let small = r.buckets[report_index(4_900)].dead_objects_estimate;
        let large = r.buckets[report_index((1 << 30) - 300)].dead_objects_estimate;
        assert!(small > 15.0 && small < 17.0, "{small}");
        assert!((large - 1.0).abs() < 1e-6, "{large}");
        let text = r.to_string();
        assert!(text.contains("2 dead, 1 censored"), "{text}");
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["censored"], 1);
        assert_eq!(json["buckets"].as_array().unwrap().len(), REPORT_BUCKETS);
    }
}
