//! A mutator: one attached thread's allocation buffer, handle stack and safepoint state.
//!
//! Programs never hold raw object addresses. An object is reached through a [`Handle`] (an
//! index into the mutator's handle stack, which the collector updates when objects move) or,
//! between two safepoints, through a [`Gc`] (a direct reference borrowed from the mutator).
//! Everything that cannot reach a safepoint takes `&self`: loads, stores, payload reads,
//! rooting a `Gc` in a new handle. Everything that can (allocation, scopes, polls, `blocking`,
//! `collect`) and every payload write takes `&mut self`, so the borrow checker guarantees that
//! no collection happens while a `Gc` or a borrowed payload view is alive.
//!
//! The fast paths are inlined into the caller: allocation is a bump of the thread-local
//! allocation buffer (TLAB, zeroed once when it is handed out) and a header store; a store is
//! the slot write plus one card byte; a load through a `Gc` is the header (bounds) and the
//! slot. Everything else (TLAB refill, lifespan sampling, collections, panics) is out of line.

use std::cell::{RefCell, UnsafeCell};
use std::marker::PhantomData;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Instant;

use super::gc_ref::{checked_payload_field, slot_out_of_bounds, Gc};
use super::heap::{GcError, Heap, HeapInner};
use super::safepoint::Request;
use crate::collection::verify::VerifyReport;
use crate::memory::card_table::CardBarrier;
use crate::object::raw::{self, slot_addr};
use crate::object::{byte_array_size, ref_array_size, Header, ObjectKind, ObjectType, WORD};
use crate::telemetry::lifespan::LifespanProfiler;
use crate::telemetry::CollectionKind;

/// `read_T` / `write_T` payload accessors for each plain number type `T` listed.
macro_rules! payload_scalars {
    ($($t:ty: $read:ident, $write:ident;)+) => {$(
        #[doc = concat!("Read a little-endian `", stringify!($t), "` at `offset` in the payload.")]
        #[inline(always)]
        #[track_caller]
        pub fn $read(&self, obj: Handle, offset: usize) -> $t {
            self.read_scalar(obj, offset)
        }

        #[doc = concat!("Write a `", stringify!($t), "` at `offset` in the payload.")]
        #[inline(always)]
        #[track_caller]
        pub fn $write(&mut self, obj: Handle, offset: usize, v: $t) {
            self.write_scalar(obj, offset, v)
        }
    )+};
}

/// A plain number stored in a payload: every bit pattern of its size is a valid value, so it
/// may be read from any payload bytes.
trait Scalar: Copy {
    /// The value of the little-endian bytes `raw` holds (payloads are little-endian on every
    /// target, so a payload's bytes mean the same everywhere).
    fn from_le(raw: Self) -> Self;
}

impl Scalar for u32 {
    #[inline(always)]
    fn from_le(raw: Self) -> Self {
        u32::from_le(raw)
    }
}

impl Scalar for u64 {
    #[inline(always)]
    fn from_le(raw: Self) -> Self {
        u64::from_le(raw)
    }
}

pub use super::handles::Handle;
use super::handles::HandleStack;

/// The part of a mutator the collector reaches: its handle stack as it was when the mutator
/// last stopped, and the thread it belongs to (for the safepoint protocol's diagnostics).
pub(crate) struct MutatorShared {
    pub id: u32,
    /// The attached thread.
    pub thread: std::thread::ThreadId,
    /// The attached thread's name, if it has one.
    thread_name: Option<String>,
    /// The attached thread's kernel thread id.
    pub tid: i32,
    /// The handle stack as the mutator published it when it last stopped (the stack itself
    /// is the mutator's own, so the fast paths reach it without a pointer chase).
    published: UnsafeCell<crate::collection::RootSlots>,
    /// Global, weak and cleaner slots (see `refs.rs`), behind their own mutex.
    pub(super) refs: super::refs::RefShared,
}

// SAFETY: the handle stack is touched by its own thread while it runs and by the collector only
// while that thread is stopped; the safepoint mutex orders the two.
unsafe impl Sync for MutatorShared {}
// SAFETY: as above.
unsafe impl Send for MutatorShared {}

impl MutatorShared {
    /// The shared half of mutator `id`, attached on the calling thread (kernel id `tid`).
    pub fn new(id: u32, tid: i32) -> Self {
        let thread = std::thread::current();
        Self {
            id,
            thread: thread.id(),
            thread_name: thread.name().map(str::to_string),
            tid,
            published: UnsafeCell::new(crate::collection::RootSlots {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                len: 0,
            }),
            refs: Default::default(),
        }
    }

    /// How diagnostics name the mutator: its thread's name (or that it has none), its id and
    /// its thread's kernel id, e.g. `thread 'worker-1' (mutator 3, tid 4242)`.
    pub fn describe(&self) -> String {
        format!(
            "thread '{}' (mutator {}, tid {})",
            self.thread_name.as_deref().unwrap_or("<unnamed>"),
            self.id,
            self.tid
        )
    }

    /// The handle stack as a root range.
    ///
    /// # Safety
    /// The owning mutator must be stopped for as long as the range is used.
    pub unsafe fn root_slots(&self) -> crate::collection::RootSlots {
        // SAFETY: the owner published the range before it stopped (`Mutator::before_stop`)
        // and changes neither the range nor the stack until it runs again.
        unsafe { *self.published.get() }
    }

    /// Publish the owner's handle stack for the collector.
    ///
    /// # Safety
    /// Called by the owning thread while it runs, before it stops.
    unsafe fn publish(&self, roots: crate::collection::RootSlots) {
        // SAFETY: the owner runs, so the collector does not read the range now; the stop
        // that follows orders this write before the collector's read.
        unsafe { *self.published.get() = roots };
    }
}

/// A mutator's position in its allocation stream relative to the next lifespan sample point
/// (see `telemetry/lifespan.rs`).
struct Sampler<'h> {
    profiler: &'h LifespanProfiler,
    /// Bytes of allocation from `synced_top` to the next sample point.
    left: usize,
    /// The TLAB top `left` was last brought up to date at (0 without a TLAB).
    synced_top: usize,
    rng: u64,
}

/// A thread attached to a [`Heap`]. All object access goes through it.
///
/// Dropping the mutator detaches the thread; its handles stop being roots.
pub struct Mutator<'h> {
    heap: &'h HeapInner,
    shared: Arc<MutatorShared>,
    id: u32,
    /// The handle stack: the address each handle holds (0 for null), and the epochs that tell
    /// a live handle from a stale or foreign one. The collector reads and updates the slots
    /// only while this thread is stopped, through the range published then.
    handles: UnsafeCell<HandleStack>,
    /// The heap's card table geometry, kept here so a store checks its addresses and dirties a
    /// card without a pointer chase.
    barrier: CardBarrier,
    /// Objects this large or larger go straight to the old generation (the heap's setting).
    large_object_threshold: usize,
    tlab_top: usize,
    /// Where the allocation fast path stops: `tlab_real_end`, or the next lifespan sample point
    /// below it.
    tlab_end: usize,
    tlab_start: usize,
    /// The TLAB's real end (0 without a TLAB).
    tlab_real_end: usize,
    /// Lifespan sampling state, when the heap profiles lifespans.
    sampler: Option<Sampler<'h>>,
    /// The resources attached to objects (`refs.rs`): they never leave this thread.
    refs_local: super::refs::RefsLocal,
    /// Not `Send`: the safepoint protocol counts the attaching thread.
    _not_send: PhantomData<*const ()>,
}

impl<'h> Mutator<'h> {
    #[track_caller]
    pub(crate) fn new(heap: &'h Heap) -> Self {
        let inner = heap.inner();
        // Process-wide, so diagnostics name every mutator apart (handles are told apart by
        // their serials).
        static NEXT_ID: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let tid = crate::os::sched::current_tid();
        let shared = Arc::new(MutatorShared::new(id, tid));
        inner.safepoint.attach(shared.clone());
        ThreadMutators::note_attached(heap.inner_weak(), &shared);
        inner.mutator_sched.on_attach(tid);
        inner.gc_affinity.note_mutator(tid, true);
        let handles = HandleStack::new();
        let sampler = inner.lifespans.as_ref().map(|profiler| {
            let mut rng = u64::from(id);
            let left = profiler.next_gap(&mut rng);
            Sampler {
                profiler,
                left,
                synced_top: 0,
                rng,
            }
        });
        Self {
            heap: inner,
            shared,
            id,
            handles: UnsafeCell::new(handles),
            barrier: inner.mem.cards.barrier(),
            large_object_threshold: inner.config.large_object_threshold,
            tlab_top: 0,
            tlab_end: 0,
            tlab_start: 0,
            tlab_real_end: 0,
            sampler,
            refs_local: Default::default(),
            _not_send: PhantomData,
        }
    }

    #[inline(always)]
    fn handles(&self) -> &HandleStack {
        // SAFETY: this thread is running, so the collector does not touch the stack now, and
        // no `&mut` to it outlives a call (see `push_handle`).
        unsafe { &*self.handles.get() }
    }

    /// Release the handles from `mark` up (a scope ends): they become stale for ever (see
    /// `handles.rs`).
    #[inline(always)]
    pub(crate) fn release_handles(&mut self, mark: usize) {
        self.handles.get_mut().release(mark);
    }

    /// Push a new handle. Takes `&self` so that a [`Gc`] (a shared borrow) can be rooted: the
    /// stack is only ever borrowed inside one method call at a time, never across one, and
    /// the mutator is neither `Send` nor `Sync`, so no other reference to it exists now.
    #[inline(always)]
    pub(crate) fn push_handle(&self, addr: usize) -> Handle {
        // SAFETY: this thread is running (the collector does not touch the stack), and no
        // reference into the stack is alive: every method's borrow of it ends before it
        // returns, and none calls another while holding one.
        unsafe { (*self.handles.get()).push(addr) }
    }

    /// Overwrite what handle `h` holds (checked as in [`Self::addr`]); `&self` for the same
    /// reason as [`Self::push_handle`].
    #[inline(always)]
    #[track_caller]
    pub(crate) fn write_handle(&self, h: Handle, addr: usize) {
        let index = self.index(h);
        // SAFETY: as in `push_handle`.
        unsafe { (*self.handles.get()).set(index, addr) };
    }

    /// The slot of a live handle of this mutator; panics on a stale or foreign one.
    #[inline(always)]
    #[track_caller]
    fn index(&self, h: Handle) -> usize {
        match self.handles().index(h) {
            Some(index) => index,
            None => self.invalid_handle(h),
        }
    }

    /// Check that `g` is an object of this mutator's heap and return its address. A `Gc` of
    /// another heap stored here would point the collector outside the heap it collects.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn own(&self, g: Gc<'_>) -> usize {
        let a = g.addr();
        if !self.barrier.covers(a) {
            foreign_reference(a);
        }
        a
    }

    /// [`Self::own`] of a reference that may be absent (0 for none). A `match`, not a closure,
    /// so that a panic is reported at the caller (closures do not pass `#[track_caller]` on).
    #[inline(always)]
    #[track_caller]
    fn own_or_null(&self, g: Option<Gc<'_>>) -> usize {
        match g {
            Some(g) => self.own(g),
            None => 0,
        }
    }

    /// [`Self::addr`] of a handle that may be absent (0 for none); a `match` for the same
    /// reason as [`Self::own_or_null`].
    #[inline(always)]
    #[track_caller]
    fn addr_or_null(&self, h: Option<Handle>) -> usize {
        match h {
            Some(h) => self.addr(h),
            None => 0,
        }
    }

    /// The address a handle holds (0 for null).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn addr(&self, h: Handle) -> usize {
        let index = self.index(h);
        self.handles().get(index)
    }

    /// The panic of a handle that failed the check in [`Self::index`]: stale if this mutator
    /// made it, else of another mutator.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn invalid_handle(&self, h: Handle) -> ! {
        if self.handles().made_here(h) {
            stale_handle()
        } else {
            foreign_handle()
        }
    }

    /// The object a handle refers to; panics on null.
    #[inline(always)]
    #[track_caller]
    fn obj(&self, h: Handle) -> (usize, Header) {
        let a = self.addr(h);
        if a == 0 {
            null_handle();
        }
        // SAFETY: handles hold valid object addresses (or 0, excluded above) while running.
        (a, unsafe { raw::header(a) })
    }

    /// The object a handle refers to, as a [`Gc`] valid until the mutator is next borrowed
    /// `&mut` (`None` if the handle holds null). Loads and payload reads through it are plain
    /// memory reads; see [`Gc`].
    #[inline(always)]
    #[track_caller]
    pub fn view(&self, h: Handle) -> Option<Gc<'_>> {
        // SAFETY: a handle holds 0 or a live object of this heap, and `&self` keeps the
        // mutator from reaching a safepoint while the `Gc` lives.
        unsafe { Gc::from_word(self.addr(h)) }
    }

    /// A new handle holding `g`, so the object survives the next safepoint (and its `Gc`
    /// does not). Panics if `g` belongs to another heap.
    #[inline]
    #[track_caller]
    pub fn root(&self, g: Gc<'_>) -> Handle {
        let a = self.own(g);
        self.push_handle(a)
    }

    /// Make the existing handle `dst` hold `g` (or null), without a new handle.
    #[inline]
    #[track_caller]
    pub fn set_root(&self, dst: Handle, g: Option<Gc<'_>>) {
        let a = self.own_or_null(g);
        self.write_handle(dst, a);
    }

    /// Store `value` into reference slot `slot` of `obj`, with the write barrier: the slot
    /// write and one card byte. Panics if the slot is out of bounds or either object belongs
    /// to another heap.
    #[inline(always)]
    #[track_caller]
    pub fn store(&self, obj: Gc<'_>, slot: usize, value: Option<Gc<'_>>) {
        let o = self.own(obj);
        let v = self.own_or_null(value);
        // SAFETY: `o` is a live object of this heap (a `Gc` checked above).
        let refs = unsafe { raw::header(o) }.ref_count();
        if slot >= refs {
            slot_out_of_bounds(slot, refs);
        }
        // SAFETY: the slot is inside `o`; no Rust reference covers reference slots.
        unsafe { self.store_slot(o, slot, v) };
    }

    /// Write `v` into slot `slot` of `o` and dirty its card (cards of young objects are never
    /// scanned, so the mark is unconditional: no branch on the generation).
    ///
    /// # Safety
    /// `o` is a live object of this heap and `slot` one of its reference slots; `v` is 0 or a
    /// live object of this heap.
    #[inline(always)]
    pub(crate) unsafe fn store_slot(&self, o: usize, slot: usize, v: usize) {
        let addr = slot_addr(o, slot);
        // SAFETY: the caller's contract: the slot is inside a live object of this heap.
        unsafe {
            raw::store(addr, v);
            self.barrier.dirty(addr);
        }
    }

    // ---- allocation ----

    /// Allocate a fixed object of type `ty` (all slots null, payload zeroed).
    #[inline(always)]
    pub fn alloc(&mut self, ty: ObjectType) -> Result<Handle, GcError> {
        let h = ty.header();
        let a = self.allocate(h, h.size_bytes())?;
        Ok(self.push_handle(a))
    }

    /// Allocate a fixed object of type `ty` whose first `refs.len()` reference slots hold what
    /// the handles hold (the rest null, payload zeroed): a constructor. The new object is
    /// young unless it is large, so its slots are written without a card mark when it came
    /// from the TLAB. Panics if `refs` has more entries than `ty` has slots, or on a handle
    /// of another mutator.
    #[inline(always)]
    #[track_caller]
    pub fn alloc_with(
        &mut self,
        ty: ObjectType,
        refs: &[Option<Handle>],
    ) -> Result<Handle, GcError> {
        let a = self.alloc_with_addr(ty, refs)?;
        Ok(self.push_handle(a))
    }

    /// [`Self::alloc_with`] without the new handle: the new object's address, for a
    /// constructor that writes more before it roots the object (nothing may reach a
    /// safepoint in between).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn alloc_with_addr(
        &mut self,
        ty: ObjectType,
        refs: &[Option<Handle>],
    ) -> Result<usize, GcError> {
        if refs.len() > ty.refs() {
            slot_out_of_bounds(refs.len() - 1, ty.refs());
        }
        let h = ty.header();
        let size = h.size_bytes();
        if let Some(a) = self.bump(size) {
            // Nothing collected between the bump and here, so the handles hold what they held.
            // A TLAB object is young, and young objects' cards are never scanned: the slots
            // are plain stores. (A handle check that panics below leaves an object no handle
            // refers to, which nothing reads.)
            // SAFETY: [a, a + size) is this thread's, and `refs.len()` is at most the type's
            // slot count (checked above); the values come from handles of this mutator.
            unsafe {
                raw::set_header(a, h);
                for (slot, r) in refs.iter().enumerate() {
                    raw::store(slot_addr(a, slot), self.addr_or_null(*r));
                }
                zero_from(slot_addr(a, refs.len()), a + size);
            }
            return Ok(a);
        }
        self.alloc_with_slow(h, size, refs)
    }

    /// [`Self::alloc_with_addr`] outside the TLAB's fast path.
    #[cold]
    #[inline(never)]
    #[track_caller]
    fn alloc_with_slow(
        &mut self,
        h: Header,
        size: usize,
        refs: &[Option<Handle>],
    ) -> Result<usize, GcError> {
        let a = self.allocate_slow(h, size)?;
        // A TLAB object is young, and young objects' cards are never scanned.
        let from_tlab = a >= self.tlab_start && a < self.tlab_top;
        // Read the handles only now: the allocation may have collected and moved their objects.
        for (slot, r) in refs.iter().enumerate() {
            let v = self.addr_or_null(*r);
            let addr = slot_addr(a, slot);
            // SAFETY: `a` is the new object, `slot` below its slot count (checked above), and
            // `v` comes from a handle of this mutator (0 or a live object of this heap).
            unsafe {
                if from_tlab {
                    raw::store(addr, v);
                } else {
                    self.store_slot(a, slot, v);
                }
            }
        }
        Ok(a)
    }

    /// Allocate a reference array of `len` null slots.
    #[inline]
    pub fn alloc_ref_array(&mut self, len: usize) -> Result<Handle, GcError> {
        let size = ref_array_size(len)?;
        let a = self.allocate(Header::ref_array(len), size)?;
        Ok(self.push_handle(a))
    }

    /// Allocate a zeroed byte array of `len` bytes.
    #[inline]
    pub fn alloc_byte_array(&mut self, len: usize) -> Result<Handle, GcError> {
        let size = byte_array_size(len)?;
        let a = self.allocate(Header::byte_array(len), size)?;
        Ok(self.push_handle(a))
    }

    /// The allocation fast path: a bump of the TLAB, a header store and the body's zeroing.
    ///
    /// TLABs are not zeroed when they are handed out: zeroing each object as it is made
    /// writes its memory once, while the cache line is being written anyway, where zeroing a
    /// whole TLAB first wrote all of it twice. For a constant size (a fixed object type) the
    /// zeroing is a few stores, and the compiler drops those a constructor overwrites at once
    /// ([`Self::alloc_with`], the typed constructor). The slow paths return zeroed bodies too.
    #[inline(always)]
    fn allocate(&mut self, h: Header, size: usize) -> Result<usize, GcError> {
        if let Some(top) = self.bump(size) {
            // SAFETY: [top, top+size) is inside this thread's TLAB, which no other thread
            // touches; a size is at least one word (the header).
            unsafe {
                raw::set_header(top, h);
                zero_from(top + WORD, top + size);
            }
            return Ok(top);
        }
        self.allocate_slow(h, size)
    }

    /// The TLAB bump: `size` bytes at the TLAB's top, unwritten, if the fast path may
    /// serve them (not a large object, room before the fast path's end).
    #[inline(always)]
    fn bump(&mut self, size: usize) -> Option<usize> {
        let top = self.tlab_top;
        if size < self.large_object_threshold && top + size <= self.tlab_end {
            self.tlab_top = top + size;
            prefetch_for_allocation(top + size);
            return Some(top);
        }
        None
    }

    #[cold]
    #[inline(never)]
    fn allocate_slow(&mut self, h: Header, size: usize) -> Result<usize, GcError> {
        if self.sampler.is_some() {
            return self.allocate_sampling(h, size);
        }
        self.allocate_outside_fast_path(h, size)
    }

    /// The slow path with lifespan sampling: the fast path stops at the next sample point, so
    /// the object it stopped at covers the point (or lies beyond the TLAB).
    fn allocate_sampling(&mut self, h: Header, size: usize) -> Result<usize, GcError> {
        self.sync_sampler();
        let top = self.tlab_top;
        if size < self.large_object_threshold && top + size <= self.tlab_real_end {
            // The fast path stopped at a sample point inside the TLAB; allocate as it would.
            self.tlab_top = top + size;
            // SAFETY: [top, top+size) is inside this thread's TLAB.
            unsafe {
                raw::set_header(top, h);
                zero_from(top + WORD, top + size);
            }
            self.account_sampling(top, size);
            return Ok(top);
        }
        let a = self.allocate_outside_fast_path(h, size)?;
        self.account_sampling(a, size);
        Ok(a)
    }

    /// Bring the sampler up to date with what the fast path allocated since the last sync.
    fn sync_sampler(&mut self) {
        if let Some(s) = self.sampler.as_mut() {
            s.left = s
                .left
                .saturating_sub(self.tlab_top.saturating_sub(s.synced_top));
            s.synced_top = self.tlab_top;
        }
    }

    /// Advance the sampler over the object of `size` bytes just allocated at `a` (the stream up
    /// to it is synced), sample it if it covers the sample point, and set the fast path's stop.
    fn account_sampling(&mut self, a: usize, size: usize) {
        let in_tlab = self.tlab_real_end != 0 && a >= self.tlab_start && a < self.tlab_top;
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        if size > s.left {
            // Birth: the heap's allocation clock plus this thread's unretired TLAB bytes below
            // the object. A direct allocation was counted already (its own size is not).
            let clock = self.heap.allocated.load(Ordering::Relaxed);
            let birth = if in_tlab {
                clock + (a - self.tlab_start) as u64
            } else {
                clock.saturating_sub(size as u64) + (self.tlab_top - self.tlab_start) as u64
            };
            s.profiler.record(a, size, birth);
            // Memoryless: the next gap starts after this object.
            s.left = s.profiler.next_gap(&mut s.rng);
        } else {
            s.left -= size;
        }
        if in_tlab {
            s.synced_top = self.tlab_top;
        }
        self.tlab_end = if self.tlab_real_end == 0 {
            0
        } else {
            self.tlab_real_end.min(s.synced_top + s.left)
        };
    }

    /// The slow path proper: a safepoint poll, then a direct allocation or a TLAB refill, then a
    /// collection if needed.
    fn allocate_outside_fast_path(&mut self, h: Header, size: usize) -> Result<usize, GcError> {
        self.safepoint_poll();
        let old = size >= self.large_object_threshold;
        if let Some(a) = self.try_allocate_outside_tlab(size, old) {
            // SAFETY: freshly allocated and zeroed memory owned by this thread.
            unsafe { raw::set_header(a, h) };
            return Ok(a);
        }
        self.heap.refuse_larger_than_heap(size)?;
        // Collect and allocate inside one safepoint: the VM thread escalates to a full
        // collection before it gives up, and nobody can take the space it frees first.
        // The allocation failed here: from now until the memory is back, this thread stalls.
        let failed_at = Instant::now();
        self.before_stop();
        let node = self.heap.numa.allocation_node();
        let result = self
            .heap
            .safepoint
            .request_allocation(self.id, size, old, node);
        self.after_stop();
        self.heap.note_alloc_stall(failed_at.elapsed());
        let a = result.map_err(|e| e.with_live_handles(self.handle_count()))?;
        // SAFETY: the VM thread allocated and zeroed [a, a+size) for this request only.
        unsafe { raw::set_header(a, h) };
        // The object is whole, so a resource's drop that panics leaves nothing half done.
        self.run_cleaners();
        Ok(a)
    }

    fn try_allocate_outside_tlab(&mut self, size: usize, old: bool) -> Option<usize> {
        let heap = self.heap;
        // `fragmented`: the node this thread runs on now (one getcpu per slow-path
        // allocation; 0 and no system call under the other layouts).
        let node = heap.numa.allocation_node();
        if old {
            return heap.allocate_shared(size, true, false, node);
        }
        let tlab_size = heap.tlab_size();
        let remaining = self.tlab_real_end - self.tlab_top;
        // Keeping the TLAB wastes less than refilling it: allocate this object on its own.
        if remaining > tlab_size / 64 || size > tlab_size / 2 {
            return heap.allocate_shared(size, false, false, node);
        }
        self.retire_tlab();
        let eden = &heap.mem.eden;
        let fragment = eden.fragment_for_node(node);
        let Some(start) = eden.par_allocate_on(fragment, tlab_size, heap.mem.reservation()) else {
            // Eden cannot hold a whole TLAB any more, but it may still hold this object.
            return heap.allocate_shared(size, false, false, node);
        };
        // SAFETY: the new TLAB is ours; the object at its start is zeroed here (the rest of
        // the TLAB is zeroed object by object as the fast path hands it out).
        unsafe { std::ptr::write_bytes(start as *mut u8, 0, size) };
        heap.numa.count_allocation(start, tlab_size);
        self.tlab_start = start;
        self.tlab_top = start + size;
        self.tlab_end = start + tlab_size;
        self.tlab_real_end = self.tlab_end;
        Some(start)
    }

    fn retire_tlab(&mut self) {
        self.sync_sampler();
        if self.tlab_real_end != 0 {
            self.heap.count_allocation(self.tlab_top - self.tlab_start);
        }
        self.tlab_start = 0;
        self.tlab_top = 0;
        self.tlab_end = 0;
        self.tlab_real_end = 0;
        if let Some(s) = self.sampler.as_mut() {
            s.synced_top = 0;
        }
    }

    /// Called before every stop: the TLAB will be gone afterwards, so its bytes are counted now
    /// and the heap's allocation count is exact while the world is stopped (the lifespan
    /// profiler's clock).
    fn before_stop(&mut self) {
        self.retire_tlab();
        let hs = self.handles.get_mut().slots_mut();
        let roots = crate::collection::RootSlots {
            ptr: hs.as_mut_ptr(),
            len: hs.len(),
        };
        // SAFETY: this thread runs and is about to stop.
        unsafe { self.shared.publish(roots) };
    }

    /// Called after every stop: the collector reset eden, so the TLAB is gone.
    fn after_stop(&mut self) {
        self.retire_tlab();
    }

    // ---- references ----

    /// Load reference slot `slot` of `obj` into a new handle (`None` for null).
    #[inline(always)]
    #[track_caller]
    pub fn get_ref(&self, obj: Handle, slot: usize) -> Option<Handle> {
        let v = self.load_slot(obj, slot);
        (v != 0).then(|| self.push_handle(v))
    }

    /// Load reference slot `slot` of `obj` into the existing handle `dst` (no new handle).
    /// Returns `false` (and `dst` holds null) if the slot was null.
    #[inline(always)]
    #[track_caller]
    pub fn load_ref_into(&self, dst: Handle, obj: Handle, slot: usize) -> bool {
        let v = self.load_slot(obj, slot);
        self.write_handle(dst, v);
        v != 0
    }

    #[inline(always)]
    #[track_caller]
    fn load_slot(&self, obj: Handle, slot: usize) -> usize {
        let (o, h) = self.obj(obj);
        if slot >= h.ref_count() {
            slot_out_of_bounds(slot, h.ref_count());
        }
        // SAFETY: the slot index is within the object's reference slots.
        unsafe { raw::load(slot_addr(o, slot)) }
    }

    /// Store a reference into slot `slot` of `obj` (with the write barrier). Takes `&mut self`
    /// for the handle API's history; [`Self::store`] does the same through `Gc`s with `&self`.
    #[inline(always)]
    #[track_caller]
    pub fn set_ref(&mut self, obj: Handle, slot: usize, value: Option<Handle>) {
        let v = self.addr_or_null(value);
        let (o, h) = self.obj(obj);
        if slot >= h.ref_count() {
            slot_out_of_bounds(slot, h.ref_count());
        }
        // SAFETY: `o` is a live object (a handle's), the slot is in bounds (checked above) and
        // `v` is a handle's value (0 or a live object of this heap).
        unsafe { self.store_slot(o, slot, v) };
    }

    /// Number of reference slots of `obj`.
    #[track_caller]
    pub fn ref_count(&self, obj: Handle) -> usize {
        self.obj(obj).1.ref_count()
    }

    // ---- payload ----

    /// The payload bytes of `obj` (fixed object payload, or a byte array's elements).
    #[track_caller]
    pub fn payload(&self, obj: Handle) -> &[u8] {
        let (o, h) = self.obj(obj);
        // SAFETY: the payload lies inside the object; no collection can run while `&self` is
        // borrowed because reaching a safepoint needs `&mut self`.
        unsafe {
            std::slice::from_raw_parts((o + h.payload_offset()) as *const u8, h.payload_bytes())
        }
    }

    /// The payload bytes of `obj`, writable.
    #[track_caller]
    pub fn payload_mut(&mut self, obj: Handle) -> &mut [u8] {
        let (o, h) = self.obj(obj);
        // SAFETY: as in `payload`; `&mut self` makes the view unique.
        unsafe {
            std::slice::from_raw_parts_mut((o + h.payload_offset()) as *mut u8, h.payload_bytes())
        }
    }

    #[inline(always)]
    #[track_caller]
    fn payload_range(&self, obj: Handle, offset: usize, len: usize) -> usize {
        let (o, h) = self.obj(obj);
        checked_payload_field(o, h, offset, len)
    }

    /// Read a `T` at `offset` in the payload, bounds-checked.
    #[inline(always)]
    #[track_caller]
    fn read_scalar<T: Scalar>(&self, obj: Handle, offset: usize) -> T {
        let a = self.payload_range(obj, offset, std::mem::size_of::<T>());
        // SAFETY: bounds checked above; every bit pattern is a valid `Scalar`.
        T::from_le(unsafe { (a as *const T).read_unaligned() })
    }

    /// Write a `T` at `offset` in the payload, bounds-checked.
    #[inline(always)]
    #[track_caller]
    fn write_scalar<T: Scalar>(&mut self, obj: Handle, offset: usize, v: T) {
        let a = self.payload_range(obj, offset, std::mem::size_of::<T>());
        // SAFETY: bounds checked above; `&mut self` keeps collections away meanwhile.
        // (`from_le` is its own inverse: a byte swap on big-endian targets, nothing here.)
        unsafe { (a as *mut T).write_unaligned(T::from_le(v)) }
    }

    payload_scalars! {
        u64: read_u64, write_u64;
        u32: read_u32, write_u32;
    }

    /// Read an `f64` at `offset` in the payload.
    #[inline]
    #[track_caller]
    pub fn read_f64(&self, obj: Handle, offset: usize) -> f64 {
        f64::from_bits(self.read_u64(obj, offset))
    }

    /// Write an `f64` at `offset` in the payload.
    #[inline]
    #[track_caller]
    pub fn write_f64(&mut self, obj: Handle, offset: usize, v: f64) {
        self.write_u64(obj, offset, v.to_bits())
    }

    // ---- inspection ----

    /// What kind of object `obj` is.
    #[track_caller]
    pub fn kind(&self, obj: Handle) -> ObjectKind {
        self.obj(obj).1.kind()
    }

    /// Elements of an array (0 for fixed objects).
    #[track_caller]
    pub fn array_len(&self, obj: Handle) -> usize {
        self.obj(obj).1.array_len()
    }

    /// Application tag of a fixed object (0 for arrays).
    #[track_caller]
    pub fn tag(&self, obj: Handle) -> u16 {
        self.obj(obj).1.tag()
    }

    /// Whether `h` holds null.
    #[track_caller]
    pub fn is_null(&self, h: Handle) -> bool {
        self.addr(h) == 0
    }

    /// Whether two handles refer to the same object (or are both null).
    #[track_caller]
    pub fn same_object(&self, a: Handle, b: Handle) -> bool {
        self.addr(a) == self.addr(b)
    }

    // ---- handles ----

    /// A new handle holding null.
    #[inline]
    pub fn null_handle(&self) -> Handle {
        self.push_handle(0)
    }

    /// A new handle referring to what `h` refers to.
    #[inline]
    #[track_caller]
    pub fn dup(&self, h: Handle) -> Handle {
        let a = self.addr(h);
        self.push_handle(a)
    }

    /// Make `dst` refer to what `src` refers to (or null).
    #[inline]
    #[track_caller]
    pub fn set_handle(&self, dst: Handle, src: Option<Handle>) {
        let v = self.addr_or_null(src);
        self.write_handle(dst, v);
    }

    /// Number of live handles.
    pub fn handle_count(&self) -> usize {
        self.handles().len()
    }

    /// Run `f`; handles created inside are released when it returns, or when it panics.
    /// Polls for a safepoint.
    #[inline]
    pub fn scope<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let scope = self.open_scope();
        let r = f(scope.m);
        scope.end();
        r
    }

    /// Like [`Self::scope`], but the handle `f` returns survives as a new handle of the
    /// enclosing scope.
    #[inline]
    #[track_caller]
    pub fn scope_escape(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<Option<Handle>, GcError>,
    ) -> Result<Option<Handle>, GcError> {
        self.scope_keeping(f, |h| *h).map(|(_, kept)| kept)
    }

    /// The core of [`Self::scope_escape`] and [`Mutator::scope_escape_typed`]: run `f` in a
    /// scope and, if it succeeds, keep the object of the handle `held` finds in its result in
    /// a new handle of the enclosing scope (the first slot the scope released); every other
    /// handle of the scope is released. Returns the result and the new handle.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn scope_keeping<R, E>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, E>,
        held: impl FnOnce(&R) -> Option<Handle>,
    ) -> Result<(R, Option<Handle>), E> {
        let scope = self.open_scope();
        let r = f(scope.m);
        let kept = match r.as_ref().ok().and_then(held) {
            Some(h) => {
                let a = scope.m.addr(h);
                Some(scope.end_keeping(a))
            }
            None => {
                scope.end();
                None
            }
        };
        r.map(|r| (r, kept))
    }

    /// Begin a scope: poll for a safepoint and note the handle stack's height, which the
    /// scope's end releases back to, however the scope ends.
    #[inline(always)]
    pub(crate) fn open_scope(&mut self) -> OpenScope<'_, 'h> {
        self.safepoint_poll();
        let mark = self.handles().len();
        OpenScope { m: self, mark }
    }

    /// End a scope begun at `mark` (its handles become stale) and keep the object at `kept`
    /// in a new handle of the enclosing scope (in the first slot the scope released).
    #[inline(always)]
    pub(crate) fn release_keeping(&mut self, mark: usize, kept: usize) -> Handle {
        let handles = self.handles.get_mut();
        handles.release(mark);
        handles.push(kept)
    }

    // ---- cooperation with the collector ----

    /// Stop here if a collection is waiting for this thread.
    #[inline(always)]
    pub fn safepoint_poll(&mut self) {
        if self.heap.safepoint.requested() {
            self.block_for_safepoint();
        }
    }

    #[cold]
    fn block_for_safepoint(&mut self) {
        self.before_stop();
        self.heap.safepoint.block(self.id);
        self.after_stop();
        self.run_cleaners();
    }

    /// Run `f` (e.g. blocking I/O) without holding collections up. `f` cannot touch the heap.
    ///
    /// Anything that can block the thread (a channel receive, a lock, a join, a sleep, I/O)
    /// belongs in here: a thread blocked outside holds up every other thread that needs a
    /// collection, and after `safepoint-timeout` the heap names it on stderr.
    pub fn blocking<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.before_stop();
        self.heap.safepoint.enter_blocking(self.id);
        struct Leave<'a, 'h>(&'a mut Mutator<'h>);
        impl Drop for Leave<'_, '_> {
            fn drop(&mut self) {
                self.0.heap.safepoint.leave_blocking(self.0.id);
                self.0.after_stop();
            }
        }
        let r = {
            let _leave = Leave(&mut *self);
            f()
        };
        self.run_cleaners();
        r
    }

    /// Run a collection of `kind` now.
    pub fn collect(&mut self, kind: CollectionKind) {
        self.before_stop();
        self.heap
            .safepoint
            .request(Request::Collect(kind), Some(self.id));
        self.after_stop();
        self.run_cleaners();
    }

    /// Verify the whole heap now (world stopped).
    pub fn verify_heap(&mut self) -> Result<VerifyReport, crate::collection::verify::VerifyError> {
        self.before_stop();
        let r = self.heap.safepoint.request(Request::Verify, Some(self.id));
        self.after_stop();
        self.run_cleaners();
        match r.verify_error {
            Some(msg) => Err(crate::collection::verify::VerifyError(msg)),
            None => Ok(self.heap.last_verify_report()),
        }
    }

    /// Bytes in use in the heap right now.
    pub fn heap_used(&self) -> usize {
        self.heap.mem.used()
    }
}

/// How far ahead of the TLAB's top [`prefetch_for_allocation`] fetches: HotSpot's
/// `AllocatePrefetchDistance` on x86 (192 to 256 bytes, by processor).
const ALLOCATE_PREFETCH_DISTANCE: usize = 256;

/// Fetch the cache line the allocations after the one ending at `top` will write, so that
/// their stores do not wait for it (as HotSpot's compiled allocation does with
/// `AllocatePrefetchStyle`). TLAB memory was last written before the previous collection, so
/// without it every new line's first store misses. A prefetch never faults, so an address
/// beyond the TLAB (or the heap) is harmless.
#[inline(always)]
fn prefetch_for_allocation(top: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing a program can see and never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (top + ALLOCATE_PREFETCH_DISTANCE) as *const i8,
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = top;
}

/// Zero `[from, to)`.
///
/// # Safety
/// The range is memory of this thread's, `from <= to`.
#[inline(always)]
unsafe fn zero_from(from: usize, to: usize) {
    // SAFETY: the caller's contract.
    unsafe { std::ptr::write_bytes(from as *mut u8, 0, to - from) };
}

/// A scope being run: the mutator is reached through it while the scope runs, and its end
/// releases the handles made since it began. Ended explicitly on the normal path (no drop glue
/// there); dropped, it ends too, so a scope ends on every path out of it, a panic unwinding
/// through it included (a request loop that catches panics must not keep each failed
/// request's handles for ever).
pub(crate) struct OpenScope<'a, 'h> {
    pub m: &'a mut Mutator<'h>,
    mark: usize,
}

impl OpenScope<'_, '_> {
    /// End the scope: its handles become stale.
    #[inline(always)]
    pub fn end(self) {
        let mut this = std::mem::ManuallyDrop::new(self);
        let mark = this.mark;
        this.m.release_handles(mark);
    }

    /// End the scope keeping the object at `kept` in a new handle of the enclosing scope
    /// ([`Mutator::release_keeping`]).
    #[inline(always)]
    pub fn end_keeping(self, kept: usize) -> Handle {
        let mut this = std::mem::ManuallyDrop::new(self);
        let mark = this.mark;
        this.m.release_keeping(mark, kept)
    }
}

impl Drop for OpenScope<'_, '_> {
    /// Reached only when the scope was not ended: a panic unwinds through it.
    #[cold]
    fn drop(&mut self) {
        self.m.release_handles(self.mark);
    }
}

/// The panic of a handle used with another mutator (out of line, as every panic here: the
/// checks' fast paths are one comparison each).
#[cold]
#[inline(never)]
#[track_caller]
fn foreign_handle() -> ! {
    panic!("handle used with a mutator that did not create it")
}

#[cold]
#[inline(never)]
#[track_caller]
fn stale_handle() -> ! {
    panic!("stale handle: used after the scope that created it ended")
}

#[cold]
#[inline(never)]
#[track_caller]
fn null_handle() -> ! {
    panic!("null handle dereferenced")
}

#[cold]
#[inline(never)]
#[track_caller]
fn foreign_reference(addr: usize) -> ! {
    panic!("reference {addr:#x} is not an object of this mutator's heap")
}

impl Drop for Mutator<'_> {
    fn drop(&mut self) {
        self.retire_tlab();
        let resources = self.detach_refs();
        forget_thread(self.heap, &self.shared);
        self.heap.safepoint.detach(self.id);
        ThreadMutators::note_detached(self.id);
        // On this thread, once detached: a slow drop holds no collection up.
        super::refs::drop_resources(resources);
    }
}

/// The mutators attached on this thread and not yet dropped, so that the thread's end can
/// detach any it leaked (`mem::forget`, `Box::leak`, a reference cycle): such a mutator never
/// reaches a safepoint again, and every later collection of its heap would wait for it for
/// ever. Nothing can use it once its thread is gone (a mutator is neither `Send` nor `Sync`),
/// so detaching it is safe: its handles stop being roots, as when it is dropped, and the
/// handle stack it last published, whose memory may be gone, is never read. Its resources
/// (`on_collect`) are never run: they were leaked with it.
struct ThreadMutators(RefCell<Vec<(Weak<HeapInner>, Arc<MutatorShared>)>>);

thread_local! {
    static THREAD_MUTATORS: ThreadMutators = const { ThreadMutators(RefCell::new(Vec::new())) };
}

impl ThreadMutators {
    /// A mutator was attached on this thread. (While the thread's locals are being destroyed
    /// there is no list: a mutator attached then is not watched.)
    fn note_attached(heap: Weak<HeapInner>, shared: &Arc<MutatorShared>) {
        let _ = THREAD_MUTATORS.try_with(|t| t.0.borrow_mut().push((heap, shared.clone())));
    }

    /// Mutator `id` of this thread was dropped.
    fn note_detached(id: u32) {
        let _ = THREAD_MUTATORS.try_with(|t| t.0.borrow_mut().retain(|(_, m)| m.id != id));
    }
}

impl Drop for ThreadMutators {
    /// The thread ends: detach what it leaked.
    fn drop(&mut self) {
        for (heap, shared) in self.0.get_mut().drain(..) {
            let Some(heap) = heap.upgrade() else {
                continue; // the heap is gone, and no collection waits
            };
            if heap.safepoint.detach_exited(shared.id) {
                shared.refs.detach();
                forget_thread(&heap, &shared);
                log::warn!(
                    "{} ended without dropping its mutator (leaked, e.g. with mem::forget): \
                     detached at the thread's end; its handles and globals are no longer roots",
                    shared.describe()
                );
            }
        }
    }
}

/// The OS policies stop watching the thread of a detaching mutator.
fn forget_thread(heap: &HeapInner, shared: &MutatorShared) {
    heap.mutator_sched.on_detach(shared.tid);
    heap.gc_affinity.note_mutator(shared.tid, false);
}

/// What `refs.rs` (global and weak references, cleaners) uses of the mutator's internals.
impl Mutator<'_> {
    /// The part of the mutator the collector reaches.
    #[inline]
    pub(super) fn shared(&self) -> &Arc<MutatorShared> {
        &self.shared
    }

    /// The resources attached to objects.
    #[inline]
    pub(super) fn refs_local(&mut self) -> &mut super::refs::RefsLocal {
        &mut self.refs_local
    }

    /// [`Self::push_handle`].
    #[inline]
    pub(super) fn push_handle_for_refs(&self, addr: usize) -> Handle {
        self.push_handle(addr)
    }

    /// [`Self::addr`]: the address `h` holds, checked.
    #[inline]
    #[track_caller]
    pub(crate) fn handle_addr(&self, h: Handle) -> usize {
        self.addr(h)
    }
}
