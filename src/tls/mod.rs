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
//! reading keystores/truststores (files named by the settings, the system
//! CA bundle); [`eckey`] `[pure]` Java-written EC keys made loadable; [`pbe`] `[pure]`
//! encrypted PEM keys (PBES2 and the PKCS#12 PBE schemes);
//! [`build`] rustls configs (loads the stores, then builds); [`listener`]
//! the per-listener state with KIP-226 reloads; [`selfcheck`] the
//! inter-broker self-check, an in-memory handshake; [`principal`] `[pure]`
//! DN rendering and `ssl.principal.mapping.rules`; [`record`] `[pure]` the
//! TLS record layer after the handshake (ring's AEAD, in place);
//! [`session`] `[pure]` rustls' unbuffered handshake, its keys handed to
//! [`record`] and its key schedule for TLS 1.3 KeyUpdate; [`handshake_stats`]
//! `[pure]` what the shards' handshakes cost, for the exit report.
//!
//! Use: at start, for each SSL/SASL_SSL listener,
//! `SslSettings::for_listener_protocol(&config, name, protocol)` →
//! `Arc::new(ListenerTls::with_role(settings, is_inter_broker)?)` (and
//! `self_check(&settings, advertised_host)` for the inter-broker listener);
//! each accept takes `listener_tls.server_config()`; a verified client
//! certificate gives `User:` + `principal_mapper().principal_for(der)`.
//! Outbound: `client_config(&settings)` with the peer's advertised host as
//! the `ServerName`.

pub mod build;
pub mod eckey;
pub mod handshake_stats;
pub mod listener;
pub mod pbe;
pub mod principal;
pub mod record;
pub mod selfcheck;
pub mod session;
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
