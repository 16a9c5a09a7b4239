//! Hand-worked cases for the EEVDF model. Times are in ns; `MS` is one millisecond. On one CPU
//! the base slice is 0.75 ms (vslice = 0.75 ms × 1024 / weight) and the tick 4 ms; nice −5 weighs
//! 3121, nice 0 1024, nice 10 110, nice 19 15.

use super::*;
use crate::machine::Machine;

fn one_cpu() -> Machine {
    Machine::from_flags(None, Some("1"), Some("off"), Some("1")).unwrap()
}

fn nice(n: i8) -> Policy {
    Policy::Normal { nice: n }
}

fn create(model: &mut Eevdf, policy: Policy, sleeping: bool, now: Nanos) -> TaskId {
    let spec = TaskSpec {
        policy,
        affinity: model.machine().all_cpus(),
        placement: Placement::On(0),
        sleeping,
    };
    model.create(spec, now).unwrap()
}

/// Reschedules every CPU that asks; returns what CPU 0 picked last.
fn settle(model: &mut Eevdf, now: Nanos) -> Option<TaskId> {
    let mut picked = model.current(0);
    while !model.cpus_needing_resched().is_empty() {
        for cpu in model.cpus_needing_resched() {
            let t = model.pick_next(cpu, now);
            if cpu == 0 {
                picked = t;
            }
        }
    }
    model.check_invariants();
    picked
}

#[test]
fn base_slice_scales_with_log2_of_cpus_capped_at_8() {
    for (cpus, slice) in [(1, 750_000), (2, 1_500_000), (8, 3 * MS), (20, 3 * MS)] {
        let machine =
            Machine::from_flags(None, Some(&cpus.to_string()), Some("off"), Some("1")).unwrap();
        assert_eq!(Eevdf::new(machine).base_slice(), slice, "{cpus} CPUs");
    }
}

/// X (nice −5), Y (nice 10), Z (nice 19) start at vruntime 0 with half a vslice to their first
/// deadline: 123037, 3490909, 25600000. X runs first and, at the 4 ms tick, has vruntime
/// 4 ms × 1024/3121 = 1312399 and a new deadline 1312399 + 246074 = 1558473, the earliest of
/// the three, but the weighted mean is 3121 × 1312399 / 3246 = 1261859, so X is not eligible:
/// Y (eligible, deadline 3490909 < Z's) runs.
#[test]
fn earliest_eligible_deadline_is_picked_with_three_nice_levels() {
    let mut m = Eevdf::new(one_cpu());
    let x = create(&mut m, nice(-5), false, 0);
    let y = create(&mut m, nice(10), false, 0);
    let z = create(&mut m, nice(19), false, 0);
    assert_eq!(
        [m.deadline(x), m.deadline(y), m.deadline(z)],
        [123_037, 3_490_909, 25_600_000]
    );
    assert!([x, y, z]
        .iter()
        .all(|&t| m.eligible(t) && m.vruntime(t) == 0));
    assert_eq!(settle(&mut m, 0), Some(x));

    m.run_timers(4 * MS);
    assert!(m.needs_resched(0, 4 * MS), "X's slice ended at the tick");
    assert_eq!((m.vruntime(x), m.deadline(x)), (1_312_399, 1_558_473));
    assert_eq!(m.avg_vruntime(0), 1_261_859);
    assert!(!m.eligible(x) && m.eligible(y) && m.eligible(z));
    assert!(m.deadline(x) < m.deadline(y));
    assert_eq!(settle(&mut m, 4 * MS), Some(y));
}

/// A and B (nice 0) start at 0. A runs to the 4 ms tick (vruntime 4 ms), B runs 0.5 ms and
/// blocks: its lag is the mean (4 + 0.5)/2 = 2.25 ms minus 0.5 ms = 1.75 ms. A runs alone to
/// 10 ms (vruntime 9.5 ms). B wakes: its lag scaled by (1024 + 1024)/1024 is 3.5 ms, so it is
/// placed at 9.5 − 3.5 = 6 ms, which is exactly 1.75 ms behind the new mean (9.5 + 6)/2 = 7.75
/// ms, with deadline 6.75 ms. (4.9's sleeper credit would have placed it at 9.5 − 3 = 6.5 ms.)
/// A is now ineligible, so B preempts it.
#[test]
fn a_sleeper_keeps_its_lag_and_an_ineligible_current_task_is_preempted() {
    let mut m = Eevdf::new(one_cpu());
    let a = create(&mut m, nice(0), false, 0);
    let b = create(&mut m, nice(0), false, 0);
    assert_eq!(settle(&mut m, 0), Some(a));
    m.run_timers(4 * MS);
    assert_eq!(settle(&mut m, 4 * MS), Some(b));
    m.block(0, 4_500_000);
    assert_eq!(m.vlag(b), 1_750_000);
    assert_eq!(settle(&mut m, 4_500_000), Some(a));

    m.wake(b, None, 10 * MS);
    assert_eq!(m.vruntime(a), 9_500_000);
    assert_eq!((m.vruntime(b), m.deadline(b)), (6 * MS as i64, 6_750_000));
    assert_eq!(m.avg_vruntime(0) - m.vruntime(b), 1_750_000);
    assert!(!m.eligible(a) && m.eligible(b));
    assert!(m.needs_resched(0, 10 * MS));
    assert_eq!(settle(&mut m, 10 * MS), Some(b));
}

/// `RUN_TO_PARITY`: A (nice 0, deadline 375000) runs; at 0.1 ms B (nice −5) wakes with no lag
/// at A's vruntime 100000 and deadline 100000 + 246074 = 346074, earlier than A's. A is still
/// eligible and has its first deadline since it was picked, so B waits; at the 4 ms tick A is
/// past its deadline, gets a new one, and B runs.
#[test]
fn an_eligible_current_task_runs_to_its_deadline_before_a_wakee_preempts() {
    let mut m = Eevdf::new(one_cpu());
    let a = create(&mut m, nice(0), false, 0);
    let b = create(&mut m, nice(-5), true, 0);
    assert_eq!(settle(&mut m, 0), Some(a));
    m.wake(b, None, 100_000);
    assert_eq!((m.vruntime(b), m.deadline(b)), (100_000, 346_074));
    assert!(m.eligible(a) && m.deadline(b) < m.deadline(a));
    assert!(!m.needs_resched(0, 100_000), "B must not preempt A yet");
    m.run_timers(4 * MS);
    assert!(m.needs_resched(0, 4 * MS));
    assert_eq!(settle(&mut m, 4 * MS), Some(b));
}

/// The other half of the rule: A (nice 0) runs alone and at the 4 ms tick gets a new deadline
/// 4 + 0.75 = 4.75 ms without a reschedule (nothing else is runnable), so it is no longer
/// protected. B (nice −5) wakes at 4.1 ms at A's vruntime with deadline 4100000 + 246074 =
/// 4346074: both are eligible, B's deadline is earlier, and B preempts at once.
#[test]
fn a_wakee_with_an_earlier_deadline_preempts_a_task_past_its_first_slice() {
    let mut m = Eevdf::new(one_cpu());
    let a = create(&mut m, nice(0), false, 0);
    let b = create(&mut m, nice(-5), true, 0);
    assert_eq!(settle(&mut m, 0), Some(a));
    m.run_timers(4 * MS);
    assert!(!m.needs_resched(0, 4 * MS), "A is alone");
    assert_eq!(m.deadline(a), 4_750_000);
    m.wake(b, None, 4_100_000);
    assert_eq!((m.vruntime(b), m.deadline(b)), (4_100_000, 4_346_074));
    assert!(m.eligible(a) && m.eligible(b));
    assert!(m.needs_resched(0, 4_100_000));
    assert_eq!(settle(&mut m, 4_100_000), Some(b));
}

/// 6.6's `yield_task_fair` pushes the yielder's deadline one vslice later and leaves its
/// vruntime alone. A (nice −5, deadline 123037) and B (nice 0, deadline 375000) at vruntime 0:
/// A yields to deadline 369111, still the earliest, and runs again; its second yield
/// (615185) hands the CPU to B. A stays eligible throughout. Alone, a yield changes nothing.
#[test]
fn yield_pushes_the_deadline_back_one_slice() {
    let mut m = Eevdf::new(one_cpu());
    let a = create(&mut m, nice(-5), false, 0);
    let b = create(&mut m, nice(0), false, 0);
    assert_eq!(settle(&mut m, 0), Some(a));
    m.yield_now(0, 0);
    assert_eq!(m.deadline(a), 369_111);
    assert_eq!(settle(&mut m, 0), Some(a));
    m.yield_now(0, 0);
    assert_eq!(m.deadline(a), 615_185);
    assert!(m.eligible(a) && m.vruntime(a) == 0);
    assert_eq!(settle(&mut m, 0), Some(b));

    let mut alone = Eevdf::new(one_cpu());
    let c = create(&mut alone, nice(0), false, 0);
    assert_eq!(settle(&mut alone, 0), Some(c));
    alone.yield_now(0, 0);
    assert_eq!(alone.deadline(c), 375_000);
    assert_eq!(settle(&mut alone, 0), Some(c));
}

/// A pseudo-random mix of wakes, blocks, yields and timers on 4 CPUs (two LLCs), run twice:
/// the same decisions, with consistent queues throughout.
#[test]
fn same_calls_same_decisions() {
    fn run() -> Vec<(Nanos, CpuId, Option<TaskId>)> {
        let machine = Machine::from_flags(None, Some("4"), Some("off"), Some("2")).unwrap();
        let mut m = Eevdf::new(machine);
        let tasks: Vec<TaskId> = (0..10)
            .map(|i| {
                let spec = TaskSpec {
                    policy: nice(i as i8 % 5 - 2),
                    affinity: m.machine().all_cpus(),
                    placement: Placement::Fork { parent_cpu: 0 },
                    sleeping: i % 3 == 0,
                };
                m.create(spec, 0).unwrap()
            })
            .collect();
        let mut log = Vec::new();
        let mut state = 12345u64;
        let mut now = 0;
        for _ in 0..2000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let r = state >> 33;
            now += r % 700_000;
            let cpu = (r % 4) as CpuId;
            match r % 4 {
                0 => {
                    let t = tasks[(r / 4) as usize % tasks.len()];
                    m.wake(t, Some(cpu), now);
                }
                1 => m.block(cpu, now),
                2 => m.yield_now(cpu, now),
                _ => m.run_timers(now),
            }
            for c in m.cpus_needing_resched() {
                log.push((now, c, m.pick_next(c, now)));
            }
            m.check_invariants();
        }
        assert!(log.iter().filter(|e| e.2.is_some()).count() > 100);
        log
    }
    assert_eq!(run(), run());
}

/// SIS_UTIL: on one LLC of 4 CPUs with CPUs 0–2 always busy, the utilization climbs to 1024 on
/// those and stays 0 on CPU 3, so periodic balancing sets `nr_idle_scan` to
/// 4 × (1 − 768² × 117² / (10 000 × 1024²)) = 0.92 → 0: a task whose previous CPU is 0 wakes
/// there, behind the busy task, although CPU 3 is idle. The 4.9 model scans the whole LLC and
/// wakes it on CPU 3. On 2 CPUs with one busy, x = 512 gives 1.32 → 1 CPU to scan: the idle one
/// is found.
#[test]
fn a_busy_llc_is_not_scanned_for_an_idle_cpu() {
    let four = Machine::from_flags(None, Some("4"), Some("off"), Some("1")).unwrap();
    let spec = |cpu, sleeping| TaskSpec {
        policy: nice(0),
        affinity: four.all_cpus(),
        placement: Placement::On(cpu),
        sleeping,
    };
    let mut eevdf = Eevdf::new(four.clone());
    let mut cfs = Linux49::new(four.clone());
    for cpu in 0..3 {
        eevdf.create(spec(cpu, false), 0).unwrap();
        cfs.create(spec(cpu, false), 0).unwrap();
    }
    let w = eevdf.create(spec(0, true), 0).unwrap();
    let wc = cfs.create(spec(0, true), 0).unwrap();
    for cpu in 0..3 {
        eevdf.pick_next(cpu, 0);
        cfs.pick_next(cpu, 0);
    }
    let later = 400 * MS;
    eevdf.run_timers(later);
    cfs.run_timers(later);
    assert!(eevdf.cpu_util(0) > 1000.0 && eevdf.cpu_util(3) == 0.0);
    assert_eq!(eevdf.nr_idle_scan(0), 0);
    assert_eq!(eevdf.wake(w, None, later), 0);
    assert_eq!(cfs.wake(wc, None, later), 3);

    let two = Machine::from_flags(None, Some("2"), Some("off"), Some("1")).unwrap();
    let mut eevdf = Eevdf::new(two.clone());
    let spec = |cpu, sleeping| TaskSpec {
        policy: nice(0),
        affinity: two.all_cpus(),
        placement: Placement::On(cpu),
        sleeping,
    };
    eevdf.create(spec(0, false), 0).unwrap();
    let w = eevdf.create(spec(0, true), 0).unwrap();
    eevdf.pick_next(0, 0);
    eevdf.run_timers(later);
    assert_eq!(eevdf.nr_idle_scan(0), 1);
    assert_eq!(eevdf.wake(w, None, later), 1);
}

/// PELT's half-life: a CPU busy for a long time and then idle for 32 ms has half its
/// utilization left; one idle and then busy for 32 ms has half the capacity.
#[test]
fn utilization_decays_and_builds_with_a_32_ms_half_life() {
    let mut m = Eevdf::new(one_cpu());
    create(&mut m, nice(0), false, 0);
    settle(&mut m, 0);
    m.run_timers(UTIL_HALF_LIFE);
    assert!((m.cpu_util(0) - 512.0).abs() < 1.0, "{}", m.cpu_util(0));
    m.run_timers(40 * UTIL_HALF_LIFE);
    m.block(0, 40 * UTIL_HALF_LIFE);
    settle(&mut m, 40 * UTIL_HALF_LIFE);
    m.run_timers(41 * UTIL_HALF_LIFE);
    assert!((m.cpu_util(0) - 512.0).abs() < 1.0, "{}", m.cpu_util(0));
}
