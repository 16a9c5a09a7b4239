//! The cgroup CPU bandwidth limit: how many CPUs' worth of time this process's cgroup (or an
//! ancestor) allows, from cgroup v2 `cpu.max` or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`,
//! found through `/proc/self/cgroup`.
//!
//! [`limit_dirs`], the walk from `/proc/self/cgroup` to the directories that may hold a limit,
//! serves the memory limit ([`crate::os::memory`]) too.

use std::path::{Component, Path, PathBuf};

use super::SystemPaths;
use crate::os::procfs::{parse_error, read_optional, KernelFileError};

/// The kernel's default CFS period, for a `cpu.max` that gives only a quota.
const DEFAULT_PERIOD_US: u64 = 100_000;

/// A cgroup CPU bandwidth limit: `quota_us` of CPU time per `period_us` of wall time.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct CpuQuota {
    /// CPU time allowed per period, in microseconds.
    pub quota_us: u64,
    /// Length of a period, in microseconds.
    pub period_us: u64,
    /// The file the limit came from.
    pub file: PathBuf,
}

impl CpuQuota {
    /// The limit as a (fractional) number of CPUs.
    pub fn cpus(&self) -> f64 {
        self.quota_us as f64 / self.period_us as f64
    }

    /// The limit as a whole number of CPUs: `quota / period` rounded up (as HotSpot's container
    /// support does), at least 1.
    pub fn whole_cpus(&self) -> usize {
        (self.quota_us.div_ceil(self.period_us) as usize).max(1)
    }
}

fn parse_u64(what: &'static str, text: &str, whole: &str) -> Result<u64, KernelFileError> {
    text.trim()
        .parse()
        .map_err(|_| parse_error(what, whole, format!("'{}' is not a number", text.trim())))
}

/// `(quota, period)` when both are positive; an error quoting `whole` from file `what` if not.
fn positive_limit(
    what: &'static str,
    whole: &str,
    quota: u64,
    period: u64,
) -> Result<Option<(u64, u64)>, KernelFileError> {
    if quota == 0 || period == 0 {
        return Err(parse_error(
            what,
            whole,
            "quota and period must be positive",
        ));
    }
    Ok(Some((quota, period)))
}

/// Parse a cgroup v2 `cpu.max` (`"max 100000"` → no limit, `"200000 100000"` → 2 CPUs).
/// Returns `(quota_us, period_us)`.
pub fn parse_cpu_max(text: &str) -> Result<Option<(u64, u64)>, KernelFileError> {
    let mut fields = text.split_whitespace();
    let quota = fields
        .next()
        .ok_or_else(|| parse_error("cpu.max", text, "empty"))?;
    let period = match fields.next() {
        Some(p) => parse_u64("cpu.max", p, text)?,
        None => DEFAULT_PERIOD_US, // some writers omit it
    };
    if fields.next().is_some() {
        return Err(parse_error("cpu.max", text, "expected 'QUOTA PERIOD'"));
    }
    if quota == "max" {
        return Ok(None);
    }
    positive_limit("cpu.max", text, parse_u64("cpu.max", quota, text)?, period)
}

/// Parse cgroup v1 `cpu.cfs_quota_us` and `cpu.cfs_period_us` (a quota of -1 is no limit).
pub fn parse_cfs_quota(quota: &str, period: &str) -> Result<Option<(u64, u64)>, KernelFileError> {
    let q: i64 = quota
        .trim()
        .parse()
        .map_err(|_| parse_error("cpu.cfs_quota_us", quota, "not a number"))?;
    if q < 0 {
        return Ok(None);
    }
    let p = parse_u64("cpu.cfs_period_us", period, period)?;
    positive_limit("cpu.cfs_quota_us", quota, q as u64, p)
}

/// One line of `/proc/self/cgroup`: `hierarchy-id:controllers:path`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupLine {
    /// Hierarchy id (0 for the cgroup v2 unified hierarchy).
    pub hierarchy: u32,
    /// Controllers bound to the hierarchy (empty for v2).
    pub controllers: Vec<String>,
    /// Path of our cgroup inside the hierarchy, e.g. `/user.slice/x.scope`.
    pub path: String,
}

/// Parse `/proc/self/cgroup`; malformed lines are skipped.
pub fn parse_proc_cgroup(text: &str) -> Vec<CgroupLine> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let hierarchy = parts.next()?.trim().parse().ok()?;
            let controllers = parts
                .next()?
                .split(',')
                .filter(|c| !c.is_empty())
                .map(str::to_string)
                .collect();
            let path = parts.next()?.to_string();
            Some(CgroupLine {
                hierarchy,
                controllers,
                path,
            })
        })
        .collect()
}

/// Directories from the cgroup `path` up to the mount root (deepest first) under `mount`;
/// empty when the path tries to leave the mount.
fn cgroup_dirs(mount: &Path, path: &str) -> Vec<PathBuf> {
    let rel = Path::new(path.trim().trim_start_matches('/'));
    if rel
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Vec::new();
    }
    rel.ancestors().map(|a| mount.join(a)).collect()
}

/// The limit a cgroup directory sets, if any: `cpu.max` under v2, the two CFS files under v1.
fn limit_in(dir: &Path, v2: bool) -> Result<Option<CpuQuota>, KernelFileError> {
    let (file, limit) = if v2 {
        let file = dir.join("cpu.max");
        let limit = match read_optional(&file)? {
            Some(text) => parse_cpu_max(&text)?,
            None => None,
        };
        (file, limit)
    } else {
        let file = dir.join("cpu.cfs_quota_us");
        let limit = match (
            read_optional(&file)?,
            read_optional(&dir.join("cpu.cfs_period_us"))?,
        ) {
            (Some(q), Some(p)) => parse_cfs_quota(&q, &p)?,
            _ => None,
        };
        (file, limit)
    };
    Ok(limit.map(|(quota_us, period_us)| CpuQuota {
        quota_us,
        period_us,
        file,
    }))
}

/// The tightest CPU bandwidth limit on our cgroup and its ancestors, from `proc_cgroup` (the
/// text of `/proc/self/cgroup`) and the cgroup file systems under `cgroup_root` (normally
/// `/sys/fs/cgroup`). Looks at v2 (`cpu.max`, also under `unified/` on hybrid systems) and v1
/// (`cpu.cfs_quota_us` / `cpu.cfs_period_us` under `cpu/`, `cpu,cpuacct/` or `cpuacct,cpu/`),
/// in our cgroup and its ancestors ([`limit_dirs`]). Missing files mean no limit.
pub fn cpu_quota_from(
    proc_cgroup: &str,
    cgroup_root: &Path,
) -> Result<Option<CpuQuota>, KernelFileError> {
    let mut best: Option<CpuQuota> = None;
    let v1_mounts = ["cpu", "cpu,cpuacct", "cpuacct,cpu"];
    for (dir, v2) in limit_dirs(proc_cgroup, cgroup_root, "cpu", &v1_mounts) {
        if let Some(q) = limit_in(&dir, v2)? {
            let tighter = match &best {
                Some(b) => q.cpus() < b.cpus(),
                None => true,
            };
            if tighter {
                best = Some(q);
            }
        }
    }
    Ok(best)
}

/// The cgroup directories that may set a limit of `controller` on this process, each with
/// whether it belongs to the v2 hierarchy: for every line of `proc_cgroup` (the text of
/// `/proc/self/cgroup`) of the v2 hierarchy, or of a v1 hierarchy that lists `controller`, our
/// cgroup's directory and its ancestors (deepest first) under each place that hierarchy may be
/// mounted in `cgroup_root`: the root itself and `unified/` for v2, `v1_mounts` for v1.
/// Ancestors are included because a parent's limit binds too, and because inside a container
/// without a cgroup namespace our full path may not exist under the container's mount, whose
/// root is then our cgroup.
pub fn limit_dirs(
    proc_cgroup: &str,
    cgroup_root: &Path,
    controller: &str,
    v1_mounts: &[&str],
) -> Vec<(PathBuf, bool)> {
    let mut dirs = Vec::new();
    for line in parse_proc_cgroup(proc_cgroup) {
        let v2 = line.hierarchy == 0 && line.controllers.is_empty();
        let mounts: Vec<PathBuf> = if v2 {
            vec![cgroup_root.to_path_buf(), cgroup_root.join("unified")]
        } else if line.controllers.iter().any(|c| c == controller) {
            v1_mounts
                .iter()
                .map(|name| cgroup_root.join(name))
                .collect()
        } else {
            continue;
        };
        for mount in &mounts {
            dirs.extend(cgroup_dirs(mount, &line.path).into_iter().map(|d| (d, v2)));
        }
    }
    dirs
}

/// The limit on the cgroup `paths.proc_self_cgroup` names (see [`cpu_quota_from`]); no file,
/// no limit.
pub fn cpu_quota_at(paths: &SystemPaths) -> Result<Option<CpuQuota>, KernelFileError> {
    match read_optional(&paths.proc_self_cgroup)? {
        Some(text) => cpu_quota_from(&text, &paths.cgroup_root),
        None => Ok(None),
    }
}

/// The cgroup CPU bandwidth limit of this process, if any (see [`cpu_quota_from`]).
pub fn read_cpu_quota() -> Result<Option<CpuQuota>, KernelFileError> {
    cpu_quota_at(&SystemPaths::default())
}

#[cfg(test)]
mod tests {
    use super::super::tests::Scratch;
    use super::*;

    #[test]
    fn cpu_max_forms() {
        assert_eq!(parse_cpu_max("max 100000\n").unwrap(), None);
        assert_eq!(
            parse_cpu_max("200000 100000\n").unwrap(),
            Some((200_000, 100_000))
        );
        assert_eq!(parse_cpu_max("max").unwrap(), None);
        assert_eq!(parse_cpu_max("50000").unwrap(), Some((50_000, 100_000)));
        for bad in ["", "x 100000", "100 y", "0 100000", "100 0", "1 2 3"] {
            assert!(parse_cpu_max(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_cfs_quota("-1\n", "100000\n").unwrap(), None);
        assert_eq!(
            parse_cfs_quota("150000\n", "100000\n").unwrap(),
            Some((150_000, 100_000))
        );
        assert!(parse_cfs_quota("lots", "100000").is_err());
        assert!(parse_cfs_quota("100", "0").is_err());
        assert!(parse_cfs_quota("0", "100000").is_err());
    }

    #[test]
    fn quota_rounds_up_to_whole_cpus() {
        let q = |quota_us, period_us| CpuQuota {
            quota_us,
            period_us,
            file: PathBuf::new(),
        };
        assert_eq!(q(200_000, 100_000).whole_cpus(), 2);
        assert_eq!(q(150_000, 100_000).whole_cpus(), 2);
        assert_eq!(q(10_000, 100_000).whole_cpus(), 1);
        assert!((q(150_000, 100_000).cpus() - 1.5).abs() < 1e-12);
    }

    #[test]
    fn proc_cgroup_lines() {
        let lines = parse_proc_cgroup("12:cpu,cpuacct:/docker/abc\n0::/user.slice\ngarbage\n");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].hierarchy, 12);
        assert_eq!(lines[0].controllers, vec!["cpu", "cpuacct"]);
        assert_eq!(lines[0].path, "/docker/abc");
        assert_eq!(lines[1].hierarchy, 0);
        assert!(lines[1].controllers.is_empty());
        assert_eq!(lines[1].path, "/user.slice");
    }

    /// Fixture cgroup trees: v2 under the root, v1 under `cpu,cpuacct/`.
    fn cgroup_files() -> Scratch {
        let unlimited = "max 100000\n";
        let period = "100000\n";
        Scratch::with(
            "cgroup",
            &[
                ("a/cpu.max", "300000 100000\n"),
                ("a/b/cpu.max", unlimited),
                ("cpu.max", unlimited),
                ("bad/cpu.max", "lots of cpu\n"),
                ("cpu,cpuacct/job/cpu.cfs_quota_us", "250000\n"),
                ("cpu,cpuacct/job/cpu.cfs_period_us", period),
                ("cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
                ("cpu,cpuacct/cpu.cfs_period_us", period),
                // A quota file without its period file is no limit.
                ("cpu,cpuacct/half/cpu.cfs_quota_us", "50000\n"),
            ],
        )
    }

    #[test]
    fn cgroup_v2_quota_takes_the_tightest_ancestor() {
        let s = cgroup_files();
        let q = cpu_quota_from("0::/a/b\n", &s.0).unwrap().unwrap();
        assert_eq!((q.quota_us, q.period_us), (300_000, 100_000));
        assert_eq!(q.whole_cpus(), 3);
        assert_eq!(q.file, s.0.join("a/cpu.max"));
        // No files at all: no limit, no error.
        let none = s.0.join("none");
        assert_eq!(cpu_quota_from("0::/x/y\n", &none).unwrap(), None);
        // Paths that try to leave the mount are ignored.
        let inner = s.0.join("a");
        assert_eq!(cpu_quota_from("0::/../../etc\n", &inner).unwrap(), None);
        // Garbage in a file is an error, not a panic.
        assert!(cpu_quota_from("0::/bad\n", &s.0).is_err());
    }

    #[test]
    fn cgroup_v1_quota_and_unlimited() {
        let s = cgroup_files();
        let text = "4:memory:/job\n3:cpu,cpuacct:/job\n0::/\n";
        let q = cpu_quota_from(text, &s.0).unwrap().unwrap();
        assert_eq!(q.whole_cpus(), 3);
        assert!((q.cpus() - 2.5).abs() < 1e-12);
        assert_eq!(q.file, s.0.join("cpu,cpuacct/job/cpu.cfs_quota_us"));
        assert_eq!(cpu_quota_from("3:cpu,cpuacct:/\n", &s.0).unwrap(), None);
        assert_eq!(cpu_quota_from("3:cpu,cpuacct:/half\n", &s.0).unwrap(), None);
    }

    #[test]
    fn the_process_quota_is_readable() {
        if let Some(q) = read_cpu_quota().unwrap() {
            assert!(q.whole_cpus() >= 1);
        }
    }
}
