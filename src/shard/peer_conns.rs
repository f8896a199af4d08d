//! `[io]` Connections from a data shard's coordinator side to other
//! brokers, kept between requests (Kafka keeps one channel per broker for
//! its transaction markers and for `AddPartitionsToTxnManager`): WriteTxnMarkers
//! and KIP-890 verifications take an idle connection to the broker's address,
//! or open one, and give it back after a complete round trip. A connection
//! whose call failed, or whose caller gave up mid-call (a timeout drops
//! the future), is never given back.

use std::cell::RefCell;
use std::collections::HashMap;

use kafka_protocol_39::messages::ApiKey;
use kafka_protocol_39::protocol::{Decodable, Encodable};

use crate::replication::fetcher::conn::{LeaderConn, Versions};

/// Idle connections kept per address.
const IDLE_PER_PEER: usize = 4;

/// Largest response read on these connections.
const MAX_RESPONSE_BYTES: usize = 1 << 20;

pub struct PeerConns {
    idle: RefCell<HashMap<String, Vec<LeaderConn>>>,
    /// The inter-broker listener's TLS client configuration (`None`:
    /// PLAINTEXT).
    tls: crate::io::broker_stream::BrokerLink,
}

impl PeerConns {
    pub fn new(tls: crate::io::broker_stream::BrokerLink) -> Self {
        Self {
            idle: RefCell::default(),
            tls,
        }
    }

    /// One request to `addr` (client id `client_id`) at the version
    /// `version` picks from the peer's ApiVersions; `Ok(None)` when the
    /// peer speaks no version of it.
    pub async fn call<Req: Encodable, Resp: Decodable>(
        &self,
        addr: &str,
        client_id: &str,
        key: ApiKey,
        version: impl Fn(&Versions) -> Option<i16>,
        request: &Req,
    ) -> std::io::Result<Option<Resp>> {
        let idle = self.idle.borrow_mut().get_mut(addr).and_then(Vec::pop);
        if let Some(conn) = idle {
            // A kept connection the peer closed meanwhile fails at once:
            // that one call is tried again on a new connection.
            if let Ok(answer) = self.call_on(addr, conn, key, &version, request).await {
                return Ok(answer);
            }
        }
        let conn = LeaderConn::connect(
            addr,
            client_id.to_owned(),
            MAX_RESPONSE_BYTES,
            -1,
            &self.tls,
        )
        .await?;
        self.call_on(addr, conn, key, &version, request).await
    }

    async fn call_on<Req: Encodable, Resp: Decodable>(
        &self,
        addr: &str,
        mut conn: LeaderConn,
        key: ApiKey,
        version: &impl Fn(&Versions) -> Option<i16>,
        request: &Req,
    ) -> std::io::Result<Option<Resp>> {
        let Some(v) = version(&conn.versions) else {
            self.give_back(addr, conn);
            return Ok(None);
        };
        let resp = conn.call(key, v, request).await?;
        self.give_back(addr, conn);
        Ok(Some(resp))
    }

    fn give_back(&self, addr: &str, conn: LeaderConn) {
        let mut idle = self.idle.borrow_mut();
        let list = idle.entry(addr.to_owned()).or_default();
        if list.len() < IDLE_PER_PEER {
            list.push(conn);
        }
    }
}
