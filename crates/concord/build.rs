//! Tells the tests whether the machine that builds them has more than one usable CPU: the
//! tests that need two (`tests/os_affinity.rs`) are then `#[ignore]`d with the reason shown in
//! the test summary (cfg `concord_one_usable_cpu`), instead of passing without testing. Run
//! on a machine with fewer CPUs than the build saw, they fail and say so.
//!
//! Likewise for transparent huge pages: the test that checks a huge-advised heap really gets
//! huge pages needs THP `enabled` = `madvise` or `always` system-wide; where the build sees
//! `never` (or no THP at all) it is ignored with the reason (cfg `concord_no_thp`).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(concord_one_usable_cpu)");
    println!("cargo::rustc-check-cfg=cfg(concord_no_thp)");
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed={THP_ENABLED}");
    // The affinity mask and the cgroup CPU quota, as the tests' own count sees them.
    let usable = std::thread::available_parallelism().map_or(1, |n| n.get());
    if usable < 2 {
        println!("cargo::rustc-cfg=concord_one_usable_cpu");
    }
    if !thp_allows_advised_huge_pages() {
        println!("cargo::rustc-cfg=concord_no_thp");
    }
}

const THP_ENABLED: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Whether the selected THP mode (the bracketed word, e.g. `always [madvise] never`) gives
/// huge pages to a range advised `MADV_HUGEPAGE`.
fn thp_allows_advised_huge_pages() -> bool {
    std::fs::read_to_string(THP_ENABLED).is_ok_and(|s| {
        s.split_whitespace()
            .any(|w| w == "[madvise]" || w == "[always]")
    })
}
