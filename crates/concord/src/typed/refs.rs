//! Typed long-lived roots and weak references: [`Global<T>`] and [`Weak<T>`], and
//! [`Mutator::on_collect`] for typed objects. They wrap the untyped [`GlobalHandle`] and
//! [`WeakHandle`] of `concord::runtime::refs` (where the tables, their processing by the
//! collectors and the moment resources are dropped are described).
//!
//! They keep the typing invariant of [`crate::typed`]: a `Global<T>` or `Weak<T>` is made only
//! from a [`Root<T>`] or a `T` view, set only from a `T` view, and never exposes its untyped
//! slot, so it refers to an object of `T`'s layout (or, for a weak reference, to nothing).
//! The collector moves objects whole and updates the slots, so reading one back as a `T` view
//! or root is sound.

use std::fmt;
use std::marker::PhantomData;

use super::{RawView, Root, Trace, TypedView};
use crate::runtime::{Gc, GlobalHandle, Mutator, WeakHandle};

/// A typed root that lives until it is dropped: an interpreter's global, a cache's entry. Made
/// with [`Mutator::global`] (from a root) or [`Mutator::global_view`] (from a view); read with
/// [`Mutator::get_global`] (a view) or [`Mutator::local`] (a [`Root<T>`] in the current scope);
/// set with [`Mutator::set_global`]. Never null.
///
/// Dropping it frees its slot, with no mutator needed, and its object is garbage from then on
/// unless something else refers to it. It is neither `Send` nor `Sync` (objects never cross
/// threads), and using it with another mutator than the one that made it panics, also once
/// that mutator has been dropped.
///
/// ```
/// use concord::typed::Global;
/// use concord::{CollectionKind, Heap, Root};
///
/// #[derive(concord::Trace)]
/// struct Counter {
///     hits: u64,
/// }
///
/// let heap = Heap::builder().heap_size(16 << 20).build()?;
/// let mut m = heap.attach();
/// let counter: Global<Counter> = m.scope(|m| -> Result<_, concord::GcError> {
///     let c = m.alloc_typed(Counter { hits: 0 })?;
///     Ok(m.global(c)) // outlives the scope, unlike `c`
/// })?;
/// for _ in 0..3 {
///     m.collect(CollectionKind::Full); // the object moves; the global follows
///     let v = m.get_global(&counter);
///     v.set_hits(v.hits() + 1);
/// }
/// assert_eq!(m.get_global(&counter).hits(), 3);
/// let r: Root<Counter> = m.local(&counter); // a root of the current scope
/// let fresh = m.alloc_typed(Counter { hits: 100 })?;
/// m.set_global(&counter, m.get(fresh));
/// assert_eq!(m.get_global(&counter).hits(), 100);
/// assert_eq!(m.get(r).hits(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// ```compile_fail,E0277
/// # use concord::{Heap, Root};
/// # #[derive(concord::Trace)]
/// # struct Counter {
/// #     hits: u64,
/// # }
/// # let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
/// # let mut m = heap.attach();
/// let c = m.alloc_typed(Counter { hits: 0 }).unwrap();
/// let g = m.global(c);
/// std::thread::spawn(move || drop(g)); // error: `Global<Counter>` is not `Send`
/// ```
pub struct Global<T> {
    raw: GlobalHandle,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Global<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Global<{}>({:?})", std::any::type_name::<T>(), self.raw)
    }
}

/// A typed weak reference: it refers to an object of `T` without keeping it alive, and is
/// cleared once a collection finds the object unreachable from the strong roots (handles,
/// roots and globals). Made with [`Mutator::weak`] or [`Mutator::weak_view`];
/// [`Mutator::upgrade`] gives a root of the object (or [`Mutator::upgrade_view`] a view), or
/// `None` once it is cleared.
///
/// A young collection clears weak references to young objects it finds dead and updates those
/// it moves; an object in the old generation is judged only by a full collection. Dropping it
/// frees its slot, with no mutator needed; like [`Global`] it is neither `Send` nor `Sync`, and
/// using it with another mutator than its own panics.
///
/// ```
/// use concord::typed::Weak;
/// use concord::{CollectionKind, Heap, Root};
///
/// #[derive(concord::Trace)]
/// struct Entry {
///     key: u64,
/// }
///
/// let heap = Heap::builder().heap_size(16 << 20).build()?;
/// let mut m = heap.attach();
/// let kept = m.alloc_typed(Entry { key: 1 })?;
/// let (w_kept, w_lost): (Weak<Entry>, Weak<Entry>) = m.scope(|m| {
///     let lost = m.alloc_typed(Entry { key: 2 })?;
///     Ok::<_, concord::GcError>((m.weak(kept), m.weak(lost)))
/// })?;
/// m.collect(CollectionKind::Young);
/// assert_eq!(m.upgrade_view(&w_kept).map(|e| e.key()), Some(1)); // moved, still there
/// assert!(m.upgrade(&w_lost).is_none()); // nothing held it: cleared
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Weak<T> {
    raw: WeakHandle,
    _type: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Weak<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Weak<{}>({:?})", std::any::type_name::<T>(), self.raw)
    }
}

impl Mutator<'_> {
    /// The address `view` refers to, checked to be of this mutator's heap.
    #[inline]
    #[track_caller]
    fn typed_addr<'m, V: TypedView<'m>>(&self, view: V) -> usize {
        self.own(view.__raw().gc)
    }

    /// The typed view of the object at `addr`.
    ///
    /// # Safety
    /// `addr` is a live object of this heap of `T`'s layout (the typing invariant).
    #[inline]
    unsafe fn typed_view<T: Trace>(&self, addr: usize) -> T::View<'_> {
        // SAFETY: the caller's contract; `&self` keeps the object from moving while the view
        // lives.
        T::__view(unsafe { RawView::new(Gc::from_word(addr).unwrap_unchecked()) })
    }

    /// A global root holding `root`'s object; it lives until it is dropped (see [`Global`]).
    /// Panics on a stale root or a root of another mutator.
    #[track_caller]
    pub fn global<T: Trace>(&self, root: Root<T>) -> Global<T> {
        Global {
            raw: self.new_global(self.handle_addr(root.handle)),
            _type: PhantomData,
        }
    }

    /// A global root holding `view`'s object (see [`Global`]). Panics if the view belongs to
    /// another heap.
    #[track_caller]
    pub fn global_view<'m, V: TypedView<'m>>(&self, view: V) -> Global<V::Target> {
        Global {
            raw: self.new_global(self.typed_addr(view)),
            _type: PhantomData,
        }
    }

    /// The view of global `g`'s object, valid until the mutator is next borrowed `&mut` (as
    /// [`Mutator::get`]). Panics if `g` is of another mutator.
    #[track_caller]
    pub fn get_global<T: Trace>(&self, g: &Global<T>) -> T::View<'_> {
        let a = self.global_addr(&g.raw);
        // SAFETY: a `Global<T>` is made from and set to objects of `T` only, never null, and
        // the collector keeps its slot pointing to the (moved) object.
        unsafe { self.typed_view::<T>(a) }
    }

    /// A new root of the current scope holding global `g`'s object. Panics if `g` is of another
    /// mutator.
    #[track_caller]
    pub fn local<T: Trace>(&self, g: &Global<T>) -> Root<T> {
        let h = self
            .load_global(&g.raw)
            .expect("a typed global is never null");
        // SAFETY: the handle holds the global's object, of `T` (as in `get_global`), and is not
        // exposed untyped.
        unsafe { Root::from_handle(h) }
    }

    /// Make global `g` hold `view`'s object. Panics if `g` is of another mutator or the view
    /// belongs to another heap.
    #[track_caller]
    pub fn set_global<'m, V: TypedView<'m>>(&self, g: &Global<V::Target>, view: V) {
        let a = self.typed_addr(view);
        self.set_global_addr(&g.raw, a);
    }

    /// A weak reference to `root`'s object (see [`Weak`]). Panics on a stale root or a root of
    /// another mutator.
    #[track_caller]
    pub fn weak<T: Trace>(&self, root: Root<T>) -> Weak<T> {
        Weak {
            raw: self.new_weak(self.handle_addr(root.handle)),
            _type: PhantomData,
        }
    }

    /// A weak reference to `view`'s object (see [`Weak`]). Panics if the view belongs to
    /// another heap.
    #[track_caller]
    pub fn weak_view<'m, V: TypedView<'m>>(&self, view: V) -> Weak<V::Target> {
        Weak {
            raw: self.new_weak(self.typed_addr(view)),
            _type: PhantomData,
        }
    }

    /// A new root of `w`'s object, or `None` once a collection has cleared `w`. Panics if `w`
    /// is of another mutator.
    #[track_caller]
    pub fn upgrade<T: Trace>(&self, w: &Weak<T>) -> Option<Root<T>> {
        let h = self.upgrade_handle(&w.raw)?;
        // SAFETY: a `Weak<T>` is made from objects of `T` only, and the collector keeps its
        // slot pointing to the (moved) object or clears it; the handle is not exposed untyped.
        Some(unsafe { Root::from_handle(h) })
    }

    /// The view of `w`'s object (no new root), or `None` once a collection has cleared `w`;
    /// valid until the mutator is next borrowed `&mut`. Panics if `w` is of another mutator.
    #[track_caller]
    pub fn upgrade_view<T: Trace>(&self, w: &Weak<T>) -> Option<T::View<'_>> {
        let a = self.weak_addr(&w.raw);
        // SAFETY: as in `upgrade`: 0 or a live object of `T` (an object a collection has not
        // found dead is still whole, with valid slots: nothing has reclaimed its memory).
        (a != 0).then(|| unsafe { self.typed_view::<T>(a) })
    }

    /// Attach `resource` to `root`'s object: once a collection finds the object dead,
    /// `resource` is dropped on this thread after the pause (Java's `Cleaner` without access to
    /// the object), never while the object is reachable, and exactly once; at the latest when
    /// the mutator is dropped. A young object's resource is dropped after the young collection
    /// that finds it dead; an old object's only after a full collection. See
    /// [`Mutator::on_collect_handle`] and the guide for exactly when drops run. Panics on a
    /// stale root or a root of another mutator.
    ///
    /// ```
    /// use std::cell::RefCell;
    /// use std::rc::Rc;
    /// use concord::{CollectionKind, Heap, Root};
    ///
    /// #[derive(concord::Trace)]
    /// struct File {
    ///     fd: i32,
    /// }
    ///
    /// struct Fd(i32, Rc<RefCell<Vec<i32>>>);
    /// impl Drop for Fd {
    ///     fn drop(&mut self) {
    ///         self.1.borrow_mut().push(self.0); // close(self.0)
    ///     }
    /// }
    ///
    /// let heap = Heap::builder().heap_size(16 << 20).build()?;
    /// let mut m = heap.attach();
    /// let closed = Rc::new(RefCell::new(Vec::new()));
    /// let open = m.alloc_typed(File { fd: 3 })?;
    /// m.on_collect(open, Fd(3, closed.clone()));
    /// m.scope(|m| -> Result<(), concord::GcError> {
    ///     let f = m.alloc_typed(File { fd: 4 })?;
    ///     m.on_collect(f, Fd(4, closed.clone()));
    ///     Ok(())
    /// })?;
    /// m.collect(CollectionKind::Young);
    /// assert_eq!(*closed.borrow(), [4]); // `open` is still reachable
    /// drop(m); // the mutator goes: every resource it still holds is dropped
    /// assert_eq!(*closed.borrow(), [4, 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[track_caller]
    pub fn on_collect<T: Trace, R: 'static>(&mut self, root: Root<T>, resource: R) {
        let a = self.handle_addr(root.handle);
        self.attach_resource(a, Box::new(resource));
    }
}
