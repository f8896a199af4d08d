//! `[drv]` AllocateProducerIds (key 67), v0 (KIP-730): a Kafka 3.9 broker
//! in ZooKeeper mode asks the controller for its next block of producer
//! ids. The controller's queue (`controller::zk_mode::producer_ids`)
//! checks the broker's registration and epoch and reserves the block in
//! `/latest_producer_id_block`; a broker that is not the controller
//! answers NOT_CONTROLLER, and the asking broker tries the controller it
//! learns next.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::{
    AllocateProducerIdsRequest, AllocateProducerIdsResponse, ApiKey, ProducerId,
};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::encode::encode;
use crate::protocol::schema::{CheckedApi, Field, Schema, INT32, INT64};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::BrokerId;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AllocateProducerIds, 0, 0);

/// AllocateProducerIdsRequest.json: broker_id, broker_epoch.
const SCHEMA: &[Field] = &[INT32, INT64];

pub const API: CheckedApi = CheckedApi {
    versions: VERSIONS,
    first_flexible: 0,
    schema: Schema::Fixed(SCHEMA),
};

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        // KafkaApis.handleAllocateProducerIdsRequest: CLUSTER_ACTION on the
        // cluster first (AllocateProducerIdsRequest.getErrorResponse).
        let allowed = Authz::new(&ctx, &req).cluster(Operation::ClusterAction);
        let request: AllocateProducerIdsRequest = API.decode(req.body, version)?;
        let answer = if allowed {
            ctx.control_client()
                .allocate_producer_ids(BrokerId(request.broker_id.0), request.broker_epoch)
                .await
                .unwrap_or(Err(ErrorCode::NOT_CONTROLLER))
        } else {
            Err(ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        };
        let mut response = AllocateProducerIdsResponse::default();
        match answer {
            Ok((start, len)) => {
                response.producer_id_start = ProducerId(start);
                response.producer_id_len = len;
            }
            Err(code) => {
                response.error_code = code.0;
                response.producer_id_start = ProducerId(-1);
            }
        }
        let body = encode(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::schema::schema_fuzz_test;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        API.assert_schema_covers_every_version(|_| {
            AllocateProducerIdsRequest::default()
                .with_broker_id(kafka_protocol::messages::BrokerId(3))
                .with_broker_epoch(77)
        });
    }

    schema_fuzz_test!(API, AllocateProducerIdsRequest);
}
