//! `[pure]` Unit tests of `acl::authorizer`: the cases of Kafka 3.9's
//! `core/src/test/scala/unit/kafka/security/authorizer/AclAuthorizerTest.scala`
//! (`testAuthorizeWithEmptyResourceName`, `testDenyTakesPrecedence`,
//! `testAllowAllAccess`, `testSuperUserHasAccess`, `testWildCardAcls`,
//! `testAccessAllowedIfAllowAclExistsOnPrefixedResource`,
//! `testAuthorizeByResourceTypeNoAclFoundOverride`, ...) over the rules of
//! `AclAuthorizer.authorizeAction` and `authorizeByResourceType`.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::acl::{Operation as Op, Permission as P, ResourceType as T};

fn ace(principal: &str, host: &str, op: Op, permission: P) -> AccessControlEntry {
    AccessControlEntry {
        principal: principal.into(),
        host: host.into(),
        operation: op,
        permission,
    }
}

fn cache(rows: &[(ResourcePattern, AccessControlEntry)]) -> AclCache {
    let mut map: BTreeMap<ResourcePattern, BTreeSet<AccessControlEntry>> = BTreeMap::new();
    for (p, e) in rows {
        map.entry(p.clone()).or_default().insert(e.clone());
    }
    AclCache::new(map)
}

fn on() -> Policy {
    Policy {
        enabled: true,
        ..Policy::default()
    }
}

fn alice() -> Session {
    Session {
        principal: "User:alice".into(),
        host: "192.168.1.1".into(),
    }
}

fn topic(name: &str) -> ResourcePattern {
    ResourcePattern::literal(T::Topic, name)
}

#[test]
fn without_an_authorizer_everything_is_allowed() {
    let p = Policy::default();
    let acls = cache(&[(topic("t"), ace("User:alice", "*", Op::All, P::Deny))]);
    assert!(p.authorize(&acls, &alice(), Op::Write, T::Topic, "t"));
    assert_eq!(
        p.authorized_operations(&acls, &alice(), T::Group, "g"),
        (1 << 3) | (1 << 8) | (1 << 6)
    );
}

#[test]
fn no_acl_denies_unless_allow_everyone_if_no_acl_found() {
    let acls = AclCache::default();
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
    let open = Policy {
        allow_everyone_if_no_acl_found: true,
        ..on()
    };
    assert!(open.authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
    // Any ACL on the resource, for anyone, makes it "found".
    let acls = cache(&[(topic("t"), ace("User:bob", "*", Op::Read, P::Allow))]);
    assert!(!open.authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
    assert!(open.authorize(&acls, &alice(), Op::Read, T::Topic, "other"));
}

#[test]
fn deny_takes_precedence_over_allow() {
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Read, P::Allow)),
        (
            topic("t"),
            ace("User:alice", "192.168.1.1", Op::Read, P::Deny),
        ),
    ]);
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
    let elsewhere = Session {
        host: "10.0.0.1".into(),
        ..alice()
    };
    assert!(on().authorize(&acls, &elsewhere, Op::Read, T::Topic, "t"));
    // A DENY on a wildcard resource or a prefix denies too.
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("*"), ace("User:*", "*", Op::Write, P::Deny)),
    ]);
    assert!(!on().authorize(&acls, &alice(), Op::Write, T::Topic, "t"));
    let acls = cache(&[
        (topic("t-1"), ace("User:alice", "*", Op::Write, P::Allow)),
        (
            ResourcePattern::prefixed(T::Topic, "t-"),
            ace("User:alice", "*", Op::All, P::Deny),
        ),
    ]);
    assert!(!on().authorize(&acls, &alice(), Op::Write, T::Topic, "t-1"));
    assert!(!on().authorize(&acls, &alice(), Op::Describe, T::Topic, "t-1"));
}

#[test]
fn wildcards_match_principal_host_and_resource() {
    let acls = cache(&[(topic("*"), ace("User:*", "*", Op::Read, P::Allow))]);
    assert!(on().authorize(&acls, &alice(), Op::Read, T::Topic, "anything"));
    assert!(!on().authorize(&acls, &alice(), Op::Write, T::Topic, "anything"));
    // An ACL for `User:*` applies to any principal (`matchingAclExists`
    // compares the ACL's principal with the wildcard, whatever the
    // session's type); `Group:*` is no wildcard.
    let other_type = Session {
        principal: "Group:ops".into(),
        ..alice()
    };
    let acls = cache(&[(topic("t"), ace("User:*", "*", Op::Read, P::Allow))]);
    assert!(on().authorize(&acls, &other_type, Op::Read, T::Topic, "t"));
    let acls = cache(&[(topic("t"), ace("Group:*", "*", Op::Read, P::Allow))]);
    assert!(!on().authorize(&acls, &other_type, Op::Read, T::Topic, "t"));
    // Resource types do not mix.
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Group, "t"));
    // Hosts are compared as strings (no CIDR).
    let acls = cache(&[(
        topic("t"),
        ace("User:alice", "192.168.1.0", Op::Read, P::Allow),
    )]);
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
}

#[test]
fn prefixed_acls_apply_to_names_starting_with_the_prefix() {
    let acls = cache(&[(
        ResourcePattern::prefixed(T::Group, "app-"),
        ace("User:alice", "*", Op::Read, P::Allow),
    )]);
    assert!(on().authorize(&acls, &alice(), Op::Read, T::Group, "app-1"));
    assert!(on().authorize(&acls, &alice(), Op::Read, T::Group, "app-"));
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Group, "App-1"));
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Group, "ap"));
    // A literal name `app-` is not a prefix.
    let acls = cache(&[(
        ResourcePattern::literal(T::Group, "app-"),
        ace("User:alice", "*", Op::Read, P::Allow),
    )]);
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Group, "app-1"));
}

#[test]
fn describe_is_implied_by_read_write_delete_alter_and_describe_configs_by_alter_configs() {
    for op in [Op::Read, Op::Write, Op::Delete, Op::Alter, Op::All] {
        let acls = cache(&[(topic("t"), ace("User:alice", "*", op, P::Allow))]);
        assert!(
            on().authorize(&acls, &alice(), Op::Describe, T::Topic, "t"),
            "{op:?}"
        );
    }
    for op in [Op::Create, Op::AlterConfigs, Op::DescribeConfigs] {
        let acls = cache(&[(topic("t"), ace("User:alice", "*", op, P::Allow))]);
        assert!(
            !on().authorize(&acls, &alice(), Op::Describe, T::Topic, "t"),
            "{op:?}"
        );
    }
    let acls = cache(&[(
        topic("t"),
        ace("User:alice", "*", Op::AlterConfigs, P::Allow),
    )]);
    assert!(on().authorize(&acls, &alice(), Op::DescribeConfigs, T::Topic, "t"));
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
    // Implication is for ALLOW only: a DENY on Read leaves Describe.
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("t"), ace("User:alice", "*", Op::Read, P::Deny)),
    ]);
    assert!(on().authorize(&acls, &alice(), Op::Describe, T::Topic, "t"));
    assert!(!on().authorize(&acls, &alice(), Op::Read, T::Topic, "t"));
}

#[test]
fn super_users_are_allowed_everything_even_when_denied() {
    let p = Policy {
        super_users: vec!["User:CN=admin,O=x".into()],
        ..on()
    };
    let admin = Session {
        principal: "User:CN=admin,O=x".into(),
        host: "1.2.3.4".into(),
    };
    let acls = cache(&[(topic("t"), ace("User:*", "*", Op::All, P::Deny))]);
    assert!(p.authorize(&acls, &admin, Op::Alter, T::Cluster, "kafka-cluster"));
    assert!(p.authorize(&acls, &admin, Op::Write, T::Topic, "t"));
    assert!(!p.authorize(&acls, &alice(), Op::Write, T::Topic, "t"));
}

#[test]
fn authorized_operations_set_one_bit_per_allowed_supported_operation() {
    let acls = cache(&[(topic("t"), ace("User:alice", "*", Op::Read, P::Allow))]);
    // Read (3) and the implied Describe (8).
    assert_eq!(
        on().authorized_operations(&acls, &alice(), T::Topic, "t"),
        (1 << 3) | (1 << 8)
    );
    assert_eq!(
        on().authorized_operations(&acls, &alice(), T::Topic, "u"),
        0
    );
}

#[test]
fn authorize_by_resource_type_follows_kip_679() {
    let s = alice();
    let by_type =
        |acls: &AclCache, p: &Policy| p.authorize_by_resource_type(acls, &s, Op::Write, T::Topic);
    // No ACL at all: denied, unless allow.everyone.if.no.acl.found.
    assert!(!by_type(&AclCache::default(), &on()));
    let open = Policy {
        allow_everyone_if_no_acl_found: true,
        ..on()
    };
    assert!(by_type(&AclCache::default(), &open));
    // An ALLOW on any topic, no DENY: allowed.
    let acls = cache(&[(topic("t"), ace("User:alice", "*", Op::Write, P::Allow))]);
    assert!(by_type(&acls, &on()));
    // Implication does not count: READ does not give WRITE.
    let acls = cache(&[(topic("t"), ace("User:alice", "*", Op::Read, P::Allow))]);
    assert!(!by_type(&acls, &on()));
    // A literal DENY on `*` denies, even with allow.everyone.
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("*"), ace("User:*", "*", Op::Write, P::Deny)),
    ]);
    assert!(!by_type(&acls, &open));
    // An ALLOW literal that is denied literally: denied; another not: allowed.
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("t"), ace("User:alice", "*", Op::Write, P::Deny)),
    ]);
    assert!(!by_type(&acls, &on()));
    let acls = cache(&[
        (topic("t"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("u"), ace("User:alice", "*", Op::Write, P::Allow)),
        (topic("t"), ace("User:alice", "*", Op::Write, P::Deny)),
    ]);
    assert!(by_type(&acls, &on()));
    // An ALLOW prefix under a DENY prefix: denied; the other way round: allowed.
    let acls = cache(&[
        (
            ResourcePattern::prefixed(T::Topic, "ab"),
            ace("User:alice", "*", Op::Write, P::Allow),
        ),
        (
            ResourcePattern::prefixed(T::Topic, "a"),
            ace("User:alice", "*", Op::Write, P::Deny),
        ),
    ]);
    assert!(!by_type(&acls, &on()));
    let acls = cache(&[
        (
            ResourcePattern::prefixed(T::Topic, "a"),
            ace("User:alice", "*", Op::Write, P::Allow),
        ),
        (
            ResourcePattern::prefixed(T::Topic, "ab"),
            ace("User:alice", "*", Op::Write, P::Deny),
        ),
    ]);
    assert!(by_type(&acls, &on()));
}

#[test]
fn the_cache_replaces_and_removes_a_patterns_entries() {
    let mut c = AclCache::default();
    let e = ace("User:alice", "*", Op::Read, P::Allow);
    assert!(c.set(topic("t"), BTreeSet::from([e.clone()])));
    assert!(!c.set(topic("t"), BTreeSet::from([e.clone()])));
    assert!(on().authorize(&c, &alice(), Op::Read, T::Topic, "t"));
    assert_eq!(c.bindings().count(), 1);
    assert!(c.set(topic("t"), BTreeSet::new()));
    assert!(c.is_empty());
    assert!(!on().authorize(&c, &alice(), Op::Read, T::Topic, "t"));
}
