//! `[core]` Kafka's connection quotas (`kafka.network.ConnectionQuotas`),
//! broker-wide across the shards' accept loops:
//!
//! - `max.connections.per.ip` (default Int.MaxValue) with
//!   `max.connections.per.ip.overrides` (`host:count,...`): a connection
//!   over its address's limit is closed right after accept (Kafka's
//!   `TooManyConnectionsException`, logged by the acceptor);
//! - `max.connections` (default Int.MaxValue): at the limit the acceptors
//!   stop accepting until a connection closes (Kafka's
//!   `waitForConnectionSlot`): new clients wait in the kernel's backlog.
//!
//! Touched only at accept and close, never on the data path. The counts are
//! shared by the shards' threads, so they sit behind a mutex.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Mutex;

/// What accepting a connection from an address gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Counted; release it when the connection closes.
    Yes,
    /// The address already has `limit` connections: close this one.
    OverIpLimit { limit: usize },
    /// The broker is at `max.connections` (another shard accepted the last
    /// slot meanwhile): hold this one unserved and ask again later.
    Full,
}

#[derive(Debug, Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// The broker's connection counts and limits.
#[derive(Debug)]
pub struct ConnectionQuotas {
    max_total: usize,
    per_ip_default: usize,
    overrides: HashMap<IpAddr, usize>,
    counts: Mutex<Counts>,
}

fn limit_of(v: i32, key: &str) -> Result<usize, String> {
    usize::try_from(v).map_err(|_| format!("{key} must be at least 0, got {v}"))
}

/// `max.connections.per.ip.overrides`: `host:count` pairs, comma
/// separated; a host is an IP address or a name resolved now (all its
/// addresses get the count).
pub fn parse_overrides(text: &str) -> Result<HashMap<IpAddr, usize>, String> {
    let mut out = HashMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, count) = entry.rsplit_once(':').ok_or_else(|| {
            format!("max.connections.per.ip.overrides: {entry:?} is not host:count")
        })?;
        let count: usize = count.trim().parse().map_err(|_| {
            format!("max.connections.per.ip.overrides: {entry:?} has no count of connections")
        })?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let ips: Vec<IpAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => (host, 0)
                .to_socket_addrs()
                .map_err(|e| format!("max.connections.per.ip.overrides: host {host:?}: {e}"))?
                .map(|a| a.ip())
                .collect(),
        };
        for ip in ips {
            out.insert(ip, count);
        }
    }
    Ok(out)
}

impl ConnectionQuotas {
    /// From the three config values (Kafka key names in the errors).
    pub fn new(max_connections: i32, per_ip: i32, overrides: &str) -> Result<Self, String> {
        Ok(Self {
            max_total: limit_of(max_connections, "max.connections")?,
            per_ip_default: limit_of(per_ip, "max.connections.per.ip")?,
            overrides: parse_overrides(overrides)?,
            counts: Mutex::new(Counts::default()),
        })
    }

    /// From `max.connections`, `max.connections.per.ip` and its overrides.
    pub fn from_config(config: &crate::config::ServerConfig) -> Result<Self, String> {
        Self::new(
            config.max_connections,
            config.max_connections_per_ip,
            &config.max_connections_per_ip_overrides,
        )
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        // A panic elsewhere while holding it leaves plain counts: go on.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The limit for connections from `ip`.
    pub fn ip_limit(&self, ip: IpAddr) -> usize {
        self.overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.per_ip_default)
    }

    /// Whether the broker is at `max.connections` (accept nothing now).
    pub fn full(&self) -> bool {
        self.counts().total >= self.max_total
    }

    /// Counts a new connection from `ip`, or refuses it.
    pub fn admit(&self, ip: IpAddr) -> Admit {
        let limit = self.ip_limit(ip);
        let mut c = self.counts();
        if c.total >= self.max_total {
            return Admit::Full;
        }
        let n = c.per_ip.entry(ip).or_insert(0);
        if *n >= limit {
            return Admit::OverIpLimit { limit };
        }
        *n += 1;
        c.total += 1;
        Admit::Yes
    }

    /// A counted connection from `ip` closed.
    pub fn release(&self, ip: IpAddr) {
        let mut c = self.counts();
        let Some(n) = c.per_ip.get_mut(&ip) else {
            return;
        };
        *n -= 1;
        if *n == 0 {
            c.per_ip.remove(&ip);
        }
        c.total -= 1;
    }

    /// Connections counted now.
    pub fn total(&self) -> usize {
        self.counts().total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn an_address_at_its_limit_is_refused_until_one_of_its_connections_closes() {
        let q = ConnectionQuotas::new(i32::MAX, 2, "").unwrap();
        let a = ip("10.0.0.1");
        assert_eq!(q.admit(a), Admit::Yes);
        assert_eq!(q.admit(a), Admit::Yes);
        assert_eq!(q.admit(a), Admit::OverIpLimit { limit: 2 });
        // Another address has its own count.
        assert_eq!(q.admit(ip("10.0.0.2")), Admit::Yes);
        assert_eq!(q.total(), 3);
        q.release(a);
        assert_eq!(q.admit(a), Admit::Yes);
    }

    #[test]
    fn overrides_give_listed_hosts_their_own_limit() {
        let q = ConnectionQuotas::new(i32::MAX, 1, "127.0.0.1:3, [::1]:0 ,10.1.1.1:5").unwrap();
        assert_eq!(q.ip_limit(ip("127.0.0.1")), 3);
        assert_eq!(q.ip_limit(ip("::1")), 0);
        assert_eq!(q.ip_limit(ip("10.1.1.1")), 5);
        assert_eq!(q.ip_limit(ip("10.9.9.9")), 1);
        assert_eq!(q.admit(ip("::1")), Admit::OverIpLimit { limit: 0 });
        for bad in ["127.0.0.1", "127.0.0.1:x", "no.such.host.invalid:3"] {
            assert!(ConnectionQuotas::new(i32::MAX, 1, bad).is_err(), "{bad}");
        }
    }

    /// `max.connections.per.ip.overrides` from `server.properties` text, as
    /// Kafka's `ConnectionQuotas.maxConnectionsPerIpOverrides` applies it: a
    /// listed address gets its own cap, above or below
    /// `max.connections.per.ip`; other addresses keep the default.
    #[test]
    fn the_per_ip_overrides_of_server_properties_cap_their_addresses() {
        let loaded = crate::config::ServerConfig::from_properties(
            "max.connections.per.ip=1\nmax.connections.per.ip.overrides=127.0.0.1:2,[::1]:0\n",
            &[],
        )
        .unwrap();
        let q = ConnectionQuotas::from_config(&loaded.config).unwrap();
        let local = ip("127.0.0.1");
        // Above the default of 1: two connections, the third is refused.
        assert_eq!(q.admit(local), Admit::Yes);
        assert_eq!(q.admit(local), Admit::Yes);
        assert_eq!(q.admit(local), Admit::OverIpLimit { limit: 2 });
        // Below it: none at all.
        assert_eq!(q.admit(ip("::1")), Admit::OverIpLimit { limit: 0 });
        // An address not listed: the default.
        assert_eq!(q.admit(ip("10.0.0.1")), Admit::Yes);
        assert_eq!(q.admit(ip("10.0.0.1")), Admit::OverIpLimit { limit: 1 });
        q.release(local);
        assert_eq!(q.admit(local), Admit::Yes);
    }

    #[test]
    fn the_broker_is_full_at_max_connections_and_frees_a_slot_on_close() {
        let q = ConnectionQuotas::new(2, i32::MAX, "").unwrap();
        assert!(!q.full());
        q.admit(ip("10.0.0.1"));
        q.admit(ip("10.0.0.2"));
        assert!(q.full());
        assert_eq!(q.admit(ip("10.0.0.3")), Admit::Full);
        q.release(ip("10.0.0.2"));
        assert!(!q.full());
        // A release of an address never counted changes nothing below 0.
        q.release(ip("10.0.0.3"));
        q.release(ip("10.0.0.1"));
        q.release(ip("10.0.0.1"));
        assert_eq!(q.total(), 0);
        assert!(ConnectionQuotas::new(-1, 1, "").is_err());
    }
}
