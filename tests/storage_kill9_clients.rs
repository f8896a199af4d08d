//! Acknowledged records survive `kill -9` of the broker under Kafka's
//! default flush policy (no `log.flush.*`, `shardlog.flush.every.append`
//! off), as they do on Apache Kafka, whose appends reach the page cache
//! before the answer: only a machine crash needs fsync or replication.
//!
//! Each round, a flat-out confluent-kafka producer (tests/py/history.py
//! `produce`, linger.ms=5, pipelined requests) writes to one of six
//! topics (acks=1, acks=all, acks=all idempotent × 1 / 100 partitions),
//! recording every acknowledged (partition, offset, value); the broker is
//! killed with SIGKILL at a random moment after the first
//! acknowledgements, the producer too, and the broker restarts on the same
//! port and log dir (recovery of a torn tail as usual). At the end every
//! topic is read from the beginning and checked (history.py `check`):
//! every acknowledged record read back at its offset, none read twice,
//! each producer's records in order per partition.
//!
//! CI runs the short form (6 rounds, each topic once). The long form, for
//! a closing note: `SHARDLOG_KILL9_ROUNDS=200 bash tests/run.sh --test
//! storage_kill9_clients -- --nocapture`. `SHARDLOG_KILL9_SEED` replays a
//! run's kill moments.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{new_log_dir, run_py_script, venv_python_with, Broker, Conn};
use rand::{Rng, SeedableRng};

/// (acks, idempotence, partitions) of each round's topic, in turn. An
/// idempotent producer needs acks=all (librdkafka and the Java client
/// refuse `enable.idempotence` with acks=1).
const SHAPES: [(&str, bool, i32); 6] = [
    ("1", false, 1),
    ("all", true, 100),
    ("all", false, 1),
    ("1", false, 100),
    ("all", true, 1),
    ("all", false, 100),
];

/// Guard against a producer that never gets an acknowledgement (not a
/// speed assertion): the round fails naming it.
const FIRST_ACK_LIMIT: Duration = Duration::from_secs(60);

fn topic_of((acks, idem, partitions): (&str, bool, i32)) -> String {
    format!("kill9-acks{acks}-idem{}-p{partitions}", u8::from(idem))
}

fn free_port() -> u16 {
    common::ports::reserved_port()
}

fn lines_in(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |s| s.lines().count())
}

/// history.py `produce` into `topic` until killed.
fn start_producer(broker: &Broker, shape: (&str, bool, i32), acked: &Path, round: u32) -> Child {
    let (acks, idem, partitions) = shape;
    let python = venv_python_with(&["confluent_kafka"]);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/history.py");
    Command::new(python)
        .arg(script)
        .arg("produce")
        .arg(broker.bootstrap())
        .arg(topic_of(shape))
        .arg(partitions.to_string())
        .arg(acked)
        .arg(format!("--acks={acks}"))
        .arg(format!("--idempotence={}", u8::from(idem)))
        .arg(format!("--producer=r{round}"))
        // Never stops on its own: the round kills it.
        .arg(format!(
            "--stop-file={}",
            acked.with_extension("never").display()
        ))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(acked.with_extension("stderr")).expect("stderr file"))
        .spawn()
        .expect("spawn history.py produce")
}

/// One round: produce flat out, kill -9 the broker at a random moment
/// after the first acknowledgements, then the producer; restart the
/// broker on the same port and log dir. Returns the restarted broker and
/// how many acknowledgements the round recorded.
fn round(
    broker: Broker,
    overrides: &[String],
    shape: (&str, bool, i32),
    acked: &Path,
    round: u32,
    rng: &mut impl Rng,
) -> (Broker, usize) {
    let mut producer = start_producer(&broker, shape, acked, round);
    let started = Instant::now();
    while lines_in(acked) == 0 {
        if let Some(status) = producer.try_wait().expect("producer status") {
            let stderr =
                std::fs::read_to_string(acked.with_extension("stderr")).unwrap_or_default();
            panic!("round {round}: the producer exited ({status}) before any acknowledgement:\n{stderr}");
        }
        assert!(
            started.elapsed() < FIRST_ACK_LIMIT,
            "round {round}: no acknowledgement from {} within {FIRST_ACK_LIMIT:?}",
            topic_of(shape)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The kill lands anywhere in the flat-out run: right after the first
    // answers, or with the batch cache and write buffers well filled.
    std::thread::sleep(Duration::from_millis(rng.gen_range(0..1500)));
    let log_dir = broker.kill_keeping_dir();
    // The producer is killed too: no retry after the restart may hide a
    // record the broker lost.
    let _ = producer.kill();
    let _ = producer.wait();
    let restarted = Broker::start_in(
        log_dir,
        &overrides.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    (restarted, lines_in(acked))
}

/// Read `shape`'s topic from the beginning and check it against every
/// acknowledgement its rounds recorded (`files`).
fn check_topic(broker: &Broker, work: &Path, shape: (&str, bool, i32), files: &[PathBuf]) {
    let topic = topic_of(shape);
    let all_acked = work.join(format!("{topic}.acked"));
    let joined: String = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("acked file"))
        .collect();
    std::fs::write(&all_acked, joined).expect("write acked");
    let read = work.join(format!("{topic}.read"));
    let drained = run_py_script(
        &["confluent_kafka"],
        "history.py",
        &[
            "drain".into(),
            broker.bootstrap(),
            topic.clone(),
            shape.2.to_string(),
            read.display().to_string(),
            "--timeout-s=300".into(),
        ],
    );
    let report = run_py_script(
        &["confluent_kafka"],
        "history.py",
        &[
            "check".into(),
            all_acked.display().to_string(),
            read.display().to_string(),
        ],
    );
    eprintln!("kill9: {topic}: drained {drained} checked {report}");
    assert!(
        report["acked"].as_u64().unwrap() > 0,
        "{topic}: nothing acknowledged"
    );
    assert_eq!(
        report["lost_count"], 0,
        "{topic}: acknowledged records lost: {report}"
    );
    assert_eq!(report["moved_count"], 0, "{topic}: records moved: {report}");
    assert_eq!(
        report["reordered_count"], 0,
        "{topic}: a producer's records out of order: {report}"
    );
    assert!(
        report["offsets_not_growing"].as_array().unwrap().is_empty(),
        "{topic}: {report}"
    );
    if shape.1 {
        assert_eq!(
            report["duplicate_count"], 0,
            "{topic}: duplicates with idempotence: {report}"
        );
    }
}

#[test]
fn kill9_under_default_flush_never_loses_an_acknowledged_record() {
    let rounds: u32 = std::env::var("SHARDLOG_KILL9_ROUNDS")
        .ok()
        .map_or(SHAPES.len() as u32, |v| {
            v.parse().expect("SHARDLOG_KILL9_ROUNDS")
        });
    let seed: u64 = std::env::var("SHARDLOG_KILL9_SEED")
        .ok()
        .map_or_else(rand::random, |v| v.parse().expect("SHARDLOG_KILL9_SEED"));
    eprintln!("kill9: {rounds} rounds, SHARDLOG_KILL9_SEED={seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let work = tempfile::tempdir().expect("work dir");
    let port = free_port();
    // Kafka's default flush policy: nothing forces an fsync.
    let overrides = vec![
        format!("listeners=PLAINTEXT://127.0.0.1:{port}"),
        "auto.create.topics.enable=false".to_string(),
    ];
    let mut broker = Broker::start_in(
        new_log_dir(),
        &overrides.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    {
        let mut conn = Conn::open(&broker);
        for shape in SHAPES {
            conn.create_topic(&topic_of(shape), shape.2, &[]);
        }
    }
    let mut acked_files: Vec<Vec<PathBuf>> = vec![Vec::new(); SHAPES.len()];
    let mut total_acked = 0;
    for r in 0..rounds {
        let which = r as usize % SHAPES.len();
        let acked = work.path().join(format!("acked-{r}.txt"));
        let (restarted, n) = round(broker, &overrides, SHAPES[which], &acked, r, &mut rng);
        broker = restarted;
        eprintln!(
            "kill9: round {r} ({}): {n} acknowledged, then kill -9",
            topic_of(SHAPES[which])
        );
        total_acked += n;
        acked_files[which].push(acked);
    }
    assert!(total_acked > 0, "no round recorded an acknowledgement");
    for (which, files) in acked_files.iter().enumerate() {
        if !files.is_empty() {
            check_topic(&broker, work.path(), SHAPES[which], files);
        }
    }
    broker.stop();
}

/// The deterministic form: when the answer to an acks=1 (or acks=all)
/// produce arrives, the batch's bytes are already in the segment file as
/// any other process reads it (the page cache), without a flush or a
/// close: a small append sits in the partial tail page, which the
/// broker's write buffer used to hold for seconds.
#[test]
fn an_acknowledged_batch_is_in_the_segment_file_when_the_answer_arrives() {
    let broker = Broker::start_with(&["auto.create.topics.enable=false"]);
    let mut conn = Conn::open(&broker);
    let topic = common::unique_topic("acked-in-file");
    conn.create_topic(&topic, 1, &[]);
    let file = broker
        .log_dir
        .path()
        .join(format!("{topic}-0"))
        .join("00000000000000000000.log");
    for (i, acks) in [1i16, -1, 1, -1].into_iter().enumerate() {
        let value = format!("acknowledged-value-{i}-{}", "x".repeat(100 * i));
        let records = [(None, value.as_bytes(), 1_700_000_000_000 + i as i64)];
        let batch = common::encode_batch(&records, kafka_protocol::records::Compression::None);
        let resp = conn.produce(&topic, 0, batch, acks);
        assert_eq!(resp.error_code, 0, "produce {i}: {resp:?}");
        assert_eq!(resp.base_offset, i as i64);
        // Read right after the answer, as a process that outlives the
        // broker would find it.
        let bytes = std::fs::read(&file).expect("segment file");
        assert!(
            bytes.windows(value.len()).any(|w| w == value.as_bytes()),
            "batch {i} (acks={acks}) acknowledged but not in {} ({} bytes, {} non-zero)",
            file.display(),
            bytes.len(),
            bytes.iter().filter(|b| **b != 0).count()
        );
    }
    broker.stop();
}
