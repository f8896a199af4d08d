//! Executor-local async primitives (no locks, no atomics): a one-shot
//! [`Trigger`] many tasks can wait on, and a [`Notify`] for one waiter.
//! Used for shutdown and for connection reader/writer hand-offs.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Fires once; every `wait()` then completes.
///
/// Waiters are removed when their future is dropped, so the many
/// short-lived waits of a long-lived trigger (one per socket read, racing
/// the shutdown trigger) do not pile up.
#[derive(Default)]
pub struct Trigger {
    fired: Cell<bool>,
    next_id: Cell<u64>,
    waiters: RefCell<HashMap<u64, Waker>>,
}

impl Trigger {
    pub fn fire(&self) {
        self.fired.set(true);
        let waiters = std::mem::take(&mut *self.waiters.borrow_mut());
        for (_, w) in waiters {
            w.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.fired.get()
    }

    pub fn wait(&self) -> TriggerWait<'_> {
        TriggerWait {
            trigger: self,
            id: None,
        }
    }

    /// Registered waiters (for tests).
    pub fn waiters(&self) -> usize {
        self.waiters.borrow().len()
    }
}

pub struct TriggerWait<'a> {
    trigger: &'a Trigger,
    id: Option<u64>,
}

impl Future for TriggerWait<'_> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.trigger.fired.get() {
            return Poll::Ready(());
        }
        let id = match self.id {
            Some(id) => id,
            None => {
                let id = self.trigger.next_id.get();
                self.trigger.next_id.set(id + 1);
                self.id = Some(id);
                id
            }
        };
        self.trigger
            .waiters
            .borrow_mut()
            .insert(id, cx.waker().clone());
        Poll::Pending
    }
}

impl Drop for TriggerWait<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id {
            self.trigger.waiters.borrow_mut().remove(&id);
        }
    }
}

/// A wake-up flag with at most one waiter (the latest `notified()` wins).
#[derive(Default)]
pub struct Notify {
    pending: Cell<bool>,
    waker: RefCell<Option<Waker>>,
}

impl Notify {
    pub fn notify(&self) {
        self.pending.set(true);
        if let Some(w) = self.waker.borrow_mut().take() {
            w.wake();
        }
    }

    /// Completes after the next `notify()` (or at once if one is pending).
    pub fn notified(&self) -> Notified<'_> {
        Notified { notify: self }
    }
}

pub struct Notified<'a> {
    notify: &'a Notify,
}

impl Future for Notified<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.notify.pending.replace(false) {
            Poll::Ready(())
        } else {
            *self.notify.waker.borrow_mut() = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::{block_on, poll_once};

    #[test]
    fn dropped_waits_leave_no_waiters_behind() {
        let t = Trigger::default();
        for _ in 0..100 {
            let mut w = Box::pin(t.wait());
            assert!(block_on(poll_once(&mut w)).is_none());
        }
        assert_eq!(t.waiters(), 0);
    }

    #[test]
    fn fire_completes_pending_and_later_waits() {
        let t = Trigger::default();
        let mut w = Box::pin(t.wait());
        assert!(block_on(poll_once(&mut w)).is_none());
        assert_eq!(t.waiters(), 1);
        t.fire();
        assert!(block_on(poll_once(&mut w)).is_some());
        assert!(block_on(poll_once(t.wait())).is_some());
    }

    #[test]
    fn notify_before_wait_is_not_lost() {
        let n = Notify::default();
        n.notify();
        assert!(block_on(poll_once(n.notified())).is_some());
        assert!(block_on(poll_once(n.notified())).is_none());
    }
}
