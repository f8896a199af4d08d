//! `[io]` Kernel TLS (Linux `CONFIG_TLS`, `Documentation/networking/tls.rst`):
//! after the handshake in user space, the session's traffic keys go to the
//! kernel (`TCP_ULP` "tls", then `TLS_TX` and `TLS_RX`), which from then on
//! encrypts what the socket sends and decrypts what it receives, so a
//! fetch over TLS keeps `sendfile` and the connection runs the PLAINTEXT
//! loops unchanged.
//!
//! [`probe`] runs once at start: it reads
//! `/proc/sys/net/ipv4/tcp_available_ulp` and, where `tls` is listed,
//! installs each cipher's keys on a loopback connection to learn which of
//! them this kernel takes in both directions. A connection is handed off
//! only when its negotiated cipher is one of them (`server::tls_conn`);
//! otherwise, and on every host without `CONFIG_TLS` (the hosts these tests
//! run on), records are encrypted in user space. The struct layouts are
//! `include/uapi/linux/tls.h`'s; libc does not define them.

use std::io;
use std::os::fd::RawFd;
use std::sync::OnceLock;

use rustls::ConnectionTrafficSecrets;

/// Where the kernel lists its upper-layer protocols.
pub const AVAILABLE_ULP: &str = "/proc/sys/net/ipv4/tcp_available_ulp";

/// `include/uapi/linux/tls.h`.
const TLS_TX: libc::c_int = 1;
const TLS_RX: libc::c_int = 2;
const TLS_1_2_VERSION: u16 = 0x0303;
const TLS_1_3_VERSION: u16 = 0x0304;
const TLS_CIPHER_AES_GCM_128: u16 = 51;
const TLS_CIPHER_AES_GCM_256: u16 = 52;
const TLS_CIPHER_CHACHA20_POLY1305: u16 = 54;

/// `[pure]` Whether the contents of `tcp_available_ulp` list `tls`.
pub fn lists_tls(available_ulp: &str) -> bool {
    available_ulp.split_whitespace().any(|ulp| ulp == "tls")
}

/// The AEAD ciphers kernel TLS can take (rustls' extractable secrets).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    Aes128Gcm,
    Aes256Gcm,
    Chacha20Poly1305,
}

impl Cipher {
    const ALL: [Cipher; 3] = [
        Cipher::Aes128Gcm,
        Cipher::Aes256Gcm,
        Cipher::Chacha20Poly1305,
    ];

    fn kernel_id(self) -> u16 {
        match self {
            Cipher::Aes128Gcm => TLS_CIPHER_AES_GCM_128,
            Cipher::Aes256Gcm => TLS_CIPHER_AES_GCM_256,
            Cipher::Chacha20Poly1305 => TLS_CIPHER_CHACHA20_POLY1305,
        }
    }

    fn key_len(self) -> usize {
        match self {
            Cipher::Aes128Gcm => 16,
            Cipher::Aes256Gcm | Cipher::Chacha20Poly1305 => 32,
        }
    }

    /// The cipher of a negotiated suite, if kernel TLS has it.
    pub fn of_suite(suite: rustls::SupportedCipherSuite) -> Option<Cipher> {
        use rustls::CipherSuite as S;
        match suite.suite() {
            S::TLS13_AES_128_GCM_SHA256
            | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => Some(Cipher::Aes128Gcm),
            S::TLS13_AES_256_GCM_SHA384
            | S::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
            | S::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => Some(Cipher::Aes256Gcm),
            S::TLS13_CHACHA20_POLY1305_SHA256
            | S::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            | S::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => Some(Cipher::Chacha20Poly1305),
            _ => None,
        }
    }
}

/// `[pure]` The bytes of the kernel's `tls12_crypto_info_*` struct for one
/// direction: `{u16 version, u16 cipher_type}` then, for AES-GCM,
/// `iv[8] key[16|32] salt[4] rec_seq[8]` (the 12-byte IV rustls gives is
/// the 4-byte salt followed by the 8-byte nonce part), for ChaCha20-Poly1305
/// `iv[12] key[32] rec_seq[8]`. `rec_seq` is the next record's sequence
/// number, big-endian. `None`: a TLS version the kernel does not take.
pub fn crypto_info(
    version: rustls::ProtocolVersion,
    cipher: Cipher,
    key: &[u8],
    iv: &[u8; 12],
    seq: u64,
) -> Option<Vec<u8>> {
    let version = match version {
        rustls::ProtocolVersion::TLSv1_2 => TLS_1_2_VERSION,
        rustls::ProtocolVersion::TLSv1_3 => TLS_1_3_VERSION,
        _ => return None,
    };
    if key.len() != cipher.key_len() {
        return None;
    }
    let mut out = Vec::with_capacity(56);
    out.extend_from_slice(&version.to_ne_bytes());
    out.extend_from_slice(&cipher.kernel_id().to_ne_bytes());
    match cipher {
        Cipher::Aes128Gcm | Cipher::Aes256Gcm => {
            out.extend_from_slice(&iv[4..]);
            out.extend_from_slice(key);
            out.extend_from_slice(&iv[..4]);
        }
        Cipher::Chacha20Poly1305 => {
            out.extend_from_slice(iv);
            out.extend_from_slice(key);
        }
    }
    out.extend_from_slice(&seq.to_be_bytes());
    Some(out)
}

/// Which way a direction's keys work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Tx,
    Rx,
}

/// `[pure]` The explicit nonce the kernel starts from when it takes over
/// sending a TLS 1.2 AES-GCM session. The kernel sends `iv`, `iv + 1`, ...
/// (`tls_advance_record_sn` increments it per record) while rustls used
/// `explicit XOR seq` for the records before the hand-off. Those differ
/// from `explicit` only in the bits below the highest bit of `seq`, so
/// starting at the next block of that size never repeats a nonce under
/// the same key (RFC 5288 §3: the explicit nonce must never repeat).
pub fn tls12_gcm_tx_nonce(explicit: u64, seq: u64) -> u64 {
    let bits = 64 - seq.leading_zeros();
    if bits >= 64 {
        return explicit.wrapping_add(1);
    }
    ((explicit >> bits).wrapping_add(1)) << bits
}

/// `[pure]` One direction's `crypto_info` from rustls' extracted secrets
/// (`seq`: the next record's sequence number in that direction).
pub fn direction_info(
    version: rustls::ProtocolVersion,
    direction: Direction,
    seq: u64,
    secrets: &ConnectionTrafficSecrets,
) -> Option<Vec<u8>> {
    let (cipher, key, iv) = match secrets {
        ConnectionTrafficSecrets::Aes128Gcm { key, iv } => (Cipher::Aes128Gcm, key, iv),
        ConnectionTrafficSecrets::Aes256Gcm { key, iv } => (Cipher::Aes256Gcm, key, iv),
        ConnectionTrafficSecrets::Chacha20Poly1305 { key, iv } => {
            (Cipher::Chacha20Poly1305, key, iv)
        }
        _ => return None,
    };
    let mut iv: [u8; 12] = iv.as_ref().try_into().ok()?;
    let gcm = matches!(cipher, Cipher::Aes128Gcm | Cipher::Aes256Gcm);
    if gcm && direction == Direction::Tx && version == rustls::ProtocolVersion::TLSv1_2 {
        let mut explicit = [0; 8];
        explicit.copy_from_slice(&iv[4..]);
        let next = tls12_gcm_tx_nonce(u64::from_be_bytes(explicit), seq);
        iv[4..].copy_from_slice(&next.to_be_bytes());
    }
    crypto_info(version, cipher, key.as_ref(), &iv, seq)
}

/// Attach the `tls` upper-layer protocol to a connected TCP socket. On a
/// kernel without it this fails (ENOENT) and the socket is unchanged.
pub fn attach_ulp(fd: RawFd) -> io::Result<()> {
    let name = b"tls";
    // SAFETY: `name` is valid for `name.len()` bytes for the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TCP,
            libc::TCP_ULP,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn set_direction(fd: RawFd, direction: libc::c_int, info: &[u8]) -> io::Result<()> {
    // SAFETY: `info` is valid for `info.len()` bytes for the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_TLS,
            direction,
            info.as_ptr().cast(),
            info.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Install the keys of both directions on a socket with the ULP attached.
pub fn install(fd: RawFd, tx: &[u8], rx: &[u8]) -> io::Result<()> {
    set_direction(fd, TLS_TX, tx)?;
    set_direction(fd, TLS_RX, rx)
}

/// What [`probe`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelTls {
    /// Why records are encrypted in user space on this host.
    Unavailable(String),
    /// The ciphers this kernel takes in both directions (TLS 1.2 and 1.3
    /// keys are installed alike).
    Available(Vec<Cipher>),
}

impl KernelTls {
    /// Whether a connection with `cipher` can be handed to the kernel.
    pub fn takes(&self, cipher: Cipher) -> bool {
        matches!(self, KernelTls::Available(c) if c.contains(&cipher))
    }

    /// The record path TLS connections take, as the start log names it.
    pub fn describe(&self) -> String {
        match self {
            KernelTls::Unavailable(why) => {
                format!("{why}: records are encrypted in user space")
            }
            KernelTls::Available(ciphers) => format!(
                "kernel TLS for {ciphers:?} (records encrypted by the kernel, fetches keep \
                 sendfile); other ciphers in user space"
            ),
        }
    }
}

/// Probe this host once (cached for the process).
pub fn probe() -> &'static KernelTls {
    // A global because the kernel's answer is a fact of the host, the same
    // for every shard and listener, and probing opens sockets: once per
    // process, read-only after.
    static PROBED: OnceLock<KernelTls> = OnceLock::new();
    PROBED.get_or_init(|| match std::fs::read_to_string(AVAILABLE_ULP) {
        Err(_) => KernelTls::Unavailable(format!("kernel TLS unavailable (no {AVAILABLE_ULP})")),
        Ok(ulps) if !lists_tls(&ulps) => KernelTls::Unavailable(
            "kernel TLS unavailable (tcp_available_ulp has no tls; CONFIG_TLS unset or the \
             tls module not loaded)"
                .into(),
        ),
        Ok(_) => {
            let ciphers: Vec<Cipher> = Cipher::ALL
                .into_iter()
                .filter(|c| loopback_takes(*c).is_ok())
                .collect();
            if ciphers.is_empty() {
                KernelTls::Unavailable(
                    "kernel TLS listed but refused every cipher on a loopback socket".into(),
                )
            } else {
                KernelTls::Available(ciphers)
            }
        }
    })
}

/// Install zero keys of `cipher` on one end of a loopback connection.
fn loopback_takes(cipher: Cipher) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let client = std::net::TcpStream::connect(listener.local_addr()?)?;
    let (_server, _) = listener.accept()?;
    let fd = client.as_raw_fd();
    attach_ulp(fd)?;
    let info = crypto_info(
        rustls::ProtocolVersion::TLSv1_3,
        cipher,
        &vec![0; cipher.key_len()],
        &[0; 12],
        0,
    )
    .ok_or_else(|| io::Error::other("no crypto_info"))?;
    install(fd, &info, &info)
}

/// `[pure]` Where a reader stands in a stream of TLS records, so that a
/// handshake headed for kernel TLS never reads past the record it is in:
/// rustls then holds no part of a record the kernel must decrypt (a record
/// is a 5-byte header whose last two bytes are the body's length).
#[derive(Debug, Default)]
pub struct RecordCursor {
    header: [u8; 5],
    /// Header bytes read so far (5: in the body).
    header_len: usize,
    /// Body bytes still to read.
    body_left: usize,
}

impl RecordCursor {
    /// How many bytes the next read may take.
    pub fn limit(&self) -> usize {
        if self.header_len < 5 {
            5 - self.header_len
        } else {
            self.body_left
        }
    }

    /// Account for `bytes` just read (at most [`Self::limit`] of them).
    pub fn consumed(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            if self.header_len < 5 {
                let n = rest.len().min(5 - self.header_len);
                self.header[self.header_len..self.header_len + n].copy_from_slice(&rest[..n]);
                self.header_len += n;
                rest = &rest[n..];
                if self.header_len == 5 {
                    self.body_left =
                        usize::from(u16::from_be_bytes([self.header[3], self.header[4]]));
                    if self.body_left == 0 {
                        self.header_len = 0;
                    }
                }
            } else {
                let n = rest.len().min(self.body_left);
                self.body_left -= n;
                rest = &rest[n..];
                if self.body_left == 0 {
                    self.header_len = 0;
                }
            }
        }
    }

    /// At a record boundary (nothing of a record read).
    pub fn at_boundary(&self) -> bool {
        self.header_len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_is_one_of_the_listed_ulps() {
        assert!(lists_tls("espintcp mptcp tls\n"));
        assert!(lists_tls("tls"));
        assert!(!lists_tls("espintcp mptcp\n"));
        assert!(!lists_tls("ktls tls_x\n"));
        assert!(!lists_tls(""));
    }

    #[test]
    fn aes_gcm_layout_is_the_kernels() {
        let key: Vec<u8> = (0..16).collect();
        let iv: [u8; 12] = core::array::from_fn(|i| 0xa0 + i as u8);
        let info = crypto_info(
            rustls::ProtocolVersion::TLSv1_3,
            Cipher::Aes128Gcm,
            &key,
            &iv,
            0x0102_0304_0506_0708,
        )
        .unwrap();
        // sizeof(struct tls12_crypto_info_aes_gcm_128) == 40
        assert_eq!(info.len(), 40);
        assert_eq!(&info[0..2], &0x0304u16.to_ne_bytes());
        assert_eq!(&info[2..4], &51u16.to_ne_bytes());
        assert_eq!(&info[4..12], &iv[4..], "iv: the nonce part");
        assert_eq!(&info[12..28], &key[..]);
        assert_eq!(&info[28..32], &iv[..4], "salt: the implicit part");
        assert_eq!(
            &info[32..40],
            &[1, 2, 3, 4, 5, 6, 7, 8],
            "rec_seq big-endian"
        );

        let info = crypto_info(
            rustls::ProtocolVersion::TLSv1_2,
            Cipher::Aes256Gcm,
            &[7; 32],
            &iv,
            1,
        )
        .unwrap();
        // sizeof(struct tls12_crypto_info_aes_gcm_256) == 56
        assert_eq!(info.len(), 56);
        assert_eq!(&info[0..2], &0x0303u16.to_ne_bytes());
        assert_eq!(&info[2..4], &52u16.to_ne_bytes());
        assert_eq!(&info[48..56], &1u64.to_be_bytes());
    }

    #[test]
    fn chacha_layout_is_the_kernels() {
        let iv: [u8; 12] = core::array::from_fn(|i| i as u8);
        let info = crypto_info(
            rustls::ProtocolVersion::TLSv1_3,
            Cipher::Chacha20Poly1305,
            &[9; 32],
            &iv,
            2,
        )
        .unwrap();
        // sizeof(struct tls12_crypto_info_chacha20_poly1305) == 56
        assert_eq!(info.len(), 56);
        assert_eq!(&info[2..4], &54u16.to_ne_bytes());
        assert_eq!(&info[4..16], &iv[..], "the whole 12-byte iv, no salt");
        assert_eq!(&info[16..48], &[9; 32]);
        assert_eq!(&info[48..56], &2u64.to_be_bytes());
    }

    #[test]
    fn wrong_key_length_or_version_has_no_info() {
        let iv = [0; 12];
        let v13 = rustls::ProtocolVersion::TLSv1_3;
        assert!(crypto_info(v13, Cipher::Aes128Gcm, &[0; 32], &iv, 0).is_none());
        assert!(crypto_info(v13, Cipher::Chacha20Poly1305, &[0; 16], &iv, 0).is_none());
        let v10 = rustls::ProtocolVersion::TLSv1_0;
        assert!(crypto_info(v10, Cipher::Aes128Gcm, &[0; 16], &iv, 0).is_none());
    }

    #[test]
    fn the_kernels_tls12_nonces_never_repeat_rustls_ones() {
        for explicit in [0u64, 1, 0x7f, 0xdead_beef_0000_00ff, u64::MAX - 3] {
            for seq in [0u64, 1, 2, 3, 5, 64, 1000] {
                let used: Vec<u64> = (0..seq).map(|j| explicit ^ j).collect();
                let start = tls12_gcm_tx_nonce(explicit, seq);
                for k in 0..2048u64 {
                    let n = start.wrapping_add(k);
                    assert!(
                        !used.contains(&n),
                        "explicit {explicit:#x} seq {seq}: kernel nonce {n:#x} reused"
                    );
                }
            }
        }
    }

    #[test]
    fn the_cursor_never_reads_past_a_record() {
        let mut c = RecordCursor::default();
        assert_eq!(c.limit(), 5);
        assert!(c.at_boundary());
        // A header in two pieces: type 22, version 3.3, length 300.
        c.consumed(&[22, 3]);
        assert_eq!(c.limit(), 3);
        assert!(!c.at_boundary());
        c.consumed(&[3, 0x01, 0x2c]);
        assert_eq!(c.limit(), 300);
        c.consumed(&[0; 100]);
        assert_eq!(c.limit(), 200);
        c.consumed(&[0; 200]);
        assert!(c.at_boundary());
        assert_eq!(c.limit(), 5);
        // An empty record (length 0) ends at its header.
        c.consumed(&[23, 3, 3, 0, 0]);
        assert!(c.at_boundary());
        // Header and body in one read are accounted for too.
        c.consumed(&[23, 3, 3, 0, 2, 0xaa, 0xbb]);
        assert!(c.at_boundary());
    }

    #[test]
    fn kernel_tls_takes_only_what_the_probe_found() {
        let k = KernelTls::Available(vec![Cipher::Aes128Gcm]);
        assert!(k.takes(Cipher::Aes128Gcm));
        assert!(!k.takes(Cipher::Chacha20Poly1305));
        let u = KernelTls::Unavailable("no".into());
        assert!(!u.takes(Cipher::Aes128Gcm));
        assert!(u.describe().contains("user space"));
    }
}
