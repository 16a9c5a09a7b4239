//! `monitor` parking (OpenJDK 8 `GCTaskManager`, 004 §2.3.3): one monitor for the task queue and
//! the worker parking.
//!
//! Idle workers wait in the task-manager monitor's WaitSet. The dispatcher publishes a job under
//! the lock — a new epoch, the number of participants, and the phase's root tasks when the
//! task queue is `monitor` — and `notify_all`s, which moves the waiters to `cxq` without waking
//! them (000 §3.2). Each then comes back as the heir, owns the lock, sees the new epoch and,
//! still in the same critical section, dequeues its first task (HotSpot's `get_task`). At the
//! end of the job every participant checks in under the lock; the last one wakes the VM thread,
//! which waits on a monitor of its own (HotSpot's `WaitForBarrierGCTask`).

use crate::parallel::monitor::Monitor;
use crate::parallel::task_queue::monitor_fifo::TaskFifo;

/// What the task-manager monitor protects.
#[derive(Debug, Default)]
pub struct TaskManagerState {
    /// Jobs published so far (`monitor` parking only).
    pub epoch: u64,
    /// Workers taking part in the current job (`monitor` parking only).
    pub participants: usize,
    /// Participants that have checked in at the final barrier (`monitor` parking only).
    pub finished: usize,
    /// The phase's root tasks when the task queue is `monitor` (empty otherwise).
    pub tasks: TaskFifo,
    /// Root tasks completed (HotSpot's `note_completion`).
    pub completed: u64,
}

/// What a worker woken for a job found, in the same critical section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wakeup {
    /// The job's epoch.
    pub epoch: u64,
    /// How many workers take part.
    pub participants: usize,
    /// The first root task it dequeued, if it takes part and one was left.
    pub first_task: Option<usize>,
}

/// Publish a job for `participants` workers, with `tasks` as the phase's root tasks, and move
/// every waiter to the contention queue.
pub fn publish(task_manager: &Monitor<TaskManagerState>, participants: usize, tasks: TaskFifo) {
    let mut tm = task_manager.lock();
    tm.epoch += 1;
    tm.participants = participants;
    tm.finished = 0;
    tm.tasks = tasks;
    tm.notify_all();
}

/// Wait until a job newer than `seen` is published; worker `id` dequeues its first task in the
/// same critical section. A wake-up that finds no new job, or a job it does not take part in,
/// is counted as futile.
pub fn wait_for_job(task_manager: &Monitor<TaskManagerState>, id: usize, seen: u64) -> Wakeup {
    let mut tm = task_manager.lock();
    while tm.epoch == seen {
        tm.wait();
        if tm.epoch == seen {
            task_manager.note_futile_wakeup();
        }
    }
    let participates = id < tm.participants;
    if !participates {
        task_manager.note_futile_wakeup();
    }
    let first_task = if participates {
        tm.tasks.dequeue(id)
    } else {
        None
    };
    Wakeup {
        epoch: tm.epoch,
        participants: tm.participants,
        first_task,
    }
}

/// A participant is done: check in at the final barrier; the last one wakes the VM thread.
pub fn check_in(task_manager: &Monitor<TaskManagerState>, vm: &Monitor<bool>) {
    let last = {
        let mut tm = task_manager.lock();
        tm.finished += 1;
        tm.finished == tm.participants
    };
    if last {
        let mut done = vm.lock();
        *done = true;
        done.notify_all();
    }
}

/// The VM thread: wait until the last participant has checked in, then re-arm.
pub fn wait_done(vm: &Monitor<bool>) {
    let mut done = vm.lock();
    while !*done {
        done.wait();
    }
    *done = false;
}
