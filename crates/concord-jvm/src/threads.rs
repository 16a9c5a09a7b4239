//! The JVM's threads as the agent sees them from `/proc/self/task`: HotSpot's GC workers
//! (named `GC Thread#N`, created lazily under `UseDynamicNumberOfGCThreads`) with their `stat`
//! files kept open so the pause can read their CPUs cheaply, and every other thread for
//! `fifo-scope=all`.
//!
//! A full scan walks `/proc/self/task` and reads each `comm` (130–300 µs, with spikes to
//! milliseconds), so it never runs inside a pause: the agent's helper thread rescans when the
//! process's thread count (one read of a kept-open `/proc/self/stat`) has changed since the
//! last scan, and publishes the result for the next collection.

use std::collections::BTreeMap;
use std::sync::Arc;

use concord::os::procfs::{process_thread_ids, thread_name, OpenStatFile};

/// The name prefix of HotSpot's parallel GC workers (Parallel and G1).
pub const GC_WORKER_PREFIX: &str = "GC Thread#";

/// The name prefix of the agent's own threads (its helper and the load sampler), which are
/// never put on FIFO.
pub const AGENT_THREAD_PREFIX: &str = "concord-";

/// The worker number in a GC worker's thread name (`GC Thread#3` → 3).
pub fn gc_worker_index(name: &str) -> Option<usize> {
    name.strip_prefix(GC_WORKER_PREFIX)?.parse().ok()
}

/// One GC worker thread.
#[derive(Debug)]
pub struct GcThread {
    /// Kernel thread id.
    pub tid: i32,
    /// Its number in `GC Thread#N`.
    pub index: usize,
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
    /// Walk `/proc/self/task`; `process` is the kept-open `/proc/self/stat`.
    pub fn take(process: Option<&OpenStatFile>) -> std::io::Result<Self> {
        let num_threads = process.and_then(|p| p.num_threads().ok());
        let mut names = BTreeMap::new();
        for tid in process_thread_ids()? {
            if let Ok(name) = thread_name(tid) {
                names.insert(tid, name);
            }
        }
        Ok(Self { names, num_threads })
    }

    /// The GC workers, `(tid, index)`, ordered by worker number.
    pub fn gc_workers(&self) -> Vec<(i32, usize)> {
        let mut workers: Vec<(i32, usize)> = self
            .names
            .iter()
            .filter_map(|(&tid, name)| gc_worker_index(name).map(|i| (tid, i)))
            .collect();
        workers.sort_by_key(|&(tid, index)| (index, tid));
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
/// the new ones. Returns the set and the workers that are new.
pub fn refresh_gc_threads(known: &[GcThread], scan: &Scan) -> (Vec<GcThread>, Vec<(i32, usize)>) {
    let mut threads = Vec::new();
    let mut new = Vec::new();
    for (tid, index) in scan.gc_workers() {
        let stat = match known.iter().find(|t| t.tid == tid) {
            Some(old) => old.stat.try_clone(),
            None => {
                new.push((tid, index));
                OpenStatFile::thread(tid)
            }
        };
        if let Ok(stat) = stat {
            threads.push(GcThread { tid, index, stat });
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
        let process = OpenStatFile::process().unwrap();
        let scan = Scan::take(Some(&process)).unwrap();
        assert!(scan.num_threads.unwrap() >= 2);
        assert_eq!(scan.gc_workers(), vec![(tid, 7)]);
        let (threads, new) = refresh_gc_threads(&[], &scan);
        assert_eq!(new, vec![(tid, 7)]);
        assert!(threads[0].stat.processor().is_ok());
        let (again, new) = refresh_gc_threads(&threads, &scan);
        assert!(new.is_empty());
        assert_eq!(again.len(), 1);
        done_tx.send(()).unwrap();
        worker.join().unwrap();
    }
}
