//! `[pure]` `/log_dir_event_notification/log_dir_event_<seq>` (Kafka's
//! `LogDirEventNotificationSequenceZNode`, ZooKeeper mode): a broker whose
//! log dir failed writes `{"version":1,"broker":<id>,"event":1}`; the
//! controller reads it, asks that broker which of its replicas are still
//! online (LeaderAndIsr) and deletes the znode.

use serde::{Deserialize, Serialize};

use super::paths::{decode_json, encode_json, DecodeError};

/// Sequential-node prefix under `paths::LOG_DIR_EVENT_NOTIFICATION`.
pub const LOG_DIR_EVENT_PREFIX: &str = "log_dir_event_";

/// Kafka's `LogDirEventNotificationHandler.LogDirFailureEvent`.
pub const LOG_DIR_FAILURE_EVENT: i32 = 1;

/// The payload (version 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogDirEventZNode {
    pub version: i32,
    pub broker: i32,
    pub event: i32,
}

impl LogDirEventZNode {
    /// A failure of one of `broker`'s log dirs.
    pub fn failure(broker: i32) -> Self {
        LogDirEventZNode {
            version: 1,
            broker,
            event: LOG_DIR_FAILURE_EVENT,
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        encode_json(self)
    }

    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        decode_json(bytes)
    }

    /// The path of a new event's znode (the store appends the sequence).
    pub fn sequential_path() -> String {
        format!(
            "{}/{LOG_DIR_EVENT_PREFIX}",
            super::paths::LOG_DIR_EVENT_NOTIFICATION
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_event_is_kafkas_json_and_reads_back() {
        let e = LogDirEventZNode::failure(3);
        let text = String::from_utf8(e.encode()).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"version": 1, "broker": 3, "event": 1})
        );
        assert_eq!(LogDirEventZNode::decode(text.as_bytes()).unwrap(), e);
        assert_eq!(
            LogDirEventZNode::sequential_path(),
            "/log_dir_event_notification/log_dir_event_"
        );
        assert!(LogDirEventZNode::decode(b"{\"version\":1}").is_err());
    }
}
