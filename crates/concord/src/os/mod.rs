//! The operating-system room: virtual memory, futexes, thread affinity and scheduling, the CPUs
//! the process may use and how busy they are, and the two OS-side policies (where GC threads
//! run, how mutator threads are scheduled).
//!
//! Nothing here knows about the heap; `memory`, `parallel` and `runtime` call these thin, safe
//! wrappers instead of `libc` directly, so every system call the collector makes is in one place:
//!
//! * [`sched::current_tid`] is the one `gettid`;
//! * [`affinity`] is the one affinity API (by thread id, with conveniences for the caller);
//! * [`procfs`] holds the one reader of each kernel file (`/proc/stat`, a thread's `stat`, CPU
//!   lists);
//! * [`cpu::usable_cpu_count`] is the one count of usable CPUs (the affinity mask capped by the
//!   cgroup CPU quota);
//! * [`memory::memory_limit`] is the one figure of the memory the process can have (physical
//!   memory capped by the cgroup memory limit);
//! * [`rusage::ThreadUsage::current_thread`] is the one `getrusage` (a thread's CPU time, page
//!   faults and context switches).
//! * [`pipe`] holds the FIFO, unnamed-file and parent-death calls of the stall harnesses.
//! * [`process::send_signal`] is the one `kill` (a signal passed on to a child process).

pub mod affinity;
pub mod cpu;
pub mod fs;
pub mod futex;
pub mod gc_affinity;
pub mod memory;
pub mod mutator_sched;
pub mod numa;
pub mod periodic;
pub mod pipe;
pub mod policy;
pub mod process;
pub mod procfs;
pub mod rusage;
pub mod sched;
pub mod thp;
pub mod vm;

/// CPU ids must be below this (64 Ki CPUs; far above any machine Linux runs on today).
pub const CPU_ID_LIMIT: u32 = 1 << 16;

/// A named thread for tests that look at another thread of the process.
#[cfg(test)]
pub(crate) struct WaitingThread {
    /// Its kernel thread id.
    pub tid: i32,
    done: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

#[cfg(test)]
impl WaitingThread {
    /// Start thread `name`, which waits until [`WaitingThread::finish`].
    pub fn start(name: &str) -> Self {
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let (done, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                tid_tx.send(sched::current_tid()).unwrap();
                let _ = done_rx.recv();
            })
            .unwrap();
        let tid = tid_rx.recv().unwrap();
        Self { tid, done, thread }
    }

    /// Let the thread end, and wait until the kernel has forgotten it.
    pub fn finish(self) {
        self.done.send(()).unwrap();
        self.thread.join().unwrap();
        while procfs::thread_exists(self.tid) {
            std::thread::yield_now();
        }
    }
}
