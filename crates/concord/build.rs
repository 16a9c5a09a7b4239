//! Tells the tests whether the machine that builds them has more than one usable CPU: the
//! tests that need two (`tests/os_affinity.rs`) are then `#[ignore]`d with the reason shown in
//! the test summary (cfg `concord_one_usable_cpu`), instead of passing without testing. Run
//! on a machine with fewer CPUs than the build saw, they fail and say so.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(concord_one_usable_cpu)");
    println!("cargo::rerun-if-changed=build.rs");
    // The affinity mask and the cgroup CPU quota, as the tests' own count sees them.
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    if usable < 2 {
        println!("cargo::rustc-cfg=concord_one_usable_cpu");
    }
}
