//! Controller election over the store (Kafka 3.9
//! `KafkaController.elect` / `maybeResign` and
//! `KafkaZkClient.registerControllerAndIncrementControllerEpoch`).
//!
//! - [`Election`] `[pure]`: what a broker knows of the active controller
//!   and whether it is the controller, and what each observation makes it
//!   do. No I/O, no clock: the driver (`controller::zk_mode`) feeds it.
//! - [`register_controller_and_increment_epoch`], [`read_controller_id`]:
//!   the two store operations an election needs.
//!
//! Every broker watches `/controller`. When it is absent a broker tries
//! `multi(create /controller (ephemeral), set /controller_epoch = e + 1 at
//! the version it read)`; the winner's `/controller_epoch` zkVersion then
//! conditions every write it makes as controller, so a deposed controller's
//! writes fail (`check(/controller_epoch, zkVersion)`).

use crate::types::{BrokerId, ControllerEpoch};
use crate::zk::paths::{self, ControllerZNode};
use crate::zk::store::{CreateMode, MetadataStore, Op, OpResult, StoreError};

/// Kafka's `KafkaController.InitialControllerEpoch` (0): `/controller_epoch`
/// is created holding it, so the first elected controller has epoch 1.
pub const INITIAL_CONTROLLER_EPOCH: ControllerEpoch = ControllerEpoch(0);

/// The epoch a controller won and the zkVersion of `/controller_epoch`
/// that fences its writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Won {
    pub epoch: ControllerEpoch,
    pub epoch_zk_version: i32,
}

/// Why an election attempt did not make this broker controller.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ElectionError {
    /// Another broker registered first, or the epoch moved under us
    /// (Kafka's ControllerMovedException).
    #[error("controller moved to another broker")]
    Moved,
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("corrupt {path}: {why}")]
    Corrupt { path: &'static str, why: String },
}

/// The active controller named by `/controller`, if any. A payload that
/// does not decode counts as a controller whose id is unknown (-1 is not
/// a broker): it is logged with its path and treated as absent only once
/// the node goes (Kafka's `getControllerId` would fail the same read).
pub async fn read_controller_id<S: MetadataStore>(
    store: &S,
) -> Result<Option<BrokerId>, ElectionError> {
    match store.get(paths::CONTROLLER).await {
        Ok((data, _)) => decode_controller(&data).map(Some),
        Err(StoreError::NoNode(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn decode_controller(data: &[u8]) -> Result<BrokerId, ElectionError> {
    ControllerZNode::decode(data)
        .map(|z| z.brokerid)
        .map_err(|e| ElectionError::Corrupt {
            path: paths::CONTROLLER,
            why: e.0,
        })
}

/// `/controller_epoch` and its zkVersion, created holding
/// [`INITIAL_CONTROLLER_EPOCH`] when absent (`maybeCreateControllerEpochZNode`).
async fn current_epoch<S: MetadataStore>(
    store: &S,
) -> Result<(ControllerEpoch, i32), ElectionError> {
    loop {
        match store.get(paths::CONTROLLER_EPOCH).await {
            Ok((data, stat)) => {
                let epoch =
                    paths::decode_controller_epoch(&data).map_err(|e| ElectionError::Corrupt {
                        path: paths::CONTROLLER_EPOCH,
                        why: e.0,
                    })?;
                return Ok((epoch, stat.version));
            }
            Err(StoreError::NoNode(_)) => {}
            Err(e) => return Err(e.into()),
        }
        let initial = paths::encode_controller_epoch(INITIAL_CONTROLLER_EPOCH);
        match store
            .create(paths::CONTROLLER_EPOCH, &initial, CreateMode::Persistent)
            .await
        {
            Ok(_) => return Ok((INITIAL_CONTROLLER_EPOCH, 0)),
            // Another broker created it first: read theirs.
            Err(StoreError::NodeExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Try to become controller: `multi(create /controller ephemeral, set
/// /controller_epoch epoch+1 at the version read)`. On NodeExists or
/// BadVersion the attempt may still have been ours (a retried request):
/// it was if `/controller` names us and the epoch is the one we wrote
/// (Kafka's `checkControllerAndEpoch`); otherwise [`ElectionError::Moved`].
pub async fn register_controller_and_increment_epoch<S: MetadataStore>(
    store: &S,
    me: BrokerId,
    now_ms: i64,
) -> Result<Won, ElectionError> {
    let (epoch, version) = current_epoch(store).await?;
    let next = ControllerEpoch(epoch.0 + 1);
    let ops = vec![
        Op::Create {
            path: paths::CONTROLLER.to_string(),
            data: ControllerZNode::new(me, now_ms).encode(),
            mode: CreateMode::Ephemeral,
        },
        Op::Set {
            path: paths::CONTROLLER_EPOCH.to_string(),
            data: paths::encode_controller_epoch(next),
            expected_version: Some(version),
        },
    ];
    match store.multi(ops).await {
        Ok(results) => match results.get(1) {
            Some(OpResult::Set(stat)) => Ok(Won {
                epoch: next,
                epoch_zk_version: stat.version,
            }),
            _ => Err(StoreError::Io("multi answered without the set's stat".into()).into()),
        },
        Err(StoreError::NodeExists(_)) | Err(StoreError::BadVersion(_)) => {
            if read_controller_id(store).await? != Some(me) {
                return Err(ElectionError::Moved);
            }
            let (now_epoch, now_version) = current_epoch(store).await?;
            if now_epoch == next {
                Ok(Won {
                    epoch: next,
                    epoch_zk_version: now_version,
                })
            } else {
                Err(ElectionError::Moved)
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// One broker's view of the election (`KafkaController.activeControllerId`
/// and `isActive`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Election {
    me: BrokerId,
    /// What `/controller` said last; `None` when absent or unknown.
    active: Option<BrokerId>,
    /// Set while this broker is the controller.
    won: Option<Won>,
}

/// What the driver must do after an observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Nothing,
    /// `/controller` is absent: run [`register_controller_and_increment_epoch`].
    TryElect,
    /// This broker just won: load the context, register the controller's
    /// watches, send UpdateMetadata (`onControllerFailover`).
    Failover(Won),
    /// This broker was controller and is no longer: unregister watches,
    /// stop the state machines, drop the queues (`onControllerResignation`).
    Resign,
}

impl Election {
    pub fn new(me: BrokerId) -> Self {
        Self {
            me,
            active: None,
            won: None,
        }
    }

    pub fn me(&self) -> BrokerId {
        self.me
    }

    /// The active controller as last seen (`-1` on the wire when `None`).
    pub fn active_controller(&self) -> Option<BrokerId> {
        self.active
    }

    pub fn is_controller(&self) -> bool {
        self.won.is_some()
    }

    /// The epoch won, while controller.
    pub fn won(&self) -> Option<Won> {
        self.won
    }

    /// `/controller` read (at start-up, or after its watch fired).
    /// `Some(id)`: a controller exists — if it is not us and we were
    /// controller, resign (`maybeResign`). `None`: resign first if we
    /// were controller, then elect (`Reelect`).
    pub fn observe(&mut self, controller: Option<BrokerId>) -> Step {
        self.active = controller;
        match (controller, self.won) {
            (Some(id), Some(_)) if id == self.me => Step::Nothing,
            (Some(_), Some(_)) | (None, Some(_)) => {
                self.won = None;
                Step::Resign
            }
            (Some(_), None) => Step::Nothing,
            (None, None) => Step::TryElect,
        }
    }

    /// The outcome of [`Step::TryElect`].
    pub fn elected(&mut self, outcome: Result<Won, ElectionError>) -> Step {
        match outcome {
            Ok(won) => {
                self.active = Some(self.me);
                self.won = Some(won);
                Step::Failover(won)
            }
            // Someone else won: the /controller watch brings the id.
            Err(_) => Step::Nothing,
        }
    }

    /// A controller write failed its `/controller_epoch` check, or the
    /// session expired: whatever this broker believed, it is not the
    /// controller now (Kafka resigns before anything else).
    pub fn lost(&mut self) -> Step {
        self.active = None;
        match self.won.take() {
            Some(_) => Step::Resign,
            None => Step::Nothing,
        }
    }
}

#[cfg(test)]
mod tests;
