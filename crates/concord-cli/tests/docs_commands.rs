//! The commands of the README and of the guide (`docs/*.md`) are run, so they cannot go stale,
//! and every relative link of those pages resolves.
//!
//! Every command of a fenced `sh` block runs with the `concord` binary the tests built (a
//! leading `concord`, `target/release/concord` or `cargo run --release -p concord-cli --` all
//! mean it), through `sh -c` in a fresh directory per block, where `crates/` and `bench/` lead
//! to the repository's. The marker in an HTML comment just before a block says how:
//!
//! - none: run for real, exit status 0;
//! - `<!-- doc-test: exit N -->`: run for real, exit status N;
//! - `<!-- doc-test: check-args -->`: for commands that take minutes or need a JVM: run with
//!   `CONCORD_CHECK_ARGS=1`, so `concord` checks its arguments (and for `run` and the
//!   experiment commands, builds and validates the whole configuration) and exits 0 saying
//!   `concord: arguments checked` instead of working; a renamed or removed subcommand or flag
//!   fails;
//! - `<!-- doc-test: skip REASON -->`: not run (commands of `java`, scripts, other crates).
//!
//! `cargo` commands are listed, not run (the test suite itself, benchmarks). A command that is
//! neither `concord` nor `cargo` outside a skipped block fails the test, so nothing is left
//! out unseen; what was run, checked and skipped is printed.

mod common;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long one command may take before it counts as hung: generous, since the longest real
/// command takes a few seconds.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(180);

/// What `concord` prints on stderr when `CONCORD_CHECK_ARGS` stopped it before any work.
const CHECKED: &str = "concord: arguments checked";

/// The spellings of the `concord` binary in the pages, longest first.
const CONCORD_SPELLINGS: [&str; 3] = [
    "cargo run --release -p concord-cli --",
    "target/release/concord",
    "concord",
];

/// The repository's root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The pages whose commands and links are checked: the README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// A page's path relative to the repository, for messages.
fn shown(page: &Path) -> String {
    page.strip_prefix(repo())
        .unwrap_or(page)
        .display()
        .to_string()
}

/// How a block's commands are treated.
#[derive(Debug, Clone, PartialEq)]
enum Mode {
    /// Run for real; every command must end with this exit status.
    Run(i32),
    /// Run with `CONCORD_CHECK_ARGS=1`.
    CheckArgs,
    /// Not run, for this reason.
    Skip(String),
}

/// The mode a `<!-- doc-test: … -->` marker line gives, `None` for any other line; a marker
/// this test does not know is an error, so a typo cannot pass unseen.
fn marker(line: &str) -> Option<Result<Mode, String>> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim()
        .strip_prefix("doc-test:")?
        .trim();
    Some(if inner == "check-args" {
        Ok(Mode::CheckArgs)
    } else if let Some(status) = inner.strip_prefix("exit ") {
        status
            .trim()
            .parse()
            .map(Mode::Run)
            .map_err(|_| format!("'{inner}': the exit status is not a number"))
    } else if let Some(reason) = inner.strip_prefix("skip ") {
        Ok(Mode::Skip(reason.trim().to_string()))
    } else {
        Err(format!(
            "unknown marker '{inner}' (allowed: check-args, exit N, skip REASON)"
        ))
    })
}

/// One command of a page: where it is, its text (continuation lines joined), its block (a
/// number counting the `sh` blocks of a page) and the block's mode.
#[derive(Debug, Clone)]
struct DocCommand {
    place: String,
    text: String,
    block: usize,
    mode: Mode,
}

/// The commands of the `sh` blocks of `text` (the page `name`): lines joined where one ends in
/// `\`, without `$ ` prompts, blank lines and comment lines.
fn commands_of(name: &str, text: &str) -> Result<Vec<DocCommand>, String> {
    let mut commands = Vec::new();
    let mut mode = Mode::Run(0);
    let mut block = 0;
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if let Some(m) = marker(line) {
            mode = m.map_err(|e| format!("{name}:{}: {e}", n + 1))?;
            continue;
        }
        let Some(fence) = line.trim_start().strip_prefix("```") else {
            if !line.trim().is_empty() {
                mode = Mode::Run(0); // A marker applies to the block right after it only.
            }
            continue;
        };
        let is_sh = fence.trim() == "sh";
        block += 1;
        let mut pending = String::new();
        let mut start = 0;
        for (m, line) in lines.by_ref() {
            if line.trim_start().starts_with("```") {
                break;
            }
            if !is_sh {
                continue;
            }
            let line = line.trim();
            let line = line.strip_prefix("$ ").unwrap_or(line);
            if pending.is_empty() {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                start = m + 1;
            }
            match line.strip_suffix('\\') {
                Some(head) => {
                    pending.push_str(head.trim_end());
                    pending.push(' ');
                }
                None => {
                    pending.push_str(line);
                    commands.push(DocCommand {
                        place: format!("{name}:{start}"),
                        text: std::mem::take(&mut pending),
                        block,
                        mode: mode.clone(),
                    });
                }
            }
        }
        if !pending.is_empty() {
            return Err(format!(
                "{name}:{start}: a block ends in a '\\' continuation"
            ));
        }
        mode = Mode::Run(0);
    }
    Ok(commands)
}

/// `text` with every spelling of the `concord` binary as a plain `concord`.
fn as_concord(text: &str) -> String {
    CONCORD_SPELLINGS[..2]
        .iter()
        .fold(text.to_string(), |text, spelling| {
            text.replace(spelling, "concord")
        })
}

/// Whether `text` runs a `concord` command (anywhere: in a pipeline, a loop, after `&&`).
fn runs_concord(text: &str) -> bool {
    text.split(|c: char| c.is_whitespace() || ";|&()".contains(c))
        .any(|word| word == CONCORD_SPELLINGS[2])
}

/// Whether `text` is a cargo command (possibly after a `cd DIR &&`).
fn is_cargo(text: &str) -> bool {
    text.split("&&")
        .any(|part| part.trim().starts_with("cargo "))
}

/// A fresh directory for a block, with `crates` and `bench` leading to the repository's, and a
/// `bin/concord` leading to the binary under test.
fn block_dir(index: usize) -> PathBuf {
    let dir = common::scratch(&format!("docs_commands/{index}"));
    for shared in ["crates", "bench"] {
        std::os::unix::fs::symlink(repo().join(shared), dir.join(shared)).unwrap();
    }
    std::fs::create_dir(dir.join("bin")).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_concord"), dir.join("bin/concord")).unwrap();
    dir
}

/// What running one command gave.
struct Ran {
    status: Option<ExitStatus>,
    stdout: String,
    stderr: String,
    took: Duration,
}

/// Runs `text` with `sh -c` in `dir` (with `dir/bin` first on `PATH`), its own process group
/// killed if it takes longer than [`COMMAND_TIMEOUT`].
fn run_in(dir: &Path, text: &str, check_args: bool) -> Ran {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut command = Command::new("sh");
    command
        .args(["-c", text])
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(home) = std::env::var_os("HOME") {
        command.env("HOME", home);
    }
    if check_args {
        command.env("CONCORD_CHECK_ARGS", "1");
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("sh runs");
    // Read the pipes on threads, so a command that prints a lot cannot block on them.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || read_all(&mut stdout));
    let err = std::thread::spawn(move || read_all(&mut stderr));
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for sh") {
            break Some(status);
        }
        if started.elapsed() > COMMAND_TIMEOUT {
            let group = i32::try_from(child.id()).expect("a pid");
            // SAFETY: kill(2) with a negative pid signals the process group the child leads;
            // it touches no memory of ours.
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
        took: started.elapsed(),
    }
}

/// Everything `from` gives until its end, as text.
fn read_all(from: &mut impl std::io::Read) -> String {
    let mut bytes = Vec::new();
    let _ = from.read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The last lines of `text`, for a failure message.
fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(15)..].join("\n")
}

#[test]
fn the_commands_of_the_readme_and_the_guide_run() {
    let mut commands = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        commands.extend(commands_of(&shown(&page), &text).unwrap_or_else(|e| panic!("{e}")));
    }
    let mut report = String::new();
    let mut failures = Vec::new();
    let (mut ran, mut checked) = (0, 0);
    let mut skipped = Vec::new();
    let mut cargo = Vec::new();
    // One fresh directory per block: a block's commands share their files.
    let mut block = None;
    let mut dir = PathBuf::new();
    for (index, command) in commands.iter().enumerate() {
        if let Mode::Skip(reason) = &command.mode {
            skipped.push(format!("{}: {} ({reason})", command.place, command.text));
            continue;
        }
        let text = as_concord(&command.text);
        if is_cargo(&text) {
            cargo.push(format!("{}: {}", command.place, command.text));
            continue;
        }
        if !runs_concord(&text) {
            failures.push(format!(
                "{}: `{}` runs no concord command: mark its block \
                 `<!-- doc-test: skip REASON -->`",
                command.place, command.text
            ));
            continue;
        }
        let this_block = (command.place.split(':').next(), command.block);
        if block != Some(this_block) {
            dir = block_dir(index);
            block = Some(this_block);
        }
        let check_args = command.mode == Mode::CheckArgs;
        let result = run_in(&dir, &text, check_args);
        let expected = match command.mode {
            Mode::Run(status) => status,
            _ => 0,
        };
        let how = if check_args { "checked" } else { "ran" };
        let _ = writeln!(
            report,
            "{how:>7} {:>6.1}s  {}: {}",
            result.took.as_secs_f64(),
            command.place,
            command.text
        );
        let problem = match result.status {
            None => Some(format!("still running after {COMMAND_TIMEOUT:?}; killed")),
            Some(status) if status.code() != Some(expected) => Some(format!(
                "ended with {}, expected exit status {expected}",
                status
                    .code()
                    .map_or_else(|| status.to_string(), |c| format!("exit status {c}"))
            )),
            Some(_) if check_args && !result.stderr.contains(CHECKED) => Some(format!(
                "exit status 0, but it did not say '{CHECKED}': did it run for real?"
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "{}: `{}`: {problem}\n--- stdout (end)\n{}\n--- stderr (end)\n{}",
                command.place,
                command.text,
                tail(&result.stdout),
                tail(&result.stderr)
            ));
        }
        if check_args {
            checked += 1;
        } else {
            ran += 1;
        }
    }
    println!("{report}");
    println!("not run by this test (cargo commands: the test suite itself, benchmarks):");
    for c in &cargo {
        println!("  {c}");
    }
    println!("skipped, with the page's reason:");
    for s in &skipped {
        println!("  {s}");
    }
    println!(
        "{ran} commands ran, {checked} had their arguments checked, {} skipped, {} cargo \
         commands not run",
        skipped.len(),
        cargo.len()
    );
    assert!(
        ran > 0 && checked > 0,
        "no command found to run or to check"
    );
    assert!(
        failures.is_empty(),
        "{} documented commands failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn the_readme_test_command_is_what_ci_runs() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let commands = commands_of("README.md", &readme).unwrap();
    let test = commands
        .iter()
        .find(|c| c.text.starts_with("cargo test"))
        .expect("the README gives the command that runs the tests");
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    // `.ci/run` may set environment variables for it, or `exec` it.
    let runs_it = |line: &str| {
        let words: Vec<&str> = line
            .split_whitespace()
            .skip_while(|w| w.contains('=') || *w == "exec")
            .collect();
        words.join(" ") == test.text
    };
    assert!(
        ci.lines().any(runs_it),
        "`.ci/run` does not run the README's `{}`",
        test.text
    );
}

/// The lines of a markdown text outside its fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_code = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            return false;
        }
        !in_code
    })
}

/// The GitHub anchors of the headings of a markdown text (outside code blocks).
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for heading in prose_lines(text).filter_map(|line| line.strip_prefix('#')) {
        let title = heading.trim_start_matches('#').trim();
        let base: String = title
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        // A repeated heading gets -1, -2, … as on GitHub.
        let mut anchor = base.clone();
        let mut n = 0;
        while !anchors.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
    }
    anchors
}

/// The targets of the inline links and images of a markdown text, outside code blocks and
/// code spans.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        // Drop code spans, whose brackets are not links.
        let prose: String = line
            .split('`')
            .enumerate()
            .filter(|(i, _)| i % 2 == 0)
            .map(|(_, s)| s)
            .collect::<Vec<_>>()
            .join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    targets
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((path, anchor)) => (path, Some(anchor)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !file.exists() {
                broken.push(format!("{}: ({target}): no such file", shown(&page)));
                continue;
            }
            if let Some(anchor) = anchor {
                let linked = std::fs::read_to_string(&file).unwrap_or_default();
                if !anchors(&linked).contains(anchor) {
                    broken.push(format!(
                        "{}: ({target}): {} has no heading with anchor #{anchor}",
                        shown(&page),
                        shown(&file)
                    ));
                }
            }
        }
    }
    println!("{checked} relative links checked");
    assert!(checked > 0, "no relative link found");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn markers_and_continuations_are_read_as_the_guide_says() {
    let page = "text\n\n<!-- doc-test: exit 2 -->\n```sh\n$ concord run x \\\n    --heap 1q  # bad\n# a comment\n```\n\n```sh\nconcord run y\n```\n\n```text\nconcord not a command\n```\n";
    let commands = commands_of("p.md", page).unwrap();
    let seen: Vec<(&str, usize, &Mode, &str)> = commands
        .iter()
        .map(|c| (c.place.as_str(), c.block, &c.mode, c.text.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            ("p.md:5", 1, &Mode::Run(2), "concord run x --heap 1q  # bad"),
            ("p.md:11", 2, &Mode::Run(0), "concord run y"),
        ]
    );
    assert!(commands_of(
        "p.md",
        "<!-- doc-test: sometimes -->\n```sh\nconcord\n```\n"
    )
    .is_err());
    assert_eq!(
        as_concord("cargo run --release -p concord-cli -- compare"),
        "concord compare"
    );
    let looped = as_concord("for s in 1 2; do target/release/concord run x; done");
    assert_eq!(looped, "for s in 1 2; do concord run x; done");
    assert!(runs_concord(&looped) && runs_concord("A=1 concord run x | head -1"));
    assert!(!runs_concord("java -jar concord.jar"));
    assert!(is_cargo(
        "cd bench/rust-gc-crates && cargo run --release -- 18"
    ));
    assert!(!is_cargo("concord compare"));
    let anchors = anchors("# A\n## `concord vs-hotspot`: beside HotSpot\n```\n# not\n```\n## A\n");
    assert_eq!(
        anchors.into_iter().collect::<Vec<_>>(),
        ["a", "a-1", "concord-vs-hotspot-beside-hotspot"]
    );
}

#[test]
fn checking_arguments_validates_the_configuration_and_starts_nothing() {
    let checked = |args: &[&str]| {
        common::command(args)
            .env("CONCORD_CHECK_ARGS", "1")
            .output()
            .expect("the concord binary runs")
    };
    // Bad values are still refused, including those only building the configuration finds.
    for bad in [
        &["run", "binary-trees", "--heap", "12q"][..],
        &[
            "run",
            "gcbench",
            "--numa",
            "fragmented",
            "--numa-topology",
            "0/0",
        ],
        &["compare", "gcbench", "--preset", "fast"],
        &["ablation", "gcbench", "--only", "+faster"],
        &["jvm", "bench", "--no-such-flag"],
    ] {
        let out = checked(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
    }
    // Good ones stop before any work: no summary, no results directory.
    let results = common::scratch("docs_commands_check").join("results");
    let out_dir = results.to_str().unwrap();
    for good in [
        &["run", "binary-trees", "16", "--json"][..],
        &["compare", "gcbench", "--out", out_dir],
        &["jvm", "attach", "4242"],
    ] {
        let out = checked(good);
        assert_eq!(out.status.code(), Some(0), "{good:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{good:?} printed {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(CHECKED),
            "{out:?}"
        );
    }
    assert!(!results.exists(), "compare created its results directory");
}
