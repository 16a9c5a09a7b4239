//! The first-touch model against the kernel: a real heap (not pretouched, one GC worker)
//! records its collections, the simulator replays them with a page fault costing 1 µs and
//! nothing else different, and the extra simulated time per collection, in pages, is compared
//! with the minor faults the kernel counted during the real pause.

use std::sync::Arc;

use concord::os::numa::NumaLayout;
use concord::os::policy::GcAffinity;
use concord::parallel::{ParkingKind, PhasePolicy};
use concord::{CollectionKind, GcConfig, Heap, ObjectType, Preset};
use concord_sim::exec::Costs;
use concord_sim::machine::Machine;
use concord_sim::replay::driver::{self, SchedModel, SimSetup};
use concord_sim::replay::load_trace;

const NODE: ObjectType = ObjectType::fixed(2, 48);

fn setup(first_touch: bool) -> SimSetup {
    SimSetup {
        machine: Machine::from_flags(None, Some("2"), None, None).unwrap(),
        sched: SchedModel::Cfs,
        costs: Costs {
            page_fault: 1_000,
            ..Costs::DEFAULT
        },
        seed: 1,
        policy: PhasePolicy::OPTIMIZED,
        parking: ParkingKind::Futex,
        gc_threads: 1,
        mutators: 0,
        load: None,
        gc_affinity: GcAffinity::None,
        numa: NumaLayout::Off,
        mutator_ns: 1_000,
        dynamic_gc_threads: None,
        pin_start: false,
        vm_thread_cpu: Some(1),
        first_touch,
    }
}

/// The program: a list that grows by 2 MiB between collections, so that each collection
/// copies more than the one before, into survivor pages not written yet, and promotes the
/// oldest; its collections' records.
fn run(trace: Option<std::path::PathBuf>) -> Vec<concord::CollectionRecord> {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 96 << 20;
    c.young_size = Some(48 << 20);
    c.gc_threads = 1;
    c.gc_trace = trace;
    let heap = Heap::new(c).unwrap();
    {
        let mut m = heap.attach();
        let mut head = m.alloc(NODE).unwrap();
        for _ in 0..6 {
            for _ in 0..(2 << 20) / 72 {
                let n = m.alloc(NODE).unwrap();
                m.set_ref(n, 0, Some(head));
                head = n;
            }
            m.collect(CollectionKind::Young);
        }
        std::hint::black_box(head);
    }
    heap.finish().unwrap().records
}

#[test]
fn the_simulated_first_touch_faults_are_the_kernels() {
    let dir = std::env::temp_dir().join(format!("concord-first-touch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.trace");
    // Recorded once, and run once more untraced for the faults: the trace's buffers fault
    // pages of their own.
    run(Some(path.clone()));
    let records = run(None);
    let trace = load_trace(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(trace.collections.len(), records.len());
    let collections = Arc::new(trace.collections);
    let with = driver::simulate(collections.clone(), &setup(true)).unwrap();
    let without = driver::simulate(collections, &setup(false)).unwrap();
    let mut compared = 0;
    for ((w, wo), r) in with
        .collections
        .iter()
        .zip(&without.collections)
        .zip(&records)
    {
        let pause = |c: &concord_sim::replay::output::SimulatedCollection| c.end_ns - c.start_ns;
        let pages = (pause(w) - pause(wo)) / 1_000;
        let real = r.pause_minor_faults;
        eprintln!(
            "GC({}): {} bytes copied, simulated {pages} first-touch pages, the kernel counted \
             {real} minor faults in the pause",
            r.id, r.bytes_copied
        );
        if real >= 100 {
            compared += 1;
            let ratio = pages as f64 / real as f64;
            assert!(
                (0.9..=1.1).contains(&ratio),
                "GC({}): {pages} simulated pages against {real} real faults",
                r.id
            );
        }
    }
    assert!(
        compared >= 3,
        "only {compared} collections faulted pages in"
    );
}
