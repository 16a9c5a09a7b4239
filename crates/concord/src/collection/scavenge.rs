//! The young collector: parallel copying of live eden and from-space objects into to-space or
//! the old generation (HotSpot's `PSScavenge` / `PSPromotionManager`).
//!
//! Roots are the mutators' handle stacks (`ThreadRoots` tasks) and the dirty cards of the old
//! generation (`OldToYoungRoots` tasks, one per stripe). Work items are reference slots whose
//! referent is still in eden or from-space; each slot is pushed exactly once, so each is
//! updated by exactly one worker. Objects are copied speculatively into the worker's PLAB and
//! the forwarding pointer is installed with a CAS: the loser undoes its copy and uses the
//! winner's. An object that fits neither in to-space nor in old is forwarded to itself
//! (promotion failure); the caller must then run a full collection.
//!
//! # Segregated work (004 §3.2.3, layout `segregated`)
//!
//! Every object has a node: the node the heap's node map gives for its start address. A worker
//! copies and scans only objects of its own node; work on an object of another node is sent to
//! that node's inbox as a message (the engine's [`run_phase_segregated`]):
//!
//! * a slot whose referent (the object to copy, or whose forwarding pointer to read) lies on
//!   another node goes, as it is, to the referent's node, whose worker copies the object and
//!   stores the new address into the slot (004: "a thread on the remote node updates the
//!   location of the reference");
//! * a fresh copy lives wherever its PLAB is: with fragmented young spaces on the copying
//!   worker's node, so its slots are then scanned locally; over the interleaved layout a PLAB
//!   spans pages of every node, so a copy that landed on another node is sent there as an
//!   `Object` message, and that node scans its slots;
//! * the slots of an old object on a dirty card of another node (old is interleaved) are sent
//!   to that node as an `OldSlots` message; the stripe's owner only cleans the cards and walks
//!   the object starts (reading headers for sizes).
//!
//! So no worker reads the slots of, or copies, an object of another node; what remains remote
//! is the one word of a slot in a referring object of another node (read and updated in place)
//! and, over the interleaved layout, the copy's destination. Nothing is sent in a full
//! collection, which runs unsegregated (004: segregation does not apply to compacting spaces).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::age_table::AgeTable;
use super::plab::Plab;
use super::weak::{process_weak, WeakRange};
use super::{chunk_slots, first_slots, ms_since, GcContext, RootSlots, Tracked, ROOT_CHUNK};
use crate::memory::card_table::CARD_SIZE;
use crate::memory::{HeapMemory, NodeMap};
use crate::object::raw::{self, slot_addr};
use crate::object::{Header, WORD};
use crate::parallel::task_queue::{Affinity, RootTask};
use crate::parallel::{run_phase, run_phase_segregated, ParallelTask, Segregation, WorkQueue};
use crate::telemetry::gc_trace::{
    root_shapes, Fate, RawTrace, RootShape, TraceBuffer, TraceKind, TraceRootKind, TraceShape,
};
use crate::telemetry::{PhaseTimes, WorkerNumaStats, WorkerPhaseStats};

/// Items a card-scanning worker lets queue up before it processes some itself (public for the
/// simulator's replay, which scans recorded card stripes the same way).
pub const CARD_SCAN_QUEUE_LIMIT: usize = 1 << 14;

/// Tunables of one scavenge.
#[derive(Clone, Copy, Debug)]
pub struct ScavengeParams {
    /// Objects whose age reached this are promoted.
    pub tenuring_threshold: u32,
    /// Upper bound for the next threshold.
    pub max_tenuring_threshold: u32,
    /// Survivor occupancy the next threshold aims at, percent.
    pub target_survivor_ratio: u32,
    /// To-space PLAB size, bytes.
    pub young_plab_size: usize,
    /// Old-generation PLAB size, bytes.
    pub old_plab_size: usize,
    /// Record the collection's work for the GC trace (`gc-trace`).
    pub trace: bool,
}

/// What a scavenge did.
#[derive(Debug, Default)]
pub struct ScavengeOutcome {
    /// Some object could not be copied; eden and from-space still hold live objects and a full
    /// collection must follow before mutators run.
    pub promotion_failed: bool,
    /// Bytes copied (to survivor or old).
    pub bytes_copied: usize,
    /// Of which promoted into old.
    pub bytes_promoted: usize,
    /// Dirty old-generation cards found at the start (counted by the card stripes as they
    /// scan: a count before the phase would be a serial pass over the whole card table).
    pub dirty_cards: usize,
    /// Tenuring threshold for the next scavenge.
    pub next_tenuring_threshold: u32,
    /// Per-worker counters.
    pub workers: Vec<WorkerPhaseStats>,
    /// Timing.
    pub phases: PhaseTimes,
    /// The recorded work, when [`ScavengeParams::trace`] asked for it.
    pub trace: Option<RawTrace>,
}

/// A unit of scavenging work.
#[derive(Clone, Copy, Debug)]
pub enum Item {
    /// A slot whose referent must be copied (or looked up) and the slot updated.
    Slot(usize),
    /// Slots `start..` of an already copied reference array (chunked scanning).
    ArrayChunk {
        /// The array (its new location).
        array: usize,
        /// First slot of this chunk.
        start: usize,
    },
    /// Segregated only: the slots of a copied object that landed on another node than the
    /// copying worker's, to be scanned by a worker of that node.
    Object(usize),
    /// Segregated only: the slots `from..to` of an old object on a dirty card, sent to the
    /// object's node by the worker that scanned the card.
    OldSlots {
        /// The old object.
        obj: usize,
        /// First slot index.
        from: u32,
        /// Slot index past the last.
        to: u32,
    },
}

/// A scavenge root task.
pub enum Root {
    /// A chunk of one mutator's handle stack.
    ThreadRoots(RootSlots),
    /// Dirty cards in `[lo, hi)` of the old generation.
    OldToYoungRoots {
        /// Stripe start (card aligned).
        lo: usize,
        /// Stripe end.
        hi: usize,
    },
}

/// A worker's private state: its PLABs, age table and counters (HotSpot's promotion manager).
#[derive(Default)]
pub struct PromotionManager {
    young: Plab,
    old: Plab,
    ages: AgeTable,
    copied: usize,
    promoted: usize,
    /// Self-forwarded objects and their original headers.
    failed: Vec<(usize, Header)>,
    /// The node this worker counts as its own (NUMA accounting only).
    node: usize,
    /// Bytes copied to another node than `node`.
    copied_remote: usize,
    /// Dirty cards this worker's card stripes found.
    dirty_cards: usize,
    /// Objects (or array chunks) whose slots this worker scanned.
    scanned: u64,
    /// Of which on another node than `node`.
    scanned_remote: u64,
    /// This worker's part of the GC trace, when recorded; `None` costs one predictable branch
    /// at each recording point.
    trace: Option<Box<TraceBuffer>>,
}

impl PromotionManager {
    /// A promotion manager for a worker on node `node`.
    fn on_node(node: usize) -> Self {
        Self {
            node,
            ..Default::default()
        }
    }
}

struct Scavenger<'a> {
    mem: &'a HeapMemory,
    young_start: usize,
    heap_end: usize,
    to_lo: usize,
    to_hi: usize,
    old_scan_limit: usize,
    params: ScavengeParams,
    promotion_failed: AtomicBool,
    /// The heap's node map when NUMA figures are counted; `None` costs one predictable branch.
    node_map: Option<NodeMap>,
}

impl Scavenger<'_> {
    /// In a segregated phase, the node of `addr` when it is not this worker's node (work on
    /// it must be sent there); `None` otherwise.
    #[inline(always)]
    fn remote_node(&self, addr: usize, q: &WorkQueue<Item>) -> Option<usize> {
        let home = q.home_node()?;
        let node = self.node_map.as_ref()?.node_of(addr);
        (node != home).then_some(node)
    }

    /// Count a scan of the slots of `obj` (local or remote to the worker's node).
    #[inline(always)]
    fn note_scan(&self, obj: usize, pm: &mut PromotionManager) {
        pm.scanned += 1;
        if let Some(map) = &self.node_map {
            pm.scanned_remote += u64::from(map.node_of(obj) != pm.node);
        }
    }

    /// Whether `obj` (non-null) is in eden or from-space, i.e. must be copied.
    #[inline(always)]
    fn in_collected_set(&self, obj: usize) -> bool {
        obj >= self.young_start && obj < self.heap_end && !(obj >= self.to_lo && obj < self.to_hi)
    }

    #[inline(always)]
    fn process_slot(&self, slot: usize, pm: &mut PromotionManager, q: &mut WorkQueue<Item>) {
        // SAFETY: slots come from handle stacks or live objects' reference slots, all valid words.
        let obj = unsafe { raw::load(slot) };
        if obj == 0 || !self.in_collected_set(obj) {
            return;
        }
        if let Some(node) = self.remote_node(obj, q) {
            q.send(node, Item::Slot(slot));
            return;
        }
        let new = self.copy_to_survivor_space(obj, pm, q);
        // SAFETY: each slot is processed by exactly one worker (pushed once).
        unsafe { raw::store(slot, new) };
        if self.mem.in_old(slot) && new >= self.young_start {
            self.mem.cards.dirty(slot);
        }
    }

    /// The referents of `obj`'s slots that are in the collected set (what scanning it pushes),
    /// with their slot indices, for the GC trace.
    fn collected_referents(
        &self,
        obj: usize,
        h: Header,
    ) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..h.ref_count()).filter_map(move |i| {
            // SAFETY: `i` is below the object's reference count.
            let v = unsafe { raw::load(slot_addr(obj, i)) };
            (v != 0 && self.in_collected_set(v)).then_some((i, v))
        })
    }

    /// Note in the GC trace that `root` starts, and for a handle-stack chunk which objects of
    /// the collected set its slots refer to (a card stripe notes those as it scans, see
    /// [`Scavenger::scan_dirty_cards`]).
    #[cold]
    fn trace_root(&self, trace: &mut TraceBuffer, root: &Root) {
        match *root {
            Root::ThreadRoots(slots) => {
                trace.begin_root(slots.ptr as usize, false);
                for slot in slots.slot_addrs() {
                    // SAFETY: a slot of a stopped mutator's handle stack, not yet processed.
                    let v = unsafe { raw::load(slot) };
                    if v != 0 && self.in_collected_set(v) {
                        trace.root_reaches(v);
                    }
                }
            }
            Root::OldToYoungRoots { lo, .. } => trace.begin_root(lo, true),
        }
    }

    /// Push the slots of `obj` that refer into the collected set.
    #[inline(always)]
    fn push_contents(&self, obj: usize, h: Header, q: &mut WorkQueue<Item>) {
        let (now, rest) = first_slots(h);
        if let Some(start) = rest {
            q.push(Item::ArrayChunk { array: obj, start });
        }
        self.push_slots(obj, 0, now, q);
    }

    #[inline(always)]
    fn push_slots(&self, obj: usize, from: usize, to: usize, q: &mut WorkQueue<Item>) {
        for i in from..to {
            let slot = slot_addr(obj, i);
            // SAFETY: `i` is below the object's reference count.
            let v = unsafe { raw::load(slot) };
            if v != 0 && self.in_collected_set(v) {
                q.push(Item::Slot(slot));
            }
        }
    }

    fn copy_to_survivor_space(
        &self,
        obj: usize,
        pm: &mut PromotionManager,
        q: &mut WorkQueue<Item>,
    ) -> usize {
        // SAFETY: `obj` is in the collected set, so it is an object start in eden/from-space.
        let h = unsafe { raw::header(obj) };
        if h.is_forwarded() {
            return h.forwardee();
        }
        let size = h.size_bytes();
        let mut target = None;
        if h.age() < self.params.tenuring_threshold {
            target = pm
                .young
                .allocate(size)
                .or_else(|| {
                    // From the to-space fragment of this worker's node (`fragmented`).
                    let to = self.mem.to_space();
                    pm.young.allocate_slow_on(
                        size,
                        self.params.young_plab_size,
                        to,
                        to.fragment_for_node(pm.node),
                        self.mem.reservation(),
                    )
                })
                .map(|a| (a, false));
        }
        if target.is_none() {
            target = pm
                .old
                .allocate(size)
                .or_else(|| {
                    pm.old.allocate_slow(
                        size,
                        self.params.old_plab_size,
                        &self.mem.old,
                        self.mem.reservation(),
                    )
                })
                .map(|a| (a, true));
        }
        let Some((new, to_old)) = target else {
            return self.promotion_failed(obj, h, pm, q);
        };
        let new_h = h.with_incremented_age();
        // SAFETY: `new` is freshly allocated, private to this worker, `size` bytes long; the
        // source body is not written during a scavenge (only headers are).
        unsafe {
            std::ptr::copy_nonoverlapping(
                (obj + WORD) as *const u8,
                (new + WORD) as *mut u8,
                size - WORD,
            );
            raw::set_header(new, new_h);
        }
        // AcqRel: Release publishes the copy to whoever follows the forwarding pointer; Acquire
        // (on failure) makes the winner's copy visible to us.
        // SAFETY: `obj` is a valid object start.
        let cell = unsafe { raw::header_cell(obj) };
        match cell.compare_exchange(
            h.raw(),
            Header::forwarding(new).raw(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                pm.copied += size;
                if let Some(map) = &self.node_map {
                    if map.node_of(new) != pm.node {
                        pm.copied_remote += size;
                    }
                }
                if to_old {
                    self.mem.old_starts.mark(new);
                    pm.promoted += size;
                } else {
                    pm.ages.add(new_h.age(), size);
                }
                if let Some(trace) = &mut pm.trace {
                    // Before the slots are pushed: until then no other worker can update them,
                    // so they still hold the referents' addresses from before the collection.
                    let fate = if to_old {
                        Fate::Promoted
                    } else {
                        Fate::Survivor
                    };
                    trace.object(
                        obj,
                        size,
                        fate,
                        TraceShape::of(new_h),
                        self.collected_referents(new, new_h),
                    );
                }
                if new_h.ref_count() > 0 {
                    match self.remote_node(new, q) {
                        Some(node) => q.send(node, Item::Object(new)),
                        None => {
                            self.note_scan(new, pm);
                            self.push_contents(new, new_h, q);
                        }
                    }
                }
                new
            }
            Err(current) => {
                // Another worker won the race: give our copy back and use theirs.
                let (plab, space) = if to_old {
                    (&mut pm.old, &self.mem.old)
                } else {
                    (&mut pm.young, self.mem.to_space())
                };
                if !plab.undo(new, size) {
                    space.undo_allocation(new, size);
                }
                Header(current).forwardee()
            }
        }
    }

    #[cold]
    fn promotion_failed(
        &self,
        obj: usize,
        h: Header,
        pm: &mut PromotionManager,
        q: &mut WorkQueue<Item>,
    ) -> usize {
        // SAFETY: `obj` is a valid object start.
        let cell = unsafe { raw::header_cell(obj) };
        match cell.compare_exchange(
            h.raw(),
            Header::forwarding(obj).raw(),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => {
                self.promotion_failed.store(true, Ordering::Relaxed);
                pm.failed.push((obj, h));
                if let Some(trace) = &mut pm.trace {
                    trace.object(
                        obj,
                        h.size_bytes(),
                        Fate::Stayed,
                        TraceShape::of(h),
                        self.collected_referents(obj, h),
                    );
                }
                if h.ref_count() > 0 {
                    self.note_scan(obj, pm);
                }
                // Not `push_contents`: chunk items re-read the array length from the header,
                // which now holds the self-forwarding pointer.
                self.push_slots(obj, 0, h.ref_count(), q);
                obj
            }
            Err(current) => Header(current).forwardee(),
        }
    }

    /// A slot of an old object found on a dirty card: pushed when its referent must be
    /// copied, not copied at once, as HotSpot's card scanning pushes (`claim_or_forward_depth`)
    /// — so that other workers can steal the copying. Copying at once left all of it to the
    /// worker that owned the stripe: in `queue-churn` the one old array referring to 100 000
    /// young 10 KiB objects sits on one stripe, and one worker copied up to 1 GB while the
    /// other waited in termination. Past [`CARD_SCAN_QUEUE_LIMIT`] queued items the worker
    /// processes half of them itself (the newest; thieves take the oldest) so the deque stays
    /// bounded whatever the number of dirty slots.
    #[inline(always)]
    fn push_old_slot(&self, slot: usize, pm: &mut PromotionManager, q: &mut WorkQueue<Item>) {
        // SAFETY: `slot` is a reference slot of a live old object, a valid word.
        let obj = unsafe { raw::load(slot) };
        if obj == 0 || !self.in_collected_set(obj) {
            return;
        }
        q.push(Item::Slot(slot));
        if q.len() > CARD_SCAN_QUEUE_LIMIT {
            while q.len() > CARD_SCAN_QUEUE_LIMIT / 2 {
                let Some(item) = q.pop() else { break };
                self.process(item, pm, q);
            }
        }
    }

    /// Push (or process) the slots at `[first, last)` of a live old object.
    #[inline(always)]
    fn scan_old_slots(
        &self,
        first: usize,
        last: usize,
        pm: &mut PromotionManager,
        q: &mut WorkQueue<Item>,
    ) {
        let mut slot = first;
        while slot < last {
            self.push_old_slot(slot, pm, q);
            slot += WORD;
        }
    }

    /// Scan the dirty cards of `[lo, hi)`: clean each dirty run, then push the reference
    /// slots inside it of every object overlapping it that refer into the collected set.
    fn scan_dirty_cards(
        &self,
        lo: usize,
        hi: usize,
        pm: &mut PromotionManager,
        q: &mut WorkQueue<Item>,
    ) {
        let cards = &self.mem.cards;
        let starts = &self.mem.old_starts;
        let end_card = cards.index(hi - 1) + 1;
        let mut card = cards.index(lo);
        while let Some(c0) = cards.find_dirty(card, end_card) {
            let c1 = cards.find_clean(c0, end_card);
            let (dlo, dhi) = (cards.card_start(c0), cards.card_start(c1).min(hi));
            pm.dirty_cards += c1 - c0;
            for c in c0..c1 {
                cards.clean_index(c);
            }
            let mut obj = starts
                .find_prev(dlo, self.mem.base())
                .or_else(|| starts.find_next(dlo, dhi));
            while let Some(o) = obj {
                if o >= dhi {
                    break;
                }
                // SAFETY: `o` has its start bit set, so it is an old object below the scan limit.
                let h = unsafe { raw::header(o) };
                let size = h.size_bytes();
                let n = h.ref_count();
                if n > 0 {
                    let first = slot_addr(o, 0).max(dlo);
                    let last = slot_addr(o, n).min(dhi);
                    if let Some(trace) = &mut pm.trace {
                        // Before the slots are pushed or sent, while they hold their referents.
                        trace.stripe_scans_object();
                        for slot in (first..last).step_by(WORD) {
                            // SAFETY: a reference slot of a live old object.
                            let v = unsafe { raw::load(slot) };
                            if v != 0 && self.in_collected_set(v) {
                                trace.root_reaches(v);
                            }
                        }
                    }
                    let index = |slot: usize| u32::try_from((slot - slot_addr(o, 0)) / WORD);
                    match (self.remote_node(o, q), index(first), index(last)) {
                        (Some(node), Ok(from), Ok(to)) => {
                            // Nothing to send when only the payload overlaps the dirty run.
                            if from < to {
                                q.send(node, Item::OldSlots { obj: o, from, to });
                            }
                        }
                        // Not remote, or (an array of over 2^32 slots, 32 GiB) beyond what
                        // a message holds: scanned here, and counted if remote.
                        _ => {
                            self.note_scan(o, pm);
                            self.scan_old_slots(first, last, pm, q);
                        }
                    }
                }
                let next = o + size;
                obj = if next < self.old_scan_limit && starts.is_marked(next) {
                    Some(next)
                } else {
                    starts.find_next(next, self.old_scan_limit)
                };
            }
            card = c1;
        }
    }
}

impl ParallelTask for Scavenger<'_> {
    type Item = Item;
    type Root = Root;
    type Local = PromotionManager;

    fn root_name(&self, root: &Root) -> &'static str {
        match root {
            Root::ThreadRoots(_) => "ThreadRoots",
            Root::OldToYoungRoots { .. } => "OldToYoungRoots",
        }
    }

    fn run_root(&self, root: &Root, pm: &mut PromotionManager, q: &mut WorkQueue<Item>) {
        if let Some(trace) = &mut pm.trace {
            self.trace_root(trace, root);
        }
        match *root {
            Root::ThreadRoots(slots) => {
                for slot in slots.slot_addrs() {
                    self.process_slot(slot, pm, q);
                }
            }
            Root::OldToYoungRoots { lo, hi } => self.scan_dirty_cards(lo, hi, pm, q),
        }
    }

    #[inline]
    fn process(&self, item: Item, pm: &mut PromotionManager, q: &mut WorkQueue<Item>) {
        match item {
            Item::Slot(slot) => self.process_slot(slot, pm, q),
            Item::ArrayChunk { array, start } => {
                if let Some(node) = self.remote_node(array, q) {
                    q.send(node, item);
                    return;
                }
                // SAFETY: `array` is a copied (or self-forwarded) reference array.
                let len = unsafe { raw::header(array) }.ref_count();
                let (end, next) = chunk_slots(start, len);
                if let Some(start) = next {
                    q.push(Item::ArrayChunk { array, start });
                }
                self.note_scan(array, pm);
                self.push_slots(array, start, end, q);
            }
            Item::Object(obj) => {
                if let Some(node) = self.remote_node(obj, q) {
                    q.send(node, item);
                    return;
                }
                // SAFETY: `obj` is a copy made by this scavenge (in to-space or old), whose
                // header is its own (copies are never forwarded).
                let h = unsafe { raw::header(obj) };
                self.note_scan(obj, pm);
                self.push_contents(obj, h, q);
            }
            Item::OldSlots { obj, from, to } => {
                if let Some(node) = self.remote_node(obj, q) {
                    q.send(node, item);
                    return;
                }
                self.note_scan(obj, pm);
                self.scan_old_slots(
                    slot_addr(obj, from as usize),
                    slot_addr(obj, to as usize),
                    pm,
                    q,
                );
            }
        }
    }
}

/// Run a scavenge. The world must be stopped; `roots` are all mutator root slots. `tracked`
/// objects in eden and from-space are updated to their copies, to themselves when promotion
/// failed for them, or to 0 when they died (see [`Tracked`]). So are the `weak` slots, once
/// the copying is complete (see [`super::weak`]); weak slots of old objects are left alone.
pub fn scavenge(
    ctx: &GcContext<'_>,
    roots: &[RootSlots],
    weak: &[WeakRange<'_>],
    params: ScavengeParams,
    tracked: Tracked<'_>,
) -> ScavengeOutcome {
    let t0 = Instant::now();
    let mem = ctx.mem;
    assert_eq!(
        mem.to_space().used(),
        0,
        "to-space must be empty before a scavenge"
    );
    // Start promotions on a fresh card so no card is shared between pre-existing old objects
    // (cleaned by card-scanning tasks) and promoted ones (dirtied by copying workers).
    let old_top = mem.old.top();
    let aligned = old_top.next_multiple_of(CARD_SIZE).min(mem.old.end());
    mem.old.set_top(aligned, mem.reservation());
    let old_scan_limit = aligned;

    let to = mem.to_space();
    let task = Scavenger {
        mem,
        young_start: mem.young_start(),
        heap_end: mem.end(),
        to_lo: to.bottom(),
        to_hi: to.end(),
        old_scan_limit,
        params,
        promotion_failed: AtomicBool::new(false),
        node_map: ctx.numa.map(|n| n.map),
    };

    // Root tasks carry the worker they are meant for: handle-stack chunks round-robin (task
    // affinity, 000 §4.1), card stripes by stripe number (static under `claim`).
    let workers_n = ctx.workers;
    let mut root_tasks: Vec<RootTask<Root>> = roots
        .iter()
        .flat_map(|r| r.chunks(ROOT_CHUNK))
        .enumerate()
        .map(|(i, slots)| RootTask {
            root: Root::ThreadRoots(slots),
            affinity: Affinity::Prefers(i % workers_n),
        })
        .collect();
    let old_bottom = mem.old.bottom();
    if old_scan_limit > old_bottom {
        let used = old_scan_limit - old_bottom;
        let stripe = (used / (4 * workers_n))
            .next_multiple_of(CARD_SIZE)
            .max(64 * 1024);
        let mut lo = old_bottom;
        let mut j = 0;
        while lo < old_scan_limit {
            let hi = (lo + stripe).min(old_scan_limit);
            root_tasks.push(RootTask {
                root: Root::OldToYoungRoots { lo, hi },
                affinity: Affinity::Stripe(j % workers_n),
            });
            lo = hi;
            j += 1;
        }
    }
    let trace_roots = params.trace.then(|| scavenge_root_shapes(&root_tasks));
    let mut phases = PhaseTimes {
        init_ms: ms_since(t0),
        ..Default::default()
    };

    let t1 = Instant::now();
    let locals = (0..ctx.workers)
        .map(|w| PromotionManager {
            trace: params.trace.then(Box::default),
            ..PromotionManager::on_node(ctx.numa.map_or(0, |n| n.worker_node(w)))
        })
        .collect();
    let segregation = ctx.numa.filter(|n| n.segregated).map(|n| Segregation {
        nodes: n.map.nodes(),
        worker_nodes: n.worker_nodes.clone(),
    });
    let (mut locals, mut workers) = match &segregation {
        Some(seg) => run_phase_segregated(ctx.pool, &ctx.policy, &task, root_tasks, locals, seg),
        None => run_phase(ctx.pool, &ctx.policy, &task, root_tasks, locals),
    };
    phases.parallel_ms = ms_since(t1);

    let t2 = Instant::now();
    let mut ages = AgeTable::default();
    let (mut copied, mut promoted, mut dirty_cards) = (0, 0, 0);
    let failed = task.promotion_failed.load(Ordering::Relaxed);
    // Follow tracked objects while forwarding headers still tell live from dead: copied objects
    // forward to their copy, self-forwarded ones (promotion failure) to themselves, and nothing
    // else in the collected set was reached. Must run before self-forwarded headers are restored.
    // Weak slots likewise, and for the same reason before the headers are restored: a weak
    // slot to a copied object follows it, one to a self-forwarded object keeps it, and one to
    // an object nothing reached is cleared. Old referents are not the scavenge's to judge.
    let weak_fate = |v: usize| {
        if !task.in_collected_set(v) {
            return Some(v);
        }
        // SAFETY: a weak slot holds an object start; in the collected set its header is its
        // own or a forwarding pointer of this scavenge (as for tracked objects below).
        let h = unsafe { raw::header(v) };
        h.is_forwarded().then(|| h.forwardee())
    };
    // SAFETY: weak ranges are slots of stopped mutators' tables, disjoint, each processed
    // once; their non-null slots hold object starts, which `weak_fate` accepts.
    unsafe { process_weak(ctx, weak, weak_fate) };
    for t in tracked.iter_mut() {
        if *t != 0 && task.in_collected_set(*t) {
            // SAFETY: tracked entries are object starts; eden and from-space memory stays
            // committed and a scavenge writes nothing there but headers, so the header is this
            // object's own or a forwarding pointer installed by this scavenge.
            let h = unsafe { raw::header(*t) };
            *t = if h.is_forwarded() { h.forwardee() } else { 0 };
        }
    }
    for (pm, stats) in locals.iter().zip(workers.iter_mut()) {
        stats.bytes_copied = pm.copied as u64;
        if task.node_map.is_some() {
            stats.numa = WorkerNumaStats {
                node: pm.node,
                bytes_copied_local: (pm.copied - pm.copied_remote) as u64,
                bytes_copied_remote: pm.copied_remote as u64,
                objects_scanned_local: pm.scanned - pm.scanned_remote,
                objects_scanned_remote: pm.scanned_remote,
            };
        }
        ages.merge(&pm.ages);
        copied += pm.copied;
        promoted += pm.promoted;
        dirty_cards += pm.dirty_cards;
        for &(obj, h) in &pm.failed {
            // SAFETY: the object was self-forwarded by this scavenge; restoring its header
            // makes it an ordinary object again for the full collection that follows.
            unsafe { raw::set_header(obj, h) };
        }
    }
    if !failed {
        mem.eden.reset(mem.reservation());
        mem.from_space().reset(mem.reservation());
        mem.swap_survivors();
    }
    let next = ages.tenuring_threshold(
        mem.to_space().capacity(),
        params.target_survivor_ratio,
        params.max_tenuring_threshold,
    );
    // The workers' buffers are only gathered here; numbering them is left to the VM thread
    // after the world has been resumed (`RawTrace::merge`).
    let trace = trace_roots.map(|roots| {
        let buffers = locals.iter_mut().map(|pm| pm.trace.take());
        RawTrace::gather(TraceKind::Young, roots, buffers, failed)
    });
    phases.final_ms = ms_since(t2);
    ScavengeOutcome {
        promotion_failed: failed,
        bytes_copied: copied,
        bytes_promoted: promoted,
        dirty_cards,
        next_tenuring_threshold: next,
        workers,
        phases,
        trace,
    }
}

/// The root tasks as the GC trace describes them, in creation order.
fn scavenge_root_shapes(root_tasks: &[RootTask<Root>]) -> Vec<RootShape> {
    root_shapes(root_tasks.iter().map(|task| match task.root {
        Root::ThreadRoots(slots) => (
            slots.ptr as usize,
            TraceRootKind::HandleStack {
                slots: slots.len as u64,
            },
            task.affinity,
        ),
        Root::OldToYoungRoots { lo, hi } => (
            lo,
            TraceRootKind::CardStripe {
                bytes: (hi - lo) as u64,
                scanned_objects: 0,
            },
            task.affinity,
        ),
    }))
}
