//! `[io]` The `/metrics` listener (`shardlog.metrics.listener`): a minimal
//! HTTP/1.1 server on the control shard's executor, where Kafka runs the
//! Prometheus JMX exporter agent (Strimzi: port 9404, path `/metrics`).
//!
//! One request per connection (`Connection: close`): `GET` or `HEAD
//! /metrics` gathers every data shard's report over the mesh
//! (`shard::metrics::scrape`) and answers it in OpenMetrics or text 0.0.4
//! as the `Accept` header asks (`metrics::exposition::negotiate`). The
//! request head is parsed by `httparse`. Bad input cannot block or grow
//! the broker: the head may hold at most [`MAX_HEAD_BYTES`] and must
//! arrive within [`READ_TIMEOUT`], at most [`MAX_CONNECTIONS`] are served
//! at once (others are closed at once), a body is never read; an unknown
//! path is 404, another method 405, a malformed or oversized head 400 or
//! 431, each logged as a warning naming the peer.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use futures_lite::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};

use crate::metrics::exposition::{negotiate, render};
use crate::shard::ShardContext;

/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// The whole head must arrive within this.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections served at once; more are closed without an answer.
pub const MAX_CONNECTIONS: usize = 16;
/// Headers parsed at most (more: 431).
const MAX_HEADERS: usize = 32;
/// What a refused request may still send before its connection closes.
const DRAIN_MAX_BYTES: usize = 64 * 1024;
/// Writing the answer must finish within this.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Serve `listener` until the shard stops.
pub async fn serve(ctx: Rc<ShardContext>, listener: TcpListener) {
    let active = Rc::new(Cell::new(0usize));
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            ctx.stopping.wait().await;
            None
        })
        .await;
        let stream = match accepted {
            None => return,
            Some(Ok(stream)) => stream,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "metrics listener: accept failed");
                glommio::timer::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let peer = stream
            .peer_addr()
            .map_or_else(|_| "?".to_owned(), |a| a.to_string());
        if active.get() >= MAX_CONNECTIONS {
            tracing::warn!(%peer, "metrics listener: closing connection: {MAX_CONNECTIONS} already open");
            drop(stream);
            continue;
        }
        active.set(active.get() + 1);
        let (ctx, active) = (ctx.clone(), active.clone());
        glommio::spawn_local(async move {
            answer(&ctx, stream, &peer).await;
            active.set(active.get() - 1);
        })
        .detach();
    }
}

/// What the request head asked for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Metrics {
        accept: Option<String>,
        head: bool,
    },
    /// An answer without a body: status line and extra headers.
    Refuse(&'static str, &'static str),
}

/// `[pure]` The request head in `buf`: `None` while incomplete.
fn parse(buf: &[u8]) -> Option<Asked> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(buf) {
        Ok(httparse::Status::Partial) => None,
        Err(httparse::Error::TooManyHeaders) => {
            Some(Asked::Refuse("431 Request Header Fields Too Large", ""))
        }
        Err(_) => Some(Asked::Refuse("400 Bad Request", "")),
        Ok(httparse::Status::Complete(_)) => {
            let method = req.method.unwrap_or("");
            let path = req.path.unwrap_or("");
            let path = path.split('?').next().unwrap_or("");
            if path != "/metrics" {
                return Some(Asked::Refuse("404 Not Found", ""));
            }
            if method != "GET" && method != "HEAD" {
                return Some(Asked::Refuse(
                    "405 Method Not Allowed",
                    "Allow: GET, HEAD\r\n",
                ));
            }
            let accept = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("accept"))
                .and_then(|h| std::str::from_utf8(h.value).ok())
                .map(str::to_owned);
            Some(Asked::Metrics {
                accept,
                head: method == "HEAD",
            })
        }
    }
}

/// Read the request head: `Err` with the reason to log and the answer to
/// give (if any).
async fn read_head(stream: &mut TcpStream) -> Result<Asked, (String, Option<Asked>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(0) => return Err(("closed before a whole request".into(), None)),
            Ok(n) => n,
            Err(e) => return Err((format!("read failed: {e}"), None)),
        };
        buf.extend_from_slice(&chunk[..n]);
        if let Some(asked) = parse(&buf) {
            return Ok(asked);
        }
        if buf.len() >= MAX_HEAD_BYTES {
            return Err((
                format!("request head over {MAX_HEAD_BYTES} bytes"),
                Some(Asked::Refuse("431 Request Header Fields Too Large", "")),
            ));
        }
    }
}

async fn answer(ctx: &Rc<ShardContext>, mut stream: TcpStream, peer: &str) {
    let read = futures_lite::future::or(async { Some(read_head(&mut stream).await) }, async {
        glommio::timer::sleep(READ_TIMEOUT).await;
        None
    })
    .await;
    let asked = match read {
        None => {
            tracing::warn!(%peer, "metrics listener: closing connection: no whole request within {READ_TIMEOUT:?}");
            return;
        }
        Some(Err((reason, refusal))) => {
            tracing::warn!(%peer, %reason, "metrics listener: closing connection");
            match refusal {
                Some(r) => r,
                None => return,
            }
        }
        Some(Ok(asked)) => asked,
    };
    let refused = matches!(asked, Asked::Refuse(..));
    let response = match asked {
        Asked::Refuse(status, extra) => {
            tracing::warn!(%peer, %status, "metrics listener: refused request");
            format!("HTTP/1.1 {status}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n")
                .into_bytes()
        }
        Asked::Metrics { accept, head } => {
            let format = negotiate(accept.as_deref());
            let report = crate::shard::metrics::scrape(ctx).await;
            let body = render(&report, format);
            let mut out = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                format.content_type(),
                body.len()
            )
            .into_bytes();
            if !head {
                out.extend_from_slice(body.as_bytes());
            }
            out
        }
    };
    let write = async {
        let _ = stream.write_all(&response).await;
        let _ = stream.flush().await;
        if refused {
            // The client may still be sending (an oversized head): closing
            // with its bytes unread would reset the connection before it
            // read the answer. Half-close, then drop what it sends until it
            // closes (bounded by the write timeout and DRAIN_MAX_BYTES).
            let _ = stream.shutdown(std::net::Shutdown::Write).await;
            let mut scratch = [0u8; 4096];
            let mut drained = 0usize;
            while drained < DRAIN_MAX_BYTES {
                match stream.read(&mut scratch).await {
                    Ok(n) if n > 0 => drained += n,
                    _ => break,
                }
            }
        }
        let _ = stream.close().await;
    };
    let timeout = async {
        glommio::timer::sleep(WRITE_TIMEOUT).await;
        tracing::warn!(%peer, "metrics listener: closing connection: answer not taken within {WRITE_TIMEOUT:?}");
    };
    futures_lite::future::or(write, timeout).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_heads_are_judged_before_any_scrape() {
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(
            parse(b"GET /metrics HTTP/1.1\r\nAccept: text/plain\r\n\r\n"),
            Some(Asked::Metrics {
                accept: Some("text/plain".into()),
                head: false
            })
        );
        assert_eq!(
            parse(b"GET /other HTTP/1.1\r\n\r\n"),
            Some(Asked::Refuse("404 Not Found", ""))
        );
        assert_eq!(
            parse(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Some(Asked::Refuse(
                "405 Method Not Allowed",
                "Allow: GET, HEAD\r\n"
            ))
        );
        assert_eq!(
            parse(b"\x00\x01garbage\r\n\r\n"),
            Some(Asked::Refuse("400 Bad Request", ""))
        );
        let many: String = (0..40).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            parse(format!("GET /metrics HTTP/1.1\r\n{many}\r\n").as_bytes()),
            Some(Asked::Refuse("431 Request Header Fields Too Large", ""))
        );
    }
}
