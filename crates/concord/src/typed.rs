//! Typed objects: a Rust struct as the layout of a Concord object, its fields reached by name.
//!
//! ```
//! use concord::typed::Root;
//! use concord::{CollectionKind, GcConfig, Heap, Preset};
//!
//! #[derive(concord::Trace)]
//! struct Node {
//!     left: Option<Root<Node>>, // reference fields: slots 0 and 1
//!     right: Option<Root<Node>>,
//!     key: u64,                 // payload fields: plain data, at offsets fixed at compile time
//!     value: i64,
//! }
//!
//! let mut config = GcConfig::for_preset(Preset::Optimized);
//! config.heap_size = 8 << 20;
//! let heap = Heap::new(config).unwrap();
//! let mut m = heap.attach();
//! let leaf = m.alloc_typed(Node { left: None, right: None, key: 1, value: -1 }).unwrap();
//! let n: Root<Node> = m.alloc_typed(Node { left: Some(leaf), right: None, key: 2, value: -2 }).unwrap();
//! m.collect(CollectionKind::Full);         // objects move; roots follow
//! let v = m.get(n);                         // a NodeView<'_>: borrows `m` shared, like a Gc
//! assert_eq!(v.key(), 2);
//! let l = v.left().unwrap();                // Option<NodeView<'_>>: one load, no handle
//! assert_eq!(l.value(), -1);
//! l.set_value(10);                          // payload setter: one store
//! v.set_right(&m, Some(l));                 // reference setter: slot store + card mark
//! assert_eq!(m.get(n).right().unwrap().value(), 10);
//! let kept: Root<Node> = m.root_typed(l);  // back to a root, to keep it across safepoints
//! ```
//!
//! # Design
//!
//! `#[derive(concord::Trace)]` (crate `concord-derive`) reads the struct's fields at compile
//! time. `Option<Root<T>>` (nullable) and `Root<T>` (never null) fields are reference slots, in
//! declaration order (a never-null field is set from a root, so a struct whose `Root` fields
//! lead back to itself cannot make its first object in safe code: use `Option<Root<T>>` for
//! links that may be absent, as in lists and trees); plain-data fields (`u8`..`u64`, `i8`..`i64`, `usize`, `isize`, `f32`,
//! `f64`, `bool`) are the payload, laid out by decreasing size so each is naturally aligned
//! without padding (the payload starts on a word). It emits:
//!
//! - `unsafe impl Trace for Node`: [`Trace::TYPE`], the [`ObjectType`] constant
//!   (`ObjectType::fixed(refs, payload_bytes)`), [`Trace::LAYOUT`] (each field's slot or
//!   offset), and the constructor glue [`Mutator::alloc_typed`] calls;
//! - `struct NodeView<'m>`, the typed view: per field a getter named after it and a setter
//!   `set_<field>`. A view wraps a [`Gc<'m>`] and obeys the same rule: it borrows the mutator
//!   shared, so it cannot outlive a safepoint (using one after an allocation does not compile).
//!
//! Every accessor calls a `#[doc(hidden)]` unsafe function of `concord::typed::__private`
//! ([`RawView`]) with a slot index or payload offset the derive computed from the same field
//! list as the `ObjectType`: a typed load is one plain load at a constant offset from the
//! object's address, with no header or bounds check.
//!
//! The API:
//!
//! | | |
//! |---|---|
//! | [`Mutator::alloc_typed`]`(Node { .. })` | a new object, all fields set: a [`Root<Node>`] |
//! | [`Mutator::get`]`(root)` | its view, `NodeView<'_>` |
//! | `view.key()`, `view.left()` | a payload value; `Option<NodeView<'_>>` (`NodeView` for `Root<T>`) |
//! | `view.set_key(v)` | a payload store |
//! | `view.set_left(&m, Some(other))` | a reference store with the write barrier |
//! | [`Mutator::root_typed`]`(view)`, [`Mutator::set_root_typed`] | a view back into a new / existing root |
//! | [`Mutator::scope_escape_typed`] | a scope whose result root survives it (the recursive pattern) |
//! | [`Mutator::scope_into`]`(root, \|m\| ..)` | a scope whose result is re-rooted into `root` (the loop pattern) |
//! | [`Mutator::local_scope`] | a scope whose [`Local`]s the borrow checker keeps inside it ([`local`]) |
//! | [`Mutator::global`], [`Mutator::weak`], [`Mutator::on_collect`] | a drop-released root, a weak reference, a native resource owned by an object |
//!
//! # Why unchecked accesses are sound
//!
//! **The typing invariant.** Every object a [`Root<T>`] or a `T` view refers to has `T`'s
//! layout, and each of its reference slots holds null (only for an `Option<Root<U>>` field) or
//! an object of that field's type `U`. It is established when an object is made
//! ([`Mutator::alloc_typed`] writes every field from a `T` value, whose reference fields are
//! `Root<U>`s, so their objects are `U`s), and kept by every store (a setter takes a view of
//! the field's type `U`). The collector moves objects whole, header, slots and payload, and
//! updates every slot and handle, so it keeps it too.
//!
//! **Typed objects never meet the untyped API in safe code.** The untyped API can store any
//! object into any slot (`Mutator::store`, `Mutator::set_ref`) and can borrow a payload as a
//! `&[u8]` (`Gc::payload`, `Mutator::payload`). Either would break a typed access: a `Leaf`
//! stored where a `Node` is declared would make `left().key()` read past the `Leaf`, and a
//! payload setter would write under a live `&[u8]`. So no safe function turns a typed object
//! into a [`Handle`] or a [`Gc`]: [`Root::into_handle`], [`Root::from_handle`] and
//! [`TypedView::as_gc`] are `unsafe`, with this invariant as their contract, and typed slots
//! only ever receive typed objects. (Objects do not cross threads either: handles are checked
//! against their mutator, views are not `Send`, and the heap has no shared roots.)
//!
//! **Lifetimes.** A view is a `Gc<'m>` underneath: everything that can reach a safepoint takes
//! `&mut Mutator`, so no view is alive when an object moves. A [`Root<T>`] is a [`Handle`] with
//! the same stale-handle and foreign-mutator checks, and it never holds null: it is made only
//! from a new object or a view.
//!
//! **Payload setters take the view only** (`view.set_key(v)`, no `&mut Mutator`): getters
//! return values, never references into the object, and (above) no untyped `&[u8]` of a typed
//! object can exist in safe code, so a payload write aliases no live Rust reference. The
//! object is reachable from this thread only (above), so the write races with nothing; it is
//! a plain store, as the collector only runs while every view is gone.
//!
//! **Reference setters take `&Mutator`**, as [`Mutator::store`] does: the slot write and one
//! card byte. They check that the object and the value are of `m`'s heap (a view of another
//! heap would dirty a card outside this one's table); the slot needs no bounds check.
//! [`Mutator::alloc_typed`] builds on [`Mutator::alloc_with`], so it skips the card mark for a
//! TLAB object exactly as that does.
//!
//! **Payload bits.** Every bit pattern is a valid value of every payload type except `bool`,
//! which is read as `byte != 0`; so even an unsafe misuse of a payload cannot make an invalid
//! value. Payloads are little-endian, as for the untyped accessors.
//!
//! What the derive refuses (with a compile error naming the field): Rust references and
//! pointers, `String`, `Vec`, `Box` and anything else that is not one of the plain types or a
//! root (including type aliases of them: the derive sees names), `u128`/`i128` and `char`;
//! generic structs, tuple and unit structs, enums and unions.
//!
//! ```compile_fail
//! #[derive(concord::Trace)]
//! struct Named {
//!     name: String, // error: field `name`: `String` cannot be laid out in a Concord object
//! }
//! ```
//!
//! A reference field's type must be a typed object itself:
//!
//! ```compile_fail,E0277
//! use concord::typed::Root;
//! struct Untyped {
//!     value: u64,
//! }
//! #[derive(concord::Trace)]
//! struct Holder {
//!     inner: Option<Root<Untyped>>, // error: `Untyped` is not a Concord typed object
//! }
//! ```
//!
//! The derive lays fields out by their names, and the generated code uses the primitive
//! itself (`core::primitive::u8`), so an alias named like a primitive does not compile rather
//! than make an 8-byte field of a 1-byte place:
//!
//! ```compile_fail,E0308
//! #[allow(non_camel_case_types)]
//! type u8 = u64;
//! #[derive(concord::Trace)]
//! struct Tricky {
//!     small: u8, // error: expected `u64`, found `u8`
//! }
//! ```
//!
//! A view does not outlive a safepoint:
//!
//! ```compile_fail,E0502
//! # use concord::typed::Root;
//! # use concord::{GcConfig, Heap, Preset};
//! #[derive(concord::Trace)]
//! struct Cell {
//!     next: Option<Root<Cell>>,
//!     value: u64,
//! }
//! # let mut config = GcConfig::for_preset(Preset::Optimized);
//! # config.heap_size = 8 << 20;
//! # let heap = Heap::new(config).unwrap();
//! # let mut m = heap.attach();
//! let c = m.alloc_typed(Cell { next: None, value: 1 }).unwrap();
//! let v = m.get(c);
//! m.alloc_typed(Cell { next: None, value: 2 }).unwrap(); // error: `m` is borrowed by `v`
//! v.value();
//! ```
//!
//! Nor does it go to another thread:
//!
//! ```compile_fail,E0277
//! # use concord::typed::Root;
//! # use concord::{GcConfig, Heap, Preset};
//! # #[derive(concord::Trace)]
//! # struct Cell {
//! #     next: Option<Root<Cell>>,
//! #     value: u64,
//! # }
//! # let mut config = GcConfig::for_preset(Preset::Optimized);
//! # config.heap_size = 8 << 20;
//! # let heap = Heap::new(config).unwrap();
//! # let mut m = heap.attach();
//! let c = m.alloc_typed(Cell { next: None, value: 1 }).unwrap();
//! let v = m.get(c);
//! std::thread::scope(|s| {
//!     s.spawn(move || v.value()); // error: the view is not `Send`
//! });
//! ```
//!
//! Nor does a typed object become a handle without `unsafe`:
//!
//! ```compile_fail,E0133
//! # use concord::typed::Root;
//! # use concord::{GcConfig, Heap, Preset};
//! # #[derive(concord::Trace)]
//! # struct Cell {
//! #     next: Option<Root<Cell>>,
//! #     value: u64,
//! # }
//! # let mut config = GcConfig::for_preset(Preset::Optimized);
//! # config.heap_size = 8 << 20;
//! # let heap = Heap::new(config).unwrap();
//! # let mut m = heap.attach();
//! let c = m.alloc_typed(Cell { next: None, value: 1 }).unwrap();
//! let h = c.into_handle(); // error: call to unsafe function
//! ```

use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroUsize;

pub use concord_derive::Trace;

pub mod local;
mod refs;
pub use local::{IntoRoot, Local, Scope};
pub use refs::{Global, Weak};

use crate::object::raw::{self, slot_addr};
use crate::object::WORD;
use crate::runtime::{Gc, GcError, Handle, Mutator};
use crate::ObjectType;

/// A struct laid out as a Concord object. Implement it with `#[derive(concord::Trace)]`.
///
/// # Safety
///
/// Implementations are written by the derive. A hand-written one must uphold what the derive
/// guarantees: [`Self::TYPE`] has one reference slot per reference field and a payload that
/// holds every payload field; `__refs` returns the reference fields' roots in slot order;
/// `__init_payload` writes each payload field at its offset; and every slot access of the
/// view uses the slot's declared type (see the module documentation's typing invariant).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Concord typed object",
    label = "`{Self}` does not implement `concord::Trace`",
    note = "a reference field `Root<T>` or `Option<Root<T>>` needs `#[derive(concord::Trace)]` on `T`"
)]
pub unsafe trait Trace: Sized + 'static {
    /// The object type: reference slots and payload bytes.
    const TYPE: ObjectType;
    /// Each field's place in the object, in declaration order.
    const LAYOUT: &'static [FieldLayout];
    /// The typed view (`<Name>View<'m>`).
    type View<'m>: TypedView<'m, Target = Self>;
    #[doc(hidden)]
    type __Refs: AsRef<[Option<Handle>]>;
    /// The reference fields' handles, in slot order.
    ///
    /// # Safety
    /// The handles are of typed objects: they may only go to [`Mutator::alloc_with`] for
    /// [`Self::TYPE`] (so that the typing invariant holds).
    #[doc(hidden)]
    unsafe fn __refs(&self) -> Self::__Refs;
    /// Write the payload fields into a new object.
    #[doc(hidden)]
    fn __init_payload(&self, raw: RawView<'_, Self>);
    /// The typed view of a raw view.
    #[doc(hidden)]
    fn __view(raw: RawView<'_, Self>) -> Self::View<'_>;
}

/// Where a field of a typed object lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldPlace {
    /// Reference slot `n` (slot 0 is the word after the header).
    Slot(usize),
    /// `size` bytes at `offset` in the payload (what `Gc::read_u64(offset)` reads).
    Payload {
        /// Bytes from the payload's start.
        offset: usize,
        /// Bytes.
        size: usize,
    },
}

/// One field of a typed object's layout ([`Trace::LAYOUT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FieldLayout {
    /// The field's name.
    pub name: &'static str,
    /// Its slot or payload offset.
    pub place: FieldPlace,
}

/// The place of field `name` of `T`, if it has one.
pub fn field_place<T: Trace>(name: &str) -> Option<FieldPlace> {
    T::LAYOUT.iter().find(|f| f.name == name).map(|f| f.place)
}

/// A typed view: what `#[derive(concord::Trace)]` generates as `<Name>View<'m>`.
pub trait TypedView<'m>: Copy {
    /// The struct this views.
    type Target: Trace;

    #[doc(hidden)]
    fn __raw(self) -> RawView<'m, Self::Target>;

    /// The untyped reference to the same object.
    ///
    /// # Safety
    /// The result must not break the typing invariant of the module documentation: never store
    /// into the object's reference slots through it (`Mutator::store`), never root it in a
    /// handle that is then stored to or loaded from with the untyped API, and hold no
    /// `Gc::payload` slice of it across a typed payload setter. Reading slots and payload
    /// (`Gc::read_u64`, `Gc::get`) is fine.
    unsafe fn as_gc(self) -> Gc<'m> {
        self.__raw().gc
    }
}

/// A typed root: a [`Handle`] to an object of type `T`, valid until the scope that made it
/// ends (the same stale-handle and foreign-mutator checks as a handle), never null.
#[repr(transparent)]
pub struct Root<T> {
    handle: Handle,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for Root<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Root<T> {}

impl<T> PartialEq for Root<T> {
    /// The same root (handle slot), not the same object: see [`Mutator::get`] and `==` on views.
    fn eq(&self, other: &Self) -> bool {
        self.handle == other.handle
    }
}

impl<T> Eq for Root<T> {}

impl<T> Hash for Root<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.handle.hash(state)
    }
}

impl<T> fmt::Debug for Root<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Root<{}>({:?})", std::any::type_name::<T>(), self.handle)
    }
}

impl<T: Trace> Root<T> {
    /// The handle underneath.
    ///
    /// # Safety
    /// The handle must not break the typing invariant of the module documentation: no untyped
    /// store into the object (`set_ref`, `store`) or its payload (`payload_mut`, `write_u64`),
    /// and no `set_handle`/`load_ref_into` into the handle except of objects of type `T`.
    #[inline(always)]
    pub unsafe fn into_handle(self) -> Handle {
        self.handle
    }

    /// A typed root from a handle.
    ///
    /// # Safety
    /// `h` holds an object of `T`'s layout whose reference slots hold objects of their fields'
    /// types (recursively: the whole graph reachable from it is well typed), never null, and
    /// that nobody will store into with the untyped API (see [`Self::into_handle`]).
    #[inline(always)]
    pub unsafe fn from_handle(h: Handle) -> Self {
        Root {
            handle: h,
            _type: PhantomData,
        }
    }

    #[doc(hidden)]
    /// # Safety
    /// As for [`Self::into_handle`] (used by the derive's constructor glue).
    #[inline(always)]
    pub unsafe fn __handle(self) -> Handle {
        self.handle
    }
}

/// What [`Mutator::scope_escape_typed`] can carry out of a scope: a [`Root<T>`] or an
/// `Option<Root<T>>`. Sealed.
pub trait Escape: sealed::Sealed + Sized {
    /// The handle underneath, if any.
    ///
    /// # Safety
    /// As for [`Root::into_handle`]: the handle must not break the typing invariant (unsafe
    /// so that no safe code turns a typed object into a handle).
    #[doc(hidden)]
    unsafe fn __handle(&self) -> Option<Handle>;
    /// The value again, from the handle that now holds its object.
    ///
    /// # Safety
    /// `h` holds what [`Self::__handle`] of a value of this type held (`None` only if that
    /// was `None`).
    #[doc(hidden)]
    unsafe fn __from_handle(h: Option<Handle>) -> Self;
}

impl<T: Trace> sealed::Sealed for Root<T> {}

impl<T: Trace> Escape for Root<T> {
    #[inline(always)]
    unsafe fn __handle(&self) -> Option<Handle> {
        Some(self.handle)
    }

    #[inline(always)]
    unsafe fn __from_handle(h: Option<Handle>) -> Self {
        // SAFETY: the caller's contract: `h` is `Some`, holding this root's object.
        unsafe { Root::from_handle(h.unwrap_unchecked()) }
    }
}

impl<T: Trace> sealed::Sealed for Option<Root<T>> {}

impl<T: Trace> Escape for Option<Root<T>> {
    #[inline(always)]
    unsafe fn __handle(&self) -> Option<Handle> {
        self.map(|r| r.handle)
    }

    #[inline(always)]
    unsafe fn __from_handle(h: Option<Handle>) -> Self {
        // SAFETY: the caller's contract: `h` holds this value's object, if it had one.
        h.map(|h| unsafe { Root::from_handle(h) })
    }
}

/// The untyped core of a typed view: a [`Gc`] known to point to an object of `T`'s layout
/// (the typing invariant). Its accessors take slot indices and payload offsets without checks;
/// only the derive's generated code calls them.
#[doc(hidden)]
pub struct RawView<'m, T> {
    gc: Gc<'m>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for RawView<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RawView<'_, T> {}

/// Same object.
impl<T> PartialEq for RawView<'_, T> {
    fn eq(&self, other: &Self) -> bool {
        self.gc.ptr_eq(other.gc)
    }
}

impl<T> Eq for RawView<'_, T> {}

/// How a view's `Debug` shows a reference slot: the address, or `None`.
#[doc(hidden)]
pub struct SlotDebug(usize);

impl fmt::Debug for SlotDebug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("None"),
            a => write!(f, "{a:#x}"),
        }
    }
}

impl<'m, T: Trace> RawView<'m, T> {
    /// # Safety
    /// `gc` is an object of `T`'s layout and satisfies the typing invariant.
    #[inline(always)]
    unsafe fn new(gc: Gc<'m>) -> Self {
        RawView {
            gc,
            _type: PhantomData,
        }
    }

    /// Address of byte `offset` of the payload (the payload starts after the header and
    /// `T::TYPE.refs()` slots: a constant).
    #[inline(always)]
    fn payload_addr(self, offset: usize) -> usize {
        self.gc.addr() + (1 + T::TYPE.refs()) * WORD + offset
    }

    /// The object in reference slot `slot`, as a view of `U`.
    ///
    /// # Safety
    /// `slot` is a reference field of `T` declared `Option<Root<U>>` or `Root<U>`.
    #[inline(always)]
    pub unsafe fn __slot<U: Trace>(self, slot: usize) -> Option<U::View<'m>> {
        debug_assert!(slot < T::TYPE.refs());
        // SAFETY: the slot is inside the object (the caller's contract); nothing moves while
        // `'m` lasts; by the typing invariant it holds 0 or an object of `U`'s layout.
        unsafe {
            Gc::from_word(raw::load(slot_addr(self.gc.addr(), slot)))
                .map(|g| U::__view(RawView::new(g)))
        }
    }

    /// The object in reference slot `slot`, never null, as a view of `U`.
    ///
    /// # Safety
    /// `slot` is a reference field of `T` declared `Root<U>`.
    #[inline(always)]
    pub unsafe fn __slot_non_null<U: Trace>(self, slot: usize) -> U::View<'m> {
        // SAFETY: as in `__slot`; a `Root<U>` field is set from a root at allocation and only
        // ever stored a view since, so it is never null.
        unsafe { self.__slot::<U>(slot).unwrap_unchecked() }
    }

    /// Store `value` into reference slot `slot`, with the write barrier. Panics if the object
    /// or the value belongs to another heap than `m`'s.
    ///
    /// # Safety
    /// `slot` is a reference field of `T` declared `Option<Root<U>>`, or `Root<U>` and `value`
    /// is `Some`.
    #[inline(always)]
    #[track_caller]
    pub unsafe fn __store<U: Trace>(
        self,
        m: &Mutator<'_>,
        slot: usize,
        value: Option<RawView<'_, U>>,
    ) {
        debug_assert!(slot < T::TYPE.refs());
        let o = m.own(self.gc);
        let v = match value {
            Some(v) => m.own(v.gc),
            None => 0,
        };
        // SAFETY: `o` is a live object of `m`'s heap (checked), `slot` one of its slots (the
        // caller's contract), `v` 0 or a live object of `m`'s heap (checked) of type `U`, as
        // the slot declares, so the typing invariant holds after the store.
        unsafe { m.store_slot(o, slot, v) };
    }

    /// The payload field of type `P` at `offset`.
    ///
    /// # Safety
    /// `offset` is a payload field of `T` of type `P` (so in bounds and aligned).
    #[inline(always)]
    pub unsafe fn __read<P: Plain>(self, offset: usize) -> P {
        debug_assert!(offset + std::mem::size_of::<P>() <= T::TYPE.payload_bytes());
        // SAFETY: in bounds and aligned (the caller's contract); nothing moves while `'m` lasts.
        unsafe { P::read(self.payload_addr(offset) as *const u8) }
    }

    /// Write the payload field of type `P` at `offset`.
    ///
    /// # Safety
    /// As for [`Self::__read`].
    #[inline(always)]
    pub unsafe fn __write<P: Plain>(self, offset: usize, v: P) {
        debug_assert!(offset + std::mem::size_of::<P>() <= T::TYPE.payload_bytes());
        // SAFETY: in bounds and aligned (the caller's contract). No Rust reference covers the
        // payload of a typed object (views' getters return values, and no safe code gets an
        // untyped `&[u8]` of it: see the module documentation), and the object is reachable
        // from this thread only, so the write aliases nothing and races with nothing.
        unsafe { P::write(self.payload_addr(offset) as *mut u8, v) }
    }

    /// What slot `slot` holds, for `Debug`. Panics if `slot` is not one of `T`'s slots.
    pub fn __slot_addr(self, slot: usize) -> SlotDebug {
        assert!(slot < T::TYPE.refs(), "slot {slot} out of bounds");
        // SAFETY: the slot is inside the object (checked); nothing moves while `'m` lasts.
        SlotDebug(unsafe { raw::load(slot_addr(self.gc.addr(), slot)) })
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A payload field type: plain data, stored little-endian.
///
/// # Safety
/// Sealed: implemented here for the types the derive accepts.
#[doc(hidden)]
pub unsafe trait Plain: Copy + sealed::Sealed {
    /// # Safety
    /// `p` is valid for reading `size_of::<Self>()` bytes and aligned for `Self`.
    unsafe fn read(p: *const u8) -> Self;
    /// # Safety
    /// `p` is valid for writing `size_of::<Self>()` bytes, aligned for `Self`, and no
    /// reference covers them.
    unsafe fn write(p: *mut u8, v: Self);
}

macro_rules! plain_ints {
    ($($t:ty)*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: every bit pattern is a valid integer.
        unsafe impl Plain for $t {
            #[inline(always)]
            unsafe fn read(p: *const u8) -> Self {
                // SAFETY: the caller's contract.
                <$t>::from_le(unsafe { (p as *const $t).read() })
            }
            #[inline(always)]
            unsafe fn write(p: *mut u8, v: Self) {
                // SAFETY: the caller's contract.
                unsafe { (p as *mut $t).write(v.to_le()) }
            }
        }
    )*};
}

plain_ints!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);

macro_rules! plain_floats {
    ($($t:ty: $bits:ty)*) => {$(
        impl sealed::Sealed for $t {}
        // SAFETY: every bit pattern is a valid float.
        unsafe impl Plain for $t {
            #[inline(always)]
            unsafe fn read(p: *const u8) -> Self {
                // SAFETY: the caller's contract.
                <$t>::from_bits(unsafe { <$bits as Plain>::read(p) })
            }
            #[inline(always)]
            unsafe fn write(p: *mut u8, v: Self) {
                // SAFETY: the caller's contract.
                unsafe { <$bits as Plain>::write(p, v.to_bits()) }
            }
        }
    )*};
}

plain_floats!(f32: u32 f64: u64);

impl sealed::Sealed for bool {}
// SAFETY: read as a byte, any byte is a valid result (`byte != 0`).
unsafe impl Plain for bool {
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: the caller's contract.
        unsafe { p.read() != 0 }
    }
    #[inline(always)]
    unsafe fn write(p: *mut u8, v: Self) {
        // SAFETY: the caller's contract.
        unsafe { p.write(u8::from(v)) }
    }
}

/// What the derive's generated code uses; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use super::{Plain, RawView, SlotDebug};
    use super::{Trace, TypedView};

    /// The raw view of a typed view (a function, so generated code needs no trait in scope).
    #[inline(always)]
    pub fn raw_of<'a, T: Trace>(v: T::View<'a>) -> RawView<'a, T> {
        v.__raw()
    }

    /// Fails to compile, at the field's type, unless `T` is a typed object.
    #[inline(always)]
    pub fn assert_trace<T: Trace>() {}
}

impl Mutator<'_> {
    /// Allocate a typed object with every field set from `value`: a constructor. Built on
    /// [`Mutator::alloc_with`] (no card mark for a TLAB object), then one store per payload
    /// field. Panics on a stale root or a root of another mutator in `value`.
    #[inline(always)]
    #[track_caller]
    pub fn alloc_typed<T: Trace>(&mut self, value: T) -> Result<Root<T>, GcError> {
        // SAFETY: the handles go to `alloc_with` for `T::TYPE`, in slot order: each slot gets
        // an object of its declared type (a root's), so the new object is well typed.
        let refs = unsafe { value.__refs() };
        let a = self.alloc_with_addr(T::TYPE, refs.as_ref())?;
        // SAFETY: `a` is the new object (not null), of `T::TYPE`, its slots set above; the
        // payload is written next, before anything can read it, and nothing reaches a
        // safepoint before the object is rooted below.
        let raw = unsafe { RawView::<T>::new(Gc::from_addr(NonZeroUsize::new_unchecked(a))) };
        value.__init_payload(raw);
        // SAFETY: the handle holds the new, well-typed object, and is not exposed untyped.
        Ok(unsafe { Root::from_handle(self.push_handle(a)) })
    }

    /// The typed view of `root`'s object, valid until the mutator is next borrowed `&mut` (as
    /// [`Mutator::view`]). Panics on a stale root or a root of another mutator.
    #[inline(always)]
    #[track_caller]
    pub fn get<T: Trace>(&self, root: Root<T>) -> T::View<'_> {
        // SAFETY: a root holds an object of `T`'s layout, never null (the typing invariant:
        // roots are made from new objects and views, and their handles are never exposed).
        T::__view(unsafe { RawView::new(self.view(root.handle).unwrap_unchecked()) })
    }

    /// A new root holding `view`'s object, so it survives the next safepoint. Panics if the
    /// view belongs to another heap.
    #[inline]
    #[track_caller]
    pub fn root_typed<'m, V: TypedView<'m>>(&self, view: V) -> Root<V::Target> {
        // SAFETY: the view's object has `V::Target`'s layout (the typing invariant).
        unsafe { Root::from_handle(self.root(view.__raw().gc)) }
    }

    /// Make the existing root `dst` hold `view`'s object (no new handle). Panics on a stale
    /// root, a root of another mutator, or a view of another heap.
    #[inline]
    #[track_caller]
    pub fn set_root_typed<'m, V: TypedView<'m>>(&self, dst: Root<V::Target>, view: V) {
        self.set_root(dst.handle, Some(view.__raw().gc));
    }

    /// The loop helper: run `f` in a scope and make `dst` (a root of an enclosing scope) hold
    /// the object of the root `f` returns; every other handle `f` made is released. One call
    /// per iteration keeps the handle stack as it was before the loop, whatever the count. `f`
    /// may fail with any error type; then `dst` is left as it was. Polls for a safepoint.
    ///
    /// ```
    /// # use concord::{GcError, Heap, Root};
    /// #[derive(concord::Trace)]
    /// struct Cell {
    ///     next: Option<Root<Cell>>,
    ///     value: u64,
    /// }
    ///
    /// let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
    /// let mut m = heap.attach();
    /// let head = m.alloc_typed(Cell { next: None, value: 0 }).unwrap();
    /// for i in 1..10_000 {
    ///     m.scope_into(head, |m| m.alloc_typed(Cell { next: Some(head), value: i }))
    ///         .unwrap();
    /// }
    /// assert_eq!(m.get(head).value(), 9_999);
    /// assert_eq!(m.handle_count(), 1);
    /// ```
    #[inline]
    #[track_caller]
    pub fn scope_into<T: Trace, E>(
        &mut self,
        dst: Root<T>,
        f: impl FnOnce(&mut Self) -> Result<Root<T>, E>,
    ) -> Result<(), E> {
        let scope = self.open_scope();
        let r = f(scope.m);
        let kept = r.map(|root| scope.m.addr(root.handle));
        scope.end();
        // `dst` is checked after the release: a root of the scope that just ended is stale.
        kept.map(|a| self.write_handle(dst.handle, a))
    }

    /// Like [`Mutator::scope_escape`], for typed roots: `f` runs in a scope whose handles are
    /// released when it returns, except the root it returns (a [`Root<T>`], or an
    /// `Option<Root<T>>`), which survives as a new root of the enclosing scope. `f` may fail
    /// with any error type; on an error every handle of the scope is released. Polls for a
    /// safepoint.
    ///
    /// The recursive pattern it is made for, one scope per level so the handle stack stays
    /// as deep as the recursion:
    ///
    /// ```
    /// # use concord::typed::Root;
    /// # use concord::{GcError, Heap, Mutator};
    /// #[derive(concord::Trace)]
    /// struct Node {
    ///     left: Option<Root<Node>>,
    ///     right: Option<Root<Node>>,
    /// }
    ///
    /// fn tree(m: &mut Mutator<'_>, depth: u32) -> Result<Root<Node>, GcError> {
    ///     if depth == 0 {
    ///         return m.alloc_typed(Node { left: None, right: None });
    ///     }
    ///     m.scope_escape_typed(|m| {
    ///         let (l, r) = (tree(m, depth - 1)?, tree(m, depth - 1)?);
    ///         m.alloc_typed(Node { left: Some(l), right: Some(r) })
    ///     })
    /// }
    ///
    /// let heap = Heap::builder().heap_size(8 << 20).build().unwrap();
    /// let mut m = heap.attach();
    /// let before = m.handle_count();
    /// let t = tree(&mut m, 10).unwrap();
    /// assert_eq!(m.handle_count(), before + 1); // the tree's root only
    /// assert!(m.get(t).left().is_some());
    /// ```
    #[inline]
    #[track_caller]
    pub fn scope_escape_typed<R: Escape, E>(
        &mut self,
        f: impl FnOnce(&mut Self) -> Result<R, E>,
    ) -> Result<R, E> {
        // SAFETY: the handle is only read here, and re-rooted below as the same type.
        let (_, kept) = self.scope_keeping(f, |r| unsafe { r.__handle() })?;
        // SAFETY: the new handle holds what the root `f` returned held.
        Ok(unsafe { R::__from_handle(kept) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CollectionKind, GcConfig, Heap, Preset};

    #[derive(crate::Trace)]
    struct Mixed {
        next: Option<Root<Mixed>>,
        flag: bool,
        small: u16,
        big: u64,
        ratio: f32,
        other: Root<Leaf>,
        signed: i8,
        wide: f64,
    }

    #[derive(crate::Trace)]
    struct Leaf {
        value: i32,
    }

    #[derive(crate::Trace)]
    struct Empty {}

    fn heap() -> Heap {
        let mut config = GcConfig::for_preset(Preset::Optimized);
        config.heap_size = 16 << 20;
        config.gc_threads = 1;
        Heap::new(config).unwrap()
    }

    #[test]
    fn layout_is_refs_in_order_then_payload_by_size() {
        assert_eq!(Mixed::TYPE.refs(), 2);
        assert_eq!(Mixed::TYPE.payload_bytes(), 8 + 8 + 4 + 2 + 1 + 1);
        assert_eq!(field_place::<Mixed>("next"), Some(FieldPlace::Slot(0)));
        assert_eq!(field_place::<Mixed>("other"), Some(FieldPlace::Slot(1)));
        let at = |n| match field_place::<Mixed>(n) {
            Some(FieldPlace::Payload { offset, size }) => (offset, size),
            p => panic!("{n}: {p:?}"),
        };
        assert_eq!(at("big"), (0, 8));
        assert_eq!(at("wide"), (8, 8));
        assert_eq!(at("ratio"), (16, 4));
        assert_eq!(at("small"), (20, 2));
        assert_eq!(at("flag"), (22, 1));
        assert_eq!(at("signed"), (23, 1));
        assert_eq!(Leaf::TYPE.payload_bytes(), 4);
        assert_eq!(Empty::TYPE.size_bytes(), 8);
        assert_eq!(Mixed::LAYOUT.len(), 8);
    }

    #[test]
    fn fields_round_trip_through_collections() {
        let heap = heap();
        let mut m = heap.attach();
        let leaf = m.alloc_typed(Leaf { value: -7 }).unwrap();
        let a = m
            .alloc_typed(Mixed {
                next: None,
                flag: true,
                small: 65535,
                big: u64::MAX - 1,
                ratio: 0.5,
                other: leaf,
                signed: -128,
                wide: -2.25,
            })
            .unwrap();
        let b = m
            .alloc_typed(Mixed {
                next: Some(a),
                flag: false,
                small: 1,
                big: 2,
                ratio: 3.0,
                other: leaf,
                signed: 4,
                wide: 5.0,
            })
            .unwrap();
        m.alloc_typed(Empty {}).unwrap();
        for kind in [
            CollectionKind::Young,
            CollectionKind::Full,
            CollectionKind::Young,
        ] {
            m.collect(kind);
            m.verify_heap().unwrap();
            let v = m.get(b);
            let n = v.next().unwrap();
            assert!(n.flag() && !v.flag());
            assert_eq!((n.small(), n.big(), n.ratio()), (65535, u64::MAX - 1, 0.5));
            assert_eq!((n.signed(), n.wide()), (-128, -2.25));
            assert_eq!(n.other().value(), -7);
            assert!(n.other() == v.other());
            assert!(n.next().is_none());
            assert_eq!(v.big(), 2);
        }
        // Setters, then a collection.
        let v = m.get(b);
        v.set_big(99);
        v.set_flag(true);
        v.set_next(&m, None);
        let other = m.alloc_typed(Leaf { value: 11 }).unwrap();
        let v = m.get(b);
        v.set_other(&m, m.get(other));
        m.collect(CollectionKind::Full);
        let v = m.get(b);
        assert_eq!((v.big(), v.flag(), v.other().value()), (99, true, 11));
        assert!(v.next().is_none());
        let s = format!("{v:?}");
        assert!(
            s.starts_with("Mixed { next: None, flag: true, small: 1, big: 99"),
            "{s}"
        );
    }

    #[test]
    fn roots_made_from_views_follow_moves() {
        let heap = heap();
        let mut m = heap.attach();
        let leaf = m.alloc_typed(Leaf { value: 3 }).unwrap();
        let a = m
            .alloc_typed(Mixed {
                next: None,
                flag: false,
                small: 0,
                big: 0,
                ratio: 0.0,
                other: leaf,
                signed: 0,
                wide: 0.0,
            })
            .unwrap();
        let other = m.root_typed(m.get(a).other());
        let dst = m.alloc_typed(Leaf { value: 0 }).unwrap();
        m.set_root_typed(dst, m.get(other));
        m.collect(CollectionKind::Young);
        assert_eq!(m.get(dst).value(), 3);
        let kept = m
            .scope_escape_typed(|m| {
                let l = m.alloc_typed(Leaf { value: 42 })?;
                m.alloc_typed(Leaf { value: 1 })?;
                Ok::<_, GcError>(l)
            })
            .unwrap();
        m.collect(CollectionKind::Full);
        assert_eq!(m.get(kept).value(), 42);
    }

    #[test]
    #[should_panic(expected = "stale handle")]
    fn a_stale_root_panics() {
        let heap = heap();
        let mut m = heap.attach();
        let r = m.scope(|m| m.alloc_typed(Leaf { value: 1 }).unwrap());
        m.get(r);
    }

    #[test]
    #[should_panic(expected = "not an object of this mutator's heap")]
    fn a_store_of_another_heaps_view_panics() {
        let h1 = heap();
        let h2 = heap();
        let mut m1 = h1.attach();
        let mut m2 = h2.attach();
        let l1 = m1.alloc_typed(Leaf { value: 1 }).unwrap();
        let l2 = m2.alloc_typed(Leaf { value: 2 }).unwrap();
        let a = m1
            .alloc_typed(Mixed {
                next: None,
                flag: false,
                small: 0,
                big: 0,
                ratio: 0.0,
                other: l1,
                signed: 0,
                wide: 0.0,
            })
            .unwrap();
        m1.get(a).set_other(&m1, m2.get(l2));
    }
}
