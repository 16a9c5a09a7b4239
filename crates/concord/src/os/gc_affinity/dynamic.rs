//! `gc-affinity dynamic` (000 Algorithm 1): at the start of each parallel collection every
//! GC worker taking part decides for itself, on its own thread, from the load of the CPU it is
//! on ([`super::plan::rebalance_thread`]), and binds itself to a random low CPU if its CPU is
//! high.
//!
//! The per-CPU loads are the runnable-thread counts of a background sampler (kept fresh off
//! the pause path: a decision only clones its latest snapshot) plus one for each worker of the
//! collection on that CPU: a sleeping worker on the CPU it last ran on, an awake one on the CPU
//! it runs on. The workers' CPUs form one table per collection ([`super::plan::Round`], the
//! decision the simulator makes too), filled by the VM thread from
//! the pool's last CPUs ([`DynamicBalancer::begin`]) and updated by each worker when it decides
//! (its current CPU, then its target if it moves), under one lock: a worker that moved counts
//! on its new CPU for those that decide after it, as a rebound thread does in the kernel's
//! per-CPU load that the paper's threads read.
//!
//! A moved worker stays bound to its one CPU until a later collection finds that CPU high. A
//! refused bind (`EINVAL` for a CPU outside the cgroup's cpuset or offline, `EPERM`) is
//! recorded and the collection goes on.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::plan::{Round, Thresholds, Turn};
use super::{AffinityReport, FailureLog, SplitMix};
use crate::os::affinity::{set_current_thread_affinity, set_own_thread_affinity, thread_affinity};
use crate::os::cpu::{LoadSampler, LoadSnapshot, RunnableSampler};
use crate::os::procfs::read_task_stat;

/// The CPU worker thread `tid` of this process is on, for placement, read from `/proc` (not
/// for the pause path): the CPU it last ran on (`/proc/self/task/<tid>/stat` field 39), except
/// when its affinity mask is a single other CPU, where it will run when it wakes. `None` for
/// `tid ≤ 0` (a worker not started yet) or an unreadable thread.
pub fn worker_cpu(tid: i32) -> Option<u32> {
    if tid <= 0 {
        return None;
    }
    let last = read_task_stat(tid).ok()?.processor;
    Some(wake_cpu(tid, last))
}

/// Where thread `tid`, which last ran on CPU `last`, will run when it wakes: `last`, unless its
/// affinity mask is a single other CPU (someone pinned it while it slept; a sleeping thread
/// only migrates when it wakes). One `sched_getaffinity`, no file: fit for the pause path.
pub fn wake_cpu(tid: i32, last: u32) -> u32 {
    match thread_affinity(tid).ok().as_deref() {
        Some(&[only]) if only != last => only,
        _ => last,
    }
}

/// Where the load of other threads comes from.
pub(super) enum OtherLoad {
    /// Runnable threads per CPU (this process's GC workers and mutators left out).
    Runnable(RunnableSampler),
    /// Busy fractions of `/proc/stat` (the HotSpot agent, whose threads are not ours to tell
    /// apart).
    Busy(LoadSampler),
    /// Only the GC workers count.
    Nothing,
}

impl OtherLoad {
    /// What the load is, for debugging output.
    pub fn describe(&self) -> &'static str {
        match self {
            OtherLoad::Runnable(_) => "runnable threads",
            OtherLoad::Busy(_) => "busy fractions",
            OtherLoad::Nothing => "none",
        }
    }

    pub fn latest(&self) -> Option<Arc<LoadSnapshot>> {
        match self {
            OtherLoad::Runnable(s) => s.latest(),
            OtherLoad::Busy(s) => s.latest(),
            OtherLoad::Nothing => None,
        }
    }
}

/// The state of `gc-affinity dynamic` for one heap.
pub(super) struct DynamicBalancer {
    pub other: OtherLoad,
    pub thresholds: Thresholds,
    pub rng: SplitMix,
    /// One collection's table ([`Round`]: where each taking-part worker is, who has decided).
    round: Mutex<Round>,
}

impl DynamicBalancer {
    pub fn new(other: OtherLoad, seed: u64) -> Self {
        Self {
            other,
            thresholds: Thresholds::default(),
            rng: SplitMix::new(seed),
            round: Mutex::default(),
        }
    }

    fn round(&self) -> MutexGuard<'_, Round> {
        self.round.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Open a collection's round on the VM thread: the first `active` workers take part,
    /// worker `w` (thread `tids[w]`, 0 if not started) last ran on `last_cpus[w]`; `other` is
    /// the load of the other threads (`None`: only the workers count).
    pub fn begin(
        &self,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
        other: Option<Arc<LoadSnapshot>>,
    ) {
        let active = active.min(tids.len()).min(last_cpus.len());
        let cpus = tids[..active]
            .iter()
            .zip(last_cpus)
            .map(|(&tid, &cpu)| if tid > 0 { cpu } else { None })
            .collect();
        let load_age_ms = other.as_ref().map(|s| s.age().as_secs_f64() * 1e3);
        self.round().open(cpus, other, load_age_ms);
    }

    /// Worker `worker`'s own decision (lines 17–22), on its own thread, once per round: no-op
    /// for a worker not taking part or that has decided already.
    pub fn decide_on_worker(&self, allowed: &[u32], failures: &FailureLog, worker: usize) {
        let mut round = self.round();
        if !round.first_turn(worker) {
            return;
        }
        let start = Instant::now();
        let turn = Turn {
            worker,
            tid: crate::os::sched::current_tid(),
            cpu: crate::os::cpu::current_cpu(),
        };
        self.decide(&mut round, allowed, failures, turn, |to| {
            set_current_thread_affinity(&[to])
        });
        round.add_decide_us(start.elapsed().as_secs_f64() * 1e6);
    }

    /// Close the round: what the workers did (`None` if no round was open).
    pub fn finish(&self) -> AffinityReport {
        self.round().close()
    }

    /// Every taking-part worker's decision made in turn on the calling thread, for workers
    /// that cannot decide themselves (the HotSpot agent's, or a caller with only thread ids):
    /// the same decision as [`DynamicBalancer::decide_on_worker`], each from `cpus[w]`, each
    /// moved worker bound by thread id. `tids` must be threads of this process.
    pub fn decide_in_turn(
        &self,
        allowed: &[u32],
        failures: &FailureLog,
        tids: &[i32],
        cpus: &[Option<u32>],
        active: usize,
        other: Option<Arc<LoadSnapshot>>,
    ) -> AffinityReport {
        let start = Instant::now();
        self.begin(tids, cpus, active, other);
        {
            let mut round = self.round();
            for (worker, &tid) in tids.iter().enumerate().take(round.workers()) {
                let turn = Turn {
                    worker,
                    tid,
                    cpu: round.cpu(worker),
                };
                // The caller's own workers: no `/proc` check inside the pause.
                self.decide(&mut round, allowed, failures, turn, |to| {
                    set_own_thread_affinity(tid, &[to])
                });
            }
        }
        let mut report = self.finish();
        report.decide_us = start.elapsed().as_secs_f64() * 1e6;
        report
    }

    /// One worker's decision against the round's table ([`Round::decide`]) with this heap's
    /// thresholds and random source, binding with `bind`; a refusal is counted (and said once)
    /// in `failures`.
    fn decide(
        &self,
        round: &mut Round,
        allowed: &[u32],
        failures: &FailureLog,
        turn: Turn,
        bind: impl FnOnce(u32) -> io::Result<()>,
    ) {
        round.decide(
            allowed,
            self.thresholds,
            turn,
            &mut |n| self.rng.below(n),
            bind,
            |f| failures.note(f),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_cpu_of_a_live_and_a_missing_thread() {
        let me = crate::os::sched::current_tid();
        let mask = thread_affinity(0).unwrap();
        assert!(mask.contains(&worker_cpu(me).unwrap()));
        assert_eq!(worker_cpu(0), None);
        assert_eq!(worker_cpu(-1), None);
    }
}
