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

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};

use crate::data::{byte_array, splitmix_finalize as mix, Fnv, Rng};
use crate::scaffold::{self, detail, try_escape, view, Size};
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

impl Ctx {
    /// The interned name `NAMES[name]`.
    fn name<'m>(&self, m: &'m Mutator<'_>, name: usize) -> Option<Gc<'m>> {
        view(m, self.names).get(name)
    }
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
                let ring = view(m, ring);
                if let Some(old) = ring.get(slot) {
                    share.checksum = share.checksum.wrapping_add(retire_output(old)?);
                }
                m.store(ring, slot, Some(view(m, output)));
                Ok::<_, WorkloadError>(())
            })?;
            slot = (slot + 1) % window;
            d += mutators;
        }
        for s in 0..window {
            // Hashing an output takes a while: let a waiting collection in between.
            m.safepoint_poll();
            let ring = view(m, ring);
            if let Some(old) = ring.get(s) {
                share.checksum = share.checksum.wrapping_add(retire_output(old)?);
                m.store(ring, s, None);
            }
        }
        Ok(share)
    })
}

/// [`retire_output`] of a handle (for tests).
#[cfg(test)]
fn retire(m: &Mutator<'_>, output: Handle) -> Result<u64, WorkloadError> {
    retire_output(view(m, output))
}

/// Hashes an output leaving the window again and checks it against the stored hash; returns
/// its checksum contribution `mix(hash)`. Nothing is allocated, so no handles are needed.
fn retire_output(output: Gc<'_>) -> Result<u64, WorkloadError> {
    let mut h = Fnv::new();
    hash_from(output, &mut h)?;
    let stored = output.read_u64(E_HASH);
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
        let e = m.alloc_with(ELEM, &[None, None, None, text])?;
        m.store(view(m, e), E_NAME, cx.name(m, name));
        if !attrs.is_empty() {
            let arr = m.alloc_ref_array(attrs.len())?;
            m.store(view(m, e), E_ATTRS, Some(view(m, arr)));
            // At most three attributes: their handles go when this element's scope ends.
            for (i, &(key, value)) in attrs.iter().enumerate() {
                let a = m.alloc_with(ATTR, &[None, Some(value)])?;
                let a = view(m, a);
                m.store(a, A_KEY, cx.name(m, key));
                m.store(view(m, arr), i, Some(a));
            }
        }
        if !children.is_empty() {
            let arr = m.alloc_ref_array(children.len())?;
            let arr = view(m, arr);
            m.store(view(m, e), E_CHILDREN, Some(arr));
            for (i, &c) in children.iter().enumerate() {
                m.store(arr, i, m.view(c));
            }
        }
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

/// Reference slot `slot` of `obj` in the input tree; a null slot is corrupt input, which
/// `missing` describes.
fn input_ref<'m>(obj: Gc<'m>, slot: usize, missing: &str) -> Result<Gc<'m>, WorkloadError> {
    obj.get(slot).ok_or_else(|| bad_input(missing))
}

/// The bytes of `obj`'s reference slot `slot`, a byte array.
fn read_text<'m>(obj: Gc<'m>, slot: usize) -> Result<&'m [u8], WorkloadError> {
    input_ref(obj, slot, "missing text").map(Gc::payload)
}

/// Whether element `e` is named `NAMES[name]`.
fn named(e: Gc<'_>, name: usize) -> bool {
    e.get(E_NAME)
        .is_some_and(|n| n.payload() == NAMES[name].as_bytes())
}

/// Reads what grouping and sorting need from the input item `items[index]`.
fn read_rec(items: Gc<'_>, index: usize) -> Result<Rec, WorkloadError> {
    let item = input_ref(items, index, "a missing item")?;
    if !named(item, ITEM) {
        return Err(bad_input("a catalog child is not an item"));
    }
    let attrs = input_ref(item, E_ATTRS, "an item without attributes")?;
    let attr = |i: usize, key: usize| {
        let a = input_ref(attrs, i, "a missing attribute")?;
        let k = input_ref(a, A_KEY, "an attribute without key")?;
        if k.payload() != NAMES[key].as_bytes() {
            return Err(bad_input(format!("attribute {i} is not {}", NAMES[key])));
        }
        read_text(a, A_VALUE)
    };
    let id = attr(0, ID)?;
    let cat = attr(1, CATEGORY)?;
    let price = attr(2, PRICE)?;
    let kids = input_ref(item, E_CHILDREN, "an item without children")?;
    let qty = input_ref(kids, ITEM_QTY, "an item without qty")?;
    if !named(qty, QTY) {
        return Err(bad_input("an item's second child is not qty"));
    }
    let qty = read_text(qty, E_TEXT)?;
    let number = |what: &str, text: &[u8]| {
        parse_dec(text).ok_or_else(|| {
            bad_input(format!(
                "{what} {:?} is not a number",
                String::from_utf8_lossy(text)
            ))
        })
    };
    let qty = number("qty", qty)?;
    let category = cat
        .strip_prefix(b"cat-")
        .and_then(parse_dec)
        .filter(|&c| c < u64::from(CATEGORIES))
        .ok_or_else(|| bad_input("a bad category"))?;
    Ok(Rec {
        index,
        id: number("id", id)?,
        category: category as u32,
        value: value(number("price", price)?, qty),
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
        // Read what grouping and sorting need: no allocation, so no handles.
        let (items, recs) = {
            let input = view(m, input);
            if !named(input, CATALOG) {
                return Err(bad_input("the root is not a catalog"));
            }
            let items = input_ref(input, E_CHILDREN, "a catalog without items")?;
            let recs = (0..items.array_len())
                .map(|index| read_rec(items, index))
                .collect::<Result<Vec<_>, _>>()?;
            (m.root(items), recs)
        };
        let n = recs.len();
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
        // Read the texts first (no allocation, so no handles): the title, the name upper-cased,
        // and the labels, the tags joined with commas.
        let item = input_ref(view(m, items), r.index, "a missing item")?;
        let kids = input_ref(item, E_CHILDREN, "an item without children")?;
        let name = input_ref(kids, ITEM_NAME, "an item without name")?;
        buf.clear();
        buf.extend_from_slice(read_text(name, E_TEXT)?);
        buf.make_ascii_uppercase();
        let tags = input_ref(kids, ITEM_TAGS, "an item without tags")?;
        if !named(tags, TAGS) {
            return Err(bad_input("an item's third child is not tags"));
        }
        let labels = match tags.get(E_CHILDREN) {
            Some(list) => {
                let mut joined = Vec::new();
                for i in 0..list.array_len() {
                    let tag = input_ref(list, i, "a missing tag")?;
                    if i > 0 {
                        joined.push(b',');
                    }
                    joined.extend_from_slice(read_text(tag, E_TEXT)?);
                }
                Some(joined)
            }
            None => None,
        };
        let title = text_elem(m, cx, TITLE, buf)?;
        let mut children = vec![title];
        if let Some(joined) = labels {
            children.push(text_elem(m, cx, LABELS, &joined)?);
        }
        // `ref` shares the input's id text; `value` is new.
        let item = input_ref(view(m, items), r.index, "a missing item")?;
        let attrs = input_ref(item, E_ATTRS, "an item without attributes")?;
        let id_attr = input_ref(attrs, 0, "a missing attribute")?;
        let id = m.root(input_ref(id_attr, A_VALUE, "an attribute without value")?);
        let value = byte_array(m, &dec(r.value))?;
        elem(m, cx, ENTRY, &[(REF, id), (VALUE, value)], &children, None)
    })
}

/// Feeds the serialization of the tree at `node` into `h`.
fn hash_tree(m: &Mutator<'_>, node: Handle, h: &mut Fnv) -> Result<(), WorkloadError> {
    hash_from(view(m, node), h)
}

/// [`hash_tree`] below a [`Gc`]: hashing allocates nothing, so no handles are needed.
fn hash_from(node: Gc<'_>, h: &mut Fnv) -> Result<(), WorkloadError> {
    let bad = |what: &str| WorkloadError::Corrupt(format!("transform: output tree: {what}"));
    let name = node.get(E_NAME).ok_or_else(|| bad("an unnamed element"))?;
    h.bytes(b"<");
    h.bytes(name.payload());
    if let Some(attrs) = node.get(E_ATTRS) {
        for i in 0..attrs.array_len() {
            let a = attrs.get(i);
            let (Some(k), Some(v)) = (a.and_then(|a| a.get(A_KEY)), a.and_then(|a| a.get(A_VALUE)))
            else {
                return Err(bad("an incomplete attribute"));
            };
            h.bytes(b" ");
            h.bytes(k.payload());
            h.bytes(b"=");
            h.bytes(v.payload());
        }
    }
    h.bytes(b">");
    if let Some(text) = node.get(E_TEXT) {
        h.bytes(text.payload());
    }
    if let Some(children) = node.get(E_CHILDREN) {
        for i in 0..children.array_len() {
            let c = children.get(i).ok_or_else(|| bad("a missing child"))?;
            hash_from(c, h)?;
        }
    }
    h.close();
    Ok(())
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
