//! The runtime's switches as the simulator's. `concord::parallel` is compiled twice (into
//! `concord` and, against the simulated platform, into [`crate::parallel`]), so each switch and
//! [`PhasePolicy`] exists as two distinct types with the same variants and names. A driver that
//! holds the runtime's configuration (a preset, `--steal`, `--parking`, ...) converts it here.

use std::fmt::Display;
use std::str::FromStr;

use crate::parallel::{ParkingKind, PhasePolicy};

/// The simulator's value of a switch with the runtime's `value`'s name.
///
/// # Panics
///
/// If the name is not one of the simulator's: impossible while both are compiled from the same
/// `policy.rs`.
pub fn switch<S: FromStr<Err = String>>(value: impl Display) -> S {
    let name = value.to_string();
    name.parse()
        .unwrap_or_else(|e| panic!("`{name}` compiled from the same policy.rs: {e}"))
}

/// The runtime's phase policy as the simulator's.
pub fn phase_policy(policy: &concord::parallel::PhasePolicy) -> PhasePolicy {
    PhasePolicy {
        task_queue: switch(policy.task_queue),
        task_affinity: policy.task_affinity,
        steal: switch(policy.steal),
        termination: switch(policy.termination),
        termination_backoff: switch(policy.termination_backoff),
    }
}

/// The runtime's parking kind as the simulator's.
pub fn parking(kind: concord::parallel::ParkingKind) -> ParkingKind {
    switch(kind)
}
