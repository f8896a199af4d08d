//! `[io]` Scraping a broker's `/metrics` (`shardlog.metrics.listener`)
//! around each run for its broker side (`broker_metrics`): one HTTP/1.1
//! `GET /metrics` per call asking for text format 0.0.4, with short
//! timeouts so a broker without a metrics listener costs a run little.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::broker_metrics::{parse_scrape, Scrape};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// A larger answer is refused (1,000 partitions stay well below it).
const MAX_BYTES: u64 = 64 << 20;

/// `addr`'s (`host:port`) exposition, or why there is none.
pub fn scrape(addr: &str) -> Result<Scrape, String> {
    get(addr)
        .map(|body| parse_scrape(&body))
        .map_err(|e| format!("{addr}: {e}"))
}

fn get(addr: &str) -> Result<String, String> {
    let sock = addr
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut s = TcpStream::connect_timeout(&sock, CONNECT_TIMEOUT).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(IO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let request = format!(
        "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nAccept: text/plain; version=0.0.4\r\nConnection: close\r\n\r\n"
    );
    s.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    s.take(MAX_BYTES)
        .read_to_end(&mut raw)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.lines().next().unwrap_or("");
    if !status.contains(" 200 ") {
        return Err(format!("answered {status:?}"));
    }
    Ok(body.to_owned())
}
