//! A mutator's handle stack, and the check that lets no stale or foreign handle reach an object.
//!
//! A [`Handle`] is one word: a *serial*, unique for the life of the process. Serials are 64
//! bits, taken in runs from one process-wide counter that only grows (a run per attach, and a
//! longer one each time a mutator uses its run up), so no two handles ever made, by any
//! mutator of any heap, carry the same serial.
//!
//! The handle's slot is found from its serial through *epochs*. Between two ended scopes a
//! mutator only pushes, so the handles of one epoch sit in consecutive slots with consecutive
//! serials: slot `base + (serial - first)`. The stack keeps the current epoch `(first, base)`
//! and the earlier ones whose slots are still live, both fields increasing from bottom to top;
//! each epoch ends where the next begins. Ending a scope truncates the stack, drops the epochs
//! that began at or above the new height, and starts a new epoch there whose first serial is
//! the next one never handed out, so a released serial is never in any epoch again. A handle is
//! valid if and only if its serial falls in a live epoch's range, and then it names exactly the
//! slot it was made for:
//!
//! - *Stale* (its scope ended): its slot was released, so its epoch was cut below it or
//!   dropped, and the slots above were refilled with later serials.
//! - *Foreign* (another mutator's, alive or long detached): its serial is from another run, in
//!   no epoch of this stack.
//!
//! The check of a handle of the current epoch is one subtraction and one comparison (the old
//! stamp check's cost); a handle of the epoch just below (one that escaped the last scope) one
//! more comparison; an older one a binary search over the live epochs. The stamps array the
//! check used to need per slot is gone. Serials run out after 2^63 handles have been made in
//! the process (centuries at any rate a machine reaches): then the next run panics, rather
//! than hand a serial out twice.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};

/// A root that stays valid while objects move: a slot of its mutator's handle stack, which the
/// collector updates when objects move.
///
/// Handles are `Copy`; one is valid until the [`crate::Mutator::scope`] that created it
/// returns. Using a handle of another mutator, or one whose scope has ended, panics, every time
/// and for the life of the process: a handle carries a serial no other handle ever has, and
/// its mutator finds its slot from the serial only while the slot still holds it (see the
/// module's documentation).
///
/// One non-zero word, so `Option<Handle>` is one word too, and `Result<Handle, GcError>` (every
/// allocation's result) comes back in two registers rather than through memory.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Handle(NonZeroU64);

impl Handle {
    /// The handle of `serial` (never 0).
    #[inline(always)]
    fn new(serial: u64) -> Handle {
        debug_assert!(serial != 0, "serial 0 is never handed out");
        // SAFETY: no serial is 0: the counter starts at 1 and never wraps (`take_serials`).
        Handle(unsafe { NonZeroU64::new_unchecked(serial) })
    }

    /// Its serial.
    #[inline(always)]
    fn serial(self) -> u64 {
        self.0.get()
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Handle").field(&self.serial()).finish()
    }
}

/// A mutator's first run of serials holds this many; each further run twice as many as its
/// last, up to [`MAX_SERIAL_RUN`]: an attach uses up few serials, a busy mutator touches the
/// shared counter rarely, and a mutator keeps few runs to tell its stale handles from foreign
/// ones.
const FIRST_SERIAL_RUN: u64 = 1 << 12;

/// The longest run of serials taken at once.
const MAX_SERIAL_RUN: u64 = 1 << 32;

/// The next serial no mutator has taken (0 is never handed out, so `Option<Handle>` has a
/// niche). It only grows: a serial, once taken, is never taken again.
static NEXT_SERIAL: AtomicU64 = AtomicU64::new(1);

/// A fresh run of `len` serials, never handed out before: its first serial. Panics, rather
/// than reuse one, once the 64-bit serial space is used up.
#[cold]
#[inline(never)]
fn take_serials(len: u64) -> u64 {
    // Relaxed: runs only need to be distinct, which the read-modify-write guarantees.
    match NEXT_SERIAL.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |next| {
        next.checked_add(len)
    }) {
        Ok(first) => first,
        Err(_) => panic!("handle serials used up: 2^64 handles were made in this process"),
    }
}

/// An earlier epoch whose handles are still live: the serial and the slot it begins at.
#[derive(Clone, Copy, Debug)]
struct Epoch {
    first: u64,
    base: usize,
}

/// A mutator's handle stack (see the module's documentation).
pub(crate) struct HandleStack {
    /// The address each live handle holds (0 for null), bottom to top.
    slots: Vec<usize>,
    /// The current epoch's serials less its slots: the handle in slot `i` of the current epoch
    /// (`i >= cur_base`) has serial `bias + i` (wrapping), so a push computes its serial with
    /// one addition.
    bias: u64,
    /// The slot the current epoch begins at.
    cur_base: usize,
    /// The end of the run of serials being handed out. Every slot up to the capacity has a
    /// serial in the run (`bias + capacity <= run_end`), so a push checks only the capacity.
    run_end: u64,
    /// The earlier epochs with live slots, bottom to top: `first` and `base` increase, all
    /// below the current epoch's, and each ends where the next (or the current) begins.
    older: Vec<Epoch>,
    /// The runs of serials this stack has taken, `[start, end)` increasing (merged when one
    /// follows the last), to tell its own stale handles from other mutators'.
    runs: Vec<(u64, u64)>,
}

impl HandleStack {
    pub fn new() -> Self {
        let first = take_serials(FIRST_SERIAL_RUN);
        let slots = Vec::with_capacity(256);
        debug_assert!(slots.capacity() as u64 <= FIRST_SERIAL_RUN);
        Self {
            slots,
            bias: first,
            cur_base: 0,
            run_end: first + FIRST_SERIAL_RUN,
            older: Vec::new(),
            runs: vec![(first, first + FIRST_SERIAL_RUN)],
        }
    }

    /// Live handles.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slots, for the collector (published at each stop).
    #[inline]
    pub fn slots_mut(&mut self) -> &mut Vec<usize> {
        &mut self.slots
    }

    /// The serial the handle in slot `index` of the current epoch has.
    #[inline(always)]
    fn serial_at(&self, index: usize) -> u64 {
        self.bias.wrapping_add(index as u64)
    }

    /// A new handle holding `addr`.
    #[inline(always)]
    pub fn push(&mut self, addr: usize) -> Handle {
        if self.slots.len() == self.slots.capacity() {
            self.grow();
        }
        let len = self.slots.len();
        // SAFETY: `len` is below the capacity (`grow` made it so when they were equal).
        unsafe {
            self.slots.as_mut_ptr().add(len).write(addr);
            self.slots.set_len(len + 1);
        }
        Handle::new(self.serial_at(len))
    }

    /// The slot `h` names, if it is a live handle of this stack.
    #[inline(always)]
    pub fn index(&self, h: Handle) -> Option<usize> {
        let serial = h.serial();
        // The slot it would have in the current epoch; below the epoch's base the subtraction
        // wraps to a large number and fails the comparison.
        let index = serial.wrapping_sub(self.bias);
        if index.wrapping_sub(self.cur_base as u64) < (self.slots.len() - self.cur_base) as u64 {
            return Some(index as usize);
        }
        // The epoch just below the current one: a handle that escaped the last scope.
        match self.older.last() {
            Some(&e) if serial >= e.first => Self::within(e, self.cur_base, serial),
            Some(_) => self.older_index(serial),
            None => None,
        }
    }

    /// The slot of `serial` in epoch `e`, which ends at slot `end`.
    #[inline(always)]
    fn within(e: Epoch, end: usize, serial: u64) -> Option<usize> {
        let offset = serial - e.first;
        (offset < (end - e.base) as u64).then(|| e.base + offset as usize)
    }

    /// [`Self::index`] of a serial below the top older epoch's first.
    #[cold]
    #[inline(never)]
    fn older_index(&self, serial: u64) -> Option<usize> {
        let i = self.older.partition_point(|e| e.first <= serial);
        let e = *self.older.get(i.checked_sub(1)?)?;
        let end = self.older.get(i).map_or(self.cur_base, |next| next.base);
        Self::within(e, end, serial)
    }

    /// What `slots[index]` holds.
    #[inline(always)]
    pub fn get(&self, index: usize) -> usize {
        debug_assert!(index < self.slots.len());
        // SAFETY: callers pass an index `Self::index` returned, below the length.
        unsafe { *self.slots.get_unchecked(index) }
    }

    /// Make `slots[index]` hold `addr`.
    #[inline(always)]
    pub fn set(&mut self, index: usize, addr: usize) {
        debug_assert!(index < self.slots.len());
        // SAFETY: as in `get`.
        unsafe { *self.slots.get_unchecked_mut(index) = addr };
    }

    /// Release the handles from slot `mark` up (a scope ends): they become stale, and a new
    /// epoch begins at `mark` with serials never handed out.
    #[inline(always)]
    pub fn release(&mut self, mark: usize) {
        let len = self.slots.len();
        debug_assert!(mark <= len, "a scope releases only what it made");
        // Scopes nest, so `mark <= len`; kept so in any build, since the check's arithmetic
        // relies on `cur_base <= len`.
        let mark = mark.min(len);
        // The first serial never handed out.
        let next = self.serial_at(len);
        self.slots.truncate(mark);
        if mark > self.cur_base {
            // The current epoch keeps its slots below `mark`.
            self.older.push(Epoch {
                first: self.serial_at(self.cur_base),
                base: self.cur_base,
            });
        } else {
            while self.older.last().is_some_and(|e| e.base >= mark) {
                self.older.pop();
            }
        }
        self.bias = next.wrapping_sub(mark as u64);
        self.cur_base = mark;
        if self.run_end - next < (self.slots.capacity() - mark) as u64 {
            self.next_run((self.slots.capacity() - mark) as u64);
        }
    }

    /// Whether `h` was made by this stack (a stale handle) rather than another's.
    #[cold]
    pub fn made_here(&self, h: Handle) -> bool {
        let serial = h.serial();
        let i = self.runs.partition_point(|&(start, _)| start <= serial);
        i > 0 && serial < self.runs[i - 1].1
    }

    /// The slow path of a push: more capacity, and a new run of serials (and so a new epoch)
    /// if the run does not reach the new capacity.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let len = self.slots.len();
        self.slots.reserve(1);
        let needed = (self.slots.capacity() - len) as u64;
        if self.run_end - self.serial_at(len) < needed {
            if self.cur_base < len {
                self.older.push(Epoch {
                    first: self.serial_at(self.cur_base),
                    base: self.cur_base,
                });
            }
            self.cur_base = len;
            self.next_run(needed);
        }
    }

    /// The run of serials does not reach the capacity: the current epoch (empty, at
    /// `cur_base`) takes its first serial from a new run, twice as long as the last and at
    /// least `needed` long.
    #[cold]
    #[inline(never)]
    fn next_run(&mut self, needed: u64) {
        let last = self.runs.last().map_or(0, |&(start, end)| end - start);
        let len = (last * 2)
            .clamp(FIRST_SERIAL_RUN, MAX_SERIAL_RUN)
            .max(needed);
        let start = take_serials(len);
        self.bias = start.wrapping_sub(self.cur_base as u64);
        self.run_end = start + len;
        match self.runs.last_mut() {
            Some(last) if last.1 == start => last.1 = start + len,
            _ => self.runs.push((start, start + len)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model of the stack: each live slot's handle, released ones remembered as stale.
    struct Model {
        stack: HandleStack,
        live: Vec<Handle>,
        stale: Vec<Handle>,
        marks: Vec<usize>,
    }

    impl Model {
        fn new() -> Self {
            Self {
                stack: HandleStack::new(),
                live: Vec::new(),
                stale: Vec::new(),
                marks: Vec::new(),
            }
        }

        fn push(&mut self) {
            let addr = 8 * (self.live.len() + 1);
            let h = self.stack.push(addr);
            assert!(!self.live.contains(&h) && !self.stale.contains(&h));
            self.live.push(h);
        }

        fn open(&mut self) {
            self.marks.push(self.stack.len());
        }

        fn close(&mut self) {
            let mark = self.marks.pop().unwrap_or(0);
            self.stale.extend(self.live.drain(mark..));
            self.stack.release(mark);
        }

        fn check(&self, other: &HandleStack) {
            for (i, &h) in self.live.iter().enumerate() {
                assert_eq!(self.stack.index(h), Some(i), "{h:?} at {i}");
                assert_eq!(self.stack.get(i), 8 * (i + 1));
                assert_eq!(other.index(h), None, "foreign {h:?}");
            }
            for &h in &self.stale {
                assert_eq!(self.stack.index(h), None, "stale {h:?}");
                assert!(self.stack.made_here(h));
                assert!(!other.made_here(h));
            }
        }
    }

    /// Pushes and nested scope ends in a pseudo-random order, across several runs of serials:
    /// every live handle finds its slot, no stale or foreign one finds any.
    #[test]
    fn every_live_handle_finds_its_slot_and_no_other_does() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut model = Model::new();
        let other = {
            let mut s = HandleStack::new();
            for a in 0..300 {
                s.push(a);
            }
            s
        };
        for step in 0..40_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            match rng % 8 {
                0..=3 => model.push(),
                4 | 5 => model.open(),
                _ => model.close(),
            }
            if step % 997 == 0 {
                model.check(&other);
                // The stale list only grows: keep it to the latest ones.
                let n = model.stale.len();
                model.stale.drain(..n.saturating_sub(2000));
            }
        }
        model.check(&other);
        assert!(
            model.stack.runs.len() > 1
                || model.stack.run_end - model.stack.runs[0].0 > FIRST_SERIAL_RUN,
            "the test crossed no run boundary"
        );
    }

    /// Scopes that end without making a handle use no serial and add no epoch.
    #[test]
    fn empty_scopes_cost_nothing() {
        let mut s = HandleStack::new();
        let h = s.push(8);
        for _ in 0..100_000 {
            s.release(1);
        }
        assert_eq!(s.index(h), Some(0));
        assert_eq!(s.older.len(), 1);
        assert_eq!(s.runs.len(), 1);
    }
}
