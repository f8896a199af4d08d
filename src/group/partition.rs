//! `[pure]` Which `__consumer_offsets` partition holds a group (Kafka's
//! rule, so clients find the coordinator a Kafka broker would name).

/// The `__consumer_offsets` partition whose leader coordinates `group`:
/// `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`
/// (GroupMetadataManager.partitionFor). Kafka's `Utils.abs` maps
/// `Integer.MIN_VALUE` to 0, unlike `Math.abs`.
pub fn coordinator_partition(group: &str, offsets_topic_num_partitions: i32) -> i32 {
    let n = offsets_topic_num_partitions.max(1);
    kafka_utils_abs(java_string_hash_code(group)) % n
}

/// `java.lang.String.hashCode`: `h = 31 * h + c` over UTF-16 code units.
pub fn java_string_hash_code(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// `org.apache.kafka.common.utils.Utils.abs`.
pub fn kafka_utils_abs(n: i32) -> i32 {
    if n == i32::MIN {
        0
    } else {
        n.abs()
    }
}
