//! `[io]` The broker's own connections to other brokers (replica
//! fetchers, the controller channel, transaction markers, KIP-890
//! verification, AlterPartition, ControlledShutdown, …): a TCP stream,
//! wrapped in a TLS client session when the listener they use has
//! protocol SSL (Kafka's `SslTransportLayer` on the client side of
//! `NetworkClient`). The server name is the target's advertised host for
//! that listener, so `ssl.endpoint.identification.algorithm=https` (the
//! `ClientConfig`'s verifier) checks the peer's certificate against it.
//! On a SASL_PLAINTEXT / SASL_SSL listener the broker then logs in
//! (`sasl_login`) before the connection carries anything else, with
//! OAUTHBEARER the listener's current token ([`oauth_token`]); when the
//! other broker announces a session lifetime (KIP-368) the connection
//! re-authenticates before the first request after a random 85–95 % of it
//! ([`BrokerStream::reauthenticate_if_due`], as Kafka's `KafkaChannel`
//! does before its next send).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_lite::{AsyncRead, AsyncWrite};
use glommio::net::TcpStream;
use rustls::pki_types::ServerName;

use crate::config::sasl::SaslClientSettings;
use crate::io::clock::{Clock, SystemClock};

pub mod oauth_token;
mod sasl_login;
pub use sasl_login::nonce as scram_nonce;

/// How the broker's connections on one listener are secured: TLS (the
/// listener is SSL or SASL_SSL) and a SASL login (SASL_PLAINTEXT or
/// SASL_SSL); both `None` on PLAINTEXT.
#[derive(Clone, Default, Debug)]
pub struct BrokerLink {
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub sasl: Option<Arc<SaslClientSettings>>,
    /// With OAUTHBEARER: the listener's token, kept fresh.
    pub oauth: Option<Arc<oauth_token::TokenStore>>,
}

/// The client configurations of the broker's outbound connections,
/// built once at boot.
#[derive(Clone, Default)]
pub struct BrokerTls {
    /// For connections on `inter.broker.listener.name` (replica fetchers,
    /// transaction markers, verification, AlterPartition, …).
    pub inter_broker: BrokerLink,
    /// For the controller's connections (`control.plane.listener.name`,
    /// KIP-291; the inter-broker listener's when none is set).
    pub control_plane: BrokerLink,
}

/// A connection to another broker.
pub struct BrokerStream {
    io: Transport,
    /// The SASL session to renew (KIP-368), when it has a lifetime.
    session: Option<Session>,
}

enum Transport {
    Plain(TcpStream),
    Tls(Box<futures_rustls::client::TlsStream<TcpStream>>),
}

struct Session {
    addr: String,
    login: Arc<SaslClientSettings>,
    token: Option<Arc<oauth_token::TokenStore>>,
    /// Re-authenticate before the first request from this wall time on.
    reauth_at_ms: i64,
}

/// When to re-authenticate a session of `lifetime_ms` (0: never).
fn reauth_at(lifetime_ms: i64) -> Option<i64> {
    (lifetime_ms > 0).then(|| {
        SystemClock::new().wall_ms()
            + crate::sasl::oauth_login::reauth_after_ms(lifetime_ms, oauth_token::unit_random())
    })
}

/// `[pure]` The host part of `host:port` (`[v6]:port` too), for the TLS
/// server name.
pub fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

impl BrokerStream {
    /// `tcp` (connected to `addr`) after a TLS handshake when `link` has
    /// TLS, then a SASL login when it has SASL; a failed handshake is an
    /// error naming rustls' reason, a refused login the broker's.
    pub async fn over(tcp: TcpStream, addr: &str, link: &BrokerLink) -> io::Result<Self> {
        let mut io = Transport::over_tls(tcp, addr, link.tls.as_ref()).await?;
        let mut session = None;
        if let Some(login) = &link.sasl {
            let lifetime = sasl_login::login(&mut io, login, link.oauth.as_deref(), false)
                .await
                .map_err(|e| io::Error::new(e.kind(), format!("SASL login to {addr}: {e}")))?;
            session = reauth_at(lifetime).map(|at| Session {
                addr: addr.to_owned(),
                login: login.clone(),
                token: link.oauth.clone(),
                reauth_at_ms: at,
            });
        }
        Ok(Self { io, session })
    }

    /// Connect to `addr` (`host:port`) secured as `link` says.
    pub async fn connect(addr: &str, link: &BrokerLink) -> io::Result<Self> {
        let tcp = TcpStream::connect(addr).await.map_err(io::Error::from)?;
        let _ = tcp.set_nodelay(true);
        Self::over(tcp, addr, link).await
    }

    /// Whether the connection is encrypted.
    pub fn is_tls(&self) -> bool {
        matches!(self.io, Transport::Tls(_))
    }

    /// KIP-368: re-authenticate when the session's renewal time has come
    /// (call between requests, none in flight). An error names the other
    /// broker's refusal; the caller drops the connection.
    pub async fn reauthenticate_if_due(&mut self) -> io::Result<()> {
        let Some(session) = &mut self.session else {
            return Ok(());
        };
        if SystemClock::new().wall_ms() < session.reauth_at_ms {
            return Ok(());
        }
        let lifetime =
            sasl_login::login(&mut self.io, &session.login, session.token.as_deref(), true)
                .await
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("SASL re-authentication to {}: {e}", session.addr),
                    )
                })?;
        tracing::debug!(
            peer = %session.addr,
            mechanism = session.login.mechanism.name(),
            session_lifetime_ms = lifetime,
            "SASL re-authentication of a broker connection succeeded"
        );
        match reauth_at(lifetime) {
            Some(at) => session.reauth_at_ms = at,
            None => self.session = None,
        }
        Ok(())
    }
}

impl Transport {
    async fn over_tls(
        tcp: TcpStream,
        addr: &str,
        tls: Option<&Arc<rustls::ClientConfig>>,
    ) -> io::Result<Self> {
        let Some(config) = tls else {
            return Ok(Self::Plain(tcp));
        };
        let name = ServerName::try_from(host_of(addr).to_owned()).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{addr}: not a TLS server name: {e}"),
            )
        })?;
        let stream = futures_rustls::TlsConnector::from(config.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| io::Error::new(e.kind(), format!("TLS handshake with {addr}: {e}")))?;
        Ok(Self::Tls(Box::new(stream)))
    }
}

impl AsRawFd for Transport {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Self::Plain(s) => s.as_raw_fd(),
            Self::Tls(s) => s.get_ref().0.as_raw_fd(),
        }
    }
}

impl AsyncRead for Transport {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Transport {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_close(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_close(cx),
        }
    }
}

impl AsRawFd for BrokerStream {
    fn as_raw_fd(&self) -> RawFd {
        self.io.as_raw_fd()
    }
}

impl AsyncRead for BrokerStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for BrokerStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_close(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_server_name_is_the_host_of_the_address() {
        assert_eq!(host_of("broker-1.internal:9093"), "broker-1.internal");
        assert_eq!(host_of("127.0.0.1:9093"), "127.0.0.1");
        assert_eq!(host_of("[::1]:9093"), "::1");
        assert_eq!(host_of("localhost"), "localhost");
    }
}
