use super::*;
use crate::config::dynamic::validate;
use crate::config::password_encoder::{parse_csv_map, DEFAULT_CIPHER};
use crate::config::ServerConfig;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn encoder(secret: &str) -> PasswordEncoder {
    PasswordEncoder::new(secret, None, DEFAULT_CIPHER, 128, 1024).unwrap()
}

fn ones(b: &mut [u8]) {
    b.fill(1);
}

#[test]
fn listener_prefixed_ssl_keys_are_dynamic_per_broker() {
    let base = ServerConfig::default();
    let keys = map(&[
        ("listener.name.external.ssl.keystore.location", "/k.p12"),
        ("listener.name.external.ssl.keystore.password", "pw"),
        ("listener.name.external.ssl.keystore.type", "PKCS12"),
        (
            "listener.name.external.ssl.truststore.certificates",
            "-----BEGIN",
        ),
        ("log.retention.ms", "1000"),
    ]);
    assert_eq!(validate(&base, &keys, true), Ok(()));
    assert_eq!(
        validate(&base, &keys, false),
        Err("Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.external.ssl.keystore.location, listener.name.external.ssl.keystore.password, listener.name.external.ssl.keystore.type, listener.name.external.ssl.truststore.certificates)".into())
    );
}

#[test]
fn unprefixed_security_keys_are_refused_with_kafkas_message() {
    let base = ServerConfig::default();
    let keys = map(&[
        ("ssl.keystore.location", "/k.p12"),
        ("ssl.keystore.password", "pw"),
    ]);
    let expected = "These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location, ssl.keystore.password)";
    assert_eq!(validate(&base, &keys, true), Err(expected.into()));
    assert_eq!(validate(&base, &keys, false), Err(expected.into()));
}

#[test]
fn listener_keys_a_running_listener_cannot_take_are_static() {
    let base = ServerConfig::default();
    let keys = map(&[
        ("listener.name.external.ssl.client.auth", "required"),
        ("listener.name.external.ssl.keystore.location", "/k.p12"),
        ("num.partitions", "2"),
    ]);
    assert_eq!(
        validate(&base, &keys, true),
        Err("Cannot update these configs dynamically: Set(listener.name.external.ssl.client.auth, num.partitions)".into())
    );
}

#[test]
fn listener_keys_parse_as_kafkas_regex() {
    assert_eq!(
        listener_key("listener.name.external.ssl.keystore.location"),
        Some(("external", "ssl.keystore.location"))
    );
    assert_eq!(listener_key("listener.name.external"), None);
    assert_eq!(listener_key("listener.name.x."), None);
    assert_eq!(listener_key("ssl.keystore.location"), None);
    assert!(is_password_config(
        "listener.name.external.ssl.keystore.password"
    ));
    assert!(is_password_config("ssl.keystore.key"));
    assert!(!is_password_config(
        "listener.name.external.ssl.keystore.location"
    ));
}

#[test]
fn passwords_are_stored_encoded_and_read_back() {
    let config = map(&[
        ("listener.name.ssl.ssl.keystore.location", "/k.p12"),
        ("listener.name.ssl.ssl.keystore.password", "ks-pw"),
        ("listener.name.ssl.ssl.key.password", "key-pw"),
    ]);
    let e = encoder("s3cret");
    let stored = encode_passwords(&config, true, Some(&e), &mut ones).unwrap();
    assert_eq!(stored["listener.name.ssl.ssl.keystore.location"], "/k.p12");
    for k in [
        "listener.name.ssl.ssl.keystore.password",
        "listener.name.ssl.ssl.key.password",
    ] {
        let fields = parse_csv_map(&stored[k]);
        assert_eq!(fields["cipherAlgorithm"], "AES/CBC/PKCS5Padding", "{k}");
        assert!(!stored[k].contains("pw"), "{k}");
    }
    let (read, dropped) = decode_stored(stored.clone(), true, Some(&e));
    assert_eq!(read, config);
    assert!(dropped.is_empty());
    // Another secret: the passwords are dropped and named, the rest kept.
    let (read, dropped) = decode_stored(stored.clone(), true, Some(&encoder("other")));
    assert_eq!(
        read,
        map(&[("listener.name.ssl.ssl.keystore.location", "/k.p12")])
    );
    assert_eq!(dropped.len(), 2);
    let (_, dropped) = decode_stored(stored, true, None);
    assert!(dropped
        .iter()
        .all(|(_, why)| why == "Password encoder secret not configured"));
}

#[test]
fn password_errors_are_kafkas() {
    let config = map(&[("listener.name.ssl.ssl.keystore.password", "pw")]);
    assert_eq!(
        encode_passwords(&config, true, None, &mut ones),
        Err("Password encoder secret not configured".into())
    );
    assert_eq!(
        encode_passwords(&config, false, Some(&encoder("s")), &mut ones),
        Err("Password config can be defined only at broker level".into())
    );
    // Nothing to encode: no secret needed.
    let plain = map(&[("log.retention.ms", "5")]);
    assert_eq!(encode_passwords(&plain, false, None, &mut ones), Ok(plain));
}

#[test]
fn per_broker_keys_stored_at_default_are_ignored() {
    let stored = map(&[
        ("listener.name.ssl.ssl.keystore.location", "/k.p12"),
        ("log.retention.ms", "5"),
    ]);
    let (read, dropped) = decode_stored(stored, false, None);
    assert_eq!(read, map(&[("log.retention.ms", "5")]));
    assert_eq!(dropped[0].0, "listener.name.ssl.ssl.keystore.location");
}

#[test]
fn the_old_secret_is_replaced_by_the_new_one() {
    let (old, new) = (encoder("old"), encoder("new"));
    let stored = encode_passwords(
        &map(&[
            ("listener.name.ssl.ssl.keystore.password", "pw"),
            ("listener.name.ssl.ssl.keystore.location", "/k"),
        ]),
        true,
        Some(&old),
        &mut ones,
    )
    .unwrap();
    let again = reencode(&stored, &old, &new, &mut ones).unwrap().unwrap();
    assert_eq!(
        decode_stored(again.clone(), true, Some(&new)).0["listener.name.ssl.ssl.keystore.password"],
        "pw"
    );
    assert_eq!(again["listener.name.ssl.ssl.keystore.location"], "/k");
    // Already under the new secret: kept as it is.
    assert_eq!(
        reencode(&again, &old, &new, &mut ones).unwrap().unwrap(),
        again
    );
    assert_eq!(
        reencode(&map(&[("a", "b")]), &old, &new, &mut ones),
        Ok(None)
    );
}

#[test]
fn a_listener_is_reconfigured_when_its_ssl_keys_change() {
    let old = map(&[
        ("listener.name.a.ssl.keystore.location", "/1"),
        ("listener.name.b.ssl.keystore.location", "/1"),
        ("log.retention.ms", "1"),
    ]);
    let new = map(&[
        ("listener.name.a.ssl.keystore.location", "/1"),
        ("listener.name.b.ssl.keystore.location", "/2"),
        ("listener.name.c.ssl.truststore.location", "/t"),
        ("log.retention.ms", "2"),
    ]);
    let changed: Vec<String> = changed_listeners(&old, &new).into_iter().collect();
    assert_eq!(changed, ["b", "c"]);
    // Deleting a listener's key changes it too.
    let changed: Vec<String> = changed_listeners(&new, &old).into_iter().collect();
    assert_eq!(changed, ["b", "c"]);
    let named: Vec<String> = listeners_named(&new).into_iter().collect();
    assert_eq!(named, ["a", "b", "c"]);
    let default = map(&[("listener.name.a.ssl.keystore.type", "PEM")]);
    let look = dynamic_lookup(&new, &default);
    assert_eq!(
        look("listener.name.b.ssl.keystore.location").as_deref(),
        Some("/2")
    );
    assert_eq!(
        look("listener.name.a.ssl.keystore.type").as_deref(),
        Some("PEM")
    );
    assert_eq!(look("ssl.keystore.location"), None);
}

#[test]
fn dynamic_passwords_are_described_sensitive_without_value() {
    use crate::config::topic::{ConfigSource, ConfigType};
    let dynamic = crate::config::dynamic::DynamicBrokerConfigs {
        cluster_default: map(&[("log.retention.ms", "5")]),
        per_broker: map(&[
            ("listener.name.ssl.ssl.keystore.password", "pw"),
            ("listener.name.ssl.ssl.keystore.location", "/k"),
        ]),
    };
    let entries = ServerConfig::default().describe_broker(&dynamic, None);
    let pw = entries
        .iter()
        .find(|e| e.name == "listener.name.ssl.ssl.keystore.password")
        .unwrap();
    assert_eq!(pw.value, None);
    assert!(pw.is_sensitive);
    assert_eq!(pw.config_type, ConfigType::Password);
    assert_eq!(pw.source, ConfigSource::DynamicBrokerConfig);
    assert!(pw.synonyms.iter().all(|s| s.value.is_none()));
    let loc = entries
        .iter()
        .find(|e| e.name == "listener.name.ssl.ssl.keystore.location")
        .unwrap();
    assert_eq!(loc.value.as_deref(), Some("/k"));
    assert!(!loc.is_sensitive && !loc.read_only);
}
