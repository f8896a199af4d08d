//! TLS configuration for SSL (and SASL_SSL) listeners and the broker's own
//! outbound TLS connections: the `ssl.*` keys resolved per listener, the
//! keystores and truststores they name, the rustls server and client
//! configurations built from them, the inter-broker self-check, KIP-226
//! keystore reloads and the principal of a client certificate (KIP-371).
//!
//! Facts follow Kafka 3.9: `clients/.../common/config/SslConfigs.java`,
//! `clients/.../security/ssl/DefaultSslEngineFactory.java`,
//! `clients/.../security/ssl/SslFactory.java` and
//! `clients/.../security/ssl/SslPrincipalMapper.java`.
//!
//! rustls is built with the ring provider named explicitly
//! (`rustls::crypto::ring::default_provider()`), never the process-wide
//! default. The byte stream (accept, handshake on the shard, kernel TLS
//! hand-off) is the connection layer's; this module only builds configs.
//!
//! Files: [`settings`] `[pure]` the keys → [`SslSettings`]; [`stores`] `[io]`
//! reading keystores/truststores; [`build`] `[pure]` rustls configs;
//! [`listener`] the per-listener state with reloads; [`selfcheck`] `[pure]`
//! an in-memory handshake; [`principal`] `[pure]` DN rendering and mapping.

pub mod build;
pub mod listener;
pub mod principal;
pub mod selfcheck;
pub mod settings;
pub mod stores;

#[cfg(test)]
mod test_keys;
#[cfg(test)]
mod tests;

pub use build::{client_config, server_config};
pub use listener::ListenerTls;
pub use selfcheck::self_check;
pub use settings::{ClientAuth, Password, SslSettings, StoreType};
