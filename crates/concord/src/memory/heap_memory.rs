//! The heap's memory: one reservation holding old, eden and two survivor spaces, plus the card
//! table, the side bitmaps and the compaction tables the collectors use.
//!
//! With `young_fragments` N > 1 (NUMA layout `fragmented`) eden and each survivor space are N
//! fragments of the space's whole size each, laid out as old | eden × N | survivor 0 × N |
//! survivor 1 × N: the young generation is still one contiguous range (N times the virtual
//! size; only touched pages cost memory), and the side tables cover the whole reservation.
//!
//! Everything here whose size grows with the heap is mapped from the OS when the heap is built,
//! and a refusal is a [`HeapMemoryError`] naming what could not be had: a collection never
//! allocates memory sized from the heap.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::bitmap::Bitmap;
use super::card_table::CardTable;
use super::compaction::CompactionTables;
use super::side_table::SideTableError;
use super::space::{Fragment, Space};
use crate::os::vm::{HugePageAdvice, Reservation};

/// Alignment of the reservation and of every space boundary.
pub const HEAP_ALIGNMENT: usize = 64 * 1024;

/// Names the four spaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum SpaceId {
    /// The old generation.
    Old,
    /// Where mutators allocate.
    Eden,
    /// The first survivor space.
    Survivor0,
    /// The second survivor space.
    Survivor1,
}

/// Sizes of the spaces, bytes (each a multiple of [`HEAP_ALIGNMENT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpaceSizes {
    /// Old generation.
    pub old: usize,
    /// Eden.
    pub eden: usize,
    /// Each survivor space.
    pub survivor: usize,
}

/// The heap's memory could not be had.
#[derive(Debug, thiserror::Error)]
pub enum HeapMemoryError {
    /// The OS refused the address space (or committing the young generation in it), or the
    /// sizes were not usable.
    #[error("could not reserve {size} bytes of address space")]
    Reserve {
        /// Bytes asked for.
        size: usize,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// A side table could not be allocated.
    #[error(transparent)]
    SideTable(#[from] SideTableError),
}

/// Reservation, spaces, card table, bitmaps and compaction tables of one heap.
pub struct HeapMemory {
    reservation: Reservation,
    /// The old generation.
    pub old: Space,
    /// Eden.
    pub eden: Space,
    survivors: [Space; 2],
    /// Index into `survivors` of the current from-space; swapped after each scavenge.
    from: AtomicUsize,
    base: usize,
    young_start: usize,
    end: usize,
    /// Card table over the whole heap (only old-generation cards are ever scanned).
    pub cards: CardTable,
    /// Object starts in the old generation, for card scanning and heap walks.
    pub old_starts: Bitmap,
    /// Full collection: bit at the first word of every marked object.
    pub mark_begin: Bitmap,
    /// Full collection: bit at every word of every marked object.
    pub mark_live: Bitmap,
    /// Full collection: per-region and per-block summary tables.
    pub compaction: CompactionTables,
}

impl HeapMemory {
    /// Reserve the heap and allocate its side tables; commit the young generation now and the
    /// old generation on demand. No huge-page advice: the system setting decides.
    pub fn new(sizes: SpaceSizes) -> Result<Self, HeapMemoryError> {
        Self::with_pages(sizes, HEAP_ALIGNMENT, None)
    }

    /// [`HeapMemory::new`] with the reservation aligned to `align` (a power of two, at least
    /// [`HEAP_ALIGNMENT`]; 2 MiB lets huge pages start at the heap's base) and `advice` given
    /// to the kernel on the whole reservation before anything is committed.
    pub fn with_pages(
        sizes: SpaceSizes,
        align: usize,
        advice: Option<HugePageAdvice>,
    ) -> Result<Self, HeapMemoryError> {
        Self::with_layout(sizes, 1, align, advice)
    }

    /// [`HeapMemory::with_pages`] with eden and each survivor space made of `young_fragments`
    /// fragments (at least 1) of the space's size each (see the module comment).
    pub fn with_layout(
        sizes: SpaceSizes,
        young_fragments: usize,
        align: usize,
        advice: Option<HugePageAdvice>,
    ) -> Result<Self, HeapMemoryError> {
        let n = young_fragments.max(1);
        let total = sizes.old + n * (sizes.eden + 2 * sizes.survivor);
        let refused = |source| HeapMemoryError::Reserve {
            size: total,
            source,
        };
        for (what, s) in [
            ("old", sizes.old),
            ("eden", sizes.eden),
            ("survivor", sizes.survivor),
        ] {
            if s == 0 || s % HEAP_ALIGNMENT != 0 {
                return Err(refused(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{what} size {s} must be a positive multiple of {HEAP_ALIGNMENT}"),
                )));
            }
        }
        let reservation = Reservation::new(total, align.max(HEAP_ALIGNMENT)).map_err(refused)?;
        let base = reservation.base();
        if let Some(advice) = advice {
            reservation
                .advise(base, reservation.size(), advice)
                .map_err(refused)?;
        }
        let young_start = base + sizes.old;
        let end = base + total;
        reservation
            .commit(young_start, end - young_start)
            .map_err(refused)?;
        let eden_end = young_start + n * sizes.eden;
        let s0_end = eden_end + n * sizes.survivor;
        Ok(Self {
            old: Space::new("old", base, young_start, base),
            eden: Space::fragmented("eden", young_start, sizes.eden, n),
            survivors: [
                Space::fragmented("survivor 0", eden_end, sizes.survivor, n),
                Space::fragmented("survivor 1", s0_end, sizes.survivor, n),
            ],
            from: AtomicUsize::new(0),
            base,
            young_start,
            end,
            cards: CardTable::new(base, total)?,
            old_starts: Bitmap::new("old-generation object-start bitmap", base, sizes.old)?,
            mark_begin: Bitmap::new("mark bitmap", base, total)?,
            mark_live: Bitmap::new("live-word bitmap", base, total)?,
            compaction: CompactionTables::new(total)?,
            reservation,
        })
    }

    /// The reservation (for committing old-generation memory).
    pub fn reservation(&self) -> &Reservation {
        &self.reservation
    }

    /// The part of the old generation not yet committed, `(start, len)`: where pages will be
    /// faulted in next, and what a change of huge-page advice still governs.
    pub fn uncommitted_old(&self) -> (usize, usize) {
        let committed_end = self.base + self.old.committed_bytes();
        (
            committed_end,
            self.young_start.saturating_sub(committed_end),
        )
    }

    /// The memory of the side tables (card table, bitmaps, compaction tables), `(start,
    /// bytes)` each: what pretouching touches besides the heap.
    pub fn side_table_ranges(&self) -> Vec<(usize, usize)> {
        let mut ranges = vec![
            self.cards.mapped_range(),
            self.old_starts.mapped_range(),
            self.mark_begin.mapped_range(),
            self.mark_live.mapped_range(),
        ];
        ranges.extend(self.compaction.mapped_ranges());
        ranges
    }

    /// First heap address.
    #[inline(always)]
    pub fn base(&self) -> usize {
        self.base
    }

    /// First young-generation address (end of old).
    #[inline(always)]
    pub fn young_start(&self) -> usize {
        self.young_start
    }

    /// One past the last heap address.
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.end
    }

    /// Total heap bytes.
    pub fn capacity(&self) -> usize {
        self.end - self.base
    }

    /// Whether `addr` is in the young generation.
    #[inline(always)]
    pub fn in_young(&self, addr: usize) -> bool {
        addr >= self.young_start && addr < self.end
    }

    /// Whether `addr` is in the old generation's range.
    #[inline(always)]
    pub fn in_old(&self, addr: usize) -> bool {
        addr >= self.base && addr < self.young_start
    }

    /// Whether `addr` is anywhere in the heap.
    #[inline(always)]
    pub fn in_heap(&self, addr: usize) -> bool {
        addr >= self.base && addr < self.end
    }

    /// Current from-space.
    #[inline(always)]
    pub fn from_space(&self) -> &Space {
        &self.survivors[self.from.load(Ordering::Relaxed)]
    }

    /// Current to-space (empty between collections).
    #[inline(always)]
    pub fn to_space(&self) -> &Space {
        &self.survivors[1 - self.from.load(Ordering::Relaxed)]
    }

    /// Exchange the survivor roles (at the end of a scavenge, world stopped).
    pub fn swap_survivors(&self) {
        self.from.fetch_xor(1, Ordering::Relaxed);
    }

    /// A space by name.
    pub fn space(&self, id: SpaceId) -> &Space {
        match id {
            SpaceId::Old => &self.old,
            SpaceId::Eden => &self.eden,
            SpaceId::Survivor0 => &self.survivors[0],
            SpaceId::Survivor1 => &self.survivors[1],
        }
    }

    /// All spaces in address order (old, eden, survivor 0, survivor 1).
    pub fn spaces_in_address_order(&self) -> [(SpaceId, &Space); 4] {
        [
            (SpaceId::Old, &self.old),
            (SpaceId::Eden, &self.eden),
            (SpaceId::Survivor0, &self.survivors[0]),
            (SpaceId::Survivor1, &self.survivors[1]),
        ]
    }

    /// Fragments of eden and of each survivor space (1 unless the layout is `fragmented`).
    pub fn young_fragments(&self) -> usize {
        self.eden.fragments().len()
    }

    /// Every fragment of every space in address order, with the space it belongs to: old's one
    /// range, then eden's, survivor 0's and survivor 1's fragments.
    pub fn fragments_in_address_order(&self) -> Vec<(SpaceId, usize, &Fragment)> {
        self.spaces_in_address_order()
            .into_iter()
            .flat_map(|(id, s)| {
                s.fragments()
                    .iter()
                    .enumerate()
                    .map(move |(i, f)| (id, i, f))
            })
            .collect()
    }

    /// Which space `addr` is in.
    pub fn space_of(&self, addr: usize) -> Option<SpaceId> {
        self.spaces_in_address_order()
            .into_iter()
            .find(|(_, s)| s.contains(addr))
            .map(|(id, _)| id)
    }

    /// Bytes used in the young generation.
    pub fn young_used(&self) -> usize {
        self.eden.used() + self.from_space().used() + self.to_space().used()
    }

    /// Young capacity as HotSpot reports it (eden + one survivor).
    pub fn young_capacity(&self) -> usize {
        self.eden.capacity() + self.from_space().capacity()
    }

    /// Bytes used in the whole heap.
    pub fn used(&self) -> usize {
        self.old.used() + self.young_used()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::procfs::read_self_smaps;
    use crate::os::thp::{huge_bytes_in, SystemThp, HUGE_PAGE_SIZE};

    const SIZES: SpaceSizes = SpaceSizes {
        old: 4 << 20,
        eden: 4 << 20,
        survivor: 1 << 20,
    };

    /// Asserts that every mapping of the heap carries VmFlag `flag` (`hg`, `nh`) and not the
    /// other one; `None`: neither.
    fn heap_flags_are(mem: &HeapMemory, flag: Option<&str>) {
        let vmas = read_self_smaps(mem.base(), mem.end()).unwrap();
        assert!(!vmas.is_empty());
        for vma in &vmas {
            assert_eq!(vma.has_flag("hg"), flag == Some("hg"), "{vma:?}");
            assert_eq!(vma.has_flag("nh"), flag == Some("nh"), "{vma:?}");
            if flag == Some("nh") {
                assert_ne!(vma.thp_eligible, Some(true), "{vma:?}");
            }
        }
    }

    #[test]
    fn huge_page_advice_is_on_the_whole_reservation() {
        let plain = HeapMemory::new(SIZES).unwrap();
        heap_flags_are(&plain, None);
        let huge =
            HeapMemory::with_pages(SIZES, HUGE_PAGE_SIZE, Some(HugePageAdvice::Huge)).unwrap();
        assert_eq!(huge.base() % HUGE_PAGE_SIZE, 0);
        heap_flags_are(&huge, Some("hg"));
        let none =
            HeapMemory::with_pages(SIZES, HEAP_ALIGNMENT, Some(HugePageAdvice::NoHuge)).unwrap();
        heap_flags_are(&none, Some("nh"));
        // Committing more of the old generation keeps the advice.
        assert!(none
            .old
            .ensure_committed(none.base() + (1 << 20), none.reservation()));
        heap_flags_are(&none, Some("nh"));
        assert_eq!(
            none.uncommitted_old().0,
            none.base() + none.old.committed_bytes()
        );
    }

    #[test]
    #[cfg_attr(
        concord_no_thp,
        ignore = "needs THP enabled = madvise or always system-wide \
                  (/sys/kernel/mm/transparent_hugepage/enabled), which the build did not see"
    )]
    fn a_huge_advised_heap_gets_huge_pages_when_the_system_allows_them() {
        let enabled = SystemThp::read().enabled;
        assert!(
            matches!(enabled.as_deref(), Some("madvise" | "always")),
            "THP enabled is {enabled:?}: this test needs madvise or always"
        );
        let huge =
            HeapMemory::with_pages(SIZES, HUGE_PAGE_SIZE, Some(HugePageAdvice::Huge)).unwrap();
        let eden = &huge.eden;
        // SAFETY: eden is committed at construction; nothing else uses this heap.
        unsafe { std::ptr::write_bytes(eden.bottom() as *mut u8, 1, eden.capacity()) };
        assert!(huge_bytes_in(huge.base(), huge.end()).unwrap() >= HUGE_PAGE_SIZE as u64);
        // The old generation, committed on demand as promotions need it, gets huge pages too:
        // every commit ends on a huge-page boundary (it used to end on 1 MiB ones, which
        // split the mapping inside each huge page and left old with small pages only).
        let old = &huge.old;
        for _ in 0..16 {
            // Written as soon as allocated, as promoted objects are.
            let at = old.par_allocate(256 << 10, huge.reservation()).unwrap();
            // SAFETY: par_allocate committed what it handed out; nothing else uses this heap.
            unsafe { std::ptr::write_bytes(at as *mut u8, 1, 256 << 10) };
        }
        assert!(
            huge_bytes_in(old.bottom(), old.end()).unwrap() >= HUGE_PAGE_SIZE as u64,
            "old generation: {:?}",
            read_self_smaps(old.bottom(), old.end())
        );
        let none =
            HeapMemory::with_pages(SIZES, HUGE_PAGE_SIZE, Some(HugePageAdvice::NoHuge)).unwrap();
        // SAFETY: as above.
        unsafe { std::ptr::write_bytes(none.eden.bottom() as *mut u8, 1, none.eden.capacity()) };
        assert_eq!(huge_bytes_in(none.base(), none.end()).unwrap(), 0);
    }
}
