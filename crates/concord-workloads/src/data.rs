//! Deterministic data the workloads generate and check: the splitmix64 hash and generator
//! their inputs come from, the FNV-1a hash of byte strings, patterned byte-array values whose
//! contents are known in closed form, byte arrays copied into the heap, and the node count of
//! complete binary trees.
//!
//! Checksums are derived from these functions both by the heap implementations and by the
//! plain-Rust references, so they must stay bit for bit the same: changing one changes stored
//! expected checksums.
//!
//! The small helpers are `#[inline]`: they run in the workloads' inner loops, where a call
//! into another codegen unit would slow the mutators down and so change what is measured.

use concord::{GcError, Handle, Mutator};

use crate::WorkloadError;

/// splitmix64's finalizer: a bijective 64-bit mix (the workloads' deterministic hashing).
#[inline]
pub(crate) const fn splitmix_finalize(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// splitmix64's increment (the golden gamma).
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

/// One splitmix64 step from `z`: add the golden gamma, then [`splitmix_finalize`].
#[inline]
pub(crate) const fn splitmix(z: u64) -> u64 {
    splitmix_finalize(z.wrapping_add(GAMMA))
}

/// A splitmix64 generator whose state starts at `splitmix_finalize(seed)`.
pub(crate) struct Rng(u64);

impl Rng {
    #[inline]
    pub(crate) fn new(seed: u64) -> Self {
        Rng(splitmix_finalize(seed))
    }

    #[inline]
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GAMMA);
        splitmix_finalize(self.0)
    }

    /// Uniform in `0..n` (multiply-shift, no division).
    #[inline]
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// Streaming 64-bit FNV-1a.
pub(crate) struct Fnv(u64);

impl Fnv {
    #[inline]
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    /// Feeds `bytes` in.
    #[inline]
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash of what was fed in.
    #[inline]
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// 64-bit FNV-1a of `bytes`.
#[inline]
pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.bytes(bytes);
    h.finish()
}

/// Nodes in a complete binary tree of depth `d` (a single node has depth 0): `2^(d+1) - 1`.
pub(crate) fn tree_nodes(d: u32) -> u64 {
    (1u64 << (d + 1)) - 1
}

/// Allocates a byte array holding `bytes`.
#[inline]
pub(crate) fn byte_array(m: &mut Mutator<'_>, bytes: &[u8]) -> Result<Handle, GcError> {
    let a = m.alloc_byte_array(bytes.len())?;
    m.payload_mut(a).copy_from_slice(bytes);
    Ok(a)
}

/// Little-endian number fields of one payload, read and written through a single
/// [`Mutator::payload_mut`] borrow: one handle check for all of them, where each
/// [`Mutator::write_u64`] (and `read_u64`, `write_u32`, ...) checks the handle again. The
/// layout is the one those accessors use, so either may read what the other wrote.
pub(crate) struct Fields<'a>(pub(crate) &'a mut [u8]);

impl Fields<'_> {
    /// The `u64` at `offset`.
    #[inline]
    pub(crate) fn u64(&self, offset: usize) -> u64 {
        u64::from_le_bytes(self.0[offset..offset + 8].try_into().expect("8 bytes"))
    }

    /// Writes `v` at `offset`.
    #[inline]
    pub(crate) fn set_u64(&mut self, offset: usize, v: u64) {
        self.0[offset..offset + 8].copy_from_slice(&v.to_le_bytes());
    }

    /// The `u32` at `offset`.
    #[inline]
    pub(crate) fn u32(&self, offset: usize) -> u32 {
        u32::from_le_bytes(self.0[offset..offset + 4].try_into().expect("4 bytes"))
    }

    /// Writes `v` at `offset`.
    #[inline]
    pub(crate) fn set_u32(&mut self, offset: usize, v: u32) {
        self.0[offset..offset + 4].copy_from_slice(&v.to_le_bytes());
    }
}

/// The contents of a patterned value: little-endian words, word `j` being `base + j · step`
/// (wrapping), so that a reader can check a value and the reference can sum it without
/// storing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    base: u64,
    step: u64,
}

impl Pattern {
    /// The pattern starting at `base`, with the odd step `splitmix(base) | 1`.
    #[inline]
    pub(crate) fn new(base: u64) -> Self {
        Pattern {
            base,
            step: splitmix(base) | 1,
        }
    }

    /// The wrapping sum of the first `words` words, in closed form.
    #[inline]
    pub(crate) fn sum(&self, words: usize) -> u64 {
        let n = words as u64;
        n.wrapping_mul(self.base)
            .wrapping_add(self.step.wrapping_mul(n * n.saturating_sub(1) / 2))
    }

    /// A new byte array of `words` words of the pattern; the handle is the caller's.
    #[inline]
    pub(crate) fn alloc(&self, m: &mut Mutator<'_>, words: usize) -> Result<Handle, GcError> {
        let v = m.alloc_byte_array(words * 8)?;
        for (j, w) in m.payload_mut(v).chunks_exact_mut(8).enumerate() {
            w.copy_from_slice(&self.word(j).to_le_bytes());
        }
        Ok(v)
    }

    /// Checks that `bytes` hold `words` words starting with the pattern's first word and
    /// returns the wrapping sum of their words; if they do not, the value (which `what` names)
    /// is corrupt.
    pub(crate) fn check(
        &self,
        bytes: &[u8],
        words: usize,
        what: impl FnOnce() -> String,
    ) -> Result<u64, WorkloadError> {
        let held = bytes.len() / 8;
        let word =
            |j: usize| u64::from_le_bytes(bytes[j * 8..j * 8 + 8].try_into().expect("8 bytes"));
        if held != words || words == 0 || word(0) != self.base {
            return Err(WorkloadError::Corrupt(format!(
                "{} has a wrong value ({held} words)",
                what()
            )));
        }
        Ok((0..words).fold(0u64, |s, j| s.wrapping_add(word(j))))
    }

    /// Word `j`.
    #[inline]
    fn word(&self, j: usize) -> u64 {
        self.base.wrapping_add(self.step.wrapping_mul(j as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use concord::ObjectType;

    #[test]
    fn fnv_of_known_strings() {
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn splitmix_steps_match_the_generator() {
        let mut r = Rng::new(42);
        let start = splitmix_finalize(42);
        assert_eq!(r.next(), splitmix(start));
        assert_eq!(r.next(), splitmix(start.wrapping_add(GAMMA)));
        assert!((0..1000).all(|_| r.below(7) < 7));
    }

    #[test]
    fn fields_use_the_mutators_layout() {
        let heap = crate::scaffold::test_heap(4 * crate::MIB, false);
        let mut m = heap.attach();
        let obj = m.alloc(ObjectType::fixed(0, 16)).unwrap();
        let mut f = Fields(m.payload_mut(obj));
        f.set_u64(0, 0x0102_0304_0506_0708);
        f.set_u32(8, 0x0a0b_0c0d);
        f.set_u32(12, f.u32(8) + 1);
        assert_eq!(f.u64(0), 0x0102_0304_0506_0708);
        assert_eq!(m.read_u64(obj, 0), 0x0102_0304_0506_0708);
        assert_eq!(m.read_u32(obj, 8), 0x0a0b_0c0d);
        assert_eq!(m.read_u32(obj, 12), 0x0a0b_0c0e);
        m.write_u64(obj, 8, u64::MAX - 1);
        let f = Fields(m.payload_mut(obj));
        assert_eq!(f.u64(8), u64::MAX - 1);
        assert_eq!(f.u32(8), u32::MAX - 1);
    }

    #[test]
    fn pattern_sum_closed_form_matches_the_words() {
        for base in [0, 7, u64::MAX - 3] {
            let p = Pattern::new(base);
            for n in [1usize, 4, 24, 64] {
                let direct = (0..n).fold(0u64, |s, j| s.wrapping_add(p.word(j)));
                assert_eq!(p.sum(n), direct, "base {base}, {n} words");
                let bytes: Vec<u8> = (0..n).flat_map(|j| p.word(j).to_le_bytes()).collect();
                let what = || "v".to_string();
                assert_eq!(p.check(&bytes, n, what).unwrap(), direct);
                let e = p.check(&bytes, n + 1, what).unwrap_err().to_string();
                assert!(
                    e.contains(&format!("v has a wrong value ({n} words)")),
                    "{e}"
                );
                assert!(Pattern::new(base ^ 1).check(&bytes, n, what).is_err());
            }
        }
    }
}
