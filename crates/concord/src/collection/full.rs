//! The full collector: parallel marking, then a Parallel-Old-style sliding compaction of the
//! whole heap into the old generation.
//!
//! 1. **Mark** (work stealing, like a scavenge): a begin bit per live object and a live bit per
//!    live word, in side bitmaps.
//! 2. **Summary**: per 64 KiB region, live words and, per 512-byte block, live words before the
//!    block. Each space's live data is assigned a destination: the lowest-addressed space below
//!    it that holds all of it (the old generation if it fits); else the lowest space with room
//!    takes its first regions as far as they fit (an object straddling the split goes with the
//!    region it starts in) and the rest is compacted within its own space. A live word's new
//!    address is then `region_dest + block_prefix + popcount(bits below it)`: no forwarding
//!    pointers, headers stay intact.
//! 3. **Adjust**: every reference in live objects and roots is rewritten to its new address; the
//!    card table and the old generation's object-start bitmap are rebuilt for the new layout.
//! 4. **Compact**: regions are claimed in address order; a region moves its objects once every
//!    lower region whose source memory overlaps its destination has been moved (dependency
//!    waits on per-region done flags), so workers slide in parallel without clobbering.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use super::weak::{process_chunk, weak_chunks, WeakRange};
use super::{chunk_slots, first_slots, ms_since, GcContext, RootSlots, Tracked, ROOT_CHUNK};
use crate::memory::compaction::{CompactionTables, RegionLists, BLOCKS_PER_REGION};
use crate::memory::{HeapMemory, NodeMap, SpaceId};
use crate::object::raw::{self, slot_addr};
use crate::object::WORD;
use crate::parallel::task_queue::{Affinity, RootTask};
use crate::parallel::{run_phase, ParallelTask, WorkQueue};
use crate::telemetry::gc_trace::{
    root_shapes, Fate, RawTrace, TraceBuffer, TraceKind, TraceRootKind, TraceShape,
};
use crate::telemetry::{PhaseTimes, WorkerNumaStats, WorkerPhaseStats};

pub use crate::memory::compaction::REGION_SIZE;

/// What a full collection did.
#[derive(Debug, Default)]
pub struct FullOutcome {
    /// Bytes of live objects.
    pub live_bytes: usize,
    /// Bytes of objects that changed address.
    pub moved_bytes: usize,
    /// Live young bytes that did not fit in old and stayed in the young generation.
    pub young_bytes_left: usize,
    /// Both survivor spaces hold objects afterwards (young collections are impossible until a
    /// later full collection empties one).
    pub survivors_both_used: bool,
    /// Per-worker counters of the marking phase.
    pub workers: Vec<WorkerPhaseStats>,
    /// Timing.
    pub phases: PhaseTimes,
    /// The marking phase's recorded work, when the GC trace is on.
    pub trace: Option<RawTrace>,
}

// ---------------------------------------------------------------------------------------------
// Marking

/// A marking work item.
#[derive(Clone, Copy, Debug)]
pub enum MarkItem {
    /// A marked object whose references must be scanned.
    Object(usize),
    /// Slots `start..` of a marked reference array.
    ArrayChunk {
        /// The array.
        array: usize,
        /// First slot of the chunk.
        start: usize,
    },
}

struct Marker<'a> {
    mem: &'a HeapMemory,
    /// The heap's node map when NUMA figures are counted.
    node_map: Option<NodeMap>,
}

/// A marking worker's NUMA counters: objects whose slots it scanned, and how many of them lie
/// on another node than its own.
#[derive(Default)]
struct MarkScans {
    node: usize,
    scanned: u64,
    scanned_remote: u64,
    /// This worker's part of the GC trace, when recorded; `None` costs one predictable branch
    /// at each object this worker marks.
    trace: Option<Box<TraceBuffer>>,
}

impl Marker<'_> {
    /// Count a scan of the slots of `obj`.
    #[inline(always)]
    fn note_scan(&self, obj: usize, scans: &mut MarkScans) {
        if let Some(map) = &self.node_map {
            scans.scanned += 1;
            scans.scanned_remote += u64::from(map.node_of(obj) != scans.node);
        }
    }

    /// Mark `obj`; true if this call marked it.
    #[inline(always)]
    fn mark(&self, obj: usize) -> bool {
        if !self.mem.mark_begin.mark(obj) {
            return false;
        }
        // SAFETY: `obj` is reachable, so it is a valid object start.
        let h = unsafe { raw::header(obj) };
        debug_assert!(
            h.is_object(),
            "marking reached a non-object at {obj:#x}: {h:?}"
        );
        self.mem.mark_live.set_range(obj, obj + h.size_bytes());
        true
    }

    /// Mark `obj` for the GC trace's sake too: when this call marked it and the trace is on,
    /// record it with every non-null referent (marking writes no slot, so they are stable).
    #[inline(always)]
    fn mark_traced(&self, obj: usize, scans: &mut MarkScans) -> bool {
        let marked = self.mark(obj);
        if marked {
            if let Some(trace) = &mut scans.trace {
                record_marked(trace, obj);
            }
        }
        marked
    }

    #[inline(always)]
    fn scan_slots(
        &self,
        obj: usize,
        from: usize,
        to: usize,
        scans: &mut MarkScans,
        q: &mut WorkQueue<MarkItem>,
    ) {
        for i in from..to {
            // SAFETY: `i` is below `obj`'s reference count.
            let v = unsafe { raw::load(slot_addr(obj, i)) };
            if v != 0 && self.mark_traced(v, scans) {
                q.push(MarkItem::Object(v));
            }
        }
    }
}

/// Record the marked object `obj` in the GC trace.
#[cold]
fn record_marked(trace: &mut TraceBuffer, obj: usize) {
    // SAFETY: `obj` was just marked, so it is a valid object start.
    let h = unsafe { raw::header(obj) };
    let referents = (0..h.ref_count())
        // SAFETY: `i` is below the object's reference count.
        .map(|i| (i, unsafe { raw::load(slot_addr(obj, i)) }))
        .filter(|&(_, v)| v != 0);
    trace.object(
        obj,
        h.size_bytes(),
        Fate::Marked,
        TraceShape::of(h),
        referents,
    );
}

impl ParallelTask for Marker<'_> {
    type Item = MarkItem;
    type Root = RootSlots;
    type Local = MarkScans;

    fn root_name(&self, _: &RootSlots) -> &'static str {
        "ThreadRoots"
    }

    fn run_root(&self, roots: &RootSlots, scans: &mut MarkScans, q: &mut WorkQueue<MarkItem>) {
        if let Some(trace) = &mut scans.trace {
            trace.begin_root(roots.ptr as usize, false);
        }
        for slot in roots.slot_addrs() {
            // SAFETY: root slots are valid words of a stopped mutator's handle stack.
            let v = unsafe { raw::load(slot) };
            if v == 0 {
                continue;
            }
            if let Some(trace) = &mut scans.trace {
                trace.root_reaches(v);
            }
            if self.mark_traced(v, scans) {
                q.push(MarkItem::Object(v));
            }
        }
    }

    #[inline]
    fn process(&self, item: MarkItem, scans: &mut MarkScans, q: &mut WorkQueue<MarkItem>) {
        match item {
            MarkItem::Object(obj) => {
                // SAFETY: marked objects are valid object starts.
                let h = unsafe { raw::header(obj) };
                if h.ref_count() > 0 {
                    self.note_scan(obj, scans);
                }
                let (now, rest) = first_slots(h);
                if let Some(start) = rest {
                    q.push(MarkItem::ArrayChunk { array: obj, start });
                }
                self.scan_slots(obj, 0, now, scans, q);
            }
            MarkItem::ArrayChunk { array, start } => {
                // SAFETY: as above.
                let n = unsafe { raw::header(array) }.ref_count();
                let (end, next) = chunk_slots(start, n);
                if let Some(start) = next {
                    q.push(MarkItem::ArrayChunk { array, start });
                }
                self.note_scan(array, scans);
                self.scan_slots(array, start, end, scans, q);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Summary: where every live word goes

/// Where live words go: the heap's compaction tables (live words per region, per block the
/// live words of its region before it, each region's destination) read with the bitmaps.
struct Summary<'a> {
    mem: &'a HeapMemory,
    tables: &'a CompactionTables,
}

impl Summary<'_> {
    #[inline(always)]
    fn region_of(&self, addr: usize) -> usize {
        (addr - self.mem.base()) / REGION_SIZE
    }

    fn region_base(&self, r: usize) -> usize {
        self.mem.base() + r * REGION_SIZE
    }

    /// New address of the live word at `addr`.
    #[inline(always)]
    fn new_addr(&self, addr: usize) -> usize {
        let live = &self.mem.mark_live;
        let block = live.word_index(addr);
        let before = self.tables.block_prefix[block].load(Ordering::Relaxed) as usize
            + live.count_in_word_below(addr);
        self.tables.region_dest[self.region_of(addr)].load(Ordering::Relaxed) + before * WORD
    }

    /// Objects starting in region `r`, in address order.
    fn objects_in_region(&self, r: usize) -> impl Iterator<Item = usize> + '_ {
        let (lo, hi) = (self.region_base(r), self.region_base(r) + REGION_SIZE);
        let begin = &self.mem.mark_begin;
        let mut next = begin.find_next(lo, hi);
        std::iter::from_fn(move || {
            let o = next?;
            // SAFETY: a begin bit marks a live object start.
            let size = unsafe { raw::header(o) }.size_bytes();
            next = begin.find_next(o + size, hi);
            Some(o)
        })
    }
}

/// Where to split `regions` between a lower space with `room` free bytes (`start..split`) and
/// their own space (`split..end`): the latest split whose live data fits in `room` together
/// with the tail of the live object that straddles it, if any (an object moves with the region
/// it starts in). Returns `(split, tail bytes)`; `(start, 0)` when nothing fits. The tail is at
/// most `max_tail`, so the own part's first destination, its cursor less the tail, stays in
/// the heap.
fn split_point(
    s: &Summary<'_>,
    regions: std::ops::Range<usize>,
    room: usize,
    max_tail: usize,
) -> (usize, usize) {
    let mut best = (regions.start, 0);
    let mut total = 0;
    for split in regions.start + 1..regions.end {
        total += s.tables.region_live[split - 1].load(Ordering::Relaxed) * WORD;
        if total > room {
            break;
        }
        let tail = straddling_tail(s, s.region_base(split));
        if total + tail <= room && tail <= max_tail {
            best = (split, tail);
        }
    }
    best
}

/// Bytes at and above `at` of the live object that covers `at` without starting there (0 if
/// the word at `at` is dead or starts an object).
fn straddling_tail(s: &Summary<'_>, at: usize) -> usize {
    let mem = s.mem;
    if !mem.mark_live.is_marked(at) || mem.mark_begin.is_marked(at) {
        return 0;
    }
    let start = mem
        .mark_begin
        .find_prev(at, mem.base())
        .expect("a live word lies in a marked object");
    // SAFETY: `start` is a live object start (its begin bit is set).
    start + unsafe { raw::header(start) }.size_bytes() - at
}

/// Run `f(i)` for every `i in 0..n` on the context's workers, each index exactly once.
fn parallel_for(ctx: &GcContext<'_>, n: usize, f: impl Fn(usize) + Sync) {
    parallel_for_workers(ctx, n, |_, i| f(i));
}

/// [`parallel_for`] telling `f` which worker runs index `i`: `f(worker, i)`.
fn parallel_for_workers(ctx: &GcContext<'_>, n: usize, f: impl Fn(usize, usize) + Sync) {
    let next = AtomicUsize::new(0);
    ctx.pool.run(ctx.workers, |worker| loop {
        // Relaxed: the index is only a claim; the pool's start/finish synchronise the data.
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        f(worker, i);
    });
}

/// Run a full collection. The world must be stopped; `roots` are all mutator root slots.
/// `tracked` objects are updated to their new addresses, or to 0 when they died (see
/// [`Tracked`]); so are the `weak` slots, as tasks of the adjust phase, after marking is
/// complete (see [`super::weak`]).
pub fn full_collect(
    ctx: &GcContext<'_>,
    roots: &[RootSlots],
    weak: &[WeakRange<'_>],
    tracked: Tracked<'_>,
    trace: bool,
) -> FullOutcome {
    let mem = ctx.mem;
    let t0 = Instant::now();
    let mut phases = PhaseTimes::default();
    // Every contiguous range in address order: old, then each fragment of eden and of the
    // survivor spaces (one per space unless the NUMA layout is `fragmented`).
    let spaces = mem.fragments_in_address_order();
    let used_before: Vec<(usize, usize)> = spaces
        .iter()
        .map(|(_, _, f)| (f.bottom(), f.top()))
        .collect();

    // 1. Mark.
    let node_map = ctx.numa.map(|n| n.map);
    let worker_node = |w: usize| ctx.numa.map_or(0, |n| n.worker_node(w));
    let marker = Marker { mem, node_map };
    let root_tasks: Vec<RootTask<RootSlots>> = roots
        .iter()
        .flat_map(|r| r.chunks(ROOT_CHUNK))
        .enumerate()
        .map(|(i, slots)| RootTask {
            root: slots,
            affinity: Affinity::Prefers(i % ctx.workers),
        })
        .collect();
    let trace_roots = trace.then(|| {
        root_shapes(root_tasks.iter().map(|t| {
            let kind = TraceRootKind::HandleStack {
                slots: t.root.len as u64,
            };
            (t.root.ptr as usize, kind, t.affinity)
        }))
    });
    let scans = (0..ctx.workers)
        .map(|w| MarkScans {
            node: worker_node(w),
            trace: trace.then(Box::default),
            ..Default::default()
        })
        .collect();
    let (mut scans, mut workers) = run_phase(ctx.pool, &ctx.policy, &marker, root_tasks, scans);
    // Only the marking phase is traced: its buffers are gathered here and numbered by the VM
    // thread after the world has been resumed.
    let trace = trace_roots.map(|roots| {
        let buffers = scans.iter_mut().map(|s| s.trace.take());
        RawTrace::gather(TraceKind::Full, roots, buffers, false)
    });
    let t_mark = ms_since(t0);

    // 2. Summary. Its tables were allocated with the heap: nothing here allocates memory that
    // grows with the heap, so a collection cannot fail for want of it.
    let t1 = Instant::now();
    let tables = &mem.compaction;
    let mut lists = tables.lists();
    let RegionLists {
        used: used_regions,
        live: live_regions,
        movers,
    } = &mut *lists;
    // Spaces are region aligned, so no region is listed twice and the list stays in its room.
    used_regions.clear();
    used_regions.extend(used_before.iter().flat_map(|&(lo, hi)| {
        let first = (lo - mem.base()) / REGION_SIZE;
        let last = (hi - mem.base()).div_ceil(REGION_SIZE);
        first..last
    }));
    let summary = Summary { mem, tables };
    {
        let used_regions = &*used_regions;
        parallel_for(ctx, used_regions.len(), |i| {
            let r = used_regions[i];
            let first_block = r * BLOCKS_PER_REGION;
            let mut running = 0usize;
            for b in first_block..first_block + BLOCKS_PER_REGION {
                tables.block_prefix[b].store(running as u32, Ordering::Relaxed);
                running += mem.mark_live.word(b).count_ones() as usize;
            }
            tables.region_live[r].store(running, Ordering::Relaxed);
        });
    }
    // Destinations, range by range in address order. Target cursors start at each bottom.
    let mut cursor: Vec<usize> = spaces.iter().map(|(_, _, f)| f.bottom()).collect();
    // Bytes placed so far in each space (all its fragments): a fragment spans its space's whole
    // capacity, so what a space may still take is the smaller of its fragment's room and the
    // space's. A space's own data is placed before any from higher spaces (data only moves
    // down), so its own never exceeds its capacity and others' only fill what is left.
    let space_index = |id: SpaceId| id as usize;
    let mut placed = [0usize; 4];
    let room = |k: usize, cursor: &[usize], placed: &[usize; 4]| {
        let (id, _, f) = spaces[k];
        let capacity = mem.space(id).capacity();
        (f.end() - cursor[k]).min(capacity.saturating_sub(placed[space_index(id)]))
    };
    let mut live_bytes = 0;
    let mut young_bytes_left = 0;
    let region_bytes = |r: usize| tables.region_live[r].load(Ordering::Relaxed) * WORD;
    for (j, &(lo, hi)) in used_before.iter().enumerate() {
        let (r0, r1) = (
            (lo - mem.base()) / REGION_SIZE,
            (hi - mem.base()).div_ceil(REGION_SIZE),
        );
        let live: usize = (r0..r1).map(region_bytes).sum();
        live_bytes += live;
        // Regions `r0..split` go to space `k`, the rest stays in space `j`; `tail` bytes of an
        // object straddling the split move with the region it starts in.
        let (k, split, tail) = match (0..j).find(|&k| live <= room(k, &cursor, &placed)) {
            Some(k) => (k, r1, 0),
            // No lower space holds all of it: fill the lowest one with room as far as it goes
            // and compact the rest within its own space (as PSParallelCompact splits a space).
            // Moving nothing instead left eden full of live data after a full collection while
            // old had room, and then every allocation needed a full collection of its own.
            None => (0..j)
                .find(|&k| room(k, &cursor, &placed) > 0)
                .map(|k| {
                    let room = room(k, &cursor, &placed);
                    let (split, tail) = split_point(&summary, r0..r1, room, cursor[j] - mem.base());
                    (k, split, tail)
                })
                .unwrap_or((j, r1, 0)),
        };
        let mut dest = cursor[k];
        for r in r0..split {
            // Relaxed: the workers that read it are started after this (the pool's dispatch
            // orders it).
            tables.region_dest[r].store(dest, Ordering::Relaxed);
            dest += region_bytes(r);
        }
        let moved_down = dest + tail - cursor[k];
        cursor[k] += moved_down;
        placed[space_index(spaces[k].0)] += moved_down;
        // Below the cursor by the straddling object's tail: the tail's words are counted in
        // the live words before every object of these regions, but are not moved with them.
        let mut dest = cursor[j] - tail;
        for r in split..r1 {
            tables.region_dest[r].store(dest, Ordering::Relaxed);
            dest += region_bytes(r);
        }
        let stayed = dest - cursor[j];
        cursor[j] = dest;
        placed[space_index(spaces[j].0)] += stayed;
        if k > 0 {
            young_bytes_left += moved_down;
        }
        if j > 0 {
            young_bytes_left += stayed;
        }
    }
    if !mem.old.ensure_committed(cursor[0], mem.reservation()) {
        panic!("full collection: the OS refused to commit old-generation memory for compaction");
    }
    // The card table and old object starts are rebuilt for the new layout.
    mem.cards.clean_range(mem.old.bottom(), mem.old.end());
    mem.old_starts.clear_range(mem.old.bottom(), mem.old.end());
    let t_summary = ms_since(t1);

    // 3. Adjust references (roots first, then the weak slots, then every live object, region
    // by region). Marking is complete, so a weak slot's referent is live exactly when it is
    // marked: it gets its new address, and a dead one's slot is cleared.
    let t2 = Instant::now();
    let s = &summary;
    let root_chunks: Vec<RootSlots> = roots.iter().flat_map(|r| r.chunks(ROOT_CHUNK)).collect();
    let weak_chunks = weak_chunks(weak);
    let weak_fate = |v: usize| {
        debug_assert!(mem.in_heap(v), "weak referent {v:#x} outside the heap");
        (mem.in_heap(v) && mem.mark_begin.is_marked(v)).then(|| s.new_addr(v))
    };
    live_regions.clear();
    live_regions.extend(
        used_regions
            .iter()
            .copied()
            .filter(|&r| tables.region_live[r].load(Ordering::Relaxed) > 0),
    );
    let live_regions = &*live_regions;
    let first_region = root_chunks.len() + weak_chunks.len();
    parallel_for(ctx, first_region + live_regions.len(), |i| {
        if (root_chunks.len()..first_region).contains(&i) {
            // SAFETY: a chunk of a stopped mutator's weak table, processed by this worker only;
            // its non-null slots hold object starts of this heap.
            unsafe { process_chunk(&weak_chunks[i - root_chunks.len()], &weak_fate) };
            return;
        }
        if i < root_chunks.len() {
            for slot in root_chunks[i].slot_addrs() {
                // SAFETY: root slots of stopped mutators; each chunk is adjusted by one worker.
                unsafe {
                    let v = raw::load(slot);
                    if v != 0 {
                        raw::store(slot, s.new_addr(v));
                    }
                }
            }
            return;
        }
        let r = live_regions[i - first_region];
        for o in s.objects_in_region(r) {
            let new_o = s.new_addr(o);
            let new_in_old = mem.in_old(new_o);
            if new_in_old {
                mem.old_starts.mark(new_o);
            }
            // SAFETY: `o` is a live object start; its slots are adjusted only by the worker
            // that owns the region it starts in.
            let n = unsafe { raw::header(o) }.ref_count();
            for i in 0..n {
                let slot = slot_addr(o, i);
                // SAFETY: as above.
                unsafe {
                    let v = raw::load(slot);
                    if v != 0 {
                        let nv = s.new_addr(v);
                        raw::store(slot, nv);
                        if new_in_old && mem.in_young(nv) {
                            mem.cards.dirty(slot_addr(new_o, i));
                        }
                    }
                }
            }
        }
    });
    let t_adjust = ms_since(t2);

    // 4. Compact.
    let t3 = Instant::now();
    // Every region is done (not pending) between collections; only movers wait to be moved.
    let pending = &tables.region_pending;
    movers.clear();
    movers.extend(
        live_regions
            .iter()
            .copied()
            .filter(|&r| s.objects_in_region(r).next().is_some()),
    );
    let movers = &*movers;
    for &r in movers {
        pending[r].store(true, Ordering::Relaxed);
    }
    // The last live object start at or below each region's end, carried over regions without
    // one, so finding the object that overlaps a destination address never scans the bitmap
    // backwards across a large dead area (which made compaction quadratic in dead space).
    // (0: no object start at or below; heap addresses are never 0.)
    let last_start_upto = &tables.last_start_upto;
    {
        let mut carry = 0;
        let mut next_live = live_regions.iter().copied().peekable();
        for (r, slot) in last_start_upto.iter().enumerate() {
            if next_live.next_if_eq(&r).is_some() {
                let lo = s.region_base(r);
                if let Some(a) = mem.mark_begin.find_prev(lo + REGION_SIZE - WORD, lo) {
                    carry = a;
                }
            }
            slot.store(carry, Ordering::Relaxed);
        }
    }
    let moved = AtomicUsize::new(0);
    // Per worker: bytes moved to its own node and to another (NUMA accounting only). Each
    // worker adds to its own pair once per region.
    let moved_by_worker: Vec<[AtomicU64; 2]> = (0..ctx.workers)
        .map(|_| [AtomicU64::new(0), AtomicU64::new(0)])
        .collect();
    parallel_for_workers(ctx, movers.len(), |worker, i| {
        let r = movers[i];
        let lo = s.region_base(r);
        let last = mem
            .mark_begin
            .find_prev(lo + REGION_SIZE - WORD, lo)
            .expect("mover has an object");
        // SAFETY: `last` is a live object start.
        let dest_end = s.new_addr(last) + unsafe { raw::header(last) }.size_bytes();
        // Wait for every lower region whose source memory our destination overlaps.
        // Sources overlapping [region_dest, dest_end) belong to objects starting at or after
        // the last object start at or below region_dest.
        let d_lo = tables.region_dest[r].load(Ordering::Relaxed);
        let d_region = s.region_of(d_lo);
        let overlapping = mem
            .mark_begin
            .find_prev(d_lo, s.region_base(d_region))
            .or_else(|| {
                let p = d_region.checked_sub(1)?;
                Some(last_start_upto[p].load(Ordering::Relaxed)).filter(|&a| a != 0)
            });
        let first_dep = s.region_of(overlapping.unwrap_or(d_lo));
        let hi_dep = s.region_of(dest_end - WORD).min(r.saturating_sub(1));
        if r > 0 {
            for flag in &pending[first_dep..=hi_dep.max(first_dep)] {
                if first_dep > hi_dep {
                    break;
                }
                let mut spins = 0u32;
                // Acquire pairs with the Release store of the region's mover.
                while flag.load(Ordering::Acquire) {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                    } else {
                        std::thread::yield_now();
                    }
                }
            }
        }
        let mut bytes = 0;
        let mut remote = 0;
        let my_node = worker_node(worker);
        for o in s.objects_in_region(r) {
            let new_o = s.new_addr(o);
            // SAFETY: `o` is live; its header is intact until it is moved (by us, now).
            let size = unsafe { raw::header(o) }.size_bytes();
            if new_o != o {
                // SAFETY: the destination is committed and no longer holds unmoved live data
                // (dependencies above); `copy` handles overlap with the object's own source.
                unsafe { std::ptr::copy(o as *const u8, new_o as *mut u8, size) };
                bytes += size;
                if let Some(map) = &node_map {
                    if map.node_of(new_o) != my_node {
                        remote += size;
                    }
                }
            }
        }
        moved.fetch_add(bytes, Ordering::Relaxed);
        if node_map.is_some() {
            // Relaxed: counters read after the pool's finish, which orders them.
            let pair = &moved_by_worker[worker];
            pair[0].fetch_add((bytes - remote) as u64, Ordering::Relaxed);
            pair[1].fetch_add(remote as u64, Ordering::Relaxed);
        }
        // Release publishes the moved objects to workers waiting on this region.
        pending[r].store(false, Ordering::Release);
    });
    let t_compact = ms_since(t3);

    // Finish: tops, survivor roles, clear the mark bitmaps.
    let t4 = Instant::now();
    // Follow tracked objects while the bitmaps still say which are live and where they went.
    for t in tracked.iter_mut() {
        if *t != 0 {
            debug_assert!(mem.in_heap(*t), "tracked object {:#x} outside the heap", *t);
            *t = if mem.in_heap(*t) && mem.mark_begin.is_marked(*t) {
                s.new_addr(*t)
            } else {
                0
            };
        }
    }
    for (id, space) in mem.spaces_in_address_order() {
        let tops: Vec<usize> = spaces
            .iter()
            .zip(&cursor)
            .filter(|((of, _, _), _)| *of == id)
            .map(|(_, &top)| top)
            .collect();
        space.set_fragment_tops(&tops, mem.reservation());
    }
    for &(lo, hi) in &used_before {
        mem.mark_begin.clear_range(lo, hi);
        mem.mark_live.clear_range(lo, hi);
    }
    if mem.to_space().used() > 0 && mem.from_space().used() == 0 {
        mem.swap_survivors();
    }
    let survivors_both_used = mem.to_space().used() > 0;
    if node_map.is_some() {
        for ((stats, scan), pair) in workers.iter_mut().zip(&scans).zip(&moved_by_worker) {
            stats.numa = WorkerNumaStats {
                node: scan.node,
                bytes_copied_local: pair[0].load(Ordering::Relaxed),
                bytes_copied_remote: pair[1].load(Ordering::Relaxed),
                objects_scanned_local: scan.scanned - scan.scanned_remote,
                objects_scanned_remote: scan.scanned_remote,
            };
        }
    }
    phases.init_ms = 0.0;
    phases.parallel_ms = t_mark + t_adjust + t_compact;
    phases.final_ms = ms_since(t4);
    phases.steps = vec![
        ("mark", t_mark),
        ("summary", t_summary),
        ("adjust", t_adjust),
        ("compact", t_compact),
        ("finish", phases.final_ms),
    ];
    FullOutcome {
        live_bytes,
        moved_bytes: moved.into_inner(),
        young_bytes_left,
        survivors_both_used,
        workers,
        phases,
        trace,
    }
}
