//! `mutator-sched fifo`: every attached mutator runs under SCHED_FIFO, whatever the CPU count
//! (an explicit choice is applied as asked), with a notice when the machine has no more usable
//! CPUs than the threshold above which FIFO is expected to pay off (001 §4.4).

use super::{SchedChoice, Shared, State};

/// Put the policy in force to FIFO.
pub(super) fn start(shared: &Shared, st: &mut State) {
    st.target = SchedChoice::Fifo;
    if !shared.auto_fifo_allowed {
        shared.notice(
            st,
            log::Level::Warn,
            format!(
                "mutator scheduling fifo on {} usable CPUs: applied as asked, although FIFO is \
                 expected to help only on more than {} (001 §4.4)",
                shared.config.usable_cpus, shared.config.fifo_cpu_threshold
            ),
        );
    }
}
