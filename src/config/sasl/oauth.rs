//! `[pure]` The OAUTHBEARER settings of one SASL listener, read as Kafka
//! 3.9 reads them:
//! - the default validator, `clients/.../security/oauthbearer/internals/
//!   unsecured/OAuthBearerUnsecuredValidatorCallbackHandler.java`, takes its
//!   options from the listener's `OAuthBearerLoginModule` JAAS entry
//!   (`unsecuredValidatorPrincipalClaimName`, `…ScopeClaimName`,
//!   `…RequiredScope`, `…AllowableClockSkewMs`);
//! - KIP-768's `OAuthBearerValidatorCallbackHandler`, chosen with
//!   `listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`,
//!   takes the `sasl.oauthbearer.*` keys through
//!   `clients/.../oauthbearer/internals/secured/ConfigurationUtils.java`
//!   (the mechanism-prefixed key first, then the plain one; the listener
//!   prefix overrides the broker-wide key as `valuesWithPrefixOverride`
//!   does) and `VerificationKeyResolverFactory.java` (a `file:` JWKS or an
//!   HTTP(S) endpoint refreshed every `sasl.oauthbearer.jwks.endpoint.refresh.ms`);
//!   an `https:` endpoint is verified as `JaasOptionsUtils.createSSLSocketFactory`
//!   does: with the client `ssl.*` settings found among the *JAAS options*
//!   of the listener's OAUTHBEARER entry (`ssl.truststore.location`, …;
//!   none: the default trust store), kept here as written and resolved
//!   when the endpoint is first read.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::jaas::JaasEntry;

/// The OAUTHBEARER login module (`OAuthBearerLoginModule`).
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
/// KIP-768's secured validator (Kafka 3.9's class name; the older
/// `...oauthbearer.secured.OAuthBearerValidatorCallbackHandler` is
/// deprecated and accepted as the same class).
pub const SECURED_VALIDATOR_CLASS: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
const SECURED_VALIDATOR_CLASS_OLD: &str =
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler";
/// The default (unsecured) validator, which may also be named explicitly.
pub const UNSECURED_VALIDATOR_CLASS: &str = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";

/// The `sasl.oauthbearer.*` keys the secured validator applies on a broker
/// (`SaslConfigs`); `token.endpoint.url` and the `sasl.login.*` keys are
/// the broker's own login's (`oauth_login::LOGIN_KEYS`).
pub const SERVER_KEYS: &[&str] = &[
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
];

/// Is `value` a validator class shardlog has built in?
pub fn known_validator_class(value: &str) -> bool {
    matches!(
        value.trim(),
        SECURED_VALIDATOR_CLASS | SECURED_VALIDATOR_CLASS_OLD | UNSECURED_VALIDATOR_CLASS
    )
}

/// How OAUTHBEARER tokens are validated on a listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthValidator {
    Unsecured(UnsecuredOptions),
    Jwks(JwksOptions),
}

/// `OAuthBearerUnsecuredValidatorCallbackHandler`'s JAAS options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredOptions {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope` (space-separated, default none).
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub clock_skew_ms: i64,
}

/// Where the JWKS comes from (`sasl.oauthbearer.jwks.endpoint.url`), or
/// the broker's own token (`sasl.oauthbearer.token.endpoint.url`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksUrl {
    /// `file:<path>`.
    File(PathBuf),
    /// `http://host[:port]/path`, or `https:` when `tls`.
    Http {
        tls: bool,
        host: String,
        port: u16,
        path: String,
    },
}

impl std::fmt::Display for JwksUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JwksUrl::File(p) => write!(f, "file:{}", p.display()),
            JwksUrl::Http {
                tls,
                host,
                port,
                path,
            } => {
                let scheme = if *tls { "https" } else { "http" };
                write!(f, "{scheme}://{host}:{port}{path}")
            }
        }
    }
}

/// The `ssl.*` options of a JAAS entry, as `JaasOptionsUtils.getSslClientConfig`
/// hands them to `SslFactory` (an https endpoint's trust store).
pub fn jaas_ssl_options(entry: &JaasEntry) -> Vec<(String, String)> {
    entry
        .options
        .iter()
        .filter(|(k, _)| k.starts_with("ssl."))
        .cloned()
        .collect()
}

/// KIP-768's secured validator settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwksOptions {
    pub url: JwksUrl,
    /// For an `https:` URL: the `ssl.*` options of the listener's JAAS
    /// entry (see the module header).
    pub ssl_options: Vec<(String, String)>,
    /// `sasl.oauthbearer.jwks.endpoint.refresh.ms` (3600000).
    pub refresh_ms: i64,
    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms` (100).
    pub retry_backoff_ms: i64,
    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms` (10000).
    pub retry_backoff_max_ms: i64,
    /// `sasl.oauthbearer.clock.skew.seconds` (30).
    pub clock_skew_s: i64,
    /// `sasl.oauthbearer.expected.audience` (list; empty: not checked).
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer` (unset: not checked).
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.scope.claim.name` (`scope`).
    pub scope_claim: String,
    /// `sasl.oauthbearer.sub.claim.name` (`sub`).
    pub sub_claim: String,
}

/// The unsecured validator's options from the JAAS entry
/// (`OAuthBearerUnsecuredValidatorCallbackHandler.configure` and its
/// option accessors).
pub fn unsecured_options(entry: &JaasEntry) -> Result<UnsecuredOptions, String> {
    let text = |k: &str, default: &str| {
        let v = entry.option(k).map(str::trim).unwrap_or("");
        if v.is_empty() {
            default.to_owned()
        } else {
            v.to_owned()
        }
    };
    let clock_skew_ms = match entry.option("unsecuredValidatorAllowableClockSkewMs") {
        None => 0,
        Some(v) if v.trim().is_empty() => 0,
        Some(v) => match v.trim().parse::<i32>() {
            Ok(n) if n >= 0 => i64::from(n),
            Ok(_) => return Err("Allowable clock skew millis must not be negative".into()),
            Err(_) => {
                return Err(format!(
                    "Invalid value for unsecuredValidatorAllowableClockSkewMs: {v}"
                ))
            }
        },
    };
    Ok(UnsecuredOptions {
        principal_claim: text("unsecuredValidatorPrincipalClaimName", "sub"),
        scope_claim: text("unsecuredValidatorScopeClaimName", "scope"),
        required_scope: entry
            .option("unsecuredValidatorRequiredScope")
            .unwrap_or("")
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        clock_skew_ms,
    })
}

/// `ConfigurationUtils.validateUrl` for the JWKS endpoint: `file:`,
/// `http:` and `https:` URLs.
pub fn parse_jwks_url(text: &str) -> Result<JwksUrl, String> {
    parse_url("sasl.oauthbearer.jwks.endpoint.url", text)
}

/// `ConfigurationUtils.validateUrl` for the value of `key`.
pub fn parse_url(key: &str, text: &str) -> Result<JwksUrl, String> {
    let t = text.trim();
    if let Some(path) = t.strip_prefix("file:") {
        let path = path.trim_start_matches("//");
        if path.is_empty() || !path.starts_with('/') {
            return Err(format!("the file: URL {t:?} must name an absolute path"));
        }
        return Ok(JwksUrl::File(PathBuf::from(path)));
    }
    let (tls, rest, default_port) = if let Some(rest) = t.strip_prefix("http://") {
        (false, rest, 80)
    } else if let Some(rest) = t.strip_prefix("https://") {
        (true, rest, 443)
    } else {
        return Err(format!(
            "The OAuth configuration option {key} contains a URL ({t}) that contains an \
             invalid protocol; only \"http\", \"https\", and \"file\" protocol are supported"
        ));
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !authority.ends_with(']') => (
            h,
            p.parse::<u16>()
                .map_err(|_| format!("the URL {t:?} has an invalid port"))?,
        ),
        _ => (authority, default_port),
    };
    if host.is_empty() {
        return Err(format!("the URL {t:?} has no host"));
    }
    Ok(JwksUrl::Http {
        tls,
        host: host.trim_matches(['[', ']']).to_owned(),
        port,
        path: path.to_owned(),
    })
}

/// The secured validator's settings; `get` looks a key up as
/// `ConfigurationUtils.get` does (see the module header).
/// `entry` is the listener's OAUTHBEARER JAAS entry (an https endpoint's
/// `ssl.*` options).
pub fn jwks_options(
    get: &dyn Fn(&str) -> Option<String>,
    entry: &JaasEntry,
) -> Result<JwksOptions, (String, String)> {
    let key = |k: &str| format!("sasl.oauthbearer.{k}");
    let long = |k: &str, default: i64| -> Result<i64, (String, String)> {
        match get(&key(k)) {
            None => Ok(default),
            Some(v) => match v.trim().parse::<i64>() {
                Ok(n) if n >= 0 => Ok(n),
                _ => Err((key(k), "must be a non-negative long".into())),
            },
        }
    };
    let url_key = key("jwks.endpoint.url");
    let Some(url_text) = get(&url_key) else {
        return Err((
            url_key,
            "The OAuth configuration option sasl.oauthbearer.jwks.endpoint.url is required \
             by OAuthBearerValidatorCallbackHandler"
                .into(),
        ));
    };
    let url = parse_jwks_url(&url_text).map_err(|e| (url_key.clone(), e))?;
    let name = |k: &str, default: &str| -> Result<String, (String, String)> {
        match get(&key(k)) {
            None => Ok(default.to_owned()),
            Some(v) if v.trim().is_empty() => Err((key(k), "must not be blank".into())),
            Some(v) => Ok(v.trim().to_owned()),
        }
    };
    let ssl_options = match url {
        JwksUrl::Http { tls: true, .. } => jaas_ssl_options(entry),
        _ => Vec::new(),
    };
    Ok(JwksOptions {
        url,
        ssl_options,
        refresh_ms: long("jwks.endpoint.refresh.ms", 3_600_000)?.max(1),
        retry_backoff_ms: long("jwks.endpoint.retry.backoff.ms", 100)?,
        retry_backoff_max_ms: long("jwks.endpoint.retry.backoff.max.ms", 10_000)?,
        clock_skew_s: long("clock.skew.seconds", 30)?,
        expected_audience: get(&key("expected.audience"))
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        expected_issuer: get(&key("expected.issuer"))
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty()),
        scope_claim: name("scope.claim.name", "scope")?,
        sub_claim: name("sub.claim.name", "sub")?,
    })
}

/// A key of `keys` as the secured validator sees it on `listener` (lower
/// case): `listener.name.<l>.oauthbearer.<k>`, then `listener.name.<l>.<k>`,
/// `oauthbearer.<k>`, then `<k>`.
pub fn lookup(keys: &BTreeMap<String, String>, listener: &str, k: &str) -> Option<String> {
    [
        format!("listener.name.{listener}.oauthbearer.{k}"),
        format!("listener.name.{listener}.{k}"),
        k.to_owned(),
    ]
    .iter()
    .find_map(|full| keys.get(full).cloned())
}

#[cfg(test)]
mod tests {
    use super::super::jaas::parse_single;
    use super::*;

    #[test]
    fn unsecured_options_default_as_kafka_and_refuse_a_negative_skew() {
        let e = parse_single(&format!("{OAUTHBEARER_LOGIN_MODULE} required;")).unwrap();
        let o = unsecured_options(&e).unwrap();
        assert_eq!(o.principal_claim, "sub");
        assert_eq!(o.scope_claim, "scope");
        assert!(o.required_scope.is_empty());
        assert_eq!(o.clock_skew_ms, 0);
        let e = parse_single(&format!(
            "{OAUTHBEARER_LOGIN_MODULE} required unsecuredValidatorPrincipalClaimName=\"user\" \
             unsecuredValidatorRequiredScope=\"read write\" unsecuredValidatorAllowableClockSkewMs=\"500\";"
        ))
        .unwrap();
        let o = unsecured_options(&e).unwrap();
        assert_eq!(o.principal_claim, "user");
        assert_eq!(o.required_scope, vec!["read", "write"]);
        assert_eq!(o.clock_skew_ms, 500);
        let e = parse_single(&format!(
            "{OAUTHBEARER_LOGIN_MODULE} required unsecuredValidatorAllowableClockSkewMs=\"-1\";"
        ))
        .unwrap();
        assert!(unsecured_options(&e).unwrap_err().contains("negative"));
    }

    #[test]
    fn jwks_urls_file_and_http_parse_and_others_are_refused() {
        assert_eq!(
            parse_jwks_url("file:/tmp/jwks.json").unwrap(),
            JwksUrl::File("/tmp/jwks.json".into())
        );
        assert_eq!(
            parse_jwks_url("file:///tmp/jwks.json").unwrap(),
            JwksUrl::File("/tmp/jwks.json".into())
        );
        assert_eq!(
            parse_jwks_url("http://127.0.0.1:8080/keys").unwrap(),
            JwksUrl::Http {
                tls: false,
                host: "127.0.0.1".into(),
                port: 8080,
                path: "/keys".into()
            }
        );
        let https = parse_jwks_url("https://idp.example/keys").unwrap();
        assert_eq!(
            https,
            JwksUrl::Http {
                tls: true,
                host: "idp.example".into(),
                port: 443,
                path: "/keys".into()
            }
        );
        assert_eq!(https.to_string(), "https://idp.example:443/keys");
        assert!(parse_jwks_url("ftp://x/y")
            .unwrap_err()
            .contains("invalid protocol"));
        assert!(parse_jwks_url("file:relative").is_err());
    }

    #[test]
    fn jwks_options_need_the_url_and_apply_defaults() {
        let keys: BTreeMap<String, String> = [
            (
                "listener.name.l.sasl.oauthbearer.jwks.endpoint.url".to_owned(),
                "file:/k.json".to_owned(),
            ),
            (
                "sasl.oauthbearer.expected.audience".to_owned(),
                "a, b".to_owned(),
            ),
            (
                "listener.name.l.oauthbearer.sasl.oauthbearer.sub.claim.name".to_owned(),
                "uid".to_owned(),
            ),
        ]
        .into_iter()
        .collect();
        let entry = parse_single(&format!(
            "{OAUTHBEARER_LOGIN_MODULE} required ssl.truststore.type=\"PEM\";"
        ))
        .unwrap();
        let o = jwks_options(&|k| lookup(&keys, "l", k), &entry).unwrap();
        assert!(o.ssl_options.is_empty(), "only an https URL reads them");
        assert_eq!(o.url, JwksUrl::File("/k.json".into()));
        assert_eq!(o.expected_audience, vec!["a", "b"]);
        assert_eq!(o.sub_claim, "uid");
        assert_eq!(o.scope_claim, "scope");
        assert_eq!(o.clock_skew_s, 30);
        assert_eq!(o.refresh_ms, 3_600_000);
        let (key, why) = jwks_options(&|k| lookup(&keys, "other", k), &entry).unwrap_err();
        assert_eq!(key, "sasl.oauthbearer.jwks.endpoint.url");
        assert!(why.contains("required"));
    }
}
