//! The driver seam: what `concord sim WORKLOAD` hands the simulation (the loaded trace and a
//! [`SimSetup`]: machine, scheduler model, costs, seed, the phase policy and parking, GC
//! threads, interference) and what it gets back ([`SimRun`]: per collection the workers'
//! counters and virtual start and end, and the executor's per-thread report).
//!
//! [`simulate`] runs the collections on the simulated engine (`crate::parallel`, the
//! collector's engine and worker pool compiled against the simulated platform layer) with the
//! mutators and busy loops of [`crate::interference`] beside it; [`check`] refuses what it
//! cannot do before anything is recorded.

use std::fmt;

use concord::os::numa::NumaLayout;
use concord::os::policy::GcAffinity;
use concord::parallel::pool::MAX_WORKERS;
use concord::parallel::{ParkingKind, PhasePolicy};

use super::output::SimulatedCollection;
use crate::exec::{Costs, CpuId, Ns, ThreadReport};
use crate::machine::Machine;
use crate::numa::NumaCosts;
pub use crate::sched::WakePlacement;

/// The scheduler model the simulated threads run under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedModel {
    /// CFS and SCHED_FIFO as in Linux 4.9 (000's kernel), [`crate::exec::Sim::linux49`].
    Cfs,
    /// EEVDF as in Linux 6.6, [`crate::exec::Sim::eevdf`].
    Eevdf,
}

impl SchedModel {
    /// The names `--sched` accepts.
    pub const NAMES: [&'static str; 2] = ["cfs", "eevdf"];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            SchedModel::Cfs => "cfs",
            SchedModel::Eevdf => "eevdf",
        }
    }
}

impl fmt::Display for SchedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for SchedModel {
    type Err = String;

    /// `cfs` or `eevdf`; the error follows the quoted text.
    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "cfs" => Ok(SchedModel::Cfs),
            "eevdf" => Ok(SchedModel::Eevdf),
            _ => Err(format!(
                "is not a scheduler model (allowed: {})",
                SchedModel::NAMES.join(", ")
            )),
        }
    }
}

/// Busy-loop threads running beside the collector (000 Fig. 15's interference).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BusyLoad {
    /// Busy loops.
    pub threads: usize,
    /// The CPU they are pinned to, if any (otherwise the scheduler model places them).
    pub cpu: Option<usize>,
}

/// Everything a simulation of a trace depends on besides the trace.
#[derive(Clone, Debug)]
pub struct SimSetup {
    /// The simulated machine.
    pub machine: Machine,
    /// The scheduler model.
    pub sched: SchedModel,
    /// The cost table (built in, or a `sim calibrate` file's).
    pub costs: Costs,
    /// The seed (same seed, same result).
    pub seed: u64,
    /// The parallel phase's switches (task queue, affinity, steal, termination).
    pub policy: PhasePolicy,
    /// How idle workers park between collections.
    pub parking: ParkingKind,
    /// GC worker threads.
    pub gc_threads: usize,
    /// Mutator threads (they run between collections).
    pub mutators: usize,
    /// Busy loops beside the collector, if any.
    pub load: Option<BusyLoad>,
    /// GC-thread affinity (`none`, `static`, `dynamic`: 000 Algorithm 1).
    pub gc_affinity: GcAffinity,
    /// The heap's NUMA layout (004 §3.2), on a machine with more than one node
    /// ([`super::memory`]).
    pub numa: NumaLayout,
    /// Virtual time the mutators run before each collection, ns ([`DEFAULT_MUTATOR_NS`]).
    pub mutator_ns: Ns,
    /// Under dynamic GC threads, the heap's size in bytes: each collection then runs with
    /// [`concord::runtime::dynamic_active_workers`] of the mutators, the heap, `gc_threads`
    /// and the machine's CPUs, as the runtime's VM thread chooses; `None`: all `gc_threads`.
    pub dynamic_gc_threads: Option<usize>,
    /// Whether every GC worker is born on CPU 0 and then given back the whole machine, as the
    /// runtime's `pin-start` does (the workers' first "previous CPU" is then the same one).
    pub pin_start: bool,
    /// The CPU the simulated VM thread is pinned to, as the runtime's `vm-thread-cpu`; `None`:
    /// the scheduler model places it.
    pub vm_thread_cpu: Option<usize>,
    /// Whether a copy into heap memory no earlier collection wrote pays its page's
    /// first-touch fault ([`crate::exec::Costs::page_fault`] per 4 KiB page), as in a heap
    /// that was not pretouched (the runtime's `pretouch = false`, the default).
    pub first_touch: bool,
}

/// Mutator time before each simulated collection when nothing else is said: 5 ms, long enough
/// for the scheduler model to place the mutators (its ticks are 1–4 ms) and short enough to keep
/// simulations fast. (A GC trace holds no timestamps.)
pub const DEFAULT_MUTATOR_NS: Ns = 5_000_000;

/// The most simulated time one collection may take, ns: 10 s of virtual time from the end of
/// the collection before it (or the start), its [`SimSetup::mutator_ns`] of mutator time
/// included. A recorded collection's pause is milliseconds; one that is still running after
/// this is work no real heap holds, costs no real machine has, or a load that leaves the GC
/// workers no CPU, and [`simulate`] stops it with [`DriverError::TimeLimit`] instead of
/// simulating it for hours.
pub const MAX_COLLECTION_NS: Ns = 10_000_000_000;

/// The names of the simulated GC worker threads start with this (how the run-queue wait of
/// the GC workers is told from the other threads').
pub const GC_WORKER_PREFIX: &str = "gc-worker-";

/// What a simulation of a trace measured.
#[derive(Clone, Debug, Default)]
pub struct SimRun {
    /// Per collection of the trace, in order.
    pub collections: Vec<SimulatedCollection>,
    /// Every simulated thread, as the executor reports it ([`GC_WORKER_PREFIX`] names the GC
    /// workers).
    pub threads: Vec<ThreadReport>,
    /// Virtual time the simulation ended, ns.
    pub end_ns: Ns,
}

/// Why a simulation could not run.
#[derive(Debug, PartialEq, Eq)]
pub enum DriverError {
    /// The setup asks for what the simulated machine cannot do (the message says what).
    Setup(String),
    /// A collection took more than [`MAX_COLLECTION_NS`] of simulated time.
    TimeLimit {
        /// Its id (`GC(id)`).
        id: u64,
        /// Its position in the trace, from 0.
        index: usize,
        /// The trace's collections.
        collections: usize,
    },
    /// The simulation failed (a deadlock, a simulated thread's panic): the message says how.
    Failed(String),
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::Setup(why) | DriverError::Failed(why) => f.write_str(why),
            DriverError::TimeLimit {
                id,
                index,
                collections,
            } => write!(
                f,
                "GC({id}), collection {} of {collections}, was still running after {} s of \
                 simulated time, the most one collection may take (allowed: at most {} s per \
                 collection, the mutators' time before it included); the simulation stopped \
                 there. No real heap or machine gives such a collection: look at the trace's \
                 and the costs' figures, or at a load that leaves the GC workers no CPU",
                index + 1,
                MAX_COLLECTION_NS / 1_000_000_000,
                MAX_COLLECTION_NS / 1_000_000_000,
            ),
        }
    }
}

impl std::error::Error for DriverError {}

/// Refuses, before any work, what [`simulate`] cannot do with `setup`, naming what is allowed:
/// no GC thread, or a pinned load on a CPU the machine lacks.
pub fn check(setup: &SimSetup) -> Result<(), String> {
    if setup.gc_threads == 0 || setup.gc_threads > MAX_WORKERS {
        return Err(format!(
            "{} GC threads cannot be simulated (allowed: 1..={MAX_WORKERS})",
            setup.gc_threads
        ));
    }
    let cpus = setup.machine.cpus();
    if let Some(cpu) = setup.vm_thread_cpu.filter(|&c| c >= cpus) {
        return Err(format!(
            "vm-thread-cpu {cpu} is not a CPU of the simulated machine (allowed: 0..={}, or \
             none)",
            cpus - 1
        ));
    }
    let Some(load) = setup.load else {
        return Ok(());
    };
    if let Some(cpu) = load.cpu.filter(|&c| c >= cpus) {
        return Err(format!(
            "--load: CPU {cpu} is not a CPU of the simulated machine (allowed: 0..={})",
            cpus - 1
        ));
    }
    Ok(())
}

/// The NUMA cost figures of `machine`: 004's for `magny-cours-48` (its machine,
/// [`NumaCosts::MAGNY_COURS`]); `None` (uniform memory) for every other shape, for which no
/// paper publishes figures (000 reports no NUMA effect on its Xeon).
pub fn numa_costs(machine: &Machine) -> Option<NumaCosts> {
    (machine.nodes() > 1 && machine.name() == "magny-cours-48").then_some(NumaCosts::MAGNY_COURS)
}

/// The CPUs the busy loops of `load` are pinned to on a machine of `cpus` CPUs: all on its
/// CPU if it names one, otherwise one per CPU from CPU 0 (000 Fig. 15: "ten busy loops on ten
/// cores"), wrapping around when there are more loops than CPUs.
pub fn busy_cpus(load: BusyLoad, cpus: usize) -> Vec<CpuId> {
    match load.cpu {
        Some(cpu) => vec![cpu; load.threads],
        None => (0..load.threads).map(|i| i % cpus).collect(),
    }
}

// The simulated engine is compiled into the library only (its included files' own unit tests
// are left out of this crate's test build, see the crate docs), so the simulation is too.
#[cfg(not(test))]
#[path = "vm.rs"]
mod vm;
#[cfg(not(test))]
pub use vm::{simulate, simulate_with_wake_placement};

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(load: Option<BusyLoad>) -> SimSetup {
        SimSetup {
            machine: Machine::named("xeon-2x10", None).unwrap(),
            sched: SchedModel::Cfs,
            costs: Costs::DEFAULT,
            seed: 1,
            policy: PhasePolicy::VANILLA,
            parking: ParkingKind::Monitor,
            gc_threads: 15,
            mutators: 16,
            load,
            gc_affinity: GcAffinity::None,
            numa: NumaLayout::Off,
            mutator_ns: DEFAULT_MUTATOR_NS,
            dynamic_gc_threads: None,
            pin_start: true,
            vm_thread_cpu: None,
            first_touch: true,
        }
    }

    #[test]
    fn sched_names_parse_and_others_are_refused_naming_both() {
        assert_eq!("cfs".parse(), Ok(SchedModel::Cfs));
        assert_eq!(" EEVDF".parse(), Ok(SchedModel::Eevdf));
        assert_eq!(
            "bfs".parse::<SchedModel>(),
            Err("is not a scheduler model (allowed: cfs, eevdf)".to_string())
        );
        assert_eq!(SchedModel::Eevdf.to_string(), "eevdf");
    }

    #[test]
    fn wake_placement_names_parse_and_others_are_refused_naming_both() {
        assert_eq!("default".parse(), Ok(WakePlacement::Default));
        assert_eq!(" Pack".parse(), Ok(WakePlacement::Pack));
        assert_eq!(
            "spread".parse::<WakePlacement>(),
            Err("is not a wake-up placement (allowed: default, pack)".to_string())
        );
        assert_eq!(WakePlacement::Pack.to_string(), "pack");
        assert_eq!(WakePlacement::default(), WakePlacement::Default);
    }

    #[test]
    fn a_load_on_a_cpu_the_machine_lacks_and_zero_gc_threads_are_refused() {
        assert_eq!(check(&setup(None)), Ok(()));
        let busy = |cpu| Some(BusyLoad { threads: 2, cpu });
        assert_eq!(
            check(&setup(busy(Some(20)))),
            Err("--load: CPU 20 is not a CPU of the simulated machine (allowed: 0..=19)".into())
        );
        assert_eq!(check(&setup(busy(None))), Ok(()));
        let none = SimSetup {
            gc_threads: 0,
            ..setup(None)
        };
        assert!(check(&none).unwrap_err().contains("allowed: 1..="));
    }

    #[test]
    fn only_the_magny_cours_shape_has_numa_costs() {
        let named = |n| Machine::named(n, None).unwrap();
        assert_eq!(
            numa_costs(&named("magny-cours-48")),
            Some(NumaCosts::MAGNY_COURS)
        );
        assert_eq!(numa_costs(&named("xeon-2x10")), None);
        let custom = Machine::from_flags(None, Some("48"), None, Some("8")).unwrap();
        assert_eq!(numa_costs(&custom), None);
    }

    #[test]
    fn busy_loops_go_one_per_cpu_from_cpu_0_or_all_on_the_named_cpu() {
        let load = |threads, cpu| BusyLoad { threads, cpu };
        assert_eq!(busy_cpus(load(3, None), 20), vec![0, 1, 2]);
        assert_eq!(busy_cpus(load(3, None), 2), vec![0, 1, 0]);
        assert_eq!(busy_cpus(load(2, Some(5)), 20), vec![5, 5]);
    }
}
