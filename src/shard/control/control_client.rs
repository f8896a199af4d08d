//! `[drv]` The data shards' side of the control shard's requests: a topic
//! admin operation, topic auto-creation, a controller's UpdateMetadata,
//! LeaderAndIsr and StopReplica, and v0 offsets kept in the metadata store.

use std::collections::BTreeSet;

use super::control_shard::acls::{AclCall, AclReply};
use super::control_shard::{ControlRequest, ControlResponse, ReassignmentCall, ReassignmentReply};
use crate::controller::admin_requests::{
    AdminFailure, AdminRequest, AdminResponse, BrokerConfigCall,
};
use crate::controller::rebalance::ElectionType;
use crate::controller::zk_mode::{
    AllocateAnswer, AlterAnswer, AlterAsk, ElectAnswer, ShutdownAnswer,
};
use crate::metadata::leader_and_isr::{LeaderAndIsr, PartitionErrors, StopReplica};
use crate::metadata::quotas::{QuotaCall, QuotaReply};
use crate::metadata::update_metadata::UpdateMetadata;
use crate::protocol::ErrorCode;
use crate::shard::context::{ShardContext, ShardRequest, ShardResponse};
use crate::shard::mesh::MeshError;
use crate::types::{BrokerId, TopicPartition};

/// A shard's side of the control shard's requests
/// ([`ShardContext::control_client`]).
pub struct ControlClient<'a> {
    ctx: &'a ShardContext,
}

impl<'a> ControlClient<'a> {
    pub fn new(ctx: &'a ShardContext) -> Self {
        Self { ctx }
    }

    /// Run an admin operation on the control shard; it answers once the
    /// resulting snapshot reached every data shard.
    pub async fn run_admin(&self, req: AdminRequest) -> Result<AdminResponse, MeshError> {
        let req = ShardRequest::Control(ControlRequest::Admin(Box::new(req)));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::Admin(resp)) => Ok(*resp),
            other => {
                tracing::warn!(?other, "unexpected answer from the control shard");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// Ask the control shard to auto-create `topics`: per topic NONE once
    /// it exists, or why not; `None` when the control shard cannot answer.
    pub async fn auto_create_topics(
        &self,
        topics: Vec<String>,
    ) -> Option<Vec<(String, ErrorCode)>> {
        let req = ShardRequest::Control(ControlRequest::AutoCreateTopics { topics });
        match self.ctx.call(self.ctx.control_peer(), req).await {
            Ok(ShardResponse::Control(ControlResponse::AutoCreated { results })) => Some(results),
            Ok(other) => {
                tracing::warn!(?other, "unexpected auto-create answer");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "auto-create unavailable");
                None
            }
        }
    }

    /// Apply a controller's UpdateMetadata on the control shard; it answers
    /// (NONE or the fencing error) once every data shard shows the result.
    pub async fn update_metadata(&self, req: UpdateMetadata) -> Result<ErrorCode, MeshError> {
        let req = ShardRequest::Control(ControlRequest::UpdateMetadata(Box::new(req)));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::UpdateMetadata(error)) => Ok(error),
            other => {
                tracing::warn!(?other, "unexpected UpdateMetadata answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// Apply a controller's LeaderAndIsr on the control shard; it answers
    /// once every owner opened or changed the partitions it hosts now.
    pub async fn leader_and_isr(&self, req: LeaderAndIsr) -> Result<PartitionErrors, MeshError> {
        let req = ShardRequest::Control(ControlRequest::LeaderAndIsr(Box::new(req)));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::LeaderAndIsr(errors)) => Ok(errors),
            other => {
                tracing::warn!(?other, "unexpected LeaderAndIsr answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// A partition leader's AlterPartition, to this broker's controller part.
    pub async fn alter_partition_received(&self, ask: AlterAsk) -> Result<AlterAnswer, MeshError> {
        let req = ShardRequest::Control(ControlRequest::AlterPartitionReceived(Box::new(ask)));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::AlterPartitionReceived(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected AlterPartition answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// A broker's ControlledShutdown, to this broker's controller part.
    pub async fn controlled_shutdown(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<ShutdownAnswer, MeshError> {
        let req = ShardRequest::Control(ControlRequest::ControlledShutdown {
            broker,
            broker_epoch,
        });
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::ControlledShutdown(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected ControlledShutdown answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// An admin client's ElectLeaders, to this broker's controller part.
    pub async fn elect_leaders(
        &self,
        kind: ElectionType,
        partitions: Option<BTreeSet<TopicPartition>>,
    ) -> Result<ElectAnswer, MeshError> {
        let req = ShardRequest::Control(ControlRequest::ElectLeaders { kind, partitions });
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::ElectLeaders(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected ElectLeaders answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// Another broker's AllocateProducerIds, to this broker's controller
    /// part.
    pub async fn allocate_producer_ids(
        &self,
        broker: BrokerId,
        broker_epoch: i64,
    ) -> Result<AllocateAnswer, MeshError> {
        let req = ShardRequest::Control(ControlRequest::AllocateProducerIds {
            broker,
            broker_epoch,
        });
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::AllocateProducerIds(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected AllocateProducerIds answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// CreateAcls / DeleteAcls, to the control shard; answered once the
    /// new ACLs reached every data shard.
    pub async fn acls(&self, call: AclCall) -> Result<AclReply, MeshError> {
        let req = ShardRequest::Control(ControlRequest::Acls(call));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::Acls(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected ACL answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// A client-quota call, to the control shard.
    pub async fn client_quotas(&self, call: QuotaCall) -> Result<QuotaReply, MeshError> {
        let req = ShardRequest::Control(ControlRequest::ClientQuotas(call));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::ClientQuotas(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected client quota answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// Describe/AlterUserScramCredentials, to the control shard.
    pub async fn scram_credentials(
        &self,
        call: super::control_shard::scram_credentials::ScramCall,
    ) -> Result<super::control_shard::scram_credentials::ScramReply, MeshError> {
        let req = ShardRequest::Control(ControlRequest::ScramCredentials(call));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::ScramCredentials(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected SCRAM credentials answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// An admin client's reassignment call, to this broker's controller part.
    pub async fn reassignments(
        &self,
        call: ReassignmentCall,
    ) -> Result<ReassignmentReply, MeshError> {
        let req = ShardRequest::Control(ControlRequest::Reassignments(call));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::Reassignments(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected reassignment answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// A BROKER resource's AlterConfigs / IncrementalAlterConfigs, to the
    /// control shard.
    pub async fn broker_configs(
        &self,
        call: BrokerConfigCall,
    ) -> Result<Result<(), AdminFailure>, MeshError> {
        let req = ShardRequest::Control(ControlRequest::BrokerConfigs(call));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::BrokerConfigs(answer)) => Ok(answer),
            other => {
                tracing::warn!(?other, "unexpected broker config answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// Apply a controller's StopReplica on the control shard; it answers
    /// once the stopped partitions are closed (and deleted when asked).
    pub async fn stop_replica(&self, req: StopReplica) -> Result<PartitionErrors, MeshError> {
        let req = ShardRequest::Control(ControlRequest::StopReplica(Box::new(req)));
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::StopReplica(errors)) => Ok(errors),
            other => {
                tracing::warn!(?other, "unexpected StopReplica answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// OffsetCommit v0: store `offsets` of `group` in the metadata store
    /// (ZooKeeper in ZooKeeper mode); per offset NONE or why not.
    pub async fn commit_offsets_to_store(
        &self,
        group: String,
        offsets: Vec<(String, i32, i64)>,
    ) -> Result<Vec<ErrorCode>, MeshError> {
        let req = ShardRequest::Control(ControlRequest::CommitOffsetsToStore { group, offsets });
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::OffsetsCommittedToStore(errors)) => Ok(errors),
            other => {
                tracing::warn!(?other, "unexpected v0 offset commit answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// OffsetFetch v0: the offsets of `group` in the metadata store.
    pub async fn fetch_offsets_from_store(
        &self,
        group: String,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<Result<Option<i64>, ErrorCode>>, MeshError> {
        let req =
            ShardRequest::Control(ControlRequest::FetchOffsetsFromStore { group, partitions });
        match self.ctx.call(self.ctx.control_peer(), req).await? {
            ShardResponse::Control(ControlResponse::OffsetsFromStore(found)) => Ok(found),
            other => {
                tracing::warn!(?other, "unexpected v0 offset fetch answer");
                Err(MeshError::PeerGone(self.ctx.control_peer()))
            }
        }
    }

    /// A topic's stored config overrides (`/config/topics/<t>`, read by the
    /// control shard); `None` when the store could not be read.
    pub async fn stored_topic_configs(
        &self,
        topic: String,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        let req = ShardRequest::Control(ControlRequest::TopicConfigs { topic });
        match self.ctx.call(self.ctx.control_peer(), req).await {
            Ok(ShardResponse::Control(ControlResponse::TopicConfigs(found))) => found,
            other => {
                tracing::warn!(?other, "unexpected topic configs answer");
                None
            }
        }
    }

    /// Whether the controller's partition state names this broker leader
    /// of `tp` in `leader_epoch` ([`ControlShard::confirm_leadership`]).
    ///
    /// [`ControlShard::confirm_leadership`]: super::control_shard::ControlShard::confirm_leadership
    pub async fn confirm_leadership(
        &self,
        tp: TopicPartition,
        leader_epoch: i32,
    ) -> Result<(), String> {
        let req = ShardRequest::Control(ControlRequest::ConfirmLeadership { tp, leader_epoch });
        match self.ctx.call(self.ctx.control_peer(), req).await {
            Ok(ShardResponse::Control(ControlResponse::LeadershipConfirmed(answer))) => answer,
            other => Err(format!("unexpected leadership answer: {other:?}")),
        }
    }
}
