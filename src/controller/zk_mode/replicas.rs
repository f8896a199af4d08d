//! `[drv]` The replica state machine's changes (Kafka 3.9
//! `ZkReplicaStateMachine.doHandleStateChanges`): new replicas told they
//! follow, online replicas (re)told their partitions, offline ones stopped
//! and taken out of every ISR (`removeReplicasFromIsr`).

use super::{Duties, ZkBroker};
use crate::controller::core::ControllerEvent;
use crate::controller::request_batch::RequestBatch;
use crate::controller::state_machine::ReplicaState;
use crate::types::{BrokerId, TopicPartition};
use crate::zk::store::MetadataStore;

impl<S: MetadataStore + 'static, D: Duties + 'static> ZkBroker<S, D> {
    /// `ReplicaStateMachine.handleStateChanges` for `replicas` → `target`,
    /// decided by the controller core (`controller::core`); its writes
    /// (ISR removals) performed and its requests added to `batch`.
    pub(super) async fn replicas_to(
        &self,
        replicas: &[(TopicPartition, BrokerId)],
        target: ReplicaState,
        batch: &mut RequestBatch,
    ) {
        let event = ControllerEvent::ReplicasTo {
            job: self.core_token(),
            replicas: replicas.to_vec(),
            target,
        };
        self.drive_core(event, batch).await;
    }
}
