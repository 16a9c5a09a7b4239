//! Virtual memory: reserve an address range without backing it, then commit parts of it; and
//! zero-filled read-write mappings for the collector's side tables.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size <= 0 {
        4096
    } else {
        size as usize
    }
}

/// Map `len` bytes of fresh, inaccessible, unbacked memory (`PROT_NONE`, no swap reserved) at
/// `addr` (0: where the kernel likes) with `flags` added; returns where.
///
/// # Safety
///
/// With `MAP_FIXED` in `flags`, `[addr, addr+len)` must be memory the caller owns and no longer
/// uses: it is replaced.
unsafe fn map_inaccessible(addr: usize, len: usize, flags: libc::c_int) -> io::Result<usize> {
    // SAFETY: an anonymous mapping reads nothing; the caller vouches for a fixed address.
    let raw = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | flags,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(raw as usize)
}

/// What to tell the kernel about transparent huge pages for a range (`madvise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HugePageAdvice {
    /// `MADV_HUGEPAGE`: back it with huge pages where the system setting allows `madvise`.
    Huge,
    /// `MADV_NOHUGEPAGE`: never back it with huge pages.
    NoHuge,
}

/// How [`pretouch`] made a range resident.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PretouchMethod {
    /// One `madvise(MADV_POPULATE_WRITE)` (Linux 5.14+): the kernel faults in every page of the
    /// range for writing, huge or small as it would on a write, without a trap per page.
    PopulateWrite,
    /// The kernel does not know `MADV_POPULATE_WRITE`: one atomic write of the value already
    /// there per `stride` bytes (HotSpot's `os::pretouch_memory` adds zero atomically), so
    /// each write faults its page in.
    Touch,
}

/// Fault in every page of `[addr, addr+len)` for writing, without changing its contents, so
/// that later first writes take no page fault (HotSpot's `AlwaysPreTouch`). Tries
/// `MADV_POPULATE_WRITE`; where the kernel is too old for it, stores back, atomically, the word
/// it reads at every `stride` bytes (a power of two, at least 8: the page size the range will get;
/// with a huge-page stride, a 2 MiB range the kernel backs with small pages anyway is only
/// partly touched, which costs faults later, never correctness).
///
/// # Safety
///
/// `[addr, addr+len)` must be mapped readable and writable, and `addr` aligned to 8. Concurrent
/// use of the range is allowed only through atomics (the fallback's adds race with nothing
/// else then), which is the case for memory nobody uses yet.
pub unsafe fn pretouch(addr: usize, len: usize, stride: usize) -> io::Result<PretouchMethod> {
    if len == 0 {
        return Ok(PretouchMethod::PopulateWrite);
    }
    let page = page_size();
    if populate_write_supported() {
        let lo = addr & !(page - 1);
        let hi = (addr + len).next_multiple_of(page);
        // SAFETY: populating changes no byte of the range (new pages read as zero, resident
        // ones are left alone); the caller vouches that the range is mapped read-write.
        let rc =
            unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_POPULATE_WRITE) };
        if rc != 0 {
            // EINVAL here: memory that is not read-write (e.g. not committed).
            return Err(io::Error::last_os_error());
        }
        return Ok(PretouchMethod::PopulateWrite);
    }
    // SAFETY: the caller's guarantees are `touch_pages`'s.
    unsafe { touch_pages(addr, len, stride) };
    Ok(PretouchMethod::Touch)
}

/// Whether the kernel knows `MADV_POPULATE_WRITE` (asked once: an empty range at an aligned
/// address is accepted exactly when the advice is known, so `EINVAL` on a real range can then
/// only mean memory that cannot be populated).
fn populate_write_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        // SAFETY: an empty range: the kernel validates the advice and touches nothing.
        let rc = unsafe {
            libc::madvise(
                page_size() as *mut libc::c_void,
                0,
                libc::MADV_POPULATE_WRITE,
            )
        };
        rc == 0
    })
}

/// [`pretouch`]'s fallback: an atomic compare-and-exchange of a word with itself at `addr` and at every `stride` boundary
/// after it below `addr + len`.
///
/// # Safety
///
/// As [`pretouch`].
unsafe fn touch_pages(addr: usize, len: usize, stride: usize) {
    assert!(
        stride.is_power_of_two() && stride >= 8,
        "pretouch stride must be a power of two of at least 8"
    );
    let mut at = addr;
    let end = addr + len;
    while at < end {
        // SAFETY: `at` is 8-aligned (addr is, stride is a multiple of 8) and inside the
        // caller's read-write range; storing back the value read leaves the word as it was.
        let word = unsafe { &*(at as *const AtomicU64) };
        // Not `fetch_add(0)`: LLVM lowers an idempotent read-modify-write to a fenced load on
        // x86, and a load maps the shared zero page instead of faulting a page in.
        let mut seen = word.load(Ordering::Relaxed);
        while let Err(now) =
            word.compare_exchange_weak(seen, seen, Ordering::Relaxed, Ordering::Relaxed)
        {
            seen = now;
        }
        at = (at | (stride - 1)) + 1;
    }
}

/// Bytes of `[addr, addr+len)` resident in memory now (`mincore`), counted in whole pages.
/// `addr` must be page aligned and the range mapped (else the error is `ENOMEM`).
pub fn resident_bytes(addr: usize, len: usize) -> io::Result<usize> {
    let page = page_size();
    let pages = len.div_ceil(page);
    let mut vec = vec![0u8; pages];
    if pages == 0 {
        return Ok(0);
    }
    // SAFETY: mincore only writes `pages` bytes into `vec`, which has that many; it reads
    // nothing of the range itself.
    let rc = unsafe {
        libc::mincore(
            addr as *mut libc::c_void,
            pages * page,
            vec.as_mut_ptr() as *mut libc::c_uchar,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(vec.iter().filter(|&&b| b & 1 != 0).count() * page)
}

/// A reserved, initially inaccessible range of address space, unmapped on drop.
#[derive(Debug)]
pub struct Reservation {
    base: usize,
    size: usize,
}

impl Reservation {
    /// Reserve `size` bytes (rounded up to pages) of address space aligned to `align` (a power
    /// of two, at least a page). Nothing is committed.
    pub fn new(size: usize, align: usize) -> io::Result<Self> {
        let page = page_size();
        let align = align.max(page);
        assert!(align.is_power_of_two(), "alignment must be a power of two");
        let size = size.div_ceil(page) * page;
        let request = size.checked_add(align).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "reservation size overflows")
        })?;
        // SAFETY: at a kernel-chosen address the new mapping touches no existing memory.
        let raw = unsafe { map_inaccessible(0, request, 0) }?;
        let base = raw.next_multiple_of(align);
        // Trim the unaligned head and the tail so exactly [base, base+size) stays mapped.
        let head = base - raw;
        let tail = request - head - size;
        // SAFETY: both ranges lie inside the mapping we just created and are not used.
        unsafe {
            if head > 0 {
                libc::munmap(raw as *mut libc::c_void, head);
            }
            if tail > 0 {
                libc::munmap((base + size) as *mut libc::c_void, tail);
            }
        }
        Ok(Self { base, size })
    }

    /// First address of the range.
    pub fn base(&self) -> usize {
        self.base
    }

    /// Size of the range in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Make `[addr, addr+len)` readable and writable. Both must be page aligned and inside the
    /// reservation.
    pub fn commit(&self, addr: usize, len: usize) -> io::Result<()> {
        self.check_range(addr, len);
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is inside our own reservation (checked above).
        let rc = unsafe {
            libc::mprotect(
                addr as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Give `[addr, addr+len)` back to the OS and make it inaccessible again.
    pub fn uncommit(&self, addr: usize, len: usize) -> io::Result<()> {
        self.check_range(addr, len);
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range is inside our own reservation; MAP_FIXED replaces only it.
        unsafe { map_inaccessible(addr, len, libc::MAP_FIXED) }.map(|_| ())
    }

    /// Ask the kernel for (or against) transparent huge pages on `[addr, addr+len)`
    /// (`madvise`): it applies to pages faulted in later, committed or not yet. Both must be
    /// page aligned and inside the reservation.
    pub fn advise(&self, addr: usize, len: usize, advice: HugePageAdvice) -> io::Result<()> {
        self.check_range(addr, len);
        if len == 0 {
            return Ok(());
        }
        let flag = match advice {
            HugePageAdvice::Huge => libc::MADV_HUGEPAGE,
            HugePageAdvice::NoHuge => libc::MADV_NOHUGEPAGE,
        };
        // SAFETY: the range is inside our own reservation; this advice changes only how the
        // kernel backs it, never its contents.
        let rc = unsafe { libc::madvise(addr as *mut libc::c_void, len, flag) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    fn check_range(&self, addr: usize, len: usize) {
        let page = page_size();
        assert!(
            addr.is_multiple_of(page) && len.is_multiple_of(page),
            "commit range must be page aligned"
        );
        assert!(
            addr >= self.base && addr + len <= self.base + self.size,
            "commit range outside the reservation"
        );
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // SAFETY: we own the mapping; nothing refers to it once the reservation is dropped.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.size);
        }
    }
}

/// A private, anonymous, read-write mapping whose pages read as zero until written, unmapped
/// on drop. Side tables sized from the heap live in these rather than in `Vec`s, so that a
/// refusal by the OS (`ulimit -v`, strict overcommit) is an error instead of an abort, and
/// pages never written cost no memory.
#[derive(Debug)]
pub struct ZeroedMapping {
    base: usize,
    len: usize,
}

impl ZeroedMapping {
    /// Map `len` bytes (rounded up to pages; at least one page) of zeroed, writable memory.
    pub fn new(len: usize) -> io::Result<Self> {
        let page = page_size();
        let len = len
            .max(1)
            .checked_next_multiple_of(page)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "mapping size overflows"))?;
        // No MAP_NORESERVE: under strict overcommit the kernel then refuses the table here, at
        // heap creation, rather than killing the process when a collection first writes it.
        // SAFETY: an anonymous mapping at a kernel-chosen address touches no existing memory.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: raw as usize,
            len,
        })
    }

    /// First address (page aligned).
    pub fn base(&self) -> usize {
        self.base
    }

    /// Mapped bytes (a whole number of pages).
    pub fn size(&self) -> usize {
        self.len
    }
}

impl Drop for ZeroedMapping {
    fn drop(&mut self) {
        // SAFETY: we own the mapping; whoever borrowed memory from it borrowed `self` too.
        unsafe {
            libc::munmap(self.base as *mut libc::c_void, self.len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserve_commit_write_uncommit() {
        let r = Reservation::new(4 << 20, 1 << 20).unwrap();
        assert_eq!(r.base() % (1 << 20), 0);
        r.commit(r.base(), 1 << 20).unwrap();
        // SAFETY: the first MiB was just committed.
        unsafe {
            let p = r.base() as *mut u64;
            assert_eq!(p.read(), 0, "fresh memory is zero");
            p.write(42);
            assert_eq!(p.read(), 42);
        }
        r.uncommit(r.base(), 1 << 20).unwrap();
        r.commit(r.base(), 1 << 20).unwrap();
        // SAFETY: committed again; an uncommitted page comes back zeroed.
        unsafe { assert_eq!((r.base() as *const u64).read(), 0) };
    }

    #[test]
    fn pretouch_faults_pages_in_without_changing_them() {
        let page = page_size();
        let r = Reservation::new(64 * page, page).unwrap();
        r.commit(r.base(), 64 * page).unwrap();
        // SAFETY: committed above, private to this test.
        unsafe { ((r.base() + 5 * page) as *mut u64).write(99) };
        assert_eq!(resident_bytes(r.base(), 64 * page).unwrap(), page);
        // The fallback at base-page stride, from an address inside a page: every page it
        // overlaps is touched.
        // SAFETY: as above.
        unsafe { touch_pages(r.base() + 8, 16 * page - 8, page) };
        assert_eq!(resident_bytes(r.base(), 16 * page).unwrap(), 16 * page);
        assert_eq!(resident_bytes(r.base() + 16 * page, 48 * page).unwrap(), 0);
        // SAFETY: as above.
        let method = unsafe { pretouch(r.base() + 16 * page, 48 * page, page) }.unwrap();
        assert!(matches!(
            method,
            PretouchMethod::PopulateWrite | PretouchMethod::Touch
        ));
        assert_eq!(resident_bytes(r.base(), 64 * page).unwrap(), 64 * page);
        // SAFETY: as above.
        unsafe {
            assert_eq!(((r.base() + 5 * page) as *const u64).read(), 99);
            assert_eq!(((r.base() + 40 * page) as *const u64).read(), 0);
        }
        assert!(
            populate_write_supported(),
            "this kernel is older than 5.14?"
        );
        // Memory that is not committed is an error, not a crash.
        let reserved = Reservation::new(4 * page, page).unwrap();
        // SAFETY: the populate call fails on PROT_NONE memory before anything is written.
        assert!(unsafe { pretouch(reserved.base(), 4 * page, page) }.is_err());
    }

    #[test]
    fn zeroed_mappings_are_zero_writable_and_refused_cleanly() {
        let m = ZeroedMapping::new(3 * page_size() + 1).unwrap();
        assert_eq!(m.size(), 4 * page_size());
        assert_eq!(m.base() % page_size(), 0);
        // SAFETY: the mapping is readable and writable over its whole length.
        unsafe {
            let last = (m.base() + m.size() - 8) as *mut u64;
            assert_eq!(last.read(), 0, "fresh memory is zero");
            last.write(7);
            assert_eq!(last.read(), 7);
        }
        assert_eq!(ZeroedMapping::new(0).unwrap().size(), page_size());
        // More than the address space can hold: an error, not an abort.
        assert!(ZeroedMapping::new(usize::MAX / 2).is_err());
        assert!(ZeroedMapping::new(usize::MAX).is_err());
    }
}
