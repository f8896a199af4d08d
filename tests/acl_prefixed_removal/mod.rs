//! `kafka-acls --remove --resource-pattern-type prefixed` through the
//! broker (tests/security_acls.rs's cluster, after its other steps): the
//! PREFIXED ALLOW that let `User:CN=alice` write to `app-…` is deleted
//! from ZooKeeper — AclAuthorizer keeps non-literal patterns under
//! `/kafka-acl-extended/<pattern>/<type>/<name>` (`ExtendedAclZNode`,
//! `ZkAclStore`), literal ones under `/kafka-acl/<type>/<name>`
//! (`AclZNode`) — and her produce to `app-…` is refused from then on.

use serde_json::{json, Value};

use super::{errors, Names, Secured};
use crate::common::cluster::read;

/// The ACL znodes of the prefixed pattern `Topic:app-` and of the literal
/// one of the same name.
const PREFIXED_ZNODE: &str = "/kafka-acl-extended/prefixed/Topic/app-";
const LITERAL_ZNODE: &str = "/kafka-acl/Topic/app-";

/// The removal: DeleteAcls through the broker deletes the znode (its last
/// ACL; `AclAuthorizer.updateResourceAcls` → `deleteResource`) and alice's
/// produce is refused at once, nothing appended.
pub fn leaves_zookeeper_and_denies(s: &Secured, n: &Names) {
    let zk = s.c.zk.address();
    let before = read(&zk, &[PREFIXED_ZNODE, LITERAL_ZNODE]);
    let (data, _) = before[PREFIXED_ZNODE]
        .clone()
        .expect("the prefixed ACL's znode before the removal");
    let acls: Value = serde_json::from_str(&data).unwrap();
    assert_eq!(
        acls,
        json!({"version": 1, "acls": [{"principal": "User:CN=alice",
            "permissionType": "Allow", "operation": "Write", "host": "*"}]}),
        "{PREFIXED_ZNODE}"
    );
    assert!(before[LITERAL_ZNODE].is_none(), "{before:?}");

    s.acls(&[
        "--remove",
        "--force",
        "--allow-principal",
        "User:CN=alice",
        "--operation",
        "Write",
        "--topic",
        "app-",
        "--resource-pattern-type",
        "prefixed",
    ]);
    let after = read(&zk, &[PREFIXED_ZNODE, LITERAL_ZNODE]);
    assert!(after[PREFIXED_ZNODE].is_none(), "{after:?}");
    assert!(after[LITERAL_ZNODE].is_none(), "{after:?}");
    let listed = s.acls(&["--list", "--resource-pattern-type", "prefixed"]);
    assert!(
        !listed.contains("name=app-, patternType=PREFIXED"),
        "{listed}"
    );

    let denied = s.py("alice", "produce", &[&n.app_topic, "3"]);
    assert_eq!(denied["delivered"], 0, "{denied}");
    assert!(
        errors(&denied).contains(&"TOPIC_AUTHORIZATION_FAILED".into()),
        "{denied}"
    );
    // Only the 5 records alice wrote while the ACL stood.
    let marks = s.py("admin", "watermarks", &[&n.app_topic]);
    assert_eq!(marks, json!({"high": 5}));
}
