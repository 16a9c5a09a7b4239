//! Replaying recorded collections: a GC trace (`concord run … --gc-trace FILE`,
//! [`concord::telemetry::gc_trace`]) read into a compact in-memory form ([`ReplayCollection`]),
//! the parallel task that redoes one collection's work on the collector's own engine
//! ([`threads::ReplayTask`]), and the records and summary figures of the replayed collections
//! in the schema `concord run` writes ([`output`]).
//!
//! # One task source, two engines
//!
//! `task.rs` names the engine only as `super::parallel` (its module's alias). It is compiled
//! here once, in [`threads`] (`use concord::parallel;`): real threads on a real
//! `concord::parallel::WorkerPool`, how its tests check that every object is copied exactly
//! once; and in [`simulated`] (`use crate::parallel;`): the collector's `parallel` module
//! compiled against the simulated sync layer, what [`driver::simulate`] runs.

pub mod driver;
pub mod memory;
pub mod output;
#[cfg(not(test))]
pub mod simulated;
pub mod threads;

use std::fmt;
use std::fs::File;
use std::io::{BufReader, Read};
use std::ops::Range;
use std::path::Path;

use concord::telemetry::gc_trace::{
    Fate, GcTraceError, GcTraceReader, PlabSizes, TraceAffinity, TraceCollection, TraceKind,
    TraceRootKind, TraceRun,
};

/// A root task of a recorded collection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayRoot {
    /// Handle-stack chunk or card stripe, with its extent.
    pub kind: TraceRootKind,
    /// The worker its tag names (000 §4.1), as recorded.
    pub affinity: TraceAffinity,
    /// Its reached objects, as a range of [`ReplayCollection`]'s reach list.
    reaches: Range<u32>,
}

/// One recorded collection, compactly: per object 4 bytes of size, 4 of slot count, 1 of fate,
/// 1 of kind (reference array or not) and 4 of reference offset, plus 4 bytes per followed
/// reference and per root reach, and for a reference array 8 bytes and 4 per reference (its
/// slot index) (a [`TraceCollection`] holds about 64 bytes per object).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReplayCollection {
    /// The collection's number in the recorded run (`GC(id)`).
    pub id: u64,
    /// Young (its copying phase) or full (its marking phase).
    pub kind: TraceKind,
    /// GC workers that took part in the recorded run.
    pub workers: u32,
    /// Some object could not be copied in the recorded run.
    pub promotion_failed: bool,
    /// Root tasks, in the order the collector created them.
    pub roots: Vec<ReplayRoot>,
    /// The PLAB sizes of the recorded run ([`TraceRun::plab_sizes`]; the configuration's
    /// defaults for a collection not read from a trace that records them).
    pub plab_sizes: PlabSizes,
    reaches: Vec<u32>,
    sizes: Vec<u32>,
    /// Per object, all its reference slots ([`concord::telemetry::gc_trace::TraceShape`]).
    slots: Vec<u32>,
    fates: Vec<Fate>,
    ref_arrays: Vec<bool>,
    /// `refs[ref_starts[id]..ref_starts[id + 1]]` are object `id`'s followed references.
    ref_starts: Vec<u32>,
    refs: Vec<u32>,
    /// The reference arrays with references, by id (ascending): the slots of array
    /// `array_ids[k]`'s references are `array_slots[array_slot_starts[k]..][..its refs]`.
    array_ids: Vec<u32>,
    array_slot_starts: Vec<u32>,
    array_slots: Vec<u32>,
    /// Per object, where it lay before the collection, bytes from the first object
    /// ([`TraceCollection::gaps`]); empty when the trace does not say.
    addrs: Vec<u64>,
    /// The bytes of the cache lines those objects lay on ([`crate::exec::reach::footprint`]); 0 when
    /// the trace does not say where they lay.
    footprint: u64,
}

/// Why a recorded collection cannot be held in the compact form.
#[derive(Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The collection's id.
    pub id: u64,
    /// What exceeds 32 bits.
    pub what: String,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "GC({}) cannot be replayed: {} (allowed: below 4 GiB)",
            self.id, self.what
        )
    }
}

fn small(id: u64, what: impl FnOnce() -> String, v: impl TryInto<u32>) -> Result<u32, TooLarge> {
    v.try_into().map_err(|_| TooLarge { id, what: what() })
}

impl TryFrom<TraceCollection> for ReplayCollection {
    type Error = TooLarge;

    fn try_from(c: TraceCollection) -> Result<Self, TooLarge> {
        let id = c.id;
        let mut reaches = Vec::with_capacity(c.roots.iter().map(|r| r.reaches.len()).sum());
        let mut roots = Vec::with_capacity(c.roots.len());
        for root in c.roots {
            let start = small(id, || "its root reaches".into(), reaches.len())?;
            reaches.extend_from_slice(&root.reaches);
            let end = small(id, || "its root reaches".into(), reaches.len())?;
            roots.push(ReplayRoot {
                kind: root.kind,
                affinity: root.affinity,
                reaches: start..end,
            });
        }
        let mut sizes = Vec::with_capacity(c.objects.len());
        let mut slots = Vec::with_capacity(c.objects.len());
        let mut fates = Vec::with_capacity(c.objects.len());
        let mut ref_arrays = Vec::with_capacity(c.objects.len());
        let mut ref_starts = Vec::with_capacity(c.objects.len() + 1);
        ref_starts.push(0);
        let (mut array_ids, mut array_slot_starts, mut array_slots) =
            (Vec::new(), Vec::new(), Vec::new());
        for (n, object) in c.objects.iter().enumerate() {
            sizes.push(small(
                id,
                || format!("object {n} has {} bytes", object.size),
                object.size,
            )?);
            slots.push(small(
                id,
                || format!("object {n} has {} reference slots", object.shape.slots),
                object.shape.slots,
            )?);
            fates.push(object.fate);
            ref_arrays.push(object.shape.ref_array);
            ref_starts.push(small(id, || "its references".into(), object.refs.end)?);
            if object.shape.ref_array && !object.refs.is_empty() {
                // The decoder checked them (one per reference, ascending, below the slots).
                array_ids.push(n as u32);
                array_slot_starts.push(small(id, || "its references".into(), array_slots.len())?);
                array_slots.extend(
                    c.ref_slots[object.ref_slots.clone()]
                        .iter()
                        .map(|&s| s as u32),
                );
            }
        }
        let addrs = if c.gaps.len() == c.objects.len() {
            let mut next = 0u64;
            c.objects
                .iter()
                .zip(&c.gaps)
                .map(|(o, &gap)| {
                    let at = next.saturating_add(gap);
                    next = at.saturating_add(o.size);
                    at
                })
                .collect()
        } else {
            Vec::new()
        };
        let footprint = crate::exec::reach::footprint(
            addrs
                .iter()
                .zip(&sizes)
                .map(|(&at, &size)| (at, u64::from(size))),
        );
        Ok(ReplayCollection {
            addrs,
            footprint,
            id,
            kind: c.kind,
            workers: c.workers,
            promotion_failed: c.promotion_failed,
            roots,
            plab_sizes: PlabSizes::default(),
            reaches,
            sizes,
            slots,
            fates,
            ref_arrays,
            ref_starts,
            refs: c.refs,
            array_ids,
            array_slot_starts,
            array_slots,
        })
    }
}

impl ReplayCollection {
    /// Objects the collection copied (or marked, or failed to copy).
    pub fn objects(&self) -> usize {
        self.sizes.len()
    }

    /// The bytes of the cache lines the collection's objects lay on, 0 if the trace does not say
    /// where they lay ([`crate::exec::reach::footprint`]).
    pub fn footprint(&self) -> u64 {
        self.footprint
    }

    /// The byte after the last object, if the trace says where objects lay.
    pub fn end(&self) -> Option<u64> {
        let last = self.addrs.len().checked_sub(1)?;
        Some(self.addrs[last].saturating_add(u64::from(self.sizes[last])))
    }

    /// Where object `id` lay before the collection, bytes from the first object, if the
    /// trace says.
    pub fn addr(&self, id: u32) -> Option<u64> {
        self.addrs.get(id as usize).copied()
    }

    /// The size of object `id` in bytes.
    pub fn size(&self, id: u32) -> u64 {
        u64::from(self.sizes[id as usize])
    }

    /// What became of object `id`.
    pub fn fate(&self, id: u32) -> Fate {
        self.fates[id as usize]
    }

    /// The objects object `id`'s followed references point to.
    pub fn refs_of(&self, id: u32) -> &[u32] {
        let id = id as usize;
        &self.refs[self.ref_starts[id] as usize..self.ref_starts[id + 1] as usize]
    }

    /// All reference slots of object `id` (those the collection did not follow included).
    pub fn slots(&self, id: u32) -> usize {
        self.slots[id as usize] as usize
    }

    /// Whether object `id` is a reference array (scanned in chunks when it is long).
    pub fn is_ref_array(&self, id: u32) -> bool {
        self.ref_arrays[id as usize]
    }

    /// The references of object `id` that lie in its slots `from..to`, in slot order: for a
    /// reference array those whose recorded slot index is in the range; another object is
    /// scanned whole (only ever as `0..slots`), so all of its references lie in any range
    /// that starts at 0 and none in one that does not.
    pub fn refs_in_slots(&self, id: u32, from: usize, to: usize) -> &[u32] {
        let refs = self.refs_of(id);
        if !self.is_ref_array(id) {
            return if from == 0 { refs } else { &[] };
        }
        let Ok(k) = self.array_ids.binary_search(&id) else {
            return &[];
        };
        let start = self.array_slot_starts[k] as usize;
        let at = &self.array_slots[start..start + refs.len()];
        let lo = at.partition_point(|&s| (s as usize) < from);
        let hi = at.partition_point(|&s| (s as usize) < to);
        &refs[lo..hi]
    }

    /// The objects root task `root`'s slots reach, one per slot.
    pub fn reaches(&self, root: &ReplayRoot) -> &[u32] {
        &self.reaches[root.reaches.start as usize..root.reaches.end as usize]
    }

    /// Objects and bytes whose fate `keep` accepts.
    pub fn count(&self, keep: impl Fn(Fate) -> bool) -> (u64, u64) {
        self.sizes
            .iter()
            .zip(&self.fates)
            .filter(|(_, &f)| keep(f))
            .fold((0, 0), |(n, b), (&s, _)| (n + 1, b + u64::from(s)))
    }

    /// Bytes the collection copied: to a survivor space or the old generation (a young
    /// collection), or marked live (a full collection's marking, as its workers count them).
    pub fn bytes_copied(&self) -> u64 {
        self.count(|f| f != Fate::Stayed).1
    }

    /// Bytes promoted to the old generation.
    pub fn bytes_promoted(&self) -> u64 {
        self.count(|f| f == Fate::Promoted).1
    }
}

/// The smallest unit a heap holds, bytes: a word (an object, a slot, a scanned object takes at
/// least one).
const WORD_BYTES: u64 = 8;

/// Checks that what `collections` say is what a real heap of `heap_bytes` could hold, so that
/// a damaged or hand-made trace is refused by name instead of being simulated for hours (an
/// extent of 2^63 slots is 2^66 bytes to scan). Per collection: the bytes of its objects, in
/// all, at most the heap; its objects, and their reference slots in all, at most the heap's
/// words; a handle-stack chunk's slots at
/// most the heap's words (a chunk holds no more handles than there are objects); a card
/// stripe's extent at most the heap, and its scanned objects at most the heap's words. The
/// error names the collection, the root task or field, the value and the range allowed, and
/// ends with `heap_is` (which heap that is: the one recorded, or the one simulated).
pub fn check_plausible(
    collections: &[ReplayCollection],
    heap_bytes: u64,
    heap_is: &str,
) -> Result<(), String> {
    let heap = concord::config::format_size(usize::try_from(heap_bytes).unwrap_or(usize::MAX));
    let words = heap_bytes / WORD_BYTES;
    let over = |id: u64, what: String, value: u64, max: u64, of: &str| {
        Err(format!(
            "GC({id}): {what} is {value} (allowed: at most {max}, the {of} of a {heap} heap, \
             {heap_is})"
        ))
    };
    for c in collections {
        for (i, root) in c.roots.iter().enumerate() {
            match root.kind {
                TraceRootKind::HandleStack { slots } if slots > words => {
                    return over(
                        c.id,
                        format!("root task {i}'s extent (handle-stack slots)"),
                        slots,
                        words,
                        "words",
                    );
                }
                TraceRootKind::CardStripe { bytes, .. } if bytes > heap_bytes => {
                    return over(
                        c.id,
                        format!("root task {i}'s extent (card-stripe bytes)"),
                        bytes,
                        heap_bytes,
                        "bytes",
                    );
                }
                TraceRootKind::CardStripe {
                    scanned_objects, ..
                } if scanned_objects > words => {
                    return over(
                        c.id,
                        format!("root task {i}'s scanned-object count"),
                        scanned_objects,
                        words,
                        "words",
                    );
                }
                _ => {}
            }
        }
        let objects = c.objects() as u64;
        if objects > words {
            return over(c.id, "its object count".into(), objects, words, "words");
        }
        let slots: u64 = c.slots.iter().map(|&s| u64::from(s)).sum();
        if slots > words {
            return over(
                c.id,
                "its objects' reference slots in all".into(),
                slots,
                words,
                "words",
            );
        }
        let (_, bytes) = c.count(|_| true);
        if bytes > heap_bytes {
            return over(
                c.id,
                "its objects' total size in bytes".into(),
                bytes,
                heap_bytes,
                "bytes",
            );
        }
    }
    Ok(())
}

/// Why a GC trace could not be loaded for replay.
#[derive(Debug)]
pub enum LoadError {
    /// The file could not be opened.
    Open(std::io::Error),
    /// The file is not a whole, readable GC trace.
    Trace(GcTraceError),
    /// A collection too large for the compact form.
    TooLarge(TooLarge),
    /// The trace holds no collection.
    Empty,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open(e) => write!(f, "cannot open it: {e}"),
            LoadError::Trace(e) => e.fmt(f),
            LoadError::TooLarge(e) => e.fmt(f),
            LoadError::Empty => {
                f.write_str("it holds no collection (record a run that collects at least once)")
            }
        }
    }
}

impl std::error::Error for LoadError {}

/// A GC trace loaded for replay: what it says about the run it was recorded from, and its
/// collections.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// The workload and heap size, as far as the trace records them (a version 1 trace does
    /// not).
    pub run: TraceRun,
    /// The collections, in order (at least one).
    pub collections: Vec<ReplayCollection>,
}

/// Read every collection of the GC trace `input`, one frame at a time (only the compact form
/// of the collections read so far is kept), each with the trace's PLAB sizes (the defaults for
/// a trace before version 3, which does not record them; such a trace's objects are replayed
/// as ordinary objects with a slot per recorded reference, never in chunks). A trace cut short
/// or damaged is an error, not a shorter replay.
pub fn read_trace(input: impl Read) -> Result<Trace, LoadError> {
    let mut reader = GcTraceReader::new(input).map_err(LoadError::Trace)?;
    let run = reader.run().clone();
    let mut collections = Vec::new();
    for collection in &mut reader {
        let collection = collection.map_err(LoadError::Trace)?;
        let mut collection = ReplayCollection::try_from(collection).map_err(LoadError::TooLarge)?;
        collection.plab_sizes = run.plab_sizes();
        collections.push(collection);
    }
    if collections.is_empty() {
        return Err(LoadError::Empty);
    }
    Ok(Trace { run, collections })
}

/// [`read_trace`] of the file at `path`.
pub fn load_trace(path: &Path) -> Result<Trace, LoadError> {
    let file = File::open(path).map_err(LoadError::Open)?;
    read_trace(BufReader::new(file))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use concord::telemetry::gc_trace::{
        trace_bytes_as, GcTraceFile, TraceObject, TraceRoot, TraceShape,
    };

    /// A young collection of `objects` objects: object `i` of `24 + 8·(i % 5)` bytes refers to
    /// `2i+1` and `2i+2` (a binary tree), every third one also to object 0 (shared, so many
    /// reaches meet one object); two handle-stack roots reach 0 and the tree's second level,
    /// a card stripe reaches the last object. Promoted every fourth object.
    pub(crate) fn tree(id: u64, objects: u32) -> TraceCollection {
        let mut refs = Vec::new();
        let objs = (0..objects)
            .map(|i| {
                let start = refs.len();
                for child in [2 * i + 1, 2 * i + 2] {
                    if child < objects {
                        refs.push(child);
                    }
                }
                if i % 3 == 2 {
                    refs.push(0);
                }
                TraceObject {
                    size: 24 + 8 * u64::from(i % 5),
                    fate: if i % 4 == 3 {
                        Fate::Promoted
                    } else {
                        Fate::Survivor
                    },
                    worker: i % 2,
                    shape: TraceShape::fixed((refs.len() - start) as u64),
                    refs: start..refs.len(),
                    ref_slots: 0..0,
                }
            })
            .collect();
        TraceCollection {
            id,
            kind: TraceKind::Young,
            workers: 2,
            promotion_failed: false,
            roots: vec![
                TraceRoot {
                    kind: TraceRootKind::HandleStack { slots: 3 },
                    affinity: TraceAffinity::Prefers(0),
                    ran_on: 0,
                    reaches: vec![0, 1, 0],
                },
                TraceRoot {
                    kind: TraceRootKind::HandleStack { slots: 1 },
                    affinity: TraceAffinity::Any,
                    ran_on: 1,
                    reaches: vec![2],
                },
                TraceRoot {
                    kind: TraceRootKind::CardStripe {
                        bytes: 1 << 20,
                        scanned_objects: 4,
                    },
                    affinity: TraceAffinity::Stripe(1),
                    ran_on: 1,
                    reaches: vec![objects - 1],
                },
            ],
            objects: objs,
            refs,
            ref_slots: Vec::new(),
            gaps: Vec::new(),
        }
    }

    /// A young collection of a reference array of `slots` slots (object 0, 8 + 8·slots bytes,
    /// reached by one handle-stack slot) whose every `stride`-th slot refers to an object of
    /// its own (`fate`, 64 bytes, no references), the others to objects outside the
    /// collected set (not recorded).
    pub(crate) fn array(id: u64, slots: u32, stride: u32, fate: Fate) -> TraceCollection {
        let ref_slots: Vec<u64> = (0..slots).step_by(stride as usize).map(u64::from).collect();
        let n = ref_slots.len();
        let mut objects = vec![TraceObject {
            size: 8 + 8 * u64::from(slots),
            fate: Fate::Survivor,
            worker: 0,
            shape: TraceShape::ref_array(u64::from(slots)),
            refs: 0..n,
            ref_slots: 0..n,
        }];
        objects.extend((0..n).map(|_| TraceObject {
            size: 64,
            fate,
            worker: 0,
            shape: TraceShape::fixed(0),
            refs: n..n,
            ref_slots: 0..0,
        }));
        TraceCollection {
            id,
            kind: TraceKind::Young,
            workers: 1,
            promotion_failed: false,
            roots: vec![TraceRoot {
                kind: TraceRootKind::HandleStack { slots: 1 },
                affinity: TraceAffinity::Prefers(0),
                ran_on: 0,
                reaches: vec![0],
            }],
            objects,
            refs: (1..=n as u32).collect(),
            ref_slots,
            gaps: Vec::new(),
        }
    }

    /// PLAB sizes other than the defaults, as a trace records them.
    pub(crate) const PLABS: PlabSizes = PlabSizes {
        young: 4 << 10,
        old: 2 << 10,
    };

    /// `collections` written as a GC trace file's bytes (through the writer `concord run` uses).
    pub(crate) fn trace_bytes(collections: &[TraceCollection]) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!(
            "concord-sim-replay-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.trace");
        let mut file = GcTraceFile::create(&path, 64 << 20, PLABS).unwrap();
        for c in collections {
            file.write(c);
        }
        file.finish().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        bytes
    }

    #[test]
    fn the_compact_form_keeps_every_object_reference_and_reach() {
        let traced = tree(7, 100);
        let bytes = trace_bytes(&[traced.clone(), tree(8, 3)]);
        let replay = read_trace(&bytes[..]).unwrap().collections;
        assert_eq!(replay.len(), 2);
        let c = &replay[0];
        assert_eq!((c.id, c.kind, c.workers), (7, TraceKind::Young, 2));
        assert_eq!(c.objects(), 100);
        for id in 0..100u32 {
            let o = &traced.objects[id as usize];
            assert_eq!(c.size(id), o.size);
            assert_eq!(c.fate(id), o.fate);
            assert_eq!(c.refs_of(id), traced.refs_of(id as usize));
        }
        for (root, traced_root) in c.roots.iter().zip(&traced.roots) {
            assert_eq!(c.reaches(root), &traced_root.reaches[..]);
            assert_eq!(
                (root.kind, root.affinity),
                (traced_root.kind, traced_root.affinity)
            );
        }
        let (_, promoted) = traced.count(Fate::Promoted);
        let (_, survived) = traced.count(Fate::Survivor);
        assert_eq!(c.bytes_promoted(), promoted);
        assert_eq!(c.bytes_copied(), promoted + survived);
        assert_eq!(replay[1].objects(), 3);
        // The run's PLAB sizes go with every collection.
        assert!(replay.iter().all(|c| c.plab_sizes == PLABS));
    }

    #[test]
    fn a_reference_arrays_references_are_split_by_their_slots() {
        let bytes = trace_bytes(&[array(1, 1000, 3, Fate::Survivor)]);
        let c = &read_trace(&bytes[..]).unwrap().collections[0];
        assert_eq!((c.slots(0), c.is_ref_array(0)), (1000, true));
        assert_eq!((c.slots(1), c.is_ref_array(1)), (0, false));
        assert_eq!(c.refs_of(0).len(), 334);
        // Slots 0, 3, ..., 255: 86 of them; 256..512 from 258: 85.
        assert_eq!(c.refs_in_slots(0, 0, 256).len(), 86);
        assert_eq!(c.refs_in_slots(0, 0, 256)[85], 86);
        assert_eq!(c.refs_in_slots(0, 256, 512).len(), 85);
        assert_eq!(c.refs_in_slots(0, 256, 512)[0], 87);
        assert_eq!(c.refs_in_slots(0, 768, 1000).len(), 78);
        // An ordinary object is scanned whole.
        let t = ReplayCollection::try_from(tree(2, 10)).unwrap();
        assert_eq!(t.refs_in_slots(1, 0, t.slots(1)), t.refs_of(1));
        assert_eq!(t.slots(1), 2);
        assert!(t.refs_in_slots(1, 1, 2).is_empty());
    }

    #[test]
    fn a_version_2_trace_loads_with_the_default_plabs_and_no_arrays() {
        let run = TraceRun {
            workload: Some("gcbench".into()),
            heap_bytes: Some(64 << 20),
            plab_sizes: Some(PLABS),
        };
        let v2 = trace_bytes_as(2, &run, &[array(1, 1000, 3, Fate::Survivor), tree(2, 50)]);
        let trace = read_trace(&v2[..]).unwrap();
        assert_eq!(trace.run.workload.as_deref(), Some("gcbench"));
        assert_eq!(trace.run.plab_sizes, None);
        let c = &trace.collections[0];
        assert_eq!(c.plab_sizes, PlabSizes::default());
        // The array is read as an ordinary object with a slot per recorded reference.
        assert_eq!((c.slots(0), c.is_ref_array(0)), (334, false));
        assert_eq!(c.refs_in_slots(0, 0, 334), c.refs_of(0));
        assert_eq!(trace.collections[1].objects(), 50);
        // The same collections in version 3 keep their shapes and PLAB sizes.
        let v3 = trace_bytes_as(3, &run, &[array(1, 1000, 3, Fate::Survivor)]);
        let c = &read_trace(&v3[..]).unwrap().collections[0];
        assert_eq!(
            (c.slots(0), c.is_ref_array(0), c.plab_sizes),
            (1000, true, PLABS)
        );
    }

    #[test]
    fn a_cut_damaged_or_empty_trace_is_an_error_naming_why() {
        let bytes = trace_bytes(&[tree(1, 10), tree(2, 10)]);
        // Cut inside the second frame: the first is read, then the cut is reported.
        let err = read_trace(&bytes[..bytes.len() - 5])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "the GC trace is truncated after GC(1)");
        let err = read_trace(&b"not a trace at all"[..])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "not a GC trace (no CGCTRACE header)");
        let empty = trace_bytes(&[]);
        let err = read_trace(&empty[..]).unwrap_err().to_string();
        assert!(err.starts_with("it holds no collection"), "{err}");
        let err = load_trace(Path::new("/nonexistent/gc.trace"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot open it: "), "{err}");
    }

    #[test]
    fn an_object_beyond_32_bits_is_refused_by_name() {
        let mut c = tree(3, 4);
        c.objects[2].size = 5 << 30;
        let err = ReplayCollection::try_from(c).unwrap_err();
        assert_eq!(
            err.to_string(),
            "GC(3) cannot be replayed: object 2 has 5368709120 bytes (allowed: below 4 GiB)"
        );
    }
}
