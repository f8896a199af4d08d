//! The `.index` / `.timeindex` parsers (`storage::index`): arbitrary file
//! bytes never panic nor exceed the memory bound; an accepted file holds
//! strictly increasing entries within the segment and re-encodes to the
//! same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use shardlog::storage::index::{OffsetIndex, TimeIndex};
use shardlog_fuzz::check_bounded;

fuzz_target!(|data: &[u8]| {
    // First byte: the entry limit (a small one exercises "index full");
    // next four: the segment size the positions must stay below.
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let Some((size, file)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let max_entries = if limit == 0 {
        usize::MAX
    } else {
        usize::from(limit)
    };
    let segment_size = u64::from(u32::from_be_bytes(*size));
    check_bounded(data.len(), || {
        if let Some(idx) = OffsetIndex::decode(file, max_entries, segment_size) {
            let e = idx.entries();
            assert!(e.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 < w[1].1));
            assert!(e.iter().all(|&(_, p)| u64::from(p) < segment_size.max(1)));
            assert!(e.len() <= max_entries);
            assert_eq!(idx.encode(), file, "offset index does not round-trip");
        }
        if let Some(idx) = TimeIndex::decode(file, max_entries) {
            let e = idx.entries();
            assert!(e.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
            assert!(e.len() <= max_entries);
            assert_eq!(idx.encode(), file, "time index does not round-trip");
        }
    });
});
