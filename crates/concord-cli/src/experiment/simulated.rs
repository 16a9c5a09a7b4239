//! Simulated arms: with `--sim-cpus N` (or `--sim-machine NAME`) every arm of `compare`,
//! `sweep`, `ablation` and `os-bench` runs on the many-core simulator instead of measuring
//! this machine. Each run records the arm's collections here, with the arm's own configuration
//! (the work depends on it: heap size, mutators, presets' promotion), and replays them on the
//! simulated machine under the scheduler model ([`SimRunner`], on the code `concord sim`
//! uses, [`crate::sim::simulation`]); the run's summary and records are `run`'s plus `sim`,
//! so that tables, `experiment.json` and `concord report` treat them as any run. The arm's
//! interference becomes busy loops on the simulated machine, never on this one; round `r` of
//! an experiment simulates with seed `S + r`, so that rounds differ as measured rounds do and
//! every run can be simulated again alike.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use concord::GcConfig;
use concord_sim::machine::{Machine, MachineFlags};
use concord_sim::replay::driver::SchedModel;
use concord_workloads::{Workload, WorkloadParams};

use super::arm::{describe, Arm};
use super::results::SimEntry;
use super::runner::{wrong_result, RunFiles, RunResult, Runner};
use crate::interference::Interference;
use crate::sim::simulation::{record, simulate, write_records, Simulator, Subject};

/// The flags that make an experiment's arms simulated, and describe the simulated machine.
#[derive(Args, Debug, Clone, Default)]
pub struct SimArmFlags {
    /// Run every configuration on the many-core simulator, on a machine of N logical CPUs
    /// (with --smt and --nodes), instead of measuring this machine: each run records the
    /// configuration's collections here and simulates them.
    #[arg(long = "sim-cpus", value_name = "N", allow_hyphen_values = true)]
    pub sim_cpus: Option<String>,
    /// Simulated as --sim-cpus, on a named machine: xeon-2x10 (20 CPUs, 2 sockets) or
    /// magny-cours-48 (48 CPUs, 8 nodes).
    #[arg(long = "sim-machine", value_name = "NAME")]
    pub sim_machine: Option<String>,
    /// Simulated machine: two hardware threads per core, on or off (default off; with
    /// --sim-machine, the shape's).
    #[arg(long, value_name = "on|off")]
    pub smt: Option<String>,
    /// Simulated machine: NUMA nodes, one socket each (default 1).
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub nodes: Option<String>,
    /// Simulated runs: the scheduler model, cfs (CFS as in Linux 4.9) or eevdf (Linux 6.6)
    /// (default cfs).
    #[arg(long, value_name = "cfs|eevdf")]
    pub sched: Option<SchedModel>,
    /// Simulated runs: the seed of the first round; round r uses S + r (default 0).
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Simulated runs: the simulator's costs from this file, written by concord sim calibrate
    /// (default: the built-in costs).
    #[arg(long, value_name = "FILE")]
    pub costs: Option<PathBuf>,
}

impl SimArmFlags {
    /// The simulator the flags describe, or `None` when the arms are measured (no
    /// `--sim-cpus` or `--sim-machine`). A machine flag without either, a bad machine or an
    /// unreadable costs file is an error naming what is allowed.
    pub fn check(&self) -> Result<Option<Arc<Simulator>>> {
        if self.sim_cpus.is_none() && self.sim_machine.is_none() {
            let given = [
                ("--smt", self.smt.is_some()),
                ("--nodes", self.nodes.is_some()),
                ("--sched", self.sched.is_some()),
                ("--seed", self.seed.is_some()),
                ("--costs", self.costs.is_some()),
            ];
            if let Some((flag, _)) = given.iter().find(|(_, set)| *set) {
                bail!(
                    "{flag} describes simulated runs: give --sim-cpus N or --sim-machine NAME \
                     too (without them every configuration is measured on this machine)"
                );
            }
            return Ok(None);
        }
        let machine = Machine::from_flags_named(
            MachineFlags::EXPERIMENT,
            self.sim_machine.as_deref(),
            self.sim_cpus.as_deref(),
            self.smt.as_deref(),
            self.nodes.as_deref(),
        )?;
        let simulator = Simulator::new(
            machine,
            self.sched.unwrap_or(SchedModel::Cfs),
            self.seed.unwrap_or(0),
            self.costs.as_deref(),
        )?;
        Ok(Some(Arc::new(simulator)))
    }

    /// The flags as given, as arguments of an experiment command (what `concord paper ID`
    /// passes on).
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut push = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                args.extend([flag.to_string(), value]);
            }
        };
        push("--sim-cpus", self.sim_cpus.clone());
        push("--sim-machine", self.sim_machine.clone());
        push("--smt", self.smt.clone());
        push("--nodes", self.nodes.clone());
        push("--sched", self.sched.map(|s| s.to_string()));
        push("--seed", self.seed.map(|s| s.to_string()));
        push(
            "--costs",
            self.costs.as_ref().map(|p| p.display().to_string()),
        );
        args
    }

    /// Whether any of the flags is given.
    pub fn any(&self) -> bool {
        !self.to_args().is_empty()
    }
}

/// What `experiment.json` and the JSON output say about a simulated arm's machine.
pub fn entry(simulator: &Simulator) -> SimEntry {
    let m = &simulator.machine;
    SimEntry {
        machine: m.name().to_string(),
        cpus: m.cpus(),
        smt: m.smt(),
        nodes: m.nodes(),
        sched: simulator.sched.to_string(),
        seed: simulator.seed,
        costs: simulator.costs_from.clone(),
    }
}

/// The words every table, header and report of a simulated experiment carries, so that its
/// figures are never taken for measurements.
pub fn simulated_words(simulator: &Simulator) -> String {
    format!(
        "simulated on {}, seed {} + round: the figures are the simulator's, not measurements \
         of this machine",
        simulator.describe(),
        simulator.seed
    )
}

/// Runs an arm simulated: records its collections on this machine, simulates them, writes the
/// simulated records and returns the simulated summary.
pub struct SimRunner {
    workload: Arc<dyn Workload>,
    params: WorkloadParams,
    config: GcConfig,
    simulator: Arc<Simulator>,
    /// Busy loops on the simulated machine.
    load: Option<Interference>,
}

impl Arm {
    /// This arm (of a Concord heap) run simulated by `simulator`, its interference busy loops
    /// on the simulated machine. Where its settings leave the GC threads to the preset, they
    /// are HotSpot's default for the simulated machine's CPUs (as a JVM there would choose),
    /// not for this machine's. What the simulation cannot do (a busy-loop CPU the machine
    /// lacks, more GC threads than it simulates) is an error naming what is allowed.
    pub fn simulated(mut self, simulator: &Arc<Simulator>) -> Result<Arm> {
        let Some(heap) = self.runner.heap() else {
            bail!(
                "configuration '{}' does not run on a Concord heap and cannot be simulated",
                self.label
            );
        };
        let cpus = simulator.machine.cpus();
        if let Some(Interference::Busy { cpu: Some(cpu), .. }) = self.interference {
            if cpu as usize >= cpus {
                bail!(
                    "busy-loop CPU {cpu} is not a CPU of the simulated machine (allowed: 0..={})",
                    cpus - 1
                );
            }
        }
        let mut config = heap.config.clone();
        if !self.settings.iter().any(|s| s.starts_with("gc-threads=")) {
            config.gc_threads = simulator.default_gc_threads();
            if self.what == describe(&heap.config) {
                self.what = describe(&config);
            }
            if !config.dynamic_gc_threads {
                self.settings
                    .push(format!("gc-threads={}", config.gc_threads));
            }
        }
        simulator
            .setup(
                &config,
                heap.params.mutators,
                self.interference,
                simulator.seed,
            )
            .map_err(|e| anyhow!(e))
            .with_context(|| format!("configuration '{}'", self.label))?;
        let runner = SimRunner {
            workload: heap.workload.clone(),
            params: heap.params.clone(),
            config,
            simulator: simulator.clone(),
            load: self.interference,
        };
        self.runner = Arc::new(runner);
        self.sim = Some(simulator.clone());
        Ok(self)
    }
}

/// Every arm of `arms` simulated by `simulator` if there is one ([`Arm::simulated`]).
pub fn simulate_arms(arms: Vec<Arm>, simulator: Option<&Arc<Simulator>>) -> Result<Vec<Arm>> {
    match simulator {
        Some(simulator) => arms.into_iter().map(|a| a.simulated(simulator)).collect(),
        None => Ok(arms),
    }
}

impl Runner for SimRunner {
    fn run(&self, files: &RunFiles) -> Result<RunResult> {
        let seed = self.simulator.seed.wrapping_add(u64::from(files.round));
        let setup = self
            .simulator
            .setup(&self.config, self.params.mutators, self.load, seed)
            .map_err(|e| anyhow!(e))?;
        let (trace, recorded) = record(&self.workload, &self.params, &self.config)?;
        let subject = Subject {
            workload_name: self.workload.name().to_string(),
            params: self.params.clone(),
            config: self.config.clone(),
            setup,
            wake_placement: self.simulator.wake_placement,
        };
        let mut simulated = simulate(&subject, trace, Some(&recorded))?;
        simulated.summary.interference = self
            .load
            .map(|load| format!("{load} ({} on the simulated machine)", load.describe()));
        let finishing = Instant::now();
        let records_failure = write_records(&files.records, &simulated.stats).err();
        simulated.outputs_finish_ms = finishing.elapsed().as_secs_f64() * 1e3;
        let mut result = RunResult::of(&simulated.summary);
        result.summary = simulated.json();
        result.line = format!(
            "simulated on {} CPUs: {}",
            simulated.figures.cpus, result.line
        );
        // The workload's result and the heap's verification are the recording run's; a run
        // whose records could not be written completely is a failed run.
        let problems: Vec<String> = wrong_result(&recorded)
            .into_iter()
            .chain(records_failure.map(|f| f.to_string()))
            .collect();
        result.problem = (!problems.is_empty()).then(|| problems.join("; "));
        Ok(result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::arm::{find_workload, heap_arm};
    use crate::flags::tests_support::parse;

    #[test]
    fn machine_flags_need_a_simulated_machine_and_bad_ones_name_what_is_allowed() {
        let check = |argv: &[&str]| parse::<SimArmFlags>(argv).check();
        assert!(check(&[]).unwrap().is_none());
        let err = check(&["--smt", "on"]).unwrap_err().to_string();
        assert!(
            err.starts_with("--smt describes simulated runs: give --sim-cpus N"),
            "{err}"
        );
        let err = check(&["--seed", "3"]).unwrap_err().to_string();
        assert!(err.starts_with("--seed describes"), "{err}");
        for (argv, expected) in [
            (&["--sim-cpus", "0"][..], "--sim-cpus `0` is not allowed"),
            (&["--sim-cpus", "6", "--nodes", "4"], "multiple of 4"),
            (&["--sim-machine", "cray-1"], "allowed: xeon-2x10"),
            (
                &["--sim-machine", "xeon-2x10", "--sim-cpus", "4"],
                "not both",
            ),
            (&["--sim-cpus", "4", "--smt", "maybe"], "allowed: on, off"),
        ] {
            let err = check(argv).unwrap_err().to_string();
            assert!(err.contains(expected), "{argv:?}: {err}");
        }
        let argv = [
            "--sim-machine",
            "xeon-2x10",
            "--smt",
            "on",
            "--sched",
            "eevdf",
            "--seed",
            "9",
        ];
        let flags = parse::<SimArmFlags>(&argv);
        let sim = flags.check().unwrap().unwrap();
        assert_eq!(
            (sim.machine.cpus(), sim.sched, sim.seed),
            (40, SchedModel::Eevdf, 9)
        );
        // Passed on as given.
        assert_eq!(flags.to_args(), argv);
        let e = entry(&sim);
        assert_eq!((e.cpus, e.smt, e.nodes), (40, true, 2));
        assert_eq!(e.costs, "built-in");
        assert!(
            simulated_words(&sim).starts_with(
                "simulated on xeon-2x10 (40 CPUs, SMT on, 2 nodes), eevdf scheduler, built-in \
                 costs, seed 9 + round"
            ),
            "{}",
            simulated_words(&sim)
        );
    }

    #[test]
    fn a_simulated_arm_keeps_its_configuration_and_checks_its_load_on_the_machine() {
        let sim = parse::<SimArmFlags>(&["--sim-cpus", "4"])
            .check()
            .unwrap()
            .unwrap();
        let workload = find_workload("binary-trees").unwrap();
        let settings = [
            ("preset", "vanilla".to_string()),
            ("heap", "8m".to_string()),
            ("gc-threads", "3".to_string()),
        ];
        let arm = |load| {
            heap_arm(
                "v".into(),
                None,
                &settings,
                0,
                &workload,
                WorkloadParams::default(),
                load,
            )
            .unwrap()
        };
        let simulated = arm(Some(Interference::Busy {
            threads: 2,
            cpu: Some(3),
        }))
        .simulated(&sim)
        .unwrap();
        assert!(simulated.sim.is_some());
        assert_eq!(simulated.settings, arm(None).settings);
        // GC threads left to the preset are HotSpot's default for the simulated CPUs.
        let xeon = parse::<SimArmFlags>(&["--sim-machine", "xeon-2x10"])
            .check()
            .unwrap()
            .unwrap();
        let preset_threads = heap_arm(
            "p".into(),
            None,
            &settings[..2],
            0,
            &workload,
            WorkloadParams::default(),
            None,
        )
        .unwrap()
        .simulated(&xeon)
        .unwrap();
        assert_eq!(
            preset_threads.settings,
            ["preset=vanilla", "heap=8m", "gc-threads=15"]
        );
        assert!(
            preset_threads.what.contains(", 15 GC threads,"),
            "{}",
            preset_threads.what
        );
        // A simulated arm is not simulated again: its runner is no heap's.
        let err = simulated.simulated(&sim).err().unwrap().to_string();
        assert!(err.contains("cannot be simulated"), "{err}");
        let err = arm(Some(Interference::Busy {
            threads: 1,
            cpu: Some(4),
        }))
        .simulated(&sim)
        .err()
        .unwrap()
        .to_string();
        assert_eq!(
            err,
            "busy-loop CPU 4 is not a CPU of the simulated machine (allowed: 0..=3)"
        );
    }
}
