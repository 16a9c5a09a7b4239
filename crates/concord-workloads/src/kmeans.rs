//! `kmeans`: Lloyd's k-means clustering over a large, long-lived set of points, modelled on
//! HiBench's k-means (Spark MLlib). `--size` is the number of points in thousands ([`SIZE`]:
//! default 400, i.e. 400 000 points; allowed 1..=10 000).
//!
//! # Data
//!
//! Points have [`DIMS`] = 8 integer coordinates (fixed point, about ±2^20), drawn around
//! [`CLUSTERS`] hidden centres by a hash of the point's id, so the data set is a pure function
//! of the size. They are allocated once and live for the whole run: each point is a [`POINT`]
//! object (coordinates as eight `i32`s, then its id as a `u64`), held by *partitions*
//! (reference arrays of up to [`PARTITION_POINTS`] points, like a cached RDD's partitions)
//! under one dataset reference array; next to them a large byte array holds every point's
//! current cluster (4 bytes per point, allocated in the old generation directly because of its
//! size, rewritten in place every iteration).
//!
//! # Iterations
//!
//! [`ITERATIONS`] = 10 iterations of Lloyd's algorithm with [`CLUSTERS`] = 16 clusters, the
//! first centroids being points 0..16. An iteration allocates its temporaries and drops them:
//! the centroids as new [`CENTROID`] objects (`i64` coordinates), per-cluster accumulator
//! objects ([`ACCUMULATOR`]: count and coordinate sums), and for every block of
//! [`BLOCK_POINTS`] points a distance buffer (a 32 KiB byte array of all point-to-centroid
//! squared distances), a reference array of per-point assignment tuples and the tuples
//! themselves ([`ASSIGNMENT`]: the point, its nearest cluster and distance; Spark's `(cluster,
//! point)` pairs), which are then reduced into the accumulators. New centroids are the integer
//! means (floor division; an empty cluster keeps its centroid). All arithmetic is on integers,
//! so results are exact and independent of the order in which partial sums are added.
//!
//! # Mutators
//!
//! Concord has no global roots: an object is reachable only through the handles of one mutator,
//! so threads cannot share the points. With `--mutators M` the points are split into `M`
//! shards of consecutive ids, one per mutator thread, each holding its own points, partitions,
//! assignment array and temporaries (the work is data-parallel and scales). At the end of every
//! iteration each thread publishes its accumulators as plain integers, all threads meet at a
//! barrier (waiting inside [`Mutator::blocking`], so waiting threads never hold up a
//! collection), and every thread sums all shards' accumulators in the same way and builds its
//! own copy of the new centroids. If a thread fails, the barrier is abandoned and the others
//! stop (they return nothing and the failing thread's error is reported).
//!
//! # Checksum
//!
//! Every point adds, in every iteration, a hash of `(id, iteration, cluster, distance)`;
//! thread 0 adds a hash of every iteration's new centroids and of the total distance and number
//! of changed assignments. The checksum does not depend on the number of mutators.
//! [`reference_checksum`] computes it with plain Rust (no heap); the checksums of the default
//! size and a few small sizes are stored in [`KNOWN_CHECKSUMS`] (kept in sync with the reference
//! by a test) and become [`WorkloadResult::expected_checksum`]; other sizes have none. Reads
//! check that a point's id matches its position ([`WorkloadError::Corrupt`] otherwise).
//!
//! # Heap size
//!
//! The long-lived data is about 60 bytes per point (48-byte point, 8-byte partition slot, 4-byte
//! assignment), 23 MiB at the default size; an iteration's temporaries add about 0.1 MiB per
//! thread. Measured smallest heap for the default size with 1 mutator (optimized preset, 2 GC
//! threads, release build): **28 MiB** (searched in 1 MiB steps; there the points do not fit
//! in the old generation and a run does about 500 full collections). [`KMeans`]' default heap
//! is three times that, scaled linearly with the size (at least 4 MiB before tripling) plus
//! 2 MiB per extra mutator: **84 MiB** for the default size and 1 mutator. There a run takes
//! 0.8-1.1 s and does 29 young collections and no full one; 664 MiB allocated, 24 MiB copied
//! (survival 0.036), 21 MiB promoted (the points, once) — the classic generational case.

use std::sync::{Condvar, Mutex};

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};

use crate::data::{splitmix as mix, Fields};
use crate::scaffold::{self, detail, view, Size, SizedWorkload};
use crate::{run_copies, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "kmeans";

/// Coordinates per point.
pub const DIMS: usize = 8;
/// Clusters (and hidden centres of the generated data).
pub const CLUSTERS: usize = 16;
/// Lloyd iterations per round.
pub const ITERATIONS: u32 = 10;
/// Points per partition (reference array).
pub const PARTITION_POINTS: usize = 4096;
/// Points per block: the unit that gets a distance buffer and a tuple array.
pub const BLOCK_POINTS: usize = 256;

/// A point: payload `DIMS` `i32` coordinates, then its id (`u64`).
pub const POINT: ObjectType = ObjectType::fixed(0, (DIMS * 4 + 8) as u16);
/// A centroid: payload `DIMS` `i64` coordinates.
pub const CENTROID: ObjectType = ObjectType::fixed(0, (DIMS * 8) as u16);
/// A per-cluster accumulator: payload count (`u64`), then `DIMS` `i64` sums.
pub const ACCUMULATOR: ObjectType = ObjectType::fixed(0, (8 + DIMS * 8) as u16);
/// An assignment tuple: slot 0 the point, payload cluster (`u64`) and squared distance (`u64`).
pub const ASSIGNMENT: ObjectType = ObjectType::fixed(1, 16);

/// `--size`: thousands of points, 400 by default, 1 000 to 10 million points. The default heap
/// is three times an estimated smallest heap: the 28 MiB measured at the default size with one
/// mutator, scaled with the size, plus 2 MiB per extra mutator (see the module documentation).
pub const SIZE: Size = Size::named("kmeans size", 400, 1..=10_000, " (thousands of points)")
    .scaled_heap(28 * MIB, 2 * MIB);

/// `(size, checksum of one round)` for the sizes whose checksum is known in advance (computed
/// by [`reference_checksum`]; a test keeps them in sync).
pub const KNOWN_CHECKSUMS: &[(u32, u64)] = &[
    (1, 12_525_764_322_374_039_774),
    (2, 14_788_496_899_242_075_728),
    (4, 1_366_823_107_868_963_987),
    (SIZE.default(), 18_080_225_268_874_896_019),
];

/// Payload offset of a point's id.
const POINT_ID: usize = DIMS * 4;
/// Seed of the data set.
const SEED: u64 = 0x6b6d_6561_6e73_0001;

/// The checksum of one round at `size`, if it is in [`KNOWN_CHECKSUMS`].
pub fn known_checksum(size: u32) -> Option<u64> {
    KNOWN_CHECKSUMS
        .iter()
        .find(|&&(s, _)| s == size)
        .map(|&(_, c)| c)
}

/// The coordinates of point `id`: a hidden centre (one of [`CLUSTERS`], chosen by the id) plus
/// a roughly normal offset (the sum of three uniform draws).
fn point_coords(id: u64) -> [i32; DIMS] {
    let centre = mix(SEED ^ id) % CLUSTERS as u64;
    let mut c = [0i32; DIMS];
    for (d, x) in c.iter_mut().enumerate() {
        let at = (mix(SEED ^ (centre << 8) ^ d as u64 ^ 0xce47) % (1 << 21)) as i32 - (1 << 20);
        let r = mix(SEED.rotate_left(29) ^ id.wrapping_mul(DIMS as u64 + 1) ^ d as u64);
        let offset: i32 = (0..3)
            .map(|k| ((r >> (k * 20)) & 0x1_ffff) as i32 - 0x1_0000)
            .sum();
        *x = at + offset;
    }
    c
}

/// Squared distance between a point and a centroid.
fn distance(p: &[i32; DIMS], c: &[i64]) -> u64 {
    p.iter()
        .zip(c)
        .map(|(&x, &y)| {
            let d = i64::from(x) - y;
            (d * d) as u64
        })
        .sum()
}

/// The nearest centroid (lowest index on ties) and its squared distance.
fn nearest(dists: impl Iterator<Item = u64>) -> (usize, u64) {
    let mut best = (0, u64::MAX);
    for (k, d) in dists.enumerate() {
        if d < best.1 {
            best = (k, d);
        }
    }
    best
}

/// What a point adds to the checksum in iteration `it`.
fn point_digest(id: u64, it: u32, cluster: usize, dist: u64) -> u64 {
    mix(id ^ (u64::from(it) << 48) ^ ((cluster as u64) << 56) ^ mix(dist))
}

/// Centroids from the point coordinates of ids `0..CLUSTERS`.
fn initial_centroids() -> Vec<i64> {
    (0..CLUSTERS as u64)
        .flat_map(|id| point_coords(id).map(i64::from))
        .collect()
}

/// Length of a shard's partial result: per cluster count and sums, then total distance and
/// changed assignments.
const PARTIAL_LEN: usize = CLUSTERS * (DIMS + 1) + 2;

/// The new centroids from summed partial results (`old` for empty clusters), the total
/// distance and the number of changed assignments; and what thread 0 adds to the checksum.
fn finish_iteration(it: u32, total: &[i64], old: &[i64]) -> (Vec<i64>, u64) {
    let mut next = Vec::with_capacity(CLUSTERS * DIMS);
    for k in 0..CLUSTERS {
        let acc = &total[k * (DIMS + 1)..(k + 1) * (DIMS + 1)];
        let count = acc[0];
        for d in 0..DIMS {
            next.push(if count == 0 {
                old[k * DIMS + d]
            } else {
                acc[1 + d].div_euclid(count)
            });
        }
    }
    let mut digest = mix(u64::from(it) ^ 0x6974);
    for &x in &next {
        digest = mix(digest ^ x as u64);
    }
    digest = mix(digest ^ total[PARTIAL_LEN - 2] as u64);
    digest = mix(digest ^ total[PARTIAL_LEN - 1] as u64);
    (next, digest)
}

/// The checksum of one round at `size`, computed without the heap (same arithmetic, one
/// thread).
pub fn reference_checksum(size: u32) -> u64 {
    let n = u64::from(size) * 1000;
    let points: Vec<[i32; DIMS]> = (0..n).map(point_coords).collect();
    let mut assign = vec![u32::MAX; n as usize];
    let mut centroids = initial_centroids();
    let mut checksum = 0u64;
    for it in 0..ITERATIONS {
        let mut total = vec![0i64; PARTIAL_LEN];
        for (id, p) in points.iter().enumerate() {
            let (k, dist) = nearest((0..CLUSTERS).map(|k| distance(p, &centroids[k * DIMS..])));
            checksum = checksum.wrapping_add(point_digest(id as u64, it, k, dist));
            let acc = &mut total[k * (DIMS + 1)..];
            acc[0] += 1;
            for d in 0..DIMS {
                acc[1 + d] += i64::from(p[d]);
            }
            total[PARTIAL_LEN - 2] = total[PARTIAL_LEN - 2].wrapping_add(dist as i64);
            if assign[id] != k as u32 {
                assign[id] = k as u32;
                total[PARTIAL_LEN - 1] += 1;
            }
        }
        let (next, digest) = finish_iteration(it, &total, &centroids);
        checksum = checksum.wrapping_add(digest);
        centroids = next;
    }
    checksum
}

/// A barrier for the mutator threads of one run that a failing thread can abandon, so that the
/// others stop waiting instead of hanging.
pub(crate) struct Rendezvous {
    parties: usize,
    state: Mutex<RendezvousState>,
    cv: Condvar,
}

struct RendezvousState {
    arrived: usize,
    generation: u64,
    abandoned: bool,
}

/// The rendezvous was abandoned by a failing thread.
#[derive(Debug)]
pub(crate) struct Abandoned;

impl Rendezvous {
    /// A barrier for `parties` threads.
    pub(crate) fn new(parties: usize) -> Self {
        Rendezvous {
            parties,
            state: Mutex::new(RendezvousState {
                arrived: 0,
                generation: 0,
                abandoned: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Waits until all parties have arrived (call it inside [`Mutator::blocking`]).
    pub(crate) fn wait(&self) -> Result<(), Abandoned> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if s.abandoned {
            return Err(Abandoned);
        }
        let generation = s.generation;
        s.arrived += 1;
        if s.arrived == self.parties {
            s.arrived = 0;
            s.generation += 1;
            self.cv.notify_all();
            return Ok(());
        }
        while s.generation == generation && !s.abandoned {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        if s.generation == generation {
            Err(Abandoned)
        } else {
            Ok(())
        }
    }

    /// Wakes every waiter with [`Abandoned`]; later waits fail at once.
    pub(crate) fn abandon(&self) {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .abandoned = true;
        self.cv.notify_all();
    }

    /// Runs `f`, abandoning the rendezvous if `f` fails or panics; a thread that finds the
    /// rendezvous abandoned (another thread failed) gets `Ok(None)`.
    pub(crate) fn guard<T>(
        &self,
        f: impl FnOnce() -> Result<T, Failure>,
    ) -> Result<Option<T>, WorkloadError> {
        struct OnUnwind<'a>(&'a Rendezvous, bool);
        impl Drop for OnUnwind<'_> {
            fn drop(&mut self) {
                if self.1 {
                    self.0.abandon();
                }
            }
        }
        let mut g = OnUnwind(self, true);
        let r = f();
        match r {
            Ok(v) => {
                g.1 = false;
                Ok(Some(v))
            }
            Err(Failure::Abandoned) => {
                g.1 = false;
                Ok(None)
            }
            Err(Failure::Workload(e)) => Err(e),
        }
    }
}

/// Why a thread that meets others at a [`Rendezvous`] stopped.
pub(crate) enum Failure {
    /// Another thread failed.
    Abandoned,
    /// This thread failed.
    Workload(WorkloadError),
}

impl From<WorkloadError> for Failure {
    fn from(e: WorkloadError) -> Self {
        Failure::Workload(e)
    }
}

impl From<GcError> for Failure {
    fn from(e: GcError) -> Self {
        Failure::Workload(e.into())
    }
}

impl From<Abandoned> for Failure {
    fn from(_: Abandoned) -> Self {
        Failure::Abandoned
    }
}

/// What the threads of one run share: the barrier and the partial results, double-buffered by
/// iteration parity (a thread writes slot `[it % 2][thread]` before the barrier of iteration
/// `it`; everyone has read them before arriving at the barrier of `it + 1`).
struct Exchange {
    rendezvous: Rendezvous,
    partials: Mutex<[Vec<Vec<i64>>; 2]>,
}

/// The `kmeans` workload. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KMeans;

impl SizedWorkload for KMeans {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "HiBench-like k-means: long-lived points in partitions, per-iteration distance buffers, \
         assignment tuples, accumulators and centroids; points split across mutators (size: \
         thousands of points, default 400)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let points = u64::from(n) * 1000;
        let threads = params.mutators;
        let exchange = Exchange {
            rendezvous: Rendezvous::new(threads),
            partials: Mutex::new([vec![Vec::new(); threads], vec![Vec::new(); threads]]),
        };
        let last = Mutex::new((0i64, 0i64));
        let checksum = run_copies(heap, params, NAME, |m, shard, _round| {
            let lo = shard as u64 * points / threads as u64;
            let hi = (shard as u64 + 1) * points / threads as u64;
            let r = exchange
                .rendezvous
                .guard(|| run_shard(m, &exchange, shard, lo, hi))?;
            let Some((sum, totals)) = r else {
                return Ok(0);
            };
            if shard == 0 {
                *last.lock().unwrap_or_else(|e| e.into_inner()) = totals;
            }
            Ok(sum)
        })?;
        let (dist, changes) = *last.lock().unwrap_or_else(|e| e.into_inner());
        let details = vec![
            detail("points", points),
            detail("dims", DIMS),
            detail("clusters", CLUSTERS),
            detail("iterations", ITERATIONS),
            detail("shards", threads),
            detail("last_iteration_total_distance", dist as u64),
            detail("last_iteration_changes", changes),
        ];
        Ok(scaffold::result(
            checksum,
            known_checksum(n),
            params,
            details,
        ))
    }
}

/// Shard `shard` (points `lo..hi`) on mutator `m`: loads its points, runs every iteration
/// together with the other shards. Returns its part of the checksum and the last iteration's
/// (total distance, changes).
fn run_shard(
    m: &mut Mutator<'_>,
    ex: &Exchange,
    shard: usize,
    lo: u64,
    hi: u64,
) -> Result<(u64, (i64, i64)), Failure> {
    m.scope(|m| {
        let n = (hi - lo) as usize;
        let dataset = load(m, lo, n)?;
        let assign = m.alloc_byte_array(n * 4)?;
        m.payload_mut(assign).fill(0xff);
        let mut centroids = initial_centroids();
        let mut checksum = 0u64;
        let mut last = (0, 0);
        for it in 0..ITERATIONS {
            let partial = m.scope(|m| iterate(m, dataset, assign, lo, it, &centroids))?;
            checksum = checksum.wrapping_add(partial.1);
            {
                let mut p = ex.partials.lock().unwrap_or_else(|e| e.into_inner());
                p[it as usize % 2][shard] = partial.0;
            }
            m.blocking(|| ex.rendezvous.wait())?;
            let mut total = vec![0i64; PARTIAL_LEN];
            {
                let p = ex.partials.lock().unwrap_or_else(|e| e.into_inner());
                for part in &p[it as usize % 2] {
                    for (t, x) in total.iter_mut().zip(part) {
                        *t = t.wrapping_add(*x);
                    }
                }
            }
            let (next, digest) = finish_iteration(it, &total, &centroids);
            if shard == 0 {
                checksum = checksum.wrapping_add(digest);
            }
            last = (total[PARTIAL_LEN - 2], total[PARTIAL_LEN - 1]);
            centroids = next;
        }
        Ok((checksum, last))
    })
}

/// Allocates the points `lo..lo + n` in partitions; returns the dataset (a reference array of
/// partitions) as a handle of the caller's scope.
fn load(m: &mut Mutator<'_>, lo: u64, n: usize) -> Result<Handle, GcError> {
    let parts = n.div_ceil(PARTITION_POINTS);
    let dataset = m.alloc_ref_array(parts)?;
    for pi in 0..parts {
        m.scope(|m| {
            let first = pi * PARTITION_POINTS;
            let len = PARTITION_POINTS.min(n - first);
            let part = m.alloc_ref_array(len)?;
            m.set_ref(dataset, pi, Some(part));
            for j in 0..len {
                let id = lo + (first + j) as u64;
                let p = m.alloc(POINT)?;
                let bytes = m.payload_mut(p);
                for (d, x) in point_coords(id).iter().enumerate() {
                    bytes[d * 4..d * 4 + 4].copy_from_slice(&x.to_le_bytes());
                }
                bytes[POINT_ID..POINT_ID + 8].copy_from_slice(&id.to_le_bytes());
                m.set_ref(part, j, Some(p));
            }
            Ok::<(), GcError>(())
        })?;
    }
    Ok(dataset)
}

/// The coordinates of the point `p`, which must have id `id`.
fn read_point(p: Gc<'_>, id: u64) -> Result<[i32; DIMS], WorkloadError> {
    let bytes = p.payload();
    let got = u64::from_le_bytes(bytes[POINT_ID..POINT_ID + 8].try_into().expect("8 bytes"));
    if got != id {
        return Err(WorkloadError::Corrupt(format!(
            "kmeans: the slot of point {id} holds point {got}"
        )));
    }
    let mut c = [0i32; DIMS];
    for (d, x) in c.iter_mut().enumerate() {
        *x = i32::from_le_bytes(bytes[d * 4..d * 4 + 4].try_into().expect("4 bytes"));
    }
    Ok(c)
}

/// The point in reference slot `slot` of `obj` (a partition or a tuple); a null slot is
/// corrupt data.
fn point_of<'m>(obj: Gc<'m>, slot: usize) -> Result<Gc<'m>, WorkloadError> {
    obj.get(slot)
        .ok_or_else(|| WorkloadError::Corrupt(format!("kmeans: point slot {slot} is null")))
}

/// Reads `N` little-endian `u64`/`i64` words from `bytes` at word offset `at`.
fn words<const N: usize>(bytes: &[u8], at: usize) -> [u64; N] {
    let mut w = [0u64; N];
    for (j, x) in w.iter_mut().enumerate() {
        let o = (at + j) * 8;
        *x = u64::from_le_bytes(bytes[o..o + 8].try_into().expect("8 bytes"));
    }
    w
}

/// One iteration over this shard's points with the centroids `centroids`: returns the partial
/// result ([`PARTIAL_LEN`] integers) and what the points add to the checksum.
fn iterate(
    m: &mut Mutator<'_>,
    dataset: Handle,
    assign: Handle,
    lo: u64,
    it: u32,
    centroids: &[i64],
) -> Result<(Vec<i64>, u64), WorkloadError> {
    // The iteration's centroids and accumulators, as heap objects.
    let cents = m.alloc_ref_array(CLUSTERS)?;
    let accs = m.alloc_ref_array(CLUSTERS)?;
    for k in 0..CLUSTERS {
        m.scope(|m| {
            let c = m.alloc(CENTROID)?;
            for (d, chunk) in m.payload_mut(c).chunks_exact_mut(8).enumerate() {
                chunk.copy_from_slice(&centroids[k * DIMS + d].to_le_bytes());
            }
            m.set_ref(cents, k, Some(c));
            let a = m.alloc(ACCUMULATOR)?;
            m.set_ref(accs, k, Some(a));
            Ok::<(), GcError>(())
        })?;
    }
    // Read the centroids back from the heap once per iteration.
    let mut cached = [0i64; CLUSTERS * DIMS];
    let cents = view(m, cents);
    for k in 0..CLUSTERS {
        let c = cents
            .get(k)
            .ok_or_else(|| WorkloadError::Corrupt(format!("kmeans: centroid {k} was lost")))?;
        let w: [u64; DIMS] = words(c.payload(), 0);
        for d in 0..DIMS {
            cached[k * DIMS + d] = w[d] as i64;
        }
    }
    let mut checksum = 0u64;
    let mut distance_sum = 0u64;
    let mut changes = 0u64;
    let parts = m.array_len(dataset);
    let part = m.null_handle();
    for pi in 0..parts {
        m.load_ref_into(part, dataset, pi);
        let len = m.array_len(part);
        for b0 in (0..len).step_by(BLOCK_POINTS) {
            let b = BLOCK_POINTS.min(len - b0);
            let first = pi * PARTITION_POINTS + b0;
            let (c, d, ch) =
                m.scope(|m| block(m, part, b0, b, accs, assign, lo, first, it, &cached))?;
            checksum = checksum.wrapping_add(c);
            distance_sum = distance_sum.wrapping_add(d);
            changes += ch;
        }
    }
    // Export the accumulators.
    let mut partial = vec![0i64; PARTIAL_LEN];
    let accs = view(m, accs);
    for k in 0..CLUSTERS {
        let a = accs
            .get(k)
            .ok_or_else(|| WorkloadError::Corrupt(format!("kmeans: accumulator {k} was lost")))?;
        let w: [u64; DIMS + 1] = words(a.payload(), 0);
        for (j, x) in w.iter().enumerate() {
            partial[k * (DIMS + 1) + j] = *x as i64;
        }
    }
    partial[PARTIAL_LEN - 2] = distance_sum as i64;
    partial[PARTIAL_LEN - 1] = changes as i64;
    Ok((partial, checksum))
}

/// One block: points `b0..b0 + b` of partition `part` (shard-local index `first` for `b0`).
/// Map: distances into a fresh buffer, then one assignment tuple per point; reduce: the tuples
/// into the accumulators and the assignment array. Returns (checksum part, distance sum,
/// changed assignments).
#[allow(clippy::too_many_arguments)]
fn block(
    m: &mut Mutator<'_>,
    part: Handle,
    b0: usize,
    b: usize,
    accs: Handle,
    assign: Handle,
    lo: u64,
    first: usize,
    it: u32,
    cached: &[i64; CLUSTERS * DIMS],
) -> Result<(u64, u64, u64), WorkloadError> {
    let dist = m.alloc_byte_array(b * CLUSTERS * 8)?;
    let tuples = m.alloc_ref_array(b)?;
    // Map, part 1: all distances.
    for j in 0..b {
        let coords = read_point(point_of(view(m, part), b0 + j)?, lo + (first + j) as u64)?;
        let mut row = [0u8; CLUSTERS * 8];
        for k in 0..CLUSTERS {
            let d = distance(&coords, &cached[k * DIMS..(k + 1) * DIMS]);
            row[k * 8..k * 8 + 8].copy_from_slice(&d.to_le_bytes());
        }
        m.payload_mut(dist)[j * CLUSTERS * 8..(j + 1) * CLUSTERS * 8].copy_from_slice(&row);
    }
    // Map, part 2: the nearest centroid of every point, as a tuple. The tuples' handles go
    // with the block's scope.
    let p = m.null_handle();
    for j in 0..b {
        let ds: [u64; CLUSTERS] = words(m.payload(dist), j * CLUSTERS);
        let (k, d) = nearest(ds.into_iter());
        m.set_root(p, Some(point_of(view(m, part), b0 + j)?));
        let t = m.alloc_with(ASSIGNMENT, &[Some(p)])?;
        let mut tuple = Fields(m.payload_mut(t));
        tuple.set_u64(0, k as u64);
        tuple.set_u64(8, d);
        m.set_ref(tuples, j, Some(t));
    }
    // Reduce.
    let (mut checksum, mut distance_sum, mut changes) = (0u64, 0u64, 0u64);
    let a = m.null_handle();
    for j in 0..b {
        let id = lo + (first + j) as u64;
        let (k, d, coords) = {
            let t = view(m, tuples).get(j).ok_or_else(|| {
                WorkloadError::Corrupt(format!("kmeans: the tuple of point {id} is gone"))
            })?;
            let p = point_of(t, 0)?;
            (t.read_u64(0) as usize, t.read_u64(8), read_point(p, id)?)
        };
        if k >= CLUSTERS {
            return Err(WorkloadError::Corrupt(format!(
                "kmeans: point {id} assigned to cluster {k}"
            )));
        }
        m.set_root(a, view(m, accs).get(k));
        let acc = m.payload_mut(a);
        let count = u64::from_le_bytes(acc[0..8].try_into().expect("8 bytes")) + 1;
        acc[0..8].copy_from_slice(&count.to_le_bytes());
        for (dim, &x) in coords.iter().enumerate() {
            let o = 8 + dim * 8;
            let s = i64::from_le_bytes(acc[o..o + 8].try_into().expect("8 bytes")) + i64::from(x);
            acc[o..o + 8].copy_from_slice(&s.to_le_bytes());
        }
        let slot = &mut m.payload_mut(assign)[(first + j) * 4..(first + j) * 4 + 4];
        if u32::from_le_bytes(slot.try_into().expect("4 bytes")) != k as u32 {
            slot.copy_from_slice(&(k as u32).to_le_bytes());
            changes += 1;
        }
        checksum = checksum.wrapping_add(point_digest(id, it, k, d));
        distance_sum = distance_sum.wrapping_add(d);
    }
    Ok((checksum, distance_sum, changes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_are_deterministic_and_in_range() {
        scaffold::assert_deterministic(point_coords);
        for id in 0..1000 {
            for x in point_coords(id) {
                assert!(x.abs() < (1 << 20) + 3 * (1 << 16), "{x}");
            }
        }
    }

    #[test]
    fn nearest_prefers_the_lowest_index_on_ties() {
        assert_eq!(nearest([5, 3, 3, 9].into_iter()), (1, 3));
    }

    #[test]
    fn rendezvous_releases_everyone_or_reports_abandonment() {
        let r = Rendezvous::new(2);
        std::thread::scope(|s| {
            let h = s.spawn(|| r.wait().is_ok());
            assert!(r.wait().is_ok());
            assert!(h.join().unwrap());
        });
        std::thread::scope(|s| {
            let h = s.spawn(|| r.wait().is_err());
            // Abandoned while the other thread waits: it counted itself under the lock, which
            // it gives up only by waiting on the condition variable.
            while r.state.lock().unwrap().arrived == 0 {
                std::thread::yield_now();
            }
            r.abandon();
            assert!(h.join().unwrap());
        });
        assert!(r.wait().is_err());
    }

    #[test]
    fn known_checksums_match_the_reference() {
        let got: Vec<(u32, u64)> = KNOWN_CHECKSUMS
            .iter()
            .map(|&(size, _)| (size, reference_checksum(size)))
            .collect();
        assert_eq!(
            got, KNOWN_CHECKSUMS,
            "update KNOWN_CHECKSUMS to the reference"
        );
    }
}
