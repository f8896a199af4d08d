//! `[io]` The JWKS of a listener's KIP-768 validator, kept fresh off the
//! data path: loaded once at start (a JWKS that cannot be read or parsed
//! stops the start, as `VerificationKeyResolverFactory` fails the
//! broker's configure), then re-read every
//! `sasl.oauthbearer.jwks.endpoint.refresh.ms` by one helper thread per
//! listener (Kafka's `RefreshingHttpsJwks` refresh task); a failed refresh
//! keeps the keys it had and retries after
//! `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`, doubling up to
//! `…retry.backoff.max.ms`. Shards read the current set through
//! [`JwksStore::current`] when a token arrives.
//!
//! `file:` URLs are read from disk, `http:` and `https:` URLs with one
//! GET ([`crate::io::http_client`]); an https endpoint is trusted as the
//! `ssl.*` JAAS options say (`JaasOptionsUtils.createSSLSocketFactory`,
//! `VerificationKeyResolverFactory`). An unreachable or untrusted endpoint
//! fails the start when it is first read (`RefreshingHttpsJwks.init`
//! throws, and `OAuthBearerValidatorCallbackHandler.init` fails the
//! configure); later it is logged and the last good key set kept
//! (`RefreshingHttpsJwks.refresh`).

use std::io::Read;
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use crate::config::sasl::oauth::{JwksOptions, JwksUrl};
use crate::io::http_client::{self, Target};
use crate::sasl::oauthbearer::jwks::JwkSet;

/// The largest JWKS document read (a few keys are a few KiB).
const MAX_DOCUMENT: u64 = 1 << 20;
/// Connect and read timeout of one HTTP fetch.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// The current key set of one listener, shared by its shards.
#[derive(Debug, Default)]
pub struct JwksStore {
    keys: RwLock<Arc<JwkSet>>,
}

impl JwksStore {
    /// The keys as last loaded.
    pub fn current(&self) -> Arc<JwkSet> {
        match self.keys.read() {
            Ok(k) => k.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, keys: JwkSet) {
        let mut slot = match self.keys.write() {
            Ok(k) => k,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = Arc::new(keys);
    }
}

/// Load the JWKS of `opts` and start its refresh thread; `Err` names why
/// the start must stop.
pub fn start(listener: &str, opts: &JwksOptions) -> Result<Arc<JwksStore>, String> {
    let source = Source::new(listener, opts).map_err(|e| {
        format!("listener {listener}: cannot use sasl.oauthbearer.jwks.endpoint.url: {e}")
    })?;
    let keys = source.load().map_err(|e| {
        format!("listener {listener}: cannot load sasl.oauthbearer.jwks.endpoint.url: {e}")
    })?;
    tracing::info!(listener, keys = keys.keys.len(), "OAUTHBEARER JWKS loaded");
    let store = Arc::new(JwksStore::default());
    store.set(keys);
    let weak = Arc::downgrade(&store);
    let opts = opts.clone();
    let name = listener.to_owned();
    std::thread::Builder::new()
        .name(format!("jwks-{}", listener.to_ascii_lowercase()))
        .spawn(move || refresh_loop(&name, &weak, &opts, &source))
        .map_err(|e| format!("cannot start the JWKS refresh thread: {e}"))?;
    Ok(store)
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Re-read the JWKS every refresh period until the store is dropped.
fn refresh_loop(listener: &str, store: &Weak<JwksStore>, opts: &JwksOptions, source: &Source) {
    loop {
        std::thread::sleep(millis(opts.refresh_ms));
        let mut backoff = opts.retry_backoff_ms.max(1);
        loop {
            let Some(target) = store.upgrade() else {
                return;
            };
            match source.load() {
                Ok(keys) => {
                    tracing::debug!(
                        listener,
                        keys = keys.keys.len(),
                        "OAUTHBEARER JWKS refreshed"
                    );
                    target.set(keys);
                    break;
                }
                Err(e) => {
                    tracing::warn!(listener, error = %e, retry_ms = backoff, "OAUTHBEARER JWKS refresh failed; keeping the previous keys");
                    drop(target);
                    std::thread::sleep(millis(backoff));
                    backoff = (backoff.saturating_mul(2)).min(opts.retry_backoff_max_ms.max(1));
                }
            }
        }
    }
}

/// Where the keys are read from: a file, or an HTTP(S) endpoint with its
/// TLS client built once.
enum Source {
    File(std::path::PathBuf),
    Http(Target),
}

impl Source {
    fn new(listener: &str, opts: &JwksOptions) -> Result<Source, String> {
        Ok(match &opts.url {
            JwksUrl::File(path) => Source::File(path.clone()),
            JwksUrl::Http {
                tls,
                host,
                port,
                path,
            } => Source::Http(Target {
                host: host.clone(),
                port: *port,
                path: path.clone(),
                tls: if *tls {
                    Some(http_client::tls_from_jaas(listener, &opts.ssl_options)?)
                } else {
                    None
                },
            }),
        })
    }

    fn load(&self) -> Result<JwkSet, String> {
        let bytes = match self {
            Source::File(path) => {
                let mut out = Vec::new();
                std::fs::File::open(path)
                    .and_then(|f| f.take(MAX_DOCUMENT).read_to_end(&mut out))
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                out
            }
            Source::Http(target) => {
                let answer = http_client::send(
                    target,
                    &http_client::Request {
                        method: "GET",
                        headers: Vec::new(),
                        body: None,
                        connect_timeout: HTTP_TIMEOUT,
                        read_timeout: HTTP_TIMEOUT,
                    },
                )?;
                if answer.status != 200 {
                    return Err(format!("{}: HTTP status {}", target.url(), answer.status));
                }
                answer.body
            }
        };
        JwkSet::parse(&bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Write;
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;
    use crate::config::sasl::jaas::parse_single;
    use crate::config::sasl::oauth::{jwks_options, lookup, OAUTHBEARER_LOGIN_MODULE};

    /// A JWKS endpoint that serves one RSA key to its first GET and
    /// answers 503 to the next `failures`; each request's arrival is sent
    /// on the channel. It stops listening after that (refused connects).
    fn flaky_endpoint(failures: usize) -> (u16, mpsc::Receiver<Instant>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for n in 0..=failures {
                let (mut s, _) = listener.accept().unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let _ = tx.send(Instant::now());
                let (status, body) = if n == 0 {
                    (
                        "200 OK",
                        r#"{"keys":[{"kty":"RSA","kid":"k1","n":"AQAB","e":"AQAB"}]}"#,
                    )
                } else {
                    ("503 Service Unavailable", "")
                };
                let _ = write!(
                    s,
                    "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (port, rx)
    }

    /// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms` (Kafka's
    /// `RefreshingHttpsJwks` retry with `…retry.backoff.max.ms`): after a
    /// failed refresh the next GET comes no sooner than the backoff, then
    /// twice it, and the keys loaded before are kept meanwhile.
    #[test]
    fn a_failed_refresh_is_retried_after_the_configured_backoff_doubling() {
        let (port, requests) = flaky_endpoint(3);
        let keys: BTreeMap<String, String> = [
            (
                "sasl.oauthbearer.jwks.endpoint.url",
                format!("http://127.0.0.1:{port}/jwks"),
            ),
            ("sasl.oauthbearer.jwks.endpoint.refresh.ms", "50".into()),
            (
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
                "400".into(),
            ),
            (
                "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
                "800".into(),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        let entry = parse_single(&format!("{OAUTHBEARER_LOGIN_MODULE} required;")).unwrap();
        let opts = jwks_options(&|k| lookup(&keys, "l", k), &entry).unwrap();
        assert_eq!(opts.retry_backoff_ms, 400);
        let store = start("l", &opts).unwrap();
        let wait = Duration::from_secs(20);
        let at: Vec<Instant> = (0..4)
            .map(|_| requests.recv_timeout(wait).unwrap())
            .collect();
        let gap = |i: usize| at[i] - at[i - 1];
        // The first refresh after refresh.ms fails; its retries wait the
        // backoff (400 ms, the default would be 100), then 800 ms.
        assert!(gap(2) >= Duration::from_millis(400), "{:?}", gap(2));
        assert!(gap(3) >= Duration::from_millis(800), "{:?}", gap(3));
        assert_eq!(store.current().keys.len(), 1, "the loaded keys are kept");
    }
}
