//! TLS configuration tests over key material made at test time by openssl
//! and keytool ([`super::test_keys`]): stores of every supported format and
//! their errors, protocol and cipher mapping, client auth, host name
//! checks, the self-check, DN rendering against Java, KIP-226 reloads.

use std::sync::Arc;

use rustls::{CipherSuite, ProtocolVersion};

use super::principal::{rfc2253_subject, PrincipalMapper};
use super::selfcheck::handshake;
use super::test_keys::{borrow, java_dns, keys, pem_broker, settings, try_settings};
use super::{client_config, self_check, server_config, ListenerTls, SslSettings};
use crate::config::{ConfigError, ServerConfig};

/// The key an error names.
fn key_of(e: &ConfigError) -> String {
    match e {
        ConfigError::InvalidValue { key, .. } => key.clone(),
        other => panic!("not a key error: {other}"),
    }
}

fn store_error(pairs: &[(&str, &str)]) -> ConfigError {
    let s = try_settings(pairs).expect("settings resolve");
    server_config(&s).expect_err("the stores must be refused")
}

/// The broker keystore in PEM plus the CA truststore, with `extra` keys.
fn broker(extra: &[(&'static str, String)]) -> SslSettings {
    let mut pairs = pem_broker(keys());
    pairs.extend(extra.iter().cloned());
    settings(&borrow(&pairs))
}

#[test]
fn every_keystore_format_passes_the_self_check() {
    let k = keys();
    let cases: Vec<Vec<(&str, String)>> = vec![
        pem_broker(k),
        vec![
            ("ssl.keystore.type", "PEM".into()),
            ("ssl.keystore.key", k.text("server.key")),
            ("ssl.keystore.certificate.chain", k.text("server-chain.pem")),
            ("ssl.truststore.type", "PEM".into()),
            ("ssl.truststore.certificates", k.text("ca.pem")),
        ],
        vec![
            ("ssl.keystore.type", "PEM".into()),
            ("ssl.keystore.location", k.path("server-enc-bundle.pem")),
            ("ssl.key.password", "keypass".into()),
            ("ssl.truststore.type", "PEM".into()),
            ("ssl.truststore.location", k.path("ca.pem")),
        ],
        vec![
            ("ssl.keystore.type", "PKCS12".into()),
            ("ssl.keystore.location", k.path("server.p12")),
            ("ssl.keystore.password", "storepass".into()),
            ("ssl.truststore.type", "PKCS12".into()),
            ("ssl.truststore.location", k.path("trust.p12")),
            ("ssl.truststore.password", "trustpass".into()),
        ],
        // keytool's own RSA key and certificate chain.
        vec![
            ("ssl.keystore.type", "PKCS12".into()),
            ("ssl.keystore.location", k.path("rsa.p12")),
            ("ssl.keystore.password", "storepass".into()),
            ("ssl.truststore.type", "PKCS12".into()),
            ("ssl.truststore.location", k.path("trust.p12")),
            ("ssl.truststore.password", "trustpass".into()),
            ("ssl.client.auth", "required".into()),
        ],
        // keytool's PKCS12, under Kafka's default type JKS (the JDK's JKS
        // keystore loads PKCS12 files), key password = store password.
        vec![
            ("ssl.keystore.location", k.path("server-kt.p12")),
            ("ssl.keystore.password", "storepass".into()),
            ("ssl.key.password", "storepass".into()),
            ("ssl.truststore.location", k.path("trust.p12")),
            ("ssl.truststore.password", "trustpass".into()),
        ],
    ];
    for pairs in cases {
        let s = settings(&borrow(&pairs));
        self_check(&s, "localhost").unwrap_or_else(|e| panic!("{pairs:?}: {e}"));
        self_check(&s, "127.0.0.1").unwrap_or_else(|e| panic!("{pairs:?}: {e}"));
    }
}

/// Settings pairs, the key the error must name, a text it must contain.
type Case<'a> = (Vec<(&'a str, &'a str)>, &'a str, &'a str);

fn check_cases(cases: Vec<Case<'_>>) {
    for (pairs, key, text) in cases {
        let e = store_error(&pairs);
        assert_eq!(key_of(&e), key, "{pairs:?}: {e}");
        assert!(e.to_string().contains(text), "{pairs:?}: {e}");
        assert!(
            !e.to_string().contains("storepass"),
            "a password leaked: {e}"
        );
    }
}

#[test]
fn store_errors_name_the_key_to_fix() {
    let k = keys();
    let (p12, pem, jks) = (
        k.path("server.p12"),
        k.path("server-bundle.pem"),
        k.path("server.jks"),
    );
    let enc = k.path("server-enc-bundle.pem");
    check_cases(vec![
        (
            vec![
                ("ssl.keystore.type", "PKCS12"),
                ("ssl.keystore.location", &p12),
                ("ssl.keystore.password", "wrong"),
            ],
            "ssl.keystore.password",
            "wrong password",
        ),
        (
            vec![
                ("ssl.keystore.type", "PKCS12"),
                ("ssl.keystore.location", &p12),
                ("ssl.keystore.password", "storepass"),
                ("ssl.key.password", "other"),
            ],
            "ssl.key.password",
            "differs",
        ),
        (
            vec![
                ("ssl.keystore.location", &jks),
                ("ssl.keystore.password", "storepass"),
            ],
            "ssl.keystore.type",
            "keytool -importkeystore",
        ),
        (
            vec![
                ("ssl.keystore.type", "PKCS12"),
                ("ssl.keystore.location", &pem),
                ("ssl.keystore.password", "x"),
            ],
            "ssl.keystore.type",
            "PEM file",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &p12),
            ],
            "ssl.keystore.location",
            "Private key not provided",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", "/nonexistent/k.pem"),
            ],
            "ssl.keystore.location",
            "cannot read",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &enc),
            ],
            "ssl.key.password",
            "encrypted",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &enc),
                ("ssl.key.password", "wrong"),
            ],
            "ssl.key.password",
            "did not decrypt",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &pem),
                ("ssl.key.password", "keypass"),
            ],
            "ssl.key.password",
            "not encrypted",
        ),
        (
            vec![
                ("ssl.keystore.type", "PEM"),
                ("ssl.keystore.location", &pem),
                ("ssl.truststore.location", &jks),
            ],
            "ssl.truststore.type",
            "keytool -importkeystore",
        ),
    ]);
}

#[test]
fn truststores_without_trust_anchors_and_listeners_without_keystores_are_refused() {
    let k = keys();
    let pem = k.path("server-bundle.pem");
    // An openssl PKCS12 without Java's trusted-certificate attribute holds
    // no trust anchor for Java either.
    let trust = k.path("trust-openssl.p12");
    let e = store_error(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &pem),
        ("ssl.truststore.type", "PKCS12"),
        ("ssl.truststore.location", &trust),
        ("ssl.truststore.password", "trustpass"),
    ]);
    assert_eq!(key_of(&e), "ssl.truststore.location", "{e}");
    // A PKCS12 truststore without its password.
    let trust = k.path("trust.p12");
    let e = store_error(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &pem),
        ("ssl.truststore.type", "PKCS12"),
        ("ssl.truststore.location", &trust),
    ]);
    assert_eq!(key_of(&e), "ssl.truststore.password", "{e}");
    assert!(e.to_string().contains("set ssl.truststore.password"), "{e}");
    // A listener without a keystore cannot serve TLS.
    let e = server_config(&settings(&[])).unwrap_err();
    assert_eq!(key_of(&e), "ssl.keystore.location", "{e}");
}

#[test]
fn the_self_check_fails_when_the_truststore_does_not_trust_the_broker() {
    let s = broker(&[("ssl.truststore.location", keys().path("other-ca.pem"))]);
    let e = self_check(&s, "localhost").unwrap_err();
    assert_eq!(key_of(&e), "ssl.truststore.location");
    assert!(
        e.to_string().contains("cannot complete a TLS handshake"),
        "{e}"
    );
}

#[test]
fn protocols_and_cipher_suites_map_from_kafkas_names() {
    for (key, value) in [
        ("ssl.enabled.protocols", "TLSv1.2,TLSv1.1"),
        ("ssl.enabled.protocols", "SSLv3"),
        ("ssl.protocol", "SSLv3"),
        ("ssl.protocol", "TLSv1"),
        ("ssl.cipher.suites", "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA"),
    ] {
        let e = server_config(&broker(&[(key, value.into())])).unwrap_err();
        assert_eq!(key_of(&e), key, "{e}");
        assert!(
            e.to_string()
                .contains(value.split(',').next_back().unwrap_or(value)),
            "{e}"
        );
    }
    let tls12 = broker(&[("ssl.enabled.protocols", "TLSv1.2".into())]);
    let tls13 = broker(&[("ssl.enabled.protocols", "TLSv1.3".into())]);
    let both = broker(&[]);
    let agreed = handshake(
        client_config(&both).unwrap(),
        server_config(&tls12).unwrap(),
        "localhost",
    )
    .unwrap();
    assert_eq!(agreed.version, Some(ProtocolVersion::TLSv1_2));
    let agreed = handshake(
        client_config(&both).unwrap(),
        server_config(&both).unwrap(),
        "localhost",
    )
    .unwrap();
    assert_eq!(agreed.version, Some(ProtocolVersion::TLSv1_3));
    assert!(handshake(
        client_config(&tls13).unwrap(),
        server_config(&tls12).unwrap(),
        "localhost"
    )
    .is_err());
    // The broker's key is EC: one ECDSA suite for TLS 1.2, one TLS 1.3 suite.
    let suites = broker(&[(
        "ssl.cipher.suites",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_CHACHA20_POLY1305_SHA256".into(),
    )]);
    let agreed = handshake(
        client_config(&both).unwrap(),
        server_config(&suites).unwrap(),
        "localhost",
    )
    .unwrap();
    assert_eq!(
        agreed.suite,
        Some(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256)
    );
    let rsa = broker(&[
        ("ssl.keystore.type", "PKCS12".into()),
        ("ssl.keystore.location", keys().path("rsa.p12")),
        ("ssl.keystore.password", "storepass".into()),
        ("ssl.enabled.protocols", "TLSv1.2".into()),
        (
            "ssl.cipher.suites",
            "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256".into(),
        ),
    ]);
    let agreed = handshake(
        client_config(&both).unwrap(),
        server_config(&rsa).unwrap(),
        "localhost",
    )
    .unwrap();
    assert_eq!(
        agreed.suite,
        Some(CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)
    );
    let agreed = handshake(
        client_config(&tls12).unwrap(),
        server_config(&suites).unwrap(),
        "localhost",
    )
    .unwrap();
    assert_eq!(
        agreed.suite,
        Some(CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
    );
}

#[test]
fn client_auth_required_requested_and_none() {
    let k = keys();
    let client = settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &k.path("client-bundle.pem")),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", &k.path("ca.pem")),
    ]);
    let anonymous = settings(&[
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", &k.path("ca.pem")),
    ]);
    let expired = settings(&[
        ("ssl.keystore.type", "PKCS12"),
        ("ssl.keystore.location", &k.path("expired.p12")),
        ("ssl.keystore.password", "storepass"),
        ("ssl.truststore.type", "PEM"),
        ("ssl.truststore.location", &k.path("ca.pem")),
    ]);
    let required = server_config(&broker(&[("ssl.client.auth", "required".into())])).unwrap();
    let requested = server_config(&broker(&[("ssl.client.auth", "requested".into())])).unwrap();
    let none = server_config(&broker(&[])).unwrap();

    let agreed = handshake(
        client_config(&client).unwrap(),
        required.clone(),
        "localhost",
    )
    .unwrap();
    let cert = agreed
        .client_certificate
        .expect("a verified client certificate");
    let mapper = PrincipalMapper::parse("DEFAULT").unwrap();
    assert_eq!(
        mapper.principal_for(&cert).unwrap(),
        "CN=client1,OU=Clients,O=shardlog tests"
    );
    let e = handshake(
        client_config(&anonymous).unwrap(),
        required.clone(),
        "localhost",
    )
    .unwrap_err();
    assert!(e.contains("server"), "{e}");
    let e = handshake(client_config(&expired).unwrap(), required, "localhost").unwrap_err();
    assert!(e.to_lowercase().contains("expired"), "{e}");

    let agreed = handshake(
        client_config(&anonymous).unwrap(),
        requested.clone(),
        "localhost",
    )
    .unwrap();
    assert_eq!(agreed.client_certificate, None);
    let agreed = handshake(client_config(&client).unwrap(), requested, "localhost").unwrap();
    assert!(agreed.client_certificate.is_some());
    let agreed = handshake(client_config(&client).unwrap(), none, "localhost").unwrap();
    assert_eq!(agreed.client_certificate, None);

    // Client auth with nothing to verify against is refused at start.
    let s = settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &k.path("server-bundle.pem")),
        ("ssl.client.auth", "required"),
    ]);
    assert_eq!(
        key_of(&server_config(&s).unwrap_err()),
        "ssl.truststore.location"
    );
}

#[test]
fn endpoint_identification_checks_the_host_name_unless_empty() {
    let server = server_config(&broker(&[])).unwrap();
    let https = client_config(&broker(&[])).unwrap();
    let off = client_config(&broker(&[(
        "ssl.endpoint.identification.algorithm",
        String::new(),
    )]))
    .unwrap();
    assert!(handshake(https.clone(), server.clone(), "localhost").is_ok());
    assert!(handshake(https.clone(), server.clone(), "127.0.0.1").is_ok());
    let e = handshake(https, server.clone(), "other.example").unwrap_err();
    assert!(e.contains("not valid for name"), "{e}");
    assert!(handshake(off.clone(), server, "other.example").is_ok());
    // Without the name check the chain is still verified.
    let foreign = server_config(&broker(&[
        ("ssl.keystore.location", keys().path("server-bundle.pem")),
        ("ssl.truststore.location", keys().path("other-ca.pem")),
    ]))
    .unwrap();
    let off_other = client_config(&broker(&[
        ("ssl.endpoint.identification.algorithm", String::new()),
        ("ssl.truststore.location", keys().path("other-ca.pem")),
    ]))
    .unwrap();
    assert!(handshake(off_other, foreign, "localhost").is_err());
    let e = client_config(&broker(&[(
        "ssl.endpoint.identification.algorithm",
        "ldaps".into(),
    )]))
    .unwrap_err();
    assert_eq!(key_of(&e), "ssl.endpoint.identification.algorithm");
}

#[test]
fn subject_dns_render_as_java_prints_them() {
    let k = keys();
    assert_eq!(
        rfc2253_subject(&k.cert_der("server.pem")).unwrap(),
        "CN=localhost,OU=Brokers,O=shardlog tests,L=Palo Alto,ST=CA,C=US"
    );
    // A DN with every escaping rule, a multi-valued RDN, non-RFC 2253
    // keywords and non-ASCII text.
    let out = std::process::Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-utf8"])
        .args(["-keyout", "odd.key", "-out", "odd.pem", "-subj"])
        .arg("/C=US/ST=CA/L= Palo Alto /O=Acme\\, Inc.;x/OU=a\\+b=c#d/OU=Brokers/CN=Dùke \"J\" <x>+UID=42/emailAddress=a@b.c/DC=example/DC=com/street=Main St/serialNumber=123")
        .current_dir(k.dir())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let files = ["server.pem", "client.pem", "odd.pem", "expired.pem"];
    let ours: Vec<String> = files
        .iter()
        .map(|f| rfc2253_subject(&k.cert_der(f)).unwrap())
        .collect();
    assert_eq!(
        ours[2],
        "2.5.4.5=#1303313233,STREET=Main St,DC=com,DC=example,1.2.840.113549.1.9.1=#16056140622e63,\
         UID=42+CN=Dùke \\\"J\\\" \\<x\\>,OU=Brokers,OU=a\\+b\\=c\\#d,O=Acme\\, Inc.\\;x,L=\\ Palo Alto\\ ,ST=CA,C=US"
    );
    match java_dns(k, &files) {
        Some(java) => assert_eq!(ours, java),
        None => eprintln!("java not installed: DNs checked against the recorded Java output only"),
    }
}

#[test]
fn reloads_follow_kip_226() {
    let k = keys();
    let dir = tempfile::tempdir().unwrap();
    let live = dir.path().join("broker.pem");
    std::fs::copy(k.path("server-bundle.pem"), &live).unwrap();
    let live = live.to_string_lossy().into_owned();
    let at = |name: &str| broker(&[("ssl.keystore.location", k.path(name))]);
    let tls =
        Arc::new(ListenerTls::new(broker(&[("ssl.keystore.location", live.clone())])).unwrap());
    let serial = |tls: &ListenerTls| {
        let agreed = handshake(
            client_config(&broker(&[])).unwrap(),
            tls.server_config(),
            "localhost",
        )
        .unwrap();
        agreed.server_certificate.unwrap()
    };
    let first = tls.server_config();
    let original = serial(&tls);

    // Unchanged settings and file: nothing is rebuilt.
    tls.reload(tls.settings()).unwrap();
    assert!(Arc::ptr_eq(&first, &tls.server_config()));

    // The same file rewritten with a new certificate (same DN and SANs)
    // and a new modification time: reloaded.
    std::fs::copy(k.path("server2-bundle.pem"), &live).unwrap();
    let file = std::fs::File::options().write(true).open(&live).unwrap();
    file.set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(2_000_000_000))
        .unwrap();
    tls.reload(tls.settings()).unwrap();
    assert_ne!(serial(&tls), original);
    assert_eq!(serial(&tls).as_ref(), k.cert_der("server2.pem").as_slice());

    // Another DN or fewer SANs: refused, the config in force stays.
    let before = tls.server_config();
    let e = tls.reload(at("otherdn-bundle.pem")).unwrap_err();
    assert!(e.contains("DistinguishedName"), "{e}");
    let e = tls.reload(at("othersan-bundle.pem")).unwrap_err();
    assert!(e.contains("SubjectAltNames"), "{e}");
    assert!(Arc::ptr_eq(&before, &tls.server_config()));
    let mut allowed = at("otherdn-bundle.pem");
    allowed.allow_dn_changes = true;
    let e = tls.reload(allowed.clone()).unwrap_err();
    assert!(
        e.contains("Cannot update these configs dynamically: ssl.allow.dn.changes"),
        "{e}"
    );
    // ssl.allow.dn.changes set statically lets the DN change.
    let mut flexible = tls.settings();
    flexible.allow_dn_changes = true;
    let flexible = ListenerTls::new(flexible).unwrap();
    flexible.reload(allowed).unwrap();
    assert_eq!(
        serial(&flexible).as_ref(),
        k.cert_der("otherdn.pem").as_slice()
    );

    // A broken keystore, a removed keystore, a changed non-reconfigurable
    // key: refused with Kafka's messages.
    let e = tls
        .reload(broker(&[(
            "ssl.keystore.location",
            "/nonexistent.pem".into(),
        )]))
        .unwrap_err();
    assert!(e.contains("ssl.keystore.location"), "{e}");
    let mut no_keystore = tls.settings();
    no_keystore.keystore_location = None;
    let e = tls.reload(no_keystore).unwrap_err();
    assert!(e.contains("Cannot remove the SSL keystore"), "{e}");
    let e = tls
        .reload(broker(&[("ssl.client.auth", "required".into())]))
        .unwrap_err();
    assert!(
        e.contains("Cannot update these configs dynamically: ssl.client.auth"),
        "{e}"
    );

    // No truststore cannot become one.
    let bare = settings(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &k.path("server-bundle.pem")),
    ]);
    let tls = ListenerTls::new(bare.clone()).unwrap();
    let mut with_trust = bare;
    with_trust.truststore_type = super::StoreType::Pem;
    with_trust.truststore_location = Some(k.path("ca.pem"));
    let e = tls.reload(with_trust).unwrap_err();
    assert!(e.contains("Cannot add SSL truststore"), "{e}");
}

/// `ssl.allow.san.changes` (KIP-226, `SslFactory.CertificateEntries.ensureCompatible`):
/// a new keystore whose certificate lacks a SubjectAltName of the one in
/// force is refused unless the listener was configured with the key true;
/// the key itself is not dynamic.
#[test]
fn ssl_allow_san_changes_lets_a_reload_change_the_subject_alt_names() {
    let k = keys();
    let other_san = |allow: &str| {
        broker(&[
            ("ssl.allow.san.changes", allow.into()),
            ("ssl.keystore.location", k.path("othersan-bundle.pem")),
        ])
    };
    let strict = ListenerTls::new(broker(&[("ssl.allow.san.changes", "false".into())])).unwrap();
    let before = strict.server_config();
    let e = strict.reload(other_san("false")).unwrap_err();
    assert!(e.contains("Keystore SubjectAltNames do not match"), "{e}");
    assert!(Arc::ptr_eq(&before, &strict.server_config()));
    let e = strict.reload(other_san("true")).unwrap_err();
    assert!(
        e.contains("Cannot update these configs dynamically: ssl.allow.san.changes"),
        "{e}"
    );
    assert!(Arc::ptr_eq(&before, &strict.server_config()));

    let flexible = ListenerTls::new(broker(&[("ssl.allow.san.changes", "true".into())])).unwrap();
    flexible.reload(other_san("true")).unwrap();
    // The new certificate (SAN DNS:other.example only) is served.
    let agreed = handshake(
        client_config(&broker(&[])).unwrap(),
        flexible.server_config(),
        "other.example",
    )
    .unwrap();
    assert_eq!(
        agreed.server_certificate.unwrap().as_ref(),
        k.cert_der("othersan.pem").as_slice()
    );
}

#[test]
fn an_inter_broker_reload_must_handshake_both_ways() {
    let k = keys();
    let tls = ListenerTls::with_role(broker(&[]), true).unwrap();
    // A new keystore whose truststore no longer trusts the old certificate.
    let next = broker(&[("ssl.truststore.location", k.path("other-ca.pem"))]);
    let e = tls.reload(next).unwrap_err();
    assert!(e.contains("handshake"), "{e}");
    tls.reload(broker(&[(
        "ssl.keystore.location",
        k.path("server2-bundle.pem"),
    )]))
    .unwrap();
}

#[test]
fn server_properties_resolve_per_listener() {
    let k = keys();
    let text = format!(
        "listeners=PLAINTEXT://:9092\n\
         ssl.keystore.type=PKCS12\n\
         ssl.keystore.location=/nonexistent.p12\n\
         ssl.keystore.password=nope\n\
         listener.name.external.ssl.keystore.type=PEM\n\
         listener.name.external.ssl.keystore.location={}\n\
         listener.name.external.ssl.keystore.password=\n\
         ssl.truststore.type=PEM\n\
         ssl.truststore.location={}\n\
         ssl.client.auth=requested\n",
        k.path("server-bundle.pem"),
        k.path("ca.pem")
    );
    let loaded = ServerConfig::from_properties(&text, &[]).unwrap();
    let s = SslSettings::for_listener(&loaded.config, "EXTERNAL").unwrap();
    assert_eq!(
        s.keystore_location.as_deref(),
        Some(k.path("server-bundle.pem").as_str())
    );
    assert_eq!(s.keystore_password, None);
    assert_eq!(s.client_auth, super::ClientAuth::Requested);
    self_check(&s, "localhost").unwrap();
    let tls = ListenerTls::new(s).unwrap();
    assert_eq!(
        tls.principal_mapper().name_for("CN=x").unwrap(),
        "CN=x",
        "DEFAULT rules keep the DN"
    );
    // On a SASL_SSL listener the broker-wide ssl.client.auth does not apply.
    let sasl =
        format!("{text}listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTERNAL:SASL_SSL\n");
    let loaded = ServerConfig::from_properties(&sasl, &[]).unwrap();
    let s = SslSettings::for_listener(&loaded.config, "EXTERNAL").unwrap();
    assert_eq!(s.client_auth, super::ClientAuth::None);
}

/// `server.key` encrypted by `openssl pkcs8 -topk8 <args>` under
/// `keypass`, with the chain, written to `dir/<name>.pem`; `None` when this
/// openssl cannot write the scheme (RC2 and PBES1 need the legacy
/// provider).
fn encrypted_bundle(dir: &std::path::Path, name: &str, args: &[&str]) -> Option<String> {
    let k = keys();
    let key = dir.join(format!("{name}.key"));
    let out = std::process::Command::new("openssl")
        .args(["pkcs8", "-topk8", "-in", &k.path("server.key"), "-out"])
        .arg(&key)
        .args(["-passout", "pass:keypass"])
        .args(args)
        .output()
        .expect("openssl runs");
    if !out.status.success() {
        eprintln!(
            "openssl pkcs8 {args:?} failed, case skipped: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    let text = std::fs::read_to_string(&key).expect("the key") + &k.text("server-chain.pem");
    let path = dir.join(format!("{name}.pem"));
    std::fs::write(&path, text).expect("write the bundle");
    Some(path.to_string_lossy().into_owned())
}

/// Kafka 3.9 on JDK 17 reads a PEM keystore whose key is encrypted with a
/// PKCS#12 PBE scheme (`PemStore.privateKey` → the JDK's
/// `SecretKeyFactory`); shardlog reads those and PBES2.
#[test]
fn encrypted_pem_keys_load_in_every_scheme_kafka_or_openssl_writes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let legacy = ["-provider", "legacy", "-provider", "default"];
    let cases: Vec<(&str, Vec<&str>, bool)> = vec![
        ("pbes2-default", vec![], true),
        ("pbes2-aes128", vec!["-v2", "aes-128-cbc"], true),
        ("sha1-3des", vec!["-v1", "PBE-SHA1-3DES"], true),
        ("sha1-2des", vec!["-v1", "PBE-SHA1-2DES"], true),
        (
            "sha1-rc2-40",
            [&["-v1", "PBE-SHA1-RC2-40"][..], &legacy].concat(),
            false,
        ),
        (
            "sha1-rc2-128",
            [&["-v1", "PBE-SHA1-RC2-128"][..], &legacy].concat(),
            false,
        ),
        (
            "pbes1-sha1-des",
            [&["-v1", "PBE-SHA1-DES"][..], &legacy].concat(),
            false,
        ),
    ];
    let mut loaded = 0;
    for (name, args, required) in cases {
        let Some(path) = encrypted_bundle(dir.path(), name, &args) else {
            assert!(!required, "{name}: openssl must write this scheme");
            continue;
        };
        let base = [
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", path.as_str()),
            ("ssl.truststore.type", "PEM"),
        ];
        let truststore = keys().path("ca.pem");
        let mut good = base.to_vec();
        good.extend([
            ("ssl.truststore.location", truststore.as_str()),
            ("ssl.key.password", "keypass"),
        ]);
        let s = settings(&good);
        self_check(&s, "localhost").unwrap_or_else(|e| panic!("{name}: {e}"));
        // The same key inline (`ssl.keystore.key`).
        let key_text =
            std::fs::read_to_string(dir.path().join(format!("{name}.key"))).expect("the key");
        let chain = keys().text("server-chain.pem");
        let ca = keys().text("ca.pem");
        let inline = settings(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.key", key_text.as_str()),
            ("ssl.keystore.certificate.chain", chain.as_str()),
            ("ssl.key.password", "keypass"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.certificates", ca.as_str()),
        ]);
        self_check(&inline, "localhost").unwrap_or_else(|e| panic!("{name} inline: {e}"));
        let mut wrong = base.to_vec();
        wrong.extend([
            ("ssl.truststore.location", truststore.as_str()),
            ("ssl.key.password", "wrongpass"),
        ]);
        let e = store_error(&wrong);
        assert_eq!(key_of(&e), "ssl.key.password", "{name}: {e}");
        assert!(e.to_string().contains("did not decrypt"), "{name}: {e}");
        assert!(!e.to_string().contains("keypass"), "{name}: {e}");
        loaded += 1;
    }
    assert!(loaded >= 4, "only {loaded} schemes were exercised");
}

/// A scheme shardlog does not decrypt names the key and the scheme; a
/// keystore file's errors show its location (only passwords and inline
/// PEM values are hidden).
#[test]
fn unknown_pem_key_schemes_and_bad_files_name_the_key_and_show_the_location() {
    let dir = tempfile::tempdir().expect("tempdir");
    let k = keys();
    let legacy = [
        "-v1",
        "PBE-MD5-DES",
        "-provider",
        "legacy",
        "-provider",
        "default",
    ];
    if let Some(path) = encrypted_bundle(dir.path(), "md5-des", &legacy) {
        let e = store_error(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &path),
            ("ssl.key.password", "keypass"),
        ]);
        assert_eq!(key_of(&e), "ssl.keystore.location", "{e}");
        let text = e.to_string();
        assert!(
            text.contains("does not decrypt") && text.contains("ssl.key.password"),
            "{e}"
        );
        assert!(text.contains(&path) && !text.contains("[hidden]"), "{e}");
        let key_text = std::fs::read_to_string(dir.path().join("md5-des.key")).expect("key");
        let chain = k.text("server-chain.pem");
        let e = store_error(&[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.key", &key_text),
            ("ssl.keystore.certificate.chain", &chain),
            ("ssl.key.password", "keypass"),
        ]);
        assert_eq!(key_of(&e), "ssl.keystore.key", "{e}");
        assert!(e.to_string().contains("[hidden]"), "{e}");
        assert!(!e.to_string().contains("BEGIN"), "the key leaked: {e}");
    }
    let p12 = k.path("server.p12");
    let e = store_error(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &p12),
    ]);
    assert_eq!(key_of(&e), "ssl.keystore.location", "{e}");
    assert!(e.to_string().contains(&p12), "the location is shown: {e}");
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMAMCAQA=\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .expect("write");
    let garbage = garbage.to_string_lossy().into_owned();
    let e = store_error(&[
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &garbage),
        ("ssl.key.password", "keypass"),
    ]);
    assert_eq!(key_of(&e), "ssl.keystore.location", "{e}");
    assert!(e.to_string().contains("not an encrypted PKCS#8 key"), "{e}");
}
