//! `[pure]` The controller channel's queue rules (`controller::channel`
//! drives them): one FIFO queue per live broker, its head sent until
//! answered, a generation per registration so a re-registered or removed
//! broker's sender stops and its waiting callers are told.

use std::collections::{BTreeMap, VecDeque};

use bytes::Bytes;

use crate::metadata::update_metadata::LiveBroker;
use crate::protocol::api::Api;
#[cfg(test)]
use crate::protocol::api::ZkApi;
use crate::types::BrokerId;

/// Where a broker listens for the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub host: String,
    pub port: u16,
}

/// `broker`'s endpoint on listener `listener_name`, the inter-broker or
/// the control-plane one (Kafka's `Broker.node(listenerName)`).
pub fn inter_broker_address(broker: &LiveBroker, listener_name: &str) -> Option<BrokerAddress> {
    let e = broker
        .endpoints
        .iter()
        .find(|e| e.listener == listener_name)?;
    Some(BrokerAddress {
        host: e.host.clone(),
        port: u16::try_from(e.port).ok()?,
    })
}

/// One request waiting in a broker's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedRequest {
    pub api: Api,
    pub version: i16,
    /// The encoded body (no header).
    pub body: Bytes,
    /// Names the caller waiting for the answer.
    pub ticket: u64,
}

/// What the driver must do after a membership change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChannelAction {
    /// Start a sender for `broker`'s queue of this generation.
    StartSender {
        broker: BrokerId,
        generation: u64,
        address: BrokerAddress,
    },
    /// These callers will get no answer: their broker's queue was dropped.
    FailPending { tickets: Vec<u64> },
}

#[derive(Debug)]
struct BrokerQueue {
    epoch: i64,
    address: BrokerAddress,
    generation: u64,
    queue: VecDeque<QueuedRequest>,
}

/// The queues of every live broker. Invariant: at most one queue per
/// broker; generations only grow; every ticket is in at most one queue.
#[derive(Debug, Default)]
pub struct ChannelState {
    brokers: BTreeMap<BrokerId, BrokerQueue>,
    next_generation: u64,
    next_ticket: u64,
    next_correlation_id: i32,
}

impl ChannelState {
    pub fn new() -> Self {
        Self::default()
    }

    /// `broker` is live at `epoch` on `address`. The same registration again
    /// changes nothing; a new one drops the old queue and starts a new
    /// generation (Kafka removes and re-adds a re-registered broker).
    pub fn on_add_broker(
        &mut self,
        broker: BrokerId,
        epoch: i64,
        address: BrokerAddress,
    ) -> Vec<ChannelAction> {
        if let Some(q) = self.brokers.get(&broker) {
            if q.epoch == epoch && q.address == address {
                return Vec::new();
            }
        }
        let mut actions = self.on_remove_broker(broker);
        self.next_generation += 1;
        let generation = self.next_generation;
        self.brokers.insert(
            broker,
            BrokerQueue {
                epoch,
                address: address.clone(),
                generation,
                queue: VecDeque::new(),
            },
        );
        actions.push(ChannelAction::StartSender {
            broker,
            generation,
            address,
        });
        self.check_invariants();
        actions
    }

    /// `broker` is gone: its queue is dropped.
    pub fn on_remove_broker(&mut self, broker: BrokerId) -> Vec<ChannelAction> {
        let Some(q) = self.brokers.remove(&broker) else {
            return Vec::new();
        };
        let tickets: Vec<u64> = q.queue.iter().map(|r| r.ticket).collect();
        if tickets.is_empty() {
            Vec::new()
        } else {
            vec![ChannelAction::FailPending { tickets }]
        }
    }

    /// Queue a request for `broker`; its ticket, or `None` when the broker
    /// is not live (Kafka logs and drops it).
    pub fn on_enqueue(
        &mut self,
        broker: BrokerId,
        api: Api,
        version: i16,
        body: Bytes,
    ) -> Option<u64> {
        let q = self.brokers.get_mut(&broker)?;
        self.next_ticket += 1;
        let ticket = self.next_ticket;
        q.queue.push_back(QueuedRequest {
            api,
            version,
            body,
            ticket,
        });
        self.check_invariants();
        Some(ticket)
    }

    /// Whether `generation` is still `broker`'s current one.
    pub fn is_current(&self, broker: BrokerId, generation: u64) -> bool {
        self.brokers
            .get(&broker)
            .is_some_and(|q| q.generation == generation)
    }

    /// The request to send next to `broker` (the queue's head, which stays
    /// queued until answered) with a fresh correlation id; `None` when the
    /// queue is empty or the generation is over.
    pub fn next_to_send(
        &mut self,
        broker: BrokerId,
        generation: u64,
    ) -> Option<(i32, QueuedRequest)> {
        let q = self.brokers.get(&broker)?;
        if q.generation != generation {
            return None;
        }
        let head = q.queue.front()?.clone();
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1);
        Some((self.next_correlation_id, head))
    }

    /// The head request `ticket` of `broker`'s queue was answered: it
    /// leaves the queue. `false` when it is no longer there (removed).
    pub fn on_answered(&mut self, broker: BrokerId, generation: u64, ticket: u64) -> bool {
        let Some(q) = self.brokers.get_mut(&broker) else {
            return false;
        };
        if q.generation != generation || q.queue.front().map(|r| r.ticket) != Some(ticket) {
            return false;
        }
        q.queue.pop_front();
        true
    }

    /// Requests waiting for `broker` (including the one in flight).
    pub fn queued(&self, broker: BrokerId) -> usize {
        self.brokers.get(&broker).map_or(0, |q| q.queue.len())
    }

    pub fn check_invariants(&self) {
        debug_assert!(self
            .brokers
            .values()
            .all(|q| q.generation <= self.next_generation));
        debug_assert!({
            let mut tickets: Vec<u64> = self
                .brokers
                .values()
                .flat_map(|q| q.queue.iter().map(|r| r.ticket))
                .collect();
            let n = tickets.len();
            tickets.sort_unstable();
            tickets.dedup();
            tickets.len() == n
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> BrokerAddress {
        BrokerAddress {
            host: "127.0.0.1".into(),
            port,
        }
    }

    fn body(b: &'static [u8]) -> Bytes {
        Bytes::from_static(b)
    }

    #[test]
    fn requests_leave_the_queue_in_order_one_at_a_time() {
        let mut s = ChannelState::new();
        let start = s.on_add_broker(BrokerId(1), 10, addr(1));
        let ChannelAction::StartSender { generation, .. } = start[0].clone() else {
            panic!("{start:?}")
        };
        let a = s
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata.into(), 8, body(b"a"))
            .unwrap();
        let b = s
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata.into(), 8, body(b"b"))
            .unwrap();
        let (c1, first) = s.next_to_send(BrokerId(1), generation).unwrap();
        assert_eq!(first.ticket, a);
        // Not answered yet (a failed send): the same request again, with a
        // new correlation id.
        let (c2, again) = s.next_to_send(BrokerId(1), generation).unwrap();
        assert_eq!(again.ticket, a);
        assert!(c2 > c1);
        assert!(s.on_answered(BrokerId(1), generation, a));
        let (c3, second) = s.next_to_send(BrokerId(1), generation).unwrap();
        assert_eq!((second.ticket, second.body), (b, body(b"b")));
        assert!(c3 > c2);
        assert!(!s.on_answered(BrokerId(1), generation, a), "answered once");
        assert!(s.on_answered(BrokerId(1), generation, b));
        assert_eq!(s.next_to_send(BrokerId(1), generation), None);
    }

    #[test]
    fn an_unknown_broker_gets_nothing_queued() {
        let mut s = ChannelState::new();
        assert_eq!(
            s.on_enqueue(BrokerId(3), ZkApi::UpdateMetadata.into(), 8, body(b"x")),
            None
        );
    }

    #[test]
    fn re_registration_drops_the_queue_and_starts_a_new_generation() {
        let mut s = ChannelState::new();
        s.on_add_broker(BrokerId(1), 10, addr(1));
        assert!(s.on_add_broker(BrokerId(1), 10, addr(1)).is_empty(), "same");
        let t = s
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata.into(), 8, body(b"a"))
            .unwrap();
        let actions = s.on_add_broker(BrokerId(1), 11, addr(1));
        assert_eq!(
            actions,
            vec![
                ChannelAction::FailPending { tickets: vec![t] },
                ChannelAction::StartSender {
                    broker: BrokerId(1),
                    generation: 2,
                    address: addr(1)
                }
            ]
        );
        assert!(!s.is_current(BrokerId(1), 1));
        assert!(s.is_current(BrokerId(1), 2));
        assert_eq!(s.queued(BrokerId(1)), 0);
        assert_eq!(s.next_to_send(BrokerId(1), 1), None, "old generation");
        s.on_enqueue(BrokerId(1), ZkApi::UpdateMetadata.into(), 8, body(b"b"));
        assert_eq!(
            s.on_remove_broker(BrokerId(1)),
            vec![ChannelAction::FailPending {
                tickets: vec![t + 1]
            }]
        );
        assert!(!s.is_current(BrokerId(1), 2));
        assert!(s.on_remove_broker(BrokerId(1)).is_empty());
    }

    #[test]
    fn the_inter_broker_endpoint_is_the_named_listener() {
        use crate::metadata::update_metadata::{BrokerListener, PLAINTEXT};
        let b = LiveBroker {
            id: BrokerId(1),
            endpoints: vec![
                BrokerListener {
                    listener: "CLIENT".into(),
                    host: "c".into(),
                    port: 1,
                    security_protocol: PLAINTEXT,
                },
                BrokerListener {
                    listener: "PLAINTEXT".into(),
                    host: "p".into(),
                    port: 2,
                    security_protocol: PLAINTEXT,
                },
            ],
            rack: None,
        };
        assert_eq!(
            inter_broker_address(&b, "PLAINTEXT"),
            Some(BrokerAddress {
                host: "p".into(),
                port: 2
            })
        );
        assert_eq!(inter_broker_address(&b, "SSL"), None);
    }
}
