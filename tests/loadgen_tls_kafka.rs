//! The load generator over TLS against Apache Kafka 3.9 with an SSL
//! listener (ZooKeeper mode, from the cached jars as the other Kafka-peer
//! tests start it): keys made at test time by tests/common/tls.rs (a CA,
//! a PKCS12 broker keystore written by the JDK's `keytool`, the CA as PEM
//! for the client, another CA), `shardlog loadgen --security-protocol SSL --ssl-ca-location`
//! produces with acks=all while its consumer checks every record comes back
//! once and in order, then `--consume-only --verify-records` reads the topic
//! again over TLS. A client that trusts another CA, and a PLAINTEXT client
//! on the SSL port, fail with the reason instead of hanging.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::loadgen::{check_point_verified, run_loadgen_with_context};
use common::tls::{Store, Tls, PASSWORD};
use common::zookeeper::{free_port, ZkServer};

/// One Kafka 3.9 broker: PLAINTEXT (inter-broker) and SSL listeners.
struct Kafka {
    child: Child,
    dir: PathBuf,
    ssl_addr: String,
}

impl Kafka {
    /// `ks`: the broker's PKCS12 keystore (password [`PASSWORD`]).
    fn start(dir: &Path, zk: &str, ks: &Path) -> Kafka {
        let (plain, ssl) = (free_port(), free_port());
        let props = format!(
            "broker.id=0\nzookeeper.connect={zk}\nlog.dirs={logs}\n\
             listeners=PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ssl}\n\
             ssl.keystore.type=PKCS12\nssl.keystore.location={ks}\n\
             ssl.keystore.password={pw}\nssl.key.password={pw}\n\
             offsets.topic.replication.factor=1\ntransaction.state.log.replication.factor=1\n\
             transaction.state.log.min.isr=1\ngroup.initial.rebalance.delay.ms=0\n\
             num.network.threads=2\nnum.io.threads=2\nbackground.threads=2\n",
            logs = dir.join("logs").display(),
            ks = ks.display(),
            pw = PASSWORD,
        );
        std::fs::write(dir.join("server.properties"), props).unwrap();
        std::fs::write(
            dir.join("log4j.properties"),
            format!(
                "log4j.rootLogger=INFO, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n\
                 log4j.appender.file.File={}\nlog4j.appender.file.layout=org.apache.log4j.PatternLayout\n\
                 log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n",
                dir.join("server.log").display()
            ),
        )
        .unwrap();
        let out = std::fs::File::create(dir.join("kafka.out")).unwrap();
        let child = Command::new("java")
            .args([
                "-Xmx384m",
                "-Xms64m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
            ])
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                dir.join("log4j.properties").display()
            ))
            .args(["-cp", &common::java::jar_class_path(), "kafka.Kafka"])
            .arg(dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .expect("java (Kafka): run `bash tests/run.sh`");
        let mut k = Kafka {
            child,
            dir: dir.to_path_buf(),
            ssl_addr: format!("127.0.0.1:{ssl}"),
        };
        let start = Instant::now();
        while !k.log().contains("started (kafka.server.KafkaServer)") {
            assert!(
                k.child.try_wait().unwrap().is_none(),
                "Kafka exited:\n{}",
                k.log()
            );
            assert!(
                start.elapsed() < Duration::from_secs(180),
                "Kafka did not start:\n{}",
                k.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        k
    }

    fn log(&self) -> String {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        let log = read("server.log");
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        format!(
            "kafka.out:\n{}\nserver.log (tail):\n{}",
            read("kafka.out"),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn loadgen_fails(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_shardlog"))
        .arg("loadgen")
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success(), "loadgen {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn loadgen_produces_and_consumes_over_tls_with_kafka() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let keys = Tls::make(&["broker-1"]);
    let (_, ks) = keys.keystore("broker-1", Store::Pkcs12Keytool);
    let (ca, other_ca) = (keys.ca_pem(), keys.other_ca_pem());
    std::fs::create_dir_all(dir.path().join("logs")).unwrap();
    let zk = ZkServer::standalone();
    let kafka = Kafka::start(dir.path(), &zk.address(), &ks);
    let ca = ca.to_str().unwrap();
    let out = dir.path().join("produce");
    let tls = [
        "--bootstrap",
        &kafka.ssl_addr,
        "--security-protocol",
        "SSL",
        "--ssl-ca-location",
        ca,
    ];
    let mut args = tls.to_vec();
    args.extend([
        "--topic",
        "tls",
        "--partitions",
        "3",
        "--message-size",
        "700",
        "--messages",
        "20000",
        "--consumers",
        "1",
        "--acks",
        "all",
        "--linger-ms",
        "5",
        "--out",
        out.to_str().unwrap(),
    ]);
    run_loadgen_with_context(&args, || kafka.log());
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    check_point_verified(&json["points"][0], 20000);

    let again = dir.path().join("consume");
    let mut args = tls.to_vec();
    args.extend([
        "--topic",
        "tls",
        "--consume-only",
        "--verify-records",
        "--out",
        again.to_str().unwrap(),
    ]);
    run_loadgen_with_context(&args, || kafka.log());
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(again.join("consume.json")).unwrap())
            .unwrap();
    assert_eq!(c["records"], 20000, "{c}");
    assert_eq!(c["crc_errors"], 0, "{c}");
    assert_eq!(c["offset_gaps"], 0, "{c}");
    assert_eq!(c["caught_up"], true, "{c}");

    // Another CA: the broker's certificate is refused, with the reason.
    let err = loadgen_fails(&[
        "--bootstrap",
        &kafka.ssl_addr,
        "--security-protocol",
        "SSL",
        "--ssl-ca-location",
        other_ca.to_str().unwrap(),
        "--topic",
        "tls",
        "--consume-only",
    ]);
    assert!(err.contains("TLS handshake with"), "{err}");
    assert!(err.contains("invalid peer certificate"), "{err}");
    // PLAINTEXT on the SSL port: Kafka's SSL engine drops the connection.
    let err = loadgen_fails(&[
        "--bootstrap",
        &kafka.ssl_addr,
        "--topic",
        "tls",
        "--consume-only",
    ]);
    assert!(err.contains("ApiVersions with"), "{err}");
}
