//! `[drv]` SCRAM credentials on the control shard (Kafka 3.9's
//! `CredentialProvider` fed by `ZkConfigManager`, and `ZkAdminManager`'s
//! Describe/AlterUserScramCredentials): every `/config/users/<u>` config's
//! SCRAM keys read from the metadata store at start and again on a
//! `users/…` change notification (`shard::control::config_changes`),
//! folded into every publication so each shard checks logins against its
//! own copy. The rules are `metadata::scram_credentials` and `sasl::scram`
//! [pure].

use std::collections::BTreeMap;
use std::sync::Arc;

use super::client_quotas::store_entity_config;
use super::ControlShard;
use crate::config::sasl::SaslMechanism;
use crate::metadata::quotas::{desanitize, sanitize};
use crate::metadata::scram_credentials::{ScramCredentials, SCRAM_MECHANISMS};
use crate::protocol::ErrorCode;
use crate::sasl::scram::{self, MAX_ITERATIONS, MIN_ITERATIONS};
use crate::zk::paths::{self, ConfigZNode};
use crate::zk::store::{MetadataStore, StoreError};

/// An upsertion's (iterations, salt, salted password).
pub type Upsert = (i32, Vec<u8>, Vec<u8>);

/// One AlterUserScramCredentials change: `None` upsert = deletion.
#[derive(Debug, Clone)]
pub struct ScramAlteration {
    pub user: String,
    pub mechanism: i8,
    pub upsert: Option<Upsert>,
}

/// A per-user result: error code and message (NONE = done).
pub type ScramResult = (String, ErrorCode, Option<String>);

/// A described user: name, error, message, [(mechanism type, iterations)].
pub type ScramDescription = (String, ErrorCode, Option<String>, Vec<(i8, i32)>);

/// One valid change of a user's credentials.
type Change = (SaslMechanism, Option<Upsert>);

impl ControlShard {
    /// The SCRAM credentials every publication carries.
    pub fn scram_credentials(&self) -> Arc<ScramCredentials> {
        self.scram_credentials.borrow().clone()
    }

    /// Read every user's SCRAM credentials from the store again; whether
    /// they changed.
    pub async fn reload_scram_credentials(&self) -> bool {
        let loaded = load(self.admin.store()).await;
        let changed = *self.scram_credentials.borrow().as_ref() != loaded;
        if changed {
            *self.scram_credentials.borrow_mut() = Arc::new(loaded);
        }
        changed
    }

    /// DescribeUserScramCredentials, read from the store as Kafka's
    /// `ZkAdminManager.describeUserScramCredentials` does: `None` = every
    /// user with a SCRAM key. Per user: (name, error, message, [(type,
    /// iterations)]).
    pub async fn describe_user_scram_credentials(
        &self,
        users: Option<Vec<String>>,
    ) -> Vec<ScramDescription> {
        let store = self.admin.store();
        let stored = load(store).await;
        let described = |user: &str| -> Vec<(i8, i32)> {
            SCRAM_MECHANISMS
                .iter()
                .filter_map(|m| {
                    let c = stored.get(user, *m)?;
                    Some((scram::mechanism_type(*m)?, c.iterations))
                })
                .collect()
        };
        match users {
            None => stored
                .users()
                .map(|(u, _)| (u.clone(), ErrorCode::NONE, None, described(u)))
                .collect(),
            Some(names) => {
                let mut out = Vec::new();
                for (i, name) in names.iter().enumerate() {
                    let infos = described(name);
                    let (code, message) = if names[..i].contains(name)
                        || names[i + 1..].contains(name)
                    {
                        (
                            ErrorCode::DUPLICATE_RESOURCE,
                            Some(format!("Cannot describe SCRAM credentials for the same user twice in a single request: {name}")),
                        )
                    } else if infos.is_empty() {
                        (
                            ErrorCode::RESOURCE_NOT_FOUND,
                            Some(format!(
                                "Attempt to describe a user credential that does not exist: {name}"
                            )),
                        )
                    } else {
                        (ErrorCode::NONE, None)
                    };
                    let infos = if code == ErrorCode::NONE {
                        infos
                    } else {
                        Vec::new()
                    };
                    out.push((name.clone(), code, message, infos));
                }
                out
            }
        }
    }

    /// AlterUserScramCredentials (`ZkAdminManager.alterUserScramCredentials`):
    /// each alteration checked, then every user's valid changes written to
    /// `/config/users/<u>` (foreign keys kept) with a change notification.
    /// The caller reloads and republishes.
    pub async fn alter_user_scram_credentials(
        &self,
        alterations: Vec<ScramAlteration>,
    ) -> Vec<ScramResult> {
        let store = self.admin.store();
        let current = load(store).await;
        let mut results: BTreeMap<String, (ErrorCode, Option<String>)> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        let mut valid: BTreeMap<String, Vec<Change>> = BTreeMap::new();
        for (i, a) in alterations.iter().enumerate() {
            if !order.contains(&a.user) {
                order.push(a.user.clone());
            }
            if results.contains_key(&a.user) {
                continue; // the user's first error stands
            }
            let twice = alterations
                .iter()
                .enumerate()
                .any(|(j, b)| j != i && b.user == a.user && b.mechanism == a.mechanism);
            let refusal = check_alteration(a, twice, &current);
            match refusal {
                Some(r) => {
                    results.insert(a.user.clone(), r);
                    valid.remove(&a.user);
                }
                None => {
                    if let Some(m) = scram::mechanism_of_type(a.mechanism) {
                        valid
                            .entry(a.user.clone())
                            .or_default()
                            .push((m, a.upsert.clone()));
                    }
                }
            }
        }
        for (user, changes) in valid {
            let outcome = match write_user(store, &user, &changes).await {
                Ok(()) => (ErrorCode::NONE, None),
                Err(e) => (ErrorCode::UNKNOWN_SERVER_ERROR, Some(e.to_string())),
            };
            results.insert(user, outcome);
        }
        order
            .into_iter()
            .map(|u| {
                let (code, message) = results.remove(&u).unwrap_or((ErrorCode::NONE, None));
                (u, code, message)
            })
            .collect()
    }
}

/// Why one alteration is refused, in `ZkAdminManager`'s order and words.
fn check_alteration(
    a: &ScramAlteration,
    twice: bool,
    current: &ScramCredentials,
) -> Option<(ErrorCode, Option<String>)> {
    let refuse = |code: ErrorCode, m: &str| Some((code, Some(m.to_owned())));
    if a.user.is_empty() {
        return refuse(
            ErrorCode::UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        );
    }
    let Some(mechanism) = scram::mechanism_of_type(a.mechanism) else {
        return refuse(
            ErrorCode::UNSUPPORTED_SASL_MECHANISM,
            "Unknown SCRAM mechanism",
        );
    };
    if twice {
        return refuse(
            ErrorCode::DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        );
    }
    match &a.upsert {
        Some((iterations, _, _)) if *iterations < MIN_ITERATIONS => {
            refuse(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        }
        Some((iterations, _, _)) if *iterations > MAX_ITERATIONS => {
            refuse(ErrorCode::UNACCEPTABLE_CREDENTIAL, "Too many iterations")
        }
        Some((_, _, salted)) if salted.is_empty() => refuse(
            ErrorCode::UNACCEPTABLE_CREDENTIAL,
            "Credential must not be empty",
        ),
        None if current.get(&a.user, mechanism).is_none() => refuse(
            ErrorCode::RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        ),
        _ => None,
    }
}

/// Apply one user's changes to its stored config and announce them.
async fn write_user<S: MetadataStore>(
    store: &S,
    user: &str,
    changes: &[Change],
) -> Result<(), StoreError> {
    let rel = format!("users/{}", sanitize(user));
    let path = format!("{}/{rel}", paths::CONFIG);
    let (mut config, version) = match store.get(&path).await {
        Ok((data, stat)) => (
            ConfigZNode::decode(&data)
                .map(|z| z.config)
                .unwrap_or_default(),
            Some(stat.version),
        ),
        Err(StoreError::NoNode(_)) => (BTreeMap::new(), None),
        Err(e) => return Err(e),
    };
    for (m, upsert) in changes {
        match upsert {
            Some((iterations, salt, salted)) => {
                let c = scram::credential_from_salted(*m, salted, salt, *iterations);
                config.insert(m.name().to_owned(), c.to_kafka_string());
            }
            None => {
                config.remove(m.name());
            }
        }
    }
    store_entity_config(store, rel, config, version).await
}

/// Every user's SCRAM credentials in the store; malformed ones are left
/// out with a warning naming the user and mechanism.
pub async fn load<S: MetadataStore>(store: &S) -> ScramCredentials {
    let base = format!("{}/users", paths::CONFIG);
    let names = match store.children(&base).await {
        Ok(c) => c,
        Err(StoreError::NoNode(_)) => Vec::new(),
        Err(e) => {
            tracing::warn!(path = %base, error = %e, "listing SCRAM users");
            Vec::new()
        }
    };
    let mut out = ScramCredentials::default();
    for name in names {
        let Some(user) = desanitize(&name) else {
            continue;
        };
        let path = format!("{base}/{name}");
        let Ok((data, _)) = store.get(&path).await else {
            continue;
        };
        let Ok(z) = ConfigZNode::decode(&data) else {
            tracing::warn!(%path, "malformed user config");
            continue;
        };
        for (key, e) in out.set_user(&user, &z.config) {
            tracing::warn!(%user, mechanism = %key, error = %e, "ignoring a malformed SCRAM credential");
        }
    }
    out
}

/// A SCRAM administration call to the control shard.
#[derive(Debug)]
pub enum ScramCall {
    /// DescribeUserScramCredentials (`None`: every user).
    Describe(Option<Vec<String>>),
    /// AlterUserScramCredentials.
    Alter(Vec<ScramAlteration>),
}

/// The control shard's answer to a [`ScramCall`].
#[derive(Debug, PartialEq)]
pub enum ScramReply {
    Described(Vec<ScramDescription>),
    Altered(Vec<ScramResult>),
}

impl ControlShard {
    /// Serve `call`; an alteration is read back (the caller republishes
    /// when `true` comes back, in turn with the other publications), so
    /// logins on this broker see it before the answer. `controller_id` is the active controller
    /// the published snapshot names: in ZooKeeper mode only it alters
    /// credentials (`ZkAdminManager`: NOT_CONTROLLER for every user).
    pub async fn serve_scram_call(
        &self,
        call: ScramCall,
        controller_id: crate::types::BrokerId,
    ) -> (ScramReply, bool) {
        match call {
            ScramCall::Describe(users) => (
                ScramReply::Described(self.describe_user_scram_credentials(users).await),
                false,
            ),
            ScramCall::Alter(alterations) => {
                if self.zookeeper_mode && controller_id != self.me {
                    let mut users: Vec<String> = Vec::new();
                    for a in alterations {
                        if !users.contains(&a.user) {
                            users.push(a.user);
                        }
                    }
                    let results = users
                        .into_iter()
                        .map(|u| (u, ErrorCode::NOT_CONTROLLER, None))
                        .collect();
                    return (ScramReply::Altered(results), false);
                }
                let results = self.alter_user_scram_credentials(alterations).await;
                let changed = self.reload_scram_credentials().await;
                (ScramReply::Altered(results), changed)
            }
        }
    }
}
