//! The driver seam: what `concord sim WORKLOAD` hands the simulation (the loaded trace and a
//! [`SimSetup`]: machine, scheduler model, costs, seed, the phase policy and parking, GC
//! threads, interference) and what it gets back ([`SimRun`]: per collection the workers'
//! counters and virtual start and end, and the executor's per-thread report).
//!
//! [`simulate`] runs the collections on the simulated engine (`crate::parallel`, the
//! collector's engine and worker pool compiled against the simulated platform layer). That
//! engine is not part of this crate yet, so [`simulate`] reports
//! [`DriverError::EngineMissing`], and [`check`] refuses the interference loads the executor
//! does not run yet, before anything is recorded.

use std::fmt;

use concord::parallel::{ParkingKind, PhasePolicy};

use super::output::SimulatedCollection;
use super::ReplayCollection;
use crate::exec::{Costs, Ns, ThreadReport};
use crate::machine::Machine;

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
}

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
    /// The collector's engine compiled against the simulated platform is not in this build.
    EngineMissing,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DriverError::EngineMissing => f.write_str(
                "this build of concord has no simulated GC engine yet (the collector's parallel \
                 phase compiled against the simulator's platform layer), so the collections \
                 cannot be run in virtual time",
            ),
        }
    }
}

impl std::error::Error for DriverError {}

/// Refuses, before any work, what [`simulate`] cannot do with `setup`, naming what is allowed:
/// a pinned load on a CPU the machine lacks; busy loops, which the executor does not run yet.
pub fn check(setup: &SimSetup) -> Result<(), String> {
    let Some(load) = setup.load else {
        return Ok(());
    };
    let cpus = setup.machine.cpus();
    if let Some(cpu) = load.cpu.filter(|&c| c >= cpus) {
        return Err(format!(
            "--load: CPU {cpu} is not a CPU of the simulated machine (allowed: 0..={})",
            cpus - 1
        ));
    }
    Err("--load: busy loops are not simulated by this build yet (allowed: no --load)".to_string())
}

/// Run every collection of `trace` on `setup`'s machine in virtual time: one simulated VM
/// thread makes a simulated worker pool of `setup.gc_threads` workers parked as
/// `setup.parking` says and runs each collection's replay task
/// ([`super::threads::ReplayTask`], compiled against the simulated engine) under
/// `setup.policy`, with the mutators' time between collections in between.
pub fn simulate(trace: &[ReplayCollection], setup: &SimSetup) -> Result<SimRun, DriverError> {
    let _ = (trace, setup);
    Err(DriverError::EngineMissing)
}

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
    fn loads_are_refused_until_the_executor_runs_them() {
        assert_eq!(check(&setup(None)), Ok(()));
        let busy = |cpu| Some(BusyLoad { threads: 2, cpu });
        assert_eq!(
            check(&setup(busy(Some(20)))),
            Err("--load: CPU 20 is not a CPU of the simulated machine (allowed: 0..=19)".into())
        );
        let err = check(&setup(busy(None))).unwrap_err();
        assert!(err.contains("not simulated by this build"), "{err}");
    }
}
