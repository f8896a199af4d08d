//! `[drv]` The ISR changes a data shard's partition leaders propose
//! (`maybeExpandIsr` on a follower fetch, `maybeShrinkIsr` on the periodic
//! check): each is sent to the controller through the control shard
//! ([`super::alter_partition::propose`]) in its own task, and the answer
//! goes back to the partition, which holds at most one change in flight
//! (KIP-497's pending ISR state lives in `replication::isr`).

use std::rc::Rc;

use super::context::ShardContext;
use crate::replication::isr_change::IsrChange;

/// Send the changes this shard's partitions queued since the last call.
pub fn maybe_send_isr_changes(ctx: &Rc<ShardContext>) {
    let Some(data) = ctx.data() else { return };
    for change in data.take_isr_changes() {
        let ctx = ctx.clone();
        glommio::spawn_local(async move { send_one(&ctx, change).await }).detach();
    }
}

async fn send_one(ctx: &Rc<ShardContext>, change: IsrChange) {
    tracing::info!(tp = %change.tp, isr = ?change.new_isr, "proposing ISR change");
    let answer = super::alter_partition::propose(ctx, change.clone()).await;
    let Some(data) = ctx.data() else { return };
    let Some(partition) = data.replicas.get(&change.tp) else {
        return;
    };
    let now_ms = ctx.clock.wall_ms();
    if partition
        .on_isr_change_answer(&change, answer, now_ms)
        .await
    {
        data.on_local_advance(&change.tp, partition.snapshot());
        super::router::maybe_send_notes(ctx);
    }
}
