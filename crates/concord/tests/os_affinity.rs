//! GC thread placement against the real kernel: static binding, a forced dynamic move, a
//! restricted affinity mask and a refused placement, checked through
//! `/proc/self/task/<tid>/status`.

use std::path::Path;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use concord::config::GcThreads;
mod common;

use concord::os::affinity::{
    current_thread_affinity, set_current_thread_affinity, thread_affinity,
};
use concord::os::cpu::{CpuView, LoadSampler, LoadSnapshot};
use concord::os::gc_affinity::{GcAffinityController, WorkerMove};
use concord::os::policy::GcAffinity;
use concord::os::procfs::parse_cpu_list;
use concord::os::sched::current_tid;
use concord::{CollectionKind, CollectionRecord, GcCause, GcConfig, Heap, Preset};

/// `Cpus_allowed_list` of thread `tid` of this process.
fn cpus_allowed(tid: i32) -> Vec<u32> {
    let status = std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).unwrap();
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list in status");
    parse_cpu_list(line).unwrap()
}

/// Threads that park until dropped, standing in for GC workers.
struct Parked {
    tids: Vec<i32>,
    release: Option<mpsc::Sender<()>>,
    threads: Vec<JoinHandle<()>>,
}

impl Parked {
    /// Start `n` threads; thread `i` first runs `setup(i)` on itself.
    fn start(n: usize, setup: impl Fn(usize) + Send + Sync + 'static) -> Self {
        let setup = Arc::new(setup);
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(std::sync::Mutex::new(release_rx));
        let (tid_tx, tid_rx) = mpsc::channel();
        let threads = (0..n)
            .map(|i| {
                let setup = setup.clone();
                let tid_tx = tid_tx.clone();
                let release_rx = release_rx.clone();
                std::thread::spawn(move || {
                    setup(i);
                    tid_tx.send((i, current_tid())).unwrap();
                    // Sleep until released (the sender is dropped): like a parked GC worker.
                    let _ = release_rx.lock().unwrap().recv();
                })
            })
            .collect();
        let mut tids = vec![0; n];
        for _ in 0..n {
            let (i, tid) = tid_rx.recv().unwrap();
            tids[i] = tid;
        }
        Self {
            tids,
            release: Some(release_tx),
            threads,
        }
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        self.release.take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn nonexistent_cpu() -> u32 {
    (4000..)
        .find(|c| !Path::new(&format!("/sys/devices/system/cpu/cpu{c}")).exists())
        .unwrap()
}

/// The usable CPUs of this process, at least two: the tests that need two are ignored where
/// the build saw one (see `build.rs`), and fail here if the machine has fewer than it saw.
fn two_or_more_cpus() -> CpuView {
    let view = CpuView::detect().unwrap();
    assert!(
        view.allowed.len() >= 2,
        "this test needs two usable CPUs and this process may use {:?}; it is ignored where \
         the build sees one CPU (rebuild here, or run it where there are two)",
        view.allowed
    );
    view
}

#[test]
#[cfg_attr(
    concord_one_usable_cpu,
    ignore = "needs two usable CPUs (static binding does nothing on one)"
)]
fn static_binding_pins_worker_i_to_the_i_th_cpu() {
    let view = two_or_more_cpus();
    let allowed = view.allowed.clone();
    let ctrl = Arc::new(GcAffinityController::new(
        GcAffinity::Static,
        allowed.clone(),
        None,
    ));
    let n = allowed.len() + 1;
    let c = ctrl.clone();
    let workers = Parked::start(n, move |i| {
        let bound = c.bind_at_start(i).unwrap();
        assert_eq!(bound, c.static_cpu(i));
    });
    for (i, &tid) in workers.tids.iter().enumerate() {
        assert_eq!(
            cpus_allowed(tid),
            vec![allowed[i % allowed.len()]],
            "worker {i}"
        );
        assert_eq!(thread_affinity(tid).unwrap(), cpus_allowed(tid));
    }
    // Static does not rebalance.
    assert!(ctrl.before_collection(&workers.tids, n).is_quiet());
}

#[test]
#[cfg_attr(
    concord_one_usable_cpu,
    ignore = "needs two usable CPUs (nothing to move to on one)"
)]
fn forced_dynamic_move_goes_where_decided() {
    let view = two_or_more_cpus();
    let (a, b) = (view.allowed[0], view.allowed[1]);
    // Two workers stacked on CPU a; nothing else counts (busy fractions forced to 0), so the
    // loads are [2, 0]: a is high, b is low, and worker 0 moves; worker 1, deciding after it,
    // finds [1, 1] and stays.
    let workers = Parked::start(2, move |_| set_current_thread_affinity(&[a]).unwrap());
    let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![a, b], None).with_seed(42);
    let idle = LoadSnapshot::new(vec![0.0; b as usize + 1], Duration::from_millis(100));
    let report = ctrl.rebalance_with(&workers.tids, 2, Some(&idle));
    assert_eq!(
        report.moves,
        vec![WorkerMove {
            worker: 0,
            tid: workers.tids[0],
            from: a,
            to: b
        }],
        "{report:?}"
    );
    assert!(report.failures.is_empty());
    assert_eq!(report.high_cpus, vec![a]);
    assert_eq!(report.low_cpus, vec![b]);
    assert_eq!(cpus_allowed(workers.tids[0]), vec![b]);
    assert_eq!(cpus_allowed(workers.tids[1]), vec![a]);

    // Now one worker each: balanced, nothing moves.
    let again = ctrl.rebalance_with(&workers.tids, 2, Some(&idle));
    assert!(again.is_quiet(), "{again:?}");
    assert_eq!(again.unknown_cpu_workers, Vec::<usize>::new());
}

#[test]
#[cfg_attr(
    concord_one_usable_cpu,
    ignore = "needs two usable CPUs (nothing to move to on one)"
)]
fn workers_sharing_a_cpu_with_a_busy_loop_move_off_it() {
    use concord::os::cpu::runnable::{count_runnable, scan_threads};
    use std::sync::atomic::{AtomicBool, Ordering};
    let view = two_or_more_cpus();
    let (a, b) = (view.allowed[0], view.allowed[1]);
    let stop = Arc::new(AtomicBool::new(false));
    let spin = stop.clone();
    let (tid_tx, tid_rx) = mpsc::channel();
    let busy = std::thread::spawn(move || {
        set_current_thread_affinity(&[a]).unwrap();
        tid_tx.send(concord::os::sched::current_tid()).unwrap();
        while !spin.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    let busy_tid = tid_rx.recv().unwrap();
    let workers = Parked::start(2, move |_| set_current_thread_affinity(&[a]).unwrap());
    // The busy loop counted as the sampler counts runnable threads, from a real `/proc` scan;
    // every other thread (other tests', other processes') is left out so that what else runs
    // cannot decide the test. Wait for the scan to see it runnable on `a`.
    let runnable = loop {
        let threads = scan_threads(Path::new("/proc"))
            .unwrap()
            .into_iter()
            .filter(|&(tid, _, _)| tid == busy_tid);
        let counts = count_runnable(threads, &Default::default());
        if counts.get(a as usize) == Some(&1.0) {
            break counts;
        }
        std::thread::yield_now();
    };
    // Loads: busy loop + 2 sleeping workers on `a` = 3, 0 on `b`; avg 1.5: `a` high (≥ 3),
    // `b` low. Worker 0 moves to `b`; then 2, 1 and worker 1 stays (2 < 3).
    let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![a, b], None).with_seed(5);
    let snap = LoadSnapshot::from_loads(runnable, Duration::from_millis(100));
    let report = ctrl.rebalance_with(&workers.tids, 2, Some(&snap));
    stop.store(true, Ordering::Relaxed);
    busy.join().unwrap();
    assert_eq!(
        report.moves,
        vec![WorkerMove {
            worker: 0,
            tid: workers.tids[0],
            from: a,
            to: b
        }],
        "{report:?}"
    );
    assert_eq!((report.high_cpus, report.low_cpus), (vec![a], vec![b]));
    assert_eq!(cpus_allowed(workers.tids[0]), vec![b]);
    assert_eq!(cpus_allowed(workers.tids[1]), vec![a]);
}

/// A load sampler that has published its first snapshot.
fn sampler_with_a_snapshot(period: Duration) -> LoadSampler {
    let sampler = LoadSampler::start(period).unwrap();
    // A hang guard, not a timing: the first snapshot comes one period after the start.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sampler.latest().is_none() {
        assert!(std::time::Instant::now() < deadline, "no load snapshot");
        std::thread::sleep(period);
    }
    sampler
}

#[test]
#[cfg_attr(
    concord_one_usable_cpu,
    ignore = "needs two usable CPUs (on one the controller never looks at the load)"
)]
fn the_sampler_path_moves_only_where_it_reports() {
    let view = two_or_more_cpus();
    let home = view.allowed[0];
    let workers = Parked::start(2, move |_| set_current_thread_affinity(&[home]).unwrap());
    // Whatever the load says, every move it reports happened, and none failed.
    let sampled = GcAffinityController::new(
        GcAffinity::Dynamic,
        view.allowed.clone(),
        Some(sampler_with_a_snapshot(Duration::from_millis(10))),
    );
    let r = sampled.before_collection(&workers.tids, 2);
    assert!(r.failures.is_empty(), "{r:?}");
    assert!(r.load_age_ms.is_some());
    for m in &r.moves {
        assert_eq!(cpus_allowed(m.tid), vec![m.to]);
    }
    serde_json::to_string(&r).unwrap();
}

#[test]
fn a_one_cpu_mask_gives_no_moves_and_no_panic() {
    std::thread::spawn(|| {
        let first = current_thread_affinity().unwrap()[0];
        set_current_thread_affinity(&[first]).unwrap();
        let view = CpuView::detect().unwrap();
        assert_eq!(view.allowed, vec![first]);
        assert_eq!(view.usable_cpus(), 1);
        // Workers started from here inherit the narrow mask.
        let workers = Parked::start(3, |_| {});
        for &tid in &workers.tids {
            assert_eq!(cpus_allowed(tid), vec![first]);
        }
        for kind in GcAffinity::ALL {
            // With a load snapshot, so that the sampled path is the one taken.
            let ctrl = GcAffinityController::new(
                *kind,
                view.allowed.clone(),
                Some(sampler_with_a_snapshot(Duration::from_millis(5))),
            );
            assert_eq!(ctrl.bind_at_start(0), Ok(None), "{kind}");
            let r = ctrl.before_collection(&workers.tids, 3);
            assert!(r.is_quiet(), "{kind}: {r:?}");
            let forced = LoadSnapshot::new(vec![1.0; first as usize + 1], Duration::ZERO);
            assert!(ctrl
                .rebalance_with(&workers.tids, 3, Some(&forced))
                .is_quiet());
            assert_eq!(ctrl.failures_total(), 0);
        }
        for &tid in &workers.tids {
            assert_eq!(cpus_allowed(tid), vec![first]);
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_refused_target_is_reported_not_fatal() {
    let home = current_thread_affinity().unwrap()[0];
    let bogus = nonexistent_cpu();
    let workers = Parked::start(1, move |_| set_current_thread_affinity(&[home]).unwrap());
    let tid = workers.tids[0];
    // Loads [1, 0]: `home` is high, `bogus` is low, so the worker is sent to a CPU the kernel
    // does not have.
    let ctrl = GcAffinityController::new(GcAffinity::Dynamic, vec![home, bogus], None);
    let report = ctrl.rebalance_with(&workers.tids, 1, None);
    assert!(report.moves.is_empty(), "{report:?}");
    assert_eq!(report.failures.len(), 1, "{report:?}");
    let f = &report.failures[0];
    assert_eq!((f.worker, f.tid, f.cpu), (0, tid, bogus));
    assert_eq!(f.errno, Some(libc::EINVAL), "{f:?}");
    assert!(ctrl.has_warned());
    assert_eq!(cpus_allowed(tid), vec![home]);
    // It keeps failing quietly (counted, printed once) and keeps going.
    let report = ctrl.rebalance_with(&workers.tids, 1, None);
    assert_eq!(report.failures.len(), 1);
    assert_eq!(ctrl.failures_total(), 2);

    // Static binding to a CPU that does not exist: reported on the worker, no panic.
    let stat = Arc::new(GcAffinityController::new(
        GcAffinity::Static,
        vec![bogus, bogus + 1],
        None,
    ));
    let s = stat.clone();
    let (tx, rx) = mpsc::channel();
    let w = Parked::start(1, move |i| tx.send(s.bind_at_start(i)).unwrap());
    let failure = rx.recv().unwrap().unwrap_err();
    assert_eq!(failure.cpu, bogus);
    assert_eq!(failure.errno, Some(libc::EINVAL));
    assert_eq!(stat.failures_total(), 1);
    assert!(!cpus_allowed(w.tids[0]).contains(&bogus));
}

/// The heap makes 000 Algorithm 1's decision at the start of every parallel collection, from
/// the very first one: each worker's CPU is known then (the pool samples it when the worker
/// starts), and a scavenge followed by a full collection in one stop-the-world operation gets a
/// decision each.
#[test]
#[cfg_attr(
    concord_one_usable_cpu,
    ignore = "needs two usable CPUs (on one, dynamic GC affinity has nothing to decide)"
)]
fn the_heap_decides_before_every_collection_from_the_first() {
    let allowed = two_or_more_cpus().allowed;
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.gc_affinity = GcAffinity::Dynamic;
    c.heap_size = 4 << 20;
    c.set_gc_threads(GcThreads::Fixed(3));
    // Everything live in young is promoted, so a full old generation fails the promotion.
    c.max_tenuring_threshold = 0;
    c.initial_tenuring_threshold = 0;
    c.verify = true;
    let sizes = c.generation_sizes();
    let heap = Heap::new(c).unwrap();
    let mut m = heap.attach();
    m.collect(CollectionKind::Young);
    common::fill_for_promotion_failure(&mut m, sizes);
    m.collect(CollectionKind::Young); // promotion fails; a full collection follows at once
    drop(m);
    let stats = heap.stats();
    assert_eq!(stats.verified(), Some(true), "{:?}", stats.verify_failures);
    let decided = |r: &CollectionRecord| {
        let a = r
            .affinity
            .as_ref()
            .unwrap_or_else(|| panic!("collection {} ({:?}) made no decision", r.id, r.kind));
        assert!(
            a.unknown_cpu_workers.is_empty(),
            "collection {}: {a:?}",
            r.id
        );
        // Every worker counts one on a CPU of the allowed set: the average over the allowed
        // CPUs carries all three.
        assert!(
            a.average_load * allowed.len() as f64 >= 3.0 - 1e-9,
            "collection {}: {a:?}",
            r.id
        );
    };
    let first = &stats.records[0];
    assert_eq!(first.kind, CollectionKind::Young);
    decided(first);
    let failed = stats
        .records
        .iter()
        .position(|r| r.promotion_failed)
        .expect("the scavenge was meant to fail promotion");
    let full = &stats.records[failed + 1];
    assert_eq!(
        (full.kind, full.cause),
        (CollectionKind::Full, GcCause::PromotionFailed)
    );
    decided(&stats.records[failed]);
    decided(full);
    assert!(stats.records.iter().all(|r| r.affinity.is_some()));
}
