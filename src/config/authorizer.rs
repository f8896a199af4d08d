//! `[pure]` The authorizer keys of `server.properties`: `authorizer.class.name`,
//! the AclAuthorizer's own `super.users` and `allow.everyone.if.no.acl.found`,
//! and `principal.builder.class` (also listener-prefixed).
//!
//! Security never fails open: a broker told to authorize with an
//! authorizer shardlog does not implement, or to build principals with a
//! Java class it cannot load, refuses to start naming the key, instead of
//! serving everyone everything. Key names and defaults: Kafka 3.9's
//! `server/.../config/ServerConfigs.java` (`authorizer.class.name`),
//! `core/src/main/scala/kafka/security/authorizer/AclAuthorizer.scala`
//! (`SuperUsersProp`, `AllowEveryoneIfNoAclIsFoundProp`) and
//! `clients/.../config/internals/BrokerSecurityConfigs.java`
//! (`PRINCIPAL_BUILDER_CLASS_CONFIG`).

use super::{ConfigError, ServerConfig};

/// Kafka's ZooKeeper-mode ACL authorizer (`AclAuthorizer`), whose rules
/// and ACL storage `acl` implements.
pub const ACL_AUTHORIZER: &str = "kafka.security.authorizer.AclAuthorizer";

/// Kafka's default principal builder: `User:ANONYMOUS` on PLAINTEXT, the
/// mapped certificate DN on SSL, the SASL authorization id on SASL.
pub const DEFAULT_PRINCIPAL_BUILDER: &str =
    "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder";

/// Whether `key` is `listener.name.<l>.principal.builder.class`, which
/// overrides `principal.builder.class` for one listener.
pub fn is_listener_principal_builder(key: &str) -> bool {
    matches!(
        super::ssl::split_listener(key),
        (Some(_), "principal.builder.class")
    )
}

/// A `principal.builder.class` value (broker-wide or for one listener)
/// other than Kafka's default stops the start: the principal is what
/// every ACL is matched against.
pub fn check_principal_builder(key: &str, value: &str) -> Result<(), ConfigError> {
    let value = value.trim();
    if value.is_empty() || value == DEFAULT_PRINCIPAL_BUILDER {
        return Ok(());
    }
    Err(ConfigError::InvalidValue {
        key: key.into(),
        value: value.into(),
        reason: format!(
            "not supported by shardlog: a Java KafkaPrincipalBuilder cannot be loaded; \
             only Kafka's default {DEFAULT_PRINCIPAL_BUILDER} is implemented"
        ),
    })
}

/// `authorizer.class.name` names an authorizer shardlog implements (or
/// none) and `principal.builder.class` is Kafka's default.
pub fn validate(config: &ServerConfig) -> Result<(), ConfigError> {
    let class = config.authorizer_class_name.trim();
    if !class.is_empty() && !IMPLEMENTED.contains(&class) {
        return Err(ConfigError::InvalidValue {
            key: "authorizer.class.name".into(),
            value: class.into(),
            reason: format!(
                "not supported by shardlog: only {ACL_AUTHORIZER} (ZooKeeper-mode ACLs) \
                 is implemented; a broker told to authorize must not run without it"
            ),
        });
    }
    check_principal_builder("principal.builder.class", &config.principal_builder_class)
}

/// The authorizers `authorizer.class.name` may name.
const IMPLEMENTED: &[&str] = &[ACL_AUTHORIZER];

impl ServerConfig {
    /// Whether Kafka's AclAuthorizer is on (`authorizer.class.name`).
    pub fn acl_authorizer_enabled(&self) -> bool {
        self.authorizer_class_name.trim() == ACL_AUTHORIZER
    }

    /// `super.users`: `;`-separated principals, each trimmed, empty ones
    /// dropped (AclAuthorizer.configure).
    pub fn super_user_list(&self) -> Vec<String> {
        self.super_users
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// The authorizer these keys configure (`AclAuthorizer.configure`).
    pub fn authorizer_policy(&self) -> crate::acl::authorizer::Policy {
        crate::acl::authorizer::Policy {
            enabled: self.acl_authorizer_enabled(),
            super_users: self.super_user_list(),
            allow_everyone_if_no_acl_found: self.allow_everyone_if_no_acl_found,
        }
    }
}

#[cfg(test)]
mod tests;
