//! `[io]` Binding the listeners: every listener of `listeners` gets one
//! SO_REUSEPORT socket per data shard (the kernel spreads connections),
//! and the broker's advertised endpoint on each listener name (Kafka's
//! `KafkaServer` replaces an advertised port 0 with the port bound by the
//! listener of the same name, `socketServer.boundPort(listenerName)`).

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use anyhow::{anyhow, Context as _};
use socket2::{Domain, Protocol, Socket, Type};

use crate::config::{SecurityProtocol, ServerConfig};
use crate::metadata::{BrokerEndpoint, Snapshot};
use crate::server::listener::ListenerInfo;

/// Listen backlog per shard socket.
const LISTEN_BACKLOG: i32 = 1024;

/// One bound listener: its name and protocol, and the address bound.
#[derive(Debug, Clone)]
pub struct Bound {
    pub info: ListenerInfo,
    pub addr: SocketAddr,
}

/// Every listener's sockets: `sockets[shard][i]` is shard `shard`'s socket
/// of listener `listeners[i]`, with that listener.
pub struct BoundListeners {
    pub listeners: Vec<Bound>,
    pub sockets: Vec<Vec<(OwnedFd, ListenerInfo)>>,
}

/// Bind every listener of `listeners`, in order, `n_shards` times each.
pub fn bind_listeners(config: &ServerConfig, n_shards: usize) -> anyhow::Result<BoundListeners> {
    let mut listeners = Vec::with_capacity(config.listeners.len());
    let mut sockets: Vec<Vec<(OwnedFd, ListenerInfo)>> =
        (0..n_shards).map(|_| Vec::new()).collect();
    for listener in &config.listeners {
        let bind_addr = resolve(&listener.host, listener.port)?;
        let (fds, addr) = bind_shard_sockets(bind_addr, n_shards)
            .with_context(|| format!("binding {listener}"))?;
        let protocol = config.listener_protocol(&listener.name);
        let info = ListenerInfo {
            name: Arc::from(listener.name.as_str()),
            protocol,
            tls: super::tls::listener_tls(config, &listener.name, protocol)?,
            sasl: match protocol {
                SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl => Some(Arc::new(
                    crate::server::sasl_conn::SaslListener::start(config, &listener.name)?,
                )),
                SecurityProtocol::Plaintext | SecurityProtocol::Ssl => None,
            },
        };
        for (shard, fd) in fds.into_iter().enumerate() {
            sockets[shard].push((fd, info.clone()));
        }
        tracing::info!(listener = %info.name, protocol = %info.protocol, %addr, "listener bound");
        listeners.push(Bound { info, addr });
    }
    if listeners.is_empty() {
        return Err(anyhow!("no listeners"));
    }
    Ok(BoundListeners { listeners, sockets })
}

/// The `/metrics` listener's socket (`shardlog.metrics.listener`), if
/// configured: one socket, served by the control shard.
pub fn bind_metrics(config: &ServerConfig) -> anyhow::Result<Option<(OwnedFd, SocketAddr)>> {
    let Some(text) = &config.shardlog_metrics_listener else {
        return Ok(None);
    };
    let addr: SocketAddr = text
        .parse()
        .with_context(|| format!("shardlog.metrics.listener={text}"))?;
    let (mut fds, addr) = bind_shard_sockets(addr, 1)
        .with_context(|| format!("binding shardlog.metrics.listener={text}"))?;
    let fd = fds.pop().context("no metrics socket")?;
    tracing::info!(%addr, "metrics listener bound (GET /metrics)");
    Ok(Some((fd, addr)))
}

fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    // An empty host means all interfaces (Kafka's `PLAINTEXT://:9092`).
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("resolving {host}"))?
        .next()
        .ok_or_else(|| anyhow!("{host} resolves to nothing"))
}

/// One listening socket per shard on the same address (SO_REUSEPORT; the
/// kernel spreads connections). SO_REUSEADDR lets a restart bind while old
/// connections sit in TIME_WAIT. Port 0 picks a free port once, then every
/// other shard binds that port.
fn bind_shard_sockets(addr: SocketAddr, n: usize) -> anyhow::Result<(Vec<OwnedFd>, SocketAddr)> {
    let mut addr = addr;
    let mut fds = Vec::with_capacity(n);
    for _ in 0..n {
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        socket.set_reuse_address(true)?;
        socket.set_reuse_port(true)?;
        socket.bind(&addr.into())?;
        socket.listen(LISTEN_BACKLOG)?;
        if addr.port() == 0 {
            addr = socket
                .local_addr()?
                .as_socket()
                .ok_or_else(|| anyhow!("listener has no inet address"))?;
        }
        fds.push(OwnedFd::from(socket));
    }
    Ok((fds, addr))
}

/// This broker's endpoint on every advertised listener, by name. Like
/// Kafka, an empty host advertises this machine's name and port 0 (tests)
/// the port the listener of that name bound.
pub fn advertised_endpoints(
    config: &ServerConfig,
    bound: &[Bound],
) -> BTreeMap<Arc<str>, BrokerEndpoint> {
    let mut out = BTreeMap::new();
    for l in config.effective_advertised_listeners() {
        let Some(b) = bound.iter().find(|b| *b.info.name == *l.name) else {
            continue; // validation keeps advertised names within `listeners`
        };
        let host = if l.host.is_empty() || l.host == "0.0.0.0" {
            hostname().unwrap_or_else(|| b.addr.ip().to_string())
        } else {
            l.host.clone()
        };
        let port = if l.port == 0 { b.addr.port() } else { l.port };
        out.insert(
            b.info.name.clone(),
            BrokerEndpoint {
                broker_id: crate::types::BrokerId(config.broker_id),
                host,
                port,
                rack: config.broker_rack.clone(),
            },
        );
    }
    out
}

/// The boot snapshot: this broker alone, at its endpoint on the
/// inter-broker listener (the data path's view) and on every advertised
/// listener (the clients' views).
pub fn boot_snapshot(cluster_id: &str, config: &ServerConfig, bound: &[Bound]) -> Snapshot {
    let endpoints = advertised_endpoints(config, bound);
    let inter_broker = endpoints
        .get(config.inter_broker_listener())
        .or_else(|| endpoints.values().next())
        .cloned()
        .unwrap_or_else(|| BrokerEndpoint {
            broker_id: crate::types::BrokerId(config.broker_id),
            host: bound
                .first()
                .map_or_else(String::new, |b| b.addr.ip().to_string()),
            port: bound.first().map_or(0, |b| b.addr.port()),
            rack: config.broker_rack.clone(),
        });
    let mut snapshot = Snapshot::single_broker(cluster_id, inter_broker);
    snapshot.listener_brokers = endpoints
        .into_iter()
        .map(|(name, endpoint)| (name, vec![endpoint]))
        .collect();
    snapshot
}

fn hostname() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}
