//! ACLs through the Admin API (CreateAcls / DeleteAcls / DescribeAcls v3),
//! the same on both brokers, and the wait for them by polling DescribeAcls.
//! Codes: Kafka's `ResourceType`, `PatternType`, `AclOperation`,
//! `AclPermissionType` (clients/src/main/java/org/apache/kafka/common/...).

use std::time::{Duration, Instant};

use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::{Diffs, Pair};
use crate::common::Conn;

pub const ANY: i8 = 1;
pub const TOPIC: i8 = 2;
pub const GROUP: i8 = 3;
pub const CLUSTER: i8 = 4;
pub const TXN: i8 = 5;
pub const LITERAL: i8 = 3;
pub const PREFIXED: i8 = 4;
pub const ALL: i8 = 2;
pub const READ: i8 = 3;
pub const WRITE: i8 = 4;
pub const CREATE: i8 = 5;
pub const DELETE: i8 = 6;
pub const ALTER: i8 = 7;
pub const DESCRIBE: i8 = 8;
pub const ALTER_CONFIGS: i8 = 11;
pub const IDEMPOTENT_WRITE: i8 = 12;
pub const DENY: i8 = 2;
pub const ALLOW: i8 = 3;

const ACL_VERSION: i16 = 3;

/// One ACL of the user under test, host `*`:
/// (resource type, resource name, pattern type, operation, permission).
pub type Acl = (i8, &'static str, i8, i8, i8);

pub fn s(text: &str) -> StrBytes {
    StrBytes::from_string(text.to_owned())
}

fn delete_all_of(principal: &str) -> DeleteAclsRequest {
    DeleteAclsRequest::default().with_filters(vec![DeleteAclsFilter::default()
        .with_resource_type_filter(ANY)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(ANY)
        .with_principal_filter(Some(s(principal)))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)])
}

fn describe_of(principal: Option<&str>) -> DescribeAclsRequest {
    DescribeAclsRequest::default()
        .with_resource_type_filter(ANY)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(ANY)
        .with_principal_filter(principal.map(s))
        .with_host_filter(None)
        .with_operation(ANY)
        .with_permission_type(ANY)
}

/// DescribeAcls resources and their ACLs in one order (the brokers list
/// them in their maps' orders).
pub fn sort_described(r: &mut DescribeAclsResponse) {
    for res in &mut r.resources {
        res.acls.sort_by_key(|a| {
            (
                a.principal.to_string(),
                a.host.to_string(),
                a.operation,
                a.permission_type,
            )
        });
    }
    r.resources.sort_by_key(|res| {
        (
            res.resource_type,
            res.resource_name.to_string(),
            res.pattern_type,
        )
    });
}

pub fn sort_deleted(r: &mut DeleteAclsResponse) {
    for f in &mut r.filter_results {
        f.matching_acls.sort_by_key(|a| {
            (
                a.resource_type,
                a.resource_name.to_string(),
                a.pattern_type,
                a.principal.to_string(),
                a.operation,
                a.permission_type,
            )
        });
    }
}

/// `principal`'s ACLs as DescribeAcls lists them: sorted
/// (type, name, pattern, operation, permission).
fn listed(conn: &mut Conn, principal: &str) -> Vec<(i8, String, i8, i8, i8)> {
    let r = conn.call(ACL_VERSION, &describe_of(Some(principal)));
    assert_eq!(r.error_code, 0, "DescribeAcls as the admin: {r:?}");
    let mut out: Vec<_> = r
        .resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(move |a| {
                (
                    res.resource_type,
                    res.resource_name.to_string(),
                    res.pattern_type,
                    a.operation,
                    a.permission_type,
                )
            })
        })
        .collect();
    out.sort();
    out
}

/// Replaces `principal`'s ACLs on both brokers by `acls` (as the admin,
/// a super user), compares the two brokers' DeleteAcls / CreateAcls
/// answers as `<case>.admin_*`, then polls DescribeAcls on each until it
/// lists exactly `acls` (the authorizer's cache is what DescribeAcls
/// reads; a bounded wait, not a timed assertion).
pub fn replace(admin: &mut Pair, d: &mut Diffs, case: &str, principal: &str, acls: &[Acl]) {
    super::check2(
        admin,
        d,
        &format!("{case}.admin_delete_acls"),
        ACL_VERSION,
        (&delete_all_of(principal), &delete_all_of(principal)),
        sort_deleted,
    );
    if !acls.is_empty() {
        let creations: Vec<AclCreation> = acls
            .iter()
            .map(|&(rt, name, pattern, op, perm)| {
                AclCreation::default()
                    .with_resource_type(rt)
                    .with_resource_name(s(name))
                    .with_resource_pattern_type(pattern)
                    .with_principal(s(principal))
                    .with_host(s("*"))
                    .with_operation(op)
                    .with_permission_type(perm)
            })
            .collect();
        let req = CreateAclsRequest::default().with_creations(creations);
        super::check(
            admin,
            d,
            &format!("{case}.admin_create_acls"),
            ACL_VERSION,
            &req,
        );
    }
    let mut want: Vec<(i8, String, i8, i8, i8)> = acls
        .iter()
        .map(|&(rt, name, pattern, op, perm)| (rt, name.to_owned(), pattern, op, perm))
        .collect();
    want.sort();
    want.dedup();
    for conn in [&mut admin.shardlog, &mut admin.kafka] {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let have = listed(conn, principal);
            if have == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{case}: DescribeAcls still lists {have:?}, want {want:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// DescribeAcls (everything) by the user under test.
pub fn describe_all() -> DescribeAclsRequest {
    describe_of(None)
}

/// CreateAcls then DeleteAcls of one ACL for a principal nobody uses,
/// by the user under test (ALTER on the cluster).
pub fn create_and_delete(p: &mut Pair, d: &mut Diffs, case: &str) {
    let create = CreateAclsRequest::default().with_creations(vec![AclCreation::default()
        .with_resource_type(TOPIC)
        .with_resource_name(s("acl-t"))
        .with_resource_pattern_type(LITERAL)
        .with_principal(s("User:nobody"))
        .with_host(s("*"))
        .with_operation(READ)
        .with_permission_type(ALLOW)]);
    super::check(p, d, &format!("{case}.create_acls"), ACL_VERSION, &create);
    super::check2(
        p,
        d,
        &format!("{case}.delete_acls"),
        ACL_VERSION,
        (&delete_all_of("User:nobody"), &delete_all_of("User:nobody")),
        sort_deleted,
    );
    super::check2(
        p,
        d,
        &format!("{case}.describe_acls"),
        ACL_VERSION,
        (&describe_all(), &describe_all()),
        sort_described,
    );
}

/// SECURITY_DISABLED (54), Kafka's `Errors.SECURITY_DISABLED`.
pub const SECURITY_DISABLED: i16 = 54;

/// CreateAcls, DescribeAcls and DeleteAcls to brokers without an
/// authorizer (Kafka's `AclApis` answers SECURITY_DISABLED: per creation,
/// top-level, per filter), compared as `disabled.*`; each broker's codes
/// (creation, describe, filter), shardlog's first.
pub fn without_authorizer(p: &mut Pair, d: &mut Diffs) -> [[i16; 3]; 2] {
    let create = CreateAclsRequest::default().with_creations(vec![AclCreation::default()
        .with_resource_type(TOPIC)
        .with_resource_name(s("acl-t"))
        .with_resource_pattern_type(PREFIXED)
        .with_principal(s("User:alice"))
        .with_host(s("*"))
        .with_operation(READ)
        .with_permission_type(ALLOW)]);
    let (ca, cb) = super::check2(
        p,
        d,
        "disabled.create_acls",
        ACL_VERSION,
        (&create, &create),
        |_| {},
    );
    let (da, db) = super::check2(
        p,
        d,
        "disabled.describe_acls",
        ACL_VERSION,
        (&describe_all(), &describe_all()),
        sort_described,
    );
    let delete = delete_all_of("User:alice");
    let (xa, xb) = super::check2(
        p,
        d,
        "disabled.delete_acls",
        ACL_VERSION,
        (&delete, &delete),
        sort_deleted,
    );
    let codes = |c: &CreateAclsResponse, d: &DescribeAclsResponse, x: &DeleteAclsResponse| {
        [
            c.results.first().map_or(-1, |r| r.error_code),
            d.error_code,
            x.filter_results.first().map_or(-1, |r| r.error_code),
        ]
    };
    [codes(&ca, &da, &xa), codes(&cb, &db, &xb)]
}
