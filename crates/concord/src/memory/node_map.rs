//! Which NUMA node a heap address belongs to, under the heap's layout (004 §3.2): pure
//! arithmetic on the address, cheap enough for the collector's copy path (a subtraction, a
//! shift and a modulo), no system call.
//!
//! * `interleaved`: page-granular round robin over the nodes, `(addr - base) / 4096 % nodes`,
//!   the rule `MPOL_INTERLEAVE` applies to anonymous memory (the kernel counts pages from the
//!   mapping's page offset, which for anonymous memory is the address's page number; the heap
//!   base is 64 KiB aligned, so both counts agree for node counts dividing 16, and for others
//!   the map is the layout's definition of a synthetic node). With real nodes the kernel puts
//!   pages there; with a synthetic topology the map *is* the layout.
//! * `fragmented`: old as `interleaved`; an address of a young space belongs to the node of
//!   the fragment it lies in (fragment `i` of eden and of each survivor space is node `i`'s).
//! * `off` (first touch): a page lives on the node of the thread that first touched it, which
//!   Concord does not track. The map says node 0 for every page: what first touch does when
//!   one thread initialises the heap (Parallel Scavenge's problem, 004 §3.2.2).

/// Bytes of one interleaving step: a base page.
pub const NODE_PAGE_SIZE: usize = 4096;
/// `log2(NODE_PAGE_SIZE)`.
const NODE_PAGE_SHIFT: u32 = NODE_PAGE_SIZE.trailing_zeros();

/// How heap addresses map to node indexes (0..nodes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeMapRule {
    /// Every address on node 0 (first touch by one thread).
    AllOnNodeZero,
    /// Pages round-robin over the nodes from the heap base.
    Interleaved,
    /// Old interleaved; young addresses on the node of their fragment.
    Fragmented,
}

/// The node map of one heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeMap {
    rule: NodeMapRule,
    base: usize,
    nodes: usize,
    /// `Fragmented`: the young generation's start, the end of eden's fragments, and the sizes
    /// of an eden and a survivor fragment (unused by the other rules).
    young_start: usize,
    eden_end: usize,
    eden_fragment: usize,
    survivor_fragment: usize,
}

impl NodeMap {
    /// The map of a heap starting at `base` over `nodes` nodes (at least 1) under `rule`.
    pub fn new(rule: NodeMapRule, base: usize, nodes: usize) -> NodeMap {
        NodeMap {
            rule,
            base,
            nodes: nodes.max(1),
            young_start: usize::MAX,
            eden_end: usize::MAX,
            eden_fragment: 1,
            survivor_fragment: 1,
        }
    }

    /// The `Fragmented` map of a heap starting at `base` whose young generation starts at
    /// `young_start` with `nodes` eden fragments of `eden` bytes, then `nodes` fragments of
    /// `survivor` bytes for each survivor space.
    pub fn fragmented(
        base: usize,
        young_start: usize,
        eden: usize,
        survivor: usize,
        nodes: usize,
    ) -> NodeMap {
        let nodes = nodes.max(1);
        NodeMap {
            rule: NodeMapRule::Fragmented,
            base,
            nodes,
            young_start,
            eden_end: young_start + nodes * eden,
            eden_fragment: eden.max(1),
            survivor_fragment: survivor.max(1),
        }
    }

    /// The number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The rule.
    pub fn rule(&self) -> NodeMapRule {
        self.rule
    }

    /// The node index of heap address `addr` (at or above the base).
    #[inline(always)]
    pub fn node_of(&self, addr: usize) -> usize {
        match self.rule {
            NodeMapRule::AllOnNodeZero => 0,
            NodeMapRule::Interleaved => self.interleaved_node(addr),
            NodeMapRule::Fragmented => {
                if addr < self.young_start {
                    self.interleaved_node(addr)
                } else if addr < self.eden_end {
                    (addr - self.young_start) / self.eden_fragment
                } else {
                    ((addr - self.eden_end) / self.survivor_fragment) % self.nodes
                }
            }
        }
    }

    #[inline(always)]
    fn interleaved_node(&self, addr: usize) -> usize {
        ((addr.wrapping_sub(self.base)) >> NODE_PAGE_SHIFT) % self.nodes
    }

    /// Add the bytes of `[addr, addr + len)` that lie on each node to `per_node[node]`
    /// (`per_node` has at least `nodes` entries): a TLAB or a large object spans many pages.
    pub fn add_bytes_per_node(&self, addr: usize, len: usize, per_node: &mut [u64]) {
        if len == 0 {
            return;
        }
        if self.rule == NodeMapRule::AllOnNodeZero || self.nodes == 1 {
            per_node[0] += len as u64;
            return;
        }
        if self.rule == NodeMapRule::Fragmented && addr >= self.young_start {
            // A young allocation never spans two fragments.
            per_node[self.node_of(addr)] += len as u64;
            return;
        }
        let end = addr + len;
        // The partial first page.
        let first_end = ((addr - self.base) | (NODE_PAGE_SIZE - 1)) + 1 + self.base;
        let head_end = first_end.min(end);
        per_node[self.node_of(addr)] += (head_end - addr) as u64;
        let mut at = head_end;
        // Whole rounds of `nodes` pages give every node the same.
        let round = NODE_PAGE_SIZE * self.nodes;
        let rounds = (end - at) / round;
        if rounds > 0 {
            for n in per_node.iter_mut().take(self.nodes) {
                *n += (rounds * NODE_PAGE_SIZE) as u64;
            }
            at += rounds * round;
        }
        // Fewer than `nodes` pages left, the last maybe partial.
        while at < end {
            let step = NODE_PAGE_SIZE.min(end - at);
            per_node[self.node_of(at)] += step as u64;
            at += step;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: usize = 0x7f00_0000_0000;

    #[test]
    fn interleaved_pages_go_round_robin_from_the_base() {
        let map = NodeMap::new(NodeMapRule::Interleaved, BASE, 2);
        assert_eq!(map.node_of(BASE), 0);
        assert_eq!(map.node_of(BASE + 4095), 0);
        assert_eq!(map.node_of(BASE + 4096), 1);
        assert_eq!(map.node_of(BASE + 2 * 4096 + 8), 0);
        let three = NodeMap::new(NodeMapRule::Interleaved, BASE, 3);
        let got: Vec<usize> = (0..7).map(|p| three.node_of(BASE + p * 4096)).collect();
        assert_eq!(got, vec![0, 1, 2, 0, 1, 2, 0]);
        let one = NodeMap::new(NodeMapRule::Interleaved, BASE, 1);
        assert_eq!(one.node_of(BASE + 12345 * 4096), 0);
        assert_eq!(NodeMap::new(NodeMapRule::Interleaved, BASE, 0).nodes(), 1);
    }

    #[test]
    fn fragmented_young_addresses_are_on_their_fragments_node() {
        let young = BASE + 64 * 4096;
        let (eden, survivor) = (8 * 4096, 2 * 4096);
        let map = NodeMap::fragmented(BASE, young, eden, survivor, 2);
        // Old: interleaved.
        assert_eq!(map.node_of(BASE), 0);
        assert_eq!(map.node_of(BASE + 4096), 1);
        // Eden fragments, then survivor 0's and survivor 1's.
        assert_eq!(map.node_of(young), 0);
        assert_eq!(map.node_of(young + eden - 8), 0);
        assert_eq!(map.node_of(young + eden), 1);
        let s0 = young + 2 * eden;
        assert_eq!(map.node_of(s0), 0);
        assert_eq!(map.node_of(s0 + survivor), 1);
        assert_eq!(map.node_of(s0 + 2 * survivor), 0);
        assert_eq!(map.node_of(s0 + 4 * survivor - 8), 1);
        let mut per = [0u64; 2];
        map.add_bytes_per_node(young + eden + 16, 3 * 4096, &mut per);
        assert_eq!(per, [0, 3 * 4096]);
        map.add_bytes_per_node(BASE, 2 * 4096, &mut per);
        assert_eq!(per, [4096, 4 * 4096]);
    }

    #[test]
    fn first_touch_is_node_zero_everywhere() {
        let map = NodeMap::new(NodeMapRule::AllOnNodeZero, BASE, 2);
        assert!((0..64).all(|p| map.node_of(BASE + p * 4096 + 24) == 0));
        let mut per = [0u64; 2];
        map.add_bytes_per_node(BASE + 100, 3 * 4096, &mut per);
        assert_eq!(per, [3 * 4096, 0]);
    }

    /// Byte by page, the slow way.
    fn naive(map: &NodeMap, addr: usize, len: usize) -> Vec<u64> {
        let mut per = vec![0u64; map.nodes()];
        for a in addr..addr + len {
            per[map.node_of(a)] += 1;
        }
        per
    }

    #[test]
    fn bytes_per_node_match_the_page_rule() {
        for nodes in 1..=4 {
            let map = NodeMap::new(NodeMapRule::Interleaved, BASE, nodes);
            for (off, len) in [
                (0, 0),
                (0, 1),
                (0, 4096),
                (8, 4096),
                (4000, 200),
                (4096 * 3 - 16, 4096 * 9 + 40),
                (123, 4096 * 17 + 5),
                (0, 4096 * nodes * 5),
            ] {
                let mut per = vec![0u64; nodes];
                map.add_bytes_per_node(BASE + off, len, &mut per);
                assert_eq!(per, naive(&map, BASE + off, len), "{nodes} {off} {len}");
                assert_eq!(per.iter().sum::<u64>(), len as u64);
            }
        }
    }
}
