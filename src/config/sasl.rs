//! `[pure]` The SASL keys of `server.properties`: which of Kafka's keys
//! shardlog applies, which it refuses (they stop the start naming the key,
//! never silently ignored), and the settings of one SASL listener resolved
//! from them.
//!
//! Key names and defaults: Kafka 3.9's
//! `clients/src/main/java/org/apache/kafka/common/config/SaslConfigs.java`,
//! `clients/.../config/internals/BrokerSecurityConfigs.java` and
//! `server/.../network/SocketServerConfigs.java`. Prefixes as
//! `clients/.../network/ListenerName.java` builds them:
//! `listener.name.<listener lower-case>.<key>` (`configPrefix`) and
//! `listener.name.<listener lower-case>.<mechanism lower-case>.<key>`
//! (`saslMechanismConfigPrefix`). The JAAS text is read as
//! `clients/.../security/JaasConfig.java` reads it (`jaas`).

use std::collections::BTreeMap;

use super::{ConfigError, SecurityProtocol, ServerConfig};

pub mod jaas;
pub mod oauth;
pub mod oauth_login;

use oauth::{OAuthValidator, OAUTHBEARER_LOGIN_MODULE};
use oauth_login::OAuthLogin;

/// `sasl.server.max.receive.size` default (`BrokerSecurityConfigs`): the
/// largest request read before authentication.
pub const DEFAULT_MAX_RECEIVE_SIZE: i32 = 524_288;

/// The PLAIN login module (`PlainLoginModule`).
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// The SCRAM login module (`ScramLoginModule`).
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";

/// A SASL mechanism shardlog serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SaslMechanism {
    Plain,
    ScramSha256,
    ScramSha512,
    OAuthBearer,
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 4] = [
        SaslMechanism::Plain,
        SaslMechanism::ScramSha256,
        SaslMechanism::ScramSha512,
        SaslMechanism::OAuthBearer,
    ];

    /// The mechanism's IANA name, as clients send it in SaslHandshake.
    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::ScramSha256 => "SCRAM-SHA-256",
            SaslMechanism::ScramSha512 => "SCRAM-SHA-512",
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism named `name` (case-sensitive, as Kafka's
    /// `SaslServerAuthenticator` compares it).
    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The JAAS login module Kafka's docs configure for it.
    pub fn login_module(self) -> &'static str {
        match self {
            SaslMechanism::Plain => PLAIN_LOGIN_MODULE,
            SaslMechanism::ScramSha256 | SaslMechanism::ScramSha512 => SCRAM_LOGIN_MODULE,
            SaslMechanism::OAuthBearer => OAUTHBEARER_LOGIN_MODULE,
        }
    }
}

/// The resolved SASL settings of one SASL_PLAINTEXT / SASL_SSL listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SaslSettings {
    /// The listener's name (upper case).
    pub listener: String,
    /// `sasl.enabled.mechanisms`, in the order written (SaslHandshake
    /// lists them in this order).
    pub mechanisms: Vec<SaslMechanism>,
    /// PLAIN's users: the `user_<name>="<password>"` options of the
    /// listener's PlainLoginModule entry (`PlainServerCallbackHandler`).
    pub plain_users: BTreeMap<String, String>,
    /// `sasl.server.max.receive.size`.
    pub max_receive_size: i32,
    /// OAUTHBEARER's validator, when the listener enables it.
    pub oauth: Option<OAuthValidator>,
    /// `connections.max.reauth.ms` per enabled mechanism (KIP-368; 0 =
    /// no session limit from it): `listener.name.<l>.<mech>.` prefix, then
    /// `listener.name.<l>.`, then the broker-wide key.
    pub reauth_ms: BTreeMap<SaslMechanism, i64>,
}

/// Keys (without prefix) whose value names a Java class: nothing of the
/// kind can be loaded into shardlog.
const JAVA_CLASS_KEYS: &[&str] = &[
    "sasl.server.callback.handler.class",
    "sasl.client.callback.handler.class",
    "sasl.login.class",
    "sasl.login.callback.handler.class",
];

/// Is `key` one the SASL code owns: `sasl.*`, `connections.max.reauth.ms`,
/// either with a listener prefix or a listener and mechanism prefix?
pub fn is_sasl_key(key: &str) -> bool {
    let (_, _, base) = split(key);
    base.starts_with("sasl.") || base == "connections.max.reauth.ms"
}

/// `listener.name.<l>.<mech>.<key>` → `(Some(l), Some(mech), key)`,
/// `listener.name.<l>.<key>` → `(Some(l), None, key)`, anything else →
/// `(None, None, key)`. A mechanism segment is told apart by the key after
/// it being a SASL key.
pub fn split(key: &str) -> (Option<&str>, Option<&str>, &str) {
    let (listener, rest) = super::ssl::split_listener(key);
    if listener.is_none() || rest.starts_with("sasl.") || rest == "connections.max.reauth.ms" {
        return (listener, None, rest);
    }
    match rest.split_once('.') {
        Some((mech, base))
            if !mech.is_empty()
                && (base.starts_with("sasl.") || base == "connections.max.reauth.ms") =>
        {
            (listener, Some(mech), base)
        }
        _ => (listener, None, rest),
    }
}

/// The OAUTHBEARER, Java-class and Kerberos keys of [`check_keys`]:
/// `Some(Ok)` applied, `Some(Err(reason))` refused, `None` not one of them.
fn check_class_and_oauth_key(
    listener: Option<&str>,
    mech: Option<&str>,
    base: &str,
    value: &str,
) -> Option<Result<(), String>> {
    let oauth_mech = mech.is_some_and(|m| m.eq_ignore_ascii_case("OAUTHBEARER"));
    if base == "sasl.server.callback.handler.class" && oauth_mech && listener.is_some() {
        // KIP-768: Kafka's own validators are built in.
        if oauth::known_validator_class(value) {
            return Some(Ok(()));
        }
        return Some(Err(
            "a Java class cannot be loaded into shardlog; OAUTHBEARER serves Kafka's \
             OAuthBearerValidatorCallbackHandler and the default unsecured validator"
                .into(),
        ));
    }
    if base == "sasl.login.callback.handler.class" && oauth_mech && listener.is_some() {
        // KIP-768: Kafka's own login handlers are built in.
        if oauth_login::known_login_handler(value) {
            return Some(Ok(()));
        }
        return Some(Err(
            "a Java class cannot be loaded into shardlog; the broker's OAUTHBEARER login \
             serves Kafka's OAuthBearerLoginCallbackHandler and the default unsecured one"
                .into(),
        ));
    }
    if JAVA_CLASS_KEYS.contains(&base) {
        return Some(Err(
            "a Java class cannot be loaded into shardlog; its PLAIN and SCRAM servers \
             are built in (Kafka's default callback handlers)"
                .into(),
        ));
    }
    if base == "sasl.mechanism.controller.protocol" {
        return Some(Err(
            "the SASL mechanism of a KRaft controller's listener (KIP-631); shardlog runs \
             Kafka's ZooKeeper mode, with no controller quorum"
                .into(),
        ));
    }
    if base.starts_with("sasl.kerberos.") {
        return Some(Err("GSSAPI (Kerberos) is not supported by shardlog".into()));
    }
    let login_key = oauth_login::LOGIN_KEYS.contains(&base)
        && (mech.is_none() || (oauth_mech && !oauth_login::REFRESH_KEYS.contains(&base)));
    if base.starts_with("sasl.oauthbearer.") {
        if (mech.is_none() || oauth_mech) && oauth::SERVER_KEYS.contains(&base) || login_key {
            return Some(Ok(()));
        }
        return Some(Err(
            "not a key of the broker's OAUTHBEARER validator or of its OAUTHBEARER login \
             (Kafka 3.9's SaslConfigs, with this prefix)"
                .into(),
        ));
    }
    if base.starts_with("sasl.login.") {
        if login_key {
            return Some(Ok(()));
        }
        return Some(Err(
            "not a sasl.login.* key of the broker's OAUTHBEARER login (the refresh keys \
             take no mechanism prefix)"
                .into(),
        ));
    }
    None
}

/// Every SASL key must be one shardlog applies with the value given; any
/// other stops the start naming it.
pub fn check_keys(keys: &BTreeMap<String, String>) -> Result<(), ConfigError> {
    for (key, value) in keys {
        let (listener, mech, base) = split(key);
        let refuse = |reason: String| ConfigError::InvalidValue {
            key: key.clone(),
            value: if base == "sasl.jaas.config" {
                "[hidden]".into()
            } else {
                value.clone()
            },
            reason,
        };
        if let Some(mech) = mech {
            let upper = mech.to_ascii_uppercase();
            if upper == "GSSAPI" {
                return Err(refuse(
                    "GSSAPI (Kerberos) is not supported by shardlog".into(),
                ));
            }
            if SaslMechanism::from_name(&upper).is_none() {
                return Err(refuse(format!(
                    "unknown SASL mechanism {upper:?} in the key (shardlog serves PLAIN, \
                     SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER)"
                )));
            }
        }
        match check_class_and_oauth_key(listener, mech, base, value) {
            Some(Ok(())) => continue,
            Some(Err(reason)) => return Err(refuse(reason)),
            None => {}
        }
        match (base, listener.is_some(), mech.is_some()) {
            ("sasl.jaas.config", true, true) => {}
            ("sasl.jaas.config", _, _) => {
                return Err(refuse(
                    "a broker reads its JAAS configuration only from \
                     listener.name.<listener>.<mechanism>.sasl.jaas.config (Kafka ignores the \
                     unprefixed key and needs a JAAS file, which shardlog does not read)"
                        .into(),
                ))
            }
            ("connections.max.reauth.ms", _, _) => {
                if value.trim().parse::<i64>().is_err() {
                    return Err(refuse("must be a long".into()));
                }
            }
            ("sasl.enabled.mechanisms", _, false) => {
                parse_mechanisms(value).map_err(refuse)?;
            }
            ("sasl.server.max.receive.size", _, false) => match value.trim().parse::<i32>() {
                Ok(n) if n > 0 => {}
                _ => return Err(refuse("must be a positive int".into())),
            },
            ("sasl.mechanism.inter.broker.protocol", false, false) => {}
            _ => {
                return Err(refuse(
                    "unknown SASL config key (Kafka 3.9's broker has no such key, or not with \
                     this prefix)"
                        .into(),
                ))
            }
        }
    }
    Ok(())
}

/// `sasl.enabled.mechanisms`: a comma-separated list of mechanisms
/// shardlog serves; GSSAPI and unknown names are refused.
pub fn parse_mechanisms(text: &str) -> Result<Vec<SaslMechanism>, String> {
    let mut out = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let m = match name {
            "GSSAPI" => {
                return Err(
                    "GSSAPI (Kerberos, Kafka's default) is not supported by shardlog; enable \
                     PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER"
                        .into(),
                )
            }
            other => SaslMechanism::from_name(other).ok_or_else(|| {
                format!(
                    "unknown SASL mechanism {other:?} (shardlog serves PLAIN, SCRAM-SHA-256, \
                     SCRAM-SHA-512 and OAUTHBEARER)"
                )
            })?,
        };
        if !out.contains(&m) {
            out.push(m);
        }
    }
    Ok(out)
}

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConfigError {
    ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// The SASL settings of `listener` (a SASL_PLAINTEXT or SASL_SSL
/// listener): the listener-prefixed key wins over the broker-wide one
/// (`valuesWithPrefixOverride`); every enabled mechanism needs its JAAS
/// entry (`JaasContext.loadServerContext` fails the start without one).
pub fn for_listener(config: &ServerConfig, listener: &str) -> Result<SaslSettings, ConfigError> {
    let lower = listener.to_ascii_lowercase();
    let lookup = |key: &str| -> Option<(String, String)> {
        let prefixed = format!("listener.name.{lower}.{key}");
        if let Some(v) = config.sasl_keys.get(&prefixed) {
            return Some((prefixed, v.clone()));
        }
        config
            .sasl_keys
            .get(key)
            .map(|v| (key.to_owned(), v.clone()))
    };
    let (mech_key, mech_text) = lookup("sasl.enabled.mechanisms")
        .unwrap_or_else(|| ("sasl.enabled.mechanisms".to_owned(), "GSSAPI".to_owned()));
    let mechanisms = parse_mechanisms(&mech_text)
        .map_err(|e| invalid(&mech_key, &mech_text, format!("listener {listener}: {e}")))?;
    if mechanisms.is_empty() {
        return Err(invalid(
            &mech_key,
            &mech_text,
            format!("listener {listener} enables no SASL mechanism"),
        ));
    }
    let max_receive_size = match lookup("sasl.server.max.receive.size") {
        Some((k, v)) => v
            .trim()
            .parse::<i32>()
            .map_err(|e| invalid(&k, &v, e.to_string()))?,
        None => DEFAULT_MAX_RECEIVE_SIZE,
    };
    let mut plain_users = BTreeMap::new();
    let mut oauth = None;
    for m in &mechanisms {
        let key = format!(
            "listener.name.{lower}.{}.sasl.jaas.config",
            m.name().to_ascii_lowercase()
        );
        let Some(text) = config.sasl_keys.get(&key) else {
            return Err(invalid(
                &key,
                "",
                format!(
                    "listener {listener} enables {} but has no JAAS entry for it (Kafka: \
                     \"Could not find a 'KafkaServer' or '{lower}.KafkaServer' entry in the \
                     JAAS configuration\"; shardlog reads no JAAS file)",
                    m.name()
                ),
            ));
        };
        let entry = jaas::parse_single(text).map_err(|e| invalid(&key, "[hidden]", e))?;
        if entry.login_module != m.login_module() {
            return Err(invalid(
                &key,
                "[hidden]",
                format!(
                    "login module {} cannot be loaded; {} needs {}",
                    entry.login_module,
                    m.name(),
                    m.login_module()
                ),
            ));
        }
        if *m == SaslMechanism::Plain {
            for (option, value) in &entry.options {
                if let Some(user) = option.strip_prefix("user_") {
                    plain_users.insert(user.to_owned(), value.clone());
                }
            }
        }
        if *m == SaslMechanism::OAuthBearer {
            oauth = Some(oauth_validator(config, &lower, &entry)?);
        }
    }
    let mut reauth_ms = BTreeMap::new();
    for m in &mechanisms {
        let mech_key = format!(
            "listener.name.{lower}.{}.connections.max.reauth.ms",
            m.name().to_ascii_lowercase()
        );
        let found = config
            .sasl_keys
            .get(&mech_key)
            .map(|v| (mech_key.clone(), v.clone()))
            .or_else(|| lookup("connections.max.reauth.ms"));
        if let Some((k, v)) = found {
            let ms = v
                .trim()
                .parse::<i64>()
                .map_err(|e| invalid(&k, &v, e.to_string()))?;
            reauth_ms.insert(*m, ms);
        }
    }
    Ok(SaslSettings {
        listener: listener.to_owned(),
        mechanisms,
        plain_users,
        max_receive_size,
        oauth,
        reauth_ms,
    })
}

/// OAUTHBEARER's validator on a listener: the default unsecured one with
/// the JAAS entry's options, or KIP-768's when
/// `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`
/// names it (`SaslChannelBuilder.createServerCallbackHandlers`).
fn oauth_validator(
    config: &ServerConfig,
    lower: &str,
    entry: &jaas::JaasEntry,
) -> Result<OAuthValidator, ConfigError> {
    let class_key = format!("listener.name.{lower}.oauthbearer.sasl.server.callback.handler.class");
    let secured = config
        .sasl_keys
        .get(&class_key)
        .is_some_and(|c| c.trim() != oauth::UNSECURED_VALIDATOR_CLASS);
    if secured {
        let get = |k: &str| oauth::lookup(&config.sasl_keys, lower, k);
        return oauth::jwks_options(&get, entry)
            .map(OAuthValidator::Jwks)
            .map_err(|(k, why)| invalid(&k, "", why));
    }
    // Only the secured validator reads the sasl.oauthbearer.* keys: set
    // for this listener without it they would be a lie (a broker-wide one
    // may serve another listener, `check_oauth_keys_used`).
    let prefixed = |k: &&str| {
        config
            .sasl_keys
            .keys()
            .find(|full| {
                *full == &format!("listener.name.{lower}.{k}")
                    || *full == &format!("listener.name.{lower}.oauthbearer.{k}")
            })
            .cloned()
    };
    if let Some(k) = oauth::SERVER_KEYS.iter().find_map(prefixed) {
        return Err(invalid(
            &k,
            "",
            format!(
                "only OAuthBearerValidatorCallbackHandler reads this key; set {class_key}={} \
                 or remove it",
                oauth::SECURED_VALIDATOR_CLASS
            ),
        ));
    }
    oauth::unsecured_options(entry)
        .map(OAuthValidator::Unsecured)
        .map_err(|e| {
            invalid(
                &format!("listener.name.{lower}.oauthbearer.sasl.jaas.config"),
                "[hidden]",
                e,
            )
        })
}

/// What a broker logs in with on its own connections to another broker's
/// SASL listener (Kafka's `SaslClientAuthenticator` with the *server*
/// JAAS entry of that listener, SECURITY.md §3.9).
#[derive(Clone, PartialEq)]
pub struct SaslClientSettings {
    /// `sasl.mechanism.inter.broker.protocol`.
    pub mechanism: SaslMechanism,
    /// The `username` / `password` options of the listener's JAAS entry
    /// for that mechanism (PLAIN, SCRAM; empty for OAUTHBEARER).
    pub username: String,
    pub password: String,
    /// OAUTHBEARER: how the broker gets its token.
    pub oauth: Option<OAuthLogin>,
}

/// Never the password in a log line.
impl std::fmt::Debug for SaslClientSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslClientSettings")
            .field("mechanism", &self.mechanism)
            .field("username", &self.username)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

/// The login of the broker's connections on `listener` (`None` when its
/// protocol is not SASL): `sasl.mechanism.inter.broker.protocol` (Kafka's
/// default GSSAPI is refused) must be enabled on that listener
/// (`KafkaConfig.validateValues`) and its JAAS entry must name the
/// broker's `username` and `password`.
pub fn broker_client(
    config: &ServerConfig,
    listener: &str,
) -> Result<Option<SaslClientSettings>, ConfigError> {
    if !matches!(
        config.listener_protocol(listener),
        SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
    ) {
        return Ok(None);
    }
    let key = "sasl.mechanism.inter.broker.protocol";
    let name = config.sasl_keys.get(key).map_or("GSSAPI", |v| v.trim());
    let mechanism = match parse_mechanisms(name) {
        Ok(m) if m.len() == 1 => m[0],
        Ok(_) => return Err(invalid(key, name, "exactly one mechanism")),
        Err(e) => return Err(invalid(key, name, e)),
    };
    let settings = for_listener(config, listener)?;
    if !settings.mechanisms.contains(&mechanism) {
        return Err(invalid(
            key,
            name,
            format!(
                "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms \
                 when SASL is used for inter-broker communication (listener {listener})"
            ),
        ));
    }
    let jaas_key = format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mechanism.name().to_ascii_lowercase()
    );
    let entry = config
        .sasl_keys
        .get(&jaas_key)
        .map(|t| jaas::parse_single(t))
        .transpose()
        .map_err(|e| invalid(&jaas_key, "[hidden]", e))?;
    if mechanism == SaslMechanism::OAuthBearer {
        let Some(entry) = entry else {
            return Err(invalid(
                &jaas_key,
                "",
                "the broker's OAUTHBEARER login needs it",
            ));
        };
        let lower = listener.to_ascii_lowercase();
        let handler = config.sasl_keys.get(&format!(
            "listener.name.{lower}.oauthbearer.sasl.login.callback.handler.class"
        ));
        let login = oauth_login::login_options(
            &|k| oauth::lookup(&config.sasl_keys, &lower, k),
            &|k| oauth_login::refresh_lookup(&config.sasl_keys, &lower, k),
            handler.map(String::as_str),
            &entry,
            &jaas_key,
        )
        .map_err(|(k, why)| {
            let value = if k == jaas_key { "[hidden]" } else { "" };
            invalid(&k, value, format!("listener {listener}: {why}"))
        })?;
        return Ok(Some(SaslClientSettings {
            mechanism,
            username: String::new(),
            password: String::new(),
            oauth: Some(login),
        }));
    }
    let option = |k: &str| entry.as_ref().and_then(|e| e.option(k)).map(str::to_owned);
    match (option("username"), option("password")) {
        (Some(username), Some(password)) => Ok(Some(SaslClientSettings {
            mechanism,
            username,
            password,
            oauth: None,
        })),
        _ => Err(invalid(
            &jaas_key,
            "[hidden]",
            format!(
                "the broker logs in to listener {listener} with the username and password \
                 options of this entry; both are needed"
            ),
        )),
    }
}

/// Every SASL listener's settings resolve, and the broker can log in to
/// the SASL listeners its own connections use (inter-broker and
/// control-plane, `KafkaConfig.validateValues`).
pub fn validate(config: &ServerConfig) -> Result<(), ConfigError> {
    check_keys(&config.sasl_keys)?;
    for l in &config.listeners {
        let protocol = config.listener_protocol(&l.name);
        if matches!(
            protocol,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        ) {
            for_listener(config, &l.name)?;
        }
    }
    broker_client(config, config.inter_broker_listener())?;
    broker_client(config, config.controller_listener())?;
    check_oauth_keys_used(config)
}

/// A `sasl.oauthbearer.*` key or OAUTHBEARER callback class must reach a
/// listener that validates tokens with KIP-768's handler; one that reaches
/// none would be ignored ("no config key is a lie").
fn check_oauth_keys_used(config: &ServerConfig) -> Result<(), ConfigError> {
    let mut secured: Vec<String> = Vec::new();
    for l in &config.listeners {
        if matches!(
            config.listener_protocol(&l.name),
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        ) {
            let s = for_listener(config, &l.name)?;
            if matches!(s.oauth, Some(OAuthValidator::Jwks(_))) {
                secured.push(l.name.to_ascii_lowercase());
            }
        }
    }
    // The listeners the broker logs in to with OAUTHBEARER, and whether
    // with KIP-768's handler (the token endpoint and its sasl.login.*
    // keys) or the unsecured one (only the refresh keys apply).
    let mut logins: Vec<(String, bool)> = Vec::new();
    for name in [config.inter_broker_listener(), config.controller_listener()] {
        if let Some(SaslClientSettings {
            oauth: Some(login), ..
        }) = broker_client(config, name)?
        {
            let secured = !matches!(login.source, oauth_login::TokenSource::Unsecured(_));
            logins.push((name.to_ascii_lowercase(), secured));
        }
    }
    for (key, value) in &config.sasl_keys {
        let (listener, _, base) = split(key);
        let login_reached = |secured_only: bool| {
            logins
                .iter()
                .any(|(l, secured)| (!secured_only || *secured) && listener.is_none_or(|x| x == l))
        };
        let reaches_login = if oauth_login::REFRESH_KEYS.contains(&base) {
            login_reached(false)
        } else if oauth_login::LOGIN_KEYS.contains(&base)
            || base == "sasl.login.callback.handler.class"
        {
            login_reached(true) || value.trim() == oauth_login::UNSECURED_LOGIN_HANDLER
        } else {
            false
        };
        if oauth_login::LOGIN_KEYS.contains(&base) || base == "sasl.login.callback.handler.class" {
            if reaches_login {
                continue;
            }
            return Err(invalid(
                key,
                value,
                "no OAUTHBEARER login of the broker reads this key (it applies where \
                 sasl.mechanism.inter.broker.protocol=OAUTHBEARER logs in; the token endpoint \
                 and its keys need listener.name.<listener>.oauthbearer.sasl.login.callback.\
                 handler.class=org.apache.kafka.common.security.oauthbearer.\
                 OAuthBearerLoginCallbackHandler)",
            ));
        }
        let claim_key = matches!(
            base,
            "sasl.oauthbearer.scope.claim.name" | "sasl.oauthbearer.sub.claim.name"
        );
        if claim_key && login_reached(true) {
            continue;
        }
        let oauth_key = base.starts_with("sasl.oauthbearer.")
            || (base == "sasl.server.callback.handler.class"
                && oauth::known_validator_class(value));
        let reached = match listener {
            Some(l) => secured.iter().any(|s| s == l),
            None => !secured.is_empty(),
        };
        if oauth_key && !reached && oauth::known_validator_class(value) {
            // The unsecured validator named explicitly: Kafka's default.
            if value.trim() == oauth::UNSECURED_VALIDATOR_CLASS {
                continue;
            }
        }
        if oauth_key && !reached {
            return Err(invalid(
                key,
                value,
                "no listener validates OAUTHBEARER tokens with \
                 OAuthBearerValidatorCallbackHandler, which alone reads this key (enable \
                 OAUTHBEARER on the listener and set \
                 listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class)",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
