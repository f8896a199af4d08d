//! `[pure]` The records of `__transaction_state` in Kafka's formats
//! (apache/kafka 3.9 `transaction-coordinator/src/main/resources/common/
//! message/{TransactionLogKey,TransactionLogValue}.json`, written and read
//! by `core/src/main/scala/kafka/coordinator/transaction/
//! TransactionLog.scala`), so a Kafka 3.9 coordinator can load what shardlog
//! wrote and the other way round.
//!
//! The key is one version, 0: int16 version, then the transactional id as
//! a STRING (int16 length, UTF-8). The value:
//!
//! ```text
//! int16  version                              0 | 1 (flexible)
//! int64  ProducerId
//! int16  ProducerEpoch
//! int32  TransactionTimeoutMs
//! int8   TransactionStatus                    TxnState::id
//! array  TransactionPartitions (nullable)     int32 count | compact count+1
//!        string Topic                         int16 length | compact length+1
//!        array  PartitionIds of int32         int32 count | compact count+1
//!        (v1: tagged fields)
//! int64  TransactionLastUpdateTimestampMs
//! int64  TransactionStartTimestampMs
//! (v1: tagged fields)
//! ```
//!
//! A null value is a tombstone: the transactional id expired and was
//! removed. The caller sees the null; [`decode_value`] takes the bytes of
//! a value that is there.
//!
//! Which value version is written: 3.9's `TransactionLog.valueToBytes
//! (txn, usesFlexibleRecords)` writes v1 only when `usesFlexibleRecords`,
//! which `TransactionStateManager.usesFlexibleRecords` derives from the
//! finalized `transaction.version` feature being above 0. Level 1 needs
//! metadata version IBP_4_0_IV0, not a production version in 3.9
//! (`server-common/.../TransactionVersion.java`), and a ZooKeeper-mode
//! cluster finalizes no such feature, so Kafka 3.9 writes v0.
//! [`encode_value`] writes v0; [`encode_value_with`] takes Kafka's flag.
//!
//! The partitions, as `valueToBytes` writes them: null for an `Empty`
//! transaction, otherwise the set grouped by topic — an empty list once a
//! commit or abort completed (the set was cleared). Kafka groups through a
//! hash map, so its order is arbitrary; ours is by topic, then partition.
//! Readers take any order.
//!
//! Reading takes v0 and v1. v1's tagged fields are skipped: 3.9 defines
//! none, Kafka 4.0 adds PreviousProducerId (tag 0), NextProducerId (tag 1)
//! and ClientTransactionVersion (tag 2). Decoders never trust a length
//! beyond the bytes left: arbitrary bytes give a `RecordError`, not a
//! panic or a large allocation. Bytes after the record are refused (Kafka's
//! generated reader ignores them; `group::records` refuses them too).

use crate::protocol::record_reader::Reader;
use crate::protocol::varint::put_unsigned_varint;

use super::status::TxnState;

/// The one key version Kafka defines and writes.
pub const KEY_VERSION: i16 = 0;
/// The value version Kafka 3.9 writes (see the module header).
pub const VALUE_VERSION: i16 = 0;
/// The flexible value version, written once `transaction.version` ≥ 1.
pub const VALUE_VERSION_FLEXIBLE: i16 = 1;
/// Longest string a record can hold: an int16 length. The coordinator
/// refuses longer transactional ids before they get here (Kafka's
/// serializer throws on them and the append fails); the encoder cuts a
/// longer string at a character boundary rather than write a bad length.
pub const STRING_MAX_BYTES: usize = i16::MAX as usize;

/// A transactional id's stored state (`TransactionLogValue`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub transaction_timeout_ms: i32,
    pub state: TxnState,
    /// Topic → partition ids, in the order stored. Empty when the record
    /// holds null; never written for an `Empty` transaction.
    pub partitions: Vec<(String, Vec<i32>)>,
    pub last_update_timestamp_ms: i64,
    /// -1 when no transaction has started (an `Empty` transaction).
    pub start_timestamp_ms: i64,
}

pub use crate::protocol::record_reader::RecordError;

const KEY: &str = "transaction log key";
const VALUE: &str = "transaction log value";

// --- encoding -------------------------------------------------------------

/// Appends Kafka's primitive types, classic or flexible.
struct Writer {
    out: Vec<u8>,
    flexible: bool,
}

impl Writer {
    fn new(version: i16, flexible: bool) -> Self {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&version.to_be_bytes());
        Writer { out, flexible }
    }

    fn bytes(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }

    /// An array's element count: int32 (-1 null) or compact count+1 (0 null).
    fn count(&mut self, n: Option<usize>) {
        match (n, self.flexible) {
            (None, false) => self.bytes(&(-1i32).to_be_bytes()),
            (None, true) => self.out.push(0),
            (Some(n), false) => {
                let n = i32::try_from(n).unwrap_or(i32::MAX);
                self.bytes(&n.to_be_bytes());
            }
            (Some(n), true) => put_unsigned_varint(&mut self.out, n as u64 + 1),
        }
    }

    fn string(&mut self, s: &str) {
        let mut end = s.len().min(STRING_MAX_BYTES);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        let b = &s.as_bytes()[..end];
        if self.flexible {
            put_unsigned_varint(&mut self.out, b.len() as u64 + 1);
        } else {
            self.bytes(&(b.len() as i16).to_be_bytes());
        }
        self.bytes(b);
    }

    /// Flexible structs end with their tagged fields; we write none.
    fn no_tagged_fields(&mut self) {
        if self.flexible {
            self.out.push(0);
        }
    }
}

/// `TransactionLogKey` v0 of `transactional_id` (Kafka's `keyToBytes`).
pub fn encode_key(transactional_id: &str) -> Vec<u8> {
    let mut w = Writer::new(KEY_VERSION, false);
    w.string(transactional_id);
    w.out
}

/// The value as Kafka 3.9 writes it: v0.
pub fn encode_value(value: &TxnLogValue) -> Vec<u8> {
    encode_value_with(value, false)
}

/// Kafka's `valueToBytes(txn, usesFlexibleRecords)`: v1 when flexible
/// records are in use, else v0. An `Empty` transaction's partitions are
/// written as null whatever the struct holds (Kafka refuses to write an
/// `Empty` one that has any; our state machine never builds one).
pub fn encode_value_with(value: &TxnLogValue, uses_flexible_records: bool) -> Vec<u8> {
    let version = if uses_flexible_records {
        VALUE_VERSION_FLEXIBLE
    } else {
        VALUE_VERSION
    };
    let mut w = Writer::new(version, uses_flexible_records);
    w.bytes(&value.producer_id.to_be_bytes());
    w.bytes(&value.producer_epoch.to_be_bytes());
    w.bytes(&value.transaction_timeout_ms.to_be_bytes());
    w.bytes(&value.state.id().to_be_bytes());
    if value.state == TxnState::Empty {
        w.count(None);
    } else {
        w.count(Some(value.partitions.len()));
        for (topic, ids) in &value.partitions {
            w.string(topic);
            w.count(Some(ids.len()));
            for id in ids {
                w.bytes(&id.to_be_bytes());
            }
            w.no_tagged_fields();
        }
    }
    w.bytes(&value.last_update_timestamp_ms.to_be_bytes());
    w.bytes(&value.start_timestamp_ms.to_be_bytes());
    w.no_tagged_fields();
    w.out
}

// --- decoding -------------------------------------------------------------

/// The transactional id of a `TransactionLogKey`. Kafka 3.9 reads only v0
/// (`readTxnRecordKey` turns any other version into an `UnknownKey` that
/// loading skips); here it is `RecordError::UnknownVersion`.
pub fn decode_key(bytes: &[u8]) -> Result<String, RecordError> {
    let mut r = Reader::new(KEY, bytes);
    let version = r.i16()?;
    if version != KEY_VERSION {
        return Err(RecordError::UnknownVersion { what: KEY, version });
    }
    let transactional_id = r.string("TransactionalId")?;
    r.finish()?;
    Ok(transactional_id)
}

/// A non-null `TransactionLogValue`, v0 or v1. A null partitions array
/// reads as no partitions.
pub fn decode_value(bytes: &[u8]) -> Result<TxnLogValue, RecordError> {
    let mut r = Reader::new(VALUE, bytes);
    let version = r.i16()?;
    if !(VALUE_VERSION..=VALUE_VERSION_FLEXIBLE).contains(&version) {
        return Err(RecordError::UnknownVersion {
            what: VALUE,
            version,
        });
    }
    r.flexible = version >= VALUE_VERSION_FLEXIBLE;
    let producer_id = r.i64()?;
    let producer_epoch = r.i16()?;
    let transaction_timeout_ms = r.i32()?;
    let status = r.i8()?;
    let state = TxnState::from_id(status)
        .ok_or_else(|| r.err(format!("unknown transaction state id {status}")))?;
    let partitions = decode_partitions(&mut r)?;
    let last_update_timestamp_ms = r.i64()?;
    let start_timestamp_ms = r.i64()?;
    r.tagged_fields()?;
    r.finish()?;
    Ok(TxnLogValue {
        producer_id,
        producer_epoch,
        transaction_timeout_ms,
        state,
        partitions,
        last_update_timestamp_ms,
        start_timestamp_ms,
    })
}

/// `TransactionPartitions`: nullable array of (topic, partition ids).
fn decode_partitions(r: &mut Reader<'_>) -> Result<Vec<(String, Vec<i32>)>, RecordError> {
    // Smallest entry: an empty topic and an empty id array (int16 + int32
    // classic; two one-byte compact lengths and the tag count flexible).
    let min_entry = if r.flexible { 3 } else { 6 };
    let Some(n) = r.nullable_count(min_entry)? else {
        return Ok(Vec::new());
    };
    let mut partitions = Vec::with_capacity(n);
    for _ in 0..n {
        let topic = r.string("Topic")?;
        let Some(ids) = r.nullable_count(4)? else {
            return Err(r.err("PartitionIds is null"));
        };
        let mut partition_ids = Vec::with_capacity(ids);
        for _ in 0..ids {
            partition_ids.push(r.i32()?);
        }
        r.tagged_fields()?;
        partitions.push((topic, partition_ids));
    }
    Ok(partitions)
}

#[cfg(test)]
mod tests;
