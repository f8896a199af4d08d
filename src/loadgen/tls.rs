//! `[io]` The load generator's transport: PLAINTEXT or SSL (each with or
//! without a SASL login, `super::sasl`), as librdkafka's
//! `security.protocol` names them (`--security-protocol`, with
//! `--ssl-ca-location`, `--ssl-certificate-location`, `--ssl-key-location`
//! after librdkafka's `ssl.ca.location`, `ssl.certificate.location`,
//! `ssl.key.location`).
//!
//! SSL is rustls 0.23 with the ring provider over the same blocking std
//! `TcpStream`. Connections are written from the owning thread and read by
//! a reader thread, which one rustls session cannot do through
//! `rustls::StreamOwned` (a blocked read would hold the session). So the
//! session sits behind a mutex that is held only to encrypt or decrypt:
//! - writing encrypts the request's slices (rustls fragments a vectored
//!   write into records without first joining it), takes the records into
//!   a reused buffer and sends them after the lock is released;
//! - reading receives into a reused buffer without the lock, then feeds
//!   the records to the session and takes out plaintext under it.
//!
//! A socket never blocks while the lock is held, so a writer stuck on a
//! full send buffer cannot stop the reader from draining responses (which
//! a broker that stops reading until its response is sent would need).
//! PLAINTEXT is the bare `TcpStream` in a two-variant enum: no extra copy,
//! no dynamic dispatch.

use std::io::{self, IoSlice, Read, Write};
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore};

use super::sasl_login::SaslLogin;

/// Ciphertext bytes received per `recv` (several 16 KiB TLS records).
const RECV_BUFFER_BYTES: usize = 256 * 1024;

/// librdkafka's `security.protocol` values the load generator speaks.
#[derive(Clone, Default)]
pub enum Security {
    #[default]
    Plaintext,
    /// TLS with this client configuration (trust anchors, optional client
    /// certificate).
    Ssl(Arc<ClientConfig>),
    /// SASL over TCP: a login after ApiVersions (`super::sasl`).
    SaslPlaintext(Arc<SaslLogin>),
    /// SASL over TLS.
    SaslSsl(Arc<ClientConfig>, Arc<SaslLogin>),
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The TLS files of `--security-protocol SSL`.
#[derive(Debug, Clone, Default)]
pub struct SslFiles {
    /// `ssl.ca.location`: PEM certificates the broker's chain must end in.
    pub ca: Option<PathBuf>,
    /// `ssl.certificate.location`: the client's PEM certificate chain.
    pub certificate: Option<PathBuf>,
    /// `ssl.key.location`: the client's PEM private key (unencrypted).
    pub key: Option<PathBuf>,
}

impl Security {
    /// `--security-protocol` (case-insensitive, as librdkafka reads it),
    /// the SSL files and, for SASL_*, the login. A file given without TLS is
    /// refused rather than ignored, and so is a SASL protocol without a
    /// login.
    pub fn new(protocol: &str, files: &SslFiles, sasl: Option<SaslLogin>) -> Result<Self> {
        let lower = protocol.to_ascii_lowercase();
        let tls = matches!(lower.as_str(), "ssl" | "sasl_ssl");
        if !tls && (files.ca.is_some() || files.certificate.is_some() || files.key.is_some()) {
            bail!("--ssl-* files need --security-protocol SSL or SASL_SSL (the protocol is {protocol})");
        }
        let wants_sasl = lower.starts_with("sasl_");
        let login = match (wants_sasl, sasl) {
            (true, Some(login)) => Some(Arc::new(login)),
            (true, None) => bail!("--security-protocol {protocol}: SASL needs --sasl-mechanism, --sasl-username and --sasl-password"),
            (false, Some(_)) => bail!("a SASL login needs --security-protocol SASL_PLAINTEXT or SASL_SSL"),
            (false, None) => None,
        };
        match (lower.as_str(), login) {
            ("plaintext", None) => Ok(Self::Plaintext),
            ("ssl", None) => Ok(Self::Ssl(Arc::new(client_config(files)?))),
            ("sasl_plaintext", Some(login)) => Ok(Self::SaslPlaintext(login)),
            ("sasl_ssl", Some(login)) => Ok(Self::SaslSsl(Arc::new(client_config(files)?), login)),
            (other, _) => bail!(
                "--security-protocol {other:?}: the load generator speaks PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL"
            ),
        }
    }

    /// `PLAINTEXT`, `SSL`, `SASL_PLAINTEXT` or `SASL_SSL`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Plaintext => "PLAINTEXT",
            Self::Ssl(_) => "SSL",
            Self::SaslPlaintext(_) => "SASL_PLAINTEXT",
            Self::SaslSsl(..) => "SASL_SSL",
        }
    }

    /// The SASL login a new connection makes after ApiVersions, if any.
    pub fn sasl(&self) -> Option<&SaslLogin> {
        match self {
            Self::SaslPlaintext(login) | Self::SaslSsl(_, login) => Some(login),
            Self::Plaintext | Self::Ssl(_) => None,
        }
    }

    /// Connects to `addr` (`host:port`) within `timeout` and, for SSL,
    /// completes the handshake, checking the broker's certificate against
    /// the CA and the host name (librdkafka's default
    /// `ssl.endpoint.identification.algorithm=https`).
    pub fn connect(&self, addr: &str, timeout: Duration) -> Result<Stream> {
        let sock = dial(addr, timeout)?;
        sock.set_nodelay(true)?;
        match self {
            Self::Plaintext | Self::SaslPlaintext(_) => Ok(Stream::Plain(sock)),
            Self::Ssl(config) | Self::SaslSsl(config, _) => handshake(config, addr, sock, timeout)
                .map(Stream::Tls)
                .map_err(|e| {
                    // A PLAINTEXT listener closes on the ClientHello.
                    let hint = match format!("{e:#}").contains("peer certificate") {
                        true => "",
                        false => " (is it an SSL listener?)",
                    };
                    e.context(format!("TLS handshake with {addr}{hint}"))
                }),
        }
    }
}

/// The rustls client configuration: ring as the provider (the crate is
/// built without aws-lc-rs), TLS 1.2 and 1.3, the CA file as the only trust
/// anchors, and the client certificate when one is given.
fn client_config(files: &SslFiles) -> Result<ClientConfig> {
    if files.certificate.is_some() != files.key.is_some() {
        bail!("--ssl-certificate-location and --ssl-key-location go together");
    }
    let ca = files.ca.as_deref().ok_or_else(|| {
        anyhow!("--security-protocol SSL needs --ssl-ca-location (PEM file of the CA that signed the broker's certificate)")
    })?;
    let mut roots = RootCertStore::empty();
    for cert in read_certs(ca)? {
        roots
            .add(cert)
            .with_context(|| format!("--ssl-ca-location {}", ca.display()))?;
    }
    // rustls 0.23.48 deprecates ring's provider for its lack of
    // post-quantum key exchange; the crate is built with ring only (see
    // Cargo.toml), as the broker's own TLS is.
    #[allow(deprecated, reason = "ring is the provider this build has")]
    let provider = rustls::crypto::ring::default_provider();
    let builder = ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(rustls::ALL_VERSIONS)
        .context("TLS 1.2 and 1.3 with the ring provider")?
        .with_root_certificates(roots);
    match (&files.certificate, &files.key) {
        (None, None) => Ok(builder.with_no_client_auth()),
        (Some(cert), Some(key)) => {
            let chain = read_certs(cert)?;
            let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                anyhow!(
                    "--ssl-key-location {}: no unencrypted PEM private key ({e})",
                    key.display()
                )
            })?;
            builder
                .with_client_auth_cert(chain, key)
                .context("client certificate and key do not match")
        }
        _ => bail!("--ssl-certificate-location and --ssl-key-location go together"),
    }
}

/// Every certificate of a PEM file (at least one).
fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(Iterator::collect::<Result<Vec<_>, _>>)
        .map_err(|e| anyhow!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        bail!("{}: no PEM certificate in it", path.display());
    }
    Ok(certs)
}

/// Resolves `host:port` and connects with a timeout.
fn dial(addr: &str, timeout: Duration) -> Result<TcpStream> {
    let mut last = None;
    for sa in addr
        .to_socket_addrs()
        .with_context(|| format!("resolving {addr}"))?
    {
        match TcpStream::connect_timeout(&sa, timeout) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => Err(anyhow!("cannot connect to {addr}: {e}")),
        None => Err(anyhow!("{addr} resolved to no address")),
    }
}

/// The host of `host:port` (`[v6]:port` too) as the name the broker's
/// certificate must carry (a DNS name or an IP address SAN).
fn server_name(addr: &str) -> Result<ServerName<'static>> {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_string())
        .map_err(|e| anyhow!("{host:?} as a TLS server name: {e}"))
}

fn handshake(
    config: &Arc<ClientConfig>,
    addr: &str,
    mut sock: TcpStream,
    timeout: Duration,
) -> Result<TlsStream> {
    let mut session = ClientConnection::new(config.clone(), server_name(addr)?)?;
    // Whole requests are encrypted at once: the caller bounds their size.
    session.set_buffer_limit(None);
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    while session.is_handshaking() {
        session.complete_io(&mut sock)?;
    }
    while session.wants_write() {
        session.write_tls(&mut sock)?;
    }
    Ok(TlsStream {
        sock,
        session: Arc::new(Mutex::new(session)),
        inbuf: vec![0; RECV_BUFFER_BYTES].into_boxed_slice(),
        pos: 0,
        end: 0,
        out: Vec::new(),
    })
}

/// A broker connection: the bare socket or a TLS session over it.
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(TlsStream),
}

/// One side of a TLS session over a blocking socket: reads and writes go
/// through the shared session (see the module comment).
pub struct TlsStream {
    sock: TcpStream,
    session: Arc<Mutex<ClientConnection>>,
    /// Received ciphertext not yet fed to the session: `inbuf[pos..end]`.
    inbuf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Encrypted records of the last write.
    out: Vec<u8>,
}

impl std::fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsStream")
            .field("peer", &self.sock.peer_addr().ok())
            .finish()
    }
}

impl Stream {
    /// The underlying socket.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(s) => s,
            Self::Tls(t) => &t.sock,
        }
    }

    /// A second handle for a reader thread; from then on this one only
    /// writes and the returned one only reads. Ciphertext this handle has
    /// received but not yet decrypted moves to the reader.
    pub fn split_reader(&mut self) -> io::Result<Self> {
        match self {
            Self::Plain(s) => Ok(Self::Plain(s.try_clone()?)),
            Self::Tls(t) => {
                let mut inbuf = vec![0; RECV_BUFFER_BYTES].into_boxed_slice();
                let pending = t.end - t.pos;
                inbuf[..pending].copy_from_slice(&t.inbuf[t.pos..t.end]);
                (t.pos, t.end) = (0, 0);
                Ok(Self::Tls(TlsStream {
                    sock: t.sock.try_clone()?,
                    session: t.session.clone(),
                    inbuf,
                    pos: 0,
                    end: pending,
                    out: Vec::new(),
                }))
            }
        }
    }

    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.tcp().set_read_timeout(timeout)
    }

    pub fn set_write_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.tcp().set_write_timeout(timeout)
    }

    /// Shuts the socket down (unblocks a reader thread); no close_notify.
    pub fn shutdown(&self) -> io::Result<()> {
        self.tcp().shutdown(Shutdown::Both)
    }
}

impl Read for Stream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            Self::Tls(t) => t.read(buf),
        }
    }
}

impl Write for Stream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            Self::Tls(t) => t.write_vectored(&[IoSlice::new(buf)]),
        }
    }

    #[inline]
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write_vectored(bufs),
            Self::Tls(t) => t.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.flush(),
            Self::Tls(_) => Ok(()),
        }
    }
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn lock(session: &Mutex<ClientConnection>) -> io::Result<MutexGuard<'_, ClientConnection>> {
    session
        .lock()
        .map_err(|_| io::Error::other("TLS session poisoned by a panicked thread"))
}

impl TlsStream {
    /// Plaintext of the next records: drains what the session holds, else
    /// feeds it received ciphertext, else receives more (without the lock).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            {
                let mut s = lock(&self.session)?;
                match s.reader().read(buf) {
                    Ok(n) => return Ok(n),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
                if self.pos < self.end {
                    let mut rd = &self.inbuf[self.pos..self.end];
                    let fed = s.read_tls(&mut rd)?;
                    self.pos += fed;
                    s.process_new_packets().map_err(tls_error)?;
                    continue;
                }
            }
            let n = self.sock.read(&mut self.inbuf)?;
            if n == 0 {
                return Ok(0);
            }
            (self.pos, self.end) = (0, n);
        }
    }

    /// Encrypts all of `bufs` under the lock, sends the records after it.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        self.out.clear();
        let n = {
            let mut s = lock(&self.session)?;
            let n = s.writer().write_vectored(bufs)?;
            while s.wants_write() {
                s.write_tls(&mut self.out)?;
            }
            n
        };
        self.sock.write_all(&self.out)?;
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
