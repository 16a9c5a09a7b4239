//! The object-lifespan profiler (`GcConfig::lifespans`) end to end: short- and long-lived
//! objects land in the right buckets through young and full collections, survivors are
//! censored, promotion failure keeps self-forwarded samples alive, and profiling changes neither
//! a workload's result nor the heap's verification.

mod common;

use concord::telemetry::lifespan::DEFAULT_SAMPLE_INTERVAL;
use concord::telemetry::LifespanReport;
use concord::{CollectionKind, GcConfig, Handle, Heap, Mutator, ObjectType, Preset};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;

/// 64 bytes: dropped at once.
const SHORT: ObjectType = ObjectType::fixed(1, 48);
/// 256 bytes: kept for two rounds, or forever.
const LONG: ObjectType = ObjectType::fixed(1, 240);
/// A tree node: left, right; payload: value.
const NODE: ObjectType = ObjectType::fixed(2, 8);

fn config(heap: usize, young: usize, threads: usize, lifespans: bool) -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = heap;
    c.young_size = Some(young);
    c.gc_threads = threads;
    c.verify = true;
    c.lifespans = lifespans;
    c
}

/// Allocate about `bytes` of 64-byte objects, each unreachable as soon as the next 256 are.
fn churn(m: &mut Mutator<'_>, bytes: usize) {
    let n = bytes / SHORT.size_bytes();
    for _ in 0..n.div_ceil(256) {
        m.scope(|m| {
            for _ in 0..256 {
                m.alloc(SHORT).unwrap();
            }
        });
    }
}

/// A reference array of `n` LONG objects plus `large` old-direct byte arrays of 96 KiB.
fn long_lived(m: &mut Mutator<'_>, n: usize, large: usize) -> Handle {
    let a = m.alloc_ref_array(n + large).unwrap();
    for i in 0..n {
        m.scope(|m| {
            let o = m.alloc(LONG).unwrap();
            m.set_ref(a, i, Some(o));
        });
    }
    for i in n..n + large {
        m.scope(|m| {
            let o = m.alloc_byte_array(96 * KIB).unwrap();
            m.set_ref(a, i, Some(o));
        });
    }
    a
}

fn check_consistent(r: &LifespanReport) {
    assert_eq!(r.samples, r.dead + r.censored, "{r}");
    let dead: u64 = r.buckets.iter().map(|b| b.dead).sum();
    let censored: u64 = r.buckets.iter().map(|b| b.censored).sum();
    assert_eq!((dead, censored), (r.dead, r.censored), "{r}");
}

#[test]
fn short_and_long_lifespans_land_in_their_buckets() {
    // Eden 3.25 MiB: a dropped object is seen dead at most one eden of allocation later.
    let heap = Heap::new(config(32 * MIB, 4 * MIB, 2, true)).unwrap();
    let eden = heap.config().generation_sizes().eden;
    assert!(eden < 4 * MIB - 256 * KIB, "eden {eden}");
    const ROUNDS: usize = 10;
    const ROUND: usize = 16 * MIB;
    const BATCH: usize = 4096;
    const LARGE: usize = 2;
    let batch_bytes = (BATCH + LARGE + 1) * 8 + BATCH * LONG.size_bytes() + LARGE * 96 * KIB;
    let forever_n = 16 * 1024;
    let forever_bytes = (forever_n + 1) * 8 + forever_n * LONG.size_bytes();
    {
        let mut m = heap.attach();
        // Alive until the end: censored with a lifespan of at least the whole run.
        let _forever = long_lived(&mut m, forever_n, 0);
        // Batch r lives through rounds r and r + 1, then dies at the full collection that ends
        // round r + 1: its lifespan is just under two rounds of allocation.
        let held = m.alloc_ref_array(2).unwrap();
        for r in 0..ROUNDS {
            m.scope(|m| {
                let batch = long_lived(m, BATCH, LARGE);
                m.set_ref(held, r % 2, Some(batch));
            });
            churn(&mut m, ROUND - batch_bytes);
            m.set_ref(held, (r + 1) % 2, None);
            m.collect(CollectionKind::Full);
        }
    }
    let stats = heap.stats();
    assert_eq!(stats.verified(), Some(true), "{:?}", stats.verify_failures);
    assert!(stats.count(CollectionKind::Young) >= 20);
    assert_eq!(stats.count(CollectionKind::Full), ROUNDS);
    let r = heap.lifespans().expect("the profiler is on");
    assert_eq!(stats.lifespans.as_ref(), Some(&r));
    check_consistent(&r);
    println!("{r}");

    let interval = DEFAULT_SAMPLE_INTERVAL as f64;
    let allocated = stats.bytes_allocated as f64;
    assert_eq!(r.allocated_bytes, stats.bytes_allocated);
    let expected_samples = allocated / interval;
    assert!(
        (r.samples as f64 / expected_samples - 1.0).abs() < 0.15,
        "{} samples for {allocated} bytes",
        r.samples
    );

    // Short-lived: seen dead within one eden of allocation (plus the old-direct arrays).
    let short = r.dead_between(0, 4 * MIB as u64) as f64;
    let expected_short = (ROUNDS * (ROUND - batch_bytes)) as f64 / interval;
    assert!(
        (short / expected_short - 1.0).abs() < 0.15,
        "{short} short-lived samples, expected about {expected_short}\n{r}"
    );
    // Hardly anything in between: only short-lived objects caught live by a scavenge (in the
    // current scope of 256) and promoted, then seen dead at the next full collection.
    let between = r.dead_between(4 * MIB as u64, 16 * MIB as u64) as f64;
    assert!(between < 0.02 * r.dead as f64, "{r}");
    // Long-lived (young objects promoted to old, and large objects allocated in old): dead at
    // about two rounds, within a factor of 2.
    let lifespan = 2 * ROUND as u64;
    let long = r.dead_between(lifespan / 2, 2 * lifespan) as f64;
    let expected_long = ((ROUNDS - 1) * batch_bytes) as f64 / interval;
    assert!(
        (long / expected_long - 1.0).abs() < 0.4,
        "{long} long-lived samples, expected about {expected_long}\n{r}"
    );
    assert_eq!(short + between + long, r.dead as f64, "{r}");
    let median = r.median_bytes.unwrap();
    assert!(median < 4 * MIB as u64, "median {median}");
    assert!(r.p90_bytes.unwrap() < 2 * lifespan);

    // Censored: the last batch (alive for one round) and the forever array (the whole run).
    let expected_censored = (forever_bytes + batch_bytes) as f64 / interval;
    assert!(
        (r.censored as f64 / expected_censored - 1.0).abs() < 0.5,
        "{} censored, expected about {expected_censored}\n{r}",
        r.censored
    );
    assert!(
        r.buckets
            .iter()
            .filter(|b| b.censored > 0)
            .all(|b| b.lo_bytes >= 8 * MIB as u64),
        "{r}"
    );
    assert!(r.censored_median_min_bytes.unwrap() >= (ROUNDS * ROUND) as u64 / 2);
    // Small objects stand for many more objects than large ones.
    let objects: f64 = r.buckets.iter().map(|b| b.dead_objects_estimate).sum();
    assert!(objects > 10.0 * r.dead as f64, "{objects}");
}

/// 001 Fig. 3 from every object: a known pattern (objects dropped at once, and a batch kept
/// through 8 MiB of allocation) gives exactly its object counts, and each lifespan within the
/// resolution a copying collector has: a young object's death is seen at the next scavenge.
#[test]
fn every_object_sampled_gives_fig3_shares_of_a_known_pattern() {
    let mut c = config(32 * MIB, MIB, 2, true);
    c.lifespan_sample_bytes = 0;
    let heap = Heap::new(c).unwrap();
    let eden = heap.config().generation_sizes().eden as u64;
    const KEPT: usize = 1000;
    const CHURN: usize = 8 * MIB;
    let short = (CHURN / SHORT.size_bytes()).div_ceil(256) * 256;
    {
        let mut m = heap.attach();
        m.scope(|m| {
            // One reference array and KEPT objects, alive through CHURN bytes of allocation.
            let kept = long_lived(m, KEPT, 0);
            churn(m, CHURN);
            m.set_ref(kept, 0, None);
        });
        m.collect(CollectionKind::Full);
    }
    let stats = heap.stats();
    assert_eq!(stats.verified(), Some(true), "{:?}", stats.verify_failures);
    let r = heap.lifespans().unwrap();
    check_consistent(&r);
    println!("{r}");
    assert_eq!(r.sample_interval_bytes, 0);
    // Every object, each counted as one.
    let total = (1 + KEPT + short) as u64;
    assert_eq!((r.samples, r.dead, r.censored), (total, total, 0), "{r}");
    let objects: f64 = r.buckets.iter().map(|b| b.dead_objects_estimate).sum();
    assert_eq!(objects, total as f64);
    // The kept ones die at the full collection, just after CHURN bytes more were allocated.
    let long_share: f64 = r
        .buckets
        .iter()
        .filter(|b| b.lo_bytes >= CHURN as u64)
        .map(|b| b.object_share)
        .sum();
    assert!(
        (long_share - (1 + KEPT) as f64 / total as f64).abs() < 1e-9,
        "{long_share}\n{r}"
    );
    assert_eq!(
        r.dead_between(CHURN as u64, 2 * CHURN as u64),
        1 + KEPT as u64
    );
    // The dropped ones are seen dead by the next scavenge (one caught live by a scavenge
    // survives it, and is seen dead by the one after): within two edens.
    let bound = (2 * eden).next_power_of_two();
    assert!(
        (r.object_share_below(bound) - short as f64 / total as f64).abs() < 1e-9,
        "below {bound}: {}\n{r}",
        r.object_share_below(bound)
    );
    assert!(r.median_bytes.unwrap() < eden, "{r}");
}

#[test]
fn disabled_profiler_reports_nothing() {
    let heap = Heap::new(config(16 * MIB, 4 * MIB, 1, false)).unwrap();
    {
        let mut m = heap.attach();
        churn(&mut m, 8 * MIB);
    }
    assert!(heap.lifespans().is_none());
    let stats = heap.stats();
    assert!(stats.lifespans.is_none());
    assert!(serde_json::to_value(&stats)
        .unwrap()
        .get("lifespans")
        .is_none());
}

/// Build a tree of `depth`, churn with young and full collections, and checksum the tree.
fn tree_workload(heap: &Heap) -> u64 {
    fn build(m: &mut Mutator<'_>, depth: u32, value: u64) -> Handle {
        let n = m.alloc(NODE).unwrap();
        m.write_u64(n, 0, value);
        if depth > 0 {
            m.scope(|m| {
                let l = build(m, depth - 1, value.wrapping_mul(31).wrapping_add(1));
                m.set_ref(n, 0, Some(l));
                let r = build(m, depth - 1, value.wrapping_mul(37).wrapping_add(7));
                m.set_ref(n, 1, Some(r));
            });
            // Garbage between the nodes, so the tree is spread over many TLABs.
            churn(m, 256);
        }
        n
    }
    fn sum(m: &mut Mutator<'_>, n: Handle, depth: u64) -> u64 {
        let mut s = m.read_u64(n, 0).wrapping_mul(depth + 1);
        for slot in 0..2 {
            s = s.wrapping_add(m.scope(|m| match m.get_ref(n, slot) {
                Some(c) => sum(m, c, depth + 1).rotate_left(slot as u32 + 1),
                None => 0,
            }));
        }
        s
    }
    let mut m = heap.attach();
    let root = build(&mut m, 13, 1);
    let before = sum(&mut m, root, 0);
    for i in 0..6 {
        churn(&mut m, 3 * MIB);
        m.collect(if i % 3 == 2 {
            CollectionKind::Full
        } else {
            CollectionKind::Young
        });
    }
    let after = sum(&mut m, root, 0);
    assert_eq!(before, after);
    after
}

#[test]
fn profiling_changes_neither_results_nor_verification() {
    let mut sums = Vec::new();
    for lifespans in [false, true] {
        let heap = Heap::new(config(24 * MIB, 4 * MIB, 2, lifespans)).unwrap();
        sums.push(tree_workload(&heap));
        let stats = heap.stats();
        assert_eq!(stats.verified(), Some(true), "lifespans={lifespans}");
        assert!(stats.count(CollectionKind::Full) >= 2);
        if lifespans {
            let r = stats.lifespans.unwrap();
            check_consistent(&r);
            assert!(r.dead > 0 && r.censored > 0, "{r}");
        }
    }
    assert_eq!(sums[0], sums[1]);
}

#[test]
fn several_mutators_sample_at_the_configured_rate() {
    let heap = Heap::new(config(32 * MIB, 6 * MIB, 2, true)).unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let heap = &heap;
            s.spawn(move || {
                let mut m = heap.attach();
                let keep = long_lived(&mut m, 2048, t % 2);
                for _ in 0..4 {
                    churn(&mut m, 4 * MIB);
                    m.scope(|m| {
                        let tmp = long_lived(m, 1024, 1);
                        churn(m, 2 * MIB);
                        assert_eq!(m.array_len(tmp), 1025);
                    });
                }
                assert_eq!(m.array_len(keep), 2048 + t % 2);
            });
        }
    });
    heap.collect(CollectionKind::Full);
    let stats = heap.stats();
    assert_eq!(stats.verified(), Some(true), "{:?}", stats.verify_failures);
    let r = stats.lifespans.unwrap();
    check_consistent(&r);
    let expected = stats.bytes_allocated as f64 / DEFAULT_SAMPLE_INTERVAL as f64;
    assert!(
        (r.samples as f64 / expected - 1.0).abs() < 0.15,
        "{} samples, expected about {expected}",
        r.samples
    );
    // Everything was dropped before the final full collection.
    assert_eq!(r.censored, 0, "{r}");
}

/// Old full of live large objects and a young generation of live objects: the scavenge
/// forwards objects to themselves, and no live sample may be counted dead.
#[test]
fn promotion_failure_keeps_self_forwarded_samples_alive() {
    let mut c = config(4 * MIB, 4 * MIB / 3, 1, true);
    c.young_size = None;
    c.max_tenuring_threshold = 0;
    c.initial_tenuring_threshold = 0;
    let sizes = c.generation_sizes();
    let heap = Heap::new(c).unwrap();
    let mut m = heap.attach();
    // Old full of live large objects; live young objects: most of eden, in a list.
    let (head, len) = common::fill_for_promotion_failure(&mut m, sizes);
    m.collect(CollectionKind::Young); // promotion fails; a full collection follows
    m.collect(CollectionKind::Young);
    m.verify_heap().unwrap();
    let mut count = 0u64;
    let cur = m.dup(head);
    while m.load_ref_into(cur, cur, 0) {
        count += 1;
    }
    assert_eq!(count as usize, len);
    drop(m);
    let stats = heap.stats();
    assert!(stats.records.iter().any(|r| r.promotion_failed));
    assert_eq!(stats.verified(), Some(true), "{:?}", stats.verify_failures);
    let r = stats.lifespans.unwrap();
    check_consistent(&r);
    assert!(r.samples >= 10, "{r}");
    assert_eq!(r.dead, 0, "live samples counted dead\n{r}");
}
