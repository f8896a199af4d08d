//! `[pure]` The records of `__consumer_offsets` in Kafka's formats
//! (CLUSTER.md §3; apache/kafka `group-coordinator/src/main/resources/
//! common/message/{OffsetCommitKey,OffsetCommitValue,GroupMetadataKey,
//! GroupMetadataValue}.json`), so a Kafka 3.9 coordinator can load what
//! shardlog wrote and the other way round.
//!
//! A record's key starts with an int16 that says what it is: 0 or 1 an
//! offset commit `(group, topic, partition)`, 2 a group's metadata
//! `(group)`. Values start with their own int16 version. A null value is a
//! tombstone (an offset deleted, a group removed).
//!
//! What shardlog writes is what Kafka 3.9 writes: offset commit key v1 and
//! value v3 (v1, with `expireTimestamp`, only when an OffsetCommit v2–v4
//! asked for a retention time), group metadata key v2 and value v3. Reading
//! takes every version Kafka defines, 0–4, including the flexible v4 a
//! newer Kafka writes (compact strings and arrays, tagged fields skipped;
//! KIP-915 keeps them readable). Decoders never trust a length from the
//! input beyond the bytes left: arbitrary bytes give a `RecordError`, not a
//! panic or a large allocation.

use crate::protocol::record_reader::Reader;

/// What a `__consumer_offsets` record stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    OffsetCommit(OffsetCommitKey),
    GroupMetadata { group: String },
}

/// Key of an offset commit.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OffsetCommitKey {
    pub group: String,
    pub topic: String,
    pub partition: i32,
}

/// Value of an offset commit (`OffsetCommitValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    pub offset: i64,
    /// -1 when unknown (v0–v2 carry none).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp_ms: i64,
    /// Only v1 carries it: the commit's own retention (OffsetCommit v2–v4's
    /// `retention_time_ms`). -1 when absent; any other value, negative
    /// ones included, is an expiry (Kafka's `readOffsetMessageValue` maps
    /// only `DEFAULT_TIMESTAMP` = -1 to none).
    pub expire_timestamp_ms: i64,
}

/// One member of a group as stored (`GroupMetadataValue.MemberMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadata {
    pub member_id: String,
    /// KIP-345 static membership (v3+).
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// v1+; a v0 record means the session timeout.
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// A group's metadata as stored (`GroupMetadataValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// v2+; -1 when absent.
    pub current_state_timestamp_ms: i64,
    pub members: Vec<MemberMetadata>,
}

pub use crate::protocol::record_reader::RecordError;

/// `expire_timestamp_ms` of a commit without its own expiry (Kafka's
/// `OffsetCommitRequest.DEFAULT_TIMESTAMP`).
pub const NO_EXPIRY: i64 = -1;

/// Key version of an offset commit Kafka 3.9 writes.
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of a group's metadata.
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;
/// Offset commit value version Kafka 3.9 writes (v1 only with an expiry).
pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// Group metadata value version Kafka 3.9 writes.
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

// --- encoding -------------------------------------------------------------

fn put_str(out: &mut Vec<u8>, s: &str) {
    // Kafka strings are at most i16::MAX bytes; longer ones are refused by
    // the request handlers before they get here (OffsetCommit metadata has
    // `offset.metadata.max.bytes`, ids are bounded by the request size).
    let mut end = s.len().min(i16::MAX as usize);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let bytes = &s.as_bytes()[..end];
    out.extend_from_slice(&(bytes.len() as i16).to_be_bytes());
    out.extend_from_slice(bytes);
}

fn put_nullable_str(out: &mut Vec<u8>, s: Option<&str>) {
    match s {
        Some(s) => put_str(out, s),
        None => out.extend_from_slice(&(-1i16).to_be_bytes()),
    }
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    let len = i32::try_from(b.len()).unwrap_or(i32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&b[..len as usize]);
}

impl OffsetCommitKey {
    /// Key v1 (v0 is the same layout; Kafka writes v1).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(10 + self.group.len() + self.topic.len());
        out.extend_from_slice(&OFFSET_COMMIT_KEY_VERSION.to_be_bytes());
        put_str(&mut out, &self.group);
        put_str(&mut out, &self.topic);
        out.extend_from_slice(&self.partition.to_be_bytes());
        out
    }
}

/// Key v2 of a group's metadata.
pub fn encode_group_metadata_key(group: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + group.len());
    out.extend_from_slice(&GROUP_METADATA_KEY_VERSION.to_be_bytes());
    put_str(&mut out, group);
    out
}

impl OffsetCommitValue {
    /// Whether the commit carries its own expiry (only v1 records do).
    pub fn has_own_expiry(&self) -> bool {
        self.expire_timestamp_ms != NO_EXPIRY
    }

    /// Kafka's choice (`GroupMetadataManager.offsetCommitValue`): v1 when the
    /// commit carries its own expiry, else v3.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.metadata.len());
        if self.has_own_expiry() {
            out.extend_from_slice(&1i16.to_be_bytes());
            out.extend_from_slice(&self.offset.to_be_bytes());
            put_str(&mut out, &self.metadata);
            out.extend_from_slice(&self.commit_timestamp_ms.to_be_bytes());
            out.extend_from_slice(&self.expire_timestamp_ms.to_be_bytes());
        } else {
            out.extend_from_slice(&OFFSET_COMMIT_VALUE_VERSION.to_be_bytes());
            out.extend_from_slice(&self.offset.to_be_bytes());
            out.extend_from_slice(&self.leader_epoch.to_be_bytes());
            put_str(&mut out, &self.metadata);
            out.extend_from_slice(&self.commit_timestamp_ms.to_be_bytes());
        }
        out
    }
}

impl GroupMetadataValue {
    /// Value v3.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&GROUP_METADATA_VALUE_VERSION.to_be_bytes());
        put_str(&mut out, &self.protocol_type);
        out.extend_from_slice(&self.generation.to_be_bytes());
        put_nullable_str(&mut out, self.protocol.as_deref());
        put_nullable_str(&mut out, self.leader.as_deref());
        out.extend_from_slice(&self.current_state_timestamp_ms.to_be_bytes());
        let n = i32::try_from(self.members.len()).unwrap_or(i32::MAX);
        out.extend_from_slice(&n.to_be_bytes());
        for m in self.members.iter().take(n as usize) {
            put_str(&mut out, &m.member_id);
            put_nullable_str(&mut out, m.group_instance_id.as_deref());
            put_str(&mut out, &m.client_id);
            put_str(&mut out, &m.client_host);
            out.extend_from_slice(&m.rebalance_timeout_ms.to_be_bytes());
            out.extend_from_slice(&m.session_timeout_ms.to_be_bytes());
            put_bytes(&mut out, &m.subscription);
            put_bytes(&mut out, &m.assignment);
        }
        out
    }
}

// --- decoding -------------------------------------------------------------

impl RecordKey {
    pub fn decode(bytes: &[u8]) -> Result<RecordKey, RecordError> {
        let mut r = Reader::new("record key", bytes);
        let key = match r.i16()? {
            0 | 1 => RecordKey::OffsetCommit(OffsetCommitKey {
                group: r.string("group")?,
                topic: r.string("topic")?,
                partition: r.i32()?,
            }),
            2 => RecordKey::GroupMetadata {
                group: r.string("group")?,
            },
            version => {
                return Err(RecordError::UnknownVersion {
                    what: "record key",
                    version,
                })
            }
        };
        r.finish()?;
        Ok(key)
    }
}

impl OffsetCommitValue {
    pub fn decode(bytes: &[u8]) -> Result<OffsetCommitValue, RecordError> {
        let mut r = Reader::new("offset commit value", bytes);
        let version = r.i16()?;
        if !(0..=4).contains(&version) {
            return Err(RecordError::UnknownVersion {
                what: "offset commit value",
                version,
            });
        }
        r.flexible = version >= 4;
        let offset = r.i64()?;
        let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
        let metadata = r.string("metadata")?;
        let commit_timestamp_ms = r.i64()?;
        let expire_timestamp_ms = if version == 1 { r.i64()? } else { -1 };
        r.tagged_fields()?;
        r.finish()?;
        Ok(OffsetCommitValue {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp_ms,
            expire_timestamp_ms,
        })
    }
}

impl GroupMetadataValue {
    pub fn decode(bytes: &[u8]) -> Result<GroupMetadataValue, RecordError> {
        let mut r = Reader::new("group metadata value", bytes);
        let version = r.i16()?;
        if !(0..=4).contains(&version) {
            return Err(RecordError::UnknownVersion {
                what: "group metadata value",
                version,
            });
        }
        r.flexible = version >= 4;
        let protocol_type = r.string("protocolType")?;
        let generation = r.i32()?;
        let protocol = r.nullable_string()?;
        let leader = r.nullable_string()?;
        let current_state_timestamp_ms = if version >= 2 { r.i64()? } else { -1 };
        // A member is at least three empty strings, one timeout and two
        // empty byte arrays.
        let n = r.count(6 + 4 + 8)?;
        let mut members = Vec::with_capacity(n);
        for _ in 0..n {
            let member_id = r.string("memberId")?;
            let group_instance_id = if version >= 3 {
                r.nullable_string()?
            } else {
                None
            };
            let client_id = r.string("clientId")?;
            let client_host = r.string("clientHost")?;
            let rebalance_timeout = if version >= 1 { Some(r.i32()?) } else { None };
            let session_timeout_ms = r.i32()?;
            let subscription = r.bytes()?;
            let assignment = r.bytes()?;
            r.tagged_fields()?;
            members.push(MemberMetadata {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                rebalance_timeout_ms: rebalance_timeout.unwrap_or(session_timeout_ms),
                session_timeout_ms,
                subscription,
                assignment,
            });
        }
        r.tagged_fields()?;
        r.finish()?;
        Ok(GroupMetadataValue {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp_ms,
            members,
        })
    }
}

#[cfg(test)]
mod tests;
