//! `[io]` The broker's OAUTHBEARER token for its own connections, kept
//! fresh off the data shards as Kafka's `ExpiringCredentialRefreshingLogin`
//! keeps it: fetched once at start (a failure stops the start, as the
//! broker's `LoginManager` fails its configure), then again at the time
//! `sasl::oauth_login::refresh_at` picks (`sasl.login.refresh.*`) by one
//! helper thread per listener; a failed refresh keeps the token it had,
//! logs why and tries again 10 s later
//! (`DELAY_SECONDS_BEFORE_NEXT_RETRY_WHEN_RELOGIN_FAILS`). New
//! connections and re-authentications read [`TokenStore::current`].
//!
//! The token comes from the unsecured JAAS options, a `file:` token
//! endpoint (`FileTokenRetriever`, re-read at each refresh) or an
//! `http(s):` one with the client_credentials grant
//! (`HttpAccessTokenRetriever`, retried as Kafka's `Retry` does:
//! `sasl.login.retry.backoff.ms` doubling, for at most
//! `sasl.login.retry.backoff.max.ms`, not after a status Kafka deems
//! final).

use std::sync::{Arc, RwLock, Weak};
use std::time::Duration;

use ring::rand::SecureRandom;

use crate::config::sasl::oauth::JwksUrl;
use crate::config::sasl::oauth_login::{OAuthLogin, TokenEndpoint, TokenSource};
use crate::io::clock::{Clock, SystemClock};
use crate::io::http_client::{self, Target};
use crate::sasl::oauth_login::{self as login, LoginToken};

/// The JDK has no connect or read limit by default; shardlog's.
const DEFAULT_TIMEOUT_MS: i64 = 10_000;
/// `ExpiringCredentialRefreshingLogin`'s wait after a failed refresh.
const RELOGIN_RETRY: Duration = Duration::from_secs(10);
/// `HttpAccessTokenRetriever.UNRETRYABLE_HTTP_CODES`.
const FINAL_STATUSES: &[u16] = &[
    400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505,
];

/// The current token of one listener's logins.
#[derive(Debug)]
pub struct TokenStore {
    token: RwLock<Arc<LoginToken>>,
    /// The SASL extensions sent with it.
    pub extensions: Vec<(String, String)>,
}

impl TokenStore {
    /// The token as last fetched.
    pub fn current(&self) -> Arc<LoginToken> {
        match self.token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set(&self, token: LoginToken) {
        let mut slot = match self.token.write() {
            Ok(t) => t,
            Err(poisoned) => poisoned.into_inner(),
        };
        *slot = Arc::new(token);
    }
}

/// A random number in [0, 1) (the refresh and re-authentication jitter).
pub fn unit_random() -> f64 {
    let mut bytes = [0u8; 4];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        return 0.5;
    }
    f64::from(u32::from_be_bytes(bytes)) / 4_294_967_296.0
}

/// Where the tokens come from, its TLS client built once.
struct Retriever {
    login: OAuthLogin,
    endpoint: Option<(Target, TokenEndpoint)>,
}

impl Retriever {
    fn new(listener: &str, login: &OAuthLogin) -> Result<Retriever, String> {
        let endpoint = match &login.source {
            TokenSource::Endpoint(e) => {
                let JwksUrl::Http {
                    tls,
                    host,
                    port,
                    path,
                } = &e.url
                else {
                    return Err("the token endpoint is not an http(s) URL".into());
                };
                let tls = if *tls {
                    Some(http_client::tls_from_jaas(listener, &e.ssl_options)?)
                } else {
                    None
                };
                Some((
                    Target {
                        host: host.clone(),
                        port: *port,
                        path: path.clone(),
                        tls,
                    },
                    e.clone(),
                ))
            }
            _ => None,
        };
        Ok(Retriever {
            login: login.clone(),
            endpoint,
        })
    }

    fn fetch(&self, clock: &SystemClock) -> Result<LoginToken, String> {
        match (&self.login.source, &self.endpoint) {
            (TokenSource::Unsecured(u), _) => Ok(login::unsecured_token(u, clock.wall_ms())),
            (TokenSource::File(path), _) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                login::read_token(&text, &self.login.sub_claim)
            }
            (TokenSource::Endpoint(_), Some((target, e))) => {
                let access = post_with_retry(clock, target, e)?;
                login::read_token(&access, &self.login.sub_claim)
                    .map_err(|why| format!("{}: {why}", target.url()))
            }
            (TokenSource::Endpoint(_), None) => Err("no token endpoint".into()),
        }
    }
}

fn millis(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// One client_credentials POST, retried as `Retry.execute` retries it.
fn post_with_retry(
    clock: &SystemClock,
    target: &Target,
    e: &TokenEndpoint,
) -> Result<String, String> {
    let (authorization, body) =
        login::client_credentials(&e.client_id, &e.client_secret, e.scope.as_deref());
    let end = clock.mono_ms() + e.retry_backoff_max_ms;
    let mut attempt: u32 = 0;
    loop {
        attempt += 1;
        let answer = http_client::send(
            target,
            &http_client::Request {
                method: "POST",
                headers: vec![
                    ("Authorization", authorization.clone()),
                    (
                        "Content-Type",
                        "application/x-www-form-urlencoded".to_owned(),
                    ),
                ],
                body: Some(body.as_bytes()),
                connect_timeout: millis(e.connect_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
                read_timeout: millis(e.read_timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)),
            },
        );
        let error = match answer {
            Ok(a) if a.status == 200 || a.status == 201 => return login::access_token(&a.body),
            Ok(a) if FINAL_STATUSES.contains(&a.status) => {
                return Err(format!(
                    "{}: the response code {} was encountered reading the token endpoint \
                     response; will not attempt further retries",
                    target.url(),
                    a.status
                ))
            }
            Ok(a) => format!("{}: unexpected response code {}", target.url(), a.status),
            Err(why) => why,
        };
        let now = clock.mono_ms();
        let wait = e
            .retry_backoff_ms
            .saturating_mul(1i64 << (attempt - 1).min(30))
            .min(end - now);
        if wait <= 0 {
            return Err(error);
        }
        tracing::debug!(error = %error, wait_ms = wait, "OAUTHBEARER token endpoint failed; retrying");
        std::thread::sleep(millis(wait));
    }
}

/// Log in with `login` for the broker's connections on `listener` and
/// start its refresh thread; `Err` names why the start must stop.
pub fn start(listener: &str, login: &OAuthLogin) -> Result<Arc<TokenStore>, String> {
    let fail =
        |e: String| format!("listener {listener}: the broker's OAUTHBEARER login failed: {e}");
    let retriever = Retriever::new(listener, login).map_err(fail)?;
    let clock = SystemClock::new();
    let token = retriever.fetch(&clock).map_err(fail)?;
    tracing::info!(
        listener,
        principal = %token.principal,
        expires_ms = token.expires_ms,
        "OAUTHBEARER login of the broker's own connections"
    );
    let store = Arc::new(TokenStore {
        token: RwLock::new(Arc::new(token)),
        extensions: login.extensions.clone(),
    });
    let weak = Arc::downgrade(&store);
    let name = listener.to_owned();
    std::thread::Builder::new()
        .name(format!("oauth-login-{}", listener.to_ascii_lowercase()))
        .spawn(move || refresh_loop(&name, &weak, &retriever, &clock))
        .map_err(|e| format!("cannot start the OAUTHBEARER token refresh thread: {e}"))?;
    Ok(store)
}

/// Fetch a new token when the current one is due, until the store is
/// dropped.
fn refresh_loop(
    listener: &str,
    store: &Weak<TokenStore>,
    retriever: &Retriever,
    clock: &SystemClock,
) {
    let mut wait = {
        let Some(s) = store.upgrade() else {
            return;
        };
        let now = clock.wall_ms();
        login::refresh_at(now, &s.current(), &retriever.login.refresh, unit_random()) - now
    };
    loop {
        std::thread::sleep(millis(wait.max(0)));
        let Some(target) = store.upgrade() else {
            return;
        };
        match retriever.fetch(clock) {
            Ok(token) => {
                let now = clock.wall_ms();
                wait =
                    login::refresh_at(now, &token, &retriever.login.refresh, unit_random()) - now;
                tracing::info!(
                    listener,
                    principal = %token.principal,
                    expires_ms = token.expires_ms,
                    next_refresh_ms = wait,
                    "OAUTHBEARER token refreshed"
                );
                target.set(token);
            }
            Err(e) => {
                tracing::warn!(listener, error = %e, "OAUTHBEARER token refresh failed; keeping the current token and trying again in 10 s");
                wait = i64::try_from(RELOGIN_RETRY.as_millis()).unwrap_or(10_000);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;

    use super::*;
    use crate::config::sasl::broker_client;
    use crate::config::sasl::oauth_login::SECURED_LOGIN_HANDLER;
    use crate::config::ServerConfig;

    /// The broker's KIP-768 login on its SASL_PLAINTEXT inter-broker
    /// listener from `server.properties` text: the client_credentials
    /// grant at `http://127.0.0.1:<port>/token`, plus `extra` lines.
    fn login(port: u16, extra: &str) -> OAuthLogin {
        let text = format!(
            "listeners=SASL_PLAINTEXT://127.0.0.1:9092\n\
             security.inter.broker.protocol=SASL_PLAINTEXT\n\
             sasl.enabled.mechanisms=OAUTHBEARER\n\
             sasl.mechanism.inter.broker.protocol=OAUTHBEARER\n\
             listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config=\
             org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             clientId=\"broker\" clientSecret=\"secret\";\n\
             listener.name.sasl_plaintext.oauthbearer.sasl.login.callback.handler.class=\
             {SECURED_LOGIN_HANDLER}\n\
             sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:{port}/token\n{extra}"
        );
        let config = ServerConfig::from_properties(&text, &[]).unwrap().config;
        let client = broker_client(&config, "SASL_PLAINTEXT").unwrap().unwrap();
        client.oauth.unwrap()
    }

    /// Read one request (head and Content-Length body); false at EOF.
    fn read_request(s: &mut TcpStream) -> bool {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            if s.read(&mut byte).unwrap_or(0) == 0 {
                return false;
            }
            head.push(byte[0]);
        }
        let text = String::from_utf8_lossy(&head).to_ascii_lowercase();
        let length = text
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        s.read_exact(&mut vec![0u8; length]).is_ok()
    }

    /// Answer the POSTs accepted on `listener`, counted in `posts`: 503
    /// to the first `failures`, then an access token for `broker`.
    fn serve(listener: &TcpListener, failures: usize, posts: &AtomicUsize) {
        let b64 = |v: &str| URL_SAFE_NO_PAD.encode(v);
        let jwt = format!(
            "{}.{}.{}",
            b64(r#"{"alg":"none"}"#),
            b64(r#"{"sub":"broker","iat":1,"exp":4000000000}"#),
            b64("signature")
        );
        let token = format!(r#"{{"access_token":"{jwt}","token_type":"bearer"}}"#);
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            if !read_request(&mut s) {
                continue;
            }
            let (status, body) = if posts.fetch_add(1, Ordering::SeqCst) < failures {
                ("503 Service Unavailable", "")
            } else {
                ("200 OK", token.as_str())
            };
            let _ = write!(
                s,
                "HTTP/1.0 {status}\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
        }
    }

    /// A token endpoint answering 503 to its first `failures` POSTs.
    fn endpoint(failures: usize) -> (u16, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let posts = Arc::new(AtomicUsize::new(0));
        let counted = posts.clone();
        std::thread::spawn(move || serve(&listener, failures, &counted));
        (port, posts)
    }

    /// A token endpoint whose accept queue stays full for `hold` (a listen
    /// backlog of 0 holding one connection): the kernel drops a client's
    /// SYN until then, so a connect waits. Then it serves tokens.
    fn busy_endpoint(hold: Duration) -> (u16, Arc<AtomicUsize>) {
        use socket2::{Domain, Socket, Type};
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
        socket
            .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        socket.listen(0).unwrap();
        let listener = TcpListener::from(socket);
        let port = listener.local_addr().unwrap().port();
        let filler = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let posts = Arc::new(AtomicUsize::new(0));
        let counted = posts.clone();
        std::thread::spawn(move || {
            std::thread::sleep(hold);
            drop(filler);
            serve(&listener, 0, &counted);
        });
        (port, posts)
    }

    /// `sasl.login.retry.backoff.max.ms` (`HttpAccessTokenRetriever`'s
    /// `Retry.execute`): the whole time the token POST is retried. At 0 a
    /// failing endpoint is asked once; at 1500 it is asked again (after
    /// `sasl.login.retry.backoff.ms`, doubling) until 1.5 s are spent, and
    /// an endpoint that recovers meanwhile logs the broker in.
    #[test]
    fn the_retry_backoff_max_bounds_how_long_the_token_endpoint_is_retried() {
        let (port, posts) = endpoint(usize::MAX);
        let once = login(
            port,
            "sasl.login.retry.backoff.ms=100\nsasl.login.retry.backoff.max.ms=0\n",
        );
        let e = start("SASL_PLAINTEXT", &once).unwrap_err();
        assert!(e.contains("unexpected response code 503"), "{e}");
        assert_eq!(posts.load(Ordering::SeqCst), 1, "no retry at 0");

        let budget = "sasl.login.retry.backoff.ms=100\nsasl.login.retry.backoff.max.ms=1500\n";
        let t = Instant::now();
        let e = start("SASL_PLAINTEXT", &login(port, budget)).unwrap_err();
        let took = t.elapsed();
        assert!(e.contains("unexpected response code 503"), "{e}");
        assert!(
            took >= Duration::from_millis(1500),
            "gave up after {took:?}"
        );
        assert!(
            took < Duration::from_secs(10),
            "the default budget: {took:?}"
        );
        let retried = posts.load(Ordering::SeqCst) - 1;
        assert!(retried >= 3, "{retried} POSTs within the budget");

        let (port, posts) = endpoint(2);
        let store = start("SASL_PLAINTEXT", &login(port, budget)).unwrap();
        assert_eq!(store.current().principal, "broker");
        assert_eq!(posts.load(Ordering::SeqCst), 3);
    }

    /// `sasl.login.connect.timeout.ms` (`HttpAccessTokenRetriever`'s
    /// `HttpURLConnection.setConnectTimeout`): while the endpoint's accept
    /// queue is full for 2 s, a 300 ms connect timeout fails the login
    /// with no retry left; 8 s waits until the endpoint accepts (the SYN
    /// is sent again after 1 s and 3 s) and logs in.
    #[test]
    fn the_connect_timeout_bounds_the_wait_for_the_token_endpoint() {
        let (port, posts) = busy_endpoint(Duration::from_secs(2));
        let short = login(
            port,
            "sasl.login.connect.timeout.ms=300\nsasl.login.retry.backoff.max.ms=0\n",
        );
        let t = Instant::now();
        let e = start("SASL_PLAINTEXT", &short).unwrap_err();
        assert!(
            t.elapsed() >= Duration::from_millis(300),
            "{:?}",
            t.elapsed()
        );
        assert!(e.contains("timed out"), "{e}");
        assert_eq!(posts.load(Ordering::SeqCst), 0);

        let long = login(
            port,
            "sasl.login.connect.timeout.ms=8000\nsasl.login.retry.backoff.max.ms=0\n",
        );
        let store = start("SASL_PLAINTEXT", &long).unwrap();
        assert_eq!(store.current().principal, "broker");
        assert_eq!(posts.load(Ordering::SeqCst), 1);
    }
}
