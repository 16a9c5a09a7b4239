//! Concord: a parallel, stop-the-world, generational garbage collector that cooperates with the
//! operating system instead of assuming it, as a library: a garbage-collected heap for Rust
//! programs and language runtimes.
//!
//! A program builds a [`Heap`], attaches each thread that uses it as a [`Mutator`], and
//! reaches objects through roots ([`Root`], [`Handle`]) and views that the borrow checker keeps
//! from outliving a collection. Objects are Rust structs (`#[derive(Trace)]`, see [`typed`]) or,
//! for runtimes that build layouts at run time, untyped [`ObjectType`]s.
//!
//! ```
//! use concord::{CollectionKind, Heap, Root};
//!
//! #[derive(concord::Trace)]
//! struct Node {
//!     left: Option<Root<Node>>,
//!     right: Option<Root<Node>>,
//!     value: u64,
//! }
//!
//! let heap = Heap::builder().heap_size(32 << 20).build()?; // VM thread and GC workers only
//! let mut m = heap.attach();                               // this thread is now a mutator
//! let leaf = m.alloc_typed(Node { left: None, right: None, value: 1 })?;
//! let root = m.alloc_typed(Node { left: Some(leaf), right: None, value: 2 })?;
//! m.collect(CollectionKind::Full);                         // objects move; roots follow
//! let v = m.get(root);                                     // a view: plain loads by field name
//! assert_eq!(v.left().map(|l| l.value()), Some(1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **The loop pattern.** Every root made in a loop's body stays alive until its scope ends,
//! so each iteration runs in a [`Mutator::scope`] and the one value kept across iterations is
//! re-rooted into a root made before the loop: the mutator holds one root whatever the count.
//! [`Mutator::scope_into`] is that in one call (`m.scope_into(head, |m| ..)?`); spelled out:
//!
//! ```
//! # use concord::{Heap, Root};
//! #[derive(concord::Trace)]
//! struct Cell {
//!     next: Option<Root<Cell>>,
//!     value: u64,
//! }
//!
//! let heap = Heap::builder().heap_size(32 << 20).build()?;
//! let mut m = heap.attach();
//! let head = m.alloc_typed(Cell { next: None, value: 0 })?;
//! for i in 1..100_000 {
//!     m.scope(|m| -> Result<(), concord::GcError> {
//!         let cell = m.alloc_typed(Cell { next: Some(head), value: i })?;
//!         m.set_root_typed(head, m.get(cell)); // `head` now holds the new cell
//!         Ok(())
//!     })?;
//! }
//! assert_eq!(m.get(head).value(), 99_999);
//! assert_eq!(m.handle_count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **Several threads.** A heap is shared by reference; each thread attaches its own mutator,
//! and a collection stops them all at their next safepoint (an allocation, a scope, a poll).
//!
//! ```
//! # use concord::{Heap, Root};
//! #[derive(concord::Trace)]
//! struct Pair {
//!     first: Option<Root<Pair>>,
//!     n: u64,
//! }
//!
//! let heap = Heap::builder().heap_size(64 << 20).gc_threads(2).build()?;
//! let sums: Vec<u64> = std::thread::scope(|s| {
//!     let workers: Vec<_> = (0..2u64)
//!         .map(|t| {
//!             let heap = &heap;
//!             s.spawn(move || {
//!                 let mut m = heap.attach();
//!                 let mut sum = 0;
//!                 for i in 0..10_000 {
//!                     sum += m.scope(|m| {
//!                         let a = m.alloc_typed(Pair { first: None, n: i * t })?;
//!                         let b = m.alloc_typed(Pair { first: Some(a), n: i })?;
//!                         let b = m.get(b);
//!                         Ok::<u64, concord::GcError>(b.first().unwrap().n() + b.n())
//!                     })
//!                     .unwrap();
//!                 }
//!                 sum
//!             })
//!         })
//!         .collect();
//!     workers.into_iter().map(|w| w.join().unwrap()).collect()
//! });
//! assert_eq!(sums, [49_995_000, 99_990_000]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! **References that outlive a scope.** A [`Global`] (untyped: [`GlobalHandle`]) is a root
//! released when it is dropped, for an interpreter's globals; a [`Weak`] (untyped:
//! [`WeakHandle`]) refers to an object without keeping it alive and is cleared by the
//! collection that finds the object dead; [`Mutator::on_collect`] attaches a Rust value to an
//! object, dropped on the mutator's thread after the collection that finds the object dead
//! (see [`runtime::refs`]).
//!
//! The guide is `docs/library.md`. Beside the embedder's API, the crate holds the laboratory
//! the `concord` command drives (its rooms in DESIGN.md: memory, object model, collection,
//! parallel phases, runtime, telemetry, the OS room); those modules are public for the
//! workbench and hidden from this page.

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("Concord supports 64-bit Linux only");

// The derive's generated code names `::concord`, also inside this crate (typed.rs's tests).
extern crate self as concord;

// First, so that every room below can declare its switches with `switch!`.
#[macro_use]
mod switch;

#[doc(hidden)]
pub mod collection;
pub mod config;
#[doc(hidden)]
pub mod memory;
pub mod object;
#[doc(hidden)]
pub mod os;
#[doc(hidden)]
pub mod parallel;
pub mod runtime;
pub(crate) mod sync;
pub mod telemetry;
pub mod typed;

pub use collection::verify::{VerifyError, VerifyReport};
pub use config::{GcConfig, Preset};
pub use object::{ObjectKind, ObjectType};
pub use runtime::{
    Gc, GcError, GcErrorKind, GlobalHandle, Handle, Heap, HeapBuilder, HeapError, Mutator,
    WeakHandle,
};
pub use telemetry::{CollectionKind, CollectionRecord, GcCause, GcStats};
pub use typed::{Global, Root, Trace, TypedView, Weak};
