//! `[io]` The per-shard accept loop. Every shard listens on the same port
//! (SO_REUSEPORT, see `boot`); the kernel spreads connections.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use glommio::net::TcpListener;

use super::connection;
use crate::io::local_sync::Notify;
use crate::shard::ShardContext;

/// How long a stopping shard waits for busy connections.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Accept until the shard stops, then wait for open connections to finish
/// their in-flight requests.
pub async fn serve(ctx: Rc<ShardContext>, listener: TcpListener) {
    let open = Rc::new(Cell::new(0usize));
    let drained = Rc::new(Notify::default());
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            ctx.stopping.wait().await;
            None
        })
        .await;
        match accepted {
            None => break,
            Some(Ok(stream)) => {
                open.set(open.get() + 1);
                let (ctx, open, drained) = (ctx.clone(), open.clone(), drained.clone());
                glommio::spawn_local(async move {
                    connection::serve(ctx, stream).await;
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
