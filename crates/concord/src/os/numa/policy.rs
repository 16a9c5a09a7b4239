//! The NUMA memory-policy system calls, through `libc::syscall` (glibc has no wrappers; they
//! live in libnuma, which Concord does not link):
//!
//! * [`bind_memory`]: `mbind` a range interleaved over a node set (`MPOL_INTERLEAVE`) or bound
//!   to one node (`MPOL_BIND`); it governs pages faulted in later, so call it before first
//!   touch.
//! * [`memory_policy_of`]: `get_mempolicy(MPOL_F_ADDR)`, the policy governing an address.
//! * [`nodes_of_pages`]: `move_pages` with no target nodes, which node each resident page is
//!   on.
//!
//! Every failure is an [`io::Error`] that says which call on which range failed.

use std::io;

use crate::os::vm::page_size;

/// `get_mempolicy` flag: return the policy of the address given, not the thread's.
const MPOL_F_ADDR: libc::c_ulong = 1 << 1;
/// Bits of the node masks passed to the kernel: nodes `0..MAX_NODES`.
pub const MAX_NODES: u32 = 1024;
/// Words of a node mask.
const MASK_WORDS: usize = (MAX_NODES as usize) / 64;

/// A memory policy for a range.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub enum MemoryPolicy {
    /// No policy of its own: the thread's (normally first touch, the local node).
    Default,
    /// `MPOL_BIND`: every page on these nodes.
    Bind(Vec<u32>),
    /// `MPOL_INTERLEAVE`: pages round-robin over these nodes, page by page.
    Interleave(Vec<u32>),
    /// Another mode (preferred, local, …), by its number.
    Other(i32),
}

/// A node mask of `nodes`, as `mbind` and `get_mempolicy` take it.
fn node_mask(nodes: &[u32]) -> io::Result<[libc::c_ulong; MASK_WORDS]> {
    let mut mask = [0 as libc::c_ulong; MASK_WORDS];
    for &node in nodes {
        if node >= MAX_NODES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "NUMA node {node} is beyond the largest supported ({})",
                    MAX_NODES - 1
                ),
            ));
        }
        mask[node as usize / 64] |= 1 << (node % 64);
    }
    Ok(mask)
}

/// The nodes set in `mask`, ascending.
fn mask_nodes(mask: &[libc::c_ulong]) -> Vec<u32> {
    (0..MAX_NODES)
        .filter(|&n| mask[n as usize / 64] & (1 << (n % 64)) != 0)
        .collect()
}

/// An error saying what `call` was doing, with the OS error kept.
fn with_context(call: &str, what: String, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{call} {what}: {e}"))
}

/// Checks `[addr, addr + len)` is a non-empty page-aligned range.
fn check_range(call: &str, addr: usize, len: usize) -> io::Result<()> {
    let page = page_size();
    if len == 0 || !addr.is_multiple_of(page) || addr == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{call}: [{addr:#x}, +{len:#x}) is not a non-empty page-aligned range"),
        ));
    }
    Ok(())
}

/// Apply `policy` to the pages of `[addr, addr + len)` of the caller's own mapping (page
/// aligned). Only pages faulted in later follow it (no `MPOL_MF_MOVE`): call it before the
/// range is first touched. `Default` removes a policy; `Other` is refused.
pub fn bind_memory(addr: usize, len: usize, policy: &MemoryPolicy) -> io::Result<()> {
    check_range("mbind", addr, len)?;
    let (mode, nodes): (libc::c_int, &[u32]) = match policy {
        MemoryPolicy::Default => (libc::MPOL_DEFAULT, &[]),
        MemoryPolicy::Bind(nodes) => (libc::MPOL_BIND, nodes),
        MemoryPolicy::Interleave(nodes) => (libc::MPOL_INTERLEAVE, nodes),
        MemoryPolicy::Other(mode) => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("mbind: policy mode {mode} is not one Concord applies"),
            ))
        }
    };
    if mode != libc::MPOL_DEFAULT && nodes.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("mbind {policy:?}: the node set is empty"),
        ));
    }
    let mask = node_mask(nodes)?;
    let (mask_ptr, maxnode) = if mode == libc::MPOL_DEFAULT {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), MAX_NODES as libc::c_ulong + 1)
    };
    // SAFETY: the range is the caller's own mapping (the kernel checks it and fails with
    // EFAULT/ENOMEM otherwise; no memory is read or written through it); `mask` lives across
    // the call and holds `maxnode - 1` bits.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr as *mut libc::c_void,
            len as libc::c_ulong,
            mode as libc::c_ulong,
            mask_ptr,
            maxnode,
            0 as libc::c_uint,
        )
    };
    if rc != 0 {
        let what = format!("{policy:?} on [{addr:#x}, +{len:#x})");
        return Err(with_context("mbind", what, io::Error::last_os_error()));
    }
    Ok(())
}

/// The policy governing the page at `addr` (`get_mempolicy` with `MPOL_F_ADDR`).
pub fn memory_policy_of(addr: usize) -> io::Result<MemoryPolicy> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0 as libc::c_ulong; MASK_WORDS];
    // SAFETY: `mode` and `mask` are writable for the call, `mask` holds MAX_NODES bits; the
    // kernel only looks up the policy of `addr`, never dereferences it for us.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            MAX_NODES as libc::c_ulong,
            addr as *mut libc::c_void,
            MPOL_F_ADDR,
        )
    };
    if rc != 0 {
        let what = format!("of {addr:#x}");
        return Err(with_context(
            "get_mempolicy",
            what,
            io::Error::last_os_error(),
        ));
    }
    // The mode word may carry flags (MPOL_F_STATIC_NODES, …) in its high bits.
    let flags =
        libc::MPOL_F_STATIC_NODES | libc::MPOL_F_RELATIVE_NODES | libc::MPOL_F_NUMA_BALANCING;
    Ok(match mode & !flags {
        libc::MPOL_DEFAULT => MemoryPolicy::Default,
        libc::MPOL_BIND => MemoryPolicy::Bind(mask_nodes(&mask)),
        libc::MPOL_INTERLEAVE => MemoryPolicy::Interleave(mask_nodes(&mask)),
        other => MemoryPolicy::Other(other),
    })
}

/// Where each page starting at `pages` (page-aligned addresses of the caller's memory) is:
/// `Ok(node)` for a resident page, `Err(errno)` as the kernel reports it per page (`-ENOENT`
/// for a page not faulted in, `-EFAULT` outside any mapping). `move_pages` with no target nodes
/// moves nothing; it only queries.
pub fn nodes_of_pages(pages: &[usize]) -> io::Result<Vec<Result<u32, i32>>> {
    if pages.is_empty() {
        return Ok(Vec::new());
    }
    let ptrs: Vec<*mut libc::c_void> = pages.iter().map(|&p| p as *mut libc::c_void).collect();
    let mut status = vec![0 as libc::c_int; pages.len()];
    // SAFETY: `ptrs` and `status` hold `pages.len()` entries and live across the call; with a
    // null node array the kernel only writes `status`. pid 0 is this process.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::pid_t,
            pages.len() as libc::c_ulong,
            ptrs.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_int,
        )
    };
    if rc != 0 {
        let what = format!("(query) of {} pages from {:#x}", pages.len(), pages[0]);
        return Err(with_context("move_pages", what, io::Error::last_os_error()));
    }
    Ok(status
        .into_iter()
        .map(|s| if s >= 0 { Ok(s as u32) } else { Err(-s) })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::os::vm::ZeroedMapping;

    const PAGES: usize = 8;

    /// A fresh mapping with `policy`, each page then touched, checked with get_mempolicy and
    /// move_pages: on this machine's node 0 both policies put every page there.
    fn place_and_check(policy: MemoryPolicy) {
        let page = page_size();
        let map = ZeroedMapping::new(PAGES * page).unwrap();
        let base = map.base();
        bind_memory(base, PAGES * page, &policy).unwrap();
        assert_eq!(memory_policy_of(base + page).unwrap(), policy);
        let pages: Vec<usize> = (0..PAGES).map(|i| base + i * page).collect();
        // Untouched: not resident.
        let before = nodes_of_pages(&pages).unwrap();
        assert!(before.iter().all(|s| *s == Err(libc::ENOENT)), "{before:?}");
        for &p in &pages {
            // SAFETY: inside the fresh read-write mapping, which nobody else uses.
            unsafe { (p as *mut u8).write_volatile(1) };
        }
        let after = nodes_of_pages(&pages).unwrap();
        assert!(after.iter().all(|s| *s == Ok(0)), "{after:?}");
        // The policy can be removed again.
        bind_memory(base, PAGES * page, &MemoryPolicy::Default).unwrap();
        assert_eq!(memory_policy_of(base).unwrap(), MemoryPolicy::Default);
    }

    #[test]
    fn interleave_over_node_zero_places_pages_there() {
        place_and_check(MemoryPolicy::Interleave(vec![0]));
    }

    #[test]
    fn bind_to_node_zero_places_pages_there() {
        place_and_check(MemoryPolicy::Bind(vec![0]));
    }

    #[test]
    fn bad_requests_are_errors_with_context() {
        let page = page_size();
        let map = ZeroedMapping::new(2 * page).unwrap();
        let e = bind_memory(map.base() + 1, page, &MemoryPolicy::Bind(vec![0])).unwrap_err();
        assert!(e.to_string().contains("page-aligned"), "{e}");
        let e = bind_memory(map.base(), page, &MemoryPolicy::Interleave(vec![])).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        let e = bind_memory(map.base(), page, &MemoryPolicy::Bind(vec![MAX_NODES])).unwrap_err();
        assert!(e.to_string().contains("beyond"), "{e}");
        // A node the machine does not have: the kernel refuses, and the error says the call.
        let e =
            bind_memory(map.base(), page, &MemoryPolicy::Bind(vec![MAX_NODES - 1])).unwrap_err();
        assert!(e.to_string().starts_with("mbind Bind([1023])"), "{e}");
        let e = bind_memory(map.base(), page, &MemoryPolicy::Other(4)).unwrap_err();
        assert!(e.to_string().contains("mode 4"), "{e}");
        assert_eq!(nodes_of_pages(&[]).unwrap(), vec![]);
        // The policy of an address outside any mapping is an error.
        let e = memory_policy_of(page).unwrap_err();
        assert!(e.to_string().starts_with("get_mempolicy of"), "{e}");
    }

    #[test]
    fn masks_round_trip() {
        let mask = node_mask(&[0, 3, 64, 1000]).unwrap();
        assert_eq!(mask_nodes(&mask), vec![0, 3, 64, 1000]);
    }
}
