//! kill -9 durability: a child process (this test binary re-executed in
//! child mode) appends with `flush_every_append` and prints each
//! acknowledged offset; the parent SIGKILLs it at random moments, reopens
//! the log and checks every acknowledged batch is present and intact,
//! nothing past a torn tail is visible, and the rebuilt indexes agree with
//! a scan. Each round continues the same log, so the child also recovers
//! from the previous crash.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::BytesMut;
use common::executor::run;
use rand::{Rng, SeedableRng};
use shardlog::io::zerocopy::OutPart;
use shardlog::protocol::record_batch::{
    build_test_batch, set_base_offset, set_partition_leader_epoch, RecordBatch,
};
use shardlog::storage::{BatchCache, LogConfig, PartitionLog, ShardStorage};
use shardlog::types::TopicPartition;

const CHILD_ENV: &str = "SHARDLOG_CRASH_CHILD_DIR";
const ROUNDS: usize = 24;
/// The child opens its log for this topic id (`partition.metadata`).
const CHILD_TOPIC_ENV: &str = "SHARDLOG_CRASH_CHILD_TOPIC_ID";

fn config() -> LogConfig {
    LogConfig {
        segment_bytes: 96 << 10,
        write_buffer_bytes: 32 << 10,
        preallocate_step_bytes: 1 << 20,
        index_interval_bytes: 1024,
        flush_every_append: true,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

/// The batch written at `base_offset` is a function of that offset, so the
/// parent can check any batch it finds without talking to the child.
fn batch_at(base_offset: i64) -> Vec<u8> {
    let count = 1 + (base_offset % 3) as i32;
    let payload = ((base_offset * 7_919) % 3_000) as usize;
    let mut b = build_test_batch(
        0,
        count,
        base_offset,
        base_offset,
        payload,
        base_offset as u8,
    );
    set_base_offset(&mut b, base_offset);
    set_partition_leader_epoch(&mut b, 1);
    b
}

async fn open(dir: &Path) -> PartitionLog {
    open_with(dir, config()).await
}

async fn open_with(dir: &Path, config: LogConfig) -> PartitionLog {
    open_topic(dir, config, None).await
}

/// [`open_with`] for a log of the topic `topic_id` (writes its
/// `partition.metadata`, as a broker's open does).
async fn open_topic(dir: &Path, config: LogConfig, topic_id: Option<uuid::Uuid>) -> PartitionLog {
    shardlog::io::dma::prime_iopoll_probe(dir)
        .await
        .expect("prime");
    PartitionLog::open(
        dir,
        &TopicPartition::new("crash", 0),
        topic_id,
        config,
        ShardStorage::standalone(BatchCache::shared(1 << 20)),
    )
    .await
    .expect("open")
}

#[test]
#[ignore = "child process of kill9_never_loses_an_acknowledged_batch"]
fn crash_child_appends_until_killed() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    let topic_id = std::env::var(CHILD_TOPIC_ENV)
        .ok()
        .map(|id| id.parse::<uuid::Uuid>().expect("topic id"));
    run(move || async move {
        let mut log = open_topic(Path::new(&dir), config(), topic_id).await;
        let mut out = std::io::stdout().lock();
        writeln!(out, "OPEN {}", log.log_end_offset()).unwrap();
        out.flush().unwrap();
        loop {
            let next = log.log_end_offset();
            let b = batch_at(next);
            let info = log
                .append(BytesMut::from(&b[..]), 1, next, false)
                .await
                .expect("append");
            // flush_every_append: append returned after fdatasync.
            writeln!(out, "ACK {}", info.first_offset).unwrap();
            out.flush().unwrap();
        }
    });
}

/// Spawn a child, let it run a random while, SIGKILL it; return the offsets
/// it acknowledged (complete lines only).
fn crash_round(dir: &Path, rng: &mut impl Rng) -> Vec<i64> {
    crash_round_of_topic(dir, None, rng)
}

/// [`crash_round`] with the child's log opened for `topic_id`.
fn crash_round_of_topic(dir: &Path, topic_id: Option<uuid::Uuid>, rng: &mut impl Rng) -> Vec<i64> {
    let mut command = Command::new(std::env::current_exe().unwrap());
    if let Some(id) = topic_id {
        command.env(CHILD_TOPIC_ENV, id.to_string());
    }
    let mut child = command
        .args([
            "--exact",
            "crash_child_appends_until_killed",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().unwrap();
    let (opened_tx, opened_rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acks = Vec::new();
        let mut opened = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest may print "test <name> ... " on the same line first.
            if line.contains("OPEN ") {
                opened = true;
                let _ = opened_tx.send(());
            } else if let Some((_, o)) = line.split_once("ACK ") {
                if let Ok(o) = o.trim().parse::<i64>() {
                    acks.push(o);
                }
            }
        }
        (opened, acks)
    });
    // Kill at a random moment after the child opened (and recovered) the
    // log; occasionally during startup/recovery itself.
    if rng.gen_bool(0.9) {
        opened_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("child never opened the log");
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..150)));
    } else {
        std::thread::sleep(Duration::from_millis(rng.gen_range(1..100)));
    }
    child.kill().expect("SIGKILL child");
    child.wait().unwrap();
    let (opened, acks) = reader.join().unwrap();
    assert!(opened || acks.is_empty());
    acks
}

fn region_bytes(regions: &[OutPart]) -> Vec<u8> {
    shardlog::io::parts::gather(regions).unwrap().to_vec()
}

/// Whether a `.log` segment file exists anywhere under `dir`.
fn has_segment_file(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            has_segment_file(&p)
        } else {
            p.extension().is_some_and(|x| x == "log")
        }
    })
}

/// Reopen and check the whole log against the generator.
fn verify(dir: PathBuf, acked: Vec<i64>, close_cleanly: bool) -> i64 {
    run(move || async move {
        // A child killed in its first startup may not have created a
        // segment file yet: then there is nothing to rescan.
        let had_segments = has_segment_file(&dir);
        let log = open(&dir).await;
        let leo = log.log_end_offset();
        // Killed during its startup, a child may leave the previous clean
        // marker in place; otherwise this open must have rescanned.
        let stats = log.recovery_stats();
        if stats.clean_shutdown || !had_segments {
            assert_eq!(stats.segments_scanned, 0, "{stats:?}");
        } else {
            assert!(stats.segments_scanned >= 1, "{stats:?}");
        }
        let max_acked = acked.iter().copied().max().unwrap_or(-1);
        assert!(
            leo > max_acked,
            "LEO {leo} lost acknowledged offset {max_acked}"
        );
        // Walk every batch from the start: each must be exactly what the
        // generator wrote at that offset, contiguous up to the LEO.
        let (mut off, mut batches) = (log.log_start_offset(), 0);
        while off < leo {
            let r = log.read(off, 1, leo, true).unwrap();
            let bytes = region_bytes(&r.regions);
            assert_eq!(bytes, batch_at(off), "batch at {off}");
            let b = RecordBatch::new(&bytes).unwrap();
            // Index agreement: an offset inside the batch finds the same batch.
            let inner = log.read(b.last_offset(), 1, leo, true).unwrap();
            assert_eq!(region_bytes(&inner.regions), bytes);
            off = b.last_offset() + 1;
            batches += 1;
        }
        assert_eq!(off, leo);
        assert!(batches > 0 || leo == 0);
        for a in &acked {
            let r = log.read(*a, 1, leo, true).unwrap();
            assert_eq!(region_bytes(&r.regions), batch_at(*a), "acked {a}");
        }
        // Nothing is visible past the end.
        assert!(log.read(leo + 1, 1, i64::MAX, true).is_err());
        assert_eq!(log.read(leo, 1 << 20, i64::MAX, true).unwrap().bytes, 0);
        if close_cleanly {
            log.close().await.unwrap();
        }
        leo
    })
}

#[test]
fn kill9_never_loses_an_acknowledged_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("crash test seed {seed} (rerun with CRASH_SEED={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut total_acked = 0;
    let mut last_leo = 0;
    for round in 0..ROUNDS {
        let acked = crash_round(&dir, &mut rng);
        total_acked += acked.len();
        if let Some(first) = acked.first() {
            assert!(
                *first >= last_leo,
                "round {round}: child restarted below the previous LEO"
            );
        }
        // Parent closes cleanly on some rounds so the child sees both kinds of open.
        last_leo = verify(dir.clone(), acked, round % 3 == 2);
    }
    assert!(
        total_acked > ROUNDS,
        "children acknowledged only {total_acked} batches"
    );
    eprintln!("{ROUNDS} rounds, {total_acked} acknowledged batches, final LEO {last_leo}");
}

/// A new log syncs nothing at its open (issue 19): its `partition.metadata`,
/// first segment and directory are fsynced before its first flush counts
/// an append durable. Each round starts from an empty log dir, so every
/// acknowledged (flushed: `flush_every_append`) batch the parent finds after
/// the kill -9 went through that lazy sync, and the topic id is there.
#[test]
fn kill9_after_a_new_logs_first_flushed_appends_keeps_them_and_its_topic_id() {
    const NEW_LOG_ROUNDS: usize = 8;
    let seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    eprintln!("crash test seed {seed} (rerun with CRASH_SEED={seed})");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut total_acked = 0;
    for round in 0..NEW_LOG_ROUNDS {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        let topic_id = uuid::Uuid::new_v4();
        let acked = crash_round_of_topic(&dir, Some(topic_id), &mut rng);
        total_acked += acked.len();
        let metadata = dir.join("crash-0").join("partition.metadata");
        if !acked.is_empty() {
            let text = std::fs::read_to_string(&metadata)
                .unwrap_or_else(|e| panic!("round {round}: {}: {e}", metadata.display()));
            assert_eq!(
                shardlog::storage::checkpoint::decode_partition_metadata(&text),
                Ok(topic_id),
                "round {round}: partition.metadata {text:?}"
            );
        }
        verify(dir, acked, false);
    }
    assert!(total_acked > 0, "no child acknowledged a batch");
    eprintln!("{NEW_LOG_ROUNDS} new logs, {total_acked} acknowledged batches");
}

const POISON_ENV: &str = "SHARDLOG_POISON_CHILD_DIR";

#[test]
#[ignore = "child process of an_append_past_the_file_size_limit_is_refused_and_the_log_stays_usable"]
fn poison_child_appends_past_file_size_limit() {
    let Ok(dir) = std::env::var(POISON_ENV) else {
        return;
    };
    // RLIMIT_FSIZE makes growing the segment fail with EFBIG (SIGXFSZ ignored).
    let limit = libc::rlimit {
        rlim_cur: 3 << 20,
        rlim_max: 3 << 20,
    };
    // SAFETY: plain syscalls on this process; no memory is shared.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &limit), 0);
    }
    run(move || async move {
        // One big segment so the file itself outgrows the limit.
        let big = LogConfig {
            segment_bytes: 1 << 30,
            ..config()
        };
        let mut log = open_with(Path::new(&dir), big).await;
        let mut acked = 0;
        let first_err = loop {
            let next = log.log_end_offset();
            match log
                .append(BytesMut::from(&batch_at(next)[..]), 1, next, false)
                .await
            {
                Ok(_) => acked += 1,
                Err(e) => break e,
            }
            assert!(acked < 10_000, "file size limit never hit");
        };
        let leo = log.log_end_offset();
        let again = log
            .append(BytesMut::from(&batch_at(leo)[..]), 1, leo, false)
            .await
            .unwrap_err();
        let flush = log.flush().await;
        println!(
            "POISON first={} again={} again_poisoned={} flush_ok={} leo_kept={} acked={acked} poisoned={}",
            first_err.kafka_error_code(),
            again.kafka_error_code(),
            matches!(again, shardlog::storage::StorageError::Poisoned),
            flush.is_ok(),
            log.log_end_offset() == leo,
            log.is_poisoned()
        );
    });
}

/// The segment cannot grow past RLIMIT_FSIZE (EFBIG, as a full disk
/// gives ENOSPC): the append that needs the room is refused with
/// KAFKA_STORAGE_ERROR before any byte of it is copied, so the log is not
/// poisoned, its end offset does not move, a retry is refused the same way
/// and a flush still works; every acknowledged batch survives a reopen.
/// (A write or fsync that fails after the room was allocated still
/// poisons the log: an fsync is never retried.)
#[test]
fn an_append_past_the_file_size_limit_is_refused_and_the_log_stays_usable() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "poison_child_appends_past_file_size_limit",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(POISON_ENV, &dir)
        .output()
        .expect("run child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("POISON ").map(|(_, r)| r.to_string()));
    let line = line.unwrap_or_else(|| panic!("child printed no verdict: {stdout}"));
    let acked: i64 = line
        .split("acked=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(
        line.starts_with("first=56 again=56 again_poisoned=false flush_ok=true leo_kept=true"),
        "{line}"
    );
    assert!(line.ends_with("poisoned=false"), "{line}");
    assert!(acked > 100, "{line}");
    // Every batch acknowledged before the failure is still there.
    let found = run(move || async move {
        let log = open(&dir).await;
        let leo = log.log_end_offset();
        let (mut off, mut n) = (0, 0);
        while off < leo {
            let bytes = region_bytes(&log.read(off, 1, leo, true).unwrap().regions);
            assert_eq!(bytes, batch_at(off));
            off = RecordBatch::new(&bytes).unwrap().last_offset() + 1;
            n += 1;
        }
        n
    });
    assert!(
        found >= acked,
        "found {found} batches, {acked} acknowledged"
    );
}
