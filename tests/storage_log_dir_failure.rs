//! Several log dirs (`log.dirs`), and the failure of one (Kafka's log-dir
//! failure, ZooKeeper-mode 3.9 `ReplicaManager.handleLogDirFailure`):
//!
//! - partitions are spread over the dirs (the dir with the fewest first,
//!   Kafka's `LogManager.nextLogDirs`), each dir keeps `meta.properties`
//!   and checkpoint files of its own partitions, and a restart finds every
//!   log where it was;
//! - a failed fsync in one dir takes that dir offline: its partitions
//!   answer KAFKA_STORAGE_ERROR (56) to produce, fetch and ListOffsets,
//!   while the partitions of the other dir go on being served; a restart
//!   with the dir healthy serves it again with every acknowledged record;
//! - a write that fails after the segment's space was reserved (EIO, not
//!   a full disk) refuses the append, takes the dir offline the same way,
//!   and leaves no partial batch: after a restart the log ends at the
//!   acknowledged records;
//! - when every dir has failed the broker halts with Kafka's message
//!   ("Shutdown broker because all log dirs in … have failed").
//!
//! The failing dir is a FUSE mount of `tests/support/faultfs.c` (built by
//! the test with gcc; tests/run.sh installs libfuse3-dev and fuse3): a
//! control file in its backing dir makes every fsync (or write) fail with
//! EIO. The mount needs root and /dev/fuse, as CI has.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::records::Compression;

use common::faultfs::FaultFs;
use common::idempotence::{idempotent_batch, init_producer_id};
use common::{
    decode_records, encode_batch, error_code, now_ms, partitions_in, produce_request, Broker, Conn,
    FetchSpec, RawRecord, LATEST_TIMESTAMP, PRODUCE_VERSION,
};
use kafka_protocol::messages::ProduceRequest;

const KAFKA_STORAGE_ERROR: i16 = 56;
const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = 45;

/// One batch of `n` records of partition `p`, starting at its `first`th.
fn batch(p: i32, first: u64, n: u64) -> Bytes {
    let values: Vec<Vec<u8>> = (first..first + n)
        .map(|i| format!("p{p}-{i}").into_bytes())
        .collect();
    let ts = now_ms();
    let records: Vec<RawRecord> = values.iter().map(|v| (None, &v[..], ts)).collect();
    encode_batch(&records, Compression::None)
}

/// The partition holds records `0..acked` of [`batch`] at offsets
/// `0..acked` (a record after them may exist: a produce whose fsync failed
/// was refused, but its write reached the file).
fn assert_holds_acked(conn: &mut Conn, topic: &str, p: i32, acked: u64) {
    let records = decode_records(&conn.fetch_to_high_watermark(topic, p, 0));
    assert!(
        records.len() as u64 >= acked,
        "{topic}-{p}: {} records, {acked} acknowledged",
        records.len()
    );
    for (i, r) in records.iter().take(acked as usize).enumerate() {
        assert_eq!(r.offset, i as i64, "{topic}-{p}");
        let v = r.value.as_ref().expect("value");
        assert_eq!(
            &v[..],
            format!("p{p}-{i}").as_bytes(),
            "{topic}-{p} record {i}"
        );
    }
}

/// The partitions a checkpoint file of `dir` names for `topic`.
fn checkpointed(dir: &Path, file: &str, topic: &str) -> Vec<i32> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let mut v: Vec<i32> = text
        .lines()
        .skip(2)
        .filter_map(|l| {
            let mut f = l.split(' ');
            (f.next()? == topic).then(|| f.next()?.parse().ok())?
        })
        .collect();
    v.sort_unstable();
    v
}

fn meta_cluster_id(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("meta.properties")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("cluster.id="))
        .expect("cluster.id")
        .to_owned()
}

fn log_dirs_override(dirs: &[&Path]) -> String {
    let list: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    format!("log.dirs={}", list.join(","))
}

/// The fault tests' broker: `dirs` as its log dirs, one shard (whose new
/// partitions alternate between the dirs), every append flushed (an fsync
/// per produce).
fn flushed_one_shard(dirs: &[&Path]) -> [String; 3] {
    [
        log_dirs_override(dirs),
        "shardlog.shards=1".into(),
        "log.flush.interval.messages=1".into(),
    ]
}

fn start(settings: &[String]) -> Broker {
    let refs: Vec<&str> = settings.iter().map(String::as_str).collect();
    Broker::start_with(&refs)
}

#[test]
fn two_log_dirs_share_the_partitions_and_each_keeps_its_own_checkpoints() {
    let (a, b) = (common::new_log_dir(), common::new_log_dir());
    let dirs = log_dirs_override(&[a.path(), b.path()]);
    let overrides = [dirs.as_str(), "shardlog.shards=2"];
    let topic = "spread";
    let broker = Broker::start_with(&overrides);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 6, &[]);
    for p in 0..6 {
        let resp = conn.produce(topic, p, batch(p, 0, 10), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    }
    drop(conn);
    let (in_a, in_b) = (
        partitions_in(a.path(), topic),
        partitions_in(b.path(), topic),
    );
    // Each new log goes to the dir holding fewer (two shards placing at
    // the same moment may both pick the same one).
    assert!(
        in_a.len() + in_b.len() == 6 && in_a.len().abs_diff(in_b.len()) <= 2,
        "partitions spread over the dirs: {in_a:?} / {in_b:?}"
    );
    assert!(
        in_a.iter().all(|p| !in_b.contains(p)),
        "a log is in one dir"
    );
    assert!(broker.stop().success());

    // Each dir's checkpoints name exactly its own partitions, and both
    // carry the same identity.
    for (dir, mine) in [(a.path(), &in_a), (b.path(), &in_b)] {
        for file in [
            "recovery-point-offset-checkpoint",
            "replication-offset-checkpoint",
            "log-start-offset-checkpoint",
        ] {
            assert_eq!(
                &checkpointed(dir, file, topic),
                mine,
                "{file} of {}",
                dir.display()
            );
        }
    }
    assert_eq!(meta_cluster_id(a.path()), meta_cluster_id(b.path()));

    // A restart finds every log where it was, and appends go on.
    let broker = Broker::start_with(&overrides);
    let mut conn = Conn::open(&broker);
    for p in 0..6 {
        assert_holds_acked(&mut conn, topic, p, 10);
        let resp = conn.produce(topic, p, batch(p, 10, 5), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        assert_eq!(resp.base_offset, 10);
    }
    assert_eq!(partitions_in(a.path(), topic), in_a, "no log moved");
    assert_eq!(partitions_in(b.path(), topic), in_b, "no log moved");
    drop(conn);
    assert!(broker.stop().success());
}

/// Produce to `p` until an answer is not NONE or `within` passes; the
/// last error code.
fn produce_until_refused(
    conn: &mut Conn,
    topic: &str,
    p: i32,
    acked: &mut u64,
    within: Duration,
) -> i16 {
    let deadline = Instant::now() + within;
    loop {
        let resp = conn.produce(topic, p, batch(p, *acked, 1), -1);
        if resp.error_code != error_code::NONE {
            return resp.error_code;
        }
        *acked += 1;
        if Instant::now() >= deadline {
            return resp.error_code;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_failed_fsync_takes_its_log_dir_offline_and_the_other_dir_keeps_serving() {
    let fs = FaultFs::mount();
    let (good, bad_dir) = (common::new_log_dir(), fs.log_dir());
    let settings = flushed_one_shard(&[good.path(), &bad_dir]);
    let topic = "halves";
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 4, &[]);
    let mut acked = [0u64; 4];
    for p in 0..4 {
        let resp = conn.produce(topic, p, batch(p, 0, 10), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        acked[p as usize] = 10;
    }
    let (on_good, on_bad) = (
        partitions_in(good.path(), topic),
        partitions_in(&bad_dir, topic),
    );
    assert_eq!(
        (on_good.len(), on_bad.len()),
        (2, 2),
        "{on_good:?} / {on_bad:?}"
    );

    // fsyncs fail in the bad dir: the next produce there is refused with
    // KAFKA_STORAGE_ERROR, and the dir goes offline.
    fs.fail_fsync(true);
    let first = on_bad[0];
    let code = produce_until_refused(
        &mut conn,
        topic,
        first,
        &mut acked[first as usize],
        Duration::from_secs(30),
    );
    assert_eq!(
        code, KAFKA_STORAGE_ERROR,
        "a failed fsync refuses the produce"
    );
    // Its sibling was never written in the fault: it goes offline with the
    // dir (no fsync of its own needed).
    fs.fail_fsync(false);
    let sibling = on_bad[1];
    let code = produce_until_refused(
        &mut conn,
        topic,
        sibling,
        &mut acked[sibling as usize],
        Duration::from_secs(30),
    );
    assert_eq!(code, KAFKA_STORAGE_ERROR, "the whole dir is offline");
    for &p in &on_bad {
        let fetched = conn.fetch(&FetchSpec::new(topic, p, 0));
        assert_eq!(
            fetched.error_code, KAFKA_STORAGE_ERROR,
            "fetch {p}: {fetched:?}"
        );
        let listed = conn.list_offset(topic, p, LATEST_TIMESTAMP);
        assert_eq!(
            listed.error_code, KAFKA_STORAGE_ERROR,
            "ListOffsets {p}: {listed:?}"
        );
        // The fault is gone, the dir stays offline until a restart.
        let again = conn.produce(topic, p, batch(p, acked[p as usize], 1), -1);
        assert_eq!(again.error_code, KAFKA_STORAGE_ERROR, "{again:?}");
    }
    // The other dir's partitions are served as before.
    for &p in &on_good {
        let resp = conn.produce(topic, p, batch(p, 10, 5), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        acked[p as usize] = 15;
        assert_holds_acked(&mut conn, topic, p, 15);
    }
    drop(conn);
    let stopped = broker.stop_with_logs();
    assert!(
        stopped
            .log_lines
            .iter()
            .any(|l| l.contains("Stopping serving logs in dir")
                && l.contains(&*bad_dir.to_string_lossy())),
        "the broker says which dir went offline"
    );
    assert!(
        stopped.status.success(),
        "a clean stop with a dir offline: {}",
        stopped.status
    );

    // Restarted with the dir healthy: every acknowledged record of both
    // dirs is served again, and appends go on.
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    for p in 0..4 {
        assert_holds_acked(&mut conn, topic, p, acked[p as usize]);
        let end = conn.list_offset(topic, p, LATEST_TIMESTAMP);
        let resp = conn.produce(topic, p, batch(p, end.offset as u64, 1), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
        assert_eq!(resp.base_offset, end.offset);
    }
    drop(conn);
    assert!(broker.stop().success());
}

#[test]
fn when_every_log_dir_failed_the_broker_halts_with_kafkas_message() {
    let fs = FaultFs::mount();
    let dir = fs.log_dir();
    let settings = flushed_one_shard(&[&dir]);
    let topic = "alone";
    let mut broker = start(&settings);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 1, &[]);
    let resp = conn.produce(topic, 0, batch(0, 0, 10), -1);
    assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    let mut acked = 10;
    fs.fail_fsync(true);
    let code = produce_until_refused(&mut conn, topic, 0, &mut acked, Duration::from_secs(30));
    assert_eq!(code, KAFKA_STORAGE_ERROR);
    let status = broker
        .wait_exit(Duration::from_secs(30))
        .expect("the broker halts once its only log dir failed");
    assert_eq!(status.code(), Some(1), "Kafka's Exit.halt(1): {status}");
    let said = broker.log_lines();
    assert!(
        said.iter()
            .any(|l| l.contains("Shutdown broker because all log dirs in")
                && l.contains("have failed")),
        "the broker says why it stopped: {said:?}"
    );
    drop(conn);
    drop(broker);

    // The dir healthy again: a restart recovers every acknowledged record.
    fs.fail_fsync(false);
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    assert_holds_acked(&mut conn, topic, 0, acked);
    drop(conn);
    assert!(broker.stop().success());
}

#[test]
fn a_failed_write_after_the_space_was_reserved_leaves_no_partial_batch_and_takes_the_dir_offline() {
    let fs = FaultFs::mount();
    let (good, bad_dir) = (common::new_log_dir(), fs.log_dir());
    let settings = flushed_one_shard(&[good.path(), &bad_dir]);
    let topic = "torn";
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 2, &[]);
    let (on_good, on_bad) = (
        partitions_in(good.path(), topic),
        partitions_in(&bad_dir, topic),
    );
    assert_eq!(
        (on_good.len(), on_bad.len()),
        (1, 1),
        "{on_good:?} / {on_bad:?}"
    );
    let (p_good, p_bad) = (on_good[0], on_bad[0]);
    for p in [p_good, p_bad] {
        let resp = conn.produce(topic, p, batch(p, 0, 10), -1);
        assert_eq!(resp.error_code, error_code::NONE, "{resp:?}");
    }
    // Writes fail (the segment's space is already allocated, so this is
    // not a full disk): the append is refused and the dir goes offline.
    fs.fail_write(true);
    let refused = conn.produce(topic, p_bad, batch(p_bad, 10, 10), -1);
    assert_eq!(refused.error_code, KAFKA_STORAGE_ERROR, "{refused:?}");
    let mut acked = 10;
    let code = produce_until_refused(&mut conn, topic, p_bad, &mut acked, Duration::from_secs(30));
    assert_eq!(
        (code, acked),
        (KAFKA_STORAGE_ERROR, 10),
        "nothing more is taken"
    );
    // The dir goes offline at the shard's next housekeeping round (reads
    // of what was written may be served until then).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let fetched = conn.fetch(&FetchSpec::new(topic, p_bad, 0));
        if fetched.error_code == KAFKA_STORAGE_ERROR {
            break;
        }
        assert_eq!(fetched.error_code, error_code::NONE, "{fetched:?}");
        assert!(
            Instant::now() < deadline,
            "the dir did not go offline in 30 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let resp = conn.produce(topic, p_good, batch(p_good, 10, 5), -1);
    assert_eq!(
        resp.error_code,
        error_code::NONE,
        "the other dir serves: {resp:?}"
    );
    drop(conn);
    assert!(broker.stop().success());

    // Restarted with writes working: the refused batch is nowhere (the
    // log ends at the acknowledged records) and appends go on from there.
    fs.fail_write(false);
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    let end = conn.list_offset(topic, p_bad, LATEST_TIMESTAMP);
    assert_eq!(
        (end.error_code, end.offset),
        (error_code::NONE, 10),
        "{end:?}"
    );
    assert_holds_acked(&mut conn, topic, p_bad, 10);
    let resp = conn.produce(topic, p_bad, batch(p_bad, 10, 1), -1);
    assert_eq!(
        (resp.error_code, resp.base_offset),
        (error_code::NONE, 10),
        "{resp:?}"
    );
    assert_holds_acked(&mut conn, topic, p_good, 15);
    drop(conn);
    assert!(broker.stop().success());
}

/// The history of one partition written by one idempotent producer: the
/// record values in offset order.
fn values(conn: &mut Conn, topic: &str, p: i32) -> Vec<String> {
    decode_records(&conn.fetch_to_high_watermark(topic, p, 0))
        .iter()
        .map(|r| String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned())
        .collect()
}

#[test]
fn after_a_failed_fsync_pipelined_idempotent_batches_get_storage_errors_and_a_retry_lands_once() {
    let fs = FaultFs::mount();
    let (good, bad_dir) = (common::new_log_dir(), fs.log_dir());
    let settings = flushed_one_shard(&[good.path(), &bad_dir]);
    let topic = "idem";
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    conn.create_topic(topic, 2, &[]);
    let p = partitions_in(&bad_dir, topic)[0];
    let (pid, epoch) = init_producer_id(&broker, -1, -1);
    let seq_batch = |seq: i32| idempotent_batch(pid, epoch, seq, 1, 0, "v");
    let first = idempotent_batch(pid, epoch, 0, 10, 0, "v");
    let ok = conn.produce(topic, p, first, -1);
    assert_eq!(ok.error_code, error_code::NONE, "{ok:?}");

    // Three batches in flight at once, as a producer with
    // max.in.flight > 1 sends them; the first meets the failed fsync. The
    // others reach the poisoned log before its dir is taken offline, and
    // are refused for the storage, not for their sequence numbers:
    // librdkafka answers OUT_OF_ORDER_SEQUENCE_NUMBER after a failed batch
    // with an epoch bump and renumbering, which duplicates a batch a
    // follower already holds.
    fs.fail_fsync(true);
    let sent: Vec<i32> = (10..13)
        .map(|seq| {
            let req: ProduceRequest = produce_request(topic, p, seq_batch(seq), -1);
            conn.send(PRODUCE_VERSION, &req)
        })
        .collect();
    for (seq, id) in (10..13).zip(sent) {
        let resp = conn.recv::<ProduceRequest>(PRODUCE_VERSION, id);
        let code = resp.responses[0].partition_responses[0].error_code;
        assert_ne!(
            code, OUT_OF_ORDER_SEQUENCE_NUMBER,
            "seq {seq}: a failed log answers for its storage first: {resp:?}"
        );
        assert_eq!(code, KAFKA_STORAGE_ERROR, "seq {seq}: {resp:?}");
    }
    drop(conn);
    fs.fail_fsync(false);
    assert!(broker.stop().success(), "a clean stop with a dir offline");

    // Restarted with the dir healthy, the producer retries the same
    // batches (same epoch and sequence numbers): each lands exactly once,
    // whether or not the failed one's write survived in the file.
    let broker = start(&settings);
    let mut conn = Conn::open(&broker);
    for seq in 10..13 {
        let resp = conn.produce(topic, p, seq_batch(seq), -1);
        assert_eq!(
            resp.error_code,
            error_code::NONE,
            "retry of seq {seq}: {resp:?}"
        );
    }
    let want: Vec<String> = (0..13).map(|i| format!("v-{i}")).collect();
    assert_eq!(
        values(&mut conn, topic, p),
        want,
        "each record once, in order"
    );
    drop(conn);
    assert!(broker.stop().success());
}
