//! Property test: a random object graph, built through the `Mutator` API and put through random
//! collections and mutations, stays exactly the graph a model of it predicts.
//!
//! After every step the graph reachable from the roots is brought into a canonical form (BFS
//! from the roots in order, ids by first visit; per node its kind, tag, payload, array length
//! and the ids of its reference slots) both in the heap and in the model, and the two must be
//! equal. The heap verifier must pass and must count exactly the model's reachable objects and
//! bytes (a duplicated or lost object changes the count).

use std::collections::HashMap;

mod common;

use concord::{
    CollectionKind, GcConfig, GcError, GcErrorKind, Handle, Heap, Mutator, ObjectKind, ObjectType,
    Preset,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

const MIB: usize = 1 << 20;

// ---------------------------------------------------------------------------------------------
// Graph description (what proptest generates)
// ---------------------------------------------------------------------------------------------

/// A selector of one of `n` things, chosen when `n` is known (like `proptest::sample::Index`,
/// but constructible in fixed cases): a fraction of `n` in 32-bit fixed point.
#[derive(Clone, Copy, Debug)]
struct Sel(u32);

impl Sel {
    fn index(self, n: usize) -> usize {
        assert!(n > 0, "selecting from nothing");
        ((self.0 as u64 * n as u64) >> 32) as usize
    }
}

fn sel() -> impl Strategy<Value = Sel> {
    any::<u32>().prop_map(Sel)
}

/// One reference slot of a generated node.
#[derive(Clone, Debug)]
enum Edge {
    Null,
    /// Any node (resolved modulo the node count, so shrinking the node list keeps it valid).
    To(Sel),
    /// One of the first four nodes: heavy sharing.
    Hub(u8),
    /// The node itself.
    SelfLoop,
    /// The node before it (chains; with `To` edges back, cycles).
    Prev,
}

#[derive(Clone, Debug)]
enum NodeDesc {
    Fixed {
        tag: u16,
        payload: Vec<u8>,
        refs: Vec<Edge>,
    },
    RefArray {
        slots: Vec<Edge>,
    },
    ByteArray {
        bytes: Vec<u8>,
    },
    /// A fixed object whose payload makes it larger than the large-object threshold (in most
    /// configurations), so it is allocated in the old generation and its slots point to young.
    LargeFixed {
        tag: u16,
        payload_len: usize,
        fill: u8,
        refs: Vec<Edge>,
    },
    LargeBytes {
        len: usize,
        fill: u8,
    },
}

#[derive(Clone, Debug)]
struct HeapParams {
    heap_mib: usize,
    gc_threads: usize,
    max_tenuring: u32,
    large_object_threshold: usize,
}

#[derive(Clone, Debug)]
enum Op {
    Young,
    Full,
    /// Several young collections in a row: survivors age into the old generation.
    Promote(u8),
    /// Allocate a fresh (young) object, point it at existing nodes and store it into a slot of
    /// an existing node (often an old one: an old-to-young edge), optionally scavenging at once.
    StoreFresh {
        target: Sel,
        slot: Sel,
        array: bool,
        tag: u16,
        payload: Vec<u8>,
        refs: Vec<Option<Sel>>,
        collect_now: bool,
    },
    /// Rewire one slot between reachable nodes (or to null).
    SetRef {
        src: Sel,
        slot: Sel,
        dst: Option<Sel>,
    },
    /// Point a root at a reachable node (or at null).
    SetRoot {
        root: Sel,
        dst: Option<Sel>,
    },
    /// Overwrite the payload of a reachable node.
    WritePayload {
        target: Sel,
        seed: u8,
    },
    /// Allocate garbage: allocation-failure collections, and with `large` old-generation
    /// allocation failures too.
    Garbage {
        kib: u32,
        large: bool,
    },
    /// Fill the old generation up to `percent` of its capacity with live large byte arrays
    /// (outside the model's graph), so that later scavenges run out of room for promotions
    /// (promotion failure) and old allocations trigger full collections. At 100 or more: fill
    /// until allocation fails, then let a quarter of the old generation's worth go again (still
    /// occupying old until a full collection).
    Ballast {
        percent: u8,
    },
    /// Let the ballast go.
    DropBallast,
}

#[derive(Clone, Debug)]
struct Case {
    params: HeapParams,
    nodes: Vec<NodeDesc>,
    roots: Vec<Option<Sel>>,
    ops: Vec<Op>,
}

fn edge() -> impl Strategy<Value = Edge> {
    prop_oneof![
        3 => Just(Edge::Null),
        10 => sel().prop_map(Edge::To),
        2 => (0u8..4).prop_map(Edge::Hub),
        1 => Just(Edge::SelfLoop),
        2 => Just(Edge::Prev),
    ]
}

fn node() -> impl Strategy<Value = NodeDesc> {
    prop_oneof![
        12 => (any::<u16>(), prop::collection::vec(any::<u8>(), 0..=40), prop::collection::vec(edge(), 0..=6))
            .prop_map(|(tag, payload, refs)| NodeDesc::Fixed { tag, payload, refs }),
        2 => prop::collection::vec(edge(), 0..=600).prop_map(|slots| NodeDesc::RefArray { slots }),
        // Longer than two scanning chunks (512 slots): scanned in chunks.
        1 => prop::collection::vec(edge(), 513..=600).prop_map(|slots| NodeDesc::RefArray { slots }),
        2 => prop::collection::vec(any::<u8>(), 0..=100).prop_map(|bytes| NodeDesc::ByteArray { bytes }),
        1 => (any::<u16>(), 4100usize..9000, any::<u8>(), prop::collection::vec(edge(), 0..=6))
            .prop_map(|(tag, payload_len, fill, refs)| NodeDesc::LargeFixed { tag, payload_len, fill, refs }),
        1 => (4100usize..12000, any::<u8>()).prop_map(|(len, fill)| NodeDesc::LargeBytes { len, fill }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Young),
        2 => Just(Op::Full),
        3 => (1u8..=4).prop_map(Op::Promote),
        5 => (
            sel(),
            sel(),
            prop::bool::weighted(0.2),
            any::<u16>(),
            prop::collection::vec(any::<u8>(), 0..=24),
            prop::collection::vec(prop::option::weighted(0.8, sel()), 0..=4),
            any::<bool>(),
        )
            .prop_map(|(target, slot, array, tag, payload, refs, collect_now)| Op::StoreFresh {
                target,
                slot,
                array,
                tag,
                payload,
                refs,
                collect_now,
            }),
        3 => (sel(), sel(), prop::option::weighted(0.8, sel()))
            .prop_map(|(src, slot, dst)| Op::SetRef { src, slot, dst }),
        1 => (sel(), prop::option::weighted(0.8, sel()))
            .prop_map(|(root, dst)| Op::SetRoot { root, dst }),
        2 => (sel(), any::<u8>()).prop_map(|(target, seed)| Op::WritePayload { target, seed }),
        2 => (256u32..6144, any::<bool>()).prop_map(|(kib, large)| Op::Garbage { kib, large }),
        3 => (60u8..=120).prop_map(|percent| Op::Ballast { percent }),
        1 => Just(Op::DropBallast),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    let params = (
        select(vec![4usize, 6, 8]),
        select(vec![1usize, 2, 3, 8]),
        select(vec![1u32, 2, 3, 15]),
        select(vec![4096usize, 8192, 65536]),
    )
        .prop_map(
            |(heap_mib, gc_threads, max_tenuring, large_object_threshold)| HeapParams {
                heap_mib,
                gc_threads,
                max_tenuring,
                large_object_threshold,
            },
        );
    (
        params,
        prop::collection::vec(node(), 1..=300),
        prop::collection::vec(prop::option::weighted(0.9, sel()), 1..=8),
        prop::collection::vec(op(), 1..=12),
    )
        .prop_map(|(params, nodes, roots, ops)| Case {
            params,
            nodes,
            roots,
            ops,
        })
}

// ---------------------------------------------------------------------------------------------
// Model and canonical form
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug)]
struct MNode {
    kind: ObjectKind,
    tag: u16,
    payload: Vec<u8>,
    len: usize,
    refs: Vec<Option<usize>>,
}

impl MNode {
    /// Size in the heap, bytes (header word, slots, payload rounded up to words).
    fn size_bytes(&self) -> usize {
        8 + 8 * self.refs.len() + self.payload.len().div_ceil(8) * 8
    }
}

struct Model {
    nodes: Vec<MNode>,
    roots: Vec<Option<usize>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct CNode {
    kind: ObjectKind,
    tag: u16,
    payload: Vec<u8>,
    len: usize,
    refs: Vec<Option<usize>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Canon {
    roots: Vec<Option<usize>>,
    nodes: Vec<CNode>,
}

/// How the BFS first reached a node: through root `i`, or slot `s` of canonical node `p`.
#[derive(Clone, Copy, Debug)]
enum Via {
    Root(usize),
    Slot(usize, usize),
}

/// The model's canonical form plus what the driver needs to reach nodes in the heap.
struct ModelView {
    canon: Canon,
    /// Model index of each canonical id.
    order: Vec<usize>,
    /// First edge into each canonical id.
    via: Vec<Via>,
    /// Sum of the sizes of the reachable nodes.
    bytes: usize,
}

impl ModelView {
    /// A reference slot of a reachable node that has any: the node `node` picks among those
    /// (canonical id) and the slot `slot` picks in it; `None` if no reachable node has slots.
    fn pick_slot(&self, reach: usize, node: &Sel, slot: &Sel) -> Option<(usize, usize)> {
        let with_refs: Vec<usize> = (0..reach)
            .filter(|&k| !self.canon.nodes[k].refs.is_empty())
            .collect();
        if with_refs.is_empty() {
            return None;
        }
        let k = with_refs[node.index(with_refs.len())];
        Some((k, slot.index(self.canon.nodes[k].refs.len())))
    }
}

impl Model {
    fn view(&self) -> ModelView {
        let mut id_of: HashMap<usize, usize> = HashMap::new();
        let mut order = Vec::new();
        let mut via = Vec::new();
        let mut visit = |n: usize, how: Via, order: &mut Vec<usize>, via: &mut Vec<Via>| -> usize {
            *id_of.entry(n).or_insert_with(|| {
                order.push(n);
                via.push(how);
                order.len() - 1
            })
        };
        let roots: Vec<Option<usize>> = self
            .roots
            .iter()
            .enumerate()
            .map(|(i, r)| r.map(|n| visit(n, Via::Root(i), &mut order, &mut via)))
            .collect();
        let mut nodes = Vec::new();
        let mut qi = 0;
        while qi < order.len() {
            let n = &self.nodes[order[qi]];
            let refs = n
                .refs
                .iter()
                .enumerate()
                .map(|(s, r)| r.map(|t| visit(t, Via::Slot(qi, s), &mut order, &mut via)))
                .collect();
            nodes.push(CNode {
                kind: n.kind,
                tag: n.tag,
                payload: n.payload.clone(),
                len: n.len,
                refs,
            });
            qi += 1;
        }
        let bytes = order.iter().map(|&n| self.nodes[n].size_bytes()).sum();
        ModelView {
            canon: Canon { roots, nodes },
            order,
            via,
            bytes,
        }
    }
}

/// The canonical form of the heap graph reachable from `roots`. `hint` (the expected form) only
/// makes identification fast: a slot is first compared with the node the hint names, and only
/// if that fails with every node seen so far, so the result does not depend on the hint.
fn heap_canon(m: &mut Mutator<'_>, roots: &[Handle], hint: &Canon) -> Canon {
    fn identify(
        m: &mut Mutator<'_>,
        x: Handle,
        seen: &mut Vec<Handle>,
        hint: Option<usize>,
    ) -> usize {
        if let Some(k) = hint {
            if k < seen.len() && m.same_object(x, seen[k]) {
                return k;
            }
        }
        if let Some(j) = seen.iter().position(|&s| m.same_object(x, s)) {
            return j;
        }
        let h = m.dup(x);
        seen.push(h);
        seen.len() - 1
    }
    m.scope(|m| {
        let mut seen: Vec<Handle> = Vec::new();
        let mut canon_roots = Vec::new();
        for (i, &r) in roots.iter().enumerate() {
            let id = if m.is_null(r) {
                None
            } else {
                let want = hint.roots.get(i).copied().flatten();
                Some(identify(m, r, &mut seen, want))
            };
            canon_roots.push(id);
        }
        let tmp = m.null_handle();
        let mut nodes = Vec::new();
        let mut qi = 0;
        while qi < seen.len() {
            let h = seen[qi];
            let kind = m.kind(h);
            let slots = m.ref_count(h);
            let mut refs = Vec::with_capacity(slots);
            for s in 0..slots {
                if m.load_ref_into(tmp, h, s) {
                    let want = hint
                        .nodes
                        .get(qi)
                        .and_then(|c| c.refs.get(s).copied().flatten());
                    refs.push(Some(identify(m, tmp, &mut seen, want)));
                } else {
                    refs.push(None);
                }
            }
            nodes.push(CNode {
                kind,
                tag: m.tag(h),
                payload: m.payload(h).to_vec(),
                len: m.array_len(h),
                refs,
            });
            qi += 1;
        }
        Canon {
            roots: canon_roots,
            nodes,
        }
    })
}

/// A readable description of the first difference between two canonical forms.
fn diff(want: &Canon, got: &Canon) -> Option<String> {
    if want.roots != got.roots {
        return Some(format!(
            "roots differ: model {:?}, heap {:?}",
            want.roots, got.roots
        ));
    }
    for (i, (w, g)) in want.nodes.iter().zip(&got.nodes).enumerate() {
        if w != g {
            let short = |c: &CNode| {
                format!(
                    "kind {:?} tag {} len {} payload {:?}{} refs {:?}{}",
                    c.kind,
                    c.tag,
                    c.len,
                    &c.payload[..c.payload.len().min(16)],
                    if c.payload.len() > 16 { "…" } else { "" },
                    &c.refs[..c.refs.len().min(16)],
                    if c.refs.len() > 16 { "…" } else { "" },
                )
            };
            let slot = w.refs.iter().zip(&g.refs).position(|(a, b)| a != b);
            let pay = w.payload.iter().zip(&g.payload).position(|(a, b)| a != b);
            return Some(format!(
                "node {i} differs (first slot difference {slot:?}, first payload difference {pay:?}):\n  model {}\n  heap  {}",
                short(w),
                short(g)
            ));
        }
    }
    if want.nodes.len() != got.nodes.len() {
        return Some(format!(
            "model has {} reachable nodes, heap {}",
            want.nodes.len(),
            got.nodes.len()
        ));
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Driver
// ---------------------------------------------------------------------------------------------

fn resolve(e: &Edge, i: usize, n: usize) -> Option<usize> {
    match e {
        Edge::Null => None,
        Edge::To(ix) => Some(ix.index(n)),
        Edge::Hub(h) => Some(*h as usize % n),
        Edge::SelfLoop => Some(i),
        Edge::Prev => i.checked_sub(1),
    }
}

fn pattern(len: usize, fill: u8) -> Vec<u8> {
    (0..len)
        .map(|i| fill.wrapping_add((i as u8).wrapping_mul(31)) ^ (i >> 8) as u8)
        .collect()
}

fn model_of(case: &Case) -> Model {
    let n = case.nodes.len();
    let nodes = case
        .nodes
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let edges = |es: &[Edge]| es.iter().map(|e| resolve(e, i, n)).collect::<Vec<_>>();
            match d {
                NodeDesc::Fixed { tag, payload, refs } => MNode {
                    kind: ObjectKind::Fixed,
                    tag: *tag,
                    payload: payload.clone(),
                    len: 0,
                    refs: edges(refs),
                },
                NodeDesc::RefArray { slots } => MNode {
                    kind: ObjectKind::RefArray,
                    tag: 0,
                    payload: vec![],
                    len: slots.len(),
                    refs: edges(slots),
                },
                NodeDesc::ByteArray { bytes } => MNode {
                    kind: ObjectKind::ByteArray,
                    tag: 0,
                    payload: bytes.clone(),
                    len: bytes.len(),
                    refs: vec![],
                },
                NodeDesc::LargeFixed {
                    tag,
                    payload_len,
                    fill,
                    refs,
                } => MNode {
                    kind: ObjectKind::Fixed,
                    tag: *tag,
                    payload: pattern(*payload_len, *fill),
                    len: 0,
                    refs: edges(refs),
                },
                NodeDesc::LargeBytes { len, fill } => MNode {
                    kind: ObjectKind::ByteArray,
                    tag: 0,
                    payload: pattern(*len, *fill),
                    len: *len,
                    refs: vec![],
                },
            }
        })
        .collect();
    let roots = case.roots.iter().map(|r| r.map(|ix| ix.index(n))).collect();
    Model { nodes, roots }
}

fn alloc_node(m: &mut Mutator<'_>, node: &MNode) -> Handle {
    let h = match node.kind {
        ObjectKind::Fixed => {
            let ty = ObjectType::new(node.refs.len(), node.payload.len())
                .unwrap()
                .with_tag(node.tag);
            m.alloc(ty)
        }
        ObjectKind::RefArray => m.alloc_ref_array(node.len),
        ObjectKind::ByteArray => m.alloc_byte_array(node.len),
    }
    .expect("allocation of a graph node failed");
    m.payload_mut(h).copy_from_slice(&node.payload);
    h
}

/// Build the model's graph in the heap; returns the root handles.
fn build(m: &mut Mutator<'_>, model: &Model) -> Vec<Handle> {
    let roots: Vec<Handle> = model.roots.iter().map(|_| m.null_handle()).collect();
    m.scope(|m| {
        let hs: Vec<Handle> = model.nodes.iter().map(|n| alloc_node(m, n)).collect();
        for (i, n) in model.nodes.iter().enumerate() {
            for (s, r) in n.refs.iter().enumerate() {
                if let Some(t) = r {
                    m.set_ref(hs[i], s, Some(hs[*t]));
                }
            }
        }
        for (r, t) in model.roots.iter().enumerate() {
            if let Some(t) = t {
                m.set_handle(roots[r], Some(hs[*t]));
            }
        }
    });
    roots
}

/// A new handle to canonical node `k`, found by following the path the BFS took to it.
fn navigate(m: &mut Mutator<'_>, roots: &[Handle], via: &[Via], k: usize) -> Handle {
    let mut path = Vec::new();
    let mut cur = k;
    let root = loop {
        match via[cur] {
            Via::Root(i) => break i,
            Via::Slot(p, s) => {
                path.push(s);
                cur = p;
            }
        }
    };
    let h = m.dup(roots[root]);
    for &s in path.iter().rev() {
        assert!(
            m.load_ref_into(h, h, s),
            "navigation to node {k} met a null slot"
        );
    }
    h
}

/// Allocate about `kib` KiB of garbage (with `large`, also large objects, which go to the old
/// generation). Only out-of-memory errors are returned.
fn allocate_garbage(
    m: &mut Mutator<'_>,
    kib: u32,
    large: bool,
    threshold: usize,
) -> Result<(), GcError> {
    const LINK: ObjectType = ObjectType::fixed(2, 16);
    let total = kib as usize * 1024;
    // Scoped: the chain handle goes away even when an allocation fails.
    m.scope(|m| {
        let chain = m.null_handle();
        let mut done = 0usize;
        let mut i = 0u64;
        while done < total {
            m.scope(|m| -> Result<(), GcError> {
                for _ in 0..64 {
                    i += 1;
                    let h = if large && i.is_multiple_of(29) {
                        done += threshold + 512;
                        m.alloc_byte_array(threshold + 500)?
                    } else if i.is_multiple_of(13) {
                        let len = (i as usize * 37) % 1500;
                        done += len + 8;
                        m.alloc_byte_array(len)?
                    } else {
                        done += LINK.size_bytes();
                        let n = m.alloc(LINK)?;
                        m.write_u64(n, 0, i);
                        n
                    };
                    // Keep a short-lived chain so some garbage survives a scavenge or two.
                    if m.kind(h) == ObjectKind::Fixed {
                        m.set_ref(h, 0, Some(chain));
                        m.set_handle(chain, Some(h));
                    }
                    if i.is_multiple_of(2000) {
                        m.set_handle(chain, None);
                    }
                }
                Ok(())
            })?;
        }
        Ok(())
    })
}

struct Runner<'h, 'm> {
    m: &'m mut Mutator<'h>,
    roots: Vec<Handle>,
    model: Model,
    threshold: usize,
    /// A ref array of large byte arrays (or null), and how many objects and bytes it keeps.
    ballast: Handle,
    ballast_objects: usize,
    ballast_bytes: usize,
    old_capacity: usize,
}

const BALLAST_SLOTS: usize = 128;

impl Runner<'_, '_> {
    fn check(&mut self, step: &str) -> Result<(), TestCaseError> {
        let view = self.model.view();
        let got = heap_canon(self.m, &self.roots, &view.canon);
        if let Some(d) = diff(&view.canon, &got) {
            return Err(TestCaseError::fail(format!(
                "after {step}: heap graph differs from the model: {d}"
            )));
        }
        let report = self
            .m
            .verify_heap()
            .map_err(|e| TestCaseError::fail(format!("after {step}: {e}")))?;
        prop_assert_eq!(
            report.reachable_objects,
            view.canon.nodes.len() + self.ballast_objects,
            "after {}: reachable objects",
            step
        );
        prop_assert_eq!(
            report.reachable_bytes,
            view.bytes + self.ballast_bytes,
            "after {}: reachable bytes",
            step
        );
        Ok(())
    }

    fn apply(&mut self, op: &Op) {
        let view = self.model.view();
        let reach = view.order.len();
        let m = &mut *self.m;
        match op {
            Op::Young => m.collect(CollectionKind::Young),
            Op::Full => {
                m.collect(CollectionKind::Full);
            }
            Op::Promote(k) => {
                for _ in 0..*k {
                    m.collect(CollectionKind::Young);
                }
            }
            Op::StoreFresh {
                target,
                slot,
                array,
                tag,
                payload,
                refs,
                collect_now,
            } => {
                let Some((t, s)) = view.pick_slot(reach, target, slot) else {
                    return;
                };
                let fresh_refs: Vec<Option<usize>> = refs
                    .iter()
                    .map(|r| r.and_then(|ix| (reach > 0).then(|| ix.index(reach))))
                    .collect();
                let model_refs = fresh_refs
                    .iter()
                    .map(|r| r.map(|k| view.order[k]))
                    .collect();
                let fresh = if *array {
                    MNode {
                        kind: ObjectKind::RefArray,
                        tag: 0,
                        payload: vec![],
                        len: fresh_refs.len(),
                        refs: model_refs,
                    }
                } else {
                    MNode {
                        kind: ObjectKind::Fixed,
                        tag: *tag,
                        payload: payload.clone(),
                        len: 0,
                        refs: model_refs,
                    }
                };
                let roots = &self.roots;
                m.scope(|m| {
                    let f = alloc_node(m, &fresh);
                    for (i, r) in fresh_refs.iter().enumerate() {
                        if let Some(k) = r {
                            let h = navigate(m, roots, &view.via, *k);
                            m.set_ref(f, i, Some(h));
                        }
                    }
                    let th = navigate(m, roots, &view.via, t);
                    m.set_ref(th, s, Some(f));
                });
                let new_index = self.model.nodes.len();
                self.model.nodes.push(fresh);
                self.model.nodes[view.order[t]].refs[s] = Some(new_index);
                if *collect_now {
                    m.collect(CollectionKind::Young);
                }
            }
            Op::SetRef { src, slot, dst } => {
                let Some((src, s)) = view.pick_slot(reach, src, slot) else {
                    return;
                };
                let dst = dst.map(|ix| ix.index(reach));
                let roots = &self.roots;
                m.scope(|m| {
                    let d = dst.map(|k| navigate(m, roots, &view.via, k));
                    let h = navigate(m, roots, &view.via, src);
                    m.set_ref(h, s, d);
                });
                self.model.nodes[view.order[src]].refs[s] = dst.map(|k| view.order[k]);
            }
            Op::SetRoot { root, dst } => {
                let r = root.index(self.roots.len());
                let dst = if reach == 0 {
                    None
                } else {
                    dst.map(|ix| ix.index(reach))
                };
                let roots = &self.roots;
                m.scope(|m| {
                    let d = dst.map(|k| navigate(m, roots, &view.via, k));
                    m.set_handle(roots[r], d);
                });
                self.model.roots[r] = dst.map(|k| view.order[k]);
            }
            Op::WritePayload { target, seed } => {
                let ts: Vec<usize> = (0..reach)
                    .filter(|&k| !view.canon.nodes[k].payload.is_empty())
                    .collect();
                if ts.is_empty() {
                    return;
                }
                let t = ts[target.index(ts.len())];
                let bytes = pattern(view.canon.nodes[t].payload.len(), *seed);
                let roots = &self.roots;
                m.scope(|m| {
                    let h = navigate(m, roots, &view.via, t);
                    m.payload_mut(h).copy_from_slice(&bytes);
                });
                self.model.nodes[view.order[t]].payload = bytes;
            }
            Op::Garbage { kib, large } => {
                if let Err(e) = allocate_garbage(m, *kib, *large, self.threshold) {
                    // With the ballast, the heap may really be too full for a large object;
                    // without it, the graph is far smaller than the heap.
                    assert!(
                        self.ballast_objects > 0,
                        "garbage allocation failed without ballast: {e}"
                    );
                    m.set_handle(self.ballast, None);
                    self.ballast_objects = 0;
                    self.ballast_bytes = 0;
                    allocate_garbage(m, *kib, *large, self.threshold).unwrap_or_else(|e| {
                        panic!("garbage allocation failed after dropping the ballast: {e}")
                    });
                }
            }
            Op::Ballast { percent } => {
                let until_full = *percent >= 100;
                let target = self.old_capacity / 100 * *percent as usize;
                // At least the threshold: allocated directly in the old generation.
                let chunk = self.threshold.max(64 * 1024);
                let ballast = self.ballast;
                if m.is_null(ballast) {
                    m.scope(|m| {
                        let a = m.alloc_ref_array(BALLAST_SLOTS).unwrap();
                        m.set_handle(ballast, Some(a));
                    });
                    self.ballast_objects = 1;
                    self.ballast_bytes = 8 + 8 * BALLAST_SLOTS;
                }
                for i in 0..BALLAST_SLOTS {
                    if !until_full && m.heap_used() >= target {
                        break;
                    }
                    if m.scope(|m| m.get_ref(ballast, i).is_some()) {
                        continue;
                    }
                    let r = m.scope(|m| -> Result<(), GcError> {
                        let b = m.alloc_byte_array(chunk - 8)?;
                        m.set_ref(ballast, i, Some(b));
                        Ok(())
                    });
                    match r {
                        Ok(()) => {
                            self.ballast_objects += 1;
                            self.ballast_bytes += chunk;
                        }
                        // The graph and the ballast may not fit together: stop filling.
                        Err(e) if matches!(e.kind(), GcErrorKind::OutOfMemory { .. }) => break,
                        Err(e) => panic!("ballast allocation: {e}"),
                    }
                }
                if until_full {
                    // Room for the graph to grow; the freed chunks stay in old until a full
                    // collection, so the next scavenge still finds old full.
                    let mut freed = 0;
                    for i in 0..BALLAST_SLOTS {
                        if freed >= self.old_capacity / 4 {
                            break;
                        }
                        if m.scope(|m| m.get_ref(ballast, i).is_some()) {
                            m.set_ref(ballast, i, None);
                            freed += chunk;
                            self.ballast_objects -= 1;
                            self.ballast_bytes -= chunk;
                        }
                    }
                }
            }
            Op::DropBallast => {
                m.set_handle(self.ballast, None);
                self.ballast_objects = 0;
                self.ballast_bytes = 0;
            }
        }
    }
}

fn run_case(case: &Case) -> Result<(), TestCaseError> {
    let p = &case.params;
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.heap_size = p.heap_mib * MIB;
    config.gc_threads = p.gc_threads;
    config.max_tenuring_threshold = p.max_tenuring;
    config.initial_tenuring_threshold = p.max_tenuring.min(7);
    config.large_object_threshold = p.large_object_threshold;
    config.verify = true;
    let config_old = config.generation_sizes().old;
    let heap = Heap::new(config).expect("valid configuration");
    {
        let mut m = heap.attach();
        let model = model_of(case);
        let roots = build(&mut m, &model);
        let ballast = m.null_handle();
        let mut r = Runner {
            m: &mut m,
            roots,
            model,
            threshold: p.large_object_threshold,
            ballast,
            ballast_objects: 0,
            ballast_bytes: 0,
            old_capacity: config_old,
        };
        r.check("building the graph")?;
        for (i, op) in case.ops.iter().enumerate() {
            r.apply(op);
            r.check(&format!("op {i} ({op:?})"))?;
        }
        m.collect(CollectionKind::Full);
    }
    let stats = heap.stats();
    // `GRAPH_DEBUG=1 cargo test --test graph_proptest -- --nocapture`: what each case exercised.
    if std::env::var_os("GRAPH_DEBUG").is_some() {
        use std::collections::BTreeMap;
        let mut causes: BTreeMap<String, usize> = BTreeMap::new();
        for r in &stats.records {
            *causes
                .entry(format!("{:?}/{:?}", r.kind, r.cause))
                .or_default() += 1;
        }
        eprintln!(
            "nodes {} ops {} promoted {} promotion failures {} {:?}",
            case.nodes.len(),
            case.ops.len(),
            stats.bytes_promoted(),
            stats.records.iter().filter(|r| r.promotion_failed).count(),
            causes
        );
    }
    prop_assert!(
        stats.verify_failures.is_empty(),
        "verifier failures: {:?}",
        stats.verify_failures
    );
    prop_assert!(stats.count(CollectionKind::Full) >= 1);
    prop_assert_eq!(stats.verified(), Some(true));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        // `GRAPH_CASES=1000` for a soak run.
        cases: std::env::var("GRAPH_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(48),
        max_shrink_iters: 400,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_graphs_survive_collections_and_mutations(case in case()) {
        run_case(&case)?;
    }
}

/// A fixed case that always exercises the interesting paths, independent of the random ones:
/// a large old object pointing at young ones, arrays scanned in chunks, promotion with a
/// tenuring threshold of 1, old-to-young stores and allocation-failure collections.
#[test]
fn fixed_case_exercises_every_operation() {
    let ix = |n: usize| Sel((n as u64 * (u32::MAX as u64 / 1000)) as u32);
    let mut nodes = Vec::new();
    for i in 0..200usize {
        nodes.push(match i % 7 {
            0 => NodeDesc::RefArray {
                slots: (0..600).map(|j| Edge::To(ix(j * 7 % 1000))).collect(),
            },
            1 => NodeDesc::LargeFixed {
                tag: 7,
                payload_len: 5000,
                fill: i as u8,
                refs: vec![Edge::Prev, Edge::SelfLoop, Edge::Hub(1)],
            },
            2 => NodeDesc::ByteArray {
                bytes: (0..i as u8).collect(),
            },
            3 => NodeDesc::LargeBytes { len: 6000, fill: 3 },
            _ => NodeDesc::Fixed {
                tag: i as u16,
                payload: vec![i as u8; i % 40],
                refs: vec![Edge::Prev, Edge::Hub(0), Edge::To(ix(i * 13 % 1000))],
            },
        });
    }
    let store = |t: usize| Op::StoreFresh {
        target: ix(t),
        slot: ix(t * 3 % 1000),
        array: t.is_multiple_of(2),
        tag: 9,
        payload: vec![1, 2, 3],
        refs: vec![Some(ix(5)), None, Some(ix(900))],
        collect_now: t.is_multiple_of(3),
    };
    let ops = vec![
        Op::Promote(3),
        store(100),
        Op::Young,
        store(500),
        store(999),
        Op::Garbage {
            kib: 4096,
            large: true,
        },
        Op::SetRef {
            src: ix(10),
            slot: ix(20),
            dst: None,
        },
        Op::SetRoot {
            root: ix(0),
            dst: Some(ix(400)),
        },
        Op::WritePayload {
            target: ix(300),
            seed: 77,
        },
        Op::Full,
        store(700),
        Op::Young,
        Op::Ballast { percent: 120 },
        store(800),
        Op::Promote(2),
        Op::Garbage {
            kib: 2048,
            large: true,
        },
        Op::Ballast { percent: 80 },
        Op::DropBallast,
        Op::Full,
    ];
    for (gc_threads, max_tenuring, threshold) in [(1, 1, 4096), (3, 2, 8192), (8, 15, 65536)] {
        let case = Case {
            params: HeapParams {
                heap_mib: 6,
                gc_threads,
                max_tenuring,
                large_object_threshold: threshold,
            },
            nodes: nodes.clone(),
            roots: vec![Some(ix(0)), Some(ix(500)), None, Some(ix(999))],
            ops: ops.clone(),
        };
        run_case(&case).unwrap();
    }
}

/// Runs `body` in a child process (this test binary, filtered to `name`), so that a collector
/// abort (a panic on a GC thread aborts the process) fails this one test instead of killing
/// the whole test binary.
fn run_isolated(name: &str, body: fn()) {
    const VAR: &str = "CONCORD_TEST_ISOLATED";
    if std::env::var(VAR).as_deref() == Ok(name) {
        body();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            name,
            "--exact",
            "--include-ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(VAR, name)
        .output()
        .expect("could not run the test binary");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let tail: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.is_empty() && !common::is_backtrace_line(l))
        .take(12)
        .collect();
    assert!(
        out.status.success(),
        "{name} failed in a child process ({}):\n{}",
        out.status,
        tail.join("\n")
    );
}

/// Regression test (found by `random_graphs_survive_collections_and_mutations`, minimised).
/// With `max_tenuring_threshold = 0` every young survivor is promoted; the old generation is
/// full, so promoting the 513-slot array fails and the scavenger forwards it to itself. The
/// array is longer than 2 × 256 slots, so its tail was scanned as an `ArrayChunk` item, which
/// re-read the array's header — by then the self-forwarding pointer `addr | 0b11` — and took a
/// garbage length from it. It then scanned words past the array, took the leaf's
/// self-forwarding header for a pointer into eden and panicked on a GC thread ("misaligned
/// pointer dereference"), aborting the process (without debug assertions: wrong slots updated
/// or a segfault). 512 slots (no `ArrayChunk` item) were fine. Runs in a child process so that
/// an abort fails only this test.
#[test]
fn promotion_failure_with_chunked_ref_array() {
    run_isolated("promotion_failure_with_chunked_ref_array", || {
        const LEAF: ObjectType = ObjectType::fixed(0, 8);
        let mut c = GcConfig::for_preset(Preset::Optimized);
        c.heap_size = 4 * MIB;
        c.gc_threads = 1;
        c.max_tenuring_threshold = 0;
        c.initial_tenuring_threshold = 0;
        c.verify = true;
        let old = c.generation_sizes().old;
        let heap = Heap::new(c).unwrap();
        let mut m = heap.attach();
        // Fill the old generation completely with live 64 KiB byte arrays (large objects).
        for _ in 0..old / 65536 {
            m.alloc_byte_array(65536 - 8).unwrap();
        }
        let array = m.alloc_ref_array(513).unwrap();
        let leaf = m.alloc(LEAF).unwrap();
        m.write_u64(leaf, 0, 42);
        for s in 0..513 {
            m.set_ref(array, s, Some(leaf));
        }
        m.collect(CollectionKind::Young); // promotion fails
        for s in 0..513 {
            let l = m.get_ref(array, s).unwrap();
            assert!(m.same_object(l, leaf));
        }
        assert_eq!(m.read_u64(leaf, 0), 42);
        m.verify_heap().unwrap();
        drop(m);
        let stats = heap.stats();
        assert!(
            stats.records.iter().any(|r| r.promotion_failed),
            "the scavenge was meant to fail promotion"
        );
        assert_eq!(stats.verified(), Some(true));
    });
}
