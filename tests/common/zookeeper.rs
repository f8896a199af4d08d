//! Real ZooKeeper for tests (CLUSTER.md §4): Debian's `zookeeper` package
//! (3.8) started on free loopback ports in temp dirs — a standalone
//! `ZooKeeperServerMain` or a `QuorumPeerMain` ensemble — plus a TCP proxy
//! that can cut a client off (to expire its session with the server's
//! clock still running). Every process is SIGKILLed on drop.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Guard against a server that never comes up (not a speed assertion).
const READY_LIMIT: Duration = Duration::from_secs(60);

/// The JVM classpath: zookeeper.jar (its manifest's Class-Path lists the
/// Debian jars it needs: jute, netty, slf4j-api, metrics, ...) plus
/// slf4j-simple when present so the server logs to its log file.
fn classpath() -> String {
    let jar = dpkg_file("libzookeeper-java", "/zookeeper.jar").unwrap_or_else(|| {
        panic!(
            "ZooKeeper is not installed (no zookeeper.jar from libzookeeper-java): run \
             `bash tests/run.sh` (it installs it) or \
             `apt-get install -y --no-install-recommends zookeeper`"
        )
    });
    match dpkg_file("libslf4j-java", "/slf4j-simple.jar") {
        Some(log) => format!("{jar}:{log}"),
        None => jar,
    }
}

fn dpkg_file(package: &str, suffix: &str) -> Option<String> {
    let out = Command::new("dpkg").args(["-L", package]).output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.ends_with(suffix) && Path::new(l).exists())
        .map(str::to_string)
}

/// A free loopback port, reserved for this test process and outside the
/// kernel's ephemeral range (see [`super::ports`]).
pub fn free_port() -> u16 {
    super::ports::reserved_port()
}

/// `n` free loopback ports, no two the same.
pub fn distinct_free_ports(n: usize) -> Vec<u16> {
    (0..n).map(|_| super::ports::reserved_port()).collect()
}

/// The `srvr` four-letter word's answer, if the server answers.
pub fn srvr(port: u16) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    s.write_all(b"srvr").ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    Some(out)
}

/// The `Mode:` line's value (`standalone`, `leader`, `follower`).
pub fn mode(port: u16) -> Option<String> {
    let out = srvr(port)?;
    out.lines()
        .find_map(|l| l.strip_prefix("Mode: "))
        .map(|m| m.trim().to_string())
}

/// One ZooKeeper server process.
pub struct ZkServer {
    child: Option<Child>,
    pub client_port: u16,
    pub dir: tempfile::TempDir,
}

impl ZkServer {
    /// A standalone server on a free port, ready to serve.
    pub fn standalone() -> ZkServer {
        Self::standalone_on("127.0.0.1")
    }

    /// A standalone server whose client port listens on `address`
    /// (`0.0.0.0`: also on a bridge that brokers in network namespaces
    /// reach; [`ZkServer::address`] stays the loopback one).
    pub fn standalone_on(address: &str) -> ZkServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let client_port = free_port();
        let cfg = base_config(dir.path(), client_port).replace(
            "clientPortAddress=127.0.0.1",
            &format!("clientPortAddress={address}"),
        );
        let server = Self::spawn(dir, client_port, &cfg, "ZooKeeperServerMain");
        server.wait_ready();
        server
    }

    fn spawn(dir: tempfile::TempDir, client_port: u16, cfg: &str, main: &str) -> ZkServer {
        let cfg_path = dir.path().join("zoo.cfg");
        std::fs::write(&cfg_path, cfg).expect("write zoo.cfg");
        let log = std::fs::File::create(dir.path().join("server.log")).expect("log file");
        let child = Command::new("java")
            .args([
                "-Xms64m",
                "-Xmx256m",
                "-XX:+UseSerialGC",
                "-cp",
                &classpath(),
            ])
            .arg(format!("org.apache.zookeeper.server.{main}"))
            .arg(&cfg_path)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("spawn java (ZooKeeper): is a JRE installed? run `bash tests/run.sh`");
        ZkServer {
            child: Some(child),
            client_port,
            dir,
        }
    }

    /// Waits until `srvr` reports a mode (serving).
    pub fn wait_ready(&self) {
        let start = Instant::now();
        while mode(self.client_port).is_none() {
            assert!(
                start.elapsed() < READY_LIMIT,
                "ZooKeeper on port {} not ready; log:\n{}",
                self.client_port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `127.0.0.1:<port>`.
    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.client_port)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ZkServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn base_config(dir: &Path, client_port: u16) -> String {
    let data: PathBuf = dir.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    // tickTime 500: sessions may be as short as 1 s (2 ticks) and as long
    // as 10 s (20 ticks), which is what tests want.
    format!(
        "tickTime=500\ndataDir={}\nclientPort={client_port}\nclientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n4lw.commands.whitelist=srvr,ruok,mntr,stat,cons\n\
         forceSync=no\n",
        data.display()
    )
}

/// A 3-node (or n-node) ensemble on loopback.
pub struct Ensemble {
    pub servers: Vec<ZkServer>,
}

impl Ensemble {
    pub fn start(n: usize) -> Ensemble {
        // Client, quorum and election ports, all different: ports picked one
        // at a time can repeat (a freed port is handed out again), and
        // ZooKeeper refuses a server whose client and election ports match.
        let distinct = distinct_free_ports(3 * n);
        let ports: Vec<(u16, u16, u16)> = distinct.chunks(3).map(|p| (p[0], p[1], p[2])).collect();
        let peers: String = ports
            .iter()
            .enumerate()
            .map(|(i, (_, quorum, election))| {
                format!("server.{}=127.0.0.1:{quorum}:{election}\n", i + 1)
            })
            .collect();
        let servers: Vec<ZkServer> = ports
            .iter()
            .enumerate()
            .map(|(i, (client, _, _))| {
                let dir = tempfile::tempdir().expect("temp dir");
                let mut cfg = base_config(dir.path(), *client);
                cfg.push_str("initLimit=10\nsyncLimit=5\n");
                cfg.push_str(&peers);
                std::fs::write(dir.path().join("data").join("myid"), format!("{}\n", i + 1))
                    .expect("myid");
                ZkServer::spawn(dir, *client, &cfg, "quorum.QuorumPeerMain")
            })
            .collect();
        for s in &servers {
            s.wait_ready();
        }
        Ensemble { servers }
    }

    /// `h1:p1,h2:p2,h3:p3`.
    pub fn connect_string(&self) -> String {
        self.servers
            .iter()
            .map(ZkServer::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The index of the running server whose `srvr` says `Mode: leader`,
    /// waiting for an election to finish.
    pub fn leader(&self) -> usize {
        let start = Instant::now();
        loop {
            let found = self
                .servers
                .iter()
                .position(|s| s.is_running() && mode(s.client_port).as_deref() == Some("leader"));
            if let Some(i) = found {
                return i;
            }
            assert!(start.elapsed() < READY_LIMIT, "no ZooKeeper leader elected");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILLs the leader; returns its index.
    pub fn kill_leader(&mut self) -> usize {
        let i = self.leader();
        self.servers[i].kill();
        i
    }
}

/// A TCP forwarder to `target` that can cut every connection and refuse
/// service (accept, then close) while blocked: a network partition between
/// one client and ZooKeeper.
pub struct TcpProxy {
    pub port: u16,
    blocked: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<TcpStream>>>,
}

impl TcpProxy {
    pub fn start(target: String) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("proxy addr").port();
        let proxy = TcpProxy {
            port,
            blocked: Arc::default(),
            stop: Arc::default(),
            open: Arc::default(),
        };
        let (blocked, stop, open) = (
            proxy.blocked.clone(),
            proxy.stop.clone(),
            proxy.open.clone(),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                if blocked.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let Ok(upstream) = TcpStream::connect(&target) else {
                    continue;
                };
                forward(conn, upstream, &open);
            }
        });
        proxy
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Cuts every open connection and refuses new ones until unblocked.
    pub fn block(&self) {
        self.blocked.store(true, Ordering::SeqCst);
        for s in self.open.lock().expect("proxy lock").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    pub fn unblock(&self) {
        self.blocked.store(false, Ordering::SeqCst);
    }
}

fn forward(client: TcpStream, upstream: TcpStream, open: &Mutex<Vec<TcpStream>>) {
    let pairs = [
        (client.try_clone(), upstream.try_clone()),
        (upstream.try_clone(), client.try_clone()),
    ];
    {
        let mut open = open.lock().expect("proxy lock");
        open.push(client);
        open.push(upstream);
    }
    for pair in pairs {
        if let (Ok(mut from), Ok(mut to)) = pair {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = from.shutdown(Shutdown::Both);
                let _ = to.shutdown(Shutdown::Both);
            });
        }
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.block();
        let _ = TcpStream::connect(("127.0.0.1", self.port)); // wakes accept
    }
}
