//! The wake-up latency by how long the woken thread's CPU was idle.
//!
//! On a virtual machine a thread woken onto an idle CPU waits for that virtual CPU to leave
//! its halt, and the longer it was halted the longer this takes: `concord sim calibrate`'s
//! futex ping-pong between two pinned threads measured, on a 2-vCPU KVM guest, 31–36 µs after
//! 50–200 µs idle, 50–67 µs after 5 ms and 86–90 µs after 50 ms (three calibrations in an
//! hour). A thread woken onto a CPU that is
//! running something does not wait for an idle exit: it queues there. The waker pays too: its
//! wake call exits to the hypervisor to wake the idle vCPU (8–22 µs there, against 0.2 µs for
//! a wake call that finds no waiter). [`WakeCosts`] holds both at up to [`POINTS`] idle
//! durations; the executor charges the woken thread's latency and the waker's time by how long
//! the woken thread's CPU was idle, interpolated in `log2` of it and clamped outside the
//! table.
//!
//! # The host's halt polling
//!
//! A KVM host polls a halted vCPU for a while before it gives its CPU up, and adapts that
//! window per vCPU (KVM's dynamic halt polling, `virt/kvm/kvm_main.c`): a halt that ends
//! inside the window is polled and its wake-up is fast; a halt that ends after it grows the
//! window (from [`GROW_START_NS`], doubling, up to a maximum) if it was shorter than the
//! maximum, and resets it to 0 if it was longer. So the same short halt wakes fast in a
//! steady ping-pong and slowly right after a long halt: on the project's 2-vCPU guest
//! (`bench/sched/halt_poll.c`) 9–10 µs against 14–17 µs after 50 µs idle, and halts of 100 µs
//! were polled where halts of 150 µs were not. A collection's wake-ups follow long halts (the
//! VM thread's CPU idles while the mutators run), so a table of steady ping-pongs alone
//! undercharges them. With [`HaltPoll`], the table holds the latencies of wake-ups that were
//! not polled, and the executor keeps each CPU's window by these rules and charges
//! [`HaltPoll::latency`] for a wake-up inside it.

use super::reach::interpolate_log2;
use super::Ns;

/// The most idle durations a [`WakeCosts`] holds.
pub const POINTS: usize = 6;

/// The window a halt-polling host first gives a vCPU whose halts it starts polling, ns
/// (KVM's `halt_poll_ns_grow_start` default).
pub const GROW_START_NS: Ns = 10_000;

/// The factor the window grows by after a halt it missed (KVM's `halt_poll_ns_grow`
/// default).
pub const GROW: Ns = 2;

/// A host that polls halted vCPUs (module documentation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HaltPoll {
    /// The longest window, ns: a halt longer than this resets the window to 0.
    pub max_ns: Ns,
    /// A polled wake-up's latency, ns.
    pub latency: Ns,
    /// The waker's time in the wake call when the wake-up is polled, ns.
    pub waker: Ns,
}

impl HaltPoll {
    /// The window after a halt of `halt_ns` under window `window` (KVM's rules, with its
    /// default shrink: a reset to 0).
    pub fn next_window(&self, window: Ns, halt_ns: Ns) -> Ns {
        if halt_ns <= window {
            window
        } else if halt_ns > self.max_ns {
            0
        } else {
            window
                .saturating_mul(GROW)
                .max(GROW_START_NS)
                .min(self.max_ns)
        }
    }
}

/// A wake-up onto a CPU idle for `idle_ns`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakePoint {
    /// How long the CPU had been idle, ns.
    pub idle_ns: Ns,
    /// From the wake call until the woken thread runs, ns.
    pub latency: Ns,
    /// The waker's own time in the wake call for this thread, ns: on a virtual machine the
    /// call exits to the hypervisor to wake the idle vCPU.
    pub waker: Ns,
}

/// The wake-up latency at up to [`POINTS`] idle durations, ascending; empty: one latency for
/// every wake-up ([`super::Costs::wakeup_latency`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WakeCosts {
    points: [WakePoint; POINTS],
    len: usize,
    /// The host's halt polling, if it polls; the points are then wake-ups it did not poll.
    halt_poll: Option<HaltPoll>,
}

impl WakeCosts {
    /// No table: every wake-up costs [`super::Costs::wakeup_latency`], whatever the CPU.
    pub const NONE: WakeCosts = WakeCosts {
        points: [WakePoint {
            idle_ns: 0,
            latency: 0,
            waker: 0,
        }; POINTS],
        len: 0,
        halt_poll: None,
    };

    /// The table of `points`: at most [`POINTS`], idle durations positive and strictly
    /// ascending.
    pub fn new(points: &[WakePoint]) -> Result<WakeCosts, String> {
        if points.len() > POINTS {
            return Err(format!(
                "{} wake-up idle durations given; at most {POINTS} are allowed",
                points.len()
            ));
        }
        if points.iter().any(|p| p.idle_ns == 0) {
            return Err("a wake-up idle duration of 0 ns; durations must be positive".into());
        }
        if points.windows(2).any(|w| w[0].idle_ns >= w[1].idle_ns) {
            return Err("wake-up idle durations must be strictly ascending".to_string());
        }
        let mut table = WakeCosts::NONE;
        table.points[..points.len()].copy_from_slice(points);
        table.len = points.len();
        Ok(table)
    }

    /// The table with the host's halt polling `halt_poll`: the points are then the latencies
    /// of wake-ups it did not poll.
    pub fn with_halt_poll(self, halt_poll: HaltPoll) -> WakeCosts {
        WakeCosts {
            halt_poll: Some(halt_poll),
            ..self
        }
    }

    /// The host's halt polling, if given.
    pub fn halt_poll(&self) -> Option<HaltPoll> {
        self.halt_poll.filter(|_| self.is_table())
    }

    /// `(latency, waker's time)` of a wake-up onto a CPU idle for `idle_ns` whose halt-poll
    /// window is `window` ns: the polled costs inside the window, the table's otherwise (and
    /// always without halt polling); `None` for an empty table.
    pub fn at_window(&self, idle_ns: Ns, window: Ns) -> Option<(Ns, Ns)> {
        match self.halt_poll() {
            Some(hp) if idle_ns <= window => Some((hp.latency, hp.waker)),
            _ => self.at(idle_ns),
        }
    }

    /// The idle durations and their latencies.
    pub fn points(&self) -> &[WakePoint] {
        &self.points[..self.len]
    }

    /// Whether there is a table (otherwise the flat latency applies).
    pub fn is_table(&self) -> bool {
        self.len > 0
    }

    /// `(latency, waker's time)` of a wake-up onto a CPU idle for `idle_ns`: each
    /// interpolated linearly in `log2(idle)` between the durations around it, the nearest
    /// one's outside them; `None` for an empty table.
    pub fn at(&self, idle_ns: Ns) -> Option<(Ns, Ns)> {
        let costs = |p: &WakePoint| [p.latency, p.waker];
        interpolate_log2(self.points(), idle_ns, |p| p.idle_ns, costs)
            .map(|[latency, waker]| (latency, waker))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(idle_ns: Ns, latency: Ns) -> WakePoint {
        WakePoint {
            idle_ns,
            latency,
            waker: latency / 4,
        }
    }

    #[test]
    fn the_latency_is_interpolated_in_log_idle_time_and_clamped_outside() {
        let table = WakeCosts::new(&[point(1_000, 20_000), point(100_000, 40_000)]).unwrap();
        assert_eq!(table.at(10), Some((20_000, 5_000)));
        assert_eq!(table.at(1_000), Some((20_000, 5_000)));
        // 10 µs is half way from 1 µs to 100 µs in log2.
        assert_eq!(table.at(10_000), Some((30_000, 7_500)));
        assert_eq!(table.at(100_000), Some((40_000, 10_000)));
        assert_eq!(table.at(u64::MAX), Some((40_000, 10_000)));
        assert_eq!(WakeCosts::NONE.at(5), None);
        assert!(!WakeCosts::NONE.is_table() && table.is_table());
    }

    #[test]
    fn the_halt_poll_window_grows_after_short_halts_and_resets_after_a_long_one() {
        let hp = HaltPoll {
            max_ns: 100_000,
            latency: 9_000,
            waker: 1_000,
        };
        // Short halts missed grow it: 0 -> 10 -> 20 -> 40 -> 80 -> 100 µs (the maximum).
        let mut w = 0;
        let mut seen = vec![];
        for _ in 0..6 {
            w = hp.next_window(w, 90_000);
            seen.push(w);
        }
        assert_eq!(seen, [10_000, 20_000, 40_000, 80_000, 100_000, 100_000]);
        // A halt inside it leaves it; one beyond the maximum resets it.
        assert_eq!(hp.next_window(40_000, 30_000), 40_000);
        assert_eq!(hp.next_window(100_000, 100_001), 0);
        assert_eq!(hp.next_window(0, 5_000_000), 0);
        // The costs: polled inside the window, the table's outside.
        let table = WakeCosts::new(&[point(50_000, 14_000), point(1_000_000, 27_000)])
            .unwrap()
            .with_halt_poll(hp);
        assert_eq!(table.at_window(50_000, 80_000), Some((9_000, 1_000)));
        assert_eq!(table.at_window(50_000, 40_000), Some((14_000, 3_500)));
        assert_eq!(table.at_window(50_000, 0), Some((14_000, 3_500)));
        // Without halt polling the window is ignored.
        let plain = WakeCosts::new(&[point(50_000, 14_000)]).unwrap();
        assert_eq!(plain.at_window(50_000, 80_000), Some((14_000, 3_500)));
        assert_eq!(WakeCosts::NONE.with_halt_poll(hp).halt_poll(), None);
    }

    #[test]
    fn a_table_out_of_order_too_long_or_at_zero_is_refused() {
        let e = WakeCosts::new(&[point(2, 1), point(1, 1)]).unwrap_err();
        assert!(e.contains("ascending"), "{e}");
        assert!(WakeCosts::new(&[point(0, 1)])
            .unwrap_err()
            .contains("positive"));
        let many: Vec<WakePoint> = (1..=7).map(|i| point(i, 1)).collect();
        assert!(WakeCosts::new(&many).unwrap_err().contains("at most 6"));
    }
}
