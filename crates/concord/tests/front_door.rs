//! The embedder's front door: `Heap::builder()` on `GcConfig::default()` starts the VM thread
//! and the GC workers and nothing else, where the `optimized` preset also starts its run-queue
//! sampler. (One test in this file: the threads of the process are counted.)

use concord::{GcConfig, Heap, Preset};

/// Names of this process's threads that the heap started (`concord-…`).
fn heap_threads() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .map(|name| name.trim().to_string())
        .filter(|name| name.starts_with("concord-"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_default_heap_starts_no_research_threads() {
    assert!(heap_threads().is_empty(), "{:?}", heap_threads());
    let heap = Heap::builder()
        .heap_size(16 << 20)
        .gc_threads(2)
        .build()
        .unwrap();
    assert_eq!(heap.config().gc_threads, 2);
    let mut m = heap.attach();
    let h = m.alloc(concord::ObjectType::fixed(1, 8)).unwrap();
    m.collect(concord::CollectionKind::Full);
    assert!(m.view(h).is_some());
    assert_eq!(
        heap_threads(),
        ["concord-gc-0", "concord-gc-1", "concord-vm"]
    );
    drop(m);
    heap.finish().unwrap();

    // The workbench's `optimized` preset adds 000's dynamic GC-thread affinity, which samples
    // the run queues on a thread of its own.
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.heap_size = 16 << 20;
    config.gc_threads = 2;
    let lab = Heap::new(config).unwrap();
    let extra: Vec<String> = heap_threads()
        .into_iter()
        .filter(|t| !t.starts_with("concord-gc-") && t != "concord-vm")
        .collect();
    assert!(!extra.is_empty(), "optimized starts a sampler");
    drop(lab);
}
