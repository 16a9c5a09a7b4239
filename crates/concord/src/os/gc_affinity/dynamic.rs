//! `gc-affinity dynamic` (000 Algorithm 1): at the start of every parallel collection, find
//! where each active worker will wake, add the CPUs' busy fractions from the [`LoadSampler`],
//! plan the moves ([`super::plan`]) and pin every moved worker to its target CPU.
//!
//! A moved worker stays pinned to its single CPU until a later collection finds that CPU high
//! and moves it again. A sleeping worker whose mask was changed only migrates when it wakes, so
//! until then its last CPU is stale; the balancer remembers the pins it made and counts each
//! pinned worker on its pin. A refused pin (`EINVAL` for a CPU outside the cgroup's cpuset or
//! offline, `EPERM`) is recorded and the collection goes on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::plan::{combined_loads, plan_rebalance, LoadDegree, Thresholds};
use super::{AffinityReport, FailureLog, SplitMix, WorkerMove};
use crate::os::affinity::{set_own_thread_affinity, thread_affinity};
use crate::os::cpu::{LoadSampler, LoadSnapshot};
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

/// The state of `gc-affinity dynamic` for one heap.
pub(super) struct DynamicBalancer {
    /// Busy fractions of the CPUs; without it only our own GC threads count as load.
    pub sampler: Option<LoadSampler>,
    pub thresholds: Thresholds,
    pub rng: SplitMix,
    /// Workers this balancer pinned to one CPU (tid → CPU).
    pinned: Mutex<HashMap<i32, u32>>,
}

impl DynamicBalancer {
    pub fn new(sampler: Option<LoadSampler>, seed: u64) -> Self {
        Self {
            sampler,
            thresholds: Thresholds::default(),
            rng: SplitMix::new(seed),
            pinned: Mutex::default(),
        }
    }

    /// The sampler's latest busy fractions, if any (never waits for a window).
    pub fn latest_busy(&self) -> Option<Arc<LoadSnapshot>> {
        self.sampler.as_ref().and_then(LoadSampler::latest)
    }

    fn pinned(&self) -> MutexGuard<'_, HashMap<i32, u32>> {
        self.pinned.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Decide and apply the moves of the first `active` workers over the `allowed` CPUs.
    /// `tids[w]` is worker `w`'s kernel thread id (0: not started), `last_cpus[w]` where it last
    /// ran; a worker this balancer pinned counts on its pin instead.
    pub fn rebalance(
        &self,
        allowed: &[u32],
        failures: &FailureLog,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
        busy: Option<&LoadSnapshot>,
    ) -> AffinityReport {
        self.rebalance_from(allowed, failures, tids, last_cpus, active, busy, true)
    }

    /// [`DynamicBalancer::rebalance`]; with `use_pins` false the CPUs given are taken as they
    /// are (the caller found where each worker will wake, e.g. with [`wake_cpu`], which also
    /// sees a mask someone else set since our pin).
    #[allow(clippy::too_many_arguments)]
    pub fn rebalance_from(
        &self,
        allowed: &[u32],
        failures: &FailureLog,
        tids: &[i32],
        last_cpus: &[Option<u32>],
        active: usize,
        busy: Option<&LoadSnapshot>,
        use_pins: bool,
    ) -> AffinityReport {
        let start = Instant::now();
        let active = active.min(tids.len()).min(last_cpus.len());
        let tids = &tids[..active];
        let worker_cpus: Vec<Option<u32>> = {
            let pinned = self.pinned();
            tids.iter()
                .zip(last_cpus)
                .map(|(&tid, &last)| match tid {
                    // Not started yet: nowhere to count it.
                    ..=0 => None,
                    _ if !use_pins => last,
                    _ => pinned.get(&tid).copied().or(last),
                })
                .collect()
        };
        let loads = combined_loads(allowed, busy, &worker_cpus);
        let plan = plan_rebalance(allowed, &loads, &worker_cpus, self.thresholds, &mut |n| {
            self.rng.below(n)
        });
        let mut report = AffinityReport {
            average_load: plan.average,
            high_cpus: plan.cpus_with(allowed, LoadDegree::High),
            low_cpus: plan.cpus_with(allowed, LoadDegree::Low),
            unknown_cpu_workers: (0..active).filter(|&w| worker_cpus[w].is_none()).collect(),
            load_age_ms: busy.map(|s| s.age().as_secs_f64() * 1e3),
            ..AffinityReport::default()
        };
        for m in &plan.moves {
            let tid = tids[m.worker];
            // The pool's own worker: no `/proc` check inside the pause.
            match set_own_thread_affinity(tid, &[m.to]) {
                Ok(()) => {
                    self.pinned().insert(tid, m.to);
                    report.moves.push(WorkerMove {
                        worker: m.worker,
                        tid,
                        from: m.from,
                        to: m.to,
                    })
                }
                Err(e) => report
                    .failures
                    .push(failures.record(m.worker, tid, m.to, &e)),
            }
        }
        report.decide_us = start.elapsed().as_secs_f64() * 1e6;
        report
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
