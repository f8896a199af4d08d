//! `shardlog bench --quick`: starts its own broker child process, sweeps it
//! with the load generator and writes the report folder. Needs the broker's
//! Produce/Fetch data path; until it lands these tests fail at broker
//! start-up or at the first produce, and the failure message says which
//! (bench prints the broker's output tail).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("bench")
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("spawning shardlog bench")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The quick sweep: acks=1,all x linger.ms=0,5 x one batch.size.
const QUICK_POINTS: usize = 4;

/// Rows of results.csv, each a map from column name to cell.
fn csv_rows(dir: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let csv = std::fs::read_to_string(dir.join("results.csv")).expect("results.csv");
    let mut lines = csv.lines();
    let header: Vec<String> = lines
        .next()
        .expect("CSV header")
        .split(',')
        .map(str::to_string)
        .collect();
    lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            assert_eq!(cells.len(), header.len(), "row {l:?}");
            header
                .iter()
                .cloned()
                .zip(cells.iter().map(|c| c.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn quick_bench_writes_a_report_with_a_nonzero_row_per_sweep_point() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let o = bench(&["--quick", "--out", out.to_str().unwrap()]);
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    assert!(
        o.status.success(),
        "shardlog bench --quick failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status
    );
    assert!(
        stdout.contains(&format!("results: {}", out.display())),
        "bench names its results folder:\n{stdout}"
    );

    let rows = csv_rows(&out);
    assert_eq!(rows.len(), QUICK_POINTS, "one CSV row per sweep point");
    for r in &rows {
        let rate: f64 = r["msgs_per_sec"].parse().expect("msgs_per_sec number");
        assert!(rate > 0.0, "CSV point {} has zero throughput", r["label"]);
    }
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let points = v["points"].as_array().expect("points");
    assert_eq!(points.len(), QUICK_POINTS, "one JSON point per sweep point");
    let mut labels: Vec<String> = Vec::new();
    for p in points {
        let label = p["label"].as_str().unwrap_or("?").to_string();
        assert!(p["msgs_per_sec"].as_f64().unwrap_or(0.0) > 0.0, "{label}");
        assert!(p["mb_per_sec"].as_f64().unwrap_or(0.0) > 0.0, "{label}");
        labels.push(label);
    }
    for want in ["acks=1", "acks=all", "linger.ms=0", "linger.ms=5"] {
        assert!(
            labels.iter().any(|l| l.contains(want)),
            "{want} in {labels:?}"
        );
    }

    let svg = std::fs::read_to_string(out.join("latency.svg")).expect("latency.svg");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let html = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    assert!(html.contains("<table") && html.contains("<svg"));

    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).expect("bench.json"))
            .expect("bench.json parses");
    let exit = record["broker_exit"].as_str().unwrap_or("");
    assert_eq!(exit, "stopped by SIGTERM, exit status: 0");
    let work = record["work_dir"].as_str().expect("work_dir recorded");
    assert!(
        !Path::new(work).exists(),
        "the broker's temporary directory {work} is removed without --keep"
    );
}

#[test]
fn broker_that_fails_to_start_is_reported_with_its_output() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    // shardlog.shards must be at least 1: the broker rejects its config.
    let o = bench(&[
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--broker-override",
        "shardlog.shards=0",
    ]);
    let stderr = text(&o.stderr);
    assert!(!o.status.success(), "bench must fail:\n{stderr}");
    assert!(stderr.contains("did not start"), "{stderr}");
    // The broker's own message (config::ConfigError), not bench's command line.
    assert!(
        stderr.contains("invalid value for shardlog.shards"),
        "the broker's own error is shown:\n{stderr}"
    );
}

/// A stand-in broker: prints the readiness line naming `addr`, and records
/// the SIGTERM it gets in `marker`.
fn fake_broker(dir: &Path, addr: &str, marker: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let script = dir.join("fake-broker.sh");
    let body = format!(
        "#!/bin/sh\ntrap 'echo sigterm > {}; exit 0' TERM\n\
         echo 'shardlog: listening on {addr} with 1 shards' >&2\n\
         while :; do sleep 0.05; done\n",
        marker.display()
    );
    std::fs::write(&script, body).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn bench_stopped_by_sigterm_stops_its_broker_and_removes_its_work_dir() {
    let tmp = tempfile::tempdir().unwrap();
    // Accepts connections and never answers: loadgen waits on its first
    // request, so bench is mid-run when the signal comes.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap().to_string();
    let marker = tmp.path().join("broker-got-sigterm");
    let script = fake_broker(tmp.path(), &addr, &marker);
    let out = tmp.path().join("report");
    let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args(["bench", "--quick", "--out", out.to_str().unwrap()])
        .args(["--broker-bin", script.to_str().unwrap()])
        .env("RUST_BACKTRACE", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawning shardlog bench");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let work = loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("bench ended before the broker was ready: {seen:#?}"))
            .unwrap();
        if let Some((_, dir)) = line.split_once("; work dir ") {
            break dir.to_string();
        }
        seen.push(line);
    };
    assert!(
        Path::new(&work).exists(),
        "work dir {work} exists while running"
    );
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(128 + 15),
        "bench exits as killed by SIGTERM: {rest:#?}"
    );
    assert!(marker.exists(), "the broker got SIGTERM: {rest:#?}");
    assert!(!Path::new(&work).exists(), "work dir {work} removed");
    drop(silent);
}
