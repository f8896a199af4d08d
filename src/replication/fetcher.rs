//! `[drv]` Replica fetchers of one data shard (Kafka's
//! `ReplicaFetcherManager` and `ReplicaFetcherThread`).
//!
//! [`FetcherManager::on_followers`] takes the full set of partitions this
//! shard follows (after every metadata sync) and moves each under the
//! fetcher of its leader: `num.replica.fetchers` fetchers per leader
//! broker on each shard, a partition going to fetcher
//! [`state::fetcher_id`] (Kafka's `AbstractFetcherManager.getFetcherId`);
//! a fetcher left without partitions stops. A fetcher task owns one
//! connection to its leader ([`conn`], SO_RCVBUF from
//! `replica.socket.receive.buffer.bytes`) and loops:
//! 1. partitions new to it (or whose leader epoch changed) truncate first
//!    (KIP-101/279): OffsetForLeaderEpoch v≤4 for our latest epoch, cut to
//!    what [`truncation::offset_truncation_state`] says, repeated until
//!    the histories agree; a leader without that API is fetched from our
//!    LEO and Fetch v12+'s `diverging_epoch` drives truncation instead;
//! 2. one Fetch (v≤17, `replica.fetch.*` settings, `ReplicaState` v15+,
//!    topic ids v13+, `current_leader_epoch`, `last_fetched_epoch`) for
//!    every ready partition; sessionless (epoch -1) unless
//!    `shardlog.replica.fetch.session.enable` is on, then in a KIP-227 fetch
//!    session ([`session`], Kafka's `FetchSessionHandler`): a full fetch
//!    asking for a session, then incremental ones listing only changed, added and forgotten
//!    partitions; a session error from the leader makes the next fetch
//!    full, at once, on the same connection. Records are appended as
//!    follower on this shard, HW = min(leader HW, LEO), log start =
//!    max(ours, leader's);
//! 3. per-partition errors: diverging epoch → truncate; OFFSET_OUT_OF_RANGE
//!    → ListOffsets (Kafka's `handleOutOfRangeError`); leadership errors →
//!    `replica.fetch.backoff.ms` until new metadata re-adds the partition.
//!    A connection error or malformed answer drops the connection and
//!    reconnects after the backoff (the next fetch is full); nothing a
//!    leader sends panics.
//!
//! Which partitions to follow, from each metadata snapshot, is
//! [`targets`].
//!
//! Replication quotas (`follower.replication.throttled.rate`,
//! `replication::quota`): over the bound, throttled partitions out of the
//! ISR are left out of fetches; their bytes are counted as they arrive.
//!
//! Lag (`FetcherLagMetrics`) is kept per partition in the fetch state and
//! read by a `/metrics` scrape ([`metrics`]).
//!
//! Not yet: a broker epoch in `ReplicaState` (-1, which
//! a 3.9 leader accepts).

pub mod conn;
pub mod metrics;
pub mod session;
pub mod state;
pub mod targets;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol_39::messages::fetch_request::{
    FetchPartition, FetchRequest, FetchTopic, ForgottenTopic, ReplicaState,
};
use kafka_protocol_39::messages::fetch_response::FetchResponse;
use kafka_protocol_39::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsRequest, ListOffsetsTopic,
};
use kafka_protocol_39::messages::list_offsets_response::ListOffsetsResponse;
use kafka_protocol_39::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderEpochRequest, OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol_39::messages::offset_for_leader_epoch_response::OffsetForLeaderEpochResponse;
use kafka_protocol_39::messages::{ApiKey, BrokerId as WireBrokerId, TopicName};
use kafka_protocol_39::protocol::StrBytes;

use self::conn::LeaderConn;
use self::session::{FetchSession, PartitionRequest, SessionFetch, SessionVerdict};
use self::state::{classify, fetcher_id, FetchOutcome, FetchSettings, FetcherState};
pub use self::targets::{settings_of, targets_of, FollowTarget};
use super::partition::Partition;
use super::quota::{ReplicationQuotas, Side};
use super::truncation::{self, OutOfRangeAction};
use crate::config::ServerConfig;
use crate::io::clock::Clock;
use crate::io::local_sync::Notify;
use crate::storage::StorageError;
use crate::types::{BrokerId, TopicPartition};

/// Error a round of the fetch loop ends with: the connection goes.
type RoundResult = std::io::Result<()>;

struct Fetcher {
    leader: BrokerId,
    /// `num.replica.fetchers`: which of this leader's fetchers (Kafka's
    /// fetcher id, in the client id `broker-<me>-fetcher-<id>`).
    fetcher_id: i32,
    address: RefCell<String>,
    state: RefCell<FetcherState>,
    /// KIP-227 session with the leader (one per connection's lifetime).
    session: RefCell<FetchSession>,
    parts: RefCell<BTreeMap<TopicPartition, Rc<Partition>>>,
    wake: Notify,
    stopped: Cell<bool>,
    /// Bumped when the address changes: the task reconnects.
    generation: Cell<u64>,
    settings: FetchSettings,
    socket_timeout: Duration,
    max_response_bytes: usize,
    clock: Rc<dyn Clock>,
    /// The partitions of this fetcher the follower quota throttles.
    throttled: RefCell<BTreeSet<TopicPartition>>,
    /// Those being reassigned with this broker as an adding replica.
    adding: RefCell<BTreeSet<TopicPartition>>,
    /// The shard's [`metrics::BytesIn`], shared by its fetchers.
    bytes_in: Rc<Cell<metrics::BytesIn>>,
    /// Its Fetch requests (Kafka's `FetcherStats` `RequestsPerSec`).
    requests: metrics::RequestRate,
    quotas: Arc<ReplicationQuotas>,
    /// The inter-broker listener's TLS client configuration (`None`:
    /// PLAINTEXT).
    tls: crate::io::broker_stream::BrokerLink,
}

/// The fetchers of one data shard.
pub struct FetcherManager {
    settings: FetchSettings,
    socket_timeout: Duration,
    /// Per (leader, fetcher id): Kafka's `BrokerIdAndFetcherId`.
    fetchers: RefCell<BTreeMap<(BrokerId, i32), Rc<Fetcher>>>,
    clock: Rc<dyn Clock>,
    bytes_in: Rc<Cell<metrics::BytesIn>>,
    quotas: Arc<ReplicationQuotas>,
    /// The inter-broker listener's TLS client configuration.
    tls: crate::io::broker_stream::BrokerLink,
}

impl FetcherManager {
    /// The fetchers of `server`'s `replica.*` settings.
    pub fn new(
        server: &ServerConfig,
        clock: Rc<dyn Clock>,
        quotas: Arc<ReplicationQuotas>,
        tls: crate::io::broker_stream::BrokerLink,
    ) -> Self {
        let socket_timeout_ms = i64::from(server.replica_socket_timeout_ms);
        Self {
            settings: settings_of(server),
            tls,
            socket_timeout: Duration::from_millis(socket_timeout_ms.max(1) as u64),
            fetchers: RefCell::new(BTreeMap::new()),
            clock,
            bytes_in: Rc::default(),
            quotas,
        }
    }

    /// Partitions followed now, with their leaders (for tests and logs).
    pub fn followed(&self) -> Vec<(TopicPartition, BrokerId)> {
        let mut out = Vec::new();
        for ((leader, _), f) in self.fetchers.borrow().iter() {
            for tp in f.parts.borrow().keys() {
                out.push((tp.clone(), *leader));
            }
        }
        out.sort();
        out
    }

    /// The whole set this shard follows now (Kafka's
    /// `addFetcherForPartitions` / `removeFetcherForPartitions` after a
    /// LeaderAndIsr): partitions that left it, or changed leader, leave
    /// their fetcher; new ones (and new leader epochs) join their leader's
    /// fetcher and truncate before fetching.
    pub fn on_followers(&self, targets: Vec<FollowTarget>) {
        let mut wanted: BTreeMap<TopicPartition, FollowTarget> = BTreeMap::new();
        for t in targets {
            // A partition without a live leader waits for the next metadata.
            if t.leader.0 < 0 || t.leader_address.is_none() {
                continue;
            }
            wanted.insert(t.partition.tp.clone(), t);
        }
        let n = self.settings.num_fetchers;
        let mut fetchers = self.fetchers.borrow_mut();
        for ((leader, id), f) in fetchers.iter() {
            let gone: Vec<TopicPartition> = f
                .parts
                .borrow()
                .keys()
                .filter(|tp| {
                    wanted
                        .get(*tp)
                        .is_none_or(|t| t.leader != *leader || fetcher_id(tp, n) != *id)
                })
                .cloned()
                .collect();
            for tp in gone {
                f.parts.borrow_mut().remove(&tp);
                f.throttled.borrow_mut().remove(&tp);
                f.adding.borrow_mut().remove(&tp);
                f.state.borrow_mut().on_remove(&tp);
            }
        }
        for (tp, t) in wanted {
            let Some(address) = t.leader_address.clone() else {
                continue;
            };
            let id = fetcher_id(&tp, n);
            let f = fetchers
                .entry((t.leader, id))
                .or_insert_with(|| self.start_fetcher(t.leader, id, address.clone()))
                .clone();
            if *f.address.borrow() != address {
                *f.address.borrow_mut() = address;
                f.generation.set(f.generation.get() + 1);
            }
            let added =
                f.state
                    .borrow_mut()
                    .on_add(tp.clone(), t.partition.topic_id, t.leader_epoch);
            for (set, on) in [(&f.throttled, t.throttled), (&f.adding, t.adding_me)] {
                if on {
                    set.borrow_mut().insert(tp.clone());
                } else {
                    set.borrow_mut().remove(&tp);
                }
            }
            f.parts.borrow_mut().insert(tp, t.partition.clone());
            if added {
                f.wake.notify();
            }
        }
        fetchers.retain(|_, f| {
            let keep = !f.parts.borrow().is_empty();
            if !keep {
                f.stopped.set(true);
                f.wake.notify();
            }
            keep
        });
    }

    /// `tps` are no longer hosted here (StopReplica with delete).
    pub fn on_removed(&self, tps: &[TopicPartition]) {
        let mut fetchers = self.fetchers.borrow_mut();
        for f in fetchers.values() {
            for tp in tps {
                f.parts.borrow_mut().remove(tp);
                f.state.borrow_mut().on_remove(tp);
            }
        }
        fetchers.retain(|_, f| {
            let keep = !f.parts.borrow().is_empty();
            if !keep {
                f.stopped.set(true);
                f.wake.notify();
            }
            keep
        });
    }

    /// Stop every fetcher (shutdown).
    pub fn shutdown(&self) {
        for f in self.fetchers.borrow().values() {
            f.stopped.set(true);
            // The task may outlive this call (a fetch in flight): it must
            // not keep the partitions, which the close needs alone.
            f.parts.borrow_mut().clear();
            f.wake.notify();
        }
        self.fetchers.borrow_mut().clear();
    }

    fn start_fetcher(&self, leader: BrokerId, fetcher_id: i32, address: String) -> Rc<Fetcher> {
        let f = Rc::new(Fetcher {
            leader,
            fetcher_id,
            address: RefCell::new(address),
            state: RefCell::new(FetcherState::new()),
            session: RefCell::new(FetchSession::new()),
            parts: RefCell::new(BTreeMap::new()),
            wake: Notify::default(),
            stopped: Cell::new(false),
            generation: Cell::new(0),
            settings: self.settings,
            socket_timeout: self.socket_timeout,
            // The whole response plus headroom for per-partition framing.
            max_response_bytes: (self.settings.max_bytes.max(0) as usize)
                .saturating_add(self.settings.partition_max_bytes.max(0) as usize)
                .saturating_add(1 << 20),
            clock: self.clock.clone(),
            throttled: RefCell::new(BTreeSet::new()),
            adding: RefCell::new(BTreeSet::new()),
            bytes_in: self.bytes_in.clone(),
            requests: metrics::RequestRate::new(self.clock.mono_ms()),
            quotas: self.quotas.clone(),
            tls: self.tls.clone(),
        });
        tracing::info!(leader = %leader, fetcher_id, "replica fetcher started");
        glommio::spawn_local(run(f.clone())).detach();
        f
    }
}

/// The fetcher task.
async fn run(f: Rc<Fetcher>) {
    let mut conn: Option<(u64, LeaderConn)> = None;
    let backoff = Duration::from_millis(f.settings.backoff_ms.max(1) as u64);
    loop {
        if f.stopped.get() {
            tracing::info!(leader = %f.leader, fetcher_id = f.fetcher_id, "replica fetcher stopped");
            return;
        }
        if f.state.borrow().is_empty() {
            f.wake.notified().await;
            continue;
        }
        if conn.as_ref().is_some_and(|(g, _)| *g != f.generation.get()) {
            conn = None;
        }
        if conn.is_none() {
            let addr = f.address.borrow().clone();
            let client_id = format!("broker-{}-fetcher-{}", f.settings.replica_id, f.fetcher_id);
            let connect = LeaderConn::connect(
                &addr,
                client_id,
                f.max_response_bytes,
                f.settings.socket_receive_buffer_bytes,
                &f.tls,
            );
            match glommio::timer::timeout(f.socket_timeout, async {
                connect.await.map_err(glommio::GlommioError::IoError)
            })
            .await
            {
                Ok(c) => {
                    tracing::info!(leader = %f.leader, fetcher_id = f.fetcher_id, %addr, versions = ?c.versions, receive_buffer_bytes = ?c.receive_buffer_bytes(), "replica fetcher connected");
                    // A new connection starts over with a full fetch.
                    f.session.borrow_mut().on_error();
                    conn = Some((f.generation.get(), c));
                }
                Err(e) => {
                    tracing::warn!(leader = %f.leader, %addr, error = %e, "cannot reach the leader; backing off");
                    glommio::timer::sleep(backoff).await;
                    continue;
                }
            }
        }
        let Some((_, c)) = conn.as_mut() else {
            continue;
        };
        if let Err(e) = round(&f, c).await {
            tracing::warn!(leader = %f.leader, error = %e, "replica fetch failed; reconnecting after backoff");
            conn = None;
            glommio::timer::sleep(backoff).await;
        }
    }
}

/// A call bounded by `replica.socket.timeout.ms`.
async fn timed<T>(
    f: &Fetcher,
    fut: impl std::future::Future<Output = std::io::Result<T>>,
) -> std::io::Result<T> {
    glommio::timer::timeout(f.socket_timeout, async {
        fut.await.map_err(glommio::GlommioError::IoError)
    })
    .await
    .map_err(std::io::Error::from)
}

/// One loop turn: truncations due, then one fetch (or a wait).
async fn round(f: &Rc<Fetcher>, c: &mut LeaderConn) -> RoundResult {
    let now = f.clock.mono_ms();
    let due = f.state.borrow().to_truncate(now);
    if !due.is_empty() {
        truncate_partitions(f, c, due).await?;
    }
    let now = f.clock.mono_ms();
    let mut ready = f.state.borrow().fetchable(now);
    // Follower-side replication quota (`shouldFollowerThrottle`): over
    // the bound, throttled partitions out of the ISR stay out of the fetch.
    if !ready.is_empty() && f.quotas.is_exceeded(Side::Follower, f.clock.wall_ms()) {
        let throttled = f.throttled.borrow();
        ready.retain(|(tp, _)| !throttled.contains(tp));
    }
    if ready.is_empty() && f.session.borrow().must_forget() {
        // Partitions backing off leave the session now (as Kafka's fetcher
        // does), so that they come back as added, read afresh.
        return fetch_once(f, c, ready).await;
    }
    if ready.is_empty() {
        let wait = match f.state.borrow().next_ready_ms() {
            Some(t) if t > now => (t - now) as u64,
            _ => f.settings.backoff_ms.max(1) as u64,
        };
        let sleep = glommio::timer::sleep(Duration::from_millis(wait));
        futures_lite::future::or(sleep, f.wake.notified()).await;
        return Ok(());
    }
    fetch_once(f, c, ready).await
}

fn wire_tp(tp: &TopicPartition) -> TopicName {
    TopicName(StrBytes::from_string(tp.topic.to_string()))
}

/// KIP-101/279 truncation of `due` partitions (one OffsetForLeaderEpoch
/// for all of them per step).
async fn truncate_partitions(
    f: &Rc<Fetcher>,
    c: &mut LeaderConn,
    due: Vec<(TopicPartition, state::PartitionFetchState)>,
) -> RoundResult {
    let mut asks: Vec<(TopicPartition, i32, i32)> = Vec::new();
    for (tp, s) in due {
        let Some(p) = f.parts.borrow().get(&tp).cloned() else {
            continue;
        };
        let local = match p.follower_log_state().await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(%tp, error = %e, "follower log unreadable; backing off");
                delay(f, &tp);
                continue;
            }
        };
        let ask = match s.phase {
            state::FetchPhase::Truncating { ask_epoch: Some(e) } => e,
            _ => local.latest_epoch,
        };
        if ask < 0 || c.versions.offset_for_leader_epoch.is_none() {
            if ask >= 0 {
                tracing::warn!(%tp, leader = %f.leader, "leader lacks OffsetForLeaderEpoch; fetching from the LEO, diverging_epoch decides");
            }
            f.state.borrow_mut().on_fetch_from(
                &tp,
                local.log_end_offset,
                local.latest_epoch,
                local.log_start_offset,
            );
            continue;
        }
        asks.push((tp, s.leader_epoch, ask));
    }
    let Some(version) = c.versions.offset_for_leader_epoch else {
        return Ok(());
    };
    if asks.is_empty() {
        return Ok(());
    }
    let mut topics: BTreeMap<String, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
    for (tp, current, ask) in &asks {
        topics.entry(tp.topic.to_string()).or_default().push(
            OffsetForLeaderPartition::default()
                .with_partition(tp.partition)
                .with_current_leader_epoch(*current)
                .with_leader_epoch(*ask),
        );
    }
    let request = OffsetForLeaderEpochRequest::default()
        .with_replica_id(WireBrokerId(f.settings.replica_id))
        .with_topics(
            topics
                .into_iter()
                .map(|(t, ps)| {
                    OffsetForLeaderTopic::default()
                        .with_topic(TopicName(StrBytes::from_string(t)))
                        .with_partitions(ps)
                })
                .collect(),
        );
    let resp: OffsetForLeaderEpochResponse =
        timed(f, c.call(ApiKey::OffsetForLeaderEpoch, version, &request)).await?;
    for topic in resp.topics {
        for r in topic.partitions {
            let tp = TopicPartition::new(topic.topic.0.to_string(), r.partition);
            if !asks.iter().any(|(t, _, _)| *t == tp) {
                continue;
            }
            if r.error_code != 0 {
                tracing::info!(%tp, error_code = r.error_code, "OffsetForLeaderEpoch refused; backing off");
                delay(f, &tp);
                continue;
            }
            apply_leader_epoch_answer(f, &tp, r.leader_epoch, r.end_offset).await;
        }
    }
    Ok(())
}

fn delay(f: &Fetcher, tp: &TopicPartition) {
    let until = f.clock.mono_ms() + f.settings.backoff_ms;
    f.state.borrow_mut().on_delay(tp, until);
}

/// Truncate `tp` by the leader's (epoch, end offset) answer (from
/// OffsetForLeaderEpoch or a fetch's `diverging_epoch`).
async fn apply_leader_epoch_answer(f: &Fetcher, tp: &TopicPartition, epoch: i32, end: i64) {
    let Some(p) = f.parts.borrow().get(tp).cloned() else {
        return;
    };
    let (local, epochs) = match p.follower_log_state().await {
        Ok(l) => (l, p.leader_epoch_cache().await),
        Err(_) => return delay(f, tp),
    };
    let st = truncation::offset_truncation_state(
        &epochs,
        local.log_end_offset,
        local.high_watermark,
        epoch,
        end,
    );
    if let Err(e) = p.truncate_as_follower(st.offset).await {
        tracing::error!(%tp, error = %e, "follower truncation failed");
        return delay(f, tp);
    }
    match (st.completed, st.next_epoch) {
        (false, Some(next)) => f.state.borrow_mut().on_truncate_again(tp, next),
        _ => {
            if let Ok(l) = p.follower_log_state().await {
                tracing::info!(%tp, leo = l.log_end_offset, "follower truncation done; fetching");
                f.state.borrow_mut().on_fetch_from(
                    tp,
                    l.log_end_offset,
                    l.latest_epoch,
                    l.log_start_offset,
                );
            }
        }
    }
}

/// What `ready` partitions ask for, as the session compares them.
fn partition_requests(
    f: &Fetcher,
    version: i16,
    ready: &[(TopicPartition, state::PartitionFetchState)],
) -> Vec<(TopicPartition, PartitionRequest)> {
    ready
        .iter()
        .map(|(tp, st)| {
            let req = PartitionRequest {
                topic_id: if version >= 13 {
                    st.topic_id
                } else {
                    uuid::Uuid::nil()
                },
                fetch_offset: st.fetch_offset,
                log_start_offset: st.log_start_offset,
                partition_max_bytes: f.settings.partition_max_bytes,
                current_leader_epoch: if version >= 9 { st.leader_epoch } else { -1 },
                last_fetched_epoch: if version >= 12 {
                    st.last_fetched_epoch
                } else {
                    -1
                },
            };
            (tp.clone(), req)
        })
        .collect()
}

/// The Fetch request for a session's `plan` (`ReplicaFetcherThread.buildFetch`).
fn build_fetch(f: &Fetcher, version: i16, plan: &SessionFetch) -> FetchRequest {
    let s = &f.settings;
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (tp, r) in &plan.to_send {
        let part = FetchPartition::default()
            .with_partition(tp.partition)
            .with_current_leader_epoch(r.current_leader_epoch)
            .with_fetch_offset(r.fetch_offset)
            .with_last_fetched_epoch(r.last_fetched_epoch)
            .with_log_start_offset(r.log_start_offset)
            .with_partition_max_bytes(r.partition_max_bytes);
        let same = topics.last().is_some_and(|t| {
            if version >= 13 {
                t.topic_id == r.topic_id
            } else {
                t.topic.0.as_str() == &*tp.topic
            }
        });
        match topics.last_mut() {
            Some(t) if same => t.partitions.push(part),
            _ => {
                let t = if version >= 13 {
                    FetchTopic::default().with_topic_id(r.topic_id)
                } else {
                    FetchTopic::default().with_topic(wire_tp(tp))
                };
                topics.push(t.with_partitions(vec![part]));
            }
        }
    }
    let mut forgotten: Vec<ForgottenTopic> = Vec::new();
    for (tp, id) in &plan.forgotten {
        let same = forgotten.last().is_some_and(|t| {
            if version >= 13 {
                t.topic_id == *id
            } else {
                t.topic.0.as_str() == &*tp.topic
            }
        });
        match forgotten.last_mut() {
            Some(t) if same => t.partitions.push(tp.partition),
            _ => {
                let t = if version >= 13 {
                    ForgottenTopic::default().with_topic_id(*id)
                } else {
                    ForgottenTopic::default().with_topic(wire_tp(tp))
                };
                forgotten.push(t.with_partitions(vec![tp.partition]));
            }
        }
    }
    let mut req = FetchRequest::default()
        .with_max_wait_ms(s.max_wait_ms)
        .with_min_bytes(s.min_bytes)
        .with_max_bytes(s.max_bytes)
        .with_isolation_level(0)
        .with_session_id(plan.session_id)
        .with_session_epoch(plan.session_epoch)
        .with_topics(topics)
        .with_forgotten_topics_data(forgotten);
    if version >= 15 {
        req = req.with_replica_state(
            ReplicaState::default()
                .with_replica_id(WireBrokerId(s.replica_id))
                .with_replica_epoch(s.broker_epoch),
        );
    } else {
        req = req.with_replica_id(WireBrokerId(s.replica_id));
    }
    req
}

/// The partition of `ready` an answer names (by topic id from v13 on).
fn answered_tp<'a>(
    ready: &'a [(TopicPartition, state::PartitionFetchState)],
    version: i16,
    topic: &kafka_protocol_39::messages::fetch_response::FetchableTopicResponse,
    partition: i32,
) -> Option<&'a (TopicPartition, state::PartitionFetchState)> {
    ready.iter().find(|(tp, st)| {
        tp.partition == partition
            && if version >= 13 {
                st.topic_id == topic.topic_id
            } else {
                topic.topic.0.as_str() == &*tp.topic
            }
    })
}

async fn fetch_once(
    f: &Rc<Fetcher>,
    c: &mut LeaderConn,
    ready: Vec<(TopicPartition, state::PartitionFetchState)>,
) -> RoundResult {
    // Topic ids name topics from v13 on; a partition whose topic has none
    // (hosted from an old LeaderAndIsr) is fetched by name, at v12 (as
    // Kafka's `ReplicaFetcherThread.buildFetch` falls back).
    let by_name = if ready.is_empty() {
        // A forget-only fetch names topics as the session does.
        !f.session.borrow().by_topic_id()
    } else {
        ready.iter().any(|(_, s)| s.topic_id.is_nil())
    };
    let version = if by_name {
        c.versions.fetch.min(12)
    } else {
        c.versions.fetch
    };
    // Fetch v7+ carries KIP-227 sessions (when `shardlog.replica.fetch.session.enable`
    // asks for them); otherwise every fetch is full and sessionless (epoch -1).
    let sessions = version >= 7 && f.settings.sessions;
    let plan = if sessions {
        let wanted = partition_requests(f, version, &ready);
        f.session.borrow_mut().build(&wanted, version >= 13)
    } else {
        SessionFetch {
            session_id: session::INVALID_SESSION_ID,
            session_epoch: session::FINAL_EPOCH,
            to_send: partition_requests(f, version, &ready),
            forgotten: Vec::new(),
        }
    };
    let request = build_fetch(f, version, &plan);
    f.requests.mark();
    let resp: FetchResponse = match timed(f, c.call(ApiKey::Fetch, version, &request)).await {
        Ok(r) => r,
        Err(e) => {
            f.session.borrow_mut().on_error();
            return Err(e);
        }
    };
    if sessions {
        let mut answered = Vec::new();
        for topic in &resp.responses {
            for part in &topic.partitions {
                match answered_tp(&ready, version, topic, part.partition_index) {
                    Some((tp, _)) => answered.push(tp.clone()),
                    // Not a partition we asked for: makes the answer extra.
                    None => answered.push(TopicPartition::new("", -1)),
                }
            }
        }
        let before = f.session.borrow().session_id();
        let verdict = f.session.borrow_mut().on_response(
            resp.error_code,
            resp.session_id,
            resp.throttle_time_ms,
            &answered,
        );
        let after = f.session.borrow().session_id();
        if after != before && after != session::INVALID_SESSION_ID {
            tracing::info!(leader = %f.leader, fetcher_id = f.fetcher_id, session_id = after, "fetch session established");
        }
        match verdict {
            SessionVerdict::Process => {}
            SessionVerdict::Reset => {
                // Kafka's FetchSessionHandler: the next fetch is a full
                // one, at once; the connection stays.
                tracing::info!(leader = %f.leader, fetcher_id = f.fetcher_id, error_code = resp.error_code, session_id = before, "fetch session reset; fetching in full");
                return Ok(());
            }
            SessionVerdict::Invalid => {
                tracing::warn!(leader = %f.leader, error_code = resp.error_code, "fetch answer not usable; next fetch is full");
                for (tp, _) in &ready {
                    delay(f, tp);
                }
                return Ok(());
            }
        }
    } else if resp.error_code != 0 {
        tracing::warn!(leader = %f.leader, error_code = resp.error_code, "fetch refused as a whole");
        for (tp, _) in &ready {
            delay(f, tp);
        }
        return Ok(());
    }
    for mut topic in resp.responses {
        let parts = std::mem::take(&mut topic.partitions);
        for part in parts {
            let Some((tp, sent)) =
                answered_tp(&ready, version, &topic, part.partition_index).cloned()
            else {
                continue;
            };
            // The partition may have moved or restarted truncating while
            // the fetch was out: its answer is stale then.
            let current = f.state.borrow().get(&tp).copied();
            if current.is_none_or(|s| s != sent) {
                continue;
            }
            on_partition_data(f, c, &tp, part).await?;
        }
    }
    Ok(())
}

async fn on_partition_data(
    f: &Rc<Fetcher>,
    c: &mut LeaderConn,
    tp: &TopicPartition,
    part: kafka_protocol_39::messages::fetch_response::PartitionData,
) -> RoundResult {
    let Some(p) = f.parts.borrow().get(tp).cloned() else {
        return Ok(());
    };
    match classify(
        part.error_code,
        part.diverging_epoch.epoch,
        part.diverging_epoch.end_offset,
    ) {
        FetchOutcome::Append => {
            let now = f.clock.wall_ms();
            let high_watermark = part.high_watermark;
            let bytes = part.records.as_ref().map_or(0, |r| r.len());
            // Kafka's `processPartitionData`: a throttled partition's
            // bytes count against the follower quota.
            if f.throttled.borrow().contains(tp) {
                f.quotas.record(Side::Follower, bytes, now);
            }
            match p
                .append_as_follower(
                    part.records,
                    part.high_watermark,
                    part.log_start_offset,
                    now,
                )
                .await
            {
                Ok(a) => {
                    metrics::count_bytes_in(&f.bytes_in, f.adding.borrow().contains(tp), bytes);
                    let log_start = p
                        .follower_log_state()
                        .await
                        .map_or(-1, |l| l.log_start_offset);
                    let mut state = f.state.borrow_mut();
                    state.on_fetch_from(tp, a.log_end_offset, a.latest_epoch, log_start);
                    state.on_lag(tp, high_watermark);
                }
                Err(StorageError::Follower(e)) => {
                    tracing::warn!(%tp, error = %e, "leader batches out of order; refetching from the LEO");
                    if let Ok(l) = p.follower_log_state().await {
                        f.state.borrow_mut().on_fetch_from(
                            tp,
                            l.log_end_offset,
                            l.latest_epoch,
                            l.log_start_offset,
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(%tp, error = %e, "follower append failed; backing off");
                    delay(f, tp);
                }
            }
        }
        FetchOutcome::Diverging { epoch, end_offset } => {
            tracing::info!(%tp, epoch, end_offset, "leader reports a diverging epoch");
            apply_leader_epoch_answer(f, tp, epoch, end_offset).await;
        }
        FetchOutcome::OutOfRange => on_out_of_range(f, c, tp, &p).await?,
        FetchOutcome::BackOff => {
            tracing::info!(%tp, error_code = part.error_code, "fetch partition error; backing off");
            delay(f, tp);
        }
    }
    Ok(())
}

/// Kafka's `handleOutOfRangeError`: ask the leader its LEO and log start
/// (ListOffsets as replica: latest = its LEO) and act as
/// [`truncation::on_out_of_range`] says.
async fn on_out_of_range(
    f: &Rc<Fetcher>,
    c: &mut LeaderConn,
    tp: &TopicPartition,
    p: &Rc<Partition>,
) -> RoundResult {
    let Some(version) = c.versions.list_offsets else {
        delay(f, tp);
        return Ok(());
    };
    let epoch = f.state.borrow().get(tp).map_or(-1, |s| s.leader_epoch);
    let mut ends = [-1i64; 2];
    for (i, ts) in [-1i64, -2].into_iter().enumerate() {
        let part = ListOffsetsPartition::default()
            .with_partition_index(tp.partition)
            .with_current_leader_epoch(if version >= 4 { epoch } else { -1 })
            .with_timestamp(ts);
        let req = ListOffsetsRequest::default()
            .with_replica_id(WireBrokerId(f.settings.replica_id))
            .with_topics(vec![ListOffsetsTopic::default()
                .with_name(wire_tp(tp))
                .with_partitions(vec![part])]);
        let resp: ListOffsetsResponse =
            timed(f, c.call(ApiKey::ListOffsets, version, &req)).await?;
        let answer = resp
            .topics
            .iter()
            .flat_map(|t| t.partitions.iter())
            .find(|r| r.partition_index == tp.partition);
        match answer {
            Some(r) if r.error_code == 0 => ends[i] = r.offset,
            _ => {
                delay(f, tp);
                return Ok(());
            }
        }
    }
    let Ok(local) = p.follower_log_state().await else {
        delay(f, tp);
        return Ok(());
    };
    let action = truncation::on_out_of_range(local.log_end_offset, ends[0], ends[1]);
    tracing::warn!(%tp, leo = local.log_end_offset, leader_leo = ends[0], leader_start = ends[1], ?action, "fetch offset out of range");
    let result = match action {
        OutOfRangeAction::TruncateTo(o) => p.truncate_as_follower(o).await,
        OutOfRangeAction::TruncateFullyAndStartAt(o) => p.truncate_fully_as_follower(o).await,
        OutOfRangeAction::FetchFrom(o) => Ok(o),
    };
    match (result, p.follower_log_state().await) {
        (Ok(_), Ok(l)) => f.state.borrow_mut().on_fetch_from(
            tp,
            l.log_end_offset,
            l.latest_epoch,
            l.log_start_offset,
        ),
        _ => delay(f, tp),
    }
    Ok(())
}
