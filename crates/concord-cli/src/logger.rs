//! The CLI's logger: the library reports notices through the `log` facade and prints nothing
//! itself; this module shows them on stderr as `concord: <message>`, the form every other
//! message of the CLI has. Warnings and errors are shown by default; `CONCORD_LOG` (the
//! library's reserved log filter, `env_logger` syntax: `debug`, `concord=info,warn`, `off`)
//! chooses otherwise.

use std::io::Write as _;

/// The environment variable that holds the log filter.
pub const FILTER_VAR: &str = "CONCORD_LOG";

/// The filter when `CONCORD_LOG` is unset or empty.
const DEFAULT_FILTER: &str = "warn";

/// One log line as the CLI shows it: `concord: <message>`.
fn format_line(args: &std::fmt::Arguments<'_>) -> String {
    format!("concord: {args}")
}

/// Installs the logger for the whole process (once; later calls do nothing).
pub fn install() {
    let filter = std::env::var(FILTER_VAR)
        .ok()
        .filter(|f| !f.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_FILTER.to_string());
    let _ = env_logger::Builder::new()
        .parse_filters(&filter)
        .format(|out, record| writeln!(out, "{}", format_line(record.args())))
        .target(env_logger::Target::Stderr)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_look_like_every_other_message_of_the_cli() {
        let n = 3;
        assert_eq!(
            format_line(&format_args!("{n} notices")),
            "concord: 3 notices"
        );
    }
}
