//! Weak-slot processing: what a collection does, once tracing is complete, to the mutators'
//! weak references and cleaner entries (HotSpot's `WeakProcessor` over the JNI weak global
//! handles).
//!
//! A weak slot is a word outside the heap holding an object address or 0, like a root slot,
//! except that the collector does not trace from it. After the tracing phase has found every
//! live object, each non-null weak slot gets the fate of its referent: a live referent's new
//! address (a scavenge's forwarding pointer, a full collection's compacted address), 0 for a
//! dead one, and no change for a referent the collection does not collect (an old object in
//! a scavenge). A range whose slot was cleared says so through its `cleared` flag, which is
//! how the mutator learns that a cleaner is due without scanning its table after every
//! collection.
//!
//! Ranges are cut into [`WEAK_CHUNK`]-slot chunks. A scavenge processes them on the calling
//! (VM) thread when there is one chunk or none, else on the collection's GC workers, each
//! claiming chunks from a shared counter; a full collection processes them as tasks of its
//! parallel adjust phase (see `full.rs`).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::{GcContext, RootSlots};
use crate::object::raw;

/// Weak slots per chunk: the unit of parallel weak processing.
pub const WEAK_CHUNK: usize = 4096;

/// A range of weak slots (words holding an object address or 0) of a stopped mutator.
#[derive(Clone, Copy, Debug)]
pub struct WeakRange<'a> {
    /// The slots.
    pub slots: RootSlots,
    /// Set (Relaxed) when the collection clears one of the slots: the pause's end orders it
    /// before the mutator resumes.
    pub cleared: &'a AtomicBool,
}

impl<'a> WeakRange<'a> {
    /// The range cut into chunks of at most [`WEAK_CHUNK`] slots, each with the range's flag.
    pub fn chunks(self) -> impl Iterator<Item = WeakRange<'a>> {
        let cleared = self.cleared;
        self.slots
            .chunks(WEAK_CHUNK)
            .map(move |slots| WeakRange { slots, cleared })
    }
}

/// Every chunk of `ranges`, in order.
pub fn weak_chunks<'a>(ranges: &[WeakRange<'a>]) -> Vec<WeakRange<'a>> {
    ranges.iter().flat_map(|r| r.chunks()).collect()
}

/// Give each non-null slot of `chunk` its referent's fate: `fate(v)` is `Some(new address)`
/// for a live (or uncollected) referent and `None` for a dead one, whose slot is cleared.
/// Returns the number of slots cleared.
///
/// # Safety
/// The chunk's slots are valid words of a stopped mutator, processed by this call only, and
/// each non-null slot holds an object address `fate` accepts.
#[inline]
pub unsafe fn process_chunk(
    chunk: &WeakRange<'_>,
    fate: &impl Fn(usize) -> Option<usize>,
) -> usize {
    let mut cleared = 0;
    for slot in chunk.slots.slot_addrs() {
        // SAFETY: the caller's contract: a valid word nobody else touches now.
        let v = unsafe { raw::load(slot) };
        if v == 0 {
            continue;
        }
        let new = fate(v).unwrap_or(0);
        if new != v {
            // SAFETY: as above.
            unsafe { raw::store(slot, new) };
        }
        cleared += usize::from(new == 0);
    }
    if cleared > 0 {
        // Relaxed: read by the mutator after the safepoint ends, which orders it.
        chunk.cleared.store(true, Ordering::Relaxed);
    }
    cleared
}

/// Process every slot of `ranges` with `fate` (see [`process_chunk`]): on this thread if they
/// make one chunk or none, else on the context's workers. Returns the number of slots cleared.
///
/// # Safety
/// As for [`process_chunk`], for every slot of `ranges`; the ranges do not overlap.
pub unsafe fn process_weak(
    ctx: &GcContext<'_>,
    ranges: &[WeakRange<'_>],
    fate: impl Fn(usize) -> Option<usize> + Sync,
) -> usize {
    let chunks = weak_chunks(ranges);
    if chunks.len() <= 1 {
        return chunks
            .iter()
            // SAFETY: the caller's contract; each chunk is processed once, here.
            .map(|c| unsafe { process_chunk(c, &fate) })
            .sum();
    }
    let next = AtomicUsize::new(0);
    let cleared = AtomicUsize::new(0);
    ctx.pool.run(ctx.workers, |_| loop {
        // Relaxed: the index is only a claim; the pool's start and finish order the data.
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(chunk) = chunks.get(i) else { break };
        // SAFETY: the caller's contract; chunk `i` is claimed by this worker only.
        let n = unsafe { process_chunk(chunk, &fate) };
        cleared.fetch_add(n, Ordering::Relaxed);
    });
    cleared.into_inner()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range over `words`.
    fn range<'a>(words: &mut [usize], cleared: &'a AtomicBool) -> WeakRange<'a> {
        WeakRange {
            slots: RootSlots {
                ptr: words.as_mut_ptr(),
                len: words.len(),
            },
            cleared,
        }
    }

    #[test]
    fn a_chunk_gets_its_referents_fates() {
        // Even "addresses" live (moved by 1000), odd ones dead, 0 untouched.
        let mut words = vec![8, 0, 16, 24 + 1, 0, 40 + 1];
        let cleared = AtomicBool::new(false);
        let r = range(&mut words, &cleared);
        let fate = |v: usize| v.is_multiple_of(2).then_some(v + 1000);
        // SAFETY: the slots are this test's words.
        let n = unsafe { process_chunk(&r, &fate) };
        assert_eq!(n, 2);
        assert_eq!(words, [1008, 0, 1016, 0, 0, 0]);
        assert!(cleared.load(Ordering::Relaxed));
        // Nothing cleared: the flag is left as it is.
        let mut words = vec![8];
        let quiet = AtomicBool::new(false);
        // SAFETY: as above.
        assert_eq!(
            unsafe { process_chunk(&range(&mut words, &quiet), &fate) },
            0
        );
        assert!(!quiet.load(Ordering::Relaxed));
    }

    #[test]
    fn ranges_are_cut_into_chunks_that_keep_their_flags() {
        let mut a = vec![0usize; 2 * WEAK_CHUNK + 1];
        let mut b = vec![0usize; 3];
        let (fa, fb) = (AtomicBool::new(false), AtomicBool::new(false));
        let chunks = weak_chunks(&[range(&mut a, &fa), range(&mut b, &fb)]);
        let lens: Vec<usize> = chunks.iter().map(|c| c.slots.len).collect();
        assert_eq!(lens, [WEAK_CHUNK, WEAK_CHUNK, 1, 3]);
        assert!(std::ptr::eq(chunks[2].cleared, &fa));
        assert!(std::ptr::eq(chunks[3].cleared, &fb));
        assert_eq!(chunks[1].slots.ptr, a[WEAK_CHUNK..].as_mut_ptr());
    }
}
