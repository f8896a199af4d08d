//! Idempotent producers from real clients against the broker binary
//! (issue 6): kafka-python's default producer (idempotent in 3.x) and
//! confluent-kafka with `enable.idempotence=true` while the test breaks its
//! connections from outside (`ss -K`) and restarts the broker once. A
//! consumer then finds every message exactly once, in order per partition.
//! Needs `bash tests/run.sh` (venv) and iproute2's `ss` with socket kill.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::idempotence::create_topic;
use common::{venv_python, Broker};
use serde_json::Value;

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(name)
}

/// Run a script in the venv; its last stdout line is JSON.
fn python_json(args: &[&str]) -> Value {
    let out = Command::new(venv_python())
        .args(args)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "python failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn kafka_python_default_producer_is_idempotent_and_each_message_is_read_once() {
    let broker = Broker::start();
    create_topic(&broker, "idem-kp", 3, &[]);
    let py = script("idem_kafka_python.py");
    let out = python_json(&[
        py.to_str().expect("path"),
        &broker.bootstrap(),
        "idem-kp",
        "3",
        "10000",
    ]);
    assert_eq!(out["idempotent"], true, "{out}");
    assert!(out["producer_id"].as_i64() >= Some(0), "{out}");
    assert_eq!(out["acked"], 10_000, "{out}");
    assert_eq!(out["log_end_sum"], 10_000, "{out}");
    assert_eq!(out["records"], 10_000, "{out}");
    assert_eq!(out["distinct"], 10_000, "{out}");
    assert_eq!(out["duplicates"], 0, "{out}");
    assert_eq!(out["missing"], 0, "{out}");
    assert_eq!(out["unexpected"], 0, "{out}");
}

/// `ss -K dst 127.0.0.1 dport = PORT`: abort every client socket connected
/// to the broker (needs root and a kernel with CONFIG_INET_DIAG_DESTROY).
/// Returns how many sockets ss listed as killed.
fn kill_client_connections(port: u16) -> usize {
    let out = Command::new("ss")
        .args([
            "-K",
            "-t",
            "dst",
            "127.0.0.1",
            "dport",
            "=",
            &port.to_string(),
        ])
        .output()
        .expect("ss missing: apt-get install -y --no-install-recommends iproute2");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("not supported"),
        "ss -K failed (needs root and CONFIG_INET_DIAG_DESTROY): {stderr}"
    );
    stdout.lines().filter(|l| l.contains("ESTAB")).count()
}

/// What the test does when the producer reports a given progress (in
/// percent of N delivered).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Disruption {
    KillConnections,
    RestartBroker,
}

/// Kill bursts every 5% of the run, and one clean restart at 40%.
fn plan() -> Vec<(u64, Disruption)> {
    (1..20)
        .map(|k| {
            let what = if k == 8 {
                Disruption::RestartBroker
            } else {
                Disruption::KillConnections
            };
            (k * 5, what)
        })
        .collect()
}

/// No producer output for this long means it is stuck.
const STALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

#[test]
#[allow(clippy::too_many_lines, reason = "one scenario read top to bottom")]
fn confluent_idempotent_producer_survives_connection_kills_and_a_restart_exactly_once() {
    const N: u64 = 1_000_000;
    const PARTITIONS: u64 = 4;
    let mut broker = Broker::start();
    let port = broker.port;
    create_topic(&broker, "idem-1m", PARTITIONS as i32, &[]);
    let py = script("idem_confluent.py");
    let (n, parts) = (N.to_string(), PARTITIONS.to_string());
    let mut producer = Command::new(venv_python())
        .args([
            py.to_str().expect("path"),
            "produce",
            &broker.bootstrap(),
            "idem-1m",
            &parts,
            &n,
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn producer");
    let stdout = BufReader::new(producer.stdout.take().expect("stdout"));
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let plan_points = plan();
    let mut plan = plan_points.iter().peekable();
    let (mut killed, mut restarts, mut last_line) = (0usize, 0, String::new());
    loop {
        // A hang guard, not a speed check: a producer that reports nothing
        // for this long is stuck (say, the broker died).
        let line = match lines.recv_timeout(STALL_LIMIT) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(e) => {
                let _ = producer.kill();
                let alive = broker.is_running();
                let log = broker.log_lines().join("\n");
                panic!("producer stalled ({e}); broker running: {alive}; broker log:\n{log}");
            }
        };
        if let Some(done) = line.strip_prefix("progress ") {
            let percent = done.parse::<u64>().expect("progress count") * 100 / N;
            while let Some(&&(at, what)) = plan.peek() {
                if percent < at {
                    break;
                }
                plan.next();
                match what {
                    Disruption::KillConnections => {
                        // A burst of aborts, to catch requests in flight
                        // (appended, answer lost: the retry is a duplicate).
                        for _ in 0..5 {
                            killed += kill_client_connections(port);
                            std::thread::sleep(std::time::Duration::from_millis(25));
                        }
                    }
                    Disruption::RestartBroker => {
                        let (status, dir) = broker.stop_keeping_dir();
                        assert!(status.success(), "{status}");
                        let listener = format!("listeners=PLAINTEXT://127.0.0.1:{port}");
                        broker = Broker::start_in(dir, &[&listener]);
                        assert_eq!(broker.port, port);
                        restarts += 1;
                    }
                }
            }
        }
        last_line = line;
    }
    let status = producer.wait().expect("producer exit");
    assert!(status.success(), "producer failed: {last_line}");
    let produced: Value = serde_json::from_str(&last_line).expect("producer JSON");
    assert_eq!(
        plan.next(),
        None,
        "producer finished before every disruption"
    );
    assert_eq!(restarts, 1);
    assert!(killed > 0, "ss killed no connection");
    assert_eq!(produced["delivered"], N, "{produced}");
    assert_eq!(produced["failed"], 0, "{produced}");
    assert_eq!(produced["unflushed"], 0, "{produced}");
    assert!(
        produced["errors"].as_array().is_some_and(Vec::is_empty),
        "{produced}"
    );

    let checked = python_json(&[
        py.to_str().expect("path"),
        "consume",
        &broker.bootstrap(),
        "idem-1m",
        &parts,
        &n,
    ]);
    // Message i goes to partition i % PARTITIONS, and N is a multiple.
    const { assert!(N.is_multiple_of(PARTITIONS)) };
    let per_partition = vec![N / PARTITIONS; PARTITIONS as usize];
    assert_eq!(checked["log_end_sum"], N, "{checked}");
    assert_eq!(checked["records"], N, "{checked}");
    assert_eq!(checked["duplicates"], 0, "{checked}");
    assert_eq!(checked["gaps"], 0, "{checked}");
    assert_eq!(checked["bad"], 0, "{checked}");
    assert_eq!(
        checked["complete_per_partition"],
        serde_json::json!(per_partition),
        "{checked}"
    );
    eprintln!(
        "killed {killed} client sockets, {} transport errors seen by the producer",
        produced["transport_errors"]
    );
}
