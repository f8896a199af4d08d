//! `[drv]` AlterReplicaLogDirs (key 34), v0–v2 (KIP-113): move replicas of
//! this broker to other log dirs, as `kafka-reassign-partitions.sh` with a
//! `log_dirs` plan and `Admin.alterReplicaLogDirs` ask (Kafka's
//! `KafkaApis.handleAlterReplicaLogDirsRequest` →
//! `ReplicaManager.alterReplicaLogDirs`). The move itself is
//! `replication::alter_log_dirs`; the answer comes once it has started.
//!
//! ALTER on CLUSTER, else every partition CLUSTER_AUTHORIZATION_FAILED.
//! Per partition, in Kafka's order: a future folder name over 255 bytes
//! INVALID_TOPIC_EXCEPTION; a path that is not one of `log.dirs` (as
//! absolute paths) LOG_DIR_NOT_FOUND; an offline destination, or a
//! partition whose dir is offline, KAFKA_STORAGE_ERROR; a partition this
//! broker does not host REPLICA_NOT_AVAILABLE. A partition named twice
//! takes its last path (Kafka builds a map). Results are grouped by topic.

use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::alter_replica_log_dirs_request::AlterReplicaLogDirsRequest;
use kafka_protocol_39::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult, AlterReplicaLogDirsResponse,
};

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::schema::{decode_checked_39, encode_39, Field};
use crate::protocol::{ApiRange, ErrorCode};
use crate::replication::log_dir_move::{suffixed_dir_name, FUTURE_DIR_SUFFIX};
use crate::server::out::OutPart;
use crate::shard::ShardContext;
use crate::types::TopicPartition;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::AlterReplicaLogDirs, 0, 2);

/// AlterReplicaLogDirsRequest.json: dirs [path, topics [name, partitions []int32]].
const SCHEMA: &[Field] = &[Field::Structs(&[
    Field::Str,
    Field::Structs(&[Field::Str, Field::FixedArray(4)]),
])];

/// Flexible versions from v2. Kafka 3.9 serves v0, which the newer codec
/// dropped (KIP-896): the 3.9 codec (`protocol::api`) decodes and encodes.
const FIRST_FLEXIBLE: i16 = 2;

/// The request, its arrays bounded by the bytes left before the codec
/// allocates them.
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<AlterReplicaLogDirsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

/// Kafka's check in `alterReplicaLogDirs` (a file name's limit): the
/// future folder `<topic>-<p>.<32 hex>-future` must fit in 255 bytes.
fn name_too_long(tp: &TopicPartition) -> bool {
    suffixed_dir_name(&tp.dir_name(), &"0".repeat(32), FUTURE_DIR_SUFFIX).len() > 255
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        // (partition, path) with the last path of a partition named twice.
        let mut asked: Vec<(TopicPartition, String)> = Vec::new();
        for d in &request.dirs {
            for t in &d.topics {
                for p in &t.partitions {
                    let tp = TopicPartition::new(t.name.0.as_str(), *p);
                    asked.retain(|(x, _)| *x != tp);
                    asked.push((tp, d.path.to_string()));
                }
            }
        }
        let allowed = authz.cluster(Operation::Alter);
        let mut errors: Vec<Result<ErrorCode, usize>> = Vec::with_capacity(asked.len());
        let mut moves = Vec::new();
        for (tp, path) in &asked {
            let dir = ctx.data().and_then(|d| {
                d.replicas
                    .log_dirs()
                    .index_of_absolute(path)
                    .map(|i| (d, i))
            });
            let e = match dir {
                _ if !allowed => Ok(ErrorCode::CLUSTER_AUTHORIZATION_FAILED),
                _ if name_too_long(tp) => Ok(ErrorCode::INVALID_TOPIC_EXCEPTION),
                None => Ok(ErrorCode::LOG_DIR_NOT_FOUND),
                Some((d, i)) if !d.replicas.log_dirs().is_online(i) => {
                    Ok(ErrorCode::KAFKA_STORAGE_ERROR)
                }
                Some((_, i)) => {
                    moves.push((tp.clone(), i));
                    Err(moves.len() - 1)
                }
            };
            errors.push(e);
        }
        let answers = if moves.is_empty() {
            Vec::new()
        } else {
            ctx.datapath().alter_log_dirs_on_owners(moves).await
        };
        let mut response = AlterReplicaLogDirsResponse::default();
        for ((tp, _), e) in asked.iter().zip(errors) {
            let code = e.unwrap_or_else(|i| {
                answers
                    .get(i)
                    .copied()
                    .unwrap_or(ErrorCode::REPLICA_NOT_AVAILABLE)
            });
            if code != ErrorCode::NONE {
                tracing::warn!(%tp, error = %code, "unable to alter the log dir of a replica");
            }
            let mut p = AlterReplicaLogDirPartitionResult::default();
            p.partition_index = tp.partition;
            p.error_code = code.0;
            let at = response
                .results
                .iter()
                .position(|t| t.topic_name.0.as_str() == &*tp.topic);
            let topic = match at {
                Some(i) => &mut response.results[i],
                None => {
                    let mut t = AlterReplicaLogDirTopicResult::default();
                    t.topic_name = kafka_protocol_39::messages::TopicName(
                        kafka_protocol_39::protocol::StrBytes::from_string(tp.topic.to_string()),
                    );
                    response.results.push(t);
                    let last = response.results.len() - 1;
                    &mut response.results[last]
                }
            };
            topic.partitions.push(p);
        }
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::alter_replica_log_dirs_request::{
        AlterReplicaLogDir, AlterReplicaLogDirTopic,
    };
    use kafka_protocol_39::messages::TopicName;
    use kafka_protocol_39::protocol::{Encodable, StrBytes};

    #[test]
    fn the_schema_covers_every_version_exactly() {
        for v in VERSIONS.min..=VERSIONS.max {
            let m =
                AlterReplicaLogDirsRequest::default().with_dirs(vec![AlterReplicaLogDir::default(
                )
                .with_path(StrBytes::from_static_str("/data/a"))
                .with_topics(vec![AlterReplicaLogDirTopic::default()
                    .with_name(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![0, 1])])]);
            let mut buf = bytes::BytesMut::new();
            m.encode(&mut buf, v).expect("encode");
            assert_eq!(decode_request(buf.freeze(), v).expect("decode"), m, "v{v}");
        }
    }

    #[test]
    fn a_topic_name_too_long_for_a_future_folder_is_refused() {
        assert!(!name_too_long(&TopicPartition::new("t", 0)));
        assert!(!name_too_long(&TopicPartition::new(
            "x".repeat(210).as_str(),
            0
        )));
        // Kafka's longest topic name (249) leaves no room for the suffix.
        assert!(name_too_long(&TopicPartition::new(
            "x".repeat(249).as_str(),
            0
        )));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        for v in VERSIONS.min..=VERSIONS.max {
            for body in [
                &b""[..],
                &[0xff; 9],
                &[0, 0, 0, 1, 0, 1, b'/', 0x7f, 0xff, 0xff, 0xff],
            ] {
                let _ = decode_request(bytes::Bytes::copy_from_slice(body), v);
            }
        }
    }
}
