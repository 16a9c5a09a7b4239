//! Hand-worked cases for the Linux 4.9 model. Times are in ns; `MS` is one millisecond. On one
//! CPU the tunables are unscaled (latency 6 ms, min granularity 0.75 ms, wake-up granularity
//! 1 ms); on 2 CPUs they are doubled; from 8 CPUs up, ×4.

use super::*;
use crate::machine::{CpuSet, Machine};

fn machine(cpus: &str, smt: &str, nodes: &str) -> Machine {
    Machine::from_flags(None, Some(cpus), Some(smt), Some(nodes)).unwrap()
}

fn spec(policy: Policy, affinity: CpuSet, cpu: CpuId, sleeping: bool) -> TaskSpec {
    TaskSpec {
        policy,
        affinity,
        placement: Placement::On(cpu),
        sleeping,
    }
}

const NICE0: Policy = Policy::Normal { nice: 0 };

/// A small executor: reschedules every CPU that asks, and logs (time, cpu, picked task).
struct Driver {
    model: Linux49,
    now: Nanos,
    log: Vec<(Nanos, CpuId, Option<TaskId>)>,
}

impl Driver {
    fn new(machine: Machine) -> Driver {
        Driver {
            model: Linux49::new(machine),
            now: 0,
            log: Vec::new(),
        }
    }

    fn task(&mut self, policy: Policy, cpu: CpuId, sleeping: bool) -> TaskId {
        let all = self.model.machine().all_cpus();
        self.model
            .create(spec(policy, all, cpu, sleeping), self.now)
            .unwrap()
    }

    fn settle(&mut self) {
        loop {
            let cpus = self.model.cpus_needing_resched();
            if cpus.is_empty() {
                return;
            }
            for cpu in cpus {
                let picked = self.model.pick_next(cpu, self.now);
                self.log.push((self.now, cpu, picked));
            }
        }
    }

    /// Runs timers and reschedules up to `end`.
    fn run_until(&mut self, end: Nanos) {
        self.settle();
        while let Some(t) = self.model.next_timer() {
            if t > end {
                break;
            }
            self.now = t;
            self.model.run_timers(t);
            self.settle();
        }
        self.now = end;
        self.model.run_timers(end);
        self.settle();
    }

    fn cpu_of(&self, task: TaskId) -> CpuId {
        self.model.task_state(task).1
    }
}

#[test]
fn tunables_scale_with_log2_of_cpus_capped_at_8() {
    let t1 = Tunables::linux49(1);
    assert_eq!(
        (t1.latency, t1.min_granularity, t1.wakeup_granularity),
        (6 * MS, 750_000, MS)
    );
    let t2 = Tunables::linux49(2);
    assert_eq!(t2.latency, 12 * MS);
    let t20 = Tunables::linux49(20);
    assert_eq!(
        (t20.latency, t20.min_granularity, t20.wakeup_granularity),
        (24 * MS, 3 * MS, 4 * MS)
    );
    assert_eq!(Tunables::linux49(48), t20);
}

/// Nice 0 (weight 1024) and nice 5 (weight 335) on one CPU, both created at t = 0.
/// A: vruntime = 0 + vslice(6 ms alone) = 6 000 000.
/// B: slice = 6 ms × 335/1359 = 1 479 028; vslice = 1 479 028 × 1024/335 = 4 520 969.
/// B runs first; at the 4 ms tick it has exceeded its 1.48 ms slice: vruntime
/// 4 520 969 + 4 ms × 1024/335 = 16 747 834. A runs from 4 ms; at 8 ms it has run 4 ms < its
/// 4.52 ms slice and is behind B; at 12 ms it has run 8 ms, is preempted with vruntime 14 ms,
/// and is still leftmost, so A runs again; at 20 ms (vruntime 22 ms) B runs.
#[test]
fn two_tasks_of_different_nice_run_in_vruntime_order() {
    let mut d = Driver::new(machine("1", "off", "1"));
    let a = d.task(NICE0, 0, false);
    let b = d.task(Policy::Normal { nice: 5 }, 0, false);
    assert_eq!(d.model.vruntime(a), 6_000_000);
    assert_eq!(d.model.vruntime(b), 4_520_969);
    d.run_until(20 * MS);
    assert_eq!(d.model.vruntime(b), 16_747_834);
    assert_eq!(
        d.log,
        vec![
            (0, 0, Some(b)),
            (4 * MS, 0, Some(a)),
            (12 * MS, 0, Some(a)),
            (20 * MS, 0, Some(b)),
        ]
    );
}

/// Three tasks of nice −5, 0, 5 (weights 3121, 1024, 335) created at t = 0 on one CPU, in that
/// order. Start vruntimes (one vslice after min_vruntime 0, the queue growing):
/// T1 = 6 ms × 1024/3121 = 1 968 599; T2: slice 6 ms × 1024/4145 = 1 482 267 (nice 0: vslice =
/// slice); T3: slice 6 ms × 335/4480 = 448 660, vslice 1 371 426. So T3, T2, T1 run in that order,
/// each past its slice at the next tick. T1's slice is 6 ms × 3121/4480 = 4.18 ms: at 12 ms it has
/// run 4 ms (vruntime 3 280 998, behind T2's 5 482 267), at 16 ms 8 ms: preempted with vruntime
/// 4 593 397, still leftmost, it runs again; at 24 ms (7 218 195) T2 runs.
/// Over 10 s they share the CPU by weight: 69.7 %, 22.9 %, 7.5 %.
#[test]
fn three_tasks_run_in_vruntime_order_and_share_the_cpu_by_weight() {
    let mut d = Driver::new(machine("1", "off", "1"));
    let tasks: Vec<TaskId> = [-5, 0, 5]
        .iter()
        .map(|&nice| d.task(Policy::Normal { nice }, 0, false))
        .collect();
    let (t1, t2, t3) = (tasks[0], tasks[1], tasks[2]);
    let start: Vec<i64> = tasks.iter().map(|&t| d.model.vruntime(t)).collect();
    assert_eq!(start, vec![1_968_599, 1_482_267, 1_371_426]);
    d.run_until(24 * MS);
    assert_eq!(
        d.log,
        vec![
            (0, 0, Some(t3)),
            (4 * MS, 0, Some(t2)),
            (8 * MS, 0, Some(t1)),
            (16 * MS, 0, Some(t1)),
            (24 * MS, 0, Some(t2)),
        ]
    );
    d.run_until(10_000 * MS);
    let total: u64 = tasks.iter().map(|&t| d.model.task_stats(t).runtime).sum();
    assert_eq!(total, 10_000 * MS);
    for (&t, weight) in tasks.iter().zip([3121.0, 1024.0, 335.0]) {
        let share = d.model.task_stats(t).runtime as f64 / total as f64;
        let expected = weight / 4480.0;
        assert!(
            (share - expected).abs() < 0.01,
            "task {t:?}: share {share:.4}, expected {expected:.4}"
        );
    }
}

/// One CPU. A runs alone from t = 0 (vruntime 6 ms after the start debit), so at 100 ms its
/// vruntime and min_vruntime are 106 ms. S, asleep since t = 0 with vruntime 0, wakes: it is
/// placed at 106 − 6/2 = 103 ms, 3 ms behind A > 1 ms granularity: it preempts. It runs 2.5 ms
/// and sleeps again with vruntime 105.5 ms. Woken again after A ran 0.3 ms more (A at
/// 106.3 ms), it keeps its own 105.5 ms (above 106.3 − 3): 0.8 ms behind, no preemption; woken
/// after 0.7 ms instead (A at 106.7 ms), 1.2 ms behind: it preempts.
#[test]
fn woken_sleeper_is_placed_half_a_latency_back_and_preempts_beyond_the_granularity() {
    fn scenario(second_wake_after: Nanos) -> (i64, bool) {
        let mut d = Driver::new(machine("1", "off", "1"));
        let s = d.task(NICE0, 0, true);
        let a = d.task(NICE0, 0, false);
        d.run_until(100 * MS);
        assert_eq!(d.model.current(0), Some(a));
        assert_eq!(d.model.vruntime(a), 106 * MS as i64);
        assert_eq!(d.model.min_vruntime(0), 106 * MS as i64);
        d.model.wake(s, None, d.now);
        assert_eq!(d.model.vruntime(s), 103 * MS as i64);
        assert!(d.model.needs_resched(0, d.now), "3 ms behind preempts");
        d.settle();
        assert_eq!(d.model.current(0), Some(s));
        d.now += 2_500_000;
        d.model.block(0, d.now);
        d.settle();
        assert_eq!(d.model.current(0), Some(a));
        assert_eq!(d.model.vruntime(s), 105_500_000);
        d.now += second_wake_after;
        d.model.wake(s, None, d.now);
        (d.model.vruntime(s), d.model.needs_resched(0, d.now))
    }
    assert_eq!(scenario(300_000), (105_500_000, false));
    assert_eq!(scenario(700_000), (105_500_000, true));
}

/// SMT machine of 4 cores (CPUs c and c+4 are siblings). With CPUs 0 and 5 busy, a task whose
/// previous CPU is 0 wakes on CPU 2, the first fully idle core scanning from 0 — not on CPU 1,
/// the first idle CPU, whose sibling 5 is busy. With every core partly busy, it takes the first
/// idle CPU of the LLC scanning from 0: CPU 4.
#[test]
fn wake_prefers_an_idle_core_then_an_idle_cpu_of_the_llc() {
    let mut d = Driver::new(machine("8", "on", "1"));
    for cpu in [0, 5] {
        d.task(NICE0, cpu, false);
    }
    let w = d.task(NICE0, 0, true);
    d.settle();
    assert_eq!(d.model.wake(w, None, 0), 2);

    let mut d = Driver::new(machine("8", "on", "1"));
    for cpu in [0, 1, 2, 3] {
        d.task(NICE0, cpu, false);
    }
    let w = d.task(NICE0, 0, true);
    d.settle();
    assert_eq!(d.model.wake(w, None, 0), 4);
}

/// Two nodes of two CPUs ({0,1}, {2,3}); the waker runs on CPU 2 (load 1024), CPU 1 is busy and
/// CPU 3 idle. With two tasks on the wakee's previous CPU 0 (load 2048), wake_affine holds:
/// 100 × (1024 + 1024) ≤ (100 + 25/2) × 2048, so the target is the waker's CPU and the wakee
/// lands on its idle LLC sibling, CPU 3. With one task on CPU 0 (load 1024) it does not hold
/// (204 800 > 114 688): the target stays CPU 0, whose LLC has no idle CPU, so it queues there.
/// With two tasks on CPU 0 again but a waker that has switched among 8 wakees and a wakee that
/// has switched among 2 (`wake_wide`: 2 ≥ LLC size 2 and 8 + 1 ≥ 2 × 2), affine wake-up is off
/// and the wakee stays on CPU 0.
#[test]
fn wake_affine_pulls_the_wakee_towards_the_waker_only_when_its_old_cpu_is_loaded() {
    for (tasks_on_prev, flips, expected) in [(2, None, 3), (1, None, 0), (2, Some((8, 2)), 0)] {
        let mut d = Driver::new(machine("4", "off", "2"));
        for _ in 0..tasks_on_prev {
            d.task(NICE0, 0, false);
        }
        d.task(NICE0, 1, false);
        let waker = d.task(NICE0, 2, false);
        let w = d.task(NICE0, 0, true);
        if let Some((waker_flips, wakee_flips)) = flips {
            d.model.set_wakee_flips(waker, waker_flips);
            d.model.set_wakee_flips(w, wakee_flips);
        }
        d.settle();
        assert_eq!(
            d.model.wake(w, Some(2), 0),
            expected,
            "{tasks_on_prev} on prev"
        );
        assert_eq!(d.model.task_stats(w).migrations, u64::from(expected != 0));
    }
}

/// Two nice-0 tasks on one CPU: B (vruntime 3 ms) runs before A (6 ms). B yields after 0.1 ms
/// (vruntime 3.1 ms): A is 2.9 ms ahead, beyond the 1 ms granularity, so B runs again. B yields
/// at 2.5 ms (vruntime 5.5 ms, A 0.5 ms ahead): A runs. When A blocks, B runs. Alone, a
/// yielding task keeps the CPU.
#[test]
fn sched_yield_lets_a_near_task_run_once_and_keeps_the_yielder_runnable() {
    let mut d = Driver::new(machine("1", "off", "1"));
    let a = d.task(NICE0, 0, false);
    let b = d.task(NICE0, 0, false);
    assert_eq!(d.model.vruntime(b), 3 * MS as i64);
    d.settle();
    assert_eq!(d.model.current(0), Some(b));
    d.now = 100_000;
    d.model.yield_now(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(b), "A is too far ahead");
    d.now = 2_500_000;
    d.model.yield_now(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(a));
    assert_eq!(d.model.task_state(b).0, TaskState::Queued);
    d.now = 3 * MS;
    d.model.block(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(b));
    d.model.yield_now(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(b), "alone, yield keeps the CPU");
}

/// One CPU: a CFS task runs; a FIFO task woken preempts it at once. A second FIFO task of the
/// same priority woken meanwhile waits: the first runs through ticks until it blocks (or
/// yields, which puts it behind the second).
#[test]
fn fifo_preempts_cfs_on_wake_and_runs_until_it_blocks_among_equals() {
    let mut d = Driver::new(machine("1", "off", "1"));
    let fifo = Policy::Fifo { priority: 10 };
    let c = d.task(NICE0, 0, false);
    let f = d.task(fifo, 0, true);
    let g = d.task(fifo, 0, true);
    d.run_until(10 * MS);
    assert_eq!(d.model.current(0), Some(c));
    d.model.wake(f, None, d.now);
    assert!(d.model.needs_resched(0, d.now));
    d.settle();
    assert_eq!(d.model.current(0), Some(f));
    d.model.wake(g, None, d.now);
    assert!(
        !d.model.needs_resched(0, d.now),
        "equal priority does not preempt"
    );
    d.run_until(500 * MS);
    assert_eq!(d.model.current(0), Some(f));
    assert_eq!(d.model.task_stats(f).runtime, 490 * MS);
    d.model.yield_now(0, d.now);
    d.settle();
    assert_eq!(
        d.model.current(0),
        Some(g),
        "yield goes to the tail of its priority"
    );
    d.model.block(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(f));
    d.model.block(0, d.now);
    d.settle();
    assert_eq!(d.model.current(0), Some(c));
}

/// Two CPUs: F1 (FIFO 10) runs on CPU 0, C (CFS) on CPU 1. F2 (FIFO 10, last on CPU 0) wakes:
/// CPU 0 runs an equal RT priority, so `find_lowest_rq` sends it to CPU 1, where it preempts C.
/// F3 (FIFO 10) created on CPU 0 waits behind F1; when F2 blocks, CPU 1 pulls F3 rather than
/// run C. A CFS task queued behind C that becomes FIFO preempts C at once.
#[test]
fn fifo_wakes_on_the_lowest_priority_cpu_and_is_pulled_by_a_cpu_dropping_to_cfs() {
    let fifo = Policy::Fifo { priority: 10 };
    let mut d = Driver::new(machine("2", "off", "1"));
    let f1 = d.task(fifo, 0, false);
    let c = d.task(NICE0, 1, false);
    let f2 = d.task(fifo, 0, true);
    d.settle();
    assert_eq!(d.model.wake(f2, None, 0), 1);
    d.settle();
    assert_eq!(
        (d.model.current(0), d.model.current(1)),
        (Some(f1), Some(f2))
    );
    let f3 = d.task(fifo, 0, false);
    d.settle();
    assert_eq!(d.model.task_state(f3), (TaskState::Queued, 0));
    d.now = MS;
    d.model.block(1, d.now);
    d.settle();
    assert_eq!(d.model.current(1), Some(f3));
    assert_eq!(d.model.task_state(c), (TaskState::Queued, 1));

    let mut d = Driver::new(machine("1", "off", "1"));
    let c = d.task(NICE0, 0, false);
    let other = d.task(NICE0, 0, false);
    d.settle();
    let queued = if d.model.current(0) == Some(c) {
        other
    } else {
        c
    };
    d.model.set_policy(queued, fifo, 0).unwrap();
    assert!(d.model.needs_resched(0, 0));
    d.settle();
    assert_eq!(d.model.current(0), Some(queued));
    d.model.set_policy(queued, NICE0, 0).unwrap();
    assert!(
        d.model.needs_resched(0, 0),
        "leaving the RT class reschedules"
    );
}

/// A FIFO task that never sleeps shares its CPU with a CFS task for 10 s: throttled once its RT
/// time passes 950 ms in a period (detected at a tick), released when the period timer pays
/// back 950 ms, it gets 95 % of the CPU (±0.5 %) and the CFS task the rest.
#[test]
fn rt_throttle_caps_fifo_at_95_percent() {
    let mut d = Driver::new(machine("1", "off", "1"));
    let c = d.task(NICE0, 0, false);
    let f = d.task(Policy::Fifo { priority: 50 }, 0, false);
    d.run_until(10_000 * MS);
    let (rt, cfs) = (d.model.task_stats(f).runtime, d.model.task_stats(c).runtime);
    assert_eq!(rt + cfs, 10_000 * MS);
    let share = rt as f64 / 10_000.0 / MS as f64;
    assert!((share - 0.95).abs() <= 0.005, "FIFO share {share}");
    d.run_until(10_952 * MS);
    assert!(d.model.rt_throttled(0));
    // The first period: throttled at the 952 ms tick, released at 1000 ms.
    assert!(d
        .log
        .iter()
        .any(|&(t, _, task)| t == 952 * MS && task == Some(c)));
    assert!(d
        .log
        .iter()
        .any(|&(t, _, task)| t == 1000 * MS && task == Some(f)));
}

/// Two CPUs. CPU 0 runs A with B queued (never run, so not cache hot); CPU 1 runs D. When D
/// blocks, CPU 1's new-idle balance pulls B. With only A (running) on CPU 0, CPU 1 goes idle
/// and A stays.
#[test]
fn new_idle_balance_pulls_a_queued_task_never_a_running_one() {
    let mut d = Driver::new(machine("2", "off", "1"));
    let a = d.task(NICE0, 0, false);
    let b = d.task(NICE0, 0, false);
    let dd = d.task(NICE0, 1, false);
    d.settle();
    let queued = if d.model.current(0) == Some(a) { b } else { a };
    d.now = MS;
    d.model.block(1, d.now);
    assert_eq!(d.model.pick_next(1, d.now), Some(queued));
    assert_eq!(d.model.task_stats(queued).migrations, 1);
    assert_eq!(d.model.current(1), Some(queued));
    let _ = dd;

    let mut d = Driver::new(machine("2", "off", "1"));
    let a = d.task(NICE0, 0, false);
    d.task(NICE0, 1, false);
    d.settle();
    d.now = MS;
    d.model.block(1, d.now);
    assert_eq!(d.model.pick_next(1, d.now), None);
    assert_eq!(d.model.current(0), Some(a));
    assert_eq!(d.model.task_stats(a).migrations, 0);
}

/// Cache hotness (`task_hot`, 0.5 ms): two CPUs, D on CPU 1, B running on CPU 0. A wakes on
/// CPU 0 at 1 ms and preempts B (A placed at 13 − 6 = 7 ms, 6 ms behind B's 13 ms, beyond the
/// 2 ms granularity of 2 CPUs). When D blocks at 1.2 ms, B ran 0.2 ms ago: new-idle balance
/// leaves it (the MC domain has not failed more than `cache_nice_tries` = 1 times) and CPU 1
/// idles. At the 4 ms tick B is 3 ms cold and CPU 1's idle balance pulls it.
#[test]
fn cache_hot_tasks_are_left_by_new_idle_balance_and_pulled_once_cold() {
    let mut d = Driver::new(machine("2", "off", "1"));
    let b = d.task(NICE0, 0, false);
    let a = d.task(NICE0, 0, true);
    d.task(NICE0, 1, false);
    d.settle();
    d.now = MS;
    d.model.wake(a, None, d.now);
    assert_eq!(d.model.vruntime(a), 7 * MS as i64);
    d.settle();
    assert_eq!(d.model.current(0), Some(a));
    d.now = 1_200_000;
    d.model.block(1, d.now);
    assert_eq!(d.model.pick_next(1, d.now), None);
    assert_eq!(d.cpu_of(b), 0);
    d.run_until(4 * MS);
    assert_eq!(d.model.task_state(b), (TaskState::Running, 1));
}

/// 000's point: four threads asleep on CPU 0 of a 4-CPU machine (CPU 0 busy, the others idle)
/// stay there through 2 s of periodic balancing, because sleeping tasks carry no load. The same
/// threads runnable (with a fourth) are spread one per CPU by the idle CPUs' periodic balance.
#[test]
fn sleeping_tasks_are_invisible_to_periodic_balance() {
    let mut d = Driver::new(machine("4", "off", "1"));
    d.task(NICE0, 0, false);
    let sleepers: Vec<TaskId> = (0..4).map(|_| d.task(NICE0, 0, true)).collect();
    d.run_until(2000 * MS);
    assert_eq!(d.model.cpu_load(0), 1024, "the sleepers weigh nothing");
    for &t in &sleepers {
        assert_eq!(d.model.task_state(t), (TaskState::Sleeping, 0));
        assert_eq!(d.model.task_stats(t).migrations, 0);
    }

    let mut d = Driver::new(machine("4", "off", "1"));
    let runnable: Vec<TaskId> = (0..4).map(|_| d.task(NICE0, 0, false)).collect();
    d.run_until(100 * MS);
    let mut cpus: Vec<CpuId> = runnable.iter().map(|&t| d.cpu_of(t)).collect();
    cpus.sort();
    assert_eq!(cpus, vec![0, 1, 2, 3]);
}

/// Two CPUs, each busy with one task: balanced at the first tick (4 ms), so the busy CPU's MC
/// interval doubles from 128 to 256 ms and its next balance is at 260 ms. Two more tasks queued
/// on CPU 0 at 10 ms are not pulled by CPU 1 before 260 ms, and one is pulled at 260 ms.
#[test]
fn periodic_balance_waits_for_the_domain_interval() {
    let mut d = Driver::new(machine("2", "off", "1"));
    d.task(NICE0, 0, false);
    d.task(NICE0, 1, false);
    assert_eq!(d.model.balance_interval_ms(1, 0, false), 128);
    d.run_until(10 * MS);
    assert_eq!(d.model.balance_interval_ms(1, 0, false), 256);
    let extra: Vec<TaskId> = (0..2).map(|_| d.task(NICE0, 0, false)).collect();
    d.run_until(256 * MS);
    assert!(extra.iter().all(|&t| d.cpu_of(t) == 0));
    d.run_until(260 * MS);
    let moved = extra.iter().filter(|&&t| d.cpu_of(t) == 1).count();
    assert_eq!(moved, 1);
    assert_eq!(
        d.model.balance_interval_ms(1, 0, false),
        128,
        "a move resets it"
    );
}

/// 000 §2.5/§5.8's intervals on the Xeon with SMT: 64 ms between siblings, 128 ms in the socket,
/// 256 ms across sockets (busy CPU), 32× shorter on an idle CPU.
#[test]
fn balance_intervals_per_domain_follow_the_paper() {
    let model = Linux49::new(Machine::named("xeon-2x10", Some(true)).unwrap());
    let busy: Vec<u64> = (0..3)
        .map(|l| model.balance_interval_ms(5, l, false))
        .collect();
    assert_eq!(busy, vec![64, 128, 256]);
    let idle: Vec<u64> = (0..3)
        .map(|l| model.balance_interval_ms(5, l, true))
        .collect();
    assert_eq!(idle, vec![2, 4, 8]);
}

/// Affinity: a wakee pinned to CPU 3 wakes there though CPU 0 (the waker's) is idle; three tasks
/// pinned to CPU 0 are never moved to the idle CPUs by either balancer; narrowing a queued task's
/// mask moves it at once.
#[test]
fn affinity_is_respected_by_wake_placement_and_both_balancers() {
    let mut d = Driver::new(machine("4", "off", "1"));
    let pinned3 = d
        .model
        .create(spec(NICE0, CpuSet::single(3), 3, true), 0)
        .unwrap();
    assert_eq!(d.model.wake(pinned3, Some(0), 0), 3);

    let mut d = Driver::new(machine("4", "off", "1"));
    let pinned: Vec<TaskId> = (0..3)
        .map(|_| {
            d.model
                .create(spec(NICE0, CpuSet::single(0), 0, false), 0)
                .unwrap()
        })
        .collect();
    let other = d.task(NICE0, 1, false);
    d.run_until(10 * MS);
    d.model.block(1, d.now); // new-idle balance on CPU 1
    d.run_until(1000 * MS);
    assert!(pinned.iter().all(|&t| d.cpu_of(t) == 0));
    assert_eq!(d.model.task_state(other).0, TaskState::Sleeping);

    let queued = *pinned
        .iter()
        .find(|&&t| d.model.task_state(t).0 == TaskState::Queued)
        .unwrap();
    d.model
        .set_affinity(queued, CpuSet::single(2), d.now)
        .unwrap();
    assert_eq!(d.cpu_of(queued), 2);
    let err = d
        .model
        .set_affinity(queued, CpuSet::single(9), d.now)
        .unwrap_err();
    assert!(err.0.contains("allowed: a non-empty set of CPUs 0..4"));
}

#[test]
fn bad_policies_are_refused_with_what_is_allowed() {
    let mut model = Linux49::new(machine("2", "off", "1"));
    let all = model.machine().all_cpus();
    let err = model
        .create(spec(Policy::Normal { nice: 20 }, all, 0, false), 0)
        .unwrap_err();
    assert!(err.0.contains("allowed: -20 to 19"));
    let err = model
        .create(spec(Policy::Fifo { priority: 0 }, all, 0, false), 0)
        .unwrap_err();
    assert!(err.0.contains("allowed: 1 to 99"));
    let err = model
        .create(spec(NICE0, CpuSet::single(1), 0, false), 0)
        .unwrap_err();
    assert!(err.0.contains("not in the task's affinity"));
}

/// xorshift64*, for the random event streams below.
struct Rng(u64);

impl Rng {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % bound
    }
}

/// A random mix of wakes, blocks, yields, policy and affinity changes on an 8-CPU, 2-node SMT
/// machine; returns every decision (picks and wake CPUs) and checks the model's invariants.
fn random_run(seed: u64) -> Vec<(Nanos, CpuId, Option<TaskId>)> {
    let mut rng = Rng(seed.max(1));
    let mut d = Driver::new(machine("8", "on", "2"));
    let tasks: Vec<TaskId> = (0..12)
        .map(|i| {
            let policy = if i % 5 == 4 {
                Policy::Fifo { priority: 5 }
            } else {
                Policy::Normal {
                    nice: (i % 3) as i8 - 1,
                }
            };
            let cpu = rng.next(8) as usize;
            d.task(policy, cpu, i % 2 == 0)
        })
        .collect();
    for _ in 0..3000 {
        let end = d.now + rng.next(3 * MS);
        d.run_until(end);
        let cpu = rng.next(8) as usize;
        match rng.next(6) {
            0 | 1 => {
                let t = tasks[rng.next(12) as usize];
                let placed = d.model.wake(t, Some(cpu), d.now);
                d.log.push((d.now, placed, Some(t)));
            }
            2 => d.model.block(cpu, d.now),
            3 => d.model.yield_now(cpu, d.now),
            4 => {
                let t = tasks[rng.next(12) as usize];
                let mut mask = CpuSet::empty();
                mask.insert(rng.next(8) as usize);
                mask.insert(rng.next(8) as usize);
                d.model.set_affinity(t, mask, d.now).unwrap();
            }
            _ => {
                let t = tasks[rng.next(12) as usize];
                d.model
                    .set_policy(t, Policy::Normal { nice: 0 }, d.now)
                    .unwrap();
            }
        }
        d.settle();
        d.model.check_invariants();
    }
    d.log
}

#[test]
fn same_events_give_the_same_decisions() {
    let first = random_run(7);
    assert!(first.len() > 1000);
    assert_eq!(first, random_run(7));
    assert_ne!(first, random_run(8));
}

/// 4.9's `idle_balance` gate: a CPU whose idle periods average less than the migration cost
/// (0.5 ms) goes idle without pulling. CPU 1 runs D for 10 µs out of every 110 µs twelve times,
/// which brings its `avg_idle` from 1 ms down to 100 + 900 × (7/8)^11 ≈ 330 µs; then B wakes
/// queued behind A on CPU 0, D blocks, and CPU 1 idles with B left queued. The EEVDF model
/// (6.x gates on the balancing's own cost, microseconds) pulls it.
#[test]
fn new_idle_balance_is_skipped_on_a_cpu_with_short_idle_periods_under_4_9() {
    fn run<M: SchedulerModel>(mut m: M) -> (M, TaskId) {
        let all = m.machine().all_cpus();
        let mk = |m: &mut M, cpu, sleeping| m.create(spec(NICE0, all, cpu, sleeping), 0).unwrap();
        let a = mk(&mut m, 0, false);
        let b = mk(&mut m, 0, true);
        let d = mk(&mut m, 1, true);
        m.pick_next(0, 0);
        let mut now = 0;
        for _ in 0..12 {
            now += 100_000;
            assert_eq!(m.wake(d, None, now), 1);
            m.pick_next(1, now);
            now += 10_000;
            m.block(1, now);
            assert_eq!(m.pick_next(1, now), None);
        }
        now += 100_000;
        assert_eq!(m.wake(d, None, now), 1);
        m.pick_next(1, now);
        assert_eq!(m.wake(b, None, now), 0, "no idle CPU: B queues behind A");
        now += 10_000;
        m.block(1, now);
        m.pick_next(1, now);
        assert_eq!(m.current(0), Some(a));
        (m, b)
    }
    let (cfs, b) = run(Linux49::new(machine("2", "off", "1")));
    assert!(cfs.avg_idle(1) < 500_000, "{}", cfs.avg_idle(1));
    assert_eq!(cfs.task_state(b), (TaskState::Queued, 0));
    assert_eq!(cfs.current(1), None);
    let (eevdf, b) = run(Eevdf::new(machine("2", "off", "1")));
    assert_eq!(eevdf.task_state(b), (TaskState::Running, 1));
}

/// 4.9's `select_idle_cpu` gate: four CPUs in one LLC, W running on CPU 0 wakes S, whose
/// previous CPU 1 is busy (as is CPU 2); CPU 3 is idle. wake_affine does not hold (both CPUs
/// weigh 1024), so the target is CPU 1. With CPU 0's `avg_idle` at 1 ms (1 ms / 512 = 1953 ns,
/// above an average scan of 100 ns) the LLC is scanned and S lands on idle CPU 3; the scan
/// examined CPUs 2 and 3 (40 ns), and the average moves an eighth of the way: 100 − 60/8 = 93.
/// With `avg_idle` at 20 µs (39 ns < 100 ns) there is no scan and S queues on CPU 1.
#[test]
fn a_waker_that_idles_briefly_does_not_scan_for_an_idle_cpu_under_4_9() {
    for (avg_idle, lands_on) in [(1_000_000, 3), (20_000, 1)] {
        let mut d = Driver::new(machine("4", "off", "1"));
        d.task(NICE0, 0, false);
        d.task(NICE0, 1, false);
        d.task(NICE0, 2, false);
        let s = d.task(NICE0, 1, true);
        d.settle();
        d.model.set_idle_averages(0, avg_idle, 100);
        assert_eq!(d.model.wake(s, Some(0), 0), lands_on, "avg_idle {avg_idle}");
        let expected_cost = if lands_on == 3 { 93 } else { 100 };
        assert_eq!(d.model.avg_scan_cost(0), expected_cost);
    }
}
