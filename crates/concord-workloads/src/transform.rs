//! `transform`: tree-to-tree transformation of XML-like documents, standing for DaCapo `xalan`
//! (scalable; medium-lived objects).
//!
//! The mutators share a fixed number of documents (`--size` thousand, [`SIZE`], default 12;
//! document `d` is transformed by mutator `d % mutators`). For each document a mutator:
//!
//! 1. builds the input tree from a deterministic generator: a `catalog` element with 16 to 48
//!    `item` elements, each with attributes `id`, `category` (`cat-N`) and `price` (decimal
//!    text) and children `name`, `qty`, `tags` (zero to three `tag` elements) and sometimes
//!    `note`, all text in byte arrays;
//! 2. transforms it into a new output tree, as a stylesheet would: it parses the numbers back
//!    out of the input's text, drops items with quantity 0, groups the rest by category
//!    (ascending), sorts each group by value `price * qty` (descending, then id), and emits
//!    `report > group(category, count, total) > entry(ref, value) > title, labels` plus a
//!    `summary(items, skipped, grand)`; titles are the item names upper-cased, labels the tags
//!    joined with commas, and `ref` shares the input's `id` text object (so part of the input
//!    lives as long as the output);
//! 3. hashes the output (64-bit FNV-1a over a serialization: `<` name, ` key=value` per
//!    attribute, `>`, text, children, `/`), stores the hash in the `report` element, and puts
//!    the output into a ring of the [`WINDOW`] most recent outputs of this mutator (another
//!    window through [`Transform::with_window`], for tests). The input becomes garbage.
//!
//! The output a document pushes out of the ring has lived while its mutator transformed
//! [`WINDOW`] more documents (about 29 MiB of allocation): the medium-lived objects of this
//! workload. It is hashed again and compared with the stored hash (a mismatch is
//! [`WorkloadError::Corrupt`]); the checksum is the wrapping sum over all documents of
//! `mix(hash)`, taken as outputs leave the ring (or at the end), so it does not depend on how
//! the documents are split across mutators. [`expected_checksum`] derives it from the same
//! generator with an independent implementation that writes the output serialization
//! directly from the generated records (sharing only the grouping rule with the heap
//! transformation); `run` computes it before attaching any mutator, except
//! at the default size, whose value is stored ([`DEFAULT_EXPECTED`], checked by a unit test).
//!
//! Heap objects: [`ELEM`] (`name`, `attrs`, `children`, `text`; payload `u64`, the stored hash
//! in a `report`), [`ATTR`] (`key`, `value`), reference arrays of attributes and children, byte
//! arrays of text. Element and attribute names are interned once per mutator in a long-lived
//! reference array of byte arrays.
//!
//! # Heap size
//!
//! Live data: the window, about 10.7 MiB of outputs per mutator (the heap after a full
//! collection holds 10.8 MiB), plus the input tree being transformed (about 20 KiB). At the
//! default size (12 000 documents) the run allocates about 0.33 GiB (29 KiB per document).
//! Measured smallest heap that completes (optimized preset, 2 GC threads, release build, 1 to
//! 2 MiB steps): 14 MiB with one mutator (13 runs out of memory), 28 MiB with two (26 runs out
//! of memory). [`Transform`]'s default heap is three times that: 42 MiB per mutator. Near the
//! minimum the run is slow (hundreds of full collections).

use std::sync::atomic::{AtomicU64, Ordering};

use concord::{GcError, Handle, Heap, Mutator, ObjectType};

use crate::data::{byte_array, splitmix_finalize as mix, Fnv, Rng};
use crate::scaffold::{self, detail, try_escape, Size};
use crate::{run_copies, Workload, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "transform";

/// Outputs each mutator keeps alive (the most recent ones).
pub const WINDOW: usize = 1024;
/// Item categories.
pub const CATEGORIES: u32 = 8;

/// `--size`: thousands of documents, 12 by default, at most 100 million documents. The default
/// heap (with the standard window) is three times the measured smallest heap, 14 MiB per
/// mutator, whatever the size (see the module documentation).
pub const SIZE: Size = Size::named(
    "transform size",
    12,
    1..=100_000,
    " (thousands of documents)",
)
.measured_heap(14 * MIB, 14 * MIB);

/// [`expected_checksum`] of the default size, stored so that default runs do not spend time
/// on the reference (a unit test recomputes it).
pub const DEFAULT_EXPECTED: u64 = 11_659_266_462_676_012_356;

/// An element: `name`, `attrs` (reference array of [`ATTR`]), `children` (reference array of
/// [`ELEM`]), `text` (byte array); payload `u64` (the output hash, in a `report`).
pub const ELEM: ObjectType = ObjectType::fixed(4, 8);
/// An attribute: `key`, `value` (byte arrays).
pub const ATTR: ObjectType = ObjectType::fixed(2, 0);

// Element slots.
const E_NAME: usize = 0;
const E_ATTRS: usize = 1;
const E_CHILDREN: usize = 2;
const E_TEXT: usize = 3;
/// Payload offset of a `report`'s stored hash.
const E_HASH: usize = 0;
// Attribute slots.
const A_KEY: usize = 0;
const A_VALUE: usize = 1;

/// The interned names, by index.
const NAMES: [&str; 24] = [
    "catalog", "item", "name", "qty", "tags", "tag", "note", "report", "group", "entry", "title",
    "labels", "summary", "id", "category", "price", "source", "count", "total", "ref", "value",
    "items", "skipped", "grand",
];
const CATALOG: usize = 0;
const ITEM: usize = 1;
const N_NAME: usize = 2;
const QTY: usize = 3;
const TAGS: usize = 4;
const TAG: usize = 5;
const NOTE: usize = 6;
const REPORT: usize = 7;
const GROUP: usize = 8;
const ENTRY: usize = 9;
const TITLE: usize = 10;
const LABELS: usize = 11;
const SUMMARY: usize = 12;
const ID: usize = 13;
const CATEGORY: usize = 14;
const PRICE: usize = 15;
const SOURCE: usize = 16;
const COUNT: usize = 17;
const TOTAL: usize = 18;
const REF: usize = 19;
const VALUE: usize = 20;
const ITEMS: usize = 21;
const SKIPPED: usize = 22;
const GRAND: usize = 23;

// Children of an input item, in order.
const ITEM_NAME: usize = 0;
const ITEM_QTY: usize = 1;
const ITEM_TAGS: usize = 2;

// ---- the generator (shared by the heap implementation and the reference) ----

/// Appends a lower-case word of 3 to 8 letters.
fn word(rng: &mut Rng, out: &mut Vec<u8>) {
    let len = 3 + rng.below(6);
    for _ in 0..len {
        out.push(b'a' + rng.below(26) as u8);
    }
}

/// `n` words separated by `sep`.
fn words(rng: &mut Rng, n: u64, sep: u8) -> Vec<u8> {
    let mut out = Vec::new();
    for w in 0..n {
        if w > 0 {
            out.push(sep);
        }
        word(rng, &mut out);
    }
    out
}

/// One generated input item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// The `id` attribute.
    pub id: u32,
    /// The category number (`category` is `cat-N`), below [`CATEGORIES`].
    pub category: u32,
    /// The `price` attribute.
    pub price: u32,
    /// The `qty` child's text; 0 means the item is dropped.
    pub qty: u32,
    /// The `name` child's text.
    pub name: Vec<u8>,
    /// The `tag` children's texts.
    pub tags: Vec<Vec<u8>>,
    /// The `note` child's text, if it has one.
    pub note: Option<Vec<u8>>,
}

/// The items of document `doc`.
pub fn doc_items(doc: u64) -> Vec<Item> {
    let mut rng = Rng::new(0x7a11_0000 ^ doc);
    let n = 16 + rng.below(33);
    (0..n)
        .map(|k| {
            let id = (doc.wrapping_mul(131) + k * 7 + rng.below(7)) as u32;
            let category = rng.below(u64::from(CATEGORIES)) as u32;
            let price = 100 + rng.below(99_900) as u32;
            let qty = rng.below(12) as u32;
            let name_words = 1 + rng.below(3);
            let name = words(&mut rng, name_words, b' ');
            let tags = (0..rng.below(4))
                .map(|_| words(&mut rng, 1, b' '))
                .collect();
            let note = (rng.below(3) == 0).then(|| {
                let n = 3 + rng.below(6);
                words(&mut rng, n, b' ')
            });
            Item {
                id,
                category,
                price,
                qty,
                name,
                tags,
                note,
            }
        })
        .collect()
}

/// Decimal text of `v`.
fn dec(v: u64) -> Vec<u8> {
    v.to_string().into_bytes()
}

/// The `category` attribute text of category `c`.
fn category_text(c: u32) -> Vec<u8> {
    format!("cat-{c}").into_bytes()
}

/// Parses decimal text (at most 19 digits).
fn parse_dec(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 19 {
        return None;
    }
    bytes.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u64::from(b - b'0'))
    })
}

/// The output serialization's markup, fed into its hash (64-bit FNV-1a).
trait Markup {
    /// `<` name, ` key=value` per attribute, `>`.
    fn open(&mut self, name: &[u8], attrs: &[(&[u8], &[u8])]);

    /// `/`.
    fn close(&mut self);
}

impl Markup for Fnv {
    fn open(&mut self, name: &[u8], attrs: &[(&[u8], &[u8])]) {
        self.bytes(b"<");
        self.bytes(name);
        for (k, v) in attrs {
            self.bytes(b" ");
            self.bytes(k);
            self.bytes(b"=");
            self.bytes(v);
        }
        self.bytes(b">");
    }

    fn close(&mut self) {
        self.bytes(b"/");
    }
}

// ---- the reference implementation (plain Rust) ----

/// The value of an item: `price * qty`.
fn value(price: u64, qty: u64) -> u64 {
    price * qty
}

/// The stylesheet's grouping, shared by the reference and the heap transformation: for each
/// category in ascending order that has any, its items of nonzero value sorted by value
/// (descending) then id, and their total value. `key` gives an item's `(category, value, id)`.
fn groups<T>(items: &[T], key: impl Fn(&T) -> (u32, u64, u64)) -> Vec<(u32, Vec<&T>, u64)> {
    let mut out = Vec::new();
    for c in 0..CATEGORIES {
        let mut group: Vec<&T> = items
            .iter()
            .filter(|it| matches!(key(it), (category, value, _) if category == c && value > 0))
            .collect();
        if group.is_empty() {
            continue;
        }
        group.sort_by_key(|it| {
            let (_, value, id) = key(it);
            (std::cmp::Reverse(value), id)
        });
        let total = group.iter().map(|it| key(it).1).sum();
        out.push((c, group, total));
    }
    out
}

/// The output hash of document `doc`, written directly from its records.
pub fn reference_hash(doc: u64) -> u64 {
    let items = doc_items(doc);
    let name = |i: usize| NAMES[i].as_bytes();
    let mut h = Fnv::new();
    h.open(name(REPORT), &[(name(SOURCE), &dec(doc))]);
    let (mut kept, mut grand) = (0u64, 0u64);
    let item_value = |it: &Item| value(it.price.into(), it.qty.into());
    for (c, group, total) in groups(&items, |it| (it.category, item_value(it), it.id.into())) {
        h.open(
            name(GROUP),
            &[
                (name(CATEGORY), &category_text(c)),
                (name(COUNT), &dec(group.len() as u64)),
                (name(TOTAL), &dec(total)),
            ],
        );
        for it in &group {
            h.open(
                name(ENTRY),
                &[
                    (name(REF), &dec(it.id.into())),
                    (name(VALUE), &dec(item_value(it))),
                ],
            );
            h.open(name(TITLE), &[]);
            h.bytes(&it.name.to_ascii_uppercase());
            h.close();
            if !it.tags.is_empty() {
                h.open(name(LABELS), &[]);
                h.bytes(&it.tags.join(&b',')[..]);
                h.close();
            }
            h.close();
        }
        h.close();
        kept += group.len() as u64;
        grand += total;
    }
    h.open(
        name(SUMMARY),
        &[
            (name(ITEMS), &dec(kept)),
            (name(SKIPPED), &dec(items.len() as u64 - kept)),
            (name(GRAND), &dec(grand)),
        ],
    );
    h.close();
    h.close();
    h.finish()
}

/// The checksum of one round of `documents` documents, computed without the heap.
pub fn expected_checksum(documents: u64) -> u64 {
    (0..documents).fold(0u64, |sum, d| sum.wrapping_add(mix(reference_hash(d))))
}

// ---- the workload ----

/// Largest window [`Transform::with_window`] accepts.
pub const MAX_WINDOW: usize = 1 << 20;

/// The `transform` workload. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transform {
    window: usize,
}

impl Transform {
    /// With the standard window ([`WINDOW`] outputs per mutator).
    pub const fn standard() -> Self {
        Transform { window: WINDOW }
    }

    /// With a window of `window` outputs per mutator (`1..=`[`MAX_WINDOW`], checked when it
    /// runs). The checksum does not depend on it.
    pub const fn with_window(window: usize) -> Self {
        Transform { window }
    }

    /// Outputs each mutator keeps alive.
    pub fn window(&self) -> usize {
        self.window
    }
}

impl Default for Transform {
    /// [`Transform::standard`].
    fn default() -> Self {
        Transform::standard()
    }
}

impl Workload for Transform {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "an XSLT-like transformer: the mutators share N thousand generated documents, each \
         turned into a new grouped, sorted output tree; the last 1024 outputs per mutator stay \
         alive (size N, default 12)"
    }

    fn default_heap(&self, params: &WorkloadParams) -> usize {
        if self.window == WINDOW {
            return SIZE.default_heap(params);
        }
        // In proportion to the window, at least 12 MiB per mutator.
        let per = (SIZE.heap(SIZE.default(), 1) / WINDOW)
            .saturating_mul(self.window)
            .max(12 * MIB);
        scaffold::round_up_mib(per.saturating_mul(params.mutators.max(1)))
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        params.validate()?;
        if !(1..=MAX_WINDOW).contains(&self.window) {
            return Err(WorkloadError::BadParameter(format!(
                "transform window {} is out of range (allowed: 1..={MAX_WINDOW})",
                self.window
            )));
        }
        SIZE.of(params).map(drop)
    }

    fn run(&self, heap: &Heap, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        self.validate(params)?;
        let n = SIZE.of(params)?;
        let documents = u64::from(n) * 1000;
        let expected = SIZE.stored_or(n, DEFAULT_EXPECTED, || expected_checksum(documents));
        let mutators = params.mutators as u64;
        let window = self.window;
        let items = AtomicU64::new(0);
        let kept = AtomicU64::new(0);
        let checksum = run_copies(heap, params, NAME, |m, copy, _round| {
            let r = run_share(m, documents, copy as u64, mutators, window)?;
            items.fetch_add(r.items, Ordering::Relaxed);
            kept.fetch_add(r.kept, Ordering::Relaxed);
            Ok(r.checksum)
        })?;
        let details = vec![
            detail("documents per round", documents),
            detail("window (outputs per mutator)", window),
            detail("input items (all rounds)", items.into_inner()),
            detail("output entries (all rounds)", kept.into_inner()),
        ];
        Ok(scaffold::result(checksum, Some(expected), params, details))
    }
}

/// What one mutator's share produced.
struct Share {
    checksum: u64,
    items: u64,
    kept: u64,
}

/// The handles every step needs: the interned names.
#[derive(Clone, Copy)]
struct Ctx {
    names: Handle,
}

/// Mutator `copy` of `mutators`: transforms documents `copy, copy + mutators, ...` below
/// `documents`, keeping the last `window` outputs alive.
fn run_share(
    m: &mut Mutator<'_>,
    documents: u64,
    copy: u64,
    mutators: u64,
    window: usize,
) -> Result<Share, WorkloadError> {
    m.scope(|m| {
        let names = m.alloc_ref_array(NAMES.len())?;
        for (i, n) in NAMES.iter().enumerate() {
            m.scope(|m| {
                let s = byte_array(m, n.as_bytes())?;
                m.set_ref(names, i, Some(s));
                Ok::<_, GcError>(())
            })?;
        }
        let cx = Ctx { names };
        let ring = m.alloc_ref_array(window)?;
        let mut share = Share {
            checksum: 0,
            items: 0,
            kept: 0,
        };
        let mut slot = 0;
        let mut d = copy;
        while d < documents {
            m.scope(|m| {
                let items = doc_items(d);
                share.items += items.len() as u64;
                let input = build_input(m, cx, d, &items)?;
                let (output, kept) = transform(m, cx, input, d)?;
                share.kept += kept;
                let mut h = Fnv::new();
                hash_tree(m, output, &mut h)?;
                m.write_u64(output, E_HASH, h.finish());
                if let Some(old) = m.get_ref(ring, slot) {
                    share.checksum = share.checksum.wrapping_add(retire(m, old)?);
                }
                m.set_ref(ring, slot, Some(output));
                Ok::<_, WorkloadError>(())
            })?;
            slot = (slot + 1) % window;
            d += mutators;
        }
        for s in 0..window {
            m.scope(|m| {
                if let Some(old) = m.get_ref(ring, s) {
                    share.checksum = share.checksum.wrapping_add(retire(m, old)?);
                    m.set_ref(ring, s, None);
                }
                Ok::<_, WorkloadError>(())
            })?;
        }
        Ok(share)
    })
}

/// Hashes an output leaving the window again and checks it against the stored hash; returns
/// its checksum contribution `mix(hash)`.
fn retire(m: &mut Mutator<'_>, output: Handle) -> Result<u64, WorkloadError> {
    let mut h = Fnv::new();
    hash_tree(m, output, &mut h)?;
    let stored = m.read_u64(output, E_HASH);
    if h.finish() != stored {
        return Err(WorkloadError::Corrupt(format!(
            "transform: an output tree changed while in the window (hash {:#x}, stored {stored:#x})",
            h.finish()
        )));
    }
    Ok(mix(h.finish()))
}

/// A new element named `NAMES[name]` with attributes `(NAMES[key], value)`, `children` and
/// `text` (the handle belongs to the caller's scope).
fn elem(
    m: &mut Mutator<'_>,
    cx: Ctx,
    name: usize,
    attrs: &[(usize, Handle)],
    children: &[Handle],
    text: Option<Handle>,
) -> Result<Handle, WorkloadError> {
    try_escape(m, |m| {
        let e = m.alloc(ELEM)?;
        let n = m.get_ref(cx.names, name);
        m.set_ref(e, E_NAME, n);
        if !attrs.is_empty() {
            let arr = m.alloc_ref_array(attrs.len())?;
            m.set_ref(e, E_ATTRS, Some(arr));
            for (i, &(key, value)) in attrs.iter().enumerate() {
                m.scope(|m| {
                    let a = m.alloc(ATTR)?;
                    let k = m.get_ref(cx.names, key);
                    m.set_ref(a, A_KEY, k);
                    m.set_ref(a, A_VALUE, Some(value));
                    m.set_ref(arr, i, Some(a));
                    Ok::<_, GcError>(())
                })?;
            }
        }
        if !children.is_empty() {
            let arr = m.alloc_ref_array(children.len())?;
            m.set_ref(e, E_CHILDREN, Some(arr));
            for (i, &c) in children.iter().enumerate() {
                m.set_ref(arr, i, Some(c));
            }
        }
        m.set_ref(e, E_TEXT, text);
        Ok(e)
    })
}

/// An element named `NAMES[name]` holding only the text `bytes`.
fn text_elem(
    m: &mut Mutator<'_>,
    cx: Ctx,
    name: usize,
    bytes: &[u8],
) -> Result<Handle, WorkloadError> {
    try_escape(m, |m| {
        let t = byte_array(m, bytes)?;
        elem(m, cx, name, &[], &[], Some(t))
    })
}

/// Builds the input tree of document `doc` from its records.
fn build_input(
    m: &mut Mutator<'_>,
    cx: Ctx,
    doc: u64,
    items: &[Item],
) -> Result<Handle, WorkloadError> {
    try_escape(m, |m| {
        let mut children = Vec::with_capacity(items.len());
        for it in items {
            let item = try_escape(m, |m| {
                let id = byte_array(m, &dec(it.id.into()))?;
                let cat = byte_array(m, &category_text(it.category))?;
                let price = byte_array(m, &dec(it.price.into()))?;
                let name = text_elem(m, cx, N_NAME, &it.name)?;
                let qty = text_elem(m, cx, QTY, &dec(it.qty.into()))?;
                let mut tags = Vec::with_capacity(it.tags.len());
                for t in &it.tags {
                    tags.push(text_elem(m, cx, TAG, t)?);
                }
                let tags = elem(m, cx, TAGS, &[], &tags, None)?;
                let mut kids = vec![name, qty, tags];
                if let Some(note) = &it.note {
                    kids.push(text_elem(m, cx, NOTE, note)?);
                }
                elem(
                    m,
                    cx,
                    ITEM,
                    &[(ID, id), (CATEGORY, cat), (PRICE, price)],
                    &kids,
                    None,
                )
            })?;
            children.push(item);
        }
        let id = byte_array(m, &dec(doc))?;
        elem(m, cx, CATALOG, &[(ID, id)], &children, None)
    })
}

/// What the transformation reads from an input item.
struct Rec {
    /// Index among the catalog's children.
    index: usize,
    id: u64,
    category: u32,
    value: u64,
}

/// A structural problem in the input tree.
fn bad_input(what: impl std::fmt::Display) -> WorkloadError {
    WorkloadError::Corrupt(format!("transform: input tree: {what}"))
}

/// Reference slot `slot` of `obj` in the input tree, as a handle of the caller's scope; a null
/// slot is corrupt input, which `missing` describes.
fn input_ref(
    m: &mut Mutator<'_>,
    obj: Handle,
    slot: usize,
    missing: &str,
) -> Result<Handle, WorkloadError> {
    m.get_ref(obj, slot).ok_or_else(|| bad_input(missing))
}

/// The bytes of `obj`'s reference slot `slot`, a byte array, into `out`.
fn read_text(
    m: &mut Mutator<'_>,
    obj: Handle,
    slot: usize,
    out: &mut Vec<u8>,
) -> Result<(), WorkloadError> {
    m.scope(|m| {
        let t = input_ref(m, obj, slot, "missing text")?;
        out.clear();
        out.extend_from_slice(m.payload(t));
        Ok(())
    })
}

/// Whether element `e` is named `NAMES[name]`.
fn named(m: &mut Mutator<'_>, e: Handle, name: usize) -> bool {
    m.scope(|m| match m.get_ref(e, E_NAME) {
        Some(n) => m.payload(n) == NAMES[name].as_bytes(),
        None => false,
    })
}

/// Transforms the input tree `input` of document `doc` into a new output tree; returns the
/// output (in the caller's scope) and its number of entries.
fn transform(
    m: &mut Mutator<'_>,
    cx: Ctx,
    input: Handle,
    doc: u64,
) -> Result<(Handle, u64), WorkloadError> {
    let mut kept = 0;
    let mut buf = Vec::new();
    let report = try_escape(m, |m| {
        if !named(m, input, CATALOG) {
            return Err(bad_input("the root is not a catalog"));
        }
        let items = input_ref(m, input, E_CHILDREN, "a catalog without items")?;
        let n = m.array_len(items);
        // Read what grouping and sorting need.
        let mut recs = Vec::with_capacity(n);
        for index in 0..n {
            m.scope(|m| {
                let item = input_ref(m, items, index, "a missing item")?;
                if !named(m, item, ITEM) {
                    return Err(bad_input("a catalog child is not an item"));
                }
                let attrs = input_ref(m, item, E_ATTRS, "an item without attributes")?;
                let mut attr = |m: &mut Mutator<'_>, i: usize, key: usize| {
                    m.scope(|m| {
                        let a = input_ref(m, attrs, i, "a missing attribute")?;
                        let k = input_ref(m, a, A_KEY, "an attribute without key")?;
                        if m.payload(k) != NAMES[key].as_bytes() {
                            return Err(bad_input(format!("attribute {i} is not {}", NAMES[key])));
                        }
                        read_text(m, a, A_VALUE, &mut buf)?;
                        Ok(buf.clone())
                    })
                };
                let id = attr(m, 0, ID)?;
                let cat = attr(m, 1, CATEGORY)?;
                let price = attr(m, 2, PRICE)?;
                let kids = input_ref(m, item, E_CHILDREN, "an item without children")?;
                let qty = input_ref(m, kids, ITEM_QTY, "an item without qty")?;
                if !named(m, qty, QTY) {
                    return Err(bad_input("an item's second child is not qty"));
                }
                read_text(m, qty, E_TEXT, &mut buf)?;
                let number = |what: &str, text: &[u8]| {
                    parse_dec(text).ok_or_else(|| {
                        bad_input(format!(
                            "{what} {:?} is not a number",
                            String::from_utf8_lossy(text)
                        ))
                    })
                };
                let qty = number("qty", &buf)?;
                let category = cat
                    .strip_prefix(b"cat-")
                    .and_then(parse_dec)
                    .filter(|&c| c < u64::from(CATEGORIES))
                    .ok_or_else(|| bad_input("a bad category"))?;
                recs.push(Rec {
                    index,
                    id: number("id", &id)?,
                    category: category as u32,
                    value: value(number("price", &price)?, qty),
                });
                Ok(())
            })?;
        }
        // Group by category, sort each group, build it.
        let mut children = Vec::new();
        let mut grand = 0u64;
        for (c, group, total) in groups(&recs, |r| (r.category, r.value, r.id)) {
            grand += total;
            kept += group.len() as u64;
            let g = try_escape(m, |m| {
                let mut entries = Vec::with_capacity(group.len());
                for r in &group {
                    entries.push(build_entry(m, cx, items, r, &mut buf)?);
                }
                let cat = byte_array(m, &category_text(c))?;
                let count = byte_array(m, &dec(group.len() as u64))?;
                let total = byte_array(m, &dec(total))?;
                elem(
                    m,
                    cx,
                    GROUP,
                    &[(CATEGORY, cat), (COUNT, count), (TOTAL, total)],
                    &entries,
                    None,
                )
            })?;
            children.push(g);
        }
        let summary = try_escape(m, |m| {
            let items = byte_array(m, &dec(kept))?;
            let skipped = byte_array(m, &dec(n as u64 - kept))?;
            let grand = byte_array(m, &dec(grand))?;
            elem(
                m,
                cx,
                SUMMARY,
                &[(ITEMS, items), (SKIPPED, skipped), (GRAND, grand)],
                &[],
                None,
            )
        })?;
        children.push(summary);
        let source = byte_array(m, &dec(doc))?;
        elem(m, cx, REPORT, &[(SOURCE, source)], &children, None)
    })?;
    Ok((report, kept))
}

/// The output `entry` of the input item `items[r.index]`.
fn build_entry(
    m: &mut Mutator<'_>,
    cx: Ctx,
    items: Handle,
    r: &Rec,
    buf: &mut Vec<u8>,
) -> Result<Handle, WorkloadError> {
    try_escape(m, |m| {
        let item = input_ref(m, items, r.index, "a missing item")?;
        let kids = input_ref(m, item, E_CHILDREN, "an item without children")?;
        // The title: the name, upper-cased.
        let name = input_ref(m, kids, ITEM_NAME, "an item without name")?;
        read_text(m, name, E_TEXT, buf)?;
        buf.make_ascii_uppercase();
        let title = text_elem(m, cx, TITLE, buf)?;
        // The labels: the tags joined with commas.
        let tags = input_ref(m, kids, ITEM_TAGS, "an item without tags")?;
        if !named(m, tags, TAGS) {
            return Err(bad_input("an item's third child is not tags"));
        }
        let mut children = vec![title];
        if let Some(list) = m.get_ref(tags, E_CHILDREN) {
            let mut joined = Vec::new();
            for i in 0..m.array_len(list) {
                m.scope(|m| {
                    let tag = input_ref(m, list, i, "a missing tag")?;
                    read_text(m, tag, E_TEXT, buf)?;
                    if i > 0 {
                        joined.push(b',');
                    }
                    joined.extend_from_slice(buf);
                    Ok::<_, WorkloadError>(())
                })?;
            }
            children.push(text_elem(m, cx, LABELS, &joined)?);
        }
        // `ref` shares the input's id text; `value` is new.
        let attrs = input_ref(m, item, E_ATTRS, "an item without attributes")?;
        let id_attr = input_ref(m, attrs, 0, "a missing attribute")?;
        let id = input_ref(m, id_attr, A_VALUE, "an attribute without value")?;
        let value = byte_array(m, &dec(r.value))?;
        elem(m, cx, ENTRY, &[(REF, id), (VALUE, value)], &children, None)
    })
}

/// Feeds the serialization of the tree at `node` into `h`.
fn hash_tree(m: &mut Mutator<'_>, node: Handle, h: &mut Fnv) -> Result<(), WorkloadError> {
    let bad = |what: &str| WorkloadError::Corrupt(format!("transform: output tree: {what}"));
    m.scope(|m| {
        let name = m
            .get_ref(node, E_NAME)
            .ok_or_else(|| bad("an unnamed element"))?;
        h.bytes(b"<");
        h.bytes(m.payload(name));
        if let Some(attrs) = m.get_ref(node, E_ATTRS) {
            let (a, k, v) = (m.null_handle(), m.null_handle(), m.null_handle());
            for i in 0..m.array_len(attrs) {
                if !(m.load_ref_into(a, attrs, i)
                    && m.load_ref_into(k, a, A_KEY)
                    && m.load_ref_into(v, a, A_VALUE))
                {
                    return Err(bad("an incomplete attribute"));
                }
                h.bytes(b" ");
                h.bytes(m.payload(k));
                h.bytes(b"=");
                h.bytes(m.payload(v));
            }
        }
        h.bytes(b">");
        if let Some(text) = m.get_ref(node, E_TEXT) {
            h.bytes(m.payload(text));
        }
        if let Some(children) = m.get_ref(node, E_CHILDREN) {
            let c = m.null_handle();
            for i in 0..m.array_len(children) {
                if !m.load_ref_into(c, children, i) {
                    return Err(bad("a missing child"));
                }
                hash_tree(m, c, h)?;
            }
        }
        h.close();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_and_numbers() {
        scaffold::assert_deterministic(doc_items);
        assert_eq!(parse_dec(b"0"), Some(0));
        assert_eq!(parse_dec(b"120034"), Some(120_034));
        assert_eq!(parse_dec(b""), None);
        assert_eq!(parse_dec(b"12a"), None);
        assert_eq!(dec(907), b"907");
        for d in 0..50 {
            let items = doc_items(d);
            assert!((16..=48).contains(&items.len()));
            assert!(items.iter().all(|it| it.category < CATEGORIES));
        }
    }

    #[test]
    fn stored_default_checksum_is_the_reference() {
        assert_eq!(
            expected_checksum(u64::from(SIZE.default()) * 1000),
            DEFAULT_EXPECTED
        );
    }

    fn heap() -> Heap {
        scaffold::test_heap(16 * MIB, false)
    }

    #[test]
    fn one_share_matches_the_reference() {
        let heap = heap();
        let mut m = heap.attach();
        let r = run_share(&mut m, 600, 0, 1, 100).unwrap();
        assert_eq!(r.checksum, expected_checksum(600));
        assert!(r.kept > 0 && r.kept < r.items);
        assert_eq!(m.handle_count(), 0);
    }

    #[test]
    fn damaged_outputs_and_inputs_are_detected() {
        let heap = heap();
        let mut m = heap.attach();
        m.scope(|m| {
            let names = m.alloc_ref_array(NAMES.len()).unwrap();
            for (i, n) in NAMES.iter().enumerate() {
                let s = byte_array(m, n.as_bytes()).unwrap();
                m.set_ref(names, i, Some(s));
            }
            let cx = Ctx { names };
            let input = build_input(m, cx, 5, &doc_items(5)).unwrap();
            let (out, _) = transform(m, cx, input, 5).unwrap();
            let mut h = Fnv::new();
            hash_tree(m, out, &mut h).unwrap();
            assert_eq!(h.finish(), reference_hash(5));
            m.write_u64(out, E_HASH, h.finish());
            assert_eq!(retire(m, out).unwrap(), mix(h.finish()));
            // Changing a shared id text changes the output.
            let items = m.get_ref(input, E_CHILDREN).unwrap();
            let kept = (0..m.array_len(items))
                .find(|&i| doc_items(5)[i].qty > 0)
                .unwrap();
            let item = m.get_ref(items, kept).unwrap();
            let attrs = m.get_ref(item, E_ATTRS).unwrap();
            let id = m.get_ref(attrs, 0).unwrap();
            let text = m.get_ref(id, A_VALUE).unwrap();
            m.payload_mut(text)[0] = b'x';
            let e = retire(m, out).unwrap_err().to_string();
            assert!(e.contains("changed while in the window"), "{e}");
            // A non-number in the input is reported.
            let e = transform(m, cx, input, 5).unwrap_err().to_string();
            assert!(e.contains("is not a number"), "{e}");
            // A missing child in the output is reported.
            let groups = m.get_ref(out, E_CHILDREN).unwrap();
            m.set_ref(groups, 0, None);
            let e = retire(m, out).unwrap_err().to_string();
            assert!(e.contains("a missing child"), "{e}");
        });
    }
}
