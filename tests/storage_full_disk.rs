//! A log dir that runs out of space: produce answers KAFKA_STORAGE_ERROR
//! (56, Kafka's code for an I/O failure in a log dir, retriable), the
//! broker keeps running and serving what it acknowledged, nothing it
//! refused becomes visible or counts in the log end offset, and once
//! there is room again the producer's retry appends exactly once, without
//! a restart and without idempotence; after a `kill -9` and a restart
//! every acknowledged record is there and appends go on from the same
//! offset.
//!
//! A broker whose stderr (its log) is on a full disk drops the lines and
//! goes on serving; `log.retention.bytes` bounds a partition's files.
//!
//! The log dir is a size-limited tmpfs mounted by the test (tmpfs takes
//! O_DIRECT on Linux ≥ 6.6), so the test needs root, as CI runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use bytes::Bytes;
use kafka_protocol::records::Compression;

use common::{
    decode_records, encode_batch, error_code, now_ms, Broker, Conn, RawRecord, LATEST_TIMESTAMP,
};

const KAFKA_STORAGE_ERROR: i16 = 56;
const RECORD_BYTES: usize = 1024;
const RECORDS_PER_BATCH: usize = 100;

/// A tmpfs of `size` mounted on a fresh directory, unmounted on drop.
struct SmallFs {
    mount_point: PathBuf,
}

impl SmallFs {
    fn mount(size: &str) -> SmallFs {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        assert_eq!(
            euid, 0,
            "this test mounts a size-limited tmpfs and needs root (CI runs as root): \
             run `sudo -E cargo test --test storage_full_disk`"
        );
        let mount_point = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("mount point")
            .keep();
        let fs = SmallFs { mount_point };
        fs.run(&["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"]);
        fs
    }

    /// Resizes the filesystem in place (the broker's files stay).
    fn resize(&self, size: &str) {
        self.run(&["-o", &format!("remount,size={size}")]);
    }

    fn run(&self, args: &[&str]) {
        let out = Command::new("mount")
            .args(args)
            .arg(&self.mount_point)
            .output()
            .expect("run mount (package `mount`)");
        assert!(
            out.status.success(),
            "mount {args:?} {}: {}",
            self.mount_point.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn path(&self) -> &Path {
        &self.mount_point
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(&self.mount_point)
            .status();
        let _ = std::fs::remove_dir(&self.mount_point);
    }
}

/// Value of record `i`: its index in the first 8 bytes, then filler.
fn value(i: u64) -> Vec<u8> {
    let mut v = vec![b'x'; RECORD_BYTES];
    v[..8].copy_from_slice(&i.to_be_bytes());
    v
}

fn batch_from(first: u64) -> Bytes {
    let values: Vec<Vec<u8>> = (first..first + RECORDS_PER_BATCH as u64)
        .map(value)
        .collect();
    // Current timestamps: retention.ms would delete segments of epoch-0 records.
    let ts = now_ms();
    let records: Vec<RawRecord> = values.iter().map(|v| (None, &v[..], ts)).collect();
    encode_batch(&records, Compression::None)
}

/// Every record of the partition, checked to be exactly records
/// `0..expected` in order.
fn assert_log_holds(conn: &mut Conn, topic: &str, expected: u64) {
    let latest = conn.list_offset(topic, 0, LATEST_TIMESTAMP);
    assert_eq!(latest.error_code, error_code::NONE, "{latest:?}");
    assert_eq!(
        latest.offset, expected as i64,
        "log end offset must be the acknowledged count"
    );
    let records = decode_records(&conn.fetch_to_high_watermark(topic, 0, 0));
    assert_eq!(records.len() as u64, expected, "records in the log");
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.offset, i as i64);
        let v = r.value.as_ref().expect("value");
        assert_eq!(&v[..], &value(i as u64)[..], "record {i}");
    }
}

#[test]
fn a_full_log_dir_refuses_produce_with_kafka_storage_error_and_a_retry_appends_once_there_is_room()
{
    let fs = SmallFs::mount("24m");
    let log_dir = tempfile::tempdir_in(fs.path()).expect("log dir on the small fs");
    let overrides = [
        "shardlog.shards=1",
        "log.segment.bytes=4194304",
        "shardlog.write.buffer.bytes=262144",
        // Every acknowledged append is flushed, so kill -9 may lose none.
        "log.flush.interval.messages=1",
    ];
    let topic = "full-disk";
    let broker = Broker::start_in(log_dir, &overrides);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 1, &[]);

    // Produce until the disk refuses; 24 MiB cannot hold 100 MB.
    let mut acked = 0u64;
    let mut refused = None;
    for _ in 0..1000 {
        let resp = conn.produce(topic, 0, batch_from(acked), 1);
        if resp.error_code == error_code::NONE {
            assert_eq!(resp.base_offset, acked as i64, "offsets are dense");
            acked += RECORDS_PER_BATCH as u64;
        } else {
            refused = Some(resp.error_code);
            break;
        }
    }
    assert_eq!(
        refused,
        Some(KAFKA_STORAGE_ERROR),
        "a full disk is KAFKA_STORAGE_ERROR (after {acked} acknowledged records)"
    );
    assert!(acked > 0, "some records fit before the disk filled");

    // While the disk is full the producer's retries are refused the same
    // way; the broker keeps serving what it acknowledged and nothing it
    // refused (no partial batch, the LEO unmoved).
    for _ in 0..3 {
        let again = conn.produce(topic, 0, batch_from(acked), 1);
        assert_eq!(again.error_code, KAFKA_STORAGE_ERROR, "{again:?}");
    }
    assert_log_holds(&mut conn, topic, acked);

    // Room again, no restart: the retry (not idempotent) appends exactly
    // once, at the offset the refused attempts did not take.
    fs.resize("64m");
    let retry = conn.produce(topic, 0, batch_from(acked), 1);
    assert_eq!(retry.error_code, error_code::NONE, "{retry:?}");
    assert_eq!(retry.base_offset, acked as i64);
    let acked = acked + RECORDS_PER_BATCH as u64;
    assert_log_holds(&mut conn, topic, acked);
    drop(conn);

    // kill -9 and a restart on the same files: every acknowledged record
    // is there, and appends go on from the same offset.
    let log_dir = broker.kill_keeping_dir();
    let broker = Broker::start_in(log_dir, &overrides);
    let mut conn = Conn::open(&broker);
    assert_log_holds(&mut conn, topic, acked);
    let resp = conn.produce(topic, 0, batch_from(acked), 1);
    assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    assert_eq!(resp.base_offset, acked as i64);
    assert_log_holds(&mut conn, topic, acked + RECORDS_PER_BATCH as u64);
    drop(conn);
    assert!(broker.stop().success());
}

/// The broker's log is its stderr; when that is redirected to a file on a
/// full disk (here `/dev/full`, whose every write fails with ENOSPC) the
/// broker drops the lines and goes on serving, as Kafka's log4j appenders
/// do. It used to abort: tracing reported the failed write with
/// `eprintln!`, which panics, and the panic report logged again.
#[test]
fn a_broker_whose_stderr_is_on_a_full_disk_keeps_serving_and_stops_cleanly() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let log_dir = tempfile::tempdir().expect("log dir");
    let port = common::zookeeper::free_port();
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let mut child = Command::new(common::broker_bin())
        .args(["broker", "--override"])
        .arg(format!("listeners=PLAINTEXT://127.0.0.1:{port}"))
        .arg("--override")
        .arg(format!("log.dirs={}", log_dir.path().display()))
        .args(["--override", "shardlog.shards=1"])
        .args(["--override", "shardlog.metrics.listener="])
        // Every line the broker has is written (and fails).
        .env("RUST_LOG", "debug")
        .stdin(std::process::Stdio::null())
        .stdout(Stdio::null())
        .stderr(full)
        .spawn()
        .expect("spawn shardlog");
    let addr = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&addr).is_err() {
        if let Some(status) = child.try_wait().expect("try_wait") {
            panic!("the broker exited before listening: {status}");
        }
        assert!(Instant::now() < deadline, "the broker never listened");
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut conn = Conn::open_addr(&addr);
    let topic = "stderr-full";
    conn.create_topic(topic, 1, &[]);
    for i in 0..20u64 {
        let resp = conn.produce(topic, 0, batch_from(i * RECORDS_PER_BATCH as u64), 1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    }
    assert_log_holds(&mut conn, topic, 20 * RECORDS_PER_BATCH as u64);
    drop(conn);
    assert_eq!(child.try_wait().expect("try_wait"), None, "still running");
    // SIGTERM: a clean shutdown, whose closing lines fail to print too.
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).expect("SIGTERM");
    let status = child.wait().expect("wait");
    assert!(status.success(), "a clean stop, not an abort: {status}");
}

/// `log.retention.bytes` (the broker default of the topic's
/// `retention.bytes`) bounds a partition's log on disk: with 1 MiB
/// segments, 2 MiB of retention, a check every 200 ms and deleted files
/// removed at once (`log.segment.delete.delay.ms=0`), 8 MB produced leave
/// at most retention + the active segment, and the log start moves up.
/// What the bench relies on to keep a sweep off a full disk.
#[test]
fn log_retention_bytes_bounds_the_partitions_files_on_disk() {
    const MIB: u64 = 1 << 20;
    let overrides = [
        "shardlog.shards=1",
        "log.segment.bytes=1048576",
        "log.retention.bytes=2097152",
        "log.retention.check.interval.ms=200",
        "log.segment.delete.delay.ms=0",
    ];
    let broker = Broker::start_with(&overrides);
    let mut conn = Conn::open(&broker);
    let topic = common::unique_topic("retained");
    conn.create_topic(&topic, 1, &[]);
    let batches = 80u64; // ~8 MB of 1 KiB records
    for b in 0..batches {
        let resp = conn.produce(&topic, 0, batch_from(b * RECORDS_PER_BATCH as u64), 1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    }
    let dir = broker.log_dir.path().join(format!("{topic}-0"));
    let on_disk = || -> u64 {
        std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
                    .filter_map(|e| e.metadata().ok())
                    .map(|m| m.len())
                    .sum()
            })
            .unwrap_or(0)
    };
    common::cluster::wait_for(30, "retention deleting the oldest segments", || {
        (on_disk() <= 3 * MIB).then_some(())
    });
    let earliest = conn.list_offset(&topic, 0, common::EARLIEST_TIMESTAMP);
    assert_eq!(earliest.error_code, error_code::NONE, "{earliest:?}");
    assert!(
        earliest.offset > 0,
        "the log start moved past the deleted segments: {earliest:?}"
    );
    let latest = conn.list_offset(&topic, 0, LATEST_TIMESTAMP);
    assert_eq!(latest.offset, (batches * RECORDS_PER_BATCH as u64) as i64);
    drop(conn);
    assert!(broker.stop().success());
}
