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
