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

use super::reach::interpolate_log2;
use super::Ns;

/// The most idle durations a [`WakeCosts`] holds.
pub const POINTS: usize = 6;

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
