//! `/metrics` scraped by a real Prometheus (Debian's `prometheus`
//! package, started here on a loopback port, scraping every second):
//! three shardlog brokers in ZooKeeper mode, each with
//! `shardlog.metrics.listener` on its own loopback address; the checks
//! query Prometheus' HTTP API, as a dashboard or alert rule would.
//!
//! One cluster start, many checks:
//! - every target is up (Prometheus negotiated OpenMetrics and parsed the
//!   exposition) and the Kafka series Strimzi's dashboard reads exist
//!   with their labels (per-partition `topic`/`partition`, per-request
//!   `request`/`quantile`, per-listener `listener`/`networkProcessor`);
//! - `ActiveControllerCount` sums to 1 over the brokers;
//! - messages in (all brokers, the topic's label) equals the records the
//!   test produced, and the Produce time split has Kafka's quantiles;
//! - a consumer group that read everything has lag 0, lag > 0 after more
//!   records, and 0 again once it read those;
//! - `UnderReplicatedPartitions` goes above 0 while a follower is stopped
//!   (SIGSTOP past `replica.lag.time.max.ms`) and back to 0 once it
//!   returns, with `IsrShrinks`/`IsrExpands` counted;
//! - bad input on the listener: 404 for another path, 405 for another
//!   method, 431 for an oversized head.
//!
//! Running: `bash tests/run.sh --test metrics_prometheus` (installs
//! `prometheus` if missing).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::cluster::wait_for;
use common::replica_cluster::scenario::{produce, settings};
use common::replica_cluster::{HistoryProducer, ReplCluster, System};
use common::venv_python_with;
use common::zookeeper::free_port;

/// `replica.lag.time.max.ms`: a stopped follower leaves the ISR soon.
const LAG_MS: u64 = 2_000;
/// A ZooKeeper session well past the lag: the ISR shrinks by the lag rule.
const SESSION_MS: u64 = 10_000;

/// A Prometheus server scraping `targets` every second.
struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    fn start(targets: &[String]) -> Prometheus {
        let found = Command::new("prometheus")
            .arg("--version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        assert!(
            found,
            "prometheus missing: run `bash tests/run.sh` \
             (apt-get install -y --no-install-recommends prometheus)"
        );
        let dir = tempfile::tempdir().unwrap();
        let list: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: shardlog\n    metrics_path: /metrics\n    \
             static_configs:\n      - targets: [{}]\n",
            list.join(", ")
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start prometheus");
        let p = Prometheus {
            child,
            port,
            _dir: dir,
        };
        wait_for(60, "Prometheus ready", || {
            http(&format!("127.0.0.1:{port}"), "GET", "/-/ready", "")
                .filter(|r| r.starts_with("HTTP/1.1 200"))
        });
        p
    }

    /// The instant vector of `promql`: (labels, value) per series.
    fn query(&self, promql: &str) -> Vec<(serde_json::Value, f64)> {
        let path = format!("/api/v1/query?query={}", url_encode(promql));
        let Some(response) = http(&format!("127.0.0.1:{}", self.port), "GET", &path, "") else {
            return Vec::new();
        };
        let body = response.split("\r\n\r\n").nth(1).unwrap_or("");
        let v: serde_json::Value = serde_json::from_str(body).unwrap_or_default();
        v["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|s| {
                let value = s["value"][1]
                    .as_str()
                    .unwrap_or("NaN")
                    .parse()
                    .unwrap_or(f64::NAN);
                (s["metric"].clone(), value)
            })
            .collect()
    }

    /// The single value of `promql` (`None` while it has none).
    fn value(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        (r.len() == 1).then(|| r[0].1)
    }

    /// Wait until `promql`'s value satisfies `ok`; returns it.
    fn wait_value(&self, secs: u64, promql: &str, ok: impl Fn(f64) -> bool) -> f64 {
        wait_for(secs, promql, || self.value(promql).filter(|v| ok(*v)))
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One HTTP/1.1 request; the whole response as text (`None`: no answer).
fn http(addr: &str, method: &str, path: &str, extra_headers: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra_headers}\r\n"
    );
    s.write_all(req.as_bytes()).ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// Consume every partition of `topic` to its end with group `group`,
/// committing (confluent-kafka); the number of records read.
fn consume_all(bootstrap: &str, topic: &str, group: &str) -> u64 {
    let code = r#"
import sys, json
from confluent_kafka import Consumer, TopicPartition
bootstrap, topic, group = sys.argv[1:4]
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
              "auto.offset.reset": "earliest", "enable.auto.commit": False})
meta = c.list_topics(topic, timeout=30)
parts = sorted(meta.topics[topic].partitions)
ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
c.subscribe([topic])
pos, n = {}, 0
import time
deadline = time.time() + 60
while any(pos.get(p, -1) < ends[p] - 1 for p in parts if ends[p] > 0) and time.time() < deadline:
    m = c.poll(1.0)
    if m is None or m.error():
        continue
    pos[m.partition()] = m.offset()
    n += 1
c.commit(asynchronous=False)
c.close()
print(json.dumps({"read": n}))
"#;
    let out = Command::new(venv_python_with(&["confluent_kafka"]))
        .args(["-c", code, bootstrap, topic, group])
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "consumer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["read"].as_u64().unwrap()
}

fn bad_input_is_refused(addr: &str) {
    let r = http(addr, "GET", "/nope", "").unwrap();
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    let r = http(addr, "POST", "/metrics", "").unwrap();
    assert!(
        r.starts_with("HTTP/1.1 405") && r.contains("Allow: GET, HEAD"),
        "{r}"
    );
    let huge = format!("X-Big: {}\r\n", "a".repeat(9 * 1024));
    let r = http(addr, "GET", "/metrics", &huge).unwrap_or_default();
    assert!(r.starts_with("HTTP/1.1 431"), "{r}");
    let r = http(
        addr,
        "GET",
        "/metrics",
        "Accept: application/openmetrics-text; version=1.0.0\r\n",
    )
    .unwrap();
    assert!(
        r.contains("Content-Type: application/openmetrics-text") && r.ends_with("# EOF\n"),
        "{}",
        &r[..r.len().min(400)]
    );
    let r = http(addr, "GET", "/metrics", "").unwrap();
    assert!(
        r.contains("Content-Type: text/plain; version=0.0.4"),
        "{}",
        &r[..r.len().min(400)]
    );
}

#[test]
fn prometheus_scrapes_kafkas_series_from_a_three_broker_cluster() {
    let metrics_port = free_port();
    let mut s = settings(2, false, LAG_MS, SESSION_MS);
    s.push(format!(
        "shardlog.metrics.listener=127.0.0.{{id}}:{metrics_port}"
    ));
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let mut c = ReplCluster::start(System::Shardlog, 3, &refs);
    let targets: Vec<String> = (1..=3)
        .map(|id| format!("127.0.0.{id}:{metrics_port}"))
        .collect();
    let prom = Prometheus::start(&targets);

    bad_input_is_refused(&targets[0]);

    // Every target up: Prometheus parsed what each broker served.
    prom.wait_value(60, "sum(up{job=\"shardlog\"})", |v| v == 3.0);
    prom.wait_value(
        30,
        "sum(kafka_controller_kafkacontroller_activecontrollercount)",
        |v| v == 1.0,
    );
    assert_eq!(
        prom.value("count(kafka_server_replicamanager_leadercount)"),
        Some(3.0),
        "one leadercount series per broker (Strimzi's Brokers Online)"
    );
    let topic = "metered";
    c.create_topic(topic, 3, 3, &["min.insync.replicas=2"]);
    let produced = records_in(&c, &prom, topic);
    labels(&prom, topic);
    consumer_lag(&c, &prom, topic, produced);
    under_replicated(&mut c, &prom, topic);
}

/// Records in: one topic, three partitions led by three brokers; the
/// number produced.
fn records_in(c: &ReplCluster, prom: &Prometheus, topic: &str) -> u64 {
    let per_partition = 100u64;
    for p in 0..3 {
        let (r, _) = produce(
            c,
            topic,
            p,
            &format!("m{p}"),
            per_partition,
            &["--acks=all"],
        );
        assert_eq!(r["acked"], per_partition, "{r}");
    }
    let produced = 3 * per_partition;
    let q = format!("sum(kafka_server_brokertopicmetrics_messagesin_total{{topic=\"{topic}\"}})");
    let got = prom.wait_value(30, &q, |v| v >= produced as f64);
    assert_eq!(got, produced as f64, "messages in vs records produced");
    prom.wait_value(
        30,
        "sum(kafka_server_brokertopicmetrics_messagesin_total{topic=\"\"})",
        |v| v >= produced as f64,
    );
    produced
}

/// The labels dashboards select on.
fn labels(prom: &Prometheus, topic: &str) {
    // Every replica's log, once its followers wrote what they fetched.
    let sizes = format!("kafka_log_log_size{{topic=\"{topic}\"}} > 0");
    let sizes = wait_for(30, "3 partitions x 3 replicas with data", || {
        Some(prom.query(&sizes)).filter(|s| s.len() == 9)
    });
    assert!(
        sizes.iter().all(|(m, _)| m["partition"].is_string()),
        "{sizes:?}"
    );
    let replicas = prom.query(&format!(
        "kafka_cluster_partition_replicascount{{topic=\"{topic}\"}} > 0"
    ));
    assert_eq!(replicas.len(), 3, "one leader per partition: {replicas:?}");
    let p99 = prom
        .query("kafka_network_requestmetrics_totaltimems{request=\"Produce\",quantile=\"0.99\"}");
    assert!(!p99.is_empty(), "Produce TotalTimeMs p99");
    assert!(!prom
        .query("kafka_network_requestmetrics_remotetimems_count_total{request=\"FetchFollower\"}")
        .is_empty());
    let conns = prom.query("kafka_server_socket_server_metrics_connection_count");
    assert!(
        !conns.is_empty()
            && conns
                .iter()
                .all(|(m, _)| m["listener"].is_string() && m["networkProcessor"].is_string()),
        "{conns:?}"
    );
    // Followers and consumers read the tail from the batch cache.
    prom.wait_value(30, "sum(shardlog_batch_cache_hits_total)", |v| v > 0.0);
    assert_eq!(prom.query("process_open_fds").len(), 3);
    assert_eq!(prom.value("count(process_cpu_seconds_total)"), Some(3.0));
}

/// Consumer lag per group and partition: 0 once the group read
/// everything, above 0 after more records, 0 again.
fn consumer_lag(c: &ReplCluster, prom: &Prometheus, topic: &str, produced: u64) {
    let group = "lagging";
    assert_eq!(consume_all(&c.bootstrap(), topic, group), produced);
    let lag = format!("sum(shardlog_consumergroup_lag{{consumergroup=\"{group}\"}})");
    let current =
        format!("count(shardlog_consumergroup_current_offset{{consumergroup=\"{group}\"}})");
    prom.wait_value(30, &current, |v| v == 3.0);
    prom.wait_value(30, &lag, |v| v == 0.0);
    for p in 0..3 {
        let (r, _) = produce(c, topic, p, &format!("more{p}"), 10, &["--acks=all"]);
        assert_eq!(r["acked"], 10, "{r}");
    }
    prom.wait_value(30, &lag, |v| v > 0.0);
    assert_eq!(consume_all(&c.bootstrap(), topic, group), 30);
    prom.wait_value(30, &lag, |v| v == 0.0);
}

/// A stopped follower: under-replicated partitions, then none once it
/// returned; the ISR shrink and expansion counted.
fn under_replicated(c: &mut ReplCluster, prom: &Prometheus, topic: &str) {
    let urp = "sum(kafka_server_replicamanager_underreplicatedpartitions)";
    prom.wait_value(30, urp, |v| v == 0.0);
    let controller = c.controller();
    let st = c.state(topic, 0);
    let follower = [1, 2, 3]
        .into_iter()
        .find(|&i| i != st.leader && i != controller)
        .expect("a follower that is not the controller");
    let shrinks = "sum(kafka_server_replicamanager_isrshrinks_total)";
    let shrinks_before = prom.value(shrinks).unwrap_or(0.0);
    // Writes keep coming: a follower at the leader's end counts as caught up.
    let mut trickle = HistoryProducer::spawn(
        &c.bootstrap(),
        topic,
        3,
        c.dir.path(),
        &[
            "--acks=all",
            "--rate=50",
            "--timeout-ms=15000",
            "--producer=trickle",
        ],
    );
    trickle.wait_acks(30, 10, "the trickle's first acks");
    c.node(follower).pause();
    prom.wait_value(60, urp, |v| v > 0.0);
    c.node(follower).resume();
    prom.wait_value(60, urp, |v| v == 0.0);
    trickle.finish(60);
    prom.wait_value(30, shrinks, |v| v > shrinks_before);
    prom.wait_value(
        30,
        "sum(kafka_server_replicamanager_isrexpands_total)",
        |v| v > 0.0,
    );
}
