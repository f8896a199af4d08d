//! `[io]` One log segment: `<base offset>.log` plus its `.index` and
//! `.timeindex`, the in-memory indexes, and byte access that spans the file
//! (via a buffered read-only fd, page cache) and, for the active segment,
//! the DMA appender's not-yet-written buffer.

use std::cell::Cell;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Arc;

use glommio::io::DmaFile;

use super::appender::{DmaAppender, TailPart, WriteBuffers};
use super::buffer_pool::SharedBufferPool;
use super::config::LogConfig;
use super::helper_thread::{self, HelperThreads};
use super::index::{OffsetIndex, SegmentIndex, TimeIndex};
use super::io_timings::SharedIoTimings;
use super::readahead::ReadAhead;
use super::recovery::{entry_header, scan, ScanStop, ScannedBatch, ENTRY_HEADER};
use super::recycle;
use super::txn_index::TXN_INDEX_SUFFIX;
use super::{segment_file_name, StorageError};

pub const LOG_SUFFIX: &str = ".log";
pub const INDEX_SUFFIX: &str = ".index";
pub const TIME_INDEX_SUFFIX: &str = ".timeindex";
pub const DELETED_SUFFIX: &str = ".deleted";
/// Every file of a segment; the aborted-transaction index goes with it.
const ALL_SUFFIXES: [&str; 4] = [
    LOG_SUFFIX,
    INDEX_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
];
const INDEX_SUFFIXES: [&str; 2] = [INDEX_SUFFIX, TIME_INDEX_SUFFIX];
/// Recovery reads segments with O_DIRECT in chunks growing up to this size.
const RECOVERY_CHUNK: usize = 1 << 20;
/// Recovery's first read of a segment: most segments of a broker with many
/// partitions hold a few records in a pre-allocated file, and a 1 MiB
/// first read (a fresh buffer the kernel zeroes, and zeroes read from the
/// allocated tail) made 10,000 of them take most of a 20 s restart.
const RECOVERY_FIRST_CHUNK: usize = 64 << 10;
/// Largest `posix_fadvise(WILLNEED)` call of a read-ahead (below the
/// kernel's per-call cap, the block device's `read_ahead_kb`).
const READAHEAD_STEP: u64 = 2 << 20;

/// Deleted segment files shrink by this much per `ftruncate` before the
/// unlink (as RocksDB's `DeleteScheduler` deletes large files in chunks).
/// Freeing (and, with the `discard` mount option, trimming) a whole
/// 128 MiB file at once stalled concurrent O_DIRECT writes on the same disk
/// for 20-27 ms; in 8 MiB steps the worst write took 7-9 ms (fio, 1 MiB
/// writes at iodepth 8, while six 128 MiB files were freed). In the broker
/// at 460 MB/s with retention deleting a segment every 0.3 s, the produce
/// p99.9 seen by the client fell from 65-119 ms to 10-22 ms (8 MiB) and
/// 9-10 ms (2 MiB) (2026-11-30, perf/RESULTS.md).
const FREE_STEP: u64 = 2 << 20;

/// The sizes a file of `size` bytes is truncated to, largest first, ending
/// at 0 (`[pure]`).
fn free_steps(size: u64, step: u64) -> Vec<u64> {
    let step = step.max(1);
    let mut out = Vec::new();
    let mut at = size;
    while at > 0 {
        at = at.saturating_sub(step);
        out.push(at);
    }
    out
}

/// Frees a deleted file in [`FREE_STEP`] steps from its end (when
/// `shrink`), then removes it. A file a fetch still reads is only removed:
/// its blocks are freed when the last fd closes, and until then the fetch
/// reads what it was promised.
fn free_and_remove(path: &Path, shrink: bool) {
    let file = if shrink {
        std::fs::OpenOptions::new().write(true).open(path).ok()
    } else {
        None
    };
    if let Some(f) = file {
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        for len in free_steps(size, FREE_STEP) {
            if f.set_len(len).is_err() {
                break;
            }
        }
    }
    match std::fs::remove_file(path) {
        // A reopen of the log removed it first (see `list_segments`).
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            tracing::warn!(path = %path.display(), error = %e, "cannot remove deleted segment file");
        }
        _ => {}
    }
}

/// Asks the kernel to read `[from, to)` of `file` into the page cache.
fn fadvise_willneed(file: &File, from: u64, to: u64) {
    use nix::fcntl::{posix_fadvise, PosixFadviseAdvice};
    // The kernel reads at most `read_ahead_kb` per WILLNEED call
    // (measured: 8 MiB of a 16 MiB request): ask in smaller steps.
    let mut at = from;
    while at < to {
        let n = (to - at).min(READAHEAD_STEP);
        // A failure only loses the hint.
        let advised = posix_fadvise(
            file,
            at as libc::off_t,
            n as libc::off_t,
            PosixFadviseAdvice::POSIX_FADV_WILLNEED,
        );
        if advised.is_err() {
            break;
        }
        at += n;
    }
}

/// A rolled segment's bytes still being written by its background close:
/// reads of `[written, size)` are served from these parts until `done`.
pub struct PendingTail {
    /// Bytes `[0, written)` were in the file at the roll.
    pub written: u64,
    pub parts: Vec<(u64, TailPart)>,
    /// Set once the background close wrote everything.
    pub done: Rc<Cell<bool>>,
}

impl PendingTail {
    fn buffered_from(&self, pos: u64) -> Option<&[u8]> {
        self.parts.iter().find_map(|(at, part)| {
            let b = part.bytes();
            (pos >= *at && pos < at + b.len() as u64).then(|| &b[(pos - at) as usize..])
        })
    }
}

pub struct Segment {
    pub base_offset: i64,
    pub dir: PathBuf,
    /// Buffered read-only fd for pread / sendfile (page cache).
    pub read_file: Arc<File>,
    /// Logical size when closed; the appender tracks it while active.
    closed_size: u64,
    pub index: SegmentIndex,
    /// Last offset + 1 (base offset when empty).
    pub next_offset: i64,
    pub created_ms: i64,
    pub appender: Option<DmaAppender>,
    /// What fetches from this file asked the kernel to read ahead.
    readahead: Cell<ReadAhead>,
    /// The file is a recycled one ([`recycle`]): its blocks stay allocated
    /// when the appender opens it (its old bytes are overwritten).
    reused_file: bool,
    /// Set by a roll while the closed appender's writes finish.
    tail: Option<PendingTail>,
}

pub fn path_of(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(segment_file_name(base_offset, suffix))
}

fn invalid(msg: &str) -> StorageError {
    StorageError::Io(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        msg.to_string(),
    ))
}

impl Segment {
    pub fn new_index(base_offset: i64, config: &LogConfig) -> SegmentIndex {
        SegmentIndex::new(
            base_offset,
            config.index_interval_bytes,
            config.max_offset_index_entries(),
            config.max_time_index_entries(),
        )
    }

    pub fn log_path(&self) -> PathBuf {
        path_of(&self.dir, self.base_offset, LOG_SUFFIX)
    }

    /// Logical size: bytes of whole batches in this segment.
    pub fn size(&self) -> u64 {
        self.appender
            .as_ref()
            .map_or(self.closed_size, |a| a.logical_end())
    }

    /// Bytes readable through `read_file`.
    pub fn file_end(&self) -> u64 {
        if let Some(t) = self.pending_tail() {
            return t.written;
        }
        self.appender
            .as_ref()
            .map_or(self.closed_size, |a| a.written_end())
    }

    /// The tail a roll left to write, while it is being written.
    fn pending_tail(&self) -> Option<&PendingTail> {
        self.tail.as_ref().filter(|t| !t.done.get())
    }

    /// Whether a background close is still writing this segment's tail.
    pub fn is_closing(&self) -> bool {
        self.pending_tail().is_some()
    }

    /// Drops the kept tail once its writes are done (frees the buffers).
    pub fn reap_tail(&mut self) {
        if self.tail.as_ref().is_some_and(|t| t.done.get()) {
            self.tail = None;
        }
    }

    /// Closed at `size` by a roll whose background close still writes
    /// `tail` (appender taken by the caller).
    pub fn set_closing(&mut self, size: u64, tail: PendingTail) {
        self.appender = None;
        self.closed_size = size;
        self.tail = Some(tail);
    }

    pub fn is_empty(&self) -> bool {
        self.size() == 0
    }

    /// Copy bytes `[pos, pos + out.len())` from the file and, past what the
    /// file holds, from the appender's buffer.
    pub fn read_exact_at(&self, pos: u64, out: &mut [u8]) -> Result<(), StorageError> {
        let end = pos + out.len() as u64;
        if end > self.size() {
            return Err(invalid("read past the logical end of a segment"));
        }
        let in_file = self.file_end().saturating_sub(pos).min(out.len() as u64) as usize;
        if in_file > 0 {
            self.read_file.read_exact_at(&mut out[..in_file], pos)?;
        }
        // The rest sits in the in-flight and/or the current DMA buffer.
        let mut done = in_file;
        while done < out.len() {
            let from = pos + done as u64;
            let part = self
                .appender
                .as_ref()
                .and_then(|a| a.buffered_from(from))
                .or_else(|| self.pending_tail().and_then(|t| t.buffered_from(from)))
                .filter(|p| !p.is_empty())
                .ok_or_else(|| invalid("bytes neither in file nor in buffer"))?;
            let n = part.len().min(out.len() - done);
            out[done..done + n].copy_from_slice(&part[..n]);
            done += n;
        }
        Ok(())
    }

    /// Header of the entry at `pos` (already validated when appended or
    /// recovered): a v2 batch or a legacy magic 0/1 message
    /// ([`entry_header`]).
    pub fn header_at(&self, pos: u64) -> Result<ScannedBatch, StorageError> {
        let mut h = [0u8; ENTRY_HEADER];
        // A legacy message may be shorter than a v2 header (26 bytes at least).
        let n = self.size().saturating_sub(pos).min(ENTRY_HEADER as u64) as usize;
        self.read_exact_at(pos, &mut h[..n])?;
        match entry_header(&h[..n], pos) {
            Some(b) if pos + b.len <= self.size() => Ok(b),
            _ => Err(invalid("batch header inconsistent with segment")),
        }
    }

    /// The batch holding `offset` (or the first after it), via the sparse
    /// index then a forward walk. `None` when the segment ends before it.
    pub fn find_batch(&self, offset: i64) -> Result<Option<ScannedBatch>, StorageError> {
        let mut pos = self.index.lookup_position(offset);
        let size = self.size();
        while pos < size {
            let h = self.header_at(pos)?;
            if h.last_offset >= offset {
                return Ok(Some(h));
            }
            pos += h.len;
        }
        Ok(None)
    }

    /// Walk batches from `pos` to the end of the segment.
    pub fn walk_from(
        &self,
        mut pos: u64,
        mut f: impl FnMut(&ScannedBatch) -> bool,
    ) -> Result<(), StorageError> {
        let size = self.size();
        while pos < size {
            let h = self.header_at(pos)?;
            if !f(&h) {
                break;
            }
            pos += h.len;
        }
        Ok(())
    }

    /// Write `.index` and `.timeindex` (on roll and clean shutdown).
    pub fn write_index_files(&self) -> Result<(), StorageError> {
        std::fs::write(
            path_of(&self.dir, self.base_offset, INDEX_SUFFIX),
            self.index.offsets.encode(),
        )?;
        std::fs::write(
            path_of(&self.dir, self.base_offset, TIME_INDEX_SUFFIX),
            self.index.times.encode(),
        )?;
        Ok(())
    }

    /// An empty segment's close: no index files (an empty one reopens
    /// with empty indexes, see [`Self::load_trusted`]); stale ones go.
    pub fn remove_index_files(&self) -> Result<(), StorageError> {
        for suffix in INDEX_SUFFIXES {
            match std::fs::remove_file(path_of(&self.dir, self.base_offset, suffix)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    /// Ask the kernel, off the shard, to read ahead of a fetch of `[start,
    /// end)` from this file into the page cache (see `readahead`), so the
    /// consumer's next `sendfile` does not wait for the disk on the shard.
    pub fn read_ahead(&self, start: u64, end: u64, window: u64, helpers: &HelperThreads) {
        let mut ra = self.readahead.get();
        let plan = ra.plan(start, end, self.file_end(), window);
        self.readahead.set(ra);
        let Some((from, to)) = plan else { return };
        // A dup of the fd: the worker may outlive this segment.
        let Ok(file) = self.read_file.try_clone() else {
            return;
        };
        // On the shard's read-ahead thread; if it cannot run, the hint is lost.
        let _ = helpers
            .read_ahead
            .submit(Box::new(move || fadvise_willneed(&file, from, to)));
    }

    /// Mark closed with its final logical size (appender already closed).
    pub fn set_closed(&mut self, size: u64) {
        self.appender = None;
        self.closed_size = size;
    }

    /// A segment whose files are trusted (clean shutdown or below the
    /// recovery point): load index files, walk only from the last index
    /// entry to find the next offset (Kafka's `readNextOffset`). Falls back
    /// to `None` (caller rescans) when the index files are missing or bad.
    pub fn load_trusted(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<Option<Segment>, StorageError> {
        let log = path_of(dir, base_offset, LOG_SUFFIX);
        let read_file = Arc::new(File::open(&log)?);
        let size = read_file.metadata()?.len();
        let (ib, tb) = match (
            std::fs::read(path_of(dir, base_offset, INDEX_SUFFIX)),
            std::fs::read(path_of(dir, base_offset, TIME_INDEX_SUFFIX)),
        ) {
            (Ok(ib), Ok(tb)) => (ib, tb),
            // An empty segment closed without index files
            // (`remove_index_files`): its indexes are empty.
            (Err(a), Err(b))
                if size == 0
                    && a.kind() == std::io::ErrorKind::NotFound
                    && b.kind() == std::io::ErrorKind::NotFound =>
            {
                (Vec::new(), Vec::new())
            }
            _ => return Ok(None),
        };
        let (Some(offsets), Some(times)) = (
            OffsetIndex::decode(&ib, config.max_offset_index_entries(), size),
            TimeIndex::decode(&tb, config.max_time_index_entries()),
        ) else {
            return Ok(None);
        };
        let mut seg = Segment {
            base_offset,
            dir: dir.to_path_buf(),
            read_file,
            closed_size: size,
            index: Self::new_index(base_offset, config),
            next_offset: base_offset,
            created_ms: now_ms,
            appender: None,
            readahead: Cell::default(),
            reused_file: false,
            tail: None,
        };
        let start = offsets.entries().last().map_or(0, |e| u64::from(e.1));
        if let Some(&(ts, rel)) = times.entries().last() {
            seg.index.max_timestamp = ts;
            seg.index.offset_of_max_timestamp = base_offset + i64::from(rel);
        }
        seg.index.offsets = offsets;
        seg.index.times = times;
        if size > 0 {
            seg.index.first_batch_timestamp = Some(seg.header_at(0)?.max_timestamp);
        }
        let (mut next, mut max_ts, mut max_off, mut since) = (
            base_offset,
            seg.index.max_timestamp,
            seg.index.offset_of_max_timestamp,
            0,
        );
        let walked = seg.walk_from(start, |h| {
            next = h.last_offset + 1;
            if h.max_timestamp > max_ts {
                max_ts = h.max_timestamp;
                max_off = h.base_offset;
            }
            since += h.len;
            true
        });
        if walked.is_err() {
            return Ok(None);
        }
        seg.next_offset = next;
        seg.index.max_timestamp = max_ts;
        seg.index.offset_of_max_timestamp = max_off;
        seg.index.bytes_since_last_entry = since;
        Ok(Some(seg))
    }

    /// Rescan a segment file with O_DIRECT reads (length + CRC of every
    /// batch), rebuild its indexes and cut the file after the last good
    /// batch. Returns the segment and the bytes scanned.
    pub async fn recover(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
    ) -> Result<(Segment, u64), StorageError> {
        let log = path_of(dir, base_offset, LOG_SUFFIX);
        let file = DmaFile::open(&log).await?;
        let file_len = file.file_size().await?;
        let mut index = Self::new_index(base_offset, config);
        let (mut next, mut pos, mut carry, mut found) =
            (base_offset, 0u64, Vec::<u8>::new(), Vec::new());
        let mut valid_end = 0u64;
        let mut chunk_size = RECOVERY_FIRST_CHUNK;
        while pos < file_len {
            let chunk = file.read_at_aligned(pos, chunk_size).await?;
            if chunk.is_empty() {
                break;
            }
            chunk_size = (chunk_size * 2).min(RECOVERY_CHUNK);
            pos += chunk.len() as u64;
            let outcome = if carry.is_empty() {
                let o = scan(&chunk, valid_end, &mut next, usize::MAX, true, &mut found);
                carry.extend_from_slice(&chunk[o.consumed..]);
                o
            } else {
                carry.extend_from_slice(&chunk);
                let o = scan(&carry, valid_end, &mut next, usize::MAX, true, &mut found);
                carry.drain(..o.consumed);
                o
            };
            valid_end += outcome.consumed as u64;
            for b in found.drain(..) {
                index.on_batch(b.base_offset, b.position, b.len, b.max_timestamp);
            }
            match outcome.stop {
                ScanStop::Corrupt => break,
                ScanStop::NeedMore { needed } if valid_end + needed as u64 > file_len => break,
                ScanStop::NeedMore { .. } => {}
            }
        }
        file.close().await?;
        if valid_end < file_len {
            let f = std::fs::OpenOptions::new().write(true).open(&log)?;
            f.set_len(valid_end)?;
        }
        let seg = Segment {
            base_offset,
            dir: dir.to_path_buf(),
            read_file: Arc::new(File::open(&log)?),
            closed_size: valid_end,
            index,
            next_offset: next.max(base_offset),
            created_ms: now_ms,
            appender: None,
            readahead: Cell::default(),
            reused_file: false,
            tail: None,
        };
        Ok((seg, pos))
    }

    /// A new, empty segment at `base_offset`, in a new file or in `reuse`,
    /// a file from the partition's [`recycle`] pool (renamed to the
    /// segment's name; its old bytes stay until overwritten).
    pub async fn create_empty(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        reuse: Option<PathBuf>,
    ) -> Result<Segment, StorageError> {
        let seg = Self::create_empty_unsynced(dir, base_offset, config, now_ms, reuse)?;
        // Make the new name durable (a crash must not lose the segment
        // file) before any append to it is acknowledged.
        sync_dir(dir).await?;
        Ok(seg)
    }

    /// [`Segment::create_empty`] without the directory fsync: the caller
    /// runs [`sync_dir`] and waits for it before anything appended to this
    /// segment counts as flushed (a roll, see `PartitionLog::roll`).
    pub fn create_empty_unsynced(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        now_ms: i64,
        reuse: Option<PathBuf>,
    ) -> Result<Segment, StorageError> {
        let log = path_of(dir, base_offset, LOG_SUFFIX);
        let reused_file = match reuse {
            Some(from) => {
                std::fs::rename(&from, &log)?;
                true
            }
            None => {
                std::fs::OpenOptions::new()
                    .create(true)
                    .truncate(true)
                    .write(true)
                    .open(&log)?;
                false
            }
        };
        Ok(Segment {
            base_offset,
            dir: dir.to_path_buf(),
            read_file: Arc::new(File::open(&log)?),
            closed_size: 0,
            index: Self::new_index(base_offset, config),
            next_offset: base_offset,
            created_ms: now_ms,
            appender: None,
            readahead: Cell::default(),
            reused_file,
            tail: None,
        })
    }

    /// Turn this segment into the active one: open a DMA appender at its end.
    /// Its write buffers come from the shard's `pool`.
    pub async fn activate(
        &mut self,
        config: &LogConfig,
        pool: &SharedBufferPool,
        timings: &SharedIoTimings,
    ) -> Result<(), StorageError> {
        let size = self.closed_size;
        let page_start = size / super::appender::PAGE * super::appender::PAGE;
        let mut tail = vec![0u8; (size - page_start) as usize];
        self.read_file.read_exact_at(&mut tail, page_start)?;
        let step = if config.preallocate {
            config.segment_bytes.min(1 << 31)
        } else {
            config
                .preallocate_step_bytes
                .min(config.segment_bytes.max(super::appender::PAGE))
        };
        let a = DmaAppender::open(
            &self.log_path(),
            size,
            &tail,
            WriteBuffers {
                pool: pool.clone(),
                cap: config.write_buffer_bytes,
                timings: timings.clone(),
            },
            step,
            config.segment_bytes,
            // Only a recycled file that nothing was appended to yet keeps
            // its blocks; any other reopen cuts the file at its end.
            self.reused_file && size == 0,
        )
        .await?;
        self.reused_file = false;
        self.appender = Some(a);
        Ok(())
    }

    /// Kafka's delete: rename every file to `.deleted`, then remove them.
    pub fn delete_files(&self) -> Result<(), StorageError> {
        delete_segment_files(&self.dir, self.base_offset)
    }

    /// Retention's delete, as Kafka's `asyncDeleteSegment`: rename every
    /// file to `.deleted` now, free and remove them on the shard's delete
    /// thread (`helpers.deleter`; glommio's blocking pool if it
    /// cannot run). Freeing a large file's blocks (in `unlink`, or in the
    /// last `close` of an unlinked file) took milliseconds on the shard,
    /// stalling every connection it serves, and freeing it in one call
    /// stalled the disk's writes: files shrink in [`FREE_STEP`] steps. A
    /// crash in between leaves `.deleted` names, which open removes.
    /// The `.deleted` files stay for `delay_ms` first (`file.delete.delay.ms`,
    /// Kafka's `LogConfig.fileDeleteDelayMs`, which `asyncDeleteSegment`
    /// schedules the removal after); a broker stopping meanwhile leaves
    /// them to the next open, as Kafka's do.
    pub fn delete_files_in_background(
        &self,
        helpers: &HelperThreads,
        delay_ms: u64,
    ) -> Result<(), StorageError> {
        // A fetch holding the file (its `OutPart::File`) must keep reading it.
        let shrink = Arc::strong_count(&self.read_file) == 1;
        let renamed = rename_to_deleted(&self.dir, self.base_offset, &ALL_SUFFIXES)?;
        free_after(helpers, renamed, shrink, delay_ms);
        Ok(())
    }
}

impl Segment {
    /// Retention's delete into the partition's [`recycle`] pool: the log
    /// file is renamed to the pool's name for this segment's next offset,
    /// the index files are deleted as in [`Self::delete_files_in_background`]
    /// after `delay_ms`. The log file is not deleted, so
    /// `file.delete.delay.ms` does not hold it: it is reused only when no
    /// fetch holds it, the readers Kafka's delay is there for.
    /// Returns the pooled file's path; `None` when a fetch still holds the
    /// file (its `sendfile` must keep reading the old bytes), and then the
    /// caller deletes the segment instead.
    pub fn retire_to_pool(
        &self,
        helpers: &HelperThreads,
        delay_ms: u64,
    ) -> Result<Option<PathBuf>, StorageError> {
        if Arc::strong_count(&self.read_file) > 1 || self.appender.is_some() {
            return Ok(None);
        }
        let to = recycle::pool_path(&self.dir, self.next_offset);
        if to.exists() {
            return Ok(None);
        }
        // Index files first: a crash in between leaves `.deleted` names
        // (removed at open), never index files without their log.
        let renamed = rename_to_deleted(
            &self.dir,
            self.base_offset,
            &[INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX],
        )?;
        std::fs::rename(self.log_path(), &to)?;
        free_after(helpers, renamed, true, delay_ms);
        Ok(Some(to))
    }
}

/// [`free_in_background`] once `delay_ms` has passed (at once for 0).
fn free_after(helpers: &HelperThreads, paths: Vec<PathBuf>, shrink: bool, delay_ms: u64) {
    if paths.is_empty() {
        return;
    }
    if delay_ms == 0 {
        free_in_background(helpers, paths, shrink);
        return;
    }
    let deleter = helpers.deleter.sender();
    glommio::spawn_local(async move {
        glommio::timer::sleep(std::time::Duration::from_millis(delay_ms)).await;
        let job: helper_thread::Job = Box::new(move || {
            for p in paths {
                free_and_remove(&p, shrink);
            }
        });
        let job = match deleter {
            Some(tx) => match tx.send(job) {
                Ok(()) => return,
                Err(e) => e.0,
            },
            None => job,
        };
        glommio::executor().spawn_blocking(job).await;
    })
    .detach();
}

/// Frees (in steps, when `shrink`) and removes files on the shard's delete
/// thread (`helpers.deleter`; glommio's blocking pool if it cannot run).
pub fn free_in_background(helpers: &HelperThreads, paths: Vec<PathBuf>, shrink: bool) {
    if paths.is_empty() {
        return;
    }
    let job: helper_thread::Job = Box::new(move || {
        for p in paths {
            free_and_remove(&p, shrink);
        }
    });
    if let Err(job) = helpers.deleter.submit(job) {
        glommio::spawn_local(async move {
            glommio::executor().spawn_blocking(job).await;
        })
        .detach();
    }
}

/// Rename a segment's files to `.deleted`, then remove them (Kafka renames
/// first so a crash mid-delete leaves names the next open cleans up).
pub fn delete_segment_files(dir: &Path, base_offset: i64) -> Result<(), StorageError> {
    for d in rename_to_deleted(dir, base_offset, &ALL_SUFFIXES)? {
        std::fs::remove_file(&d)?;
    }
    Ok(())
}

/// Kafka's first step of a delete: rename each of the segment's files that
/// exists to `<name>.deleted`; returns the new names.
fn rename_to_deleted(
    dir: &Path,
    base_offset: i64,
    suffixes: &[&str],
) -> Result<Vec<PathBuf>, StorageError> {
    let mut renamed = Vec::new();
    for &suffix in suffixes {
        let p = path_of(dir, base_offset, suffix);
        let mut d = p.clone().into_os_string();
        d.push(DELETED_SUFFIX);
        match std::fs::rename(&p, &d) {
            Ok(()) => renamed.push(PathBuf::from(d)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(renamed)
}

/// fsync `dir`, so names created or renamed in it survive a crash. Runs
/// on glommio's blocking pool: on the shard it stalled every connection
/// for milliseconds.
pub async fn sync_dir(dir: &Path) -> std::io::Result<()> {
    let d = dir.to_path_buf();
    glommio::executor()
        .spawn_blocking(move || File::open(d)?.sync_all())
        .await
}

/// Whether `e` is the process (EMFILE) or system (ENFILE) running out of
/// file descriptors: an open that failed, not a write or sync.
pub fn out_of_fds(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// fsync each of `files`, then `dir` (which names them), on glommio's
/// blocking pool.
pub async fn sync_files_and_dir(files: Vec<PathBuf>, dir: &Path) -> std::io::Result<()> {
    let d = dir.to_path_buf();
    glommio::executor()
        .spawn_blocking(move || {
            for f in files {
                File::open(f)?.sync_all()?;
            }
            File::open(d)?.sync_all()
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deleted_file_shrinks_step_by_step_to_zero() {
        assert_eq!(free_steps(20, 8), vec![12, 4, 0]);
        assert_eq!(free_steps(16, 8), vec![8, 0]);
        assert_eq!(free_steps(3, 8), vec![0]);
        assert!(free_steps(0, 8).is_empty());
        assert_eq!(free_steps(2, 0), vec![1, 0], "a zero step still ends");
    }

    #[test]
    fn free_and_remove_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("00000000000000000000.log.deleted");
        std::fs::write(&p, vec![7u8; (FREE_STEP * 2 + 5) as usize]).unwrap();
        free_and_remove(&p, true);
        assert!(!p.exists());
    }
}
