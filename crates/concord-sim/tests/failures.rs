//! A simulation that cannot go on says why instead of hanging: a deadlock names the blocked
//! threads and what they wait on, a livelock stops at the time limit, and a simulated thread's
//! panic names the thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use concord_sim::exec::{self, Costs, Sim};
use concord_sim::sync::atomic::{AtomicU32, Ordering::SeqCst};
use concord_sim::sync::{futex, hint, Mutex};

/// The message `sim.run()` panics with.
fn failure(sim: Sim) -> String {
    let payload =
        catch_unwind(AssertUnwindSafe(|| sim.run())).expect_err("the simulation should fail");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .expect("a message")
}

#[test]
fn a_futex_nobody_wakes_is_reported_as_a_deadlock_naming_the_waiters() {
    let word = Arc::new(AtomicU32::new(0));
    let mut sim = Sim::new(2, Costs::DEFAULT, 0);
    for name in ["stuck-a", "stuck-b"] {
        let w = word.clone();
        sim.spawn(name, move || futex::wait(&w, 0, None));
    }
    sim.spawn("finisher", || exec::charge(10));
    let message = failure(sim);
    assert!(message.contains("deadlock"), "{message}");
    assert!(message.contains("`stuck-a` (blocked on futex"), "{message}");
    assert!(message.contains("`stuck-b` (blocked on futex"), "{message}");
    assert!(!message.contains("finisher"), "{message}");
}

#[test]
fn two_locks_taken_in_opposite_orders_deadlock_and_are_reported() {
    let locks = Arc::new((Mutex::new(()), Mutex::new(())));
    let mut sim = Sim::new(2, Costs::DEFAULT, 0);
    let l = locks.clone();
    sim.spawn("a-then-b", move || {
        let _a = l.0.lock().unwrap();
        exec::charge(10_000);
        let _b = l.1.lock().unwrap();
    });
    let l = locks.clone();
    sim.spawn("b-then-a", move || {
        let _b = l.1.lock().unwrap();
        exec::charge(10_000);
        let _a = l.0.lock().unwrap();
    });
    let message = failure(sim);
    assert!(message.contains("deadlock"), "{message}");
    assert!(
        message.contains("a-then-b") && message.contains("b-then-a"),
        "{message}"
    );
}

#[test]
fn a_spin_that_never_ends_stops_at_the_time_limit() {
    let flag = Arc::new(AtomicU32::new(0));
    let mut sim = Sim::new(1, Costs::DEFAULT, 0).time_limit(1_000_000);
    let f = flag.clone();
    sim.spawn("spinner", move || {
        while f.load(SeqCst) == 0 {
            hint::spin_loop();
        }
    });
    let message = failure(sim);
    assert!(message.contains("time limit of 1000000 ns"), "{message}");
    assert!(
        message.contains("`spinner` (running on CPU 0)"),
        "{message}"
    );
}

#[test]
fn a_simulated_threads_panic_names_it_and_stops_the_others() {
    let word = Arc::new(AtomicU32::new(0));
    let mut sim = Sim::new(2, Costs::DEFAULT, 0);
    let w = word.clone();
    sim.spawn("waits-forever", move || futex::wait(&w, 0, None));
    sim.spawn("breaks", || {
        exec::charge(5_000);
        panic!("broken invariant");
    });
    let message = failure(sim);
    assert!(
        message.contains("simulated thread `breaks` panicked: broken invariant"),
        "{message}"
    );
}
