//! The card table: one byte per 512-byte card, dirtied by the write barrier so a young
//! collection finds old-to-young references without scanning the old generation.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

use super::side_table::{SideTable, SideTableError};

/// log2 of the card size (HotSpot's 512-byte cards).
pub const CARD_SHIFT: u32 = 9;
/// Bytes per card.
pub const CARD_SIZE: usize = 1 << CARD_SHIFT;
/// A card nobody wrote a reference into since it was last scanned.
pub const CLEAN: u8 = 0;
/// A card that may hold a reference into the young generation.
pub const DIRTY: u8 = 1;

/// Cards covering `[base, base + size)`.
pub struct CardTable {
    base: usize,
    size: usize,
    /// Starts page aligned (a side table), which word-at-a-time scans rely on.
    cards: SideTable<AtomicU8>,
}

// A fresh side table is all zero bytes: every card starts clean.
const _: () = assert!(CLEAN == 0);

impl CardTable {
    /// A clean table for `[base, base + size)`; `base` must be card aligned.
    pub fn new(base: usize, size: usize) -> Result<Self, SideTableError> {
        assert_eq!(base % CARD_SIZE, 0, "card table base must be card aligned");
        // Round up to a multiple of 8 cards so word-at-a-time scans never run off the end.
        let n = size.div_ceil(CARD_SIZE).next_multiple_of(8);
        Ok(Self {
            base,
            size,
            cards: SideTable::new("card table", n)?,
        })
    }

    /// The table's memory, `(start, bytes)`, page aligned (for pretouching it).
    pub fn mapped_range(&self) -> (usize, usize) {
        self.cards.mapped_range()
    }

    /// Index of the card holding `addr`.
    #[inline(always)]
    pub fn index(&self, addr: usize) -> usize {
        debug_assert!(
            addr >= self.base && addr < self.base + self.size,
            "address outside card table"
        );
        (addr - self.base) >> CARD_SHIFT
    }

    /// First address of card `index`.
    #[inline(always)]
    pub fn card_start(&self, index: usize) -> usize {
        self.base + (index << CARD_SHIFT)
    }

    /// The write barrier: dirty the card of a slot that was just written.
    #[inline(always)]
    pub fn dirty(&self, slot: usize) {
        // Relaxed: the safepoint protocol orders mutator stores before the collector's reads.
        self.cards[self.index(slot)].store(DIRTY, Ordering::Relaxed);
    }

    /// The write barrier's fast form for a mutator to keep in its own fields: a covered-range
    /// check and a card store with no pointer chase through the heap and no bounds check.
    pub fn barrier(&self) -> CardBarrier {
        CardBarrier {
            base: self.base,
            size: self.size,
            cards: self.cards.as_ptr(),
        }
    }

    /// Whether the card holding `addr` is dirty.
    #[inline(always)]
    pub fn is_dirty(&self, addr: usize) -> bool {
        self.cards[self.index(addr)].load(Ordering::Relaxed) == DIRTY
    }

    /// Whether card `index` is dirty.
    #[inline(always)]
    pub fn is_dirty_index(&self, index: usize) -> bool {
        self.cards[index].load(Ordering::Relaxed) == DIRTY
    }

    /// Mark card `index` clean.
    #[inline(always)]
    pub fn clean_index(&self, index: usize) {
        self.cards[index].store(CLEAN, Ordering::Relaxed);
    }

    /// Index of the first dirty card in `[from, to)`, checking eight cards at a time.
    pub fn find_dirty(&self, from: usize, to: usize) -> Option<usize> {
        let mut i = from;
        while i < to {
            if i.is_multiple_of(8) && i + 8 <= to {
                // SAFETY: `cards` starts page aligned and has a multiple-of-8 length, and `i` is
                // 8-aligned and in bounds, so the 8 bytes form one aligned u64 inside the
                // table; AtomicU8 and AtomicU64 have the same in-memory representation as
                // u8/u64.
                let word = unsafe { &*(self.cards.as_ptr().add(i) as *const AtomicU64) };
                if word.load(Ordering::Relaxed) == 0 {
                    i += 8;
                    continue;
                }
            }
            if self.is_dirty_index(i) {
                return Some(i);
            }
            i += 1;
        }
        None
    }

    /// Index of the first clean card in `[from, to)` (or `to`).
    pub fn find_clean(&self, from: usize, to: usize) -> usize {
        (from..to).find(|&i| !self.is_dirty_index(i)).unwrap_or(to)
    }

    /// Clean every card of `[lo, hi)`.
    pub fn clean_range(&self, lo: usize, hi: usize) {
        if lo >= hi {
            return;
        }
        let (a, b) = (self.index(lo), self.index(hi - 1));
        for c in &self.cards[a..=b] {
            c.store(CLEAN, Ordering::Relaxed);
        }
    }

    /// Number of dirty cards in `[lo, hi)`.
    pub fn count_dirty(&self, lo: usize, hi: usize) -> usize {
        if lo >= hi {
            return 0;
        }
        (self.index(lo)..=self.index(hi - 1))
            .filter(|&i| self.is_dirty_index(i))
            .count()
    }
}

/// A copy of a [`CardTable`]'s geometry (see [`CardTable::barrier`]); valid while the table
/// lives, which the mutator holding it guarantees by borrowing the heap.
#[derive(Clone, Copy, Debug)]
pub struct CardBarrier {
    base: usize,
    size: usize,
    cards: *const AtomicU8,
}

impl CardBarrier {
    /// Whether `addr` lies in the memory the table covers (the whole heap reservation): one
    /// subtraction and one comparison.
    #[inline(always)]
    pub fn covers(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base) < self.size
    }

    /// Dirty the card of `slot`, which [`Self::covers`] must accept (a store outside the
    /// heap is a bug the caller checks for, not something this does).
    ///
    /// # Safety
    /// `self.covers(slot)` and the table this was taken from is alive.
    #[inline(always)]
    pub unsafe fn dirty(&self, slot: usize) {
        debug_assert!(self.covers(slot), "card barrier outside the heap");
        // SAFETY: `slot` is covered, so its card index is below the table's length, and the
        // table is alive (the caller's contract).
        unsafe { &*self.cards.add((slot - self.base) >> CARD_SHIFT) }
            .store(DIRTY, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_dirties_the_right_card_and_scans_find_it() {
        let base = 0x4000_0000;
        let ct = CardTable::new(base, 1 << 20).unwrap();
        assert_eq!(ct.find_dirty(0, 2048), None);
        ct.dirty(base + 5 * CARD_SIZE + 17);
        ct.dirty(base + 100 * CARD_SIZE);
        ct.dirty(base + 101 * CARD_SIZE + 511);
        assert!(ct.is_dirty(base + 5 * CARD_SIZE));
        assert!(!ct.is_dirty(base + 6 * CARD_SIZE));
        assert_eq!(ct.find_dirty(0, 2048), Some(5));
        assert_eq!(ct.find_dirty(6, 2048), Some(100));
        assert_eq!(ct.find_clean(100, 2048), 102);
        assert_eq!(ct.find_dirty(6, 100), None);
        assert_eq!(ct.count_dirty(base, base + (1 << 20)), 3);
        ct.clean_range(base, base + 101 * CARD_SIZE);
        assert_eq!(ct.find_dirty(0, 2048), Some(101));
        ct.clean_index(101);
        assert_eq!(ct.count_dirty(base, base + (1 << 20)), 0);
    }
}
