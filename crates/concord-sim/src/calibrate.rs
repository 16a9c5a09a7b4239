//! `concord sim calibrate`: measures on this machine what the simulator charges in virtual time
//! (the [`exec::Costs`] table, plus the collector's own per-object and per-byte copy costs) and
//! saves it as a versioned JSON file ([`CalibratedCosts`]) that [`load`] reads back.
//!
//! # Methods
//!
//! Every microbenchmark runs a batch of `n` operations in a loop, times the batch with the
//! monotonic clock and divides; it repeats the batch several times and keeps the **median** as
//! the cost (so that two calibrations in a row agree), and the spread (maximum − minimum over
//! the batches) beside it. The loop's own overhead (an increment, a
//! compare and a branch, well under a nanosecond) is included, not subtracted.
//!
//! * `atomic_load`, `atomic_store`: `AtomicU64::load(Acquire)` / `store(Release)` on an
//!   uncontended, cache-resident word (the value goes through `black_box`).
//! * `atomic_rmw`: `fetch_add(1, AcqRel)`; `cas`: a `compare_exchange(v, v + 1, AcqRel,
//!   Acquire)` that succeeds.
//! * `lock_uncontended`: `std::sync::Mutex` lock and unlock, one thread.
//! * `futex_wait`: `FUTEX_WAIT` with an expected value that does not match, so the kernel
//!   returns at once (`EAGAIN`): the system call alone, not the time asleep.
//! * `futex_wake`: `FUTEX_WAKE` on a word nobody waits on.
//! * `yield_syscall`: `sched_yield()` with no other runnable thread on the CPU.
//! * `sleep_syscall`: `nanosleep` for 1 ns: everything a sleep costs beyond the time asked for
//!   (the system call, the timer slack — 50 µs by default on Linux — and the wake-up).
//! * `spin_loop`: `std::hint::spin_loop()` (`PAUSE` on x86).
//! * `page_fault`: the first write to each 4 KiB page of a fresh anonymous mapping (transparent
//!   huge pages refused for it): the minor fault a collection pays when it copies into heap
//!   memory no collection wrote before (replaced by the same fault measured inside a
//!   collection, below, where that could be measured).
//! * `context_switch`: two threads pinned to the same CPU ping-pong through two futexes; a round
//!   trip is two switches (each with its futex wake and wait), so the cost is half of it.
//! * `wakeup_latency`: a thread on one CPU sleeps in `FUTEX_WAIT`; another thread on another
//!   (otherwise idle) CPU stamps the clock, changes the word and wakes it; the latency is the
//!   woken thread's clock minus the stamp; a batch's figure is the median of its wake-ups (not
//!   the mean: a virtual machine's few very late wake-ups would dominate it). With a single
//!   usable CPU both run on it (the figure then includes a switch, and
//!   [`Machine::cpus_used`] says so).
//!
//! # The copy costs
//!
//! The collector's own work is measured by running real young collections with Concord's
//! library: a heap with one GC thread holds a complete binary tree (binary-trees' shape) of
//! nodes with two references and a payload of `P` bytes, for several `P` and tree sizes; a
//! young collection copies it all. For each shape, `x` is the number of objects, `y` the bytes
//! the collection record says were copied, and `t` the worker's time in root tasks plus
//! stealing (the time spent copying and scanning, without the termination protocol); the
//! median over several collections of the same shape (taken in rounds over all shapes) is
//! kept. The heap is pre-touched, so the copies do not pay first-touch page faults (those are
//! `page_fault`'s). That time also holds the work the simulator charges on its own when it
//! replays the collection: the deque pushes and pops, the forwarding CAS, the claim loads.
//! So each shape's collection is recorded once more (a GC trace, untimed) and replayed in the
//! simulator at 1 GC thread with this calibration's primitive costs and no copy cost; its
//! worker's root-task plus steal time is the point's `s` ([`CopyPoint::sync_ns`]). Then
//! `t − s ≈ a·x + b·y` is fitted
//! by least squares without an intercept ([`fit_copy_cost`]); `a` is `copy_per_object`, `b`
//! is `copy_per_byte`. The fit is only meaningful if the shapes differ in bytes per object
//! (otherwise `x` and `y` are proportional and `a`, `b` cannot be separated), which is why the
//! payloads vary. The residual (root mean square of `t − s − a·x − b·y`, absolute and relative
//! to the mean `t − s`) and `r²` are saved with every point, so a user can judge the fit.
//!
//! # The reach costs and the page fault
//!
//! What a collector's reach of an object costs in the caches ([`exec::reach`]) is measured
//! first, with trees of 32-byte nodes at four sizes a factor 4 apart (from below a typical L2
//! to about a typical L3), each in three layouts: built bottom-up (a depth-first collection
//! reaches nodes next to each other), top-down (its reaches skip over subtrees, lines apart:
//! line misses) and allocated then linked in a random order (pages apart: far accesses). Each
//! is replayed three times, with no reach cost, with line misses at 1 ns and with far accesses
//! at 1 ns, which counts them. The three layouts have the same objects and bytes, so their
//! copy costs cancel: each size gives two equations, `net(layout) − net(bottom-up) = Δline ·
//! line_miss + Δfar · far_access`, solved with both costs at least 0 ([`fit_reach`]). The copy
//! fit above is then of what is left after each point's own reaches are taken off.
//!
//! `page_fault` is measured twice: by the loop above, and inside a collection, as one copy
//! shape collected again into a to-space that was not pretouched: its extra time over the
//! pretouched twin, per minor fault its worker took ([`fault_cost`]). The simulator charges
//! the second where it was measured (a fault there also costs the TLB miss and the lines the
//! zeroed page evicts).

use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use concord::os::{affinity, futex};
use concord::{CollectionKind, GcConfig, GcError, Handle, Mutator, ObjectType, Preset};
use serde::{Deserialize, Serialize};

use crate::exec;

/// The version of [`CalibratedCosts`]' JSON layout this module writes. Version 1 held gross
/// copy costs (the whole collection time per object, deque operations and forwarding CAS
/// included, which the simulator then charged a second time) and is refused; version 2 holds
/// net ones ([`CopyPoint::sync_ns`]) and medians, and is still read (its `far_access` is 0:
/// fitted without it); version 3 adds `far_access` and the copy shapes laid out out of order.
/// Version 4 adds line misses and gives both reach costs at several footprints
/// ([`CopyFit::reach`]).
pub const FORMAT_VERSION: u32 = 6;

/// The oldest version [`load`] reads.
pub const OLDEST_FORMAT_VERSION: u32 = 2;

/// Where `concord sim calibrate` writes its result without `--out`: this file in the current
/// directory.
pub const DEFAULT_FILE: &str = "concord-costs.json";

/// A calibration: this machine's costs, what machine it was, when, and how much the
/// measurements varied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibratedCosts {
    /// [`FORMAT_VERSION`] of the writer.
    pub version: u32,
    /// The machine measured.
    pub machine: Machine,
    /// When, in UTC (`YYYY-MM-DDTHH:MM:SSZ`).
    pub measured_at: String,
    /// Whether the reduced `--quick` iteration counts were used.
    pub quick: bool,
    /// The costs, ns.
    pub costs: MeasuredCosts,
    /// For each cost, the maximum minus the minimum over its batches, ns (for the copy costs:
    /// the fit's root-mean-square residual divided by the mean objects resp. bytes of a
    /// collection, i.e. how far one point typically lies off the fitted line, per unit).
    pub spread: MeasuredCosts,
    /// The copy-cost fit and its points.
    pub copy_fit: CopyFit,
    /// The wake-up latency by how long the sleeper's CPU had been idle, ascending
    /// ([`exec::wake`]; `costs.wakeup_latency` is the one after [`WAKE_IDLE_REFERENCE`]);
    /// empty before version 5 and on one CPU (then every wake-up costs `wakeup_latency`).
    #[serde(default)]
    pub wake: Vec<WakeFit>,
    /// The host's halt polling of idle vCPUs, where the wake-ups show it (version 6 on): the
    /// `wake` points below [`WAKE_PRIME`] are then measured right after a long halt, which
    /// the host does not poll ([`exec::wake`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halt_poll: Option<HaltPollFit>,
}

/// The host's halt polling as the wake-ups show it ([`CalibratedCosts::halt_poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HaltPollFit {
    /// The longest halt still polled in a steady ping-pong, ns (the longest of
    /// [`HALT_POLL_SWEEP`] that was).
    pub max_ns: f64,
    /// A polled wake-up's latency (after [`HALT_POLL_SHORT`] idle, steadily) and the waker's
    /// time in the call, ns.
    pub latency_ns: f64,
    pub waker_ns: f64,
    /// The same short halt's wake-up right after a long one (not polled), ns: the evidence.
    pub unpolled_ns: f64,
}

/// The wake-up latency after one idle duration ([`CalibratedCosts::wake`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WakeFit {
    /// How long the sleeper's CPU was idle before each wake-up, ns.
    pub idle_ns: f64,
    /// The latency (median over batches of each batch's median) and its spread, ns.
    pub latency_ns: f64,
    pub spread_ns: f64,
    /// The waker's time in the wake call, ns (median likewise).
    pub waker_ns: f64,
}

/// The machine a calibration was taken on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Machine {
    /// `model name` from `/proc/cpuinfo` (or `unknown`).
    pub cpu_model: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// CPUs this process may run on.
    pub cpus: usize,
    /// The CPUs the context-switch and wake-up measurements ran on (one CPU: both threads on
    /// it, two: the sleeper and the waker).
    pub cpus_used: Vec<u32>,
}

/// Every cost the simulator charges, in ns (fractions kept; [`CalibratedCosts::exec_costs`]
/// rounds them for the executor).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MeasuredCosts {
    pub atomic_load: f64,
    pub atomic_store: f64,
    pub atomic_rmw: f64,
    pub cas: f64,
    pub lock_uncontended: f64,
    pub futex_wait: f64,
    pub futex_wake: f64,
    pub yield_syscall: f64,
    pub sleep_syscall: f64,
    pub spin_loop: f64,
    pub context_switch: f64,
    pub wakeup_latency: f64,
    /// The collector's work per object copied (beyond its bytes).
    pub copy_per_object: f64,
    /// The collector's work per byte copied.
    pub copy_per_byte: f64,
    /// The first write to a fresh 4 KiB page of anonymous memory (a minor fault).
    pub page_fault: f64,
    /// The collector's read of an object more than a page from the last one it reached
    /// ([`exec::reach::Reach::Far`]), at the largest footprint measured (the whole table is
    /// [`CopyFit::reach`]); 0 in a version 2 file (not measured).
    #[serde(default)]
    pub far_access: f64,
    /// The same for an object more than a line but within a page away
    /// ([`exec::reach::Reach::Line`]); 0 before version 4 (not measured).
    #[serde(default)]
    pub line_miss: f64,
    /// A GC worker's start in a collection with its caches cold ([`exec::Costs::worker_start`]);
    /// 0 where not measured.
    #[serde(default)]
    pub worker_start: f64,
    /// A first-touch fault of an old-generation page inside a collection (a promotion's);
    /// 0 before version 5 (then [`Self::page_fault`] is charged for it).
    #[serde(default)]
    pub page_fault_old: f64,
}

impl MeasuredCosts {
    /// The most each cost may be, ns: a calibration above it describes no real machine (and
    /// would make simulations run for ever). Uncontended atomics, a lock, a spin-wait hint and
    /// the copy per object are at most 10 µs (they take nanoseconds); the system calls and a
    /// context switch at most 1 ms (microseconds); a sleep's overhead (50 µs of timer slack by
    /// default) and a wake-up's latency at most 100 ms; copying at most 100 ns per byte
    /// (10 MB/s; a copy runs at gigabytes per second).
    pub const MAX: MeasuredCosts = MeasuredCosts {
        atomic_load: 1e4,
        atomic_store: 1e4,
        atomic_rmw: 1e4,
        cas: 1e4,
        lock_uncontended: 1e4,
        futex_wait: 1e6,
        futex_wake: 1e6,
        yield_syscall: 1e6,
        sleep_syscall: 1e8,
        spin_loop: 1e4,
        context_switch: 1e6,
        wakeup_latency: 1e8,
        copy_per_object: 1e4,
        copy_per_byte: 100.0,
        page_fault: 1e6,
        far_access: 1e4,
        line_miss: 1e4,
        worker_start: 1e6,
        page_fault_old: 1e6,
    };

    /// The costs that may be 0 (a layout that made no difference).
    const MAY_BE_ZERO: [&'static str; 4] =
        ["far_access", "line_miss", "worker_start", "page_fault_old"];

    /// The executor's cost table from these costs: each rounded to whole ns (the copy costs to
    /// whole ps), at least 1 (the executor needs every operation to advance time).
    pub fn exec_costs(&self) -> exec::Costs {
        let ns = |v: f64| (v.round() as exec::Ns).max(1);
        let ps = |v: f64| ((v * 1000.0).round() as u64).max(1);
        let c = self;
        exec::Costs {
            atomic_load: ns(c.atomic_load),
            atomic_store: ns(c.atomic_store),
            atomic_rmw: ns(c.atomic_rmw),
            cas: ns(c.cas),
            lock_uncontended: ns(c.lock_uncontended),
            futex_wait: ns(c.futex_wait),
            futex_wake: ns(c.futex_wake),
            yield_syscall: ns(c.yield_syscall),
            sleep_syscall: ns(c.sleep_syscall),
            spin_loop: ns(c.spin_loop),
            context_switch: ns(c.context_switch),
            wakeup_latency: ns(c.wakeup_latency),
            wake: exec::wake::WakeCosts::NONE,
            copy_per_object_ps: ps(c.copy_per_object),
            copy_per_byte_ps: ps(c.copy_per_byte),
            page_fault: ns(c.page_fault),
            page_fault_old: if c.page_fault_old > 0.0 {
                ns(c.page_fault_old)
            } else {
                ns(c.page_fault)
            },
            // 0 is a cost the fit may find (the layout made no difference): not charged.
            reach: exec::reach::ReachCosts::flat(
                c.line_miss.round() as exec::Ns,
                c.far_access.round() as exec::Ns,
            ),
            worker_start: c.worker_start.round() as exec::Ns,
        }
    }

    /// Every field with its name, in declaration order.
    pub fn fields(&self) -> [(&'static str, f64); 19] {
        [
            ("atomic_load", self.atomic_load),
            ("atomic_store", self.atomic_store),
            ("atomic_rmw", self.atomic_rmw),
            ("cas", self.cas),
            ("lock_uncontended", self.lock_uncontended),
            ("futex_wait", self.futex_wait),
            ("futex_wake", self.futex_wake),
            ("yield_syscall", self.yield_syscall),
            ("sleep_syscall", self.sleep_syscall),
            ("spin_loop", self.spin_loop),
            ("context_switch", self.context_switch),
            ("wakeup_latency", self.wakeup_latency),
            ("copy_per_object", self.copy_per_object),
            ("copy_per_byte", self.copy_per_byte),
            ("page_fault", self.page_fault),
            ("far_access", self.far_access),
            ("line_miss", self.line_miss),
            ("worker_start", self.worker_start),
            ("page_fault_old", self.page_fault_old),
        ]
    }
}

/// One collection shape of the copy-cost fit (the median of its repetitions).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyPoint {
    /// Objects copied.
    pub objects: f64,
    /// Bytes copied (the collection record's `bytes_copied`).
    pub bytes: f64,
    /// The worker's copying time in the real collection, ns (median over the repetitions).
    pub ns: f64,
    /// What the simulator charges for the same collection besides the copy costs, ns: its
    /// replay at 1 GC thread with the copy costs set to zero and this calibration's
    /// primitive costs (the deque operations, the forwarding CAS, the claim loads). The fit
    /// is of `ns − sync_ns`, so nothing is charged twice.
    pub sync_ns: f64,
    /// The maximum minus the minimum of `ns` over the repetitions.
    pub spread_ns: f64,
    /// Whether the tree's nodes were allocated in a random order (so that the collection's
    /// reaches jump about the heap) rather than in the order the collection reaches them.
    #[serde(default)]
    pub shuffled: bool,
    /// Whether the tree was built top-down (each node before its children, as gcbench builds
    /// its trees), so that the collection's depth-first reaches skip over subtrees.
    #[serde(default)]
    pub preorder: bool,
    /// The reaches the simulator counts as far ([`exec::reach::Reach::Far`]) in its replay
    /// of the collection, and what they cost at the fitted reach costs, ns (taken off
    /// `ns` with `sync_ns`).
    #[serde(default)]
    pub far_accesses: f64,
    #[serde(default)]
    pub far_ns: f64,
    /// The same for line misses ([`exec::reach::Reach::Line`]).
    #[serde(default)]
    pub line_misses: f64,
    #[serde(default)]
    pub line_ns: f64,
    /// The collection's footprint, bytes ([`exec::reach::footprint`]).
    #[serde(default)]
    pub footprint: f64,
    /// Whether the copy costs were fitted to this point (otherwise it measured the reach
    /// costs or the page faults only; false in files before version 4).
    #[serde(default)]
    pub fitted: bool,
    /// The heap was not pretouched, so the collection faulted its to-space in: `faults` minor
    /// faults of the worker (median over the repetitions).
    #[serde(default)]
    pub first_touch: bool,
    #[serde(default)]
    pub faults: f64,
    /// The caches were cleared before each collection, as a mutator's run clears them: the
    /// worker-start shape ([`worker_start_cost`]).
    #[serde(default)]
    pub cold: bool,
    /// Every survivor was promoted (tenuring threshold 0): the old-generation fault shapes.
    #[serde(default)]
    pub promoted: bool,
    /// The cold shape only (0 elsewhere and before version 5): the worker's start after the
    /// parallel phase began and the VM thread's wake after the worker ended, in the real
    /// collections (medians, ns), and the same two in the simulator's replay at a wake-up
    /// latency of 0 (printed by `concord sim calibrate`, not charged).
    #[serde(default)]
    pub start_ns: f64,
    #[serde(default)]
    pub tail_ns: f64,
    #[serde(default)]
    pub sim_start_ns: f64,
    #[serde(default)]
    pub sim_tail_ns: f64,
}

impl CopyPoint {
    /// The time left for the copy costs: the real time minus what the simulator charges
    /// separately for the same work (its own operations, the line misses and far accesses).
    pub fn net_ns(&self) -> f64 {
        self.ns - self.sync_ns - self.far_ns - self.line_ns
    }

    /// The real time minus the simulator's own charges only (before any reach cost).
    fn beyond_sync_ns(&self) -> f64 {
        self.ns - self.sync_ns
    }
}

/// The reach costs at one footprint ([`fit_reach`]), from a tree of that size collected in
/// three layouts.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReachFit {
    /// The trees' footprint, bytes ([`exec::reach::footprint`]).
    pub footprint: f64,
    /// A line miss, ns, and how much it could be off: the spreads of the collections it was
    /// fitted from, per line miss.
    pub line_miss_ns: f64,
    pub line_miss_spread_ns: f64,
    /// A far access, ns, and its spread likewise.
    pub far_access_ns: f64,
    pub far_access_spread_ns: f64,
}

/// The least-squares fit `ns − sync_ns ≈ per_object·objects + per_byte·bytes`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CopyFit {
    pub per_object_ns: f64,
    pub per_byte_ns: f64,
    /// Root mean square of the residuals, ns.
    pub residual_rms_ns: f64,
    /// `residual_rms_ns` over the mean `ns` of the points.
    pub residual_relative: f64,
    /// The share of the variance of `ns` about zero the fit explains (uncentred `r²`, as the
    /// model has no intercept).
    pub r_squared: f64,
    /// The points measured: the copy costs are fitted to those laid out in order, the
    /// far-access cost from the shuffled ones beside their ordered twins.
    pub points: Vec<CopyPoint>,
    /// The far-access cost fitted first, at the largest footprint, and its spread, ns (0 in
    /// a version 2 file; in version 3, the median over the payloads of one footprint).
    #[serde(default)]
    pub far_access_ns: f64,
    #[serde(default)]
    pub far_access_spread_ns: f64,
    /// The reach costs at each footprint measured, ascending ([`fit_reach`]); empty before
    /// version 4 (one far-access cost for every footprint).
    #[serde(default)]
    pub reach: Vec<ReachFit>,
}

/// Fits `ns − sync_ns ≈ a·objects + b·bytes` to `points` ([`CopyPoint::net_ns`]) by least
/// squares with `a, b ≥ 0` (the 2×2 normal equations, or one cost alone where they give a
/// negative one).
/// Errors when there are fewer than two points or the objects and bytes columns are (nearly)
/// proportional, so that `a` and `b` cannot be told apart.
pub fn fit_copy_cost(points: &[CopyPoint]) -> Result<CopyFit> {
    if points.len() < 2 {
        bail!(
            "the copy-cost fit needs at least 2 points, got {}",
            points.len()
        );
    }
    let (mut oo, mut ob, mut bb, mut ot, mut bt, mut tt) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    for p in points {
        let t = p.net_ns();
        oo += p.objects * p.objects;
        ob += p.objects * p.bytes;
        bb += p.bytes * p.bytes;
        ot += p.objects * t;
        bt += p.bytes * t;
        tt += t * t;
    }
    let det = oo * bb - ob * ob;
    // Relative to the product of the norms: 0 for proportional columns, 1 for orthogonal.
    let separable = det > 1e-9 * oo * bb; // false for NaN too
    if !separable {
        bail!(
            "the copy-cost fit cannot separate per-object from per-byte cost: every point has \
             the same bytes per object"
        );
    }
    // Least squares with both costs at least zero (a cost is never negative): the
    // unconstrained solution if it is, otherwise the better of the two one-cost fits, which is
    // where the constrained optimum lies for two unknowns.
    let (mut a, mut b) = ((ot * bb - bt * ob) / det, (oo * bt - ob * ot) / det);
    if a < 0.0 || b < 0.0 {
        let only_a = ((ot / oo).max(0.0), 0.0);
        let only_b = (0.0, (bt / bb).max(0.0));
        let sse = |(a, b): (f64, f64)| tt - 2.0 * (a * ot + b * bt) + a * a * oo + b * b * bb;
        (a, b) = if sse(only_a) <= sse(only_b) {
            only_a
        } else {
            only_b
        };
    }
    let sse: f64 = points
        .iter()
        .map(|p| (p.net_ns() - a * p.objects - b * p.bytes).powi(2))
        .sum();
    let n = points.len() as f64;
    let rms = (sse / n).sqrt();
    let mean = points.iter().map(CopyPoint::net_ns).sum::<f64>() / n;
    Ok(CopyFit {
        per_object_ns: a,
        per_byte_ns: b,
        residual_rms_ns: rms,
        residual_relative: if mean > 0.0 { rms / mean } else { f64::NAN },
        r_squared: if tt > 0.0 { 1.0 - sse / tt } else { f64::NAN },
        points: points.to_vec(),
        far_access_ns: 0.0,
        far_access_spread_ns: 0.0,
        reach: Vec::new(),
    })
}

impl CalibratedCosts {
    /// The executor's cost table from these costs ([`MeasuredCosts::exec_costs`]), with the
    /// reach costs at every footprint measured ([`CopyFit::reach`]) where the file has them.
    pub fn exec_costs(&self) -> exec::Costs {
        let mut costs = self.costs.exec_costs();
        if !self.copy_fit.reach.is_empty() {
            let points: Vec<exec::reach::ReachPoint> = self
                .copy_fit
                .reach
                .iter()
                .map(|r| exec::reach::ReachPoint {
                    footprint: r.footprint.round() as u64,
                    line_miss: r.line_miss_ns.round() as exec::Ns,
                    far_access: r.far_access_ns.round() as exec::Ns,
                })
                .collect();
            // `check` made sure the footprints ascend.
            if let Ok(table) = exec::reach::ReachCosts::new(&points) {
                costs.reach = table;
            }
        }
        let points: Vec<exec::wake::WakePoint> = self
            .wake
            .iter()
            .map(|w| exec::wake::WakePoint {
                idle_ns: w.idle_ns.round() as exec::Ns,
                latency: (w.latency_ns.round() as exec::Ns).max(1),
                waker: w.waker_ns.round() as exec::Ns,
            })
            .collect();
        // `check` made sure the idle durations ascend.
        if let Ok(table) = exec::wake::WakeCosts::new(&points) {
            costs.wake = match self.halt_poll {
                Some(h) => table.with_halt_poll(exec::wake::HaltPoll {
                    max_ns: h.max_ns.round() as exec::Ns,
                    latency: (h.latency_ns.round() as exec::Ns).max(1),
                    waker: h.waker_ns.round() as exec::Ns,
                }),
                None => table,
            };
        }
        costs
    }

    /// The first cost that is not a positive number at most its [`MeasuredCosts::MAX`], or
    /// spread that is not a non-negative finite one, as an error naming it and its range.
    pub fn check(&self) -> Result<()> {
        for ((name, v), (_, max)) in self
            .costs
            .fields()
            .into_iter()
            .zip(MeasuredCosts::MAX.fields())
        {
            // A reach may cost nothing: the fit finds 0 where layout made no difference.
            let zero_ok = MeasuredCosts::MAY_BE_ZERO.contains(&name);
            let least_ok = if zero_ok { v >= 0.0 } else { v > 0.0 };
            if !(v.is_finite() && least_ok && v <= max) {
                let least = if zero_ok { "at least 0" } else { "more than 0" };
                bail!(
                    "cost {name} is {v} ns (allowed: {least} and at most {max} ns, {})",
                    readable_ns(max)
                );
            }
        }
        for (name, v) in self.spread.fields() {
            if !(v.is_finite() && v >= 0.0) {
                bail!("spread of {name} is {v}; a spread must be a non-negative number of ns");
            }
        }
        let max = MeasuredCosts::MAX.far_access;
        for r in &self.copy_fit.reach {
            for (what, v) in [
                ("line miss", r.line_miss_ns),
                ("far access", r.far_access_ns),
            ] {
                if !(v.is_finite() && (0.0..=max).contains(&v)) {
                    bail!(
                        "the {what} at footprint {} bytes is {v} ns (allowed: at least 0 and at \
                         most {max} ns)",
                        r.footprint
                    );
                }
            }
        }
        let footprints: Vec<f64> = self.copy_fit.reach.iter().map(|r| r.footprint).collect();
        if footprints.len() > exec::reach::POINTS
            || footprints.iter().any(|f| !(f.is_finite() && *f >= 1.0))
            || footprints.windows(2).any(|w| w[0] >= w[1])
        {
            bail!(
                "the reach costs' footprints are {footprints:?} (allowed: at most {} of them, \
                 each at least 1 byte, ascending)",
                exec::reach::POINTS
            );
        }
        let max = MeasuredCosts::MAX.wakeup_latency;
        if let Some(h) = &self.halt_poll {
            for (what, v) in [
                ("longest polled halt", h.max_ns),
                ("polled wake-up latency", h.latency_ns),
                ("polled waker's time", h.waker_ns),
                ("unpolled wake-up latency", h.unpolled_ns),
            ] {
                // The window's maximum is one of the halts tried; the rest are latencies.
                let most = if what == "longest polled halt" {
                    HALT_POLL_SWEEP[HALT_POLL_SWEEP.len() - 1].as_nanos() as f64
                } else {
                    max
                };
                if !(v.is_finite() && v >= 0.0 && v <= most) {
                    bail!(
                        "the halt polling's {what} is {v} ns (allowed: at least 0 and at most \
                         {most} ns)"
                    );
                }
            }
        }
        for w in &self.wake {
            if !(w.waker_ns.is_finite() && w.waker_ns >= 0.0 && w.waker_ns <= max) {
                bail!(
                    "the waker's time after {} ns idle is {} ns (allowed: at least 0 and at \
                     most {max} ns)",
                    w.idle_ns,
                    w.waker_ns
                );
            }
            if !(w.latency_ns.is_finite() && w.latency_ns > 0.0 && w.latency_ns <= max) {
                bail!(
                    "the wake-up latency after {} ns idle is {} ns (allowed: more than 0 and at \
                     most {max} ns)",
                    w.idle_ns,
                    w.latency_ns
                );
            }
        }
        let idle: Vec<f64> = self.wake.iter().map(|w| w.idle_ns).collect();
        if idle.len() > exec::wake::POINTS
            || idle.iter().any(|i| !(i.is_finite() && *i >= 1.0))
            || idle.windows(2).any(|w| w[0] >= w[1])
        {
            bail!(
                "the wake-up latencies' idle durations are {idle:?} (allowed: at most {} of \
                 them, each at least 1 ns, ascending)",
                exec::wake::POINTS
            );
        }
        Ok(())
    }

    /// The calibration as pretty JSON, with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("plain data serializes");
        text.push('\n');
        text
    }
}

/// `ns` in the unit that reads best: `10 µs`, `1 ms`, `100 ns`.
pub fn readable_ns(ns: f64) -> String {
    match ns {
        n if n >= 1e9 => format!("{} s", n / 1e9),
        n if n >= 1e6 => format!("{} ms", n / 1e6),
        n if n >= 1e3 => format!("{} µs", n / 1e3),
        n => format!("{n} ns"),
    }
}

/// Reads a calibration written by `concord sim calibrate`, with an error naming the file and
/// what is wrong: missing or unreadable, not a regular file or a pipe, longer than a
/// calibration can be, not JSON of this layout, another version, or a cost outside its range
/// ([`CalibratedCosts::check`]). The file is read as `--config` is
/// ([`concord::config::read_config_file`]: a regular file or a pipe, at most
/// [`concord::config::MAX_CONFIG_FILE_BYTES`]), so a device such as `/dev/zero` is refused
/// before it fills memory.
pub fn load(path: &Path) -> Result<CalibratedCosts> {
    let text = concord::config::read_config_file(path).map_err(|e| {
        let why = match e.kind() {
            std::io::ErrorKind::InvalidData => {
                "it is not UTF-8 text (allowed: the JSON file concord sim calibrate writes)"
                    .to_string()
            }
            _ => e.to_string(),
        };
        anyhow!(
            "cannot read the calibration {}: {why} ({})",
            path.display(),
            how_to_write(path)
        )
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON: not a calibration", path.display()))?;
    let version = value.get("version").and_then(serde_json::Value::as_u64);
    if !version.is_some_and(|v| {
        (u64::from(OLDEST_FORMAT_VERSION)..=u64::from(FORMAT_VERSION)).contains(&v)
    }) {
        let found = version.map_or("no version".to_string(), |v| format!("version {v}"));
        let why = if version == Some(1) {
            ": its copy costs hold the deque operations and the forwarding CAS, which the \
             simulator charges too, so they were counted twice"
        } else {
            ""
        };
        bail!(
            "{} is a calibration of {found}; this concord reads versions \
             {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}{why} (measure again with `concord sim \
             calibrate`)",
            path.display()
        );
    }
    let costs: CalibratedCosts = serde_json::from_value(value)
        .with_context(|| format!("{} is not a valid calibration", path.display()))?;
    costs
        .check()
        .with_context(|| format!("{} is not a valid calibration", path.display()))?;
    Ok(costs)
}

/// How to write a calibration `--costs` can read instead of `path`: to `path` itself when it
/// is a regular file or does not exist, otherwise (a device, a directory, a pipe: what
/// `calibrate --out` would replace or cannot write) to [`DEFAULT_FILE`].
fn how_to_write(path: &Path) -> String {
    let regular_or_missing = match std::fs::metadata(path) {
        Ok(meta) => meta.is_file(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    };
    if regular_or_missing {
        format!(
            "write one with `concord sim calibrate --out {}`",
            path.display()
        )
    } else {
        format!(
            "write one to a regular file with `concord sim calibrate --out {DEFAULT_FILE}` and \
             give that file"
        )
    }
}

/// How much to measure.
#[derive(Clone, Copy, Debug)]
pub struct Effort {
    /// Batches per microbenchmark (the median is kept).
    pub batches: usize,
    /// Scale of the operations per batch (1.0: the full calibration).
    pub scale: f64,
    /// Bytes of the largest tree of the copy-cost fit.
    pub copy_bytes: usize,
    /// Collections per copy shape (the median is kept).
    pub copy_repeats: usize,
}

impl Effort {
    /// The full calibration (about a minute).
    pub const FULL: Effort = Effort {
        batches: 15,
        scale: 1.0,
        copy_bytes: 24 << 20,
        copy_repeats: 7,
    };
    /// `--quick`: for tests; the same measurements with far fewer iterations.
    pub const QUICK: Effort = Effort {
        batches: 3,
        scale: 0.02,
        copy_bytes: 2 << 20,
        copy_repeats: 3,
    };

    fn ops(&self, full: usize) -> usize {
        ((full as f64 * self.scale) as usize).max(10)
    }
}

/// One cost: the median over batches and the spread (maximum − minimum).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The median.
    pub median: f64,
    /// The maximum minus the minimum.
    pub spread: f64,
}

impl Measured {
    fn of(batches: &[f64]) -> Measured {
        let min = batches.iter().copied().fold(f64::INFINITY, f64::min);
        let max = batches.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Measured {
            median: median(batches),
            spread: max - min,
        }
    }
}

/// The median of `values` (the mean of the middle two for an even count; NaN for none).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Runs `batch(n)` `effort.batches` times, each timed, and returns ns per operation.
fn per_op(effort: &Effort, n: usize, mut batch: impl FnMut(usize)) -> Measured {
    batch(n.min(1_000)); // warm up caches, the branch predictor and the page of the data
    let times: Vec<f64> = (0..effort.batches)
        .map(|_| {
            let start = Instant::now();
            batch(n);
            start.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    Measured::of(&times)
}

/// Measures everything and returns the calibration. `progress` is told each measurement's name
/// before it starts.
pub fn calibrate(effort: Effort, mut progress: impl FnMut(&str)) -> Result<CalibratedCosts> {
    let cpus = affinity::current_thread_affinity().context("reading this thread's CPU set")?;
    let atomic = AtomicU64::new(0);
    progress("atomics");
    let load = per_op(&effort, effort.ops(20_000_000), |n| {
        for _ in 0..n {
            black_box(black_box(&atomic).load(Ordering::Acquire));
        }
    });
    let store = per_op(&effort, effort.ops(20_000_000), |n| {
        for i in 0..n {
            black_box(&atomic).store(i as u64, Ordering::Release);
        }
    });
    let rmw = per_op(&effort, effort.ops(10_000_000), |n| {
        for _ in 0..n {
            black_box(black_box(&atomic).fetch_add(1, Ordering::AcqRel));
        }
    });
    let cas = per_op(&effort, effort.ops(10_000_000), |n| {
        let a = black_box(&atomic);
        for _ in 0..n {
            let v = a.load(Ordering::Relaxed);
            black_box(a.compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Acquire)).ok();
        }
    });
    progress("lock");
    let mutex = Mutex::new(0u64);
    let lock = per_op(&effort, effort.ops(10_000_000), |n| {
        for _ in 0..n {
            *black_box(&mutex).lock().unwrap_or_else(|e| e.into_inner()) += 1;
        }
    });
    progress("system calls");
    let word = AtomicU32::new(0);
    let futex_wait = per_op(&effort, effort.ops(1_000_000), |n| {
        for _ in 0..n {
            futex::wait(&word, 1, None); // the word is 0: returns at once
        }
    });
    let futex_wake = per_op(&effort, effort.ops(1_000_000), |n| {
        for _ in 0..n {
            futex::wake(&word, 1);
        }
    });
    let yield_syscall = per_op(&effort, effort.ops(1_000_000), |n| {
        for _ in 0..n {
            // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
            unsafe { libc::sched_yield() };
        }
    });
    let sleep = per_op(&effort, effort.ops(20_000), |n| {
        let one_ns = libc::timespec {
            tv_sec: 0,
            tv_nsec: 1,
        };
        for _ in 0..n {
            // SAFETY: `one_ns` is a valid timespec; the remainder pointer may be null.
            unsafe { libc::nanosleep(&one_ns, std::ptr::null_mut()) };
        }
    });
    let spin = per_op(&effort, effort.ops(20_000_000), |n| {
        for _ in 0..n {
            std::hint::spin_loop();
        }
    });
    progress("page faults");
    let page_fault = page_faults(&effort)?;
    progress("context switch");
    let Some(&same_cpu) = cpus.first() else {
        bail!("this thread may run on no CPU");
    };
    let context_switch = ping_pong(&effort, effort.ops(200_000), same_cpu)?;
    progress("wake-up latency");
    let (waker_cpu, sleeper_cpu) = (same_cpu, *cpus.get(1).unwrap_or(&same_cpu));
    let reference = wakeup_latency(
        &effort,
        effort.ops(5_000),
        waker_cpu,
        sleeper_cpu,
        WAKE_IDLE_REFERENCE,
        None,
    )?;
    let wakeup = reference.0;
    let mut wake = Vec::new();
    let mut halt_poll = None;
    if sleeper_cpu != waker_cpu {
        halt_poll = halt_polling(&effort, waker_cpu, sleeper_cpu)?;
        for idle in WAKE_IDLE {
            // With halt polling, the table is of the wake-ups the host did not poll: a short
            // halt's only right after a long one.
            let prime = (halt_poll.is_some() && idle < WAKE_PRIME).then_some(WAKE_PRIME);
            let (latency, waker) = if idle == WAKE_IDLE_REFERENCE && prime.is_none() {
                reference
            } else {
                let n = wake_samples(&effort, idle + prime.unwrap_or_default());
                wakeup_latency(&effort, n, waker_cpu, sleeper_cpu, idle, prime)?
            };
            wake.push(WakeFit {
                idle_ns: idle.as_nanos() as f64,
                latency_ns: latency.median,
                spread_ns: latency.spread,
                waker_ns: waker.median,
            });
        }
    }
    let both = |m: fn(&Measured) -> f64| MeasuredCosts {
        atomic_load: m(&load),
        atomic_store: m(&store),
        atomic_rmw: m(&rmw),
        cas: m(&cas),
        lock_uncontended: m(&lock),
        futex_wait: m(&futex_wait),
        futex_wake: m(&futex_wake),
        yield_syscall: m(&yield_syscall),
        sleep_syscall: m(&sleep),
        spin_loop: m(&spin),
        context_switch: m(&context_switch),
        wakeup_latency: m(&wakeup),
        copy_per_object: 0.0,
        copy_per_byte: 0.0,
        page_fault: m(&page_fault),
        far_access: 0.0,
        line_miss: 0.0,
        worker_start: 0.0,
        page_fault_old: 0.0,
    };
    let mut costs = both(|m| m.median);
    // The simulator's own charges for the calibration collections, at these primitive costs
    // and no copy cost: what the copy costs must not hold a second time.
    let mut charged = costs.exec_costs();
    charged.copy_per_object_ps = 0;
    charged.copy_per_byte_ps = 0;
    // The calibration heap is pretouched: its collections fault no page in.
    charged.page_fault = 0;
    progress("copy costs (young collections, then their replays)");
    let fit = copy_fit(&effort, &charged)?;
    let fitted: Vec<&CopyPoint> = fit.points.iter().filter(|p| p.fitted).collect();
    let mean = |f: fn(&CopyPoint) -> f64| {
        fitted.iter().map(|&p| f(p)).sum::<f64>() / fitted.len().max(1) as f64
    };
    let (mean_objects, mean_bytes) = (mean(|p| p.objects), mean(|p| p.bytes));
    costs.copy_per_object = fit.per_object_ns;
    costs.copy_per_byte = fit.per_byte_ns;
    // A fault inside a collection (which also misses the TLB and evicts lines the copy uses)
    // costs more than in the microbenchmark's loop: the simulator charges it there.
    let in_collection = fault_cost(&fit.points, false);
    let in_old = fault_cost(&fit.points, true);
    let largest = fit.reach.last().copied();
    costs.far_access = fit.far_access_ns;
    costs.line_miss = largest.map_or(0.0, |r| r.line_miss_ns);
    let mut spread = both(|m| m.spread);
    spread.copy_per_object = fit.residual_rms_ns / mean_objects;
    spread.copy_per_byte = fit.residual_rms_ns / mean_bytes;
    spread.far_access = fit.far_access_spread_ns;
    spread.line_miss = largest.map_or(0.0, |r| r.line_miss_spread_ns);
    if let Some(fault) = in_collection.filter(|f| f.median > 0.0) {
        costs.page_fault = fault.median;
        spread.page_fault = fault.spread;
    }
    if let Some(fault) = in_old.filter(|f| f.median > 0.0) {
        costs.page_fault_old = fault.median;
        spread.page_fault_old = fault.spread;
    }
    if let Some(start) = worker_start_cost(&fit) {
        costs.worker_start = start.median;
        spread.worker_start = start.spread;
    }
    let mut used = vec![same_cpu];
    if sleeper_cpu != same_cpu {
        used.push(sleeper_cpu);
    }
    let result = CalibratedCosts {
        version: FORMAT_VERSION,
        machine: Machine {
            cpu_model: cpu_model(),
            kernel: kernel_release(),
            cpus: cpus.len(),
            cpus_used: used,
        },
        measured_at: utc_date(SystemTime::now()),
        quick: effort.scale < 1.0,
        costs,
        spread,
        copy_fit: fit,
        wake,
        halt_poll,
    };
    result
        .check()
        .context("the measurements gave an impossible cost (the machine was too busy?)")?;
    Ok(result)
}

/// Bytes of the region whose pages [`page_faults`] touches, per batch.
const FAULT_REGION: usize = 32 << 20;

/// The first write to each 4 KiB page of a fresh private anonymous mapping of
/// [`FAULT_REGION`] bytes (`effort.scale` of it with `--quick`), transparent huge pages
/// refused for it (`MADV_NOHUGEPAGE`, as the heap's pages are 4 KiB unless THP is asked for),
/// timed per page; one mapping per batch.
fn page_faults(effort: &Effort) -> Result<Measured> {
    const PAGE: usize = 4096;
    let bytes = ((FAULT_REGION as f64 * effort.scale) as usize).max(64 * PAGE) / PAGE * PAGE;
    let batch = || -> Result<f64> {
        let mapping = concord::os::vm::ZeroedMapping::new(bytes)
            .with_context(|| format!("cannot map {bytes} bytes to time page faults"))?;
        let base = mapping.base();
        // SAFETY: `base..base + bytes` is the mapping just made; advice cannot harm it (a
        // refusal leaves THP as the system sets it, which the figure then includes).
        unsafe { libc::madvise(base as *mut libc::c_void, bytes, libc::MADV_NOHUGEPAGE) };
        let start = Instant::now();
        for offset in (0..bytes).step_by(PAGE) {
            // SAFETY: inside the writable mapping, which lives until the end of the batch.
            unsafe { std::ptr::write_volatile((base + offset) as *mut u8, 1) };
        }
        Ok(start.elapsed().as_nanos() as f64 / (bytes / PAGE) as f64)
    };
    let times = (0..effort.batches)
        .map(|_| batch())
        .collect::<Result<Vec<f64>>>()?;
    Ok(Measured::of(&times))
}

/// Half the round trip of two threads pinned to `cpu` handing a token back and forth through
/// futexes, per batch of `n` round trips.
fn ping_pong(effort: &Effort, n: usize, cpu: u32) -> Result<Measured> {
    // The token: even, the main thread's turn; odd, the partner's.
    let token = Arc::new(AtomicU32::new(0));
    let partner_token = Arc::clone(&token);
    let total = n * (effort.batches + 1);
    let partner = std::thread::spawn(move || -> std::io::Result<()> {
        affinity::set_current_thread_affinity(&[cpu])?;
        for i in 0..total as u32 {
            let mine = 2 * i + 1;
            while partner_token.load(Ordering::Acquire) != mine {
                futex::wait(&partner_token, mine - 1, None);
            }
            partner_token.store(mine + 1, Ordering::Release);
            futex::wake(&partner_token, 1);
        }
        Ok(())
    });
    let main_cpus = affinity::current_thread_affinity().context("reading this thread's CPUs")?;
    affinity::set_current_thread_affinity(&[cpu])
        .with_context(|| format!("pinning to CPU {cpu}"))?;
    let mut round = 0u32;
    let mut batch = |count: usize| {
        for _ in 0..count {
            token.store(2 * round + 1, Ordering::Release);
            futex::wake(&token, 1);
            let back = 2 * round + 2;
            while token.load(Ordering::Acquire) != back {
                futex::wait(&token, back - 1, None);
            }
            round += 1;
        }
    };
    batch(n);
    let times: Vec<f64> = (0..effort.batches)
        .map(|_| {
            let start = Instant::now();
            batch(n);
            start.elapsed().as_nanos() as f64 / n as f64 / 2.0
        })
        .collect();
    affinity::set_current_thread_affinity(&main_cpus).context("restoring this thread's CPUs")?;
    partner
        .join()
        .map_err(|_| anyhow::anyhow!("the context-switch partner thread panicked"))?
        .with_context(|| format!("pinning the partner thread to CPU {cpu}"))?;
    Ok(Measured::of(&times))
}

/// The idle time before the wake-ups of the flat [`MeasuredCosts::wakeup_latency`]: long
/// enough for the sleeper to block in the kernel and its CPU to go idle.
pub const WAKE_IDLE_REFERENCE: Duration = Duration::from_micros(200);

/// The idle times of the wake-up table ([`CalibratedCosts::wake`]): from a CPU that just went
/// idle to one idle for as long as a mutator runs between two collections.
const WAKE_IDLE: [Duration; 6] = [
    Duration::from_micros(50),
    WAKE_IDLE_REFERENCE,
    Duration::from_millis(1),
    Duration::from_millis(5),
    Duration::from_millis(20),
    Duration::from_millis(50),
];

/// Wake-ups per batch after `idle` at the table's other points: about 3 s of them in all (at
/// full effort), at least 3 per batch.
fn wake_samples(effort: &Effort, idle: Duration) -> usize {
    let budget = 3e9 * effort.scale / (idle.as_nanos() as f64 + 50e3) / (effort.batches + 1) as f64;
    (budget as usize).clamp(3, effort.ops(5_000))
}

/// The long halt a measured short one follows when the host polls halts ([`wakeup_latency`]'s
/// `prime`): longer than any halt a host polls (KVM's default maximum is 200 µs).
pub const WAKE_PRIME: Duration = Duration::from_millis(2);

/// The short halt that tells whether the host polls: its wake-up steadily and right after
/// [`WAKE_PRIME`].
pub const HALT_POLL_SHORT: Duration = Duration::from_micros(20);

/// The halts tried, steadily, for the longest the host polls.
pub const HALT_POLL_SWEEP: [Duration; 6] = [
    Duration::from_micros(50),
    Duration::from_micros(100),
    Duration::from_micros(150),
    Duration::from_micros(200),
    Duration::from_micros(300),
    Duration::from_micros(500),
];

/// How much slower a short halt's wake-up must be right after a long halt than steadily for
/// the host to count as polling (below it, the difference is noise: no halt polling).
const HALT_POLL_EVIDENCE: f64 = 1.25;

/// Whether the host polls halted vCPUs, and how: a short halt's wake-up steadily (polled, if
/// the host polls) and right after a long halt (not polled). If the second is at least
/// [`HALT_POLL_EVIDENCE`] times the first, the longest halt of [`HALT_POLL_SWEEP`] whose steady
/// wake-up is nearer the polled latency than the unpolled one is the window's maximum.
fn halt_polling(effort: &Effort, waker: u32, sleeper: u32) -> Result<Option<HaltPollFit>> {
    let short = HALT_POLL_SHORT;
    let n = wake_samples(effort, short);
    let (steady, steady_waker) = wakeup_latency(effort, n, waker, sleeper, short, None)?;
    let n = wake_samples(effort, short + WAKE_PRIME);
    let (unpolled, _) = wakeup_latency(effort, n, waker, sleeper, short, Some(WAKE_PRIME))?;
    if unpolled.median < HALT_POLL_EVIDENCE * steady.median {
        return Ok(None);
    }
    let between = (steady.median + unpolled.median) / 2.0;
    // The short halt itself was polled.
    let mut max_ns = short.as_nanos() as f64;
    for halt in HALT_POLL_SWEEP {
        let n = wake_samples(effort, halt);
        let (latency, _) = wakeup_latency(effort, n, waker, sleeper, halt, None)?;
        if latency.median >= between {
            break;
        }
        max_ns = halt.as_nanos() as f64;
    }
    Ok(Some(HaltPollFit {
        max_ns,
        latency_ns: steady.median,
        waker_ns: steady_waker.median,
        unpolled_ns: unpolled.median,
    }))
}

/// A futex wake-up from `waker_cpu` of a thread asleep on `sleeper_cpu`, the sleeper's CPU idle
/// for `idle` before each: the time until the woken thread runs, and the waker's own time in
/// the wake call (on a virtual machine, waking an idle vCPU exits to the hypervisor). Each
/// batch gives the median of `n` wake-ups. The median, not the mean: on a virtual machine a few
/// wake-ups of a batch take milliseconds (the hypervisor ran another guest on the idle vCPU),
/// and the simulator charges every wake-up one latency, which should be the typical one.
///
/// With `prime`, each measured wake-up follows another one after `prime` idle (not measured),
/// so that the measured halt comes right after a long one.
fn wakeup_latency(
    effort: &Effort,
    n: usize,
    waker_cpu: u32,
    sleeper_cpu: u32,
    idle: Duration,
    prime: Option<Duration>,
) -> Result<(Measured, Measured)> {
    let epoch = Instant::now();
    let word = Arc::new(AtomicU32::new(0));
    let stamp = Arc::new(AtomicU64::new(0));
    let per_sample = if prime.is_some() { 2 } else { 1 };
    let total = n * per_sample * (effort.batches + 1);
    let latencies: Arc<Vec<AtomicU64>> = Arc::new((0..total).map(|_| AtomicU64::new(0)).collect());
    let (w, s, l) = (
        Arc::clone(&word),
        Arc::clone(&stamp),
        Arc::clone(&latencies),
    );
    let sleeper = std::thread::spawn(move || -> std::io::Result<()> {
        affinity::set_current_thread_affinity(&[sleeper_cpu])?;
        for i in 0..total as u32 {
            while w.load(Ordering::Acquire) == i {
                futex::wait(&w, i, None);
            }
            let now = epoch.elapsed().as_nanos() as u64;
            l[i as usize].store(
                now.saturating_sub(s.load(Ordering::Acquire)),
                Ordering::Release,
            );
        }
        Ok(())
    });
    let main_cpus = affinity::current_thread_affinity().context("reading this thread's CPUs")?;
    affinity::set_current_thread_affinity(&[waker_cpu])
        .with_context(|| format!("pinning to CPU {waker_cpu}"))?;
    let mut next = 0u32;
    let mut batch = |count: usize| -> (f64, f64) {
        let mut measured = Vec::with_capacity(count);
        let mut calls = Vec::with_capacity(count);
        for _ in 0..count {
            if let Some(prime) = prime {
                std::thread::sleep(prime);
                next += 1;
                word.store(next, Ordering::Release);
                futex::wake(&word, 1);
            }
            measured.push(next as usize);
            std::thread::sleep(idle);
            let called = epoch.elapsed().as_nanos() as u64;
            stamp.store(called, Ordering::Release);
            next += 1;
            word.store(next, Ordering::Release);
            futex::wake(&word, 1);
            calls.push((epoch.elapsed().as_nanos() as u64).saturating_sub(called) as f64);
        }
        // Wait until the sleeper has accounted for the last wake-up (a late one: up to 1 s).
        let last = &latencies[next as usize - 1];
        for _ in 0..1000 {
            std::thread::sleep(Duration::from_millis(1));
            if last.load(Ordering::Acquire) != 0 {
                break;
            }
        }
        let mine: Vec<f64> = measured
            .iter()
            .map(|&i| latencies[i].load(Ordering::Acquire) as f64)
            .collect();
        (median(&mine), median(&calls))
    };
    batch(n);
    let (times, calls): (Vec<f64>, Vec<f64>) = (0..effort.batches).map(|_| batch(n)).unzip();
    affinity::set_current_thread_affinity(&main_cpus).context("restoring this thread's CPUs")?;
    sleeper
        .join()
        .map_err(|_| anyhow::anyhow!("the wake-up latency sleeper thread panicked"))?
        .with_context(|| format!("pinning the sleeper thread to CPU {sleeper_cpu}"))?;
    Ok((Measured::of(&times), Measured::of(&calls)))
}

/// The payloads of the copy-cost trees' nodes, bytes: from reference-only nodes to nodes that
/// are mostly data, so that bytes per object varies by more than tenfold.
const COPY_PAYLOADS: [u16; 4] = [0, 48, 240, 1008];

/// The payload of the reach-cost trees' nodes, bytes: a node of 32 bytes, as gcbench's and
/// binary-trees' are.
const REACH_PAYLOAD: u16 = 8;

/// The reach-cost trees' sizes, as fractions of `Effort::copy_bytes`: footprints a factor 4
/// apart from below a typical L2, then a factor 2 (a tree's node count is a power of two)
/// where an L3 fills up and the costs climb fastest.
const REACH_SIZES: [usize; 5] = [64, 16, 4, 2, 1];

/// The copy shape whose collection is measured again without pretouching ([`fault_cost`]):
/// payload 48 at a quarter of the largest size.
const FAULT_SHAPE: usize = 2;

/// The worker-start shape's tree depth: 63 nodes.
const START_DEPTH: u32 = 5;

/// Bytes written before each of the worker-start shape's collections, to clear the caches as
/// a mutator's run between two collections does (more than a typical L2, a fraction of an L3).
const CACHE_CLEAR_BYTES: usize = 8 << 20;

/// How a calibration tree's nodes are laid out in the heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// Built bottom-up (each node after its children): a depth-first collection reaches
    /// nodes next to each other.
    Ordered,
    /// Built top-down (each node before its children): the collection's reaches skip over
    /// subtrees, lines apart within a page at the bottom of the tree.
    Preorder,
    /// Allocated first and then linked in a random order: nearly every reach is pages away.
    Shuffled,
}

/// One tree shape of the copy-cost fit.
#[derive(Clone, Copy)]
struct Shape {
    node: ObjectType,
    /// The node's payload, bytes.
    payload: u16,
    depth: u32,
    layout: Layout,
    /// Whether the copy costs are fitted to it (otherwise it is one of the reach-cost trees).
    copy_fit: bool,
    /// Whether the heap is left unpretouched (the page-fault shape).
    first_touch: bool,
    /// Whether the caches are cleared before each collection, the worker pinned to one CPU
    /// and the VM thread to another (the worker-start and wake-up shape).
    cold: bool,
    /// Whether every survivor is promoted (the old-generation fault shapes).
    promoted: bool,
}

impl Shape {
    /// The young generation its heap has and the collections it runs in each round: the copy
    /// and fault shapes one in a heap sized for the largest tree (four times it, at least 16
    /// MiB), as they always were; the reach shapes a heap four times their own tree (so that a
    /// small one does not pretouch a large heap) and as many collections as fit the largest
    /// tree's bytes, from 3 to 8 (a small tree's collection is short, and noisy).
    fn heap(&self, effort: &Effort) -> (usize, usize) {
        let at_least = 16 << 20;
        if self.cold {
            return (at_least, 8);
        }
        if self.copy_fit || self.first_touch || self.promoted {
            return ((4 * effort.copy_bytes).max(at_least), 1);
        }
        let bytes = self.tree_bytes();
        (
            (4 * bytes).max(at_least),
            (effort.copy_bytes / bytes.max(1)).clamp(3, 8),
        )
    }

    /// The tree's bytes, approximately (see [`depth_for`]).
    fn tree_bytes(&self) -> usize {
        ((2usize << self.depth) - 1) * (8 + 16 + usize::from(self.payload))
    }
}

/// The depth of the complete binary tree of nodes with `payload` bytes closest below `bytes`.
fn depth_for(payload: u16, bytes: usize) -> u32 {
    // Header and two references, rounded as the heap lays objects out, approximately.
    let node_bytes = 8 + 16 + usize::from(payload);
    let nodes = (bytes / node_bytes).max(64);
    (usize::BITS - 1 - nodes.leading_zeros()).max(2) - 1
}

/// Runs young collections of binary trees and fits the net copy and reach costs. The copy
/// shapes are each payload in [`COPY_PAYLOADS`] at two sizes (the largest `effort.copy_bytes`,
/// and a quarter of that), laid out in order; the reach shapes are nodes of [`REACH_PAYLOAD`]
/// at each of [`REACH_SIZES`] in each [`Layout`]. Each shape's real time is the median of
/// `effort.copy_repeats` collections, taken in rounds over all shapes (so that a slow spell of
/// the machine falls on every shape, not on one), and its `sync_ns` is the simulator's replay
/// of a recording of the same collection under `charged` (the primitive costs, no copy or
/// reach cost). The reach costs are fitted first ([`fit_reach`]), then the copy costs to the
/// copy shapes less what their own reaches cost.
fn copy_fit(effort: &Effort, charged: &exec::Costs) -> Result<CopyFit> {
    let mut shapes = Vec::new();
    for payload in COPY_PAYLOADS {
        for target in [effort.copy_bytes / 4, effort.copy_bytes] {
            shapes.push(Shape {
                node: ObjectType::fixed(2, payload),
                payload,
                depth: depth_for(payload, target),
                layout: Layout::Ordered,
                copy_fit: true,
                first_touch: false,
                cold: false,
                promoted: false,
            });
        }
    }
    // A copy shape again, into a to-space no collection wrote: what a first-touch fault costs
    // inside a collection (beside its pretouched twin, per fault); then the same tree promoted,
    // into a pretouched old generation and into one no collection wrote.
    let fault_shape = Shape {
        copy_fit: false,
        ..shapes[FAULT_SHAPE]
    };
    shapes.push(Shape {
        first_touch: true,
        ..fault_shape
    });
    shapes.push(Shape {
        promoted: true,
        ..fault_shape
    });
    shapes.push(Shape {
        promoted: true,
        first_touch: true,
        ..fault_shape
    });
    // A tree of a few dozen nodes, the caches cleared before each collection, placed as a
    // pinned validation run is: what a worker's start costs beyond its work (a small
    // collection is mostly that), and the two wake-ups around the parallel phase.
    shapes.push(Shape {
        depth: START_DEPTH,
        cold: true,
        ..fault_shape
    });
    for fraction in REACH_SIZES {
        for layout in [Layout::Ordered, Layout::Preorder, Layout::Shuffled] {
            shapes.push(Shape {
                node: ObjectType::fixed(2, REACH_PAYLOAD),
                payload: REACH_PAYLOAD,
                depth: depth_for(REACH_PAYLOAD, effort.copy_bytes / fraction),
                layout,
                copy_fit: false,
                first_touch: false,
                cold: false,
                promoted: false,
            });
        }
    }
    let mut runs: Vec<Vec<CopyPoint>> = vec![Vec::new(); shapes.len()];
    for _ in 0..effort.copy_repeats {
        for (shape, runs) in shapes.iter().zip(&mut runs) {
            let (young, collections) = shape.heap(effort);
            runs.extend(copy_runs(*shape, young, collections, None)?);
        }
    }
    let scratch = std::env::temp_dir().join(format!(
        "concord-calibrate-trace-{}.trace",
        std::process::id()
    ));
    let mut points = Vec::with_capacity(shapes.len());
    for (shape, runs) in shapes.iter().zip(runs) {
        let times: Vec<f64> = runs.iter().map(|p| p.ns).collect();
        let mut point = runs[0];
        point.ns = median(&times);
        point.spread_ns = Measured::of(&times).spread;
        let of = |f: fn(&CopyPoint) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
        point.faults = of(|p| p.faults);
        point.start_ns = of(|p| p.start_ns);
        point.tail_ns = of(|p| p.tail_ns);
        let recorded = copy_runs(*shape, shape.heap(effort).0, 1, Some(&scratch));
        let replayed = recorded.and_then(|_| replayed(&scratch, charged, shape.cold));
        let _ = std::fs::remove_file(&scratch);
        let r = replayed?;
        point.sync_ns = r.sync_ns;
        point.line_misses = r.line_misses;
        point.far_accesses = r.far_accesses;
        point.footprint = r.footprint;
        if shape.cold {
            (point.sim_start_ns, point.sim_tail_ns) = (r.start_ns, r.tail_ns);
        }
        points.push(point);
    }
    let reach = fit_reach(&points);
    let table = reach_table(&reach);
    for p in &mut points {
        let (line, far) = table.at(p.footprint.round() as u64);
        p.line_ns = line as f64 * p.line_misses;
        p.far_ns = far as f64 * p.far_accesses;
    }
    let copy_points: Vec<CopyPoint> = points.iter().filter(|p| p.fitted).copied().collect();
    let mut fit = fit_copy_cost(&copy_points)?;
    fit.points = points;
    if let Some(largest) = reach.last() {
        fit.far_access_ns = largest.far_access_ns;
        fit.far_access_spread_ns = largest.far_access_spread_ns;
    }
    fit.reach = reach;
    if !(fit.per_object_ns > 0.0 || fit.per_byte_ns > 0.0) {
        bail!(
            "the simulator charges more for the calibration's collections than they took \
             ({:.0} ns of {:.0} ns for the first shape), so no copy cost is left to fit: \
             measure again on a quieter machine",
            fit.points[0].sync_ns,
            fit.points[0].ns
        );
    }
    // A cost the constrained fit put at zero is kept at the smallest the file holds (the
    // executor charges whole picoseconds); the residual says how well the fit did.
    fit.per_object_ns = fit.per_object_ns.max(0.001);
    fit.per_byte_ns = fit.per_byte_ns.max(0.000_001);
    Ok(fit)
}

/// The executor's table of `reach` (whole ns; footprints that do not ascend dropped).
fn reach_table(reach: &[ReachFit]) -> exec::reach::ReachCosts {
    let mut points: Vec<exec::reach::ReachPoint> = Vec::new();
    for r in reach {
        let footprint = r.footprint.round() as u64;
        if footprint > points.last().map_or(0, |p| p.footprint) {
            points.push(exec::reach::ReachPoint {
                footprint,
                line_miss: r.line_miss_ns.round() as exec::Ns,
                far_access: r.far_access_ns.round() as exec::Ns,
            });
        }
    }
    points.truncate(exec::reach::POINTS);
    exec::reach::ReachCosts::new(&points).unwrap_or(exec::reach::ReachCosts::NONE)
}

/// What the simulator makes of a calibration collection's recording ([`replayed`]).
struct Replayed {
    /// Its charges besides the copy and reach costs, ns.
    sync_ns: f64,
    /// The reaches it counts as line misses and as far accesses.
    line_misses: f64,
    far_accesses: f64,
    /// The collection's footprint, bytes.
    footprint: f64,
    /// The worker's start after the parallel phase began and the phase's end after the
    /// worker's, ns, at a wake-up latency of 0 (0 unless `placed`).
    start_ns: f64,
    tail_ns: f64,
}

/// What the simulator charges, besides the copy costs, to replay the one collection recorded
/// in the GC trace at `trace` (its single worker's time in root tasks plus stealing, the
/// figure [`copy_runs`] takes from the real collection, on a simulated machine of 2 CPUs: the
/// VM thread and the worker each on its own) under `costs` without reach costs, and the
/// reaches it counts: the replay is run again with line misses, then far accesses, at 1 ns.
/// With `placed` (the cold shape), the worker is pinned as in the real collection (static
/// affinity) and the wake-ups before and after the worker are measured at a latency of 0.
#[cfg(not(test))]
fn replayed(trace: &Path, costs: &exec::Costs, placed: bool) -> Result<Replayed> {
    use crate::exec::reach::ReachCosts;
    use crate::machine::Machine as SimMachine;
    use crate::replay::driver::{self, SchedModel, SimSetup};
    use concord::telemetry::WorkerPhaseStats;
    let trace = crate::replay::load_trace(trace)
        .map_err(|e| anyhow!("reading the calibration's GC trace: {e}"))?;
    if trace.collections.len() != 1 {
        bail!(
            "the calibration's GC trace holds {} collections, not the one made",
            trace.collections.len()
        );
    }
    let footprint = trace.collections[0].footprint() as f64;
    let collections = std::sync::Arc::new(trace.collections);
    let config = GcConfig::for_preset(Preset::Optimized);
    let gc_affinity = if placed {
        concord::os::policy::GcAffinity::Static
    } else {
        concord::os::policy::GcAffinity::None
    };
    let simulate = |costs: exec::Costs| -> Result<(WorkerPhaseStats, f64)> {
        let setup = SimSetup {
            machine: SimMachine::from_flags(None, Some("2"), None, None)
                .map_err(|e| anyhow!("the calibration's simulated machine: {e}"))?,
            sched: SchedModel::Cfs,
            costs,
            seed: 0,
            policy: config.phase,
            parking: config.parking,
            gc_threads: 1,
            mutators: 0,
            load: None,
            gc_affinity,
            numa: concord::os::numa::NumaLayout::Off,
            mutator_ns: 1_000,
            dynamic_gc_threads: None,
            pin_start: false,
            // The VM thread on the other CPU than the worker's (the real calibration leaves
            // both to the OS, which on an idle machine keeps them apart).
            vm_thread_cpu: Some(1),
            // Pretouched, as the real calibration heap is.
            first_touch: false,
        };
        let run = driver::simulate(collections.clone(), &setup)
            .map_err(|e| anyhow!("replaying the calibration's collection: {e}"))?;
        let c = run.collections.first();
        let worker = c
            .and_then(|c| c.workers.first())
            .ok_or_else(|| anyhow!("the replay of the calibration's collection ran no worker"))?;
        let parallel = c.map_or(0, |c| c.end_ns.saturating_sub(c.phase_start_ns));
        Ok((worker.clone(), parallel as f64))
    };
    let worker_ns = |reach: ReachCosts| -> Result<f64> {
        let (w, _) = simulate(exec::Costs { reach, ..*costs })?;
        Ok((w.root_ns + w.steal_ns) as f64)
    };
    let sync_ns = worker_ns(ReachCosts::NONE)?;
    let (start_ns, tail_ns) = if placed {
        let (w, parallel) = simulate(exec::Costs {
            reach: ReachCosts::NONE,
            wakeup_latency: 0,
            ..*costs
        })?;
        let ended = w.phase_end_ns.unwrap_or(0) as f64;
        (
            w.phase_start_ns.unwrap_or(0) as f64,
            (parallel - ended).max(0.0),
        )
    } else {
        (0.0, 0.0)
    };
    Ok(Replayed {
        sync_ns,
        line_misses: (worker_ns(ReachCosts::flat(1, 0))? - sync_ns).max(0.0),
        far_accesses: (worker_ns(ReachCosts::flat(0, 1))? - sync_ns).max(0.0),
        footprint,
        start_ns,
        tail_ns,
    })
}

/// The simulated engine is not in this crate's unit-test build (see the crate docs); the
/// calibration runs end to end in the command-line tests.
#[cfg(test)]
fn replayed(_: &Path, _: &exec::Costs, _: bool) -> Result<Replayed> {
    bail!("the simulated engine is not compiled into concord-sim's unit tests")
}

/// `collections` young collections, with one GC thread, of a complete binary tree of
/// `shape.depth` levels below its root (every node live), each of a tree built afresh in the
/// same heap (the last one dead by then), whose young generation is `young` bytes; with
/// `trace`, the collections are recorded there (a GC trace) and their times are not
/// representative (recording slows them).
fn copy_runs(
    shape: Shape,
    young: usize,
    collections: usize,
    trace: Option<&Path>,
) -> Result<Vec<CopyPoint>> {
    let Shape {
        node,
        depth,
        layout,
        first_touch,
        cold,
        promoted,
        ..
    } = shape;
    let mut clear = if cold {
        vec![0u8; CACHE_CLEAR_BYTES]
    } else {
        Vec::new()
    };
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.gc_threads = 1;
    config.young_size = Some(young);
    config.heap_size = 3 * young;
    // Eden and each survivor a third of young: the whole tree fits in a survivor, so every
    // object takes the same path (copied, not promoted).
    config.survivor_ratio = 1;
    // Fault the heap in first: a real run's survivor spaces were touched by earlier collections,
    // and first-touch page faults would otherwise count as copying (except in the shape that
    // measures them).
    config.pretouch = !first_touch;
    if promoted {
        config.max_tenuring_threshold = 0;
        config.initial_tenuring_threshold = 0;
    }
    if cold {
        // As a pinned validation run places them: the worker on the first CPU (static
        // affinity), the VM thread on the second, the mutator where the OS puts it; so the
        // wake-ups around the parallel phase cross CPUs.
        let cpus = affinity::current_thread_affinity().context("reading this thread's CPUs")?;
        if let Some(&vm_cpu) = cpus.get(1) {
            config.gc_affinity = concord::os::policy::GcAffinity::Static;
            config.vm_thread_cpu = Some(vm_cpu);
        }
    }
    config.gc_trace = trace.map(Path::to_path_buf);
    let heap = concord::Heap::new(config).context("creating the calibration heap")?;
    let mut m = heap.attach();
    let mut made = Vec::with_capacity(collections);
    for _ in 0..collections {
        let before = heap.stats().records.len();
        m.scope(|m| -> Result<()> {
            let root = match layout {
                Layout::Ordered => tree(m, node, depth),
                Layout::Preorder => preorder_tree(m, node, depth),
                Layout::Shuffled => shuffled_tree(m, node, depth),
            }
            .context("building the calibration tree")?;
            for line in clear.iter_mut().step_by(64) {
                *line = line.wrapping_add(1);
            }
            black_box(&clear);
            m.collect(CollectionKind::Young);
            black_box(root);
            Ok(())
        })?;
        made.push(before);
    }
    drop(m);
    // Joins the VM thread, so the trace (written after the world resumed) is complete.
    let stats = heap
        .finish()
        .map_err(|e| anyhow!("finishing the calibration heap: {e}"))?;
    if stats.records.len() != collections || made.iter().enumerate().any(|(i, &b)| b != i) {
        bail!("the calibration tree did not fit in eden: it was collected while being built");
    }
    let mut points = Vec::with_capacity(collections);
    for record in &stats.records {
        if record.kind != CollectionKind::Young {
            bail!("the calibration heap ran a full collection");
        }
        let ns: u64 = record.workers.iter().map(|w| w.root_ns + w.steal_ns).sum();
        let faults: u64 = record.workers.iter().map(|w| w.usage.minor_faults).sum();
        let parallel_ns = record.phases.parallel_ms * 1e6;
        let started = record.workers.iter().filter_map(|w| w.phase_start_ns).min();
        let ended = record.workers.iter().filter_map(|w| w.phase_end_ns).max();
        points.push(CopyPoint {
            objects: ((2u64 << depth) - 1) as f64,
            bytes: record.bytes_copied as f64,
            ns: ns as f64,
            sync_ns: 0.0,
            spread_ns: 0.0,
            shuffled: layout == Layout::Shuffled,
            preorder: layout == Layout::Preorder,
            far_accesses: 0.0,
            far_ns: 0.0,
            line_misses: 0.0,
            line_ns: 0.0,
            footprint: 0.0,
            fitted: shape.copy_fit,
            first_touch,
            faults: faults as f64,
            cold,
            promoted,
            start_ns: started.map_or(0.0, |s| s as f64),
            tail_ns: ended.map_or(0.0, |e| (parallel_ns - e as f64).max(0.0)),
            sim_start_ns: 0.0,
            sim_tail_ns: 0.0,
        });
    }
    Ok(points)
}

/// A complete binary tree of `depth` levels below its root whose nodes are allocated first,
/// all of them, and then linked in a random order (seeded: the same tree every time), so that
/// a node's children lie anywhere in the heap, not next to it.
fn shuffled_tree(m: &mut Mutator<'_>, node: ObjectType, depth: u32) -> Result<Handle, GcError> {
    linked_tree(m, node, depth, |n| {
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = concord::parallel::rng::XorShift::new(0x5eed_7ee5);
        for i in (1..n).rev() {
            order.swap(i, rng.below(i + 1));
        }
        order
    })
}

/// A complete binary tree of `depth` levels below its root, each node allocated before its
/// children, the left subtree before the right (preorder, as gcbench's `Populate` builds).
fn preorder_tree(m: &mut Mutator<'_>, node: ObjectType, depth: u32) -> Result<Handle, GcError> {
    linked_tree(m, node, depth, |n| {
        // Heap-order index `i` (children 2i + 1, 2i + 2) to its preorder position.
        let mut order = vec![0; n];
        let mut next = 0;
        let mut stack = vec![0usize];
        while let Some(i) = stack.pop() {
            order[i] = next;
            next += 1;
            for child in [2 * i + 2, 2 * i + 1] {
                if child < n {
                    stack.push(child);
                }
            }
        }
        order
    })
}

/// A complete binary tree of `depth` levels below its root whose `n` nodes are allocated
/// first and then linked so that tree node `i` (in heap order) is the `order(n)[i]`-th
/// allocated.
fn linked_tree(
    m: &mut Mutator<'_>,
    node: ObjectType,
    depth: u32,
    order: impl FnOnce(usize) -> Vec<usize>,
) -> Result<Handle, GcError> {
    let n = (2usize << depth) - 1;
    let built = m.scope_escape(|m| {
        let nodes = (0..n)
            .map(|_| m.alloc(node))
            .collect::<Result<Vec<Handle>, GcError>>()?;
        let order = order(n);
        link_heap_order(m, &nodes, &order);
        Ok(Some(nodes[order[0]]))
    })?;
    Ok(built.expect("the scope returns the root it linked"))
}

/// Links `nodes` (in allocation order) as a complete binary tree in heap order: tree node `i`
/// is `nodes[order[i]]`, its children tree nodes `2i + 1` and `2i + 2`.
fn link_heap_order(m: &mut Mutator<'_>, nodes: &[Handle], order: &[usize]) {
    let n = nodes.len();
    for i in 0..n {
        for (slot, child) in [(0, 2 * i + 1), (1, 2 * i + 2)] {
            if child < n {
                m.set_ref(nodes[order[i]], slot, Some(nodes[order[child]]));
            }
        }
    }
}

/// The reach costs from the reach shapes: for each size, the tree laid out in order, in
/// preorder and shuffled (the same objects and bytes, so the copy costs cancel) give two
/// equations, `net(layout) − net(ordered) = Δline_misses · line + Δfar_accesses · far`, solved
/// for `line, far ≥ 0` (least squares on the two equations with a cost held at zero where the
/// exact solution has it negative). Ascending footprints; a size missing a layout, or whose
/// layouts do not differ in reaches, is left out.
pub fn fit_reach(points: &[CopyPoint]) -> Vec<ReachFit> {
    let mut fits: Vec<ReachFit> = points
        .iter()
        .filter(|o| !o.shuffled && !o.preorder && !o.first_touch && !o.cold)
        .filter_map(|ordered| {
            let twin = |pick: fn(&CopyPoint) -> bool| {
                points.iter().find(|p| {
                    pick(p)
                        && !p.first_touch
                        && !p.cold
                        && p.objects == ordered.objects
                        && (p.bytes - ordered.bytes).abs() < 1.0
                })
            };
            let pre = twin(|p| p.preorder)?;
            let shuf = twin(|p| p.shuffled)?;
            let eq = |p: &CopyPoint| {
                (
                    p.line_misses - ordered.line_misses,
                    p.far_accesses - ordered.far_accesses,
                    p.beyond_sync_ns() - ordered.beyond_sync_ns(),
                    p.spread_ns + ordered.spread_ns,
                )
            };
            let (a, b) = (eq(pre), eq(shuf));
            let (line, far) = non_negative_2x2([a.0, a.1, a.2], [b.0, b.1, b.2])?;
            let per = |spread: f64, count: f64| if count > 0.0 { spread / count } else { 0.0 };
            Some(ReachFit {
                footprint: ordered.footprint,
                line_miss_ns: line,
                line_miss_spread_ns: per(a.3, a.0),
                far_access_ns: far,
                far_access_spread_ns: per(b.3, b.1),
            })
        })
        .filter(|f| f.footprint >= 1.0)
        .collect();
    fits.sort_by(|a, b| a.footprint.total_cmp(&b.footprint));
    fits.dedup_by(|b, a| a.footprint == b.footprint);
    fits
}

/// `(x, y) ≥ 0` best solving `a[0]·x + a[1]·y = a[2]` and `b[0]·x + b[1]·y = b[2]` in least
/// squares: the exact solution where it is non-negative, otherwise the better of `x` alone and
/// `y` alone; `None` when neither unknown appears.
fn non_negative_2x2(a: [f64; 3], b: [f64; 3]) -> Option<(f64, f64)> {
    let det = a[0] * b[1] - a[1] * b[0];
    if det.abs() > 1e-9 * (a[0].abs() + a[1].abs()) * (b[0].abs() + b[1].abs()) {
        let x = (a[2] * b[1] - a[1] * b[2]) / det;
        let y = (a[0] * b[2] - a[2] * b[0]) / det;
        if x >= 0.0 && y >= 0.0 {
            return Some((x, y));
        }
    }
    let alone = |i: usize| {
        let (cc, ct) = (a[i] * a[i] + b[i] * b[i], a[i] * a[2] + b[i] * b[2]);
        (cc > 0.0).then(|| (ct / cc).max(0.0))
    };
    let sse = |x: f64, y: f64| {
        (a[0] * x + a[1] * y - a[2]).powi(2) + (b[0] * x + b[1] * y - b[2]).powi(2)
    };
    match (alone(0), alone(1)) {
        (None, None) => None,
        (Some(x), None) => Some((x, 0.0)),
        (None, Some(y)) => Some((0.0, y)),
        (Some(x), Some(y)) => Some(if sse(x, 0.0) <= sse(0.0, y) {
            (x, 0.0)
        } else {
            (0.0, y)
        }),
    }
}

/// What a first-touch page fault costs inside a collection: the unpretouched shape's time
/// beyond its pretouched twin's, per fault it took, for the shapes copying into to-space or
/// (`promoted`) into the old generation; `None` if there is no such pair or it faulted no
/// page.
pub fn fault_cost(points: &[CopyPoint], promoted: bool) -> Option<Measured> {
    let cold = points
        .iter()
        .find(|p| p.first_touch && p.promoted == promoted && p.faults > 0.0)?;
    let warm = points.iter().find(|p| {
        !p.first_touch
            && !p.cold
            && !p.shuffled
            && !p.preorder
            && p.promoted == promoted
            && p.objects == cold.objects
            && (p.bytes - cold.bytes).abs() < 1.0
    })?;
    Some(Measured {
        median: ((cold.ns - warm.ns) / cold.faults).max(0.0),
        spread: (cold.spread_ns + warm.spread_ns) / cold.faults,
    })
}

/// What a worker's start in a collection costs beyond its work: the worker-start shape's time
/// less what the simulator charges for its collection (its own operations, and the copy and
/// reach costs of `fit`), at least 0; `None` without that shape.
pub fn worker_start_cost(fit: &CopyFit) -> Option<Measured> {
    let p = fit.points.iter().find(|p| p.cold)?;
    let copy = fit.per_object_ns * p.objects + fit.per_byte_ns * p.bytes;
    Some(Measured {
        median: (p.net_ns() - copy).max(0.0),
        spread: p.spread_ns,
    })
}

/// A complete binary tree of `depth` levels below its root, built bottom-up.
fn tree(m: &mut Mutator<'_>, node: ObjectType, depth: u32) -> Result<Handle, GcError> {
    if depth == 0 {
        return m.alloc(node);
    }
    let built = m.scope_escape(|m| {
        let l = tree(m, node, depth - 1)?;
        let r = tree(m, node, depth - 1)?;
        m.alloc_with(node, &[Some(l), Some(r)]).map(Some)
    })?;
    Ok(built.expect("the scope returns the node it built"))
}

/// `model name` of the first CPU in `/proc/cpuinfo`, or `unknown`.
fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// The kernel release, from `/proc/sys/kernel/osrelease`, or `unknown`.
fn kernel_release() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".to_string())
}

/// `time` as `YYYY-MM-DDTHH:MM:SSZ` (UTC; the proleptic Gregorian calendar, civil-from-days).
fn utc_date(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(objects: f64, bytes: f64, ns: f64) -> CopyPoint {
        CopyPoint {
            objects,
            bytes,
            ns,
            sync_ns: 0.0,
            spread_ns: 0.0,
            shuffled: false,
            preorder: false,
            far_accesses: 0.0,
            far_ns: 0.0,
            line_misses: 0.0,
            line_ns: 0.0,
            footprint: 0.0,
            fitted: false,
            first_touch: false,
            faults: 0.0,
            cold: false,
            promoted: false,
            start_ns: 0.0,
            tail_ns: 0.0,
            sim_start_ns: 0.0,
            sim_tail_ns: 0.0,
        }
    }

    /// A tree of `objects` at `footprint` in its three layouts, whose reaches cost `line` and
    /// `far` ns: in order 10 line misses and 5 far accesses, top-down 60 and 15, shuffled 20
    /// and 505.
    fn layouts(objects: f64, footprint: f64, line: f64, far: f64) -> [CopyPoint; 3] {
        let at = |line_misses: f64, far_accesses: f64| CopyPoint {
            line_misses,
            far_accesses,
            footprint,
            sync_ns: 100.0,
            spread_ns: 10.0,
            ..point(
                objects,
                32.0 * objects,
                5_000.0 + line * line_misses + far * far_accesses,
            )
        };
        [
            at(10.0, 5.0),
            CopyPoint {
                preorder: true,
                ..at(60.0, 15.0)
            },
            CopyPoint {
                shuffled: true,
                ..at(20.0, 505.0)
            },
        ]
    }

    #[test]
    fn reach_costs_are_solved_per_footprint_from_the_three_layouts() {
        let mut points = layouts(1_000.0, 4.0e6, 40.0, 150.0).to_vec();
        points.extend(layouts(100.0, 2.5e5, 8.0, 20.0));
        let fits = fit_reach(&points);
        // Ascending footprints, each solved exactly.
        assert_eq!(fits.len(), 2);
        assert_eq!(fits[0].footprint, 2.5e5);
        assert!((fits[0].line_miss_ns - 8.0).abs() < 1e-9, "{fits:?}");
        assert!((fits[0].far_access_ns - 20.0).abs() < 1e-9, "{fits:?}");
        assert!((fits[1].line_miss_ns - 40.0).abs() < 1e-9, "{fits:?}");
        assert!((fits[1].far_access_ns - 150.0).abs() < 1e-9, "{fits:?}");
        // Spread per miss: the two collections' spreads (20 ns) over the 50 extra line misses.
        assert!((fits[0].line_miss_spread_ns - 20.0 / 50.0).abs() < 1e-9);
        // A size without its shuffled tree is left out; a cost that would come out negative is
        // held at 0 and the other fitted alone.
        assert_eq!(fit_reach(&points[..2]).len(), 0);
        let cheap = layouts(1_000.0, 4.0e6, -5.0, 100.0);
        let fit = fit_reach(&cheap)[0];
        assert_eq!(fit.line_miss_ns, 0.0);
        assert!(fit.far_access_ns > 0.0);
        // The reach costs come off the time the copy costs are fitted to.
        let p = CopyPoint {
            far_ns: 500.0,
            line_ns: 300.0,
            ..points[1]
        };
        assert_eq!(p.net_ns(), p.ns - p.sync_ns - 800.0);
        // And make the executor's table, in whole ns.
        let table = reach_table(&fits);
        assert_eq!(table.at(250_000), (8, 20));
        assert_eq!(table.at(4_000_000), (40, 150));
    }

    #[test]
    fn a_workers_start_is_the_cold_collections_time_beyond_its_charges() {
        // 63 objects of 72 bytes at 10 ns + 0.1 ns/byte = 1083.6 ns of copying, 400 ns the
        // simulator charges itself, 100 ns of reaches: 15 000 ns measured leave 13 416.4 ns.
        let mut fit = fit_copy_cost(&[point(1.0, 24.0, 12.4), point(1.0, 1024.0, 112.4)]).unwrap();
        assert!((fit.per_object_ns - 10.0).abs() < 1e-9 && (fit.per_byte_ns - 0.1).abs() < 1e-9);
        assert!(worker_start_cost(&fit).is_none());
        fit.points.push(CopyPoint {
            cold: true,
            sync_ns: 400.0,
            line_ns: 60.0,
            far_ns: 40.0,
            spread_ns: 3_000.0,
            ..point(63.0, 63.0 * 72.0, 15_000.0)
        });
        let start = worker_start_cost(&fit).unwrap();
        assert!((start.median - 13_416.4).abs() < 1e-6, "{start:?}");
        assert_eq!(start.spread, 3_000.0);
        // Never below 0.
        fit.points.last_mut().unwrap().ns = 100.0;
        assert_eq!(worker_start_cost(&fit).unwrap().median, 0.0);
    }

    #[test]
    fn a_fault_costs_the_unpretouched_collections_extra_time_per_fault() {
        let warm = point(1_000.0, 72_000.0, 50_000.0);
        let cold = CopyPoint {
            first_touch: true,
            faults: 20.0,
            ns: 90_000.0,
            spread_ns: 2_000.0,
            ..warm
        };
        let f = fault_cost(&[warm, cold], false).unwrap();
        assert_eq!((f.median, f.spread), (2_000.0, 100.0));
        // No fault taken, or no twin: not measured.
        assert!(fault_cost(
            &[
                warm,
                CopyPoint {
                    faults: 0.0,
                    ..cold
                }
            ],
            false
        )
        .is_none());
        assert!(fault_cost(&[cold], false).is_none());
        // The promoted pair is told from the to-space pair.
        let promoted = |p: CopyPoint, ns: f64| CopyPoint {
            promoted: true,
            ns,
            ..p
        };
        let points = [
            warm,
            cold,
            promoted(warm, 60_000.0),
            promoted(cold, 120_000.0),
        ];
        assert_eq!(fault_cost(&points, false).unwrap().median, 2_000.0);
        assert_eq!(fault_cost(&points, true).unwrap().median, 3_000.0);
        assert!(fault_cost(&points[..2], true).is_none());
    }

    #[test]
    fn the_fit_recovers_exact_costs() {
        // ns = 30·objects + 0.25·bytes, by hand: 30·100 + 0.25·2400 = 3600, …
        let points = [
            point(100.0, 2_400.0, 3_600.0),
            point(100.0, 10_000.0, 5_500.0),
            point(1_000.0, 24_000.0, 36_000.0),
            point(50.0, 50_000.0, 14_000.0),
        ];
        let fit = fit_copy_cost(&points).unwrap();
        assert!((fit.per_object_ns - 30.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.per_byte_ns - 0.25).abs() < 1e-12, "{fit:?}");
        assert!(fit.residual_rms_ns < 1e-6, "{fit:?}");
        assert!((fit.r_squared - 1.0).abs() < 1e-12);
    }

    #[test]
    fn the_fit_reports_its_residual() {
        // ns = [20, 0, 11] at (objects, bytes) = (1, 0), (0, 1), (1, 1), by hand: the normal
        // equations [2 1; 1 2]·[a b] = [31 11] give b = −3 < 0, so b is 0 and a is the
        // objects-alone fit 31/2 = 15.5; the residuals are 4.5, 0 and −4.5, so the rms is
        // √(40.5/3) and the mean ns 31/3.
        let points = [
            point(1.0, 0.0, 20.0),
            point(0.0, 1.0, 0.0),
            point(1.0, 1.0, 11.0),
        ];
        let fit = fit_copy_cost(&points).unwrap();
        assert!((fit.per_object_ns - 15.5).abs() < 1e-9, "{fit:?}");
        assert_eq!(fit.per_byte_ns, 0.0, "{fit:?}");
        let rms = (40.5f64 / 3.0).sqrt();
        assert!((fit.residual_rms_ns - rms).abs() < 1e-9, "{fit:?}");
        assert!((fit.residual_relative - rms / (31.0 / 3.0)).abs() < 1e-9);
    }

    #[test]
    fn the_fit_is_of_the_time_the_simulator_does_not_charge_already() {
        // Real ns = 30·objects + 0.25·bytes + 12·objects the simulator charges itself (its
        // deque operations and CAS): the fit keeps only the 30 and the 0.25.
        let charged = |objects: f64, bytes: f64| CopyPoint {
            sync_ns: 12.0 * objects,
            ns: 42.0 * objects + 0.25 * bytes,
            ..point(objects, bytes, 0.0)
        };
        let points = [
            charged(100.0, 2_400.0),
            charged(1_000.0, 24_000.0),
            charged(50.0, 50_000.0),
        ];
        let fit = fit_copy_cost(&points).unwrap();
        assert!((fit.per_object_ns - 30.0).abs() < 1e-9, "{fit:?}");
        assert!((fit.per_byte_ns - 0.25).abs() < 1e-12, "{fit:?}");
        assert_eq!(points[0].net_ns(), 30.0 * 100.0 + 0.25 * 2_400.0);
    }

    #[test]
    fn medians_of_odd_even_and_no_values() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
        let m = Measured::of(&[5.0, 1.0, 9.0]);
        assert_eq!((m.median, m.spread), (5.0, 8.0));
    }

    #[test]
    fn a_negative_cost_is_fitted_as_zero_and_the_other_alone() {
        // ns = 10·objects − 0.01·bytes exactly: unconstrained, b < 0; constrained, b = 0 and
        // a is the least-squares a of the objects alone.
        let points = [
            point(100.0, 1_000.0, 990.0),
            point(200.0, 50_000.0, 1_500.0),
            point(50.0, 400.0, 496.0),
        ];
        let fit = fit_copy_cost(&points).unwrap();
        assert_eq!(fit.per_byte_ns, 0.0);
        let expected = (100.0 * 990.0 + 200.0 * 1_500.0 + 50.0 * 496.0)
            / (100.0f64 * 100.0 + 200.0 * 200.0 + 50.0 * 50.0);
        assert!((fit.per_object_ns - expected).abs() < 1e-9, "{fit:?}");
    }

    #[test]
    fn the_fit_refuses_proportional_columns_and_too_few_points() {
        let same_size = [point(10.0, 240.0, 500.0), point(20.0, 480.0, 1_000.0)];
        let e = fit_copy_cost(&same_size).unwrap_err().to_string();
        assert!(e.contains("same bytes per object"), "{e}");
        let e = fit_copy_cost(&[point(1.0, 2.0, 3.0)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 2 points"), "{e}");
    }

    fn sample() -> CalibratedCosts {
        let costs = MeasuredCosts {
            atomic_load: 0.4,
            atomic_store: 0.6,
            atomic_rmw: 6.2,
            cas: 7.1,
            lock_uncontended: 14.5,
            futex_wait: 180.0,
            futex_wake: 150.0,
            yield_syscall: 210.0,
            sleep_syscall: 55_000.0,
            spin_loop: 9.0,
            context_switch: 1_400.0,
            wakeup_latency: 6_000.0,
            copy_per_object: 25.0,
            copy_per_byte: 0.3,
            page_fault: 700.0,
            far_access: 40.0,
            line_miss: 12.0,
            worker_start: 9_000.0,
            page_fault_old: 1_100.0,
        };
        CalibratedCosts {
            version: FORMAT_VERSION,
            machine: Machine {
                cpu_model: "Test CPU".into(),
                kernel: "6.1.0".into(),
                cpus: 2,
                cpus_used: vec![0, 1],
            },
            measured_at: "2026-11-27T05:00:00Z".into(),
            quick: true,
            costs,
            spread: MeasuredCosts {
                atomic_load: 0.0,
                ..costs
            },
            copy_fit: fit_copy_cost(&[point(1.0, 24.0, 32.0), point(1.0, 1024.0, 332.0)]).unwrap(),
            wake: vec![
                WakeFit {
                    idle_ns: 5e4,
                    latency_ns: 20_000.0,
                    spread_ns: 1_000.0,
                    waker_ns: 8_000.0,
                },
                WakeFit {
                    idle_ns: 2e7,
                    latency_ns: 60_000.0,
                    spread_ns: 5_000.0,
                    waker_ns: 20_000.0,
                },
            ],
            halt_poll: Some(HaltPollFit {
                max_ns: 100_000.0,
                latency_ns: 9_000.4,
                waker_ns: 1_500.0,
                unpolled_ns: 14_000.0,
            }),
        }
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("concord-calibrate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn a_saved_calibration_loads_back_equal() {
        let path = scratch("round-trip.json");
        let costs = sample();
        concord::os::fs::write_atomic(&path, costs.to_json().as_bytes()).unwrap();
        assert_eq!(load(&path).unwrap(), costs);
    }

    /// The error of loading a file `name` holding `text` (none: no such file).
    fn load_error(name: &str, text: Option<&str>) -> String {
        let path = scratch(name);
        if let Some(text) = text {
            std::fs::write(&path, text).unwrap();
        }
        format!("{:#}", load(&path).unwrap_err())
    }

    #[test]
    fn load_names_a_missing_a_corrupt_and_an_old_file() {
        let e = load_error("missing.json", None);
        assert!(
            e.contains("cannot read the calibration") && e.contains("missing.json"),
            "{e}"
        );

        let e = load_error("corrupt.json", Some("{\"version\": 1, \"costs\": "));
        assert!(e.contains("corrupt.json is not JSON"), "{e}");

        let old = sample()
            .to_json()
            .replacen("\"version\": 6", "\"version\": 1", 1);
        let e = load_error("old.json", Some(&old));
        assert!(
            e.contains("calibration of version 1")
                && e.contains("reads versions 2 to 6")
                && e.contains("counted twice"),
            "{e}"
        );
        // A version 2 file (no far-access cost, no shuffled shapes) still loads, its
        // far_access 0: the simulator then charges none, as when it was written.
        let mut v2: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        v2["version"] = 2.into();
        for costs in ["costs", "spread"] {
            v2[costs].as_object_mut().unwrap().remove("far_access");
            v2[costs].as_object_mut().unwrap().remove("line_miss");
        }
        v2["copy_fit"].as_object_mut().unwrap().remove("reach");
        let path = scratch("v2.json");
        std::fs::write(&path, v2.to_string()).unwrap();
        let loaded = load(&path).unwrap();
        assert_eq!(loaded.costs.far_access, 0.0);
        assert!(loaded.exec_costs().reach.is_free());
        // A version 3 file's one far-access cost is charged at every footprint, no line miss.
        let mut v3: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        v3["version"] = 3.into();
        for costs in ["costs", "spread"] {
            v3[costs].as_object_mut().unwrap().remove("line_miss");
        }
        v3["copy_fit"].as_object_mut().unwrap().remove("reach");
        let path = scratch("v3.json");
        std::fs::write(&path, v3.to_string()).unwrap();
        let reach = load(&path).unwrap().exec_costs().reach;
        assert_eq!((reach.at(1), reach.at(1 << 30)), ((0, 40), (0, 40)));
        // A version 4 file's table is charged by footprint.
        let mut v4 = sample();
        v4.copy_fit.reach = vec![
            ReachFit {
                footprint: 1e6,
                line_miss_ns: 5.0,
                line_miss_spread_ns: 1.0,
                far_access_ns: 30.0,
                far_access_spread_ns: 1.0,
            },
            ReachFit {
                footprint: 1.6e7,
                line_miss_ns: 12.0,
                line_miss_spread_ns: 1.0,
                far_access_ns: 40.0,
                far_access_spread_ns: 1.0,
            },
        ];
        let path = scratch("v4.json");
        std::fs::write(&path, v4.to_json()).unwrap();
        let reach = load(&path).unwrap().exec_costs().reach;
        assert_eq!((reach.at(1), reach.at(1 << 30)), ((5, 30), (12, 40)));
        // A version 4 file measured no old-generation fault: the to-space one is charged.
        let mut v4_value: serde_json::Value = serde_json::from_str(&v4.to_json()).unwrap();
        v4_value["version"] = 4.into();
        for costs in ["costs", "spread"] {
            v4_value[costs]
                .as_object_mut()
                .unwrap()
                .remove("page_fault_old");
        }
        v4_value.as_object_mut().unwrap().remove("wake");
        std::fs::write(&path, v4_value.to_string()).unwrap();
        let costs = load(&path).unwrap().exec_costs();
        assert_eq!((costs.page_fault, costs.page_fault_old), (700, 700));
        assert_eq!(sample().exec_costs().page_fault_old, 1_100);
        // Footprints that do not ascend are refused, naming them.
        v4.copy_fit.reach.swap(0, 1);
        let e = load_error("unordered.json", Some(&v4.to_json()));
        assert!(e.contains("footprints") && e.contains("ascending"), "{e}");

        let e = load_error("unversioned.json", Some("{}"));
        assert!(e.contains("of no version"), "{e}");

        let mut value: serde_json::Value = serde_json::from_str(&sample().to_json()).unwrap();
        value["costs"].as_object_mut().unwrap().remove("cas");
        let e = load_error("missing-field.json", Some(&value.to_string()));
        assert!(
            e.contains("not a valid calibration") && e.contains("cas"),
            "{e}"
        );

        let mut negative = sample();
        negative.costs.futex_wake = -1.0;
        let e = load_error("negative.json", Some(&negative.to_json()));
        assert!(e.contains("cost futex_wake is -1"), "{e}");
    }

    /// Costs no machine has (a sleep of 1e18 ns, a switch of 1e15, a byte copied in 1e12) are
    /// refused by name with their range; they made simulations run for ever.
    #[test]
    fn a_cost_beyond_its_plausible_range_is_refused_naming_the_range() {
        for (field, value, expected) in [
            (
                "sleep_syscall",
                1e18,
                "cost sleep_syscall is 1000000000000000000 ns (allowed: more than 0 and at most \
                 100000000 ns, 100 ms)",
            ),
            (
                "context_switch",
                1e15,
                "cost context_switch is 1000000000000000 ns (allowed: more than 0 and at most \
                 1000000 ns, 1 ms)",
            ),
            (
                "copy_per_byte",
                1e12,
                "cost copy_per_byte is 1000000000000 ns (allowed: more than 0 and at most 100 \
                 ns, 100 ns)",
            ),
            (
                "cas",
                2e4,
                "cost cas is 20000 ns (allowed: more than 0 and at most 10000 ns, 10 µs)",
            ),
        ] {
            let mut value_json: serde_json::Value =
                serde_json::from_str(&sample().to_json()).unwrap();
            value_json["costs"][field] = serde_json::json!(value);
            let e = load_error(&format!("{field}.json"), Some(&value_json.to_string()));
            assert!(e.contains(expected), "{e}");
        }
        // Every cost at its maximum is accepted.
        let mut most = sample();
        most.costs = MeasuredCosts::MAX;
        let path = scratch("most.json");
        std::fs::write(&path, most.to_json()).unwrap();
        assert_eq!(load(&path).unwrap().costs, MeasuredCosts::MAX);
    }

    /// A directory or a file longer than a calibration can be is refused as `--config` refuses
    /// them, and the suggestion names a file `calibrate --out` can write (`/dev/zero` itself,
    /// read with a memory bound, is tested end to end in `sim_validate.rs`).
    #[test]
    fn a_calibration_is_read_as_a_config_file_and_the_hint_names_a_regular_file() {
        let dir = scratch("a-directory.json");
        std::fs::create_dir_all(&dir).unwrap();
        let e = format!("{:#}", load(&dir).unwrap_err());
        assert!(
            e.contains("it is a directory, not a regular file (allowed: a regular file or a pipe"),
            "{e}"
        );
        assert!(
            e.contains("`concord sim calibrate --out concord-costs.json` and give that file")
                && !e.contains(&format!("--out {}", dir.display())),
            "{e}"
        );
        let padding = " ".repeat(concord::config::MAX_CONFIG_FILE_BYTES as usize);
        let e = load_error(
            "long.json",
            Some(&format!("{}{padding}", sample().to_json())),
        );
        assert!(e.contains("longer than a configuration file can be"), "{e}");
        // A regular file (or one not there yet) is the one to write.
        assert!(e.contains("--out ") && e.contains("long.json`"), "{e}");
        let path = scratch("latin1.json");
        std::fs::write(&path, b"{\"version\": 1, \"caf\xe9\": 0}").unwrap();
        let e = format!("{:#}", load(&path).unwrap_err());
        assert!(e.contains("it is not UTF-8 text"), "{e}");
    }

    #[test]
    fn the_executor_table_rounds_and_keeps_every_cost_positive() {
        let costs = sample().exec_costs();
        assert_eq!(costs.atomic_load, 1, "0.4 ns rounds to 0, raised to 1");
        assert_eq!(costs.atomic_rmw, 6);
        assert_eq!(costs.cas, 7);
        assert_eq!(costs.lock_uncontended, 15, "14.5 rounds away from zero");
        assert_eq!(costs.sleep_syscall, 55_000);
        assert_eq!(costs.context_switch, 1_400);
        assert_eq!(costs.wakeup_latency, 6_000);
        // The copy costs keep their fractions of a ns, in ps.
        assert_eq!(costs.copy_per_object_ps, 25_000);
        assert_eq!(costs.copy_per_byte_ps, 300);
        // The wake-up table with the host's halt polling; a file without it (version 5 and
        // before, or a host that does not poll) gives the table alone.
        let polled = exec::wake::HaltPoll {
            max_ns: 100_000,
            latency: 9_000,
            waker: 1_500,
        };
        assert_eq!(costs.wake.halt_poll(), Some(polled));
        assert_eq!(costs.wake.at_window(50_000, 0), Some((20_000, 8_000)));
        assert_eq!(costs.wake.at_window(50_000, 100_000), Some((9_000, 1_500)));
        let plain = CalibratedCosts {
            halt_poll: None,
            ..sample()
        };
        assert_eq!(plain.exec_costs().wake.halt_poll(), None);
        // A window beyond the halts tried is refused, naming it.
        let h = sample().halt_poll.unwrap();
        let wide = CalibratedCosts {
            halt_poll: Some(HaltPollFit { max_ns: 1e9, ..h }),
            ..sample()
        };
        let e = wide.check().unwrap_err().to_string();
        assert!(
            e.contains("longest polled halt") && e.contains("500000"),
            "{e}"
        );
        assert!(sample().check().is_ok());
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        let at = |s: u64| utc_date(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a century leap year) 12:34:56 = 951_827_696.
        assert_eq!(at(951_827_696), "2000-02-29T12:34:56Z");
        assert_eq!(at(1_798_761_599), "2026-12-31T23:59:59Z");
    }
}
