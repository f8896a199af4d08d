//! `[pure]` The topic admin operations data shards forward to the control
//! shard (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
//! IncrementalAlterConfigs, InitProducerId) and their answers, one result
//! per requested item, in order.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::admin_error::AdminError;
use super::topic_admin::{AlterConfigOp, NewTopic, TopicInfo};
use crate::protocol::ErrorCode;
use crate::types::{BrokerId, ProducerId};

/// A topic named by DeleteTopics: by name, or by topic id (v6+).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TopicRef {
    Name(String),
    Id(Uuid),
}

/// One CreatePartitions entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPartitions {
    pub topic: String,
    pub count: i32,
    pub assignments: Option<Vec<Vec<BrokerId>>>,
}

/// An AlterConfigs or IncrementalAlterConfigs of one BROKER resource,
/// for the control shard: `broker` is this broker's id
/// (`/config/brokers/<id>`) or `None` for the cluster-wide default
/// (`/config/brokers/<default>`, an empty resource name).
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerConfigCall {
    pub broker: Option<i32>,
    pub change: BrokerConfigChange,
    pub validate_only: bool,
}

/// How a broker resource's stored config changes.
#[derive(Debug, Clone, PartialEq)]
pub enum BrokerConfigChange {
    /// IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT.
    Incremental(Vec<AlterConfigOp>),
    /// AlterConfigs: the entity's config becomes exactly this.
    Replace(BTreeMap<String, String>),
}

/// Topic admin operations data shards forward to the control shard.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminRequest {
    CreateTopics {
        topics: Vec<NewTopic>,
        validate_only: bool,
    },
    DeleteTopics {
        topics: Vec<TopicRef>,
    },
    CreatePartitions {
        topics: Vec<NewPartitions>,
        validate_only: bool,
    },
    IncrementalAlterTopicConfigs {
        topics: Vec<(String, Vec<AlterConfigOp>)>,
        validate_only: bool,
    },
    AlterTopicConfigs {
        topics: Vec<(String, BTreeMap<String, String>)>,
        validate_only: bool,
    },
    /// Non-transactional InitProducerId. Whatever id and epoch the request
    /// carries, the answer is a new id at epoch 0 (see `init_producer_id`),
    /// so they are not forwarded.
    InitProducerId,
}

/// Why one admin item failed: the Kafka error code and message to return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminFailure {
    pub code: ErrorCode,
    pub message: String,
}

impl From<AdminError> for AdminFailure {
    fn from(e: AdminError) -> Self {
        Self {
            code: ErrorCode(e.error_code()),
            message: e.to_string(),
        }
    }
}

pub type AdminResult<T> = Result<T, AdminFailure>;

/// Answers to [`AdminRequest`]s, one result per requested item, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminResponse {
    CreatedTopics(Vec<AdminResult<TopicInfo>>),
    /// The deleted topic's name and id.
    DeletedTopics(Vec<AdminResult<(String, Uuid)>>),
    CreatedPartitions(Vec<AdminResult<()>>),
    AlteredConfigs(Vec<AdminResult<()>>),
    ProducerId(Result<(ProducerId, i16), ErrorCode>),
}
