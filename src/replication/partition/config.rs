//! `[drv]` A partition's topic config, changed in place (Kafka's
//! `LogManager.updateTopicConfig` → `UnifiedLog.updateConfig`): an
//! AlterConfigs or `/config/changes` notification reaches the open
//! partition and its log without closing either, so followers fetching
//! from it and clients producing to it see no gap.

use std::rc::Rc;

use super::Partition;
use crate::config::topic::TopicConfig;
use crate::storage::config::LogConfig;

impl Partition {
    /// The topic config in force now (resolved over the broker defaults).
    pub fn config(&self) -> Rc<TopicConfig> {
        self.config.borrow().clone()
    }

    /// Apply a changed topic config: the partition's own checks
    /// (`min.insync.replicas`, `cleanup.policy`, `message.timestamp.type`)
    /// at once, the log's (`max.message.bytes`, `segment.*`, `retention.*`,
    /// `flush.*`) under its write guard, so an append either finished
    /// under the old config or runs under the new one.
    pub async fn update_config(&self, config: TopicConfig, log_config: LogConfig) {
        let log = self.log.write().await;
        *self.config.borrow_mut() = Rc::new(config);
        match log {
            Ok(mut log) => log.set_config(log_config),
            Err(_) => {
                tracing::warn!(tp = %self.tp, "partition lock poisoned; log config unchanged")
            }
        }
    }
}
