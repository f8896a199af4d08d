//! `[drv]` What the control shard does with the ZooKeeper-mode election
//! (`controller::zk_mode`): this broker's registration epoch goes to the
//! UpdateMetadata fence; as controller it keeps one channel to every live
//! broker (itself included, over the same protocol path, as Kafka's
//! controller does) and sends the controller's LeaderAndIsr v7,
//! UpdateMetadata v8 and StopReplica v4 over it
//! (`ControllerChannelManager`).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use futures_lite::future::BoxedLocal;

use crate::controller::brokers::LiveBroker;
use crate::controller::channel::{inter_broker_address, ChannelConfig, ControllerChannel};
use crate::controller::request_batch::ControllerRequest;
use crate::controller::zk_mode::{ControllerContext, Duties};
use crate::metadata::leader_and_isr::PartitionErrors;
use crate::shard::context::ShardContext;
use crate::types::BrokerId;

/// The channel and the (broker, epoch) pairs it was built for.
type Channel = (ControllerChannel, Vec<(BrokerId, i64)>);

/// The control shard's [`Duties`].
pub struct ControlDuties {
    ctx: Weak<ShardContext>,
    me: BrokerId,
    listener: String,
    /// The TLS client configuration of that listener (`None`: PLAINTEXT).
    tls: crate::io::broker_stream::BrokerLink,
    /// While controller: the channel and the epochs it was built for.
    channel: RefCell<Option<Channel>>,
}

impl ControlDuties {
    pub fn new(ctx: &Rc<ShardContext>, me: BrokerId) -> Self {
        Self {
            ctx: Rc::downgrade(ctx),
            me,
            // Kafka's `ControllerChannelManager.addNewBroker`: the
            // control-plane listener if set, else the inter-broker one.
            listener: ctx.config.controller_listener().to_owned(),
            tls: ctx.broker_tls.control_plane.clone(),
            channel: RefCell::new(None),
        }
    }

    /// Bring the channel's brokers in line with `live` (one queue and
    /// connection per registered broker; a bounced broker's old queue
    /// goes).
    fn sync_channel(&self, live: &[LiveBroker]) {
        let mut slot = self.channel.borrow_mut();
        let (channel, known) = slot.get_or_insert_with(|| {
            (
                ControllerChannel::new(
                    self.me,
                    ChannelConfig {
                        tls: self.tls.clone(),
                        ..ChannelConfig::default()
                    },
                ),
                Vec::new(),
            )
        });
        let now: Vec<(BrokerId, i64)> = live.iter().map(|b| (b.id, b.epoch)).collect();
        for (id, _) in known.iter().filter(|k| !now.contains(k)) {
            channel.remove_broker(*id);
        }
        for b in live {
            if known.contains(&(b.id, b.epoch)) {
                continue;
            }
            match inter_broker_address(&b.announced(), &self.listener) {
                Some(addr) => channel.add_broker(b.id, b.epoch, addr),
                None => tracing::warn!(
                    broker = %b.id,
                    listener = %self.listener,
                    "live broker has no endpoint on the controller's listener"
                ),
            }
        }
        *known = now;
    }
}

impl Duties for ControlDuties {
    fn registered(&self, broker_epoch: i64) {
        if let Some(ctx) = self.ctx.upgrade() {
            if let Some(control) = ctx.control() {
                control.admin.set_broker_epoch(broker_epoch);
            }
        }
    }

    fn controller_seen(&self, controller: Option<BrokerId>) {
        tracing::debug!(controller = ?controller, "active controller");
    }

    async fn failover(&self, ctx: &ControllerContext) {
        self.sync_channel(&ctx.live_brokers);
    }

    async fn brokers_changed(&self, live: &[LiveBroker]) {
        self.sync_channel(live);
    }

    fn send(
        &self,
        broker: BrokerId,
        request: ControllerRequest,
    ) -> BoxedLocal<Result<PartitionErrors, String>> {
        let slot = self.channel.borrow();
        let Some((channel, _)) = slot.as_ref() else {
            return Box::pin(async { Err("not controller".to_string()) });
        };
        match request {
            ControllerRequest::LeaderAndIsr(r) => {
                let answer = channel.send_leader_and_isr(broker, &r);
                Box::pin(async move { answer.await.map_err(|e| e.to_string()) })
            }
            ControllerRequest::StopReplica(r) => {
                let answer = channel.send_stop_replica(broker, &r);
                Box::pin(async move { answer.await.map_err(|e| e.to_string()) })
            }
            ControllerRequest::UpdateMetadata(r) => {
                let answer = channel.send_update_metadata(broker, &r);
                Box::pin(async move {
                    answer
                        .await
                        .map(|error| PartitionErrors {
                            error,
                            partitions: Vec::new(),
                        })
                        .map_err(|e| e.to_string())
                })
            }
        }
    }

    fn resigned(&self) {
        // Dropping the channel ends its senders; queued requests fail.
        if let Some((channel, known)) = self.channel.borrow_mut().take() {
            for (id, _) in known {
                channel.remove_broker(id);
            }
        }
    }
}
