//! `[pure]` Where and how Kafka 3.9's `AclAuthorizer` keeps ACLs in
//! ZooKeeper (`core/src/main/scala/kafka/zk/ZkData.scala`: `ZkAclStore`,
//! `LiteralAclStore`, `ExtendedAclStore`, `ResourceZNode`,
//! `LiteralAclChangeStore`, `ExtendedAclChangeStore`, `ExtendedAclChangeEvent`),
//! the same in the embedded store:
//!
//! - LITERAL patterns: `/kafka-acl/<ResourceType>/<name>`;
//! - PREFIXED patterns: `/kafka-acl-extended/prefixed/<ResourceType>/<prefix>`;
//! - data `{"version":1,"acls":[{"principal","permissionType","operation","host"}]}`
//!   (`AclEntry.toJsonCompatibleMap`; empty data = no ACLs);
//! - change notifications, PERSISTENT_SEQUENTIAL: literal
//!   `/kafka-acl-changes/acl_changes_<seq>` holding `TOPIC:orders`,
//!   prefixed `/kafka-acl-extended-changes/acl_changes_<seq>` holding
//!   `{"version":1,"resourceType":"GROUP","name":"app-","patternType":"PREFIXED"}`.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::{
    AccessControlEntry, Operation, PatternType, Permission, ResourcePattern, ResourceType,
};

/// `LiteralAclStore` root.
pub const LITERAL_ROOT: &str = "/kafka-acl";
/// `ExtendedAclStore(PREFIXED)` root (the pattern segment is lower case
/// in `ExtendedAclZNode.path`).
pub const PREFIXED_ROOT: &str = "/kafka-acl-extended/prefixed";
/// `LiteralAclChangeStore` notifications.
pub const LITERAL_CHANGES: &str = "/kafka-acl-changes";
/// `ExtendedAclChangeStore` notifications.
pub const EXTENDED_CHANGES: &str = "/kafka-acl-extended-changes";
/// `ZkAclChangeStore.SequenceNumberPrefix`.
pub const CHANGE_PREFIX: &str = "acl_changes_";

/// The store root of a pattern type (`None`: not storable).
pub fn root(pattern_type: PatternType) -> Option<&'static str> {
    match pattern_type {
        PatternType::Literal => Some(LITERAL_ROOT),
        PatternType::Prefixed => Some(PREFIXED_ROOT),
        _ => None,
    }
}

/// The change-notification directory of a pattern type.
pub fn changes_root(pattern_type: PatternType) -> &'static str {
    match pattern_type {
        PatternType::Prefixed => EXTENDED_CHANGES,
        _ => LITERAL_CHANGES,
    }
}

/// `ResourceTypeZNode.path`: the directory of one type under a root.
pub fn type_path(root: &str, resource_type: ResourceType) -> String {
    format!("{root}/{}", resource_type.znode_name())
}

/// `ResourceZNode.path`: a pattern's znode; `None` for pattern types
/// that are not stored.
pub fn resource_path(p: &ResourcePattern) -> Option<String> {
    let root = root(p.pattern_type)?;
    Some(format!("{}/{}", type_path(root, p.resource_type), p.name))
}

/// Every type directory `AclAuthorizer` creates at start
/// (`KafkaZkClient.createAclPaths`), parents first.
pub fn paths_created_at_start() -> Vec<String> {
    let mut out = vec![
        LITERAL_ROOT.to_owned(),
        "/kafka-acl-extended".into(),
        PREFIXED_ROOT.into(),
    ];
    for root in [LITERAL_ROOT, PREFIXED_ROOT] {
        for t in super::RESOURCE_TYPES {
            out.push(type_path(root, t));
        }
    }
    out.push(LITERAL_CHANGES.into());
    out.push(EXTENDED_CHANGES.into());
    out
}

#[derive(Serialize, Deserialize)]
struct AclJson {
    principal: String,
    #[serde(rename = "permissionType")]
    permission_type: String,
    operation: String,
    host: String,
}

#[derive(Serialize, Deserialize)]
struct ResourceJson {
    version: i32,
    acls: Vec<AclJson>,
}

/// `ResourceZNode.encode`.
pub fn encode_acls(entries: &BTreeSet<AccessControlEntry>) -> Vec<u8> {
    let json = ResourceJson {
        version: 1,
        acls: entries
            .iter()
            .map(|e| AclJson {
                principal: e.principal.clone(),
                permission_type: e.permission.znode_name().into(),
                operation: e.operation.znode_name().into(),
                host: e.host.clone(),
            })
            .collect(),
    };
    serde_json::to_vec(&json).unwrap_or_default()
}

/// `ResourceZNode.decode` / `AclEntry.fromBytes`: empty data is no ACLs;
/// version 1 only; keys read by name.
pub fn decode_acls(data: &[u8]) -> Result<BTreeSet<AccessControlEntry>, String> {
    if data.is_empty() {
        return Ok(BTreeSet::new());
    }
    let json: ResourceJson =
        serde_json::from_slice(data).map_err(|e| format!("invalid ACL znode JSON: {e}"))?;
    if json.version != 1 {
        return Err(format!("unsupported ACL znode version {}", json.version));
    }
    json.acls
        .into_iter()
        .map(|a| {
            let operation = Operation::parse(&a.operation);
            let permission = Permission::parse(&a.permission_type);
            if operation == Operation::Unknown || permission == Permission::Unknown {
                return Err(format!(
                    "unknown operation {:?} or permission type {:?}",
                    a.operation, a.permission_type
                ));
            }
            if super::split_principal(&a.principal).is_none() {
                return Err(format!("invalid principal {:?}", a.principal));
            }
            Ok(AccessControlEntry {
                principal: a.principal,
                host: a.host,
                operation,
                permission,
            })
        })
        .collect()
}

#[derive(Serialize, Deserialize)]
struct ExtendedChangeJson {
    version: i32,
    #[serde(rename = "resourceType")]
    resource_type: String,
    name: String,
    #[serde(rename = "patternType")]
    pattern_type: String,
}

/// The notification data for a changed pattern: `TYPE:name` for LITERAL
/// (`LiteralAclChangeStore.createChangeNode`), the JSON for PREFIXED.
pub fn encode_change(p: &ResourcePattern) -> Vec<u8> {
    match p.pattern_type {
        PatternType::Prefixed => serde_json::to_vec(&ExtendedChangeJson {
            version: 1,
            resource_type: p.resource_type.enum_name().into(),
            name: p.name.clone(),
            pattern_type: p.pattern_type.enum_name().into(),
        })
        .unwrap_or_default(),
        _ => format!("{}:{}", p.resource_type.enum_name(), p.name).into_bytes(),
    }
}

/// A notification's pattern (`decode` of either change store): literal
/// data split at the first `:`, the type upper-cased; extended data as
/// JSON, version 1.
pub fn decode_change(changes_root: &str, data: &[u8]) -> Result<ResourcePattern, String> {
    let text = std::str::from_utf8(data).map_err(|_| "ACL change is not UTF-8".to_owned())?;
    let pattern = if changes_root == EXTENDED_CHANGES {
        let json: ExtendedChangeJson =
            serde_json::from_str(text).map_err(|e| format!("invalid ACL change JSON: {e}"))?;
        if json.version != 1 {
            return Err(format!("unsupported ACL change version {}", json.version));
        }
        ResourcePattern {
            resource_type: ResourceType::parse(&json.resource_type),
            name: json.name,
            pattern_type: PatternType::parse(&json.pattern_type),
        }
    } else {
        let (t, name) = text
            .split_once(':')
            .ok_or_else(|| format!("invalid ACL change {text:?}"))?;
        ResourcePattern::literal(ResourceType::parse(t), name)
    };
    if pattern.resource_type == ResourceType::Unknown || root(pattern.pattern_type).is_none() {
        return Err(format!("ACL change for an unknown resource: {text:?}"));
    }
    Ok(pattern)
}

/// The sequence number of a notification's name (`acl_changes_0000000007`).
pub fn change_sequence(name: &str) -> Option<u64> {
    name.strip_prefix(CHANGE_PREFIX)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_kafkas() {
        let p = ResourcePattern::literal(ResourceType::TransactionalId, "tx-1");
        assert_eq!(
            resource_path(&p).unwrap(),
            "/kafka-acl/TransactionalId/tx-1"
        );
        let p = ResourcePattern::prefixed(ResourceType::Group, "app-");
        assert_eq!(
            resource_path(&p).unwrap(),
            "/kafka-acl-extended/prefixed/Group/app-"
        );
        assert!(paths_created_at_start().contains(&"/kafka-acl-extended/prefixed/User".into()));
    }

    #[test]
    fn acl_json_round_trips_and_reads_kafkas_spellings() {
        let kafka = br#"{"version":1,"acls":[
            {"principal":"User:alice","permissionType":"Allow","operation":"Read","host":"*"},
            {"host":"198.51.100.3","operation":"IDEMPOTENTWRITE","principal":"User:*","permissionType":"Deny"}]}"#;
        let entries = decode_acls(kafka).unwrap();
        assert_eq!(entries.len(), 2);
        assert!(entries
            .iter()
            .any(|e| e.operation == Operation::IdempotentWrite
                && e.permission == Permission::Deny
                && e.host == "198.51.100.3"));
        let text = String::from_utf8(encode_acls(&entries)).unwrap();
        assert!(
            text.contains(r#""permissionType":"Allow","operation":"Read""#),
            "{text}"
        );
        assert!(text.contains(r#""operation":"IdempotentWrite""#), "{text}");
        assert_eq!(decode_acls(text.as_bytes()).unwrap(), entries);
        assert!(decode_acls(b"").unwrap().is_empty());
        assert!(decode_acls(br#"{"version":2,"acls":[]}"#).is_err());
        assert!(decode_acls(br#"{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Fly","host":"*"}]}"#).is_err());
    }

    #[test]
    fn change_notifications_are_kafkas() {
        let lit = ResourcePattern::literal(ResourceType::Topic, "a:b");
        assert_eq!(encode_change(&lit), b"TOPIC:a:b");
        assert_eq!(decode_change(LITERAL_CHANGES, b"TOPIC:a:b").unwrap(), lit);
        let pre = ResourcePattern::prefixed(ResourceType::Group, "app-");
        let data = encode_change(&pre);
        let text = String::from_utf8(data.clone()).unwrap();
        assert!(text.contains(r#""resourceType":"GROUP""#), "{text}");
        assert!(text.contains(r#""patternType":"PREFIXED""#), "{text}");
        assert_eq!(decode_change(EXTENDED_CHANGES, &data).unwrap(), pre);
        let tx = decode_change(LITERAL_CHANGES, b"TRANSACTIONAL_ID:tx").unwrap();
        assert_eq!(tx.resource_type, ResourceType::TransactionalId);
        assert!(decode_change(LITERAL_CHANGES, b"nocolon").is_err());
        assert_eq!(change_sequence("acl_changes_0000000012"), Some(12));
    }
}
