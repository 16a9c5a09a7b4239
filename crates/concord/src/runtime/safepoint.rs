//! Stopping the world: mutators count themselves in or out, the VM thread waits for zero.
//!
//! A mutator is *running* (it may touch the heap) or *stopped* (parked at a safepoint, waiting
//! for a collection it requested, or in a blocking region). `running` counts running mutators;
//! the VM thread raises `active` and waits until `running == 0`. Every transition happens under
//! one mutex, so the VM can never miss a mutator and a mutator can never resume mid-collection.
//! The `requested` flag duplicates `active` so the poll fast path is one relaxed load; it is
//! only a hint (every access to it is Relaxed), because whatever a mutator does about it
//! happens under the mutex.
//!
//! Each attached mutator's state (running, stopped, waiting for an allocation) is kept beside
//! the count, for two diagnostics: a thread that would wait for its own running mutator
//! (`Heap::collect` on an attached thread, a second `attach` on it) panics at once, and when
//! the world takes longer than `safepoint-timeout` to stop, the VM thread names the mutators
//! still running on stderr (HotSpot's `-XX:+SafepointTimeout`), once per safepoint.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::heap::GcError;
use super::mutator::MutatorShared;
use crate::telemetry::CollectionKind;

/// What a VM operation is asked to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// A mutator could not allocate `bytes`; `old` if the object must go to the old generation.
    /// The VM thread allocates it inside the safepoint and reports the address under `ticket`.
    Allocation {
        bytes: usize,
        old: bool,
        ticket: u64,
        /// The node whose eden fragment serves a young allocation (`fragmented`; else 0).
        node: usize,
    },
    /// An explicit collection.
    Collect(CollectionKind),
    /// Verify the heap without collecting.
    Verify,
}

/// Where an attached mutator is in the safepoint protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MutatorState {
    /// Counted in `running`: it may touch the heap, and a safepoint waits for it.
    Running,
    /// Parked at a safepoint, waiting for a collection it asked for, or in a blocking region.
    Stopped,
    /// Waiting for the allocation of this ticket; the VM thread counts it running again when
    /// it hands the memory out.
    AwaitingAllocation(u64),
}

/// An attached mutator and its state.
struct Attached {
    shared: Arc<MutatorShared>,
    state: MutatorState,
}

pub(crate) struct SpState {
    pub running: usize,
    pub active: bool,
    pub pending: Vec<Request>,
    pub ops_started: u64,
    pub ops_completed: u64,
    /// Result of the last `Verify` operation: (operation number, error message if it failed).
    pub last_verify: Option<(u64, Option<String>)>,
    mutators: Vec<Attached>,
    pub shutdown: bool,
    next_ticket: u64,
    /// Scratch: the operation that served the request being returned (read under the lock).
    served_op: u64,
    /// Allocations made by the VM thread for waiting mutators: (ticket, address or why not).
    alloc_results: Vec<(u64, AllocationResult)>,
}

/// What the VM thread answers an `Allocation` request: the zeroed memory, or why there is none.
pub(crate) type AllocationResult = Result<usize, GcError>;

/// The result of a collection request, as seen by the mutator that made it.
#[derive(Clone, Debug)]
pub(crate) struct OpResult {
    pub verify_error: Option<String>,
}

/// What `begin_operation` hands the VM thread: the requests, the operation number, the stopped
/// mutators and how long they took to stop.
pub(crate) type StoppedWorld = (Vec<Request>, u64, Vec<Arc<MutatorShared>>, Duration);

/// `Condvar::wait_while`, ignoring poisoning like [`super::lock`].
fn wait_while<'a>(
    cv: &Condvar,
    guard: MutexGuard<'a, SpState>,
    condition: impl FnMut(&mut SpState) -> bool,
) -> MutexGuard<'a, SpState> {
    cv.wait_while(guard, condition)
        .unwrap_or_else(|p| p.into_inner())
}

pub(crate) struct Safepoint {
    requested: AtomicBool,
    state: Mutex<SpState>,
    mutator_cv: Condvar,
    vm_cv: Condvar,
    /// How long the VM thread waits for the world to stop before it names the mutators still
    /// running (`safepoint-timeout`; `None`: never).
    timeout: Option<Duration>,
}

impl SpState {
    fn mutator_mut(&mut self, id: u32) -> &mut Attached {
        self.mutators
            .iter_mut()
            .find(|m| m.shared.id == id)
            .expect("the mutator is attached")
    }

    /// Mutator `id` stops (`Stopped` or `AwaitingAllocation`): a safepoint no longer waits for
    /// it.
    fn stop(&mut self, id: u32, state: MutatorState) {
        let m = self.mutator_mut(id);
        debug_assert_eq!(m.state, MutatorState::Running);
        m.state = state;
        self.running -= 1;
    }

    /// Mutator `id` runs again.
    fn resume(&mut self, id: u32) {
        let m = self.mutator_mut(id);
        debug_assert_ne!(m.state, MutatorState::Running);
        m.state = MutatorState::Running;
        self.running += 1;
    }

    /// The running mutator of the calling thread, if it has one.
    fn running_on_this_thread(&self) -> Option<&MutatorShared> {
        let me = std::thread::current().id();
        self.mutators
            .iter()
            .find(|m| m.state == MutatorState::Running && m.shared.thread == me)
            .map(|m| &*m.shared)
    }
}

impl Safepoint {
    /// `timeout`: how long a safepoint waits before it names the mutators still running
    /// (`None`: it never does).
    pub fn new(timeout: Option<Duration>) -> Self {
        Self {
            requested: AtomicBool::new(false),
            state: Mutex::new(SpState {
                running: 0,
                active: false,
                pending: Vec::new(),
                ops_started: 0,
                ops_completed: 0,
                last_verify: None,
                mutators: Vec::new(),
                shutdown: false,
                next_ticket: 0,
                served_op: 0,
                alloc_results: Vec::new(),
            }),
            mutator_cv: Condvar::new(),
            vm_cv: Condvar::new(),
            timeout,
        }
    }

    fn lock(&self) -> MutexGuard<'_, SpState> {
        super::lock(&self.state)
    }

    /// Whether a safepoint is requested (poll fast path).
    #[inline(always)]
    pub fn requested(&self) -> bool {
        // Relaxed: the slow path re-checks under the lock.
        self.requested.load(Ordering::Relaxed)
    }

    /// Register a new running mutator (waits if a collection is in progress). Panics if the
    /// calling thread has a mutator of this heap already: the first would never reach a
    /// safepoint while the thread uses the second, so the first collection would wait forever.
    #[track_caller]
    pub fn attach(&self, m: Arc<MutatorShared>) {
        let mut st = self.lock();
        if let Some(first) = st.mutators.iter().find(|a| a.shared.thread == m.thread) {
            let first = first.shared.describe();
            drop(st);
            already_attached(&first);
        }
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.running += 1;
        st.mutators.push(Attached {
            shared: m,
            state: MutatorState::Running,
        });
    }

    /// Unregister a running mutator.
    pub fn detach(&self, id: u32) {
        let mut st = self.lock();
        st.stop(id, MutatorState::Stopped);
        st.mutators.retain(|m| m.shared.id != id);
        self.vm_cv.notify_all();
    }

    /// Unregister mutator `id`, whose thread ended without detaching it (see
    /// `mutator::ThreadMutators`), in whatever state it was left. Returns whether it was still
    /// attached.
    pub fn detach_exited(&self, id: u32) -> bool {
        let mut st = self.lock();
        let Some(pos) = st.mutators.iter().position(|m| m.shared.id == id) else {
            return false;
        };
        if st.mutators.swap_remove(pos).state == MutatorState::Running {
            st.running -= 1;
        }
        self.vm_cv.notify_all();
        true
    }

    /// Number of attached mutators.
    pub fn attached(&self) -> usize {
        self.lock().mutators.len()
    }

    /// Park the calling (running) mutator `id` until no collection is in progress.
    pub fn block(&self, id: u32) {
        let mut st = self.lock();
        if !st.active {
            return;
        }
        st.stop(id, MutatorState::Stopped);
        self.vm_cv.notify_all();
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.resume(id);
    }

    /// The calling mutator `id` stops touching the heap (blocking region).
    pub fn enter_blocking(&self, id: u32) {
        let mut st = self.lock();
        st.stop(id, MutatorState::Stopped);
        self.vm_cv.notify_all();
    }

    /// The calling mutator `id` wants to touch the heap again.
    pub fn leave_blocking(&self, id: u32) {
        let mut st = self.lock();
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.resume(id);
    }

    /// Ask the VM thread to collect and then allocate `bytes` inside the same safepoint, so no
    /// other thread can take the space first (HotSpot's `VM_ParallelGCFailedAllocation`).
    /// Returns the zeroed memory, or the error to report if even a full collection did not
    /// make room.
    /// `node`: the requesting thread's node, whose eden fragment serves a young allocation.
    /// `id`: the requesting (running) mutator.
    pub fn request_allocation(
        &self,
        id: u32,
        bytes: usize,
        old: bool,
        node: usize,
    ) -> AllocationResult {
        let ticket = {
            let mut st = self.lock();
            st.next_ticket += 1;
            st.next_ticket
        };
        // The VM thread counts us as running again when it hands out the memory, so no other
        // collection can start (and reclaim the still unreferenced object) before we publish
        // it in a handle.
        let mut st = self.wait_for_request(
            Request::Allocation {
                bytes,
                old,
                ticket,
                node,
            },
            Some(id),
        );
        let pos = st
            .alloc_results
            .iter()
            .position(|&(t, _)| t == ticket)
            .expect("VM answered every allocation");
        st.alloc_results.swap_remove(pos).1
    }

    /// Ask the VM thread for an operation and wait for it. `mutator`: the caller's running
    /// mutator, which stops while it waits; `None` from a thread that is not a running mutator
    /// of this heap (checked: such a thread would wait for itself forever).
    #[track_caller]
    pub fn request(&self, req: Request, mutator: Option<u32>) -> OpResult {
        let st = self.wait_for_request(req, mutator);
        let my_op = st.served_op;
        let verify_error = match &st.last_verify {
            Some((op, err)) if *op >= my_op => err.clone(),
            _ => None,
        };
        OpResult { verify_error }
    }

    /// Post `req` and wait until an operation has served it. An allocation's requester is
    /// resumed by the VM thread (see `request_allocation`); any other requesting mutator
    /// resumes itself once no operation is in progress.
    #[track_caller]
    fn wait_for_request(&self, req: Request, mutator: Option<u32>) -> MutexGuard<'_, SpState> {
        let mut st = self.lock();
        let resumed_by_vm = match (mutator, req) {
            (Some(id), Request::Allocation { ticket, .. }) => {
                st.stop(id, MutatorState::AwaitingAllocation(ticket));
                true
            }
            (Some(id), _) => {
                st.stop(id, MutatorState::Stopped);
                false
            }
            (None, _) => {
                if let Some(m) = st.running_on_this_thread() {
                    let m = m.describe();
                    drop(st);
                    collect_from_running_mutator(&m);
                }
                false
            }
        };
        let my_op = st.ops_started + 1;
        st.pending.push(req);
        self.vm_cv.notify_all();
        st = wait_while(&self.mutator_cv, st, |s| {
            s.ops_completed < my_op || (s.active && !resumed_by_vm)
        });
        if let (Some(id), false) = (mutator, resumed_by_vm) {
            st.resume(id);
        }
        st.served_op = my_op;
        st
    }

    // ---- VM thread side ----

    /// Wait for requests; then stop the world. Returns the requests, the operation number, the
    /// stopped mutators and the time it took them to stop; `None` on shutdown.
    pub fn begin_operation(&self) -> Option<StoppedWorld> {
        let mut st = self.lock();
        st = wait_while(&self.vm_cv, st, |s| s.pending.is_empty() && !s.shutdown);
        if st.pending.is_empty() {
            return None;
        }
        let requests = std::mem::take(&mut st.pending);
        st.ops_started += 1;
        let op = st.ops_started;
        st.active = true;
        // Relaxed: the flag only sends polling mutators to `block`, which re-checks `active`
        // under this mutex; the mutex, not the flag, orders what they see. No ordering makes
        // the store visible sooner, and a mutator that misses it polls again before the VM
        // stops waiting for `running == 0`.
        self.requested.store(true, Ordering::Relaxed);
        let t = Instant::now();
        st = self.wait_until_stopped(st, t);
        let mutators = st.mutators.iter().map(|m| m.shared.clone()).collect();
        Some((requests, op, mutators, t.elapsed()))
    }

    /// Wait until no mutator runs. After `timeout`, name those still running on stderr, once,
    /// and go on waiting: a collection cannot start without them, and only they can end the
    /// wait (HotSpot's `SafepointTimeout`, which also only reports).
    fn wait_until_stopped<'a>(
        &'a self,
        mut st: MutexGuard<'a, SpState>,
        started: Instant,
    ) -> MutexGuard<'a, SpState> {
        if let Some(timeout) = self.timeout {
            let (guard, waited) = self
                .vm_cv
                .wait_timeout_while(st, timeout, |s| s.running > 0)
                .unwrap_or_else(|p| p.into_inner());
            st = guard;
            if waited.timed_out() {
                let report = safepoint_timeout_report(&st, started.elapsed(), timeout);
                drop(st);
                eprintln!("{report}");
                st = self.lock();
            }
        }
        wait_while(&self.vm_cv, st, |s| s.running > 0)
    }

    /// Resume the world after operation `op`, handing out the allocations made for waiting
    /// mutators.
    pub fn end_operation(
        &self,
        op: u64,
        verify: Option<Option<String>>,
        allocations: Vec<(u64, AllocationResult)>,
    ) {
        let mut st = self.lock();
        // Each allocation was requested by a stopped mutator that resumes running right now
        // (see `request_allocation`).
        for (ticket, _) in &allocations {
            let waiter = st
                .mutators
                .iter()
                .find(|m| m.state == MutatorState::AwaitingAllocation(*ticket))
                .map(|m| m.shared.id)
                .expect("an allocation's requester waits for it");
            st.resume(waiter);
        }
        st.alloc_results.extend(allocations);
        st.active = false;
        // Relaxed: as in `begin_operation`; a stale `true` only costs a poller one trip
        // through `block`, which finds `active` false under the mutex.
        self.requested.store(false, Ordering::Relaxed);
        st.ops_completed = op;
        if let Some(v) = verify {
            st.last_verify = Some((op, v));
        }
        self.mutator_cv.notify_all();
    }

    /// Ask the VM thread to exit once pending requests are served.
    pub fn shutdown(&self) {
        let mut st = self.lock();
        st.shutdown = true;
        self.vm_cv.notify_all();
    }
}

/// What the VM thread prints when the world took longer than `timeout` to stop: who is still
/// running, and what to do about it.
fn safepoint_timeout_report(st: &SpState, waited: Duration, timeout: Duration) -> String {
    let running: Vec<&MutatorShared> = st
        .mutators
        .iter()
        .filter(|m| m.state == MutatorState::Running)
        .map(|m| &*m.shared)
        .collect();
    let mut report = format!(
        "concord: safepoint timeout: a collection has waited {:.1} s for {} of {} attached \
         mutators to reach a safepoint (safepoint-timeout = {} ms); still running:",
        waited.as_secs_f64(),
        running.len(),
        st.mutators.len(),
        timeout.as_millis()
    );
    for m in &running {
        let _ = write!(report, "\n  {}", m.describe());
    }
    report.push_str(
        "\nA thread attached to a heap must reach a safepoint often (an allocation or \
         Mutator::safepoint_poll) and must run anything that can block it (receiving from a \
         channel, taking a lock, joining a thread, sleeping, I/O) inside Mutator::blocking. \
         The collection goes on waiting for them.",
    );
    report
}

/// The panic of a second `attach` on one thread.
#[cold]
#[inline(never)]
#[track_caller]
fn already_attached(first: &str) -> ! {
    panic!(
        "Heap::attach: this thread already has a mutator of this heap, {first}; \
         use that one (a second mutator on the same thread would wait for the first forever at \
         the next collection)"
    )
}

/// The panic of `Heap::collect` on a thread whose mutator of the heap is running.
#[cold]
#[inline(never)]
#[track_caller]
fn collect_from_running_mutator(mutator: &str) -> ! {
    panic!(
        "Heap::collect called on a thread with a running mutator of this heap, {mutator}: \
         the collection would wait for that mutator forever; call \
         Mutator::collect on it instead"
    )
}
