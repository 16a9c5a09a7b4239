//! `concord paper`: the catalogue's JSON has the interface's fields and statuses, every entry
//! that has a command validates it (under `CONCORD_CHECK_ARGS=1`, through `concord paper ID`),
//! and refusals (a `cannot` entry, an unknown id, `--repeat` for `run`) exit 2 before any work.

mod common;

use common::{command, concord, stdout_json, text};
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
        let command = field(entry, "command");
        if status == "cannot" {
            assert!(command.is_null(), "{id}");
        } else {
            assert!(command.as_str().unwrap().starts_with("concord "), "{id}");
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
