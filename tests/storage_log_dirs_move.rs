//! Log dirs through Kafka's own tools (KIP-113): one broker with two log
//! dirs.
//!
//! - `kafka-log-dirs --describe` lists each partition in the dir that
//!   holds its folder on disk, with the size of its segments' batches;
//! - `kafka-reassign-partitions --execute` with a `log_dirs` plan (it
//!   sends AlterReplicaLogDirs, and `--replica-alter-log-dirs-throttle`
//!   sets `replica.alter.log.dirs.io.max.bytes.per.second`, so the copy
//!   takes a few rounds) moves a partition under a running acks=all
//!   idempotent producer; the broker is killed with SIGKILL while the
//!   future replica is half copied, restarts, and the move resumes from
//!   the `-future` folder and completes (`--verify` reports it);
//! - while the move runs (before the kill, and from the restart until
//!   `--verify` reports it done, across the swap), a reader reads the
//!   moving partition from its start to its HW over and over: every read
//!   answers without error, with contiguous whole batches;
//! - afterwards the partition's folder is in the new dir only, nothing
//!   `-future` or `-delete` is left, and the history check reads every
//!   acknowledged record back once, in order.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use kafka_protocol::records::Compression;

use common::cluster::wait_for;
use common::records::{batch_base_offset, batch_last_offset, whole_batches};
use common::replica_cluster::{assert_history_ok, check, drain, HistoryProducer, System};
use common::{encode_batch, now_ms, Broker, Conn, FetchSpec, RawRecord};

const LOG_DIRS_COMMAND: &str = "org.apache.kafka.tools.LogDirsCommand";
const REASSIGN_COMMAND: &str = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
const TOPIC: &str = "moves";

/// Bytes of the whole batches in a partition folder's segments (the
/// active segment's file is pre-allocated past them, zeros).
fn logical_size(folder: &Path) -> u64 {
    let mut total = 0;
    for e in std::fs::read_dir(folder).unwrap().flatten() {
        if e.path().extension().is_none_or(|x| x != "log") {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let mut pos = 0usize;
        while pos + 12 <= bytes.len() {
            let len = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
            if len <= 0 || pos + 12 + len as usize > bytes.len() {
                break;
            }
            pos += 12 + len as usize;
        }
        total += pos as u64;
    }
    total
}

/// The dirs (indexes) holding a folder named `name`.
fn holding(dirs: &[PathBuf], name: &str) -> Vec<usize> {
    (0..dirs.len())
        .filter(|&i| dirs[i].join(name).is_dir())
        .collect()
}

/// Folders of any dir whose name ends with `suffix`.
fn leftovers(dirs: &[PathBuf], suffix: &str) -> Vec<String> {
    dirs.iter()
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect()
}

/// (dir, partition, size, isFuture) of a replica.
type Replica = (String, i32, u64, bool);

/// `kafka-log-dirs --describe`: (dir, partition, size, isFuture) of
/// every replica of [`TOPIC`], and the dirs with their errors.
fn describe(boot: &str) -> (Vec<Replica>, Vec<(String, serde_json::Value)>) {
    let mut cmd = common::java::kafka_tool(LOG_DIRS_COMMAND);
    cmd.args([
        "--bootstrap-server",
        boot,
        "--describe",
        "--topic-list",
        TOPIC,
    ]);
    let out = common::java::run_ok(&mut cmd, "kafka-log-dirs --describe");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let json = text
        .lines()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON in kafka-log-dirs output:\n{text}"));
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let brokers = v["brokers"].as_array().expect("brokers");
    assert_eq!(brokers.len(), 1, "{v}");
    let mut replicas = Vec::new();
    let mut dirs = Vec::new();
    for d in brokers[0]["logDirs"].as_array().expect("logDirs") {
        let dir = d["logDir"].as_str().expect("logDir").to_string();
        dirs.push((dir.clone(), d["error"].clone()));
        for p in d["partitions"].as_array().expect("partitions") {
            let name = p["partition"].as_str().expect("partition");
            let (topic, n) = name.rsplit_once('-').unwrap();
            assert_eq!(topic, TOPIC, "{v}");
            replicas.push((
                dir.clone(),
                n.parse().unwrap(),
                p["size"].as_u64().expect("size"),
                p["isFuture"].as_bool().expect("isFuture"),
            ));
        }
    }
    replicas.sort();
    dirs.sort_by(|a, b| a.0.cmp(&b.0));
    (replicas, dirs)
}

fn reassign(boot: &str, plan: &Path, mode: &str, extra: &[&str]) -> String {
    let mut cmd = common::java::kafka_tool(REASSIGN_COMMAND);
    let plan = plan.display().to_string();
    cmd.args([
        "--bootstrap-server",
        boot,
        mode,
        "--reassignment-json-file",
        &plan,
    ]);
    cmd.args(extra);
    let out = common::java::run_ok(&mut cmd, "kafka-reassign-partitions");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// About 3 MiB in partition `p`: several copy rounds (1 MiB each).
/// Values "bulk<pad>.<i>" (a producer of their own for the history
/// check, which allows unacknowledged reads).
fn bulk_load(conn: &mut Conn, p: i32) {
    let pad = "x".repeat(1000);
    for b in 0..15 {
        let values: Vec<Vec<u8>> = (b * 200..(b + 1) * 200)
            .map(|i| format!("bulk{pad}.{i}").into_bytes())
            .collect();
        let ts = now_ms();
        let records: Vec<RawRecord> = values.iter().map(|v| (None, &v[..], ts)).collect();
        let r = conn.produce(TOPIC, p, encode_batch(&records, Compression::None), -1);
        assert_eq!(r.error_code, 0, "bulk produce to {TOPIC}-{p}");
    }
}

/// A reader of partition 0 while it moves: whole passes from offset 0 to
/// the HW, each fetch answered without error and its batches contiguous.
/// A failed check panics the thread, which [`ReadAlong::finish`] reports.
struct ReadAlong {
    stop: Arc<AtomicBool>,
    /// Whole passes done, and those begun while a `-future` folder existed.
    passes: Arc<AtomicU64>,
    during_copy: Arc<AtomicU64>,
    thread: JoinHandle<()>,
}

impl ReadAlong {
    fn start(boot: &str, dirs: &[PathBuf]) -> ReadAlong {
        let stop = Arc::new(AtomicBool::new(false));
        let passes = Arc::new(AtomicU64::new(0));
        let during_copy = Arc::new(AtomicU64::new(0));
        let (s, p, d) = (stop.clone(), passes.clone(), during_copy.clone());
        let (boot, dirs) = (boot.to_owned(), dirs.to_vec());
        let thread = std::thread::spawn(move || {
            let mut conn = Conn::open_addr(&boot);
            while !s.load(Ordering::SeqCst) {
                let copying = !leftovers(&dirs, "-future").is_empty();
                read_pass(&mut conn);
                p.fetch_add(1, Ordering::SeqCst);
                if copying {
                    d.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        ReadAlong {
            stop,
            passes,
            during_copy,
            thread,
        }
    }

    /// Stops after the pass under way; (passes, passes during the copy).
    fn finish(self, what: &str) -> (u64, u64) {
        self.stop.store(true, Ordering::SeqCst);
        if let Err(e) = self.thread.join() {
            std::panic::resume_unwind(Box::new(format!("reading during {what}: {e:?}")));
        }
        (
            self.passes.load(Ordering::SeqCst),
            self.during_copy.load(Ordering::SeqCst),
        )
    }
}

/// Partition 0 from offset 0 to its HW.
fn read_pass(conn: &mut Conn) {
    let mut spec = FetchSpec::new(TOPIC, 0, 0);
    spec.max_wait_ms = 0;
    loop {
        let part = conn.fetch(&spec);
        assert_eq!(
            part.error_code, 0,
            "fetch at {}: {part:?}",
            spec.fetch_offset
        );
        if spec.fetch_offset >= part.high_watermark {
            return;
        }
        let batches = whole_batches(part.records.as_ref());
        assert!(
            !batches.is_empty(),
            "nothing at {} below HW {}",
            spec.fetch_offset,
            part.high_watermark
        );
        for (i, b) in batches.iter().enumerate() {
            let base = batch_base_offset(b);
            let ok = if i == 0 {
                base <= spec.fetch_offset
            } else {
                base == spec.fetch_offset
            };
            assert!(ok, "batch at {base} where {} was next", spec.fetch_offset);
            spec.fetch_offset = batch_last_offset(b) + 1;
        }
    }
}

/// `kafka-log-dirs --describe` lists both dirs without error and each
/// partition in the dir holding its folder, with its batches' size.
fn describe_matches_the_files(boot: &str, dirs: &[PathBuf], list: &[String]) {
    let (replicas, described_dirs) = describe(boot);
    assert_eq!(described_dirs.len(), 2, "{described_dirs:?}");
    for (dir, error) in &described_dirs {
        assert!(list.contains(dir), "{dir} is not one of {list:?}");
        assert!(error.is_null(), "{dir}: {error}");
    }
    assert_eq!(replicas.len(), 2, "{replicas:?}");
    for (dir, p, size, future) in &replicas {
        let name = format!("{TOPIC}-{p}");
        let on_disk = holding(dirs, &name);
        assert_eq!(on_disk.len(), 1, "{name} in {on_disk:?}");
        assert_eq!(dir, &list[on_disk[0]], "{name}");
        assert!(!future);
        assert_eq!(*size, logical_size(&dirs[on_disk[0]].join(&name)), "{name}");
    }
    assert!(replicas[0].2 > 3_000_000, "{replicas:?}");
}

#[test]
fn kafka_log_dirs_describes_and_a_killed_move_resumes_and_loses_nothing() {
    let base = common::new_log_dir();
    let dirs: Vec<PathBuf> = ["a", "b"].iter().map(|n| base.path().join(n)).collect();
    let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    let log_dirs = format!("log.dirs={}", list.join(","));
    let settings = [
        log_dirs.as_str(),
        // The move's throttle measures over 3 samples of 1 s, so a throttled
        // round of the copy waits about 3 s, not Kafka's 11.
        "replication.quota.window.num=3",
        "replication.quota.window.size.seconds=1",
    ];
    let broker = Broker::start_in(base, &settings);
    let boot = broker.bootstrap();
    let mut conn = Conn::open(&broker);
    conn.create_topic(TOPIC, 2, &[]);
    conn.wait_for_leaders(TOPIC, 2);
    bulk_load(&mut conn, 0);

    // (1) kafka-log-dirs --describe against the files.
    describe_matches_the_files(&boot, &dirs, &list);

    // (2) Move partition 0 to the other dir under a running producer.
    let work = tempfile::tempdir().unwrap();
    let mut producer = HistoryProducer::spawn(&boot, TOPIC, 2, work.path(), &["--rate=500"]);
    producer.wait_acks(60, 500, "acks before the move");
    let name0 = format!("{TOPIC}-0");
    let from = holding(&dirs, &name0)[0];
    let to = 1 - from;
    let plan = work.path().join("plan.json");
    std::fs::write(
        &plan,
        format!(
            r#"{{"version":1,"partitions":[{{"topic":"{TOPIC}","partition":0,"replicas":[{}],"log_dirs":["{}"]}}]}}"#,
            broker.broker_id, list[to]
        ),
    )
    .unwrap();
    let out = reassign(
        &boot,
        &plan,
        "--execute",
        &["--replica-alter-log-dirs-throttle", "300000"],
    );
    assert!(
        out.contains("Successfully started moving log directory"),
        "{out}"
    );
    let reader = ReadAlong::start(&boot, &dirs);

    // (3) SIGKILL once the future replica holds a first round (read from
    // the files: a JVM tool's start may take longer than the move).
    wait_for(60, "a half-copied future replica", || {
        let future = leftovers(&dirs, "-future");
        let f = future.first()?;
        (logical_size(&dirs[to].join(f)) > 0).then_some(())
    });
    wait_for(60, "a whole read during the copy", || {
        (reader.during_copy.load(Ordering::SeqCst) > 0).then_some(())
    });
    let (passes, _) = reader.finish("the copy");
    assert!(!leftovers(&dirs, "-future").is_empty(), "still copying");
    // The restart listens on the same port: the producer reconnects.
    let same_port = format!("listeners=PLAINTEXT://127.0.0.1:{}", broker.port);
    let base = broker.kill_keeping_dir();
    let mut again: Vec<&str> = settings.to_vec();
    again.push(&same_port);
    let broker = Broker::start_in(base, &again);
    producer.wait_acks(120, 500, "acks after the restart");
    let reader = ReadAlong::start(&boot, &dirs);
    wait_for(120, "kafka-reassign-partitions --verify: completed", || {
        reassign(&boot, &plan, "--verify", &[])
            .contains("Reassignment of replica moves-0-0 completed successfully")
            .then_some(())
    });
    let (after, during_copy) = reader.finish("the resumed copy and the swap");
    assert!(
        passes >= 1 && after >= 2 && during_copy >= 1,
        "whole reads: {passes} before the kill, {after} after the restart ({during_copy} while copying)"
    );
    producer.wait_acks(60, 300, "acks after the move");
    let acked = producer.acked_file.clone();
    producer.finish(120);

    // (4) Files in the new dir only; nothing left over; nothing lost.
    assert_eq!(holding(&dirs, &name0), vec![to]);
    assert!(leftovers(&dirs, "-future").is_empty());
    assert!(leftovers(&dirs, "-delete").is_empty());
    let (replicas, _) = describe(&boot);
    assert!(
        replicas
            .iter()
            .any(|(d, p, _, f)| *p == 0 && !f && d == &list[to]),
        "{replicas:?}"
    );
    assert!(replicas.iter().all(|(_, _, _, f)| !f), "{replicas:?}");
    let read = drain(&boot, TOPIC, 2, work.path());
    let h = check(&acked, &read);
    assert_history_ok(System::Shardlog, "a killed log-dir move", &h);
    broker.stop();
}
