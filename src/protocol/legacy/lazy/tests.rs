use std::convert::Infallible;

use bytes::Bytes;

use super::*;
use crate::protocol::legacy::down::convert_group;
use crate::protocol::legacy::{build_v2_batch, shallow_entries, Message, OutRecord};
use crate::protocol::record_batch::{set_base_offset, Compression};

/// An in-memory read that counts the source bytes each call asked for.
struct Mem {
    bytes: Bytes,
    reads: Vec<usize>,
}

impl Source for Mem {
    type Error = Infallible;
    fn len(&self) -> usize {
        self.bytes.len()
    }
    fn read(&mut self, from: usize, len: usize) -> Result<Bytes, Infallible> {
        self.reads.push(len);
        Ok(self.bytes.slice(from..from + len))
    }
}

fn mem(bytes: Vec<u8>) -> Mem {
    Mem {
        bytes: Bytes::from(bytes),
        reads: Vec::new(),
    }
}

/// A v2 batch of `n` uncompressed records at `base` (values `v<offset>`).
fn batch(base: i64, n: usize, c: Compression) -> Vec<u8> {
    let values: Vec<String> = (0..n).map(|i| format!("v{}", base + i as i64)).collect();
    let records: Vec<OutRecord<'_>> = values
        .iter()
        .enumerate()
        .map(|(i, v)| OutRecord {
            offset: i as i64,
            timestamp: 10 + i as i64,
            key: None,
            value: Some(v.as_bytes()),
        })
        .collect();
    let mut b = build_v2_batch(&records, c).unwrap();
    set_base_offset(&mut b, base);
    b
}

/// Everything the conversion sends, and how many chunks it took.
fn drain(c: &mut LazyDownConversion<Mem>) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut n = 0;
    while let Some(chunk) = c.next_chunk().unwrap() {
        assert!(!chunk.is_empty());
        out.extend_from_slice(&chunk);
        n += 1;
    }
    (out, n)
}

/// The offsets of the whole messages in `sent` (a partial trailing one,
/// overflow included, is left out as clients leave it out).
fn offsets(sent: &[u8]) -> Vec<i64> {
    let mut out = Vec::new();
    for e in shallow_entries(&Bytes::copy_from_slice(sent)).unwrap() {
        let m = Message::parse(e.offset, &e.body()).unwrap();
        assert!(m.is_valid());
        out.push(m.offset);
    }
    out
}

#[test]
fn the_records_converted_and_the_memory_used_are_counted() {
    // Two batches of 3 and 2 records, each converted once.
    let mut src = batch(0, 3, Compression::None);
    src.extend_from_slice(&batch(3, 2, Compression::Gzip));
    let mut c = LazyDownConversion::start(mem(src.clone()), 1, 0).unwrap();
    assert_eq!(
        c.converted().records,
        3,
        "the start converts the first entry"
    );
    drain(&mut c);
    let done = c.converted();
    assert_eq!(done.records, 5);
    assert!(done.temporary_bytes > src.len() as u64, "{done:?}");
}

#[test]
fn the_declared_size_is_the_read_and_what_conversion_saved_is_overflow() {
    // magic 1 messages of short values are smaller than a v2 batch.
    let src = batch(0, 1, Compression::None);
    let mut c = LazyDownConversion::start(mem(src.clone()), 1, 0).unwrap();
    assert_eq!(c.declared_len(), src.len());
    let (sent, _) = drain(&mut c);
    assert_eq!(sent.len(), src.len());
    assert_eq!(offsets(&sent), [0]);
    let one = shallow_entries(&Bytes::copy_from_slice(&sent)).unwrap()[0]
        .bytes
        .len();
    let tail = &sent[one..];
    let left = tail.len();
    assert!(left > 0, "conversion saved bytes");
    // buildOverflowBatch: offset -1, length max(left + 1, 61), zeros.
    let mut want = (-1i64).to_be_bytes().to_vec();
    want.extend_from_slice(&((left + 1).max(61) as i32).to_be_bytes());
    want.resize(left.max(12), 0);
    assert_eq!(tail, &want[..left]);
}

#[test]
fn a_conversion_that_grows_is_cut_at_the_declared_size() {
    // A record of a short value takes about 10 bytes in a v2 batch and
    // 30 as a magic 0 message: ten 50-record batches grow about threefold.
    let mut src = Vec::new();
    for i in 0..10 {
        src.extend_from_slice(&batch(i * 50, 50, Compression::None));
    }
    let converted_len: usize = (0..10)
        .map(|i| {
            convert_group(
                &Bytes::from(batch(i * 50, 50, Compression::None)),
                0,
                0,
                &mut InflateScratch::default(),
            )
            .unwrap()
            .len()
        })
        .sum();
    assert!(
        converted_len > src.len(),
        "{converted_len} vs {}",
        src.len()
    );
    let mut c = LazyDownConversion::start(mem(src.clone()), 0, 0).unwrap();
    assert_eq!(c.declared_len(), src.len());
    let (sent, _) = drain(&mut c);
    assert_eq!(sent.len(), src.len());
    let got = offsets(&sent);
    assert_eq!(got, (0..got.len() as i64).collect::<Vec<_>>());
    assert!(got.len() < 500, "the last whole message is before the cut");
}

#[test]
fn the_first_converted_entry_always_fits() {
    // One batch whose magic 0 messages are larger than the read: the
    // declared size grows to them.
    let src = batch(0, 200, Compression::None);
    let first = convert_group(
        &Bytes::from(src.clone()),
        0,
        0,
        &mut InflateScratch::default(),
    )
    .unwrap();
    assert!(first.len() > src.len());
    let mut c = LazyDownConversion::start(mem(src), 0, 0).unwrap();
    assert_eq!(c.declared_len(), first.len());
    let (sent, _) = drain(&mut c);
    assert_eq!(sent, first);
}

#[test]
fn nothing_to_convert_declares_one_overflow_header_and_nothing_read_nothing() {
    // Records below the fetch offset of an uncompressed batch are left out.
    let mut c = LazyDownConversion::start(mem(batch(0, 3, Compression::None)), 1, 10).unwrap();
    assert_eq!(c.declared_len(), 12);
    let (sent, n) = drain(&mut c);
    let mut want = (-1i64).to_be_bytes().to_vec();
    want.extend_from_slice(&61i32.to_be_bytes());
    assert_eq!((sent, n), (want, 1));
    let half = batch(0, 3, Compression::None);
    for src in [Vec::new(), half[..half.len() / 2].to_vec()] {
        let mut c = LazyDownConversion::start(mem(src), 1, 0).unwrap();
        assert_eq!(c.declared_len(), 0);
        assert_eq!(drain(&mut c), (Vec::new(), 0));
    }
}

#[test]
fn groups_are_whole_entries_of_at_most_128_kib_and_a_trailing_partial_is_left() {
    // One-record batches shrink when converted (a batch header per record
    // becomes a message header), so everything fits the declared size.
    let mut src = Vec::new();
    let mut base = 0;
    while src.len() < 3 * MAX_READ_SIZE {
        src.extend_from_slice(&batch(base, 1, Compression::None));
        base += 1;
    }
    let whole = src.len();
    let next = batch(base, 1, Compression::None);
    src.extend_from_slice(&next[..next.len() / 2]);
    let mut c = LazyDownConversion::start(mem(src.clone()), 1, 0).unwrap();
    assert_eq!(c.declared_len(), src.len());
    let (sent, chunks) = drain(&mut c);
    assert_eq!(sent.len(), src.len());
    assert_eq!(offsets(&sent), (0..base).collect::<Vec<_>>());
    assert!(chunks >= 4, "{chunks} chunks");
    let reads = &c.source.reads;
    assert!(reads.iter().all(|r| *r <= MAX_READ_SIZE), "{reads:?}");
    assert!(reads.iter().sum::<usize>() < whole + 2 * MAX_READ_SIZE);
}

#[test]
fn an_entry_larger_than_a_group_is_read_whole() {
    let big = batch(0, 20_000, Compression::None);
    assert!(big.len() > MAX_READ_SIZE);
    let mut src = big.clone();
    src.extend_from_slice(&batch(20_000, 3, Compression::None));
    let mut c = LazyDownConversion::start(mem(src.clone()), 1, 0).unwrap();
    assert!(c.source.reads.contains(&big.len()), "read whole");
    // Its messages are larger than the whole read: the declared size is
    // theirs, and nothing after them fits.
    assert!(c.declared_len() > src.len());
    let (sent, _) = drain(&mut c);
    assert_eq!(sent.len(), c.declared_len());
    assert_eq!(offsets(&sent), (0..20_000).collect::<Vec<_>>());
}

#[test]
fn zstd_first_refuses_and_zstd_later_ends_in_overflow() {
    let zstd = batch(0, 3, Compression::Zstd);
    assert!(matches!(
        LazyDownConversion::start(mem(zstd.clone()), 1, 0),
        Err(StartError::Zstd)
    ));
    // A control batch before it: still the first to convert to anything.
    let mut control = batch(0, 1, Compression::None);
    control[22] |= 0x20;
    let mut src = control.clone();
    src.extend_from_slice(&batch(1, 3, Compression::Zstd));
    assert!(matches!(
        LazyDownConversion::start(mem(src), 1, 0),
        Err(StartError::Zstd)
    ));
    let mut src = batch(0, 3, Compression::None);
    let mut second = batch(3, 3, Compression::Zstd);
    src.append(&mut second);
    let mut c = LazyDownConversion::start(mem(src.clone()), 1, 0).unwrap();
    let (sent, _) = drain(&mut c);
    assert_eq!(sent.len(), src.len());
    assert_eq!(offsets(&sent), [0, 1, 2]);
}

#[test]
fn leading_control_batches_are_skipped_once() {
    let mut control = batch(0, 1, Compression::None);
    control[22] |= 0x20;
    let mut src = control;
    src.extend_from_slice(&batch(1, 2, Compression::None));
    src.extend_from_slice(&batch(3, 2, Compression::None));
    let mut c = LazyDownConversion::start(mem(src), 1, 0).unwrap();
    let (sent, _) = drain(&mut c);
    assert_eq!(offsets(&sent), [1, 2, 3, 4]);
}

proptest::proptest! {
    #[test]
    fn arbitrary_reads_give_exactly_the_declared_bytes(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400),
        magic in 0i8..2,
    ) {
        if let Ok(mut c) = LazyDownConversion::start(mem(bytes), magic, 0) {
            let declared = c.declared_len();
            let (sent, _) = drain(&mut c);
            proptest::prop_assert_eq!(sent.len(), declared);
        }
    }
}
