//! Shared helpers for the loadgen integration tests: run `shardlog loadgen`
//! and check its outputs.

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `shardlog loadgen <args>` and returns its output; fails the test
/// with stdout/stderr when it exits non-zero.
pub fn run_loadgen(args: &[&str]) -> Output {
    run_loadgen_with_context(args, String::new)
}

/// Like [`run_loadgen`]; `context` adds to the failure message (e.g. the
/// broker's log).
pub fn run_loadgen_with_context(args: &[&str], context: impl Fn() -> String) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("loadgen")
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("spawning shardlog loadgen");
    assert!(
        out.status.success(),
        "shardlog loadgen {args:?} failed: {}\nstdout:\n{}\nstderr:\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        context()
    );
    out
}

/// Checks results.json / results.csv / latency.svg / report.html in `dir`
/// and returns the parsed JSON points.
pub fn check_outputs(dir: &Path, acks_levels: &[&str]) -> Vec<serde_json::Value> {
    // LOADGEN_TEST_KEEP=<dir> keeps a copy of the outputs for inspection.
    if let Some(keep) = std::env::var_os("LOADGEN_TEST_KEEP") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep).expect("creating LOADGEN_TEST_KEEP");
        for f in ["results.json", "results.csv", "latency.svg", "report.html"] {
            let _ = std::fs::copy(dir.join(f), keep.join(f));
        }
    }
    let json = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let points = v["points"].as_array().expect("points array").clone();
    assert!(!points.is_empty());

    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), points.len() + 1, "header + one row per point");
    let cols = lines[0].split(',').count();
    assert!(lines.iter().all(|l| l.split(',').count() == cols));

    let svg = std::fs::read_to_string(dir.join("latency.svg")).expect("latency.svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<polyline").count(), acks_levels.len());
    assert_eq!(svg.matches(r#"class="series""#).count(), acks_levels.len());
    for a in acks_levels {
        assert!(
            svg.contains(&format!(r#"data-acks="{a}""#)),
            "series acks={a}"
        );
    }

    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("<svg") && html.contains("<table"));
    // Results table and delivery table: header + one row per point each;
    // the broker-side table's header (its rows are `<tr class="broker-side">`).
    assert_eq!(html.matches("<tr>").count(), 2 * (points.len() + 1) + 1);
    assert_eq!(
        html.matches("<tr class=\"broker-side\">").count(),
        points.len()
    );
    points
}

/// Every produced record consumed exactly once, in order, without gaps.
pub fn check_point_verified(p: &serde_json::Value, expected: u64) {
    let label = p["label"].as_str().unwrap_or("?");
    let n = |k: &str| {
        p[k].as_u64()
            .unwrap_or_else(|| panic!("{label}: {k} missing"))
    };
    assert_eq!(n("errors"), 0, "{label}: errors {}", p["errors_by_code"]);
    assert_eq!(n("produced"), expected, "{label}: produced");
    assert_eq!(n("consumed"), expected, "{label}: consumed");
    assert_eq!(n("missing"), 0, "{label}: missing");
    assert_eq!(n("duplicates"), 0, "{label}: duplicates");
    assert_eq!(n("offset_gaps"), 0, "{label}: offset gaps");
    assert_eq!(n("out_of_order"), 0, "{label}: out of order");
    assert!(
        p["ack_latency"]["count"].as_u64().unwrap_or(0) > 0,
        "{label}: latencies"
    );
    assert!(
        p["e2e_latency"]["count"].as_u64().unwrap_or(0) > 0,
        "{label}: e2e"
    );
}
