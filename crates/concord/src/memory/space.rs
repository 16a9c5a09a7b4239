//! The heap's spaces: eden, a survivor space or the old generation, each made of one or more
//! fragments, each fragment a contiguous range with its own bump pointer.
//!
//! A space has one fragment unless the heap's NUMA layout is `fragmented` (004 §3.2.3): then each
//! young space has one fragment per node. 004 §3.3's answer to Parallel Scavenge's resizing
//! problem is kept: every fragment's *virtual* size is the whole space's size, and one counter
//! of allocated bytes caps the *physical* bytes of the space at its capacity, so a fragment is
//! never full while the space has room and collections come at exactly the configured size.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::os::vm::{page_size, Reservation};

/// Commit granularity of spaces that grow on demand, and the alignment of the committed end:
/// the 2 MiB huge page. Committing changes the protection of part of the reservation, which
/// splits its mapping there; a huge page can only back a 2 MiB-aligned range that lies whole
/// in one read-write mapping, so with 1 MiB steps every first touch of the old generation got
/// small pages (and 512 page faults per 2 MiB) even where huge pages were asked for.
const COMMIT_CHUNK: usize = 2 << 20;

/// `[bottom, end)` with a shared bump pointer `top`. Allocation is lock free (CAS on `top`);
/// memory above `committed` is only reserved and is committed, under a lock, as `top` grows.
#[derive(Debug)]
pub struct Fragment {
    name: &'static str,
    bottom: usize,
    end: usize,
    top: AtomicUsize,
    committed: AtomicUsize,
    commit_lock: Mutex<()>,
}

impl Fragment {
    /// A fragment over `[bottom, end)` whose memory up to `committed` is already committed.
    pub fn new(name: &'static str, bottom: usize, end: usize, committed: usize) -> Self {
        Self {
            name,
            bottom,
            end,
            top: AtomicUsize::new(bottom),
            committed: AtomicUsize::new(committed),
            commit_lock: Mutex::new(()),
        }
    }

    /// Human name ("eden", "old", ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// First address.
    #[inline(always)]
    pub fn bottom(&self) -> usize {
        self.bottom
    }

    /// One past the last address.
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.end
    }

    /// Current allocation pointer.
    #[inline(always)]
    pub fn top(&self) -> usize {
        // Acquire pairs with the Release/AcqRel updates of `top`, so objects below are visible.
        self.top.load(Ordering::Acquire)
    }

    /// Capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.end - self.bottom
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        self.top() - self.bottom
    }

    /// Bytes still free.
    pub fn free(&self) -> usize {
        self.end - self.top()
    }

    /// Whether `addr` lies in `[bottom, end)`.
    #[inline(always)]
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.bottom && addr < self.end
    }

    /// Whether `addr` lies in the allocated part `[bottom, top)`.
    pub fn contains_allocated(&self, addr: usize) -> bool {
        addr >= self.bottom && addr < self.top()
    }

    /// Allocate `bytes` (word multiple) with a CAS on `top`; `None` when the fragment is full.
    /// The memory is committed but not zeroed.
    #[inline]
    pub fn par_allocate(&self, bytes: usize, reservation: &Reservation) -> Option<usize> {
        let mut top = self.top.load(Ordering::Relaxed);
        loop {
            let new_top = top.checked_add(bytes)?;
            if new_top > self.end {
                return None;
            }
            // AcqRel: the winner owns [top, new_top); Release publishes earlier allocations'
            // initialisation to whoever reads `top` with Acquire.
            match self
                .top
                .compare_exchange_weak(top, new_top, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => {
                    if new_top > self.committed.load(Ordering::Acquire) {
                        self.commit_up_to(new_top, reservation)?;
                    }
                    return Some(top);
                }
                Err(current) => top = current,
            }
        }
    }

    /// Give back the most recent allocation `[addr, addr+bytes)` if nothing was allocated after
    /// it. Returns whether it was given back.
    pub fn undo_allocation(&self, addr: usize, bytes: usize) -> bool {
        self.top
            .compare_exchange(addr + bytes, addr, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Set `top` (used while the world is stopped: resetting eden, finishing a compaction).
    pub fn set_top(&self, top: usize, reservation: &Reservation) {
        assert!(
            top >= self.bottom && top <= self.end,
            "{}: top out of range",
            self.name
        );
        if top > self.committed.load(Ordering::Acquire) {
            // A failure to commit here would leave compacted objects in inaccessible memory,
            // which the compactor prevents by committing destinations before moving.
            self.commit_up_to(top, reservation)
                .expect("commit below a set top");
        }
        self.top.store(top, Ordering::Release);
    }

    /// Make sure `[bottom, addr)` is committed.
    pub fn ensure_committed(&self, addr: usize, reservation: &Reservation) -> bool {
        addr <= self.committed.load(Ordering::Acquire)
            || self.commit_up_to(addr, reservation).is_some()
    }

    /// Committed bytes of this fragment.
    pub fn committed_bytes(&self) -> usize {
        self.committed.load(Ordering::Acquire) - self.bottom
    }

    fn commit_up_to(&self, addr: usize, reservation: &Reservation) -> Option<()> {
        let _guard = self.commit_lock.lock().unwrap_or_else(|p| p.into_inner());
        let committed = self.committed.load(Ordering::Acquire);
        if addr <= committed {
            return Some(());
        }
        let chunk = COMMIT_CHUNK.max(page_size());
        let target = addr.next_multiple_of(chunk).min(self.end);
        reservation.commit(committed, target - committed).ok()?;
        // Release pairs with the Acquire loads above: memory is usable once this is seen.
        self.committed.store(target, Ordering::Release);
        Some(())
    }
}

/// A space: one fragment, or (NUMA layout `fragmented`) one per node, contiguous in address
/// order, each of the space's whole size. With more than one fragment an allocation first takes
/// its bytes from the space's counter, capped at the capacity, then bumps its fragment, which
/// cannot overflow: a fragment never holds more than the counter says the space holds.
#[derive(Debug)]
pub struct Space {
    name: &'static str,
    fragments: Box<[Fragment]>,
    /// Bytes of one fragment: the space's capacity.
    fragment_size: usize,
    /// Bytes allocated in all fragments (plus allocations in flight), counted only with more
    /// than one fragment; a single fragment's top is its own count.
    allocated: AtomicUsize,
}

impl Space {
    /// A one-fragment space over `[bottom, end)` whose memory up to `committed` is already
    /// committed.
    pub fn new(name: &'static str, bottom: usize, end: usize, committed: usize) -> Self {
        Self {
            name,
            fragments: Box::new([Fragment::new(name, bottom, end, committed)]),
            fragment_size: end - bottom,
            allocated: AtomicUsize::new(0),
        }
    }

    /// A space of `count` fragments of `size` bytes each from `bottom`, all committed.
    pub fn fragmented(name: &'static str, bottom: usize, size: usize, count: usize) -> Self {
        let count = count.max(1);
        Self {
            name,
            fragments: (0..count)
                .map(|i| {
                    let lo = bottom + i * size;
                    Fragment::new(name, lo, lo + size, lo + size)
                })
                .collect(),
            fragment_size: size,
            allocated: AtomicUsize::new(0),
        }
    }

    /// Human name ("eden", "old", ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The fragments, in address order.
    pub fn fragments(&self) -> &[Fragment] {
        &self.fragments
    }

    /// Whether allocation is counted across fragments (more than one).
    #[inline(always)]
    fn counted(&self) -> bool {
        self.fragments.len() > 1
    }

    /// The fragment that serves allocations for node index `node`: fragment `node` when the
    /// space has one per node, the only one otherwise.
    #[inline(always)]
    pub fn fragment_for_node(&self, node: usize) -> usize {
        if self.counted() {
            node % self.fragments.len()
        } else {
            0
        }
    }

    /// First address of the first fragment.
    #[inline(always)]
    pub fn bottom(&self) -> usize {
        self.fragments[0].bottom()
    }

    /// One past the last address of the last fragment.
    #[inline(always)]
    pub fn end(&self) -> usize {
        self.fragments[self.fragments.len() - 1].end()
    }

    /// Allocation pointer of a one-fragment space (old, or any space without fragments).
    /// Fragmented spaces are walked by [`Space::allocated_ranges`].
    #[inline(always)]
    pub fn top(&self) -> usize {
        debug_assert!(
            !self.counted(),
            "{}: top() of a fragmented space",
            self.name
        );
        self.fragments[0].top()
    }

    /// The allocated part `[bottom, top)` of every fragment, in address order.
    pub fn allocated_ranges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        self.fragments.iter().map(|f| (f.bottom(), f.top()))
    }

    /// Capacity in bytes: what the space may hold (one fragment's size).
    pub fn capacity(&self) -> usize {
        self.fragment_size
    }

    /// Bytes in use.
    pub fn used(&self) -> usize {
        if self.counted() {
            // Acquire pairs with the AcqRel updates of the counter.
            self.allocated.load(Ordering::Acquire)
        } else {
            self.fragments[0].used()
        }
    }

    /// Bytes still free.
    pub fn free(&self) -> usize {
        self.capacity().saturating_sub(self.used())
    }

    /// Whether `addr` lies in `[bottom, end)` of the whole space.
    #[inline(always)]
    pub fn contains(&self, addr: usize) -> bool {
        addr >= self.bottom() && addr < self.end()
    }

    /// The fragment `addr` lies in.
    #[inline]
    pub fn fragment_of(&self, addr: usize) -> Option<&Fragment> {
        if !self.contains(addr) {
            return None;
        }
        self.fragments
            .get((addr - self.bottom()) / self.fragment_size)
    }

    /// Whether `addr` lies in the allocated part `[bottom, top)` of its fragment.
    pub fn contains_allocated(&self, addr: usize) -> bool {
        self.fragment_of(addr)
            .is_some_and(|f| f.contains_allocated(addr))
    }

    /// Allocate `bytes` in the first fragment (the only one of a space without fragments).
    #[inline]
    pub fn par_allocate(&self, bytes: usize, reservation: &Reservation) -> Option<usize> {
        self.par_allocate_on(0, bytes, reservation)
    }

    /// Allocate `bytes` (word multiple) in fragment `fragment` (see
    /// [`Space::fragment_for_node`]); `None` when the *space* is full. The memory is committed
    /// but not zeroed.
    #[inline]
    pub fn par_allocate_on(
        &self,
        fragment: usize,
        bytes: usize,
        reservation: &Reservation,
    ) -> Option<usize> {
        if !self.counted() {
            return self.fragments[0].par_allocate(bytes, reservation);
        }
        // Take the bytes from the space first: its counter is the cap on physical bytes.
        let mut allocated = self.allocated.load(Ordering::Relaxed);
        loop {
            let new = allocated.checked_add(bytes)?;
            if new > self.fragment_size {
                return None;
            }
            // AcqRel: orders the counter with the fragments' tops for `used()` readers.
            match self.allocated.compare_exchange_weak(
                allocated,
                new,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(current) => allocated = current,
            }
        }
        // The fragment holds at most what the counter holds, which now leaves room for
        // `bytes`, and it spans the whole capacity: this bump cannot run past its end.
        let at = self.fragments[fragment % self.fragments.len()].par_allocate(bytes, reservation);
        if at.is_none() {
            // Only a refused commit gets here; give the bytes back.
            self.allocated.fetch_sub(bytes, Ordering::AcqRel);
        }
        at
    }

    /// Give back the most recent allocation `[addr, addr+bytes)` of its fragment if nothing
    /// was allocated there after it. Returns whether it was given back.
    pub fn undo_allocation(&self, addr: usize, bytes: usize) -> bool {
        let Some(fragment) = self.fragment_of(addr) else {
            return false;
        };
        let undone = fragment.undo_allocation(addr, bytes);
        if undone && self.counted() {
            self.allocated.fetch_sub(bytes, Ordering::AcqRel);
        }
        undone
    }

    /// Set `top` of a one-fragment space (world stopped: finishing a compaction, aligning
    /// old's top before a scavenge).
    pub fn set_top(&self, top: usize, reservation: &Reservation) {
        debug_assert!(
            !self.counted(),
            "{}: set_top of a fragmented space",
            self.name
        );
        self.fragments[0].set_top(top, reservation);
    }

    /// Set the top of every fragment, in address order, and recount the space (world stopped:
    /// finishing a compaction).
    pub fn set_fragment_tops(&self, tops: &[usize], reservation: &Reservation) {
        assert_eq!(
            tops.len(),
            self.fragments.len(),
            "{}: one top per fragment",
            self.name
        );
        for (f, &top) in self.fragments.iter().zip(tops) {
            f.set_top(top, reservation);
        }
        let used = self.fragments.iter().map(Fragment::used).sum();
        self.allocated.store(used, Ordering::Release);
    }

    /// Empty every fragment (world stopped: eden and from-space after a scavenge).
    pub fn reset(&self, reservation: &Reservation) {
        for f in self.fragments.iter() {
            f.set_top(f.bottom(), reservation);
        }
        self.allocated.store(0, Ordering::Release);
    }

    /// Make sure `[bottom, addr)` of the first fragment is committed (old generation).
    pub fn ensure_committed(&self, addr: usize, reservation: &Reservation) -> bool {
        self.fragments[0].ensure_committed(addr, reservation)
    }

    /// Committed bytes of all fragments.
    pub fn committed_bytes(&self) -> usize {
        self.fragments.iter().map(Fragment::committed_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bump_allocation_commits_on_demand_and_undoes_last() {
        let r = Reservation::new(8 << 20, 1 << 20).unwrap();
        let s = Space::new("old", r.base(), r.base() + (8 << 20), r.base());
        let a = s.par_allocate(64, &r).unwrap();
        assert_eq!(a, r.base());
        // SAFETY: par_allocate committed the memory it handed out.
        unsafe { (a as *mut u64).write(7) };
        let b = s.par_allocate(3 << 20, &r).unwrap();
        // SAFETY: as above, the last word of the big allocation is committed too.
        unsafe { ((b + (3 << 20) - 8) as *mut u64).write(9) };
        assert!(!s.undo_allocation(a, 64), "not the last allocation");
        assert!(s.undo_allocation(b, 3 << 20));
        assert_eq!(s.top(), a + 64);
        assert!(
            s.par_allocate(8 << 20, &r).is_none(),
            "larger than the free space"
        );
        assert_eq!(s.used(), 64);
    }

    #[test]
    fn concurrent_allocations_are_disjoint() {
        let r = Reservation::new(4 << 20, 1 << 20).unwrap();
        let s = Space::new("eden", r.base(), r.base() + (4 << 20), r.base());
        let mut all: Vec<usize> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    sc.spawn(|| {
                        (0..1000)
                            .filter_map(|_| s.par_allocate(128, &r))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        all.sort_unstable();
        assert_eq!(all.len(), 4000);
        assert!(all.windows(2).all(|w| w[1] - w[0] >= 128));
    }

    #[test]
    fn a_fragmented_space_caps_its_bytes_not_its_fragments() {
        const MIB: usize = 1 << 20;
        let r = Reservation::new(2 * MIB, 1 << 16).unwrap();
        let s = Space::fragmented("eden", r.base(), MIB, 2);
        assert_eq!(
            (s.bottom(), s.end(), s.capacity()),
            (r.base(), r.base() + 2 * MIB, MIB)
        );
        assert_eq!(s.fragment_for_node(3), 1);
        // One fragment may take the whole capacity: it is never full while the space has room.
        let a = s.par_allocate_on(1, MIB - 64, &r).unwrap();
        assert_eq!(a, r.base() + MIB);
        let b = s.par_allocate_on(0, 64, &r).unwrap();
        assert_eq!(b, r.base());
        assert_eq!((s.used(), s.free()), (MIB, 0));
        // The space is full: no fragment gives more, though fragment 0 has MiB - 64 left.
        assert!(s.par_allocate_on(0, 8, &r).is_none());
        assert!(s.par_allocate_on(1, 8, &r).is_none());
        assert!(s.contains_allocated(a) && s.contains_allocated(b));
        assert!(!s.contains_allocated(b + 64));
        assert!(s.undo_allocation(b, 64));
        assert_eq!(s.used(), MIB - 64);
        assert_eq!(
            s.allocated_ranges().collect::<Vec<_>>(),
            vec![(r.base(), r.base()), (a, a + MIB - 64)]
        );
        s.set_fragment_tops(&[r.base() + 128, a + 256], &r);
        assert_eq!(s.used(), 384);
        s.reset(&r);
        assert_eq!(s.used(), 0);
        assert!(s.allocated_ranges().all(|(lo, hi)| lo == hi));
    }

    #[test]
    fn concurrent_fragment_allocations_never_exceed_the_capacity() {
        const MIB: usize = 1 << 20;
        let r = Reservation::new(4 * MIB, 1 << 16).unwrap();
        let s = Space::fragmented("eden", r.base(), MIB, 4);
        let total: usize = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..4)
                .map(|t| {
                    let s = &s;
                    let r = &r;
                    sc.spawn(move || {
                        (0..2000)
                            .filter_map(|_| s.par_allocate_on(t, 1024, r))
                            .inspect(|&a| {
                                assert_eq!(s.fragment_of(a).unwrap().bottom(), r.base() + t * MIB)
                            })
                            .count()
                            * 1024
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(total, MIB, "exactly the capacity, from whichever fragments");
        assert_eq!(s.used(), MIB);
    }
}
