//! `[pure]` ZooKeeper's watches and session events as the
//! [`MetadataStore`](super::store::MetadataStore) seam hands them out, and
//! the one-shot cell the embedded store fires them through.
//!
//! A watch is one-shot, as in ZooKeeper: it resolves once, on the first
//! change after the read that set it; the reader re-reads (and so re-arms)
//! to learn what changed (Kafka's `ZooKeeperClient` re-registers its
//! handlers the same way).

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use futures_lite::future::BoxedLocal;

/// What fired a watch (ZooKeeper `Watcher.Event.EventType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchKind {
    Created,
    Deleted,
    DataChanged,
    ChildrenChanged,
    /// The session that set the watch ended before it fired (expiry or
    /// close): nothing is known about the node; re-read on the new session.
    SessionClosed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchEvent {
    pub kind: WatchKind,
    /// The watched path (without any chroot).
    pub path: String,
}

/// A one-shot watch.
pub type Watch = BoxedLocal<WatchEvent>;

/// Session state changes (ZooKeeper `Watcher.Event.KeeperState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    /// (Re)connected with the session still valid: ephemeral nodes and
    /// watches are intact.
    Connected,
    /// The connection dropped; the session may still be alive on the
    /// ensemble. Reads and writes fail until it reconnects or expires.
    Disconnected,
    /// The session is gone: its ephemeral nodes are deleted and its
    /// watches will never fire. A new session must be opened.
    Expired,
    /// Closed by this process.
    Closed,
}

/// Resolves on the next session state change after it was asked for.
pub type SessionWatch = BoxedLocal<SessionEvent>;

struct Slot<T> {
    value: Option<T>,
    waker: Option<Waker>,
    fired: bool,
}

/// The sending half of a one-shot cell (single-threaded).
pub struct Fire<T> {
    slot: Rc<RefCell<Slot<T>>>,
}

impl<T> Fire<T> {
    /// Resolves the waiting future with `value`; later calls do nothing.
    pub fn fire(&self, value: T) {
        let mut s = self.slot.borrow_mut();
        if s.fired {
            return;
        }
        s.fired = true;
        s.value = Some(value);
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    pub fn has_fired(&self) -> bool {
        self.slot.borrow().fired
    }
}

/// The receiving half: a future for the fired value. Pending forever when
/// the sender is dropped unfired (a watch that never fires).
pub struct Fired<T> {
    slot: Rc<RefCell<Slot<T>>>,
}

impl<T> Future for Fired<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let mut s = self.slot.borrow_mut();
        match s.value.take() {
            Some(v) => Poll::Ready(v),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// A new one-shot cell.
pub fn oneshot<T>() -> (Fire<T>, Fired<T>) {
    let slot = Rc::new(RefCell::new(Slot {
        value: None,
        waker: None,
        fired: false,
    }));
    (Fire { slot: slot.clone() }, Fired { slot })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_oneshot_resolves_once_with_the_first_value() {
        let (fire, fired) = oneshot();
        fire.fire(1);
        fire.fire(2);
        assert!(fire.has_fired());
        assert_eq!(futures_lite::future::block_on(fired), 1);
    }

    #[test]
    fn an_unfired_oneshot_stays_pending() {
        let (_fire, mut fired) = oneshot::<u8>();
        let polled = futures_lite::future::block_on(futures_lite::future::poll_once(&mut fired));
        assert_eq!(polled, None);
    }
}
