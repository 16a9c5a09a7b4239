//! The mutator scheduling controller on real threads (001): explicit FIFO and back, the
//! adaptive sampler switching on thread churn, the profile written by one run and used by the
//! next, and the fallback when SCHED_FIFO is refused.
//!
//! Safety on a small machine: every thread that may be put under SCHED_FIFO here spends its
//! life blocked or sleeping, and is back under SCHED_OTHER before it exits.

mod common;
use common::{forbid_fifo_on_this_thread, in_child_process};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use concord::os::mutator_sched::{
    write_profile, MutatorSchedConfig, MutatorSchedReport, MutatorScheduler, ProfileAction,
    ProfileFile, SchedChoice, ThreadProfile, WorkSpread, PROFILE_FORMAT, PROFILE_VERSION,
};
use concord::os::policy::{FifoScope, MutatorSched};
use concord::os::sched::{self, SchedPolicy};

/// The report's notices that contain `phrase`.
fn notices_with<'a>(report: &'a MutatorSchedReport, phrase: &str) -> Vec<&'a String> {
    report
        .notices
        .iter()
        .filter(|n| n.contains(phrase))
        .collect()
}

fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("concord-msched-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn policy_of(tid: i32) -> SchedPolicy {
    sched::thread_policy(tid).unwrap()
}

/// The policy a freshly attached thread should be under, given what the scheduler reports.
fn expected_for(s: &MutatorScheduler, wanted: SchedChoice) -> SchedPolicy {
    if wanted == SchedChoice::Fifo && !s.report().fifo_denied {
        SchedPolicy::Fifo
    } else {
        SchedPolicy::Other
    }
}

/// A mutator thread that attaches, reports its tid and policy, blocks until released, then
/// detaches and reports its policy after detaching.
struct Sleeper {
    tid: i32,
    policy_attached: SchedPolicy,
    release: mpsc::Sender<()>,
    handle: thread::JoinHandle<SchedPolicy>,
}

fn sleeper(s: &Arc<MutatorScheduler>) -> Sleeper {
    let (tx, rx) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let s = s.clone();
    let handle = thread::spawn(move || {
        let tid = sched::current_tid();
        s.on_attach(tid);
        tx.send((tid, policy_of(tid))).unwrap();
        let _ = released.recv();
        s.on_detach(tid);
        policy_of(tid)
    });
    let (tid, policy_attached) = rx.recv().unwrap();
    Sleeper {
        tid,
        policy_attached,
        release,
        handle,
    }
}

impl Sleeper {
    fn finish(self) -> SchedPolicy {
        self.release.send(()).unwrap();
        self.handle.join().unwrap()
    }
}

#[test]
fn explicit_fifo_is_applied_and_undone() {
    // 2 usable CPUs, threshold 8: explicit FIFO still applies, with a notice.
    let s = Arc::new(MutatorScheduler::new(MutatorSched::Fifo, 2, 8));
    assert!(s.notices()[0].contains("001 §4.4"), "{:?}", s.notices());

    let threads: Vec<Sleeper> = (0..3).map(|_| sleeper(&s)).collect();
    let denied = s.report().fifo_denied;
    let want = if denied {
        SchedPolicy::Other
    } else {
        SchedPolicy::Fifo
    };
    for t in &threads {
        assert_eq!(t.policy_attached, want);
        assert_eq!(policy_of(t.tid), want);
    }
    if denied {
        let report = s.report();
        assert_eq!(report.applied, SchedChoice::Cfs);
        let fallback = notices_with(&report, "falling back to CFS");
        assert!(
            fallback.iter().any(|n| n.contains("CAP_SYS_NICE")),
            "{fallback:?}"
        );
    } else {
        assert_eq!(s.current(), SchedChoice::Fifo);
    }

    // Two detach themselves; the third is still attached when the scheduler finishes.
    let mut threads = threads.into_iter();
    for t in threads.by_ref().take(2) {
        assert_eq!(t.finish(), SchedPolicy::Other);
    }
    let last = threads.next().unwrap();
    let report = s.finish();
    assert_eq!(policy_of(last.tid), SchedPolicy::Other);
    assert_eq!(last.finish(), SchedPolicy::Other);
    assert_eq!(report.attaches, 3);
    if !denied {
        assert_eq!(report.fifo_sets, 3);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
    }
    // After finish, attaching changes nothing.
    let late = sleeper(&s);
    assert_eq!(late.policy_attached, SchedPolicy::Other);
    assert_eq!(late.finish(), SchedPolicy::Other);
}

#[test]
fn nested_attach_keeps_fifo_until_the_last_detach() {
    let s = Arc::new(MutatorScheduler::new(MutatorSched::Fifo, 2, 0));
    let s2 = s.clone();
    thread::spawn(move || {
        let tid = sched::current_tid();
        s2.on_attach(tid);
        s2.on_attach(tid);
        let want = expected_for(&s2, SchedChoice::Fifo);
        assert_eq!(policy_of(tid), want);
        s2.on_detach(tid);
        assert_eq!(policy_of(tid), want);
        s2.on_detach(tid);
        assert_eq!(policy_of(tid), SchedPolicy::Other);
        // Detaching an unknown thread is harmless.
        s2.on_detach(tid);
    })
    .join()
    .unwrap();
    assert_eq!(s.finish().attaches, 2);
}

/// A sampling period the adaptive tests never reach: they take every sample themselves
/// ([`MutatorScheduler::sample_now`]), so what each sample sees does not depend on timing.
const NEVER: Duration = Duration::from_secs(3600);

/// `n` mutators attached at once.
fn sleepers(s: &Arc<MutatorScheduler>, n: usize) -> Vec<Sleeper> {
    (0..n).map(|_| sleeper(s)).collect()
}

#[test]
fn the_listing_starts_fifo_stays_on_churn_and_switches_to_cfs_for_good() {
    let s = Arc::new(MutatorScheduler::new(MutatorSched::Adaptive(NEVER), 2, 0));
    assert_eq!(
        s.current(),
        SchedChoice::Fifo,
        "Algorithm 2 starts under FIFO"
    );
    let mut pair = sleepers(&s, 2);
    for t in &pair {
        assert_eq!(t.policy_attached, expected_for(&s, SchedChoice::Fifo));
    }
    // Churn: every sample sees a new pair; all ids new, so FIFO stays.
    for _ in 0..2 {
        s.sample_now();
        for t in pair.drain(..) {
            assert_eq!(t.finish(), SchedPolicy::Other);
        }
        pair = sleepers(&s, 2);
    }
    s.sample_now();
    let denied = s.report().fifo_denied;
    for t in &pair {
        assert_eq!(policy_of(t.tid), expected_for(&s, SchedChoice::Fifo));
    }
    // The same pair at the next sample: ids seen again, CFS, and no more decisions.
    s.sample_now();
    for t in &pair {
        assert_eq!(policy_of(t.tid), SchedPolicy::Other);
    }
    for t in pair.drain(..) {
        assert_eq!(t.finish(), SchedPolicy::Other);
    }
    // New threads after the switch stay under CFS whatever later samples see.
    pair = sleepers(&s, 2);
    s.sample_now();
    for t in pair {
        assert_eq!(t.policy_attached, SchedPolicy::Other);
        assert_eq!(t.finish(), SchedPolicy::Other);
    }
    let report = s.finish();
    let steps: Vec<(usize, usize, SchedChoice)> = report
        .listing_decisions
        .iter()
        .map(|d| (d.step.active, d.step.already_seen, d.step.choice))
        .collect();
    assert_eq!(
        steps,
        [
            (2, 0, SchedChoice::Fifo),
            (2, 0, SchedChoice::Fifo),
            (2, 0, SchedChoice::Fifo),
            (2, 2, SchedChoice::Cfs)
        ]
    );
    assert_eq!(
        report.samples, 4,
        "the sample after the switch decides nothing"
    );
    assert!(report.decisions.is_empty());
    let switched: Vec<bool> = report
        .listing_decisions
        .iter()
        .map(|d| d.switched)
        .collect();
    if denied {
        assert_eq!(switched, [false; 4]);
    } else {
        assert_eq!(switched, [false, false, false, true]);
        assert_eq!(report.switches, 1);
    }
    assert_eq!(report.applied, SchedChoice::Cfs);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["requested"], "adaptive:3600");
    assert_eq!(json["listing_decisions"][3]["already_seen"], 2);
    assert_eq!(json["listing_decisions"][3]["choice"], "cfs");
}

/// A thread that is not a mutator (as a GC worker): reports its tid, blocks until released.
fn bystander() -> (i32, mpsc::Sender<()>, thread::JoinHandle<()>) {
    let (tx, rx) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let handle = thread::spawn(move || {
        tx.send(sched::current_tid()).unwrap();
        let _ = released.recv();
    });
    (rx.recv().unwrap(), release, handle)
}

#[test]
fn fifo_scope_all_takes_the_runtime_threads_along() {
    let mut config = MutatorSchedConfig::new(MutatorSched::Adaptive(NEVER), 2);
    config.fifo_cpu_threshold = 0;
    config.fifo_scope = FifoScope::All;
    let s = Arc::new(MutatorScheduler::with_config(config));
    let (worker, release, handle) = bystander();
    s.add_runtime_threads(&[worker]);
    s.add_runtime_threads(&[worker]); // counted once
    let under_fifo = expected_for(&s, SchedChoice::Fifo);
    assert_eq!(
        policy_of(worker),
        under_fifo,
        "the listing starts under FIFO"
    );
    // A mutator seen at two samples: CFS, for the runtime thread too.
    let t = sleeper(&s);
    s.sample_now();
    s.sample_now();
    assert_eq!(s.current(), SchedChoice::Cfs);
    assert_eq!(policy_of(worker), SchedPolicy::Other);
    assert_eq!(t.finish(), SchedPolicy::Other);
    let report = s.finish();
    assert_eq!(report.runtime_threads, 1);
    assert_eq!(report.fifo_scope, FifoScope::All);
    release.send(()).unwrap();
    handle.join().unwrap();

    // Explicit FIFO: back to CFS at `finish`. With the default scope, runtime threads are
    // left alone.
    for (scope, while_running) in [
        (FifoScope::All, under_fifo),
        (FifoScope::Mutators, SchedPolicy::Other),
    ] {
        let mut config = MutatorSchedConfig::new(MutatorSched::Fifo, 2);
        config.fifo_scope = scope;
        let s = MutatorScheduler::with_config(config);
        let (worker, release, handle) = bystander();
        s.add_runtime_threads(&[worker]);
        assert_eq!(policy_of(worker), while_running, "{scope}");
        let report = s.finish();
        assert_eq!(policy_of(worker), SchedPolicy::Other, "{scope}");
        assert_eq!(report.runtime_threads, usize::from(scope == FifoScope::All));
        release.send(()).unwrap();
        handle.join().unwrap();
    }
}

#[test]
fn the_listing_keeps_cfs_on_few_cpus() {
    // 2 usable CPUs, FIFO chosen automatically only on more than 8.
    let s = Arc::new(MutatorScheduler::new(MutatorSched::Adaptive(NEVER), 2, 8));
    assert_eq!(s.current(), SchedChoice::Cfs);
    let t = sleeper(&s);
    assert_eq!(t.policy_attached, SchedPolicy::Other);
    s.sample_now();
    assert_eq!(t.finish(), SchedPolicy::Other);
    let report = s.finish();
    assert_eq!((report.fifo_sets, report.switches), (0, 0));
    assert_eq!(notices_with(&report, "staying with CFS").len(), 1);
    assert_eq!(report.listing_decisions[0].step.choice, SchedChoice::Fifo);
    assert_eq!(report.listing_decisions[0].applied, SchedChoice::Cfs);
}

#[test]
fn majority_switches_on_churn_and_back_when_threads_stay() {
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::AdaptiveMajority(NEVER),
        2,
        0,
    ));
    assert_eq!(s.current(), SchedChoice::Cfs);

    // Churn: every sample sees a new pair of mutators, the previous pair gone.
    let mut pair = sleepers(&s, 2);
    s.sample_now(); // the first sample has nothing to compare with
    for _ in 0..2 {
        for t in pair.drain(..) {
            assert_eq!(t.finish(), SchedPolicy::Other);
        }
        pair = sleepers(&s, 2);
        s.sample_now();
    }
    let after_churn = s.report();
    let denied = after_churn.fifo_denied;
    let under_fifo = if denied {
        SchedPolicy::Other
    } else {
        SchedPolicy::Fifo
    };
    for t in &pair {
        assert_eq!(policy_of(t.tid), under_fifo);
    }

    // Stable: the same pair at the next sample.
    s.sample_now();
    let report = s.report();
    for t in &pair {
        assert_eq!(policy_of(t.tid), SchedPolicy::Other);
    }
    for t in pair {
        assert_eq!(t.finish(), SchedPolicy::Other);
    }
    let started = Instant::now();
    let final_report = s.finish();
    // With an hour's period, a stop that waited for the next tick would take that hour.
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "finish must stop the sampler promptly"
    );

    assert_eq!(report.samples, 4, "{report:?}");
    let decided: Vec<(SchedChoice, f64)> = report
        .decisions
        .iter()
        .map(|d| (d.decision.choice, d.decision.similarity))
        .collect();
    assert_eq!(
        decided,
        [
            (SchedChoice::Fifo, 0.0),
            (SchedChoice::Fifo, 0.0),
            (SchedChoice::Cfs, 1.0)
        ]
    );
    let applied: Vec<SchedChoice> = report.decisions.iter().map(|d| d.applied).collect();
    if denied {
        assert!(!notices_with(&report, "falling back to CFS").is_empty());
        assert_eq!(applied, [SchedChoice::Cfs; 3]);
    } else {
        // Into FIFO with the churn, back to CFS once the threads stay.
        assert_eq!(
            applied,
            [SchedChoice::Fifo, SchedChoice::Fifo, SchedChoice::Cfs]
        );
        assert_eq!(report.switches, 2, "{report:?}");
        assert!(after_churn.fifo_sets > 0, "{after_churn:?}");
    }
    assert!(final_report.switches >= report.switches);
    let json = serde_json::to_value(&final_report).unwrap();
    assert_eq!(json["requested"], "adaptive-majority:3600");
    assert!(json["decisions"][0]["similarity"].is_number());
}

#[test]
fn majority_observes_but_keeps_cfs_on_few_cpus() {
    // 2 usable CPUs, FIFO chosen automatically only on more than 8.
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::AdaptiveMajority(NEVER),
        2,
        8,
    ));
    let mut t = sleeper(&s);
    s.sample_now();
    for _ in 0..3 {
        assert_eq!(t.finish(), SchedPolicy::Other);
        t = sleeper(&s);
        assert_eq!(t.policy_attached, SchedPolicy::Other);
        s.sample_now();
    }
    assert_eq!(t.finish(), SchedPolicy::Other);
    let report = s.finish();
    assert_eq!(report.fifo_sets, 0);
    assert_eq!(report.switches, 0);
    assert_eq!(report.decisions.len(), 3, "{report:?}");
    for d in &report.decisions {
        assert_eq!(d.decision.choice, SchedChoice::Fifo);
        assert_eq!(d.applied, SchedChoice::Cfs);
    }
    let notes = notices_with(&report, "staying with CFS");
    assert_eq!(notes.len(), 1, "said once: {:?}", report.notices);
}

/// The sampler thread takes the samples by itself, one every period.
#[test]
fn the_majority_sampler_thread_samples_every_period() {
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::AdaptiveMajority(Duration::from_millis(10)),
        2,
        0,
    ));
    let stable = sleepers(&s, 2);
    let start = Instant::now();
    while s.report().decisions.len() < 3 {
        // A hang guard, not a timing.
        assert!(start.elapsed() < Duration::from_secs(60), "no samples");
        thread::sleep(Duration::from_millis(10));
    }
    for t in stable {
        assert_eq!(t.finish(), SchedPolicy::Other);
    }
    let report = s.finish();
    // The same threads throughout (one of them, at most, attached after a sample).
    for d in &report.decisions {
        assert!(d.decision.similarity >= 0.5, "{d:?}");
        assert_eq!(d.applied, SchedChoice::Cfs, "{d:?}");
    }
}

/// Burn `cpu` of this thread's CPU time.
fn burn(cpu: Duration) {
    let tid = sched::current_tid();
    let start = sched::thread_cpu_time(tid).unwrap();
    let mut x = 1u64;
    while sched::thread_cpu_time(tid).unwrap() - start < cpu {
        for _ in 0..1000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
}

#[test]
fn profile_is_recorded_then_used() {
    let dir = scratch_dir("profile");
    let path = dir.join("run.profile");

    // Run 1: no profile yet → CFS, record.
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::Profile(path.clone()),
        2,
        0,
    ));
    assert_eq!(s.current(), SchedChoice::Cfs);
    let barrier = Arc::new(Barrier::new(8));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            let barrier = barrier.clone();
            thread::Builder::new()
                .name(format!("worker {i}"))
                .spawn(move || {
                    let tid = sched::current_tid();
                    s.on_attach(tid);
                    assert_eq!(policy_of(tid), SchedPolicy::Other);
                    barrier.wait();
                    burn(Duration::from_millis(15));
                    s.on_detach(tid);
                    tid
                })
                .unwrap()
        })
        .collect();
    let tids: HashSet<i32> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let report = s.finish();
    let outcome = report.profile.unwrap();
    assert_eq!(outcome.action, ProfileAction::Recorded);
    assert_eq!(outcome.threads_recorded, 8);
    let text = std::fs::read_to_string(&path).unwrap();
    let file: ProfileFile = serde_json::from_str(&text).unwrap();
    assert_eq!(file.threads.len(), 8);
    for t in &file.threads {
        assert!(tids.contains(&t.tid));
        assert!(t.name.starts_with("worker "), "{t:?}");
        assert!(t.cpu_ns >= 15_000_000, "{t:?}");
        // Only the time attached counts, and the burn is short.
        assert!(t.cpu_ns < 2_000_000_000, "{t:?}");
    }

    // Run 2: the even profile selects FIFO (threshold 0 allows it on this machine).
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::Profile(path.clone()),
        2,
        0,
    ));
    let report = s.report();
    let outcome = report.profile.clone().unwrap();
    assert_eq!(outcome.action, ProfileAction::Used);
    let decision = outcome.decision.unwrap();
    assert_eq!(decision.spread, WorkSpread::Even, "{}", decision.describe());
    assert_eq!(decision.choice, SchedChoice::Fifo);
    assert!(report.notices[0].contains("run.profile"));
    let t = sleeper(&s);
    assert_eq!(t.policy_attached, expected_for(&s, SchedChoice::Fifo));
    assert_eq!(t.finish(), SchedPolicy::Other);
    let report = s.finish();
    assert_eq!(report.profile.unwrap().action, ProfileAction::Used);
    // The profile is left as it was.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), text);

    // A profile where one thread did 90% of the work selects CFS.
    let skewed = dir.join("skewed.profile");
    let mut threads = vec![ThreadProfile {
        tid: 1,
        name: "main".into(),
        cpu_ns: 9_000_000_000,
    }];
    threads.extend((2..10).map(|tid| ThreadProfile {
        tid,
        name: format!("helper {tid}"),
        cpu_ns: 125_000_000,
    }));
    write_profile(
        &skewed,
        &ProfileFile {
            format: PROFILE_FORMAT.into(),
            version: PROFILE_VERSION,
            usable_cpus: 48,
            wall_ms: 10_000,
            threads,
        },
    )
    .unwrap();
    let s = Arc::new(MutatorScheduler::new(MutatorSched::Profile(skewed), 2, 0));
    assert_eq!(s.current(), SchedChoice::Cfs);
    let t = sleeper(&s);
    assert_eq!(t.policy_attached, SchedPolicy::Other);
    t.finish();
    let d = s.finish().profile.unwrap().decision.unwrap();
    assert_eq!(d.spread, WorkSpread::Concentrated);

    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn malformed_profile_is_reported_and_left_alone() {
    let dir = scratch_dir("malformed");
    let path = dir.join("bad.profile");
    std::fs::write(&path, "threads: lots\n").unwrap();
    let s = Arc::new(MutatorScheduler::new(
        MutatorSched::Profile(path.clone()),
        64,
        8,
    ));
    assert_eq!(s.current(), SchedChoice::Cfs);
    let t = sleeper(&s);
    assert_eq!(t.policy_attached, SchedPolicy::Other);
    t.finish();
    let report = s.finish();
    assert_eq!(report.profile.unwrap().action, ProfileAction::Invalid);
    assert!(
        report.notices[0].contains("malformed profile")
            && report.notices[0].contains("bad.profile"),
        "{:?}",
        report.notices
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "threads: lots\n");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn profile_run_without_mutators_writes_nothing() {
    let dir = scratch_dir("empty");
    let path = dir.join("none.profile");
    let s = MutatorScheduler::new(MutatorSched::Profile(path.clone()), 2, 8);
    let report = s.finish();
    assert_eq!(
        report.profile.unwrap().action,
        ProfileAction::NothingToRecord
    );
    assert!(!path.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs in a child process of its own: it sets RLIMIT_RTPRIO for the whole process.
#[test]
fn refused_fifo_falls_back_to_cfs() {
    // On a thread without CAP_SYS_NICE, with RLIMIT_RTPRIO 0, SCHED_FIFO is refused.
    in_child_process("refused_fifo_falls_back_to_cfs", || {
        thread::spawn(refused_fifo_on_this_thread).join().unwrap()
    });
}

/// The body of [`refused_fifo_falls_back_to_cfs`].
fn refused_fifo_on_this_thread() {
    forbid_fifo_on_this_thread();
    let tid = sched::current_tid();
    let s = MutatorScheduler::new(MutatorSched::Fifo, 2, 0);
    s.on_attach(tid);
    let report = s.report();
    assert!(report.fifo_denied, "{report:?}");
    assert_eq!(policy_of(tid), SchedPolicy::Other);
    assert_eq!(s.current(), SchedChoice::Cfs);
    assert_eq!(report.applied, SchedChoice::Cfs);
    let warnings = notices_with(&report, "falling back to CFS");
    assert_eq!(warnings.len(), 1, "{:?}", report.notices);
    assert!(warnings[0].contains("CAP_SYS_NICE / RLIMIT_RTPRIO"));
    // Later attaches are not tried again and produce no second warning.
    s.on_detach(tid);
    s.on_attach(tid);
    assert_eq!(policy_of(tid), SchedPolicy::Other);
    s.on_detach(tid);
    let report = s.finish();
    assert_eq!(notices_with(&report, "falling back").len(), 1);
    assert_eq!(report.fifo_sets, 0);
}
