//! `[drv]` The stopping broker's side of controlled shutdown (Kafka 3.9
//! `KafkaServer.controlledShutdown`): ask the controller (as the last
//! UpdateMetadata named it) with ControlledShutdown v3 to move this
//! broker's leaders away, retrying `controlled.shutdown.max.retries` times
//! `controlled.shutdown.retry.backoff.ms` apart until it answers with no
//! partition left. Each attempt waits at most `request.timeout.ms`. The
//! data shards keep serving meanwhile, so clients follow the leaders as
//! they move and nothing is cut off mid-request.

use std::time::Duration;

use kafka_protocol_39::messages::controlled_shutdown_request::ControlledShutdownRequest;
use kafka_protocol_39::messages::controlled_shutdown_response::ControlledShutdownResponse;
use kafka_protocol_39::messages::BrokerId as BrokerId39;
use kafka_protocol_39::protocol::Decodable;

use crate::controller::channel::{inter_broker_address, ChannelConfig, ControllerChannel};
use crate::protocol::api::ZkApi;
use crate::protocol::ErrorCode;
use crate::shard::context::ShardContext;
use crate::types::BrokerId;

/// The version a 3.9 broker sends.
const VERSION: i16 = 3;

/// True when the controller answered with nothing left to move.
pub async fn run(ctx: &ShardContext, broker_epoch: i64) -> bool {
    let Some(control) = ctx.control() else {
        return false;
    };
    let me = BrokerId(ctx.config.broker_id);
    // `KafkaServer.controlledShutdown` tries while retries remain above 0:
    // `controlled.shutdown.max.retries=0` makes no attempt.
    let retries = ctx.config.controlled_shutdown_max_retries.max(0);
    let backoff = Duration::from_millis(
        u64::try_from(ctx.config.controlled_shutdown_retry_backoff_ms).unwrap_or(5000),
    );
    let timeout =
        Duration::from_millis(u64::try_from(ctx.config.request_timeout_ms).unwrap_or(30_000));
    // Kafka's `KafkaServer.controlledShutdown` reaches the controller on
    // the inter-broker listener (not the control-plane one).
    let listener = ctx.config.inter_broker_listener().to_owned();
    for attempt in 1..=retries {
        let target = {
            let cache = control.metadata_cache.borrow();
            let id = cache.controller_id();
            cache
                .live_brokers()
                .iter()
                .find(|b| b.id == id)
                .and_then(|b| inter_broker_address(b, &listener))
                .map(|addr| (id, addr))
        };
        match target {
            None => tracing::warn!(attempt, "controlled shutdown: no controller known"),
            Some((controller, addr)) => {
                let channel = ControllerChannel::new(
                    me,
                    ChannelConfig {
                        socket_timeout: timeout,
                        tls: ctx.broker_tls.inter_broker.clone(),
                        ..ChannelConfig::default()
                    },
                );
                channel.add_broker(controller, -1, addr);
                let req = ControlledShutdownRequest::default()
                    .with_broker_id(BrokerId39(me.0))
                    .with_broker_epoch(broker_epoch);
                let answer = channel.send(controller, ZkApi::ControlledShutdown, VERSION, &req);
                let timer = async {
                    glommio::timer::sleep(timeout).await;
                    Err(crate::controller::channel::ChannelError::BrokerRemoved(
                        controller,
                    ))
                };
                match futures_lite::future::or(answer, timer).await {
                    Ok(mut body) => match ControlledShutdownResponse::decode(&mut body, VERSION) {
                        Ok(r) if r.error_code == 0 && r.remaining_partitions.is_empty() => {
                            tracing::info!(%controller, attempt, "controlled shutdown succeeded");
                            channel.remove_broker(controller);
                            return true;
                        }
                        Ok(r) => tracing::warn!(
                            %controller,
                            attempt,
                            error = %ErrorCode(r.error_code),
                            remaining = r.remaining_partitions.len(),
                            "controlled shutdown: partitions remain"
                        ),
                        Err(e) => tracing::warn!(error = %e, "controlled shutdown: bad answer"),
                    },
                    Err(e) => {
                        tracing::warn!(%controller, attempt, error = %e, "controlled shutdown: no answer")
                    }
                }
                channel.remove_broker(controller);
            }
        }
        if attempt < retries {
            glommio::timer::sleep(backoff).await;
        }
    }
    tracing::warn!("controlled shutdown failed; proceeding to an unclean shutdown");
    false
}
