//! A collection that would take for ever in virtual time (an extent no heap holds, a cost no
//! machine has) stops after [`MAX_COLLECTION_NS`] of simulated time with an error naming it,
//! within seconds of wall time, instead of running at 100 % CPU with no output.

use std::sync::mpsc::channel;
use std::sync::Arc;
use std::time::{Duration, Instant};

use concord::os::numa::NumaLayout;
use concord::os::policy::GcAffinity;
use concord::parallel::{ParkingKind, PhasePolicy};
use concord::telemetry::gc_trace::{
    Fate, TraceAffinity, TraceCollection, TraceKind, TraceObject, TraceRoot, TraceRootKind,
    TraceShape,
};
use concord_sim::exec::Costs;
use concord_sim::machine::Machine;
use concord_sim::replay::driver::{
    self, DriverError, SchedModel, SimRun, SimSetup, DEFAULT_MUTATOR_NS, MAX_COLLECTION_NS,
};
use concord_sim::replay::ReplayCollection;

/// Far more than a stopped simulation takes (a few seconds), far less than one that does not
/// stop: a guard, not a timing.
const WALL_GUARD: Duration = Duration::from_secs(240);

/// Collection `id`: one handle-stack root of `slots` slots reaching a chain of `objects`
/// objects of 64 bytes.
fn collection(id: u64, slots: u64, objects: u32) -> ReplayCollection {
    let refs: Vec<u32> = (1..objects).collect();
    ReplayCollection::try_from(TraceCollection {
        id,
        kind: TraceKind::Young,
        workers: 4,
        promotion_failed: false,
        roots: vec![TraceRoot {
            kind: TraceRootKind::HandleStack { slots },
            affinity: TraceAffinity::Any,
            ran_on: 0,
            reaches: vec![0],
        }],
        objects: (0..objects)
            .map(|i| TraceObject {
                size: 64,
                fate: Fate::Survivor,
                worker: 0,
                shape: TraceShape::fixed(1),
                refs: if i + 1 < objects {
                    i as usize..i as usize + 1
                } else {
                    refs.len()..refs.len()
                },
                ref_slots: 0..0,
            })
            .collect(),
        refs,
        ref_slots: Vec::new(),
        gaps: Vec::new(),
    })
    .unwrap()
}

fn setup(policy: PhasePolicy, costs: Costs) -> SimSetup {
    SimSetup {
        machine: Machine::from_flags(None, Some("4"), None, None).unwrap(),
        sched: SchedModel::Cfs,
        costs,
        seed: 0,
        policy,
        parking: ParkingKind::Monitor,
        gc_threads: 4,
        mutators: 2,
        load: None,
        gc_affinity: GcAffinity::None,
        numa: NumaLayout::Off,
        mutator_ns: DEFAULT_MUTATOR_NS,
        dynamic_gc_threads: None,
        pin_start: true,
        vm_thread_cpu: None,
        first_touch: true,
    }
}

/// `driver::simulate` on another thread, failing the test if it has not returned within
/// [`WALL_GUARD`].
fn simulate_guarded(trace: Vec<ReplayCollection>, setup: SimSetup) -> Result<SimRun, DriverError> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(driver::simulate(Arc::new(trace), &setup));
    });
    rx.recv_timeout(WALL_GUARD)
        .unwrap_or_else(|_| panic!("the simulation did not stop within {WALL_GUARD:?}"))
}

#[test]
fn a_collection_past_the_limit_is_stopped_and_named() {
    for policy in [PhasePolicy::VANILLA, PhasePolicy::OPTIMIZED] {
        let started = Instant::now();
        // GC(2)'s root extent, 2^63 slots, is 2^66 bytes to scan.
        let trace = vec![collection(1, 4, 100), collection(2, 1 << 63, 100)];
        let err = simulate_guarded(trace, setup(policy, Costs::DEFAULT)).unwrap_err();
        assert_eq!(
            err,
            DriverError::TimeLimit {
                id: 2,
                index: 1,
                collections: 2
            },
            "{policy:?}"
        );
        let message = err.to_string();
        assert!(
            message.starts_with(
                "GC(2), collection 2 of 2, was still running after 10 s of simulated time"
            ) && message.contains("(allowed: at most 10 s per collection"),
            "{message}"
        );
        eprintln!("{policy:?}: stopped after {:?}", started.elapsed());
    }
}

#[test]
fn costs_no_machine_has_are_stopped_at_the_limit_too() {
    // A byte copied in 1000 s (the executor's table takes what a calibration file may not).
    let costs = Costs {
        copy_per_byte_ps: 1_000_000_000_000_000,
        ..Costs::DEFAULT
    };
    let err = simulate_guarded(
        vec![collection(5, 4, 10)],
        setup(PhasePolicy::OPTIMIZED, costs),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            DriverError::TimeLimit {
                id: 5,
                index: 0,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn collections_within_the_limit_are_simulated_as_before() {
    let trace = vec![collection(1, 4, 1000), collection(2, 4096, 1000)];
    let run = simulate_guarded(trace, setup(PhasePolicy::OPTIMIZED, Costs::DEFAULT)).unwrap();
    assert_eq!(run.collections.len(), 2);
    for c in &run.collections {
        assert!(c.end_ns - c.start_ns < MAX_COLLECTION_NS);
    }
}
