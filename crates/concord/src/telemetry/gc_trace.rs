//! The GC trace (`gc-trace`): the work of every collection's parallel phase, recorded compactly
//! enough that a simulator can replay it without the heap — its root tasks as the collector
//! formed them, the objects each reaches first-hand, and the object graph it traversed (sizes,
//! survivor or promoted, and the reference slots scanned). Young collections are traced whole
//! (their one parallel phase copies); full collections, their marking phase (the summary,
//! adjust and compaction phases that follow are not).
//!
//! # Format (version 3)
//!
//! All integers are unsigned LEB128 varints unless said otherwise; "zigzag" marks a signed
//! delta stored zigzag-encoded.
//!
//! ```text
//! file       = magic "CGCTRACE" (8 bytes), version, run, frame*, end
//! run        = payload length (at most 4096), workload name length, workload name (UTF-8;
//!              empty: not known), heap bytes (0: not known), young PLAB bytes, old PLAB
//!              bytes (both 0: not known; else each in 1 KiB..=1 MiB)
//!                                                  -- what was recorded; a reader skips
//!                                                     fields after those it knows
//! frame      = payload length (> 0), payload       -- one collection
//! end        = payload length 0                    -- written when the file is finished
//! payload    = id, kind (0 young, 1 full), workers, promotion failed (0/1),
//!              root count, root*, object count, object*
//! root       = kind (0 handle stack, 1 card stripe), extent (slots / stripe bytes),
//!              scanned objects (card stripe only: objects with slots on dirty cards),
//!              affinity (0 none, 1 prefers, 2 stripe), [affinity worker],
//!              ran on worker, reach count, reach*   -- reach: zigzag delta from the previous
//!                                                     reached id (the first from 0)
//! object     = size in bytes, shape (fate + 4 × array + 8 × extra; fate: 0 survivor,
//!              1 promoted, 2 stayed: promotion failed, 3 marked: full collection; array: 1
//!              for a reference array, else 0; extra: its slots beyond its refs + 1 when
//!              that is at most 15, else 0), copying (or marking) worker, [slots] (extra 0 only: all its
//!              reference slots, the header's reference count), ref count, ref*, [slot gap*]
//!                                                  -- ref: zigzag delta from the object's id;
//!                                                     slot gaps, a reference array's only:
//!                                                     per ref the slot it is in, less the
//!                                                     previous ref's slot + 1 (the first:
//!                                                     its slot)
//! ```
//!
//! Refs are in slot order. A reference array's slot indices are what splits its refs among the
//! chunks the collectors scan it in ([`crate::collection::scan_slots_of`]); other objects are
//! scanned whole, so theirs are not written.
//!
//! Older versions [`GcTraceReader`] still reads: version 2 is version 3 without the PLAB sizes
//! in `run` and with `object = size, fate, worker, ref count, ref*` (its [`TraceShape`]s are
//! read as ordinary objects with as many slots as recorded refs, and its [`TraceRun`] has no
//! [`PlabSizes`]: [`TraceRun::plab_sizes`] gives the defaults); version 1 is version 2 without
//! `run` (its [`TraceRun`] knows nothing).
//!
//! Object ids are the objects' indices in the frame, in the order of their addresses before the
//! collection. A frame is written whole or not at all ([`RecordLines`]), so a file ends either
//! in the end marker or — cut by a failed write or a killed process — just after a whole frame
//! or inside one; [`GcTraceReader`] reports both as [`GcTraceError::Truncated`].
//!
//! # Recording
//!
//! Each GC worker records into its own [`TraceBuffer`] at the points where the collector
//! already touches the work: a won copy (before its slots are pushed, so no other worker can
//! have updated them yet), a promotion failure, a root task's slots, a won mark. A young
//! collection's references are the slots it follows (those into eden and from-space); a full
//! collection's, every non-null slot. Addresses are kept as they
//! were before the collection; [`RawTrace::merge`] turns them into ids after the world has been
//! resumed, and the VM thread writes the frame then, off the pause. The heap opens the trace
//! with [`GcTraceFile::create`], giving its own size; the program that builds the heap says
//! which workload runs on it by building it inside [`recording`].

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Read};
use std::ops::Range;
use std::path::Path;

use super::output::{OutputFailure, OutputKind, RecordLines};
use crate::config::{DEFAULT_OLD_PLAB_SIZE, DEFAULT_YOUNG_PLAB_SIZE, PLAB_RANGE};
use crate::object::{Header, ObjectKind};
use crate::parallel::task_queue::Affinity;

/// The first bytes of a GC trace.
pub const MAGIC: &[u8; 8] = b"CGCTRACE";
/// The format version this module writes (and the newest it reads).
pub const VERSION: u64 = 4;
/// The oldest format version this module reads (version 1: no [`TraceRun`]).
pub const OLDEST_VERSION: u64 = 1;
/// The first version whose objects carry their [`TraceShape`] (and its run its PLAB sizes).
pub const SHAPES_VERSION: u64 = 3;
/// The first version whose objects carry the gap before them in the heap
/// ([`TraceCollection::gaps`]).
pub const GAPS_VERSION: u64 = 4;
/// The most slots beyond its refs an object's shape byte holds (`extra` in the format, less 1).
const INLINE_SLOTS: u64 = 15;
/// The longest `run` payload a reader accepts, bytes (a workload name and a few sizes).
pub const MAX_RUN_BYTES: u64 = 4096;

/// What a trace says about the run it was recorded from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceRun {
    /// The workload's name (`binary-trees`), if the writer knew it.
    pub workload: Option<String>,
    /// The heap's maximum size in bytes, if the writer knew it.
    pub heap_bytes: Option<u64>,
    /// The PLAB sizes the run's collections cut buffers of, if recorded (from version 3).
    pub plab_sizes: Option<PlabSizes>,
}

impl TraceRun {
    /// The PLAB sizes the run used: the recorded ones, or for a trace that does not record
    /// them (before version 3) the configuration's defaults.
    pub fn plab_sizes(&self) -> PlabSizes {
        self.plab_sizes.unwrap_or_default()
    }
}

/// The PLAB sizes of a run, bytes (`young-plab-size`, `old-plab-size`), as configured: a buffer
/// is this rounded down to whole words ([`crate::collection::plab::buffer_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlabSizes {
    /// To-space PLABs (survivors).
    pub young: u64,
    /// Old-generation PLABs (promoted objects).
    pub old: u64,
}

impl Default for PlabSizes {
    /// The configuration's defaults (`GcConfig`'s `young_plab_size` and `old_plab_size`).
    fn default() -> Self {
        PlabSizes {
            young: DEFAULT_YOUNG_PLAB_SIZE as u64,
            old: DEFAULT_OLD_PLAB_SIZE as u64,
        }
    }
}

thread_local! {
    /// The workload [`GcTraceFile::create`] records on this thread ([`recording`]).
    static RECORDING: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f`, with every trace that [`GcTraceFile::create`] starts on this thread meanwhile
/// recording `workload` as the run's workload (a heap opens its trace on the thread that
/// builds it, in `Heap::new`, and knows its own size but not what program runs on it);
/// outside it a trace names no workload. Nested calls restore the outer one.
pub fn recording<T>(workload: &str, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Option<String>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                RECORDING.with(|r| *r.borrow_mut() = outer);
            }
        }
    }
    let outer = RECORDING.with(|r| r.replace(Some(workload.to_string())));
    let _restore = Restore(Some(outer));
    f()
}

/// What a collection did with an object it reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Copied into to-space.
    Survivor,
    /// Copied into the old generation.
    Promoted,
    /// Left where it was: neither space had room (promotion failure).
    Stayed,
    /// Marked by a full collection (which moves it later, in its compaction phases).
    Marked,
}

/// The kind of a traced collection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TraceKind {
    /// A young collection (a scavenge): its parallel copying phase.
    #[default]
    Young,
    /// A full collection: its parallel marking phase (the compaction phases are not traced).
    Full,
}

/// The kind of a root task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceRootKind {
    /// A chunk of a mutator's handle stack of `slots` slots.
    HandleStack {
        /// Slots in the chunk.
        slots: u64,
    },
    /// The dirty cards of a stripe of the old generation.
    CardStripe {
        /// Bytes of old generation the stripe covers.
        bytes: u64,
        /// Old objects with reference slots on the stripe's dirty cards.
        scanned_objects: u64,
    },
}

/// The worker a root task's affinity tag names (000 §4.1 task affinity, `claim` stripes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceAffinity {
    /// No tag.
    Any,
    /// Preferably this worker.
    Prefers(u32),
    /// A card stripe of this worker.
    Stripe(u32),
}

/// A root task as the collector formed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRoot {
    /// Handle stack or card stripe.
    pub kind: TraceRootKind,
    /// Its affinity tag.
    pub affinity: TraceAffinity,
    /// The worker that ran it.
    pub ran_on: u32,
    /// The objects its slots refer to that the collection had to copy, one per slot, in the
    /// order of the slots.
    pub reaches: Vec<u32>,
}

/// What the collectors' scanning of an object depends on: its reference slots and its kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceShape {
    /// All its reference slots (the header's reference count: null ones and, in a young
    /// collection, those referring outside the collected set included).
    pub slots: u64,
    /// A reference array (which the collectors scan in chunks when it is long).
    pub ref_array: bool,
}

impl TraceShape {
    /// An object with `slots` reference slots that is not a reference array.
    pub const fn fixed(slots: u64) -> Self {
        TraceShape {
            slots,
            ref_array: false,
        }
    }

    /// A reference array of `slots` slots.
    pub const fn ref_array(slots: u64) -> Self {
        TraceShape {
            slots,
            ref_array: true,
        }
    }

    /// The shape of an object with header `h`.
    #[inline]
    pub fn of(h: Header) -> Self {
        TraceShape {
            slots: h.ref_count() as u64,
            ref_array: h.kind() == ObjectKind::RefArray,
        }
    }
}

/// An object the collection copied (or could not copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceObject {
    /// Its size in bytes.
    pub size: u64,
    /// Where it went.
    pub fate: Fate,
    /// The worker that copied it.
    pub worker: u32,
    /// Its slot count and kind (read from a version 2 trace: as many slots as `refs`, not
    /// an array).
    pub shape: TraceShape,
    /// Its reference slots that the collection followed, as a range of
    /// [`TraceCollection::refs`], in slot order.
    pub refs: Range<usize>,
    /// For a reference array, the slot index of each of its `refs`, as a range (as long as
    /// `refs`) of [`TraceCollection::ref_slots`]; empty for other objects.
    pub ref_slots: Range<usize>,
}

/// The recorded work of one collection.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceCollection {
    /// The collection's number (`GC(id)`, the record's `id`).
    pub id: u64,
    /// Young or full.
    pub kind: TraceKind,
    /// GC workers taking part.
    pub workers: u32,
    /// Some object could not be copied.
    pub promotion_failed: bool,
    /// The root tasks, in the order the collector created them.
    pub roots: Vec<TraceRoot>,
    /// The objects, by id.
    pub objects: Vec<TraceObject>,
    /// The ids every object's followed slots refer to (see [`TraceObject::refs`]).
    pub refs: Vec<u32>,
    /// The slot indices of the reference arrays' refs (see [`TraceObject::ref_slots`]).
    pub ref_slots: Vec<u64>,
    /// Per object (ids are in address order), the bytes between the end of the object before
    /// it and its start, as the heap laid them out before the collection (0 for the first).
    /// Where the objects lie relative to each other is what makes a collection's memory
    /// accesses near or far. Empty when not known (a trace before [`GAPS_VERSION`]).
    pub gaps: Vec<u64>,
}

impl TraceCollection {
    /// The ids the followed slots of object `id` refer to.
    pub fn refs_of(&self, id: usize) -> &[u32] {
        &self.refs[self.objects[id].refs.clone()]
    }

    /// The slots of object `id`'s [`refs_of`](Self::refs_of) if it is a reference array
    /// (empty otherwise).
    pub fn ref_slots_of(&self, id: usize) -> &[u64] {
        &self.ref_slots[self.objects[id].ref_slots.clone()]
    }

    /// Objects and bytes with `fate`.
    pub fn count(&self, fate: Fate) -> (u64, u64) {
        self.objects
            .iter()
            .filter(|o| o.fate == fate)
            .fold((0, 0), |(n, b), o| (n + 1, b + o.size))
    }

    /// The frame payload of this collection in format `version` (what an older version cannot
    /// say is left out). A reference array's refs without their slot indices in
    /// [`TraceObject::ref_slots`] are written as in the slots after the last one given.
    fn encode(&self, version: u64) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + 8 * self.objects.len() + 2 * self.refs.len());
        put(&mut out, self.id);
        put(
            &mut out,
            match self.kind {
                TraceKind::Young => 0,
                TraceKind::Full => 1,
            },
        );
        put(&mut out, u64::from(self.workers));
        put(&mut out, u64::from(self.promotion_failed));
        put(&mut out, self.roots.len() as u64);
        for root in &self.roots {
            match root.kind {
                TraceRootKind::HandleStack { slots } => {
                    put(&mut out, 0);
                    put(&mut out, slots);
                }
                TraceRootKind::CardStripe {
                    bytes,
                    scanned_objects,
                } => {
                    put(&mut out, 1);
                    put(&mut out, bytes);
                    put(&mut out, scanned_objects);
                }
            }
            match root.affinity {
                TraceAffinity::Any => put(&mut out, 0),
                TraceAffinity::Prefers(w) => {
                    put(&mut out, 1);
                    put(&mut out, u64::from(w));
                }
                TraceAffinity::Stripe(w) => {
                    put(&mut out, 2);
                    put(&mut out, u64::from(w));
                }
            }
            put(&mut out, u64::from(root.ran_on));
            put(&mut out, root.reaches.len() as u64);
            let mut previous = 0;
            for &id in &root.reaches {
                put(&mut out, zigzag(i64::from(id) - previous));
                previous = i64::from(id);
            }
        }
        put(&mut out, self.objects.len() as u64);
        let shapes = version >= SHAPES_VERSION;
        for (id, object) in self.objects.iter().enumerate() {
            put(&mut out, object.size);
            if version >= GAPS_VERSION {
                // In heap words: objects are word-aligned.
                put(&mut out, self.gaps.get(id).copied().unwrap_or(0) / 8);
            }
            let fate = match object.fate {
                Fate::Survivor => 0,
                Fate::Promoted => 1,
                Fate::Stayed => 2,
                Fate::Marked => 3,
            };
            let refs = &self.refs[object.refs.clone()];
            let array = shapes && object.shape.ref_array;
            // Slots beyond the refs, plus 1, in the same byte when few (most objects); else 0
            // there and the slot count after the worker.
            let extra = match object.shape.slots.checked_sub(refs.len() as u64) {
                Some(e) if shapes && e < INLINE_SLOTS => e + 1,
                _ => 0,
            };
            put(&mut out, fate + 4 * u64::from(array) + 8 * extra);
            put(&mut out, u64::from(object.worker));
            if shapes && extra == 0 {
                put(&mut out, object.shape.slots);
            }
            put(&mut out, refs.len() as u64);
            for &r in refs {
                put(&mut out, zigzag(i64::from(r) - id as i64));
            }
            if array {
                let slots = &self.ref_slots[object.ref_slots.clone()];
                let mut next = 0;
                for k in 0..refs.len() {
                    let slot = slots.get(k).copied().unwrap_or(next).max(next);
                    put(&mut out, slot - next);
                    next = slot + 1;
                }
            }
        }
        out
    }

    /// The collection in frame payload `bytes` of format `version`.
    fn decode(bytes: &[u8], version: u64) -> Result<Self, String> {
        let mut p = Payload { bytes, at: 0 };
        let id = p.next()?;
        let kind = match p.next()? {
            0 => TraceKind::Young,
            1 => TraceKind::Full,
            k => return Err(format!("unknown collection kind {k}")),
        };
        let workers = p.small()?;
        let promotion_failed = p.next()? != 0;
        let root_count = p.len()?;
        let mut roots = Vec::with_capacity(root_count);
        for _ in 0..root_count {
            let kind = match p.next()? {
                0 => TraceRootKind::HandleStack { slots: p.next()? },
                1 => TraceRootKind::CardStripe {
                    bytes: p.next()?,
                    scanned_objects: p.next()?,
                },
                k => return Err(format!("unknown root kind {k}")),
            };
            let affinity = match p.next()? {
                0 => TraceAffinity::Any,
                1 => TraceAffinity::Prefers(p.small()?),
                2 => TraceAffinity::Stripe(p.small()?),
                a => return Err(format!("unknown affinity {a}")),
            };
            let ran_on = p.small()?;
            let n = p.len()?;
            let mut reaches = Vec::with_capacity(n);
            let mut previous = 0i64;
            for _ in 0..n {
                previous += unzigzag(p.next()?);
                reaches.push(to_id(previous)?);
            }
            roots.push(TraceRoot {
                kind,
                affinity,
                ran_on,
                reaches,
            });
        }
        let object_count = p.len()?;
        let shapes = version >= SHAPES_VERSION;
        let mut objects = Vec::with_capacity(object_count);
        let mut refs = Vec::new();
        let mut ref_slots = Vec::new();
        let with_gaps = version >= GAPS_VERSION;
        let mut gaps = Vec::with_capacity(if with_gaps { object_count } else { 0 });
        for id in 0..object_count {
            let size = p.next()?;
            if with_gaps {
                gaps.push(
                    p.next()?
                        .checked_mul(8)
                        .ok_or_else(|| format!("object {id} has a gap beyond any heap"))?,
                );
            }
            let shape = p.next()?;
            let fate = match shape % 4 {
                0 => Fate::Survivor,
                1 => Fate::Promoted,
                2 => Fate::Stayed,
                _ => Fate::Marked,
            };
            let (ref_array, extra) = match (shapes, shape / 4) {
                (false, 0) => (false, 0),
                (true, kind) if kind / 2 <= INLINE_SLOTS => (kind % 2 == 1, kind / 2),
                (false, _) => return Err(format!("unknown fate {shape}")),
                (true, _) => return Err(format!("unknown object shape {shape}")),
            };
            let worker = p.small()?;
            let explicit = if shapes && extra == 0 {
                Some(p.next()?)
            } else {
                None
            };
            let n = p.len()?;
            let start = refs.len();
            for _ in 0..n {
                let delta = unzigzag(p.next()?);
                refs.push(to_id(id as i64 + delta)?);
            }
            // Before version 3: an ordinary object with a slot per recorded ref.
            let slots = explicit.unwrap_or(n as u64 + extra.saturating_sub(1));
            if n as u64 > slots {
                return Err(format!(
                    "object {id} has {n} references but {slots} reference slots"
                ));
            }
            let slot_start = ref_slots.len();
            if ref_array {
                let mut next = 0u64;
                for _ in 0..n {
                    let slot = next
                        .checked_add(p.next()?)
                        .filter(|&s| s < slots)
                        .ok_or_else(|| {
                            format!("object {id} has a reference beyond its {slots} slots")
                        })?;
                    ref_slots.push(slot);
                    next = slot + 1;
                }
            }
            objects.push(TraceObject {
                size,
                fate,
                worker,
                shape: TraceShape { slots, ref_array },
                refs: start..refs.len(),
                ref_slots: slot_start..ref_slots.len(),
            });
        }
        if p.at != bytes.len() {
            return Err(format!(
                "{} bytes after the last object",
                bytes.len() - p.at
            ));
        }
        let collection = TraceCollection {
            id,
            kind,
            workers,
            promotion_failed,
            roots,
            objects,
            refs,
            ref_slots,
            gaps,
        };
        let objects = collection.objects.len();
        let dangling = collection
            .roots
            .iter()
            .flat_map(|r| &r.reaches)
            .chain(&collection.refs)
            .find(|&&r| r as usize >= objects);
        match dangling {
            Some(r) => Err(format!(
                "object {r} is referred to, but there are {objects}"
            )),
            None => Ok(collection),
        }
    }
}

/// Appends `v` as an unsigned LEB128 varint.
fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A frame payload being decoded.
struct Payload<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Payload<'_> {
    fn next(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.at) else {
                return Err("a number runs past the end of its frame".to_string());
            };
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a number is longer than 64 bits".to_string())
    }

    /// A number that must fit in 32 bits.
    fn small(&mut self) -> Result<u32, String> {
        let v = self.next()?;
        u32::try_from(v).map_err(|_| format!("{v} is out of range"))
    }

    /// A count of items, each at least one byte (so a corrupt count cannot reserve memory
    /// beyond the frame's size).
    fn len(&mut self) -> Result<usize, String> {
        let v = self.next()?;
        match usize::try_from(v) {
            Ok(n) if n <= self.bytes.len() - self.at => Ok(n),
            _ => Err(format!("a count of {v} exceeds its frame")),
        }
    }
}

/// An object id decoded from a delta.
fn to_id(v: i64) -> Result<u32, String> {
    u32::try_from(v).map_err(|_| format!("object id {v} is out of range"))
}

/// The file header of format `version`, recording `run` (as far as the version can).
fn header_as(version: u64, run: &TraceRun) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    put(&mut h, version);
    if version < 2 {
        return h;
    }
    let mut payload = Vec::new();
    let name = run.workload.as_deref().unwrap_or("").as_bytes();
    put(&mut payload, name.len() as u64);
    payload.extend_from_slice(name);
    put(&mut payload, run.heap_bytes.unwrap_or(0));
    if version >= SHAPES_VERSION {
        let plabs = run.plab_sizes.map_or((0, 0), |p| (p.young, p.old));
        put(&mut payload, plabs.0);
        put(&mut payload, plabs.1);
    }
    put(&mut h, payload.len() as u64);
    h.extend(payload);
    h
}

/// The file header this module writes, recording `run`.
fn header(run: &TraceRun) -> Vec<u8> {
    header_as(VERSION, run)
}

/// The bytes of a whole trace of `collections` as format `version` (from [`OLDEST_VERSION`]
/// to [`VERSION`]) writes it, end marker included: what an older version cannot say is left
/// out (the run before version 2; the PLAB sizes and the objects' [`TraceShape`]s before 3).
/// For tests of readers that must keep reading older traces; `concord run` writes only
/// [`VERSION`], through [`GcTraceFile`].
pub fn trace_bytes_as(version: u64, run: &TraceRun, collections: &[TraceCollection]) -> Vec<u8> {
    assert!(
        (OLDEST_VERSION..=VERSION).contains(&version),
        "GC trace version {version} is not one this module writes"
    );
    let mut bytes = header_as(version, run);
    for c in collections {
        let payload = c.encode(version);
        put(&mut bytes, payload.len() as u64);
        bytes.extend(payload);
    }
    bytes.push(0);
    bytes
}

impl TraceRun {
    /// The run recorded in `run` payload `bytes` of format `version`; fields after the known
    /// ones are skipped.
    fn decode(bytes: &[u8], version: u64) -> Result<Self, String> {
        let mut p = Payload { bytes, at: 0 };
        let n = p.len()?;
        let name = &bytes[p.at..p.at + n];
        p.at += n;
        let name =
            std::str::from_utf8(name).map_err(|_| "the workload name is not UTF-8".to_string())?;
        let heap_bytes = p.next()?;
        let plab_sizes = if version >= SHAPES_VERSION {
            let (young, old) = (p.next()?, p.next()?);
            let range = *PLAB_RANGE.start() as u64..=*PLAB_RANGE.end() as u64;
            match (young, old) {
                (0, 0) => None,
                (young, old) if range.contains(&young) && range.contains(&old) => {
                    Some(PlabSizes { young, old })
                }
                _ => {
                    return Err(format!(
                        "PLAB sizes {young} and {old} bytes (allowed: {} to {} bytes each, or \
                         both 0: not known)",
                        range.start(),
                        range.end()
                    ))
                }
            }
        } else {
            None
        };
        Ok(TraceRun {
            workload: (!name.is_empty()).then(|| name.to_string()),
            heap_bytes: (heap_bytes != 0).then_some(heap_bytes),
            plab_sizes,
        })
    }
}

/// A GC trace being written: staged beside its path, one whole frame per collection, stopped
/// at the first failed write and reported when finished, as the records file is.
#[derive(Debug)]
pub struct GcTraceFile {
    out: RecordLines,
}

impl GcTraceFile {
    /// Start the trace for `path` (its header written); `path` itself is replaced only by
    /// [`GcTraceFile::finish`].
    /// The header records the heap's size and PLAB sizes, and the workload of the
    /// [`recording`] this is called in, if any.
    pub fn create(path: &Path, heap_bytes: u64, plab_sizes: PlabSizes) -> io::Result<Self> {
        let run = TraceRun {
            workload: RECORDING.with(|r| r.borrow().clone()),
            heap_bytes: Some(heap_bytes),
            plab_sizes: Some(plab_sizes),
        };
        Ok(Self {
            out: RecordLines::create_binary(OutputKind::GcTrace, path, &header(&run))?,
        })
    }

    /// Append one collection's frame.
    pub fn write(&mut self, collection: &TraceCollection) {
        self.out.write_chunk(collection.id, || {
            let payload = collection.encode(VERSION);
            let mut frame = Vec::with_capacity(payload.len() + 5);
            put(&mut frame, payload.len() as u64);
            frame.extend_from_slice(&payload);
            Ok(frame)
        });
    }

    /// Write the end marker and put the file in place; an error says what it is missing.
    pub fn finish(mut self) -> Result<(), OutputFailure> {
        self.out.write_notice_bytes(&[0]);
        self.out.finish()
    }
}

/// Why a GC trace could not be read (further).
#[derive(Debug)]
pub enum GcTraceError {
    /// Reading failed.
    Io(io::Error),
    /// Not a GC trace.
    NotATrace,
    /// A version this reader does not know.
    Version(u64),
    /// The file ends without its end marker: inside the frame after `after` (the last whole
    /// collection read, `None` before the first), or just after it.
    Truncated {
        /// The id of the last whole collection.
        after: Option<u64>,
    },
    /// A frame that does not decode.
    Corrupt {
        /// The id of the last whole collection before it.
        after: Option<u64>,
        /// What is wrong.
        reason: String,
    },
}

impl fmt::Display for GcTraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let after = |after: &Option<u64>| match after {
            Some(id) => format!("after GC({id})"),
            None => "before its first collection".to_string(),
        };
        match self {
            GcTraceError::Io(e) => write!(f, "reading the GC trace failed: {e}"),
            GcTraceError::NotATrace => f.write_str("not a GC trace (no CGCTRACE header)"),
            GcTraceError::Version(v) => write!(
                f,
                "GC trace version {v} is not supported (this reader reads versions \
                 {OLDEST_VERSION} to {VERSION})"
            ),
            GcTraceError::Truncated { after: a } => {
                write!(f, "the GC trace is truncated {}", after(a))
            }
            GcTraceError::Corrupt { after: a, reason } => {
                write!(f, "the GC trace is corrupt {}: {reason}", after(a))
            }
        }
    }
}

impl std::error::Error for GcTraceError {}

/// Reads a GC trace collection by collection. The iterator yields each collection, then —
/// for a file without its end marker or with a damaged frame — one error, and then ends.
pub struct GcTraceReader<R> {
    input: R,
    version: u64,
    run: TraceRun,
    last: Option<u64>,
    done: bool,
}

impl<R: Read> GcTraceReader<R> {
    /// Check the header of `input` and start reading.
    pub fn new(mut input: R) -> Result<Self, GcTraceError> {
        let mut magic = [0u8; 8];
        match input.read_exact(&mut magic) {
            Ok(()) if &magic == MAGIC => {}
            Ok(()) => return Err(GcTraceError::NotATrace),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(GcTraceError::NotATrace)
            }
            Err(e) => return Err(GcTraceError::Io(e)),
        }
        let mut reader = GcTraceReader {
            input,
            version: OLDEST_VERSION,
            run: TraceRun::default(),
            last: None,
            done: false,
        };
        match reader.varint()? {
            Some(OLDEST_VERSION) => Ok(reader),
            Some(v) if (OLDEST_VERSION..=VERSION).contains(&v) => {
                reader.version = v;
                reader.run = reader.read_run()?;
                Ok(reader)
            }
            Some(v) => Err(GcTraceError::Version(v)),
            None => Err(GcTraceError::Truncated { after: None }),
        }
    }

    /// What the trace says about the run it was recorded from (nothing, for version 1; no
    /// PLAB sizes before version 3).
    pub fn run(&self) -> &TraceRun {
        &self.run
    }

    /// The trace's format version.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The `run` record after the version.
    fn read_run(&mut self) -> Result<TraceRun, GcTraceError> {
        let truncated = GcTraceError::Truncated { after: None };
        let len = self.varint()?.ok_or(truncated)?;
        if len > MAX_RUN_BYTES {
            return Err(self.corrupt(format!(
                "its run record has {len} bytes (allowed: at most {MAX_RUN_BYTES})"
            )));
        }
        let mut payload = Vec::new();
        (&mut self.input)
            .take(len)
            .read_to_end(&mut payload)
            .map_err(GcTraceError::Io)?;
        if (payload.len() as u64) < len {
            return Err(GcTraceError::Truncated { after: None });
        }
        TraceRun::decode(&payload, self.version)
            .map_err(|r| self.corrupt(format!("its run record: {r}")))
    }

    /// The next varint of the file, `None` at its end (also inside the varint).
    fn varint(&mut self) -> Result<Option<u64>, GcTraceError> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let mut b = [0u8];
            match self.input.read_exact(&mut b) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
                Err(e) => return Err(GcTraceError::Io(e)),
            }
            v |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                return Ok(Some(v));
            }
        }
        Err(self.corrupt("a frame length is longer than 64 bits".to_string()))
    }

    fn corrupt(&self, reason: String) -> GcTraceError {
        GcTraceError::Corrupt {
            after: self.last,
            reason,
        }
    }

    fn read_frame(&mut self) -> Result<Option<TraceCollection>, GcTraceError> {
        let truncated = GcTraceError::Truncated { after: self.last };
        let len = match self.varint()? {
            None => return Err(truncated),
            Some(0) => return Ok(None),
            Some(len) => len,
        };
        let mut payload = Vec::new();
        let read = (&mut self.input)
            .take(len)
            .read_to_end(&mut payload)
            .map_err(GcTraceError::Io)?;
        if (read as u64) < len {
            return Err(truncated);
        }
        let collection =
            TraceCollection::decode(&payload, self.version).map_err(|r| self.corrupt(r))?;
        self.last = Some(collection.id);
        Ok(Some(collection))
    }
}

impl<R: Read> Iterator for GcTraceReader<R> {
    type Item = Result<TraceCollection, GcTraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.read_frame();
        if !matches!(next, Ok(Some(_))) {
            self.done = true;
        }
        next.transpose()
    }
}

// ---- recording (the young collector's side) ----

/// A root task as the collector formed it, before it runs: what [`RawTrace::merge`] needs to
/// put the workers' records of it in creation order.
#[derive(Clone, Copy, Debug)]
pub struct RootShape {
    /// Its identity while the collection runs: the first handle-stack slot's address, or the
    /// stripe's start.
    pub key: usize,
    /// Kind and extent (`scanned_objects` is filled in from the worker that ran it).
    pub kind: TraceRootKind,
    /// Its affinity tag.
    pub affinity: TraceAffinity,
}

/// The GC trace's description of root tasks given as (key, kind, affinity tag), in creation
/// order.
pub fn root_shapes(
    tasks: impl Iterator<Item = (usize, TraceRootKind, Affinity)>,
) -> Vec<RootShape> {
    tasks
        .map(|(key, kind, affinity)| RootShape {
            key,
            kind,
            affinity: match affinity {
                Affinity::Any => TraceAffinity::Any,
                Affinity::Prefers(w) => TraceAffinity::Prefers(w as u32),
                Affinity::Stripe(w) => TraceAffinity::Stripe(w as u32),
            },
        })
        .collect()
}

/// One root task as a worker ran it.
#[derive(Debug)]
struct RanRoot {
    key: usize,
    stripe: bool,
    scanned_objects: u64,
    reaches: Range<usize>,
}

/// One object as a worker copied it.
#[derive(Debug)]
struct RawObject {
    addr: usize,
    size: u64,
    fate: Fate,
    shape: TraceShape,
    refs: Range<usize>,
    /// A reference array's: the slot of each of `refs`, in [`TraceBuffer::ref_slots`].
    ref_slots: Range<usize>,
}

/// What one GC worker recorded during a collection: addresses as they were before it.
#[derive(Debug, Default)]
pub struct TraceBuffer {
    roots: Vec<RanRoot>,
    reaches: Vec<usize>,
    objects: Vec<RawObject>,
    refs: Vec<usize>,
    ref_slots: Vec<u64>,
}

impl TraceBuffer {
    /// A root task (identified by `key`, see [`RootShape`]) starts on this worker.
    pub fn begin_root(&mut self, key: usize, stripe: bool) {
        let at = self.reaches.len();
        self.roots.push(RanRoot {
            key,
            stripe,
            scanned_objects: 0,
            reaches: at..at,
        });
    }

    /// The running root task's slot refers to `obj`, which the collection copies.
    #[inline]
    pub fn root_reaches(&mut self, obj: usize) {
        self.reaches.push(obj);
        if let Some(root) = self.roots.last_mut() {
            root.reaches.end = self.reaches.len();
        }
    }

    /// The running card stripe scans the slots of one more old object.
    #[inline]
    pub fn stripe_scans_object(&mut self) {
        if let Some(root) = self.roots.last_mut() {
            root.scanned_objects += 1;
        }
    }

    /// This worker copied (or, `Stayed`, self-forwarded; or marked) the object at `addr`, of
    /// `shape`; `refs` are (slot index, address) of its slots that the collection follows, in
    /// slot order (the slot indices are kept for a reference array only).
    #[inline]
    pub fn object(
        &mut self,
        addr: usize,
        size: usize,
        fate: Fate,
        shape: TraceShape,
        refs: impl Iterator<Item = (usize, usize)>,
    ) {
        let start = self.refs.len();
        let slot_start = self.ref_slots.len();
        if shape.ref_array {
            for (slot, v) in refs {
                self.ref_slots.push(slot as u64);
                self.refs.push(v);
            }
        } else {
            self.refs.extend(refs.map(|(_, v)| v));
        }
        self.objects.push(RawObject {
            addr,
            size: size as u64,
            fate,
            shape,
            refs: start..self.refs.len(),
            ref_slots: slot_start..self.ref_slots.len(),
        });
    }
}

/// A collection's trace as the workers left it: addresses, not yet ids.
#[derive(Debug)]
pub struct RawTrace {
    /// Young or full.
    pub kind: TraceKind,
    /// The root tasks in creation order.
    pub roots: Vec<RootShape>,
    /// Each worker's buffer, by worker id.
    pub buffers: Vec<TraceBuffer>,
    /// Some object could not be copied.
    pub promotion_failed: bool,
}

impl RawTrace {
    /// The trace of a collection of `kind` whose root tasks were `roots`, from its workers'
    /// buffers in worker order (a worker without one recorded nothing).
    pub fn gather(
        kind: TraceKind,
        roots: Vec<RootShape>,
        buffers: impl Iterator<Item = Option<Box<TraceBuffer>>>,
        promotion_failed: bool,
    ) -> Self {
        RawTrace {
            kind,
            roots,
            buffers: buffers
                .map(|b| b.map_or_else(TraceBuffer::default, |b| *b))
                .collect(),
            promotion_failed,
        }
    }

    /// The collection `id`'s trace: objects numbered in address order, every address turned
    /// into an id. Run after the world has been resumed (it reads no heap memory).
    pub fn merge(self, id: u64) -> TraceCollection {
        let mut all: Vec<(usize, u32, &RawObject)> = self
            .buffers
            .iter()
            .enumerate()
            .flat_map(|(w, b)| b.objects.iter().map(move |o| (o.addr, w as u32, o)))
            .collect();
        all.sort_unstable_by_key(|o| o.0);
        let id_of = |addr: usize| {
            let id = all.binary_search_by_key(&addr, |o| o.0).ok();
            debug_assert!(
                id.is_some(),
                "traced reference {addr:#x} to no traced object"
            );
            id.map(|i| i as u32)
        };
        let ids =
            |addrs: &[usize]| -> Vec<u32> { addrs.iter().filter_map(|&a| id_of(a)).collect() };
        let mut objects = Vec::with_capacity(all.len());
        let mut refs = Vec::new();
        let mut ref_slots = Vec::new();
        for &(_, worker, o) in &all {
            let buffer = &self.buffers[worker as usize];
            let start = refs.len();
            let slot_start = ref_slots.len();
            let addrs = &buffer.refs[o.refs.clone()];
            if o.shape.ref_array {
                // A reference dropped (to no traced object) drops its slot index with it.
                for (&a, &slot) in addrs.iter().zip(&buffer.ref_slots[o.ref_slots.clone()]) {
                    if let Some(id) = id_of(a) {
                        refs.push(id);
                        ref_slots.push(slot);
                    }
                }
            } else {
                refs.extend(ids(addrs));
            }
            objects.push(TraceObject {
                size: o.size,
                fate: o.fate,
                worker,
                shape: o.shape,
                refs: start..refs.len(),
                ref_slots: slot_start..ref_slots.len(),
            });
        }
        let index: HashMap<(usize, bool), usize> = self
            .roots
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (
                    (r.key, matches!(r.kind, TraceRootKind::CardStripe { .. })),
                    i,
                )
            })
            .collect();
        let mut roots: Vec<TraceRoot> = self
            .roots
            .iter()
            .map(|r| TraceRoot {
                kind: r.kind,
                affinity: r.affinity,
                ran_on: 0,
                reaches: Vec::new(),
            })
            .collect();
        for (w, buffer) in self.buffers.iter().enumerate() {
            for ran in &buffer.roots {
                let Some(&i) = index.get(&(ran.key, ran.stripe)) else {
                    debug_assert!(false, "a root task ran that was not formed");
                    continue;
                };
                let root = &mut roots[i];
                root.ran_on = w as u32;
                root.reaches = ids(&buffer.reaches[ran.reaches.clone()]);
                if let TraceRootKind::CardStripe {
                    scanned_objects, ..
                } = &mut root.kind
                {
                    *scanned_objects = ran.scanned_objects;
                }
            }
        }
        let mut end = None::<usize>;
        let gaps = all
            .iter()
            .map(|&(addr, _, o)| {
                let gap = end.map_or(0, |e| addr.saturating_sub(e));
                end = Some(addr + o.size as usize);
                gap as u64
            })
            .collect();
        TraceCollection {
            id,
            kind: self.kind,
            workers: self.buffers.len() as u32,
            promotion_failed: self.promotion_failed,
            roots,
            objects,
            refs,
            ref_slots,
            gaps,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-made collections: a handle-stack root and a card stripe, a survivor that refers to
    /// a promoted object and to itself, an object that stayed, a huge size; an empty one; a
    /// full collection's marked object that refers to itself and a marked reference array of
    /// 700 slots (three chunks and more) that refers to both, from slots 0, 256 and 699.
    fn collections() -> Vec<TraceCollection> {
        let first = TraceCollection {
            id: 3,
            kind: TraceKind::Young,
            workers: 2,
            promotion_failed: false,
            roots: vec![
                TraceRoot {
                    kind: TraceRootKind::HandleStack { slots: 4096 },
                    affinity: TraceAffinity::Prefers(1),
                    ran_on: 1,
                    reaches: vec![2, 0, 2],
                },
                TraceRoot {
                    kind: TraceRootKind::CardStripe {
                        bytes: 65536,
                        scanned_objects: 7,
                    },
                    affinity: TraceAffinity::Stripe(0),
                    ran_on: 0,
                    reaches: vec![1],
                },
            ],
            objects: vec![
                TraceObject {
                    size: 24,
                    fate: Fate::Survivor,
                    worker: 1,
                    shape: TraceShape::fixed(2),
                    refs: 0..2,
                    ref_slots: 0..0,
                },
                TraceObject {
                    size: 1 << 40,
                    fate: Fate::Promoted,
                    worker: 0,
                    shape: TraceShape::fixed(0),
                    refs: 2..2,
                    ref_slots: 0..0,
                },
                TraceObject {
                    size: 16,
                    fate: Fate::Stayed,
                    worker: 1,
                    shape: TraceShape::fixed(5),
                    refs: 2..3,
                    ref_slots: 0..0,
                },
            ],
            refs: vec![1, 0, 0],
            ref_slots: Vec::new(),
            gaps: vec![0, 8, 1 << 20],
        };
        let empty = TraceCollection {
            id: 4,
            workers: 1,
            promotion_failed: true,
            ..Default::default()
        };
        let full = TraceCollection {
            id: 5,
            kind: TraceKind::Full,
            workers: 1,
            promotion_failed: false,
            roots: vec![TraceRoot {
                kind: TraceRootKind::HandleStack { slots: 1 },
                affinity: TraceAffinity::Any,
                ran_on: 0,
                reaches: vec![0],
            }],
            objects: vec![
                TraceObject {
                    size: 40,
                    fate: Fate::Marked,
                    worker: 0,
                    shape: TraceShape::fixed(1),
                    refs: 0..1,
                    ref_slots: 0..0,
                },
                TraceObject {
                    size: 8 + 8 * 700,
                    fate: Fate::Marked,
                    worker: 0,
                    shape: TraceShape::ref_array(700),
                    refs: 1..4,
                    ref_slots: 0..3,
                },
            ],
            refs: vec![0, 1, 0, 1],
            ref_slots: vec![0, 256, 699],
            gaps: vec![0, 4096],
        };
        vec![first, empty, full]
    }

    /// The bytes of a trace of `collections`, with or without its end marker.
    fn file(collections: &[TraceCollection], end: bool) -> Vec<u8> {
        let mut bytes = trace_bytes_as(VERSION, &TraceRun::default(), collections);
        if !end {
            bytes.pop();
        }
        bytes
    }

    /// PLAB sizes of a heap that is not configured with the defaults.
    const PLABS: PlabSizes = PlabSizes {
        young: 16 << 10,
        old: 4 << 10,
    };

    fn read(bytes: &[u8]) -> Vec<Result<TraceCollection, GcTraceError>> {
        GcTraceReader::new(bytes).unwrap().collect()
    }

    #[test]
    fn varints_and_zigzag_round_trip() {
        for v in [0, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut out = Vec::new();
            put(&mut out, v);
            assert_eq!(Payload { bytes: &out, at: 0 }.next(), Ok(v));
        }
        let mut out = Vec::new();
        put(&mut out, 300);
        assert_eq!(out, [0xac, 0x02]);
        for v in [0, -1, 1, -64, 64, i64::from(u32::MAX), -i64::from(u32::MAX)] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!((zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)), (0, 1, 2, 3));
    }

    #[test]
    fn the_reader_reads_back_what_the_writer_wrote() {
        let dir = std::env::temp_dir().join(format!("concord-gc-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        let mut out = GcTraceFile::create(&path, 8 << 20, PLABS).unwrap();
        for c in collections() {
            out.write(&c);
        }
        out.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        // The writer's header records the heap; the frames are what `file` writes after its own.
        let written = header(&TraceRun {
            workload: None,
            heap_bytes: Some(8 << 20),
            plab_sizes: Some(PLABS),
        });
        let expected = file(&collections(), true);
        assert_eq!(bytes[..written.len()], written[..]);
        assert_eq!(
            bytes[written.len()..],
            expected[header(&TraceRun::default()).len()..]
        );
        let back: Vec<_> = read(&bytes).into_iter().map(Result::unwrap).collect();
        assert_eq!(back, collections());
        assert_eq!(back[0].refs_of(0), [1, 0]);
        assert_eq!(back[0].count(Fate::Survivor), (1, 24));
        assert_eq!(back[2].objects[1].shape, TraceShape::ref_array(700));
        assert_eq!(back[2].ref_slots_of(1), [0, 256, 699]);
        assert_eq!(back[2].ref_slots_of(0), [] as [u64; 0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_file_is_reported_as_truncated_after_its_last_whole_collection() {
        let whole = file(&collections(), true);
        // Without the end marker: every collection, then truncated after GC(5).
        let got = read(&whole[..whole.len() - 1]);
        assert_eq!(got.len(), 4);
        assert!(matches!(
            got[3],
            Err(GcTraceError::Truncated { after: Some(5) })
        ));
        // Inside the first frame: nothing, truncated before the first collection.
        let got = read(&whole[..header(&TraceRun::default()).len() + 5]);
        assert_eq!(got.len(), 1);
        let err = got[0].as_ref().unwrap_err();
        assert!(matches!(err, GcTraceError::Truncated { after: None }));
        assert_eq!(
            err.to_string(),
            "the GC trace is truncated before its first collection"
        );
    }

    #[test]
    fn bad_headers_and_frames_are_refused() {
        assert!(matches!(
            GcTraceReader::new(&b"{\"id\":0}\n"[..]),
            Err(GcTraceError::NotATrace)
        ));
        let mut v5 = MAGIC.to_vec();
        v5.push(5);
        assert!(matches!(
            GcTraceReader::new(&v5[..]),
            Err(GcTraceError::Version(5))
        ));
        // More references than slots, and a reference array's reference beyond its slots.
        let mut bad = collections();
        bad[0].objects[0].shape = TraceShape::fixed(1);
        let err = read(&file(&bad, true)).remove(0).unwrap_err().to_string();
        assert!(
            err.ends_with("object 0 has 2 references but 1 reference slots"),
            "{err}"
        );
        let mut bad = collections();
        bad[2].objects[1].shape = TraceShape::ref_array(699);
        let err = read(&file(&bad, true)).remove(2).unwrap_err().to_string();
        assert!(
            err.ends_with("object 1 has a reference beyond its 699 slots"),
            "{err}"
        );
        // A reference to an object that is not in the frame.
        let mut bad = collections();
        bad[0].refs[0] = 9;
        let got = read(&file(&bad, true));
        match &got[0] {
            Err(e @ GcTraceError::Corrupt { after: None, .. }) => assert_eq!(
                e.to_string(),
                "the GC trace is corrupt before its first collection: object 9 is referred to, \
                 but there are 3"
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_trace_started_inside_recording_records_the_workload_and_heap() {
        let dir = std::env::temp_dir().join(format!("concord-gc-trace-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.trace");
        let run = TraceRun {
            workload: Some("binary-trees".into()),
            heap_bytes: Some(84 << 20),
            plab_sizes: Some(PLABS),
        };
        let out = recording("binary-trees", || {
            GcTraceFile::create(&path, 84 << 20, PLABS)
        })
        .unwrap();
        out.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(GcTraceReader::new(&bytes[..]).unwrap().run(), &run);
        // Outside `recording` (and after it) only the heap is known.
        GcTraceFile::create(&path, 8 << 20, PlabSizes::default())
            .unwrap()
            .finish()
            .unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            GcTraceReader::new(&bytes[..]).unwrap().run(),
            &TraceRun {
                workload: None,
                heap_bytes: Some(8 << 20),
                plab_sizes: Some(PlabSizes::default()),
            }
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn older_versions_are_read_as_they_were_written_and_later_run_fields_are_skipped() {
        // What versions 1 and 2 could say: the objects without their shapes (read as ordinary
        // objects with a slot per recorded reference), no PLAB sizes (the defaults stand in).
        let mut as_before = collections();
        for c in &mut as_before {
            for o in &mut c.objects {
                o.shape = TraceShape::fixed(o.refs.len() as u64);
                o.ref_slots = 0..0;
            }
            c.ref_slots.clear();
            c.gaps.clear();
        }
        let run = TraceRun {
            workload: Some("gcbench".into()),
            heap_bytes: Some(8 << 20),
            plab_sizes: Some(PLABS),
        };
        for version in [1, 2] {
            let bytes = trace_bytes_as(version, &run, &collections());
            // (Version 1: the frames follow the version at once.)
            assert_eq!((&bytes[..8], bytes[8]), (&MAGIC[..], version as u8));
            let reader = GcTraceReader::new(&bytes[..]).unwrap();
            assert_eq!(reader.version(), version);
            let expected_run = match version {
                1 => TraceRun::default(),
                _ => TraceRun {
                    plab_sizes: None,
                    ..run.clone()
                },
            };
            assert_eq!(reader.run(), &expected_run, "version {version}");
            assert_eq!(reader.run().plab_sizes(), PlabSizes::default());
            assert_eq!(
                PlabSizes::default(),
                PlabSizes {
                    young: crate::GcConfig::default().young_plab_size as u64,
                    old: crate::GcConfig::default().old_plab_size as u64,
                }
            );
            let back: Vec<_> = reader.map(Result::unwrap).collect();
            assert_eq!(back, as_before, "version {version}");
        }
        // Version 3 keeps everything but the gaps between objects; version 4 keeps them too.
        let v3 = trace_bytes_as(3, &run, &collections());
        let reader = GcTraceReader::new(&v3[..]).unwrap();
        assert_eq!(reader.run(), &run);
        let mut without_gaps = collections();
        for c in &mut without_gaps {
            c.gaps.clear();
        }
        assert_eq!(reader.map(Result::unwrap).collect::<Vec<_>>(), without_gaps);
        let v4 = trace_bytes_as(4, &run, &collections());
        let reader = GcTraceReader::new(&v4[..]).unwrap();
        assert_eq!(
            reader.map(Result::unwrap).collect::<Vec<_>>(),
            collections()
        );
        // A run record with a field this reader does not know yet.
        let mut payload = b"\x04gcbe".to_vec();
        put(&mut payload, 1 << 20);
        put(&mut payload, 16 << 10);
        put(&mut payload, 4 << 10);
        payload.extend_from_slice(&[0x2a, 0x2a]);
        let mut later = MAGIC.to_vec();
        put(&mut later, VERSION);
        put(&mut later, payload.len() as u64);
        later.extend(payload);
        later.push(0);
        let reader = GcTraceReader::new(&later[..]).unwrap();
        assert_eq!(reader.run().workload.as_deref(), Some("gcbe"));
        assert_eq!(reader.run().heap_bytes, Some(1 << 20));
        assert_eq!(reader.run().plab_sizes, Some(PLABS));
        assert_eq!(reader.count(), 0);
        // A PLAB size no configuration accepts is refused by name.
        let mut payload = b"\x00".to_vec();
        put(&mut payload, 1 << 20);
        put(&mut payload, 16 << 10);
        put(&mut payload, 3);
        let mut bad = MAGIC.to_vec();
        put(&mut bad, VERSION);
        put(&mut bad, payload.len() as u64);
        bad.extend(payload);
        let err = GcTraceReader::new(&bad[..]).err().unwrap().to_string();
        assert_eq!(
            err,
            "the GC trace is corrupt before its first collection: its run record: PLAB sizes \
             16384 and 3 bytes (allowed: 1024 to 1048576 bytes each, or both 0: not known)"
        );
        // A run record longer than any run needs is refused before it is read.
        let mut huge = MAGIC.to_vec();
        put(&mut huge, VERSION);
        put(&mut huge, 1 << 40);
        let err = GcTraceReader::new(&huge[..]).err().unwrap().to_string();
        assert_eq!(
            err,
            "the GC trace is corrupt before its first collection: its run record has \
             1099511627776 bytes (allowed: at most 4096)"
        );
    }

    #[test]
    fn merge_numbers_objects_by_address_and_puts_roots_in_creation_order() {
        let roots = vec![
            RootShape {
                key: 0x10,
                kind: TraceRootKind::HandleStack { slots: 2 },
                affinity: TraceAffinity::Prefers(0),
            },
            RootShape {
                key: 0x9000,
                kind: TraceRootKind::CardStripe {
                    bytes: 4096,
                    scanned_objects: 0,
                },
                affinity: TraceAffinity::Stripe(1),
            },
        ];
        // Worker 0 ran the stripe and copied 0x300; worker 1 ran the handle stack and copied
        // 0x100 (which refers to 0x300 twice) and 0x200.
        let mut w0 = TraceBuffer::default();
        w0.begin_root(0x9000, true);
        w0.stripe_scans_object();
        w0.stripe_scans_object();
        w0.root_reaches(0x300);
        w0.object(
            0x300,
            32,
            Fate::Promoted,
            TraceShape::fixed(0),
            [].into_iter(),
        );
        let mut w1 = TraceBuffer::default();
        w1.begin_root(0x10, false);
        w1.root_reaches(0x200);
        w1.root_reaches(0x100);
        w1.object(
            0x200,
            16,
            Fate::Survivor,
            TraceShape::fixed(1),
            [(0, 0x100)].into_iter(),
        );
        // A reference array of 600 slots: its refs keep their slots.
        w1.object(
            0x100,
            48,
            Fate::Survivor,
            TraceShape::ref_array(600),
            [(1, 0x300), (598, 0x300)].into_iter(),
        );
        let merged = RawTrace {
            kind: TraceKind::Young,
            roots,
            buffers: vec![w0, w1],
            promotion_failed: false,
        }
        .merge(7);
        assert_eq!(merged.id, 7);
        assert_eq!(merged.workers, 2);
        let sizes: Vec<u64> = merged.objects.iter().map(|o| o.size).collect();
        assert_eq!(sizes, [48, 16, 32]);
        // 0x100 + 48 = 0x130, 0x200 + 16 = 0x210: the bytes between them.
        assert_eq!(merged.gaps, [0, 0x200 - 0x130, 0x300 - 0x210]);
        let workers: Vec<u32> = merged.objects.iter().map(|o| o.worker).collect();
        assert_eq!(workers, [1, 1, 0]);
        assert_eq!(merged.refs_of(0), [2, 2]);
        assert_eq!(merged.ref_slots_of(0), [1, 598]);
        assert_eq!(merged.objects[0].shape, TraceShape::ref_array(600));
        assert_eq!(merged.ref_slots_of(1), [] as [u64; 0]);
        assert_eq!(merged.refs_of(1), [0]);
        assert_eq!(merged.refs_of(2), [] as [u32; 0]);
        assert_eq!(merged.roots[0].reaches, [1, 0]);
        assert_eq!(merged.roots[0].ran_on, 1);
        assert_eq!(merged.roots[1].reaches, [2]);
        assert_eq!(merged.roots[1].ran_on, 0);
        assert_eq!(
            merged.roots[1].kind,
            TraceRootKind::CardStripe {
                bytes: 4096,
                scanned_objects: 2
            }
        );
        // And it survives the file.
        let back = read(&file(std::slice::from_ref(&merged), true));
        assert_eq!(back[0].as_ref().unwrap(), &merged);
    }
}
