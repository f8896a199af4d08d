//! `[drv]` The control shard's own part (ARCHITECTURE.md §7): the
//! [`Controller`] it owns, and the requests data shards send it:
//! [`ControlRequest`]. Every change the controller makes is followed by a
//! fresh snapshot published to every data shard (`router::publish`) before
//! the answer goes back.

use glommio::sync::Semaphore;

use crate::controller::requests::{AdminRequest, AdminResponse};
use crate::controller::Controller;
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
}

/// Answers to [`ControlRequest`]s.
#[derive(Debug, PartialEq)]
pub enum ControlResponse {
    /// Per topic: NONE once created, or why not.
    AutoCreated { results: Vec<(String, ErrorCode)> },
    /// Per-item results of an `Admin` request.
    Admin(Box<AdminResponse>),
}

/// The control shard's part of its context.
pub struct ControlShard {
    pub controller: Controller,
    /// One admin operation at a time: store updates and the publication
    /// that follows must not interleave (mesh requests run concurrently).
    pub serial: Semaphore,
}

impl ControlShard {
    pub fn new(controller: Controller) -> Self {
        Self {
            controller,
            serial: Semaphore::new(1),
        }
    }
}
