//! The one way the CLI writes to its standard output and standard error. `print!` and
//! `eprint!` panic when the write fails (`concord run … | head -1`, `> /dev/full`,
//! `2> /dev/full`); these never do. Standard output goes through [`write_out`] (macros [`outln!`],
//! [`out!`]), which flushes and hands a failed write back as a [`StdoutError`]: the command
//! stops writing, finishes its other outputs on the way out, and `main` ends quietly with
//! status 141 for a closed pipe (128 + SIGPIPE, the status a shell shows for `cat` killed by
//! SIGPIPE; `cat` also says nothing), or with `concord: cannot write to standard output: …`
//! and status 1 for any other failure. Standard error goes through [`write_err`] ([`errln!`],
//! [`err!`]), which ignores a failed write: there is nowhere left to report it.

use std::fmt;
use std::io::{self, Write};

/// The exit status after standard output turned out to be a closed pipe.
pub const CLOSED_PIPE_STATUS: u8 = 128 + 13;

/// Standard output could not be written.
#[derive(Debug)]
pub struct StdoutError(io::Error);

impl StdoutError {
    /// Whether the reader of a pipe went away (`| head -1`, `| true`): not worth a message.
    pub fn is_closed_pipe(&self) -> bool {
        self.0.kind() == io::ErrorKind::BrokenPipe
    }
}

impl fmt::Display for StdoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot write to standard output: {}", self.0)
    }
}

impl std::error::Error for StdoutError {}

impl From<io::Error> for StdoutError {
    fn from(e: io::Error) -> Self {
        StdoutError(e)
    }
}

/// Writes `text` to standard output and flushes it, so that a failure shows now and not in
/// the flush at exit (which Rust ignores).
pub fn write_out(text: fmt::Arguments<'_>) -> Result<(), StdoutError> {
    write_and_flush(&mut io::stdout().lock(), text).map_err(StdoutError)
}

/// Prints clap's help, version or usage error where clap puts it; help and the version go to
/// standard output, checked as [`write_out`] is (clap's own failures on stderr are ignored).
pub fn print_clap(e: &clap::Error) -> Result<(), StdoutError> {
    let printed = e.print();
    if e.use_stderr() {
        return Ok(());
    }
    printed
        .and_then(|()| io::stdout().flush())
        .map_err(StdoutError)
}

/// Writes `text` to standard error, ignoring a failure.
pub fn write_err(text: fmt::Arguments<'_>) {
    let _ = write_and_flush(&mut io::stderr().lock(), text);
}

fn write_and_flush(to: &mut impl Write, text: fmt::Arguments<'_>) -> io::Result<()> {
    to.write_fmt(text)?;
    to.flush()
}

/// `print!` to standard output that returns `Result<(), StdoutError>` instead of panicking.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::console::write_out(format_args!($($arg)*))
    };
}

/// `println!` to standard output that returns `Result<(), StdoutError>` instead of panicking.
macro_rules! outln {
    () => {
        $crate::console::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::console::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `eprint!` that never panics.
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::console::write_err(format_args!($($arg)*))
    };
}

/// `eprintln!` that never panics.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::console::write_err(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {err, errln, out, outln};

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that fails like a file on a full disk or a pipe nobody reads.
    struct Failing(io::ErrorKind);

    impl Write for Failing {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(self.0))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_failed_write_is_an_error_not_a_panic() {
        let e = write_and_flush(&mut Failing(io::ErrorKind::StorageFull), format_args!("x"))
            .unwrap_err();
        let e = StdoutError(e);
        assert!(!e.is_closed_pipe());
        assert!(e
            .to_string()
            .starts_with("cannot write to standard output: "));
        let closed = write_and_flush(&mut Failing(io::ErrorKind::BrokenPipe), format_args!("x"));
        assert!(StdoutError(closed.unwrap_err()).is_closed_pipe());
    }
}
