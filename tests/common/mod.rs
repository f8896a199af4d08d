//! Test helpers shared by the integration tests (each test binary
//! compiles `mod common;`, and uses a part of it):
//! - [`broker`]: start the real `shardlog` binary on a free port with a
//!   temporary log dir, wait for its readiness line, read its log, stop it;
//! - [`frames`] and [`conn`]: speak raw Kafka frames and typed requests;
//! - [`records`]: build and inspect record batches;
//! - [`clients`]: kcat and the Python venv's clients and scripts;
//! - [`java`]: Apache Kafka 3.9's Java client and tools;
//! - [`cluster`], [`zookeeper`], [`link`], [`replica_cluster`],
//!   [`verifiable`], [`ports`]: ZooKeeper, cuttable links and replicated clusters of
//!   shardlog or Kafka brokers;
//! - [`netns`]: brokers in network namespaces of their own, partitioned
//!   and healed in the kernel (veth down, nftables drop rules);
//! - [`tls`]: CA, broker and client certificates and keystores made with
//!   `openssl` and `keytool`, and the SSL config lines that use them;
//! - [`idempotence`], [`txn`], [`loadgen`], [`faultfs`], [`executor`]: the
//!   helpers of one family of tests each.
#![allow(dead_code)] // each test binary uses a part of it

pub mod broker;
pub mod clients;
pub mod cluster;
pub mod conn;
pub mod executor;
pub mod faultfs;
pub mod frames;
pub mod idempotence;
pub mod java;
pub mod link;
pub mod loadgen;
pub mod netns;
pub mod partition_log;
pub mod ports;
pub mod records;
pub mod replica_cluster;
pub mod tls;
pub mod txn;
pub mod verifiable;
pub mod zookeeper;

#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use broker::{
    broker_bin, fetcher_lines, new_log_dir, partitions_in, plain_log_line, Broker, Stopped,
};
#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use clients::{
    assert_all_consumed, assert_all_delivered, assert_complete_round_trip, cluster_admin, kcat,
    kcat_produce_and_read, output_with_stdin, run_py_script, run_python, venv_python,
    venv_python_with, RoundTrip,
};
#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use conn::{
    error_code, produce_request, topic_name, unique_topic, Conn, FetchSpec, EARLIEST_TIMESTAMP,
    FETCH_VERSION, LATEST_TIMESTAMP, LIST_OFFSETS_VERSION, MAX_TIMESTAMP, METADATA_VERSION,
    PRODUCE_VERSION,
};
#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use frames::{call39, read_frame, request_frame, request_frame_as, round_trip, TEST_CLIENT_ID};
#[allow(unused_imports)] // re-exports: each test binary uses a part
pub use records::{
    batch_base_offset, batch_compression, batch_last_offset, decodable_batch, decodable_region,
    decode_records, encode_batch, now_ms, whole_batches, RawRecord,
};
