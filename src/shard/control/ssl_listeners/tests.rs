use super::*;
use std::path::Path;
use std::process::Command;

/// A PEM keystore (PKCS#8 key + self-signed certificate for `cn`, SAN
/// localhost) made by openssl at `dir/name`.
fn keystore(dir: &Path, name: &str, cn: &str) -> String {
    let key = dir.join(format!("{name}.key"));
    let cert = dir.join(format!("{name}.crt"));
    let out = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args([
            "-subj",
            &format!("/CN={cn}"),
            "-addext",
            "subjectAltName=DNS:localhost",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both = dir.join(format!("{name}.pem"));
    let text = std::fs::read_to_string(&key).unwrap() + &std::fs::read_to_string(&cert).unwrap();
    std::fs::write(&both, text).unwrap();
    both.display().to_string()
}

/// The static SSL keys of a listener named SSL (Kafka's default protocol
/// map makes it an SSL listener).
fn config(location: &str) -> ServerConfig {
    let mut config = ServerConfig::default();
    config
        .ssl_keys
        .insert("ssl.keystore.type".into(), "PEM".into());
    config
        .ssl_keys
        .insert("ssl.keystore.location".into(), location.into());
    config
}

fn dynamic<'a>(pairs: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
}

#[test]
fn a_keystore_update_is_checked_then_applied_and_a_bad_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let first = keystore(dir.path(), "first", "broker");
    let rotated = keystore(dir.path(), "rotated", "broker");
    let other = keystore(dir.path(), "other", "someone-else");
    let config = config(&first);
    let tls =
        Arc::new(ListenerTls::new(SslSettings::for_listener(&config, "SSL").unwrap()).unwrap());
    let mut listeners = SslListeners::new(&config);
    listeners.add(&config, "SSL", tls.clone());
    let location = "listener.name.ssl.ssl.keystore.location";
    let in_force = |tls: &ListenerTls| format!("{:?}", tls.settings().keystore_location);

    // Same subject, new key and certificate: valid; validation changes nothing.
    let to_rotated = [(location, rotated.clone())];
    assert_eq!(listeners.validate("ssl", &dynamic(&to_rotated)), Ok(()));
    assert!(in_force(&tls).contains("first.pem"), "{}", in_force(&tls));
    assert_eq!(listeners.reconfigure("SSL", &dynamic(&to_rotated)), Ok(()));
    assert!(in_force(&tls).contains("rotated.pem"), "{}", in_force(&tls));

    // Another subject DN (no ssl.allow.dn.changes): refused, old stays.
    let to_other = [(location, other)];
    let err = listeners.validate("ssl", &dynamic(&to_other)).unwrap_err();
    assert!(err.contains("DistinguishedName"), "{err}");
    assert!(listeners.reconfigure("ssl", &dynamic(&to_other)).is_err());
    assert!(in_force(&tls).contains("rotated.pem"), "{}", in_force(&tls));
    // A keystore that is not there.
    let missing = [(location, dir.path().join("nope.pem").display().to_string())];
    assert!(listeners.validate("ssl", &dynamic(&missing)).is_err());
    // A listener without TLS.
    let err = listeners
        .validate("plain", &dynamic(&to_rotated))
        .unwrap_err();
    assert_eq!(err, "Listener plain of this broker does not use SSL");
}
