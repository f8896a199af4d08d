//! `[drv]` The controller → broker channel: Kafka 3.9's
//! `ControllerChannelManager` and `RequestSendThread` on glommio.
//!
//! One connection and one FIFO request queue per live broker, to its
//! endpoint on the inter-broker listener (`inter.broker.listener.name`, else
//! `security.inter.broker.protocol`; PLAINTEXT). A sender task per broker
//! sends the queue's head, waits for its answer, hands it to the caller and
//! only then sends the next (Kafka's one in-flight request per broker). A
//! connection or send failure drops the connection and retries the same
//! request after a backoff (Kafka: 100 ms) until it succeeds or the broker
//! is removed. Removing a broker, or adding it again with a new epoch or
//! endpoint (it re-registered), drops its queue — waiting callers get
//! [`ChannelError::BrokerRemoved`] — and a new generation starts with a new
//! connection. Client id = the controller's broker id (Kafka's NetworkClient
//! there); correlation ids increase across the channel; request header v1 or
//! v2 as the API version requires.
//!
//! The queue rules are the `[pure]` [`ChannelState`] (unit-tested below
//! without sockets); [`ControllerChannel`] is the driver.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};

use crate::io::local_sync::Notify;
use crate::metadata::update_metadata::{AnnouncedPartition, LiveBroker, UpdateMetadata};
use crate::protocol::api::{Api, ZkApi};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch};

/// Where a broker listens for the controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub host: String,
    pub port: u16,
}

/// `broker`'s endpoint on the inter-broker listener `listener_name`
/// (Kafka's `Broker.node(interBrokerListenerName)`).
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

/// The UpdateMetadata a controller sends to one broker (always v8 at IBP
/// 3.9, `ControllerChannelManager.sendUpdateMetadataRequests`): its id and
/// epoch, the target's broker epoch, every live broker with its endpoints
/// and rack, and the partition states with their topic ids.
pub fn update_metadata_v8(
    controller_id: BrokerId,
    controller_epoch: ControllerEpoch,
    target_broker_epoch: i64,
    live_brokers: &[LiveBroker],
    partitions: &[AnnouncedPartition],
    topic_ids: &[(String, uuid::Uuid)],
) -> UpdateMetadata {
    UpdateMetadata {
        controller_id,
        is_kraft_controller: false,
        controller_epoch,
        broker_epoch: target_broker_epoch,
        partition_states: partitions.to_vec(),
        topic_ids: topic_ids.to_vec(),
        live_brokers: live_brokers.to_vec(),
    }
}

/// The version a 3.9 controller sends UpdateMetadata at.
pub const UPDATE_METADATA_VERSION: i16 = 8;

// ---------------------------------------------------------------- [pure]

/// One request waiting in a broker's queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedRequest {
    pub api: ZkApi,
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
        api: ZkApi,
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

// ---------------------------------------------------------------- [drv]

/// Why a request got no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    #[error("broker {0} is not live")]
    UnknownBroker(BrokerId),
    #[error("broker {0} was removed before answering")]
    BrokerRemoved(BrokerId),
    #[error("cannot encode the request: {0}")]
    Encode(String),
    #[error("cannot decode the answer: {0}")]
    Decode(String),
}

/// Timing of the channel (Kafka: `controller.socket.timeout.ms` 30000; the
/// RequestSendThread backs off 100 ms after a failure).
#[derive(Debug, Clone, Copy)]
pub struct ChannelConfig {
    pub retry_backoff: Duration,
    pub socket_timeout: Duration,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            retry_backoff: Duration::from_millis(100),
            socket_timeout: Duration::from_millis(30_000),
        }
    }
}

/// A one-shot answer slot.
type Slot = Rc<(RefCell<Option<Result<Bytes, ChannelError>>>, Notify)>;

struct Inner {
    state: RefCell<ChannelState>,
    client_id: String,
    config: ChannelConfig,
    /// Waiting callers by ticket.
    waiters: RefCell<BTreeMap<u64, (BrokerId, Slot)>>,
    /// Wakes the sender of each broker's current generation.
    wake: RefCell<BTreeMap<BrokerId, Rc<Notify>>>,
}

/// The driver: cheap to clone, lives on the control shard's executor.
#[derive(Clone)]
pub struct ControllerChannel {
    inner: Rc<Inner>,
}

impl ControllerChannel {
    /// A channel for the controller `controller_id` (its client id).
    pub fn new(controller_id: BrokerId, config: ChannelConfig) -> Self {
        Self {
            inner: Rc::new(Inner {
                state: RefCell::new(ChannelState::new()),
                client_id: controller_id.0.to_string(),
                config,
                waiters: RefCell::new(BTreeMap::new()),
                wake: RefCell::new(BTreeMap::new()),
            }),
        }
    }

    /// `broker` is live at `epoch`, reachable at `address`.
    pub fn add_broker(&self, broker: BrokerId, epoch: i64, address: BrokerAddress) {
        let actions = self
            .inner
            .state
            .borrow_mut()
            .on_add_broker(broker, epoch, address);
        self.perform(actions);
    }

    /// `broker` is gone: its queue and connection are dropped.
    pub fn remove_broker(&self, broker: BrokerId) {
        let actions = self.inner.state.borrow_mut().on_remove_broker(broker);
        self.perform(actions);
        if let Some(wake) = self.inner.wake.borrow_mut().remove(&broker) {
            wake.notify();
        }
    }

    /// Requests waiting for `broker`, the one in flight included.
    pub fn queued(&self, broker: BrokerId) -> usize {
        self.inner.state.borrow().queued(broker)
    }

    /// Queue `request` (a Kafka 3.9 message) for `broker` at `version`; the
    /// future resolves to the answer's body (header stripped). The request
    /// is queued when this is called, not when the future is first polled,
    /// so calls made in order are sent in order.
    pub fn send<R: Encodable>(
        &self,
        broker: BrokerId,
        api: ZkApi,
        version: i16,
        request: &R,
    ) -> impl Future<Output = Result<Bytes, ChannelError>> {
        let queued = self.enqueue(broker, api, version, request);
        async move {
            let slot = queued?;
            loop {
                if let Some(answer) = slot.0.borrow_mut().take() {
                    return answer;
                }
                slot.1.notified().await;
            }
        }
    }

    /// Send UpdateMetadata v8 to `broker`; its error code.
    pub fn send_update_metadata(
        &self,
        broker: BrokerId,
        request: &UpdateMetadata,
    ) -> impl Future<Output = Result<ErrorCode, ChannelError>> {
        let answer = self.send(
            broker,
            ZkApi::UpdateMetadata,
            UPDATE_METADATA_VERSION,
            &request.to_request(),
        );
        async move {
            let mut body = answer.await?;
            let resp = UpdateMetadataResponse::decode(&mut body, UPDATE_METADATA_VERSION)
                .map_err(|e| ChannelError::Decode(e.to_string()))?;
            Ok(ErrorCode(resp.error_code))
        }
    }

    fn enqueue<R: Encodable>(
        &self,
        broker: BrokerId,
        api: ZkApi,
        version: i16,
        request: &R,
    ) -> Result<Slot, ChannelError> {
        let mut body = BytesMut::new();
        request
            .encode(&mut body, version)
            .map_err(|e| ChannelError::Encode(e.to_string()))?;
        let ticket = self
            .inner
            .state
            .borrow_mut()
            .on_enqueue(broker, api, version, body.freeze())
            .ok_or(ChannelError::UnknownBroker(broker))?;
        let slot: Slot = Rc::default();
        self.inner
            .waiters
            .borrow_mut()
            .insert(ticket, (broker, slot.clone()));
        let wake = self.inner.wake.borrow().get(&broker).cloned();
        if let Some(wake) = wake {
            wake.notify();
        }
        Ok(slot)
    }

    fn perform(&self, actions: Vec<ChannelAction>) {
        for action in actions {
            match action {
                ChannelAction::StartSender {
                    broker,
                    generation,
                    address,
                } => {
                    let wake = Rc::new(Notify::default());
                    let old = self.inner.wake.borrow_mut().insert(broker, wake.clone());
                    if let Some(old) = old {
                        old.notify();
                    }
                    let inner = self.inner.clone();
                    glommio::spawn_local(send_loop(inner, broker, generation, address, wake))
                        .detach();
                }
                ChannelAction::FailPending { tickets } => {
                    for ticket in tickets {
                        let waiter = self.inner.waiters.borrow_mut().remove(&ticket);
                        if let Some((broker, slot)) = waiter {
                            deliver(&slot, Err(ChannelError::BrokerRemoved(broker)));
                        }
                    }
                }
            }
        }
    }
}

fn deliver(slot: &Slot, answer: Result<Bytes, ChannelError>) {
    *slot.0.borrow_mut() = Some(answer);
    slot.1.notify();
}

/// Kafka's `RequestSendThread.doWork`, for one broker generation.
async fn send_loop(
    inner: Rc<Inner>,
    broker: BrokerId,
    generation: u64,
    address: BrokerAddress,
    wake: Rc<Notify>,
) {
    let mut conn: Option<TcpStream> = None;
    loop {
        if !inner.state.borrow().is_current(broker, generation) {
            return;
        }
        let next = inner.state.borrow_mut().next_to_send(broker, generation);
        let Some((correlation_id, request)) = next else {
            wake.notified().await;
            continue;
        };
        let frame = match request_frame(&inner.client_id, correlation_id, &request) {
            Ok(frame) => frame,
            Err(e) => {
                // Our bug, not the broker's: answer the caller, move on.
                finish(&inner, broker, generation, request.ticket, Err(e));
                continue;
            }
        };
        let api = Api::Zk(request.api);
        let answer = glommio::timer::timeout(inner.config.socket_timeout, async {
            if conn.is_none() {
                let addr = format!("{}:{}", address.host, address.port);
                conn = Some(TcpStream::connect(addr).await?);
            }
            let stream = conn.as_mut().ok_or_else(|| {
                glommio::GlommioError::<()>::IoError(std::io::ErrorKind::NotConnected.into())
            })?;
            round_trip(stream, &frame, correlation_id, api, request.version)
                .await
                .map_err(glommio::GlommioError::IoError)
        })
        .await;
        match answer {
            Ok(body) => finish(&inner, broker, generation, request.ticket, Ok(body)),
            Err(e) => {
                tracing::warn!(
                    broker = %broker,
                    address = %format!("{}:{}", address.host, address.port),
                    error = %e,
                    "controller to broker request failed; retrying"
                );
                conn = None;
                glommio::timer::sleep(inner.config.retry_backoff).await;
            }
        }
    }
}

fn finish(
    inner: &Inner,
    broker: BrokerId,
    generation: u64,
    ticket: u64,
    answer: Result<Bytes, ChannelError>,
) {
    if !inner
        .state
        .borrow_mut()
        .on_answered(broker, generation, ticket)
    {
        return;
    }
    let waiter = inner.waiters.borrow_mut().remove(&ticket);
    if let Some((_, slot)) = waiter {
        deliver(&slot, answer);
    }
}

/// Size prefix, request header (v1, or v2 for flexible versions) and body.
fn request_frame(
    client_id: &str,
    correlation_id: i32,
    request: &QueuedRequest,
) -> Result<Bytes, ChannelError> {
    let api = Api::Zk(request.api);
    let header = RequestHeader::default()
        .with_request_api_key(api.code())
        .with_request_api_version(request.version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_owned())));
    let mut head = BytesMut::new();
    header
        .encode(&mut head, api.request_header_version(request.version))
        .map_err(|e| ChannelError::Encode(e.to_string()))?;
    let size = i32::try_from(head.len() + request.body.len())
        .map_err(|_| ChannelError::Encode("request too large".into()))?;
    let mut frame = BytesMut::with_capacity(4 + head.len() + request.body.len());
    frame.put_i32(size);
    frame.put_slice(&head);
    frame.put_slice(&request.body);
    Ok(frame.freeze())
}

/// Write `frame`, read one response frame, check its correlation id and
/// return the body after the response header.
async fn round_trip(
    stream: &mut TcpStream,
    frame: &[u8],
    correlation_id: i32,
    api: Api,
    version: i16,
) -> std::io::Result<Bytes> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    stream.write_all(frame).await?;
    stream.flush().await?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await?;
    let size = usize::try_from(i32::from_be_bytes(size))
        .map_err(|_| invalid("negative response size".into()))?;
    // A control response is a few bytes; refuse anything absurd.
    if size > 100 << 20 {
        return Err(invalid(format!("response of {size} bytes")));
    }
    let mut buf = vec![0u8; size];
    stream.read_exact(&mut buf).await?;
    let mut body = Bytes::from(buf);
    let header = ResponseHeader::decode(&mut body, api.response_header_version(version))
        .map_err(|e| invalid(e.to_string()))?;
    if header.correlation_id != correlation_id {
        return Err(invalid(format!(
            "correlation id {} for request {correlation_id}",
            header.correlation_id
        )));
    }
    if !body.has_remaining() {
        return Err(invalid("empty response body".into()));
    }
    Ok(body)
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
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata, 8, body(b"a"))
            .unwrap();
        let b = s
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata, 8, body(b"b"))
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
            s.on_enqueue(BrokerId(3), ZkApi::UpdateMetadata, 8, body(b"x")),
            None
        );
    }

    #[test]
    fn re_registration_drops_the_queue_and_starts_a_new_generation() {
        let mut s = ChannelState::new();
        s.on_add_broker(BrokerId(1), 10, addr(1));
        assert!(s.on_add_broker(BrokerId(1), 10, addr(1)).is_empty(), "same");
        let t = s
            .on_enqueue(BrokerId(1), ZkApi::UpdateMetadata, 8, body(b"a"))
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
        s.on_enqueue(BrokerId(1), ZkApi::UpdateMetadata, 8, body(b"b"));
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

    #[test]
    fn frames_carry_header_v2_for_update_metadata_v8_and_the_client_id() {
        let req = QueuedRequest {
            api: ZkApi::UpdateMetadata,
            version: 8,
            body: body(b"B"),
            ticket: 1,
        };
        let frame = request_frame("2", 7, &req).unwrap();
        // size, key 6, version 8, correlation 7, client id "2", no tags, body.
        assert_eq!(
            &frame[..],
            &[0, 0, 0, 13, 0, 6, 0, 8, 0, 0, 0, 7, 0, 1, b'2', 0, b'B']
        );
        let v5 = QueuedRequest { version: 5, ..req };
        let frame = request_frame("2", 7, &v5).unwrap();
        assert_eq!(frame.len(), 4 + 11 + 1, "header v1 has no tagged fields");
    }
}
