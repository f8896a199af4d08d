//! `[pure]` Hierarchical timing wheel (Kafka's `TimingWheel` + `SystemTimer`).
//!
//! Level 0 has `WHEEL_SIZE` (20) buckets of `tick_ms` each; level *n+1* has buckets
//! as wide as the whole of level *n* (its `interval`). Overflow levels are
//! created on demand, as Kafka does, so a wheel that only ever sees 30 s
//! timeouts grows exactly as many levels as that needs (4 at 1 ms × 20).
//!
//! Instead of Kafka's `DelayQueue` of buckets each level keeps a bitmap of
//! its non-empty buckets: the next bucket to expire is the first set bit after
//! the level's current slot, so finding it costs a shift and a
//! `trailing_zeros` per level (a `BinaryHeap` of bucket expirations, tried
//! first, cost a push and a pop per bucket round, i.e. per op when ops are
//! sparse). Insert is O(1) and cancel is O(1) (swap-remove from the bucket's
//! vector). Buckets hold `(deadline, slot index, generation, payload)`
//! entries, so a cascade scans one vector sequentially and only writes each
//! demoted op's slot (its new bucket and position), and expiry reads the
//! bucket and touches no slot at all. Vectors rather than intrusive linked
//! lists: walking a list of slots scattered over a 1M-entry slab is a chain
//! of dependent cache misses, while a vector's entries are independent loads.
//!
//! When a higher-level bucket expires its entries are re-inserted relative to
//! the advanced clock: they fall into a lower level (Kafka's "demotion") or,
//! when their deadline has been reached, come out as expired.
//!
//! Slots (bucket + position + generation, 16 bytes) live in a slab handed
//! out in 64-slot chunks, one open chunk per bucket round, so the ops one
//! flush touches sit together instead of one random line (and page) each of
//! a 1M-op slab. Liveness is a bit per slot, kept in the bucket while it
//! fills the chunk and in the chunk's bookkeeping once closed, so park and
//! cancel touch only the bucket, the slot and the entry.
//! [`TimerHandle`]s are slot index + generation, so a stale handle (already
//! expired or cancelled) is detected instead of touching a reused slot: the
//! entry the slot points at must name that slot and generation.
//! Time is passed in (`now_ms`); nothing here reads a clock.

/// Kafka's `TimingWheel` tick for the purgatory: 1 ms.
pub const DEFAULT_TICK_MS: i64 = 1;
/// Kafka's `SystemTimer` wheel size: 20 buckets per level. A constant so
/// slot arithmetic compiles to multiplies instead of hardware divides.
pub const WHEEL_SIZE: usize = 20;

const NO_BUCKET: u32 = u32::MAX;
const NO_CHUNK: u32 = u32::MAX;
/// Slots per slab chunk (1 KiB). Ops inserted into the same bucket round
/// take consecutive slots of that bucket's open chunk, so inserting and
/// demoting them writes a few dense runs instead of one random cache line
/// (and page) of a 1M-op slab each, which is what a single LIFO free list
/// did (measured at 1M ops outstanding, see perf/RESULTS.md). The price is
/// memory: a chunk is reused only once all its ops are gone, so a live op
/// keeps its cancelled neighbours' slots allocated; but all ops of a chunk
/// went into one bucket round, so they have left by that round's end and
/// the waste is bounded by what was inserted over one bucket span.
const CHUNK: u32 = 64;
/// Slots ahead of the fill point of an open chunk to prefetch (two lines).
const SLOTS_AHEAD: u32 = 8;
/// Entries ahead of a bucket vector's end to prefetch while pushing.
const ITEMS_AHEAD: usize = 16;
/// How many bucket entries ahead a flush prefetches their chunk bookkeeping
/// and (for demotions) their slots: enough to cover a memory miss plus its
/// page walk (well over 100 ns in a VM) at a few ns of work per entry (8
/// measured slower than 16 at 1M ops, 32 no better).
const PREFETCH_AHEAD: usize = 16;

/// Handle of an entry in the wheel: slab index (low 32 bits) + generation
/// (high 32 bits). Copyable and cheap to store in watch lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerHandle(pub u64);

impl TimerHandle {
    fn new(index: u32, generation: u32) -> Self {
        Self(((generation as u64) << 32) | index as u64)
    }
    fn index(self) -> usize {
        (self.0 & 0xffff_ffff) as usize
    }
    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// An entry that reached its deadline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expired<T> {
    pub handle: TimerHandle,
    pub deadline_ms: i64,
    pub payload: T,
}

/// Where a live op's entry sits, for O(1) cancel and lookup. Written when
/// the op is inserted or demoted, never read by expiry: an expiring op's
/// payload travels in its bucket entry, so a level-0 flush reads one bucket
/// vector in order and touches no slot (with 1M ops outstanding every slot
/// access is a cache miss; expiry through the slots cost one per op).
/// 16-byte aligned so no slot straddles two cache lines.
#[derive(Debug, Clone, Copy)]
#[repr(align(16))]
struct Slot {
    /// Global bucket index (`level * WHEEL_SIZE + slot`).
    bucket: u32,
    /// Position inside the bucket's vector (for O(1) swap-remove).
    pos: u32,
    /// Bumped each time the slot is handed out, so a handle to an earlier
    /// op in this slot is stale.
    generation: u32,
}

/// What a bucket stores per op: the deadline and payload travel with the
/// slot index, so a cascade reads the bucket's vector sequentially and only
/// writes each demoted op's slot (its new bucket and position).
#[derive(Debug)]
struct BucketEntry<T> {
    deadline_ms: i64,
    index: u32,
    /// The slot's generation for this op (fills padding), so expiry can
    /// build the op's handle without reading the slot.
    generation: u32,
    payload: T,
}

#[derive(Debug)]
struct Bucket<T> {
    /// Expiration of the round this bucket currently holds; -1 when unused.
    expiration_ms: i64,
    items: Vec<BucketEntry<T>>,
    /// Chunk that ops inserted into this bucket's current round take their
    /// slots from (`NO_CHUNK`: none yet), and how many it has handed out
    /// (`CHUNK` when there is none, so one compare covers both).
    open_chunk: u32,
    open_fill: u32,
    /// Live bits of the open chunk. They live here, next to `open_fill`,
    /// while the chunk is open (all its live ops are in this bucket's
    /// round, so only this bucket's inserts and cancels change them) and
    /// move to the chunk's bookkeeping when it closes: park and cancel touch
    /// no chunk bookkeeping.
    open_live: u64,
    /// Expiration of the round the open chunk serves (a bucket emptied by
    /// cancellation keeps filling it if ops for the same round come back).
    open_round_ms: i64,
}

/// A run of `CHUNK` consecutive slab slots. Liveness of a closed chunk's
/// slots is one bit per slot here rather than in the slot, so an op
/// expiring touches this small array (16 bytes per 64 ops) instead of the
/// slab.
#[derive(Debug, Clone, Copy, Default)]
struct Chunk {
    /// Bit `i` set iff slot `i` of this (closed) chunk holds a live op;
    /// 0 while open (the opening bucket's `open_live` has the bits).
    live: u64,
    /// A bucket is handing out this chunk's slots.
    open: bool,
}

#[derive(Debug)]
struct Level {
    tick_ms: i64,
    interval_ms: i64,
    current_time_ms: i64,
    /// Last deadline this level's window holds: `current_time_ms +
    /// interval_ms - 1`, saturated (`i64::MAX` once the interval saturates,
    /// the level that holds everything), so locating an op's level is one
    /// compare per level.
    last_ms: i64,
    /// `current_time_ms / tick_ms` and that modulo `WHEEL_SIZE`, kept so the
    /// hot paths need no division.
    current_id: i64,
    current_slot: u32,
    /// `ceil(2^64 / tick_ms)` when `1 < tick_ms < 2^32`, else 0: then
    /// `floor(rel / tick_ms)` is the high half of `rel * magic` for every
    /// `rel < 2^32` (Lemire, Kaser & Kurz 2019, "Faster remainder by direct
    /// computation"), one multiply instead of a divide.
    magic: u64,
    /// `1 / tick_ms`, to estimate quotients beyond the `magic` range.
    inv_tick: f64,
    /// Bit `s` set iff bucket `s` of this level is non-empty.
    occupied: u64,
}

impl Level {
    fn new(tick_ms: i64, start_ms: i64) -> Self {
        let current_id = start_ms.div_euclid(tick_ms);
        let interval_ms = tick_ms.saturating_mul(WHEEL_SIZE as i64);
        Self {
            tick_ms,
            interval_ms,
            current_time_ms: current_id * tick_ms,
            last_ms: Self::last_of(current_id * tick_ms, interval_ms),
            current_id,
            current_slot: current_id.rem_euclid(WHEEL_SIZE as i64) as u32,
            magic: if tick_ms > 1 && tick_ms < 1 << 32 {
                (u64::MAX / tick_ms as u64) + 1
            } else {
                0
            },
            inv_tick: 1.0 / tick_ms as f64,
            occupied: 0,
        }
    }

    fn last_of(current_time_ms: i64, interval_ms: i64) -> i64 {
        if interval_ms == i64::MAX {
            i64::MAX
        } else {
            current_time_ms.saturating_add(interval_ms - 1)
        }
    }

    /// `floor(rel / tick_ms)` for `0 <= rel` within this level's window (at
    /// most ~20 ticks), with no `idiv`: a multiply-high for the usual
    /// levels, else a float estimate corrected exactly.
    fn ticks_in(&self, rel: i64) -> i64 {
        if self.tick_ms == 1 {
            return rel;
        }
        if self.magic != 0 && rel < 1 << 32 {
            return ((rel as u128 * self.magic as u128) >> 64) as i64;
        }
        let tick = self.tick_ms;
        // A product that overflows is certainly above `rel`.
        let above = |q: i64| q.checked_mul(tick).is_none_or(|p| p > rel);
        let mut q = (rel as f64 * self.inv_tick) as i64;
        while q > 0 && above(q) {
            q -= 1;
        }
        while !above(q + 1) {
            q += 1;
        }
        q
    }

    fn advance_to(&mut self, time_ms: i64) {
        if time_ms < self.current_time_ms.saturating_add(self.tick_ms) {
            return;
        }
        let id = if self.tick_ms == 1 {
            time_ms
        } else {
            time_ms.div_euclid(self.tick_ms)
        };
        self.current_id = id;
        self.current_time_ms = id * self.tick_ms;
        self.last_ms = Self::last_of(self.current_time_ms, self.interval_ms);
        self.current_slot = id.rem_euclid(WHEEL_SIZE as i64) as u32;
    }
}

/// A hierarchical timing wheel holding payloads `T`.
#[derive(Debug)]
pub struct TimingWheel<T> {
    tick_ms: i64,
    levels: Vec<Level>,
    /// `levels.len() * wheel_size` buckets, level-major.
    buckets: Vec<Bucket<T>>,
    slots: Vec<Slot>,
    /// Per-chunk bookkeeping: slab slots `c * CHUNK .. (c + 1) * CHUNK`.
    chunks: Vec<Chunk>,
    /// Chunks with no live slot that no bucket is filling: reusable.
    free_chunks: Vec<u32>,
    /// Reused by cascades so flushing a bucket allocates nothing.
    spare: Vec<BucketEntry<T>>,
    len: usize,
}

impl<T> TimingWheel<T> {
    /// A wheel with Kafka's purgatory geometry (1 ms × 20) whose clock starts
    /// at `start_ms`.
    pub fn new(start_ms: i64) -> Self {
        Self::with_tick(DEFAULT_TICK_MS, start_ms)
    }

    pub fn with_tick(tick_ms: i64, start_ms: i64) -> Self {
        assert!(tick_ms > 0, "timing wheel tick must be positive");
        let mut wheel = Self {
            tick_ms,
            levels: Vec::new(),
            buckets: Vec::new(),
            slots: Vec::new(),
            chunks: Vec::new(),
            free_chunks: Vec::new(),
            spare: Vec::new(),
            len: 0,
        };
        wheel.push_level(tick_ms, start_ms);
        wheel
    }

    fn push_level(&mut self, tick_ms: i64, start_ms: i64) {
        self.levels.push(Level::new(tick_ms, start_ms));
        for _ in 0..WHEEL_SIZE {
            self.buckets.push(Bucket {
                expiration_ms: -1,
                items: Vec::new(),
                open_chunk: NO_CHUNK,
                open_fill: CHUNK,
                open_live: 0,
                open_round_ms: -1,
            });
        }
    }

    /// Number of entries waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Number of levels created so far (1 + overflow wheels).
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// The wheel's clock (level 0's current time, a multiple of `tick_ms`).
    pub fn current_time_ms(&self) -> i64 {
        self.levels[0].current_time_ms
    }

    /// Schedules `payload` to expire at `deadline_ms`. A deadline at or before
    /// the wheel's clock is not rejected (Kafka's `add` returns false and the
    /// caller runs the task): it is placed in the current tick's bucket and
    /// comes out of the next [`advance`](Self::advance), which keeps the API
    /// to one path.
    #[inline]
    pub fn insert(&mut self, deadline_ms: i64, payload: T) -> TimerHandle {
        let (b, expiration) = self.locate(deadline_ms);
        let bucket = &self.buckets[b as usize];
        // `open_fill == CHUNK` also stands for "no open chunk", so the
        // common case (the bucket's chunk serves this round and has room)
        // is two compares.
        if bucket.open_fill >= CHUNK || bucket.open_round_ms != expiration {
            self.open_fresh_chunk(b, expiration);
        }
        // Disjoint borrows, so the compiler need not reload (and re-check)
        // the bucket after writing the slot.
        let Self {
            buckets,
            slots,
            levels,
            len,
            ..
        } = self;
        let bucket = &mut buckets[b as usize];
        let (c, fill) = (bucket.open_chunk, bucket.open_fill);
        debug_assert_eq!(bucket.open_live & (1 << fill), 0, "slot handed out twice");
        bucket.open_fill = fill + 1;
        bucket.open_live |= 1 << fill;
        let index = c * CHUNK + fill;
        if bucket.expiration_ms != expiration {
            debug_assert!(bucket.items.is_empty(), "bucket reused before it expired");
            bucket.expiration_ms = expiration;
            let (level, slot) = (b as usize / WHEEL_SIZE, b as usize % WHEEL_SIZE);
            levels[level].occupied |= 1 << slot;
        }
        let items = &mut bucket.items;
        let slot = &mut slots[index as usize];
        let generation = slot.generation.wrapping_add(1);
        *slot = Slot {
            bucket: b,
            pos: items.len() as u32,
            generation,
        };
        *len += 1;
        items.push(BucketEntry {
            deadline_ms,
            index,
            generation,
            payload,
        });
        // The chunk and the bucket vector fill in order: request their
        // lines a few inserts ahead.
        prefetch(items.as_ptr().wrapping_add(items.len() + ITEMS_AHEAD));
        prefetch(slots.as_ptr().wrapping_add((index + SLOTS_AHEAD) as usize));
        TimerHandle::new(index, generation)
    }

    /// Gives bucket `b` a fresh open chunk for its round expiring at
    /// `expiration_ms` (it starts a new round, or its chunk is full).
    #[cold]
    #[inline(never)]
    fn open_fresh_chunk(&mut self, b: u32, expiration_ms: i64) {
        self.close_open_chunk(b);
        let fresh = self.take_chunk();
        let bucket = &mut self.buckets[b as usize];
        bucket.open_chunk = fresh;
        bucket.open_fill = 0;
        bucket.open_round_ms = expiration_ms;
    }

    /// A chunk with no live slot, marked open: a freed one (most recently
    /// freed first, likely still cached) or a new one at the slab's end.
    #[allow(
        clippy::expect_used,
        reason = "chunk ids are bounded by the wheel's capacity check"
    )]
    fn take_chunk(&mut self) -> u32 {
        let c = match self.free_chunks.pop() {
            Some(c) => c,
            None => {
                let c = u32::try_from(self.chunks.len())
                    .ok()
                    .filter(|c| c.checked_mul(CHUNK).is_some_and(|i| i < NO_BUCKET))
                    .expect("timing wheel slab exceeds u32 slot indices");
                self.chunks.push(Chunk::default());
                self.slots.extend((0..CHUNK).map(|_| Slot {
                    bucket: NO_BUCKET,
                    pos: 0,
                    generation: 0,
                }));
                c
            }
        };
        self.chunks[c as usize].open = true;
        c
    }

    /// Bucket `b` stops handing out its open chunk (if any): the chunk's
    /// live bits move to its bookkeeping, and it becomes reusable as soon
    /// as it holds no live op.
    fn close_open_chunk(&mut self, b: u32) {
        let bucket = &mut self.buckets[b as usize];
        let c = std::mem::replace(&mut bucket.open_chunk, NO_CHUNK);
        let live = std::mem::take(&mut bucket.open_live);
        bucket.open_fill = CHUNK;
        if let Some(chunk) = self.chunks.get_mut(c as usize) {
            chunk.open = false;
            chunk.live = live;
            if live == 0 {
                self.free_chunk(c);
            }
        }
    }

    /// Makes empty, closed chunk `c` reusable.
    fn free_chunk(&mut self, c: u32) {
        self.free_chunks.push(c);
    }

    /// (global bucket index, bucket expiration) where `deadline` belongs,
    /// relative to the current clocks, creating overflow levels on demand.
    /// Overdue deadlines are clamped to the current tick.
    #[inline(always)]
    fn locate(&mut self, deadline: i64) -> (u32, i64) {
        let mut level = 0;
        loop {
            let Some(l) = self.levels.get(level) else {
                return self.locate_growing(deadline);
            };
            if deadline <= l.last_ms {
                // Overdue entries (rel < 0) are clamped to the current tick
                // so they land in the bucket that expires first.
                let rel = deadline.saturating_sub(l.current_time_ms).max(0);
                let q = l.ticks_in(rel);
                let mut slot = l.current_slot as usize + q as usize;
                if slot >= WHEEL_SIZE {
                    slot -= WHEEL_SIZE;
                }
                // No overflow: `q * tick <= rel`, and `current + rel` is
                // the deadline (or `rel` saturated because `current < 0`).
                let expiration = l.current_time_ms + q * l.tick_ms;
                return ((level * WHEEL_SIZE + slot) as u32, expiration);
            }
            level += 1;
        }
    }

    /// [`locate`](Self::locate) for a deadline beyond the top level's
    /// window: creates overflow levels (Kafka's `overflowWheel`) until one
    /// holds it. The interval saturates at `i64::MAX` (a level that holds
    /// every deadline), so this ends.
    #[cold]
    #[inline(never)]
    #[allow(
        clippy::expect_used,
        reason = "a wheel is created with one level and never loses it"
    )]
    fn locate_growing(&mut self, deadline: i64) -> (u32, i64) {
        loop {
            let top = self.levels.last().expect("a wheel has a level");
            if deadline <= top.last_ms {
                return self.locate(deadline);
            }
            let (interval, start) = (top.interval_ms, top.current_time_ms);
            self.push_level(interval, start);
        }
    }

    /// Re-inserts a demoted entry (its slot stays where it is).
    fn place(&mut self, entry: BucketEntry<T>) {
        let (b, expiration) = self.locate(entry.deadline_ms);
        self.add_to_bucket(b, entry, expiration);
    }

    fn add_to_bucket(&mut self, b: u32, entry: BucketEntry<T>, expiration_ms: i64) {
        let bucket = &mut self.buckets[b as usize];
        if bucket.expiration_ms != expiration_ms {
            debug_assert!(bucket.items.is_empty(), "bucket reused before it expired");
            bucket.expiration_ms = expiration_ms;
            let (level, slot) = (b as usize / WHEEL_SIZE, b as usize % WHEEL_SIZE);
            self.levels[level].occupied |= 1 << slot;
        }
        let slot = &mut self.slots[entry.index as usize];
        slot.bucket = b;
        slot.pos = bucket.items.len() as u32;
        bucket.items.push(entry);
        // Buckets fill in order too: warm the line a few pushes ahead.
        prefetch(
            bucket
                .items
                .as_ptr()
                .wrapping_add(bucket.items.len() + ITEMS_AHEAD),
        );
    }

    /// Frees slot `index` (already out of its bucket). Touches only the
    /// chunk's bookkeeping, not the slot.
    fn release(&mut self, index: u32) {
        let c = index / CHUNK;
        let chunk = &mut self.chunks[c as usize];
        let bit = 1 << (index % CHUNK);
        debug_assert_ne!(chunk.live & bit, 0, "released a free slot");
        chunk.live &= !bit;
        self.len -= 1;
        debug_assert!(
            !chunk.open,
            "an open chunk's op released through its bookkeeping"
        );
        if chunk.live == 0 {
            self.free_chunk(c);
        }
    }

    /// The slot of `handle`'s op if it is still waiting. A freed slot keeps
    /// its last bucket and position, but no entry there names it (entries
    /// exist only for live ops, and a live op's slot points at its entry),
    /// so the entry's index and generation decide without reading any
    /// liveness bookkeeping, and cancel then reads only what it removes.
    fn live_index(&self, handle: TimerHandle) -> Option<u32> {
        let index = u32::try_from(handle.index()).ok()?;
        let slot = self.slots.get(index as usize)?;
        let entry = self
            .buckets
            .get(slot.bucket as usize)?
            .items
            .get(slot.pos as usize)?;
        (entry.index == index && entry.generation == handle.generation()).then_some(index)
    }

    fn entry(&self, index: u32) -> &BucketEntry<T> {
        let Slot { bucket, pos, .. } = self.slots[index as usize];
        &self.buckets[bucket as usize].items[pos as usize]
    }

    /// Removes an entry before it expires, in O(1). `None` if the handle is
    /// stale (already expired or cancelled): this is what makes completion
    /// exactly-once.
    #[inline]
    pub fn cancel(&mut self, handle: TimerHandle) -> Option<T> {
        let index = self.live_index(handle)?;
        let Slot { bucket: b, pos, .. } = self.slots[index as usize];
        let bucket = &mut self.buckets[b as usize];
        let removed = bucket.items.swap_remove(pos as usize);
        debug_assert_eq!(removed.index, index);
        if let Some(moved) = bucket.items.get(pos as usize) {
            self.slots[moved.index as usize].pos = pos;
        } else if bucket.items.is_empty() {
            // Emptied by cancellation: the driver must not wake for it.
            bucket.expiration_ms = -1;
            self.levels[b as usize / WHEEL_SIZE].occupied &= !(1 << (b as usize % WHEEL_SIZE));
        }
        let (c, bit) = (index / CHUNK, index % CHUNK);
        if bucket.open_chunk == c {
            // Its chunk is still open (then this bucket opened it): only
            // the bucket's copy of the live bits changes. If the op took
            // the chunk's last handed-out slot (park, then complete at
            // once), that slot goes back, still cached, to the next insert
            // instead of using up the chunk; the slot's generation already
            // makes the old handle stale.
            bucket.open_live &= !(1 << bit);
            if bucket.open_fill == bit + 1 {
                bucket.open_fill = bit;
            }
            self.len -= 1;
        } else {
            self.release(index);
        }
        Some(removed.payload)
    }

    pub fn get(&self, handle: TimerHandle) -> Option<&T> {
        let index = self.live_index(handle)?;
        Some(&self.entry(index).payload)
    }

    pub fn get_mut(&mut self, handle: TimerHandle) -> Option<&mut T> {
        let index = self.live_index(handle)?;
        let Slot { bucket, pos, .. } = self.slots[index as usize];
        Some(&mut self.buckets[bucket as usize].items[pos as usize].payload)
    }

    pub fn contains(&self, handle: TimerHandle) -> bool {
        self.live_index(handle).is_some()
    }

    pub fn deadline_ms(&self, handle: TimerHandle) -> Option<i64> {
        let index = self.live_index(handle)?;
        Some(self.entry(index).deadline_ms)
    }

    /// Expiration of the earliest non-empty bucket: the driver arms its one
    /// timer there. Never later than the earliest deadline; equal to it for
    /// entries in level 0.
    pub fn next_deadline(&self) -> Option<i64> {
        self.next_bucket().map(|(exp, _)| exp)
    }

    /// (expiration, global bucket index) of the earliest non-empty bucket;
    /// ties go to the lower level. Each level's non-empty buckets all lie in
    /// its window `[current, current + interval)`, so the first set bit at or
    /// after the current slot (circularly) is that level's earliest bucket.
    fn next_bucket(&self) -> Option<(i64, u32)> {
        let size = WHEEL_SIZE as u32;
        let mut best: Option<(i64, u32)> = None;
        for (l, level) in self.levels.iter().enumerate() {
            if level.occupied == 0 {
                continue;
            }
            let start = level.current_slot;
            let ahead = level.occupied >> start;
            let offset = if ahead != 0 {
                ahead.trailing_zeros()
            } else {
                (size - start) + level.occupied.trailing_zeros()
            };
            let exp = (level.current_id + offset as i64).saturating_mul(level.tick_ms);
            if best.is_none_or(|(e, _)| exp < e) {
                let mut slot = start + offset;
                if slot >= size {
                    slot -= size;
                }
                best = Some((exp, l as u32 * size + slot));
            }
        }
        best
    }

    /// Advances the clock to `now_ms` and returns every entry whose deadline
    /// is `<= now_ms`, in bucket order (earliest tick first). Kafka's
    /// `SystemTimer.advanceClock`: pop each due bucket, move the clocks to its
    /// expiration, and re-insert its entries (demotion to a lower level, or
    /// expiry).
    pub fn advance(&mut self, now_ms: i64) -> Vec<Expired<T>> {
        let mut out = Vec::new();
        self.advance_into(now_ms, &mut out);
        out
    }

    /// [`advance`](Self::advance) appending to a caller-owned vector (no
    /// allocation on the hot path once `out` and the buckets have grown).
    pub fn advance_into(&mut self, now_ms: i64, out: &mut Vec<Expired<T>>) {
        while let Some((exp, b)) = self.next_bucket() {
            if exp > now_ms {
                break;
            }
            self.advance_clocks(exp);
            self.flush_bucket(b, out);
        }
        // Every bucket due by `now_ms` has been flushed, so moving the clocks
        // to `now_ms` keeps each level's window consistent and makes later
        // inserts land in the lowest possible level.
        self.advance_clocks(now_ms);
    }

    fn advance_clocks(&mut self, time_ms: i64) {
        for level in &mut self.levels {
            level.advance_to(time_ms);
        }
    }

    /// Empties due bucket `b` (the clocks already stand at its expiration):
    /// its entries expire or are demoted to a lower level.
    fn flush_bucket(&mut self, b: u32, out: &mut Vec<Expired<T>>) {
        // Swap in the spare (empty) vector so the bucket keeps an allocation
        // for its next round and the cascade below allocates nothing.
        let mut items = std::mem::replace(
            &mut self.buckets[b as usize].items,
            std::mem::take(&mut self.spare),
        );
        self.buckets[b as usize].expiration_ms = -1;
        // The round is over: later inserts here belong to the next one.
        self.close_open_chunk(b);
        let level = b as usize / WHEEL_SIZE;
        self.levels[level].occupied &= !(1 << (b as usize % WHEEL_SIZE));
        out.reserve(items.len());
        // A level-0 bucket is one tick: everything in it is due (its
        // deadlines lie in [expiration, expiration + tick), or overdue).
        let due_before = if level == 0 {
            i64::MAX
        } else {
            self.levels[0].current_time_ms + self.tick_ms
        };
        let mut drain = items.drain(..);
        while let Some(e) = drain.next() {
            // The bucket is read in order but each entry's chunk bookkeeping
            // (and, when demoted, its slot) is elsewhere: request those some
            // entries ahead while this one is handled.
            if let Some(ahead) = drain.as_slice().get(PREFETCH_AHEAD) {
                prefetch(
                    self.chunks
                        .as_ptr()
                        .wrapping_add((ahead.index / CHUNK) as usize),
                );
                if level > 0 {
                    self.prefetch_slot(ahead.index);
                }
            }
            if e.deadline_ms < due_before {
                self.expire(e, out);
            } else {
                self.place(e);
            }
        }
        drop(drain);
        self.spare = items;
    }

    fn expire(&mut self, e: BucketEntry<T>, out: &mut Vec<Expired<T>>) {
        self.release(e.index);
        out.push(Expired {
            handle: TimerHandle::new(e.index, e.generation),
            deadline_ms: e.deadline_ms,
            payload: e.payload,
        });
    }

    /// Hints the CPU to load slot `index`'s cache line. Only a hint: no
    /// effect on behaviour, and a no-op off x86_64.
    #[inline(always)]
    fn prefetch_slot(&self, index: u32) {
        // `wrapping_add` keeps the address computation defined even for an
        // index past the end.
        prefetch(self.slots.as_ptr().wrapping_add(index as usize));
    }

    /// Chunk bookkeeping matches the slab: live bits exactly the slots of
    /// the entries in buckets, open chunks owned by exactly one bucket, and
    /// the free chunks exactly the empty closed ones.
    fn check_chunks(&self) {
        assert_eq!(self.slots.len(), self.chunks.len() * CHUNK as usize);
        let mut opened_by = vec![0usize; self.chunks.len()];
        let mut opener = vec![NO_BUCKET; self.chunks.len()];
        for (b, bucket) in self.buckets.iter().enumerate() {
            if bucket.open_chunk != NO_CHUNK {
                opened_by[bucket.open_chunk as usize] += 1;
                opener[bucket.open_chunk as usize] = b as u32;
                assert!(bucket.open_fill <= CHUNK, "open chunk overfilled");
                let handed_out = u64::MAX.checked_shr(64 - bucket.open_fill).unwrap_or(0);
                assert_eq!(bucket.open_live & !handed_out, 0, "live bit past fill");
            } else {
                assert_eq!(bucket.open_fill, CHUNK, "bucket {b} fill without chunk");
                assert_eq!(bucket.open_live, 0, "bucket {b} live bits without chunk");
            }
        }
        let mut live = vec![0u64; self.chunks.len()];
        for (b, bucket) in self.buckets.iter().enumerate() {
            for e in &bucket.items {
                let c = (e.index / CHUNK) as usize;
                assert!(
                    opener[c] == NO_BUCKET || opener[c] == b as u32,
                    "op {} of open chunk {c} outside its bucket",
                    e.index
                );
            }
        }
        for e in self.buckets.iter().flat_map(|b| &b.items) {
            let (c, bit) = ((e.index / CHUNK) as usize, 1u64 << (e.index % CHUNK));
            assert_eq!(live[c] & bit, 0, "slot {} in two entries", e.index);
            assert_eq!(
                self.slots[e.index as usize].generation, e.generation,
                "slot {} generation",
                e.index
            );
            live[c] |= bit;
        }
        let mut free = vec![false; self.chunks.len()];
        for &c in &self.free_chunks {
            assert!(!free[c as usize], "chunk {c} freed twice");
            free[c as usize] = true;
        }
        for (c, chunk) in self.chunks.iter().enumerate() {
            let bits = match opener[c] {
                NO_BUCKET => chunk.live,
                b => {
                    assert_eq!(chunk.live, 0, "open chunk {c} has bookkeeping bits");
                    self.buckets[b as usize].open_live
                }
            };
            assert_eq!(bits, live[c], "chunk {c} live bits");
            assert_eq!(chunk.open, opened_by[c] == 1, "chunk {c} open flag");
            assert!(opened_by[c] <= 1, "chunk {c} opened by several buckets");
            assert_eq!(
                free[c],
                !chunk.open && chunk.live == 0,
                "chunk {c} free list"
            );
        }
    }

    /// Checks the wheel's structural invariants (tests and debug builds).
    pub fn check_invariants(&self) {
        let mut live = 0;
        for (b, bucket) in self.buckets.iter().enumerate() {
            let level = &self.levels[b / WHEEL_SIZE];
            let bit = level.occupied & (1 << (b % WHEEL_SIZE)) != 0;
            assert_eq!(
                bit,
                !bucket.items.is_empty(),
                "bucket {b} occupancy bit wrong"
            );
            if bit {
                // The bucket's round lies in its level's window, which is
                // what next_bucket relies on.
                assert!(
                    bucket.expiration_ms >= level.current_time_ms
                        && bucket.expiration_ms
                            < level.current_time_ms.saturating_add(level.interval_ms),
                    "bucket {b} expiration {} outside its level window",
                    bucket.expiration_ms
                );
            }
            for (pos, e) in bucket.items.iter().enumerate() {
                let index = e.index;
                let s = &self.slots[index as usize];
                assert_eq!(s.bucket as usize, b, "slot {index} in wrong bucket");
                assert_eq!(s.pos as usize, pos, "slot {index} has wrong position");
                assert!(
                    e.deadline_ms.max(level.current_time_ms) < bucket.expiration_ms + level.tick_ms,
                    "slot {index} deadline beyond its bucket"
                );
                live += 1;
            }
        }
        assert_eq!(live, self.len, "len does not match bucket contents");
        self.check_chunks();
        assert!(self.spare.is_empty(), "spare vector holds entries");
    }
}

/// Hints the CPU to load the cache line at `p`. Only a hint: no effect on
/// behaviour, and a no-op off x86_64.
#[inline(always)]
fn prefetch<E>(p: *const E) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `prefetcht0` needs SSE, part of the x86_64 baseline, and
        // only hints the cache: it never faults or reads memory into the
        // program, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests;
