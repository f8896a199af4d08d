//! `[pure]` Per-partition record accumulator, after the Java producer's
//! `RecordAccumulator` and `BufferPool`.
//!
//! Records are appended to the last open batch of their partition; a batch is
//! sendable when it is full (`batch.size`) or when `linger.ms` has passed since
//! it was created, whichever comes first (also when the buffer pool is
//! exhausted or the producer is flushing). Each new batch reserves
//! `batch.size` bytes (or the record's size if larger) from `buffer.memory`;
//! when the pool is empty the append is refused and the caller must block
//! until completed batches give memory back. Draining honours
//! `max.in.flight.requests.per.connection` per broker connection and
//! `max.request.size` per request. Time is passed in as `now_ms`.

use std::collections::VecDeque;

use bytes::Bytes;

/// Overhead of a v2 record batch header (Kafka's `RECORD_BATCH_OVERHEAD`).
pub const RECORD_BATCH_OVERHEAD: usize = 61;

/// Producer settings the accumulator follows; Kafka producer key names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccumulatorConfig {
    /// `batch.size`, default 16384.
    pub batch_size: usize,
    /// `linger.ms`, default 5 since Kafka 4.0 (KIP-1030).
    pub linger_ms: i64,
    /// `buffer.memory`, default 33554432.
    pub buffer_memory: usize,
    /// `max.in.flight.requests.per.connection`, default 5.
    pub max_in_flight_requests_per_connection: usize,
    /// `max.request.size`, default 1048576.
    pub max_request_size: usize,
    /// `retry.backoff.ms`, default 100.
    pub retry_backoff_ms: i64,
    /// `delivery.timeout.ms`, default 120000.
    pub delivery_timeout_ms: i64,
}

impl Default for AccumulatorConfig {
    fn default() -> Self {
        Self {
            batch_size: 16_384,
            linger_ms: 5,
            buffer_memory: 33_554_432,
            max_in_flight_requests_per_connection: 5,
            max_request_size: 1_048_576,
            retry_backoff_ms: 100,
            delivery_timeout_ms: 120_000,
        }
    }
}

/// One record waiting to be sent, with caller data `M` (e.g. send times).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingRecord<M> {
    pub key: Option<Bytes>,
    pub value: Bytes,
    pub timestamp_ms: i64,
    pub meta: M,
}

/// A batch of records for one partition (Java's `ProducerBatch`).
#[derive(Debug, Clone)]
pub struct ProducerBatch<M> {
    pub slot: usize,
    pub records: Vec<PendingRecord<M>>,
    pub estimated_bytes: usize,
    pub created_ms: i64,
    /// How many times the batch was sent already.
    pub attempts: u32,
    /// Earliest time a retried batch may be sent again (`retry.backoff.ms`).
    pub retry_at_ms: i64,
    /// Idempotent base sequence, assigned by the caller at first send and
    /// kept across retries.
    pub base_sequence: Option<i32>,
    reserved_bytes: usize,
    closed: bool,
}

impl<M> ProducerBatch<M> {
    pub fn record_count(&self) -> usize {
        self.records.len()
    }
    pub fn reserved_bytes(&self) -> usize {
        self.reserved_bytes
    }
}

/// Result of [`Accumulator::on_append`].
#[derive(Debug, PartialEq, Eq)]
pub enum AppendOutcome<M> {
    /// The record was added; `new_batch` says whether it opened a batch.
    Appended { new_batch: bool },
    /// `buffer.memory` is exhausted: the record is handed back and the
    /// producer must wait for completed batches (back-pressure).
    BufferFull(PendingRecord<M>),
}

/// Errors a caller can cause; none of them panic.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AccumulatorError {
    #[error("unknown partition slot {0}")]
    UnknownSlot(usize),
    #[error("record of {size} bytes exceeds buffer.memory {buffer_memory}")]
    RecordTooLarge { size: usize, buffer_memory: usize },
}

/// The batches of one produce request to one broker connection.
#[derive(Debug)]
pub struct Drained<M> {
    pub node: usize,
    pub batches: Vec<ProducerBatch<M>>,
}

#[derive(Debug)]
struct PartitionQueue<M> {
    node: usize,
    batches: VecDeque<ProducerBatch<M>>,
}

/// The accumulator. Partition slots are dense indexes chosen by the caller;
/// each slot belongs to one node (broker connection index).
#[derive(Debug)]
pub struct Accumulator<M> {
    config: AccumulatorConfig,
    partitions: Vec<PartitionQueue<M>>,
    in_flight: Vec<usize>,
    memory_used: usize,
    /// Set when an append was refused for memory: everything becomes
    /// sendable so memory comes back (Java's `exhausted`).
    exhausted: bool,
    flushing: bool,
    /// Rotates the first partition drained per node, for fairness
    /// (Java's `drainIndex`).
    drain_index: usize,
}

/// Varint size in bytes of a zig-zag encoded value (Kafka record format).
pub fn varint_size(value: i64) -> usize {
    let mut v = ((value << 1) ^ (value >> 63)) as u64;
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Size of one v2 record (Kafka's `DefaultRecord.sizeInBytes`), no headers.
pub fn record_size_in_bytes(
    offset_delta: i64,
    timestamp_delta: i64,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let body = record_body_size(offset_delta, timestamp_delta, key_len, value_len);
    varint_size(body as i64) + body
}

/// Size of one v2 record after its length varint, no headers.
pub fn record_body_size(
    offset_delta: i64,
    timestamp_delta: i64,
    key_len: Option<usize>,
    value_len: usize,
) -> usize {
    let key = match key_len {
        Some(k) => varint_size(k as i64) + k,
        None => varint_size(-1),
    };
    1 + varint_size(timestamp_delta)
        + varint_size(offset_delta)
        + key
        + varint_size(value_len as i64)
        + value_len
        + varint_size(0)
}

impl<M> Accumulator<M> {
    /// `partition_nodes[slot]` is the node of each slot; `num_nodes` the
    /// number of broker connections.
    pub fn new(config: AccumulatorConfig, partition_nodes: &[usize], num_nodes: usize) -> Self {
        let num_nodes = num_nodes.max(partition_nodes.iter().map(|n| n + 1).max().unwrap_or(0));
        Self {
            config,
            partitions: partition_nodes
                .iter()
                .map(|&node| PartitionQueue {
                    node,
                    batches: VecDeque::new(),
                })
                .collect(),
            in_flight: vec![0; num_nodes],
            memory_used: 0,
            exhausted: false,
            flushing: false,
            drain_index: 0,
        }
    }

    pub fn config(&self) -> &AccumulatorConfig {
        &self.config
    }

    fn size_in_open_batch(&self, slot: usize, record: &PendingRecord<M>) -> Option<usize> {
        let last = self.partitions.get(slot)?.batches.back()?;
        if last.closed {
            return None;
        }
        let first_ts = last
            .records
            .first()
            .map_or(record.timestamp_ms, |r| r.timestamp_ms);
        let size = record_size_in_bytes(
            last.records.len() as i64,
            record.timestamp_ms - first_ts,
            record.key.as_ref().map(Bytes::len),
            record.value.len(),
        );
        (last.estimated_bytes + size <= self.config.batch_size).then_some(size)
    }

    /// Whether appending `record` to `slot` would open a new batch; the
    /// sticky partitioner switches partition exactly then (KIP-480).
    pub fn would_open_new_batch(&self, slot: usize, record: &PendingRecord<M>) -> bool {
        self.size_in_open_batch(slot, record).is_none()
    }

    /// Appends a record to the partition's open batch or a new batch.
    pub fn on_append(
        &mut self,
        now_ms: i64,
        slot: usize,
        record: PendingRecord<M>,
    ) -> Result<AppendOutcome<M>, AccumulatorError> {
        if slot >= self.partitions.len() {
            return Err(AccumulatorError::UnknownSlot(slot));
        }
        if let Some(size) = self.size_in_open_batch(slot, &record) {
            let batch_size = self.config.batch_size;
            let last = self.partitions[slot]
                .batches
                .back_mut()
                .ok_or(AccumulatorError::UnknownSlot(slot))?;
            last.estimated_bytes += size;
            last.records.push(record);
            last.closed = last.estimated_bytes >= batch_size;
            self.debug_check();
            return Ok(AppendOutcome::Appended { new_batch: false });
        }
        let size = RECORD_BATCH_OVERHEAD
            + record_size_in_bytes(
                0,
                0,
                record.key.as_ref().map(Bytes::len),
                record.value.len(),
            );
        // A new batch takes batch.size from the pool, or the record's own
        // size when it is larger (Java's BufferPool.allocate).
        let reserve = size.max(self.config.batch_size);
        if reserve > self.config.buffer_memory {
            return Err(AccumulatorError::RecordTooLarge {
                size,
                buffer_memory: self.config.buffer_memory,
            });
        }
        if self.memory_used + reserve > self.config.buffer_memory {
            self.exhausted = true;
            return Ok(AppendOutcome::BufferFull(record));
        }
        self.exhausted = false;
        self.memory_used += reserve;
        let queue = &mut self.partitions[slot];
        if let Some(prev) = queue.batches.back_mut() {
            prev.closed = true;
        }
        queue.batches.push_back(ProducerBatch {
            slot,
            records: vec![record],
            estimated_bytes: size,
            created_ms: now_ms,
            attempts: 0,
            retry_at_ms: 0,
            base_sequence: None,
            reserved_bytes: reserve,
            closed: size >= self.config.batch_size,
        });
        self.debug_check();
        Ok(AppendOutcome::Appended { new_batch: true })
    }

    /// Whether the first batch of a partition may go out now.
    fn sendable(&self, queue: &PartitionQueue<M>, now_ms: i64) -> bool {
        let Some(first) = queue.batches.front() else {
            return false;
        };
        if first.attempts > 0 {
            return now_ms >= first.retry_at_ms;
        }
        first.closed
            || queue.batches.len() > 1
            || now_ms - first.created_ms >= self.config.linger_ms
            || self.exhausted
            || self.flushing
    }

    fn node_has_capacity(&self, node: usize) -> bool {
        self.in_flight.get(node).copied().unwrap_or(usize::MAX)
            < self.config.max_in_flight_requests_per_connection
    }

    /// Takes the batches that may be sent now, grouped into one request per
    /// node. A node is ready when one of its partitions has a sendable batch
    /// and it has fewer than `max.in.flight.requests.per.connection`
    /// requests in flight; the request then also carries the first batch of
    /// the node's other partitions (Java's `drain`), up to
    /// `max.request.size`. Each returned request counts as in flight until
    /// [`Self::on_request_complete`].
    pub fn on_drain(&mut self, now_ms: i64) -> Vec<Drained<M>> {
        let n = self.partitions.len();
        let mut ready = vec![false; self.in_flight.len()];
        for queue in &self.partitions {
            if self.sendable(queue, now_ms) && self.node_has_capacity(queue.node) {
                ready[queue.node] = true;
            }
        }
        let mut out: Vec<Drained<M>> = Vec::new();
        for (node, _) in ready.iter().enumerate().filter(|(_, r)| **r) {
            let mut batches = Vec::new();
            let mut bytes = 0usize;
            for i in 0..n {
                let slot = (self.drain_index + i) % n;
                let queue = &mut self.partitions[slot];
                if queue.node != node {
                    continue;
                }
                let Some(first) = queue.batches.front() else {
                    continue;
                };
                if first.attempts > 0 && now_ms < first.retry_at_ms {
                    continue;
                }
                if !batches.is_empty()
                    && bytes + first.estimated_bytes > self.config.max_request_size
                {
                    break;
                }
                if let Some(mut batch) = queue.batches.pop_front() {
                    batch.closed = true;
                    bytes += batch.estimated_bytes;
                    batches.push(batch);
                }
            }
            if !batches.is_empty() {
                self.in_flight[node] += 1;
                out.push(Drained { node, batches });
            }
        }
        if n > 0 {
            self.drain_index = (self.drain_index + 1) % n;
        }
        self.debug_check();
        out
    }

    /// A request to `node` completed (response, error or acks=0 write).
    pub fn on_request_complete(&mut self, node: usize) {
        if let Some(c) = self.in_flight.get_mut(node) {
            *c = c.saturating_sub(1);
        }
        self.debug_check();
    }

    /// A batch is finished (acknowledged, failed or expired): its memory
    /// returns to the pool.
    pub fn on_batch_done(&mut self, batch: &ProducerBatch<M>) {
        self.memory_used = self.memory_used.saturating_sub(batch.reserved_bytes);
        if self.memory_used < self.config.buffer_memory {
            self.exhausted = false;
        }
        self.debug_check();
    }

    /// Puts a batch that failed with a retriable error back at the head of
    /// its partition, after `retry.backoff.ms` (Java's `reenqueue`).
    /// Idempotent batches stay ordered by sequence number.
    pub fn on_retry(&mut self, now_ms: i64, mut batch: ProducerBatch<M>) {
        batch.retry_at_ms = now_ms + self.config.retry_backoff_ms;
        batch.closed = true;
        let Some(queue) = self.partitions.get_mut(batch.slot) else {
            return;
        };
        let pos = match batch.base_sequence {
            Some(seq) => queue
                .batches
                .iter()
                .position(|b| b.base_sequence.is_none_or(|s| s > seq))
                .unwrap_or(queue.batches.len()),
            None => 0,
        };
        queue.batches.insert(pos, batch);
        self.debug_check();
    }

    /// Removes the queued batches older than `delivery.timeout.ms`; the
    /// caller fails their records and then calls [`Self::on_batch_done`].
    pub fn on_expire(&mut self, now_ms: i64) -> Vec<ProducerBatch<M>> {
        let timeout = self.config.delivery_timeout_ms;
        let mut expired = Vec::new();
        for queue in &mut self.partitions {
            while queue
                .batches
                .front()
                .is_some_and(|b| now_ms - b.created_ms >= timeout)
            {
                if let Some(b) = queue.batches.pop_front() {
                    expired.push(b);
                }
            }
        }
        self.debug_check();
        expired
    }

    /// The partition in `slot` moved to another node (leader change seen in
    /// Metadata): its queued batches go to the new node from now on.
    pub fn on_leader_change(&mut self, slot: usize, node: usize) {
        if node >= self.in_flight.len() {
            self.in_flight.resize(node + 1, 0);
        }
        if let Some(q) = self.partitions.get_mut(slot) {
            q.node = node;
        }
        self.debug_check();
    }

    /// From now on every batch is sendable (Java's `beginFlush`).
    pub fn begin_flush(&mut self) {
        self.flushing = true;
    }

    /// The earliest time a waiting batch becomes sendable by time alone
    /// (linger or retry backoff), for the caller's wait.
    pub fn next_ready_ms(&self) -> Option<i64> {
        self.partitions
            .iter()
            .filter_map(|q| q.batches.front())
            .map(|b| {
                if b.attempts > 0 {
                    b.retry_at_ms
                } else {
                    b.created_ms + self.config.linger_ms
                }
            })
            .min()
    }

    pub fn memory_used(&self) -> usize {
        self.memory_used
    }
    pub fn in_flight(&self, node: usize) -> usize {
        self.in_flight.get(node).copied().unwrap_or(0)
    }
    pub fn total_in_flight(&self) -> usize {
        self.in_flight.iter().sum()
    }
    pub fn queued_batches(&self) -> usize {
        self.partitions.iter().map(|q| q.batches.len()).sum()
    }
    pub fn queued_records(&self, slot: usize) -> usize {
        self.partitions
            .get(slot)
            .map_or(0, |q| q.batches.iter().map(|b| b.records.len()).sum())
    }

    fn debug_check(&self) {
        #[cfg(debug_assertions)]
        self.check_invariants();
    }

    /// Invariants: queued memory never exceeds `buffer.memory`; in-flight
    /// counts respect the cap; only the last batch of a partition is open.
    pub fn check_invariants(&self) {
        assert!(self.memory_used <= self.config.buffer_memory);
        let queued: usize = self
            .partitions
            .iter()
            .flat_map(|q| q.batches.iter())
            .map(|b| b.reserved_bytes)
            .sum();
        assert!(queued <= self.memory_used);
        for c in &self.in_flight {
            assert!(*c <= self.config.max_in_flight_requests_per_connection);
        }
        for q in &self.partitions {
            let open = q.batches.iter().filter(|b| !b.closed).count();
            assert!(open <= 1);
            if open == 1 {
                assert!(q.batches.back().is_some_and(|b| !b.closed));
            }
            assert!(q.batches.iter().all(|b| !b.records.is_empty()));
        }
    }
}

#[cfg(test)]
mod tests;
