//! The runtime room: the [`Heap`] a program builds, the [`Mutator`] each of its threads
//! attaches, the safepoint protocol that stops them, and the VM thread that runs collections.

mod heap;
mod mutator;
mod safepoint;
mod vm_thread;

pub use heap::{GcError, Heap, HeapError};
pub use mutator::{Handle, Mutator};
