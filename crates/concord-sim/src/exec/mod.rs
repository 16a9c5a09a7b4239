//! The virtual-time executor: simulated threads on simulated CPUs, one at a time, in the order
//! of their CPUs' virtual clocks.
//!
//! Each simulated thread is a real OS thread, but only the one holding the *baton* runs; all others
//! are parked (`std::thread::park`). The holder passing the baton releases the executor's lock,
//! then unparks exactly the thread that runs next: one hand-off is one futex wake and one futex
//! wait, and the woken thread does not find the lock taken. By default the simulation's OS threads
//! all run on one host CPU ([`Sim::one_host_cpu`]), so that a hand-off wakes a thread on the CPU
//! that is about to sleep rather than an idle one (which, in a VM especially, takes several times
//! longer). (Loom too carries each thread on an OS thread; stackful coroutines would switch faster,
//! with no OS thread switch per hand-off, but need a crate the workspace does not have, and OS
//! threads let the included code keep real `thread_local!`s and real stacks.) Every operation of
//! the simulated `crate::sync` layer charges its cost in virtual nanoseconds to the CPU the thread
//! runs on and is a scheduling point: the executor then hands the baton to the thread running on
//! the CPU whose clock is earliest, after firing the timers (sleeps, futex timeouts) due by then. A
//! thread keeps the baton while its clock is at most [`Sim::lookahead`] ahead of the earliest other
//! CPU: that bounds how far two operations may be reordered against virtual time and saves most OS
//! context switches when many threads spin.
//!
//! The executor owns the CPUs (clock, running thread, time-slice left); a [`Placement`] owns the
//! run queues, so a scheduler model plugs in without touching this file: [`Sim::linux49`] runs
//! the threads under the Linux 4.9 model ([`crate::sched::Linux49`]) through [`ModelPlacement`],
//! [`Sim::eevdf`] under the Linux 6.6 EEVDF model ([`crate::sched::Eevdf`]).
//! A placement's own timers (scheduler ticks, periodic balancing) fire in virtual time like the
//! threads' sleeps, even while every CPU is busy, and after every event the executor takes off
//! its CPU each thread the placement wants rescheduled ([`Placement::resched`]). Futexes are simulated
//! kernel queues keyed by the word's address: `wait` compares the word and enqueues the caller
//! under the executor's lock, and a waker changes the word before `wake`, so no wake-up is
//! lost (the semantics `concord-loom`'s futex model documents). Same seed, same costs, same code:
//! the same schedule, bit for bit (no wall clock, no hash-order iteration; ties between CPUs with
//! equal clocks are broken by an order drawn from the seed). When no CPU has a thread to run and
//! no timer is pending while threads remain, [`Sim::run`] panics naming the blocked threads and
//! what they wait on.

mod model;
mod placement;
pub mod reach;
pub mod wake;

pub use model::ModelPlacement;
pub use placement::{CpuId, Ns, Placement, Requeue, RoundRobin, ThreadId, ThreadSpec};

use crate::machine::{CpuSet, Machine};
use crate::numa::Numa;
use crate::sched::{Eevdf, Linux49};

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Virtual cost, in ns, of each operation the simulated `crate::sync` layer performs. The
/// defaults are order-of-magnitude figures for a 2010s x86 server; `concord sim calibrate` is
/// meant to replace them with this machine's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Costs {
    /// An atomic load.
    pub atomic_load: Ns,
    /// An atomic store.
    pub atomic_store: Ns,
    /// An atomic read-modify-write (`swap`, `fetch_*`).
    pub atomic_rmw: Ns,
    /// A compare-and-swap (including `fetch_update`).
    pub cas: Ns,
    /// Taking an uncontended lock.
    pub lock_uncontended: Ns,
    /// The `futex(FUTEX_WAIT)` system call (not the time asleep).
    pub futex_wait: Ns,
    /// The `futex(FUTEX_WAKE)` system call.
    pub futex_wake: Ns,
    /// The `sched_yield` system call.
    pub yield_syscall: Ns,
    /// The `nanosleep` system call (not the time asleep).
    pub sleep_syscall: Ns,
    /// One spin-wait hint (`PAUSE`).
    pub spin_loop: Ns,
    /// Switching a CPU from one thread to another.
    pub context_switch: Ns,
    /// From a futex wake until the woken thread is runnable, where [`Costs::wake`] holds no
    /// table.
    pub wakeup_latency: Ns,
    /// The futex wake-up's latency and the waker's time in the call, by how long the woken
    /// thread's CPU had been idle (neither when that CPU is running something: the thread
    /// queues there); empty: `wakeup_latency` for every wake-up and no waker's time.
    pub wake: wake::WakeCosts,
    /// Copying (or marking) one object, beyond its bytes, in picoseconds: the collector's own
    /// work, charged by [`charge_copy`] when recorded collections are replayed.
    pub copy_per_object_ps: u64,
    /// Copying one byte of an object, in picoseconds (a fraction of a ns, hence the unit).
    pub copy_per_byte_ps: u64,
    /// The first write to a 4 KiB page of the heap that no collection wrote before: the
    /// kernel's minor fault, which zeroes and maps the page ([`charge_page_faults`]).
    pub page_fault: Ns,
    /// The same fault for a page of the old generation, which a collection's promotions
    /// write ([`charge_page_faults`]); calibrated apart from a to-space page's, as a promotion
    /// writes it on another path than a survivor's copy.
    pub page_fault_old: Ns,
    /// A collector's read of an object header away from the last object the same worker
    /// reached: a line miss or a far access, by the collection's footprint ([`reach`],
    /// [`charge_reach`]). Only traces that record where objects lay (GC trace version 4) are
    /// charged it.
    pub reach: reach::ReachCosts,
    /// A GC worker's start in a collection's parallel phase beyond what the other costs
    /// charge: its caches are cold after the mutators ran ([`charge_worker_start`]).
    pub worker_start: Ns,
}

impl Costs {
    /// The default table.
    pub const DEFAULT: Costs = Costs {
        atomic_load: 1,
        atomic_store: 1,
        atomic_rmw: 20,
        cas: 20,
        lock_uncontended: 25,
        futex_wait: 1_000,
        futex_wake: 1_000,
        yield_syscall: 500,
        sleep_syscall: 1_000,
        spin_loop: 10,
        context_switch: 2_000,
        wakeup_latency: 5_000,
        wake: wake::WakeCosts::NONE,
        // `concord sim calibrate` on an AMD EPYC VM: 13.8 ns per object + 0.069 ns per byte.
        copy_per_object_ps: 14_000,
        copy_per_byte_ps: 70,
        page_fault: 1_000,
        page_fault_old: 1_000,
        reach: reach::ReachCosts::NONE,
        worker_start: 0,
    };

    /// The time to copy `objects` objects of `bytes` bytes in all, rounded to the nearest ns.
    pub fn copy_ns(&self, objects: u64, bytes: u64) -> Ns {
        let ps = u128::from(objects) * u128::from(self.copy_per_object_ps)
            + u128::from(bytes) * u128::from(self.copy_per_byte_ps);
        Ns::try_from((ps + 500) / 1000).unwrap_or(Ns::MAX)
    }

    fn of(&self, op: Op) -> Ns {
        match op {
            Op::Load => self.atomic_load,
            Op::Store => self.atomic_store,
            Op::Rmw => self.atomic_rmw,
            Op::Cas => self.cas,
            Op::Lock => self.lock_uncontended,
            Op::SpinLoop => self.spin_loop,
        }
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs::DEFAULT
    }
}

/// An operation that costs time and is a scheduling point but cannot block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Load,
    Store,
    Rmw,
    Cas,
    Lock,
    SpinLoop,
}

/// What one simulated thread did, in virtual time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadReport {
    /// The name given to [`Sim::spawn`].
    pub name: String,
    /// Time it ran on a CPU (every charged cost).
    pub run_ns: Ns,
    /// Time it was runnable but waited for a CPU (run-queue wait).
    pub wait_ns: Ns,
    /// Time it was blocked (futex, lock, sleep).
    pub blocked_ns: Ns,
    /// When it finished.
    pub finished_ns: Ns,
    /// Operations charged (atomics, hints, system calls, `charge` calls).
    pub ops: u64,
    /// Times it was taken off its CPU while runnable (slice expiry, wake-up preemption).
    pub preemptions: u64,
    /// `sched_yield` calls.
    pub yields: u64,
    /// Times it blocked.
    pub blocks: u64,
    /// Times it started running on another CPU than before.
    pub migrations: u64,
    /// The CPU it ran on last.
    pub last_cpu: CpuId,
    /// Whether it is a background thread ([`Sim::spawn_background`]): interference that runs
    /// until the last other thread finishes, whose time is reported apart.
    pub background: bool,
}

/// What one simulated CPU did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuReport {
    /// Time it ran threads, context switches included.
    pub busy_ns: Ns,
    /// Context switches (a different thread than the last one started running).
    pub context_switches: u64,
}

/// The outcome of [`Sim::run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    /// When the last thread finished.
    pub end_ns: Ns,
    /// Per thread, in spawn order.
    pub threads: Vec<ThreadReport>,
    /// Per CPU.
    pub cpus: Vec<CpuReport>,
    /// Operations charged by all threads.
    pub ops: u64,
    /// Times the baton passed from one OS thread to another (what the simulation's wall time
    /// mostly goes to).
    pub handoffs: u64,
}

impl Report {
    /// CPU time of the background threads ([`Sim::spawn_background`]: busy loops, mutators,
    /// another instance's threads), summed.
    pub fn background_run_ns(&self) -> Ns {
        self.threads
            .iter()
            .filter(|t| t.background)
            .map(|t| t.run_ns)
            .sum()
    }

    /// CPU time of the other (foreground) threads, summed.
    pub fn foreground_run_ns(&self) -> Ns {
        self.threads
            .iter()
            .filter(|t| !t.background)
            .map(|t| t.run_ns)
            .sum()
    }
}

/// A simulation being set up: a machine, its cost table, a seed and the threads to run.
pub struct Sim {
    state: State,
    bodies: Vec<Box<dyn FnOnce() + Send>>,
    /// Run the simulation's OS threads on one host CPU ([`Sim::one_host_cpu`]).
    one_host_cpu: bool,
}

impl Sim {
    /// Reordering allowed against virtual time by default (see [`lookahead`](Self::lookahead)).
    pub const DEFAULT_LOOKAHEAD: Ns = 200;

    /// `cpus` CPUs under the built-in [`RoundRobin`] placement with its default slice.
    pub fn new(cpus: usize, costs: Costs, seed: u64) -> Sim {
        Sim::with_placement(
            Box::new(RoundRobin::new(cpus, RoundRobin::DEFAULT_SLICE)),
            costs,
            seed,
        )
    }

    /// `machine` scheduled by the Linux 4.9 CFS and SCHED_FIFO model.
    pub fn linux49(machine: Machine, costs: Costs, seed: u64) -> Sim {
        Sim::with_placement(
            Box::new(ModelPlacement::new(Linux49::new(machine))),
            costs,
            seed,
        )
    }

    /// `machine` scheduled by the Linux 6.6 EEVDF and SCHED_FIFO model.
    pub fn eevdf(machine: Machine, costs: Costs, seed: u64) -> Sim {
        Sim::with_placement(
            Box::new(ModelPlacement::new(Eevdf::new(machine))),
            costs,
            seed,
        )
    }

    /// A machine whose run queues `placement` models.
    pub fn with_placement(placement: Box<dyn Placement>, costs: Costs, seed: u64) -> Sim {
        let cpus = placement.cpus();
        assert!(cpus > 0, "a simulated machine needs at least one CPU");
        let mut rng = SplitMix64(seed);
        let mut order: Vec<CpuId> = (0..cpus).collect();
        for i in (1..cpus).rev() {
            order.swap(i, (rng.next() % (i as u64 + 1)) as usize);
        }
        let mut rank = vec![0; cpus];
        for (r, &c) in order.iter().enumerate() {
            rank[c] = r;
        }
        Sim {
            state: State {
                costs,
                lookahead: Sim::DEFAULT_LOOKAHEAD,
                limit: None,
                placement,
                threads: Vec::new(),
                cpus: (0..cpus).map(|_| Cpu::default()).collect(),
                rank,
                timers: BinaryHeap::new(),
                timer_seq: 0,
                futexes: BTreeMap::new(),
                baton: None,
                wake: None,
                outcome: None,
                live: 0,
                ops: 0,
                handoffs: 0,
                horizon: None,
                numa: None,
            },
            bodies: Vec::new(),
            one_host_cpu: true,
        }
    }

    /// Let the running thread go on while its CPU's clock is at most `ns` ahead of the earliest
    /// other busy CPU (0: strictly earliest first, one OS switch per overtaking).
    pub fn lookahead(mut self, ns: Ns) -> Sim {
        self.state.lookahead = ns;
        self
    }

    /// Whether the OS threads that carry the simulated threads all run on one CPU of the host,
    /// the one the thread calling [`run`](Self::run) is on when the run starts (default: yes).
    /// Only one of them runs at a time anyway; on one CPU a hand-off switches threads there
    /// instead of waking another CPU, several times faster. Wall time only: the simulation's
    /// results are the same either way. If the host refuses the affinity, the threads run
    /// wherever the caller may.
    pub fn one_host_cpu(mut self, yes: bool) -> Sim {
        self.one_host_cpu = yes;
        self
    }

    /// Stop once a CPU's clock passes `ns` (a livelock guard): [`run`](Self::run) panics
    /// naming every thread, [`try_run`](Self::try_run) returns [`SimError::TimeLimit`]. A
    /// simulated thread may move the limit during the run ([`set_time_limit`]).
    pub fn time_limit(mut self, ns: Ns) -> Sim {
        self.state.limit = Some(ns);
        self
    }

    /// Charge [`charge_copy_on`] by `numa`'s model (remote access, node bandwidth); without
    /// it memory is uniform and `charge_copy_on` charges what [`charge_copy`] does.
    pub fn with_numa(mut self, numa: Numa) -> Sim {
        self.state.numa = Some(numa);
        self
    }

    /// Add a *background* thread scheduled as `spec` says: interference (a busy loop, a
    /// mutator, another instance's threads) that competes for the CPUs like any thread but does
    /// not keep the simulation alive: [`Sim::run`] ends when every other thread has finished,
    /// and background threads still running or blocked then are stopped (unwound) where they
    /// are. Their CPU time is in [`Report::background_run_ns`]; their
    /// [`ThreadReport::finished_ns`] is the time the run ended. A busy background thread also
    /// hides a deadlock of the others (something can always run): set a
    /// [`time_limit`](Self::time_limit).
    pub fn spawn_background(
        &mut self,
        name: impl Into<String>,
        spec: ThreadSpec,
        body: impl FnOnce() + Send + 'static,
    ) -> Result<ThreadId, String> {
        let id = self.spawn_with(name, spec, body)?;
        self.state.threads[id].background = true;
        self.state.live -= 1;
        Ok(id)
    }

    /// Add a simulated thread that runs `body` under the default [`ThreadSpec`] (SCHED_OTHER,
    /// nice 0, any CPU); returns its id (spawn order from 0).
    pub fn spawn(
        &mut self,
        name: impl Into<String>,
        body: impl FnOnce() + Send + 'static,
    ) -> ThreadId {
        self.spawn_with(name, ThreadSpec::default(), body)
            .expect("every placement accepts the default thread spec")
    }

    /// Add a simulated thread scheduled as `spec` says (policy, affinity, start CPU); it is
    /// runnable from time 0. Returns its id, or the placement's error naming what in `spec` is
    /// not allowed.
    pub fn spawn_with(
        &mut self,
        name: impl Into<String>,
        spec: ThreadSpec,
        body: impl FnOnce() + Send + 'static,
    ) -> Result<ThreadId, String> {
        let st = &mut self.state;
        let id = st.threads.len();
        let name = name.into();
        let cpu = st
            .placement
            .spawn(id, &spec, 0)
            .map_err(|e| format!("thread `{name}`: {e}"))?;
        let mut thread = Thread::new(name);
        thread.cpu = cpu;
        thread.status = Status::Runnable;
        st.threads.push(thread);
        st.live += 1;
        self.bodies.push(Box::new(body));
        Ok(id)
    }

    /// Run every thread to its end and report what each did, in virtual time.
    ///
    /// # Panics
    ///
    /// On a deadlock (naming the blocked threads and what they wait on), when a simulated thread
    /// panics (naming it, with its message), or past the [`time_limit`](Self::time_limit).
    pub fn run(self) -> Report {
        self.try_run().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`run`](Self::run), with what would make it panic returned instead: the time limit
    /// passed, a deadlock or a simulated thread's panic.
    ///
    /// After a failure the simulated threads are not unwound: each stays parked where the
    /// failure found it (its OS thread is left, not joined, and what it holds is not dropped).
    /// Unwinding them would run destructors of code interrupted in the middle of a protocol
    /// (a monitor's guard whose `wait` had released the lock), on a state they do not expect.
    /// Background threads of a run that finished are unwound as before.
    pub fn try_run(self) -> Result<Report, SimError> {
        let Sim {
            state,
            bodies,
            one_host_cpu,
        } = self;
        let host_cpu = one_host_cpu.then(concord::os::cpu::current_cpu).flatten();
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            done: Condvar::new(),
            spawned: Mutex::new(Vec::new()),
            baton: AtomicUsize::new(NO_BATON),
            over: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            host_cpu,
        });
        let handles: Vec<JoinHandle<()>> = bodies
            .into_iter()
            .enumerate()
            .map(|(me, body)| {
                let shared = shared.clone();
                let name = lock(&shared).threads[me].name.clone();
                std::thread::Builder::new()
                    .name(format!("sim:{name}"))
                    .spawn(move || thread_main(shared, me, body))
                    .expect("spawning an OS thread for a simulated thread")
            })
            .collect();
        {
            let mut st = lock(&shared);
            for (thread, handle) in st.threads.iter_mut().zip(&handles) {
                thread.os = Some(handle.thread().clone());
            }
            st.offer_idle(0);
            st.pass_baton(&shared);
            if let Some(os) = st.wake.take() {
                os.unpark();
            }
            while st.outcome.is_none() {
                st = shared.done.wait(st).unwrap_or_else(|p| p.into_inner());
            }
            if let Some(Outcome::Failed(e)) = &st.outcome {
                // The simulated threads stay parked where the failure found them: their OS
                // threads are left, not joined.
                return Err(e.clone());
            }
        }
        for handle in handles {
            // A simulated thread's panic is caught in `thread_main` and becomes the outcome.
            let _ = handle.join();
        }
        // The threads started during the run ([`spawn`]); none is left to start any more.
        let spawned =
            std::mem::take(&mut *shared.spawned.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in spawned {
            let _ = handle.join();
        }
        let st = lock(&shared);
        Ok(st.report())
    }
}

/// Why a simulation did not finish ([`Sim::try_run`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// The earliest CPU that could run a thread was past the time limit
    /// ([`Sim::time_limit`], [`set_time_limit`]).
    TimeLimit {
        /// The limit, ns of virtual time.
        limit_ns: Ns,
        /// The clock of that CPU.
        reached_ns: Ns,
        /// Every unfinished thread and its state.
        threads: String,
    },
    /// Every thread blocked, or a simulated thread panicked: the message says which.
    Failed(String),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::TimeLimit {
                limit_ns,
                reached_ns,
                threads,
            } => write!(
                f,
                "simulation passed its time limit of {limit_ns} ns (a CPU reached \
                 {reached_ns} ns); threads: {threads}"
            ),
            SimError::Failed(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SimError {}

/// Move the run's time limit ([`Sim::time_limit`]) to `limit` (`None`: no limit), from a
/// simulated thread; not a scheduling point and charges nothing. Outside a simulation it does
/// nothing.
pub fn set_time_limit(limit: Option<Ns>) {
    with_context(|ctx| {
        let mut st = lock(&ctx.shared);
        st.limit = limit;
        // The holder's horizon was computed with the old limit.
        st.horizon = None;
    });
}

/// The virtual time on the calling simulated thread's CPU, or `None` outside a simulation.
pub fn now() -> Option<Ns> {
    with_context(|ctx| {
        let st = lock(&ctx.shared);
        st.cpus[st.threads[ctx.me].cpu].clock
    })
}

/// The CPU the calling simulated thread runs on, or `None` outside a simulation.
pub fn current_cpu() -> Option<CpuId> {
    with_context(|ctx| lock(&ctx.shared).threads[ctx.me].cpu)
}

/// How many CPUs the simulated machine has, or `None` outside a simulation.
pub fn cpu_count() -> Option<usize> {
    with_context(|ctx| lock(&ctx.shared).cpus.len())
}

/// What the calling simulated thread has used so far, or `None` outside a simulation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Time it ran on a CPU (every charged cost).
    pub run_ns: Ns,
    /// Times it blocked (voluntary context switches).
    pub blocks: u64,
    /// Times it was taken off its CPU while runnable (involuntary context switches).
    pub preemptions: u64,
}

/// The calling simulated thread's [`ThreadUsage`] so far, or `None` outside a simulation.
pub fn thread_usage() -> Option<ThreadUsage> {
    with_context(|ctx| {
        let st = lock(&ctx.shared);
        let t = &st.threads[ctx.me];
        ThreadUsage {
            run_ns: t.run_ns,
            blocks: t.blocks,
            preemptions: t.preemptions,
        }
    })
}

/// Start a simulated thread from inside a running simulation (`clone`): it runs `body`
/// scheduled as `spec` says, runnable from the caller's current virtual time, and takes part in
/// the run like the threads given to [`Sim::spawn`] (the run ends when it has finished too; its
/// [`ThreadReport`] follows theirs). A thread started by a background thread
/// ([`Sim::spawn_background`]) is a background thread as well. Charged as a system call that wakes a thread
/// ([`Costs::futex_wake`]); a scheduling point. Returns its id, or the placement's error naming
/// what in `spec` is not allowed, or an error outside a simulation.
pub fn spawn(
    name: impl Into<String>,
    spec: ThreadSpec,
    body: impl FnOnce() + Send + 'static,
) -> Result<ThreadId, String> {
    let name = name.into();
    let Some((shared, me)) = with_context(|ctx| (ctx.shared.clone(), ctx.me)) else {
        return Err(format!(
            "thread `{name}`: exec::spawn is for simulated threads only (use Sim::spawn before the run)"
        ));
    };
    let mut st = lock(&shared);
    if st.outcome.is_some() {
        drop(st);
        abort_unless_unwinding(&shared);
        return Err(format!("thread `{name}`: the simulation has failed"));
    }
    let cost = st.costs.futex_wake;
    st.account(me, cost);
    let now = st.clock_of(me);
    let id = st.threads.len();
    let result = st
        .placement
        .spawn(id, &spec, now)
        .map_err(|e| format!("thread `{name}`: {e}"));
    if let Ok(cpu) = result {
        let mut thread = Thread::new(name.clone());
        thread.cpu = cpu;
        thread.status = Status::Runnable;
        thread.ready_at = now;
        // A background thread's children are interference too (another instance's workers).
        thread.background = st.threads[me].background;
        if !thread.background {
            st.live += 1;
        }
        st.threads.push(thread);
        let for_thread = shared.clone();
        let handle = std::thread::Builder::new()
            .name(format!("sim:{name}"))
            .spawn(move || thread_main(for_thread, id, Box::new(body)))
            .expect("spawning an OS thread for a simulated thread");
        st.threads[id].os = Some(handle.thread().clone());
        shared
            .spawned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(handle);
        st.offer_idle(now);
    }
    st.horizon = None;
    drop(reschedule(st, &shared, me));
    result.map(|_| id)
}

/// `sched_setaffinity` on the calling simulated thread: from now on it runs only on `mask`'s
/// CPUs; if its CPU is not among them it leaves it at once and waits for an allowed one (as the
/// kernel migrates a thread narrowing its own mask). Charged as a short system call
/// ([`Costs::yield_syscall`]). Returns the placement's error for a mask it does not allow
/// (empty, or naming CPUs the machine lacks), or an error outside a simulation.
pub fn set_affinity(mask: CpuSet) -> Result<(), String> {
    if !in_simulation() {
        return Err("set_affinity is for simulated threads only".into());
    }
    let mut result = Ok(());
    with_running(false, |st, me| {
        let cost = st.costs.yield_syscall;
        st.account(me, cost);
        let c = st.threads[me].cpu;
        let now = st.cpus[c].clock;
        result = st.placement.set_affinity(me, mask, now);
        if result.is_ok() && !mask.contains(c) {
            st.give_up(me, Requeue::AffinityChanged);
        } else {
            st.offer_idle(now);
        }
    });
    result
}

/// Charge `ns` of modelled work (e.g. copying an object) to the calling simulated thread; a
/// scheduling point. Outside a simulation it does nothing.
pub fn charge(ns: Ns) {
    with_running(true, |st, me| st.account(me, ns));
}

/// Charge the copying of `objects` objects of `bytes` bytes in all ([`Costs::copy_ns`]) to
/// the calling simulated thread; a scheduling point. Outside a simulation it does nothing.
pub fn charge_copy(objects: u64, bytes: u64) {
    with_running(true, |st, me| {
        let cost = st.costs.copy_ns(objects, bytes);
        st.account(me, cost);
    });
}

/// Charge a GC worker's start in a parallel phase ([`Costs::worker_start`]) to the calling
/// simulated thread. A scheduling point; outside a simulation it does nothing.
pub fn charge_worker_start() {
    with_running(true, |st, me| {
        let cost = st.costs.worker_start;
        if cost > 0 {
            st.account(me, cost);
        }
    });
}

/// The simulation's `(line miss, far access)` costs for a collection of `footprint` bytes
/// ([`reach::ReachCosts::at`]), to be charged with [`charge`]; `(0, 0)` outside a simulation.
pub fn reach_costs(footprint: u64) -> (Ns, Ns) {
    with_context(|ctx| lock(&ctx.shared).costs.reach.at(footprint)).unwrap_or((0, 0))
}

/// Charge `pages` first-touch page faults to the calling simulated thread: of the old
/// generation ([`Costs::page_fault_old`]) with `old`, else of to-space ([`Costs::page_fault`]).
/// A scheduling point; outside a simulation it does nothing.
pub fn charge_page_faults(pages: u64, old: bool) {
    if pages == 0 {
        return;
    }
    with_running(true, |st, me| {
        let each = if old {
            st.costs.page_fault_old
        } else {
            st.costs.page_fault
        };
        let cost = each.saturating_mul(pages);
        st.account(me, cost);
    });
}

/// Charge the copying of `objects` objects of `bytes` bytes in all, read from or written to
/// memory on NUMA node `memory_node`, to the calling simulated thread: [`Costs::copy_ns`]
/// scaled by the simulation's [`Numa`] model ([`Sim::with_numa`]) for a remote node and for
/// the CPUs copying on the same node (and across nodes) at this virtual time. Without a model,
/// the same as [`charge_copy`]. A scheduling point; outside a simulation it does nothing.
pub fn charge_copy_on(objects: u64, bytes: u64, memory_node: usize) {
    with_running(true, |st, me| {
        let cpu = st.threads[me].cpu;
        let now = st.cpus[cpu].clock;
        let cost = match &mut st.numa {
            Some(numa) => numa.copy(&st.costs, objects, bytes, cpu, memory_node, now),
            None => st.costs.copy_ns(objects, bytes),
        };
        st.account(me, cost);
    });
}

/// The calling simulated thread's id, or `None` outside a simulation.
pub fn current_thread() -> Option<ThreadId> {
    with_context(|ctx| ctx.me)
}

/// The CPU simulated thread `thread` is on, as `/proc/<pid>/task/<tid>/stat` field 39 gives it:
/// the CPU it runs on, the CPU whose run queue holds it if runnable, or the CPU it last ran on
/// if blocked or finished. `None` outside a simulation or for an unknown thread.
pub fn thread_cpu(thread: ThreadId) -> Option<CpuId> {
    with_context(|ctx| {
        let st = lock(&ctx.shared);
        (thread < st.threads.len()).then(|| st.cpu_of(thread))
    })
    .flatten()
}

/// The kernel's per-CPU run-queue length, as `concord`'s runnable-thread sampler counts it:
/// per CPU, the simulated threads running there or runnable in its queue, leaving out the
/// threads in `excluded`; blocked (sleeping) and finished threads count nowhere. Not a
/// scheduling point and charges nothing (the runtime reads a snapshot sampled off the pause
/// path). `None` outside a simulation.
pub fn runnable_per_cpu(excluded: &[ThreadId]) -> Option<Vec<usize>> {
    with_context(|ctx| {
        let st = lock(&ctx.shared);
        let mut counts = vec![0; st.cpus.len()];
        for (t, thread) in st.threads.iter().enumerate() {
            let runnable = matches!(
                thread.status,
                Status::New | Status::Runnable | Status::Running
            );
            if runnable && !excluded.contains(&t) {
                counts[st.cpu_of(t)] += 1;
            }
        }
        counts
    })
}

/// Charge `op`'s cost; a scheduling point.
pub(crate) fn op(op: Op) {
    with_running(true, |st, me| {
        let cost = st.costs.of(op);
        st.account(me, cost);
    });
}

/// The longest stretch of spin-wait hints charged as one scheduling point ([`spin`]): 10 µs.
/// Another thread's effect on a spinning CPU (a wake-up that preempts the spinner) lands at
/// most this late in virtual time; the spinner's own reads and writes are unaffected, since it
/// makes none while it spins.
pub const SPIN_STRETCH: Ns = 10_000;

/// `pauses` spin-wait hints back to back. They touch no memory, so rather than one scheduling
/// point each they are charged in stretches: each as long as the CPU keeps running the thread
/// with nothing due (its slice's end, the next timer, the run's time limit), at most
/// [`SPIN_STRETCH`], and one scheduling point. A thread spinning for thousands of `PAUSE`s (as
/// HotSpot 8's termination loop does) then costs a few hand-offs, not one per 200 ns.
pub(crate) fn spin(pauses: u64) {
    let mut left = pauses;
    while left > 0 {
        let before = left;
        with_running(true, |st, me| {
            let per = st.costs.spin_loop;
            if per == 0 {
                st.account(me, 0);
                left = 0;
                return;
            }
            let room = st.spin_room(me).min(SPIN_STRETCH);
            let n = (room / per).clamp(1, left);
            st.account(me, n * per);
            left -= n;
        });
        if left == before {
            // Not in a simulation (or it ended): nothing was charged.
            return;
        }
    }
}

/// Charge the summed cost of `ops`, done back to back by one data-structure operation (a deque
/// push or steal), as one scheduling point.
pub(crate) fn ops(ops: &[Op]) {
    with_running(true, |st, me| {
        let cost = ops.iter().map(|&op| st.costs.of(op)).sum();
        st.account(me, cost);
    });
}

/// `sched_yield`: go behind the other runnable threads of this CPU's queue.
pub(crate) fn yield_now() {
    if in_simulation() {
        with_running(false, |st, me| {
            let cost = st.costs.yield_syscall;
            st.account(me, cost);
            st.threads[me].yields += 1;
            st.give_up(me, Requeue::Yield);
        });
    } else {
        std::thread::yield_now();
    }
}

/// `nanosleep(d)`: block until a virtual timer `d` from now.
pub(crate) fn sleep(d: Duration) {
    if in_simulation() {
        with_running(false, |st, me| {
            let cost = st.costs.sleep_syscall;
            st.account(me, cost);
            let at = st.clock_of(me).saturating_add(nanos(d));
            st.block(me, Blocker::Sleep);
            st.add_timer(me, at);
        });
    } else {
        std::thread::sleep(d);
    }
}

/// `futex(FUTEX_WAIT_BITSET)`: block while `*word == expected` until a wake naming one of
/// `bits`, or `timeout`. Returns whether a wake (rather than a mismatch or a timeout) ended it.
/// Outside a simulation it yields once and returns (a spurious wake-up, which futex allows).
pub(crate) fn futex_wait(
    word: &AtomicU32,
    expected: u32,
    bits: u32,
    timeout: Option<Duration>,
) -> bool {
    if !in_simulation() {
        if word.load(Ordering::SeqCst) == expected {
            std::thread::yield_now();
        }
        return false;
    }
    let mut woken = false;
    with_running(false, |st, me| {
        let cost = st.costs.futex_wait;
        st.account(me, cost);
        // The executor's lock plays the hash-bucket lock: compare and enqueue are one step.
        if word.load(Ordering::SeqCst) != expected {
            return;
        }
        let addr = word as *const AtomicU32 as usize;
        st.futexes
            .entry(addr)
            .or_default()
            .push_back(Waiter { thread: me, bits });
        st.threads[me].timed_out = false;
        st.block(me, Blocker::Futex(addr));
        if let Some(d) = timeout {
            let at = st.clock_of(me).saturating_add(nanos(d));
            st.add_timer(me, at);
        }
        woken = true;
    });
    woken && with_context(|ctx| !lock(&ctx.shared).threads[ctx.me].timed_out).unwrap_or(false)
}

/// `futex(FUTEX_WAKE_BITSET)`: wake up to `count` threads blocked on `word` whose bits meet
/// `bits`, first come first woken. Returns how many.
pub(crate) fn futex_wake(word: &AtomicU32, count: u32, bits: u32) -> usize {
    let mut woken = 0;
    with_running(false, |st, me| {
        let cost = st.costs.futex_wake;
        st.account(me, cost);
        let addr = word as *const AtomicU32 as usize;
        let Some(queue) = st.futexes.get_mut(&addr) else {
            return;
        };
        let mut chosen = Vec::new();
        queue.retain(|w| {
            let take = chosen.len() < count as usize && w.bits & bits != 0;
            if take {
                chosen.push(w.thread);
            }
            !take
        });
        if queue.is_empty() {
            st.futexes.remove(&addr);
        }
        let now = st.clock_of(me);
        let cpu = st.threads[me].cpu;
        let mut waker = 0;
        for &t in &chosen {
            waker += st.wake_from_futex(t, now, cpu);
        }
        if waker > 0 {
            st.account(me, waker);
        }
        woken = chosen.len();
    });
    woken
}

/// Whether the calling simulated thread's run is over (finished or failed): it is unwinding,
/// and waiting for another simulated thread would wait forever.
pub(crate) fn run_is_over() -> bool {
    with_context(|ctx| lock(&ctx.shared).outcome.is_some()).unwrap_or(false)
}

/// Whether the calling OS thread is a simulated thread.
pub(crate) fn in_simulation() -> bool {
    CONTEXT.with(|c| c.borrow().is_some())
}

struct Shared {
    state: Mutex<State>,
    /// Signalled once the outcome is known.
    done: Condvar,
    /// The OS threads of the simulated threads started during the run ([`spawn`]).
    spawned: Mutex<Vec<JoinHandle<()>>>,
    /// [`State::baton`] as a parked thread reads it without the lock ([`NO_BATON`]: nobody).
    baton: AtomicUsize,
    /// Set once [`State::outcome`] is: parked threads unwind (or, after a failure, stay).
    over: AtomicBool,
    /// Set once [`State::outcome`] is a failure: the simulated threads stay where they are.
    failed: AtomicBool,
    /// The host CPU every simulated thread's OS thread runs on, if one ([`Sim::one_host_cpu`]).
    host_cpu: Option<u32>,
}

/// [`Shared::baton`] while no thread holds it.
const NO_BATON: usize = usize::MAX;

struct Context {
    shared: Arc<Shared>,
    me: ThreadId,
}

thread_local! {
    static CONTEXT: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// The payload with which waiting simulated threads unwind when the simulation failed.
struct Aborted;

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    // A simulated thread's panic is caught before it could poison the state.
    shared.state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Unlock the executor's state, then unpark the thread the baton was just passed to: woken
/// while the lock is still held, it would find the lock taken (and, preempting the waker on its
/// CPU, wait for it) at every hand-off.
fn release(mut st: MutexGuard<'_, State>) {
    let wake = st.wake.take();
    drop(st);
    if let Some(os) = wake {
        os.unpark();
    }
}

fn with_context<R>(f: impl FnOnce(&Context) -> R) -> Option<R> {
    CONTEXT.with(|c| c.borrow().as_ref().map(f))
}

/// Run `step` on the executor's state as the calling (running) simulated thread, then let the
/// executor decide who runs next; returns once this thread holds the baton again. Outside a
/// simulation it does nothing. If the simulation failed meanwhile, the thread unwinds (unless it
/// already is unwinding, in which case the step is skipped). A step that only charges time
/// (`only_charges`) skips the decision while the thread stays within its horizon.
fn with_running(only_charges: bool, step: impl FnOnce(&mut State, ThreadId)) {
    let Some((shared, me)) = with_context(|ctx| (ctx.shared.clone(), ctx.me)) else {
        return;
    };
    let mut st = lock(&shared);
    if st.outcome.is_some() {
        drop(st);
        abort_unless_unwinding(&shared);
        return;
    }
    step(&mut st, me);
    if only_charges && st.within_horizon(me) {
        return;
    }
    st.horizon = None;
    drop(reschedule(st, &shared, me));
}

/// After a step of the running `me`: keep the baton if `me` still runs and is (within the
/// lookahead) earliest, otherwise pass it on and wait until it comes back.
fn reschedule<'a>(
    mut st: MutexGuard<'a, State>,
    shared: &'a Shared,
    me: ThreadId,
) -> MutexGuard<'a, State> {
    let c = st.threads[me].cpu;
    if st.threads[me].status == Status::Running && st.cpus[c].slice_left == 0 {
        st.give_up(me, Requeue::SliceExpired);
    }
    // The decision, once made here, stands for the hand-off: nothing changes in between.
    let mut decided = None;
    if st.threads[me].status == Status::Running {
        // The placement may have moved `me` to another CPU meanwhile.
        let mine = st.clock_of(me);
        let next = st.next();
        if let Some((t, clock)) = next {
            // Firing timers may have preempted `me`.
            let still_running = st.threads[me].status == Status::Running;
            if still_running
                && (t == me || mine <= clock.saturating_add(st.lookahead))
                && st.within_limit(mine)
            {
                st.horizon = Some(st.horizon_of(me));
                return st;
            }
        }
        decided = Some(next);
    }
    st.pass_baton_as(shared, decided);
    match State::await_baton(st, shared, me) {
        Ok(st) => st,
        Err(()) => {
            abort_unless_unwinding(shared);
            lock(shared)
        }
    }
}

/// The calling simulated thread's run is over and it is not unwinding already: after a
/// finished run (a background thread) it unwinds; after a failure it stays parked for good
/// (see [`Sim::try_run`]).
fn abort_unless_unwinding(shared: &Shared) {
    if std::thread::panicking() {
        return;
    }
    // Acquire: pairs with the Release store in `State::end`.
    if shared.failed.load(Ordering::Acquire) {
        loop {
            std::thread::park();
        }
    }
    panic::resume_unwind(Box::new(Aborted));
}

fn thread_main(shared: Arc<Shared>, me: ThreadId, body: Box<dyn FnOnce() + Send>) {
    if let Some(cpu) = shared.host_cpu {
        // A refusal (a cpuset without that CPU by now) costs only speed.
        let _ = concord::os::affinity::set_current_thread_affinity(&[cpu]);
    }
    CONTEXT.with(|c| {
        *c.borrow_mut() = Some(Context {
            shared: shared.clone(),
            me,
        })
    });
    let started = {
        let st = lock(&shared);
        State::await_baton(st, &shared, me).is_ok()
    };
    if started {
        let result = panic::catch_unwind(AssertUnwindSafe(body));
        let mut st = lock(&shared);
        match result {
            Err(payload) if !payload.is::<Aborted>() => {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(non-string panic payload)".into());
                let name = st.threads[me].name.clone();
                st.fail(
                    &shared,
                    format!("simulated thread `{name}` panicked: {message}"),
                );
            }
            _ if st.outcome.is_some() => {}
            _ => st.finish(&shared, me),
        }
        release(st);
    }
    CONTEXT.with(|c| c.borrow_mut().take());
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocker {
    Futex(usize),
    Sleep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    /// Spawned, not yet handed to the placement.
    New,
    Runnable,
    Running,
    Blocked(Blocker),
    Finished,
}

struct Thread {
    name: String,
    /// Its OS thread, to unpark when it gets the baton (set once that thread is spawned).
    os: Option<std::thread::Thread>,
    status: Status,
    cpu: CpuId,
    /// When it last became runnable.
    ready_at: Ns,
    /// When it last blocked.
    blocked_since: Ns,
    /// Timers armed with another generation are stale.
    timer_gen: u64,
    /// Whether its last futex wait ended by a timeout.
    timed_out: bool,
    /// Whether it has run at all (its first CPU is no migration).
    started: bool,
    /// A background thread ([`Sim::spawn_background`]): not counted in `live`.
    background: bool,
    run_ns: Ns,
    wait_ns: Ns,
    blocked_ns: Ns,
    finished_ns: Ns,
    ops: u64,
    preemptions: u64,
    yields: u64,
    blocks: u64,
    migrations: u64,
}

impl Thread {
    fn new(name: String) -> Self {
        Thread {
            name,
            os: None,
            status: Status::New,
            cpu: 0,
            ready_at: 0,
            blocked_since: 0,
            timer_gen: 0,
            timed_out: false,
            started: false,
            background: false,
            run_ns: 0,
            wait_ns: 0,
            blocked_ns: 0,
            finished_ns: 0,
            ops: 0,
            preemptions: 0,
            yields: 0,
            blocks: 0,
            migrations: 0,
        }
    }
}

#[derive(Default)]
struct Cpu {
    clock: Ns,
    current: Option<ThreadId>,
    last: Option<ThreadId>,
    slice_left: Ns,
    busy_ns: Ns,
    switches: u64,
    /// The host's halt-poll window for this CPU, ns (with [`wake::HaltPoll`] only).
    poll_window: Ns,
}

struct Waiter {
    thread: ThreadId,
    bits: u32,
}

enum Outcome {
    Finished,
    Failed(SimError),
}

struct State {
    costs: Costs,
    lookahead: Ns,
    limit: Option<Ns>,
    placement: Box<dyn Placement>,
    threads: Vec<Thread>,
    cpus: Vec<Cpu>,
    /// Tie-break order of CPUs with equal clocks, drawn from the seed.
    rank: Vec<usize>,
    /// (time, arming order, thread, generation), earliest first.
    timers: BinaryHeap<Reverse<(Ns, u64, ThreadId, u64)>>,
    timer_seq: u64,
    /// Futex wait queues by word address (looked up, never iterated).
    futexes: BTreeMap<usize, VecDeque<Waiter>>,
    /// The thread allowed to run.
    baton: Option<ThreadId>,
    /// The OS thread to unpark (the new baton holder's) once the lock is released.
    wake: Option<std::thread::Thread>,
    outcome: Option<Outcome>,
    /// Threads not finished.
    live: usize,
    ops: u64,
    handoffs: u64,
    /// Up to which clock the baton holder may charge time without a decision, if known.
    horizon: Option<Ns>,
    /// The NUMA cost model of [`charge_copy_on`], if any.
    numa: Option<Numa>,
}

impl State {
    fn clock_of(&self, t: ThreadId) -> Ns {
        self.cpus[self.threads[t].cpu].clock
    }

    /// The CPU `t` runs on, is queued on (as the placement says), or last ran on.
    fn cpu_of(&self, t: ThreadId) -> CpuId {
        let thread = &self.threads[t];
        match thread.status {
            Status::New | Status::Runnable => self.placement.queued_cpu(t).unwrap_or(thread.cpu),
            _ => thread.cpu,
        }
    }

    /// Charge `ns` of running to `t` and its CPU.
    fn account(&mut self, t: ThreadId, ns: Ns) {
        let c = self.threads[t].cpu;
        let cpu = &mut self.cpus[c];
        cpu.clock = cpu.clock.saturating_add(ns);
        cpu.busy_ns += ns;
        cpu.slice_left = cpu.slice_left.saturating_sub(ns);
        let thread = &mut self.threads[t];
        thread.run_ns += ns;
        thread.ops += 1;
        self.ops += 1;
        self.placement.ran(c, t, ns);
    }

    /// The running `t` leaves its CPU but stays runnable.
    fn give_up(&mut self, t: ThreadId, why: Requeue) {
        let c = self.threads[t].cpu;
        let now = self.cpus[c].clock;
        self.cpus[c].current = None;
        let thread = &mut self.threads[t];
        thread.status = Status::Runnable;
        thread.ready_at = now;
        if matches!(why, Requeue::SliceExpired | Requeue::WakePreempted) {
            thread.preemptions += 1;
        }
        self.placement.requeue(c, t, now, why);
        self.dispatch(c, now);
        self.offer_idle(now);
    }

    /// The running `t` blocks on `blocker`.
    fn block(&mut self, t: ThreadId, blocker: Blocker) {
        let c = self.threads[t].cpu;
        let now = self.cpus[c].clock;
        self.cpus[c].current = None;
        let thread = &mut self.threads[t];
        thread.status = Status::Blocked(blocker);
        thread.blocked_since = now;
        thread.blocks += 1;
        self.placement.left(c, t, now, false);
        self.dispatch(c, now);
        self.offer_idle(now);
    }

    /// Thread `t` woken by a futex wake on CPU `waker` at `now`: runnable after the flat
    /// [`Costs::wakeup_latency`], or, with a [`Costs::wake`] table, after the latency of the
    /// CPU the placement puts it on: by that CPU's idle time if it is idle, none if it runs
    /// something (the thread is queued there at once). Returns the waker's time for it
    /// beyond the wake call's own cost (the table's, for an idle CPU; otherwise 0).
    fn wake_from_futex(&mut self, t: ThreadId, now: Ns, waker: CpuId) -> Ns {
        if !self.costs.wake.is_table() {
            let at = now.saturating_add(self.costs.wakeup_latency);
            self.make_runnable(t, at, Some(waker));
            return 0;
        }
        let last = self.threads[t].cpu;
        let c = self.placement.wake(t, last, Some(waker), now);
        let cpu = &self.cpus[c];
        let (latency, waker_ns) = match cpu.current {
            Some(_) => (0, 0),
            None => self
                .costs
                .wake
                .at_window(now.saturating_sub(cpu.clock), cpu.poll_window)
                .unwrap_or((self.costs.wakeup_latency, 0)),
        };
        self.runnable_on(t, c, now.saturating_add(latency));
        waker_ns
    }

    /// The blocked `t` becomes runnable at `at` (woken from a thread on `waker`, or a timer).
    fn make_runnable(&mut self, t: ThreadId, at: Ns, waker: Option<CpuId>) {
        let last = self.threads[t].cpu;
        let c = self.placement.wake(t, last, waker, at);
        self.runnable_on(t, c, at);
    }

    /// Thread `t`, placed on CPU `c`, runnable from `at`.
    fn runnable_on(&mut self, t: ThreadId, c: CpuId, at: Ns) {
        let thread = &mut self.threads[t];
        thread.blocked_ns += at.saturating_sub(thread.blocked_since);
        thread.status = Status::Runnable;
        thread.ready_at = at;
        thread.timer_gen += 1;
        if let Some(current) = self.cpus[c].current {
            if self.placement.preempt_on_wake(c, current, t, at) {
                self.give_up(current, Requeue::WakePreempted);
            }
        }
        self.dispatch(c, at);
        self.offer_idle(at);
    }

    /// If `c` is free, start the thread the placement picks for it, no earlier than `floor`
    /// (the time of the event that made the pick possible: an idle CPU's own clock stops when it
    /// goes idle).
    fn dispatch(&mut self, c: CpuId, floor: Ns) {
        if self.cpus[c].current.is_some() {
            return;
        }
        let Some(t) = self.placement.pick(c, self.cpus[c].clock.max(floor)) else {
            return;
        };
        let thread = &mut self.threads[t];
        debug_assert_eq!(thread.status, Status::Runnable, "{} picked", thread.name);
        let cpu = &mut self.cpus[c];
        let start = cpu.clock.max(thread.ready_at).max(floor);
        thread.wait_ns += start - thread.ready_at;
        if let Some(hp) = self.costs.wake.halt_poll() {
            // The CPU was halted from its clock until now (a CPU that goes straight on to
            // the next thread does not halt).
            if start > cpu.clock {
                cpu.poll_window = hp.next_window(cpu.poll_window, start - cpu.clock);
            }
        }
        cpu.clock = start;
        if cpu.last != Some(t) {
            cpu.clock += self.costs.context_switch;
            cpu.busy_ns += self.costs.context_switch;
            cpu.switches += 1;
        }
        if thread.started && thread.cpu != c {
            thread.migrations += 1;
        }
        thread.started = true;
        thread.cpu = c;
        thread.status = Status::Running;
        cpu.current = Some(t);
        cpu.last = Some(t);
        let now = cpu.clock;
        cpu.slice_left = self.placement.time_slice(c, t, now).max(1);
    }

    /// After an event at `now`: give every idle CPU a chance to pick a thread, then take off
    /// its CPU each running thread the placement wants rescheduled (which offers again).
    fn offer_idle(&mut self, now: Ns) {
        for c in 0..self.cpus.len() {
            if self.cpus[c].current.is_none() {
                self.dispatch(c, now);
            }
        }
        // One at a time: each requeue changes what the placement wants next.
        while let Some((c, t)) = self
            .placement
            .resched()
            .into_iter()
            .find_map(|c| self.cpus[c].current.map(|t| (c, t)))
        {
            debug_assert_eq!(self.threads[t].cpu, c);
            self.give_up(t, Requeue::SliceExpired);
        }
    }

    fn add_timer(&mut self, t: ThreadId, at: Ns) {
        let thread = &mut self.threads[t];
        thread.timer_gen += 1;
        self.timers
            .push(Reverse((at, self.timer_seq, t, thread.timer_gen)));
        self.timer_seq += 1;
    }

    /// The busy CPU with the earliest clock (ties by the seeded rank).
    fn earliest_busy(&self) -> Option<(Ns, CpuId)> {
        // A plain loop: this runs at every decision, and the ranks are distinct (no ties).
        let mut earliest: Option<(Ns, usize, CpuId)> = None;
        for (c, (cpu, &rank)) in self.cpus.iter().zip(&self.rank).enumerate() {
            if cpu.current.is_some()
                && earliest.is_none_or(|(clock, r, _)| (cpu.clock, rank) < (clock, r))
            {
                earliest = Some((cpu.clock, rank, c));
            }
        }
        earliest.map(|(clock, _, c)| (clock, c))
    }

    /// The earliest pending timer: a thread's (sleep, futex timeout) or the placement's.
    fn next_timer(&self) -> Option<Ns> {
        let thread = self.timers.peek().map(|&Reverse((at, ..))| at);
        match (thread, self.placement.next_timer()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire the timers due before the earliest busy CPU's clock, then return the thread that
    /// runs next and its clock (`None`: nothing can run and no timer is pending).
    fn next(&mut self) -> Option<(ThreadId, Ns)> {
        loop {
            let busy = self.earliest_busy();
            let due = match (self.next_timer(), busy) {
                (Some(at), Some((clock, _))) => at <= clock,
                (Some(_), None) => true,
                (None, _) => false,
            };
            if !due {
                return busy.map(|(clock, c)| (self.cpus[c].current.expect("busy CPU"), clock));
            }
            // A thread's timer first on a tie.
            let thread_at = self.timers.peek().map(|&Reverse((at, ..))| at);
            if let Some(at) = self.placement.next_timer() {
                if thread_at.is_none_or(|t| at < t) {
                    self.placement.run_timers(at);
                    self.offer_idle(at);
                    continue;
                }
            }
            let Reverse((at, _, t, generation)) = self.timers.pop().expect("peeked timer");
            let thread = &mut self.threads[t];
            if thread.timer_gen != generation {
                continue;
            }
            if let Status::Blocked(blocker) = thread.status {
                if let Blocker::Futex(addr) = blocker {
                    thread.timed_out = true;
                    if let Some(queue) = self.futexes.get_mut(&addr) {
                        queue.retain(|w| w.thread != t);
                        if queue.is_empty() {
                            self.futexes.remove(&addr);
                        }
                    }
                }
                self.make_runnable(t, at, None);
            }
        }
    }

    /// The latest clock up to which the running `me`, doing nothing but charging time, would
    /// keep the baton with nothing else happening: the earliest other busy CPU plus the
    /// lookahead, before the next timer, within the time limit. Only `me`'s clock moves while
    /// it charges, so until then the full decision would come out the same.
    fn horizon_of(&self, me: ThreadId) -> Ns {
        let mine = self.threads[me].cpu;
        let mut horizon = (0..self.cpus.len())
            .filter(|&c| c != mine && self.cpus[c].current.is_some())
            .map(|c| self.cpus[c].clock)
            .min()
            .map_or(Ns::MAX, |clock| clock.saturating_add(self.lookahead));
        if let Some(at) = self.next_timer() {
            horizon = horizon.min(at.saturating_sub(1));
        }
        horizon.min(self.limit.unwrap_or(Ns::MAX))
    }

    /// How long the running `me` may charge before something due could take its CPU away: the
    /// end of its slice, the next timer, the time limit.
    fn spin_room(&self, me: ThreadId) -> Ns {
        let c = self.threads[me].cpu;
        let clock = self.cpus[c].clock;
        let mut room = self.cpus[c].slice_left;
        if let Some(at) = self.next_timer() {
            room = room.min(at.saturating_sub(clock));
        }
        if let Some(limit) = self.limit {
            room = room.min(limit.saturating_sub(clock));
        }
        room
    }

    /// Whether the running `me` may go on without a decision (see [`horizon_of`](Self::horizon_of)).
    fn within_horizon(&self, me: ThreadId) -> bool {
        let c = self.threads[me].cpu;
        self.horizon.is_some_and(|h| self.cpus[c].clock <= h) && self.cpus[c].slice_left > 0
    }

    fn within_limit(&self, clock: Ns) -> bool {
        !matches!(self.limit, Some(limit) if clock > limit)
    }

    /// Hand the baton to the thread that runs next, or record the outcome if none can. Once no
    /// foreground thread is left the run is over, whatever background threads could still do.
    fn pass_baton(&mut self, shared: &Shared) {
        self.pass_baton_as(shared, None);
    }

    /// [`pass_baton`](Self::pass_baton) with the result of [`next`](Self::next) if the
    /// caller has just computed it (calling it again would come out the same: the timers due
    /// have fired).
    fn pass_baton_as(&mut self, shared: &Shared, decided: Option<Option<(ThreadId, Ns)>>) {
        if self.live == 0 {
            // Background threads still waiting for the baton unwind (`await_baton` fails).
            self.end(shared, Outcome::Finished);
            return;
        }
        match decided.unwrap_or_else(|| self.next()) {
            Some((t, clock)) if self.within_limit(clock) => {
                self.horizon = None;
                // Kept by its holder (the caller): nobody to wake.
                if self.baton != Some(t) {
                    self.handoffs += 1;
                    self.baton = Some(t);
                    shared.baton.store(t, Ordering::Release);
                    self.wake = self.threads[t].os.clone();
                }
            }
            Some((_, clock)) => {
                let over = SimError::TimeLimit {
                    limit_ns: self.limit.unwrap_or(0),
                    reached_ns: clock,
                    threads: self.describe_threads(),
                };
                self.end(shared, Outcome::Failed(over));
            }
            None => {
                let message = format!(
                    "simulated deadlock: every thread is blocked: {}",
                    self.describe_threads()
                );
                self.fail(shared, message);
            }
        }
    }

    /// Wait until `me` holds the baton; `Err` if the run is over (finished or failed)
    /// meanwhile. Parked without the lock: the holder passing the baton to `me` unparks it
    /// (an unpark before the park is not lost: `park` then returns at once).
    fn await_baton<'a>(
        mut st: MutexGuard<'a, State>,
        shared: &'a Shared,
        me: ThreadId,
    ) -> Result<MutexGuard<'a, State>, ()> {
        loop {
            if st.outcome.is_some() {
                return Err(());
            }
            if st.baton == Some(me) {
                return Ok(st);
            }
            release(st);
            while shared.baton.load(Ordering::Acquire) != me && !shared.over.load(Ordering::Acquire)
            {
                std::thread::park();
            }
            st = lock(shared);
        }
    }

    /// The running `me` returned from its body.
    fn finish(&mut self, shared: &Shared, me: ThreadId) {
        let c = self.threads[me].cpu;
        let now = self.cpus[c].clock;
        self.cpus[c].current = None;
        let thread = &mut self.threads[me];
        thread.status = Status::Finished;
        thread.finished_ns = now;
        if !thread.background {
            self.live -= 1;
        }
        if self.live == 0 {
            // The run ends here for the background threads that have not finished on their own.
            for thread in self
                .threads
                .iter_mut()
                .filter(|t| t.background && t.status != Status::Finished)
            {
                thread.finished_ns = now;
            }
        }
        self.placement.left(c, me, now, true);
        self.dispatch(c, now);
        self.offer_idle(now);
        self.pass_baton(shared);
    }

    /// Record a failure and wake every waiting thread so that it unwinds.
    fn fail(&mut self, shared: &Shared, message: String) {
        self.end(shared, Outcome::Failed(SimError::Failed(message)));
    }

    /// Record the outcome (the first one stands), take the baton from everyone and wake every
    /// parked thread (to unwind) and [`Sim::run`].
    fn end(&mut self, shared: &Shared, outcome: Outcome) {
        if self.outcome.is_none() {
            if matches!(outcome, Outcome::Failed(_)) {
                // Release: pairs with the Acquire load in `abort_unless_unwinding`.
                shared.failed.store(true, Ordering::Release);
            }
            self.outcome = Some(outcome);
        }
        self.baton = None;
        self.wake = None;
        shared.baton.store(NO_BATON, Ordering::Release);
        shared.over.store(true, Ordering::Release);
        for os in self.threads.iter().filter_map(|t| t.os.as_ref()) {
            os.unpark();
        }
        shared.done.notify_all();
    }

    /// Every unfinished thread with its state, for failure messages.
    fn describe_threads(&self) -> String {
        let mut out = String::new();
        for thread in self.threads.iter().filter(|t| t.status != Status::Finished) {
            let what = match thread.status {
                Status::Blocked(Blocker::Futex(addr)) => format!("blocked on futex {addr:#x}"),
                Status::Blocked(Blocker::Sleep) => "sleeping".into(),
                Status::Running => format!("running on CPU {}", thread.cpu),
                Status::Runnable | Status::New => "runnable".into(),
                Status::Finished => unreachable!("filtered out"),
            };
            if !out.is_empty() {
                out.push_str(", ");
            }
            let _ = write!(out, "`{}` ({what})", thread.name);
        }
        out
    }

    fn report(&self) -> Report {
        Report {
            end_ns: self
                .threads
                .iter()
                .filter(|t| !t.background)
                .map(|t| t.finished_ns)
                .max()
                .unwrap_or(0),
            threads: self
                .threads
                .iter()
                .map(|t| ThreadReport {
                    name: t.name.clone(),
                    run_ns: t.run_ns,
                    wait_ns: t.wait_ns,
                    blocked_ns: t.blocked_ns,
                    finished_ns: t.finished_ns,
                    ops: t.ops,
                    preemptions: t.preemptions,
                    yields: t.yields,
                    blocks: t.blocks,
                    migrations: t.migrations,
                    last_cpu: t.cpu,
                    background: t.background,
                })
                .collect(),
            cpus: self
                .cpus
                .iter()
                .map(|c| CpuReport {
                    busy_ns: c.busy_ns,
                    context_switches: c.switches,
                })
                .collect(),
            ops: self.ops,
            handoffs: self.handoffs,
        }
    }
}

fn nanos(d: Duration) -> Ns {
    u64::try_from(d.as_nanos()).unwrap_or(Ns::MAX)
}

/// SplitMix64 (Steele, Lea and Flood): the seed's stream for tie-breaking.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::atomic::{AtomicU32 as SimU32, Ordering::SeqCst};
    use crate::sync::{futex, hint, thread};

    /// Distinct costs, so each hand-computed total says which operations were charged.
    const COSTS: Costs = Costs {
        atomic_load: 1,
        atomic_store: 2,
        atomic_rmw: 3,
        cas: 4,
        lock_uncontended: 5,
        futex_wait: 100,
        futex_wake: 200,
        yield_syscall: 300,
        sleep_syscall: 400,
        spin_loop: 7,
        context_switch: 1_000,
        wakeup_latency: 50,
        wake: wake::WakeCosts::NONE,
        copy_per_object_ps: 10_000,
        copy_per_byte_ps: 250,
        page_fault: 900,
        page_fault_old: 900,
        reach: reach::ReachCosts::NONE,
        worker_start: 0,
    };

    #[test]
    fn copying_is_charged_per_object_and_per_byte_to_the_nearest_ns() {
        assert_eq!(COSTS.copy_ns(0, 0), 0);
        // 3 objects (30 ns) and 10 bytes (2.5 ns, rounded up to 3).
        assert_eq!(COSTS.copy_ns(3, 10), 33);
        assert_eq!(COSTS.copy_ns(0, 1), 0);
        assert_eq!(COSTS.copy_ns(0, 2), 1);
        assert_eq!(COSTS.copy_ns(u64::MAX, u64::MAX), Ns::MAX);
        let with_copy = one_thread(|| charge_copy(3, 10));
        let without = one_thread(|| charge(0));
        assert_eq!(with_copy.end_ns - without.end_ns, 33);
    }

    #[test]
    fn runnable_counts_leave_out_sleepers_and_the_excluded() {
        let seen = Arc::new(Mutex::new(None));
        let out = seen.clone();
        let mut sim = Sim::new(2, COSTS, 0);
        sim.spawn("a", move || {
            charge(5_000); // b has gone to sleep by now
            *out.lock().unwrap() = Some((
                runnable_per_cpu(&[]),
                runnable_per_cpu(&[2]),
                thread_cpu(1),
                thread_cpu(2),
                thread_cpu(9),
                current_thread(),
            ));
        });
        sim.spawn("b", || thread::sleep(Duration::from_millis(1)));
        sim.spawn("c", || charge(10)); // home CPU 2 mod 2 = 0, queued behind a
        sim.run();
        // a runs on CPU 0 with c queued there; b sleeps (last on CPU 1) and counts nowhere.
        assert_eq!(
            seen.lock().unwrap().take(),
            Some((
                Some(vec![2, 0]),
                Some(vec![1, 0]),
                Some(1),
                Some(0),
                None,
                Some(0)
            ))
        );
        assert_eq!(runnable_per_cpu(&[]), None);
        assert_eq!(thread_cpu(0), None);
        assert_eq!(current_thread(), None);
    }

    #[test]
    fn background_threads_end_with_the_last_foreground_thread() {
        // The limit turns a run that background threads keep alive into a failure.
        let mut sim = Sim::new(3, COSTS, 0).time_limit(10_000_000);
        sim.spawn("work", || charge(100_000));
        let on = |cpu| ThreadSpec {
            start_cpu: Some(cpu),
            ..ThreadSpec::default()
        };
        sim.spawn_background("spin", on(1), || loop {
            charge(1_000);
        })
        .unwrap();
        sim.spawn_background("asleep", on(2), || {
            thread::sleep(Duration::from_secs(1));
        })
        .unwrap();
        sim.spawn_background("brief", on(2), || charge(10)).unwrap();
        let report = sim.run();
        // work: in at 1000, done at 101 000. spin: in at 1000 on CPU 1, charging 1000 at a
        // time; it is stopped once work is done, at most a step past the end (the baton went
        // to it while work was ahead by more than the lookahead). asleep: in at 1000 on CPU 2,
        // asleep from 1400 (the system call); brief: in at 2400, done at 2410.
        assert_eq!(report.end_ns, 101_000);
        let [work, spin, asleep, brief] = &report.threads[..] else {
            panic!("four threads: {report:?}");
        };
        assert!(!work.background && spin.background && asleep.background && brief.background);
        assert!(
            (100_000 - 1_000..=100_000 + 1_000 + Sim::DEFAULT_LOOKAHEAD).contains(&spin.run_ns),
            "{spin:?}"
        );
        assert_eq!(report.foreground_run_ns(), 100_000);
        assert_eq!(
            report.background_run_ns(),
            spin.run_ns + asleep.run_ns + brief.run_ns
        );
        assert_eq!((asleep.run_ns, asleep.blocks), (400, 1));
        // The run's end for those still at it; its own end for one that finished.
        assert_eq!(spin.finished_ns, 101_000);
        assert_eq!(asleep.finished_ns, 101_000);
        assert_eq!((brief.finished_ns, brief.run_ns), (2_410, 10));
        // Only background threads: nothing to wait for.
        let mut sim = Sim::new(1, COSTS, 0).time_limit(10_000_000);
        sim.spawn_background("spin", ThreadSpec::default(), || loop {
            charge(1_000);
        })
        .unwrap();
        assert_eq!(sim.run().end_ns, 0);
    }

    fn one_thread(body: impl FnOnce() + Send + 'static) -> Report {
        let mut sim = Sim::new(1, COSTS, 0);
        sim.spawn("only", body);
        sim.run()
    }

    #[test]
    fn a_run_of_spins_is_charged_in_stretches_of_at_most_10_us() {
        let report = one_thread(|| hint::spin_loops(100_000));
        // 1428 spins of 7 ns fit in 10 µs: 70 such stretches and one of the 40 left.
        assert_eq!(report.threads[0].run_ns, 700_000);
        assert_eq!(report.threads[0].ops, 71);
        assert_eq!(report.end_ns, 1_000 + 700_000);
    }

    /// Two threads on one CPU under round-robin (3 ms slices) and a sleeper on the other CPU:
    /// spinning a run at once or one spin at a time gives the same schedule (the slice ends and
    /// the timer fire at the same virtual times), only fewer operations.
    #[test]
    fn a_run_of_spins_keeps_the_schedule_of_spinning_one_at_a_time() {
        fn run(at_once: bool) -> (Report, Vec<Ns>) {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let mut sim = Sim::new(2, COSTS, 0);
            let on = |cpu| ThreadSpec {
                start_cpu: Some(cpu),
                ..ThreadSpec::default()
            };
            let spins = move || {
                if at_once {
                    hint::spin_loops(1_000_000);
                } else {
                    (0..1_000_000).for_each(|_| hint::spin_loop());
                }
            };
            sim.spawn_with("spinner", on(0), spins).unwrap();
            let out = seen.clone();
            sim.spawn_with("other", on(0), move || {
                out.lock().unwrap().push(now().unwrap());
                spins();
                out.lock().unwrap().push(now().unwrap());
            })
            .unwrap();
            let out = seen.clone();
            sim.spawn_with("sleeper", on(1), move || {
                thread::sleep(Duration::from_micros(15));
                out.lock().unwrap().push(now().unwrap());
            })
            .unwrap();
            let report = sim.run();
            let times = seen.lock().unwrap().clone();
            (report, times)
        }
        let (one_by_one, times_one) = run(false);
        let (at_once, times_run) = run(true);
        assert_eq!(times_one, times_run);
        assert_eq!(one_by_one.end_ns, at_once.end_ns);
        let run_ns = |r: &Report| r.threads.iter().map(|t| t.run_ns).collect::<Vec<_>>();
        assert_eq!(run_ns(&one_by_one), run_ns(&at_once));
        assert!(at_once.threads[0].ops * 100 < one_by_one.threads[0].ops);
    }

    #[test]
    fn every_operation_charges_its_cost_after_the_first_context_switch() {
        let report = one_thread(|| {
            let a = SimU32::new(0);
            charge(100);
            a.load(SeqCst);
            a.store(1, SeqCst);
            a.fetch_add(1, SeqCst);
            let _ = a.compare_exchange(2, 3, SeqCst, SeqCst);
            hint::spin_loop();
            thread::yield_now(); // alone on its CPU: the system call, no switch
        });
        // 1000 (switch in) + 100 + 1 + 2 + 3 + 4 + 7 + 300.
        assert_eq!(report.end_ns, 1_417);
        assert_eq!(report.threads[0].run_ns, 417);
        assert_eq!(report.threads[0].ops, 7);
        assert_eq!(report.threads[0].yields, 1);
        assert_eq!(report.cpus[0].busy_ns, 1_417);
        assert_eq!(report.cpus[0].context_switches, 1);
    }

    #[test]
    fn the_simulated_threads_run_on_one_host_cpu_unless_told_otherwise() {
        use concord::os::affinity::current_thread_affinity;
        let caller = current_thread_affinity().expect("the test thread's affinity");
        for one in [true, false] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let mut sim = Sim::new(2, COSTS, 0).one_host_cpu(one);
            for name in ["a", "b"] {
                let seen = seen.clone();
                sim.spawn(name, move || {
                    let mask = current_thread_affinity().expect("a simulated thread's affinity");
                    seen.lock().unwrap().push(mask);
                });
            }
            let report = sim.run();
            assert_eq!(report.threads.len(), 2);
            let seen = seen.lock().unwrap();
            if one {
                // One CPU, the same for both, one the caller may use.
                assert_eq!(seen[0].len(), 1, "{seen:?}");
                assert_eq!(seen[0], seen[1]);
                assert!(caller.contains(&seen[0][0]), "{seen:?} of {caller:?}");
            } else {
                assert_eq!(*seen, vec![caller.clone(), caller.clone()]);
            }
        }
    }

    #[test]
    fn sleep_is_a_virtual_timer() {
        let report = one_thread(|| thread::sleep(Duration::from_micros(10)));
        // 1000 (switch in) + 400 (nanosleep) + 10 000 asleep; back on the same CPU: no switch.
        assert_eq!(report.end_ns, 11_400);
        assert_eq!(report.threads[0].blocked_ns, 10_000);
        assert_eq!(report.threads[0].blocks, 1);
        assert_eq!(report.cpus[0].busy_ns, 1_400);
    }

    #[test]
    fn futex_wait_times_out_or_returns_on_a_changed_word() {
        let report = one_thread(|| {
            let w = SimU32::new(0);
            futex::wait(&w, 1, Some(Duration::from_micros(1))); // word differs: no sleep
            futex::wait(&w, 0, Some(Duration::from_nanos(5_000))); // times out
        });
        // 1000 + 100 + 100 + 5000.
        assert_eq!(report.end_ns, 6_200);
        assert_eq!(report.threads[0].blocked_ns, 5_000);
    }

    #[test]
    fn a_woken_thread_runs_after_the_wake_and_its_latency() {
        let report = wake_once(2, COSTS);
        // Waiter: in at 1000, load 1001, blocks at 1101. Waker: in at 1000, work to 11 000,
        // store 11 002, wake 11 202; the waiter is runnable at 11 252 and loads at 11 253.
        assert_eq!(report.threads[0].finished_ns, 11_253);
        assert_eq!(report.threads[0].blocked_ns, 11_252 - 1_101);
        assert_eq!(report.threads[1].finished_ns, 11_202);
        assert_eq!(report.end_ns, 11_253);
    }

    /// One waiter and one waker on `cpus` CPUs under `costs`: the report.
    fn wake_once(cpus: usize, costs: Costs) -> Report {
        let word = Arc::new(SimU32::new(0));
        let mut sim = Sim::new(cpus, costs, 3);
        let w = word.clone();
        sim.spawn("waiter", move || {
            while w.load(SeqCst) == 0 {
                futex::wait(&w, 0, None);
            }
        });
        let w = word.clone();
        sim.spawn("waker", move || {
            charge(10_000);
            w.store(1, SeqCst);
            futex::wake(&w, 1);
        });
        sim.run()
    }

    #[test]
    fn with_a_wake_table_the_latency_and_the_wakers_time_follow_the_cpus_idle_time() {
        let table = wake::WakeCosts::new(&[
            wake::WakePoint {
                idle_ns: 1_000,
                latency: 500,
                waker: 70,
            },
            wake::WakePoint {
                idle_ns: 100_000,
                latency: 2_500,
                waker: 170,
            },
        ])
        .unwrap();
        let costs = Costs {
            wake: table,
            ..COSTS
        };
        // As in the test above, the waiter's CPU went idle at 1101 and the wake call ends at
        // 11 202: idle 10 101 ns, half way (0.502) from 1 µs to 100 µs in log2, so a latency
        // of 1504 and 120 ns more for the waker. The waiter is runnable at 12 706.
        let report = wake_once(2, costs);
        assert_eq!(report.threads[0].finished_ns, 12_707);
        assert_eq!(report.threads[1].finished_ns, 11_322);
        // On one CPU the waiter is woken onto the busy CPU of its waker: no latency, no extra
        // time; it runs once the waker is done (its 1000 ns switch in).
        let one = wake_once(1, costs);
        let flat = wake_once(
            1,
            Costs {
                wakeup_latency: 0,
                ..COSTS
            },
        );
        assert_eq!(one.threads[0].finished_ns, flat.threads[0].finished_ns);
        assert_eq!(one.threads[1].finished_ns, flat.threads[1].finished_ns);
    }

    #[test]
    fn with_halt_polling_a_short_halt_wakes_fast_once_the_window_covers_it_and_slowly_after_a_long_one(
    ) {
        let hp = wake::HaltPoll {
            max_ns: 100_000,
            latency: 1_000,
            waker: 0,
        };
        let table = wake::WakeCosts::new(&[wake::WakePoint {
            idle_ns: 10_000,
            latency: 5_000,
            waker: 0,
        }])
        .unwrap()
        .with_halt_poll(hp);
        let costs = Costs {
            wake: table,
            ..COSTS
        };
        // The waker (CPU 0) computes a gap, then wakes the sleeper (CPU 1), whose CPU halts
        // from the sleeper's block to the wake-up: about the gap.
        let gaps: [Ns; 8] = [
            30_000, 30_000, 30_000, 30_000, 30_000, 30_000, 1_000_000, 30_000,
        ];
        let rounds = gaps.len() as u32;
        let word = Arc::new(SimU32::new(0));
        let stamps = Arc::new(std::sync::Mutex::new(vec![0; gaps.len()]));
        let woke = Arc::new(std::sync::Mutex::new(vec![0; gaps.len()]));
        let mut sim = Sim::new(2, costs, 3);
        let pinned = |cpu| ThreadSpec {
            affinity: Some(CpuSet::single(cpu)),
            start_cpu: Some(cpu),
            ..ThreadSpec::default()
        };
        let (w, seen) = (word.clone(), woke.clone());
        sim.spawn_with("sleeper", pinned(1), move || {
            for i in 0..rounds {
                while w.load(SeqCst) == i {
                    futex::wait(&w, i, None);
                }
                seen.lock().unwrap()[i as usize] = now().unwrap();
            }
        })
        .unwrap();
        let (w, called) = (word.clone(), stamps.clone());
        sim.spawn_with("waker", pinned(0), move || {
            for (i, &gap) in gaps.iter().enumerate() {
                charge(gap);
                called.lock().unwrap()[i] = now().unwrap();
                w.store(i as u32 + 1, SeqCst);
                futex::wake(&w, 1);
            }
        })
        .unwrap();
        sim.run();
        let (called, woke) = (stamps.lock().unwrap(), woke.lock().unwrap());
        let polled: Vec<bool> = called
            .iter()
            .zip(woke.iter())
            // From the wake call to the sleeper's `now`: the latency, plus the call's 200 ns
            // and the futex return; under 5 µs only if polled.
            .map(|(c, w)| w - c < 5_000)
            .collect();
        // The window grows 0 -> 10 -> 20 -> 40 µs over the first three halts of about 30 µs,
        // so the fourth is polled and so on; the 1 ms halt resets it, and the short halt after
        // it is not polled.
        assert_eq!(
            polled,
            [false, false, false, true, true, true, false, false],
            "{called:?} {woke:?}"
        );
    }

    #[test]
    fn two_threads_share_one_cpu_in_time_slices() {
        let mut sim = Sim::with_placement(Box::new(RoundRobin::new(1, 1_000)), COSTS, 0);
        for name in ["a", "b"] {
            sim.spawn(name, || (0..10).for_each(|_| charge(300)));
        }
        let report = sim.run();
        // Turns of 4, 4, 4, 4, 2, 2 charges of 300 (a slice of 1000 runs out on the fourth),
        // each after a 1000 ns switch: a 1000-2200, b 3200-4400, a 5400-6600, b 7600-8800,
        // a 9800-10 400, b 11 400-12 000.
        assert_eq!(report.end_ns, 12_000);
        assert_eq!(report.cpus[0].context_switches, 6);
        assert_eq!(report.cpus[0].busy_ns, 12_000);
        assert_eq!(report.threads[0].finished_ns, 10_400);
        assert_eq!(report.threads[0].wait_ns, 2_200 + 2_200);
        assert_eq!(report.threads[1].wait_ns, 2_200 + 2_200 + 1_600);
        assert_eq!(report.threads[0].preemptions, 2);
        assert_eq!(report.threads[1].preemptions, 2);
    }

    #[test]
    fn yield_hands_the_cpu_to_the_next_runnable_thread() {
        let mut sim = Sim::new(1, COSTS, 0);
        sim.spawn("a", thread::yield_now);
        sim.spawn("b", || charge(10));
        let report = sim.run();
        // a: in at 1000, yields (300) at 1300; b: in at 2300, runs to 2310; a: back at 3310.
        assert_eq!(report.threads[1].finished_ns, 2_310);
        assert_eq!(report.threads[0].finished_ns, 3_310);
        assert_eq!(report.threads[0].preemptions, 0);
        assert_eq!(report.cpus[0].context_switches, 3);
    }

    #[test]
    fn outside_a_simulation_operations_act_at_once() {
        let a = SimU32::new(5);
        assert_eq!(a.fetch_add(1, SeqCst), 5);
        futex::wait(&a, 6, None); // a spurious return, not a hang
        futex::wake(&a, 1);
        assert_eq!(now(), None);
        assert_eq!(current_cpu(), None);
    }

    #[test]
    fn the_seed_orders_cpus_as_a_permutation() {
        for seed in 0..20 {
            let sim = Sim::new(7, COSTS, seed);
            let mut rank = sim.state.rank.clone();
            rank.sort_unstable();
            assert_eq!(rank, (0..7).collect::<Vec<_>>());
        }
        let ranks = |seed| Sim::new(7, COSTS, seed).state.rank.clone();
        assert_eq!(ranks(4), ranks(4));
        assert!(
            (1..20).any(|s| ranks(s) != ranks(0)),
            "the seed never changes the tie order"
        );
    }

    /// The built-in placement, but a woken thread preempts the one running on its CPU.
    struct Preempting(RoundRobin);

    impl Placement for Preempting {
        fn cpus(&self) -> usize {
            self.0.cpus()
        }
        fn spawn(&mut self, thread: ThreadId, spec: &ThreadSpec, now: Ns) -> Result<CpuId, String> {
            self.0.spawn(thread, spec, now)
        }
        fn set_affinity(&mut self, thread: ThreadId, mask: CpuSet, now: Ns) -> Result<(), String> {
            self.0.set_affinity(thread, mask, now)
        }
        fn wake(&mut self, t: ThreadId, last: CpuId, waker: Option<CpuId>, now: Ns) -> CpuId {
            self.0.wake(t, last, waker, now)
        }
        fn requeue(&mut self, cpu: CpuId, thread: ThreadId, now: Ns, why: Requeue) {
            self.0.requeue(cpu, thread, now, why)
        }
        fn pick(&mut self, cpu: CpuId, now: Ns) -> Option<ThreadId> {
            self.0.pick(cpu, now)
        }
        fn time_slice(&mut self, cpu: CpuId, thread: ThreadId, now: Ns) -> Ns {
            self.0.time_slice(cpu, thread, now)
        }
        fn preempt_on_wake(&mut self, _: CpuId, _: ThreadId, _: ThreadId, _: Ns) -> bool {
            true
        }
    }

    #[test]
    fn a_placement_may_let_a_woken_thread_preempt_its_waker() {
        let word = Arc::new(SimU32::new(0));
        let placement = Preempting(RoundRobin::new(1, RoundRobin::DEFAULT_SLICE));
        let mut sim = Sim::with_placement(Box::new(placement), COSTS, 0);
        let w = word.clone();
        sim.spawn("sleeper", move || {
            while w.load(SeqCst) == 0 {
                futex::wait(&w, 0, None);
            }
            charge(10);
        });
        let w = word.clone();
        sim.spawn("waker", move || {
            charge(100);
            w.store(1, SeqCst);
            futex::wake(&w, 1);
            charge(5_000);
        });
        let report = sim.run();
        // Sleeper: in at 1000, load 1001, blocks at 1101. Waker: in at 2101, work to 2201,
        // store 2203, wake 2403; the sleeper, runnable at 2453, takes the CPU: in at 3453,
        // load 3454, work to 3464. Waker: back in at 4464, work to 9464.
        assert_eq!(report.threads[0].finished_ns, 3_464);
        assert_eq!(report.threads[1].finished_ns, 9_464);
        assert_eq!(report.threads[1].preemptions, 1);
        assert_eq!(report.threads[1].wait_ns, 1_101 + (3_464 - 2_403));
    }

    /// One run queue for the whole machine: any free CPU takes its head, so threads migrate.
    struct GlobalQueue {
        cpus: usize,
        queue: VecDeque<ThreadId>,
    }

    impl Placement for GlobalQueue {
        fn cpus(&self) -> usize {
            self.cpus
        }
        fn spawn(&mut self, thread: ThreadId, _: &ThreadSpec, _: Ns) -> Result<CpuId, String> {
            self.queue.push_back(thread);
            Ok(0)
        }
        fn set_affinity(&mut self, _: ThreadId, _: CpuSet, _: Ns) -> Result<(), String> {
            Err("one global queue: no affinity".into())
        }
        fn wake(&mut self, thread: ThreadId, last: CpuId, _: Option<CpuId>, _: Ns) -> CpuId {
            self.queue.push_back(thread);
            last
        }
        fn requeue(&mut self, _: CpuId, thread: ThreadId, _: Ns, _: Requeue) {
            self.queue.push_back(thread);
        }
        fn pick(&mut self, _: CpuId, _: Ns) -> Option<ThreadId> {
            self.queue.pop_front()
        }
        fn time_slice(&mut self, _: CpuId, _: ThreadId, _: Ns) -> Ns {
            1_000
        }
    }

    #[test]
    fn a_placement_may_migrate_threads_between_cpus() {
        let placement = GlobalQueue {
            cpus: 2,
            queue: VecDeque::new(),
        };
        let mut sim = Sim::with_placement(Box::new(placement), COSTS, 0);
        for name in ["a", "b", "c"] {
            sim.spawn(name, || (0..10).for_each(|_| charge(300)));
        }
        let report = sim.run();
        assert!(report.threads.iter().all(|t| t.run_ns == 3_000));
        assert!(report.threads.iter().map(|t| t.migrations).sum::<u64>() > 0);
        let busy: u64 = report.cpus.iter().map(|c| c.busy_ns).sum();
        let switches: u64 = report.cpus.iter().map(|c| c.context_switches).sum();
        assert_eq!(busy, 9_000 + 1_000 * switches);
    }

    /// The built-in placement with one timer of its own, at which it wants CPU 0 rescheduled.
    struct OneTick {
        rr: RoundRobin,
        at: Option<Ns>,
        due: bool,
    }

    impl Placement for OneTick {
        fn cpus(&self) -> usize {
            self.rr.cpus()
        }
        fn spawn(&mut self, t: ThreadId, spec: &ThreadSpec, now: Ns) -> Result<CpuId, String> {
            self.rr.spawn(t, spec, now)
        }
        fn wake(&mut self, t: ThreadId, last: CpuId, waker: Option<CpuId>, now: Ns) -> CpuId {
            self.rr.wake(t, last, waker, now)
        }
        fn requeue(&mut self, cpu: CpuId, thread: ThreadId, now: Ns, why: Requeue) {
            self.rr.requeue(cpu, thread, now, why)
        }
        fn pick(&mut self, cpu: CpuId, now: Ns) -> Option<ThreadId> {
            self.rr.pick(cpu, now)
        }
        fn time_slice(&mut self, _: CpuId, _: ThreadId, _: Ns) -> Ns {
            Ns::MAX
        }
        fn set_affinity(&mut self, t: ThreadId, mask: CpuSet, now: Ns) -> Result<(), String> {
            self.rr.set_affinity(t, mask, now)
        }
        fn next_timer(&self) -> Option<Ns> {
            self.at
        }
        fn run_timers(&mut self, now: Ns) {
            if self.at.is_some_and(|at| at <= now) {
                self.at = None;
                self.due = true;
            }
        }
        fn resched(&mut self) -> Vec<CpuId> {
            if std::mem::take(&mut self.due) {
                vec![0]
            } else {
                Vec::new()
            }
        }
    }

    #[test]
    fn a_placement_timer_preempts_a_thread_while_every_cpu_is_busy() {
        let placement = OneTick {
            rr: RoundRobin::new(1, RoundRobin::DEFAULT_SLICE),
            at: Some(5_000),
            due: false,
        };
        let mut sim = Sim::with_placement(Box::new(placement), COSTS, 0);
        sim.spawn("long", || (0..20).for_each(|_| charge(1_000)));
        sim.spawn("short", || charge(10));
        let report = sim.run();
        // long: in at 1000, charges to 5000, where the timer fires and takes it off; short: in
        // at 6000, done at 6010; long: back at 7010, its other 16 charges end at 23 010.
        assert_eq!(report.threads[1].finished_ns, 6_010);
        assert_eq!(report.threads[0].finished_ns, 23_010);
        assert_eq!(report.threads[0].preemptions, 1);
        assert_eq!(report.threads[0].wait_ns, 6_010 - 5_000);
    }
}
