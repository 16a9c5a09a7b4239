//! Side tables: arrays of atomics sized from the heap (the card table, the bitmaps, the full
//! collector's region tables), zero at first and mapped from the OS, so that a refusal
//! (`ulimit -v`, strict overcommit) is an error naming the table instead of an abort, and
//! entries never written cost no memory.

use std::io;
use std::marker::PhantomData;
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize};

use crate::os::vm::ZeroedMapping;

/// A side table could not be allocated.
#[derive(Debug, thiserror::Error)]
#[error("could not allocate the {what} ({size} bytes)")]
pub struct SideTableError {
    /// Which table, in words ("card table").
    pub what: &'static str,
    /// Bytes asked for.
    pub size: usize,
    /// What the OS said.
    #[source]
    pub source: io::Error,
}

mod sealed {
    pub trait Sealed {}
}

/// Element types of a side table: atomics, whose all-zero bytes are a valid value (0 or false)
/// and which may be updated through a shared reference.
pub trait SideTableElement: sealed::Sealed + Send + Sync {}

macro_rules! side_table_elements {
    ($($t:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl SideTableElement for $t {}
    )*};
}

side_table_elements!(AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize);

/// `len` atomics, all zero when created, in memory of their own.
pub struct SideTable<T: SideTableElement> {
    mapping: ZeroedMapping,
    len: usize,
    elements: PhantomData<T>,
}

impl<T: SideTableElement> SideTable<T> {
    /// A table of `len` zeroed elements; `what` names it in the error if the OS refuses.
    pub fn new(what: &'static str, len: usize) -> Result<Self, SideTableError> {
        // An overflowing size is one the OS refuses too (the mapping fails on it).
        let size = len.saturating_mul(size_of::<T>());
        let mapping =
            ZeroedMapping::new(size).map_err(|source| SideTableError { what, size, source })?;
        Ok(Self {
            mapping,
            len,
            elements: PhantomData,
        })
    }
}

impl<T: SideTableElement> SideTable<T> {
    /// The table's memory, `(start, bytes)`: page aligned, a whole number of pages (for
    /// pretouching it).
    pub fn mapped_range(&self) -> (usize, usize) {
        (self.mapping.base(), self.mapping.size())
    }
}

impl<T: SideTableElement> Deref for SideTable<T> {
    type Target = [T];

    #[inline(always)]
    fn deref(&self) -> &[T] {
        // SAFETY: the mapping is page aligned (enough for any atomic), readable and writable,
        // at least `len * size_of::<T>()` bytes long (a successful `new`) and lives as long as
        // `self`; zero bytes are a valid `T` (`SideTableElement`), and atomics allow the shared
        // mutation the collectors do.
        unsafe { std::slice::from_raw_parts(self.mapping.base() as *const T, self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn tables_start_zero_and_hold_what_is_written() {
        let t = SideTable::<AtomicU32>::new("test table", 10_000).unwrap();
        assert_eq!(t.len(), 10_000);
        assert!(t.iter().all(|x| x.load(Ordering::Relaxed) == 0));
        t[9_999].store(5, Ordering::Relaxed);
        assert_eq!(t[9_999].load(Ordering::Relaxed), 5);
        let flags = SideTable::<AtomicBool>::new("flags", 0).unwrap();
        assert!(flags.is_empty());
    }

    #[test]
    fn a_refused_table_is_an_error_naming_it_and_its_size() {
        let len = usize::MAX / 16;
        let Err(e) = SideTable::<AtomicU64>::new("huge table", len) else {
            panic!("a table larger than the address space was mapped");
        };
        assert_eq!(e.what, "huge table");
        assert_eq!(e.size, len * 8);
        assert_eq!(
            e.to_string(),
            format!("could not allocate the huge table ({} bytes)", len * 8)
        );
    }
}
