//! The whole collector under OS restrictions: a one-CPU affinity mask with static and dynamic
//! GC affinity, and SCHED_FIFO refused for lack of privilege. Each must give a clear message
//! where one is due and a collector that still verifies.

mod common;

use concord::os::affinity::{current_thread_affinity, set_current_thread_affinity};
use concord::os::policy::{GcAffinity, MutatorSched};
use concord::{CollectionKind, GcConfig, Heap, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);

/// The tests look at every GC worker of the process, so they must not overlap.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn config() -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 16 << 20;
    c.gc_threads = 3;
    c.verify = true;
    c
}

/// Allocate a kept list and garbage, with young and full collections; returns the list sum.
fn churn(heap: &Heap) -> u64 {
    let mut m = heap.attach();
    let keep = m.alloc_ref_array(256).unwrap();
    for i in 0..100_000usize {
        m.scope(|m| {
            let n = m.alloc(NODE).unwrap();
            m.write_u64(n, 0, i as u64);
            if i % 389 == 0 {
                m.set_ref(keep, i % 256, Some(n));
            }
        });
    }
    m.collect(CollectionKind::Young);
    m.collect(CollectionKind::Full);
    let mut sum = 0;
    for slot in 0..256 {
        m.scope(|m| {
            if let Some(n) = m.get_ref(keep, slot) {
                sum += m.read_u64(n, 0);
            }
        });
    }
    sum
}

/// The sum `churn` must find: the last value stored in each slot.
fn expected_sum() -> u64 {
    let mut slots = [None; 256];
    for i in (0..100_000usize).filter(|i| i % 389 == 0) {
        slots[i % 256] = Some(i as u64);
    }
    slots.iter().flatten().sum()
}

/// `Cpus_allowed_list` of every GC worker thread of this process (named `concord-gc-N`).
fn gc_worker_cpus_allowed() -> Vec<String> {
    let mut out = Vec::new();
    for tid in concord::os::procfs::process_thread_ids().unwrap() {
        let dir = std::path::PathBuf::from(format!("/proc/self/task/{tid}"));
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim().starts_with("concord-gc") {
            let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
            if let Some(line) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
                out.push(line["Cpus_allowed_list:".len()..].trim().to_string());
            }
        }
    }
    out
}

#[test]
fn one_usable_cpu_with_static_and_dynamic_affinity() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    std::thread::spawn(|| {
        let all = current_thread_affinity().unwrap();
        let cpu = all[0];
        // The heap's CPU view is read on the creating thread: narrow it to one CPU.
        set_current_thread_affinity(&[cpu]).unwrap();
        for kind in [GcAffinity::Static, GcAffinity::Dynamic] {
            let mut c = config();
            c.gc_affinity = kind;
            c.dynamic_gc_threads = false;
            let heap = Heap::new(c).unwrap();
            assert_eq!(churn(&heap), expected_sum(), "{kind}");
            // Every GC worker may run only on the one CPU (inherited, and static binds there).
            let masks = gc_worker_cpus_allowed();
            assert!(masks.len() >= 3, "{kind}: {masks:?}");
            assert!(
                masks.iter().all(|m| *m == cpu.to_string()),
                "{kind}: {masks:?}"
            );
            let stats = heap.stats();
            assert_eq!(stats.verified(), Some(true), "{kind}");
            assert!(stats.count(CollectionKind::Full) >= 1);
            // Nothing to move to on one CPU, and nothing failed.
            assert_eq!(stats.affinity_moves(), 0, "{kind}");
            for r in &stats.records {
                if let Some(a) = &r.affinity {
                    assert!(a.failures.is_empty(), "{kind}: {a:?}");
                }
            }
        }
        set_current_thread_affinity(&all).unwrap();
    })
    .join()
    .unwrap();
}

/// Runs in a child process of its own: it sets RLIMIT_RTPRIO for the whole process.
#[test]
fn refused_fifo_gives_one_notice_and_a_working_collector() {
    let _serial = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    common::in_child_process(
        "refused_fifo_gives_one_notice_and_a_working_collector",
        || {
            std::thread::spawn(refused_fifo_in_this_process)
                .join()
                .unwrap()
        },
    );
}

/// The body of [`refused_fifo_gives_one_notice_and_a_working_collector`], on a thread that
/// may not use SCHED_FIFO.
fn refused_fifo_in_this_process() {
    common::forbid_fifo_on_this_thread();
    let mut c = config();
    c.mutator_sched = MutatorSched::Fifo;
    c.fifo_cpu_threshold = 0;
    let heap = Heap::new(c).unwrap();
    assert_eq!(churn(&heap), expected_sum());
    let stats = heap.stats();
    assert_eq!(stats.verified(), Some(true));
    let report = stats
        .mutator_sched
        .expect("the heap reports its scheduling");
    assert!(report.fifo_denied, "{report:?}");
    assert_eq!(report.applied.to_string(), "cfs");
    let fallbacks: Vec<&String> = report
        .notices
        .iter()
        .filter(|n| n.contains("falling back to CFS"))
        .collect();
    assert_eq!(fallbacks.len(), 1, "{:?}", report.notices);
    assert!(fallbacks[0].contains("CAP_SYS_NICE"), "{fallbacks:?}");
}
