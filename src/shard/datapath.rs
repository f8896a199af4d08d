//! `[drv]` The connection side of partition work (ARCHITECTURE.md §2, §5):
//! a connection's shard groups a request's partitions by owner shard, sends
//! one message per owner (or serves its own partitions directly), and
//! gathers the answers in request order. Long polls and acks=all produces
//! park in this shard's purgatory through one entry, [`Datapath::park`].
//! The owner side is `data_shard`.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;

use super::context::{ShardContext, ShardRequest, ShardResponse};
use super::data_shard::{DataRequest, DataResponse, ProduceAppends, ReadSpec, VerifyStart};
use super::router::serve_data;
use crate::protocol::ErrorCode;
use crate::purgatory::delayed_fetch::FetchIsolation;
use crate::purgatory::delayed_operation::WatchChange;
use crate::purgatory::delayed_produce::{AppendResult, DelayedProduce};
use crate::purgatory::driver::Parkable;
use crate::purgatory::view::PartitionSnapshot;
use crate::replication::leader_epoch::EpochEndOffset;
use crate::replication::partition::LegacyOffsetsQuery;
use crate::replication::partition::{
    AppendOrigin, MarkerSpec, OffsetAnswer, ProduceResult, ReadAnswer,
};
use crate::replication::producer_state::ActiveProducer;
use crate::replication::replica_manager::ProduceAppend;
use crate::types::TopicPartition;

mod log_dirs;

/// The connection side of partition work on one shard: what a request
/// handler asks of the partitions' owners ([`ShardContext::datapath`]).
#[derive(Clone)]
pub struct Datapath {
    ctx: Rc<ShardContext>,
}

impl Datapath {
    pub fn new(ctx: &Rc<ShardContext>) -> Self {
        Self { ctx: ctx.clone() }
    }

    /// Serve `req` on the owner shard: directly when that is this shard,
    /// over the mesh otherwise (an unreachable owner, or a request that
    /// panicked, answers `None`).
    async fn ask_owner(&self, owner: usize, req: DataRequest) -> Option<DataResponse> {
        if owner == self.ctx.peer_id() {
            // Runs as its own task (`futures_join_all`), out of reach of the
            // connection's catch_unwind: a panic must fail this request,
            // not end the shard.
            let run = std::panic::AssertUnwindSafe(serve_data(&self.ctx, owner, req));
            futures_lite::FutureExt::catch_unwind(run)
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("a partition request panicked on its owner; the request fails");
                    None
                })
        } else {
            match self.ctx.call(owner, ShardRequest::Data(req)).await {
                Ok(ShardResponse::Data(resp)) => Some(resp),
                _ => None,
            }
        }
    }

    /// Connection side: append to partitions on their owners (`acks` -1
    /// checks `min.insync.replicas` before appending).
    pub async fn produce_on_owners(
        &self,
        parts: Vec<(TopicPartition, ProduceAppend)>,
        now_ms: i64,
        acks: i16,
        origin: AppendOrigin,
    ) -> Vec<ProduceResult> {
        self.dispatch_produce(parts, now_ms, acks, origin)
            .await
            .results()
            .await
    }

    /// Connection side: hand a produce request's appends to their owners;
    /// done once every owner took (this shard) or will take first thing
    /// on receipt (posted on the mesh, whose per-peer queues keep their
    /// order) the request's places in its partitions' append order. Two
    /// requests dispatched one after the other append in that order on
    /// every partition they share, whatever each waits for afterwards;
    /// the connection dispatches its produce requests in arrival order
    /// (`handlers::produce`).
    pub async fn dispatch_produce(
        &self,
        parts: Vec<(TopicPartition, ProduceAppend)>,
        now_ms: i64,
        acks: i16,
        origin: AppendOrigin,
    ) -> DispatchedProduce {
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, x)| (tp.clone(), (tp, x))));
        let mut calls = Vec::with_capacity(groups.by_owner.len());
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<_>) = items.into_iter().unzip();
            let answer: BoxedLocal<Option<Vec<ProduceResult>>> = if owner == self.ctx.peer_id() {
                match super::router::start_produce_here(&self.ctx, parts, now_ms, acks, origin) {
                    // Runs as its own task, out of reach of the
                    // connection's catch_unwind: a panic must fail this
                    // request, not end the shard.
                    Some(run) => Box::pin(async move {
                        let run = std::panic::AssertUnwindSafe(run);
                        let answer = futures_lite::FutureExt::catch_unwind(run).await;
                        if answer.is_err() {
                            tracing::error!("a produce panicked on its owner; the request fails");
                        }
                        answer.ok()
                    }),
                    None => Box::pin(async { None }),
                }
            } else {
                let req = ShardRequest::Produce(ProduceAppends {
                    parts,
                    now_ms,
                    acks,
                    origin,
                });
                match self.ctx.post(owner, req).await {
                    Ok(posted) => Box::pin(async move {
                        match posted.answer().await {
                            Ok(ShardResponse::Data(DataResponse::Produced(list))) => Some(list),
                            _ => None,
                        }
                    }),
                    Err(_) => Box::pin(async { None }),
                }
            };
            calls.push((idx, glommio::spawn_local(answer)));
        }
        DispatchedProduce {
            total: groups.total,
            calls,
        }
    }

    /// Connection side: start KIP-890 verifications on the partitions'
    /// owners, answers in `parts` order (NOT_LEADER_OR_FOLLOWER for an
    /// owner that did not answer).
    pub async fn start_verifications_on_owners(
        &self,
        parts: Vec<(TopicPartition, VerifyStart)>,
    ) -> Vec<Result<Option<u64>, ErrorCode>> {
        let now_ms = self.ctx.clock.wall_ms();
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, v)| (tp.clone(), (tp, v))));
        let mut results = vec![Err(ErrorCode::NOT_LEADER_OR_FOLLOWER); groups.total];
        let calls = groups.by_owner.into_iter().map(|(owner, items)| {
            let ctx = self.clone();
            async move {
                let (idx, parts): (Vec<usize>, Vec<_>) = items.into_iter().unzip();
                let req = DataRequest::StartVerification { parts, now_ms };
                (idx, ctx.ask_owner(owner, req).await)
            }
        });
        for (idx, answer) in futures_join_all(calls).await {
            if let Some(DataResponse::Verifications(list)) = answer {
                for (i, r) in idx.into_iter().zip(list) {
                    results[i] = r;
                }
            }
        }
        results
    }

    /// Connection side: append transaction markers on the partitions'
    /// owners (WriteTxnMarkers), answers in `parts` order.
    pub async fn markers_on_owners(
        &self,
        parts: Vec<(TopicPartition, MarkerSpec)>,
        now_ms: i64,
    ) -> Vec<ProduceResult> {
        self.appends_on_owners(parts, move |parts| DataRequest::WriteMarkers {
            parts,
            now_ms,
        })
        .await
    }

    /// Send each owner its partitions' appends (`request` builds the
    /// owner's request) concurrently; the answers (`Produced`) in `parts`
    /// order, NOT_LEADER_OR_FOLLOWER for an owner that did not answer.
    async fn appends_on_owners<T: 'static>(
        &self,
        parts: Vec<(TopicPartition, T)>,
        request: impl Fn(Vec<(TopicPartition, T)>) -> DataRequest + Clone + 'static,
    ) -> Vec<ProduceResult> {
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, x)| (tp.clone(), (tp, x))));
        let total = groups.total;
        let calls = groups.by_owner.into_iter().map(|(owner, items)| {
            let ctx = self.clone();
            let request = request.clone();
            async move {
                let (idx, parts): (Vec<usize>, Vec<(TopicPartition, T)>) =
                    items.into_iter().unzip();
                let answer = ctx.ask_owner(owner, request(parts)).await;
                (idx, answer)
            }
        });
        let answers = futures_join_all(calls)
            .await
            .into_iter()
            .map(|(idx, answer)| {
                let list = match answer {
                    Some(DataResponse::Produced(list)) => list,
                    _ => Vec::new(),
                };
                (idx, list)
            });
        in_request_order(total, answers)
    }

    /// Connection side: read partitions from their owners, owner by owner
    /// in request order, sharing one `max_bytes` budget.
    pub async fn read_on_owners(
        &self,
        specs: Vec<ReadSpec>,
        isolation: FetchIsolation,
        max_bytes: usize,
    ) -> Vec<ReadAnswer> {
        let n = specs.len();
        let groups = self.group_by_owner(specs.into_iter().map(|s| (s.tp.clone(), s)));
        let mut results: Vec<Option<ReadAnswer>> = vec![None; n];
        let mut left = max_bytes;
        let mut min_one = true;
        for (owner, items) in groups.by_owner {
            let (idx, specs): (Vec<usize>, Vec<ReadSpec>) = items.into_iter().unzip();
            let answers: Vec<ReadAnswer> = match self.ctx.data() {
                Some(data) if owner == self.ctx.peer_id() => {
                    let now_ms = self.ctx.clock.wall_ms();
                    let answers = data
                        .read_owned(&specs, isolation, left, min_one, now_ms)
                        .await;
                    // A follower's fetch may have moved a HW or proposed an ISR change.
                    super::router::maybe_send_notes(&self.ctx);
                    super::router::maybe_send_isr_changes(&self.ctx);
                    answers
                }
                _ => {
                    let req = DataRequest::Read {
                        specs,
                        isolation,
                        max_bytes: left,
                        min_one_batch: min_one,
                        now_ms: self.ctx.clock.wall_ms(),
                    };
                    match self.ctx.call(owner, ShardRequest::Data(req)).await {
                        Ok(ShardResponse::Data(DataResponse::Read(list))) => list,
                        _ => Vec::new(),
                    }
                }
            };
            for (i, a) in idx.into_iter().zip(answers) {
                if a.bytes > 0 {
                    min_one = false;
                }
                left = left.saturating_sub(a.bytes);
                results[i] = Some(a);
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| ReadAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER)))
            .collect()
    }

    /// Connection side: ListOffsets lookups on the owners.
    pub async fn list_offsets_on_owners(
        &self,
        parts: Vec<(TopicPartition, i64)>,
        isolation: FetchIsolation,
    ) -> Vec<OffsetAnswer> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|(tp, ts)| (tp.clone(), (tp, ts))));
        let mut results: Vec<Option<OffsetAnswer>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<(TopicPartition, i64)>) = items.into_iter().unzip();
            let req = DataRequest::ListOffsets { parts, isolation };
            if let Some(DataResponse::Offsets(list)) = self.ask_owner(owner, req).await {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(OffsetAnswer::error(ErrorCode::NOT_LEADER_OR_FOLLOWER)))
            .collect()
    }

    /// Connection side: ListOffsets v0 lookups on the owners, per
    /// partition in order its offsets or error.
    pub async fn legacy_list_offsets_on_owners(
        &self,
        parts: Vec<(TopicPartition, LegacyOffsetsQuery)>,
        now_ms: i64,
    ) -> Vec<Result<Vec<i64>, ErrorCode>> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|p| (p.0.clone(), p)));
        let mut results: Vec<Option<Result<Vec<i64>, ErrorCode>>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<(TopicPartition, LegacyOffsetsQuery)>) =
                items.into_iter().unzip();
            let req = DataRequest::LegacyListOffsets { parts, now_ms };
            if let Some(DataResponse::LegacyOffsets(list)) = self.ask_owner(owner, req).await {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)))
            .collect()
    }

    /// Connection side: DescribeProducers on the owners, per partition in
    /// order its producers or error (NOT_LEADER_OR_FOLLOWER when no owner
    /// answered).
    pub async fn describe_producers_on_owners(
        &self,
        parts: Vec<TopicPartition>,
    ) -> Vec<Result<Vec<ActiveProducer>, ErrorCode>> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|tp| (tp.clone(), tp)));
        let mut results: Vec<Option<Result<Vec<ActiveProducer>, ErrorCode>>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<TopicPartition>) = items.into_iter().unzip();
            let req = DataRequest::DescribeProducers { parts };
            if let Some(DataResponse::Producers(list)) = self.ask_owner(owner, req).await {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)))
            .collect()
    }

    /// Connection side: OffsetForLeaderEpoch lookups on the owners
    /// ((partition, current_leader_epoch, leader_epoch), in order).
    pub async fn offset_for_leader_epoch_on_owners(
        &self,
        parts: Vec<(TopicPartition, i32, i32)>,
        fetch_only_from_leader: bool,
    ) -> Vec<(ErrorCode, EpochEndOffset)> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|p| (p.0.clone(), p)));
        let mut results: Vec<Option<(ErrorCode, EpochEndOffset)>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<(TopicPartition, i32, i32)>) =
                items.into_iter().unzip();
            let req = DataRequest::OffsetForLeaderEpoch {
                parts,
                fetch_only_from_leader,
            };
            if let Some(DataResponse::EpochEndOffsets(list)) = self.ask_owner(owner, req).await {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or((ErrorCode::NOT_LEADER_OR_FOLLOWER, EpochEndOffset::UNDEFINED)))
            .collect()
    }

    /// Connection side: DeleteRecords on the owners, all owners at once
    /// (each may wait up to `timeout_ms`); per partition in order its error
    /// and low watermark.
    pub async fn delete_records_on_owners(
        &self,
        parts: Vec<(TopicPartition, i64)>,
        timeout_ms: i32,
    ) -> Vec<(ErrorCode, i64)> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|p| (p.0.clone(), p)));
        let mut results: Vec<Option<(ErrorCode, i64)>> = vec![None; n];
        let calls = groups.by_owner.into_iter().map(|(owner, items)| {
            let ctx = self.clone();
            async move {
                let (idx, parts): (Vec<usize>, Vec<(TopicPartition, i64)>) =
                    items.into_iter().unzip();
                let req = DataRequest::DeleteRecords { parts, timeout_ms };
                (idx, ctx.ask_owner(owner, req).await)
            }
        });
        for (idx, answer) in futures_join_all(calls).await {
            if let Some(DataResponse::DeletedRecords(list)) = answer {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or((ErrorCode::NOT_LEADER_OR_FOLLOWER, -1)))
            .collect()
    }

    /// Park a delayed operation (acks=all produce, long-poll fetch) in this
    /// shard's purgatory until it completes. `seen` is the owners' state of
    /// its partitions as of the append or read that preceded it (it feeds
    /// this shard's view); owners of the watched partitions are told to
    /// send "partition advanced" notes once this task yields, and told to
    /// forget the watch when it ends. `None` on a shard with no purgatory.
    pub(crate) async fn park<Op: Parkable>(
        &self,
        op: Op,
        keys: &[TopicPartition],
        seen: impl IntoIterator<Item = (TopicPartition, PartitionSnapshot)>,
    ) -> Option<Op::Outcome> {
        let driver = self.ctx.data()?.purgatory.clone();
        for (tp, s) in seen {
            driver.on_partition_advanced(&tp, s);
        }
        let ctx = self.clone();
        glommio::spawn_local(async move {
            futures_lite::future::yield_now().await;
            ctx.sync_watches().await;
        })
        .detach();
        // The wait is the request's remote time (Kafka's RemoteTimeMs).
        let scope = self.ctx.stats.metrics.current();
        let parked_ns = self.ctx.clock.mono_ns();
        let outcome = driver.wait(op, keys).await;
        if let Some(scope) = scope {
            scope.add_remote_ns(self.ctx.clock.mono_ns().saturating_sub(parked_ns));
        }
        // Let owners forget this watch if nothing else waits on it.
        let ctx = self.clone();
        glommio::spawn_local(async move { ctx.sync_watches().await }).detach();
        Some(outcome)
    }

    /// acks=all (Kafka's DelayedProduce): park until the HW covers every
    /// batch appended with `results` (one per partition of `keys`), for at
    /// most `timeout_ms`. Each partition's code: its append's error, else
    /// the delayed produce's (NONE, REQUEST_TIMED_OUT, ...). `None` on a
    /// shard with no purgatory.
    pub(crate) async fn wait_replicated(
        &self,
        timeout_ms: i64,
        keys: &[TopicPartition],
        results: &[ProduceResult],
    ) -> Option<Vec<ErrorCode>> {
        let appended = keys
            .iter()
            .zip(results)
            .map(|(tp, r)| {
                let a = if r.error_code == ErrorCode::NONE {
                    AppendResult::Appended {
                        last_offset: r.last_offset,
                    }
                } else {
                    AppendResult::Failed {
                        error_code: r.error_code,
                    }
                };
                (tp.clone(), a)
            })
            .collect();
        let op = DelayedProduce::new(timeout_ms.max(0), appended);
        // The owner's state as of the append feeds this shard's view.
        let seen = keys
            .iter()
            .zip(results)
            .filter_map(|(tp, r)| r.snapshot.map(|s| (tp.clone(), s)));
        let outcome = self.park(op, keys, seen).await?;
        // `DelayedProduce.onExpiration`: each partition still waiting for
        // its acks when the op expired (they answer REQUEST_TIMED_OUT).
        if outcome.expired {
            for (tp, code) in &outcome.partitions {
                if *code == ErrorCode::REQUEST_TIMED_OUT {
                    self.ctx
                        .stats
                        .metrics
                        .on_produce_expired(&tp.topic, tp.partition);
                }
            }
        }
        Some(
            outcome
                .partitions
                .into_iter()
                .zip(results)
                .map(|((_, code), r)| {
                    if code != ErrorCode::NONE {
                        code
                    } else {
                        r.error_code
                    }
                })
                .collect(),
        )
    }

    /// Tell owners which partitions this shard's purgatory started or
    /// stopped watching; feed their current state back in.
    async fn sync_watches(&self) {
        let Some(driver) = self.ctx.data().map(|d| d.purgatory.clone()) else {
            return;
        };
        let changes = driver.drain_watch_changes();
        if changes.is_empty() {
            return;
        }
        let me = self.ctx.peer_id();
        let groups = self.group_by_owner(changes.into_iter().map(|c| match c {
            WatchChange::Watch(tp) => (tp.clone(), (tp, true)),
            WatchChange::Unwatch(tp) => (tp.clone(), (tp, false)),
        }));
        for (owner, items) in groups.by_owner {
            if owner == me {
                continue; // local owners call the driver directly
            }
            let changes = items.into_iter().map(|(_, c)| c).collect();
            let req = ShardRequest::Data(DataRequest::Watch { changes });
            if let Ok(ShardResponse::Data(DataResponse::Snapshots(current))) =
                self.ctx.call(owner, req).await
            {
                for (tp, s) in current {
                    driver.on_partition_advanced(&tp, s);
                }
            }
        }
    }

    fn group_by_owner<T>(&self, items: impl Iterator<Item = (TopicPartition, T)>) -> Grouped<T> {
        let mut by_owner: Vec<(usize, Vec<(usize, T)>)> = Vec::new();
        let mut total = 0;
        for (i, (tp, item)) in items.enumerate() {
            total += 1;
            let owner = self.ctx.owner_of(&tp.topic, tp.partition);
            match by_owner.iter_mut().find(|(o, _)| *o == owner) {
                Some((_, list)) => list.push((i, item)),
                None => by_owner.push((owner, vec![(i, item)])),
            }
        }
        Grouped { by_owner, total }
    }
}

/// A produce request handed to its partitions' owners
/// ([`Datapath::dispatch_produce`]): per owner, the request's indexes
/// of its partitions and the owner's answer (`None`: it did not answer).
pub struct DispatchedProduce {
    total: usize,
    calls: Vec<(Vec<usize>, OwnerAnswer)>,
}

/// One owner's answer to a dispatched produce (`None`: no answer).
type OwnerAnswer = glommio::Task<Option<Vec<ProduceResult>>>;

impl DispatchedProduce {
    /// The appends' results in request order, NOT_LEADER_OR_FOLLOWER for
    /// a partition whose owner did not answer.
    pub async fn results(self) -> Vec<ProduceResult> {
        let mut answers = Vec::with_capacity(self.calls.len());
        for (idx, call) in self.calls {
            answers.push((idx, call.await.unwrap_or_default()));
        }
        in_request_order(self.total, answers)
    }
}

/// Owners' answers, each with the request indexes of its partitions, as
/// `total` results in request order: NOT_LEADER_OR_FOLLOWER for a
/// partition its owner did not answer.
fn in_request_order(
    total: usize,
    answers: impl IntoIterator<Item = (Vec<usize>, Vec<ProduceResult>)>,
) -> Vec<ProduceResult> {
    let mut results: Vec<Option<ProduceResult>> = vec![None; total];
    for (idx, list) in answers {
        for (i, r) in idx.into_iter().zip(list) {
            results[i] = Some(r);
        }
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| ProduceResult::error(ErrorCode::NOT_LEADER_OR_FOLLOWER)))
        .collect()
}

struct Grouped<T> {
    by_owner: Vec<(usize, Vec<(usize, T)>)>,
    total: usize,
}

/// Await every future; they run concurrently as local tasks on this shard.
pub(crate) async fn futures_join_all<F>(futs: impl Iterator<Item = F>) -> Vec<F::Output>
where
    F: std::future::Future + 'static,
    F::Output: 'static,
{
    let handles: Vec<_> = futs.map(glommio::spawn_local).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await);
    }
    out
}

#[cfg(test)]
mod send_region_tests {
    use super::*;
    use crate::io::zerocopy::OutPart;
    use bytes::Bytes;
    use std::sync::Arc;

    /// A file region crosses shards as the segment's own `Arc<File>`:
    /// retention on the owner counts it as a reader until the connection's
    /// shard has sent it and dropped it.
    #[test]
    fn a_file_region_crosses_shards_as_the_same_reference() {
        let file = Arc::new(tempfile::tempfile().expect("temp file"));
        let mut answer = ReadAnswer::error(ErrorCode::NONE);
        answer.records = vec![
            OutPart::Bytes(Bytes::from_static(b"cached")),
            OutPart::File {
                file: file.clone(),
                position: 0,
                len: 10,
            },
        ];
        answer.bytes = 16;
        let sent = ShardResponse::Data(DataResponse::Read(vec![answer]));
        assert_eq!(Arc::strong_count(&file), 2);
        let local = std::thread::spawn(move || match sent {
            ShardResponse::Data(DataResponse::Read(list)) => list,
            other => panic!("{other:?}"),
        })
        .join()
        .expect("other thread");
        assert_eq!(local[0].records.len(), 2);
        assert_eq!(local[0].bytes, 16);
        assert_eq!(Arc::strong_count(&file), 2, "held by the sending side");
        drop(local);
        assert_eq!(Arc::strong_count(&file), 1);
    }
}
