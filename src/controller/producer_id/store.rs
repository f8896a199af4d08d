//! `[drv]` The async half of producer-id allocation: drives the pure
//! [`ProducerIdManager`] (`controller::producer_id`) over a
//! [`MetadataStore`], reading and conditionally rewriting
//! `/latest_producer_id_block` and retrying lost races (Kafka's
//! `ZkProducerIdManager.getNewProducerIdBlock` / `generateProducerId`).
//! The admin manager's InitProducerId and the controller's
//! AllocateProducerIds (KIP-730) call it.

use super::{
    ProducerIdAction, ProducerIdError, ProducerIdManager, ProducerIdsBlock,
    MAX_BLOCK_WRITE_ATTEMPTS,
};
use crate::types::ProducerId;
use crate::zk::paths;
use crate::zk::store::{create_recursive, CreateMode, MetadataStore, StoreError};

/// Reserves a new block through `store`, retrying lost races.
pub async fn allocate_producer_id_block<S: MetadataStore>(
    store: &S,
    manager: &mut ProducerIdManager,
) -> Result<ProducerIdsBlock, ProducerIdError> {
    let path = paths::LATEST_PRODUCER_ID_BLOCK;
    match create_recursive(store, path, &[], CreateMode::Persistent).await {
        Ok(_) | Err(StoreError::NodeExists(_)) => {}
        Err(e) => return Err(e.into()),
    }
    for _ in 0..MAX_BLOCK_WRITE_ATTEMPTS {
        let (data, stat) = store.get(path).await?;
        let ProducerIdAction::WriteBlockZnode {
            data,
            expected_version,
        } = manager.on_block_read(&data, stat.version)?
        else {
            continue;
        };
        match store.set(path, &data, Some(expected_version)).await {
            Ok(_) => {
                if let Some(block) = manager.on_block_written() {
                    return Ok(block);
                }
            }
            Err(StoreError::BadVersion(_)) => {
                manager.on_write_conflict();
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(ProducerIdError::TooManyConflicts)
}

/// Kafka's `generateProducerId`: from the current block, reserving a new
/// block when it is used up.
pub async fn generate_producer_id<S: MetadataStore>(
    store: &S,
    manager: &mut ProducerIdManager,
) -> Result<ProducerId, ProducerIdError> {
    if let Some(id) = manager.generate_producer_id() {
        return Ok(id);
    }
    allocate_producer_id_block(store, manager).await?;
    manager
        .generate_producer_id()
        .ok_or(ProducerIdError::Exhausted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::producer_id::tests::block_json;
    use crate::controller::producer_id::PRODUCER_ID_BLOCK_SIZE;
    use crate::types::BrokerId;
    use crate::zk::embedded::EmbeddedStore;
    use futures_lite::future::block_on;

    #[test]
    fn two_brokers_sharing_a_store_get_disjoint_blocks() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            let mut a = ProducerIdManager::new(BrokerId(1));
            let mut b = ProducerIdManager::new(BrokerId(2));
            assert_eq!(generate_producer_id(&s, &mut a).await.unwrap(), 0);
            assert_eq!(generate_producer_id(&s, &mut b).await.unwrap(), 1000);
            for _ in 1..PRODUCER_ID_BLOCK_SIZE {
                generate_producer_id(&s, &mut a).await.unwrap();
            }
            // a's block is used up: next id comes from block 2000..2999.
            assert_eq!(generate_producer_id(&s, &mut a).await.unwrap(), 2000);
            let (data, stat) = s.get(paths::LATEST_PRODUCER_ID_BLOCK).await.unwrap();
            assert_eq!(
                data,
                br#"{"version":1,"broker":1,"block_start":"2000","block_end":"2999"}"#
            );
            assert_eq!(stat.version, 3);
        });
    }

    #[test]
    fn a_lost_race_is_retried_with_the_winners_block() {
        block_on(async {
            let s = EmbeddedStore::in_memory();
            let mut a = ProducerIdManager::new(BrokerId(1));
            s.create(paths::LATEST_PRODUCER_ID_BLOCK, b"", CreateMode::Persistent)
                .await
                .unwrap();
            // a reads version 0 and proposes 0..999, but broker 2 writes first.
            let ProducerIdAction::WriteBlockZnode {
                data,
                expected_version,
            } = a.on_block_read(b"", 0).unwrap()
            else {
                panic!("expected a write");
            };
            s.set(
                paths::LATEST_PRODUCER_ID_BLOCK,
                &block_json(2, 0, 999),
                Some(0),
            )
            .await
            .unwrap();
            assert!(matches!(
                s.set(
                    paths::LATEST_PRODUCER_ID_BLOCK,
                    &data,
                    Some(expected_version)
                )
                .await,
                Err(StoreError::BadVersion(_))
            ));
            a.on_write_conflict();
            let block = allocate_producer_id_block(&s, &mut a).await.unwrap();
            assert_eq!(block.first_producer_id, 1000);
        });
    }
}
