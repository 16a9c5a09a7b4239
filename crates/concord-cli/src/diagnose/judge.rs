//! The verdicts on pauses: paper 002's OS stalls and the other findings an operator acts on,
//! each with its threshold (stated here and in docs/diagnose.md) and its advice.
//!
//! An OS stall is a pause of at least [`STALL_FLOOR_MS`] that is one of:
//! - *off-cpu*: its wall time `real` exceeds [`OFF_CPU_FACTOR`] × (user + sys) / GC threads
//!   plus [`CPU_RESOLUTION_MS`] (the logs round CPU times to 10 ms): the GC threads did not
//!   run for most of the pause, blocked in the kernel (a log `write()` behind writeback,
//!   swap-in) or off the CPU (002 Fig. 4: real 11.45 s for user 0.18 s + sys 0.01 s);
//! - *outside-collection*: the threads were stopped (the `safepoint` line, JDK 8's `Total time
//!   for which application threads were stopped`) more than twice as long as the collection
//!   and [`STALL_FLOOR_MS`] beyond it: the pause went on after the collection (writing the GC
//!   log, 002 Fig. 8) or before it (reaching the safepoint);
//! - *kernel*: sys is at least [`STALL_FLOOR_MS`] and above user: page faults, THP compaction,
//!   direct reclaim, swapping (002 §3).
//!
//! The other findings:
//! - *long-ttsp*: reaching the safepoint took at least [`LONG_TTSP_MS`];
//! - *serial*: a collection of at least [`STALL_FLOOR_MS`] that ran on one thread (the Serial
//!   collector, `PSOldGen`, CMS's foreground collection, G1's full collection before JDK 10);
//! - *promotion-failure*: ParNew/CMS/Parallel's `promotion failed` or CMS's `concurrent mode
//!   failure`;
//! - *evacuation-failure*: G1's `to-space exhausted` / `Evacuation Failure`, Shenandoah's
//!   degenerated collection;
//! - *explicit-gc*: a collection asked for (`System.gc()`, jmap/jcmd, JVMTI);
//! - *heap-too-small*: a full collection that leaves the heap at least [`FULL_HEAP_SHARE`]
//!   full, or that follows another full collection with no other pause between, less than
//!   [`BACK_TO_BACK_S`] after it.

use super::Pause;

/// Pauses shorter than this are never called a stall: a few milliseconds of scheduling noise
/// are not what 002 is about.
pub const STALL_FLOOR_MS: f64 = 50.0;
/// How far real must exceed (user + sys) / threads to count as off-CPU.
pub const OFF_CPU_FACTOR: f64 = 2.0;
/// The resolution of logged CPU times (`User=0.01s`, `user=0.18`).
pub const CPU_RESOLUTION_MS: f64 = 10.0;
/// Time to safepoint from which it is a finding.
pub const LONG_TTSP_MS: f64 = 50.0;
/// Occupancy after a full collection, as a share of the capacity, from which the heap is too
/// small.
pub const FULL_HEAP_SHARE: f64 = 0.9;
/// Full collections closer than this, with no other pause between, are back to back.
pub const BACK_TO_BACK_S: f64 = 5.0;

/// A kind of finding, with its stable name (`--json`'s `kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// Real far above (user + sys) / threads.
    OffCpu,
    /// Stopped far longer than the collection.
    OutsideCollection,
    /// Most CPU time in the kernel.
    Kernel,
    /// A long time to safepoint.
    LongTtsp,
    /// A collection on one thread.
    Serial,
    /// Promotion failed, concurrent mode failure.
    PromotionFailure,
    /// To-space exhausted, a degenerated collection.
    EvacuationFailure,
    /// An explicit collection.
    ExplicitGc,
    /// Full collections that free little or follow each other.
    HeapTooSmall,
}

impl Kind {
    /// The stable name.
    pub fn name(self) -> &'static str {
        match self {
            Kind::OffCpu => "off-cpu",
            Kind::OutsideCollection => "outside-collection",
            Kind::Kernel => "kernel",
            Kind::LongTtsp => "long-ttsp",
            Kind::Serial => "serial",
            Kind::PromotionFailure => "promotion-failure",
            Kind::EvacuationFailure => "evacuation-failure",
            Kind::ExplicitGc => "explicit-gc",
            Kind::HeapTooSmall => "heap-too-small",
        }
    }

    /// Whether it is one of 002's OS stalls.
    pub fn os_stall(self) -> bool {
        matches!(self, Kind::OffCpu | Kind::OutsideCollection | Kind::Kernel)
    }

    /// What it is, with its threshold, in one sentence.
    pub fn summary(self) -> String {
        match self {
            Kind::OffCpu => format!(
                "OS stall: real above {OFF_CPU_FACTOR} × (user+sys) / GC threads + \
                 {CPU_RESOLUTION_MS} ms in a pause of {STALL_FLOOR_MS} ms or more: the GC \
                 threads waited off the CPU (a blocked write, swap-in, no CPU to run on)"
            ),
            Kind::OutsideCollection => format!(
                "OS stall: the threads stayed stopped more than twice as long as the \
                 collection and {STALL_FLOOR_MS} ms beyond it (writing the GC log inside the \
                 pause, or reaching the safepoint)"
            ),
            Kind::Kernel => format!(
                "OS stall: sys at least {STALL_FLOOR_MS} ms and above user: the GC threads \
                 worked in the kernel (page faults, THP compaction, reclaim, swapping)"
            ),
            Kind::LongTtsp => format!(
                "reaching the safepoint took {LONG_TTSP_MS} ms or more: a thread ran long \
                 without a safepoint poll, or could not get a CPU to reach it"
            ),
            Kind::Serial => format!(
                "a collection of {STALL_FLOOR_MS} ms or more ran on one thread (Serial, \
                 PSOldGen, CMS's foreground collection, G1's full collection before JDK 10)"
            ),
            Kind::PromotionFailure => "the old generation could not take the survivors \
                                       (promotion failed, concurrent mode failure): the \
                                       collection fell back to a full, slow one"
                .to_string(),
            Kind::EvacuationFailure => "the collector ran out of space to copy into \
                                        (to-space exhausted, evacuation failure, a degenerated \
                                        collection)"
                .to_string(),
            Kind::ExplicitGc => "a collection was asked for (System.gc(), jmap/jcmd, JVMTI), \
                                 not needed by the heap"
                .to_string(),
            Kind::HeapTooSmall => format!(
                "a full collection left the heap {:.0} % full or more, or came less than \
                 {BACK_TO_BACK_S} s after another with no other pause between: the live data \
                 hardly fits",
                FULL_HEAP_SHARE * 100.0
            ),
        }
    }
}

/// What a log lacks or says that shapes the advice.
#[derive(Debug, Clone, Copy)]
pub struct Context {
    /// The format is JDK 6-8's.
    pub jdk8: bool,
    /// The log was written by Concord.
    pub concord: bool,
}

/// What to do about a kind of finding.
pub fn advice(kind: Kind, context: Context) -> String {
    match kind {
        Kind::OffCpu | Kind::OutsideCollection => {
            let how = if context.concord {
                "log asynchronously (--gc-log-mode async) or put the log on tmpfs (/dev/shm)"
            } else if context.jdk8 {
                "put the log on tmpfs (-Xloggc:/dev/shm/gc.log), or on JDK 17+ log \
                 asynchronously (-Xlog:async)"
            } else {
                "log asynchronously (-Xlog:async, JDK 17+) or put the log on tmpfs \
                 (-Xlog:gc*:file=/dev/shm/gc.log)"
            };
            format!(
                "take the GC log's write() off the pause: {how}; look for background I/O \
                 (writeback, log rotation) and swapping at those times (sar -d, vmstat si/so), \
                 and for more runnable threads than CPUs"
            )
        }
        Kind::Kernel => "set transparent huge pages to madvise or never (or their defrag to \
                         never) under memory pressure, pre-touch the heap \
                         (-XX:+AlwaysPreTouch), leave memory headroom and turn swap off for \
                         the JVM"
            .to_string(),
        Kind::LongTtsp => "find the thread that is late to the safepoint \
                           (-Xlog:safepoint*=debug, or -XX:+SafepointTimeout with \
                           -XX:SafepointTimeoutDelay=N on JDK 8): long counted loops \
                           (-XX:+UseCountedLoopSafepoints), large array copies, JNI; and check \
                           the machine for CPU overcommit"
            .to_string(),
        Kind::Serial => "use a parallel collector or phase: -XX:+UseParallelGC (with \
                         -XX:+UseParallelOldGC on JDK 6/7) or G1 on JDK 10+; for CMS, start \
                         its concurrent cycle earlier (-XX:CMSInitiatingOccupancyFraction with \
                         -XX:+UseCMSInitiatingOccupancyOnly) so it is never forced to the \
                         foreground"
            .to_string(),
        Kind::PromotionFailure => "give the old generation room: a larger heap or old \
                                   generation, an earlier concurrent cycle \
                                   (-XX:CMSInitiatingOccupancyFraction), or less premature \
                                   promotion (larger survivors, -XX:MaxTenuringThreshold)"
            .to_string(),
        Kind::EvacuationFailure => "give the collector headroom: a larger heap, a higher \
                                    -XX:G1ReservePercent, an earlier marking cycle \
                                    (-XX:InitiatingHeapOccupancyPercent), fewer humongous \
                                    objects (-XX:G1HeapRegionSize); for Shenandoah, a larger \
                                    heap or an earlier cycle"
            .to_string(),
        Kind::ExplicitGc => "find who calls System.gc() (RMI's distributed GC every hour: \
                             -Dsun.rmi.dgc.client.gcInterval and .server.gcInterval; jmap or \
                             jcmd runs); make it concurrent (-XX:+ExplicitGCInvokesConcurrent) \
                             or ignore it (-XX:+DisableExplicitGC)"
            .to_string(),
        Kind::HeapTooSmall => "the live data nearly fills the heap: raise -Xmx, or find what \
                               holds memory (a heap dump: jcmd <pid> GC.heap_dump) — a leak \
                               grows across these collections"
            .to_string(),
    }
}

/// The OS-stall verdict on one pause: its causes and a sentence with the figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    /// Every stall kind that applies, in [`Kind`]'s order (OS stalls first).
    pub causes: Vec<Kind>,
    /// Why, with the figures.
    pub reason: String,
}

/// Everything found on one pause.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// The OS stall, if it is one.
    pub stall: Option<Stall>,
    /// Every kind that applies (stalls included), in [`Kind`]'s order (OS stalls first).
    pub kinds: Vec<Kind>,
}

/// A pause's length as a request sees it: the stop when logged, else real.
pub fn length_ms(pause: &Pause) -> f64 {
    pause.real_ms.max(pause.stopped_ms.unwrap_or(0.0))
}

/// The OS-stall verdict on `pause` for a JVM with `threads` GC threads; `None` if it is no OS
/// stall.
pub fn stall(pause: &Pause, threads: u32) -> Option<Stall> {
    let mut causes = Vec::new();
    let mut reasons = Vec::new();
    if length_ms(pause) < STALL_FLOOR_MS {
        return None;
    }
    if let (Some(user), Some(sys)) = (pause.user_ms, pause.sys_ms) {
        let busy_ms = (user + sys) / f64::from(threads);
        if pause.real_ms >= STALL_FLOOR_MS
            && pause.real_ms > OFF_CPU_FACTOR * busy_ms + CPU_RESOLUTION_MS
        {
            causes.push(Kind::OffCpu);
            reasons.push(format!(
                "real {:.0} ms but user+sys {:.0} ms over {threads} GC thread(s) keeps them \
                 busy {busy_ms:.0} ms: the GC threads waited off the CPU",
                pause.real_ms,
                user + sys
            ));
        }
    }
    if let Some(stopped) = pause.stopped_ms {
        if stopped >= pause.real_ms + STALL_FLOOR_MS && stopped > OFF_CPU_FACTOR * pause.real_ms {
            causes.push(Kind::OutsideCollection);
            let safepoint = pause
                .time_to_safepoint_ms
                .map(|t| format!(" ({t:.3} ms of it reaching the safepoint)"))
                .unwrap_or_default();
            reasons.push(format!(
                "threads stopped {stopped:.0} ms for a {:.0} ms collection{safepoint}: the \
                 pause went on outside the collection",
                pause.real_ms
            ));
        }
    }
    if let (Some(user), Some(sys)) = (pause.user_ms, pause.sys_ms) {
        if sys >= STALL_FLOOR_MS && sys > user {
            causes.push(Kind::Kernel);
            reasons.push(format!(
                "sys {sys:.0} ms above user {user:.0} ms: the GC threads worked in the kernel"
            ));
        }
    }
    (!causes.is_empty()).then(|| Stall {
        causes,
        reason: reasons.join("; "),
    })
}

/// Whether a collection's name says it was asked for.
fn explicit(what: &str) -> bool {
    [
        "System.gc",
        "(System)",
        "Diagnostic Command",
        "Heap Inspection Initiated",
        "Heap Dump Initiated",
        "JvmtiEnv ForceGarbageCollection",
        "WhiteBox",
    ]
    .iter()
    .any(|cause| what.contains(cause))
}

/// Whether a collection is a full one (`Full GC …`, `Pause Full …`, or a young one with a
/// full one inside).
pub fn is_full(pause: &Pause) -> bool {
    pause.what.starts_with("Full GC") || pause.what.contains("Pause Full")
}

/// What came before a pause, for the findings that look back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Previous {
    /// The pause before was a full collection, logged at this uptime (`Some(None)`: no time).
    pub full_at: Option<Option<f64>>,
}

/// Everything found on `pause` for a JVM with `threads` GC threads, after `previous`.
pub fn judge(pause: &Pause, threads: u32, previous: Previous) -> Verdict {
    let stall = stall(pause, threads);
    let mut kinds: Vec<Kind> = stall.as_ref().map_or_else(Vec::new, |s| s.causes.clone());
    if pause
        .time_to_safepoint_ms
        .is_some_and(|t| t >= LONG_TTSP_MS)
    {
        kinds.push(Kind::LongTtsp);
    }
    if pause.serial && pause.real_ms >= STALL_FLOOR_MS {
        kinds.push(Kind::Serial);
    }
    match pause.failure {
        Some("promotion failed" | "concurrent mode failure") => kinds.push(Kind::PromotionFailure),
        Some(_) => kinds.push(Kind::EvacuationFailure),
        None => {}
    }
    if explicit(&pause.what) {
        kinds.push(Kind::ExplicitGc);
    }
    if is_full(pause) && !explicit(&pause.what) {
        let nearly_full = pause.heap.is_some_and(|h| {
            h.capacity_kb > 0 && h.after_kb as f64 >= FULL_HEAP_SHARE * h.capacity_kb as f64
        });
        let back_to_back = previous.full_at.is_some_and(|at| match (at, pause.time_s) {
            (Some(before), Some(now)) => now - before < BACK_TO_BACK_S,
            _ => false,
        });
        if nearly_full || back_to_back {
            kinds.push(Kind::HeapTooSmall);
        }
    }
    kinds.sort();
    kinds.dedup();
    Verdict { stall, kinds }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::{HeapChange, LineRef};

    fn pause(real: f64, user: f64, sys: f64, stopped: Option<f64>) -> Pause {
        let mut p = Pause::new("Pause Young".into(), real, LineRef::default());
        p.time_s = Some(1.0);
        p.user_ms = Some(user);
        p.sys_ms = Some(sys);
        p.stopped_ms = stopped;
        p
    }

    #[test]
    fn fig4_is_off_cpu_and_busy_parallel_pauses_are_not() {
        let fig4 = stall(&pause(11_450.0, 180.0, 10.0, None), 1).unwrap();
        assert_eq!(fig4.causes, [Kind::OffCpu]);
        // 4 threads busy the whole pause: user+sys = 4 × real.
        assert_eq!(stall(&pause(300.0, 1_150.0, 50.0, None), 4), None);
        // The same CPU time over 4 threads explains 300 ms; over 16 it does not.
        assert!(stall(&pause(300.0, 1_150.0, 50.0, None), 16).is_some());
        // Short pauses are never stalls.
        assert_eq!(stall(&pause(40.0, 0.0, 0.0, None), 8), None);
    }

    #[test]
    fn a_stop_far_beyond_the_collection_and_sys_heavy_pauses_are_stalls() {
        // 002 Fig. 8: a 123 ms collection, 1595 ms stopped.
        let fig8 = stall(&pause(123.0, 400.0, 0.0, Some(1_595.0)), 4).unwrap();
        assert_eq!(fig8.causes, [Kind::OutsideCollection]);
        let kernel = stall(&pause(400.0, 100.0, 700.0, None), 2).unwrap();
        assert_eq!(kernel.causes, [Kind::Kernel]);
    }

    #[test]
    fn findings_beyond_stalls_follow_their_thresholds() {
        let none = Previous::default();
        let mut p = pause(60.0, 230.0, 5.0, Some(200.0));
        p.time_to_safepoint_ms = Some(120.0);
        let v = judge(&p, 4, none);
        assert_eq!(v.kinds, [Kind::OutsideCollection, Kind::LongTtsp]);
        p.time_to_safepoint_ms = Some(49.0);
        p.stopped_ms = None;
        assert!(judge(&p, 4, none).kinds.is_empty());

        let mut serial = pause(80.0, 80.0, 0.0, None);
        serial.serial = true;
        assert_eq!(judge(&serial, 1, none).kinds, [Kind::Serial]);
        serial.real_ms = 20.0;
        assert!(
            judge(&serial, 1, none).kinds.is_empty(),
            "short serial pauses are fine"
        );

        let mut failed = pause(10.0, 20.0, 0.0, None);
        failed.failure = Some("concurrent mode failure");
        assert_eq!(judge(&failed, 2, none).kinds, [Kind::PromotionFailure]);
        failed.failure = Some("to-space exhausted");
        assert_eq!(judge(&failed, 2, none).kinds, [Kind::EvacuationFailure]);

        let mut explicit = pause(10.0, 20.0, 0.0, None);
        explicit.what = "Full GC (System.gc())".into();
        explicit.heap = Some(HeapChange {
            before_kb: 100,
            after_kb: 95,
            capacity_kb: 100,
        });
        // Asked for, so a full heap after it is not the heap's fault.
        assert_eq!(judge(&explicit, 2, none).kinds, [Kind::ExplicitGc]);
        explicit.what = "Pause Full (Allocation Failure)".into();
        assert_eq!(judge(&explicit, 2, none).kinds, [Kind::HeapTooSmall]);
        explicit.heap = None;
        assert!(judge(&explicit, 2, none).kinds.is_empty());
        let after_full = Previous {
            full_at: Some(Some(0.0)),
        };
        assert_eq!(judge(&explicit, 2, after_full).kinds, [Kind::HeapTooSmall]);
        let long_ago = Previous {
            full_at: Some(Some(-10.0)),
        };
        assert!(judge(&explicit, 2, long_ago).kinds.is_empty());
    }
}
