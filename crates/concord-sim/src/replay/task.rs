//! One recorded collection redone as a parallel phase of the collector's own engine (compiled
//! against the engine its including module names `parallel`; see [`crate::replay`]).
//!
//! The work items are the collectors' own ([`ReplayItem`]), pushed where they push them:
//!
//! * **young** (the scavenger's `Item`): a root task's handle-stack slots are processed at
//!   once, a card stripe's slots are pushed as [`ReplayItem::Slot`]s (past
//!   `CARD_SCAN_QUEUE_LIMIT` queued items the stripe's worker processes half of them itself,
//!   as the scavenger's card scanning does); processing a slot claims its object exactly once,
//!   as the forwarding CAS does (the first worker to reach it copies it, later reaches cost
//!   the load of its claim word and are dropped), and the copy's slots that refer into the
//!   collected set are pushed, one [`ReplayItem::Slot`] each, in slot order;
//! * **full** (the marker's `MarkItem`): a reach marks its object (the claim), and a marked
//!   object is pushed as [`ReplayItem::Object`], whose processing marks what its slots refer
//!   to; a full collection never sends work to another node (the runtime's marking is not
//!   segregated);
//! * in both, an object is scanned as `concord::collection::scan_slots_of` says: a reference
//!   array of more than 2·`ARRAY_CHUNK` slots scans its first chunk at once and pushes the
//!   rest as a stealable [`ReplayItem::ArrayChunk`], which pushes the next chunk
//!   (`chunk_slots`) and the recorded references that lie in its slots. A promotion failure's
//!   object pushes all its slots at once, as the scavenger does.
//!
//! So at one worker a replayed collection processes exactly the items the recorded one did.
//! A copy allocates in the worker's PLAB for its destination (to-space for a survivor, old for
//! a promoted object) with the runtime's own `Plab`: when it does not fit, the refill (or, for
//! an object over half a buffer, the direct allocation) takes bytes from a simulated space
//! top shared by all workers, with the runtime's CAS loop, so refills contend. The recorded
//! PLAB sizes are used ([`ReplayCollection::plab_sizes`]); the simulated spaces never fill
//! (the recorded fates say where each object went).
//!
//! What a step costs in virtual time (nothing on real threads, where the charges do nothing):
//!
//! * an object copy: [`exec::charge_copy`]`(1, size)` (a promotion failure's object, left in
//!   place, and a full collection's mark: `(1, 0)`, the header and slots but no payload);
//! * a reach (a slot processed, or a slot a marking scan reads): the atomic load of its
//!   object's claim word (plus the CAS for the reach that claims it), and a line miss or a
//!   far access if the object lay more than a cache line from the one the worker reached
//!   before, at the collection's footprint ([`exec::reach`]; traces that record where
//!   objects lay: version 4); a reach of an object whose header lies on a line the collection
//!   already read (copying or marking an object reads all its lines) is near;
//! * a PLAB refill or direct allocation: the load and CAS of the space top (each retry
//!   another CAS); under the `fragmented` and `segregated` layouts the to-space counts its
//!   fragments' bytes first, with a load and CAS of its own, as `Space::par_allocate_on` does;
//! * a handle-stack chunk: its slots read, `charge_copy(0, 8 · slots)`;
//! * a card stripe: its scanned old objects and one card-table byte per card of its extent,
//!   `charge_copy(scanned_objects, bytes / CARD_SIZE)`;
//! * the work queue's own operations, through the engine.
//!
//! What the replay cannot redo: which worker loses a forwarding race (the runtime's loser has
//! already copied and undoes it; the replay's loser only fails its CAS), a survivor that first
//! failed to fit in to-space, and under `segregated` the messages for old objects on another
//! node's dirty cards and for copies that landed on another node (a trace has no addresses;
//! only slots whose referent is on another node are sent there).

use concord::collection::plab::{Plab, PlabSpace};
use concord::collection::scavenge::CARD_SCAN_QUEUE_LIMIT;
use concord::collection::{chunk_slots, scan_slots_of};
use concord::memory::card_table::CARD_SIZE;
use concord::telemetry::gc_trace::{Fate, TraceAffinity, TraceKind, TraceRootKind};
use concord::telemetry::WorkerPhaseStats;

use super::parallel::engine::{
    run_phase, run_phase_segregated, ParallelTask, Segregation, WorkQueue,
};
use super::parallel::task_queue::{Affinity, RootTask};
use super::parallel::{PhasePolicy, WorkerPool};
use crate::exec;
use crate::exec::reach::Reach;
use crate::replay::memory::Memory;
use crate::replay::ReplayCollection;
use crate::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// Bytes of a handle-stack slot.
const SLOT_BYTES: u64 = 8;

/// Bytes of a heap word: objects are allocated in whole words.
const WORD_BYTES: usize = 8;

/// Claim word of an object nobody has reached yet (otherwise: the claiming worker + 1).
const UNCLAIMED: u32 = 0;

/// Bytes each simulated space (and each fragment of one) spans: more than any heap, so a
/// replay's PLABs never run out (the recorded fates already say where objects went).
const SPACE_SPAN: usize = 1 << 40;

/// A work item of a replayed collection: the collectors' own items, with object ids for
/// addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayItem {
    /// Young: a slot referring to object `.0` in the collected set, to be copied unless
    /// already forwarded (the scavenger's `Item::Slot`).
    Slot(u32),
    /// Full: the marked object `.0`, whose slots are to be scanned (the marker's
    /// `MarkItem::Object`).
    Object(u32),
    /// Slots `start..` of the copied (or marked) reference array `array` (the collectors'
    /// `ArrayChunk`).
    ArrayChunk {
        /// The array.
        array: u32,
        /// Its first slot in this chunk.
        start: u32,
    },
}

/// A shared space of the simulated heap: its top (one per fragment), and under a fragmented
/// layout the counter of its bytes across fragments; simulated atomics, so a refill is a
/// scheduling point and workers refilling at once contend as on the real space.
struct SimSpace {
    counter: Option<AtomicUsize>,
    tops: Vec<AtomicUsize>,
}

impl SimSpace {
    /// A space of `fragments` fragments (at least one): fragment `f` spans
    /// `[(f + 1)·SPACE_SPAN, (f + 2)·SPACE_SPAN)` (simulated addresses, never 0).
    fn new(fragments: usize) -> Self {
        let fragments = fragments.max(1);
        SimSpace {
            counter: (fragments > 1).then(|| AtomicUsize::new(0)),
            tops: (0..fragments)
                .map(|f| AtomicUsize::new((f + 1) * SPACE_SPAN))
                .collect(),
        }
    }

    /// Fragment `fragment` of the space, to cut PLABs from.
    fn fragment(&self, fragment: usize) -> SimFragment<'_> {
        SimFragment {
            space: self,
            fragment: fragment % self.tops.len(),
        }
    }
}

/// A fragment of a [`SimSpace`], as the runtime's `Plab` takes buffers from.
struct SimFragment<'a> {
    space: &'a SimSpace,
    fragment: usize,
}

/// The CAS loop of the runtime's `Fragment::par_allocate` (and of `Space::par_allocate_on`'s
/// counter) on a simulated word, below `limit`.
fn bump(word: &AtomicUsize, bytes: usize, limit: usize) -> Option<usize> {
    let mut top = word.load(Ordering::Relaxed);
    loop {
        let new_top = top.checked_add(bytes).filter(|&t| t <= limit)?;
        match word.compare_exchange_weak(top, new_top, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return Some(top),
            Err(current) => top = current,
        }
    }
}

impl PlabSpace for SimFragment<'_> {
    fn par_allocate(&self, bytes: usize) -> Option<usize> {
        if let Some(counter) = &self.space.counter {
            bump(counter, bytes, SPACE_SPAN)?;
        }
        let end = (self.fragment + 2) * SPACE_SPAN;
        bump(&self.space.tops[self.fragment], bytes, end)
    }

    fn free(&self) -> usize {
        // Never reached: a simulated space never fills.
        SPACE_SPAN
    }
}

/// Bytes of a page the kernel faults in on first touch (the heap's pages without THP).
pub const PAGE_BYTES: usize = 4096;

/// How far the heap's spaces had been written before a collection, for its first-touch page
/// faults: a copy into memory below these marks finds its page mapped, one beyond pays a
/// fault ([`exec::Costs::page_fault`]) for each new page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Touched {
    /// Bytes of to-space written before, per to-space fragment (missing: none).
    pub to_space: Vec<usize>,
    /// Bytes of the old generation in use at the collection's start: promotions go above.
    pub old_used: usize,
    /// Bytes of the old generation written before.
    pub old_high: usize,
}

/// The first-touch marks of a collection in progress, moved up as workers cut buffers
/// (plain atomics: bookkeeping of the model, not operations of the collector, so not
/// charged).
struct FirstTouch {
    to_space: Vec<std::sync::atomic::AtomicUsize>,
    old_used: usize,
    old_high: std::sync::atomic::AtomicUsize,
}

impl FirstTouch {
    /// The pages in `[high, end)` beyond the old mark `high`, moving it to `end`.
    fn touch(high: &std::sync::atomic::AtomicUsize, end: usize) -> u64 {
        let before = high.fetch_max(end, std::sync::atomic::Ordering::Relaxed);
        (end.div_ceil(PAGE_BYTES)).saturating_sub(before.div_ceil(PAGE_BYTES)) as u64
    }
}

/// The replay of one recorded collection.
pub struct ReplayTask<'c> {
    collection: &'c ReplayCollection,
    /// Where the objects live on a NUMA machine ([`Memory`]); `None`: uniform memory.
    memory: Option<&'c Memory>,
    /// Per object: [`UNCLAIMED`] or its copier's id + 1 (the forwarding word).
    claims: Vec<AtomicU32>,
    /// To-space, which survivors' PLABs are cut from.
    to_space: SimSpace,
    /// The old generation, which promoted objects' PLABs are cut from.
    old: SimSpace,
    /// The first-touch model, if the heap was not pretouched ([`ReplayTask::with_first_touch`]).
    first_touch: Option<FirstTouch>,
    /// What a line miss and a far access cost at this collection's footprint
    /// ([`exec::reach_costs`]).
    reach_ns: (exec::Ns, exec::Ns),
    /// The lines the replay has read, where the trace says where objects lay.
    lines: Option<exec::reach::TouchedLines>,
}

/// What one worker did in a replayed collection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayLocal {
    /// The worker's id.
    pub worker: usize,
    /// Objects it claimed (copied, left in place after a promotion failure, or marked).
    pub objects: u64,
    /// Bytes it copied (survivors and promoted) or marked live (full collections).
    pub bytes: u64,
    /// Of those, bytes read from another node's memory than its CPU's (NUMA machines only).
    pub bytes_remote: u64,
    /// Objects it claimed that lay on its CPU's node, and on another (NUMA machines only).
    pub objects_local: u64,
    /// See `objects_local`.
    pub objects_remote: u64,
    /// Of those, bytes it promoted.
    pub bytes_promoted: u64,
    /// Reaches of objects already claimed (dropped after one load).
    pub dropped_reaches: u64,
    /// Reaches whose object lay within a page of the one the worker reached before, but not
    /// within a line ([`Reach::Line`]; counted only where the trace records where objects lay).
    pub line_misses: u64,
    /// Reaches whose object lay farther ([`Reach::Far`]), the worker's first included.
    pub far_accesses: u64,
    /// Where the object the worker reached last lay and its bytes
    /// ([`ReplayCollection::addr`]).
    pub last_reach: Option<(u64, u64)>,
    /// Array chunks it scanned ([`ReplayItem::ArrayChunk`]s processed).
    pub chunks: u64,
    /// To-space PLABs it cut (refills).
    pub young_refills: u64,
    /// Old-generation PLABs it cut.
    pub old_refills: u64,
    /// Objects over half a PLAB it allocated directly in their space.
    pub direct_allocations: u64,
    /// Its to-space PLAB (the runtime's `Plab`, on simulated addresses).
    pub young_plab: Plab,
    /// Its old-generation PLAB.
    pub old_plab: Plab,
}

/// The map from a recorded tag to the engine's.
fn affinity(tag: TraceAffinity) -> Affinity {
    match tag {
        TraceAffinity::Any => Affinity::Any,
        TraceAffinity::Prefers(w) => Affinity::Prefers(w as usize),
        TraceAffinity::Stripe(w) => Affinity::Stripe(w as usize),
    }
}

impl<'c> ReplayTask<'c> {
    /// The replay of `collection`, nothing claimed yet.
    pub fn new(collection: &'c ReplayCollection) -> Self {
        Self {
            collection,
            memory: None,
            claims: (0..collection.objects())
                .map(|_| AtomicU32::new(UNCLAIMED))
                .collect(),
            to_space: SimSpace::new(1),
            old: SimSpace::new(1),
            first_touch: None,
            reach_ns: exec::reach_costs(collection.footprint()),
            lines: collection.end().map(exec::reach::TouchedLines::new),
        }
    }

    /// The replay charging first-touch page faults: a worker that cuts a buffer (or places an
    /// object directly) beyond how far its space was written before (`touched`) pays
    /// [`exec::charge_page_faults`] for the new pages, as the copies into them would fault
    /// them in. [`touched_after`](Self::touched_after) gives the marks for the next one.
    pub fn with_first_touch(mut self, touched: Option<&Touched>) -> Self {
        self.first_touch = touched.map(|t| FirstTouch {
            to_space: (0..self.to_space.tops.len())
                .map(|f| {
                    std::sync::atomic::AtomicUsize::new(t.to_space.get(f).copied().unwrap_or(0))
                })
                .collect(),
            old_used: t.old_used,
            old_high: std::sync::atomic::AtomicUsize::new(t.old_high.max(t.old_used)),
        });
        self
    }

    /// How far the spaces were written once this collection's replay is done: to-space per
    /// fragment and the old generation's mark (`old_used` stays the caller's to move).
    pub fn touched_after(&self) -> Option<Touched> {
        let ft = self.first_touch.as_ref()?;
        let load =
            |a: &std::sync::atomic::AtomicUsize| a.load(std::sync::atomic::Ordering::Relaxed);
        Some(Touched {
            to_space: ft.to_space.iter().map(load).collect(),
            old_used: ft.old_used,
            old_high: load(&ft.old_high),
        })
    }

    /// The first-touch faults of a buffer (or a directly placed object) ending at simulated
    /// address `end`, cut from fragment `fragment` of to-space (the old generation with
    /// `to_old`); charged to the calling worker.
    fn fault_in(&self, to_old: bool, fragment: usize, end: usize) {
        let Some(ft) = &self.first_touch else {
            return;
        };
        let space = if to_old { &self.old } else { &self.to_space };
        let fragment = fragment % space.tops.len();
        let written = end.saturating_sub((fragment + 1) * SPACE_SPAN);
        let pages = if to_old {
            FirstTouch::touch(&ft.old_high, ft.old_used + written)
        } else {
            FirstTouch::touch(&ft.to_space[fragment], written)
        };
        exec::charge_page_faults(pages, to_old);
    }

    /// The replay with its objects placed on the nodes of `memory`: each copy is charged on
    /// the node it reads ([`exec::charge_copy_on`]) and counted local or remote for the
    /// worker's CPU; under `segregated` an object of another node is sent to that node's
    /// workers ([`run_segregated`](Self::run_segregated)); under `fragmented` and
    /// `segregated` each worker cuts its to-space PLABs from its node's fragment.
    pub fn with_memory(mut self, memory: Option<&'c Memory>) -> Self {
        self.memory = memory;
        self.to_space = SimSpace::new(memory.map_or(1, Memory::young_fragments));
        self
    }

    /// The root tasks (indices into the collection's roots) with their affinity tags.
    pub fn roots(&self) -> Vec<RootTask<usize>> {
        self.collection
            .roots
            .iter()
            .enumerate()
            .map(|(i, r)| RootTask {
                root: i,
                affinity: affinity(r.affinity),
            })
            .collect()
    }

    /// Fresh per-worker state for `workers` workers.
    pub fn locals(workers: usize) -> Vec<ReplayLocal> {
        (0..workers)
            .map(|worker| ReplayLocal {
                worker,
                ..ReplayLocal::default()
            })
            .collect()
    }

    /// The worker that claimed object `id`, if any did.
    pub fn claimed_by(&self, id: u32) -> Option<usize> {
        match self.claims[id as usize].load(Ordering::Relaxed) {
            UNCLAIMED => None,
            w => Some(w as usize - 1),
        }
    }

    /// Run the replay as one phase on `workers` workers of `pool` under `policy`; returns each
    /// worker's state and counters, its `bytes_copied` filled in.
    pub fn run(
        &self,
        pool: &WorkerPool,
        policy: &PhasePolicy,
        workers: usize,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        let (locals, stats) = run_phase(pool, policy, self, self.roots(), Self::locals(workers));
        self.finish(locals, stats)
    }

    /// [`run`](Self::run) as the engine's segregated phase: worker `w` works for node
    /// `worker_nodes[w]` (every node must have a worker).
    pub fn run_segregated(
        &self,
        pool: &WorkerPool,
        policy: &PhasePolicy,
        worker_nodes: Vec<usize>,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        let workers = worker_nodes.len();
        let segregation = Segregation {
            nodes: worker_nodes.iter().max().map_or(1, |&n| n + 1),
            worker_nodes,
        };
        let (locals, stats) = run_phase_segregated(
            pool,
            policy,
            self,
            self.roots(),
            Self::locals(workers),
            &segregation,
        );
        self.finish(locals, stats)
    }

    /// The workers' counters with the replay's figures filled in.
    fn finish(
        &self,
        locals: Vec<ReplayLocal>,
        mut stats: Vec<WorkerPhaseStats>,
    ) -> (Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        for (s, l) in stats.iter_mut().zip(&locals) {
            s.bytes_copied = l.bytes;
            if self.memory.is_some() {
                s.numa.bytes_copied_remote = l.bytes_remote;
                s.numa.bytes_copied_local = l.bytes - l.bytes_remote;
                s.numa.objects_scanned_local = l.objects_local;
                s.numa.objects_scanned_remote = l.objects_remote;
            }
        }
        (locals, stats)
    }

    /// The forwarding check, then the forwarding CAS (or the mark): whether this reach of
    /// object `id` claims it. A reach that does not is dropped, counted.
    fn claim(&self, id: u32, local: &mut ReplayLocal) -> bool {
        let claim = &self.claims[id as usize];
        // The check reads the object's header: a miss unless its line was read before in this
        // collection or it is next to the worker's last reach.
        if let (Some(at), Some(lines)) = (self.collection.addr(id), &self.lines) {
            let size = self.collection.size(id);
            let reach = if lines.contains(at) {
                Reach::Near
            } else {
                exec::reach::classify(local.last_reach, at, size)
            };
            local.last_reach = Some((at, size));
            let cost = match reach {
                Reach::Near => 0,
                Reach::Line => {
                    local.line_misses += 1;
                    self.reach_ns.0
                }
                Reach::Far => {
                    local.far_accesses += 1;
                    self.reach_ns.1
                }
            };
            if cost > 0 {
                exec::charge(cost);
            }
        }
        let mine = local.worker as u32 + 1;
        if claim.load(Ordering::Acquire) != UNCLAIMED
            || claim
                .compare_exchange(UNCLAIMED, mine, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            local.dropped_reaches += 1;
            return false;
        }
        // Copying (or marking) the object reads all its lines.
        if let (Some(at), Some(lines)) = (self.collection.addr(id), &self.lines) {
            lines.touch(at, self.collection.size(id));
        }
        true
    }

    /// The copy (or mark) of object `id`, just claimed: its space in a PLAB, its cost and the
    /// worker's counters.
    fn copy(&self, id: u32, local: &mut ReplayLocal) {
        let c = self.collection;
        let size = c.size(id);
        match c.fate(id) {
            Fate::Survivor => self.allocate(size, false, local),
            Fate::Promoted => self.allocate(size, true, local),
            Fate::Stayed | Fate::Marked => {}
        }
        local.objects += 1;
        let node = self.memory.map(|m| m.object_node(id));
        let charge = |objects, bytes| match node {
            Some(node) => exec::charge_copy_on(objects, bytes, node),
            None => exec::charge_copy(objects, bytes),
        };
        let remote = match (self.memory, node, exec::current_cpu()) {
            (Some(m), Some(node), Some(cpu)) => Some(m.node_of(cpu) != node),
            _ => None,
        };
        match remote {
            Some(true) => local.objects_remote += 1,
            Some(false) => local.objects_local += 1,
            None => {}
        }
        // Copied objects move their payload; a mark reads the header and slots only. Both
        // count in the worker's bytes (bytes marked live, for a full collection).
        let counted = match c.fate(id) {
            Fate::Survivor | Fate::Promoted => {
                charge(1, size);
                if c.fate(id) == Fate::Promoted {
                    local.bytes_promoted += size;
                }
                true
            }
            Fate::Marked => {
                charge(1, 0);
                true
            }
            Fate::Stayed => {
                charge(1, 0);
                false
            }
        };
        if counted {
            local.bytes += size;
            if remote == Some(true) {
                local.bytes_remote += size;
            }
        }
    }

    /// Allocate a copy of `size` bytes in the worker's PLAB for to-space (`to_old`: the old
    /// generation), as the scavenger does: the buffer, or the runtime's slow path on the
    /// shared simulated space.
    fn allocate(&self, size: u64, to_old: bool, local: &mut ReplayLocal) {
        let bytes = (size as usize).next_multiple_of(WORD_BYTES);
        let sizes = self.collection.plab_sizes;
        let (plab, space, plab_size, refills) = if to_old {
            (
                &mut local.old_plab,
                self.old.fragment(0),
                sizes.old,
                &mut local.old_refills,
            )
        } else {
            // From the to-space fragment of the worker's node (`fragmented`), as pinned.
            (
                &mut local.young_plab,
                self.to_space.fragment(local.worker),
                sizes.young,
                &mut local.young_refills,
            )
        };
        if plab.allocate(bytes).is_some() {
            return;
        }
        let (refilled, direct) = (plab.refilled_bytes, plab.direct_bytes);
        let placed = plab.allocate_slow_from(bytes, plab_size as usize, &space);
        debug_assert!(placed.is_some(), "a simulated space never fills");
        if let Some(at) = placed {
            // The new buffer (or the object placed directly) starts where the object went.
            let cut = (plab.refilled_bytes - refilled) + (plab.direct_bytes - direct);
            self.fault_in(to_old, space.fragment, at + cut);
        }
        *refills += u64::from(plab.refilled_bytes != refilled);
        local.direct_allocations += u64::from(plab.direct_bytes != direct);
    }

    /// In a segregated phase, the node of object `id` when it is not this worker's (its slot
    /// must be sent there).
    fn remote_node(&self, id: u32, queue: &WorkQueue<ReplayItem>) -> Option<usize> {
        let home = queue.home_node()?;
        let node = self.memory?.object_node(id);
        (node != home).then_some(node)
    }

    /// Young: a slot referring to object `id` (the scavenger's `process_slot`): copy the
    /// object unless another reach has, and push its slots.
    fn process_slot(&self, id: u32, local: &mut ReplayLocal, queue: &mut WorkQueue<ReplayItem>) {
        if let Some(node) = self.remote_node(id, queue) {
            // Segregated: an object of another node is that node's workers' to copy.
            queue.send(node, ReplayItem::Slot(id));
            return;
        }
        if !self.claim(id, local) {
            return;
        }
        self.copy(id, local);
        let c = self.collection;
        if c.fate(id) == Fate::Stayed {
            // A promotion failure pushes all its slots at once, never in chunks.
            for &r in c.refs_of(id) {
                queue.push(ReplayItem::Slot(r));
            }
        } else {
            self.push_contents(id, local, queue);
        }
    }

    /// Full: a reach of object `id` marks it; a new mark is pushed to be scanned.
    fn mark(&self, id: u32, local: &mut ReplayLocal, queue: &mut WorkQueue<ReplayItem>) {
        if self.claim(id, local) {
            self.copy(id, local);
            queue.push(ReplayItem::Object(id));
        }
    }

    /// Scan the copied (or marked) object `id` as the collectors do: a long reference array's
    /// rest as a chunk item, its first slots at once.
    fn push_contents(&self, id: u32, local: &mut ReplayLocal, queue: &mut WorkQueue<ReplayItem>) {
        let c = self.collection;
        let (now, rest) = scan_slots_of(c.slots(id), c.is_ref_array(id));
        if let Some(start) = rest {
            queue.push(ReplayItem::ArrayChunk {
                array: id,
                start: start as u32,
            });
        }
        self.scan_slots(id, 0, now, local, queue);
    }

    /// The recorded references in slots `from..to` of object `id`: pushed as slots (young),
    /// or marked (full).
    fn scan_slots(
        &self,
        id: u32,
        from: usize,
        to: usize,
        local: &mut ReplayLocal,
        queue: &mut WorkQueue<ReplayItem>,
    ) {
        let c = self.collection;
        let refs = c.refs_in_slots(id, from, to);
        match c.kind {
            TraceKind::Young => {
                for &r in refs {
                    queue.push(ReplayItem::Slot(r));
                }
            }
            TraceKind::Full => {
                for &r in refs {
                    self.mark(r, local, queue);
                }
            }
        }
    }

    /// A card stripe's slot referring to object `id` (the scavenger's `push_old_slot`):
    /// pushed, so that other workers can steal the copying; past [`CARD_SCAN_QUEUE_LIMIT`]
    /// queued items the worker processes the newest half itself.
    fn push_old_slot(&self, id: u32, local: &mut ReplayLocal, queue: &mut WorkQueue<ReplayItem>) {
        queue.push(ReplayItem::Slot(id));
        if queue.len() > CARD_SCAN_QUEUE_LIMIT {
            while queue.len() > CARD_SCAN_QUEUE_LIMIT / 2 {
                let Some(item) = queue.pop() else { break };
                self.process(item, local, queue);
            }
        }
    }
}

impl ParallelTask for ReplayTask<'_> {
    type Item = ReplayItem;
    type Root = usize;
    type Local = ReplayLocal;

    fn root_name(&self, root: &usize) -> &'static str {
        // The names the scavenger gives its root tasks.
        match self.collection.roots[*root].kind {
            TraceRootKind::HandleStack { .. } => "ThreadRoots",
            TraceRootKind::CardStripe { .. } => "OldToYoungRoots",
        }
    }

    fn run_root(&self, root: &usize, local: &mut ReplayLocal, queue: &mut WorkQueue<ReplayItem>) {
        let c = self.collection;
        let root = &c.roots[*root];
        match root.kind {
            TraceRootKind::HandleStack { slots } => {
                exec::charge_copy(0, slots.saturating_mul(SLOT_BYTES));
            }
            TraceRootKind::CardStripe {
                bytes,
                scanned_objects,
            } => exec::charge_copy(scanned_objects, bytes / CARD_SIZE as u64),
        }
        for &id in c.reaches(root) {
            match (c.kind, root.kind) {
                (TraceKind::Full, _) => self.mark(id, local, queue),
                (TraceKind::Young, TraceRootKind::HandleStack { .. }) => {
                    self.process_slot(id, local, queue)
                }
                (TraceKind::Young, TraceRootKind::CardStripe { .. }) => {
                    self.push_old_slot(id, local, queue)
                }
            }
        }
    }

    fn process(
        &self,
        item: ReplayItem,
        local: &mut ReplayLocal,
        queue: &mut WorkQueue<ReplayItem>,
    ) {
        match item {
            ReplayItem::Slot(id) => self.process_slot(id, local, queue),
            ReplayItem::Object(id) => self.push_contents(id, local, queue),
            ReplayItem::ArrayChunk { array, start } => {
                let (end, next) = chunk_slots(start as usize, self.collection.slots(array));
                if let Some(start) = next {
                    queue.push(ReplayItem::ArrayChunk {
                        array,
                        start: start as u32,
                    });
                }
                local.chunks += 1;
                self.scan_slots(array, start as usize, end, local, queue);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::tests::{array, tree, PLABS};
    use concord::collection::ARRAY_CHUNK;
    use concord::parallel::ParkingKind;
    use concord::telemetry::gc_trace::{TraceCollection, TraceShape};

    fn replay(objects: u32) -> ReplayCollection {
        ReplayCollection::try_from(tree(1, objects)).unwrap()
    }

    /// `c` replayed on `workers` real threads under `policy`.
    fn run_on(
        c: &ReplayCollection,
        workers: usize,
        policy: PhasePolicy,
    ) -> (ReplayTask<'_>, Vec<ReplayLocal>, Vec<WorkerPhaseStats>) {
        let pool = WorkerPool::new(workers, "replay-test", ParkingKind::Futex, |_| {}).unwrap();
        let task = ReplayTask::new(c);
        let (locals, stats) = task.run(&pool, &policy, workers);
        (task, locals, stats)
    }

    /// `t` as a version 2 trace holds it: ordinary objects with a slot per recorded reference.
    fn without_shapes(mut t: TraceCollection) -> TraceCollection {
        for o in &mut t.objects {
            o.shape = TraceShape::fixed(o.refs.len() as u64);
            o.ref_slots = 0..0;
        }
        t.ref_slots.clear();
        t
    }

    /// `t` as a full collection's marking: every object marked.
    fn as_full(mut t: TraceCollection) -> TraceCollection {
        t.kind = TraceKind::Full;
        for o in &mut t.objects {
            o.fate = Fate::Marked;
        }
        t
    }

    #[test]
    fn every_object_is_copied_exactly_once_under_every_policy_on_real_threads() {
        let c = replay(5_000);
        let (objects, bytes) = c.count(|_| true);
        for parking in [ParkingKind::Monitor, ParkingKind::Futex] {
            let pool = WorkerPool::new(4, "replay-test", parking, |_| {}).unwrap();
            for policy in [
                PhasePolicy::VANILLA,
                PhasePolicy::MODERN,
                PhasePolicy::OPTIMIZED,
                PhasePolicy::SUO18,
            ] {
                let task = ReplayTask::new(&c);
                let (locals, stats) = task.run(&pool, &policy, 4);
                assert!((0..c.objects() as u32).all(|id| task.claimed_by(id).is_some()));
                // Each object is counted by the worker its claim word names, and no other.
                let mut per_worker = vec![0u64; 4];
                for id in 0..c.objects() as u32 {
                    per_worker[task.claimed_by(id).unwrap()] += 1;
                }
                let counted: Vec<u64> = locals.iter().map(|l| l.objects).collect();
                assert_eq!(counted, per_worker, "{policy:?}");
                assert_eq!(counted.iter().sum::<u64>(), objects);
                assert_eq!(locals.iter().map(|l| l.bytes).sum::<u64>(), bytes);
                assert_eq!(
                    locals.iter().map(|l| l.bytes_promoted).sum::<u64>(),
                    c.bytes_promoted()
                );
                // Every reach is processed: the claims plus the dropped ones. Reaches: the
                // roots' plus every followed reference.
                let root_reaches = |handle_stack: bool| {
                    c.roots
                        .iter()
                        .filter(|r| {
                            matches!(r.kind, TraceRootKind::HandleStack { .. }) == handle_stack
                        })
                        .map(|r| c.reaches(r).len() as u64)
                        .sum::<u64>()
                };
                let refs: u64 = (0..c.objects() as u32)
                    .map(|id| c.refs_of(id).len() as u64)
                    .sum();
                let reaches = root_reaches(true) + root_reaches(false) + refs;
                let dropped: u64 = locals.iter().map(|l| l.dropped_reaches).sum();
                assert_eq!(objects + dropped, reaches, "{policy:?}");
                // The items, as the scavenger's: a slot per followed reference and per card
                // stripe reach. A handle-stack root task processes its slots itself, as the
                // scavenger's `ThreadRoots` do, so its reaches are no items (when the replay
                // pushed every reach as an item, they were: `reaches` items).
                assert_eq!(
                    stats.iter().map(|s| s.items).sum::<u64>(),
                    refs + root_reaches(false)
                );
                // Per-worker stats: ids, bytes, the three root tasks, a steal task each.
                assert_eq!(
                    stats.iter().map(|s| s.worker).collect::<Vec<_>>(),
                    vec![0, 1, 2, 3]
                );
                for (s, l) in stats.iter().zip(&locals) {
                    assert_eq!(s.bytes_copied, l.bytes);
                    assert_eq!(s.steal_tasks, 1);
                }
                let roots = |name| {
                    stats
                        .iter()
                        .map(|s| s.root_tasks.get(name).copied().unwrap_or(0))
                        .sum::<u64>()
                };
                assert_eq!((roots("ThreadRoots"), roots("OldToYoungRoots")), (2, 1));
            }
        }
    }

    #[test]
    fn a_shared_object_is_claimed_once_and_its_other_reaches_dropped() {
        // Object 0 is reached twice by the first root and by every third object.
        let c = replay(9);
        let pool = WorkerPool::new(1, "replay-one", ParkingKind::Futex, |_| {}).unwrap();
        let task = ReplayTask::new(&c);
        let (locals, _) = task.run(&pool, &PhasePolicy::OPTIMIZED, 1);
        // Reaches of 0: two from the root, from objects 2, 5, 8: five, one claims.
        // Others: each of 1..9 is reached once by its parent; 1 and 2 also by roots, 8 by the
        // stripe: 3 more dropped.
        assert_eq!(locals[0].objects, 9);
        assert_eq!(locals[0].dropped_reaches, 4 + 3);
        assert_eq!(task.claimed_by(0), Some(0));
    }

    #[test]
    fn affinity_tags_map_to_the_engines() {
        assert_eq!(affinity(TraceAffinity::Any), Affinity::Any);
        assert_eq!(affinity(TraceAffinity::Prefers(3)), Affinity::Prefers(3));
        assert_eq!(affinity(TraceAffinity::Stripe(7)), Affinity::Stripe(7));
        let c = replay(4);
        let roots = ReplayTask::new(&c).roots();
        let tags: Vec<Affinity> = roots.iter().map(|r| r.affinity).collect();
        assert_eq!(
            tags,
            vec![Affinity::Prefers(0), Affinity::Any, Affinity::Stripe(1)]
        );
    }

    #[test]
    fn a_long_reference_array_is_scanned_in_chunks_as_the_collectors_scan_it() {
        // 1000 slots: the first chunk at once, then chunks at 256, 512 and 768 (the
        // collectors' `scan_slots_of` and `chunk_slots`).
        let chunks = 1000usize.div_ceil(ARRAY_CHUNK) as u64 - 1;
        assert_eq!(chunks, 3);
        for (what, t) in [
            ("young", array(1, 1000, 1, Fate::Survivor)),
            ("full", as_full(array(1, 1000, 1, Fate::Survivor))),
        ] {
            let c = ReplayCollection::try_from(t.clone()).unwrap();
            let (task, locals, stats) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
            assert!((0..c.objects() as u32).all(|id| task.claimed_by(id) == Some(0)));
            assert_eq!(locals[0].chunks, chunks, "{what}");
            // Young: a slot item per slot (the array itself is reached by the handle-stack
            // root task, which copies it at once); full: an object item per marked object.
            let per_object = match c.kind {
                TraceKind::Young => 1000,
                TraceKind::Full => 1001,
            };
            assert_eq!(stats[0].items, per_object + chunks, "{what}");
            // Read as a version 2 trace holds it, the array is scanned whole: no chunks.
            let whole = ReplayCollection::try_from(without_shapes(t)).unwrap();
            let (_, locals, stats) = run_on(&whole, 1, PhasePolicy::OPTIMIZED);
            assert_eq!(
                (locals[0].chunks, stats[0].items),
                (0, per_object),
                "{what}"
            );
            // On four workers every object is still claimed once, and the items are the same
            // (whoever claims an object pushes the same slots).
            for policy in [PhasePolicy::VANILLA, PhasePolicy::OPTIMIZED] {
                let (task, locals, stats) = run_on(&c, 4, policy);
                assert!((0..c.objects() as u32).all(|id| task.claimed_by(id).is_some()));
                assert_eq!(locals.iter().map(|l| l.objects).sum::<u64>(), 1001);
                assert_eq!(locals.iter().map(|l| l.chunks).sum::<u64>(), chunks);
                let items: u64 = stats.iter().map(|s| s.items).sum();
                assert_eq!(items, per_object + chunks, "{what} {policy:?}");
            }
        }
        // Only the references recorded in a chunk's slots are pushed by it: every third slot.
        let c = ReplayCollection::try_from(array(1, 1000, 3, Fate::Survivor)).unwrap();
        let (_, locals, stats) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
        assert_eq!((locals[0].chunks, stats[0].items), (3, 334 + 3));
        // A promotion failure's array pushes all its slots at once, as the scavenger does.
        let mut failed = array(1, 1000, 1, Fate::Survivor);
        failed.objects[0].fate = Fate::Stayed;
        let c = ReplayCollection::try_from(failed).unwrap();
        let (_, locals, stats) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
        assert_eq!((locals[0].chunks, stats[0].items), (0, 1000));
    }

    #[test]
    fn plabs_are_refilled_every_plab_size_bytes_per_worker() {
        // 1000 survivors of 64 bytes behind an array of 8008 bytes: with 4 KiB to-space PLABs
        // a buffer holds 64 of them, and the array (over half a buffer) is allocated directly.
        let mut c = ReplayCollection::try_from(array(1, 1000, 1, Fate::Survivor)).unwrap();
        c.plab_sizes = PLABS;
        let (_, locals, _) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
        let l = &locals[0];
        assert_eq!(
            (l.young_refills, l.old_refills, l.direct_allocations),
            (16, 0, 1)
        );
        assert_eq!(l.young_plab.refilled_bytes, 16 * 4096);
        assert_eq!(l.young_plab.direct_bytes, 8008);
        // With the default PLABs (32 KiB): 512 per buffer, the array in the buffer too.
        let c = ReplayCollection::try_from(array(1, 1000, 1, Fate::Survivor)).unwrap();
        let (_, locals, _) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
        let l = &locals[0];
        assert_eq!((l.young_refills, l.direct_allocations), (3, 0));
        assert_eq!(l.young_plab.refilled_bytes, 3 * 32768);
        // Promoted objects fill old-generation PLABs (2 KiB: 32 of 64 bytes each).
        let mut c = ReplayCollection::try_from(array(1, 1000, 1, Fate::Promoted)).unwrap();
        c.plab_sizes = PLABS;
        let (_, locals, _) = run_on(&c, 1, PhasePolicy::OPTIMIZED);
        let l = &locals[0];
        assert_eq!(
            (l.young_refills, l.old_refills),
            (0, 1000usize.div_ceil(32) as u64)
        );
        // On four workers each refills its own PLAB every 4 KiB it copies.
        let mut c = ReplayCollection::try_from(array(1, 4000, 1, Fate::Survivor)).unwrap();
        c.plab_sizes = PLABS;
        let (task, locals, _) = run_on(&c, 4, PhasePolicy::OPTIMIZED);
        for l in &locals {
            let small = l.objects - u64::from(task.claimed_by(0) == Some(l.worker));
            assert_eq!(
                l.young_refills,
                (small * 64).div_ceil(4096),
                "worker {}",
                l.worker
            );
        }
        let refills: u64 = locals.iter().map(|l| l.young_refills).sum();
        assert!(refills >= 4000 * 64 / 4096);
    }

    #[test]
    fn reaches_far_from_the_workers_last_one_are_counted_where_the_trace_says_where_objects_lay() {
        // The test tree numbered breadth-first: laid out contiguously, a depth-first reach
        // order jumps only where subtrees are far apart; with a page between any two objects,
        // every reach of another object than the last one is far.
        let tree_of = |gap: u64| {
            let mut t = tree(1, 500);
            t.gaps = (0..t.objects.len() as u64)
                .map(|i| if i == 0 { 0 } else { gap })
                .collect();
            ReplayCollection::try_from(t).unwrap()
        };
        let near = tree_of(0);
        let (_, locals, _) = run_on(&near, 1, PhasePolicy::OPTIMIZED);
        let far_near = locals[0].far_accesses;
        // Laid out contiguously, most reaches are near the last one or on a line already read.
        assert!(locals[0].far_accesses + locals[0].line_misses < near.objects() as u64);
        assert!(far_near >= 1, "the first reach is far");
        let spread = tree_of(exec::reach::PAGE_BYTES + 8);
        let (_, locals, _) = run_on(&spread, 1, PhasePolicy::OPTIMIZED);
        assert!(locals[0].far_accesses >= spread.objects() as u64);
        assert!(locals[0].far_accesses > far_near, "{far_near}");
        assert_eq!(locals[0].line_misses, 0);
        // With a few lines between objects, the reaches between objects near each other in the
        // tree's numbering (those near the root) are line misses instead.
        let lines = tree_of(4 * exec::reach::LINE_BYTES);
        let (_, locals, _) = run_on(&lines, 1, PhasePolicy::OPTIMIZED);
        assert!(locals[0].line_misses + locals[0].far_accesses >= lines.objects() as u64);
        assert!(locals[0].line_misses > 0);
        assert!(lines.footprint() > near.footprint());
        // A trace that does not say where objects lay counts none.
        let (_, locals, _) = run_on(&replay(500), 1, PhasePolicy::OPTIMIZED);
        assert_eq!((locals[0].far_accesses, locals[0].line_misses), (0, 0));
        assert_eq!(replay(500).footprint(), 0);
    }
}
