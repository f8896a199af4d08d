//! `[drv]` Fetch v0–v3's records down-converted to the magic those
//! versions read (`protocol::legacy::down`), on the connection's shard
//! after the owners' reads; v4+ fetches never call it.

use bytes::Bytes;

use super::Wanted;
use crate::protocol::legacy::down::{down_convert, DownConvertError};
use crate::protocol::record_walk::InflateScratch;
use crate::protocol::ErrorCode;
use crate::replication::partition::ReadAnswer;
use crate::server::out::{read_file_region, OutPart};
use crate::shard::ShardContext;

/// Fetch v0–v3 (Kafka's `maybeConvertFetchedData`): every hosted
/// partition's records down-converted to magic 0 (v0–v1) or 1 (v2–v3),
/// which under Kafka 3.9's record version V2 every such fetch needs; a
/// consumer's partition whose `message.downconversion.enable` is false
/// answers UNSUPPORTED_VERSION instead. The converted records are capped at
/// what was read or the partition's `max_bytes`, whichever is larger.
pub(super) fn down_convert_reads(
    ctx: &ShardContext,
    wanted: &[Wanted],
    reads: &mut [Option<ReadAnswer>],
    version: i16,
    follower: bool,
) {
    let to_magic = if version <= 1 { 0 } else { 1 };
    let snapshot = ctx.snapshot();
    let default_enabled = ctx
        .config
        .topic_defaults(&snapshot.broker_configs)
        .log_message_downconversion_enable;
    let mut scratch = InflateScratch::default();
    for (w, r) in wanted.iter().zip(reads.iter_mut()) {
        let Some(r) = r else { continue };
        let enabled = snapshot
            .hosted_topic(&w.topic)
            .and_then(|t| t.configs.get("message.downconversion.enable"))
            .map_or(default_enabled, |v| v.eq_ignore_ascii_case("true"));
        if !follower && !enabled {
            *r = ReadAnswer::error(ErrorCode::UNSUPPORTED_VERSION);
            continue;
        }
        if r.records.is_empty() {
            continue;
        }
        let src = match gather(&r.records, r.bytes) {
            Ok(src) => src,
            Err(e) => {
                tracing::warn!(topic = %w.topic, partition = w.partition, error = %e,
                    "down-conversion could not read the log");
                *r = ReadAnswer::error(ErrorCode::KAFKA_STORAGE_ERROR);
                continue;
            }
        };
        let max_bytes = usize::try_from(w.fetch.partition_max_bytes)
            .unwrap_or(0)
            .max(r.bytes);
        let converted = down_convert(
            &src,
            to_magic,
            w.fetch.fetch_offset,
            max_bytes,
            &mut scratch,
        );
        r.records.clear();
        r.bytes = 0;
        match converted {
            Ok(chunks) => {
                r.bytes = chunks.iter().map(Bytes::len).sum();
                r.records = chunks.into_iter().map(OutPart::Bytes).collect();
            }
            Err(DownConvertError::Zstd) => r.error_code = ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
            Err(DownConvertError::Batch(_)) => {}
        }
    }
}

/// The bytes of a read's record parts, file regions read from the page
/// cache (what `LazyDownConversionRecords` reads before converting).
fn gather(parts: &[OutPart], len: usize) -> std::io::Result<Bytes> {
    let mut src = Vec::with_capacity(len);
    for part in parts {
        match part {
            OutPart::Bytes(b) => src.extend_from_slice(b),
            OutPart::File {
                file,
                position,
                len,
            } => src.extend_from_slice(&read_file_region(file, *position, *len)?),
        }
    }
    Ok(Bytes::from(src))
}
