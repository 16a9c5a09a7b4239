//! Ctrl-C (SIGINT), SIGTERM and SIGHUP for commands that stop cleanly: the first signal sets
//! a flag that the command looks at (an experiment finishes its current run, co-running
//! instances are stopped), a second one exits at once with status 130. Messages go above the
//! progress bar when one is on screen.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use indicatif::ProgressBar;

use crate::console::errln;

/// Set by the first signal.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// The progress bar on screen, if any, so that the handler can print above it.
static BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// The flag the first signal sets.
pub fn flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// Whether a signal came.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Shows messages above `bar` while it is on screen (`None`: plain stderr again).
pub fn set_bar(bar: Option<ProgressBar>) {
    if let Ok(mut slot) = BAR.lock() {
        *slot = bar;
    }
}

/// Installs the handler; the first signal prints `first` (what happens now). A process can
/// install it once; a second call keeps the first handler.
pub fn install(first: &'static str) {
    let installed = ctrlc::set_handler(move || {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            errln!("\nconcord: interrupted again: quitting now");
            std::process::exit(130);
        }
        let msg = format!("concord: interrupted: {first} (press Ctrl-C again to quit at once)");
        let bar = BAR.lock().ok().and_then(|b| b.clone());
        match bar {
            Some(bar) => bar.println(msg),
            None => errln!("\n{msg}"),
        }
    });
    match installed {
        Ok(()) | Err(ctrlc::Error::MultipleHandlers) => {}
        Err(e) => log::warn!("cannot catch Ctrl-C ({e}); Ctrl-C will stop at once"),
    }
}
