//! `[drv]` The per-shard purgatory driver: owns the pure `Purgatory` cores
//! (produce and fetch) and the shard's `PartitionView`, runs ONE timer task
//! re-armed at the wheel's next bucket deadline, and hands outcomes to the
//! request tasks waiting on them.
//!
//! Why one timer: a glommio `TimerActionOnce` per operation costs ~0.5 µs
//! and spawns a task (PLATFORM.md); the wheel makes an op cost a slab insert.
//! The timer task sleeps until the earliest non-empty bucket, and is woken
//! early (a local notify, no channel) when an op lands in an earlier bucket
//! or the driver is dropped.
//!
//! Waiters are local one-shot slots (`Rc` + `Waker`): the core returns
//! completions as data, the driver fills the slots, the waiting request tasks
//! resume. A waiter dropped early (connection closed) leaves its op to
//! complete or expire into an unread slot.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::io::clock::Clock;
use crate::purgatory::delayed_fetch::{DelayedFetch, FetchOutcome};
use crate::purgatory::delayed_operation::{
    CompletedOp, DelayedOperation, Parked, Purgatory, PurgatoryConfig, WatchChange,
};
use crate::purgatory::delayed_produce::{DelayedProduce, ProduceOutcome};
use crate::purgatory::notes::{apply_notes, AdvanceNotes};
use crate::purgatory::view::{PartitionSnapshot, PartitionView};
use crate::types::TopicPartition;

/// A single-assignment slot a waiter polls.
pub(crate) struct OutcomeSlot<T> {
    value: RefCell<Option<T>>,
    waker: Cell<Option<Waker>>,
}

impl<T> OutcomeSlot<T> {
    fn new() -> Rc<Self> {
        Rc::new(Self {
            value: RefCell::new(None),
            waker: Cell::new(None),
        })
    }

    fn fill(&self, value: T) {
        *self.value.borrow_mut() = Some(value);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

struct WaitOutcome<T> {
    slot: Rc<OutcomeSlot<T>>,
}

impl<T> Future for WaitOutcome<T> {
    type Output = T;
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        if let Some(v) = self.slot.value.borrow_mut().take() {
            return Poll::Ready(v);
        }
        self.slot.waker.set(Some(cx.waker().clone()));
        Poll::Pending
    }
}

/// Wakes the timer task early (earlier deadline, or shutdown).
#[derive(Default)]
struct Notify {
    notified: Cell<bool>,
    closed: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

impl Notify {
    fn notify(&self) {
        self.notified.set(true);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }

    fn notified(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if self.notified.replace(false) {
                Poll::Ready(())
            } else {
                self.waker.set(Some(cx.waker().clone()));
                Poll::Pending
            }
        })
    }
}

/// An op plus the slot its waiter reads.
pub(crate) struct Waiting<Op: DelayedOperation> {
    op: Op,
    slot: Rc<OutcomeSlot<Op::Outcome>>,
}

type Delivery<O> = (Rc<OutcomeSlot<O>>, O);

impl<Op: DelayedOperation> DelayedOperation for Waiting<Op> {
    type Key = Op::Key;
    type View = Op::View;
    type Outcome = Delivery<Op::Outcome>;

    fn delay_ms(&self) -> i64 {
        self.op.delay_ms()
    }
    fn try_complete(&mut self, now_ms: i64, view: &Op::View) -> bool {
        self.op.try_complete(now_ms, view)
    }
    fn on_complete(self) -> Self::Outcome {
        (self.slot, self.op.on_complete())
    }
    fn on_expire(self) -> Self::Outcome {
        (self.slot, self.op.on_expire())
    }
}

/// The delayed operations this driver parks, each in its own purgatory
/// (every operation whose waiting form is [`InPurgatory`]).
pub(crate) trait Parkable:
    DelayedOperation<Key = TopicPartition, View = PartitionView> + Sized
{
    /// This operation's purgatory in the driver's state, and the view.
    fn purgatory(st: &mut State) -> (&mut Purgatory<Waiting<Self>>, &PartitionView);
}

impl<O> Parkable for O
where
    O: DelayedOperation<Key = TopicPartition, View = PartitionView>,
    Waiting<O>: InPurgatory,
{
    fn purgatory(st: &mut State) -> (&mut Purgatory<Waiting<Self>>, &PartitionView) {
        Waiting::<O>::purgatory(st)
    }
}

/// A waiting operation's own purgatory in the driver's state, and the view
/// it is checked against: one purgatory per operation kind.
pub(crate) trait InPurgatory:
    DelayedOperation<Key = TopicPartition, View = PartitionView> + Sized
{
    fn purgatory(st: &mut State) -> (&mut Purgatory<Self>, &PartitionView);
}

impl InPurgatory for Waiting<DelayedProduce> {
    fn purgatory(st: &mut State) -> (&mut Purgatory<Self>, &PartitionView) {
        (&mut st.produce, &st.view)
    }
}

impl InPurgatory for Waiting<DelayedFetch> {
    fn purgatory(st: &mut State) -> (&mut Purgatory<Self>, &PartitionView) {
        (&mut st.fetch, &st.view)
    }
}

pub(crate) struct State {
    produce: Purgatory<Waiting<DelayedProduce>>,
    fetch: Purgatory<Waiting<DelayedFetch>>,
    view: PartitionView,
    /// The deadline the timer task sleeps toward (None: sleeping until notified).
    armed_ms: Option<i64>,
    watch_changes: Vec<WatchChange<TopicPartition>>,
}

/// Completions gathered under the state borrow and delivered after it.
#[derive(Default)]
struct Deliveries {
    produce: Vec<CompletedOp<Delivery<ProduceOutcome>>>,
    fetch: Vec<CompletedOp<Delivery<FetchOutcome>>>,
}

impl Deliveries {
    fn deliver(self) {
        for c in self.produce {
            let (slot, outcome) = c.outcome;
            slot.fill(outcome);
        }
        for c in self.fetch {
            let (slot, outcome) = c.outcome;
            slot.fill(outcome);
        }
    }
}

pub struct PurgatoryDriver {
    clock: Rc<dyn Clock>,
    state: RefCell<State>,
    notify: Rc<Notify>,
}

impl PurgatoryDriver {
    /// Creates the driver and spawns its timer task on the current glommio
    /// executor (call from inside the shard's executor).
    pub fn new(clock: Rc<dyn Clock>, config: PurgatoryConfig) -> Rc<Self> {
        let now = clock.mono_ms();
        let driver = Rc::new(Self {
            clock,
            state: RefCell::new(State {
                produce: Purgatory::new(config, now),
                fetch: Purgatory::new(config, now),
                view: PartitionView::new(),
                armed_ms: None,
                watch_changes: Vec::new(),
            }),
            notify: Rc::new(Notify::default()),
        });
        let weak = Rc::downgrade(&driver);
        let notify = driver.notify.clone();
        glommio::spawn_local(timer_loop(weak, notify)).detach();
        driver
    }

    /// Parks an acks=all produce until its partitions' HW passes what it
    /// appended, or its `timeout_ms` runs out.
    pub async fn wait_produce(
        &self,
        op: DelayedProduce,
        keys: &[TopicPartition],
    ) -> ProduceOutcome {
        self.wait(op, keys).await
    }

    /// Parks a fetch until `min_bytes` are readable, an early-answer case
    /// holds, or `max_wait_ms` runs out. The caller then re-reads the log.
    pub async fn wait_fetch(&self, op: DelayedFetch, keys: &[TopicPartition]) -> FetchOutcome {
        self.wait(op, keys).await
    }

    /// The one parking path, for either operation (the shard's `park`).
    pub(crate) async fn wait<Op: Parkable>(&self, op: Op, keys: &[TopicPartition]) -> Op::Outcome {
        self.park(op, keys, Op::purgatory).await
    }

    /// Completes `op` at once if the view already satisfies it, else parks it
    /// in the purgatory `pick` selects and waits for its outcome. Produce and
    /// fetch share this; only the purgatory differs.
    async fn park<Op>(
        &self,
        op: Op,
        keys: &[TopicPartition],
        pick: impl FnOnce(&mut State) -> (&mut Purgatory<Waiting<Op>>, &PartitionView),
    ) -> Op::Outcome
    where
        Op: DelayedOperation<Key = TopicPartition, View = PartitionView>,
    {
        let slot = OutcomeSlot::new();
        let parked = {
            let now = self.clock.mono_ms();
            let mut st = self.state.borrow_mut();
            let (purgatory, view) = pick(&mut st);
            let waiting = Waiting {
                op,
                slot: slot.clone(),
            };
            let parked = purgatory.try_complete_else_watch(waiting, keys, now, view);
            let changes = purgatory.drain_watch_changes();
            st.watch_changes.extend(changes);
            parked
        };
        match parked {
            Parked::Completed((_, outcome)) => outcome,
            Parked::Watching(_) => {
                self.maybe_rearm();
                WaitOutcome { slot }.await
            }
        }
    }

    /// A partition's LEO/HW/LSO (or role/ISR) moved: record it and complete
    /// the ops it satisfies.
    pub fn on_partition_advanced(&self, tp: &TopicPartition, snapshot: PartitionSnapshot) {
        let now = self.clock.mono_ms();
        let mut out = Deliveries::default();
        {
            let mut st = self.state.borrow_mut();
            let State {
                produce,
                fetch,
                view,
                ..
            } = &mut *st;
            view.update(tp.clone(), snapshot);
            out.produce = produce.check_and_complete(tp, now, view);
            out.fetch = fetch.check_and_complete(tp, now, view);
        }
        out.deliver();
    }

    /// Applies a message of notes from an owner shard.
    pub fn on_advance_notes(&self, notes: AdvanceNotes) {
        let now = self.clock.mono_ms();
        let mut out = Deliveries::default();
        {
            let mut st = self.state.borrow_mut();
            let State {
                produce,
                fetch,
                view,
                ..
            } = &mut *st;
            for tp in apply_notes(view, notes) {
                out.produce
                    .extend(produce.check_and_complete(&tp, now, view));
                out.fetch.extend(fetch.check_and_complete(&tp, now, view));
            }
        }
        out.deliver();
    }

    /// Partitions that started/stopped being watched (for the mesh to tell
    /// the owner shards).
    pub fn drain_watch_changes(&self) -> Vec<WatchChange<TopicPartition>> {
        std::mem::take(&mut self.state.borrow_mut().watch_changes)
    }

    /// Parked operations (produce, fetch).
    pub fn parked(&self) -> (usize, usize) {
        let st = self.state.borrow();
        (st.produce.len(), st.fetch.len())
    }

    /// Wakes the timer task if the earliest deadline moved before the one
    /// it sleeps toward.
    fn maybe_rearm(&self) {
        let mut st = self.state.borrow_mut();
        let next = earliest(st.produce.next_deadline(), st.fetch.next_deadline());
        let earlier = match (next, st.armed_ms) {
            (Some(n), Some(a)) => n < a,
            (Some(_), None) => true,
            _ => false,
        };
        if earlier {
            st.armed_ms = next;
            drop(st);
            self.notify.notify();
        }
    }

    /// Expires what is due at `now` and returns the next deadline.
    fn on_tick(&self) -> Option<i64> {
        let now = self.clock.mono_ms();
        let mut out = Deliveries::default();
        let next = {
            let mut st = self.state.borrow_mut();
            out.produce = st.produce.advance(now);
            out.fetch = st.fetch.advance(now);
            let next = earliest(st.produce.next_deadline(), st.fetch.next_deadline());
            st.armed_ms = next;
            next
        };
        out.deliver();
        next
    }
}

impl Drop for PurgatoryDriver {
    fn drop(&mut self) {
        self.notify.closed.set(true);
        self.notify.notify();
    }
}

fn earliest(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

/// The shard's one purgatory timer: sleep to the next bucket, expire, repeat.
async fn timer_loop(driver: Weak<PurgatoryDriver>, notify: Rc<Notify>) {
    loop {
        if notify.closed.get() {
            return;
        }
        let Some(d) = driver.upgrade() else { return };
        let next = d.on_tick();
        let now = d.clock.mono_ms();
        drop(d);
        match next {
            Some(deadline) => {
                let sleep_ms = (deadline - now).max(0) as u64;
                let timer = async {
                    glommio::timer::Timer::new(Duration::from_millis(sleep_ms)).await;
                };
                futures_lite::future::or(timer, notify.notified()).await;
            }
            None => notify.notified().await,
        }
    }
}
