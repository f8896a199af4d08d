//! The TLS receive path, CPU per byte: rustls' buffered API as the broker
//! used it (`read_tls`, `process_new_packets`, each record's plaintext
//! copied out of rustls' per-record buffer into the connection's buffer)
//! against shardlog's record layer (`tls::session::Inbound`: the
//! ciphertext lands in the connection's buffer and is decrypted there in
//! place), on the same ciphertext sizes: 2.8 KB records (librdkafka's
//! average `SSL_write` when producing 1 KiB messages) and full 16 KiB
//! records. TLS 1.3 with TLS_AES_256_GCM_SHA384 (OpenSSL's first choice,
//! so librdkafka's). Each iteration opens 1 MiB of plaintext; the rustls
//! client's sealing runs in criterion's untimed setup. CPU s per GB is
//! 1 / the GB/s criterion reports (one thread).
//!
//! cargo bench --bench tls_records -- --warm-up-time 1 --measurement-time 3
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code: a failed unwrap is a failed check

use std::io::Write;
use std::process::Command;
use std::sync::Arc;

use bytes::BytesMut;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ServerConnection};
use shardlog::tls::session::{Handshake, Inbound, Session};

const PER_ITER: usize = 1024 * 1024;

#[allow(deprecated, reason = "the provider shardlog's tls::build uses (ring)")]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

/// An EC P-256 CA and server certificate made by `openssl`.
fn configs() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
    let dir = tempfile::tempdir().unwrap();
    let script = "set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 \
  -keyout ca.key -out ca.pem -subj /CN=bench-ca 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout s.key -out s.csr \
  -subj /CN=localhost 2>/dev/null
printf 'subjectAltName=DNS:localhost\\n' > s.ext
openssl x509 -req -in s.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 \
  -extfile s.ext -out s.pem 2>/dev/null";
    let ok = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok, "openssl");
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.path().join("s.pem"))
            .unwrap()
            .map(Result::unwrap)
            .collect();
    let key = PrivateKeyDer::from_pem_file(dir.path().join("s.key")).unwrap();
    let mut server = rustls::ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    server.enable_secret_extraction = true;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(dir.path().join("ca.pem")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let mut p = provider();
    p.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_AES_256_GCM_SHA384];
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(p))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    (Arc::new(server), Arc::new(client))
}

fn client(config: &Arc<rustls::ClientConfig>) -> ClientConnection {
    let mut c =
        ClientConnection::new(config.clone(), ServerName::try_from("localhost").unwrap()).unwrap();
    c.set_buffer_limit(None);
    c
}

fn flush(c: &mut ClientConnection) -> Vec<u8> {
    let mut wire = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut wire).unwrap();
    }
    wire
}

fn rustls_pair(
    s: &Arc<rustls::ServerConfig>,
    cc: &Arc<rustls::ClientConfig>,
) -> (ClientConnection, ServerConnection) {
    let mut c = client(cc);
    let mut server = ServerConnection::new(s.clone()).unwrap();
    while c.is_handshaking() || server.is_handshaking() {
        let wire = flush(&mut c);
        server.read_tls(&mut &wire[..]).unwrap();
        server.process_new_packets().unwrap();
        let mut back = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut back).unwrap();
        }
        c.read_tls(&mut &back[..]).unwrap();
        c.process_new_packets().unwrap();
    }
    (c, server)
}

fn own_pair(
    s: &Arc<rustls::ServerConfig>,
    cc: &Arc<rustls::ClientConfig>,
) -> (ClientConnection, Session) {
    let mut c = client(cc);
    let mut hs = Handshake::new(s.clone()).unwrap();
    let mut input = Vec::new();
    loop {
        input.extend(flush(&mut c));
        let mut back = Vec::new();
        let done = hs.step(&mut input, &mut back).unwrap();
        c.read_tls(&mut &back[..]).unwrap();
        c.process_new_packets().unwrap();
        if done && !c.is_handshaking() {
            return (c, hs.finish().unwrap());
        }
    }
}

/// 1 MiB of plaintext as records of `size` bytes, sealed by the client.
fn records(c: &mut ClientConnection, size: usize) -> Vec<u8> {
    let chunk = vec![0x5a; size];
    let mut left = PER_ITER;
    while left > 0 {
        let n = left.min(size);
        c.writer().write_all(&chunk[..n]).unwrap();
        left -= n;
    }
    flush(c)
}

fn receive(crit: &mut Criterion) {
    let (sc, cc) = configs();
    let mut g = crit.benchmark_group("tls_receive");
    g.throughput(Throughput::Bytes(PER_ITER as u64));
    for size in [2800usize, 16 * 1024] {
        let (mut c, mut server) = rustls_pair(&sc, &cc);
        let mut buf = BytesMut::with_capacity(2 * PER_ITER);
        g.bench_function(format!("rustls_buffered/{size}"), |b| {
            b.iter_batched(
                || records(&mut c, size),
                |wire| {
                    let mut rd = &wire[..];
                    while !rd.is_empty() {
                        server.read_tls(&mut rd).unwrap();
                        server.process_new_packets().unwrap();
                        let mut reader = server.reader();
                        loop {
                            use std::io::BufRead;
                            let n = match reader.fill_buf() {
                                Ok([]) | Err(_) => break,
                                Ok(chunk) => {
                                    buf.extend_from_slice(chunk);
                                    chunk.len()
                                }
                            };
                            reader.consume(n);
                        }
                    }
                    assert_eq!(buf.len(), PER_ITER);
                    buf.clear();
                },
                BatchSize::SmallInput,
            );
        });

        let (mut c, session) = own_pair(&sc, &cc);
        let Session {
            rx, mut schedule, ..
        } = session;
        let mut inbound = Inbound::new(rx);
        let mut buf = BytesMut::with_capacity(2 * PER_ITER);
        g.bench_function(format!("shardlog_in_place/{size}"), |b| {
            b.iter_batched(
                || records(&mut c, size),
                |wire| {
                    // 64 KiB reads, as the connection's first `recv`s take.
                    for piece in wire.chunks(64 * 1024) {
                        let base = inbound.prepare(&mut buf, piece.len());
                        buf.extend_from_slice(piece);
                        inbound
                            .open(&mut buf, base, &mut || schedule.next_rx())
                            .unwrap();
                    }
                    assert_eq!(buf.len(), PER_ITER);
                    buf.clear();
                },
                BatchSize::SmallInput,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, receive);
criterion_main!(benches);
