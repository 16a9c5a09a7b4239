//! Concord: a parallel, stop-the-world, generational garbage collector that cooperates with the
//! operating system instead of assuming it.
//!
//! The crate is organised in the rooms of DESIGN.md: [`memory`] (reserved range, spaces, card
//! table), [`object`] (the object model), [`collection`] (scavenge, full collection, verifier),
//! [`parallel`] (GC workers, work stealing, termination), [`runtime`] (heap, mutators,
//! safepoints, VM thread), [`telemetry`] (records, GC log) and [`os`] (system calls).

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("Concord supports 64-bit Linux only");

// The derive's generated code names `::concord`, also inside this crate (typed.rs's tests).
extern crate self as concord;

// First, so that every room below can declare its switches with `switch!`.
#[macro_use]
mod switch;

pub mod collection;
pub mod config;
pub mod memory;
pub mod object;
pub mod os;
pub mod parallel;
pub mod runtime;
pub(crate) mod sync;
pub mod telemetry;
pub mod typed;

pub use collection::verify::{VerifyError, VerifyReport};
pub use config::{GcConfig, Preset};
pub use object::{ObjectKind, ObjectType};
pub use runtime::{Gc, GcError, Handle, Heap, HeapError, Mutator};
pub use telemetry::{CollectionKind, CollectionRecord, GcCause, GcStats};
pub use typed::{Root, Trace, TypedView};
