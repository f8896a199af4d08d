//! `[pure]` The coordinator's requests and answers: what the handlers
//! decode from the wire (any version) and encode back, free of wire types.

use crate::protocol::ErrorCode;

/// JoinGroup, any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    pub group_id: String,
    /// "" for a member without an id yet.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// v0 has none: the session timeout.
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// (name, metadata), in the member's order of preference.
    pub protocols: Vec<(String, Vec<u8>)>,
    /// v4+ (KIP-394): a member without an id is told MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// v9+ (KIP-814): the answer may tell a static leader to skip the
    /// assignment.
    pub supports_skip_assignment: bool,
    /// The id the member gets if it is new (`clientId-UUID`, or
    /// `instanceId-UUID` for a static member); the driver draws it.
    pub new_member_id: String,
}

/// One member as the leader sees it in its JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub metadata: Vec<u8>,
}

/// JoinGroup's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinAnswer {
    pub error: ErrorCode,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    /// KIP-814: a static leader rejoining a stable group keeps the
    /// assignment and must not compute a new one.
    pub skip_assignment: bool,
    pub member_id: String,
    /// The members with their metadata, for the leader only.
    pub members: Vec<JoinedMember>,
}

impl JoinAnswer {
    /// Kafka's `joinError`: no generation (-1), no protocol, no leader.
    pub fn error(member_id: &str, error: ErrorCode) -> Self {
        Self {
            error,
            generation: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.to_owned(),
            members: Vec::new(),
        }
    }
}

/// SyncGroup, any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRequest {
    pub group_id: String,
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: checked against the group's.
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// The leader's assignment (member id, assignment); empty otherwise.
    pub assignments: Vec<(String, Vec<u8>)>,
}

/// SyncGroup's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncAnswer {
    pub error: ErrorCode,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Vec<u8>,
}

impl SyncAnswer {
    pub fn error(error: ErrorCode) -> Self {
        Self {
            error,
            protocol_type: None,
            protocol_name: None,
            assignment: Vec::new(),
        }
    }
}

/// Heartbeat, any version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// LeaveGroup: v0–v2 one member, v3+ a batch (KIP-345).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveRequest {
    pub group_id: String,
    /// (member id — "" for a static member named by instance — , instance).
    pub members: Vec<(String, Option<String>)>,
}

/// LeaveGroup's answer: a top-level error, and one per member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveAnswer {
    pub error: ErrorCode,
    pub members: Vec<(String, Option<String>, ErrorCode)>,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPartition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: Option<String>,
    /// OffsetCommit v1's `commit_timestamp`; -1 (Kafka's
    /// `OffsetCommitRequest.DEFAULT_TIMESTAMP`, and every other version)
    /// stamps the commit with the coordinator's clock.
    pub commit_timestamp_ms: i64,
}

/// OffsetCommit, any version (the handler already answered partitions of
/// unknown topics).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRequest {
    pub group_id: String,
    /// -1 for a simple commit (no group management).
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v2–v4 `retention_time_ms`; -1 = the broker's retention.
    pub retention_ms: i64,
    pub partitions: Vec<CommitPartition>,
    /// TxnOffsetCommit: the transactional producer's id and epoch.
    pub txn: Option<crate::types::TxnWriter>,
}

/// OffsetFetch of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub group_id: String,
    /// `None`: every committed partition of the group.
    pub partitions: Option<Vec<(String, i32)>>,
    /// KIP-447: partitions with offsets of an open transaction answer
    /// UNSTABLE_OFFSET_COMMIT instead of the last committed offset.
    pub require_stable: bool,
}

/// One partition's committed offset (offset -1 when none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub error: ErrorCode,
}

/// OffsetFetch's answer for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchAnswer {
    pub error: ErrorCode,
    pub partitions: Vec<FetchedOffset>,
}

/// One member in DescribeGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub metadata: Vec<u8>,
    pub assignment: Vec<u8>,
}

/// DescribeGroups' answer for one group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedGroup {
    pub group_id: String,
    pub error: ErrorCode,
    pub state: String,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<DescribedMember>,
}

/// ListGroups' row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    pub state: String,
}

/// Any answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Join(JoinAnswer),
    Sync(SyncAnswer),
    Heartbeat(ErrorCode),
    Leave(LeaveAnswer),
    /// Per (topic, partition): the commit's error.
    Commit(Vec<(String, i32, ErrorCode)>),
    Fetch(FetchAnswer),
    Describe(DescribedGroup),
    DeleteGroups(Vec<(String, ErrorCode)>),
    /// A top-level error, or per (topic, partition) errors.
    OffsetDelete(Result<Vec<(String, i32, ErrorCode)>, ErrorCode>),
}
