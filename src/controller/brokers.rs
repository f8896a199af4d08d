//! Cluster membership in the store (Kafka's `KafkaZkClient` helpers the
//! controller and the broker share): the persistent top-level znodes, broker
//! registration under `/brokers/ids`, the cluster id and the controller
//! epoch.

use rand::Rng;

use super::admin_error::{corrupt, AdminError};
use crate::types::{BrokerId, ControllerEpoch};
use crate::zk::paths::{self, kafka_uuid, BrokerIdZNode, ClusterIdZNode};
use crate::zk::store::{CreateMode, MetadataStore, StoreError};

/// Used for partition state when `/controller_epoch` does not exist yet
/// (Kafka's first elected controller writes epoch 1).
const FIRST_CONTROLLER_EPOCH: ControllerEpoch = ControllerEpoch(1);

/// Creates Kafka's persistent top-level znodes if missing
/// (`KafkaZkClient.createTopLevelPaths`). Idempotent; run at start-up.
pub async fn create_top_level_paths<S: MetadataStore>(store: &S) -> Result<(), AdminError> {
    for path in paths::PERSISTENT_PATHS {
        if store.exists(path).await?.is_none() {
            match crate::zk::store::create_recursive(store, path, &[], CreateMode::Persistent).await
            {
                Ok(_) | Err(StoreError::NodeExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// Broker ids registered under `/brokers/ids`, ascending.
pub async fn live_brokers<S: MetadataStore>(store: &S) -> Result<Vec<BrokerId>, AdminError> {
    let names = match store.children(paths::BROKER_IDS).await {
        Ok(names) => names,
        Err(StoreError::NoNode(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut ids: Vec<BrokerId> = names.iter().filter_map(|n| n.parse().ok()).collect();
    ids.sort_unstable();
    Ok(ids)
}

/// The registered brokers with their racks (`broker.rack`), ascending by
/// id: what replica assignment places replicas on (Kafka's
/// `getBrokerMetadatas`). A registration that does not decode counts
/// without a rack.
pub async fn live_brokers_with_racks<S: MetadataStore>(
    store: &S,
) -> Result<Vec<(BrokerId, Option<String>)>, AdminError> {
    let ids = live_brokers(store).await?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let rack = match store.get(&paths::broker_id(id)).await {
            Ok((data, _)) => BrokerIdZNode::decode(&data).ok().and_then(|z| z.rack),
            Err(StoreError::NoNode(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        out.push((id, rack));
    }
    Ok(out)
}

/// Registers this broker: ephemeral `/brokers/ids/<id>` with a v5 payload
/// for one PLAINTEXT listener. `NodeExists` means the id is taken.
pub async fn register_broker<S: MetadataStore>(
    store: &S,
    broker_id: BrokerId,
    host: &str,
    port: i32,
    timestamp_ms: i64,
) -> Result<BrokerIdZNode, AdminError> {
    let registration = BrokerIdZNode::plaintext(host, port, timestamp_ms);
    register_broker_znode(store, broker_id, &registration).await?;
    Ok(registration)
}

/// Registers an arbitrary (multi-listener) registration.
pub async fn register_broker_znode<S: MetadataStore>(
    store: &S,
    broker_id: BrokerId,
    registration: &BrokerIdZNode,
) -> Result<(), AdminError> {
    create_top_level_paths(store).await?;
    let path = paths::broker_id(broker_id);
    store
        .create(&path, &registration.encode(), CreateMode::Ephemeral)
        .await?;
    Ok(())
}

/// This broker's epoch: the czxid of its `/brokers/ids/<id>` znode
/// (KIP-380; `KafkaZkClient.registerBroker` returns the same); `None` when
/// it is not registered.
pub async fn broker_epoch<S: MetadataStore>(
    store: &S,
    broker_id: BrokerId,
) -> Result<Option<i64>, AdminError> {
    Ok(store
        .exists(&paths::broker_id(broker_id))
        .await?
        .map(|stat| stat.czxid))
}

/// Returns the cluster id, creating `/cluster/id` with a fresh Kafka Uuid
/// the first time (`KafkaZkClient.getOrCreateClusterId`).
pub async fn ensure_cluster_id<S: MetadataStore, R: Rng + ?Sized>(
    store: &S,
    rng: &mut R,
) -> Result<String, AdminError> {
    match store.get(paths::CLUSTER_ID).await {
        Ok((data, _)) => {
            return ClusterIdZNode::decode(&data)
                .map(|z| z.id)
                .map_err(|e| corrupt(paths::CLUSTER_ID, e))
        }
        Err(StoreError::NoNode(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let id = kafka_uuid::to_string(&kafka_uuid::random(rng));
    let data = ClusterIdZNode::new(&id).encode();
    match crate::zk::store::create_recursive(
        store,
        paths::CLUSTER_ID,
        &data,
        CreateMode::Persistent,
    )
    .await
    {
        Ok(_) => Ok(id),
        // Another broker won the race: use its id.
        Err(StoreError::NodeExists(_)) => {
            let (data, _) = store.get(paths::CLUSTER_ID).await?;
            ClusterIdZNode::decode(&data)
                .map(|z| z.id)
                .map_err(|e| corrupt(paths::CLUSTER_ID, e))
        }
        Err(e) => Err(e.into()),
    }
}

pub(super) async fn controller_epoch<S: MetadataStore>(
    store: &S,
) -> Result<ControllerEpoch, AdminError> {
    match store.get(paths::CONTROLLER_EPOCH).await {
        Ok((data, _)) => {
            paths::decode_controller_epoch(&data).map_err(|e| corrupt(paths::CONTROLLER_EPOCH, e))
        }
        Err(StoreError::NoNode(_)) => Ok(FIRST_CONTROLLER_EPOCH),
        Err(e) => Err(e.into()),
    }
}

/// This broker's `/brokers/ids/<id>` payload for its advertised listeners
/// (Kafka's `BrokerIdZNode.encode`, version 5, `KafkaServer.createBrokerInfo`):
/// every endpoint as `NAME://host:port` in config order (IPv6 in
/// brackets), the listener → security protocol map of those endpoints,
/// `host`/`port` of the first PLAINTEXT one (null / -1 without one), the
/// rack when `broker.rack` is set.
pub fn registration_for(
    listeners: &[(crate::config::Listener, crate::config::SecurityProtocol)],
    rack: Option<&str>,
    timestamp_ms: i64,
) -> BrokerIdZNode {
    let mut reg = BrokerIdZNode::plaintext("", -1, timestamp_ms);
    reg.listener_security_protocol_map.clear();
    reg.endpoints.clear();
    reg.host = None;
    for (l, protocol) in listeners {
        if *protocol == crate::config::SecurityProtocol::Plaintext && reg.host.is_none() {
            reg.host = Some(l.host.clone());
            reg.port = i32::from(l.port);
        }
        reg.listener_security_protocol_map
            .insert(l.name.clone(), protocol.name().to_owned());
        reg.endpoints.push(l.to_string());
    }
    reg.rack = rack.map(str::to_string);
    reg
}

/// Registers `registration` as this session's ephemeral
/// `/brokers/ids/<id>` and returns the broker epoch: the znode's czxid.
/// A live registration of another session is Kafka's start-up failure
/// (`KafkaZkClient.checkedEphemeralCreate`).
pub async fn register_with_epoch<S: MetadataStore>(
    store: &S,
    broker_id: BrokerId,
    registration: &BrokerIdZNode,
) -> Result<i64, String> {
    let path = paths::broker_id(broker_id);
    match register_broker_znode(store, broker_id, registration).await {
        Ok(()) => {}
        Err(AdminError::Store(StoreError::NodeExists(_))) => {
            let owner = store
                .exists(&path)
                .await
                .ok()
                .flatten()
                .map_or(0, |s| s.ephemeral_owner);
            return Err(format!(
                "Error while creating ephemeral at {path}, node already exists and owner \
                 '{owner}' does not match current session '{}'",
                store.current_session()
            ));
        }
        Err(e) => return Err(format!("registering broker {broker_id} at {path}: {e}")),
    }
    let (_, stat) = store
        .get(&path)
        .await
        .map_err(|e| format!("reading back {path}: {e}"))?;
    Ok(stat.czxid)
}

/// A live broker as `/brokers/ids/<id>` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub id: BrokerId,
    /// The czxid of its registration (Kafka's broker epoch).
    pub epoch: i64,
    pub registration: BrokerIdZNode,
}

impl LiveBroker {
    /// The registration as UpdateMetadata / LeaderAndIsr name a broker:
    /// every endpoint `NAME://host:port` with its listener's security
    /// protocol (Kafka's `Broker.fromJson` endpoints).
    pub fn announced(&self) -> crate::metadata::update_metadata::LiveBroker {
        use crate::metadata::update_metadata::{BrokerListener, LiveBroker as Announced};
        let endpoints = self
            .registration
            .endpoints
            .iter()
            .filter_map(|e| {
                let (name, rest) = e.split_once("://")?;
                let (host, port) = rest.rsplit_once(':')?;
                // IPv6 hosts are written in brackets (`EndPoint.connectionString`).
                let host = host.strip_prefix('[').unwrap_or(host);
                let host = host.strip_suffix(']').unwrap_or(host);
                let protocol = self
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
        Announced {
            id: self.id,
            endpoints,
            rack: self.registration.rack.clone(),
        }
    }
}

/// Kafka's `SecurityProtocol` ids (PLAINTEXT for a name it does not know).
fn security_protocol_id(name: &str) -> i16 {
    name.parse::<crate::config::SecurityProtocol>()
        .map_or(0, crate::config::SecurityProtocol::id)
}

/// Every registered broker with its epoch, ascending by id. A registration
/// that does not decode is logged with its path and left out (the
/// controller keeps working); one gone between list and read is skipped.
pub async fn read_live_brokers<S: MetadataStore>(
    store: &S,
    ids: &[BrokerId],
) -> Result<Vec<LiveBroker>, StoreError> {
    let mut out = Vec::with_capacity(ids.len());
    for &id in ids {
        let path = paths::broker_id(id);
        match store.get(&path).await {
            Ok((data, stat)) => match BrokerIdZNode::decode(&data) {
                Ok(registration) => out.push(LiveBroker {
                    id,
                    epoch: stat.czxid,
                    registration,
                }),
                Err(e) => {
                    tracing::warn!(%path, error = %e.0, "ignoring a malformed broker registration")
                }
            },
            Err(StoreError::NoNode(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod registration_tests {
    use super::*;
    use crate::config::{Listener, SecurityProtocol};
    use crate::zk::embedded::EmbeddedStore;
    use futures_lite::future::block_on;

    #[test]
    fn the_registration_lists_every_advertised_listener_and_the_rack() {
        let at = |name: &str, host: &str, port| Listener {
            name: name.into(),
            host: host.into(),
            port,
        };
        let listeners = [
            (at("INTERNAL", "10.0.1.1", 9093), SecurityProtocol::SaslSsl),
            (
                at("PLAINTEXT", "10.0.0.1", 9092),
                SecurityProtocol::Plaintext,
            ),
            (at("CONTROL", "::1", 9094), SecurityProtocol::Ssl),
            (
                at("EXTERNAL", "10.0.2.1", 9095),
                SecurityProtocol::Plaintext,
            ),
        ];
        let reg = registration_for(&listeners, Some("r1"), 1700000000000);
        let json: serde_json::Value = serde_json::from_slice(&reg.encode()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "features": {},
                "listener_security_protocol_map": {
                    "INTERNAL": "SASL_SSL", "PLAINTEXT": "PLAINTEXT", "CONTROL": "SSL",
                    "EXTERNAL": "PLAINTEXT"
                },
                "endpoints": [
                    "INTERNAL://10.0.1.1:9093", "PLAINTEXT://10.0.0.1:9092",
                    "CONTROL://[::1]:9094", "EXTERNAL://10.0.2.1:9095"
                ],
                "rack": "r1",
                "jmx_port": -1,
                "port": 9092,
                "host": "10.0.0.1",
                "version": 5,
                "timestamp": "1700000000000"
            })
        );
        // Without a PLAINTEXT endpoint: host null, port -1.
        let reg = registration_for(&listeners[..1], None, 1);
        let json: serde_json::Value = serde_json::from_slice(&reg.encode()).unwrap();
        assert_eq!(json["host"], serde_json::Value::Null);
        assert_eq!(json["port"], -1);
    }

    #[test]
    fn a_second_registration_of_one_id_fails_with_kafkas_message_and_epochs_are_czxids() {
        block_on(async {
            let a = EmbeddedStore::in_memory();
            let b = a.new_session().unwrap();
            let reg = BrokerIdZNode::plaintext("h", 9092, 1);
            let epoch = register_with_epoch(&a, BrokerId(1), &reg).await.unwrap();
            let err = register_with_epoch(&b, BrokerId(1), &reg)
                .await
                .unwrap_err();
            assert!(
                err.contains("/brokers/ids/1, node already exists and owner"),
                "{err}"
            );
            b.create("/brokers/ids/7", b"{oops", CreateMode::Ephemeral)
                .await
                .unwrap();
            let live = read_live_brokers(&a, &[BrokerId(1), BrokerId(7), BrokerId(9)])
                .await
                .unwrap();
            assert_eq!(
                live.len(),
                1,
                "the malformed and the missing one are left out"
            );
            assert_eq!((live[0].id, live[0].epoch), (BrokerId(1), epoch));
        });
    }
}
