//! `[io]` `shardlog bench --brokers N`: a local ZooKeeper-mode cluster for
//! the sweep — ZooKeeper from Debian's `zookeeper` package (a standalone
//! `ZooKeeperServerMain` on a free loopback port in the bench's work dir)
//! and N brokers registered with it, so that acks=1 and acks=all are a real
//! trade-off (RF = min(N, 3), `min.insync.replicas` = RF - 1). The broker
//! settings are pure functions; the processes are [`BrokerChild`]ren.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::child::{free_loopback_addr, tail, BrokerChild, BrokerExit};
use crate::io::clock::{Clock, SystemClock};
use crate::io::host::find_on_path;
use crate::loadgen::client::connect_bootstrap;
use crate::loadgen::tls::Security;

/// Debian's ZooKeeper jars (`zookeeper.jar`'s manifest names the rest) and
/// the slf4j pair that makes it log to its output.
pub const ZOOKEEPER_JARS: [&str; 4] = [
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
];

/// The install step a missing ZooKeeper or Java names.
pub const ZOOKEEPER_INSTALL: &str =
    "apt-get install -y --no-install-recommends zookeeper openjdk-17-jre-headless";

/// The topic replication factor of an `n`-broker bench cluster.
pub fn replication_factor(brokers: usize) -> i16 {
    brokers.clamp(1, 3) as i16
}

/// `min.insync.replicas` of an `n`-broker bench cluster: one less than the
/// replication factor (2 of 3), so acks=all waits for a follower.
pub fn min_insync_replicas(brokers: usize) -> i16 {
    (replication_factor(brokers) - 1).max(1)
}

/// The ZooKeeper-mode settings of broker `id` (1-based) of `brokers`, before
/// the bench's common overrides (listener, log dir, pinning) and the user's.
pub fn cluster_overrides(id: usize, brokers: usize, zookeeper: &str) -> Vec<String> {
    let rf = replication_factor(brokers);
    vec![
        format!("broker.id={id}"),
        format!("zookeeper.connect={zookeeper}"),
        "zookeeper.connection.timeout.ms=10000".into(),
        // Topics the load generator creates with the default (-1) or its
        // --replication-factor, and the groups' offsets topic, span the
        // cluster (Kafka's default.replication.factor and
        // offsets.topic.replication.factor).
        format!("default.replication.factor={rf}"),
        format!("offsets.topic.replication.factor={rf}"),
        format!("min.insync.replicas={}", min_insync_replicas(brokers)),
        // The bench stops every broker at the end: moving leaders between
        // brokers that are all about to stop (controlled.shutdown.enable,
        // Kafka's default true) only delays the stop.
        "controlled.shutdown.enable=false".into(),
        // Nothing to rebalance in a run of minutes.
        "auto.leader.rebalance.enable=false".into(),
    ]
}

/// `zoo.cfg` of the bench's standalone ZooKeeper.
pub fn zoo_cfg(data_dir: &Path, port: u16) -> String {
    format!(
        "tickTime=2000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\n\
         admin.enableServer=false\nmaxClientCnxns=0\n4lw.commands.whitelist=srvr\n",
        data_dir.display()
    )
}

/// The JVM classpath of Debian's ZooKeeper in `dir`, or what to install.
pub fn zookeeper_classpath(dir: &Path) -> Result<String, String> {
    let jars: Vec<PathBuf> = ZOOKEEPER_JARS.iter().map(|j| dir.join(j)).collect();
    match jars.iter().find(|j| !j.exists()) {
        Some(missing) => Err(format!(
            "--brokers needs ZooKeeper, and {} is missing: install Debian's package ({ZOOKEEPER_INSTALL})",
            missing.display()
        )),
        None => Ok(jars
            .iter()
            .map(|j| j.display().to_string())
            .collect::<Vec<_>>()
            .join(":")),
    }
}

/// A running ZooKeeper server.
pub(super) struct ZooKeeper {
    child: BrokerChild,
    pub(super) address: String,
    pub(super) log_path: PathBuf,
}

impl ZooKeeper {
    /// Starts ZooKeeper in `work/zookeeper` and waits until it serves.
    pub(super) fn start(work: &Path, timeout: Duration) -> Result<Self> {
        let classpath =
            zookeeper_classpath(Path::new("/usr/share/java")).map_err(|e| anyhow::anyhow!(e))?;
        let java = find_on_path("java").with_context(|| {
            format!("--brokers needs ZooKeeper, which needs Java, and `java` is not on PATH: {ZOOKEEPER_INSTALL}")
        })?;
        let dir = work.join("zookeeper");
        std::fs::create_dir_all(dir.join("data"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let addr = free_loopback_addr()?;
        let cfg = dir.join("zoo.cfg");
        std::fs::write(&cfg, zoo_cfg(&dir.join("data"), addr.port()))
            .with_context(|| format!("writing {}", cfg.display()))?;
        let args: Vec<String> = [
            "-Xmx256m",
            "-XX:+UseSerialGC",
            "-cp",
            &classpath,
            "org.apache.zookeeper.server.ZooKeeperServerMain",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([cfg.display().to_string()])
        .collect();
        let log_path = work.join("zookeeper.log");
        eprintln!("bench: starting ZooKeeper on {addr}");
        let mut child = BrokerChild::spawn(&java, &args, &log_path, addr)?;
        let clock = SystemClock::new();
        let start = clock.mono_ms();
        while !serves(addr) {
            if let Some(status) = child.exited() {
                bail!(
                    "ZooKeeper exited ({status}) before it served; its output:\n{}",
                    tail(&child.log(), 30)
                );
            }
            if clock.mono_ms() - start > timeout.as_millis() as i64 {
                bail!(
                    "ZooKeeper did not serve within {timeout:?}; its output:\n{}",
                    tail(&child.log(), 30)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(Self {
            child,
            address: addr.to_string(),
            log_path,
        })
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.pid()
    }

    pub(super) fn stop(&mut self, timeout: Duration) -> Result<BrokerExit> {
        self.child.stop(timeout)
    }
}

/// Whether ZooKeeper answers its `srvr` four-letter word with a mode.
fn serves(addr: SocketAddr) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let mut out = String::new();
    s.write_all(b"srvr").is_ok() && s.read_to_string(&mut out).is_ok() && out.contains("Mode:")
}

/// Waits until Metadata from `bootstrap` lists `brokers` brokers: every one
/// registered and known to the controller, so a topic of RF = min(N, 3) can
/// be created.
pub(super) fn wait_for_brokers(
    bootstrap: &str,
    security: &Security,
    brokers: usize,
    timeout: Duration,
) -> Result<()> {
    let clock = SystemClock::new();
    let start = clock.mono_ms();
    loop {
        let wait = Duration::from_secs(5);
        let last = match connect_bootstrap(bootstrap, security, "shardlog-bench", wait)
            .and_then(|mut c| c.metadata(&[]))
        {
            Ok(meta) if meta.brokers.len() >= brokers && meta.controller_id >= 0 => return Ok(()),
            Ok(meta) => format!(
                "Metadata lists brokers {:?}, controller {}",
                meta.brokers.keys().collect::<Vec<_>>(),
                meta.controller_id
            ),
            Err(e) => format!("{e:#}"),
        };
        if clock.mono_ms() - start > timeout.as_millis() as i64 {
            bail!("the cluster did not form within {timeout:?}: {last}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
