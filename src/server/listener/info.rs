//! `[pure]` What a connection knows of the listener it came in on.

use std::sync::Arc;

use crate::config::SecurityProtocol;

/// The listener a connection came in on (Kafka's `ListenerName` with its
/// `SecurityProtocol` from `listener.security.protocol.map`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerInfo {
    pub name: Arc<str>,
    pub protocol: SecurityProtocol,
}
