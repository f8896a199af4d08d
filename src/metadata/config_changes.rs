//! `[pure]` The `/config/changes` notifications every ZooKeeper-mode broker
//! follows (Kafka 3.9 `ZkConfigManager` on a
//! `ZkNodeChangeNotificationListener`): which sequential nodes are new
//! since the last one processed, which config entity each names (version
//! 1 `{"version":1,"entity_type":"topics","entity_name":"t"}` or version 2
//! `{"version":2,"entity_path":"topics/t"}`), and which are old enough to
//! purge (15 minutes, the listener's `changeExpirationMs`). The driver is
//! `shard::control::config_changes`.

use serde::Deserialize;

use crate::zk::paths::{CONFIG_CHANGE_PREFIX, CONFIG_ENTITY_TOPICS};

/// Kafka's `ZkNodeChangeNotificationListener.changeExpirationMs` default
/// (15 minutes): older notifications are deleted by the listeners.
pub const CHANGE_EXPIRATION_MS: i64 = 15 * 60 * 1000;

/// The config entity a notification names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigEntity {
    Topic(String),
    /// `brokers/<id>` or `brokers/<default>`, `clients/…`, `users/…`, …:
    /// type and name as written.
    Other {
        entity_type: String,
        name: String,
    },
}

/// The sequence number of a notification named `config_change_<seq>`.
pub fn sequence_of(name: &str) -> Option<u64> {
    name.strip_prefix(CONFIG_CHANGE_PREFIX)?.parse().ok()
}

/// The notifications among `children` after `last` (all when `None`), in
/// sequence order, with their sequence numbers. Names that are not
/// notifications are left out.
pub fn pending(children: &[String], last: Option<u64>) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = children
        .iter()
        .filter_map(|n| sequence_of(n).map(|s| (s, n.clone())))
        .filter(|(s, _)| last.is_none_or(|l| *s > l))
        .collect();
    out.sort();
    out
}

/// Whether a notification created at `ctime_ms` is past the expiration
/// at `now_ms` (Kafka's `purgeObsoleteNotifications`).
pub fn obsolete(ctime_ms: i64, now_ms: i64) -> bool {
    ctime_ms.saturating_add(CHANGE_EXPIRATION_MS) <= now_ms
}

#[derive(Deserialize)]
struct Notification {
    version: i32,
    entity_path: Option<String>,
    entity_type: Option<String>,
    entity_name: Option<String>,
}

/// The entity a notification's payload names; `Err` with why for a
/// payload Kafka would also refuse (unknown version, fields missing).
pub fn entity_of(data: &[u8]) -> Result<ConfigEntity, String> {
    let n: Notification =
        serde_json::from_slice(data).map_err(|e| format!("not a config change: {e}"))?;
    let (entity_type, name) = match n.version {
        1 => (
            n.entity_type.ok_or("version 1 without entity_type")?,
            n.entity_name.ok_or("version 1 without entity_name")?,
        ),
        2 => {
            let path = n.entity_path.ok_or("version 2 without entity_path")?;
            let (t, name) = path
                .split_once('/')
                .ok_or_else(|| format!("entity_path {path:?} names no entity"))?;
            (t.to_owned(), name.to_owned())
        }
        v => return Err(format!("unknown config change version {v}")),
    };
    if name.is_empty() {
        return Err("empty entity name".into());
    }
    Ok(if entity_type == CONFIG_ENTITY_TOPICS {
        ConfigEntity::Topic(name)
    } else {
        ConfigEntity::Other { entity_type, name }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zk::paths::ConfigChangeZNode;

    #[test]
    fn new_notifications_come_in_sequence_order_after_the_last_one() {
        let names: Vec<String> = [
            "config_change_0000000010",
            "config_change_0000000002",
            "junk",
            "config_change_0000000007",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let seqs = |v: Vec<(u64, String)>| v.into_iter().map(|(s, _)| s).collect::<Vec<_>>();
        assert_eq!(seqs(pending(&names, None)), [2, 7, 10]);
        assert_eq!(seqs(pending(&names, Some(2))), [7, 10]);
        assert_eq!(seqs(pending(&names, Some(10))), Vec::<u64>::new());
        assert_eq!(sequence_of("config_change_0000000042"), Some(42));
        assert_eq!(sequence_of("config_change_x"), None);
    }

    #[test]
    fn both_payload_versions_name_their_entity() {
        assert_eq!(
            entity_of(&ConfigChangeZNode::topic("orders").encode()),
            Ok(ConfigEntity::Topic("orders".into()))
        );
        assert_eq!(
            entity_of(br#"{"version":1,"entity_type":"topics","entity_name":"t"}"#),
            Ok(ConfigEntity::Topic("t".into()))
        );
        assert_eq!(
            entity_of(br#"{"version":2,"entity_path":"brokers/<default>"}"#),
            Ok(ConfigEntity::Other {
                entity_type: "brokers".into(),
                name: "<default>".into()
            })
        );
        // A user entity's name may itself hold a '/'.
        assert_eq!(
            entity_of(br#"{"version":2,"entity_path":"users/alice/clients/app"}"#),
            Ok(ConfigEntity::Other {
                entity_type: "users".into(),
                name: "alice/clients/app".into()
            })
        );
        for bad in [
            &br#"{"version":3,"entity_path":"topics/t"}"#[..],
            br#"{"version":2}"#,
            br#"{"version":2,"entity_path":"topics"}"#,
            br#"{"version":1,"entity_type":"topics"}"#,
            br#"{"version":2,"entity_path":"topics/"}"#,
            b"not json",
        ] {
            assert!(entity_of(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn notifications_expire_after_fifteen_minutes() {
        assert!(!obsolete(1_000, 1_000 + CHANGE_EXPIRATION_MS - 1));
        assert!(obsolete(1_000, 1_000 + CHANGE_EXPIRATION_MS));
        assert!(!obsolete(i64::MAX, 0));
    }
}
