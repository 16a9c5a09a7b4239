//! [`Gc`]: a direct reference to an object that costs nothing to make, copy or follow, valid
//! until its mutator can next reach a safepoint.
//!
//! A [`crate::Handle`] survives collections because the collector updates the handle stack it
//! indexes; that costs a push per reference and an index and owner check per use. Most
//! references in a program live only between two safepoints (a traversal, a lookup, the
//! arguments of one store), and those need no root at all: nothing can move while the mutator
//! cannot reach a safepoint. A `Gc<'m>` is such a reference. It is made from a handle with
//! [`crate::Mutator::view`] and borrows the mutator *shared* for `'m`; every operation that can
//! reach a safepoint (allocation, a scope, a poll, `blocking`, `collect`) takes the mutator
//! `&mut`, so the borrow checker ends every `Gc` before the objects it points to can move. A
//! use after a possible safepoint is therefore a compile error, not a check at run time.
//!
//! Following a reference ([`Gc::get`]) is one header load for the bounds check and one slot
//! load; reading a payload field is one header load and one load. Stores go through the
//! mutator ([`crate::Mutator::store`]), which owns the write barrier. To keep a reference
//! across a safepoint, root it in a handle ([`crate::Mutator::root`]).

use std::fmt;
use std::marker::PhantomData;
use std::num::NonZeroUsize;

use crate::object::raw::{self, slot_addr};
use crate::object::{Header, ObjectKind};

/// A direct reference to a live object, valid while its mutator is borrowed shared (`'m`).
///
/// `Copy`, one word, never null (an absent reference is `Option<Gc>`, also one word). Not
/// `Send`: it belongs to the thread whose mutator it borrows.
///
/// Reading a tree through views, then keeping one node across an allocation in a handle:
///
/// ```
/// use concord::{Gc, GcConfig, Heap, ObjectType, Preset};
///
/// const NODE: ObjectType = ObjectType::fixed(2, 8); // left, right, a u64
///
/// fn sum(n: Gc<'_>) -> u64 {
///     n.read_u64(0) + n.get(0).map_or(0, sum) + n.get(1).map_or(0, sum)
/// }
///
/// let mut config = GcConfig::for_preset(Preset::Optimized);
/// config.heap_size = 8 << 20;
/// let heap = Heap::new(config).unwrap();
/// let mut m = heap.attach();
/// let l = m.alloc(NODE).unwrap();
/// m.write_u64(l, 0, 2);
/// let r = m.alloc(NODE).unwrap();
/// m.write_u64(r, 0, 3);
/// let root = m.alloc_with(NODE, &[Some(l), Some(r)]).unwrap();
/// m.write_u64(root, 0, 1);
/// assert_eq!(sum(m.view(root).unwrap()), 6);
///
/// let left = m.root(m.view(root).unwrap().get(0).unwrap()); // a handle: survives safepoints
/// m.alloc(NODE).unwrap(); // may collect
/// assert_eq!(m.view(left).unwrap().read_u64(0), 2);
/// ```
///
/// Using a view after something that may reach a safepoint does not compile, because its
/// object may have moved:
///
/// ```compile_fail,E0502
/// # use concord::{GcConfig, Heap, ObjectType, Preset};
/// # const NODE: ObjectType = ObjectType::fixed(2, 8);
/// # let mut config = GcConfig::for_preset(Preset::Optimized);
/// # config.heap_size = 8 << 20;
/// # let heap = Heap::new(config).unwrap();
/// # let mut m = heap.attach();
/// let h = m.alloc(NODE).unwrap();
/// let g = m.view(h).unwrap();
/// m.alloc(NODE).unwrap(); // error: `m` is borrowed shared by `g`
/// g.get(0);
/// ```
///
/// Nor does letting one out of the scope whose end may be a safepoint:
///
/// ```compile_fail
/// # use concord::{GcConfig, Heap, ObjectType, Preset};
/// # const NODE: ObjectType = ObjectType::fixed(2, 8);
/// # let mut config = GcConfig::for_preset(Preset::Optimized);
/// # config.heap_size = 8 << 20;
/// # let heap = Heap::new(config).unwrap();
/// # let mut m = heap.attach();
/// let h = m.alloc(NODE).unwrap();
/// let g = m.scope(|m| m.view(h).unwrap()); // error: the view borrows the scope's mutator
/// g.get(0);
/// ```
///
/// Nor sending one to another thread:
///
/// ```compile_fail,E0277
/// # use concord::{GcConfig, Heap, ObjectType, Preset};
/// # const NODE: ObjectType = ObjectType::fixed(2, 8);
/// # let mut config = GcConfig::for_preset(Preset::Optimized);
/// # config.heap_size = 8 << 20;
/// # let heap = Heap::new(config).unwrap();
/// # let mut m = heap.attach();
/// let h = m.alloc(NODE).unwrap();
/// let g = m.view(h).unwrap();
/// std::thread::scope(|s| {
///     s.spawn(move || g.get(0)); // error: `Gc` is not `Send`
/// });
/// ```
#[derive(Clone, Copy)]
pub struct Gc<'m> {
    addr: NonZeroUsize,
    /// Ties the reference to a shared borrow of its mutator, and keeps it on its thread.
    _mutator: PhantomData<(&'m (), *const ())>,
}

impl<'m> Gc<'m> {
    /// A reference to the object at `addr`.
    ///
    /// # Safety
    /// `addr` is a live object of the heap of a mutator that stays borrowed shared for `'m`
    /// (so it cannot reach a safepoint while the reference lives).
    #[inline(always)]
    pub(crate) unsafe fn from_addr(addr: NonZeroUsize) -> Self {
        Gc {
            addr,
            _mutator: PhantomData,
        }
    }

    /// A reference from a slot or handle value (0 = null).
    ///
    /// # Safety
    /// As for [`Self::from_addr`], for a nonzero `word`.
    #[inline(always)]
    pub(crate) unsafe fn from_word(word: usize) -> Option<Self> {
        // SAFETY: forwarded from the caller.
        NonZeroUsize::new(word).map(|a| unsafe { Self::from_addr(a) })
    }

    /// The object's address (what a slot or handle holding it contains).
    #[inline(always)]
    pub(crate) fn addr(self) -> usize {
        self.addr.get()
    }

    #[inline(always)]
    fn header(self) -> Header {
        // SAFETY: a `Gc` points to a live object that cannot move while it lives.
        unsafe { raw::header(self.addr()) }
    }

    /// Reference slot `slot`, bounds-checked against the object's header (`None` for null).
    #[inline]
    #[track_caller]
    pub fn get(self, slot: usize) -> Option<Gc<'m>> {
        let refs = self.header().ref_count();
        if slot >= refs {
            slot_out_of_bounds(slot, refs);
        }
        // SAFETY: the slot is one of the object's reference slots, which hold 0 or a live
        // object of the same heap; nothing moves while `'m` lasts.
        unsafe { Gc::from_word(raw::load(slot_addr(self.addr(), slot))) }
    }

    /// Number of reference slots.
    #[inline]
    pub fn ref_count(self) -> usize {
        self.header().ref_count()
    }

    /// What kind of object this is.
    #[inline]
    pub fn kind(self) -> ObjectKind {
        self.header().kind()
    }

    /// Elements of an array (0 for fixed objects).
    #[inline]
    pub fn array_len(self) -> usize {
        self.header().array_len()
    }

    /// Application tag of a fixed object (0 for arrays).
    #[inline]
    pub fn tag(self) -> u16 {
        self.header().tag()
    }

    /// The payload bytes (a fixed object's payload, or a byte array's elements).
    #[inline]
    pub fn payload(self) -> &'m [u8] {
        let h = self.header();
        // SAFETY: the payload lies inside the object, which cannot move or be written through
        // `&mut` payload access while the mutator is borrowed shared for `'m` (payload writes
        // take the mutator `&mut`; reference stores never touch payload bytes).
        unsafe {
            std::slice::from_raw_parts(
                (self.addr() + h.payload_offset()) as *const u8,
                h.payload_bytes(),
            )
        }
    }

    /// Little-endian `u64` at `offset` in the payload, bounds-checked.
    #[inline]
    #[track_caller]
    pub fn read_u64(self, offset: usize) -> u64 {
        let a = self.payload_field(offset, 8);
        // SAFETY: the 8 bytes are inside the payload (checked); any bits are a valid u64.
        u64::from_le(unsafe { (a as *const u64).read_unaligned() })
    }

    /// Little-endian `u32` at `offset` in the payload, bounds-checked.
    #[inline]
    #[track_caller]
    pub fn read_u32(self, offset: usize) -> u32 {
        let a = self.payload_field(offset, 4);
        // SAFETY: the 4 bytes are inside the payload (checked); any bits are a valid u32.
        u32::from_le(unsafe { (a as *const u32).read_unaligned() })
    }

    /// `f64` at `offset` in the payload, bounds-checked.
    #[inline]
    #[track_caller]
    pub fn read_f64(self, offset: usize) -> f64 {
        f64::from_bits(self.read_u64(offset))
    }

    /// Whether `self` and `other` are the same object.
    #[inline(always)]
    pub fn ptr_eq(self, other: Gc<'_>) -> bool {
        self.addr == other.addr
    }

    /// Address of `len` payload bytes at `offset`, after checking they lie in the payload.
    #[inline(always)]
    #[track_caller]
    fn payload_field(self, offset: usize, len: usize) -> usize {
        checked_payload_field(self.addr(), self.header(), offset, len)
    }
}

impl fmt::Debug for Gc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Gc({:#x})", self.addr())
    }
}

/// Same object (identity, as `==` on Java references).
impl PartialEq for Gc<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}

impl Eq for Gc<'_> {}

/// The panic of an out-of-bounds reference slot (out of line: the check's fast path is one
/// comparison).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn slot_out_of_bounds(slot: usize, refs: usize) -> ! {
    panic!("reference slot {slot} out of bounds ({refs} slots)")
}

/// Address of `len` payload bytes at `offset` of the object at `obj` with header `h`, after
/// checking they lie in its payload (the one bounds check of every payload accessor, through a
/// `Gc` or a handle).
#[inline(always)]
#[track_caller]
pub(crate) fn checked_payload_field(obj: usize, h: Header, offset: usize, len: usize) -> usize {
    let bytes = h.payload_bytes();
    if offset > bytes || bytes - offset < len {
        payload_out_of_bounds(offset, len, bytes);
    }
    obj + h.payload_offset() + offset
}

/// The panic of an out-of-bounds payload access.
#[cold]
#[inline(never)]
#[track_caller]
fn payload_out_of_bounds(offset: usize, len: usize, bytes: usize) -> ! {
    panic!(
        "payload access {offset}..{} out of bounds ({bytes} bytes)",
        offset.saturating_add(len)
    )
}
