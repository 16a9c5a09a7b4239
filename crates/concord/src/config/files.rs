//! The files a command reads and writes, and the rule between them: no output may be the file
//! of an input (writing it would replace what the command reads: a configuration file, the
//! simulator's costs, a trace), and no two outputs may be one file (they would be written over
//! each other).
//!
//! Files are compared as files, not as names ([`same_file`]): the same (device, inode) where
//! both exist — symbolic and hard links included — else the same canonical name, through
//! dangling links too. An existing input that is not a regular file or a directory (a pipe, a
//! device) is read before any output is opened and cannot be replaced by one, so it is not
//! protected.
//!
//! A command lists every file it reads and every file it will write, derived names included
//! (the `PATH.N` of co-running instances), and calls [`check_files`] once, before it opens any
//! output.

use std::path::{Path, PathBuf};

use super::validate::same_file;
use super::GcConfig;
use crate::os::policy::MutatorSched;

/// A file a command reads or writes, with the flag, key or variable that gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedFile {
    /// Who gave the file, as the user wrote it, and what derived it if anything: `--config`,
    /// `gc-log in c.toml`, `CONCORD_GC_TRACE`, `--gc-log of co-running instance 2`.
    pub name: String,
    /// The file.
    pub path: PathBuf,
    /// The value as the user wrote it, for messages: the path, or `profile:PATH`.
    pub shown: String,
}

impl NamedFile {
    /// The file `path`, given by `name`, shown as its path.
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>) -> NamedFile {
        let path = path.into();
        NamedFile {
            name: name.into(),
            shown: path.display().to_string(),
            path,
        }
    }

    /// The same file, its value shown as `shown` (`profile:PATH`).
    pub fn shown_as(mut self, shown: impl Into<String>) -> NamedFile {
        self.shown = shown.into();
        self
    }
}

impl GcConfig {
    /// The files a heap of this configuration writes, each with its key and its value as
    /// written: the GC log, the records, the GC trace and the mutator scheduling profile (which
    /// is also read, when it exists).
    pub(super) fn output_files(&self) -> Vec<(&'static str, &Path, String)> {
        let profile = match &self.mutator_sched {
            MutatorSched::Profile(path) => Some(path.as_path()),
            _ => None,
        };
        [
            ("gc-log", self.gc_log.as_deref()),
            ("gc-records", self.gc_records.as_deref()),
            ("gc-trace", self.gc_trace.as_deref()),
            ("mutator-sched", profile),
        ]
        .into_iter()
        .filter_map(|(key, path)| {
            let path = path?;
            let shown = match key {
                "mutator-sched" => format!("profile:{}", path.display()),
                _ => path.display().to_string(),
            };
            Some((key, path, shown))
        })
        .collect()
    }

    /// The files a heap of this configuration writes ([`GcConfig::output_files`]), each named
    /// by `name_of` its key (where its value came from, and what derived it): the outputs to
    /// give [`check_files`].
    pub fn outputs(&self, name_of: impl Fn(&'static str) -> String) -> Vec<NamedFile> {
        self.output_files()
            .into_iter()
            .map(|(key, path, shown)| NamedFile::new(name_of(key), path).shown_as(shown))
            .collect()
    }
}

/// Two files of a command that are one file. Displays naming both, where each came from and
/// what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FileClash {
    /// An output that is the file of an input.
    #[error(
        "{}: '{}' names the same file as {} ('{}'), which this command reads: writing the output \
         would replace it (allowed: another file)",
        output.name, output.shown, input.name, input.shown
    )]
    ReplacesInput {
        /// The output.
        output: Box<NamedFile>,
        /// The input it would replace.
        input: Box<NamedFile>,
    },
    /// Two outputs that are one file.
    #[error(
        "{}: '{}' names the same file as {} ('{}'); give each output a file of its own",
        later.name, later.shown, earlier.name, earlier.shown
    )]
    SharedOutput {
        /// The output listed later.
        later: Box<NamedFile>,
        /// The output listed first.
        earlier: Box<NamedFile>,
    },
}

/// Checks the files of a command before it opens any output: no output is the file of an
/// input, and no two outputs are one file. The first clash found is the error (outputs in
/// their order, each against every input, then each against the outputs before it).
pub fn check_files(inputs: &[NamedFile], outputs: &[NamedFile]) -> Result<(), FileClash> {
    for output in outputs {
        if let Some(input) = inputs.iter().find(|i| replaces(&output.path, &i.path)) {
            return Err(FileClash::ReplacesInput {
                output: Box::new(output.clone()),
                input: Box::new(input.clone()),
            });
        }
    }
    match first_shared(outputs.iter().map(|o| o.path.as_path())) {
        Some((earlier, later)) => Err(FileClash::SharedOutput {
            later: Box::new(outputs[later].clone()),
            earlier: Box::new(outputs[earlier].clone()),
        }),
        None => Ok(()),
    }
}

/// The first pair of `paths` that are one file, as (earlier index, later index).
pub(super) fn first_shared<'a>(
    paths: impl IntoIterator<Item = &'a Path>,
) -> Option<(usize, usize)> {
    let paths: Vec<&Path> = paths.into_iter().collect();
    paths.iter().enumerate().find_map(|(later, path)| {
        paths[..later]
            .iter()
            .position(|earlier| same_file(earlier, path))
            .map(|earlier| (earlier, later))
    })
}

/// Whether writing `output` would replace the input `input`: they are one file, and `input`
/// is not an existing pipe or device (read before outputs are opened, never replaced).
fn replaces(output: &Path, input: &Path) -> bool {
    let not_replaceable = std::fs::metadata(input).is_ok_and(|m| !m.is_file() && !m.is_dir());
    !not_replaceable && same_file(output, input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_may_not_be_an_input_by_name_link_or_inode() {
        let dir = std::env::temp_dir().join(format!("concord-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let config = dir.join("c.toml");
        std::fs::write(&config, "heap = \"64m\"\n").unwrap();
        std::os::unix::fs::symlink(&config, dir.join("link")).unwrap();
        std::fs::hard_link(&config, dir.join("hard")).unwrap();
        let inputs = [
            NamedFile::new("--costs", dir.join("missing.json")),
            NamedFile::new("--config", &config),
        ];
        for name in ["c.toml", "sub/../c.toml", "./link", "hard"] {
            let output = NamedFile::new("gc-log in c.toml", dir.join(name));
            let err = check_files(&inputs, &[output]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!(
                    "gc-log in c.toml: '{}' names the same file as --config ('{}'), which this \
                     command reads: writing the output would replace it (allowed: another file)",
                    dir.join(name).display(),
                    config.display()
                )
            );
        }
        // An input that does not exist yet is compared by name.
        let err = check_files(
            &inputs,
            &[NamedFile::new("--gc-records", dir.join("missing.json"))],
        )
        .unwrap_err();
        assert!(matches!(err, FileClash::ReplacesInput { .. }), "{err}");
        // Other files are fine; a pipe or a device read as an input is not replaced.
        let fine = [
            NamedFile::new("--gc-log", dir.join("gc.log")),
            NamedFile::new("--gc-records", dir.join("sub/gc.jsonl")),
        ];
        check_files(&inputs, &fine).unwrap();
        let null = [NamedFile::new("--config", "/dev/null")];
        check_files(&null, &[NamedFile::new("--gc-log", "/dev/null")]).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn two_outputs_may_not_be_one_file() {
        let outputs = [
            NamedFile::new("--gc-log of co-running instance 1", "/tmp/x.1"),
            NamedFile::new("--mutator-sched", "/tmp/./x.1").shown_as("profile:/tmp/./x.1"),
        ];
        assert_eq!(
            check_files(&[], &outputs).unwrap_err().to_string(),
            "--mutator-sched: 'profile:/tmp/./x.1' names the same file as --gc-log of \
             co-running instance 1 ('/tmp/x.1'); give each output a file of its own"
        );
        assert_eq!(first_shared([Path::new("a"), Path::new("b")]), None);
        assert_eq!(
            first_shared([Path::new("a"), Path::new("b"), Path::new("./b")]),
            Some((1, 2))
        );
    }
}
