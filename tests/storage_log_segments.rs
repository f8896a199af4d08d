//! PartitionLog's segment files on a real file system: cold reads
//! reading ahead into the page cache, retired segment
//! files reused (and their old batches never read back), segments a
//! fetch still reads kept, rolled segments read from memory until written,
//! idle appenders closed and reopened. (Split from storage_log.rs.)
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed check

mod common;

use std::os::unix::fs::FileExt;
use std::path::Path;

use bytes::BytesMut;
use common::executor::run;
use common::partition_log::{batch, expected, open, region_bytes, seg_path, small_config};
use shardlog::io::zerocopy::OutPart;
use shardlog::protocol::record_batch::{
    build_test_batch, set_base_offset, set_partition_leader_epoch, HEADER_LEN,
};
use shardlog::storage::{LogConfig, PartitionLog};

/// Pages of `path` in the page cache, by 4 KiB page (mincore of a mapping).
fn resident_pages(path: &Path) -> Vec<bool> {
    let file = std::fs::File::open(path).expect("open segment");
    let len = file.metadata().expect("stat").len() as usize;
    use std::os::unix::io::AsRawFd;
    // SAFETY: a private read-only mapping of a file we keep open for the
    // call; only mincore looks at it, nothing dereferences it.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(addr, libc::MAP_FAILED, "mmap");
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `vec` has one byte per page of the mapping.
    let rc = unsafe { libc::mincore(addr, len, vec.as_mut_ptr()) };
    // SAFETY: unmapping what we mapped above.
    unsafe { libc::munmap(addr, len) };
    assert_eq!(rc, 0, "mincore");
    vec.iter().map(|b| b & 1 == 1).collect()
}

/// Wait (on the executor, so the shard's read-ahead thread's work can
/// land) until `pred` holds or `secs` pass; returns whether it held.
async fn eventually(secs: u64, mut pred: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if pred() {
            return true;
        }
        glommio::timer::sleep(std::time::Duration::from_millis(10)).await;
    }
    pred()
}

#[test]
fn a_read_from_a_cold_segment_file_reads_ahead_into_the_page_cache() {
    // Segments are written with O_DIRECT, so nothing of them is in the page
    // cache; a read served from the file asks the kernel (off the shard) to
    // read `readahead_bytes` past it. With 0 it asks for nothing.
    const MIB: usize = 1 << 20;
    for window in [4 * MIB as u64, 0] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        run(move || async move {
            let config = LogConfig {
                segment_bytes: 64 << 20,
                write_buffer_bytes: MIB,
                preallocate_step_bytes: 16 << 20,
                readahead_bytes: window,
                retention_ms: -1,
                ..LogConfig::default()
            };
            let mut log = open(&dir, config, 0).await;
            let mut i = 0u8;
            while log.size_bytes() < 8 * MIB as u64 {
                let b = build_test_batch(0, 1, 1_000, 1_000, 16_000, i);
                log.append(BytesMut::from(&b[..]), 0, 0, false)
                    .await
                    .unwrap();
                i = i.wrapping_add(1);
            }
            log.flush().await.unwrap();
            let seg = log.dir().join("00000000000000000000.log");
            let page = |at: usize| resident_pages(&seg)[at / 4096];
            assert!(
                !page(3 * MIB),
                "O_DIRECT writes left the segment out of the page cache"
            );
            let leo = log.log_end_offset();
            let r = log.read(0, MIB, leo, true).unwrap();
            // Not read here (a pread would start the kernel's own
            // read-ahead): only the log's request may bring pages in.
            assert!(
                matches!(r.regions[..], [OutPart::File { position: 0, .. }]),
                "served from the file"
            );
            // The read covers about 1 MiB; read-ahead goes 4 MiB past it.
            if window > 0 {
                let ahead = eventually(5, || page(3 * MIB) && page(4 * MIB + 512 * 1024)).await;
                assert!(ahead, "bytes 3-4.5 MiB were read ahead");
                assert!(!page(7 * MIB), "nothing past the window was asked for");
            } else {
                glommio::timer::sleep(std::time::Duration::from_millis(200)).await;
                assert!(
                    !page(4 * MIB + 512 * 1024),
                    "no read-ahead with a zero window"
                );
            }
            log.close().await.unwrap();
        });
    }
}

fn pool_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.ends_with(".recycle"))
        .collect();
    v.sort();
    v
}

/// Batch `i` of exactly one page (4096 bytes), so a tail of them ends on a
/// page boundary where an old batch may start intact.
fn page_batch(i: u64) -> Vec<u8> {
    let ts = 1_000 + i as i64;
    build_test_batch(0, 1 + (i % 4) as i32, ts, ts, 4096 - HEADER_LEN, i as u8)
}

fn page_expected(i: u64, base_offset: i64) -> Vec<u8> {
    let mut b = page_batch(i);
    set_base_offset(&mut b, base_offset);
    set_partition_leader_epoch(&mut b, 0);
    b
}

/// Appends page batches `from..to` and returns the offset of each.
async fn append_range(log: &mut PartitionLog, from: u64, to: u64) -> Vec<i64> {
    let mut offsets = Vec::new();
    for i in from..to {
        let info = log
            .append(BytesMut::from(&page_batch(i)[..]), 0, 5, false)
            .await
            .unwrap();
        offsets.push(info.first_offset);
    }
    offsets
}

#[test]
fn retired_segment_files_are_reused_and_their_old_batches_never_come_back() {
    use std::os::unix::fs::MetadataExt;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let d = dir.clone();
    let (new_base, tail_offsets) = run(move || async move {
        let mut log = open(&d, small_config(), 1 << 20).await;
        let mut bases = Vec::new();
        for k in 0..4u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        let leo = log.log_end_offset();
        log.set_high_watermark(leo);
        // DeleteRecords drops segments 0 and 1: both files go to the pool,
        // named after the offset each segment ended at.
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        let dir = log.dir().to_path_buf();
        assert_eq!(
            pool_names(&dir),
            vec![
                format!("{:020}.recycle", bases[1]),
                format!("{:020}.recycle", bases[2])
            ]
        );
        assert!(!seg_path(&dir, bases[0]).exists());
        let oldest = dir.join(format!("{:020}.recycle", bases[1]));
        let (inode, old_len) = {
            let m = std::fs::metadata(&oldest).unwrap();
            (m.ino(), m.len())
        };
        assert_eq!(old_len, 50 * 4096, "segment 0's bytes are in the file");

        // The next roll writes into the oldest pooled file.
        append_range(&mut log, 200, 210).await;
        log.roll(0).await.unwrap();
        let new_base = log.log_end_offset();
        assert_eq!(
            std::fs::metadata(seg_path(&dir, new_base)).unwrap().ino(),
            inode
        );
        assert_eq!(pool_names(&dir), vec![format!("{:020}.recycle", bases[2])]);
        // Two page-sized batches, written out, then a crash: the file still
        // holds segment 0's batches from the third page on, the first of
        // them whole right after the new ones (its CRC is good; only its
        // offset, below the segment's base, tells it is old).
        let tail_offsets = append_range(&mut log, 300, 302).await;
        log.flush().await.unwrap();
        let f = std::fs::File::open(seg_path(&dir, new_base)).unwrap();
        let mut stale = vec![0u8; 4096];
        f.read_exact_at(&mut stale, 2 * 4096).unwrap();
        assert_eq!(
            stale,
            page_expected(2, bases[0] + 1 + 2),
            "old batch 2 intact"
        );
        drop(log);
        (new_base, tail_offsets)
    });
    run(move || async move {
        let log = open(&dir, small_config(), 1 << 20).await;
        assert!(!log.recovery_stats().clean_shutdown);
        let want: Vec<u8> = (0..2)
            .flat_map(|j| page_expected(300 + j, tail_offsets[j as usize]))
            .collect();
        let leo = tail_offsets[1] + 1 + (301 % 4) as i64;
        assert_eq!(
            log.log_end_offset(),
            leo,
            "recovery stopped at the old batches"
        );
        let r = log.read(new_base, 1 << 20, i64::MAX, true).unwrap();
        assert_eq!(region_bytes(&r.regions).0, want);
        // The old bytes past the tail were cut (what the appender allocates
        // again reads as zeros).
        let f = std::fs::File::open(seg_path(log.dir(), new_base)).unwrap();
        let mut past = vec![0xffu8; 16 << 10];
        f.read_exact_at(&mut past, want.len() as u64).unwrap();
        assert!(
            past.iter().all(|&b| b == 0),
            "stale bytes survived recovery"
        );
        // The pool survives the restart and serves the next roll.
        assert_eq!(pool_names(log.dir()).len(), 1);
        let mut log = log;
        append_range(&mut log, 400, 401).await;
        log.roll(0).await.unwrap();
        assert!(pool_names(log.dir()).is_empty());
        log.close().await.unwrap();
    });
}

#[test]
fn a_segment_a_fetch_still_reads_is_neither_recycled_nor_shrunk() {
    held_segment_survives_retention(false);
}

/// A fetch answered for a connection on another shard sends from another
/// thread: the regions it holds there (the segment's own `Arc<File>`, not
/// a dup of the fd) must keep retention's hands off the file all the same.
#[test]
fn a_segment_read_for_another_shard_is_neither_recycled_nor_shrunk() {
    held_segment_survives_retention(true);
}

fn held_segment_survives_retention(held_on_another_thread: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        // A cache too small for the segments: reads come from the files.
        let mut log = open(&dir, small_config(), 64 << 10).await;
        let mut bases = Vec::new();
        for k in 0..3u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        log.set_high_watermark(log.log_end_offset());
        let held = log.read(bases[0], 1 << 20, bases[1], true).unwrap();
        let (before, _, from_file) = region_bytes(&held.regions);
        assert!(from_file > 0, "the read must hold the segment file");
        let (go, wait) = std::sync::mpsc::channel::<()>();
        let mut holder = None;
        let mut held = Some(held);
        if held_on_another_thread {
            let regions = held.take().unwrap().regions;
            holder = Some(std::thread::spawn(move || {
                wait.recv().unwrap();
                region_bytes(&regions).0
            }));
        }
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        // Segment 1 (not held) went to the pool; segment 0 was deleted.
        assert_eq!(
            pool_names(log.dir()),
            vec![format!("{:020}.recycle", bases[2])]
        );
        // The delete thread removes the file's name last (after any
        // shrinking): once it is gone, read the held regions.
        let deleted = log.dir().join(format!("{:020}.log.deleted", bases[0]));
        assert!(
            eventually(10, || !deleted.exists()).await,
            "the delete thread never removed {}",
            deleted.display()
        );
        let after = match (held.take(), holder) {
            (Some(held), _) => region_bytes(&held.regions).0,
            (None, Some(thread)) => {
                go.send(()).unwrap();
                thread.join().unwrap()
            }
            (None, None) => unreachable!("the regions are held somewhere"),
        };
        assert_eq!(after, before);
        log.close().await.unwrap();
    });
}

#[test]
fn with_recycling_off_retired_segments_are_deleted() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            recycle_segments: false,
            ..small_config()
        };
        let mut log = open(&dir, config, 1 << 20).await;
        let mut bases = Vec::new();
        for k in 0..3u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        assert!(pool_names(log.dir()).is_empty());
        assert!(!seg_path(log.dir(), bases[0]).exists());
        log.close().await.unwrap();
    });
}

/// `file.delete.delay.ms`: a deleted segment's files are renamed
/// `.deleted` at once and removed only after the delay (Kafka's
/// `asyncDeleteSegment`). Segment 0 is deleted with a delay of an hour,
/// then segment 1 with none: once the delete thread (first in, first out)
/// removed segment 1's files, segment 0's are still there.
#[test]
fn file_delete_delay_ms_keeps_deleted_files_until_it_passes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            recycle_segments: false,
            file_delete_delay_ms: 3_600_000,
            ..small_config()
        };
        let mut log = open(&dir, config.clone(), 1 << 20).await;
        let mut bases = Vec::new();
        for k in 0..3u64 {
            bases.push(log.log_end_offset());
            append_range(&mut log, k * 50, k * 50 + 50).await;
            log.roll(0).await.unwrap();
        }
        log.set_high_watermark(log.log_end_offset());
        let partition_dir = log.dir().to_path_buf();
        let deleted = |base: i64| partition_dir.join(format!("{base:020}.log.deleted"));
        assert_eq!(log.delete_records_before(bases[1]).unwrap(), bases[1]);
        assert!(!seg_path(log.dir(), bases[0]).exists());
        assert!(deleted(bases[0]).exists(), "renamed to .deleted at once");
        log.set_config(LogConfig {
            file_delete_delay_ms: 0,
            ..config
        });
        assert_eq!(log.delete_records_before(bases[2]).unwrap(), bases[2]);
        assert!(
            eventually(10, || !deleted(bases[1]).exists()).await,
            "segment 1's files were never removed"
        );
        assert!(
            deleted(bases[0]).exists(),
            "segment 0's files went before file.delete.delay.ms passed"
        );
        log.close().await.unwrap();
    });
}

#[test]
fn a_rolled_segment_reads_its_tail_from_memory_until_the_background_close_wrote_it() {
    use shardlog::storage::segment::{PendingTail, Segment};
    use std::cell::Cell;
    use std::rc::Rc;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        shardlog::io::dma::prime_iopoll_probe(&dir).await.unwrap();
        let config = small_config(); // 64 KiB write buffers
        let mut seg = Segment::create_empty(&dir, 0, &config, 0, None)
            .await
            .unwrap();
        let buffers = shardlog::storage::buffer_pool::BufferPool::shared();
        let timings = shardlog::storage::io_timings::IoTimings::shared();
        seg.activate(&config, &buffers, &timings).await.unwrap();
        // 40 pages: full buffers in flight or written, a partial one filling.
        let mut want = Vec::new();
        for i in 0..40u64 {
            let b = page_expected(i, i as i64);
            seg.appender.as_mut().unwrap().append(&b).await.unwrap();
            want.extend_from_slice(&b);
        }
        // What a roll does: take the appender, keep its unwritten bytes.
        let mut appender = seg.appender.take().unwrap();
        let done = Rc::new(Cell::new(false));
        let written = appender.written_end();
        assert!(written < want.len() as u64, "part of the tail is unwritten");
        seg.set_closing(
            want.len() as u64,
            PendingTail {
                written,
                parts: appender.unwritten_parts(),
                done: done.clone(),
            },
        );
        assert!(seg.is_closing());
        assert_eq!(seg.file_end(), written);
        let mut got = vec![0u8; want.len()];
        seg.read_exact_at(0, &mut got).unwrap();
        assert_eq!(got, want, "read while the close has not run");
        // The close writes everything; reads then come from the file.
        let (end, _file) = appender.close_unsynced().await.unwrap();
        assert_eq!(end, want.len() as u64);
        done.set(true);
        assert!(!seg.is_closing());
        assert_eq!(seg.file_end(), end);
        seg.reap_tail();
        let mut got = vec![0u8; want.len()];
        seg.read_exact_at(0, &mut got).unwrap();
        assert_eq!(got, want, "read from the file after the close");
    });
}

#[test]
fn reads_right_after_each_roll_and_after_reopen_return_every_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 0).await;
        let mut offsets = Vec::new();
        for k in 0..5u64 {
            offsets.extend(append_range(&mut log, k * 30, k * 30 + 30).await);
            log.roll(0).await.unwrap();
            // No cache: the just-closed segment's bytes come from its kept
            // tail or its file, whichever holds them now.
            let from = offsets[(k * 30) as usize];
            let r = log.read(from, 1 << 20, i64::MAX, true).unwrap();
            let want: Vec<u8> = (k * 30..k * 30 + 30)
                .flat_map(|i| page_expected(i, offsets[i as usize]))
                .collect();
            assert_eq!(region_bytes(&r.regions).0, want, "segment {k}");
        }
        let leo = log.log_end_offset();
        log.close().await.unwrap();
        let log = open(&dir, small_config(), 0).await;
        assert_eq!(log.log_end_offset(), leo);
        for (i, &o) in offsets.iter().enumerate() {
            let r = log.read(o, 1, i64::MAX, true).unwrap();
            assert_eq!(region_bytes(&r.regions).0, page_expected(i as u64, o));
        }
        log.close().await.unwrap();
    });
}

/// Open fds of this process on `path` (the read fd and, while the segment
/// is active, the appender's O_DIRECT one).
fn fds_on(path: &Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter(|target| target == path)
        .count()
}

fn active_log_file(log: &PartitionLog) -> std::path::PathBuf {
    let base = *log.segment_base_offsets().last().unwrap();
    log.dir().join(format!("{base:020}.log"))
}

#[test]
fn an_idle_active_segment_closes_its_appender_and_the_next_append_reopens_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let config = LogConfig {
            idle_close_ms: 1_000,
            ..small_config()
        };
        let idle = config.idle_close_ms as i64;
        let mut log = open(&dir, config.clone(), 1 << 20).await;
        for i in 0..10 {
            log.append(BytesMut::from(&batch(i)[..]), 1, 5, false)
                .await
                .unwrap();
        }
        let file = active_log_file(&log);
        let data = log.size_bytes();
        assert!(
            std::fs::metadata(&file).unwrap().len() > data,
            "pre-allocated"
        );
        assert_eq!(fds_on(&file), 2, "read fd and appender fd");
        // The first look only notes the log end offset; it must then stay
        // put for the whole idle time.
        assert!(!log.close_if_idle(10_000).await.unwrap());
        assert!(!log.close_if_idle(10_000 + idle - 1).await.unwrap());
        assert!(log.close_if_idle(10_000 + idle).await.unwrap());
        assert_eq!(fds_on(&file), 1, "the appender's fd is closed");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), data, "trimmed");
        assert_eq!(log.recovery_point(), log.log_end_offset(), "flushed");
        assert!(!log.close_if_idle(10_000 + 2 * idle).await.unwrap());
        // The next append reopens it and everything reads back.
        log.append(BytesMut::from(&batch(10)[..]), 1, 5, false)
            .await
            .unwrap();
        assert_eq!(fds_on(&file), 2);
        let leo = log.log_end_offset();
        let r = log.read(0, 1 << 20, leo, true).unwrap();
        let (bytes, _, _) = region_bytes(&r.regions);
        let mut want = Vec::new();
        let mut next = 0;
        for i in 0..11 {
            want.extend(expected(i, next, 1));
            next += 1 + (i % 4) as i64;
        }
        assert_eq!(bytes, want);
        log.close().await.unwrap();
    });
}

#[test]
fn a_clean_reopen_opens_no_appender_until_the_first_append_and_a_crash_then_rescans() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    run(move || async move {
        let mut log = open(&dir, small_config(), 1 << 20).await;
        for i in 0..10 {
            log.append(BytesMut::from(&batch(i)[..]), 1, 5, false)
                .await
                .unwrap();
        }
        let leo = log.log_end_offset();
        let file = active_log_file(&log);
        log.close().await.unwrap();
        let closed_len = std::fs::metadata(&file).unwrap().len();

        let mut log = open(&dir, small_config(), 1 << 20).await;
        assert!(log.recovery_stats().clean_shutdown);
        assert!(!log.dir().join(".kafka_cleanshutdown").exists(), "consumed");
        assert_eq!(fds_on(&file), 1, "no appender before the first append");
        assert_eq!(std::fs::metadata(&file).unwrap().len(), closed_len);
        log.append(BytesMut::from(&batch(10)[..]), 1, 5, false)
            .await
            .unwrap();
        log.flush().await.unwrap();
        assert_eq!(fds_on(&file), 2);
        assert!(std::fs::metadata(&file).unwrap().len() > log.size_bytes());
        drop(log); // a crash: the file is pre-allocated past its data

        // The marker stays gone, so this open rescans instead of trusting
        // the pre-allocated file's size.
        let log = open(&dir, small_config(), 1 << 20).await;
        let s = log.recovery_stats();
        assert!(!s.clean_shutdown);
        assert!(s.segments_scanned >= 1);
        assert_eq!(log.log_end_offset(), leo + 1 + (10 % 4));
        log.close().await.unwrap();
    });
}
