//! `[pure]` Unit tests of the ACL model (`clients/.../acl/AclOperation.java`,
//! `clients/.../resource/ResourceType.java`, `clients/.../utils/SecurityUtils.java`).

use super::*;

#[test]
fn wire_codes_are_kafkas() {
    assert_eq!(ResourceType::Topic.code(), 2);
    assert_eq!(ResourceType::User.code(), 7);
    assert_eq!(ResourceType::from_code(5), ResourceType::TransactionalId);
    assert_eq!(ResourceType::from_code(42), ResourceType::Unknown);
    assert_eq!(PatternType::from_code(4), PatternType::Prefixed);
    assert_eq!(Operation::IdempotentWrite.code(), 12);
    assert_eq!(Operation::from_code(1), Operation::Any);
    assert_eq!(Operation::from_code(14), Operation::DescribeTokens);
    assert_eq!(Operation::from_code(15), Operation::Unknown);
    assert_eq!(Permission::from_code(3), Permission::Allow);
}

#[test]
fn names_parse_as_security_utils_does() {
    assert_eq!(
        Operation::parse("IdempotentWrite"),
        Operation::IdempotentWrite
    );
    assert_eq!(
        Operation::parse("IDEMPOTENTWRITE"),
        Operation::IdempotentWrite
    );
    assert_eq!(
        Operation::parse("describe_configs"),
        Operation::DescribeConfigs
    );
    assert_eq!(Operation::parse("Fly"), Operation::Unknown);
    assert_eq!(
        ResourceType::parse("TransactionalId"),
        ResourceType::TransactionalId
    );
    assert_eq!(
        ResourceType::parse("TRANSACTIONAL_ID"),
        ResourceType::TransactionalId
    );
    assert_eq!(Permission::parse("Deny"), Permission::Deny);
    assert_eq!(PatternType::parse("PREFIXED"), PatternType::Prefixed);
}

#[test]
fn client_hosts_render_as_java_does() {
    assert_eq!(java_host_address("/127.0.0.1"), "127.0.0.1");
    assert_eq!(java_host_address("/::1"), "0:0:0:0:0:0:0:1");
    assert_eq!(java_host_address("/::ffff:10.0.0.2"), "10.0.0.2");
    assert_eq!(java_host_address("/fe80::1:abcd"), "fe80:0:0:0:0:0:1:abcd");
}
