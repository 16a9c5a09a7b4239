//! `database`: an in-heap table with a large long-lived index and a stream of transactions,
//! modelled on DaCapo's h2 (few busy threads, non-scalable). `--size` is the number of rows in
//! thousands ([`SIZE`]: default 100, i.e. 100 000 rows; allowed 1..=10 000).
//!
//! # Data
//!
//! Keys range over a universe of `1.25 · rows` keys; initially every key `k` with `k % 5 != 4`
//! is present (exactly `rows` rows). The index is a two-level, key-ordered structure, like the
//! leaves of a B+-tree under a flat directory: a *directory* (a reference array) of *pages*
//! ([`PAGE`]: 64 row slots, payload `base_key: u64`, `count: u64`), page `p` holding keys
//! `64·p .. 64·p + 63` in slot order (an absent key is a null slot). A row ([`ROW`]) has one
//! reference slot, its value, and the payload `key`, `version`, `amount` (three `u64`s); the
//! value is a byte array of 4..=24 words whose contents follow from `(key, version)`.
//!
//! # Transactions
//!
//! One round loads the table, runs [`Shape::transactions`] `= 15 · rows` transactions, then
//! walks the whole table. Transaction `i` is a pure function of `i` (a hash; no shared random
//! state):
//!
//! - 25% point lookups and 10% range scans of 4..=32 consecutive keys; both copy what they find
//!   into fresh query results (a copy of the row and of its value; a scan collects them in a
//!   result-set reference array first), which die young;
//! - 55% updates: the row object is *replaced* by a new row with `version + 1` and a new value,
//!   and the old row goes into the shard's undo log (a ring of [`Shape::undo_slots`] slots, an
//!   eighth of the rows, which keeps old versions alive for a while as MVCC does). The new rows
//!   outlive a young collection or two and are promoted, and die later in the old generation:
//!   this is what fills the old generation and makes full collections;
//! - 8% inserts and 2% deletes, copy-on-write: the page is replaced by a copy with the slot
//!   changed (and a deleted row goes into the undo log), so index pages turn over too.
//!   Insert-to-delete 4:1 keeps about 80% of the universe present.
//!
//! Keys are skewed: 80% of transactions pick a key in the first two fifths of the universe
//! (the hot set), the rest pick uniformly.
//!
//! # Mutators: shards and skew ("few busy threads")
//!
//! Concord has no global roots: an object is reachable only through the handles of one mutator,
//! so threads cannot share the table. With `--mutators M` the pages are split into `M`
//! contiguous shards of (almost) equal size, one per mutator thread, each with its own
//! directory and undo log. Every thread walks the same transaction stream and executes the
//! transactions that touch its key range (a range scan that crosses a shard boundary is
//! executed piecewise by both shards). The data is spread evenly but the work is not: the hot
//! set lies in the first shard(s), so with 2 mutators thread 0 runs 90% of the transactions
//! (1 350 065 of 1 500 000 at the default size), and more mutators hardly make the workload
//! faster — it models a database with few busy threads. The details report the transactions
//! each shard ran. Threads that finish early return, detaching their mutators.
//!
//! # Checksum
//!
//! Every transaction adds a digest of what it read or wrote (`(i, key, version, amount, value
//! length, value word sum)`, or a "missing"/"duplicate" marker), and the final walk adds a
//! digest of every row; the checksum is their wrapping sum. A key's history is executed by one
//! thread in stream order, so the checksum does not depend on `M`. [`expected_checksum`] replays
//! the same stream on a plain-Rust model of the table (no heap; about 5% of the run time, spent
//! before the mutators start), so every run is checked. Reads also check structure (a row's key
//! matches its slot, a value's length and first word match its version, a page's base key and
//! row count) and report [`WorkloadError::Corrupt`] otherwise.
//!
//! # Heap size
//!
//! The live set is about 210 bytes per row (40-byte row, 48..208-byte value, index pages, undo
//! log), 20 MiB at the default size. Measured smallest heap for the default size with 1 mutator
//! (optimized preset, 2 GC threads, release build): **28 MiB** (searched in 1 MiB steps; near
//! it nearly every collection is a full one). [`Database`]'s default heap is three times that,
//! scaled linearly with the size (at least 4 MiB before tripling) plus 4 MiB per extra mutator:
//! **84 MiB** for the default size and 1 mutator. There a run takes 2-3 s and does 24
//! young and 2 full collections; 542 MiB allocated, 191 MiB copied (survival 0.35), 89 MiB
//! promoted.

use std::sync::atomic::{AtomicU64, Ordering};

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};

use crate::data::{byte_array, splitmix as mix, Fields, Pattern};
use crate::scaffold::{self, detail, view, Size, SizedWorkload};
use crate::{run_copies, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "database";

/// Row slots per index page.
pub const PAGE_SLOTS: usize = 64;
/// An index page: [`PAGE_SLOTS`] row slots, payload `base_key: u64` (offset 0) and `count: u64`
/// (offset 8, non-null slots).
pub const PAGE: ObjectType = ObjectType::fixed(PAGE_SLOTS as u16, 16);
/// A row: slot 0 its value (byte array), payload `key`, `version`, `amount` (`u64`s at 0, 8, 16).
pub const ROW: ObjectType = ObjectType::fixed(1, 24);
/// Tag of a query result: a copy of a row (and of its value), same layout as [`ROW`].
pub const RESULT_TAG: u16 = 1;
/// A query result.
pub const RESULT: ObjectType = ROW.with_tag(RESULT_TAG);
/// The longest value, words.
const MAX_VALUE_WORDS: usize = 24;

/// `--size`: thousands of rows, 100 by default, 1 000 to 10 million rows. The default heap is
/// three times an estimated smallest heap: the 28 MiB measured at the default size with one
/// mutator, scaled with the size, plus 4 MiB per extra mutator (see the module documentation).
pub const SIZE: Size = Size::named("database size", 100, 1..=10_000, " (thousands of rows)")
    .scaled_heap(28 * MIB, 4 * MIB);

/// Transactions per row of the initial table.
pub const TRANSACTIONS_PER_ROW: u64 = 15;
/// Percentage of transactions whose key lies in the hot set (the first two fifths of the
/// universe).
pub const HOT_PERCENT: u64 = 80;

const PAGE_BASE: usize = 0;
const PAGE_COUNT: usize = 8;
const ROW_VALUE: usize = 0;
const ROW_KEY: usize = 0;
const ROW_VERSION: usize = 8;
const ROW_AMOUNT: usize = 16;

/// Seed of the transaction stream.
const SEED: u64 = 0x6832_6462_5f73_6565;
/// Marker digests.
const MISSING: u64 = 0x4d49_5353_494e_4700;
const DUPLICATE: u64 = 0x4455_504c_4943_4154;
const FINAL: u64 = 0x4649_4e41_4c00_0000;

/// The sizes one round works with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// Rows of the initial table (`1000 · size`).
    pub rows: u64,
    /// Keys `0..universe` (`1.25 · rows`).
    pub universe: u64,
    /// Index pages (`universe / 64`, rounded up).
    pub pages: u64,
    /// Transactions per round ([`TRANSACTIONS_PER_ROW`]` · rows`).
    pub transactions: u64,
    /// Slots of the undo logs (`rows / 8`, at least 256), split evenly between the shards:
    /// rings that keep replaced and deleted rows alive for a while.
    pub undo_slots: u64,
}

impl Shape {
    /// The shape for `--size size` (rows in thousands); `size` is not checked.
    pub fn new(size: u32) -> Self {
        let rows = u64::from(size) * 1000;
        let universe = rows / 4 * 5;
        Shape {
            rows,
            universe,
            pages: universe.div_ceil(PAGE_SLOTS as u64),
            transactions: rows * TRANSACTIONS_PER_ROW,
            undo_slots: (rows / 8).max(256),
        }
    }

    /// Keys of the hot set: `0..hot_keys()`, the first two fifths of the universe.
    fn hot_keys(&self) -> u64 {
        (self.universe * 2 / 5).max(1)
    }
}

/// Whether `key` is present in the initial table.
fn initially_present(key: u64) -> bool {
    key % 5 != 4
}

/// A transaction of the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Txn {
    Lookup(u64),
    /// First key, number of keys.
    Scan(u64, u64),
    /// Key, amount delta.
    Update(u64, u64),
    /// Key, amount.
    Insert(u64, u64),
    Delete(u64),
}

impl Txn {
    /// Transaction `i` of the stream.
    fn nth(shape: &Shape, i: u64) -> Txn {
        let r = mix(SEED ^ i);
        let r2 = mix(r);
        let r3 = mix(r2);
        let key = if (r2 >> 32) % 100 < HOT_PERCENT {
            (r2 & 0xffff_ffff) % shape.hot_keys()
        } else {
            (r2 & 0xffff_ffff) % shape.universe
        };
        match r % 100 {
            0..=24 => Txn::Lookup(key),
            25..=34 => Txn::Scan(key, 4 + r3 % 29),
            35..=89 => Txn::Update(key, r3 % 1000),
            90..=97 => Txn::Insert(key, r3 % 1_000_000),
            _ => Txn::Delete(key),
        }
    }

    /// The keys it touches, `lo..hi`.
    fn keys(self, shape: &Shape) -> (u64, u64) {
        match self {
            Txn::Scan(k, n) => (k, (k + n).min(shape.universe)),
            Txn::Lookup(k) | Txn::Update(k, _) | Txn::Insert(k, _) | Txn::Delete(k) => (k, k + 1),
        }
    }
}

/// The amount of a key's initial row.
fn initial_amount(key: u64) -> u64 {
    mix(key ^ 0xa40c_e27a) % 1_000_000
}

/// Words of the value of `(key, version)`: 4..=24.
fn value_words(key: u64, version: u64) -> usize {
    4 + (mix(key ^ version.rotate_left(40)) % (MAX_VALUE_WORDS as u64 - 3)) as usize
}

/// The words of the value of `(key, version)`.
fn value_pattern(key: u64, version: u64) -> Pattern {
    Pattern::new(mix(key.rotate_left(17) ^ version ^ 0x7661_6c75_6500))
}

/// The wrapping sum of the words of the value of `(key, version)`, in closed form.
fn value_sum(key: u64, version: u64) -> u64 {
    value_pattern(key, version).sum(value_words(key, version))
}

/// Digest of a row's contents.
fn row_digest(key: u64, version: u64, amount: u64, words: u64, sum: u64) -> u64 {
    mix(key ^ mix(version ^ mix(amount ^ mix(words ^ mix(sum)))))
}

/// Digest of a row as the model knows it.
fn model_digest(key: u64, version: u64, amount: u64) -> u64 {
    row_digest(
        key,
        version,
        amount,
        value_words(key, version) as u64,
        value_sum(key, version),
    )
}

/// What transaction `i` adds to the checksum for a row (or marker) digest `d`.
fn txn_digest(i: u64, d: u64) -> u64 {
    mix(i.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ d)
}

/// The checksum of one round at size `size` (any number of mutators), from a plain-Rust
/// model of the table that runs the same transaction stream.
pub fn expected_checksum(size: u32) -> u64 {
    let shape = Shape::new(size);
    // (version, amount, digest) per key; version 0 = absent.
    let row = |k: u64, v: u64, a: u64| (v, a, model_digest(k, v, a));
    let mut table: Vec<(u64, u64, u64)> = (0..shape.universe)
        .map(|k| {
            if initially_present(k) {
                row(k, 1, initial_amount(k))
            } else {
                (0, 0, 0)
            }
        })
        .collect();
    let mut sum = 0u64;
    let mut add = |x: u64| sum = sum.wrapping_add(x);
    for i in 0..shape.transactions {
        match Txn::nth(&shape, i) {
            Txn::Lookup(k) => {
                let (v, _, d) = table[k as usize];
                add(txn_digest(i, if v == 0 { mix(k ^ MISSING) } else { d }));
            }
            t @ Txn::Scan(..) => {
                let (lo, hi) = t.keys(&shape);
                for &(v, _, d) in &table[lo as usize..hi as usize] {
                    if v != 0 {
                        add(txn_digest(i, d));
                    }
                }
            }
            Txn::Update(k, delta) => {
                let (v, a, _) = table[k as usize];
                if v == 0 {
                    add(txn_digest(i, mix(k ^ MISSING)));
                } else {
                    let new = row(k, v + 1, a.wrapping_add(delta));
                    add(txn_digest(i, new.2));
                    table[k as usize] = new;
                }
            }
            Txn::Insert(k, a) => {
                if table[k as usize].0 == 0 {
                    let new = row(k, i + 1, a);
                    add(txn_digest(i, new.2));
                    table[k as usize] = new;
                } else {
                    add(txn_digest(i, mix(k ^ DUPLICATE)));
                }
            }
            Txn::Delete(k) => {
                let (v, _, d) = table[k as usize];
                if v == 0 {
                    add(txn_digest(i, mix(k ^ MISSING)));
                } else {
                    add(txn_digest(i, d));
                    table[k as usize] = (0, 0, 0);
                }
            }
        }
    }
    for &(v, _, d) in &table {
        if v != 0 {
            add(mix(FINAL ^ d));
        }
    }
    sum
}

/// The pages of shard `s` of `shards`: `first..end`.
fn shard_pages(shape: &Shape, s: usize, shards: usize) -> (u64, u64) {
    let (s, n) = (s as u64, shards as u64);
    (s * shape.pages / n, (s + 1) * shape.pages / n)
}

/// The `database` workload. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Database;

impl SizedWorkload for Database {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "h2-like in-heap table: a long-lived paged index of rows, lookups, range scans, updates \
         that replace rows, inserts and deletes; one shard per mutator, skewed so that thread 0 \
         is the busy one (size: thousands of rows, default 100)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let shape = Shape::new(n);
        let expected = expected_checksum(n);
        let per_shard: Vec<AtomicU64> = (0..params.mutators).map(|_| AtomicU64::new(0)).collect();
        let checksum = run_copies(heap, params, NAME, |m, shard, _round| {
            let (sum, ran) = run_shard(m, &shape, shard, params.mutators)?;
            per_shard[shard].fetch_add(ran, Ordering::Relaxed);
            Ok(sum)
        })?;
        let ran: Vec<String> = per_shard
            .iter()
            .map(|a| a.load(Ordering::Relaxed).to_string())
            .collect();
        let details = vec![
            detail("rows", shape.rows),
            detail("key_universe", shape.universe),
            detail("index_pages", shape.pages),
            detail("transactions_per_round", shape.transactions),
            detail("shards", params.mutators),
            detail("transactions_per_shard", ran.join(" ")),
        ];
        Ok(scaffold::result(checksum, Some(expected), params, details))
    }
}

/// Shard `shard` of `shards` on mutator `m`: loads its part of the table, runs its part of the
/// transaction stream, walks its part of the table. Returns (checksum part, transactions run).
fn run_shard(
    m: &mut Mutator<'_>,
    shape: &Shape,
    shard: usize,
    shards: usize,
) -> Result<(u64, u64), WorkloadError> {
    let (p0, p1) = shard_pages(shape, shard, shards);
    let s = Shard {
        shape: *shape,
        first_page: p0,
        key_lo: p0 * PAGE_SLOTS as u64,
        key_hi: (p1 * PAGE_SLOTS as u64).min(shape.universe),
        undo_slots: shape.undo_slots.div_ceil(shards as u64) as usize,
        undo_next: std::cell::Cell::new(0),
    };
    m.scope(|m| {
        let dir = load(m, &s, p1 - p0)?;
        let undo = m.alloc_ref_array(s.undo_slots)?;
        let mut sum = 0u64;
        let mut ran = 0u64;
        for i in 0..shape.transactions {
            if i % 4096 == 0 {
                m.safepoint_poll();
            }
            let t = Txn::nth(shape, i);
            let (lo, hi) = t.keys(shape);
            if hi <= s.key_lo || lo >= s.key_hi {
                continue;
            }
            ran += 1;
            let d = m.scope(|m| s.execute(m, dir, undo, i, t))?;
            sum = sum.wrapping_add(d);
        }
        sum = sum.wrapping_add(s.final_walk(m, dir)?);
        Ok((sum, ran))
    })
}

/// One mutator's part of the table: keys `key_lo..key_hi`, pages from `first_page`.
struct Shard {
    shape: Shape,
    first_page: u64,
    key_lo: u64,
    key_hi: u64,
    /// Slots of this shard's undo log.
    undo_slots: usize,
    /// Next slot of the undo log.
    undo_next: std::cell::Cell<usize>,
}

impl Shard {
    /// Directory slot and page slot of `key` (which must be in this shard).
    fn locate(&self, key: u64) -> (usize, usize) {
        let page = key / PAGE_SLOTS as u64;
        (
            (page - self.first_page) as usize,
            (key % PAGE_SLOTS as u64) as usize,
        )
    }

    /// Keeps the replaced or deleted row `row` alive in the undo log (a ring of
    /// [`Shape::undo_slots`]` / shards` slots), overwriting the oldest entry.
    fn log_undo(&self, m: &mut Mutator<'_>, undo: Handle, row: Handle) {
        let n = self.undo_next.get();
        m.set_ref(undo, n, Some(row));
        self.undo_next.set((n + 1) % self.undo_slots);
    }

    /// Loads `pages` pages of the initial table; returns the directory.
    fn load_pages(&self, m: &mut Mutator<'_>, dir: Handle, pages: u64) -> Result<(), GcError> {
        for lp in 0..pages {
            m.scope(|m| {
                let base = (self.first_page + lp) * PAGE_SLOTS as u64;
                let page = m.alloc(PAGE)?;
                let mut count = 0;
                for slot in 0..PAGE_SLOTS {
                    let key = base + slot as u64;
                    if key < self.shape.universe && initially_present(key) {
                        m.scope(|m| {
                            let row = new_row(m, key, 1, initial_amount(key))?;
                            m.set_ref(page, slot, Some(row));
                            Ok::<_, GcError>(())
                        })?;
                        count += 1;
                    }
                }
                m.write_u64(page, PAGE_BASE, base);
                m.write_u64(page, PAGE_COUNT, count);
                m.set_ref(dir, lp as usize, Some(page));
                Ok::<(), GcError>(())
            })?;
        }
        Ok(())
    }

    /// Transaction `i` (which touches this shard); returns what it adds to the checksum.
    fn execute(
        &self,
        m: &mut Mutator<'_>,
        dir: Handle,
        undo: Handle,
        i: u64,
        t: Txn,
    ) -> Result<u64, WorkloadError> {
        match t {
            Txn::Lookup(k) => {
                let (lp, slot) = self.locate(k);
                let Some(row) = page_of(view(m, dir), lp)?.get(slot) else {
                    return Ok(txn_digest(i, mix(k ^ MISSING)));
                };
                let row = m.root(row);
                let result = materialize(m, row, k)?;
                Ok(txn_digest(i, read_row(m, result, k)?.2))
            }
            t @ Txn::Scan(..) => {
                // Copy the rows into a result set, then read the result set.
                let (lo, hi) = t.keys(&self.shape);
                let (lo, hi) = (lo.max(self.key_lo), hi.min(self.key_hi));
                let results = m.alloc_ref_array((hi - lo) as usize)?;
                let row = m.null_handle();
                for k in lo..hi {
                    let (lp, slot) = self.locate(k);
                    let found = page_of(view(m, dir), lp)?.get(slot);
                    if found.is_some() {
                        m.set_root(row, found);
                        m.scope(|m| {
                            let r = materialize(m, row, k)?;
                            m.set_ref(results, (k - lo) as usize, Some(r));
                            Ok::<_, WorkloadError>(())
                        })?;
                    }
                }
                let results = view(m, results);
                let mut sum = 0u64;
                for k in lo..hi {
                    if let Some(row) = results.get((k - lo) as usize) {
                        sum = sum.wrapping_add(txn_digest(i, check_row(row, k)?.2));
                    }
                }
                Ok(sum)
            }
            Txn::Update(k, delta) => {
                let (lp, slot) = self.locate(k);
                let page = page_of(view(m, dir), lp)?;
                let Some(row) = page.get(slot) else {
                    return Ok(txn_digest(i, mix(k ^ MISSING)));
                };
                let (version, amount, _) = check_row(row, k)?;
                let (page, row) = (m.root(page), m.root(row));
                let (version, amount) = (version + 1, amount.wrapping_add(delta));
                let new = new_row(m, k, version, amount)?;
                m.set_ref(page, slot, Some(new));
                self.log_undo(m, undo, row);
                Ok(txn_digest(i, model_digest(k, version, amount)))
            }
            Txn::Insert(k, amount) => {
                let (lp, slot) = self.locate(k);
                let page = page_of(view(m, dir), lp)?;
                if page.get(slot).is_some() {
                    return Ok(txn_digest(i, mix(k ^ DUPLICATE)));
                }
                let page = m.root(page);
                let new = new_row(m, k, i + 1, amount)?;
                replace_page(m, dir, lp, page, slot, Some(new), 1)?;
                Ok(txn_digest(i, model_digest(k, i + 1, amount)))
            }
            Txn::Delete(k) => {
                let (lp, slot) = self.locate(k);
                let page = page_of(view(m, dir), lp)?;
                let Some(row) = page.get(slot) else {
                    return Ok(txn_digest(i, mix(k ^ MISSING)));
                };
                let d = check_row(row, k)?.2;
                let (page, row) = (m.root(page), m.root(row));
                replace_page(m, dir, lp, page, slot, None, -1)?;
                self.log_undo(m, undo, row);
                Ok(txn_digest(i, d))
            }
        }
    }

    /// Walks every page and row of the shard, checking structure; returns the sum of the rows'
    /// final digests. Nothing is allocated, so no handles are needed; a poll per page lets a
    /// waiting collection in.
    fn final_walk(&self, m: &mut Mutator<'_>, dir: Handle) -> Result<u64, WorkloadError> {
        let mut sum = 0u64;
        for lp in 0..view(m, dir).array_len() {
            m.safepoint_poll();
            let page = page_of(view(m, dir), lp)?;
            let base = (self.first_page + lp as u64) * PAGE_SLOTS as u64;
            if page.read_u64(PAGE_BASE) != base {
                return Err(WorkloadError::Corrupt(format!(
                    "database: page for key {base} has base key {}",
                    page.read_u64(PAGE_BASE)
                )));
            }
            let mut count = 0;
            for slot in 0..PAGE_SLOTS {
                if let Some(row) = page.get(slot) {
                    count += 1;
                    let d = check_row(row, base + slot as u64)?.2;
                    sum = sum.wrapping_add(mix(FINAL ^ d));
                }
            }
            if page.read_u64(PAGE_COUNT) != count {
                return Err(WorkloadError::Corrupt(format!(
                    "database: page for key {base} holds {count} rows but says {}",
                    page.read_u64(PAGE_COUNT)
                )));
            }
        }
        Ok(sum)
    }
}

/// Loads this shard's part of the initial table; returns the directory handle (in the
/// caller's scope).
fn load(m: &mut Mutator<'_>, s: &Shard, pages: u64) -> Result<Handle, GcError> {
    let dir = m.alloc_ref_array(pages as usize)?;
    s.load_pages(m, dir, pages)?;
    Ok(dir)
}

/// The page in directory slot `lp`; a null slot is corrupt data.
fn page_of<'m>(dir: Gc<'m>, lp: usize) -> Result<Gc<'m>, WorkloadError> {
    dir.get(lp)
        .ok_or_else(|| WorkloadError::Corrupt(format!("database: directory slot {lp} is null")))
}

/// The value of `row` (key `key`); a row without one is corrupt data.
fn value_of<'m>(row: Gc<'m>, key: u64) -> Result<Gc<'m>, WorkloadError> {
    row.get(ROW_VALUE)
        .ok_or_else(|| WorkloadError::Corrupt(format!("database: row {key} has no value")))
}

/// A new row `(key, version, amount)` with its value; the handle is the caller's.
fn new_row(m: &mut Mutator<'_>, key: u64, version: u64, amount: u64) -> Result<Handle, GcError> {
    let value = value_pattern(key, version).alloc(m, value_words(key, version))?;
    let row = m.alloc_with(ROW, &[Some(value)])?;
    let mut fields = Fields(m.payload_mut(row));
    fields.set_u64(ROW_KEY, key);
    fields.set_u64(ROW_VERSION, version);
    fields.set_u64(ROW_AMOUNT, amount);
    Ok(row)
}

/// A copy of the row in `row` (key `key`) and of its value, as a query result (tagged
/// [`RESULT_TAG`]). The handle is the caller's.
fn materialize(m: &mut Mutator<'_>, row: Handle, key: u64) -> Result<Handle, WorkloadError> {
    let mut buf = [0u8; 8 * MAX_VALUE_WORDS];
    let value = value_of(view(m, row), key)?.payload();
    let len = value.len().min(buf.len());
    buf[..len].copy_from_slice(&value[..len]);
    let copy = byte_array(m, &buf[..len])?;
    let result = m.alloc_with(RESULT, &[Some(copy)])?;
    let fields = [ROW_KEY, ROW_VERSION, ROW_AMOUNT];
    let from = view(m, row);
    let values = fields.map(|field| from.read_u64(field));
    let mut to = Fields(m.payload_mut(result));
    for (field, v) in fields.into_iter().zip(values) {
        to.set_u64(field, v);
    }
    Ok(result)
}

/// Reads and checks the row in `row`, which must hold key `key`; returns
/// `(version, amount, digest)`.
fn read_row(m: &Mutator<'_>, row: Handle, key: u64) -> Result<(u64, u64, u64), WorkloadError> {
    check_row(view(m, row), key)
}

/// [`read_row`] of a [`Gc`].
fn check_row(row: Gc<'_>, key: u64) -> Result<(u64, u64, u64), WorkloadError> {
    let k = row.read_u64(ROW_KEY);
    if k != key {
        return Err(WorkloadError::Corrupt(format!(
            "database: the slot of key {key} holds a row with key {k}"
        )));
    }
    let version = row.read_u64(ROW_VERSION);
    let amount = row.read_u64(ROW_AMOUNT);
    let value = value_of(row, key)?;
    let words = value_words(key, version);
    let sum = value_pattern(key, version).check(value.payload(), words, || {
        format!("database: row {key} version {version}")
    })?;
    Ok((
        version,
        amount,
        row_digest(key, version, amount, words as u64, sum),
    ))
}

/// Replaces page `page` (directory slot `lp`) with a copy whose slot `slot` holds `new` and
/// whose row count differs by `count_delta`.
fn replace_page(
    m: &mut Mutator<'_>,
    dir: Handle,
    lp: usize,
    page: Handle,
    slot: usize,
    new: Option<Handle>,
    count_delta: i64,
) -> Result<(), GcError> {
    m.scope(|m| {
        let copy = m.alloc(PAGE)?;
        let (from, to) = (view(m, page), view(m, copy));
        let new = new.and_then(|h| m.view(h));
        for s in 0..PAGE_SLOTS {
            m.store(to, s, if s == slot { new } else { from.get(s) });
        }
        let base = from.read_u64(PAGE_BASE);
        let count = from.read_u64(PAGE_COUNT).wrapping_add_signed(count_delta);
        m.write_u64(copy, PAGE_BASE, base);
        m.write_u64(copy, PAGE_COUNT, count);
        m.set_ref(dir, lp, Some(copy));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_and_initial_rows() {
        let s = Shape::new(4);
        assert_eq!(s.rows, 4000);
        assert_eq!(s.universe, 5000);
        assert_eq!(s.pages, 79);
        assert_eq!(
            (0..s.universe).filter(|&k| initially_present(k)).count() as u64,
            s.rows
        );
    }

    #[test]
    fn shards_cover_the_pages() {
        let s = Shape::new(3);
        for shards in 1..=7 {
            let mut next = 0;
            for i in 0..shards {
                let (a, b) = shard_pages(&s, i, shards);
                assert_eq!(a, next);
                next = b;
            }
            assert_eq!(next, s.pages);
        }
    }

    #[test]
    fn values_have_4_to_24_words() {
        for key in [0, 7, 12345] {
            for version in [1, 2, 99] {
                assert!((4..=24).contains(&value_words(key, version)));
            }
        }
    }

    #[test]
    fn the_stream_is_skewed_and_mixed() {
        let s = Shape::new(10);
        let (mut hot, mut kinds) = (0, [0u32; 5]);
        for i in 0..10_000 {
            let t = Txn::nth(&s, i);
            if t.keys(&s).0 < s.hot_keys() {
                hot += 1;
            }
            kinds[match t {
                Txn::Lookup(_) => 0,
                Txn::Scan(..) => 1,
                Txn::Update(..) => 2,
                Txn::Insert(..) => 3,
                Txn::Delete(_) => 4,
            }] += 1;
        }
        // 80% hot, plus the uniform 20% that lands in the hot two fifths.
        assert!((8500..9100).contains(&hot), "{hot}");
        // 25% lookups, 10% scans, 55% updates, 8% inserts, 2% deletes.
        for (k, pct) in kinds.iter().zip([25, 10, 55, 8, 2]) {
            assert!(k.abs_diff(pct * 100) < 200, "{kinds:?}");
        }
    }
}
