//! `[pure]` Kafka's small text files, encoded and decoded without I/O.
//!
//! - Offset checkpoints (`recovery-point-offset-checkpoint`,
//!   `replication-offset-checkpoint`, `log-start-offset-checkpoint`):
//!   `version` line (0), count line, then `topic partition offset` lines
//!   (Kafka `CheckpointFile` / `OffsetCheckpointFile`).
//! - `cleaner-offset-checkpoint` (same format): the log cleaner's first
//!   dirty offset per compacted log (Kafka `LogCleanerManager`).
//! - `leader-epoch-checkpoint`: version 0, count, `epoch startOffset` lines.
//! - `meta.properties`: Java properties (`version=0`, `broker.id`, `cluster.id`).
//! - `partition.metadata`: `version: 0\ntopic_id: <base64 uuid>` (Kafka
//!   `PartitionMetadataFile`; the id is URL-safe base64 without padding,
//!   as `org.apache.kafka.common.Uuid.toString`).

use crate::types::TopicPartition;

pub const CHECKPOINT_VERSION: u32 = 0;
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const REPLICATION_CHECKPOINT: &str = "replication-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const CLEANER_OFFSET_CHECKPOINT: &str = "cleaner-offset-checkpoint";
pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
pub const META_PROPERTIES: &str = "meta.properties";
pub const PARTITION_METADATA: &str = "partition.metadata";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed checkpoint: {0}")]
pub struct CheckpointError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, CheckpointError> {
    Err(CheckpointError(msg.into()))
}

/// Split a checkpoint into its entry lines after checking version and count.
/// An empty file has no entries: Kafka's `CheckpointFile.CheckpointReadBuffer`
/// returns an empty list when the first `readLine` is null, and Kafka leaves
/// such files behind (a `leader-epoch-checkpoint` created before any epoch
/// was assigned), so a log dir Kafka wrote opens.
fn entry_lines(text: &str) -> Result<Vec<&str>, CheckpointError> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let mut lines = text.lines();
    match lines.next().map(str::trim) {
        Some(v) if v.parse::<u32>() == Ok(CHECKPOINT_VERSION) => {}
        other => return err(format!("unsupported version line {other:?}")),
    }
    let count: usize = match lines.next().map(|l| l.trim().parse()) {
        Some(Ok(n)) => n,
        _ => return err("missing or bad count line"),
    };
    let entries: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
    if entries.len() != count {
        return err(format!("count {count} but {} entries", entries.len()));
    }
    Ok(entries)
}

pub fn encode_offsets(entries: &[(TopicPartition, i64)]) -> String {
    let mut s = format!("{CHECKPOINT_VERSION}\n{}\n", entries.len());
    for (tp, off) in entries {
        s.push_str(&format!("{} {} {}\n", tp.topic, tp.partition, off));
    }
    s
}

pub fn decode_offsets(text: &str) -> Result<Vec<(TopicPartition, i64)>, CheckpointError> {
    entry_lines(text)?
        .into_iter()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                [t, p, o] => match (p.parse(), o.parse()) {
                    (Ok(p), Ok(o)) => Ok((TopicPartition::new(*t, p), o)),
                    _ => err(format!("bad numbers in {line:?}")),
                },
                _ => err(format!("bad entry {line:?}")),
            }
        })
        .collect()
}

/// `leader-epoch-checkpoint`: (leader epoch, start offset) pairs (KIP-101).
/// `existing` entries with `updates` applied (an update replaces the
/// entry of its partition; partitions in `removed` are dropped), sorted by
/// partition so the file text is deterministic. Several shards share one
/// log dir's `cleaner-offset-checkpoint`: each merges its own partitions
/// into what the file holds.
pub fn merge_offsets(
    existing: Vec<(TopicPartition, i64)>,
    updates: &[(TopicPartition, i64)],
    removed: &[TopicPartition],
) -> Vec<(TopicPartition, i64)> {
    let mut map: std::collections::BTreeMap<TopicPartition, i64> = existing.into_iter().collect();
    for (tp, offset) in updates {
        map.insert(tp.clone(), *offset);
    }
    for tp in removed {
        map.remove(tp);
    }
    map.into_iter().collect()
}

pub fn encode_leader_epochs(entries: &[(i32, i64)]) -> String {
    let mut s = format!("{CHECKPOINT_VERSION}\n{}\n", entries.len());
    for (e, o) in entries {
        s.push_str(&format!("{e} {o}\n"));
    }
    s
}

pub fn decode_leader_epochs(text: &str) -> Result<Vec<(i32, i64)>, CheckpointError> {
    entry_lines(text)?
        .into_iter()
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            match f.as_slice() {
                [e, o] => match (e.parse(), o.parse()) {
                    (Ok(e), Ok(o)) => Ok((e, o)),
                    _ => err(format!("bad numbers in {line:?}")),
                },
                _ => err(format!("bad entry {line:?}")),
            }
        })
        .collect()
}

/// `meta.properties` of a ZooKeeper-mode broker (version 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaProperties {
    pub version: u32,
    pub broker_id: i32,
    pub cluster_id: Option<String>,
}

pub fn encode_meta_properties(m: &MetaProperties) -> String {
    let mut s = format!("#\nversion={}\nbroker.id={}\n", m.version, m.broker_id);
    if let Some(c) = &m.cluster_id {
        s.push_str(&format!("cluster.id={c}\n"));
    }
    s
}

pub fn decode_meta_properties(text: &str) -> Result<MetaProperties, CheckpointError> {
    let (mut version, mut broker_id, mut cluster_id) = (None, None, None);
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return err(format!("bad property line {line:?}"));
        };
        match k.trim() {
            "version" => version = v.trim().parse().ok(),
            "broker.id" => broker_id = v.trim().parse().ok(),
            "cluster.id" => cluster_id = Some(v.trim().to_string()),
            _ => {}
        }
    }
    match (version, broker_id) {
        (Some(version), Some(broker_id)) => Ok(MetaProperties {
            version,
            broker_id,
            cluster_id,
        }),
        _ => err("meta.properties lacks version or broker.id"),
    }
}

pub fn encode_partition_metadata(topic_id: uuid::Uuid) -> String {
    format!("version: 0\ntopic_id: {}\n", kafka_uuid_to_string(topic_id))
}

pub fn decode_partition_metadata(text: &str) -> Result<uuid::Uuid, CheckpointError> {
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("version: 0") {
        return err("partition.metadata: bad version line");
    }
    match lines
        .next()
        .and_then(|l| l.trim().strip_prefix("topic_id: "))
    {
        Some(id) => {
            kafka_uuid_from_str(id.trim()).ok_or_else(|| CheckpointError("bad topic id".into()))
        }
        None => err("partition.metadata: missing topic_id"),
    }
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Kafka's `Uuid.toString`: URL-safe base64 of the 16 bytes, no padding.
pub fn kafka_uuid_to_string(id: uuid::Uuid) -> String {
    let b = id.as_bytes();
    let mut s = String::with_capacity(22);
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &x)| acc | u32::from(x) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            s.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    s
}

pub fn kafka_uuid_from_str(s: &str) -> Option<uuid::Uuid> {
    if s.len() != 22 {
        return None;
    }
    let mut out = Vec::with_capacity(16);
    for chunk in s.as_bytes().chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            let v = B64.iter().position(|&x| x == c)? as u32;
            n |= v << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    uuid::Uuid::from_slice(&out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_empty_file_has_no_entries_as_in_kafka() {
        assert_eq!(decode_offsets(""), Ok(Vec::new()));
        assert_eq!(decode_leader_epochs(""), Ok(Vec::new()));
        assert!(
            decode_offsets("\n").is_err(),
            "a blank first line is no version"
        );
    }

    #[test]
    fn cleaner_checkpoint_merge_replaces_adds_and_removes_sorted() {
        let tp = |t: &str, p| TopicPartition::new(t, p);
        let existing = vec![(tp("b", 0), 5), (tp("a", 1), 7), (tp("gone", 0), 1)];
        let merged = merge_offsets(
            existing,
            &[(tp("a", 1), 9), (tp("a", 0), 3)],
            &[tp("gone", 0)],
        );
        assert_eq!(
            merged,
            vec![(tp("a", 0), 3), (tp("a", 1), 9), (tp("b", 0), 5)]
        );
        assert_eq!(
            encode_offsets(&merged),
            "0\n3\na 0 3\na 1 9\nb 0 5\n",
            "Kafka's OffsetCheckpointFile text"
        );
    }

    #[test]
    fn offset_checkpoint_matches_kafka_text() {
        let e = vec![
            (TopicPartition::new("orders", 0), 42),
            (TopicPartition::new("a.b_c-d", 7), 0),
        ];
        let text = encode_offsets(&e);
        assert_eq!(text, "0\n2\norders 0 42\na.b_c-d 7 0\n");
        assert_eq!(decode_offsets(&text).unwrap(), e);
    }

    #[test]
    fn malformed_checkpoints_are_rejected() {
        for bad in [
            "1\n0\n",
            "0\n2\nt 0 1\n",
            "0\nx\n",
            "0\n1\nt zero 1\n",
            "0\n1\nt 0\n",
        ] {
            assert!(decode_offsets(bad).is_err(), "{bad:?}");
        }
        assert!(decode_leader_epochs("0\n1\n5\n").is_err());
    }

    #[test]
    fn leader_epoch_and_meta_properties_round_trip() {
        let e = vec![(0, 0), (3, 120)];
        assert_eq!(decode_leader_epochs(&encode_leader_epochs(&e)).unwrap(), e);
        let m = MetaProperties {
            version: 0,
            broker_id: 3,
            cluster_id: Some("abc".into()),
        };
        assert_eq!(
            decode_meta_properties(&encode_meta_properties(&m)).unwrap(),
            m
        );
    }

    #[test]
    fn topic_id_uses_kafka_base64() {
        let id = uuid::Uuid::from_bytes([0; 16]);
        assert_eq!(kafka_uuid_to_string(id), "AAAAAAAAAAAAAAAAAAAAAA");
        let id = uuid::Uuid::from_bytes([0xff; 16]);
        assert_eq!(kafka_uuid_to_string(id), "_____________________w");
        let text = encode_partition_metadata(id);
        assert_eq!(text, "version: 0\ntopic_id: _____________________w\n");
        assert_eq!(decode_partition_metadata(&text).unwrap(), id);
    }

    proptest! {
        #[test]
        fn uuid_text_round_trips(b in any::<[u8; 16]>()) {
            let id = uuid::Uuid::from_bytes(b);
            prop_assert_eq!(kafka_uuid_from_str(&kafka_uuid_to_string(id)), Some(id));
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,80}") {
            let _ = decode_offsets(&s);
            let _ = decode_leader_epochs(&s);
            let _ = decode_meta_properties(&s);
            let _ = decode_partition_metadata(&s);
            let _ = kafka_uuid_from_str(&s);
        }
    }
}
