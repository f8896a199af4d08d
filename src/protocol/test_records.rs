//! Test helper: kafka-protocol `Record`s to encode batches from in unit tests.

use bytes::Bytes;
use kafka_protocol::records::{Record, TimestampType};

/// A plain (non-transactional, no producer id) CreateTime record. Its
/// sequence follows its offset: kafka-protocol's encoder starts a new
/// batch whenever offset - sequence changes, so consecutive offsets stay
/// in one batch.
pub fn record(offset: i64, timestamp: i64, key: Option<Bytes>, value: Option<Bytes>) -> Record {
    Record {
        transactional: false,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: -1,
        producer_epoch: -1,
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: offset as i32,
        timestamp,
        key,
        value,
        headers: Default::default(),
    }
}
