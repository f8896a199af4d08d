//! Consumer groups with real clients (issue 21): confluent-kafka,
//! kafka-python and aiokafka group members (`tests/py/group_member.py`),
//! kafkajs (`tests/js/group_member.js`) and `kcat -G` against one broker.
//! Members are killed with SIGKILL; the history checks that every produced
//! message was consumed at least once, that a member taking over a
//! partition starts at the committed offset, and that a restarted consumer
//! resumes where the group left off. Timeouts are shortened through config
//! (`group.initial.rebalance.delay.ms`, `group.min.session.timeout.ms`,
//! the clients' `session.timeout.ms`), never by sleeping.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{venv_python, Broker};

const GROUP_OVERRIDES: &[&str] = &[
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=500",
];

/// One consumed record as a member reported it (after its commit).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Consumed {
    partition: i32,
    offset: i64,
    value: String,
}

#[derive(Default)]
struct History {
    records: Vec<Consumed>,
    assignments: Vec<Vec<i32>>,
    /// Per partition, the last next-offset a commit returned for.
    commits: BTreeMap<i32, i64>,
    raw: Vec<String>,
}

/// A group member process and what it printed.
struct Member {
    child: Child,
    history: Arc<Mutex<History>>,
    name: String,
}

impl Member {
    fn python(client: &str, broker: &Broker, group: &str, topic: &str, extra: &[&str]) -> Member {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/group_member.py");
        let mut cmd = Command::new(venv_python());
        cmd.arg(script).args([
            "--client",
            client,
            "--bootstrap",
            &broker.bootstrap(),
            "--group",
            group,
            "--topic",
            topic,
        ]);
        cmd.args(extra);
        Member::spawn(cmd, client)
    }

    fn kafkajs(broker: &Broker, group: &str, topic: &str) -> Member {
        let modules = std::env::var("SHARDLOG_TEST_NODE_MODULES").unwrap_or_else(|_| {
            panic!("kafkajs missing: run `bash tests/run.sh` (npm install kafkajs into the test cache)")
        });
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/js/group_member.js");
        let mut cmd = Command::new("node");
        cmd.arg(script)
            .args([&broker.bootstrap(), group, topic])
            .env("NODE_PATH", modules);
        Member::spawn(cmd, "kafkajs")
    }

    fn spawn(mut cmd: Command, name: &str) -> Member {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {name} member: {e}"));
        let stdout = child.stdout.take().unwrap();
        let history = Arc::new(Mutex::new(History::default()));
        let h = history.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) else {
                    continue;
                };
                let mut h = h.lock().unwrap();
                h.raw.push(line.clone());
                if let Some(a) = v.get("assigned") {
                    let parts = a
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|p| p.as_i64().unwrap() as i32)
                        .collect();
                    h.assignments.push(parts);
                } else if let Some(c) = v.get("committed") {
                    for pair in c.as_array().unwrap() {
                        let (p, o) = (pair[0].as_i64().unwrap(), pair[1].as_i64().unwrap());
                        h.commits.insert(p as i32, o);
                    }
                } else if let Some(p) = v.get("p") {
                    h.records.push(Consumed {
                        partition: p.as_i64().unwrap() as i32,
                        offset: v["o"].as_i64().unwrap(),
                        value: v["v"].as_str().unwrap().to_owned(),
                    });
                }
            }
        });
        Member {
            child,
            history,
            name: name.to_owned(),
        }
    }

    fn records(&self) -> Vec<Consumed> {
        self.history.lock().unwrap().records.clone()
    }

    fn commits(&self) -> BTreeMap<i32, i64> {
        self.history.lock().unwrap().commits.clone()
    }

    fn assignments(&self) -> Vec<Vec<i32>> {
        self.history.lock().unwrap().assignments.clone()
    }

    fn last_assignment(&self) -> Option<Vec<i32>> {
        self.history.lock().unwrap().assignments.last().cloned()
    }

    fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM: the member commits, leaves the group and exits.
    fn stop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{} member did not stop on SIGTERM", self.name);
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Poll `cond` until it holds or `secs` pass (then fail with `what`).
fn wait_for(secs: u64, what: &str, cond: impl FnMut() -> bool) {
    if !wait_until(secs, cond) {
        panic!("timed out after {secs} s waiting for {what}");
    }
}

/// Poll `cond` for up to `secs`; whether it came true.
fn wait_until(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

/// Create `topic` with `partitions` and produce `values` round-robin over
/// the partitions with acks=all (confluent-kafka).
fn create_and_produce(broker: &Broker, topic: &str, partitions: i32, values: &[String]) {
    let code = format!(
        r#"
import os, json
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
b = os.environ["BOOTSTRAP"]
a = AdminClient({{"bootstrap.servers": b}})
fs = a.create_topics([NewTopic("{topic}", {partitions}, 1)])
for f in fs.values():
    try:
        f.result()
    except Exception as e:
        if "TOPIC_ALREADY_EXISTS" not in str(e):
            raise
produce(b, "{topic}", {partitions}, json.loads(os.environ["VALUES"]))
"#
    );
    run_produce(broker, &code, values);
}

fn produce(broker: &Broker, topic: &str, partitions: i32, values: &[String]) {
    let code = format!(
        r#"
import os, json
produce(os.environ["BOOTSTRAP"], "{topic}", {partitions}, json.loads(os.environ["VALUES"]))
"#
    );
    run_produce(broker, &code, values);
}

fn run_produce(broker: &Broker, body: &str, values: &[String]) {
    let prelude = r#"
from confluent_kafka import Producer
def produce(bootstrap, topic, partitions, values):
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    errors = []
    def cb(err, msg):
        if err is not None:
            errors.append(str(err))
    for i, v in enumerate(values):
        p.produce(topic, v.encode(), partition=i % partitions, on_delivery=cb)
    p.flush(30)
    assert not errors, errors
"#;
    let out = Command::new(venv_python())
        .args(["-c", &format!("{prelude}\n{body}")])
        .env("BOOTSTRAP", broker.bootstrap())
        .env("VALUES", serde_json::to_string(values).unwrap())
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "produce failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn values(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}-{i}")).collect()
}

fn consumed_values(members: &[&Member]) -> BTreeSet<String> {
    members
        .iter()
        .flat_map(|m| m.records().into_iter().map(|r| r.value))
        .collect()
}

/// Per partition, the offsets a member consumed, in order.
fn by_partition(records: &[Consumed]) -> BTreeMap<i32, Vec<i64>> {
    let mut out: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for r in records {
        out.entry(r.partition).or_default().push(r.offset);
    }
    out
}

/// Every member's offsets per partition only grow (order kept).
fn assert_in_order(members: &[&Member]) {
    for m in members {
        for (p, offsets) in by_partition(&m.records()) {
            assert!(
                offsets.windows(2).all(|w| w[0] < w[1]),
                "{}: partition {p} out of order: {offsets:?}",
                m.name
            );
        }
    }
}

/// Per partition, what had been committed when a member was killed: at
/// least the last commit any member saw returned, at most the killed
/// member's last processed offset + 1 (it may die after the coordinator
/// stored a commit, before the reply reached it).
struct AtKill {
    committed: BTreeMap<i32, i64>,
    processed: BTreeMap<i32, i64>,
}

impl AtKill {
    fn of(victim: &Member, others: &[Member]) -> AtKill {
        let mut committed = victim.commits();
        for m in others {
            for (p, o) in m.commits() {
                let c = committed.entry(p).or_insert(o);
                *c = (*c).max(o);
            }
        }
        let processed = by_partition(&victim.records())
            .into_iter()
            .map(|(p, o)| (p, *o.last().unwrap() + 1))
            .collect();
        AtKill {
            committed,
            processed,
        }
    }
}

/// A taken-over partition resumes at the committed offset: its new owner's
/// first record after the kill is neither before the last commit seen
/// returned (a re-read from 0 or a stale offset) nor after what the killed
/// member had processed (a skip). `before[i]`: member i's record count at
/// the kill.
fn assert_resumed_at_commits(members: &[Member], before: &[usize], at: &AtKill, parts: &[i32]) {
    for p in parts {
        let low = at.committed.get(p).copied().unwrap_or(0);
        let high = at.processed.get(p).copied().unwrap_or(low).max(low);
        let first = members
            .iter()
            .zip(before)
            .flat_map(|(m, &n)| m.records().split_off(n))
            .filter(|r| r.partition == *p)
            .map(|r| r.offset)
            .min()
            .unwrap_or_else(|| panic!("partition {p}: nothing read after the kill"));
        assert!(
            (low..=high).contains(&first),
            "partition {p}: the new owner started at {first}, not at the committed offset \
             (between {low} and {high})"
        );
    }
}

/// The group scenario every client goes through:
/// 1. `n` members share a 12-partition topic (every partition assigned once);
/// 2. one is killed with SIGKILL; the rest take over its partitions, each
///    starting right after the last offset the killed member committed;
/// 3. all produced messages are consumed at least once, in order per
///    partition and member;
/// 4. after the group stops cleanly, a new member resumes at the committed
///    offsets: it reads only what was produced since.
fn group_scenario(client: &str, n: usize, spawn: impl Fn(&Broker, &str, &str) -> Member) {
    let broker = Broker::start_with(GROUP_OVERRIDES);
    let topic = format!("groups-{client}");
    let group = format!("g-{client}");
    let first = values("a", 0..600);
    create_and_produce(&broker, &topic, 12, &first);
    let mut members: Vec<Member> = (0..n).map(|_| spawn(&broker, &group, &topic)).collect();
    wait_for(
        90,
        "every partition assigned once across the members",
        || {
            let mut all: Vec<i32> = members
                .iter()
                .filter_map(|m| m.last_assignment())
                .flatten()
                .collect();
            all.sort_unstable();
            all == (0..12).collect::<Vec<_>>()
                && members
                    .iter()
                    .all(|m| m.last_assignment().is_some_and(|a| !a.is_empty()))
        },
    );
    wait_for(60, "the first messages consumed", || {
        let all: Vec<&Member> = members.iter().collect();
        consumed_values(&all).len() >= first.len() / 2
    });
    // Kill one member; note what was committed and processed then.
    let mut victim = members.remove(0);
    victim.kill9();
    let survivors_before: Vec<usize> = members.iter().map(|m| m.records().len()).collect();
    let at_kill = AtKill::of(&victim, &members);
    let killed_parts = victim.last_assignment().unwrap();
    let second = values("b", 0..600);
    produce(&broker, &topic, 12, &second);
    let expected: BTreeSet<String> = first.iter().chain(&second).cloned().collect();
    let all_consumed = || {
        let mut all: Vec<&Member> = members.iter().collect();
        all.push(&victim);
        consumed_values(&all).is_superset(&expected)
    };
    if !wait_until(120, all_consumed) {
        let mut all: Vec<&Member> = members.iter().collect();
        all.push(&victim);
        let seen = consumed_values(&all);
        let missing: Vec<&String> = expected.difference(&seen).take(20).collect();
        for m in &all {
            eprintln!("{}: assignments {:?}", m.name, m.assignments());
        }
        panic!(
            "timed out after 120 s waiting for every message consumed after the kill; \
             {} missing, first: {missing:?}",
            expected.difference(&seen).count()
        );
    }
    // The survivors own all 12 partitions, once each, when the group has
    // settled (a member may still be rejoining when the last message is in).
    let owned = || {
        let mut owned: Vec<i32> = members
            .iter()
            .filter_map(|m| m.last_assignment())
            .flatten()
            .collect();
        owned.sort_unstable();
        owned
    };
    if !wait_until(60, || owned() == (0..12).collect::<Vec<_>>()) {
        for m in &members {
            eprintln!("{}: assignments {:?}", m.name, m.assignments());
        }
        panic!("after the kill the survivors own {:?}", owned());
    }
    assert_resumed_at_commits(&members, &survivors_before, &at_kill, &killed_parts);
    let mut all: Vec<&Member> = members.iter().collect();
    all.push(&victim);
    assert_in_order(&all);
    for m in &mut members {
        m.stop();
    }
    // A new member resumes at the committed offsets.
    assert_a_new_member_resumes_at_the_commits(&broker, &group, &topic, spawn);
}

/// Step 4 of [`group_scenario`]: after the group stopped cleanly, a new
/// member reads only what was produced since.
fn assert_a_new_member_resumes_at_the_commits(
    broker: &Broker,
    group: &str,
    topic: &str,
    spawn: impl Fn(&Broker, &str, &str) -> Member,
) {
    let third = values("c", 0..120);
    produce(broker, topic, 12, &third);
    let fresh = spawn(broker, group, topic);
    let want: BTreeSet<String> = third.iter().cloned().collect();
    if !wait_until(90, || consumed_values(&[&fresh]).is_superset(&want)) {
        let seen = consumed_values(&[&fresh]);
        let raw = fresh.history.lock().unwrap().raw.clone();
        panic!(
            "timed out after 90 s waiting for the new member to read what was produced since: \
             {} of {} read; its assignments {:?}; its last lines {:?}",
            want.intersection(&seen).count(),
            want.len(),
            fresh.assignments(),
            &raw[raw.len().saturating_sub(8)..]
        );
    }
    let reread: Vec<String> = fresh
        .records()
        .into_iter()
        .map(|r| r.value)
        .filter(|v| !v.starts_with("c-"))
        .collect();
    assert!(
        reread.is_empty(),
        "a clean stop committed everything, yet {} old records were read again: {:?}",
        reread.len(),
        &reread[..reread.len().min(5)]
    );
}

fn python_member(client: &'static str) -> impl Fn(&Broker, &str, &str) -> Member {
    move |b, g, t| Member::python(client, b, g, t, &["--session-ms", "3000"])
}

#[test]
fn confluent_kafka_group_members_share_partitions_and_take_over_a_killed_member() {
    group_scenario("confluent", 3, python_member("confluent"));
}

#[test]
fn kafka_python_group_members_share_partitions_and_take_over_a_killed_member() {
    group_scenario("kafka-python", 2, python_member("kafka-python"));
}

#[test]
fn aiokafka_group_members_share_partitions_and_take_over_a_killed_member() {
    group_scenario("aiokafka", 2, python_member("aiokafka"));
}

#[test]
fn kafkajs_group_members_share_partitions_and_take_over_a_killed_member() {
    group_scenario("kafkajs", 3, Member::kafkajs);
}

#[test]
fn cooperative_sticky_members_keep_their_partitions_across_a_join() {
    let broker = Broker::start_with(GROUP_OVERRIDES);
    let topic = "groups-coop";
    let group = "g-coop";
    let first = values("a", 0..240);
    create_and_produce(&broker, topic, 12, &first);
    let extra = ["--session-ms", "3000", "--strategy", "cooperative-sticky"];
    let a = Member::python("confluent", &broker, group, topic, &extra);
    wait_for(60, "the first member owns every partition", || {
        a.last_assignment().is_some_and(|p| p.len() == 12)
    });
    let b = Member::python("confluent", &broker, group, topic, &extra);
    wait_for(
        60,
        "the partitions split between the two members",
        || match (a.last_assignment(), b.last_assignment()) {
            (Some(x), Some(y)) => x.len() + y.len() == 12 && !x.is_empty() && !y.is_empty(),
            _ => false,
        },
    );
    // Cooperative: the first member kept what it still owns (it never
    // went through an empty assignment).
    let a_history = a.assignments();
    assert!(
        a_history.iter().all(|p| !p.is_empty()),
        "cooperative-sticky revoked everything: {a_history:?}"
    );
    let second = values("b", 0..240);
    produce(&broker, topic, 12, &second);
    let expected: BTreeSet<String> = first.iter().chain(&second).cloned().collect();
    wait_for(90, "every message consumed", || {
        consumed_values(&[&a, &b]).is_superset(&expected)
    });
    assert_in_order(&[&a, &b]);
}

#[test]
fn a_static_member_restarting_within_its_session_timeout_causes_no_rebalance() {
    let broker = Broker::start_with(GROUP_OVERRIDES);
    let topic = "groups-static";
    let group = "g-static";
    create_and_produce(&broker, topic, 4, &values("a", 0..40));
    let session = ["--session-ms", "20000"];
    let mut s = Member::python(
        "confluent",
        &broker,
        group,
        topic,
        &["--session-ms", "20000", "--instance-id", "static-1"],
    );
    let other = Member::python("confluent", &broker, group, topic, &session);
    wait_for(60, "both members assigned", || {
        match (s.last_assignment(), other.last_assignment()) {
            (Some(x), Some(y)) => x.len() + y.len() == 4 && !x.is_empty() && !y.is_empty(),
            _ => false,
        }
    });
    let before_other = other.assignments().len();
    let s_parts = s.last_assignment().unwrap();
    s.kill9();
    // Restart with the same group.instance.id, well within 20 s.
    let s2 = Member::python(
        "confluent",
        &broker,
        group,
        topic,
        &["--session-ms", "20000", "--instance-id", "static-1"],
    );
    wait_for(60, "the restarted static member assigned", || {
        s2.last_assignment().is_some()
    });
    assert_eq!(
        s2.last_assignment().unwrap(),
        s_parts,
        "same partitions back"
    );
    produce(&broker, topic, 4, &values("b", 0..40));
    let want: BTreeSet<String> = values("b", 0..40).into_iter().collect();
    wait_for(60, "new messages consumed", || {
        consumed_values(&[&s2, &other]).is_superset(&want)
    });
    assert_eq!(
        other.assignments().len(),
        before_other,
        "the other member saw a rebalance: {:?}",
        other.assignments()
    );
}

#[test]
fn kcat_balanced_consumer_reads_every_message_and_resumes_from_its_commit() {
    let broker = Broker::start_with(GROUP_OVERRIDES);
    let topic = "groups-kcat";
    let first = values("a", 0..90);
    create_and_produce(&broker, topic, 3, &first);
    let read = |expect: usize| -> Vec<String> {
        let out = Command::new(common::kcat())
            .args([
                "-b",
                &broker.bootstrap(),
                "-G",
                "g-kcat",
                // Not `-o beginning`: in -G mode kcat seeks every
                // assigned partition there, over the committed offsets.
                "-X",
                "auto.offset.reset=earliest",
                "-X",
                "enable.auto.commit=true",
                "-X",
                "auto.commit.interval.ms=100",
                "-c",
                &expect.to_string(),
                "-q",
                topic,
            ])
            .output()
            .expect("kcat");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let got: BTreeSet<String> = read(first.len()).into_iter().collect();
    assert_eq!(got, first.iter().cloned().collect::<BTreeSet<_>>());
    let second = values("b", 0..30);
    produce(&broker, topic, 3, &second);
    // kcat commits on close: the group resumes after the first 90.
    let again = read(second.len());
    assert_eq!(
        again.iter().cloned().collect::<BTreeSet<_>>(),
        second.iter().cloned().collect::<BTreeSet<_>>(),
        "kcat resumed at the committed offsets"
    );
}

/// Committed offsets reload from `__consumer_offsets` after a broker
/// restart; `kill` restarts with kill -9, under a flush policy that says
/// every append is flushed (`log.flush.interval.messages=1`: acknowledged
/// data survives kill -9 whenever the flush policy said it was flushed).
fn offsets_survive_a_restart(kill: bool) {
    let mut overrides = GROUP_OVERRIDES.to_vec();
    if kill {
        overrides.push("log.flush.interval.messages=1");
    }
    let broker = Broker::start_with(&overrides);
    let topic = "groups-restart";
    let group = "g-restart";
    let first = values("a", 0..100);
    create_and_produce(&broker, topic, 4, &first);
    let mut m = Member::python(
        "confluent",
        &broker,
        group,
        topic,
        &["--session-ms", "3000"],
    );
    let want: BTreeSet<String> = first.iter().cloned().collect();
    wait_for(60, "the first messages consumed", || {
        consumed_values(&[&m]).is_superset(&want)
    });
    m.stop();
    let dir = if kill {
        broker.kill_keeping_dir()
    } else {
        broker.stop_keeping_dir().1
    };
    let broker = Broker::start_in(dir, &overrides);
    let described = common::run_python(
        &broker,
        &format!(
            r#"
import os
from confluent_kafka.admin import AdminClient
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
a = AdminClient({{"bootstrap.servers": os.environ["BOOTSTRAP"]}})
f = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions("{group}", [TopicPartition("{topic}", p) for p in range(4)])])
r = list(f.values())[0].result()
print(sorted((tp.partition, tp.offset) for tp in r.topic_partitions))
"#
        ),
    );
    assert_eq!(
        described.trim(),
        "[(0, 25), (1, 25), (2, 25), (3, 25)]",
        "committed offsets after the restart (kill -9: {kill})"
    );
    let second = values("b", 0..20);
    produce(&broker, topic, 4, &second);
    let m2 = Member::python(
        "confluent",
        &broker,
        group,
        topic,
        &["--session-ms", "3000"],
    );
    let want: BTreeSet<String> = second.iter().cloned().collect();
    wait_for(60, "the member resumes after the restart", || {
        consumed_values(&[&m2]).is_superset(&want)
    });
    assert!(
        m2.records().iter().all(|r| r.value.starts_with("b-")),
        "re-read committed records after the restart"
    );
}

#[test]
fn committed_offsets_reload_after_a_clean_broker_restart() {
    offsets_survive_a_restart(false);
}

#[test]
fn committed_offsets_survive_a_broker_kill_9_when_flushed() {
    offsets_survive_a_restart(true);
}
