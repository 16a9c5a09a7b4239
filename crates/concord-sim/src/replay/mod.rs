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
    Fate, GcTraceError, GcTraceReader, TraceAffinity, TraceCollection, TraceKind, TraceRootKind,
    TraceRun,
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

/// One recorded collection, compactly: per object 4 bytes of size, 1 of fate and 4 of
/// reference offset, plus 4 bytes per followed reference and per root reach (a
/// [`TraceCollection`] holds about 40 bytes per object).
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
    reaches: Vec<u32>,
    sizes: Vec<u32>,
    fates: Vec<Fate>,
    /// `refs[ref_starts[id]..ref_starts[id + 1]]` are object `id`'s followed references.
    ref_starts: Vec<u32>,
    refs: Vec<u32>,
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
        let mut fates = Vec::with_capacity(c.objects.len());
        let mut ref_starts = Vec::with_capacity(c.objects.len() + 1);
        ref_starts.push(0);
        for (n, object) in c.objects.iter().enumerate() {
            sizes.push(small(
                id,
                || format!("object {n} has {} bytes", object.size),
                object.size,
            )?);
            fates.push(object.fate);
            ref_starts.push(small(id, || "its references".into(), object.refs.end)?);
        }
        Ok(ReplayCollection {
            id,
            kind: c.kind,
            workers: c.workers,
            promotion_failed: c.promotion_failed,
            roots,
            reaches,
            sizes,
            fates,
            ref_starts,
            refs: c.refs,
        })
    }
}

impl ReplayCollection {
    /// Objects the collection copied (or marked, or failed to copy).
    pub fn objects(&self) -> usize {
        self.sizes.len()
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
/// all, at most the heap; its objects at most the heap's words; a handle-stack chunk's slots at
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
/// of the collections read so far is kept). A trace cut short or damaged is an error, not a
/// shorter replay.
pub fn read_trace(input: impl Read) -> Result<Trace, LoadError> {
    let mut reader = GcTraceReader::new(input).map_err(LoadError::Trace)?;
    let run = reader.run().clone();
    let mut collections = Vec::new();
    for collection in &mut reader {
        let collection = collection.map_err(LoadError::Trace)?;
        collections.push(ReplayCollection::try_from(collection).map_err(LoadError::TooLarge)?);
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
    use concord::telemetry::gc_trace::{GcTraceFile, TraceObject, TraceRoot};

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
                    refs: start..refs.len(),
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
        }
    }

    /// `collections` written as a GC trace file's bytes (through the writer `concord run` uses).
    pub(crate) fn trace_bytes(collections: &[TraceCollection]) -> Vec<u8> {
        let dir = std::env::temp_dir().join(format!(
            "concord-sim-replay-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gc.trace");
        let mut file = GcTraceFile::create(&path, 64 << 20).unwrap();
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
