//! Promotion-local allocation buffers: a GC worker's private bump region in to-space or old.
//!
//! Buffers are cut in whole words: the configured size is rounded down (as TLAB sizes are),
//! so every object copied into a buffer, and every buffer cut after it, stays word aligned.

use crate::memory::space::Space;
use crate::object::WORD;
use crate::os::vm::Reservation;

/// A bump-pointer buffer `[top, end)` carved out of a shared space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plab {
    top: usize,
    end: usize,
    /// Bytes of buffers obtained so far.
    pub refilled_bytes: usize,
    /// Bytes left unused when buffers were retired.
    pub wasted_bytes: usize,
    /// Bytes of objects too large for a buffer, allocated directly in the space.
    pub direct_bytes: usize,
}

/// A shared space PLABs are cut from: what [`Plab::allocate_slow_from`] needs of it.
pub trait PlabSpace {
    /// Allocate `bytes` (a word multiple) from the space's shared top (a CAS on it); `None`
    /// when the space cannot hold them.
    fn par_allocate(&self, bytes: usize) -> Option<usize>;
    /// Bytes the space has left.
    fn free(&self) -> usize;
}

/// One fragment of a heap space, as the collectors cut PLABs from it.
struct SpaceFragment<'a> {
    space: &'a Space,
    fragment: usize,
    rsv: &'a Reservation,
}

impl PlabSpace for SpaceFragment<'_> {
    #[inline]
    fn par_allocate(&self, bytes: usize) -> Option<usize> {
        self.space.par_allocate_on(self.fragment, bytes, self.rsv)
    }

    #[inline]
    fn free(&self) -> usize {
        self.space.free()
    }
}

/// The bytes of a buffer cut for a configured PLAB size: `plab_size` rounded down to whole
/// words. (The configuration accepts any size in its range, e.g. 4100 bytes; a buffer of that
/// size would leave the space's top, and so every later object, off word alignment.)
#[inline]
pub const fn buffer_bytes(plab_size: usize) -> usize {
    plab_size & !(WORD - 1)
}

impl Plab {
    /// Allocate from the current buffer.
    #[inline(always)]
    pub fn allocate(&mut self, bytes: usize) -> Option<usize> {
        let new_top = self.top + bytes;
        if new_top <= self.end && self.top != 0 {
            let at = self.top;
            self.top = new_top;
            Some(at)
        } else {
            None
        }
    }

    /// Give back the last allocation if it ended at the current top.
    #[inline]
    pub fn undo(&mut self, addr: usize, bytes: usize) -> bool {
        if self.top == addr + bytes && self.top != 0 {
            self.top = addr;
            true
        } else {
            false
        }
    }

    /// Allocate `bytes` (a word multiple) in `space` when the current buffer cannot hold it,
    /// as HotSpot's `PSPromotionManager` does: an object larger than half a buffer is
    /// allocated directly in the space with a shared CAS on its top, and the current buffer is
    /// kept for the small objects still to come; a smaller one retires the buffer and refills
    /// it with `plab_size` bytes rounded down to words ([`buffer_bytes`]), wasting less than
    /// half a buffer.
    pub fn allocate_slow(
        &mut self,
        bytes: usize,
        plab_size: usize,
        space: &Space,
        rsv: &Reservation,
    ) -> Option<usize> {
        self.allocate_slow_on(bytes, plab_size, space, 0, rsv)
    }

    /// [`Plab::allocate_slow`] taking buffers and direct allocations from fragment `fragment`
    /// of `space` (see [`Space::fragment_for_node`]); `None` only when the space is full.
    pub fn allocate_slow_on(
        &mut self,
        bytes: usize,
        plab_size: usize,
        space: &Space,
        fragment: usize,
        rsv: &Reservation,
    ) -> Option<usize> {
        self.allocate_slow_from(
            bytes,
            plab_size,
            &SpaceFragment {
                space,
                fragment,
                rsv,
            },
        )
    }

    /// The slow path of [`Plab::allocate_slow`] over any shared space: a direct allocation for
    /// an object larger than half a buffer, else the current buffer retired and a new one cut
    /// (the tail of a nearly full space if a whole buffer no longer fits). The collectors pass
    /// a fragment of a heap space; the simulator's replay passes a simulated space top, so a
    /// replayed collection refills its PLABs by this very code.
    pub fn allocate_slow_from(
        &mut self,
        bytes: usize,
        plab_size: usize,
        space: &impl PlabSpace,
    ) -> Option<usize> {
        debug_assert_eq!(bytes % WORD, 0, "object sizes are whole words");
        let plab_size = buffer_bytes(plab_size);
        if bytes > plab_size / 2 {
            let at = space.par_allocate(bytes)?;
            self.direct_bytes += bytes;
            return Some(at);
        }
        let (buf, size) = match space.par_allocate(plab_size) {
            Some(buf) => (buf, plab_size),
            None => {
                // Near the end of the space: take what is left if it still fits the object.
                let left = space.free() & !(WORD - 1);
                if left < bytes {
                    return None;
                }
                (space.par_allocate(left)?, left)
            }
        };
        self.retire();
        self.top = buf;
        self.end = buf + size;
        self.refilled_bytes += size;
        self.allocate(bytes)
    }

    /// Drop the buffer (its unused tail becomes a gap nobody parses).
    pub fn retire(&mut self) {
        self.wasted_bytes += self.end - self.top;
        self.top = 0;
        self.end = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plab_bumps_refills_and_undoes() {
        let r = Reservation::new(1 << 20, 1 << 16).unwrap();
        let s = Space::new("to", r.base(), r.base() + (1 << 20), r.base());
        let mut p = Plab::default();
        assert_eq!(p.allocate(16), None, "empty plab");
        let a = p.allocate_slow(16, 4096, &s, &r).unwrap();
        assert_eq!(a, r.base());
        let b = p.allocate(32).unwrap();
        assert_eq!(b, a + 16);
        assert!(p.undo(b, 32));
        assert!(!p.undo(a, 8), "does not end at the top");
        assert_eq!(p.allocate(8).unwrap(), b);
        // A large object goes straight to the space, leaving the buffer alone.
        let big = p.allocate_slow(2056, 4096, &s, &r).unwrap();
        assert_eq!(big, r.base() + 4096);
        assert_eq!(p.allocate(8).unwrap(), b + 8);
        assert_eq!(p.direct_bytes, 2056);
        p.retire();
        assert_eq!(p.wasted_bytes, 4096 - 32);
    }

    /// The sizes of `queue-churn`: 10 KiB objects (plus their header) are larger than half
    /// of either default buffer (8 KiB old, 32 KiB young) but one: each is allocated directly
    /// beside the buffer, which keeps serving small objects, never retired for them; and an
    /// object of at most half a buffer refills it.
    #[test]
    fn objects_larger_than_half_a_plab_are_allocated_directly_without_retiring_it() {
        let r = Reservation::new(4 << 20, 1 << 16).unwrap();
        let s = Space::new("old", r.base(), r.base() + (4 << 20), r.base());
        let mut p = Plab::default();
        let small = p.allocate_slow(64, 8 << 10, &s, &r).unwrap();
        let object = (10 << 10) + WORD;
        let mut expected_at = small + (8 << 10);
        for _ in 0..100 {
            let at = p
                .allocate(object)
                .or_else(|| p.allocate_slow(object, 8 << 10, &s, &r))
                .unwrap();
            assert_eq!(
                at, expected_at,
                "directly in the space, one after the other"
            );
            expected_at += object;
            // The buffer still serves small objects between them.
            assert!(p.allocate(64).is_some());
        }
        assert_eq!(p.refilled_bytes, 8 << 10, "one buffer, never refilled");
        assert_eq!(p.wasted_bytes, 0, "never retired");
        assert_eq!(p.direct_bytes, 100 * object);
        // Half a buffer or less: retire and refill.
        let mut p = Plab::default();
        p.allocate_slow(64, 8 << 10, &s, &r).unwrap();
        p.allocate(6 << 10).unwrap();
        p.allocate_slow(4 << 10, 8 << 10, &s, &r).unwrap();
        assert_eq!(p.refilled_bytes, 16 << 10);
        assert_eq!(p.wasted_bytes, (8 << 10) - 64 - (6 << 10));
        assert_eq!(p.direct_bytes, 0);
    }

    /// Every size the configuration accepts (1 KiB..=1 MiB, any byte count) gives word-aligned
    /// buffers: the rounding itself, and two buffers cut in a row from one space (the second
    /// one starts where the first ended, so a buffer of 4100 bytes used to start the next one,
    /// and every object copied into it, off word alignment).
    #[test]
    fn every_accepted_plab_size_cuts_word_aligned_buffers() {
        let range = crate::config::PLAB_RANGE;
        let r = Reservation::new(4 << 20, 1 << 16).unwrap();
        let s = Space::new("to", r.base(), r.base() + (4 << 20), r.base());
        for size in range.clone() {
            let cut = buffer_bytes(size);
            assert_eq!(cut % WORD, 0, "{size}");
            assert!(cut <= size && size - cut < WORD, "{size} -> {cut}");
            assert!(
                range.contains(&cut),
                "{size} -> {cut} leaves the allowed range"
            );

            s.set_top(s.bottom(), &r);
            let mut p = Plab::default();
            let first = p.allocate_slow(WORD, size, &s, &r).unwrap();
            assert_eq!(p.end - first, cut, "{size}: buffer length");
            // A refill cuts the next buffer right after the first one.
            let next = p.allocate_slow(WORD, size, &s, &r).unwrap();
            assert_eq!(next, first + cut);
            assert_eq!(next % WORD, 0, "{size}: second buffer at {next:#x}");
            assert_eq!(s.top() % WORD, 0, "{size}: space top {:#x}", s.top());
        }
    }

    #[test]
    fn plab_takes_the_tail_of_a_nearly_full_space() {
        let r = Reservation::new(1 << 16, 1 << 16).unwrap();
        let s = Space::new("old", r.base(), r.base() + (1 << 16), r.base());
        s.par_allocate((1 << 16) - 1024, &r).unwrap();
        let mut p = Plab::default();
        let a = p.allocate_slow(64, 8192, &s, &r).unwrap();
        assert_eq!(s.free(), 0);
        assert!(p.allocate(900).is_some());
        assert!(p.allocate(64).is_none());
        assert!(a >= r.base());
        assert!(
            p.allocate_slow(64, 8192, &s, &r).is_none(),
            "space exhausted"
        );
    }
}
