use concord::{CollectionKind, GcConfig, Heap, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);

fn config(heap: usize, threads: usize) -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = heap;
    c.gc_threads = threads;
    c.verify = true;
    c
}

#[test]
fn list_survives_young_and_full_collections() {
    let heap = Heap::new(config(16 << 20, 2)).unwrap();
    let mut m = heap.attach();
    let head = m.alloc(NODE).unwrap();
    m.write_u64(head, 0, 0);
    let cur = m.dup(head);
    for i in 1..20_000u64 {
        m.scope(|m| {
            let n = m.alloc(NODE).unwrap();
            m.write_u64(n, 0, i);
            m.set_ref(cur, 0, Some(n));
            m.set_handle(cur, Some(n));
        });
        if i % 5000 == 0 {
            m.collect(CollectionKind::Young);
        }
    }
    m.collect(CollectionKind::Full);
    m.collect(CollectionKind::Young);
    let cur = m.dup(head);
    let mut sum = 0;
    let mut count = 0;
    loop {
        sum += m.read_u64(cur, 0);
        count += 1;
        if !m.load_ref_into(cur, cur, 0) {
            break;
        }
    }
    assert_eq!(count, 20_000);
    assert_eq!(sum, 19_999 * 20_000 / 2);
    m.verify_heap().unwrap();
    drop(m);
    let s = heap.stats();
    assert!(s.count(CollectionKind::Young) >= 4, "{:?}", s.records.len());
    assert!(s.count(CollectionKind::Full) >= 1);
    assert_eq!(s.verified(), Some(true));
}
