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
        // Bind first: in an `if let` the RefCell guard would live through
        // `wake()`, and a wake that drops a task whose drop touches this
        // cell would then panic inside a destructor (glommio aborts).
        let waker = self.waker.borrow_mut().take();
        if let Some(w) = waker {
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

/// A first-come, first-served gate: tickets are taken synchronously (in
/// arrival order) and served strictly in that order. Used to keep appends
/// to one partition in the order their requests arrived — a plain async
/// lock may let a newcomer barge in ahead of a woken waiter.
#[derive(Default)]
pub struct FifoGate {
    next: Cell<u64>,
    serving: Cell<u64>,
    waiters: RefCell<std::collections::BTreeMap<u64, Waker>>,
    abandoned: RefCell<std::collections::BTreeSet<u64>>,
}

impl FifoGate {
    /// Take a ticket now; await `turn()` on it before the ordered work.
    pub fn ticket(self: &std::rc::Rc<Self>) -> FifoTicket {
        let n = self.next.get();
        self.next.set(n + 1);
        FifoTicket {
            gate: self.clone(),
            n,
            done: false,
        }
    }

    fn advance(&self) {
        let mut s = self.serving.get() + 1;
        {
            let mut abandoned = self.abandoned.borrow_mut();
            while abandoned.remove(&s) {
                s += 1;
            }
        }
        self.serving.set(s);
        // Not in the `if let`: the guard must be gone before `wake()`
        // (see `Notify::notify`).
        let waker = self.waiters.borrow_mut().remove(&s);
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// A place in a [`FifoGate`]'s queue; releasing (or dropping) it lets the
/// next ticket in.
pub struct FifoTicket {
    gate: std::rc::Rc<FifoGate>,
    n: u64,
    done: bool,
}

impl std::fmt::Debug for FifoTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FifoTicket").field("n", &self.n).finish()
    }
}

impl FifoTicket {
    /// Completes when every earlier ticket has been released.
    pub fn turn(&self) -> FifoTurn<'_> {
        FifoTurn { ticket: self }
    }
}

impl Drop for FifoTicket {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        self.gate.waiters.borrow_mut().remove(&self.n);
        if self.gate.serving.get() == self.n {
            self.gate.advance();
        } else {
            self.gate.abandoned.borrow_mut().insert(self.n);
        }
    }
}

pub struct FifoTurn<'a> {
    ticket: &'a FifoTicket,
}

impl Future for FifoTurn<'_> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let gate = &self.ticket.gate;
        if gate.serving.get() == self.ticket.n {
            Poll::Ready(())
        } else {
            gate.waiters
                .borrow_mut()
                .insert(self.ticket.n, cx.waker().clone());
            Poll::Pending
        }
    }
}

/// A boxed future borrowing for `'a`.
pub type Local<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + 'a>>;

/// Polls every future until all are done, on this task (no spawning:
/// the futures may borrow); their outputs in order.
pub async fn join_all<'a, T>(futures: Vec<Local<'a, T>>) -> Vec<T> {
    let mut pending: Vec<Option<Local<'a, T>>> = futures.into_iter().map(Some).collect();
    let mut out: Vec<Option<T>> = (0..pending.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut busy = false;
        for (slot, done) in pending.iter_mut().zip(out.iter_mut()) {
            if let Some(f) = slot {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => {
                        *done = Some(v);
                        *slot = None;
                    }
                    std::task::Poll::Pending => busy = true,
                }
            }
        }
        if busy {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
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

    #[test]
    fn fifo_gate_serves_tickets_in_the_order_they_were_taken() {
        use std::rc::Rc;
        let gate = Rc::new(FifoGate::default());
        let order = Rc::new(RefCell::new(Vec::new()));
        let a = gate.ticket();
        let b = gate.ticket();
        let c = gate.ticket();
        let run = |t: FifoTicket, name: &'static str| {
            let order = order.clone();
            async move {
                t.turn().await;
                order.borrow_mut().push(name);
                drop(t);
            }
        };
        // Poll c and b first: they must wait for a.
        let mut fc = Box::pin(run(c, "c"));
        let mut fb = Box::pin(run(b, "b"));
        assert!(block_on(poll_once(&mut fc)).is_none());
        assert!(block_on(poll_once(&mut fb)).is_none());
        block_on(run(a, "a"));
        block_on(fb);
        block_on(fc);
        assert_eq!(*order.borrow(), vec!["a", "b", "c"]);
    }

    #[test]
    fn an_abandoned_ticket_does_not_block_the_queue() {
        use std::rc::Rc;
        let gate = Rc::new(FifoGate::default());
        let a = gate.ticket();
        let b = gate.ticket();
        let c = gate.ticket();
        drop(b); // cancelled while waiting
        drop(a); // released after its turn
        assert!(block_on(poll_once(c.turn())).is_some());
    }

    // Test code only, and a global because a `RawWaker`'s vtable functions
    // get nothing but the data pointer: the wake's action has to be found
    // from the thread, as glommio's own wakes find their executor.
    thread_local! {
        /// What the next wake of a [`reentrant_waker`] does.
        static ON_WAKE: RefCell<Option<Box<dyn FnOnce()>>> = RefCell::new(None);
    }

    /// A waker whose wake runs `ON_WAKE` on this thread, as a glommio wake
    /// can run a task's destructor before returning.
    fn reentrant_waker() -> Waker {
        struct Reentrant;
        impl std::task::Wake for Reentrant {
            fn wake(self: std::sync::Arc<Self>) {
                if let Some(f) = ON_WAKE.with(|w| w.borrow_mut().take()) {
                    f();
                }
            }
        }
        Waker::from(std::sync::Arc::new(Reentrant))
    }

    /// Waking must not hold the cell the wake may touch again.
    #[test]
    fn a_wake_that_reenters_notify_does_not_panic() {
        let n = std::rc::Rc::new(Notify::default());
        let waker = reentrant_waker();
        let mut cx = Context::from_waker(&waker);
        let mut waiting = Box::pin(n.notified());
        assert!(waiting.as_mut().poll(&mut cx).is_pending());
        let again = n.clone();
        ON_WAKE.with(|w| *w.borrow_mut() = Some(Box::new(move || again.notify())));
        n.notify();
        assert!(waiting.as_mut().poll(&mut cx).is_ready());
    }

    #[test]
    fn a_wake_that_drops_another_waiting_ticket_does_not_panic() {
        let gate = std::rc::Rc::new(FifoGate::default());
        let first = gate.ticket();
        let second = gate.ticket();
        let third = gate.ticket();
        let waker = reentrant_waker();
        let mut cx = Context::from_waker(&waker);
        let mut second_turn = Box::pin(second.turn());
        assert!(second_turn.as_mut().poll(&mut cx).is_pending());
        {
            let mut third_turn = Box::pin(third.turn());
            assert!(third_turn.as_mut().poll(&mut cx).is_pending());
        }
        // Waking `second` drops `third`, which unregisters from the gate.
        ON_WAKE.with(|w| *w.borrow_mut() = Some(Box::new(move || drop(third))));
        drop(first);
        assert!(second_turn.as_mut().poll(&mut cx).is_ready());
    }
}
