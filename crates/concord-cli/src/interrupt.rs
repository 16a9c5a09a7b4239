//! SIGINT (Ctrl-C), SIGTERM and SIGHUP for commands that stop cleanly. The first signal is
//! noted and the command looks at it: `run` stops waiting for its workload and reports the run
//! so far, an experiment finishes its current run, co-running instances are stopped; the
//! command then exits with 128 + the signal's number (130 for SIGINT, 143 for SIGTERM). A
//! FIFO output that nobody opens or reads holds the stop at most [`OUTPUT_GRACE`]. A
//! second signal exits at once with 128 + its number, after removing the temporary files of
//! outputs not yet put in place and the directories registered with [`remove_on_quit`] (the
//! stall harnesses', and every [`TempDir`]: `sim validate`'s and `vs-hotspot`'s work
//! directories), so none is left behind. Messages go above the progress bar when one is on
//! screen.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, Once};
use std::time::{Duration, Instant};

use crate::console::errln;
use indicatif::ProgressBar;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The first signal's number, 0 before it.
static FIRST: AtomicI32 = AtomicI32::new(0);
/// Set with `FIRST`, for loops that only ask whether to stop.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The progress bar on screen, if any, so that the handler can print above it.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);
/// Wakes [`wait_until`] when a signal comes or the awaited work is done.
static WAKE: Mutex<()> = Mutex::new(());
static WOKEN: Condvar = Condvar::new();
static INSTALL: Once = Once::new();
/// Directories a harness made for the run (a FIFO's), removed before a second signal quits.
static ON_QUIT: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Poisoning is ignored: the guarded values are replaced whole.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The flag the first signal sets.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// Whether a signal came.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The first signal, if one came.
pub fn signal() -> Option<i32> {
    match FIRST.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// The exit status of a command the first signal stopped: 128 + its number (130, as for
/// Ctrl-C, when the stop came from elsewhere).
pub fn exit_code() -> ExitCode {
    let status = 128 + signal().unwrap_or(SIGINT);
    ExitCode::from(u8::try_from(status).unwrap_or(130))
}

/// `SIGTERM`, `SIGINT`, `SIGHUP`.
pub fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

/// Shows messages above `bar` while it is on screen (`None`: plain stderr again).
pub fn set_bar(bar: Option<ProgressBar>) {
    *lock(&BAR) = bar;
}

/// Installs the handler; the first signal prints `first` (what happens now). Later calls keep
/// the first handler.
pub fn install(first: &'static str) {
    INSTALL.call_once(|| {
        let started = Signals::new([SIGINT, SIGTERM, SIGHUP]).and_then(|mut signals| {
            std::thread::Builder::new()
                .name("concord-signals".into())
                .spawn(move || signals.forever().for_each(|sig| receive(sig, first)))
        });
        if let Err(e) = started {
            log::warn!("cannot catch signals ({e}); Ctrl-C and SIGTERM will stop at once");
        }
    });
}

/// Acts as if signal `sig` had come (a co-running instance whose parent is gone); nothing
/// when a signal came already.
pub fn raise(sig: i32) {
    note(sig);
}

/// Waits until `done()` holds or a signal comes; whoever makes `done()` true calls [`wake`].
pub fn wait_until(done: impl Fn() -> bool) {
    let mut guard = lock(&WAKE);
    while !done() && !interrupted() {
        guard = WOKEN.wait(guard).unwrap_or_else(|p| p.into_inner());
    }
}

/// Sleeps for `period`, or less if a signal comes; whether one came.
pub fn sleep(period: Duration) -> bool {
    let deadline = Instant::now() + period;
    let mut guard = lock(&WAKE);
    while !interrupted() {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        guard = WOKEN
            .wait_timeout(guard, deadline - now)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    interrupted()
}

/// Wakes [`wait_until`] to look again.
pub fn wake() {
    let _guard = lock(&WAKE);
    WOKEN.notify_all();
}

/// Removes `dir` (and what it holds) if a second signal quits at once.
pub fn remove_on_quit(dir: &Path) {
    lock(&ON_QUIT).push(dir.to_path_buf());
}

/// `dir` is gone or no longer needs removing.
pub fn forget_on_quit(dir: &Path) {
    lock(&ON_QUIT).retain(|d| d != dir);
}

/// A temporary directory of the command's own: removed when dropped, which is when the command
/// returns (after a first signal too), and by a second signal that quits at once
/// ([`remove_on_quit`]).
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `dir` (and its parents) and registers it for removal.
    pub fn create(dir: PathBuf) -> std::io::Result<TempDir> {
        // Registered first: a second signal while it is being made removes it as well.
        remove_on_quit(&dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            forget_on_quit(&dir);
            return Err(e);
        }
        Ok(TempDir(dir))
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        remove_dir(&self.0);
        forget_on_quit(&self.0);
    }
}

/// Removes `dir` and what it holds, again if a child process put a file in it meanwhile (a run
/// that ends as the directory is removed renames its output into it); errors are ignored.
fn remove_dir(dir: &Path) {
    for _ in 0..3 {
        if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
            return;
        }
    }
}

/// How long outputs written in place (a FIFO) may still wait for their reader after the first
/// signal, before their open or write gives up and they are reported as incomplete.
pub const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// Notes `sig` as the first signal; false when one came already.
fn note(sig: i32) -> bool {
    let first = FIRST
        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    if first {
        INTERRUPTED.store(true, Ordering::SeqCst);
        // A FIFO nobody opens or reads must not hold the stop for ever.
        concord::os::fs::abandon_blocked_writes(OUTPUT_GRACE);
        wake();
    }
    first
}

/// The signal thread's reaction to `sig`.
fn receive(sig: i32, first: &str) {
    if !note(sig) {
        // Outputs not yet in place are abandoned; their temporary files must not stay.
        concord::os::fs::remove_temporary_files();
        for dir in lock(&ON_QUIT).drain(..) {
            remove_dir(&dir);
        }
        errln!("\nconcord: {} again: quitting now", name(sig));
        std::process::exit(128 + sig);
    }
    let again = if sig == SIGINT {
        "press Ctrl-C again to quit at once"
    } else {
        "a second signal quits at once"
    };
    let message = format!("concord: interrupted by {}: {first} ({again})", name(sig));
    match lock(&BAR).clone() {
        Some(bar) => bar.println(message),
        None => errln!("\n{message}"),
    }
}
