//! `[drv]` The coordinators' own logs (`__consumer_offsets`,
//! `__transaction_state`): appending a coordinator's records with
//! acks=all and replaying a partition from its log start to its HW when
//! this shard starts leading it.

use std::rc::Rc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record, RecordBatchDecoder, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use crate::io::zerocopy::OutPart;
use crate::protocol::{record_batch, ErrorCode};
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::replication::partition::AppendOrigin;
use crate::shard::context::ShardContext;
use crate::storage::cleaner::codec::inflate_batch;
use crate::types::{TopicPartition, TxnWriter};

/// A coordinator's records: (key, value or `None` for a tombstone).
pub type Records = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// Bytes read per step while replaying a partition.
const LOAD_CHUNK_BYTES: usize = 1 << 20;

/// Append `records` to `tp` in one batch and wait up to `timeout_ms`
/// until the HW covers them (acks=all: `offsets.commit.required.acks`
/// -1; Kafka's transaction log appends are acks=all too). With
/// `producer` (a TxnOffsetCommit's producer, with its KIP-890 guard) the
/// batch is transactional, as Kafka's `GroupMetadataManager.storeOffsets`
/// writes it.
pub async fn append_acks_all(
    ctx: &Rc<ShardContext>,
    tp: TopicPartition,
    records: &Records,
    producer: Option<TxnWriter>,
    timeout_ms: i64,
) -> ErrorCode {
    let guard = producer.and_then(|w| w.guard);
    let batch = match encode_records(records, producer, ctx.clock.wall_ms()) {
        Ok(b) => b,
        Err(e) => {
            tracing::error!(%tp, error = %e, "coordinator batch did not encode");
            return ErrorCode::UNKNOWN_SERVER_ERROR;
        }
    };
    let now = ctx.clock.wall_ms();
    let mut results = ctx
        .datapath()
        .produce_on_owners(
            vec![(tp.clone(), (batch, guard))],
            now,
            -1,
            AppendOrigin::Coordinator,
        )
        .await;
    let Some(r) = results.pop() else {
        return ErrorCode::NOT_LEADER_OR_FOLLOWER;
    };
    if r.error_code != ErrorCode::NONE {
        return r.error_code;
    }
    match ctx
        .datapath()
        .wait_replicated(timeout_ms, &[tp], &[r])
        .await
    {
        Some(codes) => codes.first().copied().unwrap_or(ErrorCode::NONE),
        None => ErrorCode::NOT_LEADER_OR_FOLLOWER,
    }
}

/// One v2 batch of `records` (creation time `now_ms`; no producer id, or
/// a transactional batch of `producer`).
pub fn encode_records(
    records: &Records,
    producer: Option<TxnWriter>,
    now_ms: i64,
) -> anyhow::Result<Bytes> {
    let (producer_id, producer_epoch) = producer.map_or((-1, -1), |w| (w.producer_id, w.epoch));
    let list: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, (k, v))| {
            let i = i32::try_from(i).unwrap_or(i32::MAX);
            Record {
                transactional: producer.is_some(),
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id,
                producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset: i64::from(i),
                // The encoder splits batches where offset - sequence changes.
                sequence: -1 + i,
                timestamp: now_ms,
                key: Some(Bytes::copy_from_slice(k)),
                value: v.as_deref().map(Bytes::copy_from_slice),
                headers: Default::default(),
            }
        })
        .collect();
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        list.iter(),
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )?;
    Ok(buf.freeze())
}

/// One replayed item of a coordinator's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed<'a> {
    /// A keyed data record; `txn_producer` when its batch is transactional
    /// (a TxnOffsetCommit's offsets, pending until the producer's marker).
    Record {
        offset: i64,
        key: &'a [u8],
        value: Option<&'a [u8]>,
        txn_producer: Option<i64>,
    },
    /// A transaction marker of `producer_id`.
    Marker { producer_id: i64, commit: bool },
}

/// Replay `tp` from its log start to its log end: `f` for each keyed data
/// record and each transaction marker, which says whether it used it.
/// Returns the items used.
///
/// To the log end, not the HW, as Kafka 3.9's coordinators load
/// (`TransactionStateManager.loadTransactionMetadata` and
/// `GroupMetadataManager.doLoadGroupsAndOffsets` read with
/// `FetchIsolation.LOG_END` up to `logEndOffset`): a new leader learns the
/// HW from its followers' fetches, so right after an election its own HW
/// can lag records the previous leader acknowledged (acks=all), such as
/// a PrepareCommit; stopping at the HW loses them.
///
/// But only once the HW reached the start of this leader's epoch (the
/// log end it was elected with; KIP-207's check, `list_offset` answering
/// OFFSET_NOT_AVAILABLE until then): the tail past the old HW may be
/// records no one acknowledged, which the next leader can lack. Loaded,
/// they would be acted on (a coordinator answering AddPartitionsToTxn from
/// an Ongoing state, or sending the markers of a PrepareCommit, that a
/// later coordinator never sees: a transaction committed in one partition
/// and aborted in another). Waiting makes every loaded record committed.
/// Not found in the time a follower has to fetch before it leaves the
/// ISR (`replica.lag.time.max.ms`): an error, and the driver retries.
///
/// And only once the controller's partition state still names this broker
/// leader in `leader_epoch` (`ControlShard::confirm_leadership`): a
/// LeaderAndIsr that arrived late makes a leader whose HW already covers
/// its epoch's start, with none of what the real leader committed since.
pub async fn replay(
    ctx: &Rc<ShardContext>,
    tp: &TopicPartition,
    leader_epoch: i32,
    mut f: impl FnMut(Replayed<'_>) -> bool,
) -> Result<u64, String> {
    let Some(data) = ctx.data() else {
        return Err("no data part".into());
    };
    let start = data
        .replicas
        .list_offset(tp, -2, FetchIsolation::HighWatermark)
        .await;
    if start.error_code != ErrorCode::NONE {
        return Err(format!("log start: {:?}", start.error_code));
    }
    let patience = u64::try_from(ctx.config.replica_lag_time_max_ms).unwrap_or(30_000);
    let mut waited = 0u64;
    loop {
        let end = data
            .replicas
            .list_offset(tp, -1, FetchIsolation::HighWatermark)
            .await;
        match end.error_code {
            ErrorCode::NONE => break,
            ErrorCode::OFFSET_NOT_AVAILABLE if waited < patience => {
                glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
                waited += 10;
            }
            e => return Err(format!("HW short of the leader epoch's start: {e:?}")),
        }
    }
    ctx.control_client()
        .confirm_leadership(tp.clone(), leader_epoch)
        .await
        .map_err(|e| format!("leadership not confirmed: {e}"))?;
    let mut offset = start.offset;
    let mut replayed = 0u64;
    loop {
        let a = data
            .replicas
            .read(tp, offset, LOAD_CHUNK_BYTES, FetchIsolation::LogEnd, true)
            .await;
        if a.error_code != ErrorCode::NONE {
            return Err(format!("read at {offset}: {:?}", a.error_code));
        }
        if a.bytes == 0 {
            return Ok(replayed);
        }
        let mut bytes = gather(&a.records)?;
        let mut next = offset;
        while !bytes.is_empty() {
            let len = match record_batch::peek_total_len(&bytes) {
                Ok(Some(len)) if len <= bytes.len() => len,
                other => return Err(format!("batch at {next}: {other:?}")),
            };
            let mut one = bytes.split_to(len);
            let last = record_batch::RecordBatch::new_unchecked_crc(&one)
                .map(|b| b.last_offset())
                .map_err(|e| format!("batch at {next}: {e}"))?;
            // kafka-protocol reads no LZ4 (its C `lz4` codec is left out of
            // the build): an LZ4 batch (a log written with Kafka's
            // `offsets.topic.compression.codec` 3) is inflated first, in
            // the shard storage's scratch.
            if one.get(22).is_some_and(|a| a & 0x7 == 3) {
                one = Bytes::from(
                    inflate_batch(&one, &mut data.replicas.storage().inflate_scratch())
                        .map_err(|e| format!("batch at {next}: {e}"))?,
                );
            }
            let set = RecordBatchDecoder::decode(&mut one)
                .map_err(|e| format!("records at {next}: {e}"))?;
            for r in set.records {
                if r.offset < offset {
                    continue;
                }
                let Some(key) = r.key.as_deref() else {
                    continue;
                };
                let item = if r.control {
                    // Kafka's control record key: version int16, type
                    // int16 (0 ABORT, 1 COMMIT); other types are skipped.
                    match key.get(2..4).map(|t| i16::from_be_bytes([t[0], t[1]])) {
                        Some(t @ 0..=1) => Replayed::Marker {
                            producer_id: r.producer_id,
                            commit: t == 1,
                        },
                        _ => continue,
                    }
                } else {
                    Replayed::Record {
                        offset: r.offset,
                        key,
                        value: r.value.as_deref(),
                        txn_producer: r.transactional.then_some(r.producer_id),
                    }
                };
                if f(item) {
                    replayed += 1;
                }
            }
            next = last + 1;
        }
        if next <= offset {
            return Err(format!("no progress at {offset}"));
        }
        offset = next;
        // Let the shard serve between chunks.
        futures_lite::future::yield_now().await;
    }
}

/// A read's parts as one buffer.
fn gather(parts: &[OutPart]) -> Result<Bytes, String> {
    crate::io::parts::gather(parts).map_err(|e| format!("read segment: {e}"))
}
