//! A side bitmap with one bit per heap word, used for mark bits, live-word maps and object starts.

use std::sync::atomic::{AtomicU64, Ordering};

use super::side_table::{SideTable, SideTableError};
use crate::object::WORD;

/// Heap bytes covered by one bitmap word (64 heap words).
pub const BYTES_PER_BITMAP_WORD: usize = 64 * WORD;

/// One bit per word over `[base, base + size)`. All updates are atomic so that workers may mark
/// neighbouring objects concurrently.
pub struct Bitmap {
    base: usize,
    size: usize,
    words: SideTable<AtomicU64>,
}

impl Bitmap {
    /// A cleared bitmap covering `[base, base + size)`; `base` must be word aligned. `what`
    /// names it if the memory cannot be had.
    pub fn new(what: &'static str, base: usize, size: usize) -> Result<Self, SideTableError> {
        let n = size.div_ceil(BYTES_PER_BITMAP_WORD);
        Ok(Self {
            base,
            size,
            words: SideTable::new(what, n)?,
        })
    }

    /// The bitmap's memory, `(start, bytes)`, page aligned (for pretouching it).
    pub fn mapped_range(&self) -> (usize, usize) {
        self.words.mapped_range()
    }

    #[inline(always)]
    fn bit(&self, addr: usize) -> usize {
        debug_assert!(
            addr >= self.base && addr <= self.base + self.size,
            "address outside bitmap"
        );
        (addr - self.base) / WORD
    }

    #[inline(always)]
    fn addr(&self, bit: usize) -> usize {
        self.base + bit * WORD
    }

    /// Set the bit of `addr`; true if this call set it (it was clear).
    #[inline(always)]
    pub fn mark(&self, addr: usize) -> bool {
        let bit = self.bit(addr);
        let mask = 1u64 << (bit % 64);
        // Relaxed: the bit itself is the claim; the data it guards is published by the
        // work-stealing queue that hands the object to a worker.
        self.words[bit / 64].fetch_or(mask, Ordering::Relaxed) & mask == 0
    }

    /// Whether the bit of `addr` is set.
    #[inline(always)]
    pub fn is_marked(&self, addr: usize) -> bool {
        let bit = self.bit(addr);
        self.words[bit / 64].load(Ordering::Relaxed) & (1u64 << (bit % 64)) != 0
    }

    /// Clear the bit of `addr`.
    pub fn unmark(&self, addr: usize) {
        let bit = self.bit(addr);
        self.words[bit / 64].fetch_and(!(1u64 << (bit % 64)), Ordering::Relaxed);
    }

    /// Set every bit of `[lo, hi)`.
    pub fn set_range(&self, lo: usize, hi: usize) {
        self.update_range(lo, hi, true);
    }

    /// Clear every bit of `[lo, hi)`.
    pub fn clear_range(&self, lo: usize, hi: usize) {
        self.update_range(lo, hi, false);
    }

    fn update_range(&self, lo: usize, hi: usize, set: bool) {
        if lo >= hi {
            return;
        }
        let (b0, b1) = (self.bit(lo), self.bit(hi));
        let (w0, w1) = (b0 / 64, b1 / 64);
        let apply = |w: usize, mask: u64| {
            if set {
                self.words[w].fetch_or(mask, Ordering::Relaxed);
            } else {
                self.words[w].fetch_and(!mask, Ordering::Relaxed);
            }
        };
        let head_mask = !0u64 << (b0 % 64);
        let tail_mask = if b1 % 64 == 0 {
            0
        } else {
            !0u64 >> (64 - b1 % 64)
        };
        if w0 == w1 {
            apply(w0, head_mask & tail_mask);
            return;
        }
        apply(w0, head_mask);
        for w in w0 + 1..w1 {
            self.words[w].store(if set { !0 } else { 0 }, Ordering::Relaxed);
        }
        if tail_mask != 0 {
            apply(w1, tail_mask);
        }
    }

    /// First set bit's address in `[lo, hi)`.
    pub fn find_next(&self, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let (mut b, end) = (self.bit(lo), self.bit(hi));
        while b < end {
            let w = b / 64;
            let word = self.words[w].load(Ordering::Relaxed) & (!0u64 << (b % 64));
            if word != 0 {
                let found = w * 64 + word.trailing_zeros() as usize;
                return (found < end).then(|| self.addr(found));
            }
            b = (w + 1) * 64;
        }
        None
    }

    /// Last set bit's address in `[lo, at]` (inclusive of `at`).
    pub fn find_prev(&self, at: usize, lo: usize) -> Option<usize> {
        if at < lo {
            return None;
        }
        let (mut b, floor) = (self.bit(at) as isize, self.bit(lo) as isize);
        while b >= floor {
            let w = b as usize / 64;
            let keep = 63 - (b as usize % 64);
            let word = (self.words[w].load(Ordering::Relaxed) << keep) >> keep;
            if word != 0 {
                let found = (w * 64 + 63 - word.leading_zeros() as usize) as isize;
                return (found >= floor).then(|| self.addr(found as usize));
            }
            b = (w * 64) as isize - 1;
        }
        None
    }

    /// Number of set bits in `[lo, hi)`.
    pub fn count_range(&self, lo: usize, hi: usize) -> usize {
        if lo >= hi {
            return 0;
        }
        let (b0, b1) = (self.bit(lo), self.bit(hi));
        let mut count = 0;
        let mut b = b0;
        while b < b1 {
            let w = b / 64;
            let mut word = self.words[w].load(Ordering::Relaxed) & (!0u64 << (b % 64));
            let next = (w + 1) * 64;
            if next > b1 {
                word &= !0u64 >> (64 - b1 % 64);
            }
            count += word.count_ones() as usize;
            b = next;
        }
        count
    }

    /// Number of set bits strictly below `addr` within `addr`'s bitmap word.
    #[inline(always)]
    pub fn count_in_word_below(&self, addr: usize) -> usize {
        let bit = self.bit(addr);
        let word = self.words[bit / 64].load(Ordering::Relaxed);
        (word & ((1u64 << (bit % 64)) - 1)).count_ones() as usize
    }

    /// Raw bitmap word `index` (covering heap bytes `[base + index*512, base + (index+1)*512)`).
    #[inline(always)]
    pub fn word(&self, index: usize) -> u64 {
        self.words[index].load(Ordering::Relaxed)
    }

    /// Index of the bitmap word holding `addr`'s bit.
    #[inline(always)]
    pub fn word_index(&self, addr: usize) -> usize {
        self.bit(addr) / 64
    }

    /// Clear the whole bitmap.
    pub fn clear_all(&self) {
        for w in self.words.iter() {
            w.store(0, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x10_0000;

    fn naive(set: &[usize], lo: usize, hi: usize) -> Vec<usize> {
        set.iter().copied().filter(|&a| a >= lo && a < hi).collect()
    }

    #[test]
    fn mark_is_claimed_once() {
        let bm = Bitmap::new("test bitmap", BASE, 1 << 16).unwrap();
        assert!(bm.mark(BASE + 8));
        assert!(!bm.mark(BASE + 8));
        assert!(bm.is_marked(BASE + 8));
        assert!(!bm.is_marked(BASE));
        bm.unmark(BASE + 8);
        assert!(!bm.is_marked(BASE + 8));
    }

    #[test]
    fn ranges_searches_and_counts_agree_with_a_naive_model() {
        let bm = Bitmap::new("test bitmap", BASE, 1 << 16).unwrap();
        let mut set = Vec::new();
        // A few ranges crossing bitmap-word boundaries.
        for (lo, hi) in [
            (3usize, 5usize),
            (60, 70),
            (128, 128 + 64),
            (500, 1000),
            (2000, 2001),
        ] {
            bm.set_range(BASE + lo * 8, BASE + hi * 8);
            set.extend((lo..hi).map(|w| BASE + w * 8));
        }
        set.sort_unstable();
        set.dedup();
        for (lo, hi) in [
            (0usize, 8192usize),
            (4, 65),
            (64, 64),
            (129, 700),
            (999, 2001),
            (1001, 1999),
        ] {
            let (l, h) = (BASE + lo * 8, BASE + hi * 8);
            let expect = naive(&set, l, h);
            assert_eq!(bm.count_range(l, h), expect.len(), "count [{lo},{hi})");
            assert_eq!(
                bm.find_next(l, h),
                expect.first().copied(),
                "next [{lo},{hi})"
            );
            if h > l {
                assert_eq!(
                    bm.find_prev(h - 8, l),
                    expect.last().copied(),
                    "prev [{lo},{hi})"
                );
            }
        }
        bm.clear_range(BASE + 62 * 8, BASE + 600 * 8);
        assert_eq!(bm.count_range(BASE, BASE + 8192 * 8), 2 + 2 + 400 + 1);
        assert_eq!(bm.count_in_word_below(BASE + 5 * 8), 2);
        bm.clear_all();
        assert_eq!(bm.find_next(BASE, BASE + (1 << 16)), None);
    }
}
