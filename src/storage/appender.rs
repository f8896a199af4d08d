//! `[io]` DMA (O_DIRECT) appender for the active segment (ARCHITECTURE.md §3).
//!
//! Batches are copied once into a 4 KiB-aligned buffer from the shard's
//! [`buffer_pool`](super::buffer_pool) (the batch cache keeps slices of it,
//! so there is no second copy); a full buffer is written with O_DIRECT in
//! one call, in the background while the next buffer fills (up to
//! [`WRITE_BEHIND_BYTES`] of writes in flight, at least
//! [`MIN_WRITES_IN_FLIGHT`], so copying overlaps the disk and a disk that
//! stalls for a while does not stall appends); a
//! flush writes the dirty pages of the partial buffer (the partial tail page
//! is rewritten by every later flush until the buffer fills) and may
//! `fdatasync`. Files grow by `pre_allocate` in large steps, so `st_size`
//! does not tell where the data ends: the appender tracks the logical end
//! and the prefix already in the file (`written_end`), and the log never
//! exposes bytes past them (PLATFORM.md).
//!
//! Any failed write or fsync poisons the appender: every later call returns
//! [`StorageError::Poisoned`] (KAFKA_STORAGE_ERROR). An fsync is never
//! retried, since after a failure the kernel may have dropped dirty pages.
//! A failed pre-allocation (a full disk) poisons nothing: [`DmaAppender::reserve`]
//! allocates the room of a whole append before any byte of it is copied,
//! so a refused append leaves the appender as it was, and a retry once
//! there is room again appends it exactly once.

use std::collections::VecDeque;
use std::path::Path;
use std::rc::Rc;

use bytes::Bytes;
use glommio::io::{DmaBuffer, DmaFile, OpenOptions};

use super::batch_cache::BatchBytes;
use super::buffer_pool::{self, FillBuffer, SharedBufferPool};
use super::io_timings::SharedIoTimings;
use super::StorageError;

/// O_DIRECT page size used for buffer layout (PLATFORM.md: 512 is the
/// minimum alignment; whole pages avoid read-modify-write in the kernel).
pub const PAGE: u64 = 4096;
/// Bytes of full buffers being written while the next one fills. An
/// append waits for the oldest write only past this. Two writes keep the
/// disk busy; the rest absorbs the disk's latency spikes (measured on this
/// VM: single 1 MiB writes now and then take 10-40 ms). With 2 writes in
/// flight, appends waited for the disk and the broker's produce p99.9 was
/// 13 ms at 500 MB/s; with 8 MiB, 3-4 ms. acks=1 in Kafka never waits for
/// the disk at all (the page cache absorbs it), which is what this is
/// closer to. The buffers come from the pool and are mostly lent to the
/// batch cache anyway, so the memory is the cache's.
pub const WRITE_BEHIND_BYTES: usize = 8 << 20;
/// Full buffers in flight allowed whatever their size.
pub const MIN_WRITES_IN_FLIGHT: usize = 2;

fn round_down(v: u64) -> u64 {
    v / PAGE * PAGE
}
/// The next pre-allocation size (`[pure]`): one [`growth`] past `from`, but
/// not past `limit` (the segment's size limit) unless the write ending at
/// `end` needs it. Growing past the limit only to free the rest at the roll
/// cost a 64 MiB `fallocate` and then a 64 MiB free (and trim) per segment,
/// the free inside the roll every append behind it waits for.
fn allocation_target(from: u64, step: u64, limit: u64, end: u64) -> u64 {
    (from + growth(from, step)).min(limit).max(round_up(end))
}

/// The first allocation of a segment: a partition with a few records holds
/// its data and at most this much more (the density goal: at most
/// 1 MiB plus its data per partition, with room for the index and
/// checkpoint files); a busy one doubles to the full step in a few
/// allocations.
const FIRST_ALLOCATION: u64 = 256 << 10;

/// How much an allocation of `from` bytes grows (`[pure]`): doubling from
/// [`FIRST_ALLOCATION`] up to `step`, so a segment with a few records holds
/// a fraction of a MiB of disk, not a whole step (a thousand nearly idle partitions
/// reserved 64 GiB per broker), while a busy one reaches full steps after a
/// handful of allocations.
fn growth(from: u64, step: u64) -> u64 {
    step.min(from.max(FIRST_ALLOCATION))
}

fn round_up(v: u64) -> u64 {
    v.div_ceil(PAGE) * PAGE
}

/// A write buffer for `file`: a recycled one from the shard's `pool`,
/// else a fresh aligned allocation.
fn take_buffer(pool: &SharedBufferPool, file: &DmaFile, cap: usize) -> FillBuffer {
    buffer_pool::take(pool, cap, |n| file.alloc_dma_buffer(n))
}

/// Where an appender's write buffers come from: the shard's pool, `cap`
/// bytes each (`shardlog.write.buffer.bytes`, rounded up to pages).
pub struct WriteBuffers {
    pub pool: SharedBufferPool,
    pub cap: usize,
    /// Where the writes' and fdatasyncs' latencies go (the shard's).
    pub timings: SharedIoTimings,
}

/// Bytes of a segment not yet in its file, kept for reads while a
/// background close writes them (see [`DmaAppender::unwritten_parts`]).
pub enum TailPart {
    /// A full buffer whose write is in flight.
    Shared(Rc<DmaBuffer>),
    /// The filled part of the last buffer, lent (no copy: a roll used to
    /// copy up to a whole buffer into fresh memory here, on the append
    /// path).
    Lent(Bytes),
}

impl TailPart {
    pub fn bytes(&self) -> &[u8] {
        match self {
            TailPart::Shared(b) => b.as_bytes(),
            TailPart::Lent(b) => b,
        }
    }
}

/// A pre-allocation running in the background (see `ensure_allocated`).
struct Allocating {
    task: glommio::Task<glommio::Result<(), ()>>,
    target: u64,
}

/// A full buffer being written in the background.
struct InFlight {
    task: glommio::Task<glommio::Result<usize, ()>>,
    buf: Rc<DmaBuffer>,
    pos: u64,
}

pub struct DmaAppender {
    file: Rc<DmaFile>,
    buf: Option<FillBuffer>,
    /// The shard's buffer pool the next buffers come from.
    pool: SharedBufferPool,
    /// Full buffers whose writes are in flight, oldest first.
    inflight: VecDeque<InFlight>,
    buf_cap: usize,
    /// File position of `buf[0]`; page aligned.
    buf_file_pos: u64,
    /// Valid bytes in `buf`.
    fill: usize,
    /// Bytes of `buf` (a page-aligned prefix) already in the file as they
    /// stay: what a small flush wrote (see `write_partial_buffer`).
    on_disk: usize,
    written_end: u64,
    synced_end: u64,
    allocated: u64,
    /// The next pre-allocation step, started before it is needed.
    allocating: Option<Allocating>,
    prealloc_step: u64,
    /// Pre-allocation stops here (the segment's size limit, rounded up to a
    /// page) unless a write needs more.
    prealloc_limit: u64,
    /// Full-buffer writes allowed in flight (from [`WRITE_BEHIND_BYTES`]).
    max_in_flight: usize,
    poisoned: bool,
    timings: SharedIoTimings,
}

impl DmaAppender {
    /// Open (creating if needed) `path` for appending at `logical_end`.
    /// Bytes past `logical_end` are cut off (a torn tail after recovery);
    /// `tail` must hold the file's bytes from the page holding `logical_end`
    /// up to it (read by the caller), so that page can be rewritten whole.
    /// The file grows in `prealloc_step` steps up to `prealloc_limit` (the
    /// segment's size limit), past it only as far as writes go. With
    /// `keep_allocation` (a recycled file, see `recycle`) the file keeps
    /// its size and blocks: the bytes past `logical_end` are old ones that
    /// appends overwrite, and closing cuts the file at its logical end.
    pub async fn open(
        path: &Path,
        logical_end: u64,
        tail: &[u8],
        buffers: WriteBuffers,
        prealloc_step: u64,
        prealloc_limit: u64,
        keep_allocation: bool,
    ) -> Result<Self, StorageError> {
        // An empty log is cut by O_TRUNC in the open itself: glommio's
        // separate truncate goes through its blocking thread pool, 0.6-1.4 ms
        // on the append path of a roll.
        let cut_in_open = !keep_allocation && logical_end == 0;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(cut_in_open)
            .dma_open(path)
            .await?;
        let mut allocated = logical_end;
        if keep_allocation {
            allocated = round_down(file.file_size().await?).max(logical_end);
        } else if !cut_in_open {
            file.truncate(logical_end).await?;
        }
        let WriteBuffers { pool, cap, timings } = buffers;
        let buf_cap = (round_up(cap.max(PAGE as usize) as u64)) as usize;
        let buf_file_pos = round_down(logical_end);
        let fill = (logical_end - buf_file_pos) as usize;
        if tail.len() != fill {
            return Err(StorageError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "tail bytes do not match the logical end",
            )));
        }
        let mut buf = take_buffer(&pool, &file, buf_cap);
        buf.copy_in(0, tail);
        let mut a = DmaAppender {
            file: Rc::new(file),
            buf: Some(buf),
            pool,
            inflight: VecDeque::new(),
            buf_cap,
            buf_file_pos,
            fill,
            on_disk: 0,
            written_end: logical_end,
            synced_end: logical_end,
            allocated,
            allocating: None,
            prealloc_step: prealloc_step.max(PAGE),
            prealloc_limit: round_up(prealloc_limit),
            max_in_flight: (WRITE_BEHIND_BYTES / buf_cap).max(MIN_WRITES_IN_FLIGHT),
            poisoned: false,
            timings,
        };
        // The first step is awaited: the records a produce request appends
        // to this segment are acknowledged before any buffer is written, so
        // a full disk must refuse them here (KAFKA_STORAGE_ERROR) rather
        // than lose them at the first write (tests/storage_full_disk.rs).
        a.ensure_allocated(logical_end + 1).await?;
        Ok(a)
    }

    pub fn logical_end(&self) -> u64 {
        self.buf_file_pos + self.fill as u64
    }
    /// Bytes `[0, written_end)` are in the file (page cache coherent).
    pub fn written_end(&self) -> u64 {
        self.written_end
    }
    pub fn synced_end(&self) -> u64 {
        self.synced_end
    }
    pub fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Bytes `[pos, logical_end)` not necessarily in the file yet, if `pos`
    /// lies within the in-memory buffer.
    /// May be shorter than that when the bytes span the in-flight buffer
    /// and the current one: call again from where it ends.
    pub fn buffered_from(&self, pos: u64) -> Option<&[u8]> {
        for f in &self.inflight {
            let len = f.buf.len() as u64;
            if pos >= f.pos && pos < f.pos + len {
                return Some(&f.buf.as_bytes()[(pos - f.pos) as usize..]);
            }
        }
        let buf = self.buf.as_ref()?;
        if pos < self.buf_file_pos || pos > self.logical_end() {
            return None;
        }
        Some(&buf.as_bytes()[(pos - self.buf_file_pos) as usize..self.fill])
    }

    /// The bytes `[written_end, logical_end)` as `(file position, part)`,
    /// in file order: the in-flight buffers (shared) and the filled part
    /// of the current one (lent); nothing is copied. A roll keeps them so the closed
    /// segment's reads need not wait for its writes.
    pub fn unwritten_parts(&mut self) -> Vec<(u64, TailPart)> {
        let mut parts: Vec<(u64, TailPart)> = self
            .inflight
            .iter()
            .map(|f| (f.pos, TailPart::Shared(f.buf.clone())))
            .collect();
        if let Some(buf) = self.buf.as_mut() {
            if self.fill > 0 {
                // Lent bytes are never written again (the buffer is not
                // refilled in place), and a closing appender appends nothing.
                parts.push((self.buf_file_pos, TailPart::Lent(buf.lend(0..self.fill))));
            }
        }
        parts
    }

    fn check(&self) -> Result<(), StorageError> {
        if self.poisoned {
            Err(StorageError::Poisoned)
        } else {
            Ok(())
        }
    }

    fn poison<T>(&mut self, e: impl Into<StorageError>) -> Result<T, StorageError> {
        self.poisoned = true;
        let e = e.into();
        tracing::error!(error = %e, "segment write failed; log poisoned");
        Err(e)
    }

    /// Make sure the file is allocated up to `end`. The next step is
    /// started in the background once writes pass half of the current one,
    /// so an append does not wait for `fallocate` (measured: up to 20 ms
    /// now and then) unless writes outrun it.
    async fn ensure_allocated(&mut self, end: u64) -> Result<(), StorageError> {
        if end > self.allocated {
            self.settle_allocation().await;
        }
        if end > self.allocated {
            let target = allocation_target(
                round_up(end).max(self.allocated),
                self.prealloc_step,
                self.prealloc_limit,
                end,
            );
            // keep_size = false: the file size covers the allocation, so an
            // O_DIRECT write inside it needs no size update (cheaper
            // fdatasync).
            if let Err(e) = self.file.pre_allocate(target, false).await {
                // Nothing was written: the caller refuses its append and
                // the next one allocates again.
                tracing::warn!(error = %e, target, "segment pre-allocation failed");
                return Err(e.into());
            }
            self.allocated = target;
        }
        if self.allocating.is_none()
            && end + growth(self.allocated, self.prealloc_step) / 2 > self.allocated
            && self.allocated < self.prealloc_limit
        {
            let target =
                allocation_target(self.allocated, self.prealloc_step, self.prealloc_limit, end);
            let file = self.file.clone();
            let task = glommio::spawn_local(async move { file.pre_allocate(target, false).await });
            self.allocating = Some(Allocating { task, target });
        }
        Ok(())
    }

    /// Wait for a background pre-allocation (before truncating or closing,
    /// so it cannot extend the file afterwards).
    async fn settle_allocation(&mut self) {
        if let Some(a) = self.allocating.take() {
            match a.task.await {
                Ok(()) => self.allocated = self.allocated.max(a.target),
                // `allocated` stays: whatever needs the room allocates it
                // again in the foreground, and fails there if it must.
                Err(e) => tracing::warn!(error = %e, "background pre-allocation failed"),
            }
        }
    }

    /// Allocate the file up to the page in which `len` more bytes would
    /// end, before any of them is copied in: a full disk refuses the whole
    /// append here and changes nothing. Every write stays inside allocated
    /// room: a full buffer ends where appended data ends, and a flush of a
    /// partial one writes up to the page its data ends in.
    pub async fn reserve(&mut self, len: usize) -> Result<(), StorageError> {
        self.check()?;
        self.ensure_allocated(round_up(self.logical_end() + len as u64))
            .await
    }

    /// Append one batch given as its (patched) header and the rest. With
    /// `lend`, also return the batch's bytes for the batch cache without
    /// copying them: a slice of the write buffer, or a slice of each buffer
    /// when the batch spans buffers (with 1 MB producer batches and 1 MiB
    /// buffers that is most batches, and a joined copy cost a memcpy of
    /// the whole batch into fresh memory).
    pub async fn append_batch(
        &mut self,
        head: &[u8],
        body: &[u8],
        lend: bool,
    ) -> Result<Option<BatchBytes>, StorageError> {
        self.check()?;
        let mut lent = BatchBytes::default();
        // Where the batch starts in the current buffer.
        let mut start = self.fill;
        for data in [head, body] {
            self.fill_from(data, lend.then_some((&mut lent, &mut start)))
                .await?;
        }
        if !lend {
            return Ok(None);
        }
        if let Some(buf) = self.buf.as_mut() {
            if self.fill > start {
                lent.push(buf.lend(start..self.fill));
            }
        }
        Ok(Some(lent))
    }

    /// Copy `data` into the aligned buffer, writing each buffer as it fills.
    pub async fn append(&mut self, data: &[u8]) -> Result<(), StorageError> {
        self.check()?;
        self.fill_from(data, None).await
    }

    /// Copy `data` in, writing each buffer as it fills. With `lend` (the
    /// batch so far, and where it starts in the current buffer), a full
    /// buffer's share of the batch is lent before the buffer is written,
    /// and the batch goes on at the start of the next one.
    async fn fill_from(
        &mut self,
        mut data: &[u8],
        mut lend: Option<(&mut BatchBytes, &mut usize)>,
    ) -> Result<(), StorageError> {
        while !data.is_empty() {
            let Some(buf) = self.buf.as_mut() else {
                return self.poison(std::io::Error::other("appender lost its buffer"));
            };
            let n = data.len().min(self.buf_cap - self.fill);
            buf.copy_in(self.fill, &data[..n]);
            self.fill += n;
            data = &data[n..];
            if self.fill == self.buf_cap {
                if let Some((lent, start)) = lend.as_mut() {
                    lent.push(buf.lend(**start..self.fill));
                    **start = 0;
                }
                self.write_full_buffer().await?;
            }
        }
        Ok(())
    }

    /// Wait for every in-flight write.
    async fn await_inflight(&mut self) -> Result<(), StorageError> {
        while !self.inflight.is_empty() {
            self.await_oldest().await?;
        }
        Ok(())
    }

    /// Wait for the oldest in-flight write; recover its buffer. Writes
    /// complete in submission order as far as `written_end` is concerned.
    async fn await_oldest(&mut self) -> Result<(), StorageError> {
        let Some(f) = self.inflight.pop_front() else {
            return Ok(());
        };
        let res = f.task.await;
        let len = f.buf.len();
        match res {
            Ok(n) if n == len => {}
            Ok(_) => return self.poison(std::io::Error::other("short O_DIRECT write")),
            Err(e) => return self.poison(e),
        }
        self.written_end = f.pos + len as u64;
        // Dropping our handle lets the pool recycle the buffer once the
        // batch cache no longer holds slices of it.
        Ok(())
    }

    async fn write_full_buffer(&mut self) -> Result<(), StorageError> {
        let end = self.buf_file_pos + self.buf_cap as u64;
        self.ensure_allocated(end).await?;
        let Some(buf) = self.buf.take() else {
            return self.poison(std::io::Error::other("appender lost its buffer"));
        };
        let buf = buf.into_shared();
        let (file, shared, pos) = (self.file.clone(), buf.clone(), self.buf_file_pos);
        let timings = self.timings.clone();
        let task = glommio::spawn_local(async move {
            let start = timings.start();
            let r = file.write_rc_at(shared, pos).await;
            timings.on_dma_write(start);
            r
        });
        self.inflight.push_back(InFlight { task, buf, pos });
        self.buf = Some(take_buffer(&self.pool, &self.file, self.buf_cap));
        // The write reaches the kernel when the shard next polls its
        // rings (as soon as this request's task yields). A 1 µs timer
        // wait here used to force that earlier, but on a busy shard it
        // parked the append behind every other ready task: 1-6 ms now
        // and then, a third of the broker's produce p99.
        while self.inflight.len() > self.max_in_flight {
            self.await_oldest().await?;
        }
        self.buf_file_pos = end;
        self.fill = 0;
        // The whole buffer was written, the pages a small flush had
        // already written among them (the same bytes again).
        self.on_disk = 0;
        Ok(())
    }

    /// A flush of a partly filled buffer. A buffer at least half full is
    /// written from the buffer itself (its filled pages, the last one
    /// zero-padded past `fill`), and appends go on in a new buffer that
    /// starts at the page holding the logical end, with that page's bytes
    /// (rewritten by the next write). This used to copy the filled part
    /// into a fresh scratch buffer on every flush: with
    /// `flush.every.append` (group commit), 45% of the shard's time.
    ///
    /// Any other flush writes a copy of the pages changed since the last
    /// one (`on_disk..`) and appends go on in the same buffer. Handing off
    /// a mostly empty buffer on every flush gave each small batch of a
    /// `flush.messages=1` topic a whole buffer of its own, kept alive by
    /// the batch cache's slice of it (which counts only the batch's
    /// bytes): the soak test's broker grew 20 MB a minute that way
    /// (tests/hardening_soak.rs). The copy is the bytes appended since the
    /// last flush plus the page they start in.
    async fn write_partial_buffer(&mut self) -> Result<(), StorageError> {
        if self.fill == 0 {
            return Ok(());
        }
        let head = round_down(self.fill as u64) as usize;
        let to = round_up(self.fill as u64) as usize;
        if self.on_disk > 0 || to < self.buf_cap / 2 {
            return self.write_dirty_pages(head, to).await;
        }
        let Some(mut buf) = self.buf.take() else {
            return self.poison(std::io::Error::other("appender lost its buffer"));
        };
        buf.zero(self.fill..to);
        let mut next = take_buffer(&self.pool, &self.file, self.buf_cap);
        next.copy_in(0, &buf.as_bytes()[head..self.fill]);
        let shared = buf.into_shared_prefix(to);
        let pos = self.buf_file_pos;
        self.buf = Some(next);
        self.buf_file_pos += head as u64;
        self.fill -= head;
        self.write_all(shared, pos, to).await
    }

    /// Write a copy of `buf[on_disk..to]` (zero-padded past `fill`) and
    /// keep the buffer; the pages before `head` are then final.
    async fn write_dirty_pages(&mut self, head: usize, to: usize) -> Result<(), StorageError> {
        let from = self.on_disk;
        let Some(buf) = self.buf.as_ref() else {
            return self.poison(std::io::Error::other("appender lost its buffer"));
        };
        let mut scratch = self.file.alloc_dma_buffer(to - from);
        let filled = self.fill - from;
        let bytes = scratch.as_bytes_mut();
        bytes[..filled].copy_from_slice(&buf.as_bytes()[from..self.fill]);
        bytes[filled..].fill(0);
        let pos = self.buf_file_pos + from as u64;
        self.write_all(Rc::new(scratch), pos, to - from).await?;
        self.on_disk = head;
        Ok(())
    }

    async fn write_all(
        &mut self,
        buf: Rc<DmaBuffer>,
        pos: u64,
        len: usize,
    ) -> Result<(), StorageError> {
        let start = self.timings.start();
        let r = self.file.write_rc_at(buf, pos).await;
        self.timings.on_dma_write(start);
        match r {
            Ok(n) if n == len => Ok(()),
            Ok(_) => self.poison(std::io::Error::other("short O_DIRECT write")),
            Err(e) => self.poison(e),
        }
    }

    /// The segment file, for an fdatasync outside the log lock (group
    /// commit); `close` tolerates this extra holder.
    pub fn file_handle(&self) -> Rc<DmaFile> {
        self.file.clone()
    }

    /// Write every buffered byte to the file; `fdatasync` if `sync`.
    pub async fn flush(&mut self, sync: bool) -> Result<(), StorageError> {
        self.check()?;
        self.await_inflight().await?;
        let end = self.logical_end();
        if end > self.written_end {
            self.ensure_allocated(end).await?;
            self.write_partial_buffer().await?;
            self.written_end = end;
        }
        if sync && self.synced_end < end {
            let start = self.timings.start();
            let r = self.file.fdatasync().await;
            self.timings.on_fsync(start);
            if let Err(e) = r {
                return self.poison(e);
            }
            self.synced_end = end;
        }
        Ok(())
    }

    /// Flush, sync, cut the file to its logical end (dropping the
    /// pre-allocated tail, as Kafka trims on roll) and close it.
    pub async fn close(mut self) -> Result<u64, StorageError> {
        self.flush(true).await?;
        self.settle_allocation().await;
        let end = self.logical_end();
        if let Err(e) = self.file.truncate(end).await {
            return self.poison(e);
        }
        let start = self.timings.start();
        let r = self.file.fdatasync().await;
        self.timings.on_fsync(start);
        if let Err(e) = r {
            return self.poison(e);
        }
        // If a group-commit fdatasync still holds the file (it was synced
        // above), the fd closes when that handle drops.
        if let Ok(file) = Rc::try_unwrap(self.file) {
            file.close().await?;
        }
        Ok(end)
    }

    /// A batched close's: [`Self::close`] without either fdatasync (the
    /// batch's `syncfs` makes the bytes and the new size durable, see
    /// `close_batch`).
    pub async fn close_for_batch(mut self) -> Result<u64, StorageError> {
        self.flush(false).await?;
        self.settle_allocation().await;
        let end = self.logical_end();
        if let Err(e) = self.file.truncate(end).await {
            return self.poison(e);
        }
        if let Ok(file) = Rc::try_unwrap(self.file) {
            file.close().await?;
        }
        Ok(end)
    }

    /// Roll's close: write every buffered byte and cut the file to its
    /// logical end, but leave the fdatasync to the caller, who runs it off
    /// the append path (Kafka's roll schedules the old segment's flush too).
    /// Returns the logical end and the file to sync.
    pub async fn close_unsynced(mut self) -> Result<(u64, Rc<DmaFile>), StorageError> {
        self.flush(false).await?;
        self.settle_allocation().await;
        let end = self.logical_end();
        if let Err(e) = self.file.truncate(end).await {
            return self.poison(e);
        }
        Ok((end, self.file.clone()))
    }

    /// Close without writing anything (log poisoned or being deleted).
    pub async fn abandon(mut self) {
        while let Some(f) = self.inflight.pop_front() {
            let _ = f.task.await;
        }
        if let Some(a) = self.allocating.take() {
            let _ = a.task.await;
        }
        if let Ok(file) = Rc::try_unwrap(self.file) {
            let _ = file.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn pre_allocation_stops_at_the_segment_limit_unless_a_write_needs_more() {
        // A new segment starts small and doubles up to the 64 MiB step,
        // then steps of 64 MiB towards a 128 MiB segment, then no more.
        assert_eq!(allocation_target(0, 64 * MIB, 128 * MIB, 1), MIB / 4);
        assert_eq!(
            allocation_target(MIB / 4, 64 * MIB, 128 * MIB, MIB / 4),
            MIB / 2
        );
        assert_eq!(allocation_target(MIB, 64 * MIB, 128 * MIB, MIB), 2 * MIB);
        assert_eq!(
            allocation_target(16 * MIB, 64 * MIB, 128 * MIB, 17 * MIB),
            32 * MIB
        );
        assert_eq!(
            allocation_target(32 * MIB, 64 * MIB, 1024 * MIB, MIB),
            64 * MIB
        );
        assert_eq!(
            allocation_target(64 * MIB, 64 * MIB, 128 * MIB, 97 * MIB),
            128 * MIB
        );
        assert_eq!(
            allocation_target(100 * MIB, 64 * MIB, 128 * MIB, 101 * MIB),
            128 * MIB
        );
        // A single batch larger than the segment: exactly as far as it goes.
        assert_eq!(
            allocation_target(128 * MIB, 64 * MIB, 128 * MIB, 130 * MIB + 5),
            round_up(130 * MIB + 5)
        );
    }
}
