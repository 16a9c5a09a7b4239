//! Every combination of the parallel-phase switches keeps the heap correct.
//!
//! For each combination of `task_queue` × `task_affinity` × `steal` × `termination` × `parking`
//! (3 × 2 × 3 × 3 × 2 = 108), plus a few with `dynamic_gc_threads` and/or `pin_start`, every
//! preset exactly as it is, and every termination protocol under every `termination_backoff`, a small
//! heap (8 MiB, 3 GC threads: the 2-CPU test machine is oversubscribed, verification after every
//! collection) runs two mutator threads at once. Each mutator owns a random object graph (fixed
//! nodes with three edges and an optional byte-array blob, hung from a 600-slot table and from a
//! large 10 000-slot array that is allocated directly in the old generation) and a model of it,
//! and keeps mutating the graph: fresh (young) nodes stored into old nodes through the write
//! barrier, edges rewired, subgraphs dropped, payloads rewritten — while allocating garbage that
//! triggers allocation-failure scavenges, and asking for young and full collections now and then.
//!
//! The reachable graph is checksummed in the heap (nodes by their id: id, payload, child ids,
//! blob contents; a node reached twice must be the same object) before and after every explicit
//! collection, and both checksums must equal the model's; every walk through the graph checks the
//! nodes it passes against the model too. At the end the heap verifier must count exactly the
//! objects and bytes the models say are reachable, every collection must have verified, both
//! kinds of collection must have run (allocation-failure scavenges among them), and the verifier
//! must have seen old-to-young references on dirty cards.
//!
//! Every combination gets its own deterministic seed (derived from its name), and every assertion
//! message names the combination and the seed. Each test runs its combinations in a child
//! process (a panic on a GC thread aborts the process), which prints a line per combination, so
//! an abort or a hang is reported with the combination it happened under.
//!
//! Reproduce a combination with, e.g.:
//!
//! ```text
//! SWITCH_MATRIX_FILTER='task_queue=claim task_affinity=true steal=adaptive termination=owst parking=monitor' \
//!     cargo test -p concord --test switch_matrix -- --nocapture
//! ```
//!
//! `SWITCH_MATRIX_FILTER` holds `key=value` words that a combination's name must all contain;
//! `SWITCH_MATRIX_REPEAT=n` runs each selected combination `n` times with different seeds, and
//! `SWITCH_MATRIX_SEED=s` changes the base seed (both for hunting rare failures).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};
use std::time::{Duration, Instant};

mod common;

use concord::os::numa::NumaLayout;
use concord::parallel::{
    ParkingKind, PhasePolicy, StealPolicy, TaskQueueKind, TerminationBackoff, TerminationKind,
};
use concord::{CollectionKind, GcConfig, Handle, Heap, Mutator, ObjectKind, ObjectType, Preset};

const MIB: usize = 1 << 20;
const HEAP_SIZE: usize = 8 * MIB;
const GC_THREADS: usize = 3;
const MUTATORS: usize = 2;

/// Graph node: slots 0..EDGES are edges to other nodes, slot `BLOB` an optional byte array;
/// payload: id, value, `check_word(id, value)`.
const NODE: ObjectType = ObjectType::fixed(4, 24).with_tag(0x5a71);
const EDGES: usize = 3;
const BLOB: usize = 3;
const NODE_BYTES: usize = 8 + 4 * 8 + 24;
/// Short-lived garbage: slot 0 next, payload one word.
const JUNK: ObjectType = ObjectType::fixed(1, 8).with_tag(0x0bad);

/// Root table: longer than two 256-slot scanning chunks.
const TABLE: usize = 600;
/// Second root array: 80 KB, above the 64 KiB large-object threshold, so it is allocated in the
/// old generation at once and every store of a young node into it is an old-to-young edge.
const BIG: usize = 10_000;

/// Initial graph size per mutator (nodes).
const INITIAL_NODES: usize = 400;
/// Rounds per mutator; each ends with a checksummed explicit collection.
const ROUNDS: usize = 6;
/// Graph mutations per round.
const OPS: usize = 200;
/// Garbage allocated per round and mutator, bytes (eden is about 2 MiB).
const GARBAGE_PER_ROUND: usize = 5 * MIB;
/// A combination that takes longer than this is reported as a hang.
const COMBINATION_LIMIT: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Combinations
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
struct Combo {
    /// The preset the other switches override (`optimized` outside the preset combinations).
    preset: Preset,
    task_queue: TaskQueueKind,
    task_affinity: bool,
    steal: StealPolicy,
    termination: TerminationKind,
    termination_backoff: TerminationBackoff,
    parking: ParkingKind,
    dynamic_gc_threads: bool,
    pin_start: bool,
    /// NUMA layout (004 §3.2), `off` outside the NUMA combinations.
    numa: NumaLayout,
    /// NUMA topology spec: `auto` (this machine's one node) or synthetic (`0/1`).
    numa_topology: &'static str,
}

impl fmt::Display for Combo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "preset={} task_queue={} task_affinity={} steal={} termination={} \
             termination_backoff={} parking={} dynamic_gc_threads={} pin_start={} numa={} \
             numa_topology={}",
            self.preset,
            self.task_queue,
            self.task_affinity,
            self.steal,
            self.termination,
            self.termination_backoff,
            self.parking,
            self.dynamic_gc_threads,
            self.pin_start,
            self.numa,
            self.numa_topology
        )
    }
}

impl Combo {
    fn config(&self) -> GcConfig {
        let mut c = GcConfig::for_preset(self.preset);
        c.heap_size = HEAP_SIZE;
        c.gc_threads = GC_THREADS;
        c.verify = true;
        // Age quickly so that scavenges promote as well as copy to survivor space.
        c.max_tenuring_threshold = 4;
        c.initial_tenuring_threshold = 2;
        c.phase.task_queue = self.task_queue;
        c.phase.task_affinity = self.task_affinity;
        c.phase.steal = self.steal;
        c.phase.termination = self.termination;
        c.phase.termination_backoff = self.termination_backoff;
        c.parking = self.parking;
        c.dynamic_gc_threads = self.dynamic_gc_threads;
        c.pin_start = self.pin_start;
        c.numa = self.numa;
        c.numa_topology = self.numa_topology.parse().expect("a valid topology spec");
        c
    }
}

/// The 108 combinations of the five parallel-phase switches (fixed GC thread count, no pinning).
fn full_matrix() -> Vec<Combo> {
    PhasePolicy::all()
        .flat_map(|p| {
            ParkingKind::ALL.iter().map(move |&parking| Combo {
                preset: Preset::Optimized,
                task_queue: p.task_queue,
                task_affinity: p.task_affinity,
                steal: p.steal,
                termination: p.termination,
                termination_backoff: p.termination_backoff,
                parking,
                dynamic_gc_threads: false,
                pin_start: false,
                numa: NumaLayout::Off,
                numa_topology: "auto",
            })
        })
        .collect()
}

/// Per task queue: one combination with dynamic GC threads, one with pinned start, one with
/// both; the other switches rotate so that every value of each occurs.
fn extra_combos() -> Vec<Combo> {
    let mut v = Vec::new();
    let mut k = 0usize;
    for &task_queue in TaskQueueKind::ALL {
        for (dynamic_gc_threads, pin_start) in [(true, false), (false, true), (true, true)] {
            v.push(Combo {
                preset: Preset::Optimized,
                task_queue,
                task_affinity: k % 2 == 1,
                steal: StealPolicy::ALL[k % StealPolicy::ALL.len()],
                termination: TerminationKind::ALL[(k / 3 + k) % TerminationKind::ALL.len()],
                termination_backoff: TerminationBackoff::Auto,
                parking: ParkingKind::ALL[(k / 2) % ParkingKind::ALL.len()],
                dynamic_gc_threads,
                pin_start,
                numa: NumaLayout::Off,
                numa_topology: "auto",
            });
            k += 1;
        }
    }
    v
}

/// The NUMA combinations: every layout × topology `auto` (this machine's one node) and
/// synthetic `0/1`, under the optimized and the vanilla parallel phase; `segregated` also under
/// the modern one (OWST termination, last-victim stealing) and with dynamic GC threads.
fn numa_combos() -> Vec<Combo> {
    let mut v = Vec::new();
    for &numa in NumaLayout::ALL {
        let mut policies = vec![
            (PhasePolicy::OPTIMIZED, false),
            (PhasePolicy::VANILLA, false),
        ];
        if numa == NumaLayout::Segregated {
            policies.push((PhasePolicy::MODERN, false));
            policies.push((PhasePolicy::OPTIMIZED, true));
        }
        for &(policy, dynamic_gc_threads) in &policies {
            for numa_topology in ["auto", "0/1"] {
                v.push(Combo {
                    preset: Preset::Optimized,
                    task_queue: policy.task_queue,
                    task_affinity: policy.task_affinity,
                    steal: policy.steal,
                    termination: policy.termination,
                    termination_backoff: policy.termination_backoff,
                    parking: if policy == PhasePolicy::VANILLA {
                        ParkingKind::Monitor
                    } else {
                        ParkingKind::Futex
                    },
                    dynamic_gc_threads,
                    pin_start: false,
                    numa,
                    numa_topology,
                });
            }
        }
    }
    v
}

/// Every preset exactly as it is (its NUMA layout on this machine's nodes included), then every
/// termination protocol under every waiting loop, the task queues and parking modes rotating.
fn preset_and_backoff_combos() -> Vec<Combo> {
    let mut v: Vec<Combo> = Preset::ALL
        .iter()
        .map(|&preset| {
            let c = GcConfig::for_preset(preset);
            Combo {
                preset,
                task_queue: c.phase.task_queue,
                task_affinity: c.phase.task_affinity,
                steal: c.phase.steal,
                termination: c.phase.termination,
                termination_backoff: c.phase.termination_backoff,
                parking: c.parking,
                dynamic_gc_threads: c.dynamic_gc_threads,
                pin_start: c.pin_start,
                numa: c.numa,
                numa_topology: "auto",
            }
        })
        .collect();
    let mut k = 0usize;
    for &termination_backoff in TerminationBackoff::ALL {
        for &termination in TerminationKind::ALL {
            v.push(Combo {
                preset: Preset::Vanilla,
                task_queue: TaskQueueKind::ALL[k % TaskQueueKind::ALL.len()],
                task_affinity: k.is_multiple_of(2),
                steal: StealPolicy::ALL[(k / 3) % StealPolicy::ALL.len()],
                termination,
                termination_backoff,
                parking: ParkingKind::ALL[k % ParkingKind::ALL.len()],
                dynamic_gc_threads: false,
                pin_start: false,
                numa: NumaLayout::Off,
                numa_topology: "auto",
            });
            k += 1;
        }
    }
    v
}

/// The NUMA figures of a run are consistent with its layout and topology: every collection's
/// local plus remote copies are its copied bytes; one node means nothing is remote; synthetic
/// interleaving puts some but not all copies on the other node; synthetic `off` puts all memory
/// on node 0, so a worker's copies are all remote exactly when it counted itself on node 1;
/// interleaved and segregated workers are pinned to their node's CPU. Segregated: no young
/// collection scans a remote object, two nodes exchange messages, full collections send none;
/// every message sent is received.
fn check_numa(ctx: &str, combo: &Combo, stats: &concord::GcStats) {
    let report = stats
        .numa
        .as_ref()
        .expect("the heap reports its NUMA state");
    assert_eq!(report.layout, combo.numa, "{ctx}");
    let synthetic = combo.numa_topology != "auto";
    let copied: u64 = stats.records.iter().map(|r| r.bytes_copied as u64).sum();
    assert!(copied > 0, "{ctx}: nothing was copied");
    if !synthetic && combo.numa == NumaLayout::Off {
        assert!(
            !report.accounting,
            "{ctx}: one node, no layout: nothing counted"
        );
        assert!(stats.records.iter().all(|r| r.numa.is_none()), "{ctx}");
        assert_eq!(stats.remote_copy_fraction(), 0.0, "{ctx}");
        return;
    }
    for r in &stats.records {
        let n = r
            .numa
            .unwrap_or_else(|| panic!("{ctx}: collection {} has no NUMA figures", r.id));
        assert_eq!(
            n.bytes_copied_local + n.bytes_copied_remote,
            r.bytes_copied as u64,
            "{ctx}: collection {} ({:?})",
            r.id,
            r.kind
        );
        if combo.numa.fragments_young() && r.kind == CollectionKind::Young {
            // Survivor copies go to the to-space fragment of the copying worker's node: only
            // promotions (to the interleaved old generation) can be remote.
            assert!(
                n.bytes_copied_remote <= r.bytes_promoted as u64,
                "{ctx}: collection {}: {} remote bytes, {} promoted",
                r.id,
                n.bytes_copied_remote,
                r.bytes_promoted
            );
        }
        let sent: u64 = r.workers.iter().map(|w| w.messages_sent).sum();
        let received: u64 = r.workers.iter().map(|w| w.messages_received).sum();
        assert_eq!(n.messages, sent, "{ctx}: collection {}", r.id);
        assert_eq!(sent, received, "{ctx}: collection {}", r.id);
        match (combo.numa, r.kind) {
            (NumaLayout::Segregated, CollectionKind::Young) => assert_eq!(
                n.objects_scanned_remote, 0,
                "{ctx}: collection {}: a segregated young collection scanned remote objects",
                r.id
            ),
            _ => assert_eq!(n.messages, 0, "{ctx}: collection {} ({:?})", r.id, r.kind),
        }
        if combo.numa == NumaLayout::Off {
            for w in &r.workers {
                let (local, remote) = (w.numa.bytes_copied_local, w.numa.bytes_copied_remote);
                if w.numa.node == 0 {
                    assert_eq!(remote, 0, "{ctx}: collection {} worker {}", r.id, w.worker);
                } else {
                    assert_eq!(local, 0, "{ctx}: collection {} worker {}", r.id, w.worker);
                }
            }
        }
    }
    let fraction = stats.remote_copy_fraction();
    let allocated: u64 = report.bytes_allocated_per_node.iter().sum();
    assert!(allocated > 0, "{ctx}: no allocation counted per node");
    // Each record carries what was allocated per node since the previous one: together they
    // are the run's per-node totals up to the last collection.
    let nodes = report.bytes_allocated_per_node.len();
    let mut per_node_records = vec![0u64; nodes];
    for r in &stats.records {
        assert_eq!(
            r.bytes_allocated_per_node.len(),
            nodes,
            "{ctx}: record {}",
            r.id
        );
        for (sum, b) in per_node_records.iter_mut().zip(&r.bytes_allocated_per_node) {
            *sum += b;
        }
    }
    for (n, (&in_records, &total)) in per_node_records
        .iter()
        .zip(&report.bytes_allocated_per_node)
        .enumerate()
    {
        assert!(
            in_records <= total,
            "{ctx}: node {n}: {in_records} > {total}"
        );
    }
    assert!(
        per_node_records.iter().sum::<u64>() > 0,
        "{ctx}: no record counted allocation per node"
    );
    match (synthetic, combo.numa) {
        (false, _) => {
            assert_eq!(report.nodes.len(), 1, "{ctx}");
            assert_eq!(fraction, 0.0, "{ctx}");
            assert!(
                report.memory_bound,
                "{ctx}: interleaved on real nodes uses mbind"
            );
        }
        (true, NumaLayout::Fragmented | NumaLayout::Segregated) => {
            assert!((0.0..0.95).contains(&fraction), "{ctx}: {fraction}");
            for w in &report.workers {
                assert_eq!(w.node, Some(w.worker % 2), "{ctx}");
                assert_eq!(
                    w.cpus,
                    vec![(w.worker % 2) as u32],
                    "{ctx}: worker {}",
                    w.worker
                );
            }
        }
        (true, NumaLayout::Interleaved) => {
            assert!(
                fraction > 0.05 && fraction < 0.95,
                "{ctx}: remote fraction {fraction}"
            );
            if combo.numa == NumaLayout::Segregated {
                let messages = stats.numa_totals().messages;
                assert!(messages > 0, "{ctx}: two nodes and no message");
                let young_scans: u64 = stats
                    .records
                    .iter()
                    .filter(|r| r.kind == CollectionKind::Young)
                    .filter_map(|r| r.numa)
                    .map(|n| n.objects_scanned_local)
                    .sum();
                assert!(young_scans > 0, "{ctx}: young collections scanned nothing");
            }
            // Both synthetic nodes got allocations (eden pages alternate).
            assert!(
                report.bytes_allocated_per_node.iter().all(|&b| b > 0),
                "{ctx}"
            );
            for w in &report.workers {
                assert_eq!(w.node, Some(w.worker % 2), "{ctx}");
                assert_eq!(
                    w.cpus,
                    vec![(w.worker % 2) as u32],
                    "{ctx}: worker {}",
                    w.worker
                );
            }
        }
        (true, _) => {
            assert_eq!(
                report.bytes_allocated_per_node[1], 0,
                "{ctx}: off is all node 0"
            );
            assert!((0.0..=1.0).contains(&fraction), "{ctx}: {fraction}");
        }
    }
}

/// Whether `combo` is selected by `SWITCH_MATRIX_FILTER` (all its words must occur in the name).
fn selected(combo: &Combo) -> bool {
    let name = format!(" {combo} ");
    match std::env::var("SWITCH_MATRIX_FILTER") {
        Ok(filter) => filter
            .split_whitespace()
            .all(|w| name.contains(&format!(" {w} "))),
        Err(_) => true,
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(s) => s
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={s:?} is not a number")),
        Err(_) => default,
    }
}

fn filtered() -> bool {
    std::env::var_os("SWITCH_MATRIX_FILTER").is_some()
}

/// FNV-1a: a seed from a combination's name that does not depend on the order of the matrix.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

// ---------------------------------------------------------------------------------------------
// Random numbers and hashing
// ---------------------------------------------------------------------------------------------

fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// `true` with probability `percent` / 100.
    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// Payload integrity word of a node.
fn check_word(id: u64, value: u64) -> u64 {
    mix(id ^ 0x00c0_ffee) ^ value.rotate_left(17)
}

/// Byte `i` of the blob of node `id`.
fn blob_byte(id: u64, i: usize) -> u8 {
    (mix(id ^ ((i as u64 / 8) << 40)) >> ((i % 8) * 8)) as u8
}

fn blob_bytes(len: usize) -> usize {
    8 + len.div_ceil(8) * 8
}

// ---------------------------------------------------------------------------------------------
// The model of one mutator's graph
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy)]
struct MNode {
    value: u64,
    /// Child ids, 0 for null.
    edges: [u64; EDGES],
    /// Blob length, 0 for none.
    blob: usize,
}

/// What a traversal of the reachable graph found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sum {
    nodes: usize,
    blobs: usize,
    /// Bytes of the reachable nodes and blobs.
    bytes: usize,
    /// Order-independent hash of the root slots and of every reachable node (id, value, child
    /// ids, blob contents).
    hash: u64,
}

impl Sum {
    fn add_root(&mut self, array: u64, slot: usize, id: u64) {
        self.hash = self
            .hash
            .wrapping_add(mix(mix(array << 32 | slot as u64) ^ id));
    }

    fn add_node(&mut self, id: u64, value: u64, edges: [u64; EDGES], blob_hash: Option<u64>) {
        let mut h = mix(id ^ mix(value));
        for (k, e) in edges.iter().enumerate() {
            h = mix(h ^ e.rotate_left(k as u32 * 7 + 1));
        }
        self.nodes += 1;
        self.bytes += NODE_BYTES;
        self.hash = self.hash.wrapping_add(mix(h ^ blob_hash.unwrap_or(0x51)));
    }

    fn add_blob(&mut self, len: usize) {
        self.blobs += 1;
        self.bytes += blob_bytes(len);
    }
}

fn hash_blob(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(mix(bytes.len() as u64), |h, &b| mix(h ^ b as u64))
}

/// One mutator's graph: the model, the handles of its two root arrays and its RNG.
struct Graph {
    /// Combination, seed and mutator: the prefix of every assertion message.
    ctx: String,
    t: u64,
    rng: Rng,
    nodes: Vec<MNode>,
    table: Vec<u64>,
    big: Vec<u64>,
    /// Slots of `big` that were ever set (where walks may start).
    big_used: Vec<usize>,
    table_h: Handle,
    big_h: Handle,
}

impl Graph {
    fn index(&self, id: u64) -> usize {
        assert_eq!(
            id >> 32,
            self.t + 1,
            "{}: id {id:#x} of another mutator",
            self.ctx
        );
        (id & 0xffff_ffff) as usize - 1
    }

    fn node(&self, id: u64) -> &MNode {
        &self.nodes[self.index(id)]
    }

    fn node_mut(&mut self, id: u64) -> &mut MNode {
        let i = self.index(id);
        &mut self.nodes[i]
    }

    /// The model's checksum of the reachable graph.
    fn model_sum(&self) -> Sum {
        let mut sum = Sum::default();
        let mut seen = HashSet::new();
        let mut stack = Vec::new();
        for (array, slots) in [(0u64, &self.table), (1, &self.big)] {
            for (i, &id) in slots.iter().enumerate() {
                if id != 0 {
                    sum.add_root(array, i, id);
                    if seen.insert(id) {
                        stack.push(id);
                    }
                }
            }
        }
        while let Some(id) = stack.pop() {
            let n = *self.node(id);
            let blob_hash = (n.blob > 0).then(|| {
                sum.add_blob(n.blob);
                let bytes: Vec<u8> = (0..n.blob).map(|i| blob_byte(id, i)).collect();
                hash_blob(&bytes)
            });
            sum.add_node(id, n.value, n.edges, blob_hash);
            for &e in &n.edges {
                if e != 0 && seen.insert(e) {
                    stack.push(e);
                }
            }
        }
        sum
    }
}

// ---------------------------------------------------------------------------------------------
// The heap side
// ---------------------------------------------------------------------------------------------

/// Reads and checks a node's id (type tag and payload integrity included).
fn node_id(m: &Mutator<'_>, g: &Graph, h: Handle) -> u64 {
    assert_eq!(
        m.kind(h),
        ObjectKind::Fixed,
        "{}: a node is not a fixed object",
        g.ctx
    );
    assert_eq!(m.tag(h), NODE.tag(), "{}: a node lost its type tag", g.ctx);
    let id = m.read_u64(h, 0);
    let value = m.read_u64(h, 8);
    assert_eq!(
        m.read_u64(h, 16),
        check_word(id, value),
        "{}: payload of node {id:#x} corrupted",
        g.ctx
    );
    id
}

/// The heap's checksum of the reachable graph. Checks every node's integrity, and that a node
/// reached along several paths is one object.
fn heap_sum(m: &mut Mutator<'_>, g: &Graph) -> Sum {
    m.scope(|m| {
        let mut sum = Sum::default();
        let mut seen: HashMap<u64, Handle> = HashMap::new();
        let mut stack: Vec<(Handle, u64)> = Vec::new();
        let mut reach = |m: &mut Mutator<'_>, h: Handle, stack: &mut Vec<(Handle, u64)>| -> u64 {
            let id = node_id(m, g, h);
            match seen.get(&id) {
                Some(&first) => assert!(
                    m.same_object(first, h),
                    "{}: node {id:#x} exists twice in the heap",
                    g.ctx
                ),
                None => {
                    seen.insert(id, h);
                    stack.push((h, id));
                }
            }
            id
        };
        for (array, arr_h, len) in [(0u64, g.table_h, TABLE), (1, g.big_h, BIG)] {
            assert_eq!(
                m.array_len(arr_h),
                len,
                "{}: root array {array} length",
                g.ctx
            );
            for i in 0..len {
                if let Some(h) = m.get_ref(arr_h, i) {
                    let id = reach(m, h, &mut stack);
                    sum.add_root(array, i, id);
                }
            }
        }
        while let Some((h, id)) = stack.pop() {
            let value = m.read_u64(h, 8);
            let mut edges = [0u64; EDGES];
            for (k, e) in edges.iter_mut().enumerate() {
                if let Some(c) = m.get_ref(h, k) {
                    *e = reach(m, c, &mut stack);
                }
            }
            let blob_hash = m.get_ref(h, BLOB).map(|b| {
                assert_eq!(
                    m.kind(b),
                    ObjectKind::ByteArray,
                    "{}: blob of node {id:#x} is not a byte array",
                    g.ctx
                );
                sum.add_blob(m.array_len(b));
                hash_blob(m.payload(b))
            });
            sum.add_node(id, value, edges, blob_hash);
        }
        sum
    })
}

/// Allocates a node with a fresh id, a random value and perhaps a blob (model updated). The
/// node's edges are null.
fn new_node(m: &mut Mutator<'_>, g: &mut Graph) -> (Handle, u64) {
    let id = ((g.t + 1) << 32) | (g.nodes.len() as u64 + 1);
    let value = g.rng.next();
    let blob = if g.rng.chance(30) {
        1 + g.rng.below(200)
    } else {
        0
    };
    let h = m
        .alloc(NODE)
        .unwrap_or_else(|e| panic!("{}: allocating node {id:#x}: {e}", g.ctx));
    m.write_u64(h, 0, id);
    m.write_u64(h, 8, value);
    m.write_u64(h, 16, check_word(id, value));
    if blob > 0 {
        m.scope(|m| {
            let b = m
                .alloc_byte_array(blob)
                .unwrap_or_else(|e| panic!("{}: allocating a blob: {e}", g.ctx));
            for (i, byte) in m.payload_mut(b).iter_mut().enumerate() {
                *byte = blob_byte(id, i);
            }
            m.set_ref(h, BLOB, Some(b));
        });
    }
    g.nodes.push(MNode {
        value,
        edges: [0; EDGES],
        blob,
    });
    (h, id)
}

/// A random reachable node: from a random root slot, a few random steps along edges, in the
/// heap and in the model at once (checking that they agree). `None` if the walk found only
/// null root slots.
fn walk(m: &mut Mutator<'_>, g: &mut Graph) -> Option<(Handle, u64)> {
    for _ in 0..8 {
        let (arr_h, id) = if g.big_used.is_empty() || g.rng.chance(75) {
            let i = g.rng.below(TABLE);
            (g.table_h, (i, g.table[i]))
        } else {
            let i = g.big_used[g.rng.below(g.big_used.len())];
            (g.big_h, (i, g.big[i]))
        };
        let (slot, mut id) = id;
        let got = m.get_ref(arr_h, slot);
        let Some(mut h) = got else {
            assert_eq!(id, 0, "{}: root slot {slot} lost node {id:#x}", g.ctx);
            continue;
        };
        assert_eq!(
            node_id(m, g, h),
            id,
            "{}: root slot {slot} holds the wrong node",
            g.ctx
        );
        for _ in 0..g.rng.below(5) {
            let k = g.rng.below(EDGES);
            let want = g.node(id).edges[k];
            let child = m.get_ref(h, k);
            match child {
                None => assert_eq!(want, 0, "{}: edge {k} of {id:#x} lost {want:#x}", g.ctx),
                Some(c) => {
                    assert_eq!(node_id(m, g, c), want, "{}: edge {k} of {id:#x}", g.ctx);
                    h = c;
                    id = want;
                }
            }
        }
        return Some((h, id));
    }
    None
}

/// Sets edge `k` of `dst` (heap and model).
fn set_edge(
    m: &mut Mutator<'_>,
    g: &mut Graph,
    dst: (Handle, u64),
    k: usize,
    to: Option<(Handle, u64)>,
) {
    m.set_ref(dst.0, k, to.map(|t| t.0));
    g.node_mut(dst.1).edges[k] = to.map_or(0, |t| t.1);
}

fn set_root(m: &mut Mutator<'_>, g: &mut Graph, big: bool, slot: usize, to: Option<(Handle, u64)>) {
    let id = to.map_or(0, |t| t.1);
    if big {
        m.set_ref(g.big_h, slot, to.map(|t| t.0));
        g.big[slot] = id;
        if !g.big_used.contains(&slot) {
            g.big_used.push(slot);
        }
    } else {
        m.set_ref(g.table_h, slot, to.map(|t| t.0));
        g.table[slot] = id;
    }
}

/// A fresh node whose edges point at random reachable nodes (young → old, young → young).
fn fresh_linked(m: &mut Mutator<'_>, g: &mut Graph) -> (Handle, u64) {
    let n = new_node(m, g);
    for k in 0..EDGES {
        if g.rng.chance(50) {
            let to = walk(m, g);
            set_edge(m, g, n, k, to);
        }
    }
    n
}

/// Short-lived garbage, about `bytes`: lists of small objects, byte arrays and now and then a
/// large byte array (allocated directly in the old generation).
fn garbage(m: &mut Mutator<'_>, g: &mut Graph, bytes: usize) {
    let mut left = bytes as isize;
    while left > 0 {
        let choice = g.rng.below(1000);
        m.scope(|m| {
            if choice < 5 {
                let len = 70 * 1024 + g.rng.below(8192);
                let b = m
                    .alloc_byte_array(len)
                    .unwrap_or_else(|e| panic!("{}: large garbage: {e}", g.ctx));
                m.payload_mut(b)[len - 1] = 1;
                left -= blob_bytes(len) as isize;
            } else if choice < 400 {
                let len = g.rng.below(2048);
                m.alloc_byte_array(len)
                    .unwrap_or_else(|e| panic!("{}: garbage bytes: {e}", g.ctx));
                left -= blob_bytes(len) as isize;
            } else {
                let len = 1 + g.rng.below(64);
                let head = m.null_handle();
                for i in 0..len {
                    m.scope(|m| {
                        let j = m
                            .alloc(JUNK)
                            .unwrap_or_else(|e| panic!("{}: garbage list: {e}", g.ctx));
                        m.write_u64(j, 0, i as u64);
                        m.set_ref(j, 0, Some(head));
                        m.set_handle(head, Some(j));
                    });
                }
                left -= (len * JUNK.size_bytes()) as isize;
            }
        });
    }
}

/// One random mutation of the graph.
fn mutate(m: &mut Mutator<'_>, g: &mut Graph, op: usize) {
    let choice = g.rng.below(1000);
    if choice < 400 {
        // A fresh (young) node stored into a slot of a reachable (usually old) node: an
        // old-to-young edge that only the write barrier's card makes visible. Its handle dies
        // with the inner scope, so the card is the node's only way to survive a scavenge.
        let collect_now = g.rng.chance(1);
        m.scope(|m| {
            let Some(target) = walk(m, g) else { return };
            let fresh = fresh_linked(m, g);
            let k = g.rng.below(EDGES);
            set_edge(m, g, target, k, Some(fresh));
        });
        if collect_now {
            m.collect(CollectionKind::Young);
        }
    } else if choice < 650 {
        // Rewire an edge between reachable nodes (or cut it).
        m.scope(|m| {
            let Some(src) = walk(m, g) else { return };
            let to = if g.rng.chance(80) { walk(m, g) } else { None };
            let k = g.rng.below(EDGES);
            set_edge(m, g, src, k, to);
        });
    } else if choice < 800 {
        // Replace a table slot: a fresh node, a reachable one or null (drops a subgraph).
        m.scope(|m| {
            let slot = g.rng.below(TABLE);
            let to = match g.rng.below(3) {
                0 => Some(fresh_linked(m, g)),
                1 => walk(m, g),
                _ => None,
            };
            set_root(m, g, false, slot, to);
        });
    } else if choice < 900 {
        // Hang a node in the large old array.
        m.scope(|m| {
            let slot = if g.big_used.is_empty() || g.rng.chance(50) {
                g.rng.below(BIG)
            } else {
                g.big_used[g.rng.below(g.big_used.len())]
            };
            let to = if g.rng.chance(60) {
                Some(fresh_linked(m, g))
            } else {
                walk(m, g)
            };
            set_root(m, g, true, slot, to);
        });
    } else if choice < 995 {
        // Rewrite a reachable node's payload.
        m.scope(|m| {
            let Some((h, id)) = walk(m, g) else { return };
            let value = g.rng.next();
            m.write_u64(h, 8, value);
            m.write_u64(h, 16, check_word(id, value));
            g.node_mut(id).value = value;
        });
    } else {
        // A collection while the mutation's handles are live.
        m.scope(|m| {
            let held = walk(m, g);
            let kind = if g.rng.chance(25) {
                CollectionKind::Full
            } else {
                CollectionKind::Young
            };
            m.collect(kind);
            if let Some((h, id)) = held {
                assert_eq!(
                    node_id(m, g, h),
                    id,
                    "{}: op {op}: a held node changed across a {kind:?} collection",
                    g.ctx
                );
            }
        });
    }
}

/// Checksums the graph before and after a collection of `kind`; both must match the model.
fn checked_collection(m: &mut Mutator<'_>, g: &Graph, kind: CollectionKind, when: &str) -> Sum {
    let want = g.model_sum();
    let before = heap_sum(m, g);
    assert_eq!(
        before, want,
        "{}: {when}: heap vs model before a {kind:?} collection",
        g.ctx
    );
    m.collect(kind);
    let after = heap_sum(m, g);
    assert_eq!(
        after, before,
        "{}: {when}: checksum changed across a {kind:?} collection",
        g.ctx
    );
    after
}

/// What the mutators of one combination share.
struct Shared {
    /// Objects and bytes the models say are reachable at the end.
    objects: AtomicUsize,
    bytes: AtomicUsize,
    /// Old-to-young references the verifier found (summed over its runs).
    old_to_young: AtomicUsize,
    /// Mutators arrived at each meeting point, and the first mutator that panicked, if one
    /// did; waiters sleep on `changed`.
    meeting: Mutex<Meeting>,
    changed: Condvar,
}

/// The state of [`Shared::meet`].
#[derive(Default)]
struct Meeting {
    arrived: [usize; 2],
    failed: Option<usize>,
}

impl Shared {
    fn new() -> Self {
        Self {
            objects: AtomicUsize::new(0),
            bytes: AtomicUsize::new(0),
            old_to_young: AtomicUsize::new(0),
            meeting: Mutex::new(Meeting::default()),
            changed: Condvar::new(),
        }
    }

    fn meeting(&self) -> std::sync::MutexGuard<'_, Meeting> {
        self.meeting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The first mutator that panicked, if one did.
    fn failed(&self) -> Option<usize> {
        self.meeting().failed
    }

    /// Waits until every mutator reached meeting point `point`; gives up if one of them
    /// panicked (a `Barrier` would wait for it forever).
    fn meet(&self, point: usize, ctx: &str) {
        let mut m = self.meeting();
        m.arrived[point] += 1;
        self.changed.notify_all();
        while m.arrived[point] < MUTATORS {
            if let Some(failed) = m.failed {
                drop(m);
                panic!("{ctx}: gave up waiting: mutator {failed} failed first");
            }
            m = self.changed.wait(m).unwrap_or_else(|p| p.into_inner());
        }
    }
}

/// Records in [`Shared::failed`] that mutator `.1` panicked, if it did.
struct FailureFlag<'a>(&'a Shared, usize);

impl Drop for FailureFlag<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let mut m = self.0.meeting();
            m.failed.get_or_insert(self.1);
            self.0.changed.notify_all();
        }
    }
}

/// One mutator's whole workload.
fn mutator(heap: &Heap, ctx: &str, seed: u64, t: usize, shared: &Shared) {
    let _flag = FailureFlag(shared, t);
    let mut m = heap.attach();
    let table_h = m.alloc_ref_array(TABLE).unwrap();
    let big_h = m.alloc_ref_array(BIG).unwrap();
    let mut g = Graph {
        ctx: format!("[{ctx}] seed {seed:#x} mutator {t}"),
        t: t as u64,
        rng: Rng(mix(
            seed ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9abc_def1)
        )),
        nodes: Vec::new(),
        table: vec![0; TABLE],
        big: vec![0; BIG],
        big_used: Vec::new(),
        table_h,
        big_h,
    };
    // The initial graph: nodes hung from the table, edges to earlier nodes (and, through later
    // rewiring, cycles).
    m.scope(|m| {
        let mut made: Vec<(Handle, u64)> = Vec::new();
        for _ in 0..INITIAL_NODES {
            let n = new_node(m, &mut g);
            for k in 0..EDGES {
                if !made.is_empty() && g.rng.chance(60) {
                    let to = made[g.rng.below(made.len())];
                    set_edge(m, &mut g, n, k, Some(to));
                }
            }
            if g.rng.chance(40) {
                let slot = g.rng.below(TABLE);
                set_root(m, &mut g, false, slot, Some(n));
            }
            made.push(n);
        }
        // Back edges: cycles.
        for _ in 0..INITIAL_NODES / 4 {
            let a = made[g.rng.below(made.len())];
            let b = made[g.rng.below(made.len())];
            let k = g.rng.below(EDGES);
            set_edge(m, &mut g, a, k, Some(b));
        }
    });
    // Everything to the old generation, so that what follows stores young nodes into old ones.
    checked_collection(&mut m, &g, CollectionKind::Full, "initial graph");

    for round in 0..ROUNDS {
        let per_op = GARBAGE_PER_ROUND / OPS;
        for op in 0..OPS {
            mutate(&mut m, &mut g, op);
            let bytes = g.rng.below(2 * per_op);
            garbage(&mut m, &mut g, bytes);
        }
        // Old-to-young edges exist now (stores since the last collection): the verifier
        // finds each on a dirty card.
        let report = m
            .verify_heap()
            .unwrap_or_else(|e| panic!("{}: round {round}: verification: {e}", g.ctx));
        shared
            .old_to_young
            .fetch_add(report.old_to_young_refs, Ordering::SeqCst);
        let kind = if (round + t) % 3 == 2 {
            CollectionKind::Full
        } else {
            CollectionKind::Young
        };
        checked_collection(&mut m, &g, kind, &format!("end of round {round}"));
    }

    // Publish what must be reachable, then let mutator 0 verify the whole heap while the other
    // waits in a blocking region (its handles stay roots).
    let sum = g.model_sum();
    let objects = 2 + sum.nodes + sum.blobs;
    let bytes = (8 + 8 * TABLE) + (8 + 8 * BIG) + sum.bytes;
    shared.objects.fetch_add(objects, Ordering::SeqCst);
    shared.bytes.fetch_add(bytes, Ordering::SeqCst);
    m.blocking(|| shared.meet(0, &g.ctx));
    if t == 0 {
        let report = m
            .verify_heap()
            .unwrap_or_else(|e| panic!("{}: final verification: {e}", g.ctx));
        let want = (
            shared.objects.load(Ordering::SeqCst),
            shared.bytes.load(Ordering::SeqCst),
        );
        assert_eq!(
            (report.reachable_objects, report.reachable_bytes),
            want,
            "{}: reachable (objects, bytes) in the heap vs the models: {report:?}",
            g.ctx
        );
    }
    m.blocking(|| shared.meet(1, &g.ctx));
    let last = heap_sum(&mut m, &g);
    assert_eq!(last, sum, "{}: at the end", g.ctx);
}

// ---------------------------------------------------------------------------------------------
// Running combinations
// ---------------------------------------------------------------------------------------------

/// Runs one combination under a watchdog; returns a summary of its collections.
fn run_combo(combo: Combo, seed: u64) -> String {
    let ctx = combo.to_string();
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::Builder::new()
        .name("switch-matrix".into())
        .spawn({
            let ctx = ctx.clone();
            move || {
                let _ = tx.send(run_combo_inner(&ctx, combo, seed));
            }
        })
        .unwrap();
    match rx.recv_timeout(COMBINATION_LIMIT) {
        Ok(v) => {
            runner.join().unwrap();
            v
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match runner.join() {
            Err(p) => std::panic::resume_unwind(p),
            Ok(()) => unreachable!("the runner ended without a result"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("[{ctx}] seed {seed:#x}: no result within {COMBINATION_LIMIT:?}: hang?")
        }
    }
}

fn run_combo_inner(ctx: &str, combo: Combo, seed: u64) -> String {
    let config = combo.config();
    let heap = Heap::new(config).unwrap_or_else(|e| panic!("[{ctx}]: heap: {e}"));
    let shared = Shared::new();
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..MUTATORS)
            .map(|t| {
                let (heap, shared) = (&heap, &shared);
                std::thread::Builder::new()
                    .name(format!("mutator-{t}"))
                    .spawn_scoped(s, move || mutator(heap, ctx, seed, t, shared))
                    .unwrap()
            })
            .collect();
        let mut panics: Vec<_> = threads.into_iter().map(|t| t.join().err()).collect();
        // Re-raise the panic of the mutator that failed first (the others gave up after it).
        let first = shared.failed();
        if let Some(p) = first.and_then(|f| panics.get_mut(f)).and_then(Option::take) {
            std::panic::resume_unwind(p);
        }
        if let Some(p) = panics.into_iter().flatten().next() {
            std::panic::resume_unwind(p);
        }
    });
    let stats = heap.stats();
    let old_to_young = shared.old_to_young.load(Ordering::SeqCst);
    let (young, full) = (
        stats.count(CollectionKind::Young),
        stats.count(CollectionKind::Full),
    );
    let by_cause = |kind: CollectionKind| {
        let mut causes: Vec<(concord::GcCause, usize)> = Vec::new();
        for r in stats.records.iter().filter(|r| r.kind == kind) {
            match causes.iter_mut().find(|c| c.0 == r.cause) {
                Some(c) => c.1 += 1,
                None => causes.push((r.cause, 1)),
            }
        }
        causes
            .iter()
            .map(|(c, n)| format!("{n} {}", c.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let summary = format!(
        "{young} young ({}), {full} full ({}), {old_to_young} old-to-young refs seen, \
         longest pause {:.1} ms",
        by_cause(CollectionKind::Young),
        by_cause(CollectionKind::Full),
        stats.pause_max_ms()
    );
    let ctx = format!("[{ctx}] seed {seed:#x} ({summary})");
    check_numa(&ctx, &combo, &stats);
    assert!(
        stats.verify_failures.is_empty(),
        "{ctx}: verification failures: {:?}",
        stats.verify_failures
    );
    assert_eq!(stats.verified(), Some(true), "{ctx}: verified");
    assert!(young >= 1, "{ctx}: no young collection ran");
    assert!(full >= 1, "{ctx}: no full collection ran");
    // Scavenges beyond the explicit ones: eden filled up.
    assert!(
        stats
            .records
            .iter()
            .any(|r| r.kind == CollectionKind::Young
                && r.cause == concord::GcCause::AllocationFailure),
        "{ctx}: no allocation-failure scavenge"
    );
    assert!(
        old_to_young > 0,
        "{ctx}: the verifier never saw an old-to-young reference"
    );
    for r in &stats.records {
        assert!(
            r.verified == Some(true) || (r.promotion_failed && r.verified.is_none()),
            "{ctx}: collection {} ({:?}, {:?}) verified {:?}",
            r.id,
            r.kind,
            r.cause,
            r.verified
        );
        if combo.dynamic_gc_threads {
            assert!(
                (1..=GC_THREADS).contains(&r.gc_threads),
                "{ctx}: collection {} used {} GC threads",
                r.id,
                r.gc_threads
            );
        } else {
            assert_eq!(
                r.gc_threads, GC_THREADS,
                "{ctx}: collection {} GC threads",
                r.id
            );
        }
    }
    summary
}

/// Runs the selected combinations of `combos`, each `SWITCH_MATRIX_REPEAT` times.
fn run_all(combos: Vec<Combo>) {
    let base = env_u64("SWITCH_MATRIX_SEED", 0);
    let repeat = env_u64("SWITCH_MATRIX_REPEAT", 1);
    let total = combos.len();
    let mut ran = 0;
    let start = Instant::now();
    for combo in combos.into_iter().filter(selected) {
        for rep in 0..repeat {
            let seed =
                mix(fnv1a(&combo.to_string()) ^ base ^ rep.wrapping_mul(0x51_7cc1_b727_220a));
            eprintln!("switch_matrix: start [{combo}] seed {seed:#x}");
            let t0 = Instant::now();
            let summary = run_combo(combo, seed);
            eprintln!(
                "switch_matrix: ok    [{combo}] seed {seed:#x}: {summary}, {:?}",
                t0.elapsed()
            );
        }
        ran += 1;
    }
    eprintln!(
        "switch_matrix: {ran} of {total} combinations × {repeat} in {:?}",
        start.elapsed()
    );
    if !filtered() {
        assert_eq!(ran, total, "not every combination ran");
    }
}

/// Runs `body` in a child process (this test binary, filtered to `name`): a panic on a GC
/// thread aborts the process, and then only this test fails, naming the combination it was
/// running. The child is killed if it does not finish in time.
fn run_isolated(name: &str, body: impl FnOnce()) {
    const VAR: &str = "SWITCH_MATRIX_CHILD";
    const LIMIT: Duration = Duration::from_secs(600);
    if std::env::var(VAR).as_deref() == Ok(name) {
        body();
        return;
    }
    let log_path =
        std::env::temp_dir().join(format!("switch_matrix-{}-{name}.log", std::process::id()));
    let log = std::fs::File::create(&log_path).expect("creating the child's log");
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(VAR, name)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("could not run the test binary");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        // The interval between looks at the child (the limit is a hang guard, not a timing).
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut text = String::new();
    std::fs::File::open(&log_path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .expect("reading the child's log");
    let _ = std::fs::remove_file(&log_path);
    let last_started = text
        .lines()
        .rfind(|l| l.starts_with("switch_matrix: start"))
        .unwrap_or("(no combination started)")
        .to_string();
    // The child's per-combination lines (shown with --nocapture).
    let summary = text
        .lines()
        .filter(|l| l.starts_with("switch_matrix: ") && !l.starts_with("switch_matrix: start"))
        .collect::<Vec<_>>()
        .join("\n");
    let problems: Vec<&str> = text
        .lines()
        .filter(|l| {
            !l.is_empty() && !l.starts_with("switch_matrix: ") && !common::is_backtrace_line(l)
        })
        .filter(|l| !l.starts_with("running ") && !l.starts_with("test "))
        .take(20)
        .collect();
    match status {
        Some(s) if s.success() => eprintln!("{name}:\n{summary}"),
        Some(s) => panic!(
            "{name} failed in a child process ({s}); last combination started:\n{last_started}\n{}",
            problems.join("\n")
        ),
        None => panic!(
            "{name}: the child process did not finish within {LIMIT:?} (killed); last combination \
             started:\n{last_started}\n{}",
            problems.join("\n")
        ),
    }
}

fn matrix_part(task_queue: TaskQueueKind, task_affinity: bool) -> Vec<Combo> {
    full_matrix()
        .into_iter()
        .filter(|c| c.task_queue == task_queue && c.task_affinity == task_affinity)
        .collect()
}

macro_rules! matrix_test {
    ($name:ident, $queue:expr, $affinity:expr) => {
        #[test]
        fn $name() {
            run_isolated(stringify!($name), || {
                run_all(matrix_part($queue, $affinity))
            });
        }
    };
}

matrix_test!(
    monitor_queue_without_affinity,
    TaskQueueKind::Monitor,
    false
);
matrix_test!(monitor_queue_with_affinity, TaskQueueKind::Monitor, true);
matrix_test!(claim_without_affinity, TaskQueueKind::Claim, false);
matrix_test!(claim_with_affinity, TaskQueueKind::Claim, true);
matrix_test!(
    lockfree_queue_without_affinity,
    TaskQueueKind::LockFree,
    false
);
matrix_test!(lockfree_queue_with_affinity, TaskQueueKind::LockFree, true);

#[test]
fn dynamic_gc_threads_and_pinned_start() {
    run_isolated("dynamic_gc_threads_and_pinned_start", || {
        run_all(extra_combos())
    });
}

#[test]
fn presets_and_termination_backoffs() {
    run_isolated("presets_and_termination_backoffs", || {
        run_all(preset_and_backoff_combos())
    });
}

#[test]
fn numa_layouts_and_topologies() {
    run_isolated("numa_layouts_and_topologies", || run_all(numa_combos()));
}

/// The matrix covers each switch value, and every combination once.
#[test]
fn the_matrix_is_complete() {
    let all = full_matrix();
    assert_eq!(all.len(), 108);
    let names: HashSet<String> = all.iter().map(|c| c.to_string()).collect();
    assert_eq!(names.len(), 108);
    let parts: usize = TaskQueueKind::ALL
        .iter()
        .flat_map(|&q| [false, true].map(|a| matrix_part(q, a).len()))
        .sum();
    assert_eq!(parts, 108);
    let extras = extra_combos();
    assert!(extras.iter().any(|c| c.dynamic_gc_threads && !c.pin_start));
    assert!(extras.iter().any(|c| c.pin_start && !c.dynamic_gc_threads));
    assert!(extras.iter().any(|c| c.pin_start && c.dynamic_gc_threads));
    for &s in StealPolicy::ALL {
        assert!(extras.iter().any(|c| c.steal == s), "{s}");
    }
    for &t in TerminationKind::ALL {
        assert!(extras.iter().any(|c| c.termination == t), "{t}");
    }
    for &p in ParkingKind::ALL {
        assert!(extras.iter().any(|c| c.parking == p), "{p}");
    }
    for &q in TaskQueueKind::ALL {
        assert!(extras.iter().any(|c| c.task_queue == q), "{q}");
    }
    let presets = preset_and_backoff_combos();
    for &preset in &Preset::ALL {
        let combo = presets.iter().find(|c| c.preset == preset).unwrap();
        let mut expected = GcConfig::for_preset(preset);
        let got = combo.config();
        expected.heap_size = got.heap_size;
        expected.gc_threads = got.gc_threads;
        expected.verify = true;
        expected.max_tenuring_threshold = got.max_tenuring_threshold;
        expected.initial_tenuring_threshold = got.initial_tenuring_threshold;
        assert_eq!(got, expected, "{preset}: the preset's own switches");
    }
    for &b in TerminationBackoff::ALL {
        for &t in TerminationKind::ALL {
            assert!(
                presets
                    .iter()
                    .any(|c| c.termination_backoff == b && c.termination == t),
                "{t} {b}"
            );
        }
    }
    let numa = numa_combos();
    for &layout in NumaLayout::ALL {
        for topology in ["auto", "0/1"] {
            assert!(
                numa.iter()
                    .any(|c| c.numa == layout && c.numa_topology == topology),
                "{layout} {topology}"
            );
        }
    }
}
