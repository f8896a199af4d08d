//! `[pure]` tests of the `__consumer_offsets` record formats.

use super::*;
use proptest::prelude::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .filter(|t| *t != "|")
        .map(|t| u8::from_str_radix(t, 16).unwrap())
        .collect()
}

/// CLUSTER.md §3's example: group "g", topic "t", partition 0, offset 42,
/// leader epoch 0, metadata "", committed at 1700000000000.
#[test]
fn offset_commit_matches_kafkas_bytes() {
    let key = OffsetCommitKey {
        group: "g".into(),
        topic: "t".into(),
        partition: 0,
    };
    assert_eq!(
        key.encode(),
        hex("00 01 | 00 01 67 | 00 01 74 | 00 00 00 00")
    );
    let value = OffsetCommitValue {
        offset: 42,
        leader_epoch: 0,
        metadata: String::new(),
        commit_timestamp_ms: 1_700_000_000_000,
        expire_timestamp_ms: -1,
    };
    let want =
        hex("00 03 | 00 00 00 00 00 00 00 2a | 00 00 00 00 | 00 00 | 00 00 01 8b cf e5 68 00");
    assert_eq!(value.encode(), want);
    assert_eq!(OffsetCommitValue::decode(&want), Ok(value));
    assert_eq!(
        RecordKey::decode(&key.encode()),
        Ok(RecordKey::OffsetCommit(key))
    );
}

#[test]
fn a_commit_with_its_own_expiry_is_written_as_value_v1() {
    let value = OffsetCommitValue {
        offset: 7,
        leader_epoch: -1,
        metadata: "m".into(),
        commit_timestamp_ms: 10,
        expire_timestamp_ms: 20,
    };
    let bytes = value.encode();
    assert_eq!(&bytes[..2], &[0, 1]);
    assert_eq!(bytes.len(), 2 + 8 + 3 + 8 + 8);
    assert_eq!(OffsetCommitValue::decode(&bytes), Ok(value));
}

#[test]
fn a_v1_value_with_a_negative_expiry_keeps_it_and_round_trips_as_v1() {
    // v1: offset 5, metadata "a", commit timestamp 9, expiry -5. Only -1
    // means "none" (Kafka `readOffsetMessageValue`); -5 is an expiry in
    // the past. It used to re-encode as v3 without it (found by fuzzing).
    let v1 = hex("00 01 | 00 00 00 00 00 00 00 05 | 00 01 61 | 00 00 00 00 00 00 00 09 | ff ff ff ff ff ff ff fb");
    let d = OffsetCommitValue::decode(&v1).unwrap();
    assert_eq!(d.expire_timestamp_ms, -5);
    assert!(d.has_own_expiry());
    let again = d.encode();
    assert_eq!(&again[..2], &[0, 1], "still v1");
    assert_eq!(again, v1);
    assert_eq!(OffsetCommitValue::decode(&again), Ok(d));
    // v1 with -1: no expiry of its own; written back as v3.
    let none = hex("00 01 | 00 00 00 00 00 00 00 05 | 00 01 61 | 00 00 00 00 00 00 00 09 | ff ff ff ff ff ff ff ff");
    let d = OffsetCommitValue::decode(&none).unwrap();
    assert!(!d.has_own_expiry());
    assert_eq!(&d.encode()[..2], &[0, 3]);
}

#[test]
fn every_value_version_kafka_defines_decodes() {
    // v0: offset, metadata, timestamp.
    let v0 = hex("00 00 | 00 00 00 00 00 00 00 05 | 00 01 61 | 00 00 00 00 00 00 00 09");
    let d = OffsetCommitValue::decode(&v0).unwrap();
    assert_eq!(
        (d.offset, d.leader_epoch, d.metadata.as_str()),
        (5, -1, "a")
    );
    assert_eq!((d.commit_timestamp_ms, d.expire_timestamp_ms), (9, -1));
    // v4 (flexible): compact string (len + 1) and an empty tag buffer.
    let v4 =
        hex("00 04 | 00 00 00 00 00 00 00 05 | 00 00 00 03 | 02 61 | 00 00 00 00 00 00 00 09 | 00");
    let d = OffsetCommitValue::decode(&v4).unwrap();
    assert_eq!((d.offset, d.leader_epoch, d.metadata.as_str()), (5, 3, "a"));
    // v4 with one unknown tagged field, skipped.
    let v4_tagged = hex(
        "00 04 | 00 00 00 00 00 00 00 05 | 00 00 00 03 | 02 61 | 00 00 00 00 00 00 00 09 | 01 07 02 aa bb",
    );
    assert_eq!(OffsetCommitValue::decode(&v4_tagged).unwrap().offset, 5);
    assert!(matches!(
        OffsetCommitValue::decode(&hex("00 05 00")),
        Err(RecordError::UnknownVersion { version: 5, .. })
    ));
}

fn group() -> GroupMetadataValue {
    GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 3,
        protocol: Some("range".into()),
        leader: Some("m-1".into()),
        current_state_timestamp_ms: 1_700_000_000_000,
        members: vec![MemberMetadata {
            member_id: "m-1".into(),
            group_instance_id: Some("i-1".into()),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: vec![0, 1, 2],
            assignment: vec![],
        }],
    }
}

#[test]
fn group_metadata_is_value_v3_and_round_trips() {
    let bytes = group().encode();
    assert_eq!(&bytes[..2], &[0, 3]);
    assert_eq!(GroupMetadataValue::decode(&bytes), Ok(group()));
    assert_eq!(
        RecordKey::decode(&encode_group_metadata_key("g")),
        Ok(RecordKey::GroupMetadata { group: "g".into() })
    );
    assert_eq!(encode_group_metadata_key("g"), hex("00 02 00 01 67"));
}

#[test]
fn an_empty_group_has_null_protocol_and_leader() {
    let empty = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 0,
        protocol: None,
        leader: None,
        current_state_timestamp_ms: -1,
        members: vec![],
    };
    let bytes = empty.encode();
    assert_eq!(
        bytes,
        hex("00 03 | 00 08 63 6f 6e 73 75 6d 65 72 | 00 00 00 00 | ff ff | ff ff | ff ff ff ff ff ff ff ff | 00 00 00 00")
    );
    assert_eq!(GroupMetadataValue::decode(&bytes), Ok(empty));
}

#[test]
fn an_old_group_value_without_rebalance_timeout_takes_the_session_timeout() {
    // v0: no currentStateTimestamp, no groupInstanceId, no rebalanceTimeout.
    let v0 = hex(
        "00 00 | 00 01 63 | 00 00 00 01 | 00 01 72 | 00 01 6d | 00 00 00 01 \
         | 00 01 6d | 00 01 63 | 00 01 68 | 00 00 27 10 | 00 00 00 00 | 00 00 00 00",
    );
    let d = GroupMetadataValue::decode(&v0).unwrap();
    assert_eq!(d.current_state_timestamp_ms, -1);
    assert_eq!(d.members[0].group_instance_id, None);
    assert_eq!(d.members[0].rebalance_timeout_ms, 10_000);
    assert_eq!(d.members[0].session_timeout_ms, 10_000);
}

#[test]
fn a_member_count_beyond_the_bytes_is_refused_before_allocating() {
    let mut bytes = hex("00 03 | 00 01 63 | 00 00 00 01 | ff ff | ff ff | 00 00 00 00 00 00 00 00");
    bytes.extend_from_slice(&i32::MAX.to_be_bytes());
    assert!(matches!(
        GroupMetadataValue::decode(&bytes),
        Err(RecordError::Malformed { .. })
    ));
}

#[test]
fn truncated_and_trailing_bytes_are_errors() {
    let bytes = group().encode();
    for cut in 0..bytes.len() {
        assert!(
            GroupMetadataValue::decode(&bytes[..cut]).is_err(),
            "cut at {cut}"
        );
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(GroupMetadataValue::decode(&long).is_err());
    assert!(RecordKey::decode(&hex("00 09 00 01 67")).is_err());
}

#[test]
fn a_string_past_the_int16_limit_is_cut_on_a_character_boundary() {
    let long = "é".repeat(20_000); // 40,000 bytes
    let value = OffsetCommitValue {
        offset: 1,
        leader_epoch: -1,
        metadata: long,
        commit_timestamp_ms: 0,
        expire_timestamp_ms: -1,
    };
    let back = OffsetCommitValue::decode(&value.encode()).unwrap();
    assert_eq!(back.metadata.len(), 32_766);
    assert!(back.metadata.chars().all(|c| c == 'é'));
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = RecordKey::decode(&bytes);
        let _ = OffsetCommitValue::decode(&bytes);
        let _ = GroupMetadataValue::decode(&bytes);
    }

    #[test]
    fn offset_commits_round_trip(
        group in "[a-z.-]{0,20}", topic in "[a-z]{1,20}", partition in any::<i32>(),
        offset in any::<i64>(), epoch in -1i32..1000, metadata in "\\PC{0,40}",
        ts in any::<i64>(), expire in prop_oneof![Just(-1i64), 0i64..i64::MAX],
    ) {
        let key = OffsetCommitKey { group, topic, partition };
        prop_assert_eq!(RecordKey::decode(&key.encode()), Ok(RecordKey::OffsetCommit(key)));
        // v1 carries no leader epoch: it comes back unknown.
        let leader_epoch = if expire >= 0 { -1 } else { epoch };
        let value = OffsetCommitValue {
            offset, leader_epoch, metadata, commit_timestamp_ms: ts, expire_timestamp_ms: expire,
        };
        prop_assert_eq!(OffsetCommitValue::decode(&value.encode()), Ok(value));
    }

    #[test]
    fn group_metadata_round_trips(
        generation in any::<i32>(), n in 0usize..5, sub in proptest::collection::vec(any::<u8>(), 0..64),
        static_member in any::<bool>(),
    ) {
        let members = (0..n).map(|i| MemberMetadata {
            member_id: format!("m-{i}"),
            group_instance_id: static_member.then(|| format!("i-{i}")),
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout_ms: 1000 + i as i32,
            session_timeout_ms: 500,
            subscription: sub.clone(),
            assignment: sub.iter().rev().copied().collect(),
        }).collect();
        let g = GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation,
            protocol: (n > 0).then(|| "range".to_owned()),
            leader: (n > 0).then(|| "m-0".to_owned()),
            current_state_timestamp_ms: 5,
            members,
        };
        prop_assert_eq!(GroupMetadataValue::decode(&g.encode()), Ok(g));
    }
}
