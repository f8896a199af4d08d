//! `[pure]` Unit tests of named listeners (Kafka's `KafkaConfigTest`
//! listener cases, read against `KafkaConfig.validateValues`).

use super::*;

fn load(text: &str) -> Result<ServerConfig, ConfigError> {
    ServerConfig::from_properties(text, &[]).map(|l| l.config)
}

/// The key and reason of a refused config.
fn refused(text: &str) -> (String, String) {
    match load(text) {
        Err(ConfigError::InvalidValue { key, reason, .. }) => (key, reason),
        other => panic!("{text}: expected a refusal, got {other:?}"),
    }
}

const TWO: &str = "listeners=internal://127.0.0.1:9092,EXTERNAL://:9093\n\
                   listener.security.protocol.map=INTERNAL:PLAINTEXT,external:plaintext\n\
                   inter.broker.listener.name=internal\n";

#[test]
fn named_listeners_are_upper_cased_and_mapped() {
    let c = load(TWO).unwrap();
    let names: Vec<&str> = c.listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["INTERNAL", "EXTERNAL"]);
    assert_eq!(c.listeners[1].host, "");
    assert_eq!(c.inter_broker_listener(), "INTERNAL");
    assert_eq!(c.controller_listener(), "INTERNAL");
    assert_eq!(c.control_plane_listener(), None);
    assert_eq!(c.listener_protocol("EXTERNAL"), SecurityProtocol::Plaintext);
}

#[test]
fn the_default_map_is_kafkas_identity_map() {
    let c = ServerConfig::default();
    assert_eq!(
        ConfigValue::show_value(&c.listener_security_protocol_map).as_deref(),
        Some("SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT")
    );
    for p in SecurityProtocol::ALL {
        assert_eq!(c.listener_protocol(p.name()), p);
        assert_eq!(p.name().parse::<SecurityProtocol>(), Ok(p));
    }
    let ids: Vec<i16> = SecurityProtocol::ALL.iter().map(|p| p.id()).collect();
    assert_eq!(ids, [0, 1, 2, 3]);
    assert_eq!("sasl_ssl".parse(), Ok(SecurityProtocol::SaslSsl));
    assert!("TLS".parse::<SecurityProtocol>().is_err());
}

#[test]
fn endpoints_parse_as_kafkas_regex_matches_them() {
    let l = parse_listener("CLIENT://[::1]:9092").unwrap();
    assert_eq!(
        (l.name.as_str(), l.host.as_str(), l.port),
        ("CLIENT", "::1", 9092)
    );
    assert_eq!(l.to_string(), "CLIENT://[::1]:9092");
    let l = parse_listener("a-b://host.example.com:0").unwrap();
    assert_eq!((l.name.as_str(), l.port), ("A-B", 0));
    for bad in [
        "PLAINTEXT://h",
        "PLAINTEXT:/h:1",
        "PLAINTEXT://h/x:1",
        "PLAINTEXT://h:",
        "PLAINTEXT://h:1x",
        "PLAINTEXT://h:70000",
        "PLAINTEXT://h:-1",
    ] {
        assert!(parse_listener(bad).is_err(), "{bad}");
    }
}

#[test]
fn control_plane_listener_is_separate_and_advertised() {
    let c = load(&format!(
        "{TWO}listeners=INTERNAL://127.0.0.1:9092,EXTERNAL://:9093,CONTROL://127.0.0.1:9094\n\
         listener.security.protocol.map=INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROL:PLAINTEXT\n\
         control.plane.listener.name=control\n"
    ))
    .unwrap();
    assert_eq!(c.control_plane_listener(), Some("CONTROL"));
    assert_eq!(c.controller_listener(), "CONTROL");
    assert_eq!(c.inter_broker_listener(), "INTERNAL");
}

#[test]
fn listener_mistakes_stop_the_start_naming_the_key() {
    let rows: [(&str, &str, &str); 11] = [
        (
            "listeners=A://h:1,a://h:2\nlistener.security.protocol.map=A:PLAINTEXT\n\
             security.inter.broker.protocol=PLAINTEXT",
            "listeners",
            "different name",
        ),
        (
            "listeners=PLAINTEXT://h:1,B://h:1\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,B:PLAINTEXT",
            "listeners",
            "different port",
        ),
        (
            "listeners=PLAINTEXT://h:1,B://h:2",
            "listeners",
            "No security protocol defined for listener B",
        ),
        (
            "listener.security.protocol.map=PLAINTEXT:TLS",
            "listener.security.protocol.map",
            "Invalid security protocol",
        ),
        (
            "inter.broker.listener.name=PLAINTEXT\nsecurity.inter.broker.protocol=PLAINTEXT",
            "inter.broker.listener.name",
            "Only one of",
        ),
        (
            "listeners=A://h:1\nlistener.security.protocol.map=A:PLAINTEXT",
            "security.inter.broker.protocol",
            "not found",
        ),
        (
            "listeners=A://h:1,B://h:2\nadvertised.listeners=A://h:1\n\
             listener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\ninter.broker.listener.name=B",
            "inter.broker.listener.name",
            "advertised.listeners",
        ),
        (
            "advertised.listeners=PLAINTEXT://0.0.0.0:9092",
            "advertised.listeners",
            "0.0.0.0",
        ),
        (
            "advertised.listeners=PLAINTEXT://h:1,OTHER://h:2\n\
             listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            "advertised.listeners",
            "subset",
        ),
        (
            "listeners=A://h:1,B://h:2\nlistener.security.protocol.map=A:PLAINTEXT,B:PLAINTEXT\n\
             inter.broker.listener.name=A\ncontrol.plane.listener.name=a",
            "control.plane.listener.name",
            "different value",
        ),
        (
            "listeners=PLAINTEXT://h:1,SASL_SSL://h:2",
            "sasl.enabled.mechanisms",
            "GSSAPI (Kerberos, Kafka's default) is not supported",
        ),
    ];
    for (text, key, reason) in rows {
        let (k, r) = refused(text);
        assert_eq!(k, key, "{text}: {r}");
        assert!(r.contains(reason), "{text}: {r}");
    }
}

#[test]
fn ipv4_and_ipv6_may_share_a_port_and_port_zero_repeats() {
    load(
        "listeners=PLAINTEXT://127.0.0.1:9092,B://[::1]:9092\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,B:PLAINTEXT",
    )
    .unwrap();
    load(
        "listeners=PLAINTEXT://127.0.0.1:0,B://127.0.0.1:0\n\
         listener.security.protocol.map=PLAINTEXT:PLAINTEXT,B:PLAINTEXT",
    )
    .unwrap();
}

#[test]
fn a_sasl_listener_needs_mechanisms_shardlog_serves_and_their_jaas_entries() {
    for p in ["SASL_PLAINTEXT", "SASL_SSL"] {
        let (key, reason) = refused(&format!(
            "listeners=PLAINTEXT://h:1,X://h:2\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,X:{p}"
        ));
        assert_eq!(key, "sasl.enabled.mechanisms");
        assert!(reason.contains("listener X: GSSAPI"), "{reason}");
        let (key, reason) = refused(&format!(
            "listeners=PLAINTEXT://h:1,X://h:2\nlistener.security.protocol.map=PLAINTEXT:PLAINTEXT,X:{p}\n\
             sasl.enabled.mechanisms=PLAIN"
        ));
        assert_eq!(key, "listener.name.x.plain.sasl.jaas.config");
        assert!(reason.contains("no JAAS entry"), "{reason}");
    }
}
