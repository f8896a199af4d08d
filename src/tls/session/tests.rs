//! shardlog's record layer against rustls itself: a rustls client and a
//! server handshaken through [`Handshake`] in memory, then records sealed
//! by rustls opened here and records sealed here opened by rustls, for
//! every cipher suite of TLS 1.2 and 1.3, with KeyUpdates mid-stream.

use super::*;
use crate::tls::record::{Event, MAX_PLAIN};
use bytes::BytesMut;
use proptest::prelude::*;
use rustls::crypto::ring::cipher_suite as cs;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, SupportedProtocolVersion};
use std::io::{Read, Write};

#[allow(
    deprecated,
    reason = "the provider tls::build uses (ring, no post-quantum groups)"
)]
fn provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

fn server_config() -> Arc<ServerConfig> {
    let k = crate::tls::test_keys::keys();
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(k.path("server.pem"))
        .expect("chain")
        .map(|c| c.expect("cert"))
        .collect();
    let key = PrivateKeyDer::from_pem_file(k.path("server.key")).expect("key");
    let mut config = ServerConfig::builder_with_provider(Arc::new(provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("config");
    config.enable_secret_extraction = true;
    Arc::new(config)
}

fn client(suite: SupportedCipherSuite) -> ClientConnection {
    let k = crate::tls::test_keys::keys();
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(k.path("ca.pem")).expect("ca") {
        roots.add(c.expect("ca cert")).expect("root");
    }
    let mut provider = provider();
    provider.cipher_suites = vec![suite];
    let version: &'static SupportedProtocolVersion = match suite {
        SupportedCipherSuite::Tls12(_) => &rustls::version::TLS12,
        SupportedCipherSuite::Tls13(_) => &rustls::version::TLS13,
    };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&[version])
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from("localhost").expect("name");
    ClientConnection::new(Arc::new(config), name).expect("client")
}

const SUITES: [SupportedCipherSuite; 6] = [
    cs::TLS13_AES_128_GCM_SHA256,
    cs::TLS13_AES_256_GCM_SHA384,
    cs::TLS13_CHACHA20_POLY1305_SHA256,
    cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
];

/// A rustls client and our server session, handshaken in memory; the
/// ciphertext the client sent after its Finished is returned too.
fn pair(suite: SupportedCipherSuite) -> (ClientConnection, Session, Vec<u8>) {
    let mut c = client(suite);
    let mut hs = Handshake::new(server_config()).expect("server");
    let mut to_server = Vec::new();
    let mut to_client = Vec::new();
    for _ in 0..10 {
        while c.wants_write() {
            c.write_tls(&mut to_server).expect("client writes");
        }
        let done = hs
            .step(&mut to_server, &mut to_client)
            .expect("server step");
        c.read_tls(&mut &to_client[..]).expect("client reads");
        to_client.clear();
        c.process_new_packets().expect("client processes");
        if done && !c.is_handshaking() {
            let session = hs.finish().expect("keys");
            assert_eq!(
                session.tx.version(),
                Version::of(c.protocol_version().expect("v")).expect("v")
            );
            return (c, session, to_server);
        }
    }
    panic!("handshake did not complete");
}

/// Open everything in `wire` in one read.
fn open_all(inbound: &mut Inbound, schedule: &mut KeySchedule, wire: &[u8]) -> (Vec<u8>, Opened) {
    let mut buf = BytesMut::new();
    let base = inbound.prepare(&mut buf, wire.len());
    buf.extend_from_slice(wire);
    let opened = inbound
        .open(&mut buf, base, &mut || schedule.next_rx())
        .expect("open");
    assert_eq!(buf.len(), opened.plain);
    (buf.to_vec(), opened)
}

fn client_sends(c: &mut ClientConnection, data: &[u8]) -> Vec<u8> {
    c.writer().write_all(data).expect("client write");
    let mut wire = Vec::new();
    while c.wants_write() {
        c.write_tls(&mut wire).expect("client wire");
    }
    wire
}

fn client_reads(c: &mut ClientConnection, wire: &[u8]) -> Vec<u8> {
    let mut rd = wire;
    let mut got = Vec::new();
    while !rd.is_empty() {
        c.read_tls(&mut rd).expect("client read_tls");
        c.process_new_packets().expect("client opens our records");
        match c.reader().read_to_end(&mut got) {
            Ok(_) => {}
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        }
    }
    got
}

fn data(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}

const SIZES: [usize; 8] = [1, 2, 255, 1024, 2800, 16383, MAX_PLAIN, 40_000];

#[test]
fn records_of_every_suite_and_size_cross_between_rustls_and_ours() {
    for suite in SUITES {
        let (mut c, s, pending) = pair(suite);
        assert!(pending.is_empty());
        let Session {
            rx,
            mut tx,
            mut schedule,
            preread,
        } = s;
        assert!(preread.is_empty());
        let mut inbound = Inbound::new(rx);
        for (i, n) in SIZES.into_iter().enumerate() {
            let sent = data(n, i as u8);
            let wire = client_sends(&mut c, &sent);
            let (got, opened) = open_all(&mut inbound, &mut schedule, &wire);
            assert!(got == sent, "{suite:?}: {n} bytes from rustls");
            assert!(!opened.closed && !opened.update_requested);

            let mut ours = Vec::new();
            tx.seal_data(&mut ours, &sent).expect("seal");
            assert!(
                client_reads(&mut c, &ours) == sent,
                "{suite:?}: {n} bytes to rustls"
            );
        }
        c.send_close_notify();
        let wire = client_sends(&mut c, &[]);
        let (got, opened) = open_all(&mut inbound, &mut schedule, &wire);
        assert!(got.is_empty() && opened.closed, "{suite:?}: close_notify");
        assert!(inbound.closed());
    }
}

#[test]
fn key_updates_mid_stream_both_ways_and_on_request() {
    for suite in &SUITES[..3] {
        let (mut c, s, _) = pair(*suite);
        let Session {
            rx,
            mut tx,
            mut schedule,
            ..
        } = s;
        let mut inbound = Inbound::new(rx);
        // rustls' KeyUpdate between two records; rustls asks for ours
        // (update_requested), which goes before our next data.
        let mut wire = client_sends(&mut c, b"before");
        c.refresh_traffic_keys().expect("client key update");
        wire.extend(client_sends(&mut c, b"after"));
        let (got, opened) = open_all(&mut inbound, &mut schedule, &wire);
        assert_eq!(got, b"beforeafter", "{suite:?}");
        assert!(opened.update_requested);
        let mut ours = Vec::new();
        tx.seal_key_update(&mut ours, false).expect("answer");
        tx.rekey(schedule.next_tx().expect("next tx"));
        tx.seal_data(&mut ours, b"answer").expect("seal");
        assert_eq!(client_reads(&mut c, &ours), b"answer");

        // Ours, asking for the client's: it answers before its next data.
        let mut ours = Vec::new();
        tx.seal_data(&mut ours, b"old keys").expect("seal");
        tx.seal_key_update(&mut ours, true).expect("key update");
        tx.rekey(schedule.next_tx().expect("next tx"));
        tx.seal_data(&mut ours, b"new keys").expect("seal");
        assert_eq!(client_reads(&mut c, &ours), b"old keysnew keys");
        let wire = client_sends(&mut c, b"answered");
        let (got, opened) = open_all(&mut inbound, &mut schedule, &wire);
        assert_eq!(got, b"answered");
        assert!(!opened.update_requested, "an answer asks for nothing");

        // A KeyUpdate asking for ours is reported to the writer.
        let mut fake = Vec::new();
        let mut client_tx = loopback_tx(&mut c);
        client_tx.seal_key_update(&mut fake, true).expect("ku");
        let mut rx_only = Inbound::new(loopback_rx(&mut c));
        let mut buf = BytesMut::new();
        let base = rx_only.prepare(&mut buf, fake.len());
        buf.extend_from_slice(&fake);
        let mut asked = 0;
        let opened = rx_only
            .open(&mut buf, base, &mut || {
                asked += 1;
                loopback_keys(&mut c)
            })
            .expect("open");
        assert!(opened.update_requested && asked == 1);
    }
}

/// Keys both sides of a loopback share (for records rustls has no way to
/// send: fatal alerts, KeyUpdate requests, exhausted sequence numbers).
fn loopback_keys(_: &mut ClientConnection) -> Result<Keys, RecordError> {
    let secrets = ConnectionTrafficSecrets::Chacha20Poly1305 {
        key: rustls::crypto::cipher::AeadKey::from([7u8; 32]),
        iv: rustls::crypto::cipher::Iv::new([9u8; 12]),
    };
    Keys::new(Version::Tls13, 0, &secrets)
}

fn loopback_tx(c: &mut ClientConnection) -> Tx {
    Tx::new(loopback_keys(c).expect("keys"), u64::MAX)
}

fn loopback_rx(c: &mut ClientConnection) -> Rx {
    Rx::new(loopback_keys(c).expect("keys"))
}

#[test]
fn bad_records_alerts_and_exhausted_sequence_numbers_are_refused_without_panic() {
    let (mut c, s, _) = pair(cs::TLS13_AES_128_GCM_SHA256);
    let mut inbound = Inbound::new(s.rx);
    let mut schedule = s.schedule;
    // A flipped ciphertext byte: bad_record_mac.
    let mut wire = client_sends(&mut c, b"hello");
    wire[8] ^= 1;
    let mut buf = BytesMut::new();
    let base = inbound.prepare(&mut buf, wire.len());
    buf.extend_from_slice(&wire);
    let e = inbound
        .open(&mut buf, base, &mut || schedule.next_rx())
        .expect_err("tampered");
    assert_eq!(e.alert, Some(AlertDescription::BadRecordMac), "{e}");

    // A peer's fatal alert: closed, nothing sent back.
    let mut tx = loopback_tx(&mut c);
    let mut rx = loopback_rx(&mut c);
    let mut out = Vec::new();
    tx.seal_alert(&mut out, AlertDescription::HandshakeFailure)
        .expect("alert");
    let e = rx.open_next(&mut out, 0, 0).expect_err("fatal alert");
    assert_eq!(e.alert, None);
    assert!(e.reason.contains("HandshakeFailure"), "{e}");

    // A user_canceled warning is ignored in TLS 1.3; unknown types refused.
    let mut out = Vec::new();
    tx.seal_message(&mut out, 21, &[1, 90]).expect("warning");
    assert_eq!(
        rx.open_next(&mut out, 0, 0).expect("ignored"),
        Some((Event::Nothing, out.len()))
    );
    let mut out = Vec::new();
    tx.seal_message(&mut out, 24, b"x").expect("odd type");
    assert!(rx.open_next(&mut out, 0, 0).is_err());
    let mut out = Vec::new();
    tx.seal_message(&mut out, 22, &[4, 0, 0, 1, 0])
        .expect("NewSessionTicket-shaped");
    let e = rx
        .open_next(&mut out, 0, 0)
        .expect_err("post-handshake NST from a client");
    assert_eq!(e.alert, Some(AlertDescription::UnexpectedMessage));

    // Headers no peer may send.
    for header in [
        [23u8, 3, 3, 0x48, 1],
        [22, 3, 3, 0, 40],
        [23, 2, 0, 0, 40],
        [23, 3, 3, 0, 3],
    ] {
        assert!(rx.record_len(&header).is_err(), "{header:?}");
    }

    // The last sequence number is refused both ways.
    let secrets = ConnectionTrafficSecrets::Aes256Gcm {
        key: rustls::crypto::cipher::AeadKey::from([1u8; 32]),
        iv: rustls::crypto::cipher::Iv::new([2u8; 12]),
    };
    let mut tx = Tx::new(
        Keys::new(Version::Tls12, u64::MAX, &secrets).expect("k"),
        u64::MAX,
    );
    assert!(tx.seal_data(&mut Vec::new(), b"x").is_err());
    let mut good = Tx::new(
        Keys::new(Version::Tls12, u64::MAX - 1, &secrets).expect("k"),
        u64::MAX,
    );
    let mut out = Vec::new();
    good.seal_data(&mut out, b"x").expect("second to last");
    let mut rx = Rx::new(Keys::new(Version::Tls12, u64::MAX - 1, &secrets).expect("k"));
    assert_eq!(
        rx.open_next(&mut out, 0, 0).expect("open"),
        Some((Event::Data(1), out.len()))
    );
    let mut rx = Rx::new(Keys::new(Version::Tls12, u64::MAX, &secrets).expect("k"));
    let mut out = Vec::new();
    Tx::new(Keys::new(Version::Tls12, 5, &secrets).expect("k"), u64::MAX)
        .seal_data(&mut out, b"x")
        .expect("seal");
    assert!(rx.open_next(&mut out, 0, 0).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// rustls' records (with a KeyUpdate among them) cut at random points
    /// across reads come out as the same plaintext, contiguous.
    #[test]
    fn random_record_splits_across_reads(
        suite in 0usize..6,
        sizes in proptest::collection::vec(1usize..20_000, 1..12),
        cuts in proptest::collection::vec(1usize..9_000, 1..40),
        update_at in 0usize..12,
    ) {
        let (mut c, s, _) = pair(SUITES[suite]);
        let mut schedule = s.schedule;
        let mut inbound = Inbound::new(s.rx);
        let mut wire = Vec::new();
        let mut sent = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            if i == update_at && suite < 3 {
                c.refresh_traffic_keys().expect("key update");
            }
            let d = data(*n, i as u8);
            wire.extend(client_sends(&mut c, &d));
            sent.extend(d);
        }
        let mut buf = BytesMut::new();
        buf.extend_from_slice(b"earlier plaintext");
        let mut at = 0;
        let mut cut = cuts.iter().cycle();
        while at < wire.len() {
            let n = (*cut.next().unwrap_or(&1)).min(wire.len() - at);
            let base = inbound.prepare(&mut buf, n);
            buf.extend_from_slice(&wire[at..at + n]);
            at += n;
            let opened = inbound.open(&mut buf, base, &mut || schedule.next_rx()).expect("open");
            prop_assert_eq!(buf.len(), base + opened.plain);
        }
        prop_assert!(&buf[..17] == b"earlier plaintext");
        prop_assert!(buf[17..] == sent[..]);
    }
}
