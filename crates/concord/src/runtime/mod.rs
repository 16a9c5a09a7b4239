//! The runtime room: the [`Heap`] a program builds, the [`Mutator`] each of its threads
//! attaches, the safepoint protocol that stops them, the VM thread that runs collections, and
//! the references that outlive a scope ([`refs`]: globals, weak references, cleaners).

mod gc_ref;
mod handles;
mod heap;
mod mutator;
mod numa;
pub mod refs;
mod safepoint;
mod vm_thread;

pub use gc_ref::Gc;
pub use heap::{
    GcError, GcErrorKind, Heap, HeapBuilder, HeapError, GC_HEAP_FREE_LIMIT_PERCENT,
    GC_OVERHEAD_LIMIT_COLLECTIONS,
};
pub use mutator::{Handle, Mutator};
pub use refs::{GlobalHandle, WeakHandle};
pub use vm_thread::dynamic_active_workers;

/// Lock a runtime mutex, ignoring poisoning: a panic elsewhere aborts the collector (GC
/// workers abort), so the protected state is never left half-updated by one.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
