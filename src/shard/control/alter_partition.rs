//! `[drv]` ISR changes on their way to the controller (Kafka 3.9's
//! `AlterPartitionManager`): a partition leader's owner shard hands its
//! [`IsrChange`] to the control shard ([`propose`]), which sends it to the
//! active controller as AlterPartition and answers with what the
//! controller decided.

use std::rc::Rc;
use std::time::Duration;

// The controller channel speaks through Kafka 3.9's codec (0.15.1); the
// wire is the same as 0.18's for v2–3.
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::alter_partition_request::{
    AlterPartitionRequest, BrokerState, PartitionData, TopicData,
};
use kafka_protocol_39::messages::alter_partition_response::AlterPartitionResponse;
use kafka_protocol_39::messages::BrokerId as WireBrokerId;
use kafka_protocol_39::protocol::Decodable;

use crate::controller::channel::{
    inter_broker_address, ChannelConfig, ChannelError, ControllerChannel,
};
use crate::controller::zk_mode::Reply;
use crate::protocol::ErrorCode;
use crate::replication::isr_change::{IsrChange, IsrChangeAnswer};
use crate::shard::context::{ShardContext, ShardRequest, ShardResponse};
use crate::shard::control::control_shard::{ControlRequest, ControlResponse, ControlShard};
use crate::types::{BrokerId, LeaderEpoch, PartitionEpoch};

/// From an owner shard: ask the controller (through the control shard)
/// for `change`; the answer once the controller gave it.
pub async fn propose(ctx: &ShardContext, change: IsrChange) -> IsrChangeAnswer {
    let req = ShardRequest::Control(ControlRequest::AlterPartition(Box::new(change)));
    match ctx.call(ctx.control_peer(), req).await {
        Ok(ShardResponse::Control(ControlResponse::AlterPartition(answer))) => answer,
        other => {
            tracing::warn!(?other, "ISR change not answered by the control shard");
            IsrChangeAnswer::Failed(ErrorCode::UNKNOWN_SERVER_ERROR)
        }
    }
}

/// The AlterPartition version sent (Kafka 3.9 at IBP 3.9 sends v3).
const VERSION: i16 = 3;

/// On the control shard: queue `change` for the active controller and
/// wait for its answer. One AlterPartition is in flight at a time; it
/// carries every change queued meanwhile (Kafka's `AlterPartitionManager`).
pub async fn send_to_controller(ctx: &Rc<ShardContext>, change: IsrChange) -> IsrChangeAnswer {
    let Some(control) = ctx.control() else {
        return IsrChangeAnswer::Failed(ErrorCode::UNKNOWN_SERVER_ERROR);
    };
    let reply = Reply::new();
    control
        .isr_changes
        .borrow_mut()
        .push((change, reply.clone()));
    if !control.isr_sending.replace(true) {
        let ctx = ctx.clone();
        glommio::spawn_local(async move {
            let Some(control) = ctx.control() else { return };
            loop {
                let batch = std::mem::take(&mut *control.isr_changes.borrow_mut());
                if batch.is_empty() {
                    break;
                }
                if send_batch(&ctx, control, batch).await {
                    glommio::timer::sleep(RETRY_BACKOFF).await;
                }
            }
            control.isr_sending.set(false);
        })
        .detach();
    }
    reply.take().await
}

/// How long a change whose AlterPartition got no per-partition answer
/// waits before it is sent again (Kafka's `AlterPartitionManager`
/// schedules the retry in 50 ms).
const RETRY_BACKOFF: Duration = Duration::from_millis(50);

/// One AlterPartition with `batch`. Every item is answered, except after a
/// failed send or a request-level error (no controller known, the
/// connection lost, NOT_CONTROLLER, STALE_BROKER_EPOCH): then the items go
/// back to the queue and true is returned. Kafka's `AlterPartitionManager`
/// keeps such items until a controller answers them: the controller may
/// have written the change before the answer was lost, and a leader that
/// forgot its proposal would keep an ISR that differs from the one in
/// ZooKeeper, proposing nothing more (its rule sees no change to make).
/// The resent item is answered with the state in force (an equal ISR is
/// `Unchanged`), or fenced once the leader epoch moved on.
async fn send_batch(
    ctx: &ShardContext,
    control: &ControlShard,
    batch: Vec<(IsrChange, Reply<IsrChangeAnswer>)>,
) -> bool {
    let me = BrokerId(ctx.config.broker_id);
    let broker_epoch = control.admin.broker_epoch().unwrap_or(-1);
    // The partition epoch this broker last accepted from LeaderAndIsr; a
    // change under an older leader epoch is stale.
    let mut asked: Vec<(IsrChange, Reply<IsrChangeAnswer>, i32)> = Vec::new();
    {
        let hosted = control.hosted.borrow();
        for (change, reply) in batch {
            match hosted.partition(&change.tp.topic, change.tp.partition) {
                Some(h) if h.state.leader_epoch == change.leader_epoch && h.state.leader == me => {
                    asked.push((change, reply, h.state.partition_epoch.0));
                }
                Some(_) => reply.put(IsrChangeAnswer::Failed(ErrorCode::FENCED_LEADER_EPOCH)),
                None => reply.put(IsrChangeAnswer::Failed(
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                )),
            }
        }
    }
    if asked.is_empty() {
        return false;
    }
    let request = AlterPartitionRequest::default()
        .with_broker_id(WireBrokerId(me.0))
        .with_broker_epoch(broker_epoch)
        .with_topics(request_topics(&asked, me, broker_epoch));
    let answer = match controller_channel(ctx, control) {
        None => Err(ErrorCode::NOT_CONTROLLER),
        Some((controller, channel)) => {
            let timeout = Duration::from_millis(
                u64::try_from(ctx.config.request_timeout_ms).unwrap_or(30_000),
            );
            let sent = channel.send(controller, ApiKey::AlterPartition, VERSION, &request);
            let timer = async {
                glommio::timer::sleep(timeout).await;
                Err(ChannelError::BrokerRemoved(controller))
            };
            match futures_lite::future::or(sent, timer).await {
                Ok(mut body) => AlterPartitionResponse::decode(&mut body, VERSION).map_err(|e| {
                    tracing::warn!(error = %e, "AlterPartition: bad answer");
                    ErrorCode::UNKNOWN_SERVER_ERROR
                }),
                Err(e) => {
                    tracing::warn!(%controller, error = %e, "AlterPartition: no answer");
                    control.controller_link.borrow_mut().take();
                    Err(ErrorCode::REQUEST_TIMED_OUT)
                }
            }
        }
    };
    let resp = match answer {
        Ok(r) if r.error_code != 0 => Err(ErrorCode(r.error_code)),
        other => other,
    };
    match resp {
        Ok(resp) => {
            deliver(control, asked, &resp);
            false
        }
        Err(e) => {
            tracing::debug!(error = %e, changes = asked.len(), "AlterPartition to be sent again");
            let mut queue = control.isr_changes.borrow_mut();
            for (change, reply, _) in asked {
                queue.push((change, reply));
            }
            true
        }
    }
}

/// The request's topics: per topic id its partitions, ISR members with
/// their broker epochs (v3; only this broker's is known here, the others
/// go as -1, which a ZooKeeper-mode controller does not check).
fn request_topics(
    asked: &[(IsrChange, Reply<IsrChangeAnswer>, i32)],
    me: BrokerId,
    broker_epoch: i64,
) -> Vec<TopicData> {
    let mut topics: Vec<TopicData> = Vec::new();
    for (change, _, partition_epoch) in asked {
        let p = PartitionData::default()
            .with_partition_index(change.tp.partition)
            .with_leader_epoch(change.leader_epoch.0)
            .with_new_isr_with_epochs(
                change
                    .new_isr
                    .iter()
                    .map(|b| {
                        BrokerState::default()
                            .with_broker_id(WireBrokerId(b.0))
                            .with_broker_epoch(if *b == me { broker_epoch } else { -1 })
                    })
                    .collect(),
            )
            // Kafka's prepareIsrExpand / prepareIsrShrink always send
            // RECOVERED: a leader changing its ISR has recovered (KIP-704),
            // and a RECOVERING state with a larger ISR would be refused.
            .with_leader_recovery_state(0)
            .with_partition_epoch(*partition_epoch);
        match topics.iter_mut().find(|t| t.topic_id == change.topic_id) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                TopicData::default()
                    .with_topic_id(change.topic_id)
                    .with_partitions(vec![p]),
            ),
        }
    }
    topics
}

/// Answer every asked change from the controller's answer `resp`;
/// committed ISRs replace the hosted ones (so later publications carry
/// them).
fn deliver(
    control: &ControlShard,
    asked: Vec<(IsrChange, Reply<IsrChangeAnswer>, i32)>,
    resp: &AlterPartitionResponse,
) {
    for (change, reply, _) in asked {
        let r = resp
            .topics
            .iter()
            .filter(|t| t.topic_id == change.topic_id)
            .flat_map(|t| t.partitions.iter())
            .find(|p| p.partition_index == change.tp.partition)
            .map_or(
                IsrChangeAnswer::Failed(ErrorCode::UNKNOWN_SERVER_ERROR),
                |p| committed(control, &change, p),
            );
        reply.put(r);
    }
}

/// One partition's answer; a committed ISR is recorded as hosted.
fn committed(
    control: &ControlShard,
    change: &IsrChange,
    p: &kafka_protocol_39::messages::alter_partition_response::PartitionData,
) -> IsrChangeAnswer {
    if p.error_code != 0 {
        return IsrChangeAnswer::Failed(ErrorCode(p.error_code));
    }
    let isr: Vec<BrokerId> = p.isr.iter().map(|b| BrokerId(b.0)).collect();
    let leader_epoch = LeaderEpoch(p.leader_epoch);
    control.hosted.borrow_mut().isr_committed(
        &change.tp.topic,
        change.tp.partition,
        leader_epoch,
        &isr,
        PartitionEpoch(p.partition_epoch),
        p.leader_recovery_state,
    );
    IsrChangeAnswer::Committed { leader_epoch, isr }
}

/// The active controller (as the last UpdateMetadata named it) and the
/// channel to it, opened on first use and again when the controller moves.
fn controller_channel(
    ctx: &ShardContext,
    control: &ControlShard,
) -> Option<(BrokerId, ControllerChannel)> {
    // Kafka's `MetadataCacheControllerNodeProvider`: the control-plane
    // listener if set, else the inter-broker one.
    let listener = ctx.config.controller_listener().to_owned();
    let (id, addr) = {
        let cache = control.metadata_cache.borrow();
        let id = cache.controller_id();
        let addr = cache
            .live_brokers()
            .iter()
            .find(|b| b.id == id)
            .and_then(|b| inter_broker_address(b, &listener))?;
        (id, addr)
    };
    let mut link = control.controller_link.borrow_mut();
    if let Some((current, channel)) = link.as_ref() {
        if *current == id {
            return Some((id, channel.clone()));
        }
        channel.remove_broker(*current);
    }
    let config = ChannelConfig {
        tls: ctx.broker_tls.control_plane.clone(),
        ..ChannelConfig::default()
    };
    let channel = ControllerChannel::new(BrokerId(ctx.config.broker_id), config);
    channel.add_broker(id, -1, addr);
    *link = Some((id, channel.clone()));
    Some((id, channel))
}
