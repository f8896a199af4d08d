//! `[drv]` Runs a data shard's transaction coordinator ([`TxnHost`]):
//! serving [`TxnCall`]s, the appender, timer and worker tasks (producer
//! ids, markers), loading and unloading `__transaction_state` partitions
//! on every snapshot, and the connection side that sends a call to its
//! coordinator's shard.

use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;
use std::time::Duration;

use glommio::channels::local_channel;
use kafka_protocol_39::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic, WriteTxnMarkersRequest,
};
use kafka_protocol_39::messages::write_txn_markers_response::WriteTxnMarkersResponse;
use kafka_protocol_39::messages::{ApiKey, ProducerId, TopicName};
use kafka_protocol_39::protocol::StrBytes;

use super::txn_host::{DescribedTxn, ListedTxn, MarkerJob, TxnCall, TxnHost, TxnReply};
use crate::controller::admin_requests::{AdminRequest, AdminResponse};
use crate::controller::image::TRANSACTION_STATE_TOPIC;
use crate::protocol::ErrorCode;
use crate::shard::context::{ShardContext, ShardRequest, ShardResponse};
use crate::shard::data_shard::{DataRequest, DataResponse};
use crate::shard::datapath::futures_join_all;
use crate::shard::group::internal_log::{self, Replayed};
use crate::txn::coordinator::partition_for;
use crate::types::{partitions_by_topic, BrokerId, TopicPartition};

/// Wait before loading a partition again after a failed load, and between
/// marker retries.
const RETRY: Duration = Duration::from_millis(200);

/// A shard's side of its transaction coordinator: serving a transaction
/// call here, following snapshots, sending a connection's call to the
/// coordinator's shard ([`ShardContext::txn_driver`]).
pub struct TxnDriver {
    ctx: Rc<ShardContext>,
}

impl TxnDriver {
    pub fn new(ctx: &Rc<ShardContext>) -> Self {
        Self { ctx: ctx.clone() }
    }

    /// Serve a transaction call on this shard.
    pub async fn serve_txn_call(&self, call: TxnCall) -> TxnReply {
        let Some(host) = self.ctx.data().map(|d| d.txns.clone()) else {
            return TxnReply::NotCoordinator;
        };
        start_tasks(&self.ctx, &host);
        let now = self.ctx.clock.wall_ms();
        let id = host.next_waiter.get() + 1;
        host.next_waiter.set(id);
        let actions = {
            let mut core = host.core.borrow_mut();
            match call {
                TxnCall::Describe(ids) => return TxnReply::Described(describe(&core, &ids)),
                TxnCall::Verify {
                    txn_id,
                    producer_id,
                    epoch,
                    partitions,
                } => {
                    let codes = core.verify_partitions(&txn_id, producer_id, epoch, &partitions);
                    return TxnReply::Verified(codes);
                }
                TxnCall::List {
                    states,
                    producer_ids,
                    min_duration_ms,
                } => {
                    let filter = ListFilter {
                        states: &states,
                        producer_ids: &producer_ids,
                        min_duration_ms,
                        now_ms: now,
                    };
                    return TxnReply::Listed(list(&core, &filter));
                }
                TxnCall::InitProducerId {
                    txn_id,
                    timeout_ms,
                    expected,
                } => core.on_init_producer_id(id, &txn_id, timeout_ms, expected, now),
                TxnCall::AddPartitions {
                    txn_id,
                    producer_id,
                    epoch,
                    partitions,
                } => core.on_add_partitions(id, &txn_id, producer_id, epoch, partitions, now),
                TxnCall::EndTxn {
                    txn_id,
                    producer_id,
                    epoch,
                    commit,
                } => core.on_end_txn(id, &txn_id, producer_id, epoch, commit, now),
            }
        };
        let (tx, rx) = local_channel::new_bounded(1);
        host.waiters.borrow_mut().insert(id, tx);
        host.execute(actions);
        let reply = rx.recv().await;
        host.waiters.borrow_mut().remove(&id);
        reply.unwrap_or(TxnReply::NotCoordinator)
    }

    /// After a snapshot is applied: load the `__transaction_state`
    /// partitions this shard now leads, unload the ones it lost.
    pub fn on_txn_snapshot(&self) {
        let Some(data) = self.ctx.data() else { return };
        let host = data.txns.clone();
        let snapshot = self.ctx.snapshot();
        let me = BrokerId(self.ctx.config.broker_id);
        // As the group coordinator (`on_group_snapshot`): ids are mapped
        // with the whole topic's partition count, the one FindCoordinator
        // uses, never with the count of partitions hosted here; nothing
        // loads before the cluster view names the topic.
        let count = snapshot.cluster_partition_count(TRANSACTION_STATE_TOPIC);
        if let Some(n) = count {
            host.core.borrow_mut().set_partition_count(n);
        }
        let hosted = snapshot
            .hosted_topic(TRANSACTION_STATE_TOPIC)
            .filter(|_| count.is_some());
        let mine: HashMap<i32, i32> = match hosted {
            Some(t) => t
                .partitions
                .iter()
                .filter(|p| {
                    p.leader == me
                        && self.ctx.owner_of(TRANSACTION_STATE_TOPIC, p.partition)
                            == self.ctx.peer_id()
                })
                .map(|p| (p.partition, p.leader_epoch.0))
                .collect(),
            None => HashMap::new(),
        };
        let owned: BTreeSet<i32> = (0..host.core.borrow().partition_count())
            .filter(|p| host.core.borrow().is_loaded(*p) || host.loading.borrow().contains(p))
            .collect();
        for p in owned.iter().filter(|p| !mine.contains_key(p)) {
            let actions = host.core.borrow_mut().unload(*p);
            host.execute(actions);
        }
        for (&p, &epoch) in &mine {
            if owned.contains(&p) || !host.loading.borrow_mut().insert(p) {
                continue;
            }
            host.core.borrow_mut().begin_load(p);
            start_tasks(&self.ctx, &host);
            let ctx = self.ctx.clone();
            let host = host.clone();
            glommio::spawn_local(async move {
                let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC, p);
                let mut records = Vec::new();
                let loaded = internal_log::replay(&ctx, &tp, epoch, |item| match item {
                    Replayed::Record { key, value, .. } => {
                        records.push((key.to_vec(), value.map(<[u8]>::to_vec)));
                        true
                    }
                    Replayed::Marker { .. } => false,
                })
                .await;
                host.loading.borrow_mut().remove(&p);
                match loaded {
                    Ok(n) => {
                        let actions = host.core.borrow_mut().on_loaded(p, epoch, &records);
                        host.execute(actions);
                        tracing::debug!(partition = p, records = n, "transaction coordinator loaded partition");
                    }
                    Err(e) => {
                        let actions = host.core.borrow_mut().unload(p);
                        host.execute(actions);
                        tracing::warn!(partition = p, error = ?e, "transaction state load failed; retrying");
                        glommio::timer::sleep(RETRY).await;
                        TxnDriver::new(&ctx).on_txn_snapshot();
                    }
                }
            })
            .detach();
        }
    }

    /// Connection side: send `call` to the shard coordinating `txn_id`;
    /// NotCoordinator while `__transaction_state` does not exist.
    pub async fn ask_txn(&self, txn_id: &str, call: TxnCall) -> TxnReply {
        match self.txn_shard(txn_id) {
            Some(owner) => self.ask_shard_txn(owner, call).await,
            None => TxnReply::NotCoordinator,
        }
    }

    pub fn txn_shard(&self, txn_id: &str) -> Option<usize> {
        let n = self
            .ctx
            .snapshot()
            .cluster_partition_count(TRANSACTION_STATE_TOPIC)?;
        Some(
            self.ctx
                .owner_of(TRANSACTION_STATE_TOPIC, partition_for(txn_id, n)),
        )
    }

    /// Send `call` to shard `shard`'s transaction coordinator.
    pub async fn ask_shard_txn(&self, shard: usize, call: TxnCall) -> TxnReply {
        if shard == self.ctx.peer_id() {
            let run = std::panic::AssertUnwindSafe(self.serve_txn_call(call));
            return futures_lite::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a transaction request panicked on its coordinator");
                    TxnReply::NotCoordinator
                });
        }
        match self
            .ctx
            .call(shard, ShardRequest::Data(DataRequest::Txn(call)))
            .await
        {
            Ok(ShardResponse::Data(DataResponse::Txn(reply))) => reply,
            _ => TxnReply::NotCoordinator,
        }
    }
}

fn describe(core: &crate::txn::coordinator::Coordinator, ids: &[String]) -> Vec<DescribedTxn> {
    ids.iter()
        .map(|id| {
            let base = DescribedTxn {
                txn_id: id.clone(),
                error: ErrorCode::NONE,
                state: String::new(),
                timeout_ms: 0,
                start_ms: -1,
                producer_id: -1,
                producer_epoch: -1,
                partitions: Vec::new(),
            };
            let p = core.partition_of(id);
            if !core.is_loaded(p) {
                return DescribedTxn {
                    error: ErrorCode::NOT_COORDINATOR,
                    ..base
                };
            }
            match core.metadata(id) {
                Some(m) => DescribedTxn {
                    state: m.state().name().to_owned(),
                    timeout_ms: m.txn_timeout_ms(),
                    start_ms: m.txn_start_timestamp_ms(),
                    producer_id: m.producer_id(),
                    producer_epoch: m.producer_epoch(),
                    partitions: m.topic_partitions().iter().cloned().collect(),
                    ..base
                },
                None => DescribedTxn {
                    error: ErrorCode::TRANSACTIONAL_ID_NOT_FOUND,
                    ..base
                },
            }
        })
        .collect()
}

/// ListTransactions' filters (Kafka's `TransactionStateManager.listTransactionStates`).
struct ListFilter<'a> {
    states: &'a [String],
    producer_ids: &'a [i64],
    min_duration_ms: i64,
    now_ms: i64,
}

fn list(core: &crate::txn::coordinator::Coordinator, f: &ListFilter<'_>) -> Vec<ListedTxn> {
    core.all()
        .filter(|m| f.states.is_empty() || f.states.iter().any(|s| s == m.state().name()))
        .filter(|m| f.producer_ids.is_empty() || f.producer_ids.contains(&m.producer_id()))
        .filter(|m| {
            f.min_duration_ms < 0 || f.now_ms - m.txn_start_timestamp_ms() >= f.min_duration_ms
        })
        .map(|m| ListedTxn {
            txn_id: m.transactional_id().to_owned(),
            producer_id: m.producer_id(),
            state: m.state().name().to_owned(),
        })
        .collect()
}

/// Start the appender, timer and worker tasks once.
fn start_tasks(ctx: &Rc<ShardContext>, host: &Rc<TxnHost>) {
    if host.started.replace(true) {
        return;
    }
    glommio::spawn_local(appender(Rc::downgrade(ctx), host.wake_appender.clone())).detach();
    glommio::spawn_local(timer(Rc::downgrade(ctx))).detach();
    glommio::spawn_local(worker(Rc::downgrade(ctx), host.wake_workers.clone())).detach();
}

fn host_of(ctx: &ShardContext) -> Option<Rc<TxnHost>> {
    ctx.data().map(|d| d.txns.clone())
}

/// Writes queued records in order, one acks=all append each.
async fn appender(weak: std::rc::Weak<ShardContext>, wake: Rc<crate::io::local_sync::Notify>) {
    loop {
        let Some(ctx) = weak.upgrade() else { return };
        let Some(host) = host_of(&ctx) else { return };
        let next = host.appends.borrow_mut().pop_front();
        let Some((partition, key, value, token)) = next else {
            drop(host);
            drop(ctx);
            wake.notified().await;
            continue;
        };
        let tp = TopicPartition::new(TRANSACTION_STATE_TOPIC, partition);
        let records = vec![(key, value)];
        let code =
            internal_log::append_acks_all(&ctx, tp, &records, None, host.append_timeout_ms).await;
        if code != ErrorCode::NONE {
            tracing::warn!(partition, error = %code, "transaction state append failed");
        }
        let now = ctx.clock.wall_ms();
        let actions = host
            .core
            .borrow_mut()
            .on_appended(token, code == ErrorCode::NONE, now);
        host.execute(actions);
        if host.core.borrow().has_retries() {
            // A completion to append again, after a back-off (Kafka's
            // marker sender drains its retry queue at its next turn).
            let weak = weak.clone();
            glommio::spawn_local(async move {
                glommio::timer::sleep(RETRY).await;
                let Some(ctx) = weak.upgrade() else { return };
                let Some(host) = host_of(&ctx) else { return };
                let actions = host.core.borrow_mut().retry_failed_appends();
                host.execute(actions);
            })
            .detach();
        }
    }
}

/// Aborts timed-out transactions every cleanup interval.
async fn timer(weak: std::rc::Weak<ShardContext>) {
    loop {
        let Some(ctx) = weak.upgrade() else { return };
        let Some(host) = host_of(&ctx) else { return };
        if ctx.stopping.is_fired() {
            return;
        }
        let actions = host.core.borrow_mut().on_timer(ctx.clock.wall_ms());
        host.execute(actions);
        let every = Duration::from_millis(u64::try_from(host.abort_interval_ms).unwrap_or(1));
        drop(host);
        drop(ctx);
        glommio::timer::sleep(every).await;
    }
}

/// Allocates producer ids and starts marker jobs.
async fn worker(weak: std::rc::Weak<ShardContext>, wake: Rc<crate::io::local_sync::Notify>) {
    loop {
        let Some(ctx) = weak.upgrade() else { return };
        let Some(host) = host_of(&ctx) else { return };
        let waiters: Vec<u64> = std::mem::take(&mut *host.allocations.borrow_mut());
        let jobs: Vec<MarkerJob> = std::mem::take(&mut *host.markers.borrow_mut());
        if waiters.is_empty() && jobs.is_empty() {
            drop(host);
            drop(ctx);
            wake.notified().await;
            continue;
        }
        for job in jobs {
            let ctx = ctx.clone();
            glommio::spawn_local(async move { write_markers(&ctx, job).await }).detach();
        }
        for w in waiters {
            let pid = match ctx
                .control_client()
                .run_admin(AdminRequest::InitProducerId)
                .await
            {
                Ok(AdminResponse::ProducerId(Ok((id, _)))) => Some(id),
                other => {
                    tracing::warn!(?other, "no producer id for a transactional producer");
                    None
                }
            };
            let actions = host
                .core
                .borrow_mut()
                .on_producer_id(w, pid, ctx.clock.wall_ms());
            host.execute(actions);
        }
    }
}

/// Send one transaction's markers to its partitions' leaders until each
/// is written (or its topic is gone), then report to the coordinator.
async fn write_markers(ctx: &Rc<ShardContext>, job: MarkerJob) {
    let (token, producer_id, epoch, coordinator_epoch, commit, partitions) = job;
    let mut left: Vec<(String, i32)> = partitions;
    while !left.is_empty() {
        if ctx.stopping.is_fired() {
            return;
        }
        let snapshot = ctx.snapshot();
        // Partitions whose topic is gone need no marker (Kafka drops them).
        left.retain(|(t, p)| {
            snapshot
                .cluster_topic(t)
                .is_some_and(|topic| topic.partitions.iter().any(|s| s.partition == *p))
        });
        let mut by_leader: HashMap<String, Vec<(String, i32)>> = HashMap::new();
        for (t, p) in &left {
            let addr = snapshot
                .cluster_topic(t)
                .and_then(|topic| topic.partitions.iter().find(|s| s.partition == *p))
                .and_then(|s| snapshot.brokers.iter().find(|b| b.broker_id == s.leader))
                .map(|b| format!("{}:{}", b.host, b.port));
            if let Some(addr) = addr {
                by_leader.entry(addr).or_default().push((t.clone(), *p));
            }
        }
        // Each leader on its own (Kafka's TransactionMarkerChannelManager
        // keeps a queue per broker): one that does not answer must not hold
        // back the others' markers.
        let timeout =
            Duration::from_millis(u64::try_from(ctx.config.request_timeout_ms).unwrap_or(30_000));
        let sends = by_leader.into_iter().map(|(addr, parts)| {
            let ctx = ctx.clone();
            let req = marker_request(producer_id, epoch, coordinator_epoch, commit, &parts);
            async move {
                let send = async { Some(send_markers(&ctx, &addr, &req).await) };
                let expire = async {
                    glommio::timer::sleep(timeout).await;
                    None
                };
                match futures_lite::future::or(send, expire).await {
                    Some(Ok(resp)) => written(producer_id, &resp),
                    Some(Err(e)) => {
                        tracing::debug!(%addr, error = %e, "WriteTxnMarkers failed; retrying");
                        Vec::new()
                    }
                    None => {
                        tracing::debug!(%addr, "WriteTxnMarkers timed out; retrying");
                        Vec::new()
                    }
                }
            }
        });
        let done: Vec<(String, i32)> = futures_join_all(sends)
            .await
            .into_iter()
            .flatten()
            .collect();
        left.retain(|tp| !done.contains(tp));
        if !left.is_empty() {
            glommio::timer::sleep(RETRY).await;
        }
    }
    let Some(host) = host_of(ctx) else { return };
    let actions = host
        .core
        .borrow_mut()
        .on_markers_written(token, ctx.clock.wall_ms());
    host.execute(actions);
}

/// The partitions of a WriteTxnMarkers answer whose marker needs no retry:
/// written, or refused for good (an older producer or coordinator epoch:
/// Kafka's marker channel drops those too).
fn written(producer_id: i64, resp: &WriteTxnMarkersResponse) -> Vec<(String, i32)> {
    let mut done = Vec::new();
    for t in resp.markers.iter().flat_map(|m| &m.topics) {
        for p in &t.partitions {
            let code = ErrorCode(p.error_code);
            let key = (t.name.0.as_str().to_owned(), p.partition_index);
            if code == ErrorCode::INVALID_PRODUCER_EPOCH
                || code == ErrorCode::TRANSACTION_COORDINATOR_FENCED
            {
                tracing::warn!(producer_id, partition = ?key, error = %code, "marker refused; not retried");
                done.push(key);
            } else if code == ErrorCode::NONE {
                done.push(key);
            }
        }
    }
    done
}

fn marker_request(
    producer_id: i64,
    epoch: i16,
    coordinator_epoch: i32,
    commit: bool,
    parts: &[(String, i32)],
) -> WriteTxnMarkersRequest {
    let topics = partitions_by_topic(parts)
        .into_iter()
        .map(|(t, ps)| {
            WritableTxnMarkerTopic::default()
                .with_name(TopicName(StrBytes::from_string(t.to_owned())))
                .with_partition_indexes(ps)
        })
        .collect();
    WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
        .with_producer_id(ProducerId(producer_id))
        .with_producer_epoch(epoch)
        .with_transaction_result(commit)
        .with_coordinator_epoch(coordinator_epoch)
        .with_topics(topics)])
}

/// One WriteTxnMarkers (v1) round trip to `addr`, on a kept connection
/// (Kafka's marker channel keeps one per broker).
async fn send_markers(
    ctx: &Rc<ShardContext>,
    addr: &str,
    req: &WriteTxnMarkersRequest,
) -> std::io::Result<WriteTxnMarkersResponse> {
    let Some(host) = host_of(ctx) else {
        return Err(std::io::Error::other("no transaction coordinator here"));
    };
    let client_id = format!("broker-{}-txn-markers", ctx.config.broker_id);
    let sent = host
        .peers
        .call(addr, &client_id, ApiKey::WriteTxnMarkers, |_| Some(1), req)
        .await?;
    sent.ok_or_else(|| std::io::Error::other("no WriteTxnMarkers"))
}
