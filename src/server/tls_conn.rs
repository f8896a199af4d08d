//! `[io]` A client connection on an SSL listener: the TLS handshake on the
//! accepting shard, then the connection's read and write loops over the
//! TLS session (Kafka's `SslTransportLayer`).
//!
//! The handshake is async (rustls' unbuffered API driven over glommio's
//! stream, `records::accept`), so the shard serves its other connections
//! meanwhile; it is bounded by `connections.max.idle.ms` (a client that
//! opens TCP and never finishes it is closed then; at most 128 KiB of a
//! handshake flight is held). A failed handshake closes the connection
//! with a warning naming the peer and rustls' reason.
//!
//! After it, the traffic keys leave rustls (`tls::session`) and the
//! records are shardlog's own (`tls::record`, `records`): decrypted in
//! place in the connection's read buffer, sealed into one reused buffer
//! from the responses' `Bytes` and file pages. Where the kernel may take
//! the session (`kernel`), the handshake runs through rustls' buffered
//! API read record by record instead, and the keys go to the kernel.

use std::io::{self, Read};
use std::rc::Rc;
use std::sync::Arc;

use glommio::net::TcpStream;
use rustls::ServerConnection;

use super::connection::{peer_names, run, serve_socket, Peer};
use super::memory_pool::MemoryPool;
use crate::shard::ShardContext;
use crate::tls::record::Version;
use crate::tls::session::Session;
use crate::tls::ListenerTls;

// What this file's tests name through `use super::*` (the read and write
// loops they drive moved to `records`).
#[cfg(test)]
use {
    super::out::OutPart,
    crate::io::zerocopy::ZeroCopyStats,
    bytes::BytesMut,
    futures_lite::{AsyncReadExt, AsyncWriteExt},
    std::cell::{Cell, RefCell},
};

pub use super::connection::ANONYMOUS_PRINCIPAL;

/// What a TLS listener's connections need: the server configuration to
/// handshake with (taken per connection, so a reloaded keystore applies
/// to new connections only) and the principal of a client certificate.
pub trait ServerTls {
    fn server_config(&self) -> Arc<rustls::ServerConfig>;
    /// Kafka's principal (`User:<name>`) for the DER client certificate.
    fn principal_for(&self, cert_der: &[u8]) -> Result<String, String>;
}

/// An SSL listener's [`ListenerTls`] as the handshake uses it: the
/// principal is `User:` + the name `ssl.principal.mapping.rules` give the
/// certificate's subject (Kafka's `DefaultKafkaPrincipalBuilder`).
pub struct ListenerServerTls<'a>(pub &'a ListenerTls);

impl ServerTls for ListenerServerTls<'_> {
    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.0.server_config()
    }

    fn principal_for(&self, cert_der: &[u8]) -> Result<String, String> {
        let name = self.0.principal_mapper().principal_for(cert_der)?;
        Ok(format!("User:{name}"))
    }
}

/// Serve one connection of the SSL listener `listener` (its TLS state
/// `tls`): the handshake, then the connection's loops over the session.
/// A failed handshake closes the connection with a warning naming the
/// peer and the reason; nothing else on the shard notices.
pub async fn serve(
    ctx: Rc<ShardContext>,
    stream: TcpStream,
    pool: Arc<MemoryPool>,
    tls: Arc<ListenerTls>,
    listener: &str,
    sasl: Option<Arc<super::sasl_conn::SaslListener>>,
) {
    let (peer, client_host) = peer_names(&stream);
    // Responses are complete messages; do not let Nagle hold them back.
    let _ = stream.set_nodelay(true);
    let kernel = crate::io::ktls::probe();
    // Read the handshake record by record only where the kernel may take
    // the session over (it costs a read per record header).
    let cork = matches!(kernel, crate::io::ktls::KernelTls::Available(_));
    let shaken = futures_lite::future::or(
        async { Some(timed_handshake(&ctx, stream, &tls, cork).await) },
        async {
            ctx.stopping.wait().await;
            None
        },
    )
    .await;
    let stats = &ctx.stats.tls_handshakes;
    let done = match shaken {
        None => return, // the shard stops
        Some(Err(reason)) => {
            stats.borrow_mut().failed += 1;
            // Kafka's `Selector` records a failed handshake
            // (`SslAuthenticationException`) as a failed authentication.
            ctx.stats.metrics.socket(listener).on_authentication(false);
            tracing::warn!(%peer, listener, %reason, "closing connection");
            return;
        }
        Some(Ok(done)) => {
            stats.borrow_mut().completed += 1;
            done
        }
    };
    let done = if cork && kernel::kernel_cipher(&done, kernel).is_some() {
        match kernel::hand_off(done).await {
            Ok(kernel::Handoff::Kernel(k)) => {
                stats.borrow_mut().kernel += 1;
                let principal: Rc<str> = k.principal.as_str().into();
                let who = Peer::new(peer, client_host, principal, listener).with_sasl(sasl);
                serve_socket(ctx, k.stream, pool, who, k.preread).await;
                return;
            }
            Ok(kernel::Handoff::User(done, reason)) => {
                tracing::debug!(%peer, listener, %reason, "kernel TLS refused; user-space TLS");
                *done
            }
            Err(reason) => {
                tracing::warn!(%peer, listener, %reason, "kernel TLS hand-off failed; closing");
                return;
            }
        }
    } else {
        done
    };
    // SASL_SSL: the principal comes from SASL, never the certificate.
    let principal: Rc<str> = done.principal.as_str().into();
    let (reader, writer) = match split(done) {
        Ok(halves) => halves,
        Err(e) => {
            tracing::warn!(%peer, listener, error = %e, "cannot make socket non-blocking; closing");
            return;
        }
    };
    let who = Peer::new(peer, client_host, principal, listener).with_sasl(sasl);
    run(ctx, who, pool, reader, writer).await;
}

/// The handshake of one connection, bounded by `connections.max.idle.ms`,
/// as a task of the shard's default queue: each poll is one step of it
/// (rustls between two reads), timed into the shard's `tls_handshakes` —
/// the longest is the longest the shard's other connections waited for
/// one handshake step (`shardlog.stall.detect.ms` reports any over it).
async fn timed_handshake(
    ctx: &ShardContext,
    stream: TcpStream,
    tls: &ListenerTls,
    cork: bool,
) -> Result<Established, String> {
    let server = ListenerServerTls(tls);
    let timeout_ms = ctx.config.connections_max_idle_ms;
    let stats = &ctx.stats.tls_handshakes;
    let mut shaking = std::pin::pin!(handshake(stream, &server, timeout_ms, cork));
    std::future::poll_fn(|cx| {
        let t0 = ctx.clock.mono_ns();
        let r = std::future::Future::poll(shaking.as_mut(), cx);
        stats
            .borrow_mut()
            .step(ctx.clock.mono_ns().saturating_sub(t0));
        r
    })
    .await
}

/// A handshaken TLS connection, ready for the read and write loops.
pub struct Established {
    pub stream: TcpStream,
    pub session: TlsSession,
    /// From the client certificate, or [`ANONYMOUS_PRINCIPAL`].
    pub principal: String,
}

/// Who holds a handshaken session.
pub enum TlsSession {
    /// rustls' buffered connection, read record by record (`kernel::Corked`)
    /// so the kernel can take it over.
    Rustls(Box<ServerConnection>),
    /// shardlog's record layer with rustls' key schedule; `pending`: the
    /// ciphertext received after the handshake.
    Own {
        session: Box<Session>,
        pending: Vec<u8>,
    },
}

/// Run the server handshake on `stream`; `Err`: the reason, for the
/// caller's warning (rustls' error, a timeout, or a principal the
/// certificate does not map to). `timeout_ms` < 0: no bound (Kafka's
/// `connections.max.idle.ms` = -1). `cork`: read record by record, so the
/// session can be handed to the kernel after it (`kernel::Corked`);
/// otherwise the handshake runs through rustls' unbuffered API and the
/// session continues on shardlog's record layer (`records`).
pub async fn handshake(
    stream: TcpStream,
    tls: &dyn ServerTls,
    timeout_ms: i64,
    cork: bool,
) -> Result<Established, String> {
    let config = tls.server_config();
    if !cork {
        // The keys must leave rustls for the record layer; the listeners'
        // configs allow it (`tls::build`), any other is copied to.
        let config = if config.enable_secret_extraction {
            config
        } else {
            let mut copy = (*config).clone();
            copy.enable_secret_extraction = true;
            Arc::new(copy)
        };
        let mut stream = stream;
        let (hs, pending) = bounded(records::accept(&mut stream, config), timeout_ms)
            .await
            .ok_or_else(|| timed_out(timeout_ms))??;
        let principal = principal(tls, hs.peer_certificates())?;
        let session = hs.finish()?;
        return Ok(Established {
            stream,
            session: TlsSession::Own {
                session: Box::new(session),
                pending,
            },
            principal,
        });
    }
    let (corked, session) = accept(kernel::Corked::new(stream), config, timeout_ms).await?;
    let principal = principal(tls, session.peer_certificates())?;
    Ok(Established {
        stream: corked.inner,
        session: TlsSession::Rustls(Box::new(session)),
        principal,
    })
}

/// Kafka's principal for the client's certificate chain.
fn principal(
    tls: &dyn ServerTls,
    chain: Option<&[rustls_pki_types::CertificateDer<'static>]>,
) -> Result<String, String> {
    match chain.and_then(|c| c.first()) {
        None => Ok(ANONYMOUS_PRINCIPAL.to_string()),
        Some(cert) => tls
            .principal_for(cert.as_ref())
            .map_err(|e| format!("no principal for the client certificate: {e}")),
    }
}

fn timed_out(timeout_ms: i64) -> String {
    format!("TLS handshake not completed within connections.max.idle.ms ({timeout_ms} ms)")
}

/// `fut`, or `None` once `timeout_ms` passed (< 0: no bound).
async fn bounded<T>(fut: impl std::future::Future<Output = T>, timeout_ms: i64) -> Option<T> {
    let run = async { Some(fut.await) };
    let limit = async {
        match u64::try_from(timeout_ms) {
            Ok(ms) => glommio::timer::sleep(std::time::Duration::from_millis(ms)).await,
            Err(_) => std::future::pending::<()>().await,
        }
        None
    };
    futures_lite::future::or(run, limit).await
}

/// rustls' server handshake on `io`, bounded by `timeout_ms`.
async fn accept<IO>(
    io: IO,
    config: Arc<rustls::ServerConfig>,
    timeout_ms: i64,
) -> Result<(IO, ServerConnection), String>
where
    IO: futures_lite::AsyncRead + futures_lite::AsyncWrite + Unpin,
{
    let acceptor = futures_rustls::TlsAcceptor::from(config);
    let tls_stream = match bounded(acceptor.accept(io), timeout_ms).await {
        None => return Err(timed_out(timeout_ms)),
        Some(Err(e)) => return Err(format!("TLS handshake failed: {e}")),
        Some(Ok(s)) => s,
    };
    Ok(tls_stream.into_inner())
}

/// The two halves of an established connection, on shardlog's record
/// layer. A rustls session the kernel did not take is taken apart first:
/// the records it still has to send go out with the first write, the
/// plaintext it decrypted is read first, its keys continue here (without
/// rustls' key schedule: a KeyUpdate closes such a connection, as it
/// would under kernel TLS).
pub fn split(done: Established) -> io::Result<(TlsRead, TlsWrite)> {
    match done.session {
        TlsSession::Own { session, pending } => {
            records::halves(done.stream, *session, pending, Vec::new())
        }
        TlsSession::Rustls(session) => {
            let (session, queued) = from_rustls(*session).map_err(io::Error::other)?;
            records::halves(done.stream, session, Vec::new(), queued)
        }
    }
}

/// A buffered rustls session's keys, plaintext and queued records.
fn from_rustls(mut conn: ServerConnection) -> Result<(Session, Vec<u8>), String> {
    let mut queued = Vec::new();
    while conn.wants_write() {
        conn.write_tls(&mut queued)
            .map_err(|e| format!("TLS records to flush: {e}"))?;
    }
    conn.process_new_packets()
        .map_err(|e| format!("TLS: {e}"))?;
    let mut preread = Vec::new();
    match conn.reader().read_to_end(&mut preread) {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        Err(e) => return Err(format!("TLS: {e}")),
    }
    let version = conn
        .protocol_version()
        .and_then(Version::of)
        .ok_or("no negotiated TLS version")?;
    let suite = conn
        .negotiated_cipher_suite()
        .ok_or("no negotiated cipher suite")?;
    #[allow(
        deprecated,
        reason = "a buffered ServerConnection has no dangerous_into_kernel_connection; this session was prepared for kernel TLS, which has no key schedule either"
    )]
    let secrets = conn
        .dangerous_extract_secrets()
        .map_err(|e| format!("extracting TLS secrets: {e}"))?;
    let session = Session::new(version, suite, secrets, None, preread)?;
    Ok((session, queued))
}

pub mod kernel;
pub mod records;

pub use records::{TlsRead, TlsWrite};

#[cfg(test)]
mod tests;
