//! Configuration errors, and how they name the key the user wrote.
//!
//! Every [`ConfigError`] names the key as the user spelled it where they spelled it (`--heap`,
//! `CONCORD_HEAP`, `heap in concord.toml`), the value, and what is allowed.

use std::fmt;
use std::path::PathBuf;

use super::Preset;

/// Where the value of a key came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A command-line flag, `--<key>`.
    Cli,
    /// An environment variable, `CONCORD_<KEY>`.
    Env,
    /// A key of a TOML configuration file.
    Toml {
        /// The file's name as given to the builder (a path, or any label for in-memory text).
        file: String,
        /// The key as written in the file (kebab or snake case).
        spelled: String,
    },
    /// Nobody set it: the default of this preset.
    Default(Preset),
    /// No source is known: the value was checked by [`super::GcConfig::validate`] on a config
    /// built in code.
    Config,
}

/// A configuration key together with where its value came from; displays as the user wrote it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigKey {
    /// The canonical key, kebab-case (`young-plab-size`), as in the option table.
    pub key: &'static str,
    /// Where the value came from.
    pub origin: Origin,
}

impl ConfigKey {
    /// The key `key` with its value from `origin`.
    pub fn new(key: &'static str, origin: Origin) -> ConfigKey {
        ConfigKey { key, origin }
    }
}

impl fmt::Display for ConfigKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Origin::Cli => write!(f, "--{}", self.key),
            Origin::Env => write!(f, "{}", super::options::env_name_of(self.key)),
            Origin::Toml { file, spelled } => write!(f, "{spelled} in {file}"),
            Origin::Default(preset) => write!(f, "{} (default of preset {preset})", self.key),
            Origin::Config => write!(f, "{}", self.key),
        }
    }
}

/// Why a configuration was rejected. The message names the key as written, the value and what
/// is allowed.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A value that is not allowed for its key on its own: not parseable, or out of range.
    /// Displays as `<key>: '<value>' <reason>`, e.g.
    /// `CONCORD_GC_THREADS: '0' is out of range (allowed: 1..=256)`.
    #[error("{key}: '{value}' {reason}")]
    InvalidValue {
        /// The key and where its value came from.
        key: ConfigKey,
        /// The value as written.
        value: String,
        /// What is wrong and what is allowed, phrased to follow the quoted value.
        reason: String,
    },
    /// A value that is fine on its own but not together with others (young vs heap, eden too
    /// small, ...). Displays as `<key>: <message>`, the message starting with the value, e.g.
    /// `--young: 200M must be smaller than the heap (64M) and leave at least 1M for the old
    /// generation`.
    #[error("{key}: {message}")]
    Inconsistent {
        /// The key to change and where its value came from.
        key: ConfigKey,
        /// The value, the conflict and what is allowed.
        message: String,
    },
    /// A key that no option has, in a TOML file or on the command line.
    #[error("unknown configuration key '{key}' {place} (known keys: {known})")]
    UnknownKey {
        /// The key as written.
        key: String,
        /// Where it was written: `in concord.toml`, `on the command line`.
        place: String,
        /// The known keys, comma-separated.
        known: String,
    },
    /// A `CONCORD_*` environment variable that is neither an option nor on the allowlist.
    #[error(
        "unknown environment variable '{name}': CONCORD_* variables configure Concord \
         (known: {known}; also allowed, not configuration: {allowed})"
    )]
    UnknownEnvVar {
        /// The variable's name.
        name: String,
        /// The option variables, comma-separated.
        known: String,
        /// The allowlisted non-configuration variables, comma-separated.
        allowed: String,
    },
    /// The same option twice in one TOML file (once kebab-case, once snake_case).
    #[error("{second}: the same option is already set as {first}")]
    DuplicateKey {
        /// The first spelling met.
        first: Box<ConfigKey>,
        /// The second spelling met.
        second: Box<ConfigKey>,
    },
    /// A TOML file that is not valid TOML.
    #[error("{location}: invalid TOML: {message}")]
    TomlSyntax {
        /// `file:line:column` of the error, or just the file if the parser gave no position.
        location: String,
        /// The parser's message.
        message: String,
    },
    /// A configuration file that cannot be read.
    #[error("cannot read configuration file {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl ConfigError {
    /// The key this error is about, if it is about one option's value.
    pub fn key(&self) -> Option<&ConfigKey> {
        match self {
            ConfigError::InvalidValue { key, .. } | ConfigError::Inconsistent { key, .. } => {
                Some(key)
            }
            ConfigError::DuplicateKey { second, .. } => Some(second),
            _ => None,
        }
    }
}
