//! Mutator micro-benchmarks (issue 13): the cost of one allocation, load, store and handle
//! operation, with plain Rust `Box` code of the same shape beside them for reference.
//!
//! Run with `cargo bench -p concord --bench mutator` (criterion; add `-- <filter>` to run a
//! part, e.g. `-- load/`). Every benchmark's iteration is one operation, except the list
//! walks, whose iteration is a walk over [`LIST_LEN`] nodes and whose criterion throughput is
//! nodes per second (ns per node = 1000 / Melem/s).
//!
//! The heap is the one binary-trees 18 runs in (96 MiB, 2 GC threads, optimized preset), so
//! eden is about 26 MiB and the allocation benchmarks include everything allocation costs in a
//! real run: the amortised TLAB refill and the young
//! collections of an eden full of dead nodes. Each allocation benchmark prints to stderr how
//! many collections it caused and their total pause, so what they add per operation is known.
//!
//! `alloc/box_new_drop` and `alloc/box_new_batch_then_drop` must run first, before any heap
//! has started threads: glibc's malloc keeps a cheaper single-threaded path until the process
//! first has a second thread, and never returns to it. `alloc/box_new_drop_with_gc_threads`
//! is the same operation after a heap has started its threads.

use std::hint::black_box;
use std::time::{Duration, Instant};

use concord::{GcConfig, Handle, Heap, Mutator, ObjectType, Preset};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

/// A binary-trees node: two reference slots, no payload (a 16-byte header-less Rust struct is
/// the same shape; Concord's object adds an 8-byte header).
const NODE: ObjectType = ObjectType::fixed(2, 0);

/// Nodes in the lists the load benchmarks walk: 24 KiB of Concord nodes, which fit in L1/L2,
/// so the walks measure the instructions of a load rather than cache misses.
const LIST_LEN: usize = 1024;

/// Operations per handle scope in the benchmarks whose operation creates a handle, so the
/// handle stack does not grow without bound; the scope's cost is spread over this many.
const PER_SCOPE: u64 = 1024;

/// The heap of binary-trees 18 with one mutator (its default heap).
fn bench_heap() -> Heap {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 96 << 20;
    c.gc_threads = 2;
    Heap::new(c).expect("a 96 MiB heap")
}

/// The Rust struct of a Concord [`NODE`]: two optional owned children.
struct BoxNode {
    left: Option<Box<BoxNode>>,
    right: Option<Box<BoxNode>>,
}

impl Drop for BoxNode {
    /// Iterative along `left`, so dropping a long list does not recurse once per node
    /// (`right` is dropped recursively; the benchmarks' lists leave it empty).
    fn drop(&mut self) {
        drop(self.right.take());
        let mut next = self.left.take();
        while let Some(mut n) = next {
            next = n.left.take();
        }
    }
}

/// Run `op` `iters` times in handle scopes of [`PER_SCOPE`] operations; the elapsed time.
fn in_scopes(m: &mut Mutator<'_>, iters: u64, mut op: impl FnMut(&mut Mutator<'_>)) -> Duration {
    let start = Instant::now();
    let mut left = iters;
    while left > 0 {
        let n = left.min(PER_SCOPE);
        m.scope(|m| {
            for _ in 0..n {
                op(m);
            }
        });
        left -= n;
    }
    start.elapsed()
}

/// What a heap had done when a benchmark started: collections and bytes allocated.
#[derive(Clone, Copy)]
struct HeapMark {
    collections: usize,
    allocated: u64,
}

fn mark(heap: &Heap) -> HeapMark {
    let stats = heap.stats();
    HeapMark {
        collections: stats.records.len(),
        allocated: stats.bytes_allocated,
    }
}

/// Print the collections `heap` ran since `since`, their total pause, and that pause per
/// 24-byte node allocated meanwhile (what the collections add to each allocation).
fn report_collections(heap: &Heap, since: HeapMark, what: &str) {
    let stats = heap.stats();
    let recs = &stats.records[since.collections.min(stats.records.len())..];
    let pause_ms: f64 = recs.iter().map(|r| r.pause_ms).sum();
    let allocated = stats.bytes_allocated.saturating_sub(since.allocated);
    let nodes = allocated / NODE.size_bytes() as u64;
    eprintln!(
        "{what}: {} collections ({} full), {pause_ms:.1} ms of pauses for {} MiB allocated \
         ({:.3} ns of pause per node)",
        recs.len(),
        recs.iter()
            .filter(|r| r.kind == concord::CollectionKind::Full)
            .count(),
        allocated >> 20,
        pause_ms * 1e6 / nodes.max(1) as f64,
    );
}

fn allocation(c: &mut Criterion) {
    let mut g = c.benchmark_group("alloc");
    g.throughput(Throughput::Elements(1));
    // malloc's best case: the block freed at once is the next one handed out.
    g.bench_function("box_new_drop", |b| {
        b.iter(|| {
            drop(black_box(Box::new(BoxNode {
                left: None,
                right: None,
            })))
        })
    });
    // Closer to a collected program: a batch of nodes allocated, then all freed.
    g.bench_function("box_new_batch_then_drop", |b| {
        let mut batch: Vec<Box<BoxNode>> = Vec::with_capacity(PER_SCOPE as usize);
        b.iter_custom(|iters| {
            let start = Instant::now();
            let mut left = iters;
            while left > 0 {
                let n = left.min(PER_SCOPE);
                for _ in 0..n {
                    batch.push(black_box(Box::new(BoxNode {
                        left: None,
                        right: None,
                    })));
                }
                batch.clear();
                left -= n;
            }
            start.elapsed()
        })
    });

    // The two above run before this process has a second thread. glibc's malloc and free
    // take a cheaper path in a single-threaded process; once the heap's GC threads exist
    // they take the multi-threaded one, as a `Box` program does inside any process that runs
    // a Concord heap (measured about twice as slow here).
    let heap = bench_heap();
    g.bench_function("box_new_drop_with_gc_threads", |b| {
        b.iter(|| {
            drop(black_box(Box::new(BoxNode {
                left: None,
                right: None,
            })))
        })
    });
    let mut m = heap.attach();
    let before = mark(&heap);
    g.bench_function("concord_alloc_node", |b| {
        b.iter_custom(|iters| {
            in_scopes(&mut m, iters, |m| {
                black_box(m.alloc(NODE).unwrap());
            })
        })
    });
    report_collections(&heap, before, "alloc/concord_alloc_node");

    // Two leaves the constructor links, rooted for the whole benchmark.
    let left = m.alloc(NODE).unwrap();
    let right = m.alloc(NODE).unwrap();
    let before = mark(&heap);
    g.bench_function("concord_alloc_with_two_children", |b| {
        b.iter_custom(|iters| {
            in_scopes(&mut m, iters, |m| {
                black_box(m.alloc_with(NODE, &[Some(left), Some(right)]).unwrap());
            })
        })
    });
    report_collections(&heap, before, "alloc/concord_alloc_with_two_children");

    // The same node built the handle way: allocate, then two barriered stores.
    let before = mark(&heap);
    g.bench_function("concord_alloc_then_set_ref_x2", |b| {
        b.iter_custom(|iters| {
            in_scopes(&mut m, iters, |m| {
                let n = m.alloc(NODE).unwrap();
                m.set_ref(n, 0, Some(left));
                m.set_ref(n, 1, Some(right));
                black_box(n);
            })
        })
    });
    report_collections(&heap, before, "alloc/concord_alloc_then_set_ref_x2");

    // binary-trees' build as a whole: a depth-10 tree bottom-up, one scope_escape per inner
    // node; one operation is one node (the tree's 2047 nodes per iteration of the loop).
    let before = mark(&heap);
    g.throughput(Throughput::Elements(TREE_NODES));
    g.bench_function("concord_bottom_up_tree_depth_10", |b| {
        b.iter(|| m.scope(|m| black_box(bottom_up_tree(m, 10).unwrap())))
    });
    g.throughput(Throughput::Elements(1));
    report_collections(&heap, before, "alloc/concord_bottom_up_tree_depth_10");
    g.finish();
}

/// Nodes of the tree `concord_bottom_up_tree_depth_10` builds.
const TREE_NODES: u64 = (1 << 11) - 1;

/// binary-trees' bottom-up build on the untyped API.
fn bottom_up_tree(m: &mut Mutator<'_>, depth: u32) -> Result<Handle, concord::GcError> {
    if depth == 0 {
        return m.alloc(NODE);
    }
    m.scope_escape(|m| {
        let l = bottom_up_tree(m, depth - 1)?;
        let r = bottom_up_tree(m, depth - 1)?;
        m.alloc_with(NODE, &[Some(l), Some(r)]).map(Some)
    })
    .map(|h| h.expect("the closure returns a handle"))
}

/// A list of [`LIST_LEN`] nodes linked through slot 0, in the current scope; its head.
fn concord_list(m: &mut Mutator<'_>) -> Handle {
    let head = m.alloc(NODE).unwrap();
    let tail = m.dup(head);
    for _ in 1..LIST_LEN {
        m.scope(|m| {
            let n = m.alloc(NODE).unwrap();
            m.set_ref(tail, 0, Some(n));
            m.set_handle(tail, Some(n));
        });
    }
    head
}

/// A `Box` list of [`LIST_LEN`] nodes linked through `left`.
fn box_list() -> Box<BoxNode> {
    let mut head = Box::new(BoxNode {
        left: None,
        right: None,
    });
    for _ in 1..LIST_LEN {
        head = Box::new(BoxNode {
            left: Some(head),
            right: None,
        });
    }
    head
}

fn load(c: &mut Criterion) {
    let mut g = c.benchmark_group("load");
    g.throughput(Throughput::Elements(LIST_LEN as u64));
    let heap = bench_heap();
    let mut m = heap.attach();
    let head = concord_list(&mut m);

    // A handle per node, released by the scope around each walk.
    g.bench_function("concord_get_ref_list_walk", |b| {
        b.iter(|| {
            m.scope(|m| {
                let mut cur = black_box(head);
                let mut n = 1usize;
                while let Some(next) = m.get_ref(cur, 0) {
                    cur = next;
                    n += 1;
                }
                assert_eq!(n, LIST_LEN);
            })
        })
    });
    // One handle reused for the whole walk.
    g.bench_function("concord_load_ref_into_list_walk", |b| {
        b.iter(|| {
            m.scope(|m| {
                let cur = m.dup(black_box(head));
                let mut n = 1usize;
                while m.load_ref_into(cur, cur, 0) {
                    n += 1;
                }
                assert_eq!(n, LIST_LEN);
            })
        })
    });
    g.bench_function("concord_gc_get_list_walk", |b| {
        b.iter(|| {
            let mut cur = m.view(black_box(head)).unwrap();
            let mut n = 1usize;
            while let Some(next) = cur.get(0) {
                cur = next;
                n += 1;
            }
            assert_eq!(n, LIST_LEN);
        })
    });
    drop(m);

    let list = box_list();
    g.bench_function("box_list_walk", |b| {
        b.iter(|| {
            let mut cur: &BoxNode = black_box(&list);
            let mut n = 1usize;
            while let Some(next) = &cur.left {
                cur = next;
                n += 1;
            }
            assert_eq!(n, LIST_LEN);
        })
    });
    g.finish();
}

fn store(c: &mut Criterion) {
    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(1));
    let heap = bench_heap();
    let mut m = heap.attach();
    let obj = m.alloc(NODE).unwrap();
    let value = m.alloc(NODE).unwrap();
    // Old objects, as the target of a barriered store usually is (the barrier dirties the
    // card whatever the generation, so this changes nothing but realism).
    m.collect(concord::CollectionKind::Full);

    g.bench_function("concord_set_ref", |b| {
        b.iter(|| m.set_ref(black_box(obj), 0, black_box(Some(value))))
    });
    g.bench_function("concord_store_gc", |b| {
        let (o, v) = (m.view(obj).unwrap(), m.view(value).unwrap());
        b.iter(|| m.store(black_box(o), 0, black_box(Some(v))))
    });
    g.finish();
}

fn handles(c: &mut Criterion) {
    let mut g = c.benchmark_group("handles");
    g.throughput(Throughput::Elements(1));
    let heap = bench_heap();
    let mut m = heap.attach();
    let obj = m.alloc(NODE).unwrap();

    g.bench_function("scope_empty", |b| {
        b.iter(|| m.scope(|m| black_box(m.handle_count())))
    });
    g.bench_function("scope_one_handle", |b| {
        b.iter(|| {
            m.scope(|m| {
                black_box(m.dup(black_box(obj)));
            })
        })
    });
    // A scope that allocates one object and carries it out (in scopes of PER_SCOPE).
    g.bench_function("scope_escape_alloc", |b| {
        b.iter_custom(|iters| {
            in_scopes(&mut m, iters, |m| {
                black_box(m.scope_escape(|m| m.alloc(NODE).map(Some)).unwrap());
            })
        })
    });
    g.bench_function("view", |b| b.iter(|| black_box(m.view(black_box(obj)))));
    // A new handle per operation, in scopes of PER_SCOPE; the view is taken once per scope.
    g.bench_function("root", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            let mut left = iters;
            while left > 0 {
                let n = left.min(PER_SCOPE);
                m.scope(|m| {
                    let v = m.view(obj).unwrap();
                    for _ in 0..n {
                        black_box(m.root(black_box(v)));
                    }
                });
                left -= n;
            }
            start.elapsed()
        })
    });
    g.finish();
}

criterion_group!(benches, allocation, load, store, handles);
criterion_main!(benches);
