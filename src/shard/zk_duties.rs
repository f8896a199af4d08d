//! `[drv]` What the control shard does with the ZooKeeper-mode election
//! (`controller::zk_mode`): this broker's registration epoch goes to the
//! UpdateMetadata fence; as controller it keeps one channel to every live
//! broker (itself included, over the same protocol path, as Kafka's
//! controller does) and sends each UpdateMetadata v8 with the live brokers
//! and its controller id on failover and on every broker change
//! (`ControllerChannelManager.sendUpdateMetadataRequests`).

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use crate::controller::brokers::LiveBroker as Registered;
use crate::controller::channel::{
    inter_broker_address, update_metadata_v8, ChannelConfig, ControllerChannel,
};
use crate::controller::zk_mode::{ControllerContext, Duties};
use crate::metadata::update_metadata::{BrokerListener, LiveBroker};
use crate::shard::context::ShardContext;
use crate::types::{BrokerId, ControllerEpoch};

/// The channel and the (broker, epoch) pairs it was built for.
type Channel = (ControllerChannel, Vec<(BrokerId, i64)>);

/// The control shard's [`Duties`].
pub struct ControlDuties {
    ctx: Weak<ShardContext>,
    me: BrokerId,
    listener: String,
    /// While controller: the channel and the epochs it was built for.
    channel: RefCell<Option<Channel>>,
}

impl ControlDuties {
    pub fn new(ctx: &Rc<ShardContext>, me: BrokerId) -> Self {
        Self {
            ctx: Rc::downgrade(ctx),
            me,
            listener: ctx.config.inter_broker_listener().to_owned(),
            channel: RefCell::new(None),
        }
    }

    /// Bring the channel's brokers in line with `ctx` and send every live
    /// broker an UpdateMetadata; answers are logged, not awaited in order.
    fn announce(&self, ctx: &ControllerContext) {
        let live: Vec<LiveBroker> = ctx.live_brokers.iter().map(announced).collect();
        let mut slot = self.channel.borrow_mut();
        let (channel, known) = slot.get_or_insert_with(|| {
            (
                ControllerChannel::new(self.me, ChannelConfig::default()),
                Vec::new(),
            )
        });
        let now: Vec<(BrokerId, i64)> = ctx.live_brokers.iter().map(|b| (b.id, b.epoch)).collect();
        for (id, _) in known.iter().filter(|k| !now.contains(k)) {
            channel.remove_broker(*id);
        }
        for (b, l) in ctx.live_brokers.iter().zip(&live) {
            if known.contains(&(b.id, b.epoch)) {
                continue;
            }
            match inter_broker_address(l, &self.listener) {
                Some(addr) => channel.add_broker(b.id, b.epoch, addr),
                None => tracing::warn!(
                    broker = %b.id,
                    listener = %self.listener,
                    "live broker has no endpoint on the inter-broker listener"
                ),
            }
        }
        *known = now;
        for b in &ctx.live_brokers {
            let req = update_metadata_v8(
                self.me,
                ControllerEpoch(ctx.epoch),
                b.epoch,
                &live,
                &[],
                &[],
            );
            let answer = channel.send_update_metadata(b.id, &req);
            let target = b.id;
            glommio::spawn_local(async move {
                match answer.await {
                    Ok(code) if code.0 == 0 => {}
                    Ok(code) => tracing::warn!(broker = %target, error = code.0, "UpdateMetadata refused"),
                    Err(e) => tracing::debug!(broker = %target, error = %e, "UpdateMetadata not delivered"),
                }
            })
            .detach();
        }
    }
}

/// A registration as UpdateMetadata's live broker: every endpoint
/// `NAME://host:port` with its listener's security protocol.
fn announced(b: &Registered) -> LiveBroker {
    let endpoints = b
        .registration
        .endpoints
        .iter()
        .filter_map(|e| {
            let (name, rest) = e.split_once("://")?;
            let (host, port) = rest.rsplit_once(':')?;
            let protocol = b
                .registration
                .listener_security_protocol_map
                .get(name)
                .map_or("PLAINTEXT", String::as_str);
            Some(BrokerListener {
                listener: name.to_string(),
                host: host.to_string(),
                port: port.parse().ok()?,
                security_protocol: security_protocol_id(protocol),
            })
        })
        .collect();
    LiveBroker {
        id: b.id,
        endpoints,
        rack: b.registration.rack.clone(),
    }
}

/// Kafka's `SecurityProtocol` ids.
fn security_protocol_id(name: &str) -> i16 {
    match name {
        "SSL" => 1,
        "SASL_PLAINTEXT" => 2,
        "SASL_SSL" => 3,
        _ => 0,
    }
}

impl Duties for ControlDuties {
    fn registered(&self, broker_epoch: i64) {
        if let Some(ctx) = self.ctx.upgrade() {
            if let Some(control) = ctx.control() {
                control.controller.set_broker_epoch(broker_epoch);
            }
        }
    }

    fn controller_seen(&self, controller: Option<BrokerId>) {
        tracing::debug!(controller = ?controller, "active controller");
    }

    async fn failover(&self, ctx: &ControllerContext) {
        self.announce(ctx);
    }

    async fn brokers_changed(&self, ctx: &ControllerContext) {
        self.announce(ctx);
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
