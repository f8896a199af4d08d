//! `[drv]` KIP-890 part 1 on a partition leader (Kafka 3.9's
//! `ReplicaManager.maybeStartTransactionVerificationForPartitions` and
//! `AddPartitionsToTxnManager`): before a producer's first transactional
//! batch on a partition opens a transaction there, the leader asks the
//! producer's transaction coordinator (AddPartitionsToTxn v4+,
//! `verify_only`) whether the partition is in the running transaction.
//! Only a "yes" lets the batch through, with the guard its partition
//! handed out when the verification started: a marker written meanwhile
//! ends the verification, so a late "yes" cannot open a transaction the
//! coordinator no longer knows (the hanging transaction KIP-890 closes).
//!
//! The coordinator is asked on this broker's own shard when this broker
//! leads the transactional id's `__transaction_state` partition, else
//! over a kept connection to the leader. A peer without AddPartitionsToTxn
//! v4 is not asked (Kafka skips verification on its version mismatch).

use std::rc::Rc;
use std::time::Duration;

use kafka_protocol_39::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnRequest, AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol_39::messages::add_partitions_to_txn_response::AddPartitionsToTxnResponse;
use kafka_protocol_39::messages::{ApiKey, ProducerId, TopicName, TransactionalId};
use kafka_protocol_39::protocol::StrBytes;

use super::txn_host::{TxnCall, TxnReply};
use crate::controller::image::TRANSACTION_STATE_TOPIC;
use crate::protocol::ErrorCode;
use crate::shard::context::ShardContext;
use crate::shard::data_shard::VerifyStart;
use crate::txn::coordinator::partition_for;
use crate::types::{partitions_by_topic, BrokerId, TopicPartition};

/// Where a transactional id's coordinator is.
enum Coordinator {
    Here,
    At(String),
    Unknown,
}

/// KIP-890 verification on a connection's shard
/// ([`ShardContext::txn_verifier`]).
pub struct TxnVerifier {
    ctx: Rc<ShardContext>,
}

impl TxnVerifier {
    pub fn new(ctx: &Rc<ShardContext>) -> Self {
        Self { ctx: ctx.clone() }
    }

    /// `shardlog.txn.verify.delay.ms`: whether the verification starting
    /// now is one the hook holds back — every other one this shard started
    /// (counted by its transaction host; a shard without one delays none).
    fn next_is_delayed(&self) -> bool {
        self.ctx.data().is_some_and(|d| {
            let n = d.txns.verifications_started.get();
            d.txns.verifications_started.set(n + 1);
            n.is_multiple_of(2)
        })
    }

    /// Verify a transactional producer's batches, one per partition of
    /// `parts` (with its first sequence), before appending them. Per
    /// partition: `Ok(guard)` to append with (`None`: no verification
    /// needed), or the code Kafka's `AddPartitionsToTxnManager` hands the
    /// request (PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH; the
    /// caller maps the rest for its API).
    pub async fn verify_txn_appends(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        parts: Vec<(TopicPartition, i32)>,
    ) -> Vec<Result<Option<u64>, ErrorCode>> {
        if !self.ctx.config.transaction_partition_verification_enable {
            return vec![Ok(None); parts.len()];
        }
        // Decided on entry, before any await: of two requests pipelined on
        // a connection (started in arrival order) the first one waits.
        let delay_ms = self.ctx.config.shardlog_txn_verify_delay_ms;
        let delayed = delay_ms > 0 && self.next_is_delayed();
        let starts: Vec<(TopicPartition, VerifyStart)> = parts
            .into_iter()
            .map(|(tp, first_seq)| {
                let v = VerifyStart {
                    producer_id,
                    epoch,
                    first_seq,
                };
                (tp, v)
            })
            .collect();
        let asked: Vec<(String, i32)> = starts
            .iter()
            .map(|(tp, _)| (tp.topic.to_string(), tp.partition))
            .collect();
        let mut results = self
            .ctx
            .datapath()
            .start_verifications_on_owners(starts)
            .await;
        let need: Vec<usize> = (0..results.len())
            .filter(|&i| matches!(results[i], Ok(Some(_))))
            .collect();
        if need.is_empty() {
            return results;
        }
        let partitions: Vec<(String, i32)> = need.iter().map(|&i| asked[i].clone()).collect();
        let codes = self
            .ask_coordinator_verify(txn_id, producer_id, epoch, &partitions)
            .await;
        if delayed {
            glommio::timer::sleep(Duration::from_millis(delay_ms)).await;
        }
        for (i, code) in need.into_iter().zip(codes) {
            if code != ErrorCode::NONE {
                // Producers expect INVALID_PRODUCER_EPOCH here (Kafka's
                // `AddPartitionsToTxnHandler`).
                let code = if code == ErrorCode::PRODUCER_FENCED {
                    ErrorCode::INVALID_PRODUCER_EPOCH
                } else {
                    code
                };
                results[i] = Err(code);
            }
        }
        results
    }

    fn txn_coordinator_of(&self, txn_id: &str) -> Coordinator {
        let snapshot = self.ctx.snapshot();
        let Some(topic) = snapshot.cluster_topic(TRANSACTION_STATE_TOPIC) else {
            return Coordinator::Unknown;
        };
        let p = partition_for(txn_id, topic.partition_count());
        let Some(state) = topic.partitions.iter().find(|s| s.partition == p) else {
            return Coordinator::Unknown;
        };
        if state.leader == BrokerId(self.ctx.config.broker_id) {
            return Coordinator::Here;
        }
        match snapshot
            .brokers
            .iter()
            .find(|b| b.broker_id == state.leader)
        {
            Some(b) => Coordinator::At(format!("{}:{}", b.host, b.port)),
            None => Coordinator::Unknown,
        }
    }

    /// A verify-only AddPartitionsToTxn answered by this broker's
    /// coordinator of `txn_id` (a leader here, or the v4+ handler): one
    /// code per partition, NOT_COORDINATOR for all when it is not here.
    pub async fn verify_on_this_broker(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<ErrorCode> {
        let call = TxnCall::Verify {
            txn_id: txn_id.to_owned(),
            producer_id,
            epoch,
            partitions: partitions.to_vec(),
        };
        match self.ctx.txn_driver().ask_txn(txn_id, call).await {
            TxnReply::Verified(codes) if codes.len() == partitions.len() => codes,
            _ => vec![ErrorCode::NOT_COORDINATOR; partitions.len()],
        }
    }

    /// One code per partition from the coordinator of `txn_id`.
    async fn ask_coordinator_verify(
        &self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<ErrorCode> {
        let all = |e: ErrorCode| vec![e; partitions.len()];
        match self.txn_coordinator_of(txn_id) {
            Coordinator::Unknown => all(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            Coordinator::Here => {
                self.verify_on_this_broker(txn_id, producer_id, epoch, partitions)
                    .await
            }
            Coordinator::At(addr) => {
                let req = verify_request(txn_id, producer_id, epoch, partitions);
                let timeout = Duration::from_millis(
                    u64::try_from(self.ctx.config.request_timeout_ms).unwrap_or(30_000),
                );
                let send = async { Some(self.send_verify(&addr, &req).await) };
                let expire = async {
                    glommio::timer::sleep(timeout).await;
                    None
                };
                match futures_lite::future::or(send, expire).await {
                    Some(Ok(Some(resp))) => codes_of(&resp, txn_id, partitions),
                    Some(Ok(None)) => {
                        tracing::warn!(%addr, "coordinator cannot verify (no AddPartitionsToTxn v4); appending unverified");
                        all(ErrorCode::NONE)
                    }
                    Some(Err(e)) => {
                        tracing::debug!(%addr, error = %e, "verification request failed");
                        all(ErrorCode::NETWORK_EXCEPTION)
                    }
                    None => all(ErrorCode::NETWORK_EXCEPTION),
                }
            }
        }
    }

    async fn send_verify(
        &self,
        addr: &str,
        req: &AddPartitionsToTxnRequest,
    ) -> std::io::Result<Option<AddPartitionsToTxnResponse>> {
        let Some(host) = self.ctx.data().map(|d| d.txns.clone()) else {
            return Err(std::io::Error::other("not a data shard"));
        };
        let client_id = format!("broker-{}-txn-verification", self.ctx.config.broker_id);
        host.peers
            .call(
                addr,
                &client_id,
                ApiKey::AddPartitionsToTxn,
                |v| v.add_partitions_to_txn,
                req,
            )
            .await
    }
}

/// AddPartitionsToTxn v4+ for one transaction, `verify_only`.
fn verify_request(
    txn_id: &str,
    producer_id: i64,
    epoch: i16,
    partitions: &[(String, i32)],
) -> AddPartitionsToTxnRequest {
    let topics = partitions_by_topic(partitions)
        .into_iter()
        .map(|(t, ps)| {
            AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_string(t.to_owned())))
                .with_partitions(ps)
        })
        .collect();
    AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(txn_id.to_owned())))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch)
            .with_verify_only(true)
            .with_topics(topics),
    ])
}

/// Per partition the coordinator's code (Kafka's `AddPartitionsToTxnHandler`):
/// a top-level error is every partition's (CLUSTER_AUTHORIZATION_FAILED,
/// which the client must not see, becomes INVALID_TXN_STATE); a partition
/// the answer does not name is verified.
fn codes_of(
    resp: &AddPartitionsToTxnResponse,
    txn_id: &str,
    partitions: &[(String, i32)],
) -> Vec<ErrorCode> {
    if resp.error_code != 0 {
        let code = match ErrorCode(resp.error_code) {
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED => ErrorCode::INVALID_TXN_STATE,
            other => other,
        };
        return vec![code; partitions.len()];
    }
    let result = resp
        .results_by_transaction
        .iter()
        .find(|r| r.transactional_id.0.as_str() == txn_id);
    partitions
        .iter()
        .map(|(t, p)| {
            result
                .into_iter()
                .flat_map(|r| &r.topic_results)
                .filter(|x| x.name.0.as_str() == t)
                .flat_map(|x| &x.results_by_partition)
                .find(|r| r.partition_index == *p)
                .map_or(ErrorCode::NONE, |r| ErrorCode(r.partition_error_code))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol_39::messages::add_partitions_to_txn_response::{
        AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
    };

    fn answer(codes: &[(&str, i32, ErrorCode)]) -> AddPartitionsToTxnResponse {
        let topics = codes
            .iter()
            .map(|(t, p, c)| {
                AddPartitionsToTxnTopicResult::default()
                    .with_name(TopicName(StrBytes::from_string((*t).to_owned())))
                    .with_results_by_partition(vec![AddPartitionsToTxnPartitionResult::default()
                        .with_partition_index(*p)
                        .with_partition_error_code(c.0)])
            })
            .collect();
        AddPartitionsToTxnResponse::default().with_results_by_transaction(vec![
            AddPartitionsToTxnResult::default()
                .with_transactional_id(TransactionalId(StrBytes::from_static_str("tx")))
                .with_topic_results(topics),
        ])
    }

    #[test]
    fn partition_codes_come_from_the_transactions_result() {
        let asked = [
            ("a".to_owned(), 0),
            ("a".to_owned(), 1),
            ("b".to_owned(), 0),
        ];
        let resp = answer(&[
            ("a", 0, ErrorCode::NONE),
            ("a", 1, ErrorCode::TRANSACTION_ABORTABLE),
        ]);
        assert_eq!(
            codes_of(&resp, "tx", &asked),
            vec![
                ErrorCode::NONE,
                ErrorCode::TRANSACTION_ABORTABLE,
                ErrorCode::NONE
            ]
        );
    }

    #[test]
    fn a_top_level_error_is_every_partitions_and_never_cluster_authorization() {
        let asked = [("a".to_owned(), 0), ("b".to_owned(), 3)];
        let mut resp = answer(&[]);
        resp.error_code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0;
        assert_eq!(
            codes_of(&resp, "tx", &asked),
            vec![ErrorCode::INVALID_TXN_STATE; 2]
        );
        resp.error_code = ErrorCode::NOT_COORDINATOR.0;
        assert_eq!(
            codes_of(&resp, "tx", &asked),
            vec![ErrorCode::NOT_COORDINATOR; 2]
        );
    }

    #[test]
    fn the_request_groups_partitions_by_topic_and_only_verifies() {
        let req = verify_request(
            "tx",
            7,
            2,
            &[("a".into(), 0), ("b".into(), 1), ("a".into(), 2)],
        );
        let t = &req.transactions[0];
        assert!(t.verify_only);
        assert_eq!((t.producer_id.0, t.producer_epoch), (7, 2));
        let names: Vec<(&str, Vec<i32>)> = t
            .topics
            .iter()
            .map(|x| (x.name.0.as_str(), x.partitions.clone()))
            .collect();
        assert_eq!(names, vec![("a", vec![0, 2]), ("b", vec![1])]);
    }
}
