//! The full collector's summary tables, per 64 KiB region and per 512-byte block of the heap.
//!
//! They are allocated with the heap, like the mark bitmaps, so that a full collection
//! allocates nothing whose size grows with the heap: when memory is short, building the heap
//! fails with an error instead of a later collection aborting the process.

use std::collections::TryReserveError;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize};
use std::sync::{Mutex, MutexGuard};

use super::bitmap::BYTES_PER_BITMAP_WORD;
use super::heap_memory::HEAP_ALIGNMENT;
use super::side_table::{SideTable, SideTableError};

/// Bytes per compaction region: the space alignment, so regions never straddle spaces.
pub const REGION_SIZE: usize = HEAP_ALIGNMENT;
/// Blocks (one live-word bitmap word each) per region.
pub const BLOCKS_PER_REGION: usize = REGION_SIZE / BYTES_PER_BITMAP_WORD;

/// Lists of region indices a full collection builds, each with room for every region, so
/// filling them never allocates.
#[derive(Debug, Default)]
pub struct RegionLists {
    /// Regions below a space's top before the collection.
    pub used: Vec<usize>,
    /// Used regions holding live words.
    pub live: Vec<usize>,
    /// Live regions holding the start of a live object (their objects are moved).
    pub movers: Vec<usize>,
}

/// Per-region and per-block tables of one heap's full collections.
pub struct CompactionTables {
    /// Live words per region.
    pub region_live: SideTable<AtomicUsize>,
    /// Per block: live words of its region before the block.
    pub block_prefix: SideTable<AtomicU32>,
    /// Destination address of each region's first live word.
    pub region_dest: SideTable<AtomicUsize>,
    /// Regions whose objects are still to be moved by the running compaction; all false
    /// between collections.
    pub region_pending: SideTable<AtomicBool>,
    /// The last live object start at or below each region's end, 0 when there is none.
    pub last_start_upto: SideTable<AtomicUsize>,
    lists: Mutex<RegionLists>,
}

impl CompactionTables {
    /// Tables for a heap of `capacity` bytes (a multiple of [`REGION_SIZE`]).
    pub fn new(capacity: usize) -> Result<Self, SideTableError> {
        let regions = capacity / REGION_SIZE;
        let lists = RegionLists {
            used: region_list(regions)?,
            live: region_list(regions)?,
            movers: region_list(regions)?,
        };
        Ok(Self {
            region_live: SideTable::new("full-collection region table", regions)?,
            block_prefix: SideTable::new(
                "full-collection block offset table",
                regions * BLOCKS_PER_REGION,
            )?,
            region_dest: SideTable::new("full-collection region destination table", regions)?,
            region_pending: SideTable::new("full-collection region state table", regions)?,
            last_start_upto: SideTable::new("full-collection object start table", regions)?,
            lists: Mutex::new(lists),
        })
    }

    /// The tables' memory, `(start, bytes)` each, page aligned (for pretouching it; the
    /// region lists are small and left out).
    pub fn mapped_ranges(&self) -> [(usize, usize); 5] {
        [
            self.region_live.mapped_range(),
            self.block_prefix.mapped_range(),
            self.region_dest.mapped_range(),
            self.region_pending.mapped_range(),
            self.last_start_upto.mapped_range(),
        ]
    }

    /// The region lists, for the one full collection that runs at a time.
    pub fn lists(&self) -> MutexGuard<'_, RegionLists> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An empty list of region indices with room for `regions` of them.
fn region_list(regions: usize) -> Result<Vec<usize>, SideTableError> {
    let mut list = Vec::new();
    list.try_reserve_exact(regions)
        .map_err(|e: TryReserveError| SideTableError {
            what: "full-collection region list",
            size: regions.saturating_mul(size_of::<usize>()),
            source: io::Error::new(io::ErrorKind::OutOfMemory, e),
        })?;
    Ok(list)
}
