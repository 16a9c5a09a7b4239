//! Object model: one header word per object, then reference slots, then payload.
//!
//! ```text
//! word 0   header (bit layout below)
//! word 1.. reference slots (fixed objects: `refs`; reference arrays: `length`; byte arrays: none)
//! then     payload bytes, rounded up to whole words (fixed objects and byte arrays)
//! ```
//!
//! Header bits (a [`Header`]):
//!
//! ```text
//! bits 0-1   tag: 00 = object header, 11 = forwarded (bits 3.. hold the forwardee address)
//! bits 2-5   age (number of scavenges survived, 0..=15)
//! bits 6-7   kind: 0 = fixed object, 1 = reference array, 2 = byte array
//! fixed:     bits 8-23 reference slots, bits 24-47 payload bytes, bits 48-63 user type tag
//! arrays:    bits 8-63 length (elements)
//! ```
//!
//! Objects are word aligned, so a forwarded header `addr | 0b11` is unambiguous. Because the
//! layout lives in the header, the size of a forwarded object is read from its forwardee (a copy
//! keeps the layout bits); the full collector never forwards through headers (it computes new
//! addresses from its mark bitmap), so headers stay intact there.

use std::fmt;

/// Bytes per heap word.
pub const WORD: usize = 8;

const TAG_MASK: u64 = 0b11;
const TAG_FORWARDED: u64 = 0b11;
const AGE_SHIFT: u32 = 2;
const AGE_MASK: u64 = 0b1111 << AGE_SHIFT;
const KIND_SHIFT: u32 = 6;
const KIND_MASK: u64 = 0b11 << KIND_SHIFT;
const REFS_SHIFT: u32 = 8;
const REFS_BITS: u32 = 16;
const PAYLOAD_SHIFT: u32 = 24;
const PAYLOAD_BITS: u32 = 24;
const TAG_SHIFT: u32 = 48;
const LEN_SHIFT: u32 = 8;

/// Largest age a header can hold (HotSpot's `markWord::max_age`).
pub const MAX_AGE: u32 = 15;
/// Largest number of reference slots of a fixed object.
pub const MAX_FIXED_REFS: usize = (1 << REFS_BITS) - 1;
/// Largest payload of a fixed object, bytes.
pub const MAX_FIXED_PAYLOAD: usize = (1 << PAYLOAD_BITS) - 1;
/// Largest array length the header can encode.
pub const MAX_ARRAY_LEN: usize = (1 << (64 - LEN_SHIFT)) - 1;

/// What an object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum ObjectKind {
    /// A fixed number of reference slots followed by payload bytes.
    Fixed,
    /// `length` reference slots.
    RefArray,
    /// `length` bytes.
    ByteArray,
}

/// The shape of a fixed object: reference slots, payload bytes and an application type tag.
///
/// Build it once (e.g. in a `const` or a `static`) and allocate many objects from it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ObjectType {
    header: Header,
}

/// A requested object shape the header cannot encode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// Too many reference slots for a fixed object.
    #[error("a fixed object may have at most {max} reference slots, {requested} requested; use a reference array")]
    TooManyRefs {
        /// What was asked for.
        requested: usize,
        /// The limit.
        max: usize,
    },
    /// Payload too large for a fixed object.
    #[error("a fixed object may carry at most {max} payload bytes, {requested} requested; use a byte array")]
    PayloadTooLarge {
        /// What was asked for.
        requested: usize,
        /// The limit.
        max: usize,
    },
    /// Array too long for the header's length field.
    #[error("arrays may have at most {max} elements, {requested} requested")]
    ArrayTooLong {
        /// What was asked for.
        requested: usize,
        /// The limit.
        max: usize,
    },
}

impl ObjectType {
    /// A fixed object type with `refs` reference slots and `payload_bytes` bytes of payload.
    pub fn new(refs: usize, payload_bytes: usize) -> Result<Self, LayoutError> {
        if refs > MAX_FIXED_REFS {
            return Err(LayoutError::TooManyRefs {
                requested: refs,
                max: MAX_FIXED_REFS,
            });
        }
        if payload_bytes > MAX_FIXED_PAYLOAD {
            return Err(LayoutError::PayloadTooLarge {
                requested: payload_bytes,
                max: MAX_FIXED_PAYLOAD,
            });
        }
        Ok(Self {
            header: Header::fixed(refs as u32, payload_bytes as u32, 0),
        })
    }

    /// A fixed object type usable in `const` context; `payload_bytes` is limited to `u16`.
    pub const fn fixed(refs: u16, payload_bytes: u16) -> Self {
        Self {
            header: Header::fixed(refs as u32, payload_bytes as u32, 0),
        }
    }

    /// The same shape carrying an application-defined type tag (readable with `Mutator::tag`).
    pub const fn with_tag(self, tag: u16) -> Self {
        Self {
            header: Header::fixed(self.header.fixed_refs(), self.header.fixed_payload(), tag),
        }
    }

    /// Number of reference slots.
    pub const fn refs(&self) -> usize {
        self.header.fixed_refs() as usize
    }

    /// Payload bytes.
    pub const fn payload_bytes(&self) -> usize {
        self.header.fixed_payload() as usize
    }

    /// Application type tag.
    pub const fn tag(&self) -> u16 {
        self.header.fixed_tag()
    }

    /// Size of one object of this type in the heap, bytes (header included).
    pub const fn size_bytes(&self) -> usize {
        self.header.size_words() * WORD
    }

    pub(crate) const fn header(&self) -> Header {
        self.header
    }
}

impl fmt::Debug for ObjectType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectType")
            .field("refs", &self.refs())
            .field("payload_bytes", &self.payload_bytes())
            .field("tag", &self.tag())
            .finish()
    }
}

/// An object header word. See the module documentation for the bit layout.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Header(pub(crate) u64);

impl Header {
    /// Header of a fresh fixed object.
    pub const fn fixed(refs: u32, payload_bytes: u32, tag: u16) -> Self {
        Header(
            ((refs as u64) << REFS_SHIFT)
                | ((payload_bytes as u64) << PAYLOAD_SHIFT)
                | ((tag as u64) << TAG_SHIFT),
        )
    }

    /// Header of a fresh reference array.
    pub const fn ref_array(len: usize) -> Self {
        Header((1 << KIND_SHIFT) | ((len as u64) << LEN_SHIFT))
    }

    /// Header of a fresh byte array.
    pub const fn byte_array(len: usize) -> Self {
        Header((2 << KIND_SHIFT) | ((len as u64) << LEN_SHIFT))
    }

    /// A header that forwards to `to` (which must be word aligned).
    pub const fn forwarding(to: usize) -> Self {
        Header(to as u64 | TAG_FORWARDED)
    }

    /// The raw word.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// Whether this header is a forwarding pointer.
    #[inline(always)]
    pub const fn is_forwarded(self) -> bool {
        self.0 & TAG_MASK == TAG_FORWARDED
    }

    /// The forwardee's address (only meaningful if [`Self::is_forwarded`]).
    #[inline(always)]
    pub const fn forwardee(self) -> usize {
        (self.0 & !TAG_MASK) as usize
    }

    /// Whether the tag bits describe a plain object header.
    pub const fn is_object(self) -> bool {
        self.0 & TAG_MASK == 0 && (self.0 & KIND_MASK) >> KIND_SHIFT != 3
    }

    /// Number of scavenges this object survived.
    #[inline(always)]
    pub const fn age(self) -> u32 {
        ((self.0 & AGE_MASK) >> AGE_SHIFT) as u32
    }

    /// The same header with the age incremented (saturating at [`MAX_AGE`]).
    #[inline(always)]
    pub const fn with_incremented_age(self) -> Self {
        if self.age() < MAX_AGE {
            Header(self.0 + (1 << AGE_SHIFT))
        } else {
            self
        }
    }

    /// The same header with age zero.
    pub const fn with_zero_age(self) -> Self {
        Header(self.0 & !AGE_MASK)
    }

    /// The kind of object.
    #[inline(always)]
    pub const fn kind(self) -> ObjectKind {
        match (self.0 & KIND_MASK) >> KIND_SHIFT {
            0 => ObjectKind::Fixed,
            1 => ObjectKind::RefArray,
            _ => ObjectKind::ByteArray,
        }
    }

    const fn fixed_refs(self) -> u32 {
        ((self.0 >> REFS_SHIFT) & ((1 << REFS_BITS) - 1)) as u32
    }

    const fn fixed_payload(self) -> u32 {
        ((self.0 >> PAYLOAD_SHIFT) & ((1 << PAYLOAD_BITS) - 1)) as u32
    }

    const fn fixed_tag(self) -> u16 {
        (self.0 >> TAG_SHIFT) as u16
    }

    /// Application tag (fixed objects; 0 for arrays).
    pub const fn tag(self) -> u16 {
        match self.kind() {
            ObjectKind::Fixed => self.fixed_tag(),
            _ => 0,
        }
    }

    /// Array length (elements) of an array; 0 for fixed objects.
    #[inline(always)]
    pub const fn array_len(self) -> usize {
        match self.kind() {
            ObjectKind::Fixed => 0,
            _ => (self.0 >> LEN_SHIFT) as usize,
        }
    }

    /// Number of reference slots, which start at word 1.
    #[inline(always)]
    pub const fn ref_count(self) -> usize {
        match self.kind() {
            ObjectKind::Fixed => self.fixed_refs() as usize,
            ObjectKind::RefArray => (self.0 >> LEN_SHIFT) as usize,
            ObjectKind::ByteArray => 0,
        }
    }

    /// Payload bytes (fixed objects: declared payload; byte arrays: length; ref arrays: 0).
    pub const fn payload_bytes(self) -> usize {
        match self.kind() {
            ObjectKind::Fixed => self.fixed_payload() as usize,
            ObjectKind::RefArray => 0,
            ObjectKind::ByteArray => (self.0 >> LEN_SHIFT) as usize,
        }
    }

    /// Byte offset of the payload from the object start.
    pub const fn payload_offset(self) -> usize {
        (1 + self.ref_count()) * WORD
    }

    /// Object size in words, header included.
    #[inline(always)]
    pub const fn size_words(self) -> usize {
        match self.kind() {
            ObjectKind::Fixed => {
                1 + self.fixed_refs() as usize + (self.fixed_payload() as usize).div_ceil(WORD)
            }
            ObjectKind::RefArray => 1 + (self.0 >> LEN_SHIFT) as usize,
            ObjectKind::ByteArray => 1 + ((self.0 >> LEN_SHIFT) as usize).div_ceil(WORD),
        }
    }

    /// Object size in bytes, header included.
    #[inline(always)]
    pub const fn size_bytes(self) -> usize {
        self.size_words() * WORD
    }
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_forwarded() {
            return write!(f, "Header(forwarded -> {:#x})", self.forwardee());
        }
        f.debug_struct("Header")
            .field("kind", &self.kind())
            .field("age", &self.age())
            .field("ref_count", &self.ref_count())
            .field("payload_bytes", &self.payload_bytes())
            .field("size_words", &self.size_words())
            .finish()
    }
}

/// Size in bytes of a reference array of `len` elements.
pub(crate) fn ref_array_size(len: usize) -> Result<usize, LayoutError> {
    array_size(len, Header::ref_array)
}

/// Size in bytes of a byte array of `len` bytes.
pub(crate) fn byte_array_size(len: usize) -> Result<usize, LayoutError> {
    array_size(len, Header::byte_array)
}

/// Size in bytes of an array of `len` elements whose header `header` builds.
fn array_size(len: usize, header: fn(usize) -> Header) -> Result<usize, LayoutError> {
    if len > MAX_ARRAY_LEN {
        return Err(LayoutError::ArrayTooLong {
            requested: len,
            max: MAX_ARRAY_LEN,
        });
    }
    Ok(header(len).size_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_layout_round_trips() {
        let t = ObjectType::new(2, 8).unwrap().with_tag(77);
        let h = t.header();
        assert_eq!(h.kind(), ObjectKind::Fixed);
        assert_eq!(h.ref_count(), 2);
        assert_eq!(h.payload_bytes(), 8);
        assert_eq!(h.tag(), 77);
        assert_eq!(h.size_words(), 4);
        assert_eq!(h.payload_offset(), 24);
        assert_eq!(h.age(), 0);
        assert!(h.is_object());
        assert!(!h.is_forwarded());
    }

    #[test]
    fn payload_rounds_up_to_words() {
        assert_eq!(ObjectType::new(0, 1).unwrap().size_bytes(), 16);
        assert_eq!(ObjectType::new(0, 0).unwrap().size_bytes(), 8);
        assert_eq!(Header::byte_array(9).size_words(), 3);
        assert_eq!(Header::ref_array(5).size_words(), 6);
        assert_eq!(Header::ref_array(5).ref_count(), 5);
        assert_eq!(Header::byte_array(5).ref_count(), 0);
    }

    #[test]
    fn age_saturates_and_keeps_layout() {
        let mut h = Header::ref_array(3);
        for _ in 0..20 {
            h = h.with_incremented_age();
        }
        assert_eq!(h.age(), MAX_AGE);
        assert_eq!(h.array_len(), 3);
        assert_eq!(h.with_zero_age().age(), 0);
    }

    #[test]
    fn forwarding_is_distinct_from_every_object_header() {
        let f = Header::forwarding(0x1000_0008);
        assert!(f.is_forwarded());
        assert!(!f.is_object());
        assert_eq!(f.forwardee(), 0x1000_0008);
    }

    #[test]
    fn oversized_shapes_are_rejected() {
        assert!(matches!(
            ObjectType::new(MAX_FIXED_REFS + 1, 0),
            Err(LayoutError::TooManyRefs { .. })
        ));
        assert!(matches!(
            ObjectType::new(0, MAX_FIXED_PAYLOAD + 1),
            Err(LayoutError::PayloadTooLarge { .. })
        ));
        assert!(ref_array_size(MAX_ARRAY_LEN + 1).is_err());
    }
}

/// Raw word access to objects in the heap. Callers guarantee the addresses are valid heap words
/// (inside a committed space) and that the safepoint protocol orders the accesses.
pub(crate) mod raw {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::{Header, WORD};

    /// The header word of `obj` as an atomic (headers are CAS'd while forwarding).
    ///
    /// # Safety
    /// `obj` must be the word-aligned start of an object in committed heap memory.
    #[inline(always)]
    pub unsafe fn header_cell<'a>(obj: usize) -> &'a AtomicU64 {
        // SAFETY: per the contract the word is valid, aligned and lives as long as the heap.
        unsafe { &*(obj as *const AtomicU64) }
    }

    /// Load `obj`'s header (Acquire: a forwarding header publishes the forwardee's contents).
    ///
    /// # Safety
    /// As for [`header_cell`].
    #[inline(always)]
    pub unsafe fn header(obj: usize) -> Header {
        // SAFETY: forwarded from the caller.
        Header(unsafe { header_cell(obj) }.load(Ordering::Acquire))
    }

    /// Store a header without synchronisation (fresh or not yet published objects).
    ///
    /// # Safety
    /// `obj` must be a valid object start that no other thread accesses concurrently.
    #[inline(always)]
    pub unsafe fn set_header(obj: usize, h: Header) {
        // SAFETY: forwarded from the caller.
        unsafe { header_cell(obj) }.store(h.0, Ordering::Relaxed);
    }

    /// Address of reference slot `i` of `obj`.
    #[inline(always)]
    pub const fn slot_addr(obj: usize, i: usize) -> usize {
        obj + WORD + i * WORD
    }

    /// Read a heap word.
    ///
    /// # Safety
    /// `addr` must be a valid, aligned, committed heap word.
    #[inline(always)]
    pub unsafe fn load(addr: usize) -> usize {
        // SAFETY: forwarded from the caller.
        unsafe { (addr as *const usize).read() }
    }

    /// Write a heap word.
    ///
    /// # Safety
    /// `addr` must be a valid, aligned, committed heap word no other thread writes concurrently.
    #[inline(always)]
    pub unsafe fn store(addr: usize, value: usize) {
        // SAFETY: forwarded from the caller.
        unsafe { (addr as *mut usize).write(value) }
    }
}
