//! The TLS transport over real loopback sockets: a glommio executor runs
//! the server side, a rustls client on a plain thread the other; the keys
//! are made by `openssl` in a temp dir.

use super::*;
use crate::server::transport::{ConnRead, ConnWrite};
use bytes::Bytes;
use glommio::net::TcpListener;
use glommio::LocalExecutorBuilder;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for localhost/127.0.0.1, a client
/// certificate, one from an unknown CA and an expired one.
pub(super) fn make_keys(dir: &Path) {
    for ca in ["ca", "rogue"] {
        openssl(
            dir,
            &[
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
                "-subj",
                &format!("/CN={ca}"),
                "-days",
                "30",
            ],
        );
    }
    std::fs::write(
        dir.join("server.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .expect("ext");
    std::fs::write(
        dir.join("client.ext"),
        "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n",
    )
    .expect("ext");
    for (name, ca, ext, days) in [
        ("server", "ca", "server.ext", "30"),
        ("client", "ca", "client.ext", "30"),
        ("stranger", "rogue", "client.ext", "30"),
        ("expired", "ca", "client.ext", "-1"),
    ] {
        openssl(
            dir,
            &[
                "req",
                "-newkey",
                "ec",
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                &format!("{ca}.pem"),
                "-CAkey",
                &format!("{ca}.key"),
                "-CAcreateserial",
                "-out",
                &format!("{name}.pem"),
                "-days",
                days,
                "-extfile",
                ext,
            ],
        );
    }
}

fn certs(path: PathBuf) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_file_iter(path)
        .expect("pem")
        .collect::<Result<_, _>>()
        .expect("certs")
}

fn key(path: PathBuf) -> PrivateKeyDer<'static> {
    PrivateKeyDer::from_pem_file(path).expect("key")
}

fn roots(dir: &Path, ca: &str) -> Arc<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for c in certs(dir.join(format!("{ca}.pem"))) {
        roots.add(c).expect("root");
    }
    Arc::new(roots)
}

/// The server side of the tests: `ssl.client.auth=required` against `ca`;
/// the principal is `User:` + the subject DN (Kafka's default rule).
pub(super) struct TestTls(pub(super) Arc<rustls::ServerConfig>);

impl ServerTls for TestTls {
    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        self.0.clone()
    }

    fn principal_for(&self, cert_der: &[u8]) -> Result<String, String> {
        let (_, cert) = x509_parser::parse_x509_certificate(cert_der).map_err(|e| e.to_string())?;
        Ok(format!("User:{}", cert.subject()))
    }
}

pub(super) fn server_tls(dir: &Path) -> TestTls {
    let verifier = rustls::server::WebPkiClientVerifier::builder(roots(dir, "ca"))
        .build()
        .expect("verifier");
    let config = rustls::ServerConfig::builder()
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs(dir.join("server.pem")), key(dir.join("server.key")))
        .expect("server config");
    TestTls(Arc::new(config))
}

pub(super) fn client_config(dir: &Path, client: &str) -> Arc<rustls::ClientConfig> {
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots(dir, "ca"))
        .with_client_auth_cert(
            certs(dir.join(format!("{client}.pem"))),
            key(dir.join(format!("{client}.key"))),
        )
        .expect("client config");
    Arc::new(config)
}

fn tls_client(
    dir: &Path,
    client: &str,
    addr: SocketAddr,
) -> rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream> {
    let name = ServerName::try_from("localhost").expect("name");
    let conn = rustls::ClientConnection::new(client_config(dir, client), name).expect("client");
    let sock = std::net::TcpStream::connect(addr).expect("connect");
    rustls::StreamOwned::new(conn, sock)
}

/// Accept `n` connections on one glommio executor, handshake each
/// concurrently and, for those that pass, echo: read `4 + len` bytes
/// (a length-prefixed message), answer with the message as a `Bytes`
/// part followed by a file region. Returns each handshake's outcome
/// (principal or reason) in accept order.
fn serve(
    dir: &Path,
    n: usize,
    timeout_ms: i64,
    file: Option<(PathBuf, u64, usize)>,
) -> (
    SocketAddr,
    std::thread::JoinHandle<(Vec<String>, ZeroCopyStats)>,
) {
    let tls = Rc::new(server_tls(dir));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let fd = std::os::fd::IntoRawFd::into_raw_fd(listener);
    let tls_dir = dir.to_path_buf();
    let handle = std::thread::spawn(move || {
        LocalExecutorBuilder::default()
            .io_memory(512 * 1024)
            .spawn(move || async move {
                let tls = Rc::new(server_tls(&tls_dir));
                // SAFETY: `fd` is the listening socket bound above, owned
                // by nothing else since `into_raw_fd`.
                let listener = unsafe { <TcpListener as std::os::fd::FromRawFd>::from_raw_fd(fd) };
                let outcomes = Rc::new(RefCell::new(vec![String::new(); n]));
                let stats = Rc::new(Cell::new(ZeroCopyStats::default()));
                let mut tasks = Vec::new();
                for i in 0..n {
                    let stream = listener.accept().await.expect("accept");
                    let (tls, outcomes, stats) = (tls.clone(), outcomes.clone(), stats.clone());
                    let file = file.clone();
                    tasks.push(glommio::spawn_local(async move {
                        let done = match handshake(stream, &*tls, timeout_ms, false).await {
                            Ok(done) => done,
                            Err(reason) => {
                                outcomes.borrow_mut()[i] = reason;
                                return;
                            }
                        };
                        outcomes.borrow_mut()[i] = done.principal.clone();
                        echo(done, file, &stats).await;
                    }));
                }
                for t in tasks {
                    t.await;
                }
                let outcomes = outcomes.borrow().clone();
                (outcomes, stats.get())
            })
            .expect("executor")
            .join()
            .expect("join")
    });
    drop(tls);
    (addr, handle)
}

async fn echo(done: Established, file: Option<(PathBuf, u64, usize)>, stats: &Cell<ZeroCopyStats>) {
    let (mut reader, mut writer) = split(done).expect("split");
    let mut buf = BytesMut::new();
    while buf.len() < 4 {
        if reader.fill(&mut buf, 4).await.expect("read") == 0 {
            return;
        }
    }
    let len = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
    while buf.len() < 4 + len {
        let want = 4 + len - buf.len();
        assert!(
            reader.fill(&mut buf, want).await.expect("read") > 0,
            "EOF mid-message"
        );
    }
    let mut parts = vec![OutPart::Bytes(buf.freeze().slice(4..))];
    if let Some((path, position, len)) = file {
        let file = Arc::new(std::fs::File::open(path).expect("open"));
        parts.push(OutPart::File {
            file,
            position,
            len,
        });
        parts.push(OutPart::Bytes(Bytes::from_static(b"--tail")));
    }
    writer.write_parts(parts, stats).await.expect("write");
    writer.close().await;
}

#[test]
fn requests_and_file_regions_cross_tls_and_the_client_certificate_names_the_principal() {
    let dir = tempfile::tempdir().expect("tempdir");
    make_keys(dir.path());
    let seg = dir.path().join("seg.log");
    let file_bytes: Vec<u8> = (0..6_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&seg, &file_bytes).expect("segment");
    let (addr, server) = serve(dir.path(), 1, 10_000, Some((seg, 1000, 5_000_000)));
    let mut client = tls_client(dir.path(), "client", addr);
    let message: Vec<u8> = (0..1_500_000u32).map(|i| (i % 13) as u8).collect();
    client
        .write_all(&(message.len() as u32).to_be_bytes())
        .and_then(|()| client.write_all(&message))
        .expect("send");
    // Late reader: the server's socket fills and its writes wait.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let mut got = Vec::new();
    match client.read_to_end(&mut got) {
        Ok(_) => {}
        Err(e) => panic!("read: {e} after {} bytes", got.len()),
    }
    let (outcomes, stats) = server.join().expect("server");
    let mut expected = message.clone();
    expected.extend_from_slice(&file_bytes[1000..5_001_000]);
    expected.extend_from_slice(b"--tail");
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "bytes differ");
    assert_eq!(outcomes[0], "User:CN=client");
    assert_eq!(stats.bytes_tls, expected.len() as u64, "{stats:?}");
    assert_eq!(stats.bytes_sendfile + stats.bytes_sendmsg, 0, "{stats:?}");
}

/// What a bad client does to the handshake.
fn bad_client(dir: &Path, addr: SocketAddr, case: &str) {
    match case {
        "plaintext" => {
            // A Kafka ApiVersions v0 request, as a PLAINTEXT client sends it.
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            let frame = [0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0];
            s.write_all(&frame).expect("send");
            let _ = s.read_to_end(&mut Vec::new());
        }
        "garbage" => {
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            let _ = s.write_all(&[0xff; 64]);
            let _ = s.read_to_end(&mut Vec::new());
        }
        "truncated" => {
            let name = ServerName::try_from("localhost").expect("name");
            let mut conn =
                rustls::ClientConnection::new(client_config(dir, "client"), name).expect("client");
            let mut hello = Vec::new();
            conn.write_tls(&mut hello).expect("hello");
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            s.write_all(&hello[..hello.len() / 2]).expect("send");
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
            let _ = s.read_to_end(&mut Vec::new());
        }
        "silent" => {
            let mut s = std::net::TcpStream::connect(addr).expect("connect");
            let _ = s.read_to_end(&mut Vec::new());
        }
        client => {
            // A full TLS client with a certificate the server refuses.
            let mut c = tls_client(dir, client, addr);
            let _ = c.write_all(&[0, 0, 0, 1, 7]);
            let _ = c.read_to_end(&mut Vec::new());
        }
    }
}

#[test]
fn bad_handshakes_close_with_rustls_reason_while_a_good_connection_goes_on() {
    let dir = tempfile::tempdir().expect("tempdir");
    make_keys(dir.path());
    let cases = [
        ("plaintext", "InvalidContentType"),
        ("garbage", "InvalidContentType"),
        ("truncated", "eof"),
        ("stranger", "UnknownIssuer"),
        ("expired", "Expired"),
        ("silent", "connections.max.idle.ms"),
    ];
    let (addr, server) = serve(dir.path(), 1 + cases.len(), 1500, None);
    // A good client handshakes first and keeps its connection open.
    let mut good = tls_client(dir.path(), "client", addr);
    good.write_all(&[0, 0, 0, 3]).expect("good: first half");
    good.flush().expect("flush");
    for (case, _) in cases {
        bad_client(dir.path(), addr, case);
    }
    good.write_all(b"abc").expect("good: second half");
    let mut got = Vec::new();
    good.read_to_end(&mut got).expect("good: answer");
    assert_eq!(got, b"abc");
    let (outcomes, _) = server.join().expect("server");
    assert_eq!(outcomes[0], "User:CN=client");
    for (i, (case, reason)) in cases.iter().enumerate() {
        let outcome = &outcomes[1 + i];
        assert!(
            outcome.to_lowercase().contains(&reason.to_lowercase()),
            "{case}: {outcome}"
        );
    }
}

/// The broker's own TLS client (`io::broker_stream`) against this server:
/// the advertised host is the server name its certificate must carry.
#[test]
fn the_brokers_tls_client_checks_the_advertised_host_and_talks_through() {
    use crate::io::broker_stream::BrokerStream;
    let dir = tempfile::tempdir().expect("tempdir");
    make_keys(dir.path());
    let (addr, server) = serve(dir.path(), 2, 10_000, None);
    let link = crate::io::broker_stream::BrokerLink {
        tls: Some(client_config(dir.path(), "client")),
        sasl: None,
        oauth: None,
    };
    let port = addr.port();
    let got = std::thread::spawn(move || {
        LocalExecutorBuilder::default()
            .spawn(move || async move {
                // A host name the certificate does not carry: refused.
                let tcp = glommio::net::TcpStream::connect(addr)
                    .await
                    .expect("connect");
                let wrong = BrokerStream::over(tcp, &format!("broker-9.example:{port}"), &link)
                    .await
                    .err()
                    .map(|e| e.to_string());
                let mut s = BrokerStream::connect(&format!("localhost:{port}"), &link)
                    .await
                    .expect("TLS to localhost");
                assert!(s.is_tls());
                s.write_all(&[0, 0, 0, 5]).await.expect("send");
                s.write_all(b"hello").await.expect("send");
                s.flush().await.expect("flush");
                let mut answer = Vec::new();
                s.read_to_end(&mut answer).await.expect("read");
                (wrong, answer)
            })
            .expect("executor")
            .join()
            .expect("join")
    })
    .join()
    .expect("client");
    let (outcomes, _) = server.join().expect("server");
    let wrong = got.0.expect("a wrong name must fail");
    assert!(wrong.contains("not valid for name"), "{wrong}");
    assert_eq!(got.1, b"hello");
    assert_eq!(outcomes[1], "User:CN=client");
}
