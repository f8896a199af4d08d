//! `[drv]` DescribeLogDirs (key 35), v0–v4 (KIP-113; v4 adds the dirs'
//! total and usable bytes, KIP-827): every log dir of this broker with
//! the replicas it holds, as `kafka-log-dirs.sh --describe`,
//! `Admin.describeLogDirs` and `kafka-reassign-partitions --verify` ask
//! (Kafka's `KafkaApis.handleDescribeLogDirsRequest` →
//! `ReplicaManager.describeLogDirs`).
//!
//! DESCRIBE on CLUSTER, else no results and CLUSTER_AUTHORIZATION_FAILED
//! (the top-level error code is v3+). A null topic list means every
//! partition; otherwise each dir still lists every topic it holds, with
//! only the asked partitions (Kafka groups the dir's logs by topic, then
//! filters partitions). An offline dir answers KAFKA_STORAGE_ERROR and no
//! topics. Size is the log's bytes (`UnifiedLog.size`); a future replica
//! (a move in progress) is `is_future_key` with the current replica's LEO
//! minus its own as offset lag; a current replica's lag is
//! `max(hw - leo, 0)` (`getLogEndOffsetLag`).

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use futures_lite::future::BoxedLocal;
use kafka_protocol::messages::ApiKey;
use kafka_protocol_39::messages::describe_log_dirs_request::DescribeLogDirsRequest;
use kafka_protocol_39::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResponse, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use kafka_protocol_39::messages::TopicName;
use kafka_protocol_39::protocol::StrBytes;

use super::authz::Authz;
use super::{HandlerError, Request, Response};
use crate::acl::Operation;
use crate::protocol::schema::{decode_checked_39, encode_39, Field};
use crate::protocol::{ApiRange, ErrorCode};
use crate::server::out::OutPart;
use crate::shard::data_shard::LogDirReplica;
use crate::shard::ShardContext;
use crate::storage::log_dir::LogDirs;

pub const VERSIONS: ApiRange = ApiRange::new(ApiKey::DescribeLogDirs, 0, 4);

/// DescribeLogDirsRequest.json: topics (nullable) [topic, partitions []int32].
const SCHEMA: &[Field] = &[Field::Structs(&[Field::Str, Field::FixedArray(4)])];

/// Flexible versions from v2. Kafka 3.9 serves v0, which the newer codec
/// dropped (KIP-896): the 3.9 codec (`protocol::api`) decodes and encodes.
const FIRST_FLEXIBLE: i16 = 2;

/// The request, its arrays bounded by the bytes left before the codec
/// allocates them.
pub fn decode_request(
    body: bytes::Bytes,
    version: i16,
) -> Result<DescribeLogDirsRequest, crate::protocol::decode::DecodeError> {
    decode_checked_39(body, SCHEMA, version, version >= FIRST_FLEXIBLE)
}

/// Kafka's `adjustForLargeFileSystems`: a size past `i64::MAX` reads as it.
fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The answer for dir `i`: its replicas grouped by topic, partitions
/// filtered by `asked` (`None`: all).
fn dir_result(
    log_dirs: &LogDirs,
    i: usize,
    replicas: &[LogDirReplica],
    asked: Option<&BTreeSet<(String, i32)>>,
    version: i16,
) -> DescribeLogDirsResult {
    let mut r = DescribeLogDirsResult::default();
    r.log_dir = StrBytes::from_string(log_dirs.absolute(i));
    let space = if log_dirs.is_online(i) {
        log_dirs.space(i)
    } else {
        Err(std::io::Error::other("offline"))
    };
    let Ok((total, usable)) = space else {
        r.error_code = ErrorCode::KAFKA_STORAGE_ERROR.0;
        return r;
    };
    if version >= 4 {
        r.total_bytes = as_i64(total);
        r.usable_bytes = as_i64(usable);
    }
    // A topic none of whose partitions is asked for is left out, as
    // Kafka 3.9's `ReplicaManager.describeLogDirs` drops topics left
    // without partitions (`filterNot(_.partitions().isEmpty)`).
    let mut by_topic: BTreeMap<&str, Vec<DescribeLogDirsPartition>> = BTreeMap::new();
    for rep in replicas.iter().filter(|rep| rep.dir == i) {
        if asked.is_some_and(|a| !a.contains(&(rep.tp.topic.to_string(), rep.tp.partition))) {
            continue;
        }
        let list = by_topic.entry(&rep.tp.topic).or_default();
        let mut p = DescribeLogDirsPartition::default();
        p.partition_index = rep.tp.partition;
        p.partition_size = as_i64(rep.size);
        p.offset_lag = rep.offset_lag;
        p.is_future_key = rep.is_future;
        list.push(p);
    }
    r.topics = by_topic
        .into_iter()
        .map(|(name, partitions)| {
            let mut t = DescribeLogDirsTopic::default();
            t.name = TopicName(StrBytes::from_string(name.to_string()));
            t.partitions = partitions;
            t
        })
        .collect();
    r
}

pub fn handle(ctx: Rc<ShardContext>, req: Request) -> BoxedLocal<Result<Response, HandlerError>> {
    Box::pin(async move {
        let version = req.header.api_version;
        let authz = Authz::new(&ctx, &req);
        let request = decode_request(req.body, version)?;
        let mut response = DescribeLogDirsResponse::default();
        match ctx.data() {
            _ if !authz.cluster(Operation::Describe) => {
                // The top-level error code is v3+; before, an empty answer.
                response.error_code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0;
            }
            None => {}
            Some(data) => {
                let asked: Option<BTreeSet<(String, i32)>> = request.topics.as_ref().map(|ts| {
                    ts.iter()
                        .flat_map(|t| t.partitions.iter().map(|p| (t.topic.0.to_string(), *p)))
                        .collect()
                });
                let log_dirs = data.replicas.log_dirs().clone();
                let replicas = ctx.datapath().log_dir_replicas().await;
                response.results = (0..log_dirs.all().len())
                    .map(|i| dir_result(&log_dirs, i, &replicas, asked.as_ref(), version))
                    .collect();
            }
        }
        if version < 3 {
            response.error_code = 0;
        }
        let body = encode_39(&response, version).map_err(HandlerError::Encode)?;
        Ok(Response::Body(vec![OutPart::Bytes(body)]))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::describe_log_dirs_request::DescribableLogDirTopic;
    use kafka_protocol_39::protocol::Encodable;

    #[test]
    fn the_schema_covers_every_version_exactly() {
        for v in VERSIONS.min..=VERSIONS.max {
            for topics in [
                None,
                Some(vec![DescribableLogDirTopic::default()
                    .with_topic(TopicName(StrBytes::from_static_str("t")))
                    .with_partitions(vec![0, 3])]),
            ] {
                let m = DescribeLogDirsRequest::default().with_topics(topics);
                let mut buf = bytes::BytesMut::new();
                m.encode(&mut buf, v).expect("encode");
                assert_eq!(decode_request(buf.freeze(), v).expect("decode"), m, "v{v}");
            }
        }
    }

    #[test]
    fn only_topics_with_an_asked_partition_are_listed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log_dirs = LogDirs::new(vec![dir.path().to_path_buf()]);
        let replica = |topic: &str, partition: i32, size: u64| LogDirReplica {
            tp: crate::types::TopicPartition::new(topic, partition),
            dir: 0,
            size,
            offset_lag: 0,
            is_future: false,
        };
        let replicas = [
            replica("a", 0, 93),
            replica("a", 1, 10),
            replica("b", 0, 71),
        ];
        let listed = |asked: Option<&BTreeSet<(String, i32)>>| -> Vec<(String, Vec<(i32, i64)>)> {
            dir_result(&log_dirs, 0, &replicas, asked, 4)
                .topics
                .iter()
                .map(|t| {
                    let parts = t
                        .partitions
                        .iter()
                        .map(|p| (p.partition_index, p.partition_size))
                        .collect();
                    (t.name.0.to_string(), parts)
                })
                .collect()
        };
        let asked: BTreeSet<(String, i32)> = [("a".to_string(), 1), ("c".to_string(), 0)].into();
        assert_eq!(listed(Some(&asked)), [("a".to_string(), vec![(1, 10)])]);
        assert_eq!(
            listed(None),
            [
                ("a".to_string(), vec![(0, 93), (1, 10)]),
                ("b".to_string(), vec![(0, 71)])
            ]
        );
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        for v in VERSIONS.min..=VERSIONS.max {
            for body in [
                &b""[..],
                &[0xff; 9],
                &[0, 0, 0, 1, 0, 1, b't', 0x7f, 0xff, 0xff, 0xff],
            ] {
                let _ = decode_request(bytes::Bytes::copy_from_slice(body), v);
            }
        }
    }
}
