//! `[pure]` Kafka error codes (`org.apache.kafka.common.protocol.Errors`).
//!
//! `ErrorCode` is the i16 that crosses the wire. Layers keep their own error
//! enums and map them to an `ErrorCode` only at the protocol edge.

use std::fmt;

/// A Kafka error code as sent in responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub i16);

macro_rules! error_codes {
    ($(($name:ident, $code:expr, $variant:ident),)*) => {
        impl ErrorCode {
            $(
                #[doc = concat!("Kafka `", stringify!($name), "` (", stringify!($code), ").")]
                pub const $name: ErrorCode = ErrorCode($code);
            )*

            /// Kafka's name for this code (`Errors.java`), or `None` if unknown.
            pub fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($code => Some(stringify!($name)),)*
                    _ => None,
                }
            }
        }

        #[cfg(test)]
        const ALL: &[(ErrorCode, Option<kafka_protocol::ResponseError>)] = &[
            $((ErrorCode::$name, error_codes!(@variant $variant)),)*
        ];
    };
    (@variant None) => { None };
    (@variant $variant:ident) => { Some(kafka_protocol::ResponseError::$variant) };
}

error_codes! {
(UNKNOWN_SERVER_ERROR, -1, UnknownServerError),
(NONE, 0, None),
(OFFSET_OUT_OF_RANGE, 1, OffsetOutOfRange),
(CORRUPT_MESSAGE, 2, CorruptMessage),
(UNKNOWN_TOPIC_OR_PARTITION, 3, UnknownTopicOrPartition),
(INVALID_FETCH_SIZE, 4, InvalidFetchSize),
(LEADER_NOT_AVAILABLE, 5, LeaderNotAvailable),
(NOT_LEADER_OR_FOLLOWER, 6, NotLeaderOrFollower),
(REQUEST_TIMED_OUT, 7, RequestTimedOut),
(BROKER_NOT_AVAILABLE, 8, BrokerNotAvailable),
(REPLICA_NOT_AVAILABLE, 9, ReplicaNotAvailable),
(MESSAGE_TOO_LARGE, 10, MessageTooLarge),
(STALE_CONTROLLER_EPOCH, 11, StaleControllerEpoch),
(OFFSET_METADATA_TOO_LARGE, 12, OffsetMetadataTooLarge),
(NETWORK_EXCEPTION, 13, NetworkException),
(COORDINATOR_LOAD_IN_PROGRESS, 14, CoordinatorLoadInProgress),
(COORDINATOR_NOT_AVAILABLE, 15, CoordinatorNotAvailable),
(NOT_COORDINATOR, 16, NotCoordinator),
(INVALID_TOPIC_EXCEPTION, 17, InvalidTopicException),
(RECORD_LIST_TOO_LARGE, 18, RecordListTooLarge),
(NOT_ENOUGH_REPLICAS, 19, NotEnoughReplicas),
(NOT_ENOUGH_REPLICAS_AFTER_APPEND, 20, NotEnoughReplicasAfterAppend),
(INVALID_REQUIRED_ACKS, 21, InvalidRequiredAcks),
(ILLEGAL_GENERATION, 22, IllegalGeneration),
(INCONSISTENT_GROUP_PROTOCOL, 23, InconsistentGroupProtocol),
(INVALID_GROUP_ID, 24, InvalidGroupId),
(UNKNOWN_MEMBER_ID, 25, UnknownMemberId),
(INVALID_SESSION_TIMEOUT, 26, InvalidSessionTimeout),
(REBALANCE_IN_PROGRESS, 27, RebalanceInProgress),
(INVALID_COMMIT_OFFSET_SIZE, 28, InvalidCommitOffsetSize),
(TOPIC_AUTHORIZATION_FAILED, 29, TopicAuthorizationFailed),
(GROUP_AUTHORIZATION_FAILED, 30, GroupAuthorizationFailed),
(CLUSTER_AUTHORIZATION_FAILED, 31, ClusterAuthorizationFailed),
(INVALID_TIMESTAMP, 32, InvalidTimestamp),
(UNSUPPORTED_SASL_MECHANISM, 33, UnsupportedSaslMechanism),
(ILLEGAL_SASL_STATE, 34, IllegalSaslState),
(UNSUPPORTED_VERSION, 35, UnsupportedVersion),
(TOPIC_ALREADY_EXISTS, 36, TopicAlreadyExists),
(INVALID_PARTITIONS, 37, InvalidPartitions),
(INVALID_REPLICATION_FACTOR, 38, InvalidReplicationFactor),
(INVALID_REPLICA_ASSIGNMENT, 39, InvalidReplicaAssignment),
(INVALID_CONFIG, 40, InvalidConfig),
(NOT_CONTROLLER, 41, NotController),
(INVALID_REQUEST, 42, InvalidRequest),
(UNSUPPORTED_FOR_MESSAGE_FORMAT, 43, UnsupportedForMessageFormat),
(POLICY_VIOLATION, 44, PolicyViolation),
(OUT_OF_ORDER_SEQUENCE_NUMBER, 45, OutOfOrderSequenceNumber),
(DUPLICATE_SEQUENCE_NUMBER, 46, DuplicateSequenceNumber),
(INVALID_PRODUCER_EPOCH, 47, InvalidProducerEpoch),
(INVALID_TXN_STATE, 48, InvalidTxnState),
(INVALID_PRODUCER_ID_MAPPING, 49, InvalidProducerIdMapping),
(INVALID_TRANSACTION_TIMEOUT, 50, InvalidTransactionTimeout),
(CONCURRENT_TRANSACTIONS, 51, ConcurrentTransactions),
(TRANSACTION_COORDINATOR_FENCED, 52, TransactionCoordinatorFenced),
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED, 53, TransactionalIdAuthorizationFailed),
(SECURITY_DISABLED, 54, SecurityDisabled),
(OPERATION_NOT_ATTEMPTED, 55, OperationNotAttempted),
(KAFKA_STORAGE_ERROR, 56, KafkaStorageError),
(LOG_DIR_NOT_FOUND, 57, LogDirNotFound),
(SASL_AUTHENTICATION_FAILED, 58, SaslAuthenticationFailed),
(UNKNOWN_PRODUCER_ID, 59, UnknownProducerId),
(REASSIGNMENT_IN_PROGRESS, 60, ReassignmentInProgress),
(DELEGATION_TOKEN_AUTH_DISABLED, 61, DelegationTokenAuthDisabled),
(DELEGATION_TOKEN_NOT_FOUND, 62, DelegationTokenNotFound),
(DELEGATION_TOKEN_OWNER_MISMATCH, 63, DelegationTokenOwnerMismatch),
(DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, 64, DelegationTokenRequestNotAllowed),
(DELEGATION_TOKEN_AUTHORIZATION_FAILED, 65, DelegationTokenAuthorizationFailed),
(DELEGATION_TOKEN_EXPIRED, 66, DelegationTokenExpired),
(INVALID_PRINCIPAL_TYPE, 67, InvalidPrincipalType),
(NON_EMPTY_GROUP, 68, NonEmptyGroup),
(GROUP_ID_NOT_FOUND, 69, GroupIdNotFound),
(FETCH_SESSION_ID_NOT_FOUND, 70, FetchSessionIdNotFound),
(INVALID_FETCH_SESSION_EPOCH, 71, InvalidFetchSessionEpoch),
(LISTENER_NOT_FOUND, 72, ListenerNotFound),
(TOPIC_DELETION_DISABLED, 73, TopicDeletionDisabled),
(FENCED_LEADER_EPOCH, 74, FencedLeaderEpoch),
(UNKNOWN_LEADER_EPOCH, 75, UnknownLeaderEpoch),
(UNSUPPORTED_COMPRESSION_TYPE, 76, UnsupportedCompressionType),
(STALE_BROKER_EPOCH, 77, StaleBrokerEpoch),
(OFFSET_NOT_AVAILABLE, 78, OffsetNotAvailable),
(MEMBER_ID_REQUIRED, 79, MemberIdRequired),
(PREFERRED_LEADER_NOT_AVAILABLE, 80, PreferredLeaderNotAvailable),
(GROUP_MAX_SIZE_REACHED, 81, GroupMaxSizeReached),
(FENCED_INSTANCE_ID, 82, FencedInstanceId),
(ELIGIBLE_LEADERS_NOT_AVAILABLE, 83, EligibleLeadersNotAvailable),
(ELECTION_NOT_NEEDED, 84, ElectionNotNeeded),
(NO_REASSIGNMENT_IN_PROGRESS, 85, NoReassignmentInProgress),
(GROUP_SUBSCRIBED_TO_TOPIC, 86, GroupSubscribedToTopic),
(INVALID_RECORD, 87, InvalidRecord),
(UNSTABLE_OFFSET_COMMIT, 88, UnstableOffsetCommit),
(THROTTLING_QUOTA_EXCEEDED, 89, ThrottlingQuotaExceeded),
(PRODUCER_FENCED, 90, ProducerFenced),
(RESOURCE_NOT_FOUND, 91, ResourceNotFound),
(DUPLICATE_RESOURCE, 92, DuplicateResource),
(UNACCEPTABLE_CREDENTIAL, 93, UnacceptableCredential),
(INCONSISTENT_VOTER_SET, 94, InconsistentVoterSet),
(INVALID_UPDATE_VERSION, 95, InvalidUpdateVersion),
(FEATURE_UPDATE_FAILED, 96, FeatureUpdateFailed),
(PRINCIPAL_DESERIALIZATION_FAILURE, 97, PrincipalDeserializationFailure),
(SNAPSHOT_NOT_FOUND, 98, SnapshotNotFound),
(POSITION_OUT_OF_RANGE, 99, PositionOutOfRange),
(UNKNOWN_TOPIC_ID, 100, UnknownTopicId),
(DUPLICATE_BROKER_REGISTRATION, 101, DuplicateBrokerRegistration),
(BROKER_ID_NOT_REGISTERED, 102, BrokerIdNotRegistered),
(INCONSISTENT_TOPIC_ID, 103, InconsistentTopicId),
(INCONSISTENT_CLUSTER_ID, 104, InconsistentClusterId),
(TRANSACTIONAL_ID_NOT_FOUND, 105, TransactionalIdNotFound),
(FETCH_SESSION_TOPIC_ID_ERROR, 106, FetchSessionTopicIdError),
(INELIGIBLE_REPLICA, 107, IneligibleReplica),
(NEW_LEADER_ELECTED, 108, NewLeaderElected),
(OFFSET_MOVED_TO_TIERED_STORAGE, 109, OffsetMovedToTieredStorage),
(FENCED_MEMBER_EPOCH, 110, FencedMemberEpoch),
(UNRELEASED_INSTANCE_ID, 111, UnreleasedInstanceId),
(UNSUPPORTED_ASSIGNOR, 112, UnsupportedAssignor),
(STALE_MEMBER_EPOCH, 113, StaleMemberEpoch),
(MISMATCHED_ENDPOINT_TYPE, 114, MismatchedEndpointType),
(UNSUPPORTED_ENDPOINT_TYPE, 115, UnsupportedEndpointType),
(UNKNOWN_CONTROLLER_ID, 116, UnknownControllerId),
(UNKNOWN_SUBSCRIPTION_ID, 117, UnknownSubscriptionId),
(TELEMETRY_TOO_LARGE, 118, TelemetryTooLarge),
(INVALID_REGISTRATION, 119, InvalidRegistration),
(TRANSACTION_ABORTABLE, 120, TransactionAbortable),}

impl ErrorCode {
    /// True for `NONE`.
    pub fn is_ok(self) -> bool {
        self.0 == 0
    }
}

impl From<ErrorCode> for i16 {
    fn from(e: ErrorCode) -> i16 {
        e.0
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "UNKNOWN_ERROR_CODE({})", self.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_kafka_protocol_crate_table() {
        // The crate's table is generated from Kafka's Errors.java; ours is
        // written by hand, so a mismatch means a typo on our side.
        for (code, crate_variant) in ALL {
            let from_crate = kafka_protocol::ResponseError::try_from_code(code.0);
            assert_eq!(&from_crate, crate_variant, "code {code}");
        }
    }

    #[test]
    fn display_names_the_kafka_error() {
        assert_eq!(
            ErrorCode::UNSUPPORTED_VERSION.to_string(),
            "UNSUPPORTED_VERSION(35)"
        );
        assert_eq!(ErrorCode(9999).to_string(), "UNKNOWN_ERROR_CODE(9999)");
        assert!(ErrorCode::NONE.is_ok());
        assert!(!ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.is_ok());
    }
}
