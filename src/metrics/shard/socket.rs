//! `[pure]` A listener's `socket-server-metrics` on one shard: Kafka's
//! `Selector.SelectorMetrics` (`clients/.../common/network/Selector.java`)
//! of one network processor, whose `networkProcessor` is the shard.
//! Connections hold an `Rc` of their listener's counters, so counting on
//! the data path is one `Cell` add.

use std::cell::Cell;

use super::ListenerConnections;

/// The live counters behind [`ListenerConnections`].
#[derive(Debug, Default)]
pub struct SocketCounters {
    open: Cell<u64>,
    created: Cell<u64>,
    closed: Cell<u64>,
    sends: Cell<u64>,
    receives: Cell<u64>,
    bytes_in: Cell<u64>,
    bytes_out: Cell<u64>,
    auth_ok: Cell<u64>,
    auth_failed: Cell<u64>,
}

fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

impl SocketCounters {
    /// `Selector.register`: `connection-created` (and one more open).
    pub fn on_opened(&self) {
        add(&self.open, 1);
        add(&self.created, 1);
    }

    /// `Selector.close`: `connection-closed`.
    pub fn on_closed(&self) {
        self.open.set(self.open.get().saturating_sub(1));
        add(&self.closed, 1);
    }

    /// A whole request read (`Selector` `recordCompletedReceive`: the
    /// `response` meter, named from a client's side).
    pub fn on_receive(&self) {
        add(&self.receives, 1);
    }

    /// `n` bytes read off the socket (`incoming-byte`).
    pub fn on_bytes_in(&self, n: u64) {
        add(&self.bytes_in, n);
    }

    /// `responses` responses of `bytes` bytes written (`Selector`
    /// `recordCompletedSend`, the `request` meter, and `outgoing-byte`).
    pub fn on_sent(&self, responses: u64, bytes: u64) {
        add(&self.sends, responses);
        add(&self.bytes_out, bytes);
    }

    /// A SASL authentication succeeded (`successful-authentication`) or
    /// failed (`failed-authentication`), as `SaslServerAuthenticator`
    /// records them.
    pub fn on_authentication(&self, ok: bool) {
        add(if ok { &self.auth_ok } else { &self.auth_failed }, 1);
    }

    pub fn snapshot(&self) -> ListenerConnections {
        ListenerConnections {
            open: self.open.get(),
            created: self.created.get(),
            closed: self.closed.get(),
            requests: self.sends.get(),
            responses: self.receives.get(),
            bytes_in: self.bytes_in.get(),
            bytes_out: self.bytes_out.get(),
            auth_ok: self.auth_ok.get(),
            auth_failed: self.auth_failed.get(),
        }
    }
}
