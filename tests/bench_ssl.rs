//! `shardlog bench --security-protocol SSL`: bench makes a throwaway CA and
//! broker certificate with the `openssl` CLI, starts its broker with an SSL
//! listener (PEM keystore), and the load generator's flat-out runs go over
//! TLS; every run moves records and the broker stops cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

use std::process::Command;

#[test]
fn bench_sweeps_a_broker_over_tls() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report");
    let o = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "bench",
            "--quick",
            "--flat-out",
            "--security-protocol",
            "SSL",
        ])
        .args(["--sweep", "acks=1,all", "--out", out.to_str().unwrap()])
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("spawning shardlog bench");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "shardlog bench --security-protocol SSL failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        o.status
    );
    let csv = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("CSV header").split(',').collect();
    let col = header.iter().position(|h| *h == "msgs_per_sec").unwrap();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 2, "one flat-out run per acks level:\n{csv}");
    for r in rows {
        let rate: f64 = r.split(',').nth(col).unwrap().parse().unwrap();
        assert!(rate > 0.0, "a run over TLS moved no records: {r}");
    }
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("bench.json")).unwrap()).unwrap();
    let command: Vec<&str> = record["brokers"][0]["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        command
            .iter()
            .any(|a| a.starts_with("listeners=SSL://127.0.0.1:")),
        "{command:?}"
    );
    assert!(command.contains(&"ssl.keystore.type=PEM"), "{command:?}");
    let loadgen: Vec<&str> = record["loadgen_command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let at = loadgen
        .iter()
        .position(|a| *a == "--security-protocol")
        .unwrap();
    assert_eq!(loadgen[at + 1], "SSL");
    assert!(loadgen.contains(&"--ssl-ca-location"), "{loadgen:?}");
    assert_eq!(
        record["brokers"][0]["exit"].as_str().unwrap_or(""),
        "stopped by SIGTERM, exit status: 0"
    );
}
