//! `concord run --thp`: each mode reaches the heap and the summary JSON reports it with the
//! system's settings and the heap's huge-page bytes; bad modes and margins are bad input.

mod common;

use common::{argv, assert_exit_2, json_of};

#[test]
fn each_mode_is_reported_with_its_advice_and_the_system_setting() {
    let system_enabled = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .ok()
        .and_then(|t| Some(t.split_once('[')?.1.split_once(']')?.0.to_string()));
    for (mode, advice) in [
        ("never", Some("no-huge")),
        ("madvise", Some("huge")),
        ("always", Some("huge")),
        ("system", None),
        ("dynamic", Some("huge")),
    ] {
        // The margin is dynamic's alone (other modes refuse it).
        let margin = if mode == "dynamic" {
            "--thp-margin 0"
        } else {
            ""
        };
        let line = format!("run binary-trees 10 --heap 16m --thp {mode} {margin} --json");
        let v = json_of(&argv(&line));
        assert_eq!(v["thp"]["mode"], mode, "{v}");
        assert_eq!(v["thp"]["advice"].as_str(), advice, "{mode}: {v}");
        assert_eq!(v["thp"]["switches"], 0, "{mode}");
        assert_eq!(v["thp"]["enabled"].as_str(), system_enabled.as_deref());
        let huge = v["heap_huge_bytes"]
            .as_u64()
            .expect("smaps is readable here");
        if mode == "never" {
            assert_eq!(huge, 0, "MADV_NOHUGEPAGE heap in huge pages");
        }
    }
}

#[test]
fn dynamic_declines_huge_pages_without_room_beyond_the_heap() {
    let v = json_of(&argv(
        "run binary-trees 10 --heap 16m --thp dynamic --thp-margin 1000g --json",
    ));
    assert_eq!(v["thp"]["mode"], "dynamic");
    assert_eq!(v["thp"]["advice"], "no-huge");
    assert_eq!(v["heap_huge_bytes"], 0);
    // No preset asks for huge pages: optimized's default makes no call, as vanilla's.
    for preset in ["optimized", "vanilla"] {
        let v = json_of(&argv(&format!(
            "run binary-trees 10 --heap 16m --preset {preset} --json"
        )));
        assert_eq!(v["thp"]["mode"], "system", "{preset}");
        assert!(v["thp"]["advice"].is_null(), "{preset}");
    }
}

#[test]
fn bad_modes_and_margins_are_bad_input() {
    assert_exit_2(
        &argv("run binary-trees 10 --thp huge"),
        "--thp: 'huge' is not a THP mode (allowed: system, never, madvise, always, dynamic)",
    );
    assert_exit_2(
        &argv("run binary-trees 10 --thp-margin lots"),
        "--thp-margin: 'lots' is not a size",
    );
}
