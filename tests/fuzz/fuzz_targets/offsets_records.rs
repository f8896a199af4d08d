//! The `__consumer_offsets` record decoders (`group::records`): keys
//! (OffsetCommitKey, GroupMetadataKey), OffsetCommitValue v0–v4 and
//! GroupMetadataValue v0–v4. Arbitrary bytes never panic nor exceed the
//! memory bound, and a decoded record re-encodes (in the version Kafka 3.9
//! writes) to bytes that decode to the same record.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::group::records::{
    encode_group_metadata_key, GroupMetadataValue, OffsetCommitValue, RecordKey,
};
use shardlog_fuzz::check_bounded;

fuzz_target!(|data: &[u8]| {
    check_bounded(data.len(), || {
        if let Ok(key) = RecordKey::decode(data) {
            let bytes = match &key {
                RecordKey::OffsetCommit(k) => k.encode(),
                RecordKey::GroupMetadata { group } => encode_group_metadata_key(group),
            };
            assert_eq!(RecordKey::decode(&bytes).as_ref(), Ok(&key), "record key");
        }
        if let Ok(value) = OffsetCommitValue::decode(data) {
            let again = OffsetCommitValue::decode(&value.encode());
            assert_eq!(again.as_ref(), Ok(&value), "offset commit value");
        }
        if let Ok(value) = GroupMetadataValue::decode(data) {
            let again = GroupMetadataValue::decode(&value.encode());
            assert_eq!(again.as_ref(), Ok(&value), "group metadata value");
        }
    });
});
