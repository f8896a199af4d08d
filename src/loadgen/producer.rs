//! `[io]` The producer: one std thread per producer, its own connections to
//! the partition leaders, a pure [`Accumulator`] for batching, and a poll loop
//! that generates records (at a fixed rate or flat out), drains sendable
//! batches into pipelined Produce requests and handles their responses
//! (retries, `delivery.timeout.ms`, idempotent sequences, errors by code).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    ApiKey, MetadataRequest, ProduceRequest, ProduceResponse, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::Compression;
use kafka_protocol::ResponseError;
use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

use super::accumulator::{
    Accumulator, AccumulatorConfig, AppendOutcome, PendingRecord, ProducerBatch,
};
use super::args::{KeyDistributor, ProducerSettings};
use super::client::{
    correlation_id, decode_response, error_label, ConnEvent, Connection, SyncClient, Timebase,
    METADATA_VERSIONS, PRODUCE_VERSIONS,
};
use super::curve::{corrected_latency_ns, FixedRateSchedule};
use super::partitioner::{partition_for_key, StickyPartitioner};
use super::tls::Security;
use super::wire::{self, encode_batch, write_payload_header};
use crate::histogram::LatencyHistogram;

/// Counters shared with the progress line and the watchdog.
#[derive(Debug, Default)]
pub struct LiveStats {
    pub sent: AtomicU64,
    pub acked: AtomicU64,
    pub errors: AtomicU64,
    pub retries: AtomicU64,
    pub consumed: AtomicU64,
    /// Measured-window produce-ack latency (at a fixed rate: from the
    /// intended send time), merged in by producers for the progress line.
    pub ack_hist: Mutex<LatencyHistogram>,
    /// Set to stop every client thread early.
    pub abort: AtomicBool,
}

/// What one producer thread does.
#[derive(Debug, Clone)]
pub struct ProducerPlan {
    pub index: u32,
    pub topic: String,
    /// `(partition, leader address)` for every partition of the topic.
    pub partitions: Vec<(i32, String)>,
    pub settings: ProducerSettings,
    pub message_size: usize,
    pub key_distributor: KeyDistributor,
    /// This producer's share of `--rate`, messages/s.
    pub rate_per_sec: Option<f64>,
    /// Monotonic ns (of `timebase`) when measuring starts and producing ends.
    pub warmup_end_ns: u64,
    pub end_ns: u64,
    /// Count mode: stop after this many records (warm-up then not applied).
    pub max_messages: Option<u64>,
    pub client_id: String,
    pub security: Security,
    pub cpu: Option<usize>,
    pub timebase: Timebase,
    pub seed: u64,
}

/// What one producer thread measured.
#[derive(Debug, Default)]
pub struct ProducerOutcome {
    /// Records generated.
    pub sent: u64,
    /// Records acknowledged (written to the socket, for acks=0).
    pub acked: u64,
    pub failed: u64,
    pub retries: u64,
    pub errors_by_code: BTreeMap<String, u64>,
    /// Acknowledged records of the measured window.
    pub measured_acked: u64,
    pub first_measured_ns: Option<u64>,
    pub last_ack_ns: u64,
    pub ack_hist: LatencyHistogram,
    pub ack_intended_hist: LatencyHistogram,
    pub idempotent: bool,
    pub fatal: Option<String>,
}

#[derive(Debug, Clone, Copy)]
struct RecordMeta {
    intended_ns: u64,
    send_ns: u64,
}

#[derive(Debug)]
struct Slot {
    partition: i32,
    node: usize,
    next_sequence: i32,
}

#[derive(Debug)]
struct InFlight {
    node: usize,
    sent_ns: u64,
    batches: Vec<ProducerBatch<RecordMeta>>,
}

/// Pseudo error labels for failures the client detects itself.
/// Record payloads are cut from chunks of this size rather than allocated
/// one by one (a `malloc` and `free` per 1 KiB record was ~10% of the
/// client's CPU at 1M msgs/s); a chunk is freed when its last record is.
const PAYLOAD_SLAB: usize = 1 << 20;
const CLIENT_DELIVERY_TIMEOUT: &str = "-1001 ClientDeliveryTimeout";
const CLIENT_REQUEST_TIMEOUT: &str = "-1002 ClientRequestTimeout";
const CLIENT_MISSING_PARTITION: &str = "-1003 PartitionMissingInResponse";
const CLIENT_MAX_BLOCK: &str = "-1004 ClientMaxBlockTimeout";

/// Runs one producer to completion on the current thread.
pub fn run_producer(plan: ProducerPlan, live: Arc<LiveStats>) -> ProducerOutcome {
    if let Some(cpu) = plan.cpu {
        // A CPU outside the mask was refused when the arguments were read
        // (`--client-cpus`); a failure here leaves the thread unpinned.
        let _ = crate::io::affinity::pin_current_thread(cpu);
    }
    match Producer::start(plan, live.clone()) {
        Ok(mut p) => {
            if let Err(e) = p.run() {
                p.out.fatal = Some(format!("{e:#}"));
            }
            p.out
        }
        Err(e) => ProducerOutcome {
            fatal: Some(format!("{e:#}")),
            ..ProducerOutcome::default()
        },
    }
}

struct Producer {
    plan: ProducerPlan,
    live: Arc<LiveStats>,
    conns: Vec<Connection>,
    tx: Sender<ConnEvent>,
    rx: Receiver<ConnEvent>,
    metadata_version: i16,
    slots: Vec<Slot>,
    slot_of: HashMap<i32, usize>,
    acc: Accumulator<RecordMeta>,
    in_flight: HashMap<(usize, i32), InFlight>,
    sticky: StickyPartitioner,
    rng: StdRng,
    filler: Bytes,
    /// Payloads are carved from this chunk (see [`PAYLOAD_SLAB`]).
    slab: BytesMut,
    topic_name: TopicName,
    produce_version: i16,
    compression: Compression,
    producer_id: i64,
    producer_epoch: i16,
    next_seq: u64,
    next_intended_ns: u64,
    /// Intended send times at a fixed rate; `None` flat out.
    schedule: Option<FixedRateSchedule>,
    /// A record refused for lack of `buffer.memory`, since when (ns).
    blocked: Option<(usize, PendingRecord<RecordMeta>, u64)>,
    metadata_stale: bool,
    metadata_corr: Option<(usize, i32)>,
    timeout: Duration,
    done_generating: bool,
    live_hist: LatencyHistogram,
    live_flush_ns: u64,
    out: ProducerOutcome,
}

impl Producer {
    fn start(plan: ProducerPlan, live: Arc<LiveStats>) -> Result<Self> {
        let timeout = Duration::from_millis(plan.settings.request_timeout_ms as u64);
        let (tx, rx) = mpsc::channel();
        let (addrs, slots, slot_of) = route_partitions(&plan.partitions);
        if slots.is_empty() {
            bail!("topic {} has no partitions", plan.topic);
        }
        let mut conns = Vec::new();
        for (i, addr) in addrs.iter().enumerate() {
            conns.push(Connection::connect(
                addr,
                &plan.security,
                i,
                &plan.client_id,
                timeout,
                tx.clone(),
            )?);
        }
        let mut produce_version = i16::MAX;
        for c in &conns {
            produce_version = produce_version.min(c.versions.pick(
                ApiKey::Produce,
                PRODUCE_VERSIONS.0,
                PRODUCE_VERSIONS.1,
            )?);
        }
        let (producer_id, producer_epoch, idempotent) = init_idempotence(&plan, &conns, timeout)?;
        let s = &plan.settings;
        let acc = Accumulator::new(
            accumulator_config(s),
            &slots.iter().map(|s| s.node).collect::<Vec<_>>(),
            conns.len(),
        );
        let mut rng = StdRng::seed_from_u64(plan.seed);
        let mut filler = vec![0u8; plan.message_size];
        rng.fill_bytes(&mut filler);
        let now = plan.timebase.now_ns();
        let schedule = plan
            .rate_per_sec
            .and_then(|r| FixedRateSchedule::new(now, r));
        Ok(Self {
            sticky: StickyPartitioner::new(slots.len() as i32),
            topic_name: TopicName(StrBytes::from_string(plan.topic.clone())),
            compression: s.compression_type.codec(),
            out: ProducerOutcome {
                idempotent,
                ..ProducerOutcome::default()
            },
            plan,
            live,
            conns,
            tx,
            rx,
            metadata_version: 0,
            slots,
            slot_of,
            acc,
            in_flight: HashMap::new(),
            rng,
            filler: Bytes::from(filler),
            slab: BytesMut::new(),
            produce_version,
            producer_id,
            producer_epoch,
            next_seq: 0,
            next_intended_ns: now,
            schedule,
            blocked: None,
            metadata_stale: false,
            metadata_corr: None,
            timeout,
            done_generating: false,
            live_hist: LatencyHistogram::new(),
            live_flush_ns: now,
        })
    }

    fn now_ns(&self) -> u64 {
        self.plan.timebase.now_ns()
    }

    fn run(&mut self) -> Result<()> {
        // Once generation ends, what is still unsent or unacknowledged gets
        // delivery.timeout.ms to complete.
        let delivery_timeout_ns =
            (self.plan.settings.delivery_timeout_ms.max(0) as u64) * 1_000_000;
        let mut hard_stop_ns = u64::MAX;
        loop {
            let now = self.now_ns();
            if self.live.abort.load(Ordering::Relaxed) {
                self.fail_everything(CLIENT_DELIVERY_TIMEOUT);
                return Ok(());
            }
            if !self.done_generating {
                self.generate(now)?;
                if self.done_generating {
                    self.acc.begin_flush();
                    hard_stop_ns = now.saturating_add(delivery_timeout_ns);
                }
            }
            self.expire(now);
            if self.metadata_stale && self.metadata_corr.is_none() {
                self.request_metadata()?;
            }
            self.send_ready(now)?;
            if self.done_generating && self.acc.queued_batches() == 0 && self.in_flight.is_empty() {
                self.flush_live(now, true);
                return Ok(());
            }
            if now >= hard_stop_ns {
                self.fail_everything(CLIENT_DELIVERY_TIMEOUT);
                return Ok(());
            }
            let wait = self.wait_time(now);
            self.poll_events(wait)?;
            self.flush_live(self.now_ns(), false);
        }
    }

    /// Generates due records: at the fixed rate (intended times on a grid),
    /// or flat out in chunks so responses are still serviced.
    fn generate(&mut self, now: u64) -> Result<()> {
        if let Some((slot, rec, since)) = self.blocked.take() {
            let max_block_ns = self.plan.settings.max_block_ms.max(0) as u64 * 1_000_000;
            if now.saturating_sub(since) >= max_block_ns {
                // Java's send() throws after max.block.ms; count and move on.
                self.out.failed += 1;
                *self
                    .out
                    .errors_by_code
                    .entry(CLIENT_MAX_BLOCK.into())
                    .or_default() += 1;
                self.live.errors.fetch_add(1, Ordering::Relaxed);
            } else if !self.append(now, slot, rec, since)? {
                return Ok(());
            }
        }
        let mut budget = 512;
        while budget > 0 {
            let count_done = self.plan.max_messages.is_some_and(|m| self.next_seq >= m);
            // At a fixed rate the grid of intended times decides, so a
            // producer running late still sends every record due before the end.
            let clock = if self.schedule.is_some() {
                self.next_intended_ns
            } else {
                now
            };
            let time_done = self.plan.max_messages.is_none() && clock >= self.plan.end_ns;
            if count_done || time_done {
                self.done_generating = true;
                return Ok(());
            }
            let intended = match self.schedule {
                Some(_) if self.next_intended_ns > now => return Ok(()),
                Some(_) => self.next_intended_ns,
                None => now,
            };
            let (slot, rec) = self.make_record(intended, now)?;
            self.next_seq += 1;
            if let Some(schedule) = &self.schedule {
                self.next_intended_ns = schedule.intended_ns(self.next_seq);
            }
            self.out.sent += 1;
            self.live.sent.fetch_add(1, Ordering::Relaxed);
            if !self.append(now, slot, rec, now)? {
                return Ok(());
            }
            budget -= 1;
        }
        Ok(())
    }

    fn measured(&self, intended_ns: u64) -> bool {
        self.plan.max_messages.is_some() || intended_ns >= self.plan.warmup_end_ns
    }

    /// Builds the next record and picks its partition slot: murmur2 for
    /// keys, the sticky partitioner for null keys.
    fn make_record(
        &mut self,
        intended_ns: u64,
        now: u64,
    ) -> Result<(usize, PendingRecord<RecordMeta>)> {
        let seq = self.next_seq;
        let key_index = match self.plan.key_distributor {
            KeyDistributor::NoKey => None,
            KeyDistributor::RoundRobin(n) => Some(seq % n.max(1)),
            KeyDistributor::Random(n) => Some(self.rng.gen_range(0..n.max(1))),
        };
        let key = key_index.map(|k| Bytes::from(format!("key-{k}")));
        let size = self.plan.message_size;
        if self.slab.capacity() - self.slab.len() < size {
            self.slab = BytesMut::with_capacity(PAYLOAD_SLAB.max(size));
        }
        self.slab.put_slice(&self.filler);
        let mut value = self.slab.split_to(size);
        // The payload timestamp is the intended send time, so end-to-end
        // latency in fixed-rate mode is free of coordinated omission.
        let wall = self.plan.timebase.wall_ns(intended_ns);
        write_payload_header(&mut value, wall, self.plan.index, seq);
        let rec = PendingRecord {
            key,
            value: value.freeze(),
            timestamp_ms: (self.plan.timebase.wall_ns(now) / 1_000_000) as i64,
            meta: RecordMeta {
                intended_ns,
                send_ns: now,
            },
        };
        let n = self.slots.len() as i32;
        let slot = match &rec.key {
            Some(k) => {
                let p = partition_for_key(k, n).ok_or_else(|| anyhow!("no partitions"))?;
                *self
                    .slot_of
                    .get(&p)
                    .ok_or_else(|| anyhow!("topic {} has no partition {p}", self.plan.topic))?
            }
            None => {
                let r = self.rng.next_u32();
                let mut p = self.sticky.partition(r).unwrap_or(0);
                if self.acc.would_open_new_batch(p as usize, &rec) {
                    p = self
                        .sticky
                        .on_new_batch(p, self.rng.next_u32())
                        .unwrap_or(0);
                }
                p as usize
            }
        };
        Ok((slot, rec))
    }

    /// Appends or parks the record when `buffer.memory` is exhausted
    /// (the producer then blocks on responses, at most `max.block.ms` from
    /// `since`). Returns false when parked.
    fn append(
        &mut self,
        now: u64,
        slot: usize,
        rec: PendingRecord<RecordMeta>,
        since: u64,
    ) -> Result<bool> {
        match self.acc.on_append(ms(now), slot, rec)? {
            AppendOutcome::Appended { .. } => Ok(true),
            AppendOutcome::BufferFull(rec) => {
                self.blocked = Some((slot, rec, since));
                Ok(false)
            }
        }
    }

    /// Fails queued batches past `delivery.timeout.ms` and treats requests
    /// unanswered after `request.timeout.ms` as failed attempts.
    fn expire(&mut self, now: u64) {
        for batch in self.acc.on_expire(ms(now)) {
            self.complete_batch(batch, now, Some(CLIENT_DELIVERY_TIMEOUT.to_string()));
        }
        let timeout_ns = self.plan.settings.request_timeout_ms as u64 * 1_000_000;
        let expired: Vec<(usize, i32)> = self
            .in_flight
            .iter()
            .filter(|(_, f)| now.saturating_sub(f.sent_ns) >= timeout_ns)
            .map(|(k, _)| *k)
            .collect();
        for key in expired {
            if let Some(f) = self.in_flight.remove(&key) {
                self.acc.on_request_complete(f.node);
                for b in f.batches {
                    self.retry_or_fail(b, now, CLIENT_REQUEST_TIMEOUT.to_string(), true);
                }
            }
        }
    }

    /// Drains sendable batches and writes one Produce request per node.
    fn send_ready(&mut self, now: u64) -> Result<()> {
        for drained in self.acc.on_drain(ms(now)) {
            let mut batches = drained.batches;
            let mut partition_data = Vec::with_capacity(batches.len());
            for b in &mut batches {
                let slot = &mut self.slots[b.slot];
                if self.producer_id >= 0 && b.base_sequence.is_none() {
                    // Sequences are assigned at first send and kept on retry.
                    b.base_sequence = Some(slot.next_sequence);
                    slot.next_sequence = slot.next_sequence.wrapping_add(b.record_count() as i32);
                }
                b.attempts += 1;
                let records = if self.compression == Compression::None {
                    wire::encode_plain_batch(
                        &b.records,
                        self.producer_id,
                        self.producer_epoch,
                        b.base_sequence.unwrap_or(-1),
                    )
                } else {
                    encode_batch(
                        &b.records,
                        self.producer_id,
                        self.producer_epoch,
                        b.base_sequence.unwrap_or(-1),
                        self.compression,
                    )?
                };
                partition_data.push((slot.partition, records));
            }
            let timeout_ms = self.plan.settings.request_timeout_ms.min(i32::MAX as i64) as i32;
            let node = drained.node;
            let corr = self.conns[node].send_produce(
                self.produce_version,
                self.plan.settings.acks,
                timeout_ms,
                &self.plan.topic,
                &partition_data,
            )?;
            if self.plan.settings.acks == 0 {
                // acks=0: the broker sends no response; the write completes it.
                self.acc.on_request_complete(node);
                let done = self.now_ns();
                for b in batches {
                    self.complete_batch(b, done, None);
                }
            } else {
                self.in_flight.insert(
                    (node, corr),
                    InFlight {
                        node,
                        sent_ns: now,
                        batches,
                    },
                );
            }
        }
        Ok(())
    }

    fn wait_time(&self, now: u64) -> Duration {
        let mut until = now + 50_000_000;
        if !self.done_generating && self.blocked.is_none() {
            match self.schedule {
                Some(_) => until = until.min(self.next_intended_ns),
                None => until = now,
            }
        }
        // A batch already due but not drained is held by the in-flight cap:
        // only a response can free it, so do not spin on it.
        if let Some(t) = self.acc.next_ready_ms() {
            let t_ns = (t.max(0) as u64) * 1_000_000;
            if t_ns > now {
                until = until.min(t_ns);
            }
        }
        Duration::from_nanos(until.saturating_sub(now))
    }

    fn poll_events(&mut self, wait: Duration) -> Result<()> {
        let first = if wait.is_zero() {
            self.rx.try_recv().ok()
        } else {
            match self.rx.recv_timeout(wait) {
                Ok(ev) => Some(ev),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => bail!("all connections gone"),
            }
        };
        let Some(first) = first else { return Ok(()) };
        self.on_event(first)?;
        while let Ok(ev) = self.rx.try_recv() {
            self.on_event(ev)?;
        }
        Ok(())
    }

    fn on_event(&mut self, ev: ConnEvent) -> Result<()> {
        match ev {
            ConnEvent::Closed { conn, error } => {
                let addr = self.conns.get(conn).map_or("?", |c| c.addr.as_str());
                bail!("connection to {addr} closed: {error}")
            }
            ConnEvent::Response { conn, frame } => {
                let Some(corr) = correlation_id(&frame) else {
                    bail!("short response frame")
                };
                if self.metadata_corr == Some((conn, corr)) {
                    self.metadata_corr = None;
                    return self.on_metadata(frame);
                }
                // A response to a request we already timed out is dropped.
                let Some(f) = self.in_flight.remove(&(conn, corr)) else {
                    return Ok(());
                };
                self.acc.on_request_complete(f.node);
                let now = self.now_ns();
                let resp = decode_response::<ProduceRequest>(frame, self.produce_version)
                    .context("decoding ProduceResponse")?;
                self.on_produce_response(f, &resp, now);
                Ok(())
            }
        }
    }

    fn request_metadata(&mut self) -> Result<()> {
        let (lo, hi) = METADATA_VERSIONS;
        let conn = &mut self.conns[0];
        let version = conn.versions.pick(ApiKey::Metadata, lo, hi)?;
        let mut topic = MetadataRequestTopic::default();
        topic.name = Some(self.topic_name.clone());
        let mut req = MetadataRequest::default();
        req.topics = Some(vec![topic]);
        let corr = conn.send(&req, version)?;
        self.metadata_corr = Some((0, corr));
        self.metadata_version = version;
        Ok(())
    }

    /// Applies new partition leaders; connects to brokers not seen before.
    fn on_metadata(&mut self, frame: Bytes) -> Result<()> {
        let resp = decode_response::<MetadataRequest>(frame, self.metadata_version)?;
        self.metadata_stale = false;
        let brokers: HashMap<i32, String> = resp
            .brokers
            .iter()
            .map(|b| (b.node_id.0, format!("{}:{}", b.host.as_str(), b.port)))
            .collect();
        let Some(topic) = resp.topics.iter().find(|t| {
            t.name
                .as_ref()
                .is_some_and(|n| n.0.as_str() == self.plan.topic)
        }) else {
            return Ok(());
        };
        for p in &topic.partitions {
            let (Some(&slot), Some(addr)) = (
                self.slot_of.get(&p.partition_index),
                brokers.get(&p.leader_id.0),
            ) else {
                continue;
            };
            let node = match self.conns.iter().position(|c| &c.addr == addr) {
                Some(n) => n,
                None => {
                    let id = self.conns.len();
                    let c = Connection::connect(
                        addr,
                        &self.plan.security,
                        id,
                        &self.plan.client_id,
                        self.timeout,
                        self.tx.clone(),
                    )?;
                    self.conns.push(c);
                    id
                }
            };
            if self.slots[slot].node != node {
                self.slots[slot].node = node;
                self.acc.on_leader_change(slot, node);
            }
        }
        Ok(())
    }

    fn on_produce_response(&mut self, f: InFlight, resp: &ProduceResponse, now: u64) {
        let mut codes: HashMap<i32, i16> = HashMap::new();
        for t in &resp.responses {
            if t.name.0.as_str() != self.plan.topic {
                continue;
            }
            for p in &t.partition_responses {
                codes.insert(p.index, p.error_code);
            }
        }
        for b in f.batches {
            let partition = self.slots[b.slot].partition;
            match codes.get(&partition).copied() {
                // 46 DUPLICATE_SEQUENCE_NUMBER: the broker already has it.
                Some(0) | Some(46) => self.complete_batch(b, now, None),
                Some(code) => {
                    // Leadership moved or is unknown: refresh Metadata
                    // before the retry (Java's `metadata.requestUpdate`).
                    if matches!(code, 3 | 5 | 6 | 74 | 75) {
                        self.metadata_stale = true;
                    }
                    let retriable = ResponseError::try_from_code(code)
                        .is_some_and(|e| e.is_retriable())
                        || (code == 45 && self.producer_id >= 0);
                    self.retry_or_fail(b, now, error_label(code), retriable);
                }
                None => self.retry_or_fail(b, now, CLIENT_MISSING_PARTITION.into(), false),
            }
        }
    }

    /// Re-enqueues a batch within `retries` and `delivery.timeout.ms`, or
    /// fails it with `label`.
    fn retry_or_fail(
        &mut self,
        b: ProducerBatch<RecordMeta>,
        now: u64,
        label: String,
        retriable: bool,
    ) {
        let s = &self.plan.settings;
        let age_ms = ms(now) - b.created_ms;
        if retriable && b.attempts <= s.retries && age_ms < s.delivery_timeout_ms {
            self.out.retries += 1;
            self.live.retries.fetch_add(1, Ordering::Relaxed);
            *self
                .out
                .errors_by_code
                .entry(format!("{label} (retried)"))
                .or_default() += b.record_count() as u64;
            self.acc.on_retry(ms(now), b);
        } else {
            self.complete_batch(b, now, Some(label));
        }
    }

    /// Records the outcome of every record of a finished batch.
    fn complete_batch(&mut self, b: ProducerBatch<RecordMeta>, now: u64, error: Option<String>) {
        self.acc.on_batch_done(&b);
        let n = b.record_count() as u64;
        if let Some(label) = error {
            self.out.failed += n;
            *self.out.errors_by_code.entry(label).or_default() += n;
            self.live.errors.fetch_add(n, Ordering::Relaxed);
            return;
        }
        self.out.acked += n;
        self.out.last_ack_ns = self.out.last_ack_ns.max(now);
        self.live.acked.fetch_add(n, Ordering::Relaxed);
        for r in &b.records {
            let m = r.meta;
            if !self.measured(m.intended_ns) {
                continue;
            }
            self.out.measured_acked += 1;
            self.out.first_measured_ns = Some(
                self.out
                    .first_measured_ns
                    .map_or(m.send_ns, |f| f.min(m.send_ns)),
            );
            let lat = now.saturating_sub(m.send_ns);
            self.out.ack_hist.record_ns(lat);
            if self.schedule.is_some() {
                // The progress line shows what the report will: at a
                // fixed rate, latency from the intended send time.
                let corrected = corrected_latency_ns(m.intended_ns, now);
                self.out.ack_intended_hist.record_ns(corrected);
                self.live_hist.record_ns(corrected);
            } else {
                self.live_hist.record_ns(lat);
            }
        }
    }

    fn fail_everything(&mut self, label: &str) {
        let now = self.now_ns();
        for b in self.acc.on_expire(i64::MAX) {
            self.complete_batch(b, now, Some(label.to_string()));
        }
        let keys: Vec<_> = self.in_flight.keys().copied().collect();
        for k in keys {
            if let Some(f) = self.in_flight.remove(&k) {
                self.acc.on_request_complete(f.node);
                for b in f.batches {
                    self.complete_batch(b, now, Some(label.to_string()));
                }
            }
        }
        if self.blocked.take().is_some() {
            self.out.failed += 1;
            *self
                .out
                .errors_by_code
                .entry(label.to_string())
                .or_default() += 1;
        }
    }

    /// Merges the interval histogram into the shared one a few times a second.
    fn flush_live(&mut self, now: u64, force: bool) {
        if !force && now.saturating_sub(self.live_flush_ns) < 200_000_000 {
            return;
        }
        self.live_flush_ns = now;
        if self.live_hist.count() == 0 {
            return;
        }
        if let Ok(mut h) = self.live.ack_hist.lock() {
            h.add(&self.live_hist);
        }
        self.live_hist.reset();
    }
}

/// Broker addresses (node = index), one slot per partition, and the slot
/// of each partition id.
fn route_partitions(partitions: &[(i32, String)]) -> (Vec<String>, Vec<Slot>, HashMap<i32, usize>) {
    let mut addrs: Vec<String> = Vec::new();
    let mut slots = Vec::new();
    let mut slot_of = HashMap::new();
    for (partition, addr) in partitions {
        let node = match addrs.iter().position(|a| a == addr) {
            Some(n) => n,
            None => {
                addrs.push(addr.clone());
                addrs.len() - 1
            }
        };
        slot_of.insert(*partition, slots.len());
        slots.push(Slot {
            partition: *partition,
            node,
            next_sequence: 0,
        });
    }
    (addrs, slots, slot_of)
}

fn accumulator_config(s: &ProducerSettings) -> AccumulatorConfig {
    AccumulatorConfig {
        batch_size: s.batch_size,
        linger_ms: s.linger_ms,
        buffer_memory: s.buffer_memory,
        max_in_flight_requests_per_connection: s.max_in_flight_requests_per_connection,
        max_request_size: s.max_request_size,
        retry_backoff_ms: s.retry_backoff_ms,
        delivery_timeout_ms: s.delivery_timeout_ms,
    }
}

fn ms(ns: u64) -> i64 {
    (ns / 1_000_000) as i64
}

/// InitProducerId when idempotent. With the default (unset)
/// `enable.idempotence` a broker without InitProducerId gets a plain
/// producer, as Kafka's client does when the broker is too old.
fn init_idempotence(
    plan: &ProducerPlan,
    conns: &[Connection],
    timeout: Duration,
) -> Result<(i64, i16, bool)> {
    if !plan.settings.idempotent() {
        return Ok((-1, -1, false));
    }
    let Some(first) = conns.first() else {
        return Ok((-1, -1, false));
    };
    if !first.versions.supports(ApiKey::InitProducerId) {
        if plan.settings.enable_idempotence == Some(true) {
            bail!(
                "enable.idempotence=true but {} lacks InitProducerId",
                first.addr
            );
        }
        return Ok((-1, -1, false));
    }
    let mut c = SyncClient::connect(&first.addr, &plan.security, &plan.client_id, timeout)?;
    let (id, epoch) = c.init_producer_id(60_000, timeout)?;
    Ok((id, epoch, true))
}

#[cfg(test)]
mod tests;
