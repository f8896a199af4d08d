//! Offset expiry (`offsets.retention.minutes`, Kafka's
//! `GroupMetadata.removeExpiredOffsets`) and OffsetCommit v1's own commit
//! timestamp, on the parent module's harness.

use super::*;

/// The harness with `offsets.retention.minutes` at one minute, checked
/// every 10 s, every offsets partition loaded.
fn with_a_minute_of_retention() -> Harness {
    let config = GroupConfig {
        offsets_retention_ms: 60_000,
        offsets_retention_check_interval_ms: 10_000,
        ..GroupConfig::default()
    };
    let mut h = Harness::new();
    h.c = Coordinator::new(config, 4);
    for p in 0..4 {
        h.c.begin_load(p);
        h.c.finish_load(p, 0);
    }
    h
}

#[test]
fn offsets_of_an_empty_group_expire_after_retention_and_the_group_dies() {
    let mut h = with_a_minute_of_retention();
    h.commit("g", -1, "", &[("t", 0, 5)]);
    h.appends.clear();
    h.advance(50_000);
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        5
    );
    h.advance(20_000);
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        -1
    );
    assert_eq!(h.c.group_state("g"), None, "removed");
    let tombstones: usize = h
        .appends
        .iter()
        .map(|(_, r, _)| r.iter().filter(|(_, v)| v.is_none()).count())
        .sum();
    assert_eq!(tombstones, 2, "the offset and the group");
}

#[test]
fn a_v1_commit_keeps_its_own_timestamp_and_expires_from_it() {
    // OffsetCommit v1 carries `commit_timestamp`; Kafka stores it as the
    // commit's time (GroupCoordinatorAdapter.commitOffsets), and retention
    // counts from it.
    let mut h = with_a_minute_of_retention();
    h.now = 100_000;
    let w = h.waiter();
    let req = CommitRequest {
        txn: None,
        group_id: "g".into(),
        generation: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: -1,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition: 0,
            offset: 9,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp_ms: 55_000,
        }],
    };
    let actions = h.c.on_commit(w, req, h.now);
    h.run(actions);
    assert_eq!(
        h.answer(w),
        Some(&Answer::Commit(vec![("t".into(), 0, ErrorCode::NONE)]))
    );
    let stored: Vec<OffsetCommitValue> = h
        .appends
        .iter()
        .flat_map(|(_, r, _)| r.iter())
        .filter_map(|(_, v)| v.as_ref())
        .map(|v| OffsetCommitValue::decode(v).expect("an offset value"))
        .collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        (stored[0].offset, stored[0].commit_timestamp_ms),
        (9, 55_000)
    );
    // 55 s + 60 s retention = 115 s: still there at 110 s, gone by 120 s.
    h.advance(10_000);
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        9
    );
    h.advance(10_000);
    assert_eq!(
        h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset,
        -1
    );
}

/// `offsets.retention.check.interval.ms` is the period of the expiry
/// check (Kafka's `GroupMetadataManager` schedules `cleanupGroupMetadata`
/// at that rate): an offset past `offsets.retention.minutes` stays until
/// the next check. Both keys are read from `server.properties` and mapped
/// as the broker maps them (`GroupHost::config_of`).
#[test]
fn offsets_retention_check_interval_ms_paces_the_expiry_check() {
    let props = "offsets.retention.minutes=1\noffsets.retention.check.interval.ms=45000\n";
    let server = crate::config::ServerConfig::from_properties(props, &[])
        .expect("valid properties")
        .config;
    let mut h = Harness::new();
    h.c = Coordinator::new(
        crate::shard::group::group_host::GroupHost::config_of(&server),
        4,
    );
    for p in 0..4 {
        h.c.begin_load(p);
        h.c.finish_load(p, 0);
    }
    assert_eq!(h.c.next_deadline(), Some(45_000), "the first check");
    h.commit("g", -1, "", &[("t", 0, 5)]);
    let offset = |h: &mut Harness| h.fetch("g", Some(vec![("t".into(), 0)])).partitions[0].offset;
    // The check at 45 s: 45 s old, within the minute.
    h.advance(45_000);
    assert_eq!(offset(&mut h), 5);
    assert_eq!(h.c.next_deadline(), Some(90_000), "the next check");
    // Past its retention at 60 s, but no check runs before 90 s.
    h.advance(44_999);
    assert_eq!(offset(&mut h), 5, "kept until the check");
    h.advance(1);
    assert_eq!(offset(&mut h), -1, "removed by the check at 90 s");
    assert_eq!(h.c.group_state("g"), None);
}
