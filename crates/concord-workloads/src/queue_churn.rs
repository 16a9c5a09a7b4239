//! `queue-churn`: the LinkedIn `Test.java` program of paper 002 (§4.2): objects of 10 KiB are
//! appended to a queue; whenever it holds 100 000 of them, the oldest 50 000 are removed. It
//! runs for a fixed duration (`--size` seconds, [`SIZE`], default 3); the work done is
//! the number of objects enqueued, and the pause timeline (the point of the experiment) comes
//! from the collection records.
//!
//! The queue is a heap object holding a ring (a reference array of `high_water` slots) and its
//! head and length. Each object is a byte array stamped with its sequence number `s` (first
//! word `s`, middle word `s * 0x9e3779b97f4a7c15`, last word `!s`). Every removed object is
//! checked: it must be the oldest one (`s` equal to the number removed so far), with all three
//! words intact, else the run fails with [`WorkloadError::Corrupt`]. At the end the queue is
//! drained the same way. The checksum is the sum of the sequence numbers read back from the
//! removed objects; a correct run removes every object it enqueued, so it equals
//! `n (n - 1) / 2` for `n` objects enqueued, summed over mutators and rounds (the expected
//! checksum). With `--mutators N` each mutator runs its own queue for the whole duration
//! (independent copies, as the program's threads would).
//!
//! The thresholds are the paper's ([`QueueChurnParams::standard`]); smaller ones (for tests)
//! through [`QueueChurn::with_params`].
//!
//! # Heap size
//!
//! The live set peaks at 100 000 objects of 10 KiB (plus an 8-byte header each), 977 MiB, plus
//! the 0.8 MiB ring. Measured with one mutator (optimized preset, 2 GC threads, release build,
//! 16 to 64 MiB steps): the smallest heap that completes the default 3 s run is 1232 MiB
//! (1216 runs out of memory), but success is not monotonic in the heap size and depends on
//! how long the run lasts: 1280 and 1344 MiB run out of memory in a 6 s run, when the old
//! generation (two thirds of the heap) is smaller than the peak live set and eden's survivors
//! must be moved into it whole. 1408 MiB completes 3, 6 and 10 s runs, as does every size
//! tried above it (up to 1600 MiB); we take it as the minimum. The default heap is three times
//! that, 4224 MiB (4.1 GiB), per mutator; so `--mutators 4` asks for 16.5 GiB, which this
//! 24 GiB machine holds but which is the practical limit. The paper's thresholds are kept
//! rather than scaled down, so the pauses copy and compact the paper's amounts of data.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use concord::{Handle, Heap, Mutator, ObjectType};

use crate::scaffold::{self, detail, view, Size};
use crate::{run_copies, Workload, WorkloadError, WorkloadParams, WorkloadResult, MIB};

/// The name [`crate::lookup`] knows this workload by.
pub const NAME: &str = "queue-churn";

/// `--size`: the duration of a round in seconds, 3 by default, at most an hour. The default
/// heap with the standard parameters is three times the measured smallest heap, 1408 MiB per
/// mutator, whatever the duration (see the module documentation).
pub const SIZE: Size = Size::named("queue-churn duration (size)", 3, 1..=3600, " seconds")
    .measured_heap(1408 * MIB, 1408 * MIB);

/// The queue: `ring` (a reference array); payload `head: u64`, `len: u64`.
pub const QUEUE: ObjectType = ObjectType::fixed(1, 16);

const RING: usize = 0;
const Q_HEAD: usize = 0;
const Q_LEN: usize = 8;

/// Multiplier of the middle stamp word.
const MIDDLE_STAMP: u64 = 0x9e37_79b9_7f4a_7c15;
/// Objects enqueued between two looks at the clock (a power of two).
const CLOCK_EVERY: u64 = 16;

/// The program's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueChurnParams {
    /// Bytes of each queued byte array (at least 24: three stamp words).
    pub object_bytes: usize,
    /// Queue length at which the oldest objects are removed.
    pub high_water: usize,
    /// How many of the oldest objects are removed then (`1..=high_water`).
    pub remove: usize,
    /// How long a round runs when `--size` is not given.
    pub default_duration: Duration,
}

impl QueueChurnParams {
    /// The paper's: 10 KiB objects, 100 000 / 50 000, 3 seconds.
    pub const fn standard() -> Self {
        QueueChurnParams {
            object_bytes: 10 * 1024,
            high_water: 100_000,
            remove: 50_000,
            default_duration: Duration::from_secs(SIZE.default() as u64),
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let bad = |msg: String| Err(WorkloadError::BadParameter(format!("queue-churn: {msg}")));
        if self.object_bytes < 24 {
            return bad(format!(
                "object size {} is too small (allowed: at least 24 bytes)",
                self.object_bytes
            ));
        }
        if self.high_water == 0 {
            return bad("high water is 0 (allowed: at least 1)".into());
        }
        if !(1..=self.high_water).contains(&self.remove) {
            return bad(format!(
                "removing {} at a time is out of range (allowed: 1..={})",
                self.remove, self.high_water
            ));
        }
        Ok(())
    }

    /// The largest live set: `high_water` objects with their headers, plus the ring.
    pub fn peak_live_bytes(&self) -> usize {
        // A byte array is a header word and its bytes rounded up to words.
        let object = 8 + self.object_bytes.div_ceil(8) * 8;
        self.high_water
            .saturating_mul(object)
            .saturating_add(8 * self.high_water + 16)
    }
}

/// The `queue-churn` workload. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueChurn {
    params: QueueChurnParams,
}

impl QueueChurn {
    /// With the paper's parameters ([`QueueChurnParams::standard`]).
    pub const fn standard() -> Self {
        QueueChurn {
            params: QueueChurnParams::standard(),
        }
    }

    /// With other parameters (checked when it runs).
    pub const fn with_params(params: QueueChurnParams) -> Self {
        QueueChurn { params }
    }

    /// The parameters it runs with.
    pub fn params(&self) -> &QueueChurnParams {
        &self.params
    }

    /// How long a round runs for `params`: `size` seconds (checked against [`SIZE`]), else the
    /// parameters' default duration.
    pub fn duration(&self, params: &WorkloadParams) -> Result<Duration, WorkloadError> {
        match params.size {
            None => Ok(self.params.default_duration),
            Some(s) => Ok(Duration::from_secs(SIZE.check(s)?.into())),
        }
    }
}

impl Default for QueueChurn {
    /// [`QueueChurn::standard`].
    fn default() -> Self {
        QueueChurn::standard()
    }
}

impl Workload for QueueChurn {
    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "LinkedIn's Test.java: 10 KiB objects into a queue, the oldest 50 000 removed whenever \
         it holds 100 000, for N seconds (size N, default 3; one queue per mutator)"
    }

    fn default_heap(&self, params: &WorkloadParams) -> usize {
        if self.params == QueueChurnParams::standard() {
            return SIZE.default_heap(params);
        }
        // Standard ratio: 3 x 1.4 x the peak live set.
        let per_copy =
            scaffold::round_up_mib(self.params.peak_live_bytes().saturating_mul(42) / 10)
                .max(4 * MIB);
        per_copy.saturating_mul(params.mutators.max(1))
    }

    fn validate(&self, params: &WorkloadParams) -> Result<(), WorkloadError> {
        params.validate()?;
        self.params.validate()?;
        self.duration(params).map(drop)
    }

    fn run(&self, heap: &Heap, params: &WorkloadParams) -> Result<WorkloadResult, WorkloadError> {
        self.validate(params)?;
        let duration = self.duration(params)?;
        let p = self.params;
        let enqueued = AtomicU64::new(0);
        let drops = AtomicU64::new(0);
        let expected = AtomicU64::new(0);
        let start = Instant::now();
        let checksum = run_copies(heap, params, NAME, |m, _copy, _round| {
            let r = churn(m, &p, duration)?;
            enqueued.fetch_add(r.enqueued, Ordering::Relaxed);
            drops.fetch_add(r.drops, Ordering::Relaxed);
            expected.fetch_add(triangle(r.enqueued), Ordering::Relaxed);
            Ok(r.checksum)
        })?;
        let elapsed = start.elapsed().as_secs_f64();
        let enqueued = enqueued.into_inner();
        let details = vec![
            detail("objects enqueued", enqueued),
            detail(
                "objects enqueued per second",
                format!("{:.0}", enqueued as f64 / elapsed.max(1e-9)),
            ),
            detail(
                "removals of the oldest",
                format!("{} x {}", drops.into_inner(), p.remove),
            ),
            detail(
                "queue",
                format!(
                    "{} B objects, high water {}, duration {:.3} s per round",
                    p.object_bytes,
                    p.high_water,
                    duration.as_secs_f64()
                ),
            ),
        ];
        // The expected checksum follows from what the copies enqueued, all rounds included.
        Ok(WorkloadResult {
            checksum,
            expected_checksum: Some(expected.into_inner()),
            details,
        })
    }
}

/// `n (n - 1) / 2`: the sum of the sequence numbers `0..n`.
fn triangle(n: u64) -> u64 {
    (u128::from(n) * u128::from(n.saturating_sub(1)) / 2) as u64
}

/// What one copy did.
struct Churn {
    checksum: u64,
    enqueued: u64,
    drops: u64,
}

/// One copy of the program on `m` for `duration`.
fn churn(
    m: &mut Mutator<'_>,
    p: &QueueChurnParams,
    duration: Duration,
) -> Result<Churn, WorkloadError> {
    p.validate()?;
    let deadline = Instant::now() + duration;
    m.scope(|m| {
        let queue = m.alloc(QUEUE)?;
        let ring = m.alloc_ref_array(p.high_water)?;
        m.set_ref(queue, RING, Some(ring));
        let mut r = Churn {
            checksum: 0,
            enqueued: 0,
            drops: 0,
        };
        let mut removed = 0u64;
        loop {
            // A look at the clock every CLOCK_EVERY objects (a power of two).
            if r.enqueued & (CLOCK_EVERY - 1) == 0 && Instant::now() >= deadline {
                break;
            }
            m.scope(|m| {
                let obj = m.alloc_byte_array(p.object_bytes)?;
                stamp(m, obj, r.enqueued);
                let (head, len) = (m.read_u64(queue, Q_HEAD), m.read_u64(queue, Q_LEN));
                let tail = (head + len) as usize % p.high_water;
                m.set_ref(ring, tail, Some(obj));
                m.write_u64(queue, Q_LEN, len + 1);
                Ok::<_, WorkloadError>(())
            })?;
            r.enqueued += 1;
            if m.read_u64(queue, Q_LEN) as usize == p.high_water {
                for _ in 0..p.remove {
                    r.checksum = r
                        .checksum
                        .wrapping_add(dequeue(m, p, queue, ring, removed)?);
                    removed += 1;
                }
                r.drops += 1;
            }
        }
        while m.read_u64(queue, Q_LEN) > 0 {
            r.checksum = r
                .checksum
                .wrapping_add(dequeue(m, p, queue, ring, removed)?);
            removed += 1;
        }
        Ok(r)
    })
}

/// Writes sequence number `seq` into the three stamp words of `obj`.
fn stamp(m: &mut Mutator<'_>, obj: Handle, seq: u64) {
    let (mid, last) = stamp_offsets(m.array_len(obj));
    m.write_u64(obj, 0, seq);
    m.write_u64(obj, mid, seq.wrapping_mul(MIDDLE_STAMP));
    m.write_u64(obj, last, !seq);
}

/// Offsets of the middle and last stamp words of an object of `len` bytes.
fn stamp_offsets(len: usize) -> (usize, usize) {
    ((len / 2) & !7, len - 8)
}

/// Removes the oldest object, which must carry sequence number `expect` with intact stamps;
/// returns its sequence number. The object is checked through a [`concord::Gc`] view: no handle.
fn dequeue(
    m: &mut Mutator<'_>,
    p: &QueueChurnParams,
    queue: Handle,
    ring: Handle,
    expect: u64,
) -> Result<u64, WorkloadError> {
    let (head, len) = (m.read_u64(queue, Q_HEAD), m.read_u64(queue, Q_LEN));
    let at = head as usize % p.high_water;
    let ring_view = view(m, ring);
    let oldest = ring_view.get(at).filter(|_| len > 0);
    let Some(obj) = oldest else {
        return Err(WorkloadError::Corrupt(format!(
            "queue-churn: object {expect} is missing from the queue (slot {at}, length {len})"
        )));
    };
    let bytes = obj.array_len();
    if bytes != p.object_bytes {
        return Err(WorkloadError::Corrupt(format!(
            "queue-churn: object {expect} has {bytes} bytes, not {}",
            p.object_bytes
        )));
    }
    let (mid, last) = stamp_offsets(bytes);
    let seq = obj.read_u64(0);
    let words = (obj.read_u64(mid), obj.read_u64(last));
    if seq != expect || words != (seq.wrapping_mul(MIDDLE_STAMP), !seq) {
        return Err(WorkloadError::Corrupt(format!(
            "queue-churn: the oldest object should be {expect}; its stamps read {seq:#x}, \
             {:#x}, {:#x}",
            words.0, words.1
        )));
    }
    m.store(ring_view, at, None);
    m.write_u64(queue, Q_HEAD, (head + 1) % p.high_water as u64);
    m.write_u64(queue, Q_LEN, len - 1);
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> QueueChurnParams {
        QueueChurnParams {
            object_bytes: 1000,
            high_water: 100,
            remove: 50,
            default_duration: Duration::from_millis(50),
        }
    }

    #[test]
    fn parameters_and_durations_are_checked() {
        let mut p = small();
        p.object_bytes = 16;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("object size 16 is too small"), "{e}");
        let mut p = small();
        p.remove = 101;
        let e = p.validate().unwrap_err().to_string();
        assert!(e.contains("removing 101 at a time"), "{e}");
        let w = QueueChurn::standard();
        for bad in [0, 3601] {
            let e = w
                .validate(&WorkloadParams {
                    size: Some(bad),
                    ..Default::default()
                })
                .unwrap_err()
                .to_string();
            assert!(e.contains("out of range (allowed: 1..=3600)"), "{e}");
        }
        assert_eq!(
            w.duration(&WorkloadParams::default()).unwrap(),
            Duration::from_secs(3)
        );
        assert_eq!(w.default_heap(&WorkloadParams::default()), 3 * 1408 * MIB);
        assert!(QueueChurnParams::standard().peak_live_bytes() > 970 * MIB);
        assert_eq!(triangle(0), 0);
        assert_eq!(triangle(1), 0);
        assert_eq!(triangle(4), 6);
    }

    #[test]
    fn a_short_run_removes_everything_in_order() {
        let heap = scaffold::test_heap(4 * MIB, false);
        let mut m = heap.attach();
        let r = churn(&mut m, &small(), Duration::from_millis(50)).unwrap();
        assert!(r.enqueued > 200, "{}", r.enqueued);
        assert_eq!(r.checksum, triangle(r.enqueued));
        assert_eq!(r.drops, (r.enqueued - 50) / 50);
        assert_eq!(m.handle_count(), 0);
    }

    #[test]
    fn damaged_objects_are_detected() {
        let heap = scaffold::test_heap(4 * MIB, false);
        let mut m = heap.attach();
        let p = small();
        m.scope(|m| {
            let queue = m.alloc(QUEUE).unwrap();
            let ring = m.alloc_ref_array(p.high_water).unwrap();
            for seq in 0..3 {
                let o = m.alloc_byte_array(p.object_bytes).unwrap();
                stamp(m, o, seq);
                m.set_ref(ring, seq as usize, Some(o));
            }
            m.write_u64(queue, Q_LEN, 3);
            assert_eq!(dequeue(m, &p, queue, ring, 0).unwrap(), 0);
            // A damaged last word.
            let o = m.get_ref(ring, 1).unwrap();
            m.write_u64(o, p.object_bytes - 8, 5);
            let e = dequeue(m, &p, queue, ring, 1).unwrap_err().to_string();
            assert!(e.contains("should be 1"), "{e}");
            // A lost object.
            m.set_ref(ring, 1, None);
            let e = dequeue(m, &p, queue, ring, 1).unwrap_err().to_string();
            assert!(e.contains("object 1 is missing"), "{e}");
            // Out of order.
            let e = dequeue(m, &p, queue, ring, 7).unwrap_err().to_string();
            assert!(e.contains("missing") || e.contains("should be 7"), "{e}");
        });
    }
}
