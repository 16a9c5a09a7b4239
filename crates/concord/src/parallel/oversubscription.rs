//! When GC workers far outnumber the CPUs: the one rule that decides it, what the parallel
//! phase does about it, and the warning the heap logs.
//!
//! A phase with more than [`FAR_RATIO`] workers per usable CPU is *far oversubscribed*. Waiting
//! actively in the termination protocol then costs more than it saves. With 256 workers on two
//! CPUs under `vanilla`, `monitor` parking wakes the workers one at a time, each needing a CPU
//! in turn, while those already in `fixed` termination spin in HotSpot 8's loop (up to 4096
//! `PAUSE`s between yields) on the CPUs the next one needs: the phase's time grows with the
//! square of the workers per CPU, and one collection of an 8 MiB heap took 4 to 9 s, and 100 s
//! with 16 such processes side by side. Such a phase runs its termination protocol behind a
//! watch gate with one place per usable CPU ([`termination_watchers`],
//! [`Terminator::with_watchers`]); the other waiters block until it ends.
//!
//! That slowness is OpenJDK 8's own: its `ParallelTaskTerminator` spins the same way whatever
//! the number of CPUs, and its `GCTaskManager` wakes workers through the same monitor, so
//! `ParallelGCThreads` far above the CPUs would stall it as well. The gate is therefore a plain
//! departure from HotSpot 8 for `vanilla` too, by the same rule for every preset, and only in
//! far-oversubscribed phases: the mild oversubscription the experiments use on purpose
//! (ablation and os-bench run twice as many GC threads as CPUs) is left alone, and there
//! `vanilla` is HotSpot 8 exactly. Settings beyond the ratio are almost certainly a mistake,
//! hence the warning.
//!
//! [`Terminator::with_watchers`]: super::termination::Terminator::with_watchers

/// Workers per usable CPU above which a phase is far oversubscribed.
pub const FAR_RATIO: usize = 4;

/// Whether `workers` taking part in a phase far outnumber `usable_cpus` (at least 1 counted).
pub fn far_oversubscribed(workers: usize, usable_cpus: usize) -> bool {
    workers > FAR_RATIO.saturating_mul(usable_cpus.max(1))
}

/// How many of a phase's `workers` may wait actively in the termination protocol at once: all
/// of them, unless the phase is far oversubscribed; then one per usable CPU.
pub fn termination_watchers(workers: usize, usable_cpus: usize) -> usize {
    if far_oversubscribed(workers, usable_cpus) {
        usable_cpus.max(1)
    } else {
        workers
    }
}

/// The warning for a heap whose collections will run `gc_threads` workers on `usable_cpus`
/// CPUs, if they far outnumber them (`None` otherwise, and with dynamic GC threads, which never
/// run more workers than usable CPUs).
pub fn warning(gc_threads: usize, usable_cpus: usize, dynamic: bool) -> Option<String> {
    if dynamic || !far_oversubscribed(gc_threads, usable_cpus) {
        return None;
    }
    Some(format!(
        "{gc_threads} GC threads for {usable_cpus} usable CPU{s}: more than {FAR_RATIO} per CPU \
         only adds waiting, and pauses will be longer than with fewer threads (use at most \
         {most} GC threads, or dynamic GC threads)",
        s = if usable_cpus == 1 { "" } else { "s" },
        most = FAR_RATIO * usable_cpus.max(1),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_means_more_than_four_per_cpu() {
        assert!(!far_oversubscribed(8, 2));
        assert!(far_oversubscribed(9, 2));
        assert!(far_oversubscribed(256, 2));
        assert!(!far_oversubscribed(4, 1));
        assert!(far_oversubscribed(5, 1));
        // No CPU count known counts as one.
        assert!(far_oversubscribed(5, 0));
        assert!(!far_oversubscribed(usize::MAX, usize::MAX));
        // The experiments' own setting (twice the CPUs) is never far.
        for cpus in 1..=512 {
            assert!(!far_oversubscribed(2 * cpus, cpus));
        }
    }

    #[test]
    fn watchers_are_all_workers_unless_far_oversubscribed() {
        assert_eq!(termination_watchers(8, 2), 8);
        assert_eq!(termination_watchers(256, 2), 2);
        assert_eq!(termination_watchers(1, 1), 1);
        assert_eq!(termination_watchers(64, 0), 1);
    }

    #[test]
    fn warns_only_for_far_oversubscription_with_a_fixed_count() {
        assert_eq!(warning(8, 2, false), None);
        assert_eq!(warning(256, 2, true), None);
        let text = warning(256, 2, false).expect("256 threads on 2 CPUs warn");
        assert!(
            text.starts_with("256 GC threads for 2 usable CPUs"),
            "{text}"
        );
        assert!(text.contains("use at most 8 GC threads"), "{text}");
        let one = warning(5, 1, false).unwrap();
        assert!(one.starts_with("5 GC threads for 1 usable CPU:"), "{one}");
    }
}
