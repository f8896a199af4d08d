//! `[io]` The blocking HTTP(S) client of the OAUTHBEARER endpoints a
//! broker reads off its data shards: the JWKS of KIP-768's validator
//! (jose4j's `Get`, used by Kafka's `RefreshingHttpsJwks`) and the token
//! endpoint of its own logins (`HttpAccessTokenRetriever`, a
//! `HttpURLConnection`). One request per connection (HTTP/1.0, the server
//! closes when done, so no chunked answers); `https:` runs it over a
//! rustls session whose configuration the caller built from the JAAS
//! options' `ssl.*` settings (`JaasOptionsUtils.createSSLSocketFactory`),
//! the host name checked as `HttpsURLConnection` checks it.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::ServerName;

/// The largest answer read (a JWKS or a token response is a few KiB).
const MAX_ANSWER: usize = 1 << 20;

/// Where a request goes.
#[derive(Clone)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub path: String,
    /// The TLS client configuration of an `https:` URL.
    pub tls: Option<Arc<rustls::ClientConfig>>,
}

impl Target {
    /// The URL, for messages.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}:{}{}", self.host, self.port, self.path)
    }
}

/// The TLS client of an `https:` endpoint from the `ssl.*` options of the
/// JAAS entry (`JaasOptionsUtils.getSslClientConfig`: Kafka's client SSL
/// keys, unprefixed; none given: the default trust store). The host name
/// is always checked (`HttpsURLConnection`'s own verifier, whatever
/// `ssl.endpoint.identification.algorithm` says).
pub fn tls_from_jaas(
    listener: &str,
    options: &[(String, String)],
) -> Result<Arc<rustls::ClientConfig>, String> {
    let lookup = |k: &str| {
        options
            .iter()
            .rev()
            .find(|(name, _)| name == k)
            .map(|(_, v)| v.clone())
    };
    let why = |e: crate::config::ConfigError| {
        format!("the ssl.* options of listener {listener}'s OAUTHBEARER JAAS entry: {e}")
    };
    let mut settings =
        crate::tls::SslSettings::resolve_with_protocol(listener, false, &lookup).map_err(why)?;
    settings.endpoint_identification_algorithm = "https".into();
    crate::tls::client_config(&settings).map_err(why)
}

/// One request.
pub struct Request<'a> {
    /// `GET` or `POST`.
    pub method: &'a str,
    /// Extra headers (`Authorization`, `Content-Type`, …).
    pub headers: Vec<(&'a str, String)>,
    pub body: Option<&'a [u8]>,
    /// Connect timeout (`sasl.login.connect.timeout.ms`).
    pub connect_timeout: Duration,
    /// Read timeout (`sasl.login.read.timeout.ms`).
    pub read_timeout: Duration,
}

/// An answer: the status code and the body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Send `req` to `target`; `Err` names the URL and why (refused
/// connection, a certificate not trusted, a time-out, a bad answer).
pub fn send(target: &Target, req: &Request<'_>) -> Result<Answer, String> {
    let url = target.url();
    let at = |e: &dyn std::fmt::Display| format!("{url}: {e}");
    let addrs: Vec<_> = (target.host.as_str(), target.port)
        .to_socket_addrs()
        .map_err(|e| at(&e))?
        .collect();
    let mut last = at(&"no address");
    let mut connected = None;
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, req.connect_timeout) {
            Ok(s) => {
                connected = Some(s);
                break;
            }
            Err(e) => last = at(&e),
        }
    }
    let tcp = connected.ok_or(last)?;
    tcp.set_read_timeout(Some(req.read_timeout))
        .and_then(|()| tcp.set_write_timeout(Some(req.read_timeout)))
        .map_err(|e| at(&e))?;
    let mut head = format!(
        "{} {} HTTP/1.0\r\nHost: {}:{}\r\nAccept: application/json\r\nCache-Control: no-cache\r\n\
         User-Agent: shardlog\r\nConnection: close\r\n",
        req.method, target.path, target.host, target.port
    );
    for (k, v) in &req.headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(body) = req.body {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    let mut message = head.into_bytes();
    message.extend_from_slice(req.body.unwrap_or_default());
    let raw = match &target.tls {
        None => exchange(tcp, &message),
        Some(config) => {
            let name = ServerName::try_from(target.host.clone())
                .map_err(|e| at(&format!("not a TLS server name: {e}")))?;
            let conn = rustls::ClientConnection::new(config.clone(), name)
                .map_err(|e| at(&format!("TLS: {e}")))?;
            exchange(rustls::StreamOwned::new(conn, tcp), &message)
        }
    }
    .map_err(|e| at(&e))?;
    parse_answer(&raw).map_err(|e| at(&e))
}

/// Write `message`, read until the server closes (or the answer is as
/// long as its Content-Length: a TLS peer may close without a
/// close_notify).
fn exchange<S: Read + Write>(mut s: S, message: &[u8]) -> Result<Vec<u8>, String> {
    s.write_all(message)
        .and_then(|()| s.flush())
        .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > MAX_ANSWER {
                    return Err(format!("an answer over {MAX_ANSWER} bytes"));
                }
                if complete(&out) {
                    break;
                }
            }
            Err(e) if e.kind() == ErrorKind::UnexpectedEof && !out.is_empty() => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(out)
}

/// `[pure]` Whether `raw` holds the head and as many body bytes as its
/// Content-Length says.
fn complete(raw: &[u8]) -> bool {
    let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&raw[..split]);
    head.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .is_some_and(|n| raw.len() >= split + 4 + n)
}

/// `[pure]` The status and body of a raw HTTP/1.x answer.
fn parse_answer(raw: &[u8]) -> Result<Answer, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no complete HTTP answer")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| format!("not an HTTP answer: {:?}", head.lines().next()))?;
    let mut body = raw[split + 4..].to_vec();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    if let Some(n) = length {
        if body.len() < n {
            return Err(format!("a body of {} of {n} bytes", body.len()));
        }
        body.truncate(n);
    }
    Ok(Answer { status, body })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_cut_at_their_length_and_a_short_one_is_refused() {
        let raw = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}extra";
        assert!(complete(raw));
        let a = parse_answer(raw).unwrap();
        assert_eq!((a.status, a.body.as_slice()), (200, &b"{}"[..]));
        assert!(!complete(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\n{}"));
        assert!(parse_answer(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
        let a = parse_answer(b"HTTP/1.0 404 Not Found\r\n\r\nno").unwrap();
        assert_eq!((a.status, a.body.as_slice()), (404, &b"no"[..]));
        assert!(parse_answer(b"garbage").is_err());
    }
}
