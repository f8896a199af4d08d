//! `[data]` What a connection knows of the listener it came in on.

use std::sync::Arc;

use crate::config::SecurityProtocol;
use crate::server::sasl_conn::SaslListener;
use crate::tls::ListenerTls;

/// The listener a connection came in on (Kafka's `ListenerName` with its
/// `SecurityProtocol` from `listener.security.protocol.map`).
#[derive(Debug, Clone)]
pub struct ListenerInfo {
    pub name: Arc<str>,
    pub protocol: SecurityProtocol,
    /// An SSL listener's TLS state (its server config for new connections
    /// and its principal mapping), shared by every shard; `None` for
    /// PLAINTEXT and SASL_PLAINTEXT.
    pub tls: Option<Arc<ListenerTls>>,
    /// A SASL_PLAINTEXT / SASL_SSL listener's SASL settings; `None` for
    /// PLAINTEXT and SSL.
    pub sasl: Option<Arc<SaslListener>>,
}
