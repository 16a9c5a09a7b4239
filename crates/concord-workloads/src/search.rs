//! `search`: a text search engine over a synthetic corpus, standing for DaCapo `lusearch`
//! (scalable: many threads, uniform work, short-lived objects).
//!
//! Each mutator builds its own in-heap inverted index of [`DOCS`] deterministic synthetic
//! documents (about 140 words each from a Zipf-like vocabulary of [`VOCAB`] terms) once; the
//! index is long-lived. Then the mutators share a fixed number of queries (`--size` thousand,
//! [`SIZE`], default 30; query `q` runs on mutator `q % mutators`). A query:
//!
//! 1. writes its text (1 to 3 words, mixed case and punctuation, sometimes a word the corpus
//!    does not contain) into a byte array;
//! 2. tokenizes it into short-lived lower-case term byte arrays (runs of ASCII letters, at
//!    most [`MAX_TOKEN`] bytes) and looks each up in the index's hash table;
//! 3. walks every found term's posting list and scores the documents into a short-lived hash
//!    table of hit objects: a posting `(doc, tf)` of a term with document frequency `df` adds
//!    `tf_weight(tf) * idf(df)`, and a document's final score is its sum times the number of
//!    query terms it matched (Lucene's coordination factor); all integers;
//! 4. keeps the [`TOP_K`] best hits (score descending, then document ascending) in a reference
//!    array, and folds rank, document id, score and the first bytes of the stored document text
//!    into the query's hash.
//!
//! The checksum is the wrapping sum over all queries of the queries' hashes, so it does not
//! depend on how the queries are split across mutators. [`expected_checksum`] derives it with
//! an independent plain-Rust implementation (a `HashMap` index and an array accumulator) from
//! the same corpus. `run` computes it before attaching any mutator (about 8% of the run), except
//! at the default size, whose value is stored ([`DEFAULT_EXPECTED`], checked by a unit test).
//!
//! Heap objects (one index per mutator, about 5.5 MiB):
//!
//! | object | shape |
//! | --- | --- |
//! | index root | [`INDEX`]: `table`, `docs` |
//! | hash table | reference array of 4096 buckets of term chains |
//! | term | [`TERM`]: `next`, `text` (byte array), `postings` (byte array of `(doc: u32, tf: u32)`, capacity doubling); payload `hash: u64`, `df: u32`, `last_doc: u32` |
//! | stored documents | reference array of [`DOCS`] byte arrays (the document texts) |
//! | hit (per query) | [`HIT`]: `next`; payload `doc: u32`, `matched: u32`, `score: u64` |
//!
//! # Heap size
//!
//! Live data: the index, 3.7 to 5.3 MiB per mutator (the heap after a full collection, the
//! larger figures while postings arrays are still being grown), plus one query's hits (a few
//! KiB). At the default size (30 000 queries) the run allocates about 0.25 GiB. Measured
//! smallest heap that completes (optimized preset, 2 GC threads, release build, 1 MiB steps):
//! 7 MiB with one mutator (6 runs out of memory), 15 MiB with two (14 runs out of memory).
//! [`Search`]'s default heap is three times that: 21 MiB, plus 24 MiB per further mutator.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use concord::{Gc, GcError, Handle, Heap, Mutator, ObjectType};

use crate::data::{byte_array, fnv, splitmix_finalize as mix, Fields, Rng};
use crate::scaffold::{self, detail, view, Size, SizedWorkload};
use crate::{run_copies, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "search";

/// Documents in the corpus.
pub const DOCS: usize = 2000;
/// Terms in the vocabulary.
pub const VOCAB: u64 = 5000;
/// Hits a query keeps.
pub const TOP_K: usize = 10;
/// Longest token; longer runs of letters are truncated.
pub const MAX_TOKEN: usize = 32;

/// `--size`: thousands of queries, 30 by default, at most 100 million queries. The default
/// heap is three times the measured smallest heap, 7 MiB with one mutator plus 8 MiB per
/// further mutator, whatever the size (see the module documentation).
pub const SIZE: Size = Size::named("search size", 30, 1..=100_000, " (thousands of queries)")
    .measured_heap(7 * MIB, 8 * MIB);

/// [`expected_checksum`] of the default size, stored so that default runs do not spend time
/// on the reference (a unit test recomputes it).
pub const DEFAULT_EXPECTED: u64 = 16_091_567_444_110_100_759;

/// The index root: `table`, `docs`.
pub const INDEX: ObjectType = ObjectType::fixed(2, 0);
/// A term: `next`, `text`, `postings`; payload `hash: u64`, `df: u32`, `last_doc: u32`.
pub const TERM: ObjectType = ObjectType::fixed(3, 16);
/// A scored document: `next`; payload `doc: u32`, `matched: u32`, `score: u64`.
pub const HIT: ObjectType = ObjectType::fixed(1, 16);

/// Buckets of the index's hash table.
const BUCKETS: usize = 4096;
/// Buckets of a query's hit table.
const HIT_BUCKETS: usize = 256;

// Index root slots.
const TABLE: usize = 0;
const STORED: usize = 1;
// Term slots and payload offsets.
const NEXT: usize = 0;
const TEXT: usize = 1;
const POSTINGS: usize = 2;
const T_HASH: usize = 0;
const T_DF: usize = 8;
const T_LAST_DOC: usize = 12;
// Hit payload offsets (slot 0 is `next`).
const H_DOC: usize = 0;
const H_MATCHED: usize = 4;
const H_SCORE: usize = 8;
/// Bytes per posting: `doc: u32`, `tf: u32`.
const POSTING: usize = 8;
/// Bytes of a stored document folded into a hit's hash.
const SNIPPET: usize = 16;

// ---- the corpus (shared by the heap implementation and the reference) ----

/// A term, skewed towards small ids (probability about `ln(VOCAB / t) / VOCAB`).
fn term(rng: &mut Rng) -> u64 {
    let bound = 1 + rng.below(VOCAB);
    rng.below(bound)
}

/// Appends the spelling of term `t`: three letters encoding `t` in base 26, then one to five
/// more (so different terms are spelled differently).
fn spell(t: u64, out: &mut Vec<u8>) {
    let mut x = t;
    for _ in 0..3 {
        out.push(b'a' + (x % 26) as u8);
        x /= 26;
    }
    let mut r = mix(t ^ 0x7e57);
    let extra = 1 + r % 5;
    r /= 5;
    for _ in 0..extra {
        out.push(b'a' + (r % 26) as u8);
        r /= 26;
    }
}

/// Appends a separator: mostly a space, sometimes punctuation.
fn separator(rng: &mut Rng, out: &mut Vec<u8>) {
    match rng.below(16) {
        0 => out.extend_from_slice(b", "),
        1 => out.extend_from_slice(b". "),
        2 => out.extend_from_slice(b" - "),
        _ => out.push(b' '),
    }
}

/// The text of document `d`: 80 to 199 words, some capitalized.
pub fn doc_text(d: usize) -> Vec<u8> {
    let mut rng = Rng::new(0xd0c0_0000 ^ d as u64);
    let words = 80 + rng.below(120);
    let mut out = Vec::with_capacity(words as usize * 8);
    for w in 0..words {
        if w > 0 {
            separator(&mut rng, &mut out);
        }
        let start = out.len();
        spell(term(&mut rng), &mut out);
        if rng.below(8) == 0 {
            out[start] = out[start].to_ascii_uppercase();
        }
    }
    out.push(b'.');
    out
}

/// The text of query `q`: one to three words, some upper case, some not in the vocabulary
/// (spelled `zzz...`, which decodes to a term id above [`VOCAB`]).
pub fn query_text(q: u64) -> Vec<u8> {
    let mut rng = Rng::new(0x9e72_0000 ^ q);
    let words = 1 + rng.below(3);
    let mut out = Vec::with_capacity(32);
    for w in 0..words {
        if w > 0 {
            separator(&mut rng, &mut out);
        }
        let start = out.len();
        if rng.below(16) == 0 {
            out.extend_from_slice(b"zzz");
            out.push(b'a' + rng.below(26) as u8);
        } else {
            spell(term(&mut rng), &mut out);
        }
        if rng.below(4) == 0 {
            out[start..].make_ascii_uppercase();
        }
    }
    if rng.below(2) == 0 {
        out.push(b'?');
    }
    out
}

/// The tokens of `text` as `(start, len)`: runs of ASCII letters, truncated to [`MAX_TOKEN`].
fn token_spans(text: &[u8], out: &mut Vec<(usize, usize)>) {
    out.clear();
    let mut i = 0;
    while i < text.len() {
        if text[i].is_ascii_alphabetic() {
            let start = i;
            while i < text.len() && text[i].is_ascii_alphabetic() {
                i += 1;
            }
            out.push((start, (i - start).min(MAX_TOKEN)));
        } else {
            i += 1;
        }
    }
}

/// Integer square root (floor).
fn isqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r
}

/// A posting's term-frequency weight: `floor(sqrt(64 tf))`.
fn tf_weight(tf: u32) -> u64 {
    isqrt(64 * u64::from(tf))
}

/// A term's inverse document frequency weight.
fn idf(df: u32) -> u64 {
    1 + (DOCS as u64 * 100) / (u64::from(df) + 10)
}

/// A document's final score: the sum of its weights times the query terms it matched.
fn final_score(sum: u64, matched: u32) -> u64 {
    sum * u64::from(matched)
}

/// Folds one query's result into its hash: the number of documents it matched, then each
/// top hit's rank, document, score and stored-text snippet.
struct QueryHash(u64);

impl QueryHash {
    fn new(q: u64, matched_docs: u64) -> Self {
        QueryHash(mix(q ^ (matched_docs << 40)))
    }

    fn hit(&mut self, rank: usize, doc: u32, score: u64, snippet: &[u8]) {
        let s = fnv(&snippet[..snippet.len().min(SNIPPET)]);
        self.0 = mix(self.0 ^ ((rank as u64) << 56) ^ u64::from(doc)) ^ score.rotate_left(17) ^ s;
    }

    fn finish(&self) -> u64 {
        mix(self.0)
    }
}

// ---- the reference implementation (plain Rust) ----

/// Whether hit `a` ranks before hit `b`, both `(score, doc)`: higher score, then lower doc.
fn better(a: (u64, u32), b: (u64, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// The checksum of one round of `queries` queries, computed without the heap by an
/// independent implementation over the same corpus.
pub fn expected_checksum(queries: u64) -> u64 {
    let texts: Vec<Vec<u8>> = (0..DOCS).map(doc_text).collect();
    let mut index: HashMap<Vec<u8>, Vec<(u32, u32)>> = HashMap::new();
    let mut spans = Vec::new();
    for (d, text) in texts.iter().enumerate() {
        token_spans(text, &mut spans);
        for &(s, len) in &spans {
            let token = text[s..s + len].to_ascii_lowercase();
            let postings = index.entry(token).or_default();
            match postings.last_mut() {
                Some((doc, tf)) if *doc == d as u32 => *tf += 1,
                _ => postings.push((d as u32, 1)),
            }
        }
    }
    // The index is fixed from here on: weigh every posting once.
    let index: HashMap<Vec<u8>, Vec<(u32, u64)>> = index
        .into_iter()
        .map(|(term, postings)| {
            let w = idf(postings.len() as u32);
            let weighted = postings
                .into_iter()
                .map(|(doc, tf)| (doc, tf_weight(tf) * w))
                .collect();
            (term, weighted)
        })
        .collect();
    let mut acc = vec![(0u64, 0u32); DOCS];
    let mut touched = Vec::new();
    let mut sum = 0u64;
    for q in 0..queries {
        let text = query_text(q);
        token_spans(&text, &mut spans);
        for &(s, len) in &spans {
            let token = text[s..s + len].to_ascii_lowercase();
            let Some(postings) = index.get(&token) else {
                continue;
            };
            for &(doc, weight) in postings {
                let a = &mut acc[doc as usize];
                if a.1 == 0 {
                    touched.push(doc);
                }
                a.0 += weight;
                a.1 += 1;
            }
        }
        // Top K by (score descending, doc ascending).
        let mut top: Vec<(u64, u32)> = Vec::with_capacity(TOP_K + 1);
        for &doc in &touched {
            let (s, m) = acc[doc as usize];
            let key = (final_score(s, m), doc);
            if top.len() == TOP_K && !better(key, top[TOP_K - 1]) {
                continue;
            }
            let pos = top
                .iter()
                .position(|&t| better(key, t))
                .unwrap_or(top.len());
            if pos < TOP_K {
                top.insert(pos, key);
                top.truncate(TOP_K);
            }
        }
        let mut h = QueryHash::new(q, touched.len() as u64);
        for (rank, &(score, doc)) in top.iter().enumerate() {
            h.hit(rank, doc, score, &texts[doc as usize]);
        }
        sum = sum.wrapping_add(h.finish());
        for doc in touched.drain(..) {
            acc[doc as usize] = (0, 0);
        }
    }
    sum
}

// ---- the workload ----

/// The `search` workload. See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Search;

impl SizedWorkload for Search {
    const NAME: &'static str = NAME;
    const DESCRIPTION: &'static str =
        "a search engine: each mutator indexes a synthetic corpus once, then the mutators share \
         N thousand queries that tokenize, score into short-lived hits and keep the top 10 \
         (size N, default 30)";
    const SIZE: Size = SIZE;

    fn run(heap: &Heap, params: &WorkloadParams, n: u32) -> Result<WorkloadResult, WorkloadError> {
        let queries = u64::from(n) * 1000;
        let expected = SIZE.stored_or(n, DEFAULT_EXPECTED, || expected_checksum(queries));
        let mutators = params.mutators as u64;
        let matched = AtomicU64::new(0);
        let terms = AtomicU64::new(0);
        let postings = AtomicU64::new(0);
        let checksum = run_copies(heap, params, NAME, |m, copy, _round| {
            let r = run_share(m, queries, copy as u64, mutators)?;
            matched.fetch_add(r.matched_docs, Ordering::Relaxed);
            terms.store(r.terms, Ordering::Relaxed);
            postings.store(r.postings, Ordering::Relaxed);
            Ok(r.checksum)
        })?;
        let details = vec![
            detail("documents", DOCS),
            detail("terms indexed", terms.into_inner()),
            detail("postings", postings.into_inner()),
            detail("queries per round", queries),
            detail("matched documents (all queries)", matched.into_inner()),
        ];
        Ok(scaffold::result(checksum, Some(expected), params, details))
    }
}

/// What one mutator's share produced.
struct Share {
    checksum: u64,
    matched_docs: u64,
    terms: u64,
    postings: u64,
}

/// Mutator `copy` of `mutators`: builds its index, then runs queries `copy, copy + mutators,
/// ...` below `queries`.
fn run_share(
    m: &mut Mutator<'_>,
    queries: u64,
    copy: u64,
    mutators: u64,
) -> Result<Share, WorkloadError> {
    m.scope(|m| {
        let index = build_index(m)?;
        let (terms, postings) = count_index(m, index)?;
        let mut share = Share {
            checksum: 0,
            matched_docs: 0,
            terms,
            postings,
        };
        let mut spans = Vec::new();
        let mut q = copy;
        while q < queries {
            let (h, matched) = m.scope(|m| run_query(m, index, q, &mut spans))?;
            share.checksum = share.checksum.wrapping_add(h);
            share.matched_docs += matched;
            q += mutators;
        }
        Ok(share)
    })
}

/// A new lower-case token array holding `src[start..start + len]`.
fn token(m: &mut Mutator<'_>, src: Handle, start: usize, len: usize) -> Result<Handle, GcError> {
    let mut buf = [0u8; MAX_TOKEN];
    buf[..len].copy_from_slice(&m.payload(src)[start..start + len]);
    buf[..len].make_ascii_lowercase();
    byte_array(m, &buf[..len])
}

/// Builds the index (the handle belongs to the caller's scope).
fn build_index(m: &mut Mutator<'_>) -> Result<Handle, WorkloadError> {
    let index = m.alloc(INDEX)?;
    m.scope(|m| {
        let table = m.alloc_ref_array(BUCKETS)?;
        m.set_ref(index, TABLE, Some(table));
        let stored = m.alloc_ref_array(DOCS)?;
        m.set_ref(index, STORED, Some(stored));
        let mut spans = Vec::new();
        for d in 0..DOCS {
            m.scope(|m| {
                let text = byte_array(m, &doc_text(d))?;
                m.set_ref(stored, d, Some(text));
                token_spans(m.payload(text), &mut spans);
                for &(s, len) in &spans {
                    m.scope(|m| {
                        let tok = token(m, text, s, len)?;
                        let term = match find(m, table, tok) {
                            Some(t) => t,
                            None => insert(m, table, tok)?,
                        };
                        add_posting(m, term, d as u32)
                    })?;
                }
                Ok::<_, WorkloadError>(())
            })?;
        }
        Ok::<_, WorkloadError>(())
    })?;
    Ok(index)
}

/// The term spelled like the byte array `tok`, if the index has it (a handle of the caller's
/// scope).
fn find(m: &Mutator<'_>, table: Handle, tok: Handle) -> Option<Handle> {
    find_term(view(m, table), view(m, tok).payload()).map(|t| m.root(t))
}

/// The term spelled `tok` in the hash table `table`, if there is one.
fn find_term<'m>(table: Gc<'m>, tok: &[u8]) -> Option<Gc<'m>> {
    let hash = fnv(tok);
    let mut cur = table.get(hash as usize % BUCKETS);
    while let Some(t) = cur {
        if t.read_u64(T_HASH) == hash && t.get(TEXT).is_some_and(|text| text.payload() == tok) {
            return Some(t);
        }
        cur = t.get(NEXT);
    }
    None
}

/// A new term spelled `tok` (which becomes its text), at the head of its bucket.
fn insert(m: &mut Mutator<'_>, table: Handle, tok: Handle) -> Result<Handle, GcError> {
    let hash = fnv(m.payload(tok));
    let bucket = hash as usize % BUCKETS;
    let t = m.alloc_with(TERM, &[None, Some(tok)])?;
    m.write_u64(t, T_HASH, hash);
    m.write_u32(t, T_LAST_DOC, u32::MAX);
    let (table, term) = (view(m, table), view(m, t));
    m.store(term, NEXT, table.get(bucket));
    m.store(table, bucket, Some(term));
    Ok(t)
}

/// Records an occurrence of `term` in document `doc` (documents are indexed in order). The
/// postings handle it may create belongs to the caller's scope.
fn add_posting(m: &mut Mutator<'_>, term: Handle, doc: u32) -> Result<(), WorkloadError> {
    let t = view(m, term);
    let (df, last) = (t.read_u32(T_DF) as usize, t.read_u32(T_LAST_DOC));
    let postings = t.get(POSTINGS);
    let capacity = postings.map_or(0, |p| p.array_len() / POSTING);
    if last == doc {
        if postings.is_none() || df == 0 {
            return Err(WorkloadError::Corrupt(format!(
                "search: a term with last document {doc} has no postings"
            )));
        }
        let postings = m.root(postings.expect("checked above"));
        let mut list = Fields(m.payload_mut(postings));
        let tf = (df - 1) * POSTING + 4;
        list.set_u32(tf, list.u32(tf) + 1);
        return Ok(());
    }
    let mut postings = postings.map(|p| m.root(p));
    if df == capacity {
        let bigger = m.alloc_byte_array((capacity * 2).max(4) * POSTING)?;
        if let Some(old) = postings {
            let mut buf = [0u8; 256];
            let mut off = 0;
            while off < df * POSTING {
                let n = (df * POSTING - off).min(buf.len());
                buf[..n].copy_from_slice(&m.payload(old)[off..off + n]);
                m.payload_mut(bigger)[off..off + n].copy_from_slice(&buf[..n]);
                off += n;
            }
        }
        m.set_ref(term, POSTINGS, Some(bigger));
        postings = Some(bigger);
    }
    let postings = postings.ok_or_else(|| {
        WorkloadError::Corrupt(format!("search: a term with df {df} has no postings"))
    })?;
    let mut list = Fields(m.payload_mut(postings));
    list.set_u32(df * POSTING, doc);
    list.set_u32(df * POSTING + 4, 1);
    let mut t = Fields(m.payload_mut(term));
    t.set_u32(T_DF, df as u32 + 1);
    t.set_u32(T_LAST_DOC, doc);
    Ok(())
}

/// Terms and postings in the index, checking every chain and posting list on the way: terms
/// in the right bucket with the right hash, postings in increasing document order with tf at
/// least 1.
fn count_index(m: &Mutator<'_>, index: Handle) -> Result<(u64, u64), WorkloadError> {
    let index = view(m, index);
    let table = index
        .get(TABLE)
        .ok_or_else(|| WorkloadError::Corrupt("search: the index lost its table".into()))?;
    let (mut terms, mut postings) = (0u64, 0u64);
    for b in 0..BUCKETS {
        let mut cur = table.get(b);
        while let Some(term) = cur {
            let text = term
                .get(TEXT)
                .ok_or_else(|| WorkloadError::Corrupt("search: a term lost its text".into()))?
                .payload();
            let hash = fnv(text);
            if hash != term.read_u64(T_HASH) || hash as usize % BUCKETS != b {
                return Err(WorkloadError::Corrupt(format!(
                    "search: term {:?} has the wrong hash or bucket",
                    String::from_utf8_lossy(text)
                )));
            }
            let df = term.read_u32(T_DF) as usize;
            let list = match term.get(POSTINGS) {
                Some(list) if list.array_len() >= df * POSTING => list,
                _ => {
                    return Err(WorkloadError::Corrupt(format!(
                        "search: a term with df {df} lacks room for its postings"
                    )))
                }
            };
            let mut prev = None;
            for i in 0..df {
                let doc = list.read_u32(i * POSTING);
                let tf = list.read_u32(i * POSTING + 4);
                if tf == 0 || doc as usize >= DOCS || prev.is_some_and(|p| p >= doc) {
                    return Err(WorkloadError::Corrupt(format!(
                        "search: posting {i} of a term is (doc {doc}, tf {tf})"
                    )));
                }
                prev = Some(doc);
            }
            terms += 1;
            postings += df as u64;
            cur = term.get(NEXT);
        }
    }
    Ok((terms, postings))
}

/// Runs query `q` against `index`; returns its hash and the number of documents it matched.
fn run_query(
    m: &mut Mutator<'_>,
    index: Handle,
    q: u64,
    spans: &mut Vec<(usize, usize)>,
) -> Result<(u64, u64), WorkloadError> {
    let lost = || WorkloadError::Corrupt("search: the index lost a part".into());
    let table = m.get_ref(index, TABLE).ok_or_else(lost)?;
    let stored = m.get_ref(index, STORED).ok_or_else(lost)?;
    let text = byte_array(m, &query_text(q))?;
    token_spans(m.payload(text), spans);
    let hits = m.alloc_ref_array(HIT_BUCKETS)?;
    let mut matched_docs = 0u64;
    for &(s, len) in spans.iter() {
        matched_docs += m.scope(|m| {
            let tok = token(m, text, s, len)?;
            match find(m, table, tok) {
                Some(term) => score_term(m, term, hits),
                None => Ok(0),
            }
        })?;
    }
    // Keep the best TOP_K hits, best first.
    let top = m.alloc_ref_array(TOP_K)?;
    let mut n = 0usize;
    let cur = m.null_handle();
    for b in 0..HIT_BUCKETS {
        let mut more = m.load_ref_into(cur, hits, b);
        while more {
            // Replace the sum by the final score; every hit in `top` has been through here.
            let mut fields = Fields(m.payload_mut(cur));
            let score = final_score(fields.u64(H_SCORE), fields.u32(H_MATCHED));
            fields.set_u64(H_SCORE, score);
            let (top, hit) = (view(m, top), view(m, cur));
            let key = (score, hit.read_u32(H_DOC));
            let mut pos = n;
            while pos > 0 {
                let other = top.get(pos - 1).ok_or_else(|| lost_top(pos - 1))?;
                let (s, d) = (other.read_u64(H_SCORE), other.read_u32(H_DOC));
                if key.0 > s || (key.0 == s && key.1 < d) {
                    pos -= 1;
                } else {
                    break;
                }
            }
            if pos < TOP_K {
                let last = n.min(TOP_K - 1);
                for i in (pos..last).rev() {
                    m.store(top, i + 1, top.get(i));
                }
                m.store(top, pos, Some(hit));
                n = (n + 1).min(TOP_K);
            }
            let next = hit.get(NEXT);
            m.set_root(cur, next);
            more = next.is_some();
        }
    }
    let (top, stored) = (view(m, top), view(m, stored));
    let mut h = QueryHash::new(q, matched_docs);
    for rank in 0..n {
        let hit = top.get(rank).ok_or_else(|| lost_top(rank))?;
        let (doc, score) = (hit.read_u32(H_DOC), hit.read_u64(H_SCORE));
        let text = if (doc as usize) < DOCS {
            stored.get(doc as usize)
        } else {
            None
        };
        let Some(text) = text else {
            return Err(WorkloadError::Corrupt(format!(
                "search: hit for document {doc}, which is not stored"
            )));
        };
        h.hit(rank, doc, score, text.payload());
    }
    Ok((h.finish(), matched_docs))
}

/// A top hit that is missing from the top-hits array (they are filled in order).
fn lost_top(rank: usize) -> WorkloadError {
    WorkloadError::Corrupt(format!("search: top hit {rank} was lost"))
}

/// Adds the postings of `term` to the hit table (a hit's `score` holds the sum of its weights
/// until the top-k pass); returns the number of new hits.
fn score_term(m: &mut Mutator<'_>, term: Handle, hits: Handle) -> Result<u64, WorkloadError> {
    let df = m.read_u32(term, T_DF);
    let w = idf(df);
    let postings = m
        .get_ref(term, POSTINGS)
        .ok_or_else(|| WorkloadError::Corrupt("search: a found term has no postings".into()))?;
    let cur = m.null_handle();
    let mut new_hits = 0;
    for i in 0..df as usize {
        let (hit_table, list) = (view(m, hits), view(m, postings));
        let doc = list.read_u32(i * POSTING);
        let tf = list.read_u32(i * POSTING + 4);
        let bucket = mix(u64::from(doc)) as usize % HIT_BUCKETS;
        let mut found = hit_table.get(bucket);
        while let Some(hit) = found.filter(|h| h.read_u32(H_DOC) != doc) {
            found = hit.get(NEXT);
        }
        // The bucket's head when there is no hit yet: the new hit's `next`.
        m.set_root(cur, found.or(hit_table.get(bucket)));
        if found.is_none() {
            m.scope(|m| {
                let h = m.alloc_with(HIT, &[Some(cur)])?;
                m.write_u32(h, H_DOC, doc);
                m.set_ref(hits, bucket, Some(h));
                m.set_handle(cur, Some(h));
                Ok::<_, GcError>(())
            })?;
            new_hits += 1;
        }
        let mut hit = Fields(m.payload_mut(cur));
        hit.set_u64(H_SCORE, hit.u64(H_SCORE) + tf_weight(tf) * w);
        hit.set_u32(H_MATCHED, hit.u32(H_MATCHED) + 1);
    }
    Ok(new_hits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_is_deterministic_and_tokenizes() {
        scaffold::assert_deterministic(|d| doc_text(d as usize));
        scaffold::assert_deterministic(query_text);
        let mut spans = Vec::new();
        token_spans(b"Foo, bar-BAZ  q?", &mut spans);
        assert_eq!(spans, [(0, 3), (5, 3), (9, 3), (14, 1)]);
        let long = [b'a'; 40];
        token_spans(&long, &mut spans);
        assert_eq!(spans, [(0, MAX_TOKEN)]);
        // Distinct terms are spelled differently.
        let mut seen = std::collections::HashSet::new();
        for t in 0..VOCAB {
            let mut s = Vec::new();
            spell(t, &mut s);
            assert!(seen.insert(s), "term {t}");
        }
    }

    #[test]
    fn weights() {
        assert_eq!(isqrt(0), 0);
        assert_eq!(isqrt(63), 7);
        assert_eq!(isqrt(64), 8);
        assert_eq!(tf_weight(1), 8);
        assert_eq!(tf_weight(2), 11);
        assert!(idf(1) > idf(1000));
    }

    #[test]
    fn stored_default_checksum_is_the_reference() {
        assert_eq!(
            expected_checksum(u64::from(SIZE.default()) * 1000),
            DEFAULT_EXPECTED
        );
    }

    #[test]
    fn one_share_matches_the_reference() {
        let heap = scaffold::test_heap(16 * MIB, false);
        let mut m = heap.attach();
        let r = run_share(&mut m, 300, 0, 1).unwrap();
        assert_eq!(r.checksum, expected_checksum(300));
        assert!(
            r.terms > 1000 && r.postings > r.terms,
            "{} {}",
            r.terms,
            r.postings
        );
        assert_eq!(m.handle_count(), 0);
    }
}
