//! A small parallel phase for simulations: per-worker deques as counters, items that cost
//! modelled work and may create one child each, stealing round the ring, and the collector's
//! own termination protocol. Shared by the integration tests and the speed benchmark.

use std::sync::Arc;

use concord_sim::exec::{self, Costs, Report, Sim};
use concord_sim::policy::TerminationKind;
use concord_sim::sync::atomic::{AtomicUsize, Ordering};
use concord_sim::termination::Terminator;

/// The shape of a phase.
#[derive(Clone, Copy, Debug)]
pub struct PhaseShape {
    pub kind: TerminationKind,
    pub workers: usize,
    pub cpus: usize,
    /// Items initially in worker 0's deque (the others start empty and must steal).
    pub seeds: usize,
    /// Children the items may create in all.
    pub children: usize,
    /// Modelled work per item, ns.
    pub work_ns: u64,
    pub seed: u64,
}

struct Phase {
    term: Terminator,
    deques: Vec<AtomicUsize>,
    /// Items that exist (queued or being processed).
    pending: AtomicUsize,
    /// Children still allowed.
    budget: AtomicUsize,
    work_ns: u64,
    /// Items each worker processed (plain `std`: results, not part of the protocol).
    processed: Vec<std::sync::atomic::AtomicUsize>,
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
        self.processed[me].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    fn worker(&self, me: usize) {
        let n = self.deques.len();
        loop {
            while self.take(me) {
                self.process(me);
            }
            if (1..n).map(|k| (me + k) % n).any(|v| self.take(v)) {
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
}

/// Run one phase of `shape` under the built-in placement.
pub fn run_phase(shape: PhaseShape) -> PhaseRun {
    let phase = Arc::new(Phase {
        term: Terminator::new(shape.kind, shape.workers),
        deques: (0..shape.workers)
            .map(|w| AtomicUsize::new(if w == 0 { shape.seeds } else { 0 }))
            .collect(),
        pending: AtomicUsize::new(shape.seeds),
        budget: AtomicUsize::new(shape.children),
        work_ns: shape.work_ns,
        processed: (0..shape.workers)
            .map(|_| std::sync::atomic::AtomicUsize::new(0))
            .collect(),
    });
    let mut sim = Sim::new(shape.cpus, Costs::DEFAULT, shape.seed);
    for me in 0..shape.workers {
        let phase = phase.clone();
        sim.spawn(format!("gc-worker-{me}"), move || phase.worker(me));
    }
    let report = sim.run();
    let processed = phase
        .processed
        .iter()
        .map(|p| p.load(std::sync::atomic::Ordering::Relaxed))
        .collect();
    PhaseRun { report, processed }
}
