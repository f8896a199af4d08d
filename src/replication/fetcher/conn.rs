//! `[io]` A replica fetcher's connection to its leader: one TCP stream to
//! the leader's inter-broker endpoint, one request in flight (Kafka's
//! `BrokerBlockingSender`), API versions negotiated by ApiVersions on
//! connect (Fetch ≤ 17, OffsetForLeaderEpoch ≤ 4, ListOffsets ≤ 7: what a
//! 3.9 follower sends). Anything malformed a leader sends is an
//! `InvalidData` error: the fetcher drops the connection and reconnects.
//!
//! `replica.socket.receive.buffer.bytes` is set with SO_RCVBUF (-1 leaves
//! the OS default, Kafka's rule for its `*.buffer.bytes` keys). Kafka sets
//! it before connecting; glommio's `TcpStream::connect` creates the socket
//! inside and offers no hook, so it is set right after the connect: the
//! buffer limit applies from then on, only the SYN's advertised window
//! scale was chosen without it (Linux picks the scale for the largest
//! buffer `tcp_rmem` allows, so a larger value still gets its window).

use std::os::fd::{AsRawFd, BorrowedFd};

use bytes::{BufMut, Bytes, BytesMut};
use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::TcpStream;

use crate::io::broker_stream::BrokerStream;
use kafka_protocol_39::messages::api_versions_request::ApiVersionsRequest;
use kafka_protocol_39::messages::api_versions_response::ApiVersionsResponse;
use kafka_protocol_39::messages::{ApiKey, RequestHeader, ResponseHeader};
use kafka_protocol_39::protocol::{Decodable, Encodable, StrBytes};

/// The versions this follower speaks with one leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Versions {
    pub fetch: i16,
    /// `None`: the leader has no OffsetForLeaderEpoch (truncation then
    /// relies on Fetch v12+'s `diverging_epoch`).
    pub offset_for_leader_epoch: Option<i16>,
    pub list_offsets: Option<i16>,
    /// AddPartitionsToTxn v4+ (KIP-890's broker-to-coordinator
    /// verification); `None`: the peer cannot verify (Kafka's
    /// `AddPartitionsToTxnManager` then skips verification).
    pub add_partitions_to_txn: Option<i16>,
}

/// Pick versions from the leader's ApiVersions ranges `(key, min, max)`.
pub fn negotiate(ranges: &[(i16, i16, i16)]) -> Option<Versions> {
    let pick = |key: ApiKey, ours_min: i16, ours_max: i16| {
        ranges
            .iter()
            .find(|&&(k, _, _)| k == key as i16)
            .and_then(|&(_, min, max)| {
                let v = max.min(ours_max);
                (v >= min.max(ours_min)).then_some(v)
            })
    };
    Some(Versions {
        fetch: pick(ApiKey::Fetch, 4, 17)?,
        offset_for_leader_epoch: pick(ApiKey::OffsetForLeaderEpoch, 2, 4),
        list_offsets: pick(ApiKey::ListOffsets, 1, 7),
        add_partitions_to_txn: pick(ApiKey::AddPartitionsToTxn, 4, 5),
    })
}

fn invalid(m: impl Into<String>) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, m.into())
}

pub struct LeaderConn {
    stream: BrokerStream,
    client_id: String,
    correlation_id: i32,
    max_response_bytes: usize,
    pub versions: Versions,
}

impl LeaderConn {
    /// Connect (over TLS with `tls`: the listener is SSL) and negotiate
    /// versions.
    pub async fn connect(
        addr: &str,
        client_id: String,
        max_response_bytes: usize,
        receive_buffer_bytes: i32,
        tls: &crate::io::broker_stream::BrokerLink,
    ) -> std::io::Result<Self> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(std::io::Error::from)?;
        let _ = stream.set_nodelay(true);
        set_receive_buffer(&stream, receive_buffer_bytes)?;
        let stream = BrokerStream::over(stream, addr, tls).await?;
        let mut conn = LeaderConn {
            stream,
            client_id,
            correlation_id: 0,
            max_response_bytes,
            versions: Versions {
                fetch: 4,
                offset_for_leader_epoch: None,
                list_offsets: None,
                add_partitions_to_txn: None,
            },
        };
        let resp: ApiVersionsResponse = conn
            .call(ApiKey::ApiVersions, 0, &ApiVersionsRequest::default())
            .await?;
        if resp.error_code != 0 {
            return Err(invalid(format!("ApiVersions error {}", resp.error_code)));
        }
        let ranges: Vec<(i16, i16, i16)> = resp
            .api_keys
            .iter()
            .map(|k| (k.api_key, k.min_version, k.max_version))
            .collect();
        conn.versions =
            negotiate(&ranges).ok_or_else(|| invalid("leader supports no usable Fetch version"))?;
        Ok(conn)
    }

    /// SO_RCVBUF as the kernel reports it (Linux doubles what was set).
    pub fn receive_buffer_bytes(&self) -> Option<usize> {
        receive_buffer(&self.stream).ok()
    }

    /// One request and its answer.
    pub async fn call<Req: Encodable, Resp: Decodable>(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &Req,
    ) -> std::io::Result<Resp> {
        // KIP-368: renew the SASL session first when it is due.
        self.stream.reauthenticate_if_due().await?;
        self.correlation_id = self.correlation_id.wrapping_add(1);
        let correlation_id = self.correlation_id;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_string(self.client_id.clone())));
        let mut body = BytesMut::new();
        header
            .encode(&mut body, key.request_header_version(version))
            .map_err(|e| invalid(e.to_string()))?;
        request
            .encode(&mut body, version)
            .map_err(|e| invalid(e.to_string()))?;
        let size = i32::try_from(body.len()).map_err(|_| invalid("request too large"))?;
        let mut frame = BytesMut::with_capacity(4 + body.len());
        frame.put_i32(size);
        frame.put_slice(&body);
        self.stream.write_all(&frame).await?;
        self.stream.flush().await?;
        let mut len = [0u8; 4];
        self.stream.read_exact(&mut len).await?;
        let len = usize::try_from(i32::from_be_bytes(len))
            .map_err(|_| invalid("negative response size"))?;
        if len > self.max_response_bytes {
            return Err(invalid(format!("response of {len} bytes")));
        }
        let mut buf = vec![0u8; len];
        self.stream.read_exact(&mut buf).await?;
        let mut body = Bytes::from(buf);
        let header = ResponseHeader::decode(&mut body, key.response_header_version(version))
            .map_err(|e| invalid(e.to_string()))?;
        if header.correlation_id != correlation_id {
            return Err(invalid(format!(
                "correlation id {} for request {correlation_id}",
                header.correlation_id
            )));
        }
        Resp::decode(&mut body, version).map_err(|e| invalid(e.to_string()))
    }
}

/// SO_RCVBUF to `bytes` unless it is -1 (or any value ≤ 0): the OS default.
pub fn set_receive_buffer(socket: &impl AsRawFd, bytes: i32) -> std::io::Result<()> {
    let Ok(size) = usize::try_from(bytes) else {
        return Ok(());
    };
    if size == 0 {
        return Ok(());
    }
    // SAFETY: `socket` owns the descriptor for the whole call, which is as
    // long as the borrow lives.
    let fd = unsafe { BorrowedFd::borrow_raw(socket.as_raw_fd()) };
    socket2::SockRef::from(&fd).set_recv_buffer_size(size)
}

/// SO_RCVBUF as the kernel reports it.
pub fn receive_buffer(socket: &impl AsRawFd) -> std::io::Result<usize> {
    // SAFETY: as in `set_receive_buffer`.
    let fd = unsafe { BorrowedFd::borrow_raw(socket.as_raw_fd()) };
    socket2::SockRef::from(&fd).recv_buffer_size()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_buffer_is_set_unless_minus_one() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let os_default = receive_buffer(&std::net::TcpStream::connect(addr).unwrap()).unwrap();
        let s = std::net::TcpStream::connect(addr).unwrap();
        set_receive_buffer(&s, 65_536).unwrap();
        assert!(
            receive_buffer(&s).unwrap() >= 65_536,
            "Linux reports twice what was set"
        );
        let s = std::net::TcpStream::connect(addr).unwrap();
        set_receive_buffer(&s, -1).unwrap();
        assert_eq!(
            receive_buffer(&s).unwrap(),
            os_default,
            "-1: the OS default"
        );
    }

    #[test]
    fn versions_are_the_highest_both_sides_speak() {
        let kafka_39 = [(1, 0, 17), (23, 0, 4), (2, 0, 9), (24, 0, 5)];
        assert_eq!(
            negotiate(&kafka_39),
            Some(Versions {
                fetch: 17,
                offset_for_leader_epoch: Some(4),
                list_offsets: Some(7),
                add_partitions_to_txn: Some(5),
            })
        );
        // A leader without OffsetForLeaderEpoch (shardlog before it lands).
        let older = [(1, 4, 16), (2, 1, 8)];
        assert_eq!(
            negotiate(&older),
            Some(Versions {
                fetch: 16,
                offset_for_leader_epoch: None,
                list_offsets: Some(7),
                add_partitions_to_txn: None,
            })
        );
        assert_eq!(negotiate(&[(1, 0, 3)]), None, "no Fetch v4+");
    }
}
