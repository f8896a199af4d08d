//! `[io]` `shardlog loadgen --consume-only`: consume topics that already
//! hold data, from the earliest offsets up to the log end offsets read at
//! the start (or until `--messages` / `--duration`), and report consume
//! throughput. It is the consumer-side counterpart of a produce run
//! (the P4 point) and is built to cost the client as little as possible, so
//! that the broker's fetch path is what gets measured:
//! - one blocking socket per leader and one reused receive buffer, with
//!   the FetchResponse walked in place ([`consumer::walk_fetch_response`]);
//! - records are counted from batch headers and each batch's CRC-32C is
//!   checked ([`consumer::scan_batches`]); `--verify-records` also decodes
//!   every record and checks that offsets are dense.
//!
//! Fetch settings are Kafka's consumer defaults: `fetch.max.bytes`
//! 52428800, `max.partition.fetch.bytes` 1048576, `fetch.min.bytes` 1, one
//! Fetch in flight per broker connection (as Kafka's and librdkafka's
//! consumers do).

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::BytesMut;
use kafka_protocol::messages::{ApiKey, FetchRequest, RequestHeader};
use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::RecordBatchDecoder;
use serde::Serialize;

use super::args::LoadgenArgs;
use super::client::{self, SyncClient, FETCH_VERSIONS, MAX_FRAME_BYTES};
use super::consumer::{self, scan_batches, split_batches};
use super::tls::{Security, Stream};
use super::wire;
use crate::protocol::record_walk::InflateScratch;

/// ListOffsets timestamps: earliest and latest (KIP-79 sentinels).
const EARLIEST: i64 = -2;
const LATEST: i64 = -1;

/// What one consume-only run measured (written as `consume.json`).
#[derive(Debug, Default, Clone, Serialize)]
pub struct ConsumeReport {
    pub bootstrap: String,
    pub topics: Vec<String>,
    pub partitions: usize,
    pub consumers: usize,
    pub verify_records: bool,
    pub records: u64,
    /// Bytes of record values (10^6 of them make one MB below).
    pub value_bytes: u64,
    pub fetches: u64,
    pub seconds: f64,
    pub msgs_per_sec: f64,
    pub mb_per_sec: f64,
    pub crc_errors: u64,
    pub offset_gaps: u64,
    /// Every partition reached the log end offset read at the start.
    pub caught_up: bool,
}

/// One partition to read: `[start, end)`.
#[derive(Debug, Clone)]
struct Slot {
    topic: String,
    partition: i32,
    leader: String,
    position: i64,
    end: i64,
}

/// Shared stop conditions and totals of all consumer threads.
struct Shared {
    records: AtomicU64,
    limit: Option<u64>,
    stop: AtomicBool,
}

#[derive(Debug, Default)]
struct Totals {
    records: u64,
    value_bytes: u64,
    fetches: u64,
    crc_errors: u64,
    offset_gaps: u64,
    caught_up: bool,
}

/// Entry point of `shardlog loadgen --consume-only`.
pub fn run(args: &LoadgenArgs, security: &Security, cpus: &[usize]) -> Result<()> {
    let topics = super::resolve_workload(args)?.topic_names();
    let timeout = Duration::from_millis(30_000);
    let id = &args.client_id;
    let mut boot = client::connect_bootstrap(&args.bootstrap, security, id, timeout)?;
    let meta = boot.metadata(&topics)?;
    let parts = super::point::partitions_of(&meta, &topics)?;
    let keys: Vec<(String, i32)> = parts.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let starts = client::list_offsets_all(&meta, &keys, EARLIEST, security, id, timeout)?;
    let ends = client::list_offsets_all(&meta, &keys, LATEST, security, id, timeout)?;
    let slots: Vec<Slot> = parts
        .into_iter()
        .map(|(topic, partition, leader)| {
            let key = (topic.clone(), partition);
            Slot {
                position: starts.get(&key).copied().unwrap_or(0),
                end: ends.get(&key).copied().unwrap_or(0),
                topic,
                partition,
                leader,
            }
        })
        .collect();
    let consumers = args.consumers.unwrap_or(1);
    if consumers == 0 {
        bail!("--consume-only needs at least one consumer (--consumers)");
    }
    let available: u64 = slots
        .iter()
        .map(|s| (s.end - s.position).max(0) as u64)
        .sum();
    eprintln!(
        "loadgen: consume-only {} partition(s) of {:?} with {consumers} consumer(s): {available} records from the earliest offsets",
        slots.len(),
        topics
    );
    let report = consume_all(args, security, cpus, slots, consumers, &topics)?;
    println!(
        "consume: {} records, {} value bytes in {:.3} s: {:.0} msgs/s, {:.1} MB/s ({} fetches, {} CRC errors, {} offset gaps{})",
        report.records,
        report.value_bytes,
        report.seconds,
        report.msgs_per_sec,
        report.mb_per_sec,
        report.fetches,
        report.crc_errors,
        report.offset_gaps,
        if report.caught_up { "" } else { ", stopped before the log end" }
    );
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::write(
            dir.join("consume.json"),
            serde_json::to_string_pretty(&report)?,
        )?;
    }
    if report.crc_errors > 0 {
        bail!(
            "{} fetched batches failed their CRC-32C check",
            report.crc_errors
        );
    }
    Ok(())
}

fn consume_all(
    args: &LoadgenArgs,
    security: &Security,
    cpus: &[usize],
    slots: Vec<Slot>,
    consumers: usize,
    topics: &[String],
) -> Result<ConsumeReport> {
    let shared = Arc::new(Shared {
        records: AtomicU64::new(0),
        limit: args.messages,
        stop: AtomicBool::new(false),
    });
    let n = consumers.min(slots.len()).max(1);
    // Everyone connects first; the clock starts when all are ready.
    let ready = Arc::new(Barrier::new(n + 1));
    let mut handles = Vec::new();
    for c in 0..n {
        let mine: Vec<Slot> = slots
            .iter()
            .enumerate()
            .filter(|(i, _)| i % n == c)
            .map(|(_, s)| s.clone())
            .collect();
        let cpu = cpus.get(c % cpus.len().max(1)).copied();
        let (client_id, verify) = (args.client_id.clone(), args.verify_records);
        let (shared, ready, security) = (shared.clone(), ready.clone(), security.clone());
        handles.push(
            std::thread::Builder::new()
                .name(format!("loadgen-cons-{c}"))
                .spawn(move || {
                    let dial = Dial {
                        security: &security,
                        client_id: &client_id,
                    };
                    consume_slots(mine, cpu, dial, verify, &shared, &ready)
                })?,
        );
    }
    ready.wait();
    let t0 = Instant::now();
    let shared_deadline = args.duration.map(|d| t0 + d);
    let mut totals = Totals {
        caught_up: true,
        ..Totals::default()
    };
    let mut first_error = None;
    for h in handles {
        // The deadline is checked by the threads through `stop`.
        match join_with_deadline(h, &shared, shared_deadline) {
            Ok(t) => {
                totals.records += t.records;
                totals.value_bytes += t.value_bytes;
                totals.fetches += t.fetches;
                totals.crc_errors += t.crc_errors;
                totals.offset_gaps += t.offset_gaps;
                totals.caught_up &= t.caught_up;
            }
            Err(e) => {
                shared.stop.store(true, Ordering::Relaxed);
                first_error.get_or_insert(e);
            }
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(e) = first_error {
        return Err(e);
    }
    Ok(ConsumeReport {
        bootstrap: args.bootstrap.clone(),
        topics: topics.to_vec(),
        partitions: slots.len(),
        consumers: n,
        verify_records: args.verify_records,
        records: totals.records,
        value_bytes: totals.value_bytes,
        fetches: totals.fetches,
        seconds,
        msgs_per_sec: totals.records as f64 / seconds.max(1e-9),
        mb_per_sec: totals.value_bytes as f64 / 1e6 / seconds.max(1e-9),
        crc_errors: totals.crc_errors,
        offset_gaps: totals.offset_gaps,
        caught_up: totals.caught_up,
    })
}

/// Joins a consumer thread, raising `stop` once `deadline` passes.
fn join_with_deadline(
    h: std::thread::JoinHandle<Result<Totals>>,
    shared: &Shared,
    deadline: Option<Instant>,
) -> Result<Totals> {
    if let Some(deadline) = deadline {
        while !h.is_finished() {
            if Instant::now() >= deadline {
                shared.stop.store(true, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    h.join().map_err(|_| anyhow!("consumer thread panicked"))?
}

/// A consumer thread: one connection per leader of its slots.
fn consume_slots(
    mut slots: Vec<Slot>,
    cpu: Option<usize>,
    dial: Dial<'_>,
    verify: bool,
    shared: &Shared,
    ready: &Barrier,
) -> Result<Totals> {
    if let Some(cpu) = cpu {
        // A CPU outside the mask was refused when the arguments were read
        // (`--client-cpus`); a failure here leaves the thread unpinned.
        let _ = crate::io::affinity::pin_current_thread(cpu);
    }
    let conns = match connect_leaders(&slots, dial) {
        Ok(c) => {
            ready.wait();
            c
        }
        Err(e) => {
            ready.wait();
            return Err(e);
        }
    };
    let mut totals = Totals::default();
    let mut conns = conns;
    loop {
        let over = shared.stop.load(Ordering::Relaxed)
            || shared
                .limit
                .is_some_and(|l| shared.records.load(Ordering::Relaxed) >= l);
        let pending = slots.iter().any(|s| s.position < s.end);
        if over || !pending {
            totals.caught_up = !pending;
            return Ok(totals);
        }
        for conn in &mut conns {
            conn.fetch_once(&mut slots, verify, &mut totals, shared)?;
        }
    }
}

/// A fetch connection: a blocking socket, its Fetch version, a reused
/// request buffer, a reused response buffer and a reused LZ4 inflate
/// scratch (`--verify-records`).
struct FetchConn {
    leader: String,
    stream: Stream,
    version: i16,
    client_id: StrBytes,
    correlation_id: i32,
    request: BytesMut,
    response: Vec<u8>,
    /// Bytes of `response` the last frame filled.
    frame_len: usize,
    scratch: InflateScratch,
}

/// How a consumer thread connects: transport and client.id.
#[derive(Clone, Copy)]
struct Dial<'a> {
    security: &'a Security,
    client_id: &'a str,
}

fn connect_leaders(slots: &[Slot], dial: Dial<'_>) -> Result<Vec<FetchConn>> {
    let Dial {
        security,
        client_id,
    } = dial;
    let timeout = Duration::from_secs(30);
    let mut conns: Vec<FetchConn> = Vec::new();
    for s in slots {
        if conns.iter().any(|c| c.leader == s.leader) {
            continue;
        }
        // ApiVersions on a throw-away connection picks the Fetch version.
        let version = {
            let c = SyncClient::connect(&s.leader, security, client_id, timeout)?;
            let (lo, hi) = FETCH_VERSIONS;
            c.conn.versions.pick(ApiKey::Fetch, lo, hi)?
        };
        let stream = super::sasl::connect(security, &s.leader, timeout)?;
        stream.set_read_timeout(Some(timeout))?;
        stream.set_write_timeout(Some(timeout))?;
        conns.push(FetchConn {
            leader: s.leader.clone(),
            stream,
            version,
            client_id: StrBytes::from_string(client_id.to_string()),
            correlation_id: 0,
            request: BytesMut::with_capacity(4096),
            response: Vec::new(),
            frame_len: 0,
            scratch: InflateScratch::default(),
        });
    }
    Ok(conns)
}

impl Drop for FetchConn {
    fn drop(&mut self) {
        let _ = self.stream.shutdown();
    }
}

impl FetchConn {
    /// One Fetch for this leader's unfinished slots; advances positions.
    fn fetch_once(
        &mut self,
        slots: &mut [Slot],
        verify: bool,
        totals: &mut Totals,
        shared: &Shared,
    ) -> Result<()> {
        let req = fetch_request(
            slots
                .iter()
                .filter(|s| s.leader == self.leader && s.position < s.end),
        );
        if req.topics.is_empty() {
            return Ok(());
        }
        self.send(&req)?;
        self.read_frame()?;
        totals.fetches += 1;
        let version = self.version;
        let scratch = &mut self.scratch;
        let top = consumer::walk_fetch_response(&self.response[..self.frame_len], version, |p| {
            let Some(slot) = slots
                .iter_mut()
                .find(|s| s.partition == p.partition && s.topic.as_bytes() == p.topic)
            else {
                return Ok(());
            };
            if p.error_code != 0 {
                bail!(
                    "fetch {}-{} at {}: {}",
                    slot.topic,
                    slot.partition,
                    slot.position,
                    client::error_label(p.error_code)
                );
            }
            let scan = scan_batches(p.records, slot.position)?;
            if verify {
                verify_records(p.records, slot.position, &scan, scratch)?;
            }
            totals.records += scan.records;
            totals.value_bytes += scan.value_bytes;
            totals.crc_errors += scan.crc_errors;
            totals.offset_gaps += scan.offset_gaps;
            shared.records.fetch_add(scan.records, Ordering::Relaxed);
            slot.position = scan.next_offset;
            Ok(())
        })?;
        if top != 0 {
            bail!("Fetch from {}: {}", self.leader, client::error_label(top));
        }
        Ok(())
    }

    fn send(&mut self, req: &FetchRequest) -> Result<()> {
        self.correlation_id = self.correlation_id.wrapping_add(1) & i32::MAX;
        let buf = &mut self.request;
        buf.clear();
        buf.extend_from_slice(&[0; 4]);
        let mut header = RequestHeader::default();
        header.request_api_key = ApiKey::Fetch as i16;
        header.request_api_version = self.version;
        header.correlation_id = self.correlation_id;
        header.client_id = Some(self.client_id.clone());
        header.encode(buf, FetchRequest::header_version(self.version))?;
        req.encode(buf, self.version)?;
        let len = i32::try_from(buf.len() - 4).context("Fetch request too large")?;
        buf[..4].copy_from_slice(&len.to_be_bytes());
        self.stream
            .write_all(buf)
            .with_context(|| format!("sending Fetch to {}", self.leader))
    }

    /// Reads one response frame into the reused buffer (no allocation once
    /// it has grown to the largest response).
    fn read_frame(&mut self) -> Result<()> {
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .with_context(|| format!("reading a Fetch response from {}", self.leader))?;
        let len = i32::from_be_bytes(len);
        let len = usize::try_from(len)
            .ok()
            .filter(|l| (4..=MAX_FRAME_BYTES).contains(l))
            .ok_or_else(|| anyhow!("invalid response frame size {len}"))?;
        // One read_exact into the buffer's first `len` bytes: recv asks for
        // everything still missing (read_to_end would start at 8 KiB reads),
        // and the buffer is zeroed only when it grows.
        if self.response.len() < len {
            self.response.resize(len, 0);
        }
        self.frame_len = len;
        self.stream
            .read_exact(&mut self.response[..len])
            .with_context(|| format!("{} closed the connection mid-response", self.leader))?;
        let corr = self
            .response
            .get(..4)
            .map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
        if corr != Some(self.correlation_id) {
            bail!(
                "response correlation id {corr:?}, expected {}",
                self.correlation_id
            );
        }
        Ok(())
    }
}

/// A full Fetch (no session: id 0, epoch -1) for `slots` at their positions.
fn fetch_request<'a>(slots: impl Iterator<Item = &'a Slot>) -> FetchRequest {
    super::consumer::full_fetch_request(slots.map(|s| (s.topic.as_str(), s.partition, s.position)))
}

/// `--verify-records`: decodes every record and checks that the decoded
/// records agree with the header scan (count and dense offsets).
fn verify_records(
    data: &[u8],
    position: i64,
    scan: &consumer::BatchScan,
    scratch: &mut InflateScratch,
) -> Result<()> {
    let mut expected = position;
    let mut count = 0u64;
    for batch in split_batches(bytes::Bytes::copy_from_slice(data)) {
        let Some((_, next, control)) = consumer::batch_bounds(&batch) else {
            bail!("fetched a record batch that is not magic v2");
        };
        if next <= expected {
            continue;
        }
        if !control {
            let set = RecordBatchDecoder::decode(&mut wire::decodable_batch(batch, scratch)?)?;
            let from = expected;
            for r in set.records.iter().filter(|r| r.offset >= from) {
                if r.offset != expected {
                    bail!(
                        "offset {} follows {}: records missing",
                        r.offset,
                        expected - 1
                    );
                }
                expected += 1;
                count += 1;
            }
        }
        expected = expected.max(next);
    }
    if count != scan.records {
        bail!(
            "decoded {count} records but the batch headers count {}",
            scan.records
        );
    }
    Ok(())
}
