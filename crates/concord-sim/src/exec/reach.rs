//! What a collector's reach of an object costs in the memory hierarchy, beyond the copy itself:
//! the replay's model of caches and prefetchers, in two parts.
//!
//! * **Whether the line was read before** ([`TouchedLines`]): a reach of an object whose header
//!   lies on a line the collection already read (reaching or copying another object on it, or
//!   this one) hits, and is near.
//! * **How far a reach jumps** ([`classify`]): otherwise, the gap between the object reached and
//!   the one the same worker reached before (between their extents, either direction). Within
//!   [`LINE_BYTES`] it is near: the same or the adjacent cache line, which the next-line
//!   prefetcher has already brought in. Within a 4 KiB page ([`PAGE_BYTES`]) it is a *line
//!   miss*: another line of a page the stream prefetchers may or may not have fetched. Farther
//!   it is a *far access*: another page, a TLB lookup and a line nobody prefetched.
//! * **How much a collection touches** ([`footprint`]): the bytes of the distinct cache lines
//!   its objects lie on. Whether a missed line comes from the private L2, the shared L3 or memory
//!   depends on it, so each cost is given at a few footprints ([`ReachCosts`]) and interpolated
//!   between them in the logarithm of the footprint (clamped outside them).
//!
//! `concord sim calibrate` measures the costs with trees whose collection reaches jump in each
//! way, at footprints from below this machine's L2 to about its L3; the built-in costs charge
//! nothing ([`ReachCosts::NONE`]).

use super::Ns;

/// The widest gap between two objects reached one after the other that is still near: the next
/// cache line.
pub const LINE_BYTES: u64 = 64;

/// The widest gap that is a line miss rather than a far access: a page.
pub const PAGE_BYTES: u64 = 4096;

/// The most footprints a [`ReachCosts`] holds.
pub const POINTS: usize = 6;

/// How a reach jumped from the worker's previous one ([`classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Within [`LINE_BYTES`]: free.
    Near,
    /// Within [`PAGE_BYTES`]: [`ReachPoint::line_miss`].
    Line,
    /// Farther, or the worker's first reach: [`ReachPoint::far_access`].
    Far,
}

/// The jump from `last` (the extent `(address, bytes)` of the object the worker reached before,
/// `None` for its first reach) to the object at `at` of `size` bytes.
pub fn classify(last: Option<(u64, u64)>, at: u64, size: u64) -> Reach {
    let Some((prev, prev_size)) = last else {
        return Reach::Far;
    };
    let gap = if at >= prev {
        at.saturating_sub(prev.saturating_add(prev_size))
    } else {
        prev.saturating_sub(at.saturating_add(size))
    };
    match gap {
        g if g <= LINE_BYTES => Reach::Near,
        g if g <= PAGE_BYTES => Reach::Line,
        _ => Reach::Far,
    }
}

/// The footprint of objects given as extents `(address, bytes)` in ascending address order: the
/// bytes of the distinct [`LINE_BYTES`] cache lines they cover (what reading them all brings
/// into the caches).
pub fn footprint(extents: impl IntoIterator<Item = (u64, u64)>) -> u64 {
    let mut lines = 0u64;
    // The last line counted, so that objects sharing a line count it once.
    let mut counted: Option<u64> = None;
    for (at, size) in extents {
        let first = at / LINE_BYTES;
        let last = at.saturating_add(size.max(1) - 1) / LINE_BYTES;
        let from = match counted {
            Some(c) if c >= first => c + 1,
            _ => first,
        };
        if last >= from {
            lines += last - from + 1;
            counted = Some(last);
        }
    }
    lines.saturating_mul(LINE_BYTES)
}

/// The cache lines a collection has read so far, shared by its workers: a reach of an object
/// whose header lies on one of them hits (an earlier reach or copy brought the line in). Plain
/// atomics, not the simulated ones: the record is the model's, not work the collector does.
pub struct TouchedLines {
    bits: Vec<std::sync::atomic::AtomicU64>,
}

impl TouchedLines {
    /// No line touched, for objects lying below byte `end`.
    pub fn new(end: u64) -> TouchedLines {
        let lines = end.div_ceil(LINE_BYTES);
        TouchedLines {
            bits: (0..lines.div_ceil(64))
                .map(|_| std::sync::atomic::AtomicU64::new(0))
                .collect(),
        }
    }

    /// Whether the line holding byte `at` was touched.
    pub fn contains(&self, at: u64) -> bool {
        let line = at / LINE_BYTES;
        self.bits
            .get((line / 64) as usize)
            .is_some_and(|w| w.load(std::sync::atomic::Ordering::Relaxed) & (1 << (line % 64)) != 0)
    }

    /// Marks the lines of the object at `at` of `size` bytes touched.
    pub fn touch(&self, at: u64, size: u64) {
        let (first, last) = (
            at / LINE_BYTES,
            at.saturating_add(size.max(1) - 1) / LINE_BYTES,
        );
        for line in first..=last {
            if let Some(w) = self.bits.get((line / 64) as usize) {
                w.fetch_or(1 << (line % 64), std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

/// The costs of a line miss and of a far access for collections of one footprint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReachPoint {
    /// Bytes ([`footprint`]).
    pub footprint: u64,
    /// A [`Reach::Line`], ns.
    pub line_miss: Ns,
    /// A [`Reach::Far`], ns.
    pub far_access: Ns,
}

/// The reach costs at up to [`POINTS`] footprints, ascending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReachCosts {
    points: [ReachPoint; POINTS],
    len: usize,
}

impl ReachCosts {
    /// Nothing charged for any reach.
    pub const NONE: ReachCosts = ReachCosts {
        points: [ReachPoint {
            footprint: 0,
            line_miss: 0,
            far_access: 0,
        }; POINTS],
        len: 0,
    };

    /// The same costs at every footprint.
    pub fn flat(line_miss: Ns, far_access: Ns) -> ReachCosts {
        ReachCosts::new(&[ReachPoint {
            footprint: 1,
            line_miss,
            far_access,
        }])
        .expect("one point with a positive footprint is a valid table")
    }

    /// The table of `points`: at most [`POINTS`], footprints positive and strictly ascending.
    pub fn new(points: &[ReachPoint]) -> Result<ReachCosts, String> {
        if points.len() > POINTS {
            return Err(format!(
                "{} reach-cost footprints given; at most {POINTS} are allowed",
                points.len()
            ));
        }
        if let Some(p) = points.iter().find(|p| p.footprint == 0) {
            return Err(format!(
                "a reach-cost footprint of 0 bytes ({p:?}); footprints must be positive"
            ));
        }
        if points.windows(2).any(|w| w[0].footprint >= w[1].footprint) {
            return Err("reach-cost footprints must be strictly ascending".to_string());
        }
        let mut table = ReachCosts::NONE;
        table.points[..points.len()].copy_from_slice(points);
        table.len = points.len();
        Ok(table)
    }

    /// The footprints and their costs.
    pub fn points(&self) -> &[ReachPoint] {
        &self.points[..self.len]
    }

    /// Whether no reach costs anything.
    pub fn is_free(&self) -> bool {
        self.points()
            .iter()
            .all(|p| p.line_miss == 0 && p.far_access == 0)
    }

    /// `(line miss, far access)` for a collection of `footprint` bytes: each cost interpolated
    /// linearly in `log2(footprint)` between the two footprints around it, the nearest one's
    /// outside them; `(0, 0)` for an empty table.
    pub fn at(&self, footprint: u64) -> (Ns, Ns) {
        let costs = |p: &ReachPoint| [p.line_miss, p.far_access];
        interpolate_log2(self.points(), footprint, |p| p.footprint, costs)
            .map_or((0, 0), |[line, far]| (line, far))
    }
}

/// The values `of` a table's `points` (keys `key` positive and ascending) at `x`: each
/// interpolated linearly in `log2(x)` between the two points around it, the nearest point's
/// outside them; `None` for no points. The lookup of both the reach and the wake-up tables.
pub(crate) fn interpolate_log2<P, const N: usize>(
    points: &[P],
    x: u64,
    key: impl Fn(&P) -> u64,
    of: impl Fn(&P) -> [Ns; N],
) -> Option<[Ns; N]> {
    let (first, last) = (points.first()?, points.last()?);
    if x <= key(first) {
        return Some(of(first));
    }
    if x >= key(last) {
        return Some(of(last));
    }
    let i = points
        .windows(2)
        .position(|w| x < key(&w[1]))
        .expect("x lies below the last point");
    let (lo, hi) = (&points[i], &points[i + 1]);
    let log = |b: u64| (b as f64).log2();
    let t = (log(x) - log(key(lo))) / (log(key(hi)) - log(key(lo)));
    let (a, b) = (of(lo), of(hi));
    Some(std::array::from_fn(|k| {
        (a[k] as f64 + t * (b[k] as f64 - a[k] as f64)).round() as Ns
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reach_is_near_within_a_line_a_line_miss_within_a_page_and_far_beyond() {
        // The gap is between extents: after a 32-byte object at 0, one at 96 is 64 bytes away.
        assert_eq!(classify(Some((0, 32)), 96, 32), Reach::Near);
        assert_eq!(classify(Some((0, 32)), 97, 32), Reach::Line);
        assert_eq!(classify(Some((0, 32)), 32 + 4096, 32), Reach::Line);
        assert_eq!(classify(Some((0, 32)), 33 + 4096, 32), Reach::Far);
        // Backwards: the gap from the new object's end to the old one's start.
        assert_eq!(classify(Some((1000, 32)), 900, 36), Reach::Near);
        assert_eq!(classify(Some((1000, 32)), 800, 36), Reach::Line);
        assert_eq!(classify(Some((1 << 20, 32)), 0, 36), Reach::Far);
        // A large object right after the last one is near however large it is.
        assert_eq!(classify(Some((0, 4096)), 4096, 1 << 20), Reach::Near);
        // Overlap (the same object again) is near; the first reach is far.
        assert_eq!(classify(Some((64, 32)), 64, 32), Reach::Near);
        assert_eq!(classify(None, 0, 32), Reach::Far);
    }

    #[test]
    fn touched_lines_are_remembered_whole_objects_at_a_time() {
        let lines = TouchedLines::new(1 << 20);
        assert!(!lines.contains(0));
        // An object of 150 bytes from byte 100 covers lines 1 to 3.
        lines.touch(100, 150);
        assert!(!lines.contains(63) && lines.contains(64) && lines.contains(255));
        assert!(!lines.contains(256));
        // Beyond the end nothing is remembered (and nothing panics).
        lines.touch(1 << 30, 8);
        assert!(!lines.contains(1 << 30));
    }

    #[test]
    fn the_footprint_counts_each_line_once() {
        assert_eq!(footprint([]), 0);
        // Two objects on line 0, one from line 1 to line 3, one on line 100.
        let extents = [(0, 32), (32, 32), (100, 150), (100 * 64 + 8, 16)];
        assert_eq!(footprint(extents), 5 * 64);
        // A 1 MiB object from a line boundary: 16 Ki lines; an empty one still lies on a line.
        assert_eq!(footprint([(8192, 1 << 20)]), 1 << 20);
        assert_eq!(footprint([(5, 0)]), 64);
    }

    #[test]
    fn costs_are_interpolated_in_the_log_of_the_footprint_and_clamped_outside() {
        let table = ReachCosts::new(&[
            ReachPoint {
                footprint: 1 << 20,
                line_miss: 10,
                far_access: 100,
            },
            ReachPoint {
                footprint: 4 << 20,
                line_miss: 30,
                far_access: 200,
            },
        ])
        .unwrap();
        assert_eq!(table.at(1), (10, 100));
        assert_eq!(table.at(1 << 20), (10, 100));
        // 2 MiB is half way between 1 and 4 MiB in log2.
        assert_eq!(table.at(2 << 20), (20, 150));
        assert_eq!(table.at(4 << 20), (30, 200));
        assert_eq!(table.at(1 << 40), (30, 200));
        assert_eq!(ReachCosts::NONE.at(1 << 20), (0, 0));
        assert!(ReachCosts::NONE.is_free() && !table.is_free());
        assert_eq!(ReachCosts::flat(3, 7).at(1 << 30), (3, 7));
    }

    #[test]
    fn a_table_refuses_too_many_zero_or_unordered_footprints() {
        let p = |footprint| ReachPoint {
            footprint,
            line_miss: 1,
            far_access: 1,
        };
        let many: Vec<ReachPoint> = (1..=7).map(p).collect();
        assert!(ReachCosts::new(&many).unwrap_err().contains("at most 6"));
        assert!(ReachCosts::new(&[p(0)]).unwrap_err().contains("positive"));
        assert!(ReachCosts::new(&[p(2), p(2)])
            .unwrap_err()
            .contains("ascending"));
        assert_eq!(ReachCosts::new(&[]).unwrap(), ReachCosts::NONE);
    }
}
