//! When GC workers far outnumber the CPUs: the one rule that decides it, what the parallel
//! phase does about it, and the warning the heap logs.
//!
//! A phase with more than [`FAR_RATIO`] workers per usable CPU is *far oversubscribed*. Waiting
//! actively in the termination protocol then costs more than it saves: with 256 workers on two
//! CPUs, `fixed` termination's HotSpot 8 spin loop let the workers that were done take the CPUs
//! from those still being woken one at a time by `monitor` parking, and one collection of an
//! 8 MiB heap took four seconds (seconds more per co-running process). Such a phase runs its
//! termination protocol behind a watch gate with one place per usable CPU
//! ([`termination_watchers`], [`Terminator::with_watchers`]).
//!
//! The ratio leaves alone the mild oversubscription the experiments use on purpose (ablation
//! and os-bench run twice as many GC threads as CPUs, and there `vanilla` is HotSpot 8 exactly),
//! and catches the settings that are almost certainly a mistake.
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
