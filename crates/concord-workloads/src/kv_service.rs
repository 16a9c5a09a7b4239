//! `kv-service`: client threads doing gets and puts on an in-heap key-value store, with
//! per-request latency percentiles; modelled on Cassandra under a YCSB workload A (50% reads,
//! 50% updates). `--size` is the number of keys in thousands ([`SIZE`]: default 50, i.e.
//! 50 000 keys; allowed 1..=10 000).
//!
//! # Store
//!
//! Every key `k` (`0..keys`) is stored as an [`ENTRY`] (slot 0 the next entry of its bucket,
//! slot 1 the key as a 16-byte byte array `user000000001234`, slot 2 the value; payload the key
//! number and the value's version, `u64`s) in a chained hash table: a reference array of
//! buckets (a power of two, at least as many as keys). A value is a byte array of 8..=64 words
//! whose contents follow from `(key, version)`. The store is loaded with version 0 of every key,
//! then one round runs [`REQUESTS_PER_KEY`]` · keys` requests. Request `i` is a pure function
//! of `i` (a hash): a get or a put with equal probability; 80% of requests go to the hot set
//! (the first 10% of the keys), the rest are uniform. A get finds the entry by comparing key
//! bytes along the bucket's chain and reads the whole value; a put allocates a new value
//! (version `i + 1`) and stores it into the entry, so the previous value becomes garbage —
//! young garbage for hot keys, old garbage for cold ones once their values were promoted.
//!
//! # Clients and shards
//!
//! Concord has no global roots: an object is reachable only through the handles of one mutator,
//! so client threads cannot share one store. With `--mutators M` there are `M` client threads,
//! each owning a shard of the store, the keys `k` with `hash(k) % M` equal to its index (a
//! partitioned store, as a Cassandra node owns token ranges). Every client walks the same
//! request stream and serves the requests for its own keys, so a fixed number of requests per
//! run is split evenly across clients. The clients load their shards, meet at a start barrier
//! (waiting inside [`Mutator::blocking`]), then serve their requests back to back (closed loop,
//! no think time).
//!
//! # Latency and throughput
//!
//! Every request is timed from before its first heap access to after its last, with the
//! safepoint poll inside the timed region: time a request spends stopped for a collection
//! (its own allocation failure, or another client's) counts, which is what makes GC pauses
//! visible in the tail. The per-request times go into an HDR histogram (`hdrhistogram`, 3
//! significant digits) per client, merged at the end; [`WorkloadResult::details`] has
//! `latency_p50_us`, `latency_p95_us`, `latency_p99_us`, `latency_p999_us`,
//! `latency_p9999_us`, `latency_max_us`, `latency_mean_us` (µs, three decimals) and
//! `throughput_rps` (requests per second of the request phase: from the first client's start
//! to the last client's end, summed over rounds), besides `requests`, `gets` and `puts`.
//!
//! # Checksum
//!
//! Every get adds a digest of `(i, key, version, value length, value word sum)`, and at the end
//! every entry adds a digest of its key and version; the checksum is their wrapping sum. A key's
//! requests are all served by one client in stream order, so the checksum does not depend on
//! the number of clients; [`expected_checksum`] replays the stream on a plain-Rust model (one
//! version number per key), before the clients start, so every run is checked. Gets also check
//! the value's length and first word and the entry's key ([`WorkloadError::Corrupt`]
//! otherwise).
//!
//! # Heap size
//!
//! The store is about 400 bytes per key (48-byte entry, 32-byte key, 80..528-byte value,
//! bucket slot), 19 MiB at the default size. Measured smallest heap for the default size with
//! one client (optimized preset, 2 GC threads, release build): **28 MiB** (searched in 1 MiB
//! steps; there nearly every collection is a full one). [`KvService`]'s default heap is three
//! times that, scaled linearly with the size (at least 4 MiB before tripling) plus 2 MiB per
//! extra client: **84 MiB** for the default size and one client. There a run (1.5 million
//! requests) takes 1-2 s and does 10 young collections and 1 full one; 230 MiB
//! allocated, 91 MiB copied (survival 0.40), 46 MiB promoted. With one request in flight per
//! client (closed loop), a pause delays one request per client, so pauses show in the maximum
//! and from about the 99.99th percentile on (`latency_p9999_us` is reported too), not at p99.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};
use hdrhistogram::Histogram;

use crate::data::{byte_array, splitmix as mix, Pattern};
use crate::kmeans::{Failure, Rendezvous};
use crate::scaffold::{self, detail, view, Size, SizedWorkload};
use crate::{run_copies, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "kv-service";

/// An entry: slots next, key bytes, value bytes; payload key number and version (`u64`s).
pub const ENTRY: ObjectType = ObjectType::fixed(3, 16);
/// Bytes of a key (`user` and 12 digits).
pub const KEY_BYTES: usize = 16;

/// `--size`: thousands of keys, 50 by default, 1 000 to 10 million keys. The default heap is
/// three times an estimated smallest heap: the 28 MiB measured at the default size with one
/// client, scaled with the size, plus 2 MiB per extra client (see the module documentation).
pub const SIZE: Size = Size::named("kv-service size", 50, 1..=10_000, " (thousands of keys)")
    .scaled_heap(28 * MIB, 2 * MIB);

/// Requests per key per round.
pub const REQUESTS_PER_KEY: u64 = 30;
/// Percentage of requests that go to the hot set.
pub const HOT_PERCENT: u64 = 80;
/// Percentage of requests that are puts.
pub const PUT_PERCENT: u64 = 50;

const NEXT: usize = 0;
const KEY: usize = 1;
const VALUE: usize = 2;
const ENTRY_KEY: usize = 0;
const ENTRY_VERSION: usize = 8;
const MIN_VALUE_WORDS: usize = 8;
const MAX_VALUE_WORDS: usize = 64;

/// Seed of the request stream.
const SEED: u64 = 0x6b76_5f73_6572_7669;
const FINAL: u64 = 0x6669_6e61_6c00;

/// The sizes one round works with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Keys `0..keys` (`1000 · size`).
    pub keys: u64,
    /// The hot set: keys `0..hot_keys` (a tenth of the keys).
    pub hot_keys: u64,
    /// Requests per round ([`REQUESTS_PER_KEY`]` · keys`).
    pub requests: u64,
}

impl Shape {
    /// The shape for `--size size`; `size` is not checked.
    pub fn new(size: u32) -> Self {
        let keys = u64::from(size) * 1000;
        Shape {
            keys,
            hot_keys: (keys / 10).max(1),
            requests: keys * REQUESTS_PER_KEY,
        }
    }

    /// Request `i`: `(key, is_put)`.
    fn request(&self, i: u64) -> (u64, bool) {
        let r = mix(SEED ^ i);
        let key_draw = r >> 32;
        let key = if (r & 0xffff) % 100 < HOT_PERCENT {
            key_draw % self.hot_keys
        } else {
            key_draw % self.keys
        };
        (key, (r >> 16 & 0xffff) % 100 < PUT_PERCENT)
    }
}

/// The client (shard) that owns `key` among `clients`.
fn owner(key: u64, clients: usize) -> usize {
    (mix(key ^ 0x006f_776e_6572) % clients as u64) as usize
}

/// The bucket of `key` in a table of `buckets` (a power of two) buckets.
fn bucket(key: u64, buckets: usize) -> usize {
    (mix(key.rotate_left(32) ^ 0x6275_636b) as usize) & (buckets - 1)
}

/// The key bytes of `key`: `user` and 12 decimal digits.
fn key_bytes(key: u64) -> [u8; KEY_BYTES] {
    let mut b = *b"user000000000000";
    let mut k = key;
    for d in b[4..].iter_mut().rev() {
        *d = b'0' + (k % 10) as u8;
        k /= 10;
    }
    b
}

/// Words of the value of `(key, version)`.
fn value_words(key: u64, version: u64) -> usize {
    MIN_VALUE_WORDS
        + (mix(key ^ version.rotate_left(24)) % (MAX_VALUE_WORDS - MIN_VALUE_WORDS + 1) as u64)
            as usize
}

/// The words of the value of `(key, version)`.
fn value_pattern(key: u64, version: u64) -> Pattern {
    Pattern::new(mix(key.rotate_left(40) ^ version ^ 0x76_616c))
}

/// The wrapping sum of the words of the value of `(key, version)`, in closed form.
fn value_sum(key: u64, version: u64) -> u64 {
    value_pattern(key, version).sum(value_words(key, version))
}

/// What get `i` adds to the checksum.
fn get_digest(i: u64, key: u64, version: u64, words: u64, sum: u64) -> u64 {
    mix(i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ mix(key ^ mix(version ^ mix(words ^ mix(sum)))))
}

/// What an entry adds to the checksum at the end.
fn final_digest(key: u64, version: u64) -> u64 {
    mix(FINAL ^ key ^ mix(version))
}

/// The checksum of one round at `size` (any number of clients), from a plain-Rust model of the
/// store (one version per key) that serves the same request stream.
pub fn expected_checksum(size: u32) -> u64 {
    let shape = Shape::new(size);
    let mut versions = vec![0u64; shape.keys as usize];
    let mut sum = 0u64;
    for i in 0..shape.requests {
        let (key, put) = shape.request(i);
        let v = &mut versions[key as usize];
        if put {
            *v = i + 1;
        } else {
            let words = value_words(key, *v) as u64;
            sum = sum.wrapping_add(get_digest(i, key, *v, words, value_sum(key, *v)));
        }
    }
    for (key, &v) in versions.iter().enumerate() {
        sum = sum.wrapping_add(final_digest(key as u64, v));
    }
    sum
}

/// What the clients of one run share.
struct Shared {
    start: Rendezvous,
    histogram: Mutex<Histogram<u64>>,
    /// Per round: the first client's start and the last client's end of the request phase.
    spans: Mutex<Vec<Option<(Instant, Instant)>>>,
    /// Gets and puts served.
    counts: Mutex<(u64, u64)>,
}

/// A latency histogram from 1 ns to 100 s with 3 significant digits.
fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// The `kv-service` workload. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KvService;

impl SizedWorkload for KvService {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "Cassandra-like key-value service: client threads doing gets and puts (50/50, hot set) \
         on their shard of an in-heap hash table; per-request latency percentiles and \
         throughput (size: thousands of keys, default 50)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let shape = Shape::new(n);
        let expected = expected_checksum(n);
        let clients = params.mutators;
        let shared = Shared {
            start: Rendezvous::new(clients),
            histogram: Mutex::new(new_histogram()),
            spans: Mutex::new(vec![None; params.rounds]),
            counts: Mutex::new((0, 0)),
        };
        let checksum = run_copies(heap, params, NAME, |m, client, round| {
            let r = shared
                .start
                .guard(|| run_client(m, &shape, &shared, client, clients, round))?;
            Ok(r.unwrap_or(0))
        })?;
        let h = shared
            .histogram
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let busy: Duration = shared
            .spans
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .flatten()
            .map(|(a, b)| b.saturating_duration_since(*a))
            .sum();
        let (gets, puts) = shared
            .counts
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let us = |ns: u64| format!("{:.3}", ns as f64 / 1000.0);
        let details = vec![
            detail("clients", clients),
            detail("keys", shape.keys),
            detail("hot_keys", shape.hot_keys),
            detail("requests", h.len()),
            detail("gets", gets),
            detail("puts", puts),
            detail("latency_p50_us", us(h.value_at_quantile(0.50))),
            detail("latency_p95_us", us(h.value_at_quantile(0.95))),
            detail("latency_p99_us", us(h.value_at_quantile(0.99))),
            detail("latency_p999_us", us(h.value_at_quantile(0.999))),
            detail("latency_p9999_us", us(h.value_at_quantile(0.9999))),
            detail("latency_max_us", us(h.max())),
            detail("latency_mean_us", format!("{:.3}", h.mean() / 1000.0)),
            detail(
                "throughput_rps",
                format!("{:.0}", h.len() as f64 / busy.as_secs_f64().max(1e-9)),
            ),
        ];
        Ok(scaffold::result(checksum, Some(expected), params, details))
    }
}

/// Client `client` of `clients` on mutator `m`: loads its shard, waits for the others, serves
/// its requests, walks its shard. Returns its part of the checksum.
fn run_client(
    m: &mut Mutator<'_>,
    shape: &Shape,
    shared: &Shared,
    client: usize,
    clients: usize,
    round: usize,
) -> Result<u64, Failure> {
    m.scope(|m| {
        let table = load(m, shape, client, clients)?;
        m.blocking(|| shared.start.wait())?;
        let mut hist = new_histogram();
        let (mut gets, mut puts) = (0u64, 0u64);
        let mut sum = 0u64;
        let start = Instant::now();
        for i in 0..shape.requests {
            let (key, put) = shape.request(i);
            if owner(key, clients) != client {
                continue;
            }
            let t0 = Instant::now();
            let d = m.scope(|m| serve(m, table, i, key, put))?;
            hist.saturating_record(t0.elapsed().as_nanos() as u64);
            sum = sum.wrapping_add(d);
            if put {
                puts += 1;
            } else {
                gets += 1;
            }
        }
        let end = Instant::now();
        {
            let mut spans = shared.spans.lock().unwrap_or_else(|e| e.into_inner());
            let s = &mut spans[round];
            *s = Some(match *s {
                None => (start, end),
                Some((a, b)) => (a.min(start), b.max(end)),
            });
        }
        shared
            .histogram
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(&hist)
            .expect("histograms with equal bounds add up");
        {
            let mut c = shared.counts.lock().unwrap_or_else(|e| e.into_inner());
            c.0 += gets;
            c.1 += puts;
        }
        sum = sum.wrapping_add(final_walk(m, table)?);
        Ok(sum)
    })
}

/// Builds this client's shard with version 0 of each of its keys; returns the bucket array as
/// a handle of the caller's scope.
fn load(
    m: &mut Mutator<'_>,
    shape: &Shape,
    client: usize,
    clients: usize,
) -> Result<Handle, GcError> {
    let mine = (0..shape.keys)
        .filter(|&k| owner(k, clients) == client)
        .count();
    let buckets = mine.next_power_of_two().max(16);
    let table = m.alloc_ref_array(buckets)?;
    for key in (0..shape.keys).filter(|&k| owner(k, clients) == client) {
        m.scope(|m| {
            let kb = byte_array(m, &key_bytes(key))?;
            let value = new_value(m, key, 0)?;
            let e = m.alloc_with(ENTRY, &[None, Some(kb), Some(value)])?;
            m.write_u64(e, ENTRY_KEY, key);
            let b = bucket(key, buckets);
            let (table, e) = (view(m, table), view(m, e));
            m.store(e, NEXT, table.get(b));
            m.store(table, b, Some(e));
            Ok::<(), GcError>(())
        })?;
    }
    Ok(table)
}

/// A new value of `(key, version)`; the handle is the caller's.
fn new_value(m: &mut Mutator<'_>, key: u64, version: u64) -> Result<Handle, GcError> {
    value_pattern(key, version).alloc(m, value_words(key, version))
}

/// The entry of `key` in the bucket array `table`; a missing key is corrupt data.
fn find<'m>(table: Gc<'m>, key: u64) -> Result<Gc<'m>, WorkloadError> {
    let want = key_bytes(key);
    let mut cur = table.get(bucket(key, table.array_len()));
    while let Some(entry) = cur {
        if entry.get(KEY).is_some_and(|k| k.payload() == want) {
            let k = entry.read_u64(ENTRY_KEY);
            if k != key {
                return Err(WorkloadError::Corrupt(format!(
                    "kv-service: the entry with key bytes of {key} says key {k}"
                )));
            }
            return Ok(entry);
        }
        cur = entry.get(NEXT);
    }
    Err(WorkloadError::Corrupt(format!(
        "kv-service: key {key} is missing from its bucket"
    )))
}

/// Serves request `i` for `key`; returns what it adds to the checksum. A get allocates
/// nothing and so needs no handle; a put roots the entry across the new value's allocation.
fn serve(
    m: &mut Mutator<'_>,
    table: Handle,
    i: u64,
    key: u64,
    put: bool,
) -> Result<u64, WorkloadError> {
    let entry = find(view(m, table), key)?;
    if put {
        let entry = m.root(entry);
        let v = new_value(m, key, i + 1)?;
        m.set_ref(entry, VALUE, Some(v));
        m.write_u64(entry, ENTRY_VERSION, i + 1);
        return Ok(0);
    }
    let version = entry.read_u64(ENTRY_VERSION);
    let (words, sum) = read_value(entry.get(VALUE), key, version)?;
    Ok(get_digest(i, key, version, words, sum))
}

/// Checks the value `v` against `(key, version)`; returns its word count and word sum.
fn read_value(v: Option<Gc<'_>>, key: u64, version: u64) -> Result<(u64, u64), WorkloadError> {
    let what = || format!("kv-service: key {key} version {version}");
    let words = value_words(key, version);
    let Some(v) = v else {
        return Err(WorkloadError::Corrupt(format!("{} has no value", what())));
    };
    let sum = value_pattern(key, version).check(v.payload(), words, what)?;
    Ok((words as u64, sum))
}

/// Walks every entry of the shard, checking it; returns the sum of their final digests.
/// Nothing is allocated, so no handles are needed; a poll per bucket lets a waiting
/// collection in.
fn final_walk(m: &mut Mutator<'_>, table: Handle) -> Result<u64, WorkloadError> {
    let buckets = view(m, table).array_len();
    let mut sum = 0u64;
    for b in 0..buckets {
        m.safepoint_poll();
        let mut cur = view(m, table).get(b);
        while let Some(e) = cur {
            let key = e.read_u64(ENTRY_KEY);
            let version = e.read_u64(ENTRY_VERSION);
            if e.get(KEY).map(Gc::payload) != Some(&key_bytes(key)[..]) || bucket(key, buckets) != b
            {
                return Err(WorkloadError::Corrupt(format!(
                    "kv-service: entry of key {key} has wrong key bytes or bucket"
                )));
            }
            read_value(e.get(VALUE), key, version)?;
            sum = sum.wrapping_add(final_digest(key, version));
            cur = e.get(NEXT);
        }
    }
    Ok(sum)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_bytes_are_fixed_width_decimal() {
        assert_eq!(&key_bytes(0), b"user000000000000");
        assert_eq!(&key_bytes(1234), b"user000000001234");
    }

    #[test]
    fn the_stream_has_a_hot_set_and_mixed_operations() {
        let s = Shape::new(10);
        let (mut hot, mut puts) = (0, 0);
        for i in 0..10_000 {
            let (k, put) = s.request(i);
            assert!(k < s.keys);
            hot += u32::from(k < s.hot_keys);
            puts += u32::from(put);
        }
        assert!((8000..8400).contains(&hot), "{hot}");
        assert!((4700..5300).contains(&puts), "{puts}");
    }

    #[test]
    fn values_have_8_to_64_words() {
        for key in [0, 3, 999_999] {
            for version in [0, 1, 12345] {
                let n = value_words(key, version);
                assert!((MIN_VALUE_WORDS..=MAX_VALUE_WORDS).contains(&n));
            }
        }
    }
}
