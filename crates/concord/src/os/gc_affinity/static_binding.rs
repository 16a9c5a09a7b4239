//! `gc-affinity static`: worker `i` is pinned to the `i`-th allowed CPU (wrapping), once, on
//! its own thread when the pool starts — what HotSpot's `BindGCTaskThreadsToCPUs` intended
//! (000 §4.1). Collections do not move anyone.

use super::{AffinityFailure, FailureLog};
use crate::os::affinity::set_current_thread_affinity;
use crate::os::sched::current_tid;

/// The CPU static binding gives worker `worker`: the `worker`-th allowed CPU, wrapping when
/// there are more workers than CPUs. `None` when `allowed` is empty.
pub fn static_cpu(allowed: &[u32], worker: usize) -> Option<u32> {
    (!allowed.is_empty()).then(|| allowed[worker % allowed.len()])
}

/// Pin the calling thread, worker `worker`, to its CPU of `allowed`; returns that CPU. A
/// refusal is recorded in `failures` (and said once) and returned.
pub(super) fn bind_calling_worker(
    allowed: &[u32],
    worker: usize,
    failures: &FailureLog,
) -> Result<Option<u32>, AffinityFailure> {
    let Some(cpu) = static_cpu(allowed, worker) else {
        return Ok(None);
    };
    match set_current_thread_affinity(&[cpu]) {
        Ok(()) => Ok(Some(cpu)),
        Err(e) => Err(failures.record(worker, current_tid(), cpu, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_binding_wraps() {
        let allowed = [3, 5, 7];
        let got: Vec<u32> = (0..7).filter_map(|w| static_cpu(&allowed, w)).collect();
        assert_eq!(got, vec![3, 5, 7, 3, 5, 7, 3]);
        assert_eq!(static_cpu(&[], 0), None);
    }
}
