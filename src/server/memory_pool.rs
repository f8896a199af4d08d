//! `[pure]` The request memory pool of KIP-72 (`queued.max.request.bytes`):
//! every request a connection is reading or has read and not yet handled
//! holds a [`Lease`] of its size; while the pool is used up, connections
//! read no further request (reading pauses, no connection is dropped) until
//! handled requests give their leases back.
//!
//! Kafka's network pool is a non-strict `SimpleMemoryPool`
//! (`SocketServer`: `new SimpleMemoryPool(queuedMaxBytes,
//! socketRequestMaxBytes, false, ...)`): an allocation succeeds while any
//! memory is left, even if it is larger than what is left, so one request
//! of any allowed size always gets through and partly read requests never
//! wait on each other. `queued.max.request.bytes` <= 0 (Kafka's default
//! -1) means no pool. One pool per broker, shared by its shards (one
//! atomic operation per request).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

#[derive(Debug)]
pub struct MemoryPool {
    /// `queued.max.request.bytes`; <= 0: unbounded.
    capacity: i64,
    /// What is left; may go below zero (non-strict allocation).
    available: AtomicI64,
}

impl MemoryPool {
    pub fn new(capacity: i64) -> Self {
        Self {
            capacity,
            available: AtomicI64::new(capacity.max(0)),
        }
    }

    pub fn is_bounded(&self) -> bool {
        self.capacity > 0
    }

    /// A lease of `size` bytes, or `None` while the pool is used up
    /// (Kafka's `tryAllocate` with `strict = false`: succeeds when at
    /// least one byte is left).
    pub fn try_allocate(self: &Arc<Self>, size: usize) -> Option<Lease> {
        if !self.is_bounded() {
            return Some(Lease {
                pool: None,
                size: 0,
            });
        }
        let size = i64::try_from(size).unwrap_or(i64::MAX);
        let mut left = self.available.load(Ordering::Relaxed);
        loop {
            if left < 1 {
                return None;
            }
            match self.available.compare_exchange_weak(
                left,
                left.saturating_sub(size),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(Lease {
                        pool: Some(self.clone()),
                        size,
                    })
                }
                Err(now) => left = now,
            }
        }
    }

    /// Bytes currently leased.
    pub fn used(&self) -> i64 {
        if self.is_bounded() {
            self.capacity - self.available.load(Ordering::Relaxed)
        } else {
            0
        }
    }
}

/// A request's share of the pool, given back when dropped (Kafka's
/// `RequestChannel.Request.releaseBuffer` once the request was handled).
#[derive(Debug)]
pub struct Lease {
    pool: Option<Arc<MemoryPool>>,
    size: i64,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(pool) = &self.pool {
            pool.available.fetch_add(self.size, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unbounded_pool_always_leases_and_counts_nothing() {
        let pool = Arc::new(MemoryPool::new(-1));
        let leases: Vec<Lease> = (0..10)
            .map(|_| pool.try_allocate(1 << 30).unwrap())
            .collect();
        assert_eq!(pool.used(), 0);
        drop(leases);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn a_bounded_pool_leases_while_anything_is_left_and_takes_leases_back() {
        let pool = Arc::new(MemoryPool::new(1000));
        let a = pool.try_allocate(600).expect("600 of 1000");
        // Non-strict: 400 left, a 600-byte request still gets through.
        let b = pool
            .try_allocate(600)
            .expect("any request while bytes are left");
        assert_eq!(pool.used(), 1200);
        assert!(pool.try_allocate(1).is_none(), "used up: reading pauses");
        drop(a);
        assert_eq!(pool.used(), 600);
        let c = pool.try_allocate(10).expect("400 left again");
        drop((b, c));
        assert_eq!(pool.used(), 0);
    }
}
