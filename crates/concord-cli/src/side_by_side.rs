//! What `concord vs-hotspot` and `concord vs-native` share: one run of either side and the A B /
//! B A order of the pairs.

/// One run of either side (the pause figures are 0 for a side without a collector).
#[derive(Clone, Debug, serde::Serialize)]
pub struct Run {
    pub wall_ms: f64,
    pub pause_total_ms: f64,
    pub pause_max_ms: f64,
    pub young: usize,
    pub full: usize,
    pub checksum: u64,
}

impl Run {
    /// The wall time outside GC pauses: the mutator's share of a run.
    pub fn mutator_ms(&self) -> f64 {
        self.wall_ms - self.pause_total_ms
    }
}

/// Which side goes first in pair `i` (`true`: side A): they alternate, so that neither always
/// runs on a warmer machine (or allocator).
pub fn pair_order(i: u32) -> [bool; 2] {
    if i.is_multiple_of(2) {
        [true, false]
    } else {
        [false, true]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_alternate_and_the_mutator_share_excludes_pauses() {
        assert_eq!(pair_order(0), [true, false]);
        assert_eq!(pair_order(1), [false, true]);
        let r = Run {
            wall_ms: 10.0,
            pause_total_ms: 2.5,
            pause_max_ms: 1.0,
            young: 2,
            full: 0,
            checksum: 7,
        };
        assert_eq!(r.mutator_ms(), 7.5);
    }
}
