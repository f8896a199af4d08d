//! `[drv]` What a shard does with a mesh message it receives, and the
//! things only the shard as a whole can do: publish a metadata snapshot to
//! every data shard, send the purgatory notes its partitions queued, and
//! send the ISR changes its partition leaders propose.

use crate::controller::admin_requests::{AdminFailure, BrokerConfigCall};
use crate::metadata::quotas::{QuotaCall, QuotaReply};
use std::rc::Rc;

use futures_lite::future::BoxedLocal;

use super::context::{ShardContext, ShardRequest, ShardResponse};
use super::control::control_shard::acls::{AclCall, AclReply};
use super::control::control_shard::{ControlRequest, ControlResponse, ControlShard};
use super::data_shard::{DataRequest, DataResponse, ProduceAppends};
use super::mesh::Handler;
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::replication::isr_change::IsrChange;
use crate::replication::partition::{AppendOrigin, ProduceResult};
use crate::replication::replica_manager::ProduceAppend;
use crate::types::TopicPartition;

/// The mesh handler for this shard.
pub fn mesh_handler(ctx: &Rc<ShardContext>) -> Handler<ShardRequest, ShardResponse> {
    let weak = Rc::downgrade(ctx);
    Rc::new(move |from, req| {
        let Some(ctx) = weak.upgrade() else {
            return Box::pin(async { ShardResponse::Unsupported });
        };
        match req {
            // Called as the message is taken off the mesh, in the order
            // the connection's shard posted them: the appends take their
            // places now (`Datapath::dispatch_produce`).
            ShardRequest::Produce(ProduceAppends {
                parts,
                now_ms,
                acks,
                origin,
            }) => {
                let run = start_produce_here(&ctx, parts, now_ms, acks, origin);
                Box::pin(async move {
                    match run {
                        Some(run) => ShardResponse::Data(DataResponse::Produced(run.await)),
                        None => ShardResponse::Unsupported,
                    }
                })
            }
            ShardRequest::Ping { payload } => {
                let pong = ShardResponse::Pong {
                    shard: ctx.peer_id(),
                    payload,
                };
                Box::pin(async move { pong })
            }
            ShardRequest::Data(req) => Box::pin(async move {
                match serve_data(&ctx, from, req).await {
                    Some(resp) => ShardResponse::Data(resp),
                    None => ShardResponse::Unsupported,
                }
            }),
            ShardRequest::Control(req) => {
                Box::pin(async move { on_control_request(&ctx, req).await })
            }
            ShardRequest::Metrics => Box::pin(async move {
                match super::metrics::collect(&ctx).await {
                    Some(report) => ShardResponse::Metrics(Box::new(report)),
                    None => ShardResponse::Unsupported,
                }
            }),
        }
    })
}

/// A produce request's appends to this shard's partitions: their places
/// in the partitions' append order are taken now, in the order of the
/// calls (before any await); the appends run when the result is awaited.
/// `None` when this shard has no data part.
pub fn start_produce_here(
    ctx: &Rc<ShardContext>,
    parts: Vec<(TopicPartition, ProduceAppend)>,
    now_ms: i64,
    acks: i16,
    origin: AppendOrigin,
) -> Option<BoxedLocal<Vec<ProduceResult>>> {
    let queued = ctx.data()?.queue_produce(parts);
    let ctx = ctx.clone();
    Some(Box::pin(async move {
        let Some(data) = ctx.data() else {
            return Vec::new();
        };
        let results = data.append_queued(queued, now_ms, acks, origin).await;
        maybe_send_notes(&ctx);
        maybe_send_isr_changes(&ctx);
        results
    }))
}

async fn on_control_request(ctx: &Rc<ShardContext>, req: ControlRequest) -> ShardResponse {
    match ctx.control() {
        Some(control) => ShardResponse::Control(serve_control(ctx, control, req).await),
        None => match req {
            // A shard without a controller (mesh unit tests): as
            // auto-create disabled.
            ControlRequest::AutoCreateTopics { topics } => {
                let results = topics
                    .into_iter()
                    .map(|t| (t, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))
                    .collect();
                ShardResponse::Control(ControlResponse::AutoCreated { results })
            }
            ControlRequest::ControlledShutdown { .. } => {
                ShardResponse::Control(ControlResponse::ControlledShutdown(Err(
                    crate::controller::zk_mode::ShutdownRefusal::NotController,
                )))
            }
            ControlRequest::ElectLeaders { .. } => ShardResponse::Control(
                ControlResponse::ElectLeaders(Err(ErrorCode::NOT_CONTROLLER)),
            ),
            ControlRequest::AllocateProducerIds { .. } => ShardResponse::Control(
                ControlResponse::AllocateProducerIds(Err(ErrorCode::NOT_CONTROLLER)),
            ),
            ControlRequest::Reassignments(call) => {
                ShardResponse::Control(ControlResponse::Reassignments(call.not_controller()))
            }
            ControlRequest::ClientQuotas(_)
            | ControlRequest::BrokerConfigs(_)
            | ControlRequest::ScramCredentials(_)
            | ControlRequest::Acls(_) => ShardResponse::Unsupported,
            ControlRequest::AlterPartition(_) => {
                ShardResponse::Control(ControlResponse::AlterPartition(
                    crate::replication::isr_change::IsrChangeAnswer::Failed(
                        ErrorCode::NOT_CONTROLLER,
                    ),
                ))
            }
            ControlRequest::AlterPartitionReceived(_) => ShardResponse::Control(
                ControlResponse::AlterPartitionReceived(Err(ErrorCode::NOT_CONTROLLER)),
            ),
            ControlRequest::CommitOffsetsToStore { offsets, .. } => {
                ShardResponse::Control(ControlResponse::OffsetsCommittedToStore(vec![
                        ErrorCode::COORDINATOR_NOT_AVAILABLE;
                        offsets.len()
                    ]))
            }
            ControlRequest::FetchOffsetsFromStore { partitions, .. } => {
                ShardResponse::Control(ControlResponse::OffsetsFromStore(vec![
                    Err(
                        ErrorCode::COORDINATOR_NOT_AVAILABLE
                    );
                    partitions.len()
                ]))
            }
            ControlRequest::TopicConfigs { .. } => {
                ShardResponse::Control(ControlResponse::TopicConfigs(None))
            }
            ControlRequest::ConfirmLeadership { .. } => ShardResponse::Control(
                ControlResponse::LeadershipConfirmed(Err("no control shard".into())),
            ),
            ControlRequest::Admin(_)
            | ControlRequest::UpdateMetadata(_)
            | ControlRequest::LeaderAndIsr(_)
            | ControlRequest::StopReplica(_) => ShardResponse::Unsupported,
        },
    }
}

/// Serve a data request on this shard, from the mesh or from one of its
/// own connections; `None` when this shard has no data part.
pub async fn serve_data(
    ctx: &Rc<ShardContext>,
    from: usize,
    req: DataRequest,
) -> Option<DataResponse> {
    let resp = match (req, ctx.data()) {
        // Owners open their partitions before clients can see them in
        // Metadata, so a ListOffsets/Produce right after a topic appears
        // finds its log (no UNKNOWN_TOPIC_OR_PARTITION window while the log
        // files are being opened).
        (DataRequest::SetSnapshot(snapshot), data) => {
            let version = snapshot.version;
            if let Some(data) = data {
                data.sync_partitions(&snapshot).await;
            }
            ctx.set_snapshot(Rc::new(*snapshot));
            ctx.group_driver().on_group_snapshot();
            ctx.txn_driver().on_txn_snapshot();
            DataResponse::SnapshotApplied { version }
        }
        (DataRequest::Group(call), Some(_)) => {
            DataResponse::Group(ctx.group_driver().serve_group_call(call).await)
        }
        (DataRequest::Txn(call), Some(_)) => {
            DataResponse::Txn(ctx.txn_driver().serve_txn_call(call).await)
        }
        (DataRequest::DeleteRecords { parts, timeout_ms }, Some(data)) => {
            DataResponse::DeletedRecords(delete_records_owned(ctx, data, parts, timeout_ms).await)
        }
        (DataRequest::SyncPartitions(snapshot), None) => DataResponse::SnapshotApplied {
            version: snapshot.version,
        },
        (req, Some(data)) => data.on_request(from, req).await,
        (_, None) => return None,
    };
    maybe_send_notes(ctx);
    maybe_send_isr_changes(ctx);
    Some(resp)
}

/// Quota accounting and descriptions are answered from memory at once;
/// an alteration takes its turn with the other publications.
async fn serve_quotas(
    ctx: &Rc<ShardContext>,
    control: &ControlShard,
    call: QuotaCall,
) -> QuotaReply {
    match call {
        QuotaCall::Record {
            key,
            applied,
            bytes,
            now_ms,
            refund_if_throttled,
        } => QuotaReply::Throttle(control.record_quota(
            &key,
            &applied,
            bytes,
            now_ms,
            refund_if_throttled,
        )),
        QuotaCall::Describe { components, strict } => {
            QuotaReply::Described(control.describe_client_quotas(&components, strict))
        }
        QuotaCall::Alter {
            entries,
            validate_only,
        } => {
            let _turn = control.serial.acquire_permit(1).await;
            let results = control.alter_client_quotas(entries, validate_only).await;
            if !validate_only && control.reload_client_quotas().await {
                publish(ctx, control.republish_base(&ctx.snapshot())).await;
            }
            QuotaReply::Altered(results)
        }
    }
}

/// Describe/AlterUserScramCredentials; an alteration takes its turn with
/// the other publications and is republished before the answer, so new
/// logins on every shard of this broker see it.
async fn serve_scram(
    ctx: &Rc<ShardContext>,
    control: &ControlShard,
    call: super::control::control_shard::scram_credentials::ScramCall,
) -> super::control::control_shard::scram_credentials::ScramReply {
    let alter = matches!(
        call,
        super::control::control_shard::scram_credentials::ScramCall::Alter(_)
    );
    let _turn = if alter {
        Some(control.serial.acquire_permit(1).await)
    } else {
        None
    };
    let (reply, changed) = control
        .serve_scram_call(call, ctx.snapshot().controller_id)
        .await;
    if changed {
        publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
    reply
}

/// A broker resource's config change, in turn with the other
/// publications: written, then read back and republished so this
/// broker's shards apply it before the answer.
async fn serve_broker_configs(
    ctx: &Rc<ShardContext>,
    control: &ControlShard,
    call: BrokerConfigCall,
) -> Result<(), AdminFailure> {
    let _turn = control.serial.acquire_permit(1).await;
    let validate_only = call.validate_only;
    let result = control.alter_broker_configs(&ctx.config, call).await;
    if !validate_only && control.reload_broker_configs(&ctx.config).await {
        publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
    result
}

/// CreateAcls / DeleteAcls, in turn with the other publications: the
/// store written, then the new ACLs published so every shard of this
/// broker enforces them before the answer.
async fn serve_acls(ctx: &Rc<ShardContext>, control: &ControlShard, call: AclCall) -> AclReply {
    let _turn = control.serial.acquire_permit(1).await;
    let before = control.acls();
    let reply = match call {
        AclCall::Create(bindings) => AclReply::Created(control.create_acls(&bindings).await),
        AclCall::Delete(filters) => AclReply::Deleted(control.delete_acls(&filters).await),
    };
    if !std::sync::Arc::ptr_eq(&control.acls(), &before) {
        publish(ctx, control.republish_base(&ctx.snapshot())).await;
    }
    reply
}

/// Requests the controller's queue orders (ControlledShutdown,
/// ElectLeaders, AllocateProducerIds, reassignments): not serialised with
/// the rest, since the LeaderAndIsr they make the controller send this
/// broker needs the turn meanwhile. `Err` gives back any other request.
async fn serve_by_controller_queue(
    ctx: &Rc<ShardContext>,
    control: &ControlShard,
    req: ControlRequest,
) -> Result<ControlResponse, ControlRequest> {
    Ok(match req {
        ControlRequest::ControlledShutdown {
            broker,
            broker_epoch,
        } => ControlResponse::ControlledShutdown(
            control.controlled_shutdown(broker, broker_epoch).await,
        ),
        ControlRequest::ElectLeaders { kind, partitions } => ControlResponse::ElectLeaders(
            control
                .elect_leaders(kind, partitions, &ctx.snapshot())
                .await,
        ),
        ControlRequest::AllocateProducerIds {
            broker,
            broker_epoch,
        } => ControlResponse::AllocateProducerIds(
            control.allocate_producer_ids(broker, broker_epoch).await,
        ),
        ControlRequest::Reassignments(call) => {
            ControlResponse::Reassignments(control.reassignments(call, &ctx.snapshot()).await)
        }
        other => return Err(other),
    })
}

/// Plain store reads and writes, no publication, so not serialised with
/// admin: v0 offsets, a topic's stored configs, a coordinator's leadership
/// check. `Err` gives back any other request.
async fn serve_store_access(
    control: &ControlShard,
    req: ControlRequest,
) -> Result<ControlResponse, ControlRequest> {
    Ok(match req {
        ControlRequest::CommitOffsetsToStore { group, offsets } => {
            ControlResponse::OffsetsCommittedToStore(
                control.commit_offsets_to_store(&group, offsets).await,
            )
        }
        ControlRequest::FetchOffsetsFromStore { group, partitions } => {
            ControlResponse::OffsetsFromStore(
                control.fetch_offsets_from_store(&group, partitions).await,
            )
        }
        ControlRequest::TopicConfigs { topic } => {
            ControlResponse::TopicConfigs(control.read_topic_configs(&topic).await)
        }
        ControlRequest::ConfirmLeadership { tp, leader_epoch } => {
            ControlResponse::LeadershipConfirmed(
                control.confirm_leadership(&tp, leader_epoch).await,
            )
        }
        other => return Err(other),
    })
}

async fn serve_control(
    ctx: &Rc<ShardContext>,
    control: &ControlShard,
    req: ControlRequest,
) -> ControlResponse {
    let req = match serve_by_controller_queue(ctx, control, req).await {
        Ok(answer) => return answer,
        Err(req) => req,
    };
    // Nor are ISR changes: a leader waits on the controller, not on admin.
    let req = match req {
        ControlRequest::ClientQuotas(call) => {
            return ControlResponse::ClientQuotas(serve_quotas(ctx, control, call).await)
        }
        ControlRequest::BrokerConfigs(call) => {
            return ControlResponse::BrokerConfigs(serve_broker_configs(ctx, control, call).await)
        }
        ControlRequest::ScramCredentials(call) => {
            return ControlResponse::ScramCredentials(serve_scram(ctx, control, call).await)
        }
        ControlRequest::Acls(call) => {
            return ControlResponse::Acls(serve_acls(ctx, control, call).await)
        }
        ControlRequest::AlterPartition(change) => {
            return ControlResponse::AlterPartition(
                super::control::alter_partition::send_to_controller(ctx, *change).await,
            );
        }
        ControlRequest::AlterPartitionReceived(ask) => {
            return ControlResponse::AlterPartitionReceived(control.alter_partition(*ask).await);
        }
        other => match serve_store_access(control, other).await {
            Ok(answer) => return answer,
            Err(req) => req,
        },
    };
    let _turn = control.serial.acquire_permit(1).await;
    match req {
        ControlRequest::ControlledShutdown { .. }
        | ControlRequest::ElectLeaders { .. }
        | ControlRequest::AllocateProducerIds { .. }
        | ControlRequest::Reassignments(_)
        | ControlRequest::ClientQuotas(_)
        | ControlRequest::ScramCredentials(_)
        | ControlRequest::BrokerConfigs(_)
        | ControlRequest::Acls(_)
        | ControlRequest::AlterPartition(_)
        | ControlRequest::AlterPartitionReceived(_)
        | ControlRequest::CommitOffsetsToStore { .. }
        | ControlRequest::FetchOffsetsFromStore { .. }
        | ControlRequest::TopicConfigs { .. }
        | ControlRequest::ConfirmLeadership { .. } => unreachable!("answered above"),
        ControlRequest::AutoCreateTopics { topics } => {
            let outcome = control.admin.auto_create(topics).await;
            if let Some(snapshot) = outcome.publish {
                publish(ctx, snapshot).await;
            }
            ControlResponse::AutoCreated {
                results: outcome.answer,
            }
        }
        ControlRequest::Admin(req) => {
            let outcome = control.admin.run(*req).await;
            if let Some(snapshot) = outcome.publish {
                publish(ctx, snapshot).await;
            }
            ControlResponse::Admin(Box::new(outcome.answer))
        }
        ControlRequest::UpdateMetadata(req) => {
            let (error, republish) = control.apply_update_metadata(*req, &ctx.snapshot());
            if let Some(base) = republish {
                publish(ctx, base).await;
            }
            ControlResponse::UpdateMetadata(error)
        }
        ControlRequest::LeaderAndIsr(req) => {
            let (errors, republish) = control.apply_leader_and_isr(*req, &ctx.snapshot()).await;
            if let Some(base) = republish {
                publish(ctx, base).await;
            }
            ControlResponse::LeaderAndIsr(errors)
        }
        ControlRequest::StopReplica(req) => {
            let (errors, republish, delete) = control.apply_stop_replica(*req, &ctx.snapshot());
            // Owners close the stopped partitions (keeping their files),
            // then those with delete lose them (Kafka's `stopPartitions`).
            if let Some(base) = republish {
                publish(ctx, base).await;
            }
            delete_on_owners(ctx, delete).await;
            ControlResponse::StopReplica(errors)
        }
    }
}

/// DeleteRecords on this owner (Kafka's `ReplicaManager.deleteRecords`):
/// every partition's leader deletes at once; those whose low watermark is
/// still short wait together up to `timeout_ms` (`DelayedDeleteRecords`;
/// a timeout of 0 or less answers at once, REQUEST_TIMED_OUT for them).
async fn delete_records_owned(
    ctx: &Rc<ShardContext>,
    data: &crate::shard::data_shard::DataShard,
    parts: Vec<(TopicPartition, i64)>,
    timeout_ms: i32,
) -> Vec<(ErrorCode, i64)> {
    let alive = {
        let ctx = ctx.clone();
        move |b: crate::types::BrokerId| ctx.snapshot().broker(b).is_some()
    };
    let mut out = Vec::with_capacity(parts.len());
    let mut waits = Vec::new();
    for (i, (tp, offset)) in parts.into_iter().enumerate() {
        let Some(p) = data.replicas.get(&tp) else {
            out.push((ErrorCode::NOT_LEADER_OR_FOLLOWER, -1));
            continue;
        };
        let done = match p.delete_records_on_leader(offset, &alive).await {
            Ok(done) => done,
            Err(e) => {
                out.push((e, -1));
                continue;
            }
        };
        // The new log start offset: parked fetches and remote views see it.
        data.on_local_advance(&tp, data.replicas.partition_snapshot(&tp));
        if done.low_watermark >= done.requested {
            out.push((ErrorCode::NONE, done.low_watermark));
        } else {
            out.push((ErrorCode::REQUEST_TIMED_OUT, -1));
            waits.push((i, p, done.requested));
        }
    }
    let timeout = std::time::Duration::from_millis(u64::try_from(timeout_ms).unwrap_or(0));
    if !waits.is_empty() && !timeout.is_zero() {
        let alive = std::rc::Rc::new(alive);
        let handles: Vec<_> = waits
            .into_iter()
            .map(|(i, p, required)| {
                let alive = alive.clone();
                glommio::spawn_local(async move {
                    (i, p.await_low_watermark(required, timeout, &*alive).await)
                })
            })
            .collect();
        for h in handles {
            let (i, answer) = h.await;
            out[i] = answer;
        }
    }
    out
}

/// Delete the logs of `parts` on their owner shards.
async fn delete_on_owners(ctx: &ShardContext, parts: Vec<(String, i32)>) {
    let mut by_owner: std::collections::BTreeMap<usize, Vec<TopicPartition>> = Default::default();
    for (topic, p) in parts {
        let owner = ctx.owner_of(&topic, p);
        by_owner
            .entry(owner)
            .or_default()
            .push(TopicPartition::new(topic.as_str(), p));
    }
    for (owner, parts) in by_owner {
        let req = ShardRequest::Data(DataRequest::DeletePartitions { parts });
        match ctx.call(owner, req).await {
            Ok(ShardResponse::Data(DataResponse::Ack)) => {}
            other => tracing::warn!(owner, ?other, "partition logs not deleted"),
        }
    }
}

/// Install `snapshot` here and on every data shard; returns once all
/// applied it. Two phases: every owner opens (or closes) its partitions,
/// then every shard shows the new snapshot. A client that sees a partition
/// in Metadata from any shard can then reach its log on the owner.
///
/// On the control shard every publication passes through
/// `ControlShard::prepare_publication` (the UpdateMetadata overlay and
/// the publication number).
pub async fn publish(ctx: &ShardContext, snapshot: Snapshot) {
    let snapshot = match ctx.control() {
        Some(control) => control.prepare_publication(snapshot, ctx.config.inter_broker_listener()),
        None => snapshot,
    };
    send_to_data_shards(ctx, "partitions not synced", || {
        DataRequest::SyncPartitions(Box::new(snapshot.clone()))
    })
    .await;
    ctx.set_snapshot(Rc::new(snapshot.clone()));
    send_to_data_shards(ctx, "snapshot not applied", || {
        DataRequest::SetSnapshot(Box::new(snapshot.clone()))
    })
    .await;
}

/// One phase of a publication: `request()` to every data shard in turn,
/// warning with `failure` for any that does not acknowledge it.
async fn send_to_data_shards(ctx: &ShardContext, failure: &str, request: impl Fn() -> DataRequest) {
    for shard in 0..ctx.n_shards {
        match ctx.call(shard, ShardRequest::Data(request())).await {
            Ok(ShardResponse::Data(DataResponse::SnapshotApplied { .. })) => {}
            other => tracing::warn!(shard, ?other, "{failure}"),
        }
    }
}

/// Send the notes this shard's partitions queued for remote watchers, in
/// one task once the current one yields (appends in the same tick share
/// the messages).
pub fn maybe_send_notes(ctx: &Rc<ShardContext>) {
    let Some(data) = ctx.data() else { return };
    if !data.take_notes_due() {
        return;
    }
    let ctx = ctx.clone();
    glommio::spawn_local(async move {
        futures_lite::future::yield_now().await;
        let Some(data) = ctx.data() else { return };
        for notes in data.drain_notes() {
            let to = notes.to.index();
            if let Err(e) = ctx
                .call(to, ShardRequest::Data(DataRequest::Advance(notes)))
                .await
            {
                tracing::debug!(error = %e, "advance note not delivered");
            }
        }
    })
    .detach();
}

/// Send the ISR changes this shard's partition leaders queued
/// (`maybeExpandIsr` on a follower fetch, `maybeShrinkIsr` on the periodic
/// check), each to the controller through the control shard
/// ([`super::control::alter_partition::propose`]) in its own task; the answer goes
/// back to the partition, which holds at most one change in flight
/// (KIP-497's pending ISR state, `replication::isr`).
pub fn maybe_send_isr_changes(ctx: &Rc<ShardContext>) {
    let Some(data) = ctx.data() else { return };
    for change in data.take_isr_changes() {
        let ctx = ctx.clone();
        glommio::spawn_local(async move { send_isr_change(&ctx, change).await }).detach();
    }
}

async fn send_isr_change(ctx: &Rc<ShardContext>, change: IsrChange) {
    tracing::info!(tp = %change.tp, isr = ?change.new_isr, "proposing ISR change");
    loop {
        if !send_isr_change_once(ctx, &change).await {
            return;
        }
        // Kafka's `Partition` resubmits a change refused with an error it
        // does not know (`handleAlterPartitionError`'s default case); the
        // control shard's sender backs off 50 ms between AlterPartitions.
        glommio::timer::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// One round of `change`; true when it is to be sent again.
async fn send_isr_change_once(ctx: &Rc<ShardContext>, change: &IsrChange) -> bool {
    let before = ctx
        .data()
        .and_then(|d| d.replicas.get(&change.tp))
        .map_or(0, |p| p.leadership().isr.len());
    let answer = super::control::alter_partition::propose(ctx, change.clone()).await;
    // Kafka's IsrShrinksPerSec / IsrExpandsPerSec, marked once the
    // controller wrote the change.
    if let crate::replication::isr_change::IsrChangeAnswer::Committed { isr, .. } = &answer {
        let after = isr.len();
        ctx.stats.metrics.on_broker(|b| {
            if after < before {
                b.isr_shrinks += 1;
            } else if after > before {
                b.isr_expands += 1;
            }
        });
    }
    let Some(data) = ctx.data() else { return false };
    let Some(partition) = data.replicas.get(&change.tp) else {
        return false;
    };
    let now_ms = ctx.clock.wall_ms();
    let effect = partition.on_isr_change_answer(change, answer, now_ms).await;
    if effect.failed {
        ctx.stats.metrics.on_broker(|b| b.failed_isr_updates += 1);
    }
    if effect.high_watermark_moved {
        data.on_local_advance(&change.tp, partition.snapshot());
        maybe_send_notes(ctx);
    }
    effect.resend
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{context, snapshot};
    use super::*;
    use crate::protocol::ErrorCode;
    use crate::shard::context::Role;
    use crate::shard::control::control_shard::{ControlRequest, ControlResponse};
    use crate::shard::data_shard::{DataRequest, DataResponse};
    use crate::shard::mesh::{self, Mesh};
    use crate::types::ShardId;
    use bytes::Bytes;
    use glommio::{LocalExecutorBuilder, Placement};

    #[test]
    fn the_control_shard_publishes_snapshots_to_a_data_shard_over_the_mesh() {
        let builder = mesh::builder::<ShardRequest, ShardResponse>(2, 8);
        // Peer 0 = data shard, peer 1 = control shard (creation order).
        let spawn = |role: Role| {
            let builder = builder.clone();
            LocalExecutorBuilder::new(Placement::Unbound)
                .io_memory(512 << 10)
                .spawn(move || async move {
                    let ctx = context(role);
                    ctx.set_mesh(Mesh::join(builder, mesh_handler(&ctx)).await.unwrap());
                    let at_least = |v: u64| {
                        let ctx = ctx.clone();
                        async move {
                            while ctx.snapshot().version < v {
                                glommio::timer::sleep(std::time::Duration::from_millis(1)).await;
                            }
                        }
                    };
                    // Each side exits only after its last call was answered
                    // and the other side has nothing left to ask it.
                    // The data shard may exit as soon as it saw version 2
                    // and had its own calls answered, so the control shard
                    // pings it before publishing version 2.
                    if role == Role::Control {
                        let ping = ShardRequest::Ping {
                            payload: Bytes::from_static(b"x"),
                        };
                        let seen = ctx.call(0, ping).await.unwrap();
                        let publish = ShardRequest::Data(DataRequest::SetSnapshot(Box::new(
                            snapshot(2, Some("orders")),
                        )));
                        let applied = ctx.call(0, publish).await.unwrap();
                        assert_eq!(
                            applied,
                            ShardResponse::Data(DataResponse::SnapshotApplied { version: 2 })
                        );
                        // The data shard's version 3 says it is done with us.
                        at_least(3).await;
                        seen
                    } else {
                        at_least(2).await;
                        assert!(ctx.snapshot().hosted_topic("orders").is_some());
                        let create = ShardRequest::Control(ControlRequest::AutoCreateTopics {
                            topics: vec!["t".into()],
                        });
                        let seen = ctx.call(1, create).await.unwrap();
                        let done = ShardRequest::Data(DataRequest::SetSnapshot(Box::new(
                            snapshot(3, None),
                        )));
                        ctx.call(1, done).await.unwrap();
                        seen
                    }
                })
                .unwrap()
        };
        let data = spawn(Role::Data(ShardId(0)));
        let control = spawn(Role::Control);
        let from_control = control.join().unwrap();
        let from_data = data.join().unwrap();
        assert_eq!(
            from_control,
            ShardResponse::Pong {
                shard: 0,
                payload: Bytes::from_static(b"x")
            }
        );
        assert_eq!(
            from_data,
            ShardResponse::Control(ControlResponse::AutoCreated {
                results: vec![("t".into(), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)]
            })
        );
    }
}
