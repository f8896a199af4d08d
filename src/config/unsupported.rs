//! `[pure]` Kafka 3.9 broker keys shardlog does not implement, each with
//! what a `server.properties` naming it gets: refused (the start stops,
//! naming the key), accepted only at values that describe what shardlog
//! does anyway (Kafka's default, or the off switch of a feature shardlog
//! lacks), or accepted with a warning naming why the key has no meaning
//! here. Any other key Kafka does not know either is warned about as
//! unknown. `tests/config_audit.rs` holds every Kafka 3.9 key to one of
//! these answers or to a behaviour test.

/// What a key shardlog does not implement gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsupported {
    /// Any value stops the start.
    Refused(&'static str),
    /// Only these values (compared trimmed, case-insensitive) are
    /// accepted; any other stops the start.
    OnlyValues(&'static [&'static str], &'static str),
    /// Accepted with a warning: nothing in shardlog corresponds to it.
    NotApplicable(&'static str),
}

const KRAFT: &str = "a KRaft-mode key; shardlog runs Kafka's ZooKeeper mode";
const KRAFT_GROUPS: &str = "the new group coordinator (KIP-848) and share groups (KIP-932) run only in KRaft mode in Kafka 3.9";
const TIERED: &str =
    "tiered storage (KIP-405) is not implemented; remote.log.storage.system.enable is accepted only as false";
const THREADS: &str =
    "thread-per-core: requests, network I/O, recovery and cleaning run on the data shards (shardlog.shards)";
const JVM_METRICS: &str =
    "Kafka's JMX/Yammer metrics reporting; shardlog's metrics are served at shardlog.metrics.listener";
const PURGE: &str =
    "Kafka's purgatory sweeps completed operations every N requests; shardlog's removes each on completion";
const ZK_TLS: &str = "used only with zookeeper.ssl.client.enable=true, which is refused";
const TOKENS: &str = "used only with delegation tokens (KIP-48), which are not implemented";
const NO_CLASSES: &str =
    "a Java class shardlog cannot load; ignoring it would let through what it is set to control";

/// Every key of this table, sorted.
pub static UNSUPPORTED: &[(&str, Unsupported)] = {
    use Unsupported::*;
    &[
        ("alter.config.policy.class.name", Refused(NO_CLASSES)),
        ("alter.config.policy.kraft.compatibility.enable", NotApplicable(KRAFT)),
        ("alter.log.dirs.replication.quota.window.num", NotApplicable("log-dir moves are measured over the replication quota window (replication.quota.window.num)")),
        ("alter.log.dirs.replication.quota.window.size.seconds", NotApplicable("log-dir moves are measured over the replication quota window (replication.quota.window.size.seconds)")),
        ("auto.include.jmx.reporter", NotApplicable(JVM_METRICS)),
        ("background.threads", NotApplicable(THREADS)),
        ("broker.heartbeat.interval.ms", NotApplicable(KRAFT)),
        ("broker.session.timeout.ms", NotApplicable(KRAFT)),
        ("client.quota.callback.class", Refused(NO_CLASSES)),
        ("controller.listener.names", OnlyValues(&[""], KRAFT)),
        ("controller.quorum.append.linger.ms", NotApplicable(KRAFT)),
        ("controller.quorum.bootstrap.servers", OnlyValues(&[""], KRAFT)),
        ("controller.quorum.election.backoff.max.ms", NotApplicable(KRAFT)),
        ("controller.quorum.election.timeout.ms", NotApplicable(KRAFT)),
        ("controller.quorum.fetch.timeout.ms", NotApplicable(KRAFT)),
        ("controller.quorum.request.timeout.ms", NotApplicable(KRAFT)),
        ("controller.quorum.retry.backoff.ms", NotApplicable(KRAFT)),
        ("controller.quorum.voters", OnlyValues(&[""], KRAFT)),
        ("controller.quota.window.num", OnlyValues(&["11"], "the controller mutation quota's window (KIP-599) is fixed at Kafka's default")),
        ("controller.quota.window.size.seconds", OnlyValues(&["1"], "the controller mutation quota's window (KIP-599) is fixed at Kafka's default")),
        ("controller.socket.timeout.ms", OnlyValues(&["30000"], "the controller-to-broker socket timeout is fixed at Kafka's default")),
        ("create.topic.policy.class.name", Refused(NO_CLASSES)),
        ("delegation.token.expiry.check.interval.ms", NotApplicable(TOKENS)),
        ("delegation.token.expiry.time.ms", NotApplicable(TOKENS)),
        ("delegation.token.master.key", Refused("delegation tokens (KIP-48) are not implemented")),
        ("delegation.token.max.lifetime.ms", NotApplicable(TOKENS)),
        ("delegation.token.secret.key", Refused("delegation tokens (KIP-48) are not implemented")),
        ("delete.records.purgatory.purge.interval.requests", NotApplicable(PURGE)),
        ("early.start.listeners", NotApplicable(KRAFT)),
        ("eligible.leader.replicas.enable", OnlyValues(&["false"], KRAFT)),
        ("fetch.purgatory.purge.interval.requests", NotApplicable(PURGE)),
        ("group.consumer.assignors", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.max.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.max.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.max.size", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.min.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.min.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.consumer.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.coordinator.append.linger.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.coordinator.rebalance.protocols", OnlyValues(&["classic"], KRAFT_GROUPS)),
        ("group.coordinator.threads", NotApplicable(THREADS)),
        ("group.share.delivery.count.limit", NotApplicable(KRAFT_GROUPS)),
        ("group.share.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.max.groups", NotApplicable(KRAFT_GROUPS)),
        ("group.share.max.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.max.record.lock.duration.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.max.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.max.size", NotApplicable(KRAFT_GROUPS)),
        ("group.share.min.heartbeat.interval.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.min.record.lock.duration.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.min.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.partition.max.record.locks", NotApplicable(KRAFT_GROUPS)),
        ("group.share.record.lock.duration.ms", NotApplicable(KRAFT_GROUPS)),
        ("group.share.session.timeout.ms", NotApplicable(KRAFT_GROUPS)),
        ("initial.broker.registration.timeout.ms", NotApplicable(KRAFT)),
        ("inter.broker.protocol.version", OnlyValues(&["3.9", "3.9-IV0"], "shardlog speaks inter.broker.protocol.version 3.9 (Kafka 3.9's default) only")),
        ("kafka.metrics.polling.interval.secs", NotApplicable(JVM_METRICS)),
        ("kafka.metrics.reporters", OnlyValues(&[""], JVM_METRICS)),
        ("log.cleaner.io.buffer.load.factor", NotApplicable("the cleaner's offset map is sized by log.cleaner.dedupe.buffer.size alone")),
        ("log.cleaner.io.buffer.size", NotApplicable("the cleaner reads and writes whole batches, without Kafka's fixed I/O buffers")),
        ("log.cleaner.threads", NotApplicable(THREADS)),
        ("log.dir.failure.timeout.ms", NotApplicable(KRAFT)),
        ("log.local.retention.bytes", NotApplicable(TIERED)),
        ("log.local.retention.ms", NotApplicable(TIERED)),
        ("log.message.format.version", NotApplicable("Kafka 3.9 ignores it too at inter.broker.protocol.version 3.0 and later (KIP-724): batches are stored in format v2")),
        ("max.connection.creation.rate", OnlyValues(&["2147483647"], "connection creation rate limits (KIP-612) are not implemented")),
        ("max.incremental.fetch.session.cache.slots", OnlyValues(&["1000"], "the fetch session cache's size is fixed at Kafka's default")),
        ("max.request.partition.size.limit", NotApplicable(KRAFT_GROUPS)),
        ("metadata.log.dir", NotApplicable(KRAFT)),
        ("metadata.log.max.record.bytes.between.snapshots", NotApplicable(KRAFT)),
        ("metadata.log.max.snapshot.interval.ms", NotApplicable(KRAFT)),
        ("metadata.log.segment.bytes", NotApplicable(KRAFT)),
        ("metadata.log.segment.ms", NotApplicable(KRAFT)),
        ("metadata.max.idle.interval.ms", NotApplicable(KRAFT)),
        ("metadata.max.retention.bytes", NotApplicable(KRAFT)),
        ("metadata.max.retention.ms", NotApplicable(KRAFT)),
        ("metric.reporters", OnlyValues(&[""], JVM_METRICS)),
        ("metrics.num.samples", NotApplicable(JVM_METRICS)),
        ("metrics.recording.level", NotApplicable(JVM_METRICS)),
        ("metrics.sample.window.ms", NotApplicable(JVM_METRICS)),
        ("node.id", OnlyValues(&["-1"], "in ZooKeeper mode the broker's id is broker.id")),
        ("num.io.threads", NotApplicable(THREADS)),
        ("num.network.threads", NotApplicable(THREADS)),
        ("num.recovery.threads.per.data.dir", NotApplicable(THREADS)),
        ("num.replica.alter.log.dirs.threads", NotApplicable("a log-dir move runs as a task on its partition's data shard")),
        ("offsets.commit.required.acks", OnlyValues(&["-1"], "offset commits wait for all in-sync replicas, Kafka's default (the key is deprecated)")),
        ("offsets.load.buffer.size", NotApplicable("the offsets partitions are read batch by batch, without Kafka's load buffer")),
        ("offsets.topic.compression.codec", OnlyValues(&["0"], "offset commit records are written uncompressed, Kafka's default")),
        ("process.roles", OnlyValues(&[""], KRAFT)),
        ("producer.purgatory.purge.interval.requests", NotApplicable(PURGE)),
        ("quota.window.num", OnlyValues(&["11"], "the client quotas' window is fixed at Kafka's default")),
        ("quota.window.size.seconds", OnlyValues(&["1"], "the client quotas' window is fixed at Kafka's default")),
        ("remote.fetch.max.wait.ms", NotApplicable(TIERED)),
        ("remote.log.index.file.cache.total.size.bytes", NotApplicable(TIERED)),
        ("remote.log.manager.copier.thread.pool.size", NotApplicable(TIERED)),
        ("remote.log.manager.copy.max.bytes.per.second", NotApplicable(TIERED)),
        ("remote.log.manager.copy.quota.window.num", NotApplicable(TIERED)),
        ("remote.log.manager.copy.quota.window.size.seconds", NotApplicable(TIERED)),
        ("remote.log.manager.expiration.thread.pool.size", NotApplicable(TIERED)),
        ("remote.log.manager.fetch.max.bytes.per.second", NotApplicable(TIERED)),
        ("remote.log.manager.fetch.quota.window.num", NotApplicable(TIERED)),
        ("remote.log.manager.fetch.quota.window.size.seconds", NotApplicable(TIERED)),
        ("remote.log.manager.task.interval.ms", NotApplicable(TIERED)),
        ("remote.log.manager.thread.pool.size", NotApplicable(TIERED)),
        ("remote.log.metadata.custom.metadata.max.bytes", NotApplicable(TIERED)),
        ("remote.log.metadata.manager.class.name", NotApplicable(TIERED)),
        ("remote.log.metadata.manager.class.path", NotApplicable(TIERED)),
        ("remote.log.metadata.manager.impl.prefix", NotApplicable(TIERED)),
        ("remote.log.metadata.manager.listener.name", NotApplicable(TIERED)),
        ("remote.log.reader.max.pending.tasks", NotApplicable(TIERED)),
        ("remote.log.reader.threads", NotApplicable(TIERED)),
        ("remote.log.storage.manager.class.name", NotApplicable(TIERED)),
        ("remote.log.storage.manager.class.path", NotApplicable(TIERED)),
        ("remote.log.storage.manager.impl.prefix", NotApplicable(TIERED)),
        ("remote.log.storage.system.enable", OnlyValues(&["false"], TIERED)),
        ("replica.selector.class", Refused(NO_CLASSES)),
        ("socket.connection.setup.timeout.max.ms", NotApplicable("inter-broker connections retry on replica.fetch.backoff.ms")),
        ("socket.connection.setup.timeout.ms", NotApplicable("inter-broker connections retry on replica.fetch.backoff.ms")),
        ("socket.listen.backlog.size", NotApplicable("listeners use the kernel's somaxconn backlog")),
        ("socket.receive.buffer.bytes", NotApplicable("socket buffers are left to the kernel's autotuning")),
        ("socket.send.buffer.bytes", NotApplicable("socket buffers are left to the kernel's autotuning")),
        ("telemetry.max.bytes", NotApplicable("client telemetry (KIP-714) is not implemented")),
        ("transaction.state.log.load.buffer.size", NotApplicable("the transaction state partitions are read batch by batch, without Kafka's load buffer")),
        ("transaction.state.log.segment.bytes", OnlyValues(&["104857600"], "the transaction state topic is created with Kafka's default segment.bytes")),
        ("zookeeper.clientCnxnSocket", NotApplicable(ZK_TLS)),
        ("zookeeper.metadata.migration.enable", OnlyValues(&["false"], KRAFT)),
        ("zookeeper.set.acl", OnlyValues(&["false"], "znode ACLs are not written; a broker told to protect its znodes must not start without them")),
        ("zookeeper.ssl.cipher.suites", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.client.enable", OnlyValues(&["false"], "shardlog's ZooKeeper client has no TLS; a broker told to use it must not connect in the clear")),
        ("zookeeper.ssl.crl.enable", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.enabled.protocols", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.endpoint.identification.algorithm", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.keystore.location", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.keystore.password", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.keystore.type", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.ocsp.enable", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.protocol", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.truststore.location", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.truststore.password", NotApplicable(ZK_TLS)),
        ("zookeeper.ssl.truststore.type", NotApplicable(ZK_TLS)),
    ]
};

/// What `key` gets, if shardlog lists it.
pub fn lookup(key: &str) -> Option<Unsupported> {
    UNSUPPORTED
        .binary_search_by(|(k, _)| (*k).cmp(key))
        .ok()
        .map(|i| UNSUPPORTED[i].1)
}

/// Checks `key=value` against the table: Err(reason) stops the start,
/// Ok(Some(warning)) is logged, Ok(None) when the key is not listed.
pub fn check(key: &str, value: &str) -> Result<Option<String>, String> {
    match lookup(key) {
        None => Ok(None),
        Some(Unsupported::Refused(why)) => Err(format!("not supported by shardlog: {why}")),
        Some(Unsupported::OnlyValues(allowed, why)) => {
            let v = value.trim();
            if allowed.iter().any(|a| a.eq_ignore_ascii_case(v)) {
                Ok(Some(format!("{key}={v} accepted: {why}")))
            } else {
                Err(format!(
                    "shardlog accepts only {}: {why}",
                    allowed
                        .iter()
                        .map(|a| if a.is_empty() { "an empty value" } else { a })
                        .collect::<Vec<_>>()
                        .join(" or ")
                ))
            }
        }
        Some(Unsupported::NotApplicable(why)) => Ok(Some(format!(
            "config key {key} has no effect in shardlog: {why}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_without_duplicates() {
        assert!(UNSUPPORTED.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn refused_keys_and_other_values_stop_the_start_and_the_rest_warn() {
        assert!(check("create.topic.policy.class.name", "x.Policy").is_err());
        assert!(check("zookeeper.ssl.client.enable", "true").is_err());
        assert!(check("zookeeper.ssl.client.enable", " FALSE ")
            .unwrap()
            .is_some());
        assert!(check("process.roles", "broker").is_err());
        assert!(check("process.roles", "").unwrap().is_some());
        let warn = check("num.io.threads", "8").unwrap().unwrap();
        assert!(warn.contains("num.io.threads"), "{warn}");
        assert_eq!(check("log.retention.ms", "1").unwrap(), None);
    }
}
