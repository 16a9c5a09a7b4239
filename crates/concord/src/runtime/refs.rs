//! Long-lived roots, weak references and native resources: the references an embedder keeps
//! outside any [`Mutator::scope`] (an interpreter's globals, caches, objects that own a file
//! or a buffer).
//!
//! - A [`GlobalHandle`] (typed: [`crate::typed::Global`]) is a root that lives until the value
//!   is dropped, like V8's `Global` or gc-arena's `DynamicRoot`: the collector updates it when
//!   its object moves and keeps the object alive.
//! - A [`WeakHandle`] (typed: [`crate::typed::Weak`]) refers to an object without keeping it
//!   alive: once a collection finds the object unreachable from the strong roots (handles and
//!   globals), the weak reference is cleared and [`Mutator::upgrade_handle`] gives `None`.
//! - [`Mutator::on_collect_handle`] (typed: [`Mutator::on_collect`]) attaches a Rust value to
//!   an object; when a collection finds the object dead, the value is dropped on the mutator's
//!   own thread after the pause (Java's `Cleaner`, without resurrection: the value never sees
//!   the object).
//!
//! # The tables
//!
//! Objects never cross threads (see the soundness section of [`crate::typed`]), so each
//! mutator keeps its own tables in the part of it the collector reaches (`MutatorShared`),
//! behind a mutex: a global slot list (a root range, scanned with the mutator's handle stack),
//! a weak slot list and a cleaner slot list (weak slots whose resource the mutator holds,
//! see [`crate::collection::weak`]). Each slot is a word holding an object address or 0; a
//! freed slot goes on its list's free list and is reused. The mutex is taken by the owning
//! thread for each operation (uncontended), by a `GlobalHandle` or `WeakHandle` being dropped
//! (which needs no mutator), and by the VM thread for the whole of a safepoint operation, so
//! the collector sees the tables only while the owner is stopped and nothing else touches
//! them. A value dropped inside [`Mutator::blocking`] while a collection runs therefore waits
//! for the collection's end.
//!
//! The resources themselves never leave the mutator's thread: the mutator holds them in a
//! list parallel to its cleaner slots, and the collector only clears slots and raises a flag.
//!
//! # When resources are dropped
//!
//! A collection that finds an object dead clears its cleaner slot. The mutator drops the
//! resources of cleared slots, on its own thread and outside the pause, at the first of: the
//! end of [`Mutator::collect`] or [`Mutator::verify_heap`], the end of a safepoint poll that
//! stopped (in [`Mutator::safepoint_poll`] or on entry to a scope), an allocation that had to
//! wait for a collection, the return of [`Mutator::blocking`], an explicit
//! [`Mutator::run_cleaners`], and the mutator's drop. When the mutator is dropped, every
//! resource it still holds is dropped too, after it has detached: its objects can no longer
//! be reached by anyone. A young collection judges young objects only, so an object that has
//! been promoted to the old generation frees its resource only after a full collection.
//!
//! # References that outlive their mutator
//!
//! A `GlobalHandle` or `WeakHandle` holds a reference count on its mutator's shared part, so it
//! may outlive the mutator (and the heap): once the mutator has detached its tables are no
//! longer roots nor processed, and using the reference with any mutator panics, as no mutator
//! is that one any more. Dropping it then only frees its slot.

use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::gc_ref::Gc;
use super::mutator::{Handle, Mutator, MutatorShared};
use crate::collection::weak::WeakRange;
use crate::collection::RootSlots;

/// A list of reference slots (object address or 0) with a free list.
#[derive(Default)]
struct SlotList {
    slots: Vec<usize>,
    free: Vec<u32>,
}

impl SlotList {
    /// A slot holding `addr`: a freed one if there is one, else a new one.
    fn take(&mut self, addr: usize) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = addr;
                i
            }
            None => {
                let i = u32::try_from(self.slots.len()).expect("more than 2^32 reference slots");
                self.slots.push(addr);
                i
            }
        }
    }

    /// Free slot `i` (it holds 0 from now on).
    fn release(&mut self, i: u32) {
        self.slots[i as usize] = 0;
        self.free.push(i);
    }

    /// The slots as a range of words, for the collector.
    fn range(&mut self) -> RootSlots {
        RootSlots {
            ptr: self.slots.as_mut_ptr(),
            len: self.slots.len(),
        }
    }

    /// Slots in use (taken and not freed).
    fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// A mutator's reference tables (see the module documentation).
#[derive(Default)]
struct RefTable {
    /// Global slots: roots.
    strong: SlotList,
    /// Weak-reference slots.
    weak: SlotList,
    /// Cleaner slots: weak slots whose resource the mutator holds ([`RefsLocal`]); freed by the
    /// mutator when it drops the resource.
    cleaners: SlotList,
    /// The mutator has detached: the tables are no longer roots nor processed.
    detached: bool,
}

/// The tables of one mutator, in its shared part (`MutatorShared::refs`).
#[derive(Default)]
pub(crate) struct RefShared {
    table: Mutex<RefTable>,
    /// Raised by a collection that cleared a cleaner slot: resources are due.
    cleaners_cleared: AtomicBool,
    /// Raised by a collection that cleared a weak slot (nobody waits for it).
    weak_cleared: AtomicBool,
}

impl RefShared {
    fn lock(&self) -> MutexGuard<'_, RefTable> {
        super::lock(&self.table)
    }

    /// The owner detached: the tables are no longer roots nor processed.
    pub fn detach(&self) {
        let mut table = self.lock();
        table.detached = true;
        // Nothing reads these addresses again: every use of a reference checks for a mutator
        // that no longer exists.
        table.strong.slots.iter_mut().for_each(|s| *s = 0);
        table.weak.slots.iter_mut().for_each(|s| *s = 0);
        table.cleaners.slots.iter_mut().for_each(|s| *s = 0);
    }

    /// The tables for the length of a safepoint operation: the VM thread holds this while the
    /// owner is stopped, and uses the ranges it gives until it drops it.
    pub fn lock_for_collection(&self) -> CollectionTables<'_> {
        CollectionTables {
            shared: self,
            table: self.lock(),
        }
    }
}

/// A mutator's tables locked by the VM thread for a safepoint operation.
pub(crate) struct CollectionTables<'a> {
    shared: &'a RefShared,
    table: MutexGuard<'a, RefTable>,
}

impl<'a> CollectionTables<'a> {
    /// The global slots, a root range (`None` when there are none).
    pub fn strong_roots(&mut self) -> Option<RootSlots> {
        let t = &mut *self.table;
        (!t.detached && !t.strong.slots.is_empty()).then(|| t.strong.range())
    }

    /// The weak ranges: weak-reference slots and cleaner slots (empty ones left out). The
    /// ranges stay valid while `self` is held and the owner is stopped.
    pub fn weak_ranges(&mut self) -> impl Iterator<Item = WeakRange<'a>> {
        let shared = self.shared;
        let t = &mut *self.table;
        let live = !t.detached;
        [
            (t.weak.range(), &shared.weak_cleared),
            (t.cleaners.range(), &shared.cleaners_cleared),
        ]
        .into_iter()
        .filter(move |(slots, _)| live && slots.len > 0)
        .map(|(slots, cleared)| WeakRange { slots, cleared })
    }
}

/// The mutator's own half of the cleaner table: each cleaner slot's resource (`None` for a free
/// slot). Lives in the [`Mutator`], so the resources never leave its thread.
#[derive(Default)]
pub(crate) struct RefsLocal {
    resources: Vec<Option<Box<dyn Any>>>,
    /// Resources found dead but not dropped yet: those after one whose drop panicked.
    due: Vec<Box<dyn Any>>,
}

/// Resources not dropped yet, and the panic that stopped their dropping.
type Interrupted = (Vec<Box<dyn Any>>, Box<dyn Any + Send>);

/// Drop `resources` one at a time. If a drop panics, the ones after it are handed back (not
/// dropped while the panic unwinds, where a second panic would abort the process) with the
/// panic.
fn drop_each(resources: Vec<Box<dyn Any>>) -> Result<(), Interrupted> {
    let mut rest = resources.into_iter();
    while let Some(r) = rest.next() {
        if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(r))) {
            return Err((rest.collect(), panic));
        }
    }
    Ok(())
}

/// Drop every resource of a mutator that is going away. Each is dropped even if one before it
/// panics; the first panic then propagates (a later one's payload is dropped: its message was
/// printed when it happened), unless the mutator itself is dropped by a panic's unwinding,
/// where a second panic would abort the process.
pub(crate) fn drop_resources(mut resources: Vec<Box<dyn Any>>) {
    let mut first = None;
    while let Err((rest, panic)) = drop_each(resources) {
        first.get_or_insert(panic);
        resources = rest;
    }
    if let Some(panic) = first {
        if !std::thread::panicking() {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Whose reference a diagnostic is about.
#[derive(Clone, Copy)]
enum RefKind {
    Global,
    Weak,
}

impl RefKind {
    fn name(self) -> &'static str {
        match self {
            RefKind::Global => "global reference",
            RefKind::Weak => "weak reference",
        }
    }
}

/// The panic of a global or weak reference used with a mutator that did not create it.
#[cold]
#[inline(never)]
#[track_caller]
fn foreign_ref(kind: RefKind, owner: &MutatorShared) -> ! {
    let detached = owner.refs.lock().detached;
    let state = if detached {
        ", which has been dropped"
    } else {
        ""
    };
    panic!(
        "{} used with a mutator that did not create it: it belongs to the mutator of {}{state}",
        kind.name(),
        owner.describe()
    )
}

/// An untyped root that lives until it is dropped: an interpreter's global, a cache's entry.
/// Made with [`Mutator::global_handle`]; read with [`Mutator::load_global`] or
/// [`Mutator::view_global`]; set with [`Mutator::set_global_handle`]. It may hold null.
///
/// Dropping it frees its slot, with no mutator needed. It is neither `Send` nor `Sync` (objects
/// never cross threads), and using it with another mutator than the one that made it panics,
/// also after that mutator has been dropped (see the module documentation of
/// `concord::runtime::refs` in the guide, `docs/library.md`).
///
/// ```
/// use concord::{CollectionKind, Heap, ObjectType};
///
/// const CELL: ObjectType = ObjectType::fixed(1, 8);
///
/// let heap = Heap::builder().heap_size(16 << 20).build()?;
/// let mut m = heap.attach();
/// let global = m.scope(|m| -> Result<_, concord::GcError> {
///     let cell = m.alloc(CELL)?;
///     m.write_u64(cell, 0, 7);
///     Ok(m.global_handle(cell)) // outlives the scope
/// })?;
/// m.collect(CollectionKind::Full); // the object moves; the global follows
/// assert_eq!(m.view_global(&global).unwrap().read_u64(0), 7);
/// drop(global); // the object is garbage now
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail,E0277
/// # use concord::{Heap, ObjectType};
/// # let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
/// # let mut m = heap.attach();
/// let h = m.alloc(ObjectType::fixed(0, 8)).unwrap();
/// let g = m.global_handle(h);
/// std::thread::spawn(move || drop(g)); // error: `GlobalHandle` is not `Send`
/// ```
pub struct GlobalHandle {
    shared: Arc<MutatorShared>,
    index: u32,
    /// Neither `Send` nor `Sync`: the object belongs to the creating thread.
    _not_send: PhantomData<*const ()>,
}

impl Drop for GlobalHandle {
    fn drop(&mut self) {
        self.shared.refs.lock().strong.release(self.index);
    }
}

impl fmt::Debug for GlobalHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GlobalHandle(mutator {}, slot {})",
            self.shared.id, self.index
        )
    }
}

/// An untyped weak reference: it refers to an object without keeping it alive, and is cleared
/// once a collection finds the object unreachable from the strong roots. Made with
/// [`Mutator::weak_handle`]; [`Mutator::upgrade_handle`] gives a handle to the object, or
/// `None` once it is cleared.
///
/// A young collection clears weak references to young objects it finds dead and updates those
/// it moves; an object in the old generation is judged only by a full collection. Dropping it
/// frees its slot, with no mutator needed; like [`GlobalHandle`] it is neither `Send` nor
/// `Sync`, and using it with another mutator than its own panics.
///
/// ```
/// use concord::{CollectionKind, Heap, ObjectType};
///
/// let heap = Heap::builder().heap_size(16 << 20).build()?;
/// let mut m = heap.attach();
/// let weak = m.scope(|m| -> Result<_, concord::GcError> {
///     let h = m.alloc(ObjectType::fixed(0, 8))?;
///     Ok(m.weak_handle(h)) // the handle dies with the scope; the weak reference does not
/// })?;
/// // Nothing has collected it yet. (Upgrading roots it in a handle of the current scope, so
/// // the check gets a scope of its own.)
/// assert!(m.scope(|m| m.upgrade_handle(&weak).is_some()));
/// m.collect(CollectionKind::Young);
/// assert!(m.upgrade_handle(&weak).is_none()); // the object was unreachable: cleared
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct WeakHandle {
    shared: Arc<MutatorShared>,
    index: u32,
    /// Neither `Send` nor `Sync`: the object belongs to the creating thread.
    _not_send: PhantomData<*const ()>,
}

impl Drop for WeakHandle {
    fn drop(&mut self) {
        self.shared.refs.lock().weak.release(self.index);
    }
}

impl fmt::Debug for WeakHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "WeakHandle(mutator {}, slot {})",
            self.shared.id, self.index
        )
    }
}

impl Mutator<'_> {
    /// Panic unless `owner` is this mutator's shared part.
    #[inline]
    #[track_caller]
    fn check_ref_owner(&self, owner: &Arc<MutatorShared>, kind: RefKind) {
        if !Arc::ptr_eq(owner, self.shared()) {
            foreign_ref(kind, owner);
        }
    }

    /// A new global slot holding `addr` (0 or an object of this mutator).
    pub(crate) fn new_global(&self, addr: usize) -> GlobalHandle {
        let index = self.shared().refs.lock().strong.take(addr);
        GlobalHandle {
            shared: self.shared().clone(),
            index,
            _not_send: PhantomData,
        }
    }

    /// What global `g` holds (0 for null). Panics if `g` is of another mutator.
    #[track_caller]
    pub(crate) fn global_addr(&self, g: &GlobalHandle) -> usize {
        self.check_ref_owner(&g.shared, RefKind::Global);
        self.shared().refs.lock().strong.slots[g.index as usize]
    }

    /// Make global `g` hold `addr` (0 or an object of this mutator). Panics if `g` is of
    /// another mutator.
    #[track_caller]
    pub(crate) fn set_global_addr(&self, g: &GlobalHandle, addr: usize) {
        self.check_ref_owner(&g.shared, RefKind::Global);
        self.shared().refs.lock().strong.slots[g.index as usize] = addr;
    }

    /// A new weak slot referring to `addr` (0 or an object of this mutator).
    pub(crate) fn new_weak(&self, addr: usize) -> WeakHandle {
        let index = self.shared().refs.lock().weak.take(addr);
        WeakHandle {
            shared: self.shared().clone(),
            index,
            _not_send: PhantomData,
        }
    }

    /// What weak reference `w` refers to (0 once cleared). Panics if `w` is of another
    /// mutator.
    #[track_caller]
    pub(crate) fn weak_addr(&self, w: &WeakHandle) -> usize {
        self.check_ref_owner(&w.shared, RefKind::Weak);
        self.shared().refs.lock().weak.slots[w.index as usize]
    }

    /// Attach `resource` to the object at `addr` (an object of this mutator).
    pub(crate) fn attach_resource(&mut self, addr: usize, resource: Box<dyn Any>) {
        debug_assert_ne!(addr, 0);
        let index = self.shared().refs.lock().cleaners.take(addr) as usize;
        let resources = &mut self.refs_local().resources;
        if index == resources.len() {
            resources.push(Some(resource));
        } else {
            debug_assert!(resources[index].is_none());
            resources[index] = Some(resource);
        }
    }

    /// A global root holding what `h` holds (null too). It lives until it is dropped; see
    /// [`GlobalHandle`]. Panics on a stale handle or a handle of another mutator.
    #[track_caller]
    pub fn global_handle(&self, h: Handle) -> GlobalHandle {
        let a = self.handle_addr(h);
        self.new_global(a)
    }

    /// A new handle holding what global `g` holds (`None` for null). Panics if `g` is of
    /// another mutator.
    #[track_caller]
    pub fn load_global(&self, g: &GlobalHandle) -> Option<Handle> {
        let a = self.global_addr(g);
        (a != 0).then(|| self.push_handle_for_refs(a))
    }

    /// What global `g` holds, as a [`Gc`] (no new handle; `None` for null). Panics if `g` is
    /// of another mutator.
    #[track_caller]
    pub fn view_global(&self, g: &GlobalHandle) -> Option<Gc<'_>> {
        let a = self.global_addr(g);
        // SAFETY: a global of this mutator holds 0 or a live object of this heap (the collector
        // updates it as it does handles), and `&self` keeps the mutator from reaching a
        // safepoint while the `Gc` lives.
        unsafe { Gc::from_word(a) }
    }

    /// Make global `g` hold what `h` holds (`None`: null). Panics if `g` is of another
    /// mutator, or on a stale handle or one of another mutator.
    #[track_caller]
    pub fn set_global_handle(&self, g: &GlobalHandle, h: Option<Handle>) {
        let a = match h {
            Some(h) => self.handle_addr(h),
            None => 0,
        };
        self.set_global_addr(g, a);
    }

    /// A weak reference to what `h` holds (a null handle gives one that is cleared already).
    /// See [`WeakHandle`]. Panics on a stale handle or a handle of another mutator.
    #[track_caller]
    pub fn weak_handle(&self, h: Handle) -> WeakHandle {
        let a = self.handle_addr(h);
        self.new_weak(a)
    }

    /// A new handle to the object weak reference `w` refers to, or `None` once a collection
    /// has cleared it. Panics if `w` is of another mutator.
    #[track_caller]
    pub fn upgrade_handle(&self, w: &WeakHandle) -> Option<Handle> {
        let a = self.weak_addr(w);
        (a != 0).then(|| self.push_handle_for_refs(a))
    }

    /// Attach `resource` to the object `h` holds: once a collection finds the object dead,
    /// `resource` is dropped on this thread after the pause (see "When resources are dropped"
    /// in the guide; at the latest when the mutator is dropped). It is never dropped while the
    /// object is reachable, and exactly once. Panics on null, a stale handle or a handle of
    /// another mutator.
    ///
    /// ```
    /// use std::rc::Rc;
    /// use std::cell::Cell;
    /// use concord::{CollectionKind, Heap, ObjectType};
    ///
    /// struct Closes(Rc<Cell<u32>>); // e.g. a file descriptor
    /// impl Drop for Closes {
    ///     fn drop(&mut self) {
    ///         self.0.set(self.0.get() + 1);
    ///     }
    /// }
    ///
    /// let heap = Heap::builder().heap_size(16 << 20).build()?;
    /// let mut m = heap.attach();
    /// let closed = Rc::new(Cell::new(0));
    /// m.scope(|m| -> Result<(), concord::GcError> {
    ///     let h = m.alloc(ObjectType::fixed(0, 8))?;
    ///     m.on_collect_handle(h, Closes(closed.clone()));
    ///     m.collect(CollectionKind::Young); // `h` holds it: nothing is dropped
    ///     Ok(())
    /// })?;
    /// assert_eq!(closed.get(), 0);
    /// m.collect(CollectionKind::Young); // unreachable now: dropped after the pause
    /// assert_eq!(closed.get(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn on_collect_handle<R: 'static>(&mut self, h: Handle, resource: R) {
        let a = self.handle_addr(h);
        if a == 0 {
            null_resource_owner();
        }
        self.attach_resource(a, Box::new(resource));
    }

    /// Drop now the resources whose objects collections have found dead (see
    /// [`Mutator::on_collect_handle`]); returns how many. The mutator does this by itself after
    /// each of its stops; this is for a thread that wants them dropped at a point of its
    /// choosing. A resource whose drop panics propagates the panic; the resources after it
    /// stay due, and the next run (the mutator's next stop, or a call of this) drops them, so
    /// two panicking resources never make a panic during a panic (which would abort).
    pub fn run_cleaners(&mut self) -> usize {
        // Relaxed: a collection that raised it ended before this thread resumed, and the
        // safepoint's mutex orders the two; the mutator raises it itself for resources left
        // due by a panic. (A load first: the usual answer is no, and a swap would write.)
        let cleared = &self.shared().refs.cleaners_cleared;
        if !cleared.load(Ordering::Relaxed) || !cleared.swap(false, Ordering::Relaxed) {
            return 0;
        }
        let mut due = std::mem::take(&mut self.refs_local().due);
        let shared = self.shared().clone();
        {
            let mut table = shared.refs.lock();
            let resources = &mut self.refs_local().resources;
            for (i, r) in resources.iter_mut().enumerate() {
                if r.is_some() && table.cleaners.slots[i] == 0 {
                    due.extend(r.take());
                    table.cleaners.release(i as u32);
                }
            }
        }
        // Dropped with the table unlocked: a resource may hold globals or weak references,
        // whose drops take the lock.
        let n = due.len();
        if let Err((rest, panic)) = drop_each(due) {
            self.refs_local().due = rest;
            self.shared()
                .refs
                .cleaners_cleared
                .store(true, Ordering::Relaxed);
            std::panic::resume_unwind(panic);
        }
        n
    }

    /// The mutator is going away: its tables stop being roots and being processed, and every
    /// resource it holds is handed back (to be dropped on this thread after it has detached).
    pub(crate) fn detach_refs(&mut self) -> Vec<Box<dyn Any>> {
        self.shared().refs.detach();
        let local = self.refs_local();
        let mut resources = std::mem::take(&mut local.due);
        resources.extend(std::mem::take(&mut local.resources).into_iter().flatten());
        resources
    }

    /// Global, weak and cleaner slots in use: (globals, weak references, cleaners).
    pub fn reference_counts(&self) -> (usize, usize, usize) {
        let t = self.shared().refs.lock();
        (t.strong.in_use(), t.weak.in_use(), t.cleaners.in_use())
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn null_resource_owner() -> ! {
    panic!("on_collect: the handle holds null (a resource needs an object to belong to)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CollectionKind, GcConfig, Heap, ObjectType, Preset};

    const CELL: ObjectType = ObjectType::fixed(1, 8);

    fn heap() -> Heap {
        let mut config = GcConfig::for_preset(Preset::Optimized);
        config.heap_size = 8 << 20;
        config.gc_threads = 1;
        config.verify = true;
        Heap::new(config).unwrap()
    }

    #[test]
    fn freed_slots_are_reused() {
        let mut list = SlotList::default();
        assert_eq!((list.take(8), list.take(16), list.take(24)), (0, 1, 2));
        list.release(1);
        assert_eq!(list.slots, [8, 0, 24]);
        assert_eq!(list.in_use(), 2);
        assert_eq!(list.take(32), 1);
        assert_eq!(list.slots, [8, 32, 24]);
    }

    #[test]
    fn dropping_references_frees_their_slots() {
        let heap = heap();
        let mut m = heap.attach();
        let h = m.alloc(CELL).unwrap();
        let (g1, g2) = (m.global_handle(h), m.global_handle(h));
        let w = m.weak_handle(h);
        m.on_collect_handle(h, ());
        assert_eq!(m.reference_counts(), (2, 1, 1));
        drop(g1);
        let g3 = m.global_handle(h); // takes g1's slot
        assert_eq!(g3.index, 0);
        drop((g2, g3, w));
        assert_eq!(m.reference_counts(), (0, 0, 1));
    }

    #[test]
    fn the_collector_sees_no_tables_of_a_detached_mutator() {
        let heap = heap();
        let mut m = heap.attach();
        let h = m.alloc(CELL).unwrap();
        let g = m.global_handle(h);
        let w = m.weak_handle(h);
        let shared = m.shared().clone();
        {
            let mut t = shared.refs.lock_for_collection();
            assert!(t.strong_roots().is_some_and(|r| r.len == 1));
            assert_eq!(t.weak_ranges().count(), 1, "no cleaners: no cleaner range");
        }
        m.collect(CollectionKind::Full);
        drop(m);
        let mut t = shared.refs.lock_for_collection();
        assert!(t.strong_roots().is_none());
        assert_eq!(t.weak_ranges().count(), 0);
        assert!(t.table.detached);
        drop(t);
        drop((g, w));
    }

    #[test]
    fn resources_wait_for_a_collection_and_run_once() {
        use std::cell::Cell;
        use std::rc::Rc;
        struct Count(Rc<Cell<u32>>);
        impl Drop for Count {
            fn drop(&mut self) {
                self.0.set(self.0.get() + 1);
            }
        }
        let heap = heap();
        let mut m = heap.attach();
        let n = Rc::new(Cell::new(0));
        m.scope(|m| {
            let h = m.alloc(CELL).unwrap();
            m.on_collect_handle(h, Count(n.clone()));
        });
        assert_eq!(m.run_cleaners(), 0, "no collection has found it dead");
        // A collection run by another thread (this one is in a blocking region): dropped when
        // the region returns, not before.
        m.blocking(|| {
            std::thread::scope(|s| {
                s.spawn(|| heap.collect(CollectionKind::Young));
            })
        });
        assert_eq!(n.get(), 1);
        m.collect(CollectionKind::Full);
        assert_eq!(m.run_cleaners(), 0);
        assert_eq!(n.get(), 1);
        assert_eq!(m.reference_counts(), (0, 0, 0));
    }

    #[test]
    #[should_panic(expected = "on_collect: the handle holds null")]
    fn a_resource_needs_an_object() {
        let heap = heap();
        let mut m = heap.attach();
        let null = m.null_handle();
        m.on_collect_handle(null, ());
    }
}
