//! A contiguous space with a bump pointer: eden, a survivor space or the old generation.

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
pub struct Space {
    name: &'static str,
    bottom: usize,
    end: usize,
    top: AtomicUsize,
    committed: AtomicUsize,
    commit_lock: Mutex<()>,
}

impl Space {
    /// A space over `[bottom, end)` whose memory up to `committed` is already committed.
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

    /// Allocate `bytes` (word multiple) with a CAS on `top`; `None` when the space is full.
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

    /// Committed bytes of this space.
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
}
