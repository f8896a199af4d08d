//! The hand-off to kernel TLS, short of the `setsockopt` calls these hosts
//! refuse (no `CONFIG_TLS`): a corked handshake, the extraction, then this
//! test plays the kernel's record layer (`net/tls/tls_sw.c`) with the
//! `crypto_info` bytes the kernel would get: it decrypts what the client
//! sends next and encrypts what the client reads next. A wrong key, IV,
//! salt, sequence number or a record lost to rustls' read buffer fails it.

use super::super::tests::{make_keys, server_tls, TestTls};
use super::*;
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use ring::aead;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::Write;
use std::net::SocketAddr;
use std::os::fd::FromRawFd;
use std::sync::Arc;

/// One direction of a kernel TLS socket, from its `crypto_info`.
struct KernelDir {
    tls13: bool,
    key: aead::LessSafeKey,
    /// Salt (GCM) followed by the IV field; ChaCha: the 12-byte IV.
    base: [u8; 12],
    seq: u64,
    /// TLS 1.2 GCM: the explicit nonce carried in each record.
    gcm12: bool,
}

impl KernelDir {
    fn new(info: &[u8]) -> Self {
        let version = u16::from_ne_bytes([info[0], info[1]]);
        let cipher = u16::from_ne_bytes([info[2], info[3]]);
        let (alg, iv_len, key_len, salt_len): (&'static aead::Algorithm, usize, usize, usize) =
            match cipher {
                51 => (&aead::AES_128_GCM, 8, 16, 4),
                52 => (&aead::AES_256_GCM, 8, 32, 4),
                54 => (&aead::CHACHA20_POLY1305, 12, 32, 0),
                other => panic!("cipher {other}"),
            };
        let iv = &info[4..4 + iv_len];
        let key = &info[4 + iv_len..4 + iv_len + key_len];
        let salt = &info[4 + iv_len + key_len..4 + iv_len + key_len + salt_len];
        let seq_at = 4 + iv_len + key_len + salt_len;
        let seq = u64::from_be_bytes(info[seq_at..seq_at + 8].try_into().unwrap());
        assert_eq!(info.len(), seq_at + 8, "struct size");
        let mut base = [0; 12];
        base[..salt_len].copy_from_slice(salt);
        base[salt_len..].copy_from_slice(iv);
        KernelDir {
            tls13: version == 0x0304,
            key: aead::LessSafeKey::new(aead::UnboundKey::new(alg, key).unwrap()),
            base,
            seq,
            gcm12: version == 0x0303 && cipher != 54,
        }
    }

    /// TLS 1.3 and ChaCha20: base XOR seq (`tls_xor_iv_with_seq`).
    fn xor_nonce(&self) -> [u8; 12] {
        let mut n = self.base;
        for (b, s) in n[4..].iter_mut().zip(self.seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    /// TLS 1.2 additional data: seq, type, version, plaintext length.
    fn aad12(&self, len: usize) -> Vec<u8> {
        let mut aad = self.seq.to_be_bytes().to_vec();
        aad.extend_from_slice(&[23, 3, 3]);
        aad.extend_from_slice(&(len as u16).to_be_bytes());
        aad
    }

    /// Encrypt one application-data record as the kernel sends it.
    fn seal(&mut self, data: &[u8]) -> Vec<u8> {
        let mut record;
        if self.tls13 {
            let mut inner = data.to_vec();
            inner.push(23);
            let len = inner.len() + 16;
            record = vec![23, 3, 3];
            record.extend_from_slice(&(len as u16).to_be_bytes());
            let aad = aead::Aad::from(record.clone());
            let nonce = aead::Nonce::assume_unique_for_key(self.xor_nonce());
            self.key
                .seal_in_place_append_tag(nonce, aad, &mut inner)
                .unwrap();
            record.extend_from_slice(&inner);
        } else {
            let aad = aead::Aad::from(self.aad12(data.len()));
            let mut body = data.to_vec();
            let (nonce, explicit) = if self.gcm12 {
                // The kernel sends its IV field and increments it.
                let explicit: [u8; 8] = self.base[4..].try_into().unwrap();
                let next = u64::from_be_bytes(explicit) + 1;
                let nonce = self.base;
                self.base[4..].copy_from_slice(&next.to_be_bytes());
                (nonce, explicit.to_vec())
            } else {
                (self.xor_nonce(), Vec::new())
            };
            self.key
                .seal_in_place_append_tag(aead::Nonce::assume_unique_for_key(nonce), aad, &mut body)
                .unwrap();
            let len = explicit.len() + body.len();
            record = vec![23, 3, 3];
            record.extend_from_slice(&(len as u16).to_be_bytes());
            record.extend_from_slice(&explicit);
            record.extend_from_slice(&body);
        }
        self.seq += 1;
        record
    }

    /// Decrypt one record as the kernel receives it: (type, plaintext).
    fn open(&mut self, header: [u8; 5], body: &mut [u8]) -> (u8, Vec<u8>) {
        let out = if self.tls13 {
            let nonce = aead::Nonce::assume_unique_for_key(self.xor_nonce());
            let plain = self
                .key
                .open_in_place(nonce, aead::Aad::from(header), body)
                .expect("decrypt with the extracted rx keys");
            let end = plain.iter().rposition(|b| *b != 0).expect("content type");
            (plain[end], plain[..end].to_vec())
        } else if self.gcm12 {
            let mut nonce = self.base;
            nonce[4..].copy_from_slice(&body[..8]);
            let mut ct = body[8..].to_vec();
            let aad = aead::Aad::from(self.aad12(ct.len() - 16));
            let plain = self
                .key
                .open_in_place(aead::Nonce::assume_unique_for_key(nonce), aad, &mut ct)
                .expect("decrypt with the extracted rx keys");
            (header[0], plain.to_vec())
        } else {
            let aad = aead::Aad::from(self.aad12(body.len() - 16));
            let nonce = aead::Nonce::assume_unique_for_key(self.xor_nonce());
            let plain = self
                .key
                .open_in_place(nonce, aad, body)
                .expect("decrypt with the extracted rx keys");
            (header[0], plain.to_vec())
        };
        self.seq += 1;
        out
    }
}

/// Read one TLS record off a blocking socket.
fn read_record(sock: &mut std::net::TcpStream) -> ([u8; 5], Vec<u8>) {
    use std::io::Read;
    let mut header = [0; 5];
    sock.read_exact(&mut header).expect("record header");
    let mut body = vec![0; usize::from(u16::from_be_bytes([header[3], header[4]]))];
    sock.read_exact(&mut body).expect("record body");
    (header, body)
}

/// Server side: corked handshake, extraction; returns what the kernel
/// would get and a blocking duplicate of the socket.
fn extract_on_glommio(
    dir: &std::path::Path,
    listener: std::net::TcpListener,
) -> std::thread::JoinHandle<(Vec<u8>, Vec<u8>, BytesMut, std::net::TcpStream)> {
    let dir = dir.to_path_buf();
    let fd = std::os::fd::IntoRawFd::into_raw_fd(listener);
    std::thread::spawn(move || {
        LocalExecutorBuilder::default()
            .io_memory(512 * 1024)
            .spawn(move || async move {
                let mut config = (*server_tls(&dir).0).clone();
                config.enable_secret_extraction = true;
                let tls = TestTls(Arc::new(config));
                // SAFETY: `fd` is the listening socket, owned by nothing
                // else since `into_raw_fd`.
                let listener = unsafe { TcpListener::from_raw_fd(fd) };
                let stream = listener.accept().await.expect("accept");
                let done = super::super::handshake(stream, &tls, -1, true)
                    .await
                    .expect("handshake");
                let ex = extract(done).await.expect("extract");
                // SAFETY: dup of the live socket's fd; the std stream owns
                // the duplicate.
                let dup = unsafe { libc::dup(ex.stream.as_raw_fd()) };
                assert!(dup >= 0);
                let sock = unsafe { std::net::TcpStream::from_raw_fd(dup) };
                sock.set_nonblocking(false).expect("blocking");
                (ex.tx, ex.rx, ex.preread, sock)
            })
            .expect("executor")
            .join()
            .expect("join")
    })
}

fn round_trip(versions: &[&'static rustls::SupportedProtocolVersion], suite: rustls::CipherSuite) {
    let dir = tempfile::tempdir().expect("tempdir");
    make_keys(dir.path());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr: SocketAddr = listener.local_addr().expect("addr");
    let server = extract_on_glommio(dir.path(), listener);

    let provider = {
        #[allow(deprecated, reason = "ring is the provider this build has")]
        let mut p = rustls::crypto::ring::default_provider();
        p.cipher_suites.retain(|s| s.suite() == suite);
        Arc::new(p)
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .expect("versions")
        .with_root_certificates(base_roots(dir.path()))
        .with_client_auth_cert(
            CertificateDer::pem_file_iter(dir.path().join("client.pem"))
                .expect("pem")
                .collect::<Result<Vec<_>, _>>()
                .expect("certs"),
            PrivateKeyDer::from_pem_file(dir.path().join("client.key")).expect("key"),
        )
        .expect("client config");
    let name = ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(Arc::new(config), name).expect("client");
    let sock = std::net::TcpStream::connect(addr).expect("connect");
    let mut client = rustls::StreamOwned::new(conn, sock);
    // Two requests right behind the handshake: the first may travel with
    // the client's Finished and be decrypted by rustls before the hand-off.
    let first = b"request one, pipelined behind Finished".to_vec();
    let second = vec![7u8; 40_000];
    client.write_all(&first).expect("write");
    client.write_all(&second).expect("write");
    client.flush().expect("flush");

    let (tx, rx, preread, mut sock) = server.join().expect("server");

    // The kernel's receive side: preread first, then records off the socket.
    let mut got = preread.to_vec();
    let mut kernel_rx = KernelDir::new(&rx);
    let want: Vec<u8> = first.iter().chain(second.iter()).copied().collect();
    while got.len() < want.len() {
        let (header, mut body) = read_record(&mut sock);
        let (kind, plain) = kernel_rx.open(header, &mut body);
        assert_eq!(kind, 23, "application data");
        got.extend_from_slice(&plain);
    }
    assert_eq!(got, want, "the client's bytes, in order, none lost");

    // The kernel's send side: two records the client must read as data.
    let mut kernel_tx = KernelDir::new(&tx);
    for answer in [&b"answer one"[..], &[9u8; 3000][..]] {
        let record = kernel_tx.seal(answer);
        sock.write_all(&record).expect("send record");
        let mut back = vec![0; answer.len()];
        std::io::Read::read_exact(&mut client, &mut back).expect("client reads");
        assert_eq!(back, answer);
    }
}

fn base_roots(dir: &std::path::Path) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(dir.join("ca.pem")).expect("pem") {
        roots.add(c.expect("cert")).expect("root");
    }
    Arc::new(roots)
}

#[test]
fn tls13_aes_gcm_keys_decrypt_and_encrypt_the_next_records() {
    round_trip(
        &[&rustls::version::TLS13],
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256,
    );
    round_trip(
        &[&rustls::version::TLS13],
        rustls::CipherSuite::TLS13_AES_256_GCM_SHA384,
    );
}

#[test]
fn tls13_chacha_keys_decrypt_and_encrypt_the_next_records() {
    round_trip(
        &[&rustls::version::TLS13],
        rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    );
}

#[test]
fn tls12_keys_decrypt_and_encrypt_the_next_records() {
    round_trip(
        &[&rustls::version::TLS12],
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    );
    round_trip(
        &[&rustls::version::TLS12],
        rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    );
}

#[test]
fn without_kernel_tls_nothing_is_offered() {
    // These hosts: the probe says why, and no cipher is taken.
    let k = crate::io::ktls::probe();
    if let KernelTls::Unavailable(why) = k {
        assert!(!why.is_empty());
        assert!(!k.takes(Cipher::Aes128Gcm));
    }
}
