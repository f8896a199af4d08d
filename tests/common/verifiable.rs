//! Kafka's kafka-verifiable-producer and kafka-verifiable-consumer
//! (`org.apache.kafka.tools.VerifiableProducer` / `VerifiableConsumer`,
//! the clients Kafka's own system tests drive through broker faults) run
//! in the background, each writing its JSON event lines to a file, and the
//! checks on those events:
//! - the producer's `producer_send_success` events become history.py's
//!   acked file (`<partition> <offset> <value>`), so the same history
//!   check reads them back;
//! - the consumer (`--verbose`: one `record_data` event per record, an
//!   `offsets_committed` event per commit) must never read a partition
//!   below an offset it committed successfully — which is what happens
//!   when a group coordinator loses committed offsets and the consumer
//!   resets — and must have read every acknowledged record.
#![allow(dead_code)] // each test binary uses a part of it

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const PRODUCER: &str = "org.apache.kafka.tools.VerifiableProducer";
const CONSUMER: &str = "org.apache.kafka.tools.VerifiableConsumer";

/// One tool process writing its event lines to `out` (stderr beside it).
struct Tool {
    child: Option<Child>,
    out: PathBuf,
    class: &'static str,
}

impl Tool {
    fn spawn(class: &'static str, args: &[String], out: PathBuf) -> Tool {
        let stdout = std::fs::File::create(&out).expect("event file");
        let stderr = std::fs::File::create(out.with_extension("err")).expect("stderr file");
        let child = super::java::kafka_tool(class)
            .args(args)
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::from(stderr))
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {class}: {e}; run `bash tests/run.sh` (JDK + jars)"));
        Tool {
            child: Some(child),
            out,
            class,
        }
    }

    /// Every complete event line so far (a line still being written and
    /// lines that are not JSON are skipped).
    fn events(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        text.split_inclusive('\n')
            .filter(|l| l.ends_with('\n'))
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn stderr_tail(&self) -> String {
        let text = std::fs::read_to_string(self.out.with_extension("err")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().rev().take(40).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join("\n")
    }

    /// Fails the test, with the tool's stderr, if it exited.
    fn assert_running(&mut self, what: &str) {
        let child = self.child.as_mut().expect("running");
        if let Some(status) = child.try_wait().expect("wait") {
            panic!(
                "{} exited ({status}) waiting for {what}:\n{}",
                self.class,
                self.stderr_tail()
            );
        }
    }

    /// Poll `cond` on the events until it holds, failing after `secs` or
    /// if the tool exits.
    fn wait(&mut self, secs: u64, what: &str, cond: impl Fn(&[Value]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if cond(&self.events()) {
                return;
            }
            self.assert_running(what);
            assert!(
                Instant::now() < deadline,
                "{}: timed out after {secs} s waiting for {what}:\n{}",
                self.class,
                self.stderr_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM: the tool's shutdown hook closes its client (the producer
    /// flushes what it holds) and prints `shutdown_complete`; the events.
    fn terminate(&mut self, secs: u64) -> Vec<Value> {
        let mut child = self.child.take().expect("running");
        // SAFETY: plain kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let deadline = Instant::now() + Duration::from_secs(secs);
        while child.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} did not stop within {secs} s of SIGTERM:\n{}",
                    self.class,
                    self.stderr_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let events = self.events();
        assert!(
            named(&events, "shutdown_complete").next().is_some(),
            "{} stopped without shutdown_complete:\n{}",
            self.class,
            self.stderr_tail()
        );
        events
    }
}

impl Drop for Tool {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn named<'a>(events: &'a [Value], name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    events.iter().filter(move |e| e["name"] == name)
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// kafka-verifiable-producer with `--acks -1`, idempotence on and retries
/// unbounded (within `delivery.timeout.ms`), values "1.<i>" (history.py
/// reads them as producer "1", sequence i), until
/// [`VerifiableProducer::finish`].
pub struct VerifiableProducer {
    tool: Tool,
}

impl VerifiableProducer {
    pub fn spawn(bootstrap: &str, topic: &str, dir: &Path, throughput: u32) -> Self {
        // The tool sets `retries=0` (so Kafka 3.x turns idempotence off)
        // unless --producer.config says otherwise; Kafka's system tests
        // pass retries the same way.
        let config = dir.join(format!("verifiable-producer-{topic}.properties"));
        std::fs::write(
            &config,
            "retries=2147483647\nenable.idempotence=true\ndelivery.timeout.ms=120000\n",
        )
        .expect("producer.config");
        let config = config.display().to_string();
        let args: Vec<String> = [
            "--producer.config",
            &config,
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--acks",
            "-1",
            "--max-messages",
            "-1",
            "--throughput",
            &throughput.to_string(),
            "--value-prefix",
            "1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = dir.join(format!("verifiable-producer-{topic}.jsonl"));
        VerifiableProducer {
            tool: Tool::spawn(PRODUCER, &args, out),
        }
    }

    pub fn acked(&self) -> usize {
        named(&self.tool.events(), "producer_send_success").count()
    }

    /// Wait until at least `n` more records are acknowledged than now.
    pub fn wait_acks(&mut self, secs: u64, n: usize, what: &str) {
        let target = self.acked() + n;
        self.tool.wait(secs, what, |events| {
            named(events, "producer_send_success").count() >= target
        });
    }

    /// Stop (SIGTERM: the producer flushes and closes), check that no
    /// send failed, and write the acknowledged records as history.py's
    /// acked file; its path, and the tool's `tool_data` event.
    pub fn finish(mut self, dir: &Path) -> (PathBuf, Value) {
        let events = self.tool.terminate(180);
        let errors: Vec<&Value> = named(&events, "producer_send_error").collect();
        assert!(
            errors.is_empty(),
            "kafka-verifiable-producer: {} sends failed (acks=all, idempotent), first {}",
            errors.len(),
            errors[0]
        );
        let acked_file = dir.join("verifiable-acked.txt");
        let lines: String = named(&events, "producer_send_success")
            .map(|e| {
                let value = e["value"].as_str().expect("value");
                format!("{} {} {value}\n", int(&e["partition"]), int(&e["offset"]))
            })
            .collect();
        std::fs::write(&acked_file, lines).expect("acked file");
        let data = named(&events, "tool_data")
            .last()
            .cloned()
            .expect("tool_data event");
        (acked_file, data)
    }
}

/// kafka-verifiable-consumer in group `group` (`--verbose`, committing
/// after each poll as the tool does without `--enable-autocommit`, reset
/// to earliest).
pub struct VerifiableConsumer {
    tool: Tool,
}

impl VerifiableConsumer {
    pub fn spawn(bootstrap: &str, topic: &str, group: &str, dir: &Path) -> Self {
        let args: Vec<String> = [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--group-id",
            group,
            "--reset-policy",
            "earliest",
            "--session-timeout",
            "10000",
            "--verbose",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let out = dir.join(format!("verifiable-consumer-{group}.jsonl"));
        VerifiableConsumer {
            tool: Tool::spawn(CONSUMER, &args, out),
        }
    }

    /// Records read so far.
    pub fn consumed(&self) -> usize {
        named(&self.tool.events(), "record_data").count()
    }

    /// Wait until at least `n` more records are read than now.
    pub fn wait_consumed(&mut self, secs: u64, n: usize, what: &str) {
        let target = self.consumed() + n;
        self.tool.wait(secs, what, |events| {
            named(events, "record_data").count() >= target
        });
    }

    /// Wait until the group's committed offset of every partition in
    /// `ends` reached that end (everything before it read and committed).
    pub fn wait_committed(&mut self, secs: u64, ends: &BTreeMap<i32, i64>) {
        self.tool
            .wait(secs, "the group to commit every end offset", |events| {
                let done = committed(events);
                ends.iter()
                    .all(|(p, end)| done.get(p).is_some_and(|c| c >= end))
            });
    }

    /// Stop (SIGTERM: the consumer leaves its group); every event.
    pub fn finish(mut self) -> Vec<Value> {
        self.tool.terminate(120)
    }
}

/// The last successfully committed offset of each partition.
pub fn committed(events: &[Value]) -> BTreeMap<i32, i64> {
    let mut done = BTreeMap::new();
    for e in named(events, "offsets_committed").filter(|e| e["success"] == true) {
        for o in e["offsets"].as_array().expect("offsets") {
            done.insert(int(&o["partition"]) as i32, int(&o["offset"]));
        }
    }
    done
}

/// What the consumer's events show (see the module doc); panics naming
/// the first violation.
pub fn assert_consumer_history(events: &[Value], acked_file: &Path) -> usize {
    let mut committed_so_far: BTreeMap<i32, i64> = BTreeMap::new();
    let mut read: std::collections::BTreeSet<(i32, i64)> = Default::default();
    for e in events {
        if e["name"] == "offsets_committed" && e["success"] == true {
            for o in e["offsets"].as_array().expect("offsets") {
                let p = int(&o["partition"]) as i32;
                let c = committed_so_far.entry(p).or_insert(0);
                *c = (*c).max(int(&o["offset"]));
            }
        } else if e["name"] == "record_data" {
            let (p, off) = (int(&e["partition"]) as i32, int(&e["offset"]));
            let c = committed_so_far.get(&p).copied().unwrap_or(0);
            assert!(
                off >= c,
                "the group read partition {p} at offset {off} after committing {c}: \
                 its committed offsets were lost (the consumer reset)"
            );
            read.insert((p, off));
        }
    }
    let missing: Vec<(i32, i64)> = acked_positions(acked_file)
        .into_iter()
        .filter(|at| !read.contains(at))
        .collect();
    assert!(
        missing.is_empty(),
        "the group never read {} acknowledged records, first {:?}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
    read.len()
}

/// One past the highest acknowledged offset of each partition.
pub fn acked_ends(acked_file: &Path) -> BTreeMap<i32, i64> {
    let mut ends = BTreeMap::new();
    for (p, off) in acked_positions(acked_file) {
        let e = ends.entry(p).or_insert(0);
        *e = (*e).max(off + 1);
    }
    ends
}

/// (partition, offset) of each line of history.py's acked file
/// (`<partition> <offset> <value>`).
fn acked_positions(acked_file: &Path) -> Vec<(i32, i64)> {
    std::fs::read_to_string(acked_file)
        .expect("acked file")
        .lines()
        .map(|line| {
            let mut f = line.split(' ');
            let p: i32 = f.next().unwrap().parse().unwrap();
            let off: i64 = f.next().unwrap().parse().unwrap();
            (p, off)
        })
        .collect()
}
