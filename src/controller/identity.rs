//! A ZooKeeper-mode broker's identity at start-up (Kafka 3.9
//! `KafkaServer.startup`, `getOrGenerateBrokerId`,
//! `KafkaZkClient.generateBrokerSequenceId`): the cluster id from
//! `/cluster/id` checked against `meta.properties`, and the broker id —
//! configured, stored, or generated through `/brokers/seqid`.
//!
//! [`choose_broker_id`] and [`check_cluster_id`] are the pure rules; the
//! store steps are [`resolve`] and [`generate_broker_id`]. Reading and
//! writing `meta.properties` is the caller's (boot).

use rand::Rng;

use super::admin_error::AdminError;
use super::brokers;
use crate::zk::paths;
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};

/// What `meta.properties` held, if the file exists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredMeta {
    pub broker_id: Option<i32>,
    pub cluster_id: Option<String>,
}

/// How the broker id is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrokerIdChoice {
    Use(i32),
    /// `broker.id=-1`, nothing stored, generation on: take one from
    /// `/brokers/seqid`.
    Generate,
}

/// Kafka's `getOrGenerateBrokerId`: a configured id must match a stored
/// one (InconsistentBrokerIdException); a stored id wins over -1; -1 with
/// nothing stored generates one when `broker.id.generation.enable`.
pub fn choose_broker_id(
    configured: i32,
    stored: Option<i32>,
    generation_enabled: bool,
) -> Result<BrokerIdChoice, String> {
    match (configured, stored) {
        (c, Some(s)) if c >= 0 && c != s => Err(format!(
            "Configured broker.id {c} doesn't match stored broker.id Some({s}) in \
             meta.properties. If you moved your data, make sure your configured broker.id \
             matches. If you intend to create a new broker, you should remove all data in \
             your data directories (log.dirs)."
        )),
        (_, Some(s)) => Ok(BrokerIdChoice::Use(s)),
        (c, None) if c >= 0 => Ok(BrokerIdChoice::Use(c)),
        (_, None) if generation_enabled => Ok(BrokerIdChoice::Generate),
        (c, None) => Err(format!(
            "broker.id={c} needs broker.id.generation.enable=true (or a broker.id >= 0)"
        )),
    }
}

/// Kafka's InconsistentClusterIdException check: the cluster this
/// ZooKeeper holds must be the one the log dirs belong to.
pub fn check_cluster_id(in_store: &str, stored: Option<&str>) -> Result<(), String> {
    match stored {
        Some(s) if s != in_store => Err(format!(
            "The Cluster ID {in_store} doesn't match stored clusterId Some({s}) in \
             meta.properties. The broker is trying to join the wrong cluster. Configured \
             zookeeper.connect may be wrong."
        )),
        _ => Ok(()),
    }
}

/// `/brokers/seqid`'s version after one more (unconditional) set, plus
/// `reserved.broker.max.id`: 1001, 1002, … (`generateBrokerSequenceId`).
pub async fn generate_broker_id<S: MetadataStore>(
    store: &S,
    reserved_max_id: i32,
) -> Result<i32, AdminError> {
    let stat = match store.set(paths::BROKER_SEQUENCE_ID, &[], None).await {
        Ok(stat) => stat,
        Err(StoreError::NoNode(_)) => {
            match create_recursive(
                store,
                paths::BROKER_SEQUENCE_ID,
                &[],
                CreateMode::Persistent,
            )
            .await
            {
                Ok(_) | Err(StoreError::NodeExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
            store.set(paths::BROKER_SEQUENCE_ID, &[], None).await?
        }
        Err(e) => return Err(e.into()),
    };
    Ok(stat.version + reserved_max_id)
}

/// The broker id and cluster id a ZooKeeper-mode broker starts with: the
/// top-level paths created, `/cluster/id` read or created, checked against
/// `stored`; the broker id chosen (generated if need be). The caller
/// writes both into `meta.properties`.
pub async fn resolve<S: MetadataStore, R: Rng + ?Sized>(
    store: &S,
    stored: &StoredMeta,
    configured_broker_id: i32,
    generation_enabled: bool,
    reserved_max_id: i32,
    rng: &mut R,
) -> Result<(i32, String), String> {
    brokers::create_top_level_paths(store)
        .await
        .map_err(|e| e.to_string())?;
    let cluster_id = brokers::ensure_cluster_id(store, rng)
        .await
        .map_err(|e| e.to_string())?;
    check_cluster_id(&cluster_id, stored.cluster_id.as_deref())?;
    let broker_id =
        match choose_broker_id(configured_broker_id, stored.broker_id, generation_enabled)? {
            BrokerIdChoice::Use(id) => id,
            BrokerIdChoice::Generate => generate_broker_id(store, reserved_max_id)
                .await
                .map_err(|e| format!("generating a broker id: {e}"))?,
        };
    Ok((broker_id, cluster_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::embedded::EmbeddedStore;
    use futures_lite::future::block_on;

    #[test]
    fn broker_id_rules_follow_kafka() {
        use BrokerIdChoice::*;
        assert_eq!(choose_broker_id(3, None, true), Ok(Use(3)));
        assert_eq!(choose_broker_id(3, Some(3), true), Ok(Use(3)));
        assert_eq!(choose_broker_id(-1, Some(1001), true), Ok(Use(1001)));
        assert_eq!(choose_broker_id(-1, None, true), Ok(Generate));
        let err = choose_broker_id(4, Some(3), true).unwrap_err();
        assert!(err.contains("Configured broker.id 4 doesn't match stored broker.id Some(3)"));
        assert!(choose_broker_id(-1, None, false).is_err());
    }

    #[test]
    fn a_different_cluster_id_refuses_the_start() {
        assert!(check_cluster_id("abc", None).is_ok());
        assert!(check_cluster_id("abc", Some("abc")).is_ok());
        let err = check_cluster_id("abc", Some("xyz")).unwrap_err();
        assert!(err.contains("The Cluster ID abc doesn't match stored clusterId Some(xyz)"));
    }

    #[test]
    fn generated_ids_are_1001_1002_and_stored_ones_are_kept() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            let mut rng = rand::thread_rng();
            let none = StoredMeta::default();
            let (first, cluster) = resolve(&s, &none, -1, true, 1000, &mut rng).await.unwrap();
            let (second, again) = resolve(&s, &none, -1, true, 1000, &mut rng).await.unwrap();
            assert_eq!((first, second), (1001, 1002));
            assert_eq!(cluster, again, "one /cluster/id");
            // A restart with meta.properties keeps its id.
            let kept = StoredMeta {
                broker_id: Some(first),
                cluster_id: Some(cluster.clone()),
            };
            assert_eq!(
                resolve(&s, &kept, -1, true, 1000, &mut rng).await.unwrap(),
                (1001, cluster)
            );
            let wrong = StoredMeta {
                broker_id: Some(first),
                cluster_id: Some("AAAAAAAAAAAAAAAAAAAAAA".into()),
            };
            let err = resolve(&s, &wrong, -1, true, 1000, &mut rng)
                .await
                .unwrap_err();
            assert!(err.contains("trying to join the wrong cluster"), "{err}");
        });
    }
}
