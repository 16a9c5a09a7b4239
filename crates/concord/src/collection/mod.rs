//! The collection room: the young collector (parallel copying), the full collector (parallel
//! mark + sliding compaction) and the heap verifier.
//!
//! Collectors run while the world is stopped. They see the heap through [`HeapMemory`], GC
//! threads through a [`WorkerPool`], and the mutators only as [`RootSlots`]: ranges of words
//! that hold object addresses (the handle stacks and global-reference tables), and
//! [`weak::WeakRange`]s (weak-reference and cleaner tables, processed once tracing is done).
//! They know nothing of threads or safepoints.

pub mod age_table;
pub mod full;
pub mod plab;
pub mod scavenge;
pub mod verify;
pub mod weak;

use crate::memory::{HeapMemory, NodeMap};
use crate::object::{Header, ObjectKind};
use crate::parallel::{PhasePolicy, WorkerPool};

/// A range of root slots (words holding an object address or 0) owned by a stopped mutator.
#[derive(Clone, Copy, Debug)]
pub struct RootSlots {
    /// First slot.
    pub ptr: *mut usize,
    /// Number of slots.
    pub len: usize,
}

// SAFETY: root slots belong to mutators that are stopped for the whole collection; each range
// is processed by exactly one worker at a time (one root task per range).
unsafe impl Send for RootSlots {}
// SAFETY: see above.
unsafe impl Sync for RootSlots {}

impl RootSlots {
    /// Split into chunks of at most `chunk` slots (so a huge handle stack is shared out).
    pub fn chunks(self, chunk: usize) -> impl Iterator<Item = RootSlots> {
        let chunk = chunk.max(1);
        (0..self.len.div_ceil(chunk)).map(move |i| {
            let start = i * chunk;
            // SAFETY: `start < len`, so the pointer stays inside the original range.
            RootSlots {
                ptr: unsafe { self.ptr.add(start) },
                len: chunk.min(self.len - start),
            }
        })
    }

    /// Addresses of the slots.
    pub fn slot_addrs(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len).map(move |i| self.ptr as usize + i * std::mem::size_of::<usize>())
    }
}

/// What a collection needs: the heap, the workers, and how many of them to use.
pub struct GcContext<'a> {
    /// Spaces, card table, bitmaps.
    pub mem: &'a HeapMemory,
    /// GC worker threads.
    pub pool: &'a WorkerPool,
    /// Workers taking part in this collection.
    pub workers: usize,
    /// Task queue, steal policy and termination protocol of the parallel phases.
    pub policy: PhasePolicy,
    /// NUMA accounting (local vs remote copies and scans), when the heap counts it.
    pub numa: Option<&'a NumaContext>,
}

/// What the collectors need to count local and remote work (004 §3.2): which node each heap
/// address is on, and which node each active worker counts as its own.
#[derive(Clone, Debug)]
pub struct NumaContext {
    /// The heap's node map.
    pub map: NodeMap,
    /// The node index of each active worker, by worker id.
    pub worker_nodes: Vec<usize>,
    /// Layout `segregated` (004 §3.2.3): young collections send work on objects of another
    /// node to that node's workers and steal only on their node; full collections ignore it.
    pub segregated: bool,
}

impl NumaContext {
    /// The node of worker `worker` (0 for a worker the context does not list).
    #[inline]
    pub fn worker_node(&self, worker: usize) -> usize {
        self.worker_nodes.get(worker).copied().unwrap_or(0)
    }
}

/// Addresses of objects that an observer outside the collector follows through collections (the
/// lifespan profiler). Before a collection every entry is an object start or 0; the collection
/// leaves each as the object's address afterwards, or 0 if the object died. Entries the
/// collection does not collect (old objects in a scavenge) are left alone. Collectors only read
/// headers and bitmaps to do this; they never write object memory for it.
pub type Tracked<'a> = &'a mut [usize];

/// Reference arrays longer than twice this are scanned in chunks of this many slots, so one
/// huge array is shared among workers (HotSpot `ParGCArrayScanChunk`).
pub const ARRAY_CHUNK: usize = 256;
/// Handle-stack slots per `ThreadRoots` task.
pub(crate) const ROOT_CHUNK: usize = 4096;

/// How to scan an object with `h` as header: [`scan_slots_of`] of its reference count and kind.
#[inline(always)]
pub(crate) fn first_slots(h: Header) -> (usize, Option<usize>) {
    scan_slots_of(h.ref_count(), h.kind() == ObjectKind::RefArray)
}

/// How the collectors scan an object of `slots` reference slots (`ref_array`: a reference
/// array): the slots `0..now` at once, and for a huge reference array (over
/// 2·[`ARRAY_CHUNK`] slots) the start of the rest, to be queued as a chunk item that other
/// workers can steal (then [`chunk_slots`]). Public for the simulator's replay of recorded
/// collections, which scans as the collectors do from a trace's slot counts.
#[inline(always)]
pub fn scan_slots_of(slots: usize, ref_array: bool) -> (usize, Option<usize>) {
    if ref_array && slots > 2 * ARRAY_CHUNK {
        (ARRAY_CHUNK, Some(ARRAY_CHUNK))
    } else {
        (slots, None)
    }
}

/// The chunk of an `n`-slot reference array that starts at `start`: its end, and the start of
/// the next chunk if there is one.
#[inline(always)]
pub fn chunk_slots(start: usize, n: usize) -> (usize, Option<usize>) {
    let end = (start + ARRAY_CHUNK).min(n);
    (end, (end < n).then_some(end))
}

pub(crate) fn ms_since(t: std::time::Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}
