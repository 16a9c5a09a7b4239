//! The NUMA cost model behind [`crate::exec::charge_copy_on`]: a copy from or to another node's
//! memory costs more (remote latency), and a node's memory controller, like the interconnect
//! between nodes, serves only so many copying CPUs at full speed at once (bandwidth).
//!
//! # The model
//!
//! A copy of `objects` objects and `bytes` bytes on CPU `c` at virtual time `t`, touching memory
//! on node `m`, costs the calibrated local cost ([`Costs::copy_ns`]: per object plus per byte)
//! with two changes:
//!
//! * **Bandwidth.** `k` is the number of CPUs copying on node `m` at `t`: this one, and every
//!   other CPU whose latest copy on `m` so far ends after `t`. When `k`
//!   exceeds [`NumaCosts::node_streams`], the node's bandwidth is shared: the per-byte part is
//!   multiplied by `k / node_streams`. A remote copy also crosses the interconnect, which serves
//!   [`NumaCosts::interconnect_streams`] remote copiers machine-wide the same way; the larger of
//!   the two slow-downs applies. The per-object part (the collector's own work on each object)
//!   is not bandwidth-bound.
//! * **Latency.** A remote copy (`m` is not `c`'s node) costs [`NumaCosts::remote_permille`]
//!   per mille of the local one, per-object and per-byte parts alike.
//!
//! Each CPU's copies are known when it makes them, and the executor runs CPUs in virtual-time
//! order (within its lookahead), so a copy sees the copies that overlap its start (and any that
//! another CPU, ahead by less than the lookahead, started just after it); one that starts later
//! during it is slowed by this one instead. Over many small copies (a collection
//! charges one per object or batch) the shares even out. The whole model is a function of the
//! calls and their virtual times: deterministic.
//!
//! # The figures (004, Gidra et al., ASPLOS 2013, on their 48-core, 8-node AMD Opteron 6172)
//!
//! 004 publishes no latency ratio or bandwidth in GB/s; it publishes where copying stops
//! scaling, which is what the model needs, in units of one CPU's calibrated copy speed:
//!
//! * `node_streams = 8`: §3.2.1, Figure 3, "Unbalanced-Remote" (every buffer on node 0): the
//!   speed-up stops growing at 8 threads, so node 0's memory controller saturates at 8 CPUs
//!   streaming from it.
//! * `interconnect_streams = 32`: §3.2.1, Figure 3, "Balanced-Remote" (pages round-robin over
//!   the nodes, so mostly remote) stops improving beyond 32 threads while "Balanced-Local"
//!   goes on to 40: the interconnect saturates at about 32 remote streams.
//! * `remote_permille = 1200`: 004 only says that remote latency matters little (§4.2.2:
//!   interleaved and fragmented spaces perform alike below 32 GC threads; §1: the effect of
//!   lower latency is marginal) and that its nodes are at most two HyperTransport hops apart
//!   (§4.1.1). The factor is taken from AMD's ccNUMA performance guide for Opteron (publication
//!   40555, Figure 4: a read 8–9 % slower one hop away and 30 % slower two hops away on an idle
//!   4-socket system), between its one- and two-hop figures, since the model has no hops.

use crate::exec::{Costs, CpuId, Ns};
use crate::machine::Machine;

/// The NUMA figures of the model (see the module documentation for their sources).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NumaCosts {
    /// A copy touching a remote node costs this much per mille of a local one (1000: no
    /// penalty).
    pub remote_permille: u64,
    /// CPUs one node's memory controller serves at full copy speed at once (at least 1).
    pub node_streams: u32,
    /// CPUs copying across nodes that the interconnect serves at full speed at once, machine
    /// wide (at least 1).
    pub interconnect_streams: u32,
}

impl NumaCosts {
    /// 004's 48-core, 8-node Opteron 6172 (`magny-cours-48`).
    pub const MAGNY_COURS: NumaCosts = NumaCosts {
        remote_permille: 1_200,
        node_streams: 8,
        interconnect_streams: 32,
    };
}

impl Default for NumaCosts {
    fn default() -> Self {
        NumaCosts::MAGNY_COURS
    }
}

/// The NUMA model of one simulation: the machine's CPU-to-node map, the figures, and which CPU
/// is copying on which node until when. Give it to [`crate::exec::Sim::with_numa`].
#[derive(Clone, Debug)]
pub struct Numa {
    costs: NumaCosts,
    /// Node of each CPU.
    node_of: Vec<usize>,
    /// `node_busy_until[node][cpu]`: when that CPU's latest copy on the node ends.
    node_busy_until: Vec<Vec<Ns>>,
    /// Per CPU: when its latest remote copy ends.
    remote_busy_until: Vec<Ns>,
}

impl Numa {
    /// The model for `machine`'s nodes with `costs` (stream counts of 0 are taken as 1).
    pub fn new(machine: &Machine, costs: NumaCosts) -> Numa {
        let cpus = machine.cpus();
        let costs = NumaCosts {
            node_streams: costs.node_streams.max(1),
            interconnect_streams: costs.interconnect_streams.max(1),
            ..costs
        };
        Numa {
            costs,
            node_of: (0..cpus).map(|c| machine.node_of(c)).collect(),
            node_busy_until: vec![vec![0; cpus]; machine.nodes()],
            remote_busy_until: vec![0; cpus],
        }
    }

    /// The figures in force.
    pub fn costs(&self) -> NumaCosts {
        self.costs
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.node_busy_until.len()
    }

    /// The node `cpu` belongs to.
    pub fn node_of(&self, cpu: CpuId) -> usize {
        self.node_of[cpu]
    }

    /// The cost of a copy on `cpu` starting at `now` that touches `memory_node`'s memory
    /// (module documentation), recorded as using that node (and the interconnect, if remote)
    /// until it ends.
    ///
    /// # Panics
    ///
    /// If `memory_node` is not a node of the machine (a bug in the caller).
    pub fn copy(
        &mut self,
        base: &Costs,
        objects: u64,
        bytes: u64,
        cpu: CpuId,
        memory_node: usize,
        now: Ns,
    ) -> Ns {
        assert!(
            memory_node < self.nodes(),
            "memory node {memory_node} does not exist; the machine has nodes 0..{}",
            self.nodes()
        );
        let remote = self.node_of[cpu] != memory_node;
        let others_until = |until: &[Ns]| {
            until
                .iter()
                .enumerate()
                .filter(|&(c, &end)| c != cpu && end > now)
                .count() as u128
        };
        // The slow-down of the per-byte part as a fraction num/den, the largest of 1, the
        // node's share and (remote) the interconnect's share.
        let mut slowdown = (1u128, 1u128);
        let mut share = |copiers: u128, streams: u32| {
            let streams = u128::from(streams);
            if copiers * slowdown.1 > slowdown.0 * streams {
                slowdown = (copiers, streams);
            }
        };
        share(
            1 + others_until(&self.node_busy_until[memory_node]),
            self.costs.node_streams,
        );
        if remote {
            share(
                1 + others_until(&self.remote_busy_until),
                self.costs.interconnect_streams,
            );
        }
        let (num, den) = slowdown;
        let permille = if remote {
            u128::from(self.costs.remote_permille)
        } else {
            1_000
        };
        let object_ps = u128::from(objects) * u128::from(base.copy_per_object_ps);
        let byte_ps = u128::from(bytes) * u128::from(base.copy_per_byte_ps);
        // ps × den × 1000 over den × 1000 × 1000: one rounding, to the nearest ns.
        let scaled = (object_ps * den + byte_ps * num) * permille;
        let unit = den * 1_000_000;
        let ns = Ns::try_from((scaled + unit / 2) / unit).unwrap_or(Ns::MAX);
        let end = now.saturating_add(ns);
        self.node_busy_until[memory_node][cpu] = end;
        if remote {
            self.remote_busy_until[cpu] = end;
        }
        ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 10 ns per object, 1 ns per byte: a copy of 10 objects and 1000 bytes is 100 + 1000 ns.
    const BASE: Costs = Costs {
        copy_per_object_ps: 10_000,
        copy_per_byte_ps: 1_000,
        ..Costs::DEFAULT
    };

    fn magny() -> Numa {
        Numa::new(
            &Machine::named("magny-cours-48", None).unwrap(),
            NumaCosts::MAGNY_COURS,
        )
    }

    #[test]
    fn a_lone_local_copy_costs_what_charge_copy_does() {
        let mut numa = magny();
        assert_eq!(numa.nodes(), 8);
        assert_eq!(numa.node_of(7), 1); // 6 cores per node
        assert_eq!(numa.copy(&BASE, 10, 1_000, 7, 1, 0), 1_100);
        assert_eq!(
            numa.copy(&Costs::DEFAULT, 3, 777, 0, 0, 5_000),
            Costs::DEFAULT.copy_ns(3, 777)
        );
    }

    #[test]
    fn a_lone_remote_copy_costs_the_remote_factor() {
        let mut numa = magny();
        // 1100 × 1.2.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 0, 5, 0), 1_320);
    }

    #[test]
    fn copiers_beyond_a_nodes_streams_share_its_bandwidth() {
        // One node of 16 CPUs: all local, only the node's bandwidth matters.
        let machine = Machine::new("16", 1, 1, 16, false).unwrap();
        let mut numa = Numa::new(&machine, NumaCosts::MAGNY_COURS);
        // CPUs 0..8 start copies at time 0: the k-th sees k copiers, all within 8 streams.
        for cpu in 0..8 {
            assert_eq!(numa.copy(&BASE, 10, 1_000, cpu, 0, 0), 1_100, "CPU {cpu}");
        }
        // The 9th to 12th: 9..12 copiers, bytes slowed by k/8: 100 + 1000·k/8.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 8, 0, 0), 100 + 1_125);
        assert_eq!(numa.copy(&BASE, 10, 1_000, 9, 0, 0), 100 + 1_250);
        assert_eq!(numa.copy(&BASE, 10, 1_000, 10, 0, 0), 100 + 1_375);
        assert_eq!(numa.copy(&BASE, 10, 1_000, 11, 0, 500), 100 + 1_500);
        // After the first eight copies ended (1100), only CPUs 8..11 are still copying.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 12, 0, 1_200), 1_100);
        // CPU 0's own earlier copy does not count against it.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 0, 0, 1_200), 1_100);
    }

    #[test]
    fn remote_copiers_share_the_interconnect_and_the_larger_share_wins() {
        let costs = NumaCosts {
            remote_permille: 1_000,
            node_streams: 8,
            interconnect_streams: 2,
        };
        let mut numa = Numa::new(&Machine::named("magny-cours-48", None).unwrap(), costs);
        // Node 0 (CPUs 0..6) copies from node 1: remote copies 1 and 2 fit the interconnect.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 0, 1, 0), 1_100);
        assert_eq!(numa.copy(&BASE, 10, 1_000, 1, 1, 0), 1_100);
        // The third remote copier (to node 2): 3/2 of the bytes; node 2 itself is free.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 2, 2, 0), 100 + 1_500);
        // A local copy on node 1 (CPU 6) shares only node 1 (3 copiers of 8): no slow-down.
        assert_eq!(numa.copy(&BASE, 10, 1_000, 6, 1, 0), 1_100);
    }

    #[test]
    #[should_panic(expected = "memory node 8 does not exist; the machine has nodes 0..8")]
    fn a_node_outside_the_machine_is_refused() {
        magny().copy(&BASE, 1, 1, 0, 8, 0);
    }

    #[test]
    fn zero_streams_mean_one() {
        let costs = NumaCosts {
            remote_permille: 1_000,
            node_streams: 0,
            interconnect_streams: 0,
        };
        let numa = Numa::new(&Machine::new("2", 1, 1, 2, false).unwrap(), costs);
        assert_eq!(numa.costs().node_streams, 1);
        assert_eq!(numa.costs().interconnect_streams, 1);
    }
}
