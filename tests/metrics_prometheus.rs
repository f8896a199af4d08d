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
//! - shardlog's own series: the Produce time parts as cumulative
//!   histograms (as many as Kafka's TotalTimeMs count; acks=all with RF 3
//!   spends remote time), per-shard DMA write and fdatasync histograms
//!   (the fdatasync count grows with a `flush.messages=1` topic's
//!   appends), segment recycles, and a client id over a tiny
//!   `producer_byte_rate` (kafka-configs) gets throttle time under its
//!   `client_id` label;
//! - METRICS.md §2's other series: followers' replication bytes in, a
//!   ZooKeeper-mode controller's constants, controller events timed,
//!   fdatasyncs as `LogFlushRateAndTimeMs`, request sizes, and a legacy
//!   client's records (kafka-python speaking Produce v2 and Fetch v2)
//!   counted as produce and fetch conversions;
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
use common::java::{kafka_tool, run_ok};
use common::replica_cluster::scenario::{produce, settings};
use common::replica_cluster::{HistoryProducer, ReplCluster, System};
use common::zookeeper::free_port;
use common::{run_py_script, venv_python_with};

/// `replica.lag.time.max.ms`: a stopped follower leaves the ISR soon.
const LAG_MS: u64 = 2_000;
/// A ZooKeeper session well past the lag: the ISR shrinks by the lag rule.
const SESSION_MS: u64 = 10_000;
/// The Kubernetes namespace and Strimzi cluster the scrape labels name.
const NAMESPACE: &str = "kafka";
const CLUSTER: &str = "my-cluster";

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
        // The labels Strimzi's PodMonitor and Prometheus Operator add, so
        // the dashboard's expressions select on them verbatim.
        let groups: String = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "      - targets: ['{t}']\n        labels: {{namespace: {NAMESPACE}, \
                     strimzi_io_cluster: {CLUSTER}, strimzi_io_name: {CLUSTER}-kafka, \
                     kubernetes_pod_name: {CLUSTER}-kafka-{i}, container: kafka}}\n"
                )
            })
            .collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: shardlog\n    metrics_path: /metrics\n    \
             static_configs:\n{groups}"
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
        let (head, body) = response.split_once("\r\n\r\n").unwrap_or(("", ""));
        // Larger answers (the scrape labels make them so) come chunked.
        let body = if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            dechunk(body)
        } else {
            body.to_owned()
        };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
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

/// An HTTP/1.1 chunked body, joined.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
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
    slow_and_surplus_connections_are_closed(addr);
}

/// A request head that never ends is closed by the broker (its read
/// timeout, 5 s), not held; past the 16 connections served at once, one
/// more is closed without an answer; once they are gone a scrape is
/// served again.
fn slow_and_surplus_connections_are_closed(addr: &str) {
    // Closed: end of stream (or a reset); still open: the read times out.
    let closed_by_broker = |s: &mut TcpStream| -> bool {
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut buf = [0u8; 256];
        match s.read(&mut buf) {
            Ok(n) => n == 0,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    };
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    assert!(
        closed_by_broker(&mut slow),
        "a head that never ends is closed by the broker"
    );
    let idle: Vec<TcpStream> = (0..16).map(|_| TcpStream::connect(addr).unwrap()).collect();
    let mut surplus = TcpStream::connect(addr).unwrap();
    let mut answer = String::new();
    let _ = surplus.write_all(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n");
    surplus
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let _ = surplus.read_to_string(&mut answer);
    assert!(
        answer.is_empty(),
        "the 17th connection is closed without an answer: {}",
        &answer[..answer.len().min(200)]
    );
    drop(idle);
    wait_for(
        30,
        "a scrape served once the idle connections are gone",
        || http(addr, "GET", "/metrics", "").filter(|r| r.starts_with("HTTP/1.1 200")),
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
    request_errors_and_fetchers(&prom, topic);
    consumer_lag(&c, &prom, topic, produced);
    group_counts(&prom);
    zookeeper_and_executors(&prom);
    request_histograms(&prom);
    storage_series(&c, &prom);
    section_2_series(&c, &prom);
    quota_throttles(&c, &prom);
    under_replicated(&mut c, &prom, topic);
    strimzi_dashboard(&prom);
    controller_stats(&mut c, &prom);
}

/// `ErrorsPerSec`: one code per Produce partition answered, so the
/// Produce errors add up to TotalProduceRequests; followers fetch without
/// errors. The followers' lag: one series per followed partition (3
/// partitions x 2 followers), 0 once they caught up.
fn request_errors_and_fetchers(prom: &Prometheus, topic: &str) {
    let errors = "sum(kafka_network_requestmetrics_errors_total{request=\"Produce\"})";
    let total = "sum(kafka_server_brokertopicmetrics_totalproducerequests_total{topic=\"\"})";
    wait_for(30, "Produce errors = produce partitions", || {
        let (e, t) = (prom.value(errors)?, prom.value(total)?);
        (e == t && t > 0.0).then_some(())
    });
    assert_eq!(
        prom.value(
            "sum(kafka_network_requestmetrics_errors_total{request=\"Produce\",error!=\"NONE\"})"
        )
        .unwrap_or(0.0),
        0.0,
        "every record was acked"
    );
    prom.wait_value(
        30,
        "sum(kafka_network_requestmetrics_errors_total{request=\"Fetch\",error=\"NONE\"})",
        |v| v > 0.0,
    );
    let lags = format!("kafka_server_fetcherlagmetrics_consumerlag{{topic=\"{topic}\"}}");
    let lags = wait_for(30, "6 caught-up followers", || {
        Some(prom.query(&lags)).filter(|l| l.len() == 6 && l.iter().all(|(_, v)| *v == 0.0))
    });
    assert!(
        lags.iter().all(|(m, _)| m["clientId"]
            .as_str()
            .is_some_and(|c| c.starts_with("ReplicaFetcherThread-"))),
        "{lags:?}"
    );
    assert_eq!(
        prom.value("count(kafka_server_replicafetchermanager_maxlag{clientId=\"Replica\"})"),
        Some(3.0)
    );
}

/// `GroupMetadataManager`: the one group, empty once its consumer left,
/// with an offset per partition.
fn group_counts(prom: &Prometheus) {
    let g = "kafka_coordinator_group_groupmetadatamanager";
    prom.wait_value(30, &format!("sum({g}_numgroupsempty)"), |v| v == 1.0);
    assert_eq!(prom.value(&format!("sum({g}_numgroups)")), Some(1.0));
    assert_eq!(prom.value(&format!("sum({g}_numoffsets)")), Some(3.0));
    assert_eq!(prom.value(&format!("sum({g}_numgroupsstable)")), Some(0.0));
}

/// The ZooKeeper client: requests timed, one SyncConnected per broker's
/// session, CONNECTED; every data shard busy some of the time and its
/// appends submitted as io_uring file writes.
fn zookeeper_and_executors(prom: &Prometheus) {
    assert_eq!(
        prom.value(
            "count(kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms_count_total > 0)"
        ),
        Some(3.0)
    );
    assert!(!prom
        .query("kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms{quantile=\"0.99\"}")
        .is_empty());
    assert_eq!(
        prom.value("min(kafka_server_sessionexpirelistener_zookeepersyncconnects_total)"),
        Some(1.0)
    );
    assert_eq!(
        prom.value("sum(kafka_server_sessionexpirelistener_zookeeperexpires_total)"),
        Some(0.0)
    );
    assert_eq!(
        prom.value("count(shardlog_zookeeper_session_state{state=\"CONNECTED\"})"),
        Some(3.0)
    );
    prom.wait_value(30, "min(shardlog_shard_busy_seconds_total)", |v| v > 0.0);
    prom.wait_value(30, "sum(shardlog_uring_file_writes_total)", |v| v > 0.0);
    let idle = prom.wait_value(
        30,
        "max(kafka_network_socketserver_networkprocessoravgidle_percent)",
        |v| (0.0..=1.0).contains(&v),
    );
    assert!(idle > 0.0, "an idle-most-of-the-time broker: {idle}");
}

/// Every expression of Strimzi's Kafka dashboard (0.45.2) that needs no
/// JVM or Kubernetes metric, with its template variables filled in as
/// Grafana would ("All" brokers, topics and partitions), returns data.
fn strimzi_dashboard(prom: &Prometheus) {
    let ns = format!("namespace=\"{NAMESPACE}\"");
    let cl = format!("strimzi_io_cluster=\"{CLUSTER}\"");
    let pn = format!("kubernetes_pod_name=~\"{CLUSTER}-kafka-.*\"");
    let sn = format!("strimzi_io_name=\"{CLUSTER}-kafka\"");
    let tp = "topic=~\".*\",topic!=\"\"";
    let rate = |name: &str| format!("sum(irate({name}{{{ns},{cl},{tp},{pn}}}[5m]))");
    let by_pod = |expr: String| format!("sum({expr}) by (kubernetes_pod_name)");
    let mut exprs = vec![
        format!("count(kafka_server_replicamanager_leadercount{{{ns},{cl}}})"),
        format!("sum(kafka_controller_kafkacontroller_activecontrollercount{{{ns},{cl}}})"),
        format!(
            "sum(irate(kafka_controller_controllerstats_uncleanleaderelections_total{{{ns},{cl}}}[5m]))"
        ),
        format!("sum(kafka_server_replicamanager_partitioncount{{{ns},{cl}}})"),
        format!("sum(kafka_server_replicamanager_underreplicatedpartitions{{{ns},{cl}}})"),
        format!("sum(kafka_cluster_partition_atminisr{{{ns},{cl}}})"),
        format!("sum(kafka_cluster_partition_underminisr{{{ns},{cl}}})"),
        format!("sum(kafka_controller_kafkacontroller_offlinepartitionscount{{{ns},{cl}}})"),
        by_pod(format!("process_open_fds{{{ns},{pn},container=\"kafka\"}}")),
        by_pod(format!(
            "kafka_network_socketserver_networkprocessoravgidle_percent{{{ns},{cl},{pn}}}*100"
        )),
        by_pod(format!(
            "kafka_server_kafkarequesthandlerpool_requesthandleravgidle_percent{{{ns},{cl},{pn}}}*100"
        )),
        by_pod(format!(
            "irate(kafka_server_kafkaserver_linux_disk_write_bytes{{{ns},{cl},{pn}}}[5m])"
        )),
        by_pod(format!(
            "irate(kafka_server_kafkaserver_linux_disk_read_bytes{{{ns},{cl},{pn}}}[5m])"
        )),
        format!(
            "sum(kafka_server_socket_server_metrics_connection_count{{{ns},{cl},{pn}}}) \
             by (kubernetes_pod_name, listener)"
        ),
        format!(
            "kafka_log_log_size{{{ns},{cl},{pn},topic=~\".*\",partition=~\".*\"}}"
        ),
        by_pod(format!(
            "kafka_server_zookeeperclientmetrics_zookeeperrequestlatencyms{{{ns},{pn},{sn}}}"
        )),
    ];
    for name in [
        "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_brokertopicmetrics_bytesout_total",
        "kafka_server_brokertopicmetrics_messagesin_total",
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
        "kafka_server_brokertopicmetrics_failedproducerequests_total",
        "kafka_server_brokertopicmetrics_totalfetchrequests_total",
        "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    ] {
        exprs.push(rate(name));
    }
    let empty: Vec<&String> = exprs.iter().filter(|e| prom.query(e).is_empty()).collect();
    assert!(
        empty.is_empty(),
        "dashboard expressions without data: {empty:#?}"
    );
    // The series of Strimzi's alert rules (METRICS.md §3), on every
    // broker; no log dir is offline here.
    for series in [
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_log_logmanager_offlinelogdirectorycount",
    ] {
        prom.wait_value(30, &format!("count({series})"), |v| v == 3.0);
    }
    assert_eq!(
        prom.value("sum(kafka_log_logmanager_offlinelogdirectorycount)"),
        Some(0.0)
    );
    prom.wait_value(
        30,
        "count(kafka_log_logmanager_logdirectoryoffline == 0)",
        |v| v >= 3.0,
    );
}

/// A broker's clean stop: the controller handles the BrokerChange
/// (`LeaderElectionRateAndTimeMs` counts it) and a partition whose only
/// replica was there is offline; no unclean election (it is off).
fn controller_stats(c: &mut ReplCluster, prom: &Prometheus) {
    let controller = c.controller();
    let single = "alone";
    c.create_topic(single, 3, 1, &[]);
    let victim = c.state(single, 0).leader;
    let victim = if victim == controller {
        // Another partition of the topic lives on another broker.
        (1..3)
            .map(|p| c.state(single, p).leader)
            .find(|&l| l != controller)
            .expect("a partition led outside the controller")
    } else {
        victim
    };
    let elections = "sum(kafka_controller_controllerstats_leaderelectionrateandtimems_count_total)";
    let before = prom.value(elections).unwrap_or(0.0);
    let offline = "sum(kafka_controller_kafkacontroller_offlinepartitionscount)";
    assert_eq!(prom.value(offline), Some(0.0));
    c.node(victim).stop();
    prom.wait_value(60, offline, |v| v > 0.0);
    prom.wait_value(30, elections, |v| v > before);
    assert_eq!(
        prom.value("sum(kafka_controller_controllerstats_uncleanleaderelections_total)"),
        Some(0.0)
    );
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
    // A consumer's fetches are RequestMetrics' FetchConsumer (a
    // follower's FetchFollower), with their times.
    for series in [
        "sum(kafka_network_requestmetrics_requests_total{request=\"FetchConsumer\"})",
        "sum(kafka_network_requestmetrics_totaltimems_count_total{request=\"FetchConsumer\"})",
    ] {
        prom.wait_value(30, series, |v| v > 0.0);
    }
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

/// The Produce time split as cumulative histograms: every part of every
/// Produce request counted (as many as Kafka's TotalTimeMs count),
/// with a `shard`-free `request`/`part`/`le` label set, and acks=all at
/// RF 3 waited for followers (remote time > 0).
fn request_histograms(prom: &Prometheus) {
    let h = "shardlog_request_time_seconds";
    let parts = prom.query(&format!("{h}_count{{request=\"Produce\"}}"));
    let names: std::collections::BTreeSet<&str> = parts
        .iter()
        .filter_map(|(m, _)| m["part"].as_str())
        .collect();
    for part in [
        "total",
        "requestqueue",
        "local",
        "remote",
        "responsequeue",
        "responsesend",
    ] {
        assert!(names.contains(part), "{part} in {names:?}");
    }
    wait_for(30, "histogram count = TotalTimeMs count", || {
        let ours = prom.value(&format!(
            "sum({h}_count{{request=\"Produce\",part=\"total\"}})"
        ))?;
        let kafka = prom.value(
            "sum(kafka_network_requestmetrics_totaltimems_count_total{request=\"Produce\"})",
        )?;
        (ours == kafka && ours > 0.0).then_some(())
    });
    let inf = prom.query(&format!(
        "{h}_bucket{{request=\"Produce\",part=\"total\",le=\"+Inf\"}}"
    ));
    assert_eq!(inf.len(), 3, "one +Inf bucket per broker: {inf:?}");
    let remote = prom
        .value(&format!(
            "sum({h}_sum{{request=\"Produce\",part=\"remote\"}})"
        ))
        .unwrap_or(0.0);
    assert!(remote > 0.0, "acks=all waited for followers: {remote}");
    assert!(!prom
        .query(&format!(
            "{h}_count{{request=\"FetchFollower\",part=\"remote\"}}"
        ))
        .is_empty());
}

/// Per-shard storage series: DMA writes timed, fdatasyncs timed (their
/// count grows while a `flush.messages=1` topic takes records), segment
/// recycles exported.
fn storage_series(c: &ReplCluster, prom: &Prometheus) {
    let shards = prom.query("shardlog_storage_dma_write_seconds_count");
    assert!(
        shards.len() >= 3 && shards.iter().all(|(m, _)| m["shard"].is_string()),
        "{shards:?}"
    );
    assert!(
        prom.value("sum(shardlog_storage_dma_write_seconds_count)")
            .unwrap_or(0.0)
            > 0.0
    );
    assert_eq!(
        prom.query("shardlog_storage_segment_recycles_total").len(),
        shards.len()
    );
    let fsyncs = "sum(shardlog_storage_fsync_seconds_count)";
    let before = prom.wait_value(30, fsyncs, |_| true);
    let topic = "flushed";
    c.create_topic(topic, 1, 3, &["flush.messages=1"]);
    let (r, _) = produce(c, topic, 0, "f", 20, &["--acks=all"]);
    assert_eq!(r["acked"], 20, "{r}");
    let after = prom.wait_value(30, fsyncs, |v| v > before);
    assert!(
        !prom
            .query("shardlog_storage_fsync_seconds_bucket{le=\"+Inf\"} > 0")
            .is_empty(),
        "fsyncs {before} -> {after}"
    );
}

/// METRICS.md §2's series beyond the dashboard's: followers appended
/// their leaders' bytes, every broker reports the ZooKeeper controller's
/// constants and its event queue's waits, the `flush.messages=1` topic's
/// fdatasyncs are `LogFlushRateAndTimeMs`, and a legacy client's 10
/// records (Produce v2, magic 1, acks=1 to a one-replica topic) are
/// up-converted on produce and down-converted again when it fetches them
/// (Fetch v2).
fn section_2_series(c: &ReplCluster, prom: &Prometheus) {
    let btm = "kafka_server_brokertopicmetrics";
    prom.wait_value(30, &format!("sum({btm}_replicationbytesin_total)"), |v| {
        v > 0.0
    });
    for (expr, want) in [
        (
            "count(kafka_controller_kafkacontroller_zkmigrationstate == 4)",
            3.0,
        ),
        (
            "sum(kafka_controller_kafkacontroller_fencedbrokercount)",
            0.0,
        ),
        (
            "count(kafka_server_kafkaserver_yammer_metrics_count > 100)",
            3.0,
        ),
        (
            "count(kafka_network_acceptor_acceptorblockedpercent_count_total)",
            3.0,
        ),
    ] {
        assert_eq!(prom.value(expr), Some(want), "{expr}");
    }
    let queue_time = "sum(kafka_controller_controllereventmanager_eventqueuetimems_count_total)";
    prom.wait_value(30, queue_time, |v| v > 0.0);
    let flushes = "sum(kafka_log_logflushstats_logflushrateandtimems_count_total)";
    prom.wait_value(30, flushes, |v| v > 0.0);
    let sizes =
        "kafka_network_requestmetrics_requestbytes{request=\"Produce\",quantile=\"0.99\"} > 0";
    assert!(!prom.query(sizes).is_empty());
    let topic = "legacy-client";
    c.create_topic(topic, 1, 1, &[]);
    let code = r#"
import sys, json
from kafka import KafkaConsumer, KafkaProducer
bootstrap, topic = sys.argv[1:3]
p = KafkaProducer(bootstrap_servers=bootstrap, api_version=(0, 10, 0), acks=1)
for i in range(10):
    p.send(topic, b"v%d" % i, partition=0).get(30)
p.close()
c = KafkaConsumer(topic, bootstrap_servers=bootstrap, api_version=(0, 10, 0),
                  auto_offset_reset="earliest", consumer_timeout_ms=5000)
print(json.dumps({"read": sum(1 for _ in c)}))
"#;
    let out = Command::new(venv_python_with(&["kafka"]))
        .args(["-c", code, &c.bootstrap(), topic])
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("\"read\": 10"),
        "{stdout}\n{stderr}"
    );
    let of_topic = |meter: &str| format!("sum({btm}_{meter}_total{{topic=\"{topic}\"}})");
    prom.wait_value(30, &of_topic("producemessageconversions"), |v| v == 10.0);
    prom.wait_value(30, &of_topic("fetchmessageconversions"), |v| v >= 10.0);
    let fetch_conversions =
        "sum(kafka_network_requestmetrics_messageconversionstimems_count_total{request=\"Fetch\"})";
    assert!(prom.value(fetch_conversions).unwrap_or(0.0) > 0.0);
}

/// A client id over a tiny `producer_byte_rate` (set by Kafka 3.9's
/// kafka-configs) is throttled, and its throttle time is exported under
/// its client id (the quota names no user: no `user` label).
fn quota_throttles(c: &ReplCluster, prom: &Prometheus) {
    let client = "tiny-quota";
    let mut cmd = kafka_tool("kafka.admin.ConfigCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap()]).args([
        "--alter",
        "--add-config",
        "producer_byte_rate=20000",
        "--entity-type",
        "clients",
        "--entity-name",
        client,
    ]);
    run_ok(&mut cmd, "kafka-configs");
    let topic = "quota-held";
    c.create_topic(topic, 1, 1, &[]);
    let r = run_py_script(
        &["confluent_kafka"],
        "quota_producer.py",
        &[
            c.bootstrap(),
            topic.into(),
            client.into(),
            "3".into(),
            "1024".into(),
        ],
    );
    assert!(r["throttle_events"].as_u64().unwrap_or(0) > 0, "{r}");
    let q = format!(
        "shardlog_quota_throttle_time_seconds_total{{quota=\"Produce\",client_id=\"{client}\"}}"
    );
    let series = wait_for(30, "the client's throttle time", || {
        Some(prom.query(&q)).filter(|s| s.len() == 1 && s[0].1 > 0.0)
    });
    assert!(series[0].0.get("user").is_none(), "{series:?}");
    assert!(
        prom.value(&format!(
            "sum(shardlog_quota_throttled_responses_total{{client_id=\"{client}\"}})"
        ))
        .unwrap_or(0.0)
            > 0.0
    );
    assert!(prom
        .query("shardlog_quota_throttle_time_seconds_total{client_id!=\"tiny-quota\"}")
        .is_empty());
}
