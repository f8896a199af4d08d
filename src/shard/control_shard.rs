//! `[drv]` The control shard's own part (ARCHITECTURE.md §7): the
//! [`Controller`] it owns, and the requests data shards send it:
//! [`ControlRequest`]. Every change the controller makes is followed by a
//! fresh snapshot published to every data shard (`router::publish`) before
//! the answer goes back.

use std::cell::{Cell, RefCell};

use glommio::sync::Semaphore;

use crate::controller::requests::{AdminRequest, AdminResponse};
use crate::controller::Controller;
use crate::metadata::update_metadata::{MetadataCache, UpdateMetadata};
use crate::metadata::Snapshot;
use crate::protocol::ErrorCode;

/// Requests to the control shard.
#[derive(Debug)]
pub enum ControlRequest {
    /// Metadata named topics that do not exist and may be auto-created
    /// (`auto.create.topics.enable`).
    AutoCreateTopics { topics: Vec<String> },
    /// A topic admin operation or InitProducerId; answered after the
    /// resulting snapshot reached every data shard.
    Admin(Box<AdminRequest>),
    /// A controller's UpdateMetadata, received on a data shard: applied to
    /// the [`MetadataCache`] and published; answered once every data shard
    /// shows it.
    UpdateMetadata(Box<UpdateMetadata>),
}

/// Answers to [`ControlRequest`]s.
#[derive(Debug, PartialEq)]
pub enum ControlResponse {
    /// Per topic: NONE once created, or why not.
    AutoCreated { results: Vec<(String, ErrorCode)> },
    /// Per-item results of an `Admin` request.
    Admin(Box<AdminResponse>),
    /// NONE, STALE_BROKER_EPOCH or STALE_CONTROLLER_EPOCH.
    UpdateMetadata(ErrorCode),
}

/// The control shard's part of its context.
pub struct ControlShard {
    pub controller: Controller,
    /// One admin operation at a time: store updates and the publication
    /// that follows must not interleave (mesh requests run concurrently).
    pub serial: Semaphore,
    /// What UpdateMetadata said (Kafka's ZkMetadataCache), folded into
    /// every snapshot published from here.
    pub metadata_cache: RefCell<MetadataCache>,
    /// The controller's snapshot last published, before the overlay: an
    /// UpdateMetadata republishes it with the new overlay.
    last_base: RefCell<Option<Snapshot>>,
    /// Version of the last snapshot published: publications are numbered
    /// here, since the controller and UpdateMetadata both publish.
    published_version: Cell<u64>,
}

impl ControlShard {
    pub fn new(controller: Controller) -> Self {
        Self {
            controller,
            serial: Semaphore::new(1),
            metadata_cache: RefCell::new(MetadataCache::new()),
            last_base: RefCell::new(None),
            published_version: Cell::new(0),
        }
    }

    /// The snapshot to publish for the controller's `base`: the
    /// UpdateMetadata overlay for clients of `listener_name`, numbered past
    /// every earlier publication. `base` is kept for the next
    /// [`Self::apply_update_metadata`].
    pub fn prepare_publication(&self, base: Snapshot, listener_name: &str) -> Snapshot {
        let mut snapshot = self
            .metadata_cache
            .borrow()
            .overlay(base.clone(), listener_name);
        let version = snapshot.version.max(self.published_version.get() + 1);
        self.published_version.set(version);
        snapshot.version = version;
        *self.last_base.borrow_mut() = Some(base);
        snapshot
    }

    /// Apply `req` (the broker epoch fence uses the controller's
    /// registration); `Some(base)` to republish when it was accepted.
    /// `current` is the snapshot shown now, used when nothing was
    /// published from here yet.
    pub fn apply_update_metadata(
        &self,
        req: UpdateMetadata,
        current: &Snapshot,
    ) -> (ErrorCode, Option<Snapshot>) {
        let error = self
            .metadata_cache
            .borrow_mut()
            .on_update_metadata(req, self.controller.broker_epoch());
        if error != ErrorCode::NONE {
            return (error, None);
        }
        let base = self
            .last_base
            .borrow()
            .clone()
            .unwrap_or_else(|| current.clone());
        (error, Some(base))
    }
}
