//! A small parallel phase for simulations: per-worker deques as counters, items that cost
//! modelled work and may create one child each, and the collector's own steal policy
//! (`VictimSelector`, with its failure threshold) and termination protocol. Shared by the
//! integration tests and the speed benchmark.

use std::sync::Arc;

use concord_sim::exec::{self, Costs, Ns, Report, Sim};
use concord_sim::parallel::policy::{StealPolicy, TerminationKind};
use concord_sim::parallel::steal::{VictimQueues, VictimSelector};
use concord_sim::parallel::termination::Terminator;
use concord_sim::sync::atomic::{AtomicUsize, Ordering};

/// The shape of a phase.
#[derive(Clone, Copy, Debug)]
pub struct PhaseShape {
    pub kind: TerminationKind,
    pub steal: StealPolicy,
    pub workers: usize,
    pub cpus: usize,
    /// Items initially in worker 0's deque (the others start empty and must steal).
    pub seeds: usize,
    /// Children the items may create in all.
    pub children: usize,
    /// Modelled work per item, ns.
    pub work_ns: u64,
    pub seed: u64,
    /// The executor's lookahead ([`Sim::lookahead`]).
    pub lookahead: Ns,
}

struct Phase {
    term: Terminator,
    deques: Vec<AtomicUsize>,
    /// Items that exist (queued or being processed).
    pending: AtomicUsize,
    /// Children still allowed.
    budget: AtomicUsize,
    work_ns: u64,
    steal: StealPolicy,
    seed: u64,
    /// Per worker: items processed, steal attempts, failed steals (plain `std`: results, not
    /// part of the protocol).
    processed: Vec<std::sync::atomic::AtomicUsize>,
    steal_attempts: Vec<std::sync::atomic::AtomicUsize>,
    steal_failures: Vec<std::sync::atomic::AtomicUsize>,
}

/// The deques as the steal policy sees them (every look is a simulated atomic load).
struct Lengths<'a>(&'a [AtomicUsize]);

impl VictimQueues for Lengths<'_> {
    fn count(&self) -> usize {
        self.0.len()
    }

    fn len(&self, w: usize) -> usize {
        self.0[w].load(Ordering::Relaxed)
    }
}

fn bump(counter: &std::sync::atomic::AtomicUsize) {
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

impl Phase {
    fn take(&self, w: usize) -> bool {
        self.deques[w]
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    fn process(&self, me: usize) {
        exec::charge(self.work_ns);
        let child = self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
            .is_ok();
        if child {
            self.pending.fetch_add(1, Ordering::SeqCst);
            self.deques[me].fetch_add(1, Ordering::SeqCst);
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
        bump(&self.processed[me]);
    }

    /// Up to the protocol's failure threshold of steal attempts; whether one succeeded.
    fn steal(&self, me: usize, selector: &mut VictimSelector) -> bool {
        let mut failures = 0;
        while failures < self.term.failure_threshold() {
            bump(&self.steal_attempts[me]);
            match selector.select(me, &Lengths(&self.deques), &self.term) {
                Some(victim) if self.take(victim) => {
                    selector.record_success(victim);
                    return true;
                }
                _ => {
                    failures += 1;
                    bump(&self.steal_failures[me]);
                }
            }
        }
        false
    }

    fn worker(&self, me: usize) {
        let n = self.deques.len();
        let mut selector = VictimSelector::new(self.steal, self.seed ^ me as u64);
        loop {
            while self.take(me) {
                self.process(me);
            }
            if self.steal(me, &mut selector) {
                self.process(me);
                continue;
            }
            let visible = || {
                (0..n)
                    .filter(|&w| w != me)
                    .map(|w| self.deques[w].load(Ordering::SeqCst))
                    .sum()
            };
            if self.term.offer_termination(me, visible) {
                assert_eq!(
                    self.pending.load(Ordering::SeqCst),
                    0,
                    "terminated with work left"
                );
                return;
            }
        }
    }
}

/// What a phase run produced.
pub struct PhaseRun {
    pub report: Report,
    /// Items processed per worker.
    pub processed: Vec<usize>,
    /// Steal attempts per worker.
    pub steal_attempts: Vec<usize>,
    /// Failed steals per worker.
    pub steal_failures: Vec<usize>,
}

fn counts(counters: &[std::sync::atomic::AtomicUsize]) -> Vec<usize> {
    counters
        .iter()
        .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
        .collect()
}

fn counters(n: usize) -> Vec<std::sync::atomic::AtomicUsize> {
    (0..n)
        .map(|_| std::sync::atomic::AtomicUsize::new(0))
        .collect()
}

/// Run one phase of `shape` under the built-in placement.
pub fn run_phase(shape: PhaseShape) -> PhaseRun {
    run_phase_on(shape, Sim::new(shape.cpus, Costs::DEFAULT, shape.seed))
}

/// Run one phase of `shape` on `sim` (a machine and its placement; `shape.cpus` is not used),
/// with `shape`'s lookahead.
pub fn run_phase_on(shape: PhaseShape, sim: Sim) -> PhaseRun {
    let phase = Arc::new(Phase {
        term: Terminator::new(shape.kind, shape.workers),
        deques: (0..shape.workers)
            .map(|w| AtomicUsize::new(if w == 0 { shape.seeds } else { 0 }))
            .collect(),
        pending: AtomicUsize::new(shape.seeds),
        budget: AtomicUsize::new(shape.children),
        work_ns: shape.work_ns,
        steal: shape.steal,
        seed: shape.seed,
        processed: counters(shape.workers),
        steal_attempts: counters(shape.workers),
        steal_failures: counters(shape.workers),
    });
    let mut sim = sim.lookahead(shape.lookahead);
    for me in 0..shape.workers {
        let phase = phase.clone();
        sim.spawn(format!("gc-worker-{me}"), move || phase.worker(me));
    }
    let report = sim.run();
    PhaseRun {
        report,
        processed: counts(&phase.processed),
        steal_attempts: counts(&phase.steal_attempts),
        steal_failures: counts(&phase.steal_failures),
    }
}
