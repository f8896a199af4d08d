//! `[pure]` A server TLS session whose handshake is rustls' and whose
//! records are shardlog's ([`super::record`]), as a kernel-TLS server runs
//! (rustls' `kernel` module): the handshake is driven through rustls'
//! unbuffered API ([`Handshake::step`], bytes in and out, no socket), then
//! the traffic keys leave rustls with `dangerous_into_kernel_connection`.
//! rustls keeps the key schedule ([`KeySchedule`]: the next keys after a
//! TLS 1.3 KeyUpdate); everything else happens here.
//!
//! [`Inbound::open`] is the receive path: the caller appends received
//! ciphertext to its plaintext buffer, and every whole record is decrypted
//! in place so the plaintext follows the plaintext before it; the part of
//! a record still on its way is carried in a small side buffer to the next
//! read (at most one record).

use std::sync::Arc;

use bytes::BytesMut;
use rustls::kernel::KernelConnection;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{ConnectionState, EncodeError, InsufficientSizeError};
use rustls::{AlertDescription, ConnectionTrafficSecrets, ServerConfig, SupportedCipherSuite};

use super::record::{Event, Keys, RecordError, Rx, Tx, Version};

/// A handshake in progress.
pub struct Handshake {
    conn: UnbufferedServerConnection,
    /// Application data rustls decrypted before the handshake was done
    /// (a client's first request right behind its Finished).
    preread: Vec<u8>,
}

/// Largest handshake output written at once before rustls asks for more.
const ENCODE_CHUNK: usize = 16 * 1024;

impl Handshake {
    pub fn new(config: Arc<ServerConfig>) -> Result<Handshake, rustls::Error> {
        Ok(Handshake {
            conn: UnbufferedServerConnection::new(config)?,
            preread: Vec::new(),
        })
    }

    /// Process the handshake bytes received so far (`input`; what rustls
    /// used is removed from its front) and append what must be sent to
    /// `out` (send it before waiting for more input). `Ok(true)`: the
    /// handshake is complete ([`Handshake::finish`]); `Ok(false)`: more
    /// input is needed. On `Err`, `out` holds the alert rustls sends.
    pub fn step(&mut self, input: &mut Vec<u8>, out: &mut Vec<u8>) -> Result<bool, rustls::Error> {
        loop {
            let Handshake { conn, preread } = self;
            let status = conn.process_tls_records(&mut input[..]);
            let mut discard = status.discard;
            let outcome = match status.state {
                Err(e) => Err(e),
                Ok(ConnectionState::EncodeTlsData(mut enc)) => {
                    let at = out.len();
                    out.resize(at + ENCODE_CHUNK, 0);
                    let mut r = enc.encode(&mut out[at..]);
                    if let Err(EncodeError::InsufficientSize(InsufficientSizeError {
                        required_size,
                    })) = r
                    {
                        out.resize(at + required_size, 0);
                        r = enc.encode(&mut out[at..]);
                    }
                    match r {
                        Ok(n) => {
                            out.truncate(at + n);
                            Ok(None)
                        }
                        Err(e) => {
                            out.truncate(at);
                            Err(rustls::Error::General(format!("encoding handshake: {e}")))
                        }
                    }
                }
                // The caller sends `out` before it waits for input.
                Ok(ConnectionState::TransmitTlsData(t)) => {
                    t.done();
                    Ok(None)
                }
                Ok(ConnectionState::ReadTraffic(mut r)) => {
                    let mut got = Ok(None);
                    while let Some(rec) = r.next_record() {
                        match rec {
                            Ok(rec) => {
                                preread.extend_from_slice(rec.payload);
                                discard += rec.discard;
                            }
                            Err(e) => {
                                got = Err(e);
                                break;
                            }
                        }
                    }
                    got
                }
                Ok(ConnectionState::BlockedHandshake) => Ok(Some(false)),
                // TLS 1.3 lets a server write once its Finished is out; the
                // handshake is complete only with the client's Finished.
                Ok(ConnectionState::WriteTraffic(_)) => Ok(Some(!conn.is_handshaking())),
                Ok(ConnectionState::PeerClosed | ConnectionState::Closed) => Err(
                    rustls::Error::General("peer closed the connection in the handshake".into()),
                ),
                Ok(_) => Err(rustls::Error::General(
                    "unexpected TLS handshake state (early data is not accepted)".into(),
                )),
            };
            input.drain(..discard.min(input.len()));
            match outcome {
                Ok(None) => {}
                Ok(Some(done)) => return Ok(done),
                Err(e) => {
                    self.take_alert(input, out);
                    return Err(e);
                }
            }
        }
    }

    /// After an error rustls queues its alert; fetch it for the peer.
    fn take_alert(&mut self, input: &mut [u8], out: &mut Vec<u8>) {
        let status = self.conn.process_tls_records(input);
        if let Ok(ConnectionState::EncodeTlsData(mut enc)) = status.state {
            let at = out.len();
            out.resize(at + ENCODE_CHUNK, 0);
            match enc.encode(&mut out[at..]) {
                Ok(n) => out.truncate(at + n),
                Err(_) => out.truncate(at),
            }
        }
    }

    /// The client's certificate chain, leaf first (after the handshake).
    pub fn peer_certificates(&self) -> Option<&[rustls_pki_types::CertificateDer<'static>]> {
        self.conn.peer_certificates()
    }

    /// The completed handshake's keys, as shardlog's record layer and
    /// rustls' key schedule. `input`: ciphertext received after the
    /// handshake (the start of the first record after it).
    pub fn finish(self) -> Result<Session, String> {
        let (secrets, kernel) = self
            .conn
            .dangerous_into_kernel_connection()
            .map_err(|e| format!("taking the TLS session's keys: {e}"))?;
        let suite = kernel.negotiated_cipher_suite();
        let version = Version::of(kernel.protocol_version())
            .ok_or("negotiated TLS version has no record layer here")?;
        Session::new(version, suite, secrets, Some(kernel), self.preread)
    }
}

/// An established session: the two directions and rustls' key schedule.
pub struct Session {
    pub rx: Rx,
    pub tx: Tx,
    pub schedule: KeySchedule,
    /// Plaintext decrypted by rustls before the hand-over.
    pub preread: Vec<u8>,
}

impl Session {
    /// A session from rustls' extracted secrets; `kernel`: rustls' key
    /// schedule (`None`: the session cannot update its keys, as a session
    /// prepared for kernel TLS cannot; a KeyUpdate then closes it).
    pub fn new(
        version: Version,
        suite: SupportedCipherSuite,
        secrets: rustls::ExtractedSecrets,
        kernel: Option<KernelConnection<ServerConnectionData>>,
        preread: Vec<u8>,
    ) -> Result<Session, String> {
        let rx = Keys::new(version, secrets.rx.0, &secrets.rx.1).map_err(|e| e.reason)?;
        let tx = Keys::new(version, secrets.tx.0, &secrets.tx.1).map_err(|e| e.reason)?;
        let limit = match suite {
            SupportedCipherSuite::Tls13(s) => s.common.confidentiality_limit,
            SupportedCipherSuite::Tls12(s) => s.common.confidentiality_limit,
        };
        Ok(Session {
            rx: Rx::new(rx),
            tx: Tx::new(tx, limit),
            schedule: KeySchedule { kernel, version },
            preread,
        })
    }
}

/// rustls' TLS 1.3 key schedule for the session (`KernelConnection`).
pub struct KeySchedule {
    kernel: Option<KernelConnection<ServerConnectionData>>,
    version: Version,
}

impl KeySchedule {
    fn next(&mut self, tx: bool) -> Result<Keys, RecordError> {
        let refused = |reason: String| RecordError {
            alert: Some(AlertDescription::InternalError),
            reason,
        };
        let Some(kernel) = self.kernel.as_mut() else {
            return Err(refused(
                "TLS KeyUpdate on a session without rustls' key schedule".into(),
            ));
        };
        let next = if tx {
            kernel.update_tx_secret()
        } else {
            kernel.update_rx_secret()
        };
        let (seq, secrets): (u64, ConnectionTrafficSecrets) =
            next.map_err(|e| refused(format!("TLS key update: {e}")))?;
        Keys::new(self.version, seq, &secrets)
    }

    /// The peer's next keys, after its KeyUpdate.
    pub fn next_rx(&mut self) -> Result<Keys, RecordError> {
        self.next(false)
    }

    /// Our next keys, after we sent a KeyUpdate.
    pub fn next_tx(&mut self) -> Result<Keys, RecordError> {
        self.next(true)
    }
}

/// What [`Inbound::open`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// Plaintext bytes appended.
    pub plain: usize,
    /// The peer sent close_notify (nothing after it is read).
    pub closed: bool,
    /// The peer asked for our KeyUpdate (RFC 8446 §4.6.3).
    pub update_requested: bool,
}

/// The receive path's state between reads.
pub struct Inbound {
    pub rx: Rx,
    /// The start of a record whose rest has not arrived (at most one
    /// record).
    tail: Vec<u8>,
    closed: bool,
}

impl Inbound {
    pub fn new(rx: Rx) -> Inbound {
        Inbound::with_pending(rx, Vec::new())
    }

    /// `pending`: ciphertext received with the handshake's last bytes.
    pub fn with_pending(rx: Rx, pending: Vec<u8>) -> Inbound {
        Inbound {
            rx,
            tail: pending,
            closed: false,
        }
    }

    /// The peer closed with close_notify.
    pub fn closed(&self) -> bool {
        self.closed
    }

    /// Before a read: put the carried start of a record at the end of
    /// `buf`, with room reserved for `more` bytes after it. Returns where
    /// the ciphertext starts (the plaintext so far ends there).
    pub fn prepare(&mut self, buf: &mut BytesMut, more: usize) -> usize {
        let base = buf.len();
        buf.reserve(self.tail.len() + more);
        buf.extend_from_slice(&self.tail);
        self.tail.clear();
        base
    }

    /// After a read: `buf[base..]` is ciphertext. Every whole record is
    /// opened in place; afterwards `buf[base..base + plain]` is its
    /// plaintext and the rest of `buf` is gone (carried to the next read).
    /// `next_rx` gives the peer's next keys after its KeyUpdate.
    pub fn open(
        &mut self,
        buf: &mut BytesMut,
        base: usize,
        next_rx: &mut dyn FnMut() -> Result<Keys, RecordError>,
    ) -> Result<Opened, RecordError> {
        let mut opened = Opened::default();
        let (mut dst, mut src) = (base, base);
        while !self.closed {
            let Some((event, used)) = self.rx.open_next(&mut buf[..], dst, src)? else {
                break;
            };
            src += used;
            match event {
                Event::Data(n) => dst += n,
                Event::KeyUpdate { requested } => {
                    self.rx.rekey(next_rx()?);
                    opened.update_requested |= requested;
                }
                Event::Close => self.closed = true,
                Event::Nothing => {}
            }
        }
        if !self.closed {
            self.tail.extend_from_slice(&buf[src..]);
        }
        buf.truncate(dst);
        opened.plain = dst - base;
        opened.closed = self.closed;
        Ok(opened)
    }
}

#[cfg(test)]
mod tests;
