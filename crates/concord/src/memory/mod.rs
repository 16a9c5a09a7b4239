//! The memory room: the reserved heap range, its spaces, the card table, the side bitmaps and
//! the full collector's compaction tables (all side tables mapped from the OS at heap creation).
//!
//! ```text
//! base                                                                     base + heap_size
//! | old generation (committed on demand) | eden | survivor 0 | survivor 1 |
//! ```
//!
//! Old sits below young so that the full collector, which slides every live object towards
//! lower addresses, can compact young objects into old in the same pass (as Parallel Old does).

pub mod bitmap;
pub mod card_table;
pub mod compaction;
pub mod pretouch;
pub mod side_table;
pub mod space;

pub mod heap_memory;
pub mod node_map;

pub use heap_memory::{HeapMemory, HeapMemoryError, SpaceId};
pub use node_map::{NodeMap, NodeMapRule};
pub use side_table::SideTableError;
