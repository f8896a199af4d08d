//! `[io]` The cross-shard mesh: typed request/response calls between
//! executors over glommio's `channel_mesh` (SPSC queues, no locks).
//!
//! `mesh.call(target, req).await` sends `req` to shard `target`, whose
//! handler loop runs the registered handler and routes the response back;
//! responses are matched to callers by a per-shard call id. Payloads must be
//! `Send` (e.g. `bytes::Bytes`, which crosses without copying).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use std::panic::AssertUnwindSafe;

use futures_lite::future::BoxedLocal;
use futures_lite::FutureExt;
use glommio::channels::channel_mesh::{Full, MeshBuilder};
use glommio::channels::local_channel::{self, LocalSender};

/// What travels on the mesh.
#[derive(Debug)]
pub enum Envelope<Req, Resp> {
    Request {
        id: u64,
        from: usize,
        req: Req,
    },
    /// `resp: None`: the handler panicked on request `id`; the caller gets
    /// an error, and the serving shard goes on (the panic stays in that one
    /// task).
    Response {
        id: u64,
        resp: Option<Resp>,
    },
}

/// The builder every peer joins (create one, clone it into each executor).
///
/// Why a wrapper: glommio's `MeshBuilder` (0.9.0, and its master) keeps its
/// peer list in an `Rc` and declares itself `Send`, so its clones share one
/// non-atomic reference count across executor threads. Two threads
/// dropping their clones at once (the shards' ends of `join`, or their
/// setups at a clean stop) can both see the count reach zero and free the
/// block twice, or write it after the free: the heap corruption a broker
/// aborted with at a clean stop ("malloc_consolidate(): unaligned fastbin
/// chunk detected"; AddressSanitizer showed the use after free in
/// `Rc::drop` of the peer list). Here every clone, drop and poll of
/// glommio's join, the only places that touch that count, holds one lock
/// shared by all clones.
pub struct Builder<Req: Send + 'static, Resp: Send + 'static> {
    /// `None` only once [`Mesh::join`] took it.
    inner: Option<MeshBuilder<Envelope<Req, Resp>, Full>>,
    refcount_lock: Arc<Mutex<()>>,
}

/// The lock, whatever a panic while it was held left behind (it guards no
/// data, only the order of reference-count updates).
fn hold(lock: &Mutex<()>) -> MutexGuard<'_, ()> {
    lock.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl<Req: Send + 'static, Resp: Send + 'static> Clone for Builder<Req, Resp> {
    fn clone(&self) -> Self {
        let _held = hold(&self.refcount_lock);
        Builder {
            inner: self.inner.clone(),
            refcount_lock: self.refcount_lock.clone(),
        }
    }
}

impl<Req: Send + 'static, Resp: Send + 'static> Drop for Builder<Req, Resp> {
    fn drop(&mut self) {
        let _held = hold(&self.refcount_lock);
        drop(self.inner.take());
    }
}

impl<Req: Send + 'static, Resp: Send + 'static> Builder<Req, Resp> {
    pub fn nr_peers(&self) -> usize {
        self.inner.as_ref().map_or(0, MeshBuilder::nr_peers)
    }
}

/// Create a builder for `peers` executors with `queue_len` slots per pair.
pub fn builder<Req: Send + 'static, Resp: Send + 'static>(
    peers: usize,
    queue_len: usize,
) -> Builder<Req, Resp> {
    Builder {
        inner: Some(MeshBuilder::full(peers, queue_len)),
        refcount_lock: Arc::new(Mutex::new(())),
    }
}

/// A future polled (and dropped) only while holding `lock`: glommio's
/// join drops its builder inside a poll, or with the future.
struct Serialized<F> {
    inner: Option<Pin<Box<F>>>,
    lock: Arc<Mutex<()>>,
}

impl<F: Future> Future for Serialized<F> {
    type Output = Option<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let _held = hold(&this.lock);
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let out = inner.as_mut().poll(cx);
        if out.is_ready() {
            this.inner = None;
        }
        out.map(Some)
    }
}

impl<F> Drop for Serialized<F> {
    fn drop(&mut self) {
        let _held = hold(&self.lock);
        drop(self.inner.take());
    }
}

/// The handler a peer runs for requests it receives: `(from, req) -> resp`.
pub type Handler<Req, Resp> = Rc<dyn Fn(usize, Req) -> BoxedLocal<Resp>>;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MeshError {
    #[error("joining the mesh failed: {0}")]
    Join(String),
    #[error("peer {0} does not exist")]
    NoSuchPeer(usize),
    #[error("peer {0} is gone (shutting down)")]
    PeerGone(usize),
    #[error("the handler on peer {0} panicked")]
    HandlerPanicked(usize),
}

/// A call waiting for its answer: the peer asked, and where the answer goes.
type PendingCall<Resp> = (usize, LocalSender<Option<Resp>>);

/// This executor's end of the mesh.
pub struct Mesh<Req: Send + 'static, Resp: Send + 'static> {
    me: usize,
    peers: usize,
    senders: glommio::channels::channel_mesh::Senders<Envelope<Req, Resp>>,
    /// Callers waiting for an answer, by call id with the peer asked:
    /// `Some(resp)`, or `None` when the handler panicked.
    pending: RefCell<HashMap<u64, PendingCall<Resp>>>,
    next_id: Cell<u64>,
    handler: Handler<Req, Resp>,
}

impl<Req: Send + 'static, Resp: Send + 'static> Mesh<Req, Resp> {
    /// Join the mesh (waits for every peer to join) and start this
    /// executor's receive loops. Peer ids follow executor creation order.
    pub async fn join(
        builder: Builder<Req, Resp>,
        handler: Handler<Req, Resp>,
    ) -> Result<Rc<Self>, MeshError> {
        let mut builder = builder;
        let peers = builder.nr_peers();
        let inner = builder
            .inner
            .take()
            .ok_or_else(|| MeshError::Join("the builder was already joined".into()))?;
        let joined = Serialized {
            inner: Some(Box::pin(inner.join())),
            lock: builder.refcount_lock.clone(),
        }
        .await
        .ok_or_else(|| MeshError::Join("the join was polled after it finished".into()))?;
        let (senders, mut receivers) = joined.map_err(|e| MeshError::Join(e.to_string()))?;
        let mesh = Rc::new(Self {
            me: senders.peer_id(),
            peers,
            senders,
            pending: RefCell::new(HashMap::new()),
            next_id: Cell::new(0),
            handler,
        });
        for (peer, receiver) in receivers.streams() {
            let mesh = mesh.clone();
            glommio::spawn_local(async move {
                while let Some(envelope) = receiver.recv().await {
                    mesh.on_envelope(envelope);
                }
                // The peer's executor is gone: nothing will answer the calls
                // still waiting on it (without this they would wait forever).
                mesh.forget_calls_to(peer);
            })
            .detach();
        }
        Ok(mesh)
    }

    /// This executor's peer id.
    pub fn me(&self) -> usize {
        self.me
    }

    pub fn peers(&self) -> usize {
        self.peers
    }

    /// Ask peer `target` and wait for its answer. A call to ourselves runs
    /// the handler directly.
    pub async fn call(self: &Rc<Self>, target: usize, req: Req) -> Result<Resp, MeshError> {
        self.post(target, req).await?.answer().await
    }

    /// Send `req` to peer `target`; done once it is in that peer's queue.
    /// The peer starts its handler for its requests from us in the order
    /// they were posted, each before the next is taken (see
    /// [`Self::on_envelope`]), so what a handler does before its first
    /// await happens in posting order. A request to ourselves starts its
    /// handler here and now.
    pub async fn post(self: &Rc<Self>, target: usize, req: Req) -> Result<Posted<Resp>, MeshError> {
        if target >= self.peers {
            return Err(MeshError::NoSuchPeer(target));
        }
        if target == self.me {
            return Ok(Posted::Here(
                target,
                start_handler(&self.handler, self.me, req),
            ));
        }
        let id = self.next_id.get();
        self.next_id.set(id.wrapping_add(1));
        let (tx, rx) = local_channel::new_bounded(1);
        self.pending.borrow_mut().insert(id, (target, tx));
        let envelope = Envelope::Request {
            id,
            from: self.me,
            req,
        };
        if self.senders.send_to(target, envelope).await.is_err() {
            self.pending.borrow_mut().remove(&id);
            return Err(MeshError::PeerGone(target));
        }
        Ok(Posted::There(target, rx))
    }

    fn on_envelope(self: &Rc<Self>, envelope: Envelope<Req, Resp>) {
        match envelope {
            // The handler starts here, in the order the requests arrived
            // (a handler may take its place in some order before its first
            // await, e.g. a produce's in its partitions' append order).
            Envelope::Request { id, from, req } => {
                let mesh = self.clone();
                let run = start_handler(&mesh.handler, from, req);
                glommio::spawn_local(async move {
                    let resp = run.await;
                    // The caller may be shutting down; nothing to do then.
                    let _ = mesh
                        .senders
                        .send_to(from, Envelope::Response { id, resp })
                        .await;
                })
                .detach();
            }
            // The `pending` guard is released before the send wakes the
            // caller (see `local_sync::Notify::notify`).
            Envelope::Response { id, resp } => {
                let tx = self.pending.borrow_mut().remove(&id);
                if let Some((_, tx)) = tx {
                    let _ = tx.try_send(resp);
                }
            }
        }
    }

    /// Drop the calls waiting on `peer`: their callers get `PeerGone`.
    fn forget_calls_to(&self, peer: usize) {
        let gone: Vec<_> = {
            let mut pending = self.pending.borrow_mut();
            let ids: Vec<u64> = pending
                .iter()
                .filter(|(_, (target, _))| *target == peer)
                .map(|(id, _)| *id)
                .collect();
            ids.into_iter()
                .filter_map(|id| pending.remove(&id))
                .collect()
        };
        // Dropped with the guard released: each drop wakes its caller.
        drop(gone);
    }

    /// Stop sending; peers' receive loops for us end, pending calls fail.
    pub fn close(&self) {
        self.senders.close();
        self.pending.borrow_mut().clear();
    }
}

/// A request posted with [`Mesh::post`], waiting for its answer.
pub enum Posted<Resp> {
    /// Handled on this shard (the target): its handler's run.
    Here(usize, BoxedLocal<Option<Resp>>),
    /// Sent to the peer; its answer comes back on this channel.
    There(usize, local_channel::LocalReceiver<Option<Resp>>),
}

impl<Resp> Posted<Resp> {
    /// The peer's answer.
    pub async fn answer(self) -> Result<Resp, MeshError> {
        match self {
            Posted::Here(target, run) => run.await.ok_or(MeshError::HandlerPanicked(target)),
            // `None` when the pending entry was dropped (mesh closing).
            Posted::There(target, rx) => match rx.recv().await {
                Some(Some(resp)) => Ok(resp),
                Some(None) => Err(MeshError::HandlerPanicked(target)),
                None => Err(MeshError::PeerGone(target)),
            },
        }
    }
}

/// Starts the handler on one request now (what it does before its first
/// await happens in this call); its run answers `None` if it panicked,
/// starting or later. A panic in a detached task would otherwise end the
/// whole executor, and with it every partition the shard owns (the
/// connection side catches its own handlers the same way,
/// `server::connection`).
fn start_handler<Req, Resp: 'static>(
    handler: &Handler<Req, Resp>,
    from: usize,
    req: Req,
) -> BoxedLocal<Option<Resp>> {
    let panicked = move || {
        tracing::error!(
            from,
            "a cross-shard request handler panicked; the request fails"
        );
        None
    };
    match std::panic::catch_unwind(AssertUnwindSafe(|| handler(from, req))) {
        Ok(run) => Box::pin(async move {
            match AssertUnwindSafe(run).catch_unwind().await {
                Ok(resp) => Some(resp),
                Err(_) => panicked(),
            }
        }),
        Err(_) => Box::pin(async move { panicked() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use glommio::{LocalExecutorBuilder, Placement};

    #[derive(Debug)]
    enum Req {
        Echo(Bytes),
        /// The handler panics on this one.
        Panic,
        /// "I have made all my calls"; lets both sides close only when
        /// neither needs the other any more.
        Done,
        /// The handler never answers this one.
        Never,
    }
    #[derive(Debug, PartialEq)]
    enum Resp {
        Echoed { from: usize, payload: Bytes },
        Ack,
    }

    #[test]
    fn two_executors_round_trip_bytes_payloads_both_ways_and_survive_a_handler_panic() {
        let builder: Builder<Req, Resp> = builder(2, 16);
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let builder = builder.clone();
                LocalExecutorBuilder::new(Placement::Unbound)
                    .io_memory(512 << 10)
                    .spawn(move || async move {
                        let peer_done = Rc::new(crate::io::local_sync::Trigger::default());
                        let peer_done2 = peer_done.clone();
                        // Answers carry the caller id the handler saw, so the
                        // caller can check routing.
                        let handler: Handler<Req, Resp> = Rc::new(move |from, req| {
                            let peer_done = peer_done2.clone();
                            Box::pin(async move {
                                match req {
                                    Req::Echo(payload) => Resp::Echoed { from, payload },
                                    Req::Panic => panic!("handler bug (test)"),
                                    Req::Never => futures_lite::future::pending().await,
                                    Req::Done => {
                                        peer_done.fire();
                                        Resp::Ack
                                    }
                                }
                            })
                        });
                        let mesh = Mesh::join(builder, handler).await.unwrap();
                        let other = 1 - mesh.me();
                        let mut answers = Vec::new();
                        for i in 0..50u8 {
                            let payload = Bytes::from(vec![i; 3]);
                            answers.push(mesh.call(other, Req::Echo(payload)).await.unwrap());
                        }
                        // A handler that panics fails that call only, on a
                        // peer and on this shard; both executors go on.
                        assert!(matches!(
                            mesh.call(other, Req::Panic).await,
                            Err(MeshError::HandlerPanicked(p)) if p == other
                        ));
                        assert!(matches!(
                            mesh.call(mesh.me(), Req::Panic).await,
                            Err(MeshError::HandlerPanicked(_))
                        ));
                        let own = mesh.call(mesh.me(), Req::Echo(Bytes::new())).await.unwrap();
                        let _ = mesh.call(other, Req::Done).await;
                        peer_done.wait().await;
                        mesh.close();
                        (mesh.me(), other, answers, own)
                    })
                    .unwrap()
            })
            .collect();
        let mut ids = Vec::new();
        for h in handles {
            let (me, other, answers, own) = h.join().unwrap();
            assert_ne!(me, other);
            ids.push(me);
            assert_eq!(answers.len(), 50);
            for (i, a) in answers.into_iter().enumerate() {
                assert_eq!(
                    a,
                    Resp::Echoed {
                        from: me,
                        payload: Bytes::from(vec![i as u8; 3])
                    }
                );
            }
            assert_eq!(
                own,
                Resp::Echoed {
                    from: me,
                    payload: Bytes::new()
                }
            );
        }
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1], "peer ids follow executor creation order");
    }

    #[test]
    fn a_call_to_a_peer_that_closes_without_answering_fails_instead_of_waiting_forever() {
        let builder: Builder<Req, Resp> = builder(2, 4);
        let spawn = |asks: bool| {
            let builder = builder.clone();
            LocalExecutorBuilder::new(Placement::Unbound)
                .io_memory(512 << 10)
                .spawn(move || async move {
                    let got_it = Rc::new(crate::io::local_sync::Trigger::default());
                    let got_it2 = got_it.clone();
                    let handler: Handler<Req, Resp> = Rc::new(move |_from, req| {
                        let got_it = got_it2.clone();
                        Box::pin(async move {
                            if matches!(req, Req::Never) {
                                got_it.fire();
                            }
                            futures_lite::future::pending().await
                        })
                    });
                    let mesh = Mesh::join(builder, handler).await.unwrap();
                    if asks {
                        // A hang guard, not a speed check: a lost wake-up
                        // fails the test instead of stalling the suite.
                        let guard = async {
                            glommio::timer::sleep(std::time::Duration::from_secs(60)).await;
                            Err(MeshError::Join("no answer within 60 s".into()))
                        };
                        Some(
                            futures_lite::future::or(mesh.call(1 - mesh.me(), Req::Never), guard)
                                .await,
                        )
                    } else {
                        // Close (as a shard does on its way out) once the
                        // call is being served, never answering it.
                        got_it.wait().await;
                        mesh.close();
                        None
                    }
                })
                .unwrap()
        };
        let asker = spawn(true);
        let quitter = spawn(false);
        assert_eq!(quitter.join().unwrap(), None);
        assert_eq!(asker.join().unwrap(), Some(Err(MeshError::PeerGone(1))));
    }

    /// glommio's `MeshBuilder` clones share one non-atomic `Rc` count; the
    /// wrapper serializes every update. Without it, threads cloning and
    /// dropping clones at once lose updates, the count reaches zero early
    /// and the join below reads freed memory (ASan: heap-use-after-free in
    /// `Rc::drop` of the peer list).
    #[test]
    fn clones_made_and_dropped_on_many_threads_at_once_leave_the_builder_joinable() {
        let builder: Builder<Req, Resp> = builder(2, 4);
        for _round in 0..4 {
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let builder = builder.clone();
                    std::thread::spawn(move || {
                        for _ in 0..20_000 {
                            drop(builder.clone());
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
        }
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let builder = builder.clone();
                LocalExecutorBuilder::new(Placement::Unbound)
                    .io_memory(512 << 10)
                    .spawn(move || async move {
                        let handler: Handler<Req, Resp> =
                            Rc::new(|_, _| Box::pin(async { Resp::Ack }));
                        let mesh = Mesh::join(builder, handler).await.unwrap();
                        let me = mesh.me();
                        mesh.close();
                        me
                    })
                    .unwrap()
            })
            .collect();
        let mut ids: Vec<usize> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        ids.sort_unstable();
        assert_eq!(ids, vec![0, 1]);
    }
}
