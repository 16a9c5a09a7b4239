//! The agent's state and what each JVMTI event does with it.
//!
//! Inside the pause (`GarbageCollectionStart`/`Finish`, on the VM thread at a safepoint) the
//! agent only reads each known GC worker's CPU from its kept-open `stat` file, runs 000
//! Algorithm 1 over them (`gc-affinity=dynamic`), reads the process's thread count, and hands
//! the record to its helper thread. Everything slow — walking `/proc/self/task` when the
//! thread count changed, pinning newly seen workers (`static`), putting threads on FIFO
//! (`fifo-scope=all`), writing records — runs on the helper thread (`concord-jvm`), outside
//! the pause. No JNI call is made from a GC callback.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use concord::os::affinity::set_thread_affinity;
use concord::os::cpu::{CpuView, LoadSampler, DEFAULT_SAMPLE_PERIOD};
use concord::os::fs::{write_atomic, StagedFile};
use concord::os::gc_affinity::dynamic::wake_cpu;
use concord::os::gc_affinity::{static_cpu, AffinityReport, GcAffinityController};
use concord::os::mutator_sched::{
    MutatorSchedReport, MutatorScheduler, DEFAULT_FIFO_CPU_THRESHOLD,
};
use concord::os::procfs::ThreadCounter;
use concord::os::rusage::thread_cpu_now;
use concord::os::sched::{current_tid, set_fifo, DEFAULT_FIFO_PRIORITY};
use concord::telemetry::nearest_rank;
use concord::telemetry::output::{OutputKind, RecordLines};

use crate::options::{AgentOptions, FifoScope, GcAffinity, MutatorSched};
use crate::report::{GcRecord, Outcome, Report, StaticBinding, ThreadCpu};
use crate::threads::{refresh_gc_threads, GcThread, GcThreads, GcWorkerKind, Scan};

/// Lock, ignoring poisoning: a panic elsewhere was already caught and reported, and the data
/// behind these locks stays consistent between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the JVM told us about itself.
#[derive(Clone, Debug, Default)]
pub struct VmInfo {
    /// `java.vm.version` (or `java.version`).
    pub jdk: String,
    /// `java.vm.name`.
    pub vm_name: String,
    /// `java.vm.vendor`.
    pub vm_vendor: String,
}

impl VmInfo {
    /// Whether the VM is HotSpot (Oracle's and OpenJDK builds name themselves so; OpenJ9 and
    /// others do not).
    pub fn is_hotspot(&self) -> bool {
        let name = &self.vm_name;
        name.contains("HotSpot")
            || (name.starts_with("OpenJDK")
                && (name.contains("Server VM")
                    || name.contains("Client VM")
                    || name.contains("Zero VM")))
    }
}

/// The collection in progress (between `GarbageCollectionStart` and `Finish`).
struct PendingGc {
    gc_id: u64,
    start_ns: u64,
    start_us: f64,
    start_cpu_us: f64,
    cpus: Vec<ThreadCpu>,
    affinity: AffinityReport,
}

/// Work for the helper thread.
enum Job {
    /// The thread count changed: walk `/proc/self/task` again.
    Rescan,
    /// Write one record line.
    Record(Box<GcRecord>),
    /// A collection ended: note where each GC worker went to sleep, for the next one.
    SampleCpus,
    /// Flush and end.
    Stop,
}

/// How often the helper looks for what a pause left while collections are frequent (within
/// [`HELPER_BUSY_WINDOW`] of the last one), so the next pause finds its CPU sample ready; and
/// the longest it waits, backing off, while none runs.
const HELPER_POLL_MIN: Duration = Duration::from_millis(1);
const HELPER_POLL_MAX: Duration = Duration::from_millis(64);
const HELPER_BUSY_WINDOW: Duration = Duration::from_millis(250);

/// State only the scanner touches (the helper thread, or `VMInit` before it).
#[derive(Default)]
struct ScanState {
    /// Threads already put on FIFO or refused (so each is tried once).
    fifo_tried: BTreeSet<i32>,
}

/// Timing of the callbacks, in microseconds.
#[derive(Default)]
struct CallbackTimes {
    /// Start plus finish callback, per collection.
    total_us: Vec<f64>,
    /// The start callback alone (where Algorithm 1 runs).
    start_us: Vec<f64>,
    /// The VM thread's CPU time in both callbacks.
    cpu_us: Vec<f64>,
}

/// The calling thread's CPU time, µs (0 if the clock cannot be read).
fn thread_cpu_us() -> f64 {
    thread_cpu_now().map_or(0.0, |d| d.as_secs_f64() * 1e6)
}

/// The callback budget of issue 12 (the longest acceptable time in the callbacks of one GC).
const CALLBACK_BUDGET_US: f64 = 200.0;

/// Of the collections whose callbacks took longer than the budget (wall µs in `wall`, the VM
/// thread's CPU µs in `cpu`, one each per collection): how many, and how many of those spent
/// less than half of it on the CPU (preempted, not working).
fn over_budget(wall: &[f64], cpu: &[f64]) -> (usize, usize) {
    let over: Vec<(f64, f64)> = wall
        .iter()
        .zip(cpu)
        .filter(|(w, _)| **w > CALLBACK_BUDGET_US)
        .map(|(w, c)| (*w, *c))
        .collect();
    let off_cpu = over.iter().filter(|(w, c)| *c < w / 2.0).count();
    (over.len(), off_cpu)
}

/// The agent, one per JVM.
pub struct Agent {
    options: AgentOptions,
    loaded_at: Instant,
    attached: bool,
    vm: VmInfo,
    allowed_cpus: Vec<u32>,
    /// False for a non-HotSpot VM: the agent counts GC events and does nothing else.
    active: bool,
    controller: Mutex<Option<GcAffinityController>>,
    /// 001's policies over the Java threads (`None` for `cfs`): `ThreadStart`/`ThreadEnd`
    /// attach and detach them, so Algorithm 2 sees exact lifetimes and Algorithm 1's profile
    /// gets each thread's CPU time.
    mutators: Option<MutatorScheduler>,
    /// Its report, kept at `finish`.
    mutators_report: Mutex<Option<MutatorSchedReport>>,
    /// `/proc/self/task` open, to see the thread count change inside the pause.
    thread_counter: Option<ThreadCounter>,
    gc_threads: Mutex<GcThreads>,
    /// What the pause leaves for the helper (records, CPU samples): taken by the helper when it
    /// polls, so a collection makes no system call to wake it (a futex wake inside the pause
    /// cost several microseconds).
    after_pause: Mutex<Vec<Job>>,
    /// When the last collection ended (ns since load), for the helper's polling rate.
    last_gc_end_ns: AtomicU64,
    /// Where each GC worker went to sleep after the last collection, read by the helper
    /// thread off the pause (a sleeping thread's last CPU does not change until it wakes), so
    /// the next start callback reads no `/proc` file; taken by that callback (`None`: read
    /// them in the pause, as before the first collection or after a rescan changed the set).
    sampled_cpus: Mutex<Option<Vec<ThreadCpu>>>,
    /// The thread count at the last scan (`u64::MAX`: none yet).
    scanned_num_threads: AtomicU64,
    current: Mutex<Option<PendingGc>>,
    times: Mutex<CallbackTimes>,
    gc_events: AtomicU64,
    affinity_moves: AtomicU64,
    affinity_failures: AtomicU64,
    rescans: AtomicU64,
    rescan_requested: AtomicBool,
    java_threads_started: AtomicU64,
    java_threads_ended: AtomicU64,
    seen_gc_threads: Mutex<BTreeSet<i32>>,
    /// The worker families seen (which collector this is).
    seen_gc_kinds: Mutex<BTreeSet<GcWorkerKind>>,
    static_bindings: Mutex<Vec<StaticBinding>>,
    fifo_threads: Mutex<BTreeSet<i32>>,
    fifo_refused: AtomicBool,
    scan_state: Mutex<ScanState>,
    notices: Mutex<Vec<String>>,
    helper: Mutex<Option<(Sender<Job>, JoinHandle<()>)>>,
    /// The records, staged beside their path (taken by the helper thread, which writes them).
    records_file: Mutex<Option<RecordLines>>,
    /// The report's file, staged beside its path until VM death.
    report_file: Mutex<Option<StagedFile>>,
    /// Outputs that could not be written completely: which, why, what was lost.
    output_failures: Mutex<Vec<String>>,
    /// Set after a caught panic: every callback returns at once.
    disabled: AtomicBool,
    finished: AtomicBool,
}

impl Agent {
    /// An agent for `options` in a VM described by `vm`. Starts the output files now, each
    /// staged beside its path (an existing file keeps its content until the new one is put in
    /// place at VM death), so that an unwritable path stops the JVM at start-up rather than
    /// losing the results at exit.
    pub fn new(options: AgentOptions, vm: VmInfo, attached: bool) -> Result<Self, String> {
        let cannot = |what: &str, path: &std::path::Path, e: std::io::Error| {
            format!("cannot create the {what} file '{}': {e}", path.display())
        };
        let records_file = options
            .records
            .as_deref()
            .map(|p| {
                RecordLines::create(OutputKind::GcRecords, p, None)
                    .map_err(|e| cannot("records", p, e))
            })
            .transpose()?;
        let report_file = options
            .report
            .as_deref()
            .map(|p| StagedFile::create(p).map_err(|e| cannot("report", p, e)))
            .transpose()?;
        let mut notices = Vec::new();
        let active = vm.is_hotspot();
        if !active {
            notices.push(format!(
                "not HotSpot ('{}'): the agent only counts GC events; gc-affinity and \
                 mutator-sched stay passive",
                vm.vm_name
            ));
        }
        let view =
            CpuView::detect().map_err(|e| format!("cannot read the CPU affinity mask: {e}"))?;
        let allowed_cpus = view.allowed.clone();
        if allowed_cpus.len() < 2 && options.gc_affinity != GcAffinity::None {
            notices.push(format!(
                "only CPU {:?} allowed: gc-affinity {} has nothing to balance",
                allowed_cpus, options.gc_affinity
            ));
        }
        let controller = match options.gc_affinity {
            GcAffinity::Dynamic if active => {
                let stat = options
                    .proc_stat
                    .clone()
                    .unwrap_or_else(|| PathBuf::from("/proc/stat"));
                let sampler = match LoadSampler::start_from(stat.clone(), DEFAULT_SAMPLE_PERIOD) {
                    Ok(s) => Some(s),
                    Err(e) if options.proc_stat.is_some() => {
                        return Err(format!(
                            "cannot read the proc-stat file '{}': {e}",
                            stat.display()
                        ))
                    }
                    Err(e) => {
                        notices.push(format!(
                            "cannot sample {} ({e}): dynamic affinity counts only the GC \
                             threads as load",
                            stat.display()
                        ));
                        None
                    }
                };
                Some(GcAffinityController::new(
                    GcAffinity::Dynamic,
                    allowed_cpus.clone(),
                    sampler,
                ))
            }
            _ => None,
        };
        let mutators = match options.mutator_sched {
            MutatorSched::Cfs => None,
            _ if !active => None,
            ref policy => Some(MutatorScheduler::new(
                policy.clone(),
                view.usable_cpus(),
                DEFAULT_FIFO_CPU_THRESHOLD,
            )),
        };
        let thread_counter = ThreadCounter::open()
            .map_err(|e| notices.push(format!("cannot open /proc/self/task: {e}")))
            .ok();
        if attached && options.mutator_sched != MutatorSched::Cfs {
            notices.push(format!(
                "attached to a running JVM: mutator-sched {} covers only the Java threads \
                 started after the attach{}",
                options.mutator_sched,
                match options.fifo_scope {
                    FifoScope::All =>
                        " (the JVM's threads running now are put on FIFO from \
                                       /proc/self/task)",
                    FifoScope::Mutators => "",
                }
            ));
        }
        Ok(Self {
            options,
            loaded_at: Instant::now(),
            attached,
            vm,
            allowed_cpus,
            active,
            controller: Mutex::new(controller),
            mutators,
            mutators_report: Mutex::new(None),
            thread_counter,
            gc_threads: Mutex::new(Arc::new(Vec::new())),
            sampled_cpus: Mutex::new(None),
            after_pause: Mutex::new(Vec::new()),
            last_gc_end_ns: AtomicU64::new(0),
            scanned_num_threads: AtomicU64::new(u64::MAX),
            current: Mutex::new(None),
            times: Mutex::default(),
            gc_events: AtomicU64::new(0),
            affinity_moves: AtomicU64::new(0),
            affinity_failures: AtomicU64::new(0),
            rescans: AtomicU64::new(0),
            rescan_requested: AtomicBool::new(false),
            java_threads_started: AtomicU64::new(0),
            java_threads_ended: AtomicU64::new(0),
            seen_gc_threads: Mutex::default(),
            seen_gc_kinds: Mutex::default(),
            static_bindings: Mutex::default(),
            fifo_threads: Mutex::default(),
            fifo_refused: AtomicBool::new(false),
            scan_state: Mutex::default(),
            notices: Mutex::new(notices),
            helper: Mutex::new(None),
            records_file: Mutex::new(records_file),
            report_file: Mutex::new(report_file),
            output_failures: Mutex::default(),
            disabled: AtomicBool::new(false),
            finished: AtomicBool::new(false),
        })
    }

    /// The options in force.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// Whether the JVM's own threads get FIFO (`fifo` with `fifo-scope=all`).
    fn wants_jvm_fifo(&self) -> bool {
        self.active
            && self.options.mutator_sched == MutatorSched::Fifo
            && self.options.fifo_scope == FifoScope::All
    }

    /// Whether `ThreadStart`/`ThreadEnd` are needed.
    pub fn wants_thread_events(&self) -> bool {
        self.mutators.is_some()
    }

    /// Add a notice (said once: an identical text is not repeated).
    pub fn notice(&self, text: String) {
        let mut notices = lock(&self.notices);
        if !notices.contains(&text) {
            notices.push(text);
        }
    }

    /// Run `body` as callback `name`: a panic is caught (never unwinds into the JVM), said
    /// once as a notice, and the agent goes passive.
    pub fn guarded(&self, name: &str, body: impl FnOnce(&Self)) {
        // Relaxed: a one-way flag; a callback that misses it just runs once more.
        if self.disabled.load(Ordering::Relaxed) || self.finished.load(Ordering::Relaxed) {
            return;
        }
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(self)));
        if let Err(payload) = caught {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            self.disabled.store(true, Ordering::Relaxed);
            self.notice(format!(
                "internal error in the {name} callback ({what}); the agent went passive"
            ));
        }
    }

    fn now_ns(&self) -> u64 {
        self.loaded_at.elapsed().as_nanos() as u64
    }

    /// Start the helper thread (at load).
    pub fn start_helper(&'static self) -> Result<(), String> {
        let (tx, rx) = channel();
        let records = lock(&self.records_file).take();
        let handle = std::thread::Builder::new()
            .name("concord-jvm".into())
            .spawn(move || self.helper_loop(rx, records))
            .map_err(|e| format!("cannot start the agent's helper thread: {e}"))?;
        *lock(&self.helper) = Some((tx, handle));
        Ok(())
    }

    /// Leave `job` for the helper's next poll (no system call: for the pause).
    fn leave(&self, job: Job) {
        lock(&self.after_pause).push(job);
    }

    fn send(&self, job: Job) {
        if let Some((tx, _)) = lock(&self.helper).as_ref() {
            let _ = tx.send(job);
        }
    }

    fn helper_loop(&self, rx: Receiver<Job>, mut records: Option<RecordLines>) {
        // Polls what the pauses left: soon after a collection, less often while none runs.
        let mut poll = HELPER_POLL_MIN;
        loop {
            let woken = match rx.recv_timeout(poll) {
                Ok(job) => Some(job),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Job::Stop),
            };
            let left = std::mem::take(&mut *lock(&self.after_pause));
            // Relaxed: a stale time only changes how soon the helper looks again.
            let since_gc = self
                .now_ns()
                .saturating_sub(self.last_gc_end_ns.load(Ordering::Relaxed));
            poll = if since_gc < HELPER_BUSY_WINDOW.as_nanos() as u64 {
                HELPER_POLL_MIN
            } else {
                (poll * 2).min(HELPER_POLL_MAX)
            };
            let stop = matches!(woken, Some(Job::Stop));
            for job in left.into_iter().chain(woken) {
                match job {
                    Job::Rescan => self.guarded("rescan", |a| a.rescan()),
                    Job::SampleCpus => self.guarded("CPU sample", |a| a.sample_cpus()),
                    Job::Record(record) => {
                        // Whole lines only: a write that fails part way is cut back, and the
                        // records from there on are counted as lost.
                        if let Some(lines) = records.as_mut() {
                            lines.write_line(record.gc_id, || {
                                serde_json::to_string(&record).map_err(std::io::Error::other)
                            });
                        }
                    }
                    Job::Stop => {}
                }
            }
            if stop {
                break;
            }
        }
        if let Some(lines) = records {
            if let Err(f) = lines.finish() {
                // Worded as before staging (`concord jvm bench` looks for this start).
                self.output_failed(format!(
                    "cannot write records to '{}': {}; {}",
                    f.path.display(),
                    f.error,
                    f.lost
                ));
            }
        }
    }

    /// An output could not be written completely: kept for the outcome and the report's
    /// notices.
    fn output_failed(&self, text: String) {
        self.notice(text.clone());
        lock(&self.output_failures).push(text);
    }

    /// Walk `/proc/self/task`: publish the GC workers for the next pause, pin new ones
    /// (`static`), put new threads on FIFO (`fifo-scope=all`).
    fn rescan(&self) {
        let mut scan_state = lock(&self.scan_state);
        self.rescan_requested.store(false, Ordering::Relaxed);
        let scan = match Scan::take(self.thread_counter.as_ref()) {
            Ok(s) => s,
            Err(e) => {
                self.notice(format!("cannot list /proc/self/task: {e}"));
                return;
            }
        };
        self.rescans.fetch_add(1, Ordering::Relaxed);
        // Relaxed: compared at the next GC finish; a stale value only causes one more rescan.
        self.scanned_num_threads
            .store(scan.num_threads.unwrap_or(u64::MAX), Ordering::Relaxed);
        let known = lock(&self.gc_threads).clone();
        let (threads, new) = refresh_gc_threads(&known, &scan);
        lock(&self.seen_gc_threads).extend(threads.iter().map(|t| t.tid));
        lock(&self.seen_gc_kinds).extend(threads.iter().map(|t| t.kind));
        if self.active && self.options.gc_affinity == GcAffinity::Static {
            self.bind_static(&new);
        }
        *lock(&self.gc_threads) = Arc::new(threads);
        // The set (and, after static pins, the masks) changed: sample for the next pause.
        self.sample_cpus();
        if self.wants_jvm_fifo() {
            for (tid, _) in scan.jvm_threads() {
                if scan_state.fifo_tried.insert(tid) {
                    self.make_fifo(tid);
                }
            }
        }
    }

    /// The CPU each known GC worker will wake on: its last CPU (`stat` field 39), or the one
    /// CPU its mask allows if that differs.
    fn read_cpus(threads: &[GcThread]) -> Vec<ThreadCpu> {
        threads
            .iter()
            .map(|t| ThreadCpu {
                tid: t.tid,
                index: t.index,
                cpu: t.stat.processor().ok().map(|last| wake_cpu(t.tid, last)),
            })
            .collect()
    }

    /// After a collection, off the pause: where the GC workers sleep until the next one.
    fn sample_cpus(&self) {
        let threads: GcThreads = lock(&self.gc_threads).clone();
        let cpus = Self::read_cpus(&threads);
        *lock(&self.sampled_cpus) = Some(cpus);
    }

    /// `static`: the `i`-th GC worker (`GC Thread#i` for Parallel and G1) to the `i`-th allowed
    /// CPU, once.
    fn bind_static(&self, new: &[(i32, usize)]) {
        if self.allowed_cpus.len() < 2 {
            return;
        }
        for &(tid, index) in new {
            let Some(cpu) = static_cpu(&self.allowed_cpus, index) else {
                continue;
            };
            match set_thread_affinity(tid, &[cpu]) {
                Ok(()) => {
                    self.affinity_moves.fetch_add(1, Ordering::Relaxed);
                    lock(&self.static_bindings).push(StaticBinding { tid, index, cpu });
                }
                Err(e) => {
                    self.affinity_failures.fetch_add(1, Ordering::Relaxed);
                    self.notice(format!(
                        "cannot pin GC worker {index} (thread {tid}) to CPU {cpu}: {e}"
                    ));
                }
            }
        }
    }

    /// Put thread `tid` on SCHED_FIFO; a refusal is said once and FIFO stops there.
    fn make_fifo(&self, tid: i32) {
        // Relaxed: a one-way flag.
        if self.fifo_refused.load(Ordering::Relaxed) {
            return;
        }
        match set_fifo(tid, DEFAULT_FIFO_PRIORITY) {
            Ok(()) => {
                lock(&self.fifo_threads).insert(tid);
            }
            Err(e) if e.is_no_such_thread() => {}
            Err(e) => {
                self.fifo_refused.store(true, Ordering::Relaxed);
                let hint = if e.is_permission_denied() {
                    " (needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least 1)"
                } else {
                    ""
                };
                self.notice(format!(
                    "SCHED_FIFO refused: {e}{hint}; mutator-sched stays passive (cfs) from here"
                ));
            }
        }
    }

    /// `VMInit` on the main thread (or the attach itself): first scan, FIFO for the thread
    /// that runs `main`.
    pub fn vm_started(&self, main_thread: bool) {
        if !self.active {
            return;
        }
        if let (true, Some(mutators)) = (main_thread, &self.mutators) {
            // Before the rescan, so that fifo-scope=all does not count it twice.
            let tid = current_tid();
            lock(&self.scan_state).fifo_tried.insert(tid);
            mutators.on_attach(tid);
        }
        self.rescan();
    }

    /// `ThreadStart`, on the new thread.
    pub fn thread_started(&self) {
        self.java_threads_started.fetch_add(1, Ordering::Relaxed);
        if let Some(mutators) = &self.mutators {
            let tid = current_tid();
            lock(&self.scan_state).fifo_tried.insert(tid);
            mutators.on_attach(tid);
        }
    }

    /// `ThreadEnd`, on the ending thread (still alive, so its CPU time can be read).
    pub fn thread_ended(&self) {
        self.java_threads_ended.fetch_add(1, Ordering::Relaxed);
        if let Some(mutators) = &self.mutators {
            mutators.on_detach(current_tid());
        }
    }

    /// `GarbageCollectionStart`, on the VM thread inside the pause.
    pub fn gc_started(&self) {
        let t0 = Instant::now();
        let c0 = thread_cpu_us();
        let start_ns = self.now_ns();
        let gc_id = self.gc_events.fetch_add(1, Ordering::Relaxed);
        let mut cpus = Vec::new();
        let mut affinity = AffinityReport::default();
        if self.active {
            let threads: GcThreads = lock(&self.gc_threads).clone();
            // The helper's sample after the previous collection, if it is of these workers;
            // else read them now (two system calls per worker inside the pause).
            cpus = match lock(&self.sampled_cpus).take() {
                Some(sampled)
                    if sampled.len() == threads.len()
                        && sampled
                            .iter()
                            .zip(threads.iter())
                            .all(|(c, t)| c.tid == t.tid) =>
                {
                    sampled
                }
                _ => Self::read_cpus(&threads),
            };
            if let Some(controller) = lock(&self.controller).as_ref() {
                if !threads.is_empty() {
                    let tids: Vec<i32> = cpus.iter().map(|c| c.tid).collect();
                    let last: Vec<Option<u32>> = cpus.iter().map(|c| c.cpu).collect();
                    affinity = controller.before_collection_at(&tids, &last, tids.len());
                    self.affinity_moves
                        .fetch_add(affinity.moves.len() as u64, Ordering::Relaxed);
                    if let Some(f) = affinity.failures.first() {
                        self.affinity_failures
                            .fetch_add(affinity.failures.len() as u64, Ordering::Relaxed);
                        self.notice(format!(
                            "cannot move GC thread {} to CPU {}: {}",
                            f.tid, f.cpu, f.error
                        ));
                    }
                }
            }
        }
        let start_us = t0.elapsed().as_secs_f64() * 1e6;
        let start_cpu_us = thread_cpu_us() - c0;
        *lock(&self.current) = Some(PendingGc {
            gc_id,
            start_ns,
            start_us,
            start_cpu_us,
            cpus,
            affinity,
        });
    }

    /// `GarbageCollectionFinish`, on the VM thread inside the pause.
    pub fn gc_finished(&self) {
        let t0 = Instant::now();
        let c0 = thread_cpu_us();
        let end_ns = self.now_ns();
        let Some(pending) = lock(&self.current).take() else {
            self.notice("a GarbageCollectionFinish without its Start".into());
            return;
        };
        // Workers are created lazily during collections: when the thread count moved, the
        // helper rescans after the pause (one pending request at a time).
        let mut rescan = false;
        if self.active {
            if let Some(n) = self.thread_counter.as_ref().and_then(|c| c.count().ok()) {
                // Relaxed: see `rescan`.
                if n != self.scanned_num_threads.load(Ordering::Relaxed)
                    && !self.rescan_requested.swap(true, Ordering::Relaxed)
                {
                    rescan = true;
                    self.send(Job::Rescan);
                }
            }
        }
        if self.active && !rescan {
            self.leave(Job::SampleCpus);
        }
        self.last_gc_end_ns.store(end_ns, Ordering::Relaxed);
        let finish_us = t0.elapsed().as_secs_f64() * 1e6;
        let callback_us = pending.start_us + finish_us;
        let callback_cpu_us = pending.start_cpu_us + (thread_cpu_us() - c0);
        {
            let mut times = lock(&self.times);
            times.total_us.push(callback_us);
            times.start_us.push(pending.start_us);
            times.cpu_us.push(callback_cpu_us);
        }
        if self.options.records.is_some() {
            self.leave(Job::Record(Box::new(GcRecord {
                gc_id: pending.gc_id,
                start_ns: pending.start_ns,
                end_ns,
                callback_us,
                start_callback_us: pending.start_us,
                finish_callback_us: finish_us,
                callback_cpu_us,
                gc_threads: pending.cpus,
                affinity: pending.affinity,
                rescan_requested: rescan,
            })));
        }
    }

    /// `VMDeath` (or `Agent_OnUnload` if no `VMDeath` came): stop the helper, flush the
    /// records, write the report. Runs once.
    pub fn finish(&self) {
        if self.finished.swap(true, Ordering::AcqRel) {
            return;
        }
        // Taken out first, so that the lock is not held while the helper finishes.
        let helper = lock(&self.helper).take();
        if let Some((tx, handle)) = helper {
            let _ = tx.send(Job::Stop);
            let _ = handle.join();
        }
        // Stops the load sampler's thread.
        lock(&self.controller).take();
        if let Some(mutators) = &self.mutators {
            // Writes a recorded profile (profile:PATH) and stops the adaptive sampler.
            *lock(&self.mutators_report) = Some(mutators.finish());
        }
        let report_file = lock(&self.report_file).take();
        let mut report_written = false;
        if let (Some(mut file), Some(path)) = (report_file, self.options.report.as_ref()) {
            let written = serde_json::to_vec_pretty(&self.report())
                .map_err(std::io::Error::other)
                .and_then(|mut bytes| {
                    bytes.push(b'\n');
                    file.append(&bytes)?;
                    file.commit()
                });
            report_written = written.is_ok();
            if let Err(e) = written {
                // The staged file is gone: an earlier file at the path keeps its content.
                self.output_failed(format!(
                    "cannot write the report '{}': {e}; the report of this run is lost",
                    path.display()
                ));
            }
        }
        let report = self.report();
        // The outputs' fate goes to the `concord jvm run` that asked for it, which says it;
        // else to the JVM's stderr, with the notices a report did not carry.
        let outcome = Outcome {
            passive: None,
            failures: lock(&self.output_failures).clone(),
        };
        let told = self
            .options
            .outcome
            .as_deref()
            .is_some_and(|path| write_outcome(path, &outcome).is_ok());
        for n in &report.notices {
            let failure = outcome.failures.contains(n);
            if failure && !told {
                eprintln!("concord-jvm: {n}");
            } else if !failure && !report_written {
                eprintln!("concord-jvm: notice: {n}");
            }
        }
    }

    /// The report as of now.
    pub fn report(&self) -> Report {
        let times = lock(&self.times);
        let total = times.total_us.clone();
        let start = times.start_us.clone();
        let cpu = times.cpu_us.clone();
        let (over, over_off_cpu) = over_budget(&times.total_us, &times.cpu_us);
        drop(times);
        let gc_events = self.gc_events.load(Ordering::Relaxed);
        let seen = lock(&self.seen_gc_threads).clone();
        let mut notices = lock(&self.notices).clone();
        let mutators = lock(&self.mutators_report)
            .clone()
            .or_else(|| self.mutators.as_ref().map(MutatorScheduler::report));
        if let Some(m) = &mutators {
            notices.extend(m.notices.iter().cloned());
        }
        let mutator_fifo = mutators.as_ref().map_or(0, |m| m.fifo_sets);
        let kinds = lock(&self.seen_gc_kinds).clone();
        if self.active && gc_events > 0 {
            if let Some(text) = collector_notice(&kinds, self.options.gc_affinity) {
                notices.push(text);
            }
        }
        Report {
            jdk: self.vm.jdk.clone(),
            vm_name: self.vm.vm_name.clone(),
            vm_vendor: self.vm.vm_vendor.clone(),
            hotspot: self.active,
            attached: self.attached,
            gc_affinity: self.options.gc_affinity.name().to_string(),
            mutator_sched: self.options.mutator_sched.to_string(),
            fifo_scope: self.options.fifo_scope.name().to_string(),
            allowed_cpus: self.allowed_cpus.clone(),
            gc_events,
            gc_threads: seen.len(),
            gc_worker_names: kinds.iter().map(|k| k.names().to_string()).collect(),
            gc_thread_ids: seen.into_iter().collect(),
            affinity_moves: self.affinity_moves.load(Ordering::Relaxed),
            affinity_failures: self.affinity_failures.load(Ordering::Relaxed),
            static_bindings: lock(&self.static_bindings).clone(),
            callback_us_p50: nearest_rank(&total, 50.0),
            callback_us_p99: nearest_rank(&total, 99.0),
            callback_us_max: nearest_rank(&total, 100.0),
            callback_cpu_us_p50: nearest_rank(&cpu, 50.0),
            callback_cpu_us_max: nearest_rank(&cpu, 100.0),
            callbacks_over_200us: over,
            callbacks_over_200us_off_cpu: over_off_cpu,
            start_callback_us_p50: nearest_rank(&start, 50.0),
            start_callback_us_max: nearest_rank(&start, 100.0),
            rescans: self.rescans.load(Ordering::Relaxed),
            java_threads_started: self.java_threads_started.load(Ordering::Relaxed),
            java_threads_ended: self.java_threads_ended.load(Ordering::Relaxed),
            fifo_threads: lock(&self.fifo_threads).len() + mutator_fifo as usize,
            mutator_sched_detail: mutators,
            notices,
        }
    }
}

/// Writes `outcome` to `path` (whole or not at all).
pub fn write_outcome(path: &std::path::Path, outcome: &Outcome) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(outcome).map_err(std::io::Error::other)?;
    write_atomic(path, &bytes)
}

/// What the user should know about the collector's workers (`kinds`, the families seen) and
/// what gc-affinity does with them; `None` when there is nothing to add (Parallel, G1).
fn collector_notice(kinds: &BTreeSet<GcWorkerKind>, gc_affinity: GcAffinity) -> Option<String> {
    if kinds.is_empty() {
        return Some(
            "no GC worker threads in this JVM (none named GC Thread#N as Parallel and G1 name \
             them, ZWorker#N, XWorker#N, ZWorkerYoung#N or ZWorkerOld#N as ZGC does, or \
             Shenandoah GC Threads#N): the collector works on the VM thread alone (Serial, as \
             -XX:+UseSerialGC or HotSpot's choice on a machine with one CPU or under 1792 MB, \
             or Epsilon), so gc-affinity has nothing to place and stayed passive"
                .into(),
        );
    }
    let concurrent: Vec<GcWorkerKind> = kinds
        .iter()
        .copied()
        .filter(|k| k.mostly_concurrent())
        .collect();
    let first = concurrent.first()?;
    if gc_affinity == GcAffinity::None {
        return None;
    }
    let names = concurrent
        .iter()
        .map(|k| k.names())
        .collect::<Vec<_>>()
        .join(", ");
    let what = match gc_affinity {
        GcAffinity::Static => format!(
            "gc-affinity static pins each of its workers ({names}) to one CPU when the agent \
             first sees it; the pin holds for their concurrent work too"
        ),
        _ => format!(
            "gc-affinity {gc_affinity} places its workers ({names}) at each pause the agent \
             sees (GarbageCollectionStart); they do most of their work concurrently with the \
             program, between those pauses, where the placement of the last pause holds while \
             the load changes"
        ),
    };
    Some(format!("{}: {what}", first.collector()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(name: &str) -> VmInfo {
        VmInfo {
            jdk: "17".into(),
            vm_name: name.into(),
            vm_vendor: "x".into(),
        }
    }

    #[test]
    fn hotspot_is_recognised_by_name() {
        assert!(vm("OpenJDK 64-Bit Server VM").is_hotspot());
        assert!(vm("Java HotSpot(TM) 64-Bit Server VM").is_hotspot());
        assert!(!vm("Eclipse OpenJ9 VM").is_hotspot());
        assert!(!vm("").is_hotspot());
    }

    #[test]
    fn callbacks_past_the_budget_are_counted_and_told_off_cpu() {
        // Wall and CPU µs per collection: within budget; over it on the CPU (the agent's
        // work); over it mostly off the CPU (preempted).
        let wall = [10.0, 250.0, 900.0, 201.0];
        let cpu = [9.0, 240.0, 30.0, 150.0];
        assert_eq!(over_budget(&wall, &cpu), (3, 1));
        assert_eq!(over_budget(&[], &[]), (0, 0));
    }

    #[test]
    fn a_passive_agent_counts_events_and_reports() {
        let agent = Agent::new(AgentOptions::default(), vm("Eclipse OpenJ9 VM"), false).unwrap();
        agent.gc_started();
        agent.gc_finished();
        let r = agent.report();
        assert_eq!(r.gc_events, 1);
        assert!(!r.hotspot);
        assert!(r.notices[0].contains("not HotSpot"), "{:?}", r.notices);
        assert!(r.callback_us_max >= r.callback_us_p50);
        // The callbacks' CPU time is part of their wall time, never more.
        assert!(r.callback_cpu_us_max <= r.callback_us_max + 1.0, "{r:?}");
        assert_eq!(r.callbacks_over_200us_off_cpu, 0);
    }

    #[test]
    fn a_panicking_callback_is_caught_and_said_once() {
        let agent = Agent::new(
            AgentOptions::default(),
            vm("OpenJDK 64-Bit Server VM"),
            false,
        )
        .unwrap();
        agent.guarded("test", |_| panic!("boom"));
        agent.guarded("test", |_| unreachable!("passive after the first panic"));
        let r = agent.report();
        assert_eq!(r.notices.len(), 1, "{:?}", r.notices);
        assert!(r.notices[0].contains("boom"));
    }

    #[test]
    fn unwritable_outputs_fail_at_load() {
        let options = AgentOptions::parse(Some("report=/nonexistent-dir/r.json")).unwrap();
        let e = Agent::new(options, vm("OpenJDK 64-Bit Server VM"), false)
            .err()
            .unwrap();
        assert!(e.contains("/nonexistent-dir/r.json"), "{e}");
    }
}
