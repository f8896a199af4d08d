//! `[drv]` The control shard's ZooKeeper-mode session (Kafka 3.9
//! `KafkaServer.startup` / `KafkaController`): this broker's registration
//! and the election on the session the broker lives on (the admin
//! controller over it and the registration / election queue,
//! `controller::zk_mode`), the controller queue the control shard's
//! requests reach it through, and controlled shutdown before the stop.

use std::collections::BTreeSet;
use std::rc::Rc;

use futures_lite::future::BoxedLocal;

use crate::config::{Listener, SecurityProtocol};
use crate::controller::brokers::registration_for;
use crate::controller::rebalance::ElectionType;
use crate::controller::zk_mode::{
    AllocateAnswer, AlterAnswer, AlterAsk, ControllerSettings, ElectAnswer, Reconnect,
    ShutdownAnswer, ShutdownRefusal, ZkBroker,
};
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;
use crate::shard::context::ShardContext;
use crate::shard::control::control_shard::{ControllerQueue, ReassignmentCall, ReassignmentReply};
use crate::shard::control::zk_duties::ControlDuties;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::any::AnyStore;

/// Registers this broker and joins the election on the control shard's
/// session `store`; the returned queue is stopped at shutdown.
pub async fn start_broker(
    ctx: &Rc<ShardContext>,
    store: AnyStore,
    snapshot: &Snapshot,
    now_ms: i64,
) -> Result<Rc<ZkBroker<AnyStore, ControlDuties>>, String> {
    let config = ctx.config.clone();
    let me = BrokerId(config.broker_id);
    // Every advertised listener at the address the broker really serves
    // (the boot snapshot resolved empty hosts and port 0 per listener),
    // with its protocol from `listener.security.protocol.map`.
    let mut listeners: Vec<(Listener, SecurityProtocol)> = Vec::new();
    for l in config.effective_advertised_listeners() {
        let endpoint = snapshot.broker_on(&l.name, me).ok_or_else(|| {
            format!(
                "broker {me} has no {} endpoint in the boot snapshot",
                l.name
            )
        })?;
        let listener = Listener {
            name: l.name.clone(),
            host: endpoint.host.clone(),
            port: endpoint.port,
        };
        listeners.push((listener, config.listener_protocol(&l.name)));
    }
    let registration = registration_for(&listeners, config.broker_rack.as_deref(), now_ms);
    // The new session goes to every holder (the admin manager too).
    let again = store.clone();
    let reconnect: Reconnect<AnyStore> = Box::new(move || {
        let s = again.clone();
        Box::pin(async move { s.renew_session().await.map(|()| s) })
    });
    let clock = ctx.clock.clone();
    let broker = ZkBroker::new(
        me,
        registration,
        store,
        reconnect,
        ControlDuties::new(ctx, me),
        clock,
    );
    broker.configure(ControllerSettings {
        // LeaderAndIsr names live leaders on the inter-broker listener
        // (`ControllerChannelManager.sendLeaderAndIsrRequest`).
        listener: config.inter_broker_listener().to_owned(),
        unclean_leader_election: config.unclean_leader_election_enable,
        delete_topic_enable: config.delete_topic_enable,
        auto_leader_rebalance_enable: config.auto_leader_rebalance_enable,
        leader_imbalance_check_interval_s: u64::try_from(
            config.leader_imbalance_check_interval_seconds,
        )
        .unwrap_or(1),
        leader_imbalance_per_broker_percentage: u32::try_from(
            config.leader_imbalance_per_broker_percentage,
        )
        .unwrap_or(10),
    });
    if let Some(control) = ctx.control() {
        broker.report_to(control.metrics.controller.clone());
    }
    broker.start().await?;
    Ok(broker)
}

/// Lets ControlledShutdown requests reach `broker`'s event queue.
pub fn install_controller_queue(
    ctx: &ShardContext,
    broker: &Rc<ZkBroker<AnyStore, ControlDuties>>,
) {
    let Some(control) = ctx.control() else {
        return;
    };
    *control.controller_queue.borrow_mut() = Some(Rc::new(Queue(Rc::downgrade(broker))));
}

/// The controller queue of this broker's [`ZkBroker`] (gone once it stops).
struct Queue(std::rc::Weak<ZkBroker<AnyStore, ControlDuties>>);

impl ControllerQueue for Queue {
    fn controlled_shutdown(&self, id: BrokerId, epoch: i64) -> BoxedLocal<ShutdownAnswer> {
        let queue = self.0.clone();
        Box::pin(async move {
            match queue.upgrade() {
                Some(b) => b.request_controlled_shutdown(id, epoch).await,
                None => Err(ShutdownRefusal::NotController),
            }
        })
    }

    fn alter_partition(&self, ask: AlterAsk) -> BoxedLocal<AlterAnswer> {
        let queue = self.0.clone();
        Box::pin(async move {
            match queue.upgrade() {
                Some(b) => b.request_alter_partition(ask).await,
                None => Err(ErrorCode::NOT_CONTROLLER),
            }
        })
    }

    fn elect_leaders(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> BoxedLocal<ElectAnswer> {
        let queue = self.0.clone();
        Box::pin(async move {
            match queue.upgrade() {
                Some(b) => b.request_elect_leaders(kind, partitions).await,
                None => Err(ErrorCode::NOT_CONTROLLER),
            }
        })
    }

    fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> BoxedLocal<AllocateAnswer> {
        let queue = self.0.clone();
        Box::pin(async move {
            match queue.upgrade() {
                Some(b) => b.request_allocate_producer_ids(broker, broker_epoch).await,
                None => Err(ErrorCode::NOT_CONTROLLER),
            }
        })
    }

    fn reassignments(&self, call: ReassignmentCall) -> BoxedLocal<ReassignmentReply> {
        let queue = self.0.clone();
        Box::pin(async move {
            let Some(b) = queue.upgrade() else {
                return call.not_controller();
            };
            match call {
                ReassignmentCall::Alter(asked) => {
                    ReassignmentReply::Altered(b.request_alter_reassignments(asked).await)
                }
                ReassignmentCall::List(asked) => {
                    ReassignmentReply::Listed(b.request_list_reassignments(asked).await)
                }
            }
        })
    }
}

/// Kafka's controlled shutdown before the stop: the controller moves this
/// broker's leaders while it still serves. The outcome goes to stderr with
/// the other shutdown lines (operators and the cluster tests read it
/// whatever the log level).
pub async fn controlled_shutdown(ctx: &ShardContext) {
    let epoch = ctx
        .control()
        .and_then(|c| c.admin.broker_epoch())
        .unwrap_or(-1);
    let moved = crate::shard::control::controlled_shutdown::run(ctx, epoch).await;
    crate::io::console::line(&format!(
        "controlled shutdown: {}",
        if moved { "succeeded" } else { "failed" }
    ));
}
