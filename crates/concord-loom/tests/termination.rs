//! Loom models of the termination protocols (`concord::parallel::termination`): the withdraw
//! race of `fixed` and `live` (a waiter that sees work takes its offer back while the last
//! worker completes the count), OWST's spin master handing work to sleepers, and the watch gate
//! of far-oversubscribed phases (waiters beyond the watch places sleep on a futex and must be
//! woken for a freed place or for the end).
//!
//! Each model is a small phase: per-worker deques are counters (only the owner pushes, anybody
//! pops), an item may create a child once, and workers drain, steal once from each other worker
//! and then offer termination. Whoever is told "all done" checks that no item exists anywhere;
//! loom explores the interleavings (and reports a deadlock if a protocol strands a waiter).
//! The waiting loops are shrunk so that each wait is a couple of steps.

use std::time::Duration;

use concord_loom::policy::TerminationKind;
use concord_loom::termination::{Backoff, Terminator};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The kind's waiting loop, shrunk to a step or two before each "sleep" (a yield under loom):
/// HotSpot 8's shape for `fixed`, the staged one for the others.
fn tiny(kind: TerminationKind) -> Backoff {
    match kind {
        TerminationKind::Fixed => Backoff::HotSpot {
            hard_spins: 1,
            spin_to_yield_ratio: 0,
            yields_before_sleep: 0,
            sleep: Duration::ZERO,
        },
        _ => Backoff::Staged {
            spin_rounds: 1,
            yields: 1,
            sleep: Duration::ZERO,
        },
    }
}

struct Phase {
    term: Terminator,
    /// Offers taken back because work showed up (counted across executions, outside loom).
    withdrawals: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    deques: Vec<AtomicUsize>,
    /// Items that exist (queued or being processed).
    pending: AtomicUsize,
    /// Children still allowed to be created.
    budget: AtomicUsize,
}

impl Phase {
    fn new(
        kind: TerminationKind,
        seeds: &[usize],
        budget: usize,
        watchers: usize,
        withdrawals: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    ) -> Self {
        let pending: usize = seeds.iter().sum();
        Self {
            term: Terminator::with_backoff(kind, seeds.len(), tiny(kind)).with_watchers(watchers),
            withdrawals,
            deques: seeds.iter().map(|&s| AtomicUsize::new(s)).collect(),
            pending: AtomicUsize::new(pending),
            budget: AtomicUsize::new(budget),
        }
    }

    fn take(&self, w: usize) -> bool {
        self.deques[w]
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Process one item: maybe create a child in `me`'s deque, then the item is gone.
    fn process(&self, me: usize) {
        let child = self
            .budget
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| b.checked_sub(1))
            .is_ok();
        if child {
            // Count first, so `pending` never reads 0 while an item exists.
            self.pending.fetch_add(1, Ordering::SeqCst);
            self.deques[me].fetch_add(1, Ordering::SeqCst);
        }
        self.pending.fetch_sub(1, Ordering::SeqCst);
    }

    fn worker(&self, me: usize) {
        let n = self.deques.len();
        loop {
            while self.take(me) {
                self.process(me);
            }
            let stolen = (1..n).map(|k| (me + k) % n).find(|&v| self.take(v));
            if stolen.is_some() {
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
                    "terminated with work"
                );
                return;
            }
            self.withdrawals
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Check the phase under every interleaving loom explores with `preemptions`, and that some of
/// them took the withdraw path. Every worker may wait actively (an open gate).
fn model(kind: TerminationKind, seeds: &'static [usize], budget: usize, preemptions: usize) {
    gated_model(kind, seeds, budget, seeds.len(), preemptions);
}

/// [`model`] with at most `watchers` waiters waiting actively at once.
fn gated_model(
    kind: TerminationKind,
    seeds: &'static [usize],
    budget: usize,
    watchers: usize,
    preemptions: usize,
) {
    let executions = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let withdrawals = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = executions.clone();
    let withdrawn = withdrawals.clone();
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let phase = Arc::new(Phase::new(kind, seeds, budget, watchers, withdrawn.clone()));
        let others: Vec<_> = (1..seeds.len())
            .map(|me| {
                let phase = phase.clone();
                thread::spawn(move || phase.worker(me))
            })
            .collect();
        phase.worker(0);
        for t in others {
            t.join().unwrap();
        }
        assert_eq!(phase.pending.load(Ordering::SeqCst), 0);
    });
    let n = executions.load(std::sync::atomic::Ordering::Relaxed);
    let w = withdrawals.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("{kind} {seeds:?} ({watchers} watching): {n} executions, {w} withdrawals");
    assert!(w > 0, "{kind}: loom never took the withdraw path");
}

#[test]
fn fixed_withdraw_race() {
    // Worker 1 starts idle and offers; worker 0's item spawns a child it may lose to worker 1.
    model(TerminationKind::Fixed, &[1, 0], 1, 3);
}

#[test]
fn live_withdraw_race() {
    model(TerminationKind::Live, &[1, 0], 1, 3);
}

#[test]
fn owst_spin_master_and_sleeper() {
    // Three workers: two idle ones become spin master and sleeper while worker 0 works.
    model(TerminationKind::Owst, &[1, 0, 0], 1, 2);
}

#[test]
fn owst_two_workers_withdraw() {
    model(TerminationKind::Owst, &[1, 0], 1, 3);
}

#[test]
fn fixed_behind_a_closed_gate() {
    // One watch place for three workers: while worker 0 works, one idle worker watches and the
    // other sleeps on the gate; the watcher may withdraw for worker 0's child and hand its
    // place over, and the last arrival must wake whoever sleeps.
    gated_model(TerminationKind::Fixed, &[1, 0, 0], 1, 1, 2);
}

#[test]
fn live_behind_a_closed_gate() {
    gated_model(TerminationKind::Live, &[1, 0, 0], 1, 1, 2);
}

#[test]
fn owst_with_untimed_sleepers() {
    gated_model(TerminationKind::Owst, &[1, 0, 0], 1, 1, 2);
}
