//! End to end: `shardlog loadgen` against a `shardlog broker` started by the
//! test. Needs the broker's Produce/Fetch data path; until it lands these
//! tests fail at broker start-up or at the first produce, with a message
//! saying which.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::loadgen::{check_outputs, check_point_verified, run_loadgen_with_context};

/// A broker process, killed when dropped.
struct Broker {
    child: Child,
    addr: String,
    log_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Broker {
    /// The end of the broker's log, for failure messages.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let start = log.len().saturating_sub(4096);
        let start = (start..log.len())
            .find(|i| log.is_char_boundary(*i))
            .unwrap_or(0);
        format!("broker log (tail):\n{}", &log[start..])
    }

    fn run_loadgen(&self, args: &[&str]) -> std::process::Output {
        run_loadgen_with_context(args, || self.log_tail())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    common::ports::reserved_port()
}

/// Starts `shardlog broker` on a free port and waits until it is ready.
fn start_broker() -> Broker {
    let dir = tempfile::tempdir().expect("temp log dir");
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    // The broker's log goes to a file: an undrained pipe would block it.
    let log_path = dir.path().join("broker.log");
    let log = std::fs::File::create(&log_path).expect("broker log file");
    let log_dir = dir.path().join("data");
    let child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .args([
            "broker",
            "--override",
            &format!("listeners=PLAINTEXT://{addr}"),
            "--override",
            &format!("log.dirs={}", log_dir.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawning shardlog broker");
    let mut broker = Broker {
        child,
        addr,
        log_path: log_path.clone(),
        _dir: dir,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // Shards accept TCP before the broker is ready (CreateTopics can then
        // answer NotController): wait for its readiness line too.
        let ready = std::fs::read_to_string(&log_path)
            .map(|l| l.contains("shardlog: listening on"))
            .unwrap_or(false);
        if ready && TcpStream::connect(&broker.addr).is_ok() {
            return broker;
        }
        if let Ok(Some(status)) = broker.child.try_wait() {
            let err = std::fs::read_to_string(&log_path).unwrap_or_default();
            panic!(
                "shardlog broker exited ({status}) before accepting connections on {}; \
                 the broker subcommand/data path is not available yet.\nstderr:\n{err}",
                broker.addr
            );
        }
        assert!(
            Instant::now() < deadline,
            "shardlog broker did not accept connections on {} within 30s",
            broker.addr
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn every_acks_mode_produces_and_consumes_all_records_in_order() {
    let broker = start_broker();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let output = broker.run_loadgen(&[
        "--bootstrap",
        &broker.addr,
        "--topic",
        "e2e-acks",
        "--partitions",
        "3",
        "--producers",
        "2",
        "--message-size",
        "256",
        "--messages",
        "3000",
        "--sweep",
        "acks=0,1,all",
        "--drain-timeout",
        "20s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    for a in ["acks=0", "acks=1", "acks=all"] {
        assert!(stdout.contains(a), "table lists {a}:\n{stdout}");
    }
    let points = check_outputs(&out, &["0", "1", "all"]);
    assert_eq!(points.len(), 3);
    for p in &points {
        check_point_verified(p, 3000);
    }
}

#[test]
fn omb_workload_drives_a_run_against_the_broker() {
    let broker = start_broker();
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let workload = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/omb/1-topic-3-partitions-1kb.yaml"
    );
    broker.run_loadgen(&[
        "--bootstrap",
        &broker.addr,
        "--workload",
        workload,
        "--duration",
        "2s",
        "--warmup",
        "500ms",
        "--drain-timeout",
        "20s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let points = check_outputs(&out, &["all"]);
    let p = &points[0];
    assert_eq!(p["errors"], 0, "errors: {}", p["errors_by_code"]);
    assert_eq!(p["missing"], 0);
    assert_eq!(p["offset_gaps"], 0);
    assert_eq!(p["out_of_order"], 0);
    assert!(p["ack_latency_intended"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn omb_workload_at_max_rate_drives_a_curve_per_setting() {
    let broker = start_broker();
    let dir = tempfile::tempdir().unwrap();
    // OMB's producerRate 0 asks for the maximum rate: the explorer finds
    // it, then runs at fractions of it.
    let workload = dir.path().join("max-rate.yaml");
    std::fs::write(
        &workload,
        "name: max rate\ntopics: 1\npartitionsPerTopic: 2\nmessageSize: 512\n\
         producerRate: 0\nkeyDistributor: NO_KEY\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = broker.run_loadgen(&[
        "--bootstrap",
        &broker.addr,
        "--workload",
        workload.to_str().unwrap(),
        "--sweep",
        "acks=1,all",
        "--fractions",
        "25,50,75",
        "--duration",
        "1s",
        "--warmup",
        "300ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains(&format!("results: {}", out.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("| acks=all "),
        "curve table on stdout:\n{stdout}"
    );
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    assert_eq!(v["workload"]["name"], "max rate");
    let curves = v["curves"].as_array().expect("curves");
    assert_eq!(curves.len(), 2, "one curve per setting");
    for c in curves {
        let max = c["max_rate"].as_f64().unwrap();
        assert!(max > 0.0, "{c}");
        let targets: Vec<u64> = c["points"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["target_rate"].as_u64().unwrap())
            .collect();
        let want: Vec<u64> = [25.0, 50.0, 75.0]
            .iter()
            .map(|f| ((max * f / 100.0).round() as u64).max(1))
            .collect();
        assert_eq!(targets, want, "fractions of the max rate: {c}");
        for p in c["points"].as_array().unwrap() {
            assert!(p["latency"]["count"].as_u64().unwrap() > 0, "{p}");
            assert_eq!(p["errors"], 0, "{p}");
        }
    }
    let runs = v["points"].as_array().unwrap();
    assert_eq!(runs.len(), 2 * 4, "max + 3 fractions per setting");
    for r in runs {
        assert_eq!(r["missing"], 0, "{}", r["label"]);
        assert_eq!(r["duplicates"], 0, "{}", r["label"]);
    }
    for f in [
        "latency.svg",
        "latency-acks-1.svg",
        "latency-acks-all.svg",
        "curves.md",
    ] {
        assert!(out.join(f).exists(), "{f}");
    }
}

#[test]
fn compare_puts_two_brokers_curves_in_one_report() {
    let (a, b) = (start_broker(), start_broker());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    a.run_loadgen(&[
        "--compare",
        &format!("first={}", a.addr),
        "--compare",
        &format!("second={}", b.addr),
        "--topic",
        "e2e-compare",
        "--partitions",
        "2",
        "--message-size",
        "256",
        "--acks",
        "1",
        "--fractions",
        "50,90",
        "--duration",
        "1s",
        "--warmup",
        "300ms",
        "--out",
        out.to_str().unwrap(),
    ]);
    let json = std::fs::read_to_string(out.join("results.json")).expect("results.json");
    let v: serde_json::Value = serde_json::from_str(&json).expect("results.json parses");
    let curves = v["curves"].as_array().expect("curves");
    let names: Vec<&str> = curves
        .iter()
        .map(|c| c["target"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["first", "second"]);
    for c in curves {
        assert!(c["max_rate"].as_f64().unwrap() > 0.0, "{c}");
        assert_eq!(c["points"].as_array().unwrap().len(), 2, "{c}");
    }
    let svg = std::fs::read_to_string(out.join("latency.svg")).expect("latency.svg");
    for n in ["first: base", "second: base"] {
        assert!(svg.contains(&format!(r#"data-setting="{n}""#)), "curve {n}");
    }
}

#[test]
fn consume_only_reads_every_produced_record_from_the_beginning() {
    let broker = start_broker();
    let first = tempfile::tempdir().unwrap();
    broker.run_loadgen(&[
        "--out",
        first.path().to_str().unwrap(),
        "--bootstrap",
        &broker.addr,
        "--topic",
        "e2e-consume",
        "--partitions",
        "3",
        "--message-size",
        "300",
        "--messages",
        "2000",
        "--consumers",
        "0",
        "--acks",
        "1",
    ]);
    // Header counting (default) and full record decoding must agree.
    for (consumers, verify) in [("1", false), ("2", true)] {
        let out_dir = tempfile::tempdir().unwrap();
        let out = out_dir.path().join("out");
        let mut args = vec![
            "--bootstrap",
            &broker.addr,
            "--topic",
            "e2e-consume",
            "--consume-only",
            "--consumers",
            consumers,
            "--out",
            out.to_str().unwrap(),
        ];
        if verify {
            args.push("--verify-records");
        }
        let output = broker.run_loadgen(&args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("consume: 2000 records"), "{stdout}");
        let json = std::fs::read_to_string(out.join("consume.json")).expect("consume.json");
        let v: serde_json::Value = serde_json::from_str(&json).expect("consume.json parses");
        assert_eq!(v["records"], 2000, "{v}");
        assert_eq!(v["value_bytes"], 2000 * 300, "{v}");
        assert_eq!(v["partitions"], 3, "{v}");
        assert_eq!(v["crc_errors"], 0, "{v}");
        assert_eq!(v["offset_gaps"], 0, "{v}");
        assert_eq!(v["caught_up"], true, "{v}");
        assert_eq!(v["verify_records"], verify, "{v}");
    }
}
