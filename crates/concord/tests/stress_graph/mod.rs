//! The random-graph stress engine, shared by `tests/random_graph.rs` (a short run in the suite,
//! a long one behind `--ignored`) and `examples/stress_random_graph.rs` (a campaign of seeds for
//! N seconds). It uses only what an embedding program can: `ConfigBuilder`, `Heap`, `Mutator`,
//! handles, scopes, the three object kinds, slot and payload access, `collect`, `verify_heap`,
//! and the direct-reference API: about half of the walks, graph checks and edge stores go
//! through `Gc` views (`view`, `Gc::get`, `root`, `Mutator::store`) instead of handles, and some
//! fixed objects are built children first with the `alloc_with` constructor.
//!
//! Each seed chooses a configuration (preset, task queue, steal, termination, parking, task
//! affinity, GC threads, GC affinity, odd PLAB and TLAB sizes, a 4–8 MiB heap, tenuring,
//! verification on) and a number of mutator threads. Each thread mutates its own random graph
//! (fixed objects, reference arrays, byte arrays; trees, shared nodes and cycles; stores of new
//! objects into promoted ones; subgraphs dropped, garbage built in scopes that end) and keeps a
//! plain-Rust shadow of it: node id → shape, reference slots, payload bytes. Every object
//! carries its id in its payload (a reference array in a byte array hung in its slot 0), so each
//! heap object maps to one shadow node. After every collection a thread sees, it walks its whole
//! graph in the heap and the shadow side by side and compares ids, kinds, lengths, tags,
//! payload bytes, reference structure and identity (two slots naming one node must hold one
//! object). Walks between collections check the parts they pass.
//!
//! Half-way, all threads stop in a blocking region; the heap verifier's reachable bytes must
//! equal the shadows' live bytes; then one thread probes out of memory: it keeps data until
//! allocation fails, checks that the failure is an error (with the GC overhead limit among the
//! errors when the heap is full of small live objects), and that the heap works again after the
//! data is dropped, with or without an explicit collection. Then the threads carry on. Any
//! failed allocation outside the probe is a failure: the live data stays under 40 % of the
//! heap.
//!
//! Runs are deterministic per seed as far as one thread goes (configuration, operations,
//! sizes); with several mutator threads the moments collections happen depend on scheduling.

#![allow(dead_code)] // Each of the test and the example uses part of the engine.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Barrier};
use std::time::{Duration, Instant};

use concord::config::ConfigBuilder;
use concord::os::numa::NumaLayout;
use concord::runtime::GC_OVERHEAD_LIMIT_COLLECTIONS;
use concord::{
    CollectionKind, Gc, GcConfig, GcError, GcErrorKind, Handle, Heap, Mutator, ObjectKind,
    ObjectType,
};

/// The environment variable that makes the test run one seed only (to reproduce a failure).
pub const SEED_VAR: &str = "RANDOM_GRAPH_SEED";

/// SplitMix64: small, fast, and the same sequence for a seed on every platform and version.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.range(0, items.len() - 1)]
    }

    fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let word = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
}

/// How much one seed does.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Graph operations per mutator thread, half before the out-of-memory probe, half after.
    pub steps: usize,
    /// The most mutator threads a seed may choose.
    pub max_threads: usize,
    /// The command that runs one seed at this scale again, `{seed}` standing for the seed.
    pub reproduce: &'static str,
}

/// The suite's short runs.
pub const SHORT: Scale = Scale {
    steps: 1_500,
    max_threads: 3,
    reproduce: "RANDOM_GRAPH_SEED={seed} cargo test -p concord --test random_graph \
                random_graph_short",
};
/// The long campaign's runs.
pub const LONG: Scale = Scale {
    steps: 12_000,
    max_threads: 4,
    reproduce: "cargo run -p concord --profile stress --example stress_random_graph -- \
                --seed {seed} --seconds 0",
};

/// The option flags a seed chose, as `--key value` pairs (what `concord run` would take).
#[derive(Clone, Debug, Default)]
pub struct Flags(pub Vec<(&'static str, String)>);

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "--{key} {value}")?;
        }
        Ok(())
    }
}

/// A random valid configuration for `rng`: every preset, every parallel-phase switch, GC
/// threads and affinity, odd PLAB and TLAB sizes, tiny heaps, NUMA layouts on a synthetic
/// two-node topology, verification on.
pub fn random_config(rng: &mut Rng) -> (GcConfig, Flags) {
    let mut last_error = None;
    for _ in 0..20 {
        let flags = random_flags(rng);
        let mut builder = ConfigBuilder::new();
        for (key, value) in &flags.0 {
            builder.set_cli(key, value).expect("known option");
        }
        match builder.build() {
            Ok(config) => return (config, flags),
            // Some combinations of sizes are invalid (e.g. a TLAB larger than half of eden);
            // draw again, deterministically.
            Err(e) => last_error = Some(format!("{flags}: {e}")),
        }
    }
    panic!("no valid configuration drawn; last: {last_error:?}");
}

fn random_flags(rng: &mut Rng) -> Flags {
    let mut flags = Vec::new();
    let mut set = |key: &'static str, value: String| flags.push((key, value));
    set(
        "preset",
        rng.pick(&["vanilla", "modern", "optimized"]).to_string(),
    );
    // Each switch: the preset's default half of the time, else any value.
    let switches: [(&str, &[&str]); 8] = [
        ("task-queue", &["monitor", "claim", "lockfree"]),
        ("steal", &["best-of-2", "last-victim", "adaptive"]),
        ("termination", &["fixed", "owst", "live"]),
        ("parking", &["monitor", "futex"]),
        ("task-affinity", &["on", "off"]),
        ("gc-affinity", &["none", "static", "dynamic"]),
        ("pin-start", &["true", "false"]),
        ("lifespans", &["true", "false"]),
    ];
    for (key, values) in switches {
        if rng.chance(50) {
            set(key, rng.pick(values).to_string());
        }
    }
    if rng.chance(70) {
        let threads = *rng.pick(&["1", "2", "3", "4", "dynamic"]);
        set("gc-threads", threads.to_string());
    }
    // Tiny heaps: promotion failures and full collections are frequent.
    set("heap", format!("{}k", rng.range(4 * 1024, 8 * 1024)));
    set("new-ratio", rng.range(1, 3).to_string());
    set("survivor-ratio", rng.range(1, 10).to_string());
    let max_tenuring = rng.range(0, 15);
    set("max-tenuring-threshold", max_tenuring.to_string());
    set(
        "initial-tenuring-threshold",
        rng.range(0, max_tenuring).to_string(),
    );
    // Odd sizes on purpose: PLABs and TLABs are cut in whole words whatever is asked.
    set("young-plab-size", odd_size(rng, 1024, 64 * 1024));
    set("old-plab-size", odd_size(rng, 1024, 64 * 1024));
    if rng.chance(50) {
        set("tlab-size", odd_size(rng, 1024, 32 * 1024));
    }
    set(
        "large-object-threshold",
        odd_size(rng, 1024, 64 * 1024).to_string(),
    );
    // NUMA layouts (drawn last so earlier draws of a seed are unchanged): with CPUs 0 and 1
    // usable, on a synthetic two-node topology, so `fragmented` really has two fragments.
    if rng.chance(40) {
        let layout = *rng.pick(&["off", "interleaved", "fragmented"]);
        set("numa", layout.to_string());
        let usable = concord::os::affinity::current_thread_affinity().unwrap_or_default();
        if usable.contains(&0) && usable.contains(&1) {
            set("numa-topology", "0/1".to_string());
        }
    }
    set("verify", "true".to_string());
    // NUMA layouts last, so the flags drawn above stay what they were for a given seed. Over
    // a synthetic two-node topology `segregated` sends messages between the nodes (with one GC
    // thread it is refused and the configuration drawn again).
    if rng.chance(40) {
        set(
            "numa",
            rng.pick(&["interleaved", "segregated", "segregated"])
                .to_string(),
        );
        set("numa-topology", rng.pick(&["auto", "0/1"]).to_string());
    }
    Flags(flags)
}

/// A size in `lo..=hi` bytes: often not a multiple of 8.
fn odd_size(rng: &mut Rng, lo: usize, hi: usize) -> String {
    rng.range(lo, hi).to_string()
}

/// What a seed's run did.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Mutator threads.
    pub threads: usize,
    /// Young and full collections, and scavenges whose promotion failed.
    pub young: usize,
    pub full: usize,
    pub promotion_failures: usize,
    /// Whole-graph comparisons (one per thread per collection it saw, and at the phase ends).
    pub graph_checks: usize,
    /// Nodes compared in them.
    pub nodes_checked: usize,
    /// Graph operations done.
    pub steps: usize,
    /// Allocation failures the out-of-memory probe saw, and how many were the overhead limit.
    pub oom_errors: usize,
    pub overhead_limit_errors: usize,
    /// Whether the probe recovered with an explicit full collection (else by allocating on).
    pub recovered_explicitly: bool,
    /// Segregated runs: messages sent between nodes in young collections.
    pub messages: u64,
}

impl Report {
    fn add_thread(&mut self, t: &ThreadCounters) {
        self.graph_checks += t.graph_checks;
        self.nodes_checked += t.nodes_checked;
        self.steps += t.steps;
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} mutators, {} steps, {} young + {} full collections ({} promotion failures), \
             {} graph checks of {} nodes, probe: {} allocation errors ({} GC overhead limit), \
             recovered {}, {} NUMA messages",
            self.threads,
            self.steps,
            self.young,
            self.full,
            self.promotion_failures,
            self.graph_checks,
            self.nodes_checked,
            self.oom_errors,
            self.overhead_limit_errors,
            if self.recovered_explicitly {
                "after an explicit full collection"
            } else {
                "by allocating on"
            },
            self.messages,
        )
    }
}

/// Run seed `seed` at `scale` on a watchdog thread; panics (naming the seed, its flags and how
/// to reproduce it) on a mismatch, an unexpected error, or no end within `limit`.
pub fn run_seed_watched(seed: u64, scale: Scale, limit: Duration) -> (Flags, Report) {
    let mut rng = Rng::new(seed);
    let (config, flags) = random_config(&mut rng);
    let threads = rng.range(1, scale.max_threads);
    let shown = flags.clone();
    let (tx, rx) = mpsc::channel();
    let runner = std::thread::Builder::new()
        .name(format!("random-graph-{seed}"))
        .spawn(move || {
            let _ = tx.send(run(seed, config, threads, scale));
        })
        .expect("spawn the run's thread");
    let reproduce = format!(
        "seed {seed} ({threads} mutators, {shown}); reproduce with {}",
        scale.reproduce.replace("{seed}", &seed.to_string())
    );
    match rx.recv_timeout(limit) {
        Ok(report) => {
            runner.join().expect("the run ended");
            (flags, report)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            eprintln!("random graph FAILED: {reproduce}");
            match runner.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the run ended without a report"),
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("random graph HUNG: no end within {limit:?}: {reproduce}")
        }
    }
}

/// One seed's run: the heap, the mutator threads, the probe in the middle.
fn run(seed: u64, config: GcConfig, threads: usize, scale: Scale) -> Report {
    let heap = Heap::new(config).expect("the heap starts");
    let capacity = heap.capacity();
    // Live data stays under 40 % of the heap (a burst may overshoot by a few dozen KiB), so a
    // full collection always leaves room: no allocation may fail outside the probe.
    let budget = capacity * 2 / 5 / threads;
    let stopped = Barrier::new(threads);
    let resumed = Barrier::new(threads);
    let live_bytes = AtomicUsize::new(0);
    let mut report = Report {
        threads,
        ..Report::default()
    };
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let ctx = Shared {
                    heap: &heap,
                    stopped: &stopped,
                    resumed: &resumed,
                    live_bytes: &live_bytes,
                };
                std::thread::Builder::new()
                    .name(format!("rg-{seed}-mutator-{t}"))
                    .spawn_scoped(s, move || {
                        let mut m = ctx.heap.attach();
                        let rng = Rng::new(seed ^ (t as u64 + 1).wrapping_mul(0x5851_f42d));
                        let mut graph = Graph::new(&mut m, t, rng, budget);
                        graph.run(&mut m, &ctx, scale)
                    })
                    .expect("spawn a mutator")
            })
            .collect();
        for w in workers {
            let (counters, probe) = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
            report.add_thread(&counters);
            if let Some(probe) = probe {
                report.oom_errors = probe.errors;
                report.overhead_limit_errors = probe.overhead_limit_errors;
                report.recovered_explicitly = probe.explicit;
            }
        }
    });
    let stats = heap.stats();
    assert!(
        stats.verify_failures.is_empty(),
        "heap verification failed: {:?}",
        stats.verify_failures
    );
    for r in &stats.records {
        assert!(
            r.verified == Some(true) || r.promotion_failed,
            "collection {} ({:?}, {:?}) was not verified",
            r.id,
            r.kind,
            r.cause
        );
    }
    // Segregated: no young collection scans an object of another node; every message sent
    // is received; full collections send none.
    for r in stats
        .records
        .iter()
        .filter(|_| heap.config().numa == NumaLayout::Segregated)
    {
        let n = r.numa.expect("segregated counts NUMA figures");
        let received: u64 = r.workers.iter().map(|w| w.messages_received).sum();
        assert_eq!(n.messages, received, "collection {}", r.id);
        match r.kind {
            CollectionKind::Young => assert_eq!(n.objects_scanned_remote, 0, "collection {}", r.id),
            _ => assert_eq!(n.messages, 0, "collection {}", r.id),
        }
        report.messages += n.messages;
    }
    report.young = stats.count(CollectionKind::Young);
    report.full = stats.count(CollectionKind::Full);
    report.promotion_failures = stats.records.iter().filter(|r| r.promotion_failed).count();
    report
}

/// What the threads of one run share.
#[derive(Clone, Copy)]
struct Shared<'a> {
    heap: &'a Heap,
    /// All threads stop here (in a blocking region) half-way; thread 0 then probes.
    stopped: &'a Barrier,
    /// And here once thread 0's probe is over.
    resumed: &'a Barrier,
    /// The sum of the threads' shadow live bytes at the stop.
    live_bytes: &'a AtomicUsize,
}

/// What a node is, with what its heap object must look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// `refs` reference slots, `payload` bytes (the id in the first 8), application tag `tag`.
    Fixed {
        refs: usize,
        payload: usize,
        tag: u16,
    },
    /// A reference array of `len` slots; slot 0 holds an 8-byte byte array with the id.
    RefArray { len: usize },
    /// A byte array of `len` bytes (the id in the first 8).
    ByteArray { len: usize },
}

impl Shape {
    /// The slots the graph uses (a reference array's slot 0 is its id box).
    fn edges(self) -> usize {
        match self {
            Shape::Fixed { refs, .. } => refs,
            Shape::RefArray { len } => len - 1,
            Shape::ByteArray { .. } => 0,
        }
    }

    /// The heap slot of graph edge `edge`.
    fn slot(self, edge: usize) -> usize {
        match self {
            Shape::RefArray { .. } => edge + 1,
            _ => edge,
        }
    }

    /// Bytes in the heap, the id box of a reference array included.
    fn heap_bytes(self) -> usize {
        match self {
            Shape::Fixed { refs, payload, .. } => 8 + 8 * refs + payload.div_ceil(8) * 8,
            Shape::RefArray { len } => 8 + 8 * len + 16,
            Shape::ByteArray { len } => 8 + len.div_ceil(8) * 8,
        }
    }
}

/// A shadow node: the heap object as it must be.
#[derive(Clone, Debug)]
struct Node {
    shape: Shape,
    /// Targets of the graph's edges (`None`: null).
    edges: Vec<Option<u64>>,
    /// The payload (fixed objects and byte arrays), id first; empty for reference arrays.
    payload: Vec<u8>,
}

#[derive(Clone, Debug, Default)]
struct ThreadCounters {
    graph_checks: usize,
    nodes_checked: usize,
    steps: usize,
}

/// The probe's outcome.
#[derive(Clone, Copy, Debug)]
struct Probe {
    errors: usize,
    overhead_limit_errors: usize,
    explicit: bool,
}

/// Roots per thread: handles in the thread's outermost scope.
const ROOTS: usize = 12;
/// The deepest subtree one operation builds.
const MAX_DEPTH: usize = 4;

/// One mutator's graph: root handles, the shadow, the random source.
struct Graph {
    t: usize,
    rng: Rng,
    /// Handles of the roots (outermost scope) and the shadow's roots.
    root_handles: Vec<Handle>,
    roots: Vec<Option<u64>>,
    nodes: HashMap<u64, Node>,
    next_id: u64,
    /// Live bytes the shadow may hold, and an estimate of what it holds (exact after a check).
    budget: usize,
    live_estimate: usize,
    /// Bytes allocated by the current step (not yet in the estimate).
    step_bytes: usize,
    large_object_threshold: usize,
    counters: ThreadCounters,
}

impl Graph {
    fn new(m: &mut Mutator<'_>, t: usize, rng: Rng, budget: usize) -> Self {
        let root_handles = (0..ROOTS).map(|_| m.null_handle()).collect();
        Graph {
            t,
            rng,
            root_handles,
            roots: vec![None; ROOTS],
            nodes: HashMap::new(),
            next_id: ((t as u64) << 48) | 1,
            budget,
            live_estimate: 0,
            step_bytes: 0,
            large_object_threshold: 0,
            counters: ThreadCounters::default(),
        }
    }

    /// The thread's whole life: steps, the stop and probe, more steps, a last check.
    fn run(
        &mut self,
        m: &mut Mutator<'_>,
        ctx: &Shared<'_>,
        scale: Scale,
    ) -> (ThreadCounters, Option<Probe>) {
        self.large_object_threshold = ctx.heap.config().large_object_threshold;
        let mut seen = ctx.heap.collection_count();
        let mut steps = |graph: &mut Self, m: &mut Mutator<'_>, n: usize| {
            for i in 0..n {
                if let Err(e) = m.scope(|m| graph.step(m)) {
                    let last = ctx.heap.stats().records.pop();
                    panic!(
                        "thread {}: step {i}: allocation failed with about {} of {} bytes live \
                         in this thread's graph: {e}; last collection: {}",
                        graph.t,
                        graph.live_estimate,
                        ctx.heap.capacity(),
                        last.map_or("none".to_string(), |r| format!(
                            "{:?} ({:?}), old {} -> {} bytes, young {} -> {} bytes",
                            r.kind,
                            r.cause,
                            r.old_before,
                            r.old_after,
                            r.young_before,
                            r.young_after
                        ))
                    );
                }
                graph.counters.steps += 1;
                let now = ctx.heap.collection_count();
                if now != seen {
                    graph.check(m, "after a collection");
                    seen = now;
                }
            }
        };
        steps(self, m, scale.steps / 2);
        self.check(m, "before the stop");
        ctx.live_bytes
            .fetch_add(self.live_estimate, Ordering::Relaxed);
        let probe = if self.t == 0 {
            m.blocking(|| ctx.stopped.wait());
            let report = m.verify_heap().expect("the heap verifies at the stop");
            assert_eq!(
                report.reachable_bytes,
                ctx.live_bytes.load(Ordering::Relaxed),
                "the heap's reachable bytes differ from the shadows' live bytes"
            );
            let probe = self.probe_out_of_memory(m, ctx.heap);
            m.blocking(|| ctx.resumed.wait());
            Some(probe)
        } else {
            m.blocking(|| {
                ctx.stopped.wait();
                ctx.resumed.wait();
            });
            self.check(m, "after the stop");
            None
        };
        steps(self, m, scale.steps - scale.steps / 2);
        self.check(m, "at the end");
        (self.counters.clone(), probe)
    }

    fn fresh_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// A random shape; large (at least the large-object threshold) now and then, medium (at
    /// least half the threshold, below it) a little more often.
    fn random_shape(&mut self) -> Shape {
        let rng = &mut self.rng;
        let planned = self.live_estimate + self.step_bytes + 4 * self.large_object_threshold;
        if rng.chance(1) && planned < self.budget {
            let bytes = rng.range(self.large_object_threshold, 2 * self.large_object_threshold);
            return if rng.chance(50) {
                Shape::ByteArray { len: bytes }
            } else {
                Shape::RefArray { len: bytes / 8 }
            };
        }
        // Medium objects, just below the large-object threshold: young objects (copied by
        // scavenges) that are often larger than half a PLAB, so they take the direct
        // allocation beside the PLAB when copied to a survivor or promoted.
        if rng.chance(3) && planned < self.budget {
            let bytes = rng.range(
                self.large_object_threshold / 2,
                self.large_object_threshold - 16,
            );
            return if rng.chance(50) {
                Shape::ByteArray { len: bytes }
            } else {
                Shape::RefArray { len: bytes / 8 }
            };
        }
        match rng.range(0, 9) {
            0..=5 => Shape::Fixed {
                refs: rng.range(0, 4),
                payload: if rng.chance(10) {
                    rng.range(8, 600)
                } else {
                    rng.range(8, 48)
                },
                tag: rng.next_u64() as u16,
            },
            6 | 7 => Shape::RefArray {
                len: if rng.chance(10) {
                    rng.range(2, 300)
                } else {
                    rng.range(2, 12)
                },
            },
            _ => Shape::ByteArray {
                len: if rng.chance(10) {
                    rng.range(8, 3000)
                } else {
                    rng.range(8, 100)
                },
            },
        }
    }

    /// Allocate one object of a random shape with its id and random payload; its node goes to
    /// `fresh` (the shadow takes it only once it is linked).
    fn new_object(
        &mut self,
        m: &mut Mutator<'_>,
        fresh: &mut Vec<(u64, Node)>,
    ) -> Result<(Handle, u64), GcError> {
        let shape = self.random_shape();
        self.new_object_of(m, shape, fresh)
    }

    /// [`Self::new_object`] of a given shape.
    fn new_object_of(
        &mut self,
        m: &mut Mutator<'_>,
        shape: Shape,
        fresh: &mut Vec<(u64, Node)>,
    ) -> Result<(Handle, u64), GcError> {
        let id = self.fresh_id();
        self.step_bytes += shape.heap_bytes();
        let (h, payload) = match shape {
            Shape::Fixed { refs, payload, tag } => {
                let ty = ObjectType::new(refs, payload)
                    .expect("a valid shape")
                    .with_tag(tag);
                let h = m.alloc(ty)?;
                (h, self.random_payload(id, payload))
            }
            Shape::RefArray { len } => {
                let h = m.alloc_ref_array(len)?;
                let id_box = m.alloc_byte_array(8)?;
                m.write_u64(id_box, 0, id);
                m.set_ref(h, 0, Some(id_box));
                (h, Vec::new())
            }
            Shape::ByteArray { len } => {
                let h = m.alloc_byte_array(len)?;
                (h, self.random_payload(id, len))
            }
        };
        m.payload_mut(h).copy_from_slice(&payload);
        fresh.push((
            id,
            Node {
                shape,
                edges: vec![None; shape.edges()],
                payload,
            },
        ));
        Ok((h, id))
    }

    fn random_payload(&mut self, id: u64, len: usize) -> Vec<u8> {
        let mut bytes = vec![0; len];
        self.rng.fill(&mut bytes);
        bytes[..8].copy_from_slice(&id.to_le_bytes());
        bytes
    }

    /// A random subtree of depth at most `depth`; edges may also point at `existing` nodes
    /// (shared nodes and cycles). New nodes go to `fresh`.
    fn build(
        &mut self,
        m: &mut Mutator<'_>,
        depth: usize,
        existing: &[(Handle, u64)],
        fresh: &mut Vec<(u64, Node)>,
    ) -> Result<(Handle, u64), GcError> {
        let shape = self.random_shape();
        if let Shape::Fixed { refs, .. } = shape {
            if refs > 0 && self.rng.chance(30) {
                return self.build_with_constructor(m, shape, depth, existing, fresh);
            }
        }
        let (h, id) = self.new_object_of(m, shape, fresh)?;
        let index = fresh.len() - 1;
        let edges = fresh[index].1.edges.len().min(6);
        let shape = fresh[index].1.shape;
        for edge in 0..edges {
            let target = match self.rng.range(0, 9) {
                0..=3 if depth > 0 => Some(self.build(m, depth - 1, existing, fresh)?),
                4 if !existing.is_empty() => Some(*self.rng.pick(existing)),
                _ => None,
            };
            if let Some((th, tid)) = target {
                m.set_ref(h, shape.slot(edge), Some(th));
                fresh[index].1.edges[edge] = Some(tid);
            }
        }
        Ok((h, id))
    }

    /// [`Self::build`] for a fixed `shape`, children first: the children (new subtrees or
    /// `existing` nodes) are made, then the parent with `alloc_with`, which must read their
    /// handles after its own allocation (which may have moved them).
    fn build_with_constructor(
        &mut self,
        m: &mut Mutator<'_>,
        shape: Shape,
        depth: usize,
        existing: &[(Handle, u64)],
        fresh: &mut Vec<(u64, Node)>,
    ) -> Result<(Handle, u64), GcError> {
        let Shape::Fixed { refs, payload, tag } = shape else {
            unreachable!("constructors build fixed objects")
        };
        let edges = refs.min(6);
        let mut children = Vec::with_capacity(edges);
        for _ in 0..edges {
            children.push(match self.rng.range(0, 9) {
                0..=3 if depth > 0 => Some(self.build(m, depth - 1, existing, fresh)?),
                4 if !existing.is_empty() => Some(*self.rng.pick(existing)),
                _ => None,
            });
        }
        let id = self.fresh_id();
        self.step_bytes += shape.heap_bytes();
        let ty = ObjectType::new(refs, payload)
            .expect("a valid shape")
            .with_tag(tag);
        let handles: Vec<Option<Handle>> = children.iter().map(|c| c.map(|c| c.0)).collect();
        let h = m.alloc_with(ty, &handles)?;
        let bytes = self.random_payload(id, payload);
        m.payload_mut(h).copy_from_slice(&bytes);
        let mut edges_of = vec![None; refs];
        for (edge, child) in children.iter().enumerate() {
            edges_of[edge] = child.map(|c| c.1);
        }
        fresh.push((
            id,
            Node {
                shape,
                edges: edges_of,
                payload: bytes,
            },
        ));
        Ok((h, id))
    }

    /// Hand `fresh` nodes to the shadow (they were just linked into the graph).
    fn adopt(&mut self, fresh: Vec<(u64, Node)>) {
        for (id, node) in fresh {
            self.live_estimate += node.shape.heap_bytes();
            self.nodes.insert(id, node);
        }
    }

    /// A walk from a random root along random edges, checking each hop against the shadow.
    /// Returns the nodes passed (handle, id), root first; empty if the root is null.
    fn walk(&mut self, m: &mut Mutator<'_>) -> Vec<(Handle, u64)> {
        let r = self.rng.range(0, ROOTS - 1);
        let Some(root) = self.roots[r] else {
            return Vec::new();
        };
        if self.rng.chance(50) {
            return self.walk_views(m, self.root_handles[r], root);
        }
        let mut path = vec![(self.root_handles[r], root)];
        for _ in 0..self.rng.range(0, 8) {
            let (h, id) = *path.last().unwrap();
            let (edges, shape) = (self.nodes[&id].edges.len(), self.nodes[&id].shape);
            if edges == 0 {
                break;
            }
            let edge = self.rng.range(0, edges - 1);
            let want = self.nodes[&id].edges[edge];
            let got = m.get_ref(h, shape.slot(edge));
            match (got, want) {
                (None, None) => break,
                (Some(child), Some(child_id)) => {
                    self.expect_id(m, child, child_id, "on a walk");
                    path.push((child, child_id));
                }
                (got, want) => panic!(
                    "thread {}: node {id:#x} edge {edge}: heap {} but shadow {want:?}",
                    self.t,
                    if got.is_some() { "non-null" } else { "null" },
                ),
            }
        }
        path
    }

    /// [`Self::walk`] through `Gc` views: each hop is a plain load, checked against the shadow,
    /// and each node passed is rooted in a new handle for the caller.
    fn walk_views(&mut self, m: &Mutator<'_>, root: Handle, root_id: u64) -> Vec<(Handle, u64)> {
        let mut path = vec![(root, root_id)];
        let mut at = m.view(root).expect("a non-null root holds an object");
        for _ in 0..self.rng.range(0, 8) {
            let id = path.last().unwrap().1;
            let (edges, shape) = (self.nodes[&id].edges.len(), self.nodes[&id].shape);
            if edges == 0 {
                break;
            }
            let edge = self.rng.range(0, edges - 1);
            let want = self.nodes[&id].edges[edge];
            match (at.get(shape.slot(edge)), want) {
                (None, None) => break,
                (Some(child), Some(child_id)) => {
                    self.expect_view_id(child, child_id, "on a walk through views");
                    path.push((m.root(child), child_id));
                    at = child;
                }
                (got, want) => panic!(
                    "thread {}: node {id:#x} edge {edge} (view): heap {} but shadow {want:?}",
                    self.t,
                    if got.is_some() { "non-null" } else { "null" },
                ),
            }
        }
        path
    }

    /// One random operation. Allocation happens before anything is linked, so a failure
    /// leaves the graph as it was.
    fn step(&mut self, m: &mut Mutator<'_>) -> Result<(), GcError> {
        self.step_bytes = 0;
        let over_budget = self.live_estimate > self.budget;
        if over_budget {
            self.live_estimate = self.shadow_live_bytes();
        }
        let choice = if self.live_estimate > self.budget {
            0
        } else {
            self.rng.range(0, 99)
        };
        match choice {
            // Drop: a root or an edge becomes null (what hung there may become garbage).
            0..=7 => {
                if self.rng.chance(10) || self.live_estimate > self.budget {
                    let r = self.rng.range(0, ROOTS - 1);
                    m.set_handle(self.root_handles[r], None);
                    self.roots[r] = None;
                } else {
                    let path = self.walk(m);
                    self.set_random_edge(m, &path, None, false);
                }
            }
            // Grow: a new subtree under a root or an edge of a node reached by a walk (often an
            // old node: an old-to-young store), preferably where nothing hangs yet.
            8..=44 => {
                let path = self.walk(m);
                let mut fresh = Vec::new();
                let depth = self.rng.range(0, MAX_DEPTH);
                let sub = self.build(m, depth, &path, &mut fresh)?;
                let free_root = self.roots.iter().position(Option::is_none);
                if path.is_empty() || self.rng.chance(5) {
                    let r = free_root.unwrap_or_else(|| self.rng.range(0, ROOTS - 1));
                    m.set_handle(self.root_handles[r], Some(sub.0));
                    self.roots[r] = Some(sub.1);
                    self.adopt(fresh);
                } else if self.set_random_edge(m, &path, Some(sub), true) {
                    self.adopt(fresh);
                }
            }
            // Rewire: an edge to another node of the walk (sharing, cycles) or of a root.
            45..=56 => {
                let path = self.walk(m);
                if !path.is_empty() {
                    let target = *self.rng.pick(&path);
                    self.set_random_edge(m, &path, Some(target), false);
                }
            }
            // Write payload bytes (not the id) of a node on a walk.
            57..=68 => {
                let path = self.walk(m);
                if let Some(&(h, id)) = path.last() {
                    self.write_payload(m, h, id);
                }
            }
            // Garbage: a subtree and a run of objects, built in this scope and dropped with it.
            69..=86 => {
                let mut fresh = Vec::new();
                let depth = self.rng.range(0, MAX_DEPTH);
                self.build(m, depth, &[], &mut fresh)?;
                for _ in 0..self.rng.range(1, 64) {
                    self.new_object(m, &mut fresh)?;
                }
            }
            // Read: a walk checks every hop; compare the last node's payload too.
            87..=95 => {
                let path = self.walk(m);
                if let Some(&(h, id)) = path.last() {
                    self.expect_node(m, h, id);
                }
            }
            // Burst: a wide structure of hundreds of nodes at once, hung from a root, so a
            // scavenge must promote far more than its estimate (promotion failure).
            96..=97 => {
                let mut fresh = Vec::new();
                let width = self.rng.range(32, 300);
                let shape = Shape::RefArray { len: width + 1 };
                let (wide, id) = self.new_object_of(m, shape, &mut fresh)?;
                let index = fresh.len() - 1;
                for edge in 0..width {
                    let (child, child_id) = self.build(m, 1, &[], &mut fresh)?;
                    m.set_ref(wide, shape.slot(edge), Some(child));
                    fresh[index].1.edges[edge] = Some(child_id);
                }
                let r = self.rng.range(0, ROOTS - 1);
                m.set_handle(self.root_handles[r], Some(wide));
                self.roots[r] = Some(id);
                self.adopt(fresh);
            }
            // Explicit collections.
            _ => m.collect(if self.rng.chance(70) {
                CollectionKind::Young
            } else {
                CollectionKind::Full
            }),
        }
        Ok(())
    }

    /// Point a random edge (a null one if `prefer_null` and there is one) of the last node of
    /// `path` that has edges at `target`; returns whether one was set.
    fn set_random_edge(
        &mut self,
        m: &mut Mutator<'_>,
        path: &[(Handle, u64)],
        target: Option<(Handle, u64)>,
        prefer_null: bool,
    ) -> bool {
        let Some(&(h, id)) = path
            .iter()
            .rev()
            .find(|(_, id)| !self.nodes[id].edges.is_empty())
        else {
            return false;
        };
        let node = self.nodes.get_mut(&id).unwrap();
        let null_edge = node.edges.iter().position(Option::is_none);
        let edge = match null_edge {
            Some(edge) if prefer_null => edge,
            _ => self.rng.range(0, node.edges.len() - 1),
        };
        let slot = node.shape.slot(edge);
        if self.rng.chance(50) {
            let obj = m.view(h).expect("a path holds objects");
            m.store(obj, slot, target.and_then(|t| m.view(t.0)));
        } else {
            m.set_ref(h, slot, target.map(|t| t.0));
        }
        let node = self.nodes.get_mut(&id).unwrap();
        node.edges[edge] = target.map(|t| t.1);
        true
    }

    fn write_payload(&mut self, m: &mut Mutator<'_>, h: Handle, id: u64) {
        let node = self.nodes.get_mut(&id).unwrap();
        if node.payload.len() <= 8 {
            return;
        }
        let start = self.rng.range(8, node.payload.len() - 1);
        let end = self
            .rng
            .range(start + 1, node.payload.len().min(start + 64));
        self.rng.fill(&mut node.payload[start..end]);
        m.payload_mut(h)[start..end].copy_from_slice(&node.payload[start..end]);
    }

    /// The id the heap object `h` carries.
    fn read_id(&self, m: &mut Mutator<'_>, h: Handle) -> u64 {
        match m.kind(h) {
            ObjectKind::Fixed | ObjectKind::ByteArray => m.read_u64(h, 0),
            ObjectKind::RefArray => {
                let id_box = m.get_ref(h, 0).unwrap_or_else(|| {
                    panic!("thread {}: a reference array lost its id box", self.t)
                });
                assert_eq!(m.kind(id_box), ObjectKind::ByteArray, "id box kind");
                m.read_u64(id_box, 0)
            }
        }
    }

    fn expect_id(&self, m: &mut Mutator<'_>, h: Handle, id: u64, when: &str) {
        let got = self.read_id(m, h);
        assert_eq!(
            got, id,
            "thread {}: {when}: heap object carries id {got:#x}, shadow expects {id:#x}",
            self.t
        );
    }

    /// The heap object `h` has node `id`'s shape and payload (not its edges).
    fn expect_node(&self, m: &mut Mutator<'_>, h: Handle, id: u64) {
        let node = &self.nodes[&id];
        let t = self.t;
        let (kind, len) = (m.kind(h), m.array_len(h));
        match node.shape {
            Shape::Fixed { refs, tag, .. } => {
                assert_eq!(kind, ObjectKind::Fixed, "thread {t}: node {id:#x} kind");
                assert_eq!(m.ref_count(h), refs, "thread {t}: node {id:#x} slots");
                assert_eq!(m.tag(h), tag, "thread {t}: node {id:#x} tag");
            }
            Shape::RefArray { len: want } => {
                assert_eq!(kind, ObjectKind::RefArray, "thread {t}: node {id:#x} kind");
                assert_eq!(len, want, "thread {t}: node {id:#x} length");
            }
            Shape::ByteArray { len: want } => {
                assert_eq!(kind, ObjectKind::ByteArray, "thread {t}: node {id:#x} kind");
                assert_eq!(len, want, "thread {t}: node {id:#x} length");
            }
        }
        if m.payload(h) != node.payload.as_slice() {
            let at = m
                .payload(h)
                .iter()
                .zip(&node.payload)
                .position(|(a, b)| a != b);
            panic!(
                "thread {t}: node {id:#x} ({:?}): payload differs at byte {at:?}",
                node.shape
            );
        }
    }

    /// Compare the whole graph, heap against shadow: ids, shapes, payloads, edges, identity.
    /// Forgets shadow nodes no longer reachable and makes the live estimate exact.
    fn check(&mut self, m: &mut Mutator<'_>, when: &str) {
        let t = self.t;
        if self.rng.chance(50) {
            let seen = self.check_views(m, when);
            self.forget_unreached(seen);
            return;
        }
        let seen = m.scope(|m| {
            let mut seen: HashMap<u64, Handle> = HashMap::new();
            let mut stack: Vec<(Handle, u64)> = Vec::new();
            for (r, &want) in self.roots.iter().enumerate() {
                let h = self.root_handles[r];
                match want {
                    None => assert!(m.is_null(h), "thread {t}: {when}: root {r} is not null"),
                    Some(id) => stack.push((h, id)),
                }
            }
            while let Some((h, id)) = stack.pop() {
                self.expect_id(m, h, id, when);
                if let Some(&first) = seen.get(&id) {
                    assert!(
                        m.same_object(first, h),
                        "thread {t}: {when}: node {id:#x} is two objects in the heap"
                    );
                    continue;
                }
                seen.insert(id, h);
                self.expect_node(m, h, id);
                let node = &self.nodes[&id];
                for (edge, &want) in node.edges.iter().enumerate() {
                    match (m.get_ref(h, node.shape.slot(edge)), want) {
                        (None, None) => {}
                        (Some(child), Some(child_id)) => stack.push((child, child_id)),
                        (got, want) => panic!(
                            "thread {t}: {when}: node {id:#x} edge {edge}: heap {} but shadow \
                             {want:?}",
                            if got.is_some() { "non-null" } else { "null" }
                        ),
                    }
                }
            }
            seen.into_keys().collect::<std::collections::HashSet<u64>>()
        });
        self.forget_unreached(seen);
    }

    /// After a whole-graph check that reached `seen`: forget the other shadow nodes and make
    /// the live estimate exact.
    fn forget_unreached(&mut self, seen: std::collections::HashSet<u64>) {
        self.nodes.retain(|id, _| seen.contains(id));
        self.live_estimate = self.nodes.values().map(|n| n.shape.heap_bytes()).sum();
        self.counters.graph_checks += 1;
        self.counters.nodes_checked += seen.len();
    }

    /// [`Self::check`] through `Gc` views: no handle is made, identity is `Gc` equality.
    fn check_views(&self, m: &Mutator<'_>, when: &str) -> std::collections::HashSet<u64> {
        let t = self.t;
        let mut seen: HashMap<u64, Gc<'_>> = HashMap::new();
        let mut stack: Vec<(Gc<'_>, u64)> = Vec::new();
        for (r, &want) in self.roots.iter().enumerate() {
            let g = m.view(self.root_handles[r]);
            match (g, want) {
                (None, None) => {}
                (Some(g), Some(id)) => stack.push((g, id)),
                (g, want) => panic!(
                    "thread {t}: {when}: root {r} is {g:?} in the heap, {want:?} in the shadow"
                ),
            }
        }
        while let Some((g, id)) = stack.pop() {
            self.expect_view_id(g, id, when);
            if let Some(&first) = seen.get(&id) {
                assert!(
                    first == g,
                    "thread {t}: {when}: node {id:#x} is two objects in the heap (views)"
                );
                continue;
            }
            seen.insert(id, g);
            let node = &self.nodes[&id];
            let (kind, len) = (g.kind(), g.array_len());
            match node.shape {
                Shape::Fixed { refs, tag, .. } => {
                    assert_eq!(kind, ObjectKind::Fixed, "thread {t}: node {id:#x} kind");
                    assert_eq!(g.ref_count(), refs, "thread {t}: node {id:#x} slots");
                    assert_eq!(g.tag(), tag, "thread {t}: node {id:#x} tag");
                }
                Shape::RefArray { len: want } => {
                    assert_eq!(kind, ObjectKind::RefArray, "thread {t}: node {id:#x} kind");
                    assert_eq!(len, want, "thread {t}: node {id:#x} length");
                }
                Shape::ByteArray { len: want } => {
                    assert_eq!(kind, ObjectKind::ByteArray, "thread {t}: node {id:#x} kind");
                    assert_eq!(len, want, "thread {t}: node {id:#x} length");
                }
            }
            assert!(
                g.payload() == node.payload.as_slice(),
                "thread {t}: {when}: node {id:#x} ({:?}): payload differs (views)",
                node.shape
            );
            for (edge, &want) in node.edges.iter().enumerate() {
                match (g.get(node.shape.slot(edge)), want) {
                    (None, None) => {}
                    (Some(child), Some(child_id)) => stack.push((child, child_id)),
                    (got, want) => panic!(
                        "thread {t}: {when}: node {id:#x} edge {edge} (views): heap {} but \
                         shadow {want:?}",
                        if got.is_some() { "non-null" } else { "null" }
                    ),
                }
            }
        }
        seen.into_keys().collect()
    }

    /// The id a heap object carries, read through a view.
    fn expect_view_id(&self, g: Gc<'_>, id: u64, when: &str) {
        let got = match g.kind() {
            ObjectKind::Fixed | ObjectKind::ByteArray => g.read_u64(0),
            ObjectKind::RefArray => {
                let id_box = g.get(0).unwrap_or_else(|| {
                    panic!("thread {}: a reference array lost its id box", self.t)
                });
                assert_eq!(id_box.kind(), ObjectKind::ByteArray, "id box kind");
                id_box.read_u64(0)
            }
        };
        assert_eq!(
            got, id,
            "thread {}: {when}: heap object carries id {got:#x} (view), shadow expects {id:#x}",
            self.t
        );
    }

    /// Live bytes of the shadow alone (no heap access); forgets unreachable shadow nodes.
    fn shadow_live_bytes(&mut self) -> usize {
        let mut seen = std::collections::HashSet::new();
        let mut stack: Vec<u64> = self.roots.iter().flatten().copied().collect();
        while let Some(id) = stack.pop() {
            if seen.insert(id) {
                stack.extend(self.nodes[&id].edges.iter().flatten());
            }
        }
        self.nodes.retain(|id, _| seen.contains(id));
        self.nodes.values().map(|n| n.shape.heap_bytes()).sum()
    }

    /// Keep data until allocation fails; the failure must be an error (the GC overhead limit
    /// among them when the data is small objects); then drop it and check that the heap works
    /// again, with an explicit full collection or without. The other threads are stopped.
    fn probe_out_of_memory(&mut self, m: &mut Mutator<'_>, heap: &Heap) -> Probe {
        let capacity = heap.capacity();
        let large = self.large_object_threshold;
        // Small chunks fill the heap with live data a collection cannot reduce: the overhead
        // limit must come; large ones go to the old generation directly and fail while eden
        // may still be free: plain out of memory.
        let small = self.rng.chance(70);
        let chunk = |rng: &mut Rng| {
            if small {
                rng.range(16, 512.min(large - 8))
            } else {
                rng.range(large, 2 * large)
            }
        };
        let explicit = self.rng.chance(50);
        let mut errors = 0;
        let mut overhead_limit_errors = 0;
        m.scope(|m| {
            let hog = m.null_handle();
            // Cells: slot 0 the previous cell, slots 1..=16 byte arrays.
            let mut kept = 0usize;
            while errors < 3 * GC_OVERHEAD_LIMIT_COLLECTIONS as usize {
                let len = chunk(&mut self.rng);
                let r = m.scope(|m| -> Result<(), GcError> {
                    let cell = m.alloc_ref_array(17)?;
                    m.set_ref(cell, 0, Some(hog));
                    for slot in 1..=16 {
                        let b = m.alloc_byte_array(len)?;
                        m.payload_mut(b)[0] = slot as u8;
                        m.set_ref(cell, slot, Some(b));
                    }
                    m.set_handle(hog, Some(cell));
                    Ok(())
                });
                match r {
                    Ok(()) => {
                        kept += 16 * (len + 16);
                        assert!(
                            kept < 2 * capacity,
                            "thread {}: {kept} bytes kept in a heap of {capacity} without an \
                             allocation failure",
                            self.t
                        );
                    }
                    Err(e) => {
                        errors += 1;
                        match e.into_kind() {
                            GcErrorKind::OutOfMemory {
                                requested,
                                heap_size,
                                ..
                            } => {
                                assert_eq!(heap_size, capacity);
                                assert!(requested <= 2 * large + 16, "requested {requested}");
                            }
                            GcErrorKind::GcOverheadLimit {
                                requested,
                                heap_size,
                                full_collections,
                                ..
                            } => {
                                assert_eq!(heap_size, capacity);
                                assert!(requested <= 2 * large + 16, "requested {requested}");
                                assert!(full_collections >= GC_OVERHEAD_LIMIT_COLLECTIONS);
                                overhead_limit_errors += 1;
                                if small {
                                    break;
                                }
                            }
                            other => panic!("unexpected allocation error: {other}"),
                        }
                    }
                }
            }
            if small {
                assert!(
                    overhead_limit_errors > 0,
                    "thread {}: {errors} allocation errors with the heap full of small live \
                     objects, none of them the GC overhead limit",
                    self.t
                );
            }
            // The kept data is intact.
            m.scope(|m| {
                let cell = m.dup(hog);
                while !m.is_null(cell) {
                    for slot in 1..=16 {
                        if let Some(b) = m.get_ref(cell, slot) {
                            assert_eq!(m.payload(b)[0], slot as u8, "kept data corrupted");
                        }
                    }
                    m.load_ref_into(cell, cell, 0);
                }
            });
            m.set_handle(hog, None);
        });
        // The graph survived the probe's collections.
        self.check(m, "after allocation failed");
        if explicit {
            m.collect(CollectionKind::Full);
        }
        // Without an explicit collection the next allocation failure collects; either way
        // every allocation must succeed again, well past a few edens' worth.
        let eden = heap.config().generation_sizes().eden;
        let mut allocated = 0;
        while allocated < 3 * eden {
            let len = self.rng.range(8, 200);
            m.scope(|m| m.alloc_byte_array(len).map(|_| ()))
                .unwrap_or_else(|e| {
                    panic!(
                        "thread {}: the heap does not recover after out of memory ({} \
                         collection): {e}",
                        self.t,
                        if explicit {
                            "explicit full"
                        } else {
                            "no explicit"
                        }
                    )
                });
            allocated += len + 8;
        }
        Probe {
            errors,
            overhead_limit_errors,
            explicit,
        }
    }
}

/// Run seeds `first_seed`, `first_seed + 1`, … at `scale` for `seconds` (at least one seed),
/// calling `each` after every seed. Returns the reports.
pub fn campaign(
    first_seed: u64,
    seconds: u64,
    scale: Scale,
    mut each: impl FnMut(u64, &Flags, &Report),
) -> Vec<Report> {
    let start = Instant::now();
    let mut reports = Vec::new();
    let mut seed = first_seed;
    loop {
        let (flags, report) = run_seed_watched(seed, scale, Duration::from_secs(600));
        each(seed, &flags, &report);
        reports.push(report);
        seed += 1;
        if start.elapsed() >= Duration::from_secs(seconds) {
            return reports;
        }
    }
}
