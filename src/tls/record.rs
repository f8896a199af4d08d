//! `[pure]` The TLS record layer for application data after the handshake,
//! as kernel TLS runs it (Linux `net/tls/tls_sw.c`): rustls makes the
//! handshake and hands over the traffic keys with their sequence numbers
//! (`rustls::ExtractedSecrets`); from then on records are opened and sealed
//! here with ring's AEAD, in place in the caller's buffers.
//!
//! - TLS 1.3 (RFC 8446 §5.2–5.3): the nonce is the write IV XOR the 64-bit
//!   sequence number, the additional data is the record header, the real
//!   content type is the last non-zero byte of the decrypted inner
//!   plaintext (zeros after it are padding).
//! - TLS 1.2 (RFC 5246 §6.2.3.3, RFC 5288, RFC 7905): the additional data
//!   is `seq_num ‖ type ‖ version ‖ length`; AES-GCM carries an 8-byte
//!   explicit nonce before the ciphertext (the salt is the IV's first 4
//!   bytes), ChaCha20-Poly1305 uses IV XOR sequence number as TLS 1.3 does.
//!
//! [`Rx::open_next`] decrypts one record with `open_within`, which writes
//! the plaintext to where the caller wants it (right after the plaintext
//! of the records before it) in the same pass: a buffer of ciphertext
//! becomes a buffer of contiguous plaintext without a copy or an
//! allocation per record. Control records come back as [`Event`]s:
//! close_notify, a TLS 1.3 KeyUpdate (the caller installs the next keys,
//! from rustls' `KernelConnection`), a fatal alert as an error. [`Tx`]
//! seals records the caller fills in its own buffer (`begin`, append the
//! plaintext, `seal`), with `seal_in_place_separate_tag`.
//!
//! Nothing a peer sends panics here: every length is checked before it is
//! used, and a bad record is a [`RecordError`] naming the alert rustls
//! would send. Tested against rustls in `tls::session`'s tests.

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use rustls::{AlertDescription, ConnectionTrafficSecrets};

/// A record header: type, legacy version (2), length (2).
pub const HEADER: usize = 5;
/// The most plaintext one record carries (2^14, RFC 8446 §5.1).
pub const MAX_PLAIN: usize = 16 * 1024;
const TAG: usize = 16;
/// TLS 1.2 AES-GCM's explicit nonce (RFC 5288 §3).
const EXPLICIT: usize = 8;
/// TLS 1.3: a TLSCiphertext body is at most 2^14 + 256 bytes.
const MAX_BODY_13: usize = MAX_PLAIN + 256;
/// TLS 1.2: a TLSCiphertext body is at most 2^14 + 2048 bytes.
const MAX_BODY_12: usize = MAX_PLAIN + 2048;
/// The most ciphertext of one record, header included.
pub const MAX_RECORD: usize = HEADER + MAX_BODY_12;

const CHANGE_CIPHER_SPEC: u8 = 20;
const ALERT: u8 = 21;
const HANDSHAKE: u8 = 22;
const APPLICATION_DATA: u8 = 23;
/// HandshakeType key_update (RFC 8446 §4.6.3).
const KEY_UPDATE: u8 = 24;

/// The protocol version the keys are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Tls12,
    Tls13,
}

impl Version {
    /// The record layer for a negotiated version; `None`: neither 1.2 nor 1.3.
    pub fn of(v: rustls::ProtocolVersion) -> Option<Version> {
        match v {
            rustls::ProtocolVersion::TLSv1_2 => Some(Version::Tls12),
            rustls::ProtocolVersion::TLSv1_3 => Some(Version::Tls13),
            _ => None,
        }
    }
}

/// Why a record was refused: the alert to answer with (none when the peer
/// sent a fatal alert itself) and the reason for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub alert: Option<AlertDescription>,
    pub reason: String,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for RecordError {}

fn refuse(alert: AlertDescription, reason: impl Into<String>) -> RecordError {
    RecordError {
        alert: Some(alert),
        reason: reason.into(),
    }
}

/// One direction's traffic keys and next sequence number.
pub struct Keys {
    key: LessSafeKey,
    iv: [u8; 12],
    seq: u64,
    version: Version,
    /// TLS 1.2 AES-GCM: the explicit nonce precedes the ciphertext.
    explicit: bool,
}

impl Keys {
    /// Keys from rustls' extracted (or updated) secrets; `seq` is the
    /// sequence number of the next record in this direction.
    pub fn new(
        version: Version,
        seq: u64,
        secrets: &ConnectionTrafficSecrets,
    ) -> Result<Keys, RecordError> {
        let (alg, key, iv, gcm) = match secrets {
            ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (&aead::AES_128_GCM, key, iv, true),
            ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (&aead::AES_256_GCM, key, iv, true),
            ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
                (&aead::CHACHA20_POLY1305, key, iv, false)
            }
            _ => {
                return Err(refuse(
                    AlertDescription::InternalError,
                    "negotiated cipher has no record layer here",
                ))
            }
        };
        let bad_key = |_| {
            refuse(
                AlertDescription::InternalError,
                "traffic key of a wrong size",
            )
        };
        let unbound = UnboundKey::new(alg, key.as_ref()).map_err(bad_key)?;
        let iv: [u8; 12] = iv.as_ref().try_into().map_err(|_| {
            refuse(
                AlertDescription::InternalError,
                "traffic IV of a wrong size",
            )
        })?;
        Ok(Keys {
            key: LessSafeKey::new(unbound),
            iv,
            seq,
            version,
            explicit: gcm && version == Version::Tls12,
        })
    }

    /// The sequence number of the next record.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// IV XOR sequence number (RFC 8446 §5.3; RFC 7905 §2; rustls' TLS 1.2
    /// GCM writer sends the same value's last 8 bytes as explicit nonce).
    fn nonce(&self) -> [u8; 12] {
        let mut n = self.iv;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    /// The sequence number of this record, refusing the last one (a
    /// sequence number must not wrap, RFC 8446 §5.3).
    fn take_seq(&mut self) -> Result<u64, RecordError> {
        let seq = self.seq;
        self.seq = seq.checked_add(1).ok_or_else(|| {
            refuse(
                AlertDescription::InternalError,
                "TLS record sequence number exhausted",
            )
        })?;
        Ok(seq)
    }

    /// What precedes the ciphertext in a record body.
    fn prefix(&self) -> usize {
        if self.explicit {
            EXPLICIT
        } else {
            0
        }
    }
}

fn tls12_aad(seq: u64, typ: u8, len: usize) -> [u8; 13] {
    let mut aad = [0u8; 13];
    aad[..8].copy_from_slice(&seq.to_be_bytes());
    aad[8] = typ;
    aad[9] = 3;
    aad[10] = 3;
    // `len` ≤ MAX_PLAIN, checked by the callers.
    aad[11..].copy_from_slice(&u16::try_from(len).unwrap_or(u16::MAX).to_be_bytes());
    aad
}

/// What one record was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `n` bytes of application data, now at the destination offset.
    Data(usize),
    /// A TLS 1.3 KeyUpdate: install the peer's next keys ([`Rx::rekey`])
    /// before the next record; `requested`: the peer asks for ours too
    /// (RFC 8446 §4.6.3: send a KeyUpdate before the next data).
    KeyUpdate { requested: bool },
    /// The peer's close_notify: no more data follows.
    Close,
    /// Nothing for the stream (a warning alert rustls ignores too).
    Nothing,
}

/// The receiving direction.
pub struct Rx {
    keys: Keys,
    /// A handshake message split across records (at most a KeyUpdate's 5
    /// bytes are ever kept: anything else is refused).
    hs: [u8; 5],
    hs_len: usize,
}

impl Rx {
    pub fn new(keys: Keys) -> Rx {
        Rx {
            keys,
            hs: [0; 5],
            hs_len: 0,
        }
    }

    /// Install the peer's next keys after [`Event::KeyUpdate`].
    pub fn rekey(&mut self, keys: Keys) {
        self.keys = keys;
    }

    pub fn version(&self) -> Version {
        self.keys.version
    }

    /// The length of the record starting at `buf[0]`, header included,
    /// once its header is there; refuses a header no peer may send.
    pub fn record_len(&self, buf: &[u8]) -> Result<Option<usize>, RecordError> {
        let [typ, major, _, hi, lo, ..] = *buf else {
            return Ok(None);
        };
        let body = usize::from(u16::from_be_bytes([hi, lo]));
        let max = match self.keys.version {
            Version::Tls13 => MAX_BODY_13,
            Version::Tls12 => MAX_BODY_12,
        };
        let known = match self.keys.version {
            Version::Tls13 => typ == APPLICATION_DATA,
            Version::Tls12 => matches!(typ, ALERT | HANDSHAKE | APPLICATION_DATA),
        };
        if !known {
            let what = if typ == CHANGE_CIPHER_SPEC {
                "ChangeCipherSpec after the handshake".to_string()
            } else {
                format!("TLS record of content type {typ} after the handshake")
            };
            return Err(refuse(AlertDescription::UnexpectedMessage, what));
        }
        if major != 3 {
            return Err(refuse(
                AlertDescription::DecodeError,
                format!("TLS record of version {major}.x"),
            ));
        }
        if body > max {
            return Err(refuse(
                AlertDescription::RecordOverflow,
                format!("TLS record of {body} bytes (at most {max})"),
            ));
        }
        if body < self.keys.prefix() + TAG {
            return Err(refuse(
                AlertDescription::BadRecordMac,
                format!("TLS record of {body} bytes is shorter than its tag"),
            ));
        }
        Ok(Some(HEADER + body))
    }

    /// Open the record at `buf[src..]`, writing its plaintext to
    /// `buf[dst..]` (`dst` ≤ `src`: the plaintext of earlier records ends
    /// there). `None`: the record is not all there yet. `Some((event,
    /// consumed))`: `consumed` bytes of ciphertext from `src` were used;
    /// for [`Event::Data`] the plaintext is `buf[dst..dst + n]`.
    pub fn open_next(
        &mut self,
        buf: &mut [u8],
        dst: usize,
        src: usize,
    ) -> Result<Option<(Event, usize)>, RecordError> {
        let Some(rest) = buf.get(src..) else {
            return Ok(None);
        };
        let Some(len) = self.record_len(rest)? else {
            return Ok(None);
        };
        if rest.len() < len || dst > src {
            return Ok(None);
        }
        let mut header = [0u8; HEADER];
        header.copy_from_slice(&rest[..HEADER]);
        let prefix = self.keys.prefix();
        let body = len - HEADER;
        let cipher_len = body - prefix;
        let mut nonce = self.keys.nonce();
        if self.keys.explicit {
            nonce[4..].copy_from_slice(&rest[HEADER..HEADER + EXPLICIT]);
        }
        let seq = self.keys.take_seq()?;
        let tls12 = self.keys.version == Version::Tls12;
        let aad_12 = tls12_aad(seq, header[0], cipher_len - TAG);
        let aad: &[u8] = if tls12 { &aad_12 } else { &header };
        let in_out = &mut buf[dst..src + len];
        let from = src - dst + HEADER + prefix;
        let plain = self
            .keys
            .key
            .open_within(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                in_out,
                from..,
            )
            .map_err(|_| {
                refuse(
                    AlertDescription::BadRecordMac,
                    "TLS record failed authentication (bad_record_mac)",
                )
            })?;
        let (typ, n) = if tls12 {
            (header[0], plain.len())
        } else {
            // The real type is the last non-zero byte; zeros after it pad.
            match plain.iter().rposition(|&b| b != 0) {
                Some(i) => (plain[i], i),
                None => {
                    return Err(refuse(
                        AlertDescription::UnexpectedMessage,
                        "TLS 1.3 record without a content type",
                    ))
                }
            }
        };
        if n > MAX_PLAIN {
            return Err(refuse(
                AlertDescription::RecordOverflow,
                format!("TLS record with {n} bytes of plaintext"),
            ));
        }
        let event = self.inner(typ, n, buf, dst)?;
        Ok(Some((event, len)))
    }

    /// What the decrypted record of type `typ` (`n` bytes at `buf[dst..]`)
    /// means.
    fn inner(&mut self, typ: u8, n: usize, buf: &[u8], dst: usize) -> Result<Event, RecordError> {
        let plain = &buf[dst..dst + n];
        if self.hs_len > 0 && typ != HANDSHAKE {
            return Err(refuse(
                AlertDescription::UnexpectedMessage,
                "TLS record interleaved with a split handshake message",
            ));
        }
        match typ {
            APPLICATION_DATA => Ok(Event::Data(n)),
            ALERT => self.alert(plain),
            HANDSHAKE => self.handshake(plain),
            other => Err(refuse(
                AlertDescription::UnexpectedMessage,
                format!("TLS record of content type {other} after the handshake"),
            )),
        }
    }

    /// An alert (rustls' `CommonState::process_alert`): close_notify ends
    /// the stream; in TLS 1.2 other warnings are ignored, in TLS 1.3 only
    /// user_canceled is; anything else is the peer's fatal alert.
    fn alert(&self, plain: &[u8]) -> Result<Event, RecordError> {
        let [level, desc] = *plain else {
            return Err(refuse(
                AlertDescription::DecodeError,
                format!("TLS alert record of {} bytes", plain.len()),
            ));
        };
        let desc = AlertDescription::from(desc);
        if desc == AlertDescription::CloseNotify {
            return Ok(Event::Close);
        }
        let warning = level == 1;
        let ignored = match self.keys.version {
            Version::Tls12 => warning,
            Version::Tls13 => warning && desc == AlertDescription::UserCanceled,
        };
        if ignored {
            return Ok(Event::Nothing);
        }
        Err(RecordError {
            alert: None,
            reason: format!("peer sent alert {desc:?}"),
        })
    }

    /// A post-handshake handshake message: only a TLS 1.3 KeyUpdate is one
    /// a client may send a server (NewSessionTicket goes the other way;
    /// rustls refuses TLS 1.2 renegotiation with unexpected_message).
    fn handshake(&mut self, plain: &[u8]) -> Result<Event, RecordError> {
        if self.keys.version == Version::Tls12 {
            return Err(refuse(
                AlertDescription::UnexpectedMessage,
                "TLS 1.2 renegotiation is not supported",
            ));
        }
        if plain.is_empty() {
            return Err(refuse(
                AlertDescription::UnexpectedMessage,
                "empty TLS handshake record",
            ));
        }
        let room = self.hs.len() - self.hs_len;
        if plain.len() > room {
            return Err(refuse(
                AlertDescription::UnexpectedMessage,
                "TLS handshake message after the handshake other than KeyUpdate",
            ));
        }
        self.hs[self.hs_len..self.hs_len + plain.len()].copy_from_slice(plain);
        self.hs_len += plain.len();
        if self.hs[0] != KEY_UPDATE {
            let what = rustls::HandshakeType::from(self.hs[0]);
            return Err(refuse(
                AlertDescription::UnexpectedMessage,
                format!("TLS handshake message {what:?} after the handshake"),
            ));
        }
        if self.hs_len < 4 {
            return Ok(Event::Nothing);
        }
        if self.hs[1..4] != [0, 0, 1] {
            return Err(refuse(
                AlertDescription::DecodeError,
                "KeyUpdate of a wrong length",
            ));
        }
        if self.hs_len < 5 {
            return Ok(Event::Nothing);
        }
        self.hs_len = 0;
        match self.hs[4] {
            0 => Ok(Event::KeyUpdate { requested: false }),
            1 => Ok(Event::KeyUpdate { requested: true }),
            _ => Err(refuse(
                AlertDescription::IllegalParameter,
                "KeyUpdate with an unknown request_update",
            )),
        }
    }
}

/// The sending direction.
pub struct Tx {
    keys: Keys,
    /// Records after which the keys must change (the suite's
    /// confidentiality limit, `CipherSuiteCommon::confidentiality_limit`).
    limit: u64,
}

impl Tx {
    pub fn new(keys: Keys, limit: u64) -> Tx {
        Tx { keys, limit }
    }

    /// Install our next keys (after sending a KeyUpdate with the old ones).
    pub fn rekey(&mut self, keys: Keys) {
        self.keys = keys;
    }

    pub fn version(&self) -> Version {
        self.keys.version
    }

    /// The keys have sealed as many records as the suite allows: a TLS 1.3
    /// sender updates them (rustls does at the same point), a TLS 1.2 one
    /// cannot and must close.
    pub fn at_limit(&self) -> bool {
        self.keys.seq >= self.limit
    }

    /// Start a record at the end of `out`; append its plaintext (at most
    /// [`MAX_PLAIN`] bytes), then [`Tx::seal`] it with the returned start.
    pub fn begin(&self, out: &mut Vec<u8>) -> usize {
        let start = out.len();
        out.extend_from_slice(&[0u8; HEADER + EXPLICIT][..HEADER + self.keys.prefix()]);
        start
    }

    /// Plaintext bytes of the record begun at `start`.
    pub fn filled(&self, out: &[u8], start: usize) -> usize {
        out.len()
            .saturating_sub(start + HEADER + self.keys.prefix())
    }

    /// Seal the record begun at `start` (its plaintext runs to the end of
    /// `out`) as content type `typ`.
    pub fn seal(&mut self, out: &mut Vec<u8>, start: usize, typ: u8) -> Result<(), RecordError> {
        let plain_at = start + HEADER + self.keys.prefix();
        let n = out.len().saturating_sub(plain_at);
        if n > MAX_PLAIN || out.len() < plain_at {
            return Err(refuse(
                AlertDescription::InternalError,
                "TLS record over 16 KiB",
            ));
        }
        if self.at_limit() && self.keys.version == Version::Tls12 {
            return Err(refuse(
                AlertDescription::InternalError,
                "TLS 1.2 keys used up (cipher suite confidentiality limit)",
            ));
        }
        let nonce = self.keys.nonce();
        let seq = self.keys.take_seq()?;
        let outer = match self.keys.version {
            Version::Tls13 => {
                out.push(typ);
                APPLICATION_DATA
            }
            Version::Tls12 => typ,
        };
        let body = out.len() - start - HEADER + TAG;
        let len = u16::try_from(body).unwrap_or(u16::MAX).to_be_bytes();
        let header = [outer, 3, 3, len[0], len[1]];
        out[start..start + HEADER].copy_from_slice(&header);
        if self.keys.explicit {
            out[start + HEADER..plain_at].copy_from_slice(&nonce[4..]);
        }
        let aad_12 = tls12_aad(seq, typ, n);
        let aad: &[u8] = match self.keys.version {
            Version::Tls12 => &aad_12,
            Version::Tls13 => &header,
        };
        let tag = self
            .keys
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[plain_at..],
            )
            .map_err(|_| refuse(AlertDescription::InternalError, "TLS record sealing failed"))?;
        out.extend_from_slice(tag.as_ref());
        Ok(())
    }

    /// Seal a whole message of type `typ` (at most [`MAX_PLAIN`] bytes).
    pub fn seal_message(
        &mut self,
        out: &mut Vec<u8>,
        typ: u8,
        msg: &[u8],
    ) -> Result<(), RecordError> {
        let start = self.begin(out);
        out.extend_from_slice(msg);
        self.seal(out, start, typ)
    }

    /// Seal application data, in records of up to [`MAX_PLAIN`] bytes.
    pub fn seal_data(&mut self, out: &mut Vec<u8>, mut data: &[u8]) -> Result<(), RecordError> {
        while !data.is_empty() {
            let n = data.len().min(MAX_PLAIN);
            self.seal_message(out, APPLICATION_DATA, &data[..n])?;
            data = &data[n..];
        }
        Ok(())
    }

    /// An alert: close_notify is a warning, everything else fatal.
    pub fn seal_alert(
        &mut self,
        out: &mut Vec<u8>,
        desc: AlertDescription,
    ) -> Result<(), RecordError> {
        let level = if desc == AlertDescription::CloseNotify {
            1
        } else {
            2
        };
        self.seal_message(out, ALERT, &[level, u8::from(desc)])
    }

    /// A TLS 1.3 KeyUpdate (sealed with the current keys; install the next
    /// ones with [`Tx::rekey`] right after).
    pub fn seal_key_update(
        &mut self,
        out: &mut Vec<u8>,
        requested: bool,
    ) -> Result<(), RecordError> {
        self.seal_message(out, HANDSHAKE, &[KEY_UPDATE, 0, 0, 1, u8::from(requested)])
    }
}

/// The content type of application data, for [`Tx::seal`].
pub const DATA: u8 = APPLICATION_DATA;
