//! `[pure]` Unit tests of `config::sasl`.

use super::*;
use crate::config::sasl::oauth::OAuthValidator;

const JAAS_PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                          username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" \
                          user_alice=\"alice-secret\";";
const JAAS_SCRAM: &str = "org.apache.kafka.common.security.scram.ScramLoginModule required;";

fn base() -> String {
    "listeners=PLAINTEXT://h:1,SASL_PLAINTEXT://h:2,SASL_SSL://h:3\n".into()
}

fn load(extra: &str) -> Result<ServerConfig, ConfigError> {
    ServerConfig::from_properties(&format!("{}{extra}", base()), &[]).map(|l| l.config)
}

fn refused_key(extra: &str) -> (String, String) {
    match load(extra) {
        Err(ConfigError::InvalidValue { key, reason, .. }) => (key, reason),
        other => panic!("{extra}: expected a refusal, got {other:?}"),
    }
}

#[test]
fn sasl_keys_are_told_apart_with_their_prefixes() {
    assert!(is_sasl_key("sasl.enabled.mechanisms"));
    assert!(is_sasl_key(
        "listener.name.sasl_ssl.sasl.enabled.mechanisms"
    ));
    assert!(is_sasl_key(
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
    ));
    assert!(is_sasl_key("connections.max.reauth.ms"));
    assert!(is_sasl_key(
        "listener.name.a.plain.connections.max.reauth.ms"
    ));
    assert!(!is_sasl_key("listener.name.a.ssl.keystore.location"));
    assert!(!is_sasl_key("listener.security.protocol.map"));
    assert!(!is_sasl_key("connections.max.idle.ms"));
    assert_eq!(
        split("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"),
        (Some("sasl_ssl"), Some("scram-sha-512"), "sasl.jaas.config")
    );
    assert_eq!(
        split("listener.name.x.sasl.enabled.mechanisms"),
        (Some("x"), None, "sasl.enabled.mechanisms")
    );
}

#[test]
fn a_secured_listener_set_resolves_per_listener() {
    let c = load(&format!(
        "sasl.enabled.mechanisms=PLAIN\n\
         listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_PLAIN}\n\
         listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={JAAS_SCRAM}\n\
         listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={JAAS_SCRAM}\n\
         sasl.mechanism.inter.broker.protocol=PLAIN\n\
         connections.max.reauth.ms=0\n\
         listener.name.sasl_ssl.sasl.server.max.receive.size=1000\n"
    ))
    .unwrap();
    let plain = for_listener(&c, "SASL_PLAINTEXT").unwrap();
    assert_eq!(plain.mechanisms, vec![SaslMechanism::Plain]);
    assert_eq!(
        plain.plain_users.get("alice").map(String::as_str),
        Some("alice-secret")
    );
    assert_eq!(plain.plain_users.len(), 2);
    assert_eq!(plain.max_receive_size, DEFAULT_MAX_RECEIVE_SIZE);
    let scram = for_listener(&c, "SASL_SSL").unwrap();
    assert_eq!(
        scram.mechanisms,
        vec![SaslMechanism::ScramSha512, SaslMechanism::ScramSha256]
    );
    assert!(scram.plain_users.is_empty());
    assert_eq!(scram.max_receive_size, 1000);
}

#[test]
fn every_sasl_key_shardlog_does_not_implement_stops_the_start_naming_it() {
    let ok = format!(
        "sasl.enabled.mechanisms=PLAIN\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_PLAIN}\n\
         listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS_PLAIN}\n"
    );
    load(&ok).unwrap();
    for (line, reason) in [
        ("sasl.enabled.mechanisms=GSSAPI", "GSSAPI"),
        (
            "sasl.enabled.mechanisms=DIGEST-MD5",
            "unknown SASL mechanism",
        ),
        (
            "sasl.jaas.config=x required;",
            "listener.name.<listener>.<mechanism>",
        ),
        (
            "listener.name.sasl_ssl.sasl.jaas.config=x required;",
            "listener.name.<listener>.<mechanism>",
        ),
        (
            "sasl.server.callback.handler.class=com.example.H",
            "Java class",
        ),
        (
            "listener.name.sasl_ssl.plain.sasl.server.callback.handler.class=com.example.H",
            "Java class",
        ),
        ("sasl.login.class=com.example.L", "Java class"),
        ("sasl.login.refresh.window.factor=0.8", "OAUTHBEARER"),
        ("sasl.kerberos.service.name=kafka", "GSSAPI"),
        ("sasl.kerberos.principal.to.local.rules=DEFAULT", "GSSAPI"),
        (
            "sasl.oauthbearer.jwks.endpoint.url=file:///x",
            "no listener validates OAUTHBEARER tokens with",
        ),
        (
            "sasl.oauthbearer.token.endpoint.url=http://idp/token",
            "no OAUTHBEARER login of the broker reads this key",
        ),
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.login.refresh.buffer.seconds=1",
            "take no mechanism prefix",
        ),
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.login.callback.handler.class=com.example.L",
            "Java class",
        ),
        (
            "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=com.example.H",
            "Java class",
        ),
        (
            "listener.name.sasl_ssl.gssapi.sasl.jaas.config=x required;",
            "GSSAPI",
        ),
        ("connections.max.reauth.ms=soon", "long"),
        (
            "listener.name.sasl_ssl.plain.connections.max.reauth.ms=x",
            "long",
        ),
        ("sasl.mechanism=PLAIN", "unknown SASL config key"),
        ("sasl.server.max.receive.size=0", "positive"),
    ] {
        let (key, why) = refused_key(&format!("{ok}{line}\n"));
        let name = line.split('=').next().unwrap();
        assert_eq!(key, name, "{line}: {why}");
        assert!(why.contains(reason), "{line}: {why}");
    }
}

#[test]
fn jaas_entries_must_name_the_mechanisms_login_module() {
    let (key, why) = refused_key(&format!(
        "sasl.enabled.mechanisms=SCRAM-SHA-256\n\
         listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config={JAAS_PLAIN}\n\
         listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={JAAS_SCRAM}\n"
    ));
    assert_eq!(
        key,
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config"
    );
    assert!(why.contains("ScramLoginModule"), "{why}");
}

#[test]
fn a_sasl_listener_between_brokers_needs_a_mechanism_it_enables_and_the_brokers_login() {
    let load_inter = |extra: &str| {
        ServerConfig::from_properties(
            &format!(
                "listeners=SASL_PLAINTEXT://h:2\nsecurity.inter.broker.protocol=SASL_PLAINTEXT\n\
                 sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n\
                 listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_PLAIN}\n\
                 listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config={JAAS_SCRAM}\n{extra}"
            ),
            &[],
        )
    };
    let c = load_inter("sasl.mechanism.inter.broker.protocol=PLAIN\n")
        .unwrap()
        .config;
    let login = broker_client(&c, "SASL_PLAINTEXT").unwrap().unwrap();
    assert_eq!(login.mechanism, SaslMechanism::Plain);
    assert_eq!(
        (login.username.as_str(), login.password.as_str()),
        ("admin", "admin-secret")
    );
    assert!(!format!("{login:?}").contains("admin-secret"));
    for (extra, want) in [
        ("", "GSSAPI"),
        (
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-256\n",
            "must be included in sasl.enabled.mechanisms",
        ),
        (
            "sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n",
            "username and password",
        ),
    ] {
        let err = load_inter(extra).unwrap_err();
        assert!(err.to_string().contains(want), "{extra}: {err}");
    }
}

const JAAS_OAUTH: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                          required unsecuredValidatorRequiredScope=\"kafka\";";
const SECURED: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";

#[test]
fn oauthbearer_listeners_resolve_their_validator_and_reauth_limits() {
    let c = load(&format!(
        "sasl.enabled.mechanisms=OAUTHBEARER,PLAIN\n\
         listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={JAAS_OAUTH}\n\
         listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS_PLAIN}\n\
         listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={JAAS_OAUTH}\n\
         listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS_PLAIN}\n\
         listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class={SECURED}\n\
         listener.name.sasl_ssl.sasl.oauthbearer.jwks.endpoint.url=file:/etc/jwks.json\n\
         sasl.oauthbearer.expected.audience=kafka\n\
         connections.max.reauth.ms=60000\n\
         listener.name.sasl_ssl.oauthbearer.connections.max.reauth.ms=5000\n"
    ))
    .unwrap();
    let plain = for_listener(&c, "SASL_PLAINTEXT").unwrap();
    match plain.oauth {
        Some(OAuthValidator::Unsecured(o)) => assert_eq!(o.required_scope, vec!["kafka"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(plain.reauth_ms[&SaslMechanism::OAuthBearer], 60_000);
    let ssl = for_listener(&c, "SASL_SSL").unwrap();
    match ssl.oauth {
        Some(OAuthValidator::Jwks(o)) => {
            assert_eq!(o.expected_audience, vec!["kafka"]);
            assert_eq!(o.url, oauth::JwksUrl::File("/etc/jwks.json".into()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ssl.reauth_ms[&SaslMechanism::OAuthBearer], 5_000);
    assert_eq!(ssl.reauth_ms[&SaslMechanism::Plain], 60_000);

    // The secured validator without its JWKS URL, or with https, stops the start.
    let base = format!(
        "sasl.enabled.mechanisms=OAUTHBEARER\n\
         listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={JAAS_OAUTH}\n\
         listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={JAAS_OAUTH}\n"
    );
    let (key, why) = refused_key(&format!(
        "{base}listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class={SECURED}\n"
    ));
    assert_eq!(key, "sasl.oauthbearer.jwks.endpoint.url");
    assert!(why.contains("required"), "{why}");
    // An https JWKS takes the ssl.* options of the JAAS entry
    // (JaasOptionsUtils), read when the endpoint is first fetched.
    let c = load(&format!(
        "sasl.enabled.mechanisms=OAUTHBEARER\n\
         listener.name.sasl_ssl.oauthbearer.sasl.jaas.config={LOGIN} required \
         ssl.truststore.type=\"PEM\" ssl.truststore.location=\"/etc/idp-ca.pem\";\n\
         listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config={JAAS_OAUTH}\n\
         listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class={SECURED}\n\
         sasl.oauthbearer.jwks.endpoint.url=https://idp:8443/jwks\n"
    ))
    .unwrap();
    match for_listener(&c, "SASL_SSL").unwrap().oauth {
        Some(OAuthValidator::Jwks(o)) => {
            assert_eq!(o.url.to_string(), "https://idp:8443/jwks");
            assert_eq!(
                o.ssl_options,
                vec![
                    ("ssl.truststore.type".to_owned(), "PEM".to_owned()),
                    (
                        "ssl.truststore.location".to_owned(),
                        "/etc/idp-ca.pem".to_owned()
                    )
                ]
            );
        }
        other => panic!("{other:?}"),
    }
    // sasl.oauthbearer.* keys on a listener with the unsecured validator
    // would be ignored: refused.
    let (key, why) = refused_key(&format!(
        "{base}listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer=https://idp\n"
    ));
    assert_eq!(
        key,
        "listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer"
    );
    assert!(
        why.contains("only OAuthBearerValidatorCallbackHandler"),
        "{why}"
    );
    oauthbearer_between_brokers();
}

const LOGIN: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// OAUTHBEARER between brokers: the unsecured login module's options, or
/// KIP-768's login handler with its token endpoint; keys no login reads
/// are refused.
fn oauthbearer_between_brokers() {
    let inter = |extra: &str| {
        ServerConfig::from_properties(
            &format!(
                "listeners=SASL_PLAINTEXT://h:2\nsecurity.inter.broker.protocol=SASL_PLAINTEXT\n\
                 sasl.enabled.mechanisms=OAUTHBEARER\nsasl.mechanism.inter.broker.protocol=OAUTHBEARER\n{extra}"
            ),
            &[],
        )
    };
    let jaas = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config";
    let err = inter(&format!("{jaas}={JAAS_OAUTH}\n")).unwrap_err();
    assert!(
        err.to_string().contains("unsecuredLoginStringClaim_sub"),
        "{err}"
    );
    let c = inter(&format!(
        "{jaas}={LOGIN} required unsecuredLoginStringClaim_sub=\"broker\";\n\
         listener.name.sasl_plaintext.sasl.login.refresh.window.factor=0.9\n"
    ))
    .unwrap()
    .config;
    let login = broker_client(&c, "SASL_PLAINTEXT").unwrap().unwrap();
    let oauth = login.oauth.unwrap();
    assert!(matches!(
        oauth.source,
        oauth_login::TokenSource::Unsecured(_)
    ));
    assert_eq!(oauth.refresh.window_factor, 0.9);
    // The token endpoint is read only by KIP-768's login handler.
    let endpoint = "sasl.oauthbearer.token.endpoint.url=https://idp/token\n\
                    sasl.login.retry.backoff.ms=10\n";
    let err = inter(&format!(
        "{jaas}={LOGIN} required unsecuredLoginStringClaim_sub=\"broker\";\n{endpoint}"
    ))
    .unwrap_err();
    assert!(err.to_string().contains("no OAUTHBEARER login"), "{err}");
    let c = inter(&format!(
        "{jaas}={LOGIN} required clientId=\"broker\" clientSecret=\"s\";\n{endpoint}\
         listener.name.sasl_plaintext.oauthbearer.sasl.login.callback.handler.class=\
         {}\n",
        oauth_login::SECURED_LOGIN_HANDLER
    ))
    .unwrap()
    .config;
    let oauth = broker_client(&c, "SASL_PLAINTEXT")
        .unwrap()
        .unwrap()
        .oauth
        .unwrap();
    match oauth.source {
        oauth_login::TokenSource::Endpoint(e) => assert_eq!(e.retry_backoff_ms, 10),
        other => panic!("{other:?}"),
    }
}
