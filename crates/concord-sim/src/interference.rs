//! Interference for the experiments: threads that compete with the collector for the simulated
//! CPUs without being part of the work that is measured. All of them are *background* threads
//! ([`Sim::spawn_background`]): they do not keep the simulation alive, and their CPU time is
//! reported apart ([`crate::exec::Report::background_run_ns`]).
//!
//! * **Busy loops** ([`Sim::busy_loops`]): one SCHED_OTHER thread at nice 0 pinned to each given
//!   CPU, computing forever (000 Fig. 15's ten busy loops on ten CPUs; `--load busy:K`).
//! * **Mutators** ([`Mutators`]): threads that run and sleep in a duty cycle and stop at a
//!   safepoint when a driver thread asks ([`Mutators::stop`], [`Mutators::resume`]), so that the
//!   CPUs they sat on before a pause, and the wake-ups around it, shape where the GC workers
//!   land (000 Fig. 4).
//! * **A co-running instance** (other processes' GC threads) needs nothing of its own: it is
//!   more threads in the same [`Sim`]. Spawn a second driver and worker pool (and its own
//!   [`crate::affinity::SimGcAffinity`], whose load count then sees the first instance's
//!   threads as other threads, as the runtime's does); to make it interference rather than
//!   measured work, spawn its threads with [`Sim::spawn_background`] and let its driver loop
//!   over collections for as long as the run lasts. Two instances share nothing but the CPUs:
//!   no executor state is global to a process or to an instance.
//!
//! Every thread here spends its time in [`exec::charge`] steps of at most [`BUSY_STEP_NS`] (busy
//! loops) or the mutators' safepoint-poll interval: a step cannot be interrupted, so it bounds
//! how late a wake-up preemption or a safepoint request takes effect.

use std::sync::Arc;
use std::time::Duration;

use crate::exec::{self, CpuId, Ns, Sim, ThreadId, ThreadSpec};
use crate::machine::CpuSet;
use crate::sched::Policy;
use crate::sync::atomic::{AtomicBool, Ordering};
use crate::sync::{Condvar, Mutex, MutexGuard};

/// Virtual time a busy loop computes between scheduling points (20 µs: far below the
/// scheduler's slices and ticks, which are milliseconds).
pub const BUSY_STEP_NS: Ns = 20_000;

impl Sim {
    /// One background busy loop per CPU in `cpus` (a CPU may be given twice for two loops):
    /// SCHED_OTHER at nice 0, affinity that one CPU, computing until the run ends. Returns their
    /// thread ids, named `busy-<cpu>`, or an error naming a CPU the machine lacks.
    pub fn busy_loops(&mut self, cpus: &[CpuId]) -> Result<Vec<ThreadId>, String> {
        cpus.iter()
            .map(|&cpu| {
                let spec = ThreadSpec {
                    policy: Policy::Normal { nice: 0 },
                    affinity: Some(CpuSet::single(cpu)),
                    start_cpu: Some(cpu),
                };
                self.spawn_background(format!("busy-{cpu}"), spec, || loop {
                    exec::charge(BUSY_STEP_NS);
                })
            })
            .collect()
    }
}

/// How a mutator spends its time while it is not stopped: it computes `run_ns`, polling for a
/// safepoint every `poll_ns`, then sleeps `sleep_ns` (blocked, invisible to the load), and again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DutyCycle {
    /// Computing per cycle (at least 1 ns).
    pub run_ns: Ns,
    /// Sleeping per cycle (0: always runnable).
    pub sleep_ns: Ns,
    /// Computing between two safepoint polls (0: once per cycle); what a stop waits for at
    /// most, once the mutator is on a CPU.
    pub poll_ns: Ns,
}

impl DutyCycle {
    /// Always computing, polling every 10 µs.
    pub const BUSY: DutyCycle = DutyCycle {
        run_ns: 1_000_000,
        sleep_ns: 0,
        poll_ns: 10_000,
    };
}

/// The safepoint shared by one group of mutators and the driver that stops them.
struct Safepoint {
    /// Read by every poll (one atomic load, as HotSpot's poll is one load).
    requested: AtomicBool,
    state: Mutex<SafepointState>,
    /// Signalled when the last running mutator stops.
    all_stopped: Condvar,
    /// Signalled when the world resumes.
    resumed: Condvar,
}

struct SafepointState {
    requested: bool,
    /// Mutators computing (not stopped, not asleep).
    running: usize,
}

impl Safepoint {
    fn lock(&self) -> MutexGuard<'_, SafepointState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A running mutator polls: if a stop is requested it stops until resumed.
    fn poll(&self) {
        if self.requested.load(Ordering::Acquire) {
            self.leave();
            self.enter();
        }
    }

    /// A running mutator stops computing (to sleep, or at the safepoint).
    fn leave(&self) {
        let mut state = self.lock();
        state.running -= 1;
        if state.requested && state.running == 0 {
            self.all_stopped.notify_all();
        }
    }

    /// A mutator wants to compute again: it waits while a stop is in force.
    fn enter(&self) {
        let mut state = self.lock();
        while state.requested {
            state = self.resumed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.running += 1;
    }
}

/// A group of background mutator threads sharing one safepoint. Cheap to clone; a driver
/// thread inside the simulation calls [`stop`](Self::stop) before a collection and
/// [`resume`](Self::resume) after it.
#[derive(Clone)]
pub struct Mutators {
    safepoint: Arc<Safepoint>,
    threads: Vec<ThreadId>,
}

impl Mutators {
    /// `count` background mutators named `mutator-<i>`, scheduled as `spec` says (the default
    /// spec lets fork balancing spread them), each running `cycle` until the run ends. An
    /// error names what is not allowed (`cycle.run_ns` of 0, or the placement's refusal).
    pub fn spawn(
        sim: &mut Sim,
        count: usize,
        cycle: DutyCycle,
        spec: ThreadSpec,
    ) -> Result<Mutators, String> {
        if cycle.run_ns == 0 {
            return Err("a mutator's run time per cycle must be at least 1 ns".into());
        }
        let poll = if cycle.poll_ns == 0 {
            cycle.run_ns
        } else {
            cycle.poll_ns.min(cycle.run_ns)
        };
        let safepoint = Arc::new(Safepoint {
            requested: AtomicBool::new(false),
            state: Mutex::new(SafepointState {
                requested: false,
                running: count,
            }),
            all_stopped: Condvar::new(),
            resumed: Condvar::new(),
        });
        let threads = (0..count)
            .map(|i| {
                let sp = safepoint.clone();
                sim.spawn_background(format!("mutator-{i}"), spec, move || loop {
                    let mut left = cycle.run_ns;
                    while left > 0 {
                        let step = left.min(poll);
                        exec::charge(step);
                        left -= step;
                        sp.poll();
                    }
                    if cycle.sleep_ns > 0 {
                        sp.leave();
                        crate::sync::thread::sleep(Duration::from_nanos(cycle.sleep_ns));
                        sp.enter();
                    }
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Mutators { safepoint, threads })
    }

    /// The mutators' thread ids, in spawn order.
    pub fn threads(&self) -> &[ThreadId] {
        &self.threads
    }

    /// Stop the world: ask every mutator to stop at its next safepoint poll and wait (blocked)
    /// until none is computing; sleeping mutators count as stopped and stay stopped when their
    /// sleep ends. Call from a simulated thread. Stopping a stopped world returns at once.
    pub fn stop(&self) {
        let mut state = self.safepoint.lock();
        state.requested = true;
        self.safepoint.requested.store(true, Ordering::Release);
        while state.running > 0 {
            state = self
                .safepoint
                .all_stopped
                .wait(state)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Resume the world: wake every stopped mutator. Call from a simulated thread.
    pub fn resume(&self) {
        let mut state = self.safepoint.lock();
        state.requested = false;
        self.safepoint.requested.store(false, Ordering::Release);
        self.safepoint.resumed.notify_all();
    }

    /// Mutators computing now (0 while the world is stopped).
    pub fn running(&self) -> usize {
        self.safepoint.lock().running
    }
}
