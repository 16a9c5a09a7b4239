//! The termination protocol: deciding, without a global lock on the deques, that every
//! worker's deque is empty, under one of the three [`TerminationKind`] switches, one file each.
//!
//! All three share one counter, `offered`: the number of workers currently inside the protocol.
//! A worker enters ([`Terminator::offer_termination`]) after a run of failed steals
//! ([`Terminator::failure_threshold`]) and increments it; it then waits, peeking now and then
//! at the other deques through the caller's `visible_work` closure, until either the counter
//! reaches `n` (everyone is done: return `true`) or it sees work, withdraws its offer by
//! decrementing the counter, and goes back to stealing (return `false`). They differ in when a
//! worker enters and in how it waits:
//!
//! * [`fixed`] (OpenJDK 8, 004 §2.3.3): enter after `2·N` failed steals; every waiter runs
//!   HotSpot 8's spin/yield/sleep loop ([`Backoff::HOTSPOT8`]) between peeks.
//! * [`live`] (000 §4.2): enter after `2·N_live` failed steals, where `N_live` is the number of
//!   workers not inside the protocol — towards the end of a phase there are few workers left to
//!   steal from, so fewer attempts are needed; it waits in the same loop with shorter constants
//!   ([`Backoff::SHORT`]: spins, then yields, then short sleeps).
//! * [`owst`] (HotSpot's `OWSTTaskTerminator`, JDK 9–17): enter after `2·N` failed steals. Only
//!   one waiter, the *spin master*, spins, yields and peeks; the others block on a condition
//!   variable with a short timeout and peek when they wake. A spin master that sees `k` items
//!   wakes `min(k, other waiters)` of them and withdraws; the next waiter to wake with no master
//!   present takes the role over. A master that has yielded for long enough gives the role up
//!   and naps like the others. The arrival that completes the count wakes all.
//!
//! # Why termination is only declared when every deque is empty
//!
//! 1. Only a deque's owner pushes to it; thieves only remove items.
//! 2. A worker offers only after draining its own deque and while holding no item, and while it
//!    is inside the protocol it neither processes nor pushes anything.
//! 3. Hence while a worker is counted in `offered` its deque stays empty, and every item that
//!    still exists is either in the deque of, or being processed by, a worker that is *not*
//!    counted. So `offered == n` implies that no item exists anywhere and none can be created.
//! 4. A withdrawal never takes the count down from `n`: for `fixed`/`live` the decrement is a
//!    CAS that gives up once it observes `n`; for `owst` every change of the count happens under
//!    the protocol's mutex, and the decrement is done only after checking, under that mutex, that
//!    the count is below `n`. So once `n` is reached it stays reached, and every waiter, however
//!    stale its peek, returns `true`.
//!
//! Peeking is therefore only needed for speed (to resume stealing while a straggler still has
//! work), never for safety: a stale or wrong peek can at worst cause a needless withdrawal.
//!
//! # Far more workers than CPUs
//!
//! Every kind waits actively: `fixed` and `live` waiters spin, yield and nap, `owst` sleepers
//! wake every millisecond to peek. With a few workers per CPU that is what the protocols are
//! for; with far more (see [`crate::parallel::oversubscription`]) the waiters take the CPUs from
//! the workers that still have work or have yet to start, and a phase takes seconds instead of
//! microseconds. The engine then sets a watch gate (`gate.rs`, [`Terminator::with_watchers`]):
//! only as many `fixed`/`live` waiters as there are CPUs wait actively, the others block on a
//! futex until a place frees up or the phase ends; `owst` sleepers sleep until woken, without a
//! timeout (its single spin master still watches). Left at its default the gate is open and
//! every kind behaves exactly as described above.
//!
//! # Entering and waiting are separate switches
//!
//! The kind decides when a worker enters; [`TerminationBackoff`] decides how it waits once
//! inside, so each of the two changes of 000 §4.2 relative to Concord's `live` defaults can be
//! measured alone. `auto` keeps each kind's own loop, as listed above.
//!
//! The `concord-loom` crate model-checks this file and its variants (the withdraw race of
//! `fixed`/`live`, OWST's hand-over of the spin master, and the closed gate).

mod backoff;
pub mod fixed;
mod gate;
pub mod live;
pub mod owst;

use crossbeam_utils::CachePadded;

pub use self::backoff::{Backoff, Pause, Waiting};
use super::policy::{TerminationBackoff, TerminationKind};
use crate::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use crate::sync::thread;

/// The waiting loop of protocol `kind` under the backoff switch `choice`.
pub fn waiting_loop(kind: TerminationKind, choice: TerminationBackoff) -> Backoff {
    match (choice, kind) {
        (TerminationBackoff::Auto, TerminationKind::Fixed) => fixed::BACKOFF,
        (TerminationBackoff::Auto, TerminationKind::Live) => live::BACKOFF,
        (TerminationBackoff::Auto, TerminationKind::Owst) => owst::MASTER_BACKOFF,
        (TerminationBackoff::HotSpot8, _) => Backoff::HOTSPOT8,
        (TerminationBackoff::Concord, _) => Backoff::SHORT,
    }
}

/// Shared state of one phase's termination protocol.
pub struct Terminator {
    kind: TerminationKind,
    n: usize,
    /// Workers inside the protocol. `fixed`/`live` change it lock-free; `owst` changes it only
    /// while holding its mutex (it is still read lock-free, e.g. by `live_workers`).
    offered: CachePadded<AtomicUsize>,
    /// Per worker: inside the protocol (not a useful steal victim for adaptive stealing).
    in_termination: Box<[CachePadded<AtomicBool>]>,
    /// How waiters wait between peeks (for `owst`: how the spin master waits before it naps).
    backoff: Backoff,
    /// `owst` only: the spin master and the sleepers' condition.
    owst: owst::OwstState,
    /// How many `fixed`/`live` waiters may wait actively at once (open unless set).
    gate: gate::Gate,
}

impl Terminator {
    /// A protocol of kind `kind` for `n` workers, none of them offering yet, with the kind's own
    /// waiting constants.
    pub fn new(kind: TerminationKind, n: usize) -> Self {
        Self::with_backoff(kind, n, waiting_loop(kind, TerminationBackoff::Auto))
    }

    /// Like [`new`](Self::new) with other waiting constants (tests and models use tiny ones).
    pub fn with_backoff(kind: TerminationKind, n: usize, backoff: Backoff) -> Self {
        Self {
            kind,
            n,
            offered: CachePadded::new(AtomicUsize::new(0)),
            in_termination: (0..n)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            backoff,
            owst: owst::OwstState::new(backoff.sleep()),
            gate: gate::Gate::new(n, n),
        }
    }

    /// This protocol with at most `watchers` waiters waiting actively at once (the module docs'
    /// "Far more workers than CPUs"); `watchers` at or above the number of workers changes
    /// nothing.
    pub fn with_watchers(mut self, watchers: usize) -> Self {
        self.gate = gate::Gate::new(watchers, self.n);
        self.owst.set_sleep_untimed(watchers < self.n);
        self
    }

    /// How many `fixed`/`live` waiters may wait actively at once.
    pub fn watchers(&self) -> usize {
        self.gate.places()
    }

    /// Times a waiter blocked on the watch gate because every watch place was taken.
    pub fn gate_blocks(&self) -> u64 {
        self.gate.blocks()
    }

    /// Most `fixed`/`live` waiters that waited actively at the same time behind a closed gate
    /// (0 while the gate is open: then nothing is counted).
    pub fn peak_watchers(&self) -> usize {
        self.gate.peak()
    }

    /// Which protocol this is.
    pub fn kind(&self) -> TerminationKind {
        self.kind
    }

    /// Number of workers.
    pub fn workers(&self) -> usize {
        self.n
    }

    /// Workers not currently inside the protocol (`N_live`, at least 1).
    pub fn live_workers(&self) -> usize {
        // Relaxed: a hint for the steal threshold; a stale value only changes when a worker
        // gives up stealing, never whether termination is declared.
        self.n
            .saturating_sub(self.offered.load(Ordering::Relaxed))
            .max(1)
    }

    /// Whether worker `w` is outside the protocol (a useful steal victim). Maintained for every
    /// kind; only adaptive stealing looks at it.
    pub fn is_live(&self, w: usize) -> bool {
        // Relaxed: a victim-selection hint only.
        !self.in_termination[w].load(Ordering::Relaxed)
    }

    /// Consecutive failed steals after which a worker offers termination.
    pub fn failure_threshold(&self) -> usize {
        match self.kind {
            TerminationKind::Fixed => fixed::failure_threshold(self.n),
            TerminationKind::Owst => owst::failure_threshold(self.n),
            TerminationKind::Live => live::failure_threshold(self.live_workers()),
        }
    }

    /// Sleepers that OWST spin masters woke because they saw work (0 for the other kinds).
    pub fn wakeups(&self) -> u64 {
        self.owst.wakeups()
    }

    /// Offer termination for worker `me`, whose own deque must be empty. `visible_work`
    /// returns the number of items it can see in other workers' deques (0 = none).
    ///
    /// Returns `true` when all workers are done, `false` when work was seen and the offer was
    /// withdrawn (go back to stealing).
    pub fn offer_termination(&self, me: usize, visible_work: impl Fn() -> usize) -> bool {
        self.in_termination[me].store(true, Ordering::Relaxed);
        let done = match self.kind {
            TerminationKind::Fixed | TerminationKind::Live => self.offer_spinning(&visible_work),
            TerminationKind::Owst => self.offer_owst(me, &visible_work),
        };
        if !done {
            self.in_termination[me].store(false, Ordering::Relaxed);
        }
        done
    }

    /// Whether the count reached `n` (final: it never goes down from there).
    fn terminated(&self) -> bool {
        // SeqCst (with the SeqCst increments and decrements): the count is the single point of
        // agreement; reading `n` also acquires everything the other workers did before their
        // offers, so the phase's results are visible to whoever returns `true`.
        self.offered.load(Ordering::SeqCst) == self.n
    }

    /// Count this worker in; returns whether it completed the count.
    fn enter(&self) -> bool {
        // SeqCst: the offer must come before our peeks at other deques in the single total
        // order (a Dekker-style handshake with owners that push and later offer), so a peek
        // never reads deque state older than our own entry.
        self.offered.fetch_add(1, Ordering::SeqCst) + 1 == self.n
    }

    /// The offer of `fixed` and `live`: count in, then wait as a watcher once the gate lets us
    /// (at once while it is open).
    fn offer_spinning(&self, visible_work: &impl Fn() -> usize) -> bool {
        if self.enter() {
            self.gate.open();
            return true;
        }
        if self.gate.watch_or_block(|| self.terminated()) {
            return true;
        }
        let done = self.watch(visible_work);
        if !done {
            // Withdrawn: the place goes to a blocked waiter. At the end there is nothing to
            // hand over: the last arrival has woken everyone.
            self.gate.leave();
        }
        done
    }

    /// A watcher's wait: peek, wait a step of the backoff, until the count reaches `n` (true)
    /// or work shows up and the offer is taken back (false).
    fn watch(&self, visible_work: &impl Fn() -> usize) -> bool {
        let mut waiting = self.backoff.start();
        loop {
            if self.terminated() {
                return true;
            }
            if let Pause::Sleep = waiting.step() {
                thread::sleep(waiting.sleep_time());
            }
            if self.terminated() {
                return true;
            }
            if visible_work() > 0 {
                return !self.withdraw_lock_free();
            }
        }
    }

    /// Take back an offer unless termination was already reached. Returns whether it was taken
    /// back.
    fn withdraw_lock_free(&self) -> bool {
        // SeqCst: as in `enter`.
        let mut current = self.offered.load(Ordering::SeqCst);
        loop {
            if current == self.n {
                return false;
            }
            // SeqCst: as in `enter`; the CAS fails (and we retry or give up) if anybody changed
            // the count since we read it, in particular if it reached `n`.
            match self.offered.compare_exchange(
                current,
                current - 1,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => current = now,
            }
        }
    }

    /// Test hook: mark worker `w` as inside (or outside) the protocol without offering.
    #[cfg(test)]
    pub(crate) fn set_in_termination_for_test(&self, w: usize, inside: bool) {
        self.in_termination[w].store(inside, Ordering::Relaxed);
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel::rng::XorShift;
    use std::sync::atomic::AtomicU64;
    use std::sync::mpsc;
    use std::time::Duration;

    /// How often a worker entered the protocol and how often it left again to steal (what the
    /// engine counts in each worker's phase statistics).
    #[derive(Default)]
    struct Counts {
        termination_entries: u64,
        termination_exits: u64,
    }

    /// `auto` keeps each protocol's own loop; the other values replace it whatever the protocol,
    /// so `live` can wait in HotSpot 8's loop and `fixed` in Concord's.
    #[test]
    fn backoff_switch_chooses_the_loop_apart_from_the_protocol() {
        use TerminationBackoff as B;
        use TerminationKind as K;
        assert_eq!(waiting_loop(K::Fixed, B::Auto), Backoff::HOTSPOT8);
        assert_eq!(waiting_loop(K::Live, B::Auto), Backoff::SHORT);
        assert_eq!(
            waiting_loop(K::Owst, B::Auto),
            Backoff::SHORT.with_sleep(Duration::from_millis(1))
        );
        for kind in TerminationKind::ALL.iter().copied() {
            assert_eq!(waiting_loop(kind, B::HotSpot8), Backoff::HOTSPOT8, "{kind}");
            assert_eq!(waiting_loop(kind, B::Concord), Backoff::SHORT, "{kind}");
        }
        // The threshold is the protocol's alone: `live` under HotSpot 8's loop still offers
        // after 2·N_live failed steals.
        let t = Terminator::with_backoff(K::Live, 4, waiting_loop(K::Live, B::HotSpot8));
        t.offered.store(1, Ordering::SeqCst);
        assert_eq!(t.failure_threshold(), 6);
        let t = Terminator::with_backoff(K::Fixed, 4, waiting_loop(K::Fixed, B::Concord));
        t.offered.store(1, Ordering::SeqCst);
        assert_eq!(t.failure_threshold(), 8);
    }

    impl Terminator {
        /// `offer_termination`, counted.
        fn offer(&self, me: usize, visible: impl Fn() -> usize, c: &mut Counts) -> bool {
            c.termination_entries += 1;
            let done = self.offer_termination(me, visible);
            if !done {
                c.termination_exits += 1;
            }
            done
        }
    }

    /// Run `f` on its own thread and fail if it does not finish in `secs` (a hang guard only:
    /// passing never depends on the machine's speed).
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            let r = f();
            let _ = tx.send(());
            r
        });
        match rx.recv_timeout(Duration::from_secs(secs)) {
            Ok(()) => handle.join().unwrap(),
            Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
                Ok(r) => r,
                Err(panic) => std::panic::resume_unwind(panic),
            },
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("hung for {secs}s"),
        }
    }

    /// Spin-yield until `cond` holds.
    fn wait_until(cond: impl Fn() -> bool) {
        while !cond() {
            std::thread::yield_now();
        }
    }

    /// An OWST terminator whose sleepers only wake when notified and whose master never naps,
    /// so who wakes whom is deterministic.
    fn owst_no_timeouts(n: usize) -> Terminator {
        let backoff = Backoff::Staged {
            spin_rounds: 6,
            yields: u32::MAX,
            sleep: Duration::from_secs(3600),
        };
        Terminator::with_backoff(TerminationKind::Owst, n, backoff)
    }

    #[test]
    fn accessors_and_thresholds() {
        for &kind in TerminationKind::ALL {
            let t = Terminator::new(kind, 4);
            assert_eq!(t.kind(), kind);
            assert_eq!(t.workers(), 4);
            assert_eq!(t.live_workers(), 4);
            assert!((0..4).all(|w| t.is_live(w)));
            assert_eq!(t.failure_threshold(), 8);
            t.offered.store(3, Ordering::SeqCst);
            assert_eq!(t.live_workers(), 1);
            let expect = if kind == TerminationKind::Live { 2 } else { 8 };
            assert_eq!(t.failure_threshold(), expect, "{kind}");
            assert_eq!(t.wakeups(), 0);
        }
    }

    #[test]
    fn all_idle_workers_terminate_together() {
        within(120, || {
            for &kind in TerminationKind::ALL {
                for n in 1..=8 {
                    for _ in 0..20 {
                        let t = Terminator::new(kind, n);
                        std::thread::scope(|s| {
                            for me in 0..n {
                                let t = &t;
                                s.spawn(move || {
                                    let mut st = Counts::default();
                                    assert!(t.offer(me, || 0, &mut st));
                                    assert_eq!(st.termination_entries, 1);
                                    assert_eq!(st.termination_exits, 0);
                                });
                            }
                        });
                        assert_eq!(t.offered.load(Ordering::SeqCst), n, "{kind} n={n}");
                        assert!((0..n).all(|w| !t.is_live(w)));
                    }
                }
            }
        });
    }

    #[test]
    fn visible_work_withdraws_an_offer() {
        for &kind in TerminationKind::ALL {
            let t = Terminator::new(kind, 2);
            let mut st = Counts::default();
            assert!(!t.offer(0, || 3, &mut st), "{kind}");
            assert_eq!(st.termination_entries, 1);
            assert_eq!(st.termination_exits, 1);
            assert_eq!(t.live_workers(), 2);
            assert!(t.is_live(0));
            assert_eq!(t.wakeups(), 0, "nobody else was waiting");
        }
    }

    #[test]
    fn single_worker_terminates_at_once() {
        for &kind in TerminationKind::ALL {
            let t = Terminator::new(kind, 1);
            let mut st = Counts::default();
            assert!(t.offer(0, || 100, &mut st), "{kind}");
            assert_eq!(st.termination_exits, 0);
        }
    }

    #[test]
    fn a_waiter_withdraws_when_work_appears_then_all_terminate() {
        within(120, || {
            for &kind in TerminationKind::ALL {
                let t = Terminator::new(kind, 2);
                let published = AtomicUsize::new(0);
                std::thread::scope(|s| {
                    let waiter = s.spawn(|| {
                        let mut st = Counts::default();
                        while !t.offer(0, || published.load(Ordering::SeqCst), &mut st) {
                            // "Steal" the item.
                            published.fetch_sub(1, Ordering::SeqCst);
                        }
                        st
                    });
                    wait_until(|| t.offered.load(Ordering::SeqCst) == 1);
                    published.store(1, Ordering::SeqCst);
                    wait_until(|| published.load(Ordering::SeqCst) == 0);
                    let mut st = Counts::default();
                    assert!(t.offer(1, || published.load(Ordering::SeqCst), &mut st));
                    let st = waiter.join().unwrap();
                    assert_eq!(st.termination_exits, 1, "{kind}");
                    assert_eq!(st.termination_entries, 2, "{kind}");
                });
            }
        });
    }

    #[test]
    fn nobody_withdraws_once_the_count_reached_n() {
        // Worker 1's first peek blocks until everybody has offered and then reports work (a
        // stale peek). It must still terminate. For OWST it is once the spin master and once a
        // sleeper (worker 2 is then the master and never naps; sleepers time out after 1 ms).
        within(120, || {
            let cases = [
                (TerminationKind::Fixed, true),
                (TerminationKind::Live, true),
                (TerminationKind::Owst, true),
                (TerminationKind::Owst, false),
            ];
            for (kind, w1_first) in cases {
                let backoff = Backoff::Staged {
                    spin_rounds: 6,
                    yields: u32::MAX,
                    sleep: owst::MASTER_BACKOFF.sleep(),
                };
                let t = Terminator::with_backoff(kind, 3, backoff);
                let peeking = AtomicBool::new(false);
                std::thread::scope(|s| {
                    let t = &t;
                    let idle = || t.offer(2, || 0, &mut Counts::default());
                    let stale = || {
                        peeking.store(true, Ordering::SeqCst);
                        wait_until(|| t.offered.load(Ordering::SeqCst) == 3);
                        5
                    };
                    let w1 = move || t.offer(1, stale, &mut Counts::default());
                    let (h1, h2);
                    if w1_first {
                        h1 = s.spawn(w1);
                        wait_until(|| t.offered.load(Ordering::SeqCst) == 1);
                        h2 = s.spawn(idle);
                    } else {
                        h2 = s.spawn(idle);
                        wait_until(|| t.offered.load(Ordering::SeqCst) == 1);
                        h1 = s.spawn(w1);
                    }
                    wait_until(|| peeking.load(Ordering::SeqCst));
                    if kind == TerminationKind::Owst {
                        let master = t.owst.master();
                        assert_eq!(master, Some(if w1_first { 1 } else { 2 }));
                    }
                    assert!(t.offer(0, || 0, &mut Counts::default()));
                    assert!(h1.join().unwrap(), "{kind} (worker 1 first: {w1_first})");
                    assert!(h2.join().unwrap(), "{kind} (worker 1 first: {w1_first})");
                });
            }
        });
    }

    #[test]
    fn owst_spin_master_wakes_as_many_sleepers_as_there_are_items() {
        within(120, || {
            // Workers 0..4 wait (one spin master, three sleepers); worker 4 is still busy.
            let n = 5;
            let t = owst_no_timeouts(n);
            let published = AtomicUsize::new(0);
            let withdrawn = AtomicUsize::new(0);
            std::thread::scope(|s| {
                let waiters: Vec<_> = (0..4)
                    .map(|me| {
                        let (t, published, withdrawn) = (&t, &published, &withdrawn);
                        s.spawn(move || {
                            let mut st = Counts::default();
                            let visible = || published.load(Ordering::SeqCst);
                            while !t.offer(me, visible, &mut st) {
                                withdrawn.fetch_add(1, Ordering::SeqCst);
                                // Pretend to take the work; come back once it is gone.
                                wait_until(|| published.load(Ordering::SeqCst) == 0);
                            }
                            st
                        })
                    })
                    .collect();
                wait_until(|| t.offered.load(Ordering::SeqCst) == 4);
                assert!(t.owst.master().is_some());
                // Two items: the master wakes two of its three sleepers and leaves with them.
                published.store(2, Ordering::SeqCst);
                wait_until(|| withdrawn.load(Ordering::SeqCst) >= 3);
                assert_eq!(t.wakeups(), 2);
                published.store(0, Ordering::SeqCst);
                // The busy worker finishes; everybody terminates.
                let mut st = Counts::default();
                assert!(t.offer(4, || published.load(Ordering::SeqCst), &mut st));
                let exits: u64 = waiters
                    .into_iter()
                    .map(|h| h.join().unwrap().termination_exits)
                    .sum();
                assert!(exits >= 3, "{exits}");
                assert_eq!(t.wakeups(), 2, "no wake-ups without work");
                assert_eq!(t.offered.load(Ordering::SeqCst), n);
            });
        });
    }

    #[test]
    fn owst_a_woken_sleeper_takes_over_as_spin_master() {
        within(120, || {
            let t = owst_no_timeouts(3);
            let kick = AtomicUsize::new(0);
            let go = AtomicBool::new(false);
            std::thread::scope(|s| {
                let master = s.spawn(|| {
                    let mut st = Counts::default();
                    // Sees one item once kicked; after withdrawing it sees nothing.
                    let first = t.offer(0, || kick.load(Ordering::SeqCst), &mut st);
                    assert!(!first);
                    wait_until(|| go.load(Ordering::SeqCst));
                    assert!(t.offer(0, || 0, &mut st));
                    st
                });
                wait_until(|| t.owst.master() == Some(0));
                let sleeper = s.spawn(|| {
                    let mut st = Counts::default();
                    assert!(t.offer(1, || 0, &mut st));
                    st
                });
                wait_until(|| t.offered.load(Ordering::SeqCst) == 2);
                kick.store(1, Ordering::SeqCst);
                // The master leaves and wakes the sleeper, who finds nothing and takes over.
                wait_until(|| t.owst.master() == Some(1));
                assert_eq!(t.wakeups(), 1);
                go.store(true, Ordering::SeqCst);
                let mut st = Counts::default();
                assert!(t.offer(2, || 0, &mut st));
                assert_eq!(master.join().unwrap().termination_exits, 1);
                assert_eq!(sleeper.join().unwrap().termination_exits, 0);
            });
        });
    }

    #[test]
    fn owst_napping_master_and_sleepers_terminate_when_the_last_worker_arrives() {
        within(120, || {
            let t = Terminator::new(TerminationKind::Owst, 4);
            std::thread::scope(|s| {
                for me in 0..3 {
                    let t = &t;
                    s.spawn(move || assert!(t.offer(me, || 0, &mut Counts::default())));
                }
                wait_until(|| t.offered.load(Ordering::SeqCst) == 3);
                // Long enough for the master to run out of yields and nap a few times (not
                // needed for the test to pass, only to exercise that path).
                std::thread::sleep(Duration::from_millis(30));
                assert!(t.offer(3, || 0, &mut Counts::default()));
            });
            assert_eq!(t.wakeups(), 0);
        });
    }

    /// A simulated phase: per-worker deques of abstract items (only the owner pushes, anybody
    /// pops), items that spawn a random number of children from a finite budget, and workers
    /// that drain, steal a random number of times and offer termination. Whoever is told "all
    /// done" checks that no item exists anywhere. At most `watchers` waiters wait actively.
    fn simulate(kind: TerminationKind, n: usize, watchers: usize, seed: u64) -> (u64, u64) {
        let t = Terminator::new(kind, n).with_watchers(watchers);
        let deques: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
        let pending = AtomicUsize::new(0);
        let budget = AtomicUsize::new(40 * n);
        let take = |w: usize| {
            deques[w]
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |l| l.checked_sub(1))
                .is_ok()
        };
        let create = |want: usize| {
            budget
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |b| {
                    Some(b - want.min(b))
                })
                .map(|b| want.min(b))
                .unwrap()
        };
        let entries = AtomicU64::new(0);
        let exits = AtomicU64::new(0);
        std::thread::scope(|s| {
            for me in 0..n {
                let (t, deques, pending) = (&t, &deques, &pending);
                let (take, create) = (&take, &create);
                let (entries, exits) = (&entries, &exits);
                s.spawn(move || {
                    let mut rng = XorShift::new(seed ^ ((me as u64 + 1) << 32));
                    let push = |k: usize| {
                        // Count first, so `pending` never reads 0 while an item exists.
                        pending.fetch_add(k, Ordering::SeqCst);
                        deques[me].fetch_add(k, Ordering::SeqCst);
                    };
                    let process = |rng: &mut XorShift| {
                        for _ in 0..rng.below(200) {
                            std::hint::spin_loop();
                        }
                        if rng.below(4) == 0 {
                            std::thread::yield_now();
                        }
                        push(create(rng.below(4)));
                        pending.fetch_sub(1, Ordering::SeqCst);
                    };
                    if me == 0 || rng.below(2) == 0 {
                        push(create(1 + rng.below(6)));
                    }
                    let mut st = Counts::default();
                    loop {
                        while take(me) {
                            process(&mut rng);
                        }
                        let mut stole = false;
                        if n > 1 {
                            for _ in 0..rng.below(2 * n + 1) {
                                let v = (me + 1 + rng.below(n - 1)) % n;
                                if take(v) {
                                    stole = true;
                                    process(&mut rng);
                                    break;
                                }
                            }
                        }
                        if stole {
                            continue;
                        }
                        let visible = || {
                            (0..n)
                                .filter(|&w| w != me)
                                .map(|w| deques[w].load(Ordering::SeqCst))
                                .sum()
                        };
                        if t.offer(me, visible, &mut st) {
                            let left = pending.load(Ordering::SeqCst);
                            assert_eq!(left, 0, "{kind} n={n}: terminated with {left} items");
                            assert!(deques.iter().all(|d| d.load(Ordering::SeqCst) == 0));
                            break;
                        }
                    }
                    entries.fetch_add(st.termination_entries, Ordering::Relaxed);
                    exits.fetch_add(st.termination_exits, Ordering::Relaxed);
                });
            }
        });
        assert_eq!(pending.load(Ordering::SeqCst), 0);
        (entries.into_inner(), exits.into_inner())
    }

    /// Stress every kind with at most `watchers(n)` active waiters.
    fn stress(watchers: impl Fn(usize) -> usize) {
        for &kind in TerminationKind::ALL {
            let mut withdrawals = 0;
            for n in 2..=8 {
                for round in 0..25u64 {
                    let seed = round * 1_000 + n as u64;
                    let (entries, exits) = simulate(kind, n, watchers(n), seed);
                    assert_eq!(entries, exits + n as u64, "{kind}: each worker ends once");
                    withdrawals += exits;
                }
            }
            // Not a correctness condition, just evidence the withdraw path was exercised.
            eprintln!("{kind}: {withdrawals} withdrawals");
        }
    }

    #[test]
    fn stress_termination_never_leaves_work_behind() {
        within(300, || stress(|n| n));
    }

    #[test]
    fn stress_termination_behind_a_closed_gate_never_leaves_work_behind() {
        // One or two watchers: blocked waiters take over the places of watchers that leave.
        within(300, || stress(|n| 1 + n % 2));
    }

    #[test]
    fn the_gate_is_open_unless_there_are_fewer_watchers_than_workers() {
        for &kind in TerminationKind::ALL {
            let t = Terminator::new(kind, 4);
            assert_eq!(t.watchers(), 4);
            let t = Terminator::new(kind, 4).with_watchers(9);
            assert_eq!(t.watchers(), 9);
            assert!(!t.owst.sleep_untimed());
            let t = Terminator::new(kind, 4).with_watchers(0);
            assert_eq!(t.watchers(), 1, "{kind}: at least one watcher");
            assert!(t.owst.sleep_untimed());
        }
    }

    #[test]
    fn a_closed_gate_lets_only_its_watchers_wait_actively() {
        within(120, || {
            for kind in [TerminationKind::Fixed, TerminationKind::Live] {
                let n = 12;
                let t = Terminator::new(kind, n).with_watchers(2);
                std::thread::scope(|s| {
                    for me in 0..n - 1 {
                        let t = &t;
                        s.spawn(move || assert!(t.offer(me, || 0, &mut Counts::default())));
                    }
                    // Two watch; the nine others sleep on the gate until the last one arrives
                    // (each blocks at least once: no watcher leaves before the end).
                    wait_until(|| {
                        t.offered.load(Ordering::SeqCst) == n - 1
                            && t.gate_blocks() >= (n - 3) as u64
                    });
                    assert_eq!(t.peak_watchers(), 2, "{kind}");
                    assert!(t.offer(n - 1, || 0, &mut Counts::default()));
                });
                assert_eq!(t.peak_watchers(), 2, "{kind}");
                assert_eq!(t.offered.load(Ordering::SeqCst), n);
            }
        });
    }

    #[test]
    fn a_watcher_that_sees_work_hands_its_place_to_a_blocked_waiter() {
        within(120, || {
            for kind in [TerminationKind::Fixed, TerminationKind::Live] {
                let t = Terminator::new(kind, 3).with_watchers(1);
                let published = AtomicUsize::new(0);
                std::thread::scope(|s| {
                    // Worker 0 watches first; only it ever sees the item.
                    let watcher = s.spawn(|| {
                        let mut st = Counts::default();
                        let visible = || published.load(Ordering::SeqCst);
                        assert!(!t.offer(0, visible, &mut st));
                        published.store(0, Ordering::SeqCst);
                        // The place it left went to the sleeper, which was woken for it.
                        wait_until(|| t.gate.watching() == 1);
                        assert!(t.offer(0, visible, &mut st));
                        st
                    });
                    wait_until(|| t.gate.watching() == 1);
                    let sleeper = s.spawn(|| {
                        let mut st = Counts::default();
                        assert!(t.offer(1, || 0, &mut st));
                        st
                    });
                    wait_until(|| t.gate_blocks() >= 1);
                    published.store(1, Ordering::SeqCst);
                    // Worker 0 withdraws, worker 1 takes its place, worker 0 comes back and
                    // sleeps on the gate in turn.
                    wait_until(|| t.gate_blocks() >= 2);
                    assert!(t.offer(2, || 0, &mut Counts::default()));
                    assert_eq!(watcher.join().unwrap().termination_exits, 1, "{kind}");
                    assert_eq!(sleeper.join().unwrap().termination_exits, 0, "{kind}");
                });
                assert_eq!(t.peak_watchers(), 1, "{kind}");
            }
        });
    }
}
