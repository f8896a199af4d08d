//! Dynamic broker password configs as Kafka 3.9 stores them (KIP-226;
//! `DynamicBrokerConfig.toPersistentProps` / `fromPersistentProps`,
//! server-common `EncryptingPasswordEncoder`), against Kafka's own Java
//! code (`tests/java/src/shardlog/PasswordCodec.java` calls
//! `PasswordEncoder.encrypting(…)` from the 3.9 jars) and Kafka's real
//! `kafka-configs` (ConfigCommand), with one shardlog broker in ZooKeeper
//! mode:
//!
//! - a value Kafka's encoder writes decodes in shardlog and the other way
//!   round, for the CBC default, GCM, other key lengths and PBKDF2 SHA1;
//! - `kafka-configs --bootstrap-server … --alter` of a password key:
//!   `/config/brokers/<id>` holds it encoded (Kafka's Java decodes it with
//!   the broker's `password.encoder.secret`), a `/config/changes`
//!   notification names `brokers/<id>`, DescribeConfigs shows it sensitive
//!   with a null value;
//! - the refusals of listener SSL keys with Kafka's messages (unprefixed,
//!   at `<default>`, another broker's id, a listener without SSL), with
//!   `validate_only` storing nothing;
//! - `password.encoder.old.secret` re-encodes the stored passwords at
//!   start; a password `kafka-configs --zookeeper` wrote while the broker
//!   was down (Kafka's tool encoding it) is read at start.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::cluster::{children, json, read};
use common::replica_cluster::{ReplCluster, System};
use kafka_protocol::protocol::StrBytes;
use rand::RngCore;
use shardlog::config::password_encoder::{parse_csv_map, PasswordEncoder};

/// Kafka's encoder through `PasswordCodec`: (result, error).
fn java(
    op: &str,
    secret: &str,
    cipher: &str,
    bits: i32,
    iters: i32,
    kf: Option<&str>,
    value: &str,
) -> Result<String, String> {
    let bits = bits.to_string();
    let iters = iters.to_string();
    let r = common::java::run_program(
        "PasswordCodec",
        &[op, secret, cipher, &bits, &iters, kf.unwrap_or("-"), value],
    );
    match (r["result"].as_str(), r["error"].as_str()) {
        (Some(v), _) => Ok(v.to_owned()),
        (None, e) => Err(e.unwrap_or("no error message").to_owned()),
    }
}

fn os_random(buf: &mut [u8]) {
    rand::rngs::OsRng.fill_bytes(buf);
}

#[test]
fn kafkas_java_encoder_and_shardlogs_read_each_others_values() {
    let password = "pässwörd,with:separators-😀";
    for (cipher, bits, iters, kf) in [
        ("AES/CBC/PKCS5Padding", 128, 4096, None),
        ("AES/GCM/NoPadding", 128, 4096, None),
        ("AES/GCM/NoPadding", 256, 2048, Some("PBKDF2WithHmacSHA512")),
        (
            "AES/CBC/PKCS5Padding",
            256,
            1024,
            Some("PBKDF2WithHmacSHA1"),
        ),
    ] {
        let what = format!("{cipher} {bits} {iters} {kf:?}");
        let ours = PasswordEncoder::new("the-secret", kf, cipher, bits, iters).unwrap();
        let by_kafka = java("encode", "the-secret", cipher, bits, iters, kf, password).unwrap();
        assert_eq!(
            ours.decode(&by_kafka).as_deref(),
            Ok(password),
            "{what}: {by_kafka}"
        );
        let by_us = ours.encode(password, &mut os_random).unwrap();
        let decoded = java("decode", "the-secret", cipher, bits, iters, kf, &by_us);
        assert_eq!(decoded.as_deref(), Ok(password), "{what}: {by_us}");
        // The secret matters: Kafka refuses ours under another one.
        let wrong = java("decode", "other", cipher, bits, iters, kf, &by_us);
        assert!(wrong.is_err(), "{what}: {wrong:?}");
    }
}

/// kafka-configs (Kafka's ConfigCommand) against the cluster: whether it
/// succeeded, and its output.
fn kafka_configs(c: &ReplCluster, args: &[&str]) -> (bool, String) {
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args(["--bootstrap-server", &c.bootstrap()]).args(args);
    let out = cmd.output().expect("run kafka-configs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// `kafka-configs --entity-type brokers --entity-name 1 --alter
/// --add-config <config>`.
fn alter_broker_1(c: &ReplCluster, config: &str) -> (bool, String) {
    kafka_configs(
        c,
        &[
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--alter",
            "--add-config",
            config,
        ],
    )
}

/// Broker 1's `/config/brokers/1` config.
fn stored(c: &ReplCluster) -> serde_json::Value {
    let path = "/config/brokers/1";
    let (data, _) = read(&c.zk.address(), &[path])[path]
        .clone()
        .expect("/config/brokers/1");
    json(&data)
}

/// Broker 1 describing `key` of itself: (value, source, sensitive).
fn describe(c: &mut ReplCluster, key: &str) -> Option<(Option<String>, i8, bool)> {
    use kafka_protocol::messages::describe_configs_request::{
        DescribeConfigsRequest, DescribeConfigsResource,
    };
    let mut conn = common::Conn::open_addr(&c.node(1).link.address());
    let request =
        DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("1"))
            .with_configuration_keys(None)]);
    let r = conn.call(4, &request);
    assert_eq!(r.results[0].error_code, 0, "{:?}", r.results[0]);
    r.results[0]
        .configs
        .iter()
        .find(|e| e.name.as_str() == key)
        .map(|e| {
            (
                e.value.as_ref().map(|v| v.to_string()),
                e.config_source,
                e.is_sensitive,
            )
        })
}

/// IncrementalAlterConfigs SET of `key=value` on BROKER `name`, sent to
/// broker 1: (error code, message).
fn incremental_set(
    c: &mut ReplCluster,
    name: &str,
    key: &str,
    value: &str,
    validate_only: bool,
) -> (i16, String) {
    use kafka_protocol::messages::incremental_alter_configs_request::{
        AlterConfigsResource, AlterableConfig, IncrementalAlterConfigsRequest,
    };
    let mut conn = common::Conn::open_addr(&c.node(1).link.address());
    let request = IncrementalAlterConfigsRequest::default()
        .with_resources(vec![AlterConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_string(name.to_owned()))
            .with_configs(vec![AlterableConfig::default()
                .with_name(StrBytes::from_string(key.to_owned()))
                .with_config_operation(0)
                .with_value(Some(StrBytes::from_string(value.to_owned())))])])
        .with_validate_only(validate_only);
    let r = conn.call(1, &request);
    let one = &r.responses[0];
    (
        one.error_code,
        one.error_message
            .as_ref()
            .map(|m| m.to_string())
            .unwrap_or_default(),
    )
}

const SECRET: &str = "broker-secret";
/// A key Kafka treats as a password (`isPasswordConfig`: the name ends
/// with `ssl.keystore.password`) that names no listener: stored encoded as
/// Kafka stores it, and needs no SSL listener to accept it.
const PW_KEY: &str = "custom.ssl.keystore.password";
/// `DescribeConfigsResponse.ConfigSource.DYNAMIC_BROKER_CONFIG`.
const DYNAMIC_BROKER: i8 = 2;
/// Kafka's INVALID_REQUEST: ZkAdminManager wraps a broker config's
/// ConfigException in an InvalidRequestException.
const INVALID_REQUEST: i16 = 42;

fn decode_stored(c: &ReplCluster, key: &str, secret: &str) -> Result<String, String> {
    let config = stored(c);
    let value = config["config"][key]
        .as_str()
        .unwrap_or_else(|| panic!("{key} in {config}"));
    let fields = parse_csv_map(value);
    let int = |k: &str| fields[k].parse::<i32>().unwrap();
    java(
        "decode",
        secret,
        &fields["cipherAlgorithm"],
        int("keyLength"),
        int("iterations"),
        None,
        value,
    )
}

#[test]
fn passwords_are_stored_encoded_and_security_keys_refused_as_kafka_does() {
    let mut c = ReplCluster::start(
        System::Shardlog,
        1,
        &[&format!("password.encoder.secret={SECRET}")],
    );
    // Refusals, each with Kafka's message (kafka-configs first: once a
    // sensitive key is stored, its legacy AlterConfigs needs it resent).
    let (ok, out) = alter_broker_1(&c, "ssl.keystore.location=/tmp/x.p12");
    assert!(
        !ok && out.contains("These security configs can be dynamically updated only per-listener using the listener prefix: Set(ssl.keystore.location)"),
        "{out}"
    );
    let (ok, out) = kafka_configs(
        &c,
        &[
            "--entity-type",
            "brokers",
            "--entity-default",
            "--alter",
            "--add-config",
            "listener.name.plaintext.ssl.keystore.location=/tmp/x.p12",
        ],
    );
    assert!(
        !ok && out.contains("Cannot update these configs at default cluster level, broker id must be specified: Set(listener.name.plaintext.ssl.keystore.location)"),
        "{out}"
    );
    let before = children(&c.zk.address(), "/config/changes").len();
    let (ok, out) = alter_broker_1(&c, &format!("{PW_KEY}=top-secret"));
    assert!(
        ok && out.contains("Completed updating config for broker 1"),
        "{out}"
    );
    // Stored as Kafka's encoder writes it; Kafka's Java decodes it.
    let value = stored(&c)["config"][PW_KEY].as_str().unwrap().to_owned();
    let fields = parse_csv_map(&value);
    assert_eq!(fields["cipherAlgorithm"], "AES/CBC/PKCS5Padding", "{value}");
    assert_eq!(
        fields["keyFactoryAlgorithm"], "PBKDF2WithHmacSHA512",
        "{value}"
    );
    assert!(!value.contains("top-secret"));
    assert_eq!(
        decode_stored(&c, PW_KEY, SECRET).as_deref(),
        Ok("top-secret")
    );
    let changes = children(&c.zk.address(), "/config/changes");
    assert!(changes.len() > before, "{changes:?}");
    let newest = format!("/config/changes/{}", changes.iter().max().unwrap());
    let (data, _) = read(&c.zk.address(), &[&newest])[&newest].clone().unwrap();
    assert_eq!(
        json(&data),
        serde_json::json!({"version": 2, "entity_path": "brokers/1"})
    );
    // DescribeConfigs: sensitive, no value.
    common::cluster::wait_for(30, "the password config described", || {
        (describe(&mut c, PW_KEY) == Some((None, DYNAMIC_BROKER, true))).then_some(())
    });

    refused_over_the_protocol(&mut c);
    secrets_change_across_restarts(&mut c);
}

/// IncrementalAlterConfigs refusals and validate_only, sent to broker 1
/// (which holds `PW_KEY` under `SECRET`).
fn refused_over_the_protocol(c: &mut ReplCluster) {
    let (code, message) = incremental_set(
        c,
        "2",
        "listener.name.plaintext.ssl.keystore.location",
        "/x",
        false,
    );
    assert_eq!(
        (code, message.as_str()),
        (
            INVALID_REQUEST,
            "Unexpected broker id, expected 1, but received 2"
        )
    );
    // A listener without TLS has no keystore to reconfigure.
    let (code, message) = incremental_set(
        c,
        "1",
        "listener.name.plaintext.ssl.keystore.location",
        "/x",
        false,
    );
    assert_eq!(
        (code, message.as_str()),
        (INVALID_REQUEST, "Invalid config value for resource ConfigResource(type=BROKER, name='1'): Invalid dynamic configuration")
    );
    // A password at <default>: Kafka's message, nothing stored.
    let (code, message) = incremental_set(c, "", PW_KEY, "x", false);
    assert_eq!(
        (code, message.as_str()),
        (INVALID_REQUEST, "Invalid config value for resource ConfigResource(type=BROKER, name=''): Password config can be defined only at broker level")
    );
    // validate_only: accepted, nothing written.
    let (code, _) = incremental_set(c, "1", "other.ssl.key.password", "v", true);
    assert_eq!(code, 0);
    assert!(stored(c)["config"].get("other.ssl.key.password").is_none());
    assert_eq!(
        decode_stored(c, PW_KEY, SECRET).as_deref(),
        Ok("top-secret")
    );
}

/// A new secret with the old one given, a password written by
/// `kafka-configs --zookeeper`, and a secret that decodes nothing.
fn secrets_change_across_restarts(c: &mut ReplCluster) {
    // A new secret, the old one given: re-encoded at start.
    c.node(1).stop();
    c.node(1).add_setting("password.encoder.secret=new-secret");
    c.node(1)
        .add_setting(&format!("password.encoder.old.secret={SECRET}"));
    c.restart(1);
    common::cluster::wait_for(30, "the password re-encoded", || {
        decode_stored(c, PW_KEY, "new-secret").ok()
    });
    assert_eq!(
        decode_stored(c, PW_KEY, "new-secret").as_deref(),
        Ok("top-secret")
    );
    assert!(decode_stored(c, PW_KEY, SECRET).is_err());
    assert_eq!(describe(c, PW_KEY), Some((None, DYNAMIC_BROKER, true)));

    // Kafka's kafka-configs --zookeeper while the broker is down, encoding
    // with the secret given on its command line; read at the next start.
    c.node(1).stop();
    let mut cmd = common::java::kafka_tool("kafka.admin.ConfigCommand");
    cmd.args([
        "--zookeeper",
        &c.zk.address(),
        "--entity-type",
        "brokers",
        "--entity-name",
        "1",
    ])
    .args([
        "--alter",
        "--add-config",
        "zk.ssl.key.password=from-zk,password.encoder.secret=new-secret",
    ]);
    let out = common::java::run_ok(&mut cmd, "kafka-configs --zookeeper");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Completed updating config"));
    assert_eq!(
        decode_stored(c, "zk.ssl.key.password", "new-secret").as_deref(),
        Ok("from-zk")
    );
    c.restart(1);
    common::cluster::wait_for(30, "both passwords read", || {
        (describe(c, "zk.ssl.key.password") == Some((None, DYNAMIC_BROKER, true))
            && describe(c, PW_KEY) == Some((None, DYNAMIC_BROKER, true)))
        .then_some(())
    });
    // Under a secret that cannot decode them, they are ignored (Kafka logs
    // "could not be decoded, ignoring" and leaves them out).
    c.node(1).stop();
    c.node(1)
        .add_setting("password.encoder.secret=a-third-secret");
    c.restart(1);
    common::cluster::wait_for(30, "undecodable passwords left out", || {
        describe(c, PW_KEY).is_none().then_some(())
    });
    assert_eq!(describe(c, "zk.ssl.key.password"), None);
}
