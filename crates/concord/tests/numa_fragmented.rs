//! NUMA layout `fragmented` (004 §3.2.3, §3.3): TLABs come from the eden fragment of the node
//! the mutator runs on, PLABs from the to-space fragment of the copying worker's node, and a
//! fragmented eden collects at the same allocation volume as an unfragmented one.
//!
//! The synthetic topology `0/1` (node 0 = CPU 0, node 1 = CPU 1) needs both CPUs usable; the
//! per-node figures come from the heap's node map, pure address arithmetic independent of the
//! fragment choice being tested.

use concord::config::{GcConfig, Preset};
use concord::os::affinity::{current_thread_affinity, set_current_thread_affinity};
use concord::os::numa::NumaLayout;
use concord::{CollectionKind, Heap, ObjectType};
use proptest::prelude::*;

const NODE: ObjectType = ObjectType::fixed(2, 16);

fn config(layout: NumaLayout, topology: &str) -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 48 << 20;
    c.gc_threads = 2;
    c.verify = true;
    c.numa = layout;
    c.numa_topology = topology.parse().unwrap();
    c
}

fn two_cpus() -> bool {
    let cpus = current_thread_affinity().unwrap();
    let ok = cpus.contains(&0) && cpus.contains(&1);
    if !ok {
        eprintln!("skipped: needs CPUs 0 and 1 usable, have {cpus:?}");
    }
    ok
}

fn per_node(heap: &Heap) -> Vec<u64> {
    heap.numa().bytes_allocated_per_node
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Every TLAB (and direct young allocation) a mutator takes while pinned to CPU c comes
    /// from node c's eden fragment, whatever CPU it ran on before.
    #[test]
    fn tlabs_come_from_the_allocating_cpus_node(
        steps in prop::collection::vec((0u32..2, 1usize..4000, 0u16..600), 1..6)
    ) {
        if !two_cpus() {
            return Ok(());
        }
        let restore = current_thread_affinity().unwrap();
        let mut c = config(NumaLayout::Fragmented, "0/1");
        // Objects above half a TLAB and below the large-object threshold (64 KiB, old) are
        // allocated directly in eden.
        c.tlab_size = Some(64 << 10);
        let heap = Heap::new(c).unwrap();
        let eden = heap.config().generation_sizes().eden;
        {
            let mut m = heap.attach();
            for (cpu, count, payload) in steps {
                set_current_thread_affinity(&[cpu]).unwrap();
                // An empty eden, and less than half of it asked for: no collection (whose
                // allocation the VM thread serves) falls in the step.
                m.collect(CollectionKind::Young);
                let ty = ObjectType::fixed(1, payload);
                let count = count.min(eden / 2 / ty.size_bytes());
                let before = per_node(&heap);
                for _ in 0..count {
                    m.scope(|m| {
                        m.alloc(ty).unwrap();
                    });
                }
                // A byte array larger than half a TLAB: a direct eden allocation.
                m.scope(|m| {
                    m.alloc_byte_array(40 << 10).unwrap();
                });
                let after = per_node(&heap);
                let other = 1 - cpu as usize;
                prop_assert_eq!(after[other], before[other], "pinned to CPU {}", cpu);
                prop_assert!(after[cpu as usize] > before[cpu as usize]);
            }
        }
        set_current_thread_affinity(&restore).unwrap();
        let stats = heap.stats();
        prop_assert_eq!(stats.verified(), Some(true));
    }

    /// Every survivor PLAB (and direct survivor copy) of worker w comes from the to-space
    /// fragment of node w % 2: with no promotion, no worker copies a byte to the other node.
    #[test]
    fn plabs_come_from_the_copying_workers_node(
        lists in prop::collection::vec(1usize..3000, 1..5),
        cpu in 0u32..2,
    ) {
        if !two_cpus() {
            return Ok(());
        }
        let mut c = config(NumaLayout::Fragmented, "0/1");
        c.max_tenuring_threshold = 15;
        c.initial_tenuring_threshold = 15;
        let restore = current_thread_affinity().unwrap();
        // The heap reads the usable CPUs from the creating thread's mask: pin afterwards.
        let heap = Heap::new(c).unwrap();
        set_current_thread_affinity(&[cpu]).unwrap();
        let mut sums = Vec::new();
        {
            let mut m = heap.attach();
            let mut heads = Vec::new();
            for (l, &len) in lists.iter().enumerate() {
                let head = m.alloc(NODE).unwrap();
                let cur = m.dup(head);
                for i in 0..len {
                    m.scope(|m| {
                        let n = m.alloc(NODE).unwrap();
                        m.write_u64(n, 0, (l * 10_000 + i) as u64);
                        m.set_ref(cur, 0, Some(n));
                        m.set_handle(cur, Some(n));
                    });
                }
                heads.push(head);
            }
            for _ in 0..3 {
                m.collect(CollectionKind::Young);
            }
            for (l, head) in heads.iter().enumerate() {
                let cur = m.dup(*head);
                let mut sum = 0u64;
                let mut seen = 0;
                while let Some(next) = m.get_ref(cur, 0) {
                    sum = sum.wrapping_add(m.read_u64(next, 0));
                    m.set_handle(cur, Some(next));
                    seen += 1;
                }
                prop_assert_eq!(seen, lists[l]);
                sums.push(sum);
            }
        }
        set_current_thread_affinity(&restore).unwrap();
        for (l, &len) in lists.iter().enumerate() {
            let expected: u64 = (0..len).map(|i| (l * 10_000 + i) as u64).sum();
            prop_assert_eq!(sums[l], expected);
        }
        let stats = heap.stats();
        prop_assert_eq!(stats.verified(), Some(true));
        let young: Vec<_> = stats.records.iter().filter(|r| r.kind == CollectionKind::Young).collect();
        prop_assert!(young.len() >= 3);
        let mut copied = 0;
        for r in young {
            prop_assert_eq!(r.bytes_promoted, 0);
            for w in &r.workers {
                prop_assert_eq!(w.numa.node, w.worker % 2);
                prop_assert_eq!(w.numa.bytes_copied_remote, 0, "collection {} worker {}", r.id, w.worker);
                copied += w.numa.bytes_copied_local;
            }
        }
        prop_assert!(copied > 0);
    }
}

/// 004's resizing problem does not arise: a mutator that alternates between the two nodes'
/// CPUs fills eden from both fragments and gets exactly as many young collections as with one
/// unfragmented eden (a fragment is never full while the space has room).
#[test]
fn fragmented_eden_collects_at_the_same_volume_as_one_eden() {
    if !two_cpus() {
        return;
    }
    let restore = current_thread_affinity().unwrap();
    let run = |layout: NumaLayout| {
        set_current_thread_affinity(&restore).unwrap();
        let heap = Heap::new(config(layout, "0/1")).unwrap();
        let eden = heap.config().generation_sizes().eden;
        {
            let mut m = heap.attach();
            let live = m.alloc_ref_array(64).unwrap();
            // Ten edens' worth of garbage in phases of a quarter eden, alternating nodes.
            let per_phase = eden / 4 / NODE.size_bytes();
            for phase in 0..40 {
                set_current_thread_affinity(&[(phase % 2) as u32]).unwrap();
                for i in 0..per_phase {
                    m.scope(|m| {
                        let n = m.alloc(NODE).unwrap();
                        if i % 4096 == 0 {
                            m.set_ref(live, (i / 4096) % 64, Some(n));
                        }
                    });
                }
            }
        }
        let stats = heap.stats();
        assert_eq!(stats.verified(), Some(true), "{layout}");
        (
            stats.count(CollectionKind::Young),
            stats.count(CollectionKind::Full),
            per_node(&heap),
        )
    };
    let (young_one, full_one, _) = run(NumaLayout::Off);
    let (young_frag, full_frag, nodes) = run(NumaLayout::Fragmented);
    set_current_thread_affinity(&restore).unwrap();
    assert!(young_one >= 8, "{young_one} young collections");
    assert!(
        nodes.iter().all(|&b| b > 0),
        "both fragments used: {nodes:?}"
    );
    assert_eq!(
        (young_frag, full_frag),
        (young_one, full_one),
        "fragmented vs one eden (young, full)"
    );
}
