//! `[pure]` The SCRAM credentials every shard authenticates against: the
//! `SCRAM-SHA-256` / `SCRAM-SHA-512` keys of each `/config/users/<user>`
//! config (Kafka 3.9's `CredentialCache` fed by `ConfigHandler`'s
//! `UserConfigHandler`, SECURITY.md §4): user (desanitized, Kafka's
//! `Sanitizer`) → mechanism → credential. Quota keys in the same configs
//! are the quota code's. Loaded by the control shard at start and on
//! `users/<u>` change notifications, published with the snapshot.

use std::collections::BTreeMap;

use crate::config::sasl::SaslMechanism;
use crate::sasl::scram::ScramCredential;

/// The SCRAM mechanisms, as config keys.
pub const SCRAM_MECHANISMS: [SaslMechanism; 2] =
    [SaslMechanism::ScramSha256, SaslMechanism::ScramSha512];

/// Every stored SCRAM credential.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScramCredentials {
    users: BTreeMap<String, BTreeMap<SaslMechanism, ScramCredential>>,
}

impl ScramCredentials {
    /// The credential of `user` for `mechanism`.
    pub fn get(&self, user: &str, mechanism: SaslMechanism) -> Option<&ScramCredential> {
        self.users.get(user)?.get(&mechanism)
    }

    /// Replace `user`'s credentials with the SCRAM keys of its stored
    /// `config` (a missing key removes that mechanism, as Kafka's
    /// `CredentialCache` update does). Malformed credential strings are
    /// left out and returned as (key, reason) for the driver's warning.
    pub fn set_user(
        &mut self,
        user: &str,
        config: &BTreeMap<String, String>,
    ) -> Vec<(String, String)> {
        let mut problems = Vec::new();
        let mut creds = BTreeMap::new();
        for m in SCRAM_MECHANISMS {
            if let Some(text) = config.get(m.name()) {
                match ScramCredential::parse(text) {
                    Ok(c) => {
                        creds.insert(m, c);
                    }
                    Err(e) => problems.push((m.name().to_owned(), e)),
                }
            }
        }
        if creds.is_empty() {
            self.users.remove(user);
        } else {
            self.users.insert(user.to_owned(), creds);
        }
        problems
    }

    /// Users with at least one credential, sorted, with theirs.
    pub fn users(
        &self,
    ) -> impl Iterator<Item = (&String, &BTreeMap<SaslMechanism, ScramCredential>)> {
        self.users.iter()
    }

    pub fn is_empty(&self) -> bool {
        self.users.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sasl::scram::credential;

    #[test]
    fn a_users_config_replaces_its_credentials_and_quota_keys_are_ignored() {
        let c = credential(SaslMechanism::ScramSha512, "pw", b"salt", 4096);
        let mut creds = ScramCredentials::default();
        let config: BTreeMap<String, String> = [
            ("SCRAM-SHA-512".to_owned(), c.to_kafka_string()),
            ("SCRAM-SHA-256".to_owned(), "garbage".to_owned()),
            ("producer_byte_rate".to_owned(), "1024".to_owned()),
        ]
        .into_iter()
        .collect();
        let problems = creds.set_user("alice", &config);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "SCRAM-SHA-256");
        assert_eq!(creds.get("alice", SaslMechanism::ScramSha512), Some(&c));
        assert_eq!(creds.get("alice", SaslMechanism::ScramSha256), None);
        creds.set_user("alice", &BTreeMap::new());
        assert!(creds.is_empty());
    }
}
