//! The TLS transport against a rustls server over loopback, with keys made
//! by the `openssl` CLI at test time (`bench::certs`).

use std::io::{IoSlice, Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection, StreamOwned};

use super::{Security, SslFiles, Stream};
use crate::loadgen::bench::certs::BenchTls;

const TIMEOUT: Duration = Duration::from_secs(20);

fn ssl(ca: &std::path::Path) -> Security {
    Security::new(
        "SSL",
        &SslFiles {
            ca: Some(ca.to_path_buf()),
            ..SslFiles::default()
        },
        None,
    )
    .unwrap()
}

fn server_config(tls: &BenchTls) -> Arc<ServerConfig> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&tls.keystore)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(&tls.keystore).unwrap();
    #[allow(deprecated, reason = "ring is the provider this build has")]
    let provider = rustls::crypto::ring::default_provider();
    Arc::new(
        ServerConfig::builder_with_provider(Arc::new(provider))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap(),
    )
}

/// A pattern that shows any byte out of place.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn read_frame(r: &mut impl Read) -> Vec<u8> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    r.read_exact(&mut body).unwrap();
    body
}

fn frame(body: &[u8]) -> Vec<u8> {
    let mut f = (body.len() as u32).to_be_bytes().to_vec();
    f.extend_from_slice(body);
    f
}

/// A TLS echo server for one connection: every size-prefixed request frame
/// is answered with `reply(request)`, until the client closes.
fn serve_one(tls: &BenchTls, reply: fn(&[u8]) -> Vec<u8>) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let config = server_config(tls);
    let h = std::thread::spawn(move || {
        let (sock, _) = listener.accept().unwrap();
        let mut s = StreamOwned::new(ServerConnection::new(config).unwrap(), sock);
        loop {
            let mut len = [0u8; 4];
            if s.read_exact(&mut len).is_err() {
                return;
            }
            let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
            s.read_exact(&mut body).unwrap();
            s.write_all(&frame(&reply(&body))).unwrap();
            s.flush().unwrap();
        }
    });
    (addr, h)
}

#[test]
fn requests_and_responses_cross_tls_with_a_reader_thread() {
    let dir = tempfile::tempdir().unwrap();
    let tls = BenchTls::create(dir.path()).unwrap();
    // 3 MB responses: many TLS records, several receive buffers each.
    let (addr, server) = serve_one(&tls, |req| {
        let mut out = req.to_vec();
        out.extend(pattern(3_000_000, req.len() as u8));
        out
    });
    let mut writer = ssl(&tls.ca).connect(&addr, TIMEOUT).unwrap();
    assert!(matches!(writer, Stream::Tls(_)));
    // The first exchange on the connecting thread (as ApiVersions is),
    // then the reader thread takes over.
    let first = pattern(100, 7);
    writer.write_all(&frame(&first)).unwrap();
    let got = read_frame(&mut writer);
    assert_eq!(&got[..100], &first[..]);
    assert_eq!(got[100..], pattern(3_000_000, 100)[..]);
    let mut reader = writer.split_reader().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let rd = std::thread::spawn(move || {
        for _ in 0..3 {
            tx.send(read_frame(&mut reader)).unwrap();
        }
    });
    // Pipelined vectored writes: a header slice and batch slices per
    // request, as Connection::send_produce writes them.
    let mut sent = Vec::new();
    for n in 0..3u8 {
        let a = pattern(5, n);
        let b = pattern(70_000 + usize::from(n), n + 1);
        let c = pattern(3, n + 2);
        let len = ((a.len() + b.len() + c.len()) as u32).to_be_bytes();
        let slices = [
            IoSlice::new(&len),
            IoSlice::new(&a),
            IoSlice::new(&b),
            IoSlice::new(&c),
        ];
        let total: usize = slices.iter().map(|s| s.len()).sum();
        assert_eq!(
            writer.write_vectored(&slices).unwrap(),
            total,
            "one call encrypts it all"
        );
        sent.push([a, b, c].concat());
    }
    for req in &sent {
        let got = rx.recv_timeout(TIMEOUT).unwrap();
        assert_eq!(&got[..req.len()], &req[..]);
        assert_eq!(got[req.len()..], pattern(3_000_000, req.len() as u8)[..]);
    }
    rd.join().unwrap();
    writer.shutdown().unwrap();
    server.join().unwrap();
}

#[test]
fn a_broker_certificate_from_another_ca_fails_the_handshake() {
    let dir = tempfile::tempdir().unwrap();
    let tls = BenchTls::create(&dir.path().join("a")).unwrap();
    let other = BenchTls::create(&dir.path().join("b")).unwrap();
    let (addr, _server) = serve_one(&tls, |r| r.to_vec());
    let err = ssl(&other.ca).connect(&addr, TIMEOUT).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains("TLS handshake with"), "{text}");
    // Both CAs carry the same name: the chain is built and its signature
    // fails.
    assert!(text.contains("invalid peer certificate"), "{text}");
    assert!(!text.contains("SSL listener"), "{text}");
}

#[test]
fn a_plaintext_listener_fails_the_handshake_with_a_hint() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    // What a Kafka PLAINTEXT listener does with a ClientHello: reads a
    // size it refuses and closes.
    let h = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut b = [0u8; 4];
        let _ = s.read_exact(&mut b);
    });
    let dir = tempfile::tempdir().unwrap();
    let tls = BenchTls::create(dir.path()).unwrap();
    let err = ssl(&tls.ca).connect(&addr, TIMEOUT).unwrap_err();
    assert!(
        format!("{err:#}").contains("is it an SSL listener?"),
        "{err:#}"
    );
    h.join().unwrap();
}

#[test]
fn protocol_and_files_are_checked() {
    let ca = Some(std::path::PathBuf::from("/nonexistent/ca.pem"));
    let with_ca = SslFiles {
        ca: ca.clone(),
        ..SslFiles::default()
    };
    assert!(matches!(
        Security::new("plaintext", &SslFiles::default(), None).unwrap(),
        Security::Plaintext
    ));
    let e = Security::new("PLAINTEXT", &with_ca, None).unwrap_err();
    assert!(
        e.to_string().contains("need --security-protocol SSL"),
        "{e}"
    );
    let e = Security::new("SSL", &SslFiles::default(), None).unwrap_err();
    assert!(e.to_string().contains("--ssl-ca-location"), "{e}");
    let e = Security::new("SSL", &with_ca, None).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    let e = Security::new("SASL_SSL", &SslFiles::default(), None).unwrap_err();
    assert!(e.to_string().contains("SASL needs --sasl-mechanism"), "{e}");
    let login =
        || crate::loadgen::sasl_login::SaslLogin::new(Some("plain"), Some("u"), Some("p")).unwrap();
    let e = Security::new("SSL", &with_ca, Some(login())).unwrap_err();
    assert!(
        e.to_string().contains("needs --security-protocol SASL_"),
        "{e}"
    );
    let sp = Security::new("sasl_plaintext", &SslFiles::default(), Some(login())).unwrap();
    assert_eq!(sp.name(), "SASL_PLAINTEXT");
    assert_eq!(format!("{:?}", sp.sasl().unwrap()), "PLAIN as \"u\"");
    let e = Security::new("GSSAPI", &SslFiles::default(), None).unwrap_err();
    assert!(e.to_string().contains("SASL_PLAINTEXT and SASL_SSL"), "{e}");
    let e = crate::loadgen::sasl_login::SaslLogin::new(Some("OAUTHBEARER"), Some("u"), Some("p"))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"),
        "{e}"
    );
    let half = SslFiles {
        ca,
        certificate: Some("/c.pem".into()),
        key: None,
    };
    let e = Security::new("SSL", &half, None).unwrap_err();
    assert!(e.to_string().contains("go together"), "{e}");
}
