//! `[pure]` What CreateAcls, DescribeAcls and DeleteAcls share: their
//! filters read from the wire (`DescribeAclsRequest.filter`,
//! `DeleteAclsRequest.filters`, Kafka 3.9 `clients/.../requests/`), and
//! the per-binding checks `AclApis.handleCreateAcls` and
//! `AuthorizerUtils.validateAclBinding` make.

use crate::acl::filter::{BindingFilter, EntryFilter, PatternFilter};
use crate::acl::{
    AccessControlEntry, AclBinding, Operation, PatternType, Permission, ResourcePattern,
    ResourceType, CLUSTER_NAME,
};
use crate::protocol::ErrorCode;

/// One wire filter's fields (DescribeAcls' body, each DeleteAcls filter).
pub struct WireFilter<'a> {
    pub resource_type: i8,
    pub resource_name: Option<&'a str>,
    pub pattern_type: i8,
    pub principal: Option<&'a str>,
    pub host: Option<&'a str>,
    pub operation: i8,
    pub permission: i8,
}

/// The filter, or why Kafka refuses to parse the request (it closes the
/// connection): UNKNOWN elements (`DescribeAclsRequest.validate`,
/// `DeleteAclsRequest.validate`), or a pattern type other than LITERAL in
/// v0 (a v0 ANY filter is read as LITERAL there).
pub fn binding_filter(w: &WireFilter<'_>, version: i16) -> Result<BindingFilter, String> {
    let mut pattern_type = PatternType::from_code(w.pattern_type);
    if version == 0 && pattern_type == PatternType::Any {
        pattern_type = PatternType::Literal;
    }
    if version == 0 && pattern_type != PatternType::Literal {
        return Err("Version 0 only supports literal resource pattern types".into());
    }
    let f = BindingFilter {
        pattern: PatternFilter {
            resource_type: ResourceType::from_code(w.resource_type),
            name: w.resource_name.map(str::to_owned),
            pattern_type,
        },
        entry: EntryFilter {
            principal: w.principal.map(str::to_owned),
            host: w.host.map(str::to_owned),
            operation: Operation::from_code(w.operation),
            permission: Permission::from_code(w.permission),
        },
    };
    if f.pattern.resource_type == ResourceType::Unknown
        || f.pattern.pattern_type == PatternType::Unknown
        || f.entry.operation == Operation::Unknown
        || f.entry.permission == Permission::Unknown
    {
        return Err("Filter contain UNKNOWN elements".into());
    }
    Ok(f)
}

/// One CreateAcls creation's fields.
pub struct WireCreation<'a> {
    pub resource_type: i8,
    pub resource_name: &'a str,
    pub pattern_type: i8,
    pub principal: &'a str,
    pub host: &'a str,
    pub operation: i8,
    pub permission: i8,
}

/// The binding, or why Kafka refuses to parse the request (it closes the
/// connection): `CreateAclsRequest.validate` (UNKNOWN elements, non-LITERAL
/// in v0) and the `ResourcePattern` / `AccessControlEntry` constructors
/// (no ANY/MATCH there).
pub fn creation(w: &WireCreation<'_>, version: i16) -> Result<AclBinding, String> {
    let b = AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(w.resource_type),
            name: w.resource_name.to_owned(),
            pattern_type: PatternType::from_code(w.pattern_type),
        },
        entry: AccessControlEntry {
            principal: w.principal.to_owned(),
            host: w.host.to_owned(),
            operation: Operation::from_code(w.operation),
            permission: Permission::from_code(w.permission),
        },
    };
    if version == 0 && b.pattern.pattern_type != PatternType::Literal {
        return Err("Version 0 only supports literal resource pattern types".into());
    }
    if b.is_unknown() {
        return Err("Contain UNKNOWN elements".into());
    }
    if b.pattern.resource_type == ResourceType::Any
        || matches!(
            b.pattern.pattern_type,
            PatternType::Any | PatternType::Match
        )
        || b.entry.operation == Operation::Any
        || b.entry.permission == Permission::Any
    {
        return Err("an ACL binding must not contain ANY or MATCH".into());
    }
    Ok(b)
}

/// Kafka's per-binding refusals, each INVALID_REQUEST: a CLUSTER name
/// other than `kafka-cluster`, an empty name (`AclApis.handleCreateAcls`),
/// a `/` in the name (`AuthorizerUtils.validateAclBinding`, "Failed to
/// create ACL"), a principal without `Type:` (`SecurityUtils.parseKafkaPrincipal`).
pub fn refusal(b: &AclBinding) -> Option<(ErrorCode, String)> {
    let name = &b.pattern.name;
    let message = if b.pattern.resource_type == ResourceType::Cluster && name != CLUSTER_NAME {
        format!("The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    } else if name.is_empty() {
        "Invalid empty resource name".into()
    } else if name.contains('/') {
        format!("Failed to create ACL: ACL binding contains invalid resource name: {name}")
    } else if crate::acl::split_principal(&b.entry.principal).is_none() {
        format!(
            "Failed to create ACL: expected a string in format principalType:principalName but got {}",
            b.entry.principal
        )
    } else {
        return None;
    };
    Some((ErrorCode::INVALID_REQUEST, message))
}

/// Test support: at every version 0–3, a request `make` builds encodes
/// with Kafka 3.9's codec and decodes back equal through the checked
/// decode with `schema` (flexible from v2): the schema walks exactly the
/// bytes the codec reads.
#[cfg(test)]
pub fn assert_schema_round_trips<T>(
    schema: &[crate::protocol::schema::Field],
    make: impl Fn(i16) -> T,
) where
    T: kafka_protocol_39::protocol::Encodable
        + kafka_protocol_39::protocol::Decodable
        + PartialEq
        + std::fmt::Debug,
{
    for v in 0..=3 {
        let m = make(v);
        let mut buf = bytes::BytesMut::new();
        m.encode(&mut buf, v).expect("encode");
        let back: T = crate::protocol::schema::decode_checked_39(buf.freeze(), schema, v, v >= 2)
            .expect("decode");
        assert_eq!(back, m, "v{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creation_of(rt: i8, name: &str, pt: i8, op: i8, perm: i8) -> WireCreation<'_> {
        WireCreation {
            resource_type: rt,
            resource_name: name,
            pattern_type: pt,
            principal: "User:alice",
            host: "*",
            operation: op,
            permission: perm,
        }
    }

    #[test]
    fn creations_refuse_unknown_any_and_v0_prefixed() {
        assert!(creation(&creation_of(2, "t", 3, 3, 3), 0).is_ok());
        assert!(creation(&creation_of(2, "t", 4, 3, 3), 0).is_err());
        assert!(creation(&creation_of(2, "t", 4, 3, 3), 1).is_ok());
        assert!(creation(&creation_of(0, "t", 3, 3, 3), 1).is_err());
        assert!(creation(&creation_of(1, "t", 3, 3, 3), 1).is_err());
        assert!(creation(&creation_of(2, "t", 2, 3, 3), 1).is_err());
        assert!(creation(&creation_of(2, "t", 3, 1, 3), 1).is_err());
        assert!(creation(&creation_of(2, "t", 3, 3, 1), 1).is_err());
    }

    #[test]
    fn refusals_are_kafkas() {
        let ok = creation(&creation_of(4, "kafka-cluster", 3, 7, 3), 1).unwrap();
        assert_eq!(refusal(&ok), None);
        for name in ["other", ""] {
            let b = creation(&creation_of(4, name, 3, 7, 3), 1).unwrap();
            assert_eq!(refusal(&b).unwrap().0, ErrorCode::INVALID_REQUEST);
        }
        let b = creation(&creation_of(2, "a/b", 3, 3, 3), 1).unwrap();
        assert!(refusal(&b).unwrap().1.contains("invalid resource name"));
    }

    #[test]
    fn v0_filters_read_any_as_literal() {
        let w = WireFilter {
            resource_type: 1,
            resource_name: None,
            pattern_type: 1,
            principal: None,
            host: None,
            operation: 1,
            permission: 1,
        };
        assert_eq!(
            binding_filter(&w, 0).unwrap().pattern.pattern_type,
            PatternType::Literal
        );
        assert_eq!(
            binding_filter(&w, 1).unwrap().pattern.pattern_type,
            PatternType::Any
        );
        let unknown = WireFilter { operation: 0, ..w };
        assert!(binding_filter(&unknown, 1).is_err());
    }
}
