//! The ZooKeeper znode payload parsers (`zk::paths`, `zk::log_dir_event`): arbitrary bytes never
//! panic nor exceed the memory bound, and whatever decodes re-encodes to a
//! payload that decodes to the same value (Kafka's JSON layouts).
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::zk::log_dir_event::LogDirEventZNode;
use shardlog::zk::paths::{
    decode_consumer_offset, decode_controller_epoch, encode_consumer_offset,
    encode_controller_epoch, kafka_uuid, BrokerIdZNode, ClusterIdZNode, ConfigChangeZNode,
    ConfigZNode, ControllerZNode, IsrChangeNotificationZNode, PartitionStateZNode,
    ProducerIdBlockZNode, TopicZNode,
};
use shardlog_fuzz::check_bounded;

/// decode → encode → decode gives the first decode back.
macro_rules! round_trip {
    ($ty:ty, $data:expr) => {
        if let Ok(first) = <$ty>::decode($data) {
            let again = <$ty>::decode(&first.encode())
                .unwrap_or_else(|e| panic!("{} re-encoding does not decode: {e}", stringify!($ty)));
            assert_eq!(first, again, "{} does not round-trip", stringify!($ty));
        }
    };
}

fuzz_target!(|data: &[u8]| {
    check_bounded(data.len(), || {
        round_trip!(TopicZNode, data);
        round_trip!(PartitionStateZNode, data);
        round_trip!(BrokerIdZNode, data);
        round_trip!(ConfigZNode, data);
        round_trip!(ConfigChangeZNode, data);
        round_trip!(ProducerIdBlockZNode, data);
        round_trip!(ClusterIdZNode, data);
        round_trip!(ControllerZNode, data);
        round_trip!(IsrChangeNotificationZNode, data);
        round_trip!(LogDirEventZNode, data);
        if let Ok(epoch) = decode_controller_epoch(data) {
            assert_eq!(
                decode_controller_epoch(&encode_controller_epoch(epoch)).ok(),
                Some(epoch)
            );
        }
        if let Some(offset) = decode_consumer_offset(data) {
            assert_eq!(
                decode_consumer_offset(&encode_consumer_offset(offset)),
                Some(offset)
            );
        }
        if let Ok(text) = std::str::from_utf8(data) {
            if let Some(id) = kafka_uuid::parse(text) {
                assert_eq!(kafka_uuid::parse(&kafka_uuid::to_string(&id)), Some(id));
            }
        }
    });
});
