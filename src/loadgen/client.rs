//! `[io]` Kafka client connections over std blocking sockets: size-prefixed
//! framing, request headers with correlation ids, pipelining (many requests
//! written before their responses arrive; one reader thread per connection
//! forwards response frames to the owner's channel), ApiVersions
//! negotiation, and the cold-path admin calls (Metadata, CreateTopics,
//! ListOffsets, InitProducerId). The transport (PLAINTEXT or SSL) is
//! [`tls::Stream`].

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::{Request, StrBytes};

pub use super::frame::{correlation_id, decode_response, MAX_FRAME_BYTES};
use super::frame::{encode_frame, read_frame};
use super::tls::{Security, Stream};
use super::wire;

/// Monotonic nanoseconds since the run started plus the wall-clock origin,
/// so payload timestamps (wall ns) and latencies (mono ns) share one base.
#[derive(Debug, Clone, Copy)]
pub struct Timebase {
    origin: Instant,
    wall_origin_ns: u64,
}

impl Default for Timebase {
    fn default() -> Self {
        Self::new()
    }
}

impl Timebase {
    pub fn new() -> Self {
        let wall_origin_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Self {
            origin: Instant::now(),
            wall_origin_ns,
        }
    }
    /// Monotonic ns since the origin.
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }
    /// Wall-clock ns (Unix epoch) of a monotonic instant.
    pub fn wall_ns(&self, mono_ns: u64) -> u64 {
        self.wall_origin_ns + mono_ns
    }
    /// Wall-clock ns of now, from the live clock (for other processes'
    /// timestamps).
    pub fn wall_now_ns(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    }
}

/// What a connection's reader thread reports.
#[derive(Debug)]
pub enum ConnEvent {
    /// A whole response frame (header included, size prefix removed).
    Response { conn: usize, frame: Bytes },
    /// The connection failed or was closed by the peer.
    Closed { conn: usize, error: String },
}

/// The broker's supported version ranges (from ApiVersions).
#[derive(Debug, Clone, Default)]
pub struct ApiVersionTable {
    ranges: HashMap<i16, (i16, i16)>,
}

impl ApiVersionTable {
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        Self {
            ranges: resp
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect(),
        }
    }

    pub fn supports(&self, api: ApiKey) -> bool {
        self.ranges.contains_key(&(api as i16))
    }

    /// The highest version both sides support within `[ours_min, ours_max]`.
    pub fn pick(&self, api: ApiKey, ours_min: i16, ours_max: i16) -> Result<i16> {
        let (theirs_min, theirs_max) = *self
            .ranges
            .get(&(api as i16))
            .ok_or_else(|| anyhow!("broker does not support {api:?}"))?;
        let v = ours_max.min(theirs_max);
        if v < ours_min.max(theirs_min) {
            bail!(
                "no common {api:?} version: we support {ours_min}..={ours_max}, broker {theirs_min}..={theirs_max}"
            );
        }
        Ok(v)
    }
}

/// One TCP connection to a broker. Requests are written from the owning
/// thread; a reader thread forwards response frames as [`ConnEvent`]s.
pub struct Connection {
    pub id: usize,
    pub addr: String,
    pub versions: ApiVersionTable,
    stream: Stream,
    client_id: StrBytes,
    next_correlation_id: i32,
    buf: BytesMut,
    /// Frame bytes of a Produce request sent with `writev`.
    frame: Vec<u8>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.id)
            .field("addr", &self.addr)
            .finish()
    }
}

impl Connection {
    /// Connects (and for SSL completes the handshake), negotiates
    /// ApiVersions synchronously, then starts the reader thread that sends
    /// frames to `events`.
    pub fn connect(
        addr: &str,
        security: &Security,
        id: usize,
        client_id: &str,
        timeout: Duration,
        events: Sender<ConnEvent>,
    ) -> Result<Self> {
        let stream = super::sasl::connect(security, addr, timeout)?;
        // Writes block on a full socket buffer (back-pressure), but never
        // forever: request.timeout.ms bounds them.
        stream.set_write_timeout(Some(timeout))?;
        let mut conn = Self {
            id,
            addr: addr.to_string(),
            versions: ApiVersionTable::default(),
            stream,
            client_id: StrBytes::from_string(client_id.to_string()),
            next_correlation_id: 0,
            buf: BytesMut::with_capacity(64 * 1024),
            frame: Vec::with_capacity(4096),
        };
        conn.versions = conn
            .negotiate_versions(timeout)
            .with_context(|| format!("ApiVersions with {addr}"))?;
        let mut reader = conn.stream.split_reader()?;
        reader.set_read_timeout(None)?;
        std::thread::Builder::new()
            .name(format!("loadgen-rd-{id}"))
            .spawn(move || loop {
                match read_frame(&mut reader) {
                    Ok(frame) => {
                        if events
                            .send(ConnEvent::Response { conn: id, frame })
                            .is_err()
                        {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = events.send(ConnEvent::Closed {
                            conn: id,
                            error: e.to_string(),
                        });
                        return;
                    }
                }
            })?;
        Ok(conn)
    }

    /// ApiVersions v3 as librdkafka sends it; a broker that does not know v3
    /// answers v0 with UNSUPPORTED_VERSION (35) and its ranges, then we retry
    /// at the highest version it supports.
    fn negotiate_versions(&mut self, timeout: Duration) -> Result<ApiVersionTable> {
        self.stream.set_read_timeout(Some(timeout))?;
        let mut version = 3i16;
        for _ in 0..2 {
            let mut req = ApiVersionsRequest::default();
            req.client_software_name = StrBytes::from_static_str("shardlog-loadgen");
            req.client_software_version = StrBytes::from_static_str(env!("CARGO_PKG_VERSION"));
            let corr = self.send(&req, version)?;
            let frame = read_frame(&mut self.stream)?;
            if correlation_id(&frame) != Some(corr) {
                bail!("ApiVersions response has the wrong correlation id");
            }
            // Header v0 (4 bytes), then error_code in every version.
            let error_code = frame.get(4..6).map(|b| i16::from_be_bytes([b[0], b[1]]));
            if error_code == Some(35) {
                let resp = decode_response::<ApiVersionsRequest>(frame, 0)?;
                let table = ApiVersionTable::from_response(&resp);
                version = table.pick(ApiKey::ApiVersions, 0, 3)?;
                continue;
            }
            let resp = decode_response::<ApiVersionsRequest>(frame, version)?;
            if resp.error_code != 0 {
                bail!("ApiVersions error {}", error_label(resp.error_code));
            }
            return Ok(ApiVersionTable::from_response(&resp));
        }
        bail!("ApiVersions negotiation did not converge")
    }

    /// The next request's correlation id (non-negative, wrapping).
    fn take_correlation_id(&mut self) -> i32 {
        let corr = self.next_correlation_id;
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1) & i32::MAX;
        corr
    }

    /// Writes one request; returns its correlation id.
    pub fn send<R: Request>(&mut self, req: &R, version: i16) -> Result<i32> {
        let corr = self.take_correlation_id();
        let mut buf = std::mem::take(&mut self.buf);
        let result = encode_frame(&mut buf, req, version, corr, &self.client_id)
            .and_then(|_| self.stream.write_all(&buf).map_err(Into::into));
        self.buf = buf;
        result.with_context(|| format!("sending to {}", self.addr))?;
        Ok(corr)
    }
}

impl Connection {
    /// Writes a Produce request for one topic whose record batches
    /// (`(partition, batch)`) go out from their own buffers with `writev`
    /// rather than being copied into the frame; returns its correlation id.
    pub fn send_produce(
        &mut self,
        version: i16,
        acks: i16,
        timeout_ms: i32,
        topic: &str,
        partitions: &[(i32, Bytes)],
    ) -> Result<i32> {
        let corr = self.take_correlation_id();
        let fields = wire::ProduceFields {
            version,
            correlation_id: corr,
            client_id: &self.client_id,
            acks,
            timeout_ms,
        };
        let mut frame = std::mem::take(&mut self.frame);
        let pieces = wire::encode_produce_frame(&mut frame, fields, topic, partitions);
        let mut slices: Vec<std::io::IoSlice<'_>> = pieces
            .iter()
            .map(|p| match *p {
                wire::Piece::Frame(a, b) => std::io::IoSlice::new(&frame[a..b]),
                wire::Piece::Batch(n) => std::io::IoSlice::new(&partitions[n].1),
            })
            .collect();
        let result = write_all_vectored(&mut self.stream, &mut slices);
        drop(slices);
        self.frame = frame;
        result.with_context(|| format!("sending to {}", self.addr))?;
        Ok(corr)
    }
}

/// `Write::write_all_vectored` (unstable in std): writes every slice.
fn write_all_vectored(
    w: &mut impl Write,
    mut slices: &mut [std::io::IoSlice<'_>],
) -> std::io::Result<()> {
    std::io::IoSlice::advance_slices(&mut slices, 0);
    while !slices.is_empty() {
        match w.write_vectored(slices) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl Drop for Connection {
    fn drop(&mut self) {
        // Unblocks the reader thread.
        let _ = self.stream.shutdown();
    }
}

/// Kafka error code with its protocol name, e.g. `6 NotLeaderOrFollower`.
/// Kafka's retriable coordinator error codes (`Errors.java`).
const COORDINATOR_LOAD_IN_PROGRESS: i16 = 14;
const COORDINATOR_NOT_AVAILABLE: i16 = 15;
const NOT_COORDINATOR: i16 = 16;

pub fn error_label(code: i16) -> String {
    match kafka_protocol::ResponseError::try_from_code(code) {
        None => "0 None".into(),
        Some(kafka_protocol::ResponseError::Unknown(c)) => format!("{c} Unknown"),
        Some(e) => format!("{code} {e}"),
    }
}

/// A connection used request-by-request (admin calls, consumers).
pub struct SyncClient {
    pub conn: Connection,
    rx: Receiver<ConnEvent>,
    timeout: Duration,
}

impl SyncClient {
    pub fn connect(
        addr: &str,
        security: &Security,
        client_id: &str,
        timeout: Duration,
    ) -> Result<Self> {
        let (tx, rx) = mpsc::channel();
        let conn = Connection::connect(addr, security, 0, client_id, timeout, tx)?;
        Ok(Self { conn, rx, timeout })
    }

    /// Sends `req` and waits for its response.
    pub fn call<R: Request>(&mut self, req: &R, version: i16) -> Result<R::Response> {
        let corr = self.conn.send(req, version)?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(ConnEvent::Response { frame, .. }) => {
                    if correlation_id(&frame) == Some(corr) {
                        return decode_response::<R>(frame, version);
                    }
                }
                Ok(ConnEvent::Closed { error, .. }) => {
                    bail!("connection to {} closed: {error}", self.conn.addr)
                }
                Err(RecvTimeoutError::Timeout) => bail!(
                    "{:?} to {} timed out after {:?}",
                    ApiKey::try_from(R::KEY),
                    self.conn.addr,
                    self.timeout
                ),
                Err(RecvTimeoutError::Disconnected) => bail!("reader thread gone"),
            }
        }
    }
}

/// Connects to the first reachable address of a `bootstrap.servers` list.
pub fn connect_bootstrap(
    bootstrap: &str,
    security: &Security,
    client_id: &str,
    timeout: Duration,
) -> Result<SyncClient> {
    let mut errors = Vec::new();
    for addr in bootstrap
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
    {
        match SyncClient::connect(addr, security, client_id, timeout) {
            Ok(c) => return Ok(c),
            Err(e) => errors.push(format!("{addr}: {e:#}")),
        }
    }
    bail!(
        "no bootstrap server reachable ({})",
        if errors.is_empty() {
            "empty --bootstrap".to_string()
        } else {
            errors.join("; ")
        }
    )
}

/// Reads a big-endian i32 at `pos`, `None` past the end.
pub fn be_i32(b: &[u8], pos: usize) -> Option<i32> {
    let s = b.get(pos..pos + 4)?;
    Some(i32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// Cluster view from Metadata: broker addresses and partition leaders.
#[derive(Debug, Clone, Default)]
pub struct ClusterMeta {
    pub brokers: BTreeMap<i32, String>,
    pub controller_id: i32,
    /// topic → (partition → leader id), and the topic error code.
    pub topics: BTreeMap<String, TopicMeta>,
}

#[derive(Debug, Clone, Default)]
pub struct TopicMeta {
    pub error_code: i16,
    pub leaders: BTreeMap<i32, i32>,
}

impl ClusterMeta {
    /// The address of a partition's leader, if known and live.
    pub fn leader_addr(&self, topic: &str, partition: i32) -> Option<(i32, &str)> {
        let leader = *self.topics.get(topic)?.leaders.get(&partition)?;
        self.brokers.get(&leader).map(|a| (leader, a.as_str()))
    }
}

/// Our version ranges per API: the highest both sides support is used.
/// Produce stays <= 12 and Fetch <= 12 because later versions address
/// topics by id only.
pub const METADATA_VERSIONS: (i16, i16) = (1, 12);
pub const CREATE_TOPICS_VERSIONS: (i16, i16) = (2, 7);
pub const LIST_OFFSETS_VERSIONS: (i16, i16) = (1, 8);
pub const INIT_PRODUCER_ID_VERSIONS: (i16, i16) = (0, 4);
pub const PRODUCE_VERSIONS: (i16, i16) = (3, 12);
pub const FETCH_VERSIONS: (i16, i16) = (4, 12);

/// ListOffsets timestamp for the log end offset (Kafka's `LATEST_TIMESTAMP`).
pub const LATEST_TIMESTAMP: i64 = -1;

impl SyncClient {
    fn pick(&self, api: ApiKey, range: (i16, i16)) -> Result<i16> {
        self.conn.versions.pick(api, range.0, range.1)
    }

    /// Metadata for `topics` (never auto-creating them).
    pub fn metadata(&mut self, topics: &[String]) -> Result<ClusterMeta> {
        self.metadata_with(topics, false)
    }

    /// Metadata; `auto_create` asks the broker to create absent topics
    /// (honoured where `auto.create.topics.enable` is on).
    pub fn metadata_with(&mut self, topics: &[String], auto_create: bool) -> Result<ClusterMeta> {
        use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
        use kafka_protocol::messages::{MetadataRequest, TopicName};
        let version = self.pick(ApiKey::Metadata, METADATA_VERSIONS)?;
        let mut req = MetadataRequest::default();
        req.topics = Some(
            topics
                .iter()
                .map(|t| {
                    let mut mt = MetadataRequestTopic::default();
                    mt.name = Some(TopicName(StrBytes::from_string(t.clone())));
                    mt
                })
                .collect(),
        );
        // AllowAutoTopicCreation exists from Metadata v4; below it a broker
        // creates absent topics as its `auto.create.topics.enable` says, and
        // the field must keep its default to be encodable.
        if version >= 4 {
            req.allow_auto_topic_creation = auto_create;
        }
        let resp = self.call(&req, version)?;
        let mut meta = ClusterMeta {
            controller_id: resp.controller_id.0,
            ..ClusterMeta::default()
        };
        for b in &resp.brokers {
            meta.brokers
                .insert(b.node_id.0, format!("{}:{}", b.host.as_str(), b.port));
        }
        for t in &resp.topics {
            let Some(name) = &t.name else { continue };
            let tm = TopicMeta {
                error_code: t.error_code,
                leaders: t
                    .partitions
                    .iter()
                    .filter(|p| p.leader_id.0 >= 0)
                    .map(|p| (p.partition_index, p.leader_id.0))
                    .collect(),
            };
            meta.topics.insert(name.0.as_str().to_string(), tm);
        }
        Ok(meta)
    }

    /// CreateTopics; returns each topic's error code (36 = already exists).
    pub fn create_topics(
        &mut self,
        topics: &[String],
        num_partitions: i32,
        replication_factor: i16,
        timeout_ms: i32,
    ) -> Result<Vec<(String, i16, Option<String>)>> {
        use kafka_protocol::messages::create_topics_request::CreatableTopic;
        use kafka_protocol::messages::{CreateTopicsRequest, TopicName};
        let version = self.pick(ApiKey::CreateTopics, CREATE_TOPICS_VERSIONS)?;
        let mut req = CreateTopicsRequest::default();
        req.timeout_ms = timeout_ms;
        req.topics = topics
            .iter()
            .map(|t| {
                let mut ct = CreatableTopic::default();
                ct.name = TopicName(StrBytes::from_string(t.clone()));
                ct.num_partitions = num_partitions;
                ct.replication_factor = replication_factor;
                ct
            })
            .collect();
        let resp = self.call(&req, version)?;
        Ok(resp
            .topics
            .iter()
            .map(|t| {
                (
                    t.name.0.as_str().to_string(),
                    t.error_code,
                    t.error_message.as_ref().map(|m| m.as_str().to_string()),
                )
            })
            .collect())
    }

    /// ListOffsets at `timestamp` for partitions this broker leads.
    pub fn list_offsets(
        &mut self,
        partitions: &[(String, i32)],
        timestamp: i64,
    ) -> Result<HashMap<(String, i32), i64>> {
        use kafka_protocol::messages::list_offsets_request::{
            ListOffsetsPartition, ListOffsetsTopic,
        };
        use kafka_protocol::messages::{BrokerId, ListOffsetsRequest, TopicName};
        let version = self.pick(ApiKey::ListOffsets, LIST_OFFSETS_VERSIONS)?;
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            by_topic.entry(t.as_str()).or_default().push(*p);
        }
        let mut req = ListOffsetsRequest::default();
        req.replica_id = BrokerId(-1);
        req.topics = by_topic
            .iter()
            .map(|(t, ps)| {
                let mut lt = ListOffsetsTopic::default();
                lt.name = TopicName(StrBytes::from_string(t.to_string()));
                lt.partitions = ps
                    .iter()
                    .map(|p| {
                        let mut lp = ListOffsetsPartition::default();
                        lp.partition_index = *p;
                        lp.current_leader_epoch = -1;
                        lp.timestamp = timestamp;
                        lp
                    })
                    .collect();
                lt
            })
            .collect();
        let resp = self.call(&req, version)?;
        let mut out = HashMap::new();
        for t in &resp.topics {
            for p in &t.partitions {
                if p.error_code != 0 {
                    return Err(PartitionError {
                        api: "ListOffsets",
                        topic: t.name.0.as_str().to_string(),
                        partition: p.partition_index,
                        code: p.error_code,
                    }
                    .into());
                }
                out.insert((t.name.0.as_str().to_string(), p.partition_index), p.offset);
            }
        }
        Ok(out)
    }

    /// InitProducerId for an idempotent (non-transactional) producer.
    /// The coordinator errors Kafka's producer retries are retried every
    /// `retry.backoff.ms` (100) until `timeout`: right after a Kafka broker
    /// starts, its transaction coordinator is still loading
    /// `__transaction_state` (COORDINATOR_LOAD_IN_PROGRESS) or not yet
    /// elected (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR).
    pub fn init_producer_id(
        &mut self,
        transaction_timeout_ms: i32,
        timeout: Duration,
    ) -> Result<(i64, i16)> {
        use kafka_protocol::messages::{InitProducerIdRequest, ProducerId};
        let version = self.pick(ApiKey::InitProducerId, INIT_PRODUCER_ID_VERSIONS)?;
        let mut req = InitProducerIdRequest::default();
        req.transactional_id = None;
        req.transaction_timeout_ms = transaction_timeout_ms;
        req.producer_id = ProducerId(-1);
        req.producer_epoch = -1;
        let deadline = Instant::now() + timeout;
        loop {
            let resp = self.call(&req, version)?;
            match resp.error_code {
                0 => return Ok((resp.producer_id.0, resp.producer_epoch)),
                COORDINATOR_LOAD_IN_PROGRESS | COORDINATOR_NOT_AVAILABLE | NOT_COORDINATOR
                    if Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(100));
                }
                code => bail!("InitProducerId: {}", error_label(code)),
            }
        }
    }
}

/// Creates the absent topics (on the controller when the metadata names
/// one, as ZooKeeper-mode Kafka requires) and waits until every partition
/// has a live leader.
pub fn ensure_topics(
    boot: &mut SyncClient,
    topics: &[String],
    num_partitions: i32,
    replication_factor: i16,
    security: &Security,
    client_id: &str,
    timeout: Duration,
) -> Result<ClusterMeta> {
    let meta = boot.metadata(topics)?;
    let missing: Vec<String> = topics
        .iter()
        .filter(|t| meta.topics.get(*t).is_none_or(|m| m.error_code == 3))
        .cloned()
        .collect();
    if !missing.is_empty() && !boot.conn.versions.supports(ApiKey::CreateTopics) {
        // No CreateTopics: fall back to broker-side auto-creation, with the
        // broker's num.partitions.
        boot.metadata_with(&missing, true)?;
    } else if !missing.is_empty() {
        let mut controller = match meta.brokers.get(&meta.controller_id) {
            Some(addr) if *addr != boot.conn.addr => {
                SyncClient::connect(addr, security, client_id, timeout).ok()
            }
            _ => None,
        };
        let target = controller.as_mut().unwrap_or(boot);
        let results = target.create_topics(
            &missing,
            num_partitions,
            replication_factor,
            timeout.as_millis().min(i32::MAX as u128) as i32,
        )?;
        for (name, code, msg) in results {
            // 36 TOPIC_ALREADY_EXISTS: another client won the race.
            if code != 0 && code != 36 {
                bail!(
                    "CreateTopics {name}: {}{}",
                    error_label(code),
                    msg.map(|m| format!(" ({m})")).unwrap_or_default()
                );
            }
        }
    }
    let deadline = Instant::now() + timeout;
    loop {
        let meta = boot.metadata(topics)?;
        let pending: Vec<String> = topics
            .iter()
            .filter(|t| {
                meta.topics.get(*t).is_none_or(|m| {
                    m.error_code != 0
                        || m.leaders.is_empty()
                        || m.leaders.keys().any(|p| meta.leader_addr(t, *p).is_none())
                })
            })
            .cloned()
            .collect();
        if pending.is_empty() {
            return Ok(meta);
        }
        if Instant::now() >= deadline {
            bail!(
                "topics without leaders after {timeout:?}: {}",
                pending.join(", ")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// ListOffsets for all `partitions`, each asked of its leader.
pub fn list_offsets_all(
    meta: &ClusterMeta,
    partitions: &[(String, i32)],
    timestamp: i64,
    security: &Security,
    client_id: &str,
    timeout: Duration,
) -> Result<HashMap<(String, i32), i64>> {
    let mut by_leader: BTreeMap<&str, Vec<(String, i32)>> = BTreeMap::new();
    for (t, p) in partitions {
        let (_, addr) = meta
            .leader_addr(t, *p)
            .ok_or_else(|| anyhow!("no leader for {t}-{p}"))?;
        by_leader.entry(addr).or_default().push((t.clone(), *p));
    }
    let mut out = HashMap::new();
    let give_up = Instant::now() + timeout;
    for (addr, parts) in by_leader {
        let mut c = SyncClient::connect(addr, security, client_id, timeout)?;
        loop {
            match c.list_offsets(&parts, timestamp) {
                Ok(offsets) => {
                    out.extend(offsets);
                    break;
                }
                // The Java consumer retries these (they are RetriableException
                // subclasses): a just-created partition may not be open on
                // its leader yet, or leadership may be moving.
                Err(e) if is_retriable_listing(&e) && Instant::now() < give_up => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(out)
}

/// A Kafka error code a broker returned for one partition.
#[derive(Debug, thiserror::Error)]
#[error("{api} {topic}-{partition}: {}", error_label(*.code))]
pub struct PartitionError {
    pub api: &'static str,
    pub topic: String,
    pub partition: i32,
    pub code: i16,
}

/// A ListOffsets failure worth retrying: UNKNOWN_TOPIC_OR_PARTITION (3),
/// LEADER_NOT_AVAILABLE (5), NOT_LEADER_OR_FOLLOWER (6),
/// OFFSET_NOT_AVAILABLE (78) — all retriable in Kafka's error table.
fn is_retriable_listing(e: &anyhow::Error) -> bool {
    e.downcast_ref::<PartitionError>()
        .is_some_and(|p| matches!(p.code, 3 | 5 | 6 | 78))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    fn table(entries: &[(ApiKey, i16, i16)]) -> ApiVersionTable {
        let mut resp = ApiVersionsResponse::default();
        resp.api_keys = entries
            .iter()
            .map(|(k, lo, hi)| {
                let mut v = ApiVersion::default();
                v.api_key = *k as i16;
                v.min_version = *lo;
                v.max_version = *hi;
                v
            })
            .collect();
        ApiVersionTable::from_response(&resp)
    }

    #[test]
    fn version_pick_is_highest_common_version() {
        let t = table(&[(ApiKey::Produce, 0, 11), (ApiKey::Fetch, 13, 17)]);
        assert_eq!(t.pick(ApiKey::Produce, 3, 12).unwrap(), 11);
        assert!(t.pick(ApiKey::Fetch, 4, 12).is_err(), "topic-id-only fetch");
        assert!(t.pick(ApiKey::Metadata, 1, 12).is_err(), "unsupported API");
        assert!(t.supports(ApiKey::Fetch));
    }

    #[test]
    fn request_frames_carry_size_header_and_correlation_id() {
        use kafka_protocol::messages::MetadataRequest;
        let mut buf = BytesMut::new();
        let req = MetadataRequest::default();
        encode_frame(&mut buf, &req, 9, 42, &StrBytes::from_static_str("c")).unwrap();
        assert_eq!(be_i32(&buf, 0), Some(buf.len() as i32 - 4));
        assert_eq!(
            i16::from_be_bytes([buf[4], buf[5]]),
            ApiKey::Metadata as i16
        );
        assert_eq!(i16::from_be_bytes([buf[6], buf[7]]), 9);
        assert_eq!(be_i32(&buf, 8), Some(42));
    }

    #[test]
    fn list_offsets_retries_only_kafkas_retriable_partition_errors() {
        let err = |code| -> anyhow::Error {
            PartitionError {
                api: "ListOffsets",
                topic: "t".into(),
                partition: 0,
                code,
            }
            .into()
        };
        for code in [3, 5, 6, 78] {
            assert!(is_retriable_listing(&err(code)), "{code}");
        }
        for code in [1, 29, 87] {
            assert!(!is_retriable_listing(&err(code)), "{code}");
        }
        assert!(!is_retriable_listing(&anyhow!("ListOffsets t-0: 3 x")));
        assert_eq!(
            err(3).to_string(),
            "ListOffsets t-0: 3 UnknownTopicOrPartition"
        );
    }

    #[test]
    fn error_labels_name_kafka_codes() {
        assert_eq!(error_label(6), "6 NotLeaderOrFollower");
        assert_eq!(error_label(0), "0 None");
        assert_eq!(error_label(-7000), "-7000 Unknown");
    }
}
