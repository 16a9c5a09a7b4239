//! Transparent huge pages (paper 002 §3): the heap's THP mode, the system's THP settings in
//! `/sys/kernel/mm/transparent_hugepage`, 002's launch-time rule for `dynamic` (huge pages
//! only while the machine's available memory is well above what the heap still needs), how
//! much of the heap huge pages back (`AnonHugePages` in `/proc/self/smaps`), and the pieces of
//! 002 Fig. 3's system-wide tuner: its inputs (`MemAvailable`, `pgscan_direct`, khugepaged's
//! CPU use), its decision as a pure function, and the writes of the THP files.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::procfs::{
    field_value, parse_error, parse_sysfs_choice, parse_task_stat, read_mem_available,
    read_optional, read_self_smaps, read_text, KernelFileError,
};
use super::sched::clock_ticks_per_second;
use super::vm::{HugePageAdvice, Reservation};

/// The size of a transparent huge page on x86-64 and arm64 with 4 KiB pages: a heap that may
/// use huge pages is reserved at this alignment, so that its first huge page starts at its
/// base.
pub const HUGE_PAGE_SIZE: usize = 2 << 20;

/// Where the system's THP settings live.
pub const SYSFS_THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// What the heap tells the kernel about transparent huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ThpMode {
    /// No `madvise` call: the system setting alone decides (HotSpot without
    /// `-XX:+UseTransparentHugePages`).
    System,
    /// `MADV_NOHUGEPAGE` on the whole heap.
    Never,
    /// `MADV_HUGEPAGE` on the whole heap, reserved at 2 MiB alignment (huge pages when the
    /// system's `enabled` is `madvise` or `always`).
    Madvise,
    /// The same call as `madvise`: the heap asks for huge pages whatever else runs.
    Always,
    /// 002's rule: huge pages while `MemAvailable` is at least the heap's remaining footprint
    /// plus a margin, checked at launch and every few seconds by a sampler thread, which
    /// switches the part of the heap not yet committed.
    Dynamic,
}

impl ThpMode {
    /// Every mode, as users write them.
    pub const ALL: [ThpMode; 5] = [
        ThpMode::System,
        ThpMode::Never,
        ThpMode::Madvise,
        ThpMode::Always,
        ThpMode::Dynamic,
    ];

    /// The mode's name: `system`, `never`, `madvise`, `always`, `dynamic`.
    pub fn name(self) -> &'static str {
        match self {
            ThpMode::System => "system",
            ThpMode::Never => "never",
            ThpMode::Madvise => "madvise",
            ThpMode::Always => "always",
            ThpMode::Dynamic => "dynamic",
        }
    }

    /// The allowed names, comma-separated.
    pub fn allowed() -> String {
        ThpMode::ALL.map(ThpMode::name).join(", ")
    }

    /// The advice for the whole heap at launch, `available` being `MemAvailable` (if it
    /// could be read) for `dynamic`; `None`: no call.
    pub fn launch_advice(
        self,
        available: Option<u64>,
        footprint: u64,
        margin: u64,
    ) -> Option<HugePageAdvice> {
        match self {
            ThpMode::System => None,
            ThpMode::Never => Some(HugePageAdvice::NoHuge),
            ThpMode::Madvise | ThpMode::Always => Some(HugePageAdvice::Huge),
            ThpMode::Dynamic => Some(dynamic_advice(available, footprint, margin)),
        }
    }

    /// Whether the heap must be reserved at [`HUGE_PAGE_SIZE`] alignment.
    pub fn wants_huge_alignment(self) -> bool {
        matches!(self, ThpMode::Madvise | ThpMode::Always | ThpMode::Dynamic)
    }
}

impl fmt::Display for ThpMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ThpMode {
    type Err = String;

    fn from_str(text: &str) -> Result<ThpMode, String> {
        let t = text.trim();
        ThpMode::ALL
            .into_iter()
            .find(|m| m.name().eq_ignore_ascii_case(t))
            .ok_or_else(|| format!("is not a THP mode (allowed: {})", ThpMode::allowed()))
    }
}

/// 002's launch-time rule: huge pages only when the available memory is at least the heap's
/// footprint plus `margin` (all bytes), so that the system is unlikely to come under memory
/// pressure, and have to split huge pages, once the heap has been touched. Available memory
/// that could not be read gives no huge pages.
pub fn dynamic_advice(available: Option<u64>, footprint: u64, margin: u64) -> HugePageAdvice {
    match available {
        Some(a) if footprint.checked_add(margin).is_some_and(|need| a >= need) => {
            HugePageAdvice::Huge
        }
        _ => HugePageAdvice::NoHuge,
    }
}

/// The system's THP settings (`enabled`, `defrag`, `khugepaged/defrag`), each the chosen value
/// (`madvise`, `1`); `None` where the file does not exist or cannot be read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SystemThp {
    /// `enabled`: always, madvise or never.
    pub enabled: Option<String>,
    /// `defrag`: direct compaction on a huge-page fault (always, defer, defer+madvise, madvise,
    /// never).
    pub defrag: Option<String>,
    /// `khugepaged/defrag`: whether khugepaged collapses pages in the background (1 or 0).
    pub khugepaged_defrag: Option<String>,
}

/// The three THP files, relative to the THP directory.
pub const THP_FILES: [&str; 3] = ["enabled", "defrag", "khugepaged/defrag"];

/// The chosen value of the THP file `name` under `dir`; `Ok(None)` when it does not exist.
pub fn read_thp_file(dir: &Path, name: &str) -> Result<Option<String>, KernelFileError> {
    read_optional(&dir.join(name))?
        .map(|t| parse_sysfs_choice(&t))
        .transpose()
}

impl SystemThp {
    /// The settings in the THP directory `dir` (a file that is missing or unreadable is
    /// `None`).
    pub fn read_from(dir: &Path) -> SystemThp {
        let get = |name| read_thp_file(dir, name).ok().flatten();
        SystemThp {
            enabled: get(THP_FILES[0]),
            defrag: get(THP_FILES[1]),
            khugepaged_defrag: get(THP_FILES[2]),
        }
    }

    /// The settings of this machine.
    pub fn read() -> SystemThp {
        SystemThp::read_from(Path::new(SYSFS_THP_DIR))
    }
}

/// Whether memory given `advice` (`None`: no madvise call) gets huge pages on a first write
/// under the system's THP `enabled` setting: `always` gives them unless told not to,
/// `madvise` only where asked for, `never` (or unknown) never.
pub fn huge_pages_expected(advice: Option<HugePageAdvice>, enabled: Option<&str>) -> bool {
    match (advice, enabled) {
        (Some(HugePageAdvice::NoHuge), _) => false,
        (Some(HugePageAdvice::Huge), Some("always" | "madvise")) => true,
        (None, Some("always")) => true,
        _ => false,
    }
}

/// Bytes of `[start, end)` of this process backed by transparent huge pages (`AnonHugePages`
/// summed over the mappings there).
pub fn huge_bytes_in(start: usize, end: usize) -> Result<u64, KernelFileError> {
    Ok(read_self_smaps(start, end)?
        .iter()
        .map(|v| v.anon_huge_bytes)
        .sum())
}

/// Bytes of `[start, end)` of this process resident in memory (`Rss` summed over the
/// mappings there).
pub fn resident_bytes_in(start: usize, end: usize) -> Result<u64, KernelFileError> {
    Ok(read_self_smaps(start, end)?
        .iter()
        .map(|v| v.rss_bytes)
        .sum())
}

/// What a heap's THP mode did: the summary's `thp` and `heap_huge_bytes`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ThpReport {
    /// The configured mode.
    pub mode: ThpMode,
    /// The advice now in force on the heap's not yet committed memory (`None`: no call made).
    pub advice: Option<HugePageAdvice>,
    /// How often `dynamic` changed its advice after launch.
    pub switches: u64,
    /// The system settings, read when the report was made.
    pub system: SystemThp,
    /// Bytes of the heap backed by huge pages when the report was made (`None`: smaps could
    /// not be read).
    pub heap_huge_bytes: Option<u64>,
}

/// How often `dynamic` looks at the available memory again: 002's adjustment period.
pub const DYNAMIC_PERIOD: Duration = Duration::from_secs(2);

/// A heap's THP mode and the advice in force, shared by the heap and, for `dynamic`, the
/// sampler thread that re-checks 002's rule off the pause path.
#[derive(Debug)]
pub struct ThpState {
    mode: ThpMode,
    margin: u64,
    advice: Mutex<Option<HugePageAdvice>>,
    switches: AtomicU64,
}

impl ThpState {
    /// The state of a heap built in `mode` whose reservation got `advice` at launch.
    pub fn new(mode: ThpMode, margin: u64, advice: Option<HugePageAdvice>) -> ThpState {
        ThpState {
            mode,
            margin,
            advice: Mutex::new(advice),
            switches: AtomicU64::new(0),
        }
    }

    /// The configured mode.
    pub fn mode(&self) -> ThpMode {
        self.mode
    }

    /// The advice in force (`None`: no madvise call was made).
    pub fn advice(&self) -> Option<HugePageAdvice> {
        *self.lock()
    }

    fn lock(&self) -> MutexGuard<'_, Option<HugePageAdvice>> {
        self.advice.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `dynamic`'s periodic check: 002's rule for `footprint` (the bytes the heap may still
    /// fault in) and `available`; when its answer differs from the advice in force, the new
    /// advice goes on `[start, start+len)` of `reservation` (the part not yet committed).
    /// Returns the advice switched to, if any. Other modes do nothing.
    pub fn recheck(
        &self,
        reservation: &Reservation,
        (start, len): (usize, usize),
        footprint: u64,
        available: Option<u64>,
    ) -> io::Result<Option<HugePageAdvice>> {
        if self.mode != ThpMode::Dynamic {
            return Ok(None);
        }
        let wanted = dynamic_advice(available, footprint, self.margin);
        let mut advice = self.lock();
        if *advice == Some(wanted) {
            return Ok(None);
        }
        reservation.advise(start, len, wanted)?;
        *advice = Some(wanted);
        self.switches.fetch_add(1, Ordering::Relaxed);
        Ok(Some(wanted))
    }

    /// The report for a heap over `[start, end)`: mode, advice, switches, the system settings
    /// and the heap's huge-page bytes now.
    pub fn report(&self, start: usize, end: usize) -> ThpReport {
        ThpReport {
            mode: self.mode,
            advice: *self.lock(),
            switches: self.switches.load(Ordering::Relaxed),
            system: SystemThp::read(),
            heap_huge_bytes: huge_bytes_in(start, end).ok(),
        }
    }
}

/// This machine's `MemAvailable`, bytes.
pub fn mem_available() -> Result<u64, KernelFileError> {
    read_mem_available(Path::new("/proc/meminfo"))
}

// ------------------------------------------------------------------------------------------
// The system-wide tuner of 002 Fig. 3
// ------------------------------------------------------------------------------------------

/// What the tuner looks at over one adjustment period.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TunerInputs {
    /// `MemAvailable`, bytes.
    pub mem_available: u64,
    /// Pages scanned by direct reclaim per second over the period (`pgscan_direct`).
    pub direct_scan_per_s: f64,
    /// khugepaged's CPU use over the period, percent of one CPU (`None`: no khugepaged).
    pub khugepaged_cpu_percent: Option<f64>,
}

/// The tuner's thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TunerLimits {
    /// Below this much available memory, THP is turned off (002's footprint threshold).
    pub min_available: u64,
    /// Above this direct-scan rate (pages/s), direct compaction on huge-page faults is off.
    pub max_direct_scan_per_s: f64,
    /// Above this khugepaged CPU use (percent of one CPU), background collapsing is off.
    pub max_khugepaged_cpu_percent: f64,
}

/// Values for the three THP files; `None` leaves a file as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ThpSettings {
    /// `enabled`.
    pub enabled: Option<String>,
    /// `defrag`.
    pub defrag: Option<String>,
    /// `khugepaged/defrag`.
    pub khugepaged_defrag: Option<String>,
}

impl ThpSettings {
    /// `(file, value)` of the files set, in [`THP_FILES`] order.
    pub fn files(&self) -> Vec<(&'static str, &str)> {
        [&self.enabled, &self.defrag, &self.khugepaged_defrag]
            .into_iter()
            .zip(THP_FILES)
            .filter_map(|(v, f)| Some((f, v.as_deref()?)))
            .collect()
    }
}

impl From<&SystemThp> for ThpSettings {
    fn from(s: &SystemThp) -> ThpSettings {
        ThpSettings {
            enabled: s.enabled.clone(),
            defrag: s.defrag.clone(),
            khugepaged_defrag: s.khugepaged_defrag.clone(),
        }
    }
}

/// 002 Fig. 3's decision for one period, with `found` the settings the tuner started from
/// (their "on" values are kept: `madvise` stays `madvise`; `never` found means `always` and
/// `madvise` for on):
///
/// 1. available memory below `min_available`: `enabled = never`, and the finer knobs are left
///    alone (they mean nothing with THP off);
/// 2. otherwise THP on, and direct compaction (`defrag`) off (`never`) while direct page
///    scanning is above its limit, on otherwise;
/// 3. background collapsing (`khugepaged/defrag`) `0` while khugepaged uses more CPU than its
///    limit, `1` otherwise (unknown khugepaged use counts as none).
pub fn tuner_decision(
    inputs: &TunerInputs,
    limits: &TunerLimits,
    found: &SystemThp,
) -> ThpSettings {
    let on = |found: &Option<String>, default: &str| match found.as_deref() {
        Some("never") | None => default.to_string(),
        Some(v) => v.to_string(),
    };
    if inputs.mem_available < limits.min_available {
        return ThpSettings {
            enabled: Some("never".into()),
            ..ThpSettings::default()
        };
    }
    let direct_on = inputs.direct_scan_per_s <= limits.max_direct_scan_per_s;
    let background_on = inputs
        .khugepaged_cpu_percent
        .is_none_or(|cpu| cpu <= limits.max_khugepaged_cpu_percent);
    ThpSettings {
        enabled: Some(on(&found.enabled, "always")),
        defrag: Some(if direct_on {
            on(&found.defrag, "madvise")
        } else {
            "never".into()
        }),
        khugepaged_defrag: Some(if background_on { "1" } else { "0" }.into()),
    }
}

/// Where the tuner reads and writes (real paths by default; tests point elsewhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TunerPaths {
    /// The THP directory (`/sys/kernel/mm/transparent_hugepage`).
    pub thp_dir: PathBuf,
    /// The proc directory (`/proc`): `meminfo`, `vmstat` and khugepaged's `<pid>/stat`.
    pub proc_dir: PathBuf,
}

impl Default for TunerPaths {
    fn default() -> Self {
        TunerPaths {
            thp_dir: PathBuf::from(SYSFS_THP_DIR),
            proc_dir: PathBuf::from("/proc"),
        }
    }
}

/// Cumulative counters the tuner turns into rates.
#[derive(Clone, Copy, Debug)]
pub struct TunerSample {
    /// When they were read.
    pub at: Instant,
    /// `MemAvailable`, bytes.
    pub mem_available: u64,
    /// `pgscan_direct` of `vmstat`, pages.
    pub pgscan_direct: u64,
    /// khugepaged's user + system CPU time, clock ticks (`None`: not found).
    pub khugepaged_ticks: Option<u64>,
}

/// khugepaged's CPU ticks: the process named `khugepaged` under `proc_dir`.
fn khugepaged_ticks(proc_dir: &Path) -> Option<u64> {
    fs::read_dir(proc_dir).ok()?.flatten().find_map(|entry| {
        let name = entry.file_name();
        name.to_str()?.parse::<u32>().ok()?;
        let comm = fs::read_to_string(entry.path().join("comm")).ok()?;
        if comm.trim_end() != "khugepaged" {
            return None;
        }
        let stat = fs::read_to_string(entry.path().join("stat")).ok()?;
        Some(parse_task_stat(&stat).ok()?.cpu_ticks())
    })
}

impl TunerSample {
    /// Read the counters under `paths`.
    pub fn read(paths: &TunerPaths) -> Result<TunerSample, KernelFileError> {
        let mem_available = read_mem_available(&paths.proc_dir.join("meminfo"))?;
        let vmstat_path = paths.proc_dir.join("vmstat");
        let vmstat = read_text(&vmstat_path)?;
        let pgscan_direct = field_value(&vmstat, "pgscan_direct")
            .ok_or_else(|| parse_error("/proc/vmstat", &vmstat, "no pgscan_direct line"))?;
        Ok(TunerSample {
            at: Instant::now(),
            mem_available,
            pgscan_direct,
            khugepaged_ticks: khugepaged_ticks(&paths.proc_dir),
        })
    }

    /// The inputs of the period from `earlier` to `self`.
    pub fn inputs_since(&self, earlier: &TunerSample) -> TunerInputs {
        let seconds = self.at.duration_since(earlier.at).as_secs_f64().max(1e-3);
        let khugepaged_cpu_percent = match (self.khugepaged_ticks, earlier.khugepaged_ticks) {
            (Some(now), Some(then)) => Some(
                100.0 * now.saturating_sub(then) as f64 / clock_ticks_per_second() as f64 / seconds,
            ),
            _ => None,
        };
        TunerInputs {
            mem_available: self.mem_available,
            direct_scan_per_s: self.pgscan_direct.saturating_sub(earlier.pgscan_direct) as f64
                / seconds,
            khugepaged_cpu_percent,
        }
    }
}

/// Whether this process may write every THP file under `dir` (`access(W_OK)`).
pub fn thp_files_writable(dir: &Path) -> bool {
    THP_FILES.iter().all(|name| {
        let Ok(path) = std::ffi::CString::new(dir.join(name).as_os_str().as_encoded_bytes()) else {
            return false;
        };
        // SAFETY: `path` is a NUL-terminated string that lives across the call.
        unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
    })
}

/// Write `settings` to the THP files under `dir`; the first failure names its file.
pub fn write_thp_settings(dir: &Path, settings: &ThpSettings) -> Result<(), KernelFileError> {
    for (name, value) in settings.files() {
        let path = dir.join(name);
        fs::write(&path, value).map_err(|source| KernelFileError::Io { path, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn huge_pages_are_expected_where_advice_and_system_setting_allow_them() {
        use HugePageAdvice::{Huge, NoHuge};
        for enabled in [Some("always"), Some("madvise"), Some("never"), None] {
            assert!(!huge_pages_expected(Some(NoHuge), enabled), "{enabled:?}");
        }
        assert!(huge_pages_expected(Some(Huge), Some("always")));
        assert!(huge_pages_expected(Some(Huge), Some("madvise")));
        assert!(!huge_pages_expected(Some(Huge), Some("never")));
        assert!(!huge_pages_expected(Some(Huge), None));
        assert!(huge_pages_expected(None, Some("always")));
        assert!(!huge_pages_expected(None, Some("madvise")));
        assert!(!huge_pages_expected(None, Some("never")));
    }

    #[test]
    fn modes_parse_and_name_what_is_allowed() {
        for mode in ThpMode::ALL {
            assert_eq!(mode.name().parse::<ThpMode>(), Ok(mode));
            assert_eq!(mode.to_string().to_uppercase().parse::<ThpMode>(), Ok(mode));
        }
        let err = "huge".parse::<ThpMode>().unwrap_err();
        assert_eq!(
            err,
            "is not a THP mode (allowed: system, never, madvise, always, dynamic)"
        );
    }

    #[test]
    fn dynamic_rule_needs_the_footprint_plus_the_margin() {
        use HugePageAdvice::{Huge, NoHuge};
        // (available, footprint, margin) -> advice.
        let fixtures = [
            (Some(24 * GIB), 4 * GIB, GIB, Huge),
            (Some(5 * GIB), 4 * GIB, GIB, Huge),
            (Some(5 * GIB - 1), 4 * GIB, GIB, NoHuge),
            (Some(3 * GIB), 4 * GIB, 0, NoHuge),
            (Some(4 * GIB), 4 * GIB, 0, Huge),
            (Some(u64::MAX), u64::MAX, 1, NoHuge),
            (None, 0, 0, NoHuge),
        ];
        for (available, footprint, margin, advice) in fixtures {
            assert_eq!(
                dynamic_advice(available, footprint, margin),
                advice,
                "{available:?} {footprint} {margin}"
            );
        }
    }

    #[test]
    fn launch_advice_per_mode() {
        use HugePageAdvice::{Huge, NoHuge};
        let plenty = Some(64 * GIB);
        assert_eq!(ThpMode::System.launch_advice(plenty, GIB, GIB), None);
        assert_eq!(ThpMode::Never.launch_advice(plenty, GIB, GIB), Some(NoHuge));
        assert_eq!(ThpMode::Madvise.launch_advice(None, GIB, GIB), Some(Huge));
        assert_eq!(ThpMode::Always.launch_advice(None, GIB, GIB), Some(Huge));
        assert_eq!(ThpMode::Dynamic.launch_advice(plenty, GIB, GIB), Some(Huge));
        assert_eq!(
            ThpMode::Dynamic.launch_advice(Some(GIB), GIB, GIB),
            Some(NoHuge)
        );
        assert!(!ThpMode::System.wants_huge_alignment());
        assert!(!ThpMode::Never.wants_huge_alignment());
        assert!(ThpMode::Dynamic.wants_huge_alignment());
    }

    #[test]
    fn system_settings_from_a_fixture_directory() {
        let dir = std::env::temp_dir().join(format!("concord-thp-sys-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("khugepaged")).unwrap();
        std::fs::write(dir.join("enabled"), "always [madvise] never\n").unwrap();
        std::fs::write(dir.join("khugepaged/defrag"), "1\n").unwrap();
        let sys = SystemThp::read_from(&dir);
        assert_eq!(sys.enabled.as_deref(), Some("madvise"));
        assert_eq!(sys.defrag, None);
        assert_eq!(sys.khugepaged_defrag.as_deref(), Some("1"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dynamic_recheck_switches_the_range_it_is_given() {
        use crate::os::procfs::read_self_smaps;
        use HugePageAdvice::{Huge, NoHuge};
        let r = Reservation::new(8 << 20, HUGE_PAGE_SIZE).unwrap();
        r.advise(r.base(), r.size(), Huge).unwrap();
        let tail = (r.base() + (4 << 20), 4 << 20);
        let state = ThpState::new(ThpMode::Dynamic, GIB, Some(Huge));
        // Plenty available: nothing changes.
        assert_eq!(state.recheck(&r, tail, GIB, Some(8 * GIB)).unwrap(), None);
        // Too little: the tail loses its huge-page advice, the head keeps it.
        assert_eq!(
            state.recheck(&r, tail, GIB, Some(GIB)).unwrap(),
            Some(NoHuge)
        );
        assert_eq!(state.recheck(&r, tail, GIB, None).unwrap(), None);
        let vmas = read_self_smaps(r.base(), r.base() + r.size()).unwrap();
        let flags: Vec<(usize, bool, bool)> = vmas
            .iter()
            .map(|v| (v.start - r.base(), v.has_flag("hg"), v.has_flag("nh")))
            .collect();
        assert_eq!(flags, [(0, true, false), (4 << 20, false, true)]);
        // Back again once memory is available.
        assert_eq!(
            state.recheck(&r, tail, GIB, Some(3 * GIB)).unwrap(),
            Some(Huge)
        );
        let report = state.report(r.base(), r.base() + r.size());
        assert_eq!((report.advice, report.switches), (Some(Huge), 2));
        assert_eq!(report.heap_huge_bytes, Some(0), "nothing was touched");
        // Other modes never re-check.
        let fixed = ThpState::new(ThpMode::Never, GIB, Some(NoHuge));
        assert_eq!(fixed.recheck(&r, tail, 0, Some(64 * GIB)).unwrap(), None);
    }

    fn found(enabled: &str, defrag: &str) -> SystemThp {
        SystemThp {
            enabled: Some(enabled.into()),
            defrag: Some(defrag.into()),
            khugepaged_defrag: Some("1".into()),
        }
    }

    #[test]
    fn tuner_follows_the_three_components_of_fig_3() {
        let limits = TunerLimits {
            min_available: 4 * GIB,
            max_direct_scan_per_s: 1000.0,
            max_khugepaged_cpu_percent: 10.0,
        };
        let inputs = |avail, scan, cpu| TunerInputs {
            mem_available: avail,
            direct_scan_per_s: scan,
            khugepaged_cpu_percent: cpu,
        };
        let set = |e: Option<&str>, d: Option<&str>, k: Option<&str>| ThpSettings {
            enabled: e.map(Into::into),
            defrag: d.map(Into::into),
            khugepaged_defrag: k.map(Into::into),
        };
        let calm = found("madvise", "madvise");
        // (inputs, found, decision)
        let fixtures = [
            // Plenty of memory, no scanning, idle khugepaged: the found "on" values.
            (
                inputs(8 * GIB, 0.0, Some(0.5)),
                &calm,
                set(Some("madvise"), Some("madvise"), Some("1")),
            ),
            // (1) Low memory: THP off, the finer knobs left alone.
            (
                inputs(4 * GIB - 1, 1e6, Some(90.0)),
                &calm,
                set(Some("never"), None, None),
            ),
            // (2) Heavy direct scanning: no direct compaction.
            (
                inputs(8 * GIB, 1000.5, Some(0.0)),
                &calm,
                set(Some("madvise"), Some("never"), Some("1")),
            ),
            // (3) khugepaged hogging a CPU: no background collapsing.
            (
                inputs(8 * GIB, 10.0, Some(10.5)),
                &calm,
                set(Some("madvise"), Some("madvise"), Some("0")),
            ),
            // Both, and no khugepaged found counts as idle.
            (
                inputs(4 * GIB, 5000.0, Some(50.0)),
                &calm,
                set(Some("madvise"), Some("never"), Some("0")),
            ),
            (
                inputs(4 * GIB, 0.0, None),
                &calm,
                set(Some("madvise"), Some("madvise"), Some("1")),
            ),
            // Found off: on means always (and defrag madvise).
            (
                inputs(8 * GIB, 0.0, None),
                &found("never", "never"),
                set(Some("always"), Some("madvise"), Some("1")),
            ),
            (
                inputs(8 * GIB, 0.0, None),
                &found("always", "defer"),
                set(Some("always"), Some("defer"), Some("1")),
            ),
        ];
        for (i, (inputs, found, expected)) in fixtures.iter().enumerate() {
            assert_eq!(
                &tuner_decision(inputs, &limits, found),
                expected,
                "fixture {i}"
            );
        }
    }

    #[test]
    fn tuner_reads_counters_and_writes_settings_in_a_fixture_tree() {
        let root = std::env::temp_dir().join(format!("concord-thp-tuner-{}", std::process::id()));
        let paths = TunerPaths {
            thp_dir: root.join("thp"),
            proc_dir: root.join("proc"),
        };
        fs::create_dir_all(paths.thp_dir.join("khugepaged")).unwrap();
        fs::create_dir_all(paths.proc_dir.join("77")).unwrap();
        fs::write(paths.proc_dir.join("meminfo"), "MemAvailable: 2048 kB\n").unwrap();
        fs::write(paths.proc_dir.join("vmstat"), "pgscan_direct 100\n").unwrap();
        fs::write(paths.proc_dir.join("77/comm"), "khugepaged\n").unwrap();
        let stat = "77 (khugepaged) S 2 0 0 0 -1 0 0 0 0 0 30 20 0 0 39 19 1 0 9 0 0 0 0 0 0 0 \
                    0 0 0 0 0 0 0 0 0 0 0 0 1 0 0 0";
        fs::write(paths.proc_dir.join("77/stat"), stat).unwrap();
        let before = TunerSample::read(&paths).unwrap();
        assert_eq!(before.mem_available, 2 << 20);
        assert_eq!(before.khugepaged_ticks, Some(50));
        let mut after = before;
        after.at = before.at + Duration::from_secs(2);
        after.pgscan_direct = 2100;
        after.khugepaged_ticks = Some(50 + clock_ticks_per_second());
        let inputs = after.inputs_since(&before);
        assert_eq!(inputs.direct_scan_per_s, 1000.0);
        assert_eq!(inputs.khugepaged_cpu_percent, Some(50.0));
        fs::write(paths.proc_dir.join("vmstat"), "pgscan_kswapd 1\n").unwrap();
        assert!(TunerSample::read(&paths).is_err());

        for (name, text) in [
            ("enabled", "always [madvise] never\n"),
            ("defrag", "always defer defer+madvise [madvise] never\n"),
            ("khugepaged/defrag", "1\n"),
        ] {
            fs::write(paths.thp_dir.join(name), text).unwrap();
        }
        assert!(thp_files_writable(&paths.thp_dir));
        assert!(!thp_files_writable(&root.join("nowhere")));
        let found = SystemThp::read_from(&paths.thp_dir);
        let off = ThpSettings {
            enabled: Some("never".into()),
            ..ThpSettings::default()
        };
        write_thp_settings(&paths.thp_dir, &off).unwrap();
        assert_eq!(
            SystemThp::read_from(&paths.thp_dir).enabled.as_deref(),
            Some("never")
        );
        assert_eq!(SystemThp::read_from(&paths.thp_dir).defrag, found.defrag);
        write_thp_settings(&paths.thp_dir, &ThpSettings::from(&found)).unwrap();
        assert_eq!(SystemThp::read_from(&paths.thp_dir), found);
        fs::remove_dir_all(&root).unwrap();
    }
}
