//! Helpers shared by integration tests.

/// Clear CAP_SYS_NICE from the calling thread's effective capabilities (capabilities are
/// per thread in the kernel; the raw system call leaves the other threads alone). Returns
/// whether it worked.
pub fn drop_cap_sys_nice_on_this_thread() -> bool {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_SYS_NICE: u32 = 23;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut header = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: header and data are valid for the v3 ABI (a header and two data words).
    let rc = unsafe {
        libc::syscall(
            libc::SYS_capget,
            &mut header as *mut Header,
            data.as_mut_ptr(),
        )
    };
    if rc != 0 {
        return false;
    }
    data[0].effective &= !(1 << CAP_SYS_NICE);
    // SAFETY: as above; pid 0 = the calling thread only.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut header as *mut Header, data.as_ptr()) };
    rc == 0
}
