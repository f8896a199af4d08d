//! `[io]` The consumer: one std thread per consumer, partitions assigned
//! statically (like `assign()`, no group protocol), plain Fetch without
//! sessions, from the offsets the run recorded before producing. It measures
//! end-to-end latency from the timestamp in each payload and verifies the
//! data: offsets without gaps, per-partition order per producer, duplicates.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{bail, Result};
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::{ApiKey, BrokerId, FetchRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;

use super::client::{be_i32, connect_bootstrap, error_label, SyncClient, Timebase, FETCH_VERSIONS};
use super::producer::LiveStats;
use super::tls::Security;
use super::wire::{self, read_payload_header};
use crate::histogram::LatencyHistogram;
use crate::protocol::record_walk::InflateScratch;
use crate::protocol::varint::read_varint;

/// `fetch.max.bytes` default.
pub const FETCH_MAX_BYTES: i32 = 52_428_800;
/// `max.partition.fetch.bytes` default.
pub const MAX_PARTITION_FETCH_BYTES: i32 = 1_048_576;
/// `fetch.max.wait.ms`; Kafka's default is 500, shorter here so a drained
/// point ends promptly.
pub const FETCH_MAX_WAIT_MS: i32 = 100;

#[derive(Debug, Clone)]
pub struct ConsumerPartition {
    pub topic: String,
    pub partition: i32,
    pub leader_addr: String,
    pub start_offset: i64,
}

/// Log end offsets to reach once producers are done, keyed by (topic, partition).
pub type DrainTargets = HashMap<(String, i32), i64>;

#[derive(Debug, Clone)]
pub struct ConsumerPlan {
    /// `bootstrap.servers`, for metadata refreshes after leader errors.
    pub bootstrap: String,
    pub partitions: Vec<ConsumerPartition>,
    pub client_id: String,
    pub security: Security,
    pub cpu: Option<usize>,
    pub timebase: Timebase,
    /// Payloads stamped before this wall-clock ns are warm-up.
    pub warmup_end_wall_ns: u64,
    pub request_timeout: Duration,
    /// Set by the run once producers finished.
    pub targets: Arc<OnceLock<DrainTargets>>,
    /// Monotonic ns after which to give up draining (0 = not yet set).
    pub drain_deadline_ns: Arc<AtomicU64>,
}

#[derive(Debug, Default)]
pub struct ConsumerOutcome {
    pub consumed: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub offset_gaps: u64,
    pub out_of_order: u64,
    pub fetch_errors: u64,
    pub e2e_hist: LatencyHistogram,
    pub fatal: Option<String>,
    /// Reached the drain targets (rather than timing out or aborting).
    pub caught_up: bool,
}

/// Record verification state of one consumer: fed decoded records, does
/// no I/O (unit-tested below).
#[derive(Debug, Default)]
pub struct Verifier {
    /// Next expected offset per partition slot.
    positions: Vec<i64>,
    /// Last sequence per (slot, producer).
    last_seq: HashMap<(usize, u32), u64>,
    /// Seen sequences per producer (bitset).
    seen: HashMap<u32, Vec<u64>>,
    pub consumed: u64,
    pub unique: u64,
    pub duplicates: u64,
    pub offset_gaps: u64,
    pub out_of_order: u64,
}

impl Verifier {
    pub fn new(start_offsets: &[i64]) -> Self {
        Self {
            positions: start_offsets.to_vec(),
            ..Self::default()
        }
    }

    pub fn position(&self, slot: usize) -> i64 {
        self.positions.get(slot).copied().unwrap_or(0)
    }

    /// One record at `offset` of partition `slot`. Returns the payload header
    /// when the record is new (not before the position).
    pub fn on_record(&mut self, slot: usize, offset: i64, value: &[u8]) -> Option<(u64, u32, u64)> {
        let pos = self.positions.get_mut(slot)?;
        if offset < *pos {
            // Fetch may return a batch starting before the fetch offset.
            return None;
        }
        if offset > *pos {
            self.offset_gaps += offset.saturating_sub(*pos) as u64;
        }
        *pos = offset.saturating_add(1);
        self.consumed += 1;
        let (ts, producer, seq) = read_payload_header(value)?;
        if let Some(last) = self.last_seq.insert((slot, producer), seq) {
            if seq <= last {
                self.out_of_order += 1;
            }
        }
        let bits = self.seen.entry(producer).or_default();
        let (word, bit) = ((seq / 64) as usize, seq % 64);
        if word >= bits.len() {
            // Sequences are dense from 0; cap growth against garbage input.
            if word > (1 << 26) {
                return Some((ts, producer, seq));
            }
            bits.resize(word + 1, 0);
        }
        if bits[word] & (1 << bit) != 0 {
            self.duplicates += 1;
        } else {
            bits[word] |= 1 << bit;
            self.unique += 1;
        }
        Some((ts, producer, seq))
    }

    /// Moves the position past a whole batch (control batches, or records
    /// removed by compaction).
    pub fn on_batch_end(&mut self, slot: usize, next_offset: i64) {
        if let Some(pos) = self.positions.get_mut(slot) {
            *pos = (*pos).max(next_offset);
        }
    }
}

/// Splits fetched record data into whole v2 batches; a trailing partial
/// batch (allowed by the protocol) is dropped.
pub fn split_batches(mut data: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    while data.len() >= 12 {
        let Some(len) = be_i32(&data, 8) else { break };
        let total = 12 + len.max(0) as usize;
        if len < 0 || data.len() < total {
            break;
        }
        out.push(data.split_to(total));
    }
    out
}

/// `(base_offset, next_offset, is_control)` from a v2 batch header.
pub fn batch_bounds(batch: &[u8]) -> Option<(i64, i64, bool)> {
    let base = i64::from_be_bytes(batch.get(..8)?.try_into().ok()?);
    if *batch.get(16)? != 2 {
        return None;
    }
    let attributes = i16::from_be_bytes(batch.get(21..23)?.try_into().ok()?);
    let last_delta = be_i32(batch, 23)?;
    let next = base.saturating_add(last_delta as i64).saturating_add(1);
    Some((base, next, attributes & 0x20 != 0))
}

pub fn run_consumer(plan: ConsumerPlan, live: Arc<LiveStats>) -> ConsumerOutcome {
    if let Some(cpu) = plan.cpu {
        // A CPU outside the mask was refused when the arguments were read
        // (`--client-cpus`); a failure here leaves the thread unpinned.
        let _ = crate::io::affinity::pin_current_thread(cpu);
    }
    let mut out = ConsumerOutcome::default();
    if let Err(e) = consume(&plan, &live, &mut out) {
        out.fatal = Some(format!("{e:#}"));
    }
    out
}

fn fetch_request(plan: &ConsumerPlan, slots: &[usize], v: &Verifier) -> FetchRequest {
    full_fetch_request(slots.iter().map(|&slot| {
        let p = &plan.partitions[slot];
        (p.topic.as_str(), p.partition, v.position(slot))
    }))
}

/// A read_uncommitted Fetch of `(topic, partition, fetch offset)`s with no
/// fetch session (id 0, epoch -1 = FINAL_EPOCH: a full fetch, KIP-227).
pub fn full_fetch_request<'a>(parts: impl Iterator<Item = (&'a str, i32, i64)>) -> FetchRequest {
    let mut by_topic: Vec<FetchTopic> = Vec::new();
    for (topic, partition, offset) in parts {
        let mut fp = FetchPartition::default();
        fp.partition = partition;
        fp.current_leader_epoch = -1;
        fp.fetch_offset = offset;
        fp.log_start_offset = -1;
        fp.partition_max_bytes = MAX_PARTITION_FETCH_BYTES;
        match by_topic.iter_mut().find(|t| t.topic.0.as_str() == topic) {
            Some(t) => t.partitions.push(fp),
            None => {
                let mut t = FetchTopic::default();
                t.topic = TopicName(StrBytes::from_string(topic.to_owned()));
                t.partitions.push(fp);
                by_topic.push(t);
            }
        }
    }
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = FETCH_MAX_WAIT_MS;
    req.min_bytes = 1;
    req.max_bytes = FETCH_MAX_BYTES;
    req.isolation_level = 0;
    req.session_id = 0;
    req.session_epoch = -1;
    req.topics = by_topic;
    req
}

/// One connection per partition leader, with the Fetch version it speaks
/// and the partition slots it serves.
type Leaders = Vec<(SyncClient, i16, Vec<usize>)>;

fn connect_leaders(plan: &ConsumerPlan, addrs: &[String]) -> Result<Leaders> {
    let mut leaders: Leaders = Vec::new();
    for (slot, addr) in addrs.iter().enumerate() {
        if let Some(l) = leaders.iter_mut().find(|l| &l.0.conn.addr == addr) {
            l.2.push(slot);
            continue;
        }
        let c = SyncClient::connect(addr, &plan.security, &plan.client_id, plan.request_timeout)?;
        let (lo, hi) = FETCH_VERSIONS;
        let v = c.conn.versions.pick(ApiKey::Fetch, lo, hi)?;
        leaders.push((c, v, vec![slot]));
    }
    Ok(leaders)
}

/// Re-reads partition leaders from the bootstrap servers after a leader
/// error (Java's consumer does the same through its metadata updates).
fn refresh_leaders(plan: &ConsumerPlan, addrs: &mut [String]) -> Result<()> {
    let mut boot = connect_bootstrap(
        &plan.bootstrap,
        &plan.security,
        &plan.client_id,
        plan.request_timeout,
    )?;
    let mut topics: Vec<String> = plan.partitions.iter().map(|p| p.topic.clone()).collect();
    topics.dedup();
    let meta = boot.metadata(&topics)?;
    for (slot, p) in plan.partitions.iter().enumerate() {
        if let Some((_, addr)) = meta.leader_addr(&p.topic, p.partition) {
            addrs[slot] = addr.to_string();
        }
    }
    Ok(())
}

/// True once every partition reached its drain target, or draining is over.
fn drained(plan: &ConsumerPlan, v: &Verifier, out: &mut ConsumerOutcome) -> bool {
    let Some(targets) = plan.targets.get() else {
        return false;
    };
    let done = plan.partitions.iter().enumerate().all(|(slot, p)| {
        targets
            .get(&(p.topic.clone(), p.partition))
            .is_none_or(|t| v.position(slot) >= *t)
    });
    out.caught_up = done;
    let deadline = plan.drain_deadline_ns.load(Ordering::Relaxed);
    done || (deadline != 0 && plan.timebase.now_ns() >= deadline)
}

fn consume(plan: &ConsumerPlan, live: &LiveStats, out: &mut ConsumerOutcome) -> Result<()> {
    let mut addrs: Vec<String> = plan
        .partitions
        .iter()
        .map(|p| p.leader_addr.clone())
        .collect();
    let mut leaders = connect_leaders(plan, &addrs)?;
    let starts: Vec<i64> = plan.partitions.iter().map(|p| p.start_offset).collect();
    let mut v = Verifier::new(&starts);
    let mut scratch = InflateScratch::default();
    while !live.abort.load(Ordering::Relaxed) && !drained(plan, &v, out) {
        let mut stale = false;
        for (client, version, slots) in &mut leaders {
            let req = fetch_request(plan, slots, &v);
            let resp = client.call(&req, *version)?;
            if resp.error_code != 0 {
                out.fetch_errors += 1;
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            for t in &resp.responses {
                for pd in &t.partitions {
                    let Some(slot) = slots.iter().copied().find(|s| {
                        let p = &plan.partitions[*s];
                        p.partition == pd.partition_index && p.topic == t.topic.0.as_str()
                    }) else {
                        continue;
                    };
                    match pd.error_code {
                        0 => {}
                        // OFFSET_OUT_OF_RANGE: records we must verify are gone.
                        1 => bail!(
                            "fetch {}-{} at {}: {}",
                            t.topic.0.as_str(),
                            pd.partition_index,
                            v.position(slot),
                            error_label(pd.error_code)
                        ),
                        code => {
                            out.fetch_errors += 1;
                            stale |= matches!(code, 3 | 5 | 6 | 74 | 75);
                            continue;
                        }
                    }
                    if let Some(records) = &pd.records {
                        on_records(plan, live, &mut v, &mut scratch, out, slot, records.clone())?;
                    }
                }
            }
        }
        if stale {
            std::thread::sleep(Duration::from_millis(100));
            refresh_leaders(plan, &mut addrs)?;
            leaders = connect_leaders(plan, &addrs)?;
        }
    }
    out.consumed = v.consumed;
    out.unique = v.unique;
    out.duplicates = v.duplicates;
    out.offset_gaps = v.offset_gaps;
    out.out_of_order = v.out_of_order;
    Ok(())
}

/// LZ4 batches are inflated in `scratch`.
fn on_records(
    plan: &ConsumerPlan,
    live: &LiveStats,
    v: &mut Verifier,
    scratch: &mut InflateScratch,
    out: &mut ConsumerOutcome,
    slot: usize,
    data: Bytes,
) -> Result<()> {
    for batch in split_batches(data) {
        let Some((_, next, control)) = batch_bounds(&batch) else {
            bail!("fetched a record batch that is not magic v2");
        };
        if !control {
            let set = RecordBatchDecoder::decode(&mut wire::decodable_batch(batch, scratch)?)?;
            let now_wall = plan.timebase.wall_now_ns();
            let before = v.consumed;
            for r in &set.records {
                let value = r.value.as_deref().unwrap_or(&[]);
                if let Some((ts, _, _)) = v.on_record(slot, r.offset, value) {
                    if ts >= plan.warmup_end_wall_ns {
                        out.e2e_hist.record_ns(now_wall.saturating_sub(ts));
                    }
                }
            }
            live.consumed
                .fetch_add(v.consumed - before, Ordering::Relaxed);
        }
        v.on_batch_end(slot, next);
    }
    Ok(())
}

/// Record batch v2 layout (KIP-98): CRC-32C at 17 covers bytes 21.. (from
/// the attributes to the end); the record count is at 57; records start at 61.
const BATCH_CRC_AT: usize = 17;
const BATCH_CRC_FROM: usize = 21;
const BATCH_RECORDS_COUNT_AT: usize = 57;
const BATCH_HEADER_BYTES: usize = 61;
/// `attributes` bits 0-2: the compression codec (0 = none).
const COMPRESSION_MASK: i16 = 0x07;

/// What [`scan_batches`] found in one partition's fetched record data.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BatchScan {
    pub batches: u64,
    /// Records at or after the fetch position (control batches excluded).
    pub records: u64,
    /// Bytes of record values: the payload `rdkafka_performance` counts.
    pub value_bytes: u64,
    /// Batches whose CRC-32C did not match (their records are not counted).
    pub crc_errors: u64,
    /// Offsets skipped between the position and a later batch's base offset.
    pub offset_gaps: u64,
    /// The position after the last whole batch.
    pub next_offset: i64,
}

/// Scans fetched record data batch by batch without decoding records:
/// counts come from batch headers, each batch's CRC-32C is checked, and
/// value sizes of uncompressed batches are read from the record varints (a
/// compressed batch counts its records but not their value bytes). A
/// trailing partial batch is ignored, as Kafka's consumer does.
pub fn scan_batches(data: &[u8], position: i64) -> Result<BatchScan> {
    let mut scan = BatchScan {
        next_offset: position,
        ..BatchScan::default()
    };
    let mut at = 0usize;
    while let Some(len) = be_i32(data, at + 8) {
        let total = 12usize.saturating_add(len.max(0) as usize);
        let Some(batch) = data.get(at..at.saturating_add(total)) else {
            break;
        };
        at += total;
        let Some((base, next, control)) = batch_bounds(batch) else {
            bail!("fetched a record batch that is not magic v2");
        };
        scan.batches += 1;
        if next <= scan.next_offset {
            continue; // a batch before the fetch position (Fetch may return it)
        }
        if !crc_matches(batch) {
            scan.crc_errors += 1;
            continue;
        }
        if !control {
            let from = scan.next_offset;
            if base > from {
                scan.offset_gaps += base.saturating_sub(from) as u64;
            }
            let count = be_i32(batch, BATCH_RECORDS_COUNT_AT).unwrap_or(0).max(0) as i64;
            // Offsets inside a batch are dense unless compacted; a batch that
            // starts before the position counts only the offsets after it.
            scan.records += count.min(next.saturating_sub(from.max(base))).max(0) as u64;
            let attributes = i16::from_be_bytes([batch[21], batch[22]]);
            if attributes & COMPRESSION_MASK == 0 {
                scan.value_bytes += value_bytes(&batch[BATCH_HEADER_BYTES..], base, from);
            }
        }
        scan.next_offset = next;
    }
    Ok(scan)
}

fn crc_matches(batch: &[u8]) -> bool {
    match (
        batch.get(BATCH_CRC_AT..BATCH_CRC_FROM),
        batch.get(BATCH_CRC_FROM..),
    ) {
        (Some(c), Some(covered)) => {
            u32::from_be_bytes([c[0], c[1], c[2], c[3]]) == crc32c::crc32c(covered)
        }
        _ => false,
    }
}

/// Sum of value lengths of the records at offsets `>= from` in an
/// uncompressed batch's record section (stops at the first malformed record).
fn value_bytes(mut records: &[u8], base: i64, from: i64) -> u64 {
    let mut sum = 0u64;
    while let Some((len, n)) = read_varint(records) {
        let Some(body) = records.get(n..n.saturating_add(len.max(0) as usize)) else {
            break;
        };
        records = &records[n + body.len()..];
        // attributes (1 byte), timestampDelta, offsetDelta, key, value.
        let mut r = body.get(1..).unwrap_or(&[]);
        let mut field = || -> Option<i64> {
            let (v, n) = read_varint(r)?;
            r = r.get(n..)?;
            Some(v)
        };
        let (Some(_ts), Some(delta), Some(key_len)) = (field(), field(), field()) else {
            break;
        };
        r = r.get(key_len.max(0) as usize..).unwrap_or(&[]);
        let Some((value_len, _)) = read_varint(r) else {
            break;
        };
        if base.saturating_add(delta) >= from {
            sum += value_len.max(0) as u64;
        }
    }
    sum
}

/// One partition of a FetchResponse, borrowed from the response frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchedPartition<'a> {
    pub topic: &'a [u8],
    pub partition: i32,
    pub error_code: i16,
    pub high_watermark: i64,
    pub records: &'a [u8],
}

/// A bounds-checked cursor over a response frame.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.saturating_add(n);
        let Some(s) = self.b.get(self.at..end) else {
            bail!("FetchResponse truncated at byte {}", self.at);
        };
        self.at = end;
        Ok(s)
    }
    fn int<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.take(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.int()?))
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(self.int()?))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.int()?))
    }
    fn uvarint(&mut self) -> Result<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = self.take(1)?[0];
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        bail!("FetchResponse: varint too long at byte {}", self.at)
    }
    /// An array/bytes length: compact (uvarint N+1, 0 = null) when flexible.
    fn len(&mut self, flexible: bool, wide: bool) -> Result<Option<usize>> {
        let n: i64 = if flexible {
            self.uvarint()? as i64 - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        Ok(usize::try_from(n).ok())
    }
    fn skip_tagged_fields(&mut self) -> Result<()> {
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let size = self.uvarint()? as usize;
            self.take(size)?;
        }
        Ok(())
    }
}

/// Walks a FetchResponse frame (after the size prefix) of `version` 4..=12
/// without copying, calling `on_partition` for every partition. Returns the
/// top-level error code.
pub fn walk_fetch_response(
    frame: &[u8],
    version: i16,
    mut on_partition: impl FnMut(FetchedPartition<'_>) -> Result<()>,
) -> Result<i16> {
    if !(4..=12).contains(&version) {
        bail!("FetchResponse v{version} is not walked (names end at v12)");
    }
    let flexible = version >= 12;
    let mut c = Cursor { b: frame, at: 0 };
    c.i32()?; // correlation id
    if flexible {
        c.skip_tagged_fields()?;
    }
    c.i32()?; // throttle_time_ms
    let mut error_code = 0;
    if version >= 7 {
        error_code = c.i16()?;
        c.i32()?; // session_id
    }
    for _ in 0..c.len(flexible, true)?.unwrap_or(0) {
        let name_len = c.len(flexible, false)?.unwrap_or(0);
        let topic = c.take(name_len)?;
        for _ in 0..c.len(flexible, true)?.unwrap_or(0) {
            let partition = c.i32()?;
            let p_error = c.i16()?;
            let high_watermark = c.i64()?;
            c.i64()?; // last_stable_offset
            if version >= 5 {
                c.i64()?; // log_start_offset
            }
            for _ in 0..c.len(flexible, true)?.unwrap_or(0) {
                c.i64()?; // aborted producer_id
                c.i64()?; // first_offset
                if flexible {
                    c.skip_tagged_fields()?;
                }
            }
            if version >= 11 {
                c.i32()?; // preferred_read_replica
            }
            let records = match c.len(flexible, true)? {
                Some(n) => c.take(n)?,
                None => &[],
            };
            if flexible {
                c.skip_tagged_fields()?;
            }
            on_partition(FetchedPartition {
                topic,
                partition,
                error_code: p_error,
                high_watermark,
                records,
            })?;
        }
        if flexible {
            c.skip_tagged_fields()?;
        }
    }
    if flexible {
        c.skip_tagged_fields()?;
    }
    Ok(error_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loadgen::wire::write_payload_header;

    fn payload(producer: u32, seq: u64) -> Vec<u8> {
        let mut v = vec![0u8; 24];
        write_payload_header(&mut v, 5, producer, seq);
        v
    }

    #[test]
    fn verifier_counts_gaps_duplicates_and_reordering() {
        let mut v = Verifier::new(&[10, 0]);
        assert!(
            v.on_record(0, 9, &payload(0, 99)).is_none(),
            "before position"
        );
        v.on_record(0, 10, &payload(0, 0));
        v.on_record(0, 11, &payload(0, 1));
        v.on_record(0, 14, &payload(0, 3)); // offsets 12, 13 missing
        v.on_record(0, 15, &payload(0, 2)); // order broken for producer 0
        v.on_record(1, 0, &payload(0, 3)); // duplicate seq 3 on another partition
        v.on_record(1, 1, &payload(1, 0));
        assert_eq!(v.consumed, 6);
        assert_eq!(v.unique, 5);
        assert_eq!(v.duplicates, 1);
        assert_eq!(v.offset_gaps, 2);
        assert_eq!(v.out_of_order, 1);
        assert_eq!(v.position(0), 16);
        v.on_batch_end(0, 20);
        assert_eq!(v.position(0), 20);
        assert!(v.on_record(7, 0, &payload(0, 0)).is_none(), "unknown slot");
        // Offsets at the edge of i64 saturate instead of overflowing.
        v.on_record(1, i64::MAX, &payload(1, 1));
        assert_eq!(v.position(1), i64::MAX);
        let mut edge = vec![0u8; 27];
        edge[..8].copy_from_slice(&i64::MAX.to_be_bytes());
        edge[16] = 2;
        edge[23..27].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(batch_bounds(&edge), Some((i64::MAX, i64::MAX, false)));
    }

    #[test]
    fn split_batches_drops_trailing_partial_batch() {
        use kafka_protocol::records::{Compression, RecordBatchEncoder, RecordEncodeOptions};
        let rec = |offset: i64| test_record(offset, None, Bytes::from(payload(0, offset as u64)));
        let opts = RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        };
        let mut buf = bytes::BytesMut::new();
        // Two batches: offsets 5..=6, then 7.
        RecordBatchEncoder::encode(&mut buf, [rec(5), rec(6)].iter(), &opts).unwrap();
        let first_len = buf.len();
        RecordBatchEncoder::encode(&mut buf, [rec(7)].iter(), &opts).unwrap();
        let all = buf.freeze();
        let batches = split_batches(all.clone());
        assert_eq!(batches.len(), 2);
        assert_eq!(batch_bounds(&batches[0]), Some((5, 7, false)));
        assert_eq!(batch_bounds(&batches[1]), Some((7, 8, false)));
        let partial = split_batches(all.slice(..first_len + 20));
        assert_eq!(partial.len(), 1);
        assert!(split_batches(Bytes::from_static(&[0; 11])).is_empty());
        assert_eq!(batch_bounds(&[0u8; 10]), None);
    }

    fn test_record(
        offset: i64,
        key: Option<Bytes>,
        value: Bytes,
    ) -> kafka_protocol::records::Record {
        crate::protocol::test_records::record(offset, 0, key, Some(value))
    }

    /// Uncompressed batches of `values`, the first at `base`, one batch per slice.
    fn encoded_batches(base: i64, batches: &[&[usize]], compression: bool) -> Vec<u8> {
        use kafka_protocol::records::{
            Compression, Record, RecordBatchEncoder, RecordEncodeOptions,
        };
        let mut buf = bytes::BytesMut::new();
        let mut offset = base;
        for sizes in batches {
            let records: Vec<Record> = sizes
                .iter()
                .map(|&size| {
                    offset += 1;
                    test_record(
                        offset - 1,
                        Some(Bytes::from_static(b"key")),
                        Bytes::from(vec![7u8; size]),
                    )
                })
                .collect();
            let opts = RecordEncodeOptions {
                version: 2,
                compression: if compression {
                    Compression::Gzip
                } else {
                    Compression::None
                },
            };
            RecordBatchEncoder::encode(&mut buf, records.iter(), &opts).unwrap();
        }
        buf.to_vec()
    }

    #[test]
    fn scan_counts_records_and_value_bytes_from_batch_headers() {
        let data = encoded_batches(100, &[&[10, 20, 30], &[1000], &[5, 5]], false);
        let cases = [
            // (position, records, value bytes, offset gaps)
            (100, 6, 1070, 0),
            (101, 5, 1060, 0), // mid-batch position: earlier records are not counted
            (103, 3, 1010, 0), // the first batch is wholly before the position
            (90, 6, 1070, 10), // the data starts after the position
        ];
        for (position, records, value_bytes, gaps) in cases {
            let scan = scan_batches(&data, position).unwrap();
            assert_eq!(scan.batches, 3, "position {position}");
            assert_eq!(scan.records, records, "position {position}");
            assert_eq!(scan.value_bytes, value_bytes, "position {position}");
            assert_eq!(scan.offset_gaps, gaps, "position {position}");
            assert_eq!(scan.next_offset, 106, "position {position}");
            assert_eq!(scan.crc_errors, 0);
        }
        // A trailing partial batch is left for the next fetch.
        let scan = scan_batches(&data[..data.len() - 3], 100).unwrap();
        assert_eq!((scan.batches, scan.records, scan.next_offset), (2, 4, 104));
    }

    #[test]
    fn scan_skips_batches_whose_crc_does_not_match() {
        let mut data = encoded_batches(0, &[&[8, 8], &[8]], false);
        let last = data.len() - 1;
        data[last] ^= 0xff; // a value byte of the second batch
        let scan = scan_batches(&data, 0).unwrap();
        assert_eq!(scan.crc_errors, 1);
        assert_eq!(scan.records, 2);
        assert_eq!(scan.next_offset, 2, "the corrupt batch does not advance");
        data[16] = 1; // magic 1 in the first batch
        assert!(scan_batches(&data, 0).is_err());
    }

    #[test]
    fn scan_counts_compressed_records_without_value_bytes() {
        let data = encoded_batches(0, &[&[64, 64, 64]], true);
        let scan = scan_batches(&data, 0).unwrap();
        assert_eq!(
            (scan.records, scan.value_bytes, scan.next_offset),
            (3, 0, 3)
        );
    }

    /// A FetchResponse frame as a broker sends it (header + body).
    fn response_frame(version: i16, parts: &[(&str, i32, i16, Bytes)]) -> Vec<u8> {
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
        use kafka_protocol::messages::{FetchResponse, ResponseHeader, TopicName};
        use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
        let mut resp = FetchResponse::default();
        resp.session_id = if version >= 7 { 9 } else { 0 };
        for (topic, partition, error, records) in parts {
            let mut pd = PartitionData::default();
            pd.partition_index = *partition;
            pd.error_code = *error;
            pd.high_watermark = 42;
            pd.records = Some(records.clone());
            match resp.responses.last_mut() {
                Some(t) if t.topic.0.as_str() == *topic => t.partitions.push(pd),
                _ => {
                    let mut t = FetchableTopicResponse::default();
                    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
                    t.partitions.push(pd);
                    resp.responses.push(t);
                }
            }
        }
        let mut buf = bytes::BytesMut::new();
        let mut header = ResponseHeader::default();
        header.correlation_id = 77;
        header
            .encode(&mut buf, FetchResponse::header_version(version))
            .unwrap();
        resp.encode(&mut buf, version).unwrap();
        buf.to_vec()
    }

    #[test]
    fn fetch_response_walk_finds_every_partition_at_every_version() {
        let a = Bytes::from(encoded_batches(0, &[&[100, 100]], false));
        let b = Bytes::from(encoded_batches(5, &[&[3]], false));
        let parts = [
            ("t1", 0, 0, a.clone()),
            ("t1", 3, 0, b.clone()),
            ("t2", 1, 6, Bytes::new()),
        ];
        for version in [4, 5, 7, 11, 12] {
            let frame = response_frame(version, &parts);
            let mut seen = Vec::new();
            let top = walk_fetch_response(&frame, version, |p| {
                seen.push((
                    p.topic.to_vec(),
                    p.partition,
                    p.error_code,
                    p.records.to_vec(),
                ));
                assert_eq!(p.high_watermark, 42);
                Ok(())
            })
            .unwrap();
            assert_eq!(top, 0, "v{version}");
            let expected: Vec<_> = parts
                .iter()
                .map(|(t, p, e, r)| (t.as_bytes().to_vec(), *p, *e, r.to_vec()))
                .collect();
            assert_eq!(seen, expected, "v{version}");
            assert!(
                walk_fetch_response(&frame[..frame.len() - 1], version, |_| Ok(())).is_err(),
                "truncated v{version}"
            );
        }
        assert!(walk_fetch_response(&response_frame(12, &parts), 13, |_| Ok(())).is_err());
    }

    proptest::proptest! {
        /// Fetched bytes come from the network: no input may panic.
        #[test]
        fn arbitrary_fetch_bytes_never_panic(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
            offset in proptest::prelude::any::<i64>(),
        ) {
            let bytes = Bytes::from(data.clone());
            for b in split_batches(bytes) {
                let _ = batch_bounds(&b);
                let _ = RecordBatchDecoder::decode(&mut b.clone());
            }
            let _ = batch_bounds(&data);
            let _ = scan_batches(&data, offset);
            for version in [4, 11, 12] {
                let _ = walk_fetch_response(&data, version, |p| scan_batches(p.records, offset).map(|_| ()));
            }
            let mut v = Verifier::new(&[0]);
            let _ = v.on_record(0, offset, &data);
            let _ = v.on_record(0, offset.saturating_add(1), &data);
        }
    }
}
