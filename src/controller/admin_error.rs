//! `[pure]` Why a topic admin operation failed, with the Kafka error code
//! the CreateTopics / DeleteTopics / CreatePartitions / DescribeConfigs /
//! IncrementalAlterConfigs handlers put in their responses.

use super::assignment::AssignmentError;
use crate::config::topic::ConfigError;
use crate::zk::store::StoreError;

/// Kafka error codes used here (`org.apache.kafka.common.protocol.Errors`).
pub mod error_codes {
    pub const UNKNOWN_SERVER_ERROR: i16 = -1;
    pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
    pub const INVALID_TOPIC_EXCEPTION: i16 = 17;
    pub const TOPIC_ALREADY_EXISTS: i16 = 36;
    pub const INVALID_PARTITIONS: i16 = 37;
    pub const INVALID_REPLICATION_FACTOR: i16 = 38;
    pub const INVALID_REPLICA_ASSIGNMENT: i16 = 39;
    pub const INVALID_CONFIG: i16 = 40;
    pub const INVALID_REQUEST: i16 = 42;
}

/// A failed admin operation, with the Kafka error code to return.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    InvalidTopic(String),
    #[error("{0}")]
    TopicAlreadyExists(String),
    #[error("{0}")]
    UnknownTopicOrPartition(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidReplicaAssignment(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("{0}")]
    InvalidRequest(String),
    /// The metadata store failed (I/O, session): not the client's fault.
    #[error("metadata store error: {0}")]
    Store(#[from] StoreError),
    /// Kafka's `AdminOperationException`: not an `ApiException`, so Kafka
    /// answers UNKNOWN_SERVER_ERROR (e.g. CreateTopics over brokers of which
    /// only some have a rack).
    #[error("{0}")]
    AdminOperation(String),
    /// A znode holds data we cannot decode.
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
}

impl AdminError {
    /// The Kafka error code for responses.
    pub fn error_code(&self) -> i16 {
        use error_codes::*;
        match self {
            Self::InvalidTopic(_) => INVALID_TOPIC_EXCEPTION,
            Self::TopicAlreadyExists(_) => TOPIC_ALREADY_EXISTS,
            Self::UnknownTopicOrPartition(_) => UNKNOWN_TOPIC_OR_PARTITION,
            Self::InvalidPartitions(_) => INVALID_PARTITIONS,
            Self::InvalidReplicationFactor(_) => INVALID_REPLICATION_FACTOR,
            Self::InvalidReplicaAssignment(_) => INVALID_REPLICA_ASSIGNMENT,
            Self::InvalidConfig(_) => INVALID_CONFIG,
            Self::InvalidRequest(_) => INVALID_REQUEST,
            Self::Store(_) | Self::Corrupt(_) | Self::AdminOperation(_) => UNKNOWN_SERVER_ERROR,
        }
    }
}

impl From<ConfigError> for AdminError {
    fn from(e: ConfigError) -> Self {
        Self::InvalidConfig(e.to_string())
    }
}

impl From<AssignmentError> for AdminError {
    fn from(e: AssignmentError) -> Self {
        match e {
            AssignmentError::InvalidPartitions => Self::InvalidPartitions(e.to_string()),
            AssignmentError::ReplicationFactorNotPositive
            | AssignmentError::ReplicationFactorTooLarge { .. } => {
                Self::InvalidReplicationFactor(e.to_string())
            }
            AssignmentError::IncompleteRackInfo => Self::AdminOperation(e.to_string()),
        }
    }
}

pub fn corrupt(path: &str, e: impl std::fmt::Display) -> AdminError {
    AdminError::Corrupt(format!("{path}: {e}"))
}

pub fn unknown_topic(name: &str) -> AdminError {
    AdminError::UnknownTopicOrPartition(format!("Topic '{name}' does not exist."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignment_errors_map_to_kafkas_codes() {
        // Kafka's InvalidPartitionsException, InvalidReplicationFactorException
        // and AdminOperationException (no ApiException: UNKNOWN_SERVER_ERROR).
        let rows = [
            (
                AssignmentError::InvalidPartitions,
                error_codes::INVALID_PARTITIONS,
            ),
            (
                AssignmentError::ReplicationFactorNotPositive,
                error_codes::INVALID_REPLICATION_FACTOR,
            ),
            (
                AssignmentError::ReplicationFactorTooLarge {
                    replication_factor: 3,
                    brokers: 1,
                },
                error_codes::INVALID_REPLICATION_FACTOR,
            ),
            (
                AssignmentError::IncompleteRackInfo,
                error_codes::UNKNOWN_SERVER_ERROR,
            ),
        ];
        for (e, code) in rows {
            let message = e.to_string();
            let admin = AdminError::from(e);
            assert_eq!(admin.error_code(), code, "{message}");
            assert_eq!(admin.to_string(), message);
        }
    }
}
