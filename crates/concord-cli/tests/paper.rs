//! `concord paper`: the catalogue's JSON has the interface's fields and statuses, every entry
//! that has a command validates it (under `CONCORD_CHECK_ARGS=1`, through `concord paper ID`),
//! and refusals (a `cannot` entry, an unknown id, `--repeat` for `run`) exit 2 before any work.

mod common;

use common::{command, concord, read_json, scratch, stdout_json, text};
use serde_json::Value;

const STATUSES: [&str; 4] = ["reproduced", "partial", "needs-cpus", "cannot"];

fn catalogue() -> Vec<Value> {
    let out = concord(&["paper", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    stdout_json(&out).as_array().expect("a JSON array").clone()
}

fn field<'a>(entry: &'a Value, key: &str) -> &'a Value {
    entry
        .get(key)
        .unwrap_or_else(|| panic!("{entry} has no {key}"))
}

#[test]
fn the_json_has_every_field_and_only_the_allowed_statuses() {
    let entries = catalogue();
    assert!(entries.len() >= 45, "{} entries", entries.len());
    let mut ids = std::collections::HashSet::new();
    for entry in &entries {
        for key in ["id", "paper", "title", "status", "reason"] {
            assert!(field(entry, key).is_string(), "{entry}: {key}");
        }
        let id = field(entry, "id").as_str().unwrap();
        assert!(ids.insert(id.to_owned()), "{id} twice");
        assert!(
            id.starts_with(field(entry, "paper").as_str().unwrap()),
            "{id}"
        );
        let status = field(entry, "status").as_str().unwrap();
        assert!(STATUSES.contains(&status), "{id}: {status}");
        for key in ["command", "quick_command"] {
            let command = field(entry, key);
            if status == "cannot" {
                assert!(command.is_null(), "{id}: {key}");
            } else {
                assert!(
                    command.as_str().unwrap().starts_with("concord "),
                    "{id}: {key}"
                );
            }
        }
        if status != "reproduced" {
            assert!(
                !field(entry, "reason").as_str().unwrap().is_empty(),
                "{id} says no why"
            );
        }
    }
    for paper in ["000", "001", "002", "003", "004"] {
        assert!(
            ids.iter().any(|id| id.starts_with(paper)),
            "no entry of {paper}"
        );
    }
}

#[test]
fn every_runnable_entry_validates_its_command() {
    for entry in catalogue() {
        if field(&entry, "status") == "cannot" {
            continue;
        }
        let id = field(&entry, "id").as_str().unwrap();
        let out = command(&["paper", id])
            .env("CONCORD_CHECK_ARGS", "1")
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert!(out.status.success(), "{id}: {stderr}");
        assert!(
            stderr.contains("arguments checked"),
            "{id} did not reach the check: {stderr}"
        );
    }
}

#[test]
fn repeat_and_out_reach_the_entry_command() {
    let out = command(&["paper", "000-fig9", "--repeat", "2", "--out", "somewhere"])
        .env("CONCORD_CHECK_ARGS", "1")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("--repeat 2 --out somewhere"), "{stderr}");
}

#[test]
fn refusals_exit_2_with_the_reason() {
    let cannot = concord(&["paper", "000-fig16"]);
    assert_eq!(cannot.status.code(), Some(2));
    assert!(
        text(&cannot.stderr).contains("SMT"),
        "{}",
        text(&cannot.stderr)
    );

    let unknown = concord(&["paper", "000-fig99"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("known: 000-fig1,"),
        "{}",
        text(&unknown.stderr)
    );

    let run_with_repeat = concord(&["paper", "001-table2", "--repeat", "2"]);
    assert_eq!(run_with_repeat.status.code(), Some(2));
    assert!(text(&run_with_repeat.stderr).contains("takes neither --repeat nor --out"));
}

#[test]
fn the_list_has_one_line_per_entry() {
    let out = concord(&["paper"]);
    assert!(out.status.success());
    let listing = text(&out.stdout);
    for entry in catalogue() {
        let id = field(&entry, "id").as_str().unwrap();
        let status = field(&entry, "status").as_str().unwrap();
        assert!(
            listing
                .lines()
                .any(|l| l.starts_with(id) && l.contains(status)),
            "{id} missing from the list"
        );
    }
}

/// An entry's results directory: `experiment.json` names the entry, every run finished, and
/// the report was written.
fn check_entry_results(id: &str, dir: &std::path::Path) -> Value {
    let experiment = read_json(&dir.join("experiment.json"));
    assert_eq!(experiment["paper"]["id"], id, "{id}: {experiment}");
    assert_eq!(experiment["complete"], true, "{id}");
    let runs = experiment["runs"].as_array().expect("runs");
    assert!(!runs.is_empty(), "{id}: no runs");
    assert!(dir.join("report.html").is_file(), "{id}: no report.html");
    experiment
}

#[test]
fn every_runnable_entry_runs_at_its_small_size() {
    let root = scratch("paper-every-entry");
    let started = std::time::Instant::now();
    let mut ran = Vec::new();
    for entry in catalogue() {
        let Some(quick) = field(&entry, "quick_command").as_str() else {
            continue;
        };
        let id = field(&entry, "id").as_str().unwrap();
        let writes_results = !quick.starts_with("concord run ");
        let out = root.join(id);
        let mut args = vec!["paper", id, "--quick"];
        if writes_results {
            args.extend(["--out", out.to_str().unwrap()]);
        }
        let entry_started = std::time::Instant::now();
        let output = concord(&args);
        let stderr = text(&output.stderr);
        assert!(output.status.success(), "{id} ({quick}): {stderr}");
        assert!(
            stderr.contains(&format!("running: {quick}")),
            "{id} did not run its small version: {stderr}"
        );
        if writes_results {
            check_entry_results(id, &out);
        }
        ran.push(format!(
            "{id} {:.1}s",
            entry_started.elapsed().as_secs_f64()
        ));
    }
    assert!(ran.len() >= 35, "{} entries ran", ran.len());
    eprintln!(
        "{} entries in {:.0} s: {}",
        ran.len(),
        started.elapsed().as_secs_f64(),
        ran.join(", ")
    );
}

#[test]
fn the_report_heads_the_figure_with_the_paper_number_and_caption() {
    let root = scratch("paper-report-caption");
    let dir = root.join("table1");
    let out = concord(&[
        "paper",
        "000-table1",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let experiment = check_entry_results("000-table1", &dir);
    assert_eq!(experiment["paper"]["number"], "Table 1");
    assert_eq!(experiment["paper"]["status"], "partial");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let heading = "<h2 id=\"stealing\">000 Table 1 — Steal attempts and failed steals under \
                   best-of-2 stealing</h2>";
    assert!(html.contains(heading), "no heading {heading}");
    assert!(html.contains("<td>reproduces</td>"), "no header line");

    // A partial entry's reason is beside its heading.
    let dir = root.join("fig9-like");
    let out = command(&["compare", "search", "--preset", "vanilla", "--rounds", "1"])
        .args(["--repeat", "1", "--out", dir.to_str().unwrap()])
        .env("CONCORD_PAPER_ENTRY", "000-fig6")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("<h2 id=\"gc-time-breakdown\">000 Figure 6 — Where minor GC time goes"),
        "no Figure 6 heading"
    );
    assert!(
        html.contains("<span class=\"chip\">partial</span>: the same per-worker breakdown"),
        "no status and reason"
    );

    // A directory written before the entry was recorded still renders, without it.
    let path = dir.join("experiment.json");
    let mut old = read_json(&path);
    old.as_object_mut().unwrap().remove("paper");
    std::fs::write(&path, serde_json::to_string_pretty(&old).unwrap()).unwrap();
    let page = root.join("old.html");
    let out = concord(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<h2 id=\"gc-time-breakdown\">GC time breakdown</h2>"));
    assert!(!html.contains("reproduces") && !html.contains("Figure 6"));
}

#[test]
fn an_unknown_entry_in_the_environment_is_refused_before_any_work() {
    let dir = scratch("paper-unknown-env").join("out");
    let out = command(&["compare", "binary-trees", "4", "--preset", "vanilla"])
        .args(["--out", dir.to_str().unwrap()])
        .env("CONCORD_PAPER_ENTRY", "000-fig99")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("CONCORD_PAPER_ENTRY") && stderr.contains("000-fig99"),
        "{stderr}"
    );
    assert!(!dir.exists(), "the results directory was created");
}

/// The text between `<!-- catalogue: NAME -->` and the next `<!-- /catalogue -->` of `page`
/// (a path from the repository's root), without the newlines next to the markers.
fn marked_table(page: &str, name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(page);
    let text = std::fs::read_to_string(&path).unwrap();
    let open = format!("<!-- catalogue: {name} -->\n");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("{page} has no {open:?} marker"))
        + open.len();
    let len = text[start..]
        .find("\n<!-- /catalogue -->")
        .unwrap_or_else(|| panic!("{page}: {open:?} is not closed by <!-- /catalogue -->"));
    text[start..start + len].to_string()
}

#[test]
fn the_readme_and_the_guide_carry_the_catalogue_tables() {
    for (page, table) in [("README.md", "counts"), ("docs/papers.md", "entries")] {
        let out = concord(&["paper", "--markdown", table]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let printed = text(&out.stdout);
        let printed = printed.trim_end();
        assert!(printed.starts_with("| "), "{printed}");
        assert!(
            marked_table(page, table) == printed,
            "{page}'s table between <!-- catalogue: {table} --> and <!-- /catalogue --> is not \
             the catalogue's: regenerate it with `concord paper --markdown {table}` \
             (cargo run --release -p concord-cli -- paper --markdown {table})"
        );
    }
}

/// `--repeat` out of range names the range the entry's command allows (1..=1000), whether it
/// is too large for a number (it said `not in 0..=4294967295`) or too small, and nothing runs.
#[test]
fn repeat_out_of_range_names_the_real_range() {
    for repeat in ["99999999999", "0", "1001", "-3"] {
        let out = concord(&["paper", "000-fig10", "--repeat", repeat]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{repeat}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "--repeat: '{repeat}' is out of range (allowed: 1..=1000)"
            )),
            "{repeat}: {stderr}"
        );
        assert!(!stderr.contains("running: concord"), "{repeat}: {stderr}");
    }
}
