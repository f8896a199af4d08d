//! A replicated cluster for fault tests (CLUSTER.md §4): a real ZooKeeper
//! and N broker processes of either system — shardlog or Apache Kafka 3.9
//! in ZooKeeper mode, the reference — each behind a cuttable [`Link`] on
//! its Kafka port (advertised, so clients and brokers go through it) and a
//! [`TcpProxy`] on its ZooKeeper connection (to isolate it fully). Faults:
//! kill -9, SIGTERM, SIGSTOP/SIGCONT, blackhole/cut of either link. Plus
//! the background history producer and drain of tests/py/history.py and
//! readers of the partition files a broker leaves on disk (batches,
//! replication-offset-checkpoint, leader-epoch-checkpoint), which have
//! Kafka's formats in both systems.
//!
//! Or, with [`ReplCluster::start_in_netns`], each shardlog broker in a
//! network namespace of its own ([`NetnsSet`]): clients and brokers reach
//! it directly on its namespace's address, ZooKeeper listens on the
//! bridge's, and partitions are made in the kernel instead of the links.
//!
//! Every wait polls with a deadline; timeouts are shortened through the
//! brokers' config, never by sleeping.
#![allow(dead_code)] // each test binary uses a part of it

use std::collections::BTreeMap;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::cluster::{children, json, read, wait_for};
use crate::common::link::Link;
use crate::common::netns::NetnsSet;
use crate::common::zookeeper::{free_port, TcpProxy, ZkServer};
use crate::common::{run_py_script, venv_python_with, Broker};

mod disk;
mod history;
pub mod listeners;
pub mod scenario;

#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use disk::{
    assert_replicas_identical, hw_checkpoint, leader_epochs, stored_batches, StoredBatch,
};
#[allow(unused_imports)]
pub use history::{
    assert_history_ok, assert_history_ok_but_loss, check, drain, try_drain, HistoryProducer,
};

/// Which broker implementation the cluster runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum System {
    Shardlog,
    Kafka,
}

impl System {
    /// Guard against a broker that never registers (not a speed assertion).
    /// Kafka JVMs on 2 shared cores take tens of seconds each.
    fn start_limit_s(self) -> u64 {
        match self {
            System::Shardlog => 60,
            System::Kafka => 180,
        }
    }
}

enum Proc {
    Shardlog(Broker),
    Kafka(Child),
}

/// One broker: its process (while running), its links, its log dir.
pub struct Node {
    pub id: i32,
    pub system: System,
    /// The advertised Kafka port's link.
    pub link: Link,
    /// The broker's ZooKeeper connection.
    pub zk_link: TcpProxy,
    proc: Option<Proc>,
    /// Kept across restarts (shardlog's log dir between runs).
    shardlog_dir: Option<tempfile::TempDir>,
    /// Kafka: the node's folder (log dir `logs/`, config, output).
    kafka_dir: PathBuf,
    /// A shardlog broker that took over a Kafka broker's log dir.
    taken_over_dir: Option<PathBuf>,
    kafka_port: u16,
    settings: Vec<String>,
    /// Named listeners (SSL ones among them); `None`: PLAINTEXT only.
    listeners: Option<listeners::Listeners>,
    /// The shardlog broker's client listener port when `listeners` is set
    /// (fixed, so the link's target stays across restarts).
    shardlog_port: u16,
    /// In a network namespace: the command prefix that enters it and the
    /// broker's address there (listened on and advertised; the link is
    /// unused).
    netns: Option<(Vec<String>, String)>,
}

impl Node {
    pub fn is_running(&self) -> bool {
        self.proc.is_some()
    }

    /// The address clients and brokers reach it on: its link's, or its
    /// own in its network namespace.
    pub fn address(&self) -> String {
        match &self.netns {
            Some((_, address)) => address.clone(),
            None => self.link.address(),
        }
    }

    pub fn pid(&self) -> i32 {
        match self.proc.as_ref().expect("node running") {
            Proc::Shardlog(b) => b.pid().expect("pid"),
            Proc::Kafka(c) => c.id() as i32,
        }
    }

    /// The port the broker itself listens on (behind its link).
    pub fn real_port(&self) -> u16 {
        match &self.proc {
            Some(Proc::Shardlog(b)) => b.port,
            _ => self.kafka_port,
        }
    }

    /// The broker's log dir (the partition folders are in it).
    pub fn log_dir(&self) -> PathBuf {
        if let Some(d) = &self.taken_over_dir {
            return d.clone();
        }
        match (&self.proc, &self.shardlog_dir) {
            (Some(Proc::Shardlog(b)), _) => b.log_dir.path().to_path_buf(),
            (None, Some(d)) => d.path().to_path_buf(),
            _ => self.kafka_dir.join("logs"),
        }
    }

    fn spawn(&mut self) {
        assert!(self.proc.is_none(), "broker {} already running", self.id);
        let mut settings = self.settings.clone();
        let port = match self.system {
            System::Shardlog => self.shardlog_port,
            System::Kafka => self.kafka_port,
        };
        match (&self.listeners, &self.netns) {
            (Some(l), _) => settings.extend(listeners::settings(l, port, &self.link.address())),
            (None, Some((_, address))) => {
                settings.push(format!("listeners=PLAINTEXT://{address}"));
                settings.push(format!("advertised.listeners=PLAINTEXT://{address}"));
            }
            (None, None) => settings.push(format!(
                "advertised.listeners=PLAINTEXT://{}",
                self.link.address()
            )),
        }
        match self.system {
            System::Shardlog => {
                settings.push("shardlog.shards=1".into());
                if let Some(d) = &self.taken_over_dir {
                    settings.push(format!("log.dirs={}", d.display()));
                }
                // A config switch tried on every shardlog broker of a run
                // (e.g. shardlog.replica.fetch.session.enable=true), space
                // separated; it comes last, so it wins.
                if let Ok(extra) = std::env::var("SHARDLOG_TEST_BROKER_SETTINGS") {
                    settings.extend(extra.split_whitespace().map(str::to_string));
                }
                let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
                let dir = match self.shardlog_dir.take() {
                    Some(d) => d,
                    None => tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("log dir"),
                };
                let prefix = self.netns.as_ref().map(|(p, _)| p.clone());
                let b = Broker::start_wrapped(dir, &refs, None, &prefix.unwrap_or_default());
                if self.listeners.is_some() {
                    self.link.set_target(&format!("127.0.0.1:{port}"));
                } else {
                    self.link.set_target(&b.bootstrap());
                }
                self.proc = Some(Proc::Shardlog(b));
            }
            System::Kafka => {
                self.proc = Some(Proc::Kafka(self.spawn_kafka(&settings)));
            }
        }
    }

    fn spawn_kafka(&self, settings: &[String]) -> Child {
        let dir = &self.kafka_dir;
        std::fs::create_dir_all(dir.join("logs")).expect("kafka dir");
        let mut props = format!(
            "listeners=PLAINTEXT://127.0.0.1:{}\nlog.dirs={}\n\
             num.network.threads=2\nnum.io.threads=2\nbackground.threads=2\n\
             num.recovery.threads.per.data.dir=1\n",
            self.kafka_port,
            dir.join("logs").display()
        );
        // (a later `listeners=` line from `settings` wins in a properties file)
        for s in settings {
            props.push_str(s);
            props.push('\n');
        }
        std::fs::write(dir.join("server.properties"), props).expect("server.properties");
        std::fs::write(
            dir.join("log4j.properties"),
            format!(
                "log4j.rootLogger=WARN, file\n\
                 log4j.appender.file=org.apache.log4j.FileAppender\n\
                 log4j.appender.file.File={}\n\
                 log4j.appender.file.layout=org.apache.log4j.PatternLayout\n\
                 log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n\
                 log4j.logger.kafka.server.KafkaServer=INFO\n\
                 log4j.logger.state.change.logger=INFO\n\
                 log4j.logger.kafka.controller=INFO\n",
                dir.join("server.log").display()
            ),
        )
        .expect("log4j.properties");
        let out = std::fs::File::create(dir.join("kafka.out")).expect("kafka.out");
        let jars = super::java::jar_class_path();
        // Small heaps, serial GC, C1 only: three JVMs share 2 cores.
        Command::new("java")
            .args([
                "-Xmx384m",
                "-Xms64m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-XX:-UsePerfData",
                "-Djava.awt.headless=true",
            ])
            .arg(format!(
                "-Dlog4j.configuration=file:{}",
                dir.join("log4j.properties").display()
            ))
            .arg(format!("-Dkafka.logs.dir={}", dir.display()))
            .args(["-cp", &jars, "kafka.Kafka"])
            .arg(dir.join("server.properties"))
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("kafka.out"))
            .stderr(out)
            .spawn()
            .expect("spawn java (Kafka): run `bash tests/run.sh` (JDK + Kafka jars)")
    }

    /// kill -9 and reap; the log dir stays for a restart.
    pub fn kill9(&mut self) {
        match self.proc.take() {
            Some(Proc::Shardlog(b)) => self.shardlog_dir = Some(b.kill_keeping_dir()),
            Some(Proc::Kafka(mut c)) => {
                let _ = c.kill();
                let _ = c.wait();
            }
            None => {}
        }
        self.link.close_all();
    }

    /// Start a shardlog broker in place of this stopped Kafka broker: the
    /// same broker id, the same log dir (Kafka's files as Kafka left
    /// them), the same advertised address — one step of a rolling
    /// migration from Kafka to shardlog.
    pub fn take_over_with_shardlog(&mut self) {
        assert!(
            self.proc.is_none() && self.system == System::Kafka,
            "broker {} must be a stopped Kafka broker",
            self.id
        );
        self.system = System::Shardlog;
        self.taken_over_dir = Some(self.kafka_dir.join("logs"));
        self.spawn();
    }

    /// Add a setting for the broker's next start (it comes after the
    /// others, so it wins: e.g. a second log dir in `log.dirs`).
    pub fn add_setting(&mut self, setting: &str) {
        self.settings.push(setting.to_owned());
    }

    /// Drop every setting for `key` from the broker's next start (a key
    /// only the other system accepts, before a take-over).
    pub fn remove_setting(&mut self, key: &str) {
        let prefix = format!("{key}=");
        self.settings.retain(|s| !s.starts_with(&prefix));
    }

    /// SIGTERM (controlled shutdown) and wait; the log dir stays.
    pub fn stop(&mut self) {
        match self.proc.take() {
            Some(Proc::Shardlog(b)) => {
                let (status, dir) = b.stop_keeping_dir();
                self.shardlog_dir = Some(dir);
                assert!(status.success(), "broker {} exited {status}", self.id);
            }
            Some(Proc::Kafka(mut c)) => {
                signal(c.id() as i32, libc::SIGTERM);
                let deadline = Instant::now() + Duration::from_secs(90);
                while c.try_wait().expect("wait").is_none() {
                    assert!(
                        Instant::now() < deadline,
                        "Kafka broker {} ignored SIGTERM for 90 s",
                        self.id
                    );
                    std::thread::sleep(Duration::from_millis(50));
                }
            }
            None => {}
        }
        self.link.close_all();
    }

    pub fn pause(&self) {
        signal(self.pid(), libc::SIGSTOP);
    }

    pub fn resume(&self) {
        signal(self.pid(), libc::SIGCONT);
    }

    /// The broker's Kafka port unreachable (clients and brokers alike);
    /// its ZooKeeper session stays up.
    pub fn isolate_kafka_port(&self) {
        self.link.blackhole();
    }

    /// Also cut from ZooKeeper: its session expires after the timeout.
    pub fn isolate_fully(&self) {
        self.link.blackhole();
        self.zk_link.block();
    }

    pub fn heal(&self) {
        self.link.heal();
        self.zk_link.unblock();
    }

    /// The broker's own output so far (for failure messages).
    pub fn output_tail(&self) -> String {
        match self.system {
            System::Kafka => {
                let mut s = String::new();
                for f in ["kafka.out", "server.log"] {
                    let t = std::fs::read_to_string(self.kafka_dir.join(f)).unwrap_or_default();
                    let tail: Vec<&str> = t.lines().rev().take(60).collect();
                    s.push_str(&format!("--- {f}\n"));
                    for l in tail.into_iter().rev() {
                        s.push_str(l);
                        s.push('\n');
                    }
                }
                s
            }
            System::Shardlog => match &self.proc {
                Some(Proc::Shardlog(b)) => b.log_lines().join("\n"),
                _ => String::new(),
            },
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(Proc::Kafka(c)) = self.proc.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
        // A failing test shows what a Kafka broker said (its controller and
        // state-change lines), as `Broker`'s drop does for shardlog's.
        if std::thread::panicking() && self.system == System::Kafka {
            eprintln!("[Kafka broker {} output]\n{}", self.id, self.output_tail());
        }
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: plain kill(2) on our own child.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig})");
}

/// One partition's state znode.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionState {
    pub leader: i32,
    pub leader_epoch: i32,
    pub isr: Vec<i32>,
}

pub struct ReplCluster {
    pub system: System,
    pub zk: ZkServer,
    pub nodes: Vec<Node>,
    /// History files and Kafka node folders; removed on drop.
    pub dir: tempfile::TempDir,
    /// The brokers' network namespaces ([`ReplCluster::start_in_netns`]);
    /// last, so they are removed after the brokers stopped.
    pub netns: Option<NetnsSet>,
}

impl ReplCluster {
    /// ZooKeeper and brokers 1..=n with `settings` (Kafka key names; both
    /// systems read the same keys), all registered.
    pub fn start(system: System, n: i32, settings: &[&str]) -> ReplCluster {
        let systems: Vec<System> = (0..n).map(|_| system).collect();
        Self::start_nodes(system, &systems, settings, false, &|_| None, &|_| {}, None)
    }

    /// Shardlog brokers 1..=n, each in a network namespace of its own
    /// (`ip netns exec`), listening on its namespace's address; ZooKeeper on
    /// the bridge's address in the root namespace. Partitions through
    /// [`ReplCluster::net`].
    pub fn start_in_netns(n: i32, settings: &[&str]) -> ReplCluster {
        let ids: Vec<i32> = (1..=n).collect();
        let set = NetnsSet::new(&ids);
        let systems: Vec<System> = ids.iter().map(|_| System::Shardlog).collect();
        Self::start_nodes(
            System::Shardlog,
            &systems,
            settings,
            false,
            &|_| None,
            &|_| {},
            Some(set),
        )
    }

    /// The network namespaces of a [`ReplCluster::start_in_netns`] cluster.
    pub fn net(&self) -> &NetnsSet {
        self.netns
            .as_ref()
            .expect("a cluster in network namespaces")
    }

    /// Like [`ReplCluster::start_mixed`] (brokers started one by one), each
    /// broker `id` with the named listeners `listeners(id)`.
    pub fn start_with_listeners(
        systems: &[System],
        settings: &[&str],
        listeners: &dyn Fn(i32) -> listeners::Listeners,
    ) -> ReplCluster {
        Self::start_with_listeners_prepared(systems, settings, listeners, &|_| {})
    }

    /// [`ReplCluster::start_with_listeners`], with `prepare` run on
    /// ZooKeeper before the first broker starts (inter-broker SCRAM
    /// credentials, as Kafka's docs have them written with
    /// `kafka-configs --zookeeper` before the brokers start).
    pub fn start_with_listeners_prepared(
        systems: &[System],
        settings: &[&str],
        listeners: &dyn Fn(i32) -> listeners::Listeners,
        prepare: &dyn Fn(&ZkServer),
    ) -> ReplCluster {
        let system = if systems.contains(&System::Kafka) {
            System::Kafka
        } else {
            System::Shardlog
        };
        Self::start_nodes(
            system,
            systems,
            settings,
            true,
            &|id| Some(listeners(id)),
            prepare,
            None,
        )
    }

    /// The cluster shape the group, transaction and admin scenarios run
    /// in: one broker more than the replication factor `rf` (4 brokers at
    /// RF 3, 3 at RF 2), as every production cluster larger than its
    /// replication factor. Each broker then hosts only some partitions of
    /// a topic (and of `__consumer_offsets`, at RF `min(n, 3)`), which a
    /// cluster of exactly `rf` brokers never shows: any answer taken from
    /// the partitions a broker hosts instead of the whole topic differs
    /// from Kafka's only here. Scenarios whose faults name every broker
    /// (elections, replication histories) keep `start` with `n == rf`.
    pub fn start_beyond_rf(system: System, rf: i32, settings: &[&str]) -> ReplCluster {
        Self::start(system, rf + 1, settings)
    }

    /// A mixed cluster: broker `i + 1` runs `systems[i]`; each is started
    /// once the one before registered, so the first to start becomes the
    /// controller. `system` is Kafka when any broker is (the longer waits).
    pub fn start_mixed(systems: &[System], settings: &[&str]) -> ReplCluster {
        let system = if systems.contains(&System::Kafka) {
            System::Kafka
        } else {
            System::Shardlog
        };
        Self::start_nodes(system, systems, settings, true, &|_| None, &|_| {}, None)
    }

    fn start_nodes(
        system: System,
        systems: &[System],
        settings: &[&str],
        one_by_one: bool,
        listeners: &dyn Fn(i32) -> Option<listeners::Listeners>,
        prepare: &dyn Fn(&ZkServer),
        netns: Option<NetnsSet>,
    ) -> ReplCluster {
        let n = systems.len() as i32;
        let zk = match &netns {
            Some(_) => ZkServer::standalone_on("0.0.0.0"),
            None => ZkServer::standalone(),
        };
        prepare(&zk);
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("cluster dir");
        let mut nodes = Vec::new();
        for id in 1..=n {
            let zk_link = TcpProxy::start(zk.address());
            let zk_connect = match &netns {
                Some(set) => format!("{}:{}", set.bridge_ip(), zk.client_port),
                None => zk_link.address(),
            };
            let mut s = vec![
                format!("broker.id={id}"),
                format!("zookeeper.connect={zk_connect}"),
                "zookeeper.connection.timeout.ms=10000".into(),
                "auto.leader.rebalance.enable=false".into(),
                "group.initial.rebalance.delay.ms=0".into(),
                format!("offsets.topic.replication.factor={}", n.min(3)),
                "replica.fetch.wait.max.ms=100".into(),
                "replica.high.watermark.checkpoint.interval.ms=1000".into(),
            ];
            // `{id}` in a setting is the broker's id (per-broker values,
            // e.g. an address of its own).
            s.extend(settings.iter().map(|x| x.replace("{id}", &id.to_string())));
            nodes.push(Node {
                id,
                system: systems[id as usize - 1],
                link: Link::start("127.0.0.1:1"),
                zk_link,
                proc: None,
                shardlog_dir: None,
                kafka_dir: dir.path().join(format!("kafka-{id}")),
                taken_over_dir: None,
                kafka_port: free_port(),
                settings: s,
                listeners: listeners(id),
                shardlog_port: free_port(),
                netns: netns
                    .as_ref()
                    .map(|set| (set.exec_prefix(id), set.broker_address(id))),
            });
        }
        let mut c = ReplCluster {
            system,
            zk,
            nodes,
            dir,
            netns,
        };
        for node in &mut c.nodes {
            if node.system == System::Kafka {
                node.link
                    .set_target(&format!("127.0.0.1:{}", node.kafka_port));
            }
        }
        for id in 1..=n {
            c.node(id).spawn();
            if one_by_one {
                c.wait_registered(id);
            }
        }
        for id in 1..=n {
            c.wait_registered(id);
        }
        c
    }

    pub fn node(&mut self, id: i32) -> &mut Node {
        self.nodes.iter_mut().find(|n| n.id == id).expect("node id")
    }

    /// Every broker's advertised address.
    pub fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .map(Node::address)
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn wait_registered(&self, id: i32) {
        let node = self.nodes.iter().find(|n| n.id == id).expect("node");
        let limit = node.system.start_limit_s();
        let start = Instant::now();
        loop {
            let ids = children(&self.zk.address(), "/brokers/ids");
            let port_up = TcpStream::connect(node.address()).is_ok();
            if ids.contains(&id.to_string()) && port_up {
                eprintln!(
                    "[{:?} broker {id} registered after {:.1} s]",
                    node.system,
                    start.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(limit),
                "{:?} broker {id} not registered in ZooKeeper after {limit} s:\n{}",
                node.system,
                node.output_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Start a stopped node again on its log dir; waits for registration.
    pub fn restart(&mut self, id: i32) {
        self.node(id).spawn();
        self.wait_registered(id);
    }

    pub fn create_topic(&self, topic: &str, partitions: i32, rf: i32, configs: &[&str]) {
        let mut args: Vec<String> = vec![
            "create".into(),
            self.bootstrap(),
            "confluent".into(),
            topic.into(),
            partitions.to_string(),
            rf.to_string(),
        ];
        args.extend(configs.iter().map(|s| s.to_string()));
        let python = venv_python_with(&["confluent_kafka"]);
        let out = Command::new(python)
            .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/cluster_admin.py"))
            .args(&args)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .stdin(Stdio::null())
            .output()
            .expect("run cluster_admin.py");
        // A large CreateTopics may time out on the client (Kafka answers
        // once every broker has the metadata) after the topic znode was
        // written: then the topic exists and the leaders come below.
        let path = format!("/brokers/topics/{topic}");
        if !out.status.success() && read(&self.zk.address(), &[&path])[&path].is_none() {
            panic!(
                "create {topic} failed ({}):\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Every partition has a leader in ZooKeeper and in Metadata.
        wait_for(120, "every partition led", || {
            let s = self.states(topic, partitions);
            (s.len() == partitions as usize && s.values().all(|st| st.leader >= 0)).then_some(())
        });
    }

    /// Every partition's state znode (absent ones left out).
    pub fn states(&self, topic: &str, partitions: i32) -> BTreeMap<i32, PartitionState> {
        let paths: Vec<String> = (0..partitions)
            .map(|p| format!("/brokers/topics/{topic}/partitions/{p}/state"))
            .collect();
        let refs: Vec<&str> = paths.iter().map(String::as_str).collect();
        let got = read(&self.zk.address(), &refs);
        let mut out = BTreeMap::new();
        for (p, path) in paths.iter().enumerate() {
            if let Some((data, _)) = &got[path] {
                let j = json(data);
                out.insert(
                    p as i32,
                    PartitionState {
                        leader: j["leader"].as_i64().unwrap_or(-1) as i32,
                        leader_epoch: j["leader_epoch"].as_i64().unwrap_or(-1) as i32,
                        isr: j["isr"]
                            .as_array()
                            .map(|a| {
                                a.iter()
                                    .filter_map(|x| x.as_i64())
                                    .map(|x| x as i32)
                                    .collect()
                            })
                            .unwrap_or_default(),
                    },
                );
            }
        }
        out
    }

    pub fn state(&self, topic: &str, p: i32) -> PartitionState {
        self.states(topic, p + 1)
            .remove(&p)
            .unwrap_or_else(|| panic!("no state znode for {topic}-{p}"))
    }

    /// Poll the state znode of `topic-p` until `pred` holds, or fail after
    /// `secs` naming `what` and the last state seen.
    pub fn wait_state(
        &self,
        secs: u64,
        what: &str,
        topic: &str,
        p: i32,
        pred: impl Fn(&PartitionState) -> bool,
    ) -> PartitionState {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.states(topic, p + 1).remove(&p);
            if let Some(s) = s.as_ref().filter(|s| pred(s)) {
                return s.clone();
            }
            assert!(
                Instant::now() < deadline,
                "{:?}: timed out after {secs} s waiting for {what} on {topic}-{p}; last state {s:?}",
                self.system
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The controller's broker id (`/controller`), waiting for one.
    pub fn controller(&self) -> i32 {
        wait_for(60, "a controller", || {
            let r = read(&self.zk.address(), &["/controller"]);
            let (data, _) = r["/controller"].clone()?;
            json(&data)["brokerid"].as_i64().map(|b| b as i32)
        })
    }

    /// Metadata as a client sees it (cluster_admin.py describe, through
    /// the given brokers' links).
    pub fn describe(&self, bootstrap: &str, topic: &str) -> serde_json::Value {
        run_py_script(
            &["confluent_kafka"],
            "cluster_admin.py",
            &["describe".into(), bootstrap.into(), topic.into()],
        )
    }

    /// A file path in the cluster's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}
