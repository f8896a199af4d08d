//! `[io]` The per-shard accept loops. Every shard listens on every
//! listener's port (SO_REUSEPORT, see `boot`), one accept loop per
//! listener; the kernel spreads connections.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use glommio::net::TcpListener;

use super::connection;
use super::connection_quotas::{Admit, ConnectionQuotas};
use super::memory_pool::MemoryPool;
use super::tls_conn;
use crate::io::local_sync::Notify;
use crate::shard::ShardContext;

mod info;

pub use info::ListenerInfo;

/// How long a stopping shard waits for busy connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How often an accept loop at `max.connections` looks for a free slot
/// (the slot is freed on whichever shard's thread the connection closes).
const FULL_POLL: Duration = Duration::from_millis(10);

/// Sleeps [`FULL_POLL`]; true if the shard is stopping instead.
async fn wait_or_stop(ctx: &ShardContext) -> bool {
    futures_lite::future::or(
        async {
            glommio::timer::sleep(FULL_POLL).await;
            false
        },
        async {
            ctx.stopping.wait().await;
            true
        },
    )
    .await
}

/// Accept on `listener` (the socket of listener `info`) until the shard
/// stops, then wait for open connections to finish their in-flight
/// requests. `quotas` are the broker-wide connection limits (Kafka's
/// Acceptor with ConnectionQuotas, shared by every listener), `pool` the
/// broker's request memory pool (`queued.max.request.bytes`).
pub async fn serve(
    ctx: Rc<ShardContext>,
    listener: TcpListener,
    info: Rc<ListenerInfo>,
    quotas: Arc<ConnectionQuotas>,
    pool: Arc<MemoryPool>,
) {
    let open = Rc::new(Cell::new(0usize));
    let drained = Rc::new(Notify::default());
    loop {
        // At max.connections accept nothing: new clients wait in the
        // backlog until a connection closes (Kafka's waitForConnectionSlot).
        if quotas.full() {
            if wait_or_stop(&ctx).await {
                break;
            }
            continue;
        }
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            ctx.stopping.wait().await;
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => {
                let Some(ip) = stream.peer_addr().ok().map(|a| a.ip()) else {
                    continue; // already gone
                };
                // Another shard may have taken the last slot since the
                // check above: then this one waits, accepted but unread.
                let mut admit = quotas.admit(ip);
                while admit == Admit::Full {
                    if wait_or_stop(&ctx).await {
                        break;
                    }
                    admit = quotas.admit(ip);
                }
                match admit {
                    Admit::Yes => {}
                    Admit::Full => break, // stopping
                    Admit::OverIpLimit { limit } => {
                        // Kafka's Acceptor: "Rejected connection from ...,
                        // address already has the configured maximum of N
                        // connections."
                        tracing::info!(%ip, limit, "rejected connection: the address already has max.connections.per.ip connections");
                        drop(stream);
                        continue;
                    }
                }
                open.set(open.get() + 1);
                let (ctx, open, drained) = (ctx.clone(), open.clone(), drained.clone());
                let (quotas, pool, info) = (quotas.clone(), pool.clone(), info.clone());
                glommio::spawn_local(async move {
                    // An SSL or SASL_SSL listener's connections handshake first;
                    // SASL listeners' connections authenticate before serving.
                    match &info.tls {
                        Some(tls) => {
                            let tls = tls.clone();
                            let sasl = info.sasl.clone();
                            tls_conn::serve(ctx, stream, pool, tls, &info.name, sasl).await;
                        }
                        None => {
                            let sasl = info.sasl.clone();
                            connection::serve(ctx, stream, pool, &info.name, sasl).await;
                        }
                    }
                    quotas.release(ip);
                    open.set(open.get() - 1);
                    drained.notify();
                })
                .detach();
            }
            Some(Err(e)) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                glommio::timer::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    drop(listener);
    // Connections finish their in-flight requests; one whose client stopped
    // reading must not hold the shutdown forever.
    let (open_at_stop, started_ms) = (open.get(), ctx.clock.wall_ms());
    let drain = async {
        while open.get() > 0 {
            drained.notified().await;
        }
        tracing::info!(
            open_at_stop,
            ms = ctx.clock.wall_ms() - started_ms,
            "connections drained"
        );
    };
    let grace = async {
        glommio::timer::sleep(SHUTDOWN_GRACE).await;
        tracing::warn!(
            open = open.get(),
            "closing connections still busy at shutdown"
        );
    };
    futures_lite::future::or(drain, grace).await;
}
