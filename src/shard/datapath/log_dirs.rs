//! The connection side of DescribeLogDirs and AlterReplicaLogDirs: every
//! data shard reports its replicas; each partition's move is asked of its
//! owner.

use super::{futures_join_all, Datapath};
use crate::protocol::ErrorCode;
use crate::shard::data_shard::{DataRequest, DataResponse, LogDirReplica};
use crate::types::TopicPartition;

impl Datapath {
    /// Every replica of every data shard (a shard that does not answer
    /// contributes none).
    pub async fn log_dir_replicas(&self) -> Vec<LogDirReplica> {
        let calls = (0..self.ctx.n_shards).map(|shard| {
            let dp = self.clone();
            async move { dp.ask_owner(shard, DataRequest::DescribeLogDirs).await }
        });
        let mut out = Vec::new();
        for answer in futures_join_all(calls).await {
            if let Some(DataResponse::LogDirReplicas(list)) = answer {
                out.extend(list);
            }
        }
        out
    }

    /// Move each partition to a log dir (`LogDirs` index) on its owner;
    /// per partition in order its error.
    pub async fn alter_log_dirs_on_owners(
        &self,
        parts: Vec<(TopicPartition, usize)>,
    ) -> Vec<ErrorCode> {
        let n = parts.len();
        let groups = self.group_by_owner(parts.into_iter().map(|p| (p.0.clone(), p)));
        let mut results: Vec<Option<ErrorCode>> = vec![None; n];
        for (owner, items) in groups.by_owner {
            let (idx, parts): (Vec<usize>, Vec<(TopicPartition, usize)>) =
                items.into_iter().unzip();
            if let Some(DataResponse::LogDirsAltered(list)) = self
                .ask_owner(owner, DataRequest::AlterLogDirs { parts })
                .await
            {
                for (i, a) in idx.into_iter().zip(list) {
                    results[i] = Some(a);
                }
            }
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or(ErrorCode::REPLICA_NOT_AVAILABLE))
            .collect()
    }
}
