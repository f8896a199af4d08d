//! Test helpers: start the real `shardlog` binary on a free port with a
//! temporary log dir, wait for its readiness line, speak raw Kafka frames,
//! find the external clients (kcat, the Python venv), stop the broker.
#![allow(dead_code)]

pub mod cluster;
pub mod faultfs;
pub mod link;
pub mod txn;
pub mod zookeeper;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, RequestHeader};
use kafka_protocol::protocol::{encode_request_header_into_buffer, Encodable, StrBytes};

/// Guard against a broker that never starts (not a speed assertion).
const STARTUP_LIMIT: Duration = Duration::from_secs(60);

/// The broker binary: this build's, or `SHARDLOG_TEST_BROKER_BIN` (to run
/// a test against another build, e.g. to show a fixed defect on the
/// build before the fix).
pub fn broker_bin() -> PathBuf {
    std::env::var_os("SHARDLOG_TEST_BROKER_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_shardlog")),
        PathBuf::from,
    )
}

pub struct Broker {
    child: Option<Child>,
    pub host: String,
    pub port: u16,
    pub broker_id: i32,
    pub cluster_id: String,
    pub log_dir: tempfile::TempDir,
    stderr: mpsc::Receiver<String>,
}

impl Broker {
    /// Start with 2 data shards, broker.id=0, 127.0.0.1 on a free port.
    pub fn start() -> Broker {
        Broker::start_with(&[])
    }

    pub fn start_with(overrides: &[&str]) -> Broker {
        Broker::start_in(new_log_dir(), overrides)
    }

    /// Start on an existing log dir (a restart after [`Broker::stop_keeping_dir`]).
    pub fn start_in(log_dir: tempfile::TempDir, overrides: &[&str]) -> Broker {
        Broker::start_logging(log_dir, overrides, None)
    }

    /// Like [`Broker::start_in`] with `RUST_LOG` set to `rust_log` (the
    /// test's own `RUST_LOG`, or `warn`, when `None`): for a test that
    /// reads the broker's log lines.
    pub fn start_logging(
        log_dir: tempfile::TempDir,
        overrides: &[&str],
        rust_log: Option<&str>,
    ) -> Broker {
        let rust_log = rust_log.map_or_else(
            || std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            str::to_owned,
        );
        let mut args: Vec<String> = vec!["broker".into()];
        let base = [
            "listeners=PLAINTEXT://127.0.0.1:0".to_string(),
            format!("log.dirs={}", log_dir.path().display()),
            "shardlog.shards=2".into(),
            "broker.id=0".into(),
        ];
        for o in base
            .iter()
            .map(String::as_str)
            .chain(overrides.iter().copied())
        {
            args.push("--override".into());
            args.push(o.to_owned());
        }
        let mut child = Command::new(broker_bin())
            .args(&args)
            .env("RUST_LOG", rust_log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shardlog");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        let pid = child.id();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("SHARDLOG_TEST_ECHO").is_some() {
                    eprintln!("[broker pid {pid}] {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut broker = Broker {
            child: Some(child),
            host: String::new(),
            port: 0,
            broker_id: -2,
            cluster_id: String::new(),
            log_dir,
            stderr: rx,
        };
        broker.wait_ready();
        broker
    }

    fn wait_ready(&mut self) {
        loop {
            let line = match self.stderr.recv_timeout(STARTUP_LIMIT) {
                Ok(line) => line,
                Err(e) => panic!("broker did not print its readiness line: {e}"),
            };
            // "shardlog: listening on 127.0.0.1:PORT with N shards (broker.id=B, cluster.id=C)"
            let Some(rest) = line.strip_prefix("shardlog: listening on ") else {
                continue;
            };
            let (addr, rest) = rest.split_once(' ').expect("addr");
            let (host, port) = addr.rsplit_once(':').expect("host:port");
            self.host = host.to_owned();
            self.port = port.parse().expect("port");
            let broker_id = rest.split("broker.id=").nth(1).expect("broker.id");
            self.broker_id = broker_id.split(',').next().unwrap().parse().expect("id");
            let cluster = rest.split("cluster.id=").nth(1).expect("cluster.id");
            self.cluster_id = cluster.trim_end_matches(')').to_owned();
            return;
        }
    }

    pub fn bootstrap(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    pub fn connect(&self) -> TcpStream {
        let s = TcpStream::connect(self.bootstrap()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// The process id while it runs (for SIGSTOP / SIGCONT).
    pub fn pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Wait up to `within` for the process to exit on its own; its exit
    /// status, or `None` while it still runs.
    pub fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = std::time::Instant::now() + within;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if std::time::Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM and wait for exit.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as i32;
        // SAFETY: plain kill(2) on our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        let status = child.wait().expect("wait");
        if !status.success() {
            // The reason is in the broker's own output: show it with the
            // test's failure. The reader thread ends at the pipe's EOF;
            // the timeout only guards a pipe some child still holds.
            while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
                eprintln!("[broker {status}] {line}");
            }
        }
        status
    }

    /// SIGTERM, wait for exit, and hand back the log dir for a restart.
    pub fn stop_keeping_dir(mut self) -> (ExitStatus, tempfile::TempDir) {
        let log_dir = std::mem::replace(&mut self.log_dir, new_log_dir());
        (self.stop(), log_dir)
    }

    /// SIGKILL (`kill -9`), wait, and hand back the log dir for a restart.
    pub fn kill_keeping_dir(mut self) -> tempfile::TempDir {
        let log_dir = std::mem::replace(&mut self.log_dir, new_log_dir());
        // Drop is Child::kill, i.e. SIGKILL, then wait.
        drop(self);
        log_dir
    }

    /// Broker log lines printed so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }

    /// SIGTERM, wait for exit, and return every stderr line printed after
    /// the readiness line (including what the broker prints at shutdown).
    pub fn stop_collect(self) -> (ExitStatus, Vec<String>) {
        let stopped = self.stop_with_logs();
        (stopped.status, stopped.log_lines)
    }

    /// Like [`Broker::stop_keeping_dir`], and also return every stderr line
    /// printed after the readiness line.
    pub fn stop_with_logs(mut self) -> Stopped {
        let log_dir = std::mem::replace(&mut self.log_dir, new_log_dir());
        let stderr = std::mem::replace(&mut self.stderr, mpsc::channel().1);
        let status = self.stop();
        // The reader thread ends at EOF once the process is gone; the
        // limit only guards against a stuck pipe.
        let mut log_lines = Vec::new();
        while let Ok(line) = stderr.recv_timeout(STARTUP_LIMIT) {
            log_lines.push(line);
        }
        Stopped {
            status,
            log_lines,
            log_dir,
        }
    }
}

/// What [`Broker::stop_with_logs`] leaves behind.
pub struct Stopped {
    pub status: ExitStatus,
    pub log_lines: Vec<String>,
    pub log_dir: tempfile::TempDir,
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // A failing test shows what the broker said: the reason is often
        // there (a partition that could not open, a shard that stopped).
        if std::thread::panicking() {
            for line in self.stderr.try_iter() {
                eprintln!("[broker {}] {line}", self.port);
            }
        }
    }
}

/// A fresh log dir under target/ rather than /tmp: log dirs need
/// O_DIRECT, which a tmpfs /tmp may not offer.
/// A broker's log line without its ANSI colours (tracing's fmt layer
/// colours field names even into a pipe).
pub fn plain_log_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The replica fetcher's lines a broker logged since the last call.
pub fn fetcher_lines(broker: &Broker) -> Vec<String> {
    broker
        .log_lines()
        .iter()
        .map(|l| plain_log_line(l))
        .filter(|l| l.contains("shardlog::replication::fetcher"))
        .collect()
}

/// Partition numbers of `topic` whose folder is in log dir `dir`.
pub fn partitions_in(dir: &std::path::Path, topic: &str) -> Vec<i32> {
    let mut v: Vec<i32> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix(&format!("{topic}-"))?.parse().ok()
        })
        .collect();
    v.sort_unstable();
    v
}

pub fn new_log_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp log dir")
}

/// Encode a request frame (size prefix + header + body).
pub fn request_frame<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Vec<u8> {
    request_frame_as(TEST_CLIENT_ID, api_key, version, correlation_id, body)
}

/// The client id of [`request_frame`] and of a [`Conn`] by default.
pub const TEST_CLIENT_ID: &str = "shardlog-test";

/// [`request_frame`] with another client id.
pub fn request_frame_as<T: Encodable>(
    client_id: &str,
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = api_key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_string(client_id.to_owned()));
    let mut buf = BytesMut::new();
    encode_request_header_into_buffer(&mut buf, &header).expect("header");
    body.encode(&mut buf, version).expect("body");
    let mut frame = Vec::with_capacity(buf.len() + 4);
    frame.put_i32(buf.len() as i32);
    frame.extend_from_slice(&buf);
    frame
}

/// Read one response frame body (after the size prefix); `None` on EOF.
pub fn read_frame(stream: &mut impl Read) -> Option<Bytes> {
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).ok()?;
    let size = i32::from_be_bytes(size);
    assert!(size >= 4, "response size {size}");
    let mut body = vec![0u8; size as usize];
    stream.read_exact(&mut body).ok()?;
    Some(Bytes::from(body))
}

/// Send one frame and read one response.
pub fn round_trip(stream: &mut TcpStream, frame: &[u8]) -> Bytes {
    stream.write_all(frame).expect("write");
    read_frame(stream).expect("response")
}

/// One request encoded with the Kafka 3.9 codec (`kafka-protocol` 0.15.1,
/// for versions Kafka 4 dropped) and its answer; the headers' versions
/// are the 3.9 codec's for `api_key` at `version`.
pub fn call39<Q, R>(stream: &mut TcpStream, api_key: i16, version: i16, req: &Q) -> R
where
    Q: kafka_protocol_39::protocol::Encodable,
    R: kafka_protocol_39::protocol::Decodable,
{
    let key = kafka_protocol_39::messages::ApiKey::try_from(api_key).expect("a 3.9 api key");
    let mut buf = BytesMut::new();
    buf.put_i16(api_key);
    buf.put_i16(version);
    buf.put_i32(7);
    buf.put_i16(4);
    buf.put_slice(b"test");
    if key.request_header_version(version) >= 2 {
        buf.put_u8(0); // no tagged fields
    }
    req.encode(&mut buf, version).expect("encode");
    let mut frame = Vec::with_capacity(buf.len() + 4);
    frame.put_i32(buf.len() as i32);
    frame.extend_from_slice(&buf);
    let mut answer = round_trip(stream, &frame);
    assert_eq!(bytes::Buf::get_i32(&mut answer), 7, "correlation id");
    if key.response_header_version(version) >= 1 {
        assert_eq!(
            bytes::Buf::get_u8(&mut answer),
            0,
            "no tagged header fields"
        );
    }
    R::decode(&mut answer, version).expect("decode")
}

/// The test venv's python (tests/run.sh creates it).
pub fn venv_python() -> PathBuf {
    let venv = std::env::var_os("SHARDLOG_TEST_VENV")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/shardlog/test-venv"))
        })
        .expect("HOME or SHARDLOG_TEST_VENV");
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import confluent_kafka, kafka"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "Python venv with confluent-kafka and kafka-python missing at {}: run `bash tests/run.sh` \
         (it creates the venv: python3 -m venv + pip install confluent-kafka kafka-python)",
        venv.display()
    );
    python
}

/// kcat on PATH.
pub fn kcat() -> PathBuf {
    let ok = Command::new("kcat")
        .arg("-V")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        ok,
        "kcat missing: run `bash tests/run.sh` (apt-get install -y --no-install-recommends kcat)"
    );
    PathBuf::from("kcat")
}

/// Run a Python snippet in the venv with `BOOTSTRAP` set; return stdout.
pub fn run_python(broker: &Broker, code: &str) -> String {
    let out = Command::new(venv_python())
        .args(["-c", code])
        .env("BOOTSTRAP", broker.bootstrap())
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed ({}): {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}

// ---------------------------------------------------------------------------
// Python client scripts (tests/py/*.py)
// ---------------------------------------------------------------------------

/// The venv python, after checking that `modules` import (each a Python
/// module name, e.g. "aiokafka"); fails naming the install step otherwise.
pub fn venv_python_with(modules: &[&str]) -> PathBuf {
    let python = venv_python();
    for module in modules {
        let ok = Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "Python module {module} missing from the test venv ({}): run `bash tests/run.sh` \
             (it pip-installs confluent-kafka, kafka-python and aiokafka when missing)",
            python.display()
        );
    }
    python
}

/// Run `tests/py/<script>` with `args` in the venv (after checking that
/// `modules` import) and parse the JSON object it prints on its last
/// stdout line. Fails the test with the script's output if it exits non-zero.
/// tests/py/cluster_admin.py with `args` (confluent-kafka's and
/// kafka-python's admin clients); the JSON object it prints last.
pub fn cluster_admin(args: &[&str]) -> serde_json::Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    run_py_script(&["confluent_kafka", "kafka"], "cluster_admin.py", &args)
}

pub fn run_py_script(modules: &[&str], script: &str, args: &[String]) -> serde_json::Value {
    let python = venv_python_with(modules);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = Command::new(python)
        .arg(&path)
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .output()
        .expect("run python script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{script} {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{script}: last line is not JSON ({e}):\n{stdout}\n{stderr}"))
}

/// Arguments of the tests/py/*_roundtrip.py scripts.
pub struct RoundTrip<'a> {
    pub topic: &'a str,
    pub count: u64,
    pub partitions: i32,
    pub size: usize,
}

impl RoundTrip<'_> {
    /// Command line for `mode` = produce | consume | both.
    pub fn args(&self, broker: &Broker, mode: &str) -> Vec<String> {
        vec![
            broker.bootstrap(),
            self.topic.to_owned(),
            format!("--count={}", self.count),
            format!("--partitions={}", self.partitions),
            format!("--size={}", self.size),
            format!("--mode={mode}"),
        ]
    }
}

/// The "produce" part of a round-trip report: every message delivered.
pub fn assert_all_delivered(report: &serde_json::Value, count: u64) {
    let produce = &report["produce"];
    assert_eq!(produce["delivered"], count, "producer report: {produce}");
    assert_eq!(produce["delivery_errors"], 0, "producer report: {produce}");
}

/// The "consume" part of a round-trip report: every message read back
/// exactly once, offsets contiguous from 0 in every partition, each in its
/// partition (seq % partitions), produce order kept per partition, bytes
/// intact, no client errors.
pub fn assert_all_consumed(report: &serde_json::Value, count: u64, partitions: i32) {
    use serde_json::Value;
    let consume = &report["consume"];
    let summary = format!("consumer report: {consume}");
    assert_eq!(consume["consumed"], count, "{summary}");
    assert_eq!(consume["missing"], 0, "{summary}");
    assert_eq!(consume["duplicates"], 0, "{summary}");
    assert_eq!(consume["unknown"], 0, "{summary}");
    assert_eq!(consume["offset_gaps"], Value::Array(vec![]), "{summary}");
    assert_eq!(consume["bad_payloads"], Value::Array(vec![]), "{summary}");
    assert_eq!(consume["wrong_partition"], 0, "{summary}");
    assert_eq!(consume["out_of_order"], 0, "{summary}");
    assert_eq!(consume["errors"], Value::Array(vec![]), "{summary}");
    let n = partitions as u64;
    let per_partition: Vec<u64> = (0..n).map(|p| (count + n - 1 - p) / n).collect();
    assert_eq!(
        consume["per_partition"],
        serde_json::json!(per_partition),
        "{summary}"
    );
}

pub fn assert_complete_round_trip(report: &serde_json::Value, count: u64, partitions: i32) {
    assert_all_delivered(report, count);
    assert_all_consumed(report, count, partitions);
}

// ---------------------------------------------------------------------------
// Raw protocol client (kafka-protocol types over a blocking TcpStream)
// ---------------------------------------------------------------------------

use kafka_protocol::messages::{
    create_topics_request::{CreatableTopic, CreatableTopicConfig},
    fetch_request::{FetchPartition, FetchTopic},
    fetch_response::PartitionData,
    list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic},
    list_offsets_response::ListOffsetsPartitionResponse,
    metadata_request::MetadataRequestTopic,
    produce_request::{PartitionProduceData, TopicProduceData},
    produce_response::PartitionProduceResponse,
    ApiVersionsRequest, BrokerId, CreateTopicsRequest, FetchRequest, ListOffsetsRequest,
    MetadataRequest, MetadataResponse, ProduceRequest, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Decodable, Request};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

/// Versions the raw helpers speak: inside the ranges the broker serves
/// (Produce 3–10, Fetch 4–16, ListOffsets 1–8, Metadata 0–13) and the first
/// flexible (compact, tagged) version of each, as current clients send.
pub const PRODUCE_VERSION: i16 = 9;
/// v12: topics by name (v13+ switch to topic ids).
pub const FETCH_VERSION: i16 = 12;
/// v7: adds MAX_TIMESTAMP (-3), KIP-734.
pub const LIST_OFFSETS_VERSION: i16 = 7;
/// v10: topic ids in the response.
pub const METADATA_VERSION: i16 = 12;

/// Kafka error codes the data-path tests expect.
pub mod error_code {
    pub const NONE: i16 = 0;
    pub const OFFSET_OUT_OF_RANGE: i16 = 1;
    pub const CORRUPT_MESSAGE: i16 = 2;
    pub const MESSAGE_TOO_LARGE: i16 = 10;
    pub const RECORD_LIST_TOO_LARGE: i16 = 18;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
}

/// ListOffsets special timestamps.
pub const LATEST_TIMESTAMP: i64 = -1;
pub const EARLIEST_TIMESTAMP: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;

/// One connection speaking typed requests, with correlation ids checked.
pub struct Conn {
    pub stream: TcpStream,
    next_correlation_id: i32,
    client_id: String,
}

impl Conn {
    pub fn open(broker: &Broker) -> Conn {
        Conn {
            stream: broker.connect(),
            next_correlation_id: 1,
            client_id: TEST_CLIENT_ID.to_owned(),
        }
    }

    /// The same connection sending `client_id` in its request headers.
    pub fn with_client_id(mut self, client_id: &str) -> Conn {
        self.client_id = client_id.to_owned();
        self
    }

    /// A connection to any Kafka-protocol broker at `addr` (host:port),
    /// e.g. the Apache Kafka peer of the differential tests.
    pub fn open_addr(addr: &str) -> Conn {
        let stream = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.set_nodelay(true).unwrap();
        Conn {
            stream,
            next_correlation_id: 1,
            client_id: TEST_CLIENT_ID.to_owned(),
        }
    }

    /// Send a request; returns its correlation id.
    pub fn send<Q: Request>(&mut self, version: i16, req: &Q) -> i32 {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let key = ApiKey::try_from(Q::KEY).expect("known api key");
        let frame = request_frame_as(&self.client_id, key, version, correlation_id, req);
        self.stream.write_all(&frame).expect("write request");
        correlation_id
    }

    /// Read the response to `correlation_id`; `None` if the broker closed
    /// the connection.
    pub fn try_recv<Q: Request>(
        &mut self,
        version: i16,
        correlation_id: i32,
    ) -> Option<Q::Response> {
        let mut body = read_frame(&mut self.stream)?;
        let key = ApiKey::try_from(Q::KEY).expect("known api key");
        let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .expect("response header");
        assert_eq!(
            header.correlation_id, correlation_id,
            "responses out of order"
        );
        let resp = Q::Response::decode(&mut body, version)
            .unwrap_or_else(|e| panic!("decode {key:?} v{version} response: {e}"));
        assert!(
            body.is_empty(),
            "{} trailing bytes after {key:?} v{version}",
            body.len()
        );
        Some(resp)
    }

    pub fn recv<Q: Request>(&mut self, version: i16, correlation_id: i32) -> Q::Response {
        self.try_recv::<Q>(version, correlation_id)
            .expect("broker closed the connection instead of answering")
    }

    pub fn call<Q: Request>(&mut self, version: i16, req: &Q) -> Q::Response {
        let correlation_id = self.send(version, req);
        self.recv::<Q>(version, correlation_id)
    }

    /// Highest version of `Q` both the broker and the kafka-protocol crate
    /// speak, at most `max` (ApiVersions v3).
    pub fn negotiate<Q: Request>(&mut self, max: i16) -> i16 {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("shardlog-test"))
            .with_client_software_version(StrBytes::from_static_str("0"));
        let resp = self.call(3, &req);
        assert_eq!(resp.error_code, 0, "ApiVersions error");
        let range = resp
            .api_keys
            .iter()
            .find(|k| k.api_key == Q::KEY)
            .unwrap_or_else(|| panic!("broker does not advertise API key {}", Q::KEY));
        range.max_version.min(max)
    }

    /// Produce one encoded batch (or several concatenated) to one partition.
    pub fn produce(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
    ) -> PartitionProduceResponse {
        self.produce_as(topic, partition, records, acks, None)
    }

    /// [`Conn::produce`] naming the request's transactional id
    /// (transactional records need one).
    pub fn produce_as(
        &mut self,
        topic: &str,
        partition: i32,
        records: Bytes,
        acks: i16,
        transactional_id: Option<&str>,
    ) -> PartitionProduceResponse {
        let req = produce_request(topic, partition, records, acks).with_transactional_id(
            transactional_id.map(|t| {
                kafka_protocol::messages::TransactionalId(StrBytes::from_string(t.into()))
            }),
        );
        let resp = self.call(PRODUCE_VERSION, &req);
        let [topic_resp] = &resp.responses[..] else {
            panic!("one topic expected in {resp:?}");
        };
        let [part] = &topic_resp.partition_responses[..] else {
            panic!("one partition expected in {resp:?}");
        };
        assert_eq!(part.index, partition);
        part.clone()
    }

    /// One Fetch of one partition (no fetch session: session_id 0, epoch -1).
    pub fn fetch(&mut self, spec: &FetchSpec) -> PartitionData {
        let correlation_id = self.send(FETCH_VERSION, &spec.request());
        self.recv_fetch(correlation_id, spec)
    }

    /// The response to a Fetch sent with `send(FETCH_VERSION, &spec.request())`.
    pub fn recv_fetch(&mut self, correlation_id: i32, spec: &FetchSpec) -> PartitionData {
        let resp = self.recv::<FetchRequest>(FETCH_VERSION, correlation_id);
        assert_eq!(resp.error_code, 0, "top-level fetch error in {resp:?}");
        let [topic] = &resp.responses[..] else {
            panic!("one topic expected, got {} topics", resp.responses.len());
        };
        assert_eq!(topic.topic.0.as_str(), spec.topic);
        let [part] = &topic.partitions[..] else {
            panic!("one partition expected, got {}", topic.partitions.len());
        };
        assert_eq!(part.partition_index, spec.partition);
        part.clone()
    }

    /// Fetch `[from, hw)` of a partition: every whole batch, in order.
    pub fn fetch_to_high_watermark(
        &mut self,
        topic: &str,
        partition: i32,
        from: i64,
    ) -> Vec<Bytes> {
        let mut spec = FetchSpec::new(topic, partition, from);
        spec.max_wait_ms = 100;
        let mut batches = Vec::new();
        loop {
            let part = self.fetch(&spec);
            assert_eq!(
                part.error_code, 0,
                "fetch at {}: {part:?}",
                spec.fetch_offset
            );
            if spec.fetch_offset >= part.high_watermark {
                return batches;
            }
            let got = whole_batches(part.records.as_ref());
            assert!(
                !got.is_empty(),
                "fetch at {} below hw {} returned no whole batch (KIP-74)",
                spec.fetch_offset,
                part.high_watermark
            );
            for batch in got {
                let next = batch_last_offset(&batch) + 1;
                // A batch may start before the fetch offset (Kafka returns
                // the whole batch holding it); it must still move us on.
                assert!(next > spec.fetch_offset, "batch ends before fetch offset");
                spec.fetch_offset = next;
                batches.push(batch);
            }
        }
    }

    pub fn list_offset(
        &mut self,
        topic: &str,
        partition: i32,
        timestamp: i64,
    ) -> ListOffsetsPartitionResponse {
        let req = ListOffsetsRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic_name(topic))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(partition)
                    .with_current_leader_epoch(-1)
                    .with_timestamp(timestamp)])]);
        let resp = self.call(LIST_OFFSETS_VERSION, &req);
        let [t] = &resp.topics[..] else {
            panic!("one topic expected in {resp:?}");
        };
        let [p] = &t.partitions[..] else {
            panic!("one partition expected in {resp:?}");
        };
        p.clone()
    }

    /// Metadata for `topics` (`None` = all topics), no auto-creation.
    pub fn metadata(&mut self, topics: Option<&[&str]>) -> MetadataResponse {
        let req = MetadataRequest::default()
            .with_allow_auto_topic_creation(false)
            .with_topics(topics.map(|names| {
                names
                    .iter()
                    .map(|n| MetadataRequestTopic::default().with_name(Some(topic_name(n))))
                    .collect()
            }));
        self.call(METADATA_VERSION, &req)
    }

    /// Create a topic with CreateTopics (at the highest version both sides
    /// speak, ≤ 7) and wait until Metadata shows every partition with a
    /// leader. Panics on any error but TOPIC_ALREADY_EXISTS.
    pub fn create_topic(&mut self, topic: &str, partitions: i32, configs: &[(&str, &str)]) {
        let version = self.negotiate::<CreateTopicsRequest>(7);
        let configs = configs
            .iter()
            .map(|(k, v)| {
                CreatableTopicConfig::default()
                    .with_name(StrBytes::from_string(k.to_string()))
                    .with_value(Some(StrBytes::from_string(v.to_string())))
            })
            .collect();
        let req = CreateTopicsRequest::default()
            .with_timeout_ms(30_000)
            .with_topics(vec![CreatableTopic::default()
                .with_name(topic_name(topic))
                .with_num_partitions(partitions)
                .with_replication_factor(1)
                .with_configs(configs)]);
        let resp = self.call(version, &req);
        let result = &resp.topics[0];
        assert!(
            [error_code::NONE, error_code::TOPIC_ALREADY_EXISTS].contains(&result.error_code),
            "CreateTopics {topic}: {result:?}"
        );
        self.wait_for_leaders(topic, partitions);
    }

    /// Topic creation completes asynchronously (controller → shards), as
    /// in Kafka; poll Metadata until every partition has a leader.
    pub fn wait_for_leaders(&mut self, topic: &str, partitions: i32) {
        let deadline = std::time::Instant::now() + STARTUP_LIMIT;
        loop {
            let md = self.metadata(Some(&[topic]));
            let ready = md.topics.first().is_some_and(|t| {
                t.error_code == 0
                    && t.partitions.len() == partitions as usize
                    && t.partitions
                        .iter()
                        .all(|p| p.error_code == 0 && p.leader_id.0 >= 0)
            });
            if ready {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "topic {topic} never got {partitions} partitions with leaders: {md:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The knobs of a one-partition Fetch.
#[derive(Debug, Clone)]
pub struct FetchSpec {
    pub topic: String,
    pub partition: i32,
    pub fetch_offset: i64,
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub max_bytes: i32,
    pub partition_max_bytes: i32,
    /// 0 = read_uncommitted, 1 = read_committed.
    pub isolation_level: i8,
}

impl FetchSpec {
    pub fn new(topic: &str, partition: i32, fetch_offset: i64) -> FetchSpec {
        FetchSpec {
            topic: topic.to_owned(),
            partition,
            fetch_offset,
            max_wait_ms: 500,
            min_bytes: 1,
            max_bytes: 8 << 20,
            partition_max_bytes: 1 << 20,
            isolation_level: 0,
        }
    }

    pub fn request(&self) -> FetchRequest {
        FetchRequest::default()
            .with_replica_id(BrokerId(-1))
            .with_max_wait_ms(self.max_wait_ms)
            .with_min_bytes(self.min_bytes)
            .with_max_bytes(self.max_bytes)
            .with_isolation_level(self.isolation_level)
            .with_session_id(0)
            .with_session_epoch(-1)
            .with_topics(vec![FetchTopic::default()
                .with_topic(topic_name(&self.topic))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(self.partition)
                    .with_current_leader_epoch(-1)
                    .with_fetch_offset(self.fetch_offset)
                    .with_log_start_offset(-1)
                    .with_partition_max_bytes(self.partition_max_bytes)])])
    }
}

pub fn topic_name(name: &str) -> TopicName {
    TopicName(StrBytes::from_string(name.to_owned()))
}

/// A unique-enough topic name per test (tests share nothing, but distinct
/// names make broker logs readable).
pub fn unique_topic(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// A Produce (v[`PRODUCE_VERSION`]) of `records` to one partition.
pub fn produce_request(topic: &str, partition: i32, records: Bytes, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(30_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(topic_name(topic))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

/// (key, value, timestamp_ms) of a record to encode.
pub type RawRecord<'a> = (Option<&'a [u8]>, &'a [u8], i64);

/// Encode one magic-v2 batch of (key, value, timestamp_ms) records with
/// `compression`, no producer id (non-idempotent), base offset 0.
pub fn encode_batch(records: &[RawRecord], compression: Compression) -> Bytes {
    let records: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (key, value, timestamp))| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: -1,
            producer_epoch: -1,
            timestamp_type: TimestampType::Creation,
            offset: i as i64,
            // kafka-protocol starts a new batch whenever offset - sequence
            // changes; this keeps one batch with baseSequence -1 (none).
            sequence: i as i32 - 1,
            timestamp: *timestamp,
            key: key.map(Bytes::copy_from_slice),
            value: Some(Bytes::copy_from_slice(value)),
            headers: Default::default(),
        })
        .collect();
    let mut buf = BytesMut::new();
    let options = RecordEncodeOptions {
        version: 2,
        compression,
    };
    RecordBatchEncoder::encode(&mut buf, &records, &options).expect("encode batch");
    buf.freeze()
}

/// Milliseconds since the epoch (for record timestamps, not for timing).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_millis() as i64
}

/// Split a fetched records region into whole batches, dropping a partial
/// trailing batch (Kafka may cut the region mid-batch at `max_bytes`).
pub fn whole_batches(records: Option<&Bytes>) -> Vec<Bytes> {
    let Some(records) = records else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut pos = 0usize;
    // Batch header: baseOffset i64, batchLength i32 (bytes after this field).
    while records.len() - pos >= 12 {
        let len = i32::from_be_bytes(records[pos + 8..pos + 12].try_into().unwrap());
        assert!(len >= 49, "batch length {len} at byte {pos}");
        let end = pos + 12 + len as usize;
        if end > records.len() {
            break;
        }
        out.push(records.slice(pos..end));
        pos = end;
    }
    out
}

pub fn batch_base_offset(batch: &[u8]) -> i64 {
    i64::from_be_bytes(batch[0..8].try_into().unwrap())
}

/// baseOffset + lastOffsetDelta (the i32 at byte 23 of a v2 batch).
pub fn batch_last_offset(batch: &[u8]) -> i64 {
    batch_base_offset(batch) + i32::from_be_bytes(batch[23..27].try_into().unwrap()) as i64
}

/// The compression codec in a v2 batch's attributes (low 3 bits, byte 21).
pub fn batch_compression(batch: &[u8]) -> i16 {
    i16::from_be_bytes(batch[21..23].try_into().unwrap()) & 0x7
}

/// Decode every record of whole batches (checks each batch's CRC).
pub fn decode_records(batches: &[Bytes]) -> Vec<Record> {
    let mut out = Vec::new();
    for batch in batches {
        let mut buf = batch.clone();
        let set = RecordBatchDecoder::decode(&mut buf).expect("decode fetched batch");
        out.extend(set.records);
    }
    out
}
