//! The TLS state boot builds from the `ssl.*` keys (Kafka's
//! `SocketServer` creates one `ChannelBuilder` per listener, and
//! `NetworkClient`s for brokers use the inter-broker listener's): a
//! [`ListenerTls`] per SSL listener, and the client configurations of the
//! broker's own connections to other brokers. A keystore or truststore
//! that cannot be loaded stops the start naming its key.

use std::sync::Arc;

use anyhow::anyhow;

use crate::config::{SecurityProtocol, ServerConfig};
use crate::io::broker_stream::{BrokerLink, BrokerTls};
use crate::tls::{ListenerTls, SslSettings};

/// The TLS state of listener `name` (`None` unless its protocol is SSL
/// or SASL_SSL).
pub fn listener_tls(
    config: &ServerConfig,
    name: &str,
    protocol: SecurityProtocol,
) -> anyhow::Result<Option<Arc<ListenerTls>>> {
    if !matches!(protocol, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl) {
        return Ok(None);
    }
    let settings = SslSettings::for_listener(config, name).map_err(|e| anyhow!(e))?;
    let inter_broker = name == config.inter_broker_listener();
    let tls = ListenerTls::with_role(settings, inter_broker).map_err(|e| anyhow!(e))?;
    tracing::info!(
        listener = name,
        path = %crate::io::ktls::probe().describe(),
        "TLS listener"
    );
    Ok(Some(Arc::new(tls)))
}

/// The client configurations of the inter-broker and control-plane
/// listeners (each `None` unless that listener is SSL).
pub fn broker_tls(config: &ServerConfig) -> anyhow::Result<BrokerTls> {
    let client = |name: &str| -> anyhow::Result<Option<Arc<rustls::ClientConfig>>> {
        if !matches!(
            config.listener_protocol(name),
            SecurityProtocol::Ssl | SecurityProtocol::SaslSsl
        ) {
            return Ok(None);
        }
        let settings = SslSettings::for_listener(config, name).map_err(|e| anyhow!(e))?;
        Ok(Some(
            crate::tls::client_config(&settings).map_err(|e| anyhow!(e))?,
        ))
    };
    let link = |name: &str| -> anyhow::Result<BrokerLink> {
        let sasl = crate::config::sasl::broker_client(config, name)?.map(Arc::new);
        // OAUTHBEARER: log in now (a failure stops the start) and keep
        // the token fresh.
        let oauth = match sasl.as_ref().and_then(|s| s.oauth.as_ref()) {
            Some(login) => Some(
                crate::io::broker_stream::oauth_token::start(name, login)
                    .map_err(anyhow::Error::msg)?,
            ),
            None => None,
        };
        Ok(BrokerLink {
            tls: client(name)?,
            sasl,
            oauth,
        })
    };
    let inter_broker = link(config.inter_broker_listener())?;
    let control_plane = if config.controller_listener() == config.inter_broker_listener() {
        inter_broker.clone()
    } else {
        link(config.controller_listener())?
    };
    Ok(BrokerTls {
        inter_broker,
        control_plane,
    })
}

/// The SSL listeners dynamic broker configs reconfigure (KIP-226): every
/// bound listener's shared [`ListenerTls`], the same `Arc`s the shards'
/// accept loops hold, so a reload reaches new connections on every shard.
pub fn ssl_listeners<'a>(
    config: &ServerConfig,
    listeners: impl IntoIterator<Item = &'a crate::server::listener::ListenerInfo>,
) -> crate::shard::control::ssl_listeners::SslListeners {
    let mut ssl = crate::shard::control::ssl_listeners::SslListeners::new(config);
    for info in listeners {
        if let Some(tls) = &info.tls {
            ssl.add(config, &info.name, tls.clone());
        }
    }
    ssl
}
