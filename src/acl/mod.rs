//! `[pure]` Kafka's ACLs and its ZooKeeper-mode authorizer.
//!
//! - this file: the ACL model — resource types, pattern types, operations,
//!   permissions, [`ResourcePattern`], [`AccessControlEntry`],
//!   [`AclBinding`] — with their wire codes and names
//!   (`clients/.../resource/{ResourceType,PatternType,ResourcePattern}.java`,
//!   `clients/.../acl/{AclOperation,AclPermissionType,AccessControlEntry,AclBinding}.java`,
//!   `clients/.../utils/SecurityUtils.java`);
//! - [`authorizer`]: `kafka.security.authorizer.AclAuthorizer`'s decision
//!   (`authorizeAction`, `authorizeByResourceType`, super users,
//!   `allow.everyone.if.no.acl.found`) over an [`authorizer::AclCache`];
//! - [`filter`]: `AclBindingFilter` matching (DescribeAcls, DeleteAcls);
//! - [`znode`]: the ZooKeeper layout `AclAuthorizer` stores ACLs in
//!   (`/kafka-acl`, `/kafka-acl-extended/prefixed`, change notifications;
//!   `core/src/main/scala/kafka/zk/ZkData.scala`).

pub mod authorizer;
pub mod decisions;
pub mod filter;
pub mod znode;

use std::fmt;

/// `ResourcePattern.WILDCARD_RESOURCE`: a LITERAL pattern with this name
/// matches every resource of its type.
pub const WILDCARD_RESOURCE: &str = "*";
/// `AclEntry.WILDCARD_PRINCIPAL_STRING`.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// `AclEntry.WILDCARD_HOST`.
pub const WILDCARD_HOST: &str = "*";
/// `Resource.CLUSTER_NAME`: the only name of the CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// `org.apache.kafka.common.resource.ResourceType` (wire codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ResourceType {
    Unknown,
    Any,
    Topic,
    Group,
    Cluster,
    TransactionalId,
    DelegationToken,
    User,
}

/// The concrete resource types, in code order (`AclAuthorizer` creates a
/// znode directory for each).
pub const RESOURCE_TYPES: [ResourceType; 6] = [
    ResourceType::Topic,
    ResourceType::Group,
    ResourceType::Cluster,
    ResourceType::TransactionalId,
    ResourceType::DelegationToken,
    ResourceType::User,
];

impl ResourceType {
    pub fn code(self) -> i8 {
        match self {
            Self::Unknown => 0,
            Self::Any => 1,
            Self::Topic => 2,
            Self::Group => 3,
            Self::Cluster => 4,
            Self::TransactionalId => 5,
            Self::DelegationToken => 6,
            Self::User => 7,
        }
    }

    /// `ResourceType.fromCode`: an unknown code is UNKNOWN.
    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Topic,
            3 => Self::Group,
            4 => Self::Cluster,
            5 => Self::TransactionalId,
            6 => Self::DelegationToken,
            7 => Self::User,
            _ => Self::Unknown,
        }
    }

    /// The Java enum name (`TOPIC`, `TRANSACTIONAL_ID`): literal change
    /// notifications and the prefixed ones' JSON use it.
    pub fn enum_name(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Any => "ANY",
            Self::Topic => "TOPIC",
            Self::Group => "GROUP",
            Self::Cluster => "CLUSTER",
            Self::TransactionalId => "TRANSACTIONAL_ID",
            Self::DelegationToken => "DELEGATION_TOKEN",
            Self::User => "USER",
        }
    }

    /// `SecurityUtils.resourceTypeName`: the znode directory name
    /// (`Topic`, `TransactionalId`).
    pub fn znode_name(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::Any => "Any",
            Self::Topic => "Topic",
            Self::Group => "Group",
            Self::Cluster => "Cluster",
            Self::TransactionalId => "TransactionalId",
            Self::DelegationToken => "DelegationToken",
            Self::User => "User",
        }
    }

    /// `SecurityUtils.resourceType` / `ResourceType.fromString`: the
    /// PascalCase name, the enum name, or either case-insensitively.
    pub fn parse(name: &str) -> Self {
        let folded: String = name.chars().filter(|c| *c != '_').collect();
        RESOURCE_TYPES
            .into_iter()
            .find(|t| t.znode_name().eq_ignore_ascii_case(&folded))
            .unwrap_or(Self::Unknown)
    }

    /// The operations Kafka defines for this type (`AclEntry.supportedOperations`),
    /// which authorized-operations fields report.
    pub fn supported_operations(self) -> &'static [Operation] {
        use Operation::*;
        match self {
            Self::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            Self::Group => &[Read, Describe, Delete],
            Self::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            Self::TransactionalId => &[Describe, Write],
            Self::DelegationToken => &[Describe],
            Self::User => &[CreateTokens, DescribeTokens],
            Self::Unknown | Self::Any => &[],
        }
    }
}

/// `org.apache.kafka.common.resource.PatternType` (wire codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PatternType {
    Unknown,
    Any,
    Match,
    Literal,
    Prefixed,
}

impl PatternType {
    pub fn code(self) -> i8 {
        match self {
            Self::Unknown => 0,
            Self::Any => 1,
            Self::Match => 2,
            Self::Literal => 3,
            Self::Prefixed => 4,
        }
    }

    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Match,
            3 => Self::Literal,
            4 => Self::Prefixed,
            _ => Self::Unknown,
        }
    }

    pub fn enum_name(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Any => "ANY",
            Self::Match => "MATCH",
            Self::Literal => "LITERAL",
            Self::Prefixed => "PREFIXED",
        }
    }

    /// `PatternType.fromString` (case-insensitive enum name).
    pub fn parse(name: &str) -> Self {
        [Self::Any, Self::Match, Self::Literal, Self::Prefixed]
            .into_iter()
            .find(|p| p.enum_name().eq_ignore_ascii_case(name))
            .unwrap_or(Self::Unknown)
    }
}

/// `org.apache.kafka.common.acl.AclOperation` (wire codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Unknown,
    Any,
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
    CreateTokens,
    DescribeTokens,
}

/// Every concrete operation and `All`, in code order.
const OPERATIONS: [Operation; 13] = [
    Operation::All,
    Operation::Read,
    Operation::Write,
    Operation::Create,
    Operation::Delete,
    Operation::Alter,
    Operation::Describe,
    Operation::ClusterAction,
    Operation::DescribeConfigs,
    Operation::AlterConfigs,
    Operation::IdempotentWrite,
    Operation::CreateTokens,
    Operation::DescribeTokens,
];

impl Operation {
    pub fn code(self) -> i8 {
        match self {
            Self::Unknown => 0,
            Self::Any => 1,
            Self::All => 2,
            Self::Read => 3,
            Self::Write => 4,
            Self::Create => 5,
            Self::Delete => 6,
            Self::Alter => 7,
            Self::Describe => 8,
            Self::ClusterAction => 9,
            Self::DescribeConfigs => 10,
            Self::AlterConfigs => 11,
            Self::IdempotentWrite => 12,
            Self::CreateTokens => 13,
            Self::DescribeTokens => 14,
        }
    }

    pub fn from_code(code: i8) -> Self {
        if code == 1 {
            return Self::Any;
        }
        OPERATIONS
            .into_iter()
            .find(|o| o.code() == code)
            .unwrap_or(Self::Unknown)
    }

    /// `SecurityUtils.operationName`: what the znode JSON holds
    /// (`Read`, `IdempotentWrite`, `All`).
    pub fn znode_name(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::Any => "Any",
            Self::All => "All",
            Self::Read => "Read",
            Self::Write => "Write",
            Self::Create => "Create",
            Self::Delete => "Delete",
            Self::Alter => "Alter",
            Self::Describe => "Describe",
            Self::ClusterAction => "ClusterAction",
            Self::DescribeConfigs => "DescribeConfigs",
            Self::AlterConfigs => "AlterConfigs",
            Self::IdempotentWrite => "IdempotentWrite",
            Self::CreateTokens => "CreateTokens",
            Self::DescribeTokens => "DescribeTokens",
        }
    }

    /// `SecurityUtils.operation`: the PascalCase name, its upper-case
    /// form, or (`AclOperation.fromString`) the enum name in any case.
    pub fn parse(name: &str) -> Self {
        let folded: String = name.chars().filter(|c| *c != '_').collect();
        OPERATIONS
            .into_iter()
            .find(|o| o.znode_name().eq_ignore_ascii_case(&folded))
            .unwrap_or(Self::Unknown)
    }
}

/// `org.apache.kafka.common.acl.AclPermissionType` (wire codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Permission {
    Unknown,
    Any,
    Deny,
    Allow,
}

impl Permission {
    pub fn code(self) -> i8 {
        match self {
            Self::Unknown => 0,
            Self::Any => 1,
            Self::Deny => 2,
            Self::Allow => 3,
        }
    }

    pub fn from_code(code: i8) -> Self {
        match code {
            1 => Self::Any,
            2 => Self::Deny,
            3 => Self::Allow,
            _ => Self::Unknown,
        }
    }

    /// `SecurityUtils.permissionTypeName`: `Allow` / `Deny`.
    pub fn znode_name(self) -> &'static str {
        match self {
            Self::Unknown => "Unknown",
            Self::Any => "Any",
            Self::Deny => "Deny",
            Self::Allow => "Allow",
        }
    }

    pub fn parse(name: &str) -> Self {
        [Self::Deny, Self::Allow]
            .into_iter()
            .find(|p| p.znode_name().eq_ignore_ascii_case(name))
            .unwrap_or(Self::Unknown)
    }
}

/// `ResourcePattern`: a resource type, a name and how the name matches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    pub fn literal(resource_type: ResourceType, name: &str) -> Self {
        Self {
            resource_type,
            name: name.to_owned(),
            pattern_type: PatternType::Literal,
        }
    }

    pub fn prefixed(resource_type: ResourceType, name: &str) -> Self {
        Self {
            resource_type,
            name: name.to_owned(),
            pattern_type: PatternType::Prefixed,
        }
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type.enum_name(),
            self.name,
            self.pattern_type.enum_name()
        )
    }
}

/// `AccessControlEntry`: who (principal `Type:name`), from where (host
/// or `*`), what, and whether it is allowed.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccessControlEntry {
    pub principal: String,
    pub host: String,
    pub operation: Operation,
    pub permission: Permission,
}

/// `AclBinding`: an entry on a pattern.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// `AclBinding.isUnknown`: any element UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.pattern.resource_type == ResourceType::Unknown
            || self.pattern.pattern_type == PatternType::Unknown
            || self.entry.operation == Operation::Unknown
            || self.entry.permission == Permission::Unknown
    }
}

/// `KafkaPrincipal` compared by type and name: `Type:name` split at the
/// first `:` (`SecurityUtils.parseKafkaPrincipal`); `None` without one.
pub fn split_principal(principal: &str) -> Option<(&str, &str)> {
    principal.split_once(':')
}

/// `InetAddress.getHostAddress()` of a client address as Java renders it,
/// which ACL hosts are compared with as strings: IPv4 dotted, an
/// IPv4-mapped IPv6 address as IPv4, other IPv6 as eight lower-case hex
/// groups without zero compression (`0:0:0:0:0:0:0:1`). A leading `/`
/// (`InetAddress.toString`) is dropped; text that is no address is kept.
pub fn java_host_address(client_host: &str) -> String {
    let text = client_host.trim_start_matches('/');
    match text.parse::<core::net::IpAddr>() {
        Ok(core::net::IpAddr::V4(v4)) => v4.to_string(),
        Ok(core::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6
                .segments()
                .iter()
                .map(|s| format!("{s:x}"))
                .collect::<Vec<_>>()
                .join(":"),
        },
        Err(_) => text.to_owned(),
    }
}

#[cfg(test)]
mod tests;
