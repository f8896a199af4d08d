//! Real network partitions for a 3-broker shardlog cluster and ZooKeeper:
//! each broker in a Linux network namespace of its own (common::netns),
//! partitioned in the kernel — a veth taken down, nftables drop rules
//! between chosen peers or towards ZooKeeper's port, nftables `numgen`
//! packet loss — while the history producer of tests/py/history.py records
//! every acknowledged record; after the heal a drain reads everything back
//! and the history check compares (nothing acknowledged lost, no
//! duplicates, order per partition kept).
//!
//! (a) `jepsen_2013_*`: Jepsen's 2013 Kafka analysis. The leader of a
//!     partition (not the controller) is cut from ZooKeeper and from its
//!     followers at once, while the producer in the root namespace still
//!     reaches it. Its session expires (zookeeper.session.timeout.ms), the
//!     controller elects a follower from the ISR (unclean election off),
//!     then the partition heals and the old leader truncates to the new
//!     leader's log. acks=all with min.insync.replicas=2: the cut-off
//!     leader cannot advance its high watermark, so nothing it held is
//!     acknowledged, and nothing acknowledged is lost. acks=1 with
//!     min.insync.replicas=1: the cut-off leader acknowledges alone (at
//!     least 20 records, asserted) and those are truncated away: the loss
//!     is printed (`lost N of M acked`), not failed; duplicates, moved or
//!     reordered records and a cluster that does not recover still fail.
//!     After the heal, a client's ListOffsets(latest) is answered by the
//!     leader only (followers: NOT_LEADER_OR_FOLLOWER, as Kafka's
//!     `Partition.fetchOffsetForTimestamp` with `fetchOnlyFromLeader`).
//! (b) `rolling_partition_nemesis`: for a bounded time (30 s, or
//!     `SHARDLOG_NETNS_SECS`), a seeded random schedule (the seed is
//!     printed; `SHARDLOG_NETNS_SEED` replays its choices) isolates one
//!     broker (veth down; always the first fault), cuts a pair of brokers
//!     from each other, or makes one broker lose 30% of its packets each
//!     way, holds it 3–7 s, heals, rests 1–3 s. At least one fault must
//!     have been felt (an ISR shrunk or a leader epoch moved). Two
//!     acks=all idempotent producers (min.insync.replicas=2) write
//!     throughout and a reader drains the topic again and again: every
//!     record acknowledged before a drain began must be in it (a new
//!     leader answering ListOffsets with a high watermark below what its
//!     predecessor acknowledged fails here: KIP-207). A read whose fetch
//!     is answered OFFSET_OUT_OF_RANGE stops there (the client would jump
//!     to the partition's end and read only a part of it): it is counted
//!     and printed with the broker's message, as reads that found no
//!     leader are, not checked. After the last heal
//!     every partition has a leader and a full ISR within 120 s, and the
//!     history check passes.
//!     Delay: netem (`tc qdisc … netem delay`) is tried on the lossy
//!     broker's link; this CI host's kernel has no `sch_netem`
//!     (CONFIG_NET_SCH_NETEM unset), so there the log line says
//!     `no delay … no netem qdisc` and no delay is applied.
//!
//! Running (as root, with `ip` and `nft`: `bash tests/run.sh` installs
//! nftables; without them the tests fail naming the step):
//!   short (CI, ~65 s on 2 cores):  cargo test --test cluster_netns
//!   long:  SHARDLOG_NETNS_SECS=600 cargo test --test cluster_netns -- --test-threads=1
//!          (10 minutes of nemesis; the Jepsen rounds are the same)
//! Timeouts are shortened through config (zookeeper.session.timeout.ms,
//! replica.lag.time.max.ms), never by sleeping; the sleeps below are the
//! fault schedule's hold and rest phases. Namespaces, veths, the bridge
//! and the rules are removed when a test ends, also when it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use common::cluster::wait_for;
use common::replica_cluster::scenario::{concat, probe_replication, settings, SESSION_MS};
use common::replica_cluster::{
    assert_history_ok, assert_history_ok_but_loss, check, drain, try_drain, HistoryProducer,
    ReplCluster, System,
};
use common::{error_code, now_ms, Conn, LATEST_TIMESTAMP};

/// replica.lag.time.max.ms: a cut-off follower leaves the ISR within ~3 s.
const LAG_MS: u64 = 3000;

/// Three shardlog brokers in namespaces, after the replication probe.
fn start(min_isr: i32) -> ReplCluster {
    let s = settings(min_isr, false, LAG_MS, SESSION_MS);
    let refs: Vec<&str> = s.iter().map(String::as_str).collect();
    let c = ReplCluster::start_in_netns(3, &refs);
    probe_replication(&c);
    c
}

/// Every partition of `topic` has a leader and all three replicas in its
/// ISR within `secs` (the cluster recovered from the faults).
fn wait_recovered(c: &ReplCluster, topic: &str, partitions: i32, secs: u64) {
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    loop {
        let last = c.states(topic, partitions);
        if last.len() == partitions as usize
            && last.values().all(|st| st.leader >= 0 && st.isr.len() == 3)
        {
            eprintln!(
                "[recovered: every partition of {topic} led with a full ISR {:.1} s after the heal]",
                start.elapsed().as_secs_f64()
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}: not every partition led with a full ISR {secs} s after the heal: {last:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A client's ListOffsets(latest) on `topic-p`: the leader answers its high
/// watermark, a follower NOT_LEADER_OR_FOLLOWER (Kafka's
/// `Partition.fetchOffsetForTimestamp` with `fetchOnlyFromLeader`): a
/// follower's own HW lags the leader's, and a client whose metadata still
/// named the follower leader took it for the end of the partition.
fn assert_latest_offset_only_from_leader(c: &ReplCluster, topic: &str, p: i32) {
    let leader = c.state(topic, p).leader;
    for node in &c.nodes {
        let got = Conn::open_addr(&node.address()).list_offset(topic, p, LATEST_TIMESTAMP);
        let want = if node.id == leader {
            error_code::NONE
        } else {
            error_code::NOT_LEADER_OR_FOLLOWER
        };
        assert_eq!(
            got.error_code, want,
            "ListOffsets(latest) on {topic}-{p} at broker {} (leader {leader}): {got:?}",
            node.id
        );
    }
}

// ---------------------------------------------------------------------------
// (a) Jepsen 2013
// ---------------------------------------------------------------------------

fn jepsen_2013(acks_all: bool) {
    let min_isr = if acks_all { 2 } else { 1 };
    let c = start(min_isr);
    let (topic, partitions) = (if acks_all { "jall" } else { "jone" }, 3);
    c.create_topic(
        topic,
        partitions,
        3,
        &[
            &format!("min.insync.replicas={min_isr}"),
            "unclean.leader.election.enable=false",
        ],
    );
    let mut opts = vec!["--rate=200", "--timeout-ms=60000", "--producer=j"];
    if acks_all {
        opts.extend(["--acks=all", "--idempotence=1"]);
    } else {
        // No retries: every value is written once, so what survives can be
        // checked for duplicates and order.
        opts.extend(["--acks=1", "--idempotence=0", "--retries=0"]);
    }
    let mut producer =
        HistoryProducer::spawn(&c.bootstrap(), topic, partitions, c.dir.path(), &opts);
    producer.wait_acks(60, 50, "the first 50 acks");
    // A partition the controller does not lead: the controller stays on
    // the majority side and elects the new leader.
    let controller = c.controller();
    let (p, l) = c
        .states(topic, partitions)
        .iter()
        .find(|(_, s)| s.leader != controller)
        .map(|(p, s)| (*p, s.leader))
        .expect("a partition led by a non-controller");
    let net = c.net();
    net.cut_from_zookeeper(l, c.zk.client_port);
    for f in [1, 2, 3].into_iter().filter(|&f| f != l) {
        net.cut(l, f);
    }
    let cut_at = producer.acked_in(p);
    if !acks_all {
        wait_for(30, "acks=1 from the cut-off leader", || {
            (producer.acked_in(p) >= cut_at + 20).then_some(())
        });
    }
    let away = c.wait_state(
        60,
        "a follower elected while the leader is cut off",
        topic,
        p,
        |s| s.leader >= 0 && s.leader != l,
    );
    // The majority side keeps acknowledging (the other partitions).
    producer.wait_acks(60, 20, "acks while the leader is cut off");
    let during = producer.acked_in(p) - cut_at;
    net.heal_all();
    wait_recovered(&c, topic, partitions, 120);
    assert_latest_offset_only_from_leader(&c, topic, p);
    producer.wait_acks(60, 20, "acks after healing");
    let acked_file = producer.acked_file.clone();
    let report = producer.finish(90);
    let read = drain(&c.bootstrap(), topic, partitions, c.dir.path());
    let h = check(&acked_file, &read);
    let acks = if acks_all { "all" } else { "1" };
    eprintln!(
        "[jepsen 2013 acks={acks} min.insync.replicas={min_isr}: leader {l} of {topic}-{p} cut \
         off, {} elected (epoch {}); {during} acked on {topic}-{p} during the cut; producer \
         {report}; lost {} of {} acked]",
        away.leader, away.leader_epoch, h["lost_count"], h["acked"]
    );
    if acks_all {
        assert_history_ok(System::Shardlog, "jepsen 2013 acks=all", &h);
    } else {
        assert_history_ok_but_loss(System::Shardlog, "jepsen 2013 acks=1", &h);
        eprintln!(
            "[jepsen 2013 acks=1: {} acknowledged records lost (reported, not failed: \
             acks=1 acknowledges what only the cut-off leader held)]",
            h["lost_count"]
        );
    }
}

#[test]
fn jepsen_2013_acks_all_min_isr_2_loses_nothing_acknowledged() {
    jepsen_2013(true);
}

#[test]
fn jepsen_2013_acks_1_loss_is_reported() {
    jepsen_2013(false);
}

// ---------------------------------------------------------------------------
// (b) rolling partition nemesis
// ---------------------------------------------------------------------------

/// splitmix64: the schedule's choices from one seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name}={v}: not a number"))
    })
}

/// The complete lines of the acked files (a line being written is left
/// out): what was acknowledged before now.
fn acked_snapshot(files: &[PathBuf], out: &Path) {
    let mut text = String::new();
    for f in files {
        let t = std::fs::read_to_string(f).unwrap_or_default();
        let complete = t.rfind('\n').map_or("", |i| &t[..=i]);
        text.push_str(complete);
    }
    std::fs::write(out, text).expect("snapshot");
}

/// The nemesis reader: drains `target` (bootstrap, topic, partitions,
/// folder) again and again until `stop`, and once after it; each drain must hold every record
/// acknowledged before it began (their offsets are below the high
/// watermark it reads up to). Returns (reads checked, reads without a
/// leader, reads answered OFFSET_OUT_OF_RANGE); failed checks go to
/// `failures`.
fn read_repeatedly(
    stop: &AtomicBool,
    acked_files: &[PathBuf],
    target: (&str, &str, i32, &Path),
    failures: &Mutex<Vec<String>>,
) -> (u32, u32, u32) {
    let (bootstrap, topic, partitions, dir) = target;
    let (mut ok, mut unavailable, mut out_of_range) = (0u32, 0u32, 0u32);
    let mut n = 0;
    loop {
        // One last read after `stop`: the cluster has recovered by then.
        let last = stop.load(Ordering::SeqCst);
        n += 1;
        let snapshot = dir.join(format!("snapshot-{n}.txt"));
        acked_snapshot(acked_files, &snapshot);
        match try_drain(bootstrap, topic, partitions, dir, 15) {
            Ok((read, drained)) => {
                let h = check(&snapshot, &read);
                if h["ok"] == true {
                    ok += 1;
                } else {
                    failures.lock().unwrap().push(format!(
                        "read {n} during the faults (drain: {drained}): {h:#}"
                    ));
                }
            }
            Err(e) if e.contains("offset out of range") => {
                out_of_range += 1;
                eprintln!("[nemesis reader: read {n} answered out of range: {e}]");
            }
            Err(e) => {
                unavailable += 1;
                eprintln!("[nemesis reader: read {n} unavailable: {e}]");
            }
        }
        if last {
            return (ok, unavailable, out_of_range);
        }
    }
}

/// One fault of the schedule: chosen by `rng` (round 1 always isolates a
/// broker), held, reported with its effect, healed, then a rest. True when
/// it was felt: an ISR shrunk or a leader epoch moved while it held.
fn fault_round(c: &ReplCluster, rng: &mut Rng, round: u32, topic: &str, partitions: i32) -> bool {
    let net = c.net();
    let before = c.states(topic, partitions);
    let id = rng.below(3) as i32 + 1;
    let kind = if round == 1 { 0 } else { rng.below(4) };
    let fault = match kind {
        0 | 1 => {
            net.isolate(id);
            format!("broker {id} isolated")
        }
        2 => {
            let other = (id + rng.below(2) as i32) % 3 + 1;
            net.cut(id, other);
            format!("brokers {id} and {other} cut")
        }
        _ => {
            net.loss(id, 30);
            let delayed = net.delay(id, 50);
            format!("broker {id} losing 30% (delay applied: {delayed})")
        }
    };
    // Held past replica.lag.time.max.ms and the session timeout (3 s
    // each) most of the time: shrinks and elections happen.
    let hold = 3000 + rng.below(4000);
    std::thread::sleep(Duration::from_millis(hold));
    let during = c.states(topic, partitions);
    let shrunk = during.values().filter(|st| st.isr.len() < 3).count();
    let elections = during
        .iter()
        .filter(|(p, st)| {
            before
                .get(p)
                .is_some_and(|b| b.leader_epoch < st.leader_epoch)
        })
        .count();
    eprintln!(
        "[nemesis round {round}: {fault} for {hold} ms: {shrunk} of {partitions} partitions with \
         a shrunk ISR, {elections} with a new leader epoch]"
    );
    net.heal_all();
    std::thread::sleep(Duration::from_millis(1000 + rng.below(2000)));
    shrunk + elections > 0
}

/// Two acks=all idempotent history producers ("na", "nb"), 100 records/s
/// each.
fn spawn_producers(c: &ReplCluster, topic: &str, partitions: i32) -> Vec<HistoryProducer> {
    ["na", "nb"]
        .iter()
        .map(|name| {
            HistoryProducer::spawn(
                &c.bootstrap(),
                topic,
                partitions,
                c.dir.path(),
                &[
                    "--acks=all",
                    "--idempotence=1",
                    "--rate=100",
                    &format!("--producer={name}"),
                ],
            )
        })
        .collect()
}

#[test]
fn rolling_partition_nemesis() {
    let secs = env_u64("SHARDLOG_NETNS_SECS").unwrap_or(30);
    // The schedule's seed: given, or the clock's.
    let seed = env_u64("SHARDLOG_NETNS_SEED").unwrap_or_else(|| now_ms() as u64);
    eprintln!(
        "[nemesis: seed {seed}, {secs} s of faults; replay the schedule with \
         SHARDLOG_NETNS_SEED={seed} SHARDLOG_NETNS_SECS={secs} cargo test --test cluster_netns \
         rolling_partition_nemesis]"
    );
    let mut rng = Rng(seed);
    let c = start(2);
    let (topic, partitions) = ("nemesis", 6);
    c.create_topic(topic, partitions, 3, &["min.insync.replicas=2"]);
    let mut producers = spawn_producers(&c, topic, partitions);
    for p in &mut producers {
        p.wait_acks(60, 50, "the first 50 acks");
    }
    let acked_files: Vec<PathBuf> = producers.iter().map(|p| p.acked_file.clone()).collect();
    let stop = AtomicBool::new(false);
    let reader_failures: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let (mut rounds, mut felt) = (0, 0);
    let (mut reads_ok, mut reads_unavailable, mut reads_out_of_range) = (0, 0, 0);
    let bootstrap = c.bootstrap();
    let dir = c.dir.path().to_path_buf();
    std::thread::scope(|s| {
        let reader = s.spawn(|| {
            let target = (bootstrap.as_str(), topic, partitions, dir.as_path());
            read_repeatedly(&stop, &acked_files, target, &reader_failures)
        });
        let deadline = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < deadline {
            rounds += 1;
            if fault_round(&c, &mut rng, rounds, topic, partitions) {
                felt += 1;
            }
        }
        wait_recovered(&c, topic, partitions, 120);
        for p in &mut producers {
            p.wait_acks(60, 20, "acks after the last heal");
        }
        stop.store(true, Ordering::SeqCst);
        (reads_ok, reads_unavailable, reads_out_of_range) = reader.join().expect("reader");
    });
    let mut reports = Vec::new();
    for p in producers {
        reports.push(p.finish(120));
    }
    let acked = concat(
        &c,
        "acked-nemesis-all.txt",
        &acked_files.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
    );
    let read = drain(&c.bootstrap(), topic, partitions, c.dir.path());
    let h = check(&acked, &read);
    let reports: Vec<String> = reports.iter().map(|r| r.to_string()).collect();
    eprintln!(
        "[nemesis seed {seed}: {rounds} faults in {secs} s ({felt} felt: ISR shrunk or leader moved); producers {}; reader: {reads_ok} \
         reads checked, {reads_unavailable} unavailable, {reads_out_of_range} answered \
         OFFSET_OUT_OF_RANGE; final check: {} acked, {} read, lost {}, \
         duplicates {}]",
        reports.join(", "),
        h["acked"],
        h["read"],
        h["lost_count"],
        h["duplicate_count"]
    );
    assert!(
        felt > 0,
        "nemesis seed {seed}: no fault of {rounds} shrank an ISR or moved a leader: the \
         partitions did not reach the brokers"
    );
    let failures = reader_failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "nemesis seed {seed}: a read during the faults missed acknowledged records or saw \
         duplicates/reordering:\n{}",
        failures.join("\n")
    );
    assert!(
        reads_ok > 0,
        "nemesis seed {seed}: the reader never completed a read ({reads_unavailable} unavailable)"
    );
    assert_history_ok(System::Shardlog, &format!("nemesis seed {seed}"), &h);
}
