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
//! `file:` URLs are read from disk, `http:` URLs with one HTTP/1.0 GET.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use crate::config::sasl::oauth::{JwksOptions, JwksUrl};
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
    let keys = load(&opts.url).map_err(|e| {
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
        .spawn(move || refresh_loop(&name, &weak, &opts))
        .map_err(|e| format!("cannot start the JWKS refresh thread: {e}"))?;
    Ok(store)
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// Re-read the JWKS every refresh period until the store is dropped.
fn refresh_loop(listener: &str, store: &Weak<JwksStore>, opts: &JwksOptions) {
    loop {
        std::thread::sleep(millis(opts.refresh_ms));
        let mut backoff = opts.retry_backoff_ms.max(1);
        loop {
            let Some(target) = store.upgrade() else {
                return;
            };
            match load(&opts.url) {
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

fn load(url: &JwksUrl) -> Result<JwkSet, String> {
    let bytes = match url {
        JwksUrl::File(path) => {
            let mut out = Vec::new();
            std::fs::File::open(path)
                .and_then(|f| f.take(MAX_DOCUMENT).read_to_end(&mut out))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            out
        }
        JwksUrl::Http { host, port, path } => http_get(host, *port, path)?,
    };
    JwkSet::parse(&bytes)
}

/// One HTTP/1.0 GET (no chunked answers, the server closes when done).
fn http_get(host: &str, port: u16, path: &str) -> Result<Vec<u8>, String> {
    let where_ = format!("http://{host}:{port}{path}");
    let addr = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{where_}: {e}"))?
        .next()
        .ok_or_else(|| format!("{where_}: no address"))?;
    let mut s =
        TcpStream::connect_timeout(&addr, HTTP_TIMEOUT).map_err(|e| format!("{where_}: {e}"))?;
    s.set_read_timeout(Some(HTTP_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(HTTP_TIMEOUT)))
        .map_err(|e| format!("{where_}: {e}"))?;
    let request = format!(
        "GET {path} HTTP/1.0\r\nHost: {host}:{port}\r\nAccept: application/json\r\n\
         User-Agent: shardlog\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes())
        .map_err(|e| format!("{where_}: {e}"))?;
    let mut answer = Vec::new();
    s.take(MAX_DOCUMENT)
        .read_to_end(&mut answer)
        .map_err(|e| format!("{where_}: {e}"))?;
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("{where_}: no complete HTTP answer"))?;
    let head = String::from_utf8_lossy(&answer[..split]);
    let status = head.split_whitespace().nth(1).unwrap_or("");
    if status != "200" {
        return Err(format!(
            "{where_}: HTTP {}",
            head.lines().next().unwrap_or("")
        ));
    }
    Ok(answer[split + 4..].to_vec())
}
