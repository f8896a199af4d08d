//! `[drv]` Fetch v0–v9's answers as Kafka's `KafkaApis.maybeConvertFetchedData`
//! shapes them, on the connection's shard after the owners' reads: a zstd
//! topic refused before v10, and v0–v3's records down-converted to the
//! magic those versions read (`protocol::legacy::lazy`, converted while
//! the answer is written). Fetch v10+ never calls it.

use bytes::Bytes;

use super::Wanted;
use crate::io::clock::{Clock, SystemClock};
use crate::protocol::legacy::lazy::{LazyDownConversion, Source, StartError};
use crate::protocol::out_part::{ChunkSource, ChunkStats, LazyPart};
use crate::protocol::ErrorCode;
use crate::replication::partition::ReadAnswer;
use crate::server::out::OutPart;
use crate::shard::ShardContext;

/// The first Fetch version that may read zstd (KIP-110).
pub(super) const FIRST_ZSTD_FETCH: i16 = 10;

/// For every partition this broker hosts (Kafka's `getLogConfig` finds
/// its log): before v10, a topic whose `compression.type` is zstd answers
/// UNSUPPORTED_COMPRESSION_TYPE; v0–v3 records are down-converted to magic
/// 0 (v0–v1) or 1 (v2–v3), which under Kafka 3.9's record version V2
/// every such fetch needs, errors and empty reads included (their records
/// become one overflow header, as `LazyDownConversionRecords` of nothing
/// does); a consumer's partition whose `message.downconversion.enable` is
/// false answers UNSUPPORTED_VERSION instead.
pub(super) fn convert_reads(
    ctx: &ShardContext,
    wanted: &mut [Wanted],
    reads: &mut [Option<ReadAnswer>],
    version: i16,
    follower: bool,
) {
    let snapshot = ctx.snapshot();
    let defaults = ctx.config.topic_defaults(&snapshot.broker_configs);
    for (w, slot) in wanted.iter_mut().zip(reads.iter_mut()) {
        let Some(r) = slot else { continue };
        let Some(topic) = snapshot
            .hosted_topic(&w.topic)
            .filter(|_| snapshot.hosts_partition(&w.topic, w.partition))
        else {
            continue;
        };
        let is = |key: &str, default: &str, value: &str| {
            topic
                .configs
                .get(key)
                .map_or(default, String::as_str)
                .eq_ignore_ascii_case(value)
        };
        // Refusals are Kafka's `FetchResponse.partitionResponse` (null
        // records), so they go where the handler's own refusals go.
        if is("compression.type", &defaults.compression_type, "zstd") {
            refuse(w, slot, ErrorCode::UNSUPPORTED_COMPRESSION_TYPE);
            continue;
        }
        if version > 3 {
            continue;
        }
        let enabled = if defaults.log_message_downconversion_enable {
            "true"
        } else {
            "false"
        };
        if !follower && !is("message.downconversion.enable", enabled, "true") {
            refuse(w, slot, ErrorCode::UNSUPPORTED_VERSION);
            continue;
        }
        if r.bytes > 0 {
            if let Err(code) = down_convert(ctx, w, r, if version <= 1 { 0 } else { 1 }) {
                refuse(w, slot, code);
            }
        }
    }
}

/// Kafka's `FetchResponse.partitionResponse(tp, error)` in place of the
/// read: no offsets, null records.
fn refuse(w: &mut Wanted, slot: &mut Option<ReadAnswer>, code: ErrorCode) {
    w.error = Some(code.0);
    w.null_records = true;
    *slot = None;
}

/// `r`'s records replaced by their lazy down-conversion; the refusal
/// when the first entry to convert is zstd (or the log cannot be read).
/// The request's metrics scope reads what the conversion took once the
/// response was written ([`Converting`]).
fn down_convert(
    ctx: &ShardContext,
    w: &Wanted,
    r: &mut ReadAnswer,
    to_magic: i8,
) -> Result<(), ErrorCode> {
    let source = ReadSource {
        len: r.bytes,
        parts: std::mem::take(&mut r.records),
    };
    r.bytes = 0;
    let started_ns = ctx.clock.mono_ns();
    match LazyDownConversion::start(source, to_magic, w.fetch.fetch_offset) {
        Ok(conversion) => {
            r.bytes = conversion.declared_len();
            let converting = Converting {
                conversion,
                clock: SystemClock::new(),
                ns: ctx.clock.mono_ns().saturating_sub(started_ns),
            };
            let part = LazyPart::new(r.bytes, Box::new(converting));
            // Read once the response was written (Kafka's
            // `updateConversionStats` after the send).
            if let Some(scope) = ctx.stats.metrics.current() {
                let read = part.clone();
                scope.add_fetch_conversion(&w.topic, Box::new(move || read.stats()));
            }
            r.records = vec![OutPart::Lazy(part)];
            Ok(())
        }
        Err(StartError::Zstd) => Err(ErrorCode::UNSUPPORTED_COMPRESSION_TYPE),
        Err(StartError::Read(e)) => {
            tracing::warn!(topic = %w.topic, partition = w.partition, error = %e,
                "down-conversion could not read the log");
            Err(ErrorCode::KAFKA_STORAGE_ERROR)
        }
    }
}

/// A read's parts (cached batches, segment regions) as the conversion's
/// source: each group's bytes are read when its turn comes.
struct ReadSource {
    parts: Vec<OutPart>,
    len: usize,
}

impl Source for ReadSource {
    type Error = std::io::Error;

    fn len(&self) -> usize {
        self.len
    }

    fn read(&mut self, from: usize, len: usize) -> std::io::Result<Bytes> {
        crate::io::parts::read_range(&self.parts, from, len)
    }
}

/// The conversion as the part the connection's writer pulls from, with
/// the time its conversions took (Kafka's `RecordConversionStats` of the
/// `LazyDownConversionRecordsSend`: the request's
/// `FetchMessageConversionsPerSec`, `MessageConversionsTimeMs` and
/// `TemporaryMemoryBytes`).
struct Converting {
    conversion: LazyDownConversion<ReadSource>,
    /// A chunk source is `Send`; the shard's clock (an `Rc`) is not.
    clock: SystemClock,
    ns: u64,
}

impl ChunkSource for Converting {
    fn next_chunk(&mut self) -> std::io::Result<Option<Bytes>> {
        let started_ns = self.clock.mono_ns();
        let chunk = self.conversion.next_chunk();
        self.ns += self.clock.mono_ns().saturating_sub(started_ns);
        chunk
    }

    fn stats(&self) -> ChunkStats {
        let done = self.conversion.converted();
        ChunkStats {
            records: done.records,
            ns: self.ns,
            temporary_bytes: done.temporary_bytes,
        }
    }
}
