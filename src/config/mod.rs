//! `[pure]` Configuration: `server.properties` with Kafka's key names, and
//! topic-level configs.
//!
//! Every field is the Kafka key with dots → underscores and defaults to
//! Kafka's default for that key (the table below cites it). shardlog's own
//! keys live under `shardlog.`. Unknown keys produce a warning; a value that
//! does not parse stops the start with an error naming key and value.

pub mod authorizer;
pub mod dynamic;
mod listeners;
mod log_keys;
pub mod password_encoder;
mod properties;
pub mod sasl;
pub mod ssl;
pub mod topic;
pub mod unsupported;
mod value;

pub use listeners::{ProtocolMap, SecurityProtocol};
pub use properties::{parse_override, parse_properties};

use std::collections::BTreeMap;
use std::fmt;

/// The sample `server.properties`, used when `shardlog broker` gets no `--config`.
pub const SAMPLE_SERVER_PROPERTIES: &str = include_str!("server.properties");

/// A configuration problem; the broker refuses to start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("invalid value for {key}: {value:?} ({reason})")]
    InvalidValue {
        key: String,
        value: String,
        reason: String,
    },
    #[error("line {line}: cannot parse {text:?} as key=value")]
    Syntax { line: usize, text: String },
}

/// One `listeners` entry: `NAME://host:port` (empty host = all interfaces;
/// the name upper-cased, see `listeners`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Listener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // IPv6 addresses in brackets, as Kafka's `EndPoint.connectionString`.
        if self.host.contains(':') {
            write!(f, "{}://[{}]:{}", self.name, self.host, self.port)
        } else {
            write!(f, "{}://{}:{}", self.name, self.host, self.port)
        }
    }
}

pub use value::{ConfigValue, CpuList};

/// One broker config key as DescribeConfigs shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerKeyValue {
    pub name: String,
    pub value: Option<String>,
    /// Differs from Kafka's default: shown as STATIC_BROKER_CONFIG.
    pub is_set: bool,
    pub config_type: topic::ConfigType,
}

macro_rules! server_config {
    ($( $(#[$doc:meta])* $field:ident : $ty:ty = $default:expr ; )*) => {
        /// Broker configuration (`server.properties`).
        #[derive(Debug, Clone, PartialEq)]
        pub struct ServerConfig {
            $( $(#[$doc])* pub $field: $ty, )*
            /// Every `ssl.*` key, every `listener.name.<l>.ssl.*` key and
            /// `security.providers`, as written: resolved per listener by
            /// `tls::SslSettings` (see [`ssl`]).
            pub ssl_keys: BTreeMap<String, String>,
            /// Every `sasl.*` key and `connections.max.reauth.ms`, with
            /// or without a listener (and mechanism) prefix, as written:
            /// resolved per SASL listener by [`sasl::for_listener`].
            pub sasl_keys: BTreeMap<String, String>,
        }

        impl Default for ServerConfig {
            fn default() -> Self {
                Self { $( $field: $default, )* ssl_keys: BTreeMap::new(), sasl_keys: BTreeMap::new() }
            }
        }

        impl ServerConfig {
            /// Every key we understand, in Kafka spelling.
            pub fn keys() -> Vec<String> {
                vec![$( stringify!($field).replace('_', ".") ),*]
            }

            /// Every key (Kafka spelling) with its value, whether it differs
            /// from Kafka's default, and its type: DescribeConfigs for the
            /// broker resource.
            pub fn key_values(&self) -> Vec<BrokerKeyValue> {
                let kafka = ServerConfig::default();
                vec![$( BrokerKeyValue {
                    name: stringify!($field).replace('_', "."),
                    value: ConfigValue::show_value(&self.$field),
                    is_set: self.$field != kafka.$field,
                    config_type: <$ty as ConfigValue>::config_type(),
                } ),*]
            }

            /// Set `key` from its text; `Ok(false)` if the key is unknown.
            fn set(&mut self, key: &str, value: &str) -> Result<bool, String> {
                // Kafka keys never contain '_'; `broker_id` is not `broker.id`.
                if key.contains('_') {
                    return Ok(false);
                }
                let field = key.replace('.', "_");
                match field.as_str() {
                    $( stringify!($field) => {
                        self.$field = <$ty as ConfigValue>::parse_value(value)?;
                        Ok(true)
                    } )*
                    _ => Ok(false),
                }
            }
        }
    };
}

server_config! {
    /// `broker.id` (Kafka default -1 = generated; the sample config sets 0).
    broker_id: i32 = -1;
    /// `broker.rack` (default null).
    broker_rack: Option<String> = None;
    /// `broker.id.generation.enable` (default true): `broker.id=-1` takes
    /// an id from `/brokers/seqid` in ZooKeeper mode.
    broker_id_generation_enable: bool = true;
    /// `reserved.broker.max.id` (default 1000): generated ids start above it.
    reserved_broker_max_id: i32 = 1000;
    /// `listeners` (default `PLAINTEXT://:9092`).
    listeners: Vec<Listener> = vec![Listener { name: "PLAINTEXT".into(), host: String::new(), port: 9092 }];
    /// `advertised.listeners` (default null = `listeners`).
    advertised_listeners: Option<Vec<Listener>> = None;
    /// `inter.broker.listener.name` (default null = the listener named
    /// after `security.inter.broker.protocol`).
    inter_broker_listener_name: Option<String> = None;
    /// `security.inter.broker.protocol` (default PLAINTEXT).
    security_inter_broker_protocol: String = "PLAINTEXT".into();
    /// `listener.security.protocol.map` (default: each protocol under its
    /// own name).
    listener_security_protocol_map: ProtocolMap = ProtocolMap::kafka_default();
    /// `control.plane.listener.name` (KIP-291, default null): the listener
    /// the controller and brokers exchange controller requests over.
    control_plane_listener_name: Option<String> = None;
    /// `log.dirs` (default null = `log.dir`).
    log_dirs: Option<Vec<String>> = None;
    /// `log.dir` (default `/tmp/kafka-logs`).
    log_dir: String = "/tmp/kafka-logs".into();
    /// `num.partitions` (default 1).
    num_partitions: i32 = 1;
    /// `default.replication.factor` (default 1).
    default_replication_factor: i16 = 1;
    /// `auto.create.topics.enable` (default true).
    auto_create_topics_enable: bool = true;
    /// `delete.topic.enable` (default true).
    delete_topic_enable: bool = true;
    /// `message.max.bytes` (default 1048588).
    message_max_bytes: i32 = 1_048_588;
    /// `socket.request.max.bytes` (default 104857600).
    socket_request_max_bytes: i32 = 104_857_600;
    /// `log.segment.bytes` (default 1 GiB).
    log_segment_bytes: i32 = 1_073_741_824;
    /// `log.roll.hours` (default 168).
    log_roll_hours: i32 = 168;
    /// `log.roll.ms` (default null = `log.roll.hours`).
    log_roll_ms: Option<i64> = None;
    /// `log.roll.jitter.hours` (default 0).
    log_roll_jitter_hours: i32 = 0;
    /// `log.roll.jitter.ms` (default null = `log.roll.jitter.hours`).
    log_roll_jitter_ms: Option<i64> = None;
    /// `log.segment.delete.delay.ms` (default 60000).
    log_segment_delete_delay_ms: i64 = 60_000;
    /// `log.retention.hours` (default 168).
    log_retention_hours: i32 = 168;
    /// `log.retention.minutes` (default null = hours).
    log_retention_minutes: Option<i32> = None;
    /// `log.retention.ms` (default null = minutes; -1 = unlimited).
    log_retention_ms: Option<i64> = None;
    /// `log.retention.bytes` (default -1 = unlimited).
    log_retention_bytes: i64 = -1;
    /// `log.retention.check.interval.ms` (default 300000).
    log_retention_check_interval_ms: i64 = 300_000;
    /// `log.cleanup.policy` (default delete).
    log_cleanup_policy: Vec<String> = vec!["delete".into()];
    /// `log.cleaner.enable` (default true).
    log_cleaner_enable: bool = true;
    /// `log.cleaner.backoff.ms` (default 15000): sleep when no log needs cleaning.
    log_cleaner_backoff_ms: i64 = 15_000;
    /// `log.cleaner.dedupe.buffer.size` (default 134217728): the offset
    /// maps' memory, shared by the cleaners (one per data shard here).
    log_cleaner_dedupe_buffer_size: i64 = 134_217_728;
    /// `log.cleaner.io.max.bytes.per.second` (default Double.MAX_VALUE):
    /// read + write budget of the cleaners (shared by the data shards).
    log_cleaner_io_max_bytes_per_second: f64 = f64::MAX;
    /// `log.cleaner.delete.retention.ms` (default 86400000).
    log_cleaner_delete_retention_ms: i64 = 86_400_000;
    /// `log.cleaner.min.cleanable.ratio` (default 0.5).
    log_cleaner_min_cleanable_ratio: f64 = 0.5;
    /// `log.cleaner.min.compaction.lag.ms` (default 0).
    log_cleaner_min_compaction_lag_ms: i64 = 0;
    /// `log.cleaner.max.compaction.lag.ms` (default Long.MAX_VALUE).
    log_cleaner_max_compaction_lag_ms: i64 = i64::MAX;
    /// `shardlog.cleaner.swap.delay.ms`: fault-injection hook (default 0):
    /// the cleaner waits this long after its `.swap` files are durable and
    /// before it swaps them in, so a test can kill the broker there.
    shardlog_cleaner_swap_delay_ms: u64 = 0;
    /// `log.flush.interval.messages` (default Long.MAX_VALUE).
    log_flush_interval_messages: i64 = i64::MAX;
    /// `log.flush.interval.ms` (default null = `log.flush.scheduler.interval.ms`).
    log_flush_interval_ms: Option<i64> = None;
    /// `log.flush.scheduler.interval.ms` (default Long.MAX_VALUE).
    log_flush_scheduler_interval_ms: i64 = i64::MAX;
    /// `log.index.interval.bytes` (default 4096).
    log_index_interval_bytes: i32 = 4096;
    /// `log.index.size.max.bytes` (default 10485760).
    log_index_size_max_bytes: i32 = 10_485_760;
    /// `log.preallocate` (default false).
    log_preallocate: bool = false;
    /// `log.message.timestamp.type` (default CreateTime).
    log_message_timestamp_type: String = "CreateTime".into();
    /// `log.message.downconversion.enable` (default true): Fetch v0–3
    /// consumers get down-converted data, or UNSUPPORTED_VERSION.
    log_message_downconversion_enable: bool = true;
    /// `log.message.timestamp.before.max.ms` (default Long.MAX_VALUE, KIP-937).
    log_message_timestamp_before_max_ms: i64 = i64::MAX;
    /// `log.message.timestamp.after.max.ms` (default Long.MAX_VALUE, KIP-937).
    log_message_timestamp_after_max_ms: i64 = i64::MAX;
    /// `log.message.timestamp.difference.max.ms` (default Long.MAX_VALUE;
    /// deprecated by KIP-937).
    log_message_timestamp_difference_max_ms: i64 = i64::MAX;
    /// `compression.type` (default producer): the codec a leader stores
    /// batches with (`replication::recompress`).
    compression_type: String = "producer".into();
    /// `compression.gzip.level` (default -1 = `Deflater`'s default, KIP-390).
    compression_gzip_level: i32 = -1;
    /// `compression.lz4.level` (default 9, the only level accepted: see
    /// `storage::cleaner::codec::compress_at_level`).
    compression_lz4_level: i32 = 9;
    /// `compression.zstd.level` (default 3, KIP-390).
    compression_zstd_level: i32 = 3;
    /// `min.insync.replicas` (default 1).
    min_insync_replicas: i32 = 1;
    /// `unclean.leader.election.enable` (default false).
    unclean_leader_election_enable: bool = false;
    /// `offsets.topic.num.partitions` (default 50).
    offsets_topic_num_partitions: i32 = 50;
    /// `offsets.topic.replication.factor` (default 3).
    offsets_topic_replication_factor: i16 = 3;
    /// `offsets.topic.segment.bytes` (default 104857600).
    offsets_topic_segment_bytes: i32 = 104_857_600;
    /// `offsets.retention.minutes` (default 10080).
    offsets_retention_minutes: i32 = 10_080;
    /// `transaction.state.log.num.partitions` (default 50).
    transaction_state_log_num_partitions: i32 = 50;
    /// `transaction.state.log.replication.factor` (default 3).
    transaction_state_log_replication_factor: i16 = 3;
    /// `transaction.state.log.min.isr` (default 2).
    transaction_state_log_min_isr: i32 = 2;
    /// `transaction.max.timeout.ms` (default 900000): the largest
    /// `transaction.timeout.ms` a producer may ask for.
    transaction_max_timeout_ms: i32 = 900_000;
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`
    /// (default 10000): how often timed-out transactions are aborted.
    transaction_abort_timed_out_transaction_cleanup_interval_ms: i32 = 10_000;
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`
    /// (default 3600000): how often expired transactional ids are removed.
    transaction_remove_expired_transaction_cleanup_interval_ms: i32 = 3_600_000;
    /// `transactional.id.expiration.ms` (default 604800000): an idle
    /// transactional id's state is removed after it.
    transactional_id_expiration_ms: i32 = 604_800_000;
    /// `transaction.partition.verification.enable` (default true, KIP-890
    /// part 1): a leader asks the transaction coordinator (AddPartitionsToTxn
    /// v4+, verify_only) before the first transactional batch of a
    /// producer's transaction on a partition, and refuses it with
    /// INVALID_TXN_STATE unless the partition is in the transaction.
    transaction_partition_verification_enable: bool = true;
    /// `shardlog.txn.verify.delay.ms`: fault-injection hook (default 0,
    /// off): every other KIP-890 verification a broker runs (the 1st,
    /// 3rd, ...) waits this long after its coordinator answered, so a
    /// request pipelined behind another on a connection finishes its
    /// verification first (the appends must still keep the connection's
    /// order).
    shardlog_txn_verify_delay_ms: u64 = 0;
    /// `group.initial.rebalance.delay.ms` (default 3000).
    group_initial_rebalance_delay_ms: i32 = 3000;
    /// `group.max.size` (default Integer.MAX_VALUE).
    group_max_size: i32 = i32::MAX;
    /// `offset.metadata.max.bytes` (default 4096).
    offset_metadata_max_bytes: i32 = 4096;
    /// `offsets.retention.check.interval.ms` (default 600000).
    offsets_retention_check_interval_ms: i64 = 600_000;
    /// `offsets.commit.timeout.ms` (default 5000): how long a commit waits
    /// for its records to reach the offsets partition's replicas.
    offsets_commit_timeout_ms: i32 = 5000;
    /// `group.min.session.timeout.ms` (default 6000).
    group_min_session_timeout_ms: i32 = 6000;
    /// `group.max.session.timeout.ms` (default 1800000).
    group_max_session_timeout_ms: i32 = 1_800_000;
    /// `zookeeper.connect` (default null = embedded store under the log dir).
    zookeeper_connect: Option<String> = None;
    /// `zookeeper.session.timeout.ms` (default 18000).
    zookeeper_session_timeout_ms: i32 = 18_000;
    /// `zookeeper.connection.timeout.ms` (default null = session timeout).
    zookeeper_connection_timeout_ms: Option<i32> = None;
    /// `zookeeper.max.in.flight.requests` (default 10).
    zookeeper_max_in_flight_requests: i32 = 10;
    /// `replica.lag.time.max.ms` (default 30000).
    replica_lag_time_max_ms: i64 = 30_000;
    /// `replica.fetch.max.bytes` (default 1048576).
    replica_fetch_max_bytes: i32 = 1_048_576;
    /// `replica.fetch.min.bytes` (default 1).
    replica_fetch_min_bytes: i32 = 1;
    /// `replica.fetch.wait.max.ms` (default 500).
    replica_fetch_wait_max_ms: i32 = 500;
    /// `replica.socket.timeout.ms` (default 30000).
    replica_socket_timeout_ms: i32 = 30_000;
    /// `num.replica.fetchers` (default 1).
    num_replica_fetchers: i32 = 1;
    /// `replica.fetch.response.max.bytes` (default 10485760).
    replica_fetch_response_max_bytes: i32 = 10_485_760;
    /// `replica.fetch.backoff.ms` (default 1000).
    replica_fetch_backoff_ms: i32 = 1000;
    /// `replica.socket.receive.buffer.bytes` (default 65536).
    replica_socket_receive_buffer_bytes: i32 = 65_536;
    /// `replication.quota.window.num` (default 11): samples of the
    /// replication quotas' rate (`replication::quota`).
    replication_quota_window_num: i32 = 11;
    /// `replication.quota.window.size.seconds` (default 1): each sample's span.
    replication_quota_window_size_seconds: i32 = 1;
    /// `replica.high.watermark.checkpoint.interval.ms` (default 5000).
    replica_high_watermark_checkpoint_interval_ms: i64 = 5000;
    /// `log.flush.offset.checkpoint.interval.ms` (default 60000): how often
    /// the recovery-point checkpoint is written while running.
    log_flush_offset_checkpoint_interval_ms: i64 = 60_000;
    /// `log.flush.start.offset.checkpoint.interval.ms` (default 60000): how
    /// often the log-start-offset checkpoint is written while running.
    log_flush_start_offset_checkpoint_interval_ms: i64 = 60_000;
    /// `controlled.shutdown.enable` (default true): in ZooKeeper mode a
    /// stopping broker first asks the controller to move its leaders.
    controlled_shutdown_enable: bool = true;
    /// `auto.leader.rebalance.enable` (default true): the controller
    /// moves leaders back to preferred replicas on a timer.
    auto_leader_rebalance_enable: bool = true;
    /// `leader.imbalance.check.interval.seconds` (default 300).
    leader_imbalance_check_interval_seconds: i64 = 300;
    /// `leader.imbalance.per.broker.percentage` (default 10).
    leader_imbalance_per_broker_percentage: i32 = 10;
    /// `controlled.shutdown.max.retries` (default 3).
    controlled_shutdown_max_retries: i32 = 3;
    /// `controlled.shutdown.retry.backoff.ms` (default 5000).
    controlled_shutdown_retry_backoff_ms: i64 = 5_000;
    /// `max.connections` (default Int.MaxValue): at this many connections
    /// the broker stops accepting until one closes (server::connection_quotas).
    max_connections: i32 = i32::MAX;
    /// `max.connections.per.ip` (default Int.MaxValue): a connection over
    /// its address's limit is closed right after accept.
    max_connections_per_ip: i32 = i32::MAX;
    /// `max.connections.per.ip.overrides` (default ""): `host:count,...`.
    max_connections_per_ip_overrides: String = "".into();
    /// `connection.failed.authentication.delay.ms` (default 100): a failed
    /// SASL authentication's response is held this long before it is sent
    /// and the connection closed (Kafka's `SocketServer` delays the close
    /// so a client retrying a bad password cannot spin the broker).
    connection_failed_authentication_delay_ms: i32 = 100;
    /// `connections.max.idle.ms` (default 600000): close idle connections.
    connections_max_idle_ms: i64 = 600_000;
    /// `queued.max.request.bytes` (default -1 = no bound): KIP-72's
    /// request memory pool, all connections together (server::memory_pool).
    queued_max_request_bytes: i64 = -1;
    /// `queued.max.requests` (default 500): requests read ahead of their
    /// responses, per connection (each reader is its own network thread).
    queued_max_requests: i32 = 500;
    /// `request.timeout.ms` (default 30000): controller-to-broker requests.
    request_timeout_ms: i32 = 30_000;
    /// `fetch.max.bytes` (default 57671680).
    fetch_max_bytes: i32 = 57_671_680;
    /// `producer.id.expiration.ms` (default 86400000).
    producer_id_expiration_ms: i32 = 86_400_000;
    /// `password.encoder.secret` (default null): encodes the dynamic
    /// password configs stored in `/config/brokers/<id>` (KIP-226;
    /// `config::password_encoder`). Without it, a dynamic password
    /// config is refused.
    password_encoder_secret: Option<password_encoder::Password> = None;
    /// `password.encoder.old.secret` (default null): the secret the stored
    /// passwords were encoded with; they are re-encoded with the current
    /// one at start (`DynamicBrokerConfig.maybeReEncodePasswords`).
    password_encoder_old_secret: Option<password_encoder::Password> = None;
    /// `password.encoder.keyfactory.algorithm` (default null =
    /// PBKDF2WithHmacSHA512).
    password_encoder_keyfactory_algorithm: Option<String> = None;
    /// `password.encoder.cipher.algorithm` (default AES/CBC/PKCS5Padding;
    /// AES/GCM/NoPadding also).
    password_encoder_cipher_algorithm: String = password_encoder::DEFAULT_CIPHER.into();
    /// `password.encoder.key.length` (default 128, at least 8; AES takes
    /// 128, 192, 256).
    password_encoder_key_length: i32 = password_encoder::DEFAULT_KEY_LENGTH;
    /// `password.encoder.iterations` (default 4096, at least 1024).
    password_encoder_iterations: i32 = password_encoder::DEFAULT_ITERATIONS;
    /// `authorizer.class.name` (default empty = no authorizer, every action
    /// allowed): only `kafka.security.authorizer.AclAuthorizer` (see
    /// [`authorizer`]); any other class stops the start.
    authorizer_class_name: String = String::new();
    /// `super.users` (AclAuthorizer, default none): `;`-separated
    /// principals every action is allowed to.
    super_users: String = String::new();
    /// `allow.everyone.if.no.acl.found` (AclAuthorizer, default false): a
    /// resource without any ACL is open to everyone.
    allow_everyone_if_no_acl_found: bool = false;
    /// `principal.builder.class` (default Kafka's
    /// `DefaultKafkaPrincipalBuilder`, the only one accepted).
    principal_builder_class: String = authorizer::DEFAULT_PRINCIPAL_BUILDER.into();
    /// `shardlog.shards`: data shards (pinned executors); default all cores.
    shardlog_shards: Option<usize> = None;
    /// `shardlog.cpus`: cores for the data shards; default `0..shards`.
    shardlog_cpus: Option<CpuList> = None;
    /// `shardlog.batch.cache.bytes`: per-shard cache of recent batches (default 64 MiB).
    shardlog_batch_cache_bytes: u64 = 64 << 20;
    /// `shardlog.flush.every.append`: fdatasync after every append (default false).
    shardlog_flush_every_append: bool = false;
    /// `shardlog.replica.fetch.session.enable`: the replica fetchers ask their
    /// leaders for KIP-227 fetch sessions, as Kafka's ReplicaFetcherThread
    /// (default true, Kafka's behaviour; false: every fetch is a full
    /// sessionless one, epoch -1, which every leader serves). A release
    /// build at 1,000 partitions ran 1.1-1.45x faster with them (history in
    /// perf/RESULTS.md). Leaders serve sessions to every client either way.
    shardlog_replica_fetch_session_enable: bool = true;
    /// `shardlog.write.buffer.bytes`: DMA write buffer of each active
    /// segment (default 1 MiB). The batch cache holds slices of these
    /// buffers; a batch that straddles two buffers is cached as a separate
    /// copy, so buffers well above the producers' batch.size keep the cache
    /// copy-free (each active partition holds up to three of them).
    shardlog_write_buffer_bytes: u64 = 1 << 20;
    /// `shardlog.fetch.readahead.bytes`: how far past a fetch served from a
    /// segment file the broker asks the kernel to read ahead into the page
    /// cache (default 16 MiB; 0 leaves it to the kernel). Segments are
    /// written with O_DIRECT, so a consumer reading behind the batch cache
    /// otherwise waits for the disk inside `sendfile` on the shard.
    shardlog_fetch_readahead_bytes: u64 = 16 << 20;
    /// `shardlog.segment.recycle`: a segment file retention drops is kept
    /// (up to two per partition) and overwritten by a later segment
    /// instead of being freed, as RocksDB's `recycle_log_file_num` does:
    /// overwriting a file's blocks is cheaper than allocating fresh ones
    /// (default true; see `storage::recycle`).
    shardlog_segment_recycle: bool = true;
    /// `shardlog.segment.idle.close.ms`: an active segment not appended to
    /// for this long closes its appender: its write buffers and O_DIRECT fd,
    /// reopened by the next append (default 10000; 0 = never).
    shardlog_segment_idle_close_ms: u64 = 10_000;
    /// `shardlog.stall.detect.ms`: report (with a backtrace) any task that
    /// keeps a data shard's executor busy this many ms past its time slice;
    /// 0 = off (default). A blocking syscall delays every request on a shard.
    shardlog_stall_detect_ms: u64 = 0;
    /// `shardlog.memory.report.ms`: log the live heap (glibc `mallinfo2`)
    /// and RssAnon at INFO this often; 0 = never (default).
    shardlog_memory_report_ms: u64 = 0;
    /// `shardlog.metrics.listener`: `host:port` of the Prometheus `/metrics`
    /// endpoint (`server::metrics_http`; the place of Kafka's JMX exporter
    /// agent, port 9404 under Strimzi); unset = no endpoint (default).
    shardlog_metrics_listener: Option<String> = None;
}

/// Kafka keys that configure machinery shardlog replaces (network/IO thread
/// pools, socket buffers): accepted without a warning, and without effect.
const ACCEPTED_WITHOUT_EFFECT: &[&str] = &[
    "num.network.threads",
    "num.io.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir",
    "background.threads",
];

/// A loaded configuration and the warnings to log about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub config: ServerConfig,
    pub warnings: Vec<String>,
}

impl ServerConfig {
    /// Parse `server.properties` text, then apply `overrides` (`--override
    /// key=value`, later wins), then validate.
    pub fn from_properties(
        text: &str,
        overrides: &[(String, String)],
    ) -> Result<Loaded, ConfigError> {
        let mut config = ServerConfig::default();
        let mut warnings = Vec::new();
        let pairs = parse_properties(text)?;
        for (key, value) in pairs.iter().chain(overrides) {
            if ssl::is_ssl_key(key) {
                config.ssl_keys.insert(key.clone(), value.clone());
                continue;
            }
            if sasl::is_sasl_key(key) {
                config.sasl_keys.insert(key.clone(), value.clone());
                continue;
            }
            if authorizer::is_listener_principal_builder(key) {
                authorizer::check_principal_builder(key, value)?;
                continue;
            }
            let known = config
                .set(key, value)
                .map_err(|reason| ConfigError::InvalidValue {
                    key: key.clone(),
                    value: value.clone(),
                    reason,
                })?;
            if known || ACCEPTED_WITHOUT_EFFECT.contains(&key.as_str()) {
                continue;
            }
            match unsupported::check(key, value) {
                Err(reason) => {
                    return Err(ConfigError::InvalidValue {
                        key: key.clone(),
                        value: value.clone(),
                        reason,
                    })
                }
                Ok(Some(warning)) => warnings.push(warning),
                Ok(None) => warnings.push(format!("unknown config key {key} (ignored)")),
            }
        }
        let explicit = |k: &str| pairs.iter().chain(overrides).any(|(key, _)| key == k);
        listeners::refuse_both_inter_broker_keys(
            config.inter_broker_listener_name.is_some(),
            explicit("security.inter.broker.protocol"),
        )?;
        config.normalise_listener_names();
        config.validate()?;
        Ok(Loaded { config, warnings })
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |key: &str, value: String, reason: &str| ConfigError::InvalidValue {
            key: key.into(),
            value,
            reason: reason.into(),
        };
        self.validate_listeners()?;
        if let Some(addr) = &self.shardlog_metrics_listener {
            if addr.parse::<core::net::SocketAddr>().is_err() {
                return Err(invalid(
                    "shardlog.metrics.listener",
                    addr.clone(),
                    "expected host:port with a numeric IP, e.g. 127.0.0.1:9404",
                ));
            }
        }
        let positive: [(&str, i64); 9] = [
            (
                "leader.imbalance.check.interval.seconds",
                self.leader_imbalance_check_interval_seconds,
            ),
            ("num.partitions", self.num_partitions.into()),
            ("queued.max.requests", self.queued_max_requests.into()),
            (
                "zookeeper.max.in.flight.requests",
                self.zookeeper_max_in_flight_requests.into(),
            ),
            (
                "default.replication.factor",
                self.default_replication_factor.into(),
            ),
            ("message.max.bytes", self.message_max_bytes.into()),
            (
                "socket.request.max.bytes",
                self.socket_request_max_bytes.into(),
            ),
            ("log.segment.bytes", self.log_segment_bytes.into()),
            (
                "offsets.topic.num.partitions",
                self.offsets_topic_num_partitions.into(),
            ),
        ];
        for (key, value) in positive {
            if value < 1 {
                return Err(invalid(key, value.to_string(), "must be at least 1"));
            }
        }
        if self.broker_id < -1 {
            return Err(invalid(
                "broker.id",
                self.broker_id.to_string(),
                "must be >= -1",
            ));
        }
        // KafkaConfig.validateValues in ZooKeeper mode: with
        // `broker.id.generation.enable`, a configured id must not reach into
        // the generated range above `reserved.broker.max.id`; without it, an
        // id must be configured.
        if self.zookeeper_connect.is_some() {
            if self.broker_id_generation_enable && self.broker_id > self.reserved_broker_max_id {
                return Err(invalid(
                    "broker.id",
                    self.broker_id.to_string(),
                    "must be greater than or equal to -1 and not greater than \
                     reserved.broker.max.id",
                ));
            }
            if !self.broker_id_generation_enable && self.broker_id < 0 {
                return Err(invalid(
                    "broker.id",
                    self.broker_id.to_string(),
                    "must be greater than or equal to 0 (broker.id.generation.enable=false)",
                ));
            }
        }
        // KafkaConfig: "queued.max.request.bytes must be larger or equal to
        // socket.request.max.bytes" (a request of any allowed size must fit).
        if self.queued_max_request_bytes > 0
            && self.queued_max_request_bytes < i64::from(self.socket_request_max_bytes)
        {
            return Err(invalid(
                "queued.max.request.bytes",
                self.queued_max_request_bytes.to_string(),
                "must be larger or equal to socket.request.max.bytes",
            ));
        }
        // KafkaConfig.validateValues: `logCleanerDedupeBufferSize /
        // logCleanerThreads > 1024 * 1024` (`log.cleaner.threads` is not
        // applicable here, so Kafka's default of one thread).
        if self.log_cleaner_dedupe_buffer_size <= 1024 * 1024 {
            return Err(invalid(
                "log.cleaner.dedupe.buffer.size",
                self.log_cleaner_dedupe_buffer_size.to_string(),
                "must be at least 1MB per cleaner thread",
            ));
        }
        self.validate_log_keys()?;
        password_encoder::validate_config(self)
            .map_err(|(key, value, reason)| invalid(key, value, &reason))?;
        if self.shardlog_shards == Some(0) {
            return Err(invalid("shardlog.shards", "0".into(), "must be at least 1"));
        }
        ssl::check_keys(&self.ssl_keys)?;
        sasl::validate(self)?;
        authorizer::validate(self)?;
        Ok(())
    }

    /// The broker-level defaults for topic configs (Kafka's `LogConfig`
    /// synonyms: `log.retention.ms` → `retention.ms`, ...). A key whose value
    /// differs from Kafka's default counts as set in server.properties, so
    /// DescribeConfigs reports it as STATIC_BROKER_CONFIG.
    pub fn broker_topic_defaults(&self) -> topic::BrokerTopicDefaults {
        let kafka = ServerConfig::default();
        let mut d = topic::BrokerTopicDefaults {
            log_cleanup_policy: self.log_cleanup_policy.clone(),
            compression_type: self.compression_type.clone(),
            log_flush_interval_messages: self.log_flush_interval_messages,
            log_flush_interval_ms: self.effective_log_flush_interval_ms(),
            log_index_interval_bytes: self.log_index_interval_bytes,
            message_max_bytes: self.message_max_bytes,
            log_message_timestamp_type: self.log_message_timestamp_type.clone(),
            log_message_downconversion_enable: self.log_message_downconversion_enable,
            log_message_timestamp_before_max_ms: self.log_message_timestamp_before_max_ms,
            log_message_timestamp_after_max_ms: self.log_message_timestamp_after_max_ms,
            log_message_timestamp_difference_max_ms: self.log_message_timestamp_difference_max_ms,
            min_insync_replicas: self.min_insync_replicas,
            log_preallocate: self.log_preallocate,
            log_retention_bytes: self.log_retention_bytes,
            log_retention_ms: self.effective_log_retention_ms(),
            log_segment_bytes: self.log_segment_bytes,
            log_index_size_max_bytes: self.log_index_size_max_bytes,
            log_roll_ms: self.effective_log_roll_ms(),
            log_cleaner_delete_retention_ms: self.log_cleaner_delete_retention_ms,
            log_cleaner_min_cleanable_ratio: self.log_cleaner_min_cleanable_ratio,
            log_cleaner_min_compaction_lag_ms: self.log_cleaner_min_compaction_lag_ms,
            log_cleaner_max_compaction_lag_ms: self.log_cleaner_max_compaction_lag_ms,
            unclean_leader_election_enable: self.unclean_leader_election_enable,
            num_partitions: self.num_partitions,
            default_replication_factor: self.default_replication_factor,
            ..Default::default()
        };
        let set: [(&str, bool); 16] = [
            (
                "log.cleanup.policy",
                self.log_cleanup_policy != kafka.log_cleanup_policy,
            ),
            (
                "log.flush.interval.messages",
                self.log_flush_interval_messages != kafka.log_flush_interval_messages,
            ),
            (
                "log.flush.interval.ms",
                self.log_flush_interval_ms.is_some(),
            ),
            (
                "log.index.interval.bytes",
                self.log_index_interval_bytes != kafka.log_index_interval_bytes,
            ),
            (
                "message.max.bytes",
                self.message_max_bytes != kafka.message_max_bytes,
            ),
            (
                "log.message.timestamp.type",
                self.log_message_timestamp_type != kafka.log_message_timestamp_type,
            ),
            (
                "min.insync.replicas",
                self.min_insync_replicas != kafka.min_insync_replicas,
            ),
            (
                "log.preallocate",
                self.log_preallocate != kafka.log_preallocate,
            ),
            (
                "log.retention.bytes",
                self.log_retention_bytes != kafka.log_retention_bytes,
            ),
            ("log.retention.ms", self.log_retention_ms.is_some()),
            (
                "log.retention.minutes",
                self.log_retention_minutes.is_some(),
            ),
            (
                "log.retention.hours",
                self.log_retention_hours != kafka.log_retention_hours,
            ),
            (
                "log.segment.bytes",
                self.log_segment_bytes != kafka.log_segment_bytes,
            ),
            (
                "log.index.size.max.bytes",
                self.log_index_size_max_bytes != kafka.log_index_size_max_bytes,
            ),
            ("log.roll.ms", self.log_roll_ms.is_some()),
            (
                "log.roll.hours",
                self.log_roll_hours != kafka.log_roll_hours,
            ),
        ];
        self.fill_log_key_defaults(&mut d);
        d.static_keys = set
            .iter()
            .chain(self.cleaner_keys_set(&kafka).iter())
            .chain(self.timestamp_keys_set(&kafka).iter())
            .chain(self.log_keys_set(&kafka).iter())
            .filter(|(_, changed)| *changed)
            .map(|(k, _)| (*k).to_owned())
            .collect();
        d
    }

    /// The `log.message.timestamp.*` window keys (KIP-937), and whether
    /// each differs from Kafka's default.
    fn timestamp_keys_set(&self, kafka: &ServerConfig) -> [(&'static str, bool); 3] {
        [
            (
                "log.message.timestamp.before.max.ms",
                self.log_message_timestamp_before_max_ms
                    != kafka.log_message_timestamp_before_max_ms,
            ),
            (
                "log.message.timestamp.after.max.ms",
                self.log_message_timestamp_after_max_ms != kafka.log_message_timestamp_after_max_ms,
            ),
            (
                "log.message.timestamp.difference.max.ms",
                self.log_message_timestamp_difference_max_ms
                    != kafka.log_message_timestamp_difference_max_ms,
            ),
        ]
    }

    /// The `log.cleaner.*` topic-default keys, and whether each differs
    /// from Kafka's default (see [`Self::broker_topic_defaults`]).
    fn cleaner_keys_set(&self, kafka: &ServerConfig) -> [(&'static str, bool); 4] {
        [
            (
                "log.cleaner.delete.retention.ms",
                self.log_cleaner_delete_retention_ms != kafka.log_cleaner_delete_retention_ms,
            ),
            (
                "log.cleaner.min.cleanable.ratio",
                self.log_cleaner_min_cleanable_ratio != kafka.log_cleaner_min_cleanable_ratio,
            ),
            (
                "log.cleaner.min.compaction.lag.ms",
                self.log_cleaner_min_compaction_lag_ms != kafka.log_cleaner_min_compaction_lag_ms,
            ),
            (
                "log.cleaner.max.compaction.lag.ms",
                self.log_cleaner_max_compaction_lag_ms != kafka.log_cleaner_max_compaction_lag_ms,
            ),
        ]
    }

    /// `log.dirs` if set, else `log.dir` (Kafka's precedence).
    pub fn effective_log_dirs(&self) -> Vec<String> {
        match &self.log_dirs {
            Some(dirs) if !dirs.is_empty() => dirs.clone(),
            _ => vec![self.log_dir.clone()],
        }
    }

    /// The listener brokers and the controller talk over (Kafka's
    /// `KafkaConfig.interBrokerListenerName`): `inter.broker.listener.name`,
    /// else the one named after `security.inter.broker.protocol`.
    pub fn inter_broker_listener(&self) -> &str {
        self.inter_broker_listener_name
            .as_deref()
            .unwrap_or(&self.security_inter_broker_protocol)
    }

    /// `advertised.listeners` if set, else `listeners`.
    pub fn effective_advertised_listeners(&self) -> &[Listener] {
        self.advertised_listeners
            .as_deref()
            .filter(|l| !l.is_empty())
            .unwrap_or(&self.listeners)
    }

    /// `log.roll.ms`, else `log.roll.hours` in ms.
    pub fn effective_log_roll_ms(&self) -> i64 {
        self.log_roll_ms
            .unwrap_or(i64::from(self.log_roll_hours) * 3_600_000)
    }

    /// `log.retention.ms`, else minutes, else hours (Kafka's precedence);
    /// negative means unlimited.
    pub fn effective_log_retention_ms(&self) -> i64 {
        match (self.log_retention_ms, self.log_retention_minutes) {
            (Some(ms), _) => ms,
            (None, Some(min)) => i64::from(min) * 60_000,
            (None, None) => i64::from(self.log_retention_hours) * 3_600_000,
        }
    }

    /// `log.flush.interval.ms`, else `log.flush.scheduler.interval.ms`.
    pub fn effective_log_flush_interval_ms(&self) -> i64 {
        self.log_flush_interval_ms
            .unwrap_or(self.log_flush_scheduler_interval_ms)
    }

    /// Number of data shards given `available_cores`.
    pub fn data_shards(&self, available_cores: usize) -> usize {
        self.shardlog_shards
            .or(self.shardlog_cpus.as_ref().map(|c| c.0.len()))
            .unwrap_or(available_cores)
            .max(1)
    }

    /// The core for data shard `shard`: cycling through `shardlog.cpus`,
    /// else through `allowed_cpus` (the process's affinity mask, so a
    /// cgroup-restricted container pins only to cores it may use).
    pub fn cpu_for_shard(&self, shard: usize, allowed_cpus: &[usize]) -> usize {
        match (&self.shardlog_cpus, allowed_cpus) {
            (Some(CpuList(cpus)), _) if !cpus.is_empty() => cpus[shard % cpus.len()],
            (_, []) => shard,
            (_, allowed) => allowed[shard % allowed.len()],
        }
    }
}

#[cfg(test)]
mod tests;
