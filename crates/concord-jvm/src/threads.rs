//! The JVM's threads as the agent sees them from `/proc/self/task`: the collector's worker
//! threads (created lazily under `UseDynamicNumberOfGCThreads`) with their `stat` files kept
//! open so the pause can read their CPUs cheaply, and every other thread for
//! `fifo-scope=all`.
//!
//! HotSpot names the workers by collector ([`GcWorkerKind`]); the kernel keeps the first 15
//! bytes of a name (`comm`), which is all `/proc` shows:
//!
//! | collector | workers (as in `jcmd PID Thread.print`) | `comm` |
//! | --- | --- | --- |
//! | Parallel, G1 | `GC Thread#N` (G1 also has `G1 Conc#N`, `G1 Refine#N`, which run between pauses and are not workers of the pause) | same |
//! | ZGC, JDK 17 | `ZWorker#N` | same |
//! | ZGC, JDK 21–22 with `-XX:-ZGenerational` | `XWorker#N` | same |
//! | generational ZGC (JDK 21+) | `ZWorkerYoung#N`, `ZWorkerOld#N` | same |
//! | Shenandoah | `Shenandoah GC Threads#N` | `Shenandoah GC T` (numbered here in creation order) |
//! | Serial, Epsilon | none: the VM thread collects | |
//!
//! A full scan walks `/proc/self/task` and reads each `comm` (130–300 µs, with spikes to
//! milliseconds), so it never runs inside a pause: the agent's helper thread rescans when the
//! process's thread count (one `fstat` of a kept-open `/proc/self/task`) has changed since the
//! last scan, and publishes the result for the next collection.

use std::collections::BTreeMap;
use std::sync::Arc;

use concord::os::procfs::{process_thread_ids, thread_name, OpenStatFile, ThreadCounter};

/// The name prefix of HotSpot's parallel GC workers (Parallel and G1).
pub const GC_WORKER_PREFIX: &str = "GC Thread#";

/// The name prefix of the agent's own threads (its helper and the load sampler), which are
/// never put on FIFO.
pub const AGENT_THREAD_PREFIX: &str = "concord-";

/// A family of GC worker threads, by the collector that names them so (see the module
/// documentation). Ordered as the agent lists workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum GcWorkerKind {
    /// `GC Thread#N`: Parallel and G1.
    ParallelOrG1,
    /// `ZWorker#N`: ZGC of JDK 17 to 20.
    Zgc,
    /// `XWorker#N`: non-generational ZGC of JDK 21 and 22.
    ZgcX,
    /// `ZWorkerYoung#N`: generational ZGC's young collection.
    ZgcYoung,
    /// `ZWorkerOld#N`: generational ZGC's old collection.
    ZgcOld,
    /// `Shenandoah GC Threads#N`, seen as `Shenandoah GC T`.
    Shenandoah,
}

/// The numbered name prefixes, longest first where one starts another.
const NUMBERED: [(&str, GcWorkerKind); 5] = [
    (GC_WORKER_PREFIX, GcWorkerKind::ParallelOrG1),
    ("ZWorkerYoung#", GcWorkerKind::ZgcYoung),
    ("ZWorkerOld#", GcWorkerKind::ZgcOld),
    ("ZWorker#", GcWorkerKind::Zgc),
    ("XWorker#", GcWorkerKind::ZgcX),
];

/// What `/proc` shows of `Shenandoah GC Threads#N` (a name cut to 15 bytes).
const SHENANDOAH_COMM: &str = "Shenandoah GC T";

impl GcWorkerKind {
    /// The workers' names, as HotSpot gives them.
    pub fn names(self) -> &'static str {
        match self {
            GcWorkerKind::ParallelOrG1 => "GC Thread#N",
            GcWorkerKind::Zgc => "ZWorker#N",
            GcWorkerKind::ZgcX => "XWorker#N",
            GcWorkerKind::ZgcYoung => "ZWorkerYoung#N",
            GcWorkerKind::ZgcOld => "ZWorkerOld#N",
            GcWorkerKind::Shenandoah => "Shenandoah GC Threads#N",
        }
    }

    /// The collector whose workers they are.
    pub fn collector(self) -> &'static str {
        match self {
            GcWorkerKind::ParallelOrG1 => "Parallel or G1",
            GcWorkerKind::Zgc | GcWorkerKind::ZgcX => "ZGC",
            GcWorkerKind::ZgcYoung | GcWorkerKind::ZgcOld => "generational ZGC",
            GcWorkerKind::Shenandoah => "Shenandoah",
        }
    }

    /// Whether the collector does most of its work concurrently, between the pauses the agent
    /// sees (ZGC, Shenandoah), rather than inside them (Parallel, G1's young and mixed
    /// collections).
    pub fn mostly_concurrent(self) -> bool {
        self != GcWorkerKind::ParallelOrG1
    }
}

/// The worker family and number of a GC worker's thread name (`comm`): `GC Thread#3` →
/// (ParallelOrG1, Some(3)); Shenandoah's cut names carry no number (`None`).
pub fn gc_worker(name: &str) -> Option<(GcWorkerKind, Option<usize>)> {
    if name == SHENANDOAH_COMM {
        return Some((GcWorkerKind::Shenandoah, None));
    }
    NUMBERED.iter().find_map(|&(prefix, kind)| {
        let n = name.strip_prefix(prefix)?.parse().ok()?;
        Some((kind, Some(n)))
    })
}

/// The worker number in a Parallel or G1 worker's thread name (`GC Thread#3` → 3).
pub fn gc_worker_index(name: &str) -> Option<usize> {
    match gc_worker(name)? {
        (GcWorkerKind::ParallelOrG1, n) => n,
        _ => None,
    }
}

/// One GC worker thread.
#[derive(Debug)]
pub struct GcThread {
    /// Kernel thread id.
    pub tid: i32,
    /// Its number among its family's workers (`N` of its name; Shenandoah's in creation order).
    pub index: usize,
    /// Its family.
    pub kind: GcWorkerKind,
    /// Its `stat` file, open.
    pub stat: OpenStatFile,
}

/// The GC workers known at the last scan, by worker number.
pub type GcThreads = Arc<Vec<GcThread>>;

/// What one scan of `/proc/self/task` found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Every thread id with its name (threads that ended during the scan are left out).
    pub names: BTreeMap<i32, String>,
    /// The process's thread count read just before the scan (for the change check).
    pub num_threads: Option<u64>,
}

impl Scan {
    /// Walk `/proc/self/task`, counting the threads first with `counter`.
    pub fn take(counter: Option<&ThreadCounter>) -> std::io::Result<Self> {
        let num_threads = counter.and_then(|c| c.count().ok());
        let mut names = BTreeMap::new();
        for tid in process_thread_ids()? {
            if let Ok(name) = thread_name(tid) {
                names.insert(tid, name);
            }
        }
        Ok(Self { names, num_threads })
    }

    /// The GC workers, `(tid, kind, index)`, ordered by family then worker number (the cut
    /// Shenandoah names are numbered in thread-id order, i.e. creation order).
    pub fn gc_workers(&self) -> Vec<(i32, GcWorkerKind, usize)> {
        let mut unnumbered = 0;
        let mut workers: Vec<(i32, GcWorkerKind, usize)> = self
            .names
            .iter()
            .filter_map(|(&tid, name)| {
                let (kind, number) = gc_worker(name)?;
                let index = number.unwrap_or_else(|| {
                    unnumbered += 1;
                    unnumbered - 1
                });
                Some((tid, kind, index))
            })
            .collect();
        workers.sort_by_key(|&(tid, kind, index)| (kind, index, tid));
        workers
    }

    /// The threads that are not the agent's own.
    pub fn jvm_threads(&self) -> impl Iterator<Item = (i32, &str)> {
        self.names
            .iter()
            .filter(|(_, name)| !name.starts_with(AGENT_THREAD_PREFIX))
            .map(|(&tid, name)| (tid, name.as_str()))
    }
}

/// Build the GC-thread set for `scan`, reusing the open files of `known` threads and opening
/// the new ones. Returns the set and the workers that are new, `(tid, position in the set)`.
pub fn refresh_gc_threads(known: &[GcThread], scan: &Scan) -> (Vec<GcThread>, Vec<(i32, usize)>) {
    let mut threads = Vec::new();
    let mut new = Vec::new();
    for (tid, kind, index) in scan.gc_workers() {
        let stat = match known.iter().find(|t| t.tid == tid) {
            Some(old) => old.stat.try_clone(),
            None => {
                new.push((tid, threads.len()));
                OpenStatFile::thread(tid)
            }
        };
        if let Ok(stat) = stat {
            threads.push(GcThread {
                tid,
                index,
                kind,
                stat,
            });
        }
    }
    (threads, new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gc_worker_names() {
        assert_eq!(gc_worker_index("GC Thread#0"), Some(0));
        assert_eq!(gc_worker_index("GC Thread#12"), Some(12));
        assert_eq!(gc_worker_index("GC Thread#"), None);
        assert_eq!(gc_worker_index("G1 Conc#0"), None);
        assert_eq!(gc_worker_index("VM Thread"), None);
        assert_eq!(gc_worker_index("ZWorker#1"), None);
    }

    #[test]
    fn every_collectors_worker_names() {
        use GcWorkerKind::*;
        assert_eq!(gc_worker("ZWorker#2"), Some((Zgc, Some(2))));
        assert_eq!(gc_worker("XWorker#0"), Some((ZgcX, Some(0))));
        assert_eq!(gc_worker("ZWorkerYoung#1"), Some((ZgcYoung, Some(1))));
        assert_eq!(gc_worker("ZWorkerOld#0"), Some((ZgcOld, Some(0))));
        assert_eq!(gc_worker("Shenandoah GC T"), Some((Shenandoah, None)));
        for not_a_worker in [
            "G1 Conc#0",
            "G1 Refine#0",
            "ZDriver",
            "ZDirector",
            "Shenandoah Cont",
        ] {
            assert_eq!(gc_worker(not_a_worker), None, "{not_a_worker}");
        }
        let scan = Scan {
            names: [
                (40, "Shenandoah GC T"),
                (30, "Shenandoah GC T"),
                (20, "ZWorkerOld#0"),
                (10, "ZWorkerYoung#0"),
            ]
            .into_iter()
            .map(|(t, n)| (t, n.to_string()))
            .collect(),
            num_threads: None,
        };
        assert_eq!(
            scan.gc_workers(),
            vec![
                (10, ZgcYoung, 0),
                (20, ZgcOld, 0),
                (30, Shenandoah, 0),
                (40, Shenandoah, 1)
            ]
        );
        assert!(Shenandoah.mostly_concurrent() && !ParallelOrG1.mostly_concurrent());
    }

    #[test]
    fn a_scan_finds_named_threads_and_keeps_their_files() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let worker = std::thread::Builder::new()
            .name("GC Thread#7".into())
            .spawn(move || {
                tx.send(concord::os::sched::current_tid()).unwrap();
                let _ = done_rx.recv();
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        let counter = ThreadCounter::open().unwrap();
        let scan = Scan::take(Some(&counter)).unwrap();
        assert!(scan.num_threads.unwrap() >= 2);
        assert_eq!(
            scan.gc_workers(),
            vec![(tid, GcWorkerKind::ParallelOrG1, 7)]
        );
        let (threads, new) = refresh_gc_threads(&[], &scan);
        assert_eq!(new, vec![(tid, 0)]);
        assert_eq!(threads[0].index, 7);
        assert!(threads[0].stat.processor().is_ok());
        let (again, new) = refresh_gc_threads(&threads, &scan);
        assert!(new.is_empty());
        assert_eq!(again.len(), 1);
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
