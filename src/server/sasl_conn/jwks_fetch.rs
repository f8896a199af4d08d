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
