//! Pretouching (HotSpot's `AlwaysPreTouch`): commit the whole heap when it is created and fault
//! in every page of it and of its side tables, so that no collection and no allocation takes a
//! first-touch page fault later.
//!
//! The memory is cut into chunks of [`PRETOUCH_CHUNK`] bytes that workers claim with an atomic
//! counter until none is left, as HotSpot's `PretouchTask` does on its GC workers; who runs
//! [`PretouchPlan::work`] (the GC worker pool) is the runtime's business.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::HeapMemory;
use crate::os::vm::{page_size, pretouch, PretouchMethod};

/// Bytes one worker claims at a time: a multiple of the 2 MiB huge page, so that no huge page
/// is split between two workers, and small enough that two workers share a 64 MiB heap.
pub const PRETOUCH_CHUNK: usize = 4 << 20;

/// What pretouching a heap did: the summary's `pretouch_ms` and its details.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PretouchReport {
    /// Wall time from committing the old generation to the last page faulted in, ms.
    pub ms: f64,
    /// Bytes touched: the heap and its side tables.
    pub bytes: u64,
    /// Bytes between two touches where the kernel lacks `MADV_POPULATE_WRITE` (the heap's
    /// expected page size).
    pub heap_stride: usize,
    /// How the pages were faulted in.
    pub method: PretouchMethod,
    /// GC workers that shared the work.
    pub workers: usize,
}

/// The chunks of memory still to touch, and what touching them found.
pub struct PretouchPlan {
    /// `(start, len, stride)`, in address order within each range.
    chunks: Vec<(usize, usize, usize)>,
    next: AtomicUsize,
    bytes: usize,
    outcome: Mutex<Outcome>,
}

#[derive(Default)]
struct Outcome {
    method: Option<PretouchMethod>,
    error: Option<io::Error>,
}

impl PretouchPlan {
    /// Commit all of `mem`'s old generation (the young generation is committed at creation)
    /// and plan to touch the whole heap at `heap_stride` (the page size the heap will get: the
    /// huge-page size where it is advised huge and the system allows that, else the base page
    /// size) and the side tables at the base page size. Fails when the OS refuses to commit.
    pub fn new(mem: &HeapMemory, heap_stride: usize) -> io::Result<Self> {
        if !mem.old.ensure_committed(mem.old.end(), mem.reservation()) {
            return Err(io::Error::other(format!(
                "could not commit the old generation ({} bytes)",
                mem.old.capacity()
            )));
        }
        let page = page_size();
        let mut ranges = vec![(mem.base(), mem.capacity(), heap_stride.max(page))];
        for (start, len) in mem.side_table_ranges() {
            ranges.push((start, len, page));
        }
        let mut chunks = Vec::new();
        let mut bytes = 0;
        for (start, len, stride) in ranges {
            bytes += len;
            let mut at = start;
            while at < start + len {
                let end = (at + PRETOUCH_CHUNK).min(start + len);
                chunks.push((at, end - at, stride));
                at = end;
            }
        }
        Ok(Self {
            chunks,
            next: AtomicUsize::new(0),
            bytes,
            outcome: Mutex::new(Outcome::default()),
        })
    }

    /// Bytes the plan touches (heap and side tables).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Chunks in the plan.
    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    /// Touch chunks until none is left (one worker's share; any number of workers may call
    /// this at once). Stops early once a worker met an error.
    pub fn work(&self) {
        loop {
            // Relaxed: the counter only hands out distinct indices; the chunks themselves are
            // immutable and the outcome is behind a lock.
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&(start, len, stride)) = self.chunks.get(i) else {
                return;
            };
            // SAFETY: every chunk lies in the heap's reservation (committed read-write by
            // `new`) or in a side table's read-write mapping, all 8-aligned; both live as long
            // as the heap that owns this plan, and nothing uses them before the heap is
            // returned to its creator (the side tables are atomics in any case).
            let result = unsafe { pretouch(start, len, stride) };
            let mut outcome = self.outcome.lock().unwrap_or_else(|p| p.into_inner());
            match result {
                Ok(method) => {
                    // A fallback anywhere is what the report should say.
                    if outcome.method != Some(PretouchMethod::Touch) {
                        outcome.method = Some(method);
                    }
                }
                Err(e) => {
                    outcome.error.get_or_insert(e);
                    // No one claims more chunks.
                    self.next.store(self.chunks.len(), Ordering::Relaxed);
                    return;
                }
            }
        }
    }

    /// After every worker returned from [`PretouchPlan::work`]: how the pages were faulted in,
    /// or the first error.
    pub fn finish(self) -> io::Result<PretouchMethod> {
        let outcome = self.outcome.into_inner().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = outcome.error {
            return Err(e);
        }
        Ok(outcome.method.unwrap_or(PretouchMethod::PopulateWrite))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::heap_memory::SpaceSizes;
    use crate::os::vm::resident_bytes;

    const SIZES: SpaceSizes = SpaceSizes {
        old: 6 << 20,
        eden: 4 << 20,
        survivor: 1 << 20,
    };

    fn resident(start: usize, end: usize) -> usize {
        resident_bytes(start, end - start).unwrap()
    }

    #[test]
    fn a_plan_commits_old_and_makes_heap_and_side_tables_resident() {
        let mem = HeapMemory::new(SIZES).unwrap();
        assert_eq!(mem.old.committed_bytes(), 0, "old is committed on demand");
        assert_eq!(resident(mem.base(), mem.young_start()), 0, "old untouched");
        let plan = PretouchPlan::new(&mem, page_size()).unwrap();
        assert_eq!(mem.old.committed_bytes(), mem.old.capacity());
        let side: usize = mem.side_table_ranges().iter().map(|r| r.1).sum();
        assert_eq!(plan.bytes(), mem.capacity() + side);
        assert!(plan.chunk_count() >= mem.capacity() / PRETOUCH_CHUNK);
        // Two workers at once, as on the GC worker pool.
        std::thread::scope(|s| {
            s.spawn(|| plan.work());
            s.spawn(|| plan.work());
        });
        plan.finish().unwrap();
        assert_eq!(resident(mem.base(), mem.end()), mem.capacity());
        for (start, len) in mem.side_table_ranges() {
            assert_eq!(
                resident(start, start + len),
                len,
                "side table at {start:#x}"
            );
        }
        // Touching changed nothing: the heap and the tables still read as zero.
        // SAFETY: the whole heap is committed now.
        let heap = unsafe { std::slice::from_raw_parts(mem.base() as *const u8, mem.capacity()) };
        assert!(heap.iter().all(|&b| b == 0));
        assert_eq!(mem.cards.count_dirty(mem.base(), mem.young_start()), 0);
    }

    #[test]
    fn touching_keeps_what_memory_holds() {
        let mem = HeapMemory::new(SIZES).unwrap();
        let eden = mem.eden.bottom();
        // SAFETY: eden is committed at creation and private to this test.
        unsafe {
            (eden as *mut u64).write(0xfeed);
            ((eden + 3 * page_size() + 8) as *mut u64).write(7);
        }
        mem.cards.dirty(mem.base() + 4096);
        let plan = PretouchPlan::new(&mem, page_size()).unwrap();
        plan.work();
        plan.finish().unwrap();
        // SAFETY: as above.
        unsafe {
            assert_eq!((eden as *const u64).read(), 0xfeed);
            assert_eq!(((eden + 3 * page_size() + 8) as *const u64).read(), 7);
        }
        assert_eq!(mem.cards.count_dirty(mem.base(), mem.young_start()), 1);
    }
}
