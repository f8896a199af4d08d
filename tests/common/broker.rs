//! The real `shardlog` binary as a child process: started on a free port
//! with a temporary log dir, ready once it prints its listening line;
//! stopped with SIGTERM or SIGKILL; its log lines read back.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Guard against a broker that never starts (not a speed assertion).
pub const STARTUP_LIMIT: Duration = Duration::from_secs(60);

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
        Broker::start_wrapped(log_dir, overrides, rust_log, &[])
    }

    /// Like [`Broker::start_logging`], the binary run through the command
    /// `prefix` (e.g. `ip netns exec <ns>`: a broker in a network namespace
    /// of its own; `ip netns exec` execs the broker, so the pid is its own).
    pub fn start_wrapped(
        log_dir: tempfile::TempDir,
        overrides: &[&str],
        rust_log: Option<&str>,
        prefix: &[String],
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
            // The sample config's metrics endpoint stays off unless a
            // test asks for one on its own port.
            "shardlog.metrics.listener=".into(),
        ];
        for o in base
            .iter()
            .map(String::as_str)
            .chain(overrides.iter().copied())
        {
            args.push("--override".into());
            args.push(o.to_owned());
        }
        let mut command = match prefix.split_first() {
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(broker_bin());
                c
            }
            None => Command::new(broker_bin()),
        };
        let mut child = command
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
        // What the broker said before it stopped (a refused config, ...)
        // goes into the failure message.
        let mut said = Vec::new();
        // One limit for the whole start: a broker that is not ready logs a
        // line (each shard's phase) every 10 s, which must not extend it.
        let deadline = std::time::Instant::now() + STARTUP_LIMIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = match self.stderr.recv_timeout(left) {
                Ok(line) => line,
                Err(e) => {
                    let pid = self.child.as_ref().map_or(0, Child::id);
                    panic!(
                        "broker did not print its readiness line: {e}; it printed:\n{}\n\
                         where its threads were:\n{}",
                        said.join("\n"),
                        threads_of(pid)
                    )
                }
            };
            said.push(plain_log_line(&line));
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

/// A broker's log line without its ANSI colours (tracing's fmt layer
/// colours field names even into a pipe).
/// Where each thread of process `pid` is: its name, state and kernel
/// wait channel from /proc, and its stack from gdb when gdb is installed
/// (a broker that hangs at start says nothing else).
fn threads_of(pid: u32) -> String {
    let mut out = String::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            let dir = t.path();
            let read = |f: &str| {
                std::fs::read_to_string(dir.join(f))
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            };
            let stat = read("stat");
            let state = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split(' ').next())
                .unwrap_or("?")
                .to_owned();
            out.push_str(&format!(
                "  tid {} {} state {state} wchan {}\n",
                t.file_name().to_string_lossy(),
                read("comm"),
                read("wchan")
            ));
        }
    }
    let gdb = Command::new("timeout")
        .args([
            "60",
            "gdb",
            "-p",
            &pid.to_string(),
            "-batch",
            "-ex",
            "thread apply all bt 20",
        ])
        .stdin(Stdio::null())
        .output();
    match gdb {
        Ok(o) => out.push_str(&String::from_utf8_lossy(&o.stdout)),
        Err(e) => out.push_str(&format!("  (no gdb stack: {e})\n")),
    }
    out
}

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

/// A fresh log dir under target/ rather than /tmp: log dirs need
/// O_DIRECT, which a tmpfs /tmp may not offer.
pub fn new_log_dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("temp log dir")
}
