//! `concord sim calibrate` end to end: a quick calibration writes a versioned JSON file equal to
//! what `--json` prints, every cost positive and finite (never compared with a time bound: a
//! slow or busy machine gives other figures, not wrong ones); bad input exits 2 before
//! measuring; an output that cannot be written exits 1 naming it.

mod common;

use common::{assert_exit_2, concord, scratch, stdout_json, text};
use serde_json::Value;

/// The cost names every calibration holds, as the simulator's cost table and the copy fit
/// name them.
const COSTS: [&str; 19] = [
    "atomic_load",
    "atomic_store",
    "atomic_rmw",
    "cas",
    "lock_uncontended",
    "futex_wait",
    "futex_wake",
    "yield_syscall",
    "sleep_syscall",
    "spin_loop",
    "context_switch",
    "wakeup_latency",
    "copy_per_object",
    "copy_per_byte",
    "page_fault",
    "far_access",
    "line_miss",
    "worker_start",
    "page_fault_old",
];

fn number(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what} is not a number: {v}"))
}

#[test]
fn a_quick_calibration_saves_every_cost_positive_and_prints_the_same_json() {
    let dir = scratch("sim-calibrate-quick");
    let file = dir.join("costs.json");
    let out = concord(&[
        "sim",
        "calibrate",
        "--quick",
        "--out",
        file.to_str().unwrap(),
        "--json",
    ]);
    let printed = stdout_json(&out);
    let saved = std::fs::read(&file).unwrap();
    assert_eq!(
        text(&saved),
        text(&out.stdout),
        "the file is what --json printed"
    );
    assert_eq!(printed["version"], 6);
    assert_eq!(printed["quick"], true);
    let costs = printed["costs"].as_object().unwrap();
    let spread = printed["spread"].as_object().unwrap();
    assert_eq!(costs.len(), COSTS.len(), "{costs:?}");
    for name in COSTS {
        let ns = number(&costs[name], name);
        // A reach may cost nothing (where the layout made no difference).
        let least_ok =
            if ["far_access", "line_miss", "worker_start", "page_fault_old"].contains(&name) {
                ns >= 0.0
            } else {
                ns > 0.0
            };
        assert!(ns.is_finite() && least_ok, "{name} = {ns}");
        let s = number(&spread[name], name);
        assert!(s.is_finite() && s >= 0.0, "spread of {name} = {s}");
    }
    let machine = &printed["machine"];
    assert!(!machine["cpu_model"].as_str().unwrap().is_empty());
    assert!(!machine["kernel"].as_str().unwrap().is_empty());
    assert!(machine["cpus"].as_u64().unwrap() >= 1);
    let fit = &printed["copy_fit"];
    assert_eq!(fit["per_object_ns"], costs["copy_per_object"]);
    assert_eq!(fit["per_byte_ns"], costs["copy_per_byte"]);
    assert_eq!(fit["far_access_ns"], costs["far_access"]);
    let points = fit["points"].as_array().unwrap();
    assert_eq!(
        points.len(),
        8 + 3 + 1 + 15,
        "4 payloads × 2 sizes in order, one of them not pretouched and promoted (pretouched \
         or not), a small tree collected with its caches cleared, and the reach trees: 5 \
         sizes × 3 layouts"
    );
    for p in points {
        for key in ["objects", "bytes", "ns", "sync_ns", "footprint"] {
            let v = number(&p[key], key);
            assert!(v.is_finite() && v > 0.0, "{key} = {v} in {p}");
        }
    }
    assert_eq!(points.iter().filter(|p| p["fitted"] == true).count(), 8);
    let cold: Vec<&Value> = points.iter().filter(|p| p["first_touch"] == true).collect();
    assert_eq!(cold.len(), 2, "to-space and old generation");
    for c in &cold {
        assert!(number(&c["faults"], "faults") > 0.0, "{c}");
    }
    assert_eq!(points.iter().filter(|p| p["promoted"] == true).count(), 2);
    // Two CPUs or more: the wake-up table, its idle durations ascending.
    if printed["machine"]["cpus"].as_u64().unwrap() >= 2 {
        let wake = printed["wake"].as_array().unwrap();
        assert_eq!(wake.len(), 6, "{wake:?}");
        for w in wake {
            assert!(number(&w["latency_ns"], "latency_ns") > 0.0, "{w}");
            assert!(number(&w["waker_ns"], "waker_ns") >= 0.0, "{w}");
        }
        // Halt polling, where the host shows it: a window of at least the short halt, and a
        // short halt's wake-up after a long halt slower than the polled one.
        if let Some(h) = printed.get("halt_poll") {
            assert!(number(&h["max_ns"], "max_ns") >= 20_000.0, "{h}");
            assert!(
                number(&h["unpolled_ns"], "unpolled_ns") > number(&h["latency_ns"], "latency_ns"),
                "{h}"
            );
        }
    }
    assert_eq!(points.iter().filter(|p| p["cold"] == true).count(), 1);
    // A shuffled tree's reaches jump about the heap: more far accesses than its twin laid out
    // in order; a top-down tree's skip over subtrees: more line misses.
    let twin_of = |s: &Value| {
        points
            .iter()
            .find(|p| {
                p["shuffled"] == false
                    && p["preorder"] == false
                    && p["first_touch"] == false
                    && p["cold"] == false
                    && p["promoted"] == false
                    && p["objects"] == s["objects"]
                    && p["bytes"] == s["bytes"]
            })
            .unwrap_or_else(|| panic!("no ordered twin of {s}"))
    };
    for (layout, misses) in [("shuffled", "far_accesses"), ("preorder", "line_misses")] {
        let trees: Vec<&Value> = points.iter().filter(|p| p[layout] == true).collect();
        assert_eq!(trees.len(), 5, "{layout}");
        for s in trees {
            let twin = twin_of(s);
            assert!(
                number(&s[misses], misses) > 2.0 * number(&twin[misses], misses),
                "{s} against {twin}"
            );
        }
    }
    // The reach costs, one per size, ascending footprints.
    let reach = fit["reach"].as_array().unwrap();
    assert_eq!(reach.len(), 5, "{reach:?}");
    let footprints: Vec<f64> = reach
        .iter()
        .map(|r| number(&r["footprint"], "footprint"))
        .collect();
    assert!(footprints.windows(2).all(|w| w[0] < w[1]), "{footprints:?}");
    for r in reach {
        for key in ["line_miss_ns", "far_access_ns"] {
            let v = number(&r[key], key);
            assert!(v.is_finite() && v >= 0.0, "{key} = {v} in {r}");
        }
    }
    assert!(number(&fit["residual_rms_ns"], "residual").is_finite());
    let date = printed["measured_at"].as_str().unwrap();
    assert!(date.len() == 20 && date.ends_with('Z'), "{date}");
    // Staged and renamed: nothing else is left beside the file.
    assert_eq!(common::entries(&dir), ["costs.json"]);
}

#[test]
fn bad_input_is_refused_before_measuring() {
    let dir = scratch("sim-calibrate-bad");
    let d = dir.to_str().unwrap();
    assert_exit_2(&["sim", "calibrate", "--out", d], "is a directory");
    assert_exit_2(
        &["sim", "calibrate", "--out", ""],
        "a value is required for '--out",
    );
    assert_exit_2(
        &["sim", "calibrate", "--fast"],
        "unexpected argument '--fast'",
    );
    // `concord sim NAME` is a workload or a subcommand: a misspelt one is neither.
    assert_exit_2(
        &["sim", "calibrat"],
        "unknown workload 'calibrat' (allowed: gcbench,",
    );
    assert_exit_2(
        &["sim", "measure"],
        "or a subcommand of concord sim (allowed: calibrate, validate)",
    );
    assert_eq!(common::entries(&dir), Vec::<String>::new());
}

#[test]
fn an_output_that_cannot_be_written_fails_with_status_1_naming_it() {
    let dir = scratch("sim-calibrate-unwritable");
    let missing = dir.join("no-such-dir").join("costs.json");
    let out = concord(&[
        "sim",
        "calibrate",
        "--quick",
        "--out",
        missing.to_str().unwrap(),
    ]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write the calibration to") && stderr.contains("no-such-dir"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("measuring"),
        "refused before measuring: {stderr}"
    );
}
