//! Mixed clusters (issue 24): Apache Kafka 3.9 brokers and shardlog brokers
//! in one ZooKeeper cluster (tests/common/replica_cluster.rs starts Kafka
//! from the cached jars and shardlog processes against one real
//! ZooKeeper).
//!
//! In every test Kafka's kafka-verifiable-producer (acks=all, idempotent)
//! and kafka-verifiable-consumer (a consumer group committing after each
//! poll) run through the faults, and at the end: every acked record is
//! read back once and in order (tests/py/history.py's check); the group
//! never read below an offset it had committed and read every acked
//! record; kafka-consumer-groups shows its last commits; its coordinator
//! (the leader of its `__consumer_offsets` partition) moved from a Kafka
//! broker to a shardlog broker and back; and after a clean stop the
//! replicas' logs are identical batch for batch (offsets, leader epochs,
//! CRCs) up to the HW across both implementations.
//!
//! (a) Two Kafka brokers and one shardlog broker, a Kafka broker the
//!     controller: Kafka's kafka-topics creates a 6-partition RF=3 topic
//!     (min.insync.replicas=2), so shardlog leads the partitions it is
//!     preferred for and follows the others; each broker in turn —
//!     shardlog first, whose group's coordinator moves to Kafka — is
//!     killed with kill -9 and restarted, every ISR whole again and
//!     kafka-leader-election giving the preferred replicas back their
//!     leadership before the next.
//! (b) The same with shardlog as the controller (the Kafka controller is
//!     killed and restarted until shardlog wins the election): a topic
//!     created through shardlog alone (CreateTopics to its address) gets
//!     its LeaderAndIsr to the Kafka brokers, which lead and follow it;
//!     the Kafka brokers get their producer-id blocks from it
//!     (AllocateProducerIds); the Kafka brokers are killed first, then
//!     shardlog (a Kafka broker takes the controller back).
//! (c) A rolling migration: three Kafka brokers with the topic, the
//!     group and the clients running; one at a time each Kafka broker stops
//!     (controlled shutdown) and a shardlog broker starts on its broker id
//!     and its log dir — Kafka's segments, indexes, checkpoints and
//!     `__consumer_offsets` as Kafka left them — and joins every ISR, and
//!     kafka-leader-election gives it back its preferred leaderships. The
//!     group's coordinator (the leader of its `__consumer_offsets`
//!     partition, preferred on broker 1) moves from Kafka to shardlog,
//!     back to Kafka when the new shardlog broker 1 is killed with kill -9
//!     mid-migration, and to shardlog again. The last Kafka broker is
//!     killed with kill -9 instead, and shardlog recovers its log dir as
//!     the crash left it (no clean-shutdown marker, Kafka's index files at
//!     their pre-allocated size). At the end the cluster is all shardlog,
//!     with the checks above.
//! (d) A log dir holding legacy messages: one Kafka broker at
//!     `inter.broker.protocol.version=2.8` and
//!     `log.message.format.version=0.10.2` stores magic-1 messages (plain,
//!     gzip, lz4 and snappy wrappers; a keyed compacted topic, its cleaner
//!     off), then shardlog takes its log dir over: every record is read
//!     back once through Fetch v4+ (confluent-kafka) and Fetch v1/v2
//!     (kafka-python pinned to 0.9 and 0.10.0: down-converted to magic 0,
//!     and as stored), ListOffsets by time finds records inside wrappers,
//!     the same holds after a kill -9 and the recovery over the legacy
//!     segments, and shardlog's cleaner compacts the legacy topic to the
//!     latest value per key, still in magic 1.
//!
//! Every wait has a deadline; timeouts are shortened through config.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::replica_cluster::{
    assert_history_ok, assert_replicas_identical, check, drain, ReplCluster, System,
};
use common::verifiable::{VerifiableConsumer, VerifiableProducer};

const TOPIC: &str = "mixed";
const PARTITIONS: i32 = 6;
const SHARDLOG: i32 = 3;
const OFFSETS: &str = "__consumer_offsets";
const OFFSETS_PARTITIONS: i32 = 6;

fn settings() -> Vec<&'static str> {
    vec![
        "zookeeper.session.timeout.ms=6000",
        "replica.lag.time.max.ms=6000",
        "min.insync.replicas=2",
        "default.replication.factor=3",
        "controlled.shutdown.retry.backoff.ms=500",
        "offsets.topic.replication.factor=3",
        format!("offsets.topic.num.partitions={OFFSETS_PARTITIONS}").leak(),
    ]
}

/// Kafka's kafka-topics creates the topic (to any broker; Kafka's admin
/// client picks one).
fn kafka_topics_create(c: &ReplCluster) {
    let mut cmd = common::java::kafka_tool("org.apache.kafka.tools.TopicCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap(), "--create"])
        .args(["--topic", TOPIC, "--partitions", &PARTITIONS.to_string()])
        .args(["--replication-factor", "3"]);
    let out = common::java::run_ok(&mut cmd, "kafka-topics --create");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("Created topic {TOPIC}.")), "{text}");
    common::cluster::wait_for(120, "every partition led with a full ISR", || {
        let s = c.states(TOPIC, PARTITIONS);
        (s.len() == PARTITIONS as usize && s.values().all(|st| st.leader >= 0 && st.isr.len() == 3))
            .then_some(())
    });
}

#[test]
fn kafka_controls_two_kafka_brokers_and_a_shardlog_broker_through_kill9_of_each() {
    let mut c = ReplCluster::start_mixed(
        &[System::Kafka, System::Kafka, System::Shardlog],
        &settings(),
    );
    let controller = c.controller();
    assert!(
        controller != SHARDLOG,
        "a Kafka broker started first and should be the controller, not {controller}"
    );
    kafka_topics_create(&c);
    let states = c.states(TOPIC, PARTITIONS);
    let led = states.values().filter(|s| s.leader == SHARDLOG).count();
    assert!(
        led > 0 && led < PARTITIONS as usize,
        "shardlog should lead some partitions and follow others: {states:?}"
    );

    history_through_kills(&mut c, &[SHARDLOG, 1, 2], SHARDLOG);
}

/// Kafka's verifiable producer (acks=all, idempotent) and consumer (a
/// group coordinated by `coordinator_on` when every broker is up) run
/// while each of `victims` in turn is killed with kill -9 and restarted
/// (every ISR whole again and the preferred leaders back before the
/// next); then the checks of [`Clients::finish_and_check`].
fn history_through_kills(c: &mut ReplCluster, victims: &[i32], coordinator_on: i32) {
    let mut m = Clients::start(c, coordinator_on);
    m.progress(c, "every broker up");
    for &victim in victims {
        c.node(victim).kill9();
        m.progress(c, &format!("broker {victim} killed"));
        c.restart(victim);
        settle(c);
        m.progress(c, &format!("broker {victim} restarted"));
    }
    m.finish_and_check(c, "kill -9 of each broker");
}

/// Kafka brokers start first, so a Kafka broker is the controller; then,
/// as an operator would, the controller is killed (and restarted) until
/// shardlog wins the election and takes the controller over from Kafka's
/// state in ZooKeeper. A Kafka 3.9 broker allocates producer ids through
/// the controller (AllocateProducerIds, KIP-730): without shardlog's
/// controller answering it, an idempotent producer whose InitProducerId
/// lands on a Kafka broker gets no id ("The node does not support
/// ALLOCATE_PRODUCER_IDS" in Kafka's log; this test failed 3 runs in 4
/// then).
#[test]
fn shardlog_controls_two_kafka_brokers_through_kill9_of_each() {
    let mut c = ReplCluster::start_mixed(
        &[System::Kafka, System::Kafka, System::Shardlog],
        &settings(),
    );
    kill_controllers_until(&mut c, SHARDLOG);
    // CreateTopics to shardlog alone.
    let shardlog = c.node(SHARDLOG).link.address();
    let r = common::cluster_admin(&[
        "create",
        &shardlog,
        "confluent",
        TOPIC,
        &PARTITIONS.to_string(),
        "3",
    ]);
    eprintln!("[mixed create through shardlog: {r}]");
    common::cluster::wait_for(120, "every partition led with a full ISR", || {
        let s = c.states(TOPIC, PARTITIONS);
        (s.len() == PARTITIONS as usize && s.values().all(|st| st.leader >= 0 && st.isr.len() == 3))
            .then_some(())
    });
    let states = c.states(TOPIC, PARTITIONS);
    let by_kafka = states.values().filter(|s| s.leader != SHARDLOG).count();
    assert!(
        by_kafka > 0,
        "Kafka brokers should lead some partitions: {states:?}"
    );
    // Each Kafka broker hands out a producer id: from a block it got from
    // shardlog's controller (AllocateProducerIds).
    for n in c.nodes.iter().filter(|n| n.system == System::Kafka) {
        let id = init_producer_id(&n.link.address());
        eprintln!("[mixed: Kafka broker {} gave producer id {id}]", n.id);
    }
    history_through_kills(&mut c, &[1, 2, SHARDLOG], SHARDLOG);
}

/// kill -9 the controller, wait for the next one, restart the killed
/// broker, until broker `winner` is the controller (Kafka's election: the
/// first to create `/controller` after the old session expired).
fn kill_controllers_until(c: &mut ReplCluster, winner: i32) {
    for _ in 0..10 {
        let old = c.controller();
        if old == winner {
            return;
        }
        c.node(old).kill9();
        // Its session expired once another broker holds /controller, and
        // with it its /brokers/ids entry: it can register again.
        let new = common::cluster::wait_for(60, "a new controller", || {
            let now = c.controller();
            (now != old).then_some(now)
        });
        eprintln!("[mixed: controller {old} killed, {new} won the election]");
        c.restart(old);
    }
    panic!("broker {winner} did not win the controller election in 10 tries");
}

/// InitProducerId (v4, idempotent) to the broker at `address`, retried
/// while it has no id to give (COORDINATOR_LOAD_IN_PROGRESS and the like);
/// the producer id.
fn init_producer_id(address: &str) -> i64 {
    use kafka_protocol::messages::InitProducerIdRequest;
    let last = std::cell::Cell::new(0i16);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let id = std::iter::repeat_with(|| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let mut conn = common::Conn::open_addr(address);
        // No transactional id (the codec's default is an empty one, which
        // Kafka refuses with INVALID_REQUEST).
        let r = conn.call(
            4,
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(kafka_protocol::messages::ProducerId(-1))
                .with_producer_epoch(-1),
        );
        last.set(r.error_code);
        (r.error_code == 0 && r.producer_id.0 >= 0).then_some(r.producer_id.0)
    })
    .find(|r| r.is_some() || std::time::Instant::now() > deadline)
    .flatten();
    id.unwrap_or_else(|| {
        panic!(
            "no producer id from {address} in 60 s: last error code {}",
            last.get()
        )
    })
}

#[test]
fn three_kafka_brokers_replaced_one_by_one_by_shardlog_on_their_log_dirs() {
    let mut c = ReplCluster::start(System::Kafka, 3, &settings());
    kafka_topics_create(&c);
    let mut m = Clients::start(&c, 1);
    m.progress(&mut c, "all Kafka");
    migrate_to_shardlog(&mut c, 1, true);
    settle(&mut c);
    m.progress(&mut c, "broker 1 migrated");
    c.node(1).kill9();
    m.progress(&mut c, "shardlog broker 1 killed");
    c.restart(1);
    settle(&mut c);
    m.progress(&mut c, "shardlog broker 1 restarted");
    migrate_to_shardlog(&mut c, 2, true);
    settle(&mut c);
    m.progress(&mut c, "broker 2 migrated");
    // The last Kafka broker crashes (kill -9) and shardlog recovers its
    // log dir: no clean-shutdown marker, Kafka's index files still at
    // their pre-allocated size.
    migrate_to_shardlog(&mut c, 3, false);
    settle(&mut c);
    m.progress(&mut c, "broker 3 killed with kill -9 and migrated");
    assert!(c.nodes.iter().all(|n| n.system == System::Shardlog));
    m.finish_and_check(&mut c, "rolling migration Kafka → shardlog");
}

/// Stop Kafka broker `id` (controlled shutdown, or kill -9 when not
/// `clean`) and start a shardlog broker on its id and log dir. After a
/// kill -9 its `/brokers/ids/<id>` lives until its ZooKeeper session
/// expires, and a broker registering the id before then fails ("node
/// already exists and owner ... does not match current session", as
/// Kafka's `KafkaZkClient.registerBroker` fails), so the operator waits.
fn migrate_to_shardlog(c: &mut ReplCluster, id: i32, clean: bool) {
    if clean {
        c.node(id).stop();
    } else {
        c.node(id).kill9();
        common::cluster::wait_for(60, "the killed broker's session to expire", || {
            let ids = common::cluster::children(&c.zk.address(), "/brokers/ids");
            (!ids.contains(&id.to_string())).then_some(())
        });
    }
    c.node(id).take_over_with_shardlog();
    c.wait_registered(id);
}

/// Kafka's kafka-verifiable-producer and kafka-verifiable-consumer on the
/// topic, and where the group's coordinator was at each step.
struct Clients {
    producer: VerifiableProducer,
    consumer: VerifiableConsumer,
    group: String,
    coordinators: Vec<(i32, System)>,
}

impl Clients {
    /// Both tools started; the group's offsets partition prefers `broker`.
    fn start(c: &ReplCluster, broker: i32) -> Clients {
        let group = group_preferring(c, broker);
        let dir = c.dir.path();
        Clients {
            producer: VerifiableProducer::spawn(&c.bootstrap(), TOPIC, dir, 300),
            consumer: VerifiableConsumer::spawn(&c.bootstrap(), TOPIC, &group, dir),
            group,
            coordinators: Vec::new(),
        }
    }

    /// Note where the coordinator is now, then wait for 200 more acks and
    /// 200 more records read by the group.
    fn progress(&mut self, c: &mut ReplCluster, what: &str) {
        self.coordinators.push(coordinator(c, &self.group));
        eprintln!(
            "[mixed: {what}; coordinators so far {:?}]",
            self.coordinators
        );
        self.producer
            .wait_acks(180, 200, &format!("200 acks after: {what}"));
        self.consumer
            .wait_consumed(180, 200, &format!("200 records read after: {what}"));
    }

    /// Stop producing; once the group committed every acked offset, stop
    /// it. Then: every acked record read back once and in order
    /// (history.py's check), the group never read below an offset it had
    /// committed and read every acked record, kafka-consumer-groups shows
    /// its last commits, its coordinator moved between Kafka and shardlog
    /// both ways, and after a clean stop the replicas are identical batch
    /// for batch up to the HW.
    fn finish_and_check(self, c: &mut ReplCluster, what: &str) {
        let dir = c.dir.path().to_path_buf();
        let (acked_file, data) = self.producer.finish(&dir);
        eprintln!("[mixed producer: {data}]");
        let mut consumer = self.consumer;
        consumer.wait_committed(180, &common::verifiable::acked_ends(&acked_file));
        let events = consumer.finish();
        let group_read = common::verifiable::assert_consumer_history(&events, &acked_file);
        assert_eq!(
            group_offsets(c, &self.group),
            common::verifiable::committed(&events),
            "{what}: kafka-consumer-groups vs the group's last commits"
        );
        let read_file = drain(&c.bootstrap(), TOPIC, PARTITIONS, &dir);
        let h = check(&acked_file, &read_file);
        eprintln!(
            "[mixed history: acked {} read {}; the group read {group_read}]",
            h["acked"], h["read"]
        );
        assert_history_ok(c.system, what, &h);
        assert_coordinator_moved_both_ways(&self.coordinators);
        let hws = assert_replicas_identical(c, TOPIC, PARTITIONS);
        let per: BTreeMap<String, u64> =
            serde_json::from_value(h["per_partition_read"].clone()).unwrap();
        for (p, hw) in hws.iter().enumerate() {
            assert_eq!(
                per.get(&p.to_string()).copied().unwrap_or(0),
                *hw as u64,
                "{TOPIC}-{p}: HW {hw} after the clean stop vs records read"
            );
        }
    }
}

/// Every replica of the topic and of `__consumer_offsets` in its ISR,
/// then kafka-leader-election gives the preferred replicas their
/// leadership back (the migrated broker leads again what it led).
fn settle(c: &mut ReplCluster) {
    for (topic, partitions) in [(TOPIC, PARTITIONS), (OFFSETS, OFFSETS_PARTITIONS)] {
        for p in 0..partitions {
            c.wait_state(180, "every replica back in the ISR", topic, p, |s| {
                s.isr.len() == 3
            });
        }
    }
    let boot = c.bootstrap();
    common::java::run_ok(
        common::java::kafka_tool("org.apache.kafka.tools.LeaderElectionCommand").args([
            "--bootstrap-server",
            &boot,
            "--election-type",
            "PREFERRED",
            "--all-topic-partitions",
        ]),
        "kafka-leader-election",
    );
}

/// The replicas of each `__consumer_offsets` partition, once it exists
/// (the first FindCoordinator creates it) with every ISR whole.
fn offsets_assignment(c: &ReplCluster) -> serde_json::Value {
    use kafka_protocol::messages::FindCoordinatorRequest;
    use kafka_protocol::protocol::StrBytes;
    let mut conn = common::Conn::open_addr(&c.nodes[0].link.address());
    let _ = conn.call(
        0,
        &FindCoordinatorRequest::default().with_key(StrBytes::from_static_str("probe")),
    );
    common::cluster::wait_for(120, "__consumer_offsets created, every ISR whole", || {
        let s = c.states(OFFSETS, OFFSETS_PARTITIONS);
        (s.len() == OFFSETS_PARTITIONS as usize && s.values().all(|st| st.isr.len() == 3))
            .then_some(())
    });
    let path = format!("/brokers/topics/{OFFSETS}");
    let znodes = common::cluster::read(&c.zk.address(), &[&path]);
    let (text, _) = znodes[&path].clone().expect("__consumer_offsets znode");
    common::cluster::json(&text)["partitions"].clone()
}

/// A group id whose `__consumer_offsets` partition prefers `broker` as
/// its leader (Kafka's `partitionFor`: abs(hashCode) % partitions).
fn group_preferring(c: &ReplCluster, broker: i32) -> String {
    let assignment = offsets_assignment(c);
    (0..)
        .map(|i| format!("migrating-group-{i}"))
        .find(|g| {
            let p = shardlog::group::partition::coordinator_partition(g, OFFSETS_PARTITIONS);
            assignment[p.to_string()][0] == broker
        })
        .expect("some group id")
}

/// The broker coordinating `group` now (the leader of its offsets
/// partition, once that is a running broker) and its system.
fn coordinator(c: &mut ReplCluster, group: &str) -> (i32, System) {
    let p = shardlog::group::partition::coordinator_partition(group, OFFSETS_PARTITIONS);
    let leader = common::cluster::wait_for(120, "a running coordinator", || {
        let l = c.state(OFFSETS, p).leader;
        c.nodes
            .iter()
            .any(|n| n.id == l && n.is_running())
            .then_some(l)
    });
    (leader, c.node(leader).system)
}

/// The group's committed offsets as Kafka's kafka-consumer-groups
/// `--describe` prints them (partition → CURRENT-OFFSET).
fn group_offsets(c: &ReplCluster, group: &str) -> BTreeMap<i32, i64> {
    let mut cmd =
        common::java::kafka_tool("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap(), "--describe"])
        .args(["--group", group]);
    let out = common::java::run_ok(&mut cmd, "kafka-consumer-groups --describe");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let offsets: BTreeMap<i32, i64> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() >= 4 && f[0] == group && f[1] == TOPIC)
        .map(|f| (f[2].parse().unwrap(), f[3].parse().unwrap()))
        .collect();
    // Partitions the sticky partitioner never sent a record have no
    // commit (the caller compares with the group's commits).
    assert!(!offsets.is_empty(), "{text}");
    offsets
}

/// The coordinator went from a Kafka broker to a shardlog broker and from
/// a shardlog broker to a Kafka broker, and ended on shardlog.
fn assert_coordinator_moved_both_ways(coordinators: &[(i32, System)]) {
    let moved = |from: System, to: System| {
        coordinators
            .windows(2)
            .any(|w| w[0].1 == from && w[1].1 == to)
    };
    assert!(
        moved(System::Kafka, System::Shardlog) && moved(System::Shardlog, System::Kafka),
        "the group's coordinator should move both ways: {coordinators:?}"
    );
    assert_eq!(coordinators.last().map(|c| c.1), Some(System::Shardlog));
}

/// Every entry's `(magic, codec)` in a partition folder's segments (the
/// magic at byte 16 of every entry, the codec in the attributes after it).
fn stored_formats(dir: &std::path::Path) -> std::collections::BTreeSet<(u8, u8)> {
    let mut out = std::collections::BTreeSet::new();
    for f in std::fs::read_dir(dir).unwrap() {
        let path = f.unwrap().path();
        if path.extension().is_none_or(|e| e != "log") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let mut at = 0;
        while at + 18 <= bytes.len() {
            let size = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
            if size <= 0 {
                break;
            }
            out.insert((bytes[at + 16], bytes[at + 17] & 0x07));
            at += 12 + size as usize;
        }
    }
    out
}

#[test]
fn a_kafka_log_dir_of_magic_1_messages_taken_over_by_shardlog() {
    let script = |c: &ReplCluster, mode: &str| {
        common::clients::run_py_script(
            &["confluent_kafka", "kafka", "snappy", "lz4.frame"],
            "legacy_log.py",
            &[c.bootstrap(), mode.to_owned()],
        )
    };
    let mut c = ReplCluster::start(
        System::Kafka,
        1,
        &[
            "zookeeper.session.timeout.ms=6000",
            "offsets.topic.replication.factor=1",
            "inter.broker.protocol.version=2.8",
            "log.message.format.version=0.10.2",
            "log.cleaner.enable=false",
        ],
    );
    script(&c, "produce");
    let formats = stored_formats(&c.node(1).log_dir().join("legacy-0"));
    assert_eq!(
        formats,
        [(1, 0), (1, 1), (1, 2), (1, 3)].into_iter().collect(),
        "Kafka stored magic-1 messages, plain and gzip/snappy/lz4 wrappers"
    );
    assert!(
        stored_formats(&c.node(1).log_dir().join("legacy-compact-0"))
            .iter()
            .all(|&(magic, _)| magic == 1)
    );

    c.node(1).stop();
    for key in [
        "inter.broker.protocol.version",
        "log.message.format.version",
        "log.cleaner.enable",
    ] {
        c.node(1).remove_setting(key);
    }
    c.node(1).add_setting("log.cleaner.backoff.ms=200");
    c.node(1).take_over_with_shardlog();
    c.wait_registered(1);
    assert_eq!(script(&c, "check")["checked"], 260, "legacy log read back");

    c.node(1).kill9();
    common::cluster::wait_for(60, "the killed broker's session to expire", || {
        let ids = common::cluster::children(&c.zk.address(), "/brokers/ids");
        (!ids.contains(&"1".to_owned())).then_some(())
    });
    c.restart(1);
    assert_eq!(
        script(&c, "check")["checked"],
        260,
        "legacy log after kill -9"
    );

    // The cleaner (its first round after the restart) compacts the
    // legacy topic: each key's older values go, its latest stays.
    common::cluster::wait_for(60, "the legacy topic compacted", || {
        let records = script(&c, "compacted")["records"]
            .as_array()
            .unwrap()
            .clone();
        let mut latest: BTreeMap<String, (i64, String)> = BTreeMap::new();
        for r in &records {
            let (o, k, v) = (
                r[0].as_i64().unwrap(),
                r[1].as_str().unwrap(),
                r[2].as_str().unwrap(),
            );
            latest.insert(k.to_owned(), (o, v.to_owned()));
        }
        let want: BTreeMap<String, (i64, String)> = (390..400)
            .map(|j| (format!("k{}", j % 10), (j, format!("v{j}"))))
            .collect();
        assert_eq!(latest, want, "every key's latest value, at its offset");
        // The gzip half (offsets below 200) lies in the first, closed
        // segment and every key has a later value: nothing of it may stay.
        records
            .iter()
            .all(|r| r[0].as_i64().unwrap() >= 200)
            .then_some(())
    });
    assert!(
        stored_formats(&c.node(1).log_dir().join("legacy-compact-0"))
            .iter()
            .all(|&(magic, _)| magic == 1),
        "the cleaned segments keep magic 1"
    );
}
