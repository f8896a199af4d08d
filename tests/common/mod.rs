//! Test helpers: start the real `shardlog` binary on a free port with a
//! temporary log dir, wait for its readiness line, speak raw Kafka frames,
//! find the external clients (kcat, the Python venv), stop the broker.
#![allow(dead_code)]

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
        let mut child = Command::new(env!("CARGO_BIN_EXE_shardlog"))
            .args(&args)
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn shardlog");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if std::env::var_os("SHARDLOG_TEST_ECHO").is_some() {
                    eprintln!("[broker] {line}");
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

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// SIGTERM and wait for exit.
    pub fn stop(mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as i32;
        // SAFETY: plain kill(2) on our own child.
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
        child.wait().expect("wait")
    }

    /// SIGTERM, wait for exit, and hand back the log dir for a restart.
    pub fn stop_keeping_dir(mut self) -> (ExitStatus, tempfile::TempDir) {
        let log_dir = std::mem::replace(&mut self.log_dir, new_log_dir());
        (self.stop(), log_dir)
    }

    /// Broker log lines printed so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.stderr.try_iter().collect()
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A fresh log dir under target/ rather than /tmp: log dirs need
/// O_DIRECT, which a tmpfs /tmp may not offer.
fn new_log_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp log dir")
}

/// Encode a request frame (size prefix + header + body).
pub fn request_frame<T: Encodable>(
    api_key: ApiKey,
    version: i16,
    correlation_id: i32,
    body: &T,
) -> Vec<u8> {
    let mut header = RequestHeader::default();
    header.request_api_key = api_key as i16;
    header.request_api_version = version;
    header.correlation_id = correlation_id;
    header.client_id = Some(StrBytes::from_static_str("shardlog-test"));
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
        "python failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8")
}
