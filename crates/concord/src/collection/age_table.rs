//! Survivor bytes by age, and the tenuring threshold computed from them (HotSpot `AgeTable`).

use crate::object::MAX_AGE;

/// Bytes copied to to-space per object age.
#[derive(Clone, Debug, Default)]
pub struct AgeTable {
    /// `bytes[a]`: bytes of survivors that now have age `a`.
    pub bytes: [usize; MAX_AGE as usize + 1],
}

impl AgeTable {
    /// Record `size` bytes of survivors of age `age`.
    #[inline(always)]
    pub fn add(&mut self, age: u32, size: usize) {
        self.bytes[age.min(MAX_AGE) as usize] += size;
    }

    /// Add another worker's table.
    pub fn merge(&mut self, other: &AgeTable) {
        for (a, b) in self.bytes.iter_mut().zip(other.bytes.iter()) {
            *a += b;
        }
    }

    /// The smallest age at which survivors would exceed `target_ratio`% of a survivor space of
    /// `survivor_capacity` bytes, capped at `max_threshold`.
    pub fn tenuring_threshold(
        &self,
        survivor_capacity: usize,
        target_ratio: u32,
        max_threshold: u32,
    ) -> u32 {
        let desired = survivor_capacity / 100 * target_ratio as usize;
        let mut total = 0;
        let mut age = 1;
        while age <= MAX_AGE {
            total += self.bytes[age as usize];
            if total > desired {
                break;
            }
            age += 1;
        }
        age.min(max_threshold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_drops_when_survivors_overflow_the_target() {
        let mut t = AgeTable::default();
        assert_eq!(
            t.tenuring_threshold(1000, 50, 15),
            15,
            "empty table keeps the maximum"
        );
        t.add(1, 300);
        t.add(2, 300);
        assert_eq!(t.tenuring_threshold(1000, 50, 15), 2);
        assert_eq!(t.tenuring_threshold(1000, 50, 1), 1);
        let mut u = AgeTable::default();
        u.add(1, 600);
        t.merge(&u);
        assert_eq!(t.tenuring_threshold(1000, 50, 15), 1);
    }
}
