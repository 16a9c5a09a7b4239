//! What the collector may use of the machine, and how busy it is.
//!
//! * **Usable CPUs** ([`usable_cpu_count`], [`CpuView::usable_cpus`]): the CPUs in the affinity
//!   mask, capped by the cgroup CPU bandwidth limit ([`cgroup`]) rounded up, at least 1. This
//!   one count sizes the default GC thread pool, bounds the active workers of dynamic GC
//!   threads and decides whether FIFO mutator scheduling may be chosen automatically.
//! * **Topology** ([`topology`]): per CPU its SMT siblings (its core) and its NUMA node.
//! * **Load** ([`sampler`]): per-CPU busy fractions from `/proc/stat`, sampled off the pause
//!   path.
//!
//! [`CpuView`] gathers the mask, the limit and the topology once, at heap creation.

pub mod cgroup;
pub mod runnable;
pub mod sampler;
pub mod topology;

use std::io;
use std::path::PathBuf;

pub use cgroup::{read_cpu_quota, CpuQuota};
pub use runnable::{ExcludedThreads, RunnableSampler};
pub use sampler::{LoadSampler, LoadSnapshot, DEFAULT_SAMPLE_PERIOD};
pub use topology::CpuTopology;

use super::affinity::current_thread_affinity;

/// The CPU the calling thread is running on right now, if the OS says.
pub fn current_cpu() -> Option<u32> {
    // SAFETY: sched_getcpu has no preconditions.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as u32)
}

/// The usable-CPU count from its parts: `allowed` CPUs in the affinity mask, capped by the
/// cgroup limit `quota` (rounded up), at least 1.
pub fn usable_cpus(allowed: usize, quota: Option<&CpuQuota>) -> usize {
    quota
        .map_or(allowed, |q| allowed.min(q.whole_cpus()))
        .max(1)
}

/// How many CPUs' worth of work the calling thread can get now: the CPUs in its affinity mask,
/// capped by the cgroup CPU limit of the process (rounded up), at least 1. Reads the mask and
/// the cgroup files; an unreadable part counts as no restriction by it.
pub fn usable_cpu_count() -> usize {
    let allowed = current_thread_affinity().map_or(1, |cpus| cpus.len());
    usable_cpus(allowed, read_cpu_quota().ok().flatten().as_ref())
}

/// Where the files describing the machine live (real paths by default; tests point elsewhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemPaths {
    /// `/proc/self/cgroup`.
    pub proc_self_cgroup: PathBuf,
    /// `/sys/fs/cgroup`.
    pub cgroup_root: PathBuf,
    /// `/sys/devices/system` (holds `cpu/` and `node/`).
    pub system_root: PathBuf,
}

impl Default for SystemPaths {
    fn default() -> Self {
        Self {
            proc_self_cgroup: PathBuf::from("/proc/self/cgroup"),
            cgroup_root: PathBuf::from("/sys/fs/cgroup"),
            system_root: PathBuf::from("/sys/devices/system"),
        }
    }
}

/// The CPUs the collector may use, and where they sit.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CpuView {
    /// CPUs in the affinity mask, ascending (never empty).
    pub allowed: Vec<u32>,
    /// Topology of each allowed CPU, in the order of `allowed`.
    pub topology: Vec<CpuTopology>,
    /// The cgroup CPU bandwidth limit, if any.
    pub quota: Option<CpuQuota>,
    /// Things that could not be read or parsed (defaults were used instead).
    pub warnings: Vec<String>,
}

impl CpuView {
    /// Look at the machine from the calling thread: its affinity mask (at heap start-up this
    /// is the process's mask, which threads inherit), the cgroup limit and the topology.
    /// Fails only if the affinity mask cannot be read.
    pub fn detect() -> io::Result<Self> {
        Ok(Self::from_allowed(
            current_thread_affinity()?,
            &SystemPaths::default(),
        ))
    }

    /// A view of the `allowed` CPUs, reading cgroup and topology files under `paths`.
    /// An empty `allowed` is replaced by `[0]`.
    pub fn from_allowed(mut allowed: Vec<u32>, paths: &SystemPaths) -> Self {
        allowed.sort_unstable();
        allowed.dedup();
        let mut warnings = Vec::new();
        if allowed.is_empty() {
            warnings.push("empty affinity mask; assuming CPU 0".to_string());
            allowed.push(0);
        }
        let quota = cgroup::cpu_quota_at(paths).unwrap_or_else(|e| {
            warnings.push(e.to_string());
            None
        });
        let topology = topology::read_topology(&paths.system_root, &allowed, &mut warnings);
        Self {
            allowed,
            topology,
            quota,
            warnings,
        }
    }

    /// How many CPUs' worth of work the process could get when the view was taken: the number
    /// of allowed CPUs, capped by the cgroup limit (see [`usable_cpus`]).
    pub fn usable_cpus(&self) -> usize {
        usable_cpus(self.allowed.len(), self.quota.as_ref())
    }

    /// The same count for the calling thread's affinity mask now (one system call), capped by
    /// the cgroup limit the view read (no file read): cheap enough for the pause path.
    pub fn usable_cpus_now(&self) -> usize {
        let allowed = current_thread_affinity().map_or(self.allowed.len(), |cpus| cpus.len());
        usable_cpus(allowed, self.quota.as_ref())
    }

    /// Topology of `cpu`, if it is allowed.
    pub fn topology_of(&self, cpu: u32) -> Option<&CpuTopology> {
        self.topology.iter().find(|t| t.cpu == cpu)
    }

    /// Number of distinct physical cores among the allowed CPUs.
    pub fn core_count(&self) -> usize {
        self.distinct(|t| t.core).len()
    }

    /// NUMA nodes of the allowed CPUs, ascending.
    pub fn nodes(&self) -> Vec<u32> {
        self.distinct(|t| t.node)
    }

    fn distinct(&self, key: impl Fn(&CpuTopology) -> u32) -> Vec<u32> {
        let mut keys: Vec<u32> = self.topology.iter().map(key).collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use std::fs;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A scratch directory removed on drop.
    pub(crate) struct Scratch(pub PathBuf);

    impl Scratch {
        /// A fresh directory holding `files` (path relative to it, content).
        pub fn with(tag: &str, files: &[(&str, &str)]) -> Self {
            let s = Self::new(tag);
            for (rel, text) in files {
                s.write(rel, text);
            }
            s
        }

        pub fn new(tag: &str) -> Self {
            static N: AtomicU64 = AtomicU64::new(0);
            let dir = std::env::temp_dir().join(format!(
                "concord-cpu-view-{tag}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Self(dir)
        }

        pub fn write(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }

        /// System paths under this directory: `proc_cgroup`, `cg/` and `sys/`.
        pub fn paths(&self) -> SystemPaths {
            SystemPaths {
                proc_self_cgroup: self.0.join("proc_cgroup"),
                cgroup_root: self.0.join("cg"),
                system_root: self.0.join("sys"),
            }
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_usable_count_is_the_mask_capped_by_the_quota() {
        let q = |quota_us| CpuQuota {
            quota_us,
            period_us: 100_000,
            file: PathBuf::new(),
        };
        assert_eq!(usable_cpus(4, None), 4);
        assert_eq!(usable_cpus(4, Some(&q(150_000))), 2);
        assert_eq!(usable_cpus(2, Some(&q(800_000))), 2);
        assert_eq!(usable_cpus(0, None), 1);
    }

    #[test]
    fn view_of_fixture_files() {
        let siblings = "0,2\n";
        let s = Scratch::with(
            "view",
            &[
                ("sys/cpu/cpu0/topology/thread_siblings_list", siblings),
                ("sys/cpu/cpu2/topology/thread_siblings_list", siblings),
                ("sys/node/node1/cpulist", "2-3\n"),
            ],
        );
        let view = CpuView::from_allowed(vec![3, 0, 1, 2], &s.paths());
        assert_eq!(view.allowed, vec![0, 1, 2, 3]);
        assert_eq!(view.core_count(), 3);
        assert_eq!(view.nodes(), vec![0, 1]);
        assert_eq!(view.usable_cpus(), 4);
        assert_eq!(view.topology_of(2).unwrap().core, 0);
        assert!(view.topology_of(7).is_none());
        assert!(view.warnings.is_empty(), "{:?}", view.warnings);

        let empty = CpuView::from_allowed(Vec::new(), &s.paths());
        assert_eq!(empty.allowed, vec![0]);
        assert_eq!(empty.warnings.len(), 1);
    }

    #[test]
    fn view_applies_the_cgroup_cap() {
        let s = Scratch::with(
            "cap",
            &[
                ("proc_cgroup", "0::/box\n"),
                ("cg/box/cpu.max", "100000 100000\n"),
            ],
        );
        let view = CpuView::from_allowed(vec![0, 1, 2, 3], &s.paths());
        assert_eq!(view.usable_cpus(), 1);
        assert!(view.warnings.is_empty(), "{:?}", view.warnings);
        // Garbage in the limit file: a warning and no cap.
        s.write("cg/box/cpu.max", "lots\n");
        let view = CpuView::from_allowed(vec![0, 1, 2, 3], &s.paths());
        assert_eq!(view.usable_cpus(), 4);
        assert_eq!(view.warnings.len(), 1, "{:?}", view.warnings);
    }

    #[test]
    fn real_machine_view() {
        let view = CpuView::detect().unwrap();
        assert!(!view.allowed.is_empty());
        assert_eq!(view.topology.len(), view.allowed.len());
        assert!(view.usable_cpus() >= 1);
        assert!(view.usable_cpus() <= view.allowed.len());
        assert_eq!(view.usable_cpus_now(), view.usable_cpus());
        assert_eq!(usable_cpu_count(), view.usable_cpus());
        assert!(current_cpu().is_some());
    }

    #[test]
    fn usable_count_follows_the_calling_threads_mask() {
        std::thread::spawn(|| {
            let all = current_thread_affinity().unwrap();
            let view = CpuView::detect().unwrap();
            crate::os::affinity::set_current_thread_affinity(&all[..1]).unwrap();
            assert_eq!(usable_cpu_count(), 1);
            assert_eq!(view.usable_cpus_now(), 1);
        })
        .join()
        .unwrap();
    }
}
