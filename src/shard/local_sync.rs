//! Executor-local async primitives (no locks, no atomics): a one-shot
//! [`Trigger`] many tasks can wait on, and a [`Notify`] for one waiter.
//! Used for shutdown and for connection reader/writer hand-offs.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// Fires once; every `wait()` then completes.
#[derive(Default)]
pub struct Trigger {
    fired: Cell<bool>,
    waiters: RefCell<Vec<Waker>>,
}

impl Trigger {
    pub fn fire(&self) {
        self.fired.set(true);
        for w in self.waiters.borrow_mut().drain(..) {
            w.wake();
        }
    }

    pub fn is_fired(&self) -> bool {
        self.fired.get()
    }

    pub fn wait(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.fired.get() {
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push(cx.waker().clone());
                Poll::Pending
            }
        })
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
