//! `[pure]` How the broker logs in with OAUTHBEARER on its own connections
//! (`sasl.mechanism.inter.broker.protocol=OAUTHBEARER`), read as Kafka 3.9
//! reads it from the inter-broker listener's JAAS entry and keys:
//! - the default login callback handler,
//!   `clients/.../oauthbearer/internals/unsecured/OAuthBearerUnsecuredLoginCallbackHandler.java`,
//!   builds an unsigned token from the `unsecuredLogin…` JAAS options;
//! - KIP-768's `OAuthBearerLoginCallbackHandler`, chosen with
//!   `listener.name.<l>.oauthbearer.sasl.login.callback.handler.class`,
//!   takes the token from `sasl.oauthbearer.token.endpoint.url`
//!   (`AccessTokenRetrieverFactory`: `file:` → `FileTokenRetriever`,
//!   `http(s):` → `HttpAccessTokenRetriever` with the JAAS options
//!   `clientId`, `clientSecret`, `scope` and, for https, the `ssl.*`
//!   options, `JaasOptionsUtils`) and the `sasl.login.*` retry and
//!   time-out keys (`ConfigurationUtils`: mechanism prefix first);
//! - both refresh the token as `ExpiringCredentialRefreshingLogin` does,
//!   driven by `sasl.login.refresh.*` (`ExpiringCredentialRefreshConfig`,
//!   the listener's values, ranges from `SaslConfigs`).

use std::collections::BTreeMap;

use super::jaas::JaasEntry;
use super::oauth::{self, JwksUrl};

/// KIP-768's login callback handler (and its deprecated name).
pub const SECURED_LOGIN_HANDLER: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler";
const SECURED_LOGIN_HANDLER_OLD: &str =
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler";
/// The default login callback handler, which may be named explicitly.
pub const UNSECURED_LOGIN_HANDLER: &str = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredLoginCallbackHandler";

/// Is `value` a login callback handler shardlog has built in?
pub fn known_login_handler(value: &str) -> bool {
    matches!(
        value.trim(),
        SECURED_LOGIN_HANDLER | SECURED_LOGIN_HANDLER_OLD | UNSECURED_LOGIN_HANDLER
    )
}

/// The keys of the broker's OAUTHBEARER login (`SaslConfigs`).
pub const LOGIN_KEYS: &[&str] = &[
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
];

/// The `ExpiringCredentialRefreshConfig` keys: read from the listener's
/// configs as they are, never with a mechanism prefix.
pub const REFRESH_KEYS: &[&str] = &[
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.buffer.seconds",
];

/// One claim of an unsecured token.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// `unsecuredLoginStringClaim_<name>`.
    Text(String),
    /// `unsecuredLoginNumberClaim_<name>` (`Double.valueOf`).
    Number(f64),
    /// `unsecuredLoginListClaim_<name>`: the first character is the
    /// delimiter of the rest.
    List(Vec<String>),
}

/// `OAuthBearerUnsecuredLoginCallbackHandler`'s options.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsecuredLogin {
    /// `unsecuredLoginPrincipalClaimName` (default `sub`).
    pub principal_claim: String,
    /// `unsecuredLoginScopeClaimName` (default `scope`).
    pub scope_claim: String,
    /// `unsecuredLoginLifetimeSeconds` (default 3600).
    pub lifetime_s: i64,
    /// The claims besides `iat` and `exp`, in the order written.
    pub claims: Vec<(String, Claim)>,
}

/// `HttpAccessTokenRetriever`'s settings (client_credentials grant).
#[derive(Clone, PartialEq)]
pub struct TokenEndpoint {
    /// An `http:` or `https:` URL.
    pub url: JwksUrl,
    /// The JAAS options `clientId`, `clientSecret`, `scope`.
    pub client_id: String,
    pub client_secret: String,
    pub scope: Option<String>,
    /// For https: the JAAS entry's `ssl.*` options (`JaasOptionsUtils`).
    pub ssl_options: Vec<(String, String)>,
    /// `sasl.login.retry.backoff.ms` (100), `….max.ms` (10000).
    pub retry_backoff_ms: i64,
    pub retry_backoff_max_ms: i64,
    /// `sasl.login.connect.timeout.ms`, `sasl.login.read.timeout.ms`
    /// (unset: the JDK's, no limit; shardlog uses 10 s).
    pub connect_timeout_ms: Option<i64>,
    pub read_timeout_ms: Option<i64>,
}

/// Never the client secret in a log line.
impl std::fmt::Debug for TokenEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenEndpoint")
            .field("url", &self.url)
            .field("client_id", &self.client_id)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// Where the broker's token comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum TokenSource {
    Unsecured(UnsecuredLogin),
    /// `sasl.oauthbearer.token.endpoint.url=file:…`: the token is the
    /// file's text, read at each login (`FileTokenRetriever`).
    File(std::path::PathBuf),
    Endpoint(TokenEndpoint),
}

/// `ExpiringCredentialRefreshConfig`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefreshConfig {
    /// `sasl.login.refresh.window.factor` (0.8, 0.5–1.0).
    pub window_factor: f64,
    /// `sasl.login.refresh.window.jitter` (0.05, 0–0.25).
    pub window_jitter: f64,
    /// `sasl.login.refresh.min.period.seconds` (60, 0–900).
    pub min_period_s: i64,
    /// `sasl.login.refresh.buffer.seconds` (300, 0–3600).
    pub buffer_s: i64,
}

impl Default for RefreshConfig {
    fn default() -> Self {
        Self {
            window_factor: 0.8,
            window_jitter: 0.05,
            min_period_s: 60,
            buffer_s: 300,
        }
    }
}

/// The broker's OAUTHBEARER login.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthLogin {
    pub source: TokenSource,
    /// SASL extensions sent with the token (`unsecuredLoginExtension_<k>`
    /// or, secured, `extension_<k>`).
    pub extensions: Vec<(String, String)>,
    /// `sasl.oauthbearer.scope.claim.name` / `sub.claim.name`, which
    /// `LoginAccessTokenValidator` reads a retrieved token with.
    pub scope_claim: String,
    pub sub_claim: String,
    pub refresh: RefreshConfig,
}

type KeyError = (String, String);

fn bad(key: &str, why: impl Into<String>) -> KeyError {
    (key.to_owned(), why.into())
}

/// `OAuthBearerClientInitialResponse.validateExtensions`: keys of
/// letters, not `auth`; values of printable ASCII, space and tab/CR/LF.
fn check_extension(key: &str, value: &str) -> Result<(), String> {
    if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphabetic()) || key == "auth" {
        return Err(format!("invalid SASL extension key {key:?}"));
    }
    if value.is_empty()
        || !value
            .chars()
            .all(|c| matches!(c, '\x21'..='\x7e' | ' ' | '\t' | '\r' | '\n'))
    {
        return Err(format!("invalid value of SASL extension {key:?}"));
    }
    Ok(())
}

fn unsecured_login(entry: &JaasEntry, jaas_key: &str) -> Result<UnsecuredLogin, KeyError> {
    if entry.options.is_empty()
        || entry
            .options
            .iter()
            .all(|(k, _)| k.starts_with("unsecuredLoginExtension_"))
    {
        return Err(bad(
            jaas_key,
            "the broker logs in with OAUTHBEARER, but this entry gives no token \
             (OAuthBearerUnsecuredLoginCallbackHandler: \"this login cannot be used to establish \
             client connections\"); set unsecuredLoginStringClaim_sub=\"<broker principal>\"",
        ));
    }
    let text = |k: &str, default: &str| match entry.option(k).map(str::trim) {
        Some(v) if !v.is_empty() => v.to_owned(),
        _ => default.to_owned(),
    };
    let lifetime_s = text("unsecuredLoginLifetimeSeconds", "3600")
        .parse::<i64>()
        .map_err(|e| bad(jaas_key, format!("unsecuredLoginLifetimeSeconds: {e}")))?;
    let mut claims = Vec::new();
    for (k, v) in &entry.options {
        let (name, claim) = if let Some(n) = k.strip_prefix("unsecuredLoginStringClaim_") {
            (n, Claim::Text(v.clone()))
        } else if let Some(n) = k.strip_prefix("unsecuredLoginNumberClaim_") {
            let x = v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(jaas_key, format!("{k}: not a number")))?;
            (n, Claim::Number(x))
        } else if let Some(n) = k.strip_prefix("unsecuredLoginListClaim_") {
            (n, Claim::List(list_claim(v)))
        } else {
            continue;
        };
        if name.is_empty() {
            continue;
        }
        if name == "iat" || name == "exp" {
            return Err(bad(
                jaas_key,
                format!("Cannot explicitly set the '{name}' claim"),
            ));
        }
        claims.retain(|(n, _): &(String, Claim)| n != name);
        claims.push((name.to_owned(), claim));
    }
    let principal_claim = text("unsecuredLoginPrincipalClaimName", "sub");
    match claims.iter().find(|(n, _)| *n == principal_claim) {
        Some((_, Claim::Text(v))) if !v.trim().is_empty() => {}
        _ => {
            return Err(bad(
                jaas_key,
                format!(
                    "the unsecured token needs a non-empty string claim {principal_claim:?} \
                     (unsecuredLoginStringClaim_{principal_claim})"
                ),
            ))
        }
    }
    Ok(UnsecuredLogin {
        principal_claim,
        scope_claim: text("unsecuredLoginScopeClaimName", "scope"),
        lifetime_s,
        claims,
    })
}

/// `listJsonText`: the first character delimits the rest; an empty
/// element at either end or between two delimiters is kept once, as
/// Kafka appends a single `""`.
fn list_claim(value: &str) -> Vec<String> {
    let mut chars = value.chars();
    let Some(delimiter) = chars.next() else {
        return Vec::new();
    };
    let rest: &str = chars.as_str();
    if rest.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<String> = rest
        .split(delimiter)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    let doubled: String = [delimiter, delimiter].iter().collect();
    if rest.starts_with(delimiter) || rest.ends_with(delimiter) || rest.contains(&doubled) {
        out.push(String::new());
    }
    out
}

fn long(get: &dyn Fn(&str) -> Option<String>, key: &str, default: i64) -> Result<i64, KeyError> {
    match get(key) {
        None => Ok(default),
        Some(v) => v
            .trim()
            .parse::<i64>()
            .map_err(|_| bad(key, "must be a long")),
    }
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T, KeyError> {
    if v < lo || v > hi {
        return Err(bad(key, format!("Value must be in [{lo}, {hi}]")));
    }
    Ok(v)
}

/// `sasl.login.refresh.*` as `refresh_get` (the listener's value, then
/// the broker-wide one) answers them.
pub fn refresh_config(
    refresh_get: &dyn Fn(&str) -> Option<String>,
) -> Result<RefreshConfig, KeyError> {
    let d = RefreshConfig::default();
    let double = |key: &str, default: f64, lo: f64, hi: f64| -> Result<f64, KeyError> {
        let v = match refresh_get(key) {
            None => default,
            Some(v) => v
                .trim()
                .parse::<f64>()
                .map_err(|_| bad(key, "must be a double"))?,
        };
        in_range(key, v, lo, hi)
    };
    let short = |key: &str, default: i64, hi: i64| -> Result<i64, KeyError> {
        in_range(key, long(refresh_get, key, default)?, 0, hi)
    };
    Ok(RefreshConfig {
        window_factor: double(
            "sasl.login.refresh.window.factor",
            d.window_factor,
            0.5,
            1.0,
        )?,
        window_jitter: double(
            "sasl.login.refresh.window.jitter",
            d.window_jitter,
            0.0,
            0.25,
        )?,
        min_period_s: short("sasl.login.refresh.min.period.seconds", d.min_period_s, 900)?,
        buffer_s: short("sasl.login.refresh.buffer.seconds", d.buffer_s, 3600)?,
    })
}

/// The broker's OAUTHBEARER login on `listener` (lower case): `get`
/// looks a key up as `ConfigurationUtils.get` does (`oauth::lookup`),
/// `refresh_get` as the listener's configs hold it, `handler` is
/// `listener.name.<l>.oauthbearer.sasl.login.callback.handler.class`,
/// `entry` the listener's OAUTHBEARER JAAS entry and `jaas_key` its key.
pub fn login_options(
    get: &dyn Fn(&str) -> Option<String>,
    refresh_get: &dyn Fn(&str) -> Option<String>,
    handler: Option<&str>,
    entry: &JaasEntry,
    jaas_key: &str,
) -> Result<OAuthLogin, KeyError> {
    let secured = handler.is_some_and(|h| h.trim() != UNSECURED_LOGIN_HANDLER);
    let refresh = refresh_config(refresh_get)?;
    let claim_name = |k: &str, default: &str| -> Result<String, KeyError> {
        match get(k) {
            None => Ok(default.to_owned()),
            Some(v) if v.trim().is_empty() => Err(bad(k, "must not be blank")),
            Some(v) => Ok(v.trim().to_owned()),
        }
    };
    let scope_claim = claim_name("sasl.oauthbearer.scope.claim.name", "scope")?;
    let sub_claim = claim_name("sasl.oauthbearer.sub.claim.name", "sub")?;
    let (source, prefix) = if secured {
        (secured_source(get, entry, jaas_key)?, "extension_")
    } else {
        (
            TokenSource::Unsecured(unsecured_login(entry, jaas_key)?),
            "unsecuredLoginExtension_",
        )
    };
    let mut extensions = Vec::new();
    for (k, v) in &entry.options {
        if let Some(name) = k.strip_prefix(prefix) {
            check_extension(name, v).map_err(|e| bad(jaas_key, e))?;
            extensions.push((name.to_owned(), v.clone()));
        }
    }
    Ok(OAuthLogin {
        source,
        extensions,
        scope_claim,
        sub_claim,
        refresh,
    })
}

fn secured_source(
    get: &dyn Fn(&str) -> Option<String>,
    entry: &JaasEntry,
    jaas_key: &str,
) -> Result<TokenSource, KeyError> {
    let url_key = "sasl.oauthbearer.token.endpoint.url";
    let Some(text) = get(url_key) else {
        return Err(bad(
            url_key,
            "The OAuth configuration option sasl.oauthbearer.token.endpoint.url is required by \
             OAuthBearerLoginCallbackHandler",
        ));
    };
    let url = oauth::parse_url(url_key, &text).map_err(|e| bad(url_key, e))?;
    if let JwksUrl::File(path) = url {
        return Ok(TokenSource::File(path));
    }
    let option = |k: &str, required: bool| -> Result<Option<String>, KeyError> {
        match entry.option(k).map(str::trim) {
            Some(v) if !v.is_empty() => Ok(Some(v.to_owned())),
            _ if required => Err(bad(
                jaas_key,
                format!("The OAuth configuration option {k} value must be non-null"),
            )),
            _ => Ok(None),
        }
    };
    let client_id = option("clientId", true)?.unwrap_or_default();
    let client_secret = option("clientSecret", true)?.unwrap_or_default();
    let timeout = |k: &str| -> Result<Option<i64>, KeyError> {
        match get(k) {
            None => Ok(None),
            Some(v) => match v.trim().parse::<i32>() {
                Ok(n) if n >= 0 => Ok(Some(i64::from(n))),
                _ => Err(bad(k, "must be a non-negative int")),
            },
        }
    };
    let ssl_options = match url {
        JwksUrl::Http { tls: true, .. } => oauth::jaas_ssl_options(entry),
        _ => Vec::new(),
    };
    Ok(TokenSource::Endpoint(TokenEndpoint {
        url,
        client_id,
        client_secret,
        scope: option("scope", false)?,
        ssl_options,
        retry_backoff_ms: long(get, "sasl.login.retry.backoff.ms", 100)?,
        retry_backoff_max_ms: long(get, "sasl.login.retry.backoff.max.ms", 10_000)?,
        connect_timeout_ms: timeout("sasl.login.connect.timeout.ms")?,
        read_timeout_ms: timeout("sasl.login.read.timeout.ms")?,
    }))
}

/// A refresh key of `listener` (lower case): `listener.name.<l>.<k>`,
/// then `<k>` (`valuesWithPrefixOverride`).
pub fn refresh_lookup(keys: &BTreeMap<String, String>, listener: &str, k: &str) -> Option<String> {
    keys.get(&format!("listener.name.{listener}.{k}"))
        .or_else(|| keys.get(k))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::super::jaas::parse_single;
    use super::*;

    const LOGIN: &str = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

    fn entry(options: &str) -> JaasEntry {
        parse_single(&format!("{LOGIN} required {options};")).unwrap()
    }

    #[test]
    fn the_unsecured_login_reads_its_claims_and_needs_a_principal() {
        let none = |_: &str| None;
        let e = entry(
            "unsecuredLoginStringClaim_sub=\"broker\" unsecuredLoginListClaim_scope=\",a,b\" \
             unsecuredLoginNumberClaim_n=\"1.5\" unsecuredLoginLifetimeSeconds=\"20\" \
             unsecuredLoginExtension_traceId=\"x1\"",
        );
        let o = login_options(&none, &none, None, &e, "k").unwrap();
        let TokenSource::Unsecured(u) = &o.source else {
            panic!("{o:?}")
        };
        assert_eq!(u.lifetime_s, 20);
        assert_eq!(u.principal_claim, "sub");
        assert_eq!(
            u.claims,
            vec![
                ("sub".to_owned(), Claim::Text("broker".into())),
                (
                    "scope".to_owned(),
                    Claim::List(vec!["a".into(), "b".into()])
                ),
                ("n".to_owned(), Claim::Number(1.5)),
            ]
        );
        assert_eq!(o.extensions, vec![("traceId".to_owned(), "x1".to_owned())]);
        assert_eq!(o.refresh, RefreshConfig::default());
        for bad_entry in [
            entry(""),
            entry("unsecuredLoginExtension_a=\"b\""),
            entry("unsecuredLoginStringClaim_exp=\"1\" unsecuredLoginStringClaim_sub=\"b\""),
            entry("unsecuredLoginStringClaim_sub=\"b\" unsecuredLoginExtension_auth=\"x\""),
        ] {
            let (key, _) = login_options(&none, &none, None, &bad_entry, "k").unwrap_err();
            assert_eq!(key, "k");
        }
        assert_eq!(list_claim("|a||b"), vec!["a", "b", ""]);
        assert!(list_claim("|").is_empty());
    }

    #[test]
    fn the_secured_login_needs_its_endpoint_and_client_and_checks_ranges() {
        let keys: BTreeMap<String, String> = [
            (
                "sasl.oauthbearer.token.endpoint.url",
                "https://idp:8443/token",
            ),
            ("sasl.login.retry.backoff.ms", "50"),
            ("sasl.login.read.timeout.ms", "2000"),
            ("sasl.login.refresh.window.factor", "0.9"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let get = |k: &str| keys.get(k).cloned();
        let e = entry(
            "clientId=\"broker\" clientSecret=\"s3cret\" scope=\"kafka\" \
             ssl.truststore.type=\"PEM\" extension_x=\"y\"",
        );
        let o = login_options(&get, &get, Some(SECURED_LOGIN_HANDLER), &e, "k").unwrap();
        let TokenSource::Endpoint(t) = &o.source else {
            panic!("{o:?}")
        };
        assert_eq!((t.retry_backoff_ms, t.retry_backoff_max_ms), (50, 10_000));
        assert_eq!(
            (t.connect_timeout_ms, t.read_timeout_ms),
            (None, Some(2000))
        );
        assert_eq!(t.scope.as_deref(), Some("kafka"));
        assert_eq!(
            t.ssl_options,
            vec![("ssl.truststore.type".into(), "PEM".into())]
        );
        assert!(!format!("{o:?}").contains("s3cret"));
        assert_eq!(o.refresh.window_factor, 0.9);
        assert_eq!(o.extensions, vec![("x".to_owned(), "y".to_owned())]);
        let (key, _) = login_options(
            &get,
            &get,
            Some(SECURED_LOGIN_HANDLER),
            &entry("clientId=\"b\""),
            "k",
        )
        .unwrap_err();
        assert_eq!(key, "k", "clientSecret is required");
        let none = |_: &str| None;
        let (key, _) =
            login_options(&none, &none, Some(SECURED_LOGIN_HANDLER), &e, "k").unwrap_err();
        assert_eq!(key, "sasl.oauthbearer.token.endpoint.url");
        let file = |k: &str| {
            (k == "sasl.oauthbearer.token.endpoint.url").then(|| "file:/run/token".to_owned())
        };
        let o = login_options(&file, &none, Some(SECURED_LOGIN_HANDLER), &entry(""), "k").unwrap();
        assert_eq!(o.source, TokenSource::File("/run/token".into()));
        for (k, v) in [
            ("sasl.login.refresh.window.factor", "0.4"),
            ("sasl.login.refresh.window.jitter", "0.3"),
            ("sasl.login.refresh.min.period.seconds", "901"),
            ("sasl.login.refresh.buffer.seconds", "-1"),
        ] {
            let one = |key: &str| (key == k).then(|| v.to_owned());
            assert_eq!(refresh_config(&one).unwrap_err().0, k);
        }
    }
}
