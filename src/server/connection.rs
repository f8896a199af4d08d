//! `[io]` One client connection, owned by the shard that accepted it.
//!
//! The reader splits frames off the socket, decodes headers and spawns one
//! task per request; tasks finish in any order and hand their outcome to
//! the [`InOrder`] sequencer; the writer sends outcomes in request order,
//! coalescing whatever is ready into one write. A malformed frame, an
//! unknown API or an unsupported version closes the connection after the
//! responses before it are sent (Kafka closes; we are slightly kinder).

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;

use bytes::BytesMut;
use futures_lite::FutureExt;
use glommio::net::TcpStream;
use kafka_protocol::messages::ApiKey;

use super::dispatch::{authorization_gap, frame_response, route, Routing};
use super::handlers::quota_common::{request_quota_applies, request_throttle_ms, QuotaId};
use super::handlers::{Request, Response};
use super::in_order::InOrder;
use super::memory_pool::{Lease, MemoryPool};
use super::out::{ConnWriter, OutPart};
use super::request_metrics::{Queued, Scoped, Timing};
use super::sasl_conn::{self, SaslListener, SaslPeer, SaslSession, SessionStep};
use super::transport::{ConnRead, ConnWrite, PlainRead, PlainWrite};
use crate::io::clock::Clock;
use crate::io::local_sync::{FifoGate, Notify, Trigger};
use crate::metrics::shard::SocketCounters;
use crate::protocol::frame::{frame_len, take_frame};
use crate::protocol::header::{decode_request_header, peek_fixed, RequestHeader};
use crate::protocol::throttle_field::{
    exempt_from_request_quota, leads_with_throttle_time, raise_throttle_time,
};
use crate::shard::ShardContext;

/// Read size when no frame size is known yet.
const READ_CHUNK: usize = 16 * 1024;
/// Largest single read, so huge frames grow the buffer in steps.
const READ_CHUNK_MAX: usize = 4 << 20;
/// A frame's read window grows with what arrived of it: at most this much
/// or as much as is buffered, whichever is more (doubling). Memory for a
/// partly received request follows the bytes received, not its declared
/// size: a client that declares 100 MB and sends 64 KiB holds about
/// 128 KiB, where a window sized by the declaration held 4 MiB.
const READ_GROWTH_FLOOR: usize = 64 * 1024;
/// A frame up to this size gets its whole read window at once: the
/// doubling above copied the buffered part at every step, about the
/// frame's size again (3% of a shard's profile under the Java producer's
/// 1 MB requests). This is the Java producer's default `max.request.size`
/// (1048576) plus its frame header: a partly sent request of at most
/// this declared size holds no more than one request of a well-behaved
/// client, and only pages the kernel writes into become resident.
const WHOLE_FRAME_MAX: usize = (1 << 20) + 4096;
/// While the request memory pool is used up, how often a paused reader
/// looks again (Kafka's selector re-checks the pool on each poll).
const POOL_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

enum Outcome {
    /// The response, the request's timing (`request_metrics`), and how
    /// long to mute the connection after it (quota throttling; 0 = not).
    Respond(Vec<OutPart>, Timing, u64),
    /// No response; mute this long (0 = not).
    Nothing(u64),
    /// Already framed bytes (a re-authentication's answers, KIP-368).
    Raw(bytes::Bytes),
    Close(String),
}

struct Conn {
    ctx: Rc<ShardContext>,
    peer: String,
    client_host: Rc<str>,
    /// Kafka's principal of the client (`handlers::Request::principal`).
    principal: Rc<str>,
    /// The name of the listener this connection came in on.
    listener: Rc<str>,
    /// Its authorization decisions (`acl::decisions`).
    decisions: Rc<RefCell<crate::acl::decisions::Decisions>>,
    /// Outcomes in request order, each counted in the shard's response
    /// queue until the writer takes it.
    in_order: RefCell<InOrder<(Outcome, Queued)>>,
    /// Reader → writer: an outcome finished, or the reader stopped.
    wake_writer: Notify,
    /// Writer → reader: in-flight count dropped.
    wake_reader: Notify,
    reader_done: Cell<bool>,
    /// Requests received so far (activity for the idle check).
    frames: Cell<u64>,
    /// Fired when the connection must close (bad input, write failure).
    closed: Trigger,
    /// Quota throttling (KIP-219): no request is read before this
    /// monotonic time (ns).
    muted_until_ns: Cell<u64>,
    /// The client is under a quota: its requests are handled one at a
    /// time, as Kafka handles every connection's (its channel is muted
    /// from a request's receipt to its response), so none slips past a
    /// throttle in a pipeline.
    one_at_a_time: Cell<bool>,
    /// The broker's request memory pool (`queued.max.request.bytes`).
    pool: Arc<MemoryPool>,
    /// The order this connection's Produce requests arrived in: each takes
    /// its ticket as it is read and hands its appends to the partitions
    /// in that order (`handlers::produce`).
    produce_order: Rc<FifoGate>,
    /// A SASL connection's session: its expiry and re-authentication
    /// (KIP-368, `server::sasl_conn::SaslSession`).
    sasl: RefCell<Option<SaslSession>>,
    /// Its listener's `socket-server-metrics` on this shard.
    sock: Rc<SocketCounters>,
}

/// Kafka's principal of a connection without a client certificate
/// (`KafkaPrincipal.ANONYMOUS`).
pub const ANONYMOUS_PRINCIPAL: &str = "User:ANONYMOUS";

/// Serve one PLAINTEXT (or SASL_PLAINTEXT, `sasl` set) connection of the
/// listener named `listener` until the client leaves, it must be closed,
/// or the shard stops (then in-flight responses are finished first). SSL
/// listeners' connections go through `server::tls_conn::serve`.
pub async fn serve(
    ctx: Rc<ShardContext>,
    stream: TcpStream,
    pool: Arc<MemoryPool>,
    listener: &str,
    sasl: Option<Arc<SaslListener>>,
) {
    let (peer, client_host) = peer_names(&stream);
    // Responses are complete messages; do not let Nagle hold them back.
    let _ = stream.set_nodelay(true);
    let principal: Rc<str> = ANONYMOUS_PRINCIPAL.into();
    let who = Peer::new(peer, client_host, principal, listener).with_sasl(sasl);
    serve_socket(ctx, stream, pool, who, BytesMut::new()).await;
}

/// Run a connection's loops straight on its socket: a PLAINTEXT
/// connection, or a TLS one whose record layer the kernel took over
/// (`server::tls_conn::kernel`; `preread`: the plaintext rustls had
/// already decrypted, the first bytes of the Kafka stream).
pub async fn serve_socket(
    ctx: Rc<ShardContext>,
    stream: TcpStream,
    pool: Arc<MemoryPool>,
    who: Peer,
    preread: BytesMut,
) {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    // sendfile must never block the shard; glommio itself only uses
    // MSG_DONTWAIT calls plus readiness polls, so this changes nothing for it.
    if let Err(e) = crate::io::zerocopy::set_nonblocking(&stream) {
        tracing::warn!(peer = %who.peer, error = %e, "cannot make socket non-blocking; closing");
        return;
    }
    let (reader, writer) = futures_lite::io::split(stream);
    let reader = PlainRead {
        fd,
        reader,
        scratch: Vec::new(),
        preread,
    };
    let writer = PlainWrite(ConnWriter { stream: writer, fd });
    run(ctx, who, pool, reader, writer).await;
}

/// Who is on the other end of a connection.
pub struct Peer {
    /// The peer's address, for log lines.
    pub peer: String,
    /// Kafka's client host in group membership: "/" + the peer's address.
    pub client_host: Rc<str>,
    /// Kafka's principal (`User:ANONYMOUS` without a client certificate).
    pub principal: Rc<str>,
    /// The name of the listener the connection came in on.
    pub listener: Rc<str>,
    /// A SASL listener's settings: the client authenticates first
    /// (`server::sasl_conn`) and `principal` is replaced by its own.
    pub sasl: Option<Arc<SaslListener>>,
}

impl Peer {
    /// The peer `peer` (Kafka's client host `client_host`) as `principal`
    /// on the listener `listener`.
    pub fn new(peer: String, client_host: Rc<str>, principal: Rc<str>, listener: &str) -> Self {
        Self {
            peer,
            client_host,
            principal,
            listener: listener.into(),
            sasl: None,
        }
    }

    /// The same peer on a SASL listener (`None`: no SASL).
    pub fn with_sasl(mut self, sasl: Option<Arc<SaslListener>>) -> Self {
        self.sasl = sasl;
        self
    }
}

/// The peer's address for log lines and Kafka's client host ("/" + IP).
pub fn peer_names(stream: &TcpStream) -> (String, Rc<str>) {
    let peer_addr = stream.peer_addr().ok();
    let peer = peer_addr.map_or_else(|| "?".into(), |a| a.to_string());
    let client_host: Rc<str> =
        peer_addr.map_or_else(|| "/".into(), |a| format!("/{}", a.ip()).into());
    (peer, client_host)
}

/// Run a connection's read and write loops over its transport until the
/// client leaves, it must be closed, or the shard stops.
pub async fn run<R: ConnRead, W: ConnWrite + 'static>(
    ctx: Rc<ShardContext>,
    who: Peer,
    pool: Arc<MemoryPool>,
    mut reader: R,
    mut writer: W,
) {
    let sock = ctx.stats.metrics.socket(&who.listener);
    // A SASL listener: nothing but the authentication before it succeeded.
    let (principal, buffered, session) = match who.sasl.clone() {
        None => {
            // Kafka's `Selector` counts a `successful-authentication` for
            // every channel that becomes ready, PLAINTEXT and SSL too (their
            // authenticators complete at once; `sasl_conn` counts SASL's).
            sock.on_authentication(true);
            (who.principal, BytesMut::new(), None)
        }
        Some(listener) => {
            let sasl_peer = SaslPeer {
                peer: &who.peer,
                client_host: &who.client_host,
                listener: &who.listener,
                principal: &who.principal,
            };
            match sasl_conn::authenticate(
                &ctx,
                &sasl_peer,
                listener.clone(),
                &mut reader,
                &mut writer,
            )
            .await
            {
                Some((done, buffered)) => {
                    let session = SaslSession::new(listener, &done, ctx.clock.mono_ns());
                    (done.principal.into(), buffered, Some(session))
                }
                None => {
                    writer.close().await;
                    return;
                }
            }
        }
    };
    let conn = Rc::new(Conn {
        ctx,
        peer: who.peer,
        client_host: who.client_host,
        principal,
        listener: who.listener,
        decisions: Rc::default(),
        in_order: RefCell::new(InOrder::new()),
        wake_writer: Notify::default(),
        wake_reader: Notify::default(),
        reader_done: Cell::new(false),
        frames: Cell::new(0),
        closed: Trigger::default(),
        muted_until_ns: Cell::new(0),
        one_at_a_time: Cell::new(false),
        pool,
        produce_order: Rc::default(),
        sasl: RefCell::new(session),
        sock,
    });
    tracing::debug!(peer = %conn.peer, principal = %conn.principal, "connection accepted");
    conn.sock.on_opened();
    let writer_task = glommio::spawn_local(write_loop(conn.clone(), writer));
    glommio::spawn_local(idle_watch(conn.clone())).detach();
    read_loop(&conn, &mut reader, buffered).await;
    conn.reader_done.set(true);
    conn.wake_writer.notify();
    writer_task.await;
    // Ends the idle watch.
    conn.closed.fire();
    conn.sock.on_closed();
    tracing::debug!(peer = %conn.peer, "connection closed");
}

/// Kafka's `connections.max.idle.ms`: close a connection that neither sent
/// a request nor had one in flight for that long. One timer per period per
/// connection, not per read.
async fn idle_watch(conn: Rc<Conn>) {
    let Ok(idle_ms) = u64::try_from(conn.ctx.config.connections_max_idle_ms) else {
        return; // negative: never close idle connections
    };
    let period = std::time::Duration::from_millis(idle_ms.max(1));
    let mut seen = conn.frames.get();
    loop {
        let tick = async {
            glommio::timer::sleep(period).await;
            true
        };
        let ended = async {
            conn.closed.wait().await;
            false
        };
        if !futures_lite::future::or(tick, ended).await {
            return;
        }
        let now = conn.frames.get();
        if now == seen && conn.in_order.borrow().in_flight() == 0 {
            tracing::debug!(peer = %conn.peer, "closing idle connection (connections.max.idle.ms)");
            conn.closed.fire();
            return;
        }
        seen = now;
    }
}

async fn read_loop<R: ConnRead>(conn: &Rc<Conn>, reader: &mut R, mut buf: BytesMut) {
    let max = usize::try_from(conn.ctx.config.socket_request_max_bytes).unwrap_or(0);
    // `queued.max.requests`: requests read ahead of their responses; past
    // this the reader stops reading the socket (Kafka clients default to 5
    // in flight; this bounds memory against a client that never reads).
    let max_in_flight = usize::try_from(conn.ctx.config.queued_max_requests)
        .unwrap_or(1)
        .max(1);
    // The pool's lease for the frame at the front of the buffer, taken as
    // soon as its length is known; it moves into the request's task.
    let mut lease: Option<Lease> = None;
    loop {
        loop {
            // A throttled client's channel stays muted (Kafka's
            // `ClientQuotaManager.throttle`): no further request is taken,
            // buffered or not, until the time passed.
            while conn.one_at_a_time.get() && conn.in_order.borrow().in_flight() > 0 {
                if wait_or_stop(conn, conn.wake_reader.notified())
                    .await
                    .is_none()
                {
                    return;
                }
            }
            if !wait_while_muted(conn).await {
                return;
            }
            if !wait_in_flight_below(conn, max_in_flight).await {
                return;
            }
            if !lease_front_frame(conn, &buf, max, &mut lease).await {
                return;
            }
            match take_frame(&mut buf, max) {
                Ok(Some(frame)) => {
                    conn.sock.on_receive();
                    if !on_frame(conn, frame, lease.take()) {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    // Kafka: InvalidReceiveException closes the connection.
                    tracing::warn!(peer = %conn.peer, error = %e, "closing connection: bad frame");
                    conn.closed.fire();
                    return;
                }
            }
        }
        // Here fewer than max_in_flight requests are in flight: the inner
        // loop waited for that before finding no whole frame.
        let buffered = buf.len();
        let want = match frame_len(&buf, max) {
            Ok(Some(total)) => read_window(total, buffered),
            _ => READ_CHUNK,
        };
        let read = wait_or_stop(conn, reader.fill(&mut buf, want)).await;
        match read {
            Some(Ok(n)) if n > 0 => conn.sock.on_bytes_in(n as u64),
            Some(Ok(_)) => return, // client closed its side
            Some(Err(e)) if e.kind() == std::io::ErrorKind::InvalidData => {
                // Bad TLS records (the only reads that judge the bytes).
                tracing::warn!(peer = %conn.peer, error = %e, "closing connection: bad TLS input");
                conn.closed.fire();
                return;
            }
            Some(Err(e)) => {
                tracing::debug!(peer = %conn.peer, error = %e, "read failed");
                return;
            }
            None => return, // stopping or closed
        }
    }
}

/// `[pure]` How much to read for a frame of `total` bytes of which
/// `buffered` arrived: the rest of a frame up to [`WHOLE_FRAME_MAX`], else
/// a window that doubles with what arrived (see [`READ_GROWTH_FLOOR`]).
fn read_window(total: usize, buffered: usize) -> usize {
    let rest = total.saturating_sub(buffered);
    if total <= WHOLE_FRAME_MAX {
        return rest.max(READ_CHUNK);
    }
    rest.clamp(
        READ_CHUNK,
        READ_CHUNK_MAX.min(buffered.max(READ_GROWTH_FLOOR)),
    )
}

/// Make sure the frame at the front of `buf`, once its length is known,
/// holds a lease of that length from the request memory pool, waiting
/// while the pool is used up (KIP-72: no further request is read, the
/// connection stays open); `false` when the connection stops meanwhile.
async fn lease_front_frame(conn: &Conn, buf: &[u8], max: usize, lease: &mut Option<Lease>) -> bool {
    if lease.is_some() {
        return true;
    }
    let Ok(Some(total)) = frame_len(buf, max) else {
        return true; // no length yet, or a bad one the caller reports
    };
    loop {
        if let Some(l) = conn.pool.try_allocate(total) {
            *lease = Some(l);
            return true;
        }
        if wait_or_stop(conn, glommio::timer::sleep(POOL_RETRY))
            .await
            .is_none()
        {
            return false;
        }
    }
}

/// Wait until fewer than `max` requests are in flight on the connection;
/// `false` when it stops meanwhile.
async fn wait_in_flight_below(conn: &Conn, max: usize) -> bool {
    while conn.in_order.borrow().in_flight() >= max {
        if wait_or_stop(conn, conn.wake_reader.notified())
            .await
            .is_none()
        {
            return false;
        }
    }
    true
}

/// Wait out a quota mute; `false` when the connection stops meanwhile.
async fn wait_while_muted(conn: &Conn) -> bool {
    let muted = conn.muted_until_ns.get();
    let now = conn.ctx.clock.mono_ns();
    if muted <= now {
        return true;
    }
    let pause = glommio::timer::sleep(std::time::Duration::from_nanos(muted - now));
    wait_or_stop(conn, pause).await.is_some()
}

/// Run `fut` unless the shard stops or the connection closes first.
async fn wait_or_stop<T>(conn: &Conn, fut: impl std::future::Future<Output = T>) -> Option<T> {
    let stop = async {
        futures_lite::future::or(conn.ctx.stopping.wait(), conn.closed.wait()).await;
        None
    };
    futures_lite::future::or(async { Some(fut.await) }, stop).await
}

/// Handle one frame; `false` when the connection must stop reading.
/// `lease` (the frame's share of the request memory pool) is given back
/// once the request was handled.
fn on_frame(conn: &Rc<Conn>, frame: bytes::Bytes, lease: Option<Lease>) -> bool {
    conn.frames.set(conn.frames.get() + 1);
    let fixed = peek_fixed(&frame);
    if let Some(go_on) = on_session_frame(conn, &frame, fixed) {
        return go_on;
    }
    let mut body = frame;
    let header = match decode_request_header(&mut body) {
        Ok(h) => h,
        Err(e) => return close_after_pending(conn, format!("{e} {fixed:?}")),
    };
    let handler = match route(&header) {
        Routing::Run(handler) => handler,
        Routing::Close(reason) => return close_after_pending(conn, reason),
    };
    if let Some(reason) = authorization_gap(&conn.ctx, &header, &conn.principal) {
        return close_after_pending(conn, reason);
    }
    if !conn.one_at_a_time.get() {
        let quotas = conn.ctx.snapshot().client_quotas.clone();
        if !quotas.is_empty() {
            let id = QuotaId::new(&conn.principal, header.client_id.as_deref().unwrap_or(""));
            conn.one_at_a_time.set(crate::metadata::quotas::applies_to(
                &quotas,
                id.user,
                id.client_id,
            ));
        }
    }
    // request_percentage: only quota'd clients' requests are timed.
    let request_quota = conn.one_at_a_time.get()
        && !exempt_from_request_quota(header.api_key)
        && request_quota_applies(
            &conn.ctx,
            QuotaId::new(&conn.principal, header.client_id.as_deref().unwrap_or("")),
        );
    let seq = conn.in_order.borrow_mut().on_request();
    let conn = conn.clone();
    let received_ns = conn.ctx.clock.mono_ns();
    let (body_bytes, queued) = (body.len() as u64, Queued::request(&conn.ctx));
    // Taken here, in the order the requests arrived, before the request's
    // task exists.
    let produce_turn = (header.api_key == ApiKey::Produce).then(|| conn.produce_order.ticket());
    glommio::spawn_local(async move {
        // Its handler takes it now.
        drop(queued);
        let _lease = lease;
        let request = Request {
            header: header.clone(),
            body,
            client_host: conn.client_host.clone(),
            principal: conn.principal.clone(),
            listener: conn.listener.clone(),
            produce_turn,
            decisions: conn.decisions.clone(),
        };
        let scope = Rc::default();
        let run = AssertUnwindSafe(handler(conn.ctx.clone(), request)).catch_unwind();
        let run = Scoped::new(conn.ctx.clone(), Rc::clone(&scope), run);
        let (result, request_ms) = if request_quota {
            let (result, busy_ns) = busy_time(run, &*conn.ctx.clock).await;
            let id = QuotaId::new(&conn.principal, header.client_id.as_deref().unwrap_or(""));
            let ms = request_throttle_ms(&conn.ctx, id, busy_ns).await;
            (result, ms)
        } else {
            (run.await, 0)
        };
        let timing = |throttle_ms: u64| {
            Timing::new(
                (&header, body_bytes),
                received_ns,
                scope,
                conn.ctx.clock.mono_ns(),
                throttle_ms,
            )
        };
        let outcome = match result {
            Ok(Ok(Response::Body(parts))) => respond(&header, parts, timing(0), 0, request_ms),
            Ok(Ok(Response::Throttled { parts, throttle_ms })) => {
                respond(&header, parts, timing(throttle_ms), throttle_ms, request_ms)
            }
            Ok(Ok(Response::NoResponse)) => {
                timing(0).record_unanswered(&conn.ctx);
                Outcome::Nothing(request_ms)
            }
            Ok(Ok(Response::MuteOnly { throttle_ms })) => {
                timing(throttle_ms).record_unanswered(&conn.ctx);
                Outcome::Nothing(throttle_ms.max(request_ms))
            }
            Ok(Err(e)) => {
                Outcome::Close(format!("{:?} v{}: {e}", header.api_key, header.api_version))
            }
            // A handler bug must not take the shard down with it.
            Err(_) => Outcome::Close(format!("handler for {:?} panicked", header.api_key)),
        };
        // Requests pipelined behind a throttled one wait from now on
        // (Kafka handles one request per connection at a time, so none
        // slips past a throttle there either).
        if let Outcome::Respond(_, _, ms) | Outcome::Nothing(ms) = &outcome {
            mute(&conn, *ms);
        }
        let queued = Queued::response(&conn.ctx);
        conn.in_order
            .borrow_mut()
            .on_complete(seq, (outcome, queued));
        conn.wake_writer.notify();
    })
    .detach();
    true
}

/// A SASL connection's frame as its session sees it (KIP-368): `None` to
/// serve it as a request, else whether to read on after the session
/// answered it (a re-authentication step) or closed the connection.
fn on_session_frame(
    conn: &Conn,
    frame: &bytes::Bytes,
    fixed: Option<(i16, i16, i32)>,
) -> Option<bool> {
    let mut session = conn.sasl.borrow_mut();
    let session = session.as_mut()?;
    let api_key = fixed.map_or(-1, |(key, _, _)| key);
    let step = session.on_frame(&conn.ctx, &conn.peer, api_key, frame);
    let mut in_order = conn.in_order.borrow_mut();
    let mut queue = |outcome: Outcome| {
        let seq = in_order.on_request();
        in_order.on_complete(seq, (outcome, Queued::response(&conn.ctx)));
    };
    let go_on = match step {
        SessionStep::Serve => return None,
        SessionStep::Answer(bytes) => {
            queue(Outcome::Raw(bytes));
            true
        }
        SessionStep::Fail(answer, reason) => {
            if let Some(bytes) = answer {
                queue(Outcome::Raw(bytes));
            }
            queue(Outcome::Close(reason));
            false
        }
        SessionStep::Close(reason) => {
            // SocketServer closes an expired channel at once: the answers
            // still in flight are dropped, as Kafka drops them.
            tracing::warn!(peer = %conn.peer, %reason, "closing connection");
            conn.closed.fire();
            false
        }
    };
    conn.wake_writer.notify();
    Some(go_on)
}

/// The framed answer; a request-quota throttle (`request_ms`) goes into
/// the body's `throttle_time_ms` where the response opens with it (the
/// larger of the two), and the connection is muted for the larger.
fn respond(
    header: &RequestHeader,
    mut parts: Vec<OutPart>,
    timing: Timing,
    throttle_ms: u64,
    request_ms: u64,
) -> Outcome {
    if request_ms > 0 && leads_with_throttle_time(header.api_key, header.api_version) {
        if let Some(OutPart::Bytes(first)) = parts.first_mut() {
            let ms = i32::try_from(request_ms).unwrap_or(i32::MAX);
            if let Some(raised) = raise_throttle_time(first, ms) {
                *first = bytes::Bytes::from(raised);
            }
        }
    }
    Outcome::Respond(
        frame_response(header, parts),
        timing,
        throttle_ms.max(request_ms),
    )
}

/// Run `fut`, adding up the time its polls take on this shard (Kafka's
/// request-handler thread time; waits on other shards, the disk or the
/// purgatory are not counted).
async fn busy_time<F: std::future::Future + Unpin>(
    mut fut: F,
    clock: &dyn Clock,
) -> (F::Output, u64) {
    let mut busy = 0u64;
    let out = futures_lite::future::poll_fn(|cx| {
        let start = clock.mono_ns();
        let r = std::pin::Pin::new(&mut fut).poll(cx);
        busy += clock.mono_ns().saturating_sub(start);
        r
    })
    .await;
    (out, busy)
}

/// No request is read for `ms` from now (0: nothing changes).
fn mute(conn: &Conn, ms: u64) {
    if ms > 0 {
        let until = conn.ctx.clock.mono_ns() + ms * 1_000_000;
        conn.muted_until_ns
            .set(conn.muted_until_ns.get().max(until));
    }
}

fn close_after_pending(conn: &Conn, reason: String) -> bool {
    let mut in_order = conn.in_order.borrow_mut();
    let seq = in_order.on_request();
    in_order.on_complete(seq, (Outcome::Close(reason), Queued::response(&conn.ctx)));
    conn.wake_writer.notify();
    false
}

async fn write_loop<W: ConnWrite>(conn: Rc<Conn>, mut writer: W) {
    loop {
        let mut parts = Vec::new();
        let mut timings = Vec::new();
        let mut close = None;
        let mut mute_ms = 0;
        let mut released = false;
        let mut sends = 0u64;
        {
            let mut in_order = conn.in_order.borrow_mut();
            while let Some((outcome, _taken)) = in_order.pop_ready() {
                released = true;
                match outcome {
                    Outcome::Respond(p, timing, throttle_ms) => {
                        sends += 1;
                        parts.extend(p);
                        timings.push(timing);
                        mute_ms = mute_ms.max(throttle_ms);
                    }
                    Outcome::Nothing(throttle_ms) => mute_ms = mute_ms.max(throttle_ms),
                    Outcome::Raw(bytes) => {
                        sends += 1;
                        parts.push(OutPart::Bytes(bytes));
                    }
                    Outcome::Close(reason) => {
                        close = Some(reason);
                        break;
                    }
                }
            }
        }
        if !parts.is_empty() {
            let bytes: usize = parts.iter().map(OutPart::len).sum();
            let write_start_ns = conn.ctx.clock.mono_ns();
            if let Err(e) = writer.write_parts(parts, &conn.ctx.stats.zerocopy).await {
                tracing::debug!(peer = %conn.peer, error = %e, "write failed");
                conn.closed.fire();
                break;
            }
            let now = conn.ctx.clock.mono_ns();
            // Raw parts are a re-authentication's answers: sends too.
            conn.sock.on_sent(sends, bytes as u64);
            for timing in timings {
                timing.record_sent(&conn.ctx, write_start_ns, now);
            }
        }
        // Fewer requests in flight (answered, or acks=0 with no answer):
        // a reader held at queued.max.requests goes on.
        if released {
            conn.wake_reader.notify();
        }
        // Muted until the throttle time passed since the response went
        // out (KIP-219).
        mute(&conn, mute_ms);
        if let Some(reason) = close {
            tracing::warn!(peer = %conn.peer, %reason, "closing connection");
            conn.closed.fire();
            break;
        }
        if conn.reader_done.get() && conn.in_order.borrow().in_flight() == 0 {
            break;
        }
        if conn.closed.is_fired() {
            break;
        }
        conn.wake_writer.notified().await;
    }
    writer.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_up_to_a_default_max_request_is_read_in_one_window_larger_ones_in_doubling_steps() {
        // A 1 MiB produce request with its first 16 KiB buffered: the rest
        // in one window, so the buffer is not grown (and copied) again.
        assert_eq!(read_window(1 << 20, 16 << 10), (1 << 20) - (16 << 10));
        // Tiny frames still read a whole chunk (the next frames with them).
        assert_eq!(read_window(100, 10), READ_CHUNK);
        // A declared 100 MB: the window follows what arrived.
        assert_eq!(read_window(100_000_000, 16 << 10), READ_GROWTH_FLOOR);
        assert_eq!(read_window(100_000_000, 1 << 20), 1 << 20);
        assert_eq!(read_window(100_000_000, 50 << 20), READ_CHUNK_MAX);
        // The end of a large frame: only what is missing.
        assert_eq!(read_window(100_000_000, 100_000_000 - 20_000), 20_000);
        // Just past the whole-frame bound the doubling applies.
        assert_eq!(
            read_window(WHOLE_FRAME_MAX + 1, 16 << 10),
            READ_GROWTH_FLOOR
        );
    }
}
