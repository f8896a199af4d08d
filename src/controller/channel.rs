//! `[drv]` The controller → broker channel: Kafka 3.9's
//! `ControllerChannelManager` and `RequestSendThread` on glommio.
//!
//! One connection and one FIFO request queue per live broker, to its
//! endpoint on `control.plane.listener.name` if set, else on the
//! inter-broker listener (`inter.broker.listener.name`, else
//! `security.inter.broker.protocol`): `ControllerChannelManager.addNewBroker`. A sender task per broker
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
//! The queue rules are the pure [`queue::ChannelState`] (unit-tested there
//! without sockets); [`ControllerChannel`] is the driver.

pub mod queue;

pub use queue::{inter_broker_address, BrokerAddress, ChannelAction, ChannelState, QueuedRequest};

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use crate::io::broker_stream::BrokerStream;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use kafka_protocol_39::messages::leader_and_isr_response::LeaderAndIsrResponse;
use kafka_protocol_39::messages::stop_replica_response::StopReplicaResponse;
use kafka_protocol_39::messages::update_metadata_response::UpdateMetadataResponse;
use kafka_protocol_39::messages::{RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};

use crate::io::local_sync::Notify;
use crate::metadata::leader_and_isr::{
    stop_replica_errors, LeaderAndIsr, PartitionErrors, StopReplica, LEADER_AND_ISR_VERSION,
    STOP_REPLICA_VERSION,
};
use crate::metadata::update_metadata::{AnnouncedPartition, LiveBroker, UpdateMetadata};
use crate::protocol::api::{Api, ZkApi};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ControllerEpoch};

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
#[derive(Debug, Clone)]
pub struct ChannelConfig {
    pub retry_backoff: Duration,
    pub socket_timeout: Duration,
    /// The TLS client configuration of the listener the channel connects
    /// on (`None`: PLAINTEXT).
    pub tls: crate::io::broker_stream::BrokerLink,
}

impl Default for ChannelConfig {
    fn default() -> Self {
        Self {
            retry_backoff: Duration::from_millis(100),
            socket_timeout: Duration::from_millis(30_000),
            tls: crate::io::broker_stream::BrokerLink::default(),
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
        api: impl Into<Api>,
        version: i16,
        request: &R,
    ) -> impl Future<Output = Result<Bytes, ChannelError>> {
        let queued = self.enqueue(broker, api.into(), version, request);
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

    /// Send LeaderAndIsr v7 to `broker` (what a 3.9 controller sends,
    /// `ControllerChannelManager`); its top-level and per-partition errors,
    /// v7's topic ids named back through `request.topic_ids`.
    pub fn send_leader_and_isr(
        &self,
        broker: BrokerId,
        request: &LeaderAndIsr,
    ) -> impl Future<Output = Result<PartitionErrors, ChannelError>> {
        let answer = self.send(
            broker,
            ZkApi::LeaderAndIsr,
            LEADER_AND_ISR_VERSION,
            &request.to_request(),
        );
        let request = request.clone();
        async move {
            let mut body = answer.await?;
            let resp = LeaderAndIsrResponse::decode(&mut body, LEADER_AND_ISR_VERSION)
                .map_err(|e| ChannelError::Decode(e.to_string()))?;
            Ok(request.errors_from_response(&resp, LEADER_AND_ISR_VERSION))
        }
    }

    /// Send StopReplica v4 to `broker`; its top-level and per-partition
    /// errors.
    pub fn send_stop_replica(
        &self,
        broker: BrokerId,
        request: &StopReplica,
    ) -> impl Future<Output = Result<PartitionErrors, ChannelError>> {
        let answer = self.send(
            broker,
            ZkApi::StopReplica,
            STOP_REPLICA_VERSION,
            &request.to_request(),
        );
        async move {
            let mut body = answer.await?;
            let resp = StopReplicaResponse::decode(&mut body, STOP_REPLICA_VERSION)
                .map_err(|e| ChannelError::Decode(e.to_string()))?;
            Ok(stop_replica_errors(&resp))
        }
    }

    fn enqueue<R: Encodable>(
        &self,
        broker: BrokerId,
        api: Api,
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
    let mut conn: Option<BrokerStream> = None;
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
        let api = request.api;
        let answer = glommio::timer::timeout(inner.config.socket_timeout, async {
            if conn.is_none() {
                let addr = format!("{}:{}", address.host, address.port);
                let tls = &inner.config.tls;
                conn = Some(
                    BrokerStream::connect(&addr, tls)
                        .await
                        .map_err(glommio::GlommioError::IoError)?,
                );
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
    let api = request.api;
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
    stream: &mut BrokerStream,
    frame: &[u8],
    correlation_id: i32,
    api: Api,
    version: i16,
) -> std::io::Result<Bytes> {
    let invalid = |m: String| std::io::Error::new(std::io::ErrorKind::InvalidData, m);
    // KIP-368: renew the SASL session first when it is due.
    stream.reauthenticate_if_due().await?;
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

    fn body(b: &'static [u8]) -> Bytes {
        Bytes::from_static(b)
    }

    #[test]
    fn frames_carry_header_v2_for_update_metadata_v8_and_the_client_id() {
        let req = QueuedRequest {
            api: ZkApi::UpdateMetadata.into(),
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
