//! `concord run --pretouch`: the summary JSON reports the time the pretouch took (null
//! without it), and the run is otherwise an ordinary one; a bad `CONCORD_PRETOUCH` value or a
//! value given to the flag is bad input (exit 2).

mod common;

use common::{argv, assert_exit_2, command, json_of, text};

#[test]
fn pretouch_ms_is_reported_with_the_flag_and_null_without() {
    let v = json_of(&argv(
        "run binary-trees 14 --heap 16m --gc-threads 2 --pretouch --verify --json",
    ));
    let ms = v["pretouch_ms"].as_f64().expect("pretouch_ms is a number");
    assert!(ms > 0.0, "{v}");
    assert_eq!(v["checksum_ok"], true, "{v}");
    assert!(v["gc_count"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    let v = json_of(&argv("run binary-trees 10 --heap 32m --json"));
    assert!(v["pretouch_ms"].is_null(), "{v}");
    // The readable summary says it too.
    let out = command(&argv("run binary-trees 10 --heap 32m --pretouch"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("pretouch  whole heap faulted in at start in"),
        "{stdout}"
    );
}

#[test]
fn the_environment_sets_pretouch_and_bad_values_are_refused() {
    let out = command(&argv("run binary-trees 10 --heap 32m --json"))
        .env("CONCORD_PRETOUCH", "on")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["pretouch_ms"].as_f64().is_some(), "{v}");

    let out = command(&argv("run binary-trees 10 --heap 32m"))
        .env("CONCORD_PRETOUCH", "sometimes")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("CONCORD_PRETOUCH"), "{stderr}");
    assert!(stderr.contains("sometimes"), "{stderr}");
    assert_exit_2(&argv("run binary-trees 10 --pretouch=maybe"), "--pretouch");
}
