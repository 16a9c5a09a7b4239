//! Stopping the world: mutators count themselves in or out, the VM thread waits for zero.
//!
//! A mutator is *running* (it may touch the heap) or *stopped* (parked at a safepoint, waiting
//! for a collection it requested, or in a blocking region). `running` counts running mutators;
//! the VM thread raises `active` and waits until `running == 0`. Every transition happens under
//! one mutex, so the VM can never miss a mutator and a mutator can never resume mid-collection.
//! The `requested` flag duplicates `active` so the poll fast path is one relaxed load; it is
//! only a hint (every access to it is Relaxed), because whatever a mutator does about it
//! happens under the mutex.

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

pub(crate) struct SpState {
    pub running: usize,
    pub active: bool,
    pub pending: Vec<Request>,
    pub ops_started: u64,
    pub ops_completed: u64,
    /// Result of the last `Verify` operation: (operation number, error message if it failed).
    pub last_verify: Option<(u64, Option<String>)>,
    pub mutators: Vec<Arc<MutatorShared>>,
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
}

impl Safepoint {
    pub fn new() -> Self {
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

    /// Register a new running mutator (waits if a collection is in progress).
    pub fn attach(&self, m: Arc<MutatorShared>) {
        let mut st = self.lock();
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.running += 1;
        st.mutators.push(m);
    }

    /// Unregister a running mutator.
    pub fn detach(&self, id: u32) {
        let mut st = self.lock();
        st.running -= 1;
        st.mutators.retain(|m| m.id != id);
        self.vm_cv.notify_all();
    }

    /// Number of attached mutators.
    pub fn attached(&self) -> usize {
        self.lock().mutators.len()
    }

    /// Park the calling (running) mutator until no collection is in progress.
    pub fn block(&self) {
        let mut st = self.lock();
        if !st.active {
            return;
        }
        st.running -= 1;
        self.vm_cv.notify_all();
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.running += 1;
    }

    /// The calling mutator stops touching the heap (blocking region).
    pub fn enter_blocking(&self) {
        let mut st = self.lock();
        st.running -= 1;
        self.vm_cv.notify_all();
    }

    /// The calling mutator wants to touch the heap again.
    pub fn leave_blocking(&self) {
        let mut st = self.lock();
        st = wait_while(&self.mutator_cv, st, |s| s.active);
        st.running += 1;
    }

    /// Ask the VM thread to collect and then allocate `bytes` inside the same safepoint, so no
    /// other thread can take the space first (HotSpot's `VM_ParallelGCFailedAllocation`).
    /// Returns the zeroed memory, or the error to report if even a full collection did not
    /// make room.
    /// `node`: the requesting thread's node, whose eden fragment serves a young allocation.
    pub fn request_allocation(&self, bytes: usize, old: bool, node: usize) -> AllocationResult {
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
            true,
            true,
        );
        let pos = st
            .alloc_results
            .iter()
            .position(|&(t, _)| t == ticket)
            .expect("VM answered every allocation");
        st.alloc_results.swap_remove(pos).1
    }

    /// Ask the VM thread for an operation and wait for it. `as_mutator`: the caller is a
    /// running mutator (it stops itself while waiting).
    pub fn request(&self, req: Request, as_mutator: bool) -> OpResult {
        let st = self.wait_for_request(req, as_mutator, false);
        let my_op = st.served_op;
        let verify_error = match &st.last_verify {
            Some((op, err)) if *op >= my_op => err.clone(),
            _ => None,
        };
        OpResult { verify_error }
    }

    fn wait_for_request(
        &self,
        req: Request,
        as_mutator: bool,
        resumed_by_vm: bool,
    ) -> MutexGuard<'_, SpState> {
        let mut st = self.lock();
        if as_mutator {
            st.running -= 1;
        }
        let my_op = st.ops_started + 1;
        st.pending.push(req);
        self.vm_cv.notify_all();
        st = wait_while(&self.mutator_cv, st, |s| {
            s.ops_completed < my_op || (s.active && !resumed_by_vm)
        });
        if as_mutator && !resumed_by_vm {
            st.running += 1;
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
        st = wait_while(&self.vm_cv, st, |s| s.running > 0);
        Some((requests, op, st.mutators.clone(), t.elapsed()))
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
        st.running += allocations.len();
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
