//! [`simulate`]: the simulated VM thread that runs a trace's collections on the simulated
//! engine (a submodule of [`super`], the driver).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{
    busy_cpus, check, DriverError, SchedModel, SimRun, SimSetup, GC_WORKER_PREFIX,
    MAX_COLLECTION_NS,
};
use crate::affinity::SimGcAffinity;
use crate::exec::{self, ModelPlacement, Ns, Sim, SimError, ThreadId, ThreadSpec};
use crate::interference::{DutyCycle, Mutators};
use crate::machine::CpuSet;
use crate::numa::Numa;
use crate::parallel::WorkerPool;
use crate::replay::memory::Memory;
use crate::replay::output::SimulatedCollection;
use crate::replay::simulated::{ReplayTask, Touched};
use crate::replay::ReplayCollection;
use crate::sched::{Eevdf, Linux49, WakePlacement};
use crate::telemetry::MonitorRecord;
use concord::os::gc_affinity::applied_gc_affinity;
use concord::parallel::ParkingKind;
use concord::telemetry::gc_trace::{Fate, TraceKind};

/// Run every collection of `trace` on `setup`'s machine in virtual time.
///
/// One simulated VM thread makes a simulated worker pool of `setup.gc_threads` workers named
/// [`GC_WORKER_PREFIX`]`<i>`, parked as `setup.parking` says, and for each collection: lets the
/// mutators run for `setup.mutator_ns`, stops them at a safepoint, runs the collection's replay
/// task ([`super::simulated::ReplayTask`]) under `setup.policy` on all the workers, and resumes
/// the mutators. A collection's pause runs from the stop request to the end of the parallel
/// phase. GC-thread affinity decides with concord's own code ([`SimGcAffinity`]): static binding
/// when a worker starts, Algorithm 1 when it starts each collection's job. The mutators compute
/// without pause between collections ([`DutyCycle::BUSY`]), and busy loops
/// ([`busy_cpus`]) compute throughout; both are background threads. Each collection, with
/// the mutator time before it, may take at most [`MAX_COLLECTION_NS`] of virtual time
/// ([`DriverError::TimeLimit`] names the one that took longer). The scheduler model places
/// woken threads its own way ([`WakePlacement::Default`]).
pub fn simulate(
    trace: Arc<Vec<ReplayCollection>>,
    setup: &SimSetup,
) -> Result<SimRun, DriverError> {
    simulate_with_wake_placement(trace, setup, WakePlacement::Default)
}

/// [`simulate`] with the scheduler model's wake-up placement `wake_placement`
/// ([`WakePlacement::Pack`]: this machine's packing, `concord sim --wake-placement pack`).
/// (A parameter rather than a [`SimSetup`] field, so that every setup written before it
/// still reads as it did.)
pub fn simulate_with_wake_placement(
    trace: Arc<Vec<ReplayCollection>>,
    setup: &SimSetup,
    wake_placement: WakePlacement,
) -> Result<SimRun, DriverError> {
    check(setup).map_err(DriverError::Setup)?;
    let cpus = setup.machine.cpus();
    let machine = setup.machine.clone();
    let placement: Box<dyn exec::Placement> = match setup.sched {
        SchedModel::Cfs => Box::new(ModelPlacement::new(
            Linux49::new(machine).with_wake_placement(wake_placement),
        )),
        SchedModel::Eevdf => Box::new(ModelPlacement::new(
            Eevdf::new(machine).with_wake_placement(wake_placement),
        )),
    };
    let mut sim = Sim::with_placement(placement, setup.costs, setup.seed);
    if let Some(load) = setup.load {
        sim.busy_loops(&busy_cpus(load, cpus))
            .map_err(DriverError::Setup)?;
    }
    let mutators = match setup.mutators {
        0 => None,
        n => Some(
            Mutators::spawn(&mut sim, n, DutyCycle::BUSY, ThreadSpec::default())
                .map_err(DriverError::Setup)?,
        ),
    };
    if let Some(costs) = super::numa_costs(&setup.machine) {
        sim = sim.with_numa(Numa::new(&setup.machine, costs));
    }
    let memory = Memory::new(setup.numa, &setup.machine).map(Arc::new);
    let all_cpus = (0..cpus).map(|c| c as u32).collect();
    // A NUMA layout pins the workers by node; GC-thread affinity would move them off it, so it
    // steps aside: the runtime's heap's rule, on any machine (one node too).
    let gc_affinity = applied_gc_affinity(setup.gc_affinity, setup.numa);
    let affinity = Arc::new(SimGcAffinity::new(gc_affinity, all_cpus, setup.seed));
    for &t in mutators.iter().flat_map(Mutators::threads) {
        affinity.note_mutator(t, true);
    }
    let results: Arc<std::sync::Mutex<Result<Vec<SimulatedCollection>, String>>> =
        Arc::new(std::sync::Mutex::new(Ok(Vec::new())));
    let started = Arc::new(AtomicUsize::new(0));
    let collections = trace.len();
    let ids: Vec<u64> = trace.iter().map(|c| c.id).collect();
    let vm = VmThread {
        trace,
        started: started.clone(),
        policy: crate::runtime::phase_policy(&setup.policy),
        parking: crate::runtime::parking(setup.parking),
        workers: setup.gc_threads,
        mutator_ns: setup.mutator_ns,
        active_workers: match setup.dynamic_gc_threads {
            Some(heap) => concord::runtime::dynamic_active_workers(
                setup.mutators,
                heap,
                setup.gc_threads,
                cpus,
            )
            .max(memory.as_ref().map_or(1, |m| m.min_active_workers())),
            None => setup.gc_threads,
        },
        pin_start: setup.pin_start,
        vm_thread_cpu: setup.vm_thread_cpu,
        first_touch: setup.first_touch,
        cpus,
        uses_monitor: setup.policy.task_queue == concord::parallel::TaskQueueKind::Monitor
            || setup.parking == ParkingKind::Monitor,
        mutators,
        affinity,
        memory,
        results: results.clone(),
    };
    sim.spawn("vm-thread", move || vm.run());
    let report = sim.try_run().map_err(|e| match e {
        SimError::TimeLimit { .. } => {
            // Relaxed: the VM thread's store happened before the run ended (joined).
            let index = started.load(Ordering::Relaxed).saturating_sub(1);
            DriverError::TimeLimit {
                id: ids.get(index).copied().unwrap_or(0),
                index,
                collections,
            }
        }
        SimError::Failed(message) => DriverError::Failed(message),
    })?;
    let collections = std::mem::replace(
        &mut *results.lock().unwrap_or_else(|p| p.into_inner()),
        Ok(Vec::new()),
    )
    .map_err(DriverError::Setup)?;
    Ok(SimRun {
        collections,
        end_ns: report.end_ns,
        threads: report.threads,
    })
}

/// The simulated VM thread: what it runs and where it puts the results.
struct VmThread {
    trace: Arc<Vec<ReplayCollection>>,
    /// Collections begun (the mutator time before them included), for the time limit's error.
    started: Arc<AtomicUsize>,
    policy: crate::parallel::PhasePolicy,
    parking: crate::parallel::ParkingKind,
    workers: usize,
    mutator_ns: Ns,
    /// Workers taking part in each collection ([`SimSetup::dynamic_gc_threads`]).
    active_workers: usize,
    /// Whether the workers are born on CPU 0 ([`SimSetup::pin_start`]).
    pin_start: bool,
    /// The CPU the VM thread is pinned to ([`SimSetup::vm_thread_cpu`]).
    vm_thread_cpu: Option<usize>,
    /// Whether copies into heap memory no collection wrote before pay page faults
    /// ([`SimSetup::first_touch`]).
    first_touch: bool,
    /// The machine's CPU count.
    cpus: usize,
    /// Whether the GC task manager's monitor is in play (its counters go in the records).
    uses_monitor: bool,
    mutators: Option<Mutators>,
    affinity: Arc<SimGcAffinity>,
    /// The heap's memory on a NUMA machine: which node each object is on, where workers are
    /// pinned, whether the phase is segregated.
    memory: Option<Arc<Memory>>,
    results: Arc<std::sync::Mutex<Result<Vec<SimulatedCollection>, String>>>,
}

impl VmThread {
    fn run(self) {
        let outcome = self.collect();
        *self.results.lock().unwrap_or_else(|p| p.into_inner()) = outcome;
    }

    fn collect(&self) -> Result<Vec<SimulatedCollection>, String> {
        if let Some(cpu) = self.vm_thread_cpu {
            // A CPU of the machine (`check`), so the bind cannot be refused.
            let _ = exec::set_affinity(CpuSet::single(cpu));
        }
        let at_start = self.affinity.clone();
        let memory = self.memory.clone();
        let (pin_start, cpus) = (self.pin_start, self.cpus);
        let pool = WorkerPool::new(
            self.workers,
            GC_WORKER_PREFIX.trim_end_matches('-'),
            self.parking,
            move |id| {
                if pin_start {
                    // As the runtime's pin-start: run once on CPU 0, then take the machine back.
                    let _ = exec::set_affinity(CpuSet::single(0));
                    crate::sync::thread::yield_now();
                    let _ = exec::set_affinity(CpuSet::first(cpus));
                }
                // A refused bind (a CPU the machine lacks) cannot happen: the CPUs are the
                // machine's own.
                let _ = at_start.bind_at_start(id);
                // The NUMA layouts pin workers by node, as the runtime's do.
                if let Some(cpus) = memory.as_ref().and_then(|m| m.worker_cpus(id)) {
                    let _ = exec::set_affinity(cpus);
                }
            },
        )
        .map_err(|e| format!("the simulated GC workers could not be started: {e}"))?;
        let at_job = self.affinity.clone();
        pool.set_job_start(move |id| {
            exec::charge_worker_start();
            at_job.worker_phase_start(id);
        });
        let worker_threads: Vec<ThreadId> = pool
            .worker_tids()
            .iter()
            .map(|&tid| tid as ThreadId)
            .collect();
        let mut collections = Vec::with_capacity(self.trace.len());
        let mut heap = HeapTouch::default();
        for c in self.trace.iter() {
            self.started.fetch_add(1, Ordering::Relaxed);
            let now = exec::now().unwrap_or(0);
            exec::set_time_limit(Some(
                now.saturating_add(self.mutator_ns)
                    .saturating_add(MAX_COLLECTION_NS),
            ));
            crate::sync::thread::sleep(Duration::from_nanos(self.mutator_ns));
            let start_ns = exec::now().unwrap_or(0);
            if let Some(m) = &self.mutators {
                m.stop();
            }
            let before = pool.task_manager_stats();
            self.affinity
                .begin_collection(&worker_threads, self.active_workers);
            let touched = self.first_touch.then(|| heap.before(c));
            let task = ReplayTask::new(c)
                .with_memory(self.memory.as_deref())
                .with_first_touch(touched.as_ref());
            // Only young collections are segregated: the runtime marks unsegregated (004:
            // segregation does not apply to compacting spaces).
            let segregated = self
                .memory
                .as_ref()
                .filter(|_| c.kind == TraceKind::Young)
                .and_then(|m| m.segregated_worker_nodes(self.active_workers));
            // The parallel phase starts here, once the world is stopped, as the runtime
            // measures it (the safepoint before it is the pause's, not the phase's).
            let phase_start_ns = exec::now().unwrap_or(start_ns);
            let (_, workers) = match segregated {
                Some(nodes) => task.run_segregated(&pool, &self.policy, nodes),
                None => task.run(&pool, &self.policy, self.active_workers),
            };
            let end_ns = exec::now().unwrap_or(0);
            if let Some(after) = task.touched_after() {
                heap.after(c, after);
            }
            let affinity = self.affinity.end_collection();
            let monitor = self
                .uses_monitor
                .then(|| MonitorRecord::from(pool.task_manager_stats().since(&before)));
            if let Some(m) = &self.mutators {
                m.resume();
            }
            collections.push(SimulatedCollection {
                workers,
                start_ns,
                phase_start_ns,
                end_ns,
                monitor,
                affinity,
            });
        }
        Ok(collections)
    }
}

/// How far the simulated heap's spaces have been written, from one collection to the next:
/// the two survivor spaces (to-space is the one the last successful scavenge did not copy
/// into), and the old generation's use and mark. Eden is written by the mutators, outside the
/// pauses.
#[derive(Default)]
struct HeapTouch {
    survivors: [Vec<usize>; 2],
    to: usize,
    old_used: usize,
    old_high: usize,
}

impl HeapTouch {
    /// The marks collection `c` starts from.
    fn before(&self, c: &ReplayCollection) -> Touched {
        Touched {
            to_space: if c.kind == TraceKind::Young {
                self.survivors[self.to].clone()
            } else {
                Vec::new()
            },
            old_used: self.old_used,
            old_high: self.old_high,
        }
    }

    /// After collection `c`, whose replay left the marks `after`: a young collection filled
    /// to-space (which becomes from-space unless promotion failed) and promoted above the old
    /// generation's use; a full collection leaves the old generation holding what it marked
    /// (compacted into memory written before, or moved up the mark).
    fn after(&mut self, c: &ReplayCollection, after: Touched) {
        self.old_high = self.old_high.max(after.old_high);
        match c.kind {
            TraceKind::Young => {
                self.survivors[self.to] = after.to_space;
                self.old_used += c.bytes_promoted() as usize;
                if !c.promotion_failed {
                    self.to ^= 1;
                }
            }
            TraceKind::Full => {
                self.old_used = c.count(|f| f == Fate::Marked).1 as usize;
                self.old_high = self.old_high.max(self.old_used);
            }
        }
    }
}
