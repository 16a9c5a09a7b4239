//! The heap verifier: every reference points to a valid object in a live space, no forwarding
//! pointers remain, to-space and the mark bitmaps are clear, and every old-to-young reference
//! sits on a dirty card. Run with the world stopped (after every collection with `--verify`).

use std::collections::HashSet;

use super::RootSlots;
use crate::memory::{HeapMemory, SpaceId};
use crate::object::raw::{self, slot_addr};
use crate::object::{Header, WORD};

/// What the verifier saw.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct VerifyReport {
    /// Objects reachable from the roots.
    pub reachable_objects: usize,
    /// Their bytes.
    pub reachable_bytes: usize,
    /// Old-generation objects walked (live or not).
    pub old_objects: usize,
    /// Old-to-young references found (each on a dirty card).
    pub old_to_young_refs: usize,
}

/// A broken heap invariant, with the address where it was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("heap verification failed: {0}")]
pub struct VerifyError(pub String);

fn fail<T>(msg: String) -> Result<T, VerifyError> {
    Err(VerifyError(msg))
}

/// Check that `v` is the start of a valid object; returns its header.
fn check_object(
    mem: &HeapMemory,
    v: usize,
    from: &dyn Fn() -> String,
) -> Result<Header, VerifyError> {
    if !v.is_multiple_of(WORD) || !mem.in_heap(v) {
        return fail(format!(
            "{} holds {v:#x}, which is not a heap address",
            from()
        ));
    }
    let id = mem.space_of(v).expect("heap address has a space");
    let space = mem.space(id);
    let top = space
        .fragment_of(v)
        .expect("an address of a space is in one of its fragments")
        .top();
    if v >= top {
        return fail(format!(
            "{} points to {v:#x} above the top of {}",
            from(),
            space.name()
        ));
    }
    if std::ptr::eq(space, mem.to_space()) {
        return fail(format!("{} points to {v:#x} in the empty to-space", from()));
    }
    if id == SpaceId::Old && !mem.old_starts.is_marked(v) {
        return fail(format!(
            "{} points to {v:#x} in old, where no object starts",
            from()
        ));
    }
    // SAFETY: `v` is aligned and below the top of a committed space.
    let h = unsafe { raw::header(v) };
    if h.is_forwarded() {
        return fail(format!(
            "{} points to {v:#x}, which still holds a forwarding pointer",
            from()
        ));
    }
    if !h.is_object() {
        return fail(format!(
            "{} points to {v:#x} with a malformed header {:#x}",
            from(),
            h.raw()
        ));
    }
    if v + h.size_bytes() > top {
        return fail(format!(
            "object {v:#x} ({} bytes) extends past the top of {}",
            h.size_bytes(),
            space.name()
        ));
    }
    Ok(h)
}

/// Verify the whole heap. The world must be stopped. `weak` are the mutators' weak slots
/// (weak references and cleaner entries): not roots, but each non-null one must refer to a
/// valid object (a collection clears those of dead objects and updates the others).
pub fn verify_heap(
    mem: &HeapMemory,
    roots: &[RootSlots],
    weak: &[RootSlots],
) -> Result<VerifyReport, VerifyError> {
    let mut report = VerifyReport::default();
    if mem.to_space().used() != 0 {
        return fail(format!(
            "to-space ({}) is not empty between collections",
            mem.to_space().name()
        ));
    }
    if let Some(a) = mem.mark_begin.find_next(mem.base(), mem.end()) {
        return fail(format!("mark bitmap not cleared: bit at {a:#x}"));
    }
    if let Some(a) = mem.mark_live.find_next(mem.base(), mem.end()) {
        return fail(format!("live-word bitmap not cleared: bit at {a:#x}"));
    }
    // Reachability from the roots.
    let mut seen: HashSet<usize> = HashSet::new();
    let mut stack: Vec<usize> = Vec::new();
    for (ri, r) in roots.iter().enumerate() {
        for (si, slot) in r.slot_addrs().enumerate() {
            // SAFETY: root slots of stopped mutators are valid words.
            let v = unsafe { raw::load(slot) };
            if v != 0 {
                check_object(mem, v, &|| format!("root {si} of root set {ri}"))?;
                if seen.insert(v) {
                    stack.push(v);
                }
            }
        }
    }
    for (ri, r) in weak.iter().enumerate() {
        for (si, slot) in r.slot_addrs().enumerate() {
            // SAFETY: weak slots of stopped mutators are valid words.
            let v = unsafe { raw::load(slot) };
            if v != 0 {
                check_object(mem, v, &|| format!("weak slot {si} of weak set {ri}"))?;
            }
        }
    }
    while let Some(o) = stack.pop() {
        // SAFETY: `o` passed `check_object`.
        let h = unsafe { raw::header(o) };
        report.reachable_objects += 1;
        report.reachable_bytes += h.size_bytes();
        for i in 0..h.ref_count() {
            // SAFETY: `i` is below the reference count of a valid object.
            let v = unsafe { raw::load(slot_addr(o, i)) };
            if v != 0 {
                check_object(mem, v, &|| format!("slot {i} of object {o:#x}"))?;
                if seen.insert(v) {
                    stack.push(v);
                }
            }
        }
    }
    // Every old object (reachable or not), its references and its cards.
    let (bottom, top) = (mem.old.bottom(), mem.old.top());
    let mut next = mem.old_starts.find_next(bottom, top);
    let mut prev_end = bottom;
    while let Some(o) = next {
        if o < prev_end {
            return fail(format!(
                "old object {o:#x} overlaps the object ending at {prev_end:#x}"
            ));
        }
        let h = check_object(mem, o, &|| "the old-generation walk".to_string())?;
        report.old_objects += 1;
        for i in 0..h.ref_count() {
            let slot = slot_addr(o, i);
            // SAFETY: as above.
            let v = unsafe { raw::load(slot) };
            if v != 0 {
                check_object(mem, v, &|| format!("slot {i} of old object {o:#x}"))?;
                if mem.in_young(v) {
                    report.old_to_young_refs += 1;
                    if !mem.cards.is_dirty(slot) {
                        return fail(format!(
                            "slot {i} of old object {o:#x} refers to young object {v:#x} but its card is clean"
                        ));
                    }
                }
            }
        }
        prev_end = o + h.size_bytes();
        next = mem.old_starts.find_next(prev_end, top);
    }
    if let Some(a) = mem.old_starts.find_next(top, mem.old.end()) {
        return fail(format!(
            "object-start bit at {a:#x} above the old top {top:#x}"
        ));
    }
    Ok(report)
}
